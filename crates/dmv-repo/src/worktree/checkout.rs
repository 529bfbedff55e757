//! Checking out: making the working tree and the dirstate match a tree
//! (one core, [`Worktree::update_worktree`], for every kind of checkout:
//! switch, clone, merge), taking over what an interrupted clone wrote, and
//! `restore` of single paths.

use crate::repository::handles::Worktree;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::Metadata;

use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, Progress, StoreError};

use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::tree::{flatten, lookup, tree_reader, FilesInOrder, FlatEntry};
use crate::parallel::{run_batched, Batches};
use crate::paths::{clash_with, matches, show, Beneath};
use crate::worktree::dirstate::{DirEntry, Dirstate, Stat};
use crate::worktree::early::EarlyCheckout;

/// Files already in the working tree with the entry they hold and their stat
/// (written by a clone while their data arrived).
pub(crate) type Written = BTreeMap<Vec<u8>, (FlatEntry, Stat)>;

impl Worktree<'_> {
    /// Makes the working tree and dirstate match `target`. Refuses when
    /// tracked files have uncommitted changes or untracked files would be
    /// overwritten. Files in `written` that already hold the target's entry
    /// are recorded with their stat data instead of being written again.
    /// Knows nothing of merges: callers decide whether a checkout may happen now.
    pub(crate) fn update_worktree(
        &self,
        target: &ObjectId,
        written: &Written,
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        // Which files' data is here is asked of the packs as listed now
        // (a long-lived process, a watcher, may have listed them long ago).
        self.store.reload()?;
        let (status, mut ds) = self.worktree_status()?;
        // Uncommitted changes to a path HEAD and the target hold alike are
        // carried over, staged or not, as git's switch carries them; a
        // change to a path the checkout would write is refused.
        let head_tree = self.head_tree()?;
        let mut carried: HashSet<Vec<u8>> = HashSet::new();
        for c in status.staged.iter().chain(&status.unstaged) {
            let at = |tree: Option<ObjectId>| -> RepoResult<Option<FlatEntry>> {
                tree.map_or(Ok(None), |t| lookup(&self.store, &t, &c.path))
            };
            if at(head_tree)? != at(Some(*target))? {
                return Err(RepoError::UncommittedChanges {
                    path: show(&c.path),
                    merge: false,
                });
            }
            carried.insert(c.path.clone());
        }
        self.read_only_rule_of(target)?;
        self.refuse_folded_names(target)?;
        if ds.entries.is_empty() {
            return self.populate(target, &status.untracked, written, progress);
        }
        let untracked: BTreeSet<Vec<u8>> = status.untracked.into_iter().collect();
        // Already in place: written while its data arrived.
        let early = |rel: &[u8], e: &FlatEntry| written.get(rel).is_some_and(|(w, _)| w == e);
        // The changes are gone through three times as the target's tree is
        // read a folder at a time: what would refuse the checkout, before
        // anything changes; the deletions; the writes. (A list of them beside
        // two flat trees was 624 MB at a million files.)
        let mut total = 0;
        self.each_change_to(&mut ds, target, &mut |rel, tracked, new, _| {
            if carried.contains(rel) {
                return Ok(());
            }
            let Some(e) = new.filter(|e| !early(rel, e)) else {
                return Ok(());
            };
            // Where it goes, or a file where one of its folders goes, or files in a folder where it goes.
            if let (None, Some(in_the_way)) = (
                tracked,
                untracked
                    .get(rel)
                    .cloned()
                    .or_else(|| clash_with(&untracked, rel)),
            ) {
                return Err(RepoError::UntrackedInTheWay {
                    path: show(&in_the_way),
                    merge: false,
                });
            }
            if !self.copies().is_absent_as_listed(&e)? {
                self.check_present(rel, &e)?;
                total += e.size;
            }
            Ok(())
        })?;
        let mut beneath = Beneath::new(&self.root);
        let mut gone = Vec::new();
        self.each_change_to(&mut ds, target, &mut |rel, tracked, new, _| {
            if carried.contains(rel) {
                return Ok(());
            }
            if let (Some(i), None) = (tracked, new) {
                self.remove_worktree_file_in(&mut beneath, rel)?;
                gone.push(i);
            }
            Ok(())
        })?;
        // Files are written a batch at a time, several at once.
        let mut writes = Writes {
            to_write: Vec::new(),
            at: Vec::new(),
            added: Vec::new(),
            done: 0,
            total,
        };
        self.each_change_to(&mut ds, target, &mut |rel, tracked, new, entries| {
            if carried.contains(rel) {
                return Ok(());
            }
            let Some(e) = new else { return Ok(()) };
            let entry = if early(rel, &e) {
                let meta = self.follow_lock_mode(rel, e.kind, &written[rel].1)?;
                DirEntry::with_stat(e.kind, e.id, e.size, &meta)
            } else if self.copies().is_absent_as_listed(&e)? {
                // A file whose new version's data is not here leaves the working tree.
                self.remove_worktree_file_in(&mut beneath, rel)?;
                DirEntry::absent(e.kind, e.id, e.size)
            } else {
                writes.to_write.push((rel.to_vec(), e));
                writes.at.push(tracked);
                if writes.to_write.len() == WRITE_BATCH {
                    self.write_batch(&mut writes, entries, progress)?;
                }
                return Ok(());
            };
            match tracked {
                Some(i) => entries[i] = entry,
                None => writes.added.push((rel.to_vec(), entry)),
            }
            Ok(())
        })?;
        if let Some((_, entries)) = ds.entries.sorted_mut() {
            self.write_batch(&mut writes, entries, progress)?;
        }
        ds.remove_and_insert(gone, writes.added);
        // Absent files are most likely the target's (a meta clone's switch).
        ds.absent_base = Some(*target);
        self.save_dirstate(&ds)?;
        // Staged changes carried over: the dirstate is not the target's tree.
        if carried.is_empty() {
            self.mark_tree(&ds, *target);
        }
        Ok(())
    }

    /// Each difference between the dirstate and `target`'s tree, in path
    /// order, as the tree is read a folder at a time: `visit(path, tracked,
    /// new, entries)` with the position of the dirstate's entry in its
    /// sorted run (None: the target adds the path), the target's entry
    /// (None: it deletes the path), and the run's entries to change.
    #[allow(clippy::type_complexity)]
    pub(crate) fn each_change_to(
        &self,
        ds: &mut Dirstate,
        target: &ObjectId,
        visit: &mut dyn FnMut(
            &[u8],
            Option<usize>,
            Option<FlatEntry>,
            &mut [DirEntry],
        ) -> RepoResult<()>,
    ) -> RepoResult<()> {
        ds.entries.fold();
        let (paths, entries) = ds.entries.sorted_mut().ok_or_else(|| RepoError::Scan {
            detail: "the dirstate could not be put in order".into(),
        })?;
        let read = tree_reader(&self.store);
        let mut i = 0;
        for file in FilesInOrder::new(&read, target)? {
            let (rel, e) = file?;
            while i < paths.len() && paths.path(i) < rel.as_slice() {
                visit(paths.path(i), Some(i), None, entries)?;
                i += 1;
            }
            if i < paths.len() && paths.path(i) == rel.as_slice() {
                if entries[i].id != e.id || entries[i].kind != e.kind {
                    visit(&rel, Some(i), Some(e), entries)?;
                }
                i += 1;
            } else {
                visit(&rel, None, Some(e), entries)?;
            }
        }
        while i < paths.len() {
            visit(paths.path(i), Some(i), None, entries)?;
            i += 1;
        }
        Ok(())
    }

    /// Writes the files of `writes` (over what is there) and records their
    /// entries: in `entries` at their positions, or as added.
    fn write_batch(
        &self,
        writes: &mut Writes,
        entries: &mut [DirEntry],
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        let Writes {
            to_write,
            at,
            added,
            done,
            total,
        } = writes;
        warn_of_kinds_kept_aside(to_write, progress);
        self.write_entries(to_write, WriteWay::Over, &mut |k, meta| {
            let (rel, e) = &to_write[k];
            let entry = DirEntry::new(e.kind, e.id, e.size, meta);
            match at[k] {
                Some(i) => entries[i] = entry,
                None => added.push((rel.clone(), entry)),
            }
            *done += e.size;
            progress.update(*done, *total);
        })?;
        to_write.clear();
        at.clear();
        Ok(())
    }

    /// [`Worktree::update_worktree`] when nothing is tracked (a clone, a
    /// switch from an empty branch): every file of the target is new, so it
    /// needs neither the current flat tree nor a list of changes with a copy
    /// of every path, and the target's files are one sorted vector that
    /// becomes the list to write (a million files: ~100 MB instead of ~400).
    fn populate(
        &self,
        target: &ObjectId,
        untracked: &[Vec<u8>],
        written: &Written,
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        let mut wanted = crate::history::tree::flatten_sorted(&self.store, target)?;
        let untracked_set: BTreeSet<Vec<u8>> = untracked.iter().cloned().collect();
        // Already in place: written while its data arrived.
        let early = |rel: &[u8], e: &FlatEntry| written.get(rel).is_some_and(|(w, _)| w == e);
        for (rel, _) in wanted
            .iter()
            .filter(|(rel, e)| !untracked_set.is_empty() && !early(rel, e))
        {
            let rel: &[u8] = rel;
            // Where it goes, or a file where one of its folders goes, or files in a folder where it goes.
            if let Some(in_the_way) = untracked_set
                .get(rel)
                .cloned()
                .or_else(|| clash_with(&untracked_set, rel))
            {
                return Err(RepoError::UntrackedInTheWay {
                    path: show(&in_the_way),
                    merge: false,
                });
            }
        }
        // No untracked file but those written while receiving: files are created under their own names.
        let into_empty = untracked.iter().all(|p| written.contains_key(p));
        // The dirstate entries of files not to write, in path order like `wanted`.
        let mut side = Vec::new();
        let mut now_absent = Vec::new();
        let mut failed = None;
        // A path leaving `wanted` is moved, not copied: in a meta clone that is every path.
        wanted.retain_mut(|(rel, e)| {
            if early(rel, e) {
                if let Some((_, meta)) = written.get(&rel[..]) {
                    match self.follow_lock_mode(rel, e.kind, meta) {
                        Ok(meta) => side.push((
                            std::mem::take(rel).into_vec(),
                            DirEntry::with_stat(e.kind, e.id, e.size, &meta),
                        )),
                        Err(err) => {
                            failed.get_or_insert(err);
                        }
                    }
                }
                return false;
            }
            match self.copies().is_absent_as_listed(e) {
                Ok(false) => true,
                Ok(true) => {
                    // Into an empty working tree, only a file written while its data
                    // arrived can be where an absent one is (100,000 needless unlinks
                    // were a tenth of a meta clone).
                    if !into_empty || written.contains_key(&rel[..]) {
                        now_absent.push(rel.clone());
                    }
                    side.push((
                        std::mem::take(rel).into_vec(),
                        DirEntry::absent(e.kind, e.id, e.size),
                    ));
                    false
                }
                Err(err) => {
                    failed.get_or_insert(err);
                    false
                }
            }
        });
        if let Some(err) = failed {
            return Err(err);
        }
        wanted.shrink_to_fit();
        if !into_empty {
            self.check_data_present(wanted.iter().map(|(rel, e)| (&rel[..], e)))?;
        }
        let mut beneath = Beneath::new(&self.root);
        for rel in now_absent {
            self.remove_worktree_file_in(&mut beneath, &rel)?;
        }
        let total: u64 = wanted.iter().map(|(_, e)| e.size).sum();
        self.write_and_record(target, &wanted, into_empty, total, side, progress)
    }

    /// Writes `to_write` (in path order) into the working tree and saves as
    /// the dirstate of `target` the entries of `side` (files not written, in
    /// path order too) and the written files with their stat data, the
    /// second over the first. The dirstate is written from the two as one
    /// stream: a checkout of a million files keeps their stat data beside
    /// its list, not a second map of every path. With `into_empty` nothing
    /// is in their way: they are created under their own names.
    fn write_and_record<P: AsRef<[u8]> + Sync>(
        &self,
        target: &ObjectId,
        to_write: &[(P, FlatEntry)],
        into_empty: bool,
        total: u64,
        side: Vec<(Vec<u8>, DirEntry)>,
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        let mut stats = vec![WrittenStat::default(); to_write.len()];
        let mut done = 0;
        let mut record = |i: usize, meta: &Metadata| {
            let st = Stat::of(meta);
            stats[i] = WrittenStat {
                mtime_ns: st.mtime_ns,
                ctime_ns: st.ctime_ns,
                ino: st.ino,
                mode: st.mode,
            };
            done += to_write[i].1.size;
            progress.update(done, total);
        };
        warn_of_kinds_kept_aside(to_write, progress);
        let way = match into_empty {
            true => WriteWay::IntoEmpty,
            false => WriteWay::Over,
        };
        self.write_entries(to_write, way, &mut record)?;
        let written = || {
            to_write.iter().zip(&stats).map(|((rel, e), st)| {
                (
                    rel.as_ref(),
                    DirEntry {
                        kind: e.kind,
                        id: e.id,
                        size: e.size,
                        mtime_ns: st.mtime_ns,
                        ctime_ns: st.ctime_ns,
                        ino: st.ino,
                        mode: st.mode,
                    },
                )
            })
        };
        let side_of = |with_absent: bool| {
            side.iter()
                .filter(move |(_, e)| with_absent || !e.is_absent())
                .map(|(p, e)| (p.as_slice(), e.clone()))
        };
        let entries = || Overlay::new(side_of(true), written());
        // Every file of the target is written or in `side`: what differs from
        // its absent files is known without reading it again.
        let own =
            || -> Box<dyn Iterator<Item = _>> { Box::new(Overlay::new(side_of(false), written())) };
        self.check_worktree_locked("the dirstate")?;
        let staged = Dirstate::save_sorted_knowing(
            &self.dirstate_path(),
            entries().count(),
            entries,
            target,
            own,
        )?;
        // Nothing was staged before (a checkout refuses otherwise): now the entries are the target's.
        self.mark_staged_tree(staged, *target);
        Ok(())
    }

    /// A file written before the checkout (while its data arrived) made
    /// read-only if a checkout would have written it so; its stat after that.
    fn follow_lock_mode(&self, rel: &[u8], kind: EntryKind, stat: &Stat) -> RepoResult<Stat> {
        let wanted = self.new_file_mode(rel, kind);
        if wanted & 0o222 != 0 || stat.mode & 0o222 == 0 {
            return Ok(*stat);
        }
        let path = self.abs_path(rel);
        dmv_os::set_mode(&path, stat.mode & 0o7777 & !0o222).at(&path)?;
        Ok(Stat::of(&std::fs::symlink_metadata(&path).at(&path)?))
    }

    /// Refuses, before anything is deleted or written, a checkout of entries
    /// whose data is not all here (or whose file nodes are damaged).
    pub(crate) fn check_data_present<'e>(
        &self,
        entries: impl Iterator<Item = (&'e [u8], &'e FlatEntry)>,
    ) -> RepoResult<()> {
        let mut checked = HashSet::new();
        for (rel, e) in entries {
            if checked.insert(e.id) {
                self.check_present(rel, e)?;
            }
        }
        Ok(())
    }

    /// [`Worktree::check_data_present`] of one entry.
    fn check_present(&self, rel: &[u8], e: &FlatEntry) -> RepoResult<()> {
        if e.kind == EntryKind::Dir {
            return Ok(());
        }
        let refused = |reason| RepoError::CheckoutRefused {
            path: show(rel),
            reason,
        };
        // Asked once among the packs as listed; only a miss is looked into further.
        match self.store.check_content_listed(&e.id) {
            Err(StoreError::NotFound { .. }) => {}
            other => return other.map_err(refused),
        }
        // In a partial replica a file whose data is not all here stays absent.
        if self.is_partial() && e.kind.is_file() {
            return Ok(());
        }
        // Elsewhere it is refused, unless a pack written since the listing holds it.
        self.store.check_content_present(&e.id).map_err(refused)
    }

    /// Writes many files (with `into_empty`, each with `write_new_entry`,
    /// else with `write_entry`), on several threads when there are enough of
    /// them: creating a file is mostly kernel time (its directory
    /// is searched twice, a page is allocated for its content), and two
    /// threads creating files in different directories do not wait for each
    /// other. Each thread takes whole runs of files of one directory, in tree
    /// order. `record` is called on this thread, once per file written.
    fn write_entries<P: AsRef<[u8]> + Sync>(
        &self,
        entries: &[(P, FlatEntry)],
        way: WriteWay,
        record: &mut dyn FnMut(usize, &Metadata),
    ) -> RepoResult<()> {
        let write = |rel: &[u8], e: &FlatEntry, dirs_made: &mut HashSet<_>| match way {
            WriteWay::IntoEmpty => self.write_new_entry(rel, e, dirs_made),
            WriteWay::WhereNone => self.write_entry_where_none(rel, e, dirs_made),
            WriteWay::Over => self.write_entry_in(rel, e, dirs_made),
        };
        const PARALLEL_FROM: usize = 256;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4);
        if threads == 1 || entries.len() < PARALLEL_FROM {
            let mut dirs_made = HashSet::new();
            for (i, (rel, e)) in entries.iter().enumerate() {
                let meta = write(rel.as_ref(), e, &mut dirs_made)?;
                record(i, &meta);
            }
            return Ok(());
        }
        fn parent(rel: &[u8]) -> &[u8] {
            &rel[..rel.iter().rposition(|&b| b == b'/').unwrap_or(0)]
        }
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, (rel, _)) in entries.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if parent(entries[run.start].0.as_ref()) == parent(rel.as_ref()) => {
                    run.end = i + 1
                }
                _ => runs.push(i..i + 1),
            }
        }
        run_batched(
            &runs,
            threads,
            Batches {
                items: 256,
                weight: 16 << 20,
            },
            |i| entries[i].1.size,
            |i, dirs_made: &mut HashSet<_>| write(entries[i].0.as_ref(), &entries[i].1, dirs_made),
            |i, meta| record(i, &meta),
        )
    }

    /// For a clone resumed after it was stopped during its checkout: the
    /// working tree was empty when the clone began, so every file there is
    /// its own. Those that already have the content `target` gives them are
    /// kept (returned for [`Repository::checkout_tree_with`](crate::Repository::checkout_tree_with)); the others
    /// (cut short by the interruption) are removed, to be written again.
    pub fn take_over_interrupted_checkout(
        &self,
        target: &ObjectId,
    ) -> RepoResult<BTreeMap<Vec<u8>, (FlatEntry, Stat)>> {
        let wanted = flatten(&self.store, target)?;
        let mut kept = BTreeMap::new();
        for (rel, meta) in self.scan()? {
            let entry = wanted.get(&rel).filter(|e| meta.kind() == Some(e.kind));
            match entry {
                Some(e) if self.current_id(&rel, &meta)? == (e.id, e.size) => {
                    kept.insert(rel, (*e, meta));
                }
                _ => {
                    let abs = self.abs_path(&rel);
                    std::fs::remove_file(&abs).at(&abs)?;
                }
            }
        }
        Ok(kept)
    }

    /// `restore`: worktree files from the dirstate (or `source`), or with
    /// `staged` the dirstate entries from `source` (default HEAD).
    pub fn restore(
        &self,
        specs: &[Vec<u8>],
        source: Option<ObjectId>,
        staged: bool,
    ) -> RepoResult<usize> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        // The tree to restore from (None: nothing, an unborn HEAD), or the dirstate.
        let from_tree = match source {
            Some(commit) => Some(Some(self.commit(&commit)?.tree)),
            None if staged => Some(self.head_tree()?),
            None => None,
        };
        let mut count = 0;
        for spec in specs {
            // Only the folder the path names is read (a copy of the whole
            // tree and of the dirstate was 275 MB for a folder of a million files).
            let in_from: Vec<(Vec<u8>, FlatEntry)> = match from_tree {
                Some(Some(tree)) => self.tree_files_at(&tree, spec)?,
                Some(None) => Vec::new(),
                None => ds
                    .entries
                    .iter()
                    .filter(|(p, _)| matches(p, spec))
                    .map(|(p, e)| (p.to_vec(), e.flat()))
                    .collect(),
            };
            let in_ds: Vec<Vec<u8>> = ds
                .entries
                .keys()
                .filter(|p| matches(p, spec))
                .map(<[u8]>::to_vec)
                .collect();
            if in_from.is_empty() && in_ds.is_empty() {
                return Err(RepoError::NoMatch(show(spec)));
            }
            if staged {
                for p in in_ds {
                    ds.entries.remove(&p);
                }
                for (p, e) in in_from {
                    // Unknown stat: the next status re-reads the file once.
                    ds.entries
                        .insert(p, DirEntry::stat_unknown(e.kind, e.id, e.size));
                    count += 1;
                }
            } else {
                for (p, e) in in_from {
                    let meta = self.write_entry(&p, &e)?;
                    if source.is_none() {
                        ds.entries
                            .insert(p, DirEntry::new(e.kind, e.id, e.size, &meta));
                    }
                    count += 1;
                }
            }
        }
        self.save_dirstate(&ds)?;
        Ok(count)
    }

    /// The files of `tree` at or under `spec`, in path order, read from the
    /// folder `spec` names.
    fn tree_files_at(&self, tree: &ObjectId, spec: &[u8]) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let folder = match spec.is_empty() {
            true => *tree,
            false => match lookup(&self.store, tree, spec)? {
                None => return Ok(Vec::new()),
                Some(e) if e.kind != EntryKind::Dir => return Ok(vec![(spec.to_vec(), e)]),
                Some(e) => e.id,
            },
        };
        let read = tree_reader(&self.store);
        let under = |rel: Vec<u8>| match spec.is_empty() {
            true => rel,
            false => [spec, b"/", &rel].concat(),
        };
        FilesInOrder::new(&read, &folder)?
            .map(|f| f.map(|(rel, e)| (under(rel), e)))
            .collect()
    }

    /// Writes the tracked files matching `specs` whose data was absent and
    /// is here now (after a `get`); returns their paths. A file someone put
    /// at such a path meanwhile is left alone (status shows it as changed).
    pub fn fill_absent(&self, specs: &[Vec<u8>]) -> RepoResult<Vec<Vec<u8>>> {
        self.fill_absent_with(specs, None)
    }

    /// [`Worktree::fill_absent`], moving in the files `early` wrote while
    /// their data arrived instead of writing them again from the store.
    pub fn fill_absent_with(
        &self,
        specs: &[Vec<u8>],
        mut early: Option<&mut EarlyCheckout>,
    ) -> RepoResult<Vec<Vec<u8>>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(filled) = self.fill_named_files_over_base(specs, &mut early)? {
            return Ok(filled);
        }
        let mut ds = self.load_dirstate()?;
        let mut filled = Vec::new();
        let wanted: Vec<(Vec<u8>, FlatEntry)> = ds
            .entries
            .iter()
            .filter(|(p, e)| {
                e.is_absent() && (specs.is_empty() || specs.iter().any(|s| matches(p, s)))
            })
            .map(|(p, e)| (p.to_vec(), e.flat()))
            .collect();
        // Those written while their data arrived are moved in here; the
        // rest are written together, on several threads (write_entries).
        let (mut to_write, mut dirs_made) = (Vec::new(), HashSet::new());
        for (rel, e) in wanted {
            if !self.may_fill(&rel, &e)? {
                continue;
            }
            match self.move_in_staged(&rel, &e, &mut early, &mut dirs_made) {
                Some(meta) => {
                    ds.entries
                        .insert(rel.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                    filled.push(rel);
                }
                None => to_write.push((rel, e)),
            }
        }
        self.write_entries(&to_write, WriteWay::WhereNone, &mut |i, meta| {
            let (rel, e) = &to_write[i];
            ds.entries
                .insert(rel.clone(), DirEntry::new(e.kind, e.id, e.size, meta));
            filled.push(rel.clone());
        })?;
        filled.sort_unstable();
        if !filled.is_empty() {
            self.save_dirstate(&ds)?;
        }
        Ok(filled)
    }

    /// Whether absent file `rel` (entry `e`) is to be written: its data is
    /// here now and nobody put a file at its path meanwhile.
    fn may_fill(&self, rel: &[u8], e: &FlatEntry) -> RepoResult<bool> {
        Ok(!self.copies().is_absent(e)? && std::fs::symlink_metadata(self.abs_path(rel)).is_err())
    }

    /// The stat of `rel` once the file an early checkout wrote for it is
    /// moved in; None when there is none, or it cannot be moved.
    fn move_in_staged(
        &self,
        rel: &[u8],
        e: &FlatEntry,
        early: &mut Option<&mut EarlyCheckout>,
        dirs_made: &mut HashSet<std::path::PathBuf>,
    ) -> Option<Metadata> {
        early
            .as_deref_mut()
            .and_then(|early| early.take_staged(rel, &e.id))
            .and_then(|staged| self.move_in(rel, e.kind, &staged, dirs_made).ok())
    }

    /// Writes the absent file `rel` (entry `e`) if [`Worktree::may_fill`];
    /// returns its new entry.
    fn fill_one_absent(
        &self,
        rel: &[u8],
        e: &FlatEntry,
        early: &mut Option<&mut EarlyCheckout>,
    ) -> RepoResult<Option<DirEntry>> {
        if !self.may_fill(rel, e)? {
            return Ok(None);
        }
        // A staged file that cannot be moved in is written again from the store.
        let meta = match self.move_in_staged(rel, e, early, &mut HashSet::new()) {
            Some(meta) => meta,
            None => self.write_entry_where_none(rel, e, &mut HashSet::new())?,
        };
        Ok(Some(DirEntry::new(e.kind, e.id, e.size, &meta)))
    }

    /// [`Worktree::fill_absent_with`] of files named one by one in a
    /// dirstate saved over a tree (a partial replica's): each is looked
    /// up along its path and the file of the dirstate's own entries
    /// rewritten, where loading and saving the whole dirstate read every
    /// folder of the tree twice (a get of one file of 100,000 spent 80 of
    /// its 133 ms there). None when a spec names a folder or no file of
    /// that tree, or the dirstate is not saved over one: the caller then
    /// goes the whole way. The working-tree lock is the caller's.
    fn fill_named_files_over_base(
        &self,
        specs: &[Vec<u8>],
        early: &mut Option<&mut EarlyCheckout>,
    ) -> RepoResult<Option<Vec<Vec<u8>>>> {
        if specs.is_empty() || specs.iter().any(|s| s.is_empty()) {
            return Ok(None);
        }
        let path = self.dirstate_path();
        let Some((Some(base), mut own)) = Dirstate::load_own(&path)? else {
            return Ok(None);
        };
        let mut wanted = Vec::with_capacity(specs.len());
        for spec in specs {
            let Some(in_base) = lookup(&self.store, &base, spec)? else {
                return Ok(None);
            };
            let beneath = |p: &[u8]| p.len() > spec.len() && matches(p, spec);
            if !in_base.kind.is_file() || own.keys().any(beneath) {
                return Ok(None);
            }
            let entry = match own.get(spec) {
                Some(e) if !e.is_absent() || e.is_removed() => continue,
                Some(e) => e.flat(),
                None => in_base,
            };
            wanted.push((spec.clone(), entry));
        }
        let mut filled = Vec::new();
        for (rel, e) in wanted {
            if let Some(written) = self.fill_one_absent(&rel, &e, early)? {
                own.insert(rel.clone(), written);
                filled.push(rel);
            }
        }
        if !filled.is_empty() {
            Dirstate::save_own_over(&path, &base, &own)?;
        }
        Ok(Some(filled))
    }
}

