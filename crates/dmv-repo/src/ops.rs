//! The operations that depend on whether a merge is in progress, on top of
//! the working-tree building blocks (status, staging, checkout) and the
//! merge: the full `status`, `commit`, and checkouts that move away from
//! HEAD (`switch`, `checkout`, a clone's first checkout).

use std::collections::BTreeMap;

use dmv_store::ObjectId;
use serde::Serialize;

use crate::dirstate::{Dirstate, Stat};
use crate::error::{RepoError, RepoResult};
use crate::merge_state::MergeStatus;
use crate::paths::ser_paths;
use crate::refs::Head;
use crate::repo::Repository;
use crate::status::StatusEntry;
use crate::tree::{Change, ChangeKind, FlatEntry};
use crate::tree_diff::{find_renames, rename_candidate, Listed};

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
    pub merge: Option<MergeStatus>,
}

impl Status {
    pub fn is_clean(&self) -> bool {
        self.staged.is_empty() && self.unstaged.is_empty()
    }
}

/// A status as `dmv status` prints it: the unstaged changes and untracked
/// files, and the dirstate, from which [`Repository::list_staged`] reads the
/// staged changes again as they are listed: a million staged changes (~160 B
/// each) are never held at once, nor the old and new entries of a million
/// unstaged ones.
pub struct StatusListing {
    pub branch: Option<String>,
    /// dirstate → working tree (tracked files only), in path order.
    pub unstaged: Vec<StatusEntry>,
    pub untracked: Vec<Vec<u8>>,
    pub merge: Option<MergeStatus>,
    ds: Dirstate,
    /// Whether files were both added and deleted, so that some may pair as renames.
    renames: bool,
}

impl Repository {
    /// [`Repository::status`] to be listed (see [`StatusListing`]).
    pub fn status_listing(&self) -> RepoResult<StatusListing> {
        self.require_worktree()?;
        let mut unstaged = Vec::new();
        let kinds = |ds: &Dirstate, locked: bool| {
            let (mut added, mut deleted) = (false, false);
            self.each_staged(ds, locked, &mut |c| {
                added |= c.kind == ChangeKind::Added && rename_candidate(&c);
                deleted |= c.kind == ChangeKind::Deleted && rename_candidate(&c);
                Ok(())
            })?;
            Ok(added && deleted)
        };
        let (renames, untracked, ds) = self.compare_worktree(kinds, &mut |c| unstaged.push(StatusEntry { path: c.path, kind: c.kind }))?;
        unstaged.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(StatusListing { branch: self.head_branch()?, unstaged, untracked, merge: self.merge_status()?, ds, renames })
    }

    /// The staged changes of `listing`, renames paired, handed to `each`
    /// in path order as HEAD's tree and the dirstate are read (twice more
    /// when files were both added and deleted: once to pair those).
    pub fn list_staged(&self, listing: &StatusListing, each: &mut dyn FnMut(Listed) -> RepoResult<()>) -> RepoResult<()> {
        if !listing.renames {
            return self.each_staged(&listing.ds, false, &mut |c| each(Listed::Change(c)));
        }
        let mut candidates = Vec::new();
        self.each_staged(&listing.ds, false, &mut |c| {
            if rename_candidate(&c) {
                candidates.push(c);
            }
            Ok(())
        })?;
        let mut paired = find_renames(&self.store, candidates)?.into_iter().peekable();
        self.each_staged(&listing.ds, false, &mut |c| {
            if rename_candidate(&c) {
                return Ok(());
            }
            while let Some(listed) = paired.next_if(|l| l.path() < c.path.as_slice()) {
                each(listed)?;
            }
            each(Listed::Change(c))
        })?;
        paired.try_for_each(each)
    }

    /// The branch HEAD is on (None: detached).
    fn head_branch(&self) -> RepoResult<Option<String>> {
        Ok(match self.head()? {
            Head::Branch(b) => Some(b),
            Head::Detached(_) => None,
        })
    }

    pub fn status(&self) -> RepoResult<Status> {
        self.require_worktree()?;
        let (worktree, _) = self.worktree_status()?;
        let branch = self.head_branch()?;
        let merge = self.merge_status()?;
        Ok(Status { branch, staged: worktree.staged, unstaged: worktree.unstaged, untracked: worktree.untracked, merge })
    }

    /// Records the staged tree as a new commit on HEAD. Returns None when
    /// there is nothing to commit. During a merge (all conflicts resolved) the
    /// commit gets both parents, even when its tree equals HEAD's.
    pub fn commit_staged(&self, message: &str) -> RepoResult<Option<ObjectId>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let committed = match self.merge_state()? {
            Some(merge) => Some(self.commit_merge(&merge, message)?),
            None => self.commit_dirstate(self.head_commit()?, message)?,
        };
        self.tidy_store();
        Ok(committed)
    }

    /// Checks out the commit `head` names and makes it HEAD, as one change
    /// of the working tree (switch, checkout).
    pub fn switch_to(&self, head: &Head, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let commit = match head {
            Head::Branch(name) => self.refs.get(name)?.ok_or_else(|| RepoError::UnknownRevision(name.clone()))?,
            Head::Detached(id) => *id,
        };
        // To the commit HEAD is at (a branch just made here, say): no file
        // changes, so uncommitted changes stay where they are, as git keeps them.
        if self.head_commit()? == Some(commit) && self.merge_state()?.is_none() {
            return self.set_head(head);
        }
        self.checkout_tree(&self.commit(&commit)?.tree, progress)?;
        self.set_head(head)
    }

    /// Makes the working tree and dirstate match `target`. Refuses when tracked
    /// files have uncommitted changes or untracked files would be overwritten,
    /// and during a merge (switching away would strand its state).
    pub fn checkout_tree(&self, target: &ObjectId, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        self.checkout_tree_with(target, &BTreeMap::new(), progress)
    }

    /// `checkout_tree` for a clone, some of whose files are already in place
    /// (written while their chunks arrived, see [`crate::EarlyCheckout`]):
    /// those whose entry is the target's are recorded with their stat data
    /// instead of being written again.
    pub fn checkout_tree_with(&self, target: &ObjectId, written: &BTreeMap<Vec<u8>, (FlatEntry, Stat)>, progress: &dyn Fn(u64, u64)) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        self.update_worktree(target, written, progress)
    }
}
