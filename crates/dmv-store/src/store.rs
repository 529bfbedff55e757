use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::error::IoContext;
use crate::index::{write_index_with, write_merged_index, Located, PackIndex};
use crate::lock::GcLock;
use crate::nodes::NodeSink;
use crate::object::{decode, FileNode};
use crate::pack::{self, index_file_name, pack_file_name, PackWriter, COMP_NONE, COMP_ZSTD};
use crate::{ChunkParams, ObjectId, ObjectKind, StoreError, StoreResult};

pub const MULTI_PACK_INDEX: &str = "multi-pack-index";
/// Listings of the packs folder a reload makes while packs are being replaced under it.
const RELIST_ATTEMPTS: usize = 5;
/// The packs left outside the multi-pack index, each behind a filter built
/// in memory (those a write session sealed have theirs already): the
/// auto-repack rolls them together above this many, a long write session
/// folds them in (see [`Store::index_packs_if_grown`]).
pub(crate) const MAX_UNCOVERED_PACKS: usize = 8;
/// The auto-repack folds the packs outside the multi-pack index into it
/// once they hold at least 1/`FOLD_RATIO` of the objects it covers: each
/// rewrite is then at least that much larger than the last, so all of them
/// together write each object's entry O(1) times, where a rewrite every
/// few commits wrote the whole index (every object of a long history) each time.
pub(crate) const FOLD_RATIO: usize = 8;

/// The object store under `.dmv/objects`.
pub struct Store {
    packs_dir: PathBuf,
    lock_path: PathBuf,
    params: ChunkParams,
    pack_limit: u64,
    indexes: RwLock<Vec<Arc<PackIndex>>>,
    /// A pack index that could not be opened (damaged): its objects cannot
    /// be found, and a lookup that misses says so instead of "not found".
    unreadable: RwLock<Option<StoreError>>,
    /// When the indexes were last listed, and the packs folder's mtime then.
    listed_at: Mutex<Option<(SystemTime, SystemTime)>>,
    files: Mutex<HashMap<ObjectId, Arc<File>>>,
    /// False for a scratch store whose packs are copied elsewhere and deleted
    /// (an object-store push stages its packs in one): no fsync there.
    durable: bool,
    /// Index probes made (binary searches), for tests and traces: the
    /// filters are meant to keep this near one per lookup of a present id.
    probes: std::sync::atomic::AtomicU64,
}

/// An object as a pack stores it (maybe compressed): what sync sends and
/// receives, so nothing is recompressed on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    pub id: ObjectId,
    pub kind: ObjectKind,
    pub compression: u8,
    pub raw_len: u32,
    pub payload: Vec<u8>,
}

impl StoredObject {
    /// The object's content, after checking it hashes to the id (so bytes
    /// from a disk or a peer are never trusted).
    pub fn content(&self) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        if self.compression == COMP_NONE {
            if self.payload.len() != self.raw_len as usize {
                return Err("length does not match".into());
            }
            if ObjectId::hash(self.kind, &self.payload) != self.id {
                return Err("content does not hash to its id".into());
            }
            return Ok(std::borrow::Cow::Borrowed(&self.payload));
        }
        pack::decode_payload(self.id, self.kind, self.compression, self.raw_len as usize, self.payload.clone()).map(std::borrow::Cow::Owned)
    }
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Stats {
    pub packs: usize,
    pub objects: usize,
    pub chunks: usize,
    pub stored_bytes: u64,
    pub unique_content_bytes: u64,
}

impl Store {
    pub fn create(dir: &Path) -> StoreResult<()> {
        let packs = dir.join("packs");
        std::fs::create_dir_all(&packs).at(&packs)?;
        Ok(())
    }

    pub fn open(dir: &Path, params: ChunkParams, pack_limit: u64) -> StoreResult<Store> {
        Self::open_with(dir, params, pack_limit, true)
    }

    /// A store whose writes need not survive a crash: the caller copies its
    /// packs elsewhere and deletes them. It skips every fsync.
    pub fn open_scratch(dir: &Path, params: ChunkParams, pack_limit: u64) -> StoreResult<Store> {
        Self::open_with(dir, params, pack_limit, false)
    }

    fn open_with(dir: &Path, params: ChunkParams, pack_limit: u64, durable: bool) -> StoreResult<Store> {
        let packs_dir = dir.join("packs");
        if !packs_dir.is_dir() {
            return Err(StoreError::io(&packs_dir, std::io::Error::new(std::io::ErrorKind::NotFound, "object store missing")));
        }
        let store = Store {
            lock_path: dir.join("gc.lock"),
            packs_dir,
            params,
            pack_limit: pack_limit.max(1 << 16),
            indexes: RwLock::new(Vec::new()),
            unreadable: RwLock::new(None),
            listed_at: Mutex::new(None),
            files: Mutex::new(HashMap::new()),
            durable,
            probes: Default::default(),
        };
        store.reload()?;
        Ok(store)
    }

