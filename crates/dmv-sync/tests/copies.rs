//! Copies of file data across a fleet, through the library (replicas of a
//! bare hub over in-process path remotes): which copies a drop counts and
//! frees data against, what the location log records and whereis says,
//! and what a hub keeps. The `dmv` binary's words for the same stay in
//! dmv-cli's tests/partial.rs.

use dmv_fixtures::{absent_in, holders, Fleet, Replica};
use dmv_repo::ref_names::branch_ref;
use dmv_repo::{RepoError, Silent};
use dmv_sync::{Along, DropOptions, Reach, Refusal, SyncError};
use dmv_testkit::noise;
use std::time::Duration;

const FILE: usize = 200 * 1024;

/// A full replica `name` that committed `files` (`path`, seed) of noise and pushed them to the hub.
fn studio(fleet: &Fleet, name: &str, files: &[(&str, u64)], size: usize) -> Replica {
    let studio = fleet.full(name);
    for (path, seed) in files {
        studio.write(path, noise(size, *seed));
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    studio
}

/// `count` files of noise, one a folder, committed and pushed to the hub
/// by a studio: their paths.
fn files_on_the_hub(fleet: &Fleet, count: usize) -> Vec<String> {
    let paths: Vec<String> = (0..count).map(|i| format!("f{i:02}/p0.raw")).collect();
    let files: Vec<(&str, u64)> = paths
        .iter()
        .zip(1..)
        .map(|(p, s)| (p.as_str(), s))
        .collect();
    studio(fleet, "src", &files, FILE);
    paths
}

/// A meta clone of the hub, with every file version of its HEAD (what a
/// mount's reader would fetch).
fn phone_and_its_versions(fleet: &Fleet) -> (Replica, Vec<(Vec<u8>, dmv_repo::FlatEntry)>) {
    let phone = fleet.partial("phone", "meta");
    let head = phone.repo.head_commit().unwrap().unwrap();
    let versions = phone.repo.history().files_to_archive(&head, &[]).unwrap();
    (phone, versions)
}

/// The files a refused drop names with their confirmed counts ("f (1 of 2)").
fn short_of_copies(e: &SyncError, needed_here: usize) -> Vec<String> {
    match e {
        SyncError::NotEnoughCopies { needed, files, .. } if *needed == needed_here => files.clone(),
        other => panic!("not NotEnoughCopies with {needed_here} needed: {other:?}"),
    }
}

fn stored(r: &Replica) -> u64 {
    r.repo.maintenance().stats().unwrap().stored_bytes
}

fn allow_drops(bare: &std::path::Path) {
    let mut repo = dmv_repo::Repository::open(bare).unwrap();
    repo.set_setting("drop.allowed", Some("true")).unwrap();
}

/// numcopies 0 confirms nothing, so only a forced drop goes through: by
/// the option or by the config, refused before anything moves.
#[test]
fn a_drop_with_numcopies_zero_refuses_unless_forced() {
    let fleet = Fleet::new();
    let mut a = studio(&fleet, "a", &[("f00/p0.raw", 1)], FILE);
    let file = a.dir.join("f00/p0.raw");
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    let refused = a.drop_data(&["f00/p0.raw"], 0).unwrap_err();
    assert!(
        matches!(refused, SyncError::Refused(Refusal::NoCopiesToConfirm)),
        "{refused:?}"
    );
    // (`dmv config` takes no 0; an edited config may hold one.)
    a.repo
        .update_config(|c| {
            c.numcopies = Some(0);
            Ok::<_, RepoError>(())
        })
        .unwrap();
    let by_config = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        ..Default::default()
    };
    let refused = dmv_sync::drop_files(&a.repo, &by_config).unwrap_err();
    assert!(
        matches!(refused, SyncError::Refused(Refusal::NoCopiesToConfirm)),
        "{refused:?}"
    );
    assert_eq!(a.read("f00/p0.raw").unwrap(), noise(FILE, 1));
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), mtime);
    assert_eq!(a.present(), ["f00/p0.raw"]);
    assert!(a.repo.status().unwrap().is_clean());

    let forced = DropOptions {
        force: true,
        ..by_config
    };
    let dropped = dmv_sync::drop_files(&a.repo, &forced).unwrap();
    assert_eq!((dropped.files, dropped.files_removed), (1, 1));
    assert!(dropped.confirmed_by.is_empty(), "{dropped:?}");
    assert_eq!(a.absent(), ["f00/p0.raw"]);
}

