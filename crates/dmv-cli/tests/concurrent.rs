//! Two commands at once: gc against every writer, and writers against each
//! other. A writer is stopped at an exact point (DMV_PAUSEPOINT) while the
//! other command runs, so the race happens every time, not by luck. gc runs
//! with --prune=now so no grace period hides a lost root.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::remote::{assert_same_tree, fsck_clean, ok, one_line_error};
use common::servers::HttpServer;
use common::Paused;
use common::*;

fn spawn(dir: &Path, args: &[&str]) -> Child {
    dmv_cmd(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// gc with nothing but its roots to keep data alive.
const GC_NOW: &[&str] = &["gc", "--prune-reflog", "--prune=now"];

/// Runs a strict gc while `paused` is stopped mid-way, then lets it go on:
/// gc must wait for the writer or keep what the writer will refer to.
fn gc_while_paused(gc_dir: &Path, paused: Paused) -> Output {
    let gc = spawn(gc_dir, GC_NOW);
    // Let gc start and look at the repository before the writer goes on.
    std::thread::sleep(Duration::from_millis(200));
    let writer = paused.resume();
    ok(&gc.wait_with_output().unwrap());
    writer
}

/// Small packs, so a few MiB make a write session seal several.
fn small_packs(d: &Path) {
    edit_config(d, |cfg| cfg["pack_size_limit"] = (1u64 << 20).into());
}

fn repo_with_one_commit() -> tempfile::TempDir {
    let repo = new_repo();
    let d = repo.path();
    small_packs(d);
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "a"]);
    repo
}

fn cat(d: &Path, spec: &str) -> Vec<u8> {
    let out = dmv_out(d, &["cat", spec]);
    ok(&out);
    out.stdout
}

#[test]
fn gc_during_add_keeps_what_is_being_staged() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("big.raw"), 6 << 20, 1);
    let mut add = dmv_cmd(d);
    add.args(["add", "big.raw"]);
    ok(&gc_while_paused(d, Paused::start(add, "pack-sealed")));
    dmv(d, &["commit", "-m", "big"]);
    fsck_clean(d);
    assert!(cat(d, "HEAD:big.raw") == std::fs::read(d.join("big.raw")).unwrap());
}

/// A repository an older dmv made (its requirements list no `packs-v3`):
/// the first writer to open it lists them all while it writes packs of
/// version 3, a second writer opens it at the same moment and waits for the
/// working tree, and gc runs meanwhile. Nothing staged is lost, the list is
/// whole, every pack verifies.
#[test]
fn an_older_repository_opened_by_two_writers_and_gc_at_once_is_upgraded_and_loses_nothing() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    std::fs::write(
        d.join(".dmv/requires"),
        "packs-v2\ngc-lock-v2\nworktree-lock\n",
    )
    .unwrap();
    write_noise(&d.join("b.raw"), 4 << 20, 41);
    write_noise(&d.join("c.raw"), 3 << 20, 42);
    let mut first = dmv_cmd(d);
    first.args(["add", "b.raw"]);
    let paused = Paused::start(first, "pack-sealed");
    let second = spawn(d, &["add", "c.raw"]);
    ok(&gc_while_paused(d, paused));
    ok(&second.wait_with_output().unwrap());
    assert_eq!(std::fs::read_to_string(d.join(".dmv/requires")).unwrap(), "packs-v2\npacks-v3\ngc-lock-v2\nworktree-lock\nlocations-journal\nrefs-inline\nlocations-packed\nlocations-claims\n");
    dmv(d, &["commit", "-m", "bc"]);
    fsck_clean(d);
    for f in ["a.txt", "b.raw", "c.raw"] {
        assert!(
            cat(d, &format!("HEAD:{f}")) == std::fs::read(d.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn gc_during_commit_all_keeps_the_new_commit() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("a.txt"), 4 << 20, 2);
    let mut commit = dmv_cmd(d);
    commit.args(["commit", "-a", "-m", "edit"]);
    ok(&gc_while_paused(
        d,
        Paused::start(commit, "commit-before-ref"),
    ));
    fsck_clean(d);
    assert!(cat(d, "HEAD:a.txt") == std::fs::read(d.join("a.txt")).unwrap());
    assert_eq!(cat(d, "HEAD~1:a.txt"), b"a\n");
}

/// A watcher's commit, paused while it writes the new file's packs and
/// again between its commit object and the ref, while a strict gc runs:
/// the commit lands whole, and the watcher goes on.
#[test]
fn gc_during_a_watchers_commit_keeps_it() {
    for point in ["pack-sealed", "commit-before-ref"] {
        let repo = repo_with_one_commit();
        let d = repo.path();
        write_noise(&d.join("take.raw"), 4 << 20, 3);
        let mut watch = dmv_cmd(d);
        watch.args(["watch", "--quiet", "0.2"]);
        let paused = Paused::start(watch, point);
        let gc = spawn(d, GC_NOW);
        std::thread::sleep(Duration::from_millis(200));
        let mut watcher = paused.release();
        ok(&gc.wait_with_output().unwrap());
        let started = std::time::Instant::now();
        while dmv_out(d, &["cat", "HEAD:take.raw"]).stdout
            != std::fs::read(d.join("take.raw")).unwrap()
        {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{point}: the watcher's commit never landed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: kill(2) on the child this test started.
        unsafe { libc::kill(watcher.id() as i32, libc::SIGTERM) };
        assert!(watcher.wait().unwrap().success(), "{point}");
        fsck_clean(d);
        assert_eq!(cat(d, "HEAD~1:a.txt"), b"a\n", "{point}");
    }
}

#[test]
fn gc_during_commit_amend_keeps_the_new_commit_and_drops_nothing_in_use() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("a.txt"), 4 << 20, 3);
    dmv(d, &["commit", "-a", "-m", "edit"]);
    write_noise(&d.join("b.raw"), 3 << 20, 4);
    dmv(d, &["add", "b.raw"]);
    let mut amend = dmv_cmd(d);
    amend.args(["commit", "--amend", "-m", "edit, with b"]);
    ok(&gc_while_paused(
        d,
        Paused::start(amend, "commit-before-ref"),
    ));
    fsck_clean(d);
    assert_eq!(dmv(d, &["log", "--format=%s"]), "edit, with b\na\n");
    assert!(cat(d, "HEAD:b.raw") == std::fs::read(d.join("b.raw")).unwrap());
    assert!(cat(d, "HEAD:a.txt") == std::fs::read(d.join("a.txt")).unwrap());
    // A reset --hard back past it, then gc: only what no ref or reflog keeps goes.
    dmv(d, &["reset", "--hard", "HEAD~1"]);
    assert!(!d.join("b.raw").exists());
    dmv(d, &["gc"]);
    fsck_clean(d);
    assert_eq!(cat(d, "HEAD:a.txt"), b"a\n");
}

