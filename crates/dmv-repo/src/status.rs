//! What the working tree holds and how it differs from the dirstate and
//! HEAD: scanning it, content ids of its files, and the three lists of a
//! status (staged, unstaged, untracked). Knows nothing of merges: the full
//! `status` with the merge in progress is made in `ops.rs`.

use std::collections::BTreeMap;
use std::ops::Range;

use dmv_store::object::EntryKind;
use dmv_store::{hash_file, ObjectId, ObjectKind};
use serde::Serialize;

use crate::dirstate::{DirEntry, Dirstate, Stat};
use crate::error::{RepoError, RepoResult};
use crate::files::symlink_target;
use crate::parallel::{run_batched, Batches};
use crate::paths::{ser_path, Beneath};
use crate::repo::Repository;
use crate::tree::{diff_flat, flatten, Change, ChangeKind, FlatEntry, FlatTree};

#[derive(Clone, Debug, Serialize)]
pub struct StatusEntry {
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
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

impl Repository {
    /// Every file and symlink in the working tree with its lstat, honouring
    /// `.dmvignore`; walked in parallel.
    pub fn scan(&self) -> RepoResult<BTreeMap<Vec<u8>, Stat>> {
        Ok(self.scan_sorted()?.into_iter().collect())
    }

    /// [`Repository::scan`] as a list in path order.
    pub(crate) fn scan_sorted(&self) -> RepoResult<Vec<(Vec<u8>, Stat)>> {
        let mut found = crate::walk::walk(&self.root, stat_threads())?;
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(found)
    }

    /// The tracked files (and symlinks) that are in the working tree, with
    /// their lstat, in path order: what `commit -a` looks at, without
    /// reading every folder.
    pub(crate) fn stat_tracked<'d>(&self, ds: &'d Dirstate) -> RepoResult<Vec<(std::borrow::Cow<'d, [u8]>, Stat)>> {
        let paths: Vec<&[u8]> = ds.entries.keys().map(|p| p.as_slice()).collect();
        let stats = self.stat_paths(&paths)?;
        Ok(paths.into_iter().zip(stats).filter_map(|(p, st)| st.map(|st| (std::borrow::Cow::Borrowed(p), st))).collect())
    }

