//! `fsck --repair`: saves what is whole here (damaged packs and indexes
//! rewritten without their damage, a damaged dirstate or location log
//! rebuilt, data lost from the store but still in the working tree stored
//! again), then fetches every object the history needs that is damaged or
//! missing, by id, from another replica (one named, or each configured one
//! in turn, `origin` first); whatever no replica could give is named, as
//! the files of the commits it was part of.

use std::collections::HashSet;

use dmv_repo::store::object::children_marked;
use dmv_repo::store::{ObjectId, Salvaged};
use dmv_repo::Repository;
use serde::Serialize;

use crate::operations::named_remotes::{find_remote, remotes_in_order};
use crate::transport::remote::{Received, Remote};
use crate::SyncResult;

/// What a repair did, and what it could not.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Repaired {
    /// What the store saved of its damaged packs and indexes.
    pub salvaged: Salvaged,
    /// The dirstate could not be read and was rebuilt from HEAD.
    pub dirstate_rebuilt: bool,
    /// The location log could not be read and starts over.
    pub locations_reset: bool,
    /// Files whose lost data was stored again from the working tree.
    pub restored_from_worktree: u64,
    /// Objects fetched from other replicas, and from which.
    pub fetched: u64,
    /// The remotes they came from, by name.
    pub from: Vec<String>,
    /// Remotes that could not be asked, and why.
    pub unreachable: Vec<String>,
    /// Where what is still lost was used ("PATH in commit ID").
    pub lost: Vec<String>,
}

/// Repairs `repo` (see the module's docs), fetching what it lacks from the
/// remote named `from`, else from each configured remote in turn. A remote
/// that cannot be reached is noted and skipped, unless it is the one named.
pub fn repair(repo: &Repository, from: Option<&str>) -> SyncResult<Repaired> {
    let mut done = Repaired {
        salvaged: repo.store.salvage()?,
        ..Repaired::default()
    };
    done.dirstate_rebuilt = repo.maintenance().rebuild_damaged_dirstate()?;
    done.locations_reset = repo.maintenance().reset_damaged_locations()?;
    done.restored_from_worktree = repo.maintenance().restore_from_worktree()?;
    let mut missing = repo.maintenance().missing_objects()?;
    let names: Vec<String> = match from {
        Some(n) => vec![n.to_string()],
        None => remotes_in_order(repo),
    };
    for name in names {
        if missing.is_empty() {
            break;
        }
        let mut remote = match find_remote(repo, &name).and_then(|r| r.connect()) {
            Ok(r) => r,
            Err(e) if from.is_none() => {
                done.unreachable.push(format!("{name} ({e})"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let got = fetch_by_id(repo, remote.as_mut(), &missing)?;
        if got > 0 {
            done.fetched += got;
            done.from.push(name);
        }
        missing = repo.maintenance().missing_objects()?;
    }
    done.lost = repo.maintenance().describe_lost(&missing)?;
    Ok(done)
}

/// Fetches `ids` and, level by level, whatever they refer to that is not
/// here either, as far as the remote has it. Returns the objects stored.
fn fetch_by_id(repo: &Repository, remote: &mut dyn Remote, ids: &[ObjectId]) -> SyncResult<u64> {
    let mut session = repo.store.begin_write()?;
    let mut asked: HashSet<ObjectId> = HashSet::new();
    let mut want: Vec<ObjectId> = ids.to_vec();
    let mut stored = 0u64;
    while !want.is_empty() {
        want.retain(|id| asked.insert(*id));
        let there = remote.has(&want)?;
        let ask: Vec<ObjectId> = want
            .iter()
            .zip(there)
            .filter(|(_, t)| *t)
            .map(|(id, _)| *id)
            .collect();
        let mut next = Vec::new();
        for batch in ask.chunks(remote.chunks_per_get().max(1)) {
            remote.get(batch, true, &mut |r| {
                let Received::Object(obj) = r else {
                    return Ok(());
                };
                let content = obj.content().map_err(|detail| {
                    crate::SyncError::Protocol(crate::Violation::Damaged { id: obj.id, detail })
                })?;
                for (kid, data) in children_marked(&obj.id, obj.kind, &content)? {
                    // A partial replica lacks file data by design: `get` brings it when wanted.
                    let by_design = data && repo.is_partial();
                    if !by_design && !session.has(&kid)? {
                        next.push(kid);
                    }
                }
                if session.put_verified(&obj)? {
                    stored += 1;
                }
                Ok(())
            })?;
        }
        want = next;
    }
    session.finish()?;
    Ok(stored)
}
