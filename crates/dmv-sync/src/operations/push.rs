//! `push`: the rules that keep a push from losing anyone's work, then the
//! transfer. A branch moves only forward unless forced; a forced push
//! replaces the remote branch only if it is still where our last fetch saw
//! it (force-with-lease); the remote compares-and-swaps every ref, so a
//! push racing another fails whole instead of dropping the other's commits.

use std::collections::BTreeMap;

use dmv_repo::store::ObjectId;
use dmv_repo::{Head, Phase, Progress, RefUpdate, RepoError, Repository, Upstream};

use crate::operations::locations::share_locations;
use crate::operations::path_locks::release_landed_locks;
use crate::operations::send::{send_objects, PushRef};
use crate::operations::union_logs::push_union_logs;
use crate::protocol::objects::TransferStats;
use crate::protocol::WireRefUpdate;
use crate::transport::remote::Remote;
use crate::{SyncError, SyncResult};
use dmv_repo::ref_names::{branch_ref, remote_branch_ref, BRANCHES, TAGS};

/// What to push, and how ([`push`](crate::push)).
#[derive(Clone, Debug, Default)]
pub struct PushOptions {
    /// What to push (empty: the current branch): a branch name, pushed to
    /// the remote branch of that name, a tag's name (when no branch has it),
    /// or git's `SRC:DST`, any revision pushed to remote branch DST
    /// (`HEAD:refs/heads/review`).
    pub branches: Vec<String>,
    /// Replace remote branches even if that drops commits, but only if each
    /// is still where it was at the last fetch.
    pub force: bool,
    /// Also push tags the remote does not have.
    pub tags: bool,
    /// Keep the locks this user holds on paths the pushed commits change
    /// (by default, and unless `lock.releaseOnPush` is false, a push gives
    /// them back once the change has landed).
    pub keep_locks: bool,
}

/// What a push did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Pushed {
    /// The refs set on the remote (empty: everything was up to date).
    pub updated: Vec<PushRef>,
    /// Branches the remote already had at our value.
    pub up_to_date: Vec<String>,
    /// Tags that differ on the remote and were left alone.
    pub tags_differing: Vec<String>,
    /// The union logs (the review log) the remote took entries of.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// What was sent.
    pub stats: TransferStats,
    /// Paths whose locks this user held and gave back, their change landed.
    pub released: Vec<String>,
    /// Why giving those locks back failed (the push itself landed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_failed: Option<String>,
}

/// The branch HEAD is on, short (`main`).
pub fn current_branch(repo: &Repository) -> SyncResult<String> {
    match repo.head()? {
        Head::Branch(b) => Ok(b.strip_prefix(BRANCHES).unwrap_or(&b).to_string()),
        Head::Detached(_) => Err(SyncError::DetachedHead),
    }
}

/// `push -u`: makes each local branch of the pushed `specs` (`BRANCH` or
/// `SRC:DST`) follow the remote branch it was pushed to, as `pull` and
/// `branch -vv` then take it. Returns what was set, by local branch.
pub fn follow_pushed(
    repo: &mut Repository,
    remote_name: &str,
    specs: &[String],
) -> SyncResult<Vec<(String, Upstream)>> {
    let mut set = Vec::new();
    for spec in specs {
        let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
        let (src, dst) = (
            src.strip_prefix(BRANCHES).unwrap_or(src),
            dst.strip_prefix(BRANCHES).unwrap_or(dst),
        );
        // Only a local branch can follow one.
        if repo.refs.get(&branch_ref(src))?.is_some() {
            set.push((
                src.to_string(),
                Upstream {
                    remote: remote_name.to_string(),
                    branch: dst.to_string(),
                },
            ));
        }
    }
    repo.update_config(|cfg| {
        for (branch, up) in &set {
            cfg.upstreams.insert(branch.clone(), up.clone());
        }
        Ok::<_, RepoError>(())
    })?;
    Ok(set)
}

/// Pushes to `remote`; `remote_name` (if it is a configured remote) gives
/// the lease for a forced push and has its remote-tracking branches moved.
pub fn push(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: Option<&str>,
    options: &PushOptions,
    progress: &dyn Progress,
) -> SyncResult<Pushed> {
    let branches = if options.branches.is_empty() {
        vec![current_branch(repo)?]
    } else {
        options.branches.clone()
    };
    let remote_refs: BTreeMap<String, ObjectId> = remote.list_refs()?.refs.into_iter().collect();
    let mut pushed = Pushed {
        updated: Vec::new(),
        up_to_date: Vec::new(),
        tags_differing: Vec::new(),
        logs: Vec::new(),
        stats: TransferStats::default(),
        released: Vec::new(),
        release_failed: None,
    };
    for spec in &branches {
        if let Some((tag, id)) = named_tag(repo, spec)? {
            match remote_refs.get(&tag) {
                None => pushed.updated.push(PushRef {
                    name: tag,
                    expected: None,
                    new: Some(id),
                }),
                Some(theirs) if *theirs != id => pushed.tags_differing.push(tag),
                Some(_) => pushed.up_to_date.push(spec.clone()),
            }
            continue;
        }
        let (b, new) = resolve_refspec(repo, spec)?;
        let b = b.as_str();
        let name = branch_ref(b);
        let old = remote_refs.get(&name).copied();
        if old == Some(new) {
            pushed.up_to_date.push(b.to_string());
            continue;
        }
        check_branch_move(repo, b, old, new, remote_name, options.force)?;
        pushed.updated.push(PushRef {
            name,
            expected: old,
            new: Some(new),
        });
    }
    if options.tags {
        for (tag, id) in repo.refs.list(TAGS)? {
            match remote_refs.get(&tag) {
                None => pushed.updated.push(PushRef {
                    name: tag,
                    expected: None,
                    new: Some(id),
                }),
                Some(theirs) if *theirs != id => pushed.tags_differing.push(tag),
                Some(_) => {}
            }
        }
    }
    pushed.logs = push_union_logs(repo, remote, &remote_refs, progress)?;
    if pushed.updated.is_empty() {
        share_locations(repo, remote, true)?;
        return Ok(pushed);
    }
    let tips: Vec<ObjectId> = remote_refs.values().copied().collect();
    crate::operations::path_locks::refuse_push_over_locks(repo, remote, &pushed.updated, &tips)?;
    progress.phase(Phase::Sending);
    let sent = send_objects(repo, remote, &pushed.updated, &tips, progress);
    progress.finish();
    pushed.stats = sent?;
    if let Some(r) = remote_name {
        let tracking: Vec<RefUpdate> = pushed
            .updated
            .iter()
            .filter_map(|u| {
                Some(RefUpdate {
                    name: remote_branch_ref(r, u.name.strip_prefix(BRANCHES)?),
                    expected: None,
                    new: u.new,
                })
            })
            .collect();
        if !tracking.is_empty() {
            repo.update_refs(&tracking, &repo.who(), &format!("push {r}"))?;
        }
    }
    share_locations(repo, remote, true)?;
    if !options.keep_locks && repo.config.releases_locks_on_push() {
        match release_landed_locks(repo, remote, &pushed.updated, &tips) {
            Ok(released) => pushed.released = released,
            Err(e) => pushed.release_failed = Some(e.to_string()),
        }
    }
    Ok(pushed)
}

