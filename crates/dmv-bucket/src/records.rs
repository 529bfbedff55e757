//! Small records that the servers of one bucket share, so that what one
//! of them wrote the others see: `server/<kind>/<name>`, each a body of at
//! most [`MAX_RECORD_SIZE`] bytes in the caller's encoding. `dmv serve`
//! keeps its web logins here, so a login survives a restart and works on
//! every server of the bucket. Names and bodies are stored as given, also
//! in an encrypted repository: a caller puts nothing secret in either
//! (a login's record holds a hash of its token and when it ends).

use opendal::ErrorKind;

use crate::error::BucketResult;
use crate::objects::Objects;
use crate::url::{BucketOptions, Conn};

const RECORDS_PREFIX: &str = "server/";
/// A record is a few hundred bytes: a larger one is damage, refused unread.
pub const MAX_RECORD_SIZE: u64 = 4 << 10;
/// A kind or a name: letters, digits, `-`, `_` and `.`, at most this long.
const MAX_NAME_LEN: usize = 128;

/// The shared records of the repository in one bucket location.
pub struct SharedRecords {
    conn: Conn,
}

fn check_name(what: &str) -> bool {
    !what.is_empty()
        && what.len() <= MAX_NAME_LEN
        && !what.starts_with('.')
        && what
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

impl SharedRecords {
    /// The records at `url`. Nothing is asked of the bucket yet: a server
    /// may start before the first push makes the repository there.
    pub fn open(url: &str, options: &BucketOptions) -> BucketResult<SharedRecords> {
        Ok(SharedRecords {
            conn: Conn::new(url, options)?,
        })
    }

    /// Writes the record `kind/name` (replacing one there).
    pub fn put(&self, kind: &str, name: &str, body: Vec<u8>) -> BucketResult<()> {
        put(&self.conn, kind, name, body)
    }

    /// The record `kind/name`, if there is one.
    pub fn get(&self, kind: &str, name: &str) -> BucketResult<Option<Vec<u8>>> {
        get(&self.conn, kind, name)
    }

    /// Removes the record `kind/name` (already gone is fine).
    pub fn delete(&self, kind: &str, name: &str) -> BucketResult<()> {
        delete(&self.conn, kind, name)
    }

    /// The names of every record of `kind`, from one listing.
    pub fn names(&self, kind: &str) -> BucketResult<Vec<String>> {
        names(&self.conn, kind)
    }
}

fn key(conn: &Conn, kind: &str, name: &str) -> BucketResult<String> {
    if !check_name(kind) || !check_name(name) {
        return Err(conn
            .target
            .damaged(format!("{kind:?}/{name:?} cannot name a shared record")));
    }
    Ok(format!("{RECORDS_PREFIX}{kind}/{name}"))
}

/// Writes the record `kind/name` (replacing one there).
pub(crate) fn put(conn: &Conn, kind: &str, name: &str, body: Vec<u8>) -> BucketResult<()> {
    let (objects, target, key) = (
        Objects::of(conn),
        conn.target.clone(),
        key(conn, kind, name)?,
    );
    conn.run("writing a shared record", async move {
        objects
            .put(&key, body)
            .await
            .map_err(|e| target.classify(e, "writing a shared record"))
    })
}

/// The record `kind/name`, if there is one.
pub(crate) fn get(conn: &Conn, kind: &str, name: &str) -> BucketResult<Option<Vec<u8>>> {
    let (objects, target, key) = (
        Objects::of(conn),
        conn.target.clone(),
        key(conn, kind, name)?,
    );
    conn.run("reading a shared record", async move {
        // A large body is damage, refused before it is read.
        match objects.stat(&key).await {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(target.classify(e, "reading a shared record")),
            Ok(m) if m.len > MAX_RECORD_SIZE => {
                return Err(target.damaged(format!(
                    "{key} is {} bytes, more than a shared record can be",
                    m.len
                )))
            }
            Ok(_) => {}
        }
        match objects.get(&key).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(target.classify(e, "reading a shared record")),
        }
    })
}

/// Removes the record `kind/name` (already gone is fine).
pub(crate) fn delete(conn: &Conn, kind: &str, name: &str) -> BucketResult<()> {
    let (objects, target, key) = (
        Objects::of(conn),
        conn.target.clone(),
        key(conn, kind, name)?,
    );
    conn.run("removing a shared record", async move {
        match objects.delete(&key).await {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(target.classify(e, "removing a shared record"))
            }
            _ => Ok(()),
        }
    })
}

/// The names of every record of `kind`, from one listing.
pub(crate) fn names(conn: &Conn, kind: &str) -> BucketResult<Vec<String>> {
    let prefix = key(conn, kind, "x")?;
    let prefix = prefix[..prefix.len() - 1].to_string();
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("listing shared records", async move {
        let listed = objects
            .list(&prefix)
            .await
            .map_err(|e| target.classify(e, "listing shared records"))?;
        Ok(listed
            .into_iter()
            .filter_map(|e| e.key.strip_prefix(&prefix).map(str::to_string))
            .filter(|name| check_name(name))
            .collect())
    })
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn names_are_plain_words() {
        assert!(check_name("sessions"));
        assert!(check_name("1767225600-ab12"));
        for bad in ["", ".", "..", "a/b", "a b", "é", &"x".repeat(129)] {
            assert!(!check_name(bad), "{bad:?}");
        }
    }
}
