//! Splits long lists (a file's chunks, a directory's entries) into nodes at
//! content-defined boundaries, Merkle-tree style: an edit in one place rewrites
//! the node holding it and its ancestors, O(log n) small objects.

use crate::object::{encode, FileNode, NodeEntry, TreeEntry, TreeNode};
use crate::{ObjectId, ObjectKind, StoreResult};

/// Where nodes go as they are produced.
pub trait NodeSink {
    /// Stores one node (an object of `kind` encoded as `bytes`) and returns its id.
    fn put(&mut self, kind: ObjectKind, bytes: Vec<u8>) -> StoreResult<ObjectId>;
}

/// What differs between file lists and directory lists.
pub trait ListShape {
    /// An item of the list.
    type Leaf;
    /// The kind the list's nodes are stored as.
    const OBJECT: ObjectKind;
    /// A node ends after an item whose hash is 0 modulo this (the average fan-out).
    const FANOUT: u32;
    /// Hard cap so a run without boundaries cannot grow a node without bound.
    const MAX: usize;
    /// The item's hash that decides where nodes end (see `FANOUT`).
    fn leaf_hash(leaf: &Self::Leaf) -> u32;
    /// The content bytes the item stands for.
    fn leaf_size(leaf: &Self::Leaf) -> u64;
    /// The encoding of a level-0 node holding `leaves`.
    fn encode_leaves(leaves: &[Self::Leaf]) -> Vec<u8>;
    /// The encoding of a node of `level` listing `children`.
    fn encode_inner(level: u8, children: &[NodeEntry]) -> Vec<u8>;
}

/// A file's chunk list: [`crate::object::FileNode`]s over chunks.
pub struct FileList;
impl ListShape for FileList {
    type Leaf = NodeEntry;
    const OBJECT: ObjectKind = ObjectKind::FileNode;
    const FANOUT: u32 = 64;
    const MAX: usize = 256;
    fn leaf_hash(leaf: &NodeEntry) -> u32 {
        id_hash(&leaf.id)
    }
    fn leaf_size(leaf: &NodeEntry) -> u64 {
        leaf.size
    }
    fn encode_leaves(leaves: &[NodeEntry]) -> Vec<u8> {
        encode(&FileNode {
            level: 0,
            entries: leaves.to_vec(),
        })
    }
    fn encode_inner(level: u8, children: &[NodeEntry]) -> Vec<u8> {
        encode(&FileNode {
            level,
            entries: children.to_vec(),
        })
    }
}

/// A directory's entries: [`crate::object::TreeNode`]s.
pub struct TreeList;
impl ListShape for TreeList {
    type Leaf = TreeEntry;
    const OBJECT: ObjectKind = ObjectKind::Tree;
    const FANOUT: u32 = 256;
    const MAX: usize = 1024;
    fn leaf_hash(leaf: &TreeEntry) -> u32 {
        let h = blake3::hash(&leaf.name);
        u32::from_le_bytes([
            h.as_bytes()[0],
            h.as_bytes()[1],
            h.as_bytes()[2],
            h.as_bytes()[3],
        ])
    }
    fn leaf_size(leaf: &TreeEntry) -> u64 {
        leaf.size
    }
    fn encode_leaves(leaves: &[TreeEntry]) -> Vec<u8> {
        encode(&TreeNode::Leaf(leaves.to_vec()))
    }
    fn encode_inner(level: u8, children: &[NodeEntry]) -> Vec<u8> {
        encode(&TreeNode::Inner {
            level,
            children: children.to_vec(),
        })
    }
}

fn id_hash(id: &ObjectId) -> u32 {
    u32::from_le_bytes([id.0[0], id.0[1], id.0[2], id.0[3]])
}

/// Streaming builder: push leaves in order, `finish` returns the root.
pub struct ListBuilder<S: ListShape> {
    leaves: Vec<S::Leaf>,
    inner: Vec<Vec<NodeEntry>>,
    /// The last leaf ended a node; it is written when the next leaf arrives, so a
    /// list of one leaf never gets a node (a one-chunk file is its chunk).
    cut_pending: bool,
}

impl<S: ListShape> Default for ListBuilder<S> {
    fn default() -> Self {
        ListBuilder {
            leaves: Vec::new(),
            inner: Vec::new(),
            cut_pending: false,
        }
    }
}

