//! `merge`: merging a commit into HEAD (fast-forward or three-way), the
//! merge commit, and `merge --abort`. The per-path algorithm is in
//! `three_way.rs`, the state file in `merge_state.rs`, the external tool in
//! `mergetool.rs` and `resolve` in `resolve.rs`.
//!
//! Media cannot be merged line by line: a path both sides changed
//! differently is a conflict that the user settles by taking ours, theirs,
//! or keeping both. Text files (sidecars, EDLs, configs) are merged line by
//! line first (`text_files.rs`): what still conflicts is written with
//! conflict markers, to be edited and `dmv add`ed. Nothing else is merged
//! inside a file (unless the user configured an external `merge_tool`).
//!
//! Crash safety. A merge writes, in order: its objects; the state file (phase
//! `Applying`, naming the tree about to be written out); the working tree and
//! dirstate; the state again (phase `Resolving`); and, when nothing
//! conflicts, the commit and the ref. Killed before the working tree is
//! complete, it leaves an `Applying` state: commit and resolve refuse it and
//! `merge --abort` puts everything back to HEAD. Killed after the ref moved but
//! before the state file was removed, it leaves a state that `merge_state`
//! recognises as finished and removes. Objects written by a killed merge are
//! garbage for gc, never damage.

use crate::repository::handles::Merges;
use std::collections::{BTreeSet, HashSet};

use dmv_store::object::{encode, Commit};
use dmv_store::{ObjectId, ObjectKind, Progress};

use crate::atomic::write_atomic;
use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::tree::{build, flatten, FlatEntry, FlatTree};
use crate::line_merge::MarkerLabels;
use crate::merge::merge_state::{MergeKind, MergePhase, MergeState, SQUASH_MESSAGE_FILE};
use crate::merge::three_way::{same, three_way};
use crate::paths::clash_with;
use crate::paths::{show, TEMP_PREFIX};
use crate::ref_names::{BRANCHES, REMOTE_BRANCHES, TAGS};
use crate::repository::refs::Head;
use crate::worktree::checkout::Written;
use crate::worktree::dirstate::{kind_of, DirEntry, Dirstate, Stat};
use crate::worktree::status::{current_flat, WorktreeStatus};

/// What `Merges::merge` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Their commit is already part of HEAD's history; nothing changed.
    UpToDate,
    /// HEAD was unborn or behind: it now points at their commit.
    FastForward(ObjectId),
    /// A merge commit with parents [HEAD, theirs] was made and checked out.
    Merged(ObjectId),
    /// These paths conflict; nothing was committed and a merge is in progress.
    Conflicts(Vec<ConflictedPath>),
}

/// What [`Merges::merge_squash`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Squashed {
    /// Their commit is already part of HEAD's history; nothing changed.
    UpToDate,
    /// The merged result is staged (and in the working tree); HEAD did not move.
    Staged,
    /// These paths conflict; a squash is in progress, which `commit` ends.
    Conflicts(Vec<ConflictedPath>),
}

/// What [`Merges::mend_cut_short`] did with a merge or rebase cut short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mended {
    /// A rebase killed on its way: continued to its end.
    RebaseFinished {
        /// The branch rebased (None: HEAD was detached).
        branch: Option<String>,
        /// Where it ended.
        commit: ObjectId,
    },
    /// A rebase killed on its way, continued, stopped on a conflict: a person's to settle.
    RebaseStopped {
        /// The branch being rebased (None: HEAD was detached).
        branch: Option<String>,
        /// The commit whose pick conflicts.
        commit: ObjectId,
    },
    /// Stopped while writing the working tree: undone, its paths back to HEAD.
    Undone {
        /// What was being merged.
        label: String,
    },
    /// Stopped after writing a result without conflicts: committed, as it would have been.
    Committed {
        /// What was being merged.
        label: String,
        /// The merge commit made.
        commit: ObjectId,
    },
}

/// Whether a merge may move HEAD without a merge commit when HEAD is
/// behind (git's `--ff`, the default), must (`--ff-only`), or must not (`--no-ff`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FastForward {
    /// Fast-forward when HEAD is behind, else make a merge commit.
    #[default]
    Allow,
    /// Fast-forward, or refuse with nothing changed.
    Only,
    /// Make a merge commit even when HEAD is behind.
    Never,
}

