//! git's text commands (blame, grep, describe, shortlog, rev-list)
//! checked against the `git` binary: a Git repository whose history has
//! several authors and time zones, a branch merged back, a rename,
//! annotated and lightweight tags, an empty and a binary file is imported,
//! and each command's output is compared with git's on the same history.
//! Ids differ between the two systems, so commits are compared by subject
//! (each is unique); everything else (lines, numbers, paths, counts, tag
//! names, authors, dates) is compared as printed.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The first commit's time; each next one is an hour later.
const START: i64 = 1_700_000_000;

fn git_cmd(dir: &Path, home: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    c
}

fn git_out(dir: &Path, args: &[&str]) -> Output {
    git_cmd(dir, dir).args(args).output().expect("git runs")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_out(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Commits what is staged as `author` (name, email, zone) at the n-th hour.
fn commit_as(g: &Path, n: i64, author: (&str, &str, &str), subject: &str, extra: &[&str]) {
    let date = format!("@{} {}", START + n * 3600, author.2);
    let out = git_cmd(g, g)
        .args(["commit", "-q", "-m", subject])
        .args(extra)
        .env("GIT_AUTHOR_NAME", author.0)
        .env("GIT_AUTHOR_EMAIL", author.1)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(g: &Path, path: &str, text: &[u8]) {
    let p = g.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const ADA: (&str, &str, &str) = ("Ada Lovelace", "ada@example.org", "+0100");
const BOB: (&str, &str, &str) = ("Bob", "bob@example.org", "-0700");
const CYD: (&str, &str, &str) = ("Cyd Charisse", "cyd@example.org", "+0530");
const DEE: (&str, &str, &str) = ("Dee", "dee@example.org", "+0000");

/// main: c1 (tag `base`, lightweight) c2 (v1, annotated) c3 c4 (tag
/// `light`) M(c4, s2) c5 (poem.txt renamed verse.txt) c6 (v2) c7;
/// side: s1 s2 from c3.
fn history(t: &Path) -> (PathBuf, PathBuf) {
    let g = t.join("g");
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q", "-b", "main"]);
    let poem = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let mut verse = vec![
        "Roses are red",
        "Violets are blue",
        "Sugar is sweet",
        "And so are you",
        "The end",
    ];
    write(&g, "poem.txt", poem(&verse).as_bytes());
    write(&g, "empty.txt", b"");
    write(&g, "root.txt", b"alpha one\nbeta\ngamma one\n");
    write(&g, "bin.dat", b"one\0two\none\n");
    write(&g, "src/lib.txt", b"fn one() {}\nfn two() {}\n");
    write(
        &g,
        "notes/todo.txt",
        b"one thing\nTwo things\na+b = c\nsomeone\n",
    );
    git(&g, &["add", "."]);
    commit_as(&g, 1, ADA, "Start the poem", &[]);
    git(&g, &["tag", "base"]);
    verse[1] = "Violets are green";
    verse.push("P.S. one more");
    write(&g, "poem.txt", poem(&verse).as_bytes());
    git(&g, &["add", "."]);
    commit_as(&g, 2, BOB, "Blue to green", &[]);
    git(&g, &["tag", "-a", "v1", "-m", "First release"]);
    verse.insert(3, "In the middle");
    verse.insert(4, "one line more");
    write(&g, "poem.txt", poem(&verse).as_bytes());
    write(
        &g,
        "src/lib.txt",
        b"fn one() {}\nfn two() {}\nfn three_one() {}\n",
    );
    git(&g, &["add", "."]);
    commit_as(&g, 3, ADA, "Add a middle", &[]);
    git(&g, &["checkout", "-q", "-b", "side"]);
    let mut side = verse.clone();
    side[2] = "Sugar is sweeter";
    write(&g, "poem.txt", poem(&side).as_bytes());
    git(&g, &["add", "."]);
    commit_as(&g, 4, CYD, "Sweeter", &[]);
    write(&g, "side.txt", b"one side\n");
    git(&g, &["add", "."]);
    commit_as(&g, 5, CYD, "Side notes", &[]);
    git(&g, &["checkout", "-q", "main"]);
    let last = verse.len() - 1;
    verse[last] = "P.S. the end, again";
    write(&g, "poem.txt", poem(&verse).as_bytes());
    git(&g, &["add", "."]);
    commit_as(&g, 6, BOB, "The end, again", &[]);
    git(&g, &["tag", "light"]);
    let date = format!("@{} +0100", START + 7 * 3600);
    let out = git_cmd(&g, &g)
        .args([
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge branch 'side'",
            "side",
        ])
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(&g, &["mv", "poem.txt", "verse.txt"]);
    commit_as(&g, 8, ADA, "Rename the poem", &[]);
    let mut text = std::fs::read_to_string(g.join("verse.txt")).unwrap();
    text = text.replacen("Roses are red", "Roses are crimson", 1);
    write(&g, "verse.txt", text.as_bytes());
    git(&g, &["add", "."]);
    commit_as(&g, 9, DEE, "Polish the verse", &[]);
    git(&g, &["tag", "-a", "v2", "-m", "Second release"]);
    text.push_str("one last line\n");
    write(&g, "verse.txt", text.as_bytes());
    git(&g, &["add", "."]);
    commit_as(&g, 10, ADA, "One more line", &[]);
    let d = t.join("d");
    dmv(t, &["init", d.to_str().unwrap()]);
    dmv(&d, &["import", "git", g.to_str().unwrap()]);
    (g, d)
}

/// Each commit's subject by its id, in git and in DMV.
fn subjects(g: &Path, d: &Path) -> (HashMap<String, String>, HashMap<String, String>) {
    let read = |text: String| {
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(id, s)| (id.to_string(), s.to_string()))
            .collect::<HashMap<_, _>>()
    };
    let git_ids = read(git(g, &["log", "--format=%H %s", "main", "side"]));
    let mut dmv_ids = read(dmv(d, &["log", "--format=%H %s", "main"]));
    dmv_ids.extend(read(dmv(d, &["log", "--format=%H %s", "side"])));
    assert_eq!(git_ids.len(), 10);
    assert_eq!(dmv_ids.len(), 10);
    (git_ids, dmv_ids)
}

/// One line of `blame --porcelain`: its commit's subject, the line's
/// number there and now, the length of the group it starts (if it does),
/// and the line.
type PorcelainLine = (String, String, String, Option<String>, String);

/// A porcelain blame read back: the lines, and each commit's fields (in
/// the order given, ids as subjects) by subject.
fn porcelain(
    text: &str,
    ids: &HashMap<String, String>,
) -> (Vec<PorcelainLine>, HashMap<String, Vec<String>>) {
    let mut lines = Vec::new();
    let mut commits: HashMap<String, Vec<String>> = HashMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(content) = line.strip_prefix('\t') {
            let last: &mut PorcelainLine = lines.last_mut().unwrap();
            last.4 = content.to_string();
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        if let Some(subject) = ids.get(words[0]).filter(|_| words.len() >= 3) {
            current = subject.clone();
            lines.push((
                subject.clone(),
                words[1].to_string(),
                words[2].to_string(),
                words.get(3).map(|s| s.to_string()),
                String::new(),
            ));
            continue;
        }
        // A field of the commit: a previous commit's id is shown by its subject.
        let field = match line.strip_prefix("previous ") {
            Some(rest) => {
                let (id, path) = rest.split_once(' ').unwrap();
                format!("previous {} {path}", ids[id])
            }
            None => line.to_string(),
        };
        commits.entry(current.clone()).or_default().push(field);
    }
    (lines, commits)
}

#[test]
fn blame_names_the_lines_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let (git_ids, dmv_ids) = subjects(&g, &d);
    let cases: &[&[&str]] = &[
        &["verse.txt"],
        &["HEAD", "--", "verse.txt"],
        &["HEAD~1", "verse.txt"],
        &["v1", "--", "poem.txt"],
        &["light", "poem.txt"],
        &["side", "poem.txt"],
        &["src/lib.txt"],
        // Added in the root commit: every line a boundary's.
        &["root.txt"],
        &["empty.txt"],
    ];
    for args in cases {
        let git_text = git(&g, &[&["blame", "--porcelain"], *args].concat());
        let dmv_text = dmv(&d, &[&["blame", "--porcelain"], *args].concat());
        let (git_lines, git_commits) = porcelain(&git_text, &git_ids);
        let (dmv_lines, dmv_commits) = porcelain(&dmv_text, &dmv_ids);
        assert_eq!(
            dmv_lines, git_lines,
            "blame --porcelain {args:?}\n{dmv_text}"
        );
        assert_eq!(dmv_commits, git_commits, "blame --porcelain {args:?}");
        // The default format: the same after each line's id (authors,
        // dates in their zones, line numbers, a file-name column after the rename).
        let split = |text: String| -> Vec<(bool, String, String)> {
            text.lines()
                .map(|l| {
                    let (id, rest) = l.split_once(' ').unwrap();
                    let boundary = id.starts_with('^');
                    (
                        boundary,
                        id.trim_start_matches('^').to_string(),
                        rest.to_string(),
                    )
                })
                .collect()
        };
        let git_plain = split(git(&g, &[&["blame"], *args].concat()));
        let dmv_plain = split(dmv(&d, &[&["blame"], *args].concat()));
        assert_eq!(git_plain.len(), dmv_plain.len(), "blame {args:?}");
        for ((gb, gid, grest), (db, did, drest)) in git_plain.iter().zip(&dmv_plain) {
            assert_eq!((db, drest), (gb, grest), "blame {args:?}");
            let subject = |ids: &HashMap<String, String>, short: &str| {
                let found: Vec<&String> = ids
                    .iter()
                    .filter(|(id, _)| id.starts_with(short))
                    .map(|(_, s)| s)
                    .collect();
                assert_eq!(found.len(), 1, "{short}");
                found[0].clone()
            };
            assert_eq!(
                subject(&dmv_ids, did),
                subject(&git_ids, gid),
                "blame {args:?}"
            );
            // DMV's short id and one digit more, or `^` and the short id, as git's are.
            assert_eq!(did.len(), if *db { 12 } else { 13 }, "{did}");
        }
    }
    // The history walked at a merge goes into each side: the side's line is Cyd's.
    let plain = dmv(&d, &["blame", "verse.txt"]);
    assert!(
        plain
            .lines()
            .any(|l| l.contains("Cyd Charisse") && l.ends_with("Sugar is sweeter")),
        "{plain}"
    );
    // What git refuses, DMV refuses; a binary file is refused in one line (git blames it).
    for bad in [
        &["blame", "nowhere.txt"][..],
        &["blame", "src"],
        &["blame", "bin.dat"],
    ] {
        let out = dmv_out(&d, bad);
        assert_eq!(out.status.code(), Some(128), "{bad:?}");
        let said = stderr(&out);
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    assert!(stderr(&dmv_out(&d, &["blame", "bin.dat"])).contains("binary"));
    assert!(!git_out(&g, &["blame", "nowhere.txt"]).status.success());
}

#[test]
fn grep_prints_what_git_grep_prints() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let cases: &[&[&str]] = &[
        &["one"],
        &["-n", "one"],
        &["-i", "TWO"],
        &["-l", "one"],
        &["-c", "one"],
        &["-w", "one"],
        &["-F", "a+b"],
        &["a+b"],
        &["-E", "fn (one|two)"],
        &["fn \\(one\\|two\\)"],
        &["-G", "o\\+n"],
        &["-E", "^[[:upper:]]"],
        &["-n", "-w", "-i", "ONE"],
        &["-n", "one", "HEAD~3"],
        &["-c", "one", "v1"],
        &["-l", "one", "v1", "side"],
        &["one", "--", "src"],
        &["-n", "one", "HEAD", "--", "notes", "src"],
        &["-n", "Sugar", "side", "--", "poem.txt"],
        &["one", "src", "notes/todo.txt"],
        // A pattern that matches nothing: no output, and exit 1.
        &["no such words anywhere"],
        &["-c", "no such words", "HEAD"],
    ];
    for args in cases {
        let want = git_out(&g, &[&["grep"], *args].concat());
        let got = dmv_out(&d, &[&["grep"], *args].concat());
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want.stdout),
            "grep {args:?}: {}",
            stderr(&got)
        );
        assert_eq!(got.status.code(), want.status.code(), "grep {args:?}");
    }
    // From a folder: only what is under it unless told, paths relative to it.
    for args in [
        &["grep", "one"][..],
        &["grep", "-n", "one", ".."],
        &["grep", "one", "HEAD"],
    ] {
        let want = git_out(&g.join("src"), args);
        let got = dmv_out(&d.join("src"), args);
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want.stdout),
            "{args:?} in src: {}",
            stderr(&got)
        );
    }
    // The working tree's files as they are now, not as committed.
    std::fs::write(g.join("root.txt"), "changed one\n").unwrap();
    std::fs::write(d.join("root.txt"), "changed one\n").unwrap();
    assert_eq!(dmv(&d, &["grep", "changed"]), git(&g, &["grep", "changed"]));
    // A pattern that cannot be read is refused in one line.
    let out = dmv_out(&d, &["grep", "-E", "a("]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn describe_names_commits_after_the_tags_git_names_them_by() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let revs = [
        "HEAD", "HEAD~1", "HEAD~2", "HEAD~3", "side", "side~1", "light", "v1", "main~4",
    ];
    let flags: &[&[&str]] = &[
        &[],
        &["--tags"],
        &["--long"],
        &["--tags", "--long"],
        &["--abbrev=0"],
    ];
    // TAG-COUNT-gID: the tag and the count compared, the id's length DMV's.
    let parts = |text: &str| -> (String, Option<String>) {
        let text = text.trim();
        let mut pieces: Vec<&str> = text.rsplitn(3, '-').collect();
        if pieces.len() == 3 && pieces[0].starts_with('g') && pieces[1].parse::<u32>().is_ok() {
            pieces.reverse();
            (pieces[0].to_string(), Some(pieces[1].to_string()))
        } else {
            (text.to_string(), None)
        }
    };
    for rev in revs {
        for flag in flags {
            let args = [&["describe"], *flag, &[rev]].concat();
            let want = git(&g, &args);
            let got = dmv(&d, &args);
            assert_eq!(parts(&got), parts(&want), "{args:?}: {got} vs {want}");
            if let Some((_, id)) = got.trim().rsplit_once("-g") {
                assert_eq!(id.len(), 12, "{got}");
            }
        }
    }
    let got = dmv(&d, &["describe", "--abbrev=5"]);
    assert!(
        got.trim()
            .ends_with(&format!("-g{}", &dmv(&d, &["rev-parse", "HEAD"])[..5])),
        "{got}"
    );
    // The root commit has only a lightweight tag: refused as git refuses, unless --tags.
    for (args, code) in [
        (&["describe", "base"][..], 128),
        (&["describe", "--tags", "base"], 0),
    ] {
        let want = git_out(&g, args);
        let got = dmv_out(&d, args);
        assert_eq!(got.status.code(), Some(code), "{args:?}: {}", stderr(&got));
        assert_eq!(want.status.code(), Some(code), "{args:?}");
        if code == 0 {
            assert_eq!(got.stdout, want.stdout);
        } else {
            assert!(stderr(&got).contains("try --tags"), "{}", stderr(&got));
        }
    }
    // No tag at all: an error as git's, unless --always (then the short id).
    let plain = t.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    git(&plain, &["init", "-q", "-b", "main"]);
    write(&plain, "a", b"a\n");
    git(&plain, &["add", "."]);
    commit_as(&plain, 1, ADA, "Only", &[]);
    let p = t.path().join("p");
    dmv(t.path(), &["init", p.to_str().unwrap()]);
    dmv(&p, &["import", "git", plain.to_str().unwrap()]);
    let want = git_out(&plain, &["describe"]);
    let got = dmv_out(&p, &["describe"]);
    assert_eq!(want.status.code(), Some(128));
    assert_eq!(got.status.code(), Some(128));
    assert!(stderr(&got).contains("No names found"), "{}", stderr(&got));
    let always = dmv(&p, &["describe", "--always"]);
    assert_eq!(always.trim(), &dmv(&p, &["rev-parse", "HEAD"])[..12]);
    assert!(git_out(&plain, &["describe", "--always"]).status.success());
}

