//! `.dmv/dirstate`: the staged tree (path → kind, id, size) plus the stat data
//! seen when each file was last read, so unchanged files are never re-read.
//! Layout: magic, version, (version 2: a tree's id,) postcard-encoded
//! entries, BLAKE3 checksum.
//!
//! A version 2 file is a dirstate *over a tree*: every file of the tree is
//! an absent entry unless the file says otherwise (an entry of its own, or a
//! tombstone: not staged). A meta clone of 100,000 files is then a few bytes
//! instead of 5.4 MB of entries repeating the tree it already holds.

use std::fs::Metadata;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dmv_store::object::{EntryKind, TreeNode};
use dmv_store::{ObjectId, WriteSession};
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::history::tree::{tree_reader, FilesInOrder, FlatEntry, FlatTree};
use crate::pathmap::PathMap;
pub use crate::stat::{kind_of, kind_on_disk, mtime_ns, Stat};
use crate::{RepoError, RepoResult};

const MAGIC: &[u8; 8] = b"DMVDIRS\0";
const VERSION: u32 = 1;
const VERSION_OVER_TREE: u32 = 2;

/// One staged path: what it stages and the stat data of the file when it
/// was last read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    /// File, executable or symlink.
    pub kind: EntryKind,
    /// The staged content (a chunk or file node; a symlink's target chunk).
    pub id: ObjectId,
    /// Content length in bytes.
    pub size: u64,
    /// The file's mtime when read, in nanoseconds since the epoch; -1 when no
    /// file can match (see [`DirEntry::stat_unknown`]), -2 with `ctime_ns` when the data is absent.
    pub mtime_ns: i64,
    /// The file's ctime when read, in nanoseconds since the epoch (-1 and -2 as for `mtime_ns`).
    pub ctime_ns: i64,
    /// The file's inode number when read (0 when unknown or absent).
    pub ino: u64,
    /// The file's `st_mode` when read (0 when unknown or absent).
    pub mode: u32,
}

/// The entries as the file holds them: a sequence of (path bytes, entry),
/// in path order. Saved from the map and loaded into it without a second
/// copy of every path (at a million files each copy is ~100 MB).
#[derive(Serialize)]
struct OnDisk<E> {
    entries: E,
}

/// `count` entries in path order, encoded as they come (taken once).
struct Saving<I> {
    entries: std::cell::RefCell<Option<I>>,
    count: usize,
}

impl<'p, I: Iterator<Item = (&'p [u8], DirEntry)>> Serialize for Saving<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let entries = self
            .entries
            .borrow_mut()
            .take()
            .ok_or_else(|| S::Error::custom("the entries were taken already"))?;
        let mut seq = s.serialize_seq(Some(self.count))?;
        let mut n = 0;
        for (path, e) in entries {
            seq.serialize_element(&(serde_bytes::Bytes::new(path), e))?;
            n += 1;
        }
        if n != self.count {
            return Err(S::Error::custom(format!(
                "{n} entries where {} were announced",
                self.count
            )));
        }
        seq.end()
    }
}

/// Reads a dirstate's bytes a window at a time, hashing all it reads, and
/// decodes its entries one by one from the window: at a million files the
/// file is ~70 MB, which would otherwise sit in memory beside the entries.
struct Window<R> {
    reader: std::io::Take<R>,
    hasher: blake3::Hasher,
    buf: Vec<u8>,
    /// Bytes read at most at once: [`WINDOW`], or the whole file when it
    /// is smaller (zeroing a megabyte for a dirstate of a hundred files was
    /// a quarter of the page faults of a small commit).
    size: usize,
    pos: usize,
    eof: bool,
}

const WINDOW: usize = 1 << 20;

/// Takes each entry a [`Window`] decodes, with its path.
type EntrySink<'a> = dyn FnMut(&[u8], DirEntry) -> Result<(), String> + 'a;

impl<R: Read> Window<R> {
    /// Reads only the first `len` bytes of `reader`.
    fn new(reader: R, len: u64) -> Window<R> {
        let size = usize::try_from(len).map_or(WINDOW, |len| len.clamp(1, WINDOW));
        Window {
            reader: reader.take(len),
            hasher: blake3::Hasher::new(),
            buf: Vec::with_capacity(size),
            size,
            pos: 0,
            eof: false,
        }
    }

