//! Reading objects out of a bucket's packs: as few ranged GETs as their
//! positions allow, several at once, each record checked against its index
//! entry before it is handed over.

use dmv_store::{check_record_header, Located, StoredObject};
use futures_util::StreamExt;

use crate::error::BucketError;
use crate::layout::pack_key;
use crate::objects::Objects;
use crate::ranges;
use crate::url::{Conn, READS_IN_FLIGHT};

/// Records this close together in one pack share a GET; no GET grows past
/// `MAX_READ_LEN` unless a single record is larger.
const MAX_READ_GAP: u64 = 256 << 10;
const MAX_READ_LEN: u64 = 4 << 20;

/// Reads `wanted` and hands each object to `sink`, in pack order, not in
/// the order asked.
pub(crate) fn read_objects<E: From<BucketError>>(
    conn: &Conn,
    wanted: Vec<Located>,
    sink: &mut dyn FnMut(StoredObject) -> Result<(), E>,
) -> Result<(), E> {
    for loc in &wanted {
        // An index that passed its checksum can still lie about offsets.
        let end = loc.entry.offset.checked_add(loc.entry.record_len() as u64);
        if loc.entry.offset < dmv_store::PACK_HEADER_LEN || end.is_none_or(|e| e > u64::MAX / 2) {
            let detail = format!(
                "the index of pack {} puts object {} at offset {}",
                loc.pack, loc.entry.id, loc.entry.offset
            );
            return Err(conn.target.damaged(detail).into());
        }
    }
    let plan = ranges::plan(wanted, MAX_READ_GAP, MAX_READ_LEN);
    let handle = conn.runtime.handle().clone();
    conn.runtime.block_on(async {
        // Each GET runs as its own task, so downloads go on while `sink` writes
        // (and requests are made only on the runtime's threads: see `Conn::run`).
        let mut reads = futures_util::stream::iter(plan.into_iter().map(|range| {
            let objects = Objects::of(conn);
            handle.spawn(async move {
                let key = pack_key(&range.pack);
                let got = objects.get_range(&key, range.start..range.end).await;
                (range, key, got)
            })
        }))
        .buffered(READS_IN_FLIGHT);
        while let Some(joined) = reads.next().await {
            let (range, key, got) = joined.map_err(|e| BucketError::Internal {
                what: "a download task",
                detail: e.to_string(),
            })?;
            let bytes = got.map_err(|e| conn.target.classify(e, &format!("reading {key}")))?;
            if bytes.len() as u64 != range.end - range.start {
                let detail = format!(
                    "{key}: a ranged read returned {} bytes, its index says {}",
                    bytes.len(),
                    range.end - range.start
                );
                return Err(conn.target.damaged(detail).into());
            }
            for e in &range.entries {
                let at = (e.offset - range.start) as usize;
                let record = &bytes[at..at + e.record_len()];
                check_record_header(record, &key, e).map_err(BucketError::from)?;
                let payload = record[dmv_store::RECORD_HEADER_LEN..].to_vec();
                sink(StoredObject {
                    id: e.id,
                    kind: e.kind,
                    compression: e.compression,
                    raw_len: e.raw_len,
                    payload,
                })?;
            }
        }
        Ok(())
    })
}
