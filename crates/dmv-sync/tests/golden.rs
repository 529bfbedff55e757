//! Golden vectors for the sync protocol (docs/protocol.md): every request and
//! response variant and every frame type, written with the crate's own
//! `FrameWriter` from fixed values, their exact bytes checked in as hex, and
//! the golden bytes read back. Messages are postcard, which encodes an enum
//! variant by its position: reordering a variant or a field changes the
//! bytes and fails here. If a change is intended, bump `protocol::VERSION`
//! and replace these vectors (a variant added at the end changes no
//! earlier bytes: see protocol.rs on when no bump is needed).

use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind, StoredObject};
use dmv_repo::PathLock;
use dmv_sync::protocol::{Request, Response, Verb, WireClaim, WireRefUpdate, VERSION};
use dmv_sync::{Frame, FrameReader, FrameWriter};
use dmv_testkit::golden::{assert_golden, bytes_of};

fn id(byte: u8) -> ObjectId {
    ObjectId([byte; 32])
}

const MAIN: &str = "0f 726566732f68656164732f6d61696e"; // "refs/heads/main"

/// Each request in a message frame: `length u32 LE | type 1 | postcard`.
fn requests() -> Vec<(Request, Vec<&'static str>)> {
    vec![
        (
            Request::Hello { version: 1 },
            vec!["03000000 01", "00", "01"],
        ), // variant 0, version 1
        (Request::ListRefs, vec!["02000000 01", "01"]),
        (
            Request::WalkCommits {
                wants: vec![id(0x11)],
                haves: vec![],
            },
            vec![
                "24000000 01",
                "02",
                "01",
                "1111111111111111111111111111111111111111111111111111111111111111",
                "00",
            ], // wants: [id], haves: []
        ),
        (
            Request::Has {
                ids: vec![id(0x22)],
            },
            vec![
                "23000000 01",
                "03",
                "01",
                "2222222222222222222222222222222222222222222222222222222222222222",
            ],
        ),
        (
            Request::Get {
                ids: vec![id(0x33)],
                chunks: false,
            },
            vec![
                "24000000 01",
                "04",
                "01",
                "3333333333333333333333333333333333333333333333333333333333333333",
                "00",
            ], // chunks: false
        ),
        (Request::Put, vec!["02000000 01", "05"]),
        (
            Request::UpdateRefs {
                updates: vec![WireRefUpdate {
                    name: "refs/heads/main".into(),
                    old: None,
                    new: Some(id(0x44)),
                }],
                who: "Ada <ada@example.org>".into(),
                message: "push".into(),
            },
            vec![
                "50000000 01",
                "06", // UpdateRefs
                "01", // 1 update
                MAIN, // name
                "00", // old: None
                "01 4444444444444444444444444444444444444444444444444444444444444444", // new: Some(id)
                "15 416461203c616461406578616d706c652e6f72673e",                       // who
                "04 70757368", // message "push"
            ],
        ),
        (Request::Replica, vec!["02000000 01", "07"]),
        (Request::GetLocations, vec!["02000000 01", "08"]),
        (
            Request::PutLocations { from: [0x77; 16] },
            vec!["12000000 01", "09", "77777777777777777777777777777777"],
        ), // from: 16 bytes, no length
        (
            Request::LockContent {
                ids: vec![id(0x88)],
                seconds: 600,
            },
            vec![
                "25000000 01",
                "0a",
                "01",
                "8888888888888888888888888888888888888888888888888888888888888888",
                "d804",
            ], // ids: [id], seconds 600
        ),
        (
            Request::UnlockContent { lock: "ab".into() },
            vec!["05000000 01", "0b", "02 6162"],
        ),
        (
            Request::DropContent {
                ids: vec![id(0x99)],
            },
            vec![
                "23000000 01",
                "0c",
                "01",
                "9999999999999999999999999999999999999999999999999999999999999999",
            ],
        ),
        (
            Request::LockPaths {
                paths: vec!["a.psd".into()],
                replica: "nas".into(),
            },
            vec!["0d000000 01", "0d", "01 05 612e707364", "03 6e6173"],
        ), // paths: ["a.psd"], replica "nas"
        (
            Request::UnlockPaths {
                paths: vec!["a.psd".into()],
                force: true,
            },
            vec!["0a000000 01", "0e", "01 05 612e707364", "01"],
        ), // paths, force true
        (Request::ListLocks, vec!["02000000 01", "0f"]),
        (
            Request::WaitRefs {
                since: [0xab; 32],
                seconds: 25,
            },
            vec![
                "23000000 01",
                "10",
                "abababababababababababababababababababababababababababababababab",
                "19",
            ], // since: 32 bytes, no length; seconds 25
        ),
        (
            Request::GetLocationClaims {
                trees: vec![id(0x44)],
            },
            vec![
                "23000000 01",
                "11",
                "01",
                "4444444444444444444444444444444444444444444444444444444444444444",
            ], // trees: [id]
        ),
        (
            Request::PutLocationClaims {
                from: [0x5a; 16],
                claims: vec![WireClaim {
                    tree: id(0x44),
                    replica: [0x66; 16],
                    time_ns: 300,
                }],
            },
            vec![
                "45000000 01",
                "12",
                "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a",
                "01",
                "4444444444444444444444444444444444444444444444444444444444444444",
                "66666666666666666666666666666666",
                "ac02",
            ], // from: 16 bytes; claims: [tree, replica, time 300 as a varint]
        ),
    ]
}