    /// Keeps what is not decoded yet and reads more after it.
    fn refill(&mut self) -> std::io::Result<()> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        let old = self.buf.len();
        self.buf.resize(self.size, 0);
        let n = self.reader.read(&mut self.buf[old..])?;
        self.buf.truncate(old + n);
        self.hasher.update(&self.buf[old..]);
        // Also at the end of the `len` bytes: a window the size of the whole
        // file is full then, and another read could only return nothing.
        self.eof = n == 0 || self.reader.limit() == 0;
        Ok(())
    }

    fn next<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, String> {
        loop {
            match postcard::take_from_bytes::<T>(&self.buf[self.pos..]) {
                Ok((value, rest)) => {
                    self.pos = self.buf.len() - rest.len();
                    return Ok(value);
                }
                Err(postcard::Error::DeserializeUnexpectedEnd)
                    if !self.eof && (self.pos > 0 || self.buf.len() < self.size) =>
                {
                    self.refill().map_err(|e| e.to_string())?
                }
                Err(postcard::Error::DeserializeUnexpectedEnd) if !self.eof => {
                    return Err("an entry larger than a megabyte".into())
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The entries: a count, then (path, entry) in path order, then nothing.
    fn entries(&mut self) -> Result<PathMap<DirEntry>, String> {
        let (announced, plausible) = self.count()?;
        let mut entries = PathMap::default();
        entries.reserve(plausible, 0);
        self.each_entry(
            announced,
            &mut |path, e| match entries.push_sorted(path, e) {
                true => Ok(()),
                false => Err("entries out of order".into()),
            },
        )?;
        Ok(entries)
    }

    /// The count of entries, and as many as the file's length can hold: the
    /// count comes from the file, read before its checksum, so only the
    /// second may size anything (an entry takes at least 39 bytes: a path's
    /// length, a kind, an id and five numbers).
    fn count(&mut self) -> Result<(u64, usize), String> {
        let announced: u64 = self.next()?;
        let bytes_left = self.reader.limit() + (self.buf.len() - self.pos) as u64;
        Ok((announced, announced.min(bytes_left / 39 + 1) as usize))
    }

    /// Hands over each of `announced` entries as it is decoded; checks that nothing follows.
    fn each_entry(&mut self, announced: u64, each: &mut EntrySink<'_>) -> Result<(), String> {
        for _ in 0..announced {
            loop {
                match decode_entry(&self.buf[self.pos..])? {
                    Some((path, e, used)) => {
                        each(path, e)?;
                        self.pos += used;
                        break;
                    }
                    None if !self.eof && (self.pos > 0 || self.buf.len() < self.size) => {
                        self.refill().map_err(|e| e.to_string())?
                    }
                    None if !self.eof => return Err("an entry larger than a megabyte".into()),
                    None => return Err(postcard::Error::DeserializeUnexpectedEnd.to_string()),
                }
            }
        }
        if self.pos < self.buf.len() || self.drain().map_err(|e| e.to_string())? > 0 {
            return Err("bytes after the last entry".into());
        }
        Ok(())
    }

    /// Reads (and hashes) the rest; returns how many bytes that was.
    fn drain(&mut self) -> std::io::Result<u64> {
        let mut rest = 0;
        while !self.eof {
            self.pos = self.buf.len();
            self.refill()?;
            rest += self.buf.len() as u64;
        }
        Ok(rest)
    }
}

/// `.dmv/dirstate` in memory: the staged tree with each file's stat data.
#[derive(Default)]
pub struct Dirstate {
    /// The staged paths ('/'-separated bytes) and their entries.
    pub entries: PathMap<DirEntry>,
    /// mtime of the dirstate file when loaded: a file modified at or after it
    /// may have changed after it was hashed within the same timestamp tick.
    pub written_ns: i64,
    /// The tree the file was saved over, or a checkout's target: what a
    /// dirstate whose entries are mostly absent is saved over (HEAD's tree
    /// when None).
    pub absent_base: Option<ObjectId>,
}

/// The stat times of an entry whose data is not here: nothing is in the
/// working tree at its path, and that is not a deletion. (-1 marks an
/// unknown stat; a small value keeps the entry's encoding small.)
const ABSENT_NS: i64 = -2;

/// The stat times of a tombstone in a file over a tree: the tree's file at
/// its path is not staged. Only ever in the file, never in a loaded dirstate.
const REMOVED_NS: i64 = -3;

/// Reads tree nodes (a dirstate over a tree needs its files).
pub type TreeRead<'r> = dyn Fn(&ObjectId) -> RepoResult<TreeNode> + 'r;

impl DirEntry {
    /// A tracked file whose data this (partial) replica does not hold.
    pub fn absent(kind: EntryKind, id: ObjectId, size: u64) -> DirEntry {
        DirEntry {
            kind,
            id,
            size,
            mtime_ns: ABSENT_NS,
            ctime_ns: ABSENT_NS,
            ino: 0,
            mode: 0,
        }
    }

    /// Whether the entry's data is not in this replica (see [`DirEntry::absent`]).
    pub fn is_absent(&self) -> bool {
        self.mtime_ns == ABSENT_NS && self.ctime_ns == ABSENT_NS
    }

    /// A tombstone: in a file over a tree, the tree's file is not staged.
    fn removed(kind: EntryKind, id: ObjectId, size: u64) -> DirEntry {
        DirEntry {
            kind,
            id,
            size,
            mtime_ns: REMOVED_NS,
            ctime_ns: REMOVED_NS,
            ino: 0,
            mode: 0,
        }
    }

    pub(crate) fn is_removed(&self) -> bool {
        self.mtime_ns == REMOVED_NS && self.ctime_ns == REMOVED_NS
    }

    /// An entry for a file just read, with its metadata's stat.
    pub fn new(kind: EntryKind, id: ObjectId, size: u64, m: &Metadata) -> DirEntry {
        DirEntry::with_stat(kind, id, size, &Stat::of(m))
    }

    /// An entry for a file just read, with stat data already taken.
    pub fn with_stat(kind: EntryKind, id: ObjectId, size: u64, st: &Stat) -> DirEntry {
        DirEntry {
            kind,
            id,
            size,
            mtime_ns: st.mtime_ns,
            ctime_ns: st.ctime_ns,
            ino: st.ino,
            mode: st.mode,
        }
    }

    /// An entry whose stat no file matches: the next status reads the file.
    pub fn stat_unknown(kind: EntryKind, id: ObjectId, size: u64) -> DirEntry {
        DirEntry {
            kind,
            id,
            size,
            mtime_ns: -1,
            ctime_ns: -1,
            ino: 0,
            mode: 0,
        }
    }

    /// What the entry stages, without its stat data.
    pub(crate) fn flat(&self) -> FlatEntry {
        FlatEntry {
            kind: self.kind,
            id: self.id,
            size: self.size,
        }
    }

    /// Whether the file still has the size, times and inode recorded when
    /// it was read (whatever the racy-timestamp rule of [`DirEntry::stat_matches`]).
    pub(crate) fn unchanged_since_read(&self, st: &Stat) -> bool {
        self.size == st.size
            && self.mtime_ns == st.mtime_ns
            && self.ctime_ns == st.ctime_ns
            && self.ino == st.ino
    }

    /// Same stat as recorded, so the content can be trusted without reading.
    pub fn stat_matches(&self, st: &Stat, written_ns: i64) -> bool {
        self.size == st.size
            && self.mtime_ns == st.mtime_ns
            && self.ctime_ns == st.ctime_ns
            && self.ino == st.ino
            && self.mode == st.mode
            && self.mtime_ns < written_ns
    }
}

impl Dirstate {
    /// Reads the dirstate at `path`; empty if there is no file. Fails with
    /// [`RepoError::Corrupt`] if it is damaged or of an unknown version, or
    /// saved over a tree (which only [`Dirstate::load_over`] can read).
    pub fn load(path: &Path) -> RepoResult<Dirstate> {
        Dirstate::load_over(path, &|_| {
            Err(RepoError::Scan {
                detail: "a dirstate saved over a tree is read with the tree's store".into(),
            })
        })
    }

    /// [`Dirstate::load`] of a file that may be saved over a tree, whose
    /// folders are read through `read`.
    pub fn load_over(path: &Path, read: &TreeRead<'_>) -> RepoResult<Dirstate> {
        let Some(((base, own), written_ns)) =
            Dirstate::read(path, |window, base| Ok((base, window.entries()?)))?
        else {
            return Ok(Dirstate::default());
        };
        let entries = match base {
            None => own,
            Some(base) => over_tree(&base, &own, read).map_err(|detail| RepoError::Corrupt {
                path: path.into(),
                detail,
            })?,
        };
        Ok(Dirstate {
            entries,
            written_ns,
            absent_base: base,
        })
    }

    /// The file at `path` as it is on disk, its absent entries not read
    /// from the tree it is saved over: that tree (None: a file of every
    /// entry) and the entries of its own. None without a file.
    pub(crate) fn load_own(
        path: &Path,
    ) -> RepoResult<Option<(Option<ObjectId>, PathMap<DirEntry>)>> {
        Ok(Dirstate::read(path, |window, base| Ok((base, window.entries()?)))?.map(|(own, _)| own))
    }

    /// Saves `own` over `base` as they are: the caller changed only
    /// entries whose path holds a file of `base` (no tree is read).
    pub(crate) fn save_own_over(
        path: &Path,
        base: &ObjectId,
        own: &PathMap<DirEntry>,
    ) -> RepoResult<()> {
        Dirstate::write_file(
            path,
            Some(base),
            own.len(),
            own.iter().map(|(p, e)| (p, e.clone())),
        )?;
        Ok(())
    }

    /// What the dirstate at `path` needs kept, without its entries: the
    /// content ids of the entries whose data is here (not absent), in path
    /// order, and the tree it is saved over: what gc and fsck keep (the
    /// paths and stats of a million files are ~100 MB more). Empty without
    /// a dirstate.
    pub fn ids_here(path: &Path) -> RepoResult<Vec<ObjectId>> {
        let ids = Dirstate::read(path, |window, base| {
            let (announced, plausible) = window.count()?;
            let mut ids = Vec::with_capacity(plausible + 1);
            ids.extend(base);
            let mut previous: Option<Vec<u8>> = None;
            window.each_entry(announced, &mut |p, e| {
                match &mut previous {
                    Some(before) if before.as_slice() >= p => {
                        return Err("entries out of order".into())
                    }
                    Some(before) => {
                        before.clear();
                        before.extend_from_slice(p);
                    }
                    None => previous = Some(p.to_vec()),
                }
                if !e.is_absent() && !e.is_removed() {
                    ids.push(e.id);
                }
                Ok(())
            })?;
            Ok(ids)
        })?;
        Ok(ids.map(|(ids, _)| ids).unwrap_or_default())
    }

    /// Decodes the file at `path` with `decode` (given the tree a version 2
    /// file is over), checking its checksum; with the file's mtime. None
    /// when there is no file.
    fn read<T>(
        path: &Path,
        decode: impl FnOnce(&mut Window<&mut std::fs::File>, Option<ObjectId>) -> Result<T, String>,
    ) -> RepoResult<Option<(T, i64)>> {
        let corrupt = |detail: &str| RepoError::Corrupt {
            path: path.into(),
            detail: detail.into(),
        };
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RepoError::io(path, e)),
        };
        let meta = file.metadata().at(path)?;
        let written_ns = mtime_ns(&meta);
        if meta.len() < 12 + 32 {
            return Err(corrupt("not a dirstate"));
        }
        let mut window = Window::new(&mut file, meta.len() - 32);
        window.refill().at(path)?;
        if window.buf.len() < 12 || &window.buf[..8] != MAGIC {
            return Err(corrupt("not a dirstate"));
        }
        let version =
            u32::from_le_bytes([window.buf[8], window.buf[9], window.buf[10], window.buf[11]]);
        window.pos = 12;
        let decoded = match version {
            VERSION => decode(&mut window, None),
            VERSION_OVER_TREE => match window.buf.get(12..44) {
                Some(base) => {
                    let base = ObjectId(base.try_into().expect("32 bytes"));
                    window.pos = 44;
                    decode(&mut window, Some(base))
                }
                None => Err("no tree after the version".into()),
            },
            _ => Err("unsupported dirstate version".into()),
        };
        // Damage is named as such before anything the damaged bytes made the decoder say.
        window.drain().at(path)?;
        let computed = window.hasher.finalize();
        let mut sum = [0u8; 32];
        file.read_exact(&mut sum).at(path)?;
        if computed.as_bytes()[..] != sum {
            return Err(corrupt(
                "checksum mismatch (deleting it and staging HEAD's files again rebuilds it)",
            ));
        }
        Ok(Some((decoded.map_err(|e| corrupt(&e))?, written_ns)))
    }

    /// Removes the entries at positions `gone` of the sorted run (as
    /// [`PathMap::sorted`] numbers them) and inserts `added`.
    pub(crate) fn remove_and_insert(&mut self, gone: Vec<usize>, added: Vec<(Vec<u8>, DirEntry)>) {
        let entries = self.entries.sorted().unwrap_or_default();
        let gone: Vec<Vec<u8>> = gone.into_iter().map(|i| entries.path(i).to_vec()).collect();
        for path in gone {
            self.entries.remove(&path);
        }
        for (path, entry) in added {
            self.entries.insert(path, entry);
        }
    }

    /// Writes the dirstate to `path` atomically, in path order, entry by entry.
    pub fn save(&self, path: &Path) -> RepoResult<()> {
        Dirstate::write_file(
            path,
            None,
            self.entries.len(),
            self.entries.iter().map(|(p, e)| (p, e.clone())),
        )?;
        Ok(())
    }

    /// [`Dirstate::save`], over `base` when that is smaller (see
    /// [`Dirstate::save_sorted_over`]).
    pub fn save_over(
        &self,
        path: &Path,
        base: Option<&ObjectId>,
        read: &TreeRead<'_>,
    ) -> RepoResult<()> {
        Dirstate::save_sorted_over(
            path,
            self.entries.len(),
            || self.entries.iter().map(|(p, e)| (p, e.clone())),
            base,
            read,
        )?;
        Ok(())
    }

    /// Saves `count` entries given in path order (each call of `entries`
    /// gives them all), with no map of them (a checkout of a million files
    /// writes them as it reads its list), and returns their
    /// [`Dirstate::staged_hash`]. When most of them are absent, and `base`
    /// is a tree whose files they mostly are, the file is saved over it:
    /// only the entries that differ from its files' absent entries.
    pub(crate) fn save_sorted_over<'p, I: Iterator<Item = (&'p [u8], DirEntry)>>(
        path: &Path,
        count: usize,
        entries: impl Fn() -> I,
        base: Option<&ObjectId>,
        read: &TreeRead<'_>,
    ) -> RepoResult<[u8; 32]> {
        if let Some(base) =
            base.filter(|_| 2 * entries().filter(|(_, e)| e.is_absent()).count() > count)
        {
            if let Some((own, staged)) = own_entries(base, entries(), count / 2, read)? {
                Dirstate::write_file(
                    path,
                    Some(base),
                    own.len(),
                    own.iter().map(|(p, e)| (p.as_slice(), e.clone())),
                )?;
                return Ok(staged);
            }
        }
        Dirstate::write_file(path, None, count, entries())
    }

    /// [`Dirstate::save_sorted_over`] when the caller knows which entries
    /// differ from `base`'s files' absent entries: `own`, in path order,
    /// with every file of `base` among `entries` (so no tombstones). No
    /// tree is read.
    pub(crate) fn save_sorted_knowing<'p, 'o, I: Iterator<Item = (&'p [u8], DirEntry)>>(
        path: &Path,
        count: usize,
        entries: impl Fn() -> I,
        base: &ObjectId,
        own: impl Fn() -> Box<dyn Iterator<Item = (&'o [u8], DirEntry)> + 'o>,
    ) -> RepoResult<[u8; 32]> {
        let own_count = own().count();
        if 2 * own_count >= count {
            return Dirstate::write_file(path, None, count, entries());
        }
        let mut staged = StagedHash::new();
        entries().for_each(|(p, e)| staged.add(p, &e));
        Dirstate::write_file(path, Some(base), own_count, own())?;
        Ok(staged.finish())
    }

    /// Writes the file: over `base` (version 2) or not (version 1), with
    /// `count` entries given in path order; returns their staged hash.
    fn write_file<'p>(
        path: &Path,
        base: Option<&ObjectId>,
        count: usize,
        entries: impl Iterator<Item = (&'p [u8], DirEntry)>,
    ) -> RepoResult<[u8; 32]> {
        let staged = std::cell::RefCell::new(StagedHash::new());
        let entries = entries.inspect(|(path, e)| staged.borrow_mut().add(path, e));
        let disk = OnDisk {
            entries: Saving {
                entries: std::cell::RefCell::new(Some(entries)),
                count,
            },
        };
        crate::atomic::write_atomic_with(path, &mut |out| {
            let mut hashing = dmv_store::HashingWriter::new(out);
            // Buffered above the hash, which then takes large pieces (postcard writes field by field).
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut hashing);
            buffered.write_all(MAGIC)?;
            match base {
                None => buffered.write_all(&VERSION.to_le_bytes())?,
                Some(base) => {
                    buffered.write_all(&VERSION_OVER_TREE.to_le_bytes())?;
                    buffered.write_all(&base.0)?;
                }
            }
            postcard::to_io(&disk, &mut buffered)
                .map_err(|e| std::io::Error::other(format!("cannot encode the dirstate: {e}")))?;
            buffered.flush()?;
            drop(buffered);
            let sum = hashing.hasher.finalize();
            hashing.inner.write_all(sum.as_bytes())
        })?;
        Ok(staged.into_inner().finish())
    }

    /// The staged tree as a flat tree.
    pub(crate) fn flat(&self) -> FlatTree {
        self.entries
            .iter()
            .map(|(p, e)| (p.to_vec(), e.flat()))
            .collect()
    }

    /// What the entries stage (paths, kinds, ids and sizes; not stat data),
    /// as one hash: what a `TreeMark` is valid for.
    pub fn staged_hash(&self) -> [u8; 32] {
        let mut h = StagedHash::new();
        for (path, e) in &self.entries {
            h.add(path, e);
        }
        h.finish()
    }

    /// Writes the staged tree's objects; returns the root tree's id.
    pub(crate) fn write_tree(&self, session: &mut WriteSession<'_>) -> RepoResult<ObjectId> {
        crate::history::tree::build(session, self.entries.iter().map(|(p, e)| (p, e.flat())))
    }
}

