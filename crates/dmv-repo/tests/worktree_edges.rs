//! What stands in the working tree that is not the repository's to touch:
//! a folder replaced by a symlink, untracked files in the way of a switch,
//! a nested repository, a file stamped in the future, ignore rules above a
//! named path. Nothing outside the tree is read or removed, no untracked
//! file is lost, and no commit holds a tree its readers would refuse.
//! (A folder that cannot be read stays in dmv-cli's tests/worktree.rs: it
//! needs another user when the tests run as root.)

mod common;
use common::Scratch;

use dmv_repo::RepoError;

fn b(path: &str) -> Vec<u8> {
    path.as_bytes().to_vec()
}

#[cfg(unix)]
#[test]
fn a_folder_replaced_by_a_symlink_is_not_looked_through() {
    let s = Scratch::new();
    let outside = s.dir.parent().unwrap().join("outside");
    s.write("x.txt", "x\n");
    s.commit_all("x").unwrap();
    let old = s.rev("HEAD");
    s.repo
        .create_ref("refs/heads/old", old, "branch: created")
        .unwrap();
    s.write("d/f.txt", "precious\n");
    s.commit_all("d/f").unwrap();
    // The folder moves out of the tree (its file's stat unchanged), a symlink takes its place.
    std::fs::rename(s.dir.join("d"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, s.dir.join("d")).unwrap();

    let status = s.repo.status().unwrap();
    let gone: Vec<&[u8]> = status.unstaged.iter().map(|c| c.path.as_slice()).collect();
    assert_eq!(gone, [b"d/f.txt"], "d/f.txt is gone from the tree");
    assert_eq!(status.untracked, [b("d")], "d is a new symlink");
    // A switch must not delete outside/f.txt through the link (it refuses: d/f.txt is deleted here).
    let head = dmv_repo::Head::Branch("refs/heads/old".into());
    let _ = s.repo.switch_to(&head, &dmv_repo::Silent);
    assert_eq!(std::fs::read(outside.join("f.txt")).unwrap(), b"precious\n");
    s.commit_all("d is a link now").unwrap();
    assert_eq!(s.files_in("HEAD"), ["d", "x.txt"]);
    s.assert_fsck_clean();
    assert_eq!(std::fs::read(outside.join("f.txt")).unwrap(), b"precious\n");
    assert!(s.changed_paths().is_empty());
}

#[test]
fn a_switch_refuses_to_remove_untracked_files_in_the_way() {
    let s = Scratch::new();
    s.write("x.txt", "x\n");
    s.commit_all("x").unwrap();
    s.branch_here("files");
    s.write("d", "a file named d\n");
    s.write("e/f", "a file in a folder e\n");
    s.commit_all("d and e/f").unwrap();
    s.switch("main");
    let to_files = |s: &Scratch| {
        let head = dmv_repo::Head::Branch("refs/heads/files".into());
        s.repo.switch_to(&head, &dmv_repo::Silent)
    };

    // Untracked files where the branch has a file (d) and a folder's file (e/f).
    s.write("d/precious.jpg", "1");
    let e = to_files(&s).unwrap_err();
    assert!(
        matches!(&e, RepoError::UntrackedInTheWay { path, .. } if path == "d/precious.jpg"),
        "{e}"
    );
    assert_eq!(s.read("d/precious.jpg").unwrap(), b"1");
    std::fs::remove_dir_all(s.dir.join("d")).unwrap();

    s.write("e", "an untracked file named e");
    let e = to_files(&s).unwrap_err();
    assert!(
        matches!(&e, RepoError::UntrackedInTheWay { path, .. } if path == "e"),
        "{e}"
    );
    assert_eq!(s.read("e").unwrap(), b"an untracked file named e");
    assert_eq!(
        s.repo.history().head_branch().unwrap().as_deref(),
        Some("refs/heads/main")
    );
    s.remove("e");
    to_files(&s).unwrap();
    assert_eq!(s.read("e/f").unwrap(), b"a file in a folder e\n");
}

#[test]
fn a_nested_repository_is_left_out_of_the_commit() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    dmv_repo::Repository::init(&s.dir.join("sub"), Default::default()).unwrap();
    s.write("sub/b.txt", "b\n");
    s.write("deep/.DMV/c", "not a tree's name\n");
    s.commit_all("with a nested repository").unwrap();
    // The nested repository's files are, its .dmv is not; nor is any
    // spelling of .dmv a checkout on a case-folding disk would take for it.
    let files = s.files_in("HEAD");
    assert!(files.contains(&"sub/b.txt".to_string()), "{files:?}");
    assert!(
        files.iter().all(|f| !f.to_lowercase().contains(".dmv")),
        "{files:?}"
    );
    s.assert_fsck_clean();
}

