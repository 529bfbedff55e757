//! Merges, conflicts and their settling, abort and cherry-pick, through
//! the library (`repo.merges()`), as every front end reaches them. What
//! only the binary shows (its words, exit codes, `--help`, the merge tool
//! it starts, kills at its steps) stays in dmv-cli's tests/merge.rs.

mod common;
use common::{diverged, noise, Scratch};

use dmv_repo::store::GcOptions;
use dmv_repo::{FastForward, GcPolicy, MergeOutcome, RepoError, Resolution, Silent};

fn merge(s: &Scratch, branch: &str, ff: FastForward) -> Result<MergeOutcome, RepoError> {
    let theirs = s.rev(branch);
    s.repo.merges().merge_with(theirs, branch, ff, &Silent)
}

fn conflicts(outcome: MergeOutcome) -> Vec<(String, bool)> {
    match outcome {
        MergeOutcome::Conflicts(paths) => paths
            .into_iter()
            .map(|c| (String::from_utf8(c.path).unwrap(), c.marked))
            .collect(),
        other => panic!("a conflict was expected, not {other:?}"),
    }
}

fn resolve(s: &Scratch, paths: &[&str], how: Resolution) -> Result<(), RepoError> {
    let specs: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    s.repo.merges().resolve_conflicts(&specs, how).map(|_| ())
}

/// Commits the merge in progress with its own message, as `dmv commit`
/// without `-m`; it must make a commit.
fn conclude(s: &Scratch) -> dmv_repo::store::ObjectId {
    let asked = dmv_repo::CommitRequest::default();
    match s
        .repo
        .commit_with(&asked, &Silent)
        .expect("the merge commits")
    {
        dmv_repo::Committed::Made { id, .. } => id,
        other => panic!("a merge commit was expected, not {other:?}"),
    }
}

/// One photo both sides retouch differently (a binary conflict), and a
/// sound only feature adds.
fn photo_conflict() -> Scratch {
    diverged(
        |s| {
            s.write("shot.jpg", noise(300_000, 1));
            s.write("README", "base\n");
        },
        |s| s.write("shot.jpg", noise(300_000, 2)),
        |s| {
            s.write("shot.jpg", noise(300_000, 3));
            s.write("extra.wav", noise(50_000, 4));
        },
    )
}

#[test]
fn a_merge_fast_forwards_commits_two_parents_or_refuses_as_asked() {
    // Behind: a fast-forward, then nothing left to merge.
    let s = diverged(
        |s| s.write("a", "one"),
        |_| {},
        |s| {
            s.write("b.bin", noise(100_000, 5));
            s.remove("a");
        },
    );
    let feature = s.rev("feature");
    assert_eq!(
        merge(&s, "feature", FastForward::Allow).unwrap(),
        MergeOutcome::FastForward(feature)
    );
    assert_eq!(s.rev("main"), feature);
    assert_eq!(s.read("b.bin").unwrap(), noise(100_000, 5));
    assert_eq!(s.read("a"), None);
    assert!(s.changed_paths().is_empty());
    assert!(s.repo.merges().merge_state().unwrap().is_none());
    assert_eq!(
        merge(&s, "feature", FastForward::Allow).unwrap(),
        MergeOutcome::UpToDate
    );
    assert_eq!(
        merge(&s, "HEAD~1", FastForward::Allow).unwrap(),
        MergeOutcome::UpToDate
    );

    // Behind, told never to fast-forward: a merge commit whose tree is theirs.
    let s = diverged(
        |s| s.write("a", "one"),
        |_| {},
        |s| s.write("b.bin", noise(100_000, 5)),
    );
    let (one, feature) = (s.rev("main"), s.rev("feature"));
    let MergeOutcome::Merged(merged) = merge(&s, "feature", FastForward::Never).unwrap() else {
        panic!("a merge commit was expected");
    };
    assert_eq!(s.parents("HEAD"), [one, feature]);
    assert_eq!(s.rev("HEAD"), merged);
    let tree = |id| s.repo.commit(&id).unwrap().tree;
    assert_eq!(tree(merged), tree(feature), "the tree is theirs");
    assert!(s.changed_paths().is_empty());

    // Diverged, told to fast-forward only: refused, nothing changed.
    let s = diverged(
        |s| s.write("a", "one"),
        |s| s.write("a", "edit"),
        |s| s.write("c", "three"),
    );
    let (main, before) = (s.rev("main"), s.snapshot());
    let refused = merge(&s, "feature", FastForward::Only).unwrap_err();
    assert!(
        matches!(refused, RepoError::NotFastForward { .. }),
        "{refused}"
    );
    assert_eq!(s.rev("main"), main);
    assert_eq!(s.snapshot(), before);
    assert!(s.repo.merges().merge_state().unwrap().is_none());
    s.assert_fsck_clean();
}