#[test]
fn shortlog_groups_commits_by_author_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let cases: &[&[&str]] = &[
        &["HEAD"],
        &["-s", "HEAD"],
        &["-n", "HEAD"],
        &["-s", "-n", "HEAD"],
        &["-e", "HEAD"],
        &["-s", "-n", "-e", "HEAD"],
        &["v1..HEAD"],
        &["-s", "side"],
        &["main..side"],
        // Nothing in the range: nothing printed.
        &["HEAD..HEAD"],
    ];
    for args in cases {
        let args = [&["shortlog"], *args].concat();
        assert_eq!(dmv(&d, &args), git(&g, &args), "{args:?}");
    }
    // Without a revision, HEAD's history (git reads a log from stdin when it is not a terminal).
    assert_eq!(
        dmv(&d, &["shortlog", "-s"]),
        git(&g, &["shortlog", "-s", "HEAD"])
    );
}

#[test]
fn rev_list_lists_the_commits_git_lists() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let (git_ids, dmv_ids) = subjects(&g, &d);
    let cases: &[&[&str]] = &[
        &["HEAD"],
        &["side"],
        &["main..side"],
        &["side..main"],
        &["side...main"],
        &["^v1", "HEAD"],
        &["--all"],
        &["--max-count=3", "HEAD"],
        &["--reverse", "HEAD"],
        &["--reverse", "--max-count=2", "HEAD"],
        &["-n", "4", "--all"],
        // An empty range.
        &["HEAD..HEAD"],
    ];
    for args in cases {
        let args = [&["rev-list"], *args].concat();
        let names = |text: String, ids: &HashMap<String, String>| -> Vec<String> {
            text.lines().map(|id| ids[id].clone()).collect()
        };
        assert_eq!(
            names(dmv(&d, &args), &dmv_ids),
            names(git(&g, &args), &git_ids),
            "{args:?}"
        );
        let count = [args.clone(), vec!["--count"]].concat();
        assert_eq!(dmv(&d, &count), git(&g, &count), "{count:?}");
    }
    // No revision: a usage error, as git's.
    assert_eq!(dmv_out(&d, &["rev-list"]).status.code(), Some(129));
    assert_eq!(git_out(&g, &["rev-list"]).status.code(), Some(129));
}

