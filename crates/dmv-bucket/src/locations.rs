//! Location logs kept in the bucket: `locations/<writer>`, one object per
//! replica that pushed here, each written only by that replica (a merge of
//! everything it knew). Readers take them all and merge them, so no two
//! writers ever contend for one object.

use dmv_store::trace;

use crate::error::BucketResult;
use crate::url::Conn;

/// Where the location logs are: `locations/<writer>`, one per replica.
pub const LOCATIONS_PREFIX: &str = "locations/";
/// A location log of a million records is ~57 MiB: larger is refused unread.
const MAX_LOG_SIZE: u64 = 256 << 20;

/// Every location log in the bucket, as stored.
pub(crate) fn read_all(conn: &Conn) -> BucketResult<Vec<Vec<u8>>> {
    let (op, target) = (conn.op.clone(), conn.target.clone());
    conn.run("reading location logs", async move {
        let entries = op.list_with(LOCATIONS_PREFIX).await.map_err(|e| target.classify(e, "listing location logs"))?;
        let mut logs = Vec::new();
        for e in entries {
            let len = e.metadata().content_length();
            if e.path().ends_with('/') || len == 0 {
                continue;
            }
            if len > MAX_LOG_SIZE {
                return Err(target.damaged(format!("{} is {len} bytes, more than a location log can be", e.path())));
            }
            let bytes = op.read_with(e.path()).range(0..len).await.map_err(|err| target.classify(err, "reading a location log"))?.to_vec();
            trace::count_received(bytes.len() as u64);
            logs.push(bytes);
        }
        Ok(logs)
    })
}

/// Replaces the location log `writer` (a replica id) keeps here.
pub(crate) fn write(conn: &Conn, writer: &str, bytes: Vec<u8>) -> BucketResult<()> {
    let (op, target) = (conn.op.clone(), conn.target.clone());
    let key = format!("{LOCATIONS_PREFIX}{writer}");
    conn.run("writing a location log", async move {
        trace::count_sent(bytes.len() as u64);
        op.write(&key, bytes).await.map_err(|e| target.classify(e, "writing a location log"))?;
        Ok(())
    })
}
