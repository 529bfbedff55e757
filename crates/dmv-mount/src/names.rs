//! What a mount shows, as numbered nodes (the kernel's inodes): one
//! commit's tree, or every branch, tag and commit as folders (`--all`).
//! A tree's entries become nodes when the folder is first looked into,
//! so mounting a history of millions of files reads only its top.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use dmv_repo::ref_names::{BRANCHES, TAGS};
use dmv_repo::store::object::EntryKind;
use dmv_repo::store::{ObjectId, Store};
use dmv_repo::tree::read_dir;
use dmv_repo::{RepoResult, Repository};

/// A node's number; the root is 1, as FUSE wants.
pub type Ino = u64;
pub const ROOT: Ino = 1;

/// What a node is.
pub enum What {
    /// A folder the mount makes (`--all`'s `branches/`, `tags/`, `commits/`,
    /// and a folder per part of a name with '/'), its entries sorted by name.
    Made(Vec<(OsString, Ino)>),
    /// A folder of a commit: its tree, and its entries once looked into.
    Tree {
        id: ObjectId,
        entries: Option<Vec<(OsString, Ino)>>,
    },
    File {
        id: ObjectId,
        executable: bool,
    },
    Symlink {
        id: ObjectId,
    },
}

pub struct Node {
    pub parent: Ino,
    pub name: OsString,
    pub what: What,
    /// A file's or a link target's length in bytes (0 for folders).
    pub size: u64,
    /// Seconds since 1970: the time of the commit it belongs to (trees
    /// keep no file times), the newest of them for made folders.
    pub time: i64,
}

impl Node {
    pub fn is_folder(&self) -> bool {
        matches!(self.what, What::Made(_) | What::Tree { .. })
    }
}

/// Every node made so far.
pub struct Namespace {
    nodes: Vec<Node>,
}

impl Namespace {
    /// `commit`'s tree at the root.
    pub fn of_commit(repo: &Repository, commit: &ObjectId) -> RepoResult<Namespace> {
        let c = repo.commit(commit)?;
        let root = Node {
            parent: ROOT,
            name: OsString::new(),
            what: What::Tree {
                id: c.tree,
                entries: None,
            },
            size: 0,
            time: c.committer.time,
        };
        Ok(Namespace { nodes: vec![root] })
    }

    /// `branches/NAME`, `tags/NAME` and `commits/TIME-ID` (every commit the
    /// refs and HEAD reach, by committer time in UTC, as `restic mount`
    /// shows snapshots), each the folder of that commit's tree.
    pub fn of_everything(repo: &Repository) -> RepoResult<Namespace> {
        let mut made = MadeFolders::default();
        let mut tips = Vec::new();
        for (prefix, folder) in [(BRANCHES, "branches"), (TAGS, "tags")] {
            made.folder(&[folder]);
            for (full, _) in repo.refs.list(prefix)? {
                let commit = repo.resolve(&full)?;
                let name = &full[prefix.len()..];
                let mut path: Vec<&str> = vec![folder];
                path.extend(name.split('/').filter(|p| !p.is_empty()));
                made.commit(&path, commit);
                tips.push(commit);
            }
        }
        tips.extend(repo.head_commit()?);
        made.folder(&["commits"]);
        let mut seen: HashSet<ObjectId> = HashSet::new();
        let mut walk = tips;
        while let Some(id) = walk.pop() {
            if !seen.insert(id) {
                continue;
            }
            let c = repo.commit(&id)?;
            // 2026-11-28T15:36:35Z-32fffb1ec137: sorts by time, and no spaces for a shell to split.
            let time = dmv_repo::utc_time(c.committer.time)
                .replacen(' ', "T", 1)
                .replace(" UTC", "Z");
            let name = format!("{time}-{}", id.short());
            made.commit(&["commits", &name], id);
            walk.extend(c.parents);
        }
        made.into_namespace(repo)
    }

    pub fn node(&self, ino: Ino) -> Option<&Node> {
        self.nodes.get(usize::try_from(ino).ok()?.checked_sub(1)?)
    }

