//! Bounded by the data, not by what a damaged store or a hostile replica
//! declares: deep node chains and huge declared lengths are errors.

use dmv_store::object::{encode, Commit, FileNode, NodeEntry, Signature, MAX_OBJECT_SIZE};
use dmv_store::{ChunkParams, ObjectId, ObjectKind, Store, StoredObject, Tally};

fn open(dir: &std::path::Path) -> Store {
    Store::create(dir).unwrap();
    Store::open(dir, ChunkParams::default(), 64 << 20).unwrap()
}

fn write_content(store: &Store, id: &ObjectId) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    store
        .write_content(id, &mut out)
        .map(|_| out)
        .map_err(|e| e.to_string())
}

/// A chain of `depth` file nodes over one chunk, each at `level(i)` (i = 0 at the bottom).
fn node_chain(store: &Store, depth: usize, level: impl Fn(usize) -> u8) -> ObjectId {
    let mut s = store.begin_write().unwrap();
    let mut child = s.put_object(ObjectKind::Chunk, b"bottom").unwrap();
    for i in 0..depth {
        child = s
            .put_object(
                ObjectKind::FileNode,
                &encode(&FileNode {
                    level: level(i),
                    entries: vec![NodeEntry { id: child, size: 6 }],
                }),
            )
            .unwrap();
    }
    s.finish().unwrap();
    child
}

#[test]
fn a_deep_chain_of_file_nodes_is_an_error_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // 100,000 nodes all claiming level 1 (the recursive reader overflowed its stack).
    let root = node_chain(&store, 100_000, |i| (i > 0) as u8);
    let err = write_content(&store, &root).unwrap_err();
    assert!(err.contains("level") && !err.contains('\n'), "{err}");
    // fsck walks it without recursion and names every misplaced node.
    let report = store
        .verify_reachable(&[root], false, &Tally::silent())
        .unwrap();
    assert_eq!(report.objects_checked, 100_001);
    assert_eq!(report.damage.len(), 99_998);
    assert!(
        report.damage[0].detail.contains("file node of level 1 but"),
        "{}",
        report.damage[0].detail
    );
    // Levels that count down properly but skip one.
    let root = node_chain(&store, 3, |i| [0, 2, 3][i]);
    let err = write_content(&store, &root).unwrap_err();
    assert!(
        err.contains("has level 0 but node") && err.contains("of level 2"),
        "{err}"
    );
}

#[test]
fn the_deepest_well_formed_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Levels 0..=255, each node listing its child twice: 2^8 copies would already be plenty;
    // keep the content small by making only the top 8 levels double it.
    let mut s = store.begin_write().unwrap();
    let mut child = s.put_object(ObjectKind::Chunk, b"ab").unwrap();
    let mut size = 2u64;
    for level in 0..=255u8 {
        let copies = if level >= 248 { 2 } else { 1 };
        let entries = vec![NodeEntry { id: child, size }; copies];
        size *= copies as u64;
        child = s
            .put_object(ObjectKind::FileNode, &encode(&FileNode { level, entries }))
            .unwrap();
    }
    s.finish().unwrap();
    assert_eq!(write_content(&store, &child).unwrap(), b"ab".repeat(256));
    assert!(store
        .verify_reachable(&[child], false, &Tally::silent())
        .unwrap()
        .is_clean());
}

