//! Revision syntax (gitrevisions(7)) checked against the `git` binary: a
//! Git repository with branches, a merge and tags is imported, and every
//! revision of a table names the same commit in both (compared by subject:
//! each commit's is unique), every range the same commits. What Git keeps
//! and an import does not carry (reflogs, the last checkout, upstreams)
//! is checked in a DMV repository against what was done there.

use crate::common;

use std::path::Path;
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

fn commit(g: &Path, file: &str, subject: &str) {
    std::fs::write(g.join(file), subject).unwrap();
    git(g, &["add", "."]);
    git(g, &["commit", "-q", "-m", subject]);
}

/// main: c1 c2 c3 (tag v1) M(c3, s2) c4; side: s1 s2 from c1; other: o1 from c2.
fn history(t: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let g = t.join("g");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    commit(&g, "a", "c1");
    git(&g, &["checkout", "-q", "-b", "side"]);
    commit(&g, "s", "s1");
    commit(&g, "s", "s2");
    git(&g, &["checkout", "-q", "main"]);
    commit(&g, "a", "c2");
    git(&g, &["checkout", "-q", "-b", "other"]);
    commit(&g, "o", "o1");
    git(&g, &["checkout", "-q", "main"]);
    commit(&g, "a", "c3");
    git(&g, &["tag", "v1"]);
    git(&g, &["merge", "-q", "--no-ff", "-m", "M", "side"]);
    commit(&g, "a", "c4");
    let d = t.join("d");
    dmv(t, &["init", d.to_str().unwrap()]);
    dmv(&d, &["import", "git", g.to_str().unwrap()]);
    (g, d)
}

#[test]
fn revisions_name_the_commits_git_names() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let singles = [
        "HEAD",
        "@",
        "main",
        "side",
        "other",
        "v1",
        "HEAD~1",
        "HEAD^",
        "HEAD^1",
        "HEAD~1^2",
        "HEAD~1^2~1",
        "HEAD^^",
        "HEAD~2",
        "HEAD~3",
        "main~1^1~1",
        "HEAD^0",
        "v1~1",
        "side~1",
        "other^",
        "HEAD~1^2^",
        "HEAD^{commit}",
        "v1^{}",
        "main~1^{commit}",
    ];
    for rev in singles {
        let want = git(&g, &["log", "-1", "--format=%s", rev]);
        let got = dmv(&d, &["log", "-n", "1", "--format=%s", rev]);
        assert_eq!(got.trim(), want.trim(), "{rev}");
    }
    let ranges = [
        "v1..main",
        "main..side",
        "side..main",
        "other...side",
        "side...other",
        "..side",
        "main..",
        "HEAD~2..HEAD",
        "other..HEAD",
    ];
    for range in ranges {
        let mut want: Vec<String> = git(&g, &["log", "--format=%s", range])
            .lines()
            .map(str::to_string)
            .collect();
        let mut got: Vec<String> = dmv(&d, &["log", "--format=%s", range])
            .lines()
            .map(str::to_string)
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{range}");
    }
    // diff A..B compares A with B; A...B the merge base with B.
    let names = |out: String| -> Vec<String> {
        let mut v: Vec<String> = out
            .lines()
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
            .collect();
        v.sort();
        v
    };
    for range in ["other..side", "other...side", "v1..HEAD"] {
        assert_eq!(
            names(dmv(&d, &["diff", "--name-status", range])),
            names(git(&g, &["diff", "--name-status", range])),
            "diff {range}"
        );
    }
    // What is not a revision is said so, in one line.
    for bad in [
        "HEAD~9",
        "HEAD^2",
        "HEAD~1^3",
        "nope",
        "main@{nope}",
        "v1^{tree}",
    ] {
        let out = dmv_out(&d, &["log", "-n", "1", bad]);
        assert_eq!(out.status.code(), Some(128), "{bad}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{bad}: {}", stderr(&out));
    }
}

