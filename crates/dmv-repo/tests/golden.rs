//! Golden vectors for the repository's own files (docs/formats.md):
//! `.dmv/dirstate` and `.dmv/MERGE_STATE`. Fixed inputs, their exact bytes
//! checked in as hex, and the golden bytes read back. A reordered field or
//! enum variant, a changed magic, version or checksum fails here. If a change
//! is intended, it is a format change: bump the version, keep reading the old
//! one (or say how to rebuild the file), and replace these vectors.

use std::collections::BTreeMap;

use dmv_repo::store::object::{encode, Commit, EntryKind, Signature};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind};
use dmv_repo::{
    tree, Conflict, ConflictedPath, DirEntry, Dirstate, FlatEntry, MergeKind, MergeOutcome,
    MergePhase, Repository, Silent,
};
use dmv_testkit::golden::{assert_golden, bytes_of};

fn id_hex(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex).unwrap()
}

// ---------------------------------------------------------------------------
// dirstate

fn dirstate_entries() -> BTreeMap<Vec<u8>, DirEntry> {
    let e = |kind, byte, size, mtime_ns, ctime_ns, ino, mode| DirEntry {
        kind,
        id: ObjectId([byte; 32]),
        size,
        mtime_ns,
        ctime_ns,
        ino,
        mode,
    };
    BTreeMap::from([
        (
            b"a.txt".to_vec(),
            e(
                EntryKind::File,
                0x11,
                6,
                1_700_000_000_123_456_789,
                1_700_000_001_000_000_000,
                4242,
                0o100644,
            ),
        ),
        (
            b"bin/run.sh".to_vec(),
            e(EntryKind::Executable, 0x22, 300, 1_000, -1, 7, 0o100755),
        ),
        (
            b"caf\xe9".to_vec(),
            e(EntryKind::Symlink, 0x33, 4, 0, 0, 1 << 40, 0o120777),
        ), // paths are bytes, not UTF-8
    ])
}

const DIRSTATE: &[&str] = &[
    "444d564449525300",                                                 // "DMVDIRS\0"
    "01000000",                                                         // version 1
    "03",                                                               // 3 entries, sorted by path
    "05 612e747874",                                                    // path "a.txt"
    "00",                                                               // EntryKind::File
    "1111111111111111111111111111111111111111111111111111111111111111", // id
    "06",                                                               // size 6
    "aab4aed8c7bfce972f",      // mtime_ns 1700000000123456789 (zigzag varint)
    "80a8a69ccebfce972f",      // ctime_ns 1700000001000000000
    "9221",                    // ino 4242 (varint)
    "a48302",                  // mode 0o100644
    "0a 62696e2f72756e2e7368", // path "bin/run.sh"
    "01",                      // EntryKind::Executable
    "2222222222222222222222222222222222222222222222222222222222222222",
    "ac02",        // size 300
    "d00f",        // mtime_ns 1000
    "01",          // ctime_ns -1
    "07",          // ino 7
    "ed8302",      // mode 0o100755
    "04 636166e9", // path "caf\xe9"
    "02",          // EntryKind::Symlink
    "3333333333333333333333333333333333333333333333333333333333333333",
    "04",                                                               // size 4
    "00",                                                               // mtime_ns 0
    "00",                                                               // ctime_ns 0
    "8080808080 20",                                                    // ino 2^40
    "ffc302",                                                           // mode 0o120777
    "7746f75fc69d727906caf290d941ed78f5b44eb108fcb22ffdd87d13d1c0981e", // BLAKE3 of everything before
];

#[test]
fn dirstate_golden() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dirstate");
    let ds = Dirstate {
        entries: dirstate_entries().into_iter().collect(),
        written_ns: 0,
        absent_base: None,
    };
    ds.save(&path).unwrap();
    assert_golden("dirstate", &std::fs::read(&path).unwrap(), DIRSTATE);
}

#[test]
fn golden_dirstate_decodes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dirstate");
    std::fs::write(&path, bytes_of(DIRSTATE)).unwrap();
    // `written_ns` is the file's own mtime, not part of its bytes.
    let loaded = Dirstate::load(&path).unwrap();
    assert_eq!(
        loaded
            .entries
            .iter()
            .map(|(p, e)| (p.to_vec(), e.clone()))
            .collect::<std::collections::BTreeMap<_, _>>(),
        dirstate_entries()
    );
    // Saving writes the same bytes again (the save streams, the load decodes in place).
    let again = tmp.path().join("again");
    loaded.save(&again).unwrap();
    assert_eq!(std::fs::read(&again).unwrap(), bytes_of(DIRSTATE));
}

