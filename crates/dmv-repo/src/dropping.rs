//! Freeing a file's data here, safely against other replicas doing the same.
//!
//! A replica that drops data first asks others to confirm, live, that they
//! hold it, and each confirmation locks that copy there (a file under
//! `.dmv/content-locks/`, until unlocked or expired) against that replica's
//! own drop. Confirming and dropping both run under `.dmv/drop.lock`, so a
//! copy is either confirmed and locked before a drop here looks at the locks
//! (which then refuses), or dropped before the confirmation looks (which
//! then finds nothing to confirm): two replicas dropping the same data at
//! once cannot both count on each other.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;

use dmv_store::ObjectId;

use crate::config::Config;
use crate::dirstate::{DirEntry, Stat};
use crate::error::{IoContext, RepoError, RepoResult};
use crate::locations::{now_ns, ReplicaId};
use crate::repo::Repository;

const LOCK_DIR: &str = "content-locks";

/// What a drop did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DataDropped {
    pub freed_bytes: u64,
    /// Content another replica's drop has locked here: nothing was dropped.
    pub locked: Vec<ObjectId>,
    /// Working-tree files removed (their entries are now absent).
    pub files_removed: usize,
}

impl Repository {
    /// Serializes confirming and dropping in this replica.
    fn drop_guard(&self) -> RepoResult<File> {
        let path = self.dmv.join("drop.lock");
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).at(&path)?;
        file.lock().at(&path)?;
        Ok(file)
    }

    /// Confirms which of these files' data is all here, and locks what it
    /// confirms against being dropped here for `seconds` (or until
    /// [`Repository::unlock_content`]). Returns the lock's name and, per id, whether it is held.
    pub fn lock_content(&self, ids: &[ObjectId], seconds: u64) -> RepoResult<(String, Vec<bool>)> {
        let _guard = self.drop_guard()?;
        let held = ids.iter().map(|id| self.has_data(id)).collect::<RepoResult<Vec<bool>>>()?;
        let lock = ReplicaId::new_random(b"content lock").to_string().replace('-', "");
        if held.iter().any(|h| *h) {
            let dir = self.dmv.join(LOCK_DIR);
            std::fs::create_dir_all(&dir).at(&dir)?;
            let expires = now_ns().saturating_add(seconds.saturating_mul(1_000_000_000));
            let mut text = format!("{expires}\n");
            for (id, _) in ids.iter().zip(&held).filter(|(_, h)| **h) {
                text.push_str(&id.to_hex());
                text.push('\n');
            }
            crate::atomic::write_atomic(&dir.join(&lock), text.as_bytes())?;
        }
        Ok((lock, held))
    }

    /// Releases a lock [`Repository::lock_content`] took (gone already is fine).
    pub fn unlock_content(&self, lock: &str) -> RepoResult<()> {
        if lock.is_empty() || !lock.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(RepoError::Corrupt { path: self.dmv.join(LOCK_DIR), detail: format!("{lock:?} is not a content lock") });
        }
        let path = self.dmv.join(LOCK_DIR).join(lock);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RepoError::io(&path, e)),
            _ => Ok(()),
        }
    }

    /// Content some other replica's drop has locked here (expired locks are removed).
    fn locked_content(&self) -> RepoResult<HashSet<ObjectId>> {
        let dir = self.dmv.join(LOCK_DIR);
        let mut locked = HashSet::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(locked),
            Err(e) => return Err(RepoError::io(&dir, e)),
        };
        let now = now_ns();
        for entry in entries {
            let path = entry.at(&dir)?.path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().contains(".tmp")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).at(&path)?;
            let mut lines = text.lines();
            // An unreadable lock holds everything it might name: better to refuse a drop.
            let expires: u64 = lines.next().and_then(|l| l.parse().ok()).unwrap_or(u64::MAX);
            if expires < now {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            locked.extend(lines.filter_map(ObjectId::from_hex));
        }
        Ok(locked)
    }

    /// Frees the data of these files (content ids) here, keeping chunks that
    /// files which stay still use, unless another replica's drop has locked
    /// some of it (then nothing is dropped and `locked` names it). The
    /// checks that enough other copies exist are the caller's
    /// (`dmv_sync::drop_files`); this is the last step. The location log says
    /// "absent" before anything is removed, and the working tree's clean
    /// copies leave first, so a drop cut short leaves a consistent replica.
    pub fn drop_data(&self, ids: &[ObjectId]) -> RepoResult<DataDropped> {
        let _guard = self.drop_guard()?;
        let files: HashSet<ObjectId> = ids.iter().copied().collect();
        let locked: Vec<ObjectId> = self.locked_content()?.intersection(&files).copied().collect();
        if !locked.is_empty() {
            return Ok(DataDropped { locked, ..Default::default() });
        }
        self.record_locations(ids, self.replica_id()?, false)?;
        if !self.config.partial {
            // Absent data is normal from now on (the config on disk: `self` may be shared).
            let path = self.dmv.join("config");
            let mut config = Config::load(&path)?;
            config.partial = true;
            config.save(&path)?;
        }
        let files_removed = if self.config.bare { 0 } else { self.unwrite_dropped(&files)? };
        let freed_bytes = self.store.drop_file_data(|| self.roots(), &files)?;
        Ok(DataDropped { freed_bytes, locked, files_removed })
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
                entry.stat_matches(&Stat::of(&m), written) || (m.len() == entry.size && (m.ino() == entry.ino || entry.is_absent()) && self.has_same_content(rel, &m, &entry.id))
            });
            if !same {
                continue;
            }
            *entry = DirEntry::absent(entry.kind, entry.id, entry.size);
            clean.push(rel.clone());
        }
        self.save_dirstate(&ds)?;
        for (i, rel) in clean.iter().enumerate() {
            self.remove_worktree_file(rel)?;
            if i == 0 {
                dmv_store::failpoint("drop-removed-first-file");
            }
        }
        Ok(clean.len())
    }

    fn has_same_content(&self, rel: &[u8], meta: &std::fs::Metadata, id: &ObjectId) -> bool {
        self.current_id(rel, &Stat::of(meta)).is_ok_and(|(current, _)| current == *id)
    }
}
