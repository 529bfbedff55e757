//! A browser upload into a repository kept in a bucket (`dmv serve` in
//! front of it): the rules of `serving::upload`, with the commit made in a
//! replica of the bucket's history on the server and landed in the bucket
//! as a push relayed to it lands (`serving::relay`'s checks).

use dmv_repo::store::ObjectId;
use dmv_repo::{now_ns, LocationLog, Repository, Silent, Stamp};

use crate::operations::receive::fetch_objects;
use crate::operations::send::{find_missing, upload};
use crate::protocol::WireRefUpdate;
use crate::serving::audit::record_in_bucket;
use crate::serving::relay::{
    refuse_changes_to_others_locks, refuse_unholdable_paths, refuse_unreviewed_in_bucket,
    refuse_writes_outside_grant, run_hook_on_bucket,
};
use crate::serving::upload::{
    checked, commit_on, kept_moving, store_files, unchanged, upload_event, UploadCommit, Uploaded,
    TRIES,
};
use crate::transport::bucket_remote::BucketRemote;
use crate::transport::remote::Remote;
use crate::{Caller, SyncError, SyncResult};

/// [`commit_uploaded`](crate::commit_uploaded) for a repository kept in a bucket: the commit is
/// made in `view`, a replica of the bucket's history on the server (its
/// branches need not be current: the bucket's are read here), sent to the
/// bucket, and the branch moved there under the checks a push relayed to
/// the bucket meets (nobody else's lock changed, no path a checkout could
/// not hold) as one announced move. `view` is no replica of the
/// repository's: it claims no copy, and the bucket's own location log
/// records the new files' data.
pub fn commit_uploaded_to_bucket(
    view: &Repository,
    bucket: &mut BucketRemote,
    caller: &Caller,
    up: &UploadCommit<'_>,
) -> SyncResult<Uploaded> {
    let (branch, folder) = checked(caller, up)?;
    let _gc = view.store.hold_off_gc()?;
    let entries = store_files(view, up)?;
    let have = |view: &Repository, bucket: &mut BucketRemote, id: ObjectId| -> SyncResult<()> {
        if !view.store.contains(&id)? {
            fetch_objects(view, bucket, &[id], &Silent, None, || Ok(()))?;
        }
        Ok(())
    };
    if let Some(seen) = up.seen {
        have(view, bucket, seen)?;
    }
    let seen_tree = up
        .seen
        .map(|c| view.commit(&c).map(|c| c.tree))
        .transpose()?;
    for _ in 0..TRIES {
        let tips: Vec<(String, ObjectId)> = bucket.list_refs()?.refs;
        let head = tips.iter().find(|(n, _)| *n == branch).map(|(_, id)| *id);
        if let Some(head) = head {
            have(view, bucket, head)?;
        }
        let Some(id) = commit_on(view, head, seen_tree, up, &folder, &entries)? else {
            return Ok(unchanged(head));
        };
        let tips: Vec<ObjectId> = tips.into_iter().map(|(_, id)| id).collect();
        let missing = find_missing(view, bucket, &[id], &tips)?;
        upload(view, bucket, &missing, &Silent)?;
        let who = caller.user.as_deref().unwrap_or("a web upload").to_string();
        let updates = vec![WireRefUpdate {
            name: branch.clone(),
            old: head,
            new: Some(id),
        }];
        // Before the move is announced: a slow hook holds up only this upload.
        run_hook_on_bucket(bucket, caller, &updates)?;
        let moved = bucket.moving_refs(|bucket| {
            refuse_unholdable_paths(bucket, &updates)?;
            refuse_changes_to_others_locks(bucket, caller, &updates)?;
            refuse_writes_outside_grant(bucket, caller, &updates)?;
            refuse_unreviewed_in_bucket(bucket, caller, &updates)?;
            bucket.update_refs(updates.clone(), &who, "upload")
        });
        match moved {
            Ok(()) => {
                let event = upload_event(caller, up, &folder, &branch, head, id);
                record_in_bucket(bucket.bucket(), &caller.events, event);
                record_held_by_bucket(bucket, &missing.files)?;
                return Ok(Uploaded {
                    commit: id,
                    unchanged: false,
                });
            }
            // Another writer moved the branch: commit again on theirs.
            Err(SyncError::Rejected { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(kept_moving(up))
}

/// Records in the bucket's own location log that it holds `files`' data
/// (a push's client records that in its log; the view keeps none).
fn record_held_by_bucket(bucket: &mut BucketRemote, files: &[ObjectId]) -> SyncResult<()> {
    if files.is_empty() {
        return Ok(());
    }
    let (me, _) = bucket.replica()?;
    let stamp = Stamp {
        time_ns: now_ns(),
        present: true,
    };
    let mut log = LocationLog::default();
    for key in files {
        log.records.insert((*key, me), stamp);
    }
    bucket.merge_locations(me, &log)
}
