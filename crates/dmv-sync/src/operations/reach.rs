//! How each remote answered when last asked: how long connecting took, how
//! fast its last transfer of file data went, or why it did not answer. Kept
//! in `.dmv/reach` (JSON, by URL) so that the next command tries the nearest
//! copy first and the one that stalled last; a cache, so a missing or
//! unreadable file is an empty one, and of two commands saving at the same
//! moment the last one's view is kept.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dmv_repo::Repository;
use serde::{Deserialize, Serialize};

use crate::operations::remote_spec::{connect_first, RemoteSpec};
use crate::transport::remote::Remote;
use crate::{SyncError, SyncResult};

/// Connecting (and the protocol's hello) within this is near: a server on
/// the same network, or a region's object store.
pub const NEAR_CONNECT: Duration = Duration::from_secs(1);
/// File data arriving slower than this (bytes a second) makes a remote far:
/// a phone's uplink, a metered or congested link.
pub const NEAR_SPEED: u64 = 1 << 20;
/// A transfer shorter than this says little about the link's speed.
const MEASURED_BYTES: u64 = 1 << 20;

/// A replica's availability class, best first: the order `get` tries
/// copies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// This replica.
    Here,
    /// Answered quickly last time, and its data came fast.
    Near,
    /// Never asked from here.
    Unknown,
    /// Answered last time, but slowly, or its data came slowly.
    Far,
    /// Did not answer last time it was asked.
    Unreachable,
}

impl Reach {
    /// The class's name, as `whereis` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Reach::Here => "here",
            Reach::Near => "near",
            Reach::Unknown => "unknown",
            Reach::Far => "far",
            Reach::Unreachable => "unreachable",
        }
    }
}

/// What was last seen of one remote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// When, in seconds since 1970.
    pub at: u64,
    /// How long connecting took, the last time it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<u64>,
    /// The speed of its last transfer of file data (of at least a MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_sec: Option<u64>,
    /// Why it did not answer, if it did not the last time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Seen {
    /// Its class, from what was seen.
    pub fn class(&self) -> Reach {
        if self.failed.is_some() {
            return Reach::Unreachable;
        }
        let slow_to_answer = self
            .connect_ms
            .is_some_and(|ms| ms > NEAR_CONNECT.as_millis() as u64);
        let slow_data = self.bytes_per_sec.is_some_and(|speed| speed < NEAR_SPEED);
        match self.connect_ms.is_none() && self.bytes_per_sec.is_none() {
            true => Reach::Unknown,
            false if slow_to_answer || slow_data => Reach::Far,
            false => Reach::Near,
        }
    }
}

/// What was last seen of each remote, by URL.
pub struct ReachBook {
    path: PathBuf,
    by_url: BTreeMap<String, Seen>,
    changed: bool,
}

impl ReachBook {
    /// The repository's book (empty when there is none yet, or it is unreadable).
    pub fn load(repo: &Repository) -> ReachBook {
        let path = repo.dmv.join("reach");
        let by_url = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        ReachBook {
            path,
            by_url,
            changed: false,
        }
    }

    /// What was last seen of the remote at `url`.
    pub fn seen(&self, url: &str) -> Option<&Seen> {
        self.by_url.get(url)
    }

    /// The class of the remote at `url` ([`Reach::Unknown`] if never asked).
    pub fn class(&self, url: &str) -> Reach {
        self.seen(url).map_or(Reach::Unknown, Seen::class)
    }

    /// Connects to `spec` at the nearest of its URLs that answers (as last
    /// seen; in the order listed within a class), noting how long each
    /// attempt took, or why it failed. When none answers, the last error.
    pub(crate) fn connect(&mut self, spec: &RemoteSpec) -> SyncResult<Box<dyn Remote>> {
        let mut urls = spec.each_url()?;
        urls.sort_by_key(|s| self.class(&s.url));
        connect_first(urls, &mut |spec, attempt| match attempt {
            Ok(took) => self.note(&spec.url, |seen| {
                seen.connect_ms = Some(took.as_millis() as u64);
                seen.failed = None;
            }),
            Err(e) => self.failed(&spec.url, e),
        })
    }

    /// `bytes` of file data came from `url` in `took`.
    pub(crate) fn transferred(&mut self, url: &str, bytes: u64, took: Duration) {
        if bytes >= MEASURED_BYTES {
            let speed = (bytes as f64 / took.as_secs_f64().max(1e-6)) as u64;
            self.note(url, |seen| seen.bytes_per_sec = Some(speed));
        }
    }

    /// The remote at `url` failed with `e`; only its own failures count.
    pub(crate) fn failed(&mut self, url: &str, e: &SyncError) {
        if e.is_remote_failure() {
            self.note(url, |seen| seen.failed = Some(e.to_string()));
        }
    }

    fn note(&mut self, url: &str, change: impl FnOnce(&mut Seen)) {
        let seen = self.by_url.entry(url.to_string()).or_default();
        seen.at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        change(seen);
        self.changed = true;
    }

    /// Writes what changed, as a cache is written (not synced; a torn file
    /// reads as an empty book); a failure to is no failure of the command.
    pub(crate) fn save(&self) {
        if self.changed {
            if let Ok(bytes) = serde_json::to_vec_pretty(&self.by_url) {
                let _ = dmv_repo::write_cache(&self.path, &bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_what_was_seen() {
        let seen = |connect_ms: Option<u64>, bytes_per_sec: Option<u64>, failed: Option<&str>| {
            Seen {
                at: 1,
                connect_ms,
                bytes_per_sec,
                failed: failed.map(String::from),
            }
            .class()
        };
        assert_eq!(seen(None, None, None), Reach::Unknown);
        assert_eq!(seen(Some(3), None, None), Reach::Near);
        assert_eq!(seen(Some(3), Some(50 << 20), None), Reach::Near);
        assert_eq!(seen(Some(1001), None, None), Reach::Far);
        assert_eq!(seen(Some(3), Some(200 << 10), None), Reach::Far);
        assert_eq!(
            seen(Some(3), Some(50 << 20), Some("stopped answering")),
            Reach::Unreachable
        );
        // The order `get` tries copies in.
        let mut order = vec![
            Reach::Unreachable,
            Reach::Far,
            Reach::Unknown,
            Reach::Near,
            Reach::Here,
        ];
        order.sort();
        assert_eq!(
            order,
            vec![
                Reach::Here,
                Reach::Near,
                Reach::Unknown,
                Reach::Far,
                Reach::Unreachable
            ]
        );
    }

    /// The file's encoding, pinned: other versions of dmv read it.
    #[test]
    fn the_book_is_json_by_url() {
        let by_url = BTreeMap::from([(
            "http://hub/photos".to_string(),
            Seen {
                at: 1_800_000_000,
                connect_ms: Some(4),
                bytes_per_sec: Some(1 << 20),
                failed: None,
            },
        )]);
        assert_eq!(
            serde_json::to_string(&by_url).unwrap(),
            r#"{"http://hub/photos":{"at":1800000000,"connect_ms":4,"bytes_per_sec":1048576}}"#
        );
    }
}
