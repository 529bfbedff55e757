//! Reading part of a file version, as a mount's reads ask: the file's
//! layout (where each chunk starts) once per open, then only the chunks a
//! read touches. In a partial replica what is not here is fetched (nodes
//! at open, chunks at read, with read-ahead once reads run in order) and
//! kept, so a second read is local.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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
/// A read that overtakes the fetch waits for its chunk to arrive, not for
/// the piece to be stored, and a fetch that finds no room waits for the
/// reads to take what they were handed: a 1 GiB absent film read with
/// `cat` reads nothing back from the store (700 MB read back before, as a
/// read waited for the whole piece while the rest of it arrived), 0.80 of
/// the time it took, and as fast as `dmv get` of it (paired, 0.96).
const FRESH_BYTES: u64 = MOST_AHEAD / 2;
/// How long a fetch waits for a read to make room among the chunks handed
/// over before it leaves the rest to the store (the reader stopped).
const ROOM_WAIT: Duration = Duration::from_millis(100);
/// Chunks of whole files fetched ahead of their reader (see [`Bringing`])
/// kept in memory until read, at most this many bytes, the oldest let go
/// first: two batches of a folder fetched ahead.
const BROUGHT_BYTES: u64 = 32 << 20;

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
    brought: Arc<Brought>,
    /// Chunks for the decode-ahead thread to read into `kept`.
    decode_ahead: mpsc::SyncSender<ObjectId>,
}

/// Where a fetch of whole files ahead of their reader (a `cp -r` of a
/// folder of absent photos) hands each chunk as it arrives, checked: the
/// open that follows gives the kernel the file from memory, not read back
/// from the pack just written past the page cache and hashed again (140
/// us of a 50 KiB photo's open here, most of it waiting for the disk).
#[derive(Clone)]
pub struct Bringing(Arc<Brought>);

impl Bringing {
    /// Chunk `id`, checked against its id, has arrived.
    pub fn arrived(&self, id: &ObjectId, content: &[u8]) {
        self.0.put(*id, content);
    }
}

