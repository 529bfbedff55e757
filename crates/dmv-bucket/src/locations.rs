//! Location logs kept in the bucket: `locations/<writer>`, one object per
//! replica that pushed here, each written only by that replica (a merge of
//! everything it knew). Readers take them all and merge them, so no two
//! writers ever contend for one object.

use opendal::ErrorKind;

use crate::error::{lost_race, BucketResult};
use crate::objects::Objects;
use crate::url::Conn;

/// Tries of a merge that keep losing to other writers of the same log before it gives up.
const MERGE_TRIES: usize = 8;

/// Where the location logs are: `locations/<writer>`, one per replica.
pub const LOCATIONS_PREFIX: &str = "locations/";
/// A location log of a million records is ~57 MiB: larger is refused unread.
const MAX_LOG_SIZE: u64 = 256 << 20;

/// Every location log in the bucket, as stored.
pub(crate) fn read_all(conn: &Conn) -> BucketResult<Vec<Vec<u8>>> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("reading location logs", async move {
        let entries = objects
            .list(LOCATIONS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing location logs"))?;
        let mut logs = Vec::new();
        for e in entries {
            let len = e.len;
            if len == 0 {
                continue;
            }
            if len > MAX_LOG_SIZE {
                return Err(target.damaged(format!(
                    "{} is {len} bytes, more than a location log can be",
                    e.key
                )));
            }
            // Whole, not the listed length: its writer may have replaced it
            // since the listing, and the first bytes of a longer log are no log.
            let bytes = match objects.get(&e.key).await {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == ErrorKind::NotFound => continue,
                Err(err) => return Err(target.classify(err, "reading a location log")),
            };
            if bytes.len() as u64 > MAX_LOG_SIZE {
                return Err(target.damaged(format!(
                    "{} is {} bytes, more than a location log can be",
                    e.key,
                    bytes.len()
                )));
            }
            logs.push(bytes);
        }
        Ok(logs)
    })
}

/// Replaces the location log `writer` (a replica id) keeps here.
pub(crate) fn write(conn: &Conn, writer: &str, bytes: Vec<u8>) -> BucketResult<()> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    let key = format!("{LOCATIONS_PREFIX}{writer}");
    conn.run("writing a location log", async move {
        objects
            .put(&key, bytes)
            .await
            .map_err(|e| target.classify(e, "writing a location log"))?;
        Ok(())
    })
}

/// Makes a location log from the one stored (None: none yet).
pub type LogMerge<'a> = dyn FnMut(Option<&[u8]>) -> BucketResult<Vec<u8>> + 'a;

/// Merges into the location log `writer` keeps here: `merge` takes the log
/// as stored (None: there is none yet) and returns the new one, which is
/// written only if the log is still as read (a compare-and-swap on its
/// version), else read and merged again: of two servers merging records of
/// one replica at once, neither loses the other's.
pub(crate) fn merge(conn: &Conn, writer: &str, merge: &mut LogMerge<'_>) -> BucketResult<()> {
    let key = format!("{LOCATIONS_PREFIX}{writer}");
    for _ in 0..MERGE_TRIES {
        let (objects, target, at) = (Objects::of(conn), conn.target.clone(), key.clone());
        let read = conn.run("reading a location log", async move {
            let meta = match objects.stat(&at).await {
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(target.classify(e, "reading a location log")),
                Ok(meta) if meta.len > MAX_LOG_SIZE => {
                    return Err(target.damaged(format!(
                        "{at} is {} bytes, more than a location log can be",
                        meta.len
                    )))
                }
                Ok(meta) => meta,
            };
            let etag = meta.etag.ok_or_else(|| {
                target.unsupported(
                    "the store gives objects no ETag, which a merge of location logs needs",
                )
            })?;
            match objects.get_if_match(&at, &etag).await {
                Ok(bytes) => Ok(Some((bytes, etag))),
                // Replaced between the two calls: read again.
                Err(e) if lost_race(&e) => Ok(Some((Vec::new(), String::new()))),
                Err(e) => Err(target.classify(e, "reading a location log")),
            }
        })?;
        if matches!(&read, Some((_, etag)) if etag.is_empty()) {
            continue;
        }
        let merged = merge(read.as_ref().map(|(bytes, _)| bytes.as_slice()))?;
        let (objects, target, at, etag) = (
            Objects::of(conn),
            conn.target.clone(),
            key.clone(),
            read.map(|(_, etag)| etag),
        );
        let written = conn.run("writing a location log", async move {
            objects
                .swap(&at, merged, etag.as_deref())
                .await
                .map_err(|e| target.classify(e, "writing a location log"))
        })?;
        if written {
            return Ok(());
        }
    }
    Err(conn.target.contended(format!(
        "{key} kept changing while records were merged into it"
    )))
}