#[test]
fn a_partial_replica_greps_what_it_holds_and_blames_by_fetching() {
    let t = tempfile::tempdir().unwrap();
    let (_, d) = history(t.path());
    let src = d.to_str().unwrap();
    let out = dmv_out(t.path(), &["clone", "--slice", "paths:src", src, "part"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let part = t.path().join("part");
    for args in [&["grep", "one"][..], &["grep", "-n", "one", "HEAD"]] {
        let got = dmv_out(&part, args);
        let want = dmv(&d, &[args, &["--", "src"]].concat());
        assert_eq!(String::from_utf8_lossy(&got.stdout), want, "{args:?}");
        let warned = stderr(&got);
        assert_eq!(warned.lines().count(), 1, "{warned}");
        assert!(
            warned.contains("not in this replica were not searched"),
            "{warned}"
        );
    }
    // blame fetches the versions it reads.
    assert_eq!(
        dmv(&part, &["blame", "verse.txt"]),
        dmv(&d, &["blame", "verse.txt"])
    );
}

#[test]
fn blame_and_grep_keep_to_their_budgets() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    dmv(t.path(), &["init", d.to_str().unwrap()]);
    // A file one byte past blame's bound, and one whose second line is one byte past grep's.
    let big = vec![b'a'; (64 << 20) + 1];
    std::fs::write(d.join("big.txt"), &big).unwrap();
    let mut long = b"needle\n".to_vec();
    long.extend(std::iter::repeat_n(b'x', (64 << 20) + 1));
    long.extend(b"\nneedle\n");
    std::fs::write(d.join("long.txt"), &long).unwrap();
    std::fs::write(d.join("small.txt"), "needle\n").unwrap();
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-m", "Large"]);
    let out = dmv_out(&d, &["blame", "big.txt"]);
    assert_eq!(out.status.code(), Some(128));
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("more than the 67108864"), "{said}");
    assert!(out.stdout.is_empty());
    for args in [&["grep", "needle"][..], &["grep", "needle", "HEAD"]] {
        let out = dmv_out(&d, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let prefix = if args.len() == 3 { "HEAD:" } else { "" };
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{prefix}long.txt:needle\n{prefix}small.txt:needle\n")
        );
        // big.txt is one line past the bound too: each such file named, once.
        let warned = stderr(&out);
        assert_eq!(warned.lines().count(), 2, "{warned}");
        for file in ["big.txt", "long.txt"] {
            assert!(
                warned.contains(&format!("{prefix}{file} has a line longer than 64 MiB")),
                "{warned}"
            );
        }
    }
}

