//! Tree claims: how `.dmv/locations` (version 5) writes in 56 bytes that a
//! replica holds the data of every file of a tree, where per-file records
//! took about 17 bytes a file even packed (a file's id does not compress):
//! a meta clone of 100,000 files that two replicas hold kept 3.3 MB of
//! records, as much as its trees.
//!
//! A claim is a way of writing records, not a new kind of knowledge. Read,
//! it stands for one record per file of its tree (present, at the claim's
//! time), merged with the records written out as any two records of one
//! file and replica are (the newer wins). Written, a claim is made only
//! where every file of the tree has a present record of that replica, at
//! the earliest of their times, and only the records it gives back exactly
//! are left out. So what is read, merged and sent is what it was; only the
//! file is smaller. The trees claimed are HEAD's and the ref tips' (where a
//! clone, a push or a fetch leaves records of every file), and gc keeps
//! every tree the log claims.

use crate::repository::handles::Copies;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use dmv_store::ObjectId;

use crate::error::RepoResult;
use crate::history::tree::{lookup, tree_reader, visit_files};
use crate::replica::locations::{LocationRecord, ReplicaId, Stamp};
use crate::repository::repo::Repository;

/// A claim's bytes: tree id, replica id, time (ns, little-endian).
pub(crate) const CLAIM_LEN: usize = 32 + 16 + 8;
/// A log claims at most this many trees (each is flattened when the log is read).
pub const MAX_CLAIMED_TREES: usize = 8;
/// A log holds at most this many claims (trees × replicas).
pub const MAX_CLAIMS: usize = 256;
/// A rewrite stops taking trees to claim once their files add up to this
/// many (each is a sorted list of ids in memory: 64 MB).
pub(crate) const MAX_CANDIDATE_FILES: usize = 1 << 21;
/// Below this many records a log is written without claims: it is small
/// anyway, and a rewrite need not flatten the ref tips' trees.
const CLAIMS_FROM_RECORDS: u64 = 1024;

/// [`CLAIMS_FROM_RECORDS`], or `DMV_TEST_CLAIMS_FROM_RECORDS` under fault
/// injection: the fleet test's logs are small, and claims must meet its
/// kills and concurrent commands too.
pub(crate) fn claims_from_records() -> u64 {
    dmv_os::fault::test_setting("DMV_TEST_CLAIMS_FROM_RECORDS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(CLAIMS_FROM_RECORDS)
}

/// `replica` held the data of every file of `tree` as of `time_ns`: in a
/// log on disk, and sent to a replica that reads the tree too (see
/// [`Copies::location_pages_claiming`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TreeClaim {
    /// The tree whose files' data the replica held.
    pub tree: ObjectId,
    /// The replica.
    pub replica: ReplicaId,
    /// When (ns since the epoch): the time of the records it stands for.
    pub time_ns: u64,
}

impl TreeClaim {
    pub(crate) fn encode(&self) -> [u8; CLAIM_LEN] {
        let mut bytes = [0u8; CLAIM_LEN];
        bytes[..32].copy_from_slice(&self.tree.0);
        bytes[32..48].copy_from_slice(&self.replica.0);
        bytes[48..].copy_from_slice(&self.time_ns.to_le_bytes());
        bytes
    }

    pub(crate) fn decode(bytes: &[u8; CLAIM_LEN]) -> TreeClaim {
        let mut tree = [0u8; 32];
        tree.copy_from_slice(&bytes[..32]);
        let mut replica = [0u8; 16];
        replica.copy_from_slice(&bytes[32..48]);
        let mut time = [0u8; 8];
        time.copy_from_slice(&bytes[48..]);
        TreeClaim {
            tree: ObjectId(tree),
            replica: ReplicaId(replica),
            time_ns: u64::from_le_bytes(time),
        }
    }
}

/// The claims section: the count (u32), then the claims sorted by (tree, replica).
pub(crate) fn encode_claims(
    claims: &[TreeClaim],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    out.write_all(&(claims.len() as u32).to_le_bytes())?;
    claims.iter().try_for_each(|c| out.write_all(&c.encode()))
}

/// Checks claims read back or received: within the bounds, sorted, each (tree, replica) once.
pub fn check_claims(claims: &[TreeClaim]) -> Result<(), &'static str> {
    if claims.len() > MAX_CLAIMS {
        return Err("too many tree claims");
    }
    if claims
        .windows(2)
        .any(|w| (w[0].tree, w[0].replica) >= (w[1].tree, w[1].replica))
    {
        return Err("tree claims out of order");
    }
    let mut trees: Vec<ObjectId> = claims.iter().map(|c| c.tree).collect();
    trees.dedup();
    if trees.len() > MAX_CLAIMED_TREES {
        return Err("too many trees claimed");
    }
    Ok(())
}

/// The content ids of a tree's files, sorted, each once.
type TreeFiles = Arc<Vec<ObjectId>>;

/// How many trees' files a repository keeps once read, the last read (a
/// tree's files never change): a command reads the log more than once (a
/// whereis merges a remote's log into it, then reads it), and a tree of
/// 100,000 files takes about 0.1 s to list. At most 2 Mi files in all.
const TREES_KEPT: usize = 2;

