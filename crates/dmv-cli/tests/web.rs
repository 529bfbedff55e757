//! The web UI in a real headless Chromium, driven through WebDriver
//! (chromedriver): logging in with a token, thumbnails on a commit page
//! that the browser really decoded, a video played from Range requests,
//! the comparison page and its slider, a 10,000-file folder paged, and an
//! admin breaking a lock. Without a valid token nothing of a repository is
//! shown.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dmv_testkit::camera_raw::{camera_raw, RawLayout};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

/// A program serving on a free port of loopback (chromedriver, an
/// attacker's site), killed on drop.
struct LocalServer {
    child: Child,
    port: u16,
}

impl LocalServer {
    /// Starts `command(port)` and waits until the port answers.
    fn start(what: &str, command: impl FnOnce(u16) -> Command) -> LocalServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = command(port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{what} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        LocalServer { child, port }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromedriver() -> LocalServer {
    let driver = Path::new("/usr/bin/chromedriver");
    assert!(
        driver.exists(),
        "chromium-driver is not installed (scripts/test installs it)"
    );
    LocalServer::start("chromedriver", |port| {
        let mut c = Command::new(driver);
        c.arg(format!("--port={port}"));
        c
    })
}

async fn browser(driver: &LocalServer) -> Client {
    session(
        driver,
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--window-size=1280,1000"]}),
    )
    .await
}

/// A WebDriver session of Chromium with `options` (`goog:chromeOptions`).
async fn session(driver: &LocalServer, options: serde_json::Value) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), options);
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

/// A JPEG of a gradient (`tint` changes it), like a small photo.
fn photo(path: &Path, tint: u8) {
    let img = image::RgbImage::from_fn(1200, 800, |x, y| {
        image::Rgb([(x / 5) as u8, (y / 4) as u8, tint])
    });
    img.save(path).unwrap();
}

/// A JPEG `w`×`h` with the EXIF a camera writes: make, model, when it
/// was taken (`YYYY:MM:DD HH:MM:SS`), exposure and aperture.
fn camera_photo(path: &Path, w: u32, h: u32, tint: u8, taken: &str) {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, tint])
    });
    let mut jpeg = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut jpeg),
        image::ImageFormat::Jpeg,
    )
    .unwrap();
    // One IFD: (tag, type, count, value or bytes), its data after it.
    fn ifd(entries: &[(u16, u16, u32, Vec<u8>)], at: u32) -> Vec<u8> {
        let size = 2 + 12 * entries.len() as u32 + 4;
        let (mut out, mut data) = ((entries.len() as u16).to_le_bytes().to_vec(), Vec::new());
        for (tag, kind, count, value) in entries {
            out.extend(tag.to_le_bytes());
            out.extend(kind.to_le_bytes());
            out.extend(count.to_le_bytes());
            if value.len() <= 4 {
                let mut v = value.clone();
                v.resize(4, 0);
                out.extend(v);
            } else {
                out.extend((at + size + data.len() as u32).to_le_bytes());
                data.extend(value);
                if data.len() % 2 == 1 {
                    data.push(0);
                }
            }
        }
        out.extend(0u32.to_le_bytes());
        out.extend(data);
        out
    }
    let ascii = |s: &str| [s.as_bytes(), b"\0"].concat();
    let rational = |n: u32, d: u32| [n.to_le_bytes(), d.to_le_bytes()].concat();
    let first = |exif_at: u32| {
        ifd(
            &[
                (0x010F, 2, 6, ascii("Canon")),
                (0x0110, 2, 13, ascii("Canon EOS R5")),
                (0x8769, 4, 1, exif_at.to_le_bytes().to_vec()),
            ],
            8,
        )
    };
    let exif_at = 8 + first(0).len() as u32;
    let mut tiff = b"II*\0".to_vec();
    tiff.extend(8u32.to_le_bytes());
    tiff.extend(first(exif_at));
    tiff.extend(ifd(
        &[
            (0x829A, 5, 1, rational(1, 250)),
            (0x829D, 5, 1, rational(28, 10)),
            (0x9003, 2, 20, ascii(taken)),
        ],
        exif_at,
    ));
    let body = [b"Exif\0\0".as_slice(), &tiff].concat();
    let mut out = vec![0xFF, 0xD8, 0xFF, 0xE1];
    out.extend(((body.len() + 2) as u16).to_be_bytes());
    out.extend(body);
    out.extend(&jpeg[2..]);
    std::fs::write(path, out).unwrap();
}

/// A Nikon raw whose embedded preview is such a photo.
fn raw_photo(path: &Path, tint: u8) {
    let preview = path.with_extension("preview.jpg");
    photo(&preview, tint);
    let jpeg = std::fs::read(&preview).unwrap();
    std::fs::remove_file(&preview).unwrap();
    std::fs::write(path, camera_raw(RawLayout::Nef, &jpeg, &jpeg)).unwrap();
}

fn curl_status(url: &str, token: Option<&str>) -> (String, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "-w", "\n%{http_code}", url]);
    if let Some(t) = token {
        c.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = String::from_utf8(c.output().unwrap().stdout).unwrap();
    let (body, code) = out.rsplit_once('\n').unwrap();
    (code.to_string(), body.to_string())
}

