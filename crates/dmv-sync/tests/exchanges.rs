//! Clone, push, fetch and sync between replicas over path remotes served in
//! this process: what arrives, what is refused and that a refusal moves
//! nothing. dmv-cli's tests/sync.rs keeps what only the binary shows (its
//! words and exit codes), the real transports (ssh, HTTP, object storage),
//! kills and two processes at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dmv_fixtures::{Fleet, Replica};
use dmv_repo::store::ObjectId;
use dmv_repo::{MergeOutcome, RepoError, Repository};
use dmv_sync::{PushOptions, Silent, SyncError, TransportError, Violation};
use dmv_testkit::noise;

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

/// The packs of the repository in `dir`, largest first.
fn packs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.metadata().unwrap().len()));
    v
}

/// What stopped a clone, under the `CloneStopped` around it.
fn stopped_by(e: SyncError) -> SyncError {
    match e {
        SyncError::CloneStopped { cause, .. } => stopped_by(*cause),
        e => e,
    }
}

/// A server does not re-hash what it sends (the receiver does): a damaged
/// chunk in the source's pack stops the clone naming the object, and no
/// commit arrives without all its data.
#[test]
fn a_clone_of_a_damaged_repository_names_the_object_and_stores_nothing() {
    let fleet = Fleet::new();
    let a = fleet.init("a");
    a.write("clip.mov", noise(4 << 20, 3));
    a.commit_all("clip");
    let pack = packs(&a.dir).remove(0);
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[2 << 20] ^= 0x10;
    std::fs::write(&pack, bytes).unwrap();

    let Err(e) = fleet.clone_from("b", &a.dir, "full") else {
        panic!("the clone of a damaged repository went through");
    };
    let id = match stopped_by(e) {
        SyncError::Protocol(Violation::Damaged { id, .. }) => id,
        other => panic!("expected a damaged object, got {other:?}"),
    };
    // The object named is the one a's own check finds damaged.
    let fsck = a.repo.maintenance().fsck(true, &Silent).unwrap();
    assert!(
        fsck.problems.iter().any(|p| p.contains(&id.to_hex())),
        "{id} is not among a's damage: {:?}",
        fsck.problems
    );
    let b = fleet.folder().join("b");
    assert!(
        !b.join("clip.mov").exists(),
        "a damaged file must not be checked out"
    );
    if b.join(".dmv").exists() {
        let repo = Repository::open(&b).unwrap();
        assert_eq!(
            repo.head_commit().unwrap(),
            None,
            "no commit may arrive without all its data"
        );
        let fsck = repo.maintenance().fsck(true, &Silent).unwrap();
        assert!(fsck.problems.is_empty(), "{:?}", fsck.problems);
    }
}

/// A clone from a repository that requires what this build does not know
/// is refused by the serving side, naming the requirement (as a remote
/// that is no repository to this build: the serving side's answer).
#[test]
fn a_clone_of_a_repository_this_dmv_cannot_read_is_refused() {
    let fleet = Fleet::new();
    let a = fleet.init("a");
    a.write("f.txt", "f\n");
    a.commit_all("one");
    let requires = a.dir.join(".dmv/requires");
    let mut list = std::fs::read_to_string(&requires).unwrap();
    list.push_str("packs-v9\n");
    std::fs::write(&requires, list).unwrap();
    let Err(e) = fleet.clone_from("b", &a.dir, "full") else {
        panic!("the clone went through");
    };
    // The serving side says why it serves nothing, as `dmv serve` would.
    match stopped_by(e) {
        SyncError::Transport(TransportError::NotARepository { detail, .. }) => {
            assert!(detail.contains("packs-v9"), "{detail}");
        }
        other => panic!("expected NotARepository, got {other:?}"),
    }
    assert!(!fleet.folder().join("b/f.txt").exists());
}