/// The entries of a file over `base`: each file of `base` absent, unless
/// `own` has an entry at its path (a tombstone: not staged); then the rest
/// of `own`. An error names what is wrong with the file.
fn over_tree(
    base: &ObjectId,
    own: &PathMap<DirEntry>,
    read: &TreeRead<'_>,
) -> Result<PathMap<DirEntry>, String> {
    let mut entries = PathMap::default();
    let mut own = own.iter().peekable();
    let push = |entries: &mut PathMap<DirEntry>, path: &[u8], e: DirEntry| match e.is_removed() {
        true => Err("a tombstone where the tree has no file".to_string()),
        false if entries.push_sorted(path, e) => Ok(()),
        false => Err("entries out of order".to_string()),
    };
    let files =
        FilesInOrder::new(read, base).map_err(|e| format!("the tree it is saved over: {e}"))?;
    for file in files {
        let (path, e) = file.map_err(|e| format!("the tree it is saved over: {e}"))?;
        while let Some((p, o)) = own.next_if(|(p, _)| *p < path.as_slice()) {
            push(&mut entries, p, o.clone())?;
        }
        match own.next_if(|(p, _)| *p == path.as_slice()) {
            Some((_, o)) if o.is_removed() => {}
            Some((p, o)) => push(&mut entries, p, o.clone())?,
            None => push(&mut entries, &path, DirEntry::absent(e.kind, e.id, e.size))?,
        }
    }
    for (p, o) in own {
        push(&mut entries, p, o.clone())?;
    }
    Ok(entries)
}

