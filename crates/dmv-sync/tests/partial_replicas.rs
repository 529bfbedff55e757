//! Partial replicas through the library, on the fleet fixture (replicas of a
//! bare hub over in-process path remotes): what a phone's meta clone does
//! with the studio's work, counted in files and bytes, without the binary.

use dmv_fixtures::Fleet;
use dmv_repo::store::{ObjectId, ObjectKind};
use dmv_repo::{MergeOutcome, RebaseOutcome, Resolution, Silent};
use dmv_sync::DropOptions;
use dmv_testkit::noise;

/// A studio's first shoot in the hub, with the repository's own rules.
fn shoot(fleet: &Fleet) -> dmv_fixtures::Replica {
    let studio = fleet.full("studio");
    studio.write(".dmvignore", ".DS_Store\n*.tmp\n");
    for i in 0..4 {
        studio.write(&format!("day1/img{i}.jpg"), noise(40_000, i as u64 + 1));
    }
    studio.write("day1/notes.txt", "harbour at dawn\n");
    studio.commit_all("day one");
    studio.push().unwrap();
    studio
}

#[test]
fn a_meta_clone_gets_what_it_asks_for_and_drops_it_again() {
    let fleet = Fleet::new();
    shoot(&fleet);
    let phone = fleet.partial("phone", "meta");
    // The rules travel with the metadata; no photo does.
    assert_eq!(
        phone.read(".dmvignore").as_deref(),
        Some(&b".DS_Store\n*.tmp\n"[..])
    );
    assert_eq!(phone.absent().len(), 5, "{:?}", phone.absent());
    assert!(phone.read("day1/img0.jpg").is_none());

    let got = phone.get(&["day1/img2.jpg"]).unwrap();
    assert_eq!((got.fetched, got.written), (1, 1));
    assert_eq!(phone.read("day1/img2.jpg").unwrap(), noise(40_000, 3));
    assert_eq!(phone.absent().len(), 4);

    // The drop confirms copies live: the hub is the one remote the phone
    // reaches, so two copies elsewhere cannot be confirmed, and one can.
    let drop = |numcopies| {
        dmv_sync::drop_files(
            &phone.repo,
            &DropOptions {
                paths: vec![b"day1/img2.jpg".to_vec()],
                numcopies: Some(numcopies),
                ..Default::default()
            },
        )
    };
    let refused = drop(2).unwrap_err();
    assert!(
        matches!(
            &refused,
            dmv_sync::SyncError::NotEnoughCopies { needed: 2, .. }
        ),
        "{refused}"
    );
    assert_eq!(phone.read("day1/img2.jpg").unwrap(), noise(40_000, 3));
    let dropped = drop(1).unwrap();
    assert_eq!((dropped.files, dropped.files_removed), (1, 1));
    assert!(dropped.freed_bytes >= 40_000, "{dropped:?}");
    assert!(phone.read("day1/img2.jpg").is_none());
    assert_eq!(phone.absent().len(), 5);
}

#[test]
fn a_meta_clone_ignores_what_the_repository_ignores() {
    let fleet = Fleet::new();
    shoot(&fleet);
    let phone = fleet.partial("phone", "meta");
    phone.write(".DS_Store", "finder junk");
    phone.write("day1/edit.tmp", "half written");
    phone.write("day1/phone.jpg", noise(10_000, 9));
    phone.commit_all("from the phone");
    let head = phone.repo.head_tree().unwrap().unwrap();
    let files: Vec<String> = dmv_repo::tree::flatten(&phone.repo.store, &head)
        .unwrap()
        .into_keys()
        .map(|p| String::from_utf8(p).unwrap())
        .collect();
    assert!(files.contains(&"day1/phone.jpg".to_string()), "{files:?}");
    assert!(
        !files
            .iter()
            .any(|f| f == ".DS_Store" || f.ends_with(".tmp")),
        "{files:?}"
    );
    // What it did not get is still tracked, not recorded as deleted.
    assert!(files.contains(&"day1/img0.jpg".to_string()), "{files:?}");
}

#[test]
fn a_photo_edited_on_a_phone_and_in_the_studio_keeps_both_versions() {
    let fleet = Fleet::new();
    let studio = shoot(&fleet);
    let phone = fleet.partial("phone", "meta");
    phone.get(&["day1/img1.jpg"]).unwrap();

    // Both edit the same photo; the studio's push lands first.
    let studio_edit = noise(41_000, 21);
    let phone_edit = noise(39_000, 22);
    studio.write("day1/img1.jpg", &studio_edit);
    studio.commit_all("studio retouch");
    studio.push().unwrap();
    phone.write("day1/img1.jpg", &phone_edit);
    phone.commit_all("phone crop");

    // The phone's pull conflicts; settling it with both versions fetches
    // the studio's, which the phone never had.
    let pulled = phone.pull().unwrap();
    assert!(
        matches!(pulled.merge, MergeOutcome::Conflicts(_)),
        "{:?}",
        pulled.merge
    );
    let resolved = dmv_sync::resolve_conflicts(
        &phone.repo,
        &[b"day1/img1.jpg".to_vec()],
        Resolution::Both,
        &Silent,
    )
    .unwrap();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].kept.len(), 2, "{:?}", resolved[0].kept);
    let merged = phone
        .repo
        .commit_staged("keep both")
        .unwrap()
        .expect("the merge commit");
    assert_eq!(phone.repo.commit(&merged).unwrap().parents.len(), 2);
    phone.push().unwrap();

    // The studio sees both versions, under the names the phone kept.
    let pulled = studio.pull().unwrap();
    assert!(
        matches!(pulled.merge, MergeOutcome::FastForward(id) if id == merged),
        "{:?}",
        pulled.merge
    );
    let kept: Vec<Vec<u8>> = resolved[0]
        .kept
        .iter()
        .map(|k| studio.read(std::str::from_utf8(k).unwrap()).unwrap())
        .collect();
    assert!(kept.contains(&studio_edit), "the studio's version is kept");
    assert!(kept.contains(&phone_edit), "the phone's version is kept");
    // The phone holds the data of both, as it wrote both.
    assert_eq!(phone.absent().len(), 4, "{:?}", phone.absent());
}

const NOTES: &str = "a\nb\nc\nd\ne\n";

/// A hub holding notes.txt (five lines) and a photo, and a studio replica.
fn notes_and_a_photo(fleet: &Fleet) -> dmv_fixtures::Replica {
    let studio = fleet.full("studio");
    studio.write("notes.txt", NOTES);
    studio.write("photo.jpg", noise(64 << 10, 1));
    studio.commit_all("one");
    studio.push().unwrap();
    studio
}

/// `text` with line `n` (from 0) replaced.
fn with_line(text: &str, n: usize, line: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines[n] = line;
    lines.join("\n") + "\n"
}