#[test]
fn each_help_says_what_the_command_does_first() {
    let t = tempfile::tempdir().unwrap();
    for (command, first) in [
        ("blame", "Show each line of a text file"),
        ("grep", "Print the lines of tracked files"),
        ("describe", "Name a commit after the nearest tag"),
        ("shortlog", "Summarise history by author"),
        ("rev-list", "List the ids of the commits"),
    ] {
        let help = dmv(t.path(), &[command, "--help"]);
        assert!(help.starts_with(first), "{command}: {help}");
    }
}

/// The same edit made to a file in both working trees.
fn edit_both(g: &Path, d: &Path, path: &str, edit: impl Fn(&str) -> String) {
    for dir in [g, d] {
        let text = std::fs::read_to_string(dir.join(path)).unwrap();
        std::fs::write(dir.join(path), edit(&text)).unwrap();
    }
}

/// A blame line with the id read as a subject (or NOT COMMITTED) and the
/// date of a line not committed yet masked: git's is now.
fn masked_blame(text: &str, ids: &HashMap<String, String>) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let (id, rest) = l.split_once(' ').unwrap();
            let id = id.trim_start_matches('^');
            let who = match id.bytes().all(|b| b == b'0') {
                true => "NOT COMMITTED".to_string(),
                false => {
                    let found: Vec<&String> = ids
                        .iter()
                        .filter(|(full, _)| full.starts_with(id))
                        .map(|(_, s)| s)
                        .collect();
                    assert_eq!(found.len(), 1, "{l}");
                    found[0].clone()
                }
            };
            let mut rest = rest.to_string();
            if let Some(at) = rest.find("Not Committed Yet") {
                let date = at + rest[at..].find(|c: char| c.is_ascii_digit()).unwrap();
                rest.replace_range(date..date + 25, "DATE");
            }
            (who, rest)
        })
        .collect()
}

