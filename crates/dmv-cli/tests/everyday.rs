//! The everyday commands on a real binary, in temporary directories: what
//! a person sees (words, exit codes, the terminal). Their rules are tested
//! in the library: dmv-repo's tests/everyday.rs, merges.rs, rebases.rs.

use crate::common;
use common::*;

use std::os::unix::fs::PermissionsExt;

/// A commit with nothing to record makes none, not even on an unborn
/// branch, and says why as git does (exit 1); `commit -a` where nothing is
/// tracked yet is that, not a pathspec error.
#[test]
fn a_commit_with_nothing_to_record_makes_none_and_says_why() {
    let repo = new_repo();
    let d = repo.path();
    let nothing = |args: &[&str], says: &str| {
        let out = dmv_out(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{says}\n"),
            "{args:?}"
        );
        assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
    };
    nothing(
        &["commit", "-m", "x"],
        "nothing to commit (create/copy files and use \"dmv add\" to track)",
    );
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    let untracked =
        "nothing added to commit but untracked files present (use \"dmv add\" to track)";
    nothing(&["commit", "-m", "x"], untracked);
    nothing(&["commit", "-a", "-m", "x"], untracked);
    assert!(
        !dmv_out(d, &["rev-parse", "HEAD"]).status.success(),
        "no commit was made"
    );
    dmv(d, &["add", "a.txt"]);
    let first = dmv(d, &["commit", "-m", "first"]);
    assert!(
        first.contains("root-commit") && first.ends_with("] first\n 1 file changed (1 added)\n"),
        "{first}"
    );
    std::fs::write(d.join("a.txt"), "b\n").unwrap();
    nothing(
        &["commit", "-m", "y"],
        "no changes added to commit (use \"dmv add\" and/or \"dmv commit -a\")",
    );
    std::fs::write(d.join("b.txt"), "b\n").unwrap();
    dmv(d, &["add", "b.txt"]);
    assert!(dmv(d, &["commit", "-a", "-m", "second"])
        .ends_with(" 2 files changed (1 added, 1 modified)\n"));
    nothing(
        &["commit", "-m", "z"],
        "nothing to commit, working tree clean",
    );
    nothing(
        &["commit", "-a", "-m", "z"],
        "nothing to commit, working tree clean",
    );
    // Without a message to ask for, there is still nothing to commit (not "a message is required").
    nothing(
        &["commit", "--no-edit"],
        "nothing to commit, working tree clean",
    );
    nothing(&["commit"], "nothing to commit, working tree clean");
    assert_eq!(dmv(d, &["log", "--oneline"]).lines().count(), 2);
}

#[test]
fn add_commit_status_log_show_cat_round_trip() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("photos/raw")).unwrap();
    write_noise(&d.join("photos/raw/a.cr3"), 3_000_000, 1);
    std::fs::write(d.join("notes.txt"), "hello\n").unwrap();
    std::fs::write(d.join("empty"), "").unwrap();
    let status = dmv(d, &["status", "--short"]);
    assert!(
        status.contains("?? photos/raw/a.cr3") && status.contains("?? notes.txt"),
        "{status}"
    );
    dmv(d, &["add", "."]);
    let status = dmv(d, &["status", "--short"]);
    assert!(status.contains("A  photos/raw/a.cr3"), "{status}");
    let out = dmv(d, &["commit", "-m", "first"]);
    assert!(out.contains("root-commit"), "{out}");
    assert!(dmv(d, &["status"]).contains("nothing to commit"));

    let cat = dmv_out(d, &["cat", "HEAD:photos/raw/a.cr3"]);
    assert_eq!(
        cat.stdout,
        std::fs::read(d.join("photos/raw/a.cr3")).unwrap()
    );
    assert_eq!(dmv_out(d, &["cat", "HEAD:empty"]).stdout, b"");
    // A folder is not a file: the message names it (the top folder too, not as '').
    assert_eq!(
        stderr(&dmv_out(d, &["cat", "HEAD:"])).trim(),
        "dmv: an empty path names the top folder, not a file; dmv ls-tree REV:PATH lists a folder"
    );
    assert_eq!(
        stderr(&dmv_out(d, &["cat", "HEAD:photos"])).trim(),
        "dmv: 'photos' is a folder, not a file; dmv ls-tree REV:PATH lists a folder"
    );

    write_noise(&d.join("photos/raw/a.cr3"), 3_000_000, 2);
    let st = dmv(d, &["status", "--short"]);
    assert!(st.contains(" M photos/raw/a.cr3"), "{st}");
    let ns = dmv(d, &["diff", "--name-status", "HEAD"]);
    assert_eq!(ns.trim(), "M\tphotos/raw/a.cr3");
    // As git's short status: path order, staged and unstaged letters on one line.
    dmv(d, &["add", "photos"]);
    write_noise(&d.join("photos/raw/a.cr3"), 3_000_000, 3);
    std::fs::write(d.join("notes.txt"), "hello again\n").unwrap();
    assert_eq!(
        dmv(d, &["status", "--short"]),
        " M notes.txt\nMM photos/raw/a.cr3\n"
    );
    dmv(d, &["commit", "-a", "-m", "second"]);
    let log = dmv(d, &["log", "--oneline"]);
    assert_eq!(log.lines().count(), 2);
    assert!(log.lines().next().unwrap().ends_with("second"));
    let json: serde_json::Value = serde_json::from_str(&dmv(d, &["log", "--json"])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    assert_eq!(json[0]["message"], "second");
    let stat = dmv(d, &["diff", "--stat", "HEAD~1", "HEAD"]);
    assert!(
        stat.contains("photos/raw/a.cr3 | Bin 3000000 -> 3000000 bytes"),
        "{stat}"
    );
    let show = dmv(d, &["show", "--stat"]);
    assert!(
        show.contains("second") && show.contains("2 files changed"),
        "{show}"
    );
    // As git's, show prints the patch by default.
    let patch = dmv(d, &["show"]);
    assert!(
        patch.contains("second")
            && patch.contains("--- a/notes.txt\n+++ b/notes.txt\n")
            && patch.contains("Binary files differ (2.9 MiB -> 2.9 MiB)"),
        "{patch}"
    );
    let old = dmv_out(d, &["cat", "HEAD~1:photos/raw/a.cr3"]).stdout;
    let mut expected = vec![0u8; 3_000_000];
    Noise::new(1).fill(&mut expected);
    assert_eq!(old, expected);
    let ls = dmv(d, &["ls-tree", "-r", "HEAD"]);
    assert_eq!(ls.lines().count(), 3, "{ls}");
    // Committing again with nothing changed exits 1 like git.
    assert_eq!(
        dmv_out(d, &["commit", "-m", "again"]).status.code(),
        Some(1)
    );
}

#[test]
fn checkout_of_a_revision_s_paths_stages_and_writes_its_version() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("dir")).unwrap();
    std::fs::write(d.join("dir/a"), "old").unwrap();
    std::fs::write(d.join("b"), "b").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    std::fs::write(d.join("dir/a"), "new").unwrap();
    std::fs::write(d.join("b"), "b2").unwrap();
    dmv(d, &["commit", "-a", "-m", "two"]);
    dmv(d, &["checkout", "HEAD~1", "--", "dir"]);
    assert_eq!(std::fs::read(d.join("dir/a")).unwrap(), b"old");
    assert_eq!(std::fs::read(d.join("b")).unwrap(), b"b2");
    assert_eq!(dmv(d, &["status", "--short"]), "M  dir/a\n");
}

