//! The operations that depend on whether a merge is in progress, on top of
//! the working-tree building blocks (status, staging, checkout) and the
//! merge: the full `status`, `commit`, and checkouts that move away from
//! HEAD (`switch`, `checkout`, a clone's first checkout).

use std::collections::BTreeMap;

use dmv_store::ObjectId;
use serde::Serialize;

use crate::dirstate::Stat;
use crate::error::{RepoError, RepoResult};
use crate::merge_state::MergeStatus;
use crate::paths::ser_paths;
use crate::refs::Head;
use crate::repo::Repository;
use crate::tree::{Change, FlatEntry};

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

impl Repository {
    pub fn status(&self) -> RepoResult<Status> {
        self.require_worktree()?;
        let (worktree, _) = self.worktree_status()?;
        let branch = match self.head()? {
            Head::Branch(b) => Some(b),
            Head::Detached(_) => None,
        };
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
