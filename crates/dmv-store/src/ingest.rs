//! Storing working-tree files: one reader thread chunks files in order, worker
//! threads hash and compress chunks, and the calling thread (the only pack
//! writer) deduplicates, appends, and assembles each file's chunk list.
//! Bounded channels between the stages keep memory constant in file size.
//! A handful of small files is stored on the calling thread alone.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, Metadata};
use std::io::Seek;
use std::path::{Path, PathBuf};

use crossbeam_channel::{bounded, Receiver, Sender};

use dmv_os::{FileExt, MetadataExt};

use crate::chunker::{cut_run, read_single_chunk, ChunkBatch};
use crate::clock::timestamp_granularity;
use crate::nodes::{FileList, ListBuilder};
use crate::object::NodeEntry;
use crate::pack::{COMP_NONE, COMP_ZSTD};
use crate::session::maybe_compress;
use crate::{ChunkParams, ObjectId, ObjectKind, StoreError, StoreResult, Tally, WriteSession};

/// A file to store, by path.
#[derive(Clone, Debug)]
pub struct IngestSource {
    /// The file to read.
    pub path: PathBuf,
}

/// A stored file: its content id, size, and the stat taken when it was read
/// (verified unchanged after reading), for the dirstate.
#[derive(Clone, Debug)]
pub struct Ingested {
    /// Its content id: its chunk, or the root of its chunk list.
    pub id: ObjectId,
    /// Its length in bytes.
    pub size: u64,
    /// Its stat, taken before reading and checked unchanged after.
    pub meta: Metadata,
    /// Stamped within a clock tick of the read: a write later in that tick
    /// would leave the stat as it is, so the stat cannot vouch for this
    /// content (git's "racy" case; the dirstate records the stat as unknown).
    pub racy: bool,
}

const TRIES: u32 = 4;

/// Whether the file's mtime falls in the time of our read (give or take a
/// tick), where a write would not show as a change of stat. An mtime later
/// than that (a camera's clock set ahead, an archive's) is not: a write
/// during the read would have set the mtime to now, which the stats compare.
fn modified_since(meta: &Metadata, read_start: std::time::SystemTime) -> bool {
    match meta.modified() {
        Ok(m) => {
            m + timestamp_granularity() >= read_start
                && m <= std::time::SystemTime::now() + timestamp_granularity()
        }
        Err(_) => true,
    }
}

enum Job {
    /// Consecutive chunks of one file, the first being number `first_seq`.
    Chunks {
        file: usize,
        gen: u32,
        first_seq: u64,
        batch: ChunkBatch,
    },
    /// All chunks of this generation have been sent.
    End {
        file: usize,
        gen: u32,
        chunks: u64,
        meta: Box<Metadata>,
    },
    Failed {
        file: usize,
        error: StoreError,
    },
}

/// What a worker learned about one chunk of a batch.
struct Hashed {
    id: ObjectId,
    /// Stored already (re-committing an edited file): nothing to write.
    present: bool,
    compressed: Option<Vec<u8>>,
}

enum Done {
    Chunks {
        file: usize,
        gen: u32,
        first_seq: u64,
        batch: ChunkBatch,
        hashed: Vec<Hashed>,
    },
    End {
        file: usize,
        gen: u32,
        chunks: u64,
        meta: Box<Metadata>,
    },
    Failed {
        file: usize,
        error: StoreError,
    },
}

#[derive(Default)]
struct FileState {
    gen: u32,
    next_seq: u64,
    expected: Option<u64>,
    meta: Option<Box<Metadata>>,
    reorder: BTreeMap<u64, NodeEntry>,
    list: ListBuilder<FileList>,
    size: u64,
}

fn same_stat(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len()
        && a.mtime() == b.mtime()
        && a.mtime_nsec() == b.mtime_nsec()
        && a.ino() == b.ino()
        && a.ctime() == b.ctime()
        && a.ctime_nsec() == b.ctime_nsec()
}

