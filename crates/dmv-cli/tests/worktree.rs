//! What stands in the working tree that is not the repository's to touch: a
//! folder replaced by a symlink, untracked files in the way of a checkout, a
//! nested repository, a file stamped in the future. Nothing outside the
//! tree is read or removed, no untracked file is lost, and no commit holds
//! a tree its readers would refuse.

mod common;

use std::path::Path;

use common::remote::{fsck_clean, one_line_error};
use common::*;

fn write(d: &Path, rel: &str, content: &str) {
    let path = d.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn short_status(d: &Path) -> String {
    dmv(d, &["status", "--short"])
}

#[test]
fn a_folder_replaced_by_a_symlink_is_not_looked_through() {
    let t = tempfile::tempdir().unwrap();
    let (d, outside) = (t.path().join("repo"), t.path().join("outside"));
    std::fs::create_dir_all(&d).unwrap();
    dmv(&d, &["init"]);
    write(&d, "x.txt", "x\n");
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-m", "x"]);
    dmv(&d, &["branch", "old"]);
    write(&d, "d/f.txt", "precious\n");
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-m", "d/f"]);
    // The folder moves out of the tree (its file's stat unchanged), a symlink takes its place.
    std::fs::rename(d.join("d"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, d.join("d")).unwrap();

    let status = short_status(&d);
    assert!(
        status.contains("d/f.txt") && status.contains("?? d"),
        "d/f.txt is gone from the tree, d is a new symlink: {status}"
    );
    // The switch must not delete outside/f.txt through the link (it refuses: d/f.txt is deleted here).
    let _ = dmv_out(&d, &["switch", "old"]);
    assert_eq!(std::fs::read(outside.join("f.txt")).unwrap(), b"precious\n");
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-m", "d is a link now"]);
    let listed = dmv(&d, &["ls-tree", "-r", "HEAD"]);
    assert!(
        !listed.contains("d/f.txt") && listed.contains('d'),
        "{listed}"
    );
    fsck_clean(&d);
    assert_eq!(std::fs::read(outside.join("f.txt")).unwrap(), b"precious\n");
    assert_eq!(short_status(&d), "");
}

#[test]
fn a_switch_refuses_to_remove_untracked_files_in_the_way() {
    let repo = new_repo();
    let d = repo.path();
    write(d, "x.txt", "x\n");
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "x"]);
    dmv(d, &["switch", "-c", "files"]);
    write(d, "d", "a file named d\n");
    write(d, "e/f", "a file in a folder e\n");
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "d and e/f"]);
    dmv(d, &["switch", "main"]);

    // Untracked files where the branch has a file (d) and a folder's file (e/f).
    write(d, "d/precious.jpg", "1");
    let out = dmv_out(d, &["switch", "files"]);
    assert!(!out.status.success());
    assert!(
        one_line_error(&out).contains("d/precious.jpg"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(d.join("d/precious.jpg")).unwrap(), b"1");
    std::fs::remove_dir_all(d.join("d")).unwrap();

    write(d, "e", "an untracked file named e");
    let out = dmv_out(d, &["switch", "files"]);
    assert!(!out.status.success());
    assert!(
        one_line_error(&out).contains("untracked file e "),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(d.join("e")).unwrap(),
        b"an untracked file named e"
    );
    assert!(dmv(d, &["status"]).contains("main"), "still on main");
    std::fs::remove_file(d.join("e")).unwrap();
    dmv(d, &["switch", "files"]);
    assert_eq!(
        std::fs::read(d.join("e/f")).unwrap(),
        b"a file in a folder e\n"
    );
}

#[test]
fn a_nested_repository_is_left_out_of_the_commit() {
    let repo = new_repo();
    let d = repo.path();
    write(d, "a.txt", "a\n");
    std::fs::create_dir(d.join("sub")).unwrap();
    dmv(&d.join("sub"), &["init"]);
    write(d, "sub/b.txt", "b\n");
    write(d, "deep/.DMV/c", "not a tree's name\n");
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "with a nested repository"]);
    let listed = dmv(d, &["ls-tree", "-r", "HEAD"]);
    assert!(
        listed.contains("sub/b.txt") && !listed.to_lowercase().contains(".dmv"),
        "{listed}"
    );
    fsck_clean(d);
    let t = tempfile::tempdir().unwrap();
    dmv(t.path(), &["clone", d.to_str().unwrap(), "copy"]);
    assert_eq!(
        std::fs::read(t.path().join("copy/sub/b.txt")).unwrap(),
        b"b\n"
    );
}

