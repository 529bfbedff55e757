//! `dmv serve` facing hostile clients on loopback, spoken to in raw TCP:
//! connections that send nothing or never finish their head, heads over
//! the bound, bodies of garbage frames and of frames announcing absurd
//! lengths, repository names that try to leave the configured map, and
//! pushes without a write token. After each, a real clone from the same
//! server still comes out exact. Then the same server speaking HTTPS with a
//! self-signed certificate that clients trust through `DMV_CA_CERT`.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dmv_repo::store::ObjectId;
use dmv_sync::protocol::{Request, Response, Verb, WireClaim, WireRefUpdate, VERSION};
use dmv_sync::{Frame, FrameReader, FrameWriter};
use rand::{Rng, SeedableRng};

/// The server's idle timeout in these tests (it defaults to 30 s).
const IDLE_SECS: u64 = 2;
/// Far past the idle timeout: a connection not cut by then never will be.
const CUT_WITHIN: Duration = Duration::from_secs(20);
const WRITER: &str = "writer-1";
const READER: &str = "reader-1";
const WRITING_VERBS: [&str; 7] = [
    "put",
    "update-refs",
    "put-locations",
    "put-location-claims",
    "lock-content",
    "unlock-content",
    "drop-content",
];
const READING_VERBS: [&str; 8] = [
    "hello",
    "list-refs",
    "walk-commits",
    "has",
    "get",
    "replica",
    "get-locations",
    "get-location-claims",
];

/// A source repository `a` pushed to the served bare `hub`, another bare
/// repository `outside` next to it that the server does not list, and the
/// server's configuration.
fn setup() -> tempfile::TempDir {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    write_noise(&a.join("take.wav"), 3 << 20, 1);
    std::fs::create_dir_all(a.join("scenes/one")).unwrap();
    write_noise(&a.join("scenes/one/still.raw"), 100 << 10, 2);
    std::fs::write(a.join("notes.txt"), "hostile clients\n").unwrap();
    commit_all(&a, "media");
    for bare in ["hub", "outside"] {
        dmv(t, &["init", "--bare", bare]);
        dmv(&a, &["push", &format!("../{bare}")]);
    }
    let config = format!("idle_timeout_secs = {IDLE_SECS}\n[repos]\nhub = \"hub\"\n[tokens]\n\"{WRITER}\" = \"write\"\n\"{READER}\" = \"read\"\n");
    std::fs::write(t.join("server.toml"), config).unwrap();
    top
}

/// Clones `url` into a new directory next to `a`, checks it holds exactly
/// what `a` does, and removes it.
fn clone_is_exact(t: &Path, url: &str, env: &[(&str, &str)]) {
    static CLONES: AtomicUsize = AtomicUsize::new(0);
    let dir = t.join(format!("clone-{}", CLONES.fetch_add(1, Ordering::SeqCst)));
    let out = dmv_cmd(t)
        .args(["clone", url])
        .arg(&dir)
        .envs(env.iter().copied())
        .env_remove("DMV_TOKEN")
        .output()
        .unwrap();
    ok(&out);
    assert_same_tree(&t.join("a"), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(CUT_WITHIN)).unwrap();
    s.set_write_timeout(Some(CUT_WITHIN)).unwrap();
    s
}

/// Reads until the server closes the connection; a reset counts as closed.
fn read_until_closed(s: &mut TcpStream) -> Vec<u8> {
    let (mut got, mut buf) = (Vec::new(), vec![0u8; 64 << 10]);
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::BrokenPipe
                ) =>
            {
                return got
            }
            Err(e) => panic!(
                "the server neither answered nor closed the connection within {CUT_WITHIN:?}: {e}"
            ),
        }
    }
}

/// What came back on a connection: the status (None: closed without an
/// answer) and the body, de-chunked.
#[derive(Debug)]
struct Answer {
    status: Option<u16>,
    body: Vec<u8>,
    /// The ETag header, as sent.
    etag: Option<String>,
}

fn parse_answer(raw: &[u8]) -> Answer {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        assert!(
            raw.is_empty(),
            "a partial answer: {:?}",
            String::from_utf8_lossy(raw)
        );
        return Answer {
            status: None,
            body: Vec::new(),
            etag: None,
        };
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    assert!(
        head.starts_with("http/1.1 ") && status.is_some(),
        "not an HTTP answer: {head}"
    );
    let rest = &raw[end + 4..];
    let header = |name: &str| {
        head.lines().find_map(|l| {
            l.strip_prefix(&format!("{name}:"))
                .map(|v| v.trim().to_string())
        })
    };
    let body = if header("transfer-encoding").as_deref() == Some("chunked") {
        let (mut body, mut at) = (Vec::new(), 0);
        loop {
            let line_end = at
                + rest[at..]
                    .windows(2)
                    .position(|w| w == b"\r\n")
                    .expect("a chunk size line");
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[at..line_end])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .expect("a chunk size");
            at = line_end + 2;
            if size == 0 {
                break body;
            }
            body.extend_from_slice(&rest[at..at + size]);
            at += size + 2;
        }
    } else {
        let len = header("content-length").map_or(rest.len(), |l| l.parse().unwrap());
        rest[..len].to_vec()
    };
    let etag = header("etag");
    Answer { status, body, etag }
}

/// Sends `bytes` on a new connection and reads what comes back until the
/// server closes it. A server may answer and close before taking all of a
/// hostile request, so a failed write is not an error.
fn exchange(port: u16, bytes: &[u8]) -> Answer {
    let mut s = connect(port);
    let _ = s.write_all(bytes);
    parse_answer(&read_until_closed(&mut s))
}

fn post(path: &str, token: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut r = format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-dmv-frames\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    if let Some(t) = token {
        r += &format!("Authorization: Bearer {t}\r\n");
    }
    let mut r = (r + "\r\n").into_bytes();
    r.extend_from_slice(body);
    r
}

fn message(request: &Request) -> Vec<u8> {
    let mut buf = Vec::new();
    FrameWriter::new(&mut buf).message(request).unwrap();
    buf
}

/// The first frame of an answer's body as a response message.
fn response(answer: &Answer) -> Response {
    assert_eq!(answer.status, Some(200), "{answer:?}");
    match FrameReader::new(&answer.body[..]).next_frame() {
        Ok(Some(Frame::Message(m))) => postcard::from_bytes(&m)
            .unwrap_or_else(|e| panic!("not a response ({e}): {:?}", answer.body)),
        other => panic!("not a message frame: {other:?}"),
    }
}

fn error_message(answer: &Answer) -> String {
    match response(answer) {
        Response::Error { message } => message,
        other => panic!("not an error: {other:?}"),
    }
}

/// A well-formed request for each writing verb, so that only the token can be the reason for a refusal.
fn writing_request(verb: &str, head: ObjectId) -> Vec<u8> {
    let request = match verb {
        "put" => Request::Put,
        "update-refs" => Request::UpdateRefs {
            updates: vec![WireRefUpdate {
                name: "refs/heads/evil".into(),
                old: None,
                new: Some(head),
            }],
            who: "mallory".into(),
            message: "x".into(),
        },
        "put-locations" => Request::PutLocations { from: [1; 16] },
        "put-location-claims" => Request::PutLocationClaims {
            from: [1; 16],
            claims: Vec::new(),
        },
        "lock-content" => Request::LockContent {
            ids: vec![head],
            seconds: 60,
        },
        "unlock-content" => Request::UnlockContent {
            lock: "nope".into(),
        },
        "drop-content" => Request::DropContent { ids: vec![head] },
        other => panic!("{other} does not write"),
    };
    let mut body = message(&request);
    if Verb::from_name(verb).is_some_and(Verb::has_body) {
        FrameWriter::new(&mut body).end().unwrap();
    }
    body
}

fn head_id(dir: &Path) -> ObjectId {
    ObjectId::from_hex(&head_of(dir, "refs/heads/main")).expect("a main branch")
}