/// `push --delete BRANCH…` (or `push REMOTE :BRANCH`): removes the remote's
/// branches, each only if it is still where this listing found it, and the
/// matching remote-tracking branches here. Returns each branch's short name
/// and where it was.
pub fn delete_remote_branches(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_name: Option<&str>,
    branches: &[String],
) -> SyncResult<Vec<(String, ObjectId)>> {
    let remote_refs: BTreeMap<String, ObjectId> = remote.list_refs()?.refs.into_iter().collect();
    let mut deleted = Vec::new();
    for b in branches {
        let b = b.strip_prefix(BRANCHES).unwrap_or(b);
        let old =
            remote_refs
                .get(&branch_ref(b))
                .copied()
                .ok_or_else(|| SyncError::NoRemoteBranch {
                    url: remote.url().to_string(),
                    branch: b.to_string(),
                })?;
        deleted.push((b.to_string(), old));
    }
    let updates = deleted
        .iter()
        .map(|(b, old)| WireRefUpdate {
            name: branch_ref(b),
            old: Some(*old),
            new: None,
        })
        .collect();
    remote.update_refs(updates, &repo.who(), "push: delete")?;
    if let Some(r) = remote_name {
        for (b, _) in &deleted {
            let tracking = remote_branch_ref(r, b);
            if let Some(id) = repo.refs.get(&tracking)? {
                repo.update_refs(
                    &[RefUpdate {
                        name: tracking,
                        expected: Some(Some(id)),
                        new: None,
                    }],
                    &repo.who(),
                    &format!("push {r}: delete"),
                )?;
            }
        }
    }
    Ok(deleted)
}

/// A push's `SRC:DST` or `BRANCH`: the remote branch's short name and the commit it is to hold.
pub fn resolve_refspec(repo: &Repository, spec: &str) -> SyncResult<(String, ObjectId)> {
    let short = |b: &str| b.strip_prefix(BRANCHES).unwrap_or(b).to_string();
    match spec.split_once(':') {
        Some((src, dst)) => {
            let dst = short(dst);
            if src.is_empty() || dst.is_empty() || dst.starts_with("refs/") {
                return Err(SyncError::BadRefspec {
                    spec: spec.to_string(),
                });
            }
            dmv_repo::validate_ref_name(&branch_ref(&dst)).map_err(|_| SyncError::BadRefspec {
                spec: spec.to_string(),
            })?;
            Ok((dst, repo.resolve(src)?))
        }
        None => {
            let b = short(spec);
            let new = repo
                .refs
                .get(&branch_ref(&b))?
                .ok_or_else(|| SyncError::NoLocalBranch { branch: b.clone() })?;
            Ok((b, new))
        }
    }
}

/// `push REMOTE v1` of a tag (no branch is called `v1`, or it is written
/// `refs/tags/v1`): the tag's full name and value, made on the remote
/// only where it has no tag of that name, as `--tags` does.
fn named_tag(repo: &Repository, spec: &str) -> SyncResult<Option<(String, ObjectId)>> {
    if spec.contains(':')
        || (!spec.starts_with(TAGS) && repo.refs.get(&branch_ref(spec))?.is_some())
    {
        return Ok(None);
    }
    let full = if spec.starts_with(TAGS) {
        spec.to_string()
    } else {
        dmv_repo::ref_names::tag_ref(spec)
    };
    Ok(repo.refs.get(&full)?.map(|id| (full, id)))
}

/// Whether remote branch `branch` may move from `old` to `new`.
fn check_branch_move(
    repo: &Repository,
    branch: &str,
    old: Option<ObjectId>,
    new: ObjectId,
    remote_name: Option<&str>,
    force: bool,
) -> SyncResult<()> {
    if force {
        let lease = match remote_name {
            Some(r) => repo.refs.get(&remote_branch_ref(r, branch))?,
            None => old,
        };
        if lease != old {
            return Err(SyncError::LeaseBroken {
                branch: branch.to_string(),
            });
        }
        return Ok(());
    }
    match old {
        Some(old) if !repo.store.contains(&old)? || !repo.history().is_ancestor(&old, &new)? => {
            Err(SyncError::NotFastForward {
                branch: branch.to_string(),
            })
        }
        _ => Ok(()),
    }
}
