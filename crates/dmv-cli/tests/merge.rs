//! `dmv merge`, `dmv resolve` and merge-aware commit/status on the real binary.

use crate::common;
use common::*;

use std::collections::BTreeMap;
use std::path::Path;

/// Every file under the working tree (not .dmv) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap() == ".dmv" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn rev(d: &Path, name: &str) -> String {
    let log: serde_json::Value =
        serde_json::from_str(&dmv(d, &["log", "--json", "-n", "1", name])).unwrap();
    log[0]["id"].as_str().unwrap().to_string()
}

fn parents(d: &Path, name: &str) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&dmv(d, &["log", "--json", "-n", "1", name])).unwrap();
    log[0]["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

fn fsck_clean(d: &Path) {
    let out = dmv_out(d, &["fsck", "--full"]);
    assert!(
        out.status.success(),
        "fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

/// Compares two snapshots, naming the paths that differ.
fn assert_same_files(
    got: &BTreeMap<String, Vec<u8>>,
    want: &BTreeMap<String, Vec<u8>>,
    context: &str,
) {
    let differ: Vec<&String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "{context}: these paths differ: {differ:?}"
    );
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    Noise::new(seed).bytes(n)
}

fn status_json(d: &Path) -> serde_json::Value {
    serde_json::from_str(&dmv(d, &["status", "--json"])).unwrap()
}

/// main and feature diverged from one base commit: `on_main` and `on_feature`
/// change the working tree before each side's commit.
fn diverged(
    base: impl Fn(&Path),
    on_main: impl Fn(&Path),
    on_feature: impl Fn(&Path),
) -> tempfile::TempDir {
    let repo = new_repo();
    let d = repo.path();
    base(d);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "base"]);
    dmv(d, &["switch", "-c", "feature"]);
    on_feature(d);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "feature work"]);
    dmv(d, &["switch", "main"]);
    on_main(d);
    dmv(d, &["add", "."]);
    // Nothing to commit (exit 1) leaves main behind feature: a fast-forward.
    let out = dmv_out(d, &["commit", "-m", "main work"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    repo
}

/// One photo both sides retouch differently: a binary conflict.
fn photo_conflict() -> tempfile::TempDir {
    diverged(
        |d| {
            std::fs::write(d.join("shot.jpg"), noise(300_000, 1)).unwrap();
            std::fs::write(d.join("README"), "base\n").unwrap();
        },
        |d| std::fs::write(d.join("shot.jpg"), noise(300_000, 2)).unwrap(),
        |d| {
            std::fs::write(d.join("shot.jpg"), noise(300_000, 3)).unwrap();
            std::fs::write(d.join("extra.wav"), noise(50_000, 4)).unwrap();
        },
    )
}

/// What a fast-forward and a merge with nothing to do print (the library's
/// tests/merges.rs checks what they do).
#[test]
fn fast_forward_then_up_to_date() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a"), "one").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    dmv(d, &["switch", "-c", "feature"]);
    std::fs::write(d.join("b.bin"), noise(100_000, 5)).unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "two"]);
    let feature = rev(d, "feature");
    dmv(d, &["switch", "main"]);
    let out = dmv(d, &["merge", "feature"]);
    // As git's: where it went, then a diffstat of what it brought.
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            format!("Fast-forward to {}", &feature[..12]).as_str(),
            " b.bin | Bin 0 -> 100000 bytes",
            " 1 file changed, 0 insertions(+), 0 deletions(-)"
        ]
    );
    assert_eq!(dmv(d, &["merge", "feature"]).trim(), "Already up to date.");
    assert_eq!(dmv(d, &["merge", "HEAD~1"]).trim(), "Already up to date.");
}