/// A path a merge left in conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictedPath {
    /// The path, '/'-separated bytes.
    pub path: Vec<u8>,
    /// A text file now holding both sides' lines between conflict markers.
    pub marked: bool,
}

/// Refuses a write-out that would destroy untracked files: written over,
/// replaced by a directory, or inside a directory replaced by a file.
fn refuse_overwriting_untracked(
    status: &WorktreeStatus,
    ds: &Dirstate,
    target: &FlatTree,
) -> RepoResult<()> {
    let keys: BTreeSet<Vec<u8>> = target
        .keys()
        .filter(|p| !ds.entries.contains_key(p))
        .cloned()
        .collect();
    for u in &status.untracked {
        if keys.contains(u) || clash_with(&keys, u).is_some() {
            return Err(RepoError::UntrackedInTheWay {
                path: show(u),
                merge: true,
            });
        }
    }
    Ok(())
}

/// What a checkout of `wanted` would write: entries the dirstate does not already have.
fn new_entries<'a>(
    ds: &'a Dirstate,
    wanted: &'a FlatTree,
) -> impl Iterator<Item = (&'a [u8], &'a FlatEntry)> {
    wanted
        .iter()
        .filter(|(p, e)| {
            ds.entries
                .get(p)
                .is_none_or(|d| d.id != e.id || d.kind != e.kind)
        })
        .map(|(p, e)| (p.as_slice(), e))
}

