//! `pull` (fetch, then merge the remote's branch into the current one) and
//! `sync` (pull, then push what the merge made), the call a watcher or a
//! "sync now" button makes.

use dmv_repo::{MergeOutcome, Repository};

use crate::client::Remote;
use crate::fetch::{fetch, Fetched};
use crate::progress::{Phase, Progress};
use crate::push::{current_branch, push, PushOptions, Pushed};
use crate::{SyncError, SyncResult};

/// What a pull did.
#[derive(Debug)]
pub struct Pulled {
    pub fetched: Fetched,
    /// What was merged, as `REMOTE/BRANCH`.
    pub label: String,
    pub merge: MergeOutcome,
}

/// Fetches `remote` (configured as `remote_name`) and merges its `branch`
/// (default: the current branch's name) into the current branch.
pub fn pull(repo: &Repository, remote: &mut dyn Remote, remote_name: &str, branch: Option<&str>, progress: &dyn Progress) -> SyncResult<Pulled> {
    repo.require_worktree()?;
    let branch = match branch {
        Some(b) => b.to_string(),
        None => current_branch(repo)?,
    };
    let fetched = fetch(repo, remote, remote_name, progress)?;
    let theirs =
        repo.refs.get(&format!("refs/remotes/{remote_name}/{branch}"))?.ok_or_else(|| SyncError::NoRemoteBranch { url: remote.url().to_string(), branch: branch.clone() })?;
    let label = format!("{remote_name}/{branch}");
    progress.phase(Phase::Merging);
    let merge = repo.merge(theirs, &label, &|d, t| progress.update(d, t));
    progress.finish();
    Ok(Pulled { fetched, label, merge: merge? })
}

/// What a sync did.
#[derive(Debug)]
pub struct Synced {
    pub pulled: Pulled,
    /// None when the merge stopped on conflicts: nothing was pushed.
    pub pushed: Option<Pushed>,
}

/// Pulls the current branch from `remote`, then, unless the merge left
/// conflicts to settle, pushes it back: both replicas end with one history.
pub fn sync(repo: &Repository, remote: &mut dyn Remote, remote_name: &str, progress: &dyn Progress) -> SyncResult<Synced> {
    let branch = current_branch(repo)?;
    let pulled = pull(repo, remote, remote_name, Some(&branch), progress)?;
    if matches!(pulled.merge, MergeOutcome::Conflicts(_)) {
        return Ok(Synced { pulled, pushed: None });
    }
    let pushed = push(repo, remote, Some(remote_name), &PushOptions { branches: vec![branch], ..Default::default() }, progress)?;
    Ok(Synced { pulled, pushed: Some(pushed) })
}