/// What a file over `base` holds for `entries` (in path order), with their
/// staged hash; None when that would be more than `limit` entries.
#[allow(clippy::type_complexity)]
fn own_entries<'p>(
    base: &ObjectId,
    entries: impl Iterator<Item = (&'p [u8], DirEntry)>,
    limit: usize,
    read: &TreeRead<'_>,
) -> RepoResult<Option<(Vec<(Vec<u8>, DirEntry)>, [u8; 32])>> {
    let mut staged = StagedHash::new();
    let mut entries = entries.inspect(|(p, e)| staged.add(p, e)).peekable();
    let mut own = Vec::new();
    for file in FilesInOrder::new(read, base)? {
        let (path, e) = file?;
        while let Some((p, o)) = entries.next_if(|(p, _)| *p < path.as_slice()) {
            own.push((p.to_vec(), o));
        }
        match entries.next_if(|(p, _)| *p == path.as_slice()) {
            Some((_, o)) if o == DirEntry::absent(e.kind, e.id, e.size) => {}
            Some((p, o)) => own.push((p.to_vec(), o)),
            None => own.push((path, DirEntry::removed(e.kind, e.id, e.size))),
        }
        if own.len() > limit {
            return Ok(None);
        }
    }
    own.extend(entries.by_ref().map(|(p, o)| (p.to_vec(), o)));
    drop(entries);
    Ok((own.len() <= limit).then(|| (own, staged.finish())))
}

/// An entry's path (borrowed from the buffer), the entry, and the bytes it took.
type Decoded<'b> = (&'b [u8], DirEntry, usize);