/// Merge, cherry-pick and revert of text both sides changed on different
/// lines end in a meta clone as in a full one: the versions their line
/// merges read are fetched first (without them the file conflicted), and
/// nothing else is.
#[test]
fn a_meta_clone_merges_picks_and_reverts_text_line_by_line_as_a_full_clone_does() {
    for slice in ["meta", "full"] {
        let fleet = Fleet::new();
        let studio = notes_and_a_photo(&fleet);
        let phone = fleet.partial("phone", slice);
        phone.get(&["notes.txt"]).unwrap();
        let notes =
            |r: &dmv_fixtures::Replica| String::from_utf8(r.read("notes.txt").unwrap()).unwrap();

        // A merge (by pull): the phone changed the first line, the studio the last.
        phone.write("notes.txt", with_line(NOTES, 0, "A"));
        phone.commit_all("phone: first line");
        studio.write("notes.txt", with_line(NOTES, 4, "E"));
        studio.commit_all("studio: last line");
        studio.push().unwrap();
        let pulled = phone.pull().unwrap();
        assert!(
            matches!(pulled.merge, MergeOutcome::Merged(_)),
            "{slice}: {:?}",
            pulled.merge
        );
        assert_eq!(notes(&phone), "A\nb\nc\nd\nE\n", "{slice}");

        // A pick of the studio's next change, made on top of what the phone merged.
        studio.write("notes.txt", with_line(&notes(&studio), 2, "C"));
        let third = studio.commit_all("studio: third line");
        studio.push().unwrap();
        phone.fetch().unwrap();
        let picked = dmv_sync::cherry_pick(&phone.repo, third, "third", false, &Silent).unwrap();
        assert!(
            matches!(picked, MergeOutcome::Merged(_)),
            "{slice}: {picked:?}"
        );
        assert_eq!(notes(&phone), "A\nb\nC\nd\nE\n", "{slice}");

        // Its revert undoes that line only.
        let head = phone.repo.head_commit().unwrap().unwrap();
        dmv_sync::revert(&phone.repo, head, &Silent).unwrap();
        assert_eq!(notes(&phone), "A\nb\nc\nd\nE\n", "{slice}");
        assert!(phone.repo.status().unwrap().is_clean(), "{slice}");
        assert_eq!(
            phone.read("photo.jpg").is_some(),
            slice == "full",
            "{slice}: only what the merges read was fetched"
        );
    }
}

/// A rebase in a meta clone replays its commits line by line as in a full
/// clone, fetching only what its picks merge.
#[test]
fn a_meta_clone_rebases_text_line_by_line_as_a_full_clone_does() {
    for slice in ["meta", "full"] {
        let fleet = Fleet::new();
        let studio = notes_and_a_photo(&fleet);
        let phone = fleet.partial("phone", slice);
        phone.get(&["notes.txt"]).unwrap();
        phone.write("notes.txt", with_line(NOTES, 0, "A"));
        phone.commit_all("phone: first line");
        studio.write("notes.txt", with_line(NOTES, 3, "D"));
        studio.commit_all("studio: fourth line");
        studio.push().unwrap();
        phone.fetch().unwrap();
        let upstream = phone.repo.resolve("origin/main").unwrap();
        let todo = phone.repo.merges().rebase_plan(upstream).unwrap();
        assert_eq!(todo.len(), 1, "{slice}");
        let outcome = dmv_sync::rebase(
            &phone.repo,
            upstream,
            todo,
            &dmv_repo::KeepMessages,
            &Silent,
        )
        .unwrap();
        assert!(
            matches!(outcome, RebaseOutcome::Done(_)),
            "{slice}: {outcome:?}"
        );
        assert_eq!(
            phone.read("notes.txt").unwrap(),
            b"A\nb\nc\nD\ne\n",
            "{slice}"
        );
        let head = phone.repo.head_commit().unwrap().unwrap();
        assert_eq!(
            phone.repo.commit(&head).unwrap().parents,
            vec![upstream],
            "{slice}"
        );
        assert_eq!(
            phone.read("photo.jpg").is_some(),
            slice == "full",
            "{slice}"
        );
    }
}

