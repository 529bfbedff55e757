//! The audit log and webhooks (docs/server.md, "Audit log and webhooks"):
//! a push, a lock and a broken lock through `dmv serve` are recorded in the
//! hub's `.dmv/audit/`, read back with `dmv audit` and on the admin's
//! audit page (403 for others), and POSTed to a webhook, a real HTTP
//! server started here that answers 500 the first time and 200 after:
//! the signature is GitHub's (HMAC-SHA256 of the body with the secret),
//! the JSON names the repository, the user and the refs, and the push's
//! delivery is tried again after its 500.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::commit_all;
use common::servers::{http, HttpServer, S3Server, MINIO_SECRET, MINIO_USER};
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{KeyInit, Mac};

/// A request the receiver got: its headers (names lowercased) and body.
#[derive(Clone, Debug)]
struct Got {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A tiny HTTP server: records each request, answers 500 to the first and 200 after.
fn receiver() -> (u16, Arc<Mutex<Vec<Got>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((n, v)) = line.trim().split_once(':') {
                    headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
            let len: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap());
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let first = {
                let mut got = kept.lock().unwrap();
                got.push(Got { headers, body });
                got.len() == 1
            };
            let status = if first {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let mut stream = stream;
            let _ = stream.write_all(
                format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
    });
    (port, got)
}

fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = dmv_cmd(dir)
        .env_remove("DMV_TOKEN")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "dmv {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn pushes_and_locks_are_audited_and_sent_to_webhooks_signed_and_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (port, got) = receiver();
    let hub = t.join("hub");
    run_ok(t, &["init", "--bare", hub.to_str().unwrap()]);
    let config = format!(
        "[repos]\nhub = {:?}\n[tokens]\n\"tok-lead\" = {{ access = \"admin\", user = \"lead\" }}\n\"tok-artist\" = {{ access = \"write\", user = \"artist\" }}\n[[webhooks]]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"s3cret\"\nevents = [\"push\", \"unlock\"]\n",
        hub.to_str().unwrap()
    );
    let server = HttpServer::start(&config, t, 0);
    let url = server.url("hub");

    let lead = t.join("lead");
    run_ok(t, &["init", lead.to_str().unwrap()]);
    std::fs::create_dir_all(lead.join("art")).unwrap();
    std::fs::write(lead.join("art/hero.psd"), "hero v1").unwrap();
    commit_all(&lead, "seed");
    run_ok(
        &lead,
        &["remote", "add", "origin", &url, "--token", "tok-lead"],
    );
    run_ok(&lead, &["push", "origin", "main"]);
    let tip = run_ok(&lead, &["rev-parse", "HEAD"]).trim().to_string();

    let artist = t.join("artist");
    run_ok(
        t,
        &[
            "clone",
            "--token",
            "tok-artist",
            &url,
            artist.to_str().unwrap(),
        ],
    );
    run_ok(&artist, &["lock", "art/hero.psd"]);
    run_ok(&lead, &["unlock", "--force", "art/hero.psd"]);

