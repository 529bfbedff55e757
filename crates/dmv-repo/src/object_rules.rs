//! What a tree, a file's node and a commit must be before a repository
//! keeps them, whoever made them: the checks a push is held to on the
//! server, which a clone or checkout would otherwise only meet later (a
//! pushed `.dmv` entry broke every clone of a hub whose fsck was clean),
//! and which `fsck --full` makes of what is stored.
//!
//! Each object is checked against facts of its children (their kind and the
//! bytes of file content they stand for): entry names valid and in order
//! (as `tree::check_entries` says), an entry's kind matching its child's,
//! and every size equal to what its child holds, so a tree cannot claim
//! 4 EiB for a 6-byte file.

use dmv_store::object::{decode, Commit, EntryKind, FileNode, TreeNode};
use dmv_store::{ObjectId, ObjectKind};

use crate::error::{RepoError, RepoResult};
use crate::tree::check_entries;

/// What an object's parent needs to know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectFacts {
    pub kind: ObjectKind,
    /// Bytes of file content: a chunk's length, a file's, a folder's files' together (0 for a commit).
    pub size: u64,
}

/// Checks the object `id` against the facts of its children (`child` says
/// them, None: not here) and returns its own facts.
pub fn check_object(id: &ObjectId, kind: ObjectKind, content: &[u8], child: &mut dyn FnMut(&ObjectId) -> RepoResult<Option<ObjectFacts>>) -> RepoResult<ObjectFacts> {
    let bad = |detail: String| RepoError::MalformedObject { kind: kind.name(), id: *id, detail };
    let mut expect = |of: &ObjectId, kinds: &[ObjectKind], size: Option<u64>, what: &str| -> RepoResult<()> {
        let facts = child(of)?.ok_or_else(|| bad(format!("{what} {of} is not here")))?;
        if !kinds.contains(&facts.kind) {
            return Err(bad(format!("{what} {of} is a {}", facts.kind.name())));
        }
        if let Some(size) = size.filter(|s| *s != facts.size) {
            return Err(bad(format!("it says {what} {of} holds {size} bytes; it holds {}", facts.size)));
        }
        Ok(())
    };
    let mut total = 0u64;
    let mut add = |size: u64| -> RepoResult<()> {
        total = total.checked_add(size).ok_or_else(|| bad("its sizes add up past 2^64 bytes".into()))?;
        Ok(())
    };
    match kind {
        ObjectKind::Chunk => add(content.len() as u64)?,
        ObjectKind::FileNode => {
            let node: FileNode = decode(id, kind, content)?;
            if node.entries.is_empty() {
                return Err(bad("it lists nothing".into()));
            }
            let below = if node.level == 0 { ObjectKind::Chunk } else { ObjectKind::FileNode };
            for e in &node.entries {
                expect(&e.id, &[below], Some(e.size), "part")?;
                add(e.size)?;
            }
        }
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, content)? {
            TreeNode::Leaf(entries) => {
                check_entries(id, None, &entries)?;
                for e in &entries {
                    let (kinds, what): (&[ObjectKind], _) = match e.kind {
                        EntryKind::File | EntryKind::Executable => (&[ObjectKind::Chunk, ObjectKind::FileNode], "file"),
                        EntryKind::Symlink => (&[ObjectKind::Chunk], "symlink"),
                        EntryKind::Dir => (&[ObjectKind::Tree], "folder"),
                    };
                    expect(&e.id, kinds, Some(e.size), what)?;
                    add(e.size)?;
                }
            }
            TreeNode::Inner { level, children } => {
                if level == 0 || children.is_empty() {
                    return Err(bad(format!("an inner node of level {level} with {} children", children.len())));
                }
                for c in &children {
                    expect(&c.id, &[ObjectKind::Tree], Some(c.size), "node")?;
                    add(c.size)?;
                }
            }
        },
        ObjectKind::Commit => {
            let commit: Commit = decode(id, kind, content)?;
            expect(&commit.tree, &[ObjectKind::Tree], None, "tree")?;
            for p in &commit.parents {
                expect(p, &[ObjectKind::Commit], None, "parent")?;
            }
        }
    }
    Ok(ObjectFacts { kind, size: total })
}
