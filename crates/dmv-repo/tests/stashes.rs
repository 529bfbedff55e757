//! Stash through the library (`repo.merges().stash_*`): what is put aside
//! and what stays, what comes back and where, and the refusals that change
//! nothing. dmv-cli's tests/everyday.rs keeps what the binary prints
//! (`stash show`, `stash list`, `stash@{N}` as a revision).

mod common;
use common::{noise, Scratch};

use dmv_repo::{RepoError, Silent};

/// `git status --short`'s letters for staged and unstaged changes in path
/// order, then `??` for untracked files, as git lists them.
fn short(s: &Scratch) -> Vec<String> {
    let st = s.repo.status().unwrap();
    let mut lines: Vec<(String, String)> = Vec::new();
    let letter = |k: dmv_repo::ChangeKind| k.letter().to_string();
    for c in &st.staged {
        lines.push((
            String::from_utf8_lossy(&c.path).into_owned(),
            format!("{} ", letter(c.kind)),
        ));
    }
    for c in &st.unstaged {
        let path = String::from_utf8_lossy(&c.path).into_owned();
        match lines.iter_mut().find(|(p, _)| *p == path) {
            Some((_, code)) => code.replace_range(1..2, &letter(c.kind)),
            None => lines.push((path, format!(" {}", letter(c.kind)))),
        }
    }
    lines.sort();
    let untracked = st
        .untracked
        .iter()
        .map(|p| ("??".to_string(), String::from_utf8_lossy(p).into_owned()));
    lines
        .into_iter()
        .map(|(p, code)| (code, p))
        .chain(untracked)
        .map(|(code, p)| format!("{code} {p}"))
        .collect()
}

fn push(s: &Scratch, untracked: bool) -> Option<dmv_repo::Stash> {
    s.repo
        .merges()
        .stash_push(None, untracked, &Silent)
        .unwrap()
}

fn pop(s: &Scratch) -> Result<dmv_repo::Stash, RepoError> {
    s.repo.merges().stash_apply(0, true, false, &Silent)
}

#[test]
fn a_stash_puts_changes_aside_and_brings_them_back_over_later_commits() {
    let s = Scratch::new();
    s.write("a.jpg", "a1");
    s.write("b.jpg", "b1");
    s.commit_all("first").unwrap();
    assert!(push(&s, false).is_none(), "nothing to put aside");
    s.write("a.jpg", "a2 retouched");
    s.write("new.jpg", "new");
    s.add(&["new.jpg"]);
    s.remove("b.jpg");
    s.write("loose.txt", "untracked stays");
    let stash = s
        .repo
        .merges()
        .stash_push(Some("half done"), false, &Silent)
        .unwrap()
        .unwrap();
    assert_eq!(stash.message, "On main: half done");
    assert_eq!(short(&s), ["?? loose.txt"]);
    assert_eq!(s.read("a.jpg").unwrap(), b"a1");
    assert!(s.read("b.jpg").is_some() && s.read("new.jpg").is_none());
    assert_eq!(
        s.in_commit(&stash.id.to_hex(), "a.jpg").unwrap(),
        b"a2 retouched"
    );
    assert_eq!(s.repo.commit(&stash.id).unwrap().parents[0], s.rev("HEAD"));

    // Meanwhile a commit elsewhere: the stash comes back on top of it.
    s.write("c.jpg", "c");
    s.add(&["c.jpg"]);
    s.repo.commit_staged("c").unwrap().unwrap();
    pop(&s).unwrap();
    assert_eq!(s.read("a.jpg").unwrap(), b"a2 retouched");
    assert_eq!(s.read("new.jpg").unwrap(), b"new");
    assert!(s.read("b.jpg").is_none() && s.read("c.jpg").is_some());
    assert_eq!(
        short(&s),
        [" M a.jpg", " D b.jpg", "A  new.jpg", "?? loose.txt"]
    );
    assert!(s.repo.merges().stashes().unwrap().is_empty());

    // A stash whose path changed differently since is refused and kept.
    push(&s, false).unwrap();
    s.write("a.jpg", "a3 other retouch");
    s.add(&["a.jpg"]);
    s.repo.commit_staged("other retouch").unwrap().unwrap();
    let e = pop(&s).unwrap_err();
    assert!(
        matches!(&e, RepoError::StashConflict { path } if path == "a.jpg"),
        "{e}"
    );
    assert_eq!(s.repo.merges().stashes().unwrap().len(), 1, "kept");
    s.repo.merges().stash_drop(0).unwrap();
    assert!(s.repo.merges().stashes().unwrap().is_empty());
    s.assert_fsck_clean();
}

