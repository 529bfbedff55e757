//! Pack indexes. A per-pack `.idx` and the `multi-pack-index` share one format:
//! `header | pack table | fanout[256] | sorted ids | entries | filter | checksum`,
//! memory-mapped and searched in place (never loaded whole into the heap).
//! Version 1 has no filter; per-pack indexes stay version 1 (other replicas
//! and buckets exchange them), the multi-pack index is version 2, whose
//! filter answers most lookups of absent ids without a probe (filter.rs).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::IoContext;
use crate::filter;
use crate::pack::Entry;
use crate::temp::TempFile;
use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

const MAGIC: &[u8; 8] = b"DMVIDX\0\0";
const VERSION: u32 = 1;
const FILTERED_VERSION: u32 = 2;
const HEADER_LEN: usize = 24;
const FANOUT_LEN: usize = 256 * 4;
const ENTRY_LEN: usize = 24;

/// An index entry: which pack (by position in the pack table) and where.
#[derive(Clone, Copy, Debug)]
pub struct Located {
    /// The pack's checksum (its name).
    pub pack: ObjectId,
    /// The object's record in that pack.
    pub entry: Entry,
}

/// Where an index's filter lives, if it has one.
enum Filter {
    None,
    /// The filter section of a version 2 file: `len` bytes at `at`.
    Mapped {
        at: usize,
        len: usize,
    },
    /// A version 1 file's, built in memory from its ids once it has been
    /// probed more than [`LAZY_FILTER_AFTER`] allows (the store gives one
    /// only while the packs outside the multi-pack index are few or were
    /// written by this process); until then every probe looks.
    Lazy {
        bits: std::sync::OnceLock<Vec<u8>>,
        probes: std::sync::atomic::AtomicUsize,
    },
}

/// A lazy filter is built once an index has been probed more than its
/// count over this: building costs ~7 ns an id, a probe ~0.5 us. Built at
/// the first probe, it made every request to a server whose pushed packs
/// hold 165,000 objects insert them all (1.1 ms, half its CPU in a
/// one-file `get`), for the two or three lookups the request made.
const LAZY_FILTER_AFTER: usize = 64;

pub struct PackIndex {
    path: PathBuf,
    map: Option<Mmap>,
    packs: Vec<ObjectId>,
    count: usize,
    ids_at: usize,
    entries_at: usize,
    filter: Filter,
    /// Probes that found nothing, for [`PackIndex::position`]'s releases.
    misses: std::sync::atomic::AtomicUsize,
}

/// An entry of a (version 1) index: the number of its pack and where the
/// object lives in it. A pack's own index takes its writer's entries as they
/// are (pack 0): a copy of them paired with numbers would double the memory
/// of sealing a pack.
pub trait IndexEntry: Copy {
    fn placed(&self) -> (u32, Entry);
}

impl IndexEntry for Entry {
    fn placed(&self) -> (u32, Entry) {
        (0, *self)
    }
}

impl IndexEntry for (u32, Entry) {
    fn placed(&self) -> (u32, Entry) {
        *self
    }
}

/// Writes a (version 1) index for `entries` spread over `packs`.
pub fn write_index<E: IndexEntry>(
    path: &Path,
    packs: &[ObjectId],
    entries: Vec<E>,
) -> StoreResult<()> {
    write_index_with(path, packs, entries, true)
}

/// [`write_index`], without the fsync when `durable` is false (scratch stores).
pub fn write_index_with<E: IndexEntry>(
    path: &Path,
    packs: &[ObjectId],
    mut entries: Vec<E>,
    durable: bool,
) -> StoreResult<()> {
    entries.sort_unstable_by_key(|a| a.placed().1.id);
    entries.dedup_by(|a, b| a.placed().1.id == b.placed().1.id);
    let fanout = fanout_of(entries.iter().map(|e| e.placed().1.id.0[0]));
    let parts = Parts {
        packs,
        count: entries.len(),
        fanout,
        filtered: false,
        durable,
    };
    write_parts(
        path,
        &parts,
        entries.iter().map(|e| Ok(e.placed().1.id)),
        entries.iter().map(|e| Ok(e.placed())),
    )
}

