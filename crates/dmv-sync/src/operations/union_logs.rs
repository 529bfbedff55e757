//! The union logs (the review log of comments and reviews) travel with
//! every fetch and push: a fetch joins the remote's entries into ours, a
//! push joins first what the remote holds that we lack, then sends the
//! join, so neither side ever loses an entry and no person is asked to
//! merge anything.

use std::collections::BTreeMap;

use dmv_repo::ref_names::UNION_LOGS;
use dmv_repo::store::ObjectId;
use dmv_repo::{Progress, Repository};

use crate::operations::receive::fetch_objects;
use crate::operations::send::{send_objects, PushRef};
use crate::transport::remote::Remote;
use crate::{Refusal, SyncError, SyncResult};

/// Sends of one log that may lose a race with another pusher, at most.
const PUSH_TRIES: usize = 8;

/// Joins each union log `remote_refs` lists into ours (fetching its new
/// entries). Returns the names of the logs that gained entries here.
pub(crate) fn fetch_union_logs(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_refs: &[(String, ObjectId)],
    progress: &dyn Progress,
) -> SyncResult<Vec<String>> {
    let mut joined = Vec::new();
    for (name, theirs) in remote_refs {
        if !name.starts_with(UNION_LOGS) {
            continue;
        }
        let ours = repo.refs.get(name)?;
        if ours == Some(*theirs) {
            continue;
        }
        fetch_objects(repo, remote, &[*theirs], progress, None, || Ok(()))?;
        if Some(repo.history().join_into_log(name, *theirs)?) != ours {
            joined.push(name.clone());
        }
    }
    Ok(joined)
}

/// Sends each of our union logs the remote lacks entries of, joining its
/// own first where it has entries we lack. Returns the logs moved there.
pub(crate) fn push_union_logs(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_refs: &BTreeMap<String, ObjectId>,
    progress: &dyn Progress,
) -> SyncResult<Vec<String>> {
    let mut sent = Vec::new();
    for (name, _) in repo.refs.list(UNION_LOGS)? {
        let mut theirs = remote_refs.get(&name).copied();
        for attempt in 1..=PUSH_TRIES {
            if let Some(t) = theirs {
                fetch_objects(repo, remote, &[t], progress, None, || Ok(()))?;
                repo.history().join_into_log(&name, t)?;
            }
            let Some(ours) = repo.refs.get(&name)? else {
                break;
            };
            if Some(ours) == theirs {
                break;
            }
            let update = PushRef {
                name: name.clone(),
                expected: theirs,
                new: Some(ours),
            };
            let tips: Vec<ObjectId> = theirs.into_iter().collect();
            match send_objects(repo, remote, &[update], &tips, progress) {
                Ok(_) => {
                    sent.push(name.clone());
                    break;
                }
                // Another replica sent entries meanwhile: take them, join, send again.
                Err(SyncError::Rejected { found, .. }) if attempt < PUSH_TRIES => theirs = found,
                // A hub older than the logs takes branches and tags only:
                // the push goes on without them (they stay here, joined).
                Err(SyncError::Refused(Refusal::NotBranchOrTag { .. })) => break,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(sent)
}

/// Joins the union logs among `remote_refs` (a listing of `remote`'s refs)
/// into ours: [`fetch_union_logs`] for a caller that listed them already (a
/// server's view of a bucket following it).
pub fn join_union_logs(
    repo: &Repository,
    remote: &mut dyn Remote,
    remote_refs: &[(String, ObjectId)],
) -> SyncResult<Vec<String>> {
    fetch_union_logs(repo, remote, remote_refs, &dmv_repo::Silent)
}

/// Sends our union logs to `remote` where it lacks entries, joining its
/// own first ([`push_union_logs`] without the rest of a push: a comment a
/// server wrote from a page into its view of a bucket).
pub fn send_union_logs(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<Vec<String>> {
    let refs: BTreeMap<String, ObjectId> = remote.list_refs()?.refs.into_iter().collect();
    push_union_logs(repo, remote, &refs, &dmv_repo::Silent)
}
