//! `dmv_sync::repair` (`fsck --repair [--from REMOTE]`) through the
//! library: damaged packs, dirstate and location log are rewritten from
//! what is whole, what the working tree still holds is stored again, and
//! what is nowhere is named by path and commit; a healthy repository is
//! left as it was. dmv-cli's tests/repair.rs keeps the repair killed at a
//! fail point and resumed, and the words the binary prints.

use std::path::{Path, PathBuf};

use dmv_fixtures::{commit_all, Fleet};
use dmv_repo::store::ChunkParams;
use dmv_repo::{ChangeKind, Repository, Silent};
use dmv_testkit::noise;

/// The repository's packs (files ending in `ext`), largest first.
fn packs(d: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.metadata().unwrap().len()));
    v
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

/// The bytes of `path` in the commit `rev` names, as `dmv cat REV:PATH`;
/// when they cannot be read, the error and the bytes given before it.
fn cat(repo: &Repository, rev: &str, path: &str) -> Result<Vec<u8>, (String, Vec<u8>)> {
    let (_, entry) = repo.history().entry_at(rev, path).unwrap();
    let mut bytes = Vec::new();
    match repo.store.write_content(&entry.id, &mut bytes) {
        Ok(_) => Ok(bytes),
        Err(e) => Err((e.to_string(), bytes)),
    }
}

const PATHS: [&str; 3] = ["big.raw", "notes.txt", "sub/small.txt"];

/// Every version of every file: (rev:path, bytes).
fn versions(repo: &Repository) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for rev in ["HEAD", "HEAD~1"] {
        for path in PATHS {
            let bytes = cat(repo, rev, path).expect("whole");
            out.push((format!("{rev}:{path}"), bytes));
        }
    }
    out
}

/// Two commits of a 1.5 MiB file (the second version shares nothing with
/// the first), a small file and a folder in `d`'s working tree; each
/// version's data in a pack of its own.
fn shoot(repo: &Repository) {
    let d = &repo.root;
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("big.raw"), noise(3 << 19, 1)).unwrap();
    std::fs::write(d.join("notes.txt"), "first\n").unwrap();
    std::fs::write(d.join("sub/small.txt"), "small\n").unwrap();
    commit_all(repo, "one");
    std::fs::write(d.join("big.raw"), noise(7 << 18, 2)).unwrap();
    std::fs::write(d.join("notes.txt"), "second\n").unwrap();
    commit_all(repo, "two");
}

/// A repository of its own (no remote) in the fleet's folder.
fn alone(fleet: &Fleet, name: &str) -> Repository {
    Repository::init(&fleet.folder().join(name), ChunkParams::default()).unwrap()
}

#[test]
fn without_a_source_a_repair_restores_the_checked_out_files_and_names_what_is_lost() {
    let fleet = Fleet::new();
    let repo = alone(&fleet, "r");
    shoot(&repo);
    let d = repo.root.clone();
    // Each version's chunks are in its commit's pack: damage one of each.
    let mut big = packs(&d, "pack");
    big.retain(|p| p.metadata().unwrap().len() > 100_000);
    assert_eq!(big.len(), 2, "{big:?}");
    for p in &big {
        flip(p, 5000);
    }
    let first = repo.history().resolve("HEAD~1").unwrap();
    let repair = dmv_sync::repair(&repo, None).unwrap();
    assert_eq!(repair.salvaged.packs_rewritten, 2, "{repair:?}");
    // The checked-out big.raw is whole in the working tree: stored again from there.
    assert_eq!(repair.restored_from_worktree, 1, "{repair:?}");
    assert_eq!(repair.fetched, 0);
    assert!(repair.from.is_empty() && repair.unreachable.is_empty());
    assert!(!repair.dirstate_rebuilt && !repair.locations_reset);
    // The first version is nowhere: named, with its commit, and nothing else.
    assert_eq!(
        repair.lost,
        [format!("big.raw in commit {}", first.short())],
        "{repair:?}"
    );
    let repo = Repository::open(&d).unwrap();
    assert_eq!(
        cat(&repo, "HEAD", "big.raw").unwrap(),
        std::fs::read(d.join("big.raw")).unwrap()
    );
    assert_eq!(cat(&repo, "HEAD~1", "notes.txt").unwrap(), b"first\n");
    let (lost, written) = cat(&repo, "HEAD~1", "big.raw").expect_err("lost");
    assert!(
        written.is_empty(),
        "a lost file must fail before giving any of its bytes ({} given): {lost}",
        written.len()
    );
    let fsck = repo.maintenance().fsck(true, &Silent).unwrap();
    assert!(
        !fsck.problems.is_empty(),
        "the lost version is still damage"
    );
}

