//! The everyday verbs' rules through the library, as every front end
//! reaches them: what a checkout writes back, what gc keeps while a file
//! is staged, when status may trust its recorded tree, ignore rules and
//! tracked files, a branch made over uncommitted changes, revert.
//! dmv-cli's tests/everyday.rs keeps the words, exit codes and the
//! terminal (colour, pager, editor, completions).

mod common;
use common::{noise, Scratch};

use dmv_repo::store::GcOptions;
use dmv_repo::{GcPolicy, RepoError, Silent};

#[cfg(unix)]
#[test]
fn symlinks_exec_bits_odd_names_and_chunk_boundaries_survive_checkout() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let d = &s.dir;
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9 \xff.bin");
    std::fs::write(d.join(odd), b"latin-1 name").unwrap();
    s.write("run.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(d.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("run.sh", d.join("link")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", d.join("dangling")).unwrap();
    // Exactly the minimum, average and maximum chunk sizes, and one byte around them.
    let sizes = [16384usize, 16385, 65536, 262143, 262144, 262145, 524288, 0];
    for (i, len) in sizes.iter().enumerate() {
        s.write(&format!("edge{i}"), noise(*len, 100 + i as u64));
    }
    s.commit_all("odd things").unwrap();
    // Every entry: name, bytes (a link's target), exec bits, whether a link.
    let entries = || {
        let mut v: Vec<(Vec<u8>, Vec<u8>, u32, bool)> = Vec::new();
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            if e.file_name() == ".dmv" {
                continue;
            }
            let m = e.path().symlink_metadata().unwrap();
            let link = m.file_type().is_symlink();
            let content = match link {
                true => std::fs::read_link(e.path())
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec(),
                false => std::fs::read(e.path()).unwrap(),
            };
            let name = e.file_name().as_bytes().to_vec();
            v.push((name, content, m.permissions().mode() & 0o111, link));
        }
        v.sort();
        v
    };
    let before = entries();
    assert_eq!(before.len(), 12);
    s.branch_here("without-link");
    s.repo.rm_settling(&[b"link".to_vec()], false).unwrap();
    s.repo.commit_staged("drop link").unwrap().unwrap();
    assert!(d.join("link").symlink_metadata().is_err());
    s.switch("main");
    assert_eq!(entries(), before);
    // Detached at a commit, and back.
    let detached = dmv_repo::Head::Detached(s.rev("without-link"));
    s.repo.switch_to(&detached, &Silent).unwrap();
    assert!(d.join("link").symlink_metadata().is_err());
    s.switch("main");
    assert_eq!(entries(), before);
    s.assert_fsck_clean();
}

/// With no grace period, only the dirstate keeps a staged file's data
/// from gc: it must.
#[test]
fn gc_between_add_and_commit_keeps_the_staged_content() {
    let s = Scratch::new();
    s.write("first.txt", "committed");
    s.commit_all("one").unwrap();
    s.write("staged.raw", noise(700_000, 5));
    s.add(&["staged.raw"]);
    let policy = GcPolicy {
        prune_reflog: true,
        store: GcOptions {
            keep_recent: std::time::Duration::ZERO,
            ..Default::default()
        },
    };
    s.repo.maintenance().gc(policy, &Silent).unwrap();
    s.repo.commit_staged("two").unwrap().unwrap();
    assert_eq!(
        s.in_commit("HEAD", "staged.raw").unwrap(),
        noise(700_000, 5)
    );
    s.assert_fsck_clean();
}

/// Status skips reading the tree when `.dmv/dirstate-tree` says the
/// staged entries are HEAD's; a mark made from other entries, or
/// damaged, or empty, must not be believed.
#[test]
fn status_trusts_the_recorded_tree_only_for_the_entries_it_was_made_from() {
    let s = Scratch::new();
    let mark = s.dir.join(".dmv/dirstate-tree");
    let staged = |s: &Scratch| -> Vec<String> {
        let st = s.repo.status().unwrap();
        st.staged
            .iter()
            .map(|c| format!("{:?} {}", c.kind, String::from_utf8_lossy(&c.path)))
            .collect()
    };
    s.write("a", "a");
    s.write("b", "b");
    s.commit_all("one").unwrap();
    assert!(s.changed_paths().is_empty());
    let first = std::fs::read(&mark).unwrap();
    let one = s.rev("HEAD");
    s.repo
        .create_ref("refs/heads/one", one, "branch: created")
        .unwrap();

    s.write("a", "changed");
    s.add(&["a"]);
    assert_eq!(staged(&s), ["Modified a"]);
    std::fs::write(&mark, &first).unwrap();
    assert_eq!(staged(&s), ["Modified a"], "a mark made from other entries");
    s.repo.commit_staged("two").unwrap().unwrap();
    assert!(s.changed_paths().is_empty());
    let second = std::fs::read(&mark).unwrap();
    assert_ne!(first, second);

    s.switch("one");
    assert_eq!(s.read("a").unwrap(), b"a");
    assert_eq!(std::fs::read(&mark).unwrap(), first);
    let mut damaged = first.clone();
    damaged[20] ^= 1;
    for stale in [second, damaged, Vec::new()] {
        std::fs::write(&mark, stale).unwrap();
        assert!(s.changed_paths().is_empty());
    }
    s.repo.rm_settling(&[b"b".to_vec()], true).unwrap();
    assert_eq!(staged(&s), ["Deleted b"]);
    std::fs::write(&mark, &first).unwrap();
    assert_eq!(staged(&s), ["Deleted b"]);
    assert_eq!(s.repo.status().unwrap().untracked, [b"b".to_vec()]);
}

