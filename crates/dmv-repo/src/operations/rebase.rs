//! `rebase`: the commits of the current branch that its upstream lacks,
//! picked one by one onto the upstream (each by `cherry_pick`), then the
//! branch moved to the last of them. A pick that conflicts stops the
//! rebase: the person settles it as a merge's conflicts and runs
//! `rebase --continue`; `--skip` leaves that commit out; `--abort` puts the
//! branch and the working tree back as they were.
//!
//! The plan is a todo list (`pick`, `reword`, `squash`, `fixup`, `drop`,
//! as in git's `rebase -i`) kept in `.dmv/REBASE_STATE` (JSON, replaced
//! atomically) until the rebase ends. The branch itself moves only at the
//! end, so an abort, or a kill at any moment, loses nothing: the state and
//! the branch say where things stand, and `--continue` goes on.
//!
//! A pick that merges cleanly is made without the working tree: a merge of
//! trees (text files line by line) and a commit object, the result kept in
//! the plan as its tip; the files are written once, when a step needs them
//! (a conflict, a reword, squash or fixup) or at the end.

use crate::repository::handles::Merges;
use dmv_store::object::{encode, Commit};
use dmv_store::{ObjectId, ObjectKind, Progress};
use serde::{Deserialize, Serialize};

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{build, diff_flat, flatten, FlatEntry, FlatTree};
use crate::line_merge::{never_text, MarkerLabels, MAX_TEXT_MERGE};
use crate::merge::merge_state::{MergeKind, MergePhase};
use crate::merge::merging::{ConflictedPath, Mended, MergeOutcome};
use crate::merge::three_way::three_way;
use crate::paths::show;
use crate::repository::refs::{Head, RefUpdate};

const STATE_FILE: &str = "REBASE_STATE";

/// What a todo line does with its commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Apply it as it is.
    Pick,
    /// Apply it with a new message.
    Reword,
    /// Fold it into the commit before, the two messages joined.
    Squash,
    /// Fold it into the commit before, keeping that one's message.
    Fixup,
    /// Leave it out.
    Drop,
}

impl Action {
    /// The word in a todo list (or its one-letter short form).
    pub fn parse(word: &str) -> Option<Action> {
        Some(match word {
            "pick" | "p" => Action::Pick,
            "reword" | "r" => Action::Reword,
            "squash" | "s" => Action::Squash,
            "fixup" | "f" => Action::Fixup,
            "drop" | "d" => Action::Drop,
            _ => return None,
        })
    }

    /// The word written in a todo list.
    pub fn word(self) -> &'static str {
        match self {
            Action::Pick => "pick",
            Action::Reword => "reword",
            Action::Squash => "squash",
            Action::Fixup => "fixup",
            Action::Drop => "drop",
        }
    }
}

/// One line of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// What is done.
    pub action: Action,
    /// To which commit.
    pub commit: ObjectId,
}

/// `.dmv/REBASE_STATE`: present exactly while a rebase is unfinished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebaseState {
    /// The branch being rebased (a full ref name); None: HEAD was detached.
    pub branch: Option<String>,
    /// Where the branch was: what `--abort` puts back.
    pub orig_head: ObjectId,
    /// What the commits are picked onto.
    pub onto: ObjectId,
    /// The steps not done yet, the next first. While a pick is stopped on
    /// conflicts it is still the first.
    pub todo: Vec<Step>,
    /// The commit the steps done so far made, when they were made without
    /// the working tree (HEAD and the files are still where they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<ObjectId>,
}

/// Where a rebase run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RebaseOutcome {
    /// The branch already had the upstream's commits under its own: nothing moved.
    UpToDate,
    /// Every step done; the branch (or detached HEAD) is at this commit.
    Done(ObjectId),
    /// This commit's pick conflicts on these paths; the rebase waits for `--continue`.
    Stopped {
        /// The commit being picked.
        commit: ObjectId,
        /// Its conflicted paths.
        conflicts: Vec<ConflictedPath>,
    },
}

/// What a rebase asks of the person at the keyboard as it runs: a new
/// message for a reworded or squashed commit (given the one proposed;
/// None keeps it).
pub trait RebaseEditor {
    /// The message to use instead of `proposed`, if any.
    fn message(&self, proposed: &str) -> Option<String>;
}