#[test]
fn a_file_stamped_in_the_future_can_be_committed_and_its_edit_is_seen() {
    let s = Scratch::new();
    s.write("from-the-camera.jpg", "a photo\n");
    let ten_years = std::time::Duration::from_secs(10 * 365 * 24 * 3600);
    let file = std::fs::File::options()
        .write(true)
        .open(s.dir.join("from-the-camera.jpg"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + ten_years)
        .unwrap();
    s.commit_all("photo").unwrap();
    assert_eq!(
        s.in_commit("HEAD", "from-the-camera.jpg").unwrap(),
        b"a photo\n"
    );
    assert!(s.changed_paths().is_empty());
    // An edit (which stamps it now) is seen.
    s.write("from-the-camera.jpg", "retouched\n");
    assert_eq!(s.changed_paths(), ["from-the-camera.jpg"]);
}

/// `add PATH` looks only where PATH is, yet stages what a walk of the whole
/// tree would have found there: the ignore files of the folders above it
/// apply, nested paths are found once, a named ignored file is reported
/// (and staged only when named), a path through a file or into `.dmv`
/// finds nothing.
#[test]
fn add_of_named_paths_stages_what_the_whole_walk_would() {
    let s = Scratch::new();
    s.write(".dmvignore", "*.tmp\ncache/\n");
    s.write("shoot/.dmvignore", "*.raw\n!keep.raw\n");
    for f in [
        "shoot/a.jpg",
        "shoot/b.raw",
        "shoot/keep.raw",
        "shoot/x.tmp",
        "shoot/day2/c.jpg",
        "shoot/day2/d.raw",
        "shoot/cache/e.jpg",
        "other/f.jpg",
        "top.jpg",
    ] {
        s.write(f, f);
    }
    s.add(&["shoot/day2", "shoot", "shoot/day2/c.jpg"]);
    let want = [
        "shoot/.dmvignore",
        "shoot/a.jpg",
        "shoot/day2/c.jpg",
        "shoot/keep.raw",
    ];
    assert_eq!(s.staged_new(), want);

    let ignored = s
        .repo
        .worktree()
        .ignored_paths(&[b("shoot/day2/d.raw"), b("shoot")])
        .unwrap();
    assert_eq!(ignored, [b("shoot/day2/d.raw")], "named and ignored");
    s.add(&["shoot/day2/d.raw"]);
    assert!(s.staged_new().contains(&"shoot/day2/d.raw".to_string()));
    let staged = s.staged_new();
    for nothing in ["top.jpg/x", "no/such"] {
        let add = s.repo.add_settling(&[b(nothing)], false, &dmv_repo::Silent);
        assert!(add.is_err(), "{nothing}");
    }
    // Named into .dmv (in any case) or a temporary file: not the user's,
    // never staged, whichever front end passes the path.
    s.write(".dmv-tmp-1-x", "a write in progress");
    for reserved in [".dmv/config", ".DMV/config", "deep/.Dmv/c", ".dmv-tmp-1-x"] {
        let add = s
            .repo
            .add_settling(&[b(reserved)], false, &dmv_repo::Silent);
        assert!(add.is_err(), "{reserved}: {add:?}");
    }
    assert_eq!(s.staged_new(), staged);
    std::fs::remove_file(s.dir.join(".dmv-tmp-1-x")).unwrap();
    s.add(&[]);
    let want = [
        ".dmvignore",
        "other/f.jpg",
        "shoot/.dmvignore",
        "shoot/a.jpg",
        "shoot/day2/c.jpg",
        "shoot/day2/d.raw",
        "shoot/keep.raw",
        "top.jpg",
    ];
    assert_eq!(s.staged_new(), want);
}

/// A switch carries uncommitted changes to paths both branches hold alike,
/// staged or not (as git's), and refuses, changing nothing, when a change
/// is to a path the switch would write.
#[test]
fn a_switch_carries_changes_the_other_branch_does_not_touch() {
    let s = Scratch::new();
    s.write("notes.txt", "v1");
    s.write("shared.txt", "same");
    s.write("gone.txt", "bye");
    s.commit_all("base").unwrap();
    s.branch_here("edit");
    s.write("notes.txt", "v2");
    s.commit_all("notes v2").unwrap();
    s.switch("main");
    // Unstaged, staged, a new file staged, a deletion: none of them to notes.txt.
    s.write("shared.txt", "changed here");
    s.write("staged.txt", "new");
    s.add(&["staged.txt"]);
    s.remove("gone.txt");
    let listed = |s: &Scratch| {
        let st = s.repo.status().unwrap();
        let paths = |cs: &[dmv_repo::Change]| -> Vec<String> {
            cs.iter()
                .map(|c| format!("{:?} {}", c.kind, String::from_utf8_lossy(&c.path)))
                .collect()
        };
        (paths(&st.staged), paths(&st.unstaged))
    };
    let before = listed(&s);
    s.switch("edit");
    assert_eq!(listed(&s), before, "the changes came along");
    assert_eq!(s.read("notes.txt").unwrap(), b"v2");
    assert_eq!(s.read("shared.txt").unwrap(), b"changed here");

    s.write("notes.txt", "edited on edit");
    let head = dmv_repo::Head::Branch("refs/heads/main".into());
    let e = s.repo.switch_to(&head, &dmv_repo::Silent).unwrap_err();
    assert!(
        matches!(&e, RepoError::UncommittedChanges { path, .. } if path == "notes.txt"),
        "{e}"
    );
    assert_eq!(s.read("notes.txt").unwrap(), b"edited on edit");
    assert_eq!(
        s.repo.history().head_branch().unwrap().as_deref(),
        Some("refs/heads/edit")
    );
    s.assert_fsck_clean();
}
