//! The product rules the commands are made of, tested as library calls (a
//! front end only words their outcomes): what a commit says when nothing is
//! committed, a branch only a remote has, `REV:PATH`, a diff's sides, and
//! fsck's verdict.

use std::path::Path;

use dmv_repo::store::ChunkParams;
use dmv_repo::{
    CommitRequest, Committed, DiffSide, FlatEntry, Head, NothingToCommit, RepoError, Repository,
    Silent,
};

fn repo_at(dir: &Path) -> Repository {
    Repository::init(dir, ChunkParams::default()).unwrap()
}

fn commit(repo: &Repository, message: &str, all: bool) -> Committed {
    repo.commit_with(
        &CommitRequest {
            message: Some(message),
            all,
            amend: false,
            allow_empty: false,
        },
        &Silent,
    )
    .unwrap()
}

fn add_all(repo: &Repository) {
    repo.worktree().add(&[Vec::new()], false, &Silent).unwrap();
}

#[test]
fn a_commit_that_commits_nothing_says_why_as_git_does() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_at(t.path());
    assert_eq!(
        commit(&repo, "m", false),
        Committed::Nothing(NothingToCommit::NoFiles)
    );
    std::fs::write(t.path().join("a.txt"), "one\n").unwrap();
    assert_eq!(
        commit(&repo, "m", false),
        Committed::Nothing(NothingToCommit::OnlyUntracked)
    );
    add_all(&repo);
    let Committed::Made { id, root: true } = commit(&repo, "first", false) else {
        panic!("the first commit is a root commit")
    };
    assert_eq!(repo.head_commit().unwrap(), Some(id));
    assert_eq!(
        commit(&repo, "m", false),
        Committed::Nothing(NothingToCommit::Clean)
    );
    std::fs::write(t.path().join("a.txt"), "two\n").unwrap();
    assert_eq!(
        commit(&repo, "m", false),
        Committed::Nothing(NothingToCommit::ChangesNotStaged)
    );
    let Committed::Made {
        id: second,
        root: false,
    } = commit(&repo, "second", true)
    else {
        panic!("commit -a commits a tracked file's change")
    };
    assert_eq!(repo.commit(&second).unwrap().parents, vec![id]);
    // No message and nothing to commit: nothing to commit (not "a message is required").
    let nothing = repo
        .commit_with(
            &CommitRequest {
                message: None,
                all: true,
                amend: false,
                allow_empty: false,
            },
            &Silent,
        )
        .unwrap();
    assert_eq!(nothing, Committed::Nothing(NothingToCommit::Clean));
    // No message, something to commit, no merge in progress: refused, nothing changed.
    std::fs::write(t.path().join("a.txt"), "three\n").unwrap();
    let refused = repo.commit_with(
        &CommitRequest {
            message: None,
            all: true,
            amend: false,
            allow_empty: false,
        },
        &Silent,
    );
    assert!(
        matches!(refused, Err(RepoError::MessageRequired)),
        "{refused:?}"
    );
    assert_eq!(repo.head_commit().unwrap(), Some(second));
    // Amend without a message keeps the message and the parents.
    let Committed::Made { id: amended, .. } = repo
        .commit_with(
            &CommitRequest {
                message: None,
                all: false,
                amend: true,
                allow_empty: false,
            },
            &Silent,
        )
        .unwrap()
    else {
        panic!()
    };
    let c = repo.commit(&amended).unwrap();
    assert_eq!(
        (c.message.as_str(), c.parents.clone()),
        ("second", vec![id])
    );
}

#[test]
fn a_branch_only_a_remote_has_is_made_from_it_and_follows_it_unless_several_have_it() {
    let t = tempfile::tempdir().unwrap();
    let mut repo = repo_at(t.path());
    std::fs::write(t.path().join("a.txt"), "one\n").unwrap();
    add_all(&repo);
    let Committed::Made { id, .. } = commit(&repo, "first", false) else {
        panic!()
    };
    assert!(
        matches!(repo.switch_to_branch("feature", &Silent), Err(RepoError::NoSuchBranch { name }) if name == "feature")
    );
    repo.create_ref("refs/remotes/origin/feature", id, "test")
        .unwrap();
    assert_eq!(
        repo.switch_to_branch("feature", &Silent)
            .unwrap()
            .as_deref(),
        Some("origin/feature")
    );
    assert_eq!(
        repo.head().unwrap(),
        Head::Branch("refs/heads/feature".into())
    );
    let up = repo
        .config
        .upstreams
        .get("feature")
        .expect("the new branch follows the remote's");
    assert_eq!(
        (up.remote.as_str(), up.branch.as_str()),
        ("origin", "feature")
    );
    // A branch that exists here is switched to; nothing is made.
    assert_eq!(repo.switch_to_branch("main", &Silent).unwrap(), None);
    repo.create_ref("refs/remotes/origin/topic", id, "test")
        .unwrap();
    repo.create_ref("refs/remotes/nas/topic", id, "test")
        .unwrap();
    match repo.switch_to_branch("topic", &Silent) {
        Err(RepoError::BranchOfSeveralRemotes { name, mut remotes }) => {
            remotes.sort();
            assert_eq!(
                (name.as_str(), remotes),
                (
                    "topic",
                    vec!["nas/topic".to_string(), "origin/topic".to_string()]
                )
            );
        }
        other => panic!("expected a refusal naming both remotes, got {other:?}"),
    }
    assert!(
        repo.refs.get("refs/heads/topic").unwrap().is_none(),
        "a refused switch makes no branch"
    );
}