#[test]
fn a_tracked_file_an_ignore_rule_matches_stays_tracked_through_add_and_commit_all() {
    let s = Scratch::new();
    s.write("keep.log", "v1");
    s.write("a", "a");
    s.commit_all("one").unwrap();
    s.write(".dmvignore", "*.log\n");
    s.write("new.log", "ignored");
    s.add(&[]);
    assert_eq!(s.staged_new(), [".dmvignore"]);
    s.write("keep.log", "v2");
    let all = dmv_repo::CommitRequest {
        message: Some("two"),
        all: true,
        amend: false,
        allow_empty: false,
    };
    s.repo.commit_with(&all, &Silent).unwrap();
    assert_eq!(s.in_commit("HEAD", "keep.log").unwrap(), b"v2");
    assert_eq!(s.files_in("HEAD"), [".dmvignore", "a", "keep.log"]);
    s.remove("keep.log");
    let all = dmv_repo::CommitRequest {
        message: Some("three"),
        ..all
    };
    s.repo.commit_with(&all, &Silent).unwrap();
    assert_eq!(s.files_in("HEAD"), [".dmvignore", "a"]);
}

/// A branch made at HEAD and switched to carries the changes, staged or
/// not, as git's `switch -c` does; a commit there leaves main where it was.
#[test]
fn a_new_branch_at_head_carries_uncommitted_changes() {
    let s = Scratch::new();
    s.write("a.txt", "one");
    s.write("b.txt", "b");
    let main = s.commit_all("first").unwrap();
    s.write("a.txt", "two");
    s.write("b.txt", "staged");
    s.add(&["b.txt"]);
    let listed = |s: &Scratch| {
        let st = s.repo.status().unwrap();
        let names = |cs: &[dmv_repo::Change]| -> Vec<String> {
            cs.iter()
                .map(|c| String::from_utf8_lossy(&c.path).into_owned())
                .collect()
        };
        (names(&st.staged), names(&st.unstaged))
    };
    let before = listed(&s);
    assert_eq!(
        before,
        (vec!["b.txt".to_string()], vec!["a.txt".to_string()])
    );
    s.branch_here("feature");
    assert_eq!(listed(&s), before);
    assert_eq!(s.read("a.txt").unwrap(), b"two");
    s.add(&[]);
    s.repo.commit_staged("on feature").unwrap().unwrap();
    assert_eq!(s.rev("main"), main, "main did not move");
    s.switch("main");
    assert_eq!(s.read("a.txt").unwrap(), b"one");
}

/// A revert commits the undoing of one commit and keeps later changes;
/// what is undone already, changed again since, or not committed is
/// refused with nothing changed.
#[test]
fn revert_commits_the_undoing_and_refuses_what_it_cannot_undo_cleanly() {
    let s = Scratch::new();
    s.write("a.jpg", "a1");
    s.write("b.jpg", "b1");
    s.commit_all("first").unwrap();
    s.write("a.jpg", "a2");
    s.write("c.jpg", "c");
    let retouch = s.commit_all("retouch a, add c").unwrap();
    s.write("b.jpg", "b2");
    s.commit_all("retouch b").unwrap();

    let revert = s.repo.merges().revert(retouch, &Silent).unwrap();
    let commit = s.repo.commit(&revert).unwrap();
    assert!(
        commit.message.starts_with("Revert \"retouch a, add c\""),
        "{}",
        commit.message
    );
    assert_eq!(s.read("a.jpg").unwrap(), b"a1");
    assert_eq!(s.read("c.jpg"), None);
    assert_eq!(
        s.read("b.jpg").unwrap(),
        b"b2",
        "a later commit's change stays"
    );
    assert!(s.changed_paths().is_empty());

    let again = s.repo.merges().revert(retouch, &Silent).unwrap_err();
    assert!(
        matches!(again, RepoError::NothingToRevert { .. }),
        "{again}"
    );
    s.write("b.jpg", "b3");
    s.commit_all("retouch b again").unwrap();
    let head = s.rev("HEAD");
    let retouch_b = s.rev("HEAD~2");
    let e = s.repo.merges().revert(retouch_b, &Silent).unwrap_err();
    assert!(
        matches!(&e, RepoError::RevertConflict { path, .. } if path == "b.jpg"),
        "{e}"
    );
    assert_eq!(s.rev("HEAD"), head);
    assert_eq!(s.read("b.jpg").unwrap(), b"b3");
    s.write("a.jpg", "dirty");
    let e = s.repo.merges().revert(head, &Silent).unwrap_err();
    assert!(matches!(e, RepoError::UncommittedChanges { .. }), "{e}");
    assert_eq!(s.read("a.jpg").unwrap(), b"dirty");
    s.assert_fsck_clean();
}
