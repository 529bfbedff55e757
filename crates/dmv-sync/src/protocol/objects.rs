//! What both directions of a transfer need to know about objects: which
//! others an object refers to, and an order in which each arrives after
//! everything it refers to.
//!
//! Both directions explore the new objects top-down, one round trip per level
//! (annotated tags and commits, then trees and file lists level by level), pruning every subtree
//! the receiving side already has. That pruning is sound because a store only
//! ever holds an object together with everything it reaches: the receiver
//! stores chunks first and then the other objects children-before-parents
//! (and refuses an upload out of that order), so whatever has landed when a
//! transfer is cut is complete, and the retry skips it.

use std::collections::{HashMap, HashSet};

use dmv_repo::store::object::{decode, EntryKind, FileNode, TreeNode};
use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};

use crate::{SyncError, SyncResult, Violation};

/// What a transfer moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransferStats {
    /// Objects sent or received.
    pub objects: u64,
    /// Content bytes of the chunks among them.
    pub chunk_bytes: u64,
}

/// A reference from one object to another, as far as the referrer tells.
pub(crate) struct Edge {
    pub id: ObjectId,
    /// Known to be a chunk (else: a tree, a file node, or a one-chunk file's chunk).
    pub chunk: bool,
    pub size: u64,
    /// For a directory entry: its name and kind.
    pub entry: Option<(Vec<u8>, EntryKind)>,
}

pub(crate) fn edges(id: &ObjectId, kind: ObjectKind, content: &[u8]) -> SyncResult<Vec<Edge>> {
    let other = |id: ObjectId, size: u64| Edge {
        id,
        chunk: false,
        size,
        entry: None,
    };
    Ok(match kind {
        ObjectKind::Chunk => Vec::new(),
        ObjectKind::Commit => {
            let c: dmv_repo::store::object::Commit = decode(id, kind, content)?;
            std::iter::once(c.tree)
                .chain(c.parents)
                .map(|p| other(p, 0))
                .collect()
        }
        ObjectKind::Tag => vec![other(
            decode::<dmv_repo::store::object::Tag>(id, kind, content)?.target,
            0,
        )],
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, content)? {
            TreeNode::Leaf(entries) => {
                // Refused on arrival, before it is stored or any ref moves (checkouts refuse it too).
                dmv_repo::tree::check_entries(id, None, &entries)
                    .map_err(|e| SyncError::Protocol(Violation::Malformed(e)))?;
                entries
                    .into_iter()
                    .map(|e| Edge {
                        id: e.id,
                        chunk: e.kind == EntryKind::Symlink,
                        size: e.size,
                        entry: Some((e.name, e.kind)),
                    })
                    .collect()
            }
            TreeNode::Inner { children, .. } => {
                children.into_iter().map(|c| other(c.id, c.size)).collect()
            }
        },
        ObjectKind::FileNode => {
            let node: FileNode = decode(id, kind, content)?;
            node.entries
                .into_iter()
                .map(|e| Edge {
                    id: e.id,
                    chunk: node.level == 0,
                    size: e.size,
                    entry: None,
                })
                .collect()
        }
    })
}

/// Whether ref `name` may hold an object of `kind`: a commit, or under
/// `refs/tags/` an annotated tag.
pub(crate) fn ref_may_hold(name: &str, kind: ObjectKind) -> bool {
    kind == ObjectKind::Commit
        || (kind == ObjectKind::Tag && name.starts_with(dmv_repo::ref_names::TAGS))
}

/// Orders objects so that each comes after the objects it refers to.
pub(crate) fn children_first(graph: &HashMap<ObjectId, Vec<ObjectId>>) -> Vec<ObjectId> {
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

pub(crate) fn damaged(obj: &StoredObject, detail: String) -> SyncError {
    SyncError::Protocol(Violation::Damaged { id: obj.id, detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_come_before_parents() {
        let id = |n: u8| ObjectId([n; 32]);
        // 1 → 2 → 4, 1 → 3 → 4, 3 → 5 (5 not part of the transfer)
        let graph: HashMap<ObjectId, Vec<ObjectId>> = [
            (id(1), vec![id(2), id(3)]),
            (id(2), vec![id(4)]),
            (id(3), vec![id(4), id(5)]),
            (id(4), vec![]),
        ]
        .into_iter()
        .collect();
        let order = children_first(&graph);
        assert_eq!(order.len(), 4);
        let pos = |n: u8| order.iter().position(|x| *x == id(n)).unwrap();
        assert!(pos(4) < pos(2) && pos(4) < pos(3) && pos(2) < pos(1) && pos(3) < pos(1));
    }
}
