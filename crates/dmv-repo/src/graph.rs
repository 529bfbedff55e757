//! The commit graph: every question about ancestry (what a log shows, what
//! a fetch or push must send, whether a push fast-forwards, where two
//! branches met) is answered here, by walking parents.
//!
//! Whole ancestries are walked rather than trusting commit times to stop
//! early, since clocks can be wrong; commits are small. A generation index
//! would bound the walks on long histories.

use std::collections::{BinaryHeap, HashMap, HashSet};

use dmv_store::object::{Commit, TreeEntry};
use dmv_store::{ObjectId, ObjectKind};
use serde::Serialize;

use crate::tree::{lookup_in, read_dir, FlatEntry};
use crate::{RepoResult, Repository};

#[derive(Clone, Debug, Serialize)]
pub struct CommitInfo {
    pub id: ObjectId,
    #[serde(flatten)]
    pub commit: Commit,
}

/// Commits reachable from the starting points and not from the hidden ones,
/// newest committer time first (limit it with [`Iterator::take`]).
pub struct CommitWalk<'r> {
    repo: &'r Repository,
    heap: BinaryHeap<(i64, ObjectId)>,
    seen: HashSet<ObjectId>,
}

impl<'r> CommitWalk<'r> {
    fn new(repo: &'r Repository, starts: &[ObjectId], hidden: HashSet<ObjectId>) -> RepoResult<CommitWalk<'r>> {
        let mut walk = CommitWalk { repo, heap: BinaryHeap::new(), seen: hidden };
        for s in starts {
            walk.push(*s)?;
        }
        Ok(walk)
    }

    fn push(&mut self, id: ObjectId) -> RepoResult<()> {
        if self.seen.insert(id) {
            let c = self.repo.commit(&id)?;
            self.heap.push((c.committer.time, id));
        }
        Ok(())
    }
}

impl Iterator for CommitWalk<'_> {
    type Item = RepoResult<CommitInfo>;
    fn next(&mut self) -> Option<Self::Item> {
        let (_, id) = self.heap.pop()?;
        let commit = match self.repo.commit(&id) {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        for p in &commit.parents {
            if let Err(e) = self.push(*p) {
                return Some(Err(e));
            }
        }
        Some(Ok(CommitInfo { id, commit }))
    }
}

impl Repository {
    /// History from `starts`, newest first (what `log` shows).
    pub fn walk(&self, starts: &[ObjectId]) -> RepoResult<CommitWalk<'_>> {
        CommitWalk::new(self, starts, HashSet::new())
    }