/// With the index restored, what was staged is staged again; without it,
/// as git's pop, the changes come back unstaged. Changes to other paths
/// stay as they are; one at a path the stash changes refuses it.
#[test]
fn a_stash_restores_the_index_when_asked_and_keeps_other_changes() {
    let s = Scratch::new();
    s.write("a.jpg", "a1");
    s.write("b.jpg", "b1");
    s.write("c.jpg", "c1");
    s.commit_all("first").unwrap();
    s.write("a.jpg", "a4 staged");
    s.add(&["a.jpg"]);
    s.write("a.jpg", "a5 edited after staging");
    s.write("c.jpg", "c2");
    let before = short(&s);
    assert_eq!(before, ["MM a.jpg", " M c.jpg"]);
    push(&s, false).unwrap();
    s.repo
        .merges()
        .stash_apply(0, false, true, &Silent)
        .unwrap();
    assert_eq!(short(&s), before);
    assert_eq!(s.read("a.jpg").unwrap(), b"a5 edited after staging");

    s.repo
        .reset(s.rev("HEAD"), dmv_repo::ResetMode::Hard, &Silent)
        .unwrap();
    pop(&s).unwrap();
    assert_eq!(short(&s), [" M a.jpg", " M c.jpg"]);

    push(&s, false).unwrap();
    s.write("c.jpg", "c3 meanwhile");
    s.write("new2.jpg", "staged meanwhile");
    s.add(&["new2.jpg"]);
    s.repo.rm_settling(&[b"b.jpg".to_vec()], false).unwrap();
    let meanwhile = short(&s);
    assert_eq!(meanwhile, ["D  b.jpg", " M c.jpg", "A  new2.jpg"]);
    let e = pop(&s).unwrap_err();
    assert!(
        e.to_string().contains("c.jpg"),
        "the stash changes c.jpg too: {e}"
    );
    assert_eq!(short(&s), meanwhile, "nothing changed");
    assert_eq!(s.repo.merges().stashes().unwrap().len(), 1, "kept");
    s.repo
        .worktree()
        .restore(&[b"c.jpg".to_vec()], None, false)
        .unwrap();
    pop(&s).unwrap();
    assert_eq!(
        short(&s),
        [" M a.jpg", "D  b.jpg", " M c.jpg", "A  new2.jpg"]
    );
    assert_eq!(s.read("new2.jpg").unwrap(), b"staged meanwhile");
    assert!(s.read("b.jpg").is_none(), "a staged deletion stays one");

    push(&s, false).unwrap();
    s.write("a.jpg", "a6");
    push(&s, false).unwrap();
    assert_eq!(s.repo.merges().stash_clear().unwrap(), 2);
    assert!(s.repo.merges().stashes().unwrap().is_empty());
    assert_eq!(s.repo.merges().stash_clear().unwrap(), 0);
    s.assert_fsck_clean();
}

/// Untracked files go aside too when asked (ignored ones stay), survive a
/// gc while aside, and come back untracked; an untracked file made again
/// meanwhile refuses the pop with nothing changed.
#[test]
fn a_stash_of_untracked_files_brings_them_back_untracked() {
    let s = Scratch::new();
    s.write("a.jpg", "a1");
    s.write(".dmvignore", "*.tmp\n");
    s.commit_all("first").unwrap();
    s.write("a.jpg", "a2");
    s.write("shoot/raw/IMG_1.cr3", noise(300_000, 3));
    s.write("loose.txt", "loose");
    s.write("cache.tmp", "ignored");
    let before = short(&s);
    assert_eq!(
        before,
        [" M a.jpg", "?? loose.txt", "?? shoot/raw/IMG_1.cr3"]
    );
    push(&s, true).unwrap();
    assert!(short(&s).is_empty());
    assert!(s.read("loose.txt").is_none() && s.read("shoot/raw/IMG_1.cr3").is_none());
    assert_eq!(
        s.read("cache.tmp").unwrap(),
        b"ignored",
        "ignored files stay"
    );
    assert!(push(&s, true).is_none(), "nothing left to put aside");
    s.repo
        .maintenance()
        .gc(Default::default(), &Silent)
        .unwrap();
    pop(&s).unwrap();
    assert_eq!(short(&s), before, "back as they were: untracked");
    assert_eq!(s.read("shoot/raw/IMG_1.cr3").unwrap(), noise(300_000, 3));

    // Only untracked files: still something to put aside.
    s.repo
        .worktree()
        .restore(&[b"a.jpg".to_vec()], None, false)
        .unwrap();
    push(&s, true).unwrap();
    s.write("loose.txt", "made again meanwhile");
    let e = pop(&s).unwrap_err();
    assert!(
        matches!(&e, RepoError::UntrackedInTheWay { path, .. } if path == "loose.txt"),
        "{e}"
    );
    assert_eq!(s.read("loose.txt").unwrap(), b"made again meanwhile");
    assert!(s.read("shoot/raw/IMG_1.cr3").is_none(), "nothing changed");
    assert_eq!(s.repo.merges().stashes().unwrap().len(), 1, "kept");
    s.remove("loose.txt");
    pop(&s).unwrap();
    assert_eq!(short(&s), ["?? loose.txt", "?? shoot/raw/IMG_1.cr3"]);
    assert_eq!(s.read("loose.txt").unwrap(), b"loose");
    s.assert_fsck_clean();
}
