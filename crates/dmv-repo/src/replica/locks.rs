//! Exclusive locks on paths, for files nobody can merge (a Photoshop file,
//! a video edit). A lock belongs to the repository, not to a branch: the
//! served repository keeps one table (`.dmv/locks`) of which path is held
//! by whom, since when and from which replica. Pushes that change a path
//! held by someone else are refused by the repository that keeps the
//! table, whatever branch they go to.
//!
//! A replica that works against such a repository keeps what it last
//! learned of the table (`.dmv/locks-known`): who it is there and whose
//! locks there were. That copy is only a hint (status shows it, and a
//! lockable file it holds is left writable at checkout); the remote's
//! table decides.

use crate::repository::handles::Locks;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::PathBuf;

use dmv_store::object::{Commit, EntryKind, TreeEntry, TreeNode};
use dmv_store::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::tree::read_dir_with;
use crate::replica::grants::{GrantObjects, RefMove};
use crate::time::utc_time;

/// One held path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathLock {
    /// A path in the repository, `/`-separated, as in its trees.
    pub path: String,
    /// Who holds it: the server's name for the caller (a token's user, the ssh user).
    pub owner: String,
    /// The replica it was taken from (its name).
    pub replica: String,
    /// When, in seconds since 1970 (UTC).
    pub since: u64,
}

impl PathLock {
    /// "alice (from alice@laptop:/photos, since 2026-11-25 14:03:00 UTC)".
    pub fn holder(&self) -> String {
        format!(
            "{} (from {}, since {})",
            self.owner,
            self.replica,
            utc_time(self.since as i64)
        )
    }
}

const MAGIC: &[u8; 8] = b"DMVLOCKS";
const FORMAT: u8 = 1;
/// A lock table larger than this is damage, not locks (a million paths take ~100 MB).
/// No table past it is ever saved, so a table read back is never refused for its size.
const MAX_TABLE_BYTES: u64 = 256 << 20;
/// Paths locked or released in one call.
pub const MAX_PATHS_PER_LOCK_CALL: usize = 10_000;
/// A replica's name as a lock records it (the client's word: one request
/// whose 7.5 MB replica name was copied into 40 locks made a table of
/// 300 MB that no push could read again).
pub const MAX_REPLICA_NAME_BYTES: usize = 1024;
/// A holder's name (a token's user, an account).
pub const MAX_OWNER_BYTES: usize = 255;
/// What one holder's locks may take in a table: about 100,000 locks of
/// ordinary paths, and a sixteenth of the table, so one writer cannot
/// fill it for everyone.
pub const MAX_LOCK_BYTES_PER_OWNER: u64 = 16 << 20;

/// Every lock of a repository, by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockTable {
    locks: BTreeMap<String, PathLock>,
}

impl LockTable {
    /// `DMVLOCKS`, format 1, the locks in path order (postcard), then the
    /// BLAKE3 hash of all that, so damage is found rather than read as locks.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(FORMAT);
        let locks: Vec<&PathLock> = self.locks.values().collect();
        out.extend(postcard::to_allocvec(&locks).expect("locks encode"));
        let hash = blake3::hash(&out);
        out.extend(hash.as_bytes());
        out
    }

    /// Reads an encoded table; the error says what is wrong (damage, an
    /// unknown format, a bad or doubled path).
    pub fn decode(bytes: &[u8]) -> Result<LockTable, String> {
        if bytes.len() < MAGIC.len() + 1 + 32 || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a lock table".into());
        }
        let (body, hash) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes() != hash {
            return Err("its checksum does not match (damaged)".into());
        }
        if body[MAGIC.len()] != FORMAT {
            return Err(format!(
                "format {} is not known to this dmv",
                body[MAGIC.len()]
            ));
        }
        let (locks, rest): (Vec<PathLock>, &[u8]) =
            postcard::take_from_bytes(&body[MAGIC.len() + 1..])
                .map_err(|e| format!("cannot read its locks: {e}"))?;
        if !rest.is_empty() {
            return Err("bytes after the locks".into());
        }
        let mut table = LockTable::default();
        for lock in locks {
            check_lock_path(&lock.path).map_err(|why| format!("lock on {:?}: {why}", lock.path))?;
            let path = lock.path.clone();
            if table.locks.insert(path.clone(), lock).is_some() {
                return Err(format!("{path} is locked twice"));
            }
        }
        Ok(table)
    }

    /// Every lock, in path order.
    pub fn all(&self) -> impl Iterator<Item = &PathLock> {
        self.locks.values()
    }

    /// The lock on `path`, if it is locked.
    pub fn get(&self, path: &str) -> Option<&PathLock> {
        self.locks.get(path)
    }

    /// Whether no path is locked.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Locks every path for `owner` from `replica`, or none of them (see
    /// [`take_locks`]). Returns the locks, in the order asked.
    /// Refused past [`MAX_LOCK_BYTES_PER_OWNER`] for the owner's locks, or
    /// past the table's own bound.
    pub fn lock(
        &mut self,
        paths: &[String],
        owner: &str,
        replica: &str,
        now: u64,
    ) -> RepoResult<Vec<PathLock>> {
        check_lock_call(paths.len(), owner, replica)?;
        let adding: u64 = paths
            .iter()
            .filter(|p| !self.locks.contains_key(p.as_str()))
            .map(|p| lock_bytes(p, owner, replica))
            .sum();
        let owners: u64 = self
            .locks
            .values()
            .filter(|l| l.owner == owner)
            .map(|l| lock_bytes(&l.path, &l.owner, &l.replica))
            .sum();
        if owners + adding > MAX_LOCK_BYTES_PER_OWNER {
            let detail = format!("{owner}'s locks would take {} KiB of the lock table, more than one holder may ({} KiB)", (owners + adding) >> 10, MAX_LOCK_BYTES_PER_OWNER >> 10);
            return Err(RepoError::LockBudget { detail });
        }
        let all: u64 = self
            .locks
            .values()
            .map(|l| lock_bytes(&l.path, &l.owner, &l.replica))
            .sum();
        if all + adding > MAX_TABLE_BYTES - (1 << 20) {
            return Err(RepoError::LockBudget {
                detail: format!("the lock table is full ({} MiB)", MAX_TABLE_BYTES >> 20),
            });
        }
        take_locks(self, paths, owner, replica, now)
    }

    /// Releases every path, or none (see [`release_locks`]).
    pub fn unlock(
        &mut self,
        paths: &[String],
        owner: &str,
        force: bool,
    ) -> RepoResult<Vec<PathLock>> {
        release_locks(self, paths, owner, force)
    }

    /// The locks someone other than `user` holds (every lock when `user` is unknown).
    pub fn held_by_others<'a>(
        &'a self,
        user: Option<&'a str>,
    ) -> impl Iterator<Item = &'a PathLock> + 'a {
        self.locks
            .values()
            .filter(move |l| Some(l.owner.as_str()) != user)
    }
}