/// A file dropped from a full clone stays dropped through later pulls
/// (beside it, and changing its folder), the store not growing back,
/// until a get asks for it again; from then on pulls keep it.
#[test]
fn a_dropped_file_stays_dropped_through_later_pulls_until_a_get() {
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    studio.write("f00/p0.raw", noise(2 << 20, 1));
    studio.write("f00/p1.raw", noise(2 << 20, 2));
    studio.commit_all("two photos");
    studio.push().unwrap();
    let laptop = fleet.full("laptop");
    dmv_sync::drop_files(
        &laptop.repo,
        &DropOptions {
            paths: vec![b"f00/p0.raw".to_vec()],
            numcopies: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(laptop.absent(), ["f00/p0.raw"], "right after the drop");
    let stored = || laptop.repo.maintenance().stats().unwrap().stored_bytes;
    let after_drop = stored();
    for round in 0..3 {
        if round == 2 {
            laptop.get(&["f00/p0.raw"]).unwrap();
            assert_eq!(laptop.read("f00/p0.raw").unwrap(), noise(2 << 20, 1));
        }
        studio.write(&format!("f00/note{round}.txt"), format!("note {round}\n"));
        studio.commit_all("note");
        studio.push().unwrap();
        laptop.pull().unwrap();
        assert!(laptop.read(&format!("f00/note{round}.txt")).is_some());
        assert!(laptop.repo.status().unwrap().is_clean(), "round {round}");
        if round < 2 {
            assert_eq!(
                laptop.absent(),
                ["f00/p0.raw"],
                "round {round}: the pull brought it back"
            );
            assert!(laptop.read("f00/p0.raw").is_none(), "round {round}");
            assert!(
                stored() < after_drop + (1 << 20),
                "round {round}: {after_drop} -> {}",
                stored()
            );
        } else {
            assert!(laptop.absent().is_empty(), "after a get, pulls keep it");
        }
    }
    laptop.assert_fsck_clean();
}

/// `add` of everything in a `paths:` replica stages what is new and
/// changed, never its absent files as deleted; the commit keeps them.
#[test]
fn adding_everything_in_a_partial_replica_never_stages_its_absent_files_as_deleted() {
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    for f in ["f00/p0.raw", "f00/p1.raw", "f01/p0.raw", "f01/p1.raw"] {
        studio.write(f, noise(4096, f.len() as u64 + f.as_bytes()[2] as u64));
    }
    studio.commit_all("four photos");
    studio.push().unwrap();
    let m = fleet.partial("m", "paths:f00/*");
    assert_eq!(m.absent(), ["f01/p0.raw", "f01/p1.raw"]);
    m.write("new.txt", "new");
    m.write("f00/p0.raw", "edited");
    let head = m.commit_all("edit");
    let tree = m.repo.commit(&head).unwrap().tree;
    let files: Vec<Vec<u8>> = dmv_repo::tree::flatten(&m.repo.store, &tree)
        .unwrap()
        .into_keys()
        .collect();
    let expected: Vec<Vec<u8>> = [
        "f00/p0.raw",
        "f00/p1.raw",
        "f01/p0.raw",
        "f01/p1.raw",
        "new.txt",
    ]
    .iter()
    .map(|p| p.as_bytes().to_vec())
    .collect();
    assert_eq!(files, expected);
    assert_eq!(m.absent(), ["f01/p0.raw", "f01/p1.raw"]);
    assert!(m.repo.status().unwrap().is_clean());
    m.assert_fsck_clean();
}

const FILE: usize = 200 * 1024;

/// A studio that committed `files` (`path`, seed) of FILE bytes of noise and pushed them.
fn studio_with(fleet: &Fleet, files: &[(&str, u64)]) -> dmv_fixtures::Replica {
    let studio = fleet.full("studio");
    for (path, seed) in files {
        studio.write(path, noise(FILE, *seed));
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    studio
}

/// `merge --abort` in a partial replica failed with `object … not found`
/// when the merge touched files outside the slice, and `reset --hard` then
/// refused (issue 42): HEAD's versions that are not here stay absent, and
/// a stash round trip leaves them so.
#[test]
fn merge_abort_reset_and_stash_work_in_a_partial_replica() {
    let fleet = Fleet::new();
    let mut studio = studio_with(
        &fleet,
        &[
            ("f00/p0.raw", 1),
            ("f00/p1.raw", 2),
            ("f01/p0.raw", 3),
            ("f01/p1.raw", 4),
        ],
    );
    let phone = fleet.partial("phone", "paths:f00");
    // Theirs: both folders change, one file inside the slice and one outside.
    let head = studio.repo.head_commit().unwrap().unwrap();
    studio
        .repo
        .create_ref("refs/heads/edits", head, "branch: created")
        .unwrap();
    studio.repo.switch_to_branch("edits", &Silent).unwrap();
    studio.write("f00/p1.raw", noise(FILE, 501));
    studio.write("f01/p0.raw", noise(FILE, 502));
    studio.commit_all("their edits");
    studio.push().unwrap();
    // Ours: the same file inside the slice.
    phone.write("f00/p1.raw", noise(FILE, 503));
    let ours = phone.commit_all("our edit");
    phone.fetch().unwrap();
    let theirs = phone.repo.resolve("origin/edits").unwrap();
    let merge = || {
        dmv_sync::merge(
            &phone.repo,
            theirs,
            "origin/edits",
            dmv_repo::FastForward::Allow,
            None,
            &Silent,
        )
        .unwrap()
    };
    let outside = ["f01/p0.raw", "f01/p1.raw"];
    assert!(matches!(merge(), MergeOutcome::Conflicts(_)));
    phone.repo.merges().merge_abort().unwrap();
    assert!(phone.repo.status().unwrap().is_clean());
    assert_eq!(phone.repo.head_commit().unwrap(), Some(ours));
    assert_eq!(phone.read("f00/p1.raw").unwrap(), noise(FILE, 503));
    assert!(phone.read("f01/p0.raw").is_none());
    assert_eq!(phone.absent(), outside);

    // A merge stopped again, then a hard reset instead of an abort: refused
    // while the merge is in progress, then back a commit once it is aborted.
    assert!(matches!(merge(), MergeOutcome::Conflicts(_)));
    let refused = phone
        .repo
        .reset(ours, dmv_repo::ResetMode::Hard, &Silent)
        .unwrap_err();
    assert!(
        matches!(refused, dmv_repo::RepoError::MergeInProgress { .. }),
        "{refused:?}"
    );
    phone.repo.merges().merge_abort().unwrap();
    let first = phone.repo.resolve("HEAD~1").unwrap();
    phone
        .repo
        .reset(first, dmv_repo::ResetMode::Hard, &Silent)
        .unwrap();
    assert!(phone.repo.status().unwrap().is_clean());
    assert_eq!(phone.read("f00/p1.raw").unwrap(), noise(FILE, 2));
    assert_eq!(phone.absent(), outside);

    // A stash and its pop, with files outside the slice around.
    phone.write("f00/p0.raw", noise(FILE, 504));
    let stashed = phone.repo.merges().stash_push(Some("wip"), false, &Silent);
    assert!(stashed.unwrap().is_some());
    assert!(phone.repo.status().unwrap().is_clean());
    assert_eq!(phone.read("f00/p0.raw").unwrap(), noise(FILE, 1));
    phone
        .repo
        .merges()
        .stash_apply(0, true, false, &Silent)
        .unwrap();
    assert_eq!(phone.read("f00/p0.raw").unwrap(), noise(FILE, 504));
    assert_eq!(phone.absent(), outside);
    phone.assert_fsck_clean();
}

/// A full clone or pull from a partial replica stopped on the first file it
/// lacked (issue 42, item 2). What the source lacks comes from the other
/// remotes, or the clone stops naming the files and who holds them, with
/// everything else in place.
#[test]
fn a_full_clone_or_pull_from_a_partial_replica_gets_the_rest_elsewhere_or_names_where_it_is() {
    let fleet = Fleet::new();
    let studio = studio_with(&fleet, &[("f00/p0.raw", 1), ("f00/p1.raw", 2)]);
    let laptop = fleet.full("laptop");
    let mut desk = fleet.full("desk");
    laptop.drop_data(&["f00/p0.raw"], 1).unwrap();

    // A full clone of the laptop: whole but for the dropped file, which it names with its holder.
    let stopped = match fleet.clone_from("tablet", &laptop.dir, "full") {
        Ok(_) => panic!("a full clone of a partial replica succeeded"),
        Err(e) => e,
    };
    let (files, tried) = match &stopped {
        dmv_sync::SyncError::NoRemoteReachable { files, tried } => (files, tried),
        other => panic!("{other:?}"),
    };
    let hub = fleet.hub_path().display().to_string();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with("f00/p0.raw (held by ") && files[0].contains(&hub),
        "{files:?}"
    );
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert!(
        tried[0].starts_with("origin (does not have it"),
        "{tried:?}"
    );
    let mut tablet = dmv_fixtures::Replica {
        name: "tablet".into(),
        dir: fleet.folder().join("tablet"),
        repo: dmv_repo::Repository::open(&fleet.folder().join("tablet")).unwrap(),
    };
    assert_eq!(tablet.read("f00/p1.raw").unwrap(), noise(FILE, 2));
    assert_eq!(tablet.absent(), ["f00/p0.raw"]);
    assert!(tablet.repo.status().unwrap().is_clean());
    // fsck says what this full replica lacks.
    let report = tablet.repo.maintenance().fsck(false, &Silent).unwrap();
    let missing: Vec<&[u8]> = report.missing.iter().map(|f| &f.path[..]).collect();
    assert_eq!(missing, [b"f00/p0.raw"]);
    // With a remote that holds it, get brings it.
    tablet.add_remote("hub", fleet.hub_path());
    tablet.get(&["f00/p0.raw"]).unwrap();
    assert_eq!(tablet.read("f00/p0.raw").unwrap(), noise(FILE, 1));
    tablet.assert_fsck_clean();

    // New work reaches the laptop, which drops part of it; the desk pulls from the laptop:
    // what the laptop lacks comes from the hub, and the desk stays a full replica.
    studio.write("f00/p2.raw", noise(FILE, 77));
    studio.commit_all("more");
    studio.push().unwrap();
    laptop.pull().unwrap();
    laptop.drop_data(&["f00/p2.raw"], 1).unwrap();
    desk.add_remote("laptop", &laptop.dir);
    let remote = dmv_sync::find_remote(&desk.repo, "laptop").unwrap();
    let mut connection = remote.connect().unwrap();
    dmv_sync::pull(
        &desk.repo,
        connection.as_mut(),
        "laptop",
        Some("main"),
        &Silent,
    )
    .unwrap();
    assert_eq!(desk.read("f00/p2.raw").unwrap(), noise(FILE, 77));
    assert!(desk.absent().is_empty());
    desk.assert_fsck_clean();
}

fn writable(path: &std::path::Path) -> bool {
    !std::fs::metadata(path).unwrap().permissions().readonly()
}

/// The repository's own rules (`.dmvignore`, `.dmvattributes`, in any
/// folder) hold in every slice as in a full clone: their files arrive
/// with the history, so adding everything leaves ignored junk out, status
/// does not list it, and get writes a lockable file read-only.
#[test]
fn every_slice_applies_the_repositorys_rules() {
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    let rules = [
        (".dmvignore", "*.tmp\n.DS_Store\n"),
        (".dmvattributes", "*.psd lockable\n"),
        ("raw/.dmvignore", "*.xmp\n"),
    ];
    for (path, text) in rules {
        studio.write(path, text);
    }
    studio.write("raw/a.cr3", noise(64 << 10, 1));
    studio.write("cover.psd", noise(64 << 10, 2));
    studio.commit_all("rules and media");
    studio.push().unwrap();
    for slice in ["meta", "paths:raw", "recent:1"] {
        let d = fleet.partial(&slice.replace([':', '/'], "-"), slice);
        for (path, text) in rules {
            assert_eq!(d.read(path).unwrap(), text.as_bytes(), "{slice}: {path}");
        }
        let absent: &[&str] = match slice {
            "meta" => &["cover.psd", "raw/a.cr3"],
            "paths:raw" => &["cover.psd"],
            _ => &[],
        };
        assert_eq!(d.absent(), absent, "{slice}");
        for junk in ["junk.tmp", ".DS_Store", "raw/a.xmp"] {
            d.write(junk, "junk");
        }
        d.write("new.txt", "kept\n");
        let status = d.repo.status().unwrap();
        assert_eq!(status.untracked, [b"new.txt"], "{slice}: only new.txt");
        assert!(status.unstaged.is_empty() && status.staged.is_empty());
        assert_eq!(
            (status.absent, status.tracked),
            (absent.len(), 5),
            "{slice}"
        );
        d.repo
            .worktree()
            .add(&[Vec::new()], false, &Silent)
            .unwrap();
        let status = d.repo.status().unwrap();
        let staged: Vec<&[u8]> = status.staged.iter().map(|c| &c.path[..]).collect();
        assert_eq!(
            staged,
            [b"new.txt"],
            "{slice}: adding all staged only new.txt"
        );
        if slice != "recent:1" {
            d.get(&["cover.psd"]).unwrap();
        }
        assert_eq!(d.read("cover.psd").unwrap(), noise(64 << 10, 2));
        assert!(
            !writable(&d.dir.join("cover.psd")),
            "{slice}: a lockable file is read-only until locked"
        );
        assert!(writable(&d.dir.join("new.txt")));
    }
}

/// A `recent:1` replica holds its newest commit's data, commits and pushes
/// (the hub has all it lacks), restores an old version by fetching it, and
/// syncs with every remote.
#[test]
fn a_recent_slice_commits_pushes_restores_on_demand_and_syncs_with_every_remote() {
    let fleet = Fleet::new();
    let mut src = fleet.full("src");
    for (path, seed) in [("a/1.raw", 1), ("b/2.raw", 2), ("a/1.raw", 3)] {
        src.write(path, noise(FILE, seed));
        src.commit_all(path);
    }
    src.push().unwrap();
    let hub2 = fleet.bare("hub2");
    src.add_remote("hub2", &hub2);
    src.push_to("hub2").unwrap();

    // recent:1: the files of the newest commit, not the first version of a/1.raw.
    let dir = fleet.folder().join("r");
    let plan = dmv_sync::ClonePlan::new(dmv_sync::CloneOptions {
        source: fleet.hub_path().display().to_string(),
        directory: Some(dir.clone()),
        slice: dmv_repo::Slice::parse("recent:1").unwrap(),
        ..Default::default()
    })
    .unwrap();
    let mut hub = plan.spec.connect().unwrap();
    let cloned = plan.run(hub.as_mut(), &Silent).unwrap();
    assert_eq!(cloned.stats.chunk_bytes, 2 * FILE as u64);
    let mut r = dmv_fixtures::Replica {
        name: "r".into(),
        dir,
        repo: cloned.repo,
    };
    assert_eq!(r.present().len(), 2);
    assert!(r.absent().is_empty());
    let first = r.repo.resolve("HEAD~2").unwrap();
    let old = r
        .repo
        .copies()
        .availability(&r.repo.commit(&first).unwrap().tree, &[])
        .unwrap();
    let old_absent: Vec<&[u8]> = old
        .iter()
        .filter(|f| !f.present)
        .map(|f| &f.path[..])
        .collect();
    assert_eq!(old_absent, [b"a/1.raw"]);

    // A partial replica commits and pushes: the remote has the data it lacks.
    r.write("new.raw", noise(FILE, 4));
    r.commit_all("from the partial replica");
    r.push().unwrap();
    let report = fleet.hub().maintenance().fsck(false, &Silent).unwrap();
    assert_eq!(report.problem_count(), 0, "{:?}", report.problems);

    // Restoring an old version fetches its data on demand.
    let oldest = r.repo.resolve("HEAD~3").unwrap();
    dmv_sync::restore(
        &r.repo,
        &[b"a/1.raw".to_vec()],
        Some(oldest),
        false,
        &Silent,
    )
    .unwrap();
    assert_eq!(r.read("a/1.raw").unwrap(), noise(FILE, 1));
    dmv_sync::restore(&r.repo, &[b"a/1.raw".to_vec()], None, false, &Silent).unwrap();
    assert_eq!(r.read("a/1.raw").unwrap(), noise(FILE, 3));
    assert!(r.repo.status().unwrap().is_clean());

    // Syncing with every remote: src's new commit comes from origin, and both hubs get the merge.
    r.add_remote("hub2", &hub2);
    src.write("b/3.raw", noise(FILE, 5));
    src.commit_all("four");
    src.pull().unwrap();
    src.push().unwrap();
    dmv_sync::sync_all(&r.repo, &Silent).unwrap();
    assert_eq!(r.read("b/3.raw").unwrap(), noise(FILE, 5));
    let head = r.repo.head_commit().unwrap().unwrap();
    let second = dmv_repo::Repository::open(&hub2).unwrap();
    for (name, hub) in [("hub", fleet.hub()), ("hub2", second)] {
        assert_eq!(
            hub.refs.get("refs/heads/main").unwrap(),
            Some(head),
            "{name}"
        );
        let report = hub.maintenance().fsck(false, &Silent).unwrap();
        assert_eq!(report.problem_count(), 0, "{name}: {:?}", report.problems);
    }
    r.assert_fsck_clean();
}

/// A meta clone's dirstate is kept over the tree it was checked out from
/// (its files absent unless it says otherwise): gc keeps that tree even
/// when nothing else reaches it, and the dirstate stays small as files
/// arrive, are staged and are committed.
#[test]
fn gc_keeps_the_tree_a_meta_clones_dirstate_is_over() {
    use dmv_repo::store::GcOptions;
    use dmv_repo::{CommitRequest, Committed, GcPolicy, Head};
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    for f in 0..4u64 {
        for p in 0..50u64 {
            studio.write(&format!("f{f:02}/p{p}.raw"), noise(1024, f * 100 + p + 1));
        }
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    let mut m = fleet.partial("m", "meta");
    assert_eq!(m.absent().len(), 200);
    m.get(&["f01/p3.raw"]).unwrap();
    m.write("new.txt", "new");
    (m.repo.worktree())
        .add(&[b"new.txt".to_vec()], false, &Silent)
        .unwrap();
    m.repo.rm_settling(&[b"f02/p7.raw".to_vec()], true).unwrap();
    // Its own entries: the file got, the one added, the one no longer staged.
    let dirstate = std::fs::read(m.dir.join(".dmv/dirstate")).unwrap();
    assert_eq!(
        (&dirstate[8..12], dirstate[44]),
        (&2u32.to_le_bytes()[..], 3),
        "version 2, three entries of its own"
    );
    // The only commit that reached the tree is amended away, its remote
    // branch removed and the reflog pruned: only the dirstate names it now.
    let amend = CommitRequest {
        message: Some("amended"),
        all: false,
        amend: true,
        allow_empty: false,
    };
    let committed = m.repo.commit_with(&amend, &Silent).unwrap();
    assert!(matches!(committed, Committed::Made { .. }), "{committed:?}");
    dmv_sync::remove_remote(&mut m.repo, "origin").unwrap();
    let policy = GcPolicy {
        prune_reflog: true,
        store: GcOptions {
            keep_recent: std::time::Duration::ZERO,
            ..Default::default()
        },
    };
    m.repo.maintenance().gc(policy, &Silent).unwrap();
    m.reopen();
    let s = m.repo.status().unwrap();
    assert!(
        s.staged.is_empty() && s.unstaged.is_empty() && s.untracked.is_empty(),
        "{s:?}"
    );
    assert_eq!(m.absent().len(), 4 * 50 - 2);
    assert_eq!(m.present(), ["f01/p3.raw", "new.txt"]);
    m.assert_fsck_clean();
    // Files written after a checkout are kept over the new tree.
    let head = m.repo.head_commit().unwrap().unwrap();
    m.repo
        .create_ref("refs/heads/other", head, "branch: created")
        .unwrap();
    m.repo
        .switch_to(&Head::Branch("refs/heads/other".into()), &Silent)
        .unwrap();
    let len = std::fs::metadata(m.dir.join(".dmv/dirstate"))
        .unwrap()
        .len();
    assert!(len < 1024, "the dirstate holds {len} bytes");
    assert_eq!(m.read("f01/p3.raw").unwrap(), noise(1024, 104));
}

/// A get of a file whose node is here but one of whose chunks was lost
/// (a get or drop cut short) fetches only what is missing.
#[test]
fn get_completes_a_file_whose_node_is_here_without_all_its_chunks() {
    use dmv_repo::store::object::FileNode;
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    studio.write("f00/p0.raw", noise(4 << 20, 1));
    studio.commit_all("shoot");
    studio.push().unwrap();
    let mut m = fleet.partial("m", "meta");
    // Small packs: the file's chunks spread over several, its node comes last.
    m.repo
        .update_config(|cfg| {
            cfg.pack_size_limit = 1 << 20;
            Ok::<_, dmv_repo::RepoError>(())
        })
        .unwrap();
    m.reopen();
    m.get(&["f00/p0.raw"]).unwrap();
    // Lose the pack of its first chunk.
    let repo = &m.repo;
    let tree = repo.head_tree().unwrap().unwrap();
    let file = dmv_repo::tree::lookup(&repo.store, &tree, b"f00/p0.raw")
        .unwrap()
        .unwrap();
    let read =
        |id: &ObjectId| -> FileNode { repo.store.read_decoded(id, ObjectKind::FileNode).unwrap() };
    let mut node = read(&file.id);
    while node.level > 0 {
        node = read(&node.entries[0].id);
    }
    let chunk_pack = repo
        .store
        .locate(&node.entries[0].id)
        .unwrap()
        .unwrap()
        .pack;
    assert_ne!(
        chunk_pack,
        repo.store.locate(&file.id).unwrap().unwrap().pack
    );
    let packs = m.dir.join(".dmv/objects/packs");
    for ext in ["pack", "idx"] {
        let name = dmv_repo::store::pack_file_name(&chunk_pack);
        std::fs::remove_file(packs.join(name).with_extension(ext)).unwrap();
    }
    let _ = std::fs::remove_file(packs.join(dmv_repo::store::MULTI_PACK_INDEX));
    m.reopen();
    assert_eq!(m.absent(), ["f00/p0.raw"]);

    let got = m.get(&["f00/p0.raw"]).unwrap();
    assert_eq!(got.fetched, 1);
    let received = got.stats.chunk_bytes;
    assert!(
        received > 0 && received < 2 << 20,
        "only the lost chunks: {received}"
    );
    assert_eq!(m.present(), ["f00/p0.raw"]);
    let mut bytes = Vec::new();
    m.repo.store.write_content(&file.id, &mut bytes).unwrap();
    assert!(bytes == noise(4 << 20, 1), "the file reads back whole");
    assert_eq!(m.read("f00/p0.raw").unwrap(), noise(4 << 20, 1));
    m.assert_fsck_clean();
}

/// The bytes of the files under `dir`, folders included.
fn bytes_under(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| match p.is_dir() {
            true => bytes_under(&p),
            false => p.metadata().unwrap().len(),
        })
        .sum()
}

/// A `paths:` clone receives exactly its slice's data and holds its
/// files; data of the slice that vanished is missing (not absent) until
/// a get brings it back; get, a get of another commit, a read of a file
/// and a widening each fetch exactly what they name, and pulls keep to
/// the slice. dmv-cli's tests/partial.rs keeps get's `-q` and the one
/// line a read with no reachable remote prints.
#[test]
fn a_paths_clone_holds_its_slice_and_gets_the_rest_on_demand() {
    use dmv_repo::store::GcOptions;
    use dmv_repo::GcPolicy;
    // Six folders, each a video between two photos, all distinct noise.
    const VIDEO: usize = 256 << 10;
    const PHOTO: usize = 48 << 10;
    const FOLDER: u64 = (VIDEO + 2 * PHOTO) as u64;
    let size = |p: usize| if p == 1 { VIDEO } else { PHOTO };
    let seed = |f: usize, p: usize| (f * 100 + p) as u64 + 1;
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    for f in 0..6 {
        for p in 0..3 {
            studio.write(&format!("f{f:02}/p{p}.raw"), noise(size(p), seed(f, p)));
        }
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    let original = |path: &str| studio.read(path).unwrap();

    let dir = fleet.folder().join("a");
    let plan = dmv_sync::ClonePlan::new(dmv_sync::CloneOptions {
        source: fleet.hub_path().display().to_string(),
        directory: Some(dir.clone()),
        slice: dmv_repo::Slice::parse("paths:f01,f03").unwrap(),
        ..Default::default()
    })
    .unwrap();
    let mut hub = plan.spec.connect().unwrap();
    let cloned = plan.run(hub.as_mut(), &Silent).unwrap();
    drop(hub);
    // Exactly the slice's chunks.
    assert_eq!(cloned.stats.chunk_bytes, 2 * FOLDER);
    let mut a = dmv_fixtures::Replica {
        name: "a".into(),
        dir,
        repo: cloned.repo,
    };
    assert_eq!(a.repo.config.slice.to_string(), "paths:f01,f03");
    for f in 0..6 {
        for p in 0..3 {
            let rel = format!("f{f:02}/p{p}.raw");
            match f == 1 || f == 3 {
                true => assert!(a.read(&rel).unwrap() == original(&rel), "{rel}"),
                false => assert!(a.read(&rel).is_none(), "{rel}"),
            }
        }
    }
    assert_eq!((a.present().len(), a.absent().len()), (6, 12));
    assert!(
        a.repo.status().unwrap().is_clean(),
        "absent files are not deleted ones"
    );
    let fsck = a.repo.maintenance().fsck(true, &Silent).unwrap();
    assert_eq!(fsck.problem_count(), 0, "{:?}", fsck.problems);
    assert_eq!(fsck.report.absent.len(), 12);

    // Data inside the slice that vanished is missing, not absent: fsck
    // says so, get brings back only that.
    let packs = a.dir.join(".dmv/objects/packs");
    let before_loss = bytes_under(&packs);
    let inside = dmv_repo::tree::lookup(
        &a.repo.store,
        &a.repo.head_tree().unwrap().unwrap(),
        b"f03/p2.raw",
    )
    .unwrap()
    .unwrap();
    // The store alone frees it: no drop is recorded.
    a.repo
        .store
        .drop_file_data(|| a.repo.maintenance().roots(), &[inside.id].into())
        .unwrap();
    let fsck = a.repo.maintenance().fsck(false, &Silent).unwrap();
    let missing: Vec<&[u8]> = fsck.missing.iter().map(|f| &f.path[..]).collect();
    assert_eq!(missing, [b"f03/p2.raw"]);
    let got = a.get(&["f01", "f03"]).unwrap();
    assert_eq!(
        (got.fetched, got.stats.chunk_bytes),
        (1, PHOTO as u64),
        "only what was lost"
    );
    a.assert_fsck_clean();
    assert!(
        bytes_under(&packs) <= before_loss + (1 << 20),
        "the same data again: {} > {before_loss}",
        bytes_under(&packs)
    );

    // get: exactly that file's bytes, written into the working tree; once
    // here, a second get has nothing to fetch.
    let got = a.get(&["f05/p1.raw"]).unwrap();
    assert_eq!(
        (got.fetched, got.written, got.stats.chunk_bytes),
        (1, 1, VIDEO as u64)
    );
    assert!(a.read("f05/p1.raw").unwrap() == original("f05/p1.raw"));
    assert!(a.repo.status().unwrap().is_clean());
    let again = a.get(&["f05/p1.raw"]).unwrap();
    assert_eq!((again.fetched, again.stats.chunk_bytes), (0, 0));
    // gc keeps what get fetched.
    let policy = GcPolicy {
        prune_reflog: false,
        store: GcOptions {
            keep_recent: std::time::Duration::ZERO,
            ..Default::default()
        },
    };
    a.repo.maintenance().gc(policy, &Silent).unwrap();
    a.reopen();
    assert!(a.present().contains(&"f05/p1.raw".to_string()));
    a.assert_fsck_clean();

    // A new commit at the hub: pull keeps to the slice.
    studio.write("f01/new.raw", noise(FILE, 9001));
    studio.write("f04/new.raw", noise(FILE, 9002));
    studio.commit_all("more");
    studio.push().unwrap();
    a.pull().unwrap();
    assert!(a.read("f01/new.raw").unwrap() == noise(FILE, 9001));
    assert!(a.read("f04/new.raw").is_none());
    assert!(a.repo.status().unwrap().is_clean());

    // Widening fetches what is now inside, in every commit.
    let wider = dmv_repo::Slice::parse("paths:f01,f03,f02").unwrap();
    let changed = dmv_sync::set_slice(&mut a.repo, wider, None, &Silent).unwrap();
    assert_eq!(changed.old, "paths:f01,f03");
    assert_eq!(
        (changed.got.fetched, changed.got.stats.chunk_bytes),
        (3, FOLDER)
    );
    assert!(a.read("f02/p2.raw").unwrap() == original("f02/p2.raw"));
    a.assert_fsck_clean();

    // Absent data of another commit: a get of it leaves the working tree alone.
    let previous = a.repo.resolve("HEAD~1").unwrap();
    let options = dmv_sync::GetOptions {
        paths: vec![b"f04".to_vec()],
        rev: Some(previous),
        ..Default::default()
    };
    let got = dmv_sync::get(&a.repo, &options, &Silent).unwrap();
    assert_eq!(
        (got.fetched, got.written, got.stats.chunk_bytes),
        (3, 0, FOLDER)
    );
    assert!(
        a.read("f04/p0.raw").is_none(),
        "the working tree is left alone"
    );
    // A read fetches on demand, and HEAD's version is written too.
    let mut read = Vec::new();
    dmv_sync::write_file_at(&a.repo, "HEAD", "f00/p0.raw", &mut read, &Silent).unwrap();
    assert!(read == original("f00/p0.raw"));
    assert!(a.read("f00/p0.raw").unwrap() == read);
    assert!(a.present().contains(&"f00/p0.raw".to_string()));
    assert!(a.repo.status().unwrap().is_clean());
    // With no remote reachable, the read names what it tried and gives nothing.
    std::fs::rename(fleet.hub_path(), fleet.folder().join("away")).unwrap();
    let mut read = Vec::new();
    let err =
        dmv_sync::write_file_at(&a.repo, "HEAD", "f00/p1.raw", &mut read, &Silent).unwrap_err();
    match &err {
        dmv_sync::SyncError::NoRemoteReachable { files, tried } => {
            assert!(files[0].starts_with("f00/p1.raw"), "{files:?}");
            assert!(tried.iter().any(|t| t.starts_with("origin")), "{tried:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(read.is_empty() && a.read("f00/p1.raw").is_none());
}

/// The rules travel with the branch a meta clone switches to, and locks
/// decide a lockable file's mode whenever its data arrives: a lock taken
/// on an absent file (over the in-process path remote) makes it writable
/// when get writes it; unlocked, it is read-only again.
#[test]
fn a_meta_clone_applies_the_rules_of_the_branch_it_switches_to_and_its_locks() {
    let fleet = Fleet::new();
    let mut studio = fleet.full("studio");
    studio.write(".dmvattributes", "*.psd lockable\n");
    studio.write("cover.psd", noise(8 << 10, 1));
    studio.write("plate.png", noise(8 << 10, 2));
    let one = studio.commit_all("one");
    studio.push().unwrap();
    studio
        .repo
        .create_ref("refs/heads/art", one, "branch: created")
        .unwrap();
    studio.repo.switch_to_branch("art", &Silent).unwrap();
    studio.write(".dmvattributes", "*.psd lockable\n*.png lockable\n");
    studio.commit_all("plates are lockable on art");
    studio.push().unwrap();

    let mut phone = fleet.partial("phone", "meta");
    phone.get(&["plate.png"]).unwrap();
    assert!(
        writable(&phone.dir.join("plate.png")),
        "not lockable on main"
    );
    phone.drop_data(&["plate.png"], 1).unwrap();
    let made = phone.repo.switch_to_branch("art", &Silent).unwrap();
    assert_eq!(made.as_deref(), Some("origin/art"));
    assert_eq!(
        phone.read(".dmvattributes").unwrap(),
        b"*.psd lockable\n*.png lockable\n"
    );
    assert_eq!(phone.absent(), ["cover.psd", "plate.png"]);
    phone.get(&["plate.png"]).unwrap();
    assert!(
        !writable(&phone.dir.join("plate.png")),
        "lockable on art: read-only until locked"
    );

    // A lock taken while the file is absent holds when its data arrives.
    let connect = || {
        let remote = dmv_sync::lock_remote(&phone.repo, None).unwrap();
        remote.connect().unwrap()
    };
    let cover = ["cover.psd".to_string()];
    let taken = dmv_sync::lock(&phone.repo, connect().as_mut(), &cover).unwrap();
    assert_eq!(taken.locks.len(), 1, "{taken:?}");
    assert!(phone.read("cover.psd").is_none());
    phone.get(&["cover.psd"]).unwrap();
    assert_eq!(phone.read("cover.psd").unwrap(), noise(8 << 10, 1));
    assert!(
        writable(&phone.dir.join("cover.psd")),
        "locked by me: writable"
    );
    let released = dmv_sync::unlock(&phone.repo, connect().as_mut(), &cover, false).unwrap();
    assert_eq!(released.locks.len(), 1, "{released:?}");
    assert!(
        !writable(&phone.dir.join("cover.psd")),
        "unlocked: read-only again"
    );
    let listed = dmv_sync::list_locks(&phone.repo, connect().as_mut()).unwrap();
    assert!(listed.locks.is_empty(), "{listed:?}");
}

/// The files of a tar archive: (path, bytes), in order.
fn tar_files(mut tar: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    while tar.len() >= 512 && tar[0] != 0 {
        let name = String::from_utf8_lossy(&tar[..100])
            .trim_end_matches('\0')
            .to_string();
        let size = std::str::from_utf8(&tar[124..136]).unwrap();
        let size = u64::from_str_radix(size.trim_matches(['\0', ' ']), 8).unwrap() as usize;
        files.push((name, tar[512..512 + size].to_vec()));
        tar = &tar[512 + size.div_ceil(512) * 512..];
    }
    files
}

/// A diff of two commits whose text is not here reads as in a full clone:
/// the versions the diff reads are fetched first, and nothing else is.
#[test]
fn a_meta_clone_diffs_text_it_lacks_as_a_full_clone_does() {
    let fleet = Fleet::new();
    let mut studio = notes_and_a_photo(&fleet);
    let one = studio.repo.head_commit().unwrap().unwrap();
    studio
        .repo
        .create_ref("refs/heads/fix", one, "branch: created")
        .unwrap();
    studio.repo.switch_to_branch("fix", &Silent).unwrap();
    studio.write("notes.txt", with_line(NOTES, 4, "E"));
    studio.commit_all("fix the last line");
    studio.push().unwrap();
    let phone = fleet.partial("phone", "meta");
    phone.get(&["notes.txt"]).unwrap();
    phone.write("notes.txt", with_line(NOTES, 0, "A"));
    let mine = phone.commit_all("first line");

    let fix = phone.repo.resolve("origin/fix").unwrap();
    let flat = |c| {
        let tree = phone.repo.commit(&c).unwrap().tree;
        dmv_repo::tree::flatten(&phone.repo.store, &tree).unwrap()
    };
    let changes = dmv_repo::diff_flat(&flat(mine), &flat(fix));
    assert_eq!(changes.len(), 1, "only notes.txt differs");
    let versions = phone
        .repo
        .history()
        .versions_a_diff_reads(&changes, false)
        .unwrap();
    let fetched = dmv_sync::fetch_versions(&phone.repo, versions, &Silent).unwrap();
    assert_eq!(fetched, 1, "fix's version of notes.txt; main's is here");
    let side = |e| phone.repo.history().diff_side(e, None).unwrap();
    let c = &changes[0];
    assert_eq!(
        (side(c.old.as_ref()), side(c.new.as_ref())),
        (
            dmv_repo::DiffSide::Text(with_line(NOTES, 0, "A")),
            dmv_repo::DiffSide::Text(with_line(NOTES, 4, "E"))
        )
    );
    assert!(phone.read("photo.jpg").is_none());
    assert_eq!(phone.absent(), ["photo.jpg"]);
    assert!(phone.repo.status().unwrap().is_clean());
}

/// An archive of HEAD in a meta clone holds every file, as in a full
/// clone: what it packs is fetched first and left stored, not written
/// into the working tree. Where the data cannot be had, the fetch names
/// the file and the archive refuses before writing a byte.
#[test]
fn a_meta_clone_archives_as_a_full_clone_does() {
    let fleet = Fleet::new();
    notes_and_a_photo(&fleet);
    for slice in ["meta", "full"] {
        let phone = fleet.partial(&format!("phone-{slice}"), slice);
        phone.get(&["notes.txt"]).unwrap();
        let head = phone.repo.head_commit().unwrap().unwrap();
        let files = phone.repo.history().files_to_archive(&head, &[]).unwrap();
        let fetched = dmv_sync::fetch_versions(&phone.repo, files, &Silent).unwrap();
        assert_eq!(fetched, usize::from(slice == "meta"), "{slice}: the photo");
        let mut tar = Vec::new();
        let held = (phone.repo.history())
            .archive(&head, &[], "", dmv_repo::ArchiveFormat::Tar, &mut tar)
            .unwrap();
        assert_eq!(held, 2, "{slice}");
        assert_eq!(
            tar_files(&tar),
            [
                ("notes.txt".to_string(), NOTES.as_bytes().to_vec()),
                ("photo.jpg".to_string(), noise(64 << 10, 1))
            ],
            "{slice}"
        );
        // The working tree stays as it was: the photo's data is stored, its file not written.
        let photo = (phone.repo.copies().availability_here(&[]).unwrap())
            .into_iter()
            .find(|f| f.path == b"photo.jpg")
            .unwrap();
        let written = (slice == "full").then_some(true).or(Some(false));
        assert_eq!((photo.present, photo.written), (true, written), "{slice}");
        assert_eq!(phone.read("photo.jpg").is_some(), slice == "full");
        assert!(phone.repo.status().unwrap().is_clean(), "{slice}");
    }

    let offline = fleet.partial("offline", "meta");
    std::fs::rename(fleet.hub_path(), fleet.folder().join("away")).unwrap();
    let head = offline.repo.head_commit().unwrap().unwrap();
    let files = offline.repo.history().files_to_archive(&head, &[]).unwrap();
    match dmv_sync::fetch_versions(&offline.repo, files, &Silent) {
        Err(dmv_sync::SyncError::NoRemoteReachable { files, .. }) => {
            assert!(
                files.iter().any(|f| f.starts_with("notes.txt")),
                "{files:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    let mut tar = Vec::new();
    let refused = (offline.repo.history())
        .archive(&head, &[], "", dmv_repo::ArchiveFormat::Tar, &mut tar)
        .unwrap_err();
    assert!(
        matches!(&refused, dmv_repo::RepoError::DataAbsent { path } if path == "notes.txt"),
        "{refused:?}"
    );
    assert!(tar.is_empty(), "nothing written before the refusal");
}

/// A get of one file after `whereis` reads that file's holders, not the
/// whole tree the location log claims (issue 73): whereis leaves the hub's
/// log here, which claims HEAD's tree (every file held by the studio and
/// the hub), and reading it as records listed every file of the tree, a
/// tree node each folder, for every get. Counted in index probes (each
/// object read probes the store's index): fewer than the tree's folders.
#[test]
fn a_get_of_one_file_after_whereis_reads_its_path_not_the_claimed_tree() {
    const FOLDERS: usize = 64;
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    for d in 0..FOLDERS {
        for f in 0..20 {
            studio.write(&format!("d{d:02}/f{f:02}"), format!("file {d} {f}"));
        }
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    let mut phone = fleet.partial("phone", "meta");
    assert_eq!(phone.whereis("").len(), FOLDERS * 20);
    for (i, path) in ["d07/f03", "d41/f19", "d63/f00"].into_iter().enumerate() {
        // Each get a command of its own, as in the shell: nothing read before is kept.
        phone.reopen();
        let before = phone.repo.store.index_probes();
        let got = phone.get(&[path]).unwrap();
        let probes = phone.repo.store.index_probes() - before;
        assert_eq!((got.fetched, got.written), (1, 1));
        assert!(
            probes < FOLDERS as u64,
            "get {i} of {path} probed the index {probes} times: the claimed tree was walked"
        );
        eprintln!("get of {path}: {probes} index probes");
    }
    // The log does claim the tree: read whole, it lists every folder.
    phone.reopen();
    let before = phone.repo.store.index_probes();
    let log = phone.repo.copies().load_locations().unwrap();
    assert!(phone.repo.store.index_probes() - before > FOLDERS as u64);
    assert!(log.records.len() >= 2 * FOLDERS * 20);
    // And it still says who holds them: the studio, the hub, and now the phone.
    assert_eq!(phone.whereis("d41/f19")[0].copies.len(), 3);
}

/// A mount reads a folder of absent photos one piece fetch at a time, each
/// sealed as a pack of its own: the fetcher tidies after each, so the
/// store holds a handful of packs, not one per file (at thousands, every
/// lookup's reload listed them all).
#[test]
fn piece_fetches_one_file_at_a_time_leave_a_handful_of_packs() {
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    for p in 0..80u64 {
        studio.write(&format!("day1/p{p:02}.jpg"), noise(2000, p + 1));
    }
    studio.commit_all("shoot");
    studio.push().unwrap();
    let phone = fleet.partial("phone", "meta");
    let dirstate = phone.repo.load_dirstate().unwrap();
    let files: Vec<_> = dirstate
        .entries
        .iter()
        .filter(|(_, e)| e.is_absent())
        .collect();
    let before = phone.pack_files();
    let mut fetcher = dmv_sync::PieceFetcher::new(&phone.repo);
    let (mut fetched, mut handed, mut most) = (0, 0, 0);
    for (path, entry) in files.iter() {
        // Each photo is one chunk: its id is the chunk's.
        fetched += fetcher
            .fetch_chunks(&entry.id, path, &[entry.id], &mut |id, content| {
                // What a reader is handed is the chunk's content, as checked.
                assert_eq!(id, entry.id);
                assert_eq!(ObjectId::hash(ObjectKind::Chunk, &content), id);
                handed += content.len();
            })
            .unwrap();
        most = most.max(phone.pack_files());
    }
    assert_eq!(fetched, 80 * 2000);
    assert_eq!(handed, 80 * 2000);
    assert!(
        most <= before + dmv_repo::store::AUTO_REPACK_SMALL_PACKS + 4,
        "{most} packs after {} fetches ({before} before)",
        files.len()
    );
    assert!(phone.absent().is_empty(), "{:?}", phone.absent());
    phone.assert_fsck_clean();
}

/// A fetch of file versions hands each chunk it stores to the caller as
/// it arrives, once, exactly as stored (a mount's open then takes a photo
/// fetched ahead from memory); a version already here hands nothing.
#[test]
fn a_fetch_of_versions_hands_each_chunk_it_stores_along() {
    let fleet = Fleet::new();
    let studio = notes_and_a_photo(&fleet);
    studio.write("film.mov", noise(3 << 20, 2));
    studio.commit_all("film");
    studio.push().unwrap();
    let phone = fleet.partial("phone", "meta");
    let head = phone.repo.head_commit().unwrap().unwrap();
    let files = phone.repo.history().files_to_archive(&head, &[]).unwrap();
    let fetch = |files: Vec<(Vec<u8>, dmv_repo::FlatEntry)>| {
        let mut handed: Vec<(ObjectId, Vec<u8>)> = Vec::new();
        let hand = &mut |id: &ObjectId, content: &[u8]| handed.push((*id, content.to_vec()));
        let fetched = dmv_sync::fetch_versions_along(
            &phone.repo,
            files,
            dmv_sync::Along::Hand(hand),
            &Silent,
        )
        .unwrap();
        (fetched, handed)
    };
    let (fetched, mut handed) = fetch(files.clone());
    assert_eq!(fetched, 3, "notes, photo and film");
    let mut chunks: Vec<ObjectId> = files
        .iter()
        .flat_map(|(_, e)| phone.repo.store.chunk_list(&e.id).unwrap())
        .map(|(id, _)| id)
        .collect();
    assert!(chunks.len() > 3, "the film is several chunks");
    chunks.sort();
    chunks.dedup();
    handed.sort();
    let ids: Vec<ObjectId> = handed.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, chunks, "each chunk handed, once");
    for (id, bytes) in &handed {
        let stored = phone.repo.store.read_kind(id, ObjectKind::Chunk).unwrap();
        assert_eq!(&stored, bytes, "chunk {} as stored", id.short());
    }
    let handed_bytes: usize = handed.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(handed_bytes, NOTES.len() + (64 << 10) + (3 << 20));
    let (fetched, handed) = fetch(files);
    assert_eq!((fetched, handed.len()), (0, 0), "all here: nothing fetched");
}