#[test]
fn dmvignore_rm_mv_restore_and_tags() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join(".dmvignore"), "*.tmp\ncache/\n").unwrap();
    std::fs::create_dir_all(d.join("cache")).unwrap();
    std::fs::write(d.join("cache/x"), "x").unwrap();
    std::fs::write(d.join("scratch.tmp"), "x").unwrap();
    std::fs::create_dir_all(d.join("dir")).unwrap();
    std::fs::write(d.join("dir/a"), "a").unwrap();
    std::fs::write(d.join("b"), "b").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "base"]);
    let ls = dmv(d, &["ls-tree", "-r", "HEAD"]);
    assert!(
        !ls.contains("scratch.tmp") && !ls.contains("cache/x") && ls.contains(".dmvignore"),
        "{ls}"
    );

    dmv(d, &["mv", "dir", "moved"]);
    assert!(d.join("moved/a").exists() && !d.join("dir").exists());
    dmv(d, &["rm", "b"]);
    assert!(!d.join("b").exists());
    let st = dmv(d, &["status", "--short"]);
    // A move is listed as git lists it, a rename.
    assert!(
        st.contains("R  dir/a -> moved/a") && st.contains("D  b"),
        "{st}"
    );
    dmv(d, &["restore", "--staged", "b"]);
    dmv(d, &["restore", "b"]);
    assert_eq!(std::fs::read(d.join("b")).unwrap(), b"b");
    dmv(d, &["commit", "-m", "move"]);
    dmv(d, &["tag", "v1"]);
    std::fs::write(d.join("moved/a"), "changed").unwrap();
    dmv(d, &["commit", "-a", "-m", "change"]);
    dmv(d, &["restore", "--source", "v1", "moved/a"]);
    assert_eq!(std::fs::read(d.join("moved/a")).unwrap(), b"a");
    assert!(dmv(d, &["tag"]).contains("v1"));
    // `tag -l` with patterns, as git's fnmatch takes them.
    dmv(d, &["tag", "v1.1-rc"]);
    dmv(d, &["tag", "release/2026"]);
    assert_eq!(dmv(d, &["tag", "-l"]), "release/2026\nv1\nv1.1-rc\n");
    assert_eq!(dmv(d, &["tag", "-l", "v1*"]), "v1\nv1.1-rc\n");
    assert_eq!(
        dmv(d, &["tag", "--list", "v1.?-rc", "rel*"]),
        "release/2026\nv1.1-rc\n"
    );
    assert_eq!(dmv(d, &["tag", "-l", "nothing*"]), "");
    assert_eq!(
        stderr(&dmv_out(d, &["tag", "-l", "v[1"])).lines().count(),
        1,
        "a bad pattern is one line"
    );
    // -f moves a tag (git's words); without it an existing tag is refused.
    let before = dmv(d, &["rev-parse", "v1.1-rc"]);
    assert_eq!(
        dmv_out(d, &["tag", "v1.1-rc", "HEAD~1"]).status.code(),
        Some(128)
    );
    let moved = dmv(d, &["tag", "-f", "v1.1-rc", "HEAD~1"]);
    assert_eq!(
        moved,
        format!("Updated tag 'v1.1-rc' (was {})\n", &before.trim()[..12])
    );
    assert_eq!(
        dmv(d, &["rev-parse", "v1.1-rc"]),
        dmv(d, &["rev-parse", "HEAD~1"])
    );
    assert_eq!(
        dmv(d, &["tag", "-f", "v1.1-rc", "HEAD~1"]),
        "",
        "already there: nothing said"
    );
    dmv(d, &["tag", "-f", "v2-new"]);
    assert_eq!(
        dmv(d, &["rev-parse", "v2-new"]),
        dmv(d, &["rev-parse", "HEAD"]),
        "-f makes a missing tag"
    );
    dmv(d, &["tag", "-d", "v2-new"]);
    dmv(d, &["tag", "-d", "v1.1-rc"]);
    dmv(d, &["tag", "-d", "release/2026"]);
    dmv(d, &["branch", "feature", "v1"]);
    dmv(d, &["branch", "-m", "feature", "topic"]);
    let branches = dmv(d, &["branch"]);
    assert!(
        branches.contains("topic") && !branches.contains("feature") && branches.contains("* main"),
        "{branches}"
    );
    dmv(d, &["branch", "-d", "topic"]);
    assert!(!dmv(d, &["branch"]).contains("topic"));
    // A branch with commits nothing else holds is deleted only with -D (gc would drop them).
    dmv(d, &["restore", "moved/a"]);
    dmv(d, &["switch", "-c", "experiment"]);
    std::fs::write(d.join("experiment.txt"), "experiment").unwrap();
    dmv(d, &["add", "experiment.txt"]);
    dmv(d, &["commit", "-m", "experiment"]);
    dmv(d, &["switch", "main"]);
    let out = dmv_out(d, &["branch", "-d", "experiment"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a refused deletion exits 1, as git's"
    );
    assert!(
        stderr(&out).contains("not merged") && stderr(&out).contains("dmv branch -D experiment"),
        "{}",
        stderr(&out)
    );
    assert!(dmv(d, &["branch"]).contains("experiment"));
    dmv(d, &["branch", "-D", "experiment"]);
    assert!(!dmv(d, &["branch"]).contains("experiment"));
    dmv(d, &["restore", "--source", "v1", "moved/a"]);
    // The checked-out branch is not deleted; renaming it takes HEAD along.
    let out = dmv_out(d, &["branch", "-d", "main"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        "dmv: cannot delete branch 'main': it is checked out"
    );
    dmv(d, &["branch", "-m", "main", "trunk"]);
    assert!(dmv(d, &["branch"]).contains("* trunk"));
    dmv(d, &["branch", "-m", "trunk", "main"]);
    dmv(d, &["tag", "-d", "v1"]);
    assert!(!dmv(d, &["tag"]).contains("v1"));
    assert_eq!(
        stderr(&dmv_out(d, &["tag", "-d", "v1"])).trim(),
        "dmv: tag 'v1' not found"
    );
    let json: serde_json::Value = serde_json::from_str(&dmv(d, &["status", "--json"])).unwrap();
    assert_eq!(json["unstaged"][0]["path"], "moved/a");
    // Ids in JSON are hex digits, as the CLI shows and takes them.
    let old = json["unstaged"][0]["old"]["id"]
        .as_str()
        .expect("an id as a string");
    assert_eq!(dmv(d, &["rev-parse", "HEAD:moved/a"]).trim(), old);
    let diff: serde_json::Value = serde_json::from_str(&dmv(d, &["diff", "--json"])).unwrap();
    assert_eq!(diff[0]["old"]["id"].as_str(), Some(old));
}

#[test]
fn clear_errors_outside_repo_outside_worktree_and_bad_revisions() {
    let plain = tempfile::tempdir().unwrap();
    let out = dmv_out(plain.path(), &["status"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("not a dmv repository"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1);

    let repo = new_repo();
    let d = repo.path();
    std::fs::write(plain.path().join("outside"), "x").unwrap();
    let out = dmv_out(d, &["add", plain.path().join("outside").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("outside the working tree"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(d, &["add", "../x"]);
    assert!(
        stderr(&out).contains("outside the working tree"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(d, &["log"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("no commits yet"), "{}", stderr(&out));
    let out = dmv_out(d, &["add", "missing-file"]);
    assert!(stderr(&out).contains("did not match"), "{}", stderr(&out));
    let out = dmv_out(d, &["branch", "bad..name"]);
    assert_eq!(out.status.code(), Some(128));
    let out = dmv_out(d, &["init"]);
    assert!(stderr(&out).contains("already"), "{}", stderr(&out));
    for cmd in [
        "init", "status", "add", "rm", "mv", "commit", "restore", "branch", "switch", "checkout",
        "tag", "log", "show", "diff", "cat", "ls-tree", "fsck", "gc", "stats", "demo", "merge",
        "resolve", "clone", "remote", "fetch", "pull", "push", "serve",
    ] {
        let out = dmv_out(d, &[cmd, "--help"]);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{cmd} --help"
        );
    }
}

#[test]
fn unreadable_file_is_named_and_nothing_is_staged() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("ok"), "fine").unwrap();
    std::fs::write(d.join("secret"), "no").unwrap();
    std::fs::set_permissions(d.join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads anything: drop to nobody for the run when we are root.
    let is_root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if is_root {
        let perms = |p: &std::path::Path, m| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        perms(d, 0o777);
        for e in walk(d) {
            if e.is_dir() {
                perms(&e, 0o777)
            } else if !e.ends_with("secret") {
                perms(&e, 0o666)
            }
        }
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin());
        c
    } else {
        std::process::Command::new(bin())
    };
    let out = cmd.current_dir(d).args(["add", "."]).output().unwrap();
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("secret") && err.lines().count() == 1, "{err}");
    let st = dmv(d, &["status", "--short"]);
    assert!(st.contains("?? ok"), "nothing may be staged: {st}");
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn status_of_an_unchanged_tree_reads_no_file() {
    let repo = new_repo();
    let d = repo.path();
    for i in 0..500 {
        std::fs::create_dir_all(d.join(format!("d{}", i / 100))).unwrap();
        std::fs::write(d.join(format!("d{}/f{i}", i / 100)), format!("file {i}")).unwrap();
    }
    // Let the files' mtimes fall in an earlier timestamp tick than the dirstate's.
    std::thread::sleep(std::time::Duration::from_millis(50));
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "many"]);
    let opened = |d: &std::path::Path| {
        let out = dmv_cmd(d)
            .args(["status", "--short"])
            .env("DMV_TRACE", "1")
            .output()
            .unwrap();
        let err = stderr(&out);
        let line = err
            .lines()
            .find(|l| l.starts_with("trace: content-files-opened"))
            .unwrap()
            .to_string();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            line.rsplit(' ').next().unwrap().parse::<u64>().unwrap(),
        )
    };
    let (out, n) = opened(d);
    assert_eq!((out.as_str(), n), ("", 0));
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(d.join("d1/f150"), "changed").unwrap();
    let (out, n) = opened(d);
    assert_eq!(out.trim(), "M d1/f150");
    assert_eq!(n, 1, "only the changed file is read");
    // Touching without changing: every file is re-read once, none is reported,
    // and the refreshed dirstate makes the next status read nothing again.
    let now = std::time::SystemTime::now();
    for i in 0..500 {
        std::fs::File::options()
            .write(true)
            .open(d.join(format!("d{}/f{i}", i / 100)))
            .unwrap()
            .set_modified(now)
            .unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (out, n) = opened(d);
    assert_eq!((out.trim(), n), ("M d1/f150", 500));
    let (_, n) = opened(d);
    assert_eq!(n, 1);
}

#[test]
fn fsck_full_counts_each_object_once() {
    let repo = new_repo();
    let d = repo.path();
    write_noise(&d.join("a.bin"), 3 << 20, 1);
    std::fs::write(d.join("b.txt"), "text\n").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    std::fs::write(d.join("b.txt"), "text, edited\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "two"]);
    let stats: serde_json::Value = serde_json::from_str(&dmv(d, &["stats", "--json"])).unwrap();
    let fsck: serde_json::Value =
        serde_json::from_str(&dmv(d, &["fsck", "--full", "--json"])).unwrap();
    assert!(stats["objects"].as_u64().unwrap() > 20);
    assert_eq!(fsck["report"]["objects_checked"], stats["objects"]);
}

#[test]
fn log_of_a_path_lists_the_commits_that_changed_it() {
    let repo = new_repo();
    let d = repo.path();
    let commit = |msg: &str| dmv(d, &["commit", "-m", msg]);
    std::fs::create_dir_all(d.join("shoot")).unwrap();
    std::fs::write(d.join("notes.txt"), "1\n").unwrap();
    std::fs::write(d.join("shoot/a.jpg"), "a").unwrap();
    std::fs::write(d.join("shoot/b.jpg"), "b").unwrap();
    dmv(d, &["add", "."]);
    commit("both");
    std::fs::write(d.join("shoot/a.jpg"), "a2").unwrap();
    dmv(d, &["add", "."]);
    commit("retouch a");
    std::fs::write(d.join("notes.txt"), "2\n").unwrap();
    dmv(d, &["add", "."]);
    commit("notes");
    dmv(d, &["rm", "shoot/a.jpg"]);
    commit("drop a");
    let subjects = |args: &[&str]| -> Vec<String> {
        dmv(d, &[&["log", "--oneline"][..], args].concat())
            .lines()
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .collect()
    };
    assert_eq!(subjects(&["--", "notes.txt"]), ["notes", "both"]);
    assert_eq!(subjects(&["--", "shoot"]), ["drop a", "retouch a", "both"]);
    assert_eq!(subjects(&["-n", "1", "--", "shoot/a.jpg"]), ["drop a"]);
    assert_eq!(
        subjects(&["HEAD~1", "--", "shoot/a.jpg"]),
        ["retouch a", "both"]
    );
    assert_eq!(subjects(&["--", "notes.txt", "shoot"]).len(), 4);
    assert!(subjects(&["--", "never-there"]).is_empty());
    // From a subfolder, paths are relative to it, as in git.
    assert_eq!(
        dmv(&d.join("shoot"), &["log", "--oneline", "--", "."])
            .lines()
            .count(),
        3
    );
    // A merge that took one side's file as it was is not listed for it.
    dmv(d, &["switch", "-c", "side"]);
    std::fs::write(d.join("shoot/b.jpg"), "b2").unwrap();
    dmv(d, &["add", "."]);
    commit("side b");
    dmv(d, &["switch", "main"]);
    std::fs::write(d.join("notes.txt"), "3\n").unwrap();
    dmv(d, &["add", "."]);
    commit("notes 3");
    dmv(d, &["merge", "side"]);
    assert_eq!(subjects(&["--", "shoot/b.jpg"]), ["side b", "both"]);
    assert_eq!(subjects(&["--", "notes.txt"]), ["notes 3", "notes", "both"]);
    assert_eq!(subjects(&[]).len(), 7);
}

#[test]
fn rev_parse_and_a_quiet_commit_work_as_in_git() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    dmv(d, &["add", "a.txt"]);
    assert_eq!(dmv(d, &["commit", "-q", "-m", "one"]), "");
    let id = dmv(d, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(id.len(), 64, "{id}");
    assert_eq!(dmv(d, &["rev-parse", "main"]).trim(), id);
    let short = dmv(d, &["rev-parse", "--short", "HEAD"]).trim().to_string();
    assert!(id.starts_with(&short) && short.len() < id.len(), "{short}");
    assert_eq!(
        dmv(d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    let top = dmv(d, &["rev-parse", "--show-toplevel"]);
    assert_eq!(std::path::Path::new(top.trim()), d.canonicalize().unwrap());
    let out = dmv_out(d, &["rev-parse", "--verify", "nosuch"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    // REV:PATH is the id of what the path names in that commit: the file's as ls-tree lists it, the root tree's for REV:.
    let listed = dmv(d, &["ls-tree", "HEAD"]);
    let file_id = listed.split_whitespace().nth(1).unwrap();
    assert_eq!(dmv(d, &["rev-parse", "HEAD:a.txt"]).trim(), file_id);
    let root = dmv(d, &["rev-parse", "HEAD:"]).trim().to_string();
    assert_eq!(root.len(), 64);
    assert_ne!(root, file_id);
    let out = dmv_out(d, &["rev-parse", "HEAD:nosuch.txt"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("path 'nosuch.txt' does not exist in HEAD"),
        "{}",
        stderr(&out)
    );
    // :PATH is the staged version, as in git.
    std::fs::write(d.join("a.txt"), "staged").unwrap();
    dmv(d, &["add", "a.txt"]);
    std::fs::write(d.join("a.txt"), "not staged").unwrap();
    assert_eq!(dmv(d, &["cat", ":a.txt"]), "staged");
    assert_eq!(dmv(d, &["cat", "HEAD:a.txt"]), "a");
    let staged_id = dmv(d, &["rev-parse", ":a.txt"]).trim().to_string();
    assert!(staged_id.len() == 64 && staged_id != file_id, "{staged_id}");
    let out = dmv_out(d, &["cat", ":nosuch.txt"]);
    assert!(
        !out.status.success()
            && stderr(&out).contains("path 'nosuch.txt' is not in the staging area"),
        "{}",
        stderr(&out)
    );
    dmv(d, &["restore", "--staged", "a.txt"]);
    dmv(d, &["restore", "a.txt"]);
    // switch and checkout say where they went, but for -q.
    assert!(stderr(&dmv_out(d, &["switch", "-c", "side"])).contains("Switched to branch 'side'"));
    for args in [
        &["switch", "-q", "main"][..],
        &["checkout", "-q", "side"],
        &["checkout", "--quiet", &id],
    ] {
        let out = dmv_out(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        dmv(d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "HEAD"
    );
    // So do merge and gc.
    dmv(d, &["switch", "-q", "-c", "ahead", "main"]);
    std::fs::write(d.join("b.txt"), "b").unwrap();
    dmv(d, &["add", "b.txt"]);
    dmv(d, &["commit", "-q", "-m", "two"]);
    dmv(d, &["switch", "-q", "main"]);
    assert!(dmv(d, &["merge", "ahead"]).contains("Fast-forward"));
    dmv(d, &["reset", "--hard", &id]);
    for args in [&["merge", "-q", "ahead"][..], &["gc", "-q"]] {
        let out = dmv_out(d, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        dmv(d, &["rev-parse", "main"]),
        dmv(d, &["rev-parse", "ahead"])
    );
}

/// Both of git's ways to make a branch and switch to it keep the changes
/// (dmv-repo's tests/everyday.rs checks what they carry).
#[test]
fn a_new_branch_at_head_carries_uncommitted_changes_as_git_does() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "one").unwrap();
    std::fs::write(d.join("b.txt"), "b").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("a.txt"), "two").unwrap();
    std::fs::write(d.join("b.txt"), "staged").unwrap();
    dmv(d, &["add", "b.txt"]);
    let before = dmv(d, &["status", "--short"]);
    assert_eq!(before, " M a.txt\nM  b.txt\n");
    for args in [
        &["switch", "-c", "feature"][..],
        &["checkout", "-b", "other"][..],
    ] {
        dmv(d, args);
        assert_eq!(dmv(d, &["status", "--short"]), before, "{args:?}");
    }
    assert_eq!(
        dmv_out(d, &["rev-parse", "--abbrev-ref", "HEAD"]).stdout,
        b"other\n"
    );
}

#[test]
fn reset_amend_show_and_log_format_work_as_in_git() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("shoot")).unwrap();
    std::fs::write(d.join("shoot/a.jpg"), "a1").unwrap();
    std::fs::write(d.join("notes.txt"), "n1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("shoot/a.jpg"), "a2").unwrap();
    dmv(d, &["commit", "-a", "-m", "seccond"]);
    // --amend: same parent, new message, the staged tree.
    std::fs::write(d.join("shoot/b.jpg"), "b").unwrap();
    dmv(d, &["add", "shoot/b.jpg"]);
    dmv(d, &["commit", "-q", "--amend", "-m", "second"]);
    assert_eq!(dmv(d, &["log", "--format=%s"]), "second\nfirst\n");
    let head = dmv(d, &["rev-parse", "HEAD"]).trim().to_string();
    let parent = dmv(d, &["rev-parse", "HEAD~1"]).trim().to_string();
    assert_eq!(
        dmv(d, &["log", "-n", "1", "--format", "%H %P|%h|%an <%ae>|%%"]),
        format!(
            "{head} {parent}|{}|Test <test@example.com>|%\n",
            &head[..12]
        )
    );
    assert_eq!(
        dmv(d, &["show", "--name-status"])
            .lines()
            .filter(|l| l.contains('\t'))
            .collect::<Vec<_>>(),
        ["M\tshoot/a.jpg", "A\tshoot/b.jpg"]
    );
    assert_eq!(
        dmv(d, &["log", "--format=%s", "--name-status", "-n", "1"]),
        "second\n\nM\tshoot/a.jpg\nA\tshoot/b.jpg\n"
    );

    // --soft: HEAD moves, the change stays staged.
    dmv(d, &["reset", "--soft", "HEAD~1"]);
    assert_eq!(dmv(d, &["log", "--format=%s"]), "first\n");
    assert_eq!(
        dmv(d, &["status", "--short"]),
        "M  shoot/a.jpg\nA  shoot/b.jpg\n"
    );
    // --mixed (the default): unstaged, the files as they were.
    dmv(d, &["reset"]);
    assert_eq!(
        dmv(d, &["status", "--short"]),
        " M shoot/a.jpg\n?? shoot/b.jpg\n"
    );
    assert_eq!(std::fs::read(d.join("shoot/a.jpg")).unwrap(), b"a2");
    // --hard: the tracked files as the commit has them; untracked ones stay.
    dmv(d, &["add", "shoot/b.jpg"]);
    std::fs::write(d.join("notes.txt"), "edited").unwrap();
    std::fs::write(d.join("loose.txt"), "x").unwrap();
    let out = dmv(d, &["reset", "--hard"]);
    assert!(out.starts_with("HEAD is now at"), "{out}");
    assert_eq!(std::fs::read(d.join("shoot/a.jpg")).unwrap(), b"a1");
    assert_eq!(std::fs::read(d.join("notes.txt")).unwrap(), b"n1");
    assert!(!d.join("shoot/b.jpg").exists());
    assert_eq!(dmv(d, &["status", "--short"]), "?? loose.txt\n");
    // Back to the amended commit: it is still in the store.
    dmv(d, &["reset", "--hard", &head]);
    assert_eq!(std::fs::read(d.join("shoot/b.jpg")).unwrap(), b"b");
    assert_eq!(dmv(d, &["status", "--short"]), "?? loose.txt\n");
}

#[test]
fn completions_and_man_pages_come_from_the_command_definitions() {
    let top = tempfile::tempdir().unwrap();
    let bash = dmv(top.path(), &["completions", "bash"]);
    assert!(
        bash.contains("_dmv") && bash.contains("reset") && bash.contains("--amend"),
        "{}",
        &bash[..bash.len().min(400)]
    );
    assert!(dmv(top.path(), &["completions", "zsh"]).contains("#compdef dmv"));
    dmv(top.path(), &["manpages", "man"]);
    let page = std::fs::read_to_string(top.path().join("man/dmv-commit.1")).unwrap();
    assert!(
        page.contains(".TH dmv-commit") && page.contains("amend"),
        "{page}"
    );
    assert!(top.path().join("man/dmv.1").exists());
}

/// What revert prints, and its refusals in one line (dmv-repo's
/// tests/everyday.rs checks what it undoes and keeps).
#[test]
fn revert_commits_the_undoing_and_refuses_what_it_cannot_undo_cleanly() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.jpg"), "a1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("a.jpg"), "a2").unwrap();
    dmv(d, &["commit", "-a", "-m", "retouch a"]);
    let out = dmv(d, &["revert", "HEAD"]);
    assert!(out.contains("Revert \"retouch a\""), "{out}");
    let again = common::remote::one_line_error(&dmv_out(d, &["revert", "HEAD~1"]));
    assert!(again.contains("nothing to revert"), "{again}");
    std::fs::write(d.join("a.jpg"), "dirty").unwrap();
    assert!(
        common::remote::one_line_error(&dmv_out(d, &["revert", "HEAD"]))
            .contains("uncommitted changes")
    );
}

#[test]
fn clean_deletes_untracked_files_only_when_forced_and_keeps_ignored_ones() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("shoot")).unwrap();
    std::fs::write(d.join("shoot/a.jpg"), "a").unwrap();
    std::fs::write(d.join(".dmvignore"), "*.tmp\n").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "a"]);
    std::fs::write(d.join("shoot/b.jpg"), "b").unwrap();
    std::fs::write(d.join("cache.tmp"), "ignored").unwrap();
    std::fs::create_dir_all(d.join("exports/web")).unwrap();
    std::fs::write(d.join("exports/web/a.png"), "untracked folder").unwrap();
    let refused = dmv_out(d, &["clean"]);
    assert!(!refused.status.success() && stderr(&refused).contains("without -f"));
    assert_eq!(dmv(d, &["clean", "-n"]), "Would remove shoot/b.jpg\n");
    assert!(d.join("shoot/b.jpg").exists());
    assert_eq!(dmv(d, &["clean", "-f"]), "Removing shoot/b.jpg\n");
    assert!(
        !d.join("shoot/b.jpg").exists()
            && d.join("shoot/a.jpg").exists()
            && d.join("cache.tmp").exists()
    );
    assert_eq!(
        dmv(d, &["clean", "-f", "-d"]),
        "Removing exports/web/a.png\n"
    );
    assert!(!d.join("exports").exists(), "folders left empty go too");
    assert_eq!(dmv(d, &["status", "--short"]), "");
}

#[test]
fn config_sets_the_name_commits_are_signed_with_globally_or_per_repository() {
    let repo = new_repo();
    let d = repo.path();
    let home = tempfile::tempdir().unwrap();
    // As a new user: no name in the environment, none set anywhere.
    let run = |args: &[&str]| {
        let out = dmv_cmd(d)
            .args(args)
            .env_remove("DMV_AUTHOR_NAME")
            .env_remove("DMV_AUTHOR_EMAIL")
            .env("XDG_CONFIG_HOME", home.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    std::fs::write(d.join("a.txt"), "a").unwrap();
    dmv(d, &["add", "a.txt"]);
    // As git: no commit is signed by nobody; one line saying how, nothing changed.
    for args in [
        &["commit", "-m", "one"][..],
        &["commit", "-a", "-m", "one"],
        &["stash"],
        &["watch"],
    ] {
        let (code, _, err) = run(args);
        assert!(
            code == Some(128)
                && err.lines().count() == 1
                && err.contains("author identity unknown")
                && err.contains("dmv config --global user.name"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(dmv(d, &["status", "--short"]), "A  a.txt\n");
    assert!(
        !dmv_out(d, &["rev-parse", "HEAD"]).status.success(),
        "no commit was made"
    );
    // A fast-forward signs nothing: it needs no name (a phone that only follows).
    dmv(d, &["commit", "-m", "one"]);
    dmv(d, &["branch", "ahead"]);
    dmv(d, &["switch", "ahead"]);
    std::fs::write(d.join("b.txt"), "b").unwrap();
    dmv(d, &["add", "b.txt"]);
    dmv(d, &["commit", "-m", "b"]);
    dmv(d, &["switch", "main"]);
    assert_eq!(run(&["merge", "ahead"]).0, Some(0));
    // A merge commit does: refused before the working tree changes.
    dmv(d, &["switch", "-c", "side", "HEAD~1"]);
    std::fs::write(d.join("c.txt"), "c").unwrap();
    dmv(d, &["add", "c.txt"]);
    dmv(d, &["commit", "-m", "c"]);
    let (code, _, err) = run(&["merge", "main"]);
    assert!(
        code == Some(128) && err.contains("author identity unknown"),
        "{err}"
    );
    assert!(
        !d.join("b.txt").exists() && dmv(d, &["status", "--short"]).is_empty(),
        "nothing merged"
    );
    dmv(d, &["switch", "main"]);
    assert_eq!(
        run(&["config", "user.name"]).0,
        Some(1),
        "unset: exit 1, as git"
    );
    assert_eq!(
        run(&["config", "--global", "user.name", "Ann Lee"]).0,
        Some(0)
    );
    assert_eq!(
        run(&["config", "--global", "user.email", "ann@studio.example"]).0,
        Some(0)
    );
    assert!(std::fs::read_to_string(home.path().join("dmv/config"))
        .unwrap()
        .contains("Ann Lee"));
    assert_eq!(run(&["config", "user.name"]).1, "Ann Lee\n");
    std::fs::write(d.join("a.txt"), "b").unwrap();
    let (code, _, err) = run(&["commit", "-a", "-m", "two"]);
    assert!(code == Some(0) && err.is_empty(), "{err}");
    assert_eq!(
        run(&["log", "-n", "1", "--format=%an <%ae>"]).1,
        "Ann Lee <ann@studio.example>\n"
    );
    // The repository's own setting wins; --unset removes it.
    run(&["config", "user.name", "Ann (studio B)"]);
    // As git's: the global settings, then the repository's, which win.
    assert_eq!(
        run(&["config", "--list"]).1,
        "user.name=Ann Lee\nuser.email=ann@studio.example\nuser.name=Ann (studio B)\n"
    );
    let origins = run(&["config", "--list", "--show-origin"]).1;
    assert!(
        origins.ends_with("file:.dmv/config\tuser.name=Ann (studio B)\n")
            && origins.starts_with("file:/")
            && origins.contains("dmv/config\tuser.email=ann@studio.example\n"),
        "{origins}"
    );
    assert_eq!(
        run(&["config", "--global", "--list"]).1,
        "user.name=Ann Lee\nuser.email=ann@studio.example\n"
    );
    std::fs::write(d.join("a.txt"), "c").unwrap();
    run(&["commit", "-a", "-m", "three"]);
    assert_eq!(
        run(&["log", "-n", "1", "--format=%an"]).1,
        "Ann (studio B)\n"
    );
    run(&["config", "--unset", "user.name"]);
    assert_eq!(run(&["config", "user.name"]).1, "Ann Lee\n");
    // Unknown keys and bad values: one line, nothing changed.
    let (code, _, err) = run(&["config", "core.bogus", "x"]);
    assert!(
        code == Some(128) && err.lines().count() == 1 && err.contains("unknown setting core.bogus"),
        "{err}"
    );
    let (code, _, err) = run(&["config", "drop.numcopies", "zero"]);
    assert!(
        code == Some(128) && err.contains("bad value for drop.numcopies"),
        "{err}"
    );
    run(&["config", "drop.numcopies", "3"]);
    assert_eq!(run(&["config", "drop.numcopies"]).1, "3\n");
    common::remote::fsck_clean(d);
}

/// What stash prints and takes as git's does: its list, show and patch,
/// `stash@{N}` as a revision, its refusals in one line and exit codes
/// (dmv-repo's tests/stashes.rs checks what it puts aside and brings back).
#[test]
fn stash_puts_changes_aside_and_brings_them_back() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.jpg"), "a1").unwrap();
    std::fs::write(d.join("b.jpg"), "b1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    assert_eq!(
        dmv_out(d, &["stash"]).status.code(),
        Some(1),
        "nothing to put aside"
    );
    std::fs::write(d.join("a.jpg"), "a2 retouched").unwrap();
    std::fs::write(d.join("new.jpg"), "new").unwrap();
    dmv(d, &["add", "new.jpg"]);
    std::fs::remove_file(d.join("b.jpg")).unwrap();
    let out = dmv(d, &["stash", "push", "-m", "half done"]);
    assert!(out.contains("On main: half done"), "{out}");
    std::fs::write(d.join("c.jpg"), "c").unwrap();
    dmv(d, &["add", "c.jpg"]);
    dmv(d, &["commit", "-m", "c"]);
    assert_eq!(
        dmv(d, &["stash", "list"]),
        "stash@{0}: On main: half done\n"
    );
    let shown = dmv(d, &["stash", "show"]);
    // Text (these "photos" hold text) is counted in lines as git counts it.
    assert!(
        shown.contains(" a.jpg   | 2 +-\n")
            && shown.contains(" b.jpg   | 1 -\n")
            && shown.contains(" new.jpg | 1 +\n"),
        "{shown}"
    );
    assert!(
        shown.ends_with(" 3 files changed, 2 insertions(+), 2 deletions(-)\n"),
        "{shown}"
    );
    let patch = dmv(d, &["stash", "show", "-p", "0"]);
    assert!(
        patch.contains("diff --dmv a/new.jpg b/new.jpg\nnew file\n")
            && patch.contains("deleted file"),
        "{patch}"
    );
    assert_eq!(dmv(d, &["cat", "stash@{0}:a.jpg"]), "a2 retouched");
    assert_eq!(
        dmv(d, &["rev-parse", "stash"]),
        dmv(d, &["rev-parse", "stash@{0}"])
    );
    assert_eq!(
        dmv(d, &["rev-parse", "stash^"]),
        dmv(d, &["rev-parse", "HEAD~1"]),
        "its first parent: HEAD when it was made"
    );
    assert_eq!(dmv(d, &["stash", "show", "stash@{0}"]), shown);
    assert_eq!(dmv_out(d, &["stash", "show", "1"]).status.code(), Some(128));
    assert_eq!(
        dmv_out(d, &["stash", "show", "stash@{x}"]).status.code(),
        Some(129),
        "a usage error"
    );
    assert_eq!(
        dmv_out(d, &["rev-parse", "stash@{1}"]).status.code(),
        Some(128)
    );
    dmv(d, &["stash", "pop"]);
    assert_eq!(dmv(d, &["stash", "list"]), "");
    dmv(d, &["stash"]);
    std::fs::write(d.join("a.jpg"), "a3 other retouch").unwrap();
    dmv(d, &["commit", "-a", "-m", "other retouch"]);
    let line = common::remote::one_line_error(&dmv_out(d, &["stash", "pop"]));
    assert!(
        line.contains("a.jpg was changed differently since"),
        "{line}"
    );
    dmv(d, &["stash", "clear"]);
    assert_eq!(dmv(d, &["stash", "list"]), "");
}

#[test]
fn stash_u_puts_untracked_files_aside_and_says_what_it_saved() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.jpg"), "a1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("loose.txt"), "loose").unwrap();
    let out = dmv(d, &["stash", "-u"]);
    assert!(
        out.starts_with("Saved working directory and index state WIP on main"),
        "{out}"
    );
    assert_eq!(dmv(d, &["status", "--short"]), "");
    std::fs::write(d.join("loose.txt"), "made again meanwhile").unwrap();
    let line = common::remote::one_line_error(&dmv_out(d, &["stash", "pop"]));
    assert!(
        line.contains("untracked file loose.txt would be overwritten"),
        "{line}"
    );
}

#[test]
fn diff_shows_text_as_a_unified_diff_and_media_as_one_line() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    write_noise(&d.join("a.raw"), 300_000, 1);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("notes.txt"), "one\n2\nthree\n").unwrap();
    write_noise(&d.join("a.raw"), 310_000, 2);
    let diff = dmv(d, &["diff"]);
    assert!(
        diff.contains(
            "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        ),
        "{diff}"
    );
    assert!(
        diff.contains("diff --dmv a/a.raw b/a.raw\nBinary files differ (293.0 KiB -> 302.7 KiB)"),
        "{diff}"
    );
    dmv(d, &["commit", "-a", "-m", "second"]);
    std::fs::write(d.join("new.txt"), "hello\n").unwrap();
    dmv(d, &["add", "new.txt"]);
    let staged = dmv(d, &["diff", "--cached"]);
    assert!(
        staged.contains("new file\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"),
        "{staged}"
    );
    let between = dmv(d, &["diff", "HEAD~1", "HEAD"]);
    assert!(between.contains("-two\n+2\n"), "{between}");
    // An image is named by its dimensions (a PNG's header says them), from the store and from the working tree.
    let png = |w: u32, h: u32| {
        [
            &b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"[..],
            &w.to_be_bytes(),
            &h.to_be_bytes(),
            &[8, 6, 0, 0, 0],
            &[0u8; 2000],
        ]
        .concat()
    };
    std::fs::write(d.join("cover.png"), png(4000, 3000)).unwrap();
    dmv(d, &["add", "cover.png"]);
    dmv(d, &["commit", "-m", "cover"]);
    std::fs::write(d.join("cover.png"), png(2000, 1500)).unwrap();
    let image = dmv(d, &["diff"]);
    assert!(
        image.contains("Binary files differ (4000x3000, 2.0 KiB -> 2000x1500, 2.0 KiB)"),
        "{image}"
    );
}

#[test]
fn archive_writes_a_commits_files_as_a_tar_and_a_zip_that_other_tools_read_back() {
    use std::os::unix::fs::PermissionsExt;
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("shoot")).unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    write_noise(&d.join("shoot/a.raw"), 3_000_000, 7);
    std::fs::write(d.join("notes.txt"), "deliver friday\n").unwrap();
    std::fs::write(d.join("bin/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(d.join("bin/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("notes.txt", d.join("latest")).unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "delivery"]);
    let raw = std::fs::read(d.join("shoot/a.raw")).unwrap();
    // What is archived is the commit, not the working tree.
    std::fs::write(d.join("notes.txt"), "changed since").unwrap();
    let out = tempfile::tempdir().unwrap();
    let tarball = out.path().join("d.tar");
    dmv(
        d,
        &[
            "archive",
            "-o",
            tarball.to_str().unwrap(),
            "--prefix=delivery/",
            "HEAD",
        ],
    );
    let x = out.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let untar = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&x)
        .output()
        .unwrap();
    assert!(
        untar.status.success(),
        "{}",
        String::from_utf8_lossy(&untar.stderr)
    );
    assert!(std::fs::read(x.join("delivery/shoot/a.raw")).unwrap() == raw);
    assert_eq!(
        std::fs::read(x.join("delivery/notes.txt")).unwrap(),
        b"deliver friday\n"
    );
    assert_eq!(
        std::fs::metadata(x.join("delivery/bin/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
    assert_eq!(
        std::fs::read_link(x.join("delivery/latest")).unwrap(),
        std::path::Path::new("notes.txt")
    );
    // Only some paths, to standard output.
    let only = dmv_out(d, &["archive", "HEAD", "shoot"]);
    assert!(only.status.success());
    let listed = std::process::Command::new("tar")
        .arg("-t")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut listed = listed;
    listed
        .stdin
        .take()
        .unwrap()
        .write_all(&only.stdout)
        .unwrap();
    assert_eq!(
        String::from_utf8(listed.wait_with_output().unwrap().stdout).unwrap(),
        "shoot/a.raw\n"
    );
    // Zip, chosen by the file's name or by --format, read back by Python's zipfile (another implementation).
    let zipped = out.path().join("d.zip");
    dmv(d, &["archive", "-o", zipped.to_str().unwrap(), "HEAD"]);
    let to_stdout = dmv_out(
        d,
        &["archive", "--format=zip", "--prefix=p/", "HEAD", "shoot"],
    );
    assert!(to_stdout.status.success());
    let streamed = out.path().join("streamed.zip");
    std::fs::write(&streamed, &to_stdout.stdout).unwrap();
    let check = r#"
import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
for i in z.infolist():
    data = z.read(i)
    print(i.filename, len(data), oct(i.external_attr >> 16), i.compress_type, i.date_time[0], hashlib.sha256(data).hexdigest()[:12])
"#;
    let listing = |zip: &std::path::Path| {
        let o = std::process::Command::new("python3")
            .args(["-c", check])
            .arg(zip)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let raw_hash = {
        let o = std::process::Command::new("sha256sum")
            .arg(d.join("shoot/a.raw"))
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()[..12].to_string()
    };
    let whole = listing(&zipped);
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 4, "{whole}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("bin/run.sh 18 0o100755 0 ")),
        "{whole}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("latest 9 0o120777 0 ")),
        "a symlink: {whole}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("notes.txt 15 0o100644 0 ")),
        "{whole}"
    );
    assert!(
        lines.iter().any(|l| *l
            == format!(
                "shoot/a.raw 3000000 0o100644 0 {} {raw_hash}",
                lines[0].split(' ').nth(4).unwrap()
            )),
        "{whole}"
    );
    assert_eq!(
        listing(&streamed)
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect::<Vec<_>>(),
        ["p/shoot/a.raw"]
    );
    let bad = dmv_out(d, &["archive", "--format=rar", "HEAD"]);
    assert!(
        !bad.status.success() && stderr(&bad).lines().count() == 1,
        "{}",
        stderr(&bad)
    );
}

#[test]
fn renames_are_seen_exactly_and_by_the_chunks_a_retouched_photo_keeps() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::create_dir_all(d.join("audio")).unwrap();
    for i in 0..3 {
        std::fs::write(d.join(format!("audio/take_{i}.wav")), format!("take {i}")).unwrap();
    }
    std::fs::create_dir_all(d.join("raw")).unwrap();
    write_noise(&d.join("raw/IMG_1.CR3"), 3_000_000, 11);
    write_noise(&d.join("raw/IMG_2.CR3"), 3_000_000, 12);
    std::fs::write(d.join("notes.txt"), "day one").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "shoot"]);
    dmv(d, &["mv", "audio", "sound"]);
    std::fs::write(d.join("notes.txt"), "day one, take two").unwrap();
    // Retouched in the middle (a few chunks change) and moved.
    let mut photo = std::fs::read(d.join("raw/IMG_1.CR3")).unwrap();
    for b in &mut photo[1_500_000..1_520_000] {
        *b ^= 0x5a;
    }
    std::fs::create_dir_all(d.join("selects")).unwrap();
    std::fs::write(d.join("selects/IMG_1.CR3"), &photo).unwrap();
    std::fs::remove_file(d.join("raw/IMG_1.CR3")).unwrap();
    dmv(d, &["add", "."]);
    let short = dmv(d, &["status", "--short"]);
    assert!(
        short.contains("R  audio/take_0.wav -> sound/take_0.wav\n"),
        "{short}"
    );
    assert!(
        short.contains("R  raw/IMG_1.CR3 -> selects/IMG_1.CR3\n"),
        "{short}"
    );
    // The long listing reads the staged changes again as it prints them, the
    // renames paired and in place: the same list as the short one.
    let long = dmv(d, &["status"]);
    let staged: Vec<&str> = long
        .split("Changes to be committed:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{long}"))
        .lines()
        .take_while(|l| !l.is_empty())
        .collect();
    let expected: Vec<String> = short
        .lines()
        .map(|l| match l.split_at(3) {
            ("R  ", rest) => format!("\trenamed:    {rest}"),
            ("M  ", rest) => format!("\tmodified:   {rest}"),
            (code, rest) => panic!("{code}{rest}"),
        })
        .collect();
    assert_eq!(staged, expected, "{long}");
    assert_eq!(staged.len(), 5);
    assert!(
        staged[0].ends_with("notes.txt")
            && staged[2].ends_with("audio/take_0.wav -> sound/take_0.wav"),
        "{long}"
    );
    dmv(d, &["commit", "-m", "select and rename"]);
    let ns = dmv(d, &["show", "--name-status"]);
    let lines: Vec<&str> = ns.lines().filter(|l| l.contains('\t')).collect();
    assert_eq!(lines.len(), 5, "{ns}");
    assert!(
        lines.contains(&"R100\taudio/take_2.wav\tsound/take_2.wav"),
        "{ns}"
    );
    let photo_line = lines
        .iter()
        .find(|l| l.ends_with("\traw/IMG_1.CR3\tselects/IMG_1.CR3"))
        .unwrap_or_else(|| panic!("{ns}"));
    let percent: u32 = photo_line[1..4].parse().unwrap();
    assert!(
        (90..100).contains(&percent),
        "a retouched photo keeps most of its chunks: {photo_line}"
    );
    // log --follow goes on through the rename (and the retouch); without it, the new path begins there.
    std::fs::write(d.join("selects/IMG_1.CR3"), [&photo[..], b"more"].concat()).unwrap();
    dmv(d, &["commit", "-a", "-m", "grade"]);
    let subjects = |args: &[&str]| dmv(d, &[&["log", "--format=%s"][..], args].concat());
    assert_eq!(
        subjects(&["--", "selects/IMG_1.CR3"]),
        "grade\nselect and rename\n"
    );
    assert_eq!(
        subjects(&["--follow", "--", "selects/IMG_1.CR3"]),
        "grade\nselect and rename\nshoot\n"
    );
    assert!(!dmv_out(d, &["log", "--follow", "--", "a", "b"])
        .status
        .success());
    // Unrelated files are not paired: one deleted, one added.
    std::fs::remove_file(d.join("raw/IMG_2.CR3")).unwrap();
    write_noise(&d.join("other.CR3"), 3_000_000, 13);
    dmv(d, &["add", "."]);
    assert_eq!(
        dmv(d, &["diff", "--cached", "--name-status"]),
        "A\tother.CR3\nD\traw/IMG_2.CR3\n"
    );
}

#[test]
fn a_revert_run_again_after_a_kill_overwrites_only_its_own_files() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.jpg"), "a1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "first"]);
    std::fs::write(d.join("a.jpg"), "a2").unwrap();
    dmv(d, &["commit", "-a", "-m", "second"]);
    let head = dmv(d, &["rev-parse", "HEAD"]).trim().to_string();
    // As a revert of HEAD killed while writing the files leaves it, but the
    // file then edited by hand: the rerun refuses and keeps the edit.
    std::fs::write(
        d.join(".dmv/revert-in-progress"),
        format!("{head} {head}\n"),
    )
    .unwrap();
    std::fs::write(d.join("a.jpg"), "edited by hand").unwrap();
    let line = common::remote::one_line_error(&dmv_out(d, &["revert", &head]));
    assert!(line.contains("uncommitted changes to a.jpg"), "{line}");
    assert_eq!(std::fs::read(d.join("a.jpg")).unwrap(), b"edited by hand");
    // Holding the revert's own version (its write landed): put back and reverted anew.
    std::fs::write(
        d.join(".dmv/revert-in-progress"),
        format!("{head} {head}\n"),
    )
    .unwrap();
    std::fs::write(d.join("a.jpg"), "a1").unwrap();
    dmv(d, &["revert", &head]);
    assert_eq!(std::fs::read(d.join("a.jpg")).unwrap(), b"a1");
    assert_eq!(dmv(d, &["status", "--short"]), "");
    assert!(!d.join(".dmv/revert-in-progress").exists());
}