impl LockStore for LockTable {
    type Error = RepoError;

    fn create(&mut self, lock: &PathLock) -> RepoResult<bool> {
        if self.locks.contains_key(&lock.path) {
            return Ok(false);
        }
        self.locks.insert(lock.path.clone(), lock.clone());
        Ok(true)
    }

    fn read(&mut self, path: &str) -> RepoResult<Option<PathLock>> {
        Ok(self.locks.get(path).cloned())
    }

    fn remove(&mut self, path: &str) -> RepoResult<()> {
        self.locks.remove(path);
        Ok(())
    }
}

/// Where path locks are kept: a served repository's table, or a bucket's
/// lock objects (one per path, made by a conditional create). The rules of
/// taking and releasing locks are [`take_locks`] and [`release_locks`],
/// written once for every such store.
pub trait LockStore {
    /// The store's error; the rules' refusals are [`RepoError`]s.
    type Error: From<RepoError>;
    /// Records `lock` if its path is not locked; false if it is.
    fn create(&mut self, lock: &PathLock) -> Result<bool, Self::Error>;
    /// The lock on `path`; None if it is not locked.
    fn read(&mut self, path: &str) -> Result<Option<PathLock>, Self::Error>;
    /// Removes the lock on `path` (release checks first that it is there).
    fn remove(&mut self, path: &str) -> Result<(), Self::Error>;
}

/// Locks every path for `owner` from `replica`, or none of them: a path
/// held by someone else, or by the same person from another replica,
/// refuses the whole call and undoes the locks it took. Paths already held
/// by this owner and replica keep their lock. Returns the locks, in the
/// order asked.
pub fn take_locks<S: LockStore + ?Sized>(
    store: &mut S,
    paths: &[String],
    owner: &str,
    replica: &str,
    now: u64,
) -> Result<Vec<PathLock>, S::Error> {
    check_lock_call(paths.len(), owner, replica)?;
    for path in paths {
        check_lock_path(path).map_err(|reason| RepoError::BadPath {
            path: path.clone(),
            reason,
        })?;
    }
    let (mut taken, mut created): (Vec<PathLock>, Vec<&str>) = (Vec::new(), Vec::new());
    for path in paths {
        let lock = PathLock {
            path: path.clone(),
            owner: owner.into(),
            replica: replica.into(),
            since: now,
        };
        if !store.create(&lock)? {
            match store.read(path)? {
                Some(held) if held.owner == owner && held.replica == replica => {
                    taken.push(held);
                    continue;
                }
                // Released since the create failed: try once more.
                None if store.create(&lock)? => {}
                other => {
                    for mine in created {
                        store.remove(mine)?;
                    }
                    let holder = other.map_or_else(
                        || "someone else (it changed while we looked)".to_string(),
                        |l| l.holder(),
                    );
                    return Err(RepoError::PathLocked {
                        path: path.clone(),
                        holder,
                    }
                    .into());
                }
            }
        }
        created.push(path);
        taken.push(lock);
    }
    Ok(taken)
}

/// Releases every path, or none: a path not locked, or held by someone
/// else without `force`, refuses the whole call. Returns what was released.
pub fn release_locks<S: LockStore + ?Sized>(
    store: &mut S,
    paths: &[String],
    owner: &str,
    force: bool,
) -> Result<Vec<PathLock>, S::Error> {
    check_lock_call(paths.len(), owner, "")?;
    let mut released: Vec<PathLock> = Vec::new();
    for path in paths {
        match store.read(path)? {
            None => return Err(RepoError::PathNotLocked { path: path.clone() }.into()),
            Some(l) if l.owner != owner && !force => {
                return Err(RepoError::LockHeldByOther {
                    path: path.clone(),
                    holder: l.holder(),
                }
                .into())
            }
            Some(l) if released.iter().any(|r| r.path == l.path) => {}
            Some(l) => released.push(l),
        }
    }
    for lock in &released {
        store.remove(&lock.path)?;
    }
    Ok(released)
}

