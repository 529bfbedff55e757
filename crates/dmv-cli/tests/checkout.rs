//! A checkout that cannot finish does not start: missing data stops it while
//! the working tree, the dirstate and HEAD are still as they were.

mod common;

use std::path::Path;

use common::remote::{one_line_error, snapshot};
use common::*;
use dmv_repo::store::object::FileNode;
use dmv_repo::store::{pack_file_name, ObjectKind, MULTI_PACK_INDEX};
use dmv_repo::Repository;

/// Deletes the pack holding the first chunk of `path` at `rev`, leaving the
/// commit, its trees and the file's node in place.
fn lose_a_chunk(d: &Path, rev: &str, path: &str) {
    let repo = Repository::open(d).unwrap();
    let tree = repo.commit(&repo.resolve(rev).unwrap()).unwrap().tree;
    let file = dmv_repo::tree::lookup(&repo.store, &tree, path.as_bytes()).unwrap().unwrap();
    let node: FileNode = repo.store.read_decoded(&file.id, ObjectKind::FileNode).unwrap();
    let chunk = repo.store.locate(&node.entries[0].id).unwrap().unwrap();
    let node_pack = repo.store.locate(&file.id).unwrap().unwrap().pack;
    assert_ne!(chunk.pack, node_pack, "the test needs the chunk and the file node in different packs");
    let packs = d.join(".dmv/objects/packs");
    let pack = packs.join(pack_file_name(&chunk.pack));
    std::fs::remove_file(pack.with_extension("idx")).unwrap();
    std::fs::remove_file(&pack).unwrap();
    let _ = std::fs::remove_file(packs.join(MULTI_PACK_INDEX));
}

#[test]
fn a_switch_to_a_commit_whose_data_is_missing_changes_nothing() {
    let repo = new_repo();
    let d = repo.path();
    // Small packs: the big file's chunks fill packs of their own before its node is written.
    edit_config(d, |cfg| cfg["pack_size_limit"] = (1u64 << 20).into());
    std::fs::write(d.join("a.txt"), "kept\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "a"]);
    dmv(d, &["switch", "-c", "b"]);
    dmv(d, &["rm", "a.txt"]);
    write_noise(&d.join("big.raw"), 4 << 20, 1);
    dmv(d, &["add", "big.raw"]);
    dmv(d, &["commit", "-m", "b"]);
    dmv(d, &["switch", "main"]);
    lose_a_chunk(d, "b", "big.raw");
    let before = snapshot(d);
    let dirstate = std::fs::read(d.join(".dmv/dirstate")).unwrap();
    for args in [&["switch", "b"][..], &["checkout", "b"], &["merge", "b"]] {
        let line = one_line_error(&dmv_out(d, args));
        assert!(line.contains("cannot check out big.raw") && line.contains("not found") && line.contains("not changed"), "{args:?}: {line}");
        assert!(snapshot(d) == before, "{args:?} changed the working tree");
        assert!(std::fs::read(d.join(".dmv/dirstate")).unwrap() == dirstate, "{args:?} changed the dirstate");
        assert!(dmv(d, &["status", "--short"]).is_empty());
        assert!(dmv(d, &["log", "--oneline"]).lines().count() == 1, "{args:?} moved HEAD");
    }
}
