//! Trees as flat maps of paths, and back.

use std::collections::BTreeMap;

use dmv_store::object::{EntryKind, TreeEntry, TreeNode};
use dmv_store::{ListBuilder, ObjectId, ObjectKind, Store, TreeList, WriteSession};
use serde::{Deserialize, Serialize};

use crate::{RepoError, RepoResult};

/// One entry of a tree as [`FlatTree`] holds it (and checkouts and diffs use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlatEntry {
    /// File, executable, symlink, or (for a folder looked up by path) directory.
    pub kind: EntryKind,
    /// The file's content (a chunk or a file node), a symlink's target chunk, or a directory's tree.
    pub id: ObjectId,
    /// Content length in bytes (a directory's: its files' total).
    pub size: u64,
}

/// Every non-directory entry of a tree, by full path ('/'-separated bytes).
pub type FlatTree = BTreeMap<Vec<u8>, FlatEntry>;

/// The most directories a path may nest (so at most this many `/` in a
/// path): as many as fit in [`MAX_PATH_BYTES`]. Trees come from other
/// replicas too: deeper ones are refused as malformed, so no walk is as
/// deep as a hostile replica would like. Every walk here is iterative
/// besides, and within one directory a node's children are exactly one
/// level below it, so its nodes nest at most 256 deep.
pub const MAX_PATH_DEPTH: usize = 2047;
/// The longest name an entry may have, in bytes: what Linux, macOS and
/// Windows file systems hold (a longer one could be committed from a
/// browser, and then no clone anywhere could check it out).
pub const MAX_NAME_BYTES: usize = 255;
/// The longest path a tree may hold, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

pub(crate) fn too_deep(tree: &ObjectId) -> RepoError {
    RepoError::MalformedTree {
        tree: *tree,
        detail: format!("its directories nest more than {MAX_PATH_DEPTH} deep"),
    }
}

/// Refuses a path past [`MAX_PATH_BYTES`], as the walks meet it.
pub(crate) fn check_path_len(tree: &ObjectId, path: &[u8]) -> RepoResult<()> {
    match path.len() > MAX_PATH_BYTES {
        true => Err(RepoError::MalformedTree {
            tree: *tree,
            detail: format!(
                "it holds a path of more than {MAX_PATH_BYTES} bytes, which no file system holds"
            ),
        }),
        false => Ok(()),
    }
}

/// Whether a tree may name an entry so. Trees come from other replicas too:
/// a name that is empty, `.` or `..`, holds a `/` or a NUL, or is `.dmv`
/// (in any case) would make a checkout write outside its place, and one
/// longer than [`MAX_NAME_BYTES`] could never be checked out, so a tree
/// that has one is refused as a whole.
pub fn valid_entry_name(name: &[u8]) -> bool {
    !(name.is_empty()
        || name.len() > MAX_NAME_BYTES
        || name == b"."
        || name == b".."
        || name.contains(&b'/')
        || name.contains(&0)
        || name.eq_ignore_ascii_case(b".dmv"))
}

/// The entries of one directory, in name order, across its nodes.
pub fn read_dir(store: &Store, tree: &ObjectId) -> RepoResult<Vec<TreeEntry>> {
    read_dir_with(&tree_reader(store), tree)
}

/// A page of a folder: up to `limit` entries named after `after`, and
/// whether more follow. The folder's nodes are read in order and only one
/// leaf is held at a time, so a page of a folder of a million files does
/// not load the million.
pub fn read_dir_page(
    store: &Store,
    tree: &ObjectId,
    after: Option<&[u8]>,
    limit: usize,
) -> RepoResult<(Vec<TreeEntry>, bool)> {
    let mut page = Vec::new();
    let mut stack: Vec<ObjectId> = vec![*tree];
    while let Some(id) = stack.pop() {
        match store.read_decoded::<TreeNode>(&id, ObjectKind::Tree)? {
            TreeNode::Leaf(entries) => {
                for e in entries
                    .into_iter()
                    .filter(|e| after.is_none_or(|a| e.name.as_slice() > a))
                {
                    if page.len() == limit {
                        return Ok((page, true));
                    }
                    page.push(e);
                }
            }
            TreeNode::Inner { children, .. } => stack.extend(children.iter().rev().map(|c| c.id)),
        }
        if stack.len() > 4096 {
            return Err(RepoError::MalformedTree {
                tree: *tree,
                detail: "its nodes nest too deep".into(),
            });
        }
    }
    Ok((page, false))
}

