//! A watcher left running follows its configuration as a person changes it
//! from another process: a remote added after it started is synced too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dmv_agent::WatchOptions;
use dmv_fixtures::Fleet;
use dmv_repo::store::ChunkParams;
use dmv_repo::{RemoteConfig, Repository};

mod common;
use common::{wait_for, Said};

#[test]
fn a_remote_added_while_the_watcher_runs_is_synced_too() {
    let fleet = Fleet::new();
    let laptop = fleet.full("laptop");
    laptop.write("notes.txt", "one\n");
    laptop.commit_all("one");
    laptop.push().unwrap();
    let backup = fleet.folder().join("backup");
    Repository::init_with(&backup, ChunkParams::default(), true).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let said = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (dir, stop, said) = (laptop.dir.clone(), stop.clone(), said.clone());
        std::thread::spawn(move || {
            let repo = Repository::open(&dir).unwrap();
            let options = WatchOptions {
                quiet: Duration::from_millis(200),
                poll: true,
                sync: true,
                sync_every: Duration::from_millis(300),
                check_every: None,
                drop_after_push: false,
                numcopies: None,
            };
            let wake = Arc::new(AtomicBool::new(false));
            dmv_agent::run(&repo, &options, stop, wake, &mut Said(said))
        })
    };
    // Once it runs (its handle opened), a person adds a remote from another process.
    let watching = || {
        said.lock()
            .unwrap()
            .iter()
            .any(|w| w.starts_with("Watching"))
    };
    wait_for("the watcher to start", &said, watching);
    let mut person = Repository::open(&laptop.dir).unwrap();
    let remote = RemoteConfig {
        url: backup.to_string_lossy().into_owned(),
        ..Default::default()
    };
    dmv_sync::add_remote(&mut person, "backup", remote).unwrap();
    laptop.write("notes.txt", "two\n");

    let backed_up = || {
        let head = Repository::open(&laptop.dir)
            .unwrap()
            .head_commit()
            .unwrap();
        let there = Repository::open(&backup)
            .unwrap()
            .refs
            .get("refs/heads/main")
            .unwrap();
        there.is_some() && there == head
    };
    wait_for(
        "the remote added after the watcher started to be synced",
        &said,
        backed_up,
    );
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap().unwrap();
}
