//! What the working tree holds and how it differs from the dirstate and
//! HEAD: scanning it, content ids of its files, and the three lists of a
//! status (staged, unstaged, untracked). Knows nothing of merges: the full
//! `status` with the merge in progress is made in `ops.rs`.

use crate::repository::handles::Worktree;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};

use dmv_store::object::EntryKind;
use dmv_store::{hash_file, ObjectId, ObjectKind};
use serde::Serialize;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{
    diff_sorted_each, tree_reader, Change, ChangeKind, FilesInOrder, FlatEntry, FlatTree,
};
use crate::parallel::{run_batched, Batches};
use crate::paths::{ser_path, Beneath};
use crate::worktree::dirstate::{kind_on_disk, DirEntry, Dirstate, Stat};
use crate::worktree::files::symlink_target;
use crate::worktree::sieve::{differs, sift, Seen};
use crate::worktree::walk::stat_threads;

/// One path of a status listing, without its entries.
#[derive(Clone, Debug, Serialize)]
pub struct StatusEntry {
    /// The path, '/'-separated bytes.
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    /// Added, deleted or modified.
    pub kind: ChangeKind,
}

/// How the dirstate differs from HEAD and the working tree from the dirstate.
#[derive(Debug, Default)]
pub(crate) struct WorktreeStatus {
    /// HEAD → dirstate.
    pub staged: Vec<Change>,
    /// dirstate → working tree (tracked files only).
    pub unstaged: Vec<Change>,
    pub untracked: Vec<Vec<u8>>,
}

impl WorktreeStatus {
    /// One path with a staged or unstaged change, if any, for messages.
    pub fn first_change(&self) -> Option<&Change> {
        self.staged.iter().chain(&self.unstaged).next()
    }
}