/// Checks that `entries` (following `before`, the last name of the same
/// directory seen so far) have valid names in strictly increasing order, so
/// none appears twice.
pub fn check_entries(
    tree: &ObjectId,
    before: Option<&[u8]>,
    entries: &[TreeEntry],
) -> RepoResult<()> {
    let mut prev = before;
    for e in entries {
        if !valid_entry_name(&e.name) || prev.is_some_and(|p| p >= e.name.as_slice()) {
            return Err(RepoError::MalformedTree {
                tree: *tree,
                detail: format!(
                    "entry {:?} is not a valid name or out of order",
                    String::from_utf8_lossy(&e.name)
                ),
            });
        }
        prev = Some(&e.name);
    }
    Ok(())
}

/// `read_dir` over any source of tree nodes, with [`check_entries`], and a
/// check that each inner node's children are one level below it (level 0:
/// leaves).
pub fn read_dir_with(
    read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    tree: &ObjectId,
) -> RepoResult<Vec<TreeEntry>> {
    let mut out: Vec<TreeEntry> = Vec::new();
    // Nodes to read, each with the level its parent says it has (none for the root).
    let mut stack: Vec<(ObjectId, Option<u8>)> = vec![(*tree, None)];
    while let Some((id, expected)) = stack.pop() {
        let node = read(&id)?;
        let level = match &node {
            TreeNode::Leaf(_) => 0,
            TreeNode::Inner { level, .. } => *level,
        };
        let inner_at_zero = matches!(node, TreeNode::Inner { level: 0, .. });
        if inner_at_zero || expected.is_some_and(|e| e != level) {
            let want = expected.map_or("a level above 0".to_string(), |e| format!("level {e}"));
            return Err(RepoError::MalformedTree {
                tree: *tree,
                detail: format!("its node {id} has level {level} where {want} belongs"),
            });
        }
        match node {
            TreeNode::Leaf(entries) => {
                check_entries(tree, out.last().map(|e| e.name.as_slice()), &entries)?;
                out.extend(entries);
            }
            TreeNode::Inner { children, level } => {
                stack.extend(children.iter().rev().map(|c| (c.id, Some(level - 1))))
            }
        }
    }
    Ok(out)
}

/// Every file of `tree` in `store`, by path; fails with [`RepoError::MalformedTree`]
/// on a tree that breaks the rules.
pub fn flatten(store: &Store, tree: &ObjectId) -> RepoResult<FlatTree> {
    flatten_with(&tree_reader(store), tree)
}

/// `flatten` over any source of tree nodes (a clone plans with the ones
/// still in flight). Iterative; directories nesting deeper than
/// [`MAX_PATH_DEPTH`] make the tree malformed.
pub fn flatten_with(
    read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    tree: &ObjectId,
) -> RepoResult<FlatTree> {
    let mut out = FlatTree::new();
    visit_files(read, tree, &mut |path, e| {
        out.insert(path, e);
    })?;
    Ok(out)
}

/// The files of a tree as one vector sorted by path: half the memory of a
/// [`FlatTree`] grown entry by entry (a checkout into an empty working tree
/// of a million files holds it whole).
pub fn flatten_sorted(store: &Store, tree: &ObjectId) -> RepoResult<Vec<(Box<[u8]>, FlatEntry)>> {
    let read = tree_reader(store);
    // Walked in path order: no sort of the whole list afterwards. Boxed: a
    // path's capacity is not kept (8 bytes a file, 8 MB at a million).
    FilesInOrder::new(&read, tree)?
        .map(|file| file.map(|(path, e)| (path.into_boxed_slice(), e)))
        .collect()
}