/// Keeps every message as proposed.
pub struct KeepMessages;

impl RebaseEditor for KeepMessages {
    fn message(&self, _proposed: &str) -> Option<String> {
        None
    }
}

impl Merges<'_> {
    /// The unfinished rebase, if any.
    pub fn rebase_state(&self) -> RepoResult<Option<RebaseState>> {
        let path = self.dmv.join(STATE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| RepoError::Corrupt {
                    path,
                    detail: format!("{e} (aborting the rebase discards it)"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    fn save_rebase_state(&self, state: &RebaseState) -> RepoResult<()> {
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| RepoError::Encode {
            what: "the rebase state",
            detail: e.to_string(),
        })?;
        crate::atomic::write_atomic(&self.dmv.join(STATE_FILE), &bytes)
    }

    fn remove_rebase_state(&self) -> RepoResult<()> {
        let path = self.dmv.join(STATE_FILE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RepoError::io(path, e)),
            _ => Ok(()),
        }
    }

    /// Objects an unfinished rebase still needs, for gc: where it started and what it picks.
    pub(crate) fn rebase_roots(&self) -> RepoResult<Vec<ObjectId>> {
        Ok(self
            .rebase_state()?
            .map(|s| {
                [s.orig_head, s.onto]
                    .into_iter()
                    .chain(s.tip)
                    .chain(s.todo.iter().map(|t| t.commit))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The plan `rebase UPSTREAM` would follow: the commits of HEAD's
    /// first-parent line that `upstream` lacks, oldest first, each picked
    /// (merge commits are left out, as git leaves them). Empty when HEAD
    /// has nothing upstream lacks.
    pub fn rebase_plan(&self, upstream: ObjectId) -> RepoResult<Vec<Step>> {
        let head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commit to rebase)".into()))?;
        let upstream_has = self.history().ancestors(&[upstream])?;
        let mut steps = Vec::new();
        let mut at = Some(head);
        while let Some(id) = at.filter(|id| !upstream_has.contains(id)) {
            let commit = self.commit(&id)?;
            if commit.parents.len() <= 1 {
                steps.push(Step {
                    action: Action::Pick,
                    commit: id,
                });
            }
            at = commit.parents.first().copied();
        }
        steps.reverse();
        Ok(steps)
    }

    /// The versions a rebase of HEAD onto `onto` following `todo` would
    /// read to merge text files line by line: for each pick, the files it
    /// changes that `onto` changed too since the two lines parted, in the
    /// pick's parent, the pick and `onto` (a later pick meets an earlier
    /// one's result, made here). What a partial replica fetches before it
    /// rebases, so its picks merge as a full replica's do.
    pub fn versions_a_rebase_reads(
        &self,
        onto: ObjectId,
        todo: &[Step],
    ) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let Some(head) = self.head_commit()? else {
            return Ok(Vec::new());
        };
        let flat_of = |c: Option<&ObjectId>| -> RepoResult<FlatTree> {
            match c {
                Some(c) => flatten(&self.store, &self.commit(c)?.tree),
                None => Ok(FlatTree::new()),
            }
        };
        let onto_flat = flat_of(Some(&onto))?;
        let upstream_changed: std::collections::BTreeSet<Vec<u8>> = diff_flat(
            &flat_of(self.history().merge_base(head, onto)?.as_ref())?,
            &onto_flat,
        )
        .into_iter()
        .map(|c| c.path)
        .collect();
        let text = |e: &FlatEntry| e.kind.is_file() && e.size <= MAX_TEXT_MERGE;
        let mut out = Vec::new();
        for step in todo.iter().filter(|s| s.action != Action::Drop) {
            let picked = self.commit(&step.commit)?;
            for c in diff_flat(
                &flat_of(picked.parents.first())?,
                &flat_of(Some(&step.commit))?,
            ) {
                if upstream_changed.contains(&c.path) && !never_text(&c.path) {
                    let sides = [c.old, c.new, onto_flat.get(&c.path).copied()];
                    out.extend(
                        sides
                            .into_iter()
                            .flatten()
                            .filter(text)
                            .map(|e| (c.path.clone(), e)),
                    );
                }
            }
        }
        Ok(out)
    }

    /// Starts a rebase of HEAD onto `onto` following `todo` (see
    /// [`Merges::rebase_plan`]; an edited list for `rebase -i`).
    pub fn rebase(
        &self,
        onto: ObjectId,
        todo: Vec<Step>,
        editor: &dyn RebaseEditor,
        progress: &dyn Progress,
    ) -> RepoResult<RebaseOutcome> {
        self.require_worktree()?;
        self.signer()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        if self.rebase_state()?.is_some() {
            return Err(RepoError::RebaseInProgress);
        }
        if self.store.kind_of(&onto)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit { what: onto.short() });
        }
        let orig_head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commit to rebase)".into()))?;
        let (status, _) = self.worktree().worktree_status()?;
        if let Some(c) = status.first_change() {
            return Err(RepoError::UncommittedChanges {
                path: show(&c.path),
                merge: true,
            });
        }
        if let Some(first) = todo
            .iter()
            .find(|s| s.action != Action::Drop)
            .filter(|s| matches!(s.action, Action::Squash | Action::Fixup))
        {
            return Err(RepoError::BadTodo {
                detail: format!(
                    "{} {} has no commit before it to fold into",
                    first.action.word(),
                    first.commit.short()
                ),
            });
        }
        // Already on top of onto, and every commit picked as it is: nothing would change.
        if todo.iter().all(|s| s.action == Action::Pick)
            && self.history().is_ancestor(&onto, &orig_head)?
        {
            return Ok(RebaseOutcome::UpToDate);
        }
        self.repository().remember_orig_head(orig_head)?;
        let branch = self.history().head_branch()?;
        let state = RebaseState {
            branch,
            orig_head,
            onto,
            todo,
            tip: None,
        };
        self.save_rebase_state(&state)?;
        dmv_store::failpoint("rebase-state-written");
        self.run_rebase(state, editor, progress)
    }

    /// `rebase --continue`: concludes the stopped pick (its conflicts
    /// settled) and goes on with the plan.
    pub fn rebase_continue(
        &self,
        editor: &dyn RebaseEditor,
        progress: &dyn Progress,
    ) -> RepoResult<RebaseOutcome> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut state = self.rebase_state()?.ok_or(RepoError::NoRebaseInProgress)?;
        // A pick cut short while its working tree was written is undone, and made anew by the plan.
        if self
            .merge_state()?
            .is_some_and(|m| m.phase == MergePhase::Applying)
        {
            self.merge_abort()?;
        }
        if let Some(m) = self.merge_state()? {
            let step = state
                .todo
                .first()
                .cloned()
                .filter(|s| m.kind == MergeKind::CherryPick && s.commit == m.theirs)
                .ok_or(RepoError::MergeInProgress {
                    label: m.label.clone(),
                })?;
            let message = self.commit(&step.commit)?.message;
            let before = self.head_commit()?;
            self.commit_staged(&message)?;
            self.after_pick(&state, &step, before, editor)?;
            state.todo.remove(0);
            self.save_rebase_state(&state)?;
        }
        self.run_rebase(state, editor, progress)
    }

    /// For what runs unattended (see [`Merges::mend_cut_short`]): a
    /// rebase killed on its way (not stopped on a conflict, which waits for
    /// its person; one whose conflicts are all settled goes on, as a
    /// settled merge is committed) goes on as `rebase --continue` would, each message kept
    /// as it stands (no editor is asked with nobody there). Going on, not
    /// back: the person asked for the rebase, and its plan is kept whole.
    pub(crate) fn mend_interrupted_rebase(&self) -> RepoResult<Option<Mended>> {
        let _wlock = self.lock_worktree()?;
        let Some(state) = self.rebase_state()? else {
            return Ok(None);
        };
        if self
            .merge_state()?
            .is_some_and(|m| m.phase == MergePhase::Resolving && !m.conflicts.is_empty())
        {
            return Ok(None);
        }
        let branch = state.branch.clone();
        Ok(Some(
            match self.rebase_continue(&KeepMessages, &dmv_store::Silent)? {
                RebaseOutcome::Done(commit) => Mended::RebaseFinished { branch, commit },
                RebaseOutcome::UpToDate => Mended::RebaseFinished {
                    branch,
                    commit: self.head_commit()?.unwrap_or(state.orig_head),
                },
                RebaseOutcome::Stopped { commit, .. } => Mended::RebaseStopped { branch, commit },
            },
        ))
    }

    /// `rebase --skip`: leaves out the stopped pick's commit and goes on.
    pub fn rebase_skip(
        &self,
        editor: &dyn RebaseEditor,
        progress: &dyn Progress,
    ) -> RepoResult<RebaseOutcome> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut state = self.rebase_state()?.ok_or(RepoError::NoRebaseInProgress)?;
        if self.merge_state()?.is_some() {
            self.merge_abort()?;
        }
        if !state.todo.is_empty() {
            state.todo.remove(0);
            self.save_rebase_state(&state)?;
        }
        self.run_rebase(state, editor, progress)
    }

    /// `rebase --abort`: the branch, HEAD and working tree back to where the rebase started.
    pub fn rebase_abort(&self, progress: &dyn Progress) -> RepoResult<()> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let state = self.rebase_state()?.ok_or(RepoError::NoRebaseInProgress)?;
        if self.merge_state()?.is_some() {
            self.merge_abort()?;
        }
        let back = match &state.branch {
            Some(b) => {
                // Cut short after the branch moved to the result: it goes back too, from where it is.
                let now = self.refs.get(b)?;
                if let Some(moved) = now.filter(|n| state.todo.is_empty() && *n != state.orig_head)
                {
                    // HEAD leaves the branch first, so the switch below sees the files to put back.
                    self.set_head(&Head::Detached(moved))?;
                    self.update_refs(
                        &[RefUpdate {
                            name: b.clone(),
                            expected: Some(now),
                            new: Some(state.orig_head),
                        }],
                        &self.who(),
                        "rebase (abort)",
                    )?;
                }
                Head::Branch(b.clone())
            }
            None => Head::Detached(state.orig_head),
        };
        self.switch_to(&back, progress)?;
        self.remove_rebase_state()
    }

    /// Does the steps of `state` until one stops or none is left, then
    /// moves the branch to the result.
    fn run_rebase(
        &self,
        mut state: RebaseState,
        editor: &dyn RebaseEditor,
        progress: &dyn Progress,
    ) -> RepoResult<RebaseOutcome> {
        loop {
            self.pick_in_memory(&mut state)?;
            let Some(step) = state.todo.first().cloned() else {
                break;
            };
            // This step needs the working tree: HEAD and the files go to what the picks made first.
            self.check_out_tip(&mut state, progress)?;
            if step.action != Action::Drop {
                let before = self.head_commit()?;
                match self.cherry_pick(step.commit, &step.commit.short(), progress)? {
                    MergeOutcome::Conflicts(conflicts) => {
                        return Ok(RebaseOutcome::Stopped {
                            commit: step.commit,
                            conflicts,
                        })
                    }
                    // A change already on the new base: left out, as git leaves it.
                    MergeOutcome::UpToDate => {}
                    _ => self.after_pick(&state, &step, before, editor)?,
                }
            }
            state.todo.remove(0);
            self.save_rebase_state(&state)?;
            dmv_store::failpoint("rebase-step-saved");
        }
        self.check_out_tip(&mut state, progress)?;
        let new_head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD".into()))?;
        if let Some(branch) = &state.branch {
            // The branch moves once, from where it was to the result (unless a run cut short moved it); HEAD goes back onto it.
            if self.refs.get(branch)? != Some(new_head) {
                self.update_refs(
                    &[RefUpdate {
                        name: branch.clone(),
                        expected: Some(Some(state.orig_head)),
                        new: Some(new_head),
                    }],
                    &self.who(),
                    &format!("rebase (finish): onto {}", state.onto.to_hex()),
                )?;
            }
            dmv_store::failpoint("rebase-branch-moved");
            self.set_head(&Head::Branch(branch.clone()))?;
        }
        dmv_store::failpoint("rebase-head-back");
        self.remove_rebase_state()?;
        Ok(RebaseOutcome::Done(new_head))
    }

    /// Does the plan's next picks that merge cleanly without the working
    /// tree, from its tip (else HEAD): one commit object each, the plan and
    /// its new tip saved once for them all. Stops before a step that needs
    /// the working tree: a conflict (to be picked there, where it stops),
    /// a reword, squash or fixup.
    fn pick_in_memory(&self, state: &mut RebaseState) -> RepoResult<()> {
        let mut tip = match state.tip {
            Some(tip) => tip,
            None if self.not_left(state)? => state.onto,
            None => self
                .head_commit()?
                .ok_or_else(|| RepoError::UnknownRevision("HEAD".into()))?,
        };
        let planned = state.todo.len();
        let mut session = self.store.begin_write()?;
        let flat_of = |c: Option<&ObjectId>| -> RepoResult<FlatTree> {
            match c {
                Some(c) => flatten(&self.store, &self.commit(c)?.tree),
                None => Ok(FlatTree::new()),
            }
        };
        // Each pick's result is the next one's side, and in a line of commits
        // each picked commit the next one's base: each tree is read once.
        let mut tip_tree = self.commit(&tip)?.tree;
        let mut tip_flat = flat_of(Some(&tip))?;
        let mut last_picked: Option<(ObjectId, FlatTree)> = None;
        while let Some(step) = state.todo.first() {
            match step.action {
                Action::Drop => {}
                Action::Pick => {
                    let picked = self.commit(&step.commit)?;
                    if picked.parents.len() > 1 {
                        break;
                    }
                    let base = match (last_picked.take(), picked.parents.first()) {
                        (Some((id, flat)), Some(parent)) if id == *parent => flat,
                        (_, parent) => flat_of(parent)?,
                    };
                    let theirs = flat_of(Some(&step.commit))?;
                    let (mut merged, mut conflicts) = three_way(&base, &tip_flat, &theirs);
                    if !conflicts.is_empty() {
                        let base = picked
                            .parents
                            .first()
                            .map_or_else(|| "empty tree".to_string(), |b| b.short());
                        let labels = MarkerLabels {
                            ours: "HEAD",
                            base: &base,
                            theirs: &step.commit.short(),
                        };
                        // The text merge reads what earlier picks wrote: written out first.
                        session.finish()?;
                        self.merge_text_conflicts(
                            &mut session,
                            &mut merged,
                            &mut conflicts,
                            &labels,
                        )?;
                        if !conflicts.is_empty() {
                            break;
                        }
                    }
                    let tree = build(&mut session, merged.iter().map(|(p, e)| (p.as_slice(), *e)))?;
                    // A change already on the new base: left out, as git leaves it.
                    if tree != tip_tree {
                        let commit = Commit {
                            tree,
                            parents: vec![tip],
                            author: picked.author,
                            committer: self.signer()?,
                            message: picked.message,
                        };
                        tip = session.put_object(ObjectKind::Commit, &encode(&commit))?;
                        tip_tree = tree;
                        tip_flat = merged;
                    }
                    last_picked = Some((step.commit, theirs));
                }
                Action::Reword | Action::Squash | Action::Fixup => break,
            }
            state.todo.remove(0);
        }
        if state.todo.len() != planned {
            session.finish()?;
            state.tip = Some(tip);
            // Saved while the session still holds the gc lock: the plan keeps the new commits alive.
            self.save_rebase_state(state)?;
            drop(session);
            dmv_store::failpoint("rebase-picked-in-memory");
        }
        Ok(())
    }

    /// HEAD, detached, and the working tree to the plan's tip, where the
    /// picks made one; else to onto, when HEAD has not left where the rebase
    /// started (the branch itself moves only at the end).
    fn check_out_tip(&self, state: &mut RebaseState, progress: &dyn Progress) -> RepoResult<()> {
        let target = match state.tip {
            Some(tip) => tip,
            None if self.not_left(state)? => state.onto,
            None => return Ok(()),
        };
        if self.head()? != Head::Detached(target) {
            self.switch_to(&Head::Detached(target), progress)?;
            dmv_store::failpoint("rebase-detached");
        }
        if state.tip.take().is_some() {
            self.save_rebase_state(state)?;
        }
        Ok(())
    }

    /// HEAD is still where the rebase started: the branch (not yet moved
    /// to the result), or the commit it was detached at.
    fn not_left(&self, state: &RebaseState) -> RepoResult<bool> {
        Ok(match (&state.branch, self.head()?) {
            (Some(b), Head::Branch(h)) => *b == h && self.refs.get(b)? == Some(state.orig_head),
            (None, Head::Detached(h)) => h == state.orig_head,
            _ => false,
        })
    }

    /// What a step does after its pick committed (HEAD moved from `before`):
    /// a new message for reword, the fold into the commit before for squash and fixup.
    fn after_pick(
        &self,
        state: &RebaseState,
        step: &Step,
        before: Option<ObjectId>,
        editor: &dyn RebaseEditor,
    ) -> RepoResult<()> {
        let head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD".into()))?;
        if Some(head) == before {
            return Ok(());
        }
        let picked = self.commit(&head)?;
        let replacement = match step.action {
            Action::Reword => match editor.message(&picked.message) {
                Some(message) => Commit { message, ..picked },
                None => return Ok(()),
            },
            // Folded into the commit before: its tree, the earlier commit's parents and author.
            Action::Squash | Action::Fixup => {
                // Every commit before it was left out (empty): nothing of this rebase to fold into.
                if picked.parents.first() == Some(&state.onto) {
                    return Ok(());
                }
                let earlier = self.commit(&picked.parents[0])?;
                let joined = format!(
                    "{}\n\n{}",
                    earlier.message.trim_end(),
                    picked.message.trim_end()
                );
                let message = match step.action {
                    Action::Squash => editor.message(&joined).unwrap_or(joined),
                    _ => earlier.message.clone(),
                };
                Commit {
                    tree: picked.tree,
                    parents: earlier.parents,
                    author: earlier.author,
                    committer: self.signer()?,
                    message,
                }
            }
            Action::Pick | Action::Drop => return Ok(()),
        };
        let mut session = self.store.begin_write()?;
        let id = session.put_object(ObjectKind::Commit, &encode(&replacement))?;
        session.finish()?;
        self.advance_head(
            Some(head),
            id,
            &format!(
                "rebase ({}): {}",
                step.action.word(),
                replacement.message.lines().next().unwrap_or("")
            ),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_file_is_pinned() {
        // Golden: the JSON a rebase in progress leaves, read back the same.
        let state = RebaseState {
            branch: Some("refs/heads/main".into()),
            orig_head: ObjectId([1; 32]),
            onto: ObjectId([2; 32]),
            todo: vec![
                Step {
                    action: Action::Pick,
                    commit: ObjectId([3; 32]),
                },
                Step {
                    action: Action::Fixup,
                    commit: ObjectId([4; 32]),
                },
            ],
            tip: None,
        };
        let json = serde_json::to_string(&state).unwrap();
        let one = "01".repeat(32);
        let two = "02".repeat(32);
        let three = "03".repeat(32);
        let four = "04".repeat(32);
        assert_eq!(
            json,
            format!(
                r#"{{"branch":"refs/heads/main","orig_head":"{one}","onto":"{two}","todo":[{{"action":"pick","commit":"{three}"}},{{"action":"fixup","commit":"{four}"}}]}}"#
            )
        );
        assert_eq!(serde_json::from_str::<RebaseState>(&json).unwrap(), state);
        assert!(serde_json::from_str::<RebaseState>(&json.replace(&three, "zz")).is_err());
        // With a tip the picks made without the working tree, it comes last.
        let tipped = RebaseState {
            tip: Some(ObjectId([5; 32])),
            ..state.clone()
        };
        let json = serde_json::to_string(&tipped).unwrap();
        assert!(
            json.ends_with(&format!(r#","tip":"{}"}}"#, "05".repeat(32))),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<RebaseState>(&json).unwrap(), tipped);
    }

    #[test]
    fn todo_words_are_gits() {
        for (word, action) in [
            ("pick", Action::Pick),
            ("r", Action::Reword),
            ("squash", Action::Squash),
            ("f", Action::Fixup),
            ("d", Action::Drop),
        ] {
            assert_eq!(Action::parse(word), Some(action));
        }
        assert_eq!(Action::parse("edit"), None);
    }
}
