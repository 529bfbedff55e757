//! Encodings of the structured object kinds: a format byte, then postcard
//! (length-prefixed, varint) serialization of the structs below.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

/// The byte every structured object's encoding begins with.
pub const FORMAT: u8 = 1;

/// The largest object a repository holds, as stored and as content: twice the
/// largest chunk FastCDC allows (16 MiB). Tree and file nodes stay far below it
/// (nodes are split at 1024 and 256 items); only a huge commit message can
/// reach it. Writers refuse larger objects, and every length read from a pack,
/// an index or a peer is checked against it before it sizes an allocation.
pub const MAX_OBJECT_SIZE: usize = 32 << 20;

/// Why a declared object length cannot be right, if it cannot.
pub fn check_object_len(what: &str, len: u64) -> Result<(), String> {
    if len > MAX_OBJECT_SIZE as u64 {
        return Err(format!(
            "{what} of {len} bytes is larger than the largest object ({} MiB)",
            MAX_OBJECT_SIZE >> 20
        ));
    }
    Ok(())
}

/// One entry of a file's chunk list: a chunk (level-0 node) or a child node,
/// with the number of content bytes below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEntry {
    /// The chunk or node.
    pub id: ObjectId,
    /// Content bytes below it.
    pub size: u64,
}

/// A node of a file's chunk list. Level 0 lists chunks; level n lists nodes of level n-1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileNode {
    /// 0: its entries are chunks; n: nodes of level n-1.
    pub level: u8,
    /// In content order.
    pub entries: Vec<NodeEntry>,
}

/// Walks a file's node tree in content order without recursion, yielding its
/// chunks. A node's children must be exactly one level below it (level 0
/// lists chunks), so the walk holds at most 256 nodes whatever a damaged
/// store or a hostile replica holds.
pub struct ChunkWalk {
    /// Per open node: its id, its level, and the entries not walked yet.
    stack: Vec<(ObjectId, u8, std::vec::IntoIter<NodeEntry>)>,
}

impl ChunkWalk {
    /// A walk from `root`, the node read from `id` (which errors name).
    pub fn new(id: ObjectId, root: FileNode) -> ChunkWalk {
        ChunkWalk {
            stack: vec![(id, root.level, root.entries.into_iter())],
        }
    }

    /// The next chunk (its id and size), reading nodes with `read` on the
    /// way down; `None` after the last.
    pub fn next_chunk(
        &mut self,
        read: &mut dyn FnMut(&ObjectId) -> StoreResult<FileNode>,
    ) -> StoreResult<Option<NodeEntry>> {
        loop {
            let Some((parent, level, entries)) = self.stack.last_mut() else {
                return Ok(None);
            };
            let Some(entry) = entries.next() else {
                self.stack.pop();
                continue;
            };
            if *level == 0 {
                return Ok(Some(entry));
            }
            let (parent, level) = (*parent, *level);
            let node = read(&entry.id)?;
            if node.level != level - 1 {
                return Err(StoreError::BadEncoding {
                    id: entry.id,
                    kind: ObjectKind::FileNode.name(),
                    detail: format!("it has level {} but node {parent} of level {level} lists it (a file node's children are one level below it)", node.level),
                });
            }
            self.stack
                .push((entry.id, node.level, node.entries.into_iter()));
        }
    }

    /// Skips the first `bytes` of the content: whole nodes and chunks that
    /// end before it are passed without being read. Returns how far into
    /// the next chunk (the one [`ChunkWalk::next_chunk`] gives next) the
    /// content then starts; past the end, the walk is over.
    pub fn skip(
        &mut self,
        mut bytes: u64,
        read: &mut dyn FnMut(&ObjectId) -> StoreResult<FileNode>,
    ) -> StoreResult<u64> {
        loop {
            let Some((parent, level, entries)) = self.stack.last_mut() else {
                return Ok(0);
            };
            let Some(first) = entries.as_slice().first() else {
                self.stack.pop();
                continue;
            };
            if first.size <= bytes {
                bytes -= first.size;
                entries.next();
                continue;
            }
            if *level == 0 {
                return Ok(bytes);
            }
            let (parent, level, id) = (*parent, *level, first.id);
            entries.next();
            let node = read(&id)?;
            if node.level != level - 1 {
                return Err(StoreError::BadEncoding {
                    id,
                    kind: ObjectKind::FileNode.name(),
                    detail: format!("it has level {} but node {parent} of level {level} lists it (a file node's children are one level below it)", node.level),
                });
            }
            self.stack.push((id, node.level, node.entries.into_iter()));
        }
    }
}