/// The same replica reached under two remote names, or a remote that is
/// this replica itself, is one copy: a drop never counts it twice, nor
/// confirms itself, nor drops "from" itself.
#[test]
fn one_replica_under_two_names_or_itself_is_one_copy() {
    let fleet = Fleet::new();
    studio(&fleet, "studio", &[("big.bin", 5)], FILE);
    let mut b = fleet.full("b");
    let hub_again = fleet.hub_path().join(".");
    b.add_remote("origin2", &hub_again);
    let me = b.dir.clone();
    b.add_remote("self", &me);
    let options = DropOptions {
        paths: vec![b"big.bin".to_vec()],
        ..Default::default()
    };
    let refused = dmv_sync::drop_files(&b.repo, &options).unwrap_err();
    assert_eq!(short_of_copies(&refused, 2), ["big.bin (1 of 2)"]);
    assert_eq!(b.present(), ["big.bin"]);
    assert_eq!(b.read("big.bin").unwrap(), noise(FILE, 5));

    for name in ["origin", "origin2"] {
        dmv_sync::remove_remote(&mut b.repo, name).unwrap();
    }
    let refused = b.drop_data(&["big.bin"], 1).unwrap_err();
    assert_eq!(short_of_copies(&refused, 1), ["big.bin (0 of 1)"]);
    let from_self = DropOptions {
        from: Some("self".into()),
        numcopies: Some(1),
        ..options
    };
    let refused = dmv_sync::drop_files(&b.repo, &from_self).unwrap_err();
    assert!(
        matches!(&refused, SyncError::Refused(Refusal::DropFromItself { remote }) if remote == "self"),
        "{refused:?}"
    );
    assert_eq!(b.present(), ["big.bin"]);
    b.assert_fsck_clean();
}

/// A remote holding the data only under a branch since deleted keeps it no
/// longer than its next gc: that copy is not confirmed.
#[test]
fn a_copy_that_no_branch_keeps_does_not_count() {
    let fleet = Fleet::new();
    studio(&fleet, "studio", &[("x.txt", 9)], 16);
    let mut b = fleet.full("b");
    let head = b.repo.head_commit().unwrap().unwrap();
    b.repo
        .create_ref(&branch_ref("feat"), head, "branch: created")
        .unwrap();
    b.repo.switch_to_branch("feat", &Silent).unwrap();
    b.write("y.bin", noise(FILE, 7));
    b.commit_all("y");
    b.push().unwrap();
    let refused = b.drop_data(&["y.bin"], 2).unwrap_err();
    assert_eq!(
        short_of_copies(&refused, 2),
        ["y.bin (1 of 2)"],
        "kept by a branch, the hub's copy counts"
    );
    fleet.hub().history().delete_branch("feat", true).unwrap();
    let refused = b.drop_data(&["y.bin"], 1).unwrap_err();
    assert_eq!(short_of_copies(&refused, 1), ["y.bin (0 of 1)"]);
    assert_eq!(b.present(), ["x.txt", "y.bin"]);
    assert_eq!(b.read("y.bin").unwrap(), noise(FILE, 7));
}

/// A push from a meta clone to a remote lacking data this replica lacks
/// too is refused naming a file, and lands nothing; once the data is
/// here, the same push goes through whole.
#[test]
fn a_push_needing_data_this_replica_lacks_refuses_and_names_it() {
    let fleet = Fleet::new();
    studio(&fleet, "studio", &[("big.bin", 3)], FILE);
    let mut m = fleet.partial("m", "meta");
    m.write("n.txt", "new\n");
    m.commit_all("n");
    let hub2 = fleet.bare("hub2");
    m.add_remote("hub2", &hub2);
    let refused = m.push_to("hub2").unwrap_err();
    assert!(
        matches!(&refused, SyncError::Refused(Refusal::DataHeldByNeither { count: 1, example }) if example == "big.bin"),
        "{refused:?}"
    );
    let second = dmv_repo::Repository::open(&hub2).unwrap();
    assert!(
        second.refs.list("refs/").unwrap().is_empty(),
        "nothing landed"
    );
    m.get(&["big.bin"]).unwrap();
    m.push_to("hub2").unwrap();
    let second = dmv_repo::Repository::open(&hub2).unwrap();
    assert!(absent_in(&second).is_empty());
    let mut bytes = Vec::new();
    dmv_sync::write_file_at(&second, "main", "big.bin", &mut bytes, &Silent).unwrap();
    assert_eq!(bytes, noise(FILE, 3));
    let report = second.maintenance().fsck(false, &Silent).unwrap();
    assert_eq!(report.problem_count(), 0, "{:?}", report.problems);
}