/// One entry as postcard lays out `(ByteBuf, DirEntry)` (what `save`
/// writes): the path's length and bytes, the kind's index, the id's 32
/// bytes, then size, mtime and ctime (zigzag), inode and mode, each a
/// varint. Decoded by hand because serde's way through the id is a call per
/// byte: reading a million entries took 0.45 s. None: `buf` ends inside the
/// entry. Anything postcard would refuse is refused (a proptest holds them
/// to the same answers).
fn decode_entry(buf: &[u8]) -> Result<Option<Decoded<'_>>, String> {
    let mut at = 0;
    macro_rules! take {
        ($e:expr) => {
            match $e {
                Some(v) => v,
                None => return Ok(None),
            }
        };
    }
    let len = take!(varint(buf, &mut at, 10)?);
    let len = usize::try_from(len).map_err(|_| "a path too long".to_string())?;
    let path = take!(buf.get(at..at.saturating_add(len)));
    at += len;
    let kind = match take!(varint(buf, &mut at, 5)?) {
        0 => EntryKind::File,
        1 => EntryKind::Executable,
        2 => EntryKind::Symlink,
        3 => EntryKind::Dir,
        _ => return Err(postcard::Error::DeserializeBadEnum.to_string()),
    };
    let id = ObjectId(
        take!(buf.get(at..at + 32))
            .try_into()
            .map_err(|_| "an id")?,
    );
    at += 32;
    let size = take!(varint(buf, &mut at, 10)?);
    let zigzag = |n: u64| ((n >> 1) as i64) ^ -((n & 1) as i64);
    let mtime_ns = zigzag(take!(varint(buf, &mut at, 10)?));
    let ctime_ns = zigzag(take!(varint(buf, &mut at, 10)?));
    let ino = take!(varint(buf, &mut at, 10)?);
    let mode = u32::try_from(take!(varint(buf, &mut at, 5)?))
        .map_err(|_| postcard::Error::DeserializeBadVarint.to_string())?;
    Ok(Some((
        path,
        DirEntry {
            kind,
            id,
            size,
            mtime_ns,
            ctime_ns,
            ino,
            mode,
        },
        at,
    )))
}

/// A LEB128 varint of at most `max_bytes` bytes (5 for a u32, 10 for a u64)
/// whose value fits its type, as postcard reads them; None: `buf` ends first.
fn varint(buf: &[u8], at: &mut usize, max_bytes: usize) -> Result<Option<u64>, String> {
    let bits = if max_bytes == 5 { 32 } else { 64 };
    let mut value = 0u64;
    for i in 0..max_bytes {
        let Some(&byte) = buf.get(*at + i) else {
            return Ok(None);
        };
        let shift = 7 * i as u32;
        if i == max_bytes - 1 && u32::from(byte) >> (bits - shift) != 0 {
            return Err(postcard::Error::DeserializeBadVarint.to_string());
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            *at += i + 1;
            return Ok(Some(value));
        }
    }
    Err(postcard::Error::DeserializeBadVarint.to_string())
}

/// [`Dirstate::staged_hash`] as the entries come: their bytes gathered into
/// pieces large enough for BLAKE3 to hash many chunks at once (fed an entry
/// at a time it hashed a block at a time: 7% of a status of a million files).
struct StagedHash {
    hasher: blake3::Hasher,
    pending: Vec<u8>,
}

impl StagedHash {
    const PIECE: usize = 1 << 16;

    fn new() -> StagedHash {
        StagedHash {
            hasher: blake3::Hasher::new(),
            pending: Vec::with_capacity(StagedHash::PIECE + 1024),
        }
    }

    fn add(&mut self, path: &[u8], e: &DirEntry) {
        let kind: u8 = match e.kind {
            EntryKind::File => 0,
            EntryKind::Executable => 1,
            EntryKind::Symlink => 2,
            EntryKind::Dir => 3,
        };
        self.pending
            .extend_from_slice(&(path.len() as u64).to_le_bytes());
        self.pending.extend_from_slice(path);
        self.pending.push(kind);
        self.pending.extend_from_slice(&e.id.0);
        self.pending.extend_from_slice(&e.size.to_le_bytes());
        if self.pending.len() >= StagedHash::PIECE {
            self.hasher.update(&self.pending);
            self.pending.clear();
        }
    }

    fn finish(mut self) -> [u8; 32] {
        self.hasher.update(&self.pending);
        *self.hasher.finalize().as_bytes()
    }
}

/// `.dmv/dirstate-tree`: the tree that the dirstate's entries build, when a
/// command knows it (commit, checkout, a status that found nothing staged),
/// so that `status` need not read HEAD's whole tree to find nothing staged.
/// It holds the [`Dirstate::staged_hash`] of the entries it was made from and
/// is believed only while they still hash so: a change to the entries by any
/// command, or a damaged file, makes it stale, never wrong.
/// Layout: magic, version (u32 LE), tree id, entries hash, and in version 2
/// the BLAKE3 of those 76 bytes: version 2 is written in place (no rename),
/// so a reader or a crash may meet a mix of two marks, which the checksum
/// turns into no mark. Version 1 (no checksum) was only ever renamed into
/// place whole, and is still believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeMark {
    pub tree: ObjectId,
    pub entries: [u8; 32],
}

const MARK_MAGIC: &[u8; 8] = b"DMVDTRE\0";
const MARK_VERSION: u32 = 2;
const MARK_BODY_LEN: usize = 8 + 4 + 32 + 32;

impl TreeMark {
    /// The tree `ds` builds, if this mark was made from the same entries.
    pub fn tree_of(&self, ds: &Dirstate) -> Option<ObjectId> {
        (self.entries == ds.staged_hash()).then_some(self.tree)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MARK_BODY_LEN + 32);
        out.extend_from_slice(MARK_MAGIC);
        out.extend_from_slice(&MARK_VERSION.to_le_bytes());
        out.extend_from_slice(&self.tree.0);
        out.extend_from_slice(&self.entries);
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    /// None for anything but a whole mark of version 1 or 2 (missing, short,
    /// torn, damaged: only a cache).
    pub fn decode(bytes: &[u8]) -> Option<TreeMark> {
        let body = bytes.get(..MARK_BODY_LEN)?;
        if &body[..8] != MARK_MAGIC {
            return None;
        }
        let whole = match u32::from_le_bytes(body[8..12].try_into().ok()?) {
            1 => bytes.len() == MARK_BODY_LEN,
            2 => {
                bytes.len() == MARK_BODY_LEN + 32
                    && bytes[MARK_BODY_LEN..] == *blake3::hash(body).as_bytes()
            }
            _ => false,
        };
        whole.then(|| TreeMark {
            tree: ObjectId(body[12..44].try_into().expect("32 bytes")),
            entries: body[44..76].try_into().expect("32 bytes"),
        })
    }
}

/// Where [`TreeMark`] is kept, in `.dmv`.
const TREE_MARK_FILE: &str = "dirstate-tree";