/// Writes the multi-pack index (version 2, with its filter) over `indexes`,
/// merging their sorted ids in three streaming passes: memory holds the
/// filter and one cursor per index, never every entry. Where two indexes
/// hold one id, the first of `indexes` wins. Packs are numbered in the order
/// of `indexes`.
pub fn write_merged_index(path: &Path, indexes: &[PackIndex]) -> StoreResult<()> {
    // Packs numbered in checksum order: the same packs give the same bytes,
    // whichever indexes they were merged from.
    let mut packs: Vec<ObjectId> = indexes
        .iter()
        .flat_map(|idx| idx.packs().iter().copied())
        .collect();
    packs.sort_unstable();
    packs.dedup();
    let pack_no: HashMap<ObjectId, u32> = packs
        .iter()
        .enumerate()
        .map(|(n, p)| (*p, n as u32))
        .collect();
    let mut count = 0;
    let mut per_byte = [0u32; 256];
    for step in Merge::new(indexes) {
        let (i, at) = step?;
        per_byte[indexes[i].id_at(at)[0] as usize] += 1;
        count += 1;
    }
    let parts = Parts {
        packs: &packs,
        count,
        fanout: cumulative(per_byte),
        filtered: true,
        durable: true,
    };
    let ids = Merge::new(indexes).map(|step| {
        step.and_then(|(i, at)| {
            ObjectId::from_slice(indexes[i].id_at(at)).ok_or_else(|| indexes[i].corrupt("bad id"))
        })
    });
    let entries = Merge::new(indexes).map(|step| {
        let (i, at) = step?;
        let loc = indexes[i].located_at(at)?;
        Ok((pack_no[&loc.pack], loc.entry))
    });
    write_parts(path, &parts, ids, entries)
}

/// An index lets go of the pages its probes read after this many probes found nothing.
const RELEASE_AFTER_MISSES: usize = 256;

/// A merge lets go of each index's pages this many ids at a time (ids of
/// 128 KiB, entries of 96 KiB: more than a fault maps around it).
const RELEASE_EVERY: usize = 4096;

/// Positions `(index, position)` of every id of `indexes` in id order, each id once.
struct Merge<'a> {
    indexes: &'a [PackIndex],
    heap: BinaryHeap<Reverse<([u8; 32], usize, usize)>>,
    last: Option<[u8; 32]>,
}

impl<'a> Merge<'a> {
    fn new(indexes: &'a [PackIndex]) -> Merge<'a> {
        let mut merge = Merge {
            indexes,
            heap: BinaryHeap::with_capacity(indexes.len()),
            last: None,
        };
        for i in 0..indexes.len() {
            merge.push(i, 0);
        }
        merge
    }

    fn push(&mut self, i: usize, at: usize) {
        // A step behind: a fault maps the pages around it that are cached
        // (64 KiB), so pages let go of just behind the read come back.
        if at.is_multiple_of(RELEASE_EVERY) && at >= 2 * RELEASE_EVERY {
            self.indexes[i].release(at - 2 * RELEASE_EVERY..at - RELEASE_EVERY);
        }
        if at < self.indexes[i].len() {
            let id: [u8; 32] = self.indexes[i].id_at(at).try_into().unwrap_or_default();
            self.heap.push(Reverse((id, i, at)));
        }
    }
}

impl Iterator for Merge<'_> {
    type Item = StoreResult<(usize, usize)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Reverse((id, i, at)) = self.heap.pop()?;
            self.push(i, at + 1);
            // A merge of indexes whose ids are not in order would make an index that misses objects.
            if at + 1 < self.indexes[i].len() && self.indexes[i].id_at(at + 1) <= &id[..] {
                return Some(Err(self.indexes[i].corrupt("ids out of order")));
            }
            if self.last == Some(id) {
                continue;
            }
            self.last = Some(id);
            return Some(Ok((i, at)));
        }
    }
}

fn fanout_of(first_bytes: impl Iterator<Item = u8>) -> [u32; 256] {
    let mut per_byte = [0u32; 256];
    for b in first_bytes {
        per_byte[b as usize] += 1;
    }
    cumulative(per_byte)
}

/// Entry b of a fanout counts the ids whose first byte is at most b.
fn cumulative(mut per_byte: [u32; 256]) -> [u32; 256] {
    let mut running = 0u32;
    for f in per_byte.iter_mut() {
        running += *f;
        *f = running;
    }
    per_byte
}

/// What an index file's header and layout follow from.
struct Parts<'a> {
    packs: &'a [ObjectId],
    count: usize,
    fanout: [u32; 256],
    filtered: bool,
    durable: bool,
}

