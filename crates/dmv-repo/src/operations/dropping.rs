//! Freeing a file's data here, safely against other replicas doing the same.
//!
//! A replica that drops data first asks others to confirm, live, that they
//! hold it, and each confirmation locks that copy there (a file under
//! `.dmv/content-locks/`, until unlocked or expired) against that replica's
//! own drop. Confirming and dropping both run under `.dmv/drop.lock`, so a
//! copy is either confirmed and locked before a drop here looks at the locks
//! (which then refuses), or dropped before the confirmation looks (which
//! then finds nothing to confirm): two replicas dropping the same data at
//! once cannot both count on each other. Both look at the store anew once
//! they hold the lock: what a process listed before it waited may be gone.

use crate::repository::handles::Copies;
use std::collections::HashSet;
use std::fs::File;

use dmv_os::MetadataExt;
use dmv_store::object::{EntryKind, TreeNode};
use dmv_store::{ObjectId, ObjectKind};

use crate::error::{RepoError, RepoResult};
use crate::operations::gc::{write_content_lock, LOCK_DIR};
use crate::replica::locations::{now_ns, LocationRecord, ReplicaId, Stamp};
use crate::worktree::dirstate::{DirEntry, Stat};

/// What a drop did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DataDropped {
    /// Bytes of the store freed (data other files still use stays and is not counted).
    pub freed_bytes: u64,
    /// Content another replica's drop has locked here: nothing was dropped.
    pub locked: Vec<ObjectId>,
    /// Working-tree files removed (their entries are now absent).
    pub files_removed: usize,
}