/// Trees come from other replicas: a name that would lead a checkout out of
/// its place (`..`, a `/`, `.dmv`, an empty name, one name twice) makes the
/// clone fail as a malformed tree, and nothing is written outside the clone.
#[test]
fn a_tree_with_a_name_leading_out_of_the_working_tree_is_refused() {
    use dmv_repo::store::object::{encode, Commit, EntryKind, Signature, TreeEntry, TreeNode};
    use dmv_repo::store::ObjectKind;
    let fleet = Fleet::new();
    let cases: [&[&[u8]]; 6] = [
        &[b".."],
        &[b"../escape.txt"],
        &[b".dmv"],
        &[b".DMV"],
        &[b""],
        &[b"a", b"a"],
    ];
    for (n, names) in cases.iter().enumerate() {
        let evil = fleet.init(&format!("evil{n}"));
        let repo = &evil.repo;
        let mut s = repo.store.begin_write().unwrap();
        let chunk = s.put_object(ObjectKind::Chunk, b"escaped\n").unwrap();
        let inner = s
            .put_object(
                ObjectKind::Tree,
                &encode(&TreeNode::Leaf(vec![TreeEntry {
                    name: b"escape.txt".to_vec(),
                    kind: EntryKind::File,
                    id: chunk,
                    size: 8,
                }])),
            )
            .unwrap();
        let entries = names.iter().map(|name| match *name {
            b".." => TreeEntry {
                name: name.to_vec(),
                kind: EntryKind::Dir,
                id: inner,
                size: 0,
            },
            _ => TreeEntry {
                name: name.to_vec(),
                kind: EntryKind::File,
                id: chunk,
                size: 8,
            },
        });
        let root = s
            .put_object(
                ObjectKind::Tree,
                &encode(&TreeNode::Leaf(entries.collect())),
            )
            .unwrap();
        let who = Signature {
            name: "m".into(),
            email: "m@example.com".into(),
            time: 0,
            tz_minutes: 0,
        };
        let commit = s
            .put_object(
                ObjectKind::Commit,
                &encode(&Commit {
                    tree: root,
                    parents: vec![],
                    author: who.clone(),
                    committer: who,
                    message: "evil".into(),
                }),
            )
            .unwrap();
        s.finish().unwrap();
        drop(s);
        repo.refs
            .update(
                &[dmv_repo::RefUpdate {
                    name: "refs/heads/main".into(),
                    expected: Some(None),
                    new: Some(commit),
                }],
                "test",
                "evil",
            )
            .unwrap();

        let dest = format!("clone{n}");
        let Err(e) = fleet.clone_from(&dest, &evil.dir, "full") else {
            panic!("{names:?}: the clone went through");
        };
        match stopped_by(e) {
            SyncError::Protocol(Violation::Malformed(RepoError::MalformedTree {
                tree, ..
            })) => {
                assert_eq!(tree, root, "{names:?}: the tree named")
            }
            other => panic!("{names:?}: expected MalformedTree, got {other:?}"),
        }
        let dest = fleet.folder().join(&dest);
        assert!(
            !fleet.folder().join("escape.txt").exists() && !dest.join(".dmv/escape.txt").exists(),
            "{names:?}: a file escaped"
        );
        let config = std::fs::read_to_string(dest.join(".dmv/config")).unwrap_or_default();
        assert!(
            !config.contains("escaped"),
            "{names:?}: .dmv was written into"
        );
    }
}

/// Every file and symlink under `root` (not .dmv): bytes or link target,
/// exec bits, whether a link.
#[cfg(unix)]
fn tree_of(root: &Path) -> BTreeMap<String, (Vec<u8>, u32, bool)> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".dmv" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, (target.as_os_str().as_bytes().to_vec(), 0, true));
            } else {
                let exec = meta.permissions().mode() & 0o111;
                out.insert(rel, (std::fs::read(&p).unwrap(), exec, false));
            }
        }
    }
    out
}