/// Every file of a tree with its path, in no particular order.
pub fn visit_files(
    read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    tree: &ObjectId,
    visit: &mut dyn FnMut(Vec<u8>, FlatEntry),
) -> RepoResult<()> {
    // Directories still to read: their tree, path and depth (the root is 0).
    let mut pending: Vec<(ObjectId, Vec<u8>, usize)> = vec![(*tree, Vec::new(), 0)];
    while let Some((dir, prefix, depth)) = pending.pop() {
        for e in read_dir_with(read, &dir)? {
            let mut path = Vec::with_capacity(prefix.len() + 1 + e.name.len());
            path.extend_from_slice(&prefix);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(&e.name);
            check_path_len(tree, &path)?;
            if e.kind == EntryKind::Dir {
                if depth >= MAX_PATH_DEPTH {
                    return Err(too_deep(tree));
                }
                pending.push((e.id, path, depth + 1));
            } else {
                visit(
                    path,
                    FlatEntry {
                        kind: e.kind,
                        id: e.id,
                        size: e.size,
                    },
                );
            }
        }
    }
    Ok(())
}

/// Reads tree nodes from `store`, for the walks that take a reader.
pub fn tree_reader(store: &Store) -> impl Fn(&ObjectId) -> RepoResult<TreeNode> + '_ {
    |id| Ok(store.read_decoded::<TreeNode>(id, ObjectKind::Tree)?)
}

/// The files of a tree in path order, read a folder at a time: what it
/// holds is the folders along one path, not the tree (a status comparing
/// HEAD with a dirstate of a million changes flattened HEAD's tree whole).
pub struct FilesInOrder<'r> {
    read: &'r dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    tree: ObjectId,
    /// The folders being listed: each one's path and its entries still to
    /// visit, the next one last.
    open: Vec<(Vec<u8>, Vec<TreeEntry>)>,
    /// Whether to enter the folder at a path (None: every folder).
    enter: Option<&'r EnterFolder<'r>>,
}

/// Whether a walk enters the folder at a path.
pub type EnterFolder<'a> = dyn Fn(&[u8]) -> bool + 'a;

impl<'r> FilesInOrder<'r> {
    /// A walk of every file of `tree`, in path order, nodes read through `read`.
    pub fn new(
        read: &'r dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
        tree: &ObjectId,
    ) -> RepoResult<FilesInOrder<'r>> {
        let root = Self::folder(read, tree)?;
        Ok(FilesInOrder {
            read,
            tree: *tree,
            open: vec![(Vec::new(), root)],
            enter: None,
        })
    }

    /// The files in the folders `enter` accepts (its path given), and in
    /// none of the others: what a command given a few paths of a large
    /// tree reads is the folders along them, not the tree.
    pub fn entering(
        read: &'r dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
        tree: &ObjectId,
        enter: &'r EnterFolder<'r>,
    ) -> RepoResult<FilesInOrder<'r>> {
        Ok(FilesInOrder {
            enter: Some(enter),
            ..Self::new(read, tree)?
        })
    }

    /// A folder's entries, the first in path order last: a folder `a`
    /// holds paths `a/…`, which sort after a file `a-b` (`-` < `/`), though
    /// its name sorts before.
    fn folder(
        read: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
        id: &ObjectId,
    ) -> RepoResult<Vec<TreeEntry>> {
        fn key(e: &TreeEntry) -> impl Iterator<Item = u8> + '_ {
            e.name
                .iter()
                .copied()
                .chain((e.kind == EntryKind::Dir).then_some(b'/'))
        }
        let mut entries = read_dir_with(read, id)?;
        // In name order already (checked): usually in path order too, reversed.
        entries.reverse();
        if !entries
            .windows(2)
            .all(|w| key(&w[0]).cmp(key(&w[1])).is_ge())
        {
            entries.sort_by(|a, b| key(b).cmp(key(a)));
        }
        Ok(entries)
    }
}

