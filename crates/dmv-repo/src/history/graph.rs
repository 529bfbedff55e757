//! The commit graph: every question about ancestry (what a log shows, what
//! a fetch or push must send, whether a push fast-forwards, where two
//! branches met) is answered here, by walking parents.
//!
//! Whole ancestries are walked rather than trusting commit times to stop
//! early, since clocks can be wrong; commits are small. A generation index
//! would bound the walks on long histories.

use crate::repository::handles::History;
use std::collections::{BinaryHeap, HashMap, HashSet};

use dmv_store::object::{Commit, TreeEntry};
use dmv_store::{ObjectId, ObjectKind};
use serde::Serialize;

use crate::history::tree::{lookup_in, read_dir, FlatEntry};
use crate::{RepoResult, Repository};

/// A commit met in a walk of history, with its id.
#[derive(Clone, Debug, Serialize)]
pub struct CommitInfo {
    /// The commit's id.
    pub id: ObjectId,
    /// The decoded commit.
    #[serde(flatten)]
    pub commit: Commit,
}

/// Commits reachable from the starting points and not from the hidden ones,
/// newest committer time first (limit it with [`Iterator::take`]); with
/// [`CommitWalk::touching`], only those that change some paths.
pub struct CommitWalk<'r> {
    repo: &'r Repository,
    /// Newest committer time first; among equal times (commits made within
    /// one second) the one queued first, so a child comes before its parents
    /// as in git (ordering ties by id could put a parent first).
    heap: BinaryHeap<(i64, std::cmp::Reverse<u64>, ObjectId)>,
    queued_count: u64,
    seen: HashSet<ObjectId>,
    /// The commits in `heap`, read when they were queued: each commit is read once.
    queued: HashMap<ObjectId, Commit>,
    paths: Option<PathChanges<'r>>,
    /// `log --follow`: the one path asked for is followed back through renames.
    follow: bool,
}

