//! Repositories shaped by a hostile replica: a tree 100,000 directories deep
//! and a file whose node chain is 100,000 nodes deep. Every command that
//! walks them stops with one line on stderr and exit code 128: never a
//! signal, never a stack overflow.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use common::needs::{lacks, Need};
use common::*;
use dmv_repo::store::object::{
    encode, Commit, EntryKind, FileNode, NodeEntry, Signature, TreeEntry, TreeNode,
};
use dmv_repo::store::{ObjectId, ObjectKind, WriteSession};
use dmv_repo::Repository;

const DEPTH: usize = 100_000;

fn leaf(
    s: &mut WriteSession<'_>,
    name: &[u8],
    kind: EntryKind,
    id: ObjectId,
    size: u64,
) -> ObjectId {
    s.put_object(
        ObjectKind::Tree,
        &encode(&TreeNode::Leaf(vec![TreeEntry {
            name: name.to_vec(),
            kind,
            id,
            size,
        }])),
    )
    .unwrap()
}

/// Writes a commit of `tree` on top of HEAD with the store's public calls
/// (the test plays the hostile replica); returns its id.
fn commit_tree(
    repo: &Repository,
    build: impl FnOnce(&mut WriteSession<'_>) -> ObjectId,
) -> ObjectId {
    let mut s = repo.store.begin_write().unwrap();
    let tree = build(&mut s);
    let sig = Signature {
        name: "Mallory".into(),
        email: "m@x".into(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let commit = Commit {
        tree,
        parents: repo.head_commit().unwrap().into_iter().collect(),
        author: sig.clone(),
        committer: sig,
        message: "hostile".into(),
    };
    let id = s.put_object(ObjectKind::Commit, &encode(&commit)).unwrap();
    s.finish().unwrap();
    id
}

/// A file `f` under 100,000 nested directories `d`.
fn deep_dirs(s: &mut WriteSession<'_>) -> ObjectId {
    let file = s.put_object(ObjectKind::Chunk, b"deep").unwrap();
    let mut tree = leaf(s, b"f", EntryKind::File, file, 4);
    for _ in 0..DEPTH {
        tree = leaf(s, b"d", EntryKind::Dir, tree, 4);
    }
    tree
}

/// A 5 MiB file `big` (large enough for a clone to write it early) whose
/// content is a chain of 100,000 file nodes all claiming level 1.
fn deep_file_nodes(s: &mut WriteSession<'_>) -> ObjectId {
    let mut node = s.put_object(ObjectKind::Chunk, b"chunk").unwrap();
    for i in 0..DEPTH {
        node = s
            .put_object(
                ObjectKind::FileNode,
                &encode(&FileNode {
                    level: (i > 0) as u8,
                    entries: vec![NodeEntry {
                        id: node,
                        size: 5 << 20,
                    }],
                }),
            )
            .unwrap();
    }
    leaf(s, b"big", EntryKind::File, node, 5 << 20)
}

/// A repository whose `main` holds one normal commit and whose branch
/// `evil` adds the hostile one on top.
fn hostile_repo(hostile: fn(&mut WriteSession<'_>) -> ObjectId) -> tempfile::TempDir {
    let dir = new_repo();
    std::fs::write(dir.path().join("a.txt"), "fine\n").unwrap();
    dmv(dir.path(), &["add", "a.txt"]);
    dmv(dir.path(), &["commit", "-m", "fine"]);
    let id = commit_tree(&Repository::open(dir.path()).unwrap(), hostile);
    dmv(dir.path(), &["branch", "evil", &id.to_hex()]);
    dir
}

/// Makes `evil` the branch HEAD names, so status walks it and a clone checks it out.
fn head_on_evil(dir: &Path) {
    std::fs::write(dir.join(".dmv/HEAD"), "ref: refs/heads/evil\n").unwrap();
}

/// Exit code 128 (not a signal), and one short error line on stderr, the
/// last one (a clone reports the refs it fetched before it), that says `why`.
fn refused(out: &Output, why: &str) {
    let err = stderr(out);
    assert_eq!(out.status.signal(), None, "killed by a signal: {err}");
    assert_eq!(out.status.code(), Some(128), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("dmv: ")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    assert!(errors[0].len() < 400 && errors[0].contains(why), "{err}");
}

fn run(dir: &Path, args: &[&str]) -> Output {
    dmv_out(dir, args)
}

#[test]
fn a_tree_100000_directories_deep_is_refused_by_every_walk() {
    let dir = hostile_repo(deep_dirs);
    let d = dir.path();
    let why = &format!(
        "directories nest more than {} deep",
        dmv_repo::tree::MAX_PATH_DEPTH
    );
    refused(&run(d, &["ls-tree", "-r", "evil"]), why);
    refused(&run(d, &["show", "evil"]), why);
    refused(&run(d, &["diff", "main", "evil"]), why);
    refused(&run(d, &["archive", "evil"]), why);
    refused(&run(d, &["log", "--stat", "-n", "1", "evil"]), why);
    refused(&run(d, &["switch", "evil"]), why);
    refused(&run(d, &["checkout", "evil"]), why);
    // Nothing changed: still on main, with its file.
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "fine\n");
    assert!(run(d, &["status"]).status.success());
    // Walks over commits and objects, not paths, finish normally.
    assert!(run(d, &["log", "--oneline", "evil"]).status.success());
    assert!(run(d, &["ls-tree", "evil"]).status.success());
    // Every object is sound: fsck checks objects, not how deep paths go.
    let fsck = run(d, &["fsck"]);
    assert_eq!(fsck.status.code(), Some(0), "{}", stderr(&fsck));

    head_on_evil(d);
    refused(&run(d, &["status"]), why);
    // A clone fetches it all (it is only objects), then refuses to check it out.
    let parent = tempfile::tempdir().unwrap();
    refused(
        &run(parent.path(), &["clone", d.to_str().unwrap(), "copy"]),
        why,
    );
}

#[test]
fn a_chain_of_100000_file_nodes_is_refused_by_every_read() {
    let dir = hostile_repo(deep_file_nodes);
    let d = dir.path();
    let why = "a file node's children are one level below it";
    refused(&run(d, &["cat", "evil:big"]), why);
    refused(&run(d, &["archive", "evil"]), why);
    refused(&run(d, &["switch", "evil"]), why);
    // fsck walks the chain without recursion and names each misplaced node.
    let fsck = run(d, &["fsck"]);
    assert_eq!(fsck.status.code(), Some(1), "{}", stderr(&fsck));
    let report = String::from_utf8_lossy(&fsck.stdout);
    assert_eq!(
        report
            .lines()
            .filter(|l| l.starts_with("damaged: ")
                && l.contains("lists it where a file node of level 0 belongs"))
            .count(),
        DEPTH - 2
    );

    // The clone plans to write `big` while its chunks arrive (a recursive
    // walk of its nodes overflowed the stack there), then stores the nodes,
    // each checked against what it lists: the chain claims 5 MiB for a
    // 5-byte chunk, and the first node that says so stops it.
    head_on_evil(d);
    let parent = tempfile::tempdir().unwrap();
    refused(
        &run(parent.path(), &["clone", d.to_str().unwrap(), "copy"]),
        "holds 5242880 bytes; it holds 5",
    );
}

/// A bucket whose objects claim sizes no DMV writes: each is refused from
/// the size the bucket lists or states, before it is downloaded.
#[test]
fn a_bucket_holding_oversized_objects_is_refused_before_they_are_read() {
    if lacks(&[Need::Minio]) {
        return;
    }
    use common::servers::S3Server;
    let minio = S3Server::minio();
    minio.create_bucket("evil");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("a.txt"), "fine\n").unwrap();
    dmv(&a, &["add", "a.txt"]);
    dmv(&a, &["commit", "-m", "fine"]);
    dmv(
        &a,
        &[
            "remote",
            "add",
            "origin",
            "s3://evil/r",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let mut push = dmv_cmd(&a);
    minio.env(push.arg("push"));
    let out = push.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let clone = |name: &str| {
        let mut c = dmv_cmd(t);
        minio.env(&mut c);
        c.args(["clone", "s3://evil/r", name])
            .env("AWS_ENDPOINT_URL", minio.endpoint());
        c.output().unwrap()
    };
    let out = clone("ok");
    assert!(out.status.success(), "{}", stderr(&out));
    let sized = |name: &str, len: u64| {
        let p = t.join(name);
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p
    };
    let refs = t.join("refs.saved");
    minio.get("evil", "r/refs", &refs);

    minio.put("evil", "r/refs", &sized("refs.big", (128 << 20) + 1));
    refused(&clone("b1"), "more than a ref table can be (128 MiB)");
    minio.put("evil", "r/refs", &refs);

    let index = format!("r/packs/pack-{}.idx", "ab".repeat(32));
    minio.put("evil", &index, &sized("idx.big", (256 << 20) + 1));
    refused(&clone("b2"), "more than a pack index can be (256 MiB)");

    minio.put(
        "evil",
        "r/dmv-repository.json",
        &sized("config.big", 2 << 20),
    );
    refused(&clone("b3"), "more than a DMV repository config can be");
}