impl Worktree<'_> {
    /// Every file and symlink in the working tree with its lstat, honouring
    /// `.dmvignore`; walked in parallel.
    pub fn scan(&self) -> RepoResult<BTreeMap<Vec<u8>, Stat>> {
        Ok(self.scan_sorted()?.into_iter().collect())
    }

    /// [`Worktree::scan`] as a list in path order.
    pub(crate) fn scan_sorted(&self) -> RepoResult<Vec<(Vec<u8>, Stat)>> {
        let found = Mutex::new(Vec::new());
        crate::worktree::walk::walk(&self.root, stat_threads(), &|files| {
            lock(&found).append(files)
        })?;
        let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// The lstat of each path that is a file or a symlink (None: nothing, or
    /// something else, is there), on a few threads.
    pub(crate) fn stat_paths(&self, paths: &[&[u8]]) -> RepoResult<Vec<Option<Stat>>> {
        const RUN: usize = 256;
        let runs: Vec<Range<usize>> = (0..paths.len())
            .step_by(RUN)
            .map(|start| start..(start + RUN).min(paths.len()))
            .collect();
        let mut stats = vec![None; paths.len()];
        run_batched(
            &runs,
            stat_threads(),
            Batches {
                items: 4 * RUN,
                weight: u64::MAX,
            },
            |_| 1,
            |i, beneath: &mut Option<Beneath>| {
                let beneath = beneath.get_or_insert_with(|| Beneath::new(&self.root));
                let found = beneath
                    .stat(paths[i])
                    .map_err(|e| RepoError::io(self.abs_path(paths[i]), e))?;
                Ok::<_, RepoError>(found.filter(Stat::is_file_or_symlink))
            },
            |i, st| stats[i] = st,
        )?;
        Ok(stats)
    }

    /// The content id of a working-tree file or symlink as it is now.
    pub(crate) fn current_id(&self, rel: &[u8], st: &Stat) -> RepoResult<(ObjectId, u64)> {
        let path = self.abs_path(rel);
        if st.is_symlink() {
            let target = symlink_target(&path)?;
            return Ok((
                ObjectId::hash(ObjectKind::Chunk, &target),
                target.len() as u64,
            ));
        }
        let (id, size, _) = hash_file(&path, self.config.chunking)?;
        Ok((id, size))
    }

    /// The status of the working tree, and the (refreshed) dirstate it was
    /// computed from.
    pub(crate) fn worktree_status(&self) -> RepoResult<(WorktreeStatus, Dirstate)> {
        let mut unstaged = Vec::new();
        let (staged, untracked, ds) = self
            .compare_worktree(|ds, locked| self.staged_changes(ds, locked), &mut |c| {
                unstaged.push(c)
            })?;
        // Unstable: no buffer of half the list (paths are unique).
        unstaged.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok((
            WorktreeStatus {
                staged,
                unstaged,
                untracked,
            },
            ds,
        ))
    }

    /// Compares the working tree with the dirstate: hands each unstaged
    /// change to `unstaged` (not in order), and returns what `staged` made
    /// of the dirstate (called while the walk goes on, with whether this
    /// command holds the working-tree lock), the untracked files, and the
    /// dirstate with refreshed stat data.
    pub(crate) fn compare_worktree<T>(
        &self,
        staged: impl FnOnce(&Dirstate, bool) -> RepoResult<T>,
        unstaged: &mut dyn FnMut(Change),
    ) -> RepoResult<(T, Vec<Vec<u8>>, Dirstate)> {
        // Status only refreshes stat data, which may wait for another time:
        // while another command holds the lock it saves nothing.
        let wlock = self.try_lock_worktree();
        // The walk starts while the dirstate is read; each of its threads
        // compares the files of a folder with the dirstate and keeps only
        // what differs (at a million files, a list of every file beside the
        // dirstate was 100 MB). A thread that has read a folder before the
        // dirstate is ready waits for it, so at most a folder per thread
        // waits (a list of them made status hold a tenth more than git's at
        // 100,000 files), and reading the dirstate is not slowed by eight
        // threads walking on two cores. None: it could not be read.
        let sieve: OnceLock<Option<Sieve>> = OnceLock::new();
        let sifted = Mutex::new(Sifted::default());
        let (walked, loaded) = std::thread::scope(|s| {
            let walk = s.spawn(|| {
                crate::worktree::walk::walk(&self.root, stat_threads(), &|files| {
                    if let Some(sieve) = sieve.wait() {
                        let mut own = Sifted::default();
                        sieve.sift(files, &mut own);
                        lock(&sifted).append(own)
                    }
                })
            });
            // Whatever happens here, the walk's threads are let go.
            let _release = ReleaseOnDrop(&sieve);
            let loaded = match self.load_dirstate() {
                Ok(ds) => match sieve.get_or_init(|| Some(Sieve::new(ds))) {
                    Some(sieve) => staged(&sieve.ds, wlock.is_some()),
                    None => Err(RepoError::Scan {
                        detail: "the dirstate was not read".into(),
                    }),
                },
                Err(e) => Err(e),
            };
            drop(_release);
            (walk.join(), loaded)
        });
        let walked = walked.map_err(|_| RepoError::Scan {
            detail: "the walk of the working tree stopped unexpectedly".into(),
        })?;
        let staged = loaded?;
        walked?;
        let sieve = sieve
            .into_inner()
            .flatten()
            .ok_or_else(|| RepoError::Scan {
                detail: "the dirstate was not read".into(),
            })?;
        let mut found = sifted.into_inner().unwrap_or_else(|p| p.into_inner());
        // Tracked paths the walk did not list: ignored (they stay tracked), deleted, or absent.
        let entries = sieve.entries();
        let unlisted: Vec<usize> = (0..entries.len())
            .filter(|&i| !sieve.seen.was_seen(i))
            .collect();
        let paths: Vec<&[u8]> = unlisted.iter().map(|&i| entries.path(i)).collect();
        for (&i, there) in unlisted.iter().zip(self.stat_paths(&paths)?) {
            let (path, entry) = (entries.path(i), entries.value(i));
            match there {
                Some(meta) if differs(entry, &meta, sieve.ds.written_ns) => {
                    found.changed.push((i, meta))
                }
                Some(_) => {}
                // Its data is not here, so neither is the file: nothing changed.
                None if entry.is_absent() => {}
                None => unstaged(Change {
                    path: path.to_vec(),
                    kind: ChangeKind::Deleted,
                    old: Some(entry.flat()),
                    new: None,
                }),
            }
        }
        let Sifted {
            mut untracked,
            mut changed,
        } = found;
        untracked.sort_unstable();
        changed.sort_unstable_by_key(|(i, _)| *i);
        let mut ds = sieve.ds;
        let refreshed = self.read_changed(&mut ds, changed, unstaged)?;
        if refreshed && wlock.is_some() {
            // Only a cache refresh: losing it (e.g. read-only repository) costs a re-read next time.
            let _ = self.save_dirstate(&ds);
        }
        drop(wlock);
        Ok((staged, untracked, ds))
    }

    /// Reads the tracked files whose stat data changed (positions in the
    /// dirstate's sorted entries, in order): a change of content goes to
    /// `unstaged`, and the entry of a file that is as recorded gets its new
    /// stat data. Whether any entry did.
    fn read_changed(
        &self,
        ds: &mut Dirstate,
        mut changed: Vec<(usize, Stat)>,
        unstaged: &mut dyn FnMut(Change),
    ) -> RepoResult<bool> {
        let mut refreshed = false;
        let read_start = crate::replica::locations::now_ns() as i64;
        // A slice at a time from the end, each let go once read: the ids
        // wait beside a slice of the files rather than all of them, and the
        // list shrinks while the changes found grow (after a change to every
        // file, both are a million long).
        while !changed.is_empty() {
            let slice = &changed[changed.len().saturating_sub(1 << 16)..];
            let entries = ds.entries.sorted().unwrap_or_default();
            let ids = self.current_ids(slice.len(), |k| (entries.path(slice[k].0), &slice[k].1))?;
            for (&(i, meta), (id, size)) in slice.iter().zip(ids) {
                let entries = ds.entries.sorted().unwrap_or_default();
                let (path, entry) = (entries.path(i), entries.value(i));
                let kind = kind_on_disk(meta.kind().unwrap_or(EntryKind::File), entry.kind);
                if id != entry.id || kind != entry.kind {
                    unstaged(Change {
                        path: path.to_vec(),
                        kind: ChangeKind::Modified,
                        old: Some(entry.flat()),
                        new: Some(FlatEntry { kind, id, size }),
                    });
                // A file stamped within a clock tick of our read may have been
                // written again in that tick, unseen by its stat: not recorded
                // as checked, it is read again next time (as ingest does).
                } else if meta
                    .mtime_ns
                    .saturating_add(dmv_store::timestamp_granularity().as_nanos() as i64)
                    < read_start
                {
                    if let Some(entry) = ds.entries.sorted_value_mut(i) {
                        *entry = DirEntry::with_stat(kind, id, size, &meta);
                        refreshed = true;
                    }
                }
            }
            changed.truncate(changed.len().saturating_sub(1 << 16));
            changed.shrink_to_fit();
        }
        Ok(refreshed)
    }

    /// [`Worktree::current_id`] of `count` files (`file(k)` is the k-th),
    /// read on a few threads.
    fn current_ids<'f>(
        &self,
        count: usize,
        file: impl Fn(usize) -> (&'f [u8], &'f Stat) + Sync,
    ) -> RepoResult<Vec<(ObjectId, u64)>> {
        const RUN: usize = 64;
        let runs: Vec<Range<usize>> = (0..count)
            .step_by(RUN)
            .map(|start| start..(start + RUN).min(count))
            .collect();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut ids = vec![(ObjectId([0; 32]), 0); count];
        run_batched(
            &runs,
            threads,
            Batches {
                items: 256,
                weight: 16 << 20,
            },
            |k| file(k).1.size,
            |k, _: &mut ()| self.current_id(file(k).0, file(k).1),
            |k, id| ids[k] = id,
        )?;
        Ok(ids)
    }

    /// How the dirstate differs from HEAD (see [`Worktree::each_staged`]).
    fn staged_changes(&self, ds: &Dirstate, locked: bool) -> RepoResult<Vec<Change>> {
        let mut staged = Vec::new();
        self.each_staged(ds, locked, &mut |c| {
            staged.push(c);
            Ok(())
        })?;
        Ok(staged)
    }

    /// Hands each change from HEAD to the dirstate to `each`, in path
    /// order. Nothing, without reading HEAD's tree, when a command recorded
    /// that the entries build HEAD's tree; finding nothing the long way
    /// records it (with the lock, `locked`).
    pub(crate) fn each_staged(
        &self,
        ds: &Dirstate,
        locked: bool,
        each: &mut dyn FnMut(Change) -> RepoResult<()>,
    ) -> RepoResult<()> {
        let head = self.head_tree()?;
        if head.is_some() && head == self.tree_mark().and_then(|m| m.tree_of(ds)) {
            return Ok(());
        }
        // HEAD's files a folder at a time and the dirstate as it is, both in
        // path order: flat copies of them were two maps of every path
        // (767 MB at a million staged changes).
        let dirstate = ds.entries.iter().map(|(p, e)| (p, e.flat()));
        let mut any = false;
        // A tree that cannot be read ends HEAD's side early: nothing is handed over once it did
        // (the dirstate's entries left would look added).
        let failed = std::cell::RefCell::new(None);
        let mut counted = |c: Change| {
            if failed.borrow().is_some() {
                return Ok(());
            }
            any = true;
            each(c)
        };
        match head {
            Some(t) => {
                let read = tree_reader(&self.store);
                let files = FilesInOrder::new(&read, &t)?
                    .map_while(|f| f.map_err(|e| *failed.borrow_mut() = Some(e)).ok());
                diff_sorted_each(files, dirstate, &mut counted)?;
            }
            None => diff_sorted_each(
                std::iter::empty::<(&[u8], FlatEntry)>(),
                dirstate,
                &mut counted,
            )?,
        }
        if let Some(e) = failed.into_inner() {
            return Err(e);
        }
        if let (Some(tree), false, true) = (head, any, locked) {
            self.mark_tree(ds, tree);
        }
        Ok(())
    }

    /// The working tree as a flat tree (tracked files, with their current content ids).
    pub fn worktree_flat(&self) -> RepoResult<FlatTree> {
        let (status, ds) = self.worktree_status()?;
        Ok(current_flat(&status, &ds))
    }
}

