//! Computing a file's content id without storing anything (status uses this
//! for files whose stat data changed).

use std::fs::{File, Metadata};
use std::path::Path;

use crate::chunker::read_single_chunk;
use crate::nodes::{FileList, ListBuilder, NodeSink};
use crate::object::NodeEntry;
use crate::{ChunkParams, Chunker, ObjectId, ObjectKind, StoreError, StoreResult};

struct HashOnly;
impl NodeSink for HashOnly {
    fn put(&mut self, kind: ObjectKind, bytes: Vec<u8>) -> StoreResult<ObjectId> {
        Ok(ObjectId::hash(kind, &bytes))
    }
}

/// The id `ingest` would give this file, with the stat taken before reading.
pub fn hash_file(path: &Path, params: ChunkParams) -> StoreResult<(ObjectId, u64, Metadata)> {
    crate::trace::count_content_open();
    let mut f = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let meta = f.metadata().map_err(|e| StoreError::io(path, e))?;
    if meta.len() <= params.min as u64 {
        // One chunk: skip the chunker's large buffer (status re-hashes many small files).
        if let Some(data) =
            read_single_chunk(&mut f, params).map_err(|e| StoreError::io(path, e))?
        {
            return Ok((
                ObjectId::hash(ObjectKind::Chunk, &data),
                data.len() as u64,
                meta,
            ));
        }
        // It grew since the stat: chunk it from the start.
        std::io::Seek::rewind(&mut f).map_err(|e| StoreError::io(path, e))?;
    }
    let mut chunker = Chunker::new(&mut f, params);
    let mut list = ListBuilder::<FileList>::new();
    let mut size = 0;
    let mut sink = HashOnly;
    let mut any = false;
    while let Some(chunk) = chunker.next_chunk().map_err(|e| StoreError::io(path, e))? {
        any = true;
        size += chunk.len() as u64;
        list.push(
            &mut sink,
            NodeEntry {
                id: ObjectId::hash(ObjectKind::Chunk, chunk),
                size: chunk.len() as u64,
            },
        )?;
    }
    if !any {
        return Ok((ObjectId::hash(ObjectKind::Chunk, &[]), 0, meta));
    }
    let id = match list.single_leaf() {
        Some(only) => only.id,
        None => list.finish(&mut sink)?.id,
    };
    Ok((id, size, meta))
}