#[test]
fn gc_during_a_revert_keeps_the_new_tree_and_commit() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("b.raw"), 3 << 20, 5);
    dmv(d, &["add", "b.raw"]);
    dmv(d, &["commit", "-m", "add b"]);
    std::fs::write(d.join("a.txt"), "a, later\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "edit a"]);
    let mut revert = dmv_cmd(d);
    revert.args(["revert", "HEAD~1"]);
    ok(&gc_while_paused(
        d,
        Paused::start(revert, "commit-before-ref"),
    ));
    fsck_clean(d);
    assert_eq!(
        dmv(d, &["log", "--format=%s", "-n", "1"]),
        "Revert \"add b\"\n"
    );
    assert!(!d.join("b.raw").exists());
    assert_eq!(cat(d, "HEAD:a.txt"), b"a, later\n");
    assert!(dmv_out(d, &["cat", "HEAD:b.raw"]).status.code() != Some(0));
}

#[test]
fn gc_during_a_stash_keeps_what_it_puts_aside() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("a.txt"), 3 << 20, 6);
    let edited = std::fs::read(d.join("a.txt")).unwrap();
    let mut stash = dmv_cmd(d);
    stash.args(["stash"]);
    ok(&gc_while_paused(
        d,
        Paused::start(stash, "stash-before-ref"),
    ));
    fsck_clean(d);
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"a\n");
    dmv(d, GC_NOW);
    dmv(d, &["stash", "pop"]);
    assert!(std::fs::read(d.join("a.txt")).unwrap() == edited);
    fsck_clean(d);
}

/// `stash push -- PATH` paused before its ref is written, gc running and
/// `add` waiting for the working tree meanwhile: the stashed path comes
/// back whole, the change at the other path and the second writer's file
/// stay staged or changed as they were.
#[test]
fn a_stash_of_one_path_with_gc_and_a_second_writer_at_the_same_moment_loses_nothing() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    std::fs::create_dir(d.join("dir")).unwrap();
    write_noise(&d.join("dir/b.raw"), 3 << 20, 51);
    dmv(d, &["add", "dir/b.raw"]);
    dmv(d, &["commit", "-m", "b"]);
    write_noise(&d.join("dir/b.raw"), 3 << 20, 52);
    let stashed = std::fs::read(d.join("dir/b.raw")).unwrap();
    std::fs::write(d.join("a.txt"), "a, kept\n").unwrap();
    write_noise(&d.join("c.raw"), 2 << 20, 53);
    let mut stash = dmv_cmd(d);
    stash.args(["stash", "push", "--", "dir"]);
    let paused = Paused::start(stash, "stash-before-ref");
    let add = spawn(d, &["add", "c.raw"]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&gc_while_paused(d, paused));
    ok(&add.wait_with_output().unwrap());
    fsck_clean(d);
    assert_eq!(dmv(d, &["status", "--short"]), " M a.txt\nA  c.raw\n");
    dmv(d, GC_NOW);
    dmv(d, &["stash", "pop"]);
    assert!(std::fs::read(d.join("dir/b.raw")).unwrap() == stashed);
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"a, kept\n");
    fsck_clean(d);
}

/// Commits `b.raw`, then runs `reset ARGS HEAD~1` paused before its ref
/// moves, with `add c.raw` waiting for the working tree and gc running
/// meanwhile; checks the store, that the branch is back at "a" and that the
/// commit reset away is whole. Returns the repository and `b.raw`'s content.
fn reset_with_gc_and_a_second_writer(mode: &[&str], seed: u64) -> (tempfile::TempDir, Vec<u8>) {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("b.raw"), 3 << 20, seed);
    let b = std::fs::read(d.join("b.raw")).unwrap();
    dmv(d, &["add", "b.raw"]);
    dmv(d, &["commit", "-m", "b"]);
    let dropped = dmv(d, &["rev-parse", "HEAD"]).trim().to_string();
    write_noise(&d.join("c.raw"), 2 << 20, seed + 1);
    let mut reset = dmv_cmd(d);
    reset.arg("reset").args(mode).arg("HEAD~1");
    // The working tree and dirstate are HEAD~1's by now; the branch has not moved yet.
    let paused = Paused::start(reset, "reset-before-ref");
    // A second writer waits for the working tree; gc runs meanwhile.
    let add = spawn(d, &["add", "c.raw"]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&gc_while_paused(d, paused));
    ok(&add.wait_with_output().unwrap());
    fsck_clean(d);
    assert_eq!(dmv(d, &["log", "--format=%s"]), "a\n");
    // The commit reset away is still there for its reflog, whole.
    assert!(cat(d, &format!("{dropped}:b.raw")) == b);
    (repo, b)
}

#[test]
fn a_reset_hard_with_gc_and_a_second_writer_at_the_same_moment_loses_nothing_committed() {
    let (repo, _) = reset_with_gc_and_a_second_writer(&["--hard"], 31);
    let d = repo.path();
    assert_eq!(dmv(d, &["status", "--short"]), "A  c.raw\n");
    dmv(d, &["commit", "-m", "c"]);
    assert!(cat(d, "HEAD:c.raw") == std::fs::read(d.join("c.raw")).unwrap());
}

#[test]
fn a_mixed_reset_with_gc_and_a_second_writer_at_the_same_moment_loses_nothing() {
    let (repo, b) = reset_with_gc_and_a_second_writer(&[], 41);
    let d = repo.path();
    // The file of the commit reset away stays in the working tree, untracked; the second writer's is staged.
    assert_eq!(dmv(d, &["status", "--short"]), "A  c.raw\n?? b.raw\n");
    assert!(std::fs::read(d.join("b.raw")).unwrap() == b);
    dmv(d, &["add", "b.raw"]);
    dmv(d, &["commit", "-m", "b and c"]);
    assert!(cat(d, "HEAD:b.raw") == b);
    assert!(cat(d, "HEAD:c.raw") == std::fs::read(d.join("c.raw")).unwrap());
}

#[test]
fn gc_during_a_git_import_keeps_every_converted_commit() {
    let t = tempfile::tempdir().unwrap();
    let g = t.path().join("g");
    std::fs::create_dir(&g).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(&g)
            .args(args)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@x")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@x")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    for i in 0..3 {
        write_noise(&g.join(format!("take{i}.raw")), 2 << 20, i);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", &format!("take {i}")]);
    }
    let repo = new_repo();
    let d = repo.path();
    small_packs(d);
    let mut import = dmv_cmd(d);
    import.args(["import", "git", g.to_str().unwrap()]);
    let out = gc_while_paused(d, Paused::start(import, "pack-sealed"));
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Imported 3 commits"));
    fsck_clean(d);
    assert!(cat(d, "HEAD:take2.raw") == std::fs::read(g.join("take2.raw")).unwrap());
    // Again, with gc between the two runs: nothing to convert, nothing lost.
    ok(&spawn(d, GC_NOW).wait_with_output().unwrap());
    assert!(dmv(d, &["import", "git", g.to_str().unwrap()])
        .contains("Imported 0 commits (3 imported before)"));
    fsck_clean(d);
}