/// How [`Worktree::write_entries`] writes each file: into a working tree
/// that was empty (under its own name), where nothing is (a file whose
/// data was absent: named once whole), or over whatever is there (by a
/// temporary name and a rename).
#[derive(Clone, Copy)]
enum WriteWay {
    IntoEmpty,
    WhereNone,
    Over,
}

/// Files a checkout writes at a time (each written batch's list is let go).
const WRITE_BATCH: usize = 4096;

/// The files a checkout is writing, and what it wrote.
struct Writes {
    to_write: Vec<(Vec<u8>, FlatEntry)>,
    /// Each one's position among the dirstate's entries (None: added).
    at: Vec<Option<usize>>,
    added: Vec<(Vec<u8>, DirEntry)>,
    done: u64,
    total: u64,
}

/// What a written file's entry needs of its stat data (its size is the
/// entry's): a checkout keeps one per file it writes.
#[derive(Clone, Copy, Default)]
struct WrittenStat {
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    mode: u32,
}

/// Two sequences of entries in path order as one, `over`'s entry taking the
/// place of `under`'s for a path both have.
struct Overlay<
    'p,
    A: Iterator<Item = (&'p [u8], DirEntry)>,
    B: Iterator<Item = (&'p [u8], DirEntry)>,
> {
    under: std::iter::Peekable<A>,
    over: std::iter::Peekable<B>,
}

impl<'p, A: Iterator<Item = (&'p [u8], DirEntry)>, B: Iterator<Item = (&'p [u8], DirEntry)>>
    Overlay<'p, A, B>
{
    fn new(under: A, over: B) -> Self {
        Overlay {
            under: under.peekable(),
            over: over.peekable(),
        }
    }
}

impl<'p, A: Iterator<Item = (&'p [u8], DirEntry)>, B: Iterator<Item = (&'p [u8], DirEntry)>>
    Iterator for Overlay<'p, A, B>
{
    type Item = (&'p [u8], DirEntry);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.under.peek(), self.over.peek()) {
            (Some((u, _)), Some((o, _))) if u < o => self.under.next(),
            (Some((u, _)), Some((o, _))) if u == o => {
                self.under.next();
                self.over.next()
            }
            (Some(_), None) => self.under.next(),
            _ => self.over.next(),
        }
    }
}

/// Says how many of the files about to be written lose their kind in the
/// working tree where the system keeps no executable bit or makes no
/// symlinks (Windows): the tree keeps it, and so does what is committed
/// from here (see `kind_on_disk`).
fn warn_of_kinds_kept_aside<P: AsRef<[u8]>>(entries: &[(P, FlatEntry)], progress: &dyn Progress) {
    let count = |kind: EntryKind| entries.iter().filter(|(_, e)| e.kind == kind).count();
    let links = if dmv_os::SYMLINKS {
        0
    } else {
        count(EntryKind::Symlink)
    };
    if links > 0 {
        progress.warn(&format!("{links} symlinks checked out as plain files holding their targets (this system makes no symlinks here); they stay symlinks in what you commit"));
    }
    let tools = if dmv_os::EXECUTABLE_BIT {
        0
    } else {
        count(EntryKind::Executable)
    };
    if tools > 0 {
        progress.warn(&format!("{tools} executable files checked out without an executable bit (this file system keeps none); they stay executable in what you commit"));
    }
}
