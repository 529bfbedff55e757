//! Trees and files as a hostile replica could shape them: walks are bounded
//! by a documented depth and by node levels, never by the stack; a declared
//! length in the dirstate or the merge state never sizes an allocation.

use dmv_repo::store::object::{
    encode, Commit, EntryKind, FileNode, NodeEntry, Signature, TreeEntry, TreeNode,
};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind, WriteSession};
use dmv_repo::tree::{build, flatten, flatten_with, lookup, read_dir, MAX_PATH_DEPTH};
use dmv_repo::{Dirstate, EarlyCheckout, FlatEntry, Repository};

fn repo() -> (tempfile::TempDir, Repository) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
    (dir, repo)
}

fn leaf(entries: Vec<TreeEntry>) -> Vec<u8> {
    encode(&TreeNode::Leaf(entries))
}

/// A file `f` under `depth` nested directories `d`: its path has `depth` slashes.
fn deep_tree(s: &mut WriteSession<'_>, depth: usize) -> ObjectId {
    let file = s.put_object(ObjectKind::Chunk, b"deep").unwrap();
    let mut child = s
        .put_object(
            ObjectKind::Tree,
            &leaf(vec![TreeEntry {
                name: b"f".to_vec(),
                kind: EntryKind::File,
                id: file,
                size: 4,
            }]),
        )
        .unwrap();
    for _ in 0..depth {
        child = s
            .put_object(
                ObjectKind::Tree,
                &leaf(vec![TreeEntry {
                    name: b"d".to_vec(),
                    kind: EntryKind::Dir,
                    id: child,
                    size: 4,
                }]),
            )
            .unwrap();
    }
    child
}

fn deep_path(depth: usize) -> Vec<u8> {
    [b"d/".repeat(depth), b"f".to_vec()].concat()
}

#[test]
fn a_tree_100000_directories_deep_is_refused_with_one_line() {
    let (_dir, repo) = repo();
    let mut s = repo.store.begin_write().unwrap();
    let root = deep_tree(&mut s, 100_000);
    s.finish().unwrap();
    drop(s);
    let err = flatten(&repo.store, &root).unwrap_err().to_string();
    assert!(
        err.contains(&format!("nest more than {MAX_PATH_DEPTH} deep"))
            && !err.contains('\n')
            && err.len() < 300,
        "{err}"
    );
    let read = |id: &ObjectId| Ok(repo.store.read_decoded::<TreeNode>(id, ObjectKind::Tree)?);
    assert!(flatten_with(&read, &root).is_err());
    // One directory at a time still works, as deep as one cares to look.
    assert_eq!(read_dir(&repo.store, &root).unwrap().len(), 1);
    let found = lookup(&repo.store, &root, &b"d/".repeat(5000))
        .unwrap()
        .unwrap();
    assert_eq!(found.kind, EntryKind::Dir);
}

#[test]
fn the_depth_limit_is_exact_and_build_keeps_to_it() {
    let (_dir, repo) = repo();
    let mut s = repo.store.begin_write().unwrap();
    let deepest = deep_tree(&mut s, MAX_PATH_DEPTH);
    let too_deep = deep_tree(&mut s, MAX_PATH_DEPTH + 1);
    let file = FlatEntry {
        kind: EntryKind::File,
        id: ObjectId::hash(ObjectKind::Chunk, b"deep"),
        size: 4,
    };
    let path = deep_path(MAX_PATH_DEPTH);
    // Building the same flat map gives the same tree, without recursion.
    assert_eq!(build(&mut s, [(path.as_slice(), file)]).unwrap(), deepest);
    let longer = deep_path(MAX_PATH_DEPTH + 1);
    let err = build(&mut s, [(longer.as_slice(), file)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("nests more than {MAX_PATH_DEPTH} directories")) && err.len() < 300,
        "{err}"
    );
    s.finish().unwrap();
    drop(s);
    let flat = flatten(&repo.store, &deepest).unwrap();
    assert_eq!(flat.keys().collect::<Vec<_>>(), vec![&path]);
    assert!(flatten(&repo.store, &too_deep).is_err());
}