/// Submits the login form with `token`, as a person would.
async fn log_in(c: &Client, base: &str, token: &str) {
    c.goto(&format!("{base}/login")).await.unwrap();
    c.find(Locator::Css("input[name=token]"))
        .await
        .unwrap()
        .send_keys(token)
        .await
        .unwrap();
    c.find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Follows a link as a click would, but waits for the page to load (goto does).
async fn follow(c: &Client, base: &str, link: Locator<'_>) {
    let href = c
        .find(link)
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    c.goto(&if href.starts_with('/') {
        format!("{base}{href}")
    } else {
        href
    })
    .await
    .unwrap();
}

/// The page's source once it holds `text` (a click's navigation may still be under way).
async fn page_with(c: &Client, text: &str) -> String {
    let started = Instant::now();
    loop {
        let page = c.source().await.unwrap();
        if page.contains(text) {
            return page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no {text:?} in {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Images on the page that the browser decoded (naturalWidth > 0), and all of them.
async fn loaded_images(c: &Client) -> (usize, usize) {
    let started = Instant::now();
    loop {
        let v = c
            .execute(
                "return Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1);",
                vec![],
            )
            .await
            .unwrap();
        let widths: Vec<i64> = serde_json::from_value(v).unwrap();
        let done = widths.iter().filter(|w| **w > 0).count();
        if done == widths.len() || started.elapsed() > Duration::from_secs(30) {
            return (done, widths.len());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn the_web_ui_in_a_real_browser() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("shoot")).unwrap();
    for i in 0..4 {
        photo(&work.join(format!("shoot/img-{i}.jpg")), i as u8 * 60);
    }
    raw_photo(&work.join("shoot/DSC_0001.NEF"), 30);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/clip.webm"),
        work.join("clip.webm"),
    )
    .unwrap();
    std::fs::create_dir_all(work.join("many")).unwrap();
    for i in 0..10_000 {
        std::fs::write(work.join(format!("many/f{i:05}.txt")), format!("{i}")).unwrap();
    }
    commit_all(&work, "the shoot");
    // The retouch: every photo changes.
    for i in 0..4 {
        photo(&work.join(format!("shoot/img-{i}.jpg")), 255 - i as u8 * 60);
    }
    raw_photo(&work.join("shoot/DSC_0001.NEF"), 220);
    commit_all(&work, "retouched");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let server = HttpServer::start("access_log = true\n[repos]\nhub = \"hub\"\n[tokens]\n\"tok-read\" = \"read\"\n\"tok-boss\" = { access = \"admin\", user = \"boss\" }\n\"tok-al\" = { access = \"write\", user = \"al\" }\n", t, 0);
    let base = format!("http://127.0.0.1:{}", server.port);

    // No token or a wrong one: 401 and nothing of the repository.
    for token in [None, Some("wrong")] {
        for page in ["/", "/hub/", "/hub/log/main", "/hub/tree/main/shoot"] {
            let (code, body) = curl_status(&format!("{base}{page}"), token);
            assert_eq!(code, "401", "{page} with {token:?}");
            assert!(
                !body.contains("img-0.jpg")
                    && !body.contains("retouched")
                    && !body.contains(">hub<"),
                "{page}: {body}"
            );
        }
    }
    let mut lock = dmv_cmd(&work);
    lock.args([
        "lock",
        "--remote",
        &format!("{base}/hub"),
        "shoot/img-1.jpg",
    ])
    .env("DMV_TOKEN", "tok-al");
    ok(&lock.output().unwrap());

    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let log = server.log.clone();
    rt.block_on(async move {
        let c = browser(&driver).await;
        // Log in: a wrong token is refused, a read token browses.
        log_in(&c, &base, "wrong").await;
        page_with(&c, "That token is not valid here").await;
        log_in(&c, &base, "tok-read").await;
        page_with(&c, "Repositories").await;

        // History, then the newest commit: ten thumbnails (before and after; one photo is a camera raw), all decoded.
        c.goto(&format!("{base}/hub/log/main")).await.unwrap();
        follow(&c, &base, Locator::Css("ul.commits a[href*='/commit/']")).await;
        let (loaded, all) = loaded_images(&c).await;
        assert_eq!((loaded, all), (10, 10), "every thumbnail decoded in the browser");
        // The raw's thumbnails come from its 1200×800 preview, not its 16×12 thumbnail.
        let raw_widths = c.execute("return Array.from(document.images).filter(i => i.alt.endsWith('.NEF')).map(i => i.naturalWidth);", vec![]).await.unwrap();
        assert_eq!(raw_widths, json!([256, 256]));

        // Compare: both versions, and the slider moves the one on top.
        follow(&c, &base, Locator::LinkText("compare before and after")).await;
        let (loaded, all) = loaded_images(&c).await;
        assert_eq!(loaded, all);
        assert!(all >= 4);
        // Swipe: the slider at 80 shows the version before on the left 80 %.
        let clip = c.execute("const s=document.getElementById('slider'); s.value=80; s.dispatchEvent(new Event('input')); return document.getElementById('over').style.clipPath;", vec![]).await.unwrap();
        assert_eq!(clip.as_str(), Some("inset(0px 0px 0px 80%)"));
        // Onion skin: the version after over the one before at 80 % opacity; difference: blended.
        let onion = c.execute("document.querySelector('input[value=onion]').click(); const o=document.getElementById('over'); return [o.style.clipPath, o.style.opacity];", vec![]).await.unwrap();
        assert_eq!(onion, json!(["none", "0.8"]));
        let blend = c.execute("document.querySelector('input[value=difference]').click(); return document.getElementById('over').style.mixBlendMode;", vec![]).await.unwrap();
        assert_eq!(blend.as_str(), Some("difference"));
        // Zoom: both sides at 4×; panning one pans the other to the same place.
        let zoomed = c
            .execute_async(
                "const cb=arguments[arguments.length-1]; const z=document.getElementById('zoom'); z.value=4; z.dispatchEvent(new Event('input'));                 const [a,b]=document.querySelectorAll('.pan'); const w=[a.querySelector('img').clientWidth/a.clientWidth, b.querySelector('img').clientWidth/b.clientWidth];                 a.scrollLeft=a.scrollWidth/3; a.scrollTop=a.scrollHeight/4; setTimeout(()=>cb([w, a.scrollLeft, b.scrollLeft, a.scrollTop, b.scrollTop]), 300);",
                vec![],
            )
            .await
            .unwrap();
        let (ratios, ax, bx, ay, by): ([f64; 2], f64, f64, f64, f64) = serde_json::from_value(zoomed).unwrap();
        assert!(ratios.iter().all(|r| (r - 4.0).abs() < 0.1), "both sides zoomed 4x: {ratios:?}");
        assert!(ax > 0.0 && (ax - bx).abs() <= 2.0 && ay > 0.0 && (ay - by).abs() <= 2.0, "panned together: {ax} {bx} {ay} {by}");

        // The video plays, fetched by Range.
        c.goto(&format!("{base}/hub/file/main/clip.webm")).await.unwrap();
        let played = c
            .execute_async(
                "const cb=arguments[arguments.length-1]; const v=document.querySelector('video'); v.muted=true; v.play().then(()=>setTimeout(()=>cb(v.currentTime),1500)).catch(e=>cb('error: '+e));",
                vec![],
            )
            .await
            .unwrap();
        assert!(played.as_f64().is_some_and(|t| t > 0.0), "the video did not play: {played}");
        let ranged = log.lock().unwrap().iter().filter(|l| l.contains("/hub/raw/") && l.contains("clip.webm 206 ") && l.contains("range=bytes=")).count();
        assert!(ranged >= 1, "the browser's requests were answered 206: {:?}", log.lock().unwrap());

        // A folder of 10,000 files, 200 to a page.
        c.goto(&format!("{base}/hub/tree/main/many/")).await.unwrap();
        let mut firsts = Vec::new();
        for _ in 0..3 {
            let rows = c.find_all(Locator::Css("main table tr")).await.unwrap();
            assert_eq!(rows.len(), 200);
            firsts.push(rows[0].text().await.unwrap());
            follow(&c, &base, Locator::Css("a[rel=next]")).await;
        }
        assert_eq!(firsts.iter().map(|f| f.split_whitespace().next().unwrap().to_string()).collect::<Vec<_>>(), ["f00000.txt", "f00200.txt", "f00400.txt"]);

        // The locks page: a read token sees the lock; an admin breaks it.
        c.goto(&format!("{base}/hub/locks")).await.unwrap();
        let page = c.source().await.unwrap();
        assert!(page.contains("shoot/img-1.jpg") && page.contains(">al<"));
        assert!(c.find(Locator::Css("form[action$='/locks/break'] button")).await.is_err(), "no break button without an admin token");
        c.find(Locator::Css("header form button")).await.unwrap().click().await.unwrap();
        page_with(&c, "Log in").await;
        log_in(&c, &base, "tok-boss").await;
        page_with(&c, "Repositories").await;
        c.goto(&format!("{base}/hub/locks")).await.unwrap();
        c.find(Locator::Css("form[action$='/locks/break'] button")).await.unwrap().click().await.unwrap();
        page_with(&c, "Nobody holds a lock").await;
        c.close().await.unwrap();
    });
    fsck_clean(&hub);
}

/// A WebDriver session at a phone's size (Chrome's mobile emulation, 390×844
/// CSS pixels) or a desktop window of 1440×900.
async fn sized_browser(driver: &LocalServer, phone: bool) -> Client {
    let mut options = json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1440,900"]});
    if phone {
        options["mobileEmulation"] = json!({"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2.0, "mobile": true, "touch": true}});
    }
    session(driver, options).await
}

/// Every page of the UI at a phone's size and a desktop's: nothing wider
/// than the screen, every image described, a theme toggle that turns the
/// page dark, Markdown shown without its markup, a text file's change as a
/// diff and a locked file's badge. The screenshots land in
/// `DMV_SCREENSHOTS` when set (`docs/screenshots` is refreshed that way).
#[test]
fn every_page_fits_a_phone_and_a_desktop() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("shoot/selects-for-the-client-with-a-long-folder-name"))
        .unwrap();
    for i in 0..6 {
        photo(&work.join(format!("shoot/img-{i}.jpg")), i as u8 * 40);
    }
    std::fs::write(
        work.join("shoot/notes.txt"),
        "day one\nwarm light\nkeep 3 and 5\n",
    )
    .unwrap();
    std::fs::write(work.join("README.md"), "# The shoot\n\nSelects are in **shoot/**.\n\n<script>document.title='owned'</script>\n\n| take | keep |\n|---|---|\n| 3 | yes |\n")
        .unwrap();
    commit_all(&work, "the shoot");
    for i in [1, 3] {
        photo(&work.join(format!("shoot/img-{i}.jpg")), 255 - i as u8 * 40);
    }
    std::fs::write(
        work.join("shoot/notes.txt"),
        "day one\ncool light, after the grade\nkeep 3 and 5\nsend to the client on Friday\n",
    )
    .unwrap();
    commit_all(&work, "graded: two photos and the notes");
    // Comments that mention al (a user of the server) and others (not).
    let say = |who: &str, args: &[&str]| {
        let mut c = dmv_cmd(&work);
        let out = c.args(args).env("DMV_AUTHOR_NAME", who).output().unwrap();
        ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let warm = say(
        "bo",
        &[
            "comment",
            "add",
            "shoot/img-1.jpg",
            "--at",
            "20,10,30,20",
            "-m",
            "@al the sky is still too warm here; can @cy look too?",
        ],
    );
    let warm = warm.split_whitespace().nth(1).unwrap().to_string();
    say(
        "al",
        &["comment", "reply", &warm, "-m", "@bo cooled in the grade"],
    );
    say(
        "bo",
        &[
            "comment",
            "add",
            "shoot/notes.txt",
            "--lines",
            "3",
            "-m",
            "only 3 and 5, @al?",
        ],
    );
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let head = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let (old_photo, new_photo) = (
        dmv(&hub, &["rev-parse", "main~1:shoot/img-1.jpg"]),
        dmv(&hub, &["rev-parse", "main:shoot/img-1.jpg"]),
    );
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-al\" = { access = \"admin\", user = \"al\" }\n",
        t,
        0,
    );
    let base = format!("http://127.0.0.1:{}", server.port);
    let mut lock = dmv_cmd(&work);
    lock.args([
        "lock",
        "--remote",
        &format!("{base}/hub"),
        "shoot/img-3.jpg",
    ])
    .env("DMV_TOKEN", "tok-al");
    ok(&lock.output().unwrap());
    let pages = [
        ("repositories", "/".to_string()),
        ("repository", "/hub/".to_string()),
        ("history", "/hub/log/main".to_string()),
        ("commit", format!("/hub/commit/{head}")),
        ("commit-split", format!("/hub/commit/{head}?diff=split")),
        ("folder-grid", "/hub/tree/main/shoot/".to_string()),
        ("folder-list", "/hub/tree/main/shoot/?view=list".to_string()),
        ("file-locked", "/hub/file/main/shoot/img-3.jpg".to_string()),
        ("file-markdown", "/hub/file/main/README.md".to_string()),
        (
            "compare",
            format!(
                "/hub/compare/{}/{}?name=shoot/img-1.jpg&from={}&to={head}",
                old_photo.trim(),
                new_photo.trim(),
                dmv(&hub, &["rev-parse", "main~1"]).trim(),
            ),
        ),
        ("locks", "/hub/locks".to_string()),
        ("comments", "/hub/comments?mentioning=me".to_string()),
        // The admin's page of who did what (al is the admin here).
        ("audit", "/hub/audit".to_string()),
        ("search", "/hub/search?q=IMG&rev=main".to_string()),
        ("upload", "/hub/upload/main/shoot/".to_string()),
        ("share", "/-/share?n=3".to_string()),
    ];
    let shots = std::env::var_os("DMV_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| t.join("screenshots"));
    std::fs::create_dir_all(&shots).unwrap();

    let expected = 2 * (pages.len() + 1);
    let shots_dir = shots.clone();
    // A folder downloads as a zip made as it is sent.
    let names = zip_listing(t, &format!("{base}/hub/zip/main/shoot/"));
    let short = &head[..12];
    assert_eq!(names.len(), 7, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(&format!("shoot-{short}/shoot/"))),
        "{names:?}"
    );
    let notes = Command::new("unzip")
        .arg("-p")
        .arg(t.join("listed.zip"))
        .arg(format!("shoot-{short}/shoot/notes.txt"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&notes.stdout),
        "day one\ncool light, after the grade\nkeep 3 and 5\nsend to the client on Friday\n"
    );
    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let shots = shots_dir;
        for (size, phone) in [("phone", true), ("desktop", false)] {
            let c = sized_browser(&driver, phone).await;
            c.goto(&format!("{base}/login")).await.unwrap();
            let width = c.execute("return window.innerWidth;", vec![]).await.unwrap().as_u64().unwrap();
            assert_eq!(width, if phone { 390 } else { 1440 }, "the {size}'s viewport");
            log_in(&c, &base, "tok-al").await;
            page_with(&c, "Repositories").await;
            for (name, path) in &pages {
                c.goto(&format!("{base}{path}")).await.unwrap();
                loaded_images(&c).await;
                let fit =
                    c.execute("return [document.documentElement.scrollWidth, window.innerWidth, Array.from(document.images).filter(i => !i.alt).length, Array.from(document.querySelectorAll('.id, time, header a, header button')).filter(e => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 40).length];", vec![]).await.unwrap();
                let [scroll, inner, unlabelled, broken]: [u64; 4] = serde_json::from_value(fit).unwrap();
                assert_eq!(broken, 0, "{name} on a {size}: an id, a date or the header wraps");
                assert!(scroll <= inner, "{name} on a {size}: {scroll} px wide in a {inner} px window");
                assert_eq!(unlabelled, 0, "{name} on a {size}: an image without alt text");
                std::fs::write(shots.join(format!("{name}-{size}.png")), c.screenshot().await.unwrap()).unwrap();
            }
            // What the pages hold: a diff of the notes, the lock, Markdown without its script.
            c.goto(&format!("{base}/hub/commit/{head}")).await.unwrap();
            let added = c.find_all(Locator::Css("pre.diff span.add")).await.unwrap();
            assert_eq!(added.len(), 2, "two lines added to the notes");
            assert_eq!(added[0].text().await.unwrap(), "+cool light, after the grade");
            c.goto(&format!("{base}/hub/file/main/shoot/img-3.jpg")).await.unwrap();
            assert!(c.find(Locator::Css(".badge.locked")).await.unwrap().text().await.unwrap().contains("locked by al"));
            c.goto(&format!("{base}/hub/file/main/README.md")).await.unwrap();
            assert_eq!(c.find(Locator::Css("article h1")).await.unwrap().text().await.unwrap(), "The shoot");
            assert_eq!(c.find_all(Locator::Css("article table td")).await.unwrap().len(), 2);
            assert!(c.title().await.unwrap().ends_with("· DMV"), "the committed script did not run");
            // The list view names the commit that last changed each file.
            c.goto(&format!("{base}/hub/tree/main/shoot/?view=list")).await.unwrap();
            let mut last = Vec::new();
            for row in c.find_all(Locator::Css("main table tr")).await.unwrap() {
                last.push(row.text().await.unwrap());
            }
            assert!(last.iter().any(|r| r.starts_with("img-0.jpg") && r.contains("the shoot")), "{last:?}");
            assert!(last.iter().any(|r| r.starts_with("img-1.jpg") && r.contains("graded: two photos and the notes")), "{last:?}");
            assert!(last.iter().any(|r| r.starts_with("notes.txt") && r.contains("graded")), "{last:?}");
            // Search: file names at a revision, commit messages and authors, any case.
            c.goto(&format!("{base}/hub/search?q=IMG-3&rev=main")).await.unwrap();
            let hits = c.find_all(Locator::Css("main ul li a")).await.unwrap();
            assert_eq!(hits.len(), 1);
            assert_eq!(hits[0].text().await.unwrap(), "shoot/img-3.jpg");
            c.goto(&format!("{base}/hub/search?q=GRADED&in=commits")).await.unwrap();
            let hits = c.find_all(Locator::Css("main table tr")).await.unwrap();
            assert_eq!(hits.len(), 1);
            assert!(hits[0].text().await.unwrap().contains("graded: two photos and the notes"));
            c.goto(&format!("{base}/hub/file/main/shoot/img-0.jpg")).await.unwrap();
            assert!(c.source().await.unwrap().contains("1200x800 · "), "the picture's size is on its page");
            // A comparison names each side by the commit that made it.
            c.goto(&format!("{base}{}", pages.iter().find(|(n, _)| *n == "compare").unwrap().1)).await.unwrap();
            let captions = c.find_all(Locator::Css("figcaption")).await.unwrap();
            assert!(captions[0].text().await.unwrap().starts_with("before: the shoot · "));
            assert!(captions[1].text().await.unwrap().starts_with("after: graded: two photos and the notes · "));
            // The toggle turns the page dark, and the choice stays on the next page.
            let light = c.execute("return getComputedStyle(document.body).backgroundColor;", vec![]).await.unwrap();
            c.find(Locator::Id("theme")).await.unwrap().click().await.unwrap();
            let dark = c.execute("return getComputedStyle(document.body).backgroundColor;", vec![]).await.unwrap();
            assert_eq!((light.as_str(), dark.as_str()), (Some("rgb(255, 255, 255)"), Some("rgb(13, 17, 23)")));
            c.goto(&format!("{base}/hub/commit/{head}")).await.unwrap();
            let kept = c.execute("return getComputedStyle(document.body).backgroundColor;", vec![]).await.unwrap();
            assert_eq!(kept.as_str(), Some("rgb(13, 17, 23)"));
            std::fs::write(shots.join(format!("commit-dark-{size}.png")), c.screenshot().await.unwrap()).unwrap();
            // Every page again in the dark colours, to be looked at.
            for (name, path) in &pages {
                c.goto(&format!("{base}{path}")).await.unwrap();
                loaded_images(&c).await;
                std::fs::write(shots.join(format!("{name}-dark-{size}.png")), c.screenshot().await.unwrap()).unwrap();
            }
            c.close().await.unwrap();
        }
    });
    let taken = std::fs::read_dir(&shots).unwrap().count();
    assert!(taken >= expected, "{taken} screenshots");
}

/// Serves `dir` over HTTP on another port of the same host, as an
/// attacker's site would (a page there is same-site, not same-origin).
fn other_site(dir: &Path) -> LocalServer {
    LocalServer::start("python's http.server", |port| {
        let mut c = Command::new("python3");
        c.args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .current_dir(dir);
        c
    })
}

/// The response headers of a GET, lower-cased.
fn curl_headers(url: &str, token: &str) -> String {
    let out = Command::new("curl")
        .args([
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-H",
            &format!("Authorization: Bearer {token}"),
            url,
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().to_ascii_lowercase()
}

fn locks_page(base: &str) -> String {
    curl_status(&format!("{base}/hub/locks"), Some("tok-read")).1
}

/// Attacks replayed in a real browser logged in as an admin: a committed
/// HTML file and SVG whose scripts break a lock (served from the UI's
/// origin they ran as the admin), any file renamed to .htm in the URL, a
/// forged lock-breaking form and a forged login on another port of the
/// same host, and a session cookie that outlives its logout.
#[test]
fn committed_scripts_and_forged_forms_cannot_act_for_an_admin() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    let script =
        "<script>fetch('/hub/locks/break',{method:'POST',headers:{'Content-Type':'application/x-www-form-urlencoded'},body:'path=notes.txt'});document.title='pwned';</script>";
    std::fs::write(
        work.join("report.htm"),
        format!("<html><body>report{script}</body></html>"),
    )
    .unwrap();
    std::fs::write(work.join("logo.svg"), "<svg xmlns='http://www.w3.org/2000/svg'><script>fetch('/hub/locks/break',{method:'POST',headers:{'Content-Type':'application/x-www-form-urlencoded'},body:'path=notes.txt'});</script></svg>").unwrap();
    std::fs::write(work.join("notes.txt"), format!("plain notes {script}")).unwrap();
    commit_all(&work, "hostile content");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-read\" = \"read\"\n\"tok-boss\" = { access = \"admin\", user = \"boss\" }\n\"tok-al\" = { access = \"write\", user = \"al\" }\n",
        t,
        0,
    );
    let base = format!("http://127.0.0.1:{}", server.port);
    let mut lock = dmv_cmd(&work);
    lock.args(["lock", "--remote", &format!("{base}/hub"), "notes.txt"])
        .env("DMV_TOKEN", "tok-al");
    ok(&lock.output().unwrap());
    assert!(locks_page(&base).contains("notes.txt"));

    // Content goes out as an attachment or plain text, never as a document of this origin.
    let id = |path: &str| {
        dmv(&work, &["ls-tree", "-r", "HEAD"])
            .lines()
            .find(|l| l.ends_with(path))
            .and_then(|l| l.split_whitespace().find(|w| w.len() == 64))
            .unwrap()
            .to_string()
    };
    let (report, logo, notes) = (id("report.htm"), id("logo.svg"), id("notes.txt"));
    for (hex, name) in [
        (&report, "report.htm"),
        (&logo, "logo.svg"),
        (&notes, "notes.shtml"),
        (&notes, "x.xhtml"),
        (&report, "r.html"),
    ] {
        let h = curl_headers(&format!("{base}/hub/raw/{hex}/{name}"), "tok-read");
        assert!(h.starts_with("http/1.1 200"), "{name}: {h}");
        assert!(
            h.contains("x-content-type-options: nosniff")
                && h.contains("content-security-policy: sandbox"),
            "{name}: {h}"
        );
        let content_type = h.lines().find(|l| l.starts_with("content-type:")).unwrap();
        assert!(
            !content_type.contains("html")
                && !content_type.contains("svg")
                && !content_type.contains("xml"),
            "{name}: {h}"
        );
        assert!(
            h.contains("content-disposition: attachment") || h.contains("content-type: text/plain"),
            "{name}: {h}"
        );
    }
    let page = curl_headers(&format!("{base}/hub/"), "tok-read");
    assert!(
        page.contains("content-security-policy: default-src 'none'; script-src 'self'")
            && page.contains("x-frame-options: deny"),
        "{page}"
    );

    // The attacker's pages, on another port of the same host.
    let site = t.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(
        site.join("break.html"),
        format!("<form id=f method=post action='{base}/hub/locks/break'><input name=path value=notes.txt></form><script>document.getElementById('f').submit()</script>"),
    )
    .unwrap();
    std::fs::write(
        site.join("login.html"),
        format!("<form id=f method=post action='{base}/login'><input name=token value=tok-read></form><script>document.getElementById('f').submit()</script>"),
    )
    .unwrap();
    let other = other_site(&site);
    let evil = format!("http://127.0.0.1:{}", other.port);

    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = browser(&driver).await;
        log_in(&c, &base, "tok-boss").await;
        page_with(&c, "Repositories").await;
        let session = c.get_named_cookie("dmv_session").await.unwrap();
        assert_ne!(
            session.value(),
            "tok-boss",
            "the cookie is a session id, not the token"
        );
        assert_eq!(session.http_only(), Some(true));

        // The admin opens links a writer committed, and links renamed to run as HTML.
        for (hex, name) in [
            (&report, "report.htm"),
            (&logo, "logo.svg"),
            (&notes, "report.htm"),
            (&notes, "notes.txt"),
        ] {
            c.goto(&format!("{base}/hub/raw/{hex}/{name}"))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(700)).await;
            let title = c.execute("return document.title", vec![]).await.unwrap();
            assert_ne!(title.as_str(), Some("pwned"), "{name} ran as a page");
        }
        assert!(
            locks_page(&base).contains("notes.txt"),
            "a committed script broke the lock"
        );

        // A forged lock-breaking form from another port of the same host.
        c.goto(&format!("{evil}/break.html")).await.unwrap();
        page_with(&c, "did not come from this server").await;
        assert!(
            locks_page(&base).contains("notes.txt"),
            "a forged form broke the lock"
        );

        // A forged login would swap the admin's session for the attacker's read token.
        c.goto(&format!("{evil}/login.html")).await.unwrap();
        page_with(&c, "did not come from this server").await;
        c.goto(&format!("{base}/hub/locks")).await.unwrap();
        assert!(
            c.find(Locator::Css("form[action$='/locks/break'] button"))
                .await
                .is_ok(),
            "still the admin's session"
        );

        // Logging out ends the session on the server: its cookie no longer opens anything.
        c.find(Locator::Css("header form button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        page_with(&c, "Log in").await;
        let stale = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-H",
                &format!("Cookie: dmv_session={}", session.value()),
                &format!("{base}/hub/"),
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&stale.stdout), "401");
        c.close().await.unwrap();
    });
    assert!(locks_page(&base).contains("notes.txt"));
    security_report("browser", "in Chromium as an admin: committed HTML and SVG, files renamed .htm, forged forms from another port, a logged-out cookie", 8, 8, None);
}

