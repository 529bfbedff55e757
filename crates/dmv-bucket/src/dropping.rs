//! Freeing files' data in a bucket (`dmv drop --from s3://…`): the objects
//! that only those files reach leave the bucket, their packs rewritten
//! without them. The caller (`dmv_sync`) has confirmed and locked enough
//! other copies; this holds the drop lease (so no push and no other drop
//! runs meanwhile), refuses content that another replica's drop has locked
//! here, and removes in two rounds, the files' nodes first and their chunks
//! after: a drop cut short never leaves a file node whose chunks are gone,
//! which a push would take for a whole file and not send again. The chunks
//! of the second round are written to a journal first, so that the next
//! drop removes those a drop cut short left (no node names them any more).

use std::collections::{HashMap, HashSet};

use dmv_store::object::children_marked;
use dmv_store::{ChunkParams, Located, ObjectId, ObjectKind, PackEntry, Tally};

use crate::config::new_token;
use crate::error::{BucketError, BucketResult};
use crate::layout::{index_key, pack_key, PACKS_PREFIX};
use crate::leases;
use crate::mirror::Mirror;
use crate::objects::Objects;
use crate::url::Conn;
use crate::{read, upload};

/// What a drop from the bucket did.
#[derive(Clone, Debug, Default)]
pub struct BucketDropped {
    /// Pack bytes the bucket holds fewer of.
    pub freed_bytes: u64,
    /// Files another replica's drop has locked here: nothing was dropped.
    pub locked: Vec<ObjectId>,
}

/// Every non-chunk object of the bucket, with what it refers to (each
/// marked whether it is file data).
type Graph = HashMap<ObjectId, (ObjectKind, Vec<(ObjectId, bool)>)>;

/// Frees `files` (none: only finishes what a drop cut short left).
pub(crate) fn drop_files(
    conn: &Conn,
    mirror: &Mirror,
    chunking: ChunkParams,
    files: &[ObjectId],
) -> BucketResult<BucketDropped> {
    if files.is_empty() && leases::read_journal(conn)?.is_empty() {
        return Ok(BucketDropped::default());
    }
    let holder = new_token();
    leases::take_drop_lease(conn, &holder)?;
    let mut removed_any = false;
    let dropped = drop_leased(
        conn,
        mirror,
        chunking,
        &holder,
        &files.iter().copied().collect(),
        &mut removed_any,
    );
    let released = leases::release_drop_lease(conn, &holder, removed_any);
    let dropped = dropped?;
    released?;
    Ok(dropped)
}

/// `removed_any` turns true before the first object leaves the bucket.
fn drop_leased(
    conn: &Conn,
    mirror: &Mirror,
    chunking: ChunkParams,
    holder: &str,
    files: &HashSet<ObjectId>,
    removed_any: &mut bool,
) -> BucketResult<BucketDropped> {
    let locked: Vec<ObjectId> = leases::locked_content(conn)?
        .intersection(files)
        .copied()
        .collect();
    if !locked.is_empty() {
        return Ok(BucketDropped {
            freed_bytes: 0,
            locked,
        });
    }
    mirror.refresh(conn)?;
    let by_pack = mirror.store.objects_by_pack()?;
    let present: HashSet<ObjectId> = by_pack.values().flatten().map(|e| e.id).collect();
    let graph = read_graph(conn, &by_pack)?;
    let left_over = leases::read_journal(conn)?;
    let doomed = reached_only_through(&graph, &present, files, &left_over);
    let (nodes, chunks): (HashSet<ObjectId>, HashSet<ObjectId>) =
        doomed.into_iter().partition(|id| graph.contains_key(id));
    let before = stored_bytes(conn)?;
    leases::write_journal(conn, &chunks.iter().copied().collect::<Vec<_>>())?;
    rewrite_without(conn, mirror, chunking, holder, &nodes, removed_any)?;
    dmv_store::failpoint("bucket-drop-between-rounds");
    rewrite_without(conn, mirror, chunking, holder, &chunks, removed_any)?;
    leases::write_journal(conn, &[])?;
    Ok(BucketDropped {
        freed_bytes: before.saturating_sub(stored_bytes(conn)?),
        locked,
    })
}

/// Reads every non-chunk object of the bucket (commits, trees, file nodes:
/// the metadata, a small part of it) and what each refers to.
fn read_graph(conn: &Conn, by_pack: &HashMap<ObjectId, Vec<PackEntry>>) -> BucketResult<Graph> {
    let mut seen = HashSet::new();
    let wanted: Vec<Located> = by_pack
        .iter()
        .flat_map(|(pack, entries)| {
            entries
                .iter()
                .filter(|e| e.kind != ObjectKind::Chunk)
                .map(|e| Located {
                    pack: *pack,
                    entry: *e,
                })
        })
        .filter(|l| seen.insert(l.entry.id))
        .collect();
    let mut graph = Graph::with_capacity(wanted.len());
    read::read_objects(conn, wanted, &mut |obj| {
        let content = obj
            .content()
            .map_err(|e| conn.target.damaged(format!("object {}: {e}", obj.id)))?;
        let kids = children_marked(&obj.id, obj.kind, &content)?;
        graph.insert(obj.id, (obj.kind, kids));
        Ok::<_, BucketError>(())
    })?;
    Ok(graph)
}

