//! Files being uploaded from browsers to a repository kept in the bucket,
//! staged in the bucket itself so that every server of it resumes them:
//! `server/staged/<group>/<id>.upload` is an upload's record (the caller's
//! encoding: what arrived, and whose), `server/staged/<group>/<id>/<piece>`
//! the pieces of its bytes. A group is the caller's name for an owner, so
//! one listing counts an owner's uploads. Records are replaced by
//! compare-and-swap: of two servers adding a piece at once, one wins and
//! the other's piece is removed. In an encrypted repository bodies are
//! sealed and the last part of each key keyed, as everywhere else; the
//! folders (`<group>`, `<id>`) keep their names, so they carry nothing
//! the caller would not show: a hash and a random id.

use opendal::ErrorKind;

use crate::error::{lost_race, BucketResult};
use crate::objects::Objects;
use crate::url::Conn;

const STAGED_PREFIX: &str = "server/staged/";
const RECORD_SUFFIX: &str = ".upload";
/// A record lists an upload's pieces, a few dozen bytes each: larger is
/// damage, refused unread.
pub const MAX_STAGED_RECORD: u64 = 128 << 10;
/// A group, an id or a piece's name: letters, digits, `-` and `_`.
const MAX_NAME_LEN: usize = 64;

fn check_name(what: &str) -> bool {
    !what.is_empty()
        && what.len() <= MAX_NAME_LEN
        && what
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
}

/// A record's body and its version (what [`swap_record`] compares).
pub struct StagedRecord {
    /// The body, as the caller wrote it.
    pub body: Vec<u8>,
    /// The stored object's version (its ETag).
    pub version: String,
}

fn names_ok(conn: &Conn, names: &[&str]) -> BucketResult<()> {
    match names.iter().find(|n| !check_name(n)) {
        Some(bad) => Err(conn
            .target
            .damaged(format!("{bad:?} cannot name a staged upload"))),
        None => Ok(()),
    }
}

fn record_key(group: &str, id: &str) -> String {
    format!("{STAGED_PREFIX}{group}/{id}{RECORD_SUFFIX}")
}

fn pieces_prefix(group: &str, id: &str) -> String {
    format!("{STAGED_PREFIX}{group}/{id}/")
}

/// The record of upload `id` of `group`, if there is one.
pub(crate) fn read_record(
    conn: &Conn,
    group: &str,
    id: &str,
) -> BucketResult<Option<StagedRecord>> {
    names_ok(conn, &[group, id])?;
    let (objects, target, key) = (
        Objects::of(conn),
        conn.target.clone(),
        record_key(group, id),
    );
    conn.run("reading a staged upload", async move {
        read_at(&objects, &key)
            .await
            .map_err(|e| target.classify(e, "reading a staged upload"))?
            .map_or(Ok(None), |r| {
                match r.body.len() as u64 > MAX_STAGED_RECORD {
                    true => Err(target.damaged(format!(
                        "{key} is larger than a staged upload's record can be"
                    ))),
                    false => Ok(Some(r)),
                }
            })
    })
}

/// Times [`read_at`] reads a record again that was replaced between its
/// stat and its read: each time another server added a piece, so a
/// record read at all ends in a few.
const RECORD_READS: usize = 16;