/// A replica heard of only through another is shown by the name it gave
/// itself: the names travel in the location logs.
#[test]
fn whereis_names_a_replica_known_only_through_another() {
    let fleet = Fleet::new();
    let mut nas = fleet.full("nas");
    nas.repo
        .set_setting("replica.name", Some("studio-nas"))
        .unwrap();
    nas.write("f00/p0.raw", noise(FILE, 1));
    nas.commit_all("shoot");
    nas.push().unwrap();
    let mut c = fleet.full("c");
    c.repo.set_setting("replica.name", Some("laptop")).unwrap();
    let files = c.whereis("");
    assert_eq!(files.len(), 1);
    let copies = &files[0].copies;
    let named = |name: &str| {
        copies
            .iter()
            .find(|c| c.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no copy named {name}: {copies:?}"))
    };
    assert!(named("laptop").here);
    assert!(named("origin").reachable && !named("origin").here);
    let nas_copy = named("studio-nas");
    assert!(!nas_copy.reachable, "the nas is not a remote of c");
    assert_eq!(nas_copy.class, Reach::Unknown);
    assert_eq!(copies.len(), 3, "{copies:?}");
}

/// A drop that fails after it locked other replicas' copies unlocks them:
/// they are not held against those replicas' own drops for ten minutes.
#[test]
fn a_drop_that_fails_after_locking_releases_the_locks() {
    let fleet = Fleet::new();
    studio(&fleet, "studio", &[("f00/p0.raw", 1)], FILE);
    let b = fleet.full("b");
    // b's location journal cannot be written (a folder stands in its place): the drop fails at its last step.
    let journal = b.dir.join(".dmv/locations.journal");
    std::fs::create_dir(&journal).unwrap();
    b.drop_data(&["f00/p0.raw"], 1).unwrap_err();
    let locks = fleet.hub_path().join(".dmv/content-locks");
    let held = std::fs::read_dir(&locks).map(|d| d.count()).unwrap_or(0);
    assert_eq!(held, 0, "locks left in {}", locks.display());
    std::fs::remove_dir(&journal).unwrap();
    b.drop_data(&["f00/p0.raw"], 1).unwrap();
    assert_eq!(b.absent(), ["f00/p0.raw"]);
}

/// A partial replica that pushed one new file recorded itself as holding
/// every file of the folders the push brought (issue 42: a phone "held" 31
/// files, 2 of them really). Only what is here is recorded as here.
#[test]
fn a_partial_replicas_push_records_only_the_data_it_holds() {
    let fleet = Fleet::new();
    let files = [
        ("f00/p0.raw", 1),
        ("f00/p1.raw", 2),
        ("f01/p0.raw", 3),
        ("f01/p1.raw", 4),
    ];
    studio(&fleet, "studio", &files, FILE);
    let phone = fleet.partial("phone", "paths:f00");
    let phone_id = phone.repo.copies().replica_id().unwrap().to_string();
    phone.write("f01/caption.txt", "a caption\n");
    phone.commit_all("caption");
    phone.push().unwrap();
    let hub = fleet.hub();
    for (side, said) in [
        ("hub", holders(&hub, "f01/p0.raw")),
        ("phone", holders(&phone.repo, "f01/p0.raw")),
    ] {
        assert!(
            !said.contains(&phone_id),
            "{side}: the phone is said to hold f01/p0.raw: {said:?}"
        );
        assert!(!said.is_empty(), "{side}: the studio and hub hold it");
    }
    assert!(holders(&hub, "f01/caption.txt").contains(&phone_id));
    assert!(holders(&hub, "f00/p1.raw").contains(&phone_id));
    let w = phone.whereis("f01/p0.raw");
    assert!(w[0].copies.iter().all(|c| !c.here), "{w:?}");
}

/// A full clone could make the hub partial with a drop from origin, and
/// from then on every full clone of the hub failed (issue 42, item 2). A
/// bare repository keeps everything until its admin allows drops there.
#[test]
fn a_hub_keeps_every_files_data_until_its_admin_allows_drops() {
    let fleet = Fleet::new();
    let src = studio(&fleet, "src", &[("f00/p0.raw", 1), ("f00/p1.raw", 2)], FILE);
    let from_origin = |force| DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        from: Some("origin".into()),
        numcopies: Some(1),
        force,
        ..Default::default()
    };
    for force in [false, true] {
        let refused = dmv_sync::drop_files(&src.repo, &from_origin(force)).unwrap_err();
        // The hub's refusal comes over the wire as its words.
        assert!(
            matches!(&refused, SyncError::Remote(m) if m.contains("keeps every file's data")),
            "force {force}: {refused:?}"
        );
    }
    let hub = fleet.hub();
    let here = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        force: true,
        ..Default::default()
    };
    let refused = dmv_sync::drop_files(&hub, &here).unwrap_err();
    assert!(
        matches!(
            &refused,
            SyncError::Repo(RepoError::DropsNotAllowed { path }) if path == fleet.hub_path()
        ),
        "{refused:?}"
    );
    assert!(absent_in(&hub).is_empty());
    let locks = std::fs::read_dir(src.dir.join(".dmv/content-locks"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(locks, 0, "a refused drop leaves no lock behind");
    fleet.full("full").assert_fsck_clean();

    allow_drops(fleet.hub_path());
    let dropped = dmv_sync::drop_files(&src.repo, &from_origin(false)).unwrap();
    assert_eq!(dropped.files, 1);
    assert_eq!(dropped.confirmed_by, ["here"]);
    assert_eq!(absent_in(&fleet.hub()), ["f00/p0.raw"]);
}

/// A drop counts only copies other replicas confirm live (not the log's
/// word), frees the space, and whereis follows; a drop from a remote is
/// confirmed here.
#[test]
fn drop_counts_only_copies_confirmed_live_and_frees_the_space() {
    const BIG: usize = 2 << 20;
    let fleet = Fleet::new();
    let mut src = fleet.full("src");
    src.write("f00/p0.raw", noise(BIG, 1));
    src.write("f00/p1.raw", noise(BIG, 2));
    src.commit_all("shoot");
    let w = src.whereis("f00/p0.raw");
    assert_eq!(w[0].copies.len(), 1, "{w:?}");
    assert!(w[0].copies[0].here);
    // The hub is partial by its admin's choice: drops may free its data.
    allow_drops(fleet.hub_path());
    src.push().unwrap();
    let w = src.whereis("f00/p0.raw");
    assert_eq!(w[0].copies.len(), 2, "{w:?}");
    assert!(w[0].copies[0].here, "here first: {w:?}");
    let origin = &w[0].copies[1];
    assert_eq!(origin.name.as_deref(), Some("origin"));
    assert!(origin.reachable);
    assert_eq!(origin.class, Reach::Near);

    // The hub loses its copy behind the log's back: src's log still says it has it.
    let forced = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        force: true,
        ..Default::default()
    };
    dmv_sync::drop_files(&fleet.hub(), &forced).unwrap();
    let refused = src.drop_data(&["f00/p0.raw"], 1).unwrap_err();
    assert_eq!(short_of_copies(&refused, 1), ["f00/p0.raw (0 of 1)"]);
    assert_eq!(src.present(), ["f00/p0.raw", "f00/p1.raw"]);

    // A second hub holds it: now the drop goes through, and the space is freed.
    let hub2 = fleet.bare("hub2");
    allow_drops(&hub2);
    src.add_remote("hub2", &hub2);
    src.push_to("hub2").unwrap();
    let before = stored(&src);
    let dropped = src.drop_data(&["f00/p0.raw"], 1).unwrap();
    assert_eq!(dropped.confirmed_by, ["hub2"]);
    assert_eq!((dropped.files, dropped.files_removed), (1, 1));
    assert!(
        before - stored(&src) >= BIG as u64,
        "{before} -> {}",
        stored(&src)
    );
    assert!(src.read("f00/p0.raw").is_none());
    assert_eq!(src.read("f00/p1.raw").unwrap(), noise(BIG, 2));
    assert!(src.repo.status().unwrap().is_clean());
    src.assert_fsck_clean();
    // Three other copies asked for, two exist: refused, naming the file and the count.
    let refused = src.drop_data(&["f00/p1.raw"], 3).unwrap_err();
    assert_eq!(short_of_copies(&refused, 3), ["f00/p1.raw (2 of 3)"]);
    // whereis knows: here no longer, hub2 yes, origin no.
    let w = src.whereis("f00/p0.raw");
    let names: Vec<Option<&str>> = w[0].copies.iter().map(|c| c.name.as_deref()).collect();
    assert_eq!(names, [Some("hub2")], "{w:?}");

    // Dropping from a remote: confirmed here (and locked), then freed there.
    src.get(&["f00/p0.raw"]).unwrap();
    let from_hub2 = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        from: Some("hub2".into()),
        numcopies: Some(1),
        ..Default::default()
    };
    let dropped = dmv_sync::drop_files(&src.repo, &from_hub2).unwrap();
    assert_eq!(dropped.confirmed_by, ["here"]);
    assert_eq!((dropped.files, dropped.files_removed), (1, 0));
    let second = dmv_repo::Repository::open(&hub2).unwrap();
    assert_eq!(absent_in(&second), ["f00/p0.raw"]);
    let report = second.maintenance().fsck(false, &Silent).unwrap();
    assert_eq!(report.problem_count(), 0, "{:?}", report.problems);
    assert_eq!(src.read("f00/p0.raw").unwrap(), noise(BIG, 1));
}

