//! Moving HEAD to another commit than the next one: `reset` (soft, mixed,
//! hard, with git's meanings) and `commit --amend`.

use dmv_store::object::Commit;
use dmv_store::{ObjectId, ObjectKind, Progress};

use crate::error::{RepoError, RepoResult};
use crate::history::tree::FlatEntry;
use crate::repository::repo::Repository;
use crate::worktree::dirstate::DirEntry;

/// What `reset` makes like the target commit besides HEAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetMode {
    /// HEAD only: the dirstate and the files stay (the difference is staged).
    Soft,
    /// HEAD and the dirstate: the files stay (the difference is unstaged).
    Mixed,
    /// HEAD, the dirstate and the tracked files: uncommitted changes to
    /// tracked files are dropped; untracked files stay.
    Hard,
}

impl Repository {
    /// `reset [--soft|--mixed|--hard] TARGET`: moves HEAD's branch (or a
    /// detached HEAD) to `target`. Refused during a merge (`merge --abort`
    /// ends one).
    pub fn reset(
        &self,
        target: ObjectId,
        mode: ResetMode,
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merges().merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let head = self.head_commit()?;
        let tree = self.commit(&target)?.tree;
        match mode {
            ResetMode::Soft => {}
            ResetMode::Mixed => self.stage_tree(&tree)?,
            ResetMode::Hard => {
                self.discard_changes()?;
                self.checkout_tree(&tree, progress)?;
            }
        }
        dmv_store::failpoint("reset-before-ref");
        if let Some(at) = head {
            self.remember_orig_head(at)?;
        }
        self.advance_head(
            head,
            target,
            &format!("reset: moving to {}", target.short()),
        )
    }

    /// `commit --amend`: replaces HEAD's commit by one of the staged tree
    /// with the same parents and author, and `message` (default: its own).
    pub(crate) fn commit_amend(&self, message: Option<&str>) -> RepoResult<ObjectId> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merges().merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commit to amend)".into()))?;
        let old = self.commit(&head)?;
        let ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let tree = ds.write_tree(&mut session)?;
        let message = message.unwrap_or(&old.message).to_string();
        let commit = Commit {
            tree,
            parents: old.parents,
            author: old.author,
            committer: self.signer()?,
            message,
        };
        let id = session.put_object(ObjectKind::Commit, &dmv_store::object::encode(&commit))?;
        session.finish()?;
        dmv_store::failpoint("commit-before-ref");
        self.advance_head(
            Some(head),
            id,
            &format!(
                "commit (amend): {}",
                commit.message.lines().next().unwrap_or("")
            ),
        )?;
        self.mark_tree(&ds, tree);
        Ok(id)
    }

    /// The dirstate made `tree`'s entries; an entry whose content is the
    /// one recorded keeps its stat data, so files that did not change are
    /// not read again by the next status.
    pub(crate) fn stage_tree(&self, tree: &ObjectId) -> RepoResult<()> {
        let mut ds = self.load_dirstate()?;
        // Changed in place as the tree is read a folder at a time (the tree
        // as a list beside two dirstates was 287 MB at a million files).
        let (mut added, mut gone) = (Vec::new(), Vec::new());
        self.worktree()
            .each_change_to(&mut ds, tree, &mut |path, tracked, new, entries| {
                // Unknown stat: the next status reads the file once.
                let unknown = |e: FlatEntry| DirEntry::stat_unknown(e.kind, e.id, e.size);
                match (tracked, new) {
                    (Some(i), Some(e)) => entries[i] = unknown(e),
                    (Some(i), None) => gone.push(i),
                    (None, Some(e)) => added.push((path.to_vec(), unknown(e))),
                    (None, None) => {}
                }
                Ok(())
            })?;
        ds.remove_and_insert(gone, added);
        self.save_dirstate(&ds)?;
        self.mark_tree(&ds, *tree);
        Ok(())
    }

    /// Makes every tracked path as HEAD has it, in the dirstate and the
    /// working tree: staged and unstaged changes are dropped, and files
    /// staged that HEAD lacks are deleted. Untracked files stay.
    pub(crate) fn discard_changes(&self) -> RepoResult<()> {
        let (status, mut ds) = self.worktree().worktree_status()?;
        let put_back = |ds: &mut crate::worktree::dirstate::Dirstate,
                        path: &[u8],
                        e: &FlatEntry|
         -> RepoResult<()> {
            let meta = self.worktree().write_entry(path, e)?;
            ds.entries
                .insert(path.to_vec(), DirEntry::new(e.kind, e.id, e.size, &meta));
            Ok(())
        };
        for c in &status.staged {
            match &c.old {
                Some(e) => put_back(&mut ds, &c.path, e)?,
                None => {
                    ds.entries.remove(&c.path);
                    self.worktree().remove_worktree_file(&c.path)?;
                }
            }
        }
        let staged: std::collections::HashSet<&[u8]> =
            status.staged.iter().map(|c| c.path.as_slice()).collect();
        for c in status
            .unstaged
            .iter()
            .filter(|c| !staged.contains(c.path.as_slice()))
        {
            if let Some(e) = &c.old {
                put_back(&mut ds, &c.path, e)?;
            }
        }
        self.save_dirstate(&ds)
    }
}