#[test]
fn idle_slow_and_oversized_connections_are_cut_and_the_server_keeps_serving() {
    let top = setup();
    let t = top.path();
    let (mut server, first) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    assert!(first.contains("listening on http://127.0.0.1:"), "{first}");
    let (port, url) = (server.port, server.url("hub"));
    clone_is_exact(t, &url, &[]);

    // A connection that sends nothing is closed once the idle timeout passes.
    let start = Instant::now();
    let got = read_until_closed(&mut connect(port));
    assert!(
        start.elapsed() < CUT_WITHIN && !String::from_utf8_lossy(&got).contains(" 200 "),
        "{got:?}"
    );
    clone_is_exact(t, &url, &[]);

    // So is one whose head never ends, however steadily it trickles in.
    let mut s = connect(port);
    s.write_all(b"POST /hub/dmv/hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let (start, mut buf) = (Instant::now(), [0u8; 1024]);
    loop {
        assert!(
            start.elapsed() < CUT_WITHIN,
            "a head trickling in for {CUT_WITHIN:?} was never cut"
        );
        if s.write_all(b"a").is_err() {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => assert!(
                !String::from_utf8_lossy(&buf[..n]).contains(" 200 "),
                "a trickled head was served"
            ),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    clone_is_exact(t, &url, &[]);

    // Heads past the bound: 431, or cut while still sending; never a crash.
    let head_with = |extra: &str| {
        format!("POST /hub/dmv/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n").into_bytes()
    };
    let big_header = head_with(&format!("X-Big: {}\r\n", "a".repeat(80 << 10)));
    assert_eq!(exchange(port, &big_header).status, Some(431));
    let many_headers = head_with(
        &(0..1000)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect::<String>(),
    );
    assert_eq!(exchange(port, &many_headers).status, Some(431));
    let huge_header = head_with(&format!("X-Huge: {}\r\n", "a".repeat(16 << 20)));
    let status = exchange(port, &huge_header).status;
    assert!(status.is_none() || status == Some(431), "{status:?}");
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died"
    );
    clone_is_exact(t, &url, &[]);

    // A body that stops half way: the request gives up after the idle timeout.
    let mut s = connect(port);
    let hello = message(&Request::Hello { version: VERSION });
    let mut request = post("/hub/dmv/hello", None, &hello);
    let announced = request.len();
    request.truncate(announced - 2);
    s.write_all(&request).unwrap();
    let start = Instant::now();
    let got = read_until_closed(&mut s);
    assert!(
        start.elapsed() < CUT_WITHIN,
        "a stalled body was waited on for {:?}",
        start.elapsed()
    );
    if !got.is_empty() {
        assert_eq!(parse_answer(&got).status, Some(408), "{got:?}");
    }
    clone_is_exact(t, &url, &[]);

    // A client that asks for a large answer and stops taking it: the server
    // gives up on the connection rather than wait on it for ever.
    let chunks = chunk_ids(&t.join("hub"));
    let ids: Vec<ObjectId> = (0..16).flat_map(|_| chunks.iter().copied()).collect();
    let mut s = connect(port);
    s.write_all(&post(
        "/hub/dmv/get",
        None,
        &message(&Request::Get { ids, chunks: true }),
    ))
    .unwrap();
    // Well past the idle timeout once every buffer on the way has filled.
    std::thread::sleep(Duration::from_secs(4 * IDLE_SECS));
    let got = read_until_closed(&mut s);
    assert!(
        got.starts_with(b"HTTP/1.1 200") && !got.ends_with(b"\r\n0\r\n\r\n"),
        "a stalled answer was carried on to its end ({} bytes)",
        got.len()
    );
    clone_is_exact(t, &url, &[]);
    server.kill();
}

/// The ids of every chunk reachable from the main branch of `dir`.
fn chunk_ids(dir: &Path) -> Vec<ObjectId> {
    use dmv_repo::store::object::children;
    use dmv_repo::store::ObjectKind;
    let repo = dmv_repo::Repository::open(dir).unwrap();
    let (mut todo, mut seen, mut chunks) = (
        vec![head_id(dir)],
        std::collections::BTreeSet::new(),
        Vec::new(),
    );
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        let (kind, bytes) = repo.store.read(&id).unwrap();
        if kind == ObjectKind::Chunk {
            chunks.push(id);
        }
        todo.extend(children(&id, kind, &bytes).unwrap());
    }
    assert!(chunks.len() > 4, "{} chunks", chunks.len());
    chunks
}

#[test]
fn garbage_bodies_and_absurd_frame_lengths_get_error_answers() {
    let top = setup();
    let t = top.path();
    let (mut server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let (port, url) = (server.port, server.url("hub"));
    let hub = t.join("hub");
    let before = head_of(&hub, "refs/heads/main");

    // Frame lengths that must be refused before anything of that size is
    // allocated or waited for: the frame length is a u32, so 2^63 arrives
    // as whichever four bytes come first.
    let mut message_of_64_mib = ((64u32 << 20) + 1).to_le_bytes().to_vec();
    message_of_64_mib.extend_from_slice(b"\x01only this");
    let absurd: [(Vec<u8>, &[&str]); 6] = [
        (
            [&u32::MAX.to_le_bytes()[..], &[1]].concat(),
            &["bad frame length 4294967295"],
        ),
        ((1u64 << 63).to_le_bytes().to_vec(), &["bad frame length 0"]),
        (
            (1u64 << 63).to_be_bytes().to_vec(),
            &["unknown frame type 0"],
        ),
        (
            [&(64u32 << 20).to_le_bytes()[..], &[2]].concat(),
            &["larger than the largest one"],
        ),
        (message_of_64_mib, &["stream ended inside a frame"]),
        // Inside an upload the server reads on to the end before answering,
        // and says what stopped that if something did.
        (
            [&message(&Request::Put)[..], &u32::MAX.to_le_bytes(), &[2]].concat(),
            &["bad frame length 4294967295", "stream ended inside a frame"],
        ),
    ];
    for (body, expected) in &absurd {
        for verb in ["hello", "list-refs", "get", "put"] {
            let token = (verb == "put").then_some(WRITER);
            let answer = exchange(port, &post(&format!("/hub/dmv/{verb}"), token, body));
            let error = error_message(&answer);
            // A body whose first frame is fine reaches the verb check first.
            let expected: &[&str] = if body.starts_with(&message(&Request::Put)) && verb != "put" {
                &["a put request sent to the"]
            } else {
                expected
            };
            assert!(
                expected.iter().any(|e| error.contains(e)),
                "{verb} with {:?}: {error}",
                &body[..body.len().min(16)]
            );
        }
    }
    clone_is_exact(t, &url, &[]);

    // Random garbage, from a fixed seed: each request gets a whole answer.
    // Writing verbs other than put are sent without a token (their refusal
    // must not depend on the body); put gets the write token so that its
    // body is read.
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5e7e_0017);
    let all_verbs: Vec<&str> = READING_VERBS
        .iter()
        .chain(WRITING_VERBS.iter())
        .copied()
        .collect();
    for round in 0..300 {
        let verb = all_verbs[rng.gen_range(0..all_verbs.len())];
        let mut body = Vec::new();
        match rng.gen_range(0..4) {
            // Bytes of any kind.
            0 => body.extend((0..rng.gen_range(0..2048)).map(|_| rng.gen::<u8>())),
            // A frame head of any length and type, then a little of anything.
            1 => {
                let len: u32 = if rng.gen_bool(0.5) {
                    rng.gen()
                } else {
                    rng.gen_range(0..512)
                };
                body.extend_from_slice(&len.to_le_bytes());
                body.extend((0..rng.gen_range(0..256)).map(|_| rng.gen::<u8>()));
            }
            // A well-framed message of random content.
            2 => {
                let content: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
                body.extend_from_slice(&(content.len() as u32 + 1).to_le_bytes());
                body.push(1);
                body.extend_from_slice(&content);
            }
            // An upload of random frames.
            _ => {
                body = message(&Request::Put);
                for _ in 0..rng.gen_range(1..8) {
                    let content: Vec<u8> = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect();
                    body.extend_from_slice(&(content.len() as u32 + 1).to_le_bytes());
                    body.push(rng.gen_range(0..6));
                    body.extend_from_slice(&content);
                }
            }
        }
        let writes = WRITING_VERBS.contains(&verb);
        let token = (verb == "put").then_some(WRITER);
        let answer = exchange(port, &post(&format!("/hub/dmv/{verb}"), token, &body));
        if writes && token.is_none() {
            assert_eq!(
                answer.status,
                Some(401),
                "round {round}, {verb}: {answer:?}"
            );
            continue;
        }
        assert_eq!(
            answer.status,
            Some(200),
            "round {round}, {verb}: {answer:?}"
        );
        let frame = FrameReader::new(&answer.body[..]).next_frame();
        assert!(
            matches!(frame, Ok(Some(_))),
            "round {round}, {verb}: the answer is not frames: {frame:?}"
        );
    }
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died"
    );
    clone_is_exact(t, &url, &[]);
    assert_eq!(head_of(&hub, "refs/heads/main"), before);
    let peak = peak_rss(&server);
    server.kill();
    fsck_clean(&hub);
    security_report(
        "garbage",
        "garbage bodies and absurd frame lengths",
        absurd.len() * 4 + 300,
        absurd.len() * 4 + 300,
        Some(peak),
    );
}

/// A location log in one piece, with a record for each key byte.
fn location_piece(keys: &[u8]) -> Vec<u8> {
    let mut log = dmv_repo::LocationLog::default();
    for &k in keys {
        log.record(
            ObjectId([k; 32]),
            dmv_repo::ReplicaId([0x5a; 16]),
            dmv_repo::Stamp {
                time_ns: 1_000 + k as u64,
                present: true,
            },
        );
    }
    log.encode()
}

fn put_locations_body(pieces: &[Vec<u8>], end: bool) -> Vec<u8> {
    let mut body = message(&Request::PutLocations { from: [1; 16] });
    let mut frames = FrameWriter::new(&mut body);
    for piece in pieces {
        frames.locations(piece).unwrap();
    }
    if end {
        frames.end().unwrap();
    }
    body
}

/// A pushed location log arrives in pieces that the server spools and merges
/// once the last has come: pieces out of key order, a damaged piece or a
/// body cut short change nothing; pieces in order are merged, all of them.
#[test]
fn location_pieces_out_of_order_damaged_or_cut_short_change_nothing() {
    let top = setup();
    let t = top.path();
    let (mut server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    let log_path = t.join("hub/.dmv/locations");
    let before = std::fs::read(&log_path).unwrap();
    let put = |body: &[u8]| exchange(port, &post("/hub/dmv/put-locations", Some(WRITER), body));

    let error = error_message(&put(&put_locations_body(
        &[location_piece(&[0x20]), location_piece(&[0x10])],
        true,
    )));
    assert!(error.contains("not in key order"), "{error}");
    let mut damaged = location_piece(&[0x30, 0x31]);
    damaged[30] ^= 1;
    let error = error_message(&put(&put_locations_body(
        &[location_piece(&[0x10]), damaged],
        true,
    )));
    assert!(
        error.contains("a piece of a location log: checksum mismatch"),
        "{error}"
    );
    let cut = put(&put_locations_body(&[location_piece(&[0x10])], false));
    let error = error_message(&cut);
    assert!(error.contains("closed the connection"), "{error}");
    assert_eq!(
        std::fs::read(&log_path).unwrap(),
        before,
        "a refused push changed the location log"
    );

    assert_eq!(
        response(&put(&put_locations_body(
            &[location_piece(&[0x10, 0x11]), location_piece(&[0x20])],
            true
        ))),
        Response::LocationsMerged
    );
    let merged = dmv_repo::Repository::open(&t.join("hub"))
        .unwrap()
        .copies()
        .load_locations()
        .unwrap();
    for k in [0x10, 0x11, 0x20] {
        assert_eq!(merged.holders(&ObjectId([k; 32])).len(), 1, "key {k:#x}");
    }
    // Claims are asked of a few trees (a client names those it would
    // claim); a request naming more is refused, one naming trees the log
    // does not claim gets no claims and the whole log.
    let claims = |trees: Vec<ObjectId>| {
        let request = message(&Request::GetLocationClaims { trees });
        exchange(port, &post("/hub/dmv/get-location-claims", None, &request))
    };
    let error = error_message(&claims((0..17).map(|i| ObjectId([i; 32])).collect()));
    assert!(
        error.contains("17 ids asked for at once; at most 16"),
        "{error}"
    );
    let answer = claims(vec![ObjectId([1; 32])]);
    assert_eq!(
        response(&answer),
        Response::LocationClaims { claims: Vec::new() }
    );
    let mut frames = FrameReader::new(&answer.body[..]);
    frames.next_frame().unwrap();
    let Ok(Some(Frame::Locations(piece))) = frames.next_frame() else {
        panic!("no piece of the log: {answer:?}")
    };
    let (records, _) = dmv_repo::LocationLog::read_encoded(&piece).unwrap();
    assert_eq!(records.count(), merged.records.len());
    assert!(matches!(frames.next_frame(), Ok(Some(Frame::End))));

    // Claims put are taken only of a tree the hub reads whole (its HEAD's,
    // its tips'), so a caller cannot make it list another; refused, the
    // log is as it was. A claim of HEAD's tree stands for a record of each
    // of its files.
    let put_claims = |tree: ObjectId, replica: u8| {
        let claim = WireClaim {
            tree,
            replica: [replica; 16],
            time_ns: 5_000,
        };
        let mut body = message(&Request::PutLocationClaims {
            from: [replica; 16],
            claims: vec![claim],
        });
        FrameWriter::new(&mut body).end().unwrap();
        exchange(
            port,
            &post("/hub/dmv/put-location-claims", Some(WRITER), &body),
        )
    };
    let log_before = std::fs::read(&log_path).unwrap();
    let error = error_message(&put_claims(ObjectId([1; 32]), 7));
    assert!(
        error.contains("a tree this replica does not read whole"),
        "{error}"
    );
    assert_eq!(std::fs::read(&log_path).unwrap(), log_before);
    let hub = dmv_repo::Repository::open(&t.join("hub")).unwrap();
    let head_tree = hub.commit(&head_id(&t.join("a"))).unwrap().tree;
    assert_eq!(
        response(&put_claims(head_tree, 7)),
        Response::LocationsMerged
    );
    let files = dmv_repo::tree::flatten(&hub.store, &head_tree).unwrap();
    let claimed = hub.copies().load_locations().unwrap();
    for (path, entry) in files.iter().filter(|(_, e)| e.kind.is_file()) {
        assert!(
            claimed
                .holders(&entry.id)
                .iter()
                .any(|(r, s)| *r == dmv_repo::ReplicaId([7; 16]) && s.present),
            "{} not claimed",
            String::from_utf8_lossy(path)
        );
    }
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died"
    );
    server.kill();
    fsck_clean(&t.join("hub"));
}

