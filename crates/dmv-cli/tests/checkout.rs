//! A checkout that cannot finish does not start: missing data stops it while
//! the working tree, the dirstate and HEAD are still as they were.

use crate::common;

use std::path::Path;

use common::needs::{lacks, Need};
use common::remote::{ok, one_line_error, snapshot};
use common::*;
use dmv_repo::store::object::FileNode;
use dmv_repo::store::{pack_file_name, ObjectKind, MULTI_PACK_INDEX};
use dmv_repo::Repository;

/// Deletes a pack holding a chunk of `path` at `rev`, leaving the commit,
/// its trees and the file's node in place. (Chunks are written by several
/// threads, so which chunk lands in the node's pack differs run to run.)
fn lose_a_chunk(d: &Path, rev: &str, path: &str) {
    let repo = Repository::open(d).unwrap();
    let tree = repo.commit(&repo.resolve(rev).unwrap()).unwrap().tree;
    let file = dmv_repo::tree::lookup(&repo.store, &tree, path.as_bytes())
        .unwrap()
        .unwrap();
    let node: FileNode = repo
        .store
        .read_decoded(&file.id, ObjectKind::FileNode)
        .unwrap();
    let node_pack = repo.store.locate(&file.id).unwrap().unwrap().pack;
    let chunk = node
        .entries
        .iter()
        .map(|e| repo.store.locate(&e.id).unwrap().unwrap())
        .find(|c| c.pack != node_pack)
        .expect("the test needs a chunk in a pack other than the file node's");
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
        assert!(
            line.contains("cannot check out big.raw")
                && line.contains("not found")
                && line.contains("not changed"),
            "{args:?}: {line}"
        );
        assert!(snapshot(d) == before, "{args:?} changed the working tree");
        assert!(
            std::fs::read(d.join(".dmv/dirstate")).unwrap() == dirstate,
            "{args:?} changed the dirstate"
        );
        assert!(dmv(d, &["status", "--short"]).is_empty());
        assert!(
            dmv(d, &["log", "--oneline"]).lines().count() == 1,
            "{args:?} moved HEAD"
        );
    }
}

/// An exFAT file system (a camera's card, a USB stick; Windows' and
/// macOS's default file systems fold case the same way) on a loop device,
/// mounted through FUSE for the test and unmounted when dropped.
struct ExfatMount {
    dir: std::path::PathBuf,
    device: String,
}

impl ExfatMount {
    fn new(t: &Path) -> ExfatMount {
        let (image, dir) = (t.join("card.img"), t.join("card"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::File::create(&image)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let run = |c: &mut std::process::Command| {
            let out = c.output().unwrap_or_else(|e| {
                panic!("{c:?}: {e} (scripts/test installs exfatprogs and exfat-fuse)")
            });
            assert!(
                out.status.success(),
                "{c:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        run(std::process::Command::new("mkfs.exfat").arg(&image));
        let device = run(std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&image));
        let mount = ExfatMount { dir, device };
        run(std::process::Command::new("mount.exfat-fuse")
            .arg(&mount.device)
            .arg(&mount.dir));
        mount
    }
}

impl Drop for ExfatMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("fusermount")
            .arg("-u")
            .arg(&self.dir)
            .status();
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.device])
            .status();
    }
}