#[test]
fn changes_to_different_files_merge_into_a_two_parent_commit() {
    let s = diverged(
        |s| {
            for (i, name) in ["a.bin", "b.bin", "gone.bin"].iter().enumerate() {
                s.write(&format!("media/{name}"), noise(200_000, 10 + i as u64));
            }
        },
        |s| {
            s.write("media/a.bin", noise(200_000, 20));
            s.remove("media/gone.bin");
        },
        |s| {
            s.write("media/b.bin", noise(200_000, 21));
            s.write("new/dir/c.bin", noise(1000, 22));
        },
    );
    let (main, feature) = (s.rev("main"), s.rev("feature"));
    let MergeOutcome::Merged(merged) = merge(&s, "feature", FastForward::Allow).unwrap() else {
        panic!("a merge commit was expected");
    };
    assert_eq!(s.rev("HEAD"), merged);
    assert_eq!(s.parents("HEAD"), [main, feature]);
    assert_eq!(
        s.repo.commit(&merged).unwrap().message,
        "Merge branch 'feature'"
    );
    let want = [
        ("media/a.bin", noise(200_000, 20)),
        ("media/b.bin", noise(200_000, 21)),
        ("new/dir/c.bin", noise(1000, 22)),
    ];
    let want: Vec<(String, Vec<u8>)> = want.into_iter().map(|(p, b)| (p.into(), b)).collect();
    assert_eq!(s.snapshot().into_iter().collect::<Vec<_>>(), want);
    assert!(s.changed_paths().is_empty());
    assert!(s.repo.status().unwrap().merge.is_none());
    s.assert_fsck_clean();
}

