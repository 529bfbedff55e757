//! A folder the binary cannot read, run as another user when the tests run
//! as root. The rest of what stands in the working tree (a symlinked
//! folder, untracked files in a switch's way, a nested repository, a file
//! from the future, ignore rules above a named path) is tested in the
//! library: dmv-repo's tests/worktree_edges.rs.

use crate::common;

use std::path::Path;

use common::remote::one_line_error;
use common::*;

fn write(d: &Path, rel: &str, content: &str) {
    let path = d.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn short_status(d: &Path) -> String {
    dmv(d, &["status", "--short"])
}

/// A folder whose files cannot be looked at says nothing about whether they
/// are there: status, add and commit -a fail naming it, and commit nothing.
/// (Root ignores permissions, so as root dmv runs as nobody here.)
#[test]
fn a_folder_that_cannot_be_read_is_an_error_not_deleted_files() {
    use std::os::unix::fs::PermissionsExt;
    let repo = new_repo();
    let d = repo.path();
    write(d, "d/a.txt", "a\n");
    write(d, "b.txt", "b\n");
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let status = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(d)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let as_user = |args: &[&str]| {
        let mut cmd = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(bin());
            c
        } else {
            std::process::Command::new(bin())
        };
        cmd.current_dir(d)
            .args(args)
            .env("DMV_AUTHOR_NAME", "Test")
            .env("DMV_AUTHOR_EMAIL", "t@example.com")
            .output()
            .unwrap()
    };
    for mode in [0o000, 0o644] {
        std::fs::set_permissions(d.join("d"), std::fs::Permissions::from_mode(mode)).unwrap();
        for args in [
            &["status", "--short"][..],
            &["commit", "-a", "-m", "two"],
            &["add", "."],
        ] {
            let out = as_user(args);
            assert!(
                !out.status.success(),
                "dmv {args:?} with d at {mode:o}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(
                one_line_error(&out).contains("d/a.txt") || one_line_error(&out).contains("/d"),
                "{}",
                stderr(&out)
            );
        }
    }
    std::fs::set_permissions(d.join("d"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(dmv(d, &["log", "--oneline"]).lines().count(), 1);
    assert_eq!(short_status(d), "");
}