impl Copies<'_> {
    /// The files of `tree` (content ids, sorted, each once), or None when
    /// the tree is not in the store (a partial replica's, or one a pruning
    /// gc removed just after it was claimed: the claim then stands for nothing).
    fn tree_files(&self, tree: &ObjectId) -> RepoResult<Option<TreeFiles>> {
        let kept = || self.claimed_files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(files) = self.kept_tree_files(tree) {
            return Ok(Some(files));
        }
        if !self.store.contains(tree)? {
            return Ok(None);
        }
        let mut files = Vec::new();
        visit_files(&tree_reader(&self.store), tree, &mut |_, entry| {
            if entry.kind.is_file() {
                files.push(entry.id);
            }
        })?;
        files.sort_unstable();
        files.dedup();
        let files = Arc::new(files);
        if files.len() <= MAX_CANDIDATE_FILES / TREES_KEPT {
            let mut kept = kept();
            if kept.len() == TREES_KEPT {
                kept.remove(0);
            }
            kept.push((*tree, files.clone()));
        }
        Ok(Some(files))
    }

    /// The files of `tree` if they are kept from an earlier listing.
    fn kept_tree_files(&self, tree: &ObjectId) -> Option<TreeFiles> {
        let kept = self.claimed_files.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .find(|(t, _)| t == tree)
            .map(|(_, files)| files.clone())
    }

    /// Whether `tree` was walked before for [`Copies::tree_claims_files`]
    /// (noted now if not).
    fn walked_before(&self, tree: &ObjectId) -> bool {
        let mut walked = self
            .claimed_trees_walked
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if walked.contains(tree) {
            return true;
        }
        if walked.len() == MAX_CLAIMS {
            walked.remove(0);
        }
        walked.push(*tree);
        false
    }

    /// The trees a rewrite of the log may claim, with their files: HEAD's,
    /// then the ref tips', then `also` (trees a log claims), up to
    /// [`MAX_CLAIMED_TREES`] and [`MAX_CANDIDATE_FILES`] files in all. A
    /// tree that cannot be read whole (a path slice keeps only some
    /// folders) is left out.
    /// A tree claimed before stays a candidate: one commit on, no replica
    /// but the committer holds the new tree whole, and a hub of 100,000
    /// files that 18 replicas had cloned rewrote their claims of the tree
    /// before as 1.7 million records (97 MB), which a clone then took and
    /// sent back whole. (A rewrite keeps only claims that give back
    /// records the claims before them in this order do not: see [`Claims`].)
    fn claimable_trees(&self, also: &[ObjectId]) -> RepoResult<Vec<(ObjectId, TreeFiles)>> {
        let tree_of = |tip: &ObjectId| self.commit(tip).ok().map(|commit| commit.tree);
        let head = self.head_commit()?.and_then(|tip| tree_of(&tip));
        let tips = self.refs.list("")?;
        let tips = tips.iter().filter_map(|(_, tip)| tree_of(tip));
        let mut trees: Vec<(ObjectId, TreeFiles)> = Vec::new();
        let mut files_in_all = 0;
        for tree in head.into_iter().chain(tips).chain(also.iter().copied()) {
            if trees.len() == MAX_CLAIMED_TREES || files_in_all >= MAX_CANDIDATE_FILES {
                break;
            }
            if trees.iter().any(|(t, _)| *t == tree) {
                continue;
            }
            if let Ok(Some(files)) = self.tree_files(&tree) {
                if !files.is_empty() {
                    files_in_all += files.len();
                    trees.push((tree, files));
                }
            }
        }
        Ok(trees)
    }

    /// The trees whose claims this replica reads as their records (HEAD's
    /// and the ref tips', as a rewrite of its log would claim, and those
    /// its log claims, listed as it reads them, not before): a remote
    /// sending its log may send its claims of them as they are, 56 bytes
    /// each, where the records they stand for take 57 bytes a file (16.4
    /// MiB for a hub's log of 100,000 files).
    pub fn trees_read_for_claims(&self) -> RepoResult<Vec<ObjectId>> {
        let mut trees: Vec<ObjectId> = self
            .claimable_trees(&[])?
            .into_iter()
            .map(|(tree, _)| tree)
            .collect();
        for tree in self.claimed_trees()? {
            if !trees.contains(&tree) {
                trees.push(tree);
            }
        }
        Ok(trees)
    }

    /// The trees whose claims to ask another replica for, at most
    /// `most`: those read for claims, then those this log claims, then
    /// those of the first-parent ancestors of HEAD and the ref tips, a
    /// generation at a time (as far as they are here: a clone asks before
    /// its HEAD is set).
    /// A hub's log keeps claiming the tree every replica held whole until a
    /// change rewrites it; one commit on, a replica asking only for its
    /// HEAD's tree got the 18 claims of a hub of 100,000 files as 1.8
    /// million records, 100 MB through the pipe, at every push and fetch.
    /// A claim of a tree asked for is read here only if the log claims it.
    pub fn trees_to_ask_claims_of(&self, most: usize) -> RepoResult<Vec<ObjectId>> {
        let mut trees = self.trees_read_for_claims()?;
        trees.extend(self.claimed_trees()?);
        let mut generation: Vec<ObjectId> = self.head_commit()?.into_iter().collect();
        generation.extend(self.refs.list("")?.into_iter().map(|(_, id)| id));
        generation.truncate(most);
        while trees.len() < most * 2 && !generation.is_empty() {
            let parents: Vec<(ObjectId, ObjectId)> = generation
                .iter()
                .filter_map(|id| self.commit(id).ok()?.parents.first().copied())
                .filter_map(|parent| Some((parent, self.commit(&parent).ok()?.tree)))
                .collect();
            trees.extend(parents.iter().map(|(_, tree)| *tree));
            generation = parents.into_iter().map(|(parent, _)| parent).collect();
            generation.dedup();
        }
        let mut asked: Vec<ObjectId> = Vec::new();
        for tree in trees {
            if asked.len() == most {
                break;
            }
            if !asked.contains(&tree) && self.store.contains(&tree)? {
                asked.push(tree);
            }
        }
        Ok(asked)
    }

    /// Another replica's `records` (sorted by key and replica) with those
    /// its `claims` stand for, read against this replica's trees, in order:
    /// what its log reads as. Of a record and a claim of one file and
    /// replica, the newer. A claim of a tree not here stands for none (the
    /// caller asks only for claims of [`Copies::trees_to_ask_claims_of`]).
    pub fn records_with_claims<I>(
        &self,
        claims: &[TreeClaim],
        records: I,
    ) -> RepoResult<WithClaims<I::IntoIter>>
    where
        I: IntoIterator<Item = RepoResult<LocationRecord>>,
    {
        Ok(WithClaims {
            expansion: Expansion::new(self, claims)?,
            records: records.into_iter().fuse().peekable(),
        })
    }

    /// Of `keys` (each with a path naming it), those a claim of `tree`
    /// stands for: each looked up at its path first (the folders along
    /// it), and those the tree holds something else at found by one walk
    /// of the tree that keeps only them, not its files (a tree of 100,000
    /// files listed is 4 MiB: a `whereis` of one file changed since a
    /// claimed tree peaked at 25.7 MiB, 19 without the list). A tree
    /// walked so a second time (a mount asking before each fetch) is
    /// listed and kept, as reading the whole log keeps it.
    pub(crate) fn tree_claims_files(
        &self,
        tree: &ObjectId,
        keys: &BTreeMap<ObjectId, Vec<u8>>,
    ) -> RepoResult<Vec<ObjectId>> {
        if keys.is_empty() || !self.store.contains(tree)? {
            return Ok(Vec::new());
        }
        let mut claimed = Vec::new();
        let mut elsewhere = BTreeSet::new();
        for (key, path) in keys {
            match lookup(&self.store, tree, path) {
                Ok(Some(entry)) if entry.kind.is_file() && entry.id == *key => claimed.push(*key),
                _ => {
                    elsewhere.insert(*key);
                }
            }
        }
        if elsewhere.is_empty() {
            return Ok(claimed);
        }
        let listed = self.kept_tree_files(tree).is_some() || self.walked_before(tree);
        let files = if listed { self.tree_files(tree)? } else { None };
        match files {
            Some(files) => claimed.extend(
                elsewhere
                    .into_iter()
                    .filter(|key| files.binary_search(key).is_ok()),
            ),
            None => visit_files(&tree_reader(&self.store), tree, &mut |_, entry| {
                if entry.kind.is_file() && elsewhere.remove(&entry.id) {
                    claimed.push(entry.id);
                }
            })?,
        }
        Ok(claimed)
    }

    /// The trees `.dmv/locations` claims: gc keeps them (and so what the claims stand for).
    pub(crate) fn claimed_trees(&self) -> RepoResult<Vec<ObjectId>> {
        let mut trees: Vec<ObjectId> = self.read_claims()?.iter().map(|c| c.tree).collect();
        trees.dedup();
        Ok(trees)
    }
}

/// The claims of one tree read as their records: a cursor over the
/// tree's files, each standing for a record of every replica claiming it.
struct TreeCursor {
    files: TreeFiles,
    at: usize,
    /// The replicas claiming the tree, sorted, each with its newest claim's time.
    replicas: Vec<(ReplicaId, u64)>,
}

/// The records that a log's claims stand for, in record order. Grouped by
/// tree, a file's records come out of one cursor per tree, not one per
/// claim: a hub that 18 replicas had cloned spent 1.4 s of a no-op fetch
/// finding the least of 18 cursors for each of its 1.8 million records.
pub(crate) struct Expansion {
    trees: Vec<TreeCursor>,
    /// The records of the file at hand still to come, the next one last.
    file: Vec<LocationRecord>,
}