/// What one lock takes in an encoded table, about (the varint lengths and
/// time are counted at their largest).
fn lock_bytes(path: &str, owner: &str, replica: &str) -> u64 {
    (path.len() + owner.len() + replica.len() + 3 * 2 + 10) as u64
}

/// The budgets of one lock or unlock call: how many paths, and the names
/// every lock will carry.
fn check_lock_call(paths: usize, owner: &str, replica: &str) -> RepoResult<()> {
    let detail = if paths > MAX_PATHS_PER_LOCK_CALL {
        format!("{paths} paths in one call, more than {MAX_PATHS_PER_LOCK_CALL}")
    } else if replica.len() > MAX_REPLICA_NAME_BYTES {
        format!(
            "a replica name of {} bytes, more than {MAX_REPLICA_NAME_BYTES}",
            replica.len()
        )
    } else if owner.len() > MAX_OWNER_BYTES {
        format!(
            "a holder's name of {} bytes, more than {MAX_OWNER_BYTES}",
            owner.len()
        )
    } else {
        return Ok(());
    };
    Err(RepoError::LockBudget { detail })
}

/// A lock path is a path of the repository's trees: relative, `/`-separated,
/// no empty, `.` or `..` parts, not inside `.dmv`.
pub fn check_lock_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("an empty path cannot be locked");
    }
    if path.len() > 4096 {
        return Err("the path is longer than 4096 bytes");
    }
    for part in path.split('/') {
        match part {
            "" => return Err("a lock path is relative, without empty parts"),
            "." | ".." => return Err("a lock path has no . or .. parts"),
            ".dmv" => return Err("the repository's own files cannot be locked"),
            _ if part.contains('\0') => return Err("a path has no NUL bytes"),
            _ => {}
        }
    }
    Ok(())
}

/// The lock table, held against every other writer of it until dropped.
pub struct HeldLocks {
    path: PathBuf,
    _flock: File,
    /// The locks; changed here, written with [`HeldLocks::save`].
    pub table: LockTable,
}

impl HeldLocks {
    /// Writes the table back (durably: a lock said to be taken stays taken).
    /// A table past its bound is refused here, before it replaces the one
    /// on disk: what is saved can always be read back.
    pub fn save(&self) -> RepoResult<()> {
        let bytes = self.table.encode();
        if bytes.len() as u64 > MAX_TABLE_BYTES {
            return Err(RepoError::LockBudget {
                detail: format!(
                    "the lock table would be {} MiB, more than {} MiB",
                    bytes.len() >> 20,
                    MAX_TABLE_BYTES >> 20
                ),
            });
        }
        crate::atomic::write_atomic(&self.path, &bytes)
    }
}

impl Locks<'_> {
    /// Takes the lock table's own lock (`.dmv/locks.lock`, an flock the
    /// kernel drops if its holder dies) and reads the table. Locking a path
    /// and checking a push against the locks both run under it, so a lock
    /// is either taken before a push is checked or after its refs moved.
    pub fn hold_locks(&self) -> RepoResult<HeldLocks> {
        let lock_path = self.dmv.join("locks.lock");
        let flock = crate::atomic::hold_lock_file(&lock_path)?;
        let path = self.dmv.join("locks");
        let table = read_table(&path)?;
        Ok(HeldLocks {
            path,
            _flock: flock,
            table,
        })
    }

    /// The lock table as it is now (without holding it).
    pub fn path_locks(&self) -> RepoResult<LockTable> {
        read_table(&self.dmv.join("locks"))
    }

    /// The first of `commits` (new to this repository) that changes a path
    /// one of `locks` holds, with that lock. A commit changes a path when
    /// the path's entry differs from the one in each of its parents (a
    /// merge that takes one side's version changes nothing there). Each
    /// commit is compared with its parents folder by folder, reading only
    /// the folders on the way to a locked path that differ: the cost grows
    /// with what the commits change, not with the locks or the tree.
    pub fn change_to_locked<'l>(
        &self,
        commits: &[ObjectId],
        locks: &[&'l PathLock],
    ) -> RepoResult<Option<(&'l PathLock, ObjectId)>> {
        let by_path = LocksByPath::new(locks);
        for id in commits {
            if let Some(first) = self.locks_changed_by(id, &by_path)?.into_iter().min() {
                return Ok(Some((locks[first], *id)));
            }
        }
        Ok(None)
    }

    /// Those of `locks` whose paths one of `commits` changes (as
    /// [`Locks::change_to_locked`] has it), in the order given.
    pub fn locks_changed<'l>(
        &self,
        commits: &[ObjectId],
        locks: &[&'l PathLock],
    ) -> RepoResult<Vec<&'l PathLock>> {
        let by_path = LocksByPath::new(locks);
        let mut changed = HashSet::new();
        for id in commits {
            changed.extend(self.locks_changed_by(id, &by_path)?);
        }
        let mut changed: Vec<usize> = changed.into_iter().collect();
        changed.sort_unstable();
        Ok(changed.into_iter().map(|l| locks[l]).collect())
    }

    /// The places in `locks` of the locks whose paths commit `id` changes.
    fn locks_changed_by(
        &self,
        id: &ObjectId,
        locks: &LocksByPath<'_>,
    ) -> RepoResult<HashSet<usize>> {
        if locks.sorted.is_empty() {
            return Ok(HashSet::new());
        }
        let objects = RepoObjects(self.repository());
        let commit = self.commit(id)?;
        // A first commit "changes" only the paths it has: against no tree.
        let parents = match commit.parents.is_empty() {
            true => vec![None],
            false => commit
                .parents
                .iter()
                .map(|p| self.commit(p).map(|c| Some(c.tree)))
                .collect::<RepoResult<Vec<_>>>()?,
        };
        let mut changed: Option<HashSet<usize>> = None;
        for parent in parents {
            let here = locked_changes(&objects, parent, Some(commit.tree), locks)?
                .into_iter()
                .map(|c| c.lock);
            let now: HashSet<usize> = match changed {
                None => here.collect(),
                Some(before) => here.filter(|l| before.contains(l)).collect(),
            };
            if now.is_empty() {
                return Ok(now);
            }
            changed = Some(now);
        }
        Ok(changed.unwrap_or_default())
    }
}