// ---------------------------------------------------------------------------
// MERGE_STATE, made by a real merge with two conflicts

/// BLAKE3(0x01 || content) of the files below.
const BASE_A: &str = "4f2e942fe7ed8c4fd48ef773a643e7c9c0eef3020fbfd818ad1a202bba4901fb"; // "base\n"
const OURS_A: &str = "660ec796eaed3a13733c5a3a938b9a035f46a5c95a00f3780368e393187f8005"; // "ours\n"
const THEIRS_A: &str = "3c81a98f383bb0da6dcf7f7a814dcb205edb6a4c328e2d8820d12d3a64c23cd8"; // "theirs\n"
const OURS_B: &str = "380ac8279560ecd64d24b24c00cfd7855661b5b5bd8b74b1b1017fb4cfbd94ad"; // "b ours\n"
const THEIRS_B: &str = "271b95e9c4d314e9c144009dfe405551641d4d3d31a185256085ae34a734e257"; // "b theirs\n"
/// The commits (see `make_history`).
const OURS: &str = "85a0610bfdd81cb08db4aa2ed467db8010b6caae0868f4c56edc0a7ece60ae2d";
const THEIRS: &str = "20b255bae7f6db6ff8fc06d7a6b732df8477b89a68178b65f0a6dacbb6a84abd";
/// The merge result: a.txt and b.txt ours, c.txt theirs.
const TARGET: &str = "7e328addc90f05725b1d1cd1d877fd2c024e22aa375ac1710838b855dfe029a4";

/// Made by `Merges::merge`, so besides the file's layout it also pins
/// the ids of the objects it names (their encodings have their own vectors in
/// dmv-store) and which tree the merge writes out.
const MERGE_STATE: &[&str] = &[
    "444d564d45524745", // "DMVMERGE"
    "02000000",         // version 2
    "01",
    OURS,                // head: Some(ours)
    THEIRS,              // theirs
    "07 66656174757265", // label "feature"
    TARGET,              // target tree
    "01",                // MergePhase::Resolving
    "02",                // 2 conflicts, sorted by path
    "05 612e747874",     // path "a.txt"
    "01 00",
    BASE_A,
    "05", // base: Some(File, id, size 5)
    "01 00",
    OURS_A,
    "05", // ours: Some(File, id, size 5)
    "01 00",
    THEIRS_A,
    "07",            // theirs: Some(File, id, size 7)
    "05 622e747874", // path "b.txt"
    "00",            // base: None
    "01 00",
    OURS_B,
    "07", // ours: Some(File, id, size 7)
    "01 01",
    THEIRS_B,
    "09", // theirs: Some(Executable, id, size 9)
    "00", // MergeKind::Merge
    "131ea8333d4c31d6e3c82e64a62c31c40a639770eb82bf01ef67833a0ccb0b71", // BLAKE3 of everything before
];

/// The same state as written by version 1 (before `MergeKind`): still read.
const MERGE_STATE_V1: &[&str] = &[
    "444d564d45524745", // "DMVMERGE"
    "01000000",         // version 1
    "01",
    OURS,                // head: Some(ours)
    THEIRS,              // theirs
    "07 66656174757265", // label "feature"
    TARGET,              // target tree
    "01",                // MergePhase::Resolving
    "02",                // 2 conflicts, sorted by path
    "05 612e747874",     // path "a.txt"
    "01 00",
    BASE_A,
    "05", // base: Some(File, id, size 5)
    "01 00",
    OURS_A,
    "05", // ours: Some(File, id, size 5)
    "01 00",
    THEIRS_A,
    "07",            // theirs: Some(File, id, size 7)
    "05 622e747874", // path "b.txt"
    "00",            // base: None
    "01 00",
    OURS_B,
    "07", // ours: Some(File, id, size 7)
    "01 01",
    THEIRS_B,
    "09", // theirs: Some(Executable, id, size 9)
    "f549fb2c1149754703aef0493211e50edc9a547a2c4fcb9b0f0fc2ef9a3754b7", // BLAKE3 of everything before
];

fn sig(time: i64) -> Signature {
    Signature {
        name: "Ada".into(),
        email: "ada@example.org".into(),
        time,
        tz_minutes: 0,
    }
}

