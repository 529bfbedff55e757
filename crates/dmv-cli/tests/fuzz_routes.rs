//! Every HTTP route of `dmv serve` under a structured fuzzer, over real TCP
//! to a real server on loopback: requests built from the route's own shape
//! (paths of the repository and garbage, revisions, ids, queries, ranges,
//! JSON and frame bodies, each kind of token) with parts replaced by
//! hostile values. A case fails when the server dies, takes more than 1 s
//! to answer (a hang), or its memory passes the budget the issue sets for
//! the whole server (512 MiB). CI runs `DMV_FUZZ_CASES` cases per route
//! (48 by default); by hand, as many as one likes, with `DMV_FUZZ_SEED` to
//! replay a run. The cases per route go to RELIABILITY.md.

use crate::common;
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use dmv_repo::store::ObjectId;
use dmv_sync::protocol::{Request, WireRefUpdate, VERSION};
use dmv_sync::FrameWriter;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The longest a case may take to be answered.
const HANG: Duration = Duration::from_secs(1);
/// The server's memory budget.
const MEMORY_BUDGET: u64 = 512 << 20;

struct Target {
    port: u16,
    ids: Vec<String>,
    commits: Vec<String>,
    paths: Vec<String>,
}

fn cases() -> usize {
    std::env::var("DMV_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// A hostile or ordinary piece of a path or query.
fn piece(rng: &mut StdRng, t: &Target) -> String {
    match rng.gen_range(0..14) {
        0 => t.paths[rng.gen_range(0..t.paths.len())].clone(),
        1 => t.ids[rng.gen_range(0..t.ids.len())].clone(),
        2 => t.commits[rng.gen_range(0..t.commits.len())].clone(),
        3 => [
            "main",
            "HEAD",
            "HEAD~1",
            "main^",
            "v1",
            "refs/heads/main",
            "HEAD@{1}",
            "main~999999999",
        ][rng.gen_range(0..8)]
        .to_string(),
        4 => "..".into(),
        5 => "%2e%2e%2f%2e%2e%2fetc%2fpasswd".into(),
        6 => "a".repeat(rng.gen_range(200..5000)),
        7 => "%00".into(),
        8 => "%ff%fe".into(),
        9 => "../".repeat(rng.gen_range(1..40)),
        10 => (0..rng.gen_range(1..12)).map(|_| "ab/").collect(),
        11 => format!("{}", rng.gen::<u64>()),
        12 => t.ids[rng.gen_range(0..t.ids.len())][..rng.gen_range(1..64)].to_string(),
        _ => (0..rng.gen_range(0..40))
            .map(|_| (b'!' + rng.gen_range(0..94)) as char)
            .filter(|c| !"# ?".contains(*c))
            .collect(),
    }
}

fn token(rng: &mut StdRng) -> Option<&'static str> {
    // Wrong tokens are left to `token_guessing_is_rationed`: after ten, every
    // token from this address waits its turn, and the routes would not be reached.
    [
        None,
        Some("fz-read"),
        Some("fz-write"),
        Some("fz-admin"),
        Some("fz-anon"),
    ][rng.gen_range(0..5)]
}

/// A request: method, path, extra headers, body.
type Case = (&'static str, String, Vec<(String, String)>, Vec<u8>);

fn frame_body(rng: &mut StdRng, t: &Target) -> Vec<u8> {
    let id = |rng: &mut StdRng| match rng.gen_bool(0.7) {
        true => ObjectId::from_hex(&t.ids[rng.gen_range(0..t.ids.len())]).unwrap(),
        false => ObjectId(rng.gen()),
    };
    let request = match rng.gen_range(0..9) {
        0 => Request::Hello {
            version: rng.gen_range(0..VERSION + 2),
        },
        1 => Request::ListRefs,
        2 => Request::Has {
            ids: (0..rng.gen_range(0..64)).map(|_| id(rng)).collect(),
        },
        3 => Request::Get {
            ids: (0..rng.gen_range(0..16)).map(|_| id(rng)).collect(),
            chunks: rng.gen(),
        },
        4 => Request::UpdateRefs {
            updates: vec![WireRefUpdate {
                name: format!("refs/heads/{}", piece(rng, t)),
                old: Some(id(rng)),
                new: Some(id(rng)),
            }],
            who: piece(rng, t),
            message: piece(rng, t),
        },
        5 => Request::LockPaths {
            paths: (0..rng.gen_range(0..8)).map(|_| piece(rng, t)).collect(),
            replica: piece(rng, t),
        },
        6 => Request::UnlockPaths {
            paths: (0..rng.gen_range(0..4)).map(|_| piece(rng, t)).collect(),
            force: rng.gen(),
        },
        7 => Request::ListLocks,
        _ => Request::WalkCommits {
            wants: vec![id(rng)],
            haves: vec![id(rng)],
        },
    };
    let mut body = Vec::new();
    FrameWriter::new(&mut body).message(&request).unwrap();
    if rng.gen_bool(0.5) {
        FrameWriter::new(&mut body).end().unwrap();
    }
    if rng.gen_bool(0.3) {
        // Damage: bytes flipped, cut, or garbage after.
        match rng.gen_range(0..3) {
            0 if !body.is_empty() => {
                let at = rng.gen_range(0..body.len());
                body[at] ^= rng.gen_range(1..=255u8);
            }
            1 => body.truncate(rng.gen_range(0..=body.len())),
            _ => body.extend((0..rng.gen_range(1..512)).map(|_| rng.gen::<u8>())),
        }
    }
    body
}

fn json_text(rng: &mut StdRng, t: &Target) -> String {
    serde_json::Value::String(piece(rng, t)).to_string()
}

/// One case of `route`.
fn case(route: &str, rng: &mut StdRng, t: &Target) -> Case {
    let repo = if rng.gen_bool(0.9) {
        "hub".to_string()
    } else {
        piece(rng, t)
    };
    let query = |rng: &mut StdRng| match rng.gen_range(0..3) {
        0 => String::new(),
        1 => format!(
            "?skip={}&view=grid&q={}&in=commits&rev={}",
            rng.gen::<i64>(),
            piece(rng, t),
            piece(rng, t)
        ),
        _ => format!(
            "?{}={}&after={}&diff=split&name={}",
            piece(rng, t),
            piece(rng, t),
            piece(rng, t),
            piece(rng, t)
        ),
    };
    let json = ("Content-Type".to_string(), "application/json".to_string());
    match route {
        "rpc" => {
            let verbs = [
                "hello",
                "list-refs",
                "walk-commits",
                "has",
                "get",
                "put",
                "update-refs",
                "put-locations",
                "get-locations",
                "lock",
                "unlock",
                "list-locks",
                "replica",
                "lock-content",
                "drop-content",
            ];
            let verb = if rng.gen_bool(0.9) {
                verbs[rng.gen_range(0..verbs.len())].to_string()
            } else {
                piece(rng, t)
            };
            let body = if rng.gen_bool(0.8) {
                frame_body(rng, t)
            } else {
                (0..rng.gen_range(0..4096))
                    .map(|_| rng.gen::<u8>())
                    .collect()
            };
            (
                "POST",
                format!("/{repo}/dmv/{verb}"),
                vec![("Content-Type".into(), "application/x-dmv-frames".into())],
                body,
            )
        }
        "uploads-open" => {
            let body = format!(
                r#"{{"name":{},"size":{}}}"#,
                json_text(rng, t),
                [0u64, 1, u64::MAX, rng.gen::<u32>() as u64][rng.gen_range(0..4)]
            );
            (
                "POST",
                format!("/{repo}/uploads"),
                vec![json],
                body.into_bytes(),
            )
        }
        "uploads-piece" => (
            "PUT",
            format!(
                "/{repo}/uploads/{}?offset={}",
                piece(rng, t),
                rng.gen::<u32>()
            ),
            vec![],
            (0..rng.gen_range(0..2048))
                .map(|_| rng.gen::<u8>())
                .collect(),
        ),
        "uploads-status" => (
            "GET",
            format!("/{repo}/uploads/{}", piece(rng, t)),
            vec![],
            Vec::new(),
        ),
        "commit-uploads" => {
            let body = format!(
                r#"{{"branch":{},"seen":{},"folder":{},"message":{},"files":[{{"name":{},"id":{}}}]}}"#,
                json_text(rng, t),
                json_text(rng, t),
                json_text(rng, t),
                json_text(rng, t),
                json_text(rng, t),
                json_text(rng, t)
            );
            let body = if rng.gen_bool(0.2) {
                body[..rng.gen_range(0..body.len())].to_string()
            } else {
                body
            };
            (
                "POST",
                format!("/{repo}/commit-uploads"),
                vec![json],
                body.into_bytes(),
            )
        }
        "login" => (
            "POST",
            "/login".into(),
            vec![(
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            )],
            format!("token={}", piece(rng, t)).into_bytes(),
        ),
        "logout" => (
            "POST",
            "/logout".into(),
            vec![("Origin".into(), format!("http://{}", piece(rng, t)))],
            Vec::new(),
        ),
        "locks-break" => (
            "POST",
            format!("/{repo}/locks/break"),
            vec![(
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            )],
            format!("path={}&secret={}", piece(rng, t), piece(rng, t)).into_bytes(),
        ),
        "static" => (
            "GET",
            [
                "/",
                "/-/compare.js",
                "/-/theme.js",
                "/-/upload.js",
                "/login",
                "/logout",
                "/hub",
                "/hub/",
            ][rng.gen_range(0..8)]
            .to_string()
                + &query(rng),
            vec![],
            Vec::new(),
        ),
        "any-path" => (
            "GET",
            format!("/{}/{}/{}", piece(rng, t), piece(rng, t), piece(rng, t)),
            vec![],
            Vec::new(),
        ),
        page => {
            let rest = (0..rng.gen_range(0..4))
                .map(|_| piece(rng, t))
                .collect::<Vec<_>>()
                .join("/");
            let mut headers = Vec::new();
            if page == "raw" {
                let ranges = [
                    "bytes=0-",
                    "bytes=-1",
                    "bytes=5-1",
                    "bytes=0-0,1-1,2-2",
                    "bytes=99999999999-",
                    "bytes=-0",
                    "items=0-1",
                    "bytes=0-18446744073709551615",
                ];
                headers.push((
                    "Range".to_string(),
                    ranges[rng.gen_range(0..ranges.len())].to_string(),
                ));
            }
            (
                "GET",
                format!("/{repo}/{page}/{rest}{}", query(rng)),
                headers,
                Vec::new(),
            )
        }
    }
}

/// Sends one case and reads the whole answer; the status (None: closed
/// without one) and how long it took.
fn send(
    port: u16,
    (method, path, headers, body): &Case,
    bearer: Option<&str>,
) -> (Option<u16>, Duration) {
    let started = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("the server is gone: {e}"));
    s.set_read_timeout(Some(HANG * 10)).unwrap();
    let path: String = path.chars().filter(|c| c.is_ascii_graphic()).collect();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if let Some(token) = bearer {
        head += &format!("Authorization: Bearer {token}\r\n");
    }
    for (k, v) in headers {
        head += &format!(
            "{k}: {}\r\n",
            v.chars()
                .filter(|c| c.is_ascii_graphic() || *c == ' ')
                .collect::<String>()
        );
    }
    head += "\r\n";
    let _ = s.write_all(head.as_bytes()).and_then(|_| s.write_all(body));
    let mut answer = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::BrokenPipe
                ) =>
            {
                break
            }
            Err(e) => panic!("{method} {path}: no answer within {:?}: {e}", HANG * 10),
        }
    }
    let status = std::str::from_utf8(&answer[..answer.len().min(16)])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok());
    (status, started.elapsed())
}

