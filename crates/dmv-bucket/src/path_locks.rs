//! Path locks kept in a bucket: `path-locks/<BLAKE3 of the path>`, one
//! small object per held path, holding what its owner wrote (the caller's
//! encoding). Taking a lock is a conditional create (`If-None-Match: *`),
//! so of two clients locking one path at once exactly one creates it; the
//! other sees the holder. There is no server to say who a client is: the
//! bucket's credentials decide who may lock at all.

use dmv_store::trace;
use opendal::ErrorKind;

use crate::error::{lost_race, BucketResult};
use crate::url::Conn;

pub const PATH_LOCKS_PREFIX: &str = "path-locks/";
/// A lock object is a few hundred bytes: larger is damage, refused unread.
const MAX_LOCK_SIZE: u64 = 64 << 10;

fn key(path: &str) -> String {
    format!(
        "{PATH_LOCKS_PREFIX}{}",
        blake3::hash(path.as_bytes()).to_hex()
    )
}

/// Creates the lock object of `path` unless one exists; returns whether it did.
pub(crate) fn create(conn: &Conn, path: &str, bytes: Vec<u8>) -> BucketResult<bool> {
    let (op, target, key) = (conn.op.clone(), conn.target.clone(), key(path));
    conn.run("taking a lock", async move {
        trace::count_sent(bytes.len() as u64);
        match op.write_with(&key, bytes).if_not_exists(true).await {
            Ok(_) => Ok(true),
            Err(e) if lost_race(&e) => Ok(false),
            Err(e) => Err(target.classify(e, "taking a lock")),
        }
    })
}

/// The lock object of `path`, if there is one.
pub(crate) fn read(conn: &Conn, path: &str) -> BucketResult<Option<Vec<u8>>> {
    let (op, target, key) = (conn.op.clone(), conn.target.clone(), key(path));
    conn.run("reading a lock", async move {
        match op.stat(&key).await {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(target.classify(e, "reading a lock")),
            Ok(m) if m.content_length() > MAX_LOCK_SIZE => {
                return Err(target.damaged(format!(
                    "{key} is {} bytes, more than a lock can be",
                    m.content_length()
                )))
            }
            Ok(_) => {}
        }
        match op.read(&key).await {
            Ok(bytes) => {
                trace::count_received(bytes.len() as u64);
                Ok(Some(bytes.to_vec()))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(target.classify(e, "reading a lock")),
        }
    })
}

/// Every lock object, as stored.
pub(crate) fn read_all(conn: &Conn) -> BucketResult<Vec<Vec<u8>>> {
    let (op, target) = (conn.op.clone(), conn.target.clone());
    conn.run("listing locks", async move {
        let entries = op
            .list_with(PATH_LOCKS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing locks"))?;
        let mut locks = Vec::new();
        for e in entries.iter().filter(|e| !e.path().ends_with('/')) {
            let len = e.metadata().content_length();
            if len > MAX_LOCK_SIZE {
                return Err(target.damaged(format!(
                    "{} is {len} bytes, more than a lock can be",
                    e.path()
                )));
            }
            match op.read(e.path()).await {
                Ok(bytes) => {
                    trace::count_received(bytes.len() as u64);
                    locks.push(bytes.to_vec());
                }
                // Released between the listing and the read.
                Err(err) if err.kind() == ErrorKind::NotFound => {}
                Err(err) => return Err(target.classify(err, "reading a lock")),
            }
        }
        Ok(locks)
    })
}

/// Removes the lock object of `path` (already gone is fine).
pub(crate) fn remove(conn: &Conn, path: &str) -> BucketResult<()> {
    let (op, target, key) = (conn.op.clone(), conn.target.clone(), key(path));
    conn.run("releasing a lock", async move {
        op.delete(&key)
            .await
            .map_err(|e| target.classify(e, "releasing a lock"))
    })
}