    pub fn params(&self) -> ChunkParams {
        self.params
    }

    pub fn packs_dir(&self) -> &Path {
        &self.packs_dir
    }

    pub fn pack_limit(&self) -> u64 {
        self.pack_limit
    }

    /// Re-reads the set of indexes from disk: the multi-pack index plus the
    /// per-pack index of every pack it does not cover.
    pub fn reload(&self) -> StoreResult<()> {
        // An index listed but gone before it is opened means a gc or repack
        // is replacing packs right now: its new packs are in place before
        // any old one goes, so a second listing sees them.
        for _ in 0..RELIST_ATTEMPTS {
            if self.load_indexes()? {
                return Ok(());
            }
        }
        self.load_indexes().map(|_| ())
    }

    /// Reads the indexes; false if one vanished between the listing and its opening.
    fn load_indexes(&self) -> StoreResult<bool> {
        let mtime = std::fs::metadata(&self.packs_dir).and_then(|m| m.modified()).ok();
        *self.listed_at.lock().unwrap_or_else(|e| e.into_inner()) = mtime.map(|m| (SystemTime::now(), m));
        let mut idx_files = Vec::new();
        for entry in std::fs::read_dir(&self.packs_dir).at(&self.packs_dir)? {
            let entry = entry.at(&self.packs_dir)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("pack-") && name.ends_with(".idx") {
                idx_files.push(entry.path());
            }
        }
        idx_files.sort();
        let mut indexes = Vec::new();
        let mut unreadable = None;
        let mut vanished = false;
        let mut covered = HashSet::new();
        let mut outside = Vec::new();
        let midx_path = self.packs_dir.join(MULTI_PACK_INDEX);
        if midx_path.exists() {
            // A damaged multi-pack index only costs speed: fall back to the per-pack ones.
            if let Ok(midx) = PackIndex::open(&midx_path).map(PackIndex::probed_only).map(PackIndex::read_at_random) {
                let all_present = midx.packs().iter().all(|p| self.packs_dir.join(index_file_name(p)).exists());
                if all_present {
                    covered.extend(midx.packs().iter().copied());
                    indexes.push(Arc::new(midx));
                }
            }
        }
        for path in idx_files {
            let covered_pack = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("pack-")?.strip_suffix(".idx"))
                .and_then(ObjectId::from_hex)
                .is_some_and(|p| covered.contains(&p));
            if !covered_pack {
                match PackIndex::open(&path) {
                    Ok(idx) => outside.push(idx.read_at_random()),
                    // Removed since the listing (gc here, or a refresh of a bucket's mirror): so is its pack.
                    Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => vanished = true,
                    // The rest of the store stays usable (and repairable).
                    Err(e @ StoreError::CorruptFile { .. }) => unreadable = Some(e),
                    Err(e) => return Err(e),
                }
            }
        }
        // Many packs outside the multi-pack index (it is missing, or being
        // rebuilt): filters built from every one of them would cost a command
        // that looks up one object a read of all their ids, so they are probed.
        let many = outside.len() > 2 * MAX_UNCOVERED_PACKS;
        indexes.extend(outside.into_iter().map(|idx| Arc::new(if many { idx.probed_only() } else { idx })));
        *self.indexes.write().unwrap_or_else(|e| e.into_inner()) = indexes;
        *self.unreadable.write().unwrap_or_else(|e| e.into_inner()) = unreadable;
        Ok(!vanished)
    }

    pub(crate) fn indexes(&self) -> Vec<Arc<PackIndex>> {
        self.indexes.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn add_index(&self, idx: PackIndex) {
        self.indexes.write().unwrap_or_else(|e| e.into_inner()).push(Arc::new(idx));
    }

    pub fn locate(&self, id: &ObjectId) -> StoreResult<Option<Located>> {
        self.probe_indexes(id, |idx| idx.lookup(id))
    }

    /// The first answer `probe` gives from an index that may hold `id`.
    fn probe_indexes<T>(&self, id: &ObjectId, probe: impl Fn(&PackIndex) -> StoreResult<Option<T>>) -> StoreResult<Option<T>> {
        for idx in self.indexes.read().unwrap_or_else(|e| e.into_inner()).iter() {
            if !idx.may_contain(id) {
                continue;
            }
            self.probes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(found) = probe(idx)? {
                return Ok(Some(found));
            }
        }
        if let Some(StoreError::CorruptFile { path, detail }) = &*self.unreadable.read().unwrap_or_else(|e| e.into_inner()) {
            let detail = format!("{detail}; the objects it indexes cannot be found (`dmv fsck --repair` rebuilds it)");
            return Err(StoreError::CorruptFile { path: path.clone(), detail });
        }
        Ok(None)
    }

    /// [`Store::locate`] for a reader: an object it misses may be in a pack
    /// another process wrote after this store listed its packs (a commit
    /// that a ref read since points to), so on a miss the packs are listed
    /// again if their folder changed since, or had changed so shortly before
    /// the listing that its coarse timestamp could not show a change after
    /// it. Writers' lookups of new content miss all the time and use
    /// `locate`, which never lists.
    pub fn find(&self, id: &ObjectId) -> StoreResult<Option<Located>> {
        if let Some(found) = self.locate(id)? {
            return Ok(Some(found));
        }
        let listed = *self.listed_at.lock().unwrap_or_else(|e| e.into_inner());
        let mtime = std::fs::metadata(&self.packs_dir).and_then(|m| m.modified()).ok();
        let stale = match (listed, mtime) {
            (Some((when, then)), Some(now)) => now != then || when.duration_since(now).is_ok_and(|gap| gap < 2 * crate::clock::timestamp_granularity()) || when < now,
            _ => true,
        };
        if stale {
            self.reload()?;
            return self.locate(id);
        }
        Ok(None)
    }

    /// Index probes made since the store was opened.
    pub fn index_probes(&self) -> u64 {
        self.probes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Reads only the sorted ids of an index, not its entries: a push
    /// checks every child of the trees it receives, and reading the entries
    /// too kept a further 1.4 MB of a 100,000-object pack's index resident.
    pub fn contains(&self, id: &ObjectId) -> StoreResult<bool> {
        Ok(self.probe_indexes(id, |idx| Ok(idx.position(id)))?.is_some())
    }

    pub fn kind_of(&self, id: &ObjectId) -> StoreResult<ObjectKind> {
        Ok(self.find(id)?.ok_or(StoreError::NotFound { id: *id })?.entry.kind)
    }

    pub(crate) fn pack_file(&self, pack: &ObjectId) -> StoreResult<Arc<File>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = files.get(pack) {
            return Ok(f.clone());
        }
        let path = self.packs_dir.join(pack_file_name(pack));
        let f = Arc::new(File::open(&path).at(&path)?);
        files.insert(*pack, f.clone());
        Ok(f)
    }

    /// The open pack holding a located object. A pack gc has rewritten since
    /// our indexes were read is gone (packs already open stay readable): the
    /// indexes are read again and the object is found in its new pack.
    fn open_located(&self, loc: &Located) -> StoreResult<(Arc<File>, Located)> {
        match self.pack_file(&loc.pack) {
            Err(StoreError::Io { source, path }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.reload()?;
                match self.locate(&loc.entry.id)? {
                    Some(moved) if moved.pack != loc.pack => Ok((self.pack_file(&moved.pack)?, moved)),
                    _ => Err(StoreError::Io { source, path }),
                }
            }
            other => Ok((other?, *loc)),
        }
    }

    pub(crate) fn read_located(&self, loc: &Located) -> StoreResult<Vec<u8>> {
        let (file, loc) = self.open_located(loc)?;
        pack::read_record(&file, pack::PackFileName(&loc.pack), &loc.entry)
    }

    /// Reads an object and checks it hashes to its id.
    pub fn read(&self, id: &ObjectId) -> StoreResult<(ObjectKind, Vec<u8>)> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        Ok((loc.entry.kind, self.read_located(&loc)?))
    }

    /// An object as stored, verified; for sending it elsewhere.
    pub fn read_stored(&self, id: &ObjectId) -> StoreResult<StoredObject> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        let obj = self.read_stored_unverified(&loc)?;
        obj.content().map_err(|detail| StoreError::DamagedObject { id: *id, pack: pack_file_name(&loc.pack), detail })?;
        Ok(obj)
    }

    /// For records read one by one in order (a transfer sending them): call
    /// before reading `records[i]`. Every `READ_AHEAD` records it asks the
    /// kernel for the next window (at the start, for the first two), so the
    /// disk reads one window while the one before it is sent.
    pub fn read_ahead(&self, records: &[Located], i: usize) {
        const READ_AHEAD: usize = 128; // ~8 MiB of chunks
        if !i.is_multiple_of(READ_AHEAD) {
            return;
        }
        let window = |k: usize| &records[(k * READ_AHEAD).min(records.len())..((k + 1) * READ_AHEAD).min(records.len())];
        if i == 0 {
            self.prefetch(window(0));
        }
        self.prefetch(window(i / READ_AHEAD + 1));
    }

    /// Asks the kernel to start reading these records in the background, a
    /// contiguous span per request: reading a cold pack record by record
    /// otherwise waits for the disk a small read-ahead at a time. Only a
    /// hint; errors are ignored.
    pub fn prefetch(&self, records: &[Located]) {
        #[cfg(all(target_os = "linux", not(dmv_portable)))]
        use std::os::unix::io::AsRawFd;
        let mut spans: Vec<(ObjectId, u64, u64)> = records.iter().map(|l| (l.pack, l.entry.offset, l.entry.offset + l.entry.record_len() as u64)).collect();
        spans.sort_unstable();
        let mut merged: Vec<(ObjectId, u64, u64)> = Vec::new();
        for (pack, start, end) in spans {
            match merged.last_mut() {
                // Records up to 1 MiB apart share a request: the gap costs less than a seek.
                Some((p, _, e)) if *p == pack && start <= *e + (1 << 20) => *e = (*e).max(end),
                _ => merged.push((pack, start, end)),
            }
        }
        for (pack, start, end) in merged {
            if let Ok(file) = self.pack_file(&pack) {
                // SAFETY: posix_fadvise only reads its integer arguments; a bad fd or range is an error return.
                #[cfg(all(target_os = "linux", not(dmv_portable)))]
                unsafe {
                    libc::posix_fadvise(file.as_raw_fd(), start as libc::off_t, (end - start) as libc::off_t, libc::POSIX_FADV_WILLNEED)
                };
                // Elsewhere no read-ahead hint: the reads come when they come.
                #[cfg(not(all(target_os = "linux", not(dmv_portable))))]
                let _ = (file, start, end);
            }
        }
    }

    /// An object as stored, its record header checked against the index but
    /// its content not hashed: for serving a peer, which hashes every object
    /// it receives anyway (hashing on both ends would double the CPU a
    /// transfer costs).
    pub fn read_stored_unverified(&self, loc: &Located) -> StoreResult<StoredObject> {
        let (file, loc) = self.open_located(loc)?;
        let e = loc.entry;
        let payload = pack::read_stored_record(&file, pack::PackFileName(&loc.pack), &e)?;
        Ok(StoredObject { id: e.id, kind: e.kind, compression: e.compression, raw_len: e.raw_len, payload })
    }

    pub fn read_kind(&self, id: &ObjectId, kind: ObjectKind) -> StoreResult<Vec<u8>> {
        let (actual, bytes) = self.read(id)?;
        if actual != kind {
            return Err(StoreError::WrongKind { id: *id, actual: actual.name(), expected: kind.with_article() });
        }
        Ok(bytes)
    }

    pub fn read_decoded<T: serde::de::DeserializeOwned>(&self, id: &ObjectId, kind: ObjectKind) -> StoreResult<T> {
        let bytes = self.read_kind(id, kind)?;
        decode(id, kind, &bytes)
    }

    /// Streams a file's content (a chunk or a chunk-list tree) to `out`.
    /// The node tree is walked without recursion, each node exactly one
    /// level above its children ([`crate::object::ChunkWalk`]), so a
    /// damaged or hostile chain of nodes is an error, not a stack overflow.
    pub fn write_content(&self, id: &ObjectId, out: &mut dyn Write) -> StoreResult<u64> {
        let write = |out: &mut dyn Write, bytes: &[u8]| out.write_all(bytes).map_err(StoreError::Output);
        // A chunk that is not here fails the whole file before any byte of it is written.
        self.check_content_present(id)?;
        let (kind, bytes) = self.read(id)?;
        match kind {
            ObjectKind::Chunk => {
                write(out, &bytes)?;
                Ok(bytes.len() as u64)
            }
            ObjectKind::FileNode => {
                let mut walk = crate::object::ChunkWalk::new(*id, decode::<FileNode>(id, kind, &bytes)?);
                let mut read_node = |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
                let mut total = 0;
                while let Some(e) = walk.next_chunk(&mut read_node)? {
                    let chunk = self.read_kind(&e.id, ObjectKind::Chunk)?;
                    write(out, &chunk)?;
                    total += chunk.len() as u64;
                }
                Ok(total)
            }
            other => Err(StoreError::WrongKind { id: *id, actual: other.name(), expected: "file content" }),
        }
    }

    /// The chunks of a file's content, with their sizes, in order: its
    /// nodes are read, its chunks only located (a rename of a retouched
    /// photo is seen by the chunks the two versions share).
    pub fn chunk_list(&self, id: &ObjectId) -> StoreResult<Vec<(ObjectId, u64)>> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        if loc.entry.kind != ObjectKind::FileNode {
            return Ok(vec![(*id, loc.entry.raw_len as u64)]);
        }
        let mut walk = crate::object::ChunkWalk::new(*id, self.read_decoded::<FileNode>(id, ObjectKind::FileNode)?);
        let mut read_node = |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        let mut out = Vec::new();
        while let Some(e) = walk.next_chunk(&mut read_node)? {
            out.push((e.id, e.size));
        }
        Ok(out)
    }

    /// A file's content as a reader, a chunk at a time (what
    /// [`Store::write_content`] writes), for writers that pull: a tar entry
    /// of a file larger than memory. Checked present first, as there.
    pub fn content_reader(&self, id: &ObjectId) -> StoreResult<ContentReader<'_>> {
        self.check_content_present(id)?;
        let (kind, bytes) = self.read(id)?;
        match kind {
            ObjectKind::Chunk => Ok(ContentReader { store: self, walk: None, chunk: bytes, at: 0 }),
            ObjectKind::FileNode => {
                Ok(ContentReader { store: self, walk: Some(crate::object::ChunkWalk::new(*id, decode::<FileNode>(id, kind, &bytes)?)), chunk: Vec::new(), at: 0 })
            }
            other => Err(StoreError::WrongKind { id: *id, actual: other.name(), expected: "file content" }),
        }
    }

    /// [`Store::content_reader`] starting `offset` bytes in: what comes
    /// before is skipped a node or chunk at a time without being read (a
    /// player seeking into the middle of a film reads from there).
    /// Unlike there, the content is not checked present first (that reads
    /// every node of the file, for each of a player's many requests): a
    /// chunk found missing ends the reader with an error where it is.
    pub fn content_reader_at(&self, id: &ObjectId, offset: u64) -> StoreResult<ContentReader<'_>> {
        let (kind, bytes) = self.read(id)?;
        let mut reader = match kind {
            ObjectKind::Chunk => ContentReader { store: self, walk: None, chunk: bytes, at: 0 },
            ObjectKind::FileNode => ContentReader { store: self, walk: Some(crate::object::ChunkWalk::new(*id, decode::<FileNode>(id, kind, &bytes)?)), chunk: Vec::new(), at: 0 },
            other => return Err(StoreError::WrongKind { id: *id, actual: other.name(), expected: "file content" }),
        };
        let Some(walk) = reader.walk.as_mut() else {
            reader.at = usize::try_from(offset).unwrap_or(usize::MAX).min(reader.chunk.len());
            return Ok(reader);
        };
        let mut read_node = |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        let into_chunk = walk.skip(offset, &mut read_node)?;
        if let Some(e) = walk.next_chunk(&mut read_node)? {
            reader.chunk = self.read_kind(&e.id, ObjectKind::Chunk)?;
            reader.at = usize::try_from(into_chunk).unwrap_or(usize::MAX).min(reader.chunk.len());
        }
        Ok(reader)
    }

    /// The length of a file's content, from its first object alone.
    pub fn content_len(&self, id: &ObjectId) -> StoreResult<u64> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        match loc.entry.kind {
            ObjectKind::Chunk => Ok(loc.entry.raw_len as u64),
            ObjectKind::FileNode => Ok(self.read_decoded::<FileNode>(id, ObjectKind::FileNode)?.entries.iter().map(|e| e.size).sum()),
            other => Err(StoreError::WrongKind { id: *id, actual: other.name(), expected: "file content" }),
        }
    }

    /// A file's content as a reader that can seek (for parsers that jump
    /// to an index at the end of a file, as media containers keep one):
    /// each seek starts a [`Store::content_reader_at`] there.
    pub fn seekable_content(&self, id: &ObjectId) -> StoreResult<SeekableContent<'_>> {
        Ok(SeekableContent { store: self, id: *id, len: self.content_len(id)?, pos: 0, reader: None })
    }

    /// Checks that a file's content is all here: its nodes are read (and
    /// their levels checked), its chunks located but not read. A checkout
    /// asks this before it changes anything, so missing data stops it while
    /// the working tree is still as it was.
    pub fn check_content_present(&self, id: &ObjectId) -> StoreResult<()> {
        self.check_content(id, &|id| self.find(id))
    }

    /// [`Store::check_content_present`] among the packs as last listed: for
    /// a checkout, which asks it of every file. On a miss, `find` looks at
    /// the packs folder again, and a meta clone of 100,000 files, missing
    /// every file's data, spent a third of its time doing so.
    pub fn check_content_listed(&self, id: &ObjectId) -> StoreResult<()> {
        self.check_content(id, &|id| self.locate(id))
    }

    fn check_content(&self, id: &ObjectId, lookup: &dyn Fn(&ObjectId) -> StoreResult<Option<Located>>) -> StoreResult<()> {
        let loc = lookup(id)?.ok_or(StoreError::NotFound { id: *id })?;
        if loc.entry.kind != ObjectKind::FileNode {
            return Ok(());
        }
        let mut walk = crate::object::ChunkWalk::new(*id, self.read_decoded::<FileNode>(id, ObjectKind::FileNode)?);
        let mut read_node = |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        while let Some(e) = walk.next_chunk(&mut read_node)? {
            if lookup(&e.id)?.is_none() {
                return Err(StoreError::NotFound { id: e.id });
            }
        }
        Ok(())
    }

    /// Resolves a unique id from a hex prefix of at least 4 digits.
    pub fn resolve_prefix(&self, prefix: &str) -> StoreResult<Option<ObjectId>> {
        if prefix.len() == 64 {
            return Ok(ObjectId::from_hex(prefix).filter(|id| self.contains(id).unwrap_or(false)));
        }
        if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let prefix = prefix.to_ascii_lowercase();
        let first = u8::from_str_radix(&prefix[..2], 16).map_err(|_| StoreError::BadPrefix(prefix.to_string()))?;
        let mut found: Option<ObjectId> = None;
        for idx in self.indexes() {
            for i in idx.bucket(first) {
                if hex::encode(idx.id_at(i)).starts_with(&prefix) {
                    let id = ObjectId::from_slice(idx.id_at(i)).ok_or_else(|| StoreError::Internal("an index entry is not an object id".into()))?;
                    if found.is_some_and(|f| f != id) {
                        return Err(StoreError::Ambiguous { prefix });
                    }
                    found = Some(id);
                }
            }
        }
        Ok(found)
    }

    pub fn stats(&self) -> StoreResult<Stats> {
        let mut s = Stats::default();
        let mut seen_packs = HashSet::new();
        for idx in self.indexes() {
            for p in idx.packs() {
                if seen_packs.insert(*p) {
                    let path = self.packs_dir.join(pack_file_name(p));
                    match std::fs::metadata(&path) {
                        Ok(meta) => s.stored_bytes += meta.len(),
                        // Rolled into another pack since our indexes were read.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(StoreError::io(&path, e)),
                    }
                }
            }
            for i in 0..idx.len() {
                let loc = idx.located_at(i)?;
                s.objects += 1;
                if loc.entry.kind == ObjectKind::Chunk {
                    s.chunks += 1;
                    s.unique_content_bytes += loc.entry.raw_len as u64;
                }
            }
        }
        s.packs = seen_packs.len();
        Ok(s)
    }

    /// Starts writing objects. Holds the gc lock (shared) until dropped, so gc
    /// never deletes an object this session deduplicated against.
    pub fn begin_write(&self) -> StoreResult<WriteSession<'_>> {
        let lock = GcLock::shared(&self.lock_path)?;
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

    /// Holds gc off (the gc lock, shared) until dropped: for a caller that
    /// checks an object is present and then makes a ref point at it, so gc
    /// cannot delete it in between.
    pub fn hold_off_gc(&self) -> StoreResult<GcLock> {
        GcLock::shared(&self.lock_path)
    }

    pub(crate) fn exclusive_lock(&self) -> StoreResult<GcLock> {
        GcLock::exclusive(&self.lock_path)
    }

    pub(crate) fn try_exclusive_lock(&self) -> StoreResult<Option<GcLock>> {
        GcLock::try_exclusive(&self.lock_path)
    }

    pub(crate) fn is_durable(&self) -> bool {
        self.durable
    }

    /// Rewrites the multi-pack index over every pack index present.
    pub fn write_multi_pack_index(&self) -> StoreResult<()> {
        let indexes = open_to_merge(self.pack_index_paths(|_| false)?)?;
        write_merged_index(&self.packs_dir.join(MULTI_PACK_INDEX), &indexes)?;
        sync_dir(&self.packs_dir)?;
        self.reload()
    }

    /// The per-pack indexes in the packs folder, in name order, but those whose name `skip` picks.
    fn pack_index_paths(&self, skip: impl Fn(&str) -> bool) -> StoreResult<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&self.packs_dir).at(&self.packs_dir)? {
            let path = entry.at(&self.packs_dir)?.path();
            if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("pack-") && n.ends_with(".idx") && !skip(n)) {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths)
    }

    /// A long write session (a file larger than RAM, a million files) seals
    /// hundreds of packs, each one more filter to check at every lookup.
    /// Folding them into the multi-pack index once they outnumber an eighth
    /// of the packs it covers bounds that, and as each rewrite covers an
    /// eighth more packs than the last, all of them together cost O(packs).
    /// Fewer are left to the auto-repack (see [`Store::index_packs_if_piled_up`]).
    fn index_packs_if_grown(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|covered| (2 * MAX_UNCOVERED_PACKS).max(covered / 8))
    }

    /// Rewrites the multi-pack index once more than a few packs are outside
    /// it, so a lookup probes a bounded number of indexes.
    pub fn index_packs_if_many(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|_| MAX_UNCOVERED_PACKS)
    }

    /// After a write session: its packs stay outside the multi-pack index
    /// for the auto-repack to roll and fold (see [`FOLD_RATIO`]); they are
    /// folded in here only once twice as many as it allows pile up (it
    /// could not run: other writers kept the store busy, or the command
    /// does not call it).
    fn index_packs_if_piled_up(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|_| 2 * MAX_UNCOVERED_PACKS)
    }

    /// The number of objects the multi-pack index covers, and the per-pack
    /// indexes of the packs outside it.
    pub(crate) fn coverage(&self) -> (usize, Vec<Arc<PackIndex>>) {
        let (midx, outside): (Vec<_>, Vec<_>) = self.indexes().into_iter().partition(|i| i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX));
        (midx.iter().map(|i| i.len()).sum(), outside)
    }

    /// Rewrites the multi-pack index when more packs than `bound(packs it covers)` are outside it.
    fn index_packs_if_outside_over(&self, bound: impl Fn(usize) -> usize) -> StoreResult<()> {
        let indexes = self.indexes();
        let (midx, outside): (Vec<_>, Vec<_>) = indexes.iter().partition(|i| i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX));
        let covered: usize = midx.iter().map(|i| i.packs().len()).sum();
        if outside.len() > bound(covered) {
            self.fold_into_multi_pack_index()?;
        }
        Ok(())
    }

    /// Merges the indexes of the packs outside the multi-pack index into it,
    /// rather than every pack's index: a handful of sources instead of
    /// hundreds, each read front to back. Writers only add packs (gc removes
    /// them, under the exclusive lock, and rewrites the whole index), so the
    /// old index stays right; if a pack it names is gone all the same, the
    /// whole index is rewritten.
    fn fold_into_multi_pack_index(&self) -> StoreResult<()> {
        let path = self.packs_dir.join(MULTI_PACK_INDEX);
        let old = match PackIndex::open(&path) {
            Ok(old) => old,
            Err(_) => return self.write_multi_pack_index(),
        };
        if old.packs().iter().any(|p| !self.packs_dir.join(pack_file_name(p)).exists()) {
            return self.write_multi_pack_index();
        }
        let covered: HashSet<String> = old.packs().iter().map(index_file_name).collect();
        let mut sources = vec![old];
        sources.extend(open_to_merge(self.pack_index_paths(|name| covered.contains(name))?)?);
        write_merged_index(&path, &sources)?;
        sync_dir(&self.packs_dir)?;
        self.reload()
    }
}

