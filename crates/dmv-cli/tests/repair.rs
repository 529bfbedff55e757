//! `fsck --repair` as the binary runs it: killed at a fail point and run
//! again, and what it prints and exits with. What a repair rewrites,
//! restores, fetches and names is tested through the library in
//! dmv-sync's tests/repairs.rs.

use crate::common;

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

/// A repair from a named remote killed once its new packs are written,
/// then run again: nothing it saved is lost, every version ends
/// byte-exact, and it says where the data came from. What the repair
/// restores and fetches is tested through the library in dmv-sync's
/// tests/repairs.rs.
#[test]
fn a_repair_killed_once_its_packs_are_written_runs_again_to_every_version_byte_exact() {
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
}

/// What a repair that could not restore everything prints, and its exit
/// code. What it restores and names is tested through the library in
/// dmv-sync's tests/repairs.rs.
#[test]
fn a_repair_says_what_it_rebuilt_and_what_is_lost_and_exits_1() {
    let t = tempfile::tempdir().unwrap();
    let d = shoot_with_hub(t.path());
    std::fs::remove_dir_all(t.path().join("hub")).unwrap();
    let mut all = packs(&d, "pack");
    all.retain(|p| p.metadata().unwrap().len() > 100_000);
    for p in &all {
        flip(p, 5000);
    }
    flip(&d.join(".dmv/dirstate"), 20);
    flip(&d.join(".dmv/locations"), 30);
    let out = dmv_out(&d, &["fsck", "--repair"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    let first_commit = dmv(&d, &["log", "--oneline"])
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        said.contains("repair: 2 damaged packs rewritten")
            && said.contains("1 files stored again from the working tree")
            && said.contains("dirstate was damaged")
            && said.contains("location log was damaged")
            && said.contains("repair: could not ask hub")
            && said.contains(&format!("lost: big.raw in commit {first_commit}")),
        "{said}"
    );
    let cat = dmv_out(&d, &["cat", "HEAD~1:big.raw"]);
    assert!(
        !cat.status.success() && cat.stdout.is_empty(),
        "a lost file must fail before printing anything"
    );
}
