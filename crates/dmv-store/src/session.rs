//! Writing objects: a [`WriteSession`] appends them to new packs, seals each
//! pack (data, then its index, then both made visible) and holds gc off
//! while it runs. Apart from the store because writing has its own state
//! (the open pack, the compressor, the sealed packs) and its own ordering
//! rules, and a reader never needs either.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::IoContext;
use crate::index::{write_index_with, PackIndex};
use crate::lock::GcLock;
use crate::nodes::NodeSink;
use crate::pack::{index_file_name, PackWriter, COMP_NONE, COMP_ZSTD};
use crate::store::{sync_dir, Store, StoredObject};
use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

/// A pack a write session has just sealed (data and index durable and visible).
pub struct SealedPack<'p> {
    /// The pack's checksum, which names it.
    pub checksum: ObjectId,
    /// The pack file.
    pub pack_path: &'p Path,
    /// Its index.
    pub index_path: &'p Path,
}

type SealHook<'a> = Box<dyn FnMut(&SealedPack<'_>) -> StoreResult<()> + 'a>;

/// An open batch of writes: objects go into new packs; nothing is visible to
/// other processes until [`WriteSession::finish`] has sealed and indexed them.
pub struct WriteSession<'a> {
    pub(crate) store: &'a Store,
    on_seal: Option<SealHook<'a>>,
    pack: Option<PackWriter>,
    compressor: zstd::bulk::Compressor<'static>,
    scratch: Vec<u8>,
    /// Packs sealed so far by this session.
    sealed: Vec<PathBuf>,
    bytes_written: u64,
    _lock: GcLock,
}

/// zstd only when it saves at least 1/16: media is usually compressed already.
pub(crate) fn maybe_compress(
    compressor: &mut zstd::bulk::Compressor<'static>,
    scratch: &mut Vec<u8>,
    data: &[u8],
) -> Option<usize> {
    if data.len() < 64 {
        return None;
    }
    // A 4 KiB sample tells random or already-compressed media apart cheaply.
    const SAMPLE: usize = 4096;
    if data.len() > 4 * SAMPLE {
        let sample = &data[..SAMPLE];
        scratch.clear();
        scratch.reserve(SAMPLE);
        match compressor.compress_to_buffer(sample, scratch) {
            Ok(n) if n < SAMPLE - SAMPLE / 16 => {}
            _ => return None,
        }
    }
    let budget = data.len() - data.len() / 16;
    scratch.clear();
    scratch.reserve(budget);
    match compressor.compress_to_buffer(data, scratch) {
        Ok(n) if n < budget => Some(n),
        _ => None,
    }
}

impl Store {
    /// Starts writing objects. Holds the gc lock (shared) until dropped, so gc
    /// never deletes an object this session deduplicated against.
    pub fn begin_write(&self) -> StoreResult<WriteSession<'_>> {
        let lock = self.hold_off_gc()?;
        // Packs written by others since we opened may hold what we are about to write.
        self.reload()?;
        Ok(WriteSession {
            store: self,
            on_seal: None,
            pack: None,
            compressor: zstd::bulk::Compressor::new(1).map_err(StoreError::Compressor)?,
            scratch: Vec::new(),
            sealed: Vec::new(),
            bytes_written: 0,
            _lock: lock,
        })
    }
}