impl<S: ListShape> ListBuilder<S> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next item; writes the nodes it completes to `sink`.
    pub fn push(&mut self, sink: &mut dyn NodeSink, leaf: S::Leaf) -> StoreResult<()> {
        if self.cut_pending {
            self.flush_leaves(sink)?;
            self.cut_pending = false;
        }
        let boundary = S::leaf_hash(&leaf) % S::FANOUT == 0;
        self.leaves.push(leaf);
        self.cut_pending = boundary || self.leaves.len() >= S::MAX;
        Ok(())
    }

    fn flush_leaves(&mut self, sink: &mut dyn NodeSink) -> StoreResult<()> {
        let size = self.leaves.iter().map(S::leaf_size).sum();
        let id = sink.put(S::OBJECT, S::encode_leaves(&self.leaves))?;
        self.leaves.clear();
        self.push_inner(sink, 0, NodeEntry { id, size })
    }

    /// `level` is the level of the node being added as a child.
    fn push_inner(
        &mut self,
        sink: &mut dyn NodeSink,
        level: usize,
        child: NodeEntry,
    ) -> StoreResult<()> {
        if self.inner.len() <= level {
            self.inner.push(Vec::new());
        }
        let boundary = id_hash(&child.id).is_multiple_of(S::FANOUT);
        self.inner[level].push(child);
        if boundary || self.inner[level].len() >= S::MAX {
            self.flush_inner(sink, level)?;
        }
        Ok(())
    }

    fn flush_inner(&mut self, sink: &mut dyn NodeSink, level: usize) -> StoreResult<()> {
        let children = std::mem::take(&mut self.inner[level]);
        let size = children.iter().map(|c| c.size).sum();
        let id = sink.put(S::OBJECT, S::encode_inner(level as u8 + 1, &children))?;
        self.push_inner(sink, level + 1, NodeEntry { id, size })
    }

    /// True when no node has been written yet and at most one leaf is pending.
    pub fn single_leaf(&self) -> Option<&S::Leaf> {
        if self.inner.is_empty() && self.leaves.len() == 1 {
            self.leaves.first()
        } else {
            None
        }
    }

    /// Flushes every level; returns the root node and the total size below it.
    pub fn finish(mut self, sink: &mut dyn NodeSink) -> StoreResult<NodeEntry> {
        if self.inner.is_empty() || !self.leaves.is_empty() {
            let size = self.leaves.iter().map(S::leaf_size).sum();
            let id = sink.put(S::OBJECT, S::encode_leaves(&self.leaves))?;
            self.leaves.clear();
            if self.inner.is_empty() {
                return Ok(NodeEntry { id, size });
            }
            self.push_inner(sink, 0, NodeEntry { id, size })?;
        }
        let mut level = 0;
        loop {
            let top = level + 1 == self.inner.len();
            if top && self.inner[level].len() == 1 {
                return Ok(self.inner[level][0]);
            }
            if !self.inner[level].is_empty() {
                self.flush_inner(sink, level)?;
            }
            level += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct MemSink(HashMap<ObjectId, Vec<u8>>, usize);
    impl NodeSink for MemSink {
        fn put(&mut self, kind: ObjectKind, bytes: Vec<u8>) -> StoreResult<ObjectId> {
            let id = ObjectId::hash(kind, &bytes);
            self.1 += 1;
            self.0.insert(id, bytes);
            Ok(id)
        }
    }

    fn leaves(sink: &MemSink, id: ObjectId, out: &mut Vec<NodeEntry>) {
        let node: FileNode =
            crate::object::decode(&id, ObjectKind::FileNode, &sink.0[&id]).unwrap();
        for e in node.entries {
            if node.level == 0 {
                out.push(e)
            } else {
                leaves(sink, e.id, out)
            }
        }
    }

    fn chunk(n: u32) -> NodeEntry {
        NodeEntry {
            id: ObjectId::hash(ObjectKind::Chunk, &n.to_le_bytes()),
            size: 1000 + n as u64,
        }
    }

    #[test]
    fn builds_a_tree_that_lists_every_leaf_in_order() {
        for n in [2u32, 63, 64, 65, 1000, 20_000] {
            let mut sink = MemSink::default();
            let mut b = ListBuilder::<FileList>::new();
            let input: Vec<NodeEntry> = (0..n).map(chunk).collect();
            for e in &input {
                b.push(&mut sink, *e).unwrap();
            }
            let root = b.finish(&mut sink).unwrap();
            assert_eq!(root.size, input.iter().map(|e| e.size).sum::<u64>());
            let mut out = Vec::new();
            leaves(&sink, root.id, &mut out);
            assert_eq!(out, input, "n = {n}");
        }
    }

    #[test]
    fn one_edit_rewrites_few_nodes() {
        let build = |edit: Option<u32>| {
            let mut sink = MemSink::default();
            let mut b = ListBuilder::<FileList>::new();
            for i in 0..20_000u32 {
                let e = if Some(i) == edit {
                    chunk(1_000_000)
                } else {
                    chunk(i)
                };
                b.push(&mut sink, e).unwrap();
            }
            b.finish(&mut sink).unwrap();
            sink.0
        };
        let before = build(None);
        let after = build(Some(10_000));
        let new_nodes = after.keys().filter(|k| !before.contains_key(k)).count();
        assert!(before.len() > 100);
        assert!(new_nodes <= 6, "{new_nodes} nodes rewritten");
    }
}
