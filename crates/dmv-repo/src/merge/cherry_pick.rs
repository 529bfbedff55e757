//! `cherry-pick`: the change one commit made to its parent, applied to HEAD
//! by the same three-way merge as `merge` (its parent as the base), and
//! committed on HEAD alone with the picked commit's message and author.
//! Conflicts are settled as a merge's are, then `commit` concludes the pick.

use crate::repository::handles::Merges;
use dmv_store::{ObjectId, ObjectKind, Progress};

use crate::error::{RepoError, RepoResult};
use crate::merge::merge_state::{MergeKind, MergePhase};
use crate::merge::merging::{refuse_staged_changes, MergeOutcome};

impl Merges<'_> {
    /// Applies the change `pick` (named `label` in messages) made to its
    /// parent onto HEAD. `Merged` names the new commit; `UpToDate` says the
    /// change is already on HEAD (nothing is committed); `Conflicts` leaves
    /// a pick in progress. With `record_origin` (`-x`), the message ends
    /// with git's "(cherry picked from commit ID)".
    pub fn cherry_pick_recording(
        &self,
        pick: ObjectId,
        label: &str,
        record_origin: bool,
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        let message = match record_origin {
            true => Some(format!(
                "{}\n\n(cherry picked from commit {})",
                self.commit(&pick)?.message.trim_end(),
                pick.to_hex()
            )),
            false => None,
        };
        self.with_message(pick, message.as_deref(), || {
            self.cherry_pick(pick, label, progress)
        })
    }

    /// Applies the change of commit `pick` onto HEAD, as `cherry-pick`.
    pub fn cherry_pick(
        &self,
        pick: ObjectId,
        label: &str,
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        self.require_worktree()?;
        self.signer()?;
        // The same pick again, after one was cut short while writing the working tree: undone and run anew.
        if let Some(m) = self.merge_state()? {
            if m.theirs == pick
                && m.kind == MergeKind::CherryPick
                && m.phase == MergePhase::Applying
            {
                self.merge_abort()?;
            }
        }
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeAlreadyInProgress { label: m.label });
        }
        if self.store.kind_of(&pick)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit {
                what: label.to_string(),
            });
        }
        let picked = self.commit(&pick)?;
        if picked.parents.len() > 1 {
            return Err(RepoError::PickOfAMerge {
                what: label.to_string(),
            });
        }
        let ours = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commit to pick onto)".into()))?;
        let (status, ds) = self.worktree().worktree_status()?;
        refuse_staged_changes(&status)?;
        // A root commit's change is from the empty tree.
        self.three_way_merge(
            MergeKind::CherryPick,
            ours,
            picked.parents.first().copied(),
            pick,
            label,
            (&status, &ds),
            progress,
        )
    }
}