/// Bytes read per block; each block buffer also has `params.max` bytes of
/// headroom in front, where the chunker puts the previous block's unfinished
/// chunk so that chunk is contiguous without copying the block.
const BLOCK: usize = 1 << 20;

/// The parts of files at least this large whose pages are mostly not in the
/// page cache are read past it (O_DIRECT): a file larger than RAM read through the cache
/// makes the kernel find a fresh page for every 4 KiB, which on the VMs DMV
/// is measured on costs more than the disk (re-reading a 26 GiB file took
/// 2.4x as long as the disk needs). Files in the cache are read from it.
const DIRECT_READ_MIN: u64 = 64 << 20;
/// How much of a file one look at the page cache decides for (a multiple of `BLOCK`).
const DIRECT_WINDOW: u64 = 64 << 20;
/// Address, offset and length alignment of a direct read.
const ALIGN: usize = 4096;

/// What the reader hands the chunker.
enum Raw {
    /// The block's bytes are `buf[at..at + len]`; the chunker puts the
    /// previous block's unfinished chunk just before `at`.
    Block {
        file: usize,
        gen: u32,
        buf: Vec<u8>,
        at: usize,
        len: usize,
    },
    Small {
        file: usize,
        gen: u32,
        data: Vec<u8>,
    },
    End {
        file: usize,
        gen: u32,
        meta: Box<Metadata>,
    },
    Failed {
        file: usize,
        error: StoreError,
    },
}

/// Reads one file in blocks; returns false when it changed underneath.
fn read_file(
    file_no: usize,
    gen: u32,
    src: &IngestSource,
    params: ChunkParams,
    raw: &Sender<Raw>,
    spares: &Receiver<Vec<u8>>,
) -> Result<bool, StoreError> {
    let path = &src.path;
    let read_start = std::time::SystemTime::now();
    crate::trace::count_content_open();
    let mut f = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let before = f.metadata().map_err(|e| StoreError::io(path, e))?;
    if !before.is_file() {
        return Err(StoreError::NotAFile(path.to_path_buf()));
    }
    let mut total = 0u64;
    if before.len() <= params.min as u64 {
        // Small files are one chunk: skip the large buffers.
        let Some(data) = read_single_chunk(&mut f, params).map_err(|e| StoreError::io(path, e))?
        else {
            return Ok(false);
        };
        total = data.len() as u64;
        if raw
            .send(Raw::Small {
                file: file_no,
                gen,
                data,
            })
            .is_err()
        {
            return Ok(true);
        }
    } else {
        let head = params.max as usize;
        // Decided again for each window: a file larger than RAM that was just
        // written or read has its tail in the cache and its head not, and
        // reading the head through the cache would evict the tail before we
        // got to it.
        let mut direct_file: Option<Option<File>> = None;
        let mut direct = false;
        loop {
            if before.len() >= DIRECT_READ_MIN && total.is_multiple_of(DIRECT_WINDOW) {
                direct = mostly_not_cached(
                    &f,
                    total,
                    DIRECT_WINDOW
                        .min(before.len().saturating_sub(total))
                        .max(ALIGN as u64),
                );
            }
            let mut buf = spares
                .try_recv()
                .ok()
                .filter(|b| b.len() == head + BLOCK + ALIGN)
                .unwrap_or_else(|| vec![0; head + BLOCK + ALIGN]);
            // Where the block starts: an aligned address at least `head` bytes in.
            let at = head + (ALIGN - (buf.as_ptr() as usize + head) % ALIGN) % ALIGN;
            let mut len = 0;
            while len < BLOCK {
                let dst = &mut buf[at + len..at + BLOCK];
                let offset = total + len as u64;
                let direct_fd = if direct {
                    direct_file
                        .get_or_insert_with(|| open_direct(path))
                        .as_ref()
                } else {
                    None
                };
                let read = match direct_fd {
                    Some(d) => match d.read_at(dst, offset) {
                        // A direct read the file system refuses (or a short read
                        // that left us unaligned): the rest through the cache.
                        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                            direct_file = Some(None);
                            continue;
                        }
                        other => other,
                    },
                    None => f.read_at(dst, offset),
                };
                match read {
                    Ok(0) => break,
                    Ok(n) => len += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(StoreError::io(path, e)),
                }
            }
            total += len as u64;
            if len > 0
                && raw
                    .send(Raw::Block {
                        file: file_no,
                        gen,
                        buf,
                        at,
                        len,
                    })
                    .is_err()
            {
                return Ok(true);
            }
            if len < BLOCK {
                break;
            }
        }
        if total == 0 {
            // The file shrank to nothing while we read it.
            return Ok(false);
        }
    }
    if let Some(after) = changed_while_read(&f, path, &before, total, read_start)? {
        // The next read starts once the mtime is a tick behind it (a file still being written waits again).
        let settled = after.modified().ok().and_then(|m| {
            (m + timestamp_granularity())
                .duration_since(std::time::SystemTime::now())
                .ok()
        });
        std::thread::sleep(
            settled.unwrap_or_default().min(timestamp_granularity() * 2)
                + std::time::Duration::from_millis(1),
        );
        return Ok(false);
    }
    let _ = raw.send(Raw::End {
        file: file_no,
        gen,
        meta: Box::new(before),
    });
    Ok(true)
}

