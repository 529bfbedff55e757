//! The watch loop in-process, on the fleet fixture: a laptop's watcher
//! that frees what it sent keeps it freed through later syncs, where
//! others' new commits arrive beside the files it dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dmv_agent::WatchOptions;
use dmv_fixtures::Fleet;

mod common;
use common::{wait_for, Said};
use dmv_testkit::noise;

/// The id of shoot/notes.txt in the checked-out commit of the replica at `dir`
/// (opened now: the watcher commits and merges through its own handle).
fn notes_id(dir: &std::path::Path) -> Option<dmv_repo::store::ObjectId> {
    let repo = dmv_repo::Repository::open(dir).ok()?;
    let tree = repo.head_tree().ok()??;
    let files = dmv_repo::tree::flatten(&repo.store, &tree).ok()?;
    files.get(&b"shoot/notes.txt"[..]).map(|e| e.id)
}

#[test]
fn a_watcher_that_frees_what_it_sent_does_not_fetch_it_back() {
    let fleet = Fleet::new();
    let studio = fleet.full("studio");
    studio.write("shoot/notes.txt", "day one\n");
    studio.commit_all("one");
    studio.push().unwrap();
    let mut laptop = fleet.full("laptop");
    laptop.write("shoot/a.raw", noise(1 << 20, 1));

    let stop = Arc::new(AtomicBool::new(false));
    let said = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (dir, stop, said) = (laptop.dir.clone(), stop.clone(), said.clone());
        std::thread::spawn(move || {
            let repo = dmv_repo::Repository::open(&dir).unwrap();
            let options = WatchOptions {
                quiet: Duration::from_millis(200),
                poll: true,
                sync: true,
                sync_every: Duration::from_millis(300),
                check_every: None,
                drop_after_push: true,
                numcopies: Some(1),
            };
            dmv_agent::run(
                &repo,
                &options,
                stop,
                Arc::new(AtomicBool::new(false)),
                &mut Said(said),
            )
        })
    };
    // The photo is committed, pushed to the hub and freed here.
    let hub_has_it = || {
        let hub = fleet.hub();
        let tree = hub.head_tree().ok().flatten();
        tree.is_some_and(|t| {
            dmv_repo::tree::flatten(&hub.store, &t)
                .is_ok_and(|files| files.contains_key(&b"shoot/a.raw"[..]))
        })
    };
    wait_for("the photo to reach the hub", &said, hub_has_it);
    let freed = || laptop.absent().contains(&"shoot/a.raw".to_string());
    wait_for("the photo to be freed on the laptop", &said, freed);
    let stored = laptop.repo.maintenance().stats().unwrap().stored_bytes;

    // The studio's next commits arrive beside the freed photo, twice.
    for round in 0..2 {
        studio.pull().unwrap();
        studio.write("shoot/notes.txt", format!("day one, round {round}\n"));
        studio.commit_all("notes");
        studio.push().unwrap();
        let want = notes_id(&studio.dir);
        let arrived = || notes_id(&laptop.dir) == want;
        wait_for("the studio's notes to reach the laptop", &said, arrived);
    }
    // Two more syncs, for a fetch back (then a drop again) to show.
    let syncs = said.lock().unwrap().len();
    wait_for("two more syncs", &said, || {
        said.lock().unwrap().len() >= syncs + 2 || {
            std::thread::sleep(Duration::from_millis(700));
            true
        }
    });
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap().unwrap();

    assert!(
        laptop.absent().contains(&"shoot/a.raw".to_string()),
        "the freed photo stays absent"
    );
    let after = laptop.repo.maintenance().stats().unwrap().stored_bytes;
    assert!(
        after < stored + (256 << 10),
        "the laptop's store grew from {stored} to {after}: what it freed came back"
    );
    // The notes' new versions arrive and are freed in turn; the photo, 1 MiB, is freed once.
    let big_frees = said
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.starts_with("Freed"))
        .filter(|w| {
            w.split("bytes: ")
                .nth(1)
                .and_then(|b| b.split(',').next())
                .and_then(|b| b.parse::<u64>().ok())
                .is_some_and(|b| b >= 1 << 20)
        })
        .count();
    assert_eq!(
        big_frees,
        1,
        "the photo was fetched back and freed again: {:#?}",
        said.lock().unwrap()
    );
    // This handle was opened before the watcher's drops made the laptop partial.
    laptop.reopen();
    laptop.assert_fsck_clean();
}