impl crate::repository::repo::Repository {
    pub(crate) fn dirstate_path(&self) -> PathBuf {
        self.dmv.join("dirstate")
    }

    /// Reads the dirstate; a missing file is an empty one.
    pub fn load_dirstate(&self) -> RepoResult<Dirstate> {
        Dirstate::load_over(&self.dirstate_path(), &tree_reader(&self.store))
    }

    /// Callers hold the working-tree lock from before they loaded what they change.
    pub(crate) fn save_dirstate(&self, ds: &Dirstate) -> RepoResult<()> {
        self.check_worktree_locked("the dirstate")?;
        let base = match ds.absent_base {
            Some(tree) => Some(tree),
            None => self.head_tree()?,
        };
        ds.save_over(
            &self.dirstate_path(),
            base.as_ref(),
            &tree_reader(&self.store),
        )
    }

    /// The tree the dirstate builds, as a command last recorded it (see [`TreeMark`]).
    pub(crate) fn tree_mark(&self) -> Option<TreeMark> {
        std::fs::read(self.dmv.join(TREE_MARK_FILE))
            .ok()
            .and_then(|b| TreeMark::decode(&b))
    }

    /// Records that `ds`, as saved, builds `tree`. Only a cache: a failure
    /// costs the next status a read of HEAD's tree, so it is not reported.
    pub(crate) fn mark_tree(&self, ds: &Dirstate, tree: ObjectId) {
        self.mark_staged_tree(ds.staged_hash(), tree);
    }