/// The file's stat now if it is not the file `before` describes, read whole
/// (`total` bytes) since `read_start`; None if it is.
fn changed_while_read(
    f: &File,
    path: &Path,
    before: &Metadata,
    total: u64,
    read_start: std::time::SystemTime,
) -> StoreResult<Option<Metadata>> {
    let (after, same) = stat_again(f, path, before, total)?;
    Ok((!same || modified_since(&after, read_start)).then_some(after))
}

/// The file's stat now, and whether it is still the file `before`
/// describes, `total` bytes long.
fn stat_again(
    f: &File,
    path: &Path,
    before: &Metadata,
    total: u64,
) -> StoreResult<(Metadata, bool)> {
    let after = f.metadata().map_err(|e| StoreError::io(path, e))?;
    // Also compare with the path's current stat: a file replaced by rename keeps our fd valid.
    let now = std::fs::symlink_metadata(path).map_err(|e| StoreError::io(path, e))?;
    let same = same_stat(before, &after) && same_stat(before, &now) && total == before.len();
    Ok((after, same))
}

/// Whether a one-chunk file read whole as `data` reads the same again, its
/// stat still `before`. A write that tore the first read changed bytes it had
/// read already, which the second read sees.
fn reads_the_same_again(
    f: &File,
    path: &Path,
    before: &Metadata,
    data: &[u8],
    params: ChunkParams,
) -> bool {
    let mut f = f;
    f.seek(std::io::SeekFrom::Start(0)).is_ok()
        && matches!(read_single_chunk(&mut f, params), Ok(Some(again)) if again == data)
        && matches!(
            stat_again(f, path, before, data.len() as u64),
            Ok((_, true))
        )
}

/// Whether less than half of the pages of `len` bytes from `offset` are in
/// the page cache (`cachestat`, Linux 6.5). Where the kernel cannot say: no.
fn mostly_not_cached(f: &File, offset: u64, len: u64) -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(dmv_portable)))]
    {
        use std::os::unix::io::AsRawFd;
        const SYS_CACHESTAT: libc::c_long = 451;
        #[repr(C)]
        struct Range {
            off: u64,
            len: u64,
        }
        #[repr(C)]
        #[derive(Default)]
        struct CacheStat {
            nr_cache: u64,
            nr_dirty: u64,
            nr_writeback: u64,
            nr_evicted: u64,
            nr_recently_evicted: u64,
        }
        let range = Range { off: offset, len };
        let mut stat = CacheStat::default();
        // SAFETY: cachestat reads `range` and writes `stat`, both live and of the kernel's layout; flags must be 0.
        let rc = unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                f.as_raw_fd(),
                &range as *const Range,
                &mut stat as *mut CacheStat,
                0u32,
            )
        };
        if rc == 0 {
            return stat.nr_cache.saturating_mul(ALIGN as u64) < len / 2;
        }
    }
    let _ = (f, offset, len);
    false
}