#[test]
fn gc_during_a_merge_keeps_both_sides_and_the_result() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    dmv(d, &["switch", "-c", "feature"]);
    write_noise(&d.join("theirs.raw"), 3 << 20, 3);
    dmv(d, &["add", "theirs.raw"]);
    dmv(d, &["commit", "-m", "theirs"]);
    dmv(d, &["switch", "main"]);
    write_noise(&d.join("ours.raw"), 3 << 20, 4);
    dmv(d, &["add", "ours.raw"]);
    dmv(d, &["commit", "-m", "ours"]);
    let mut merge = dmv_cmd(d);
    merge.args(["merge", "feature"]);
    let paused = Paused::start(merge, "merge-state-written");
    // Only MERGE_STATE and the merge itself keep their side once the branch is gone.
    dmv(d, &["branch", "-D", "feature"]);
    ok(&gc_while_paused(d, paused));
    fsck_clean(d);
    let mut want = Noise::new(3);
    assert!(cat(d, "HEAD:theirs.raw") == want.bytes(3 << 20));
    assert!(std::fs::read(d.join("theirs.raw")).unwrap() == cat(d, "HEAD:theirs.raw"));
    assert!(cat(d, "HEAD:ours.raw") == std::fs::read(d.join("ours.raw")).unwrap());
}

/// A text file changed on main (its first line) and on `branch` (its last),
/// with a 3 MiB file added there too; main checked out.
fn notes_changed_on_main_and_on(branch: &str) -> tempfile::TempDir {
    let repo = repo_with_one_commit();
    let d = repo.path();
    std::fs::write(d.join("notes.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    dmv(d, &["add", "notes.txt"]);
    dmv(d, &["commit", "-m", "notes"]);
    dmv(d, &["switch", "-c", branch]);
    std::fs::write(d.join("notes.txt"), "one\ntwo\nthree\nfour\nFIVE\n").unwrap();
    write_noise(&d.join("theirs.raw"), 3 << 20, 3);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "theirs"]);
    dmv(d, &["switch", "main"]);
    std::fs::write(d.join("notes.txt"), "ONE\ntwo\nthree\nfour\nfive\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "ours"]);
    repo
}

/// A cherry-pick whose text file is merged line by line (a blob made by
/// the pick itself) and whose picked commit loses its branch while gc runs:
/// MERGE_STATE keeps both alive until the pick commits.
#[test]
fn gc_during_a_cherry_pick_keeps_the_picked_commit_and_the_merged_text() {
    let repo = notes_changed_on_main_and_on("feature");
    let d = repo.path();
    let mut pick = dmv_cmd(d);
    pick.args(["cherry-pick", "feature"]);
    let paused = Paused::start(pick, "merge-state-written");
    dmv(d, &["branch", "-D", "feature"]);
    ok(&gc_while_paused(d, paused));
    fsck_clean(d);
    assert_eq!(cat(d, "HEAD:notes.txt"), b"ONE\ntwo\nthree\nfour\nFIVE\n");
    assert!(cat(d, "HEAD:theirs.raw") == Noise::new(3).bytes(3 << 20));
    assert_eq!(dmv(d, &["log", "-1", "--format=%s"]).trim(), "theirs");
}

/// A rebase whose picks are made without the working tree: its new
/// commits and a text file it merged line by line are named only by the
/// plan's tip until the end. gc run then keeps them all.
#[test]
fn gc_during_a_rebase_keeps_the_commits_its_plan_made() {
    for point in ["rebase-picked-in-memory", "rebase-detached"] {
        let repo = notes_changed_on_main_and_on("topic");
        let d = repo.path();
        dmv(d, &["switch", "topic"]);
        let mut rebase = dmv_cmd(d);
        rebase.args(["rebase", "main"]);
        let paused = Paused::start(rebase, point);
        ok(&gc_while_paused(d, paused));
        fsck_clean(d);
        assert_eq!(
            cat(d, "HEAD:notes.txt"),
            b"ONE\ntwo\nthree\nfour\nFIVE\n",
            "{point}"
        );
        assert!(
            cat(d, "HEAD:theirs.raw") == Noise::new(3).bytes(3 << 20),
            "{point}"
        );
        assert_eq!(
            dmv(d, &["log", "--format=%s"]).lines().collect::<Vec<_>>(),
            ["theirs", "ours", "notes", "a"],
            "{point}"
        );
    }
}

/// In a meta clone, rebase and archive fetch the data they read. Paused as
/// that data lands, a strict gc and a `get` of another file run: the
/// rebase merges the text it fetched line by line, the archive holds every
/// file whole, and the store checks clean.
#[test]
fn gc_and_a_get_while_a_meta_clones_rebase_and_archive_fetch_lose_nothing() {
    let src = notes_changed_on_main_and_on("topic");
    let t = tempfile::tempdir().unwrap();
    ok(&dmv_out(
        t.path(),
        &[
            "clone",
            "--slice",
            "meta",
            src.path().to_str().unwrap(),
            "m",
        ],
    ));
    let m = t.path().join("m");
    small_packs(&m);
    ok(&dmv_out(&m, &["switch", "topic"]));
    let mut rebase = dmv_cmd(&m);
    rebase.args(["rebase", "origin/main"]);
    let paused = Paused::start(rebase, "pack-sealed");
    let get = spawn(&m, &["get", "a.txt"]);
    ok(&gc_while_paused(&m, paused));
    ok(&get.wait_with_output().unwrap());
    fsck_clean(&m);
    let merged = b"ONE\ntwo\nthree\nfour\nFIVE\n";
    assert_eq!(cat(&m, "HEAD:notes.txt"), merged);
    assert_eq!(std::fs::read(m.join("notes.txt")).unwrap(), merged);
    assert_eq!(std::fs::read(m.join("a.txt")).unwrap(), b"a\n");
    assert!(!m.join("theirs.raw").exists());

    let mut archive = dmv_cmd(&m);
    archive.args(["archive", "-o", "../out.tar", "HEAD"]);
    let paused = Paused::start(archive, "pack-sealed");
    let get = spawn(&m, &["get", "notes.txt"]);
    ok(&gc_while_paused(&m, paused));
    ok(&get.wait_with_output().unwrap());
    fsck_clean(&m);
    let mut files: Vec<(String, Vec<u8>)> =
        tar::Archive::new(std::fs::File::open(t.path().join("out.tar")).unwrap())
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
                (e.path().unwrap().display().to_string(), bytes)
            })
            .collect();
    files.sort();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a.txt", "notes.txt", "theirs.raw"]);
    assert_eq!(files[1].1, merged);
    assert!(files[2].1 == Noise::new(3).bytes(3 << 20));
}