#[test]
fn blame_reads_the_working_file_and_line_ranges_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let (mut git_ids, mut dmv_ids) = subjects(&g, &d);
    git_ids.insert("0".repeat(40), "NOT COMMITTED".into());
    dmv_ids.insert("0".repeat(64), "NOT COMMITTED".into());
    // Committed as it is: the working file's blame is HEAD's, ranges too.
    for args in [&["-L", "2,4"][..], &["-L", "3,+2"], &["-L", "5"]] {
        let args = [&["blame"], args, &["verse.txt"]].concat();
        assert_eq!(
            masked_blame(&dmv(&d, &args), &dmv_ids),
            masked_blame(&git(&g, &args), &git_ids),
            "{args:?}"
        );
    }
    // A line changed, one added: not committed yet, as git says.
    edit_both(&g, &d, "verse.txt", |t| {
        t.replacen("Violets are green", "Violets are grey", 1) + "a line not committed\n"
    });
    edit_both(&g, &d, "src/lib.txt", |t| format!("// new first line\n{t}"));
    let cases: &[&[&str]] = &[
        &["verse.txt"],
        &["src/lib.txt"],
        &["-L", "2,4", "verse.txt"],
        &["-L", "3,+2", "verse.txt"],
        &["-L", "4,-2", "verse.txt"],
        &["-L", "9", "verse.txt"],
        &["-L", ",3", "verse.txt"],
        &["-L", "6,3", "verse.txt"],
        &["-L", "8,99", "verse.txt"],
        &["-L", "1,2", "-L", "8,9", "verse.txt"],
        &["-L", "1,3", "-L", "2,4", "verse.txt"],
        &["-L", "2,3", "HEAD", "--", "verse.txt"],
    ];
    for args in cases {
        let args = [&["blame"], *args].concat();
        let want = git(&g, &args);
        let got = dmv(&d, &args);
        assert_eq!(
            masked_blame(&got, &dmv_ids),
            masked_blame(&want, &git_ids),
            "{args:?}\n{got}\n{want}"
        );
        let porcelain_args = [&args[..1], &["--porcelain"], &args[1..]].concat();
        let (git_lines, git_commits) = porcelain(&git(&g, &porcelain_args), &git_ids);
        let (dmv_lines, dmv_commits) = porcelain(&dmv(&d, &porcelain_args), &dmv_ids);
        assert_eq!(dmv_lines, git_lines, "{porcelain_args:?}");
        let now_masked = |mut c: HashMap<String, Vec<String>>| {
            if let Some(fields) = c.get_mut("NOT COMMITTED") {
                for f in fields.iter_mut() {
                    if f.starts_with("author-time") || f.starts_with("committer-time") {
                        f.truncate(f.find(' ').unwrap());
                    }
                }
            }
            c
        };
        assert_eq!(
            now_masked(dmv_commits),
            now_masked(git_commits),
            "{porcelain_args:?}"
        );
    }
    assert!(dmv(&d, &["blame", "verse.txt"]).contains("(Not Committed Yet "));
    // Ranges git refuses are refused in one line.
    for bad in [
        &["-L", "0,2"][..],
        &["-L", "99"],
        &["-L", "2,+0"],
        &["-L", "2,x"],
    ] {
        let args = [&["blame"], bad, &["verse.txt"]].concat();
        assert!(!git_out(&g, &args).status.success(), "{args:?}");
        let out = dmv_out(&d, &args);
        assert_eq!(out.status.code(), Some(128), "{args:?}");
        let said = stderr(&out);
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    assert!(stderr(&dmv_out(&d, &["blame", "-L", "99", "verse.txt"]))
        .contains("file verse.txt has only 10 lines"));
    // A file not in HEAD nor tracked is refused; a new tracked one is all not committed.
    std::fs::write(d.join("new.txt"), "fresh\n").unwrap();
    assert_eq!(dmv_out(&d, &["blame", "new.txt"]).status.code(), Some(128));
    dmv(&d, &["add", "new.txt"]);
    let fresh = dmv(&d, &["blame", "new.txt"]);
    assert!(
        fresh.starts_with("0000000000000 (Not Committed Yet "),
        "{fresh}"
    );
}

