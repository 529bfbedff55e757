//! Reading part of a file version, as a mount's reads ask: the file's
//! layout (where each chunk starts) once per open, then only the chunks a
//! read touches. In a partial replica what is not here is fetched (nodes
//! at open, chunks at read, with read-ahead once reads run in order) and
//! kept, so a second read is local.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use dmv_repo::store::{ObjectId, ObjectKind, StoreError};
use dmv_repo::Repository;
use dmv_sync::PieceFetcher;

/// Read-ahead grows with a run of reads in order, to at most this: each
/// fetch is a round trip and a pack written and listed, so a copy of a film
/// is fetched in few large pieces (8 MiB: 47% of `dmv cat`'s speed in a
/// meta replica over HTTP, 64 MiB: 86%).
const MOST_AHEAD: u64 = 64 << 20;
/// ...once the run is longer than this: a player's seek reads a MiB or so
/// in order (the kernel splits it), and should fetch no more than that.
const FETCH_AHEAD_AFTER: u64 = 2 << 20;
/// Chunks read and checked, kept for the next reads (the kernel reads a
/// chunk in several requests, and reads in order find the chunks read
/// ahead here): with chunks of at most 256 KiB, 16 MiB at most.
const CHUNKS_KEPT: usize = 64;
/// Once this much was read in order, the next chunks are read and checked
/// on a thread of their own while the kernel takes the last reply.
const DECODE_AHEAD_AFTER: u64 = 512 << 10;
const DECODE_AHEAD: u64 = 2 << 20;
/// Chunks fetched and not read yet are handed over as they arrive, up to
/// this many bytes: a film read through the mount is otherwise written to
/// the store, read back and hashed again. Half the most read ahead: the
/// next piece is asked for once reads pass the near half of the last one.
/// A 1 GiB absent film read with `cat`: 1.7-2.2 s against 3.1-3.5 s, the
/// mount's CPU 1.5-1.8 s against 2.9-3.1, its peak RSS 85 MiB as before
/// (the whole read ahead, 64 MiB: no faster, 112 MiB).
const FRESH_BYTES: u64 = MOST_AHEAD / 2;

/// A file version open for reading.
pub struct OpenFile {
    pub id: ObjectId,
    /// Its path in the mount, for messages and for asking other replicas.
    pub path: String,
    /// Each chunk and where it starts, in order.
    chunks: Vec<(ObjectId, u64)>,
    len: u64,
    /// Where the last read ended, and how many bytes ran in order up to it.
    order: Mutex<(u64, u64)>,
    /// The chunk up to which fetches were asked for, to fetch what lies
    /// ahead once while reads go on.
    asked: Mutex<usize>,
}

impl OpenFile {
    /// The indexes of the chunks holding bytes `from..to`.
    fn span(&self, from: u64, to: u64) -> std::ops::Range<usize> {
        let first = self
            .chunks
            .partition_point(|(_, start)| *start <= from)
            .saturating_sub(1);
        let end = self.chunks.partition_point(|(_, start)| *start < to);
        first..end.max(first)
    }

    fn chunk_len(&self, i: usize) -> u64 {
        self.chunks.get(i + 1).map_or(self.len, |(_, next)| *next) - self.chunks[i].1
    }
}

/// What a read answers: part of one chunk as kept (most reads: the kernel
/// asks 128 KiB at a time, within a chunk), or the parts of several joined.
pub enum ReadBytes {
    Part(Arc<Vec<u8>>, std::ops::Range<usize>),
    Joined(Vec<u8>),
}

impl ReadBytes {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            ReadBytes::Part(chunk, range) => &chunk[range.clone()],
            ReadBytes::Joined(bytes) => bytes,
        }
    }
}

/// Reads files of one repository; shared by the mount's threads.
pub struct Reader {
    repo: &'static Repository,
    fetcher: FetchThread,
    kept: Arc<Kept>,
    fresh: Arc<Fresh>,
    /// Chunks for the decode-ahead thread to read into `kept`.
    decode_ahead: mpsc::SyncSender<ObjectId>,
}

