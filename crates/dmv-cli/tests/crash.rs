//! A commit killed at any moment leaves the previous commit or the new one,
//! never a damaged repository, and a retried commit succeeds.

use crate::common;
use common::remote::{commit_all, fsck_clean};
use common::*;

use std::path::Path;

const FAILPOINTS: &[&str] = &[
    "pack-before-sync",
    "pack-before-rename",
    "index-before-sync",
    "index-before-rename",
    "pack-sealed",
    "commit-before-ref",
    "refs-after-lock",
    // A commit's table is small: it travels inside the new list, and no
    // table file is written (refs-during-table-write is tested in dmv-refs).
    "refs-after-table-write",
    "refs-after-list-write",
    // A commit's ref table folds in the compaction it would trigger: the
    // compaction's own points are gc's now (tested in dmv-refs).
    "refs-after-list-rename",
    "commit-after-ref",
];

fn head_content(d: &Path) -> Vec<u8> {
    dmv_out(d, &["cat", "HEAD:media/big.bin"]).stdout
}

/// After an interruption: fsck is clean, HEAD is one of the two versions with
/// exactly its content, and committing again works.
fn check_recovers(d: &Path, old: &[u8], new: &[u8], context: &str) {
    let fsck = dmv_out(d, &["fsck", "--full"]);
    assert!(
        fsck.status.success(),
        "{context}: fsck failed: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        stderr(&fsck)
    );
    let content = head_content(d);
    assert!(
        content == old || content == new,
        "{context}: HEAD holds neither version ({} bytes)",
        content.len()
    );
    let retry = dmv_out(d, &["commit", "-a", "-m", "retry"]);
    let code = retry.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "{context}: retry failed: {}",
        stderr(&retry)
    );
    assert_eq!(
        head_content(d),
        new,
        "{context}: after retry HEAD must hold the new version"
    );
    let fsck = dmv_out(d, &["fsck", "--full"]);
    assert!(
        fsck.status.success(),
        "{context}: fsck after retry: {}",
        stderr(&fsck)
    );
}

fn setup(seed: u64) -> (tempfile::TempDir, Vec<u8>) {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir(d.join("media")).unwrap();
    write_noise(&d.join("media/big.bin"), 24 << 20, seed);
    for i in 0..50 {
        std::fs::write(d.join(format!("media/small{i}")), format!("{i}")).unwrap();
    }
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    let old = std::fs::read(d.join("media/big.bin")).unwrap();
    (repo, old)
}

#[test]
fn kill_at_every_failpoint_of_a_commit() {
    for (i, point) in FAILPOINTS.iter().enumerate() {
        let (repo, old) = setup(i as u64);
        let d = repo.path();
        write_noise(&d.join("media/big.bin"), 24 << 20, 1000 + i as u64);
        let new = std::fs::read(d.join("media/big.bin")).unwrap();
        let out = dmv_cmd(d)
            .args(["commit", "-a", "-m", "second"])
            .env("DMV_FAILPOINT", point)
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "failpoint {point} was never reached: {}",
            stderr(&out)
        );
        use std::os::unix::process::ExitStatusExt;
        let killed = out.status.signal() == Some(libc::SIGKILL);
        assert!(
            killed || stderr(&out).contains(point),
            "{point}: {}",
            stderr(&out)
        );
        check_recovers(d, &old, &new, point);
    }
}

/// Every file under .dmv, by relative path.
fn dmv_files(d: &Path) -> std::collections::BTreeSet<String> {
    let root = d.join(".dmv");
    let mut out = std::collections::BTreeSet::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out
}