/// The objects the bucket holds that `files` (or `left_over`, chunks an
/// earlier drop meant to remove) reach and nothing else does: every other
/// object the bucket holds counts as live, reachable or not (as a local
/// drop keeps what no ref reaches), and a tree listing one of `files` does
/// not keep it.
fn reached_only_through(
    graph: &Graph,
    present: &HashSet<ObjectId>,
    files: &HashSet<ObjectId>,
    left_over: &[ObjectId],
) -> HashSet<ObjectId> {
    let mut doomed = HashSet::new();
    let mut stack: Vec<ObjectId> = files.iter().chain(left_over).copied().collect();
    while let Some(id) = stack.pop() {
        if present.contains(&id) && doomed.insert(id) {
            stack.extend(
                graph
                    .get(&id)
                    .into_iter()
                    .flat_map(|(_, kids)| kids.iter().map(|(k, _)| *k)),
            );
        }
    }
    let mut live = HashSet::new();
    let mut stack: Vec<ObjectId> = graph
        .keys()
        .filter(|id| !doomed.contains(id))
        .copied()
        .collect();
    while let Some(id) = stack.pop() {
        if !live.insert(id) {
            continue;
        }
        if let Some((kind, kids)) = graph.get(&id) {
            stack.extend(
                kids.iter()
                    .filter(|(k, data)| !(*kind == ObjectKind::Tree && *data && files.contains(k)))
                    .map(|(k, _)| *k),
            );
        }
    }
    doomed.retain(|id| !live.contains(id));
    doomed
}

/// Rewrites every pack holding any of `remove` without them: the rest of
/// those packs goes up as new packs (published before anything is
/// removed), then the old packs go, index first (a pack counts only while
/// its index exists).
fn rewrite_without(
    conn: &Conn,
    mirror: &Mirror,
    chunking: ChunkParams,
    holder: &str,
    remove: &HashSet<ObjectId>,
    removed_any: &mut bool,
) -> BucketResult<()> {
    if remove.is_empty() {
        return Ok(());
    }
    let by_pack = mirror.store.objects_by_pack()?;
    let old: Vec<ObjectId> = by_pack
        .iter()
        .filter(|(_, entries)| entries.iter().any(|e| remove.contains(&e.id)))
        .map(|(p, _)| *p)
        .collect();
    let keep: Vec<Located> = old
        .iter()
        .flat_map(|p| {
            by_pack[p]
                .iter()
                .filter(|e| !remove.contains(&e.id))
                .map(|e| Located {
                    pack: *p,
                    entry: *e,
                })
        })
        .collect();
    let renew = || leases::renew_drop_lease(conn, holder);
    renew()?;
    upload::put_objects::<BucketError>(
        conn,
        mirror,
        chunking,
        upload::Skip::Nothing,
        &renew,
        &Tally::silent(),
        &mut |sink| read::read_objects(conn, keep.clone(), &mut |obj| sink(&obj)),
    )?;
    // Still this drop's: no other can have begun removing.
    renew()?;
    *removed_any |= !old.is_empty();
    for pack in &old {
        for key in [index_key(pack), pack_key(pack)] {
            let objects = Objects::of(conn);
            let target = conn.target.clone();
            conn.run("removing a pack", async move {
                objects
                    .delete(&key)
                    .await
                    .map_err(|e| target.classify(e, &format!("removing {key}")))
            })?;
        }
        dmv_store::failpoint("bucket-drop-removed-pack");
    }
    mirror.refresh(conn)
}

/// The bytes of every pack in the bucket.
fn stored_bytes(conn: &Conn) -> BucketResult<u64> {
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("listing packs", async move {
        let entries = objects
            .list(PACKS_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing packs"))?;
        Ok(entries
            .iter()
            .filter(|e| objects.is_pack_body(&e.key))
            .map(|e| e.len)
            .sum())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId([n; 32])
    }

    #[test]
    fn a_chunk_another_file_shares_stays_and_a_listing_tree_keeps_nothing() {
        // Tree 1 lists files 2 (node: chunks 4, 5) and 3 (node: chunks 5, 6); commit 9 has tree 1.
        let graph: Graph = HashMap::from([
            (id(9), (ObjectKind::Commit, vec![(id(1), false)])),
            (
                id(1),
                (ObjectKind::Tree, vec![(id(2), true), (id(3), true)]),
            ),
            (
                id(2),
                (ObjectKind::FileNode, vec![(id(4), true), (id(5), true)]),
            ),
            (
                id(3),
                (ObjectKind::FileNode, vec![(id(5), true), (id(6), true)]),
            ),
        ]);
        let present: HashSet<ObjectId> = (1..=9).map(id).collect();
        let doomed = reached_only_through(&graph, &present, &HashSet::from([id(2)]), &[]);
        assert_eq!(doomed, HashSet::from([id(2), id(4)]));
        // Both files: every chunk, both nodes; the tree and commit stay.
        let doomed = reached_only_through(&graph, &present, &HashSet::from([id(2), id(3)]), &[]);
        assert_eq!(doomed, HashSet::from([id(2), id(3), id(4), id(5), id(6)]));
        // A file whose node is gone frees nothing...
        let mut partly = graph.clone();
        partly.remove(&id(2));
        let present: HashSet<ObjectId> = [9, 1, 3, 4, 5, 6].map(id).into();
        assert!(reached_only_through(&partly, &present, &HashSet::from([id(2)]), &[]).is_empty());
        // ...unless the drop that removed it was cut short and left its chunks (4 only: file 3 still uses 5).
        assert_eq!(
            reached_only_through(&partly, &present, &HashSet::new(), &[id(4), id(5)]),
            HashSet::from([id(4)])
        );
    }
}