/// An annotated tag's object is stored before its ref names it: gc run in
/// between keeps it, and a kill there leaves no tag and nothing damaged.
#[test]
fn gc_during_an_annotated_tag_keeps_it_and_a_kill_leaves_none() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    let mut tag = dmv_cmd(d);
    tag.args(["tag", "-a", "v1", "-m", "Release one"]);
    ok(&gc_while_paused(
        d,
        Paused::start(tag, "tag-object-written"),
    ));
    fsck_clean(d);
    assert_eq!(
        dmv(d, &["tag", "-n"]),
        format!("{:<15} Release one\n", "v1")
    );
    assert_eq!(
        dmv(d, &["rev-parse", "v1^{}"]),
        dmv(d, &["rev-parse", "HEAD"])
    );

    let out = dmv_cmd(d)
        .args(["tag", "-a", "v2", "-m", "Two"])
        .env("DMV_FAILPOINT", "tag-object-written")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(dmv(d, &["tag"]), "v1\n");
    ok(&dmv_out(d, GC_NOW));
    fsck_clean(d);
    dmv(d, &["tag", "-a", "v2", "-m", "Two"]);
    assert_eq!(dmv(d, &["tag"]), "v1\nv2\n");

    // Two people tag v3 at once: the one stopped between its object and its
    // ref loses to the other, and says so; the winner's tag stands.
    let mut first = dmv_cmd(d);
    first.args(["tag", "-a", "v3", "-m", "first"]);
    let paused = Paused::start(first, "tag-object-written");
    dmv(d, &["tag", "-a", "v3", "-m", "second"]);
    let out = paused.resume();
    assert!(
        one_line_error(&out).contains("already exists"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        dmv(d, &["tag", "-n", "v3"]),
        format!("{:<15} second\n", "v3")
    );
    ok(&dmv_out(d, GC_NOW));
    fsck_clean(d);
}

#[test]
fn gc_during_fetch_and_clone_of_a_path_remote_keeps_what_arrives() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    write_noise(&src.join("one.raw"), 3 << 20, 5);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "one"]);

    // The clone's repository exists from its start: gc runs in it mid-way.
    let copy = t.path().join("copy");
    let mut clone = dmv_cmd(t.path());
    clone.args(["clone", src.to_str().unwrap(), "copy"]);
    let paused = Paused::start(clone, "pack-sealed");
    ok(&gc_while_paused(&copy, paused));
    fsck_clean(&copy);
    assert_same_tree(&src, &copy);

    write_noise(&src.join("two.raw"), 6 << 20, 6);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "two"]);
    small_packs(&copy);
    let mut fetch = dmv_cmd(&copy);
    fetch.args(["fetch"]);
    ok(&gc_while_paused(&copy, Paused::start(fetch, "pack-sealed")));
    fsck_clean(&copy);
    assert!(cat(&copy, "origin/main:two.raw") == std::fs::read(src.join("two.raw")).unwrap());
}

/// A hub served over HTTP whose server stops after storing a push's objects
/// and before the push's ref update reaches it.
fn hub_and_client(t: &Path) -> (PathBuf, PathBuf) {
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", "hub"]);
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    dmv(&work, &["init"]);
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    dmv(&work, &["add", "."]);
    dmv(&work, &["commit", "-m", "a"]);
    (hub, work)
}

fn start_hub(t: &Path, pause_file: &Path) -> HttpServer {
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
    )
    .unwrap();
    HttpServer::start_with_env(
        &config,
        0,
        &[(
            "DMV_PAUSEPOINT",
            &format!("push-received:{}", pause_file.display()),
        )],
    )
}

fn wait_for(file: &Path) {
    let started = Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server never paused"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A client with a commit of 8 MiB (noise of `seed`) to push to a hub
/// served over HTTP that pauses after storing an upload while `pause` exists.
fn a_commit_to_push_to_a_pausing_hub(
    t: &Path,
    seed: u64,
) -> (PathBuf, PathBuf, PathBuf, HttpServer) {
    let (hub, work) = hub_and_client(t);
    let pause = t.join("paused");
    let server = start_hub(t, &pause);
    let url = server.url("hub");
    dmv(&work, &["remote", "add", "origin", &url, "--token", "w"]);
    write_noise(&work.join("big.raw"), 8 << 20, seed);
    dmv(&work, &["add", "."]);
    dmv(&work, &["commit", "-m", "big"]);
    (hub, work, pause, server)
}

#[test]
fn gc_on_a_server_between_a_push_and_its_ref_update_loses_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (hub, work, pause, _server) = a_commit_to_push_to_a_pausing_hub(t.path(), 7);

    // The push's objects are stored but no ref names them yet: a default gc keeps them.
    let push = spawn(&work, &["push", "origin", "main"]);
    wait_for(&pause);
    let out = dmv(&hub, &["gc", "--prune-reflog"]);
    assert!(out.contains("recent packs kept"), "{out}");
    std::fs::remove_file(&pause).unwrap();
    ok(&push.wait_with_output().unwrap());
    fsck_clean(&hub);
    let clone = t.path().join("clone");
    dmv(
        t.path(),
        &["clone", hub.to_str().unwrap(), clone.to_str().unwrap()],
    );
    assert_same_tree(&work, &clone);
}

