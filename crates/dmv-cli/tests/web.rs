//! The web UI in a real headless Chromium, driven through WebDriver
//! (chromedriver): logging in with a token, thumbnails on a commit page
//! that the browser really decoded, a video played from Range requests,
//! the comparison page and its slider, a 10,000-file folder paged, and an
//! admin breaking a lock. Without a valid token nothing of a repository is
//! shown.

mod common;
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

struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    fn start() -> Chromedriver {
        let driver = Path::new("/usr/bin/chromedriver");
        assert!(driver.exists(), "chromium-driver is not installed (scripts/test installs it)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(driver).arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Chromedriver { child, port }
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn browser(driver: &Chromedriver) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--window-size=1280,1000"]}),
    );
    ClientBuilder::new(HttpConnector::new()).capabilities(caps).connect(&format!("http://127.0.0.1:{}", driver.port)).await.expect("a WebDriver session")
}

/// A JPEG of a gradient (`tint` changes it), like a small photo.
fn photo(path: &Path, tint: u8) {
    let img = image::RgbImage::from_fn(1200, 800, |x, y| image::Rgb([(x / 5) as u8, (y / 4) as u8, tint]));
    img.save(path).unwrap();
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

/// Follows a link as a click would, but waits for the page to load (goto does).
async fn follow(c: &Client, base: &str, link: Locator<'_>) {
    let href = c.find(link).await.unwrap().attr("href").await.unwrap().unwrap();
    c.goto(&if href.starts_with('/') { format!("{base}{href}") } else { href }).await.unwrap();
}

/// The page's source once it holds `text` (a click's navigation may still be under way).
async fn page_with(c: &Client, text: &str) -> String {
    let started = Instant::now();
    loop {
        let page = c.source().await.unwrap();
        if page.contains(text) {
            return page;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no {text:?} in {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Images on the page that the browser decoded (naturalWidth > 0), and all of them.
async fn loaded_images(c: &Client) -> (usize, usize) {
    let started = Instant::now();
    loop {
        let v = c.execute("return Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1);", vec![]).await.unwrap();
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
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/clip.webm"), work.join("clip.webm")).unwrap();
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
            assert!(!body.contains("img-0.jpg") && !body.contains("retouched") && !body.contains(">hub<"), "{page}: {body}");
        }
    }
    let mut lock = dmv_cmd(&work);
    lock.args(["lock", "--remote", &format!("{base}/hub"), "shoot/img-1.jpg"]).env("DMV_TOKEN", "tok-al");
    ok(&lock.output().unwrap());

    let driver = Chromedriver::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let log = server.log.clone();
    rt.block_on(async move {
        let c = browser(&driver).await;
        // Log in: a wrong token is refused, a read token browses.
        c.goto(&format!("{base}/login")).await.unwrap();
        c.find(Locator::Css("input[name=token]")).await.unwrap().send_keys("wrong").await.unwrap();
        c.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        page_with(&c, "That token is not valid here").await;
        c.goto(&format!("{base}/login")).await.unwrap();
        c.find(Locator::Css("input[name=token]")).await.unwrap().send_keys("tok-read").await.unwrap();
        c.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        page_with(&c, "Repositories").await;

        // History, then the newest commit: ten thumbnails (before and after; one photo is a camera raw), all decoded.
        c.goto(&format!("{base}/hub/log/main")).await.unwrap();
        follow(&c, &base, Locator::Css("td a[href*='/commit/']")).await;
        let (loaded, all) = loaded_images(&c).await;
        assert_eq!((loaded, all), (10, 10), "every thumbnail decoded in the browser");
        // The raw's thumbnails come from its 1200×800 preview, not its 16×12 thumbnail.
        let raw_widths = c.execute("return Array.from(document.images).filter(i => i.alt.endsWith('.NEF')).map(i => i.naturalWidth);", vec![]).await.unwrap();
        assert_eq!(raw_widths, json!([256, 256]));

        // Compare: both versions, and the slider moves the one on top.
        follow(&c, &base, Locator::LinkText("compare")).await;
        let (loaded, all) = loaded_images(&c).await;
        assert_eq!(loaded, all);
        assert!(all >= 4);
        let clip = c.execute("const s=document.getElementById('slider'); s.value=80; s.dispatchEvent(new Event('input')); return document.getElementById('over').style.clipPath;", vec![]).await.unwrap();
        assert_eq!(clip.as_str(), Some("inset(0px 80% 0px 0px)"));

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
        assert!(c.find(Locator::Css("form button")).await.is_err(), "no break button without an admin token");
        c.goto(&format!("{base}/logout")).await.unwrap();
        c.goto(&format!("{base}/login")).await.unwrap();
        c.find(Locator::Css("input[name=token]")).await.unwrap().send_keys("tok-boss").await.unwrap();
        c.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        page_with(&c, "Repositories").await;
        c.goto(&format!("{base}/hub/locks")).await.unwrap();
        c.find(Locator::Css("form button")).await.unwrap().click().await.unwrap();
        page_with(&c, "Nobody holds a lock").await;
        c.close().await.unwrap();
    });
    fsck_clean(&hub);
}