#[test]
fn build_groups_directories_like_before() {
    let (_dir, repo) = repo();
    let e = |n: u8| FlatEntry {
        kind: EntryKind::File,
        id: ObjectId([n; 32]),
        size: n as u64,
    };
    // Sorted bytewise: "a-c" < "a/b" < "a/d/e" < "a0" < "b".
    let flat: Vec<(&[u8], FlatEntry)> = vec![
        (b"a-c", e(1)),
        (b"a/b", e(2)),
        (b"a/d/e", e(3)),
        (b"a0", e(4)),
        (b"b", e(5)),
    ];
    let mut s = repo.store.begin_write().unwrap();
    let root = build(&mut s, flat.iter().copied()).unwrap();
    s.finish().unwrap();
    drop(s);
    let back = flatten(&repo.store, &root).unwrap();
    assert_eq!(
        back.into_iter().collect::<Vec<_>>(),
        flat.iter()
            .map(|(p, e)| (p.to_vec(), *e))
            .collect::<Vec<_>>()
    );
    let top = read_dir(&repo.store, &root).unwrap();
    let names: Vec<&[u8]> = top.iter().map(|e| e.name.as_slice()).collect();
    assert_eq!(names, vec![&b"a"[..], b"a-c", b"a0", b"b"]);
    assert_eq!(top[0].size, 5);
}

#[test]
fn inner_nodes_must_count_down_to_their_leaves() {
    let (_dir, repo) = repo();
    let mut s = repo.store.begin_write().unwrap();
    let file = s.put_object(ObjectKind::Chunk, b"x").unwrap();
    let leaf_id = s
        .put_object(
            ObjectKind::Tree,
            &leaf(vec![TreeEntry {
                name: b"x".to_vec(),
                kind: EntryKind::File,
                id: file,
                size: 1,
            }]),
        )
        .unwrap();
    // 100,000 inner nodes each claiming level 1 over the next.
    let mut chain = leaf_id;
    for _ in 0..100_000 {
        chain = s
            .put_object(
                ObjectKind::Tree,
                &encode(&TreeNode::Inner {
                    level: 1,
                    children: vec![NodeEntry { id: chain, size: 1 }],
                }),
            )
            .unwrap();
    }
    let level_zero = s
        .put_object(
            ObjectKind::Tree,
            &encode(&TreeNode::Inner {
                level: 0,
                children: vec![NodeEntry {
                    id: leaf_id,
                    size: 1,
                }],
            }),
        )
        .unwrap();
    let skips = s
        .put_object(
            ObjectKind::Tree,
            &encode(&TreeNode::Inner {
                level: 2,
                children: vec![NodeEntry {
                    id: leaf_id,
                    size: 1,
                }],
            }),
        )
        .unwrap();
    let good = s
        .put_object(
            ObjectKind::Tree,
            &encode(&TreeNode::Inner {
                level: 1,
                children: vec![NodeEntry {
                    id: leaf_id,
                    size: 1,
                }],
            }),
        )
        .unwrap();
    s.finish().unwrap();
    drop(s);
    let err = read_dir(&repo.store, &chain).unwrap_err().to_string();
    assert!(err.contains("has level 1 where level 0 belongs"), "{err}");
    assert!(flatten(&repo.store, &chain).is_err());
    let err = read_dir(&repo.store, &level_zero).unwrap_err().to_string();
    assert!(
        err.contains("has level 0 where a level above 0 belongs"),
        "{err}"
    );
    let err = read_dir(&repo.store, &skips).unwrap_err().to_string();
    assert!(err.contains("has level 0 where level 1 belongs"), "{err}");
    assert_eq!(read_dir(&repo.store, &good).unwrap().len(), 1);
}

