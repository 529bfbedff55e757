//! What a Git user types without thinking (issue 70), checked against the
//! `git` binary: the same working tree or the same imported history given
//! to both, and the outputs a script would parse compared line by line.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn git(dir: &Path, args: &[&str]) -> String {
    run_git(dir, None, args)
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// One folder that is both a Git and a DMV working tree, each ignoring the
/// other's repository, with the same files committed in both.
fn both_in_one_folder(t: &Path) -> PathBuf {
    let w = t.join("w");
    std::fs::create_dir(&w).unwrap();
    git(&w, &["init", "-q", "-b", "main"]);
    dmv(&w, &["init", "-q"]);
    std::fs::write(w.join(".dmvignore"), ".git/\n.dmvignore\n").unwrap();
    std::fs::write(w.join(".git/info/exclude"), ".dmv/\n.dmvignore\n").unwrap();
    w
}

fn write(w: &Path, path: &str, text: &str) {
    std::fs::create_dir_all(w.join(path).parent().unwrap()).unwrap();
    std::fs::write(w.join(path), text).unwrap();
}

/// A team that moves from Git keeps its `.gitignore` files: status sees
/// what git's sees (nested files, negations, ignored folders), and
/// `--porcelain` and `-sb` print git's lines.
#[test]
fn status_reads_gitignore_and_speaks_gits_porcelain() {
    let t = tempfile::tempdir().unwrap();
    let w = both_in_one_folder(t.path());
    write(&w, ".gitignore", "*.log\nbuild/\n!keep.log\n");
    write(&w, "sub/.gitignore", "c.txt\n!important.log\n");
    for f in [
        "a.txt",
        "b.log",
        "keep.log",
        "build/x",
        "sub/c.txt",
        "sub/d.txt",
        "sub/important.log",
        "sub/deep/e.log",
    ] {
        write(&w, f, f);
    }
    git(&w, &["add", "a.txt", ".gitignore"]);
    git(&w, &["commit", "-q", "-m", "one"]);
    dmv(&w, &["add", "a.txt", ".gitignore"]);
    dmv(&w, &["commit", "-q", "-m", "one"]);
    write(&w, "a.txt", "changed");
    write(&w, "staged.txt", "new");
    git(&w, &["add", "staged.txt"]);
    dmv(&w, &["add", "staged.txt"]);
    std::fs::remove_file(w.join(".gitignore")).unwrap();
    write(&w, ".gitignore", "*.log\nbuild/\n!keep.log\n");
    let want = git(&w, &["status", "--porcelain", "-uall", "-b"]);
    assert!(want.contains("?? sub/important.log"), "{want}");
    assert_eq!(
        lines(&dmv(&w, &["status", "--porcelain", "-b"])),
        lines(&want)
    );
    assert_eq!(
        lines(&dmv(&w, &["status", "--porcelain=v1"])),
        lines(&want)[1..]
    );
    assert_eq!(lines(&dmv(&w, &["status", "-sb"])), lines(&want));
    // What .dmvignore says wins over .gitignore in the same folder.
    write(&w, ".dmvignore", ".git/\n.dmvignore\n!b.log\n");
    assert!(dmv(&w, &["status", "--porcelain"]).contains("?? b.log"));
    let out = dmv_out(&w, &["status", "--porcelain=v2"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
}

/// `git` with the author and committer dates set to `secs` after the epoch.
fn git_at(dir: &Path, secs: u64, args: &[&str]) -> String {
    run_git(dir, Some(secs), args)
}

/// `git` as Ada, in a home of its own (`dir`), at `secs` when given.
fn run_git(dir: &Path, secs: Option<u64>, args: &[&str]) -> String {
    let mut git = Command::new("git");
    git.current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir);
    if let Some(secs) = secs {
        let date = format!("@{secs} +0000");
        git.env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
    }
    let out = git.output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Git history, each commit a minute after the one before, imported
/// into DMV: main c1 c2 (tags v1, annotated v2) M(c2, s1) c3; side s1 from
/// c1; other o1 from c2 (on no other branch).
fn dated_history(t: &Path) -> (PathBuf, PathBuf) {
    let g = t.join("g");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    let commit = |minute: u64, file: &str, subject: &str| {
        write(&g, file, subject);
        git_at(&g, 1_700_000_000 + 60 * minute, &["add", "."]);
        git_at(
            &g,
            1_700_000_000 + 60 * minute,
            &["commit", "-q", "-m", subject],
        );
    };
    commit(1, "a", "c1");
    git(&g, &["checkout", "-q", "-b", "side"]);
    commit(2, "s", "s1");
    git(&g, &["checkout", "-q", "main"]);
    commit(3, "a", "c2");
    git(&g, &["tag", "v1"]);
    git_at(
        &g,
        1_700_000_000 + 60 * 3,
        &["tag", "-a", "v2", "-m", "annotated"],
    );
    git(&g, &["checkout", "-q", "-b", "other"]);
    commit(4, "o", "o1");
    git(&g, &["checkout", "-q", "main"]);
    git_at(
        &g,
        1_700_000_000 + 60 * 5,
        &["merge", "-q", "--no-ff", "-m", "M", "side"],
    );
    commit(6, "a", "c3");
    let d = t.join("d");
    dmv(t, &["init", "-q", d.to_str().unwrap()]);
    dmv(&d, &["import", "git", g.to_str().unwrap()]);
    (g, d)
}

/// Commit ids (git's 7 digits, DMV's 12 or 64) as `ID`, and runs of spaces as one.
fn masked(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    let (lead, rest) =
                        w.split_at(w.find(|c: char| c.is_ascii_hexdigit()).unwrap_or(w.len()));
                    let hex = rest.chars().take_while(|c| c.is_ascii_hexdigit()).count();
                    match hex >= 7 && rest.chars().take(hex).any(|c| c.is_ascii_digit()) {
                        true => format!("{lead}ID{}", &rest[hex..]),
                        false => w.to_string(),
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// `log --oneline --graph --decorate --all`, `--reverse`, `--name-only`:
/// the lines git prints, ids aside.
#[test]
fn log_decorates_walks_all_reverses_and_names_files_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = dated_history(t.path());
    for args in [
        &["--oneline", "--decorate", "--all"][..],
        &[],
        &["--oneline", "--graph", "--decorate", "--all"],
        &["--oneline", "--graph", "--decorate"],
        &["--oneline", "--decorate"],
        &["--decorate", "-n", "2"],
        &["--all", "--format=%s"],
        &["--reverse", "--format=%s"],
        &["-n", "2", "--reverse", "--format=%s"],
        &["--all", "--reverse", "--oneline"],
        &["--name-only", "--format=%s"],
        &["--name-only", "--oneline"],
        &["--name-status", "--format=%s", "--all"],
        &["--oneline", "--no-decorate", "--all"],
    ] {
        let want = masked(&git(&g, &[&["log"][..], args].concat()));
        let got = masked(&dmv(&d, &[&["log"][..], args].concat()));
        // git prints dates in its own form: compared apart, below.
        let dateless = |l: &Vec<String>| -> Vec<String> {
            l.iter()
                .filter(|l| !l.starts_with("Date:"))
                .cloned()
                .collect()
        };
        assert_eq!(dateless(&got), dateless(&want), "log {args:?}");
    }
    let out = dmv_out(&d, &["log", "--graph", "--reverse"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
}

/// `show -s` and `ORIG_HEAD` after a reset, a merge and a rebase, beside
/// git's on the same history.
#[test]
fn show_s_and_orig_head_follow_git() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = dated_history(t.path());
    for rev in ["HEAD", "HEAD~1", "v2"] {
        let want = masked(&git(&g, &["show", "-s", rev]));
        let got = masked(&dmv(&d, &["show", "-s", rev]));
        let dateless = |l: Vec<String>| -> Vec<String> {
            l.into_iter()
                .filter(|l| !l.starts_with("Date:") && !l.starts_with("Tagger:"))
                .collect()
        };
        assert_eq!(dateless(got), dateless(want), "show -s {rev}");
    }
    let out = dmv_out(&d, &["rev-parse", "ORIG_HEAD"]);
    assert_eq!(out.status.code(), Some(128));
    let subject = |dir: &Path, is_git: bool, rev: &str| {
        let args = ["log", "-1", "--format=%s", rev];
        match is_git {
            true => git(dir, &args),
            false => dmv(dir, &args),
        }
    };
    // git's commands and DMV's, side by side; ORIG_HEAD names the same commit after each.
    dmv(&d, &["reset", "-q", "--hard", "main"]);
    for (git_args, dmv_args) in [
        (
            &["reset", "-q", "--hard", "HEAD~2"][..],
            &["reset", "-q", "--hard", "HEAD~2"][..],
        ),
        (
            &["reset", "-q", "--hard", "ORIG_HEAD"],
            &["reset", "-q", "--hard", "ORIG_HEAD"],
        ),
        (
            &["reset", "-q", "--hard", "side"],
            &["reset", "-q", "--hard", "side"],
        ),
        (&["merge", "-q", "other"], &["merge", "-q", "other"]),
        (&["rebase", "-q", "main"], &["rebase", "-q", "main"]),
    ] {
        git_at(&g, 1_700_100_000, git_args);
        dmv(&d, dmv_args);
        assert_eq!(
            subject(&d, false, "ORIG_HEAD"),
            subject(&g, true, "ORIG_HEAD"),
            "after {dmv_args:?}"
        );
        assert_eq!(
            subject(&d, false, "HEAD"),
            subject(&g, true, "HEAD"),
            "after {dmv_args:?}"
        );
    }
}

/// Two repositories, one git's and one DMV's, given the same commands:
/// after each, `status --porcelain` and the subjects of `log` agree.
struct Twins {
    g: PathBuf,
    d: PathBuf,
}

impl Twins {
    fn new(t: &Path) -> Twins {
        let (g, d) = (t.join("g"), t.join("d"));
        std::fs::create_dir(&g).unwrap();
        git(&g, &["init", "-q", "-b", "main"]);
        dmv(t, &["init", "-q", d.to_str().unwrap()]);
        Twins { g, d }
    }

    fn write(&self, path: &str, text: &str) {
        write(&self.g, path, text);
        write(&self.d, path, text);
    }

    /// The same arguments to both (git's run at a fixed date).
    fn both(&self, args: &[&str]) -> (String, String) {
        (git_at(&self.g, 1_700_000_000, args), dmv(&self.d, args))
    }

    fn agree(&self, after: &str) {
        assert_eq!(
            dmv(&self.d, &["status", "--porcelain"]),
            git(&self.g, &["status", "--porcelain", "-uall"]),
            "status after {after}"
        );
        // The same commits (their order among equal times aside), the same at HEAD.
        let subjects = |text: String| {
            let mut all: Vec<String> = masked(&text);
            all.sort();
            all
        };
        assert_eq!(
            subjects(dmv(&self.d, &["log", "--all", "--format=%s"])),
            subjects(git(&self.g, &["log", "--all", "--format=%s"])),
            "log after {after}"
        );
        assert_eq!(
            dmv(&self.d, &["log", "-1", "--format=%s %P"])
                .split(' ')
                .count(),
            git(&self.g, &["log", "-1", "--format=%s %P"])
                .split(' ')
                .count(),
            "HEAD after {after}"
        );
        assert_eq!(
            dmv(&self.d, &["log", "-1", "--format=%s"]),
            git(&self.g, &["log", "-1", "--format=%s"]),
            "HEAD after {after}"
        );
    }
}

/// Staging and committing as a Git user types it: add -u and -A, rm -r,
/// reset HEAD FILE, commit --allow-empty, merge -m; branch -r and
/// --show-current, rev-parse --git-dir.
#[test]
fn everyday_flags_do_what_gits_do() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    w.write("a.txt", "a");
    w.write("dir/b.txt", "b");
    w.write("dir/c.txt", "c");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.agree("add -A, commit");
    w.write("a.txt", "a2");
    w.write("new.txt", "new");
    std::fs::remove_file(w.g.join("dir/c.txt")).unwrap();
    std::fs::remove_file(w.d.join("dir/c.txt")).unwrap();
    w.both(&["add", "-u"]);
    w.agree("add -u");
    w.both(&["reset", "-q", "HEAD", "a.txt"]);
    w.agree("reset HEAD a.txt");
    w.both(&["add", "a.txt"]);
    w.both(&["reset", "-q", "--", "a.txt"]);
    w.agree("reset -- a.txt");
    w.both(&["add", "a.txt"]);
    w.both(&["reset", "-q", "a.txt"]);
    w.agree("reset a.txt");
    w.both(&["commit", "-q", "-a", "-m", "two"]);
    w.agree("commit -a");
    w.both(&["commit", "-q", "--allow-empty", "-m", "a marker"]);
    w.agree("commit --allow-empty");
    w.both(&["rm", "-q", "-r", "dir"]);
    w.agree("rm -r dir");
    w.both(&["commit", "-q", "-m", "three"]);
    w.both(&["branch", "side", "HEAD~2"]);
    assert_eq!(
        dmv(&w.d, &["branch", "--show-current"]),
        git(&w.g, &["branch", "--show-current"])
    );
    w.both(&["switch", "-q", "side"]);
    w.write("side.txt", "s");
    w.both(&["add", "side.txt"]);
    w.both(&["commit", "-q", "-m", "on the side"]);
    w.both(&["switch", "-q", "main"]);
    w.both(&["merge", "-q", "-m", "bring the side in", "side"]);
    w.agree("merge -m");
    assert_eq!(
        dmv(&w.d, &["log", "-1", "--format=%s"]),
        "bring the side in\n"
    );
    // Without -m, git's message.
    w.both(&["switch", "-q", "side"]);
    w.write("side2.txt", "s2");
    w.both(&["add", "side2.txt"]);
    w.both(&["commit", "-q", "-m", "more on the side"]);
    w.both(&["switch", "-q", "main"]);
    w.both(&["merge", "-q", "--no-ff", "side"]);
    w.agree("merge");
    assert!(!w.d.join(".dmv/MERGE_MSG").exists());
    assert_eq!(
        dmv(&w.d, &["branch", "--show-current"]),
        git(&w.g, &["branch", "--show-current"])
    );
    // A clone's remote-tracking branches, as `branch -r` names them.
    let clone = t.path().join("clone");
    dmv(
        t.path(),
        &[
            "clone",
            "-q",
            w.d.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert_eq!(
        dmv(&clone, &["branch", "-r"]),
        "  origin/main\n  origin/side\n"
    );
    assert_eq!(dmv(&clone, &["rev-parse", "--git-dir"]), ".dmv\n");
    assert_eq!(
        dmv(&clone, &["rev-parse", "--is-inside-work-tree"]),
        "true\n"
    );
    std::fs::create_dir(clone.join("sub")).unwrap();
    assert_eq!(
        dmv(&clone.join("sub"), &["rev-parse", "--git-dir"]),
        format!(
            "{}\n",
            std::fs::canonicalize(&clone)
                .unwrap()
                .join(".dmv")
                .display()
        )
    );
    let out = dmv_out(&w.d, &["reset", "--hard", "HEAD", "a.txt"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
}

/// `init -b` and `init.defaultBranch`, as git names the first branch.
#[test]
fn init_names_the_first_branch_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let home = t.join("home");
    std::fs::create_dir(&home).unwrap();
    let with_home = |dir: &Path, args: &[&str]| {
        let out = Command::new(bin())
            .current_dir(dir)
            .env("XDG_CONFIG_HOME", &home)
            .env("HOME", &home)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    with_home(t, &["init", "-q", "-b", "trunk", "a"]);
    assert_eq!(
        with_home(&t.join("a"), &["branch", "--show-current"]),
        "trunk\n"
    );
    assert_eq!(
        with_home(&t.join("a"), &["status", "-sb"]),
        "## No commits yet on trunk\n"
    );
    with_home(t, &["config", "--global", "init.defaultBranch", "develop"]);
    with_home(t, &["init", "-q", "b"]);
    assert_eq!(
        with_home(&t.join("b"), &["branch", "--show-current"]),
        "develop\n"
    );
    with_home(t, &["init", "-q", "--initial-branch", "main", "c"]);
    assert_eq!(
        with_home(&t.join("c"), &["branch", "--show-current"]),
        "main\n"
    );
    let refused = dmv_out(t, &["init", "-q", "-b", "bad..name", "d"]);
    assert_eq!(refused.status.code(), Some(128), "{}", stderr(&refused));
    assert!(!t.join("d/.dmv").exists());
    let refused = Command::new(bin())
        .current_dir(t)
        .env("XDG_CONFIG_HOME", &home)
        .env("HOME", &home)
        .args(["config", "--global", "init.defaultBranch", "a b"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(128));
    assert_eq!(
        with_home(t, &["config", "--global", "init.defaultBranch"]),
        "develop\n"
    );
}

/// Aliases (`alias.NAME`, shell ones with `!`), `core.editor`, the help of
/// log, diff and show, a mistyped option, `reflog -N`: as git's.
#[test]
fn aliases_editor_help_and_mistyped_options_follow_git() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = dated_history(t.path());
    for (name, value) in [
        ("last", "log -1 --format=%s"),
        ("subjects", "log --format='%s' --reverse"),
        ("hello", "!echo \"hello $1\""),
    ] {
        git(&g, &["config", &format!("alias.{name}"), value]);
        dmv(&d, &["config", &format!("alias.{name}"), value]);
    }
    for args in [&["last"][..], &["subjects", "-n", "3"], &["hello", "there"]] {
        assert_eq!(dmv(&d, args), git(&g, args), "{args:?}");
    }
    // A shell alias runs in the top folder, as git's.
    std::fs::create_dir(d.join("sub")).unwrap();
    dmv(&d, &["config", "alias.where", "!pwd"]);
    assert_eq!(
        dmv(&d.join("sub"), &["where"]).trim_end(),
        std::fs::canonicalize(&d).unwrap().display().to_string()
    );
    // A global alias, and a loop refused in one line.
    dmv(&d, &["config", "alias.one", "two"]);
    dmv(&d, &["config", "alias.two", "one"]);
    let looped = dmv_out(&d, &["one"]);
    assert_eq!(looped.status.code(), Some(128));
    assert_eq!(stderr(&looped).lines().count(), 1, "{}", stderr(&looped));
    // The bounds of docs/security.md: names of letters, digits and -, at most 64; values of 4 KiB.
    for (key, value) in [
        ("alias.a/b", "log".to_string()),
        (&*format!("alias.{}", "n".repeat(65)), "log".to_string()),
        ("alias.big", "x".repeat(4097)),
        ("alias.empty", " ".to_string()),
    ] {
        let refused = dmv_out(&d, &["config", key, &value]);
        assert_eq!(refused.status.code(), Some(128), "{key}");
    }
    // A command's own name is never an alias.
    dmv(&d, &["config", "alias.log", "status"]);
    assert!(dmv(&d, &["log", "-1", "--format=%s"]).starts_with("c3"));
    // core.editor writes the message of a commit without -m.
    let editor = t.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\necho 'written by core.editor' > \"$1\"\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&editor)
        .status()
        .unwrap();
    dmv(&d, &["config", "core.editor", editor.to_str().unwrap()]);
    write(&d, "edited.txt", "e");
    dmv(&d, &["add", "edited.txt"]);
    dmv(&d, &["commit", "-q"]);
    assert_eq!(dmv(&d, &["last"]), "written by core.editor\n");
    // Help says what the command does first.
    for (cmd, first) in [
        ("log", "Show commit history"),
        ("diff", "Show changes"),
        ("show", "Show a commit"),
    ] {
        let help = dmv(&d, &[cmd, "--help"]);
        assert!(help.starts_with(first), "{cmd}: {help}");
    }
    // A mistyped option: git's status, no tip to pass it as a value, no far-fetched suggestion.
    for (args, suggestion) in [
        (&["log", "--decorat"][..], Some("--decorate")),
        (&["add", "-x", "a"], None),
        (&["log", "--colour-moved"], Some("--color")),
        (&["log", "--abbrev"], None),
    ] {
        let out = dmv_out(&d, args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(129), "{said}");
        assert!(
            said.starts_with(&format!("error: unknown option '{}'", args[1])),
            "{said}"
        );
        assert!(!said.contains("as a value"), "{said}");
        assert_eq!(
            said.contains("did you mean"),
            suggestion.is_some(),
            "{said}"
        );
    }
    dmv(&d, &["commit", "-q", "--allow-empty", "-m", "x"]);
    dmv(&d, &["commit", "-q", "--allow-empty", "-m", "y"]);
    assert!(dmv(&d, &["reflog"]).lines().count() > 2);
    let two = dmv(&d, &["reflog", "-2"]);
    assert_eq!(two.lines().count(), 2, "{two}");
    assert!(two.starts_with(&dmv(&d, &["reflog", "-n", "1"])));
}

/// `ls-files` and its `-o`, `-m`, `-d`, `-z`, as git's.
#[test]
fn ls_files_lists_what_gits_lists() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    for f in ["a.txt", "b c.txt", "dir/d.txt", "dir/e.txt", "z.txt"] {
        w.write(f, f);
    }
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.write("a.txt", "changed");
    w.write("new/f.txt", "f");
    for tree in [&w.g, &w.d] {
        std::fs::remove_file(tree.join("dir/e.txt")).unwrap();
    }
    w.write("staged.txt", "s");
    w.both(&["add", "staged.txt"]);
    for args in [
        &["ls-files"][..],
        &["ls-files", "dir"],
        &["ls-files", "-o"],
        &["ls-files", "-m"],
        &["ls-files", "-d"],
        &["ls-files", "-z"],
    ] {
        let want = match args.get(1) {
            Some(&"-o") => git(&w.g, &["ls-files", "-o", "--exclude-standard"]),
            _ => git(&w.g, args),
        };
        assert_eq!(dmv(&w.d, args), want, "{args:?}");
    }
}

/// `merge` ends with git's diffstat of what it brought.
#[test]
fn merge_prints_gits_diffstat() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    w.write("a.txt", "one\n");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.both(&["switch", "-q", "-c", "side"]);
    w.write("a.txt", "one\ntwo\n");
    w.write("dir/b.txt", "b\nb\nb\n");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "two"]);
    w.both(&["switch", "-q", "main"]);
    let stat = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(" | "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let (g, d) = w.both(&["merge", "side"]);
    assert_eq!(stat(&d), stat(&g), "{d}\n{g}");
    assert_eq!(stat(&d).len(), 2, "{d}");
}

/// `cherry-pick -x` names the picked commit as git's does, also when the
/// pick is concluded after a conflict.
#[test]
fn cherry_pick_x_names_the_picked_commit() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    w.write("a.txt", "one\n");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.both(&["switch", "-q", "-c", "side"]);
    w.write("b.txt", "b\n");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "add b"]);
    w.write("a.txt", "side\n");
    w.both(&["commit", "-q", "-a", "-m", "change a on the side"]);
    w.both(&["switch", "-q", "main"]);
    let picked = |dir: &Path, is_git: bool, rev: &str| match is_git {
        true => git(dir, &["rev-parse", rev]),
        false => dmv(dir, &["rev-parse", rev]),
    };
    let message = |dir: &Path, is_git: bool| match is_git {
        true => git(dir, &["log", "-1", "--format=%B"]),
        false => dmv(dir, &["log", "-1", "--format=%B"]),
    };
    let side_b = (picked(&w.g, true, "side~1"), picked(&w.d, false, "side~1"));
    w.both(&["cherry-pick", "-x", "side~1"]);
    for (dir, is_git, id) in [(&w.g, true, &side_b.0), (&w.d, false, &side_b.1)] {
        assert_eq!(
            message(dir, is_git).trim_end(),
            format!("add b\n\n(cherry picked from commit {})", id.trim()),
            "git: {is_git}"
        );
    }
    // A conflict, settled, then --continue: the line is still there.
    w.write("a.txt", "main\n");
    w.both(&["commit", "-q", "-a", "-m", "change a on main"]);
    let side = picked(&w.d, false, "side");
    let out = dmv_out(&w.d, &["cherry-pick", "-x", "side"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    write(&w.d, "a.txt", "settled\n");
    dmv(&w.d, &["add", "a.txt"]);
    dmv(&w.d, &["cherry-pick", "--continue"]);
    assert_eq!(
        message(&w.d, false).trim_end(),
        format!(
            "change a on the side\n\n(cherry picked from commit {})",
            side.trim()
        )
    );
    assert!(!w.d.join(".dmv/MERGE_MSG").exists());
    // Without -x, the picked message as it was.
    dmv(&w.d, &["switch", "-q", "-c", "again", "main~3"]);
    dmv(&w.d, &["cherry-pick", "side~1"]);
    assert_eq!(message(&w.d, false).trim_end(), "add b");
}

/// `stash push -- PATH`: only those paths' changes go aside, as git's.
#[test]
fn stash_push_of_paths_keeps_the_other_changes() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    for f in ["a.txt", "dir/b.txt", "dir/c.txt", "keep.txt"] {
        w.write(f, "one\n");
    }
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.write("a.txt", "two\n");
    w.write("dir/b.txt", "two\n");
    w.write("keep.txt", "two\n");
    w.write("dir/new.txt", "new\n");
    w.both(&["add", "keep.txt", "dir/new.txt"]);
    w.write("dir/c.txt", "staged then changed\n");
    git_at(&w.g, 1_700_000_000, &["stash", "push", "-q", "--", "dir"]);
    dmv(&w.d, &["stash", "push", "--", "dir"]);
    w.agree("stash push -- dir");
    for f in ["dir/b.txt", "dir/c.txt", "a.txt"] {
        assert_eq!(
            std::fs::read(w.d.join(f)).unwrap(),
            std::fs::read(w.g.join(f)).unwrap(),
            "{f}"
        );
    }
    assert!(!w.d.join("dir/new.txt").exists());
    git(&w.g, &["stash", "pop", "-q"]);
    dmv(&w.d, &["stash", "pop"]);
    w.agree("stash pop");
    for f in ["dir/b.txt", "dir/c.txt", "dir/new.txt", "a.txt", "keep.txt"] {
        assert_eq!(
            std::fs::read(w.d.join(f)).unwrap(),
            std::fs::read(w.g.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// `commit PATH…` (git's `--only`), `-o` and `-i`: only those paths'
/// working-tree state is committed, the rest of what is staged stays staged.
#[test]
fn commit_of_paths_takes_only_them_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    for f in ["a.txt", "b.txt", "c.txt", "dir/d.txt", "dir/e.txt"] {
        w.write(f, "one\n");
    }
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    for f in ["a.txt", "b.txt", "c.txt", "dir/d.txt"] {
        w.write(f, "two\n");
    }
    w.both(&["add", "b.txt"]);
    w.write("b.txt", "three\n");
    w.both(&["commit", "-q", "-m", "only a", "a.txt"]);
    w.agree("commit -m MSG a.txt");
    w.both(&["commit", "-q", "-o", "-m", "only the folder", "dir"]);
    w.agree("commit -o dir");
    // b's working-tree state, not its staged one.
    w.both(&["commit", "-q", "-m", "b as it is now", "--", "b.txt"]);
    w.agree("commit -- b.txt");
    assert_eq!(dmv(&w.d, &["cat", "HEAD:b.txt"]), "three\n");
    w.write("a.txt", "four\n");
    w.both(&["add", "dir/e.txt"]);
    w.write("dir/e.txt", "changed\n");
    w.both(&["add", "dir/e.txt"]);
    w.both(&["commit", "-q", "-i", "-m", "include a", "a.txt"]);
    w.agree("commit -i a.txt");
    for tree in [&w.g, &w.d] {
        std::fs::remove_file(tree.join("c.txt")).unwrap();
    }
    w.write("a.txt", "five\n");
    w.both(&["add", "a.txt"]);
    w.both(&["commit", "-q", "-m", "c goes", "c.txt"]);
    w.agree("commit of a deleted path");
    for tree in [&w.g, &w.d] {
        assert_eq!(
            std::fs::read_to_string(tree.join("a.txt")).unwrap(),
            "five\n"
        );
    }
    for f in ["a.txt", "b.txt", "dir/d.txt", "dir/e.txt"] {
        let rev = format!("HEAD:{f}");
        assert_eq!(dmv(&w.d, &["cat", &rev]), git(&w.g, &["show", &rev]), "{f}");
    }
    assert_ne!(dmv_out(&w.d, &["cat", "HEAD:c.txt"]).status.code(), Some(0));
    // Refused, with nothing changed: an untracked path, -a with paths, -i without.
    write(&w.d, "new.txt", "new\n");
    for args in [
        &["commit", "-m", "x", "new.txt"][..],
        &["commit", "-a", "-m", "x", "a.txt"],
        &["commit", "-i", "-m", "x"],
    ] {
        let out = dmv_out(&w.d, args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(
            stderr(&out).lines().count(),
            1,
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let both = dmv_out(&w.d, &["commit", "-i", "-o", "-m", "x", "a.txt"]);
    assert_eq!(both.status.code(), Some(129), "{}", stderr(&both));
    std::fs::remove_file(w.d.join("new.txt")).unwrap();
    w.agree("refusals");
}

/// Lines of `text` without git's and DMV's dates and authors, ids masked.
fn dateless(text: &str) -> Vec<String> {
    masked(text)
        .into_iter()
        .filter(|l| !l.starts_with("Date:") && !l.starts_with("Author:"))
        .collect()
}

/// `merge --squash`: the result staged, HEAD where it was, git's
/// SQUASH_MSG taken by the next commit; with conflicts, a commit on HEAD
/// alone once they are settled.
#[test]
fn merge_squash_stages_the_result_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    w.write("a.txt", "one\n");
    w.both(&["add", "-A"]);
    w.both(&["commit", "-q", "-m", "one"]);
    w.both(&["switch", "-q", "-c", "side"]);
    w.write("b.txt", "b\n");
    w.both(&["add", "b.txt"]);
    w.both(&["commit", "-q", "-m", "add b", "-m", "with a body"]);
    w.write("a.txt", "one\ntwo\n");
    w.both(&["commit", "-q", "-a", "-m", "change a"]);
    w.both(&["switch", "-q", "main"]);
    // A fast-forward, squashed: git's lines, HEAD stays.
    let (g, d) = w.both(&["merge", "--squash", "side"]);
    assert!(d.starts_with("Updating "), "{d}");
    assert_eq!(dateless(&d)[1..3], dateless(&g)[1..3], "{d}\n{g}");
    w.agree("merge --squash (fast-forward)");
    let squash_msg = |dir: &Path, git: bool| {
        std::fs::read_to_string(
            dir.join(if git { ".git" } else { ".dmv" })
                .join("SQUASH_MSG"),
        )
        .unwrap()
    };
    assert_eq!(
        dateless(&squash_msg(&w.d, false)),
        dateless(&squash_msg(&w.g, true))
    );
    w.both(&["commit", "-q", "--no-edit"]);
    w.agree("commit after merge --squash");
    // (git's %B ends in a blank line, DMV's does not: compared without it.)
    assert_eq!(
        dateless(dmv(&w.d, &["log", "-1", "--format=%B"]).trim_end()),
        dateless(git(&w.g, &["log", "-1", "--format=%B"]).trim_end())
    );
    assert!(!w.d.join(".dmv/SQUASH_MSG").exists());
    // Both sides moved: a three-way result, staged.
    w.both(&["switch", "-q", "side"]);
    w.write("s.txt", "s\n");
    w.both(&["add", "s.txt"]);
    w.both(&["commit", "-q", "-m", "add s"]);
    w.both(&["switch", "-q", "main"]);
    w.write("m.txt", "m\n");
    w.both(&["add", "m.txt"]);
    w.both(&["commit", "-q", "-m", "add m"]);
    let (g, d) = w.both(&["merge", "--squash", "side"]);
    assert_eq!(d, g);
    w.agree("merge --squash (three-way)");
    w.both(&["commit", "-q", "-m", "squashed s"]);
    w.agree("commit -m after merge --squash");
    assert!(!w.d.join(".dmv/SQUASH_MSG").exists());
    // Already there.
    let (g, d) = w.both(&["merge", "--squash", "side"]);
    assert_eq!(d, g);
    // A conflict: settled, then committed on HEAD alone.
    w.both(&["switch", "-q", "side"]);
    w.write("a.txt", "side\n");
    w.both(&["commit", "-q", "-a", "-m", "a on the side"]);
    w.both(&["switch", "-q", "main"]);
    w.write("a.txt", "main\n");
    w.both(&["commit", "-q", "-a", "-m", "a on main"]);
    let out = dmv_out(&w.d, &["merge", "--squash", "side"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.starts_with("Squash commit -- not updating HEAD\n"),
        "{said}"
    );
    let g_out = Command::new("git")
        .current_dir(&w.g)
        .args(["merge", "--squash", "side"])
        .output()
        .unwrap();
    assert_eq!(g_out.status.code(), Some(1));
    w.agree("merge --squash with a conflict");
    w.write("a.txt", "settled\n");
    w.both(&["add", "a.txt"]);
    w.both(&["commit", "-q", "--no-edit"]);
    w.agree("commit after settling a squash");
    assert_eq!(
        dmv(&w.d, &["log", "-1", "--format=%P"]).split(' ').count(),
        1
    );
    assert_eq!(
        dateless(&dmv(&w.d, &["log", "-1", "--format=%B"]))[..3],
        dateless(&git(&w.g, &["log", "-1", "--format=%B"]))[..3]
    );
}

/// A Git history with a merge, each commit a minute after the one
/// before, imported into DMV: c1 c2 (side: s1 s2 s3) c3 c4 M c5 c6 c7;
/// s2 adds the file `bug`, which every later commit keeps.
fn history_with_a_bug(t: &Path) -> (PathBuf, PathBuf) {
    let g = t.join("g");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    let mut minute = 0;
    let mut commit = |file: &str, subject: &str| {
        minute += 1;
        write(&g, file, subject);
        git_at(&g, 1_700_000_000 + 60 * minute, &["add", "."]);
        git_at(
            &g,
            1_700_000_000 + 60 * minute,
            &["commit", "-q", "-m", subject],
        );
    };
    commit("a", "c1");
    commit("a", "c2");
    git(&g, &["checkout", "-q", "-b", "side"]);
    commit("s", "s1");
    commit("bug", "s2");
    commit("s", "s3");
    git(&g, &["checkout", "-q", "main"]);
    commit("a", "c3");
    commit("a", "c4");
    git_at(
        &g,
        1_700_000_000 + 60 * 20,
        &["merge", "-q", "--no-ff", "-m", "M", "side"],
    );
    for (i, s) in ["c5", "c6", "c7"].iter().enumerate() {
        write(&g, "a", s);
        let at = 1_700_000_000 + 60 * (21 + i as u64);
        git_at(&g, at, &["add", "."]);
        git_at(&g, at, &["commit", "-q", "-m", s]);
    }
    let d = t.join("d");
    dmv(t, &["init", "-q", d.to_str().unwrap()]);
    dmv(&d, &["import", "git", g.to_str().unwrap()]);
    (g, d)
}

/// The lines a bisection prints that git's and DMV's share, ids masked
/// (DMV's first-bad report ends in its own diffstat and date).
fn bisect_lines(text: &str) -> Vec<String> {
    masked(text)
        .into_iter()
        .filter(|l| {
            l.starts_with("Bisecting:")
                || l.starts_with("[ID]")
                || l.starts_with("ID is the first bad commit")
                || l.starts_with("status:")
                || l.starts_with("running")
                || l.starts_with("bisect found")
        })
        .collect()
}

/// `bisect start|good|bad|run|log|reset`: the commits git tests, its
/// words, and the first bad commit, on the same history.
#[test]
fn bisect_tests_the_commits_git_tests() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history_with_a_bug(t.path());
    // By hand: a verdict at each step from whether `bug` is there.
    let mut said = (String::new(), String::new());
    for (args, is_git) in [
        (&["bisect", "start"][..], true),
        (&["bisect", "start"], false),
    ] {
        let out = if is_git { git(&g, args) } else { dmv(&d, args) };
        if is_git {
            said.0 += &out
        } else {
            said.1 += &out
        }
    }
    for step in [&["bisect", "bad"][..], &["bisect", "good", "HEAD~6"]] {
        said.0 += &git(&g, step);
        said.1 += &dmv(&d, step);
    }
    for _ in 0..6 {
        let verdict = |dir: &Path| match dir.join("bug").exists() {
            true => "bad",
            false => "good",
        };
        let (gv, dv) = (verdict(&g), verdict(&d));
        assert_eq!(dv, gv, "{}\n{}", said.0, said.1);
        said.0 += &git(&g, &["bisect", gv]);
        said.1 += &dmv(&d, &["bisect", dv]);
        if said.0.contains("first bad commit") {
            break;
        }
    }
    assert!(said.1.contains("is the first bad commit"), "{}", said.1);
    assert_eq!(bisect_lines(&said.1), bisect_lines(&said.0));
    let first_bad = |text: &str| {
        text.lines()
            .find(|l| l.ends_with("is the first bad commit"))
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        dmv(&d, &["log", "-1", "--format=%s", &first_bad(&said.1)]),
        "s2\n"
    );
    let log = |text: String| -> Vec<String> { masked(&text.replace("git bisect", "dmv bisect")) };
    assert_eq!(
        log(dmv(&d, &["bisect", "log"])),
        log(git(&g, &["bisect", "log"]))
    );
    git(&g, &["bisect", "reset"]);
    dmv(&d, &["bisect", "reset"]);
    assert_eq!(dmv(&d, &["branch", "--show-current"]), "main\n");
    assert!(!d.join(".dmv/BISECT_STATE").exists());
    // `run`, started with both ends.
    let run = [
        "bisect",
        "run",
        "sh",
        "-c",
        "if test -e bug; then exit 1; fi",
    ];
    git(&g, &["bisect", "start", "HEAD", "HEAD~6"]);
    let (gs, ds) = (git(&g, &run), {
        dmv(&d, &["bisect", "start", "HEAD", "HEAD~6"]);
        dmv(&d, &run)
    });
    assert_eq!(bisect_lines(&ds), bisect_lines(&gs), "{ds}\n{gs}");
    dmv(&d, &["bisect", "reset"]);
    assert_eq!(dmv(&d, &["status", "--porcelain"]), "");
}

/// What a bisection refuses, and what a kill leaves: uncommitted changes
/// a checkout would lose refuse the start with nothing kept; a state cut
/// short or damaged is ended by `bisect reset`; only skipped commits left
/// say so (exit 2).
#[test]
fn bisect_refuses_what_would_lose_work_and_reset_mends() {
    let t = tempfile::tempdir().unwrap();
    let (_g, d) = history_with_a_bug(t.path());
    write(&d, "a", "mine");
    let out = dmv_out(&d, &["bisect", "start", "HEAD", "HEAD~6"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!d.join(".dmv/BISECT_STATE").exists());
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "mine");
    dmv(&d, &["restore", "a"]);
    // A verdict recorded, its checkout killed before it ran: reset goes back.
    dmv(&d, &["bisect", "start", "HEAD", "HEAD~6"]);
    let out = dmv_out(&d, &["bisect", "start"]);
    assert_eq!(out.status.code(), Some(128));
    let killed = Command::new(bin())
        .current_dir(&d)
        .env("DMV_FAILPOINT", "bisect-before-checkout")
        .args(["bisect", "good"])
        .output()
        .unwrap();
    assert!(!killed.status.success());
    assert!(dmv(&d, &["bisect", "log"]).contains("dmv bisect good"));
    dmv(&d, &["bisect", "reset"]);
    assert_eq!(dmv(&d, &["branch", "--show-current"]), "main\n");
    assert_eq!(dmv(&d, &["status", "--porcelain"]), "");
    dmv(&d, &["bisect", "start", "HEAD", "HEAD~6"]);
    std::fs::write(d.join(".dmv/BISECT_STATE"), "dmv-bisect 1\nstart bra").unwrap();
    let out = dmv_out(&d, &["bisect", "good"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    dmv(&d, &["bisect", "reset", "main"]);
    assert_eq!(dmv(&d, &["branch", "--show-current"]), "main\n");
    assert!(!d.join(".dmv/BISECT_STATE").exists());
    // Skipping everything between.
    dmv(&d, &["bisect", "start", "HEAD~1", "HEAD~3"]);
    let out = dmv_out(&d, &["bisect", "skip"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("There are only 'skip'ped commits left to test."),
        "{said}"
    );
    dmv(&d, &["bisect", "reset"]);
    // Good after bad: refused in one line.
    let out = dmv_out(&d, &["bisect", "start", "HEAD~6", "HEAD"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    dmv(&d, &["bisect", "reset"]);
    assert_eq!(dmv(&d, &["status", "--porcelain"]), "");
}

/// In a meta clone (no file data), each bisect step fetches the data of
/// the commit it checks out that the clone lacks, and nothing more: the
/// counts are exact.
#[test]
fn bisect_in_a_partial_clone_fetches_only_what_it_checks_out() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let src = t.join("src");
    dmv(t, &["init", "-q", src.to_str().unwrap()]);
    for f in ["f0", "f1", "f2", "f3"] {
        write(&src, f, &format!("{f} at c0\n"));
    }
    dmv(&src, &["add", "-A"]);
    dmv(&src, &["commit", "-q", "-m", "c0"]);
    for i in 1..=8 {
        write(&src, "f0", &format!("f0 at c{i}\n"));
        dmv(&src, &["commit", "-q", "-a", "-m", &format!("c{i}")]);
    }
    dmv(
        t,
        &[
            "clone",
            "-q",
            "--slice",
            "meta",
            src.to_str().unwrap(),
            "phone",
        ],
    );
    let phone = t.join("phone");
    let fetched = |out: &std::process::Output| -> usize {
        assert!(out.status.success(), "{}", stderr(out));
        stderr(out)
            .lines()
            .find_map(|l| {
                l.strip_prefix("fetched the data of ")?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    };
    let subject = || dmv(&phone, &["log", "-1", "--format=%s"]);
    // c4: f0's version there and f1, f2, f3's.
    let out = dmv_out(&phone, &["bisect", "start", "HEAD", "HEAD~8"]);
    assert_eq!((fetched(&out), subject()), (4, "c4\n".to_string()));
    assert_eq!(
        std::fs::read_to_string(phone.join("f0")).unwrap(),
        "f0 at c4\n"
    );
    // c2, then c3: one version of f0 each.
    let out = dmv_out(&phone, &["bisect", "bad"]);
    assert_eq!((fetched(&out), subject()), (1, "c2\n".to_string()));
    let out = dmv_out(&phone, &["bisect", "good"]);
    assert_eq!((fetched(&out), subject()), (1, "c3\n".to_string()));
    let out = dmv_out(&phone, &["bisect", "bad"]);
    assert_eq!(fetched(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("is the first bad commit"));
    let out = dmv_out(&phone, &["bisect", "reset"]);
    assert_eq!(fetched(&out), 0);
    assert_eq!(subject(), "c8\n");
}

/// `dmv completions bash` completes branch, tag and remote names where a
/// command takes them (run in bash, when bash is there).
#[test]
fn bash_completes_branch_tag_and_remote_names() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    dmv(t.path(), &["init", "-q", d.to_str().unwrap()]);
    write(&d, "a", "a");
    dmv(&d, &["add", "a"]);
    dmv(&d, &["commit", "-q", "-m", "one"]);
    dmv(&d, &["branch", "feature-x"]);
    dmv(&d, &["tag", "v1.0"]);
    dmv(
        &d,
        &["remote", "add", "upstream", t.path().to_str().unwrap()],
    );
    let script = t.path().join("dmv.bash");
    std::fs::write(&script, dmv(&d, &["completions", "bash"])).unwrap();
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let complete = |line: &str| -> String {
        let words: Vec<&str> = line.split(' ').collect();
        let program = format!(
            "source {}; complete -p dmv; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _dmv_with_refs dmv '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = Command::new("bash")
            .current_dir(&d)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin_dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = complete("dmv switch fea");
    assert!(said.contains("-F _dmv_with_refs dmv"), "{said}");
    assert!(said.lines().any(|l| l == "feature-x"), "{said}");
    assert!(complete("dmv merge v1").lines().any(|l| l == "v1.0"));
    assert!(complete("dmv push up").lines().any(|l| l == "upstream"));
    assert!(!complete("dmv add fea").lines().any(|l| l == "feature-x"));
}

/// A repository with a branch `feature-x`, a tag `v1.0`, a remote
/// `upstream` and a file `feature-notes.txt`, for the completion tests.
fn repo_with_names(t: &Path) -> PathBuf {
    let d = t.join("d");
    dmv(t, &["init", "-q", d.to_str().unwrap()]);
    write(&d, "feature-notes.txt", "a");
    dmv(&d, &["add", "feature-notes.txt"]);
    dmv(&d, &["commit", "-q", "-m", "one"]);
    dmv(&d, &["branch", "feature-x"]);
    dmv(&d, &["tag", "v1.0"]);
    dmv(&d, &["remote", "add", "upstream", t.to_str().unwrap()]);
    d
}

/// PATH with the dmv under test first, as the completion scripts run `dmv`.
fn path_with_dmv() -> String {
    format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Types a line and a Tab into an interactive zsh (in a pseudo-terminal,
/// through zsh/zpty) whose completion system autoloads `$1/_dmv`, with
/// `compadd` wrapped to write each word it is offered to `$1/offered`.
const ZSH_TYPES_A_TAB: &str = r#"
zmodload zsh/zpty || exit 2
dir=$1 line=$2
export DMV_COMPLETION_OUT=$dir/offered DMV_COMPLETION_DIR=$dir
rm -f $dir/offered $dir/done
zpty z zsh -f -i
# Each line is written once the prompt is back: typed ahead while a
# command runs, ^U would be the terminal's, not zle's.
ready() { zpty -r z seen '*READY> ' }
zpty -w z 'PS1="RE""ADY> " RPS1= ; unsetopt auto_list auto_menu beep'
ready
zpty -w z 'fpath=($DMV_COMPLETION_DIR $fpath); autoload -Uz compinit; compinit -u -D'
ready
zpty -w z 'compadd() { if (( ${@[(I)-[OAD]]} )); then builtin compadd "$@"; return; fi; local -a hits; builtin compadd -O hits "$@"; (( $#hits )) && print -rl -- $hits >> $DMV_COMPLETION_OUT; builtin compadd "$@"; }'
ready
zpty -w -n z "$line"$'\t'
zpty -w z $'\C-u: > $DMV_COMPLETION_DIR/done'
ready
for i in {1..100}; do [[ -e $dir/done ]] && break; sleep 0.1; done
zpty -d z
[[ -e $dir/done ]] || { print -u2 "zsh did not finish the completion"; exit 1; }
[[ -e $dir/offered ]] && cat $dir/offered
exit 0
"#;

/// `dmv completions zsh`, autoloaded from $fpath as a user installs it,
/// offers branch, tag and remote names where a command takes a revision or
/// a remote, and paths where it takes paths, when Tab is pressed.
#[test]
fn zsh_completes_branch_tag_remote_and_path_names() {
    assert!(
        Command::new("zsh").args(["-fc", "true"]).output().is_ok(),
        "zsh is not installed (scripts/test installs it)"
    );
    let t = tempfile::tempdir().unwrap();
    let d = repo_with_names(t.path());
    let functions = t.path().join("zsh");
    std::fs::create_dir(&functions).unwrap();
    std::fs::write(functions.join("_dmv"), dmv(&d, &["completions", "zsh"])).unwrap();
    let driver = t.path().join("types-a-tab.zsh");
    std::fs::write(&driver, ZSH_TYPES_A_TAB).unwrap();
    let offered = |line: &str| -> Vec<String> {
        let out = Command::new("timeout")
            .current_dir(&d)
            .env("PATH", path_with_dmv())
            .arg("60")
            .arg("zsh")
            .arg("-f")
            .arg(&driver)
            .arg(&functions)
            .arg(line)
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let has = |line: &str, word: &str| offered(line).iter().any(|w| w == word);
    // The command names, as clap's script gives them, still come.
    assert!(has("dmv sw", "switch"));
    assert!(has("dmv switch fea", "feature-x"));
    assert!(!has("dmv switch fea", "feature-notes.txt"));
    assert!(has("dmv merge v1", "v1.0"));
    assert!(has("dmv push up", "upstream"));
    assert!(has("dmv bisect good fea", "feature-x"));
    // A revision or paths: both.
    assert!(has("dmv diff fea", "feature-x"));
    assert!(has("dmv diff fea", "feature-notes.txt"));
    // Paths only: no names.
    assert!(has("dmv add fea", "feature-notes.txt"));
    assert!(!has("dmv add fea", "feature-x"));
    assert!(!has("dmv checkout main -- fea", "feature-x"));
    assert!(has("dmv checkout main -- fea", "feature-notes.txt"));
}

/// `dmv completions fish` offers the same names: `complete -C` in a real
/// fish prints what Tab would offer.
#[test]
fn fish_completes_branch_tag_remote_and_path_names() {
    assert!(
        Command::new("fish").args(["-c", "true"]).output().is_ok(),
        "fish is not installed (scripts/test installs it)"
    );
    let t = tempfile::tempdir().unwrap();
    let d = repo_with_names(t.path());
    let script = t.path().join("dmv.fish");
    std::fs::write(&script, dmv(&d, &["completions", "fish"])).unwrap();
    let offered = |line: &str| -> Vec<String> {
        let out = Command::new("fish")
            .current_dir(&d)
            .env("PATH", path_with_dmv())
            .arg("--no-config")
            .arg("-c")
            .arg(format!("source {}; complete -C '{line}'", script.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        // Each candidate, then a tab and its description.
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    let has = |line: &str, word: &str| offered(line).iter().any(|w| w == word);
    assert!(has("dmv sw", "switch"));
    assert!(has("dmv checkout fea", "feature-x"));
    assert!(has("dmv switch fea", "feature-x"));
    assert!(!has("dmv switch fea", "feature-notes.txt"));
    assert!(has("dmv merge v1", "v1.0"));
    assert!(has("dmv push up", "upstream"));
    assert!(has("dmv bisect good fea", "feature-x"));
    assert!(has("dmv remote remove up", "upstream"));
    assert!(has("dmv diff fea", "feature-x"));
    assert!(has("dmv diff fea", "feature-notes.txt"));
    assert!(has("dmv add fea", "feature-notes.txt"));
    assert!(!has("dmv add fea", "feature-x"));
}

/// `dmv manpages --install` writes where `man` looks without MANPATH.
#[test]
fn manpages_install_where_man_finds_them() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    let out = Command::new(bin())
        .current_dir(t.path())
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .args(["manpages", "--install"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let page = home.join(".local/share/man/man1/dmv-log.1");
    assert!(page.exists());
    assert!(home.join(".local/share/man/man1/dmv.1").exists());
    if Command::new("man").arg("-w").arg("man").output().is_err() {
        return;
    }
    let found = Command::new("man")
        .env_remove("MANPATH")
        .env("HOME", &home)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", home.join(".local/bin").display()),
        )
        .args(["-w", "dmv-log"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&found.stdout).trim(),
        page.display().to_string(),
        "{}",
        stderr(&found)
    );
}

/// `add -p` with the same answers piped to git's and to DMV's stages the
/// same: hunks taken and left, a hunk split and half of it taken, a
/// deletion, `a` and `d` for the rest of a file, `q`; binary files are not
/// asked about.
#[test]
fn add_p_stages_the_hunks_git_stages() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    let numbers: String = (1..=12).map(|i| format!("{i}\n")).collect();
    w.write("a.txt", &numbers);
    w.write("b.txt", "a\nb\nc\nd\ne\n");
    w.write("c.txt", &numbers);
    w.write("gone.txt", "gone\n");
    for dir in [&w.g, &w.d] {
        std::fs::write(dir.join("bin.dat"), b"a\0b").unwrap();
    }
    w.both(&["add", "."]);
    w.both(&["commit", "-q", "-m", "before"]);
    w.write(
        "a.txt",
        &numbers.replace("2\n", "TWO\n").replace("11\n", "ELEVEN\n"),
    );
    w.write("b.txt", "A\nb\nc\nd\nE\n");
    w.write(
        "c.txt",
        &numbers.replace("1\n", "ONE\n").replace("12\n", "TWELVE\n"),
    );
    for dir in [&w.g, &w.d] {
        std::fs::remove_file(dir.join("gone.txt")).unwrap();
        std::fs::write(dir.join("bin.dat"), b"a\0c").unwrap();
    }
    // a.txt: take the first hunk, leave the second; b.txt: split its one
    // hunk, leave the first part, take the second; c.txt: a for both;
    // gone.txt: take the deletion.
    let answers = "y\nn\ns\nn\ny\na\ny\n";
    let piped = |mut c: Command| {
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(answers.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut git_add = Command::new("git");
    git_add.current_dir(&w.g).args(["add", "-p"]);
    let theirs = piped(git_add);
    let mut dmv_add = dmv_cmd(&w.d);
    dmv_add.args(["add", "-p"]);
    let ours = piped(dmv_add);
    assert!(
        ours.contains("(1/2) Stage this hunk [y,n,q,a,d,j,J,g,/,?]? "),
        "{ours}"
    );
    assert!(ours.contains("Split into 2 hunks."), "{ours}");
    assert!(!ours.contains("bin.dat") && !theirs.contains("bin.dat"));
    w.agree("add -p");
    w.both(&["commit", "-q", "-m", "chosen"]);
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert_eq!(
            dmv(&w.d, &["cat", &format!("HEAD:{file}")]),
            git(&w.g, &["show", &format!("HEAD:{file}")]),
            "{file}"
        );
    }
    w.agree("the commit of what add -p chose");
    // q stops at once, nothing more staged.
    w.write("a.txt", &numbers);
    let (g, d) = (w.g.clone(), w.d.clone());
    for (dir, is_git) in [(&g, true), (&d, false)] {
        let mut c = if is_git {
            Command::new("git")
        } else {
            dmv_cmd(dir)
        };
        c.current_dir(dir).args(["add", "-p"]);
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(b"q\n").unwrap();
        assert!(child.wait().unwrap().success());
    }
    w.agree("add -p answered q");
}

/// `add -p`'s `g` (go to a hunk by number, or chosen from a list) and `/`
/// (go to the next hunk matching a regular expression) take git's path
/// through the hunks: the same answers piped to both stage the same, the
/// list is git's, and a number or pattern that finds nothing is said so.
#[test]
fn add_p_goes_to_hunks_by_number_and_by_search_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let w = Twins::new(t.path());
    let numbers: String = (1..=40).map(|i| format!("{i}\n")).collect();
    w.write("a.txt", &numbers);
    w.both(&["add", "."]);
    w.both(&["commit", "-q", "-m", "before"]);
    w.write(
        "a.txt",
        &numbers
            .replace("\n2\n", "\nTWO\n")
            .replace("\n12\n", "\nTWELVE\n")
            .replace("\n22\n", "\nTWENTY-TWO\n")
            .replace("\n32\n", "\nTHIRTY-TWO\n"),
    );
    // No hunk 9, nothing matching zzz; then hunk 3 staged, a search that
    // wraps round to hunk 1 (staged), the list and hunk 4 chosen from it
    // (left), and hunk 2 left.
    let answers = "g9\n/zzz\ng3\ny\n/^\\+TWO\ny\ng\n4\nn\nn\n";
    // What it printed and, after it, what it said on standard error.
    let piped = |mut c: Command| {
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(answers.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let mut git_add = Command::new("git");
    git_add.current_dir(&w.g).args(["add", "-p"]);
    let theirs = piped(git_add);
    let mut dmv_add = dmv_cmd(&w.d);
    dmv_add.args(["add", "-p"]);
    let ours = piped(dmv_add);
    for said in [
        "Sorry, only 4 hunks available.",
        "No hunk matches the given pattern",
        "go to which hunk? ",
    ] {
        assert!(theirs.contains(said), "{theirs}");
        assert!(ours.contains(said), "{said}: {ours}");
    }
    // The list `g` shows: each hunk's number, whether it is staged, where
    // it is and its first changed line.
    let listed = |text: &str| -> Vec<String> {
        text.split('\n')
            .map(|l| l.rsplit("? ").next().unwrap_or(l))
            .filter(|l| {
                l.len() > 4 && l.as_bytes()[3] == b':' && l[1..3].trim().parse::<u32>().is_ok()
            })
            .map(str::to_string)
            .collect()
    };
    assert_eq!(listed(&theirs).len(), 4, "{theirs}");
    assert_eq!(listed(&ours), listed(&theirs));
    w.agree("add -p with g and /");
    w.both(&["commit", "-q", "-m", "chosen"]);
    assert_eq!(
        dmv(&w.d, &["cat", "HEAD:a.txt"]),
        git(&w.g, &["show", "HEAD:a.txt"])
    );
    w.agree("the commit of what g and / chose");
}

/// A Git history made with `git fast-import` from `commits` (each a
/// subject and the indices of its parents among the commits before it,
/// first parent first), dated a minute apart in that order, with the
/// branches `branches` names (each at a commit's index; `main` is HEAD),
/// and DMV's import of it.
fn fast_imported(
    t: &Path,
    commits: &[(String, Vec<usize>)],
    branches: &[(String, usize)],
) -> (PathBuf, PathBuf) {
    let g = t.join("g");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    for (i, (subject, parents)) in commits.iter().enumerate() {
        let time = 1_700_000_000 + 60 * i;
        stream += &format!(
            "commit refs/heads/scratch\nmark :{}\nauthor Ada <ada@example.org> {time} +0000\n\
             committer Ada <ada@example.org> {time} +0000\ndata {}\n{subject}\n",
            i + 1,
            subject.len()
        );
        match parents.split_first() {
            Some((first, rest)) => {
                stream += &format!("from :{}\n", first + 1);
                for p in rest {
                    stream += &format!("merge :{}\n", p + 1);
                }
            }
            None => stream += "deleteall\n",
        }
        stream += &format!(
            "M 644 inline {subject}.txt\ndata {}\n{subject}\n\n",
            subject.len() + 1
        );
    }
    for (name, at) in branches {
        stream += &format!("reset refs/heads/{name}\nfrom :{}\n\n", at + 1);
    }
    let mut fast_import = Command::new("git")
        .current_dir(&g)
        .args(["fast-import", "--quiet"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &g)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    fast_import
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(fast_import.wait().unwrap().success());
    git(&g, &["update-ref", "-d", "refs/heads/scratch"]);
    let d = t.join("d");
    dmv(t, &["init", "-q", d.to_str().unwrap()]);
    dmv(&d, &["import", "git", g.to_str().unwrap()]);
    (g, d)
}

/// `git log ARGS` in `g` and `dmv log ARGS` in `d` (its import) print the
/// same bytes, once each git id (full or short) is written as DMV's id of
/// the commit with the same subject, and the dates after `Date:` (each
/// tool's own form) are left out.
fn assert_log_as_git(g: &Path, d: &Path, args: &[&str]) {
    let ids = |text: String| -> Vec<(String, String)> {
        text.lines()
            .map(|l| {
                let mut w = l.splitn(3, ' ');
                let (full, short, subject) =
                    (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
                (subject.to_string(), format!("{full} {short}"))
            })
            .collect()
    };
    let by_subject: std::collections::HashMap<String, String> =
        ids(dmv(d, &["log", "--all", "--format=%H %h %s"]))
            .into_iter()
            .collect();
    let mut git_to_dmv = std::collections::HashMap::new();
    for (subject, git_ids) in ids(git(g, &["log", "--all", "--format=%H %h %s"])) {
        let dmv_ids = &by_subject[&subject];
        for (g_id, d_id) in git_ids.split(' ').zip(dmv_ids.split(' ')) {
            git_to_dmv.insert(g_id.to_string(), d_id.to_string());
        }
    }
    // Each run of hex digits that is a git id, replaced whole.
    let mapped = |text: &str| -> String {
        let mut out = String::new();
        let mut run = String::new();
        for c in text.chars().chain(std::iter::once('\n')) {
            if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
                run.push(c);
                continue;
            }
            out += git_to_dmv.get(&run).unwrap_or(&run);
            run.clear();
            out.push(c);
        }
        out.pop();
        out
    };
    let dateless = |text: &str| -> String {
        text.split_inclusive('\n')
            .map(|l| match l.find("Date:") {
                Some(at) => format!("{}Date:\n", &l[..at]),
                None => l.to_string(),
            })
            .collect()
    };
    let log = [&["log"][..], args].concat();
    let want = dateless(&mapped(&git(g, &log)));
    let got = dateless(&dmv(d, &log));
    assert!(
        want.contains('*'),
        "git log {args:?} drew no graph:\n{want}"
    );
    assert_eq!(got, want, "log {args:?}\n--- dmv:\n{got}\n--- git:\n{want}");
}

/// Commits `(subject, parents)` from a compact text: `name:parent,parent`
/// each, parents named before; a name alone is a root commit.
fn commits_of(text: &str) -> Vec<(String, Vec<usize>)> {
    let mut names: Vec<&str> = Vec::new();
    let mut commits = Vec::new();
    for spec in text.split_whitespace() {
        let (name, parents) = spec.split_once(':').unwrap_or((spec, ""));
        let parents = parents
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                names
                    .iter()
                    .position(|n| n == &p)
                    .expect("a parent named before")
            })
            .collect();
        names.push(name);
        commits.push((name.to_string(), parents));
    }
    commits
}

/// `log --graph` draws what git 2.39 draws, byte for byte (trailing
/// spaces included), on the histories whose drawing git makes special: a
/// fork and its merge, two branches merged in turn, a branch forked far
/// below its merge (a lane joining two columns away over two rows),
/// criss-cross merges, octopus merges of 3 and 4 parents (which `dmv
/// import git` keeps), and many branch tips never merged; with one line
/// per commit, git's default layout, --decorate, --all, formats and the
/// changed files beside the lanes, and of a range (no lanes to its far end).
#[test]
fn log_graph_draws_histories_as_git_does() {
    // What each history is, its commits (as `commits_of` reads them), and its branches.
    type Branches<'a> = &'a [(&'a str, &'a str)];
    let histories: [(&str, &str, Branches); 7] = [
        (
            "fork and merge",
            "a b:a s:a c:b m:c,s d:m",
            &[("main", "d"), ("side", "s")],
        ),
        (
            "two branches merged in turn",
            "a b:a x1:b y1:b x2:x1 y2:y1 c:b m1:c,x2 m2:m1,y2 d:m2",
            &[("main", "d"), ("x", "x2"), ("y", "y2")],
        ),
        (
            "a branch forked far below",
            "a f1:a b:a c:b e:c g:e h:g m:h,f1 i:m j:b k:j",
            &[("main", "i"), ("far", "f1"), ("late", "k")],
        ),
        (
            "criss-cross merges",
            "a b:a l1:b r1:b l2:l1,r1 r2:r1,l1 l3:l2 r3:r2,l2 t:l3,r3",
            &[("main", "t"), ("left", "l3"), ("right", "r3")],
        ),
        (
            "octopus merges of 3 and 4 parents",
            "a b:a p:b q:b r:b o3:b,p,q c:o3 s:c u:c v:c w:c o4:c,s,u,v x:o4 y:w",
            &[("main", "x"), ("r", "r"), ("y", "y")],
        ),
        (
            "an octopus left of open lanes",
            "a b:a z1:a z2:a p:b q:b o:b,p,q z3:z1 c:o",
            &[("main", "c"), ("z2", "z2"), ("z3", "z3")],
        ),
        (
            "many tips never merged",
            "a b:a t1:a t2:b c:b t3:c t4:a d:c t5:d t6:b t7:t1 e:d",
            &[
                ("main", "e"),
                ("t1", "t7"),
                ("t2", "t2"),
                ("t3", "t3"),
                ("t4", "t4"),
                ("t5", "t5"),
                ("t6", "t6"),
            ],
        ),
    ];
    for (what, text, branches) in histories {
        let t = tempfile::tempdir().unwrap();
        let commits = commits_of(text);
        let index = |name: &str| commits.iter().position(|(s, _)| s == name).unwrap();
        let branches: Vec<(String, usize)> = branches
            .iter()
            .map(|(b, at)| (b.to_string(), index(at)))
            .collect();
        let (g, d) = fast_imported(t.path(), &commits, &branches);
        for args in [
            &["--graph", "--oneline"][..],
            &["--graph"],
            &["--graph", "--oneline", "--decorate", "--all"],
            &["--graph", "--decorate", "--all"],
            &["--graph", "--all", "--format=%h %s"],
            &["--graph", "--all", "--format=format:%s%n%h"],
            &["--graph", "--all", "--oneline", "--name-only"],
            &["--graph", "--all", "--name-status", "--format=%s"],
            &["--graph", "--all", "--oneline", "-n", "5"],
            &["--graph", "--oneline", "main~2..main"],
            &["--graph", "--all", "--oneline", "--color=always"],
        ] {
            eprintln!("{what}: log {args:?}");
            assert_log_as_git(&g, &d, args);
        }
    }
}

/// Random histories (seeded, so each run draws the same ones): 30 of up
/// to 40 commits, each commit with one parent, or a merge of 2 to 5 among
/// the commits before it, and branches at every tip and a few others;
/// `log --graph --all` draws each as git does, and so does `--grep`
/// (git's order of the whole history, lanes only to commits shown).
#[test]
fn log_graph_of_random_histories_matches_git() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |below: usize| -> usize {
        // xorshift64: the same numbers on every machine.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below.max(1) as u64) as usize
    };
    for history in 0..30 {
        let count = 2 + next(39);
        let mut commits: Vec<(String, Vec<usize>)> = Vec::new();
        let mut has_child = vec![false; count];
        for i in 0..count {
            let wanted = match (i, next(20)) {
                (0, _) => 0,
                (_, 0..=12) => 1,
                (_, 13..=17) => 2,
                _ => 3 + next(3),
            };
            let mut parents: Vec<usize> = Vec::new();
            // Half the commits go on from the one just made, as work on a branch does.
            if i > 0 && next(2) == 0 {
                parents.push(i - 1);
            }
            for _ in 0..4 * wanted {
                if parents.len() >= wanted.min(i) {
                    break;
                }
                let p = next(i);
                if !parents.contains(&p) {
                    parents.push(p);
                }
            }
            for &p in &parents {
                has_child[p] = true;
            }
            commits.push((format!("c{i}"), parents));
        }
        let mut branches: Vec<(String, usize)> = vec![("main".to_string(), count - 1)];
        for (i, has_child) in has_child.iter().enumerate().take(count - 1) {
            if !has_child || next(8) == 0 {
                branches.push((format!("b{i}"), i));
            }
        }
        let t = tempfile::tempdir().unwrap();
        let (g, d) = fast_imported(t.path(), &commits, &branches);
        for args in [
            &["--graph", "--oneline", "--decorate", "--all"][..],
            &["--graph", "--all"],
            &["--graph", "--oneline", "--all", "--grep=1"],
        ] {
            eprintln!("history {history} ({count} commits): log {args:?}");
            assert_log_as_git(&g, &d, args);
        }
    }
}