impl Iterator for FilesInOrder<'_> {
    type Item = RepoResult<(Vec<u8>, FlatEntry)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (prefix, entries) = self.open.last_mut()?;
            let Some(e) = entries.pop() else {
                self.open.pop();
                continue;
            };
            let mut path = Vec::with_capacity(prefix.len() + 1 + e.name.len());
            path.extend_from_slice(prefix);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(&e.name);
            if let Err(err) = check_path_len(&self.tree, &path) {
                self.open.clear();
                return Some(Err(err));
            }
            if e.kind != EntryKind::Dir {
                return Some(Ok((
                    path,
                    FlatEntry {
                        kind: e.kind,
                        id: e.id,
                        size: e.size,
                    },
                )));
            }
            if self.enter.is_some_and(|enter| !enter(&path)) {
                continue;
            }
            let opened = match self.open.len() > MAX_PATH_DEPTH {
                true => Err(too_deep(&self.tree)),
                false => Self::folder(self.read, &e.id),
            };
            match opened {
                Ok(entries) => self.open.push((path, entries)),
                Err(err) => {
                    self.open.clear();
                    return Some(Err(err));
                }
            }
        }
    }
}

/// Finds one path (file or directory) in a tree.
pub fn lookup(store: &Store, tree: &ObjectId, path: &[u8]) -> RepoResult<Option<FlatEntry>> {
    lookup_in(
        &mut |dir, name| Ok(read_dir(store, dir)?.into_iter().find(|e| e.name == name)),
        tree,
        path,
    )
}

/// Finds the entry of a name in a folder (a tree id).
pub type FindInFolder<'a> = dyn FnMut(&ObjectId, &[u8]) -> RepoResult<Option<TreeEntry>> + 'a;

/// [`lookup`], finding each name in its folder with `find` (which may keep the folders it read).
pub fn lookup_in(
    find: &mut FindInFolder<'_>,
    tree: &ObjectId,
    path: &[u8],
) -> RepoResult<Option<FlatEntry>> {
    let mut current = FlatEntry {
        kind: EntryKind::Dir,
        id: *tree,
        size: 0,
    };
    for part in path.split(|b| *b == b'/').filter(|p| !p.is_empty()) {
        if current.kind != EntryKind::Dir {
            return Ok(None);
        }
        match find(&current.id, part)? {
            Some(e) => {
                current = FlatEntry {
                    kind: e.kind,
                    id: e.id,
                    size: e.size,
                }
            }
            None => return Ok(None),
        }
    }
    Ok(Some(current))
}