#[test]
fn early_checkout_planning_survives_a_deep_chain_of_file_nodes() {
    let (_dir, repo) = repo();
    let mut s = repo.store.begin_write().unwrap();
    let mut file = s.put_object(ObjectKind::Chunk, b"chunk").unwrap();
    for i in 0..100_000 {
        file = s
            .put_object(
                ObjectKind::FileNode,
                &encode(&FileNode {
                    level: (i > 0) as u8,
                    entries: vec![NodeEntry {
                        id: file,
                        size: 5 << 20,
                    }],
                }),
            )
            .unwrap();
    }
    let tree = s
        .put_object(
            ObjectKind::Tree,
            &leaf(vec![TreeEntry {
                name: b"big".to_vec(),
                kind: EntryKind::File,
                id: file,
                size: 5 << 20,
            }]),
        )
        .unwrap();
    let sig = Signature {
        name: "A".into(),
        email: "a@x".into(),
        time: 0,
        tz_minutes: 0,
    };
    let commit = s
        .put_object(
            ObjectKind::Commit,
            &encode(&Commit {
                tree,
                parents: vec![],
                author: sig.clone(),
                committer: sig,
                message: "m".into(),
            }),
        )
        .unwrap();
    s.finish().unwrap();
    drop(s);
    let mut early = EarlyCheckout::new(&repo).unwrap();
    early.set_target(commit);
    early.plan(&|id: &ObjectId| repo.store.read(id).ok(), &|_| false);
    assert!(early.finish(&repo).unwrap().is_empty());
    let mut out = Vec::new();
    assert!(repo.store.write_content(&file, &mut out).is_err());
}

