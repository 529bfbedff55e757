//! Path locks kept in a bucket: `path-locks/<BLAKE3 of the path>`, one
//! small object per held path, holding what its owner wrote (the caller's
//! encoding). Taking a lock is a conditional create (`If-None-Match: *`),
//! so of two clients locking one path at once exactly one creates it; the
//! other sees the holder. There is no server to say who a client is: the
//! bucket's credentials decide who may lock at all.

use opendal::ErrorKind;

use crate::error::BucketResult;
use crate::objects::Objects;
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
    let (objects, target, key) = (Objects::of(conn), conn.target.clone(), key(path));
    conn.run("taking a lock", async move {
        objects
            .put_if_absent(&key, bytes)
            .await
            .map_err(|e| target.classify(e, "taking a lock"))
    })
}

/// The lock object of `path`, if there is one.
pub(crate) fn read(conn: &Conn, path: &str) -> BucketResult<Option<Vec<u8>>> {
    let (objects, target, key) = (Objects::of(conn), conn.target.clone(), key(path));
    conn.run("reading a lock", async move {
        match objects.stat(&key).await {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(target.classify(e, "reading a lock")),
            Ok(m) if m.len > MAX_LOCK_SIZE => {
                return Err(
                    target.damaged(format!("{key} is {} bytes, more than a lock can be", m.len))
                )
            }
            Ok(_) => {}
        }
        match objects.get(&key).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(target.classify(e, "reading a lock")),
        }
    })
}

/// Every lock object, as stored.
pub(crate) fn read_all(conn: &Conn) -> BucketResult<Vec<Vec<u8>>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("listing locks", async move {
        let entries = objects
            .list(PATH_LOCKS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing locks"))?;
        let mut locks = Vec::new();
        for e in &entries {
            let len = e.len;
            if len > MAX_LOCK_SIZE {
                return Err(
                    target.damaged(format!("{} is {len} bytes, more than a lock can be", e.key))
                );
            }
            match objects.get(&e.key).await {
                Ok(bytes) => {
                    locks.push(bytes);
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
    let (objects, target, key) = (Objects::of(conn), conn.target.clone(), key(path));
    conn.run("releasing a lock", async move {
        objects
            .delete(&key)
            .await
            .map_err(|e| target.classify(e, "releasing a lock"))
    })
}
