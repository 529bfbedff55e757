//! `pull` (fetch, then merge the remote's branch into the current one, or
//! with `pull_rebase` put the branch's own commits on top of it) and
//! `sync` (pull, then push what the merge made), the call a watcher or a
//! "sync now" button makes.

use dmv_repo::store::ObjectId;
use dmv_repo::{
    KeepMessages, Mended, MergeOutcome, MergePhase, Phase, Progress, RebaseOutcome, Repository,
};

use crate::operations::fetch::{fetch, Fetched};
use crate::operations::named_remotes::remotes_in_order;
use crate::operations::peers::{merge_offers, offer};
use crate::operations::push::{current_branch, push, PushOptions, Pushed};
use crate::operations::reach::{Reach, ReachBook};
use crate::transport::remote::Remote;
use crate::AddressError;
use crate::{Refusal, SyncError, SyncResult};
use dmv_repo::ref_names::{branch_ref, remote_branch_ref};

/// What a pull did.
#[derive(Debug)]
pub struct Pulled {
    /// What the fetch before the merge did.
    pub fetched: Fetched,
    /// What was merged, as `REMOTE/BRANCH`.
    pub label: String,
    /// How the merge ended: up to date, a fast-forward, a merge commit, or
    /// conflicts (then a merge is in progress).
    pub merge: MergeOutcome,
}

/// Fetches `remote` (configured as `remote_name`) and merges its `branch`
/// (default: the current branch's name) into the current branch.
pub fn pull(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    branch: Option<&str>,
    progress: &dyn Progress,
) -> SyncResult<Pulled> {
    pull_with(repo, remote, remote_name, branch, false, progress)
}

/// [`pull`]; with `ff_only`, only when the current branch can move to the
/// remote one without a merge commit (git's `pull --ff-only`): otherwise
/// refused once fetched, with nothing merged.
pub fn pull_with(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    branch: Option<&str>,
    ff_only: bool,
    progress: &dyn Progress,
) -> SyncResult<Pulled> {
    let (fetched, theirs, label) = fetch_branch(repo, remote, remote_name, branch, progress)?;
    if ff_only {
        if let Some(ours) = repo.head_commit()? {
            if !repo.history().is_ancestor(&ours, &theirs)?
                && !repo.history().is_ancestor(&theirs, &ours)?
            {
                return Err(SyncError::Refused(Refusal::NotFastForward { label }));
            }
        }
    }
    fetch_what_a_merge_reads(repo, theirs, progress)?;
    progress.phase(Phase::Merging);
    let merge = repo.merges().merge(theirs, &label, progress);
    progress.finish();
    Ok(Pulled {
        fetched,
        label,
        merge: merge?,
    })
}

/// `pull --rebase`: fetches `remote` and puts the current branch's own
/// commits on top of the remote's `branch` (default: the current branch's
/// name), as `rebase REMOTE/BRANCH` would. Returns the fetch, the label
/// and how the rebase ended (stopped on conflicts: a rebase is in progress).
pub fn pull_rebase(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    branch: Option<&str>,
    progress: &dyn Progress,
) -> SyncResult<(Fetched, String, RebaseOutcome)> {
    let (fetched, theirs, label) = fetch_branch(repo, remote, remote_name, branch, progress)?;
    progress.phase(Phase::Merging);
    let plan = repo.merges().rebase_plan(theirs)?;
    fetch_what_a_rebase_reads(repo, theirs, &plan, progress)?;
    let rebased = repo.merges().rebase(theirs, plan, &KeepMessages, progress);
    progress.finish();
    Ok((fetched, label, rebased?))
}

