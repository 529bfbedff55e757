//! The operations a second front end (a web UI, watch mode) would call,
//! called in-process: clone, commit, push, pull and sync between three
//! replicas without the `dmv` binary. Path remotes are served by a thread of
//! this test, the library's default (`LocalServer::InProcess`): a child
//! process would start this test binary as a server and fail, so passing
//! proves no binary was needed, including by the calls that connect to
//! remotes themselves (whereis).

use dmv_fixtures::commit_all;
use dmv_testkit::noise;

use std::path::Path;

use dmv_repo::store::ChunkParams;
use dmv_repo::{MergeOutcome, RemoteConfig, Repository, Tally};
use dmv_sync::{CloneOptions, ClonePlan, LocalServer, NamedRemote, PushOptions, Silent, SyncError};

fn connect(repo: &Repository) -> (NamedRemote, Box<dyn dmv_sync::Remote>) {
    let remote = dmv_sync::find_remote(repo, "origin").unwrap();
    assert_eq!(
        remote.spec.local_server,
        LocalServer::InProcess,
        "the library's default"
    );
    let connection = remote.connect_to_push(repo).unwrap();
    (remote, connection)
}

fn push(repo: &Repository, options: &PushOptions) -> Result<dmv_sync::Pushed, SyncError> {
    let (_, mut remote) = connect(repo);
    dmv_sync::push(repo, remote.as_mut(), Some("origin"), options, &Silent)
}

fn pull(repo: &Repository) -> dmv_sync::Pulled {
    let (_, mut remote) = connect(repo);
    dmv_sync::pull(repo, remote.as_mut(), "origin", None, &Silent).unwrap()
}

