//! Moving refs: the ref table ([`RefTable`]) is one object, read with its
//! ETag and replaced whole only if that ETag still holds. Concurrent
//! writers race on it: exactly one wins each round, and a loser whose refs
//! were not touched retries.

use std::time::Duration;

use dmv_store::ObjectId;
use opendal::ErrorKind;

use crate::error::BucketResult;
use crate::layout::{CONFIG_KEY, REFS_KEY};
use crate::objects::Objects;
use crate::refs::RefTable;
use crate::url::Conn;

/// Reading or swapping the ref table gives up after losing this many races in a row.
const MAX_SWAP_ATTEMPTS: u32 = 30;
/// The ref table is ~80 bytes per ref (1.6 million refs): what the bucket
/// says it holds is checked against this before anything is downloaded.
const MAX_REF_TABLE_SIZE: u64 = 128 << 20;

/// A ref table as read, with the version a compare-and-swap must match.
#[derive(Clone, Debug, Default)]
pub struct RefSnapshot {
    /// The table (empty when the bucket has none yet).
    pub table: RefTable,
    etag: Option<String>,
}

/// One ref change: applied only if the ref is still at `old`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefChange {
    /// The ref's full name.
    pub name: String,
    /// `None`: the ref must not exist.
    pub old: Option<ObjectId>,
    /// `None`: delete.
    pub new: Option<ObjectId>,
}

/// How a ref update ended, when it was not an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefUpdateOutcome {
    /// Every change landed, in one swap of the ref table (with no changes:
    /// this client may push there).
    Updated,
    /// A ref is not where the caller expected: someone else moved it.
    /// Nothing changed.
    Rejected {
        /// The first such ref, in the order of the changes.
        name: String,
        /// Where it is; None: it does not exist.
        found: Option<ObjectId>,
    },
}

/// The ref table and its version.
pub(crate) fn read_refs(conn: &Conn) -> BucketResult<RefSnapshot> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("reading refs", async move {
        for _ in 0..MAX_SWAP_ATTEMPTS {
            let etag = match objects.stat(REFS_KEY).await {
                Ok(meta) if meta.len > MAX_REF_TABLE_SIZE => {
                    let detail = format!("{REFS_KEY} is {} bytes, more than a ref table can be ({} MiB)", meta.len, MAX_REF_TABLE_SIZE >> 20);
                    return Err(target.damaged(detail));
                }
                Ok(meta) => meta.etag,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(RefSnapshot::default()),
                Err(e) => return Err(target.classify(e, "reading refs")),
            };
            let Some(etag) = etag else {
                return Err(target.unsupported("the object store gives no ETag for refs, so it cannot do compare-and-swap; DMV will not use it"));
            };
            match objects.get_if_match(REFS_KEY, &etag).await {
                Ok(bytes) => {
                    let table = RefTable::decode(&bytes).map_err(|d| target.damaged(format!("{REFS_KEY}: {d}")))?;
                    return Ok(RefSnapshot { table, etag: Some(etag) });
                }
                // Replaced between the two requests: read the new one.
                Err(e) if matches!(e.kind(), ErrorKind::ConditionNotMatch | ErrorKind::NotFound) => continue,
                Err(e) => return Err(target.classify(e, "reading refs")),
            }
        }
        Err(target.contended("the ref table kept changing while it was read; try again".into()))
    })
}

/// What a caller saw of the bucket's drops when it mirrored the pack
/// indexes: its answers to "does the bucket have X" hold only while no
/// drop has begun since, nor was running then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropsSeen {
    pub begun: u64,
    pub running: bool,
}

impl DropsSeen {
    pub(crate) fn of(table: &RefTable) -> DropsSeen {
        DropsSeen {
            begun: table.drops.begun,
            running: table
                .drops
                .lease
                .as_ref()
                .is_some_and(|l| l.active(now_ns())),
        }
    }
}

pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Applies `changes` all or nothing, each only if its ref is still at
/// `old`, and only if no drop ran since `seen` (what the caller decided to
/// upload or skip rested on the bucket's objects then). `config_bytes`: the
/// config as stored, for [`check_writable`].
pub(crate) fn update_refs(
    conn: &Conn,
    config_bytes: &[u8],
    changes: &[RefChange],
    seen: DropsSeen,
) -> BucketResult<RefUpdateOutcome> {
    if changes.is_empty() {
        return check_writable(conn, config_bytes).map(|_| RefUpdateOutcome::Updated);
    }
    swap_with(conn, &mut |snapshot, lost| {
        // After a lost race: a swap of ours that landed although its answer
        // was lost (and retried into a 412) shows as our own values.
        if lost > 0
            && changes
                .iter()
                .all(|c| snapshot.table.refs.get(&c.name).copied() == c.new)
        {
            return Ok(Swap::Stop(RefUpdateOutcome::Updated));
        }
        if seen.running || DropsSeen::of(&snapshot.table) != seen {
            let detail = "data was dropped from it while this push ran, so objects the push counted on may be gone; nothing changed there, push again";
            return Err(conn.target.contended(detail.into()));
        }
        let mut table = snapshot.table.clone();
        for c in changes {
            let found = table.refs.get(&c.name).copied();
            if found != c.old {
                return Ok(Swap::Stop(RefUpdateOutcome::Rejected {
                    name: c.name.clone(),
                    found,
                }));
            }
            match c.new {
                Some(id) => {
                    table.refs.insert(c.name.clone(), id);
                }
                None => {
                    table.refs.remove(&c.name);
                }
            }
        }
        if table.head.is_none() {
            table.head = changes
                .iter()
                .find(|c| c.new.is_some() && c.name.starts_with("refs/heads/"))
                .map(|c| c.name.clone());
        }
        test_pause_before_swap();
        Ok(Swap::Write(table, RefUpdateOutcome::Updated))
    })
}

/// What an edit of the ref table decided.
pub(crate) enum Swap<T> {
    /// Write this table (if nobody swapped first), then answer.
    Write(RefTable, T),
    /// Answer without writing.
    Stop(T),
}

/// Reads the ref table, lets `edit` decide (given the rounds lost so far),
/// and swaps the new table in if the one read still holds; a lost race
/// reads again and asks `edit` again.
pub(crate) fn swap_with<T>(
    conn: &Conn,
    edit: &mut dyn FnMut(&RefSnapshot, u32) -> BucketResult<Swap<T>>,
) -> BucketResult<T> {
    let mut lost = 0u32;
    loop {
        let snapshot = read_refs(conn)?;
        let (table, answer) = match edit(&snapshot, lost)? {
            Swap::Stop(answer) => return Ok(answer),
            Swap::Write(table, answer) => (table, answer),
        };
        if swap_refs(conn, &table, snapshot.etag.as_deref())? {
            return Ok(answer);
        }
        lost += 1;
        if lost >= MAX_SWAP_ATTEMPTS {
            return Err(conn.target.contended(format!(
                "the ref table changed under {lost} attempts to update it; try again"
            )));
        }
        // Jittered backoff, so racing writers stop colliding.
        let jitter = u64::from(std::process::id() % 7 + lost) * 15;
        std::thread::sleep(Duration::from_millis(jitter.min(500)));
    }
}

/// Checks, before anything is uploaded, that this client may write and
/// that the store honours conditional writes (without them refs could be
/// lost): rewriting the config (`config_bytes`, as stored) with
/// `If-None-Match: *` must be refused.
pub(crate) fn check_writable(conn: &Conn, config_bytes: &[u8]) -> BucketResult<()> {
    let (objects, config) = (Objects::of(conn), config_bytes.to_vec());
    let written = conn.run("checking write access", async move {
        Ok(objects.put_if_absent(CONFIG_KEY, config).await)
    })?;
    match written {
        Ok(false) => Ok(()),
        Err(e) => Err(conn.target.classify(e, "checking write access")),
        // It rewrote the same bytes: harmless, but the store ignores the condition.
        Ok(true) => Err(conn.target.unsupported("this object store ignores conditional writes (If-None-Match), so concurrent pushes could lose updates; DMV will not push to it")),
    }
}

/// Writes the ref table if it is still at `etag` (None: if there is none).
fn swap_refs(conn: &Conn, table: &RefTable, etag: Option<&str>) -> BucketResult<bool> {
    let bytes = table.encode();
    let (objects, etag) = (Objects::of(conn), etag.map(str::to_string));
    let written = conn.run("updating refs", async move {
        Ok(objects.swap(REFS_KEY, bytes, etag.as_deref()).await)
    })?;
    written.map_err(|e| conn.target.classify(e, "updating refs"))
}

/// `DMV_TEST_PAUSE_BEFORE_REF_SWAP_MS`: the tests' way to make two pushes
/// read the same ref table and then race on the swap.
fn test_pause_before_swap() {
    if let Some(ms) = dmv_os::fault::test_setting("DMV_TEST_PAUSE_BEFORE_REF_SWAP_MS")
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}