/// A binary conflict stops the merge with nothing committed: ours in the
/// working tree, the clean part staged, and a commit refused until it is
/// settled; then each way of settling it writes exactly the chosen bytes,
/// even over a file edited meanwhile, and the commit has both parents.
#[test]
fn a_binary_conflict_waits_for_ours_theirs_both_or_the_file_as_left() {
    let (ours, theirs) = (noise(300_000, 2), noise(300_000, 3));
    for how in [
        Resolution::Ours,
        Resolution::Theirs,
        Resolution::Both,
        Resolution::AsIs,
    ] {
        let s = photo_conflict();
        let (main, feature) = (s.rev("main"), s.rev("feature"));
        let outcome = merge(&s, "feature", FastForward::Allow).unwrap();
        assert_eq!(conflicts(outcome), [("shot.jpg".to_string(), false)]);
        assert_eq!(s.rev("main"), main, "nothing committed");
        assert_eq!(s.read("shot.jpg").unwrap(), ours);
        assert_eq!(s.read("extra.wav").unwrap(), noise(50_000, 4));
        let status = s.repo.status().unwrap();
        let m = status.merge.expect("a merge in progress");
        assert_eq!((m.label.as_str(), m.conflicts.len()), ("feature", 1));
        assert_eq!(
            (m.conflicts[0].path.as_slice(), m.conflicts[0].code),
            (&b"shot.jpg"[..], "UU")
        );
        let staged: Vec<&[u8]> = status.staged.iter().map(|c| c.path.as_slice()).collect();
        assert_eq!(staged, [b"extra.wav"]);

        let early = s.repo.commit_staged("too early").unwrap_err();
        assert!(
            matches!(early, RepoError::UnresolvedConflicts { .. }),
            "{early}"
        );
        let again = merge(&s, "feature", FastForward::Allow).unwrap_err();
        assert!(
            matches!(again, RepoError::MergeAlreadyInProgress { .. }),
            "{again}"
        );
        let not_one = resolve(&s, &["README"], Resolution::Ours).unwrap_err();
        assert!(
            matches!(not_one, RepoError::NotInConflict { .. }),
            "{not_one}"
        );

        s.write("shot.jpg", "retouched by hand");
        resolve(&s, &["shot.jpg"], how).unwrap();
        match how {
            Resolution::Ours => assert_eq!(s.read("shot.jpg").unwrap(), ours),
            Resolution::Theirs => assert_eq!(s.read("shot.jpg").unwrap(), theirs),
            Resolution::Both => {
                assert_eq!(s.read("shot.jpg"), None);
                assert_eq!(s.read("shot.ours.jpg").unwrap(), ours);
                assert_eq!(s.read("shot.theirs.jpg").unwrap(), theirs);
            }
            Resolution::AsIs => assert_eq!(s.read("shot.jpg").unwrap(), b"retouched by hand"),
        }
        let settled = s.repo.status().unwrap();
        assert!(settled.merge.unwrap().conflicts.is_empty(), "{how:?}");
        assert!(
            settled.unstaged.is_empty(),
            "{how:?}: the settled file is staged"
        );
        let twice = resolve(&s, &["shot.jpg"], Resolution::Theirs).unwrap_err();
        assert!(matches!(twice, RepoError::NotInConflict { .. }), "{twice}");

        conclude(&s);
        assert_eq!(s.parents("HEAD"), [main, feature], "{how:?}");
        assert!(s.repo.merges().merge_state().unwrap().is_none());
        assert!(s.changed_paths().is_empty(), "{how:?}");
        assert_eq!(s.in_commit("HEAD", "extra.wav").unwrap(), noise(50_000, 4));
        match how {
            Resolution::Both => {
                assert_eq!(s.in_commit("HEAD", "shot.theirs.jpg").unwrap(), theirs);
                assert_eq!(s.in_commit("HEAD", "shot.ours.jpg").unwrap(), ours);
                assert_eq!(s.in_commit("HEAD", "shot.jpg"), None);
            }
            _ => assert_eq!(s.in_commit("HEAD", "shot.jpg"), s.read("shot.jpg")),
        }
        s.assert_fsck_clean();
    }
}

#[test]
fn a_file_one_side_deleted_and_the_other_changed_is_settled_either_way() {
    // We deleted it, they changed it: theirs is shown until settled.
    let s = diverged(
        |s| s.write("clip.mov", noise(100_000, 30)),
        |s| s.remove("clip.mov"),
        |s| s.write("clip.mov", noise(100_000, 31)),
    );
    let outcome = merge(&s, "feature", FastForward::Allow).unwrap();
    assert_eq!(conflicts(outcome), [("clip.mov".to_string(), false)]);
    assert_eq!(s.read("clip.mov").unwrap(), noise(100_000, 31));
    let code = |s: &Scratch| s.repo.status().unwrap().merge.unwrap().conflicts[0].code;
    assert_eq!(code(&s), "DU");
    resolve(&s, &["clip.mov"], Resolution::Ours).unwrap();
    assert_eq!(s.read("clip.mov"), None);
    conclude(&s);
    assert_eq!(s.parents("HEAD").len(), 2);
    assert_eq!(s.in_commit("HEAD", "clip.mov"), None);
    s.assert_fsck_clean();

    // We changed it, they deleted it: keeping both keeps ours alone, under its .ours name.
    let s = diverged(
        |s| s.write("clip.mov", noise(100_000, 30)),
        |s| s.write("clip.mov", noise(100_000, 32)),
        |s| s.remove("clip.mov"),
    );
    merge(&s, "feature", FastForward::Allow).unwrap();
    assert_eq!(code(&s), "UD");
    resolve(&s, &["clip.mov"], Resolution::Both).unwrap();
    let files: Vec<_> = s.snapshot().into_iter().collect();
    assert_eq!(files, [("clip.ours.mov".to_string(), noise(100_000, 32))]);
    conclude(&s);
    assert_eq!(
        s.in_commit("HEAD", "clip.ours.mov").unwrap(),
        noise(100_000, 32)
    );
    s.assert_fsck_clean();
}

