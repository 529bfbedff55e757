//! What a mounted working tree knows of its names: the tracked files
//! whose data is absent (the dirstate's absent entries), shown as files
//! of their real size in folders that may not exist on disk, read again
//! whenever the dirstate file changes (a `get`, a `drop`, a commit from
//! another command); and the inode number the kernel knows each path by.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::SystemTime;

use dmv_repo::store::object::EntryKind;
use dmv_repo::store::ObjectId;
use dmv_repo::{RepoResult, Repository};

/// A path inside the working tree: `/`-separated bytes, "" the root.
pub type RelPath = Vec<u8>;

/// The inode number of the root.
pub const ROOT: u64 = 1;

/// A tracked file whose data is not here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbsentFile {
    /// Its content (a chunk or a file node; a symlink's target).
    pub id: ObjectId,
    /// Its length.
    pub size: u64,
    /// File, executable or symlink.
    pub kind: EntryKind,
}

impl AbsentFile {
    /// Its entry, as a fetch of its data takes it.
    pub fn entry(&self) -> dmv_repo::FlatEntry {
        dmv_repo::FlatEntry {
            kind: self.kind,
            id: self.id,
            size: self.size,
        }
    }
}

/// The absent files, and the folders they imply (each with its children's names).
#[derive(Default)]
pub struct Absent {
    files: HashMap<RelPath, AbsentFile>,
    folders: HashMap<RelPath, BTreeSet<Vec<u8>>>,
    /// The dirstate file's modification time and length when read.
    stamp: Option<(SystemTime, u64)>,
    /// Whether it was read once (what the kernel may know of).
    read: bool,
    /// The paths whose absent file changed, came or went since the
    /// kernel was last told (see [`Absent::take_changed`]).
    changed: Vec<RelPath>,
}

/// The parent folder of `path` and its last name.
pub fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&[], path),
    }
}

/// `name` inside folder `parent`.
pub fn join(parent: &[u8], name: &[u8]) -> RelPath {
    if parent.is_empty() {
        name.to_vec()
    } else {
        [parent, b"/", name].concat()
    }
}