    /// A folder's entries, reading its tree the first time. None for a
    /// node that is not a folder.
    pub fn entries(&mut self, store: &Store, ino: Ino) -> RepoResult<Option<&[(OsString, Ino)]>> {
        let Some(index) = usize::try_from(ino)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .filter(|i| *i < self.nodes.len())
        else {
            return Ok(None);
        };
        if let What::Tree { id, entries: None } = self.nodes[index].what {
            let time = self.nodes[index].time;
            let mut listed = Vec::new();
            for e in read_dir(store, &id)? {
                let what = match e.kind {
                    EntryKind::Dir => What::Tree {
                        id: e.id,
                        entries: None,
                    },
                    EntryKind::File | EntryKind::Executable => What::File {
                        id: e.id,
                        executable: e.kind == EntryKind::Executable,
                    },
                    EntryKind::Symlink => What::Symlink { id: e.id },
                };
                let size = if e.kind == EntryKind::Dir { 0 } else { e.size };
                let name = OsString::from_vec(e.name);
                listed.push((name.clone(), self.nodes.len() as Ino + 1));
                self.nodes.push(Node {
                    parent: ino,
                    name,
                    what,
                    size,
                    time,
                });
            }
            // Trees keep their entries sorted by name bytes, as lookups need.
            self.nodes[index].what = What::Tree {
                id,
                entries: Some(listed),
            };
        }
        Ok(match &self.nodes[index].what {
            What::Made(entries)
            | What::Tree {
                entries: Some(entries),
                ..
            } => Some(entries),
            _ => None,
        })
    }

    /// A folder's entries as far as they are known (a tree not looked into yet has none).
    pub fn listed(&self, ino: Ino) -> Option<&[(OsString, Ino)]> {
        match &self.node(ino)?.what {
            What::Made(entries)
            | What::Tree {
                entries: Some(entries),
                ..
            } => Some(entries),
            _ => None,
        }
    }

    /// How many nodes there are so far.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The entry `name` of folder `parent`.
    pub fn lookup(&mut self, store: &Store, parent: Ino, name: &OsStr) -> RepoResult<Option<Ino>> {
        let Some(entries) = self.entries(store, parent)? else {
            return Ok(None);
        };
        Ok(entries
            .binary_search_by(|(n, _)| n.as_bytes().cmp(name.as_bytes()))
            .ok()
            .map(|i| entries[i].1))
    }

    /// The node's path from the mount's root, for messages.
    pub fn path(&self, mut ino: Ino) -> String {
        let mut parts = Vec::new();
        while let Some(node) = self.node(ino).filter(|_| ino != ROOT) {
            parts.push(node.name.to_string_lossy().into_owned());
            ino = node.parent;
        }
        parts.reverse();
        parts.join("/")
    }
}

/// The made folders of `--all`, as nested maps until they become nodes.
#[derive(Default)]
struct MadeFolders {
    entries: BTreeMap<String, Made>,
}

enum Made {
    Folder(MadeFolders),
    Commit(ObjectId),
}

impl MadeFolders {
    fn folder(&mut self, path: &[&str]) -> &mut MadeFolders {
        let mut here = self;
        for part in path {
            let entry = here
                .entries
                .entry(part.to_string())
                .or_insert_with(|| Made::Folder(MadeFolders::default()));
            if let Made::Commit(_) = entry {
                // A branch `a` and a branch `a/b` cannot both be folders of commits: `a` wins.
                *entry = Made::Folder(MadeFolders::default());
            }
            let Made::Folder(next) = entry else {
                unreachable!("made a folder just above")
            };
            here = next;
        }
        here
    }

    fn commit(&mut self, path: &[&str], commit: ObjectId) {
        let Some((last, folders)) = path.split_last() else {
            return;
        };
        let parent = self.folder(folders);
        parent
            .entries
            .entry(last.to_string())
            .or_insert(Made::Commit(commit));
    }

    fn into_namespace(self, repo: &Repository) -> RepoResult<Namespace> {
        let mut ns = Namespace {
            nodes: vec![Node {
                parent: ROOT,
                name: OsString::new(),
                what: What::Made(Vec::new()),
                size: 0,
                time: 0,
            }],
        };
        let newest = self.place(repo, &mut ns, ROOT)?;
        ns.nodes[0].time = newest;
        Ok(ns)
    }

    /// Makes nodes of these entries under `parent`; returns the newest commit time below.
    fn place(self, repo: &Repository, ns: &mut Namespace, parent: Ino) -> RepoResult<i64> {
        let mut listed = Vec::new();
        let mut newest = 0;
        for (name, made) in self.entries {
            let ino = ns.nodes.len() as Ino + 1;
            listed.push((OsString::from(name.clone()), ino));
            ns.nodes.push(Node {
                parent,
                name: OsString::from(name),
                what: What::Made(Vec::new()),
                size: 0,
                time: 0,
            });
            let time = match made {
                Made::Folder(folders) => folders.place(repo, ns, ino)?,
                Made::Commit(id) => {
                    let c = repo.commit(&id)?;
                    ns.nodes[ino as usize - 1].what = What::Tree {
                        id: c.tree,
                        entries: None,
                    };
                    c.committer.time
                }
            };
            ns.nodes[ino as usize - 1].time = time;
            newest = newest.max(time);
        }
        ns.nodes[parent as usize - 1].what = What::Made(listed);
        Ok(newest)
    }
}
