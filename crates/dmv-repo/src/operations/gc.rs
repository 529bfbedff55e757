//! What gc and fsck start from (the roots), and gc itself.

use crate::repository::handles::Maintenance;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use dmv_store::{GcOptions, GcReport, ObjectId, Progress, Tally, VerifyReport};

use crate::error::{IoContext, RepoError, RepoResult};
use crate::replica::locations::now_ns;

/// Where other replicas' drops lock copies here (see dropping.rs): each file
/// an expiry time, then the content ids it locks.
pub(crate) const LOCK_DIR: &str = "content-locks";

/// What gc may drop besides what no root reaches.
#[derive(Clone, Copy, Debug, Default)]
pub struct GcPolicy {
    /// Also drop history only the reflog remembers (deleted branches, amended tips).
    pub prune_reflog: bool,
    /// The store's own options: how long recent packs are kept whole, and
    /// whether absent file data is expected (a partial replica).
    pub store: GcOptions,
}

impl Maintenance<'_> {
    /// Ids gc and fsck start from: every ref, HEAD, staged files, an
    /// unfinished merge, and the reflog (so a deleted branch stays
    /// recoverable until the reflog is pruned). A dirstate that cannot be
    /// read is an error: its staged files would be lost to gc.
    pub fn roots(&self) -> RepoResult<Vec<ObjectId>> {
        self.roots_with(true, true)
    }

    /// [`Maintenance::roots`] for checking: a damaged dirstate (which fsck
    /// reports on its own) does not stop the check of everything else.
    pub(crate) fn roots_to_check(&self) -> RepoResult<Vec<ObjectId>> {
        self.roots_with(true, false)
    }

    /// Drops unreachable objects and merges small packs, and compacts the
    /// ref tables. Safe while any other command runs: roots are read under
    /// the store's exclusive gc lock, after every writer has finished.
    pub fn gc(&self, policy: GcPolicy, progress: &dyn Progress) -> RepoResult<GcReport> {
        let options = GcOptions {
            absent_data_ok: policy.store.absent_data_ok || self.is_partial(),
            ..policy.store
        };
        let report = self.store.gc(
            || self.roots_with(!policy.prune_reflog, true),
            options,
            &Tally::new(progress, 0),
        )?;
        self.refs.compact()?;
        Ok(report)
    }

    /// Reads (and so re-hashes) everything the roots reach. In a partial
    /// replica, file data that is not here is listed as absent, not damage.
    pub fn verify_reachable(&self, tally: &Tally<'_>) -> RepoResult<VerifyReport> {
        Ok(self
            .store
            .verify_reachable(&self.roots_to_check()?, self.is_partial(), tally)?)
    }

    /// Content some other replica's drop, or a push awaiting its ref
    /// update, has locked here (expired locks are removed).
    pub(crate) fn locked_content(&self) -> RepoResult<HashSet<ObjectId>> {
        let now = now_ns();
        let mut locked = HashSet::new();
        for lock in content_locks(&self.dmv)? {
            // An unreadable lock holds everything it might name: better to refuse a drop.
            if lock.expires.unwrap_or(u64::MAX) < now {
                let _ = std::fs::remove_file(&lock.path);
                continue;
            }
            locked.extend(lock.ids);
        }
        Ok(locked)
    }

    pub(crate) fn roots_with(
        &self,
        include_reflog: bool,
        dirstate_must_load: bool,
    ) -> RepoResult<Vec<ObjectId>> {
        let mut roots: Vec<ObjectId> = self.refs.list("")?.into_iter().map(|(_, id)| id).collect();
        if let Some(h) = self.head_commit()? {
            roots.push(h);
        }
        // An unfinished merge still needs their commit and the tree it is writing out.
        roots.extend(self.merges().merge_roots()?);
        // An unfinished rebase still needs where it started and what it has left to pick.
        roots.extend(self.merges().rebase_roots()?);
        // Staged content is referenced by nothing but the dirstate until it is committed.
        if !self.config.bare {
            // An absent file's data is not here to keep (its commit is).
            match crate::worktree::dirstate::Dirstate::ids_here(&self.dirstate_path()) {
                Ok(staged) => roots.extend(staged),
                Err(e) if dirstate_must_load => return Err(e),
                Err(_) => {}
            }
        }
        // The trees the location log claims stand for its records of their files.
        for tree in self.copies().claimed_trees()? {
            if self.store.contains(&tree)? {
                roots.push(tree);
            }
        }
        // A copy another replica's drop counts on stays while the lock lasts.
        for id in self.locked_content()? {
            if self.store.contains(&id)? {
                roots.push(id);
            }
        }
        if include_reflog {
            // Reflog entries may name objects an earlier pruning gc removed.
            for id in self.refs.reflog_ids()? {
                if self.store.contains(&id)? {
                    roots.push(id);
                }
            }
        }
        roots.sort();
        roots.dedup();
        Ok(roots)
    }
}

/// A file of `.dmv/content-locks/` as read.
pub(crate) struct ContentLock {
    pub(crate) path: PathBuf,
    /// Its expiry (ns since the epoch); None when it cannot be read as one.
    pub(crate) expires: Option<u64>,
    pub(crate) ids: Vec<ObjectId>,
}

/// Every content lock in `dmv`; one being written (under a temporary name)
/// or removed since the folder was listed is passed over.
pub(crate) fn content_locks(dmv: &Path) -> RepoResult<Vec<ContentLock>> {
    let dir = dmv.join(LOCK_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RepoError::io(&dir, e)),
    };
    let mut locks = Vec::new();
    for entry in entries {
        let path = entry.at(&dir)?.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains(".tmp"))
        {
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(RepoError::io(&path, e)),
        };
        let mut lines = text.lines();
        let expires = lines.next().and_then(|l| l.parse().ok());
        let ids = lines.filter_map(ObjectId::from_hex).collect();
        locks.push(ContentLock { path, expires, ids });
    }
    Ok(locks)
}

/// Writes the content lock `name` (the expiry on the first line, then one
/// id in hex per line), atomically.
pub(crate) fn write_content_lock<'a>(
    dmv: &Path,
    name: &str,
    expires: u64,
    ids: impl IntoIterator<Item = &'a ObjectId>,
) -> RepoResult<()> {
    let dir = dmv.join(LOCK_DIR);
    std::fs::create_dir_all(&dir).at(&dir)?;
    let mut text = format!("{expires}\n");
    for id in ids {
        text.push_str(&id.to_hex());
        text.push('\n');
    }
    crate::atomic::write_atomic(&dir.join(name), text.as_bytes())
}
