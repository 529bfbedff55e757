//! `dmv rebase` (and `-i` through an editor script), the branch against
//! its upstream in `status`, on the real binary.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::*;

fn subjects(d: &Path, rev: &str) -> Vec<String> {
    dmv(d, &["log", "--format=%s", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

fn rev(d: &Path, name: &str) -> String {
    dmv(d, &["rev-parse", name]).trim().to_string()
}

fn files(d: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = file_bytes(d);
    all.retain(|k, _| !k.starts_with(".dmv"));
    all
}

fn commit_file(d: &Path, name: &str, text: &str, message: &str) {
    std::fs::write(d.join(name), text).unwrap();
    dmv(d, &["add", name]);
    dmv(d, &["commit", "-m", message]);
}

/// main: base, "main 1" (first line of t.txt); topic from base: "topic 1"
/// (last line of t.txt), "topic 2" (n.txt), "topic 3" (a photo).
fn topic_behind_main() -> tempfile::TempDir {
    let repo = new_repo();
    let d = repo.path();
    commit_file(d, "t.txt", "a\nb\nc\nd\ne\n", "base");
    dmv(d, &["switch", "-c", "topic"]);
    commit_file(d, "t.txt", "a\nb\nc\nd\nE\n", "topic 1");
    commit_file(d, "n.txt", "new\n", "topic 2");
    write_noise(&d.join("shot.jpg"), 40_000, 1);
    dmv(d, &["add", "shot.jpg"]);
    dmv(d, &["commit", "-m", "topic 3"]);
    dmv(d, &["switch", "main"]);
    commit_file(d, "t.txt", "A\nb\nc\nd\ne\n", "main 1");
    dmv(d, &["switch", "topic"]);
    repo
}

/// What a rebase prints and records in the reflog (the library's
/// tests/rebases.rs checks what it does).
#[test]
fn rebase_replays_the_branch_onto_its_new_base() {
    let repo = topic_behind_main();
    let d = repo.path();
    let out = dmv(d, &["rebase", "main"]);
    assert_eq!(
        out.trim(),
        "Successfully rebased and updated refs/heads/topic."
    );
    assert_eq!(rev(d, "HEAD~3"), rev(d, "main"));
    assert!(dmv(d, &["reflog"]).contains("rebase (finish)"));
    assert_eq!(
        dmv(d, &["rebase", "main"]).trim(),
        "Current branch is up to date."
    );
}

#[test]
fn a_conflicting_pick_stops_and_continue_skip_and_abort_do_what_git_does() {
    let repo = topic_behind_main();
    let d = repo.path();
    // main changes the line "topic 1" changes: the first pick conflicts.
    dmv(d, &["switch", "main"]);
    commit_file(d, "t.txt", "A\nb\nc\nd\ne-main\n", "main 2");
    dmv(d, &["switch", "topic"]);
    let topic = rev(d, "topic");
    let before = files(d);

    let out = dmv_out(d, &["rebase", "main"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Could not apply")
            && text.contains("topic 1")
            && text.contains("CONFLICT (content): Merge conflict in t.txt"),
        "{text}"
    );
    assert!(dmv(d, &["status"]).contains("You are currently rebasing branch 'topic'"));
    // The branch has not moved while the rebase runs.
    assert_eq!(dmv(d, &["rev-parse", "refs/heads/topic"]).trim(), topic);
    let again = dmv_out(d, &["rebase", "main"]);
    assert_eq!(again.status.code(), Some(128), "a second rebase is refused");
    // Nothing merges into the middle of it (it would be lost when the rebase ends), a sync included.
    for args in [&["merge", "main"][..], &["sync"]] {
        let out = dmv_out(d, args);
        assert!(
            !out.status.success() && stderr(&out).contains("a rebase is in progress"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A watcher commits nothing on its detached HEAD, and says what waits.
    let stopped_at = rev(d, "HEAD");
    std::fs::write(d.join("meanwhile.txt"), "written during the rebase\n").unwrap();
    dmv(d, &["watch", "--background", "--quiet", "0.2"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !dmv(d, &["watch", "--status"]).contains("waiting: a rebase waits for you") {
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher never said the rebase waits: {}",
            dmv(d, &["watch", "--status"])
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    dmv(d, &["watch", "--stop"]);
    assert_eq!(
        rev(d, "HEAD"),
        stopped_at,
        "the watcher committed during the rebase"
    );
    std::fs::remove_file(d.join("meanwhile.txt")).unwrap();

    dmv(d, &["rebase", "--abort"]);
    assert_eq!(files(d), before);
    assert_eq!(rev(d, "HEAD"), topic);
    assert!(dmv(d, &["status"]).starts_with("On branch topic"));

    // Settled by hand, then continued.
    assert_eq!(dmv_out(d, &["rebase", "main"]).status.code(), Some(1));
    std::fs::write(d.join("t.txt"), "A\nb\nc\nd\nE-both\n").unwrap();
    dmv(d, &["add", "t.txt"]);
    let out = dmv(d, &["rebase", "--continue"]);
    assert!(out.contains("Successfully rebased"), "{out}");
}

/// An editor script: the todo list gets `todo_sed` applied; a commit
/// message is replaced by `message`.
fn editor_script(dir: &Path, todo_sed: &str, message: &str) -> String {
    let script = dir.join("editor.sh");
    std::fs::write(&script, format!("#!/bin/sh\ncase \"$1\" in\n  *rebase-todo) sed -i -e '{todo_sed}' \"$1\" ;;\n  *) printf '%s\\n' '{message}' > \"$1\" ;;\nesac\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

#[test]
fn an_interactive_rebase_follows_the_plan_the_editor_leaves() {
    let t = tempfile::tempdir().unwrap();
    let repo = topic_behind_main();
    let d = repo.path();
    // Lines: 1 pick topic 1, 2 pick topic 2, 3 pick topic 3.
    // Reword 1, fold 2 into it (squash), drop 3.
    let editor = editor_script(
        t.path(),
        "1s/^pick/reword/; 2s/^pick/squash/; 3s/^pick/drop/",
        "one and two",
    );
    let out = dmv_cmd(d)
        .args(["rebase", "-i", "main"])
        .env("DMV_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(subjects(d, "HEAD"), ["one and two", "main 1", "base"]);
    assert_eq!(std::fs::read_to_string(d.join("n.txt")).unwrap(), "new\n");
    assert!(
        !d.join("shot.jpg").exists(),
        "the dropped commit's photo is gone"
    );

    // A plan that starts with squash is refused before anything moves; an emptied plan does nothing.
    let head = rev(d, "HEAD");
    let editor = editor_script(t.path(), "1s/^pick/squash/", "unused");
    let out = dmv_cmd(d)
        .args(["rebase", "-i", "HEAD~2"])
        .env("DMV_EDITOR", &editor)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("no commit before it"),
        "{}",
        stderr(&out)
    );
    let editor = editor_script(t.path(), "d", "unused");
    let out = dmv_cmd(d)
        .args(["rebase", "-i", "HEAD~2"])
        .env("DMV_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Nothing to do"));
    assert_eq!(rev(d, "HEAD"), head);
}

/// Killed at every step between durable writes, a rebase is continued to
/// the same result as one never killed, or aborted back to where it
/// started; fsck finds nothing wrong either way. Plain, its picks are made
/// without the working tree (the plan saved with its tip, the files written
/// once); with every line a reword, each pick goes through the working tree
/// (its merge state, files, commit and ref, the plan; the first and a later pick).
#[test]
fn a_rebase_killed_at_every_step_is_continued_or_aborted() {
    let t = tempfile::tempdir().unwrap();
    // Every line a reword, each message kept as it is.
    let reword_all = t.path().join("reword.sh");
    std::fs::write(
        &reword_all,
        "#!/bin/sh\ncase \"$1\" in\n  *rebase-todo) sed -i -e 's/^pick/reword/' \"$1\" ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&reword_all, std::fs::Permissions::from_mode(0o755)).unwrap();
    let in_memory = [
        "rebase-state-written",
        "rebase-picked-in-memory",
        "rebase-detached",
        "rebase-branch-moved",
        "rebase-head-back",
    ];
    let through_the_files = [
        "rebase-state-written",
        "rebase-detached",
        "merge-state-written@1",
        "merge-state-written@2",
        "merge-worktree-written@1",
        "merge-worktree-written@3",
        "commit-before-ref@1",
        "commit-before-ref@2",
        "commit-after-ref@1",
        "commit-after-ref@3",
        "rebase-step-saved@1",
        "rebase-step-saved@3",
        "rebase-branch-moved",
        "rebase-head-back",
    ];
    let runs = in_memory
        .iter()
        .map(|p| (*p, false))
        .chain(through_the_files.iter().map(|p| (*p, true)));
    for (point, interactive) in runs {
        for finish in ["--continue", "--abort"] {
            let repo = topic_behind_main();
            let d = repo.path();
            let topic = rev(d, "topic");
            let before = files(d);
            let mut cmd = dmv_cmd(d);
            match interactive {
                true => cmd
                    .args(["rebase", "-i", "main"])
                    .env("DMV_EDITOR", &reword_all),
                false => cmd.args(["rebase", "main"]),
            };
            let paused = Paused::start(cmd, point);
            // SAFETY: kill(2) on the child this test started.
            unsafe { libc::kill(paused.pid() as i32, libc::SIGKILL) };
            let _ = paused.resume();
            let out = dmv_cmd(d)
                .args(["rebase", finish])
                .env("DMV_EDITOR", &reword_all)
                .output()
                .unwrap();
            let at = format!("killed at {point} (interactive: {interactive}), then {finish}");
            assert!(out.status.success(), "{at}: {}", stderr(&out));
            if finish == "--continue" {
                assert_eq!(
                    subjects(d, "HEAD"),
                    ["topic 3", "topic 2", "topic 1", "main 1", "base"],
                    "{at}"
                );
                assert_eq!(rev(d, "HEAD~3"), rev(d, "main"), "{at}");
                assert_eq!(
                    std::fs::read_to_string(d.join("t.txt")).unwrap(),
                    "A\nb\nc\nd\nE\n",
                    "{at}"
                );
                assert!(
                    d.join("n.txt").exists() && d.join("shot.jpg").exists(),
                    "{at}"
                );
            } else {
                assert_eq!(rev(d, "HEAD"), topic, "{at}");
                assert!(files(d) == before, "{at}: the files are not as they were");
            }
            assert_eq!(
                dmv(d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
                "topic",
                "{at}"
            );
            assert_eq!(rev(d, "topic"), rev(d, "HEAD"), "{at}");
            let status = dmv(d, &["status"]);
            assert!(
                status.contains("nothing to commit, working tree clean")
                    && !status.contains("rebasing"),
                "{at}: {status}"
            );
            let fsck = dmv_out(d, &["fsck", "--full"]);
            assert!(fsck.status.success(), "{at}: {}", stderr(&fsck));
        }
    }
}

/// Nobody types `rebase --continue` for a replica left running: a rebase
/// killed on its way (in memory, or with a pick half written) is finished
/// by the next `dmv sync`, which then sends the rebased branch.
#[test]
fn a_rebase_killed_on_its_way_is_finished_by_the_next_sync() {
    let in_memory = [
        "rebase-state-written",
        "rebase-picked-in-memory",
        "rebase-detached",
        "rebase-branch-moved",
        "rebase-head-back",
    ];
    let through_the_files = [
        "merge-state-written@1",
        "merge-worktree-written@1",
        "commit-before-ref@2",
        "commit-after-ref@1",
        "rebase-step-saved@1",
    ];
    for (point, interactive) in in_memory
        .iter()
        .map(|p| (*p, false))
        .chain(through_the_files.iter().map(|p| (*p, true)))
    {
        let repo = topic_behind_main();
        let d = repo.path();
        let hub = tempfile::tempdir().unwrap();
        dmv(hub.path(), &["init", "--bare", "hub"]);
        dmv(
            d,
            &[
                "remote",
                "add",
                "origin",
                hub.path().join("hub").to_str().unwrap(),
            ],
        );
        // A reword (each message kept) makes every pick go through the working tree: its pause points are reached.
        let editor = hub.path().join("reword.sh");
        std::fs::write(&editor, "#!/bin/sh\ncase \"$1\" in\n  *rebase-todo) sed -i -e 's/^pick/reword/' \"$1\" ;;\nesac\n").unwrap();
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut cmd = dmv_cmd(d);
        match interactive {
            true => cmd
                .args(["rebase", "-i", "main"])
                .env("DMV_EDITOR", &editor),
            false => cmd.args(["rebase", "main"]),
        };
        let paused = Paused::start(cmd, point);
        // SAFETY: kill(2) on the child this test started.
        unsafe { libc::kill(paused.pid() as i32, libc::SIGKILL) };
        let _ = paused.resume();
        let at = format!("killed at {point} (interactive: {interactive})");
        assert!(
            d.join(".dmv/REBASE_STATE").exists(),
            "{at}: the rebase was cut short"
        );
        let out = dmv_out(d, &["sync"]);
        assert!(out.status.success(), "{at}: {}", stderr(&out));
        assert_eq!(
            subjects(d, "HEAD"),
            ["topic 3", "topic 2", "topic 1", "main 1", "base"],
            "{at}"
        );
        assert_eq!(rev(d, "HEAD~3"), rev(d, "main"), "{at}");
        assert_eq!(
            dmv(d, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            "topic",
            "{at}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("t.txt")).unwrap(),
            "A\nb\nc\nd\nE\n",
            "{at}"
        );
        assert_eq!(
            dmv(d, &["rev-parse", "origin/topic"]),
            dmv(d, &["rev-parse", "topic"]),
            "{at}: the rebased branch was sent"
        );
        let status = dmv(d, &["status"]);
        assert!(
            status.contains("nothing to commit, working tree clean")
                && !status.contains("rebasing"),
            "{at}: {status}"
        );
    }
}

#[test]
fn status_says_how_the_branch_stands_against_its_upstream_and_rebase_defaults_to_it() {
    let t = tempfile::tempdir().unwrap();
    let hub = t.path().join("hub");
    dmv(t.path(), &["init", "--bare", "hub"]);
    let a = t.path().join("a");
    std::fs::create_dir(&a).unwrap();
    dmv(&a, &["init"]);
    commit_file(&a, "t.txt", "a\nb\nc\nd\ne\n", "base");
    dmv(&a, &["remote", "add", "origin", hub.to_str().unwrap()]);
    dmv(&a, &["push", "-u", "origin", "main"]);
    dmv(t.path(), &["clone", hub.to_str().unwrap(), "b"]);
    let b = t.path().join("b");
    assert!(dmv(&b, &["status"]).contains("Your branch is up to date with 'origin/main'."));
    commit_file(&b, "t.txt", "a\nb\nc\nd\nE\n", "b 1");
    assert!(dmv(&b, &["status"]).contains("Your branch is ahead of 'origin/main' by 1 commit."));
    commit_file(&a, "t.txt", "A\nb\nc\nd\ne\n", "a 1");
    commit_file(&a, "u.txt", "u\n", "a 2");
    dmv(&a, &["push"]);
    dmv(&b, &["fetch"]);
    let status = dmv(&b, &["status"]);
    assert!(
        status.contains("have diverged,\nand have 1 and 2 different commits each"),
        "{status}"
    );
    let json: serde_json::Value = serde_json::from_str(&dmv(&b, &["status", "--json"])).unwrap();
    assert_eq!(json["tracking"]["upstream"], "origin/main");
    assert_eq!(json["tracking"]["counts"], serde_json::json!([1, 2]));
    dmv(&b, &["rebase"]);
    assert!(dmv(&b, &["status"]).contains("Your branch is ahead of 'origin/main' by 1 commit."));
    assert_eq!(
        std::fs::read_to_string(b.join("t.txt")).unwrap(),
        "A\nb\nc\nd\nE\n"
    );

    // pull --rebase: fetched and put on top in one step, no merge commit.
    commit_file(&a, "v.txt", "v\n", "a 3");
    dmv(&a, &["push"]);
    let out = dmv(&b, &["pull", "--rebase"]);
    assert!(out.contains("Successfully rebased"), "{out}");
    assert_eq!(subjects(&b, "HEAD"), ["b 1", "a 3", "a 2", "a 1", "base"]);
    assert!(dmv(&b, &["status"]).contains("Your branch is ahead of 'origin/main' by 1 commit."));
}
