//! The negotiation against an in-memory remote: what a push or fetch sends
//! is exactly what the other side lacks, counted object by object.

use dmv_fixtures::commit_all;
use dmv_testkit::noise;

use dmv_repo::store::ChunkParams;
use dmv_repo::{Repository, Tally};
use dmv_sync::TransportError;
use dmv_sync::{MemoryRemote, PushOptions, Remote, Silent, SyncError};

/// Objects reachable from the repository's refs and HEAD.
fn reachable(repo: &Repository) -> u64 {
    let report = repo
        .store
        .verify_reachable(
            &repo.maintenance().roots().unwrap(),
            false,
            &Tally::silent(),
        )
        .unwrap();
    assert!(report.is_clean());
    report.objects_checked
}

/// A repository with photos in folders and a few commits.
fn studio(dir: &std::path::Path) -> Repository {
    let repo = Repository::init(dir, ChunkParams::default()).unwrap();
    for folder in 0..3 {
        std::fs::create_dir_all(dir.join(format!("day{folder}"))).unwrap();
        for photo in 0..4 {
            std::fs::write(
                dir.join(format!("day{folder}/img{photo}.raw")),
                noise(200_000 + photo as usize * 50_000, folder * 10 + photo + 1),
            )
            .unwrap();
        }
    }
    commit_all(&repo, "first");
    repo
}

#[test]
fn push_sends_exactly_what_the_remote_lacks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("studio");
    let repo = studio(&dir);
    let mut remote = MemoryRemote::new(repo.config.chunking);

    let pushed =
        dmv_sync::push(&repo, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    let first = reachable(&repo);
    assert_eq!(pushed.stats.objects, first);
    assert_eq!(
        (
            remote.traffic.objects_received,
            remote.traffic.objects_stored
        ),
        (first, first),
        "every object once"
    );
    assert_eq!(
        remote.refs().get("refs/heads/main").copied(),
        repo.head_commit().unwrap()
    );

    // Nothing new: no upload at all.
    let again = dmv_sync::push(&repo, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    assert!(again.updated.is_empty() && again.up_to_date == ["main"]);
    assert_eq!(remote.traffic.put_calls, 1);

    // One photo edited in one folder: the new commit, the trees on its path
    // and the photo's new objects, nothing of the other folders.
    let mut photo = std::fs::read(dir.join("day1/img2.raw")).unwrap();
    photo[1000..1100].copy_from_slice(&noise(100, 99));
    std::fs::write(dir.join("day1/img2.raw"), photo).unwrap();
    commit_all(&repo, "retouch");
    let new_objects = reachable(&repo) - first;
    let before = remote.traffic;
    let pushed =
        dmv_sync::push(&repo, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    assert_eq!(
        remote.traffic.objects_received - before.objects_received,
        new_objects
    );
    assert_eq!(pushed.stats.objects, new_objects);
    assert!(
        new_objects < first / 2,
        "only the edited path travels: {new_objects} of {first}"
    );
    assert_eq!(remote.object_ids().len() as u64, reachable(&repo));
}

#[test]
fn fetch_asks_only_for_new_objects_and_a_cut_leaves_no_ref_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let source = studio(&tmp.path().join("studio"));
    let mut remote = MemoryRemote::new(source.config.chunking);
    dmv_sync::push(&source, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    let all = reachable(&source);

    // Cut half way: no ref moves, what landed is sound, and a retry completes.
    let replica = Repository::init(&tmp.path().join("replica"), source.config.chunking).unwrap();
    remote.cut_after(Some(all / 2));
    let cut = dmv_sync::fetch(&replica, &mut remote, "origin", &Silent).unwrap_err();
    assert!(
        matches!(cut, SyncError::Transport(TransportError::Disconnected(_))),
        "{cut}"
    );
    assert_eq!(replica.refs.get("refs/remotes/origin/main").unwrap(), None);
    assert!(replica
        .store
        .verify_reachable(
            &replica.maintenance().roots().unwrap(),
            false,
            &Tally::silent()
        )
        .unwrap()
        .is_clean());
    remote.cut_after(None);
    let fetched = dmv_sync::fetch(&replica, &mut remote, "origin", &Silent).unwrap();
    assert_eq!(fetched.updated.len(), 1);
    assert_eq!(
        replica.refs.get("refs/remotes/origin/main").unwrap(),
        source.head_commit().unwrap()
    );
    let tip = source.head_commit().unwrap().unwrap();
    assert_eq!(
        replica
            .store
            .verify_reachable(&[tip], false, &Tally::silent())
            .unwrap()
            .objects_checked,
        all
    );

    // A new commit upstream: the fetch gets that commit's new objects only.
    let dir = tmp.path().join("studio");
    std::fs::write(dir.join("day2/new.raw"), noise(300_000, 77)).unwrap();
    commit_all(&source, "one more");
    dmv_sync::push(&source, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    let new_objects = reachable(&source) - all;
    let before = remote.traffic.objects_sent;
    let fetched = dmv_sync::fetch(&replica, &mut remote, "origin", &Silent).unwrap();
    assert_eq!(fetched.stats.objects, new_objects);
    assert_eq!(
        remote.traffic.objects_sent - before,
        new_objects,
        "nothing the replica had was sent"
    );

    // Fetching again sends nothing.
    let before = remote.traffic;
    let fetched = dmv_sync::fetch(&replica, &mut remote, "origin", &Silent).unwrap();
    assert!(fetched.updated.is_empty());
    assert_eq!(
        (remote.traffic.objects_sent, remote.traffic.get_calls),
        (before.objects_sent, before.get_calls)
    );
}

#[test]
fn a_ref_moved_by_someone_else_during_a_push_fails_the_push_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = studio(&tmp.path().join("studio"));
    let mut remote = MemoryRemote::new(repo.config.chunking);
    dmv_sync::push(&repo, &mut remote, None, &PushOptions::default(), &Silent).unwrap();
    let first = repo.head_commit().unwrap();
    std::fs::write(tmp.path().join("studio/extra.txt"), "x").unwrap();
    commit_all(&repo, "second");
    // The remote's ref as the push saw it, then moved away (to nothing) before the swap.
    let refs = remote.list_refs().unwrap();
    assert_eq!(refs.refs.len(), 1);
    remote.set_ref("refs/heads/main", None);
    let updates = vec![dmv_sync::PushRef {
        name: "refs/heads/main".into(),
        expected: first,
        new: repo.head_commit().unwrap(),
    }];
    let err = dmv_sync::send_objects(&repo, &mut remote, &updates, &[first.unwrap()], &Silent)
        .unwrap_err();
    assert!(
        matches!(&err, SyncError::Rejected { name, found: None } if name == "refs/heads/main"),
        "{err}"
    );
    assert_eq!(
        remote.refs().get("refs/heads/main"),
        None,
        "the ref was not set"
    );
}
