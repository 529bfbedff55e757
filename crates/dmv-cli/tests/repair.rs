//! `fsck --repair`: damaged packs, indexes, dirstate and location log are
//! rewritten from what is whole, what is lost comes back by id from another
//! replica (or from the working tree, which holds a copy of the checked-out
//! files), and without a source it names the files of the commits that lost
//! data. After a repair with a source, `fsck --full` is clean and every
//! version of every file reads back byte-exact.

mod common;

use std::path::{Path, PathBuf};

use common::remote::{commit_all, fsck_clean, ok};
use common::*;

fn packs(d: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.metadata().unwrap().len()));
    v
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

/// Every version of every file, as `cat` gives it: (rev:path, content).
fn versions(d: &Path, revs: &[&str], paths: &[&str]) -> Vec<(String, Vec<u8>)> {
    revs.iter()
        .flat_map(|r| paths.iter().map(move |p| format!("{r}:{p}")))
        .map(|spec| (spec.clone(), dmv_out(d, &["cat", &spec]).stdout))
        .collect()
}

const PATHS: [&str; 3] = ["big.raw", "notes.txt", "sub/small.txt"];

/// Two commits of a 1.5 MiB file (the second version shares nothing with
/// the first), a small file and a folder; each version's data in a pack of its own.
fn shoot(d: &Path) {
    std::fs::create_dir_all(d.join("sub")).unwrap();
    dmv(d, &["init"]);
    write_noise(&d.join("big.raw"), 3 << 19, 1);
    std::fs::write(d.join("notes.txt"), "first\n").unwrap();
    std::fs::write(d.join("sub/small.txt"), "small\n").unwrap();
    commit_all(d, "one");
    write_noise(&d.join("big.raw"), 7 << 18, 2);
    std::fs::write(d.join("notes.txt"), "second\n").unwrap();
    commit_all(d, "two");
}

/// [`shoot`] in `t/r`, pushed to the bare `t/hub` (remote `hub`).
fn shoot_with_hub(t: &Path) -> PathBuf {
    let d = t.join("r");
    shoot(&d);
    dmv(t, &["init", "--bare", "hub"]);
    dmv(
        &d,
        &["remote", "add", "hub", t.join("hub").to_str().unwrap()],
    );
    dmv(&d, &["push", "hub", "main"]);
    d
}

#[test]
fn a_repair_from_another_replica_leaves_every_version_byte_exact() {
    let t = tempfile::tempdir().unwrap();
    let d = shoot_with_hub(t.path());
    let want = versions(&d, &["HEAD", "HEAD~1"], &PATHS);

    // Payload bytes of both versions' packs, a table of contents, and an index.
    for big in packs(&d, "pack").into_iter().take(2) {
        let len = big.metadata().unwrap().len() as usize;
        for at in [2000, len / 2, len - 100] {
            flip(&big, at);
        }
    }
    flip(&packs(&d, "idx")[2], 40);
    assert!(!dmv_out(&d, &["fsck", "--full"]).status.success());

    // Killed once its new packs are written: nothing it saved is lost, and it runs again.
    let killed = dmv_cmd(&d)
        .args(["fsck", "--repair", "--from", "hub"])
        .env("DMV_FAILPOINT", "salvage-written")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    let out = dmv_out(&d, &["fsck", "--repair", "--from", "hub"]);
    ok(&out);
    let said = stderr(&out);
    // The checked-out version comes back from the working tree, the older one from the hub.
    assert!(
        said.contains("1 files stored again from the working tree")
            && said.contains("objects fetched from hub")
            && !said.contains("lost:"),
        "{said}"
    );
    fsck_clean(&d);
    assert_eq!(versions(&d, &["HEAD", "HEAD~1"], &PATHS), want);
    assert_eq!(dmv(&d, &["status", "--short"]), "");
}

#[test]
fn without_a_source_a_repair_restores_the_checked_out_files_and_names_what_is_lost() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    shoot(&d);
    // Each version's chunks are in its commit's pack: damage one of each.
    let mut all = packs(&d, "pack");
    all.retain(|p| p.metadata().unwrap().len() > 100_000);
    assert_eq!(all.len(), 2, "{all:?}");
    for p in &all {
        flip(p, 5000);
    }
    let out = dmv_out(&d, &["fsck", "--repair"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    // The checked-out big.raw is whole in the working tree: stored again from there.
    assert!(
        said.contains("1 files stored again from the working tree"),
        "{said}"
    );
    assert!(
        dmv_out(&d, &["cat", "HEAD:big.raw"]).stdout == std::fs::read(d.join("big.raw")).unwrap()
    );
    // The first version is nowhere: named, with its commit.
    let first_commit = dmv(&d, &["log", "--oneline"])
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        said.contains(&format!("lost: big.raw in commit {first_commit}")),
        "{said}"
    );
    let cat = dmv_out(&d, &["cat", "HEAD~1:big.raw"]);
    assert!(
        !cat.status.success() && cat.stdout.is_empty(),
        "a lost file must fail before printing anything"
    );
}

#[test]
fn a_damaged_dirstate_and_location_log_are_rebuilt_and_the_working_tree_kept() {
    let t = tempfile::tempdir().unwrap();
    let d = shoot_with_hub(t.path());
    std::fs::write(d.join("notes.txt"), "edited, not staged\n").unwrap();
    flip(&d.join(".dmv/dirstate"), 20);
    flip(&d.join(".dmv/locations"), 30);
    assert!(!dmv_out(&d, &["status"]).status.success());
    let out = dmv_out(&d, &["fsck", "--repair"]);
    ok(&out);
    let said = stderr(&out);
    assert!(
        said.contains("dirstate was damaged") && said.contains("location log was damaged"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "edited, not staged\n"
    );
    assert_eq!(dmv(&d, &["status", "--short"]), " M notes.txt\n");
    // The location log fills again from the remote.
    let w = dmv(&d, &["whereis", "big.raw"]);
    assert!(w.contains("hub"), "{w}");
    fsck_clean(&d);
}

/// A repair of a healthy repository changes nothing and says so (it once
/// rewrote a whole pack each time, for a record its walk misread).
#[test]
fn a_repair_of_a_healthy_repository_rewrites_nothing() {
    let t = new_repo();
    let d = t.path();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    write_noise(&d.join("b.raw"), 300_000, 3);
    commit_all(d, "one");
    let packs = |d: &Path| {
        std::fs::read_dir(d.join(".dmv/objects/packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let before = packs(d);
    for _ in 0..2 {
        let out = dmv_out(d, &["fsck", "--repair"]);
        ok(&out);
        assert!(
            stderr(&out).contains("repair: 0 damaged packs rewritten"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(packs(d), before, "no pack written or removed");
    fsck_clean(d);
}