/// The record at the (stored or plain) `key`; its version read first, so
/// the body read is that version's.
async fn read_at(objects: &Objects, key: &str) -> opendal::Result<Option<StagedRecord>> {
    for _ in 0..RECORD_READS {
        let stat = match objects.stat(key).await {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
            Ok(s) => s,
        };
        // A sealed record is a little longer than its body: the bound is on both.
        if stat.len > MAX_STAGED_RECORD + 4096 {
            return Ok(Some(StagedRecord {
                body: vec![0; MAX_STAGED_RECORD as usize + 1],
                version: String::new(),
            }));
        }
        let Some(version) = stat.etag else {
            return Err(opendal::Error::new(
                ErrorKind::Unsupported,
                "the store gives no version (ETag) of a staged upload's record",
            ));
        };
        match objects.get_if_match(key, &version).await {
            Ok(body) => return Ok(Some(StagedRecord { body, version })),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            // Replaced between the two (a piece landed): read it again.
            // Read as gone, it made a live upload "no such upload".
            Err(e) if lost_race(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(opendal::Error::new(
        ErrorKind::Unexpected,
        format!("{key} changed every time it was read"),
    ))
}

/// Writes the record of upload `id`: only if there is none (`version`
/// None), else only if it is still at `version`. False: it was not.
pub(crate) fn swap_record(
    conn: &Conn,
    group: &str,
    id: &str,
    body: Vec<u8>,
    version: Option<&str>,
) -> BucketResult<bool> {
    names_ok(conn, &[group, id])?;
    if body.len() as u64 > MAX_STAGED_RECORD {
        return Err(conn
            .target
            .damaged("a staged upload's record would be too large".into()));
    }
    let (objects, target, key) = (
        Objects::of(conn),
        conn.target.clone(),
        record_key(group, id),
    );
    let version = version.map(str::to_string);
    conn.run("writing a staged upload", async move {
        objects
            .swap(&key, body, version.as_deref())
            .await
            .map_err(|e| target.classify(e, "writing a staged upload"))
    })
}

/// The records of every upload of `group` (None: of every group), each
/// with its version.
pub(crate) fn read_records(conn: &Conn, group: Option<&str>) -> BucketResult<Vec<StagedRecord>> {
    if let Some(g) = group {
        names_ok(conn, &[g])?;
    }
    let prefix = match group {
        Some(g) => format!("{STAGED_PREFIX}{g}/"),
        None => STAGED_PREFIX.to_string(),
    };
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("listing staged uploads", async move {
        let fail = |e| target.classify(e, "listing staged uploads");
        let listed = objects.list_all(&prefix).await.map_err(fail)?;
        let mut records = Vec::new();
        // A record is `server/staged/<group>/<name>`; a piece is one deeper.
        for entry in listed.iter().filter(|e| e.key.matches('/').count() == 3) {
            if let Some(r) = read_at(&objects, &entry.key).await.map_err(fail)? {
                if r.body.len() as u64 <= MAX_STAGED_RECORD {
                    records.push(r);
                }
            }
        }
        Ok(records)
    })
}

/// Stores piece `piece` of upload `id`.
pub(crate) fn put_piece(
    conn: &Conn,
    group: &str,
    id: &str,
    piece: &str,
    bytes: Vec<u8>,
) -> BucketResult<()> {
    names_ok(conn, &[group, id, piece])?;
    let (objects, target) = (Objects::for_uploads(conn), conn.target.clone());
    let key = format!("{}{piece}", pieces_prefix(group, id));
    conn.run("storing an uploaded piece", async move {
        objects
            .put(&key, bytes)
            .await
            .map_err(|e| target.classify(e, "storing an uploaded piece"))
    })
}

/// The bytes of piece `piece` of upload `id`.
pub(crate) fn read_piece(conn: &Conn, group: &str, id: &str, piece: &str) -> BucketResult<Vec<u8>> {
    names_ok(conn, &[group, id, piece])?;
    let (objects, target) = (Objects::for_uploads(conn), conn.target.clone());
    let key = format!("{}{piece}", pieces_prefix(group, id));
    conn.run("reading an uploaded piece", async move {
        objects
            .get(&key)
            .await
            .map_err(|e| target.classify(e, "reading an uploaded piece"))
    })
}

/// Removes piece `piece` of upload `id` (already gone is fine).
pub(crate) fn remove_piece(conn: &Conn, group: &str, id: &str, piece: &str) -> BucketResult<()> {
    names_ok(conn, &[group, id, piece])?;
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let key = format!("{}{piece}", pieces_prefix(group, id));
    conn.run("removing an uploaded piece", async move {
        match objects.delete(&key).await {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(target.classify(e, "removing an uploaded piece"))
            }
            _ => Ok(()),
        }
    })
}

/// Removes upload `id`: its pieces, then its record (already gone is fine).
pub(crate) fn remove(conn: &Conn, group: &str, id: &str) -> BucketResult<()> {
    names_ok(conn, &[group, id])?;
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let (prefix, record) = (pieces_prefix(group, id), record_key(group, id));
    conn.run("removing a staged upload", async move {
        let fail = |e| target.classify(e, "removing a staged upload");
        for piece in objects.list_all(&prefix).await.map_err(fail)? {
            match objects.delete(&piece.key).await {
                Err(e) if e.kind() != ErrorKind::NotFound => return Err(fail(e)),
                _ => {}
            }
        }
        match objects.delete(&record).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(fail(e)),
            _ => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_words() {
        assert!(check_name("0123abcdef"));
        assert!(check_name("p0000000000000008388608-1f2e"));
        for bad in ["", ".", "..", "a/b", "a.upload", "x y", &"a".repeat(65)] {
            assert!(!check_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn keys_are_pinned() {
        assert_eq!(record_key("g1", "id2"), "server/staged/g1/id2.upload");
        assert_eq!(pieces_prefix("g1", "id2"), "server/staged/g1/id2/");
        // A record is three slashes deep, a piece four: the listing tells them apart.
        assert_eq!(record_key("g", "i").matches('/').count(), 3);
        assert_eq!((pieces_prefix("g", "i") + "p").matches('/').count(), 4);
    }
}
