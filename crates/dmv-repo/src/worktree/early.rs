//! Writing a clone's large files, and every file a get fills, while their
//! chunks arrive.
//!
//! A clone stores every chunk in a pack and then checks the files out, which
//! reads all of it back: for a large file that is a second pass over the disk
//! and a second hash. When the chunks of a file arrive in its own order, which
//! is how a fetch asks for them (the newest commit's files first, each file's
//! chunks in order), the file can be written as they come instead.
//!
//! This is opportunistic: a file whose chunks do not arrive in order (a chunk
//! an earlier file of the transfer already brought, one the local store
//! already had, an object store answering ranges out of order) is dropped
//! here and written by the normal checkout from the store afterwards. Only verified chunks are passed in, and
//! a file counts only when every chunk arrived and its length is right. The
//! files wait under `.dmv/` and are moved into the working tree only once the
//! fetch has succeeded; until then the working tree is untouched.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use dmv_store::object::{decode, ChunkWalk, Commit, EntryKind, FileNode, TreeNode};
use dmv_store::{FileWriter, ObjectId, ObjectKind, StoreError};

use dmv_os::OsStrExt;

use crate::history::tree::FlatEntry;
use crate::worktree::dirstate::Stat;
use crate::{RepoError, RepoResult, Repository};

/// A clone leaves files smaller than this to its checkout: they are one or
/// a few chunks, and their cost is creating the file (in place, where this
/// adds a rename), not reading it back.
const MIN_FILE: u64 = 2 << 20;
/// A get leaves files smaller than this to the fill after the transfer
/// (on several threads, through a temporary name beside each file): read
/// back from the pack they cost little, and written one at a time as they
/// arrive, through a folder of their own and a rename, a get of 100,000
/// files of 1 KiB took 7.4 s where it now takes 4.9 (a get of 10,000
/// photos of 50 KiB still gains from writing them as they arrive).
const MIN_GET_FILE: u64 = 16 << 10;
/// At most this many files are planned (each ~200 bytes of memory with
/// its path): a get of more writes the rest from the store afterwards.
const MAX_FILES: usize = 64 * 1024;
/// At most this many chunk placements (a chunk at a place in a file) are
/// planned, each ~80 bytes of memory: 256k are ~16 GiB of files at the
/// default chunk size.
const MAX_PLACEMENTS: usize = 256 * 1024;
/// Files being written at once (each holds a few MiB of buffers).
const MAX_OPEN: usize = 4;

/// Where the waiting files live, inside the repository's `.dmv`: a folder
/// per command (two `get`s may run at once), each with a file its command
/// keeps locked (flock, dropped by the kernel when the command dies), so a
/// folder whose lock is free was left by a command that was killed.
const STAGING_DIR: &str = "early-checkout";
const HELD: &str = "held";

/// The content of an object of the transfer (or the local store), if known.
pub type Lookup<'a> = dyn Fn(&ObjectId) -> Option<(ObjectKind, Vec<u8>)> + 'a;

struct Planned {
    rel: Vec<u8>,
    entry: FlatEntry,
    chunk_count: usize,
    next: usize,
    written: u64,
    state: State,
}

enum State {
    Waiting,
    Open(FileWriter),
    Done,
    Dropped,
}

/// The files of a clone being written while their chunks arrive (see the
/// module's doc); they wait under `.dmv/` until the fetch has succeeded.
pub struct EarlyCheckout {
    staging: PathBuf,
    /// Locked while this command may still use `staging`.
    _held: File,
    target: Option<ObjectId>,
    files: Vec<Planned>,
    /// Each planned file's index in `files`, by its path.
    by_path: HashMap<Vec<u8>, u32>,
    placements: HashMap<ObjectId, Vec<(u32, u32)>>,
    planned: usize,
    open: usize,
    /// A write failed: stop, and leave everything to the normal checkout.
    failed: bool,
}

