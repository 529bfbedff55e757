//! Clone, push, fetch and sync between replicas over path remotes served in
//! this process: what arrives, what is refused and that a refusal moves
//! nothing. dmv-cli's tests/sync.rs keeps what only the binary shows (its
//! words and exit codes), the real transports (ssh, HTTP, object storage),
//! kills and two processes at once.

use dmv_fixtures::{Fleet, Replica};
use dmv_repo::store::ObjectId;
use dmv_repo::MergeOutcome;
use dmv_sync::{PushOptions, Silent, SyncError};

fn tip(repo: &dmv_repo::Repository, name: &str) -> Option<ObjectId> {
    repo.refs.get(name).unwrap()
}

fn push_with(r: &Replica, options: &PushOptions) -> Result<dmv_sync::Pushed, SyncError> {
    let remote = dmv_sync::find_remote(&r.repo, "origin")?;
    let mut connection = remote.connect_to_push(&r.repo)?;
    dmv_sync::push(
        &r.repo,
        connection.as_mut(),
        Some("origin"),
        options,
        &Silent,
    )
}

fn sync(r: &Replica) -> dmv_sync::Synced {
    let remote = dmv_sync::find_remote(&r.repo, "origin").unwrap();
    let mut connection = remote.connect_to_push(&r.repo).unwrap();
    dmv_sync::sync(&r.repo, connection.as_mut(), "origin", &Silent).unwrap()
}

/// Bytes that look random (a raw photo): no two seeds share a chunk.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_clone_is_exact_and_pushes_are_checked_against_what_was_fetched() {
    let fleet = Fleet::new();
    let a = fleet.full("a");
    a.write("shoot/raw/1.cr3", noise(3 << 20, 1));
    a.write("notes.txt", "day one\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink("notes.txt", a.dir.join("latest")).unwrap();
    a.commit_all("day one");
    a.push().unwrap();
    let b = fleet.full("b");
    assert_eq!(b.read("shoot/raw/1.cr3").unwrap(), noise(3 << 20, 1));
    #[cfg(unix)]
    assert_eq!(
        std::fs::read_link(b.dir.join("latest")).unwrap(),
        std::path::Path::new("notes.txt")
    );
    let clean = b.repo.status().unwrap();
    assert!(clean.staged.is_empty() && clean.unstaged.is_empty() && clean.untracked.is_empty());

    // b pushes a change; a fetches and sees it on origin/main.
    b.write("notes.txt", "day one, edited in b\n");
    b.commit_all("edit in b");
    b.push().unwrap();
    a.fetch().unwrap();
    assert_eq!(
        tip(&a.repo, "refs/remotes/origin/main"),
        tip(&b.repo, "refs/heads/main")
    );

    // a diverged: a plain push is refused; nothing moves.
    a.write("other.txt", "from a\n");
    a.commit_all("a's own work");
    let hub_before = tip(&fleet.hub(), "refs/heads/main");
    let refused = a.push().unwrap_err();
    assert!(
        matches!(refused, SyncError::NotFastForward { .. }),
        "{refused}"
    );
    assert_eq!(tip(&fleet.hub(), "refs/heads/main"), hub_before);

    // By force with a stale lease: refused too; after a fetch it replaces.
    b.write("third.txt", "b again\n");
    b.commit_all("b again");
    b.push().unwrap();
    let force = PushOptions {
        force: true,
        ..Default::default()
    };
    let stale = push_with(&a, &force).unwrap_err();
    assert!(matches!(stale, SyncError::LeaseBroken { .. }), "{stale}");
    assert_eq!(
        tip(&fleet.hub(), "refs/heads/main"),
        tip(&b.repo, "refs/heads/main")
    );
    a.fetch().unwrap();
    push_with(&a, &force).unwrap();
    assert_eq!(
        tip(&fleet.hub(), "refs/heads/main"),
        tip(&a.repo, "refs/heads/main")
    );
    for r in [&a, &b] {
        r.assert_fsck_clean();
    }
}

#[test]
fn a_push_to_the_checked_out_branch_of_a_working_tree_is_refused() {
    let fleet = Fleet::new();
    let a = fleet.full("a");
    a.write("f.txt", "f\n");
    a.commit_all("one");
    a.push().unwrap();
    let mut b = fleet.full("b");
    let peer = dmv_repo::RemoteConfig {
        url: a.dir.to_string_lossy().into_owned(),
        ..Default::default()
    };
    dmv_sync::add_remote(&mut b.repo, "peer", peer).unwrap();
    b.write("g.txt", "g\n");
    b.commit_all("two");
    let a_main = tip(&a.repo, "refs/heads/main");
    let remote = dmv_sync::find_remote(&b.repo, "peer").unwrap();
    let mut connection = remote.connect_to_push(&b.repo).unwrap();
    let options = PushOptions::default();
    let refused = dmv_sync::push(
        &b.repo,
        connection.as_mut(),
        Some("peer"),
        &options,
        &Silent,
    )
    .unwrap_err();
    assert!(
        refused.to_string().contains("checked-out branch"),
        "{refused}"
    );
    assert_eq!(tip(&a.repo, "refs/heads/main"), a_main);
    b.reopen();
    a.assert_fsck_clean();
}

/// A sync merges what the hub has and sends the merge; the other side
/// fast-forwards to it. The same file changed on both sides stops the
/// sync at the merge, and nothing is pushed.
#[test]
fn a_sync_merges_then_pushes_and_stops_on_conflicts() {
    let fleet = Fleet::new();
    let a = fleet.full("a");
    a.write("shared.raw", noise(2 << 20, 5));
    a.commit_all("first");
    a.push().unwrap();
    let b = fleet.full("b");

    a.write("from-a.txt", "a\n");
    a.commit_all("a's work");
    a.push().unwrap();
    b.write("from-b.txt", "b\n");
    b.commit_all("b's work");
    let synced = sync(&b);
    let pulled = synced.pulled.expect("a pull");
    let MergeOutcome::Merged(merge) = pulled.merge else {
        panic!("a merge commit was expected, not {:?}", pulled.merge);
    };
    assert!(synced.pushed.is_some());
    assert_eq!(
        tip(&fleet.hub(), "refs/heads/main"),
        Some(merge),
        "the merge was pushed"
    );
    assert_eq!(tip(&b.repo, "refs/remotes/origin/main"), Some(merge));
    let synced = sync(&a);
    assert_eq!(
        synced.pulled.unwrap().merge,
        MergeOutcome::FastForward(merge)
    );
    assert_eq!(tip(&a.repo, "refs/heads/main"), Some(merge));
    for path in ["shared.raw", "from-a.txt", "from-b.txt"] {
        assert_eq!(a.read(path), b.read(path), "{path}");
    }

    a.write("from-a.txt", "a again\n");
    a.commit_all("a edits");
    a.push().unwrap();
    b.write("from-a.txt", "b's take\n");
    b.commit_all("b edits");
    let hub = tip(&fleet.hub(), "refs/heads/main");
    let synced = sync(&b);
    let merge = synced.pulled.expect("a pull").merge;
    assert!(matches!(merge, MergeOutcome::Conflicts(_)), "{merge:?}");
    assert!(synced.pushed.is_none(), "nothing pushed");
    assert_eq!(tip(&fleet.hub(), "refs/heads/main"), hub);
    a.assert_fsck_clean();
}
