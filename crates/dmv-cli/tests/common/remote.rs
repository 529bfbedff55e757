//! Helpers shared by the tests of replicas (sync and object storage).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use super::*;

/// Runs dmv with DMV_TRACE and returns (output, bytes sent, bytes received).
pub fn traced(
    dir: &Path,
    args: &[&str],
    setup: impl FnOnce(&mut std::process::Command),
) -> (Output, u64, u64) {
    let mut cmd = dmv_cmd(dir);
    cmd.args(args).env("DMV_TRACE", "1");
    setup(&mut cmd);
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("trace: bytes-sent"))
        .unwrap_or_else(|| panic!("no trace line in: {err}"));
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (out, nums[0], nums[1])
}

pub fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        stderr(out),
        String::from_utf8_lossy(&out.stdout)
    );
}

pub fn commit_all(dir: &Path, msg: &str) {
    dmv(dir, &["add", "."]);
    dmv(dir, &["commit", "-m", msg]);
}

/// The commit of the ref whose name ends in `rev` ("" when there is none),
/// or of `HEAD`.
pub fn head_of(dir: &Path, rev: &str) -> String {
    if rev == "HEAD" {
        // No ref is named HEAD: show-ref would find nothing, and every comparison would hold.
        return String::from_utf8_lossy(&dmv_out(dir, &["rev-parse", "HEAD"]).stdout)
            .trim()
            .to_string();
    }
    String::from_utf8_lossy(&dmv_out(dir, &["show-ref"]).stdout)
        .lines()
        .find(|l| l.ends_with(rev))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .unwrap_or_default()
}

pub fn fsck_clean(dir: &Path) {
    let out = dmv_out(dir, &["fsck", "--full"]);
    assert!(
        out.status.success(),
        "fsck of {} failed: {}{}",
        dir.display(),
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// One line, "dmv: ", exit 128.
pub fn one_line_error(out: &Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("trace:")).collect();
    assert_eq!(
        out.status.code(),
        Some(128),
        "expected failure, got {:?}: {err}",
        out.status
    );
    assert_eq!(lines.len(), 1, "expected one line: {err}");
    assert!(lines[0].starts_with("dmv: "), "{err}");
    lines[0].to_string()
}

/// Every regular file and symlink under `root` (without `.dmv`), with its bytes or target.
pub fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".dmv" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    (
                        std::fs::read_link(&p)
                            .unwrap()
                            .to_string_lossy()
                            .into_owned()
                            .into_bytes(),
                        false,
                    ),
                );
            } else if meta.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    rel,
                    (
                        std::fs::read(&p).unwrap(),
                        meta.permissions().mode() & 0o111 != 0,
                    ),
                );
            }
        }
    }
    out
}

pub fn assert_same_tree(a: &Path, b: &Path) {
    let (sa, sb) = (snapshot(a), snapshot(b));
    assert_eq!(
        sa.keys().collect::<Vec<_>>(),
        sb.keys().collect::<Vec<_>>(),
        "different files in {} and {}",
        a.display(),
        b.display()
    );
    for (k, v) in &sa {
        assert!(
            sb[k] == *v,
            "{k} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}