/// A clone of many files in nested directories (written on several threads,
/// each taking whole directories): every file, symlink, exec bit and empty
/// file arrives exactly, and nothing else.
#[cfg(unix)]
#[test]
fn a_clone_of_many_files_in_nested_directories_is_exact() {
    use std::os::unix::fs::PermissionsExt;
    let fleet = Fleet::new();
    let a = fleet.init("a");
    for i in 0..40 {
        a.write(&format!("note{i}.txt"), format!("note {i}\n"));
    }
    for d in 0..8 {
        // Files of one directory on both sides of a subdirectory in tree order.
        for i in 0..60 {
            let side = if i % 2 == 0 { "a" } else { "z" };
            a.write(&format!("d{d}/{side}{i}"), format!("{d}/{i}\n"));
            a.write(&format!("d{d}/m/deeper/g{i}"), format!("deeper {d}/{i}\n"));
        }
        a.write(&format!("d{d}/run.sh"), "#!/bin/sh\n");
        std::fs::set_permissions(
            a.dir.join(format!("d{d}/run.sh")),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        a.write(&format!("d{d}/m/empty"), "");
        std::os::unix::fs::symlink("../a0", a.dir.join(format!("d{d}/m/link"))).unwrap();
    }
    a.write("d3/m/deeper/take.mov", noise(3 << 20, 61));
    a.commit_all("many");
    let b = fleet.clone_from("b", &a.dir, "full").unwrap();
    let want = tree_of(&a.dir);
    assert_eq!(want.len(), 40 + 8 * (120 + 3) + 1);
    assert_eq!(
        want.values()
            .filter(|(_, x, link)| *x != 0 && !link)
            .count(),
        8
    );
    assert!(tree_of(&b.dir) == want, "the clone differs from a");
    assert_eq!(
        tip(&b.repo, "refs/heads/main"),
        tip(&a.repo, "refs/heads/main")
    );
    let status = b.repo.status().unwrap();
    assert!(status.staged.is_empty() && status.unstaged.is_empty() && status.untracked.is_empty());
    b.assert_fsck_clean();
}

/// `switch NAME` makes a branch only a remote has, following it; a push
/// sends any revision to a remote branch of another name (`SRC:DST`),
/// deletes one, refuses an empty side, and `push -u` makes the branch
/// follow the one it was pushed to, which a bare pull then merges from.
#[test]
fn switch_makes_a_branch_only_a_remote_has_and_pushes_name_their_branch() {
    let fleet = Fleet::new();
    let mut a = fleet.init("a");
    a.write("notes.txt", "day one\n");
    let day_one = a.commit_all("day one");
    a.repo
        .create_ref("refs/heads/incoming", day_one, "branch: created")
        .unwrap();
    a.repo.switch_to_branch("incoming", &Silent).unwrap();
    a.write("card.jpg", "from the card");
    let card = a.commit_all("from the card");
    a.repo.switch_to_branch("main", &Silent).unwrap();

    let mut b = fleet.clone_from("b", &a.dir, "full").unwrap();
    let branches: Vec<String> = (b.repo.refs.list("refs/heads/").unwrap().into_iter())
        .map(|(name, _)| name)
        .collect();
    assert_eq!(branches, ["refs/heads/main"], "only the clone's own branch");
    let upstream = |r: &Replica, branch: &str| {
        (r.repo.config.upstreams.get(branch)).map(|u| format!("{}/{}", u.remote, u.branch))
    };
    assert_eq!(upstream(&b, "main").as_deref(), Some("origin/main"));
    assert_eq!(tip(&b.repo, "refs/remotes/origin/incoming"), Some(card));
    assert_eq!(b.repo.commit(&card).unwrap().message, "from the card");

    let made = b.repo.switch_to_branch("incoming", &Silent).unwrap();
    assert_eq!(made.as_deref(), Some("origin/incoming"));
    assert_eq!(tip(&b.repo, "refs/heads/incoming"), Some(card));
    assert_eq!(b.read("card.jpg").unwrap(), b"from the card");
    assert_eq!(upstream(&b, "incoming").as_deref(), Some("origin/incoming"));
    match b.repo.switch_to_branch("nowhere", &Silent) {
        Err(RepoError::NoSuchBranch { name }) => assert_eq!(name, "nowhere"),
        other => panic!("expected NoSuchBranch, got {other:?}"),
    }
    assert!(tip(&b.repo, "refs/heads/nowhere").is_none());

    // A refspec pushes any revision to a remote branch of another name.
    b.write("pick.jpg", "the pick");
    let pick = b.commit_all("the pick");
    let push = |b: &Replica, spec: &str| {
        let options = PushOptions {
            branches: vec![spec.to_string()],
            ..Default::default()
        };
        push_with(b, &options)
    };
    push(&b, "HEAD:review").unwrap();
    assert_eq!(tip(&a.repo, "refs/heads/review"), Some(pick));
    assert_eq!(tip(&b.repo, "refs/remotes/origin/review"), Some(pick));
    // `:review`, git's way to delete it there.
    let remote = dmv_sync::find_remote(&b.repo, "origin").unwrap();
    let deleted = dmv_sync::delete_remote_branches(
        &b.repo,
        remote.connect_to_push(&b.repo).unwrap().as_mut(),
        Some("origin"),
        &["review".to_string()],
    )
    .unwrap();
    assert_eq!(deleted, [("review".to_string(), pick)]);
    assert_eq!(tip(&a.repo, "refs/heads/review"), None);
    assert_eq!(tip(&b.repo, "refs/remotes/origin/review"), None);
    let a_refs = a.repo.refs.list("refs/").unwrap();
    match push(&b, "main:") {
        Err(SyncError::BadRefspec { spec }) => assert_eq!(spec, "main:"),
        other => panic!("expected BadRefspec, got {other:?}"),
    }
    assert_eq!(a.repo.refs.list("refs/").unwrap(), a_refs, "nothing moved");

    // push -u: the branch follows the one it was pushed to, and a bare pull merges from it.
    b.repo
        .create_ref("refs/heads/edits", pick, "branch: created")
        .unwrap();
    b.repo.switch_to_branch("edits", &Silent).unwrap();
    push(&b, "edits:client-edits").unwrap();
    let set =
        dmv_sync::follow_pushed(&mut b.repo, "origin", &["edits:client-edits".into()]).unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(
        upstream(&b, "edits").as_deref(),
        Some("origin/client-edits")
    );
    b.reopen();
    assert_eq!(
        upstream(&b, "edits").as_deref(),
        Some("origin/client-edits")
    );
    a.reopen();
    assert_eq!(
        a.repo.switch_to_branch("client-edits", &Silent).unwrap(),
        None
    );
    a.write("grade.txt", "graded in a");
    let graded = a.commit_all("grade");
    let (remote, branch) = dmv_sync::pull_source(&b.repo, None, None).unwrap();
    assert_eq!(branch.as_deref(), Some("client-edits"));
    dmv_sync::pull_with(
        &b.repo,
        remote.connect_from(&b.repo).unwrap().as_mut(),
        "origin",
        branch.as_deref(),
        false,
        &Silent,
    )
    .unwrap();
    assert_eq!(b.read("grade.txt").unwrap(), b"graded in a");
    assert_eq!(tip(&b.repo, "refs/heads/edits"), Some(graded));
    b.assert_fsck_clean();
}

/// Three laptops, no hub: each syncs with the next in a ring. A peer's
/// checked-out branch is never moved from outside (what is sent lands in
/// its `refs/remotes/NAME/main`, merged when it next syncs), and after two
/// rounds all three hold one history, every file, and agree where each
/// file's data is.
#[test]
fn three_peers_syncing_in_a_ring_without_a_hub_converge() {
    let fleet = Fleet::new();
    let names = ["laptop-a", "laptop-b", "laptop-c"];
    let first = fleet.init(names[0]);
    first.write("shared.txt", "from the start\n");
    first.commit_all("start");
    let mut peers = vec![first];
    for name in &names[1..] {
        peers.push(fleet.clone_from(name, &peers[0].dir, "full").unwrap());
    }
    let dirs: Vec<PathBuf> = peers.iter().map(|p| p.dir.clone()).collect();
    for (i, p) in peers.iter_mut().enumerate() {
        p.repo
            .update_config(|c| {
                c.replica_name = Some(names[i].to_string());
                Ok::<_, RepoError>(())
            })
            .unwrap();
        p.add_remote("next", &dirs[(i + 1) % 3]);
        p.write(&format!("{}.raw", names[i]), noise(100_000, i as u64));
        p.commit_all(&format!("work on {}", names[i]));
    }
    let main = |p: &Replica| tip(&p.repo, "refs/heads/main").unwrap();
    let b_before = main(&peers[1]);
    peers[0].sync_with("next").unwrap();
    // b's checked-out branch stayed; a's work waits beside it.
    assert_eq!(main(&peers[1]), b_before);
    assert_eq!(
        tip(&peers[1].repo, "refs/remotes/laptop-a/main"),
        Some(main(&peers[0]))
    );
    let offers = peers[1].repo.pending_offers("main").unwrap();
    let offers: Vec<_> = offers.into_iter().map(|o| (o.label, o.commit)).collect();
    assert_eq!(offers, [("laptop-a/main".to_string(), main(&peers[0]))]);
    for round in 0..2 {
        for p in &peers[usize::from(round == 0)..] {
            p.sync_with("next").unwrap();
        }
    }
    let head = main(&peers[0]);
    for (i, p) in peers.iter().enumerate() {
        assert_eq!(main(p), head, "{} differs", names[i]);
        let s = p.repo.status().unwrap();
        assert!(
            s.staged.is_empty() && s.unstaged.is_empty() && s.untracked.is_empty(),
            "{} is not clean",
            names[i]
        );
        for (j, name) in names.iter().enumerate() {
            assert_eq!(
                p.read(&format!("{name}.raw")).unwrap(),
                noise(100_000, j as u64),
                "{}: {name}.raw",
                names[i]
            );
        }
        assert!(
            p.repo.pending_offers("main").unwrap().is_empty(),
            "{}: every offer merged",
            names[i]
        );
        p.assert_fsck_clean();
    }
    // The location logs travelled with the transfers: each knows all three hold a's file.
    for p in &peers {
        let files = p.whereis("laptop-a.raw");
        assert_eq!(files.len(), 1);
        assert_eq!(
            files[0].copies.len(),
            3,
            "{}: {:?}",
            p.name,
            files[0].copies
        );
    }
}

/// A clone stopped during its checkout (files in place, no dirstate, no
/// branch yet, the marker naming its source) resumes when run again: the
/// files already right are kept, a file cut short and one overwritten
/// are written again, and the result is a clean clone. dmv-cli's
/// tests/sync.rs kills a clone and checks the words of its resume.
#[test]
fn a_clone_stopped_during_its_checkout_resumes() {
    let fleet = Fleet::new();
    let a = fleet.init("a");
    a.write("reel.mov", noise(6 << 20, 51));
    for i in 0..50 {
        a.write(&format!("note{i}.txt"), format!("note {i}\n"));
    }
    let head = a.commit_all("reel and notes");
    let b = fleet.clone_from("b", &a.dir, "full").unwrap();

    // As a kill during the checkout leaves it.
    std::fs::remove_file(b.dir.join(".dmv/dirstate")).unwrap();
    let unborn = dmv_repo::RefUpdate {
        name: "refs/heads/main".into(),
        expected: Some(Some(head)),
        new: None,
    };
    b.repo.update_refs(&[unborn], "test", "stopped").unwrap();
    let url = dmv_sync::normalize_url(&a.dir.to_string_lossy()).unwrap();
    std::fs::write(b.dir.join(".dmv/clone-in-progress"), format!("{url}\n")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(b.dir.join("reel.mov"))
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    b.write("note7.txt", "cut");
    drop(b);

    let plan = dmv_sync::ClonePlan::new(dmv_sync::CloneOptions {
        source: a.dir.to_string_lossy().into_owned(),
        directory: Some(fleet.folder().join("b")),
        ..Default::default()
    })
    .unwrap();
    assert!(plan.resuming, "the stopped clone is found");
    let mut remote = plan.spec.connect().unwrap();
    let cloned = plan.run(remote.as_mut(), &Silent).unwrap();
    let b = Replica {
        name: "b".into(),
        dir: fleet.folder().join("b"),
        repo: cloned.repo,
    };
    assert_eq!(tip(&b.repo, "refs/heads/main"), Some(head));
    assert!(b.read("reel.mov").unwrap() == noise(6 << 20, 51));
    for i in 0..50 {
        let note = b.read(&format!("note{i}.txt")).unwrap();
        assert_eq!(note, format!("note {i}\n").as_bytes(), "note{i}.txt");
    }
    let status = b.repo.status().unwrap();
    assert!(status.is_clean(), "the resumed clone is clean: {status:?}");
    assert!(!b.dir.join(".dmv/clone-in-progress").exists());
    b.assert_fsck_clean();
}