/// base: a.txt; ours: a.txt and b.txt changed/added; theirs: a.txt and b.txt
/// (executable) changed/added differently, c.txt added. Returns (ours tree, ours, theirs).
fn make_history(repo: &Repository) -> (ObjectId, ObjectId, ObjectId) {
    let mut s = repo.store.begin_write().unwrap();
    let mut file = |kind, content: &[u8]| FlatEntry {
        kind,
        id: s.put_object(ObjectKind::Chunk, content).unwrap(),
        size: content.len() as u64,
    };
    let base_a = file(EntryKind::File, b"base\n");
    let ours_a = file(EntryKind::File, b"ours\n");
    let theirs_a = file(EntryKind::File, b"theirs\n");
    let ours_b = file(EntryKind::File, b"b ours\n");
    let theirs_b = file(EntryKind::Executable, b"b theirs\n");
    let theirs_c = file(EntryKind::File, b"c\n");
    let base_tree = tree::build(&mut s, [(&b"a.txt"[..], base_a)]).unwrap();
    let ours_tree =
        tree::build(&mut s, [(&b"a.txt"[..], ours_a), (&b"b.txt"[..], ours_b)]).unwrap();
    let theirs_tree = tree::build(
        &mut s,
        [
            (&b"a.txt"[..], theirs_a),
            (&b"b.txt"[..], theirs_b),
            (&b"c.txt"[..], theirs_c),
        ],
    )
    .unwrap();
    let mut commit = |tree, parents, time, message: &str| {
        let c = Commit {
            tree,
            parents,
            author: sig(time),
            committer: sig(time),
            message: message.into(),
        };
        s.put_object(ObjectKind::Commit, &encode(&c)).unwrap()
    };
    let base = commit(base_tree, vec![], 1_700_000_000, "base\n");
    let ours = commit(ours_tree, vec![base], 1_700_000_100, "ours\n");
    let theirs = commit(theirs_tree, vec![base], 1_700_000_200, "theirs\n");
    s.finish().unwrap();
    drop(s);
    (ours_tree, ours, theirs)
}

fn expected_conflicts() -> Vec<Conflict> {
    let f = |kind, hex, size| {
        Some(FlatEntry {
            kind,
            id: id_hex(hex),
            size,
        })
    };
    vec![
        Conflict {
            path: b"a.txt".to_vec(),
            base: f(EntryKind::File, BASE_A, 5),
            ours: f(EntryKind::File, OURS_A, 5),
            theirs: f(EntryKind::File, THEIRS_A, 7),
        },
        Conflict {
            path: b"b.txt".to_vec(),
            base: None,
            ours: f(EntryKind::File, OURS_B, 7),
            theirs: f(EntryKind::Executable, THEIRS_B, 9),
        },
    ]
}

#[test]
fn merge_state_golden_and_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repository::init(&tmp.path().join("repo"), ChunkParams::default()).unwrap();
    let (ours_tree, ours, theirs) = make_history(&repo);
    assert_eq!(
        (ours.to_hex().as_str(), theirs.to_hex().as_str()),
        (OURS, THEIRS)
    );
    repo.checkout_tree(&ours_tree, &Silent).unwrap();
    repo.advance_head(None, ours, "golden").unwrap();

    let outcome = repo.merges().merge(theirs, "feature", &Silent).unwrap();
    // Text both sides changed on the same line: conflicts, marked in the files.
    let marked = |p: &[u8]| ConflictedPath {
        path: p.to_vec(),
        marked: true,
    };
    assert_eq!(
        outcome,
        MergeOutcome::Conflicts(vec![marked(b"a.txt"), marked(b"b.txt")])
    );
    let path = repo.dmv.join("MERGE_STATE");
    assert_golden("MERGE_STATE", &std::fs::read(&path).unwrap(), MERGE_STATE);

    // The golden bytes, read back (HEAD is still `ours`, so the state is current).
    std::fs::write(&path, bytes_of(MERGE_STATE)).unwrap();
    let state = repo
        .merges()
        .merge_state()
        .unwrap()
        .expect("a merge in progress");
    assert_eq!(state.head, Some(id_hex(OURS)));
    assert_eq!(state.theirs, id_hex(THEIRS));
    assert_eq!(state.label, "feature");
    assert_eq!(state.target, id_hex(TARGET));
    assert_eq!(state.phase, MergePhase::Resolving);
    assert_eq!(state.conflicts, expected_conflicts());
    assert_eq!(state.kind, MergeKind::Merge);

    // A state file of version 1 (a merge in progress across an upgrade) reads as the same merge.
    std::fs::write(&path, bytes_of(MERGE_STATE_V1)).unwrap();
    let old = repo
        .merges()
        .merge_state()
        .unwrap()
        .expect("a merge in progress");
    assert_eq!(
        (old.head, old.theirs, old.target, old.kind),
        (state.head, state.theirs, state.target, MergeKind::Merge)
    );
    assert_eq!(old.conflicts, expected_conflicts());
}
