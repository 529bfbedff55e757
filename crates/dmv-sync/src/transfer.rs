//! Moving history between replicas, sending only what the other side lacks.
//!
//! Both directions explore the new objects top-down, one round trip per level
//! (commits, then trees and file lists level by level), pruning every subtree
//! the receiving side already has. That pruning is sound because a store only
//! ever holds an object together with everything it reaches: the receiver
//! stores chunks first and then the other objects children-before-parents
//! (and refuses an upload out of that order), so whatever has landed when a
//! transfer is cut is complete, and the retry skips it.

use std::collections::{HashMap, HashSet};

use dmv_repo::store::object::{decode, EntryKind, FileNode, TreeNode};
use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};
use dmv_repo::{EarlyCheckout, Repository};

use crate::client::{Received, Remote};
use crate::protocol::WireRefUpdate;
use crate::{SyncError, SyncResult};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransferStats {
    /// Objects sent or received.
    pub objects: u64,
    /// Content bytes of the chunks among them.
    pub chunk_bytes: u64,
}

/// A reference from one object to another, as far as the referrer tells.
struct Edge {
    id: ObjectId,
    /// Known to be a chunk (else: a tree, a file node, or a one-chunk file's chunk).
    chunk: bool,
    size: u64,
}

fn edges(id: &ObjectId, kind: ObjectKind, content: &[u8]) -> SyncResult<Vec<Edge>> {
    let other = |id: ObjectId, size: u64| Edge { id, chunk: false, size };
    Ok(match kind {
        ObjectKind::Chunk => Vec::new(),
        ObjectKind::Commit => {
            let c: dmv_repo::store::object::Commit = decode(id, kind, content)?;
            std::iter::once(c.tree).chain(c.parents).map(|p| other(p, 0)).collect()
        }
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, content)? {
            TreeNode::Leaf(entries) => {
                // Refused on arrival, before it is stored or any ref moves (checkouts refuse it too).
                dmv_repo::tree::check_entries(id, None, &entries).map_err(|e| SyncError::Protocol(format!("received {e}")))?;
                entries.into_iter().map(|e| Edge { id: e.id, chunk: e.kind == EntryKind::Symlink, size: e.size }).collect()
            }
            TreeNode::Inner { children, .. } => children.into_iter().map(|c| other(c.id, c.size)).collect(),
        },
        ObjectKind::FileNode => {
            let node: FileNode = decode(id, kind, content)?;
            node.entries.into_iter().map(|e| Edge { id: e.id, chunk: node.level == 0, size: e.size }).collect()
        }
    })
}

/// Orders objects so that each comes after the objects it refers to.
fn children_first(graph: &HashMap<ObjectId, Vec<ObjectId>>) -> Vec<ObjectId> {
    let mut done = HashSet::new();
    let mut out = Vec::with_capacity(graph.len());
    let mut roots: Vec<&ObjectId> = graph.keys().collect();
    roots.sort();
    for root in roots {
        let mut stack = vec![(*root, 0usize)];
        while let Some((id, i)) = stack.pop() {
            if done.contains(&id) {
                continue;
            }
            let kids = &graph[&id];
            if let Some(kid) = kids.get(i) {
                stack.push((id, i + 1));
                if graph.contains_key(kid) && !done.contains(kid) {
                    stack.push((*kid, 0));
                }
            } else {
                done.insert(id);
                out.push(id);
            }
        }
    }
    out
}

fn damaged(obj: &StoredObject, detail: String) -> SyncError {
    SyncError::Protocol(format!("received object {} is damaged: {detail} (the remote's copy may be corrupt: run `dmv fsck` there)", obj.id))
}