fn stamp_of(repo: &Repository) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(repo.dmv.join("dirstate")).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl Absent {
    /// Reads the absent entries again if the dirstate changed since.
    pub fn refresh(&mut self, repo: &Repository) -> RepoResult<()> {
        let stamp = stamp_of(repo);
        if stamp.is_some() && stamp == self.stamp {
            return Ok(());
        }
        let ds = repo.load_dirstate()?;
        let mut fresh = Absent {
            stamp,
            read: true,
            changed: std::mem::take(&mut self.changed),
            ..Absent::default()
        };
        for (path, entry) in ds.entries.iter().filter(|(_, e)| e.is_absent()) {
            fresh.files.insert(
                path.to_vec(),
                AbsentFile {
                    id: entry.id,
                    size: entry.size,
                    kind: entry.kind,
                },
            );
            // Each folder up to the root lists the name below it.
            let mut child: &[u8] = path;
            loop {
                let (parent, name) = split(child);
                let new = fresh
                    .folders
                    .entry(parent.to_vec())
                    .or_default()
                    .insert(name.to_vec());
                if !new || child.is_empty() || parent.is_empty() {
                    break;
                }
                child = parent;
            }
        }
        if self.read {
            let gone_or_changed = self
                .files
                .iter()
                .filter(|(path, file)| fresh.files.get(*path) != Some(*file))
                .map(|(path, _)| path.clone());
            let came = fresh
                .files
                .keys()
                .filter(|path| !self.files.contains_key(*path))
                .cloned();
            let changed: Vec<RelPath> = gone_or_changed.chain(came).collect();
            fresh.changed.extend(changed);
        }
        *self = fresh;
        Ok(())
    }

    /// The paths whose absent file changed, came or went since the last
    /// call: what the kernel may keep of them is out of date.
    pub fn take_changed(&mut self) -> Vec<RelPath> {
        std::mem::take(&mut self.changed)
    }

    /// Forgets the dirstate's stamp: the next look reads it again.
    pub fn outdated(&mut self) {
        self.stamp = None;
    }

    /// The paths of the absent files.
    pub fn paths(&self) -> impl Iterator<Item = &RelPath> {
        self.files.keys()
    }

    /// The absent file at `path`.
    pub fn file(&self, path: &[u8]) -> Option<&AbsentFile> {
        self.files.get(path)
    }

    /// Whether `path` is a folder holding absent files (at any depth).
    pub fn is_folder(&self, path: &[u8]) -> bool {
        self.folders.contains_key(path)
    }

    /// The names of the absent files and folders directly in `path`.
    pub fn children(&self, path: &[u8]) -> impl Iterator<Item = &[u8]> {
        self.folders
            .get(path)
            .into_iter()
            .flat_map(|names| names.iter().map(Vec::as_slice))
    }

    /// The absent files directly in `folder` whose names sort after
    /// `name` (as a listing shows them), with their paths.
    pub fn files_after<'a>(
        &'a self,
        folder: &'a [u8],
        name: &'a [u8],
    ) -> impl Iterator<Item = (RelPath, &'a AbsentFile)> + 'a {
        use std::ops::Bound::{Excluded, Unbounded};
        self.folders
            .get(folder)
            .into_iter()
            .flat_map(move |names| names.range::<[u8], _>((Excluded(name), Unbounded)))
            .filter_map(move |n| {
                let path = join(folder, n);
                let file = self.files.get(&path)?;
                Some((path, file))
            })
    }

    /// A path of each of `ids` that is absent here (an id no absent file has is left out).
    pub fn paths_of(&self, ids: &[ObjectId]) -> Vec<(ObjectId, RelPath)> {
        let mut found: HashMap<ObjectId, RelPath> = HashMap::new();
        for (path, file) in &self.files {
            if ids.contains(&file.id) {
                found.entry(file.id).or_insert_with(|| path.clone());
            }
        }
        ids.iter()
            .filter_map(|id| Some((*id, found.remove(id)?)))
            .collect()
    }

    /// Whether anything absent is at or under `path`.
    pub fn any_at_or_under(&self, path: &[u8]) -> bool {
        self.files.contains_key(path) || self.folders.contains_key(path)
    }
}

/// The inode numbers handed to the kernel, each for one path.
pub struct Inodes {
    paths: HashMap<u64, RelPath>,
    /// In path order, so what lies under a folder is one range: a rename
    /// (an editor's save) looks at those, not at every path numbered.
    numbers: BTreeMap<RelPath, u64>,
    next: u64,
    /// The numbers the kernel holds an inode of: named to it in an entry
    /// (a lookup, a listing with attributes, a create) and not forgotten
    /// since. Only the kernel's inodes can be given pages (see
    /// `PageGiver`); a number wrongly held here only costs a gift lost.
    in_kernel: HashSet<u64>,
}

impl Default for Inodes {
    fn default() -> Inodes {
        Inodes {
            paths: HashMap::from([(ROOT, Vec::new())]),
            numbers: BTreeMap::from([(Vec::new(), ROOT)]),
            next: ROOT + 1,
            in_kernel: HashSet::new(),
        }
    }
}

impl Inodes {
    /// The number of `path`, given one the first time it is asked.
    pub fn number(&mut self, path: &[u8]) -> u64 {
        if let Some(&n) = self.numbers.get(path) {
            return n;
        }
        let n = self.next;
        self.next += 1;
        self.paths.insert(n, path.to_vec());
        self.numbers.insert(path.to_vec(), n);
        n
    }

    /// The number of `path` if it was given one.
    pub fn known(&self, path: &[u8]) -> Option<u64> {
        self.numbers.get(path).copied()
    }

    /// The kernel was given an entry of number `n`.
    pub fn entered(&mut self, n: u64) {
        self.in_kernel.insert(n);
    }

    /// The kernel let go of its inode of number `n` (a forget: it sends
    /// one only when the inode goes, with all its lookups).
    pub fn forgotten(&mut self, n: u64) {
        self.in_kernel.remove(&n);
    }