/// `--no-ff` and `--ff-only` as git takes them: the merge commit's parents
/// and subject, the refusal's exit code and words, and the two together
/// refused as a usage error.
#[test]
fn no_ff_makes_a_merge_commit_and_ff_only_refuses_one() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a"), "one").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    let one = rev(d, "main");
    dmv(d, &["switch", "-c", "feature"]);
    std::fs::write(d.join("b.bin"), noise(100_000, 5)).unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "two"]);
    let feature = rev(d, "feature");
    dmv(d, &["switch", "main"]);
    dmv(d, &["merge", "--no-ff", "feature"]);
    assert_eq!(
        dmv(d, &["log", "-1", "--format=%P %s"]).trim(),
        format!("{one} {feature} Merge branch 'feature'")
    );
    // Diverged: --ff-only refuses.
    dmv(d, &["switch", "feature"]);
    std::fs::write(d.join("c"), "three").unwrap();
    dmv(d, &["add", "c"]);
    dmv(d, &["commit", "-m", "three"]);
    dmv(d, &["switch", "main"]);
    let out = dmv_out(d, &["merge", "--ff-only", "feature"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("not possible to fast-forward to feature"),
        "{}",
        stderr(&out)
    );
    // Behind: --ff-only fast-forwards.
    let main = rev(d, "main");
    dmv(d, &["switch", "-c", "behind", "HEAD~1"]);
    assert_eq!(
        dmv(d, &["merge", "--ff-only", "main"])
            .lines()
            .next()
            .unwrap(),
        format!("Fast-forward to {}", &main[..12])
    );
    assert_eq!(
        dmv_out(d, &["merge", "--ff-only", "--no-ff", "main"])
            .status
            .code(),
        Some(129)
    );
}

