//! Syncing with a peer: a replica with a working tree of its own, with no
//! hub between (git-annex's `synced/` branches are the model). A peer's
//! branches are never moved from outside; ours is offered to it as
//! `refs/remotes/OURS/BRANCH`, where OURS is this replica's name, and each
//! side merges what it was offered when it next syncs. Offers are merged
//! before anything else, so a ring of peers each syncing with the next
//! fast-forwards to one history instead of merging merges forever.

use dmv_repo::ref_names::{branch_ref, remote_branch_ref};
use dmv_repo::{MergeOutcome, Phase, Progress, Repository};

use crate::operations::locations::share_locations;
use crate::operations::push::Pushed;
use crate::operations::send::{send_objects, PushRef};
use crate::transport::remote::Remote;
use crate::{SyncError, SyncResult};

/// This replica's name as a peer's refs hold it: its `replica.name` (or
/// user@host:path) with every character a ref name may not hold, or that
/// reads badly in one, made `-`.
pub fn offer_name(repo: &Repository) -> String {
    let name: String = repo
        .copies()
        .replica_name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-');
    match name.is_empty() {
        true => repo
            .copies()
            .replica_id()
            .map(|id| id.to_string())
            .unwrap_or_else(|_| "peer".into()),
        false => name.to_string(),
    }
}

/// Offers the local `branch` to the peer `remote`: sends what it lacks and
/// sets its `refs/remotes/OURS/BRANCH` (compare-and-swap on what it held).
pub fn offer(
    repo: &Repository,
    remote: &mut dyn Remote,
    branch: &str,
    progress: &dyn Progress,
) -> SyncResult<Pushed> {
    let new = repo
        .refs
        .get(&branch_ref(branch))?
        .ok_or_else(|| SyncError::NoLocalBranch {
            branch: branch.to_string(),
        })?;
    let name = remote_branch_ref(offer_name(repo), branch);
    let listed = remote.list_refs()?.refs;
    let old = listed.iter().find(|(n, _)| *n == name).map(|(_, id)| *id);
    let mut pushed = Pushed {
        updated: Vec::new(),
        up_to_date: Vec::new(),
        tags_differing: Vec::new(),
        logs: Vec::new(),
        stats: Default::default(),
        released: Vec::new(),
        release_failed: None,
    };
    if old == Some(new) {
        pushed.up_to_date.push(name);
        share_locations(repo, remote, true)?;
        return Ok(pushed);
    }
    pushed.updated.push(PushRef {
        name,
        expected: old,
        new: Some(new),
    });
    let tips: Vec<_> = listed.iter().map(|(_, id)| *id).collect();
    progress.phase(Phase::Sending);
    let sent = send_objects(repo, remote, &pushed.updated, &tips, progress);
    progress.finish();
    pushed.stats = sent?;
    share_locations(repo, remote, true)?;
    Ok(pushed)
}

/// Merges into the current `branch` what peers offered of it here (see
/// [`Repository::pending_offers`]), one after another; stops at the first merge that
/// leaves conflicts. Returns each merge, by what was merged.
pub fn merge_offers(
    repo: &Repository,
    branch: &str,
    progress: &dyn Progress,
) -> SyncResult<Vec<(String, MergeOutcome)>> {
    let mut merged = Vec::new();
    for offer in repo.pending_offers(branch)? {
        let label = offer.label;
        progress.phase(Phase::Merging);
        let outcome = repo.merges().merge(offer.commit, &label, progress);
        progress.finish();
        let outcome = outcome?;
        let conflicts = matches!(outcome, MergeOutcome::Conflicts(_));
        merged.push((label, outcome));
        if conflicts {
            break;
        }
    }
    Ok(merged)
}
