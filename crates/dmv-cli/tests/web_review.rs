//! Review in the web UI (issue 72): comments shown over a photo and
//! written from the browser, signed by the logged-in user, reviews listed
//! and approved; a phone's tap leaves a comment that the command line of
//! another replica reads at the tapped pixel; hostile text stays text;
//! a read token and a forged form write nothing.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{
    InputSource, MouseActions, PointerAction, TouchActions, MOUSE_BUTTON_LEFT,
};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

/// chromedriver on a free port of loopback, killed on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromedriver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("/usr/bin/chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver { child, port }
}

/// Chromium at a phone's size with touch (Chrome's mobile emulation, 390×844
/// CSS pixels), or a desktop window of 1440×900.
async fn sized_browser(driver: &Driver, phone: bool) -> Client {
    let mut options = json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1440,900"]});
    if phone {
        options["mobileEmulation"] = json!({"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2.0, "mobile": true, "touch": true}});
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), options);
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

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
    page_with(c, "Repositories").await;
}

/// The page's source once it holds `text`.
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

/// Waits until every image of the page is decoded (or 30 s).
async fn images_loaded(c: &Client) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let done = c
            .execute(
                "return Array.from(document.images).every(i => i.complete && i.naturalWidth > 0);",
                vec![],
            )
            .await
            .unwrap();
        if done == json!(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A JPEG of a gradient `w`×`h` (`tint` changes it), like a photo.
fn photo(path: &Path, w: u32, h: u32, tint: u8) {
    image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, tint])
    })
    .save(path)
    .unwrap();
}

/// POSTs a review form with a bearer token: the status and the Location or body.
fn post(port: u16, token: &str, action: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let auth = format!("Bearer {token}");
    let (status, head, body) = common::servers::http(
        port,
        "POST",
        &format!("/hub/review/{action}"),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &common::servers::form_body(fields),
    );
    let location = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    (status, location.unwrap_or(body))
}

fn get(port: u16, token: &str, path: &str) -> (u16, String) {
    let auth = format!("Bearer {token}");
    let (status, _, body) =
        common::servers::http(port, "GET", path, &[("Authorization", &auth)], b"");
    (status, body)
}

