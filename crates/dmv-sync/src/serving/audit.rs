//! Recording what a server decided (a push, a lock, an unlock, a broken
//! lock, an upload, a drop, a comment mentioning people) where it decided
//! it: in the audit log of the repository served (dmv-repo's `audit`:
//! `.dmv/audit/` of a directory, or one small object per event under
//! `server/audit/` of a bucket, so the servers of one bucket never
//! overwrite each other's), then told to the [`EventSink`] the server
//! configured (dmv-server's webhooks). A failure to record never undoes
//! what was done: it is told to the sink.

#[cfg(feature = "s3")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dmv_repo::store::ObjectId;
use dmv_repo::{append_audit, AuditEvent, AuditRef, Repository};

#[cfg(feature = "s3")]
use dmv_bucket::{Bucket, MAX_RECORD_SIZE};
#[cfg(feature = "s3")]
use dmv_repo::{AuditRead, MAX_AUDIT_READ};

/// Where a server hears of each event as it is recorded.
pub trait EventSink: Send + Sync {
    /// `event` happened (and was recorded, or `failed` was told why not).
    fn happened(&self, event: &AuditEvent);
    /// The audit log could not be written (the event still happened).
    fn failed(&self, why: &str);
}

/// The sink of a caller's events (none by default: the log alone).
#[derive(Clone, Default)]
pub struct Events(Option<Arc<dyn EventSink>>);

impl Events {
    /// Events told to `sink`.
    pub fn to(sink: Arc<dyn EventSink>) -> Events {
        Events(Some(sink))
    }

    /// Tells the sink of a failure that recorded nothing.
    pub fn failed(&self, why: &str) {
        if let Some(sink) = &self.0 {
            sink.failed(why);
        }
    }

    fn tell(&self, event: &AuditEvent, failed: Option<String>) {
        if let Some(sink) = &self.0 {
            if let Some(why) = failed {
                sink.failed(&why);
            }
            sink.happened(event);
        }
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Events(sink)"
        } else {
            "Events(none)"
        })
    }
}

// Who a caller is does not depend on where its events go.
impl PartialEq for Events {
    fn eq(&self, _: &Events) -> bool {
        true
    }
}
impl Eq for Events {}

/// A ref's move as the log names it.
pub(crate) fn audit_ref(name: &str, old: Option<ObjectId>, new: Option<ObjectId>) -> AuditRef {
    AuditRef {
        name: name.to_string(),
        old: old.map(|id| id.to_hex()),
        new: new.map(|id| id.to_hex()),
    }
}

/// Records `event` in the audit log of the directory repository `repo`
/// (the server's web UI records what its buttons did through it too).
pub fn record_in_dir(repo: &Repository, events: &Events, event: AuditEvent) {
    let event = event.bounded();
    let failed = append_audit(&repo.dmv, &event)
        .err()
        .map(|e| format!("cannot write the audit log in {}: {e}", repo.dmv.display()));
    events.tell(&event, failed);
}

/// The `mention` events of the move of `repo`'s review log from `old` to
/// `new` (dmv-review's `notice`): one for each comment or reply it brings
/// that names people, by its writer, naming its file, its text as the
/// detail and the names as its mentions; past dmv-review's bound, one
/// more event says how many were not told. The caller records each (a
/// log that cannot be read is the caller's to report, not the move's).
pub fn mention_events(
    repo: &Repository,
    old: Option<ObjectId>,
    new: ObjectId,
) -> Result<Vec<AuditEvent>, String> {
    let (told, more) = dmv_review::mentions_brought(&dmv_review::HubRepo(repo), old, new)
        .map_err(|e| format!("cannot read the mentions the review log brings: {e}"))?;
    let mut events: Vec<AuditEvent> = told
        .into_iter()
        .map(|m| AuditEvent {
            paths: vec![m.path],
            detail: Some(format!("{}: {}", m.id.to_hex(), m.text)),
            mentions: m.names,
            ..AuditEvent::new("mention", &m.by)
        })
        .collect();
    if more > 0 {
        events.push(AuditEvent {
            detail: Some(format!("{more} older comments with mentions are not told")),
            ..AuditEvent::new("mention", "")
        });
    }
    Ok(events)
}

/// Records in the audit log of the directory repository `repo` the
/// mention events of its review log's move from `old` to `new`.
pub fn record_mentions_in_dir(
    repo: &Repository,
    events: &Events,
    old: Option<ObjectId>,
    new: ObjectId,
) {
    match mention_events(repo, old, new) {
        Ok(told) => told
            .into_iter()
            .for_each(|event| record_in_dir(repo, events, event)),
        Err(why) => events.failed(&why),
    }
}