fn fsck(repo: &dmv_repo::Repository) -> dmv_repo::FsckReport {
    repo.maintenance().fsck(false, &Silent).unwrap()
}

/// The paths fsck finds no other replica known to hold.
fn lost(repo: &dmv_repo::Repository) -> Vec<String> {
    fsck(repo).lost().filter_map(|u| u.path.clone()).collect()
}

/// `drop --force` of the only copy left the version with no copy anywhere,
/// and fsck said nothing (issue 42). It now counts the file as lost; a
/// version another replica holds is not, until asking that replica live
/// corrects the log.
#[test]
fn fsck_names_versions_no_replica_is_known_to_hold() {
    let fleet = Fleet::new();
    let mut src = studio(&fleet, "src", &[("f00/p0.raw", 1), ("f00/p1.raw", 2)], FILE);
    // Held by the hub: dropped here, known there.
    src.drop_data(&["f00/p0.raw"], 1).unwrap();
    src.assert_fsck_clean();
    // A new version only here, forced away: nobody holds it.
    src.write("f00/p1.raw", noise(FILE, 99));
    src.commit_all("retouched");
    let forced = DropOptions {
        paths: vec![b"f00/p1.raw".to_vec()],
        force: true,
        ..Default::default()
    };
    dmv_sync::drop_files(&src.repo, &forced).unwrap();
    let report = fsck(&src.repo);
    assert_eq!(report.problem_count(), 1, "{:?}", report.under_copied);
    assert_eq!(lost(&src.repo), ["f00/p1.raw"]);
    // With two copies asked for, the hub's one is too few: noted, not a failure of its own.
    src.repo.set_setting("drop.numcopies", Some("2")).unwrap();
    let report = fsck(&src.repo);
    let noted: Vec<(Option<&str>, usize, usize)> = report
        .under_copied
        .iter()
        .filter(|u| u.known_copies > 0)
        .map(|u| (u.path.as_deref(), u.known_copies, u.numcopies))
        .collect();
    assert_eq!(noted, [(Some("f00/p0.raw"), 1, 2)]);
    assert_eq!(report.problem_count(), 1);
    src.repo.set_setting("drop.numcopies", Some("1")).unwrap();

    // The hub's admin lets its copy go behind the log's back: fsck believes the log until the hub is asked.
    allow_drops(fleet.hub_path());
    let at_hub = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        force: true,
        ..Default::default()
    };
    dmv_sync::drop_files(&fleet.hub(), &at_hub).unwrap();
    assert_eq!(lost(&src.repo), ["f00/p1.raw"]);
    let checked = dmv_sync::check_copies(&src.repo, "origin").unwrap();
    assert_eq!(checked.not_there, ["f00/p0.raw"]);
    let mut now = lost(&src.repo);
    now.sort();
    assert_eq!(now, ["f00/p0.raw", "f00/p1.raw"], "the log stays corrected");
}

