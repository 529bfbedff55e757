//! `dmv import git`: a real Git repository made by the `git` binary (with
//! Git LFS files, one whose content is local and one whose is not) comes
//! over with every branch and tag, authors, dates and messages; running the
//! import again converts only new commits, and leaves alone a branch moved
//! in DMV since.

use crate::common;
use common::remote::*;
use common::*;

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", "2026-01-02T03:04:05+01:00")
        .env("GIT_COMMITTER_DATE", "2026-01-02T03:04:05+01:00")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_git_history_comes_over_whole_and_again_only_what_is_new() {
    assert!(
        Command::new("git-lfs")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "git-lfs is not installed (scripts/test installs it)"
    );
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let g = t.join("studio-git");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    git(&g, &["lfs", "install", "--local"]);
    git(&g, &["lfs", "track", "*.psd"]);
    std::fs::write(g.join("notes.txt"), "shot list\n").unwrap();
    std::fs::create_dir(g.join("art")).unwrap();
    let psd = noise_bytes(300_000, 1);
    std::fs::write(g.join("art/cover.psd"), &psd).unwrap();
    git(&g, &["add", "."]);
    git(&g, &["commit", "-q", "-m", "first shoot"]);
    std::fs::write(g.join("art/gone.psd"), noise_bytes(5000, 2)).unwrap();
    std::fs::write(g.join("notes.txt"), "shot list\nday two\n").unwrap();
    git(&g, &["add", "."]);
    git(&g, &["commit", "-q", "-m", "day two"]);
    git(&g, &["tag", "-a", "v1", "-m", "delivered"]);
    git(&g, &["checkout", "-q", "-b", "grade"]);
    std::fs::write(g.join("grade.txt"), "warm\n").unwrap();
    git(&g, &["add", "."]);
    git(&g, &["commit", "-q", "-m", "colour grade"]);
    git(&g, &["checkout", "-q", "main"]);
    // gone.psd's content is not local: only its pointer can come over.
    let gone_oid = git(&g, &["lfs", "ls-files", "--long"])
        .lines()
        .find(|l| l.ends_with("art/gone.psd"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    std::fs::remove_file(
        g.join(".git/lfs/objects")
            .join(&gone_oid[..2])
            .join(&gone_oid[2..4])
            .join(&gone_oid),
    )
    .unwrap();

    let d = t.join("studio");
    dmv(t, &["init", d.to_str().unwrap()]);
    let out = dmv(&d, &["import", "git", g.to_str().unwrap()]);
    assert!(
        out.contains("Imported 3 commits (0 imported before), 2 branches, 1 tags"),
        "{out}"
    );
    assert!(
        out.contains("Git LFS: 1 files as their content, 1 as their pointer"),
        "{out}"
    );
    assert!(out.contains("Checked out main"), "{out}");

    // Commits as they were: authors, dates, messages, in order, on every branch.
    for branch in ["main", "grade", "v1"] {
        assert_eq!(
            dmv(&d, &["log", "--format=%an <%ae> %at %s", branch]),
            git(&g, &["log", "--format=%an <%ae> %at %s", branch]),
            "{branch}"
        );
    }
    // The working tree is main's, with the LFS file as its real content and the missing one as its pointer.
    assert_eq!(std::fs::read(d.join("art/cover.psd")).unwrap(), psd);
    assert!(std::fs::read_to_string(d.join("art/gone.psd"))
        .unwrap()
        .starts_with("version https://git-lfs.github.com/spec/v1"));
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "shot list\nday two\n"
    );
    assert!(dmv(&d, &["status", "--short"]).is_empty());
    fsck_clean(&d);
    // Git's annotated tag comes over annotated: its tagger, date and message.
    assert_eq!(dmv(&d, &["tag", "-n"]), format!("{:<15} delivered\n", "v1"));
    let shown = dmv(&d, &["show", "--stat", "v1"]);
    assert!(shown.starts_with("tag v1\nTagger: Ada Lovelace <ada@example.org>\nDate:   2026-01-02 02:04:05 UTC\n\ndelivered\n\ncommit "), "{shown}");
    let tag = dmv(&d, &["rev-parse", "v1"]);
    assert_ne!(tag, dmv(&d, &["rev-parse", "v1^{}"]));

    // Again after a new Git commit on main, checked out here: only it is
    // converted, and main's files here move with it.
    std::fs::write(g.join("notes.txt"), "shot list\nday two\nday three\n").unwrap();
    git(&g, &["commit", "-q", "-am", "day three"]);
    let out = dmv(&d, &["import", "git", g.to_str().unwrap()]);
    assert!(
        out.contains("Imported 1 commits (3 imported before)"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "shot list\nday two\nday three\n"
    );
    assert!(dmv(&d, &["status", "--short"]).is_empty());
    assert_eq!(
        dmv(&d, &["log", "--format=%s"]),
        git(&g, &["log", "--format=%s", "main"])
    );
    git(&g, &["checkout", "-q", "grade"]);
    std::fs::write(g.join("grade.txt"), "cold\n").unwrap();
    git(&g, &["commit", "-q", "-am", "regrade"]);
    // main moved in DMV meanwhile: the import leaves it alone and says so.
    std::fs::write(d.join("local.txt"), "dmv work").unwrap();
    commit_all(&d, "work done in dmv");
    let local_main = head_of(&d, "main");
    let out = dmv_out(&d, &["import", "git", g.to_str().unwrap()]);
    ok(&out);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("Imported 1 commits (4 imported before)"),
        "{printed}"
    );
    assert!(
        stderr(&out).contains("refs/heads/main left as it is: it moved here since the last import"),
        "{}",
        stderr(&out)
    );
    assert_eq!(head_of(&d, "main"), local_main);
    assert_eq!(
        dmv(&d, &["log", "--format=%s", "grade"]),
        git(&g, &["log", "--format=%s", "grade"])
    );
    // Nothing new: nothing converted.
    let out = dmv_out(&d, &["import", "git", g.join(".git").to_str().unwrap()]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Imported 0 commits (5 imported before)"));
    assert!(
        !stderr(&out).contains("refs/tags/v1"),
        "the tag made again is the same tag: {}",
        stderr(&out)
    );
    assert_eq!(dmv(&d, &["rev-parse", "v1"]), tag);
    fsck_clean(&d);
}

#[test]
fn importing_what_is_not_a_git_repository_says_so_in_one_line() {
    let d = new_repo();
    let empty = tempfile::tempdir().unwrap();
    let out = dmv_out(d.path(), &["import", "git", empty.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        one_line_error(&out).contains("cannot open the Git repository"),
        "{}",
        stderr(&out)
    );
}

fn noise_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut n = Noise::new(seed);
    n.bytes(len)
}