/// A bare hub with `shoot/a.jpg` (1200×800) and notes on main, and a
/// branch `retouch` changing the photo, proposed for main by al with ann
/// as its reviewer; returns the hub, al's replica and the review's id.
fn hub_with_a_review(t: &Path) -> (PathBuf, PathBuf, String) {
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let al = t.join("al");
    dmv(t, &["init", al.to_str().unwrap()]);
    std::fs::create_dir_all(al.join("shoot")).unwrap();
    photo(&al.join("shoot/a.jpg"), 1200, 800, 40);
    std::fs::write(al.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    commit_all(&al, "the shoot");
    dmv(&al, &["remote", "add", "origin", hub.to_str().unwrap()]);
    dmv(&al, &["push", "origin", "main"]);
    dmv(&al, &["switch", "-c", "retouch"]);
    photo(&al.join("shoot/a.jpg"), 1200, 800, 200);
    commit_all(&al, "warmer sky");
    dmv(&al, &["push", "origin", "retouch"]);
    let mut create = dmv_cmd(&al);
    create
        .args([
            "review",
            "create",
            "retouch",
            "--into",
            "main",
            "-m",
            "Retouch the sky",
            "--reviewer",
            "ann",
        ])
        .env("DMV_AUTHOR_NAME", "al");
    let out = create.output().unwrap();
    ok(&out);
    let id = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    dmv(&al, &["push", "origin", "retouch"]);
    (hub, al, id)
}

const TOKENS: &str = "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-ann\" = { access = \"write\", user = \"ann\" }\n\"tok-al\" = { access = \"write\", user = \"al\" }\n\"tok-read\" = { access = \"read\", user = \"rita\" }\n\"tok-anon\" = \"write\"\n";

/// Comments, a reply, a resolve and an approval posted over plain HTTP as
/// forms: the pages show them, escaped; the command line of a replica
/// that fetched reads them signed by the web users; a read token, a token
/// naming nobody, a non-reviewer and a form without its login's secret
/// write nothing.
#[test]
fn comments_replies_and_approvals_from_forms() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (hub, al, review) = hub_with_a_review(t);
    let server = HttpServer::start(TOKENS, t, 0);
    let port = server.port;
    let main = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    let hostile = "the sky <script>alert(1)</script> is \"too\" warm & 'red'";

    // Refused before anything is written: a read token, a token naming
    // nobody, a session's form without its secret, an unknown action.
    let comment_fields = [
        ("path", "shoot/a.jpg"),
        ("commit", main.as_str()),
        ("at", "300,200,120,80"),
        ("text", hostile),
    ];
    assert_eq!(post(port, "tok-read", "comment", &comment_fields).0, 403);
    assert_eq!(post(port, "tok-anon", "comment", &comment_fields).0, 403);
    let cookie = {
        let (status, head, _) = common::servers::http(
            port,
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"token=tok-ann",
        );
        assert_eq!(status, 303, "{head}");
        head.lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("set-cookie")
                    .then(|| value.trim().split(';').next().unwrap().to_string())
            })
            .unwrap()
    };
    let (forged, _, _) = common::servers::http(
        port,
        "POST",
        "/hub/review/comment",
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &common::servers::form_body(&comment_fields),
    );
    assert_eq!(forged, 403, "a session's form without its secret");
    assert_eq!(post(port, "tok-ann", "delete", &comment_fields).0, 404);
    assert!(
        dmv(&hub, &["comment", "list", "--json", "--all"]).trim() == "[]",
        "nothing written by the refused forms"
    );

    // Out of bounds: refused with the reason, nothing written.
    let (status, body) = post(
        port,
        "tok-ann",
        "comment",
        &[
            ("path", "shoot/a.jpg"),
            ("commit", &main),
            ("at", "5000000,1"),
            ("text", "far"),
        ],
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = post(
        port,
        "tok-ann",
        "comment",
        &[("path", "shoot/none.jpg"), ("commit", &main), ("text", "x")],
    );
    assert_eq!(status, 404);

    // A comment on a region of the photo, by ann.
    let (status, location) = post(port, "tok-ann", "comment", &comment_fields);
    assert_eq!(status, 303, "{location}");
    assert!(
        location.starts_with(&format!("/hub/file/{main}/shoot/a.jpg#c-")),
        "{location}"
    );
    let short = location.rsplit("#c-").next().unwrap().to_string();
    // One on lines of the notes, one on the whole file.
    assert_eq!(
        post(
            port,
            "tok-al",
            "comment",
            &[
                ("path", "notes.txt"),
                ("commit", &main),
                ("at", "2-3"),
                ("text", "typo")
            ]
        )
        .0,
        303
    );
    let (status, page) = get(port, "tok-read", "/hub/file/main/shoot/a.jpg");
    assert_eq!(status, 200);
    assert!(
        !page.contains("<script>alert"),
        "the comment's markup is text"
    );
    assert!(
        page.contains(
            "the sky &lt;script&gt;alert(1)&lt;/script&gt; is &quot;too&quot; warm &amp; 'red'"
        ),
        "{page}"
    );
    // Its marker, in percentages of the picture's 1200×800 pixels.
    assert!(
        page.contains("left:25.000%;top:25.000%;width:10.000%;height:10.000%"),
        "{page}"
    );
    assert!(page.contains(&format!("id=\"c-{short}\"")));
    assert!(
        !page.contains("id=\"new-comment\""),
        "no form for a read token"
    );
    let (_, notes) = get(port, "tok-read", "/hub/file/main/notes.txt");
    assert!(
        notes.contains("lines 2–3") && notes.contains("typo"),
        "{notes}"
    );

    // al replies and resolves; the thread says so, signed by each.
    let full = {
        let listed: serde_json::Value =
            serde_json::from_str(&dmv(&hub, &["comment", "list", "--json", "--rev", "main"]))
                .unwrap();
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["text"] == hostile)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let back = "/hub/file/main/shoot/a.jpg";
    let (status, location) = post(
        port,
        "tok-al",
        "reply",
        &[
            ("comment", &full),
            ("text", "cooled it <b>down</b>"),
            ("back", back),
        ],
    );
    assert_eq!(
        (status, location.as_str()),
        (303, format!("{back}#c-{short}").as_str())
    );
    // A `back` elsewhere is not followed.
    let (status, location) = post(
        port,
        "tok-al",
        "resolve",
        &[("comment", &full), ("back", "https://evil.example/")],
    );
    assert_eq!(status, 303);
    assert!(location.starts_with("/hub/file/"), "{location}");
    let (_, page) = get(port, "tok-ann", back);
    assert!(page.contains("cooled it &lt;b&gt;down&lt;/b&gt;"), "{page}");
    assert!(
        page.contains(">resolved<") && page.contains(">Reopen<"),
        "{page}"
    );
    assert!(
        page.contains("id=\"new-comment\""),
        "a writer gets the form"
    );

    // The review: al opened it, so al cannot approve; rita reads only; ann approves.
    let (status, body) = post(port, "tok-al", "approve", &[("review", &review)]);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("someone else approves it"), "{body}");
    assert_eq!(
        post(port, "tok-read", "approve", &[("review", &review)]).0,
        403
    );
    let (_, page) = get(port, "tok-ann", &format!("/hub/review/{review}"));
    assert!(page.contains(">Approve retouch at "), "{page}");
    let (status, location) = post(port, "tok-ann", "approve", &[("review", &review)]);
    assert_eq!(status, 303, "{location}");
    assert!(location.ends_with("#approvals"), "{location}");
    let (_, page) = get(port, "tok-read", &format!("/hub/review/{review}"));
    assert!(
        page.contains("Retouch the sky") && page.contains("retouch"),
        "{page}"
    );
    assert!(
        page.contains(">approved<") && page.contains("warmer sky"),
        "{page}"
    );
    assert!(!page.contains(">Approve "), "no button for a reader");
    let (_, list) = get(port, "tok-read", "/hub/reviews");
    assert!(
        list.contains("Retouch the sky") && list.contains("1 approval"),
        "{list}"
    );

    // Another replica fetches and reads the same, signed by the web users.
    dmv(&al, &["fetch", "origin"]);
    let listed: serde_json::Value = serde_json::from_str(&dmv(
        &al,
        &["comment", "list", "--json", "--all", "--rev", "origin/main"],
    ))
    .unwrap();
    let c = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"] == hostile)
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(c["by"]["name"], "ann");
    assert_eq!(
        c["at"],
        json!({"on": "region", "x": 300, "y": 200, "w": 120, "h": 80})
    );
    assert_eq!(c["resolved"], true);
    assert_eq!(c["replies"][0]["by"]["name"], "al");
    assert_eq!(c["replies"][0]["text"], "cooled it <b>down</b>");
    let shown: serde_json::Value =
        serde_json::from_str(&dmv(&al, &["review", "show", &review, "--json"])).unwrap();
    assert_eq!(shown["approvals"][0]["by"]["name"], "ann");
    drop(server);
    fsck_clean(&hub);
}