impl Expansion {
    /// The records of `claims`; a claim of a tree not in the store stands for none.
    pub(crate) fn new(repo: &Repository, claims: &[TreeClaim]) -> RepoResult<Expansion> {
        let mut trees: Vec<(ObjectId, TreeCursor)> = Vec::new();
        let mut missing: Vec<ObjectId> = Vec::new();
        for claim in claims {
            let cursor = match trees.iter_mut().find(|(t, _)| *t == claim.tree) {
                Some((_, cursor)) => cursor,
                None if missing.contains(&claim.tree) => continue,
                None => match repo.copies().tree_files(&claim.tree)? {
                    None => {
                        missing.push(claim.tree);
                        continue;
                    }
                    Some(files) => {
                        let cursor = TreeCursor {
                            files,
                            at: 0,
                            replicas: Vec::new(),
                        };
                        trees.push((claim.tree, cursor));
                        &mut trees.last_mut().expect("just pushed").1
                    }
                },
            };
            cursor.replicas.push((claim.replica, claim.time_ns));
        }
        let mut trees: Vec<TreeCursor> = trees.into_iter().map(|(_, cursor)| cursor).collect();
        for cursor in &mut trees {
            cursor.replicas = newest_of_each(std::mem::take(&mut cursor.replicas));
        }
        let mut expansion = Expansion {
            trees,
            file: Vec::new(),
        };
        expansion.next_file();
        Ok(expansion)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// Moves on to the least file any tree has left: its records, one per
    /// replica claiming a tree that holds it (of two claims of one file and
    /// replica, the newer).
    fn next_file(&mut self) {
        let Some(key) = self
            .trees
            .iter()
            .filter_map(|t| t.files.get(t.at))
            .min()
            .copied()
        else {
            return;
        };
        let mut replicas: Vec<(ReplicaId, u64)> = Vec::new();
        let mut holding = 0;
        for tree in &mut self.trees {
            if tree.files.get(tree.at) == Some(&key) {
                tree.at += 1;
                replicas.extend_from_slice(&tree.replicas);
                holding += 1;
            }
        }
        if holding > 1 {
            replicas = newest_of_each(replicas);
        }
        self.file.extend(
            replicas
                .iter()
                .rev()
                .map(|(replica, time_ns)| LocationRecord {
                    key,
                    replica: *replica,
                    stamp: Stamp {
                        time_ns: *time_ns,
                        present: true,
                    },
                }),
        );
    }

    /// The order of the next record, if any.
    pub(crate) fn peek(&self) -> Option<(ObjectId, ReplicaId)> {
        self.file.last().map(LocationRecord::order)
    }

    /// The next record in order, of `written` (the next record written
    /// out, taken when it is used) and those the claims stand for; of a
    /// written record and a claimed one of one file and replica, the newer.
    pub(crate) fn next_beside(
        &mut self,
        written: &mut Option<LocationRecord>,
    ) -> Option<LocationRecord> {
        let order = match (written.map(|w| w.order()), self.peek()) {
            (None, None) => return None,
            (Some(w), None) => w,
            (None, Some(c)) => c,
            (Some(w), Some(c)) => w.min(c),
        };
        let claimed = self.take(order);
        match (written.take_if(|w| w.order() == order), claimed) {
            (Some(w), Some(c)) if c.stamp.newer_than(&w.stamp) => Some(c),
            (Some(w), _) => Some(w),
            (None, c) => c,
        }
    }

    /// The record at `order`, moving past it; None if no claim stands for one there.
    fn take(&mut self, order: (ObjectId, ReplicaId)) -> Option<LocationRecord> {
        if self.peek() != Some(order) {
            return None;
        }
        let record = self.file.pop();
        if self.file.is_empty() {
            self.next_file();
        }
        record
    }
}

/// `claims` (replica, time) sorted by replica, each replica once at its newest time.
fn newest_of_each(mut claims: Vec<(ReplicaId, u64)>) -> Vec<(ReplicaId, u64)> {
    claims.sort_unstable();
    // Sorted by time within a replica: of a run, the last is the newest.
    claims.reverse();
    claims.dedup_by_key(|(replica, _)| *replica);
    claims.reverse();
    claims
}

/// Records with those that claims stand for, in order (see
/// [`Copies::records_with_claims`]).
pub struct WithClaims<I: Iterator<Item = RepoResult<LocationRecord>>> {
    expansion: Expansion,
    /// Fused: once the records end, each claimed file would ask again, and
    /// a spool's reader asks its file (500,000 empty reads in a clone's
    /// merge of 100,000 files held by three replicas).
    records: std::iter::Peekable<std::iter::Fuse<I>>,
}

impl<I: Iterator<Item = RepoResult<LocationRecord>>> Iterator for WithClaims<I> {
    type Item = RepoResult<LocationRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut written = match self.records.peek() {
            Some(Err(_)) => return self.records.next(),
            Some(Ok(r)) => Some(*r),
            None => None,
        };
        let next = self.expansion.next_beside(&mut written);
        if written.is_none() {
            self.records.next();
        }
        next.map(Ok)
    }
}

/// A tree that may be claimed, while a log's records pass by in order.
struct Candidate {
    tree: ObjectId,
    files: TreeFiles,
    at: usize,
}

impl Candidate {
    /// Whether `key` is one of the tree's files (keys come in order).
    fn holds(&mut self, key: &ObjectId) -> bool {
        while self.files.get(self.at).is_some_and(|k| k < key) {
            self.at += 1;
        }
        self.files.get(self.at) == Some(key)
    }
}

/// Finds the claims a log's records allow, then tells which records the
/// claims give back exactly. Both passes see the records in order.
pub(crate) struct ClaimFinder {
    candidates: Vec<Candidate>,
    /// Per (candidate, replica): present records seen and their earliest time.
    seen: std::collections::BTreeMap<(usize, ReplicaId), (usize, u64)>,
}

impl ClaimFinder {
    /// A finder over the trees a rewrite of `repo`'s log may claim: those
    /// it claims now and `theirs` (trees the log merged in claims) among them.
    pub(crate) fn new(repo: &Repository, theirs: &[ObjectId]) -> RepoResult<ClaimFinder> {
        let copies = repo.copies();
        let mut claimed = copies.claimed_trees()?;
        for tree in theirs {
            if !claimed.contains(tree) {
                claimed.push(*tree);
            }
        }
        Ok(ClaimFinder {
            candidates: copies
                .claimable_trees(&claimed)?
                .into_iter()
                .map(|(tree, files)| Candidate { tree, files, at: 0 })
                .collect(),
            seen: Default::default(),
        })
    }

    /// First pass: takes in one record.
    pub(crate) fn see(&mut self, r: &LocationRecord) {
        if !r.stamp.present {
            return;
        }
        for (i, c) in self.candidates.iter_mut().enumerate() {
            if c.holds(&r.key) {
                let e = self.seen.entry((i, r.replica)).or_insert((0, u64::MAX));
                e.0 += 1;
                e.1 = e.1.min(r.stamp.time_ns);
            }
        }
    }

