//! The operations that depend on whether a merge is in progress, on top of
//! the working-tree building blocks (status, staging, checkout) and the
//! merge: the full `status`, `commit`, and checkouts that move away from
//! HEAD (`switch`, `checkout`, a clone's first checkout).

use std::collections::BTreeMap;

use dmv_store::ObjectId;
use dmv_store::Progress;
use serde::Serialize;

use crate::error::{RepoError, RepoResult};
use crate::history::branches::Tracking;
use crate::history::tree::{Change, ChangeKind, FlatEntry};
use crate::history::tree_diff::{find_renames, rename_candidate, Listed};
use crate::merge::kept_both::KeptBoth;
use crate::merge::merge_state::{MergePhase, MergeStatus};
use crate::operations::rebase::RebaseState;
use crate::paths::{matches, ser_paths};
use crate::ref_names::{branch_ref, BRANCHES, REMOTE_BRANCHES};
use crate::replica::locks::PathLock;
use crate::repository::refs::Head;
use crate::repository::repo::Repository;
use crate::worktree::dirstate::{Dirstate, Stat};
use crate::worktree::status::StatusEntry;

/// How HEAD, the dirstate and the working tree differ, as `dmv status --json` shows it.
#[derive(Debug, Default, Serialize)]
pub struct Status {
    /// The branch HEAD is on, as a full ref name; None when detached.
    pub branch: Option<String>,
    /// HEAD → dirstate.
    pub staged: Vec<Change>,
    /// dirstate → working tree (tracked files only).
    pub unstaged: Vec<Change>,
    /// Files neither tracked nor ignored, in path order.
    #[serde(serialize_with = "ser_paths")]
    pub untracked: Vec<Vec<u8>>,
    /// The merge in progress, if any, with its unresolved paths.
    pub merge: Option<MergeStatus>,
    /// How the branch stands against its upstream, if it follows one.
    pub tracking: Option<Tracking>,
    /// A rebase in progress, if any.
    pub rebase: Option<RebaseState>,
    /// Tracked files whose data is not in this replica (a partial one's slice left them out).
    pub absent: usize,
    /// Tracked files in all.
    pub tracked: usize,
    /// What peers offered of HEAD's branch and it does not hold yet
    /// (see [`Repository::pending_offers`]).
    pub offers: Vec<Offer>,
    /// Changed files (staged or not) someone else holds a lock on, as the
    /// remote last said (no network: see [`Locks::known_locks`](crate::Locks::known_locks)).
    pub locked_by_others: Vec<PathLock>,
    /// Files two replicas changed, whose versions were both kept.
    pub kept_both: Vec<KeptBoth>,
}

/// A peer's offer of a branch: `PEER/BRANCH` and its commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// `PEER/BRANCH`, the remote-tracking branch the offer is in.
    pub label: String,
    /// The commit offered.
    pub commit: ObjectId,
}

impl StatusListing {
    /// Tracked files whose data is not in this replica, and all tracked files.
    pub fn absent_of_tracked(&self) -> (usize, usize) {
        (
            self.ds.entries.values().filter(|e| e.is_absent()).count(),
            self.ds.entries.len(),
        )
    }
}

impl Status {
    /// Whether nothing is staged or changed (untracked files do not count).
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
    /// The branch HEAD is on, as a full ref name; None when detached.
    pub branch: Option<String>,
    /// dirstate → working tree (tracked files only), in path order.
    pub unstaged: Vec<StatusEntry>,
    /// Files neither tracked nor ignored, in path order.
    pub untracked: Vec<Vec<u8>>,
    /// The merge in progress, if any, with its unresolved paths.
    pub merge: Option<MergeStatus>,
    ds: Dirstate,
    /// Whether files were both added and deleted, so that some may pair as renames.
    renames: bool,
}

/// What `commit` is asked to do.
#[derive(Debug, Default, Clone, Copy)]
pub struct CommitRequest<'a> {
    /// None: the merge in progress's default message, or refused.
    pub message: Option<&'a str>,
    /// Stage every change of a tracked file first (`commit -a`).
    pub all: bool,
    /// Replace HEAD's commit (`--amend`), keeping its message when none is given.
    pub amend: bool,
    /// Commit even when the tree is HEAD's (`--allow-empty`).
    pub allow_empty: bool,
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// A new commit, now HEAD; `root`: it has no parent.
    Made {
        /// The new commit.
        id: ObjectId,
        /// Whether it has no parent (the repository's first commit).
        root: bool,
    },
    /// Nothing was committed, and why.
    Nothing(NothingToCommit),
}