/// A JPEG of `w`×`h` with an EXIF date (IFD0 DateTime), as cameras write one.
fn jpeg_taken(w: u32, h: u32, date: &str) -> Vec<u8> {
    let mut jpeg = Vec::new();
    image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90]))
        .write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    let mut tiff = b"II\x2a\x00\x08\x00\x00\x00".to_vec();
    tiff.extend(1u16.to_le_bytes());
    tiff.extend(0x0132u16.to_le_bytes()); // DateTime
    tiff.extend(2u16.to_le_bytes()); // ASCII
    tiff.extend(20u32.to_le_bytes());
    tiff.extend(26u32.to_le_bytes());
    tiff.extend(0u32.to_le_bytes());
    tiff.extend(date.as_bytes());
    tiff.push(0);
    let mut app1 = vec![0xff, 0xe1];
    app1.extend(((2 + 6 + tiff.len()) as u16).to_be_bytes());
    app1.extend(b"Exif\0\0");
    app1.extend(tiff);
    [&jpeg[..2], &app1, &jpeg[2..]].concat()
}

/// A silent 16-bit mono WAV of `secs` seconds at 8 kHz.
fn wav(secs: u32) -> Vec<u8> {
    let data = 8000 * 2 * secs;
    let mut w = b"RIFF".to_vec();
    w.extend((36 + data).to_le_bytes());
    w.extend(b"WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00");
    w.extend(8000u32.to_le_bytes());
    w.extend(16000u32.to_le_bytes());
    w.extend(b"\x02\x00\x10\x00data");
    w.extend(data.to_le_bytes());
    w.resize(w.len() + data as usize, 0);
    w
}