/// Fetches everything reachable from `wants` that the local store lacks.
/// `then` runs once all of it is durable, while gc is still held off (the
/// caller moves refs there). `early`, if given, sees the explored metadata
/// and then every verified chunk as it arrives (a clone writes its large
/// files that way).
pub fn fetch(
    repo: &Repository,
    client: &mut dyn Remote,
    wants: &[ObjectId],
    progress: &dyn Fn(u64, u64),
    mut early: Option<&mut EarlyCheckout>,
    then: impl FnOnce() -> SyncResult<()>,
) -> SyncResult<TransferStats> {
    let store = &repo.store;
    let mut stats = TransferStats::default();
    let mut session = store.begin_write()?;
    let mut missing_tips = Vec::new();
    for w in wants {
        if !session.has(w)? && !missing_tips.contains(w) {
            missing_tips.push(*w);
        }
    }
    if missing_tips.is_empty() {
        then()?;
        return Ok(stats);
    }
    let mut haves: Vec<ObjectId> = repo.refs.list("")?.into_iter().map(|(_, id)| id).collect();
    haves.extend(repo.head_commit()?);
    haves.sort();
    haves.dedup();
    let commits = client.walk_commits(missing_tips, haves)?;

    // Explore: metadata objects are kept (in memory) until their children are stored.
    let mut seen: HashSet<ObjectId> = HashSet::new();
    let mut frontier: Vec<ObjectId> = Vec::new();
    for c in commits {
        if seen.insert(c) && !store.contains(&c)? {
            frontier.push(c);
        }
    }
    let mut meta: HashMap<ObjectId, (StoredObject, Vec<ObjectId>)> = HashMap::new();
    let mut chunks: Vec<(ObjectId, u64)> = Vec::new();
    while !frontier.is_empty() {
        let mut next = Vec::new();
        client.get(&frontier, false, &mut |got| {
            match got {
                Received::ChunkStub { id, raw_len } => chunks.push((id, raw_len as u64)),
                Received::Object(obj) => {
                    let content = obj.content().map_err(|d| damaged(&obj, d))?;
                    let mut kids = Vec::new();
                    for e in edges(&obj.id, obj.kind, &content)? {
                        if store.contains(&e.id)? {
                            continue;
                        }
                        if e.chunk {
                            if seen.insert(e.id) {
                                chunks.push((e.id, e.size));
                            }
                        } else {
                            kids.push(e.id);
                            if seen.insert(e.id) {
                                next.push(e.id);
                            }
                        }
                    }
                    drop(content);
                    meta.insert(obj.id, (obj, kids));
                }
            }
            Ok(())
        })?;
        frontier = next;
    }

    if let Some(early) = early.as_deref_mut() {
        let lookup = |id: &ObjectId| match meta.get(id) {
            Some((obj, _)) => obj.content().ok().map(|c| (obj.kind, c.into_owned())),
            None => store.read(id).ok(),
        };
        early.plan(&lookup, &|id: &ObjectId| store.contains(id).unwrap_or(true));
    }

    // Chunks first, in batches; every sealed pack survives an interruption.
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

    let graph: HashMap<ObjectId, Vec<ObjectId>> = meta.iter().map(|(id, (_, kids))| (*id, kids.clone())).collect();
    for id in children_first(&graph) {
        let Some((obj, _)) = meta.remove(&id) else { continue };
        let content = obj.content().map_err(|d| damaged(&obj, d))?;
        for child in dmv_repo::store::object::children(&obj.id, obj.kind, &content)? {
            if !session.has(&child)? {
                return Err(SyncError::Protocol(format!("remote did not send {child}, which {} refers to", obj.id)));
            }
        }
        if session.put_stored(&obj)? {
            stats.objects += 1;
        }
    }
    session.finish()?;
    then()?;
    drop(session);
    Ok(stats)
}

/// Chunks a push asks the kernel to read ahead at a time (~8 MiB).
const PREFETCH_CHUNKS: usize = 128;

/// One ref a push sets on the remote.
#[derive(Clone, Debug)]
pub struct PushRef {
    pub name: String,
    /// The value the remote must still have (None: must not exist).
    pub expected: Option<ObjectId>,
    /// None deletes the remote ref.
    pub new: Option<ObjectId>,
}

#[derive(Clone, Debug)]
pub struct PushResult {
    pub stats: TransferStats,
}