/// Why there was nothing to commit, with what there is instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NothingToCommit {
    /// Tracked files changed, but none of the changes is staged.
    ChangesNotStaged,
    /// Nothing staged or changed, but untracked files are there.
    OnlyUntracked,
    /// No commit yet and no file to commit.
    NoFiles,
    /// The working tree is HEAD's.
    Clean,
}

impl Repository {
    /// [`Repository::status`] to be listed (see [`StatusListing`]).
    pub fn status_listing(&self) -> RepoResult<StatusListing> {
        self.require_worktree()?;
        let mut unstaged = Vec::new();
        let kinds = |ds: &Dirstate, locked: bool| {
            let (mut added, mut deleted) = (false, false);
            self.worktree().each_staged(ds, locked, &mut |c| {
                added |= c.kind == ChangeKind::Added && rename_candidate(&c);
                deleted |= c.kind == ChangeKind::Deleted && rename_candidate(&c);
                Ok(())
            })?;
            Ok(added && deleted)
        };
        let (renames, untracked, ds) = self.worktree().compare_worktree(kinds, &mut |c| {
            unstaged.push(StatusEntry {
                path: c.path,
                kind: c.kind,
            })
        })?;
        unstaged.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Ok(StatusListing {
            branch: self.history().head_branch()?,
            unstaged,
            untracked,
            merge: self.merges().merge_status()?,
            ds,
            renames,
        })
    }

