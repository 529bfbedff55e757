//! The working tree: scanning, status, add/rm/mv/restore, and writing trees out.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use dmv_store::object::EntryKind;
use dmv_store::{hash_file, IngestSource, ObjectId, ObjectKind};
use serde::Serialize;

use crate::dirstate::{kind_of, DirEntry, Dirstate};
use crate::error::IoContext;
use crate::repo::DMV_DIR;
use crate::tree::{diff_flat, flatten, Change, ChangeKind, FlatEntry, FlatTree};
use crate::{RepoError, RepoResult, Repository};

pub fn ser_path<S: serde::Serializer>(p: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(p))
}

#[derive(Clone, Debug, Serialize)]
pub struct StatusEntry {
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    pub kind: ChangeKind,
}

#[derive(Debug, Default, Serialize)]
pub struct Status {
    pub branch: Option<String>,
    /// HEAD → dirstate.
    pub staged: Vec<Change>,
    /// dirstate → working tree (tracked files only).
    pub unstaged: Vec<Change>,
    #[serde(serialize_with = "ser_paths")]
    pub untracked: Vec<Vec<u8>>,
    /// The merge in progress, if any, with its unresolved paths.
    pub merge: Option<crate::merge::MergeStatus>,
}

fn ser_paths<S: serde::Serializer>(p: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(p.iter().map(|p| String::from_utf8_lossy(p).into_owned()))
}

impl Status {
    pub fn is_clean(&self) -> bool {
        self.staged.is_empty() && self.unstaged.is_empty()
    }
}

/// Names of the temporary files `write_entry` renames into place.
pub(crate) const TEMP_PREFIX: &str = ".dmv-tmp-";

pub(crate) fn matches(path: &[u8], spec: &[u8]) -> bool {
    spec.is_empty() || path == spec || (path.starts_with(spec) && path.get(spec.len()) == Some(&b'/'))
}

fn symlink_target(path: &Path) -> RepoResult<Vec<u8>> {
    Ok(std::fs::read_link(path).at(path)?.as_os_str().as_bytes().to_vec())
}

pub(crate) fn flat_of(ds: &Dirstate) -> FlatTree {
    ds.entries.iter().map(|(p, e)| (p.clone(), FlatEntry { kind: e.kind, id: e.id, size: e.size })).collect()
}

impl Repository {
    fn dirstate_path(&self) -> std::path::PathBuf {
        self.dmv.join("dirstate")
    }

    pub fn load_dirstate(&self) -> RepoResult<Dirstate> {
        Dirstate::load(&self.dirstate_path())
    }

    /// Callers hold the working-tree lock from before they loaded what they change.
    pub fn save_dirstate(&self, ds: &Dirstate) -> RepoResult<()> {
        self.check_worktree_locked("the dirstate")?;
        ds.save(&self.dirstate_path())
    }