/// Streams an index out: `ids` and `entries` must both give `parts.count`
/// items in id order.
fn write_parts(
    path: &Path,
    parts: &Parts<'_>,
    ids: impl Iterator<Item = StoreResult<ObjectId>>,
    entries: impl Iterator<Item = StoreResult<(u32, Entry)>>,
) -> StoreResult<()> {
    // Unique per writer, not per process: a server writes indexes from many threads at once.
    let guard = TempFile::new(path.with_extension(format!(
        "tmp-{}-{:016x}",
        std::process::id(),
        crate::pack::rand_u64()
    )));
    let tmp = guard.path();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .at(tmp)?;
    let mut out = HashingWriter {
        inner: std::io::BufWriter::with_capacity(1 << 20, file),
        hasher: blake3::Hasher::new(),
    };
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(
        &(if parts.filtered {
            FILTERED_VERSION
        } else {
            VERSION
        })
        .to_le_bytes(),
    );
    header.extend_from_slice(&(parts.packs.len() as u32).to_le_bytes());
    header.extend_from_slice(&(parts.count as u64).to_le_bytes());
    out.write_all(&header).at(tmp)?;
    for p in parts.packs {
        out.write_all(&p.0).at(tmp)?;
    }
    for f in parts.fanout {
        out.write_all(&f.to_le_bytes()).at(tmp)?;
    }
    let mut bloom = vec![
        0u8;
        if parts.filtered {
            filter::filter_len(parts.count)
        } else {
            0
        }
    ];
    let mut written = 0;
    for id in ids {
        let id = id?;
        if !bloom.is_empty() {
            filter::insert(&mut bloom, &id.0);
        }
        out.write_all(&id.0).at(tmp)?;
        written += 1;
    }
    for entry in entries {
        let (pack, e) = entry?;
        let mut b = [0u8; ENTRY_LEN];
        b[0..4].copy_from_slice(&pack.to_le_bytes());
        b[4] = e.kind as u8;
        b[5] = e.compression;
        b[8..16].copy_from_slice(&e.offset.to_le_bytes());
        b[16..20].copy_from_slice(&e.raw_len.to_le_bytes());
        b[20..24].copy_from_slice(&e.stored_len.to_le_bytes());
        out.write_all(&b).at(tmp)?;
    }
    // The sizes were counted in an earlier pass over the same indexes: they cannot differ unless one changed under it.
    if written != parts.count {
        return Err(StoreError::CorruptFile {
            path: path.to_path_buf(),
            detail: "its sources changed while it was written".into(),
        });
    }
    out.write_all(&bloom).at(tmp)?;
    let sum = *out.hasher.finalize().as_bytes();
    out.inner.write_all(&sum).at(tmp)?;
    let file = out
        .inner
        .into_inner()
        .map_err(|e| StoreError::io(tmp, e.into_error()))?;
    crate::failpoint("index-before-sync");
    if parts.durable {
        file.sync_all().at(tmp)?;
    }
    drop(file);
    crate::failpoint("index-before-rename");
    dmv_os::replace_file(tmp, path).at(path)?;
    guard.kept();
    Ok(())
}

/// Checks a per-pack index that came from elsewhere (an object store) before
/// it is trusted: readable, checksum right, ids in order, and it describes
/// exactly the pack `pack`.
pub fn verify_pack_index(path: &Path, pack: &ObjectId) -> StoreResult<()> {
    if pack_of_index(path)? != *pack {
        return Err(StoreError::CorruptFile {
            path: path.to_path_buf(),
            detail: format!("does not index pack {pack}"),
        });
    }
    Ok(())
}

/// Checks a single pack's index file (its checksum) and says which pack it
/// indexes: for an index whose name does not say (an encrypted remote's).
pub fn pack_of_index(path: &Path) -> StoreResult<ObjectId> {
    let idx = PackIndex::open(path)?;
    idx.verify()?;
    match idx.packs() {
        [pack] => Ok(*pack),
        _ => Err(StoreError::CorruptFile {
            path: path.to_path_buf(),
            detail: "does not index exactly one pack".into(),
        }),
    }
}

/// Hashes what passes through it (BLAKE3): a checksum computed while a file streams out.
pub struct HashingWriter<W: Write> {
    /// Where the bytes go.
    pub inner: W,
    /// Every byte `inner` accepted so far.
    pub hasher: blake3::Hasher,
}