/// Sends what the remote lacks of the new tips, then moves its refs with a
/// compare-and-swap on each expected old value (all or nothing).
pub fn push(repo: &Repository, client: &mut dyn Remote, updates: &[PushRef], remote_tips: &[ObjectId], progress: &(dyn Fn(u64, u64) + Sync)) -> SyncResult<PushResult> {
    let store = &repo.store;
    let mut stats = TransferStats::default();
    // An empty ref update checks write access, so a refusal comes before any upload.
    client.update_refs(Vec::new(), &repo.who(), "push")?;
    let tips: Vec<ObjectId> = updates.iter().filter_map(|u| u.new).collect();
    let mut stop = Vec::new();
    for t in remote_tips {
        if store.contains(t)? {
            stop.push(*t);
        }
    }
    let commits = repo.commits_between(&tips, &stop)?;

    let mut seen: HashSet<ObjectId> = commits.iter().copied().collect();
    let mut graph: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
    let mut chunk_candidates: Vec<ObjectId> = Vec::new();
    let mut missing_chunks: Vec<(ObjectId, u64)> = Vec::new();
    let mut level = commits;
    while !level.is_empty() {
        let present = client.has(&level)?;
        let mut next = Vec::new();
        for (id, there) in level.iter().zip(present) {
            if there {
                continue;
            }
            let (kind, content) = store.read(id)?;
            if kind == ObjectKind::Chunk {
                missing_chunks.push((*id, content.len() as u64));
                continue;
            }
            let mut kids = Vec::new();
            for e in edges(id, kind, &content)? {
                if e.chunk {
                    if seen.insert(e.id) {
                        chunk_candidates.push(e.id);
                    }
                } else {
                    kids.push(e.id);
                    if seen.insert(e.id) {
                        next.push(e.id);
                    }
                }
            }
            graph.insert(*id, kids);
        }
        level = next;
    }
    let present = client.has(&chunk_candidates)?;
    for (id, there) in chunk_candidates.iter().zip(present) {
        if !there {
            let size = store.locate(id)?.ok_or(dmv_repo::store::StoreError::NotFound { id: *id })?.entry.raw_len as u64;
            missing_chunks.push((*id, size));
        }
    }

    let order = children_first(&graph);
    if !missing_chunks.is_empty() || !order.is_empty() {
        let total: u64 = missing_chunks.iter().map(|(_, s)| s).sum();
        let mut objects = |send: &mut dyn FnMut(&StoredObject) -> SyncResult<()>| -> SyncResult<()> {
            let mut done = 0;
            // The disk reads the next window while this one is sent.
            let prefetch = |from: usize| {
                let window = missing_chunks.iter().skip(from).take(PREFETCH_CHUNKS).filter_map(|(id, _)| store.locate(id).ok().flatten());
                store.prefetch(&window.collect::<Vec<_>>());
            };
            prefetch(0);
            for (i, (id, size)) in missing_chunks.iter().enumerate() {
                if i % PREFETCH_CHUNKS == 0 {
                    prefetch(i + PREFETCH_CHUNKS);
                }
                send(&store.read_stored(id)?)?;
                done += size;
                progress(done, total);
            }
            for id in &order {
                send(&store.read_stored(id)?)?;
            }
            Ok(())
        };
        client.put(&mut objects)?;
        stats.objects = (missing_chunks.len() + order.len()) as u64;
        stats.chunk_bytes = total;
    }
    let wire: Vec<WireRefUpdate> = updates.iter().map(|u| WireRefUpdate { name: u.name.clone(), old: u.expected, new: u.new }).collect();
    if !wire.is_empty() {
        client.update_refs(wire, &repo.who(), "push")?;
    }
    Ok(PushResult { stats })
}

/// A remote ref as a fetch saw it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FetchedRef {
    pub remote_name: String,
    pub local_name: String,
    pub old: Option<ObjectId>,
    pub new: ObjectId,
}

/// Fetches a remote's branches into `refs/remotes/REMOTE/*` and its tags
/// into `refs/tags/*` (an existing different tag is kept, not clobbered).
/// Returns the remote's HEAD branch and the refs that changed.
/// `early`: see [`fetch`]; it is pointed at the remote's HEAD branch.
pub fn fetch_remote(
    repo: &Repository,
    client: &mut dyn Remote,
    remote: &str,
    progress: &dyn Fn(u64, u64),
    mut early: Option<&mut EarlyCheckout>,
) -> SyncResult<(Option<String>, Vec<FetchedRef>, TransferStats)> {
    let crate::client::RemoteRefs { head, refs } = client.list_refs()?;
    if let Some(early) = early.as_deref_mut() {
        let head_branch = head.as_deref().unwrap_or("refs/heads/main");
        if let Some((_, tip)) = refs.iter().find(|(name, _)| name == head_branch) {
            early.set_target(*tip);
        }
    }
    let mut changed = Vec::new();
    for (name, id) in &refs {
        let local_name = if let Some(branch) = name.strip_prefix("refs/heads/") {
            format!("refs/remotes/{remote}/{branch}")
        } else if name.starts_with("refs/tags/") {
            name.clone()
        } else {
            continue;
        };
        let old = repo.refs.get(&local_name)?;
        if old == Some(*id) || (old.is_some() && name.starts_with("refs/tags/")) {
            continue;
        }
        changed.push(FetchedRef { remote_name: name.clone(), local_name, old, new: *id });
    }
    let wants: Vec<ObjectId> = changed.iter().map(|c| c.new).collect();
    let stats = fetch(repo, client, &wants, progress, early, || {
        let updates: Vec<dmv_repo::RefUpdate> = changed.iter().map(|c| dmv_repo::RefUpdate { name: c.local_name.clone(), expected: Some(c.old), new: Some(c.new) }).collect();
        if !updates.is_empty() {
            repo.update_refs(&updates, &repo.who(), &format!("fetch {remote}"))?;
        }
        Ok(())
    })?;
    Ok((head, changed, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_come_before_parents() {
        let id = |n: u8| ObjectId([n; 32]);
        // 1 → 2 → 4, 1 → 3 → 4, 3 → 5 (5 not part of the transfer)
        let graph: HashMap<ObjectId, Vec<ObjectId>> = [(id(1), vec![id(2), id(3)]), (id(2), vec![id(4)]), (id(3), vec![id(4), id(5)]), (id(4), vec![])].into_iter().collect();
        let order = children_first(&graph);
        assert_eq!(order.len(), 4);
        let pos = |n: u8| order.iter().position(|x| *x == id(n)).unwrap();
        assert!(pos(4) < pos(2) && pos(4) < pos(3) && pos(2) < pos(1) && pos(3) < pos(1));
    }
}