#[test]
fn diffs_say_when_a_photo_was_taken_and_how_long_a_sound_lasts() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(
        d.join("photo.jpg"),
        jpeg_taken(64, 48, "2026:01:02 03:04:05"),
    )
    .unwrap();
    std::fs::write(d.join("take.wav"), wav(1)).unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "shoot"]);
    std::fs::write(
        d.join("photo.jpg"),
        jpeg_taken(128, 96, "2026:02:03 04:05:06"),
    )
    .unwrap();
    std::fs::write(d.join("take.wav"), wav(2)).unwrap();
    // From the working tree, then from the store (a committed change).
    for shown in [dmv(d, &["diff"]), {
        dmv(d, &["commit", "-a", "-m", "retake"]);
        dmv(d, &["show"])
    }] {
        assert!(
            shown.contains("(64x48, taken 2026-01-02 03:04:05, ")
                && shown.contains(" -> 128x96, taken 2026-02-03 04:05:06, "),
            "{shown}"
        );
        assert!(
            shown.contains("(1.0 s, 15.7 KiB -> 2.0 s, 31.3 KiB)"),
            "{shown}"
        );
    }
}

#[test]
fn a_temporary_file_left_by_a_killed_write_is_not_shown_and_is_cleared() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    common::remote::commit_all(d, "files");
    // Named as a write of a process that is gone, and of one that runs (pid 1).
    std::fs::write(d.join(".dmv-tmp-4000000000-0-abcdef"), "half a file").unwrap();
    std::fs::write(d.join(".dmv-tmp-1-0-abcdef"), "being written").unwrap();
    assert_eq!(dmv(d, &["status", "--short"]), "");
    assert!(
        !d.join(".dmv-tmp-4000000000-0-abcdef").exists(),
        "the dead writer's file is removed"
    );
    assert!(
        d.join(".dmv-tmp-1-0-abcdef").exists(),
        "a live writer's file is left to it"
    );
}

