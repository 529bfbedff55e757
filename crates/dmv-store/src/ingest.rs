//! Storing working-tree files: one reader thread chunks files in order, worker
//! threads hash and compress chunks, and the calling thread (the only pack
//! writer) deduplicates, appends, and assembles each file's chunk list.
//! Bounded channels between the stages keep memory constant in file size.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::chunker::read_single_chunk;
use crate::nodes::{FileList, ListBuilder};
use crate::object::NodeEntry;
use crate::pack::{COMP_NONE, COMP_ZSTD};
use crate::store::maybe_compress;
use crate::{ChunkParams, Chunker, ObjectId, ObjectKind, StoreError, StoreResult, WriteSession};

/// A file to store, by path.
#[derive(Clone, Debug)]
pub struct IngestSource {
    pub path: PathBuf,
}

/// A stored file: its content id, size, and the stat taken when it was read
/// (verified unchanged after reading), for the dirstate.
#[derive(Clone, Debug)]
pub struct Ingested {
    pub id: ObjectId,
    pub size: u64,
    pub meta: Metadata,
}

const TRIES: u32 = 4;

/// File timestamps come from the kernel's coarse clock (one tick, 1-10 ms), so
/// several writes within one tick leave the stat unchanged. A file whose mtime
/// is this close to (or after) the start of our read may have changed during it.
const TIMESTAMP_GRANULARITY: std::time::Duration = std::time::Duration::from_millis(10);

fn modified_since(meta: &Metadata, read_start: std::time::SystemTime) -> bool {
    match meta.modified() {
        Ok(m) => m + TIMESTAMP_GRANULARITY >= read_start,
        Err(_) => true,
    }
}

enum Job {
    Chunk { file: usize, gen: u32, seq: u64, data: Vec<u8> },
    /// All chunks of this generation have been sent.
    End { file: usize, gen: u32, chunks: u64, meta: Box<Metadata> },
    Failed { file: usize, error: StoreError },
}

enum Done {
    Chunk { file: usize, gen: u32, seq: u64, id: ObjectId, raw_len: usize, compressed: Option<Vec<u8>>, data: Vec<u8> },
    End { file: usize, gen: u32, chunks: u64, meta: Box<Metadata> },
    Failed { file: usize, error: StoreError },
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
    a.len() == b.len() && a.mtime() == b.mtime() && a.mtime_nsec() == b.mtime_nsec() && a.ino() == b.ino() && a.ctime() == b.ctime() && a.ctime_nsec() == b.ctime_nsec()
}

/// Reads one file, sending its chunks; returns false when it changed underneath.
fn read_file(file_no: usize, gen: u32, src: &IngestSource, params: ChunkParams, jobs: &Sender<Job>) -> Result<bool, StoreError> {
    let path = &src.path;
    let read_start = std::time::SystemTime::now();
    crate::trace::count_content_open();
    let mut f = File::open(path).map_err(|e| StoreError::io(path, e))?;
    let before = f.metadata().map_err(|e| StoreError::io(path, e))?;
    if !before.is_file() {
        return Err(StoreError::Other(format!("{} is not a regular file", path.display())));
    }
    let mut seq = 0u64;
    let mut total = 0u64;
    if before.len() <= params.min as u64 {
        // Small files are one chunk: skip the chunker's large buffer.
        let Some(data) = read_single_chunk(&mut f, params).map_err(|e| StoreError::io(path, e))? else {
            return Ok(false);
        };
        total = data.len() as u64;
        if jobs.send(Job::Chunk { file: file_no, gen, seq, data }).is_err() {
            return Ok(true);
        }
        seq += 1;
    } else {
        let mut chunker = Chunker::new(&mut f, params);
        while let Some(chunk) = chunker.next_chunk().map_err(|e| StoreError::io(path, e))? {
            total += chunk.len() as u64;
            if jobs.send(Job::Chunk { file: file_no, gen, seq, data: chunk.to_vec() }).is_err() {
                return Ok(true);
            }
            seq += 1;
        }
        if seq == 0 {
            // The file shrank to nothing while we read it.
            return Ok(false);
        }
    }
    let after = f.metadata().map_err(|e| StoreError::io(path, e))?;
    // Also compare with the path's current stat: a file replaced by rename keeps our fd valid.
    let now = std::fs::symlink_metadata(path).map_err(|e| StoreError::io(path, e))?;
    if !same_stat(&before, &after) || !same_stat(&before, &now) || total != before.len() || modified_since(&after, read_start) {
        std::thread::sleep(TIMESTAMP_GRANULARITY * 2);
        return Ok(false);
    }
    let _ = jobs.send(Job::End { file: file_no, gen, chunks: seq, meta: Box::new(before) });
    Ok(true)
}