impl<'a> WriteSession<'a> {
    /// The store this session writes to.
    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// Runs `hook` after each pack this session seals (an object-store remote
    /// uploads it there); an error from the hook fails the write that sealed it.
    pub fn on_seal(&mut self, hook: impl FnMut(&SealedPack<'_>) -> StoreResult<()> + 'a) {
        self.on_seal = Some(Box::new(hook));
    }

    /// Whether the object is stored, or written by this session already.
    pub fn has(&self, id: &ObjectId) -> StoreResult<bool> {
        // The pack being written holds what is not in a sealed pack yet.
        Ok(self.pack.as_ref().is_some_and(|p| p.contains(id)) || self.store.contains(id)?)
    }

    /// The kind and length of an object stored or being written (None: not here).
    pub fn kind_and_len(&self, id: &ObjectId) -> StoreResult<Option<(ObjectKind, u32)>> {
        if let Some(e) = self.pack.as_ref().and_then(|p| p.entry(id)) {
            return Ok(Some((e.kind, e.raw_len)));
        }
        Ok(self
            .store
            .locate(id)?
            .map(|l| (l.entry.kind, l.entry.raw_len)))
    }

    /// Stores an object unless it exists; returns its id.
    pub fn put_object(&mut self, kind: ObjectKind, bytes: &[u8]) -> StoreResult<ObjectId> {
        let id = ObjectId::hash(kind, bytes);
        if self.has(&id)? {
            return Ok(id);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = match maybe_compress(&mut self.compressor, &mut scratch, bytes) {
            Some(n) => self.append(id, kind, bytes.len(), COMP_ZSTD, &scratch[..n]),
            None => self.append(id, kind, bytes.len(), COMP_NONE, bytes),
        };
        self.scratch = scratch;
        result.map(|_| id)
    }

    /// Stores a file's content read from `source` (chunked as files are, so
    /// the id is the one `ingest` gives the same bytes); returns its id and size.
    pub fn put_content(&mut self, source: &mut dyn std::io::Read) -> StoreResult<(ObjectId, u64)> {
        let params = self.store.params();
        let mut chunker = crate::Chunker::new(source, params);
        let mut list = crate::nodes::ListBuilder::<crate::nodes::FileList>::new();
        let mut size = 0;
        let mut chunks = 0u64;
        let mut first = None;
        loop {
            let chunk = match chunker.next_chunk() {
                Ok(Some(c)) => c.to_vec(),
                Ok(None) => break,
                Err(e) => return Err(StoreError::io(Path::new("(content being stored)"), e)),
            };
            let id = self.put_object(ObjectKind::Chunk, &chunk)?;
            size += chunk.len() as u64;
            chunks += 1;
            first.get_or_insert(id);
            list.push(
                self,
                crate::object::NodeEntry {
                    id,
                    size: chunk.len() as u64,
                },
            )?;
        }
        let id = match (chunks, first) {
            (0, _) => self.put_object(ObjectKind::Chunk, &[])?,
            (1, Some(only)) => only,
            _ => list.finish(self)?.id,
        };
        Ok((id, size))
    }

    /// Stores an already hashed (and maybe compressed) object unless it exists.
    pub(crate) fn put_prepared(
        &mut self,
        id: ObjectId,
        kind: ObjectKind,
        raw_len: usize,
        compression: u8,
        payload: &[u8],
    ) -> StoreResult<bool> {
        if self.has(&id)? {
            return Ok(false);
        }
        self.append(id, kind, raw_len, compression, payload)?;
        Ok(true)
    }

    /// Stores an object received from elsewhere, as it comes, after checking
    /// its content hashes to its id. Returns false when it was already here.
    pub fn put_stored(&mut self, obj: &StoredObject) -> StoreResult<bool> {
        if self.has(&obj.id)? {
            return Ok(false);
        }
        obj.content()
            .map_err(|detail| StoreError::Received { id: obj.id, detail })?;
        self.append(
            obj.id,
            obj.kind,
            obj.raw_len as usize,
            obj.compression,
            &obj.payload,
        )?;
        Ok(true)
    }

    /// [`WriteSession::put_stored`] for an object whose content the caller has
    /// just verified ([`Store::read_stored`] does): skips hashing it again.
    pub fn put_verified(&mut self, obj: &StoredObject) -> StoreResult<bool> {
        if self.has(&obj.id)? {
            return Ok(false);
        }
        self.append(
            obj.id,
            obj.kind,
            obj.raw_len as usize,
            obj.compression,
            &obj.payload,
        )?;
        Ok(true)
    }

    /// Packs sealed so far by this session (each durable on its own).
    pub fn sealed_packs(&self) -> usize {
        self.sealed.len()
    }

    fn append(
        &mut self,
        id: ObjectId,
        kind: ObjectKind,
        raw_len: usize,
        compression: u8,
        payload: &[u8],
    ) -> StoreResult<()> {
        if self.pack.is_none() {
            self.pack = Some(PackWriter::create_with(
                self.store.packs_dir(),
                self.store.is_durable(),
            )?);
        }
        let pack = self
            .pack
            .as_mut()
            .ok_or_else(|| StoreError::Internal("no pack open for writing".into()))?;
        pack.append(id, kind, raw_len, compression, payload)?;
        self.bytes_written += payload.len() as u64;
        if pack.bytes_written() >= self.store.pack_limit() {
            self.seal()?;
        }
        Ok(())
    }

    /// Payload bytes this session appended so far (compressed as stored).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Seals the open pack: data synced, index written and synced, both renamed.
    fn seal(&mut self) -> StoreResult<()> {
        let Some(pack) = self.pack.take() else {
            return Ok(());
        };
        if pack.object_count() == 0 {
            pack.discard();
            return Ok(());
        }
        let (checksum, pack_path, entries) = pack.finish()?;
        let idx_path = self.store.packs_dir().join(index_file_name(&checksum));
        write_index_with(&idx_path, &[checksum], entries, self.store.is_durable())?;
        if self.store.is_durable() {
            sync_dir(self.store.packs_dir())?;
        }
        crate::failpoint("pack-sealed");
        self.store.add_index(PackIndex::open(&idx_path)?);
        // Only speed is at stake: a failure (a damaged index, a full disk) is the next rewrite's to retry.
        if self.store.is_durable() {
            let _ = self.store.index_packs_if_grown();
        }
        if let Some(hook) = self.on_seal.as_mut() {
            hook(&SealedPack {
                checksum,
                pack_path: &pack_path,
                index_path: &idx_path,
            })?;
        }
        self.sealed.push(pack_path);
        Ok(())
    }

    /// Makes everything written durable and visible. The caller updates refs
    /// afterwards and only then drops the session (releasing the gc lock).
    pub fn finish(&mut self) -> StoreResult<()> {
        self.seal()?;
        // A scratch store's packs are moved away as they are sealed: no multi-pack index there.
        if self.store.is_durable() && !self.sealed.is_empty() {
            // gc's grace period counts from now, when the objects become
            // usable, not from when a long session sealed its first pack
            // (the last one was written just now).
            let now = std::fs::FileTimes::new().set_modified(std::time::SystemTime::now());
            for path in &self.sealed[..self.sealed.len() - 1] {
                File::open(path).and_then(|f| f.set_times(now)).at(path)?;
            }
            self.store.index_packs_if_piled_up()?;
        }
        Ok(())
    }
}

impl Drop for WriteSession<'_> {
    fn drop(&mut self) {
        if let Some(pack) = self.pack.take() {
            pack.discard();
        }
    }
}

impl NodeSink for WriteSession<'_> {
    fn put(&mut self, kind: ObjectKind, bytes: Vec<u8>) -> StoreResult<ObjectId> {
        self.put_object(kind, &bytes)
    }
}