#[test]
fn rev_path_names_a_committed_or_staged_version() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_at(t.path());
    std::fs::create_dir(t.path().join("d")).unwrap();
    std::fs::write(t.path().join("d/a.txt"), "one\n").unwrap();
    add_all(&repo);
    let Committed::Made { id, .. } = commit(&repo, "first", false) else {
        panic!()
    };
    std::fs::write(t.path().join("d/a.txt"), "two\n").unwrap();
    add_all(&repo);
    let (commit, committed) = repo.history().entry_at("HEAD", "d/a.txt").unwrap();
    let (staged_from, staged) = repo.history().entry_at("", "/d/a.txt/").unwrap();
    assert_eq!((commit, staged_from), (Some(id), Some(id)));
    assert_eq!((committed.size, staged.size), (4, 4));
    assert_ne!(committed.id, staged.id);
    assert!(
        matches!(repo.history().entry_at("HEAD", "nope"), Err(RepoError::PathNotInRevision { path, rev }) if path == "nope" && rev == "HEAD")
    );
    assert!(
        matches!(repo.history().entry_at("", "nope"), Err(RepoError::PathNotStaged { path }) if path == "nope")
    );
}

#[test]
fn a_diff_shows_small_text_as_text_and_describes_the_rest() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_at(t.path());
    let big_text = "line\n".repeat(300_000); // 1.5 MB: over the line-diff limit
    let mut wav_like = b"RIFF".to_vec();
    wav_like.extend([0u8; 64]);
    for (name, content) in [
        ("t.txt", "hello\n".as_bytes()),
        ("big.txt", big_text.as_bytes()),
        ("b.bin", &wav_like[..]),
    ] {
        std::fs::write(t.path().join(name), content).unwrap();
    }
    add_all(&repo);
    commit(&repo, "first", false);
    let entry = |p: &str| -> FlatEntry { repo.history().entry_at("HEAD", p).unwrap().1 };
    assert_eq!(
        repo.history()
            .diff_side(Some(&entry("t.txt")), None)
            .unwrap(),
        DiffSide::Text("hello\n".into())
    );
    assert_eq!(
        repo.history().diff_side(None, None).unwrap(),
        DiffSide::Text(String::new()),
        "a side where the file is not is empty text"
    );
    assert!(matches!(
        repo.history()
            .diff_side(Some(&entry("big.txt")), None)
            .unwrap(),
        DiffSide::Binary { .. }
    ));
    assert!(matches!(
        repo.history()
            .diff_side(Some(&entry("b.bin")), None)
            .unwrap(),
        DiffSide::Binary { .. }
    ));
    // The working tree's side is read from the file, not the store.
    std::fs::write(t.path().join("t.txt"), "changed\n").unwrap();
    assert_eq!(
        repo.history()
            .diff_side(Some(&entry("t.txt")), Some(b"t.txt"))
            .unwrap(),
        DiffSide::Text("changed\n".into())
    );
}

#[test]
fn fsck_finds_a_whole_repository_whole_and_counts_a_damaged_dirstate() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_at(t.path());
    std::fs::write(t.path().join("a.txt"), "one\n").unwrap();
    add_all(&repo);
    commit(&repo, "first", false);
    let found = repo.maintenance().fsck(true, &Silent).unwrap();
    assert_eq!(found.problem_count(), 0, "{:?}", found.problems);
    assert!(
        found.report.objects_checked >= 3,
        "a commit, a tree and a file at least"
    );
    let dirstate = t.path().join(".dmv/dirstate");
    let mut bytes = std::fs::read(&dirstate).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&dirstate, bytes).unwrap();
    let found = repo.maintenance().fsck(false, &Silent).unwrap();
    assert_eq!(found.problem_count(), 1, "{:?}", found.problems);
    assert!(
        found.problems[0].contains("dirstate"),
        "{:?}",
        found.problems
    );
    let stats = repo.maintenance().stats().unwrap();
    assert_eq!((stats.commits, stats.logical_bytes), (1, 4));
}