#[test]
fn quiet_init_add_commit_push_clone_fetch_and_pull_print_nothing_as_in_git() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let quiet = |dir: &std::path::Path, args: &[&str]| {
        let out = dmv_out(dir, args);
        assert!(out.status.success(), "dmv {args:?}: {}", stderr(&out));
        assert_eq!(
            (
                String::from_utf8_lossy(&out.stdout).as_ref(),
                stderr(&out).as_str()
            ),
            ("", ""),
            "dmv {args:?}"
        );
    };
    let hub = t.join("hub");
    let hub = hub.to_str().unwrap();
    quiet(t, &["init", "-q", "--bare", hub]);
    quiet(t, &["init", "-q", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("f.txt"), "one").unwrap();
    quiet(&a, &["add", "-q", "f.txt"]);
    quiet(&a, &["commit", "-q", "-m", "one"]);
    quiet(&a, &["remote", "add", "origin", hub]);
    quiet(&a, &["push", "-q", "-u", "origin", "main"]);
    quiet(t, &["clone", "-q", hub, "b"]);
    let b = t.join("b");
    assert_eq!(std::fs::read_to_string(b.join("f.txt")).unwrap(), "one");

    std::fs::write(a.join("f.txt"), "two").unwrap();
    quiet(&a, &["commit", "-q", "-a", "-m", "two"]);
    quiet(&a, &["push", "-q"]);
    quiet(&b, &["fetch", "-q"]);
    quiet(&b, &["pull", "-q"]);
    assert_eq!(std::fs::read_to_string(b.join("f.txt")).unwrap(), "two");
    // Without -q the same commands report.
    let out = dmv_out(&a, &["push"]);
    assert!(
        out.status.success() && stderr(&out).contains("up to date"),
        "{}",
        stderr(&out)
    );
    assert!(dmv(&b, &["pull"]).contains("up to date"));
}