fn reader(sources: Vec<IngestSource>, params: ChunkParams, jobs: Sender<Job>) {
    for (file_no, src) in sources.iter().enumerate() {
        let mut gen = 0;
        loop {
            match read_file(file_no, gen, src, params, &jobs) {
                Ok(true) => break,
                Ok(false) if gen + 1 < TRIES => gen += 1,
                Ok(false) => {
                    let error = StoreError::ChangedWhileReading { path: src.path.clone(), tries: TRIES };
                    let _ = jobs.send(Job::Failed { file: file_no, error });
                    break;
                }
                Err(error) => {
                    let _ = jobs.send(Job::Failed { file: file_no, error });
                    break;
                }
            }
        }
    }
}

fn worker(store: &crate::Store, jobs: Receiver<Job>, done: Sender<Done>) {
    let Ok(mut compressor) = zstd::bulk::Compressor::new(1) else { return };
    let mut scratch = Vec::new();
    for job in jobs {
        let out = match job {
            Job::Chunk { file, gen, seq, data } => {
                let id = ObjectId::hash(ObjectKind::Chunk, &data);
                // Re-committing an edited file: most chunks are stored already, skip compressing them.
                if store.contains(&id).unwrap_or(false) {
                    Done::Chunk { file, gen, seq, id, raw_len: data.len(), compressed: None, data: Vec::new() }
                } else {
                    let compressed = maybe_compress(&mut compressor, &mut scratch, &data).map(|n| scratch[..n].to_vec());
                    Done::Chunk { file, gen, seq, id, raw_len: data.len(), compressed, data }
                }
            }
            Job::End { file, gen, chunks, meta } => Done::End { file, gen, chunks, meta },
            Job::Failed { file, error } => Done::Failed { file, error },
        };
        if done.send(out).is_err() {
            return;
        }
    }
}

impl WriteSession<'_> {
    /// Stores the given files. Results are in input order; a failed file does
    /// not stop the others (the caller decides whether to record anything).
    pub fn ingest(&mut self, sources: Vec<IngestSource>, progress: &dyn Fn(u64)) -> StoreResult<Vec<StoreResult<Ingested>>> {
        let count = sources.len();
        let params = self.store().params();
        let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 8);
        let (job_tx, job_rx) = bounded::<Job>(workers * 4);
        let (done_tx, done_rx) = bounded::<Done>(workers * 4);
        let mut results: Vec<Option<StoreResult<Ingested>>> = (0..count).map(|_| None).collect();
        let mut states: HashMap<usize, FileState> = HashMap::new();
        let outcome = std::thread::scope(|scope| -> StoreResult<()> {
            // Owned here so an early error return drops it and unblocks the workers.
            let done_rx = done_rx;
            scope.spawn(move || reader(sources, params, job_tx));
            for _ in 0..workers {
                let (rx, tx) = (job_rx.clone(), done_tx.clone());
                let store = self.store();
                scope.spawn(move || worker(store, rx, tx));
            }
            drop(job_rx);
            drop(done_tx);
            for msg in done_rx.iter() {
                let (file, gen) = match &msg {
                    Done::Chunk { file, gen, .. } | Done::End { file, gen, .. } => (*file, *gen),
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
                    *state = FileState { gen, ..FileState::default() };
                }
                match msg {
                    Done::Chunk { seq, id, raw_len, compressed, data, .. } => {
                        match compressed {
                            Some(c) => self.put_prepared(id, ObjectKind::Chunk, raw_len, COMP_ZSTD, &c)?,
                            None if data.len() == raw_len => self.put_prepared(id, ObjectKind::Chunk, raw_len, COMP_NONE, &data)?,
                            // A worker found it stored already; gc cannot remove it while we hold the session.
                            None if self.has(&id)? => false,
                            None => return Err(StoreError::Other(format!("internal error: chunk {id} vanished during the write"))),
                        };
                        progress(raw_len as u64);
                        state.reorder.insert(seq, NodeEntry { id, size: raw_len as u64 });
                    }
                    Done::End { chunks, meta, .. } => {
                        state.expected = Some(chunks);
                        state.meta = Some(meta);
                    }
                    Done::Failed { .. } => {}
                }
                // Feed the chunk list in order as far as it is contiguous.
                let Some(state) = states.get_mut(&file) else { continue };
                while let Some(entry) = state.reorder.remove(&state.next_seq) {
                    state.size += entry.size;
                    state.list.push(self, entry)?;
                    state.next_seq += 1;
                }
                if state.expected == Some(state.next_seq) {
                    let Some(state) = states.remove(&file) else { continue };
                    let id = match state.list.single_leaf() {
                        Some(only) => only.id,
                        None => state.list.finish(self)?.id,
                    };
                    let meta = state.meta.ok_or_else(|| StoreError::Other("missing stat".into()))?;
                    results[file] = Some(Ok(Ingested { id, size: state.size, meta: *meta }));
                }
            }
            Ok(())
        });
        outcome?;
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(StoreError::Other("internal error: file was not processed".into()))))
            .collect())
    }
}
