//! Location tracking across replicas: what a transfer teaches about who
//! holds which file's data, and the exchange of location logs with a remote
//! (they merge without conflict, so both directions are a plain merge).

use dmv_repo::store::ObjectId;
use dmv_repo::{now_ns, ReplicaId, Repository, Stamp};

use crate::client::Remote;
use crate::SyncResult;

/// The remote's replica id, remembered with its URL (which names a configured remote).
pub fn remote_replica(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<ReplicaId> {
    let (id, _) = remote.replica()?;
    repo.remember_replica(id, remote.url())?;
    Ok(id)
}

/// Records that the remote holds these files' data (it sent or received
/// them), and this replica too when `here`.
pub(crate) fn record_transfer(repo: &Repository, remote: ReplicaId, files: &[ObjectId], here: bool) -> SyncResult<()> {
    if files.is_empty() {
        return Ok(());
    }
    let me = repo.replica_id()?;
    let stamp = Stamp { time_ns: now_ns(), present: true };
    repo.update_locations(|log| {
        // Whoever this log reaches learns what this replica is called.
        repo.with_my_name(log);
        for f in files {
            log.record(*f, remote, stamp);
            if here {
                log.record(*f, me, stamp);
            }
        }
    })?;
    Ok(())
}

/// Takes in the remote's location log, and with `send_back` gives it ours
/// (everything both know). Returns how many records changed here.
pub fn exchange_locations(repo: &Repository, remote: &mut dyn Remote, send_back: bool) -> SyncResult<usize> {
    let theirs = remote.get_locations()?;
    // A copy of ours only to send it: at a million files each copy is hundreds of MB.
    let (changed, ours) = repo.update_locations(|log| (log.merge(&theirs), send_back.then(|| log.clone())))?;
    drop(theirs);
    if let Some(ours) = ours {
        remote.put_locations(repo.replica_id()?, &ours)?;
    }
    Ok(changed)
}