    /// Every file and symlink in the working tree with its lstat, honouring
    /// `.dmvignore`; walked in parallel.
    pub fn scan(&self) -> RepoResult<BTreeMap<Vec<u8>, Metadata>> {
        let found = Mutex::new(Vec::new());
        let error: Mutex<Option<RepoError>> = Mutex::new(None);
        let root = self.root.clone();
        ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_ignore(false)
            .git_global(false)
            .git_exclude(false)
            .follow_links(false)
            .add_custom_ignore_filename(".dmvignore")
            .filter_entry(|e| !(e.depth() == 1 && e.file_name() == DMV_DIR))
            .build_parallel()
            .run(|| {
                let found = &found;
                let error = &error;
                let root = &root;
                Box::new(move |entry| {
                    let entry = match entry {
                        Ok(e) => e,
                        Err(e) => {
                            let mut slot = error.lock().unwrap_or_else(|p| p.into_inner());
                            slot.get_or_insert(RepoError::Invalid(format!("cannot scan the working tree: {e}")));
                            return ignore::WalkState::Quit;
                        }
                    };
                    let Some(ft) = entry.file_type() else { return ignore::WalkState::Continue };
                    if ft.is_file() || ft.is_symlink() {
                        if let (Ok(rel), Ok(meta)) = (entry.path().strip_prefix(root), entry.metadata()) {
                            found.lock().unwrap_or_else(|p| p.into_inner()).push((rel.as_os_str().as_bytes().to_vec(), meta));
                        }
                    }
                    ignore::WalkState::Continue
                })
            });
        if let Some(e) = error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().collect())
    }

    /// The content id of a working-tree file or symlink as it is now.
    pub(crate) fn current_id(&self, rel: &[u8], meta: &Metadata) -> RepoResult<(ObjectId, u64)> {
        let path = self.abs_path(rel);
        if meta.file_type().is_symlink() {
            let target = symlink_target(&path)?;
            return Ok((ObjectId::hash(ObjectKind::Chunk, &target), target.len() as u64));
        }
        let (id, size, _) = hash_file(&path, self.config.chunking)?;
        Ok((id, size))
    }

    pub fn status(&self) -> RepoResult<Status> {
        Ok(self.status_with_dirstate()?.0)
    }

    /// Status, and the (refreshed) dirstate it was computed from.
    pub(crate) fn status_with_dirstate(&self) -> RepoResult<(Status, Dirstate)> {
        // Status only refreshes stat data, which may wait for another time:
        // while another command holds the lock it saves nothing.
        let wlock = self.try_lock_worktree();
        let mut ds = self.load_dirstate()?;
        let head_flat = match self.head_tree()? {
            Some(t) => flatten(&self.store, &t)?,
            None => FlatTree::new(),
        };
        let staged = diff_flat(&head_flat, &flat_of(&ds));
        let mut files = self.scan()?;
        let mut unstaged = Vec::new();
        let mut refreshed = false;
        let written = ds.written_ns;
        for (path, entry) in ds.entries.iter_mut() {
            let meta = match files.remove(path) {
                Some(m) => m,
                // Tracked files stay tracked even when an ignore rule matches them.
                None => match std::fs::symlink_metadata(self.abs_path(path)) {
                    Ok(m) if m.is_file() || m.file_type().is_symlink() => m,
                    _ => {
                        unstaged.push(Change {
                            path: path.clone(),
                            kind: ChangeKind::Deleted,
                            old: Some(FlatEntry { kind: entry.kind, id: entry.id, size: entry.size }),
                            new: None,
                        });
                        continue;
                    }
                },
            };
            let old = FlatEntry { kind: entry.kind, id: entry.id, size: entry.size };
            let kind = kind_of(&meta).unwrap_or(EntryKind::File);
            if kind == entry.kind && entry.stat_matches(&meta, written) {
                continue;
            }
            let (id, size) = self.current_id(path, &meta)?;
            if id == entry.id && kind == entry.kind {
                *entry = DirEntry::new(kind, id, size, &meta);
                refreshed = true;
            } else {
                unstaged.push(Change { path: path.clone(), kind: ChangeKind::Modified, old: Some(old), new: Some(FlatEntry { kind, id, size }) });
            }
        }
        if refreshed && wlock.is_some() {
            // Only a cache refresh: losing it (e.g. read-only repository) costs a re-read next time.
            let _ = self.save_dirstate(&ds);
        }
        drop(wlock);
        let branch = match self.head()? {
            crate::Head::Branch(b) => Some(b),
            crate::Head::Detached(_) => None,
        };
        let merge = self.merge_status()?;
        Ok((Status { branch, staged, unstaged, untracked: files.into_keys().collect(), merge }, ds))
    }

    /// The working tree as a flat tree (tracked files, with their current content ids).
    pub fn worktree_flat(&self) -> RepoResult<FlatTree> {
        let (status, ds) = self.status_with_dirstate()?;
        let mut flat = flat_of(&ds);
        for c in status.unstaged {
            match c.new {
                Some(e) => flat.insert(c.path, e),
                None => flat.remove(&c.path),
            };
        }
        Ok(flat)
    }

    /// Stages files under the given repository-relative paths (empty = everything):
    /// new and modified files are stored, vanished tracked files are unstaged.
    /// With `tracked_only`, untracked files are left alone (`commit -a`).
    pub fn add(&self, specs: &[Vec<u8>], tracked_only: bool, progress: &dyn Fn(u64, u64)) -> RepoResult<usize> {
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut files = self.scan()?;
        // A file named explicitly is added even if an ignore rule matches it.
        for spec in specs {
            if !spec.is_empty() && !files.contains_key(spec) {
                if let Ok(m) = std::fs::symlink_metadata(self.abs_path(spec)) {
                    if m.is_file() || m.file_type().is_symlink() {
                        files.insert(spec.clone(), m);
                    }
                }
            }
        }
        let wanted = |p: &[u8]| specs.iter().any(|s| matches(p, s));
        for spec in specs {
            let hit = files.keys().any(|p| matches(p, spec)) || ds.entries.keys().any(|p| matches(p, spec));
            if !hit {
                return Err(RepoError::NoMatch(String::from_utf8_lossy(spec).into_owned()));
            }
        }
        let mut session = self.store.begin_write()?;
        let mut to_ingest: Vec<(Vec<u8>, Metadata)> = Vec::new();
        let mut changed = 0;
        for (path, meta) in &files {
            if !wanted(path) || (tracked_only && !ds.entries.contains_key(path)) {
                continue;
            }
            let Some(kind) = kind_of(meta) else { continue };
            if let Some(e) = ds.entries.get(path) {
                if e.kind == kind && e.stat_matches(meta, ds.written_ns) {
                    continue;
                }
            }
            if kind == EntryKind::Symlink {
                let target = symlink_target(&self.abs_path(path))?;
                let id = session.put_object(ObjectKind::Chunk, &target)?;
                ds.entries.insert(path.clone(), DirEntry::new(kind, id, target.len() as u64, meta));
                changed += 1;
            } else {
                to_ingest.push((path.clone(), meta.clone()));
            }
        }
        let gone: Vec<Vec<u8>> = ds.entries.keys().filter(|p| wanted(p) && !files.contains_key(*p)).cloned().collect();
        for p in gone {
            ds.entries.remove(&p);
            changed += 1;
        }
        let total: u64 = to_ingest.iter().map(|(_, m)| m.len()).sum();
        let done = std::sync::atomic::AtomicU64::new(0);
        let sources = to_ingest.iter().map(|(p, _)| IngestSource { path: self.abs_path(p) }).collect();
        let results = session.ingest(sources, &|n| {
            let d = done.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
            progress(d, total);
        })?;
        for ((path, _), result) in to_ingest.iter().zip(results) {
            let stored = result?;
            let kind = kind_of(&stored.meta).unwrap_or(EntryKind::File);
            let new = DirEntry::new(kind, stored.id, stored.size, &stored.meta);
            if ds.entries.get(path).map(|e| (e.id, e.kind)) != Some((new.id, new.kind)) {
                changed += 1;
            }
            ds.entries.insert(path.clone(), new);
        }
        session.finish()?;
        self.save_dirstate(&ds)?;
        Ok(changed)
    }

    /// Records the staged tree as a new commit on HEAD. Returns None when
    /// there is nothing to commit. During a merge (all conflicts resolved) the
    /// commit gets both parents, even when its tree equals HEAD's.
    pub fn commit_staged(&self, message: &str) -> RepoResult<Option<ObjectId>> {
        let _wlock = self.lock_worktree()?;
        let merging = self.merge_state()?;
        let parent = self.head_commit()?;
        if let Some(m) = &merging {
            m.check_ready_to_commit(parent)?;
        }
        let ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let flat: Vec<(&[u8], FlatEntry)> = ds.entries.iter().map(|(p, e)| (p.as_slice(), FlatEntry { kind: e.kind, id: e.id, size: e.size })).collect();
        let tree = crate::tree::build(&mut session, &flat)?;
        if let (Some(p), None) = (parent, &merging) {
            if self.commit(&p)?.tree == tree {
                return Ok(None);
            }
        }
        let mut parents: Vec<ObjectId> = parent.into_iter().collect();
        parents.extend(merging.as_ref().map(|m| m.theirs));
        let id = self.write_commit(&mut session, tree, parents, message)?;
        session.finish()?;
        dmv_store::failpoint("commit-before-ref");
        let first_line = message.lines().next().unwrap_or("");
        let what = match (parent, &merging) {
            (None, _) => "commit (initial)",
            (Some(_), Some(_)) => "commit (merge)",
            (Some(_), None) => "commit",
        };
        self.advance_head(parent, id, &format!("{what}: {first_line}"))?;
        dmv_store::failpoint("commit-after-ref");
        if merging.is_some() {
            // After the ref: a crash in between leaves a state file that
            // `merge_state` recognises as finished and removes.
            self.remove_merge_state()?;
        }
        drop(session);
        Ok(Some(id))
    }

    pub fn rm(&self, specs: &[Vec<u8>], cached: bool) -> RepoResult<Vec<Vec<u8>>> {
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut removed = Vec::new();
        for spec in specs {
            let hits: Vec<Vec<u8>> = ds.entries.keys().filter(|p| matches(p, spec)).cloned().collect();
            if hits.is_empty() {
                return Err(RepoError::NoMatch(String::from_utf8_lossy(spec).into_owned()));
            }
            removed.extend(hits);
        }
        for p in &removed {
            ds.entries.remove(p);
        }
        self.save_dirstate(&ds)?;
        if !cached {
            for p in &removed {
                let abs = self.abs_path(p);
                match std::fs::remove_file(&abs) {
                    Ok(()) => self.remove_empty_parents(p),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(RepoError::io(abs, e)),
                }
            }
        }
        Ok(removed)
    }

    pub(crate) fn remove_empty_parents(&self, rel: &[u8]) {
        let mut p = Path::new(OsStr::from_bytes(rel)).parent();
        while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::remove_dir(self.root.join(dir)).is_err() {
                break;
            }
            p = dir.parent();
        }
    }

    /// Renames a tracked file or directory in the working tree and the dirstate.
    pub fn mv(&self, src: &[u8], dst: &[u8]) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let mut dst = dst.to_vec();
        if self.abs_path(&dst).is_dir() {
            let name = src.rsplit(|b| *b == b'/').next().unwrap_or(src);
            dst = if dst.is_empty() { name.to_vec() } else { [dst.as_slice(), b"/", name].concat() };
        }
        if self.abs_path(&dst).symlink_metadata().is_ok() {
            return Err(RepoError::Invalid(format!("destination {} exists", String::from_utf8_lossy(&dst))));
        }
        let moving: Vec<Vec<u8>> = ds.entries.keys().filter(|p| matches(p, src)).cloned().collect();
        if moving.is_empty() || src.is_empty() {
            return Err(RepoError::NoMatch(String::from_utf8_lossy(src).into_owned()));
        }
        let to = self.abs_path(&dst);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        std::fs::rename(self.abs_path(src), &to).at(&to)?;
        for p in moving {
            if let Some(e) = ds.entries.remove(&p) {
                let mut np = dst.clone();
                np.extend_from_slice(&p[src.len()..]);
                ds.entries.insert(np, e);
            }
        }
        self.save_dirstate(&ds)
    }

    /// Writes one stored entry to the working tree (via a temporary name and
    /// rename, so a reader never sees half a file) and returns its new stat.
    pub(crate) fn write_entry(&self, rel: &[u8], e: &FlatEntry) -> RepoResult<Metadata> {
        let path = self.abs_path(rel);
        let parent = self.make_parent_dirs(rel)?;
        if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(&path).at(&path)?;
        }
        // Unique per call: checkout writes from several threads at once.
        static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
        let tmp = parent.join(format!("{TEMP_PREFIX}{}-{}-{}", std::process::id(), NEXT_TEMP.fetch_add(1, Ordering::Relaxed), e.id.short()));
        let _ = std::fs::remove_file(&tmp);
        if e.kind == EntryKind::Symlink {
            let target = self.store.read_kind(&e.id, ObjectKind::Chunk)?;
            std::os::unix::fs::symlink(OsStr::from_bytes(&target), &tmp).at(&tmp)?;
        } else {
            use std::os::unix::fs::OpenOptionsExt;
            let mode = if e.kind == EntryKind::Executable { 0o777 } else { 0o666 };
            let f = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp).at(&tmp)?;
            let mut w = dmv_store::FileWriter::new(f, e.size);
            let written = self.store.write_content(&e.id, &mut w);
            let flushed = w.finish().map_err(|err| RepoError::io(&tmp, err));
            if let Err(err) = written.map_err(RepoError::from).and(flushed.map(|_| ())) {
                let _ = std::fs::remove_file(&tmp);
                return Err(err);
            }
        }
        std::fs::rename(&tmp, &path).at(&path)?;
        std::fs::symlink_metadata(&path).at(&path)
    }

    /// Makes the directories above `rel`; a file or symlink standing where
    /// one of them must go is replaced (never followed). Returns the parent.
    fn make_parent_dirs(&self, rel: &[u8]) -> RepoResult<PathBuf> {
        let mut anc = Path::new(OsStr::from_bytes(rel)).parent();
        let mut chain = Vec::new();
        while let Some(a) = anc.filter(|a| !a.as_os_str().is_empty()) {
            chain.push(self.root.join(a));
            anc = a.parent();
        }
        for a in chain.iter().rev() {
            if let Ok(m) = a.symlink_metadata() {
                if !m.is_dir() {
                    std::fs::remove_file(a).at(a)?;
                }
            }
        }
        let parent = self.abs_path(rel).parent().unwrap_or(&self.root).to_path_buf();
        std::fs::create_dir_all(&parent).at(&parent)?;
        Ok(parent)
    }

    /// `write_entry` into an empty working tree: the file is created under
    /// its own name, as git does. The temporary name, the rename and the
    /// checks of what is in the way are most of the system calls of checking
    /// out many small files, and each looks the name up in its directory
    /// again. The way to a directory is checked once per directory. A kill
    /// can leave the file being written short, as with git; a path that
    /// exists after all (an ignored file) takes the careful way.
    fn write_new_entry(&self, rel: &[u8], e: &FlatEntry, dirs_made: &mut HashSet<PathBuf>) -> RepoResult<Metadata> {
        let path = self.abs_path(rel);
        if let Some(parent) = path.parent() {
            if !dirs_made.contains(parent) {
                self.make_parent_dirs(rel)?;
                dirs_made.insert(parent.to_path_buf());
            }
        }
        if e.kind == EntryKind::Symlink {
            let target = self.store.read_kind(&e.id, ObjectKind::Chunk)?;
            return match std::os::unix::fs::symlink(OsStr::from_bytes(&target), &path) {
                Ok(()) => std::fs::symlink_metadata(&path).at(&path),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => self.write_entry(rel, e),
                Err(err) => Err(RepoError::io(&path, err)),
            };
        }
        use std::os::unix::fs::OpenOptionsExt;
        let mode = if e.kind == EntryKind::Executable { 0o777 } else { 0o666 };
        let f = match std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path) {
            Ok(f) => f,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => return self.write_entry(rel, e),
            Err(err) => return Err(RepoError::io(&path, err)),
        };
        let mut w = dmv_store::FileWriter::new(f, e.size);
        let written = self.store.write_content(&e.id, &mut w).map_err(RepoError::from);
        // The stat data of the open file: no second lookup of the name.
        match written.and_then(|_| w.finish().and_then(|f| f.metadata()).map_err(|err| RepoError::io(&path, err))) {
            Ok(meta) => Ok(meta),
            Err(err) => {
                let _ = std::fs::remove_file(&path);
                Err(err)
            }
        }
    }

    /// Makes the working tree and dirstate match `target`. Refuses when tracked
    /// files have uncommitted changes or untracked files would be overwritten,
    /// and during a merge (switching away would strand its state).
    /// Checks out the commit `head` names and makes it HEAD, as one change
    /// of the working tree (switch, checkout).
    pub fn switch_to(&self, head: &crate::Head, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        let commit = match head {
            crate::Head::Branch(name) => self.refs.get(name)?.ok_or_else(|| RepoError::UnknownRevision(name.clone()))?,
            crate::Head::Detached(id) => *id,
        };
        self.checkout_tree(&self.commit(&commit)?.tree, progress)?;
        self.set_head(head)
    }

    pub fn checkout_tree(&self, target: &ObjectId, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::Conflict(format!("a merge of {} is in progress; commit it or run `dmv merge --abort` first", m.label)));
        }
        self.checkout_tree_during_merge(target, &BTreeMap::new(), progress)
    }

    /// For a clone resumed after it was stopped during its checkout: the
    /// working tree was empty when the clone began, so every file there is
    /// its own. Those that already have the content `target` gives them are
    /// kept (returned for [`Repository::checkout_tree_with`]); the others
    /// (cut short by the interruption) are removed, to be written again.
    pub fn take_over_interrupted_checkout(&self, target: &ObjectId) -> RepoResult<BTreeMap<Vec<u8>, (FlatEntry, Metadata)>> {
        let wanted = flatten(&self.store, target)?;
        let mut kept = BTreeMap::new();
        for (rel, meta) in self.scan()? {
            let entry = wanted.get(&rel).filter(|e| kind_of(&meta) == Some(e.kind));
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

    /// `checkout_tree` for a clone, some of whose files are already in place
    /// (written while their chunks arrived, see [`crate::EarlyCheckout`]):
    /// those whose entry is the target's are recorded with their stat data
    /// instead of being written again.
    pub fn checkout_tree_with(&self, target: &ObjectId, written: &BTreeMap<Vec<u8>, (FlatEntry, Metadata)>, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::Conflict(format!("a merge of {} is in progress; commit it or run `dmv merge --abort` first", m.label)));
        }
        self.checkout_tree_during_merge(target, written, progress)
    }

    /// `checkout_tree` without the merge-in-progress check: the merge itself
    /// writes its result this way.
    pub(crate) fn checkout_tree_during_merge(&self, target: &ObjectId, written: &BTreeMap<Vec<u8>, (FlatEntry, Metadata)>, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        let (status, ds) = self.status_with_dirstate()?;
        if !status.is_clean() {
            let first = status.staged.iter().chain(&status.unstaged).next().map(|c| String::from_utf8_lossy(&c.path).into_owned()).unwrap_or_default();
            return Err(RepoError::Conflict(format!("you have uncommitted changes (e.g. {first}); commit them or restore the files first")));
        }
        let current = flat_of(&ds);
        let wanted = flatten(&self.store, target)?;
        let untracked: BTreeSet<&Vec<u8>> = status.untracked.iter().collect();
        let changes = diff_flat(&current, &wanted);
        for c in &changes {
            let already = c.new.is_some_and(|n| written.get(&c.path).is_some_and(|(w, _)| *w == n));
            if c.kind == ChangeKind::Added && untracked.contains(&c.path) && !already {
                return Err(RepoError::Conflict(format!("untracked file {} would be overwritten; move or remove it first", String::from_utf8_lossy(&c.path))));
            }
        }
        let early = |c: &Change| c.new.is_some_and(|n| written.get(&c.path).is_some_and(|(w, _)| *w == n));
        let total: u64 = changes.iter().filter(|c| !early(c)).filter_map(|c| c.new.map(|e| e.size)).sum();
        let mut done = 0;
        // Nothing tracked and no untracked file but those written while
        // receiving (a clone, or a switch from an empty branch): files are
        // created under their own names.
        let into_empty = ds.entries.is_empty() && status.untracked.iter().all(|p| written.contains_key(p));
        let mut new_ds = ds;
        let mut to_write = Vec::new();
        for c in changes.iter().filter(|c| c.kind != ChangeKind::Deleted) {
            let Some(e) = c.new else { continue };
            if early(c) {
                let (_, meta) = &written[&c.path];
                new_ds.entries.insert(c.path.clone(), DirEntry::new(e.kind, e.id, e.size, meta));
            } else {
                to_write.push((c.path.as_slice(), e));
            }
        }
        // Into an empty tree nothing can be lost and a stopped clone resumes:
        // clone, its hot path, skips the check (a lookup per file).
        if !into_empty {
            self.check_data_present(to_write.iter().map(|(rel, e)| (*rel, e)))?;
        }
        for c in changes.iter().filter(|c| c.kind == ChangeKind::Deleted) {
            let abs = self.abs_path(&c.path);
            match std::fs::remove_file(&abs) {
                Ok(()) => self.remove_empty_parents(&c.path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RepoError::io(abs, e)),
            }
            new_ds.entries.remove(&c.path);
        }
        let mut record = |rel: &[u8], e: &FlatEntry, meta: &Metadata| {
            new_ds.entries.insert(rel.to_vec(), DirEntry::new(e.kind, e.id, e.size, meta));
            done += e.size;
            progress(done, total);
        };
        if into_empty {
            self.write_new_entries(&to_write, &mut record)?;
        } else {
            for (rel, e) in &to_write {
                let meta = self.write_entry(rel, e)?;
                record(rel, e, &meta);
            }
        }
        self.save_dirstate(&new_ds)
    }

    /// Refuses, before anything is deleted or written, a checkout of entries
    /// whose data is not all here (or whose file nodes are damaged).
    pub(crate) fn check_data_present<'e>(&self, entries: impl Iterator<Item = (&'e [u8], &'e FlatEntry)>) -> RepoResult<()> {
        let mut checked = HashSet::new();
        for (rel, e) in entries {
            if e.kind != EntryKind::Dir && checked.insert(e.id) {
                self.store.check_content_present(&e.id).map_err(|reason| RepoError::CheckoutRefused { path: String::from_utf8_lossy(rel).into_owned(), reason })?;
            }
        }
        Ok(())
    }

    /// `write_new_entry` for many files, on several threads when there are
    /// enough of them: creating a file is mostly kernel time (its directory
    /// is searched twice, a page is allocated for its content), and two
    /// threads creating files in different directories do not wait for each
    /// other. Each thread takes whole runs of files of one directory, in tree
    /// order. `record` is called on this thread, once per file written.
    fn write_new_entries(&self, entries: &[(&[u8], FlatEntry)], record: &mut dyn FnMut(&[u8], &FlatEntry, &Metadata)) -> RepoResult<()> {
        const PARALLEL_FROM: usize = 256;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        if threads == 1 || entries.len() < PARALLEL_FROM {
            let mut dirs_made = HashSet::new();
            for (rel, e) in entries {
                let meta = self.write_new_entry(rel, e, &mut dirs_made)?;
                record(rel, e, &meta);
            }
            return Ok(());
        }
        fn parent(rel: &[u8]) -> &[u8] {
            &rel[..rel.iter().rposition(|&b| b == b'/').unwrap_or(0)]
        }
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, (rel, _)) in entries.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if parent(entries[run.start].0) == parent(rel) => run.end = i + 1,
                _ => runs.push(i..i + 1),
            }
        }
        let next_run = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        // Results go to this thread in batches: a message per file would
        // cost more in wake-ups than the file itself.
        const BATCH_FILES: usize = 256;
        const BATCH_BYTES: u64 = 16 << 20;
        let (tx, rx) = mpsc::sync_channel::<(Vec<(usize, Metadata)>, Option<RepoError>)>(16);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (runs, next_run, stop) = (&runs, &next_run, &stop);
                scope.spawn(move || {
                    let mut dirs_made = HashSet::new();
                    let (mut batch, mut batch_bytes) = (Vec::new(), 0);
                    while let Some(run) = runs.get(next_run.fetch_add(1, Ordering::Relaxed)) {
                        for i in run.clone() {
                            if stop.load(Ordering::Relaxed) {
                                return;
                            }
                            let (rel, e) = &entries[i];
                            match self.write_new_entry(rel, e, &mut dirs_made) {
                                Ok(meta) => batch.push((i, meta)),
                                Err(err) => {
                                    stop.store(true, Ordering::Relaxed);
                                    let _ = tx.send((batch, Some(err)));
                                    return;
                                }
                            }
                            batch_bytes += e.size;
                            if batch.len() == BATCH_FILES || batch_bytes >= BATCH_BYTES {
                                if tx.send((std::mem::take(&mut batch), None)).is_err() {
                                    return;
                                }
                                batch_bytes = 0;
                            }
                        }
                    }
                    let _ = tx.send((batch, None));
                });
            }
            drop(tx);
            let mut first_error = None;
            for (batch, err) in rx {
                for (i, meta) in batch {
                    record(entries[i].0, &entries[i].1, &meta);
                }
                if let Some(err) = err {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(err);
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    /// `restore`: worktree files from the dirstate (or `source`), or with
    /// `staged` the dirstate entries from `source` (default HEAD).
    pub fn restore(&self, specs: &[Vec<u8>], source: Option<ObjectId>, staged: bool) -> RepoResult<usize> {
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let source_flat = match source {
            Some(commit) => Some(flatten(&self.store, &self.commit(&commit)?.tree)?),
            None if staged => Some(match self.head_tree()? {
                Some(t) => flatten(&self.store, &t)?,
                None => FlatTree::new(),
            }),
            None => None,
        };
        let from: FlatTree = source_flat.clone().unwrap_or_else(|| flat_of(&ds));
        let mut count = 0;
        for spec in specs {
            let in_from: Vec<(Vec<u8>, FlatEntry)> = from.iter().filter(|(p, _)| matches(p, spec)).map(|(p, e)| (p.clone(), *e)).collect();
            let in_ds: Vec<Vec<u8>> = ds.entries.keys().filter(|p| matches(p, spec)).cloned().collect();
            if in_from.is_empty() && in_ds.is_empty() {
                return Err(RepoError::NoMatch(String::from_utf8_lossy(spec).into_owned()));
            }
            if staged {
                for p in in_ds {
                    ds.entries.remove(&p);
                }
                for (p, e) in in_from {
                    // Unknown stat: the next status re-reads the file once.
                    ds.entries.insert(p, DirEntry { kind: e.kind, id: e.id, size: e.size, mtime_ns: -1, ctime_ns: -1, ino: 0, mode: 0 });
                    count += 1;
                }
            } else {
                for (p, e) in in_from {
                    let meta = self.write_entry(&p, &e)?;
                    if source.is_none() {
                        ds.entries.insert(p, DirEntry::new(e.kind, e.id, e.size, &meta));
                    }
                    count += 1;
                }
            }
        }
        self.save_dirstate(&ds)?;
        Ok(count)
    }
}