/// How a conflict is told: the merge's lines and exit code, status in its
/// three forms, and the refusals' words while it waits.
#[test]
fn binary_conflict_is_reported_and_commit_waits_for_resolve() {
    let repo = photo_conflict();
    let d = repo.path();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CONFLICT (both modified): shot.jpg"),
        "{text}"
    );
    assert!(text.contains("dmv resolve"), "{text}");

    let long = dmv(d, &["status"]);
    assert!(long.contains("You are merging feature"), "{long}");
    assert!(long.contains("both modified:   shot.jpg"), "{long}");
    assert!(long.contains("new file:   extra.wav"), "{long}");
    let short = dmv(d, &["status", "--short"]);
    // Path order, as git's; the conflicted path once, as unmerged.
    assert_eq!(short, "A  extra.wav\nUU shot.jpg\n");
    let json = status_json(d);
    assert_eq!(json["merge"]["label"], "feature");
    assert_eq!(json["merge"]["conflicts"][0]["path"], "shot.jpg");
    assert_eq!(json["merge"]["conflicts"][0]["code"], "UU");

    let out = dmv_out(d, &["commit", "-m", "too early"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("unresolved conflicts: shot.jpg; settle them with `dmv resolve`"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("already in progress"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(d, &["switch", "feature"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("merge --abort"), "{}", stderr(&out));
    let out = dmv_out(d, &["resolve", "--ours", "README"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("README is not in conflict"),
        "{}",
        stderr(&out)
    );
}

/// What `resolve` and the concluding `commit` print (the library's
/// tests/merges.rs checks the bytes each way of settling writes).
#[test]
fn resolve_and_commit_say_what_they_kept_and_made() {
    let repo = photo_conflict();
    let d = repo.path();
    assert_eq!(dmv_out(d, &["merge", "feature"]).status.code(), Some(1));
    let out = dmv(d, &["resolve", "--both", "shot.jpg"]);
    assert!(
        out.contains("Resolved shot.jpg")
            && out.contains("kept shot.ours.jpg, shot.theirs.jpg")
            && out.contains("All conflicts resolved"),
        "{out}"
    );
    let st = dmv(d, &["status"]);
    assert!(
        st.contains("All conflicts fixed but you are still merging"),
        "{st}"
    );
    assert!(!st.contains("Changes not staged"), "{st}");
    let again = dmv_out(d, &["resolve", "--theirs", "shot.jpg"]);
    assert!(
        stderr(&again).contains("not in conflict"),
        "{}",
        stderr(&again)
    );
    // No -m is needed to conclude a merge.
    let out = dmv(d, &["commit"]);
    assert!(out.contains("Merge branch 'feature'"), "{out}");
    assert_eq!(parents(d, "HEAD").len(), 2);
    assert!(status_json(d)["merge"].is_null());
}

#[test]
fn resolve_without_a_side_needs_a_path() {
    let repo = photo_conflict();
    let d = repo.path();
    assert_eq!(dmv_out(d, &["merge", "feature"]).status.code(), Some(1));
    std::fs::write(d.join("shot.jpg"), "retouched by hand").unwrap();
    let out = dmv_out(d, &["resolve"]);
    assert_eq!(
        out.status.code(),
        Some(129),
        "a path is required (git's status for a command used wrongly)"
    );
    dmv(d, &["resolve", "."]);
    dmv(d, &["commit", "-m", "hand merge"]);
    assert_eq!(
        dmv_out(d, &["cat", "HEAD:shot.jpg"]).stdout,
        b"retouched by hand"
    );
}

/// A deleted-against-changed conflict in git's words, in the merge's
/// lines, status and resolve.
#[test]
fn modify_delete_conflicts_are_named_as_git_names_them() {
    let repo = diverged(
        |d| std::fs::write(d.join("clip.mov"), noise(100_000, 30)).unwrap(),
        |d| std::fs::remove_file(d.join("clip.mov")).unwrap(),
        |d| std::fs::write(d.join("clip.mov"), noise(100_000, 31)).unwrap(),
    );
    let d = repo.path();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CONFLICT (deleted by us): clip.mov"));
    assert_eq!(dmv(d, &["status", "--short"]).trim(), "DU clip.mov");
    assert!(dmv(d, &["status"]).contains("deleted by us:   clip.mov"));
    let out = dmv(d, &["resolve", "--ours", "clip.mov"]);
    assert!(out.contains("Resolved clip.mov (deleted)"), "{out}");
}

#[test]
fn file_against_directory_is_named_from_both_sides() {
    let repo = diverged(
        |d| std::fs::write(d.join("keep"), "k").unwrap(),
        |d| std::fs::write(d.join("take"), "a file").unwrap(),
        |d| {
            std::fs::create_dir(d.join("take")).unwrap();
            std::fs::write(d.join("take/one"), "in a dir").unwrap();
        },
    );
    let d = repo.path();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CONFLICT (added by us): take")
            && text.contains("CONFLICT (added by them): take/one"),
        "{text}"
    );
    let out = dmv_out(d, &["resolve", "--theirs", "take/one"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("resolve them together"),
        "{}",
        stderr(&out)
    );
}

/// A merge refused by a change in its way says so in one line, exit 128
/// (the library's tests/merges.rs checks each refusal changes nothing).
#[test]
fn a_merge_refused_by_a_change_in_its_way_says_so_in_one_line() {
    let repo = photo_conflict();
    let d = repo.path();
    std::fs::write(d.join("shot.jpg"), "retouched, not committed").unwrap();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(128));
    let err = stderr(&out);
    assert!(
        err.starts_with("dmv: ")
            && err.contains("uncommitted changes to shot.jpg")
            && err.lines().count() == 1,
        "{err}"
    );
    dmv(d, &["restore", "shot.jpg"]);
    std::fs::write(d.join("extra.wav"), "mine, untracked").unwrap();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("untracked file extra.wav would be overwritten"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn abort_says_what_it_did_or_that_there_is_nothing_to_abort() {
    let repo = photo_conflict();
    let d = repo.path();
    let before = snapshot(d);
    assert_eq!(dmv_out(d, &["merge", "feature"]).status.code(), Some(1));
    let out = dmv(d, &["merge", "--abort"]);
    assert!(out.contains("Merge aborted"), "{out}");
    assert_same_files(&snapshot(d), &before, "after abort");
    let out = dmv_out(d, &["merge", "--abort"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("no merge to abort"),
        "{}",
        stderr(&out)
    );
}

fn set_merge_tool(d: &Path, tool: &str) {
    edit_config(d, |cfg| cfg["merge_tool"] = tool.into());
}

#[test]
fn a_merge_tool_that_succeeds_resolves_and_one_that_fails_leaves_the_conflict() {
    let text_conflict = || {
        diverged(
            |d| std::fs::write(d.join("notes.txt"), "base\n").unwrap(),
            |d| std::fs::write(d.join("notes.txt"), "ours\n").unwrap(),
            |d| std::fs::write(d.join("notes.txt"), "theirs\n").unwrap(),
        )
    };
    let repo = text_conflict();
    let d = repo.path();
    // A tiny "merge": base, ours and theirs concatenated; checks the variables too.
    set_merge_tool(
        d,
        r#"test "$DMV_PATH" = notes.txt && cat "$DMV_BASE" "$DMV_OURS" "$DMV_THEIRS" > "$DMV_MERGED" && echo tool ran"#,
    );
    let out = dmv(d, &["merge", "feature"]);
    assert!(out.starts_with("Merged feature: "), "{out}");
    assert!(
        !out.contains("tool ran"),
        "the tool's output goes to stderr: {out}"
    );
    assert_eq!(
        std::fs::read(d.join("notes.txt")).unwrap(),
        b"base\nours\ntheirs\n"
    );
    assert_eq!(parents(d, "HEAD").len(), 2);
    assert!(dmv(d, &["status"]).contains("nothing to commit, working tree clean"));
    assert!(std::fs::read_dir(d.join(".dmv")).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("merge-tool")));
    fsck_clean(d);

    let repo = text_conflict();
    let d = repo.path();
    set_merge_tool(d, r#"echo garbage > "$DMV_MERGED"; exit 3"#);
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(1));
    // Back to what the merge wrote: the line merge's conflict markers.
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> feature\n"
    );
    assert_eq!(dmv(d, &["status", "--short"]).trim(), "UU notes.txt");
    dmv(d, &["resolve", "--theirs", "notes.txt"]);
    dmv(d, &["commit"]);
    fsck_clean(d);
}

#[test]
fn merge_and_resolve_have_help() {
    let repo = new_repo();
    for cmd in ["merge", "resolve"] {
        let out = dmv_out(repo.path(), &[cmd, "--help"]);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{cmd} --help"
        );
    }
}

/// Killed at each step of a merge: fsck stays clean, and either the merge is
/// complete or `merge --abort` returns to exactly the state before it.
#[test]
fn merge_killed_at_every_step_recovers() {
    const THREE_WAY: &[&str] = &[
        "merge-state-written",
        "merge-worktree-written",
        "pack-sealed",
        "commit-before-ref",
        "refs-after-lock",
        "refs-after-list-rename",
        "commit-after-ref",
    ];
    const FAST_FORWARD: &[&str] = &[
        "merge-state-written",
        "merge-worktree-written",
        "refs-after-lock",
        "merge-after-ref",
    ];
    let cases = THREE_WAY
        .iter()
        .map(|p| (p, false))
        .chain(FAST_FORWARD.iter().map(|p| (p, true)));
    for (point, ff) in cases {
        let repo = diverged(
            |d| {
                std::fs::write(d.join("a.bin"), noise(200_000, 40)).unwrap();
                std::fs::write(d.join("b.bin"), noise(200_000, 41)).unwrap();
            },
            |d| {
                if !ff {
                    std::fs::write(d.join("a.bin"), noise(200_000, 42)).unwrap();
                }
            },
            |d| {
                std::fs::write(d.join("b.bin"), noise(200_000, 43)).unwrap();
                std::fs::write(d.join("c.bin"), noise(200_000, 44)).unwrap();
            },
        );
        let d = repo.path();
        if ff {
            // Nothing new was committed on main: it is behind feature.
            assert_eq!(parents(d, "feature"), [rev(d, "main")]);
        }
        let before = snapshot(d);
        let head = rev(d, "main");
        let out = dmv_cmd(d)
            .args(["merge", "feature"])
            .env("DMV_FAILPOINT", point)
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{point}: never reached: {}",
            stderr(&out)
        );
        // It died at the fail point, not of some other failure: ref-store
        // points SIGKILL the process, the others abort after naming the point.
        use std::os::unix::process::ExitStatusExt;
        if point.starts_with("refs-") {
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGKILL),
                "{point} (ff {ff}): never reached: {:?} {}",
                out.status,
                stderr(&out)
            );
        } else {
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{point} (ff {ff}): never reached: {:?} {}",
                out.status,
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(&format!("failpoint {point} reached")),
                "{point} (ff {ff}): {}",
                stderr(&out)
            );
        }
        fsck_clean(d);
        let st = status_json(d);
        if rev(d, "main") == head {
            if !st["merge"].is_null() {
                dmv(d, &["merge", "--abort"]);
            }
            assert_same_files(
                &snapshot(d),
                &before,
                &format!("{point} (ff {ff}): abort must restore the worktree"),
            );
            assert!(dmv(d, &["status"]).contains("nothing to commit"), "{point}");
            dmv(d, &["merge", "feature"]);
        } else {
            assert!(
                st["merge"].is_null(),
                "{point}: finished merge must not look unfinished"
            );
        }
        assert_eq!(parents(d, "HEAD").len(), if ff { 1 } else { 2 }, "{point}");
        assert_eq!(
            std::fs::read(d.join("c.bin")).unwrap(),
            noise(200_000, 44),
            "{point}"
        );
        assert_eq!(
            std::fs::read(d.join("b.bin")).unwrap(),
            noise(200_000, 43),
            "{point}"
        );
        assert!(
            dmv(d, &["status"]).contains("nothing to commit, working tree clean"),
            "{point}"
        );
        fsck_clean(d);
    }
}

