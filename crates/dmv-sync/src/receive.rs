//! Receiving objects: everything reachable from some wanted commits that
//! this store lacks. Metadata is explored first (chunks come back as stubs),
//! then the chunks arrive in large batches, then the metadata is stored
//! children first, so whatever has landed when a transfer stops is complete.

use std::collections::{HashMap, HashSet};

use dmv_repo::store::{ObjectId, ObjectKind, Store, StoredObject, WriteSession};
use dmv_repo::{EarlyCheckout, Repository};

use crate::client::{Received, Remote};
use crate::objects::{children_first, damaged, edges, TransferStats};
use crate::{SyncError, SyncResult};

/// Fetches everything reachable from `wants` that the local store lacks.
/// `then` runs once all of it is durable, while gc is still held off (the
/// caller moves refs there). `early`, if given, sees the explored metadata
/// and then every verified chunk as it arrives (a clone writes its large
/// files that way).
pub fn fetch_objects(
    repo: &Repository,
    client: &mut dyn Remote,
    wants: &[ObjectId],
    progress: &dyn Fn(u64, u64),
    mut early: Option<&mut EarlyCheckout>,
    then: impl FnOnce() -> SyncResult<()>,
) -> SyncResult<TransferStats> {
    let store = &repo.store;
    let mut session = store.begin_write()?;
    let mut missing_tips = Vec::new();
    for w in wants {
        if !session.has(w)? && !missing_tips.contains(w) {
            missing_tips.push(*w);
        }
    }
    if missing_tips.is_empty() {
        then()?;
        return Ok(TransferStats::default());
    }
    let commits = client.walk_commits(missing_tips, local_tips(repo)?)?;
    let found = explore(store, client, commits)?;
    if let Some(early) = early.as_deref_mut() {
        let lookup = |id: &ObjectId| match found.meta.get(id) {
            Some((obj, _)) => obj.content().ok().map(|c| (obj.kind, c.into_owned())),
            None => store.read(id).ok(),
        };
        early.plan(&lookup, &|id: &ObjectId| store.contains(id).unwrap_or(true));
    }
    let mut stats = receive_chunks(&mut session, client, &found.chunks, progress, early)?;
    stats.objects += store_metadata(&mut session, found.meta)?;
    session.finish()?;
    then()?;
    drop(session);
    Ok(stats)
}

/// What the remote tells us we have: every ref and HEAD.
fn local_tips(repo: &Repository) -> SyncResult<Vec<ObjectId>> {
    let mut haves: Vec<ObjectId> = repo.refs.list("")?.into_iter().map(|(_, id)| id).collect();
    haves.extend(repo.head_commit()?);
    haves.sort();
    haves.dedup();
    Ok(haves)
}

/// The new objects, found top-down one level per round trip.
struct Explored {
    /// Metadata objects (kept in memory until their children are stored), with the missing objects each refers to.
    meta: HashMap<ObjectId, (StoredObject, Vec<ObjectId>)>,
    /// Chunks to fetch, with their sizes.
    chunks: Vec<(ObjectId, u64)>,
}

fn explore(store: &Store, client: &mut dyn Remote, commits: Vec<ObjectId>) -> SyncResult<Explored> {
    let mut found = Explored { meta: HashMap::new(), chunks: Vec::new() };
    let mut seen: HashSet<ObjectId> = HashSet::new();
    let mut frontier: Vec<ObjectId> = Vec::new();
    for c in commits {
        if seen.insert(c) && !store.contains(&c)? {
            frontier.push(c);
        }
    }
    while !frontier.is_empty() {
        let mut next = Vec::new();
        client.get(&frontier, false, &mut |got| {
            match got {
                Received::ChunkStub { id, raw_len } => found.chunks.push((id, raw_len as u64)),
                Received::Object(obj) => {
                    let content = obj.content().map_err(|d| damaged(&obj, d))?;
                    let mut kids = Vec::new();
                    for e in edges(&obj.id, obj.kind, &content)? {
                        if store.contains(&e.id)? {
                            continue;
                        }
                        if e.chunk {
                            if seen.insert(e.id) {
                                found.chunks.push((e.id, e.size));
                            }
                        } else {
                            kids.push(e.id);
                            if seen.insert(e.id) {
                                next.push(e.id);
                            }
                        }
                    }
                    drop(content);
                    found.meta.insert(obj.id, (obj, kids));
                }
            }
            Ok(())
        })?;
        frontier = next;
    }
    Ok(found)
}

/// Chunks first, in batches; every sealed pack survives an interruption.
fn receive_chunks(
    session: &mut WriteSession<'_>,
    client: &mut dyn Remote,
    chunks: &[(ObjectId, u64)],
    progress: &dyn Fn(u64, u64),
    mut early: Option<&mut EarlyCheckout>,
) -> SyncResult<TransferStats> {
    let mut stats = TransferStats::default();
    let total: u64 = chunks.iter().map(|(_, s)| s).sum();
    let mut done = 0u64;
    let ids: Vec<ObjectId> = chunks.iter().map(|(id, _)| *id).collect();
    for batch in ids.chunks(client.chunks_per_get()) {
        client.get(batch, true, &mut |got| {
            let Received::Object(obj) = got else {
                return Err(SyncError::Protocol("remote sent a stub where a chunk was asked for".into()));
            };
            if obj.kind != ObjectKind::Chunk {
                return Err(SyncError::Protocol(format!("remote sent a {} where a chunk was expected", obj.kind.name())));
            }
            let content = obj.content().map_err(|d| damaged(&obj, d))?;
            if let Some(early) = early.as_deref_mut() {
                early.chunk(&obj.id, &content);
            }
            drop(content);
            if session.put_verified(&obj)? {
                stats.objects += 1;
                stats.chunk_bytes += obj.raw_len as u64;
            }
            done += obj.raw_len as u64;
            progress(done, total);
            Ok(())
        })?;
    }
    Ok(stats)
}

/// Stores the explored metadata, each object after everything it refers to
/// (checked, so a remote that left something out cannot make a gap).
fn store_metadata(session: &mut WriteSession<'_>, mut meta: HashMap<ObjectId, (StoredObject, Vec<ObjectId>)>) -> SyncResult<u64> {
    let graph: HashMap<ObjectId, Vec<ObjectId>> = meta.iter().map(|(id, (_, kids))| (*id, kids.clone())).collect();
    let mut stored = 0;
    for id in children_first(&graph) {
        let Some((obj, _)) = meta.remove(&id) else { continue };
        let content = obj.content().map_err(|d| damaged(&obj, d))?;
        for child in dmv_repo::store::object::children(&obj.id, obj.kind, &content)? {
            if !session.has(&child)? {
                return Err(SyncError::Protocol(format!("remote did not send {child}, which {} refers to", obj.id)));
            }
        }
        if session.put_stored(&obj)? {
            stored += 1;
        }
    }
    Ok(stored)
}