/// Whether the data of `path` in `rev` is here.
fn present_at(r: &Replica, rev: &str, path: &str) -> bool {
    let tree = r.repo.commit(&r.repo.resolve(rev).unwrap()).unwrap().tree;
    let files = r
        .repo
        .copies()
        .availability(&tree, &[path.as_bytes().to_vec()])
        .unwrap();
    assert_eq!(files.len(), 1, "{rev}:{path}");
    files[0].present
}

/// `recent:N` was never enforced and a drop could not name a revision
/// (issue 42, item 7): old versions stayed after pulls. A drop of the
/// unwanted frees what the slice lets go, every version of a narrowed
/// `paths:` slice's outside too, and a drop of a revision frees an old
/// version that a get of that revision brings back.
#[test]
fn drop_unwanted_frees_what_the_slice_lets_go_and_drop_rev_frees_an_old_version() {
    let fleet = Fleet::new();
    let src = studio(&fleet, "src", &[("f00/p0.raw", 1), ("f01/p0.raw", 2)], FILE);
    let phone = fleet.partial("phone", "recent:1");
    // Two new versions of f00/p0.raw reach the phone: the older ones fall out of its last commit.
    for round in 0..2 {
        src.write("f00/p0.raw", noise(FILE, 500 + round));
        src.commit_all("edit");
        src.push().unwrap();
        phone.pull().unwrap();
    }
    assert_eq!(phone.present(), ["f00/p0.raw", "f01/p0.raw"]);
    for rev in ["HEAD~1", "HEAD~2"] {
        assert!(present_at(&phone, rev, "f00/p0.raw"), "{rev}");
    }
    let unwanted = DropOptions {
        unwanted: true,
        numcopies: Some(1),
        ..Default::default()
    };
    let before = stored(&phone);
    let dropped = dmv_sync::drop_files(&phone.repo, &unwanted).unwrap();
    assert_eq!(
        (dropped.files, dropped.files_removed),
        (2, 0),
        "{dropped:?}"
    );
    assert!(
        before - stored(&phone) >= 2 * FILE as u64,
        "{before} -> {}",
        stored(&phone)
    );
    assert_eq!(phone.present(), ["f00/p0.raw", "f01/p0.raw"]);
    for rev in ["HEAD~1", "HEAD~2"] {
        assert!(!present_at(&phone, rev, "f00/p0.raw"), "{rev}");
    }
    assert!(phone.repo.status().unwrap().is_clean());
    phone.assert_fsck_clean();
    // Nothing more is unwanted.
    let again = dmv_sync::drop_files(&phone.repo, &unwanted).unwrap();
    assert_eq!(again.files, 0, "{again:?}");
    let with_paths = DropOptions {
        paths: vec![b"f00".to_vec()],
        ..unwanted.clone()
    };
    let refused = dmv_sync::drop_files(&phone.repo, &with_paths).unwrap_err();
    assert!(
        matches!(
            refused,
            SyncError::Refused(Refusal::UnwantedTakesNoSelection)
        ),
        "{refused:?}"
    );

    // A full replica wants everything; a revision's old version goes by name, confirmed elsewhere.
    let nothing = dmv_sync::drop_files(&src.repo, &unwanted).unwrap();
    assert_eq!(nothing.files, 0);
    let old = src.repo.resolve("HEAD~2").unwrap();
    let before = stored(&src);
    let by_rev = DropOptions {
        paths: vec![b"f00/p0.raw".to_vec()],
        rev: Some(old),
        numcopies: Some(1),
        ..Default::default()
    };
    let dropped = dmv_sync::drop_files(&src.repo, &by_rev).unwrap();
    assert_eq!((dropped.files, dropped.files_removed), (1, 0));
    assert!(before - stored(&src) >= FILE as u64);
    assert!(!present_at(&src, "HEAD~2", "f00/p0.raw"));
    assert!(present_at(&src, "HEAD~2", "f01/p0.raw"));
    assert_eq!(
        src.read("f00/p0.raw").unwrap(),
        noise(FILE, 501),
        "the checked-out version stays"
    );
    let got = dmv_sync::get(
        &src.repo,
        &dmv_sync::GetOptions {
            paths: vec![b"f00/p0.raw".to_vec()],
            rev: Some(old),
            remote: None,
        },
        &Silent,
    )
    .unwrap();
    assert_eq!((got.fetched, got.written), (1, 0));
    assert!(present_at(&src, "HEAD~2", "f00/p0.raw"));

    // A narrowed paths: slice lets go of the folder now outside it, every version of it.
    let mut cam = fleet.full("cam");
    let changed = dmv_sync::set_slice(
        &mut cam.repo,
        dmv_repo::Slice::parse("paths:f01").unwrap(),
        None,
        &Silent,
    )
    .unwrap();
    assert_eq!(changed.got.fetched, 0, "narrowing fetches nothing");
    let dropped = dmv_sync::drop_files(&cam.repo, &unwanted).unwrap();
    assert_eq!(
        (dropped.files, dropped.files_removed),
        (3, 1),
        "{dropped:?}"
    );
    assert_eq!(cam.absent(), ["f00/p0.raw"]);
    assert!(!present_at(&cam, "HEAD~2", "f00/p0.raw"));
    assert_eq!(cam.present(), ["f01/p0.raw"]);
    cam.assert_fsck_clean();
}

