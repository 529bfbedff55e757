//! Partial replicas through the library, on the fleet fixture (replicas of a
//! bare hub over in-process path remotes): what a phone's meta clone does
//! with the studio's work, counted in files and bytes, without the binary.

use dmv_fixtures::Fleet;
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
        let picked = dmv_sync::cherry_pick(&phone.repo, third, "third", &Silent).unwrap();
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