/// One HTTP/1.1 request over a fresh connection: the status and the body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let (status, _, body) = common::servers::http(port, method, path, headers, body);
    (status, body)
}

fn json_of(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A phone with no DMV adds photos from its browser: the folder's upload
/// link, the phone's file picker, a 20 MiB film sent in three pieces, and
/// one commit on the branch by the token's user, with the bytes exact.
#[test]
fn a_phone_uploads_photos_from_its_browser() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("shoot")).unwrap();
    photo(&work.join("shoot/img-0.jpg"), 0);
    commit_all(&work, "the shoot");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-al\" = { access = \"write\", user = \"al\" }\n",
        t,
        0,
    );
    let base = format!("http://127.0.0.1:{}", server.port);
    let phone = t.join("phone");
    std::fs::create_dir_all(&phone).unwrap();
    photo(&phone.join("IMG_1001.jpg"), 99);
    std::fs::write(phone.join("clip.mov"), dmv_testkit::noise(20 << 20, 5)).unwrap();

    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = sized_browser(&driver, true).await;
        log_in(&c, &base, "tok-al").await;
        page_with(&c, "Repositories").await;
        c.goto(&format!("{base}/hub/tree/main/shoot/"))
            .await
            .unwrap();
        follow(&c, &base, Locator::LinkText("upload files here")).await;
        page_with(&c, "Upload to shoot/ on main").await;
        let picked = format!(
            "{}\n{}",
            phone.join("IMG_1001.jpg").display(),
            phone.join("clip.mov").display()
        );
        c.find(Locator::Id("files"))
            .await
            .unwrap()
            .send_keys(&picked)
            .await
            .unwrap();
        assert_eq!(
            c.find_all(Locator::Css("#progress li"))
                .await
                .unwrap()
                .len(),
            2
        );
        c.find(Locator::Id("message"))
            .await
            .unwrap()
            .send_keys("photos from the phone")
            .await
            .unwrap();
        c.find(Locator::Css("#upload button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        page_with(&c, "photos from the phone").await;
        assert!(c
            .current_url()
            .await
            .unwrap()
            .path()
            .starts_with("/hub/commit/"));
        c.close().await.unwrap();
    });
    let check = t.join("check");
    dmv(
        t,
        &["clone", hub.to_str().unwrap(), check.to_str().unwrap()],
    );
    for name in ["IMG_1001.jpg", "clip.mov"] {
        assert!(
            std::fs::read(check.join("shoot").join(name)).unwrap()
                == std::fs::read(phone.join(name)).unwrap(),
            "{name} arrived changed"
        );
    }
    assert!(check.join("shoot/img-0.jpg").exists());
    let log = dmv(&check, &["log", "--format=%an|%s|%P"]);
    let first = log.lines().next().unwrap();
    assert!(first.starts_with("al|photos from the phone|"), "{log}");
    assert_eq!(
        log.lines().count(),
        2,
        "one commit on top of the shoot: {log}"
    );
    let left = std::fs::read_dir(hub.join(".dmv/uploads")).unwrap().count();
    assert_eq!(left, 0, "the staged files are removed once committed");
    ok(&dmv_cmd(&hub).args(["fsck"]).output().unwrap());
}