/// The `.dmv/content-locks` entries a hub holds for uploads whose ref update has not come.
fn received_locks(hub: &Path) -> Vec<String> {
    std::fs::read_dir(hub.join(".dmv/content-locks"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("received-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A hub's gc with no grace period, run between a push's upload and its
/// ref update (CI once caught one there by chance, and the push failed on
/// a pack the gc had deleted): the upload is kept until the ref update
/// names it, and the lock that kept it is gone once it has.
#[test]
fn a_strict_gc_between_a_push_and_its_ref_update_keeps_the_upload() {
    let t = tempfile::tempdir().unwrap();
    let (hub, work, pause, _server) = a_commit_to_push_to_a_pausing_hub(t.path(), 8);

    let push = spawn(&work, &["push", "origin", "main"]);
    wait_for(&pause);
    assert_eq!(received_locks(&hub).len(), 1);
    dmv(&hub, GC_NOW);
    std::fs::remove_file(&pause).unwrap();
    ok(&push.wait_with_output().unwrap());
    assert_eq!(
        common::remote::head_of(&hub, "refs/heads/main"),
        common::remote::head_of(&work, "refs/heads/main")
    );
    assert!(
        received_locks(&hub).is_empty(),
        "{:?}",
        received_locks(&hub)
    );
    dmv(&hub, GC_NOW);
    fsck_clean(&hub);
    let clone = t.path().join("clone");
    dmv(
        t.path(),
        &["clone", hub.to_str().unwrap(), clone.to_str().unwrap()],
    );
    assert_same_tree(&work, &clone);
}

/// A push whose client died between its upload and its ref update: the
/// hub's strict gc keeps the upload while its lock lasts (an hour), and the
/// push run again lands and lets both uploads go.
#[test]
fn an_upload_whose_ref_update_never_came_is_kept_for_the_next_push() {
    let t = tempfile::tempdir().unwrap();
    let (hub, work, pause, _server) = a_commit_to_push_to_a_pausing_hub(t.path(), 9);

    let mut push = spawn(&work, &["push", "origin", "main"]);
    wait_for(&pause);
    push.kill().unwrap();
    push.wait().unwrap();
    std::fs::remove_file(&pause).unwrap();
    dmv(&hub, GC_NOW);
    assert_eq!(received_locks(&hub).len(), 1);
    assert!(dmv_out(&hub, &["show-ref"]).stdout.is_empty());
    let commit = common::remote::head_of(&work, "refs/heads/main");
    assert!(
        cat(&hub, &format!("{commit}:big.raw")) == std::fs::read(work.join("big.raw")).unwrap()
    );
    fsck_clean(&hub);
    dmv(&work, &["push", "origin", "main"]);
    assert!(
        received_locks(&hub).is_empty(),
        "{:?}",
        received_locks(&hub)
    );
    fsck_clean(&hub);
}

#[test]
fn eight_concurrent_adds_all_end_up_staged() {
    let repo = new_repo();
    let d = repo.path();
    for i in 0..8 {
        write_noise(&d.join(format!("f{i}.raw")), 200_000, 10 + i);
    }
    let adds: Vec<Child> = (0..8)
        .map(|i| spawn(d, &["add", &format!("f{i}.raw")]))
        .collect();
    for a in adds {
        ok(&a.wait_with_output().unwrap());
    }
    let status = dmv(d, &["status", "--short"]);
    for i in 0..8 {
        assert!(
            status.contains(&format!("A  f{i}.raw")),
            "f{i}.raw not staged:\n{status}"
        );
    }
    dmv(d, &["commit", "-m", "eight"]);
    for i in 0..8 {
        assert!(
            cat(d, &format!("HEAD:f{i}.raw"))
                == std::fs::read(d.join(format!("f{i}.raw"))).unwrap()
        );
    }
}

#[test]
fn two_commands_changing_the_config_at_once_both_keep_their_change() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    let hubs = tempfile::tempdir().unwrap();
    let hub = |name: &str| {
        dmv(hubs.path(), &["init", "--bare", name]);
        hubs.path().join(name).to_str().unwrap().to_string()
    };
    let (one, two) = (hub("one"), hub("two"));
    // One has read the config and is about to write it back; two others change other settings meanwhile.
    let mut first = dmv_cmd(d);
    first.args(["remote", "add", "one", &one]);
    let paused = Paused::start(first, "config-loaded");
    let second = spawn(d, &["replica", "--name", "studio-laptop"]);
    let third = spawn(d, &["remote", "add", "two", &two]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&paused.resume());
    ok(&second.wait_with_output().unwrap());
    ok(&third.wait_with_output().unwrap());
    let remotes = dmv(d, &["remote", "-v"]);
    assert!(
        remotes.contains("one") && remotes.contains("two"),
        "{remotes}"
    );
    assert!(dmv(d, &["replica"]).contains("studio-laptop"));
}

#[test]
fn a_second_writer_waits_for_the_first_then_gives_up_naming_it() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("big.raw"), 4 << 20, 20);
    std::fs::write(d.join("small.txt"), "small\n").unwrap();
    let mut add = dmv_cmd(d);
    add.args(["add", "big.raw"]);
    let paused = Paused::start(add, "pack-sealed");
    let out = dmv_cmd(d)
        .args(["add", "small.txt"])
        .env("DMV_LOCK_WAIT_MS", "300")
        .output()
        .unwrap();
    let line = one_line_error(&out);
    assert!(
        line.contains("in use by")
            && line.contains(&format!("pid {}", paused.pid()))
            && line.contains("add big.raw"),
        "{line}"
    );
    // A writer that waits long enough gets its turn.
    let second = spawn(d, &["add", "small.txt"]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&paused.resume());
    ok(&second.wait_with_output().unwrap());
    let status = dmv(d, &["status", "--short"]);
    assert!(
        status.contains("A  big.raw") && status.contains("A  small.txt"),
        "{status}"
    );
}

#[test]
fn the_lock_of_a_killed_writer_is_taken_over() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    write_noise(&d.join("big.raw"), 4 << 20, 21);
    let mut add = dmv_cmd(d);
    add.args(["add", "big.raw"]);
    let mut paused = Paused::start(add, "pack-sealed");
    paused.child.kill().unwrap();
    paused.child.wait().unwrap();
    assert!(std::fs::read_to_string(d.join(".dmv/wlock"))
        .unwrap()
        .contains("add big.raw"));
    let out = dmv_cmd(d)
        .args(["add", "big.raw"])
        .env("DMV_LOCK_WAIT_MS", "0")
        .output()
        .unwrap();
    ok(&out);
    dmv(d, &["commit", "-m", "big"]);
    assert!(cat(d, "HEAD:big.raw") == std::fs::read(d.join("big.raw")).unwrap());
    dmv(d, GC_NOW);
    fsck_clean(d);
}

#[test]
fn of_two_pushes_stopped_before_their_ref_updates_exactly_one_wins() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (hub, seed) = hub_and_client(t);
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    for name in ["x", "y"] {
        dmv(t, &["clone", hub.to_str().unwrap(), name]);
        let d = t.join(name);
        write_noise(
            &d.join(format!("{name}.raw")),
            2 << 20,
            name.as_bytes()[0] as u64,
        );
        dmv(&d, &["add", "."]);
        dmv(&d, &["commit", "-m", name]);
    }
    // Each push's own `dmv serve --stdio` stops once the upload is stored: both have sent
    // everything and both ref updates expect the same old value.
    let push = |name: &str| {
        let mut cmd = dmv_cmd(&t.join(name));
        cmd.args(["push", "origin", "main"]);
        Paused::start(cmd, "push-received")
    };
    let (px, py) = (push("x"), push("y"));
    let (ox, oy) = (px.resume(), py.resume());
    assert!(
        ox.status.success() != oy.status.success(),
        "exactly one push must win: x {} / y {}",
        stderr(&ox),
        stderr(&oy)
    );
    let (winner, loser, loser_out) = if ox.status.success() {
        ("x", "y", oy)
    } else {
        ("y", "x", ox)
    };
    let line = one_line_error(&loser_out);
    assert!(
        line.contains("changed on the remote while pushing"),
        "{line}"
    );
    assert_eq!(
        common::remote::head_of(&hub, "refs/heads/main"),
        common::remote::head_of(&t.join(winner), "refs/heads/main")
    );
    fsck_clean(&hub);
    // Nothing is lost: the loser pulls and pushes again.
    dmv(&t.join(loser), &["pull"]);
    dmv(&t.join(loser), &["push", "origin", "main"]);
    let clone = t.join("check");
    dmv(
        t,
        &["clone", hub.to_str().unwrap(), clone.to_str().unwrap()],
    );
    for name in ["x", "y"] {
        assert!(
            std::fs::read(clone.join(format!("{name}.raw"))).unwrap()
                == std::fs::read(t.join(name).join(format!("{name}.raw"))).unwrap()
        );
    }
}