    /// The staged changes of `listing`, renames paired, handed to `each`
    /// in path order as HEAD's tree and the dirstate are read (twice more
    /// when files were both added and deleted: once to pair those).
    pub fn list_staged(
        &self,
        listing: &StatusListing,
        each: &mut dyn FnMut(Listed) -> RepoResult<()>,
    ) -> RepoResult<()> {
        if !listing.renames {
            return self
                .worktree()
                .each_staged(&listing.ds, false, &mut |c| each(Listed::Change(c)));
        }
        let mut candidates = Vec::new();
        self.worktree().each_staged(&listing.ds, false, &mut |c| {
            if rename_candidate(&c) {
                candidates.push(c);
            }
            Ok(())
        })?;
        let mut paired = find_renames(&self.store, candidates)?
            .into_iter()
            .peekable();
        self.worktree().each_staged(&listing.ds, false, &mut |c| {
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

    /// The whole status at once; fails with [`RepoError::Bare`] in a bare repository.
    pub fn status(&self) -> RepoResult<Status> {
        self.require_worktree()?;
        let (worktree, ds) = self.worktree().worktree_status()?;
        let branch = self.history().head_branch()?;
        let merge = self.merges().merge_status()?;
        let absent = ds.entries.values().filter(|e| e.is_absent()).count();
        let offers = match branch.as_deref().and_then(|b| b.strip_prefix(BRANCHES)) {
            Some(short) => self.pending_offers(short)?,
            None => Vec::new(),
        };
        let known = self.locks().known_locks();
        let mut locked_by_others: Vec<PathLock> = (worktree.staged.iter())
            .chain(&worktree.unstaged)
            .filter_map(|c| known.other_holder(&String::from_utf8_lossy(&c.path)))
            .cloned()
            .collect();
        locked_by_others.sort_by(|a, b| a.path.cmp(&b.path));
        locked_by_others.dedup_by(|a, b| a.path == b.path);
        Ok(Status {
            branch,
            staged: worktree.staged,
            unstaged: worktree.unstaged,
            untracked: worktree.untracked,
            merge,
            tracking: self.history().tracking()?,
            rebase: self.merges().rebase_state()?,
            absent,
            tracked: ds.entries.len(),
            offers,
            locked_by_others,
            kept_both: self.merges().kept_both(),
        })
    }

    /// What peers offered of the local `branch` here that it does not hold
    /// yet: their `refs/remotes/NAME/BRANCH`, NAME not a configured remote
    /// (whose branches a fetch brings anyway).
    pub fn pending_offers(&self, branch: &str) -> RepoResult<Vec<Offer>> {
        let head = self.refs.get(&branch_ref(branch))?;
        let mut pending = Vec::new();
        for (name, id) in self.refs.list(REMOTE_BRANCHES)? {
            let Some((peer, offered)) = name
                .strip_prefix(REMOTE_BRANCHES)
                .and_then(|rest| rest.split_once('/'))
            else {
                continue;
            };
            if offered != branch || self.config.remotes.contains_key(peer) {
                continue;
            }
            if let Some(head) = head {
                if self.history().is_ancestor(&id, &head)? {
                    continue;
                }
            }
            pending.push(Offer {
                label: format!("{peer}/{offered}"),
                commit: id,
            });
        }
        Ok(pending)
    }

    /// `add`, git's way during a merge: staging a conflicted file (or a
    /// folder holding it) settles its conflict with the file as it is now.
    /// With `tracked_only`, only the changes of tracked files (`add -u`).
    pub fn add_settling(
        &self,
        specs: &[Vec<u8>],
        tracked_only: bool,
        progress: &dyn Progress,
    ) -> RepoResult<usize> {
        let _wlock = self.lock_worktree()?;
        let added = self.worktree().add(specs, tracked_only, progress)?;
        self.settle_conflicts_at(specs)?;
        Ok(added)
    }

    /// `rm`, git's way during a merge: removing a conflicted file settles
    /// its conflict as a deletion.
    pub fn rm_settling(&self, specs: &[Vec<u8>], cached: bool) -> RepoResult<Vec<Vec<u8>>> {
        let _wlock = self.lock_worktree()?;
        let removed = self.worktree().rm(specs, cached)?;
        self.settle_conflicts_at(specs)?;
        Ok(removed)
    }

    /// Drops the conflicts at or under `specs` from the merge in progress
    /// (once its working tree is written; before that only `--abort` helps).
    fn settle_conflicts_at(&self, specs: &[Vec<u8>]) -> RepoResult<()> {
        let Some(mut state) = self.merges().merge_state()? else {
            return Ok(());
        };
        if state.phase != MergePhase::Resolving {
            return Ok(());
        }
        let before = state.conflicts.len();
        state
            .conflicts
            .retain(|c| !specs.iter().any(|s| matches(&c.path, s)));
        if state.conflicts.len() != before {
            self.merges().save_merge_state(&state)?;
        }
        Ok(())
    }

    /// Records the staged tree as a new commit on HEAD. Returns None when
    /// there is nothing to commit. During a merge (all conflicts resolved) the
    /// commit gets both parents, even when its tree equals HEAD's.
    pub fn commit_staged(&self, message: &str) -> RepoResult<Option<ObjectId>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let committed = match self.merges().merge_state()? {
            Some(merge) => Some(self.merges().commit_merge(&merge, message)?),
            None => self
                .worktree()
                .commit_dirstate(self.head_commit()?, message, false)?,
        };
        self.tidy_store();
        Ok(committed)
    }

    /// `commit -a`: stages the changes of tracked files and commits them in
    /// one write session (one pack, one index, one sync of each), saving the
    /// dirstate before HEAD moves, so that a crash in between leaves the
    /// changes staged, as an `add` would. During a merge it is `add` then
    /// [`Repository::commit_staged`], which records both parents.
    pub fn commit_all(
        &self,
        message: &str,
        progress: &dyn Progress,
    ) -> RepoResult<Option<ObjectId>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if self.merges().merge_state()?.is_some() {
            self.worktree().add(&[Vec::new()], true, progress)?;
            return self.commit_staged(message);
        }
        let head = self.head_commit()?;
        let mut ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        self.worktree()
            .stage(&mut session, &mut ds, &[Vec::new()], true, progress)?;
        let tree = ds.write_tree(&mut session)?;
        // Nothing to commit: the same tree as HEAD's, or no file at all on an unborn branch.
        let nothing = match head {
            Some(p) => self.commit(&p)?.tree == tree,
            None => ds.entries.is_empty(),
        };
        let committed = match nothing {
            true => {
                session.finish()?;
                self.save_dirstate(&ds)?;
                None
            }
            false => Some(self.worktree().commit_on_head(
                &mut session,
                tree,
                head,
                None,
                message,
                Some(&ds),
            )?),
        };
        drop(session);
        self.mark_tree(&ds, tree);
        self.tidy_store();
        Ok(committed)
    }

    /// `commit`, whole: with `all` the changes of tracked files are staged
    /// first, `amend` replaces HEAD's commit, and without a message a merge
    /// in progress is committed as "Merge LABEL". When nothing is committed,
    /// the outcome says why, as git does.
    pub fn commit_with(
        &self,
        request: &CommitRequest<'_>,
        progress: &dyn Progress,
    ) -> RepoResult<Committed> {
        self.require_worktree()?;
        self.signer()?;
        let _wlock = self.lock_worktree()?;
        if request.amend {
            if request.all {
                self.worktree().add(&[Vec::new()], true, progress)?;
            }
            return Ok(Committed::Made {
                id: self.commit_amend(request.message)?,
                root: false,
            });
        }
        let message = match (request.message, self.merges().merge_state()?) {
            (Some(m), _) => m.to_string(),
            (None, Some(merge)) => self.merges().default_message(&merge)?,
            (None, None) => {
                // A message is asked for only when there is something to commit.
                let status = self.status()?;
                if !status.staged.is_empty() || (request.all && !status.unstaged.is_empty()) {
                    return Err(RepoError::MessageRequired);
                }
                return Ok(Committed::Nothing(self.nothing_to_commit()?));
            }
        };
        let mut committed = match request.all {
            true => self.commit_all(&message, progress)?,
            false => self.commit_staged(&message)?,
        };
        // Nothing changed, and a commit all the same (a merge in progress always records one).
        if committed.is_none() && request.allow_empty && self.head_commit()?.is_some() {
            committed = self
                .worktree()
                .commit_dirstate(self.head_commit()?, &message, true)?;
        }
        match committed {
            Some(id) => Ok(Committed::Made {
                id,
                root: self.commit(&id)?.parents.is_empty(),
            }),
            None => Ok(Committed::Nothing(self.nothing_to_commit()?)),
        }
    }

    /// Why a commit found nothing to record, in git's terms.
    fn nothing_to_commit(&self) -> RepoResult<NothingToCommit> {
        let listing = self.status_listing()?;
        Ok(if !listing.unstaged.is_empty() {
            NothingToCommit::ChangesNotStaged
        } else if !listing.untracked.is_empty() {
            NothingToCommit::OnlyUntracked
        } else if self.head_commit()?.is_none() {
            NothingToCommit::NoFiles
        } else {
            NothingToCommit::Clean
        })
    }

    /// Checks out the commit `head` names and makes it HEAD, as one change
    /// of the working tree (switch, checkout).
    pub fn switch_to(&self, head: &Head, progress: &dyn Progress) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let commit = match head {
            Head::Branch(name) => self
                .refs
                .get(name)?
                .ok_or_else(|| RepoError::UnknownRevision(name.clone()))?,
            Head::Detached(id) => *id,
        };
        // To the commit HEAD is at (a branch just made here, say): no file
        // changes, so uncommitted changes stay where they are, as git keeps them.
        let before = self.head()?;
        if self.head_commit()? != Some(commit) || self.merges().merge_state()?.is_some() {
            self.checkout_tree(&self.commit(&commit)?.tree, progress)?;
        }
        self.set_head(head)?;
        // For `switch -` and `@{-1}`.
        if before != *head {
            before.save(&self.dmv.join(crate::history::revisions::PREVIOUS_HEAD))?;
        }
        Ok(())
    }

