//! The [`Store`] itself: opening `.dmv/objects`, the set of pack indexes it
//! reads (the multi-pack index and the packs outside it), and finding and
//! reading single objects. Everything else in the crate builds on these
//! calls, so this file depends on none of it: writing (`session`), keeping
//! the multi-pack index (`multi_pack`), file content (`content`), gc,
//! verify and repair each add their own `impl Store` above it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::error::IoContext;
use crate::index::{Located, PackIndex};
use crate::lock::GcLock;
use crate::object::decode;
use crate::pack::{self, index_file_name, pack_file_name, COMP_NONE};
use crate::{ChunkParams, ObjectId, ObjectKind, StoreError, StoreResult};

/// The file name, in the packs folder, of the index that covers many packs at once.
pub const MULTI_PACK_INDEX: &str = "multi-pack-index";
/// Listings of the packs folder a reload makes while packs are being replaced under it.
const RELIST_ATTEMPTS: usize = 5;
/// How many times a read follows an object a gc moved to another pack.
const MOVED_ATTEMPTS: usize = 20;
/// The packs left outside the multi-pack index, each behind a filter built
/// in memory (those a write session sealed have theirs already): the
/// auto-repack rolls them together above this many, a long write session
/// folds them in (see [`Store::index_packs_if_grown`]).
pub(crate) const MAX_UNCOVERED_PACKS: usize = 8;

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
    /// The object.
    pub id: ObjectId,
    /// Its kind.
    pub kind: ObjectKind,
    /// How `payload` is stored: 0 raw, 1 zstd.
    pub compression: u8,
    /// Its length as content.
    pub raw_len: u32,
    /// Its bytes as stored.
    pub payload: Vec<u8>,
}

impl StoredObject {
    /// The object's content, after checking it hashes to the id (so bytes
    /// from a disk or a peer are never trusted).
    pub fn content(&self) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        let content = self.content_checked_before()?;
        if ObjectId::hash(self.kind, &content) != self.id {
            return Err("content does not hash to its id".into());
        }
        Ok(content)
    }

    /// The content of an object whose [`StoredObject::content`] was checked
    /// before (an object does not change): decompressed, not hashed again.
    /// For a receiver that reads a tree more than once between its arrival
    /// and its storing.
    pub fn content_checked_before(&self) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        if self.compression == COMP_NONE {
            if self.payload.len() != self.raw_len as usize {
                return Err("length does not match".into());
            }
            return Ok(std::borrow::Cow::Borrowed(&self.payload));
        }
        pack::decompress_payload(self.compression, self.raw_len as usize, &self.payload)
            .map(std::borrow::Cow::Owned)
    }
}

/// What [`Store::stats`] counts.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Stats {
    /// Pack files.
    pub packs: usize,
    /// Objects, of every kind (one stored in two packs counts twice).
    pub objects: usize,
    /// Chunks among them.
    pub chunks: usize,
    /// Bytes of the pack files.
    pub stored_bytes: u64,
    /// Bytes of the chunks as content (a chunk many files share counts once).
    pub unique_content_bytes: u64,
}

impl Store {
    /// Makes an empty store in `dir` (the `packs` folder in it); open it with [`Store::open`].
    pub fn create(dir: &Path) -> StoreResult<()> {
        let packs = dir.join("packs");
        std::fs::create_dir_all(&packs).at(&packs)?;
        Ok(())
    }

    /// Opens the store in `dir`. `params` chunk what it ingests (they must be
    /// the repository's, for ids to match other replicas'); packs roll over
    /// at `pack_limit` bytes (64 KiB at least).
    pub fn open(dir: &Path, params: ChunkParams, pack_limit: u64) -> StoreResult<Store> {
        Self::open_with(dir, params, pack_limit, true)
    }

    /// A store whose writes need not survive a crash: the caller copies its
    /// packs elsewhere and deletes them. It skips every fsync.
    pub fn open_scratch(dir: &Path, params: ChunkParams, pack_limit: u64) -> StoreResult<Store> {
        Self::open_with(dir, params, pack_limit, false)
    }

