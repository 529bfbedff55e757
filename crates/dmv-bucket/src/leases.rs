//! Who is doing what to a bucket right now, so that a drop never removes
//! data that a push or another replica's drop counts on. Nothing of DMV
//! runs there to serialize them, so each says so in the bucket:
//!
//! - the **drop lease**, in the ref table ([`DropState`]): one drop at a
//!   time, taken and given back by compare-and-swap, expiring by itself if
//!   its holder dies;
//! - **push registrations**, `locks/push/<token>`: a push writes one before
//!   it decides which objects the bucket already has, and removes it when
//!   done; a drop refuses while one is active;
//! - **content locks**, `locks/content/<token>`: a drop elsewhere that
//!   counted the bucket's copy of some files locks it there; a drop from
//!   the bucket refuses to free locked data.
//!
//! A registration or lock is written first and the lease read after; a drop
//! takes the lease first and lists them after. With a store whose writes,
//! reads and lists are strongly consistent (S3 and MinIO are), one of the
//! two always sees the other: either the push (or lock) sees the drop and
//! backs off, or the drop sees it and refuses.

use dmv_store::ObjectId;

use crate::error::BucketResult;
use crate::objects::Objects;
use crate::refs::{DropLease, DropState, RefTable};
use crate::refswap::{now_ns, read_refs, swap_with, DropsSeen, Swap};
use crate::url::Conn;

const PUSHES: &str = "locks/push/";
const CONTENT: &str = "locks/content/";
/// The chunks the running (or last, if it was cut short) drop removes in its second round.
const JOURNAL: &str = "locks/drop-journal";
/// A drop holds its lease this long past each renewal, a push its
/// registration (both renewed every half minute as they upload): what one
/// killed holds up. A content lock lasts as long as its writer asks.
const LEASE_SECONDS: u64 = 120;
const PUSH_SECONDS: u64 = 300;

/// `DMV_TEST_LEASE_SECONDS` shortens both, so that tests of a killed drop
/// or push need not wait minutes.
fn lease_seconds(normal: u64) -> u64 {
    dmv_os::fault::test_setting("DMV_TEST_LEASE_SECONDS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(normal)
}
/// A lock naming every file of a large tree is ~65 bytes per file: larger is refused unread.
const MAX_LOCK_SIZE: u64 = 256 << 20;

fn seconds_from_now(seconds: u64) -> u64 {
    now_ns().saturating_add(seconds.saturating_mul(1_000_000_000))
}

/// A lock or registration: its expiry (ns since the epoch) on one line, then one id per line in hex.
fn encode(expires_ns: u64, ids: &[ObjectId]) -> Vec<u8> {
    let mut text = format!("{expires_ns}\n");
    for id in ids {
        text.push_str(&id.to_hex());
        text.push('\n');
    }
    text.into_bytes()
}

fn decode(bytes: &[u8]) -> Option<(u64, Vec<ObjectId>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    let expires = lines.next()?.parse().ok()?;
    let ids = lines.map(ObjectId::from_hex).collect::<Option<Vec<_>>>()?;
    Some((expires, ids))
}

fn write(conn: &Conn, key: String, bytes: Vec<u8>) -> BucketResult<()> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("writing a lock", async move {
        objects
            .put(&key, bytes)
            .await
            .map_err(|e| target.classify(e, &format!("writing {key}")))?;
        Ok(())
    })
}

fn remove(conn: &Conn, key: String) -> BucketResult<()> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("removing a lock", async move {
        objects
            .delete(&key)
            .await
            .map_err(|e| target.classify(e, &format!("removing {key}")))
    })
}