#[test]
fn gc_during_a_sync_keeps_the_fetched_side_the_merge_and_what_is_pushed() {
    let t = tempfile::tempdir().unwrap();
    let (a, hub, b) = (t.path().join("a"), t.path().join("hub"), t.path().join("b"));
    dmv(t.path(), &["init", "a"]);
    write_noise(&a.join("first.raw"), 2 << 20, 11);
    dmv(&a, &["add", "."]);
    dmv(&a, &["commit", "-m", "first"]);
    dmv(t.path(), &["init", "--bare", "hub"]);
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    dmv(&a, &["push"]);
    dmv(t.path(), &["clone", "hub", "b"]);
    write_noise(&a.join("from-a.raw"), 3 << 20, 12);
    dmv(&a, &["add", "."]);
    dmv(&a, &["commit", "-m", "a's work"]);
    dmv(&a, &["push"]);
    write_noise(&b.join("from-b.raw"), 3 << 20, 13);
    dmv(&b, &["add", "."]);
    dmv(&b, &["commit", "-m", "b's work"]);

    // Stopped in its merge, after fetching a's work: a strict gc runs in b.
    let mut sync = dmv_cmd(&b);
    sync.arg("sync");
    ok(&gc_while_paused(
        &b,
        Paused::start(sync, "merge-state-written"),
    ));
    fsck_clean(&b);
    fsck_clean(&hub);
    assert_eq!(
        common::remote::head_of(&hub, "refs/heads/main"),
        common::remote::head_of(&b, "refs/heads/main"),
        "the merge reached the hub"
    );
    assert!(cat(&b, "HEAD:from-a.raw") == Noise::new(12).bytes(3 << 20));
    assert!(cat(&b, "HEAD:from-b.raw") == std::fs::read(b.join("from-b.raw")).unwrap());
    dmv(&a, &["pull"]);
    assert_same_tree(&a, &b);
}

/// A meta clone of a small shoot (and the source, which stays reachable as origin).
fn meta_clone(t: &Path) -> PathBuf {
    let src = t.join("src");
    dmv(t, &["init", "src"]);
    write_noise(&src.join("a.raw"), 3 << 20, 1);
    write_noise(&src.join("b.raw"), 3 << 20, 2);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "shoot"]);
    ok(&dmv_out(
        t,
        &["clone", "--slice", "meta", src.to_str().unwrap(), "m"],
    ));
    let m = t.join("m");
    small_packs(&m);
    m
}

#[test]
fn gc_during_a_get_keeps_what_it_fetched() {
    let t = tempfile::tempdir().unwrap();
    let m = meta_clone(t.path());
    let mut get = dmv_cmd(&m);
    get.args(["get", "a.raw"]);
    let paused = Paused::start(get, "pack-sealed");
    ok(&gc_while_paused(&m, paused));
    fsck_clean(&m);
    assert!(
        std::fs::read(m.join("a.raw")).unwrap()
            == std::fs::read(t.path().join("src/a.raw")).unwrap()
    );
    // And once more with the data in place: gc keeps it.
    ok(&dmv_out(&m, GC_NOW));
    fsck_clean(&m);
    assert!(dmv(&m, &["ls", "--present"]).contains("a.raw"));
}

#[test]
fn gc_and_a_get_during_a_drop_leave_one_consistent_state() {
    let t = tempfile::tempdir().unwrap();
    let m = meta_clone(t.path());
    ok(&dmv_out(&m, &["get", "a.raw", "b.raw"]));
    let mut drop = dmv_cmd(&m);
    drop.args(["drop", "--numcopies", "1", "a.raw"]);
    let paused = Paused::start(drop, "drop-confirmed");
    // A get of the other file and a strict gc while the drop has confirmed its copies.
    let get = spawn(&m, &["get", "b.raw"]);
    ok(&gc_while_paused(&m, paused));
    ok(&get.wait_with_output().unwrap());
    fsck_clean(&m);
    assert_eq!(dmv(&m, &["ls", "--absent"]).lines().count(), 1);
    assert!(!m.join("a.raw").exists());
    assert!(
        std::fs::read(m.join("b.raw")).unwrap()
            == std::fs::read(t.path().join("src/b.raw")).unwrap()
    );
}

/// Gets note what they learn in the location journal while a fetch merges
/// the source's log into the log (folding the journal in), a reader reads
/// them and a strict gc runs: every record lands, whatever the order, and
/// every file got stays whole.
#[test]
fn gets_noting_locations_while_a_fetch_folds_the_journal_and_gc_runs_lose_no_record() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    dmv(t.path(), &["init", "src"]);
    let names: Vec<String> = (0..8).map(|i| format!("f{i}.raw")).collect();
    for (i, name) in names.iter().enumerate() {
        write_noise(&src.join(name), 64 << 10, 100 + i as u64);
    }
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "shoot"]);
    ok(&dmv_out(
        t.path(),
        &["clone", "--slice", "meta", src.to_str().unwrap(), "m"],
    ));
    let m = t.path().join("m");
    for round in names.chunks(4) {
        std::fs::write(src.join("note.txt"), round.join(" ")).unwrap();
        dmv(&src, &["add", "note.txt"]);
        dmv(&src, &["commit", "-m", "note"]);
        let mut running: Vec<_> = round.iter().map(|name| spawn(&m, &["get", name])).collect();
        running.push(spawn(&m, &["fetch", "origin"]));
        running.push(spawn(&m, &["whereis", &round[0]]));
        running.push(spawn(&m, GC_NOW));
        for r in running {
            ok(&r.wait_with_output().unwrap());
        }
    }
    fsck_clean(&m);
    let repo = dmv_repo::Repository::open(&m).unwrap();
    let me = repo.copies().replica_id().unwrap();
    let log = repo.copies().load_locations().unwrap();
    for name in &names {
        let id = dmv_repo::store::ObjectId::from_hex(
            dmv(&m, &["rev-parse", &format!("HEAD:{name}")]).trim(),
        )
        .unwrap();
        assert!(
            log.records.get(&(id, me)).is_some_and(|s| s.present),
            "{name}: this replica's copy is not in the log"
        );
        assert!(
            log.holders(&id).len() >= 2,
            "{name}: {:?}",
            log.holders(&id)
        );
        assert!(
            std::fs::read(m.join(name)).unwrap() == std::fs::read(src.join(name)).unwrap(),
            "{name}"
        );
    }
}

