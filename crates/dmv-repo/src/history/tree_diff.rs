//! The changes between two trees, reading only the folders that differ: what
//! `show` and `log --stat` list for a commit, at a cost that follows the
//! change rather than the size of the tree (a commit of one file in a tree
//! of a million reads the folders on that file's path, not a million
//! entries twice).

use crate::repository::handles::History;
use dmv_store::object::{EntryKind, TreeEntry, TreeNode};
use dmv_store::{ObjectId, Store};

#[cfg(doc)]
use crate::history::tree::MAX_PATH_BYTES;
use crate::history::tree::{
    check_path_len, read_dir, read_dir_with, too_deep, Change, ChangeKind, FlatEntry,
    MAX_PATH_DEPTH,
};
use crate::RepoResult;

/// A pair of folders to compare (either may be absent), their path and depth.
type Pending = (Option<ObjectId>, Option<ObjectId>, Vec<u8>, usize);

/// Every file or symlink that differs between `old` and `new` (None: an
/// empty tree), in path order, as [`crate::diff_flat`] of their flat forms.
pub fn diff_trees(
    store: &Store,
    old: Option<&ObjectId>,
    new: Option<&ObjectId>,
) -> RepoResult<Vec<Change>> {
    let mut out = Vec::new();
    visit_changes(&|t| read_dir(store, t), old, new, &mut |change| {
        out.push(change);
        true
    })?;
    // Tree order puts a folder `a` before the file `a.txt`; paths sort `a.txt` first.
    out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Refuses the tree `new` when it holds a path no file system holds (see
/// [`History::refuse_unholdable_paths`]), reading only the folders that
/// differ from `old`'s (held to the same rule), through `read_node` (trees
/// stored elsewhere: a bucket's).
pub fn refuse_unholdable_paths_between(
    read_node: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    old: Option<&ObjectId>,
    new: &ObjectId,
) -> RepoResult<()> {
    visit_changes(
        &|t| read_dir_with(read_node, t),
        old,
        Some(new),
        &mut |_| true,
    )
}

/// Hands each file or symlink that differs between the trees `old` and
/// `new` (None: an empty tree) to `each`, in no set order, reading folders
/// through `read_node` (trees stored elsewhere: a bucket's) and only those
/// that differ; stops when `each` says false.
pub fn visit_changes_between(
    read_node: &dyn Fn(&ObjectId) -> RepoResult<TreeNode>,
    old: Option<&ObjectId>,
    new: Option<&ObjectId>,
    each: &mut dyn FnMut(Change) -> bool,
) -> RepoResult<()> {
    visit_changes(&|t| read_dir_with(read_node, t), old, new, each)
}

/// Hands each file or symlink that differs between `old` and `new` to
/// `each`, in no set order, holding none of them, until `each` says
/// false; folders come from `read_dir`.
fn visit_changes(
    read_dir: &dyn Fn(&ObjectId) -> RepoResult<Vec<TreeEntry>>,
    old: Option<&ObjectId>,
    new: Option<&ObjectId>,
    each: &mut dyn FnMut(Change) -> bool,
) -> RepoResult<()> {
    // Folders still to compare, with their path and depth: a stack, not
    // recursion, since a tree from elsewhere may nest without end.
    let mut pending: Vec<Pending> = vec![(old.copied(), new.copied(), Vec::new(), 0)];
    while let Some((old_dir, new_dir, prefix, depth)) = pending.pop() {
        if old_dir == new_dir {
            continue;
        }
        let entries = |tree: Option<ObjectId>| tree.map_or(Ok(Vec::new()), |t| read_dir(&t));
        let (mut olds, mut news) = (
            entries(old_dir)?.into_iter().peekable(),
            entries(new_dir)?.into_iter().peekable(),
        );
        loop {
            let (o, n) = match (olds.peek(), news.peek()) {
                (None, None) => break,
                (Some(a), Some(b)) if a.name == b.name => (olds.next(), news.next()),
                (Some(a), Some(b)) if a.name < b.name => (olds.next(), None),
                (Some(_), None) => (olds.next(), None),
                _ => (None, news.next()),
            };
            let Some(name) = o.as_ref().or(n.as_ref()).map(|e| e.name.as_slice()) else {
                break;
            };
            let mut path = Vec::with_capacity(prefix.len() + 1 + name.len());
            path.extend_from_slice(&prefix);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            check_path_len(new.or(old).unwrap_or(&ObjectId([0; 32])), &path)?;
            let (old_file, new_file) = (file(&o), file(&n));
            if old_file.map(|e| (e.kind, e.id)) != new_file.map(|e| (e.kind, e.id)) {
                let kind = match (old_file, new_file) {
                    (None, _) => ChangeKind::Added,
                    (_, None) => ChangeKind::Deleted,
                    _ => ChangeKind::Modified,
                };
                if !each(Change {
                    path: path.clone(),
                    kind,
                    old: old_file,
                    new: new_file,
                }) {
                    return Ok(());
                }
            }
            let (old_sub, new_sub) = (folder(&o), folder(&n));
            if old_sub.is_some() || new_sub.is_some() {
                if depth >= MAX_PATH_DEPTH {
                    return Err(too_deep(new.or(old).unwrap_or(&ObjectId([0; 32]))));
                }
                pending.push((old_sub, new_sub, path, depth + 1));
            }
        }
    }
    Ok(())
}

fn file(e: &Option<TreeEntry>) -> Option<FlatEntry> {
    e.as_ref()
        .filter(|e| e.kind != EntryKind::Dir)
        .map(|e| FlatEntry {
            kind: e.kind,
            id: e.id,
            size: e.size,
        })
}

fn folder(e: &Option<TreeEntry>) -> Option<ObjectId> {
    e.as_ref()
        .filter(|e| e.kind == EntryKind::Dir)
        .map(|e| e.id)
}

/// A change as `--name-status` and `status` list it: a rename pairs a
/// deleted path with an added one.
#[derive(Clone, Debug)]
pub enum Listed {
    /// A change not paired with another.
    Change(Change),
    /// `similarity`: the percentage of the larger version's bytes in chunks
    /// both share (100: the same content).
    Renamed {
        /// The deleted path.
        from: Vec<u8>,
        /// The added path.
        to: Vec<u8>,
        /// Percent, 0 to 100 (see above).
        similarity: u8,
        /// The entry at `from` before.
        old: FlatEntry,
        /// The entry at `to` after.
        new: FlatEntry,
    },
}

impl Listed {
    /// The path it is listed under (a rename's new one).
    pub fn path(&self) -> &[u8] {
        match self {
            Listed::Change(c) => &c.path,
            Listed::Renamed { to, .. } => to,
        }
    }
}

/// Below this share of bytes in common, an added and a deleted file are two changes.
const RENAME_SIMILARITY: u64 = 50;
/// Past this many deleted or added files only exact renames are looked for
/// (each side's chunk lists are read otherwise).
const RENAME_CANDIDATES: usize = 1000;

/// Whether [`find_renames`] may pair the change: a file (not a symlink) added or deleted.
pub(crate) fn rename_candidate(c: &Change) -> bool {
    match c.kind {
        ChangeKind::Deleted => c.old.is_some_and(|e| e.kind != EntryKind::Symlink),
        ChangeKind::Added => c.new.is_some_and(|e| e.kind != EntryKind::Symlink),
        ChangeKind::Modified => false,
    }
}

/// Pairs added files with deleted ones: first those of the same content
/// (git's exact renames), then by the chunks their contents share, which
/// no line-based tool can do for media (a retouched photo that also moved
/// shares most of its chunks). In path order of what is listed.
pub fn find_renames(store: &Store, changes: Vec<Change>) -> RepoResult<Vec<Listed>> {
    let mut deleted: Vec<Option<Change>> = Vec::new();
    let mut added: Vec<Change> = Vec::new();
    let mut out = Vec::new();
    for c in changes {
        match c.kind {
            ChangeKind::Deleted if rename_candidate(&c) => deleted.push(Some(c)),
            ChangeKind::Added if rename_candidate(&c) => added.push(c),
            _ => out.push(Listed::Change(c)),
        }
    }
    let mut by_id: std::collections::HashMap<ObjectId, Vec<usize>> =
        std::collections::HashMap::new();
    for (i, d) in deleted.iter().enumerate() {
        if let Some(e) = d.as_ref().and_then(|d| d.old) {
            by_id.entry(e.id).or_default().push(i);
        }
    }
    let mut unpaired = Vec::new();
    for a in added {
        let Some(new) = a.new else { continue };
        let exact = by_id.get_mut(&new.id).and_then(|v| v.pop());
        match exact.and_then(|i| deleted[i].take()) {
            Some(d) => out.push(Listed::Renamed {
                from: d.path,
                to: a.path,
                similarity: 100,
                old: d.old.unwrap_or(new),
                new,
            }),
            None => unpaired.push(a),
        }
    }
    let remaining: Vec<usize> = (0..deleted.len())
        .filter(|i| deleted[*i].is_some())
        .collect();
    if !unpaired.is_empty()
        && !remaining.is_empty()
        && unpaired.len() <= RENAME_CANDIDATES
        && remaining.len() <= RENAME_CANDIDATES
    {
        // Which deleted files hold each chunk, then for each added file the bytes it shares with each.
        let mut holders: std::collections::HashMap<ObjectId, Vec<usize>> =
            std::collections::HashMap::new();
        for &i in &remaining {
            if let Some(e) = deleted[i].as_ref().and_then(|d| d.old) {
                let chunks: std::collections::HashSet<ObjectId> = chunks_if_here(store, &e.id)
                    .into_iter()
                    .map(|(c, _)| c)
                    .collect();
                for chunk in chunks {
                    holders.entry(chunk).or_default().push(i);
                }
            }
        }
        let mut still = Vec::new();
        for a in unpaired {
            let Some(new) = a.new else { continue };
            let mut shared: std::collections::HashMap<usize, u64> =
                std::collections::HashMap::new();
            let chunks: std::collections::HashMap<ObjectId, u64> =
                chunks_if_here(store, &new.id).into_iter().collect();
            for (chunk, size) in chunks {
                for &i in holders.get(&chunk).into_iter().flatten() {
                    *shared.entry(i).or_default() += size;
                }
            }
            let best = shared
                .into_iter()
                .filter(|(i, _)| deleted[*i].is_some())
                .filter_map(|(i, bytes)| {
                    let old = deleted[i].as_ref()?.old?;
                    let larger = old.size.max(new.size).max(1);
                    Some((bytes.min(larger) * 100 / larger, i))
                })
                .max_by_key(|(percent, i)| (*percent, std::cmp::Reverse(*i)));
            match best
                .filter(|(percent, _)| *percent >= RENAME_SIMILARITY)
                .and_then(|(percent, i)| Some((percent, deleted[i].take()?)))
            {
                Some((percent, d)) => out.push(Listed::Renamed {
                    from: d.path,
                    to: a.path,
                    similarity: percent as u8,
                    old: d.old.unwrap_or(new),
                    new,
                }),
                None => still.push(a),
            }
        }
        unpaired = still;
    }
    out.extend(unpaired.into_iter().map(Listed::Change));
    out.extend(deleted.into_iter().flatten().map(Listed::Change));
    out.sort_by(|a, b| a.path().cmp(b.path()));
    Ok(out)
}

/// A file's chunk list, or none when its nodes cannot be read here (a
/// partial replica without the file's data): pairing by shared chunks is a
/// guess that such a file takes no part in; damage is for fsck to name.
fn chunks_if_here(store: &Store, id: &ObjectId) -> Vec<(ObjectId, u64)> {
    store.chunk_list(id).unwrap_or_default()
}

impl History<'_> {
    /// What a commit changed: its tree against its first parent's (against
    /// an empty tree for a root commit), as `git show` lists it.
    pub fn commit_changes(&self, id: &ObjectId) -> RepoResult<Vec<Change>> {
        let commit = self.commit(id)?;
        let parent_tree = match commit.parents.first() {
            Some(p) => Some(self.commit(p)?.tree),
            None => None,
        };
        diff_trees(&self.store, parent_tree.as_ref(), Some(&commit.tree))
    }

    /// Refuses `commits` (new here: a push's) when one holds a path no
    /// file system holds, longer than [`MAX_PATH_BYTES`] or deeper than
    /// [`MAX_PATH_DEPTH`] (a name is checked with its tree, a path only
    /// where trees meet, so a push of folders each fine alone made every
    /// later checkout fail). Each tree is compared with its first parent's,
    /// held to the same rule, so the cost follows what changed.
    pub fn refuse_unholdable_paths(&self, commits: &[ObjectId]) -> RepoResult<()> {
        for id in commits {
            let commit = self.commit(id)?;
            let parent_tree = match commit.parents.first() {
                Some(p) => Some(self.commit(p)?.tree),
                None => None,
            };
            visit_changes(
                &|t| read_dir(&self.store, t),
                parent_tree.as_ref(),
                Some(&commit.tree),
                &mut |_| true,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tree::{build, diff_flat, flatten};
    use proptest::prelude::*;

    fn tree_of(store: &Store, files: &std::collections::BTreeMap<Vec<u8>, u8>) -> ObjectId {
        let mut session = store.begin_write().unwrap();
        let flat: Vec<(Vec<u8>, FlatEntry)> = files
            .iter()
            .map(|(p, v)| {
                (
                    p.clone(),
                    FlatEntry {
                        kind: EntryKind::File,
                        id: ObjectId([*v; 32]),
                        size: *v as u64,
                    },
                )
            })
            .collect();
        let id = build(&mut session, flat.iter().map(|(p, e)| (p.as_slice(), *e))).unwrap();
        session.finish().unwrap();
        id
    }

    fn paths() -> impl Strategy<Value = std::collections::BTreeMap<Vec<u8>, u8>> {
        // Few names, so that folders and files share them (`a`, `a/b`, `a.b`).
        let part = prop::sample::select(vec![&b"a"[..], b"b", b"a.b", b"c"]);
        let path = prop::collection::vec(part, 1..4).prop_map(|parts| parts.join(&b'/'));
        prop::collection::btree_map(path, 1u8..4, 0..12)
    }

    /// A map of paths where no path is also a folder of another (as a tree holds them).
    fn as_tree(
        mut files: std::collections::BTreeMap<Vec<u8>, u8>,
    ) -> std::collections::BTreeMap<Vec<u8>, u8> {
        let all: Vec<Vec<u8>> = files.keys().cloned().collect();
        files.retain(|p, _| {
            !all.iter()
                .any(|q| q.len() > p.len() && q.starts_with(p) && q[p.len()] == b'/')
        });
        files
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn the_tree_diff_is_the_flat_diff(old in paths(), new in paths()) {
            let dir = tempfile::tempdir().unwrap();
            Store::create(dir.path()).unwrap();
            let store = Store::open(dir.path(), dmv_store::ChunkParams::default(), 64 << 20).unwrap();
            let (old, new) = (tree_of(&store, &as_tree(old)), tree_of(&store, &as_tree(new)));
            let expected = diff_flat(&flatten(&store, &old).unwrap(), &flatten(&store, &new).unwrap());
            let got = diff_trees(&store, Some(&old), Some(&new)).unwrap();
            let show = |c: &[Change]| c.iter().map(|c| (c.path.clone(), c.kind, c.old, c.new)).collect::<Vec<_>>();
            prop_assert_eq!(show(&got), show(&expected));
        }
    }
}