fn same_files(a: &Path, b: &Path, files: &[&str]) {
    for f in files {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn clone_commit_push_pull_and_sync_in_process() {
    let tmp = tempfile::tempdir().unwrap();
    let (studio_dir, server_dir, laptop_dir) = (
        tmp.path().join("studio"),
        tmp.path().join("server"),
        tmp.path().join("laptop"),
    );

    // A studio with a shoot, and a bare server it pushes to.
    let mut studio = Repository::init(&studio_dir, ChunkParams::default()).unwrap();
    std::fs::create_dir_all(studio_dir.join("raw")).unwrap();
    std::fs::write(studio_dir.join("raw/a.cr3"), noise(3 << 20, 1)).unwrap();
    std::fs::write(studio_dir.join("notes.txt"), "day one\n").unwrap();
    commit_all(&studio, "day one");
    Repository::init_with(&server_dir, ChunkParams::default(), true).unwrap();
    dmv_sync::add_remote(
        &mut studio,
        "origin",
        RemoteConfig {
            url: server_dir.to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    let pushed = push(&studio, &PushOptions::default()).unwrap();
    assert_eq!(pushed.updated.len(), 1);
    assert!(
        pushed.stats.chunk_bytes >= 3 << 20,
        "the photo's content was sent: {:?}",
        pushed.stats
    );

    // A laptop clones the server.
    let plan = ClonePlan::new(CloneOptions {
        source: server_dir.to_string_lossy().into_owned(),
        directory: Some(laptop_dir.clone()),
        ..Default::default()
    })
    .unwrap();
    assert!(!plan.resuming);
    let mut remote = plan.spec.connect().unwrap();
    let cloned = plan.run(remote.as_mut(), &Silent).unwrap();
    drop(remote);
    assert_eq!(cloned.head_branch, "main");
    assert!(!cloned.empty);
    same_files(&studio_dir, &laptop_dir, &["raw/a.cr3", "notes.txt"]);
    let laptop = cloned.repo;
    assert!(laptop.status().unwrap().is_clean());

    // The laptop edits and pushes; the studio pulls a fast-forward.
    std::fs::write(laptop_dir.join("notes.txt"), "day one, retouched\n").unwrap();
    commit_all(&laptop, "retouch notes");
    push(&laptop, &PushOptions::default()).unwrap();
    let pulled = pull(&studio);
    assert_eq!(
        pulled.merge,
        MergeOutcome::FastForward(laptop.head_commit().unwrap().unwrap())
    );
    same_files(&studio_dir, &laptop_dir, &["raw/a.cr3", "notes.txt"]);

    // Both change different files; the laptop pushes first, so the studio's
    // push is refused (not a fast-forward), and a forced push without a fetch
    // is refused too (the lease: the remote moved since the studio looked).
    std::fs::write(laptop_dir.join("raw/b.cr3"), noise(1 << 20, 2)).unwrap();
    commit_all(&laptop, "second photo");
    push(&laptop, &PushOptions::default()).unwrap();
    std::fs::write(studio_dir.join("shotlist.txt"), "harbour\n").unwrap();
    commit_all(&studio, "shot list");
    let refused = push(&studio, &PushOptions::default()).unwrap_err();
    assert!(
        matches!(&refused, SyncError::NotFastForward { branch } if branch == "main"),
        "{refused}"
    );
    let refused = push(
        &studio,
        &PushOptions {
            force: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(&refused, SyncError::LeaseBroken { branch } if branch == "main"),
        "{refused}"
    );

    // Sync: pull (a real merge) then push the merge.
    let (_, mut remote) = connect(&studio);
    let synced = dmv_sync::sync(&studio, remote.as_mut(), "origin", &Silent).unwrap();
    drop(remote);
    let pulled = synced.pulled.expect("pulled");
    let MergeOutcome::Merged(merge) = pulled.merge else {
        panic!("expected a merge commit, got {:?}", pulled.merge)
    };
    assert_eq!(
        synced
            .pushed
            .expect("pushed after a clean merge")
            .updated
            .len(),
        1
    );
    assert_eq!(studio.commit(&merge).unwrap().parents.len(), 2);

    // The laptop pulls the merge: all three replicas hold one history.
    let pulled = pull(&laptop);
    assert_eq!(pulled.merge, MergeOutcome::FastForward(merge));
    same_files(
        &studio_dir,
        &laptop_dir,
        &["raw/a.cr3", "raw/b.cr3", "notes.txt", "shotlist.txt"],
    );
    let server = Repository::open(&server_dir).unwrap();
    assert_eq!(server.refs.get("refs/heads/main").unwrap(), Some(merge));
    assert_eq!(
        laptop.refs.get("refs/remotes/origin/main").unwrap(),
        Some(merge)
    );
    assert!(studio.status().unwrap().is_clean() && laptop.status().unwrap().is_clean());
    let report = server
        .store
        .verify_reachable(
            &server.maintenance().roots().unwrap(),
            false,
            &Tally::silent(),
        )
        .unwrap();
    assert!(report.is_clean());
    // A call that reaches the remotes by itself: the server holds the laptop's photo, asked live.
    let mut held = Vec::new();
    dmv_sync::whereis(
        &laptop,
        &laptop.head_tree().unwrap().unwrap(),
        &[b"raw/b.cr3".to_vec()],
        &mut |f| {
            held.push(f.copies.iter().filter(|c| c.reachable && !c.here).count());
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(held, vec![1]);
}

/// A server keeps annotated tags under `refs/tags/`: a client asking for a
/// branch to hold a tag object is refused, and nothing moves.
#[test]
fn a_branch_may_not_hold_an_annotated_tag() {
    let tmp = tempfile::tempdir().unwrap();
    let (studio_dir, server_dir) = (tmp.path().join("studio"), tmp.path().join("server"));
    let mut studio = Repository::init(&studio_dir, ChunkParams::default()).unwrap();
    std::fs::write(studio_dir.join("notes.txt"), "day one\n").unwrap();
    commit_all(&studio, "day one");
    let commit = studio.head_commit().unwrap().unwrap();
    let (tag, _) = studio
        .history()
        .create_annotated_tag("v1", commit, "Release\n", false)
        .unwrap();
    assert_eq!(studio.peel(&tag).unwrap(), commit);
    Repository::init_with(&server_dir, ChunkParams::default(), true).unwrap();
    dmv_sync::add_remote(
        &mut studio,
        "origin",
        RemoteConfig {
            url: server_dir.to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    let pushed = push(
        &studio,
        &PushOptions {
            tags: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(pushed.updated.len(), 2, "{pushed:?}");
    let server = Repository::open(&server_dir).unwrap();
    assert_eq!(server.refs.get("refs/tags/v1").unwrap(), Some(tag));

    let (_, mut remote) = connect(&studio);
    let wrong = dmv_sync::protocol::WireRefUpdate {
        name: "refs/heads/tagged".into(),
        old: None,
        new: Some(tag),
    };
    let err = remote
        .update_refs(vec![wrong], "studio", "push")
        .unwrap_err();
    assert!(
        err.to_string().ends_with(&format!("{tag} is not a commit")),
        "{err}"
    );
    assert_eq!(server.refs.get("refs/heads/tagged").unwrap(), None);
}

/// Folders each fine alone that make a path past 4,096 bytes together: a
/// server took such a push, and every later clone stopped at its checkout.
/// The ref update naming it is refused, whatever sent the objects, and a
/// path of exactly 4,096 bytes still lands.
#[test]
fn a_push_holding_a_path_no_file_system_holds_is_refused() {
    use dmv_repo::store::object::{encode, EntryKind, TreeEntry, TreeNode};
    use dmv_repo::store::ObjectKind;
    let tmp = tempfile::tempdir().unwrap();
    let (studio_dir, server_dir) = (tmp.path().join("studio"), tmp.path().join("server"));
    let mut studio = Repository::init(&studio_dir, ChunkParams::default()).unwrap();
    std::fs::write(studio_dir.join("notes.txt"), "day one\n").unwrap();
    commit_all(&studio, "day one");
    Repository::init_with(&server_dir, ChunkParams::default(), true).unwrap();
    dmv_sync::add_remote(
        &mut studio,
        "origin",
        RemoteConfig {
            url: server_dir.to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    push(&studio, &PushOptions::default()).unwrap();
    let server = Repository::open(&server_dir).unwrap();
    let main = server.refs.get("refs/heads/main").unwrap().unwrap();
    // A commit on main whose tree holds `d…/d…/…/f`, 15 folders of a
    // 255-byte name under one of `top` bytes: each a name a tree may hold,
    // the path 3,842 + `top` bytes.
    let commit_with_path = |top: usize| {
        let mut s = server.store.begin_write().unwrap();
        let file = s.put_object(ObjectKind::Chunk, b"deep").unwrap();
        let leaf = |name: Vec<u8>, kind, id, size| {
            encode(&TreeNode::Leaf(vec![TreeEntry {
                name,
                kind,
                id,
                size,
            }]))
        };
        let mut child = s
            .put_object(
                ObjectKind::Tree,
                &leaf(vec![b'f'], EntryKind::File, file, 4),
            )
            .unwrap();
        for depth in 0..16 {
            let name = vec![b'd'; if depth == 15 { top } else { 255 }];
            child = s
                .put_object(ObjectKind::Tree, &leaf(name, EntryKind::Dir, child, 4))
                .unwrap();
        }
        let commit = server
            .write_commit(&mut s, child, vec![main], "deep")
            .unwrap();
        s.finish().unwrap();
        commit
    };
    let (too_long, at_the_bound) = (commit_with_path(255), commit_with_path(254));
    // Connected after the objects are in: as a push's upload would have left them.
    let (_, mut remote) = connect(&studio);
    let update = dmv_sync::protocol::WireRefUpdate {
        name: "refs/heads/main".into(),
        old: Some(main),
        new: Some(too_long),
    };
    let err = remote
        .update_refs(vec![update.clone()], "studio", "push")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a path of more than 4096 bytes") && !err.contains('\n'),
        "{err}"
    );
    assert_eq!(
        server.refs.get("refs/heads/main").unwrap(),
        Some(main),
        "nothing moved"
    );
    let new_branch = dmv_sync::protocol::WireRefUpdate {
        name: "refs/heads/side".into(),
        old: None,
        new: Some(too_long),
    };
    assert!(
        remote
            .update_refs(vec![new_branch], "studio", "push")
            .is_err(),
        "nor as a new branch"
    );
    // A tag of it is refused the same way.
    let tag = dmv_sync::protocol::WireRefUpdate {
        name: "refs/tags/deep".into(),
        old: None,
        new: Some(too_long),
    };
    assert!(remote.update_refs(vec![tag], "studio", "push").is_err());
    assert_eq!(
        server.refs.list("refs/").unwrap().len(),
        1,
        "only main, where it was"
    );

    let update = dmv_sync::protocol::WireRefUpdate {
        name: "refs/heads/main".into(),
        old: Some(main),
        new: Some(at_the_bound),
    };
    remote.update_refs(vec![update], "studio", "push").unwrap();
    assert_eq!(
        server.refs.get("refs/heads/main").unwrap(),
        Some(at_the_bound)
    );
}

/// Files uploaded to a server (the web UI's uploads) become one commit on
/// a branch under a push's rules: a writer that moved the branch meanwhile
/// keeps their commit, a path changed since the uploader saw it is refused,
/// someone else's lock is respected, and a read-only caller writes nothing.
#[test]
fn uploaded_files_commit_under_a_push_rules() {
    use dmv_sync::{commit_uploaded, Caller, UploadCommit, UploadedFile};
    let tmp = tempfile::tempdir().unwrap();
    let (hub_dir, work_dir, staged) = (
        tmp.path().join("hub"),
        tmp.path().join("work"),
        tmp.path().join("staged"),
    );
    std::fs::create_dir_all(&staged).unwrap();
    let hub = Repository::init_with(&hub_dir, ChunkParams::default(), true).unwrap();
    let stage = |name: &str, bytes: &[u8]| {
        let path = staged.join(name);
        std::fs::write(&path, bytes).unwrap();
        UploadedFile {
            name: name.to_string(),
            staged: path,
        }
    };
    let al = Caller {
        may_write: true,
        user: Some("al".into()),
        admin: false,
        ..Caller::default()
    };
    let author = dmv_repo::store::object::Signature {
        name: "al".into(),
        email: String::new(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let upload = |caller: &Caller, seen, folder: &str, files: &[UploadedFile]| {
        commit_uploaded(
            &hub,
            caller,
            &UploadCommit {
                branch: "main",
                seen,
                folder,
                files,
                message: "from the phone",
                author: author.clone(),
            },
        )
    };
    let file_at = |commit, path: &str| {
        let tree = hub.commit(&commit).unwrap().tree;
        let entry = dmv_repo::tree::lookup(&hub.store, &tree, path.as_bytes())
            .unwrap()
            .unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut hub.store.content_reader_at(&entry.id, 0).unwrap(),
            &mut bytes,
        )
        .unwrap();
        bytes
    };

    // The first upload makes the branch, its folders and a commit without parents.
    let big = noise(3 << 20, 7);
    let first = upload(
        &al,
        None,
        "shoot/day1",
        &[stage("a.jpg", &big), stage("notes.txt", b"n1")],
    )
    .unwrap();
    assert!(!first.unchanged);
    assert_eq!(hub.refs.get("refs/heads/main").unwrap(), Some(first.commit));
    assert!(hub.commit(&first.commit).unwrap().parents.is_empty());
    assert_eq!(file_at(first.commit, "shoot/day1/a.jpg"), big);
    assert_eq!(file_at(first.commit, "shoot/day1/notes.txt"), b"n1");

    // A studio clone pushes meanwhile; an upload from the page that showed `first` lands on top of it.
    let work = dmv_sync::clone(
        CloneOptions {
            source: hub_dir.to_string_lossy().into_owned(),
            directory: Some(work_dir.clone()),
            ..Default::default()
        },
        &Silent,
    )
    .unwrap()
    .repo;
    std::fs::write(work_dir.join("shoot/day1/notes.txt"), "n2").unwrap();
    commit_all(&work, "notes from the studio");
    push(&work, &PushOptions::default()).unwrap();
    let studio = work.head_commit().unwrap().unwrap();
    let second = upload(
        &al,
        Some(first.commit),
        "shoot/day1",
        &[stage("b.jpg", b"b")],
    )
    .unwrap();
    assert_eq!(hub.commit(&second.commit).unwrap().parents, vec![studio]);
    assert_eq!(
        file_at(second.commit, "shoot/day1/notes.txt"),
        b"n2",
        "the studio's change is kept"
    );
    assert_eq!(file_at(second.commit, "shoot/day1/a.jpg"), big);

    // A file the studio changed after the page was shown is not replaced.
    let err = upload(
        &al,
        Some(first.commit),
        "shoot/day1",
        &[stage("notes.txt", b"from the phone")],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("shoot/day1/notes.txt changed on main since you opened this page"),
        "{err}"
    );
    assert_eq!(
        hub.refs.get("refs/heads/main").unwrap(),
        Some(second.commit)
    );

    // Someone else's lock holds; the holder's own upload goes through.
    let mut held = hub.locks().hold_locks().unwrap();
    held.table
        .lock(&["shoot/day1/b.jpg".into()], "bo", "studio", 1)
        .unwrap();
    held.save().unwrap();
    drop(held);
    let err = upload(
        &al,
        Some(second.commit),
        "shoot/day1",
        &[stage("b.jpg", b"b2")],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("shoot/day1/b.jpg") && err.to_string().contains("bo"),
        "{err}"
    );
    let bo = Caller {
        user: Some("bo".into()),
        ..al.clone()
    };
    let third = upload(
        &bo,
        Some(second.commit),
        "shoot/day1",
        &[stage("b.jpg", b"b2")],
    )
    .unwrap();
    assert_eq!(file_at(third.commit, "shoot/day1/b.jpg"), b"b2");

    // The same bytes again change nothing; bad names, a file in the way and a read-only caller are refused.
    assert_eq!(
        upload(
            &bo,
            Some(third.commit),
            "shoot/day1",
            &[stage("b.jpg", b"b2")]
        )
        .unwrap(),
        dmv_sync::Uploaded {
            commit: third.commit,
            unchanged: true
        }
    );
    let reader = Caller {
        may_write: false,
        ..al.clone()
    };
    assert!(
        upload(&reader, Some(third.commit), "", &[stage("c.jpg", b"c")])
            .unwrap_err()
            .to_string()
            .contains("needs write access")
    );
    assert!(upload(
        &al,
        Some(third.commit),
        "shoot/../x",
        &[stage("c.jpg", b"c")]
    )
    .is_err());
    assert!(upload(
        &al,
        Some(third.commit),
        "shoot/day1/a.jpg",
        &[stage("c.jpg", b"c")]
    )
    .unwrap_err()
    .to_string()
    .contains("not a folder"));
    assert!(upload(
        &al,
        Some(third.commit),
        "",
        &[UploadedFile {
            name: ".dmv".into(),
            staged: staged.join("c.jpg")
        }]
    )
    .is_err());
    assert_eq!(hub.refs.get("refs/heads/main").unwrap(), Some(third.commit));
    assert!(
        hub.maintenance()
            .fsck(true, &Silent)
            .unwrap()
            .problem_count()
            == 0
    );
}

/// Four uploads to one folder of one branch at the same moment, from the
/// same page, while gc runs again and again keeping nothing recent whole:
/// every upload lands (a lost compare-and-swap commits again on the new
/// head), nothing another upload committed is lost, and fsck is clean.
#[test]
fn uploads_at_once_under_gc_lose_nothing() {
    use dmv_sync::{commit_uploaded, Caller, UploadCommit, UploadedFile};
    let tmp = tempfile::tempdir().unwrap();
    let (hub_dir, staged) = (tmp.path().join("hub"), tmp.path().join("staged"));
    std::fs::create_dir_all(&staged).unwrap();
    let hub = Repository::init_with(&hub_dir, ChunkParams::default(), true).unwrap();
    let caller = Caller {
        may_write: true,
        user: Some("al".into()),
        admin: false,
        ..Caller::default()
    };
    let author = dmv_repo::store::object::Signature {
        name: "al".into(),
        email: String::new(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let upload = |repo: &Repository, name: &str, bytes: &[u8], seen| {
        let path = staged.join(name);
        std::fs::write(&path, bytes).unwrap();
        let files = [UploadedFile {
            name: name.to_string(),
            staged: path,
        }];
        commit_uploaded(
            repo,
            &caller,
            &UploadCommit {
                branch: "main",
                seen,
                folder: "shoot",
                files: &files,
                message: name,
                author: author.clone(),
            },
        )
    };
    let first = upload(&hub, "first.jpg", b"first", None).unwrap().commit;
    let done = std::sync::atomic::AtomicBool::new(false);
    let gc_runs = std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let repo = Repository::open(&hub_dir).unwrap();
            let policy = dmv_repo::GcPolicy {
                prune_reflog: true,
                store: dmv_repo::store::GcOptions {
                    keep_recent: std::time::Duration::ZERO,
                    ..Default::default()
                },
            };
            let mut runs = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                repo.maintenance().gc(policy, &Silent).unwrap();
                runs += 1;
            }
            runs
        });
        let writers: Vec<_> = (0..4)
            .map(|i| {
                let (hub_dir, upload) = (&hub_dir, &upload);
                s.spawn(move || {
                    let repo = Repository::open(hub_dir).unwrap();
                    upload(&repo, &format!("w{i}.raw"), &noise(2 << 20, i), Some(first)).unwrap()
                })
            })
            .collect();
        for w in writers {
            assert!(!w.join().unwrap().unchanged);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        gc.join().unwrap()
    });
    assert!(gc_runs > 0);
    let hub = Repository::open(&hub_dir).unwrap();
    let tree = hub
        .commit(&hub.refs.get("refs/heads/main").unwrap().unwrap())
        .unwrap()
        .tree;
    for i in 0..4u64 {
        let e = dmv_repo::tree::lookup(&hub.store, &tree, format!("shoot/w{i}.raw").as_bytes())
            .unwrap()
            .unwrap_or_else(|| panic!("w{i} was lost"));
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut hub.store.content_reader_at(&e.id, 0).unwrap(),
            &mut bytes,
        )
        .unwrap();
        assert!(bytes == noise(2 << 20, i), "w{i} changed");
    }
    assert!(
        dmv_repo::tree::lookup(&hub.store, &tree, b"shoot/first.jpg")
            .unwrap()
            .is_some()
    );
    assert_eq!(
        hub.maintenance()
            .fsck(true, &Silent)
            .unwrap()
            .problem_count(),
        0
    );
}

/// The newest word the location log of `repo` has on whether `holder`
/// holds `id`'s data (None: no word).
fn claims(
    repo: &Repository,
    holder: dmv_repo::ReplicaId,
    id: dmv_repo::store::ObjectId,
) -> Option<bool> {
    let log = repo
        .copies()
        .locations_where(|r| r.key == id && r.replica == holder)
        .unwrap();
    log.records.values().next().map(|stamp| stamp.present)
}

fn fetch_origin(repo: &Repository) {
    let mut remote = dmv_sync::find_remote(repo, "origin")
        .unwrap()
        .spec
        .connect()
        .unwrap();
    dmv_sync::fetch(repo, remote.as_mut(), "origin", &Silent).unwrap();
}

/// A laptop drops a photo once a peer confirmed its copy; a desktop that
/// hears only from the hub, and never from the laptop, must not go on
/// believing the laptop holds it. The news travels: the drop tells the
/// peer that confirmed, and the peer's next fetch from the hub tells the
/// hub (a fetch gives back what the hub's log lacked, not only a push).
#[test]
fn a_drop_reaches_a_replica_that_never_spoke_with_the_dropper() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name);
    let mut laptop = Repository::init(&dir("laptop"), ChunkParams::default()).unwrap();
    std::fs::write(dir("laptop").join("photo.jpg"), noise(1 << 20, 7)).unwrap();
    commit_all(&laptop, "one photo");
    Repository::init_with(&dir("hub"), ChunkParams::default(), true).unwrap();
    dmv_sync::add_remote(
        &mut laptop,
        "origin",
        RemoteConfig {
            url: dir("hub").to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    push(&laptop, &PushOptions::default()).unwrap();
    let clone = |name: &str| {
        let plan = ClonePlan::new(CloneOptions {
            source: dir("hub").to_string_lossy().into_owned(),
            directory: Some(dir(name)),
            ..Default::default()
        })
        .unwrap();
        let mut remote = plan.spec.connect().unwrap();
        plan.run(remote.as_mut(), &Silent).unwrap().repo
    };
    let (peer, desktop) = (clone("peer"), clone("desktop"));
    let hub = Repository::open(&dir("hub")).unwrap();
    let photo = laptop
        .copies()
        .availability(
            &laptop.head_tree().unwrap().unwrap(),
            &[b"photo.jpg".to_vec()],
        )
        .unwrap()[0]
        .entry
        .id;
    let dropper = laptop.copies().replica_id().unwrap();
    assert_eq!(
        claims(&desktop, dropper, photo),
        Some(true),
        "the clone learnt of the laptop's copy from the hub"
    );

    // The peer is the laptop's first remote by name: it alone confirms, and is told.
    dmv_sync::add_remote(
        &mut laptop,
        "a-peer",
        RemoteConfig {
            url: dir("peer").to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    let dropped = dmv_sync::drop_files(
        &laptop,
        &dmv_sync::DropOptions {
            paths: vec![b"photo.jpg".to_vec()],
            numcopies: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        (dropped.files, dropped.confirmed_by.clone()),
        (1, vec!["a-peer".to_string()])
    );
    assert_eq!(
        claims(&peer, dropper, photo),
        Some(false),
        "the peer that confirmed was told of the drop"
    );
    assert_eq!(
        claims(&hub, dropper, photo),
        Some(true),
        "the hub has not heard yet"
    );

    // Every replica fetches from the hub: the peer's fetch passes the news on.
    fetch_origin(&peer);
    assert_eq!(
        claims(&hub, dropper, photo),
        Some(false),
        "the peer's fetch told the hub"
    );
    fetch_origin(&desktop);
    assert_eq!(
        claims(&desktop, dropper, photo),
        Some(false),
        "the desktop heard through the hub"
    );
    let mut holders = Vec::new();
    dmv_sync::whereis(
        &desktop,
        &desktop.head_tree().unwrap().unwrap(),
        &[b"photo.jpg".to_vec()],
        &mut |f| {
            holders.extend(f.copies.iter().map(|c| c.replica.clone()));
            Ok(())
        },
    )
    .unwrap();
    holders.sort();
    let mut expected: Vec<String> = [&desktop, &peer, &hub]
        .iter()
        .map(|r| r.copies().replica_id().unwrap().to_string())
        .collect();
    expected.sort();
    assert_eq!(
        holders, expected,
        "whereis names the holders, and not the laptop ({dropper})"
    );
}

/// A server's list of its packs is as old as its connection: a commit
/// another process stored there since (a push from a third replica, the
/// served replica's own fetch) is held, and a client that saw it in the
/// refs and so sent nothing may point a ref at it. Three peers syncing in
/// a ring were refused "the commit was not received" until a later sync.
#[test]
fn a_ref_may_move_to_a_commit_stored_after_the_connection_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name);
    let mut laptop = Repository::init(&dir("laptop"), ChunkParams::default()).unwrap();
    std::fs::write(dir("laptop").join("a.txt"), "a\n").unwrap();
    commit_all(&laptop, "a");
    Repository::init_with(&dir("hub"), ChunkParams::default(), true).unwrap();
    dmv_sync::add_remote(
        &mut laptop,
        "origin",
        RemoteConfig {
            url: dir("hub").to_string_lossy().into_owned(),
            ..Default::default()
        },
    )
    .unwrap();
    push(&laptop, &PushOptions::default()).unwrap();
    // The laptop's connection opens, and the hub side lists its packs.
    let (_, mut early) = connect(&laptop);
    early.list_refs().unwrap();
    // Meanwhile a peer pushes a commit of its own, in a pack of its own.
    let plan = ClonePlan::new(CloneOptions {
        source: dir("hub").to_string_lossy().into_owned(),
        directory: Some(dir("peer")),
        ..Default::default()
    })
    .unwrap();
    let mut remote = plan.spec.connect().unwrap();
    let peer = plan.run(remote.as_mut(), &Silent).unwrap().repo;
    drop(remote);
    std::fs::write(dir("peer").join("b.txt"), "b\n").unwrap();
    commit_all(&peer, "b");
    push(&peer, &PushOptions::default()).unwrap();
    let theirs = peer.head_commit().unwrap().unwrap();
    // On the old connection, a ref to the peer's commit: held there, so taken.
    let update = dmv_sync::protocol::WireRefUpdate {
        name: "refs/heads/copy".into(),
        old: None,
        new: Some(theirs),
    };
    early.update_refs(vec![update], "laptop", "copy").unwrap();
    assert_eq!(
        Repository::open(&dir("hub"))
            .unwrap()
            .refs
            .get("refs/heads/copy")
            .unwrap(),
        Some(theirs)
    );
}