/// SIGKILL at the merge's steps and at moments spread over its duration,
/// in a merge that writes many files: whatever point it reached, `merge --abort` (or nothing, if it finished) leaves
/// exactly the state before or after, and fsck is clean.
#[test]
fn merge_sigkilled_at_random_moments_recovers() {
    let repo = diverged(
        |d| {
            std::fs::write(d.join("ours.bin"), noise(1000, 50)).unwrap();
            std::fs::write(d.join("shared.bin"), noise(1000, 51)).unwrap();
        },
        |d| std::fs::write(d.join("ours.bin"), noise(1000, 52)).unwrap(),
        |d| {
            std::fs::create_dir(d.join("shoot")).unwrap();
            for i in 0..40 {
                write_noise(&d.join(format!("shoot/{i:02}.raw")), 1 << 20, 600 + i);
            }
            std::fs::remove_file(d.join("shared.bin")).unwrap();
        },
    );
    let d = repo.path();
    let before = snapshot(d);
    let head = rev(d, "main");
    // Time one uninterrupted merge in a copy of the repository; the kills
    // below are spread over that duration.
    let probe = tempfile::tempdir().unwrap();
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(d.join("."))
        .arg(probe.path())
        .status()
        .unwrap();
    assert!(cp.success());
    let t = std::time::Instant::now();
    dmv(probe.path(), &["merge", "feature"]);
    let full = t.elapsed();
    drop(probe);
    let mut finished = false;
    // First, kills at the merge's own steps (a pause point stops it there;
    // the kill lands inside whatever the machine's speed); then kills
    // spread over the probe's duration, which land wherever the machine's
    // load puts them (a merge finished before its kill ends the rounds).
    let mut interrupted_at_steps = 0;
    let steps = ["merge-state-written", "merge-worktree-written"].map(|step| (Some(step), 0));
    let moments = [0u32, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 110, 150].map(|pct| (None, pct));
    let kill = |pid: u32| {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    };
    for (step, pct) in steps.into_iter().chain(moments) {
        let delay = full * pct / 100;
        let mut merge = dmv_cmd(d);
        merge.args(["merge", "feature"]);
        let mut child = match step {
            Some(step) => {
                let paused = Paused::start(merge, step);
                kill(paused.pid());
                paused.release()
            }
            None => {
                let child = merge
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                std::thread::sleep(delay);
                kill(child.id());
                child
            }
        };
        let _ = child.wait();
        fsck_clean(d);
        if rev(d, "main") != head {
            assert!(step.is_none(), "a merge paused at {step:?} moved main");
            finished = true;
            break;
        }
        let st = status_json(d);
        let untracked = st["untracked"].as_array().map_or(0, |u| u.len());
        let touched = snapshot(d) != before;
        let inside = !st["merge"].is_null() || untracked > 0 || touched;
        if step.is_some() {
            assert!(inside, "killed at {step:?}: no trace of the merge");
            interrupted_at_steps += 1;
        }
        eprintln!("killed at {step:?} / after {delay:?} of {full:?}: merge state {}, {untracked} untracked, worktree changed {touched}", st["merge"]);
        if !st["merge"].is_null() {
            dmv(d, &["merge", "--abort"]);
        }
        assert_same_files(
            &snapshot(d),
            &before,
            &format!("killed at {step:?} / after {delay:?}: abort must restore the worktree"),
        );
        assert!(
            dmv(d, &["status"]).contains("nothing to commit, working tree clean"),
            "after {step:?} / {delay:?}"
        );
    }
    assert_eq!(interrupted_at_steps, 2);
    if !finished {
        dmv(d, &["merge", "feature"]);
    }
    assert!(status_json(d)["merge"].is_null());
    assert_eq!(parents(d, "HEAD").len(), 2);
    let after = snapshot(d);
    assert_eq!(after.len(), 41);
    assert_eq!(after["shoot/39.raw"].len(), 1 << 20);
    assert!(dmv(d, &["status"]).contains("nothing to commit, working tree clean"));
    fsck_clean(d);
}