/// What a directory entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A regular file checked out executable.
    Executable,
    /// A symbolic link.
    Symlink,
    /// A directory.
    Dir,
}

impl EntryKind {
    /// A regular file, executable or not.
    pub fn is_file(self) -> bool {
        matches!(self, EntryKind::File | EntryKind::Executable)
    }
}

/// A directory entry. For files `id` is the file's content id: a single chunk when
/// the file is one chunk (or empty), else the root [`FileNode`]. For symlinks it is
/// a chunk holding the link target; for directories a tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// The name within the directory, as raw bytes (not necessarily UTF-8).
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// What it is.
    pub kind: EntryKind,
    /// Its content, link target chunk or tree (see above).
    pub id: ObjectId,
    /// Content bytes: the file's length, or the total of a directory's files.
    pub size: u64,
}

/// A directory, split like file lists into nodes at content-defined boundaries
/// so a huge directory is not rewritten whole when one entry changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TreeNode {
    /// Entries, sorted by name bytes.
    Leaf(Vec<TreeEntry>),
    /// Nodes one level down.
    Inner {
        /// Leaves are level 0.
        level: u8,
        /// The child nodes, in the order of the names below them.
        children: Vec<NodeEntry>,
    },
}

/// Who made a commit, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Their name.
    pub name: String,
    /// Their email address.
    pub email: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
    /// Their time zone's offset, in minutes.
    pub tz_minutes: i16,
}

/// A commit: a root tree and the commits it follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// The root directory.
    pub tree: ObjectId,
    /// Empty for a first commit; a merge lists the commit merged into first.
    pub parents: Vec<ObjectId>,
    /// Who wrote the change.
    pub author: Signature,
    /// Who made the commit.
    pub committer: Signature,
    /// The commit message.
    pub message: String,
}

/// An annotated tag: a name given to a commit, with who gave it, when and why.
/// The tag's ref (`refs/tags/NAME`) holds the tag's id; the commit is its target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// The commit named.
    pub target: ObjectId,
    /// The tag's name as it was given (`v1.0`), not its ref.
    pub name: String,
    /// Who made the tag.
    pub tagger: Signature,
    /// The tag's message.
    pub message: String,
}

/// The encoding of a structured object: [`FORMAT`], then postcard.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![FORMAT];
    // Serializing plain structs into a Vec cannot fail.
    out.extend(postcard::to_stdvec(value).unwrap_or_default());
    out
}

/// Decodes what [`encode`] wrote; `id` and `kind` only name the object in errors.
pub fn decode<T: DeserializeOwned>(
    id: &ObjectId,
    kind: ObjectKind,
    bytes: &[u8],
) -> StoreResult<T> {
    let bad = |detail: String| StoreError::BadEncoding {
        id: *id,
        kind: kind.name(),
        detail,
    };
    match bytes.first() {
        Some(&FORMAT) => {}
        Some(other) => return Err(bad(format!("unknown format {other}"))),
        None => return Err(bad("empty".into())),
    }
    let (value, rest) = postcard::take_from_bytes(&bytes[1..]).map_err(|e| bad(e.to_string()))?;
    if !rest.is_empty() {
        return Err(bad("trailing bytes".into()));
    }
    Ok(value)
}

/// Ids an object refers to, for reachability walks (fsck, gc, sync).
pub fn children(id: &ObjectId, kind: ObjectKind, bytes: &[u8]) -> StoreResult<Vec<ObjectId>> {
    Ok(children_marked(id, kind, bytes)?
        .into_iter()
        .map(|(child, _)| child)
        .collect())
}

/// Calls `each` with every child of [`children_marked`], without collecting
/// them first: the node of a large file lists half a million chunks.
pub fn for_each_child<E: From<StoreError>>(
    id: &ObjectId,
    kind: ObjectKind,
    bytes: &[u8],
    mut each: impl FnMut(&ObjectId, bool) -> Result<(), E>,
) -> Result<(), E> {
    match kind {
        ObjectKind::FileNode => decode::<FileNode>(id, kind, bytes)?
            .entries
            .iter()
            .try_for_each(|e| each(&e.id, true)),
        _ => children_marked(id, kind, bytes)?
            .iter()
            .try_for_each(|(child, data)| each(child, *data)),
    }
}