/// `pull --ff-only` moves the branch when it can without a merge, and
/// refuses, merging nothing, when both sides have moved.
#[test]
fn pull_ff_only_fast_forwards_or_refuses() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    std::fs::create_dir(&a).unwrap();
    dmv(&a, &["init"]);
    std::fs::write(a.join("f"), "1").unwrap();
    dmv(&a, &["add", "f"]);
    dmv(&a, &["commit", "-m", "one"]);
    dmv(t.path(), &["clone", a.to_str().unwrap(), "b"]);
    let b = t.path().join("b");
    std::fs::write(a.join("f"), "2").unwrap();
    dmv(&a, &["commit", "-a", "-m", "two"]);
    dmv(&b, &["pull", "--ff-only"]);
    assert_eq!(std::fs::read_to_string(b.join("f")).unwrap(), "2");
    std::fs::write(a.join("f"), "3").unwrap();
    dmv(&a, &["commit", "-a", "-m", "three"]);
    std::fs::write(b.join("g"), "mine").unwrap();
    dmv(&b, &["add", "g"]);
    dmv(&b, &["commit", "-m", "mine"]);
    let head = dmv(&b, &["rev-parse", "HEAD"]);
    let out = dmv_out(&b, &["pull", "--ff-only"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a fast-forward"),
        "{}",
        stderr(&out)
    );
    assert_eq!(dmv(&b, &["rev-parse", "HEAD"]), head, "nothing merged");
    assert_eq!(std::fs::read_to_string(b.join("f")).unwrap(), "2");
    dmv(&b, &["pull"]);
    assert_eq!(std::fs::read_to_string(b.join("f")).unwrap(), "3");
}