/// The file opened for direct reads, if the file system allows them.
#[cfg(all(target_os = "linux", not(dmv_portable)))]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

/// Direct reads are used on Linux only.
#[cfg(not(all(target_os = "linux", not(dmv_portable))))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}

fn reader(
    sources: Vec<IngestSource>,
    params: ChunkParams,
    raw: Sender<Raw>,
    spares: Receiver<Vec<u8>>,
) {
    for (file_no, src) in sources.iter().enumerate() {
        let mut gen = 0;
        loop {
            match read_file(file_no, gen, src, params, &raw, &spares) {
                Ok(true) => break,
                Ok(false) if gen + 1 < TRIES => gen += 1,
                Ok(false) => {
                    let error = StoreError::ChangedWhileReading {
                        path: src.path.clone(),
                        tries: TRIES,
                    };
                    let _ = raw.send(Raw::Failed {
                        file: file_no,
                        error,
                    });
                    break;
                }
                Err(error) => {
                    let _ = raw.send(Raw::Failed {
                        file: file_no,
                        error,
                    });
                    break;
                }
            }
        }
    }
}

/// Cuts the reader's blocks into chunks (the one sequential step besides
/// reading, so it has a thread of its own) and numbers them per file.
fn chunker(params: ChunkParams, raw: Receiver<Raw>, jobs: Sender<Job>) {
    let mut current = (usize::MAX, 0u32);
    let mut carry: Vec<u8> = Vec::new();
    let mut seq = 0u64;
    for msg in raw {
        let job = match msg {
            Raw::Block {
                file,
                gen,
                mut buf,
                at,
                len,
            } => {
                if current != (file, gen) {
                    (current, seq) = ((file, gen), 0);
                    carry.clear();
                }
                let start = at - carry.len();
                buf[start..at].copy_from_slice(&carry);
                let (cuts, used) = cut_run(&buf[..at + len], start, params, false);
                carry.clear();
                carry.extend_from_slice(&buf[used..at + len]);
                let first_seq = seq;
                seq += cuts.len() as u64;
                Job::Chunks {
                    file,
                    gen,
                    first_seq,
                    batch: ChunkBatch {
                        data: std::sync::Arc::new(buf),
                        cuts,
                    },
                }
            }
            Raw::Small { file, gen, data } => {
                (current, seq) = ((file, gen), 1);
                carry.clear();
                Job::Chunks {
                    file,
                    gen,
                    first_seq: 0,
                    batch: ChunkBatch::single(data),
                }
            }
            Raw::End { file, gen, meta } => {
                if current != (file, gen) {
                    (current, seq) = ((file, gen), 0);
                    carry.clear();
                }
                if !carry.is_empty() {
                    let data = std::mem::take(&mut carry);
                    let (cuts, _) = cut_run(&data, 0, params, true);
                    let first_seq = seq;
                    seq += cuts.len() as u64;
                    if jobs
                        .send(Job::Chunks {
                            file,
                            gen,
                            first_seq,
                            batch: ChunkBatch {
                                data: std::sync::Arc::new(data),
                                cuts,
                            },
                        })
                        .is_err()
                    {
                        return;
                    }
                }
                Job::End {
                    file,
                    gen,
                    chunks: seq,
                    meta,
                }
            }
            Raw::Failed { file, error } => Job::Failed { file, error },
        };
        if jobs.send(job).is_err() {
            return;
        }
    }
}

fn hash_chunk(
    store: &crate::Store,
    compressor: &mut zstd::bulk::Compressor<'static>,
    scratch: &mut Vec<u8>,
    data: &[u8],
) -> Hashed {
    let id = ObjectId::hash(ObjectKind::Chunk, data);
    // Re-committing an edited file: most chunks are stored already, skip compressing them.
    if store.contains(&id).unwrap_or(false) {
        Hashed {
            id,
            present: true,
            compressed: None,
        }
    } else {
        let compressed = maybe_compress(compressor, scratch, data).map(|n| scratch[..n].to_vec());
        Hashed {
            id,
            present: false,
            compressed,
        }
    }
}

