//! What replays changes onto HEAD (merge, cherry-pick, revert, rebase) in
//! any replica: a partial one first fetches the versions the line merge
//! reads (the three sides of each text file both changed), which it may
//! not hold; without them the file would conflict where a full replica
//! merges it cleanly. Front ends call these, not the repository's own
//! methods, so no front end has to remember the fetch.

use dmv_repo::store::ObjectId;
use dmv_repo::{
    FastForward, MergeOutcome, Progress, RebaseEditor, RebaseOutcome, RebaseStep, Repository,
    Squashed,
};

use crate::operations::pull::{
    fetch_what_a_merge_reads, fetch_what_a_pick_reads, fetch_what_a_rebase_reads,
};
use crate::SyncResult;

/// Merges `theirs` (named `label` in messages) into HEAD, a merge commit
/// saying `message` when given (else git's "Merge branch 'LABEL'").
pub fn merge(
    repo: &Repository,
    theirs: ObjectId,
    label: &str,
    ff: FastForward,
    message: Option<&str>,
    progress: &dyn Progress,
) -> SyncResult<MergeOutcome> {
    fetch_what_a_merge_reads(repo, theirs, progress)?;
    Ok(repo
        .merges()
        .merge_with_message(theirs, label, ff, message, progress)?)
}

/// The merge of `theirs` (named `label` in messages) into HEAD, staged
/// but not committed (git's `merge --squash`): the same files are merged
/// as by [`merge`], so the same versions are fetched first.
pub fn merge_squash(
    repo: &Repository,
    theirs: ObjectId,
    label: &str,
    progress: &dyn Progress,
) -> SyncResult<Squashed> {
    fetch_what_a_merge_reads(repo, theirs, progress)?;
    Ok(repo.merges().merge_squash(theirs, label, progress)?)
}

/// Applies the change of commit `pick` (against its first parent) onto
/// HEAD; with `record_origin` (`-x`) its message names the picked commit.
pub fn cherry_pick(
    repo: &Repository,
    pick: ObjectId,
    label: &str,
    record_origin: bool,
    progress: &dyn Progress,
) -> SyncResult<MergeOutcome> {
    let parent = repo.commit(&pick)?.parents.first().copied();
    fetch_what_a_pick_reads(repo, parent, pick, progress)?;
    Ok(repo
        .merges()
        .cherry_pick_recording(pick, label, record_origin, progress)?)
}

/// Commits the undoing of `target`'s change (against its first parent) on HEAD.
pub fn revert(
    repo: &Repository,
    target: ObjectId,
    progress: &dyn Progress,
) -> SyncResult<ObjectId> {
    if let Some(parent) = repo.commit(&target)?.parents.first() {
        // The revert merges `parent` onto HEAD with `target` as the base.
        fetch_what_a_pick_reads(repo, Some(target), *parent, progress)?;
    }
    Ok(repo.merges().revert(target, progress)?)
}

/// Replays `todo` onto `onto`.
pub fn rebase(
    repo: &Repository,
    onto: ObjectId,
    todo: Vec<RebaseStep>,
    editor: &dyn RebaseEditor,
    progress: &dyn Progress,
) -> SyncResult<RebaseOutcome> {
    fetch_what_a_rebase_reads(repo, onto, &todo, progress)?;
    Ok(repo.merges().rebase(onto, todo, editor, progress)?)
}