/// A phone (390 px, touch) opens a photo's page, taps a point of the
/// photo and comments; a replica that fetched reads the comment at the
/// tapped pixel, and the page shows its marker where the finger was.
/// The pages with comments and the review page are kept as screenshots
/// at a phone's and a desktop's size, light and dark (`DMV_SCREENSHOTS`
/// when set, as `docs/screenshots` is refreshed).
#[test]
fn a_phone_comments_by_tapping_a_photo() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (hub, al, review) = hub_with_a_review(t);
    let server = HttpServer::start(TOKENS, t, 0);
    let port = server.port;
    let base = format!("http://127.0.0.1:{port}");
    let main = dmv(&hub, &["rev-parse", "main"]).trim().to_string();
    // A comment made before, on main's version: the branch's page shows it
    // as made on an earlier version.
    let (status, _) = post(
        port,
        "tok-al",
        "comment",
        &[
            ("path", "shoot/a.jpg"),
            ("commit", &main),
            ("at", "900,120,200,150"),
            ("text", "the sky is too cold here"),
        ],
    );
    assert_eq!(status, 303);
    // The comparison of main's photo with the branch's: each side shows its comments.
    let retouch = dmv(&hub, &["rev-parse", "retouch"]).trim().to_string();
    let compare = format!(
        "/hub/compare/{}/{}?name=shoot/a.jpg&from={main}&to={retouch}",
        dmv(&hub, &["rev-parse", "main:shoot/a.jpg"]).trim(),
        dmv(&hub, &["rev-parse", "retouch:shoot/a.jpg"]).trim(),
    );
    let shots = std::env::var_os("DMV_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| t.join("screenshots"));
    std::fs::create_dir_all(&shots).unwrap();
    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tapped = rt.block_on(async {
        let c = sized_browser(&driver, true).await;
        log_in(&c, &base, "tok-ann").await;
        assert_eq!(
            c.execute("return window.innerWidth;", vec![]).await.unwrap(),
            json!(390)
        );
        c.goto(&format!("{base}/hub/file/retouch/shoot/a.jpg")).await.unwrap();
        images_loaded(&c).await;
        // Where 40 % across and 60 % down the photo is on the screen.
        let rect = c
            .execute(
                "const i=document.querySelector('.marked img'); i.scrollIntoView({block:'center'}); const r=i.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];",
                vec![],
            )
            .await
            .unwrap();
        let [left, top, width, height]: [f64; 4] = serde_json::from_value(rect).unwrap();
        assert!(width > 300.0 && width <= 390.0, "the photo fits the phone: {width}");
        let (x, y) = (left + width * 0.4, top + height * 0.6);
        let tap = TouchActions::new("finger".into())
            .then(PointerAction::MoveTo {
                duration: None,
                x: x.round() as i64,
                y: y.round() as i64,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        c.perform_actions(tap).await.unwrap();
        let at = c
            .find(Locator::Css("#new-comment input[name=at]"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap_or_default();
        assert!(at.contains(','), "the tap filled the place: {at:?}");
        c.find(Locator::Css("#new-comment textarea"))
            .await
            .unwrap()
            .send_keys("lift the shadow here")
            .await
            .unwrap();
        c.find(Locator::Css("#new-comment button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        page_with(&c, "lift the shadow here</p>").await;
        images_loaded(&c).await;
        // The new marker sits where the finger was.
        let pin = c
            .execute(
                "const i=document.querySelector('.marked img'); i.scrollIntoView({block:'center'}); const r=i.getBoundingClientRect(); const p=[...document.querySelectorAll('.marked a.pin.point')].pop().getBoundingClientRect(); return [(p.left-r.left)/r.width, (p.top-r.top)/r.height];",
                vec![],
            )
            .await
            .unwrap();
        let [px, py]: [f64; 2] = serde_json::from_value(pin).unwrap();
        assert!((px - 0.4).abs() < 0.01 && (py - 0.6).abs() < 0.01, "the marker at {px},{py}");
        // The folder's wall: the photo opened in the lightbox shows both markers.
        c.goto(&format!("{base}/hub/tree/retouch/shoot/")).await.unwrap();
        c.find(Locator::Css(".wall a.ph")).await.unwrap().click().await.unwrap();
        let started = Instant::now();
        loop {
            let seen = c
                .execute(
                    "return [document.querySelectorAll('#lightbox .pins a.pin').length, document.querySelector('#lightbox .said').textContent];",
                    vec![],
                )
                .await
                .unwrap();
            if seen == json!([2, "2 comments"]) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the lightbox shows {seen}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        std::fs::write(shots.join("lightbox-comments-phone.png"), c.screenshot().await.unwrap())
            .unwrap();
        c.close().await.unwrap();

        // Screenshots of the pages with comments and of the review.
        let pages = [
            ("file-comments", "/hub/file/retouch/shoot/a.jpg".to_string()),
            ("review", format!("/hub/review/{review}")),
            ("reviews", "/hub/reviews".to_string()),
            ("compare-comments", compare.clone()),
        ];
        for (size, phone) in [("phone", true), ("desktop", false)] {
            let c = sized_browser(&driver, phone).await;
            log_in(&c, &base, "tok-ann").await;
            if !phone {
                // A mouse's drag marks a rectangle, in the photo's pixels.
                c.goto(&format!("{base}/hub/file/retouch/shoot/a.jpg"))
                    .await
                    .unwrap();
                images_loaded(&c).await;
                let rect = c
                    .execute(
                        "const r=document.querySelector('.marked img').getBoundingClientRect(); return [r.left, r.top, r.width, r.height];",
                        vec![],
                    )
                    .await
                    .unwrap();
                let [left, top, width, height]: [f64; 4] = serde_json::from_value(rect).unwrap();
                let at = |fx: f64, fy: f64| PointerAction::MoveTo {
                    duration: Some(Duration::from_millis(100)),
                    x: (left + width * fx).round() as i64,
                    y: (top + height * fy).round() as i64,
                };
                let drag = MouseActions::new("mouse".into())
                    .then(at(0.2, 0.2))
                    .then(PointerAction::Down {
                        button: MOUSE_BUTTON_LEFT,
                    })
                    .then(at(0.35, 0.3))
                    .then(at(0.5, 0.4))
                    .then(PointerAction::Up {
                        button: MOUSE_BUTTON_LEFT,
                    });
                c.perform_actions(drag).await.unwrap();
                let value = c
                    .find(Locator::Css("#new-comment input[name=at]"))
                    .await
                    .unwrap()
                    .prop("value")
                    .await
                    .unwrap()
                    .unwrap_or_default();
                let numbers: Vec<f64> = value.split(',').filter_map(|n| n.parse().ok()).collect();
                let want = [240.0, 160.0, 360.0, 160.0];
                assert!(
                    numbers.len() == 4 && numbers.iter().zip(want).all(|(n, w)| (n - w).abs() <= 4.0),
                    "the drag marked {value:?}"
                );
                assert_eq!(
                    c.current_url().await.unwrap().path(),
                    "/hub/file/retouch/shoot/a.jpg",
                    "the drag did not follow the picture's link"
                );
            }
            for dark in [false, true] {
                for (name, path) in &pages {
                    c.goto(&format!("{base}{path}")).await.unwrap();
                    if dark {
                        c.execute("document.documentElement.dataset.theme='dark';", vec![])
                            .await
                            .unwrap();
                    }
                    images_loaded(&c).await;
                    let fit = c
                        .execute(
                            "return [document.documentElement.scrollWidth, window.innerWidth];",
                            vec![],
                        )
                        .await
                        .unwrap();
                    let [scroll, inner]: [u64; 2] = serde_json::from_value(fit).unwrap();
                    assert!(scroll <= inner, "{name} on a {size}: {scroll} px wide");
                    let file = format!(
                        "{name}{}-{size}.png",
                        if dark { "-dark" } else { "" }
                    );
                    std::fs::write(shots.join(file), c.screenshot().await.unwrap()).unwrap();
                }
            }
            c.close().await.unwrap();
        }
        (x, y, left, top, width, height)
    });
    let (x, y, left, top, width, height) = tapped;
    // The replica reads it at the tapped pixel of the 1200×800 photo.
    dmv(&al, &["fetch", "origin"]);
    let listed: serde_json::Value = serde_json::from_str(&dmv(
        &al,
        &[
            "comment",
            "list",
            "--json",
            "--rev",
            "origin/retouch",
            "shoot/a.jpg",
        ],
    ))
    .unwrap();
    let c = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"] == "lift the shadow here")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(c["by"]["name"], "ann");
    assert_eq!(c["on_this_version"], true);
    let (want_x, want_y) = ((x - left) / width * 1200.0, (y - top) / height * 800.0);
    let (got_x, got_y) = (
        c["at"]["x"].as_f64().unwrap(),
        c["at"]["y"].as_f64().unwrap(),
    );
    assert_eq!(
        (c["at"]["w"].as_u64(), c["at"]["h"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        (got_x - want_x).abs() <= 4.0 && (got_y - want_y).abs() <= 4.0,
        "tapped {want_x},{want_y}; kept {got_x},{got_y}"
    );
    let earlier = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"] == "the sky is too cold here")
        .unwrap();
    assert_eq!(earlier["on_this_version"], false);
    drop(server);
    fsck_clean(&hub);
}

/// The photo's own box in the lightbox (the image fitted in its element):
/// left, top, width, height in CSS pixels, once the photo is decoded.
async fn lightbox_photo(c: &Client) -> [f64; 4] {
    let rect = c
        .execute(
            "const i=document.querySelector('#lightbox .stage img'); return new Promise(ok => { (function wait() { if (!i.complete || !i.naturalWidth) return setTimeout(wait, 50); const r=i.getBoundingClientRect(), k=Math.min(r.width/i.naturalWidth, r.height/i.naturalHeight), w=i.naturalWidth*k, h=i.naturalHeight*k; ok([r.left+(r.width-w)/2, r.top+(r.height-h)/2, w, h]); })(); });",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(rect).unwrap()
}

/// Opens the photo named `name` of the wall in the lightbox and waits
/// until its page was read (its comments counted, or its photo shown and
/// the comment button settled).
async fn open_in_lightbox(c: &Client, base: &str, name: &str) {
    c.goto(&format!("{base}/hub/tree/retouch/shoot/"))
        .await
        .unwrap();
    c.find(Locator::Css(&format!(".wall a.ph[data-name=\"{name}\"]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let ready = c
            .execute(
                "const b=document.getElementById('lightbox'), i=b.querySelector('.stage img'); return !b.hidden && i.complete && i.naturalWidth > 0 && !b.querySelector('.mode').disabled;",
                vec![],
            )
            .await
            .unwrap();
        if ready == json!(true) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the lightbox did not get ready to comment"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A phone (390×844, touch) opens a photo of a wall in the lightbox,
/// turns on Comment, taps a point of the photo and writes: the lightbox
/// shows the marker where the finger was, and a replica that fetched
/// reads the comment on that file's version at the tapped pixel. A mouse
/// does the same at a desktop's size; a reader sees no Comment button;
/// the header keeps a long name's end on a phone. The form is kept as
/// screenshots, light and dark, phone and desktop (`DMV_SCREENSHOTS`).
#[test]
fn a_phone_comments_in_the_lightbox() {
    if lacks(&[Need::Chromium]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (hub, al, _review) = hub_with_a_review(t);
    // More photos on the branch: a wide one and a tall one with a long name.
    let long = "the fourth of December, studio session, second set IMG_4821.jpg";
    photo(&al.join("shoot/b.jpg"), 1600, 900, 90);
    photo(&al.join("shoot").join(long), 800, 1200, 150);
    commit_all(&al, "two more");
    dmv(&al, &["push", "origin", "retouch"]);
    let server = HttpServer::start(TOKENS, t, 0);
    let base = format!("http://127.0.0.1:{}", server.port);
    let shots = std::env::var_os("DMV_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| t.join("screenshots"));
    std::fs::create_dir_all(&shots).unwrap();
    let driver = chromedriver();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (tap, photo_box) = rt.block_on(async {
        let c = sized_browser(&driver, true).await;
        log_in(&c, &base, "tok-ann").await;
        assert_eq!(
            c.execute("return window.innerWidth;", vec![]).await.unwrap(),
            json!(390)
        );
        open_in_lightbox(&c, &base, long).await;
        // The header fits the phone and keeps the name's end.
        let top = c
            .execute(
                "const t=document.querySelector('#lightbox .top'), n=t.querySelector('.name'); return [t.scrollWidth <= t.clientWidth, n.textContent, t.querySelector('.tail').getBoundingClientRect().right <= n.getBoundingClientRect().right + 0.5];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(top, json!([true, long, true]), "the lightbox's header on a phone");
        // Off, a tap on the photo opens no form.
        let [left, top, width, height] = lightbox_photo(&c).await;
        let tap_at = |x: f64, y: f64| {
            TouchActions::new("finger".into())
                .then(PointerAction::MoveTo {
                    duration: None,
                    x: x as i64,
                    y: y as i64,
                })
                .then(PointerAction::Down {
                    button: MOUSE_BUTTON_LEFT,
                })
                .then(PointerAction::Up {
                    button: MOUSE_BUTTON_LEFT,
                })
        };
        c.perform_actions(tap_at((left + width / 2.0).round(), (top + height / 2.0).round()))
            .await
            .unwrap();
        let form_open = c
            .execute(
                "return !!document.querySelector('#lightbox .note textarea');",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(form_open, json!(false), "a tap without Comment on opens no form");
        // On: the tap at 30 % across, 70 % down opens the form there (the
        // photo measured again: the hint under it took some of its height).
        c.find(Locator::Css("#lightbox .mode"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let [left, top, width, height] = lightbox_photo(&c).await;
        let (x, y) = (
            (left + width * 0.3).round(),
            (top + height * 0.7).round(),
        );
        c.perform_actions(tap_at(x, y)).await.unwrap();
        let text = c
            .find(Locator::Css("#lightbox .note textarea"))
            .await
            .unwrap();
        text.send_keys("darken the hem here").await.unwrap();
        for dark in [false, true] {
            c.execute(
                "document.documentElement.dataset.theme=arguments[0];",
                vec![json!(if dark { "dark" } else { "light" })],
            )
            .await
            .unwrap();
            let file = format!("lightbox-comment{}-phone.png", if dark { "-dark" } else { "" });
            std::fs::write(shots.join(file), c.screenshot().await.unwrap()).unwrap();
        }
        c.find(Locator::Css("#lightbox .note .send"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The lightbox shows the new marker where the finger was, on the
        // photo (which the form, now closed, had made smaller).
        let started = Instant::now();
        let pin = loop {
            let seen = c
                .execute(
                    "const b=document.getElementById('lightbox'), p=b.querySelectorAll('.pins a.pin.point'); if (p.length !== 1 || b.querySelector('.note textarea')) return [null, b.querySelector('.note').textContent]; const r=p[0].getBoundingClientRect(); return [[r.left, r.top], b.querySelector('.said').textContent];",
                    vec![],
                )
                .await
                .unwrap();
            if !seen[0].is_null() {
                break seen;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no marker in the lightbox: {seen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let [px, py]: [f64; 2] = serde_json::from_value(pin[0].clone()).unwrap();
        let [l, t, w, h] = lightbox_photo(&c).await;
        let (fx, fy) = ((px - l) / w, (py - t) / h);
        let (tx, ty) = ((x - left) / width, (y - top) / height);
        assert!(
            ((fx - tx) * 800.0).abs() <= 1.0 && ((fy - ty) * 1200.0).abs() <= 1.0,
            "the marker at {fx},{fy} of the photo, the tap at {tx},{ty}"
        );
        assert_eq!(pin[1], "1 comment");
        c.close().await.unwrap();

        // A desktop's mouse: the same form, kept as screenshots, then cancelled.
        let c = sized_browser(&driver, false).await;
        log_in(&c, &base, "tok-ann").await;
        open_in_lightbox(&c, &base, long).await;
        c.find(Locator::Css("#lightbox .mode"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let [l, t, w, h] = lightbox_photo(&c).await;
        let click = MouseActions::new("mouse".into())
            .then(PointerAction::MoveTo {
                duration: None,
                x: (l + w * 0.6).round() as i64,
                y: (t + h * 0.25).round() as i64,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        c.perform_actions(click).await.unwrap();
        c.find(Locator::Css("#lightbox .note textarea"))
            .await
            .unwrap()
            .send_keys("the collar catches the light")
            .await
            .unwrap();
        let at = c
            .find(Locator::Css("#lightbox .note .at"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let (cx, cy) = ((l + w * 0.6).round(), (t + h * 0.25).round());
        let want = [(cx - l) / w * 800.0, (cy - t) / h * 1200.0];
        let got: Vec<f64> = at
            .trim_start_matches("at ")
            .split(',')
            .filter_map(|n| n.parse().ok())
            .collect();
        assert!(
            got.len() == 2 && (got[0] - want[0]).abs() <= 1.0 && (got[1] - want[1]).abs() <= 1.0,
            "the click at {want:?} of the photo's pixels: {at:?}"
        );
        for dark in [false, true] {
            c.execute(
                "document.documentElement.dataset.theme=arguments[0];",
                vec![json!(if dark { "dark" } else { "light" })],
            )
            .await
            .unwrap();
            let file = format!("lightbox-comment{}-desktop.png", if dark { "-dark" } else { "" });
            std::fs::write(shots.join(file), c.screenshot().await.unwrap()).unwrap();
        }
        c.find(Locator::Css("#lightbox .note .cancel"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.close().await.unwrap();

        // A reader sees the marker and no Comment button.
        let c = sized_browser(&driver, true).await;
        log_in(&c, &base, "tok-read").await;
        c.goto(&format!("{base}/hub/tree/retouch/shoot/"))
            .await
            .unwrap();
        c.find(Locator::Css(&format!(".wall a.ph[data-name=\"{long}\"]")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let started = Instant::now();
        loop {
            let seen = c
                .execute(
                    "const b=document.getElementById('lightbox'); return [b.querySelector('.said').textContent, b.querySelector('.mode').hidden];",
                    vec![],
                )
                .await
                .unwrap();
            if seen[0] == json!("1 comment") {
                assert_eq!(seen[1], json!(true), "a reader has no Comment button");
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the reader's lightbox shows {seen}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.close().await.unwrap();
        ((x, y), [left, top, width, height])
    });
    // Another replica reads it on the tapped version, at the tapped pixel
    // of the 800×1200 photo.
    let path = format!("shoot/{long}");
    dmv(&al, &["fetch", "origin"]);
    let listed: serde_json::Value = serde_json::from_str(&dmv(
        &al,
        &[
            "comment",
            "list",
            "--json",
            "--rev",
            "origin/retouch",
            &path,
        ],
    ))
    .unwrap();
    let c = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["text"] == "darken the hem here")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(c["by"]["name"], "ann");
    assert_eq!(c["file"]["path"], path.as_str());
    let version = dmv(&hub, &["rev-parse", &format!("retouch:{path}")]);
    assert_eq!(c["file"]["version"], version.trim());
    let commit = dmv(&hub, &["rev-parse", "retouch"]);
    assert_eq!(c["file"]["commit"], commit.trim());
    let [left, top, width, height] = photo_box;
    let (want_x, want_y) = (
        (tap.0 - left) / width * 800.0,
        (tap.1 - top) / height * 1200.0,
    );
    assert_eq!(
        (c["at"]["w"].as_u64(), c["at"]["h"].as_u64()),
        (Some(0), Some(0))
    );
    let (got_x, got_y) = (
        c["at"]["x"].as_f64().unwrap(),
        c["at"]["y"].as_f64().unwrap(),
    );
    assert!(
        (got_x - want_x).abs() <= 1.0 && (got_y - want_y).abs() <= 1.0,
        "tapped {want_x},{want_y}; kept {got_x},{got_y}"
    );
    drop(server);
    fsck_clean(&hub);
}