/// `commit` without -m opens the editor as git does (DMV_EDITOR, GIT_EDITOR,
/// VISUAL, EDITOR): comment lines go, an empty message aborts (exit 1,
/// nothing committed), and without an editor or a terminal it asks for -m.
#[test]
fn commit_without_a_message_opens_the_editor() {
    let t = new_repo();
    let d = t.path();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    dmv(d, &["add", "a.txt"]);
    // An "editor" that writes a message above the comments it was given, keeping them.
    let editor = d.join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\n{ printf 'Edited subject\\n\\nA body line\\n'; cat \"$1\"; } > \"$1.new\" && mv \"$1.new\" \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dmv_cmd(d)
        .args(["commit"])
        .env("DMV_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        dmv(d, &["log", "-1", "--format=%s|%b"]).trim(),
        "Edited subject|A body line"
    );
    let template = std::fs::read_to_string(d.join(".dmv/COMMIT_EDITMSG")).unwrap();
    assert!(template.contains("#\tnew file:   a.txt"), "{template}");
    // An editor that leaves only comments: aborted, nothing committed.
    std::fs::write(d.join("b.txt"), "b").unwrap();
    dmv(d, &["add", "b.txt"]);
    let out = dmv_cmd(d)
        .args(["commit"])
        .env("DMV_EDITOR", "true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Aborting commit due to empty commit message"),
        "{}",
        stderr(&out)
    );
    assert_eq!(dmv(d, &["log", "--format=%s"]).lines().count(), 1);
    // No editor and no terminal (a script): -m is asked for.
    let out = dmv_cmd(d)
        .args(["commit"])
        .env_remove("DMV_EDITOR")
        .env_remove("GIT_EDITOR")
        .env_remove("VISUAL")
        .env_remove("EDITOR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).contains("message"), "{}", stderr(&out));
    // --no-edit takes the message there is and never opens the editor (one that fails would stop the commit).
    let out = dmv_cmd(d)
        .args(["commit", "--amend", "--no-edit"])
        .env("DMV_EDITOR", "false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(dmv(d, &["log", "--format=%s"]).trim(), "Edited subject");
    assert!(
        dmv(d, &["ls-tree", "-r", "HEAD"]).contains("b.txt"),
        "amended with what was staged"
    );
    std::fs::write(d.join("c.txt"), "c").unwrap();
    dmv(d, &["add", "c.txt"]);
    let out = dmv_cmd(d)
        .args(["commit", "--no-edit"])
        .env("DMV_EDITOR", "false")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Aborting commit due to empty commit message"),
        "no message to keep: {}",
        stderr(&out)
    );
}

#[test]
fn slips_of_the_first_hour_get_git_answers() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("x.txt"), "x\n").unwrap();
    dmv(d, &["add", "x.txt"]);
    dmv(d, &["commit", "-m", "one"]);
    dmv(d, &["branch", "a"]);
    dmv(d, &["branch", "c"]);
    // Every branch named is deleted; the one that is not there is reported, exit 1.
    let out = dmv_out(d, &["branch", "-d", "a", "nosuch", "c"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nosuch"), "{}", stderr(&out));
    assert_eq!(dmv(d, &["branch"]), "* main\n");
    // Into a folder that does not exist: refused, nothing renamed.
    let out = dmv_out(d, &["mv", "x.txt", "nonexist/"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(d.join("x.txt").exists() && !d.join("nonexist").exists());
    let out = dmv_out(d, &["reflog", "nosuch"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("unknown revision"),
        "{}",
        stderr(&out)
    );
    // A command used wrongly exits 129, as git's do; --help is not an error.
    assert_eq!(
        dmv_out(d, &["log", "--nosuchflag"]).status.code(),
        Some(129)
    );
    assert_eq!(dmv_out(d, &["log", "--help"]).status.code(), Some(0));
    // reset -q, as git's: nothing said.
    assert!(dmv(d, &["reset", "--hard"]).starts_with("HEAD is now at "));
    assert_eq!(dmv(d, &["reset", "--hard", "-q"]), "");
}

/// Runs `dmv ARGS` on a terminal (a pty made by `script`), with `env` set;
/// what the terminal showed, without carriage returns.
fn on_terminal(d: &std::path::Path, args: &str, env: &[(&str, &str)]) -> String {
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &format!("{} {args}", bin().display()), "/dev/null"])
        .current_dir(d)
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm");
    for var in ["NO_COLOR", "PAGER", "GIT_PAGER", "DMV_PAGER", "LESS"] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied())
        .env("DMV_AUTHOR_NAME", "Test")
        .env("DMV_AUTHOR_EMAIL", "test@example.com");
    let out = c.output().expect("run script");
    assert!(
        out.status.success(),
        "dmv {args} on a terminal: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// Colour and a pager as git gives them: on a terminal only, unless
/// `--color=always` or `color.ui` say otherwise; `NO_COLOR` and
/// `--no-color` turn colour off; the pager is DMV_PAGER, core.pager or
/// PAGER (with `LESS=FRX`), `-P`/`--no-pager` or an empty core.pager turn it off;
/// status is painted, never paged.
#[test]
fn colour_and_a_pager_come_on_a_terminal_as_git_gives_them() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("notes.txt"), "old\nsame\n").unwrap();
    dmv(d, &["add", "notes.txt"]);
    dmv(d, &["commit", "-m", "notes"]);
    std::fs::write(d.join("notes.txt"), "new\nsame\n").unwrap();
    std::fs::write(d.join("new.txt"), "x\n").unwrap();
    let strip = |s: &str| {
        s.replace("\x1b[m", "")
            .replace("\x1b[1m", "")
            .replace("\x1b[31m", "")
            .replace("\x1b[32m", "")
            .replace("\x1b[33m", "")
            .replace("\x1b[36m", "")
    };

    // Piped: plain; asked for: painted, and the same text without the paint.
    let plain = dmv(d, &["diff"]);
    assert!(
        !plain.contains('\x1b') && plain.contains("-old\n+new\n"),
        "{plain}"
    );
    let painted = dmv(d, &["diff", "--color=always"]);
    for piece in [
        "\x1b[1mdiff --dmv a/notes.txt b/notes.txt\x1b[m",
        "\x1b[1m--- a/notes.txt\x1b[m",
        "\x1b[36m@@ -1,2 +1,2 @@\x1b[m",
        "\x1b[31m-old\x1b[m",
        "\x1b[32m+new\x1b[m",
        "\n same\n",
    ] {
        assert!(painted.contains(piece), "{piece:?} in {painted:?}");
    }
    assert_eq!(strip(&painted), plain);
    assert_eq!(
        dmv(d, &["diff", "--color"]),
        painted,
        "--color alone is always"
    );
    dmv(d, &["config", "color.ui", "always"]);
    let log = dmv(d, &["log", "--oneline"]);
    assert!(
        log.starts_with("\x1b[33m") && strip(&log) == dmv(d, &["log", "--oneline", "--no-color"]),
        "{log:?}"
    );
    assert!(dmv(d, &["status"]).contains("\t\x1b[31mmodified:   notes.txt\x1b[m"));
    let bad = dmv_out(d, &["config", "color.ui", "sometimes"]);
    assert!(
        !bad.status.success() && stderr(&bad).contains("'sometimes' is not auto, always or never"),
        "{}",
        stderr(&bad)
    );
    dmv(d, &["config", "--unset", "color.ui"]);

    // On a terminal: painted and paged, with git's LESS for the pager.
    let pager = [(
        "DMV_PAGER",
        "printf 'LESS=%s\\n' \"$LESS\"; sed 's/^/paged: /'",
    )];
    let shown = on_terminal(d, "log --oneline", &pager);
    assert!(
        shown.starts_with("LESS=FRX\npaged: \x1b[33m") && shown.ends_with(" notes\n"),
        "{shown:?}"
    );
    let shown = on_terminal(d, "diff", &[pager[0], ("NO_COLOR", "1")]);
    assert!(
        shown.contains("paged: -old\npaged: +new\n") && !shown.contains('\x1b'),
        "{shown:?}"
    );
    for unpaged in ["-P diff", "--no-pager diff"] {
        let shown = on_terminal(d, unpaged, &pager);
        assert!(
            !shown.contains("paged:") && shown.contains("\x1b[31m-old\x1b[m"),
            "{unpaged}: {shown:?}"
        );
    }
    let status = on_terminal(d, "status", &pager);
    assert!(
        !status.contains("paged:") && status.contains("\t\x1b[31mnew.txt\x1b[m"),
        "{status:?}"
    );
    // core.pager when no DMV_PAGER or GIT_PAGER is set; empty means none.
    dmv(d, &["config", "core.pager", "sed 's/^/configured: /'"]);
    assert!(
        on_terminal(d, "show --no-color", &[("PAGER", "false")]).starts_with("configured: commit ")
    );
    dmv(d, &["config", "core.pager", ""]);
    assert!(on_terminal(d, "show --no-color", &[("PAGER", "false")]).starts_with("commit "));
}

/// The quick start's first command: a studio's day across three replicas
/// (laptop, a hub over HTTP, a phone's meta clone), each step a real
/// command, with everything removed at the end; and with `--keep`, a web
/// UI that shows the day until the demo is told to stop.
#[test]
fn the_demo_plays_a_studio_day_across_replicas_and_cleans_up() {
    use std::io::BufRead;
    use std::path::Path;
    let t = tempfile::tempdir().unwrap();
    let out = dmv_out(t.path(), &["demo", "--size-mib", "16"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", stderr(&out));
    for expected in [
        "studio$ dmv clone -q --slice meta http://127.0.0.1:",
        "absent ",
        "shoot/jpeg/IMG_0001.jpg (3 copies)",
        "dmv: refusing to drop: 2 other copies are needed",
        "copies confirmed by origin",
        "Scene 3 added on the phone",
        "scene 3: the ferry, from the phone",
        "no problems found",
    ] {
        assert!(said.contains(expected), "no {expected:?} in:\n{said}");
    }
    let root = said
        .lines()
        .next()
        .and_then(|l| l.split(" in ").nth(1))
        .unwrap()
        .trim()
        .to_string();
    assert!(!Path::new(&root).exists(), "{root} is left behind");

    let mut kept = dmv_cmd(t.path())
        .args(["demo", "--size-mib", "16", "--keep"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(kept.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let kept_root = first.split(" in ").nth(1).unwrap().trim().to_string();
    let web = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("Web UI: "))
        .expect("the web UI's address");
    let url = web.split_whitespace().nth(2).unwrap().to_string();
    let token = web
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches(')')
        .to_string();
    let page = std::process::Command::new("curl")
        .args([
            "-s",
            "-H",
            &format!("Authorization: Bearer {token}"),
            &format!("{url}log/main"),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&page.stdout).contains("Scene 3 added on the phone"),
        "{}",
        String::from_utf8_lossy(&page.stdout)
    );
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(kept.id() as i32, libc::SIGTERM) };
    assert!(kept.wait().unwrap().success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l == "Stopped."), "{rest:?}");
    assert!(
        !Path::new(&kept_root).exists(),
        "{kept_root} is left behind"
    );
}

/// Like git, a command whose reader goes away (`dmv ls | head`, `dmv cat
/// FILE | head`) ends quietly, as SIGPIPE ends it, whether it prints line
/// by line or streams a file. SIGPIPE stays ignored in every command all
/// the same, so one that reaches a peer (a meta clone's `cat` fetching over
/// ssh) reports the peer going away in one line instead of dying silently.
#[test]
fn a_reader_going_away_ends_output_quietly_and_a_peer_going_away_is_reported() {
    use std::os::unix::process::ExitStatusExt;
    let repo = new_repo();
    let d = repo.path();
    for i in 0..5000 {
        std::fs::write(d.join(format!("f{i:04}.txt")), format!("{i}\n")).unwrap();
    }
    write_noise(&d.join("big.raw"), 4 << 20, 1);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "many"]);
    for args in [&["ls"][..], &["cat", "HEAD:big.raw"]] {
        let mut child = dmv_cmd(d)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before reading anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?}",
            out.status
        );
    }

    let t = tempfile::tempdir().unwrap();
    common::remote::ok(&dmv_out(
        t.path(),
        &["clone", "--slice", "meta", d.to_str().unwrap(), "m"],
    ));
    let m = t.path().join("m");
    dmv(&m, &["remote", "set-url", "origin", "ssh://studio/shoot"]);
    // An "ssh" that notes how its parent (dmv) treats SIGPIPE, then goes away.
    let ssh = t.path().join("ssh");
    std::fs::write(
        &ssh,
        "#!/bin/sh\ngrep SigIgn /proc/$PPID/status > \"$0.sigign\"\nexec 0<&-\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dmv_cmd(&m)
        .env("DMV_SSH", &ssh)
        .args(["cat", "HEAD:big.raw"])
        .output()
        .unwrap();
    common::remote::one_line_error(&out);
    let ignored = std::fs::read_to_string(t.path().join("ssh.sigign")).unwrap();
    let mask =
        u64::from_str_radix(ignored.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert!(mask & (1 << (libc::SIGPIPE - 1)) != 0, "{ignored}");
}

/// Every command that works in the working tree refuses a bare repository
/// in one line before doing anything (a `switch -c` makes no branch); each
/// opens the repository that way itself, with no list kept beside them.
#[test]
fn commands_on_the_working_tree_refuse_a_bare_repository_before_acting() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "first"]);
    dmv(d, &["clone", "--bare", ".", "bare"]);
    let bare = d.join("bare");
    let refs_before = dmv(&bare, &["show-ref"]);
    let commands: &[&[&str]] = &[
        &["status"],
        &["add", "a.txt"],
        &["rm", "a.txt"],
        &["mv", "a.txt", "b.txt"],
        &["commit", "-m", "x"],
        &["restore", "a.txt"],
        &["reset", "--hard"],
        &["revert", "HEAD"],
        &["stash"],
        &["clean", "-f"],
        &["switch", "-c", "feature"],
        &["checkout", "main"],
        &["pull"],
        &["merge", "main"],
        &["resolve", "--ours", "a.txt"],
        &["cherry-pick", "main"],
        &["rebase", "main"],
    ];
    for args in commands {
        let out = dmv_out(&bare, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(128), "{args:?}: {err}");
        assert!(
            err.contains("is a bare repository: it has no working tree")
                && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        dmv(&bare, &["show-ref"]),
        refs_before,
        "a refused command changed a ref"
    );
}