/// A repository's own objects, as the rules of locks, grants and review
/// read them.
pub struct RepoObjects<'r>(pub &'r crate::Repository);

impl GrantObjects for RepoObjects<'_> {
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
        let id = self.0.peel(id)?;
        Ok((id, self.0.commit(&id)?))
    }

    fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode> {
        Ok(self.0.store.read_decoded(id, dmv_store::ObjectKind::Tree)?)
    }
}

/// A path's entry in a tree (None: the tree does not hold the path).
type Leaf = Option<(EntryKind, ObjectId)>;

/// Locks in path order (of the bytes), each with its place in the
/// caller's list, so that those at or under a path are found by a binary
/// search.
struct LocksByPath<'a> {
    sorted: Vec<(&'a [u8], usize)>,
}

impl<'a> LocksByPath<'a> {
    fn new(locks: &[&'a PathLock]) -> LocksByPath<'a> {
        let mut sorted: Vec<(&[u8], usize)> = locks
            .iter()
            .enumerate()
            .map(|(i, l)| (l.path.as_bytes(), i))
            .collect();
        sorted.sort_unstable();
        LocksByPath { sorted }
    }
}

/// The run of `within` (in path order) whose paths start with `prefix`.
fn starting_with<'s, 'a>(
    within: &'s [(&'a [u8], usize)],
    prefix: &[u8],
) -> &'s [(&'a [u8], usize)] {
    let start = within.partition_point(|(p, _)| *p < prefix);
    let rest = &within[start..];
    &rest[..rest.partition_point(|(p, _)| p.starts_with(prefix))]
}

/// A locked path whose entry differs between two trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LockedChange {
    /// The lock's place in the caller's list.
    lock: usize,
    before: Leaf,
    after: Leaf,
}

/// Each lock whose path's entry differs between trees `before` and `after`
/// (None: no tree), with both entries. Folders with the same id on both
/// sides, and folders no lock is under, are not read.
fn locked_changes(
    objects: &dyn GrantObjects,
    before: Option<ObjectId>,
    after: Option<ObjectId>,
    locks: &LocksByPath<'_>,
) -> RepoResult<Vec<LockedChange>> {
    let mut found = Vec::new();
    walk_locked(
        objects,
        &mut Vec::new(),
        before,
        after,
        &locks.sorted,
        &mut found,
    )?;
    Ok(found)
}

/// [`locked_changes`] in folder `at` (its path and a `/`, empty at the
/// root; `before`, `after`: the folder on each side, None where it is not
/// one), for `under`, the locks whose paths start with `at`.
fn walk_locked(
    objects: &dyn GrantObjects,
    at: &mut Vec<u8>,
    before: Option<ObjectId>,
    after: Option<ObjectId>,
    under: &[(&[u8], usize)],
    found: &mut Vec<LockedChange>,
) -> RepoResult<()> {
    if before == after || under.is_empty() {
        return Ok(());
    }
    let read = |id: &ObjectId| objects.tree_node(id);
    let list = |d: Option<ObjectId>| d.map_or(Ok(Vec::new()), |d| read_dir_with(&read, &d));
    let (old, new) = (list(before)?, list(after)?);
    let leaf = |e: &TreeEntry| Some((e.kind, e.id));
    // Both folders' entries are in name order: one pass over the two.
    let (mut i, mut j) = (0, 0);
    let mut differing: Vec<(&[u8], Leaf, Leaf)> = Vec::new();
    loop {
        match (old.get(i), new.get(j)) {
            (None, None) => break,
            (Some(o), Some(n)) if o.name == n.name => {
                if (o.kind, o.id) != (n.kind, n.id) {
                    differing.push((&o.name, leaf(o), leaf(n)));
                }
                (i, j) = (i + 1, j + 1);
            }
            (Some(o), n) if n.is_none_or(|n| o.name < n.name) => {
                differing.push((&o.name, leaf(o), None));
                i += 1;
            }
            (_, Some(n)) => {
                differing.push((&n.name, None, leaf(n)));
                j += 1;
            }
            (Some(_), None) => unreachable!("matched above"),
        }
    }
    let folder = |e: Leaf| e.filter(|(k, _)| *k == EntryKind::Dir).map(|(_, id)| id);
    for (name, was, now) in differing {
        let len = at.len();
        at.extend_from_slice(name);
        let mine = starting_with(under, at);
        // The lock on this very path sorts first among those starting with it.
        for (_, lock) in mine.iter().take_while(|(p, _)| p.len() == at.len()) {
            found.push(LockedChange {
                lock: *lock,
                before: was,
                after: now,
            });
        }
        at.push(b'/');
        let deeper = starting_with(mine, at);
        if !deeper.is_empty() {
            walk_locked(objects, at, folder(was), folder(now), deeper, found)?;
        }
        at.truncate(len);
    }
    Ok(())
}