/// Writes the trees for a flat map (sorted by path bytes) and returns the root.
/// Iterative: the directories being built are a stack, innermost last (the
/// items of one directory are contiguous, as sorted paths sharing a prefix
/// are); a path nesting more than [`MAX_PATH_DEPTH`] directories is refused.
pub fn build<'p>(
    session: &mut WriteSession<'_>,
    flat: impl IntoIterator<Item = (&'p [u8], FlatEntry)>,
) -> RepoResult<ObjectId> {
    struct OpenDir {
        name: Vec<u8>,
        /// Length of `prefix` while this directory is open.
        prefix_len: usize,
        entries: Vec<TreeEntry>,
    }
    fn close(
        session: &mut WriteSession<'_>,
        open: &mut Vec<OpenDir>,
        prefix: &mut Vec<u8>,
    ) -> RepoResult<()> {
        let Some(dir) = open.pop() else { return Ok(()) };
        let (id, size) = write_dir(session, dir.entries)?;
        if let Some(parent) = open.last_mut() {
            prefix.truncate(parent.prefix_len);
            parent.entries.push(TreeEntry {
                name: dir.name,
                kind: EntryKind::Dir,
                id,
                size,
            });
        }
        Ok(())
    }
    let mut open = vec![OpenDir {
        name: Vec::new(),
        prefix_len: 0,
        entries: Vec::new(),
    }];
    // The innermost open directory's path with a trailing '/' (empty at the root).
    let mut prefix: Vec<u8> = Vec::new();
    for (path, e) in flat {
        while open.len() > 1 && !path.starts_with(&prefix) {
            close(session, &mut open, &mut prefix)?;
        }
        let mut start = prefix.len();
        while let Some(slash) = path[start..].iter().position(|b| *b == b'/') {
            if open.len() > MAX_PATH_DEPTH {
                let shown = String::from_utf8_lossy(&path[..path.len().min(80)]).into_owned();
                return Err(RepoError::PathTooDeep {
                    path: shown,
                    max: MAX_PATH_DEPTH,
                });
            }
            prefix.extend_from_slice(&path[start..start + slash + 1]);
            open.push(OpenDir {
                name: path[start..start + slash].to_vec(),
                prefix_len: prefix.len(),
                entries: Vec::new(),
            });
            start += slash + 1;
        }
        if let Some(dir) = open.last_mut() {
            dir.entries.push(TreeEntry {
                name: path[start..].to_vec(),
                kind: e.kind,
                id: e.id,
                size: e.size,
            });
        }
    }
    while open.len() > 1 {
        close(session, &mut open, &mut prefix)?;
    }
    let root = open.pop().map(|d| d.entries).unwrap_or_default();
    Ok(write_dir(session, root)?.0)
}

/// A tree like `root` (None: an empty one) with `files` put into `folder`
/// ('/'-separated, made where missing), replacing entries of the same name;
/// only the folders on the way down are read and written again. A file
/// standing where a folder of the way should be is refused.
pub fn put_in_folder(
    session: &mut WriteSession<'_>,
    root: Option<&ObjectId>,
    folder: &[u8],
    files: Vec<TreeEntry>,
) -> RepoResult<ObjectId> {
    let parts: Vec<&[u8]> = folder
        .split(|b| *b == b'/')
        .filter(|p| !p.is_empty())
        .collect();
    // Each folder's entries from the root down; `parts[i]` names the way out of level i.
    let mut levels = Vec::with_capacity(parts.len() + 1);
    let mut current = root.copied();
    for depth in 0..=parts.len() {
        let entries = match &current {
            Some(id) => read_dir(session.store(), id)?,
            None => Vec::new(),
        };
        current = None;
        if let Some(name) = parts.get(depth) {
            match entries.iter().find(|e| e.name == *name) {
                Some(e) if e.kind == EntryKind::Dir => current = Some(e.id),
                Some(_) => {
                    let path = String::from_utf8_lossy(&parts[..=depth].join(&b'/')).into_owned();
                    return Err(RepoError::BadPath {
                        path,
                        reason: "it is a file, not a folder",
                    });
                }
                None => {}
            }
        }
        levels.push(entries);
    }
    let mut inner = levels.pop().unwrap_or_default();
    inner.retain(|e| !files.iter().any(|f| f.name == e.name));
    inner.extend(files);
    let (mut id, mut size) = write_dir(session, inner)?;
    for (mut entries, name) in levels.into_iter().zip(parts).rev() {
        entries.retain(|e| e.name != name);
        entries.push(TreeEntry {
            name: name.to_vec(),
            kind: EntryKind::Dir,
            id,
            size,
        });
        (id, size) = write_dir(session, entries)?;
    }
    Ok(id)
}