#[test]
fn a_file_against_a_folder_is_one_conflict_settled_together() {
    let s = diverged(
        |s| s.write("keep", "k"),
        |s| s.write("take", "a file"),
        |s| s.write("take/one", "in a dir"),
    );
    let mut paths = conflicts(merge(&s, "feature", FastForward::Allow).unwrap());
    paths.sort();
    let want = [("take".to_string(), false), ("take/one".to_string(), false)];
    assert_eq!(paths, want);
    assert_eq!(s.read("take").unwrap(), b"a file");
    let alone = resolve(&s, &["take/one"], Resolution::Theirs).unwrap_err();
    assert!(
        alone.to_string().contains("resolve them together"),
        "{alone}"
    );
    resolve(&s, &["take", "take/one"], Resolution::Theirs).unwrap();
    assert_eq!(s.read("take/one").unwrap(), b"in a dir");
    conclude(&s);
    assert_eq!(s.in_commit("HEAD", "take/one").unwrap(), b"in a dir");
    assert_eq!(s.in_commit("HEAD", "keep").unwrap(), b"k");
    s.assert_fsck_clean();
}

/// A merge refuses, changing nothing, uncommitted changes to paths it
/// writes, any staged change, and an untracked file where it would write;
/// an unstaged change elsewhere is carried through it and through abort.
#[test]
fn a_merge_refuses_changes_in_its_way_and_carries_the_others() {
    let s = photo_conflict();
    let head = s.rev("main");
    let untouched = |s: &Scratch, what: &str| {
        assert_eq!(s.rev("main"), head, "{what}");
        assert!(s.repo.merges().merge_state().unwrap().is_none(), "{what}");
    };
    s.write("shot.jpg", "retouched, not committed");
    let before = s.snapshot();
    let e = merge(&s, "feature", FastForward::Allow).unwrap_err();
    assert!(
        matches!(e, RepoError::UncommittedChanges { merge: true, .. }),
        "{e}"
    );
    assert_eq!(s.snapshot(), before);
    untouched(&s, "a change to the conflicted path");
    s.write("shot.jpg", noise(300_000, 2));

    s.write("README", "edited, not committed\n");
    s.add(&["README"]);
    let e = merge(&s, "feature", FastForward::Allow).unwrap_err();
    assert!(e.to_string().contains("README"), "{e}");
    untouched(&s, "a staged change");
    s.repo
        .worktree()
        .restore(&[b"README".to_vec()], None, true)
        .unwrap();

    s.write("extra.wav", "mine, untracked");
    let e = merge(&s, "feature", FastForward::Allow).unwrap_err();
    assert!(
        matches!(e, RepoError::UntrackedInTheWay { merge: true, .. }),
        "{e}"
    );
    assert_eq!(s.read("extra.wav").unwrap(), b"mine, untracked");
    untouched(&s, "an untracked file in the way");
    s.remove("extra.wav");

    merge(&s, "feature", FastForward::Allow).unwrap();
    assert_eq!(s.read("README").unwrap(), b"edited, not committed\n");
    assert!(s.read("extra.wav").is_some());
    s.repo.merges().merge_abort().unwrap();
    assert_eq!(s.read("README").unwrap(), b"edited, not committed\n");
    assert_eq!(s.read("extra.wav"), None);
    assert_eq!(s.read("shot.jpg").unwrap(), noise(300_000, 2));
    assert_eq!(s.changed_paths(), ["README"]);
    s.assert_fsck_clean();
}