/// Opens the indexes a multi-pack index is merged from. One removed since
/// it was listed is left out, and so is a damaged one: left uncovered, the
/// store reports it where it is read, and repair rebuilds it.
fn open_to_merge(paths: Vec<PathBuf>) -> StoreResult<Vec<PackIndex>> {
    let mut indexes = Vec::with_capacity(paths.len());
    for path in paths {
        match PackIndex::open(&path) {
            Ok(idx) => indexes.push(idx),
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(StoreError::CorruptFile { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(indexes)
}

pub(crate) fn sync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// An open batch of writes: objects go into new packs; nothing is visible to
/// other processes until [`WriteSession::finish`] has sealed and indexed them.
/// A pack a write session has just sealed (data and index durable and visible).
pub struct SealedPack<'p> {
    pub checksum: ObjectId,
    pub pack_path: &'p Path,
    pub index_path: &'p Path,
}

type SealHook<'a> = Box<dyn FnMut(&SealedPack<'_>) -> StoreResult<()> + 'a>;

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
pub(crate) fn maybe_compress(compressor: &mut zstd::bulk::Compressor<'static>, scratch: &mut Vec<u8>, data: &[u8]) -> Option<usize> {
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

impl<'a> WriteSession<'a> {
    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// Runs `hook` after each pack this session seals (an object-store remote
    /// uploads it there); an error from the hook fails the write that sealed it.
    pub fn on_seal(&mut self, hook: impl FnMut(&SealedPack<'_>) -> StoreResult<()> + 'a) {
        self.on_seal = Some(Box::new(hook));
    }

    pub fn has(&self, id: &ObjectId) -> StoreResult<bool> {
        // The pack being written holds what is not in a sealed pack yet.
        Ok(self.pack.as_ref().is_some_and(|p| p.contains(id)) || self.store.contains(id)?)
    }

    /// The kind and length of an object stored or being written (None: not here).
    pub fn kind_and_len(&self, id: &ObjectId) -> StoreResult<Option<(ObjectKind, u32)>> {
        if let Some(e) = self.pack.as_ref().and_then(|p| p.entry(id)) {
            return Ok(Some((e.kind, e.raw_len)));
        }
        Ok(self.store.locate(id)?.map(|l| (l.entry.kind, l.entry.raw_len)))
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
        let params = self.store.params;
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
            list.push(self, crate::object::NodeEntry { id, size: chunk.len() as u64 })?;
        }
        let id = match (chunks, first) {
            (0, _) => self.put_object(ObjectKind::Chunk, &[])?,
            (1, Some(only)) => only,
            _ => list.finish(self)?.id,
        };
        Ok((id, size))
    }

    /// Stores an already hashed (and maybe compressed) object unless it exists.
    pub(crate) fn put_prepared(&mut self, id: ObjectId, kind: ObjectKind, raw_len: usize, compression: u8, payload: &[u8]) -> StoreResult<bool> {
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
        obj.content().map_err(|detail| StoreError::Received { id: obj.id, detail })?;
        self.append(obj.id, obj.kind, obj.raw_len as usize, obj.compression, &obj.payload)?;
        Ok(true)
    }

    /// [`WriteSession::put_stored`] for an object whose content the caller has
    /// just verified ([`Store::read_stored`] does): skips hashing it again.
    pub fn put_verified(&mut self, obj: &StoredObject) -> StoreResult<bool> {
        if self.has(&obj.id)? {
            return Ok(false);
        }
        self.append(obj.id, obj.kind, obj.raw_len as usize, obj.compression, &obj.payload)?;
        Ok(true)
    }

    /// Packs sealed so far by this session (each durable on its own).
    pub fn sealed_packs(&self) -> usize {
        self.sealed.len()
    }

    fn append(&mut self, id: ObjectId, kind: ObjectKind, raw_len: usize, compression: u8, payload: &[u8]) -> StoreResult<()> {
        if self.pack.is_none() {
            self.pack = Some(PackWriter::create_with(&self.store.packs_dir, self.store.durable)?);
        }
        let pack = self.pack.as_mut().ok_or_else(|| StoreError::Internal("no pack open for writing".into()))?;
        pack.append(id, kind, raw_len, compression, payload)?;
        self.bytes_written += payload.len() as u64;
        if pack.bytes_written() >= self.store.pack_limit {
            self.seal()?;
        }
        Ok(())
    }

    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Seals the open pack: data synced, index written and synced, both renamed.
    fn seal(&mut self) -> StoreResult<()> {
        let Some(pack) = self.pack.take() else { return Ok(()) };
        if pack.object_count() == 0 {
            pack.discard();
            return Ok(());
        }
        let (checksum, pack_path, entries) = pack.finish()?;
        let idx_path = self.store.packs_dir.join(index_file_name(&checksum));
        write_index_with(&idx_path, &[checksum], entries, self.store.durable)?;
        if self.store.durable {
            sync_dir(&self.store.packs_dir)?;
        }
        crate::failpoint("pack-sealed");
        self.store.add_index(PackIndex::open(&idx_path)?);
        // Only speed is at stake: a failure (a damaged index, a full disk) is the next rewrite's to retry.
        if self.store.durable {
            let _ = self.store.index_packs_if_grown();
        }
        if let Some(hook) = self.on_seal.as_mut() {
            hook(&SealedPack { checksum, pack_path: &pack_path, index_path: &idx_path })?;
        }
        self.sealed.push(pack_path);
        Ok(())
    }

    /// Makes everything written durable and visible. The caller updates refs
    /// afterwards and only then drops the session (releasing the gc lock).
    pub fn finish(&mut self) -> StoreResult<()> {
        self.seal()?;
        // A scratch store's packs are moved away as they are sealed: no multi-pack index there.
        if self.store.durable && !self.sealed.is_empty() {
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

/// See [`Store::content_reader`].
pub struct ContentReader<'s> {
    store: &'s Store,
    walk: Option<crate::object::ChunkWalk>,
    chunk: Vec<u8>,
    at: usize,
}

impl std::io::Read for ContentReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            let store = self.store;
            let Some(walk) = self.walk.as_mut() else { return Ok(0) };
            let mut read_node = |node: &ObjectId| store.read_decoded::<FileNode>(node, ObjectKind::FileNode);
            match walk.next_chunk(&mut read_node).map_err(std::io::Error::other)? {
                Some(e) => {
                    self.chunk = store.read_kind(&e.id, ObjectKind::Chunk).map_err(std::io::Error::other)?;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// See [`Store::seekable_content`].
pub struct SeekableContent<'s> {
    store: &'s Store,
    id: ObjectId,
    len: u64,
    pos: u64,
    /// Reading from `pos`; None after a seek until the next read.
    reader: Option<ContentReader<'s>>,
}

impl std::io::Read for SeekableContent<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.len {
            return Ok(0);
        }
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(self.store.content_reader_at(&self.id, self.pos).map_err(std::io::Error::other)?),
        };
        let n = reader.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for SeekableContent<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start of the content"))?;
        if target != self.pos {
            self.pos = target;
            self.reader = None;
        }
        Ok(target)
    }
}