impl Merges<'_> {
    /// Merges commit `theirs` (named `label` in messages) into HEAD: see the module comment.
    pub fn merge(
        &self,
        theirs: ObjectId,
        label: &str,
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        self.merge_with(theirs, label, FastForward::Allow, progress)
    }

    /// [`Merges::merge_with`], the merge commit's message `message` when
    /// given (`merge -m`; kept until the merge ends, so a merge concluded
    /// after its conflicts were settled takes it too).
    pub fn merge_with_message(
        &self,
        theirs: ObjectId,
        label: &str,
        ff: FastForward,
        message: Option<&str>,
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        self.with_message(theirs, message, || {
            self.merge_with(theirs, label, ff, progress)
        })
    }

    /// Runs `replay` (a merge or pick of `theirs`) with `message` kept as
    /// the one its commit takes (see `given_merge_message`), until the
    /// replay ends: at once, or once its conflicts are settled. Another
    /// replay in progress keeps its own (`replay` refuses to start).
    pub(crate) fn with_message(
        &self,
        theirs: ObjectId,
        message: Option<&str>,
        replay: impl FnOnce() -> RepoResult<MergeOutcome>,
    ) -> RepoResult<MergeOutcome> {
        let Some(message) = message.filter(|_| self.merge_state().ok().flatten().is_none()) else {
            return replay();
        };
        {
            let _wlock = self.repository().lock_worktree()?;
            self.keep_merge_message(&theirs, message)?;
        }
        let outcome = replay();
        if !matches!(outcome, Ok(MergeOutcome::Conflicts(_))) && self.merge_state()?.is_none() {
            self.forget_merge_message()?;
        }
        outcome
    }

    /// [`Merges::merge`], fast-forwarding as `ff` says.
    pub fn merge_with(
        &self,
        theirs: ObjectId,
        label: &str,
        ff: FastForward,
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        self.require_worktree()?;
        // Merged into the middle of a rebase, it would be lost when the rebase ends.
        if self.rebase_state()?.is_some() {
            return Err(RepoError::RebaseInProgress);
        }
        // A merge cut short while writing the working tree, which only an
        // abort may follow: undone (its paths back to HEAD) and this one
        // run. Whatever it merged, the same commit or one that moved on
        // since (a sync killed there, then run again after the remote
        // moved, was refused until a person typed `merge --abort`).
        if let Some(m) = self.merge_state()? {
            if m.phase == MergePhase::Applying {
                self.merge_abort()?;
            }
        }
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            // Cut short after writing a clean result, before committing it: committed now.
            if m.theirs == theirs
                && m.kind == MergeKind::Merge
                && m.phase == MergePhase::Resolving
                && m.conflicts.is_empty()
            {
                return self.conclude(&m);
            }
            return Err(RepoError::MergeAlreadyInProgress { label: m.label });
        }
        if self.store.kind_of(&theirs)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit {
                what: label.to_string(),
            });
        }
        let (status, ds) = self.worktree().worktree_status()?;
        refuse_staged_changes(&status)?;
        let Some(ours) = self.head_commit()? else {
            return self.fast_forward(None, theirs, label, (&status, &ds), progress);
        };
        if ours == theirs {
            return Ok(MergeOutcome::UpToDate);
        }
        let base = self.history().merge_base(ours, theirs)?;
        if base == Some(theirs) {
            return Ok(MergeOutcome::UpToDate);
        }
        self.repository().remember_orig_head(ours)?;
        match (base == Some(ours), ff) {
            (true, FastForward::Allow | FastForward::Only) => {
                return self.fast_forward(Some(ours), theirs, label, (&status, &ds), progress)
            }
            (false, FastForward::Only) => {
                return Err(RepoError::NotFastForward {
                    label: label.to_string(),
                })
            }
            // --no-ff: a merge commit even so, whose tree is theirs.
            _ => {}
        }
        // A fast-forward signs nothing; a merge commit needs a name, asked before the working tree changes.
        self.signer()?;
        // Unrelated histories (no base) merge as if from an empty tree: every path both add differently conflicts.
        self.three_way_merge(
            MergeKind::Merge,
            ours,
            base,
            theirs,
            label,
            (&status, &ds),
            progress,
        )
    }

    /// `merge --squash`: the merge of `theirs` into HEAD, as
    /// [`Merges::merge_with`] makes it (the same refusals), staged but not
    /// committed; HEAD stays. Git's "Squashed commit of the following:"
    /// message is kept in `.dmv/SQUASH_MSG` for the next commit. With
    /// conflicts a merge of kind [`MergeKind::Squash`] is in progress,
    /// which `commit` concludes as a commit on HEAD alone.
    pub fn merge_squash(
        &self,
        theirs: ObjectId,
        label: &str,
        progress: &dyn Progress,
    ) -> RepoResult<Squashed> {
        self.require_worktree()?;
        if self.rebase_state()?.is_some() {
            return Err(RepoError::RebaseInProgress);
        }
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeAlreadyInProgress { label: m.label });
        }
        if self.store.kind_of(&theirs)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit {
                what: label.to_string(),
            });
        }
        let (status, ds) = self.worktree().worktree_status()?;
        refuse_staged_changes(&status)?;
        // As git: "Squash commit into empty head not supported yet".
        let ours = self.head_commit()?.ok_or_else(|| RepoError::UnknownRevision(
            "HEAD (a squash needs a commit to squash onto; a plain merge fast-forwards an empty branch)".into(),
        ))?;
        let base = self.history().merge_base(ours, theirs)?;
        if ours == theirs || base == Some(theirs) {
            return Ok(Squashed::UpToDate);
        }
        let message = self.squash_message(Some(ours), theirs)?;
        let outcome = self.three_way_merge(
            MergeKind::Squash,
            ours,
            base,
            theirs,
            label,
            (&status, &ds),
            progress,
        )?;
        write_atomic(&self.dmv.join(SQUASH_MESSAGE_FILE), message.as_bytes())?;
        Ok(match outcome {
            MergeOutcome::Conflicts(paths) => Squashed::Conflicts(paths),
            _ => Squashed::Staged,
        })
    }

    /// Git's `SQUASH_MSG`: "Squashed commit of the following:", then each
    /// commit `theirs` has and `ours` lacks, newest first, as `log` shows it.
    fn squash_message(&self, ours: Option<ObjectId>, theirs: ObjectId) -> RepoResult<String> {
        let mut text = String::from("Squashed commit of the following:\n");
        let haves: Vec<ObjectId> = ours.into_iter().collect();
        for c in self.history().walk_between(&[theirs], &haves)? {
            let c = c?;
            text.push_str(&format!(
                "\ncommit {}\nAuthor: {} <{}>\nDate:   {}\n\n",
                c.id.to_hex(),
                c.commit.author.name,
                c.commit.author.email,
                crate::time::utc_time(c.commit.author.time)
            ));
            // Every line indented, empty ones too, as git's log writes them.
            for line in c.commit.message.trim_end().lines() {
                text.push_str(&format!("    {line}\n"));
            }
        }
        Ok(text)
    }

    fn fast_forward(
        &self,
        head: Option<ObjectId>,
        theirs: ObjectId,
        label: &str,
        now: (&WorktreeStatus, &Dirstate),
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        let target = self.commit(&theirs)?.tree;
        let wanted = flatten(&self.store, &target)?;
        let before = match head {
            Some(h) => flatten(&self.store, &self.commit(&h)?.tree)?,
            None => FlatTree::new(),
        };
        refuse_changes_in_the_way(now.0, &paths_touched(&before, &wanted, &before, &wanted))?;
        refuse_overwriting_untracked(now.0, now.1, &wanted)?;
        self.worktree()
            .check_data_present(new_entries(now.1, &wanted))?;
        let state = MergeState {
            head,
            theirs,
            label: label.to_string(),
            target,
            phase: MergePhase::Applying,
            conflicts: Vec::new(),
            kind: MergeKind::Merge,
        };
        self.save_merge_state(&state)?;
        dmv_store::failpoint("merge-state-written");
        self.worktree()
            .update_worktree(&target, &Written::new(), progress)?;
        dmv_store::failpoint("merge-worktree-written");
        self.advance_head(head, theirs, &format!("merge {label}: fast-forward"))?;
        dmv_store::failpoint("merge-after-ref");
        self.remove_merge_state()?;
        Ok(MergeOutcome::FastForward(theirs))
    }

    /// Merges `theirs` into `ours` from `base`, per path and then line by line;
    /// concluded at once as `kind` says when nothing conflicts.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn three_way_merge(
        &self,
        kind: MergeKind,
        ours: ObjectId,
        base: Option<ObjectId>,
        theirs: ObjectId,
        label: &str,
        now: (&WorktreeStatus, &Dirstate),
        progress: &dyn Progress,
    ) -> RepoResult<MergeOutcome> {
        let flat_of_commit =
            |c: &ObjectId| -> RepoResult<FlatTree> { flatten(&self.store, &self.commit(c)?.tree) };
        let base_flat = match base {
            Some(b) => flat_of_commit(&b)?,
            None => FlatTree::new(),
        };
        let (ours_flat, theirs_flat) = (flat_of_commit(&ours)?, flat_of_commit(&theirs)?);
        let (mut merged, mut conflicts) = three_way(&base_flat, &ours_flat, &theirs_flat);
        refuse_changes_in_the_way(
            now.0,
            &paths_touched(&ours_flat, &merged, &base_flat, &theirs_flat),
        )?;
        refuse_overwriting_untracked(now.0, now.1, &merged)?;
        self.worktree()
            .check_data_present(new_entries(now.1, &merged))?;

        let mut session = self.store.begin_write()?;
        // Markers name the sides as git's do: HEAD, the base's short id, what was merged.
        let base_label = base.map_or_else(|| "empty tree".to_string(), |b| b.short());
        let labels = MarkerLabels {
            ours: "HEAD",
            base: &base_label,
            theirs: label,
        };
        let marked =
            self.merge_text_conflicts(&mut session, &mut merged, &mut conflicts, &labels)?;
        let target = build(&mut session, merged.iter().map(|(p, e)| (p.as_slice(), *e)))?;
        session.finish()?;
        let mut state = MergeState {
            head: Some(ours),
            theirs,
            label: label.to_string(),
            target,
            phase: MergePhase::Applying,
            conflicts,
            kind,
        };
        // Saved while the session still holds the gc lock: from here on the
        // state file keeps the new tree alive.
        self.save_merge_state(&state)?;
        drop(session);
        dmv_store::failpoint("merge-state-written");
        self.worktree()
            .update_worktree(&target, &Written::new(), progress)?;
        // Over our version, which the dirstate keeps: `status` shows them modified.
        for m in &marked {
            self.worktree().write_made(&m.path, m.kind, &m.bytes)?;
        }
        dmv_store::failpoint("merge-worktree-written");
        state.phase = MergePhase::Resolving;
        self.save_merge_state(&state)?;
        if let Some(tool) = self
            .config
            .merge_tool
            .clone()
            .filter(|t| !t.trim().is_empty())
        {
            self.run_merge_tool(&tool, &mut state, &marked)?;
        }
        if !state.conflicts.is_empty() {
            let paths = state
                .conflicts
                .into_iter()
                .map(|c| ConflictedPath {
                    marked: marked.iter().any(|m| m.path == c.path),
                    path: c.path,
                })
                .collect();
            return Ok(MergeOutcome::Conflicts(paths));
        }
        self.conclude(&state)
    }

    /// Commits a merge or pick that has nothing left to settle, with the
    /// message it would have without one; a pick whose change is already on
    /// HEAD commits nothing.
    fn conclude(&self, state: &MergeState) -> RepoResult<MergeOutcome> {
        // A squash stops before committing: its result stays staged, HEAD where it was.
        if state.kind == MergeKind::Squash {
            self.remove_merge_state()?;
            return Ok(MergeOutcome::UpToDate);
        }
        if state.kind == MergeKind::CherryPick {
            let mut session = self.store.begin_write()?;
            let staged = self.load_dirstate()?.write_tree(&mut session)?;
            session.finish()?;
            if self.head_tree()? == Some(staged) {
                self.remove_merge_state()?;
                return Ok(MergeOutcome::UpToDate);
            }
        }
        Ok(MergeOutcome::Merged(
            self.commit_merge(state, &self.default_message(state)?)?,
        ))
    }

    /// For what runs unattended (a sync, a watcher), which no person is
    /// there to finish: a merge cut short that needs nobody's decision is
    /// finished or undone. One stopped while writing the working tree is
    /// undone (only an abort may follow it; it is merged again after); one
    /// stopped after writing a result without conflicts is committed as it
    /// would have been. A merge with conflicts left is a person's to settle:
    /// None, and it stays as it is. A rebase cut short goes on to its end
    /// first (see [`Merges::mend_interrupted_rebase`]).
    pub fn mend_cut_short(&self) -> RepoResult<Option<Mended>> {
        self.require_worktree()?;
        if let Some(mended) = self.mend_interrupted_rebase()? {
            return Ok(Some(mended));
        }
        let Some(state) = self.merge_state()? else {
            return Ok(None);
        };
        let label = state.label.clone();
        match state.phase {
            MergePhase::Applying => {
                self.merge_abort()?;
                Ok(Some(Mended::Undone { label }))
            }
            MergePhase::Resolving
                if state.conflicts.is_empty() && state.kind == MergeKind::Merge =>
            {
                let _wlock = self.lock_worktree()?;
                // Looked at again under the lock: another command may have settled it.
                let Some(state) = self.merge_state()? else {
                    return Ok(None);
                };
                let commit = self.commit_merge(&state, &self.default_message(&state)?)?;
                Ok(Some(Mended::Committed { label, commit }))
            }
            MergePhase::Resolving => Ok(None),
        }
    }

    /// What concludes `state` without `-m`: git's "Merge branch 'LABEL'"
    /// (see [`Merges::merge_message`]), or the picked commit's message.
    pub fn default_message(&self, state: &MergeState) -> RepoResult<String> {
        Ok(match state.kind {
            MergeKind::Merge => match self.given_merge_message(&state.theirs)? {
                Some(given) => given,
                None => self.merge_message(&state.label)?,
            },
            MergeKind::CherryPick => match self.given_merge_message(&state.theirs)? {
                Some(given) => given,
                None => self.commit(&state.theirs)?.message,
            },
            MergeKind::Squash => {
                match std::fs::read_to_string(self.dmv.join(SQUASH_MESSAGE_FILE)) {
                    Ok(text) => text.trim_end().to_string(),
                    Err(_) => self.squash_message(state.head, state.theirs)?,
                }
            }
        })
    }

    /// A merge commit's message as git writes it: "Merge branch 'side'",
    /// "Merge remote-tracking branch 'origin/main'", "Merge tag 'v1'" or
    /// "Merge commit 'LABEL'" for what `label` names, then " into BRANCH"
    /// unless HEAD's branch is main or master.
    pub fn merge_message(&self, label: &str) -> RepoResult<String> {
        let repo = self.repository();
        let named = match repo.full_ref(label)? {
            Some(full) if full.starts_with(BRANCHES) => format!("branch '{label}'"),
            Some(full) if full.starts_with(REMOTE_BRANCHES) => {
                format!("remote-tracking branch '{label}'")
            }
            Some(full) if full.starts_with(TAGS) => format!("tag '{label}'"),
            _ => format!("commit '{label}'"),
        };
        let into = match repo.head()? {
            Head::Branch(b) => match b.strip_prefix(BRANCHES).unwrap_or(&b) {
                "main" | "master" => String::new(),
                other => format!(" into {other}"),
            },
            Head::Detached(_) => String::new(),
        };
        Ok(format!("Merge {named}{into}"))
    }

    /// Commits the staged tree as the merge `state` describes (HEAD and
    /// their commit as parents, even when the tree equals HEAD's), once the
    /// merge is ready, then removes the state.
    pub(crate) fn commit_merge(&self, state: &MergeState, message: &str) -> RepoResult<ObjectId> {
        let head = self.head_commit()?;
        state.check_ready_to_commit(head)?;
        let ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let tree = ds.write_tree(&mut session)?;
        let id = match state.kind {
            MergeKind::Squash => {
                self.worktree()
                    .commit_on_head(&mut session, tree, head, None, message, None)?
            }
            MergeKind::Merge => self.worktree().commit_on_head(
                &mut session,
                tree,
                head,
                Some(state.theirs),
                message,
                None,
            )?,
            MergeKind::CherryPick => {
                // The picked change keeps its author; whoever picks it commits it.
                let author = self.commit(&state.theirs)?.author;
                let commit = Commit {
                    tree,
                    parents: head.into_iter().collect(),
                    author,
                    committer: self.signer()?,
                    message: message.to_string(),
                };
                let id = session.put_object(ObjectKind::Commit, &encode(&commit))?;
                session.finish()?;
                dmv_store::failpoint("commit-before-ref");
                self.advance_head(
                    head,
                    id,
                    &format!("cherry-pick: {}", message.lines().next().unwrap_or("")),
                )?;
                dmv_store::failpoint("commit-after-ref");
                id
            }
        };
        // After the ref: a crash in between leaves a state file that
        // `merge_state` recognises as finished and removes.
        self.remove_merge_state()?;
        drop(session);
        self.mark_tree(&ds, tree);
        Ok(id)
    }

    /// `merge --abort`: the paths the merge changed back to HEAD in the
    /// working tree and dirstate, and the merge state removed. Files the
    /// merge added go, files it changed or removed come back from HEAD;
    /// changes it carried at other paths stay, as git's abort keeps them
    /// (without a readable state file, every path goes back to HEAD).
    pub fn merge_abort(&self) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let state = match self.merge_state() {
            Ok(Some(s)) => Some(s),
            Ok(None) => return Err(RepoError::NoMergeToAbort),
            // A damaged state file must not block the way out, which needs only HEAD.
            Err(RepoError::Corrupt { .. }) => {
                self.remove_merge_state()?;
                None
            }
            Err(e) => return Err(e),
        };
        let head_flat = match self.head_tree()? {
            Some(t) => flatten(&self.store, &t)?,
            None => FlatTree::new(),
        };
        let (status, mut ds) = self.worktree().worktree_status()?;
        // What the working tree holds at tracked paths.
        let current = current_flat(&status, &ds);
        let touched = match &state {
            Some(s) => self.paths_merge_touched(s, &head_flat)?,
            None => None,
        };

        let mut doomed: Vec<Vec<u8>> = ds
            .entries
            .keys()
            .filter(|p| !head_flat.contains_key(*p))
            .map(<[u8]>::to_vec)
            .collect();
        if let Some(s) = state.filter(|s| s.phase == MergePhase::Applying) {
            // Interrupted before the dirstate was saved: files the merge already
            // wrote show as untracked. Remove those holding exactly what it wrote,
            // and the temporary file of a write it was killed in.
            let target = flatten(&self.store, &s.target)?;
            for p in status
                .untracked
                .iter()
                .filter(|p| !head_flat.contains_key(*p))
            {
                let name = p.rsplit(|b| *b == b'/').next().unwrap_or(p);
                if name.starts_with(TEMP_PREFIX.as_bytes()) {
                    doomed.push(p.clone());
                    continue;
                }
                let Some(want) = target.get(p) else { continue };
                let Ok(meta) = std::fs::symlink_metadata(self.abs_path(p)) else {
                    continue;
                };
                if kind_of(&meta) == Some(want.kind)
                    && self.worktree().current_id(p, &Stat::of(&meta))?.0 == want.id
                {
                    doomed.push(p.clone());
                }
            }
        }
        for p in doomed {
            self.worktree().remove_worktree_file(&p)?;
            ds.entries.remove(&p);
        }
        for (p, e) in &head_flat {
            if touched.as_ref().is_some_and(|t| !t.contains(p)) {
                continue;
            }
            if same(current.get(p), Some(e)) {
                // The file is right; only a staged version may need to go.
                if !ds
                    .entries
                    .get(p)
                    .is_some_and(|d| d.kind == e.kind && d.id == e.id)
                {
                    let meta = std::fs::symlink_metadata(self.abs_path(p)).at(&self.abs_path(p))?;
                    ds.entries
                        .insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                }
                continue;
            }
            // In a partial replica HEAD's version may not be here: it stays
            // absent, as a checkout leaves it, and what the merge wrote there goes.
            if self.copies().is_absent(e)? {
                if current.contains_key(p) {
                    self.worktree().remove_worktree_file(p)?;
                }
                ds.entries
                    .insert(p.clone(), DirEntry::absent(e.kind, e.id, e.size));
                continue;
            }
            let meta = self.worktree().write_entry(p, e)?;
            ds.entries
                .insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
        }
        self.save_dirstate(&ds)?;
        self.remove_merge_state()
    }

    /// [`paths_touched`] by the merge or pick `state` describes, as it
    /// refused changes at them when it began; None when HEAD was unborn.
    fn paths_merge_touched(
        &self,
        state: &MergeState,
        head_flat: &FlatTree,
    ) -> RepoResult<Option<HashSet<Vec<u8>>>> {
        let Some(head) = state.head else {
            return Ok(None);
        };
        let theirs = self.commit(&state.theirs)?;
        let base = match state.kind {
            MergeKind::Merge | MergeKind::Squash => {
                self.history().merge_base(head, state.theirs)?
            }
            MergeKind::CherryPick => theirs.parents.first().copied(),
        };
        let base_flat = match base {
            Some(b) => flatten(&self.store, &self.commit(&b)?.tree)?,
            None => FlatTree::new(),
        };
        let target = flatten(&self.store, &state.target)?;
        Ok(Some(paths_touched(
            head_flat,
            &target,
            &base_flat,
            &flatten(&self.store, &theirs.tree)?,
        )))
    }
}