fn peak_rss(server: &HttpServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        << 10
}

#[test]
fn every_route_under_a_structured_fuzzer_answers_in_time_within_budget() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    write_noise(&a.join("take.wav"), 3 << 20, 1);
    std::fs::create_dir_all(a.join("shoot/day one")).unwrap();
    std::fs::write(
        a.join("shoot/day one/cover.jpg"),
        dmv_testkit::jpeg_bomb(64, 48),
    )
    .unwrap();
    std::fs::write(
        a.join("shoot/notes.md"),
        "# notes\n<script>alert(1)</script>\n",
    )
    .unwrap();
    std::fs::write(a.join(".dmvattributes"), "*.psd lockable\n").unwrap();
    std::fs::write(a.join("poster.psd"), "layers").unwrap();
    commit_all(&a, "media");
    std::fs::write(a.join("shoot/notes.md"), "# notes, again\n").unwrap();
    commit_all(&a, "notes");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["push", "../hub"]);
    let config = "idle_timeout_secs = 2\n[repos]\nhub = \"hub\"\n[tokens]\n\"fz-read\" = \"read\"\n\"fz-write\" = { access = \"write\", user = \"writer\" }\n\"fz-admin\" = { access = \"admin\", user = \"boss\" }\n\"fz-anon\" = \"write\"\n";
    std::fs::write(t.join("server.toml"), config).unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let listing = dmv(&a, &["ls-tree", "-r", "HEAD"]);
    let target = Target {
        port: server.port,
        ids: listing
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
            .collect(),
        commits: dmv(&a, &["log", "--format=%H"])
            .lines()
            .map(str::to_string)
            .collect(),
        paths: listing
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(_, p)| p.to_string())
            .collect(),
    };
    let seed = std::env::var("DMV_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0064u64);
    eprintln!("fuzzing with DMV_FUZZ_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let routes = [
        "rpc",
        "log",
        "commit",
        "tree",
        "file",
        "compare",
        "locks",
        "search",
        "upload",
        "zip",
        "thumb",
        "preview",
        "raw",
        "uploads-open",
        "uploads-piece",
        "uploads-status",
        "commit-uploads",
        "logout",
        "locks-break",
        "static",
        "any-path",
        // Last: its wrong tokens are guesses, and after ten every token from here waits (429).
        "login",
    ];
    let mut report = serde_json::Map::new();
    for route in routes {
        let (mut slowest, mut statuses) = (
            Duration::ZERO,
            std::collections::BTreeMap::<String, usize>::new(),
        );
        for n in 0..cases() {
            let case = case(route, &mut rng, &target);
            let (status, took) = send(target.port, &case, token(&mut rng));
            assert!(
                took <= HANG,
                "{route} case {n} (seed {seed}) took {took:?}: {} {}",
                case.0,
                case.1
            );
            assert!(
                status.is_some() || case.1.len() > 60 << 10,
                "{route} case {n} (seed {seed}) was not answered: {} {}",
                case.0,
                case.1
            );
            *statuses
                .entry(status.map_or("closed".into(), |s| s.to_string()))
                .or_default() += 1;
            slowest = slowest.max(took);
        }
        assert!(
            send(
                target.port,
                &("GET", "/".into(), vec![], Vec::new()),
                Some("fz-read")
            )
            .0
            .is_some(),
            "the server died fuzzing {route}"
        );
        report.insert(route.into(), serde_json::json!({ "cases": cases(), "slowest_ms": slowest.as_millis() as u64, "statuses": statuses }));
    }
    let peak = peak_rss(&server);
    assert!(
        peak < MEMORY_BUDGET,
        "the server's peak memory was {} MiB",
        peak >> 20
    );
    // Nothing the fuzzer sent changed what the server keeps: a clone is exact
    // (once the guesses at /login are forgiven).
    let started = Instant::now();
    while send(
        target.port,
        &("GET", "/".into(), vec![], Vec::new()),
        Some("fz-read"),
    )
    .0 != Some(200)
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server never answered again"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let copy = t.join("copy");
    ok(&dmv_cmd(t)
        .args(["clone", &server.url("hub")])
        .arg(&copy)
        .env("DMV_TOKEN", "fz-read")
        .output()
        .unwrap());
    assert_same_tree(&a, &copy);
    fault_report(
        "fuzz-routes",
        serde_json::json!({ "seed": seed, "peak_rss_mib": peak >> 20, "routes": report }),
    );
}