/// Writes one directory's nodes; returns its id and the total size of its files.
pub fn write_dir(
    session: &mut WriteSession<'_>,
    mut entries: Vec<TreeEntry>,
) -> RepoResult<(ObjectId, u64)> {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    // Refused here, before a commit refers to it: a tree every reader would reject.
    for (i, e) in entries.iter().enumerate() {
        let shown = || String::from_utf8_lossy(&e.name).into_owned();
        if !valid_entry_name(&e.name) {
            return Err(RepoError::BadPath {
                path: shown(),
                reason: "a tree cannot hold that name",
            });
        }
        if i > 0 && entries[i - 1].name == e.name {
            return Err(RepoError::BadPath {
                path: shown(),
                reason: "it is both a file and a folder (is a folder on its way a symlink?)",
            });
        }
    }
    let total = entries.iter().map(|e| e.size).sum();
    let mut list = ListBuilder::<TreeList>::new();
    for e in entries {
        list.push(session, e)?;
    }
    Ok((list.finish(session)?.id, total))
}

/// How a path differs between two trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ChangeKind {
    /// Only in the new tree.
    Added,
    /// Only in the old tree.
    Deleted,
    /// In both, with a different kind or content.
    Modified,
}

impl ChangeKind {
    /// `A`, `D` or `M`, as status and diff listings show it.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Deleted => 'D',
            ChangeKind::Modified => 'M',
        }
    }
}

/// One path that differs between two trees.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// The path, '/'-separated bytes.
    #[serde(serialize_with = "crate::paths::ser_path")]
    pub path: Vec<u8>,
    /// Added, deleted or modified.
    pub kind: ChangeKind,
    /// The entry in the old tree; None when added.
    pub old: Option<FlatEntry>,
    /// The entry in the new tree; None when deleted.
    pub new: Option<FlatEntry>,
}

/// The paths that differ between `old` and `new`, in path order.
pub fn diff_flat(old: &FlatTree, new: &FlatTree) -> Vec<Change> {
    diff_sorted(
        old.iter().map(|(p, e)| (p.as_slice(), *e)),
        new.iter().map(|(p, e)| (p.as_slice(), *e)),
    )
}

/// [`diff_flat`] of two lists of entries in path order, each path once
/// (a flat tree's, or a dirstate's without a copy of it).
pub fn diff_sorted<A: AsRef<[u8]>, B: AsRef<[u8]>>(
    old: impl Iterator<Item = (A, FlatEntry)>,
    new: impl Iterator<Item = (B, FlatEntry)>,
) -> Vec<Change> {
    let mut out = Vec::new();
    let _ = diff_sorted_each(old, new, &mut |c| {
        out.push(c);
        Ok::<_, std::convert::Infallible>(())
    });
    out
}

