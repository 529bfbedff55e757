//! What the working tree holds and how it differs from the dirstate and
//! HEAD: scanning it, content ids of its files, and the three lists of a
//! status (staged, unstaged, untracked). Knows nothing of merges: the full
//! `status` with the merge in progress is made in `ops.rs`.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use dmv_store::object::EntryKind;
use dmv_store::{hash_file, ObjectId, ObjectKind};
use serde::Serialize;

use crate::dirstate::{kind_of, DirEntry, Dirstate};
use crate::error::{RepoError, RepoResult};
use crate::files::symlink_target;
use crate::paths::{ser_path, DMV_DIR};
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
                            slot.get_or_insert(RepoError::Scan { detail: e.to_string() });
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

    /// The status of the working tree, and the (refreshed) dirstate it was
    /// computed from.
    pub(crate) fn worktree_status(&self) -> RepoResult<(WorktreeStatus, Dirstate)> {
        // Status only refreshes stat data, which may wait for another time:
        // while another command holds the lock it saves nothing.
        let wlock = self.try_lock_worktree();
        let mut ds = self.load_dirstate()?;
        let head_flat = match self.head_tree()? {
            Some(t) => flatten(&self.store, &t)?,
            None => FlatTree::new(),
        };
        let staged = diff_flat(&head_flat, &ds.flat());
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
                    // Its data is not here, so neither is the file: nothing changed.
                    _ if entry.is_absent() => continue,
                    _ => {
                        unstaged.push(Change { path: path.clone(), kind: ChangeKind::Deleted, old: Some(entry.flat()), new: None });
                        continue;
                    }
                },
            };
            let old = entry.flat();
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
        Ok((WorktreeStatus { staged, unstaged, untracked: files.into_keys().collect() }, ds))
    }

    /// The working tree as a flat tree (tracked files, with their current content ids).
    pub fn worktree_flat(&self) -> RepoResult<FlatTree> {
        let (status, ds) = self.worktree_status()?;
        Ok(current_flat(&status, &ds))
    }
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