impl Reader {
    pub fn new(repo: &'static Repository, fetched: Arc<AtomicU64>) -> Reader {
        let kept = Arc::new(Kept::default());
        let fresh = Arc::new(Fresh::default());
        let (decode_ahead, to_decode) = mpsc::sync_channel::<ObjectId>(256);
        let (keeping, fetched_here) = (kept.clone(), fresh.clone());
        std::thread::spawn(move || {
            for id in to_decode {
                // A chunk not here (a partial replica's) is left for the read that needs it.
                if keeping.get(&id).is_none() && !fetched_here.contains(&id) {
                    if let Ok(bytes) = repo.store.read_kind(&id, ObjectKind::Chunk) {
                        keeping.put(id, Arc::new(bytes));
                    }
                }
            }
        });
        Reader {
            repo,
            fetcher: FetchThread::start(repo, fetched, fresh.clone()),
            kept,
            fresh,
            decode_ahead,
        }
    }

    /// Opens file version `id` of `size` bytes: its layout from its nodes,
    /// fetched first in a partial replica that lacks them.
    pub fn open(&self, id: ObjectId, size: u64, path: String) -> Result<OpenFile, String> {
        let store = &self.repo.store;
        let chunks = match store.chunk_list(&id) {
            Ok(list) => list,
            Err(StoreError::NotFound { .. }) if self.repo.is_partial() => {
                self.fetcher.ask(Ask::Nodes {
                    file: id,
                    path: path.clone(),
                })?;
                match store.chunk_list(&id) {
                    Ok(list) => list,
                    // Still not here after its holder answered: a file of one chunk, which has no nodes.
                    Err(StoreError::NotFound { id: missing }) if missing == id => vec![(id, size)],
                    Err(e) => return Err(e.to_string()),
                }
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut at = 0;
        let chunks: Vec<(ObjectId, u64)> = chunks
            .into_iter()
            .map(|(chunk, len)| {
                let start = at;
                at += len;
                (chunk, start)
            })
            .collect();
        if at != size {
            return Err(format!(
                "its chunks hold {at} bytes where its tree says {size}"
            ));
        }
        Ok(OpenFile {
            id,
            path,
            chunks,
            len: at,
            order: Mutex::new((u64::MAX, 0)),
            asked: Mutex::new(0),
        })
    }

    /// Up to `want` bytes of `file` from `offset`. The kernel's reads of one
    /// file may come at once, on several threads: each reads its own chunks.
    pub fn read(&self, file: &OpenFile, offset: u64, want: u32) -> Result<ReadBytes, String> {
        let to = offset.saturating_add(u64::from(want)).min(file.len);
        if offset >= to {
            return Ok(ReadBytes::Joined(Vec::new()));
        }
        let in_order = {
            let mut order = file.order.lock().unwrap_or_else(|e| e.into_inner());
            let (last_end, in_order) = *order;
            *order = (
                to,
                if offset == last_end {
                    in_order + (to - offset)
                } else {
                    to - offset
                },
            );
            order.1
        };
        let span = file.span(offset, to);
        if self.repo.is_partial() {
            // Reads in order fetch ahead half as much as they have read so far
            // (past the first 2 MiB): a player's seek fetches little more than it reads, a copy runs ahead.
            // A read that misses waits for one round trip that takes it and all
            // that lies ahead. Once the reads pass the near half of what was
            // asked for, the rest ahead is asked for without waiting: the
            // next piece arrives while the kernel takes this one.
            let ahead = if in_order > FETCH_AHEAD_AFTER {
                (in_order / 2).min(MOST_AHEAD)
            } else {
                0
            };
            let near_end = file
                .span(to, to.saturating_add(ahead / 2).min(file.len))
                .end;
            let ahead_end = file.span(to, to.saturating_add(ahead).min(file.len)).end;
            let mut asked = file.asked.lock().unwrap_or_else(|e| e.into_inner());
            if !self.missing(file, span.clone())?.is_empty() {
                *asked = ahead_end.max(span.end);
                drop(asked);
                // A read that waits is a seek or a new file: what reads before
                // it left unread is not wanted next.
                self.fresh.clear();
                self.fetch_missing(file, span.start..ahead_end.max(span.end))?;
            } else if near_end > *asked {
                let missing = self.missing(file, span.end.max(*asked)..ahead_end.max(span.end))?;
                *asked = ahead_end.max(span.end);
                drop(asked);
                if !missing.is_empty() {
                    self.fetcher.ask_later(Ask::Chunks {
                        file: file.id,
                        path: file.path.clone(),
                        chunks: missing,
                    });
                }
            }
        }
        if in_order >= DECODE_AHEAD_AFTER {
            for (chunk, _) in
                &file.chunks[file.span(to, to.saturating_add(DECODE_AHEAD).min(file.len))]
            {
                if self.kept.get(chunk).is_none()
                    && !self.fresh.contains(chunk)
                    && self.decode_ahead.try_send(*chunk).is_err()
                {
                    break;
                }
            }
        }
        let single = span.len() == 1;
        let mut out = Vec::with_capacity(if single { 0 } else { (to - offset) as usize });
        for i in span {
            let (chunk, start) = file.chunks[i];
            let bytes = match self.chunk(&chunk) {
                // Gone since it was looked for (a drop, a gc moving it while the
                // indexes were listed again): looked for anew, and in a partial
                // replica fetched again.
                Err(StoreError::NotFound { .. }) => {
                    self.repo.store.reload().map_err(|e| e.to_string())?;
                    if self.repo.is_partial() {
                        self.fetch_missing(file, i..i + 1)?;
                    }
                    self.chunk(&chunk).map_err(|e| e.to_string())?
                }
                other => other.map_err(|e| e.to_string())?,
            };
            if bytes.len() as u64 != file.chunk_len(i) {
                return Err(format!(
                    "chunk {} holds {} bytes where its file node says {}",
                    chunk.short(),
                    bytes.len(),
                    file.chunk_len(i)
                ));
            }
            let from = offset.max(start) - start;
            let until = to.min(start + bytes.len() as u64) - start;
            if single {
                // Handed to the kernel from the chunk as kept: no copy here.
                return Ok(ReadBytes::Part(bytes, from as usize..until as usize));
            }
            out.extend_from_slice(&bytes[from as usize..until as usize]);
        }
        Ok(ReadBytes::Joined(out))
    }

    /// Fetches the chunks of `range` that are not here.
    fn fetch_missing(&self, file: &OpenFile, range: std::ops::Range<usize>) -> Result<(), String> {
        let missing = self.missing(file, range)?;
        if missing.is_empty() {
            return Ok(());
        }
        self.fetcher.ask(Ask::Chunks {
            file: file.id,
            path: file.path.clone(),
            chunks: missing,
        })?;
        Ok(())
    }

    /// The chunks of `range` that are neither here nor arrived.
    fn missing(
        &self,
        file: &OpenFile,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<ObjectId>, String> {
        let mut missing = Vec::new();
        for (chunk, _) in &file.chunks[range] {
            if !missing.contains(chunk)
                && !self.fresh.contains(chunk)
                && !self.repo.store.contains(chunk).map_err(|e| e.to_string())?
            {
                missing.push(*chunk);
            }
        }
        Ok(missing)
    }

    /// A chunk's bytes, from those kept, those just fetched, or the store.
    fn chunk(&self, id: &ObjectId) -> Result<Arc<Vec<u8>>, StoreError> {
        if let Some(bytes) = self.kept.get(id) {
            return Ok(bytes);
        }
        if let Some(bytes) = self.fresh.take(id) {
            self.kept.put(*id, bytes.clone());
            return Ok(bytes);
        }
        let bytes = Arc::new(self.repo.store.read_kind(id, ObjectKind::Chunk)?);
        self.kept.put(*id, bytes.clone());
        Ok(bytes)
    }

    /// A symlink's target.
    pub fn link_target(&self, id: &ObjectId) -> Result<Vec<u8>, String> {
        self.repo
            .store
            .read_kind(id, ObjectKind::Chunk)
            .map_err(|e| e.to_string())
    }
}

/// What the fetch thread is asked to make present here.
enum Ask {
    Nodes {
        file: ObjectId,
        path: String,
    },
    Chunks {
        file: ObjectId,
        path: String,
        chunks: Vec<ObjectId>,
    },
}

/// The thread that owns the connections to other replicas (a connection
/// stays on the thread that made it), answering the mount's threads one
/// ask at a time.
struct FetchThread {
    asks: mpsc::Sender<(Ask, mpsc::Sender<Result<u64, String>>)>,
}

impl FetchThread {
    /// The thread, counting the chunk bytes it receives in `fetched`, and
    /// handing the chunks over in `fresh` as they arrive.
    fn start(repo: &'static Repository, fetched: Arc<AtomicU64>, fresh: Arc<Fresh>) -> FetchThread {
        let (asks, asked) = mpsc::channel::<(Ask, mpsc::Sender<Result<u64, String>>)>();
        std::thread::spawn(move || {
            let mut fetcher = PieceFetcher::new(repo);
            for (ask, answer) in asked {
                let done = match ask {
                    Ask::Nodes { file, path } => {
                        fetcher.fetch_nodes(&file, path.as_bytes()).map(|()| 0)
                    }
                    Ask::Chunks { file, path, chunks } => {
                        // Another thread's read may have fetched some meanwhile (asks wait their turn here).
                        let still: Vec<ObjectId> = chunks
                            .into_iter()
                            .filter(|c| !repo.store.contains(c).unwrap_or(false))
                            .collect();
                        match still.is_empty() {
                            true => Ok(0),
                            false => fetcher.fetch_chunks(
                                &file,
                                path.as_bytes(),
                                &still,
                                &mut |id, content| fresh.put(id, content),
                            ),
                        }
                    }
                };
                // What was written is looked up by the listed indexes: list them again, once.
                let _ = repo.store.reload();
                if let Ok(bytes) = done {
                    fetched.fetch_add(bytes, Ordering::Relaxed);
                }
                // Nobody waits for an ask made for later.
                let _ = answer.send(done.map_err(|e| e.to_string()));
            }
        });
        FetchThread { asks }
    }

    /// Asks without waiting; a failure is for the read that then misses to meet.
    fn ask_later(&self, ask: Ask) {
        let (answer, _) = mpsc::channel();
        let _ = self.asks.send((ask, answer));
    }

    /// Chunk bytes received.
    fn ask(&self, ask: Ask) -> Result<u64, String> {
        let (answer, answered) = mpsc::channel();
        self.asks
            .send((ask, answer))
            .map_err(|_| "the fetch thread has ended".to_string())?;
        answered
            .recv()
            .map_err(|_| "the fetch thread has ended".to_string())?
    }
}

/// The chunks kept, newest last.
#[derive(Default)]
struct Kept {
    chunks: Mutex<VecDeque<(ObjectId, Arc<Vec<u8>>)>>,
}

impl Kept {
    fn get(&self, id: &ObjectId) -> Option<Arc<Vec<u8>>> {
        self.chunks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, bytes)| bytes.clone())
    }

    fn put(&self, id: ObjectId, bytes: Arc<Vec<u8>>) {
        let mut chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        if chunks.iter().any(|(k, _)| *k == id) {
            return;
        }
        if chunks.len() == CHUNKS_KEPT {
            chunks.pop_front();
        }
        chunks.push_back((id, bytes));
    }
}

/// Chunks fetched and not read yet, at most [`FRESH_BYTES`] of them (a
/// fetch past that leaves the rest to be read from the store). A read
/// takes its chunk out, into [`Kept`].
#[derive(Default)]
struct Fresh {
    chunks: Mutex<FreshChunks>,
}

#[derive(Default)]
struct FreshChunks {
    by_id: HashMap<ObjectId, Arc<Vec<u8>>>,
    bytes: u64,
}

impl Fresh {
    fn lock(&self) -> std::sync::MutexGuard<'_, FreshChunks> {
        self.chunks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, id: ObjectId, content: Vec<u8>) {
        let mut fresh = self.lock();
        let len = content.len() as u64;
        if fresh.bytes + len > FRESH_BYTES || fresh.by_id.contains_key(&id) {
            return;
        }
        fresh.by_id.insert(id, Arc::new(content));
        fresh.bytes += len;
    }