/// A clean merge and a fast-forward carry an unstaged change to another
/// path: it stays in the working tree and out of the commit.
#[test]
fn clean_merges_and_fast_forwards_carry_unrelated_changes() {
    let s = diverged(
        |s| {
            s.write("a.txt", "a\n");
            s.write("notes.txt", "notes\n");
        },
        |s| s.write("m.txt", "main\n"),
        |s| s.write("a.txt", "a, feature\n"),
    );
    s.write("notes.txt", "notes, mine\n");
    assert!(matches!(
        merge(&s, "feature", FastForward::Allow).unwrap(),
        MergeOutcome::Merged(_)
    ));
    assert_eq!(s.read("a.txt").unwrap(), b"a, feature\n");
    assert_eq!(s.read("notes.txt").unwrap(), b"notes, mine\n");
    assert_eq!(s.in_commit("HEAD", "notes.txt").unwrap(), b"notes\n");
    assert_eq!(s.changed_paths(), ["notes.txt"]);

    // Behind: a fast-forward carries it too.
    let s = diverged(
        |s| s.write("notes.txt", "notes\n"),
        |_| {},
        |s| s.write("b.txt", "b\n"),
    );
    s.write("notes.txt", "notes, mine\n");
    let feature = s.rev("feature");
    assert_eq!(
        merge(&s, "feature", FastForward::Allow).unwrap(),
        MergeOutcome::FastForward(feature)
    );
    assert_eq!(s.read("b.txt").unwrap(), b"b\n");
    assert_eq!(s.read("notes.txt").unwrap(), b"notes, mine\n");
    assert_eq!(s.changed_paths(), ["notes.txt"]);
    s.assert_fsck_clean();
}

#[test]
fn abort_puts_back_head_exactly_and_the_merge_can_be_run_again() {
    let s = diverged(
        |s| {
            s.write("shot.jpg", noise(300_000, 1));
            s.write("changed-by-them", "base");
            s.write("deleted-by-them", "base");
        },
        |s| s.write("shot.jpg", noise(300_000, 2)),
        |s| {
            s.write("shot.jpg", noise(300_000, 3));
            s.write("changed-by-them", "theirs");
            s.remove("deleted-by-them");
            s.write("added/by-them", "theirs");
        },
    );
    s.write("untracked.txt", "leave me");
    let (before, head) = (s.snapshot(), s.rev("main"));
    merge(&s, "feature", FastForward::Allow).unwrap();
    assert_ne!(s.snapshot(), before);
    resolve(&s, &["shot.jpg"], Resolution::Both).unwrap();
    s.write("changed-by-them", "edited during the merge");

    s.repo.merges().merge_abort().unwrap();
    assert_eq!(s.snapshot(), before);
    assert_eq!(s.rev("main"), head);
    assert!(s.repo.merges().merge_state().unwrap().is_none());
    assert_eq!(s.changed_paths(), ["untracked.txt"]);
    let none = s.repo.merges().merge_abort().unwrap_err();
    assert!(matches!(none, RepoError::NoMergeToAbort), "{none}");
    s.assert_fsck_clean();

    merge(&s, "feature", FastForward::Allow).unwrap();
    resolve(&s, &[""], Resolution::Theirs).unwrap();
    conclude(&s);
    assert_eq!(s.read("shot.jpg").unwrap(), noise(300_000, 3));
    s.assert_fsck_clean();
}

/// With their branch deleted and gc pruning everything unreachable at
/// once, only the merge state keeps their side: it must.
#[test]
fn gc_during_a_conflicted_merge_keeps_what_it_needs() {
    let s = photo_conflict();
    merge(&s, "feature", FastForward::Allow).unwrap();
    s.repo.history().delete_branch("feature", true).unwrap();
    let policy = GcPolicy {
        prune_reflog: true,
        store: GcOptions {
            keep_recent: std::time::Duration::ZERO,
            ..Default::default()
        },
    };
    s.repo.maintenance().gc(policy, &Silent).unwrap();
    s.assert_fsck_clean();
    resolve(&s, &["shot.jpg"], Resolution::Theirs).unwrap();
    assert_eq!(s.read("shot.jpg").unwrap(), noise(300_000, 3));
    conclude(&s);
    s.assert_fsck_clean();
}