impl EarlyCheckout {
    /// Clears what interrupted earlier commands left.
    pub fn new(repo: &Repository) -> RepoResult<EarlyCheckout> {
        let root = repo.dmv.join(STAGING_DIR);
        remove_abandoned(&root)?;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let staging = root.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&staging).map_err(|e| RepoError::io(&staging, e))?;
        let held_path = staging.join(HELD);
        let held = File::create(&held_path)
            .and_then(|f| f.lock().map(|()| f))
            .map_err(|e| RepoError::io(&held_path, e))?;
        Ok(EarlyCheckout {
            staging,
            _held: held,
            target: None,
            files: Vec::new(),
            by_path: HashMap::new(),
            placements: HashMap::new(),
            planned: 0,
            open: 0,
            failed: false,
        })
    }

    /// The commit whose files will be checked out.
    pub fn set_target(&mut self, commit: ObjectId) {
        self.target = Some(commit);
    }

    /// Chooses the files to write early, once the transfer's metadata is
    /// known. `stored` tells the chunks the local store already has: those
    /// will not arrive, so files that use them are left out.
    pub fn plan(&mut self, lookup: &Lookup<'_>, stored: &dyn Fn(&ObjectId) -> bool) {
        let Some(commit) = self.target else { return };
        let Some(tree) = read::<Commit>(lookup, &commit, ObjectKind::Commit).map(|c| c.tree) else {
            return;
        };
        // Anything unknown or malformed is left to the normal checkout, which reports it.
        let node = |id: &ObjectId| {
            read::<TreeNode>(lookup, id, ObjectKind::Tree)
                .ok_or(RepoError::UnknownTreeNode { id: *id })
        };
        // Only the files large enough to be written early are kept: the rest of
        // a tree of a million small files would be ~150 MB held for nothing.
        let mut large = Vec::new();
        let walked = crate::history::tree::visit_files(&node, &tree, &mut |rel, entry| {
            if entry.kind != EntryKind::Symlink && entry.size >= MIN_FILE {
                large.push((rel, entry));
            }
        });
        if walked.is_err() {
            return;
        }
        large.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.plan_files(lookup, stored, large);
    }

    /// Chooses, among `files` (paths and entries), those to write early; for
    /// a `get`, which fills some files of a working tree that is there.
    /// Smaller files than a clone's too, down to [`MIN_GET_FILE`]: a get
    /// writes each through a temporary name anyway, so writing it as it
    /// arrives spares reading it back from the pack (a get of 10,000 photos
    /// of 50 KiB: 1.6 s, where 2.1 s).
    pub fn plan_files(
        &mut self,
        lookup: &Lookup<'_>,
        stored: &dyn Fn(&ObjectId) -> bool,
        files: impl IntoIterator<Item = (Vec<u8>, FlatEntry)>,
    ) {
        for (rel, entry) in files {
            if entry.kind == EntryKind::Symlink
                || entry.size < MIN_GET_FILE
                || self.files.len() == MAX_FILES
            {
                continue;
            }
            let mut chunks = Vec::new();
            if !chunks_of(lookup, &entry.id, &mut chunks)
                || self.planned + chunks.len() > MAX_PLACEMENTS
                || chunks.iter().any(stored)
            {
                continue;
            }
            self.planned += chunks.len();
            let index = self.files.len() as u32;
            for (pos, id) in chunks.iter().enumerate() {
                self.placements
                    .entry(*id)
                    .or_default()
                    .push((index, pos as u32));
            }
            self.by_path.insert(rel.clone(), index);
            self.files.push(Planned {
                rel,
                entry,
                chunk_count: chunks.len(),
                next: 0,
                written: 0,
                state: State::Waiting,
            });
        }
    }

    /// A verified chunk has arrived.
    pub fn chunk(&mut self, id: &ObjectId, content: &[u8]) {
        if self.failed {
            return;
        }
        let Some(places) = self.placements.get(id) else {
            return;
        };
        for &(file, pos) in places {
            let f = &mut self.files[file as usize];
            if matches!(f.state, State::Done | State::Dropped) {
                continue;
            }
            if pos as usize != f.next {
                // It came before the chunks preceding it: this file is left to the normal checkout.
                if matches!(f.state, State::Open(_)) {
                    self.open -= 1;
                }
                f.state = State::Dropped;
                continue;
            }
            if matches!(f.state, State::Waiting) {
                if self.open == MAX_OPEN {
                    f.state = State::Dropped;
                    continue;
                }
                let path = self.staging.join(format!("{file}"));
                let created = std::fs::create_dir_all(&self.staging).and_then(|()| {
                    use dmv_os::OpenOptionsExt;
                    let mode = if f.entry.kind == EntryKind::Executable {
                        0o777
                    } else {
                        0o666
                    };
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(mode)
                        .open(&path)
                });
                match created {
                    Ok(out) => {
                        f.state = State::Open(FileWriter::new(out, f.entry.size));
                        self.open += 1;
                    }
                    Err(_) => {
                        self.failed = true;
                        return;
                    }
                }
            }
            let State::Open(w) = &mut f.state else {
                continue;
            };
            if std::io::Write::write_all(w, content).is_err() {
                self.failed = true;
                return;
            }
            f.next += 1;
            f.written += content.len() as u64;
            if f.next == f.chunk_count {
                let State::Open(w) = std::mem::replace(&mut f.state, State::Done) else {
                    continue;
                };
                self.open -= 1;
                if w.finish().is_err() || f.written != f.entry.size {
                    f.state = State::Dropped;
                }
            }
        }
    }

    /// After a successful fetch: where the complete file written for `rel`
    /// with content `id` waits, if there is one; the caller moves it into the
    /// working tree (anything not taken is removed with the staging folder).
    pub fn take_staged(&mut self, rel: &[u8], id: &ObjectId) -> Option<PathBuf> {
        if self.failed {
            return None;
        }
        let index = *self.by_path.get(rel)? as usize;
        let f = &mut self.files[index];
        if !matches!(f.state, State::Done) || f.entry.id != *id {
            return None;
        }
        f.state = State::Dropped;
        Some(self.staging.join(format!("{index}")))
    }

    /// After a successful fetch: moves the complete files into the working
    /// tree and returns them with their stat data, for the checkout to skip.
    /// Refused, with nothing placed, as the checkout would refuse the target:
    /// on a file system that folds `Photo.raw` and `photo.raw` into one file,
    /// or on Windows for `AUX.raw`, the second move would replace the first.
    pub fn finish(mut self, repo: &Repository) -> RepoResult<BTreeMap<Vec<u8>, (FlatEntry, Stat)>> {
        let mut placed = BTreeMap::new();
        let any_done = self.files.iter().any(|f| matches!(f.state, State::Done));
        if let (Some(commit), true, false) = (self.target, any_done, self.failed) {
            repo.refuse_folded_names(&repo.commit(&commit)?.tree)?;
        }
        if !self.failed {
            for (index, f) in self.files.iter_mut().enumerate() {
                if !matches!(f.state, State::Done) {
                    continue;
                }
                let staged = self.staging.join(format!("{index}"));
                let dest = repo.root.join(OsStr::from_bytes(&f.rel));
                // The clone's working tree is empty: only directories are made here.
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| RepoError::io(parent, e))?;
                }
                std::fs::rename(&staged, &dest).map_err(|e| RepoError::io(&dest, e))?;
                let meta = std::fs::symlink_metadata(&dest).map_err(|e| RepoError::io(&dest, e))?;
                placed.insert(std::mem::take(&mut f.rel), (f.entry, Stat::of(&meta)));
            }
        }
        Ok(placed)
    }
}