impl Copies<'_> {
    /// Serializes confirming and dropping in this replica.
    fn drop_guard(&self) -> RepoResult<File> {
        let path = self.dmv.join("drop.lock");
        crate::atomic::hold_lock_file(&path)
    }

    /// Confirms which of these files' data is all here, and locks what it
    /// confirms against being dropped here for `seconds` (or until
    /// [`Copies::unlock_content`]). Returns the lock's name and, per id, whether it is held.
    pub fn lock_content(&self, ids: &[ObjectId], seconds: u64) -> RepoResult<(String, Vec<bool>)> {
        let _guard = self.drop_guard()?;
        // The store as it is now, not as this process first listed it: a
        // drop that held the lock meanwhile may have freed the data (a
        // confirmation from the old listing destroyed the last copy).
        self.store.reload()?;
        // Only a copy this replica keeps counts: data here that no branch,
        // tag or HEAD reaches (a deleted branch's, a rewound push's) goes at
        // its next gc, lock or no lock once the lock is gone.
        let kept = self.kept_files(&ids.iter().copied().collect())?;
        let held = ids
            .iter()
            .map(|id| Ok(kept.contains(id) && self.has_data(id)?))
            .collect::<RepoResult<Vec<bool>>>()?;
        let lock = ReplicaId::new_random(b"content lock")
            .to_string()
            .replace('-', "");
        if held.iter().any(|h| *h) {
            let expires = now_ns().saturating_add(seconds.saturating_mul(1_000_000_000));
            let locked = ids.iter().zip(&held).filter(|(_, h)| **h).map(|(id, _)| id);
            write_content_lock(&self.dmv, &lock, expires, locked)?;
        }
        Ok((lock, held))
    }

    /// Which of `wanted` (file content ids) this replica keeps: reached from
    /// a ref, HEAD or the dirstate, not only from the reflog (which gc may
    /// prune). Stops once all are found; shared subtrees are read once.
    fn kept_files(&self, wanted: &HashSet<ObjectId>) -> RepoResult<HashSet<ObjectId>> {
        let mut found = HashSet::new();
        let mut seen = HashSet::new();
        // A copy only a lock keeps is kept no longer than the lock.
        let locked = self.maintenance().locked_content()?;
        let mut stack: Vec<ObjectId> = self
            .maintenance()
            .roots_with(false, true)?
            .into_iter()
            .filter(|r| !locked.contains(r))
            .collect();
        while let Some(id) = stack.pop() {
            if found.len() == wanted.len() {
                break;
            }
            if !seen.insert(id) {
                continue;
            }
            if wanted.contains(&id) {
                found.insert(id);
                continue;
            }
            // Not here: file data a partial replica lacks (trees and commits it always has).
            let Some(loc) = self.store.locate(&id)? else {
                continue;
            };
            match loc.entry.kind {
                ObjectKind::Commit => {
                    let c = self.commit(&id)?;
                    stack.push(c.tree);
                    stack.extend(c.parents);
                }
                ObjectKind::Tag => stack.push(self.annotated_tag(&id)?.target),
                ObjectKind::Tree => {
                    match self.store.read_decoded::<TreeNode>(&id, ObjectKind::Tree)? {
                        TreeNode::Leaf(entries) => {
                            for e in entries {
                                if e.kind == EntryKind::Dir {
                                    stack.push(e.id);
                                } else if wanted.contains(&e.id) {
                                    found.insert(e.id);
                                }
                            }
                        }
                        TreeNode::Inner { children, .. } => {
                            stack.extend(children.into_iter().map(|c| c.id))
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(found)
    }

    /// Releases a lock [`Copies::lock_content`] took (gone already is fine).
    pub fn unlock_content(&self, lock: &str) -> RepoResult<()> {
        if lock.is_empty() || !lock.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(RepoError::Corrupt {
                path: self.dmv.join(LOCK_DIR),
                detail: format!("{lock:?} is not a content lock"),
            });
        }
        let path = self.dmv.join(LOCK_DIR).join(lock);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RepoError::io(&path, e)),
            _ => Ok(()),
        }
    }

    /// Frees the data of these files (content ids) here, keeping chunks that
    /// files which stay still use, unless another replica's drop has locked
    /// some of it (then nothing is dropped and `locked` names it). The
    /// checks that enough other copies exist are the caller's
    /// (`dmv_sync::drop_files`); this is the last step. The location log says
    /// "absent" before anything is removed, and the working tree's clean
    /// copies leave first, so a drop cut short leaves a consistent replica.
    pub fn drop_data(&self, ids: &[ObjectId]) -> RepoResult<DataDropped> {
        if ids.is_empty() {
            return Ok(DataDropped::default());
        }
        // The setting as it is on disk now: a server's `self` was loaded when it started.
        if !crate::repository::config::Config::load(&self.dmv.join("config"))?.may_drop() {
            return Err(RepoError::DropsNotAllowed {
                path: self.root.clone(),
            });
        }
        let _guard = self.drop_guard()?;
        dmv_store::failpoint("drop-data-guarded");
        self.store.reload()?;
        let files: HashSet<ObjectId> = ids.iter().copied().collect();
        let locked: Vec<ObjectId> = self
            .maintenance()
            .locked_content()?
            .intersection(&files)
            .copied()
            .collect();
        if !locked.is_empty() {
            return Ok(DataDropped {
                locked,
                ..Default::default()
            });
        }
        self.record_locations(ids, self.replica_id()?, false)?;
        self.mark_partial()?;
        let files_removed = if self.config.bare {
            0
        } else {
            self.unwrite_dropped(&files)?
        };
        let freed_bytes = self
            .store
            .drop_file_data(|| self.maintenance().roots(), &files)?;
        Ok(DataDropped {
            freed_bytes,
            locked,
            files_removed,
        })
    }

    /// Frees what is here of these files while the file as a whole is not
    /// (the chunks a mount's reads fetched): never a copy this replica
    /// holds or claims, so no other copy need be confirmed. Returns the
    /// bytes freed.
    pub fn drop_pieces(&self, ids: &[ObjectId]) -> RepoResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let _guard = self.drop_guard()?;
        self.store.drop_file_pieces(
            || self.maintenance().roots(),
            &ids.iter().copied().collect(),
        )
    }

    /// Records that this replica holds these files' data, as of now, for
    /// those it does hold, with `others` (what a transfer taught of another
    /// replica) in the same append where both fit in the journal: one
    /// journal write and sync, not two. Beyond the journal they go into the
    /// log in two merges, as before: one merge of both left a log that
    /// `whereis` of one file of 100,000 read with 26 MiB, against 21.
    /// Checked under the drop lock against the store as it is then: a push
    /// begun before a drop here and ended after it claimed the copy the
    /// drop had freed, and its newer "present" beat the drop's "absent" in
    /// every log it reached.
    pub fn record_held_here(
        &self,
        ids: &[ObjectId],
        mut others: Vec<LocationRecord>,
    ) -> RepoResult<()> {
        if ids.is_empty() {
            return match others.is_empty() {
                true => Ok(()),
                false => self.note_locations(others),
            };
        }
        let _guard = self.drop_guard()?;
        // A replica that never dropped nor sliced holds everything it has the history of.
        let held: Vec<ObjectId> =
            if !crate::repository::config::Config::load(&self.dmv.join("config"))?.partial {
                ids.to_vec()
            } else {
                self.store.reload()?;
                let mut held = Vec::with_capacity(ids.len());
                for id in ids {
                    if self.has_data(id)? {
                        held.push(*id);
                    }
                }
                held
            };
        if others.len() + held.len() > crate::replica::location_journal::JOURNAL_LIMIT {
            if !others.is_empty() {
                self.note_locations(others)?;
            }
            return self.record_locations(&held, self.replica_id()?, true);
        }
        let (replica, stamp) = (
            self.replica_id()?,
            Stamp {
                time_ns: now_ns(),
                present: true,
            },
        );
        others.extend(held.into_iter().map(|key| LocationRecord {
            key,
            replica,
            stamp,
        }));
        if others.is_empty() {
            return Ok(());
        }
        self.note_locations(others)
    }

    /// Makes absent file data a normal state here from now on: in the config
    /// on disk, and for this handle (`self` may be shared: its config keeps
    /// what it was loaded with, [`Repository::is_partial`] says it now).
    pub fn mark_partial(&self) -> RepoResult<()> {
        if self.is_partial() {
            return Ok(());
        }
        self.edit_config_file(|c| {
            c.partial = true;
            Ok::<_, RepoError>(())
        })?;
        self.became_partial
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// The file versions this replica dropped and has not fetched since (the
    /// location log's newest word on them here is "absent"): a fetch leaves
    /// them out as it leaves out what the slice does, and `get` brings them
    /// back. Only a replica that ever dropped or sliced has any.
    pub fn dropped_here(&self) -> RepoResult<HashSet<ObjectId>> {
        if !self.is_partial() {
            return Ok(HashSet::new());
        }
        let me = self.replica_id()?;
        Ok(self
            .locations_where(|r| r.replica == me && !r.stamp.present)?
            .iter()
            .map(|r| r.key)
            .collect())
    }

    /// Removes the working tree's clean copies of dropped files and marks
    /// their entries absent (a changed file is left as it is). The entries
    /// say absent, durably, before any file goes: a drop killed while
    /// removing leaves each file either gone and absent, or still here under
    /// an absent entry, which status and add take as present again (and the
    /// next drop removes), never a file that looks deleted.
    fn unwrite_dropped(&self, files: &HashSet<ObjectId>) -> RepoResult<usize> {
        let _wlock = self.lock_worktree()?;
        let mut ds = self.load_dirstate()?;
        let written = ds.written_ns;
        let mut clean = Vec::new();
        for (rel, entry) in ds.entries.iter_mut() {
            if !files.contains(&entry.id) {
                continue;
            }
            // An absent entry has no stat to trust: a file found there (a drop cut short) is read.
            let abs = self.abs_path(rel);
            let same = std::fs::symlink_metadata(&abs).is_ok_and(|m| {
                entry.stat_matches(&Stat::of(&m), written)
                    || (m.len() == entry.size
                        && (m.ino() == entry.ino || entry.is_absent())
                        && self.has_same_content(rel, &m, &entry.id))
            });
            if !same {
                continue;
            }
            *entry = DirEntry::absent(entry.kind, entry.id, entry.size);
            clean.push(rel.to_vec());
        }
        self.save_dirstate(&ds)?;
        for (i, rel) in clean.iter().enumerate() {
            self.worktree().remove_worktree_file(rel)?;
            if i == 0 {
                dmv_store::failpoint("drop-removed-first-file");
            }
        }
        Ok(clean.len())
    }

    fn has_same_content(&self, rel: &[u8], meta: &std::fs::Metadata, id: &ObjectId) -> bool {
        self.worktree()
            .current_id(rel, &Stat::of(meta))
            .is_ok_and(|(current, _)| current == *id)
    }
}