impl<W: Write> HashingWriter<W> {
    /// Starts hashing in front of `inner`.
    pub fn new(inner: W) -> HashingWriter<W> {
        HashingWriter {
            inner,
            hasher: blake3::Hasher::new(),
        }
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl PackIndex {
    pub fn open(path: &Path) -> StoreResult<PackIndex> {
        let corrupt = |detail: &str| StoreError::CorruptFile {
            path: path.to_path_buf(),
            detail: detail.to_string(),
        };
        let file = File::open(path).at(path)?;
        let len = file.metadata().at(path)?.len() as usize;
        if len < HEADER_LEN + FANOUT_LEN + 32 {
            return Err(corrupt("too short to be an index"));
        }
        // SAFETY: index files are immutable once renamed into place; a concurrent gc
        // deletes (unlinks) but never truncates them, so the mapping stays valid.
        let map = unsafe { Mmap::map(&file) }.at(path)?;
        if &map[..8] != MAGIC {
            return Err(corrupt("not a DMV index"));
        }
        let filtered = match u32::from_le_bytes(map[8..12].try_into().unwrap_or_default()) {
            VERSION => false,
            FILTERED_VERSION => true,
            _ => return Err(corrupt("unsupported index version")),
        };
        let pack_count = u32::from_le_bytes(map[12..16].try_into().unwrap_or_default()) as usize;
        let count = u64::from_le_bytes(map[16..24].try_into().unwrap_or_default());
        let expected = (HEADER_LEN as u64)
            .checked_add(
                (pack_count as u64)
                    .checked_mul(32)
                    .ok_or_else(|| corrupt("bad pack count"))?,
            )
            .and_then(|v| v.checked_add(FANOUT_LEN as u64))
            .and_then(|v| {
                count
                    .checked_mul(32 + ENTRY_LEN as u64)
                    .and_then(|c| v.checked_add(c))
            })
            .and_then(|v| {
                v.checked_add(if filtered {
                    filter::filter_len(usize::try_from(count).ok()?) as u64
                } else {
                    0
                })
            })
            .and_then(|v| v.checked_add(32));
        // The counts must fit the file exactly before they size anything.
        if expected != Some(len as u64) {
            return Err(corrupt("size does not match its header"));
        }
        let count = count as usize;
        let mut packs = Vec::with_capacity(pack_count);
        for i in 0..pack_count {
            let at = HEADER_LEN + i * 32;
            packs.push(
                ObjectId::from_slice(&map[at..at + 32]).ok_or_else(|| corrupt("bad pack table"))?,
            );
        }
        let fanout_at = HEADER_LEN + pack_count * 32;
        let ids_at = fanout_at + FANOUT_LEN;
        let entries_at = ids_at + count * 32;
        let filter = match filtered {
            true => Filter::Mapped {
                at: entries_at + count * ENTRY_LEN,
                len: filter::filter_len(count),
            },
            false => Filter::Lazy {
                bits: std::sync::OnceLock::new(),
                probes: Default::default(),
            },
        };
        let idx = PackIndex {
            path: path.to_path_buf(),
            map: Some(map),
            packs,
            count,
            ids_at,
            entries_at,
            filter,
            misses: Default::default(),
        };
        if idx.fanout(255) as usize != count {
            return Err(corrupt("fanout does not match object count"));
        }
        Ok(idx)
    }

    fn map(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Lets go of the pages holding the ids and entries at `positions`
    /// once they are read through: the pages of a mapped file stay in the
    /// process's resident set until it ends, and a multi-pack index rebuild
    /// reads its sources whole. A page let go of costs a minor fault if it
    /// is read again.
    fn release(&self, positions: std::ops::Range<usize>) {
        let Some(map) = &self.map else { return };
        let positions = positions.start.min(self.count)..positions.end.min(self.count);
        for (at, width) in [(self.ids_at, 32), (self.entries_at, ENTRY_LEN)] {
            // SAFETY: index files never change once in place (see `open`), so
            // a page let go of reads back the same bytes from the file when
            // touched again; nothing is written through this mapping.
            #[cfg(unix)]
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    at + positions.start * width,
                    positions.len() * width,
                )
            };
            // Windows has no such advice: the pages stay until the mapping goes.
            #[cfg(not(unix))]
            let _ = (map, at, width, &positions);
        }
    }

    fn corrupt(&self, detail: &str) -> StoreError {
        StoreError::CorruptFile {
            path: self.path.clone(),
            detail: detail.to_string(),
        }
    }

    /// Tells the kernel that the mapping is read at random: a page fault
    /// then maps the page a probe reads, not the fifteen around it as well.
    /// The few probes that get past the filter land anywhere in the ids of
    /// a multi-pack index; a commit of a million new files into a store of
    /// five million objects mapped 300 MB of them that no probe read.
    pub fn read_at_random(self) -> PackIndex {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            let _ = map.advise(memmap2::Advice::Random);
        }
        self
    }