/// The ids of every unexpired lock or registration under `prefix`. Expired
/// ones (their writer died) are removed on the way; one that cannot be
/// read as a lock is damage, and refuses the drop that asked.
fn active(conn: &Conn, prefix: &'static str) -> BucketResult<Vec<Vec<ObjectId>>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let found = conn.run("reading locks", async move {
        let entries = objects
            .list(prefix)
            .await
            .map_err(|e| target.classify(e, &format!("listing {prefix}")))?;
        let mut found = Vec::new();
        for e in entries {
            let len = e.len;
            if len > MAX_LOCK_SIZE {
                return Err(
                    target.damaged(format!("{} is {len} bytes, more than a lock can be", e.key))
                );
            }
            let bytes = match objects.get_range(&e.key, 0..len.max(1)).await {
                Ok(b) => b,
                // Removed since the listing: released.
                Err(err) if err.kind() == opendal::ErrorKind::NotFound => continue,
                Err(err) if len == 0 && err.kind() == opendal::ErrorKind::RangeNotSatisfied => {
                    Vec::new()
                }
                Err(err) => return Err(target.classify(err, &format!("reading {}", e.key))),
            };
            let (expires, ids) =
                decode(&bytes).ok_or_else(|| target.damaged(format!("{} is not a lock", e.key)))?;
            found.push((e.key, expires, ids));
        }
        Ok(found)
    })?;
    let now = now_ns();
    let mut live = Vec::new();
    for (key, expires, ids) in found {
        match now < expires {
            true => live.push(ids),
            false => remove(conn, key)?,
        }
    }
    Ok(live)
}

/// The drop running now, if any (its lease unexpired).
fn running(table: &RefTable) -> Option<&DropLease> {
    table.drops.lease.as_ref().filter(|l| l.active(now_ns()))
}

fn until(lease: &DropLease) -> String {
    let left = lease.expires_ns.saturating_sub(now_ns()) / 1_000_000_000;
    format!("its lease ends within {left} s if it died")
}

/// Registers a push, then checks that no drop is running. Returns what the
/// push saw of the drops: its ref update lands only if that still holds.
pub(crate) fn register_push(conn: &Conn, token: &str) -> BucketResult<DropsSeen> {
    renew_push(conn, token)?;
    let table = read_refs(conn)?.table;
    if let Some(lease) = running(&table) {
        unregister_push(conn, token)?;
        return Err(conn.target.contended(format!(
            "a drop of data is running there ({}); nothing was pushed, push again after it",
            until(lease)
        )));
    }
    Ok(DropsSeen::of(&table))
}

/// Writes (or extends) a push's registration for [`PUSH_SECONDS`].
pub(crate) fn renew_push(conn: &Conn, token: &str) -> BucketResult<()> {
    write(
        conn,
        format!("{PUSHES}{token}"),
        encode(seconds_from_now(lease_seconds(PUSH_SECONDS)), &[]),
    )
}

pub(crate) fn unregister_push(conn: &Conn, token: &str) -> BucketResult<()> {
    remove(conn, format!("{PUSHES}{token}"))
}

/// Locks the bucket's copies of `ids` against drops from it for `seconds`.
/// False (and nothing locked) while a drop runs there: the copies it is
/// freeing cannot be counted.
pub(crate) fn lock_content(
    conn: &Conn,
    token: &str,
    ids: &[ObjectId],
    seconds: u64,
) -> BucketResult<bool> {
    write(
        conn,
        format!("{CONTENT}{token}"),
        encode(seconds_from_now(seconds), ids),
    )?;
    if running(&read_refs(conn)?.table).is_some() {
        unlock_content(conn, token)?;
        return Ok(false);
    }
    Ok(true)
}

pub(crate) fn unlock_content(conn: &Conn, token: &str) -> BucketResult<()> {
    remove(conn, format!("{CONTENT}{token}"))
}

/// Takes the drop lease and counts the drop as begun, then checks that no
/// push is registered. Refuses (in one line) while another drop holds the
/// lease or a push runs.
pub(crate) fn take_drop_lease(conn: &Conn, holder: &str) -> BucketResult<()> {
    swap_with(conn, &mut |snapshot, _| {
        if let Some(lease) = running(&snapshot.table) {
            return Err(conn.target.contended(format!(
                "another drop of data is running there ({}); drop again after it",
                until(lease)
            )));
        }
        let mut table = snapshot.table.clone();
        let begun = table.drops.begun + 1;
        table.drops = DropState {
            begun,
            lease: Some(DropLease {
                holder: holder.to_string(),
                expires_ns: seconds_from_now(lease_seconds(LEASE_SECONDS)),
            }),
        };
        Ok(Swap::Write(table, ()))
    })?;
    if !active(conn, PUSHES)?.is_empty() {
        release_drop_lease(conn, holder, false)?;
        return Err(conn.target.contended("a push to it is running (or was killed in the last 5 minutes); nothing was dropped, drop again after it".into()));
    }
    Ok(())
}