    /// Commits reachable from `wants` and not from `haves`: what a fetch or
    /// push sends. Haves this repository does not hold as commits are
    /// ignored (the other side may name commits only it has).
    pub fn walk_between(&self, wants: &[ObjectId], haves: &[ObjectId]) -> RepoResult<CommitWalk<'_>> {
        let mut known = Vec::new();
        for h in haves {
            if self.store.locate(h)?.is_some_and(|l| l.entry.kind == ObjectKind::Commit) {
                known.push(*h);
            }
        }
        CommitWalk::new(self, wants, self.ancestors(&known)?)
    }

    /// The ids of [`Repository::walk_between`], in no particular order.
    pub fn commits_between(&self, wants: &[ObjectId], haves: &[ObjectId]) -> RepoResult<Vec<ObjectId>> {
        self.walk_between(wants, haves)?.map(|c| c.map(|c| c.id)).collect()
    }

    /// Every commit reachable from `starts`, including them.
    pub fn ancestors(&self, starts: &[ObjectId]) -> RepoResult<HashSet<ObjectId>> {
        let mut seen = HashSet::new();
        let mut stack = starts.to_vec();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(self.commit(&id)?.parents);
            }
        }
        Ok(seen)
    }

    /// Whether `ancestor` is `descendant` or reachable from it: moving a
    /// branch from `ancestor` to `descendant` drops no commit.
    pub fn is_ancestor(&self, ancestor: &ObjectId, descendant: &ObjectId) -> RepoResult<bool> {
        let mut seen = HashSet::new();
        let mut stack = vec![*descendant];
        while let Some(id) = stack.pop() {
            if id == *ancestor {
                return Ok(true);
            }
            if seen.insert(id) {
                stack.extend(self.commit(&id)?.parents);
            }
        }
        Ok(false)
    }

    /// A best common ancestor of `a` and `b`: a common ancestor that is not an
    /// ancestor of another common one. Criss-cross histories can have several;
    /// we take the newest (then the smallest id) instead of merging them
    /// recursively as Git does: any of them gives a correct three-way merge,
    /// at worst with more conflicts.
    pub fn merge_base(&self, a: ObjectId, b: ObjectId) -> RepoResult<Option<ObjectId>> {
        let of_b = self.ancestors(&[b])?;
        // Walk back from `a`, stopping at common commits: what lies behind them is common too, and older.
        let mut candidates = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![a];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if of_b.contains(&id) {
                candidates.push(id);
            } else {
                stack.extend(self.commit(&id)?.parents);
            }
        }
        if candidates.len() > 1 {
            // Another path may have stopped at an ancestor of a candidate: drop those.
            let mut parents = Vec::new();
            for c in &candidates {
                parents.extend(self.commit(c)?.parents);
            }
            let behind = self.ancestors(&parents)?;
            candidates.retain(|c| !behind.contains(c));
        }
        let mut best: Option<(i64, std::cmp::Reverse<ObjectId>)> = None;
        for c in candidates {
            let key = (self.commit(&c)?.committer.time, std::cmp::Reverse(c));
            if best.as_ref().is_none_or(|b| key > *b) {
                best = Some(key);
            }
        }
        Ok(best.map(|(_, std::cmp::Reverse(id))| id))
    }
}

/// Which commits change some paths: what `log -- PATH` shows. A commit
/// changes a path when what its tree holds there differs from its first
/// parent's; a merge, when it differs from every parent's (else it took that
/// side as it was). Each path is looked up level by level, and every folder
/// read is kept for the next commit of the walk, whose tree is mostly this
/// one's parent's: a commit costs about one read of its root.
pub struct PathChanges<'r> {
    repo: &'r Repository,
    paths: Vec<Vec<u8>>,
    folders: HashMap<ObjectId, Vec<TreeEntry>>,
}

/// Folders kept between commits at most (a few MiB of entries).
const KEPT_FOLDERS: usize = 4096;

impl<'r> PathChanges<'r> {
    /// `paths` empty: every commit changes something.
    pub fn new(repo: &'r Repository, paths: Vec<Vec<u8>>) -> PathChanges<'r> {
        PathChanges { repo, paths, folders: HashMap::new() }
    }

    pub fn changes(&mut self, commit: &CommitInfo) -> RepoResult<bool> {
        if self.paths.is_empty() {
            return Ok(true);
        }
        let mine = self.at(&commit.commit.tree)?;
        if commit.commit.parents.is_empty() {
            return Ok(mine.iter().any(Option::is_some));
        }
        for parent in &commit.commit.parents {
            let tree = self.repo.commit(parent)?.tree;
            if tree == commit.commit.tree || self.at(&tree)? == mine {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// What `tree` holds at each path.
    fn at(&mut self, tree: &ObjectId) -> RepoResult<Vec<Option<FlatEntry>>> {
        let paths = std::mem::take(&mut self.paths);
        let found = paths.iter().map(|p| self.lookup(tree, p)).collect();
        self.paths = paths;
        found
    }

    fn lookup(&mut self, tree: &ObjectId, path: &[u8]) -> RepoResult<Option<FlatEntry>> {
        let (store, folders) = (&self.repo.store, &mut self.folders);
        lookup_in(
            &mut |dir, name| {
                if !folders.contains_key(dir) {
                    if folders.len() >= KEPT_FOLDERS {
                        folders.clear();
                    }
                    folders.insert(*dir, read_dir(store, dir)?);
                }
                Ok(folders[dir].iter().find(|e| e.name == name).cloned())
            },
            tree,
            path,
        )
    }
}