/// A reader that fetches again and again (a mount copying a folder out
/// fetches a batch every few hundred milliseconds) tells the hub of its
/// new copies once for many fetches: a hub merged each fetch's news into
/// its log, most of its work. Until told, the hub's log does not name the
/// phone; once told (when due, or as the fetcher ends), it names it for
/// each file fetched and no other. A drop made here meanwhile, told at
/// once, still wins over the older copy told after it.
#[test]
fn a_version_fetcher_tells_the_hub_of_many_fetches_at_once() {
    let fleet = Fleet::new();
    let paths = files_on_the_hub(&fleet, 6);
    let (phone, versions) = phone_and_its_versions(&fleet);
    let phone_id = phone.repo.copies().replica_id().unwrap().to_string();
    assert_eq!(versions.len(), 6);
    let told = |path: &str| holders(&fleet.hub(), path).contains(&phone_id);

    let fetcher = dmv_sync::VersionFetcher::new(&phone.repo).telling_every(Duration::MAX);
    for version in &versions[..5] {
        let fetched = fetcher.fetch([version.clone()], Along::Nothing, &Silent);
        assert_eq!(fetched.unwrap(), 1);
    }
    assert_eq!(phone.present(), &paths[..5]);
    assert!(
        paths.iter().all(|p| !told(p)),
        "nothing told before it is due"
    );
    assert!(!fetcher.tell_due());
    // Dropped here (the hub holds it: one copy confirmed), and told so.
    phone.drop_data(&["f04/p0.raw"], 1).unwrap();
    assert_eq!(phone.present(), &paths[..4]);
    drop(fetcher);
    for path in &paths[..4] {
        assert!(told(path), "{path} told as the fetcher ended");
    }
    assert!(!told("f04/p0.raw"), "the drop is newer than the copy");
    assert!(!told("f05/p0.raw"), "never fetched");

    // Due at once: each fetch tells.
    let fetcher = dmv_sync::VersionFetcher::new(&phone.repo).telling_every(Duration::ZERO);
    let fetched = fetcher.fetch([versions[5].clone()], Along::Nothing, &Silent);
    assert_eq!(fetched.unwrap(), 1);
    assert!(told("f05/p0.raw"));
    assert!(!fetcher.tell_due());
    phone.assert_fsck_clean();
}