/// A get writes the files it fills as their data arrives, but plans at
/// most 65,536 of them: how many files a tree has is the committed
/// content's to choose, and each planned file is held in memory. The
/// rest are written from the store afterwards.
#[test]
fn an_early_checkout_plans_at_most_65536_files() {
    let (_dir, repo) = repo();
    let mut early = EarlyCheckout::new(&repo).unwrap();
    // 16 KiB each: a get leaves smaller files to the fill after the transfer.
    let bytes = |i: u32| i.to_le_bytes().repeat(4096);
    let id = |i: u32| ObjectId::from_hex(&blake3::hash(&bytes(i)).to_hex()).unwrap();
    let path = |i: u32| format!("f{i}").into_bytes();
    let files = (0..70_000u32).map(|i| {
        let entry = FlatEntry {
            kind: EntryKind::File,
            id: id(i),
            size: 16 << 10,
        };
        (path(i), entry)
    });
    // One-chunk files whose chunks are yet to arrive.
    early.plan_files(&|_: &ObjectId| None, &|_| false, files);
    for i in [0, 65_535, 65_536, 69_999] {
        early.chunk(&id(i), &bytes(i));
    }
    let staged = |i: u32, early: &mut EarlyCheckout| early.take_staged(&path(i), &id(i));
    let first = staged(0, &mut early).unwrap();
    assert_eq!(std::fs::read(first).unwrap(), bytes(0));
    assert!(staged(65_535, &mut early).is_some());
    assert!(staged(65_536, &mut early).is_none());
    assert!(staged(69_999, &mut early).is_none());
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `magic | version 1 | body | BLAKE3 of all before`, as the dirstate and the merge state are written.
fn checksummed(magic: &[u8], body: &[u8]) -> Vec<u8> {
    let mut bytes = magic.to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(body);
    let sum = blake3::hash(&bytes);
    bytes.extend_from_slice(sum.as_bytes());
    bytes
}

/// postcard decodes a vector or byte string of a declared length only as far
/// as the input holds (serde preallocates at most 1 MiB): a checksummed file
/// declaring 2^60 entries or a 2^60-byte path is an error, not an abort.
#[test]
fn huge_declared_lengths_in_the_dirstate_and_merge_state_are_errors() {
    if !dmv_testkit::in_small_address_space(
        "huge_declared_lengths_in_the_dirstate_and_merge_state_are_errors",
        1 << 30,
    ) {
        return;
    }
    let (_dir, repo) = repo();
    let huge = 1u64 << 60;
    // Entries: a huge count; then one entry whose path claims a huge length.
    let mut many = Vec::new();
    varint(huge, &mut many);
    let mut long_path = Vec::new();
    varint(1, &mut long_path);
    varint(huge, &mut long_path);
    long_path.extend_from_slice(b"abc");
    for body in [many, long_path] {
        let path = repo.dmv.join("dirstate");
        std::fs::write(&path, checksummed(b"DMVDIRS\0", &body)).unwrap();
        let Err(err) = Dirstate::load(&path) else {
            panic!("a dirstate declaring {huge} of something loaded")
        };
        let err = err.to_string();
        assert!(err.contains("corrupt") && !err.contains('\n'), "{err}");
    }
    // Merge state: head None, theirs, a label claiming a huge length; then a
    // valid label and target with a huge conflict count.
    let mut long_label = vec![0];
    long_label.extend_from_slice(&[7; 32]);
    varint(huge, &mut long_label);
    let mut many_conflicts = vec![0];
    many_conflicts.extend_from_slice(&[7; 32]);
    varint(1, &mut many_conflicts);
    many_conflicts.push(b'x');
    many_conflicts.extend_from_slice(&[8; 32]);
    varint(1, &mut many_conflicts);
    varint(huge, &mut many_conflicts);
    for body in [long_label, many_conflicts] {
        std::fs::write(
            repo.dmv.join("MERGE_STATE"),
            checksummed(b"DMVMERGE", &body),
        )
        .unwrap();
        let err = repo.merges().merge_state().unwrap_err().to_string();
        assert!(err.contains("corrupt") && !err.contains('\n'), "{err}");
    }
}

#[test]
fn large_directories_split_into_levels_read_back() {
    let (_dir, repo) = repo();
    // Enough entries for inner nodes of level 2 (about 256 leaves a node).
    let names: Vec<Vec<u8>> = (0..200_000u32)
        .map(|i| format!("d/f{i:07}").into_bytes())
        .collect();
    let flat: Vec<(&[u8], FlatEntry)> = names
        .iter()
        .map(|n| {
            (
                n.as_slice(),
                FlatEntry {
                    kind: EntryKind::File,
                    id: ObjectId::hash(ObjectKind::Chunk, n),
                    size: 1,
                },
            )
        })
        .collect();
    let mut s = repo.store.begin_write().unwrap();
    let root = build(&mut s, flat.iter().copied()).unwrap();
    s.finish().unwrap();
    drop(s);
    let dir = read_dir(&repo.store, &root).unwrap()[0].id;
    assert!(matches!(
        repo.store
            .read_decoded::<TreeNode>(&dir, ObjectKind::Tree)
            .unwrap(),
        TreeNode::Inner { level: 2.., .. }
    ));
    let back = flatten(&repo.store, &root).unwrap();
    assert_eq!(back.len(), flat.len());
    assert!(back
        .iter()
        .zip(&flat)
        .all(|((p, e), (q, f))| p.as_slice() == *q && e == f));
}

/// A tag object from a peer is checked as a commit is: its target must be a
/// commit and its name a tag's name, else it is refused before it is kept.
#[test]
fn a_tag_of_a_tree_or_with_a_bad_name_is_refused() {
    use dmv_repo::store::object::Tag;
    let tree = ObjectId([7; 32]);
    let commit = ObjectId([8; 32]);
    let facts = |id: &ObjectId| {
        let kind = if *id == tree {
            ObjectKind::Tree
        } else {
            ObjectKind::Commit
        };
        Ok(Some(dmv_repo::ObjectFacts { kind, size: 0 }))
    };
    let tagger = Signature {
        name: "Eve".into(),
        email: "eve@example.org".into(),
        time: 0,
        tz_minutes: 0,
    };
    let check = |target: ObjectId, name: &str| {
        let bytes = encode(&Tag {
            target,
            name: name.into(),
            tagger: tagger.clone(),
            message: "m\n".into(),
        });
        let id = ObjectId::hash(ObjectKind::Tag, &bytes);
        dmv_repo::check_object(&id, ObjectKind::Tag, &bytes, &mut |c| facts(c)).map(|_| ())
    };
    assert!(check(commit, "v1.0").is_ok());
    let err = check(tree, "v1.0").unwrap_err().to_string();
    assert!(err.contains("is a tree"), "{err}");
    for bad in ["", "../../heads/main", "a..b", "v1 final"] {
        assert!(check(commit, bad).is_err(), "{bad:?} taken as a tag's name");
    }
}