/// The kind of shared record each event of a bucket's audit log is.
#[cfg(feature = "s3")]
const AUDIT_RECORDS: &str = "audit";

/// A name no other event of any server takes: its time first, so names
/// sort by time, then 16 hex digits of a hash of this process, thread,
/// moment and count.
#[cfg(feature = "s3")]
fn event_name(time: i64) -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new();
    h.update(&dmv_repo::now_ns().to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    h.update(&COUNT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    h.update(std::env::temp_dir().to_string_lossy().as_bytes());
    // The nanoseconds keep events of one second in the order they came
    // (names are read back sorted); older names without them sort first.
    // An event of a second that has passed since (named late) comes last
    // in it: the nanoseconds of the next second sorted it first.
    let now = dmv_repo::now_ns();
    let nanos = match i64::try_from(now / 1_000_000_000) == Ok(time) {
        true => now % 1_000_000_000,
        false => 999_999_999,
    };
    format!(
        "{:012}.{nanos:09}-{}",
        time.max(0),
        &h.finalize().to_hex()[..16]
    )
}

/// The second an event's record name says it was recorded at.
#[cfg(feature = "s3")]
fn second_of(name: &str) -> Option<i64> {
    let stamp = name.split_once('-')?.0;
    stamp.split_once('.').map_or(stamp, |(s, _)| s).parse().ok()
}

/// Records `event` in the audit log of the repository in `bucket`: one
/// object of its own. An encrypted bucket keeps none (its records are
/// plain, and paths are what it hides).
#[cfg(feature = "s3")]
pub fn record_in_bucket(bucket: &Bucket, events: &Events, event: AuditEvent) {
    let event = event.bounded();
    let failed = match bucket.is_encrypted() {
        true => None,
        false => bucket
            .put_shared_record(AUDIT_RECORDS, &event_name(event.time), event.line())
            .err()
            .map(|e| format!("cannot write the audit log in {}: {e}", bucket.url())),
    };
    events.tell(&event, failed);
}

/// The events at or after `since` (None: all) of the audit log of the
/// repository in `bucket`, the newest that [`MAX_AUDIT_READ`] holds
/// (each record at most a shared record's size).
#[cfg(feature = "s3")]
pub fn read_bucket_audit(bucket: &Bucket, since: Option<i64>) -> crate::SyncResult<AuditRead> {
    let mut names: Vec<(i64, String)> = bucket
        .shared_record_names(AUDIT_RECORDS)?
        .into_iter()
        .filter_map(|n| Some((second_of(&n)?, n)))
        .filter(|(t, _)| since.is_none_or(|s| *t >= s))
        .collect();
    names.sort();
    let most = (MAX_AUDIT_READ / MAX_RECORD_SIZE) as usize;
    let mut read = AuditRead {
        cut_short: names.len() > most,
        ..AuditRead::default()
    };
    for (_, name) in names.iter().skip(names.len().saturating_sub(most)) {
        match bucket.shared_record(AUDIT_RECORDS, name) {
            Ok(Some(body)) => match serde_json::from_slice::<AuditEvent>(body.trim_ascii_end()) {
                Ok(event) => read.events.push(event),
                Err(_) => read.unreadable += 1,
            },
            Ok(None) => {}
            // Too large, or of a damaged name: passed over, counted.
            Err(dmv_bucket::BucketError::Damaged { .. }) => read.unreadable += 1,
            Err(e) => return Err(e.into()),
        }
    }
    read.events.sort_by_key(|e| e.time);
    Ok(read)
}

#[cfg(all(test, feature = "s3"))]
mod tests {
    use super::*;

    /// An event named in the second after its own (a lock pressed at
    /// x.999 and stored at x+1.001) sorts after the events of its second,
    /// not before them: the audit log in a bucket listed a break-lock
    /// before the three locks it followed.
    #[test]
    fn an_event_named_late_sorts_last_in_its_second() {
        let this_second = (dmv_repo::now_ns() / 1_000_000_000) as i64;
        let past = this_second - 1;
        let earlier_that_second = format!("{past:012}.999999998-ffffffffffffffff");
        let late = event_name(past);
        assert!(late > earlier_that_second, "{late}");
        assert_eq!(second_of(&late), Some(past));
    }
}