/// Extends the lease `holder` took; an error if it is no longer its own
/// (it expired and another drop took it): the drop must stop.
pub(crate) fn renew_drop_lease(conn: &Conn, holder: &str) -> BucketResult<()> {
    swap_with(conn, &mut |snapshot, _| match &snapshot.table.drops.lease {
        Some(l) if l.holder == holder && l.active(now_ns()) => {
            let mut table = snapshot.table.clone();
            table.drops.lease = Some(DropLease {
                holder: holder.to_string(),
                expires_ns: seconds_from_now(lease_seconds(LEASE_SECONDS)),
            });
            Ok(Swap::Write(table, ()))
        }
        _ => Err(conn
            .target
            .contended("this drop's lease expired before it was done; run the drop again".into())),
    })
}

/// Gives the lease back (if it is still `holder`'s). A drop that removed
/// nothing is no longer counted as begun: pushes that started before it
/// counted on nothing it touched.
pub(crate) fn release_drop_lease(conn: &Conn, holder: &str, removed_any: bool) -> BucketResult<()> {
    swap_with(conn, &mut |snapshot, _| match &snapshot.table.drops.lease {
        Some(l) if l.holder == holder => {
            let mut table = snapshot.table.clone();
            table.drops.lease = None;
            if !removed_any {
                table.drops.begun = table.drops.begun.saturating_sub(1);
            }
            Ok(Swap::Write(table, ()))
        }
        _ => Ok(Swap::Stop(())),
    })
}

/// Records the chunks a drop is about to remove (none: it is done).
pub(crate) fn write_journal(conn: &Conn, chunks: &[ObjectId]) -> BucketResult<()> {
    match chunks.is_empty() {
        true => remove(conn, JOURNAL.to_string()),
        false => write(conn, JOURNAL.to_string(), encode(u64::MAX, chunks)),
    }
}

/// The chunks a drop cut short meant to remove (or none).
pub(crate) fn read_journal(conn: &Conn) -> BucketResult<Vec<ObjectId>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let bytes = conn.run("reading the drop journal", async move {
        match objects.stat(JOURNAL).await {
            Ok(meta) if meta.len > MAX_LOCK_SIZE => Err(target.damaged(format!(
                "{JOURNAL} is {} bytes, more than a journal can be",
                meta.len
            ))),
            Ok(meta) => objects
                .get_range(JOURNAL, 0..meta.len)
                .await
                .map(Some)
                .map_err(|e| target.classify(e, &format!("reading {JOURNAL}"))),
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(target.classify(e, &format!("reading {JOURNAL}"))),
        }
    })?;
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    decode(&bytes).map(|(_, ids)| ids).ok_or_else(|| {
        conn.target
            .damaged(format!("{JOURNAL} is not a drop journal"))
    })
}

/// The ids that unexpired content locks hold.
pub(crate) fn locked_content(conn: &Conn) -> BucketResult<std::collections::HashSet<ObjectId>> {
    Ok(active(conn, CONTENT)?.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_bytes_of_a_lock() {
        let bytes = encode(12, &[ObjectId([0x01; 32])]);
        assert_eq!(bytes, format!("12\n{}\n", "01".repeat(32)).into_bytes());
        assert_eq!(decode(&bytes), Some((12, vec![ObjectId([0x01; 32])])));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn round_trips(expires in any::<u64>(), ids in proptest::collection::vec(any::<[u8; 32]>().prop_map(ObjectId), 0..10)) {
            prop_assert_eq!(decode(&encode(expires, &ids)), Some((expires, ids)));
        }
    }
}