#[test]
fn grep_takes_several_patterns_inverts_and_keeps_quiet_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let cases: &[&[&str]] = &[
        &["-e", "one", "-e", "Two"],
        &["-n", "-e", "fn", "-e", "Sugar", "HEAD~3"],
        &["-e", "one", "HEAD", "--", "src"],
        &["-c", "-e", "a+b", "-e", "-x", "-F"],
        &["-v", "one"],
        &["-v", "-n", "e", "HEAD"],
        &["-v", "-c", "e"],
        &["-v", "-l", "one"],
        &["-v", "-e", "one", "-e", "the"],
        &["-q", "one"],
        &["-q", "no such words"],
        &["-q", "-v", "one", "HEAD"],
        &["-q", "-e", "nothing", "-e", "Sugar", "side"],
    ];
    for args in cases {
        let want = git_out(&g, &[&["grep"], *args].concat());
        let got = dmv_out(&d, &[&["grep"], *args].concat());
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want.stdout),
            "grep {args:?}: {}",
            stderr(&got)
        );
        assert_eq!(got.status.code(), want.status.code(), "grep {args:?}");
    }
    // No pattern at all: refused, as git refuses it.
    let out = dmv_out(&d, &["grep"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(git_out(&g, &["grep"]).status.code(), Some(128));
}

#[test]
fn describe_marks_a_dirty_tree_and_picks_tags_by_glob_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    let same = |args: &[&str]| {
        let want = git_out(&g, args);
        let got = dmv_out(&d, args);
        assert_eq!(
            got.status.code(),
            want.status.code(),
            "{args:?}: {}",
            stderr(&got)
        );
        // TAG-COUNT-gID: the ids differ, the rest is compared.
        let plain = |o: &Output| {
            let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
            // A bare id (--always): its length differs.
            let id = text
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(text.len());
            if id >= 7 {
                return format!("ID{}", &text[id..]);
            }
            match text.split_once("-g") {
                Some((tag, rest)) => {
                    let mark = rest.trim_start_matches(|c: char| c.is_ascii_hexdigit());
                    format!("{tag}-g…{mark}")
                }
                None => text,
            }
        };
        assert_eq!(plain(&got), plain(&want), "{args:?}");
        if !got.status.success() {
            assert_eq!(stderr(&got).lines().count(), 1, "{}", stderr(&got));
        }
    };
    let cases: &[&[&str]] = &[
        &["--dirty"],
        &["--match", "v1"],
        &["--match", "v*", "HEAD~3"],
        &["--tags", "--match", "l*", "HEAD~2"],
        &["--tags", "--match", "b*", "--match", "l*"],
        &["--exclude", "v2"],
        &["--tags", "--exclude", "v*", "--exclude", "light"],
        &["--match", "nothing*"],
        &["--match", "nothing*", "--always"],
        &["--abbrev=0", "--match", "v1", "side"],
    ];
    for args in cases {
        same(&[&["describe"], *args].concat());
    }
    // An untracked file leaves the tree clean; a changed tracked one makes it dirty.
    for dir in [&g, &d] {
        std::fs::write(dir.join("untracked.txt"), "x\n").unwrap();
    }
    same(&["describe", "--dirty"]);
    edit_both(&g, &d, "root.txt", |t| format!("{t}more\n"));
    for args in [
        &["describe", "--dirty"][..],
        &["describe", "--dirty=.mod"],
        &["describe", "--tags", "--long", "--dirty"],
        &["describe", "--always", "--match", "none", "--dirty"],
        &["describe", "--dirty", "HEAD~1"],
    ] {
        same(args);
    }
    assert!(dmv(&d, &["describe", "--dirty"]).trim().ends_with("-dirty"));
}

#[test]
fn mailmap_names_people_in_shortlog_and_log_as_gits() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    // git's four forms, a comment, and a name matched without regard to case.
    let mailmap = "# who is who\n\
        Ada King <ada@example.org>\n\
        <bob@proper.org> <bob@example.org>\n\
        Cyd Proper <cyd@proper.org> <CYD@example.org>\n\
        Dee Proper <dee@proper.org> dee <dee@example.org>\n";
    for dir in [&g, &d] {
        std::fs::write(dir.join(".mailmap"), mailmap).unwrap();
    }
    let cases: &[&[&str]] = &[
        &["shortlog", "HEAD"],
        &["shortlog", "-s", "-n", "-e", "HEAD"],
        &["shortlog", "-e", "v1..HEAD"],
        &["log", "--format=%aN|%aE|%an|%ae|%cN|%cE", "main"],
        &["log", "--pretty=format:%aN <%aE>", "side"],
    ];
    for args in cases {
        assert_eq!(dmv(&d, args), git(&g, args), "{args:?}");
    }
    // The layouts name the author as the mailmap does (git's log.mailmap).
    let authors = |text: String| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("Author:"))
            .map(str::to_string)
            .collect()
    };
    for args in [
        &["log"][..],
        &["log", "--pretty=fuller"],
        &["show", "-s", "HEAD~1"],
    ] {
        assert_eq!(authors(dmv(&d, args)), authors(git(&g, args)), "{args:?}");
    }
    assert!(dmv(&d, &["shortlog", "-s", "HEAD"]).contains("Cyd Proper"));
    // blame names people as the mailmap does too.
    let blamed = dmv(&d, &["blame", "verse.txt"]);
    assert!(blamed.contains("(Ada King "), "{blamed}");
    // A mailmap past its budget is not read: one warning, the names as committed.
    let big = format!("{mailmap}{}", "#".repeat(1 << 20));
    std::fs::write(d.join(".mailmap"), big).unwrap();
    let out = dmv_out(&d, &["shortlog", "-s", "HEAD"]);
    assert_eq!(out.status.code(), Some(0));
    let warned = stderr(&out);
    assert_eq!(warned.lines().count(), 1, "{warned}");
    assert!(
        warned.contains(".mailmap is 1048") && warned.contains("not read"),
        "{warned}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Cyd Charisse"));
}