/// What both ways of pulling start with: the fetch, then where the remote's
/// `branch` (default: the current branch's name) is now, and its label `REMOTE/BRANCH`.
fn fetch_branch(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    branch: Option<&str>,
    progress: &dyn Progress,
) -> SyncResult<(Fetched, ObjectId, String)> {
    repo.require_worktree()?;
    let branch = match branch {
        Some(b) => b.to_string(),
        None => current_branch(repo)?,
    };
    let fetched = fetch(repo, remote, remote_name, progress)?;
    let theirs = repo
        .refs
        .get(&remote_branch_ref(remote_name, &branch))?
        .ok_or_else(|| SyncError::NoRemoteBranch {
            url: remote.url().to_string(),
            branch: branch.clone(),
        })?;
    Ok((fetched, theirs, format!("{remote_name}/{branch}")))
}

/// What a sync did.
#[derive(Debug)]
pub struct Synced {
    /// A merge an earlier sync left cut short, finished or undone first.
    pub mended: Option<Mended>,
    /// What peers offered here, merged first (see [`merge_offers`]).
    pub offers: Vec<(String, MergeOutcome)>,
    /// What the pull did (None when merging an offer left conflicts: nothing more was done).
    pub pulled: Option<Pulled>,
    /// None when a merge stopped on conflicts: nothing was pushed.
    pub pushed: Option<Pushed>,
}

/// In a partial replica, the data a merge of `theirs` into HEAD reads to
/// merge text files line by line (the three sides of each file both
/// changed) is fetched first: without it the file would conflict where a
/// full replica merges it cleanly.
pub(crate) fn fetch_what_a_merge_reads(
    repo: &Repository,
    theirs: ObjectId,
    progress: &dyn Progress,
) -> SyncResult<()> {
    if !repo.is_partial() || repo.config.bare {
        return Ok(());
    }
    let Some(ours) = repo.head_commit()? else {
        return Ok(());
    };
    let base = repo.history().merge_base(ours, theirs)?;
    // A fast-forward, or nothing to merge: no file is merged.
    if base == Some(ours) || base == Some(theirs) {
        return Ok(());
    }
    fetch_what_a_pick_reads(repo, base, theirs, progress)
}

/// [`fetch_what_a_merge_reads`] for a three-way merge onto HEAD from a
/// given `base`: a cherry-pick's (its parent, the commit as `theirs`).
pub(crate) fn fetch_what_a_pick_reads(
    repo: &Repository,
    base: Option<ObjectId>,
    theirs: ObjectId,
    progress: &dyn Progress,
) -> SyncResult<()> {
    if !repo.is_partial() || repo.config.bare {
        return Ok(());
    }
    let Some(ours) = repo.head_commit()? else {
        return Ok(());
    };
    let versions = repo.merges().versions_a_merge_reads(base, ours, theirs)?;
    crate::operations::partial::fetch_versions(repo, versions, progress)?;
    Ok(())
}

/// [`fetch_what_a_merge_reads`] for a rebase onto `onto` following `todo`
/// (see [`Merges::versions_a_rebase_reads`](dmv_repo::Merges::versions_a_rebase_reads)).
pub(crate) fn fetch_what_a_rebase_reads(
    repo: &Repository,
    onto: ObjectId,
    todo: &[dmv_repo::RebaseStep],
    progress: &dyn Progress,
) -> SyncResult<()> {
    if !repo.is_partial() || repo.config.bare {
        return Ok(());
    }
    crate::operations::partial::fetch_versions(
        repo,
        repo.merges().versions_a_rebase_reads(onto, todo)?,
        progress,
    )?;
    Ok(())
}

/// What a sync does first: a merge or rebase an earlier command left cut
/// short is finished or undone (see [`Merges::mend_cut_short`](dmv_repo::Merges::mend_cut_short)); a
/// rebase still waiting for its person (a conflict) stops the sync, which
/// would otherwise merge into the middle of it.
fn mend_cut_short(repo: &Repository) -> SyncResult<Option<Mended>> {
    let mended = repo.merges().mend_cut_short()?;
    if repo.merges().rebase_state()?.is_some() {
        return Err(dmv_repo::RepoError::RebaseInProgress.into());
    }
    Ok(mended)
}