    // The hub's log, as `dmv audit` reads it.
    let lines = run_ok(&hub, &["audit", "--json"]);
    let events: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["event"].as_str().unwrap(), e["user"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("push", "lead"), ("lock", "artist"), ("break-lock", "lead")],
        "{lines}"
    );
    assert_eq!(events[0]["refs"][0]["name"], "refs/heads/main");
    assert_eq!(events[0]["refs"][0]["old"], serde_json::Value::Null);
    assert_eq!(events[0]["refs"][0]["new"], tip.as_str());
    assert_eq!(events[1]["paths"][0], "art/hero.psd");
    let text = run_ok(&hub, &["audit"]);
    assert!(
        text.contains("break-lock") && text.contains("art/hero.psd"),
        "{text}"
    );
    let none = run_ok(&hub, &["audit", "--since", "@99999999999", "--json"]);
    assert_eq!(none, "");
    assert!(
        std::fs::read_dir(hub.join(".dmv/audit")).is_ok()
            || std::fs::read_dir(hub.join("audit")).is_ok()
    );

    // The push's delivery: 500 first, then again after its backoff; the
    // broken lock's too ("unlock" asks for it); the lock's not.
    let start = Instant::now();
    let seen = loop {
        let seen = got.lock().unwrap().clone();
        if seen.len() >= 3 || start.elapsed() > Duration::from_secs(30) {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(seen.len(), 3, "{seen:?}");
    let pushes: Vec<&Got> = seen
        .iter()
        .filter(|g| g.header("x-dmv-event") == "push")
        .collect();
    assert_eq!(pushes.len(), 2, "tried again after the 500: {seen:?}");
    assert_eq!(pushes[0].body, pushes[1].body);
    assert_eq!(
        pushes[0].header("x-dmv-delivery"),
        pushes[1].header("x-dmv-delivery")
    );
    for g in &seen {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
        mac.update(&g.body);
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(g.header("x-dmv-signature-256"), format!("sha256={hex}"));
        assert_eq!(g.header("content-type"), "application/json");
    }
    let push: serde_json::Value = serde_json::from_slice(&pushes[0].body).unwrap();
    assert_eq!(push["repository"], "hub");
    assert_eq!(push["user"], "lead");
    assert_eq!(push["refs"][0]["new"], tip.as_str());
    let broke: serde_json::Value = serde_json::from_slice(
        &seen
            .iter()
            .find(|g| g.header("x-dmv-event") == "break-lock")
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(broke["paths"][0], "art/hero.psd");
    assert!(!String::from_utf8_lossy(&pushes[0].body).contains("s3cret"));

    // The audit page: admins only, with the deliveries.
    let (code, _, _) = http(
        server.port,
        "GET",
        "/hub/audit",
        &[("Authorization", "Bearer tok-artist")],
        b"",
    );
    assert_eq!(code, 403);
    let (code, _, page) = http(
        server.port,
        "GET",
        "/hub/audit",
        &[("Authorization", "Bearer tok-lead")],
        b"",
    );
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("break-lock") && page.contains("art/hero.psd"),
        "{page}"
    );
    assert!(
        page.contains("Webhook deliveries") && page.contains("/hook"),
        "{page}"
    );
    assert!(!page.contains("s3cret"));
}

#[test]
fn a_webhook_that_is_not_valid_stops_the_server_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let hub = t.join("hub");
    run_ok(t, &["init", "--bare", hub.to_str().unwrap()]);
    for (hook, says) in [
        ("url = \"ftp://x\"\nsecret = \"s\"", "not an http"),
        ("url = \"http://x\"\nsecret = \"\"", "secret"),
        (
            "url = \"http://x\"\nsecret = \"s\"\nevents = [\"pushh\"]",
            "unknown event",
        ),
    ] {
        let config = t.join("server.toml");
        std::fs::write(
            &config,
            format!(
                "[repos]\nhub = {:?}\n[[webhooks]]\n{hook}\n",
                hub.to_str().unwrap()
            ),
        )
        .unwrap();
        let out = dmv_cmd(t)
            .args([
                "serve",
                "--config",
                config.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success());
        assert!(err.contains(says) && err.contains("webhooks"), "{err}");
        assert!(!err.contains("\"s\""), "{err}");
        assert_eq!(
            err.trim()
                .lines()
                .filter(|l| !l.contains("warning"))
                .count(),
            1,
            "{err}"
        );
    }
}

/// The web UI's lock buttons (take, give back, break) as a browser posts
/// them with a bearer token: each answered 303, the user's `token`.
fn press(port: u16, token: &str, action: &str, path: &str) {
    let (code, _, body) = http(
        port,
        "POST",
        &format!("/hub/locks/{action}"),
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        format!("path={}", path.replace('/', "%2F")).as_bytes(),
    );
    assert_eq!(code, 303, "{action} {path}: {body}");
}

const WEB_TOKENS: &str = "[tokens]\n\"tok-lead\" = { access = \"admin\", user = \"lead\" }\n\"tok-artist\" = { access = \"write\", user = \"artist\" }\n";

/// The web UI's lock buttons are audited as `dmv lock` is: a lock, an
/// unlock and a broken lock, with who and the path, in a directory hub's
/// log and on the admin's audit page.
#[test]
fn the_web_uis_lock_buttons_are_audited() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let hub = t.join("hub");
    run_ok(t, &["init", "--bare", hub.to_str().unwrap()]);
    let server = HttpServer::start(
        &format!("[repos]\nhub = {:?}\n{WEB_TOKENS}", hub.to_str().unwrap()),
        t,
        0,
    );
    press(server.port, "tok-artist", "take", "art/hero.psd");
    press(server.port, "tok-artist", "release", "art/hero.psd");
    press(server.port, "tok-artist", "take", "art/sky.psd");
    press(server.port, "tok-lead", "break", "art/sky.psd");
    let lines = run_ok(&hub, &["audit", "--json"]);
    let events: Vec<(String, String, String)> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (
                s("event"),
                s("user"),
                e["paths"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("lock", "artist", "art/hero.psd"),
        ("unlock", "artist", "art/hero.psd"),
        ("lock", "artist", "art/sky.psd"),
        ("break-lock", "lead", "art/sky.psd"),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
    assert_eq!(events, want, "{lines}");
    // A refused button records nothing.
    let (code, _, _) = http(
        server.port,
        "POST",
        "/hub/locks/break",
        &[
            ("Authorization", "Bearer tok-artist"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        b"path=art%2Fhero.psd",
    );
    assert_eq!(code, 403);
    assert_eq!(run_ok(&hub, &["audit", "--json"]), lines);
}

/// The same in front of a bucket (MinIO): the events are the bucket's,
/// read on the admin's audit page.
#[test]
fn the_web_uis_lock_buttons_are_audited_in_a_bucket() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let minio = S3Server::minio();
    minio.create_bucket("studio");
    let seed = t.join("seed");
    run_ok(t, &["init", seed.to_str().unwrap()]);
    std::fs::write(seed.join("readme.txt"), "hi").unwrap();
    commit_all(&seed, "seed");
    let mut push = dmv_cmd(&seed);
    push.args(["push", "s3://studio/hub", "main"]);
    minio.env(&mut push);
    push.env("AWS_ENDPOINT_URL", minio.endpoint());
    let out = push.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nhub = {{ url = \"s3://studio/hub\", endpoint = \"{}\" }}\n{WEB_TOKENS}",
            minio.endpoint()
        ),
    )
    .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let server = HttpServer::start_with_env(&config, 0, &env);
    press(server.port, "tok-artist", "take", "art/moon.psd");
    press(server.port, "tok-artist", "release", "art/moon.psd");
    press(server.port, "tok-artist", "take", "art/sun.psd");
    press(server.port, "tok-lead", "break", "art/sun.psd");
    let (code, _, page) = http(
        server.port,
        "GET",
        "/hub/audit",
        &[("Authorization", "Bearer tok-lead")],
        b"",
    );
    assert_eq!(code, 200, "{page}");
    for said in ["art/moon.psd", "art/sun.psd", "break-lock", "unlock"] {
        assert!(
            page.contains(said),
            "the audit page should say {said}: {page}"
        );
    }
    // The command line reads the same log from the bucket.
    let mut audit = dmv_cmd(t);
    audit.args(["audit", "--from", "s3://studio/hub", "--json"]);
    minio.env(&mut audit);
    audit.env("AWS_ENDPOINT_URL", minio.endpoint());
    let out = audit.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["lock", "unlock", "lock", "break-lock"],
        "{events:?}"
    );
}

/// A comment naming people (`@ann`) is told: pushed through the server or
/// made on a page, it reaches the audit log and a webhook asking for
/// `mention` events, naming its writer, its file and the names. The pages
/// link each name that is one of the server's users (the viewer's own
/// marked) to the comments mentioning them, and list those; the command
/// line lists them too.
#[test]
fn mentions_are_told_linked_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (port, got) = receiver();
    let hub = t.join("hub");
    run_ok(t, &["init", "--bare", hub.to_str().unwrap()]);
    let config = format!(
        "[repos]\nhub = {:?}\n[tokens]\n\"tok-ann\" = {{ access = \"write\", user = \"ann\" }}\n\"tok-al\" = {{ access = \"write\", user = \"al\" }}\n[[webhooks]]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"s3cret\"\nevents = [\"mention\"]\n",
        hub.to_str().unwrap()
    );
    let server = HttpServer::start(&config, t, 0);
    let url = server.url("hub");
    let al = t.join("al");
    run_ok(t, &["init", al.to_str().unwrap()]);
    std::fs::write(al.join("notes.txt"), "one\ntwo\n").unwrap();
    commit_all(&al, "notes");
    run_ok(&al, &["remote", "add", "origin", &url, "--token", "tok-al"]);
    run_ok(&al, &["push", "origin", "main"]);
    let main = run_ok(&al, &["rev-parse", "main"]).trim().to_string();
    let as_al = |args: &[&str]| {
        let out = dmv_cmd(&al)
            .env_remove("DMV_TOKEN")
            .env("DMV_AUTHOR_NAME", "al")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "dmv {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    as_al(&[
        "comment",
        "add",
        "notes.txt",
        "--lines",
        "1",
        "-m",
        "@ann line one, @nobody",
    ]);
    as_al(&["comment", "add", "notes.txt", "-m", "no name here"]);
    as_al(&["push", "origin", "main"]);

    // ann answers on a page, naming al.
    let auth = "Bearer tok-ann";
    let (status, head, _) = http(
        server.port,
        "POST",
        "/hub/review/comment",
        &[
            ("Authorization", auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &common::servers::form_body(&[
            ("path", "notes.txt"),
            ("commit", &main),
            ("at", "2"),
            ("text", "@al line two is fixed"),
        ]),
    );
    assert_eq!(status, 303, "{head}");

    // Three deliveries: al's mention (500, then again) and ann's.
    let start = Instant::now();
    let seen = loop {
        let seen = got.lock().unwrap().clone();
        if seen.len() >= 3 || start.elapsed() > Duration::from_secs(30) {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(seen.len(), 3, "{seen:?}");
    let told: Vec<serde_json::Value> = seen
        .iter()
        .map(|g| {
            assert_eq!(g.header("x-dmv-event"), "mention");
            serde_json::from_slice(&g.body).unwrap()
        })
        .collect();
    let by = |user: &str| -> Vec<&serde_json::Value> {
        told.iter().filter(|e| e["user"] == user).collect()
    };
    let (als, anns) = (by("al"), by("ann"));
    assert_eq!(als.len(), 2, "tried again after the 500: {told:?}");
    assert_eq!(als[0], als[1]);
    assert_eq!(als[0]["paths"][0], "notes.txt");
    assert_eq!(als[0]["mentions"], serde_json::json!(["ann", "nobody"]));
    assert!(als[0]["detail"]
        .as_str()
        .unwrap()
        .ends_with(": @ann line one, @nobody"));
    assert_eq!(anns.len(), 1, "{told:?}");
    assert_eq!(anns[0]["mentions"], serde_json::json!(["al"]));
    assert_eq!(anns[0]["repository"], "hub");
    let audit = run_ok(&hub, &["audit", "--json"]);
    assert_eq!(audit.matches("\"event\":\"mention\"").count(), 2, "{audit}");

    // The pages: known users linked (the viewer's own marked), others text.
    let page = |token: &str, path: &str| {
        let (code, _, body) = http(
            server.port,
            "GET",
            path,
            &[("Authorization", &format!("Bearer {token}"))],
            b"",
        );
        assert_eq!(code, 200, "{path}: {body}");
        body
    };
    let mine = page("tok-al", "/hub/comments?mentioning=me");
    assert!(mine.contains("line two is fixed"), "{mine}");
    assert!(!mine.contains("line one"), "{mine}");
    assert!(
        mine.contains("<a class=\"mention me\" href=\"/hub/comments?mentioning=al\""),
        "{mine}"
    );
    let all = page("tok-ann", "/hub/comments/main");
    assert!(
        all.contains("line one") && all.contains("no name here"),
        "{all}"
    );
    assert!(
        all.contains("<a class=\"mention me\" href=\"/hub/comments?mentioning=ann\""),
        "{all}"
    );
    assert!(
        all.contains("@nobody") && !all.contains("mentioning=nobody"),
        "{all}"
    );
    let by_al = page("tok-ann", "/hub/comments/main?by=al");
    assert!(
        by_al.contains("no name here") && !by_al.contains("line two"),
        "{by_al}"
    );
    let here = page("tok-ann", &format!("/hub/comments/{main}?here"));
    assert!(here.contains("line two"), "{here}");

    // The command line: fetched, the comments mentioning al.
    as_al(&["fetch", "origin"]);
    let listed = as_al(&["comment", "list", "--mentioning", "al", "--json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["text"], "@al line two is fixed");
    assert_eq!(listed[0]["by"]["name"], "ann");
}