/// [`children`], each marked when it is file data: a file's content (its
/// nodes and chunks), which a partial replica may lack, as opposed to the
/// commits, trees and symlink targets every replica holds.
pub fn children_marked(
    id: &ObjectId,
    kind: ObjectKind,
    bytes: &[u8],
) -> StoreResult<Vec<(ObjectId, bool)>> {
    Ok(match kind {
        ObjectKind::Chunk => Vec::new(),
        ObjectKind::FileNode => decode::<FileNode>(id, kind, bytes)?
            .entries
            .into_iter()
            .map(|e| (e.id, true))
            .collect(),
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, bytes)? {
            TreeNode::Leaf(entries) => entries
                .into_iter()
                .map(|e| (e.id, e.kind.is_file()))
                .collect(),
            TreeNode::Inner { children, .. } => {
                children.into_iter().map(|e| (e.id, false)).collect()
            }
        },
        ObjectKind::Commit => {
            let c: Commit = decode(id, kind, bytes)?;
            std::iter::once(c.tree)
                .chain(c.parents)
                .map(|p| (p, false))
                .collect()
        }
        ObjectKind::Tag => vec![(decode::<Tag>(id, kind, bytes)?.target, false)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_child_is_met_as_children_marked_lists_it() {
        let node = FileNode {
            level: 0,
            entries: (0..5u8)
                .map(|i| NodeEntry {
                    id: ObjectId([i; 32]),
                    size: 10,
                })
                .collect(),
        };
        let commit = Commit {
            tree: ObjectId([3; 32]),
            parents: vec![ObjectId([4; 32]), ObjectId([5; 32])],
            author: Signature {
                name: "A".into(),
                email: "a@x".into(),
                time: 1,
                tz_minutes: 0,
            },
            committer: Signature {
                name: "A".into(),
                email: "a@x".into(),
                time: 1,
                tz_minutes: 0,
            },
            message: "m".into(),
        };
        for (kind, bytes) in [
            (ObjectKind::FileNode, encode(&node)),
            (ObjectKind::Commit, encode(&commit)),
            (ObjectKind::Chunk, b"data".to_vec()),
        ] {
            let id = ObjectId::hash(kind, &bytes);
            let mut met = Vec::new();
            for_each_child(&id, kind, &bytes, |c, data| {
                met.push((*c, data));
                Ok::<_, StoreError>(())
            })
            .unwrap();
            assert_eq!(met, children_marked(&id, kind, &bytes).unwrap(), "{kind:?}");
        }
        // The first error stops the walk and is returned.
        let bytes = encode(&node);
        let id = ObjectId::hash(ObjectKind::FileNode, &bytes);
        let mut calls = 0;
        let stopped = for_each_child(&id, ObjectKind::FileNode, &bytes, |_, _| {
            calls += 1;
            Err(StoreError::BadEncoding {
                id,
                kind: "test",
                detail: "stop".into(),
            })
        });
        assert!(stopped.is_err() && calls == 1);
        assert!(
            for_each_child(&id, ObjectKind::FileNode, &bytes[..3], |_, _| Ok::<
                _,
                StoreError,
            >(
                ()
            ))
            .is_err()
        );
    }

    #[test]
    fn commit_round_trips() {
        let c = Commit {
            tree: ObjectId([3; 32]),
            parents: vec![ObjectId([4; 32])],
            author: Signature {
                name: "A".into(),
                email: "a@x".into(),
                time: 1,
                tz_minutes: -60,
            },
            committer: Signature {
                name: "B".into(),
                email: "b@x".into(),
                time: 2,
                tz_minutes: 0,
            },
            message: "m".into(),
        };
        let bytes = encode(&c);
        let id = ObjectId::hash(ObjectKind::Commit, &bytes);
        assert_eq!(
            decode::<Commit>(&id, ObjectKind::Commit, &bytes).unwrap(),
            c
        );
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let id = ObjectId([0; 32]);
            let _ = decode::<Commit>(&id, ObjectKind::Commit, &bytes);
            let _ = decode::<TreeNode>(&id, ObjectKind::Tree, &bytes);
            let _ = decode::<FileNode>(&id, ObjectKind::FileNode, &bytes);
            let _ = decode::<Tag>(&id, ObjectKind::Tag, &bytes);
            for k in [ObjectKind::Chunk, ObjectKind::FileNode, ObjectKind::Tree, ObjectKind::Commit, ObjectKind::Tag] {
                let _ = children(&id, k, &bytes);
            }
        }
    }
}
