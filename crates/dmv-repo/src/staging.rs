//! Staging: `add`, `rm` and `mv` change the dirstate (and the working tree
//! for `rm` and `mv`), and a commit records the staged tree on HEAD.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use dmv_store::object::EntryKind;
use dmv_store::{IngestSource, ObjectId, ObjectKind, WriteSession};

use crate::dirstate::{kind_of, DirEntry, Dirstate, Stat};
use crate::error::{IoContext, RepoError, RepoResult};
use crate::files::symlink_target;
use crate::paths::{matches, show, Beneath};
use crate::repo::Repository;

/// Files handed to one ingest pipeline at a time by `add`.
const INGEST_BATCH: usize = 8192;

impl Repository {
    /// Stages files under the given repository-relative paths (empty = everything):
    /// new and modified files are stored, vanished tracked files are unstaged.
    /// With `tracked_only`, untracked files are left alone (`commit -a`).
    pub fn add(&self, specs: &[Vec<u8>], tracked_only: bool, progress: &dyn Fn(u64, u64)) -> RepoResult<usize> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let changed = self.stage(&mut session, &mut ds, specs, tracked_only, progress)?;
        session.finish()?;
        self.save_dirstate(&ds)?;
        drop(session);
        self.tidy_store();
        Ok(changed)
    }

    /// `commit -a`: stages the changes of tracked files and commits them in
    /// one write session (one pack, one index, one sync of each), saving the
    /// dirstate before HEAD moves, so that a crash in between leaves the
    /// changes staged, as an `add` would. During a merge it is `add` then
    /// [`Repository::commit_staged`], which records both parents.
    pub fn commit_all(&self, message: &str, progress: &dyn Fn(u64, u64)) -> RepoResult<Option<ObjectId>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if self.merge_state()?.is_some() {
            self.add(&[Vec::new()], true, progress)?;
            return self.commit_staged(message);
        }
        let head = self.head_commit()?;
        let mut ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        self.stage(&mut session, &mut ds, &[Vec::new()], true, progress)?;
        let tree = ds.write_tree(&mut session)?;
        let committed = match head {
            Some(p) if self.commit(&p)?.tree == tree => {
                session.finish()?;
                self.save_dirstate(&ds)?;
                None
            }
            _ => Some(self.commit_on_head(&mut session, tree, head, None, message, Some(&ds))?),
        };
        drop(session);
        self.mark_tree(&ds, tree);
        self.tidy_store();
        Ok(committed)
    }

    /// Stages into `ds` what `add` stages, storing new content in `session`;
    /// returns how many entries changed.
    pub(crate) fn stage(&self, session: &mut WriteSession<'_>, ds: &mut Dirstate, specs: &[Vec<u8>], tracked_only: bool, progress: &dyn Fn(u64, u64)) -> RepoResult<usize> {
        // With `tracked_only`, only the tracked paths are looked at.
        // (Their paths borrowed from the dirstate: a million copies are ~100 MB.)
        let mut files: Vec<(Cow<[u8]>, Stat)> = match tracked_only {
            true => self.stat_tracked(ds)?,
            false => self.scan_sorted()?.into_iter().map(|(p, st)| (Cow::Owned(p), st)).collect(),
        };
        // A file named explicitly is added even if an ignore rule matches it.
        for spec in specs {
            if let (false, Err(at)) = (spec.is_empty(), files.binary_search_by(|(p, _)| p.as_ref().cmp(spec.as_slice()))) {
                if let Some(m) = Beneath::new(&self.root).lstat(spec).map_err(|e| RepoError::io(self.abs_path(spec), e))? {
                    if m.is_file() || m.file_type().is_symlink() {
                        files.insert(at, (Cow::Owned(spec.clone()), Stat::of(&m)));
                    }
                }
            }
        }
        let wanted = |p: &[u8]| specs.iter().any(|s| matches(p, s));
        for spec in specs {
            let hit = files.iter().any(|(p, _)| matches(p, spec)) || ds.entries.keys().any(|p| matches(p, spec));
            if !hit {
                return Err(RepoError::NoMatch(show(spec)));
            }
        }
        // One pass over the working tree and the dirstate, both in path order.
        // A tracked file missing from the working tree is unstaged, unless its data is absent
        // from this (partial) replica: then nothing is there, and that is not a deletion.
        // (With `tracked_only`, every tracked path was stat'ed: one not listed is not there.)
        let to_store = |path: &[u8], meta: &Stat, entry: Option<&DirEntry>| {
            let kind = meta.kind().filter(|_| wanted(path) && !(tracked_only && entry.is_none()))?;
            (!entry.is_some_and(|e| e.kind == kind && e.stat_matches(meta, ds.written_ns))).then_some(kind)
        };
        // Tracked paths the walk did not list: ignored (they stay tracked), gone, or absent.
        let mut unlisted = Vec::new();
        let mut entries = ds.entries.iter().peekable();
        let mut keep = Vec::with_capacity(files.len());
        for (path, meta) in &files {
            unlisted.extend(std::iter::from_fn(|| entries.next_if(|(p, _)| *p < path.as_ref())));
            let entry = entries.next_if(|(p, _)| *p == path.as_ref()).map(|(_, e)| e);
            keep.push(to_store(path, meta, entry).is_some());
        }
        unlisted.extend(entries);
        let (mut also, mut gone) = (Vec::new(), Vec::new());
        let mut beneath = Beneath::new(&self.root);
        for (p, e) in unlisted.into_iter().filter(|(p, _)| wanted(p)) {
            let there = match tracked_only {
                true => None,
                false => beneath.lstat(p).map_err(|err| RepoError::io(self.abs_path(p), err))?.filter(|m| m.is_file() || m.file_type().is_symlink()),
            };
            match there {
                Some(m) if to_store(p, &Stat::of(&m), Some(e)).is_some() => also.push((p.to_vec(), Stat::of(&m))),
                Some(_) => {}
                None if !e.is_absent() => gone.push(p.to_vec()),
                None => {}
            }
        }
        // What is to be stored, made from the list itself, in its place: a
        // first add of a million files would otherwise copy every path.
        let mut kept = keep.into_iter();
        files.retain(|_| kept.next().unwrap_or(false));
        files.shrink_to_fit();
        let mut to_ingest: Vec<(Vec<u8>, Stat)> = files.into_iter().map(|(p, meta)| (p.into_owned(), meta)).collect();
        to_ingest.extend(also);
        let symlinks: Vec<(Vec<u8>, Stat)> = to_ingest.extract_if(.., |(_, meta)| meta.kind() == Some(EntryKind::Symlink)).collect();
        let mut changed = 0;
        for (path, meta) in symlinks {
            let target = symlink_target(&self.abs_path(&path))?;
            let id = session.put_object(ObjectKind::Chunk, &target)?;
            ds.entries.insert(path, DirEntry::with_stat(EntryKind::Symlink, id, target.len() as u64, &meta));
            changed += 1;
        }
        for p in gone {
            ds.entries.remove(&p);
            changed += 1;
        }
        let total: u64 = to_ingest.iter().map(|(_, m)| m.size).sum();
        let done = AtomicU64::new(0);
        // In batches: a result holds a whole stat, too much to keep for a
        // million files at once. Each batch is taken off the list in path
        // order and its paths moved into the dirstate, so the list shrinks
        // as the dirstate grows (a first add of a million files held both
        // whole, ~100 MB more).
        to_ingest.reverse();
        while !to_ingest.is_empty() {
            let mut batch = to_ingest.split_off(to_ingest.len().saturating_sub(INGEST_BATCH));
            batch.reverse();
            if to_ingest.capacity() > 2 * to_ingest.len() + INGEST_BATCH {
                to_ingest.shrink_to_fit();
            }
            let sources = batch.iter().map(|(p, _)| IngestSource { path: self.abs_path(p) }).collect();
            let results = session.ingest(sources, &|n| {
                let d = done.fetch_add(n, Ordering::Relaxed) + n;
                progress(d, total);
            })?;
            for ((path, _), result) in batch.into_iter().zip(results) {
                let stored = result?;
                let kind = kind_of(&stored.meta).unwrap_or(EntryKind::File);
                let new = DirEntry::new(kind, stored.id, stored.size, &stored.meta);
                if ds.entries.get(&path).map(|e| (e.id, e.kind)) != Some((new.id, new.kind)) {
                    changed += 1;
                }
                ds.entries.insert(path, new);
            }
        }
        Ok(changed)
    }

    /// `clean`: deletes the untracked files (not the ignored ones) at or
    /// under `specs` (all: empty), unless `dry_run`; returns their paths.
    /// Files in folders that hold no tracked file are left unless
    /// `folders_too` (git's `-d`). Folders left empty go too.
    pub fn clean(&self, specs: &[Vec<u8>], folders_too: bool, dry_run: bool) -> RepoResult<Vec<Vec<u8>>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let (status, ds) = self.worktree_status()?;
        let mut tracked_folders = std::collections::HashSet::new();
        for (path, _) in ds.entries.iter() {
            let mut folder = path;
            while let Some(at) = folder.iter().rposition(|b| *b == b'/') {
                folder = &folder[..at];
                if !tracked_folders.insert(folder.to_vec()) {
                    break;
                }
            }
        }
        let in_tracked_folder = |p: &[u8]| p.iter().rposition(|b| *b == b'/').is_none_or(|at| tracked_folders.contains(&p[..at]));
        let doomed: Vec<Vec<u8>> =
            status.untracked.into_iter().filter(|p| specs.is_empty() || specs.iter().any(|s| matches(p, s))).filter(|p| folders_too || in_tracked_folder(p)).collect();
        if !dry_run {
            let mut beneath = Beneath::new(&self.root);
            for p in &doomed {
                self.remove_worktree_file_in(&mut beneath, p)?;
            }
        }
        Ok(doomed)
    }

    /// Untracks the files at or under `specs` and, unless `cached`, deletes them.
    pub fn rm(&self, specs: &[Vec<u8>], cached: bool) -> RepoResult<Vec<Vec<u8>>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut removed = Vec::new();
        for spec in specs {
            let hits: Vec<Vec<u8>> = ds.entries.keys().filter(|p| matches(p, spec)).map(<[u8]>::to_vec).collect();
            if hits.is_empty() {
                return Err(RepoError::NoMatch(show(spec)));
            }
            removed.extend(hits);
        }
        for p in &removed {
            ds.entries.remove(p);
        }
        self.save_dirstate(&ds)?;
        if !cached {
            for p in &removed {
                self.remove_worktree_file(p)?;
            }
        }
        Ok(removed)
    }

    /// Renames a tracked file or directory in the working tree and the dirstate.
    pub fn mv(&self, src: &[u8], dst: &[u8]) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut dst = dst.to_vec();
        if self.abs_path(&dst).is_dir() {
            let name = src.rsplit(|b| *b == b'/').next().unwrap_or(src);
            dst = if dst.is_empty() { name.to_vec() } else { [dst.as_slice(), b"/", name].concat() };
        }
        if self.abs_path(&dst).symlink_metadata().is_ok() {
            return Err(RepoError::DestinationExists { path: show(&dst) });
        }
        let moving: Vec<Vec<u8>> = ds.entries.keys().filter(|p| matches(p, src)).map(<[u8]>::to_vec).collect();
        if moving.is_empty() || src.is_empty() {
            return Err(RepoError::NoMatch(show(src)));
        }
        let to = self.abs_path(&dst);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        match std::fs::rename(self.abs_path(src), &to) {
            // Files whose data is absent are not in the working tree: only their entries move.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && moving.iter().all(|p| ds.entries.get(p).is_some_and(|e| e.is_absent())) => {}
            other => other.at(&to)?,
        }
        for p in moving {
            if let Some(e) = ds.entries.remove(&p) {
                let mut np = dst.clone();
                np.extend_from_slice(&p[src.len()..]);
                ds.entries.insert(np, e);
            }
        }
        self.save_dirstate(&ds)
    }

    /// Records the staged tree as a new commit on HEAD (`head`: HEAD's
    /// commit as the caller read it under the working-tree lock). Returns
    /// None when the tree is HEAD's: there is nothing to commit.
    pub(crate) fn commit_dirstate(&self, head: Option<ObjectId>, message: &str) -> RepoResult<Option<ObjectId>> {
        let ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let tree = ds.write_tree(&mut session)?;
        if let Some(p) = head {
            if self.commit(&p)?.tree == tree {
                self.mark_tree(&ds, tree);
                return Ok(None);
            }
        }
        let id = self.commit_on_head(&mut session, tree, head, None, message, None)?;
        drop(session);
        self.mark_tree(&ds, tree);
        Ok(Some(id))
    }

    /// Writes a commit of `tree` whose parents are `head` (HEAD's commit as
    /// the caller read it; None: unborn) and `second` (the other side of a
    /// merge), and moves HEAD to it, saving `staged` as the dirstate just
    /// before. The caller drops `session`, which holds gc off, only after that.
    pub(crate) fn commit_on_head(
        &self,
        session: &mut WriteSession<'_>,
        tree: ObjectId,
        head: Option<ObjectId>,
        second: Option<ObjectId>,
        message: &str,
        staged: Option<&Dirstate>,
    ) -> RepoResult<ObjectId> {
        let parents: Vec<ObjectId> = head.into_iter().chain(second).collect();
        let id = self.write_commit(session, tree, parents, message)?;
        session.finish()?;
        if let Some(ds) = staged {
            self.save_dirstate(ds)?;
        }
        dmv_store::failpoint("commit-before-ref");
        let first_line = message.lines().next().unwrap_or("");
        let what = match (head, second) {
            (None, _) => "commit (initial)",
            (Some(_), Some(_)) => "commit (merge)",
            (Some(_), None) => "commit",
        };
        self.advance_head(head, id, &format!("{what}: {first_line}"))?;
        dmv_store::failpoint("commit-after-ref");
        Ok(id)
    }
}