    /// After the first pass: the claims, ready to tell what they cover.
    pub(crate) fn claims(self) -> Claims {
        let mut claims: Vec<(usize, TreeClaim)> = self
            .seen
            .iter()
            .filter(|((i, _), (n, _))| *n == self.candidates[*i].files.len())
            .map(|((i, replica), (_, time_ns))| {
                let claim = TreeClaim {
                    tree: self.candidates[*i].tree,
                    replica: *replica,
                    time_ns: *time_ns,
                };
                (*i, claim)
            })
            .collect();
        claims.truncate(MAX_CLAIMS);
        let mut by_candidate = vec![Vec::new(); self.candidates.len()];
        for (i, claim) in &claims {
            by_candidate[*i].push((claim.replica, claim.time_ns));
        }
        let mut candidates = self.candidates;
        candidates.iter_mut().for_each(|c| c.at = 0);
        let used = by_candidate.iter().map(|c| vec![false; c.len()]).collect();
        Claims {
            candidates,
            claims: claims.into_iter().map(|(_, claim)| claim).collect(),
            by_candidate,
            used,
        }
    }
}

/// The claims of a log being written, and what they give back.
pub(crate) struct Claims {
    candidates: Vec<Candidate>,
    claims: Vec<TreeClaim>,
    /// Per candidate, the replicas claiming it with their claim's time,
    /// sorted (the seen map's order): a record's is found by a binary search.
    by_candidate: Vec<Vec<(ReplicaId, u64)>>,
    /// Per claim of `by_candidate`: whether it is the first (in the
    /// candidates' order) to give back a record covered so far.
    used: Vec<Vec<bool>>,
}

impl Claims {
    /// The claims, as the log holds them.
    pub(crate) fn sorted(&self) -> Vec<TreeClaim> {
        let mut claims = self.claims.clone();
        claims.sort_unstable();
        claims
    }

    /// Restarts the pass over the records (each pass sees them in order).
    pub(crate) fn rewind(&mut self) {
        self.candidates.iter_mut().for_each(|c| c.at = 0);
    }

    /// Whether reading the claims gives back `r` exactly (so it need not be
    /// written); the first claim to give it back is marked used.
    pub(crate) fn cover(&mut self, r: &LocationRecord) -> bool {
        if !r.stamp.present || self.claims.is_empty() {
            return false;
        }
        let mut newest: Option<u64> = None;
        let mut first: Option<(usize, usize)> = None;
        for (i, (c, claimed)) in self
            .candidates
            .iter_mut()
            .zip(&self.by_candidate)
            .enumerate()
        {
            if claimed.is_empty() || !c.holds(&r.key) {
                continue;
            }
            if let Ok(at) = claimed.binary_search_by_key(&r.replica, |(replica, _)| *replica) {
                newest = newest.max(Some(claimed[at].1));
                if claimed[at].1 == r.stamp.time_ns && first.is_none() {
                    first = Some((i, at));
                }
            }
        }
        let covered = newest == Some(r.stamp.time_ns);
        if let Some((i, at)) = first.filter(|_| covered) {
            self.used[i][at] = true;
        }
        covered
    }

