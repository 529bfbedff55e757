//! What a Git user types without thinking (issue 70), checked against the
//! `git` binary: the same working tree or the same imported history given
//! to both, and the outputs a script would parse compared line by line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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