#[test]
fn checkout_and_switch_take_revisions_the_last_checkout_reflogs_and_upstreams() {
    let t = tempfile::tempdir().unwrap();
    let (_g, d) = history(t.path());
    let subject = |rev: &str| {
        dmv(&d, &["log", "-n", "1", "--format=%s", rev])
            .trim()
            .to_string()
    };
    // checkout of a revision detaches HEAD there; `-` goes back.
    dmv(&d, &["checkout", "HEAD~1^2"]);
    assert_eq!(subject("HEAD"), "s2");
    assert_eq!(
        dmv(&d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "HEAD"
    );
    dmv(&d, &["checkout", "-"]);
    assert_eq!(
        dmv(&d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(subject("@{-1}"), "s2");
    dmv(&d, &["switch", "side"]);
    assert_eq!(subject("@{-1}"), "c4");
    dmv(&d, &["switch", "-"]);
    assert_eq!(
        dmv(&d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    // switch wants a branch; --detach takes any revision.
    let out = dmv_out(&d, &["switch", "main~2"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("--detach"), "{}", stderr(&out));
    dmv(&d, &["switch", "--detach", "main~2"]);
    assert_eq!(subject("HEAD"), "c3");
    dmv(&d, &["switch", "main"]);
    dmv(&d, &["switch", "side"]);
    dmv(&d, &["switch", "@{-1}"]);
    assert_eq!(
        dmv(&d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main",
        "@{{-1}} switches back to the branch"
    );
    // A branch made for a switch that is refused is not left behind.
    std::fs::write(d.join("a"), "changed, and main~2 has another a").unwrap();
    let out = dmv_out(&d, &["switch", "-c", "newb", "main~2"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        !dmv(&d, &["branch"]).contains("newb"),
        "{}",
        dmv(&d, &["branch"])
    );
    let out = dmv_out(&d, &["checkout", "-b", "newc", "main~2"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(!dmv(&d, &["branch"]).contains("newc"));
    dmv(&d, &["restore", "a"]);

    // A branch's reflog: main@{1} is where main was before its last move.
    std::fs::write(d.join("a"), "c5").unwrap();
    dmv(&d, &["commit", "-a", "-m", "c5"]);
    assert_eq!(subject("main@{0}"), "c5");
    assert_eq!(subject("main@{1}"), "c4");
    assert_eq!(subject("@{1}"), "c4");
    assert_eq!(subject("@{1}~1"), "M");

    // The upstream: a clone's main follows origin/main.
    dmv(t.path(), &["clone", d.to_str().unwrap(), "c"]);
    let c = t.path().join("c");
    std::fs::write(c.join("a"), "c6").unwrap();
    dmv(&c, &["commit", "-a", "-m", "c6"]);
    let in_clone = |rev: &str| {
        dmv(&c, &["log", "-n", "1", "--format=%s", rev])
            .trim()
            .to_string()
    };
    assert_eq!(in_clone("@{u}"), "c5");
    assert_eq!(
        dmv(&c, &["rev-parse", "--abbrev-ref", "@{u}"]).trim(),
        "origin/main"
    );
    assert_eq!(
        dmv(&d, &["rev-parse", "--abbrev-ref", "@{-1}"]).trim(),
        "side"
    );
    assert_eq!(in_clone("main@{upstream}"), "c5");
    assert_eq!(dmv(&c, &["log", "--format=%s", "@{u}..HEAD"]).trim(), "c6");
    let out = dmv_out(&c, &["log", "-n", "1", "side@{u}"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
}

#[test]
fn diff_and_show_take_paths_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    for repo in [&g, &d] {
        std::fs::write(repo.join("a"), "changed here").unwrap();
        std::fs::write(repo.join("s"), "and here").unwrap();
    }
    let sorted = |out: String| -> Vec<String> {
        let mut v: Vec<String> = out
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        v.sort();
        v
    };
    let cases: [&[&str]; 9] = [
        &["a"],
        &["--", "a"],
        &["s"],
        &["HEAD~1", "a"],
        &["HEAD~1", "--", "s"],
        &["v1", "s", "a"],
        &["HEAD~3", "HEAD", "--", "s"],
        &["other..side", "--", "s"],
        &["other...side", "--", "o"],
    ];
    for args in cases {
        let mut dmv_args = vec!["diff", "--name-status"];
        dmv_args.extend(args);
        let mut git_args = vec!["diff", "--name-status"];
        git_args.extend(args);
        assert_eq!(
            sorted(dmv(&d, &dmv_args)),
            sorted(git(&g, &git_args)),
            "diff {args:?}"
        );
    }
    for (rev, path) in [("side", "s"), ("side", "a"), ("HEAD", "a")] {
        let ours = sorted(dmv(&d, &["show", "--name-only", rev, "--", path]));
        let theirs = sorted(git(
            &g,
            &["show", "--name-only", "--format=", rev, "--", path],
        ));
        // Our header (commit, author, date, message) and then the files; git's files alone.
        assert_eq!(
            ours.iter().filter(|l| *l == path).count(),
            theirs.len(),
            "show {rev} -- {path}: {ours:?} vs {theirs:?}"
        );
    }
    let out = dmv_out(&d, &["diff", "no-such-thing"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("use `--`"), "{}", stderr(&out));
}

#[test]
fn log_takes_gits_count_shorthand_and_named_formats() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    for args in [
        &["log", "-2", "--format=%s"][..],
        &["log", "-3", "--format=%an %ae %as %cs %s", "side"][..],
        &["log", "-1", "--pretty=format:%s"][..],
        &["log", "-4", "--pretty=tformat:%s|%n"][..],
    ] {
        assert_eq!(dmv(&d, args), git(&g, args), "{args:?}");
    }
    // A path without `--`, as git takes it.
    assert_eq!(
        dmv(&d, &["log", "--format=%s", "s"]),
        git(&g, &["log", "--format=%s", "s"])
    );
    assert_eq!(
        dmv(&d, &["log", "--format=%s", "side", "--", "a"]),
        git(&g, &["log", "--format=%s", "side", "--", "a"])
    );
    // Named formats: the same fields, with DMV's ids.
    let oneline = dmv(&d, &["log", "-1", "--pretty=oneline"]);
    let (id, subject) = oneline.trim().split_once(' ').unwrap();
    assert_eq!((id.len(), subject), (64, "c4"), "{oneline}");
    let short = dmv(&d, &["log", "-1", "--pretty=short"]);
    assert!(
        short.starts_with("commit ")
            && short.contains("\nAuthor: Ada <ada@example.org>\n\n    c4\n"),
        "{short}"
    );
    let ago = dmv(&d, &["log", "-1", "--format=%ar"]);
    assert!(ago.trim().ends_with(" ago"), "{ago}");
}

/// git's graph with runs of spaces as one and no trailing space (git pads
/// a merge's `*` and its `|\` with spaces DMV does not write).
fn squeezed(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn log_graph_draws_the_lines_git_draws_and_filters_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    for rev in ["main", "side", "HEAD~1"] {
        let want = squeezed(&git(&g, &["log", "--graph", "--format=%s", rev]));
        let got = squeezed(&dmv(&d, &["log", "--graph", "--format=%s", rev]));
        assert_eq!(got, want, "log --graph {rev}");
    }
    // Filters: the same subjects as git's for the same question.
    for args in [
        &["--grep", "c"][..],
        &["--author", "Ada"],
        &["--author", "nobody"],
        &["--since", "1970-01-02"],
        &["--until", "1970-01-02"],
        &["-n", "2", "--grep", "s"],
    ] {
        let want: Vec<String> = git(&g, &[&["log", "--format=%s"][..], args].concat())
            .lines()
            .map(str::to_string)
            .collect();
        let got: Vec<String> = dmv(&d, &[&["log", "--format=%s"][..], args].concat())
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(got, want, "log {args:?}");
    }
    // -p: each commit followed by its patch.
    let patch = dmv(&d, &["log", "-p", "-1", "--format=%s"]);
    assert!(
        patch.starts_with("c4\n") && patch.contains("diff --dmv a/a b/a") && patch.contains("+c4"),
        "{patch}"
    );
    let out = dmv_out(&d, &["log", "--since", "soon"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("cannot read the date 'soon'"),
        "{}",
        stderr(&out)
    );
}