#[test]
fn a_file_stamped_in_the_future_can_be_committed() {
    let repo = new_repo();
    let d = repo.path();
    write(d, "from-the-camera.jpg", "a photo\n");
    let future =
        std::time::SystemTime::now() + std::time::Duration::from_secs(10 * 365 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(d.join("from-the-camera.jpg"))
        .unwrap()
        .set_modified(future)
        .unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "photo"]);
    assert_eq!(dmv(d, &["cat", "HEAD:from-the-camera.jpg"]), "a photo\n");
    assert_eq!(short_status(d), "");
    // An edit (which stamps it now) is seen.
    write(d, "from-the-camera.jpg", "retouched\n");
    assert!(short_status(d).contains("from-the-camera.jpg"));
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

/// `add PATH` looks only where PATH is, yet stages what a walk of the whole
/// tree would have found there: the ignore files of the folders above it
/// apply, nested paths are found once, a path through a file or into
/// `.dmv` finds nothing.
#[test]
fn add_of_named_paths_stages_what_the_whole_walk_would() {
    let t = new_repo();
    let d = t.path();
    write(d, ".dmvignore", "*.tmp\ncache/\n");
    write(d, "shoot/.dmvignore", "*.raw\n!keep.raw\n");
    for f in [
        "shoot/a.jpg",
        "shoot/b.raw",
        "shoot/keep.raw",
        "shoot/x.tmp",
        "shoot/day2/c.jpg",
        "shoot/day2/d.raw",
        "shoot/cache/e.jpg",
        "other/f.jpg",
        "top.jpg",
    ] {
        write(d, f, f);
    }
    dmv(d, &["add", "shoot/day2", "shoot", "shoot/day2/c.jpg"]);
    let staged = dmv(d, &["status", "--short"]);
    let added: Vec<&str> = staged
        .lines()
        .filter_map(|l| l.strip_prefix("A  "))
        .collect();
    assert_eq!(
        added,
        [
            "shoot/.dmvignore",
            "shoot/a.jpg",
            "shoot/day2/c.jpg",
            "shoot/keep.raw"
        ],
        "{staged}"
    );
    // A file a rule ignores is refused by name, as git does, and added with -f; through a file or into .dmv, nothing.
    let out = dmv_out(d, &["add", "shoot/day2/d.raw"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("shoot/day2/d.raw") && stderr(&out).contains("-f"),
        "{}",
        stderr(&out)
    );
    assert!(!dmv(d, &["status", "--short"]).contains("A  shoot/day2/d.raw"));
    dmv(d, &["add", "-f", "shoot/day2/d.raw"]);
    assert!(dmv(d, &["status", "--short"]).contains("A  shoot/day2/d.raw"));
    for nothing in ["top.jpg/x", ".dmv/config", "no/such"] {
        let out = dmv_out(d, &["add", nothing]);
        assert!(!out.status.success(), "{nothing}");
    }
    dmv(d, &["add", "."]);
    let all = dmv(d, &["status", "--short"]);
    let added: Vec<&str> = all.lines().filter_map(|l| l.strip_prefix("A  ")).collect();
    assert_eq!(
        added,
        [
            ".dmvignore",
            "other/f.jpg",
            "shoot/.dmvignore",
            "shoot/a.jpg",
            "shoot/day2/c.jpg",
            "shoot/day2/d.raw",
            "shoot/keep.raw",
            "top.jpg"
        ],
        "{all}"
    );
}

/// A switch carries uncommitted changes to paths both branches hold alike,
/// staged or not (as git's), and refuses, changing nothing, when a change
/// is to a path the switch would write.
#[test]
fn a_switch_carries_changes_the_other_branch_does_not_touch() {
    let t = new_repo();
    let d = t.path();
    write(d, "notes.txt", "v1");
    write(d, "shared.txt", "same");
    write(d, "gone.txt", "bye");
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "base"]);
    dmv(d, &["switch", "-c", "edit"]);
    write(d, "notes.txt", "v2");
    dmv(d, &["commit", "-a", "-m", "notes v2"]);
    dmv(d, &["switch", "main"]);
    // Unstaged, staged, a new file staged, a deletion: none of them to notes.txt.
    write(d, "shared.txt", "changed here");
    write(d, "staged.txt", "new");
    dmv(d, &["add", "staged.txt"]);
    std::fs::remove_file(d.join("gone.txt")).unwrap();
    let before = short_status(d);
    dmv(d, &["switch", "edit"]);
    assert_eq!(short_status(d), before, "the changes came along");
    assert_eq!(std::fs::read_to_string(d.join("notes.txt")).unwrap(), "v2");
    assert_eq!(
        std::fs::read_to_string(d.join("shared.txt")).unwrap(),
        "changed here"
    );
    // A change to a path the switch writes: refused, nothing changed.
    write(d, "notes.txt", "edited on edit");
    let out = dmv_out(d, &["switch", "main"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(one_line_error(&out).contains("notes.txt"));
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "edited on edit"
    );
    assert_eq!(
        dmv(d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "edit"
    );
    fsck_clean(d);
}