/// Small commits pile up small packs, which commits roll together as they
/// go (auto-repack). Readers running all along never fail to find an object,
/// a second writer (fetches from another repository, which repack too) and a
/// gc in the middle take their turns, every commit stays whole, and the store
/// ends with a bounded number of files.
#[test]
fn readers_and_a_gc_during_a_run_of_small_commits_that_repack_as_they_go() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "0\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "0"]);
    std::fs::write(d.join("a.txt"), "1\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "1"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (d, stop) = (d.to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for args in [
                    &["log", "--oneline"][..],
                    &["cat", "HEAD:a.txt"],
                    &["cat", "HEAD~1:a.txt"],
                ] {
                    let out = dmv_out(&d, args);
                    assert!(
                        out.status.success(),
                        "dmv {args:?} failed during the commits: {}",
                        stderr(&out)
                    );
                }
                reads += 1;
            }
            reads
        })
    };
    let other = new_repo();
    std::fs::write(other.path().join("b.txt"), "b0\n").unwrap();
    dmv(other.path(), &["add", "b.txt"]);
    dmv(other.path(), &["commit", "-m", "b0"]);
    dmv(
        d,
        &["remote", "add", "other", other.path().to_str().unwrap()],
    );
    let fetcher = {
        let (d, o) = (d.to_path_buf(), other.path().to_path_buf());
        std::thread::spawn(move || {
            for k in 1..=12 {
                std::fs::write(o.join("b.txt"), format!("b{k}\n")).unwrap();
                dmv(&o, &["commit", "-a", "-m", &format!("b{k}")]);
                dmv(&d, &["fetch", "other"]);
            }
        })
    };
    // More than dmv_store::AUTO_REPACK_SMALL_PACKS (8) small packs, five times over.
    let commits = 48;
    let mut gc = None;
    for i in 2..=commits {
        std::fs::write(d.join("a.txt"), format!("{i}\n")).unwrap();
        dmv(d, &["commit", "-a", "-m", &i.to_string()]);
        if i == commits / 2 {
            gc = Some(spawn(d, GC_NOW));
        }
    }
    ok(&gc.unwrap().wait_with_output().unwrap());
    fetcher.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(reader.join().unwrap() > 0);
    fsck_clean(d);
    for i in 0..=commits {
        assert_eq!(
            cat(d, &format!("HEAD~{}:a.txt", commits - i)),
            format!("{i}\n").into_bytes()
        );
    }
    for k in 0..=12 {
        assert_eq!(
            cat(d, &format!("other/main~{}:b.txt", 12 - k)),
            format!("b{k}\n").into_bytes()
        );
    }
    let packs = std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".pack")
        })
        .count();
    assert!(
        packs <= 16,
        "{packs} packs after {commits} commits and 12 fetches"
    );
}

#[test]
fn a_repair_with_a_gc_and_a_commit_at_the_same_moment_loses_nothing() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("r");
    std::fs::create_dir(&d).unwrap();
    dmv(&d, &["init"]);
    write_noise(&d.join("a.raw"), 2 << 20, 1);
    dmv(&d, &["add", "."]);
    dmv(&d, &["commit", "-m", "a"]);
    dmv(t.path(), &["init", "--bare", "hub"]);
    dmv(
        &d,
        &["push", t.path().join("hub").to_str().unwrap(), "main"],
    );
    dmv(
        &d,
        &[
            "remote",
            "add",
            "hub",
            t.path().join("hub").to_str().unwrap(),
        ],
    );
    let a = std::fs::read(d.join("a.raw")).unwrap();
    // Damage the data, and change the file so the working tree holds no copy of it.
    let pack = std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[4000] ^= 0x10;
    std::fs::write(&pack, bytes).unwrap();
    write_noise(&d.join("b.raw"), 1 << 20, 2);
    write_noise(&d.join("a.raw"), 1 << 20, 3);
    dmv(&d, &["add", "b.raw"]);
    let mut repair = dmv_cmd(&d);
    repair.args(["fsck", "--repair", "--from", "hub"]);
    let paused = Paused::start(repair, "salvage-written");
    // A strict gc and a commit of both files wait for the repair or run around it.
    let gc = spawn(&d, GC_NOW);
    let commit = spawn(&d, &["commit", "-a", "-m", "b"]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&paused.resume());
    // gc refuses a store that still misses an object the repair has yet to fetch (one line); or it runs after.
    let gc = gc.wait_with_output().unwrap();
    if !gc.status.success() {
        assert!(stderr(&gc).contains("not found"), "{}", stderr(&gc));
        ok(&dmv_out(&d, GC_NOW));
    }
    let committed = commit.wait_with_output().unwrap();
    if !committed.status.success() {
        ok(&dmv_out(&d, &["commit", "-a", "-m", "b"]));
    }
    fsck_clean(&d);
    assert!(
        cat(&d, "HEAD~1:a.raw") == a,
        "the repaired version was lost"
    );
    assert!(cat(&d, "HEAD:a.raw") == std::fs::read(d.join("a.raw")).unwrap());
    assert!(cat(&d, "HEAD:b.raw") == std::fs::read(d.join("b.raw")).unwrap());
}

/// Two pushes of many packs into one served hub at once, with gc running
/// through them: the server receives both in one process, each push sealing
/// a dozen packs and rewriting the multi-pack index as it goes. Both branches
/// land whole, and nothing the hub held is lost.
#[test]
fn two_pushes_sealing_many_packs_into_one_server_with_gc_running_lose_nothing() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    small_packs(&t.join("hub"));
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    let mut clients = Vec::new();
    for (k, branch) in ["left", "right"].into_iter().enumerate() {
        let work = t.join(branch);
        std::fs::create_dir(&work).unwrap();
        dmv(&work, &["init"]);
        write_noise(&work.join(format!("{branch}.raw")), 12 << 20, 40 + k as u64);
        dmv(&work, &["add", "."]);
        dmv(&work, &["commit", "-m", branch]);
        dmv(&work, &["switch", "-c", branch]);
        clients.push(work);
    }
    let url = server.url("hub");
    let url = url.as_str();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let mut runs = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let out = dmv_out(&t.join("hub"), &["gc"]);
                assert!(
                    out.status.success() || stderr(&out).lines().count() == 1,
                    "gc: {}",
                    stderr(&out)
                );
                runs += 1;
            }
            runs
        });
        let pushes: Vec<_> = clients
            .iter()
            .zip(["left", "right"])
            .map(|(work, branch)| {
                // The hub's HEAD names main: the left side brings it too.
                let also_main = if branch == "left" {
                    &["main"][..]
                } else {
                    &[][..]
                };
                s.spawn(move || {
                    dmv_cmd(work)
                        .env("DMV_TOKEN", "w")
                        .args(["push", url, branch])
                        .args(also_main)
                        .output()
                        .unwrap()
                })
            })
            .collect();
        let pushed: Vec<Output> = pushes.into_iter().map(|p| p.join().unwrap()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(gc.join().unwrap() > 0);
        pushed.iter().for_each(ok);
    });
    fsck_clean(&t.join("hub"));
    for (work, branch) in clients.iter().zip(["left", "right"]) {
        let file = format!("{branch}.raw");
        assert!(
            cat(&t.join("hub"), &format!("{branch}:{file}"))
                == std::fs::read(work.join(&file)).unwrap(),
            "{branch} landed whole"
        );
    }
}

