//! `fetch`: a remote's branches into `refs/remotes/REMOTE/*`, its tags into
//! `refs/tags/*`, with the objects they need.

use dmv_repo::store::ObjectId;
use dmv_repo::{EarlyCheckout, Phase, Progress, RefUpdate, Repository};

use crate::operations::locations::share_locations_after_fetch;
use crate::operations::partial::get_what_the_source_lacked;
use crate::operations::receive::fetch_objects;
use crate::operations::union_logs::fetch_union_logs;
use crate::protocol::objects::TransferStats;
use crate::transport::remote::{Remote, RemoteRefs};
use crate::SyncResult;
use dmv_repo::ref_names::{branch_ref, remote_branch_ref, BRANCHES, TAGS};

/// A remote ref as a fetch saw it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FetchedRef {
    /// The ref's name on the remote, e.g. `refs/heads/main`.
    pub remote_name: String,
    /// The local ref it moves: `refs/remotes/REMOTE/BRANCH` for a branch,
    /// the same name for a tag.
    pub local_name: String,
    /// What the local ref held before (`None`: it is new).
    pub old: Option<ObjectId>,
    /// What it holds now: the remote's commit.
    pub new: ObjectId,
}

/// What a fetch did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Fetched {
    /// The branch the remote's HEAD names.
    pub remote_head: Option<String>,
    /// The local refs that moved or were created.
    pub updated: Vec<FetchedRef>,
    /// The union logs (the review log) that gained the remote's entries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// What was received.
    pub stats: TransferStats,
    /// Files whose data the source (a partial replica) lacked and no other remote gave.
    #[serde(skip)]
    pub lacking: Vec<ObjectId>,
    /// Every branch and tag the remote has, by full name (what `--prune` keeps).
    #[serde(skip)]
    pub remote_refs: Vec<String>,
}

/// Fetches `remote` (called `remote_name` in `refs/remotes/`). An existing
/// tag that differs is kept, not clobbered. Refs move only once every object
/// they reach is stored.
///
/// Data the source lacks (a partial replica) is fetched from the other
/// remotes; what none gives stops the fetch, once the refs have moved, in
/// one line naming the files and the replicas known to hold them.
pub fn fetch(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    progress: &dyn Progress,
) -> SyncResult<Fetched> {
    progress.phase(Phase::Receiving);
    let result = fetch_refs(repo, remote, remote_name, progress, None);
    progress.finish();
    let mut fetched = result?;
    let tips: Vec<ObjectId> = fetched.updated.iter().map(|u| u.new).collect();
    get_what_the_source_lacked(repo, &std::mem::take(&mut fetched.lacking), &tips, progress)?;
    Ok(fetched)
}

/// [`fetch`], with `early` (see [`fetch_objects`]) pointed at the remote's HEAD branch.
pub(crate) fn fetch_refs(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    progress: &dyn Progress,
    early: Option<&mut EarlyCheckout>,
) -> SyncResult<Fetched> {
    let (fetched, received) = fetch_refs_unshared(repo, remote, remote_name, progress, early)?;
    share_locations_after_fetch(repo, remote, &received)?;
    Ok(fetched)
}

/// [`fetch_refs`] but for its last request, the exchange of location
/// logs, left to the caller (a clone runs it while it checks out): with
/// the files whose data arrived, for
/// [`share_locations_after_fetch`].
pub(crate) fn fetch_refs_unshared(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: &str,
    progress: &dyn Progress,
    mut early: Option<&mut EarlyCheckout>,
) -> SyncResult<(Fetched, Vec<ObjectId>)> {
    let RemoteRefs { head, refs } = remote.list_refs()?;
    if let Some(early) = early.as_deref_mut() {
        let default_head = branch_ref("main");
        let head_branch = head.as_deref().unwrap_or(&default_head);
        if let Some((_, tip)) = refs.iter().find(|(name, _)| name == head_branch) {
            early.set_target(*tip);
        }
    }
    let mut updated = Vec::new();
    for (name, id) in &refs {
        let local_name = if let Some(branch) = name.strip_prefix(BRANCHES) {
            remote_branch_ref(remote_name, branch)
        } else if name.starts_with(TAGS) {
            name.clone()
        } else {
            continue;
        };
        let old = repo.refs.get(&local_name)?;
        if old == Some(*id) || (old.is_some() && name.starts_with(TAGS)) {
            continue;
        }
        updated.push(FetchedRef {
            remote_name: name.clone(),
            local_name,
            old,
            new: *id,
        });
    }
    let wants: Vec<ObjectId> = updated.iter().map(|c| c.new).collect();
    let objects = fetch_objects(repo, remote, &wants, progress, early, || {
        let moves: Vec<RefUpdate> = updated
            .iter()
            .map(|c| RefUpdate {
                name: c.local_name.clone(),
                expected: Some(c.old),
                new: Some(c.new),
            })
            .collect();
        if !moves.is_empty() {
            repo.update_refs(&moves, &repo.who(), &format!("fetch {remote_name}"))?;
        }
        Ok(())
    })?;
    let logs = fetch_union_logs(repo, remote, &refs, progress)?;
    repo.tidy_store();
    let fetched = Fetched {
        remote_head: head,
        updated,
        logs,
        stats: objects.stats,
        lacking: objects.lacking,
        remote_refs: refs.into_iter().map(|(name, _)| name).collect(),
    };
    Ok((fetched, objects.files))
}

/// `fetch --prune`: removes the remote-tracking branches of `remote_name`
/// whose branch `fetched` found gone from the remote. Returns their full names.
pub fn prune_remote_branches(
    repo: &Repository,
    remote_name: &str,
    fetched: &Fetched,
) -> SyncResult<Vec<String>> {
    let prefix = remote_branch_ref(remote_name, "");
    let mut gone = Vec::new();
    for (local, id) in repo.refs.list(&prefix)? {
        let branch = local.strip_prefix(&prefix).unwrap_or(&local);
        if !fetched.remote_refs.contains(&branch_ref(branch)) {
            gone.push(RefUpdate {
                name: local,
                expected: Some(Some(id)),
                new: None,
            });
        }
    }
    if !gone.is_empty() {
        repo.update_refs(&gone, &repo.who(), &format!("fetch {remote_name}: pruned"))?;
    }
    Ok(gone.into_iter().map(|u| u.name).collect())
}