/// Refuses a merge or pick over staged changes: they would go into its
/// commit (git refuses them too). Unstaged ones are looked at once the
/// result is known ([`refuse_changes_in_the_way`]).
pub(crate) fn refuse_staged_changes(status: &WorktreeStatus) -> RepoResult<()> {
    match status.staged.first() {
        Some(c) => Err(RepoError::UncommittedChanges {
            path: show(&c.path),
            merge: true,
        }),
        None => Ok(()),
    }
}

/// Refuses a merge or pick with an unstaged change at a path it `touched`;
/// changes at other paths are carried through it, as git carries them.
fn refuse_changes_in_the_way(
    status: &WorktreeStatus,
    touched: &HashSet<Vec<u8>>,
) -> RepoResult<()> {
    match status.unstaged.iter().find(|c| touched.contains(&c.path)) {
        Some(c) => Err(RepoError::UncommittedChanges {
            path: show(&c.path),
            merge: true,
        }),
        None => Ok(()),
    }
}

/// The paths a merge touches: where its result `after` differs from HEAD's
/// `before`, and where their side changed the base (a conflict is one of
/// those). `merge --abort` puts back exactly these.
fn paths_touched(
    before: &FlatTree,
    after: &FlatTree,
    base: &FlatTree,
    theirs: &FlatTree,
) -> HashSet<Vec<u8>> {
    let mut out = HashSet::new();
    for (one, two) in [(before, after), (base, theirs)] {
        out.extend(
            one.iter()
                .filter(|(p, e)| two.get(*p) != Some(*e))
                .map(|(p, _)| p.clone()),
        );
        out.extend(two.keys().filter(|p| !one.contains_key(*p)).cloned());
    }
    out
}