fn responses() -> Vec<(Response, Vec<&'static str>)> {
    vec![
        (
            Response::Hello {
                version: 1,
                chunking: ChunkParams::default(),
                bare: false,
                partial: true,
            },
            vec![
                "0e000000 01",
                "00",
                "01",
                "808001 808004 808010",
                "00",
                "01",
            ], // version 1, chunking {16 KiB, 64 KiB, 256 KiB}, bare false, partial true
        ),
        (
            Response::Refs {
                head: Some("refs/heads/main".into()),
                refs: vec![("refs/heads/main".into(), id(0x55))],
            },
            vec![
                "44000000 01",
                "01",
                "01",
                MAIN,
                "01",
                MAIN,
                "5555555555555555555555555555555555555555555555555555555555555555",
            ], // head: Some(name); refs: [(name, id)]
        ),
        (
            Response::Commits {
                ids: vec![id(0x66)],
            },
            vec![
                "23000000 01",
                "02",
                "01",
                "6666666666666666666666666666666666666666666666666666666666666666",
            ],
        ),
        (
            Response::Has {
                present: vec![true, false],
            },
            vec!["05000000 01", "03", "02 01 00"],
        ),
        (
            Response::Stored {
                objects: 3,
                bytes: 300,
            },
            vec!["05000000 01", "04", "03", "ac02"],
        ),
        (Response::RefsUpdated, vec!["02000000 01", "05"]),
        (
            Response::Rejected {
                name: "refs/heads/main".into(),
                found: Some(id(0x77)),
            },
            vec![
                "33000000 01",
                "06",
                MAIN,
                "01 7777777777777777777777777777777777777777777777777777777777777777",
            ],
        ),
        (
            Response::Error {
                message: "no".into(),
            },
            vec!["05000000 01", "07", "02 6e6f"],
        ),
        (
            Response::Replica {
                id: [0x12; 16],
                name: "nas".into(),
            },
            vec![
                "16000000 01",
                "08",
                "12121212121212121212121212121212",
                "03 6e6173",
            ],
        ), // id: 16 bytes, name
        (Response::LocationsMerged, vec!["02000000 01", "09"]),
        (
            Response::ContentLocked {
                lock: "ab".into(),
                held: vec![true],
            },
            vec!["07000000 01", "0a", "02 6162", "01 01"],
        ),
        (Response::Unlocked, vec!["02000000 01", "0b"]),
        (
            Response::ContentDropped {
                freed_bytes: 5,
                locked: vec![id(0xaa)],
            },
            vec![
                "24000000 01",
                "0c",
                "05",
                "01 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            ], // freed 5, locked: [id]
        ),
        (
            Response::PathLocks {
                you: Some("al".into()),
                locks: vec![PathLock {
                    path: "a.psd".into(),
                    owner: "al".into(),
                    replica: "nas".into(),
                    since: 300,
                }],
            },
            vec![
                "16000000 01",
                "0d",
                "01 02 616c",
                "01",
                "05 612e707364",
                "02 616c",
                "03 6e6173",
                "ac02",
            ], // you: Some("al"); locks: [{path, owner, replica, since 300}]
        ),
        (
            Response::RefsDigest { digest: [0xcd; 32] },
            vec![
                "22000000 01",
                "0e",
                "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
            ],
        ), // digest: 32 bytes, no length
        (
            Response::LocationClaims {
                claims: vec![WireClaim {
                    tree: id(0x55),
                    replica: [0x66; 16],
                    time_ns: 300,
                }],
            },
            vec![
                "35000000 01",
                "0f",
                "01",
                "5555555555555555555555555555555555555555555555555555555555555555",
                "66666666666666666666666666666666",
                "ac02",
            ],
        ), // claims: [{tree, replica: 16 bytes, time 300}]
    ]
}

fn message_frame<T: serde::Serialize>(msg: &T) -> Vec<u8> {
    let mut out = Vec::new();
    FrameWriter::new(&mut out).message(msg).unwrap();
    out
}

fn only_message(bytes: &[u8]) -> Vec<u8> {
    let mut r = FrameReader::new(bytes);
    let Some(Frame::Message(body)) = r.next_frame().unwrap() else {
        panic!("not a message frame")
    };
    assert!(r.next_frame().unwrap().is_none(), "one frame only");
    body
}

#[test]
fn protocol_version_and_verbs_are_fixed() {
    assert_eq!(VERSION, 7);
    // Verbs are not serialized; their names are the HTTP paths (`POST /NAME/dmv/VERB`).
    let verbs = [
        (Verb::Hello, "hello"),
        (Verb::ListRefs, "list-refs"),
        (Verb::WalkCommits, "walk-commits"),
        (Verb::Has, "has"),
        (Verb::Get, "get"),
        (Verb::Put, "put"),
        (Verb::UpdateRefs, "update-refs"),
        (Verb::Replica, "replica"),
        (Verb::GetLocations, "get-locations"),
        (Verb::PutLocations, "put-locations"),
        (Verb::LockContent, "lock-content"),
        (Verb::UnlockContent, "unlock-content"),
        (Verb::DropContent, "drop-content"),
        (Verb::LockPaths, "lock"),
        (Verb::UnlockPaths, "unlock"),
        (Verb::ListLocks, "list-locks"),
        (Verb::WaitRefs, "wait-refs"),
        (Verb::GetLocationClaims, "get-location-claims"),
        (Verb::PutLocationClaims, "put-location-claims"),
    ];
    for (verb, name) in verbs {
        assert_eq!(verb.name(), name);
        assert_eq!(Verb::from_name(name), Some(verb));
    }
    let of_requests: Vec<Verb> = requests().iter().map(|(r, _)| r.verb()).collect();
    assert_eq!(of_requests, verbs.map(|(v, _)| v));
}

#[test]
fn request_messages_golden() {
    for (request, parts) in requests() {
        let what = format!("{:?}", request.verb());
        assert_golden(&what, &message_frame(&request), &parts);
        let decoded: Request = postcard::from_bytes(&only_message(&bytes_of(&parts))).unwrap();
        assert_eq!(decoded, request, "{what}: decoding the golden bytes");
    }
}

#[test]
fn response_messages_golden() {
    for (response, parts) in responses() {
        let what = format!("{response:?}");
        assert_golden(&what, &message_frame(&response), &parts);
        let decoded: Response = postcard::from_bytes(&only_message(&bytes_of(&parts))).unwrap();
        assert_eq!(decoded, response, "{what}: decoding the golden bytes");
    }
}

/// BLAKE3(0x01 || "hello\n"), as in dmv-store's golden vectors.
const HELLO_ID: &str = "60200926b98f21cddd0dc4fb5c05e6a4d7ab691b9c8b01295ebefe1daca3bbe5";

const FRAMES: &[&str] = &[
    // object frame
    "2d000000",     // length 45
    "02",           // type 2: object
    "01",           // kind chunk
    "00",           // compression none
    "06000000",     // raw length 6
    HELLO_ID,       // id
    "68656c6c6f0a", // payload "hello\n"
    // chunk stub frame
    "25000000", // length 37
    "03",       // type 3: chunk stub
    HELLO_ID,
    "06000000", // raw length 6
    // locations frame
    "03000000", // length 3
    "05",       // type 5: locations
    "abcd",     // a piece of a location log (bytes as they come: the receiver checks them)
    // end frame
    "01000000", // length 1
    "04",       // type 4: end
];

#[test]
fn frames_golden() {
    let id = ObjectId::from_hex(HELLO_ID).unwrap();
    let obj = StoredObject {
        id,
        kind: ObjectKind::Chunk,
        compression: 0,
        raw_len: 6,
        payload: b"hello\n".to_vec(),
    };
    let mut out = Vec::new();
    let mut w = FrameWriter::new(&mut out);
    w.object(&obj).unwrap();
    w.chunk_stub(&id, 6).unwrap();
    w.locations(&[0xab, 0xcd]).unwrap();
    w.end().unwrap();
    assert_golden("object, chunk stub, locations and end frames", &out, FRAMES);

    let golden = bytes_of(FRAMES);
    let mut r = FrameReader::new(&golden[..]);
    assert_eq!(r.next_frame().unwrap(), Some(Frame::Object(obj)));
    assert_eq!(
        r.next_frame().unwrap(),
        Some(Frame::ChunkStub { id, raw_len: 6 })
    );
    assert_eq!(
        r.next_frame().unwrap(),
        Some(Frame::Locations(vec![0xab, 0xcd]))
    );
    assert_eq!(r.next_frame().unwrap(), Some(Frame::End));
    assert_eq!(r.next_frame().unwrap(), None);
}

/// `WaitRefs` compares this digest: pinned, so a server and a client of
/// different builds agree on whether the refs moved.
#[test]
fn refs_digest_golden() {
    let digest = dmv_sync::protocol::refs_digest(
        Some("refs/heads/main"),
        &[("refs/heads/main".into(), id(0x55))],
    );
    let mut expected = blake3::Hasher::new();
    expected
        .update(b"refs/heads/main\0refs/heads/main\0")
        .update(&[0x55; 32]);
    assert_eq!(digest, *expected.finalize().as_bytes());
    assert_ne!(
        digest,
        dmv_sync::protocol::refs_digest(None, &[("refs/heads/main".into(), id(0x55))]),
        "HEAD counts"
    );
    assert_eq!(
        hex(&dmv_sync::protocol::refs_digest(None, &[])),
        "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