    /// `switch NAME`: checks out branch `name`, made first from the one
    /// remote's branch of that name when there is none here. Returns the
    /// remote branch it was made from, if it was.
    pub fn switch_to_branch(
        &mut self,
        name: &str,
        progress: &dyn Progress,
    ) -> RepoResult<Option<String>> {
        let full = branch_ref(name);
        let made_from = match self.refs.get(&full)? {
            Some(_) => None,
            None => Some(self.branch_from_remote(name)?),
        };
        self.switch_to(&Head::Branch(full), progress)?;
        Ok(made_from)
    }

    /// Makes the working tree and dirstate match `target`. Refuses when tracked
    /// files have uncommitted changes or untracked files would be overwritten,
    /// and during a merge (switching away would strand its state).
    pub fn checkout_tree(&self, target: &ObjectId, progress: &dyn Progress) -> RepoResult<()> {
        self.checkout_tree_with(target, &BTreeMap::new(), progress)
    }

    /// `checkout_tree` for a clone, some of whose files are already in place
    /// (written while their chunks arrived, see [`crate::EarlyCheckout`]):
    /// those whose entry is the target's are recorded with their stat data
    /// instead of being written again.
    pub fn checkout_tree_with(
        &self,
        target: &ObjectId,
        written: &BTreeMap<Vec<u8>, (FlatEntry, Stat)>,
        progress: &dyn Progress,
    ) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merges().merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        self.worktree().update_worktree(target, written, progress)
    }
}
