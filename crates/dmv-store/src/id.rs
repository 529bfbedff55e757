//! Object ids and kinds: every object is named by the hash of its kind and
//! bytes, which every other file of the crate (and every replica) relies on.

use std::fmt;

use serde::{Deserialize, Serialize};

/// BLAKE3-256 of an object's kind tag followed by its encoding. Encoded as
/// its 32 bytes (objects, the wire) and, for people and scripts (JSON), as
/// its 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub [u8; 32]);

impl Serialize for ObjectId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match s.is_human_readable() {
            true => s.serialize_str(&self.to_hex()),
            false => s.serialize_newtype_struct("ObjectId", &self.0),
        }
    }
}

impl<'de> Deserialize<'de> for ObjectId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ObjectId, D::Error> {
        if !d.is_human_readable() {
            return <[u8; 32]>::deserialize(d).map(ObjectId);
        }
        // Hex digits; or the 32 numbers JSON written before held.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Text {
            Hex(String),
            Bytes([u8; 32]),
        }
        match Text::deserialize(d)? {
            Text::Hex(hex) => ObjectId::from_hex(&hex)
                .ok_or_else(|| serde::de::Error::custom(format!("not an object id: {hex}"))),
            Text::Bytes(bytes) => Ok(ObjectId(bytes)),
        }
    }
}

impl ObjectId {
    /// Bytes in an id.
    pub const LEN: usize = 32;

    /// The id of an object of `kind` whose encoding is `bytes`.
    pub fn hash(kind: ObjectKind, bytes: &[u8]) -> ObjectId {
        let mut h = blake3::Hasher::new();
        h.update(&[kind as u8]);
        h.update(bytes);
        ObjectId(*h.finalize().as_bytes())
    }

    /// The 64 lower-case hex digits, as ids are shown and typed.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 12 hex digits, for messages and logs.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..6])
    }

    /// Parses 64 hex digits (either case); None for anything else.
    pub fn from_hex(s: &str) -> Option<ObjectId> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(ObjectId(out))
    }

    /// Takes exactly 32 bytes; None for any other length.
    pub fn from_slice(b: &[u8]) -> Option<ObjectId> {
        Some(ObjectId(b.try_into().ok()?))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.short())
    }
}

/// The kind tag is part of the hashed bytes, so equal payloads of different
/// kinds never share an id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum ObjectKind {
    /// Raw bytes of file content (or a symlink's target).
    Chunk = 1,
    /// A node of a file's chunk list ([`crate::object::FileNode`]).
    FileNode = 2,
    /// A node of a directory ([`crate::object::TreeNode`]).
    Tree = 3,
    /// A commit ([`crate::object::Commit`]).
    Commit = 4,
    /// An annotated tag ([`crate::object::Tag`]): a commit named with a message.
    Tag = 5,
}

impl ObjectKind {
    /// The kind of a tag byte as packs and indexes store it; None for an unknown tag.
    pub fn from_u8(b: u8) -> Option<ObjectKind> {
        match b {
            1 => Some(ObjectKind::Chunk),
            2 => Some(ObjectKind::FileNode),
            3 => Some(ObjectKind::Tree),
            4 => Some(ObjectKind::Commit),
            5 => Some(ObjectKind::Tag),
            _ => None,
        }
    }

    /// The name messages use: "chunk", "file", "tree", "commit", "tag".
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Chunk => "chunk",
            ObjectKind::FileNode => "file",
            ObjectKind::Tree => "tree",
            ObjectKind::Commit => "commit",
            ObjectKind::Tag => "tag",
        }
    }

    /// The name with its article, for messages: "a commit".
    pub fn with_article(self) -> &'static str {
        match self {
            ObjectKind::Chunk => "a chunk",
            ObjectKind::FileNode => "a file",
            ObjectKind::Tree => "a tree",
            ObjectKind::Commit => "a commit",
            ObjectKind::Tag => "a tag",
        }
    }
}