#[test]
fn a_level_zero_node_lists_chunks_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut s = store.begin_write().unwrap();
    let chunk = s.put_object(ObjectKind::Chunk, b"x").unwrap();
    let inner = s
        .put_object(
            ObjectKind::FileNode,
            &encode(&FileNode {
                level: 0,
                entries: vec![NodeEntry { id: chunk, size: 1 }],
            }),
        )
        .unwrap();
    let outer = s
        .put_object(
            ObjectKind::FileNode,
            &encode(&FileNode {
                level: 0,
                entries: vec![NodeEntry { id: inner, size: 1 }],
            }),
        )
        .unwrap();
    // A level-1 node whose entry is a chunk.
    let skips = s
        .put_object(
            ObjectKind::FileNode,
            &encode(&FileNode {
                level: 1,
                entries: vec![NodeEntry { id: chunk, size: 1 }],
            }),
        )
        .unwrap();
    s.finish().unwrap();
    assert_eq!(write_content(&store, &inner).unwrap(), b"x");
    let err = write_content(&store, &outer).unwrap_err();
    assert!(err.contains("not a chunk"), "{err}");
    let err = write_content(&store, &skips).unwrap_err();
    assert!(err.contains("not a file"), "{err}");
    assert!(store
        .verify_reachable(&[inner], false, &Tally::silent())
        .unwrap()
        .is_clean());
    for bad in [outer, skips] {
        let report = store
            .verify_reachable(&[bad], false, &Tally::silent())
            .unwrap();
        assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
        assert!(
            report.damage[0].detail.contains("lists it where a"),
            "{}",
            report.damage[0].detail
        );
    }
}

#[test]
fn fsck_checks_the_levels_of_tree_nodes() {
    use dmv_store::object::{EntryKind, TreeEntry, TreeNode};
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut s = store.begin_write().unwrap();
    let chunk = s.put_object(ObjectKind::Chunk, b"x").unwrap();
    let leaf = s
        .put_object(
            ObjectKind::Tree,
            &encode(&TreeNode::Leaf(vec![TreeEntry {
                name: b"x".to_vec(),
                kind: EntryKind::File,
                id: chunk,
                size: 1,
            }])),
        )
        .unwrap();
    let inner = |level: u8, id: ObjectId| {
        encode(&TreeNode::Inner {
            level,
            children: vec![NodeEntry { id, size: 1 }],
        })
    };
    let good = s.put_object(ObjectKind::Tree, &inner(1, leaf)).unwrap();
    let good2 = s.put_object(ObjectKind::Tree, &inner(2, good)).unwrap();
    let skips = s.put_object(ObjectKind::Tree, &inner(2, leaf)).unwrap();
    let zero = s.put_object(ObjectKind::Tree, &inner(0, leaf)).unwrap();
    let chunk_below = s.put_object(ObjectKind::Tree, &inner(1, chunk)).unwrap();
    s.finish().unwrap();
    drop(s);
    assert!(store
        .verify_reachable(&[good2], false, &Tally::silent())
        .unwrap()
        .is_clean());
    for bad in [skips, zero, chunk_below] {
        let report = store
            .verify_reachable(&[bad], false, &Tally::silent())
            .unwrap();
        assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
    }
}

#[test]
fn objects_larger_than_the_limit_are_refused_on_write_and_on_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let sig = Signature {
        name: "A".into(),
        email: "a@x".into(),
        time: 0,
        tz_minutes: 0,
    };
    let huge = Commit {
        tree: ObjectId([1; 32]),
        parents: vec![],
        author: sig.clone(),
        committer: sig,
        message: "m".repeat(MAX_OBJECT_SIZE),
    };
    let mut s = store.begin_write().unwrap();
    let err = s
        .put_object(ObjectKind::Commit, &encode(&huge))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("larger than the largest object") && err.contains("32 MiB"),
        "{err}"
    );

    // A received object declaring 4 GiB of content in a few compressed bytes.
    let payload = zstd::bulk::compress(b"tiny", 1).unwrap();
    let obj = StoredObject {
        id: ObjectId::hash(ObjectKind::Chunk, b"tiny"),
        kind: ObjectKind::Chunk,
        compression: 1,
        raw_len: u32::MAX,
        payload,
    };
    let err = obj.content().unwrap_err();
    assert!(err.contains("larger than the largest object"), "{err}");
    let err = s.put_stored(&obj).unwrap_err().to_string();
    assert!(err.contains("larger than the largest object"), "{err}");
    // As stored, uncompressed, declared and actual lengths past the limit.
    let raw = StoredObject {
        compression: 0,
        raw_len: (MAX_OBJECT_SIZE + 1) as u32,
        payload: vec![0; MAX_OBJECT_SIZE + 1],
        ..obj
    };
    assert!(s.put_verified(&raw).is_err());
    s.finish().unwrap();
}