/// Commits' trees and which locked paths differ between two trees, each
/// read once for one check of a set of moves.
struct LockedTrees<'o> {
    objects: &'o dyn GrantObjects,
    trees: HashMap<ObjectId, ObjectId>,
    changes: HashMap<(Option<ObjectId>, Option<ObjectId>), Vec<LockedChange>>,
}

impl LockedTrees<'_> {
    fn tree(&mut self, commit: Option<ObjectId>) -> RepoResult<Option<ObjectId>> {
        let Some(commit) = commit else {
            return Ok(None);
        };
        if let Some(tree) = self.trees.get(&commit) {
            return Ok(Some(*tree));
        }
        let tree = self.objects.commit(&commit)?.1.tree;
        self.trees.insert(commit, tree);
        Ok(Some(tree))
    }

    fn changes(
        &mut self,
        before: Option<ObjectId>,
        after: Option<ObjectId>,
        locks: &LocksByPath<'_>,
    ) -> RepoResult<&[LockedChange]> {
        let (before, after) = (self.tree(before)?, self.tree(after)?);
        if !self.changes.contains_key(&(before, after)) {
            let found = locked_changes(self.objects, before, after, locks)?;
            self.changes.insert((before, after), found);
        }
        Ok(&self.changes[&(before, after)])
    }

    /// Whether one of `tips` holds lock `lock`'s path as commit `at` does.
    fn held_by_any(
        &mut self,
        tips: &[ObjectId],
        at: ObjectId,
        lock: usize,
        locks: &LocksByPath<'_>,
    ) -> RepoResult<bool> {
        for tip in tips {
            if !self
                .changes(Some(*tip), Some(at), locks)?
                .iter()
                .any(|c| c.lock == lock)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The rule of locks, as an invariant of what branches hold: refuses a set
/// of ref moves that would leave any branch holding, at a path someone else
/// has locked (`locks`), another version than it held before, whatever the
/// commits in between did (a merge of an old side, a restore and an amend,
/// a reset and a force push all end at the tips). A new branch may hold
/// the path only as some branch already does (or not at all); a branch may
/// be deleted unless it is the last to hold its version of the path.
/// `branches` are the target's branches before the moves; tags are not
/// branches and are not held to this. Every kind of hub (a repository on a
/// disk, a server in front of a bucket) calls this atomically with its ref
/// swap; `objects` reads commits and trees wherever that hub keeps them.
/// Each move's old and new trees are compared folder by folder for the
/// locked paths only, skipping folders alike on both sides: what a check
/// reads grows with what the moves change, not with the locks held.
pub fn refuse_moves_over_locks<E: From<RepoError>>(
    moves: &[RefMove<'_>],
    branches: &[(String, ObjectId)],
    locks: &[&PathLock],
    objects: &dyn GrantObjects,
) -> Result<(), E> {
    let is_branch = |name: &str| {
        name.starts_with(crate::ref_names::BRANCHES)
            || name.starts_with(crate::ref_names::REMOTE_BRANCHES)
    };
    let moves: Vec<&RefMove<'_>> = moves
        .iter()
        .filter(|m| is_branch(m.name) && m.old != m.new)
        .collect();
    if moves.is_empty() || locks.is_empty() {
        return Ok(());
    }
    let tips: Vec<ObjectId> = branches.iter().map(|(_, id)| *id).collect();
    let mut after: Vec<ObjectId> = branches
        .iter()
        .filter(|(name, _)| !moves.iter().any(|m| m.name == name))
        .map(|(_, id)| *id)
        .collect();
    after.extend(moves.iter().filter_map(|m| m.new));
    let by_path = LocksByPath::new(locks);
    let mut trees = LockedTrees {
        objects,
        trees: HashMap::new(),
        changes: HashMap::new(),
    };
    // Every lock a move changes, in the order of the locks, then of the moves.
    let mut changed: Vec<(usize, usize, Leaf, Leaf)> = Vec::new();
    for (k, m) in moves.iter().enumerate() {
        for c in trees.changes(m.old, m.new, &by_path)? {
            changed.push((c.lock, k, c.before, c.after));
        }
    }
    changed.sort_by_key(|(lock, k, ..)| (*lock, *k));
    for (l, k, before, now) in changed {
        let (lock, m) = (locks[l], moves[k]);
        let branch = m
            .name
            .strip_prefix(crate::ref_names::BRANCHES)
            .unwrap_or(m.name)
            .to_string();
        let how = match (m.old, m.new, before, now) {
            // A new branch holding a version some branch holds changes nothing anyone edits.
            (None, Some(_), _, None) => continue,
            (None, Some(new), _, Some(_)) if trees.held_by_any(&tips, new, l, &by_path)? => {
                continue
            }
            (None, Some(new), _, Some(_)) => format!(
                "be a new branch holding a version of it no branch holds ({})",
                new.short()
            ),
            // A deleted branch loses nothing while another holds its version.
            (Some(old), None, Some(_), _) if trees.held_by_any(&after, old, l, &by_path)? => {
                continue
            }
            (Some(old), None, _, _) => format!(
                "be deleted, and no other branch holds its version of it ({})",
                old.short()
            ),
            (_, Some(new), _, None) => format!("no longer hold it at {}", new.short()),
            (_, new, _, _) => format!(
                "hold another version of it at {}",
                new.map_or_else(String::new, |n| n.short())
            ),
        };
        return Err(RepoError::LockedPathMoved {
            path: lock.path.clone(),
            holder: lock.holder(),
            branch,
            how,
        }
        .into());
    }
    Ok(())
}

fn read_table(path: &std::path::Path) -> RepoResult<LockTable> {
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockTable::default()),
        Err(e) => return Err(RepoError::io(path, e)),
        Ok(m) if m.len() > MAX_TABLE_BYTES => {
            return Err(RepoError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("{} bytes, more than a lock table can be", m.len()),
            })
        }
        Ok(_) => std::fs::read(path).at(path)?,
    };
    LockTable::decode(&bytes).map_err(|detail| RepoError::Corrupt {
        path: path.to_path_buf(),
        detail,
    })
}