/// One user opened uploads of the whole free space one after another and
/// nobody else could upload: the sizes of a user's open uploads add up to
/// at most `upload_bytes_per_user`, and a bound outside its range is refused.
#[test]
fn one_user_reserves_at_most_its_share_of_upload_bytes() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let tokens = "[tokens]\n\"tok-al\" = { access = \"write\", user = \"al\" }\n\"tok-bo\" = { access = \"write\", user = \"bo\" }\n";
    let server = HttpServer::start(
        &format!("upload_bytes_per_user = 10000000\n[repos]\nhub = \"hub\"\n{tokens}"),
        t,
        0,
    );
    let open = |token: &str, size: u64| {
        let headers = [
            ("Authorization", format!("Bearer {token}")),
            ("Content-Type", "application/json".to_string()),
        ];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        http(
            server.port,
            "POST",
            "/hub/uploads",
            &headers,
            format!(r#"{{"name":"take.mov","size":{size}}}"#).as_bytes(),
        )
    };
    let (tried, mut refused) = (3, 0);
    assert_eq!(open("tok-al", 6_000_000).0, 201);
    assert_eq!(open("tok-al", 4_000_000).0, 201, "up to the share exactly");
    let (code, body) = open("tok-al", 1);
    assert_eq!(code, 429, "{body}");
    assert!(
        body.contains("10000000 bytes one user may have open"),
        "{body}"
    );
    refused += 1;
    let (code, body) = open("tok-al", u64::MAX);
    assert_eq!(code, 429, "{body}");
    refused += 1;
    assert_eq!(
        open("tok-bo", 10_000_000).0,
        201,
        "another user keeps a share of their own"
    );
    let (code, body) = open("tok-bo", 10_000_001);
    assert_eq!(code, 429, "{body}");
    refused += 1;
    std::fs::write(
        t.join("zero.toml"),
        format!("upload_bytes_per_user = 0\n[repos]\nhub = \"hub\"\n{tokens}"),
    )
    .unwrap();
    // Under `timeout`: were the bound taken, the server would serve on.
    let out = Command::new("timeout")
        .arg("20")
        .arg(common::bin())
        .args([
            "serve",
            "--config",
            t.join("zero.toml").to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("upload_bytes_per_user = 0"),
        "{out:?}"
    );
    security_report(
        "upload bytes",
        "one user's open uploads past their share of bytes",
        tried,
        refused,
        None,
    );
}

/// The upload endpoints as a hostile or unlucky client meets them: a piece
/// cut short by a dropped connection counts what arrived and the upload
/// resumes from there; a piece at the wrong offset, past the declared
/// size, or bigger than a piece may be is refused; a read token, a login
/// without its form secret, a page of another origin and another user's
/// upload id get nothing; a path changed since the uploader saw it is not
/// replaced; and the staged bytes go once committed.
#[test]
fn uploads_resume_where_they_stopped_and_refuse_what_they_must() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::write(work.join("notes.txt"), "one").unwrap();
    commit_all(&work, "notes");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let seen = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-al\" = { access = \"write\", user = \"al\" }\n\"tok-bo\" = { access = \"write\", user = \"bo\" }\n\"tok-read\" = \"read\"\n\"tok-x\" = \"write\"\n\"tok-y\" = \"write\"\n",
        t,
        0,
    );
    let port = server.port;
    let al = [("Authorization", "Bearer tok-al")];
    let al_json = [
        ("Authorization", "Bearer tok-al"),
        ("Content-Type", "application/json"),
    ];
    let data = dmv_testkit::noise(3 << 20, 11);
    let (mut tried, mut refused) = (0, 0);
    let mut refuse = |expected: u16, got: (u16, String)| {
        tried += 1;
        assert_eq!(got.0, expected, "{}", got.1);
        refused += 1;
    };

    let (code, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &al_json,
        br#"{"name":"take.mov","size":3145728}"#,
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_str().unwrap().to_string();
    let piece_url = |offset: usize| format!("/hub/uploads/{id}?offset={offset}");

    // A piece whose connection drops after 1 MiB of its 2 MiB: what arrived is kept.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-al\r\nContent-Length: {}\r\n\r\n",
        piece_url(0),
        2 << 20
    )
    .unwrap();
    s.write_all(&data[..1 << 20]).unwrap();
    drop(s);
    let started = Instant::now();
    let received = loop {
        let (code, body) = http(port, "GET", &format!("/hub/uploads/{id}"), &al, b"");
        assert_eq!(code, 200, "{body}");
        let got = json_of(&body)["received"].as_u64().unwrap();
        if got == 1 << 20 || started.elapsed() > Duration::from_secs(20) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        received,
        1 << 20,
        "the bytes that arrived before the drop count"
    );
    // Sent again from the start: refused with where to go on from.
    let (code, body) = http(port, "PUT", &piece_url(0), &al, &data[..1 << 20]);
    refuse(409, (code, body.clone()));
    assert_eq!(json_of(&body)["received"].as_u64(), Some(1 << 20));
    // Past the declared size.
    refuse(
        413,
        http(
            port,
            "PUT",
            &piece_url(1 << 20),
            &al,
            &vec![0u8; (2 << 20) + 1],
        ),
    );
    let (code, body) = http(port, "GET", &format!("/hub/uploads/{id}"), &al, b"");
    assert_eq!(code, 200);
    let received = json_of(&body)["received"].as_u64().unwrap() as usize;
    // Another user, a read token, a bad name, an unknown id.
    refuse(
        404,
        http(
            port,
            "GET",
            &format!("/hub/uploads/{id}"),
            &[("Authorization", "Bearer tok-bo")],
            b"",
        ),
    );
    refuse(
        403,
        http(
            port,
            "POST",
            "/hub/uploads",
            &[
                ("Authorization", "Bearer tok-read"),
                ("Content-Type", "application/json"),
            ],
            br#"{"name":"x","size":1}"#,
        ),
    );
    refuse(
        400,
        http(
            port,
            "POST",
            "/hub/uploads",
            &al_json,
            br#"{"name":"../x","size":1}"#,
        ),
    );
    refuse(
        404,
        http(port, "PUT", "/hub/uploads/0123?offset=0", &al, b"x"),
    );
    // Not finished: not committed.
    let commit_body = |seen: &str, name: &str| {
        format!(
            r#"{{"branch":"main","seen":"{seen}","folder":"takes","message":"from the set","files":[{{"name":"{name}","id":"{id}"}}]}}"#
        )
    };
    refuse(
        409,
        http(
            port,
            "POST",
            "/hub/commit-uploads",
            &al_json,
            commit_body(&seen, "take.mov").as_bytes(),
        ),
    );
    // The rest, from where the server says it stopped.
    let (code, body) = http(port, "PUT", &piece_url(received), &al, &data[received..]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["received"].as_u64(), Some(3 << 20));
    // Committed on what the uploader saw; the staged file goes.
    let (code, body) = http(
        port,
        "POST",
        "/hub/commit-uploads",
        &al_json,
        commit_body(&seen, "take.mov").as_bytes(),
    );
    assert_eq!(code, 200, "{body}");
    let commit = json_of(&body)["commit"].as_str().unwrap().to_string();
    assert_eq!(dmv(&hub, &["rev-parse", "main"]).trim(), commit);
    let check = t.join("check");
    dmv(
        t,
        &["clone", hub.to_str().unwrap(), check.to_str().unwrap()],
    );
    assert!(
        std::fs::read(check.join("takes/take.mov")).unwrap() == data,
        "the committed take is the bytes sent"
    );
    assert_eq!(
        std::fs::read_dir(hub.join(".dmv/uploads")).unwrap().count(),
        0
    );
    refuse(
        404,
        http(port, "GET", &format!("/hub/uploads/{id}"), &al, b""),
    );

    // notes.txt changes on main after the page that shows `seen` was opened: an upload of it is refused.
    std::fs::write(check.join("notes.txt"), "two").unwrap();
    commit_all(&check, "notes again");
    dmv(&check, &["push"]);
    let moved = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let (_, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &al_json,
        br#"{"name":"notes.txt","size":5}"#,
    );
    let id2 = json_of(&body)["id"].as_str().unwrap().to_string();
    assert_eq!(
        http(
            port,
            "PUT",
            &format!("/hub/uploads/{id2}?offset=0"),
            &al,
            b"phone"
        )
        .0,
        200
    );
    let stale = format!(
        r#"{{"branch":"main","seen":"{seen}","folder":"","files":[{{"name":"notes.txt","id":"{id2}"}}]}}"#
    );
    let (code, body) = http(
        port,
        "POST",
        "/hub/commit-uploads",
        &al_json,
        stale.as_bytes(),
    );
    refuse(409, (code, body.clone()));
    assert!(
        body.contains("notes.txt changed on main since you opened this page"),
        "{body}"
    );
    assert_eq!(dmv(&hub, &["rev-parse", "main"]).trim(), moved);

    // A login's session without its form secret, or from another origin, cannot upload.
    let login = Command::new("curl")
        .args([
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-d",
            "token=tok-al",
            &format!("http://127.0.0.1:{port}/login"),
        ])
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&login.stdout).to_string();
    let cookie = headers
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().starts_with("set-cookie:").then(|| {
                l.split_once(':')
                    .unwrap()
                    .1
                    .trim()
                    .split(';')
                    .next()
                    .unwrap()
                    .to_string()
            })
        })
        .unwrap();
    let with_cookie = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
    ];
    refuse(
        403,
        http(
            port,
            "POST",
            "/hub/uploads",
            &with_cookie,
            br#"{"name":"x","size":1}"#,
        ),
    );
    let page = http(
        port,
        "GET",
        "/hub/upload/main/",
        &[("Cookie", cookie.as_str())],
        b"",
    )
    .1;
    let secret = page
        .split("data-secret=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(secret.len(), 64, "the page carries the login's form secret");
    let forged = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
        ("x-dmv-form-secret", secret.as_str()),
        ("Origin", "http://127.0.0.1:1"),
    ];
    refuse(
        403,
        http(
            port,
            "POST",
            "/hub/uploads",
            &forged,
            br#"{"name":"x","size":1}"#,
        ),
    );
    let ours = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
        ("x-dmv-form-secret", secret.as_str()),
    ];
    assert_eq!(
        http(
            port,
            "POST",
            "/hub/uploads",
            &ours,
            br#"{"name":"x","size":1}"#
        )
        .0,
        201
    );
    // Two write tokens without a user had one another's uploads.
    let (_, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &[
            ("Authorization", "Bearer tok-x"),
            ("Content-Type", "application/json"),
        ],
        br#"{"name":"x.jpg","size":1}"#,
    );
    let xs = json_of(&body)["id"].as_str().unwrap().to_string();
    assert_eq!(
        http(
            port,
            "GET",
            &format!("/hub/uploads/{xs}"),
            &[("Authorization", "Bearer tok-x")],
            b""
        )
        .0,
        200
    );
    refuse(
        404,
        http(
            port,
            "GET",
            &format!("/hub/uploads/{xs}"),
            &[("Authorization", "Bearer tok-y")],
            b"",
        ),
    );
    refuse(
        404,
        http(
            port,
            "PUT",
            &format!("/hub/uploads/{xs}?offset=0"),
            &[("Authorization", "Bearer tok-y")],
            b"y",
        ),
    );
    // One user holds at most 32 uploads open (one held all 256 for a day).
    let mut opened = 0;
    let yours_full = loop {
        let (code, body) = http(
            port,
            "POST",
            "/hub/uploads",
            &[
                ("Authorization", "Bearer tok-y"),
                ("Content-Type", "application/json"),
            ],
            br#"{"name":"many.jpg","size":1}"#,
        );
        if code != 201 {
            break (code, body);
        }
        opened += 1;
        assert!(opened <= 32, "no bound on one user's uploads");
    };
    refuse(429, yours_full);
    assert_eq!(
        http(
            port,
            "POST",
            "/hub/uploads",
            &[
                ("Authorization", "Bearer tok-bo"),
                ("Content-Type", "application/json")
            ],
            br#"{"name":"b.jpg","size":1}"#
        )
        .0,
        201,
        "others still upload"
    );
    // Uploads of most of the free space: each alone fits, together they do not.
    let free = String::from_utf8(
        Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(hub.join(".dmv"))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let free: u64 = free.lines().nth(1).unwrap().trim().parse().unwrap();
    let whole = |token: &str| {
        http(
            port,
            "POST",
            "/hub/uploads",
            &[
                ("Authorization", token),
                ("Content-Type", "application/json"),
            ],
            format!(r#"{{"name":"all.raw","size":{}}}"#, free / 10 * 6).as_bytes(),
        )
    };
    assert_eq!(whole("Bearer tok-bo").0, 201);
    refuse(507, whole("Bearer tok-x"));
    // Names and paths no file system holds (a 300-byte name, a folder 2,100 deep) were
    // committed, and every later clone stopped at its checkout; a branch named HEAD was made.
    let long_name = format!(r#"{{"name":"{}.jpg","size":1}}"#, "n".repeat(296));
    refuse(
        400,
        http(port, "POST", "/hub/uploads", &al_json, long_name.as_bytes()),
    );
    let now = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let (_, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &al_json,
        br#"{"name":"deep.jpg","size":1}"#,
    );
    let small = json_of(&body)["id"].as_str().unwrap().to_string();
    assert_eq!(
        http(
            port,
            "PUT",
            &format!("/hub/uploads/{small}?offset=0"),
            &al,
            b"x"
        )
        .0,
        200
    );
    let into = |branch: &str, folder: &str| {
        format!(
            r#"{{"branch":"{branch}","seen":"{now}","folder":"{folder}","files":[{{"name":"deep.jpg","id":"{small}"}}]}}"#
        )
    };
    let (code, body) = http(
        port,
        "POST",
        "/hub/commit-uploads",
        &al_json,
        into("main", &"d/".repeat(2100)).as_bytes(),
    );
    refuse(400, (code, body.clone()));
    assert!(body.contains("4,096 bytes"), "{body}");
    refuse(
        400,
        http(
            port,
            "POST",
            "/hub/commit-uploads",
            &al_json,
            into("HEAD", "").as_bytes(),
        ),
    );
    assert_eq!(
        dmv(&hub, &["rev-parse", "main"]).trim(),
        now,
        "nothing was committed"
    );
    assert!(!dmv(&hub, &["branch"]).contains("HEAD"));
    security_report("uploads", "browser uploads: cut pieces, wrong offsets, oversize, other users, read tokens, bad names, stale pages, forged origins", tried, refused, None);
}

/// Names of the photos on the page's wall, in the order shown.
async fn wall_names(c: &Client) -> Vec<String> {
    let v = c
        .execute(
            "return Array.from(document.querySelectorAll('.wall a.ph')).map(p => p.dataset.name);",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// What the lightbox shows: hidden or not, its name, its facts.
async fn lightbox(c: &Client) -> (bool, String, String) {
    let v = c
        .execute("var b = document.getElementById('lightbox'); return [b.hidden, b.querySelector('.name').textContent, b.querySelector('.facts').textContent];", vec![])
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// A folder of photos as a photo library shows it, at a phone's size and
/// a desktop's: grouped by the day each was taken (newest first, a day in
/// the order shot; a photo without EXIF by its commit's day), rows that
/// keep each photo's shape and fill the width, a lightbox moved by arrow
/// keys and by a swipe with the camera's facts, photos picked and
/// downloaded as one zip, search hits with thumbnails, a lock taken and
/// given back by a button, and photos shared to the installed app (its
/// service worker keeps them) uploaded into a folder and committed.
#[test]
fn a_folder_of_photos_reads_as_a_photo_library() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("shoot/rejects")).unwrap();
    let shapes = [(1200, 800), (800, 1200), (1000, 1000)];
    // 28 Nov: twelve photos; 29 Nov and 2 Dec: three each, named against
    // the order they were shot in.
    let mut expected_2dec = Vec::new();
    for i in 0..18u32 {
        let (day, hour) = match i {
            0..12 => ("2026:11:28", 8 + i),
            12..15 => ("2026:11:29", 10 + i - 12),
            _ => ("2026:12:02", 12 - (i - 15)),
        };
        let name = format!("IMG_{:04}.jpg", 4000 + i);
        if day == "2026:12:02" {
            expected_2dec.insert(0, name.clone());
        }
        let (w, h) = shapes[i as usize % 3];
        camera_photo(
            &work.join("shoot").join(&name),
            w,
            h,
            i as u8 * 13,
            &format!("{day} {hour:02}:00:00"),
        );
    }
    photo(&work.join("shoot/scan.jpg"), 7);
    std::fs::write(work.join("shoot/notes.txt"), "keep the blue ones\n").unwrap();
    std::fs::write(
        work.join("README.md"),
        "# Autumn shoot\n\nSelects are in **shoot/**.\n",
    )
    .unwrap();
    commit_all(&work, "Autumn shoot: three days");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let head = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let mut server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-al\" = { access = \"write\", user = \"al\" }\n",
        t,
        0,
    );
    let base = format!("http://127.0.0.1:{}", server.port);
    let shots = std::env::var_os("DMV_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| t.join("screenshots"));
    std::fs::create_dir_all(&shots).unwrap();
    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut zips = Vec::new();
        for (size, phone) in [("phone", true), ("desktop", false)] {
            let c = sized_browser(&driver, phone).await;
            if phone {
                // The address `dmv serve` prints: the token in the fragment logs in.
                c.goto(&format!("{base}/login#token=tok-al")).await.unwrap();
                assert!(!c.current_url().await.unwrap().as_str().contains("tok-al"));
            } else {
                log_in(&c, &base, "tok-al").await;
            }
            page_with(&c, "Repositories").await;
            // Home: the README and the latest change.
            c.goto(&format!("{base}/hub/")).await.unwrap();
            assert_eq!(c.find(Locator::Css("article h1")).await.unwrap().text().await.unwrap(), "Autumn shoot");
            assert!(c.source().await.unwrap().contains("Autumn shoot: three days"));
            std::fs::write(shots.join(format!("home-{size}.png")), c.screenshot().await.unwrap()).unwrap();

            c.goto(&format!("{base}/hub/tree/main/shoot/")).await.unwrap();
            let mut days = Vec::new();
            for h in c.find_all(Locator::Css("h2.day")).await.unwrap() {
                days.push(h.text().await.unwrap());
            }
            // The scan says nothing of when it was taken: its commit's day, today, comes first.
            assert_eq!(days.len(), 4, "{days:?}");
            assert!(days[0].ends_with("· 1"), "{days:?}");
            assert_eq!(days[1..], ["2 Dec 2026 · 3", "29 Nov 2026 · 3", "28 Nov 2026 · 12"]);
            let names = wall_names(&c).await;
            assert_eq!(names.len(), 19);
            assert_eq!(names[0], "scan.jpg");
            assert_eq!(names[1..4], expected_2dec[..]);
            assert_eq!(names[7..10], ["IMG_4000.jpg", "IMG_4001.jpg", "IMG_4002.jpg"]);
            // Rows keep each photo's shape and fill the width: in every row
            // but a day's last, the photos share one height and end at the edge.
            loaded_images(&c).await;
            let rows = c.execute(r#"
                var out = [];
                document.querySelectorAll('.wall').forEach(function (wall) {
                  var rows = {}, w = wall.getBoundingClientRect();
                  wall.querySelectorAll('a.ph').forEach(function (p) {
                    var r = p.getBoundingClientRect(), k = Math.round(r.top);
                    (rows[k] = rows[k] || []).push(r);
                  });
                  var keys = Object.keys(rows).map(Number).sort(function (a, b) { return a - b; });
                  keys.slice(0, -1).forEach(function (k) {
                    var row = rows[k], hs = row.map(function (r) { return r.height; });
                    var right = Math.max.apply(null, row.map(function (r) { return r.right; }));
                    out.push([Math.max.apply(null, hs) - Math.min.apply(null, hs), w.right - right, row.length]);
                  });
                });
                return out;"#, vec![]).await.unwrap();
            let rows: Vec<(f64, f64, usize)> = serde_json::from_value(rows).unwrap();
            assert!(!rows.is_empty(), "the 28 Nov photos fill more than one row on a {size}");
            for (spread, gap, n) in &rows {
                assert!(*spread < 1.5 && gap.abs() < 1.5, "a row of {n} on a {size}: heights differ by {spread} px, ends {gap} px from the edge");
            }
            std::fs::write(shots.join(format!("photos-{size}.png")), c.screenshot().await.unwrap()).unwrap();

            // The lightbox: the first photo of 2 Dec, then the next by key or swipe.
            c.find_all(Locator::Css(".wall a.ph")).await.unwrap()[1].click().await.unwrap();
            let (hidden, name, facts) = lightbox(&c).await;
            assert!(!hidden);
            assert_eq!(name, expected_2dec[0]);
            assert!(facts.contains("Canon EOS R5") && facts.contains("1/250 s") && facts.contains("f/2.8"), "{facts}");
            let download = c.find(Locator::Css("#lightbox a.download")).await.unwrap().attr("href").await.unwrap().unwrap();
            assert!(download.contains("/hub/raw/") && download.ends_with(&format!("/{}?download=1", expected_2dec[0])), "{download}");
            let big = c.execute("var i = document.querySelector('#lightbox .stage img'); return new Promise(function (ok) { (function wait() { if (i.complete && i.naturalWidth) ok([i.naturalWidth, i.getBoundingClientRect().bottom <= innerHeight]); else setTimeout(wait, 50); })(); });", vec![]).await.unwrap();
            let (width, fits): (u32, bool) = serde_json::from_value(big).unwrap();
            assert!(width >= 1000 && fits, "the preview is {width} px wide; fits the screen: {fits}");
            std::fs::write(shots.join(format!("lightbox-{size}.png")), c.screenshot().await.unwrap()).unwrap();
            if phone {
                c.execute("var b = document.getElementById('lightbox'); function touch(type, x) { var t = new Touch({identifier: 1, target: b, clientX: x, clientY: 400}); b.dispatchEvent(new TouchEvent(type, {touches: type === 'touchstart' ? [t] : [], changedTouches: [t], bubbles: true})); } touch('touchstart', 300); touch('touchend', 80);", vec![]).await.unwrap();
            } else {
                c.find(Locator::Css("body")).await.unwrap().send_keys("\u{E014}").await.unwrap();
            }
            assert_eq!(lightbox(&c).await.1, expected_2dec[1], "the next photo, on a {size}");
            c.find(Locator::Css("body")).await.unwrap().send_keys("\u{E012}").await.unwrap();
            assert_eq!(lightbox(&c).await.1, expected_2dec[0]);
            c.find(Locator::Css("body")).await.unwrap().send_keys("\u{E00C}").await.unwrap();
            assert!(lightbox(&c).await.0, "Escape closes the lightbox");

            // Pick two photos: the bar's link downloads them as one zip.
            c.find(Locator::Id("select")).await.unwrap().click().await.unwrap();
            let photos = c.find_all(Locator::Css(".wall a.ph")).await.unwrap();
            photos[2].click().await.unwrap();
            photos[8].click().await.unwrap();
            assert_eq!(c.find(Locator::Css("#picked .count")).await.unwrap().text().await.unwrap(), "2 picked");
            zips.push((c.find(Locator::Css("#picked a.zip")).await.unwrap().attr("href").await.unwrap().unwrap(), vec![names[2].clone(), names[8].clone()]));

            // Search hits show their thumbnails.
            c.goto(&format!("{base}/hub/search?q=img&rev=main")).await.unwrap();
            assert_eq!(c.find_all(Locator::Css("main .wall img")).await.unwrap().len(), 18);

            // A lock taken and given back by the file page's button.
            c.goto(&format!("{base}/hub/file/main/shoot/IMG_4005.jpg")).await.unwrap();
            c.find(Locator::Css("form[action$='/locks/take'] button")).await.unwrap().click().await.unwrap();
            assert!(page_with(&c, "locked by al").await.contains("/locks/release"));
            assert!(locks_page_as(&base, "tok-al").contains("shoot/IMG_4005.jpg"));
            c.find(Locator::Css("form[action$='/locks/release'] button")).await.unwrap().click().await.unwrap();
            page_with(&c, "/locks/take").await;
            assert!(!locks_page_as(&base, "tok-al").contains("shoot/IMG_4005.jpg"));

            if !phone {
                // The installable app: its manifest names the share target,
                // and its service worker keeps what is shared until the upload page sends it.
                let shared = c.execute_async(r#"
                    var done = arguments[arguments.length - 1];
                    navigator.serviceWorker.ready.then(function () {
                      (function controlled() {
                        if (!navigator.serviceWorker.controller) return setTimeout(controlled, 50);
                        var form = new FormData();
                        form.append('photos', new File([new Uint8Array([255, 216, 255, 217])], 'shared-from-phone.jpg', {type: 'image/jpeg'}));
                        fetch('/-/share', {method: 'POST', body: form}).then(function (r) { return r.text().then(function (t) { done([r.url, t.indexOf('Upload 1 shared file') >= 0]); }); }, function (e) { done(['', String(e)]); });
                      })();
                    });"#, vec![]).await.unwrap();
                let (url, said): (String, bool) = serde_json::from_value(shared).unwrap();
                assert!(url.ends_with("/-/share?n=1") && said, "{url}");
                c.goto(&format!("{base}/hub/upload/main/shoot/?shared=1")).await.unwrap();
                page_with(&c, "1 shared file ready").await;
                c.find(Locator::Css("form#upload button[type=submit]")).await.unwrap().click().await.unwrap();
                page_with(&c, "Upload shared-from-phone.jpg from the web").await;
                for (href, picked) in &zips {
                    check_picked_zip(t, &base, href, picked);
                }
                // A folder seen shows offline, its thumbnails from what the service worker kept.
                c.goto(&format!("{base}/hub/tree/main/shoot/")).await.unwrap();
                let first_thumbs = "var imgs = Array.from(document.querySelectorAll('.wall a.ph:not([data-name=\"shared-from-phone.jpg\"]) img')).slice(0, 4), done = arguments[arguments.length - 1]; (function wait(n) { if (imgs.length === 4 && imgs.every(function (i) { return i.complete && i.naturalWidth > 0; })) return done(true); if (n > 200) return done(false); setTimeout(function () { wait(n + 1); }, 50); })(0);";
                assert_eq!(c.execute_async(first_thumbs, vec![]).await.unwrap(), json!(true));
                server.kill();
                c.refresh().await.unwrap();
                assert_eq!(c.execute_async(first_thumbs, vec![]).await.unwrap(), json!(true), "the folder's first thumbnails offline");
                assert_eq!(wall_names(&c).await.len(), 20, "the folder offline, with the shared photo");
                // The shared bytes are no picture: its tile says its name, not a broken glyph.
                let missing = c.execute("return Array.from(document.querySelectorAll('.wall a.ph.missing')).map(p => p.dataset.name);", vec![]).await.unwrap();
                assert_eq!(missing, json!(["shared-from-phone.jpg"]));
            }
            c.close().await.unwrap();
        }
    });
    // The shared photo is in the hub's history, in the folder picked.
    let shared = dmv_out(&hub, &["cat", "main:shoot/shared-from-phone.jpg"]);
    assert_eq!(
        shared.stdout,
        [255, 216, 255, 217],
        "{}",
        String::from_utf8_lossy(&shared.stderr)
    );
    assert_ne!(dmv(&hub, &["rev-parse", "main"]).trim(), head);
}

/// The names in the zip at `url`, downloaded with the token `tok-al` (it
/// must answer 200) to `t/listed.zip`.
fn zip_listing(t: &Path, url: &str) -> Vec<String> {
    let zip = t.join("listed.zip");
    let code = Command::new("curl")
        .args([
            "-s",
            "-w",
            "%{http_code}",
            "-H",
            "Authorization: Bearer tok-al",
            "-o",
        ])
        .arg(&zip)
        .arg(url)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&code.stdout), "200");
    let listed = Command::new("unzip").arg("-Z1").arg(&zip).output().unwrap();
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Downloads the zip at `href` and checks it holds exactly `picked`.
fn check_picked_zip(t: &Path, base: &str, href: &str, picked: &[String]) {
    let mut names: Vec<String> = zip_listing(t, &format!("{base}{href}"))
        .iter()
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect();
    names.sort();
    let mut picked = picked.to_vec();
    picked.sort();
    assert_eq!(names, picked);
}

/// A zip of picked photos takes at most 2,000 names, and none that leaves the folder.
#[test]
fn a_zip_of_picked_photos_has_a_budget() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::create_dir_all(work.join("shoot")).unwrap();
    std::fs::write(work.join("shoot/a.jpg"), "a").unwrap();
    std::fs::write(work.join("secret.txt"), "s").unwrap();
    commit_all(&work, "one");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok\" = \"read\"\n",
        t,
        0,
    );
    let base = format!("http://127.0.0.1:{}/hub/zip/main/shoot/", server.port);
    let many = vec!["a.jpg"; 2_001].join("%2F");
    let (code, body) = curl_status(&format!("{base}?pick={many}"), Some("tok"));
    assert_eq!(code, "404");
    assert!(
        body.contains("2001 picked: a zip takes at most 2000"),
        "{body}"
    );
    let (code, body) = curl_status(&format!("{base}?pick=..%2Fsecret.txt"), Some("tok"));
    assert_eq!(code, "404", "{body}");
    let headers = curl_headers(&format!("{base}?pick=a.jpg"), "tok");
    assert!(headers.starts_with("http/1.1 200"), "{headers}");
}