    fn open_with(
        dir: &Path,
        params: ChunkParams,
        pack_limit: u64,
        durable: bool,
    ) -> StoreResult<Store> {
        let packs_dir = dir.join("packs");
        if !packs_dir.is_dir() {
            return Err(StoreError::io(
                &packs_dir,
                std::io::Error::new(std::io::ErrorKind::NotFound, "object store missing"),
            ));
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

    /// The chunking it was opened with.
    pub fn params(&self) -> ChunkParams {
        self.params
    }

    /// The folder of packs and indexes.
    pub fn packs_dir(&self) -> &Path {
        &self.packs_dir
    }

    /// The size at which a write session starts a new pack.
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
        let mtime = std::fs::metadata(&self.packs_dir)
            .and_then(|m| m.modified())
            .ok();
        *self.listed_at.lock().unwrap_or_else(|e| e.into_inner()) =
            mtime.map(|m| (SystemTime::now(), m));
        let mut idx_files = Vec::new();
        let mut listed = HashSet::new();
        for entry in std::fs::read_dir(&self.packs_dir).at(&self.packs_dir)? {
            let entry = entry.at(&self.packs_dir)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("pack-") && name.ends_with(".idx") {
                listed.insert(name.into_owned());
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
            if let Ok(midx) = PackIndex::open(&midx_path)
                .map(PackIndex::probed_only)
                .map(PackIndex::read_at_random)
            {
                // Checked against the listing, not a stat per pack: a
                // partial replica reloads after every piece it fetches.
                let all_present = midx
                    .packs()
                    .iter()
                    .all(|p| listed.contains(&index_file_name(p)));
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
                    Err(StoreError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        vanished = true
                    }
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
        indexes.extend(
            outside
                .into_iter()
                .map(|idx| Arc::new(if many { idx.probed_only() } else { idx })),
        );
        *self.indexes.write().unwrap_or_else(|e| e.into_inner()) = indexes;
        *self.unreadable.write().unwrap_or_else(|e| e.into_inner()) = unreadable;
        Ok(!vanished)
    }

    pub(crate) fn indexes(&self) -> Vec<Arc<PackIndex>> {
        self.indexes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn add_index(&self, idx: PackIndex) {
        self.indexes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::new(idx));
    }

    /// Where the object is, among the packs as last listed (see [`Store::find`]).
    pub fn locate(&self, id: &ObjectId) -> StoreResult<Option<Located>> {
        self.probe_indexes(id, |idx| idx.lookup(id))
    }

    /// The first answer `probe` gives from an index that may hold `id`.
    fn probe_indexes<T>(
        &self,
        id: &ObjectId,
        probe: impl Fn(&PackIndex) -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<T>> {
        for idx in self
            .indexes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            if !idx.may_contain(id) {
                continue;
            }
            self.probes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(found) = probe(idx)? {
                return Ok(Some(found));
            }
        }
        if let Some(StoreError::CorruptFile { path, detail }) =
            &*self.unreadable.read().unwrap_or_else(|e| e.into_inner())
        {
            let detail = format!("{detail}; the objects it indexes cannot be found");
            return Err(StoreError::CorruptFile {
                path: path.clone(),
                detail,
            });
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
        let mtime = std::fs::metadata(&self.packs_dir)
            .and_then(|m| m.modified())
            .ok();
        let stale = match (listed, mtime) {
            (Some((when, then)), Some(now)) => {
                now != then
                    || when
                        .duration_since(now)
                        .is_ok_and(|gap| gap < 2 * crate::clock::timestamp_granularity())
                    || when < now
            }
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
        Ok(self
            .probe_indexes(id, |idx| Ok(idx.position(id)))?
            .is_some())
    }

    /// The object's kind, from its index entry alone.
    pub fn kind_of(&self, id: &ObjectId) -> StoreResult<ObjectKind> {
        Ok(self
            .find(id)?
            .ok_or(StoreError::NotFound { id: *id })?
            .entry
            .kind)
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
    /// gc after gc (a loop of `gc --prune now`) may move it again before it
    /// is opened: it is looked for anew each time, a few times.
    fn open_located(&self, loc: &Located) -> StoreResult<(Arc<File>, Located)> {
        let mut loc = *loc;
        let mut attempts = 0;
        loop {
            match self.pack_file(&loc.pack) {
                Err(StoreError::Io { source, path })
                    if source.kind() == std::io::ErrorKind::NotFound
                        && attempts < MOVED_ATTEMPTS =>
                {
                    attempts += 1;
                    self.reload()?;
                    match self.locate(&loc.entry.id)? {
                        Some(moved) if moved.pack != loc.pack => loc = moved,
                        // Still listed where it was: the gc is between its steps; look again shortly.
                        Some(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                        None => return Err(StoreError::Io { source, path }),
                    }
                }
                other => return Ok((other?, loc)),
            }
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
        obj.content().map_err(|detail| StoreError::DamagedObject {
            id: *id,
            pack: pack_file_name(&loc.pack),
            detail,
        })?;
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
        let window = |k: usize| {
            &records[(k * READ_AHEAD).min(records.len())..((k + 1) * READ_AHEAD).min(records.len())]
        };
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
        let mut spans: Vec<(ObjectId, u64, u64)> = records
            .iter()
            .map(|l| {
                (
                    l.pack,
                    l.entry.offset,
                    l.entry.offset + l.entry.record_len() as u64,
                )
            })
            .collect();
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
                    libc::posix_fadvise(
                        file.as_raw_fd(),
                        start as libc::off_t,
                        (end - start) as libc::off_t,
                        libc::POSIX_FADV_WILLNEED,
                    )
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
        Ok(StoredObject {
            id: e.id,
            kind: e.kind,
            compression: e.compression,
            raw_len: e.raw_len,
            payload,
        })
    }

    /// [`Store::read`], failing with [`StoreError::WrongKind`] unless the object is of `kind`.
    pub fn read_kind(&self, id: &ObjectId, kind: ObjectKind) -> StoreResult<Vec<u8>> {
        let (actual, bytes) = self.read(id)?;
        if actual != kind {
            return Err(StoreError::WrongKind {
                id: *id,
                actual: actual.name(),
                expected: kind.with_article(),
            });
        }
        Ok(bytes)
    }

    /// [`Store::read_kind`], then decoded as `T`.
    pub fn read_decoded<T: serde::de::DeserializeOwned>(
        &self,
        id: &ObjectId,
        kind: ObjectKind,
    ) -> StoreResult<T> {
        let bytes = self.read_kind(id, kind)?;
        decode(id, kind, &bytes)
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
        let first = u8::from_str_radix(&prefix[..2], 16)
            .map_err(|_| StoreError::BadPrefix(prefix.to_string()))?;
        let mut found: Option<ObjectId> = None;
        for idx in self.indexes() {
            for i in idx.bucket(first) {
                if hex::encode(idx.id_at(i)).starts_with(&prefix) {
                    let id = ObjectId::from_slice(idx.id_at(i)).ok_or_else(|| {
                        StoreError::Internal("an index entry is not an object id".into())
                    })?;
                    if found.is_some_and(|f| f != id) {
                        return Err(StoreError::Ambiguous { prefix });
                    }
                    found = Some(id);
                }
            }
        }
        Ok(found)
    }

    /// Counts packs, objects and bytes, reading every index.
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
}

pub(crate) fn sync_dir(dir: &Path) -> StoreResult<()> {
    dmv_os::sync_dir(dir).at(dir)
}