    /// After a pass of [`Claims::cover`] over every record: leaves out the
    /// claims that gave back no record the claims before them did not (a
    /// tree claimed before whose files every replica holding it holds in
    /// HEAD's tree too), which cover the same records without them, since
    /// a claim's time is the earliest of its tree's records. So the trees
    /// claimed before stay candidates without filling a log's 8 trees with
    /// claims that give nothing, each listed whenever the log is read.
    pub(crate) fn keep_used(&mut self) {
        for (claimed, used) in self.by_candidate.iter_mut().zip(&self.used) {
            let mut used = used.iter();
            claimed.retain(|_| used.next() == Some(&true));
        }
        self.used = self
            .by_candidate
            .iter()
            .map(|c| vec![false; c.len()])
            .collect();
        self.claims = self
            .candidates
            .iter()
            .zip(&self.by_candidate)
            .flat_map(|(c, claimed)| {
                claimed.iter().map(|(replica, time_ns)| TreeClaim {
                    tree: c.tree,
                    replica: *replica,
                    time_ns: *time_ns,
                })
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::locations::{LocationLog, ReplicaCards};
    use proptest::prelude::*;

    /// Commits every file of the working tree. (Not `commit_everything`,
    /// which holds back a file whose stat may yet change, as watch mode
    /// must: one written in the same clock tick as its reading.)
    fn commit_all(repo: &Repository) {
        repo.worktree()
            .add(&[Vec::new()], false, &dmv_store::Silent)
            .unwrap();
        assert!(repo.commit_staged("m").unwrap().is_some());
    }

    /// A repository whose HEAD has `n` files, and their content ids (sorted).
    fn repo_with_files(n: usize) -> (tempfile::TempDir, Repository, ObjectId, Vec<ObjectId>) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        for i in 0..n {
            std::fs::write(dir.path().join(format!("f{i}")), format!("file {i}")).unwrap();
        }
        commit_all(&repo);
        let tree = repo
            .commit(&repo.head_commit().unwrap().unwrap())
            .unwrap()
            .tree;
        let files = repo.copies().tree_files(&tree).unwrap().unwrap().to_vec();
        assert_eq!(files.len(), n);
        (dir, repo, tree, files)
    }

    fn record(key: ObjectId, replica: u8, time_ns: u64, present: bool) -> LocationRecord {
        LocationRecord {
            key,
            replica: ReplicaId([replica; 16]),
            stamp: Stamp { time_ns, present },
        }
    }

    /// Merges `records` into the log on disk and into `expected`, as one merge.
    fn merge(repo: &Repository, expected: &mut LocationLog, mut records: Vec<LocationRecord>) {
        records.sort_by_key(LocationRecord::order_then_age);
        for r in &records {
            expected.record(r.key, r.replica, r.stamp);
        }
        repo.copies()
            .merge_locations(records.into_iter().map(Ok), &ReplicaCards::new(), false)
            .unwrap();
    }

    fn read(repo: &Repository) -> LocationLog {
        repo.copies().locations_where(|_| true).unwrap()
    }

    /// Replicas 1 and 2 hold every one of `files` (at times 10 and 20).
    fn held_by_two(files: &[ObjectId]) -> Vec<LocationRecord> {
        files
            .iter()
            .flat_map(|k| [record(*k, 1, 10, true), record(*k, 2, 20, true)])
            .collect()
    }

    /// This log's pages as a replica reading the claims of `trees` would
    /// receive them: the claims, the records, the cards.
    fn sent(
        repo: &Repository,
        trees: &[ObjectId],
    ) -> (Vec<TreeClaim>, Vec<LocationRecord>, ReplicaCards) {
        let mut pages = repo.copies().location_pages_claiming(trees).unwrap();
        let claims = pages.claims().to_vec();
        let page = pages.next_page(1 << 20).unwrap().unwrap();
        let (records, cards) = LocationLog::read_encoded(&page).unwrap();
        (claims, records.collect(), cards)
    }

    /// [`Copies::merge_spooled_locations`] of a log received in a
    /// repository opened afresh (no tree's files kept from a reading
    /// before), with the index probes it made.
    fn merge_received(
        repo: &Repository,
        (claims, records, cards): (&[TreeClaim], &[LocationRecord], &ReplicaCards),
        with_news: bool,
    ) -> (usize, crate::LocationNews, u64) {
        let repo = Repository::open(&repo.root).unwrap();
        let mut spool = crate::LocationSpool::new(&repo).unwrap();
        records.iter().for_each(|r| spool.push(r).unwrap());
        let before = repo.store.index_probes();
        let (changed, news) = repo
            .copies()
            .merge_spooled_locations(spool, claims, cards, with_news)
            .unwrap();
        (changed, news, repo.store.index_probes() - before)
    }

    /// Two replicas holding every file of HEAD (a push, then a clone) are
    /// two claims on disk, and the log reads as the records did: also once
    /// one of them drops a file, when only the other's claim is left, and
    /// gc keeps the claimed tree when no ref names it any more.
    #[test]
    fn every_file_of_a_tree_held_is_one_claim_and_the_log_reads_as_its_records() {
        let (_dir, repo, tree, files) = repo_with_files(600);
        let outside = ObjectId([0xee; 32]);
        let mut expected = LocationLog::default();
        let mut records = held_by_two(&files);
        // A third replica holds some of them, and one file of no tree.
        records.extend(files[..50].iter().map(|k| record(*k, 3, 30, true)));
        records.push(record(outside, 1, 10, true));
        // One file replica 2 got again later: its record is newer than the claim.
        records.retain(|r| !(r.key == files[7] && r.replica.0[0] == 2));
        records.push(record(files[7], 2, 25, true));
        merge(&repo, &mut expected, records);
        let claims = repo.copies().read_claims().unwrap();
        assert_eq!(
            claims,
            [1u8, 2].map(|r| TreeClaim {
                tree,
                replica: ReplicaId([r; 16]),
                time_ns: r as u64 * 10,
            })
        );
        // Left: replica 3's 50, the file of no tree, and replica 2's newer record.
        let bytes = std::fs::read(repo.copies().locations_path()).unwrap();
        assert_eq!(u64::from_le_bytes(bytes[12..20].try_into().unwrap()), 52);
        assert!(bytes.len() < 2048, "{} bytes", bytes.len());
        assert_eq!(read(&repo).records, expected.records);
        assert_eq!(
            read(&repo).holders(&files[7]),
            vec![
                (ReplicaId([1; 16]), record(files[7], 1, 10, true).stamp),
                (ReplicaId([2; 16]), record(files[7], 2, 25, true).stamp),
                (ReplicaId([3; 16]), record(files[7], 3, 30, true).stamp),
            ]
        );

        // Replica 1 drops a file: noted in the journal, then merged with more.
        repo.copies()
            .note_locations(vec![record(files[3], 1, 40, false)])
            .unwrap();
        expected.record(
            files[3],
            ReplicaId([1; 16]),
            record(files[3], 1, 40, false).stamp,
        );
        assert_eq!(read(&repo).records, expected.records);
        merge(&repo, &mut expected, vec![record(outside, 4, 50, true)]);
        assert_eq!(repo.copies().claimed_trees().unwrap(), vec![tree]);
        assert_eq!(repo.copies().read_claims().unwrap().len(), 1);
        assert_eq!(read(&repo).records, expected.records);
        // Sent as it reads: every record, none of them a claim.
        let sent = LocationLog::decode(
            &repo
                .copies()
                .location_pages()
                .unwrap()
                .next_page(1 << 20)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(sent.records, expected.records);

        // gc keeps the claimed tree itself, wherever the refs that named it move.
        assert!(repo.maintenance().roots().unwrap().contains(&tree));
    }

    /// A few records of a replica whose card is news (a phone's first
    /// `get`, told to its hub) leave the log's claims and records as they
    /// are: the card is taken into the log without listing a claimed tree
    /// (no index probe), the records are noted in the journal, and the log
    /// reads as a merge of them would have made it. At 100,000 files the
    /// listing was ~60 ms of the hub's ~100 ms for that one file.
    #[test]
    fn a_new_card_with_a_few_records_lists_no_claimed_tree() {
        let (_dir, repo, _tree, files) = repo_with_files(600);
        let mut expected = LocationLog::default();
        let records = held_by_two(&files);
        merge(&repo, &mut expected, records);
        let claims = repo.copies().read_claims().unwrap();
        assert_eq!(claims.len(), 2);
        let mut cards = ReplicaCards::new();
        cards.insert(
            ReplicaId([3; 16]),
            (30, crate::replica::locations::ReplicaCard::named("phone")),
        );
        let got = record(files[5], 3, 30, true);

        // Afresh: no tree's files kept from the merge before.
        let repo = Repository::open(&repo.root).unwrap();
        let before = repo.store.index_probes();
        let taken = repo
            .copies()
            .merge_few_locations(vec![got], &cards)
            .unwrap();
        assert_eq!(taken, 1);
        assert_eq!(
            repo.store.index_probes(),
            before,
            "a claimed tree was listed"
        );
        assert_eq!(repo.copies().read_claims().unwrap(), claims);
        assert_eq!(repo.copies().read_journal().unwrap().records, vec![got]);
        expected.record(got.key, got.replica, got.stamp);
        let read = read(&repo);
        assert_eq!(read.records, expected.records);
        assert_eq!(read.cards, cards);
        repo.copies().check_locations().unwrap();
    }

    /// The records of a few files, read by their paths, are those the
    /// whole log reads as, for the replicas chosen: a claim settled at a
    /// file's path or, where the path names something else, by a walk of
    /// the tree that keeps none of its files (kept when asked again); a
    /// newer record beside a claim, a drop in the journal and a file of
    /// no tree as they are; a replica not chosen left out, claims and
    /// all. A claim of a replica not chosen reads no tree at all.
    #[test]
    fn the_records_of_a_few_files_read_by_path_are_those_of_the_whole_log() {
        let (_dir, repo, tree, files) = repo_with_files(600);
        let path_of: std::collections::BTreeMap<ObjectId, Vec<u8>> =
            crate::history::tree::flatten(&repo.store, &tree)
                .unwrap()
                .into_iter()
                .map(|(path, e)| (e.id, path))
                .collect();
        let outside = ObjectId([0xee; 32]);
        let mut expected = LocationLog::default();
        let mut records = held_by_two(&files);
        records.extend(files[..50].iter().map(|k| record(*k, 3, 30, true)));
        records.push(record(outside, 1, 10, true));
        records.push(record(files[9], 3, 35, false));
        records.retain(|r| !(r.key == files[7] && r.replica.0[0] == 2));
        records.push(record(files[7], 2, 25, true));
        merge(&repo, &mut expected, records);
        assert_eq!(repo.copies().read_claims().unwrap().len(), 2);
        repo.copies()
            .note_locations(vec![record(files[3], 1, 40, false)])
            .unwrap();

        // Files 3, 7 and 9 by their paths, 5 by a path naming another file, and one of no tree.
        let mut keys: std::collections::BTreeMap<ObjectId, Vec<u8>> = [3, 7, 9]
            .map(|i| (files[i], path_of[&files[i]].clone()))
            .into();
        keys.insert(files[5], path_of[&files[6]].clone());
        keys.insert(outside, b"nowhere".to_vec());
        for chosen in [vec![1u8, 2, 3], vec![2], vec![3], vec![]] {
            let choose = |r: &ReplicaId| chosen.contains(&r.0[0]);
            let whole = repo
                .copies()
                .locations_where(|r| keys.contains_key(&r.key) && choose(&r.replica))
                .unwrap();
            // Afresh each time: no tree's files kept from a reading before.
            let repo = Repository::open(&repo.root).unwrap();
            let before = repo.store.index_probes();
            let few = repo.copies().locations_of(&keys, |r, _| choose(r)).unwrap();
            assert_eq!(few.records, whole.records, "replicas {chosen:?}");
            assert_eq!(few.cards, whole.cards);
            // File 5 was looked for by a walk that kept only it.
            let held = repo.claimed_files.lock().unwrap().len();
            assert_eq!(held, 0, "a claimed tree's files were held");
            // Asked again (a mount, before each fetch), the same records,
            // from the tree's files listed and kept this time.
            let again = repo.copies().locations_of(&keys, |r, _| choose(r)).unwrap();
            assert_eq!(again.records, whole.records, "replicas {chosen:?}");
            let held = repo.claimed_files.lock().unwrap().len();
            let walked = chosen.contains(&1) || chosen.contains(&2);
            assert_eq!(held > 0, walked, "replicas {chosen:?}");
            if !chosen.contains(&1) && !chosen.contains(&2) {
                assert_eq!(repo.store.index_probes(), before, "replicas {chosen:?}");
            }
        }
    }

    /// Whatever records a log holds of a tree's files, and in whatever
    /// merges they came, the log on disk reads as they merged in memory,
    /// claims or not.
    #[test]
    fn a_log_with_claims_reads_as_its_records_merged_in_memory() {
        let (_dir, repo, _tree, files) = repo_with_files(400);
        // Per replica: every file held at one of two times, or each file at random.
        let replica = prop_oneof![
            (1u64..3, proptest::collection::vec(0u64..3, 400)).prop_map(|(t, v)| v
                .into_iter()
                .map(|x| Some((t + x % 2, true)))
                .collect::<Vec<_>>()),
            proptest::collection::vec(proptest::option::of((1u64..4, any::<bool>())), 400),
        ];
        let claimed = std::cell::Cell::new(0);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 24,
            ..ProptestConfig::default()
        });
        // Per replica, per file: held or not (and when), or no word; then files noted later.
        type Case = (Vec<Vec<Option<(u64, bool)>>>, Vec<usize>);
        let check = |(replicas, later): Case| {
            let _ = std::fs::remove_file(repo.copies().locations_path());
            let mut expected = LocationLog::default();
            let records: Vec<LocationRecord> = replicas
                .iter()
                .enumerate()
                .flat_map(|(r, said)| {
                    said.iter().zip(&files).filter_map(move |(s, k)| {
                        s.map(|(t, present)| record(*k, r as u8 + 1, t, present))
                    })
                })
                .collect();
            merge(&repo, &mut expected, records);
            claimed.set(claimed.get() + !repo.copies().read_claims().unwrap().is_empty() as usize);
            prop_assert_eq!(&read(&repo).records, &expected.records);
            // Then a few records more, older and newer.
            let more: Vec<LocationRecord> = later
                .iter()
                .map(|i| record(files[*i], (*i % 3) as u8 + 1, (*i % 5) as u64, i % 2 == 0))
                .collect();
            merge(&repo, &mut expected, more);
            prop_assert_eq!(&read(&repo).records, &expected.records);
            Ok(())
        };
        // One case that must claim (three replicas holding every file at
        // once), so the property below always meets claims however its
        // random cases fall; then the random cases.
        check((vec![vec![Some((1, true)); 400]; 3], Vec::new())).unwrap();
        assert!(
            claimed.get() > 0,
            "three replicas holding every file made no claim"
        );
        runner
            .run(
                &(
                    proptest::collection::vec(replica, 3),
                    proptest::collection::vec(0usize..400, 0..20),
                ),
                check,
            )
            .unwrap();
    }

    /// Sent to a replica that reads the claimed trees, a log gives its
    /// claims of them as they are and only the records they do not stand
    /// for; read with the claims there, the pages read as the whole log
    /// does (journal included), whatever the records.
    #[test]
    fn a_log_sent_with_its_claims_reads_there_as_the_whole_log() {
        let (_dir, repo, tree, files) = repo_with_files(600);
        assert_eq!(repo.copies().trees_read_for_claims().unwrap(), vec![tree]);
        let sent_records = std::cell::Cell::new(usize::MAX);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 24,
            ..ProptestConfig::default()
        });
        let said = proptest::collection::vec(proptest::option::of((1u64..4, any::<bool>())), 600);
        runner
            .run(
                &(
                    proptest::collection::vec(0u64..3, 2),
                    said,
                    proptest::collection::vec((0usize..600, 0u64..6, any::<bool>()), 0..10),
                ),
                |(whole, said, journal)| {
                    let _ = std::fs::remove_file(repo.copies().locations_path());
                    let _ = std::fs::remove_file(repo.dmv.join("locations.journal"));
                    // Replicas 1 and 2 hold every file (at one time, a claim); 3 some.
                    let mut records: Vec<LocationRecord> = files
                        .iter()
                        .flat_map(|k| {
                            whole
                                .iter()
                                .enumerate()
                                .map(|(r, t)| record(*k, r as u8 + 1, t + 1, true))
                        })
                        .collect();
                    records.extend(
                        said.iter()
                            .zip(&files)
                            .filter_map(|(s, k)| s.map(|(t, present)| record(*k, 3, t, present))),
                    );
                    merge(&repo, &mut LocationLog::default(), records);
                    let notes = journal
                        .iter()
                        .map(|(i, t, present)| record(files[*i], (*i % 3) as u8 + 1, *t, *present))
                        .collect();
                    repo.copies().note_locations(notes).unwrap();
                    let whole_log = read(&repo).records;

                    let mut pages = repo.copies().location_pages_claiming(&[tree]).unwrap();
                    let claims = pages.claims().to_vec();
                    prop_assert_eq!(claims.len(), 2);
                    let page = pages.next_page(1 << 20).unwrap().unwrap();
                    let (sent, _) = LocationLog::read_encoded(&page).unwrap();
                    let sent: Vec<LocationRecord> = sent.collect();
                    sent_records.set(sent_records.get().min(sent.len()));
                    let read_there: std::collections::BTreeMap<_, _> = repo
                        .copies()
                        .records_with_claims(&claims, sent.into_iter().map(Ok))
                        .unwrap()
                        .map(|r| r.map(|r| (r.order(), r.stamp)))
                        .collect::<RepoResult<_>>()
                        .unwrap();
                    prop_assert_eq!(read_there, whole_log);
                    // Claims of trees the receiver does not read come as their records.
                    let mut pages = repo
                        .copies()
                        .location_pages_claiming(&[ObjectId([7; 32])])
                        .unwrap();
                    prop_assert!(pages.claims().is_empty());
                    let page = pages.next_page(1 << 20).unwrap().unwrap();
                    prop_assert_eq!(
                        LocationLog::decode(&page).unwrap().records,
                        read(&repo).records
                    );
                    Ok(())
                },
            )
            .unwrap();
        assert!(
            sent_records.get() <= 600 + 10,
            "sent {} records",
            sent_records.get()
        );
    }

    /// A replica asks for claims of the trees it reads, then of those its
    /// log claims, then of HEAD's ancestors' (the trees a hub's log may
    /// still claim), each once, within the bound.
    #[test]
    fn claims_are_asked_of_the_trees_read_then_claimed_then_before_head() {
        let (dir, repo, first, files) = repo_with_files(600);
        merge(&repo, &mut LocationLog::default(), held_by_two(&files));
        assert_eq!(repo.copies().claimed_trees().unwrap(), vec![first]);
        let mut trees = vec![first];
        for i in 0..3 {
            std::fs::write(dir.path().join(format!("new{i}")), format!("new {i}")).unwrap();
            commit_all(&repo);
            let head = repo.head_commit().unwrap().unwrap();
            trees.push(repo.commit(&head).unwrap().tree);
        }
        let head = trees[3];
        assert_eq!(
            repo.copies().trees_to_ask_claims_of(16).unwrap(),
            vec![head, first, trees[2], trees[1]]
        );
        assert_eq!(
            repo.copies().trees_to_ask_claims_of(2).unwrap(),
            vec![head, first]
        );
    }

    /// One commit on, the replicas that hold only the tree before keep
    /// their claims of it (a tree claimed stays a candidate), and a claim
    /// that gives back nothing the claims before it do not is left out:
    /// once every replica holds the new tree, the tree before is claimed
    /// no more. The log reads as its records throughout.
    #[test]
    fn a_tree_claimed_before_stays_claimed_while_a_replica_holds_only_it() {
        let (dir, repo, before, files) = repo_with_files(600);
        let mut expected = LocationLog::default();
        merge(&repo, &mut expected, held_by_two(&files));
        std::fs::write(dir.path().join("new"), "new").unwrap();
        commit_all(&repo);
        let head = repo
            .commit(&repo.head_commit().unwrap().unwrap())
            .unwrap()
            .tree;
        let head_files = repo.copies().tree_files(&head).unwrap().unwrap();
        let new = *head_files.iter().find(|k| !files.contains(k)).unwrap();
        let claim = |tree, replica: u8, time_ns| TreeClaim {
            tree,
            replica: ReplicaId([replica; 16]),
            time_ns,
        };
        let written = |repo: &Repository| {
            let bytes = std::fs::read(repo.copies().locations_path()).unwrap();
            u64::from_le_bytes(bytes[12..20].try_into().unwrap())
        };
        // Replica 3 holds the new tree whole; its claim of the tree before gives nothing more.
        let third = head_files.iter().map(|k| record(*k, 3, 30, true)).collect();
        merge(&repo, &mut expected, third);
        let mut want = vec![
            claim(before, 1, 10),
            claim(before, 2, 20),
            claim(head, 3, 30),
        ];
        want.sort_unstable();
        assert_eq!(repo.copies().read_claims().unwrap(), want);
        assert_eq!(written(&repo), 0);
        assert_eq!(read(&repo).records, expected.records);
        // Replicas 1 and 2 get the new file: their claims of HEAD's tree give back the rest.
        merge(
            &repo,
            &mut expected,
            vec![record(new, 1, 40, true), record(new, 2, 40, true)],
        );
        let mut want = vec![claim(head, 1, 10), claim(head, 2, 20), claim(head, 3, 30)];
        want.sort_unstable();
        assert_eq!(repo.copies().read_claims().unwrap(), want);
        assert_eq!(repo.copies().claimed_trees().unwrap(), vec![head]);
        assert_eq!(written(&repo), 2);
        assert_eq!(read(&repo).records, expected.records);
    }

    /// A log received as this one is written (its own pages, sent to a
    /// replica that reads the claimed tree) merges nothing and reads no
    /// tree (no index probe), nor the log's records as the claims stand
    /// for them; one that differs in a record is merged as before, and
    /// what this log knows that it did not comes back as news.
    #[test]
    fn a_log_written_alike_merges_nothing_without_reading_the_claimed_tree() {
        let (_dir, repo, tree, files) = repo_with_files(600);
        let mut expected = LocationLog::default();
        let mut records = held_by_two(&files);
        records.extend(files[..50].iter().map(|k| record(*k, 3, 30, true)));
        merge(&repo, &mut expected, records);
        assert_eq!(repo.copies().read_claims().unwrap().len(), 2);
        let merge_sent =
            |(claims, records, cards): (&[TreeClaim], &[LocationRecord], &ReplicaCards)| {
                merge_received(&repo, (claims, records, cards), true)
            };
        let (claims, records, cards) = sent(&repo, &[tree]);
        assert_eq!(records.len(), 50);
        // The first time, this replica's own card is news to its log.
        let (changed, news, _) = merge_sent((&claims, &records, &cards));
        assert_eq!((changed, news.records.len()), (1, 0));

        let log_before = std::fs::read(repo.copies().locations_path()).unwrap();
        let (claims, records, cards) = sent(&repo, &[tree]);
        let (changed, news, probes) = merge_sent((&claims, &records, &cards));
        assert_eq!((changed, news.records.len(), probes), (0, 0, 0));
        let log_after = std::fs::read(repo.copies().locations_path()).unwrap();
        assert!(log_before == log_after, "the log was rewritten");

        // A drop the other replica heard of: merged, the tree read.
        let dropped = record(files[0], 3, 40, false);
        let mut differing = records.clone();
        differing[0] = dropped;
        let (changed, news, probes) = merge_sent((&claims, &differing, &cards));
        assert_eq!((changed, news.records.len()), (1, 0));
        assert!(probes > 0);
        expected.record(dropped.key, dropped.replica, dropped.stamp);
        assert_eq!(read(&repo).records, expected.records);

        // A log lacking a record this one holds gets it back as news.
        let (claims, records, cards) = sent(&repo, &[tree]);
        let (changed, news, _) = merge_sent((&claims, &records[1..], &cards));
        assert_eq!((changed, news.records), (0, vec![records[0]]));
    }

    /// A log received written otherwise than this one (as its records,
    /// where this one claims the tree) that changed nothing and had no
    /// news is merged once: the same exchange again reads no tree, until
    /// this log changes. A damaged `.dmv/locations.seen` is only a miss.
    #[test]
    fn an_exchange_that_changed_nothing_is_not_merged_again_until_a_log_changes() {
        let (_dir, repo, _tree, files) = repo_with_files(600);
        let mut expected = LocationLog::default();
        let records = held_by_two(&files);
        merge(&repo, &mut expected, records);
        // Sent as records, claims of no tree: not written as this log is.
        let merge_sent = |records: &[LocationRecord], cards: &ReplicaCards| {
            let (changed, news, probes) = merge_received(&repo, (&[], records, cards), false);
            (changed, news.is_empty(), probes)
        };
        // The first time, this replica's own card is news to its log.
        let (_, records, cards) = sent(&repo, &[]);
        assert_eq!(records.len(), 1200);
        assert_eq!(merge_sent(&records, &cards).0, 1);
        let (_, records, cards) = sent(&repo, &[]);
        let (changed, no_news, probes) = merge_sent(&records, &cards);
        assert_eq!((changed, no_news), (0, true));
        assert!(probes > 0, "the claimed tree was not read");
        assert_eq!(merge_sent(&records, &cards), (0, true, 0));
        // Another log (one record fewer: news for it) is merged, and not kept as seen.
        assert_eq!(merge_sent(&records[1..], &cards).0, 0);
        assert!(merge_sent(&records[1..], &cards).2 > 0);
        assert_eq!(merge_sent(&records, &cards), (0, true, 0));
        // A damaged cache is a miss, then written again.
        let seen_at = repo.dmv.join("locations.seen");
        std::fs::write(&seen_at, [7u8; 65]).unwrap();
        assert!(merge_sent(&records, &cards).2 > 0);
        assert_eq!(merge_sent(&records, &cards), (0, true, 0));
        // This log changed: the exchange is merged again, and again (it has
        // news for the other log now, asked for or not).
        merge(&repo, &mut expected, vec![record(files[1], 3, 30, true)]);
        for _ in 0..2 {
            let (changed, _, probes) = merge_sent(&records, &cards);
            assert_eq!(changed, 0);
            assert!(probes > 0);
        }
        assert_eq!(read(&repo).records, expected.records);
    }

    proptest! {
        /// Whatever `.dmv/locations.seen` holds, reading it gives whole
        /// entries, at most eight, or none.
        #[test]
        fn any_seen_file_reads_as_whole_entries_or_none(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("locations.seen");
            std::fs::write(&path, &bytes).unwrap();
            let seen = crate::replica::location_file::read_seen(&path);
            let whole = bytes.len() % 64 == 0 && bytes.len() <= 8 * 64;
            prop_assert_eq!(seen.concat(), if whole { bytes } else { Vec::new() });
        }
    }

    /// Once the records end, the claims' records follow without asking
    /// for records again: a spool's reader would read its file each time
    /// (500,000 empty reads in a clone's merge of 100,000 files).
    #[test]
    fn the_records_are_not_asked_for_again_once_they_end() {
        let (_dir, repo, tree, files) = repo_with_files(50);
        let asked = std::cell::Cell::new(0);
        let mut given = vec![record(files[0], 2, 1, true)].into_iter();
        let records = std::iter::from_fn(|| {
            asked.set(asked.get() + 1);
            given.next().map(Ok)
        });
        let claim = TreeClaim {
            tree,
            replica: ReplicaId([1; 16]),
            time_ns: 5,
        };
        let read = repo
            .copies()
            .records_with_claims(&[claim], records)
            .unwrap()
            .count();
        assert_eq!(read, files.len() + 1);
        assert_eq!(asked.get(), 2, "the record, then the end once");
    }

    /// A log with claims damaged anywhere is refused as damaged, never read
    /// wrong nor a panic.
    #[test]
    fn a_damaged_log_with_claims_is_refused_wherever_the_damage_is() {
        let (_dir, repo, _tree, files) = repo_with_files(600);
        let records = files
            .iter()
            .flat_map(|k| [record(*k, 1, 10, true), record(*k, 2, 20, true)]);
        merge(&repo, &mut LocationLog::default(), records.collect());
        let good = std::fs::read(repo.copies().locations_path()).unwrap();
        assert_eq!(repo.copies().read_claims().unwrap().len(), 2);
        for at in 0..good.len() {
            let mut bytes = good.clone();
            bytes[at] ^= 1 << (at % 8);
            std::fs::write(repo.copies().locations_path(), &bytes).unwrap();
            let err = repo.copies().check_locations().unwrap_err();
            assert!(matches!(err, crate::RepoError::Corrupt { .. }), "{err}");
        }
        std::fs::write(repo.copies().locations_path(), &good).unwrap();
        repo.copies().check_locations().unwrap();
    }

    /// A log claiming more trees or claims than the bounds allow, or out of
    /// order, is refused.
    #[test]
    fn claims_beyond_their_bounds_or_out_of_order_are_refused() {
        let claim = |t: u8, r: u8| TreeClaim {
            tree: ObjectId([t; 32]),
            replica: ReplicaId([r; 16]),
            time_ns: 1,
        };
        assert!(check_claims(&[claim(1, 1), claim(1, 2), claim(2, 1)]).is_ok());
        assert!(check_claims(&[claim(1, 2), claim(1, 1)]).is_err());
        assert!(check_claims(&[claim(1, 1), claim(1, 1)]).is_err());
        let trees: Vec<TreeClaim> = (0..=MAX_CLAIMED_TREES as u8).map(|t| claim(t, 1)).collect();
        assert!(check_claims(&trees).is_err());
        let many: Vec<TreeClaim> = (0..=MAX_CLAIMS as u32)
            .map(|i| TreeClaim {
                tree: ObjectId([0; 32]),
                replica: ReplicaId(u128::from(i).to_be_bytes()),
                time_ns: 1,
            })
            .collect();
        assert!(check_claims(&many).is_err());
    }

    /// Claims of several trees that share files, a replica claiming more
    /// than one of them, read as the records they stand for: per file and
    /// replica one record, at the newest claim's time, in record order.
    #[test]
    fn claims_of_trees_sharing_files_read_as_one_record_per_file_and_replica() {
        let (dir, repo, first, _) = repo_with_files(60);
        let mut trees = vec![first];
        // A second tree without f0..f19 and with g0..g19; a third with f20..f39 and g0..g9.
        for (gone, added) in [(0..20, 0..20), (40..60, 10..20)] {
            for i in gone {
                std::fs::remove_file(dir.path().join(format!("f{i}"))).unwrap();
            }
            for i in added.clone() {
                let file = dir.path().join(format!("g{i}"));
                match trees.len() {
                    1 => std::fs::write(file, format!("more {i}")).unwrap(),
                    _ => std::fs::remove_file(file).unwrap(),
                }
            }
            commit_all(&repo);
            let head = repo.head_commit().unwrap().unwrap();
            trees.push(repo.commit(&head).unwrap().tree);
        }
        let files: Vec<TreeFiles> = trees
            .iter()
            .map(|t| repo.copies().tree_files(t).unwrap().unwrap())
            .collect();
        assert_eq!(
            files.iter().map(|f| f.len()).collect::<Vec<_>>(),
            [60, 60, 30]
        );
        let claims = proptest::collection::vec((0usize..4, 1u8..5, 1u64..6), 0..12);
        proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 64,
            ..ProptestConfig::default()
        })
        .run(&claims, |claims| {
            // Tree 3 is not in the store: its claims stand for nothing.
            let absent = ObjectId([0x33; 32]);
            let claims: Vec<TreeClaim> = claims
                .into_iter()
                .map(|(tree, replica, time_ns)| TreeClaim {
                    tree: trees.get(tree).copied().unwrap_or(absent),
                    replica: ReplicaId([replica; 16]),
                    time_ns,
                })
                .collect();
            let mut expected: BTreeMap<(ObjectId, ReplicaId), u64> = BTreeMap::new();
            for claim in &claims {
                let Some(i) = trees.iter().position(|t| *t == claim.tree) else {
                    continue;
                };
                for key in files[i].iter() {
                    let time = expected.entry((*key, claim.replica)).or_default();
                    *time = (*time).max(claim.time_ns);
                }
            }
            let expected: Vec<LocationRecord> = expected
                .into_iter()
                .map(|((key, replica), time_ns)| LocationRecord {
                    key,
                    replica,
                    stamp: Stamp {
                        time_ns,
                        present: true,
                    },
                })
                .collect();
            let mut expansion = Expansion::new(&repo, &claims).unwrap();
            let read: Vec<LocationRecord> =
                std::iter::from_fn(|| expansion.next_beside(&mut None)).collect();
            prop_assert_eq!(read, expected);
            Ok(())
        })
        .unwrap();
    }

    /// The claim's bytes are pinned.
    #[test]
    fn the_claim_encoding_is_pinned() {
        let claim = TreeClaim {
            tree: ObjectId([0xab; 32]),
            replica: ReplicaId([0x01; 16]),
            time_ns: 0x0102_0304_0506_0708,
        };
        let mut out = Vec::new();
        encode_claims(&[claim], &mut out).unwrap();
        let mut golden = vec![1, 0, 0, 0];
        golden.extend([0xab; 32]);
        golden.extend([0x01; 16]);
        golden.extend([8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(out, golden);
        assert_eq!(TreeClaim::decode(out[4..].try_into().unwrap()), claim);
    }
}