    /// The number of `path` if the kernel holds an inode of it.
    pub fn in_kernel(&self, path: &[u8]) -> Option<u64> {
        self.known(path).filter(|n| self.in_kernel.contains(n))
    }

    /// The path inode `ino` stands for.
    pub fn path(&self, ino: u64) -> Option<RelPath> {
        self.paths.get(&ino).cloned()
    }

    /// `from` and everything under it now live at `to` (a rename): their
    /// numbers go with them, and what `to` was numbered before is forgotten.
    pub fn renamed(&mut self, from: &[u8], to: &[u8]) {
        for (p, _) in self.at_or_under(to) {
            if let Some(n) = self.numbers.remove(&p) {
                self.paths.remove(&n);
            }
        }
        for (p, n) in self.at_or_under(from) {
            self.numbers.remove(&p);
            let moved = [to, &p[from.len()..]].concat();
            self.paths.insert(n, moved.clone());
            self.numbers.insert(moved, n);
        }
    }

    /// The paths numbered at `root` or under it, with their numbers: `root`
    /// itself, then the range from `root/` up to `root0` ('0' follows '/').
    fn at_or_under(&self, root: &[u8]) -> Vec<(RelPath, u64)> {
        let itself = self.numbers.get_key_value(root);
        let below = [root, b"/"].concat()..[root, b"0"].concat();
        itself
            .into_iter()
            .chain(self.numbers.range(below))
            .map(|(p, n)| (p.clone(), *n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_holds_what_an_entry_named_until_it_forgets_it() {
        let mut inodes = Inodes::default();
        let photo = inodes.number(b"photos/a.jpg");
        assert_eq!(inodes.known(b"photos/a.jpg"), Some(photo));
        assert_eq!(inodes.in_kernel(b"photos/a.jpg"), None, "numbered only");
        inodes.entered(photo);
        assert_eq!(inodes.in_kernel(b"photos/a.jpg"), Some(photo));
        // A rename keeps the number, so the kernel's inode goes with it.
        inodes.renamed(b"photos", b"shoot");
        assert_eq!(inodes.in_kernel(b"photos/a.jpg"), None);
        assert_eq!(inodes.in_kernel(b"shoot/a.jpg"), Some(photo));
        inodes.forgotten(photo);
        assert_eq!(inodes.in_kernel(b"shoot/a.jpg"), None);
        assert_eq!(inodes.known(b"shoot/a.jpg"), Some(photo));
    }

    #[test]
    fn a_rename_carries_the_numbers_of_a_folder_and_what_is_under_it() {
        let mut inodes = Inodes::default();
        let a = inodes.number(b"a");
        let ab = inodes.number(b"a/b");
        let abd = inodes.number(b"a/b/d");
        let ab2 = inodes.number(b"ab");
        // Names that sort just before and just after the folder's contents.
        let dash = inodes.number(b"a-x");
        let zero = inodes.number(b"a0");
        let old_c = inodes.number(b"c");
        let old_cb = inodes.number(b"c/b");
        inodes.renamed(b"a", b"c");
        assert_eq!(inodes.path(a).unwrap(), b"c");
        assert_eq!(inodes.path(ab).unwrap(), b"c/b");
        assert_eq!(inodes.path(abd).unwrap(), b"c/b/d");
        assert_eq!(
            inodes.path(ab2).unwrap(),
            b"ab",
            "a name that only starts alike stays"
        );
        assert_eq!(inodes.path(dash).unwrap(), b"a-x");
        assert_eq!(inodes.path(zero).unwrap(), b"a0");
        assert!(inodes.path(old_c).is_none());
        assert!(inodes.path(old_cb).is_none());
        assert_eq!(inodes.number(b"c/b"), ab);
        assert_eq!(split(b"x/y/z"), (&b"x/y"[..], &b"z"[..]));
        assert_eq!(split(b"z"), (&b""[..], &b"z"[..]));
        assert_eq!(join(b"", b"z"), b"z");
    }
}
