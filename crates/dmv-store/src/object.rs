//! Encodings of the structured object kinds: a format byte, then postcard
//! (length-prefixed, varint) serialization of the structs below.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

pub const FORMAT: u8 = 1;

/// One entry of a file's chunk list: a chunk (level-0 node) or a child node,
/// with the number of content bytes below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEntry {
    pub id: ObjectId,
    pub size: u64,
}

/// A node of a file's chunk list. Level 0 lists chunks; level n lists nodes of level n-1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileNode {
    pub level: u8,
    pub entries: Vec<NodeEntry>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntryKind {
    File,
    Executable,
    Symlink,
    Dir,
}

impl EntryKind {
    pub fn is_file(self) -> bool {
        matches!(self, EntryKind::File | EntryKind::Executable)
    }
}

/// A directory entry. For files `id` is the file's content id: a single chunk when
/// the file is one chunk (or empty), else the root [`FileNode`]. For symlinks it is
/// a chunk holding the link target; for directories a tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    pub kind: EntryKind,
    pub id: ObjectId,
    pub size: u64,
}

/// A directory, split like file lists into nodes at content-defined boundaries
/// so a huge directory is not rewritten whole when one entry changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TreeNode {
    Leaf(Vec<TreeEntry>),
    Inner { level: u8, children: Vec<NodeEntry> },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    pub name: String,
    pub email: String,
    pub time: i64,
    pub tz_minutes: i16,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub author: Signature,
    pub committer: Signature,
    pub message: String,
}

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![FORMAT];
    // Serializing plain structs into a Vec cannot fail.
    out.extend(postcard::to_stdvec(value).unwrap_or_default());
    out
}

pub fn decode<T: DeserializeOwned>(id: &ObjectId, kind: ObjectKind, bytes: &[u8]) -> StoreResult<T> {
    let bad = |detail: String| StoreError::BadEncoding { id: *id, kind: kind.name(), detail };
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
    Ok(match kind {
        ObjectKind::Chunk => Vec::new(),
        ObjectKind::FileNode => decode::<FileNode>(id, kind, bytes)?.entries.into_iter().map(|e| e.id).collect(),
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, bytes)? {
            TreeNode::Leaf(entries) => entries.into_iter().map(|e| e.id).collect(),
            TreeNode::Inner { children, .. } => children.into_iter().map(|e| e.id).collect(),
        },
        ObjectKind::Commit => {
            let c: Commit = decode(id, kind, bytes)?;
            let mut v = vec![c.tree];
            v.extend(c.parents);
            v
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn commit_round_trips() {
        let c = Commit {
            tree: ObjectId([3; 32]),
            parents: vec![ObjectId([4; 32])],
            author: Signature { name: "A".into(), email: "a@x".into(), time: 1, tz_minutes: -60 },
            committer: Signature { name: "B".into(), email: "b@x".into(), time: 2, tz_minutes: 0 },
            message: "m".into(),
        };
        let bytes = encode(&c);
        let id = ObjectId::hash(ObjectKind::Commit, &bytes);
        assert_eq!(decode::<Commit>(&id, ObjectKind::Commit, &bytes).unwrap(), c);
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let id = ObjectId([0; 32]);
            let _ = decode::<Commit>(&id, ObjectKind::Commit, &bytes);
            let _ = decode::<TreeNode>(&id, ObjectKind::Tree, &bytes);
            let _ = decode::<FileNode>(&id, ObjectKind::FileNode, &bytes);
            for k in [ObjectKind::Chunk, ObjectKind::FileNode, ObjectKind::Tree, ObjectKind::Commit] {
                let _ = children(&id, k, &bytes);
            }
        }
    }
}