    fn take(&self, id: &ObjectId) -> Option<Arc<Vec<u8>>> {
        let mut fresh = self.lock();
        let taken = fresh.by_id.remove(id)?;
        fresh.bytes -= taken.len() as u64;
        Some(taken)
    }

    fn contains(&self, id: &ObjectId) -> bool {
        self.lock().by_id.contains_key(id)
    }

    fn clear(&self) {
        *self.lock() = FreshChunks::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_chunks_stay_within_their_budget_and_are_taken_once() {
        let fresh = Fresh::default();
        let id = |i: u8| ObjectId([i; 32]);
        let quarter = (FRESH_BYTES / 4) as usize;
        for i in 0..5 {
            fresh.put(id(i), vec![i; quarter]);
        }
        assert!(fresh.contains(&id(3)));
        assert!(
            !fresh.contains(&id(4)),
            "past the budget: left to the store"
        );
        assert_eq!(
            fresh.take(&id(0)).unwrap().as_slice(),
            &vec![0; quarter][..]
        );
        assert!(fresh.take(&id(0)).is_none(), "taken once");
        fresh.put(id(4), vec![4; quarter]);
        assert!(fresh.contains(&id(4)), "room again once a chunk was read");
        fresh.clear();
        assert!(!fresh.contains(&id(4)));
    }
}