/// A reader that fetches again and again leaves the packs its fetches
/// seal as they are until it pauses or ends: rolled after each fetch, a
/// roll of nine batches' packs fell on a `cp -r` out of a mount every
/// nine batches. Each fetch seals one pack; the fetcher's end, or a pause,
/// rolls them into one, and every photo reads back.
#[test]
fn a_version_fetcher_rolls_its_packs_when_it_pauses_or_ends() {
    let fleet = Fleet::new();
    let paths = files_on_the_hub(&fleet, 12);
    let (phone, versions) = phone_and_its_versions(&fleet);
    let before = phone.pack_files();

    let fetcher = dmv_sync::VersionFetcher::new(&phone.repo).tidying_when_idle(Duration::MAX);
    for version in &versions[..10] {
        assert_eq!(
            fetcher
                .fetch([version.clone()], Along::Nothing, &Silent)
                .unwrap(),
            1
        );
    }
    assert_eq!(
        phone.pack_files(),
        before + 10,
        "a pack a fetch, none rolled yet"
    );
    assert!(!fetcher.tidy_due(), "not due before the pause");
    drop(fetcher);
    let rolled = phone.pack_files();
    assert!(rolled <= before + 1, "rolled as it ended: {rolled} packs");

    // Due as soon as the fetches pause for as long as asked, and only then.
    let fetcher = dmv_sync::VersionFetcher::new(&phone.repo).tidying_when_idle(Duration::ZERO);
    assert!(!fetcher.tidy_due(), "nothing fetched");
    for version in &versions[10..] {
        fetcher
            .fetch([version.clone()], Along::Nothing, &Silent)
            .unwrap();
    }
    assert!(fetcher.tidy_due());
    fetcher.tidy_now();
    assert!(!fetcher.tidy_due());
    assert_eq!(phone.present(), paths);
    phone.assert_fsck_clean();
}

