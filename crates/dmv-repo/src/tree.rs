//! Trees as flat maps of paths, and back.

use std::collections::BTreeMap;

use dmv_store::object::{EntryKind, TreeEntry, TreeNode};
use dmv_store::{ListBuilder, ObjectId, ObjectKind, Store, TreeList, WriteSession};
use serde::{Deserialize, Serialize};

use crate::{RepoError, RepoResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlatEntry {
    pub kind: EntryKind,
    pub id: ObjectId,
    pub size: u64,
}

/// Every non-directory entry of a tree, by full path ('/'-separated bytes).
pub type FlatTree = BTreeMap<Vec<u8>, FlatEntry>;

/// Whether a tree may name an entry so. Trees come from other replicas too:
/// a name that is empty, `.` or `..`, holds a `/` or a NUL, or is `.dmv`
/// (in any case) would make a checkout write outside its place, so a tree
/// that has one is refused as a whole.
pub fn valid_entry_name(name: &[u8]) -> bool {
    !(name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0) || name.eq_ignore_ascii_case(b".dmv"))
}

/// The entries of one directory, in name order, across its nodes.
pub fn read_dir(store: &Store, tree: &ObjectId) -> RepoResult<Vec<TreeEntry>> {
    read_dir_with(&|id| Ok(store.read_decoded::<TreeNode>(id, ObjectKind::Tree)?), tree)
}

/// Checks that `entries` (following `before`, the last name of the same
/// directory seen so far) have valid names in strictly increasing order, so
/// none appears twice.
pub fn check_entries(tree: &ObjectId, before: Option<&[u8]>, entries: &[TreeEntry]) -> RepoResult<()> {
    let mut prev = before;
    for e in entries {
        if !valid_entry_name(&e.name) || prev.is_some_and(|p| p >= e.name.as_slice()) {
            return Err(RepoError::Invalid(format!("tree {tree} is malformed: entry {:?} is not a valid name or out of order", String::from_utf8_lossy(&e.name))));
        }
        prev = Some(&e.name);
    }
    Ok(())
}

/// `read_dir` over any source of tree nodes, with [`check_entries`].
pub fn read_dir_with(read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>, tree: &ObjectId) -> RepoResult<Vec<TreeEntry>> {
    let mut out: Vec<TreeEntry> = Vec::new();
    let mut stack = vec![*tree];
    while let Some(id) = stack.pop() {
        match read(&id)? {
            TreeNode::Leaf(entries) => {
                check_entries(tree, out.last().map(|e| e.name.as_slice()), &entries)?;
                out.extend(entries);
            }
            TreeNode::Inner { children, .. } => stack.extend(children.iter().rev().map(|c| c.id)),
        }
    }
    Ok(out)
}

pub fn flatten(store: &Store, tree: &ObjectId) -> RepoResult<FlatTree> {
    flatten_with(&|id| Ok(store.read_decoded::<TreeNode>(id, ObjectKind::Tree)?), tree)
}

/// `flatten` over any source of tree nodes (a clone plans with the ones
/// still in flight).
pub fn flatten_with(read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>, tree: &ObjectId) -> RepoResult<FlatTree> {
    let mut out = FlatTree::new();
    flatten_into(read, tree, &[], &mut out)?;
    Ok(out)
}

fn flatten_into(read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>, tree: &ObjectId, prefix: &[u8], out: &mut FlatTree) -> RepoResult<()> {
    for e in read_dir_with(read, tree)? {
        let mut path = prefix.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(&e.name);
        if e.kind == EntryKind::Dir {
            flatten_into(read, &e.id, &path, out)?;
        } else {
            out.insert(path, FlatEntry { kind: e.kind, id: e.id, size: e.size });
        }
    }
    Ok(())
}

/// Finds one path (file or directory) in a tree.
pub fn lookup(store: &Store, tree: &ObjectId, path: &[u8]) -> RepoResult<Option<FlatEntry>> {
    let mut current = FlatEntry { kind: EntryKind::Dir, id: *tree, size: 0 };
    for part in path.split(|b| *b == b'/').filter(|p| !p.is_empty()) {
        if current.kind != EntryKind::Dir {
            return Ok(None);
        }
        match read_dir(store, &current.id)?.into_iter().find(|e| e.name == part) {
            Some(e) => current = FlatEntry { kind: e.kind, id: e.id, size: e.size },
            None => return Ok(None),
        }
    }
    Ok(Some(current))
}

/// Writes the trees for a flat map (sorted by path bytes) and returns the root.
pub fn build(session: &mut WriteSession<'_>, flat: &[(&[u8], FlatEntry)]) -> RepoResult<ObjectId> {
    Ok(build_dir(session, flat, 0)?.0)
}

/// Builds the directory whose entries are `items` with `strip` bytes of prefix removed.
fn build_dir(session: &mut WriteSession<'_>, items: &[(&[u8], FlatEntry)], strip: usize) -> RepoResult<(ObjectId, u64)> {
    let mut entries: Vec<TreeEntry> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let rest = &items[i].0[strip..];
        match rest.iter().position(|b| *b == b'/') {
            None => {
                let e = items[i].1;
                entries.push(TreeEntry { name: rest.to_vec(), kind: e.kind, id: e.id, size: e.size });
                i += 1;
            }
            Some(slash) => {
                let name = &rest[..slash + 1];
                let end = i + items[i..].iter().take_while(|(p, _)| p[strip..].starts_with(name)).count();
                let (id, size) = build_dir(session, &items[i..end], strip + slash + 1)?;
                entries.push(TreeEntry { name: name[..slash].to_vec(), kind: EntryKind::Dir, id, size });
                i = end;
            }
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let total = entries.iter().map(|e| e.size).sum();
    let mut list = ListBuilder::<TreeList>::new();
    for e in entries {
        list.push(session, e)?;
    }
    Ok((list.finish(session)?.id, total))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
}

impl ChangeKind {
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Deleted => 'D',
            ChangeKind::Modified => 'M',
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Change {
    #[serde(serialize_with = "crate::worktree::ser_path")]
    pub path: Vec<u8>,
    pub kind: ChangeKind,
    pub old: Option<FlatEntry>,
    pub new: Option<FlatEntry>,
}

pub fn diff_flat(old: &FlatTree, new: &FlatTree) -> Vec<Change> {
    let mut out = Vec::new();
    let mut a = old.iter().peekable();
    let mut b = new.iter().peekable();
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some((pa, ea)), Some((pb, eb))) if pa == pb => {
                if ea.id != eb.id || ea.kind != eb.kind {
                    out.push(Change { path: pa.to_vec(), kind: ChangeKind::Modified, old: Some(**ea), new: Some(**eb) });
                }
                a.next();
                b.next();
            }
            (Some((pa, ea)), Some((pb, _))) if pa < pb => {
                out.push(Change { path: pa.to_vec(), kind: ChangeKind::Deleted, old: Some(**ea), new: None });
                a.next();
            }
            (Some((pa, ea)), None) => {
                out.push(Change { path: pa.to_vec(), kind: ChangeKind::Deleted, old: Some(**ea), new: None });
                a.next();
            }
            (_, Some((pb, eb))) => {
                out.push(Change { path: pb.to_vec(), kind: ChangeKind::Added, old: None, new: Some(**eb) });
                b.next();
            }
        }
    }
    out
}