/// `dmv serve --stdio` (what ssh runs) refuses a request it cannot read
/// (a newer client's) and skips the frames of its body up to their end:
/// the next request on the same pipe is answered, so a client whose
/// upload of claims was refused sends the records instead.
#[test]
fn a_pipe_server_skips_the_body_of_a_request_it_cannot_read() {
    let top = setup();
    let t = top.path();
    let mut server = dmv_cmd(t)
        .args(["serve", "--stdio", "hub"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut sent = Vec::new();
    // A message whose request this server has no variant for.
    sent.extend_from_slice(&2u32.to_le_bytes());
    sent.extend_from_slice(&[1, 0x7f]);
    let mut body = FrameWriter::new(&mut sent);
    body.locations(&location_piece(&[0x10])).unwrap();
    body.end().unwrap();
    sent.extend(message(&Request::ListRefs));
    let mut stdin = server.stdin.take().unwrap();
    stdin.write_all(&sent).unwrap();
    drop(stdin);
    let mut answers = FrameReader::new(std::io::BufReader::new(server.stdout.take().unwrap()));
    let mut next = || match answers.next_frame() {
        Ok(Some(Frame::Message(bytes))) => dmv_sync::decode_message::<Response>(&bytes).unwrap(),
        other => panic!("not an answer: {other:?}"),
    };
    assert_eq!(
        next(),
        Response::Error {
            message: "unknown request".into()
        }
    );
    assert!(
        matches!(next(), Response::Refs { .. }),
        "the next request was not answered"
    );
    assert!(server.wait().unwrap().success());
    let log = dmv_repo::Repository::open(&t.join("hub"))
        .unwrap()
        .copies()
        .load_locations()
        .unwrap();
    assert!(
        log.holders(&ObjectId([0x10; 32])).is_empty(),
        "the skipped body was merged"
    );
}

#[test]
fn names_cannot_leave_the_map_and_only_write_tokens_push() {
    let top = setup();
    let t = top.path();
    let (mut server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let (port, url) = (server.port, server.url("hub"));
    let (hub, outside) = (t.join("hub"), t.join("outside"));
    let head = head_id(&t.join("a"));
    let outside_before = file_bytes(&outside);
    std::fs::write(t.join("secret"), "not for clients").unwrap();

    let list_refs = message(&Request::ListRefs);
    let answer = exchange(port, &post("/hub/dmv/list-refs", None, &list_refs));
    assert!(
        matches!(response(&answer), Response::Refs { .. }),
        "{answer:?}"
    );

    let encoded_outside: String = outside
        .to_string_lossy()
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect();
    let long_name = "n".repeat(20_000);
    let names = [
        "..%2Foutside",
        "..%2F..%2F..%2Foutside",
        "..%2Fsecret",
        "%2E%2E",
        "%2E%2E%2Foutside",
        "hub%2F..%2Foutside",
        "hub%2F..%2F..%2Fsecret",
        "..",
        "../outside",
        "hub/../outside",
        "./hub",
        "outside",
        "hub%00",
        "HUB",
        "%68ub%2F",
        encoded_outside.as_str(),
        long_name.as_str(),
    ];
    for name in names {
        for (verb, token, body) in [
            ("list-refs", None, list_refs.clone()),
            (
                "update-refs",
                Some(WRITER),
                writing_request("update-refs", head),
            ),
            ("put", Some(WRITER), writing_request("put", head)),
        ] {
            let answer = exchange(port, &post(&format!("/{name}/dmv/{verb}"), token, &body));
            // A name with slashes is no protocol path at all: a web page's shape, which takes no POST (405).
            let expected = if name.contains('/') {
                Some(405)
            } else {
                Some(404)
            };
            assert_eq!(
                answer.status,
                expected,
                "/{}/dmv/{verb}: {answer:?}",
                &name[..name.len().min(40)]
            );
        }
    }
    // Verbs are looked up exactly too.
    for path in [
        "/hub/dmv/..%2Fput",
        "/hub/dmv/put/..",
        "/hub/dmv/PUT",
        "/hub/dmv/",
    ] {
        let status = exchange(
            port,
            &post(path, Some(WRITER), &writing_request("put", head)),
        )
        .status;
        assert!(matches!(status, Some(404 | 405)), "{path}: {status:?}");
    }
    // Names the HTTP parser itself refuses, or longer than a head may be.
    for path in [
        "/..\\outside/dmv/list-refs".to_string(),
        format!("/{}/dmv/list-refs", "n".repeat(100_000)),
    ] {
        let status = exchange(port, &post(&path, None, &list_refs)).status;
        assert!(
            matches!(status, None | Some(400..=499)),
            "{}: {status:?}",
            &path[..40]
        );
    }
    assert_eq!(
        file_bytes(&outside),
        outside_before,
        "a request reached the unlisted repository"
    );
    assert_eq!(
        std::fs::read_to_string(t.join("secret")).unwrap(),
        "not for clients"
    );
    clone_is_exact(t, &url, &[]);

    // On an open server, every writing verb needs a write token: none is
    // 401, a read token or an unknown one 403, and the hub does not change.
    let hub_before = file_bytes(&hub);
    for verb in WRITING_VERBS {
        let body = writing_request(verb, head);
        let path = format!("/hub/dmv/{verb}");
        assert_eq!(
            exchange(port, &post(&path, None, &body)).status,
            Some(401),
            "{verb} without a token"
        );
        assert_eq!(
            exchange(port, &post(&path, Some(READER), &body)).status,
            Some(403),
            "{verb} with a read token"
        );
        assert_eq!(
            exchange(port, &post(&path, Some("forged"), &body)).status,
            Some(403),
            "{verb} with an unknown token"
        );
    }
    assert!(
        file_bytes(&hub) == hub_before,
        "a refused write changed the hub"
    );
    // The same request with the write token is carried out: the refusals were the tokens'.
    let answer = exchange(
        port,
        &post(
            "/hub/dmv/update-refs",
            Some(WRITER),
            &writing_request("update-refs", head),
        ),
    );
    assert_eq!(response(&answer), Response::RefsUpdated);
    assert_eq!(head_of(&hub, "refs/heads/evil"), head.to_hex());
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died"
    );
    clone_is_exact(t, &url, &[]);
    server.kill();
}

/// A self-signed certificate for 127.0.0.1 and localhost, written as PEM
/// files `NAME.pem` and `NAME.key` under `dir`.
fn self_signed(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

#[test]
fn https_with_a_self_signed_certificate_trusted_through_dmv_ca_cert() {
    let top = setup();
    let t = top.path();
    self_signed(t, "server");
    // Paths in the file are relative to it.
    let config = std::fs::read_to_string(t.join("server.toml")).unwrap();
    std::fs::write(
        t.join("server.toml"),
        format!("tls_cert = \"server.pem\"\ntls_key = \"server.key\"\n{config}"),
    )
    .unwrap();
    let (mut server, first) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    assert!(first.contains("listening on https://127.0.0.1:"), "{first}");
    let url = format!("https://127.0.0.1:{}/hub", server.port);
    let ca = t.join("server.pem").to_string_lossy().into_owned();
    let trusted = [("DMV_CA_CERT", ca.as_str())];

    // Not trusted: one line naming the certificate problem, and no directory.
    let out = dmv_cmd(t)
        .args(["clone", &url, "untrusted"])
        .env_remove("DMV_CA_CERT")
        .output()
        .unwrap();
    let line = one_line_error(&out);
    assert!(
        line.contains("certificate") && line.contains("DMV_CA_CERT"),
        "{line}"
    );
    assert!(!t.join("untrusted").exists());
    let out = dmv_cmd(t)
        .args(["clone", &url, "untrusted"])
        .env("DMV_CA_CERT", t.join("missing.pem"))
        .output()
        .unwrap();
    let line = one_line_error(&out);
    assert!(
        line.contains("DMV_CA_CERT") && line.contains("missing.pem"),
        "{line}"
    );

    // Trusted: a clone and a push, byte-exact.
    let b = t.join("b");
    ok(&dmv_cmd(t)
        .args(["clone", &url])
        .arg(&b)
        .envs(trusted)
        .output()
        .unwrap());
    assert_same_tree(&t.join("a"), &b);
    write_noise(&b.join("take.wav"), 3 << 20, 9);
    write_noise(&b.join("scenes/two.raw"), 700 << 10, 10);
    commit_all(&b, "second take");
    let out = dmv_cmd(&b)
        .args(["push"])
        .envs(trusted)
        .env("DMV_TOKEN", WRITER)
        .output()
        .unwrap();
    ok(&out);
    assert_eq!(
        head_of(&t.join("hub"), "refs/heads/main"),
        head_of(&b, "refs/heads/main")
    );
    let c = t.join("c");
    ok(&dmv_cmd(t)
        .args(["clone", &url])
        .arg(&c)
        .envs(trusted)
        .output()
        .unwrap());
    assert_same_tree(&b, &c);

    // Plain HTTP to the TLS port, and a connection that never says hello:
    // each is cut, and the server goes on.
    let mut s = connect(server.port);
    let _ = s.write_all(&post(
        "/hub/dmv/list-refs",
        None,
        &message(&Request::ListRefs),
    ));
    let got = read_until_closed(&mut s);
    assert!(
        !got.starts_with(b"HTTP/"),
        "plain HTTP was answered on the TLS port: {got:?}"
    );
    let start = Instant::now();
    read_until_closed(&mut connect(server.port));
    assert!(start.elapsed() < CUT_WITHIN);
    ok(&dmv_cmd(t)
        .args(["clone", &url])
        .arg(t.join("d"))
        .envs(trusted)
        .output()
        .unwrap());
    assert_same_tree(&b, &t.join("d"));
    server.kill();
    fsck_clean(&t.join("hub"));

    // The certificate and key given on the command line instead.
    std::fs::write(t.join("server.toml"), config).unwrap();
    let (mut server, first) = HttpServer::start_with_args(
        &t.join("server.toml"),
        &[
            "--tls-cert",
            &ca,
            "--tls-key",
            &t.join("server.key").to_string_lossy(),
        ],
    );
    assert!(first.contains("listening on https://"), "{first}");
    let url = format!("https://127.0.0.1:{}/hub", server.port);
    ok(&dmv_cmd(t)
        .args(["clone", &url])
        .arg(t.join("e"))
        .envs(trusted)
        .output()
        .unwrap());
    assert_same_tree(&b, &t.join("e"));
    server.kill();
}

/// Runs `dmv serve` expecting it to refuse to start.
fn serve_refuses(dir: &Path, args: &[&str]) -> String {
    let mut child = std::process::Command::new(bin())
        .current_dir(dir)
        .args([
            "serve",
            "--config",
            "server.toml",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > CUT_WITHIN {
            let _ = child.kill();
            let out: Output = child.wait_with_output().unwrap();
            panic!("dmv serve {args:?} started: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    one_line_error(&child.wait_with_output().unwrap())
}

#[test]
fn bad_tls_settings_stop_serve_in_one_line() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "--bare", "hub"]);
    std::fs::write(t.join("server.toml"), "[repos]\nhub = \"hub\"\n").unwrap();
    self_signed(t, "one");
    self_signed(t, "two");
    std::fs::write(
        t.join("garbage.pem"),
        "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    std::fs::write(t.join("text.pem"), "just some text\n").unwrap();

    let cases: [(&[&str], &str); 7] = [
        (
            &["--tls-cert", "missing.pem", "--tls-key", "one.key"],
            "missing.pem: cannot read the TLS certificate",
        ),
        (
            &["--tls-cert", "one.pem", "--tls-key", "missing.key"],
            "missing.key: cannot read the TLS key",
        ),
        (
            &["--tls-cert", "garbage.pem", "--tls-key", "one.key"],
            "garbage.pem: not a PEM TLS certificate",
        ),
        (
            &["--tls-cert", "text.pem", "--tls-key", "one.key"],
            "text.pem: no TLS certificate in it",
        ),
        (
            &["--tls-cert", "one.pem", "--tls-key", "one.pem"],
            "one.pem: no TLS private key in it",
        ),
        (
            &["--tls-cert", "one.pem", "--tls-key", "two.key"],
            "two.key: cannot serve TLS with this key",
        ),
        (&["--tls-cert", "one.pem"], "needs its key too"),
    ];
    for (args, expected) in cases {
        let line = serve_refuses(t, args);
        assert!(line.contains(expected), "{args:?}: {line}");
    }
    std::fs::write(
        t.join("server.toml"),
        "idle_timeout_secs = 0\n[repos]\nhub = \"hub\"\n",
    )
    .unwrap();
    let line = serve_refuses(t, &[]);
    assert!(line.contains("idle_timeout_secs = 0"), "{line}");
}

/// The server's peak resident memory so far, in bytes.
fn peak_rss(server: &HttpServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}

/// Runs `hello` over HTTP and says whether a real answer came.
fn hello_answers(port: u16) -> bool {
    let answer = exchange(
        port,
        &post(
            "/hub/dmv/hello",
            None,
            &message(&Request::Hello { version: VERSION }),
        ),
    );
    answer.status == Some(200) && matches!(response(&answer), Response::Hello { .. })
}

/// A JPEG of 128 bytes declaring 65535² pixels made the server allocate
/// 8 GiB and die; thumbnails and previews of it are now refused from its
/// header, and the server's memory stays small.
#[test]
fn a_jpeg_decompression_bomb_is_refused_from_its_header() {
    let top = setup();
    let t = top.path();
    let a = t.join("a");
    for (name, (w, h)) in [
        ("bomb.jpg", (65535, 65535)),
        ("wide.jpg", (30000, 30000)),
        ("camera.jpg", (16384, 16384)),
    ] {
        std::fs::write(a.join(name), dmv_testkit::jpeg_bomb(w, h)).unwrap();
    }
    commit_all(&a, "bombs");
    dmv(&a, &["push", "../hub"]);
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let ids: Vec<String> = dmv(&a, &["ls-tree", "HEAD"])
        .lines()
        .filter(|l| l.ends_with(".jpg"))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    for id in &ids {
        for page in ["thumb", "preview"] {
            let out = std::process::Command::new("curl")
                .args([
                    "-s",
                    "-w",
                    "\n%{http_code}",
                    "-H",
                    &format!("Authorization: Bearer {READER}"),
                    &format!("{base}/hub/{page}/{id}"),
                ])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(
                text.ends_with("\n404") && text.contains("too large to preview"),
                "{page} of {id}: {text}"
            );
        }
    }
    assert!(
        server.child.id() > 0 && hello_answers(server.port),
        "the server died"
    );
    let peak = peak_rss(&server);
    assert!(
        peak < 128 << 20,
        "the server's peak memory was {} MiB",
        peak >> 20
    );
    clone_is_exact(t, &server.url("hub"), &[]);
    security_report("jpeg-bomb", "decompression bombs (JPEG of 136 bytes declaring up to 65535² pixels), thumbnail and preview", 6, 6, Some(peak));
}

/// A write token dropped the server's only copy of a file on the client's
/// word that other copies existed; only the repository's admin may.
#[test]
fn a_write_token_cannot_drop_the_servers_data() {
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let url = server.url("hub");
    let meta = t.join("meta");
    ok(&dmv_cmd(t)
        .args(["clone", "--slice", "meta", &url])
        .arg(&meta)
        .env("DMV_TOKEN", WRITER)
        .output()
        .unwrap());
    let out = dmv_cmd(&meta)
        .args(["drop", "--from", "origin", "--force", "notes.txt"])
        .env("DMV_TOKEN", WRITER)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .lines()
            .last()
            .unwrap()
            .contains("needs its admin"),
        "{}",
        stderr(&out)
    );
    // The same request sent by hand.
    let chunks = chunk_ids(&t.join("hub"));
    let answer = exchange(
        server.port,
        &post(
            "/hub/dmv/drop-content",
            Some(WRITER),
            &message(&Request::DropContent { ids: chunks }),
        ),
    );
    assert!(error_message(&answer).contains("needs its admin"));
    fsck_clean(&t.join("hub"));
    clone_is_exact(t, &url, &[]);
    security_report(
        "drop-by-writer",
        "a write token dropping the server's data (CLI and by hand)",
        2,
        2,
        None,
    );
}

/// Objects for a push by hand: a chunk, a tree of `entries` and a commit of
/// it on top of `parent`, in the order the server takes them.
fn pushed_commit(
    entries: Vec<dmv_repo::store::object::TreeEntry>,
    chunk: &[u8],
    parent: ObjectId,
) -> (Vec<u8>, ObjectId) {
    use dmv_repo::store::object::{encode, Commit, Signature, TreeNode};
    use dmv_repo::store::{ObjectKind, StoredObject};
    let stored = |kind: ObjectKind, bytes: Vec<u8>| StoredObject {
        id: ObjectId::hash(kind, &bytes),
        kind,
        compression: 0,
        raw_len: bytes.len() as u32,
        payload: bytes,
    };
    let chunk = stored(ObjectKind::Chunk, chunk.to_vec());
    let entries: Vec<_> = entries
        .into_iter()
        .map(|mut e| {
            if e.id == ObjectId([0; 32]) {
                e.id = chunk.id;
            }
            e
        })
        .collect();
    let tree = stored(ObjectKind::Tree, encode(&TreeNode::Leaf(entries)));
    let who = Signature {
        name: "mallory".into(),
        email: "m@example.com".into(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let commit = stored(
        ObjectKind::Commit,
        encode(&Commit {
            tree: tree.id,
            parents: vec![parent],
            author: who.clone(),
            committer: who,
            message: "hostile tree".into(),
        }),
    );
    let mut body = message(&Request::Put);
    let mut frames = FrameWriter::new(&mut body);
    for obj in [&chunk, &tree, &commit] {
        frames.object(obj).unwrap();
    }
    frames.end().unwrap();
    (body, commit.id)
}

/// A push by hand of a commit on `parent` whose tree holds one file under
/// sixteen folders of 255-byte names: a path of 4,097 bytes.
fn deep_commit(parent: ObjectId) -> (Vec<u8>, ObjectId) {
    use dmv_repo::store::object::{encode, Commit, EntryKind, Signature, TreeEntry, TreeNode};
    use dmv_repo::store::{ObjectKind, StoredObject};
    let stored = |kind: ObjectKind, bytes: Vec<u8>| StoredObject {
        id: ObjectId::hash(kind, &bytes),
        kind,
        compression: 0,
        raw_len: bytes.len() as u32,
        payload: bytes,
    };
    let mut objects = vec![stored(ObjectKind::Chunk, b"deep".to_vec())];
    let mut child = TreeEntry {
        name: b"f".to_vec(),
        kind: EntryKind::File,
        id: objects[0].id,
        size: 4,
    };
    for _ in 0..16 {
        let tree = stored(ObjectKind::Tree, encode(&TreeNode::Leaf(vec![child])));
        child = TreeEntry {
            name: vec![b'd'; 255],
            kind: EntryKind::Dir,
            id: tree.id,
            size: 4,
        };
        objects.push(tree);
    }
    let root = stored(ObjectKind::Tree, encode(&TreeNode::Leaf(vec![child])));
    let who = Signature {
        name: "mallory".into(),
        email: "m@example.com".into(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let commit = stored(
        ObjectKind::Commit,
        encode(&Commit {
            tree: root.id,
            parents: vec![parent],
            author: who.clone(),
            committer: who,
            message: "deep".into(),
        }),
    );
    objects.extend([root, commit]);
    let mut body = message(&Request::Put);
    let mut frames = FrameWriter::new(&mut body);
    for obj in &objects {
        frames.object(obj).unwrap();
    }
    frames.end().unwrap();
    (body, objects.last().unwrap().id)
}

/// Pushes a commit of a tree of `entries` by hand: the upload is refused
/// with `expected` in the message, and main cannot be moved to the commit.
fn push_is_refused(
    port: u16,
    head: ObjectId,
    entries: Vec<dmv_repo::store::object::TreeEntry>,
    expected: &str,
) {
    let (body, commit) = pushed_commit(entries, b"evil!\n", head);
    let error = error_message(&exchange(port, &post("/hub/dmv/put", Some(WRITER), &body)));
    assert!(
        error.contains("refusing the upload") && error.contains(expected),
        "{expected}: {error}"
    );
    let update = message(&Request::UpdateRefs {
        updates: vec![WireRefUpdate {
            name: "refs/heads/main".into(),
            old: Some(head),
            new: Some(commit),
        }],
        who: "mallory".into(),
        message: "x".into(),
    });
    let error = error_message(&exchange(
        port,
        &post("/hub/dmv/update-refs", Some(WRITER), &update),
    ));
    assert!(error.contains("was not received"), "{error}");
}

/// A write token pushed a tree holding `.dmv/config` (every later clone
/// failed) and one claiming 4 EiB for a 6-byte file: each push is now held
/// to the checks a clone makes, and nothing of it lands.
#[test]
fn pushes_of_trees_a_clone_would_refuse_are_refused() {
    use dmv_repo::store::object::{EntryKind, TreeEntry};
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let (port, url) = (server.port, server.url("hub"));
    let hub = t.join("hub");
    let before = head_of(&hub, "refs/heads/main");
    let head = head_id(&t.join("a"));
    let entry = |name: &[u8], kind: EntryKind, size: u64| TreeEntry {
        name: name.to_vec(),
        kind,
        id: ObjectId([0; 32]),
        size,
    };
    let cases: Vec<(Vec<TreeEntry>, &str)> = vec![
        (vec![entry(b".dmv", EntryKind::File, 6)], "not a valid name"),
        (vec![entry(b".DMV", EntryKind::File, 6)], "not a valid name"),
        (vec![entry(b"..", EntryKind::File, 6)], "not a valid name"),
        (vec![entry(b"a/b", EntryKind::File, 6)], "not a valid name"),
        (
            vec![
                entry(b"b", EntryKind::File, 6),
                entry(b"a", EntryKind::File, 6),
            ],
            "out of order",
        ),
        (
            vec![
                entry(b"a", EntryKind::File, 6),
                entry(b"a", EntryKind::File, 6),
            ],
            "out of order",
        ),
        (
            vec![entry(b"huge.bin", EntryKind::File, 1 << 62)],
            "holds 6",
        ),
        (vec![entry(b"small.bin", EntryKind::File, 5)], "holds 6"),
        (vec![entry(b"dir", EntryKind::Dir, 6)], "is a chunk"),
    ];
    let tried = cases.len();
    for (entries, expected) in cases {
        push_is_refused(port, head, entries, expected);
    }
    // A well-formed tree made the same way is taken: the refusals are the checks'.
    let (body, commit) = pushed_commit(
        vec![entry(b"fine.txt", EntryKind::File, 6)],
        b"evil!\n",
        head,
    );
    assert!(matches!(
        response(&exchange(port, &post("/hub/dmv/put", Some(WRITER), &body))),
        Response::Stored { .. }
    ));
    assert_eq!(head_of(&hub, "refs/heads/main"), before);
    fsck_clean(&hub);
    clone_is_exact(t, &url, &[]);
    let _ = commit;
    security_report(
        "malformed-push",
        "pushes of trees a clone would refuse (names, order, kinds, sizes)",
        tried,
        tried,
        None,
    );
}

/// 530 clients each trickling a request body a byte at a time held 515
/// of the server's threads, and `hello`, pages and fetches waited until
/// they stopped. Requests other than uploads are now read without a
/// thread, so a clone goes through while they trickle; each is cut once
/// its request time is up.
#[test]
fn clients_trickling_request_bodies_hold_no_thread() {
    let top = setup();
    let t = top.path();
    std::fs::write(
        t.join("server.toml"),
        format!("idle_timeout_secs = 5\nrequest_timeout_secs = 20\nmax_connections = 2000\n[repos]\nhub = \"hub\"\n[tokens]\n\"{WRITER}\" = \"write\"\n"),
    )
    .unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let (port, url) = (server.port, server.url("hub"));
    let body = message(&Request::Has {
        ids: vec![ObjectId([7; 32]); 1000],
    });
    let started = Instant::now();
    let mut slow: Vec<TcpStream> = (0..530)
        .map(|_| {
            let mut s = connect(port);
            let mut request = post("/hub/dmv/has", None, &body);
            request.truncate(request.len() - body.len() + 1);
            s.write_all(&request).unwrap();
            s
        })
        .collect();
    let trickle = |slow: &mut Vec<TcpStream>, i: usize| {
        for s in slow.iter_mut() {
            let _ = s.write_all(&body[i..i + 1]);
        }
    };
    trickle(&mut slow, 1);
    clone_is_exact(t, &url, &[]);
    assert!(hello_answers(port));
    // Still trickling: the clone did not wait for them to end.
    trickle(&mut slow, 2);
    let still_open = slow
        .iter_mut()
        .filter(|s| {
            s.set_nonblocking(true).unwrap();
            let open =
                matches!((&**s).read(&mut [0u8; 64]), Err(e) if e.kind() == ErrorKind::WouldBlock);
            s.set_nonblocking(false).unwrap();
            open
        })
        .count();
    assert!(
        still_open >= 500 && started.elapsed() < Duration::from_secs(20),
        "{still_open} trickling connections open after {:?}",
        started.elapsed()
    );
    // Once the request time is up, each is answered 408 and closed.
    let mut s = slow.pop().unwrap();
    let mut i = 3;
    let answer = loop {
        let _ = s.write_all(&body[i..i + 1]);
        i += 1;
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(n) => break String::from_utf8_lossy(&buf[..n]).to_string(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => assert!(
                started.elapsed() < Duration::from_secs(60),
                "a trickled request was never cut"
            ),
            Err(e) => panic!("{e}"),
        }
    };
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    drop(slow);
    assert!(hello_answers(port));
    security_report(
        "slow-bodies",
        "request bodies trickled a byte at a time (530 at once; a clone went through)",
        530,
        530,
        Some(peak_rss(&server)),
    );
}

/// Sixteen connections each sending a 64 MiB frame took the server from
/// 162 MB to 1.22 GB. A request other than an upload is refused past
/// 8 MiB, and the server's memory stays bounded.
#[test]
fn request_bodies_are_bounded_in_size_and_together() {
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    let flood: Vec<std::thread::JoinHandle<Option<u16>>> = (0..16)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = connect(port);
                let len = (64u32 << 20) - 1;
                let head = format!(
                    "POST /hub/dmv/has HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
                    len as usize + 5
                );
                s.write_all(head.as_bytes()).ok()?;
                let mut frame = len.to_le_bytes().to_vec();
                frame.push(1);
                s.write_all(&frame).ok()?;
                let piece = vec![0u8; 1 << 20];
                for _ in 0..63 {
                    if s.write_all(&piece).is_err() {
                        break;
                    }
                }
                parse_answer(&read_until_closed(&mut s)).status
            })
        })
        .collect();
    let statuses: Vec<Option<u16>> = flood.into_iter().map(|h| h.join().unwrap()).collect();
    // A body that says it is too long is refused before any of it comes:
    // the server read 8 MiB of each before answering.
    let mut s = connect(port);
    s.write_all(
        b"POST /hub/dmv/has HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 67108868\r\n\r\n",
    )
    .unwrap();
    let mut answer = [0u8; 12];
    s.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 413", "answered before the body");
    assert!(
        statuses.iter().all(|s| s.is_none() || *s == Some(413)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&Some(413)), "{statuses:?}");
    let peak = peak_rss(&server);
    assert!(
        peak < 384 << 20,
        "the server's peak memory was {} MiB",
        peak >> 20
    );
    assert!(hello_answers(port));
    clone_is_exact(t, &server.url("hub"), &[]);
    security_report(
        "body-flood",
        "64 MiB request bodies, 16 at once",
        16,
        statuses.len(),
        Some(peak),
    );
}

/// 1,100 idle connections at 1,024 open files made `hello` wait for an
/// idle cut. Past `max_connections`, the quietest connection the server is
/// not working for (idle, or a request trickling in) is closed to make
/// room, at once, not at its timeout.
#[test]
fn past_the_connection_bound_idle_connections_make_room() {
    let top = setup();
    let t = top.path();
    std::fs::write(t.join("server.toml"), format!("idle_timeout_secs = 120\nmax_connections = 64\n[repos]\nhub = \"hub\"\n[tokens]\n\"{WRITER}\" = \"write\"\n")).unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    // Half send nothing, half have a request under way that trickles in.
    let body = message(&Request::ListRefs);
    let mut idle: Vec<TcpStream> = (0..200)
        .map(|i| {
            let mut s = connect(port);
            if i % 2 == 1 {
                let request = post("/hub/dmv/list-refs", None, &body);
                s.write_all(&request[..request.len() - 1]).unwrap();
            }
            s
        })
        .collect();
    let started = Instant::now();
    assert!(hello_answers(port));
    clone_is_exact(t, &server.url("hub"), &[]);
    // The first ones were closed to make room, long before their idle timeout.
    let closed = idle
        .iter_mut()
        .take(100)
        .filter(|s| {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            match (&**s).read(&mut [0u8; 16]) {
                Ok(0) => true,
                Err(e) => matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ),
                Ok(_) => false,
            }
        })
        .count();
    assert!(
        closed >= 90 && started.elapsed() < Duration::from_secs(100),
        "{closed} of the first 100 closed"
    );
    security_report(
        "connections",
        "idle and trickling connections past max_connections = 64 (the oldest cut at once to make room; hello and a clone went through)",
        200,
        136,
        Some(peak_rss(&server)),
    );
}

/// Wrong tokens are rationed per client address: after a burst, even the
/// right one waits (a guesser cannot tell which of its guesses was right).
#[test]
fn token_guessing_is_rationed() {
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    let list_refs = message(&Request::ListRefs);
    let statuses: Vec<Option<u16>> = (0..30)
        .map(|i| {
            exchange(
                port,
                &post(
                    "/hub/dmv/list-refs",
                    Some(&format!("guess-{i}")),
                    &list_refs,
                ),
            )
            .status
        })
        .collect();
    // Ten at once, then about one a second (the thirty take a fraction of one).
    assert!(
        (10..=12).contains(&statuses.iter().filter(|s| **s == Some(403)).count()),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().filter(|s| **s == Some(429)).count() >= 18,
        "{statuses:?}"
    );
    let login = |token: &str| {
        let body = format!("token={token}");
        let request = format!(
            "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        exchange(port, request.as_bytes()).status
    };
    assert_eq!(login(READER), Some(429));
    // Without a token, reading is open here and unaffected.
    assert!(hello_answers(port));
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(login(READER), Some(303));
    security_report(
        "guessing",
        "wrong tokens from one address (the 11th on answered 429)",
        30,
        30,
        None,
    );
}

/// A server's error text reached other users' terminals unescaped.
#[test]
fn terminal_escapes_from_a_server_are_shown_escaped() {
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let url = format!("http://127.0.0.1:{}/%1b%5d0%3bpwned%07", server.port);
    let out = dmv_cmd(t).args(["clone", &url, "x"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(!err.bytes().any(|b| b == 0x1b || b == 0x07), "{err:?}");
    assert!(err.contains("\\x1b]0;pwned\\x07"), "{err:?}");
    security_report(
        "escapes",
        "terminal escapes in a server's answer",
        1,
        1,
        None,
    );
}

/// Files holding tokens are their owner's alone, and serve says when its config is not.
#[test]
fn files_holding_tokens_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let top = setup();
    let t = top.path();
    dmv(
        &t.join("a"),
        &[
            "remote",
            "add",
            "hub",
            "http://127.0.0.1:1/hub",
            "--token",
            "sekrit",
        ],
    );
    let mode = std::fs::metadata(t.join("a/.dmv/config"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let mut child = std::process::Command::new(bin())
        .args(["serve", "--config"])
        .arg(t.join("server.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        first.starts_with("warning: ") && first.contains("chmod 600"),
        "{first}"
    );
}

/// A hostile peer serving a tree that claims 4 EiB for a 6-byte file (or
/// holds `.dmv`): a clone refuses it in one line and keeps nothing of it,
/// and `fsck --full` of the peer's repository names the object.
#[test]
fn trees_a_clone_would_refuse_are_refused_from_a_peer_and_found_by_fsck() {
    use dmv_repo::store::object::{encode, Commit, EntryKind, Signature, TreeEntry, TreeNode};
    use dmv_repo::store::ObjectKind;
    let top = setup();
    let t = top.path();
    for (name, entry_name, claimed) in [
        ("liar", &b"huge.bin"[..], 1u64 << 62),
        ("sneaky", &b".dmv"[..], 6),
    ] {
        let bare = t.join(name);
        dmv(t, &["init", "--bare", name]);
        let repo = dmv_repo::Repository::open(&bare).unwrap();
        let mut session = repo.store.begin_write().unwrap();
        let chunk = session.put_object(ObjectKind::Chunk, b"evil!\n").unwrap();
        let tree = session
            .put_object(
                ObjectKind::Tree,
                &encode(&TreeNode::Leaf(vec![TreeEntry {
                    name: entry_name.to_vec(),
                    kind: EntryKind::File,
                    id: chunk,
                    size: claimed,
                }])),
            )
            .unwrap();
        let who = Signature {
            name: "mallory".into(),
            email: "m@example.com".into(),
            time: 1_700_000_000,
            tz_minutes: 0,
        };
        let commit = session
            .put_object(
                ObjectKind::Commit,
                &encode(&Commit {
                    tree,
                    parents: vec![],
                    author: who.clone(),
                    committer: who,
                    message: "lies".into(),
                }),
            )
            .unwrap();
        session.finish().unwrap();
        drop(session);
        repo.refs
            .update(
                &[dmv_repo::RefUpdate {
                    name: "refs/heads/main".into(),
                    expected: None,
                    new: Some(commit),
                }],
                "mallory",
                "lies",
            )
            .unwrap();
        let out = dmv_out(&bare, &["fsck", "--full"]);
        assert!(!out.status.success(), "fsck --full of {name} is clean");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains(&tree.to_hex()) || said.contains(&commit.to_hex()),
            "{said}"
        );
        let out = dmv_cmd(t)
            .arg("clone")
            .arg(&bare)
            .arg(t.join(format!("{name}-clone")))
            .output()
            .unwrap();
        assert!(!out.status.success(), "a clone of {name} took it");
        let line = one_line_error(&out);
        assert!(line.contains("malformed"), "{line}");
    }
    security_report(
        "hostile-peer",
        "clones from a peer serving lying trees (4 EiB for 6 bytes, .dmv)",
        2,
        2,
        None,
    );
}

/// A login's cookie is a session id, marked `Secure` when the request came
/// over HTTPS through a trusted proxy; a proxy's forwarded headers are
/// believed only from the addresses `trusted_proxies` lists.
#[test]
fn sessions_are_secure_behind_a_trusted_proxy_and_untrusted_headers_are_ignored() {
    let top = setup();
    let t = top.path();
    for trusted in [false, true] {
        let proxies = if trusted {
            "trusted_proxies = [\"127.0.0.1\"]\n"
        } else {
            ""
        };
        std::fs::write(t.join("server.toml"), format!("{proxies}[repos]\nhub = \"hub\"\n[tokens]\n\"{WRITER}\" = \"write\"\n\"{READER}\" = \"read\"\n")).unwrap();
        let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
        let port = server.port;
        let body = format!("token={READER}");
        let login = format!(
            "POST /login HTTP/1.1\r\nHost: dmv.example.com\r\nOrigin: https://dmv.example.com\r\nX-Forwarded-Proto: https\r\nX-Forwarded-For: 203.0.113.7\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut s = connect(port);
        s.write_all(login.as_bytes()).unwrap();
        let raw = String::from_utf8_lossy(&read_until_closed(&mut s)).to_ascii_lowercase();
        let cookie = raw.lines().find(|l| l.starts_with("set-cookie:"));
        match trusted {
            // Believed: the page is https://dmv.example.com, the cookie Secure.
            true => {
                let cookie = cookie.unwrap_or_else(|| panic!("no session: {raw}"));
                assert!(
                    raw.starts_with("http/1.1 303")
                        && cookie.contains("dmv_session=")
                        && cookie.contains("; secure")
                        && cookie.contains("httponly"),
                    "{raw}"
                );
                assert!(!cookie.contains(READER), "{cookie}");
            }
            // Not believed: the request is plain HTTP from 127.0.0.1, and its Origin is not the server's.
            false => assert!(raw.starts_with("http/1.1 403") && cookie.is_none(), "{raw}"),
        }
        // Wrong tokens are rationed per forwarded address only from a trusted proxy.
        let guess = |from: &str| {
            let request = format!(
                "POST /hub/dmv/list-refs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\nX-Forwarded-For: {from}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            exchange(port, request.as_bytes()).status
        };
        for _ in 0..10 {
            assert_eq!(guess("203.0.113.8"), Some(403));
        }
        assert_eq!(guess("203.0.113.8"), Some(429));
        assert_eq!(guess("203.0.113.9"), Some(if trusted { 403 } else { 429 }));
    }
}

/// A server asked for an object it lacks answered `object … not found`
/// (issue 42): it says it does not hold it, and who else is known to.
#[test]
fn an_object_the_server_lacks_is_answered_with_who_holds_it() {
    let top = setup();
    let t = top.path();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let answer = exchange(
        server.port,
        &post(
            "/hub/dmv/get",
            Some(READER),
            &message(&Request::Get {
                ids: vec![ObjectId([7; 32])],
                chunks: true,
            }),
        ),
    );
    let said = error_message(&answer);
    assert!(
        said.contains(&format!("does not hold object {}", ObjectId([7; 32])))
            && said.contains("no other replica is known to hold it"),
        "{said}"
    );
}

/// A server in front of a bucket (issue 44, item 5) keeps a server's rules:
/// uploads a clone would refuse, a damaged object and a ref moved to a
/// commit the bucket lacks are refused, and nothing of them reaches the bucket.
#[test]
fn a_server_in_front_of_a_bucket_refuses_what_a_server_on_a_disk_refuses() {
    if lacks(&[Need::Minio]) {
        return;
    }
    use dmv_repo::store::object::{EntryKind, TreeEntry};
    use dmv_repo::store::{ObjectKind, StoredObject};
    let top = setup();
    let t = top.path();
    let minio = common::servers::S3Server::minio();
    minio.create_bucket("hostile");
    let mut push = dmv_cmd(&t.join("a"));
    minio.env(&mut push);
    ok(&push
        .env("AWS_ENDPOINT_URL", minio.endpoint())
        .args(["push", "s3://hostile/hub", "main"])
        .output()
        .unwrap());
    let config = t.join("bucket.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nhub = {{ url = \"s3://hostile/hub\", endpoint = \"{}\" }}\n[tokens]\n\"{WRITER}\" = \"write\"\n\"alice-1\" = {{ access = \"write\", user = \"alice\" }}\n",
            minio.endpoint()
        ),
    )
    .unwrap();
    let credentials = [
        ("AWS_ACCESS_KEY_ID", common::servers::MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", common::servers::MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let server = HttpServer::start_with_env(&config, 0, &credentials);
    let port = server.port;
    let packs_before = minio.list("hostile", "hub/packs/");
    let head = head_id(&t.join("a"));
    let entry = |name: &[u8], kind: EntryKind, size: u64| TreeEntry {
        name: name.to_vec(),
        kind,
        id: ObjectId([0; 32]),
        size,
    };
    let cases: Vec<(Vec<TreeEntry>, &str)> = vec![
        (vec![entry(b".dmv", EntryKind::File, 6)], "not a valid name"),
        (
            vec![
                entry(b"b", EntryKind::File, 6),
                entry(b"a", EntryKind::File, 6),
            ],
            "out of order",
        ),
        (
            vec![entry(b"huge.bin", EntryKind::File, 1 << 62)],
            "holds 6",
        ),
        (vec![entry(b"dir", EntryKind::Dir, 6)], "is a chunk"),
    ];
    let mut tried = 0;
    for (entries, expected) in cases {
        tried += 1;
        push_is_refused(port, head, entries, expected);
    }
    // A chunk whose bytes do not hash to its id.
    tried += 1;
    let mut body = message(&Request::Put);
    let mut frames = FrameWriter::new(&mut body);
    frames
        .object(&StoredObject {
            id: ObjectId([7; 32]),
            kind: ObjectKind::Chunk,
            compression: 0,
            raw_len: 5,
            payload: b"evil!".to_vec(),
        })
        .unwrap();
    frames.end().unwrap();
    let error = error_message(&exchange(port, &post("/hub/dmv/put", Some(WRITER), &body)));
    assert!(error.contains(&ObjectId([7; 32]).to_hex()), "{error}");
    // Without a write token, nothing is written at all.
    tried += 1;
    let (body, _) = pushed_commit(
        vec![entry(b"fine.txt", EntryKind::File, 6)],
        b"evil!\n",
        head,
    );
    assert_eq!(
        exchange(port, &post("/hub/dmv/put", None, &body)).status,
        Some(401)
    );
    assert_eq!(
        minio.list("hostile", "hub/packs/"),
        packs_before,
        "a refused upload reached the bucket"
    );
    // A well-formed tree made the same way is taken: the refusals are the checks'.
    assert!(matches!(
        response(&exchange(port, &post("/hub/dmv/put", Some(WRITER), &body))),
        Response::Stored { .. }
    ));
    assert_ne!(minio.list("hostile", "hub/packs/"), packs_before);
    // It drops notes.txt, which alice has locked: the ref does not move past her lock.
    tried += 1;
    let (_, commit) = pushed_commit(
        vec![entry(b"fine.txt", EntryKind::File, 6)],
        b"evil!\n",
        head,
    );
    let lock = message(&Request::LockPaths {
        paths: vec!["notes.txt".into()],
        replica: "alice@laptop".into(),
    });
    assert!(matches!(
        response(&exchange(
            port,
            &post("/hub/dmv/lock", Some("alice-1"), &lock)
        )),
        Response::PathLocks { .. }
    ));
    let update = message(&Request::UpdateRefs {
        updates: vec![WireRefUpdate {
            name: "refs/heads/main".into(),
            old: Some(head),
            new: Some(commit),
        }],
        who: "mallory".into(),
        message: "x".into(),
    });
    let error = error_message(&exchange(
        port,
        &post("/hub/dmv/update-refs", Some(WRITER), &update),
    ));
    assert!(
        error.contains("notes.txt") && error.contains("alice"),
        "{error}"
    );
    // Sixteen folders, each name one a tree may hold, make a path of 4,097 bytes: every later clone stopped at it.
    tried += 1;
    let (body, deep) = deep_commit(head);
    assert!(
        matches!(
            response(&exchange(port, &post("/hub/dmv/put", Some(WRITER), &body))),
            Response::Stored { .. }
        ),
        "each object is fine alone"
    );
    let update = message(&Request::UpdateRefs {
        updates: vec![WireRefUpdate {
            name: "refs/heads/deep".into(),
            old: None,
            new: Some(deep),
        }],
        who: "mallory".into(),
        message: "x".into(),
    });
    let error = error_message(&exchange(
        port,
        &post("/hub/dmv/update-refs", Some(WRITER), &update),
    ));
    assert!(error.contains("a path of more than 4096 bytes"), "{error}");
    clone_is_exact(t, &server.url("hub"), &[]);
    security_report(
        "bucket-relay-push",
        "a server in front of a bucket: malformed trees, a damaged chunk, a ref to a missing commit, no token, a change to a locked path, a path past 4,096 bytes",
        tried,
        tried,
        None,
    );
}

/// One write-token lock request for 40 paths with a 7.5 MB replica name
/// made `.dmv/locks` 300 MB, past what a read of it accepts: every later
/// push, `locks` and admin `unlock --force` failed until someone deleted
/// the file. Lock requests now have budgets (paths per call, replica and
/// holder names, each holder's share of the table), and the table is
/// never saved past what can be read back.
#[test]
fn a_lock_request_past_its_budgets_takes_nothing_and_pushes_go_on() {
    let top = setup();
    let t = top.path();
    let config = "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-mal\" = { access = \"write\", user = \"mallory\" }\n";
    std::fs::write(t.join("server.toml"), config).unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let lock = |paths: Vec<String>, replica: String| {
        exchange(
            server.port,
            &post(
                "/hub/dmv/lock",
                Some("tok-mal"),
                &message(&Request::LockPaths { paths, replica }),
            ),
        )
    };
    let forty: Vec<String> = (0..40).map(|i| format!("scenes/{i}.psd")).collect();
    let (mut tried, mut refused) = (0, 0);
    for (paths, replica, expected) in [
        (
            forty.clone(),
            "r".repeat(7_500_000),
            "replica name of 7500000 bytes",
        ),
        (
            (0..10_001).map(|i| format!("f{i}")).collect(),
            "laptop".to_string(),
            "10001 paths in one call",
        ),
    ] {
        tried += 1;
        let message = error_message(&lock(paths, replica));
        assert!(
            message.contains(expected) && message.contains("no lock was taken"),
            "{message}"
        );
        refused += 1;
    }
    assert!(
        !t.join("hub/.dmv/locks").exists()
            || std::fs::metadata(t.join("hub/.dmv/locks")).unwrap().len() < 4096
    );
    // One holder's share: call after call of long paths at the name bound stops at the budget.
    let long_path = |i: usize| format!("{}/{}/{i}.psd", "p".repeat(250), "q".repeat(250));
    let mut calls = 0;
    let stopped = loop {
        let answer = lock(
            (calls * 1000..(calls + 1) * 1000).map(long_path).collect(),
            "r".repeat(1024),
        );
        match response(&answer) {
            Response::PathLocks { .. } => calls += 1,
            Response::Error { message } => break message,
            other => panic!("{other:?}"),
        }
        assert!(calls < 100, "no budget stopped the holder");
    };
    tried += 1;
    assert!(stopped.contains("mallory's locks would take"), "{stopped}");
    refused += 1;
    let table = std::fs::metadata(t.join("hub/.dmv/locks")).unwrap().len();
    assert!(table <= 16 << 20, "the table is {table} bytes");
    // The repository still takes pushes and lists its locks.
    let a = t.join("a");
    std::fs::write(a.join("after.txt"), "still pushing\n").unwrap();
    commit_all(&a, "after");
    ok(&dmv_cmd(&a)
        .args(["push", &server.url("hub"), "main"])
        .env("DMV_TOKEN", "tok-mal")
        .output()
        .unwrap());
    assert!(
        matches!(response(&exchange(server.port, &post("/hub/dmv/list-locks", Some("tok-mal"), &message(&Request::ListLocks)))), Response::PathLocks { locks, .. } if locks.len() == calls * 1000)
    );
    security_report(
        "lock-budgets",
        "lock requests: a 7.5 MB replica name, 10,001 paths, one holder filling the table",
        tried,
        refused,
        Some(peak_rss(&server)),
    );
}

/// 520 anonymous downloads of a large raw that never read their socket
/// held every connection slot: new connections were closed for the whole
/// idle timeout (30 s at a time), since an answer in progress was never
/// chosen to make room. An answer its client has left untaken for a
/// second now counts as a wait on the client.
#[test]
fn downloads_that_never_read_make_room_for_a_clone() {
    let top = setup();
    let t = top.path();
    let a = t.join("a");
    write_noise(&a.join("big.raw"), 24 << 20, 7);
    commit_all(&a, "a large raw");
    dmv(&a, &["push", "../hub"]);
    std::fs::write(t.join("server.toml"), "idle_timeout_secs = 120\nmax_connections = 32\nread = \"open\"\nbrowse = \"open\"\n[repos]\nhub = \"hub\"\n").unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    let id = dmv(&a, &["ls-tree", "HEAD"])
        .lines()
        .find(|l| l.ends_with("big.raw"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let readers: Vec<TcpStream> = (0..48)
        .map(|_| {
            let mut s = connect(port);
            // Past the bound the server may close a connection to make
            // room before its request is written: a broken pipe here is
            // the server doing its job.
            let _ = write!(
                s,
                "GET /hub/raw/{id}/big.raw HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            );
            s
        })
        .collect();
    // Long enough for every answer to fill its socket and wait past the grace.
    std::thread::sleep(Duration::from_secs(3));
    // What the kernel holds for each unread answer: 3.4 MB each had been
    // written ahead (1.8 GB for 520), now 128 KiB and one piece at most.
    let unsent = server_send_queues(port);
    assert!(
        !unsent.is_empty() && unsent.iter().all(|q| *q <= 512 << 10),
        "bytes queued per answer: {unsent:?}"
    );
    let started = Instant::now();
    assert!(hello_answers(port), "a new connection was answered");
    clone_is_exact(t, &server.url("hub"), &[]);
    assert!(started.elapsed() < Duration::from_secs(100));
    drop(readers);
    security_report("slow-readers", "downloads of a 24 MiB raw that never read (48 against max_connections = 32; hello and a clone went through)", 48, 48, Some(peak_rss(&server)));
}

/// The send queues (bytes written and not yet taken by the client) of the
/// server's connections on `port`, from /proc/net/tcp.
fn server_send_queues(port: u16) -> Vec<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // Established connections (state 01) whose local end is the server's port.
            (fields.get(1)?.ends_with(&local) && *fields.get(3)? == "01")
                .then(|| u64::from_str_radix(fields.get(4)?.split(':').next()?, 16).ok())
                .flatten()
        })
        .collect()
}

/// `dmv replica --publish 'ssh://-oProxyCommand=…@h/p'` was accepted, and
/// two hops away a meta clone's `get` ran ssh with that as its first
/// argument (today's OpenSSH refused the host; older ones ran the
/// command); `dmv clone` of such a URL did the same. A user or host
/// beginning with `-` is refused wherever a URL is taken, and ssh always
/// gets `--` before the destination.
#[test]
fn an_ssh_user_that_is_an_option_never_reaches_ssh() {
    let top = setup();
    let t = top.path();
    let a = t.join("a");
    let (mut tried, mut refused) = (0, 0);
    for url in [
        "ssh://-oProxyCommand=touch${IFS}pwned@h/p",
        "ssh://-oProxyCommand=x/p",
        "ssh:// -oProxyCommand=x@h/p",
    ] {
        for args in [
            vec!["replica", "--publish", url],
            vec!["remote", "add", "evil", url],
            vec!["clone", url, "copy"],
        ] {
            tried += 1;
            let out = dmv_cmd(&a).args(&args).output().unwrap();
            assert!(
                !out.status.success() && stderr(&out).lines().count() == 1,
                "{args:?}: {}",
                stderr(&out)
            );
            refused += 1;
        }
    }
    assert!(!a.join("pwned").exists() && !t.join("pwned").exists());
    // A stand-in for ssh that records how it was called.
    let called = t.join("ssh-args");
    let fake = t.join("fake-ssh");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> {}\nexit 255\n",
            called.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = dmv_cmd(t)
        .args(["clone", "ssh://alice@studio-host/srv/photos", "copy"])
        .env("DMV_SSH", &fake)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let args = std::fs::read_to_string(&called).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let at = args
        .iter()
        .position(|a| *a == "alice@studio-host")
        .unwrap_or_else(|| panic!("{args:?}"));
    assert_eq!(args[at - 1], "--", "{args:?}");
    security_report(
        "ssh-urls",
        "ssh:// URLs whose user or host is an option, at publish, remote add and clone",
        tried,
        refused,
        None,
    );
}

/// A hostile server's 250,000 refs made a clone take 685 MB (a clone holds
/// about 1.1 KB a ref, and a 64 MiB frame lists two million short ones). A
/// server here answers `hello` as a repository would and `list-refs` with
/// 300,000 tags: the clone stops in one line.
#[test]
fn a_server_listing_more_refs_than_a_clone_takes_is_refused() {
    use dmv_sync::protocol::Response;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // The request's head and its (small) body.
            let path = loop {
                let Ok(n) = conn.read(&mut buf) else {
                    break String::new();
                };
                if n == 0 {
                    break String::new();
                }
                got.extend_from_slice(&buf[..n]);
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap_or(0));
                    while got.len() < end + 4 + len {
                        match conn.read(&mut buf) {
                            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                            _ => break,
                        }
                    }
                    break head.split_whitespace().nth(1).unwrap_or("").to_string();
                }
            };
            let answer = if path.ends_with("/hello") {
                Response::Hello {
                    version: VERSION,
                    chunking: Default::default(),
                    bare: true,
                    partial: false,
                }
            } else if path.ends_with("/list-refs") {
                let id = ObjectId([9; 32]);
                Response::Refs {
                    head: Some("refs/heads/main".into()),
                    refs: (0..300_000)
                        .map(|i| (format!("refs/tags/t{i}"), id))
                        .collect(),
                }
            } else {
                Response::Error {
                    message: "no".into(),
                }
            };
            let mut body = Vec::new();
            FrameWriter::new(&mut body).message(&answer).unwrap();
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/x-dmv-frames\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = conn
                .write_all(head.as_bytes())
                .and_then(|_| conn.write_all(&body));
        }
    });
    let top = tempfile::tempdir().unwrap();
    let out = dmv_cmd(top.path())
        .args(["clone", &format!("http://127.0.0.1:{port}/hub"), "copy"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        !out.status.success()
            && err.contains("the remote lists 300000 refs; at most 262144 are taken"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("dmv: ")).count(),
        1,
        "{err}"
    );
    security_report(
        "refs-answer",
        "a server listing 300,000 refs to a clone",
        1,
        1,
        None,
    );
}

/// Waits for news (`WaitRefs`, a watcher's long poll) held open, sent
/// with nothing held back (`since` the refs' current digest).
fn held_waits(port: u16, token: Option<&str>, since: [u8; 32], count: usize) -> Vec<TcpStream> {
    let request = post(
        "/hub/dmv/wait-refs",
        token,
        &message(&Request::WaitRefs { since, seconds: 55 }),
    );
    (0..count)
        .map(|_| {
            let mut s = connect(port);
            s.write_all(&request).unwrap();
            s
        })
        .collect()
}

/// Whether the server answered (or closed) `s` by now, without waiting.
fn answered(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let got = !matches!(s.peek(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    got
}

/// A long poll holds a request open for up to 55 s: one caller holds 16
/// at most (past them a wait is answered at once, as a poll), and a wait
/// is not work, so past `max_connections` a new client closes a wait
/// rather than being turned away.
#[test]
fn waits_for_news_are_bounded_per_caller_and_make_room() {
    let top = setup();
    let t = top.path();
    let config = format!(
        "idle_timeout_secs = 120\nmax_connections = 32\n[repos]\nhub = \"hub\"\n[tokens]\n\"{WRITER}\" = \"write\"\n\"waiter\" = {{ access = \"read\", user = \"wes\" }}\n"
    );
    std::fs::write(t.join("server.toml"), config).unwrap();
    let (server, _) = HttpServer::start_with_args(&t.join("server.toml"), &[]);
    let port = server.port;
    let at_once = exchange(
        port,
        &post(
            "/hub/dmv/wait-refs",
            None,
            &message(&Request::WaitRefs {
                since: [0; 32],
                seconds: 55,
            }),
        ),
    );
    let Response::RefsDigest { digest } = response(&at_once) else {
        panic!("{at_once:?}")
    };
    // One address without a token: 16 held, the rest answered at once with the digest as it is.
    let anonymous = held_waits(port, None, digest, 20);
    std::thread::sleep(Duration::from_secs(2));
    let (mut quick, held): (Vec<TcpStream>, Vec<TcpStream>) =
        anonymous.into_iter().partition(answered);
    assert_eq!((quick.len(), held.len()), (4, 16));
    for s in &mut quick {
        assert!(
            matches!(response(&parse_answer(&read_until_closed(s))), Response::RefsDigest { digest: d } if d == digest)
        );
    }
    // Another caller fills the server's 32 connections with waits: a new client still gets in.
    let wes = held_waits(port, Some("waiter"), digest, 16);
    std::thread::sleep(Duration::from_secs(2));
    assert!(!wes.iter().any(answered), "a user's own share is held");
    assert!(hello_answers(port), "a wait made room");
    // The closing is the server's task's: it reaches the socket a moment after hello's answer.
    let deadline = Instant::now() + CUT_WITHIN;
    let cut = loop {
        let cut = held.iter().chain(&wes).filter(|s| answered(s)).count();
        if cut >= 1 || Instant::now() > deadline {
            break cut;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(cut >= 1, "a wait was closed to make room");
    security_report(
        "waits",
        "long polls for news held open: 16 per caller, past them answered at once; past max_connections = 32 a wait is closed first",
        36,
        4 + cut,
        Some(peak_rss(&server)),
    );
}

/// One S3 request to a sealed repository's objects, as `token`'s holder
/// (the token in hex as the access key id, as dmv-bucket sends it).
fn sealed_request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    extra: &str,
    body: &[u8],
) -> Answer {
    let mut r = format!(
        "{method} /vault/objects/store{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}"
    );
    if !extra.contains("Content-Length") {
        r += &format!("Content-Length: {}\r\n", body.len());
    }
    if let Some(t) = token {
        let id: String = t.bytes().map(|b| format!("{b:02x}")).collect();
        r += &format!("Authorization: AWS4-HMAC-SHA256 Credential={id}/20261204/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\n");
    }
    let mut bytes = (r + "\r\n").into_bytes();
    bytes.extend_from_slice(body);
    exchange(port, &bytes)
}

/// A sealed repository's objects take only keys, bodies and parts within
/// their budgets (docs/security.md), writes only from write tokens, a
/// config only of an encrypted repository, and conditional writes as S3
/// does; nothing lands outside its folder.
#[test]
fn a_sealed_repository_takes_only_what_its_budgets_and_tokens_allow() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let config = format!(
        "[repos]\nvault = {{ sealed = \"vault\" }}\n[tokens]\n\"{WRITER}\" = {{ access = \"write\", user = \"w\" }}\n\"{READER}\" = {{ access = \"read\", user = \"r\" }}\n"
    );
    let server = HttpServer::start(&config, t, 0);
    let port = server.port;
    let w = Some(WRITER);
    let status = |a: Answer| a.status.unwrap_or(0);

    // A body declared larger than a PUT may be: refused before it is read.
    let started = Instant::now();
    let huge = "Content-Length: 6442450944\r\n";
    assert_eq!(status(sealed_request(port, "PUT", "/a", w, huge, b"")), 413);
    assert!(started.elapsed() < CUT_WITHIN);
    // Keys that would leave the folder or touch the server's own files.
    for key in [
        "/a/../../escaped",
        "/.lock",
        "/.tmp/x",
        "/a//b",
        "/%2E%2E/x",
    ] {
        let answer = sealed_request(port, "PUT", key, w, "", b"x");
        assert_eq!(status(answer), 400, "{key}");
    }
    assert!(!t.join("escaped").exists() && !t.join("x").exists());
    // Writes need a write token; reads take a read token.
    assert_eq!(
        status(sealed_request(port, "PUT", "/k", None, "", b"x")),
        403
    );
    assert_eq!(
        status(sealed_request(port, "PUT", "/k", Some(READER), "", b"x")),
        403
    );
    assert_eq!(
        status(sealed_request(port, "PUT", "/k", Some("guess"), "", b"x")),
        403
    );
    let put = sealed_request(port, "PUT", "/k", w, "", b"one");
    assert_eq!(put.status, Some(200));
    // On disk (docs/formats.md): the version the ETag names, then the bytes.
    let stored = std::fs::read(t.join("vault/k")).unwrap();
    let version: String = stored[..16].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!((stored.len(), &stored[16..]), (19, &b"one"[..]));
    assert_eq!(put.etag.as_deref(), Some(format!("\"{version}\"").as_str()));
    let got = sealed_request(port, "GET", "/k", Some(READER), "", b"");
    assert_eq!((got.status, got.body.as_slice()), (Some(200), &b"one"[..]));
    let got = sealed_request(port, "GET", "/k", Some(READER), "Range: bytes=1-1\r\n", b"");
    assert_eq!((got.status, got.body.as_slice()), (Some(206), &b"n"[..]));
    // Conditional writes as S3 answers them.
    let absent = "If-None-Match: *\r\n";
    assert_eq!(
        status(sealed_request(port, "PUT", "/k", w, absent, b"two")),
        412
    );
    let stale = "If-Match: \"00000000000000000000000000000000\"\r\n";
    assert_eq!(
        status(sealed_request(port, "PUT", "/k", w, stale, b"two")),
        412
    );
    assert_eq!(
        status(sealed_request(port, "PUT", "/k2", w, stale, b"two")),
        412
    );
    // A config of a plain repository is not taken.
    let plain = br#"{"format":1,"chunking":{},"id":"x"}"#;
    let answer = sealed_request(port, "PUT", "/dmv-repository.json", w, "", plain);
    assert_eq!(answer.status, Some(403));
    assert!(String::from_utf8_lossy(&answer.body).contains("only encrypted"));
    assert!(!t.join("vault/dmv-repository.json").exists());
    // Part numbers outside 1..=10000, and uploads never started.
    let started = sealed_request(port, "POST", "/big?uploads", w, "", b"");
    let body = String::from_utf8_lossy(&started.body).into_owned();
    let id = body
        .split("<UploadId>")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_else(|| panic!("{body}"))
        .to_string();
    for part in [0, 10_001] {
        let path = format!("/big?partNumber={part}&uploadId={id}");
        assert_eq!(status(sealed_request(port, "PUT", &path, w, "", b"x")), 400);
    }
    let path = format!("/big?partNumber=1&uploadId={}", "0".repeat(32));
    assert_eq!(status(sealed_request(port, "PUT", &path, w, "", b"x")), 404);
    let path = "/big?partNumber=1&uploadId=../../escaped";
    assert_eq!(status(sealed_request(port, "PUT", path, w, "", b"x")), 404);
    // The server still serves.
    assert_eq!(status(sealed_request(port, "GET", "/k", w, "", b"")), 200);
}