/// [`diff_sorted`], each change handed to `each` as it is found; the first error stops it.
pub fn diff_sorted_each<A: AsRef<[u8]>, B: AsRef<[u8]>, E>(
    old: impl Iterator<Item = (A, FlatEntry)>,
    new: impl Iterator<Item = (B, FlatEntry)>,
    each: &mut dyn FnMut(Change) -> Result<(), E>,
) -> Result<(), E> {
    let mut a = old.peekable();
    let mut b = new.peekable();
    loop {
        let change = match (a.peek(), b.peek()) {
            (None, None) => return Ok(()),
            (Some((pa, ea)), Some((pb, eb))) if pa.as_ref() == pb.as_ref() => {
                let change = (ea.id != eb.id || ea.kind != eb.kind).then(|| Change {
                    path: pa.as_ref().to_vec(),
                    kind: ChangeKind::Modified,
                    old: Some(*ea),
                    new: Some(*eb),
                });
                a.next();
                b.next();
                change
            }
            (Some((pa, ea)), Some((pb, _))) if pa.as_ref() < pb.as_ref() => {
                let change = Change {
                    path: pa.as_ref().to_vec(),
                    kind: ChangeKind::Deleted,
                    old: Some(*ea),
                    new: None,
                };
                a.next();
                Some(change)
            }
            (Some((pa, ea)), None) => {
                let change = Change {
                    path: pa.as_ref().to_vec(),
                    kind: ChangeKind::Deleted,
                    old: Some(*ea),
                    new: None,
                };
                a.next();
                Some(change)
            }
            (_, Some((pb, eb))) => {
                let change = Change {
                    path: pb.as_ref().to_vec(),
                    kind: ChangeKind::Added,
                    old: None,
                    new: Some(*eb),
                };
                b.next();
                Some(change)
            }
        };
        if let Some(change) = change {
            each(change)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Trees held in memory by made-up ids, for walks that take a reader.
    struct Trees(std::collections::HashMap<ObjectId, TreeNode>);

    impl Trees {
        /// Adds the folder holding `files` (paths under it) and returns its id.
        fn folder(&mut self, files: &[(Vec<u8>, u64)]) -> ObjectId {
            let mut children: BTreeMap<Vec<u8>, Vec<(Vec<u8>, u64)>> = BTreeMap::new();
            let mut entries = Vec::new();
            for (path, size) in files {
                match path.iter().position(|b| *b == b'/') {
                    Some(at) => children
                        .entry(path[..at].to_vec())
                        .or_default()
                        .push((path[at + 1..].to_vec(), *size)),
                    None => entries.push(TreeEntry {
                        name: path.clone(),
                        kind: EntryKind::File,
                        id: ObjectId([*size as u8; 32]),
                        size: *size,
                    }),
                }
            }
            for (name, below) in children {
                let id = self.folder(&below);
                entries.push(TreeEntry {
                    name,
                    kind: EntryKind::Dir,
                    id,
                    size: 0,
                });
            }
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            let id = ObjectId::hash(ObjectKind::Tree, format!("{entries:?}").as_bytes());
            self.0.insert(id, TreeNode::Leaf(entries));
            id
        }
    }

    fn in_order(trees: &Trees, root: &ObjectId) -> RepoResult<Vec<Vec<u8>>> {
        let read = |id: &ObjectId| {
            trees.0.get(id).cloned().ok_or_else(|| RepoError::Scan {
                detail: "no such tree".into(),
            })
        };
        FilesInOrder::new(&read, root)?
            .map(|f| f.map(|(p, _)| p))
            .collect()
    }

    #[test]
    fn a_folder_s_files_come_where_their_paths_sort_not_where_its_name_does() {
        let mut trees = Trees(Default::default());
        let paths: Vec<&[u8]> = vec![
            b"a/x", b"a-b", b"a.c", b"a/y/z", b"a0", b"b", b"a/y-1", b"a/y.d/e",
        ];
        let root = trees.folder(&paths.iter().map(|p| (p.to_vec(), 1)).collect::<Vec<_>>());
        let mut want: Vec<Vec<u8>> = paths.iter().map(|p| p.to_vec()).collect();
        want.sort();
        assert_eq!(in_order(&trees, &root).unwrap(), want);
    }

    proptest! {
        /// Any names (`-`, `.`, `0` sort around `/`) walk in the order their paths sort.
        #[test]
        fn any_tree_walks_in_path_order(paths in proptest::collection::btree_set("[a-c0-][a-c.0-]{0,2}(/[a-c0-][a-c.0-]{0,2}){0,3}", 1..40)) {
            // A path that is also another's folder cannot be in one tree.
            let files: Vec<Vec<u8>> = paths.iter().filter(|p| !paths.iter().any(|q| q.starts_with(&format!("{p}/")))).map(|p| p.as_bytes().to_vec()).collect();
            let mut trees = Trees(Default::default());
            let root = trees.folder(&files.iter().map(|p| (p.clone(), 1)).collect::<Vec<_>>());
            let mut want = files.clone();
            want.sort();
            prop_assert_eq!(in_order(&trees, &root).unwrap(), want);
        }
    }

    #[test]
    fn a_missing_folder_is_an_error_and_ends_the_walk() {
        let mut trees = Trees(Default::default());
        let root = trees.folder(&[(b"a/b".to_vec(), 1), (b"c".to_vec(), 2)]);
        let TreeNode::Leaf(entries) = &trees.0[&root] else {
            unreachable!()
        };
        let folder = entries[0].id;
        trees.0.remove(&folder);
        let read = |id: &ObjectId| {
            trees.0.get(id).cloned().ok_or_else(|| RepoError::Scan {
                detail: "no such tree".into(),
            })
        };
        let walked: Vec<_> = FilesInOrder::new(&read, &root).unwrap().collect();
        assert!(
            matches!(walked.as_slice(), [Err(RepoError::Scan { .. })]),
            "{walked:?}"
        );
    }

    #[test]
    fn a_walk_given_a_path_reads_the_folders_along_it_only() {
        let mut trees = Trees(Default::default());
        let paths: Vec<&[u8]> = vec![b"a/x", b"a/y/z", b"ab/c", b"b/c/d", b"b/e", b"f"];
        let root = trees.folder(&paths.iter().map(|p| (p.to_vec(), 1)).collect::<Vec<_>>());
        let reads = std::cell::Cell::new(0);
        let read = |id: &ObjectId| {
            reads.set(reads.get() + 1);
            trees.0.get(id).cloned().ok_or_else(|| RepoError::Scan {
                detail: "no such tree".into(),
            })
        };
        let walk = |spec: &[u8]| {
            reads.set(0);
            let enter = |dir: &[u8]| crate::paths::may_hold(dir, spec);
            let files: Vec<Vec<u8>> = FilesInOrder::entering(&read, &root, &enter)
                .unwrap()
                .map(|f| f.unwrap().0)
                .filter(|p| crate::paths::matches(p, spec))
                .collect();
            (files, reads.get())
        };
        // The root and `a` (not `ab`, whose name starts the same, nor `a/y`).
        assert_eq!(walk(b"a/x"), (vec![b"a/x".to_vec()], 2));
        assert_eq!(walk(b"a"), (vec![b"a/x".to_vec(), b"a/y/z".to_vec()], 3));
        assert_eq!(walk(b"b/c"), (vec![b"b/c/d".to_vec()], 3));
        assert_eq!(walk(b"f"), (vec![b"f".to_vec()], 1));
        assert_eq!(walk(b"nothing/here"), (vec![], 1));
    }

    proptest! {
        /// Any tree's files come out in path order, each once, as a flattened tree lists them.
        #[test]
        fn files_come_in_path_order(paths in proptest::collection::btree_set(proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'-'), Just(b'/'), Just(b'.')], 1..7), 0..40)) {
            // Only paths that can be files together: valid names, no file that is also a folder.
            let paths: Vec<Vec<u8>> = paths.into_iter().filter(|p| p.split(|b| *b == b'/').all(valid_entry_name)).collect();
            let paths: Vec<Vec<u8>> = paths.iter().filter(|p| !paths.iter().any(|q| q.len() > p.len() && q.starts_with(p) && q[p.len()] == b'/')).cloned().collect();
            let mut trees = Trees(Default::default());
            let root = trees.folder(&paths.iter().map(|p| (p.clone(), 1)).collect::<Vec<_>>());
            let read = |id: &ObjectId| trees.0.get(id).cloned().ok_or_else(|| RepoError::Scan { detail: "no such tree".into() });
            let flat: Vec<Vec<u8>> = flatten_with(&read, &root).unwrap().into_keys().collect();
            prop_assert_eq!(&flat, &paths);
            prop_assert_eq!(in_order(&trees, &root).unwrap(), paths.clone());
            // Entering only the folders that may hold a path's files finds each of them.
            for spec in paths.iter().flat_map(|p| (1..=p.len()).map(|n| p[..n].to_vec())) {
                let enter = |dir: &[u8]| crate::paths::may_hold(dir, &spec);
                let entered: Vec<Vec<u8>> = FilesInOrder::entering(&read, &root, &enter).unwrap().map(|f| f.unwrap().0).filter(|p| crate::paths::matches(p, &spec)).collect();
                let want: Vec<Vec<u8>> = paths.iter().filter(|p| crate::paths::matches(p, &spec)).cloned().collect();
                prop_assert_eq!(entered, want);
            }
        }
    }
}