#[test]
fn log_finds_the_commits_that_changed_a_text_as_gits_pickaxe() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = history(t.path());
    // A binary file: -S counts in it, -G passes it over, as git 2.39 does.
    for dir in [&g, &d] {
        std::fs::write(dir.join("bin.dat"), b"one\0one one\n").unwrap();
    }
    git(&g, &["add", "bin.dat"]);
    commit_as(&g, 11, ADA, "Binary ones", &[]);
    dmv(&d, &["add", "bin.dat"]);
    let out = dmv_cmd(&d)
        .args(["commit", "-q", "-m", "Binary ones"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let cases: &[&[&str]] = &[
        &["-S", "one"],
        &["-S", "Sugar"],
        &["-S", "green"],
        // The rename keeps every count: not listed, as git pairs renames.
        &["-S", "Roses"],
        &["-S", "one", "side"],
        &["-S", "one", "--", "src"],
        &["-S", "no such text"],
        &["-G", "gr(ee|a)n"],
        &["-G", "^P\\.S\\."],
        &["-G", "one", "--", "notes", "src"],
        &["-G", "one one"],
        &["-S", "one", "--author=Bob"],
    ];
    for args in cases {
        let args = [&["log", "--format=%s"], *args].concat();
        assert_eq!(dmv(&d, &args), git(&g, &args), "{args:?}");
    }
    // An expression that cannot be read, and -S with -G, are refused in one line.
    for bad in [
        &["log", "-G", "a("][..],
        &["log", "-S", "one", "-G", "three"],
    ] {
        assert_eq!(git_out(&g, bad).status.code(), Some(128), "{bad:?}");
        let out = dmv_out(&d, bad);
        assert_eq!(out.status.code(), Some(128), "{bad:?}");
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

/// A diff's text from its first `---` line on, without the lines that
/// name the two systems' objects (`diff --git`/`diff --dmv`, `index`),
/// painted or not.
fn from_minus(s: &str) -> String {
    let bare = |l: &str| l.trim_start_matches("\x1b[1m").to_string();
    let start = s
        .split_inclusive('\n')
        .position(|l| bare(l).starts_with("--- "))
        .unwrap_or(0);
    s.split_inclusive('\n')
        .skip(start)
        .filter(|l| !bare(l).starts_with("diff --") && !bare(l).starts_with("index "))
        .collect()
}

/// `diff --word-diff` marks the words taken out and put in within each
/// hunk as git's modes do (plain, porcelain, and color painted with
/// `--color=always`): the same bytes from the `---` line on, for words
/// changed in a line, lines added, removed and rewrapped, white space
/// changed, blank lines, a last line without a line break, and a hunk far
/// from another (under a function line); and so do `show` and `log -p`.
#[test]
fn word_diff_marks_words_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = (t.path().join("g"), t.path().join("d"));
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q"]);
    dmv(t.path(), &["init", d.to_str().unwrap()]);
    let long: String = (1..=30)
        .map(|i| format!("line number {i} of the long file\n"))
        .collect();
    let before = [
        (
            "words.txt",
            "The quick brown fox\njumps over the lazy dog.\nThe end.\n".to_string(),
        ),
        ("lines.txt", "one\ntwo\nthree\nfour\n".to_string()),
        ("spaces.txt", "a b  c\nd e f\n".to_string()),
        ("long.txt", long.clone()),
        ("blank.txt", "x\n\ny\n\nz\n".to_string()),
        ("unended.txt", "a b\nc d".to_string()),
    ];
    for (name, text) in &before {
        for dir in [&g, &d] {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    git(&g, &["add", "."]);
    commit_as(
        &g,
        0,
        ("Ada Lovelace", "ada@example.org", "+0000"),
        "before",
        &[],
    );
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-q", "-m", "before"]);
    let after = [
        (
            "words.txt",
            "The quick red fox\nleaps over the lazy cat today.\nThe end.\n".to_string(),
        ),
        (
            "lines.txt",
            "one\nthree\nthree and a half\nfour\nfive six\n".to_string(),
        ),
        ("spaces.txt", "a b c\nd  e\tf g\n".to_string()),
        (
            "long.txt",
            long.replace("number 2 of", "number two of")
                .replace("29 of the long", "29 of the longer"),
        ),
        ("blank.txt", "x\n\nwhy\n\nz\n".to_string()),
        ("unended.txt", "a b\nc e".to_string()),
    ];
    for (name, text) in &after {
        for dir in [&g, &d] {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for (name, _) in &after {
        for mode in [
            &["--word-diff"][..],
            &["--word-diff=plain"],
            &["--word-diff=porcelain"],
            &["--word-diff=color"],
            &["--word-diff=color", "--color=always"],
            &["--word-diff=porcelain", "--color=always"],
            &["--word-diff", "--color=always"],
        ] {
            let args = [&["diff"], mode, &["--", name]].concat();
            let theirs = git(&g, &args);
            let ours = dmv(&d, &args);
            assert_eq!(from_minus(&ours), from_minus(&theirs), "{args:?}");
        }
    }
    // The plain diff's hunk headers name the line above them as git's do.
    let headers = |s: String| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("@@"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        headers(dmv(&d, &["diff", "--", "long.txt"])),
        headers(git(&g, &["diff", "--", "long.txt"]))
    );
    // A commit's changes word by word, in show and log -p.
    git(&g, &["add", "."]);
    commit_as(
        &g,
        1,
        ("Ada Lovelace", "ada@example.org", "+0000"),
        "after",
        &[],
    );
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-q", "-m", "after"]);
    for args in [
        &["show", "--word-diff"][..],
        &["show", "--word-diff=porcelain"],
        &["show", "--word-diff=color", "--color=always"],
        &["log", "-p", "-1", "--word-diff"],
        &["log", "-p", "-1", "--word-diff=porcelain"],
    ] {
        assert_eq!(
            from_minus(&dmv(&d, args)),
            from_minus(&git(&g, args)),
            "{args:?}"
        );
    }
    // An unknown mode is refused in one line, as git refuses it.
    let out = dmv_out(&d, &["diff", "--word-diff=words"]);
    assert!(!out.status.success());
    assert!(!git_out(&g, &["diff", "--word-diff=words"]).status.success());
}

/// `--stat` draws git's diffstat: names cut to fit with `...`, renames as
/// `dir/{old => new}/file`, bars scaled to the width ($COLUMNS, else 80),
/// `Bin OLD -> NEW bytes` for a binary file, and git's summary line with
/// its singulars, plurals and omissions; in `diff`, `show` and `log`,
/// painted or not.
#[test]
fn stat_draws_gits_diffstat() {
    let t = tempfile::tempdir().unwrap();
    let (g, d) = (t.path().join("g"), t.path().join("d"));
    std::fs::create_dir(&g).unwrap();
    git(&g, &["init", "-q"]);
    dmv(t.path(), &["init", "-q", d.to_str().unwrap()]);
    let numbers = |n: usize| -> String { (1..=n).map(|i| format!("{i}\n")).collect() };
    let long_name = "a-file-with-a-rather-long-name-inside-a-folder-that-is-also-long.txt";
    let before: [(&str, Vec<u8>); 6] = [
        ("nums.txt", numbers(100).into_bytes()),
        ("small.txt", b"a\nb\n".to_vec()),
        ("dir/sub/moved.txt", b"x\ny\nz\n".to_vec()),
        ("gone.txt", b"gone\n".to_vec()),
        ("bin.dat", b"a\0b".to_vec()),
        (long_name, numbers(30).into_bytes()),
    ];
    for (name, bytes) in &before {
        for dir in [&g, &d] {
            write(dir, name, bytes);
        }
    }
    git(&g, &["add", "-A"]);
    commit_as(
        &g,
        0,
        ("Ada Lovelace", "ada@example.org", "+0000"),
        "one",
        &[],
    );
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-q", "-m", "one"]);
    for dir in [&g, &d] {
        write(
            dir,
            "nums.txt",
            numbers(100).replace('5', "five").as_bytes(),
        );
        write(dir, "small.txt", b"a\nB\nc\n");
        std::fs::create_dir_all(dir.join("dir/other")).unwrap();
        std::fs::rename(
            dir.join("dir/sub/moved.txt"),
            dir.join("dir/other/moved.txt"),
        )
        .unwrap();
        std::fs::remove_file(dir.join("gone.txt")).unwrap();
        write(dir, "bin.dat", b"a\0bcdef");
        write(dir, "empty.txt", b"");
        write(dir, long_name, numbers(35).as_bytes());
    }
    git(&g, &["add", "-A"]);
    dmv(&d, &["add", "."]);
    // The stat lines and the summary: what follows a commit's header.
    let stat = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains(" | ") || l.contains(" changed"))
            .map(str::to_string)
            .collect()
    };
    for columns in ["80", "40", "200"] {
        for args in [
            &["diff", "--cached", "--stat"][..],
            &["diff", "--cached", "--stat", "--color=always"],
        ] {
            let theirs = git_cmd(&g, &g)
                .env("COLUMNS", columns)
                .args(args)
                .output()
                .unwrap();
            let ours = dmv_cmd(&d)
                .env("COLUMNS", columns)
                .args(args)
                .output()
                .unwrap();
            let (theirs, ours) = (
                String::from_utf8_lossy(&theirs.stdout).into_owned(),
                String::from_utf8_lossy(&ours.stdout).into_owned(),
            );
            assert!(theirs.contains(" 7 files changed,"), "{theirs}");
            assert_eq!(stat(&ours), stat(&theirs), "COLUMNS={columns} {args:?}");
        }
    }
    commit_as(
        &g,
        1,
        ("Ada Lovelace", "ada@example.org", "+0000"),
        "two",
        &[],
    );
    dmv(&d, &["commit", "-q", "-m", "two"]);
    // A commit of one line put in, and one of lines only taken out.
    for dir in [&g, &d] {
        write(dir, "small.txt", b"a\nB\nc\nd\n");
    }
    git(&g, &["commit", "-q", "-am", "three"]);
    dmv(&d, &["commit", "-q", "-a", "-m", "three"]);
    for dir in [&g, &d] {
        write(dir, "nums.txt", b"");
    }
    git(&g, &["commit", "-q", "-am", "four"]);
    dmv(&d, &["commit", "-q", "-a", "-m", "four"]);
    for args in [
        &["show", "--stat"][..],
        &["show", "--stat", "HEAD~1"],
        &["show", "--stat", "HEAD~2"],
        &["log", "--stat"],
        &["log", "--stat", "--color=always"],
        &["diff", "--stat", "HEAD~3", "HEAD"],
    ] {
        assert_eq!(stat(&dmv(&d, args)), stat(&git(&g, args)), "{args:?}");
    }
}