#[test]
fn sigkill_at_random_moments_of_a_commit() {
    let (repo, _) = setup(77);
    let d = repo.path();
    // An uninterrupted commit of the same size times the kills below; timed
    // again every twelve rounds, since a loaded machine makes one commit
    // slower than the next (kills timed from a slow one land after the rest).
    let timed = |seed: u64| {
        write_noise(&d.join("media/big.bin"), 24 << 20, seed);
        let t = std::time::Instant::now();
        dmv(d, &["commit", "-a", "-m", "timed"]);
        t.elapsed()
    };
    let mut full = timed(4999);
    let mut old = std::fs::read(d.join("media/big.bin")).unwrap();
    // Kills spread over the commit's duration, and one just past it.
    const PERCENT: [u32; 12] = [0, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 110];
    // Rounds killed mid-commit: HEAD still old, yet the commit had left
    // files in .dmv (a temporary or unreferenced pack, an index, a lock).
    let mut interrupted = 0;
    let mut rounds = 0;
    for round in 0..36 {
        if round > 0 && round % PERCENT.len() == 0 {
            if interrupted >= 3 {
                break;
            }
            full = timed(4000 + round as u64);
            old = std::fs::read(d.join("media/big.bin")).unwrap();
        }
        rounds += 1;
        let delay = &(full * PERCENT[round % PERCENT.len()] / 100);
        write_noise(&d.join("media/big.bin"), 24 << 20, 5000 + round as u64);
        let new = std::fs::read(d.join("media/big.bin")).unwrap();
        let files_before = dmv_files(d);
        let mut child = dmv_cmd(d)
            .args(["commit", "-a", "-m", "killed"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(*delay);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let status = child.wait().unwrap();
        let left: Vec<String> = dmv_files(d).difference(&files_before).cloned().collect();
        let head_old = head_content(d) == old;
        use std::os::unix::process::ExitStatusExt;
        let killed = status.signal() == Some(libc::SIGKILL);
        if killed && head_old && !left.is_empty() {
            interrupted += 1;
        }
        eprintln!(
            "kill after {delay:?} of {full:?}: killed {killed}, HEAD old {head_old}, left {left:?}"
        );
        check_recovers(d, &old, &new, &format!("kill after {delay:?}"));
        old = new;
    }
    assert!(
        interrupted >= 3,
        "only {interrupted} of {rounds} kills landed inside a commit (one takes {full:?})"
    );
    // Leftovers of the killed writers are garbage that gc removes.
    dmv(d, &["gc"]);
    let full = dmv(d, &["fsck", "--full"]);
    assert!(!full.contains("note:"), "gc left garbage: {full}");
}

#[test]
fn gc_killed_before_deleting_loses_nothing() {
    let (repo, old) = setup(3);
    let d = repo.path();
    dmv(d, &["branch", "keep"]);
    write_noise(&d.join("media/big.bin"), 24 << 20, 4);
    dmv(d, &["commit", "-a", "-m", "second"]);
    let new = std::fs::read(d.join("media/big.bin")).unwrap();
    dmv(d, &["branch", "-D", "keep"]);
    // Unreachable data for gc to drop: a commit on a branch that is then
    // deleted (its reflog goes with --prune-reflog).
    dmv(d, &["switch", "-c", "doomed"]);
    write_noise(&d.join("media/doomed.bin"), 8 << 20, 5);
    dmv(d, &["add", "media/doomed.bin"]);
    dmv(d, &["commit", "-m", "doomed"]);
    let doomed = std::fs::read(d.join("media/doomed.bin")).unwrap();
    let log: serde_json::Value =
        serde_json::from_str(&dmv(d, &["log", "--json", "-n", "1"])).unwrap();
    let doomed_rev = format!("{}:media/doomed.bin", log[0]["id"].as_str().unwrap());
    dmv(d, &["switch", "main"]);
    dmv(d, &["branch", "-D", "doomed"]);
    assert!(!d.join("media/doomed.bin").exists());
    let packs = d.join(".dmv/objects/packs");
    let before = bytes_under(&packs);
    gc_stopped_at(d, "gc-before-delete");
    assert_eq!(head_content(d), new);
    assert!(dmv_out(d, &["fsck", "--full"]).status.success());
    // Killed before deleting: the unreachable commit is still all there.
    let cat = dmv_out(d, &["cat", &doomed_rev]);
    assert!(cat.status.success(), "{}", stderr(&cat));
    assert!(
        cat.stdout == doomed,
        "the killed gc damaged the unreachable file"
    );
    assert!(bytes_under(&packs) >= before, "the killed gc deleted packs");
    let report: serde_json::Value =
        serde_json::from_str(&dmv(d, &["gc", "--prune-reflog", "--prune=now", "--json"])).unwrap();
    assert_eq!(head_content(d), new);
    assert_eq!(dmv_out(d, &["cat", "HEAD~1:media/big.bin"]).stdout, old);
    for i in [0, 17, 49] {
        assert_eq!(
            dmv_out(d, &["cat", &format!("HEAD:media/small{i}")]).stdout,
            format!("{i}").into_bytes()
        );
    }
    // The complete gc dropped what was unreachable, and only that.
    assert!(
        report["objects_dropped"].as_u64().unwrap() > 100,
        "{report}"
    );
    let freed = before - bytes_under(&packs);
    assert!(
        freed > 7 << 20,
        "gc freed only {freed} bytes of the 8 MiB unreachable file: {report}"
    );
    let gone = dmv_out(d, &["cat", &doomed_rev]);
    assert!(!gone.status.success(), "the unreachable commit survived gc");
    assert!(dmv_out(d, &["fsck", "--full"]).status.success());
}

/// A gc killed once its old packs are gone leaves a multi-pack index
/// naming none of them: it is rewritten before they go (a mount's process
/// ending while its cache budget freed data left one naming a deleted
/// pack, which fsck calls damage).
#[test]
fn gc_killed_after_deleting_leaves_an_index_of_the_packs_left() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("kept.txt"), "kept\n").unwrap();
    commit_all(d, "first");
    dmv(d, &["switch", "-c", "doomed"]);
    write_noise(&d.join("doomed.bin"), 1 << 20, 7);
    commit_all(d, "doomed");
    dmv(d, &["switch", "main"]);
    // The multi-pack index now covers the one pack there is, which holds
    // what the branch's deletion makes garbage: gc rewrites that pack.
    dmv(d, &["gc"]);
    dmv(d, &["branch", "-D", "doomed"]);
    let packs_before = pack_names(d);
    gc_stopped_at(d, "gc-after-delete");
    // The covered pack went.
    let left = pack_names(d);
    assert!(
        packs_before.iter().all(|p| !left.contains(p)),
        "{packs_before:?} {left:?}"
    );
    fsck_clean(d);
    assert_eq!(
        std::fs::read_to_string(d.join("kept.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(dmv(d, &["cat", "HEAD:kept.txt"]), "kept\n");
    dmv(d, &["gc", "--prune-reflog", "--prune=now"]);
    fsck_clean(d);
}

/// Runs `gc --prune-reflog --prune=now`, stopped at fail point `point`.
fn gc_stopped_at(d: &Path, point: &str) {
    let out = dmv_cmd(d)
        .args(["gc", "--prune-reflog", "--prune=now"])
        .env("DMV_FAILPOINT", point)
        .output()
        .unwrap();
    assert!(
        !out.status.success() && stderr(&out).contains(point),
        "{}",
        stderr(&out)
    );
}

/// The packs in a repository's store, by file name.
fn pack_names(d: &Path) -> Vec<String> {
    std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pack-") && n.ends_with(".pack"))
        .collect()
}

/// `commit -a` stores its changes and its commit in one pack, and saves the
/// dirstate before HEAD moves: stopped just before, its changes are staged,
/// as after an `add`, and nothing else changed.
#[test]
fn commit_all_writes_one_pack_and_a_stop_before_the_ref_leaves_the_changes_staged() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "one").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    let packs = |d: &Path| {
        dmv_files(d)
            .into_iter()
            .filter(|f| f.ends_with(".pack"))
            .count()
    };
    let before = packs(d);
    std::fs::write(d.join("a.txt"), "two").unwrap();
    dmv(d, &["commit", "-a", "-m", "second"]);
    assert_eq!(
        packs(d),
        before + 1,
        "one pack for the changed file, its tree and the commit"
    );

    std::fs::write(d.join("a.txt"), "three").unwrap();
    let head = dmv_out(d, &["rev-parse", "HEAD"]).stdout;
    let out = dmv_cmd(d)
        .args(["commit", "-a", "-m", "third"])
        .env("DMV_FAILPOINT", "commit-before-ref")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        dmv_out(d, &["rev-parse", "HEAD"]).stdout,
        head,
        "HEAD did not move"
    );
    let status = String::from_utf8(dmv_out(d, &["status", "--short"]).stdout).unwrap();
    assert_eq!(
        status, "M  a.txt\n",
        "the change is staged, and the working tree matches it"
    );
    dmv(d, &["commit", "-m", "third"]);
    assert_eq!(dmv_out(d, &["cat", "HEAD:a.txt"]).stdout, b"three");
}