/// A tree holding `Photo.jpg` and `photo.jpg` on a file system that
/// ignores case: a clone there, and a fast-forward there, are refused
/// before they write anything, naming both files, and neither is lost.
/// The repository is made and cloned on a real exFAT (which also needs
/// DMV's fallbacks for a file system without hard links).
#[test]
fn names_a_case_folding_file_system_takes_for_one_are_refused_and_neither_is_lost() {
    if lacks(&[Need::Exfat]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let src = t.join("src");
    dmv(t, &["init", src.to_str().unwrap()]);
    std::fs::create_dir_all(src.join("shoot")).unwrap();
    std::fs::write(src.join("notes.txt"), "notes\n").unwrap();
    std::fs::write(src.join("shoot/Photo.jpg"), "the first\n").unwrap();
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "before"]);
    let (before_hub, hub) = (t.join("before-hub"), t.join("hub"));
    for h in [&before_hub, &hub] {
        dmv(t, &["init", "--bare", h.to_str().unwrap()]);
    }
    dmv(&src, &["push", before_hub.to_str().unwrap(), "main"]);
    std::fs::write(src.join("shoot/photo.jpg"), "the second\n").unwrap();
    dmv(&src, &["add", "."]);
    dmv(
        &src,
        &[
            "commit",
            "-m",
            "a second photo whose name differs only in case",
        ],
    );
    dmv(&src, &["push", hub.to_str().unwrap(), "main"]);

    let card = ExfatMount::new(t);
    // The file system folds case: DMV finds it so.
    std::fs::write(card.dir.join("Probe"), "x").unwrap();
    assert!(card.dir.join("probe").exists(), "exFAT ignores case");
    std::fs::remove_file(card.dir.join("Probe")).unwrap();

    let clone = card.dir.join("clone");
    let out = dmv_out(
        t,
        &["clone", hub.to_str().unwrap(), clone.to_str().unwrap()],
    );
    let err = one_line_error(&out);
    assert!(err.contains("shoot/Photo.jpg and shoot/photo.jpg would be one file on this file system (it ignores case)"), "{err}");
    assert!(
        err.contains("but its files are not checked out") && !err.contains("again to resume"),
        "running it again would not help: {err}"
    );
    assert!(!clone.join("shoot").exists(), "nothing was written");

    // A replica on the card from before the pair: the fast-forward to it is refused, and nothing changes.
    let replica = card.dir.join("replica");
    dmv(
        t,
        &[
            "clone",
            before_hub.to_str().unwrap(),
            replica.to_str().unwrap(),
        ],
    );
    let was = snapshot(&replica);
    let head = dmv(&replica, &["rev-parse", "HEAD"]);
    dmv(&replica, &["remote", "add", "full", hub.to_str().unwrap()]);
    dmv(&replica, &["fetch", "full"]);
    let err = one_line_error(&dmv_out(&replica, &["merge", "full/main"]));
    assert!(
        err.contains("shoot/Photo.jpg and shoot/photo.jpg would be one file"),
        "{err}"
    );
    assert_eq!(snapshot(&replica), was, "the working tree is as it was");
    assert_eq!(dmv(&replica, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(replica.join("shoot/Photo.jpg")).unwrap(),
        "the first\n"
    );
    // Both versions are in the replica's history, whole.
    let listed = dmv(&replica, &["ls-tree", "-r", "full/main"]);
    assert!(
        listed.contains("shoot/Photo.jpg") && listed.contains("shoot/photo.jpg"),
        "{listed}"
    );
    ok(&dmv_out(&replica, &["fsck", "--full"]));
}

/// The same pair as large files, which a clone writes while their chunks
/// arrive and moves into place afterwards (`EarlyCheckout`): the second
/// move would replace the first, so the clone is refused before either is
/// placed, as a small pair is.
#[test]
fn a_large_pair_written_while_it_arrives_is_refused_before_either_is_placed() {
    if lacks(&[Need::Exfat]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let src = t.join("src");
    dmv(t, &["init", src.to_str().unwrap()]);
    std::fs::create_dir_all(src.join("shoot")).unwrap();
    write_noise(&src.join("shoot/Take.raw"), 3 << 20, 1);
    write_noise(&src.join("shoot/take.raw"), 3 << 20, 2);
    dmv(&src, &["add", "."]);
    dmv(
        &src,
        &[
            "commit",
            "-m",
            "a pair of takes whose names differ only in case",
        ],
    );
    // On a file system that keeps both, the two are written while they arrive.
    let (out, _, _) = common::remote::traced(t, &["clone", "src", "native"], |_| {});
    ok(&out);
    assert!(
        stderr(&out).contains("trace: files-written-while-receiving 2"),
        "{}",
        stderr(&out)
    );

    let card = ExfatMount::new(t);
    let clone = card.dir.join("clone");
    let err = one_line_error(&dmv_out(
        t,
        &["clone", src.to_str().unwrap(), clone.to_str().unwrap()],
    ));
    assert!(err.contains("shoot/Take.raw and shoot/take.raw would be one file on this file system (it ignores case)"), "{err}");
    assert!(err.contains("but its files are not checked out"), "{err}");
    assert!(!clone.join("shoot").exists(), "nothing was placed");
    let listed = dmv(&clone, &["ls-tree", "-r", "origin/main"]);
    assert!(
        listed.contains("shoot/Take.raw") && listed.contains("shoot/take.raw"),
        "{listed}"
    );
    ok(&dmv_out(&clone, &["fsck", "--full"]));
}