    /// [`Repository::mark_tree`] for entries whose staged hash is known.
    pub(crate) fn mark_staged_tree(&self, staged: [u8; 32], tree: ObjectId) {
        if self.check_worktree_locked("the dirstate's tree").is_ok() {
            let _ = crate::atomic::overwrite_cache(
                &self.dmv.join(TREE_MARK_FILE),
                &TreeMark {
                    tree,
                    entries: staged,
                }
                .encode(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_absent_entry_is_pinned_and_survives_a_save() {
        let e = DirEntry::absent(EntryKind::File, ObjectId([7; 32]), 300);
        assert!(
            e.is_absent()
                && !DirEntry {
                    mtime_ns: -1,
                    ctime_ns: -1,
                    ..e.clone()
                }
                .is_absent()
        );
        let mut expected = vec![0u8]; // kind File
        expected.extend([7u8; 32]);
        expected.extend([0xac, 0x02, 0x03, 0x03, 0x00, 0x00]); // size 300, mtime -2, ctime -2 (zigzag), ino 0, mode 0
        assert_eq!(postcard::to_stdvec(&e).unwrap(), expected);
        let dir = tempfile::tempdir().unwrap();
        let mut ds = Dirstate::default();
        ds.entries.insert(b"a/b.raw".to_vec(), e.clone());
        ds.save(&dir.path().join("dirstate")).unwrap();
        assert!(Dirstate::load(&dir.path().join("dirstate"))
            .unwrap()
            .entries
            .get(b"a/b.raw")
            .unwrap()
            .is_absent());
        // Only the data that is here is kept by gc: read without the entries, checksum and all.
        ds.entries.insert(
            b"a/c.raw".to_vec(),
            DirEntry {
                mtime_ns: 5,
                ..DirEntry::absent(EntryKind::File, ObjectId([8; 32]), 9)
            },
        );
        ds.entries.insert(
            b"a/a.raw".to_vec(),
            DirEntry {
                mtime_ns: 5,
                ..DirEntry::absent(EntryKind::File, ObjectId([6; 32]), 9)
            },
        );
        ds.save(&dir.path().join("dirstate")).unwrap();
        assert_eq!(
            Dirstate::ids_here(&dir.path().join("dirstate")).unwrap(),
            [ObjectId([6; 32]), ObjectId([8; 32])]
        );
        assert_eq!(Dirstate::ids_here(&dir.path().join("none")).unwrap(), []);
        let mut bytes = std::fs::read(dir.path().join("dirstate")).unwrap();
        bytes[20] ^= 1;
        std::fs::write(dir.path().join("dirstate"), &bytes).unwrap();
        assert!(Dirstate::ids_here(&dir.path().join("dirstate"))
            .unwrap_err()
            .to_string()
            .contains("checksum"));
    }

    /// A tree of one folder, `f0`..`f{n-1}` (file i: id [i; 32], size i), read without a store.
    fn one_folder(n: u8) -> (ObjectId, impl Fn(&ObjectId) -> RepoResult<TreeNode>) {
        let base = ObjectId([0xee; 32]);
        let mut entries: Vec<dmv_store::object::TreeEntry> = (0..n)
            .map(|i| dmv_store::object::TreeEntry {
                name: format!("f{i}").into_bytes(),
                kind: EntryKind::File,
                id: ObjectId([i; 32]),
                size: i as u64,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        (base, move |id: &ObjectId| match *id == base {
            true => Ok(TreeNode::Leaf(entries.clone())),
            false => Err(RepoError::Scan {
                detail: "no such tree".into(),
            }),
        })
    }

    #[test]
    fn a_dirstate_over_a_tree_is_pinned_and_loads_whole() {
        let (base, read) = one_folder(5);
        let mut ds = Dirstate::default();
        for i in 0..4u8 {
            ds.entries.insert(
                format!("f{i}").into_bytes(),
                DirEntry::absent(EntryKind::File, ObjectId([i; 32]), i as u64),
            );
        }
        // f4 is not staged; g is, with its data here.
        let g = DirEntry {
            kind: EntryKind::File,
            id: ObjectId([9; 32]),
            size: 3,
            mtime_ns: 1000,
            ctime_ns: 1000,
            ino: 7,
            mode: 0o100644,
        };
        ds.entries.insert(b"g".to_vec(), g.clone());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dirstate");
        ds.save_over(&path, Some(&base), &read).unwrap();
        let mut expected = b"DMVDIRS\0\x02\0\0\0".to_vec();
        expected.extend([0xee; 32]); // the tree it is over
        expected.push(2); // two entries of its own
        expected.extend([2, b'f', b'4', 0]); // f4, a file,
        expected.extend([4; 32]);
        expected.extend([4, 5, 5, 0, 0]); // size 4, mtime and ctime -3 (zigzag): not staged
        expected.extend([1, b'g', 0]);
        expected.extend([9; 32]);
        expected.extend([3, 0xd0, 0x0f, 0xd0, 0x0f, 7, 0xa4, 0x83, 0x02]);
        expected.extend(*blake3::hash(&expected).as_bytes());
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        let back = Dirstate::load_over(&path, &read).unwrap();
        assert!(back.entries.iter().eq(ds.entries.iter()));
        assert_eq!(back.absent_base, Some(base));
        assert_eq!(back.staged_hash(), ds.staged_hash());
        // gc keeps the tree and the data that is here.
        assert_eq!(
            Dirstate::ids_here(&path).unwrap(),
            [base, ObjectId([9; 32])]
        );
        // Without the tree's store, or with the tree gone, it is damage, in one line.
        for err in [
            Dirstate::load(&path).err().unwrap(),
            Dirstate::load_over(&path, &|_| {
                Err(RepoError::Scan {
                    detail: "gone".into(),
                })
            })
            .err()
            .unwrap(),
        ] {
            assert!(
                matches!(err, RepoError::Corrupt { .. }) && !err.to_string().contains('\n'),
                "{err}"
            );
        }
        // Mostly present: saved entry by entry, as before.
        ds.entries.insert(b"h".to_vec(), g.clone());
        ds.entries.insert(b"i".to_vec(), g.clone());
        ds.entries.insert(b"j".to_vec(), g.clone());
        ds.save_over(&path, Some(&base), &read).unwrap();
        assert_eq!(std::fs::read(&path).unwrap()[8..12], 1u32.to_le_bytes());
        assert_eq!(Dirstate::load(&path).unwrap().absent_base, None);
    }

    #[test]
    fn a_tombstone_where_the_tree_has_no_file_is_damage() {
        let (base, read) = one_folder(3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dirstate");
        let own = [(
            b"f9".as_slice(),
            DirEntry::removed(EntryKind::File, ObjectId([1; 32]), 1),
        )];
        Dirstate::write_file(&path, Some(&base), 1, own.into_iter()).unwrap();
        let err = Dirstate::load_over(&path, &read).err().unwrap().to_string();
        assert!(err.contains("tombstone"), "{err}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever is staged over a tree (its files absent or not, changed,
        /// unstaged, files beside them), it loads back exactly.
        #[test]
        fn any_dirstate_saved_over_a_tree_loads_back_exactly(fates in proptest::collection::vec(0u8..5, 1..40), added in proptest::collection::vec(any::<u8>(), 0..6)) {
            let (base, read) = one_folder(fates.len() as u8);
            let mut ds = Dirstate::default();
            for (i, fate) in fates.iter().enumerate() {
                let (path, id) = (format!("f{i}").into_bytes(), ObjectId([i as u8; 32]));
                match fate {
                    0 | 1 => ds.entries.insert(path, DirEntry::absent(EntryKind::File, id, i as u64)),
                    2 => ds.entries.insert(path, DirEntry::absent(EntryKind::Executable, ObjectId([0xaa; 32]), 1)),
                    3 => ds.entries.insert(path, DirEntry { mtime_ns: 5, ..DirEntry::absent(EntryKind::File, id, i as u64) }),
                    _ => None,
                };
            }
            for a in added {
                ds.entries.insert(format!("f{a}x").into_bytes(), DirEntry::absent(EntryKind::File, ObjectId([a; 32]), 2));
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("dirstate");
            let staged = Dirstate::save_sorted_over(&path, ds.entries.len(), || ds.entries.iter().map(|(p, e)| (p, e.clone())), Some(&base), &read).unwrap();
            prop_assert_eq!(staged, ds.staged_hash());
            let back = Dirstate::load_over(&path, &read).unwrap();
            prop_assert!(back.entries.iter().eq(ds.entries.iter()));
        }
    }

    #[test]
    fn the_staged_hash_of_many_entries_is_blake3_of_their_bytes_in_order() {
        // Gathered into pieces, hashed as one stream: past several pieces too.
        let mut ds = Dirstate::default();
        let mut bytes = Vec::new();
        for i in 0..3000u32 {
            let path = format!("folder{}/{}", i / 100, "x".repeat(i as usize % 90)).into_bytes();
            let e = DirEntry::absent(EntryKind::Executable, ObjectId([i as u8; 32]), i as u64 * 7);
            ds.entries.insert(path, e);
        }
        for (path, e) in &ds.entries {
            bytes.extend((path.len() as u64).to_le_bytes());
            bytes.extend(path);
            bytes.push(1);
            bytes.extend(e.id.0);
            bytes.extend(e.size.to_le_bytes());
        }
        assert!(bytes.len() > 3 * StagedHash::PIECE);
        assert_eq!(ds.staged_hash(), *blake3::hash(&bytes).as_bytes());
    }

    #[test]
    fn a_tree_mark_is_pinned_and_holds_only_for_the_entries_it_was_made_from() {
        let mut ds = Dirstate::default();
        ds.entries.insert(
            b"a".to_vec(),
            DirEntry::absent(EntryKind::File, ObjectId([1; 32]), 5),
        );
        let mark = TreeMark {
            tree: ObjectId([9; 32]),
            entries: ds.staged_hash(),
        };
        // Saved from a stream of entries, the file and the hash are those of the map.
        let dir = tempfile::tempdir().unwrap();
        ds.save(&dir.path().join("map")).unwrap();
        let streamed = Dirstate::write_file(
            &dir.path().join("stream"),
            None,
            1,
            ds.entries.iter().map(|(p, e)| (p, e.clone())),
        )
        .unwrap();
        assert_eq!(streamed, ds.staged_hash());
        assert_eq!(
            std::fs::read(dir.path().join("map")).unwrap(),
            std::fs::read(dir.path().join("stream")).unwrap()
        );
        assert!(Dirstate::write_file(
            &dir.path().join("short"),
            None,
            2,
            ds.entries.iter().map(|(p, e)| (p, e.clone()))
        )
        .is_err());
        let mut expected = b"DMVDTRE\0\x02\0\0\0".to_vec();
        expected.extend([9u8; 32]);
        expected.extend(
            *blake3::hash(
                &[
                    &1u64.to_le_bytes()[..],
                    b"a",
                    &[0],
                    &[1; 32],
                    &5u64.to_le_bytes(),
                ]
                .concat(),
            )
            .as_bytes(),
        );
        let version_1 = [b"DMVDTRE\0\x01\0\0\0".as_slice(), &expected[12..]].concat();
        expected.extend(*blake3::hash(&expected).as_bytes());
        assert_eq!(mark.encode(), expected);
        assert_eq!(TreeMark::decode(&expected), Some(mark.clone()));
        assert_eq!(TreeMark::decode(&version_1), Some(mark.clone()));
        // Written in place, a mark may be met half old and half new: no mark.
        let other = TreeMark {
            tree: ObjectId([3; 32]),
            entries: [4; 32],
        }
        .encode();
        for cut in 1..expected.len() {
            let torn = [&other[..cut], &expected[cut..]].concat();
            if torn != expected && torn != other {
                assert_eq!(TreeMark::decode(&torn), None, "torn at {cut}");
            }
        }
        assert_eq!(TreeMark::decode(&[&expected[..], &[0]].concat()), None);
        assert_eq!(TreeMark::decode(&[&version_1[..], &[0]].concat()), None);
        assert_eq!(mark.tree_of(&ds), Some(ObjectId([9; 32])));
        // Stat data is not what is staged; a kind, an id, a size or a path is.
        ds.entries.get_mut(&b"a"[..]).unwrap().mtime_ns = 77;
        assert_eq!(mark.tree_of(&ds), Some(ObjectId([9; 32])));
        for change in 0..4 {
            let mut other = Dirstate::default();
            let mut e = ds.entries.get(b"a").unwrap().clone();
            let mut path = b"a".to_vec();
            match change {
                0 => e.kind = EntryKind::Executable,
                1 => e.id = ObjectId([2; 32]),
                2 => e.size = 6,
                _ => path = b"b".to_vec(),
            }
            other.entries.insert(path, e);
            assert_eq!(mark.tree_of(&other), None, "change {change}");
        }
        assert_eq!(TreeMark::decode(&expected[..75]), None);
        assert_eq!(TreeMark::decode(&expected[..107]), None);
    }

    #[test]
    fn varints_at_their_limits_are_read_as_postcard_reads_them() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for last in [0x00u8, 0x01, 0x02, 0x0f, 0x10, 0x7f, 0x80] {
            for len in [4usize, 5, 9, 10] {
                let mut v = vec![0xffu8; len - 1];
                v.push(last);
                cases.push(v);
            }
        }
        cases.extend([vec![0x80; 11], vec![0x00], vec![0x7f], vec![0x80, 0x00]]);
        for bytes in cases {
            let (mut a, mut b) = (0, 0);
            let mine64 = varint(&bytes, &mut a, 10).ok().flatten();
            let mine32 = varint(&bytes, &mut b, 5).ok().flatten();
            let theirs64 = postcard::take_from_bytes::<u64>(&bytes)
                .ok()
                .map(|(v, rest)| (v, bytes.len() - rest.len()));
            let theirs32 = postcard::take_from_bytes::<u32>(&bytes)
                .ok()
                .map(|(v, rest)| (v as u64, bytes.len() - rest.len()));
            assert_eq!(mine64.map(|v| (v, a)), theirs64, "{bytes:02x?} as u64");
            assert_eq!(mine32.map(|v| (v, b)), theirs32, "{bytes:02x?} as u32");
        }
    }

    proptest! {
        #[test]
        fn a_tree_mark_decodes_from_any_bytes_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            if let Some(m) = TreeMark::decode(&bytes) {
                prop_assert_eq!(m.encode(), bytes);
            }
        }

        #[test]
        fn the_entry_decoder_agrees_with_postcard(path in proptest::collection::vec(any::<u8>(), 0..300), kind in 0u8..4, id in any::<[u8; 32]>(), size in any::<u64>(), mtime_ns in any::<i64>(), ctime_ns in any::<i64>(), ino in any::<u64>(), mode in any::<u32>(), junk in proptest::collection::vec(any::<u8>(), 0..64), cut in any::<usize>()) {
            let kind = [EntryKind::File, EntryKind::Executable, EntryKind::Symlink, EntryKind::Dir][kind as usize];
            let e = DirEntry { kind, id: ObjectId(id), size, mtime_ns, ctime_ns, ino, mode };
            let bytes = postcard::to_stdvec(&(serde_bytes::Bytes::new(&path), &e)).unwrap();
            prop_assert_eq!(decode_entry(&bytes).unwrap(), Some((path.as_slice(), e.clone(), bytes.len())));
            // Cut short: more is needed, as postcard says.
            let short = &bytes[..cut % bytes.len()];
            prop_assert!(matches!(decode_entry(short), Ok(None)));
            prop_assert!(matches!(postcard::take_from_bytes::<(serde_bytes::ByteBuf, DirEntry)>(short), Err(postcard::Error::DeserializeUnexpectedEnd)));
            // Any bytes: both take the same entry, or both refuse (the hand decoder may ask for more where postcard has refused already).
            let mine = decode_entry(&junk);
            let theirs = postcard::take_from_bytes::<(serde_bytes::ByteBuf, DirEntry)>(&junk);
            match (mine, theirs) {
                (Ok(Some((p, e, used))), Ok(((tp, te), rest))) => prop_assert!(p == tp.as_slice() && e == te && used == junk.len() - rest.len()),
                (Ok(Some(_)), Err(err)) => prop_assert!(false, "postcard refused what was taken: {err}"),
                (Ok(None), result) => prop_assert!(result.is_err(), "postcard took what was short"),
                (Err(_), result) => prop_assert!(result.is_err()),
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), header in 0u32..3) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("dirstate");
            let (base, read) = one_folder(20);
            let mut data = Vec::new();
            if header > 0 {
                data.extend(MAGIC);
                data.extend(header.to_le_bytes());
            }
            if header == VERSION_OVER_TREE {
                data.extend(base.0);
            }
            data.extend(bytes);
            let sum = blake3::hash(&data);
            data.extend_from_slice(sum.as_bytes());
            std::fs::write(&path, &data).unwrap();
            let _ = Dirstate::load_over(&path, &read);
            let _ = Dirstate::ids_here(&path);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Entries are decoded a window at a time: a file several windows
        /// long, with entries across their edges, loads back exactly, and a
        /// flipped bit anywhere is refused.
        #[test]
        fn a_file_longer_than_the_window_round_trips_and_a_flip_is_refused(flip in any::<u64>()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("dirstate");
            let mut ds = Dirstate::default();
            for i in 0..30_000u32 {
                let name = format!("folder-{:03}/a-rather-long-file-name-{i:06}.raw", i / 1000).into_bytes();
                ds.entries.insert(name, DirEntry { kind: EntryKind::File, id: ObjectId([(i % 251) as u8; 32]), size: i as u64, mtime_ns: i as i64, ctime_ns: -(i as i64), ino: i as u64 * 7, mode: 0o100644 });
            }
            ds.save(&path).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            prop_assert!(len > 2 * WINDOW as u64, "{len} bytes");
            let back = Dirstate::load(&path).unwrap();
            prop_assert!(back.entries.iter().eq(ds.entries.iter()));
            let mut bytes = std::fs::read(&path).unwrap();
            let at = (flip % (len * 8)) as usize;
            bytes[at / 8] ^= 1 << (at % 8);
            std::fs::write(&path, &bytes).unwrap();
            prop_assert!(Dirstate::load(&path).is_err());
        }
    }
}