impl Drop for EarlyCheckout {
    /// Leaves nothing behind, whether the fetch succeeded or not.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
        if let Some(root) = self.staging.parent() {
            let _ = std::fs::remove_dir(root);
        }
    }
}

/// Removes the staging folders of commands that are gone (their lock is free).
fn remove_abandoned(root: &Path) -> RepoResult<()> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(RepoError::io(root, e)),
    };
    for entry in entries {
        let dir = entry.map_err(|e| RepoError::io(root, e))?.path();
        // No lock file yet: a command is just making its folder (nothing is written before the lock).
        let Ok(held) = File::open(dir.join(HELD)) else {
            continue;
        };
        if held.try_lock().is_ok() {
            std::fs::remove_dir_all(&dir).map_err(|e| RepoError::io(&dir, e))?;
        }
    }
    Ok(())
}

fn read<T: serde::de::DeserializeOwned>(
    lookup: &Lookup<'_>,
    id: &ObjectId,
    kind: ObjectKind,
) -> Option<T> {
    let (actual, bytes) = lookup(id)?;
    if actual != kind {
        return None;
    }
    decode(id, kind, &bytes).ok()
}

/// The chunk ids of a file's content, in order; false when a node is unknown
/// or malformed (a child not one level below its parent), or there are too
/// many to plan. Iterative, so a hostile chain of nodes cannot exhaust the stack.
fn chunks_of(lookup: &Lookup<'_>, id: &ObjectId, out: &mut Vec<ObjectId>) -> bool {
    let Some(node) = read::<FileNode>(lookup, id, ObjectKind::FileNode) else {
        // Neither a file node of the transfer nor anything stored: the
        // file is one chunk, to arrive (its length is checked when it has).
        if lookup(id).is_none() {
            out.push(*id);
            return true;
        }
        return false;
    };
    let mut walk = ChunkWalk::new(*id, node);
    let mut read_node = |id: &ObjectId| {
        read::<FileNode>(lookup, id, ObjectKind::FileNode).ok_or(StoreError::NotFound { id: *id })
    };
    loop {
        match walk.next_chunk(&mut read_node) {
            Ok(Some(_)) if out.len() >= MAX_PLACEMENTS => return false,
            Ok(Some(chunk)) => out.push(chunk.id),
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}