#[test]
fn a_damaged_dirstate_and_location_log_are_rebuilt_and_the_working_tree_kept() {
    let fleet = Fleet::new();
    let r = fleet.full("r");
    shoot(&r.repo);
    r.push().unwrap();
    let want = versions(&r.repo);
    r.write("notes.txt", "edited, not staged\n");
    flip(&r.dir.join(".dmv/dirstate"), 20);
    flip(&r.dir.join(".dmv/locations"), 30);
    let damaged_log = std::fs::read(r.dir.join(".dmv/locations")).unwrap();
    assert!(
        r.repo.status().is_err(),
        "status reads the damaged dirstate"
    );

    let repair = dmv_sync::repair(&r.repo, None).unwrap();
    assert!(
        repair.dirstate_rebuilt && repair.locations_reset,
        "{repair:?}"
    );
    assert_eq!(repair.salvaged.packs_rewritten, 0);
    assert_eq!((repair.restored_from_worktree, repair.fetched), (0, 0));
    assert!(repair.lost.is_empty(), "{repair:?}");
    // The damaged log is kept aside, byte for byte.
    assert_eq!(
        std::fs::read(r.dir.join(".dmv/locations.damaged")).unwrap(),
        damaged_log
    );
    let repo = Repository::open(&r.dir).unwrap();
    assert_eq!(r.read("notes.txt").unwrap(), b"edited, not staged\n");
    let status = repo.status().unwrap();
    assert!(status.staged.is_empty() && status.untracked.is_empty());
    let unstaged: Vec<_> = (status.unstaged.iter())
        .map(|c| (String::from_utf8_lossy(&c.path).into_owned(), c.kind))
        .collect();
    assert_eq!(unstaged, [("notes.txt".to_string(), ChangeKind::Modified)]);
    // The hub is found to hold the data again, asked live.
    let copies = dmv_fixtures::whereis(&repo, "big.raw");
    assert_eq!(copies.len(), 1);
    let names: Vec<_> = (copies[0].copies.iter())
        .map(|c| (c.here, c.name.clone().filter(|_| !c.here)))
        .collect();
    assert_eq!(names, [(true, None), (false, Some("origin".into()))]);
    assert_eq!(versions(&repo), want);
    let fsck = repo.maintenance().fsck(true, &Silent).unwrap();
    assert!(fsck.problems.is_empty(), "{:?}", fsck.problems);
}

/// A repair of a healthy repository changes nothing (it once rewrote a
/// whole pack each time, for a record its walk misread).
#[test]
fn a_repair_of_a_healthy_repository_rewrites_nothing() {
    let fleet = Fleet::new();
    let repo = alone(&fleet, "r");
    let d = repo.root.clone();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    std::fs::write(d.join("b.raw"), noise(300_000, 3)).unwrap();
    commit_all(&repo, "one");
    let files = |d: &Path| {
        std::fs::read_dir(d.join(".dmv/objects/packs"))
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (
                    p.file_name().unwrap().to_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let before = files(&d);
    let dirstate = std::fs::read(d.join(".dmv/dirstate")).unwrap();
    for _ in 0..2 {
        let repair = dmv_sync::repair(&repo, None).unwrap();
        let s = &repair.salvaged;
        assert_eq!(
            (s.packs_rewritten, s.objects_saved, s.indexes_rebuilt),
            (0, 0, 0),
            "{repair:?}"
        );
        assert!(s.lost.is_empty() && repair.lost.is_empty(), "{repair:?}");
        assert_eq!((repair.restored_from_worktree, repair.fetched), (0, 0));
        assert!(!repair.dirstate_rebuilt && !repair.locations_reset);
    }
    assert!(files(&d) == before, "no pack written, changed or removed");
    assert_eq!(std::fs::read(d.join(".dmv/dirstate")).unwrap(), dirstate);
    let fsck = repo.maintenance().fsck(true, &Silent).unwrap();
    assert!(fsck.problems.is_empty(), "{:?}", fsck.problems);
}

/// A repair from a named remote (`fsck --repair --from hub`) leaves every
/// version of every file byte-exact: the checked-out one is stored again
/// from the working tree, the older one fetched from the hub, nothing is
/// lost. dmv-cli's tests/repair.rs kills the same repair at a fail point.
#[test]
fn a_repair_from_another_replica_leaves_every_version_byte_exact() {
    let fleet = Fleet::new();
    let mut r = fleet.init("r");
    shoot(&r.repo);
    r.add_remote("hub", fleet.hub_path());
    r.push_to("hub").unwrap();
    let want = versions(&r.repo);

    // Payload bytes of both versions' packs, a table of contents, and an index.
    for big in packs(&r.dir, "pack").into_iter().take(2) {
        let len = big.metadata().unwrap().len() as usize;
        for at in [2000, len / 2, len - 100] {
            flip(&big, at);
        }
    }
    flip(&packs(&r.dir, "idx")[2], 40);
    r.reopen();
    let fsck = r.repo.maintenance().fsck(true, &Silent).unwrap();
    assert!(!fsck.problems.is_empty(), "the damage is seen");

    let repair = dmv_sync::repair(&r.repo, Some("hub")).unwrap();
    assert_eq!(repair.salvaged.packs_rewritten, 2, "{repair:?}");
    assert_eq!(repair.restored_from_worktree, 1, "{repair:?}");
    assert!(repair.fetched > 0, "{repair:?}");
    assert_eq!(repair.from, ["hub"]);
    assert!(
        repair.unreachable.is_empty() && repair.lost.is_empty(),
        "{repair:?}"
    );
    assert!(!repair.dirstate_rebuilt && !repair.locations_reset);

    r.reopen();
    assert_eq!(versions(&r.repo), want);
    let status = r.repo.status().unwrap();
    assert!(status.is_clean(), "{status:?}");
    r.assert_fsck_clean();
    // Run again, it finds nothing left to do.
    let again = dmv_sync::repair(&r.repo, Some("hub")).unwrap();
    assert_eq!((again.fetched, again.restored_from_worktree), (0, 0));
    assert_eq!(again.salvaged.packs_rewritten, 0, "{again:?}");
}