/// What a replica last learned of a remote's locks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownLocks {
    /// The remote's URL.
    pub remote: String,
    /// Who the remote says we are (None: it did not say).
    pub you: Option<String>,
    /// When this was learned, in seconds since 1970.
    pub learned: u64,
    /// The remote's locks, everyone's.
    pub locks: Vec<PathLock>,
}

impl KnownLocks {
    /// Paths this replica's user holds there.
    pub fn mine(&self) -> impl Iterator<Item = &PathLock> {
        self.locks
            .iter()
            .filter(|l| Some(&l.owner) == self.you.as_ref())
    }

    /// The lock on `path` held by someone else, if there is one.
    pub fn other_holder(&self, path: &str) -> Option<&PathLock> {
        self.locks
            .iter()
            .find(|l| l.path == path && Some(&l.owner) != self.you.as_ref())
    }
}

impl Locks<'_> {
    fn known_locks_path(&self) -> PathBuf {
        self.dmv.join("locks-known")
    }

    /// The last known state of the remote's locks (none known: empty). A
    /// damaged copy counts as none: it is only a hint, and the next contact
    /// with the remote writes it again.
    pub fn known_locks(&self) -> KnownLocks {
        std::fs::read(self.known_locks_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Replaces `.dmv/locks-known` (as a cache: not synced, a crash may lose it).
    pub fn save_known_locks(&self, known: &KnownLocks) -> RepoResult<()> {
        let path = self.known_locks_path();
        let bytes = serde_json::to_vec_pretty(known).map_err(|e| RepoError::Encode {
            what: "known locks",
            detail: e.to_string(),
        })?;
        crate::atomic::write_cache(&path, &bytes).at(&path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lock(path: &str, owner: &str) -> PathLock {
        PathLock {
            path: path.into(),
            owner: owner.into(),
            replica: "r".into(),
            since: 1_764_079_380,
        }
    }

    #[test]
    fn the_table_encoding_is_pinned() {
        let mut t = LockTable::default();
        t.lock(&["a.psd".into()], "al", "r", 1_764_079_380).unwrap();
        let bytes = t.encode();
        let mut expected = b"DMVLOCKS\x01".to_vec();
        expected.extend([1, 5]); // one lock; "a.psd"
        expected.extend(b"a.psd");
        expected.extend([2]);
        expected.extend(b"al");
        expected.extend([1]);
        expected.extend(b"r");
        expected.extend([0x94, 0xee, 0x96, 0xc9, 0x06]); // since, varint
        let hash = blake3::hash(&expected);
        expected.extend(hash.as_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(LockTable::decode(&bytes).unwrap(), t);
    }

    #[test]
    fn one_owner_and_replica_holds_a_path() {
        let mut t = LockTable::default();
        t.lock(&["a".into(), "b/c".into()], "al", "r", 1).unwrap();
        // All or nothing: "a" is free of bob only if "b/c" is too.
        assert!(matches!(
            t.lock(&["x".into(), "b/c".into()], "bob", "s", 2),
            Err(RepoError::PathLocked { .. })
        ));
        assert!(t.get("x").is_none());
        // The same owner from another replica does not hold it either.
        assert!(matches!(
            t.lock(&["a".into()], "al", "other", 2),
            Err(RepoError::PathLocked { .. })
        ));
        assert_eq!(
            t.lock(&["a".into()], "al", "r", 9).unwrap()[0].since,
            1,
            "taking it again keeps the lock"
        );
        assert!(matches!(
            t.unlock(&["a".into()], "bob", false),
            Err(RepoError::LockHeldByOther { .. })
        ));
        assert!(matches!(
            t.unlock(&["zzz".into()], "al", false),
            Err(RepoError::PathNotLocked { .. })
        ));
        assert_eq!(
            t.unlock(&["a".into()], "bob", true).unwrap(),
            vec![lock("a", "al")]
                .into_iter()
                .map(|l| PathLock { since: 1, ..l })
                .collect::<Vec<_>>()
        );
        assert_eq!(t.held_by_others(Some("al")).count(), 0);
        assert_eq!(t.held_by_others(Some("bob")).count(), 1);
        for bad in ["", "/a", "a//b", "a/../b", "./a", ".dmv/config", "a/"] {
            assert!(
                t.lock(&[bad.into()], "al", "r", 1).is_err(),
                "{bad:?} should be refused"
            );
        }
    }

    /// One write-token request with a 7.5 MB replica name for 40 paths
    /// made `.dmv/locks` 300 MB, past what a read accepts: every later push
    /// failed. Each budget refuses the whole call and takes no lock.
    #[test]
    fn lock_calls_past_their_budgets_take_nothing() {
        let mut t = LockTable::default();
        let paths: Vec<String> = (0..40).map(|i| format!("scene/{i}.psd")).collect();
        let long = "r".repeat(MAX_REPLICA_NAME_BYTES + 1);
        assert!(matches!(
            t.lock(&paths, "mallory", &long, 1),
            Err(RepoError::LockBudget { .. })
        ));
        assert!(
            t.lock(&paths, "mallory", &"r".repeat(MAX_REPLICA_NAME_BYTES), 1)
                .is_ok(),
            "a name at the bound is taken"
        );
        let mut t = LockTable::default();
        assert!(matches!(
            t.lock(&paths, &"o".repeat(MAX_OWNER_BYTES + 1), "r", 1),
            Err(RepoError::LockBudget { .. })
        ));
        let many: Vec<String> = (0..=MAX_PATHS_PER_LOCK_CALL)
            .map(|i| format!("f{i}"))
            .collect();
        assert!(matches!(
            t.lock(&many, "mallory", "r", 1),
            Err(RepoError::LockBudget { .. })
        ));
        assert!(matches!(
            t.unlock(&many, "mallory", false),
            Err(RepoError::LockBudget { .. })
        ));
        assert!(t.is_empty());

        // One holder's share: long paths at the bound, call after call,
        // stop at the owner's budget while another holder may still lock.
        let deep = |i: usize| format!("{}/{i}", "d".repeat(4000));
        let mut taken = 0;
        let refused = loop {
            let call: Vec<String> = (taken..taken + 100).map(deep).collect();
            match t.lock(&call, "mallory", &"r".repeat(MAX_REPLICA_NAME_BYTES), 1) {
                Ok(_) => taken += 100,
                Err(e) => break e,
            }
        };
        assert!(matches!(refused, RepoError::LockBudget { .. }), "{refused}");
        assert!(
            t.encode().len() as u64 <= MAX_LOCK_BYTES_PER_OWNER,
            "{} bytes",
            t.encode().len()
        );
        assert_eq!(t.all().count(), taken);
        t.lock(&["a.psd".into()], "alice", "laptop", 2).unwrap();
        assert_eq!(LockTable::decode(&t.encode()).unwrap(), t);
    }

    #[test]
    fn damage_is_reported_not_read() {
        let mut t = LockTable::default();
        t.lock(&["a".into()], "al", "r", 1).unwrap();
        let good = t.encode();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert!(LockTable::decode(&bad).is_err(), "flip at {i}");
        }
        assert!(LockTable::decode(&good[..good.len() - 1]).is_err());
    }

    /// Commits and trees in memory, counting what a check reads.
    #[derive(Default)]
    struct Counted {
        commits: HashMap<ObjectId, Commit>,
        trees: HashMap<ObjectId, TreeNode>,
        tree_reads: std::cell::Cell<usize>,
    }

    impl GrantObjects for Counted {
        fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
            Ok((*id, self.commits[id].clone()))
        }

        fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode> {
            self.tree_reads.set(self.tree_reads.get() + 1);
            Ok(self.trees[id].clone())
        }
    }

    impl Counted {
        /// A folder of `entries` (name, entry), given in name order.
        fn folder(&mut self, entries: &[(&str, (EntryKind, ObjectId))]) -> ObjectId {
            let entries: Vec<TreeEntry> = entries
                .iter()
                .map(|(name, (kind, id))| TreeEntry {
                    name: name.as_bytes().to_vec(),
                    kind: *kind,
                    id: *id,
                    size: 0,
                })
                .collect();
            let id = ObjectId::hash(
                dmv_store::ObjectKind::Tree,
                format!("{entries:?}").as_bytes(),
            );
            self.trees.insert(id, TreeNode::Leaf(entries));
            id
        }

        fn commit_of(&mut self, tree: ObjectId, parents: &[ObjectId]) -> ObjectId {
            let who = dmv_store::object::Signature {
                name: "t".into(),
                email: "t@example.com".into(),
                time: 0,
                tz_minutes: 0,
            };
            let commit = Commit {
                tree,
                parents: parents.to_vec(),
                author: who.clone(),
                committer: who,
                message: format!("{tree}"),
            };
            let id = ObjectId::hash(
                dmv_store::ObjectKind::Commit,
                format!("{commit:?}").as_bytes(),
            );
            self.commits.insert(id, commit);
            id
        }

        fn reads(&self) -> usize {
            self.tree_reads.replace(0)
        }
    }

    fn file(content: &str) -> (EntryKind, ObjectId) {
        (
            EntryKind::File,
            ObjectId::hash(dmv_store::ObjectKind::Chunk, content.as_bytes()),
        )
    }

    /// A push past 1,000 locks held in a folder of 1,000 files cost two
    /// reads of that folder per lock (0.7 s for a one-file push): what the
    /// check reads now is counted here, whatever the number of locks.
    #[test]
    fn the_lock_rule_reads_only_the_folders_a_move_changes() {
        let mut o = Counted::default();
        let names: Vec<String> = (0..1000).map(|i| format!("a{i:04}.bin")).collect();
        let assets_of = |o: &mut Counted, changed: Option<usize>| {
            let entries: Vec<(&str, (EntryKind, ObjectId))> = names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), file(&format!("{n} {}", Some(i) == changed))))
                .collect();
            o.folder(&entries)
        };
        let assets = assets_of(&mut o, None);
        let root1 = o.folder(&[
            ("assets", (EntryKind::Dir, assets)),
            ("notes.txt", file("1")),
        ]);
        let root2 = o.folder(&[
            ("assets", (EntryKind::Dir, assets)),
            ("notes.txt", file("2")),
        ]);
        let c1 = o.commit_of(root1, &[]);
        let c2 = o.commit_of(root2, &[c1]);
        let bobs: Vec<PathLock> = names
            .iter()
            .map(|n| lock(&format!("assets/{n}"), "bob"))
            .collect();
        let locks: Vec<&PathLock> = bobs.iter().collect();
        let main = vec![("refs/heads/main".to_string(), c1)];
        let moving = |old, new| {
            [RefMove {
                name: "refs/heads/main",
                old,
                new,
            }]
        };
        let check = |o: &Counted, moves: &[RefMove<'_>], branches: &[(String, ObjectId)]| {
            refuse_moves_over_locks::<RepoError>(moves, branches, &locks, o)
        };

        // Another file changed: the two roots are read, not the locked folder.
        check(&o, &moving(Some(c1), Some(c2)), &main).unwrap();
        assert_eq!(o.reads(), 2);

        // A locked file changed: the two roots and the two folders, then refused.
        let assets3 = assets_of(&mut o, Some(500));
        let root3 = o.folder(&[
            ("assets", (EntryKind::Dir, assets3)),
            ("notes.txt", file("1")),
        ]);
        let c3 = o.commit_of(root3, &[c1]);
        match check(&o, &moving(Some(c1), Some(c3)), &main) {
            Err(RepoError::LockedPathMoved { path, .. }) => assert_eq!(path, "assets/a0500.bin"),
            other => panic!("{other:?}"),
        }
        assert_eq!(o.reads(), 4);

        // A new branch holding main's versions: its tree against none, then
        // against main's, each once for the 1,000 locks.
        check(
            &o,
            &[RefMove {
                name: "refs/heads/side",
                old: None,
                new: Some(c2),
            }],
            &main,
        )
        .unwrap();
        assert_eq!(o.reads(), 4);
        assert!(check(
            &o,
            &[RefMove {
                name: "refs/heads/side",
                old: None,
                new: Some(c3)
            }],
            &main
        )
        .is_err());

        // Deleting a branch whose versions main holds too.
        let both = vec![main[0].clone(), ("refs/heads/side".to_string(), c2)];
        check(
            &o,
            &[RefMove {
                name: "refs/heads/side",
                old: Some(c2),
                new: None,
            }],
            &both,
        )
        .unwrap();
    }

    /// The entry at a locked path, whatever changed around it: a folder's
    /// lock by a change under it, a path whose folder became a file.
    #[test]
    fn a_locked_path_changes_as_its_entry_does() {
        let mut o = Counted::default();
        let inner = o.folder(&[("y", file("y"))]);
        let other = o.folder(&[("y", file("y")), ("z", file("z"))]);
        let roots = [
            o.folder(&[("x", (EntryKind::Dir, inner))]),
            o.folder(&[("x", (EntryKind::Dir, other))]),
            o.folder(&[("x", file("x"))]),
            o.folder(&[("x", (EntryKind::Dir, inner)), ("x.txt", file("t"))]),
        ];
        let held = [
            lock("x", "bob"),
            lock("x/y", "bob"),
            lock("x/z", "bob"),
            lock("x.txt", "bob"),
        ];
        let locks: Vec<&PathLock> = held.iter().collect();
        let by_path = LocksByPath::new(&locks);
        let changed = |a: usize, b: usize| -> Vec<usize> {
            let mut found: Vec<usize> =
                locked_changes(&o, Some(roots[a]), Some(roots[b]), &by_path)
                    .unwrap()
                    .into_iter()
                    .map(|c| c.lock)
                    .collect();
            found.sort();
            found
        };
        assert_eq!(changed(0, 1), [0, 2], "x's folder and the file added in it");
        assert_eq!(changed(0, 2), [0, 1], "x a file: x/y is gone");
        assert_eq!(changed(2, 1), [0, 1, 2]);
        assert_eq!(changed(0, 3), [3], "x.txt sorts between x and x/");
        assert_eq!(changed(1, 1), Vec::<usize>::new());
        let none: Vec<usize> = locked_changes(&o, None, Some(roots[1]), &by_path)
            .unwrap()
            .into_iter()
            .map(|c| c.lock)
            .collect();
        assert_eq!(none.len(), 3, "against no tree: every locked path it holds");
    }

    proptest! {
        #[test]
        fn decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = LockTable::decode(&bytes);
        }

        #[test]
        fn tables_round_trip(paths in proptest::collection::btree_set("[a-z]{1,8}(/[a-z]{1,8}){0,3}", 0..20), owner in "[a-z]{1,6}", since in any::<u64>()) {
            let mut t = LockTable::default();
            t.lock(&paths.into_iter().collect::<Vec<_>>(), &owner, "laptop", since).unwrap();
            prop_assert_eq!(LockTable::decode(&t.encode()).unwrap(), t);
        }

        #[test]
        fn a_checksummed_body_of_junk_is_refused(junk in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut bytes = b"DMVLOCKS\x01".to_vec();
            bytes.extend(&junk);
            let hash = blake3::hash(&bytes);
            bytes.extend(hash.as_bytes());
            // Junk may decode as locks only if every path in it is a valid one.
            if let Ok(t) = LockTable::decode(&bytes) {
                prop_assert!(t.all().all(|l| check_lock_path(&l.path).is_ok()));
            }
        }
    }
}