fn worker(store: &crate::Store, jobs: Receiver<Job>, done: Sender<Done>) {
    let Ok(mut compressor) = zstd::bulk::Compressor::new(1) else {
        return;
    };
    let mut scratch = Vec::new();
    for job in jobs {
        let out = match job {
            Job::Chunks {
                file,
                gen,
                first_seq,
                batch,
            } => {
                let hashed = (0..batch.cuts.len())
                    .map(|i| hash_chunk(store, &mut compressor, &mut scratch, batch.chunk(i)))
                    .collect();
                Done::Chunks {
                    file,
                    gen,
                    first_seq,
                    batch,
                    hashed,
                }
            }
            Job::End {
                file,
                gen,
                chunks,
                meta,
            } => Done::End {
                file,
                gen,
                chunks,
                meta,
            },
            Job::Failed { file, error } => Done::Failed { file, error },
        };
        if done.send(out).is_err() {
            return;
        }
    }
}

/// Up to this many files, while each is one chunk, are stored on the calling
/// thread: a commit of one edited file spent more on starting the pipeline's
/// threads (a reader, a chunker and a worker per core) than on the file.
const ON_THIS_THREAD: usize = 16;

impl WriteSession<'_> {
    /// Stores the given files. Results are in input order; a failed file does
    /// not stop the others (the caller decides whether to record anything).
    pub fn ingest(
        &mut self,
        mut sources: Vec<IngestSource>,
        tally: &Tally<'_>,
    ) -> StoreResult<Vec<StoreResult<Ingested>>> {
        let mut results = Vec::with_capacity(sources.len());
        if sources.len() <= ON_THIS_THREAD {
            self.ingest_small(&sources, &mut results, tally)?;
        }
        let rest = sources.split_off(results.len());
        if !rest.is_empty() {
            results.extend(self.ingest_pipelined(rest, tally)?);
        }
        Ok(results)
    }

    /// Stores files from the first on, on this thread, while each is a
    /// single chunk read unchanged. Any other file (larger, unreadable,
    /// changing) ends it there: the pipeline takes it and the rest, and says
    /// what went wrong or retries.
    fn ingest_small(
        &mut self,
        sources: &[IngestSource],
        results: &mut Vec<StoreResult<Ingested>>,
        tally: &Tally<'_>,
    ) -> StoreResult<()> {
        let params = self.store().params();
        let mut compressor = zstd::bulk::Compressor::new(1)
            .map_err(|e| StoreError::Internal(format!("zstd: {e}")))?;
        let mut scratch = Vec::new();
        for src in sources {
            let read_start = std::time::SystemTime::now();
            let Ok(mut f) = File::open(&src.path) else {
                break;
            };
            let Some(before) = f
                .metadata()
                .ok()
                .filter(|m| m.is_file() && m.len() <= params.min as u64)
            else {
                break;
            };
            crate::trace::count_content_open();
            let Ok(Some(data)) = read_single_chunk(&mut f, params) else {
                break;
            };
            // A file saved just now is stored without waiting for its clock
            // tick to pass (watch mode and `commit -a` right after a save
            // spent ~3 ms here): a write in that tick that tore the read
            // shows in a second one.
            let racy =
                match changed_while_read(&f, &src.path, &before, data.len() as u64, read_start) {
                    Ok(None) => false,
                    Ok(Some(_)) if reads_the_same_again(&f, &src.path, &before, &data, params) => {
                        true
                    }
                    _ => break,
                };
            let h = hash_chunk(self.store(), &mut compressor, &mut scratch, &data);
            self.put_hashed(&h, &data)?;
            tally.add(data.len() as u64);
            results.push(Ok(Ingested {
                id: h.id,
                size: data.len() as u64,
                meta: before,
                racy,
            }));
        }
        Ok(())
    }

    /// Appends a hashed chunk unless it is stored already.
    fn put_hashed(&mut self, h: &Hashed, data: &[u8]) -> StoreResult<()> {
        match &h.compressed {
            Some(c) => self.put_prepared(h.id, ObjectKind::Chunk, data.len(), COMP_ZSTD, c)?,
            None if !h.present => {
                self.put_prepared(h.id, ObjectKind::Chunk, data.len(), COMP_NONE, data)?
            }
            // Found stored already; gc cannot remove it while we hold the session.
            None if self.has(&h.id)? => false,
            None => {
                return Err(StoreError::Internal(format!(
                    "chunk {} vanished during the write",
                    h.id
                )))
            }
        };
        Ok(())
    }

    /// Stores the given files through the threads of the pipeline.
    fn ingest_pipelined(
        &mut self,
        sources: Vec<IngestSource>,
        tally: &Tally<'_>,
    ) -> StoreResult<Vec<StoreResult<Ingested>>> {
        let count = sources.len();
        let params = self.store().params();
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(1, 8);
        // Every message may hold a block (1.25 MiB): these bounds are what keeps memory flat.
        let (raw_tx, raw_rx) = bounded::<Raw>(4);
        let (job_tx, job_rx) = bounded::<Job>(workers * 2);
        let (done_tx, done_rx) = bounded::<Done>(workers * 2);
        // Read buffers come back here once written, so a big file reuses a few.
        let (spare_tx, spare_rx) = bounded::<Vec<u8>>(8);
        let mut results: Vec<Option<StoreResult<Ingested>>> = (0..count).map(|_| None).collect();
        let mut states: HashMap<usize, FileState> = HashMap::new();
        let outcome = std::thread::scope(|scope| -> StoreResult<()> {
            // Owned here so an early error return drops it and unblocks the workers.
            let done_rx = done_rx;
            scope.spawn(move || reader(sources, params, raw_tx, spare_rx));
            scope.spawn(move || chunker(params, raw_rx, job_tx));
            for _ in 0..workers {
                let (rx, tx) = (job_rx.clone(), done_tx.clone());
                let store = self.store();
                scope.spawn(move || worker(store, rx, tx));
            }
            drop(job_rx);
            drop(done_tx);
            for msg in done_rx.iter() {
                let (file, gen) = match &msg {
                    Done::Chunks { file, gen, .. } | Done::End { file, gen, .. } => (*file, *gen),
                    Done::Failed { file, error: _ } => {
                        let file = *file;
                        if let Done::Failed { error, .. } = msg {
                            states.remove(&file);
                            results[file] = Some(Err(error));
                        }
                        continue;
                    }
                };
                let state = states.entry(file).or_default();
                if gen < state.gen {
                    continue;
                }
                if gen > state.gen {
                    *state = FileState {
                        gen,
                        ..FileState::default()
                    };
                }
                match msg {
                    Done::Chunks {
                        first_seq,
                        batch,
                        hashed,
                        ..
                    } => {
                        for (i, h) in hashed.into_iter().enumerate() {
                            let data = batch.chunk(i);
                            self.put_hashed(&h, data)?;
                            tally.add(data.len() as u64);
                            state.reorder.insert(
                                first_seq + i as u64,
                                NodeEntry {
                                    id: h.id,
                                    size: data.len() as u64,
                                },
                            );
                        }
                        if let Ok(buffer) = std::sync::Arc::try_unwrap(batch.data) {
                            let _ = spare_tx.try_send(buffer);
                        }
                    }
                    Done::End { chunks, meta, .. } => {
                        state.expected = Some(chunks);
                        state.meta = Some(meta);
                    }
                    Done::Failed { .. } => {}
                }
                // Feed the chunk list in order as far as it is contiguous.
                let Some(state) = states.get_mut(&file) else {
                    continue;
                };
                while let Some(entry) = state.reorder.remove(&state.next_seq) {
                    state.size += entry.size;
                    state.list.push(self, entry)?;
                    state.next_seq += 1;
                }
                if state.expected == Some(state.next_seq) {
                    let Some(state) = states.remove(&file) else {
                        continue;
                    };
                    let id = match state.list.single_leaf() {
                        Some(only) => only.id,
                        None => state.list.finish(self)?.id,
                    };
                    let meta = state.meta.ok_or_else(|| {
                        StoreError::Internal("a file was written without its metadata".into())
                    })?;
                    // The reader waited for a file stamped within a tick of its read to settle.
                    results[file] = Some(Ok(Ingested {
                        id,
                        size: state.size,
                        meta: *meta,
                        racy: false,
                    }));
                }
            }
            Ok(())
        });
        outcome?;
        Ok(results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(StoreError::Internal("a file was not processed".into())))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Chunker;

    /// The block-and-carry chunker thread cuts exactly where the streaming chunker does.
    #[test]
    fn chunker_thread_cuts_like_the_streaming_chunker() {
        let params = ChunkParams::default();
        // xorshift noise: content-defined cuts at data-dependent places, so
        // chunks straddle block ends and the carry between blocks is used.
        let mut x = 0x1234_5678_9abc_def1u64;
        let data: Vec<u8> = (0..(4 * BLOCK + 777_777))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut expected = Vec::new();
        let mut c = Chunker::new(&data[..], params);
        while let Some(ch) = c.next_chunk().unwrap() {
            expected.push(ch.to_vec());
        }
        let (raw_tx, raw_rx) = bounded(64);
        let (job_tx, job_rx) = bounded(1024);
        let head = params.max as usize;
        for block in data.chunks(BLOCK) {
            let mut buf = vec![0; head + BLOCK];
            buf[head..head + block.len()].copy_from_slice(block);
            raw_tx
                .send(Raw::Block {
                    file: 0,
                    gen: 0,
                    buf,
                    at: head,
                    len: block.len(),
                })
                .unwrap();
        }
        let meta = Box::new(std::fs::metadata("/").unwrap());
        raw_tx
            .send(Raw::End {
                file: 0,
                gen: 0,
                meta,
            })
            .unwrap();
        drop(raw_tx);
        chunker(params, raw_rx, job_tx);
        let mut got = Vec::new();
        let mut count = None;
        // Chunks cut from the carried tail of the previous block plus the
        // start of this one.
        let mut from_carry = 0;
        for job in job_rx {
            match job {
                Job::Chunks {
                    first_seq, batch, ..
                } => {
                    assert_eq!(first_seq, got.len() as u64);
                    // Block buffers hold the carry in the `head` bytes before the block.
                    if batch.data.len() == head + BLOCK {
                        from_carry += batch
                            .cuts
                            .iter()
                            .filter(|c| c.start < head && head < c.end)
                            .count();
                    }
                    got.extend((0..batch.cuts.len()).map(|i| batch.chunk(i).to_vec()));
                }
                Job::End { chunks, .. } => count = Some(chunks),
                Job::Failed { .. } => panic!("failed"),
            }
        }
        assert_eq!(count, Some(expected.len() as u64));
        assert!(
            got == expected,
            "block chunking differs from streaming chunking"
        );
        // Cuts are content-defined: most chunks are shorter than max.
        let short = expected
            .iter()
            .filter(|c| c.len() < params.max as usize)
            .count();
        assert!(
            short * 4 >= expected.len() * 3,
            "only {short} of {} chunks are shorter than max",
            expected.len()
        );
        // Some chunks straddle a block end: they were cut from the carry plus the next block.
        let mut at = 0;
        let straddling = expected
            .iter()
            .filter(|c| {
                let (s, e) = (at, at + c.len());
                at = e;
                (1..=data.len() / BLOCK).any(|k| s < k * BLOCK && k * BLOCK < e)
            })
            .count();
        assert!(
            straddling >= 3,
            "only {straddling} chunks span a block boundary"
        );
        assert_eq!(
            from_carry, straddling,
            "every chunk spanning a block end is cut from the carry and the next block"
        );
    }
}
