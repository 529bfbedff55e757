//! A sync that never stops on a conflict, for a watcher with no one at the
//! keyboard: a file changed on two replicas keeps both versions side by
//! side (`name.ours.ext`, `name.theirs.ext`), the merge is committed, and
//! the sync goes on to send it. Nothing is resolved by picking a side.

use dmv_repo::{MergePhase, Progress, Repository, Resolution, Resolved};

use crate::operations::pull::{sync_all, SyncedAll};
use crate::{SyncError, SyncResult};

/// What [`sync_keeping_both`] did.
#[derive(Debug, Default)]
pub struct SyncedKeepingBoth {
    /// Each pass of [`sync_all`]: one, and one more after each merge that
    /// had conflicts (the merge commit is then sent).
    pub passes: Vec<SyncedAll>,
    /// The files changed on both sides, and where their versions are now.
    pub kept_both: Vec<Resolved>,
}

/// A merge brought in by one remote can meet a conflict, then the next
/// remote's another: a pass per remote, and one to send the result.
const MAX_PASSES: usize = 8;

/// Marks a sync of [`sync_keeping_both`] under way (`.dmv/WATCH_MERGING`):
/// a merge in progress then is its own, left by a kill between the merge
/// and its commit, and the next call settles it; one the user started is
/// never touched.
const UNDER_WAY: &str = "WATCH_MERGING";

/// [`sync_all`], settling each merge that stops on conflicts by keeping
/// both versions of every conflicted file and committing the merge, then
/// syncing again. A merge in progress that the user started is not
/// touched: the sync fails as `dmv sync` would.
pub fn sync_keeping_both(
    repo: &Repository,
    progress: &dyn Progress,
) -> SyncResult<SyncedKeepingBoth> {
    let mut done = SyncedKeepingBoth::default();
    let under_way = repo.dmv.join(UNDER_WAY);
    if under_way.exists() && repo.merges().merge_state()?.is_some() {
        settle(repo, &mut done)?;
    }
    let mark = || {
        std::fs::write(&under_way, b"")
            .map_err(|e| SyncError::local(format!("cannot write {}", under_way.display()), e))
    };
    for _ in 0..MAX_PASSES {
        mark()?;
        let synced = sync_all(repo, progress)?;
        let stopped = synced.stopped_at.is_some();
        done.passes.push(synced);
        if !stopped {
            break;
        }
        settle(repo, &mut done)?;
    }
    let _ = std::fs::remove_file(&under_way);
    Ok(done)
}

/// Keeps both versions of every conflict of the merge in progress and commits it.
fn settle(repo: &Repository, done: &mut SyncedKeepingBoth) -> SyncResult<()> {
    let Some(merge) = repo.merges().merge_state()? else {
        return Ok(());
    };
    // Killed while writing the working tree: resolving would refuse it (and
    // every later sync with it); the pass's `sync_all` undoes and redoes it.
    if merge.phase == MergePhase::Applying {
        return Ok(());
    }
    // Killed after resolving and before committing: nothing left to resolve.
    let kept = match merge.conflicts.is_empty() {
        true => Vec::new(),
        false => repo
            .merges()
            .resolve_conflicts(&[Vec::new()], Resolution::Both)?,
    };
    let label = merge.label;
    repo.commit_staged(&format!(
        "Merge {label}, keeping both versions of {} changed on two replicas",
        files(kept.len())
    ))?;
    repo.merges().note_kept_both(&kept)?;
    done.kept_both.extend(kept);
    Ok(())
}

fn files(n: usize) -> String {
    match n {
        1 => "1 file".into(),
        n => format!("{n} files"),
    }
}