/// Connects to the remote `name` to push; one that does not answer is
/// noted in `skipped` (None), and the sync goes on with the others.
fn connect_or_skip(
    repo: &Repository,
    name: &str,
    skipped: &mut Vec<(String, String)>,
) -> SyncResult<Option<Box<dyn Remote>>> {
    match crate::operations::named_remotes::find_remote(repo, name)?.connect_to_push(repo) {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            skipped.push((name.to_string(), e.to_string()));
            Ok(None)
        }
    }
}

fn stopped(merges: &[(String, MergeOutcome)]) -> bool {
    merges
        .iter()
        .any(|(_, m)| matches!(m, MergeOutcome::Conflicts(_)))
}

/// Merges what peers offered, pulls the current branch from `remote`,
/// then, unless a merge left conflicts to settle, sends it back: pushed to
/// a bare remote, offered to a peer (which merges it when it next syncs).
/// Both replicas end with one history.
pub fn sync(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    progress: &dyn Progress,
) -> SyncResult<Synced> {
    let mended = mend_cut_short(repo)?;
    let branch = current_branch(repo)?;
    let offers = merge_offers(repo, &branch, progress)?;
    if stopped(&offers) {
        return Ok(Synced {
            mended,
            offers,
            pulled: None,
            pushed: None,
        });
    }
    let pulled = pull(repo, remote, remote_name, Some(&branch), progress)?;
    if matches!(pulled.merge, MergeOutcome::Conflicts(_)) {
        return Ok(Synced {
            mended,
            offers,
            pulled: Some(pulled),
            pushed: None,
        });
    }
    let pushed = send_back(repo, remote, remote_name, &branch, progress)?;
    Ok(Synced {
        mended,
        offers,
        pulled: Some(pulled),
        pushed: Some(pushed),
    })
}

/// The current `branch` to `remote`: pushed to a bare one, offered to a peer.
fn send_back(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    branch: &str,
    progress: &dyn Progress,
) -> SyncResult<Pushed> {
    match remote.bare() {
        true => push(
            repo,
            remote,
            Some(remote_name),
            &PushOptions {
                branches: vec![branch.to_string()],
                ..Default::default()
            },
            progress,
        ),
        false => offer(repo, remote, branch, progress),
    }
}

/// What a sync with every remote did.
#[derive(Debug, Default)]
pub struct SyncedAll {
    /// A merge an earlier sync left cut short, finished or undone first.
    pub mended: Option<Mended>,
    /// What peers offered here, merged first (see [`merge_offers`]).
    pub offers: Vec<(String, MergeOutcome)>,
    /// Per remote that answered: what its pull did.
    pub pulled: Vec<(String, Pulled)>,
    /// Per remote pushed to.
    pub pushed: Vec<(String, Pushed)>,
    /// Remotes that did not answer, or refused the push, and why.
    pub skipped: Vec<(String, String)>,
    /// A merge stopped on conflicts (from this remote): nothing was pushed.
    pub stopped_at: Option<String>,
    /// A merge a person started waits for them to settle its conflicts
    /// (its label): nothing was merged; what was committed before it was
    /// sent, and every remote fetched (`fetched`).
    pub merge_waits: Option<String>,
    /// While a merge waits: per remote fetched, what the fetch did.
    pub fetched: Vec<(String, Fetched)>,
}