fn locks_page_as(base: &str, token: &str) -> String {
    curl_status(&format!("{base}/hub/locks"), Some(token)).1
}

/// Logs in over HTTP as a browser's form does; returns the session cookie (`dmv_session=…`).
fn cookie_of_login(port: u16, token: &str) -> String {
    let (status, head, _) = common::servers::http(
        port,
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        format!("token={token}").as_bytes(),
    );
    assert_eq!(status, 303, "{head}");
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("set-cookie")
                .then(|| value.trim().split(';').next().unwrap().to_string())
        })
        .unwrap_or_else(|| panic!("no cookie: {head}"))
}

/// The status of a page fetched with `cookie`.
fn status_with(port: u16, path: &str, cookie: &str) -> u16 {
    http(port, "GET", path, &[("Cookie", cookie)], b"").0
}

/// Logs out with `cookie`, as the page's button does.
fn log_out(port: u16, cookie: &str) {
    let origin = format!("http://127.0.0.1:{port}");
    let (status, _) = http(
        port,
        "POST",
        "/logout",
        &[("Cookie", cookie), ("Origin", &origin)],
        b"",
    );
    assert_eq!(status, 303);
}

/// Issue 69: a login is kept by the repository, not by one server's
/// memory: it survives a restart, works on a second server of the same
/// repository, and a logout on one ends it on both. What is kept names
/// neither the token nor the cookie.
#[test]
fn a_login_survives_a_restart_and_a_logout_ends_it_everywhere() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let config = "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-reader-secret\" = { access = \"read\", user = \"rita\" }\n";
    let mut first = HttpServer::start(config, t, 0);
    let cookie = cookie_of_login(first.port, "tok-reader-secret");
    assert_eq!(status_with(first.port, "/hub/", &cookie), 200);
    let port = first.port;
    first.kill();
    let first = HttpServer::start(config, t, port);
    assert_eq!(
        status_with(first.port, "/hub/", &cookie),
        200,
        "after a restart"
    );
    let second = HttpServer::start(config, t, 0);
    assert_eq!(
        status_with(second.port, "/hub/", &cookie),
        200,
        "on another server"
    );
    let kept: Vec<_> = std::fs::read_dir(hub.join("web-logins"))
        .or_else(|_| std::fs::read_dir(hub.join(".dmv/web-logins")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let id = cookie.strip_prefix("dmv_session=").unwrap();
    let record = std::fs::read_to_string(&kept[0]).unwrap();
    let name = kept[0].file_name().unwrap().to_string_lossy().to_string();
    for secret in ["tok-reader-secret", id] {
        assert!(
            !record.contains(secret) && !name.contains(secret),
            "{name}: {record}"
        );
    }
    // A cookie whose end was pushed later names no login.
    let (ends, random) = id.split_once('.').unwrap();
    let longer = format!(
        "dmv_session={}.{random}",
        ends.parse::<u64>().unwrap() + 86_400
    );
    assert_eq!(status_with(second.port, "/hub/", &longer), 401);
    log_out(second.port, &cookie);
    assert_eq!(
        status_with(first.port, "/hub/", &cookie),
        401,
        "logged out on the other server"
    );
    assert_eq!(
        std::fs::read_dir(kept[0].parent().unwrap())
            .unwrap()
            .count(),
        0
    );
}

/// Issue 69: a repository kept in a bucket and served by two servers has
/// the web UI of one in a directory, from either server: its README, a
/// wall of photos, thumbnails and the bytes of a photo fetched from the
/// bucket when a page first reads them, a push seen at the next page; one
/// login for both servers (kept in the bucket), ended on both by a logout.
/// Browsing leaves nothing in the bucket but the login's record. Zips, and
/// lock buttons that hold against pushes and against `dmv lock` pressed at
/// the same moment through the other server.
#[test]
fn a_bucket_served_by_two_servers_has_the_web_ui() {
    if lacks(&[Need::Minio]) {
        return;
    }
    use common::servers::{S3Server, MINIO_SECRET, MINIO_USER};
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    minio.create_bucket("studio");
    let laptop = t.join("laptop");
    dmv(t, &["init", laptop.to_str().unwrap()]);
    std::fs::write(
        laptop.join("README.md"),
        "# Day one\n\nThe *harbour* shoot.\n",
    )
    .unwrap();
    std::fs::create_dir(laptop.join("shoot")).unwrap();
    for i in 0..3u8 {
        camera_photo(
            &laptop.join(format!("shoot/IMG_{i}.jpg")),
            300,
            200,
            i * 60,
            &format!("2026:05:0{} 10:00:00", i + 1),
        );
    }
    std::fs::create_dir(laptop.join("portrait")).unwrap();
    camera_photo(
        &laptop.join("portrait/IMG_P.jpg"),
        200,
        300,
        90,
        "2026:05:04 10:00:00",
    );
    commit_all(&laptop, "the harbour shoot");
    let to_bucket = |c: &mut Command| {
        minio.env(c);
        c.env("AWS_ENDPOINT_URL", minio.endpoint());
    };
    let push = |message: &str| {
        let mut c = Command::new(bin());
        c.current_dir(&laptop)
            .args(["push", "s3://studio/photos", "main"]);
        to_bucket(&mut c);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{message}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    push("first push");
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nphotos = {{ url = \"s3://studio/photos\", endpoint = \"{}\" }}\n[tokens]\n\"tok-rita\" = {{ access = \"read\", user = \"rita\" }}\n\"tok-al\" = {{ access = \"write\", user = \"al\" }}\n\"tok-bob\" = {{ access = \"write\", user = \"bob\" }}\n",
            minio.endpoint()
        ),
    )
    .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let before = minio.list("studio", "photos/");
    assert!(!before.is_empty());
    let (a, b) = (
        HttpServer::start_with_env(&config, 0, &env),
        HttpServer::start_with_env(&config, 0, &env),
    );
    let cookie = cookie_of_login(a.port, "tok-rita");
    let page = |port: u16, path: &str| {
        let (status, body) = http(port, "GET", path, &[("Cookie", &cookie)], b"");
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    // A photo whose data the view has not fetched is laid out at 3:2, its
    // shape left for the page to take from its thumbnail; once the
    // thumbnail fetched it, the wall is sorted again with its real shape.
    let portrait = page(a.port, "/photos/tree/main/portrait");
    assert!(
        portrait.contains("--r:1.500") && portrait.contains("data-guess"),
        "{portrait}"
    );
    let thumb = portrait
        .split("/photos/thumb/")
        .nth(1)
        .and_then(|s| s.split(['"', '?']).next())
        .unwrap_or_else(|| panic!("no thumbnail: {portrait}"));
    let (status, _, _) = common::servers::http(
        a.port,
        "GET",
        &format!("/photos/thumb/{thumb}"),
        &[("Cookie", &cookie)],
        b"",
    );
    assert_eq!(status, 200);
    let portrait = page(a.port, "/photos/tree/main/portrait");
    assert!(
        portrait.contains("--r:0.667") && !portrait.contains("data-guess"),
        "{portrait}"
    );
    assert!(
        portrait.contains("d-2026-05-04"),
        "dated as taken: {portrait}"
    );
    for server in [&a, &b] {
        let home = page(server.port, "/photos/");
        assert!(
            home.contains("<em>harbour</em>"),
            "the README is shown: {home}"
        );
        assert!(home.contains("the harbour shoot"), "{home}");
        let wall = page(server.port, "/photos/tree/main/shoot");
        for i in 0..3 {
            assert!(wall.contains(&format!("IMG_{i}.jpg")), "{wall}");
        }
        let thumb = wall
            .split("/photos/thumb/")
            .nth(1)
            .and_then(|s| s.split(['"', '?']).next())
            .unwrap_or_else(|| panic!("no thumbnail on the wall: {wall}"));
        let (status, head, body) = common::servers::http(
            server.port,
            "GET",
            &format!("/photos/thumb/{thumb}"),
            &[("Cookie", &cookie)],
            b"",
        );
        assert_eq!(status, 200, "{head}");
        assert!(head.to_ascii_lowercase().contains("image/jpeg"), "{head}");
        assert!(body.len() > 100, "{}", body.len());
    }
    // A photo's bytes, exactly, through its file page's download link.
    let file_page = page(b.port, "/photos/file/main/shoot/IMG_1.jpg");
    let raw = file_page
        .split("/photos/raw/")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no raw link: {file_page}"));
    let out = Command::new("curl")
        .args([
            "-s",
            "-f",
            "-H",
            &format!("Cookie: {cookie}"),
            &format!("http://127.0.0.1:{}/photos/raw/{raw}", b.port),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout == std::fs::read(laptop.join("shoot/IMG_1.jpg")).unwrap());
    // A push straight to the bucket is on both servers' pages a second later.
    std::fs::write(laptop.join("notes.txt"), "picked: IMG_1\n").unwrap();
    commit_all(&laptop, "pick the best one");
    push("second push");
    std::thread::sleep(Duration::from_millis(1100));
    for server in [&a, &b] {
        assert!(page(server.port, "/photos/").contains("pick the best one"));
    }
    // Browsing writes nothing to the bucket: the views are no replicas.
    let settled = minio.list("studio", "photos/");
    assert_eq!(
        settled
            .iter()
            .filter(|k| k.contains("/server/logins/"))
            .count(),
        1,
        "one login's record: {settled:?}"
    );
    assert!(!before.iter().any(|k| k.contains("/server/")));
    for server in [&a, &b] {
        let notes = page(server.port, "/photos/file/main/notes.txt");
        assert!(notes.contains("picked: IMG_1"), "{notes}");
        page(server.port, "/photos/log/main");
        page(server.port, "/photos/tree/main/shoot?view=list");
    }
    assert_eq!(minio.list("studio", "photos/"), settled);
    // A zip of the folder, its data fetched from the bucket.
    let zipped = zip_listing(
        t,
        &format!("http://127.0.0.1:{}/photos/zip/main/shoot", b.port),
    );
    assert_eq!(
        zipped.iter().filter(|n| n.ends_with(".jpg")).count(),
        3,
        "{zipped:?}"
    );
    // The lock button takes a lock in the bucket: the other server shows
    // it, and a push straight to the bucket that changes the file is refused.
    let lock_form = |port: u16, action: &str| {
        let (status, body) = http(
            port,
            "POST",
            &format!("/photos/locks/{action}"),
            &[
                ("Authorization", "Bearer tok-al"),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            b"path=shoot%2FIMG_2.jpg",
        );
        assert_eq!(status, 303, "{action}: {body}");
    };
    lock_form(a.port, "take");
    std::thread::sleep(Duration::from_millis(1100));
    let locks = page(b.port, "/photos/locks");
    assert!(
        locks.contains("shoot/IMG_2.jpg") && locks.contains(">al<"),
        "{locks}"
    );
    camera_photo(
        &laptop.join("shoot/IMG_2.jpg"),
        300,
        200,
        7,
        "2026:05:03 11:00:00",
    );
    commit_all(&laptop, "retouch IMG_2");
    let mut refused = Command::new(bin());
    refused
        .current_dir(&laptop)
        .args(["push", "s3://studio/photos", "main"]);
    to_bucket(&mut refused);
    let refused = refused.output().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("shoot/IMG_2.jpg"));
    lock_form(b.port, "release");
    std::thread::sleep(Duration::from_millis(1100));
    assert!(!page(a.port, "/photos/locks").contains("shoot/IMG_2.jpg"));
    push("a push once the lock is given back");
    // The button and `dmv lock` at the same moment, through different
    // servers, for the same path: exactly one holds it, and both say so.
    let bob = t.join("bob");
    dmv(
        t,
        &[
            "clone",
            "--token",
            "tok-bob",
            &b.url("photos"),
            bob.to_str().unwrap(),
        ],
    );
    for round in 0..6 {
        let path = format!("shoot/race-{round}.jpg");
        let web = {
            let path = path.clone();
            let port = a.port;
            std::thread::spawn(move || {
                http(
                    port,
                    "POST",
                    "/photos/locks/take",
                    &[
                        ("Authorization", "Bearer tok-al"),
                        ("Content-Type", "application/x-www-form-urlencoded"),
                    ],
                    format!("path={}", path.replace('/', "%2F")).as_bytes(),
                )
                .0
            })
        };
        let cli = Command::new(bin())
            .current_dir(&bob)
            .args(["lock", &path, "--json"])
            .output()
            .unwrap();
        let web = web.join().unwrap();
        assert!(
            (web == 303) != cli.status.success(),
            "round {round}: the button answered {web}, dmv lock {:?}",
            cli.status
        );
        let listed = Command::new(bin())
            .current_dir(&bob)
            .args(["locks", "--json"])
            .output()
            .unwrap();
        let listed: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
        let holders: Vec<&str> = listed
            .iter()
            .filter(|l| l["path"] == path.as_str())
            .map(|l| l["owner"].as_str().unwrap())
            .collect();
        assert_eq!(
            holders,
            [if web == 303 { "al" } else { "bob" }],
            "round {round}"
        );
    }
    log_out(b.port, &cookie);
    assert_eq!(status_with(a.port, "/photos/", &cookie), 401);
    assert!(minio
        .list("studio", "photos/")
        .iter()
        .all(|k| !k.contains("/server/logins/")));
}

/// Issue 69: what is known of an upload is kept beside its bytes, not in
/// one server's memory. Opened on one server, it resumes after that server
/// is killed and started again, and through a second server of the same
/// directory, which commits it; a piece one server is receiving keeps the
/// other server out, and a killed server's piece holds nothing.
#[test]
fn an_upload_resumes_across_a_restart_and_another_server() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    dmv(t, &["init", work.to_str().unwrap()]);
    std::fs::write(work.join("notes.txt"), "one").unwrap();
    commit_all(&work, "notes");
    dmv(&work, &["push", hub.to_str().unwrap(), "main"]);
    let seen = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let config = "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-al\" = { access = \"write\", user = \"al\" }\n\"tok-bo\" = { access = \"write\", user = \"bo\" }\n";
    let mut a = HttpServer::start(config, t, 0);
    let b = HttpServer::start(config, t, 0);
    // As the upload page does: a login's cookie and its forms' secret.
    let cookie = cookie_of_login(a.port, "tok-al");
    let page = http(
        a.port,
        "GET",
        "/hub/upload/main/",
        &[("Cookie", &cookie)],
        b"",
    )
    .1;
    let secret = page
        .split("data-secret=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no form secret: {page}"))
        .to_string();
    let al = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
        ("x-dmv-form-secret", secret.as_str()),
    ];
    let data = dmv_testkit::noise(3 << 20, 69);
    let first = (1 << 20) + 17;

    let (code, body) = http(
        a.port,
        "POST",
        "/hub/uploads",
        &al,
        format!(r#"{{"name":"take.mov","size":{}}}"#, data.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_str().unwrap().to_string();
    let piece_url = |offset: usize| format!("/hub/uploads/{id}?offset={offset}");
    let (code, body) = http(a.port, "PUT", &piece_url(0), &al, &data[..first]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["received"].as_u64(), Some(first as u64));

    // The next piece begins on A (its head sent, none of its bytes yet):
    // B refuses a piece of the same upload as busy, not writing beside it.
    let mut on_a = std::net::TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    write!(
        on_a,
        "PUT {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {cookie}\r\nx-dmv-form-secret: {secret}\r\nContent-Length: {}\r\n\r\n",
        piece_url(first),
        a.port,
        data.len() - first
    )
    .unwrap();
    on_a.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    loop {
        // At a wrong offset: were B to get the piece, it would write nothing.
        let (code, body) = http(b.port, "PUT", &piece_url(0), &al, b"x");
        assert_eq!(code, 409, "{body}");
        if body.contains("a piece of this upload is being received") {
            assert_eq!(json_of(&body)["received"].as_u64(), Some(first as u64));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "B never saw A's piece: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // A is killed mid-piece and started again on its port.
    let port = a.port;
    a.kill();
    drop(on_a);
    let a = HttpServer::start(config, t, port);
    let (code, body) = http(a.port, "GET", &format!("/hub/uploads/{id}"), &al, b"");
    assert_eq!(code, 200, "after a restart: {body}");
    let status = json_of(&body);
    assert_eq!(status["received"].as_u64(), Some(first as u64), "{body}");
    assert_eq!(status["size"].as_u64(), Some(data.len() as u64), "{body}");
    // Still nobody else's.
    let (code, body) = http(
        b.port,
        "GET",
        &format!("/hub/uploads/{id}"),
        &[("Authorization", "Bearer tok-bo")],
        b"",
    );
    assert_eq!(code, 404, "{body}");

    // The rest through B, whose piece the killed server's lock does not hold up.
    let (code, body) = http(b.port, "PUT", &piece_url(first), &al, &data[first..]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["received"].as_u64(), Some(data.len() as u64));
    let (code, body) = http(
        b.port,
        "POST",
        "/hub/commit-uploads",
        &al,
        format!(
            r#"{{"branch":"main","seen":"{seen}","folder":"takes","message":"from two servers","files":[{{"name":"take.mov","id":"{id}"}}]}}"#
        )
        .as_bytes(),
    );
    assert_eq!(code, 200, "{body}");
    let commit = json_of(&body)["commit"].as_str().unwrap().to_string();
    assert_eq!(dmv(&hub, &["rev-parse", "main"]).trim(), commit);
    let check = t.join("check");
    dmv(
        t,
        &["clone", hub.to_str().unwrap(), check.to_str().unwrap()],
    );
    assert!(
        std::fs::read(check.join("takes/take.mov")).unwrap() == data,
        "the committed take is the bytes sent, to both servers"
    );
    assert_eq!(
        std::fs::read_dir(hub.join(".dmv/uploads")).unwrap().count(),
        0,
        "the bytes and the record go once committed"
    );
    let (code, body) = http(a.port, "GET", &format!("/hub/uploads/{id}"), &al, b"");
    assert_eq!(code, 404, "committed through B, gone on A too: {body}");
}

/// A repository in a bucket takes uploads from browsers as a directory
/// does: staged in the bucket, so a piece sent to one server and the
/// next to another make one file, a server killed mid-upload loses
/// nothing, two servers given a piece at the same offset keep exactly
/// one, the commit lands in the bucket under its locks, and an upload
/// is found while pieces land.
#[test]
fn an_upload_to_a_bucket_resumes_on_another_server_and_lands_there() {
    if lacks(&[Need::Minio]) {
        return;
    }
    use common::servers::{S3Server, MINIO_SECRET, MINIO_USER};
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    minio.create_bucket("studio");
    let laptop = t.join("laptop");
    dmv(t, &["init", laptop.to_str().unwrap()]);
    std::fs::write(laptop.join("notes.txt"), "day one\n").unwrap();
    commit_all(&laptop, "notes");
    let to_bucket = |c: &mut Command| {
        minio.env(c);
        c.env("AWS_ENDPOINT_URL", minio.endpoint());
    };
    let mut push = Command::new(bin());
    push.current_dir(&laptop)
        .args(["push", "s3://studio/photos", "main"]);
    to_bucket(&mut push);
    assert!(push.output().unwrap().status.success());
    let seen = dmv(&laptop, &["rev-parse", "main"]).trim().to_string();
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nphotos = {{ url = \"s3://studio/photos\", endpoint = \"{}\" }}\n[tokens]\n\"tok-al\" = {{ access = \"write\", user = \"al\" }}\n\"tok-bob\" = {{ access = \"write\", user = \"bob\" }}\n",
            minio.endpoint()
        ),
    )
    .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let mut a = HttpServer::start_with_env(&config, 0, &env);
    let b = HttpServer::start_with_env(&config, 0, &env);
    let al = [
        ("Authorization", "Bearer tok-al"),
        ("Content-Type", "application/json"),
    ];
    let data = dmv_testkit::noise(3 << 20, 71);
    let first = (1 << 20) + 17;
    let (code, body) = http(
        a.port,
        "POST",
        "/photos/uploads",
        &al,
        format!(r#"{{"name":"take.mov","size":{}}}"#, data.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_str().unwrap().to_string();
    let piece_url = |offset: usize| format!("/photos/uploads/{id}?offset={offset}");
    let (code, body) = http(a.port, "PUT", &piece_url(0), &al, &data[..first]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["received"].as_u64(), Some(first as u64));

    // The same offset to both servers at once: one piece is kept, and the
    // other server says where the upload has come to.
    let send = |port: u16, bytes: Vec<u8>| {
        let url = piece_url(first);
        std::thread::spawn(move || {
            http(
                port,
                "PUT",
                &url,
                &[("Authorization", "Bearer tok-al")],
                &bytes,
            )
        })
    };
    let short = send(a.port, data[first..first + (1 << 20)].to_vec());
    let long = send(b.port, data[first..].to_vec());
    let (short, long) = (short.join().unwrap(), long.join().unwrap());
    // The loser is told where the upload has come to (409), or, when the
    // long piece finished it before the short one was looked at, that it
    // is finished (404): then everything was received.
    let finished = |(code, body): &(u16, String)| *code == 404 && body.contains("it finished");
    let kept: Vec<u64> = [&short, &long]
        .iter()
        .map(|reply| {
            let (code, body) = reply;
            if finished(reply) {
                return data.len() as u64;
            }
            assert!(*code == 200 || *code == 409, "{code}: {body}");
            json_of(body)["received"].as_u64().unwrap()
        })
        .collect();
    assert!(
        !finished(&long),
        "the long piece is the one that can finish it"
    );
    assert!(
        (short.0 == 200) != (long.0 == 200),
        "exactly one piece is kept: {short:?} {long:?}"
    );
    assert_eq!(
        kept[0], kept[1],
        "both servers say the same: {short:?} {long:?}"
    );
    let received = kept[0] as usize;
    let short_won = short.0 == 200;
    assert_eq!(
        received,
        if short_won {
            first + (1 << 20)
        } else {
            data.len()
        }
    );

    // A is killed and started again: the upload is in the bucket, not in A.
    let port = a.port;
    a.kill();
    let a = HttpServer::start_with_env(&config, port, &env);
    let (code, body) = http(a.port, "GET", &format!("/photos/uploads/{id}"), &al, b"");
    assert_eq!(code, 200, "after a restart: {body}");
    assert_eq!(json_of(&body)["received"].as_u64(), Some(received as u64));
    let (code, body) = http(
        b.port,
        "GET",
        &format!("/photos/uploads/{id}"),
        &[("Authorization", "Bearer tok-bob")],
        b"",
    );
    assert_eq!(code, 404, "nobody else's: {body}");
    if short_won {
        let (code, body) = http(b.port, "PUT", &piece_url(received), &al, &data[received..]);
        assert_eq!(code, 200, "{body}");
    }
    // The record and the pieces kept, no more: the losing piece went.
    let staged = minio.list("studio", "photos/server/staged/");
    assert_eq!(
        staged.len(),
        1 + if short_won { 3 } else { 2 },
        "{staged:?}"
    );

    let commit = |port: u16, name: &str, id: &str| {
        http(
            port,
            "POST",
            "/photos/commit-uploads",
            &al,
            format!(
                r#"{{"branch":"main","seen":"{seen}","folder":"takes","message":"from two servers","files":[{{"name":"{name}","id":"{id}"}}]}}"#
            )
            .as_bytes(),
        )
    };
    let (code, body) = commit(a.port, "take.mov", &id);
    assert_eq!(code, 200, "{body}");
    let committed = json_of(&body)["commit"].as_str().unwrap().to_string();
    assert!(
        minio.list("studio", "photos/server/staged/").is_empty(),
        "the staged upload goes once committed"
    );
    let check = t.join("check");
    let mut clone = Command::new(bin());
    clone
        .current_dir(t)
        .args(["clone", "s3://studio/photos", check.to_str().unwrap()]);
    to_bucket(&mut clone);
    let out = clone.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dmv(&check, &["rev-parse", "main"]).trim(), committed);
    assert!(
        std::fs::read(check.join("takes/take.mov")).unwrap() == data,
        "the committed take is the bytes sent, to two servers"
    );
    assert!(std::fs::read(check.join("notes.txt")).unwrap() == b"day one\n");
    // The bucket's own log says it holds the take (the view claims nothing).
    let whereis = dmv(&check, &["whereis", "takes/take.mov"]);
    assert!(
        whereis.contains("(2 copies)") && whereis.contains(" origin"),
        "{whereis}"
    );
    // The other server's pages show it once it looks at the bucket again.
    std::thread::sleep(Duration::from_millis(1100));
    let (code, body) = http(
        b.port,
        "GET",
        "/photos/tree/main/takes",
        &[("Authorization", "Bearer tok-al")],
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("take.mov"), "{body}");

    // A path bob holds is not changed by al's upload.
    let (code, body) = http(
        b.port,
        "POST",
        "/photos/locks/take",
        &[
            ("Authorization", "Bearer tok-bob"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        b"path=takes%2Flocked.mov",
    );
    assert_eq!(code, 303, "{body}");
    let (code, body) = http(
        b.port,
        "POST",
        "/photos/uploads",
        &al,
        br#"{"name":"locked.mov","size":3}"#,
    );
    assert_eq!(code, 201, "{body}");
    let locked = json_of(&body)["id"].as_str().unwrap().to_string();
    let (code, body) = http(
        b.port,
        "PUT",
        &format!("/photos/uploads/{locked}?offset=0"),
        &al,
        b"abc",
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = commit(b.port, "locked.mov", &locked);
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("takes/locked.mov"), "{body}");
    let mut fetch = Command::new(bin());
    fetch.current_dir(&check).args(["fetch"]);
    to_bucket(&mut fetch);
    assert!(fetch.output().unwrap().status.success());
    assert_eq!(
        dmv(&check, &["rev-parse", "origin/main"]).trim(),
        committed,
        "the refused upload moved nothing"
    );

    // One server asks where an upload has come to while the other adds
    // pieces: each answer finds it. A record replaced between its stat
    // and its read was once read as gone: "no such upload".
    let pieces = 48;
    let (code, body) = http(
        a.port,
        "POST",
        "/photos/uploads",
        &al,
        format!(r#"{{"name":"steady.mov","size":{}}}"#, pieces << 10).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let steady = json_of(&body)["id"].as_str().unwrap().to_string();
    let asker = {
        let (url, port) = (format!("/photos/uploads/{steady}"), b.port);
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            loop {
                let (code, body) = http(
                    port,
                    "GET",
                    &url,
                    &[("Authorization", "Bearer tok-al")],
                    b"",
                );
                let whole = code == 200 && json_of(&body)["received"] == pieces << 10;
                answers.push((code, body));
                if code != 200 || whole {
                    return answers;
                }
            }
        })
    };
    for i in 0..pieces {
        let url = format!("/photos/uploads/{steady}?offset={}", i << 10);
        let (code, body) = http(a.port, "PUT", &url, &al, &[i as u8; 1024]);
        assert_eq!(code, 200, "piece {i}: {body}");
    }
    let mut last = 0;
    for (code, body) in &asker.join().unwrap() {
        assert_eq!(code, &200, "asked while pieces landed: {body}");
        let received = json_of(body)["received"].as_u64().unwrap();
        assert!(
            received >= last && received.is_multiple_of(1024),
            "{received} after {last}"
        );
        last = received;
    }
}