/// Text files both sides edited, as in `git merge`, in both marker styles:
/// checked against real git on the same history (when git is installed).
#[test]
fn text_files_merge_line_by_line_as_git_merge_does() {
    const TEXT_EDITS: &[(&str, &str, &str, &str)] = &[
        // Different lines: merges.
        (
            "shot.xmp",
            "<x>\n rating=1\n title=t\n label=none\n</x>\n",
            "<x>\n rating=4\n title=t\n label=none\n</x>\n",
            "<x>\n rating=1\n title=t\n label=red\n</x>\n",
        ),
        // The same line: a conflict.
        (
            "cut.edl",
            "001 A V C 00:00\n002 B V C 00:10\n003 C V C 00:20\n",
            "001 A V C 00:00\n002 B V C 00:12\n003 C V C 00:20\n",
            "001 A V C 00:00\n002 B V C 00:15\n003 C V C 00:20\n",
        ),
        // Touching lines (one side without a last newline): a conflict, as git sees it.
        (
            "labels.csv",
            "id,label\n1,cat\n2,dog\n",
            "id,label\n1,cat\n2,wolf",
            "id,label\n1,cat\n2,dog\n3,owl\n",
        ),
        // Both made the same change, and one more elsewhere: merges.
        (
            "settings.ini",
            "a=1\nb=2\nc=3\nd=4\ne=5\n",
            "a=1\nb=20\nc=3\nd=4\ne=5\n",
            "a=1\nb=20\nc=3\nd=4\ne=50\n",
        ),
    ];
    let write = |dir: &std::path::Path, side: usize| {
        for (name, base, ours, theirs) in TEXT_EDITS {
            std::fs::write(dir.join(name), [base, ours, theirs][side]).unwrap();
        }
        std::fs::write(dir.join("shot.jpg"), noise(20_000, side as u64)).unwrap();
        if side > 0 {
            let text = ["", "from main\n", "from feature\n"][side];
            std::fs::write(dir.join("new.txt"), text).unwrap();
        }
    };
    // A diff3 base label is a short id, of different lengths in git and here.
    let unlabelled = |path: &std::path::Path| -> String {
        let text = std::fs::read_to_string(path).unwrap();
        let relabel = |l: &str| {
            if l.starts_with("||||||| ") {
                "||||||| BASE\n"
            } else {
                l
            }
            .to_string()
        };
        text.split_inclusive('\n').map(relabel).collect()
    };
    for style in ["merge", "diff3"] {
        let mut s = diverged(
            |s| write(&s.dir, 0),
            |s| write(&s.dir, 1),
            |s| write(&s.dir, 2),
        );
        s.repo
            .set_setting("merge.conflictStyle", Some(style))
            .unwrap();
        let mut marked = conflicts(merge(&s, "feature", FastForward::Allow).unwrap());
        marked.sort();
        let want = [
            ("cut.edl", true),
            ("labels.csv", true),
            ("new.txt", true),
            ("shot.jpg", false),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(p, m)| (p.to_string(), *m)).collect();
        assert_eq!(marked, want, "{style}");
        assert_eq!(
            s.read("shot.jpg").unwrap(),
            noise(20_000, 1),
            "a binary file shows ours"
        );
        let codes: Vec<(String, &str)> = (s.repo.status().unwrap().merge.unwrap().conflicts)
            .into_iter()
            .map(|c| (String::from_utf8(c.path).unwrap(), c.code))
            .collect();
        let want = [
            ("cut.edl", "UU"),
            ("labels.csv", "UU"),
            ("new.txt", "AA"),
            ("shot.jpg", "UU"),
        ];
        let want: Vec<(String, &str)> = want.iter().map(|(p, c)| (p.to_string(), *c)).collect();
        assert_eq!(codes, want, "{style}");
        assert_eq!(
            s.read("shot.xmp").unwrap(),
            b"<x>\n rating=4\n title=t\n label=red\n</x>\n",
            "{style}: lines each side changed are merged"
        );

        let git_dir = s.dir.parent().unwrap().join("git");
        std::fs::create_dir(&git_dir).unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(&git_dir)
                .env("GIT_AUTHOR_NAME", "Ada")
                .env("GIT_AUTHOR_EMAIL", "ada@example.org")
                .env("GIT_COMMITTER_NAME", "Ada")
                .env("GIT_COMMITTER_EMAIL", "ada@example.org")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", &git_dir)
                .output()
        };
        let Ok(out) = git(&["init", "-q", "-b", "main"]) else {
            eprintln!("git is not installed: the comparison with git's merge is skipped");
            continue;
        };
        assert!(out.status.success());
        let commit = |side: usize, msg: &str| {
            write(&git_dir, side);
            assert!(git(&["add", "."]).unwrap().status.success());
            assert!(git(&["commit", "-q", "-m", msg]).unwrap().status.success());
        };
        commit(0, "base");
        git(&["checkout", "-q", "-b", "feature"]).unwrap();
        commit(2, "feature");
        git(&["checkout", "-q", "main"]).unwrap();
        commit(1, "main");
        let conflict_style = format!("merge.conflictStyle={style}");
        let out = git(&["-c", &conflict_style, "merge", "feature"]).unwrap();
        assert_eq!(out.status.code(), Some(1));
        for (name, ..) in TEXT_EDITS.iter().chain([&("new.txt", "", "", "")]) {
            assert_eq!(
                unlabelled(&s.dir.join(name)),
                unlabelled(&git_dir.join(name)),
                "{style}: {name} differs from git's merge"
            );
        }
        s.reopen();
    }
}