    /// The lstat of each path that is a file or a symlink (None: nothing, or
    /// something else, is there), on a few threads.
    fn stat_paths(&self, paths: &[&[u8]]) -> RepoResult<Vec<Option<Stat>>> {
        const RUN: usize = 256;
        let runs: Vec<Range<usize>> = (0..paths.len()).step_by(RUN).map(|start| start..(start + RUN).min(paths.len())).collect();
        let mut stats = vec![None; paths.len()];
        run_batched(
            &runs,
            stat_threads(),
            Batches { items: 4 * RUN, weight: u64::MAX },
            |_| 1,
            |i, beneath: &mut Option<Beneath>| {
                let beneath = beneath.get_or_insert_with(|| Beneath::new(&self.root));
                let found = beneath.lstat(paths[i]).map_err(|e| RepoError::io(self.abs_path(paths[i]), e))?;
                Ok::<_, RepoError>(found.filter(|m| m.is_file() || m.file_type().is_symlink()).map(|m| Stat::of(&m)))
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
            return Ok((ObjectId::hash(ObjectKind::Chunk, &target), target.len() as u64));
        }
        let (id, size, _) = hash_file(&path, self.config.chunking)?;
        Ok((id, size))
    }

    /// The status of the working tree, and the (refreshed) dirstate it was
    /// computed from.
    pub(crate) fn worktree_status(&self) -> RepoResult<(WorktreeStatus, Dirstate)> {
        // Status only refreshes stat data, which may wait for another time:
        // while another command holds the lock it saves nothing.
        let wlock = self.try_lock_worktree();
        // The walk, most of the time, runs while the dirstate is read and compared with HEAD.
        let (walked, loaded) = std::thread::scope(|s| {
            let walk = s.spawn(|| self.scan_sorted());
            let loaded = self.load_dirstate().and_then(|ds| Ok((self.staged_changes(&ds, wlock.is_some())?, ds)));
            (walk.join(), loaded)
        });
        let walked = walked.map_err(|_| RepoError::Scan { detail: "the walk of the working tree stopped unexpectedly".into() })?;
        let (staged, mut ds) = loaded?;
        // Both in path order: one pass over the two.
        let mut files = walked?.into_iter().peekable();
        let mut untracked = Vec::new();
        let mut unstaged = Vec::new();
        let written = ds.written_ns;
        // Files whose stat data differs from what was recorded, to be read.
        let mut to_read: Vec<(Vec<u8>, Stat)> = Vec::new();
        let mut compare = |path: &Vec<u8>, entry: &DirEntry, meta: Stat| {
            if meta.kind() != Some(entry.kind) || !entry.stat_matches(&meta, written) {
                to_read.push((path.clone(), meta));
            }
        };
        // Tracked paths the walk did not list: ignored (they stay tracked), deleted, or absent.
        let mut unlisted = Vec::new();
        for (path, entry) in &ds.entries {
            while let Some((p, _)) = files.next_if(|(p, _)| p < path) {
                untracked.push(p);
            }
            match files.next_if(|(p, _)| p == path) {
                Some((_, meta)) => compare(path, entry, meta),
                None => unlisted.push((path, entry)),
            }
        }
        let paths: Vec<&[u8]> = unlisted.iter().map(|(p, _)| p.as_slice()).collect();
        for ((path, entry), there) in unlisted.iter().zip(self.stat_paths(&paths)?) {
            match there {
                Some(meta) => compare(path, entry, meta),
                // Its data is not here, so neither is the file: nothing changed.
                None if entry.is_absent() => {}
                None => unstaged.push(Change { path: (*path).clone(), kind: ChangeKind::Deleted, old: Some(entry.flat()), new: None }),
            }
        }
        untracked.extend(files.map(|(p, _)| p));
        let mut refreshed = false;
        let read_start = crate::locations::now_ns() as i64;
        for ((path, meta), (id, size)) in to_read.iter().zip(self.current_ids(&to_read)?) {
            let kind = meta.kind().unwrap_or(EntryKind::File);
            let Some(entry) = ds.entries.get_mut(path) else { continue };
            if id == entry.id && kind == entry.kind {
                // A file stamped within a clock tick of our read may have been
                // written again in that tick, unseen by its stat: not recorded
                // as checked, it is read again next time (as ingest does).
                if meta.mtime_ns.saturating_add(dmv_store::timestamp_granularity().as_nanos() as i64) < read_start {
                    *entry = DirEntry::with_stat(kind, id, size, meta);
                    refreshed = true;
                }
            } else {
                unstaged.push(Change { path: path.clone(), kind: ChangeKind::Modified, old: Some(entry.flat()), new: Some(FlatEntry { kind, id, size }) });
            }
        }
        unstaged.sort_by(|a, b| a.path.cmp(&b.path));
        if refreshed && wlock.is_some() {
            // Only a cache refresh: losing it (e.g. read-only repository) costs a re-read next time.
            let _ = self.save_dirstate(&ds);
        }
        drop(wlock);
        Ok((WorktreeStatus { staged, unstaged, untracked }, ds))
    }

    /// [`Repository::current_id`] of each file, read on a few threads (after
    /// every file was touched, a status reads them all).
    fn current_ids(&self, files: &[(Vec<u8>, Stat)]) -> RepoResult<Vec<(ObjectId, u64)>> {
        const RUN: usize = 64;
        let runs: Vec<Range<usize>> = (0..files.len()).step_by(RUN).map(|start| start..(start + RUN).min(files.len())).collect();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut ids = vec![(ObjectId([0; 32]), 0); files.len()];
        run_batched(&runs, threads, Batches { items: 256, weight: 16 << 20 }, |i| files[i].1.size, |i, _: &mut ()| self.current_id(&files[i].0, &files[i].1), |i, id| ids[i] = id)?;
        Ok(ids)
    }

    /// How the dirstate differs from HEAD. Nothing, without reading HEAD's
    /// tree, when a command recorded that the entries build HEAD's tree;
    /// finding nothing the long way records it (with the lock, `locked`).
    fn staged_changes(&self, ds: &Dirstate, locked: bool) -> RepoResult<Vec<Change>> {
        let head = self.head_tree()?;
        if head.is_some() && head == self.tree_mark().and_then(|m| m.tree_of(ds)) {
            return Ok(Vec::new());
        }
        let head_flat = match head {
            Some(t) => flatten(&self.store, &t)?,
            None => FlatTree::new(),
        };
        let staged = diff_flat(&head_flat, &ds.flat());
        if let (Some(tree), true, true) = (head, staged.is_empty(), locked) {
            self.mark_tree(ds, tree);
        }
        Ok(staged)
    }

    /// The working tree as a flat tree (tracked files, with their current content ids).
    pub fn worktree_flat(&self) -> RepoResult<FlatTree> {
        let (status, ds) = self.worktree_status()?;
        Ok(current_flat(&status, &ds))
    }
}

/// Threads for stat'ing many files: more than cores, as a stat waits now and
/// then (dentry locks, a cold inode). At 100,000 files on 2 cores, 8 threads
/// beat 2 (git's status uses up to 20).
fn stat_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).saturating_mul(4).min(16)
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
