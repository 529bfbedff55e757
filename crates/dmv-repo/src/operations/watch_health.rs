//! `.dmv/watch-health.json`: what a watcher last did and what holds it
//! back, written by the watcher after each step and read by `dmv watch
//! --status` (or any front end), so a person who left it running for a
//! month sees at a glance whether it keeps up, and why not.

use crate::repository::handles::Maintenance;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{RepoError, RepoResult};

const FILE: &str = "watch-health.json";
/// Errors kept, the newest last: enough to see a pattern, never a log.
const ERRORS_KEPT: usize = 10;
/// Lines of `waiting` kept.
const WAITING_KEPT: usize = 20;
/// Bytes of one message kept (a remote's error can quote a page).
const MESSAGE_BYTES: usize = 1000;
/// The largest file read back: anything larger was not written here.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Something that happened, and when (seconds since the epoch).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moment {
    /// When, in seconds since the epoch.
    pub at: i64,
    /// What, in one line.
    pub what: String,
}

impl Moment {
    /// `what` at `at`, cut to [`MESSAGE_BYTES`] on a character boundary.
    pub fn new(at: i64, what: &str) -> Moment {
        let mut end = what.len().min(MESSAGE_BYTES);
        while !what.is_char_boundary(end) {
            end -= 1;
        }
        Moment {
            at,
            what: what[..end].replace('\n', " "),
        }
    }
}

/// How syncs with one remote went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteHealth {
    /// When a sync last reached it.
    pub last_reached: Option<i64>,
    /// When one last did not, and why.
    pub last_failed: Option<Moment>,
}

/// What a watcher last did and what holds it back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchHealth {
    /// When the watcher started.
    pub started: i64,
    /// Its last commit: the short id and message.
    pub last_commit: Option<Moment>,
    /// When it last looked for changes and found the tree settled.
    pub last_looked: Option<i64>,
    /// Per remote, by name.
    pub remotes: BTreeMap<String, RemoteHealth>,
    /// What holds changes back now, one line each (files still being
    /// written, a merge waiting for a person).
    pub waiting: Vec<String>,
    /// The last errors, oldest first.
    pub errors: Vec<Moment>,
}

impl WatchHealth {
    /// Keeps `what` among the last errors.
    pub fn note_error(&mut self, at: i64, what: &str) {
        self.errors.push(Moment::new(at, what));
        let extra = self.errors.len().saturating_sub(ERRORS_KEPT);
        self.errors.drain(..extra);
    }

    /// Notes that a sync reached `remote`, or did not and why.
    pub fn note_sync(&mut self, at: i64, remote: &str, failed: Option<&str>) {
        let health = self.remotes.entry(remote.to_string()).or_default();
        match failed {
            None => health.last_reached = Some(at),
            Some(why) => health.last_failed = Some(Moment::new(at, why)),
        }
    }

    /// Replaces what holds changes back.
    pub fn set_waiting(&mut self, lines: Vec<String>) {
        self.waiting = lines
            .into_iter()
            .take(WAITING_KEPT)
            .map(|l| Moment::new(0, &l).what)
            .collect();
    }
}

impl Maintenance<'_> {
    /// What the watcher of this repository last recorded; None when no
    /// watcher ever ran here, or its record cannot be read.
    pub fn watch_health(&self) -> Option<WatchHealth> {
        let path = self.dmv.join(FILE);
        let file = std::fs::File::open(&path).ok()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
            &mut bytes,
        )
        .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Records `health` for [`Maintenance::watch_health`], replacing the file whole.
    pub fn save_watch_health(&self, health: &WatchHealth) -> RepoResult<()> {
        let bytes = serde_json::to_vec_pretty(health).map_err(|e| RepoError::Scan {
            detail: format!("cannot encode {FILE}: {e}"),
        })?;
        crate::atomic::write_atomic(&self.dmv.join(FILE), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::repo::Repository;

    #[test]
    fn a_watchs_record_keeps_its_bounds_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        assert_eq!(repo.maintenance().watch_health(), None);
        let mut health = WatchHealth {
            started: 5,
            ..Default::default()
        };
        for i in 0..25 {
            health.note_error(i, &format!("error {i}\nsecond line"));
        }
        assert_eq!(health.errors.len(), ERRORS_KEPT);
        assert_eq!(health.errors[0].what, "error 15 second line");
        health.note_sync(30, "origin", None);
        health.note_sync(31, "origin", Some(&"é".repeat(2000)));
        let failed = health.remotes["origin"].last_failed.clone().unwrap();
        assert!(failed.what.len() <= MESSAGE_BYTES && failed.what.chars().all(|c| c == 'é'));
        assert_eq!(health.remotes["origin"].last_reached, Some(30));
        health.set_waiting((0..100).map(|i| format!("file {i}")).collect());
        assert_eq!(health.waiting.len(), WAITING_KEPT);
        repo.maintenance().save_watch_health(&health).unwrap();
        assert_eq!(repo.maintenance().watch_health(), Some(health));
        // Not what a watcher writes: no record rather than an error.
        std::fs::write(
            repo.dmv.join(FILE),
            vec![b'['; (MAX_FILE_BYTES + 10) as usize],
        )
        .unwrap();
        assert_eq!(repo.maintenance().watch_health(), None);
    }
}