impl<'r> CommitWalk<'r> {
    fn new(
        repo: &'r Repository,
        starts: &[ObjectId],
        hidden: HashSet<ObjectId>,
    ) -> RepoResult<CommitWalk<'r>> {
        let mut walk = CommitWalk {
            repo,
            heap: BinaryHeap::new(),
            queued_count: 0,
            seen: hidden,
            queued: HashMap::new(),
            paths: None,
            follow: false,
        };
        for s in starts {
            walk.push(repo.peel(s)?)?;
        }
        Ok(walk)
    }

    /// Only the commits that change one of `paths` (files or folders): what
    /// `log -- PATH` shows. None given: every commit.
    pub fn touching(mut self, paths: Vec<Vec<u8>>) -> CommitWalk<'r> {
        self.paths = (!paths.is_empty()).then(|| PathChanges::new(self.repo, paths));
        self
    }

    /// With one path asked for ([`CommitWalk::touching`]): where a commit
    /// added it by renaming another file (the same content, or most of its
    /// chunks), the walk goes on with that file's path, as `git log --follow`.
    pub fn following_renames(mut self) -> CommitWalk<'r> {
        self.follow = true;
        self
    }

    fn push(&mut self, id: ObjectId) -> RepoResult<()> {
        if self.seen.insert(id) {
            let c = self.repo.commit(&id)?;
            self.heap
                .push((c.committer.time, std::cmp::Reverse(self.queued_count), id));
            self.queued_count += 1;
            self.queued.insert(id, c);
        }
        Ok(())
    }

    fn step(&mut self) -> Option<RepoResult<CommitInfo>> {
        let (_, _, id) = self.heap.pop()?;
        let commit = match self
            .queued
            .remove(&id)
            .map_or_else(|| self.repo.commit(&id), Ok)
        {
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

    /// Whether `commit` changes the paths asked for; its parents are mostly
    /// queued, so their trees are known without reading them again.
    fn changes_paths(&mut self, commit: &Commit) -> RepoResult<bool> {
        let Some(paths) = self.paths.as_mut() else {
            return Ok(true);
        };
        let mut parent_trees = Vec::with_capacity(commit.parents.len());
        for p in &commit.parents {
            parent_trees.push(match self.queued.get(p) {
                Some(c) => c.tree,
                None => self.repo.commit(p)?.tree,
            });
        }
        let changed = paths.changes(&commit.tree, &parent_trees)?;
        let single = match paths.paths.as_slice() {
            [path] => Some(path.clone()),
            _ => None,
        };
        if let (Some(path), [parent_tree], true) =
            (single, parent_trees.as_slice(), changed && self.follow)
        {
            let added = paths.at(&commit.tree)?.first().is_some_and(Option::is_some)
                && paths.at(parent_tree)?.first().is_some_and(Option::is_none);
            if added {
                let changes = crate::history::tree_diff::diff_trees(
                    &self.repo.store,
                    Some(parent_tree),
                    Some(&commit.tree),
                )?;
                let source = crate::history::tree_diff::find_renames(&self.repo.store, changes)?
                    .into_iter()
                    .find_map(|l| match l {
                        crate::history::tree_diff::Listed::Renamed { from, to, .. }
                            if to == path =>
                        {
                            Some(from)
                        }
                        _ => None,
                    });
                if let Some(from) = source {
                    paths.paths = vec![from];
                }
            }
        }
        Ok(changed)
    }
}

impl Iterator for CommitWalk<'_> {
    type Item = RepoResult<CommitInfo>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let info = match self.step()? {
                Ok(info) => info,
                Err(e) => return Some(Err(e)),
            };
            match self.changes_paths(&info.commit) {
                Ok(true) => return Some(Ok(info)),
                Ok(false) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// `commits` (as a walk gave them, newest first) reordered so that no
/// commit comes before one of its children among them: the order `log
/// --graph` draws in. As git's --topo-order: once a commit is shown, the
/// parents it made ready come next, the last parent's line first.
pub fn in_topo_order(commits: Vec<CommitInfo>) -> Vec<CommitInfo> {
    let index: HashMap<ObjectId, usize> =
        commits.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
    let mut children = vec![0usize; commits.len()];
    for c in &commits {
        for p in &c.commit.parents {
            if let Some(&i) = index.get(p) {
                children[i] += 1;
            }
        }
    }
    // A stack: the newest tip on top at first, then what each shown commit made ready.
    let mut ready: Vec<usize> = (0..commits.len())
        .rev()
        .filter(|&i| children[i] == 0)
        .collect();
    let mut order = Vec::with_capacity(commits.len());
    while let Some(i) = ready.pop() {
        order.push(i);
        for p in &commits[i].commit.parents {
            if let Some(&j) = index.get(p) {
                children[j] -= 1;
                if children[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    let mut slots: Vec<Option<CommitInfo>> = commits.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

impl<'r> History<'r> {
    /// History from `starts`, newest first (what `log` shows).
    pub fn walk(&self, starts: &[ObjectId]) -> RepoResult<CommitWalk<'r>> {
        CommitWalk::new(self.repository(), starts, HashSet::new())
    }

    /// Commits reachable from `wants` and not from `haves`: what a fetch or
    /// push sends. Haves this repository does not hold as commits are
    /// ignored (the other side may name commits only it has).
    pub(crate) fn walk_between(
        &self,
        wants: &[ObjectId],
        haves: &[ObjectId],
    ) -> RepoResult<CommitWalk<'r>> {
        let mut known = Vec::new();
        for h in haves {
            if self
                .store
                .locate(h)?
                .is_some_and(|l| matches!(l.entry.kind, ObjectKind::Commit | ObjectKind::Tag))
            {
                known.push(self.peel(h)?);
            }
        }
        CommitWalk::new(self.repository(), wants, self.ancestors(&known)?)
    }

    /// The ids of [`History::walk_between`], in no particular order.
    pub fn commits_between(
        &self,
        wants: &[ObjectId],
        haves: &[ObjectId],
    ) -> RepoResult<Vec<ObjectId>> {
        self.walk_between(wants, haves)?
            .map(|c| c.map(|c| c.id))
            .collect()
    }

    /// What a transfer of `wants` sends when the other side has `haves`:
    /// the annotated tags among `wants` that it lacks, and
    /// [`History::commits_between`].
    pub fn history_between(
        &self,
        wants: &[ObjectId],
        haves: &[ObjectId],
    ) -> RepoResult<(Vec<ObjectId>, Vec<ObjectId>)> {
        let mut tags = Vec::new();
        for w in wants {
            if !haves.contains(w) && !tags.contains(w) && self.store.kind_of(w)? == ObjectKind::Tag
            {
                tags.push(*w);
            }
        }
        Ok((tags, self.commits_between(wants, haves)?))
    }

    /// Every commit reachable from `starts`, including them (an annotated tag as its commit).
    pub fn ancestors(&self, starts: &[ObjectId]) -> RepoResult<HashSet<ObjectId>> {
        let mut seen = HashSet::new();
        let mut stack = self.peel_all(starts)?;
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

/// Which commits change some paths. A commit changes a path when what its
/// tree holds there differs from its first parent's; a merge, when it
/// differs from every parent's (else it took that side as it was). Each path
/// is looked up level by level, and what was found in each folder is kept
/// for the next commit of the walk, whose tree is mostly this one's
/// parent's: a commit costs about one read of its root.
struct PathChanges<'r> {
    repo: &'r Repository,
    paths: Vec<Vec<u8>>,
    /// (folder, name) -> its entry there: only what the paths ask for, not
    /// whole folders (which were 50 MB over a history of 10,000 commits).
    found: HashMap<(ObjectId, Vec<u8>), Option<TreeEntry>>,
}

/// Folder entries kept between commits at most.
const KEPT_ENTRIES: usize = 1 << 16;

impl<'r> PathChanges<'r> {
    fn new(repo: &'r Repository, paths: Vec<Vec<u8>>) -> PathChanges<'r> {
        PathChanges {
            repo,
            paths,
            found: HashMap::new(),
        }
    }

    fn changes(&mut self, tree: &ObjectId, parent_trees: &[ObjectId]) -> RepoResult<bool> {
        let mine = self.at(tree)?;
        if parent_trees.is_empty() {
            return Ok(mine.iter().any(Option::is_some));
        }
        for parent in parent_trees {
            if parent == tree || self.at(parent)? == mine {
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
        let (store, found) = (&self.repo.store, &mut self.found);
        lookup_in(
            &mut |dir, name| {
                let key = (*dir, name.to_vec());
                if let Some(entry) = found.get(&key) {
                    return Ok(entry.clone());
                }
                if found.len() >= KEPT_ENTRIES {
                    found.clear();
                }
                let entry = read_dir(store, dir)?.into_iter().find(|e| e.name == name);
                found.insert(key, entry.clone());
                Ok(entry)
            },
            tree,
            path,
        )
    }
}