/// A text conflict edited by hand is settled by staging it; a marked file
/// is never committed by mistake.
#[test]
fn staging_settles_an_edited_text_conflict() {
    let s = diverged(
        |s| s.write("cut.edl", "001 A\n002 B\n003 C\n"),
        |s| s.write("cut.edl", "001 A\n002 B main\n003 C\n"),
        |s| s.write("cut.edl", "001 A\n002 B feature\n003 C\n"),
    );
    let marked = conflicts(merge(&s, "feature", FastForward::Allow).unwrap());
    assert_eq!(marked, [("cut.edl".to_string(), true)]);
    assert_eq!(
        String::from_utf8(s.read("cut.edl").unwrap()).unwrap(),
        "001 A\n<<<<<<< HEAD\n002 B main\n=======\n002 B feature\n>>>>>>> feature\n003 C\n"
    );
    let early = s.repo.commit_staged("too early").unwrap_err();
    assert!(early.to_string().contains("cut.edl"), "{early}");
    s.write("cut.edl", "001 A\n002 B both\n003 C\n");
    s.add(&["cut.edl"]);
    assert!(s.repo.status().unwrap().merge.unwrap().conflicts.is_empty());
    conclude(&s);
    assert_eq!(s.parents("HEAD").len(), 2);
    assert_eq!(
        s.in_commit("HEAD", "cut.edl").unwrap(),
        b"001 A\n002 B both\n003 C\n"
    );
    s.assert_fsck_clean();
}

