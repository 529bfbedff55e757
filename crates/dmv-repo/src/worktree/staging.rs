//! Staging: `add`, `rm` and `mv` change the dirstate (and the working tree
//! for `rm` and `mv`), and a commit records the staged tree on HEAD (the
//! commit commands, which consult a merge in progress, are in
//! `operations::merge_aware`).

use crate::repository::handles::Worktree;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use dmv_store::object::EntryKind;
use dmv_store::{IngestSource, ObjectId, ObjectKind, Progress, Tally, WriteSession};

use crate::error::{IoContext, RepoError, RepoResult};
use crate::paths::{is_reserved_name, matches, show, Beneath};
use crate::repository::repo::Repository;
use crate::worktree::dirstate::{kind_of, kind_on_disk, DirEntry, Dirstate, Stat};
use crate::worktree::files::symlink_target;
use crate::worktree::sieve::{differs, sift, Seen};
use crate::worktree::walk::stat_threads;

/// Files handed to one ingest pipeline at a time by `add`.
const INGEST_BATCH: usize = 8192;

impl Worktree<'_> {
    /// Stages files under the given repository-relative paths (empty = everything):
    /// new and modified files are stored, vanished tracked files are unstaged.
    /// With `tracked_only`, untracked files are left alone (`commit -a`).
    pub fn add(
        &self,
        specs: &[Vec<u8>],
        tracked_only: bool,
        progress: &dyn Progress,
    ) -> RepoResult<usize> {
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

    /// The paths among `specs` that name an untracked file an ignore rule
    /// leaves out (or one inside an ignored folder): `add` stages a file
    /// named so, and a front end may ask first, as git's `add` wants `-f`.
    pub fn ignored_paths(&self, specs: &[Vec<u8>]) -> RepoResult<Vec<Vec<u8>>> {
        let ds = self.load_dirstate()?;
        let mut ignored = Vec::new();
        for spec in specs
            .iter()
            .filter(|s| !s.is_empty() && !ds.entries.contains_key(s))
        {
            let Some(st) = Beneath::new(&self.root)
                .stat(spec)
                .map_err(|e| RepoError::io(self.abs_path(spec), e))?
            else {
                continue;
            };
            if !st.is_file_or_symlink() {
                continue;
            }
            let found = Mutex::new(false);
            crate::worktree::walk::walk_under(
                &self.root,
                std::slice::from_ref(spec),
                1,
                &|files| {
                    if !files.is_empty() {
                        *lock(&found) = true;
                    }
                },
            )?;
            if !found.into_inner().unwrap_or_else(|p| p.into_inner()) {
                ignored.push(spec.clone());
            }
        }
        Ok(ignored)
    }

    /// Stages into `ds` what `add` stages, storing new content in `session`;
    /// returns how many entries changed.
    pub(crate) fn stage(
        &self,
        session: &mut WriteSession<'_>,
        ds: &mut Dirstate,
        specs: &[Vec<u8>],
        tracked_only: bool,
        progress: &dyn Progress,
    ) -> RepoResult<usize> {
        let wanted = |p: &[u8]| specs.iter().any(|s| matches(p, s));
        // Positions in one sorted run name the tracked entries until the
        // untracked files are inserted, last.
        ds.entries.fold();
        let seen = Seen::new(ds.entries.len());
        let written_ns = ds.written_ns;
        let tally = Tally::new(progress, 0);
        let mut storing = Storing {
            repo: self,
            session,
            tally: &tally,
            changed: 0,
        };
        // Tracked files whose stat changed are stored as they are found, and
        // their entries changed in place; untracked ones are listed.
        let mut untracked = {
            let shared = RwLock::new(&mut *ds);
            match tracked_only {
                true => {
                    self.stage_tracked_by_stat(&shared, &wanted, &seen, &mut storing)?;
                    Vec::new()
                }
                false => self.stage_walked(&shared, specs, &wanted, &seen, &mut storing)?,
            }
        };
        // Tracked paths not found: ignored (they stay tracked), gone, or
        // absent. A tracked file missing from the working tree is unstaged,
        // unless its data is absent from this (partial) replica: then nothing
        // is there, and that is not a deletion. (With `tracked_only`, every
        // tracked path was stat'ed: one not found is not there.)
        let (mut also, mut gone) = (Vec::new(), Vec::new());
        {
            let entries = ds.entries.sorted().unwrap_or_default();
            let mut beneath = Beneath::new(&self.root);
            for i in (0..entries.len()).filter(|&i| !seen.was_seen(i) && wanted(entries.path(i))) {
                let (p, e) = (entries.path(i), entries.value(i));
                let there = match tracked_only {
                    true => None,
                    false => beneath
                        .stat(p)
                        .map_err(|err| RepoError::io(self.abs_path(p), err))?
                        .filter(Stat::is_file_or_symlink),
                };
                match there {
                    Some(st) if differs(e, &st, written_ns) => also.push((i, st)),
                    Some(_) => {}
                    None if !e.is_absent() => gone.push(p.to_vec()),
                    None => {}
                }
            }
        }
        storing.store_tracked(&RwLock::new(&mut *ds), also)?;
        untracked.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // A file named explicitly is added even if an ignore rule matches it
        // (but never one inside .dmv or a temporary file, as the walk skips them).
        let reserved = |spec: &[u8]| spec.split(|b| *b == b'/').any(is_reserved_name);
        for spec in specs.iter().filter(|s| {
            !s.is_empty() && !tracked_only && !ds.entries.contains_key(s) && !reserved(s)
        }) {
            if let Err(at) = untracked.binary_search_by(|(p, _)| p.as_slice().cmp(spec)) {
                if let Some(st) = Beneath::new(&self.root)
                    .stat(spec)
                    .map_err(|e| RepoError::io(self.abs_path(spec), e))?
                {
                    if st.is_file_or_symlink() {
                        untracked.insert(at, (spec.clone(), st));
                    }
                }
            }
        }
        // Nothing is saved when a path matches nothing: what was stored is
        // garbage for gc. (The empty path, everything, matches nothing only
        // where nothing is tracked yet: not an error.)
        for spec in specs.iter().filter(|s| !s.is_empty()) {
            if !untracked.iter().any(|(p, _)| matches(p, spec))
                && !ds.entries.keys().any(|p| matches(p, spec))
            {
                return Err(RepoError::NoMatch(show(spec)));
            }
        }
        storing.changed += gone.len();
        for p in gone {
            ds.entries.remove(&p);
        }
        storing.store_untracked(ds, untracked)?;
        Ok(storing.changed)
    }

    /// `add`'s walk of the working tree: each folder's files are compared
    /// with the dirstate as the walk reads it, the tracked ones that changed
    /// stored a batch at a time while the walk goes on. Returns the
    /// untracked files `wanted` asks for.
    fn stage_walked(
        &self,
        ds: &RwLock<&mut Dirstate>,
        specs: &[Vec<u8>],
        wanted: &(dyn Fn(&[u8]) -> bool + Sync),
        seen: &Seen,
        storing: &mut Storing<'_, '_, '_>,
    ) -> RepoResult<Vec<(Vec<u8>, Stat)>> {
        let untracked = Mutex::new(Vec::new());
        let pending = Mutex::new(Vec::new());
        let failed = AtomicBool::new(false);
        let tally = storing.tally;
        // One batch waits while one is stored: the walk runs ahead by no more.
        let (full, batches) = std::sync::mpsc::sync_channel::<Vec<(usize, Stat)>>(1);
        let (walked, stored) = std::thread::scope(|s| {
            let walk = s.spawn(|| {
                let full = full;
                // Only where the paths asked for are: one file added in a tree of a million is one stat.
                crate::worktree::walk::walk_under(&self.root, specs, stat_threads(), &|files| {
                    if failed.load(Ordering::Relaxed) {
                        files.clear();
                        return;
                    }
                    let (mut changed, mut new) = (Vec::new(), Vec::new());
                    {
                        let ds = read(ds);
                        let entries = ds.entries.sorted().unwrap_or_default();
                        let tracked = |i: usize, meta: Stat| {
                            if wanted(entries.path(i))
                                && differs(entries.value(i), &meta, ds.written_ns)
                            {
                                tally.expect(meta.size);
                                changed.push((i, meta));
                            }
                        };
                        sift(entries, seen, files, tracked, |path, meta| {
                            if wanted(&path) {
                                new.push((path, meta));
                            }
                        });
                    }
                    lock(&untracked).append(&mut new);
                    let batch = {
                        let mut pending = lock(&pending);
                        pending.append(&mut changed);
                        (pending.len() >= INGEST_BATCH).then(|| std::mem::take(&mut *pending))
                    };
                    if let Some(batch) = batch {
                        // Every batch is taken, even after a failure: refused only if this thread's caller panicked.
                        let _ = full.send(batch);
                    }
                })
            });
            let mut stored = Ok(());
            for batch in batches.iter() {
                if stored.is_ok() {
                    stored = storing.store_tracked(ds, batch);
                    failed.store(stored.is_err(), Ordering::Relaxed);
                }
            }
            (walk.join(), stored)
        });
        walked.map_err(|_| RepoError::Scan {
            detail: "the walk of the working tree stopped unexpectedly".into(),
        })??;
        stored?;
        storing.store_tracked(ds, pending.into_inner().unwrap_or_else(|p| p.into_inner()))?;
        Ok(untracked.into_inner().unwrap_or_else(|p| p.into_inner()))
    }

    /// `commit -a`'s look at the working tree: the tracked paths are stat'ed
    /// a slice at a time, and those that changed are stored.
    fn stage_tracked_by_stat(
        &self,
        ds: &RwLock<&mut Dirstate>,
        wanted: &dyn Fn(&[u8]) -> bool,
        seen: &Seen,
        storing: &mut Storing<'_, '_, '_>,
    ) -> RepoResult<()> {
        const SLICE: usize = 1 << 16;
        let count = read(ds).entries.len();
        for start in (0..count).step_by(SLICE) {
            let changed = {
                let ds = read(ds);
                let entries = ds.entries.sorted().unwrap_or_default();
                let paths: Vec<&[u8]> = (start..(start + SLICE).min(count))
                    .map(|i| entries.path(i))
                    .collect();
                let mut changed = Vec::new();
                for (i, meta) in (start..).zip(self.stat_paths(&paths)?) {
                    let Some(meta) = meta else { continue };
                    seen.mark(i);
                    if wanted(entries.path(i)) && differs(entries.value(i), &meta, ds.written_ns) {
                        storing.tally.expect(meta.size);
                        changed.push((i, meta));
                    }
                }
                changed
            };
            storing.store_tracked(ds, changed)?;
        }
        Ok(())
    }

    /// `clean`: deletes the untracked files (not the ignored ones) at or
    /// under `specs` (all: empty), unless `dry_run`; returns their paths.
    /// Files in folders that hold no tracked file are left unless
    /// `folders_too` (git's `-d`). Folders left empty go too.
    pub fn clean(
        &self,
        specs: &[Vec<u8>],
        folders_too: bool,
        dry_run: bool,
    ) -> RepoResult<Vec<Vec<u8>>> {
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
        let in_tracked_folder = |p: &[u8]| {
            p.iter()
                .rposition(|b| *b == b'/')
                .is_none_or(|at| tracked_folders.contains(&p[..at]))
        };
        let doomed: Vec<Vec<u8>> = status
            .untracked
            .into_iter()
            .filter(|p| specs.is_empty() || specs.iter().any(|s| matches(p, s)))
            .filter(|p| folders_too || in_tracked_folder(p))
            .collect();
        if !dry_run {
            let mut beneath = Beneath::new(&self.root);
            for p in &doomed {
                self.remove_worktree_file_in(&mut beneath, p)?;
            }
        }
        Ok(doomed)
    }

    /// Stages `content` as the file at `path` (of `kind`) in place of the
    /// staged version `was` (None: none was staged): `add -p`'s chosen
    /// changes put on what was staged. Refused with nothing changed when
    /// what is staged there is no longer `was` (another command staged it
    /// while a person chose). The entry's stat matches no file, so status
    /// reads the working file again.
    pub fn stage_content(
        &self,
        path: &[u8],
        kind: EntryKind,
        content: &[u8],
        was: Option<ObjectId>,
    ) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        if ds.entries.get(path).map(|e| e.id) != was {
            return Err(RepoError::StagedMeanwhile { path: show(path) });
        }
        let mut session = self.store.begin_write()?;
        let (id, size) = session.put_content(&mut std::io::Cursor::new(content))?;
        session.finish()?;
        drop(session);
        ds.entries
            .insert(path.to_vec(), DirEntry::stat_unknown(kind, id, size));
        self.save_dirstate(&ds)
    }

    /// Untracks the files at or under `specs` and, unless `cached`, deletes them.
    pub fn rm(&self, specs: &[Vec<u8>], cached: bool) -> RepoResult<Vec<Vec<u8>>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut removed = Vec::new();
        for spec in specs {
            let hits: Vec<Vec<u8>> = ds
                .entries
                .keys()
                .filter(|p| matches(p, spec))
                .map(<[u8]>::to_vec)
                .collect();
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
            dst = if dst.is_empty() {
                name.to_vec()
            } else {
                [dst.as_slice(), b"/", name].concat()
            };
        }
        if self.abs_path(&dst).symlink_metadata().is_ok() {
            return Err(RepoError::DestinationExists { path: show(&dst) });
        }
        let moving: Vec<Vec<u8>> = ds
            .entries
            .keys()
            .filter(|p| matches(p, src))
            .map(<[u8]>::to_vec)
            .collect();
        if moving.is_empty() || src.is_empty() {
            return Err(RepoError::NoMatch(show(src)));
        }
        let to = self.abs_path(&dst);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        match std::fs::rename(self.abs_path(src), &to) {
            // Files whose data is absent are not in the working tree: only their entries move.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && moving
                        .iter()
                        .all(|p| ds.entries.get(p).is_some_and(|e| e.is_absent())) => {}
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
    /// None when the tree is HEAD's (unless `allow_empty`): there is nothing to commit.
    pub(crate) fn commit_dirstate(
        &self,
        head: Option<ObjectId>,
        message: &str,
        allow_empty: bool,
    ) -> RepoResult<Option<ObjectId>> {
        let ds = self.load_dirstate()?;
        if head.is_none() && ds.entries.is_empty() {
            return Ok(None);
        }
        let mut session = self.store.begin_write()?;
        let tree = ds.write_tree(&mut session)?;
        if let Some(p) = head.filter(|_| !allow_empty) {
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

/// What `stage` has stored so far, and how it reports progress.
struct Storing<'r, 's, 'w> {
    repo: &'r Repository,
    session: &'s mut WriteSession<'w>,
    /// Bytes stored of those found to store so far (the walk adds to them
    /// as it goes).
    tally: &'r Tally<'r>,
    /// Entries changed.
    changed: usize,
}

impl Storing<'_, '_, '_> {
    /// Stores tracked files (by position in the dirstate's sorted run) and
    /// changes their entries in place.
    fn store_tracked(
        &mut self,
        ds: &RwLock<&mut Dirstate>,
        files: Vec<(usize, Stat)>,
    ) -> RepoResult<()> {
        for batch in files.chunks(INGEST_BATCH) {
            let paths: Vec<Vec<u8>> = {
                let ds = read(ds);
                let entries = ds.entries.sorted().unwrap_or_default();
                batch
                    .iter()
                    .map(|(i, _)| entries.path(*i).to_vec())
                    .collect()
            };
            let stored = self.store(
                paths
                    .iter()
                    .map(Vec::as_slice)
                    .zip(batch.iter().map(|(_, meta)| meta)),
            )?;
            let mut ds = ds.write().unwrap_or_else(|p| p.into_inner());
            for ((i, _), mut new) in batch.iter().zip(stored) {
                if let Some(entry) = ds.entries.sorted_value_mut(*i) {
                    new.kind = kind_on_disk(new.kind, entry.kind);
                    if (entry.id, entry.kind) != (new.id, new.kind) {
                        self.changed += 1;
                    }
                    *entry = new;
                }
            }
        }
        Ok(())
    }

    /// Stores untracked files (in path order) and inserts their entries,
    /// moving each path into the dirstate as its batch is stored, so that
    /// the list shrinks as the dirstate grows (a first add of a million
    /// files held both whole, ~100 MB more).
    fn store_untracked(
        &mut self,
        ds: &mut Dirstate,
        mut files: Vec<(Vec<u8>, Stat)>,
    ) -> RepoResult<()> {
        self.tally.expect(files.iter().map(|(_, m)| m.size).sum());
        files.reverse();
        while !files.is_empty() {
            let mut batch = files.split_off(files.len().saturating_sub(INGEST_BATCH));
            batch.reverse();
            if files.capacity() > 2 * files.len() + INGEST_BATCH {
                files.shrink_to_fit();
            }
            let stored = self.store(batch.iter().map(|(p, meta)| (p.as_slice(), meta)))?;
            self.changed += batch.len();
            for ((path, _), entry) in batch.into_iter().zip(stored) {
                ds.entries.insert(path, entry);
            }
        }
        Ok(())
    }

    /// Stores files and symlinks; their new entries, in the same order.
    fn store<'p>(
        &mut self,
        files: impl Iterator<Item = (&'p [u8], &'p Stat)>,
    ) -> RepoResult<Vec<DirEntry>> {
        let mut entries = Vec::new();
        let mut sources = Vec::new();
        // Where each file's entry goes: symlinks are stored here and now.
        let mut at = Vec::new();
        for (path, meta) in files {
            if meta.kind() == Some(EntryKind::Symlink) {
                let target = symlink_target(&self.repo.abs_path(path))?;
                let id = self.session.put_object(ObjectKind::Chunk, &target)?;
                entries.push(Some(DirEntry::with_stat(
                    EntryKind::Symlink,
                    id,
                    target.len() as u64,
                    meta,
                )));
            } else {
                at.push(entries.len());
                entries.push(None);
                sources.push(IngestSource {
                    path: self.repo.abs_path(path),
                });
            }
        }
        let results = self.session.ingest(sources, self.tally)?;
        for (k, result) in at.into_iter().zip(results) {
            let stored = result?;
            let kind = kind_of(&stored.meta).unwrap_or(EntryKind::File);
            entries[k] = Some(match stored.racy {
                true => DirEntry::stat_unknown(kind, stored.id, stored.size),
                false => DirEntry::new(kind, stored.id, stored.size, &stored.meta),
            });
        }
        Ok(entries.into_iter().flatten().collect())
    }
}

fn read<'l, 'd>(
    ds: &'l RwLock<&'d mut Dirstate>,
) -> std::sync::RwLockReadGuard<'l, &'d mut Dirstate> {
    ds.read().unwrap_or_else(|p| p.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