/// The roll of a mount's packs runs on a thread of its own beside its
/// fetches, while gc runs in another process's handle: every photo
/// fetched stays, and the store checks clean.
#[test]
fn a_version_fetchers_roll_beside_its_fetches_and_gc_loses_nothing() {
    let fleet = Fleet::new();
    let paths = files_on_the_hub(&fleet, 12);
    let (phone, versions) = phone_and_its_versions(&fleet);
    let fetcher = dmv_sync::VersionFetcher::new(&phone.repo).tidying_when_idle(Duration::ZERO);
    let done = std::sync::atomic::AtomicBool::new(false);
    let gcs = std::sync::atomic::AtomicUsize::new(0);
    let rolls = std::thread::scope(|s| {
        let roller = s.spawn(|| {
            let mut rolls = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if fetcher.tidy_due() {
                    fetcher.tidy_now();
                    rolls += 1;
                }
                std::thread::yield_now();
            }
            rolls
        });
        let gc = s.spawn(|| {
            let repo = dmv_repo::Repository::open(&phone.dir).unwrap();
            let policy = dmv_repo::GcPolicy {
                prune_reflog: true,
                store: dmv_repo::store::GcOptions {
                    keep_recent: Duration::ZERO,
                    ..Default::default()
                },
            };
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                repo.maintenance().gc(policy, &Silent).unwrap();
                gcs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        for version in &versions {
            fetcher
                .fetch([version.clone()], Along::Nothing, &Silent)
                .unwrap();
        }
        // Until the roller has rolled after the last fetch, and gc ran.
        while fetcher.tidy_due() || gcs.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        gc.join().unwrap();
        roller.join().unwrap()
    });
    let gcs = gcs.into_inner();
    assert!(rolls >= 1 && gcs >= 1, "rolls {rolls}, gc runs {gcs}");
    drop(fetcher);
    assert_eq!(phone.present(), paths);
    phone.assert_fsck_clean();
}

/// A fetch never told the source it now held the data (issue 42, item 4):
/// after a get and after a clone, the hub's own log names the replica the
/// data went to, and only for what it got. dmv-cli's tests/partial.rs
/// keeps the push retried after losing a race at a pause point.
#[test]
fn the_hubs_log_names_the_replicas_a_get_and_a_clone_took_data_to() {
    let fleet = Fleet::new();
    studio(&fleet, "src", &[("f00/p0.raw", 1), ("f01/p0.raw", 2)], FILE);
    let id = |r: &Replica| r.repo.copies().replica_id().unwrap().to_string();
    let phone = fleet.partial("phone", "meta");
    let phone_id = id(&phone);
    assert!(!holders(&fleet.hub(), "f01/p0.raw").contains(&phone_id));
    phone.get(&["f01/p0.raw"]).unwrap();
    // The hub has no remote: what it says is its own log.
    let hub = fleet.hub();
    assert!(holders(&hub, "f01/p0.raw").contains(&phone_id));
    assert!(!holders(&hub, "f00/p0.raw").contains(&phone_id));
    for name in ["a", "b"] {
        let clone = fleet.full(name);
        let hub = fleet.hub();
        for path in ["f00/p0.raw", "f01/p0.raw"] {
            assert!(holders(&hub, path).contains(&id(&clone)), "{name}: {path}");
        }
    }
}

/// The claims of `repo`'s log as it is written (what a rewrite kept as
/// claims) and how many records it writes beside them.
fn written_claims(repo: &dmv_repo::Repository) -> (Vec<dmv_repo::TreeClaim>, u64) {
    let copies = repo.copies();
    let pages = copies
        .location_pages_claiming(&copies.trees_read_for_claims().unwrap())
        .unwrap();
    (pages.claims().to_vec(), pages.records_left())
}

/// One commit on, the replicas that fetched nothing since still hold the
/// tree before it whole, and none but the committer and the hub the new
/// one: their claims of the tree before stay claims in the hub's log and
/// in a new clone's, not a record per file and replica. A hub of 100,000
/// files that 18 replicas had cloned wrote them as 1.7 million records,
/// and a clone took them and sent them back whole (92 MB).
#[test]
fn claims_of_the_tree_before_a_commit_stay_claims_in_the_hub_and_a_clone() {
    let fleet = Fleet::new();
    let paths: Vec<String> = (0..600)
        .map(|i| format!("f{:02}/p{i}.raw", i % 20))
        .collect();
    let files: Vec<(&str, u64)> = paths.iter().map(String::as_str).zip(1..).collect();
    let src = studio(&fleet, "src", &files, 64);
    let before = src.repo.head_tree().unwrap().unwrap();
    let (b, c) = (fleet.full("b"), fleet.full("c"));
    src.write("new.raw", noise(64, 9999));
    src.commit_all("one more");
    src.push().unwrap();
    let d = fleet.full("d");
    let id = |r: &Replica| r.repo.copies().replica_id().unwrap();
    for (name, repo) in [("hub", &fleet.hub()), ("clone", &d.repo)] {
        let (claims, records) = written_claims(repo);
        for holder in [&b, &c] {
            assert!(
                claims
                    .iter()
                    .any(|claim| claim.tree == before && claim.replica == id(holder)),
                "{name}: {claims:?}"
            );
        }
        // At most the new file's record of each of the five replicas.
        assert!(records <= 5, "{name}: {records} records beside the claims");
    }
    for holder in [&b, &c, &d] {
        assert!(holders(&fleet.hub(), "f00/p0.raw").contains(&id(holder).to_string()));
    }
}
