//! A commit killed at any moment leaves the previous commit or the new one,
//! never a damaged repository, and a retried commit succeeds.

mod common;
use common::*;

use std::path::Path;
use std::time::Duration;

const FAILPOINTS: &[&str] = &[
    "pack-before-sync",
    "pack-before-rename",
    "index-before-sync",
    "index-before-rename",
    "pack-sealed",
    "commit-before-ref",
    "refs-after-lock",
    "refs-during-table-write",
    "refs-after-table-write",
    "refs-after-list-write",
    "refs-after-list-rename",
    "refs-compact-after-table-write",
    "refs-compact-after-list-rename",
    "refs-compact-during-remove",
    "commit-after-ref",
];

fn head_content(d: &Path) -> Vec<u8> {
    dmv_out(d, &["cat", "HEAD:media/big.bin"]).stdout
}

/// After an interruption: fsck is clean, HEAD is one of the two versions with
/// exactly its content, and committing again works.
fn check_recovers(d: &Path, old: &[u8], new: &[u8], context: &str) {
    let fsck = dmv_out(d, &["fsck", "--full"]);
    assert!(fsck.status.success(), "{context}: fsck failed: {}{}", String::from_utf8_lossy(&fsck.stdout), stderr(&fsck));
    let content = head_content(d);
    assert!(content == old || content == new, "{context}: HEAD holds neither version ({} bytes)", content.len());
    let retry = dmv_out(d, &["commit", "-a", "-m", "retry"]);
    let code = retry.status.code();
    assert!(code == Some(0) || code == Some(1), "{context}: retry failed: {}", stderr(&retry));
    assert_eq!(head_content(d), new, "{context}: after retry HEAD must hold the new version");
    let fsck = dmv_out(d, &["fsck", "--full"]);
    assert!(fsck.status.success(), "{context}: fsck after retry: {}", stderr(&fsck));
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
        let out = dmv_cmd(d).args(["commit", "-a", "-m", "second"]).env("DMV_FAILPOINT", point).output().unwrap();
        assert!(!out.status.success(), "failpoint {point} was never reached: {}", stderr(&out));
        use std::os::unix::process::ExitStatusExt;
        let killed = out.status.signal() == Some(libc::SIGKILL);
        assert!(killed || stderr(&out).contains(point), "{point}: {}", stderr(&out));
        check_recovers(d, &old, &new, point);
    }
}

#[test]
fn sigkill_at_random_moments_of_a_commit() {
    let (repo, _) = setup(77);
    let d = repo.path();
    let mut old = std::fs::read(d.join("media/big.bin")).unwrap();
    // Delays spread over the commit's duration (tens of ms on this machine).
    for (round, delay_ms) in [0u64, 2, 5, 8, 12, 17, 25, 35, 50, 80, 120, 200].iter().enumerate() {
        write_noise(&d.join("media/big.bin"), 24 << 20, 5000 + round as u64);
        let new = std::fs::read(d.join("media/big.bin")).unwrap();
        let mut child = dmv_cmd(d).args(["commit", "-a", "-m", "killed"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(*delay_ms));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
        check_recovers(d, &old, &new, &format!("kill after {delay_ms} ms"));
        old = new;
    }
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
    dmv(d, &["branch", "-d", "keep"]);
    let out = dmv_cmd(d).args(["gc", "--prune-reflog", "--prune=now"]).env("DMV_FAILPOINT", "gc-before-delete").output().unwrap();
    assert!(!out.status.success() && stderr(&out).contains("gc-before-delete"), "{}", stderr(&out));
    assert_eq!(head_content(d), new);
    assert!(dmv_out(d, &["fsck", "--full"]).status.success());
    dmv(d, &["gc", "--prune-reflog", "--prune=now"]);
    assert_eq!(head_content(d), new);
    assert_eq!(dmv_out(d, &["cat", "HEAD~1:media/big.bin"]).stdout, old);
}