/// What a person with several devices wants from one command: merge what
/// peers offered, fetch from every configured remote that answers and
/// merge each (a conflict stops it, before anything is sent), then push the
/// current branch to every bare remote that takes it and offer it to every
/// peer. Location logs travel both ways with the transfers,
/// and each fetch brings the data the replica's slice asks for.
pub fn sync_all(repo: &Repository, progress: &dyn Progress) -> SyncResult<SyncedAll> {
    let mended = mend_cut_short(repo)?;
    let branch = current_branch(repo)?;
    if let Some(merge) = repo
        .merges()
        .merge_state()?
        .filter(|m| m.phase == MergePhase::Resolving && !m.conflicts.is_empty())
    {
        let waiting = SyncedAll {
            mended,
            merge_waits: Some(merge.label),
            ..Default::default()
        };
        return fetch_and_send(repo, &branch, waiting, progress);
    }
    let mut done = SyncedAll {
        mended,
        offers: merge_offers(repo, &branch, progress)?,
        ..Default::default()
    };
    if let Some((label, _)) = done
        .offers
        .iter()
        .find(|(_, m)| matches!(m, MergeOutcome::Conflicts(_)))
    {
        done.stopped_at = Some(label.clone());
        return Ok(done);
    }
    let mut names = remotes_in_order(repo);
    // A replica only peers sync with has offers to merge and nowhere to send.
    if names.is_empty() && done.offers.is_empty() {
        return Err(SyncError::Address(AddressError::NeedsNamedRemote {
            what: "sync",
        }));
    }
    // Nearest first, the one that stalled last time last: its wait comes after the others' work.
    let book = ReachBook::load(repo);
    names.sort_by_key(|n| {
        repo.config
            .remotes
            .get(n)
            .map_or(Reach::Unknown, |c| book.class(&c.url))
    });
    let mut reached = Vec::new();
    for name in names {
        let Some(mut connection) = connect_or_skip(repo, &name, &mut done.skipped)? else {
            continue;
        };
        let has_branch = match connection.list_refs() {
            Ok(listed) => listed.refs.iter().any(|(r, _)| *r == branch_ref(&branch)),
            Err(e) if e.is_remote_failure() => {
                done.skipped.push((name, e.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        };
        if has_branch {
            let pulled = match pull(repo, connection.as_mut(), &name, Some(&branch), progress) {
                Ok(pulled) => pulled,
                // Nothing was merged: the next remote is still worth a try.
                Err(e) if e.is_remote_failure() => {
                    done.skipped.push((name, e.to_string()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let conflicts = matches!(pulled.merge, MergeOutcome::Conflicts(_));
            done.pulled.push((name.clone(), pulled));
            if conflicts {
                done.stopped_at = Some(name);
                return Ok(done);
            }
        }
        reached.push((name, connection));
    }
    for (name, mut connection) in reached {
        match send_back(repo, connection.as_mut(), &name, &branch, progress) {
            Ok(pushed) => done.pushed.push((name, pushed)),
            Err(e @ (SyncError::NotFastForward { .. } | SyncError::Rejected { .. })) => {
                return Err(e)
            }
            Err(e) => done.skipped.push((name, e.to_string())),
        }
    }
    Ok(done)
}

/// While a person's merge waits for them: every remote is fetched (its
/// news kept in the remote-tracking branches, merged once the person's
/// merge is done) and sent what was committed before the merge began, so
/// a replica with a conflict to settle still passes on its earlier work
/// and hears of others'. Nothing is merged; a remote that moved on is
/// skipped, not an error, until a merge can follow.
fn fetch_and_send(
    repo: &Repository,
    branch: &str,
    mut done: SyncedAll,
    progress: &dyn Progress,
) -> SyncResult<SyncedAll> {
    let names = remotes_in_order(repo);
    if names.is_empty() {
        return Err(SyncError::Address(AddressError::NeedsNamedRemote {
            what: "sync",
        }));
    }
    for name in names {
        let Some(mut connection) = connect_or_skip(repo, &name, &mut done.skipped)? else {
            continue;
        };
        match fetch(repo, connection.as_mut(), &name, progress) {
            Ok(fetched) => done.fetched.push((name.clone(), fetched)),
            Err(e) if e.is_remote_failure() => {
                done.skipped.push((name, e.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        }
        match send_back(repo, connection.as_mut(), &name, branch, progress) {
            Ok(pushed) => done.pushed.push((name, pushed)),
            Err(e) => done.skipped.push((name, e.to_string())),
        }
    }
    Ok(done)
}