impl Reader {
    pub fn new(repo: &'static Repository, fetched: Arc<AtomicU64>) -> Reader {
        let kept = Arc::new(Kept::default());
        let fresh = Arc::new(Fresh::new(ROOM_WAIT));
        let (decode_ahead, to_decode) = mpsc::sync_channel::<ObjectId>(256);
        let (keeping, fetched_here) = (kept.clone(), fresh.clone());
        std::thread::spawn(move || {
            for id in to_decode {
                // A chunk not here (a partial replica's) is left for the read that needs it.
                if keeping.get(&id).is_none() && !fetched_here.arrived_or_coming(&id) {
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
            brought: Arc::new(Brought::new(BROUGHT_BYTES)),
            decode_ahead,
        }
    }

    /// Where a fetch ahead of the reads hands what it brings.
    pub fn bringing(&self) -> Bringing {
        Bringing(self.brought.clone())
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
            // A read that overtakes the fetch of what lies ahead waits for its
            // chunks to arrive, not for the whole piece to be stored, and takes
            // them as they come: a copy of a film stays a chunk behind the
            // network, and what it reads is never read back from the store.
            self.fresh
                .await_coming(file.chunks[span.clone()].iter().map(|(c, _)| c));
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
                    && !self.fresh.arrived_or_coming(chunk)
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
                    // Or taken as it arrived and since let go, its piece not
                    // stored yet: stored once its ask is done.
                    self.fresh.await_stored(&chunk);
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

    /// The chunks of `range` that are neither here, nor arrived, nor on
    /// their way.
    fn missing(
        &self,
        file: &OpenFile,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<ObjectId>, String> {
        let mut missing = Vec::new();
        for (chunk, _) in &file.chunks[range] {
            if !missing.contains(chunk)
                && !self.fresh.arrived_or_coming(chunk)
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
        if let Some(bytes) = self.fresh.take(id).or_else(|| self.brought.take(id)) {
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

/// An ask, and where its answer goes: the chunk bytes received, or why not.
type Asked = (Ask, mpsc::Sender<Result<u64, String>>);

/// The thread that owns the connections to other replicas (a connection
/// stays on the thread that made it), answering the mount's threads one
/// ask at a time.
struct FetchThread {
    asks: Option<mpsc::Sender<Asked>>,
    fresh: Arc<Fresh>,
    /// Set as the mount ends: the asks still queued are let go.
    ending: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The mount ends once the ask being fetched is stored: a reader may
/// have been handed its chunks as they came, and a process ending
/// mid-fetch lost them (a film read whole through one mount was partly
/// fetched again by the next). The asks queued after it are let go.
impl Drop for FetchThread {
    fn drop(&mut self) {
        self.ending.store(true, Ordering::Relaxed);
        self.asks.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl FetchThread {
    /// The thread, counting the chunk bytes it receives in `fetched`, and
    /// handing the chunks over in `fresh` as they arrive.
    fn start(repo: &'static Repository, fetched: Arc<AtomicU64>, fresh: Arc<Fresh>) -> FetchThread {
        let (asks, asked) = mpsc::channel::<Asked>();
        let handed = fresh.clone();
        let ending = Arc::new(AtomicBool::new(false));
        let ended = ending.clone();
        let thread = std::thread::spawn(move || {
            /// Wakes the reads waiting on this thread however it ends.
            struct Ending(Arc<Fresh>);
            impl Drop for Ending {
                fn drop(&mut self) {
                    self.0.end();
                }
            }
            let _ending = Ending(handed.clone());
            let mut fetcher = PieceFetcher::new(repo);
            for (ask, answer) in asked {
                if ended.load(Ordering::Relaxed) {
                    if let Ask::Chunks { chunks, .. } = &ask {
                        handed.settle(chunks);
                    }
                    let _ = answer.send(Err("the mount is ending".into()));
                    continue;
                }
                let mut settled = Vec::new();
                let done = match ask {
                    Ask::Nodes { file, path } => {
                        fetcher.fetch_nodes(&file, path.as_bytes()).map(|()| 0)
                    }
                    Ask::Chunks { file, path, chunks } => {
                        // Another thread's read may have fetched some meanwhile (asks wait their turn here).
                        let still: Vec<ObjectId> = chunks
                            .iter()
                            .filter(|c| !repo.store.contains(c).unwrap_or(false))
                            .copied()
                            .collect();
                        settled = chunks;
                        match still.is_empty() {
                            true => Ok(0),
                            false => fetcher.fetch_chunks(
                                &file,
                                path.as_bytes(),
                                &still,
                                &mut |id, content| handed.put(id, content),
                            ),
                        }
                    }
                };
                // What was written is looked up by the listed indexes: list them again, once.
                let _ = repo.store.reload();
                // Stored (or failed): reads waiting for these look here again.
                handed.settle(&settled);
                if let Ok(bytes) = done {
                    fetched.fetch_add(bytes, Ordering::Relaxed);
                }
                // Nobody waits for an ask made for later.
                let _ = answer.send(done.map_err(|e| e.to_string()));
            }
        });
        FetchThread {
            asks: Some(asks),
            fresh,
            ending,
            thread: Some(thread),
        }
    }

    /// Asks without waiting; a failure is for the read that then misses to meet.
    fn ask_later(&self, ask: Ask) {
        let (answer, _) = mpsc::channel();
        let _ = self.send(ask, answer);
    }

    /// Chunk bytes received.
    fn ask(&self, ask: Ask) -> Result<u64, String> {
        let (answer, answered) = mpsc::channel();
        self.send(ask, answer)?;
        answered
            .recv()
            .map_err(|_| "the fetch thread has ended".to_string())?
    }

    /// Queues `ask`, its chunks noted as coming until the thread is done with it.
    fn send(&self, ask: Ask, answer: mpsc::Sender<Result<u64, String>>) -> Result<(), String> {
        let chunks = match &ask {
            Ask::Chunks { chunks, .. } => chunks.clone(),
            Ask::Nodes { .. } => Vec::new(),
        };
        self.fresh.expect(&chunks);
        let sent = match &self.asks {
            Some(asks) => asks.send((ask, answer)).map_err(|_| ()),
            None => Err(()),
        };
        sent.map_err(|_| {
            self.fresh.settle(&chunks);
            "the fetch thread has ended".to_string()
        })
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

/// Chunks brought ahead of their reads, at most `most` bytes, each taken
/// once; past the budget the oldest are let go (they are stored).
struct Brought {
    chunks: Mutex<BroughtChunks>,
    most: u64,
}

#[derive(Default)]
struct BroughtChunks {
    /// Each chunk with the number it arrived as.
    by_id: HashMap<ObjectId, (u64, Arc<Vec<u8>>)>,
    /// The chunks by the number they arrived as: oldest first.
    order: std::collections::BTreeMap<u64, ObjectId>,
    bytes: u64,
    arrivals: u64,
}

impl Brought {
    fn new(most: u64) -> Brought {
        Brought {
            chunks: Mutex::default(),
            most,
        }
    }

    fn put(&self, id: ObjectId, content: &[u8]) {
        let len = content.len() as u64;
        let mut brought = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        if len > self.most || brought.by_id.contains_key(&id) {
            return;
        }
        while brought.bytes + len > self.most {
            let Some((_, oldest)) = brought.order.pop_first() else {
                break;
            };
            if let Some((_, bytes)) = brought.by_id.remove(&oldest) {
                brought.bytes -= bytes.len() as u64;
            }
        }
        let number = brought.arrivals;
        brought.arrivals += 1;
        brought.order.insert(number, id);
        brought
            .by_id
            .insert(id, (number, Arc::new(content.to_vec())));
        brought.bytes += len;
    }

    fn take(&self, id: &ObjectId) -> Option<Arc<Vec<u8>>> {
        let mut brought = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let (number, bytes) = brought.by_id.remove(id)?;
        brought.order.remove(&number);
        brought.bytes -= bytes.len() as u64;
        Some(bytes)
    }
}

/// Chunks fetched and not read yet, at most [`FRESH_BYTES`] of them (a
/// fetch past that leaves the rest to be read from the store), and the
/// chunks asked for whose ask is not done yet. A read takes its chunk
/// out, into [`Kept`].
struct Fresh {
    chunks: Mutex<FreshChunks>,
    /// Signalled when a chunk arrives or is taken, and when an ask is done.
    changed: Condvar,
    /// How long a fetch past the budget waits for a read (see `put`).
    room_wait: Duration,
}

#[derive(Default)]
struct FreshChunks {
    by_id: HashMap<ObjectId, Arc<Vec<u8>>>,
    bytes: u64,
    /// Chunks in asks not done yet, with how many asks hold each.
    coming: HashMap<ObjectId, usize>,
    /// Those of `coming` handed over already (taken by now, perhaps).
    arrived: HashSet<ObjectId>,
    /// When a read last took a chunk.
    last_take: Option<Instant>,
    /// The fetch thread has ended: nothing more arrives.
    ended: bool,
}

impl Fresh {
    fn new(room_wait: Duration) -> Fresh {
        Fresh {
            chunks: Mutex::default(),
            changed: Condvar::new(),
            room_wait,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FreshChunks> {
        self.chunks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over a chunk just fetched, once. While reads take what was
    /// handed over, a fetch past the budget waits for room: a reader a
    /// little slower than the network holds the network back rather than
    /// read the chunks back from the store. Once no read took anything for
    /// `room_wait` (the reader stopped, or went elsewhere), the chunk is
    /// left to the store.
    fn put(&self, id: ObjectId, content: Vec<u8>) {
        let mut fresh = self.lock();
        let len = content.len() as u64;
        if fresh.arrived.contains(&id) || fresh.by_id.contains_key(&id) {
            return;
        }
        while fresh.bytes + len > FRESH_BYTES && fresh.bytes > 0 {
            let idle = fresh.last_take.map_or(self.room_wait, |t| t.elapsed());
            if idle >= self.room_wait {
                return;
            }
            fresh = self
                .changed
                .wait_timeout(fresh, self.room_wait - idle)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        fresh.by_id.insert(id, Arc::new(content));
        fresh.bytes += len;
        if fresh.coming.contains_key(&id) {
            fresh.arrived.insert(id);
        }
        self.changed.notify_all();
    }

    fn take(&self, id: &ObjectId) -> Option<Arc<Vec<u8>>> {
        let mut fresh = self.lock();
        let taken = fresh.by_id.remove(id)?;
        fresh.bytes -= taken.len() as u64;
        fresh.last_take = Some(Instant::now());
        self.changed.notify_all();
        Some(taken)
    }

    fn arrived_or_coming(&self, id: &ObjectId) -> bool {
        let fresh = self.lock();
        fresh.by_id.contains_key(id) || fresh.coming.contains_key(id)
    }

    /// Notes `ids` as asked for.
    fn expect(&self, ids: &[ObjectId]) {
        let mut fresh = self.lock();
        for id in ids {
            *fresh.coming.entry(*id).or_default() += 1;
        }
    }

    /// Notes that an ask for `ids` is done: stored, or failed.
    fn settle(&self, ids: &[ObjectId]) {
        let mut fresh = self.lock();
        for id in ids {
            if let Some(asks) = fresh.coming.get_mut(id) {
                *asks -= 1;
                if *asks == 0 {
                    fresh.coming.remove(id);
                    fresh.arrived.remove(id);
                }
            }
        }
        self.changed.notify_all();
    }

    /// Waits until each of `ids` that was asked for has arrived (and may
    /// have been taken since) or its ask is done.
    fn await_coming<'a>(&self, ids: impl Iterator<Item = &'a ObjectId> + Clone) {
        let mut fresh = self.lock();
        while !fresh.ended
            && ids
                .clone()
                .any(|id| fresh.coming.contains_key(id) && !fresh.arrived.contains(id))
        {
            fresh = self.changed.wait(fresh).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until no ask holds `id`: it is stored, or its fetch failed.
    fn await_stored(&self, id: &ObjectId) {
        let mut fresh = self.lock();
        while !fresh.ended && fresh.coming.contains_key(id) {
            fresh = self.changed.wait(fresh).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Notes that the fetch thread ended (it panicked): nobody waits for it.
    fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Forgets the chunks handed over and not taken (the reads that wanted
    /// them went elsewhere): a read that comes back for one waits for the
    /// store to have it.
    fn clear(&self) {
        let mut fresh = self.lock();
        let FreshChunks { by_id, arrived, .. } = &mut *fresh;
        for id in by_id.keys() {
            arrived.remove(id);
        }
        by_id.clear();
        fresh.bytes = 0;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: u8) -> ObjectId {
        ObjectId([i; 32])
    }

    fn holds(fresh: &Fresh, id: &ObjectId) -> bool {
        fresh.lock().by_id.contains_key(id)
    }

    /// A folder fetched ahead of a `cp -r`: the chunks wait in memory for
    /// their opens within the budget, the oldest let go first when the copy
    /// falls behind, each taken once.
    #[test]
    fn chunks_brought_ahead_keep_the_newest_within_their_budget() {
        let brought = Brought::new(1000);
        for i in 0..4 {
            brought.put(id(i), &[i; 300]);
        }
        assert!(brought.take(&id(0)).is_none(), "the oldest let go");
        assert_eq!(brought.take(&id(1)).unwrap().as_slice(), &[1; 300][..]);
        assert!(brought.take(&id(1)).is_none(), "taken once");
        brought.put(id(4), &[4; 300]);
        brought.put(id(5), &[5; 300]);
        assert!(brought.take(&id(2)).is_none(), "let go for the newer");
        for i in 3..6 {
            assert_eq!(brought.take(&id(i)).unwrap().as_slice(), &[i; 300][..]);
        }
        let left = brought.chunks.lock().unwrap();
        assert_eq!((left.bytes, left.by_id.len(), left.order.len()), (0, 0, 0));
        drop(left);
        brought.put(id(6), &[6; 1001]);
        assert!(
            brought.take(&id(6)).is_none(),
            "larger than the budget: left to the store"
        );
    }

    #[test]
    fn fresh_chunks_stay_within_their_budget_and_are_taken_once() {
        let fresh = Fresh::new(ROOM_WAIT);
        let quarter = (FRESH_BYTES / 4) as usize;
        for i in 0..5 {
            fresh.put(id(i), vec![i; quarter]);
        }
        assert!(holds(&fresh, &id(3)));
        assert!(
            !holds(&fresh, &id(4)),
            "past the budget, nobody reading: left to the store"
        );
        assert_eq!(
            fresh.take(&id(0)).unwrap().as_slice(),
            &vec![0; quarter][..]
        );
        assert!(fresh.take(&id(0)).is_none(), "taken once");
        fresh.put(id(4), vec![4; quarter]);
        assert!(holds(&fresh, &id(4)), "room again once a chunk was read");
        fresh.clear();
        assert!(!holds(&fresh, &id(4)));
    }

    /// The read that overtook the fetch: it waits for its chunk alone, and
    /// a chunk taken before its piece is stored does not make it wait again.
    #[test]
    fn a_read_waits_for_its_chunk_to_arrive_not_for_the_whole_ask() {
        let fresh = Arc::new(Fresh::new(ROOM_WAIT));
        let ask = [id(1), id(2), id(3)];
        fresh.expect(&ask);
        assert!(
            fresh.arrived_or_coming(&id(2)),
            "asked for: not fetched again"
        );
        let fetch = {
            let fresh = fresh.clone();
            std::thread::spawn(move || {
                fresh.put(id(1), vec![1; 10]);
                fresh.put(id(2), vec![2; 10]);
            })
        };
        fresh.await_coming([id(1), id(2)].iter());
        assert_eq!(fresh.take(&id(2)).unwrap().as_slice(), &[2; 10]);
        fetch.join().unwrap();
        // Taken, its ask not done: arrived all the same.
        fresh.await_coming([id(1), id(2)].iter());
        assert!(fresh.arrived_or_coming(&id(3)), "still on its way");
        let done = {
            let fresh = fresh.clone();
            std::thread::spawn(move || fresh.settle(&ask))
        };
        // The third never arrived: a read of it waits for the ask to be done.
        fresh.await_coming([id(3)].iter());
        fresh.await_stored(&id(2));
        done.join().unwrap();
        assert!(!fresh.arrived_or_coming(&id(3)), "the ask is done");
        fresh.put(id(2), vec![2; 10]);
        assert!(
            holds(&fresh, &id(2)),
            "asked again later: handed over again"
        );
    }

    /// A fetch ahead of a reader that keeps reading waits for room instead
    /// of leaving chunks to be read back from the store; a chunk arriving
    /// twice (two asks held it) is handed over once.
    #[test]
    fn a_fetch_past_the_budget_waits_for_a_reader_that_keeps_reading() {
        // Long enough that only a take ends the wait here.
        let fresh = Arc::new(Fresh::new(Duration::from_secs(600)));
        let half = (FRESH_BYTES / 2) as usize;
        fresh.expect(&[id(0), id(1), id(2), id(3)]);
        fresh.put(id(0), vec![0; half]);
        fresh.take(&id(0)).unwrap();
        fresh.put(id(0), vec![0; half]);
        assert!(!holds(&fresh, &id(0)), "arrived once already");
        fresh.put(id(1), vec![1; half]);
        fresh.put(id(2), vec![2; half]);
        let waiting = {
            let fresh = fresh.clone();
            std::thread::spawn(move || fresh.put(id(3), vec![3; half]))
        };
        // The reader takes the next chunk: room for the one waiting.
        fresh.take(&id(1)).unwrap();
        waiting.join().unwrap();
        assert!(holds(&fresh, &id(3)), "handed over once there was room");
    }

    /// A fetch thread that ends (a panic) leaves no read waiting on it.
    #[test]
    fn no_read_waits_on_a_fetch_thread_that_ended() {
        let fresh = Arc::new(Fresh::new(ROOM_WAIT));
        fresh.expect(&[id(7)]);
        let ending = {
            let fresh = fresh.clone();
            std::thread::spawn(move || fresh.end())
        };
        fresh.await_coming([id(7)].iter());
        fresh.await_stored(&id(7));
        ending.join().unwrap();
    }
}
