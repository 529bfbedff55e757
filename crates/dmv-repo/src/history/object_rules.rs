//! What a tree, a file's node, a commit and a tag must be before a repository
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

use dmv_store::object::{decode, Commit, EntryKind, FileNode, Tag, TreeNode};
use std::collections::HashSet;

use dmv_store::{ObjectId, ObjectKind, Store, WriteSession};

use crate::error::{RepoError, RepoResult};
use crate::history::tree::check_entries;
use crate::repository::repo::Repository;

/// What an object's parent needs to know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectFacts {
    /// The object's kind.
    pub kind: ObjectKind,
    /// Bytes of file content: a chunk's length, a file's, a folder's files' together (0 for a commit).
    pub size: u64,
}

/// Checks the object `id` against the facts of its children and returns its
/// own facts. `child` says a child's facts, or None when they are not known
/// here (data a partial replica lacks): that child goes unchecked, and
/// whether it must be here is the caller's rule.
pub fn check_object(
    id: &ObjectId,
    kind: ObjectKind,
    content: &[u8],
    child: &mut dyn FnMut(&ObjectId) -> RepoResult<Option<ObjectFacts>>,
) -> RepoResult<ObjectFacts> {
    let bad = |detail: String| RepoError::MalformedObject {
        kind: kind.name(),
        id: *id,
        detail,
    };
    let mut expect =
        |of: &ObjectId, kinds: &[ObjectKind], size: Option<u64>, what: &str| -> RepoResult<()> {
            let Some(facts) = child(of)? else {
                return Ok(());
            };
            if !kinds.contains(&facts.kind) {
                return Err(bad(format!("{what} {of} is a {}", facts.kind.name())));
            }
            if let Some(size) = size.filter(|s| *s != facts.size) {
                return Err(bad(format!(
                    "it says {what} {of} holds {size} bytes; it holds {}",
                    facts.size
                )));
            }
            Ok(())
        };
    let mut total = 0u64;
    let mut add = |size: u64| -> RepoResult<()> {
        total = total
            .checked_add(size)
            .ok_or_else(|| bad("its sizes add up past 2^64 bytes".into()))?;
        Ok(())
    };
    match kind {
        ObjectKind::Chunk => add(content.len() as u64)?,
        ObjectKind::FileNode => {
            let node: FileNode = decode(id, kind, content)?;
            if node.entries.is_empty() {
                return Err(bad("it lists nothing".into()));
            }
            let below = if node.level == 0 {
                ObjectKind::Chunk
            } else {
                ObjectKind::FileNode
            };
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
                        EntryKind::File | EntryKind::Executable => {
                            (&[ObjectKind::Chunk, ObjectKind::FileNode], "file")
                        }
                        EntryKind::Symlink => (&[ObjectKind::Chunk], "symlink"),
                        EntryKind::Dir => (&[ObjectKind::Tree], "folder"),
                    };
                    expect(&e.id, kinds, Some(e.size), what)?;
                    add(e.size)?;
                }
            }
            TreeNode::Inner { level, children } => {
                if level == 0 || children.is_empty() {
                    return Err(bad(format!(
                        "an inner node of level {level} with {} children",
                        children.len()
                    )));
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
        ObjectKind::Tag => {
            let tag: Tag = decode(id, kind, content)?;
            if crate::repository::refs::validate_ref_name(&crate::ref_names::tag_ref(&tag.name))
                .is_err()
            {
                return Err(bad(format!("its name {:?} is not a tag's name", tag.name)));
            }
            expect(&tag.target, &[ObjectKind::Commit], None, "target")?;
        }
    }
    Ok(ObjectFacts { kind, size: total })
}

/// The facts of an object in the store `session` writes to (None: not
/// there). A file node's or folder's size is what its own record says: it
/// was checked against its children when it was stored. An object only in
/// the pack being written must be a chunk (the caller knows the rest).
pub fn stored_facts(session: &WriteSession<'_>, id: &ObjectId) -> RepoResult<Option<ObjectFacts>> {
    facts_of_record(session.store(), session.kind_and_len(id)?, id)
}

/// The facts of an object from its record (kind and length), if it has one.
fn facts_of_record(
    store: &Store,
    record: Option<(ObjectKind, u32)>,
    id: &ObjectId,
) -> RepoResult<Option<ObjectFacts>> {
    match record {
        None => Ok(None),
        Some((ObjectKind::Chunk, len)) => Ok(Some(ObjectFacts {
            kind: ObjectKind::Chunk,
            size: len as u64,
        })),
        Some((kind, _)) => facts_of_content(id, kind, &store.read_kind(id, kind)?).map(Some),
    }
}

/// The facts of an object from its content (checked against its id by the
/// caller): what [`stored_facts`] says of it once stored.
pub fn facts_of_content(
    id: &ObjectId,
    kind: ObjectKind,
    content: &[u8],
) -> RepoResult<ObjectFacts> {
    let size = match kind {
        ObjectKind::Chunk => content.len() as u64,
        ObjectKind::FileNode => decode::<FileNode>(id, kind, content)?
            .entries
            .iter()
            .map(|e| e.size)
            .fold(0u64, u64::saturating_add),
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, content)? {
            TreeNode::Leaf(entries) => entries
                .iter()
                .map(|e| e.size)
                .fold(0u64, u64::saturating_add),
            TreeNode::Inner { children, .. } => children
                .iter()
                .map(|c| c.size)
                .fold(0u64, u64::saturating_add),
        },
        ObjectKind::Commit | ObjectKind::Tag => 0,
    };
    Ok(ObjectFacts { kind, size })
}

impl Repository {
    /// `fsck --full`'s check of every tree, file node and commit reachable
    /// here against [`check_object`]: one line per object that breaks a rule
    /// (a push before the rules, or a copy made by other means, can hold one).
    pub(crate) fn check_object_rules(&self) -> RepoResult<Vec<String>> {
        let mut problems = Vec::new();
        let mut seen: HashSet<ObjectId> = HashSet::new();
        let mut todo = self.maintenance().roots_to_check()?;
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            // What cannot be read is the store check's to report (a damaged index, a lost pack).
            let Ok(Some(loc)) = self.store.locate(&id) else {
                continue;
            };
            let Ok(content) = self.store.read_kind(&id, loc.entry.kind) else {
                continue;
            };
            let mut children = Vec::new();
            let checked = check_object(&id, loc.entry.kind, &content, &mut |child| {
                let facts = facts_of_record(
                    &self.store,
                    self.store
                        .locate(child)?
                        .map(|l| (l.entry.kind, l.entry.raw_len)),
                    child,
                )?;
                // Chunks have no rules of their own, and are the most: never remembered.
                if facts.is_some_and(|f| f.kind != ObjectKind::Chunk) {
                    children.push(*child);
                }
                Ok(facts)
            });
            match checked {
                Ok(_) => todo.extend(children.into_iter().filter(|c| !seen.contains(c))),
                Err(e @ RepoError::MalformedObject { .. })
                | Err(e @ RepoError::MalformedTree { .. }) => problems.push(e.to_string()),
                Err(_) => {}
            }
        }
        Ok(problems)
    }
}
