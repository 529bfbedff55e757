//! `revert`: a new commit on HEAD that undoes what an earlier commit did,
//! as a three-way merge of its parent's tree into HEAD's with the commit's
//! own tree as the base.

use dmv_store::ObjectId;

use crate::checkout::Written;
use crate::error::{RepoError, RepoResult};
use crate::paths::show;
use crate::repo::Repository;
use crate::three_way::three_way;
use crate::tree::{build, flatten, FlatTree};

impl Repository {
    /// Commits on HEAD the undoing of `commit` (one parent). Refused, with
    /// nothing changed, when the working tree has uncommitted changes, when
    /// a path it changed was changed again since (git would stop for the
    /// conflict; DMV's files are rarely mergeable by hand), or for a merge.
    pub fn revert(&self, commit: ObjectId, progress: &dyn Fn(u64, u64)) -> RepoResult<ObjectId> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let (status, _) = self.worktree_status()?;
        if let Some(c) = status.first_change() {
            return Err(RepoError::UncommittedChanges { path: show(&c.path), merge: false });
        }
        let head = self.head_commit()?.ok_or_else(|| RepoError::UnknownRevision("HEAD (no commits yet)".into()))?;
        let reverted = self.commit(&commit)?;
        let before = match reverted.parents.as_slice() {
            [] => FlatTree::new(),
            [parent] => flatten(&self.store, &self.commit(parent)?.tree)?,
            _ => return Err(RepoError::RevertMerge { commit: commit.short() }),
        };
        let after = flatten(&self.store, &reverted.tree)?;
        let ours = flatten(&self.store, &self.commit(&head)?.tree)?;
        let (merged, conflicts) = three_way(&after, &ours, &before);
        if let Some(c) = conflicts.first() {
            return Err(RepoError::RevertConflict { commit: commit.short(), path: show(&c.path) });
        }
        let mut trees = self.store.begin_write()?;
        let target = build(&mut trees, merged.iter().map(|(p, e)| (p.as_slice(), *e)))?;
        // Sealed to be read by the checkout; the session stays open until the
        // commit refers to the tree, so gc keeps it meanwhile.
        trees.finish()?;
        self.update_worktree(&target, &Written::new(), progress)?;
        let subject = reverted.message.lines().next().unwrap_or("");
        let message = format!("Revert \"{subject}\"\n\nThis reverts commit {}.", commit.to_hex());
        let mut session = self.store.begin_write()?;
        let id = self.commit_on_head(&mut session, target, Some(head), None, &message, None)?;
        drop(trees);
        self.mark_tree(&self.load_dirstate()?, target);
        Ok(id)
    }
}