/// Text files beside the media, each edited on both branches: (name, base, main's, feature's).
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
    // Touching lines (and no newline at the end on one side): a conflict, as git sees it.
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

/// base, then main and feature each edit TEXT_EDITS, a photo (binary),
/// and add `new.txt` differently.
fn text_history() -> tempfile::TempDir {
    let write = |d: &Path, side: usize| {
        for (name, base, ours, theirs) in TEXT_EDITS {
            std::fs::write(d.join(name), [base, ours, theirs][side]).unwrap();
        }
        std::fs::write(d.join("shot.jpg"), noise(20_000, side as u64)).unwrap();
        if side > 0 {
            std::fs::write(
                d.join("new.txt"),
                ["", "from main\n", "from feature\n"][side],
            )
            .unwrap();
        }
    };
    diverged(|d| write(d, 0), |d| write(d, 1), |d| write(d, 2))
}

/// A text merge's conflicts in git's words and status codes (the library's
/// tests/merges.rs checks the merged bytes against real git's).
#[test]
fn text_conflicts_are_named_as_git_merge_names_them() {
    let repo = text_history();
    let d = repo.path();
    let out = dmv_out(d, &["merge", "feature"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for file in ["cut.edl", "labels.csv", "new.txt"] {
        assert!(
            text.contains(&format!("CONFLICT (content): Merge conflict in {file}")),
            "{text}"
        );
    }
    assert!(
        text.contains("CONFLICT (both modified): shot.jpg"),
        "{text}"
    );
    assert!(
        !text.contains("shot.xmp") && !text.contains("settings.ini"),
        "{text}"
    );
    assert_eq!(
        dmv(d, &["status", "--short"]),
        "UU cut.edl\nUU labels.csv\nAA new.txt\nM  settings.ini\nUU shot.jpg\nM  shot.xmp\n"
    );
}

#[test]
fn add_settles_an_edited_text_conflict_and_status_says_so() {
    let repo = text_history();
    let d = repo.path();
    assert_eq!(dmv_out(d, &["merge", "feature"]).status.code(), Some(1));
    // A marked file is not committed by mistake.
    let out = dmv_out(d, &["commit", "-m", "too early"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("cut.edl"), "{}", stderr(&out));
    let long = dmv(d, &["status"]);
    assert!(
        long.contains("dmv add"),
        "status says how to settle a marked file: {long}"
    );
    std::fs::write(d.join("cut.edl"), "001 A V C 00:00\n").unwrap();
    dmv(d, &["add", "cut.edl", "labels.csv", "new.txt"]);
    assert_eq!(
        dmv(d, &["status", "--short"])
            .lines()
            .filter(|l| l.starts_with("UU") || l.starts_with("AA"))
            .collect::<Vec<_>>(),
        ["UU shot.jpg"]
    );
}

#[test]
fn rm_settles_a_conflict_as_a_deletion_and_a_bad_style_is_refused() {
    let repo = text_history();
    let d = repo.path();
    let out = dmv_out(d, &["config", "merge.conflictStyle", "zdiff4"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("not merge or diff3"),
        "{}",
        stderr(&out)
    );
    assert_eq!(dmv_out(d, &["merge", "feature"]).status.code(), Some(1));
    dmv(d, &["rm", "new.txt"]);
    let short = dmv(d, &["status", "--short"]);
    assert!(short.lines().any(|l| l == "D  new.txt"), "{short}");
    assert!(!d.join("new.txt").exists());
}

fn subject(d: &Path, rev: &str) -> String {
    dmv(d, &["log", "-1", "--format=%s", rev])
        .trim()
        .to_string()
}

/// What a pick prints, picked again, and refused for a merge commit (the
/// library's tests/merges.rs checks what it changes).
#[test]
fn cherry_pick_says_what_it_picked_and_refuses_a_merge() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("notes.txt"), "one\n").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "base"]);
    dmv(d, &["switch", "-c", "feature"]);
    std::fs::write(d.join("extra.wav"), noise(10_000, 2)).unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "the fix"]);
    dmv(d, &["switch", "main"]);
    std::fs::write(d.join("notes.txt"), "one, main\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "main work"]);
    let out = dmv(d, &["cherry-pick", "feature"]);
    assert!(out.starts_with("Picked feature as "), "{out}");
    assert_eq!(subject(d, "HEAD"), "the fix");
    let out = dmv(d, &["cherry-pick", "feature"]);
    assert!(out.contains("already here"), "{out}");
    dmv(d, &["merge", "--no-ff", "-q", "feature"]);
    let out = dmv_out(d, &["cherry-pick", "HEAD"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("is a merge"), "{}", stderr(&out));
}

#[test]
fn a_conflicted_cherry_pick_says_how_to_go_on_or_abort() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("cut.edl"), "001 A\n002 B\n003 C\n").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "base"]);
    dmv(d, &["switch", "-c", "feature"]);
    std::fs::write(d.join("cut.edl"), "001 A\n002 B feature\n003 C\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "retime B"]);
    dmv(d, &["switch", "main"]);
    std::fs::write(d.join("cut.edl"), "001 A\n002 B main\n003 C\n").unwrap();
    dmv(d, &["commit", "-a", "-m", "main retimes B"]);
    let main = rev(d, "main");

    let out = dmv_out(d, &["cherry-pick", "feature"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CONFLICT (content): Merge conflict in cut.edl")
            && text.contains("dmv cherry-pick --abort"),
        "{text}"
    );
    assert!(dmv(d, &["status"]).contains("You are cherry-picking commit feature"));
    dmv(d, &["cherry-pick", "--abort"]);
    assert_eq!(rev(d, "HEAD"), main);
    assert_eq!(
        dmv_out(d, &["cherry-pick", "feature"]).status.code(),
        Some(1)
    );
    std::fs::write(d.join("cut.edl"), "001 A\n002 B both\n003 C\n").unwrap();
    dmv(d, &["add", "cut.edl"]);
    let out = dmv(d, &["cherry-pick", "--continue"]);
    assert!(out.starts_with("Picked "), "{out}");
    assert_eq!(parents(d, "HEAD"), [main]);
    assert_eq!(subject(d, "HEAD"), "retime B");
}