    /// Drops the filter a version 1 file would build in memory: an old
    /// multi-pack index is large, one probe costs less than reading all its ids.
    pub fn probed_only(mut self) -> PackIndex {
        if matches!(self.filter, Filter::Lazy { .. }) {
            self.filter = Filter::None;
        }
        self
    }

    fn ids(&self) -> impl Iterator<Item = &[u8; 32]> {
        (0..self.count).map(|i| self.id_at(i).try_into().unwrap_or(&[0u8; 32]))
    }

    /// False only if the index cannot hold `id`; true without a filter.
    pub fn may_contain(&self, id: &ObjectId) -> bool {
        match &self.filter {
            Filter::None => true,
            Filter::Mapped { at, len } => filter::may_contain(&self.map()[*at..*at + *len], &id.0),
            Filter::Lazy { bits, probes } => {
                if bits.get().is_none()
                    && probes.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        < self.count / LAZY_FILTER_AFTER
                {
                    return true;
                }
                filter::may_contain(
                    bits.get_or_init(|| {
                        let built = filter::build(self.count, self.ids());
                        self.release(0..self.count);
                        built
                    }),
                    &id.0,
                )
            }
        }
    }

    fn fanout(&self, byte: usize) -> u32 {
        let at = self.ids_at - FANOUT_LEN + byte * 4;
        u32::from_le_bytes(self.map()[at..at + 4].try_into().unwrap_or_default())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn packs(&self) -> &[ObjectId] {
        &self.packs
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn id_at(&self, i: usize) -> &[u8] {
        let at = self.ids_at + i * 32;
        &self.map()[at..at + 32]
    }

    /// Positions of the ids whose first byte is `b`.
    pub fn bucket(&self, b: u8) -> std::ops::Range<usize> {
        let b = b as usize;
        let lo = if b == 0 {
            0
        } else {
            self.fanout(b - 1) as usize
        };
        lo.min(self.count)..(self.fanout(b) as usize).min(self.count)
    }

    /// Binary search within the fanout bucket of the id's first byte.
    pub fn position(&self, id: &ObjectId) -> Option<usize> {
        let std::ops::Range {
            start: mut lo,
            end: mut hi,
        } = self.bucket(id.0[0]);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.id_at(mid).cmp(&id.0[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        // The ids that get past the filter to a probe land anywhere in the
        // index, and each page a probe read stays in the resident set: a
        // commit of a million new files into a store of five million
        // objects kept 300 MB of them. Misses are rare (the filter lets
        // half a percent of absent ids through), so letting go of every
        // page now and then costs a few faults; present ids, which a
        // checkout looks up by the million, keep their pages.
        if self
            .misses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % RELEASE_AFTER_MISSES
            == RELEASE_AFTER_MISSES - 1
        {
            self.release(0..self.count);
        }
        None
    }

    pub fn located_at(&self, i: usize) -> StoreResult<Located> {
        let corrupt = |detail: &str| self.corrupt(detail);
        let at = self.entries_at + i * ENTRY_LEN;
        let b = &self.map()[at..at + ENTRY_LEN];
        let pack_no = u32::from_le_bytes(b[0..4].try_into().unwrap_or_default()) as usize;
        let pack = *self
            .packs
            .get(pack_no)
            .ok_or_else(|| corrupt("entry names a pack outside the pack table"))?;
        let kind =
            ObjectKind::from_u8(b[4]).ok_or_else(|| corrupt("entry has an unknown object kind"))?;
        let id = ObjectId::from_slice(self.id_at(i)).ok_or_else(|| corrupt("bad id"))?;
        let entry = Entry {
            id,
            kind,
            compression: b[5],
            offset: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
            raw_len: u32::from_le_bytes(b[16..20].try_into().unwrap_or_default()),
            stored_len: u32::from_le_bytes(b[20..24].try_into().unwrap_or_default()),
        };
        // Lengths size the buffers a read allocates: never trust them past the largest object.
        entry
            .check_lengths()
            .map_err(|d| corrupt(&format!("entry for {id}: {d}")))?;
        Ok(Located { pack, entry })
    }

    pub fn lookup(&self, id: &ObjectId) -> StoreResult<Option<Located>> {
        match self.position(id) {
            Some(i) => self.located_at(i).map(Some),
            None => Ok(None),
        }
    }

    /// Re-hashes the file against its trailing checksum and checks id order.
    pub fn verify(&self) -> StoreResult<()> {
        let map = self.map();
        let body = &map[..map.len() - 32];
        if blake3::hash(body).as_bytes()[..] != map[map.len() - 32..] {
            return Err(StoreError::CorruptFile {
                path: self.path.clone(),
                detail: "checksum mismatch".into(),
            });
        }
        for i in 1..self.count {
            if self.id_at(i - 1) >= self.id_at(i) {
                return Err(StoreError::CorruptFile {
                    path: self.path.clone(),
                    detail: "ids out of order".into(),
                });
            }
        }
        // Every entry readable: pack number, kind and lengths in range.
        for i in 0..self.count {
            self.located_at(i)?;
        }
        if let Filter::Mapped { at, len } = self.filter {
            if filter::build(self.count, self.ids()) != self.map()[at..at + len] {
                return Err(self.corrupt("filter does not match its ids"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(n: u8) -> Entry {
        Entry {
            id: ObjectId::hash(ObjectKind::Chunk, &[n]),
            kind: ObjectKind::Chunk,
            compression: 0,
            offset: 16 + n as u64,
            raw_len: 1,
            stored_len: 1,
        }
    }

    #[test]
    fn lookup_finds_every_entry_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.idx");
        let packs = [ObjectId([1; 32]), ObjectId([2; 32])];
        let entries: Vec<(u32, Entry)> = (0..200u8).map(|n| ((n % 2) as u32, entry(n))).collect();
        write_index(&path, &packs, entries.clone()).unwrap();
        let idx = PackIndex::open(&path).unwrap();
        idx.verify().unwrap();
        assert_eq!(idx.len(), 200);
        for (p, e) in entries {
            let got = idx.lookup(&e.id).unwrap().unwrap();
            assert_eq!(got.entry, e);
            assert_eq!(got.pack, packs[p as usize]);
        }
        assert!(idx
            .lookup(&ObjectId::hash(ObjectKind::Tree, &[0]))
            .unwrap()
            .is_none());
    }

    /// Resident bytes of this process's mapping that starts at `start` (smaps' Rss).
    #[cfg(target_os = "linux")]
    fn resident(start: *const u8) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{:x}-", start as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        let rss = lines
            .find(|l| l.starts_with("Rss:"))
            .expect("the mapping is listed");
        rss.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<usize>()
            .unwrap()
            * 1024
    }

    /// A version 1 index is only probed while it has been asked little:
    /// its filter is built once it has been asked more than its count over
    /// `LAZY_FILTER_AFTER` times, and from then on answers absent ids.
    #[test]
    fn a_lazy_filter_is_built_only_for_an_index_asked_often() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.idx");
        let count = 64 * LAZY_FILTER_AFTER;
        let entries = (0..count as u32)
            .map(|n| {
                let id = ObjectId::hash(ObjectKind::Chunk, &n.to_le_bytes());
                (0, Entry { id, ..entry(0) })
            })
            .collect();
        write_index(&path, &[ObjectId([1; 32])], entries).unwrap();
        let idx = PackIndex::open(&path).unwrap();
        let built = |idx: &PackIndex| match &idx.filter {
            Filter::Lazy { bits, .. } => bits.get().is_some(),
            _ => panic!("a version 1 index has a lazy filter"),
        };
        let absent = |n: u32| ObjectId::hash(ObjectKind::Tree, &n.to_le_bytes());
        for n in 0..64 {
            assert!(idx.may_contain(&absent(n)), "probed, not filtered");
        }
        assert!(!built(&idx));
        let passed = (64..1064).filter(|n| idx.may_contain(&absent(*n))).count();
        assert!(built(&idx));
        assert!(passed < 20, "{passed} of 1000 absent ids passed the filter");
        let present = ObjectId::hash(ObjectKind::Chunk, &7u32.to_le_bytes());
        assert!(idx.may_contain(&present));
    }

    /// A merge reads its sources whole and lets go of their pages behind
    /// it, and probes that miss let go of theirs: neither keeps a large
    /// index resident (a commit into a store of millions of objects kept
    /// hundreds of megabytes of them).
    #[cfg(target_os = "linux")]
    #[test]
    fn reading_a_large_index_keeps_few_of_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (a, m) = (dir.path().join("a.idx"), dir.path().join("m.idx"));
        let count = 200_000u32;
        let entries = (0..count)
            .map(|n| {
                (
                    0,
                    Entry {
                        id: ObjectId::hash(ObjectKind::Chunk, &n.to_le_bytes()),
                        ..entry(0)
                    },
                )
            })
            .collect();
        write_index(&a, &[ObjectId([1; 32])], entries).unwrap();
        let source = PackIndex::open(&a).unwrap();
        let size = source.map().len();
        write_merged_index(&m, std::slice::from_ref(&source)).unwrap();
        let kept = resident(source.map().as_ptr());
        assert!(
            kept < size / 8,
            "{kept} of {size} bytes of the merged index's source resident"
        );

        let merged = PackIndex::open(&m).unwrap().read_at_random();
        for n in 0..4 * RELEASE_AFTER_MISSES as u32 {
            assert!(merged
                .position(&ObjectId::hash(ObjectKind::Tree, &n.to_le_bytes()))
                .is_none());
        }
        let kept = resident(merged.map().as_ptr());
        assert!(
            kept < merged.map().len() / 8,
            "{kept} of {} bytes resident after probes that missed",
            merged.map().len()
        );
    }

    #[test]
    fn a_merged_index_holds_each_id_once_from_the_first_index_and_refuses_disorder() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, m) = (
            dir.path().join("a.idx"),
            dir.path().join("b.idx"),
            dir.path().join("m.idx"),
        );
        write_index(
            &a,
            &[ObjectId([1; 32])],
            (0..100u8).map(|n| (0, entry(n))).collect(),
        )
        .unwrap();
        write_index(
            &b,
            &[ObjectId([2; 32])],
            (50..200u8).map(|n| (0, entry(n))).collect(),
        )
        .unwrap();
        write_merged_index(
            &m,
            &[PackIndex::open(&a).unwrap(), PackIndex::open(&b).unwrap()],
        )
        .unwrap();
        let merged = PackIndex::open(&m).unwrap();
        merged.verify().unwrap();
        assert_eq!(merged.len(), 200);
        for n in 0..200u8 {
            let id = entry(n).id;
            assert!(merged.may_contain(&id));
            let want = if n < 100 {
                ObjectId([1; 32])
            } else {
                ObjectId([2; 32])
            };
            assert_eq!(
                merged.lookup(&id).unwrap().unwrap().pack,
                want,
                "object {n}"
            );
        }
        // Two ids swapped in a per-pack index (its checksum aside): the merge stops.
        let mut bytes = std::fs::read(&b).unwrap();
        let ids_at = HEADER_LEN + 32 + FANOUT_LEN;
        let (first, second) = (
            bytes[ids_at..ids_at + 32].to_vec(),
            bytes[ids_at + 32..ids_at + 64].to_vec(),
        );
        bytes[ids_at..ids_at + 32].copy_from_slice(&second);
        bytes[ids_at + 32..ids_at + 64].copy_from_slice(&first);
        std::fs::write(&b, &bytes).unwrap();
        let err = write_merged_index(
            &m,
            &[PackIndex::open(&a).unwrap(), PackIndex::open(&b).unwrap()],
        )
        .unwrap_err();
        assert!(err.to_string().contains("ids out of order"), "{err}");
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..4096),
            pack_count in 0usize..4,
            count in 0usize..40,
            monotonic in any::<bool>(),
            seed in any::<u64>(),
            probes in proptest::collection::vec(any::<[u8; 32]>(), 1..16),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("y.idx");
            // Random bytes alone never get past MAGIC: also build a header
            // whose counts fit the length, so every reader sees garbage.
            std::fs::write(&path, &bytes).unwrap();
            if let Ok(idx) = PackIndex::open(&path) {
                let _ = idx.verify();
                for i in 0..idx.len() { let _ = idx.located_at(i); }
            }
            let mut x = seed | 1;
            let mut rnd = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let mut b = Vec::new();
            b.extend_from_slice(MAGIC);
            b.extend_from_slice(&VERSION.to_le_bytes());
            b.extend_from_slice(&(pack_count as u32).to_le_bytes());
            b.extend_from_slice(&(count as u64).to_le_bytes());
            for _ in 0..pack_count * 32 { b.push(rnd() as u8); }
            // Either sorted ids with their true fanout (so lookups find them
            // and reach the entries), or random ids under a wild fanout (past
            // count, going down), always ending at count as open() demands.
            let mut ids: Vec<[u8; 32]> = (0..count).map(|_| { let mut id = [0u8; 32]; for byte in id.iter_mut() { *byte = rnd() as u8; } id }).collect();
            if monotonic {
                ids.sort_unstable();
                ids.dedup();
                while ids.len() < count { let mut id = ids[0]; id[31] = id[31].wrapping_add(ids.len() as u8); ids.push(id); ids.sort_unstable(); ids.dedup(); }
            }
            for byte in 0..256usize {
                let v = if byte == 255 {
                    count as u32
                } else if monotonic {
                    ids.iter().filter(|id| id[0] as usize <= byte).count() as u32
                } else {
                    (rnd() % (count as u64 * 2 + 2)) as u32
                };
                b.extend_from_slice(&v.to_le_bytes());
            }
            for id in &ids { b.extend_from_slice(id); }
            for _ in 0..count {
                let mut e = [0u8; ENTRY_LEN];
                for byte in e.iter_mut() { *byte = rnd() as u8; }
                // Often a pack number and kind in range, to get past those checks.
                if rnd() % 2 == 0 { e[0..4].copy_from_slice(&((rnd() % (pack_count as u64 + 1)) as u32).to_le_bytes()); }
                if rnd() % 2 == 0 { e[4] = (rnd() % 8) as u8; }
                if rnd() % 2 == 0 { e[16..20].copy_from_slice(&((rnd() % 5000) as u32).to_le_bytes()); }
                if rnd() % 2 == 0 { e[20..24].copy_from_slice(&((rnd() % 5000) as u32).to_le_bytes()); }
                b.extend_from_slice(&e);
            }
            for _ in 0..32 { b.push(rnd() as u8); }
            std::fs::write(&path, &b).unwrap();
            let idx = PackIndex::open(&path);
            prop_assert!(idx.is_ok(), "a header consistent with the length must open: {:?}", idx.err());
            let idx = idx.unwrap();
            prop_assert_eq!(idx.len(), count);
            prop_assert_eq!(idx.packs().len(), pack_count);
            prop_assert!(idx.verify().is_err(), "a random checksum cannot match");
            for i in 0..idx.len() {
                if let Ok(loc) = idx.located_at(i) {
                    prop_assert_eq!(&loc.entry.id.0[..], idx.id_at(i));
                    prop_assert!(idx.packs().contains(&loc.pack));
                }
            }
            for b in 0..=255u8 {
                let r = idx.bucket(b);
                prop_assert!(r.end <= count);
            }
            for p in &probes {
                let _ = idx.lookup(&ObjectId(*p));
            }
            for i in 0..idx.len() {
                let id = ObjectId::from_slice(idx.id_at(i)).unwrap();
                match idx.lookup(&id) {
                    Ok(Some(loc)) => prop_assert_eq!(loc.entry.id, id),
                    // Sorted ids under their true fanout are always found.
                    Ok(None) => prop_assert!(!monotonic, "id {} at {} not found", id, i),
                    // A bad entry (pack, kind or lengths): an error, not a panic.
                    Err(_) => {}
                }
            }
        }

        #[test]
        fn flipped_byte_is_caught_by_verify_or_open(pos in 0usize..10_000, bit in 0u8..8) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("z.idx");
            write_index(&path, &[ObjectId([9; 32])], (0..50u8).map(|n| (0, entry(n))).collect()).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            let pos = pos % bytes.len();
            bytes[pos] ^= 1 << bit;
            std::fs::write(&path, &bytes).unwrap();
            let ok = PackIndex::open(&path).and_then(|i| i.verify()).is_ok();
            prop_assert!(!ok);
        }
    }
}