/// The loaded dirstate, which the walk's threads compare the files they
/// find with, and which of its entries they found.
struct Sieve {
    ds: Dirstate,
    seen: Seen,
}

/// Lets the walk's threads waiting for the dirstate go on (with nothing to
/// compare against) if it was not set, whatever ended the reading.
struct ReleaseOnDrop<'a>(&'a OnceLock<Option<Sieve>>);

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.set(None);
    }
}

/// What the walk found that the dirstate does not settle: files it lacks,
/// and tracked files whose stat data changed (with their position in it).
#[derive(Default)]
struct Sifted {
    untracked: Vec<Vec<u8>>,
    changed: Vec<(usize, Stat)>,
}

impl Sifted {
    fn append(&mut self, mut other: Sifted) {
        self.untracked.append(&mut other.untracked);
        self.changed.append(&mut other.changed);
    }
}

impl Sieve {
    fn new(mut ds: Dirstate) -> Sieve {
        // Positions in one sorted slice name the entries from here on.
        ds.entries.fold();
        let seen = Seen::new(ds.entries.len());
        Sieve { ds, seen }
    }

    fn entries(&self) -> crate::pathmap::Sorted<'_, DirEntry> {
        // Folded in `new`.
        self.ds.entries.sorted().unwrap_or_default()
    }

    /// Compares `files` (taken out of the list) with the entries, adding what differs to `sifted`.
    fn sift(&self, files: &mut Vec<(Vec<u8>, Stat)>, sifted: &mut Sifted) {
        let entries = self.entries();
        let written_ns = self.ds.written_ns;
        sift(
            entries,
            &self.seen,
            files,
            |i, meta| {
                if differs(entries.value(i), &meta, written_ns) {
                    sifted.changed.push((i, meta));
                }
            },
            |path, _| sifted.untracked.push(path),
        );
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the working tree holds at tracked paths: the dirstate with the
/// unstaged changes of `status` applied.
pub(crate) fn current_flat(status: &WorktreeStatus, ds: &Dirstate) -> FlatTree {
    let mut flat = ds.flat();
    for c in &status.unstaged {
        match c.new {
            Some(e) => flat.insert(c.path.clone(), e),
            None => flat.remove(&c.path),
        };
    }
    flat
}