/// A pick brings one commit's change (merged into our text), its message
/// and its author, and nothing of the commits after it; picked again it
/// changes nothing; a merge commit is refused.
#[test]
fn cherry_pick_applies_one_commits_change_with_its_message_and_author() {
    let mut s = Scratch::new();
    s.write("notes.txt", "one\ntwo\nthree\nfour\nfive\n");
    s.write("shot.jpg", noise(30_000, 1));
    s.commit_all("base").unwrap();
    s.branch_here("feature");
    s.write("notes.txt", "one\ntwo\nthree\nfour\nFIVE\n");
    s.write("extra.wav", noise(10_000, 2));
    s.repo.set_setting("user.name", Some("Grace")).unwrap();
    s.repo
        .set_setting("user.email", Some("grace@example.org"))
        .unwrap();
    let fix = s.commit_all("the fix").unwrap();
    s.repo.set_setting("user.name", Some("Ada")).unwrap();
    s.repo
        .set_setting("user.email", Some("ada@example.org"))
        .unwrap();
    s.write("shot.jpg", noise(30_000, 3));
    s.commit_all("not wanted").unwrap();
    s.switch("main");
    s.write("notes.txt", "ONE\ntwo\nthree\nfour\nfive\n");
    let main = s.commit_all("main work").unwrap();

    let picked = s
        .repo
        .merges()
        .cherry_pick(fix, "feature~1", &Silent)
        .unwrap();
    let MergeOutcome::Merged(picked) = picked else {
        panic!("a pick commit was expected, not {picked:?}");
    };
    assert_eq!(
        s.read("notes.txt").unwrap(),
        b"ONE\ntwo\nthree\nfour\nFIVE\n"
    );
    assert_eq!(s.read("extra.wav").unwrap(), noise(10_000, 2));
    assert_eq!(
        s.read("shot.jpg").unwrap(),
        noise(30_000, 1),
        "the later change stays out"
    );
    let commit = s.repo.commit(&picked).unwrap();
    assert_eq!(commit.parents, [main]);
    assert_eq!(commit.message.trim_end(), "the fix");
    assert_eq!(
        (commit.author.name.as_str(), commit.author.email.as_str()),
        ("Grace", "grace@example.org")
    );
    assert_eq!(commit.committer.name, "Ada");
    assert!(s.changed_paths().is_empty());

    let again = s
        .repo
        .merges()
        .cherry_pick(fix, "feature~1", &Silent)
        .unwrap();
    assert_eq!(again, MergeOutcome::UpToDate);
    assert_eq!(s.rev("HEAD"), picked);

    s.write("side.txt", "side\n");
    s.branch_here("side");
    s.commit_all("side").unwrap();
    s.switch("main");
    let MergeOutcome::Merged(merged) = merge(&s, "side", FastForward::Never).unwrap() else {
        panic!("a merge commit was expected");
    };
    let refused = s
        .repo
        .merges()
        .cherry_pick(merged, "HEAD", &Silent)
        .unwrap_err();
    assert!(
        matches!(refused, RepoError::PickOfAMerge { .. }),
        "{refused}"
    );
    s.reopen();
    s.assert_fsck_clean();
}

/// A conflicted pick is settled and concluded by a commit on HEAD alone,
/// with the picked message; or aborted back to exactly where it started.
#[test]
fn a_conflicted_cherry_pick_is_settled_and_committed_or_aborted() {
    let s = diverged(
        |s| s.write("cut.edl", "001 A\n002 B\n003 C\n"),
        |s| s.write("cut.edl", "001 A\n002 B main\n003 C\n"),
        |s| s.write("cut.edl", "001 A\n002 B feature\n003 C\n"),
    );
    let (main, before, feature) = (s.rev("main"), s.snapshot(), s.rev("feature"));
    let pick = || {
        s.repo
            .merges()
            .cherry_pick(feature, "feature", &Silent)
            .unwrap()
    };
    assert_eq!(conflicts(pick()), [("cut.edl".to_string(), true)]);
    let m = s.repo.status().unwrap().merge.unwrap();
    assert!(m.cherry_pick);
    let e = merge(&s, "feature", FastForward::Allow).unwrap_err();
    assert!(matches!(e, RepoError::MergeAlreadyInProgress { .. }), "{e}");
    s.repo.merges().merge_abort().unwrap();
    assert_eq!(s.snapshot(), before);
    assert_eq!(s.rev("HEAD"), main);

    conflicts(pick());
    s.write("cut.edl", "001 A\n002 B both\n003 C\n");
    s.add(&["cut.edl"]);
    let done = conclude(&s);
    let commit = s.repo.commit(&done).unwrap();
    assert_eq!(commit.parents, [main]);
    assert_eq!(commit.message.trim_end(), "feature work");
    assert!(s.repo.merges().merge_state().unwrap().is_none());
    s.assert_fsck_clean();
}