#[test]
fn two_global_config_changes_at_once_both_stay() {
    let home = tempfile::tempdir().unwrap();
    let set = |key: &str, value: &str| {
        dmv_cmd(home.path())
            .args(["config", "--global", key, value])
            .env("XDG_CONFIG_HOME", home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for round in 0..10 {
        let (name, email, tool) = (
            set("user.name", &format!("n{round}")),
            set("user.email", &format!("e{round}")),
            set("merge.tool", &format!("t{round}")),
        );
        for child in [name, email, tool] {
            ok(&child.wait_with_output().unwrap());
        }
        let list = dmv_cmd(home.path())
            .args(["config", "--global", "--list"])
            .env("XDG_CONFIG_HOME", home.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&list.stdout),
            format!("user.name=n{round}\nuser.email=e{round}\nmerge.tool=t{round}\n")
        );
    }
}

/// Two pushes to one hub at once, each to its own branch, while gc runs on
/// the hub: both land, and the hub's location log holds both pushers'
/// records (each push's pieces are spooled apart and merged after its last).
#[test]
fn two_pushes_and_gc_at_once_keep_both_location_logs() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (hub, seed) = hub_and_client(t);
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    for (i, name) in ["x", "y"].into_iter().enumerate() {
        dmv(t, &["clone", hub.to_str().unwrap(), name]);
        let d = t.join(name);
        dmv(&d, &["switch", "-c", name]);
        write_noise(&d.join(format!("{name}.raw")), 2 << 20, 40 + i as u64);
        dmv(&d, &["add", "."]);
        dmv(&d, &["commit", "-m", name]);
    }
    let gc = spawn(&hub, GC_NOW);
    let (px, py) = (
        spawn(&t.join("x"), &["push", "origin", "x"]),
        spawn(&t.join("y"), &["push", "origin", "y"]),
    );
    ok(&px.wait_with_output().unwrap());
    ok(&py.wait_with_output().unwrap());
    ok(&gc.wait_with_output().unwrap());
    let log = dmv_repo::Repository::open(&hub)
        .unwrap()
        .copies()
        .load_locations()
        .unwrap();
    for name in ["x", "y"] {
        let id = replica_id(&t.join(name));
        assert!(
            log.records.keys().any(|(_, replica)| *replica == id),
            "the hub lost {name}'s location records"
        );
        assert_eq!(
            common::remote::head_of(&hub, &format!("refs/heads/{name}")),
            common::remote::head_of(&t.join(name), &format!("refs/heads/{name}"))
        );
    }
    fsck_clean(&hub);
}

/// The replica id of the repository at `dir`.
fn replica_id(dir: &Path) -> dmv_repo::ReplicaId {
    dmv_repo::Repository::open(dir)
        .unwrap()
        .copies()
        .replica_id()
        .unwrap()
}

/// Two clones tell their hub of their copies in claims (past 1,024
/// records their logs go as claims of the hub's tip tree) while gc runs
/// on the hub: the hub's log says each clone holds every file, and the
/// hub is whole.
#[test]
fn two_clones_telling_a_hub_in_claims_with_gc_at_once_lose_no_record() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "a"]);
    for i in 0..1_500 {
        let path = t.join(format!("a/d{}/f{i}.txt", i / 500));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, i.to_string()).unwrap();
    }
    dmv(&t.join("a"), &["add", "."]);
    dmv(&t.join("a"), &["commit", "-m", "many"]);
    dmv(t, &["clone", "--bare", "a", "hub"]);
    let hub = t.join("hub");
    let gc = spawn(&hub, GC_NOW);
    let (cx, cy) = (
        spawn(t, &["clone", "hub", "x"]),
        spawn(t, &["clone", "hub", "y"]),
    );
    ok(&cx.wait_with_output().unwrap());
    ok(&cy.wait_with_output().unwrap());
    ok(&gc.wait_with_output().unwrap());
    let hub_repo = dmv_repo::Repository::open(&hub).unwrap();
    let tree = hub_repo.head_tree().unwrap().unwrap();
    let files = dmv_repo::tree::flatten(&hub_repo.store, &tree).unwrap();
    let log = hub_repo.copies().load_locations().unwrap();
    for name in ["x", "y"] {
        let id = replica_id(&t.join(name));
        for (path, entry) in &files {
            assert!(
                log.holders(&entry.id)
                    .iter()
                    .any(|(r, stamp)| *r == id && stamp.present),
                "the hub does not know {name} holds {}",
                String::from_utf8_lossy(path)
            );
        }
    }
    fsck_clean(&hub);
}

/// A bisect step paused after its verdict is saved and before its
/// checkout, gc running and `add` waiting for the working tree meanwhile:
/// the step checks out the commit to test whole, the second writer's file
/// is staged after it, and nothing the bisection names is lost.
#[test]
fn a_bisect_step_with_gc_and_a_second_writer_at_the_same_moment_loses_nothing() {
    let repo = repo_with_one_commit();
    let d = repo.path();
    let mut versions = Vec::new();
    for i in 0..6u64 {
        write_noise(&d.join("b.raw"), 2 << 20, 70 + i);
        versions.push(std::fs::read(d.join("b.raw")).unwrap());
        dmv(d, &["add", "b.raw"]);
        dmv(d, &["commit", "-m", &format!("b{i}")]);
    }
    dmv(d, &["bisect", "start", "HEAD", "HEAD~6"]);
    let tested = dmv(d, &["log", "-1", "--format=%s"]);
    write_noise(&d.join("c.raw"), 2 << 20, 80);
    let mut step = dmv_cmd(d);
    step.args(["bisect", "good"]);
    let paused = Paused::start(step, "bisect-before-checkout");
    let add = spawn(d, &["add", "c.raw"]);
    std::thread::sleep(Duration::from_millis(200));
    ok(&gc_while_paused(d, paused));
    ok(&add.wait_with_output().unwrap());
    fsck_clean(d);
    let now = dmv(d, &["log", "-1", "--format=%s"]);
    assert_ne!(now, tested);
    let i: usize = now.trim().trim_start_matches('b').parse().unwrap();
    assert!(std::fs::read(d.join("b.raw")).unwrap() == versions[i]);
    assert_eq!(dmv(d, &["status", "--short"]), "A  c.raw\n");
    dmv(d, GC_NOW);
    dmv(d, &["rm", "-q", "--cached", "c.raw"]);
    dmv(d, &["bisect", "reset"]);
    assert_eq!(dmv(d, &["log", "-1", "--format=%s"]), "b5\n");
    assert!(std::fs::read(d.join("b.raw")).unwrap() == versions[5]);
    fsck_clean(d);
}
