//! `merge`: three-way merge over trees, the state kept while a merge is
//! unfinished (`.dmv/MERGE_STATE`), and `resolve` / `merge --abort`.
//!
//! Media cannot be merged line by line, so a merge is decided per path by
//! comparing (kind, content id) in the merge base and on both sides: a path
//! only one side changed takes that side; a path both sides changed
//! differently is a conflict that the user settles by taking ours, theirs, or
//! keeping both. Nothing is ever merged inside a file (unless the user
//! configured an external `merge_tool`).
//!
//! Crash safety. A merge writes, in order: its objects; the state file (phase
//! `Applying`, naming the tree about to be written out); the working tree and
//! dirstate; the state again (phase `Resolving`); and, when nothing
//! conflicts, the commit and the ref. Killed before the working tree is
//! complete, it leaves an `Applying` state: commit and resolve refuse it and
//! `merge --abort` puts everything back to HEAD. Killed after the ref moved but
//! before the state file was removed, it leaves a state that `merge_state`
//! recognises as finished and removes. Objects written by a killed merge are
//! garbage for gc, never damage.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, ObjectKind};
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::dirstate::{kind_of, DirEntry, Dirstate};
use crate::error::IoContext;
use crate::tree::{flatten, FlatEntry, FlatTree};
use crate::worktree::{flat_of, matches, ser_path, Status, TEMP_PREFIX};
use crate::{RepoError, RepoResult, Repository};

/// What `Repository::merge` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Their commit is already part of HEAD's history; nothing changed.
    UpToDate,
    /// HEAD was unborn or behind: it now points at their commit.
    FastForward(ObjectId),
    /// A merge commit with parents [HEAD, theirs] was made and checked out.
    Merged(ObjectId),
    /// These paths conflict; nothing was committed and a merge is in progress.
    Conflicts(Vec<Vec<u8>>),
}

const STATE_FILE: &str = "MERGE_STATE";
const MAGIC: &[u8; 8] = b"DMVMERGE";
const VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergePhase {
    /// The working tree is being written; only `merge --abort` may follow.
    Applying,
    /// The working tree holds the merge result; conflicts are being resolved.
    Resolving,
}

/// One conflicted path and its version in the base and on each side (None: absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    #[serde(with = "serde_bytes")]
    pub path: Vec<u8>,
    pub base: Option<FlatEntry>,
    pub ours: Option<FlatEntry>,
    pub theirs: Option<FlatEntry>,
}

impl Conflict {
    /// Git's unmerged-path code and words for what each side did.
    pub fn describe(&self) -> (&'static str, &'static str) {
        match (self.base.is_some(), self.ours.is_some(), self.theirs.is_some()) {
            (true, true, true) => ("UU", "both modified"),
            (true, false, _) => ("DU", "deleted by us"),
            (true, true, false) => ("UD", "deleted by them"),
            (false, true, true) => ("AA", "both added"),
            (false, true, false) => ("AU", "added by us"),
            (false, false, _) => ("UA", "added by them"),
        }
    }
}

/// `.dmv/MERGE_STATE`: present exactly while a merge is unfinished.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergeState {
    /// HEAD when the merge started (None: unborn, which only fast-forwards).
    pub head: Option<ObjectId>,
    pub theirs: ObjectId,
    /// How the other side is named in messages ("feature", "origin/main").
    pub label: String,
    /// The tree being written to the working tree (merge result or provisional).
    pub target: ObjectId,
    pub phase: MergePhase,
    /// Unresolved paths, sorted.
    pub conflicts: Vec<Conflict>,
}

fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn interrupted(label: &str) -> RepoError {
    RepoError::Conflict(format!("the merge of {label} was interrupted before the working tree was written; run `dmv merge --abort` and merge again"))
}

impl MergeState {
    fn load(path: &Path) -> RepoResult<Option<MergeState>> {
        let corrupt = |detail: &str| RepoError::Corrupt { path: path.into(), detail: format!("{detail} (`dmv merge --abort` discards it)") };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RepoError::io(path, e)),
        };
        if bytes.len() < 12 + 32 || &bytes[..8] != MAGIC {
            return Err(corrupt("not a merge state file"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes()[..] != *sum {
            return Err(corrupt("checksum mismatch"));
        }
        if u32::from_le_bytes([body[8], body[9], body[10], body[11]]) != VERSION {
            return Err(corrupt("unsupported merge state version"));
        }
        postcard::from_bytes(&body[12..]).map(Some).map_err(|e| corrupt(&e.to_string()))
    }

    fn encode(&self) -> RepoResult<Vec<u8>> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend(postcard::to_stdvec(self).map_err(|e| RepoError::Invalid(e.to_string()))?);
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        Ok(bytes)
    }

    /// Why the staged tree cannot be committed as this merge yet, if it cannot.
    pub(crate) fn check_ready_to_commit(&self, head: Option<ObjectId>) -> RepoResult<()> {
        if self.phase == MergePhase::Applying {
            return Err(interrupted(&self.label));
        }
        if head.is_none() || head != self.head {
            return Err(RepoError::Conflict(format!("HEAD moved since the merge of {} started; run `dmv merge --abort`", self.label)));
        }
        if !self.conflicts.is_empty() {
            let mut names: Vec<String> = self.conflicts.iter().take(10).map(|c| show(&c.path)).collect();
            if self.conflicts.len() > 10 {
                names.push(format!("and {} more", self.conflicts.len() - 10));
            }
            return Err(RepoError::Conflict(format!("unresolved conflicts: {}; run dmv resolve", names.join(", "))));
        }
        Ok(())
    }
}

/// The merge in progress as `status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct MergeStatus {
    pub label: String,
    #[serde(serialize_with = "ser_id")]
    pub theirs: ObjectId,
    /// Stopped while writing the working tree: only `merge --abort` helps.
    pub interrupted: bool,
    pub conflicts: Vec<ConflictStatus>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConflictStatus {
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    /// UU, AA, DU, UD, AU or UA, as in `git status --short`.
    pub code: &'static str,
    pub description: &'static str,
}

fn ser_id<S: serde::Serializer>(id: &ObjectId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&id.to_hex())
}

/// How `resolve_conflicts` settles a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Our version (HEAD's); if we deleted the file, it is deleted.
    Ours,
    /// Their version; if they deleted the file, it is deleted.
    Theirs,
    /// Both versions side by side as `name.ours.ext` and `name.theirs.ext`.
    Both,
    /// The working-tree file as it is now (the user merged it by hand).
    AsIs,
}

impl Resolution {
    fn flag(self) -> &'static str {
        match self {
            Resolution::Ours => "--ours",
            Resolution::Theirs => "--theirs",
            Resolution::Both => "--both",
            Resolution::AsIs => "",
        }
    }
}

/// One resolved conflict and the paths that now hold its content (empty: deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub path: Vec<u8>,
    pub kept: Vec<Vec<u8>>,
}

/// `dir/shot.jpg` → `dir/shot.ours.jpg`; `README` → `README.ours`; `.hidden` → `.hidden.ours`.
fn side_name(path: &[u8], side: &str) -> Vec<u8> {
    let start = path.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
    let split = match path[start..].iter().rposition(|b| *b == b'.') {
        Some(i) if i > 0 => start + i,
        _ => path.len(),
    };
    [&path[..split], b".", side.as_bytes(), &path[split..]].concat()
}

fn same(a: Option<&FlatEntry>, b: Option<&FlatEntry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.kind == y.kind && x.id == y.id,
        _ => false,
    }
}

/// The per-path three-way merge. Returns the tree to write out (the clean
/// results plus, for each conflict, the version shown until it is resolved)
/// and the conflicts, sorted by path.
fn three_way(base: &FlatTree, ours: &FlatTree, theirs: &FlatTree) -> (FlatTree, Vec<Conflict>) {
    let conflict = |p: &Vec<u8>| Conflict { path: p.clone(), base: base.get(p).copied(), ours: ours.get(p).copied(), theirs: theirs.get(p).copied() };
    let paths: BTreeSet<&Vec<u8>> = base.keys().chain(ours.keys()).chain(theirs.keys()).collect();
    let mut merged = FlatTree::new();
    let mut conflicts = BTreeMap::new();
    for p in paths {
        let (b, o, t) = (base.get(p), ours.get(p), theirs.get(p));
        let pick = if same(o, t) || same(b, t) {
            o
        } else if same(b, o) {
            t
        } else {
            conflicts.insert(p.clone(), conflict(p));
            // Until resolved the working tree shows ours, or theirs if we deleted it.
            o.or(t)
        };
        if let Some(e) = pick {
            merged.insert(p.clone(), *e);
        }
    }
    // One side put a file where the other has a directory (e.g. ours added
    // `a`, theirs added `a/b`). Every path involved conflicts, and shows our
    // version only: our tree is consistent, so the result is a valid tree.
    for p in clashes(&merged) {
        conflicts.insert(p.clone(), conflict(&p));
        match ours.get(&p) {
            Some(e) => merged.insert(p, *e),
            None => merged.remove(&p),
        };
    }
    (merged, conflicts.into_values().collect())
}

/// Paths that are a file while another path has them as a directory, and those other paths.
fn clashes(tree: &FlatTree) -> BTreeSet<Vec<u8>> {
    let mut out = BTreeSet::new();
    for p in tree.keys() {
        for (i, b) in p.iter().enumerate() {
            if *b == b'/' && tree.contains_key(&p[..i]) {
                out.insert(p[..i].to_vec());
                out.insert(p.clone());
            }
        }
    }
    out
}

/// A path in `set` that cannot coexist with `p`: a file at one of its
/// ancestors, or anything below it.
fn clash_with(set: &BTreeSet<Vec<u8>>, p: &[u8]) -> Option<Vec<u8>> {
    for (i, b) in p.iter().enumerate() {
        if *b == b'/' && set.contains(&p[..i]) {
            return Some(p[..i].to_vec());
        }
    }
    let below = [p, b"/"].concat();
    set.range(below.clone()..).next().filter(|q| q.starts_with(&below)).cloned()
}

/// Refuses a write-out that would destroy untracked files: written over,
/// replaced by a directory, or inside a directory replaced by a file.
fn refuse_overwriting_untracked(status: &Status, ds: &Dirstate, target: &FlatTree) -> RepoResult<()> {
    let keys: BTreeSet<Vec<u8>> = target.keys().filter(|p| !ds.entries.contains_key(*p)).cloned().collect();
    for u in &status.untracked {
        if keys.contains(u) || clash_with(&keys, u).is_some() {
            return Err(RepoError::Conflict(format!("untracked file {} would be overwritten by the merge; move or remove it first", show(u))));
        }
    }
    Ok(())
}

/// What a checkout of `wanted` would write: entries the dirstate does not already have.
fn new_entries<'a>(ds: &'a Dirstate, wanted: &'a FlatTree) -> impl Iterator<Item = (&'a [u8], &'a FlatEntry)> {
    wanted.iter().filter(|(p, e)| ds.entries.get(*p).is_none_or(|d| d.id != e.id || d.kind != e.kind)).map(|(p, e)| (p.as_slice(), e))
}

impl Repository {
    fn merge_state_path(&self) -> PathBuf {
        self.dmv.join(STATE_FILE)
    }

    /// The unfinished merge, if any. A state file left by a merge that was
    /// stopped after its ref update (HEAD is their commit, or a commit whose
    /// parents are exactly [the merge's HEAD, theirs]) is removed, not returned.
    pub fn merge_state(&self) -> RepoResult<Option<MergeState>> {
        let Some(state) = MergeState::load(&self.merge_state_path())? else { return Ok(None) };
        let head = self.head_commit()?;
        if head != state.head && self.merge_finished(&state, head)? {
            // Losing this removal (read-only repository, or another command
            // holds the lock) is harmless: it is recognised again next time.
            if let Some(_wlock) = self.try_lock_worktree() {
                let _ = self.remove_merge_state();
            }
            return Ok(None);
        }
        Ok(Some(state))
    }

    fn merge_finished(&self, state: &MergeState, head: Option<ObjectId>) -> RepoResult<bool> {
        let Some(h) = head else { return Ok(false) };
        if h == state.theirs {
            return Ok(true);
        }
        let parents = self.commit(&h)?.parents;
        Ok(state.head.is_some_and(|ours| parents == [ours, state.theirs]))
    }

    pub(crate) fn merge_status(&self) -> RepoResult<Option<MergeStatus>> {
        Ok(self.merge_state()?.map(|s| MergeStatus {
            label: s.label,
            theirs: s.theirs,
            interrupted: s.phase == MergePhase::Applying,
            conflicts: s
                .conflicts
                .iter()
                .map(|c| {
                    let (code, description) = c.describe();
                    ConflictStatus { path: c.path.clone(), code, description }
                })
                .collect(),
        }))
    }

    fn save_merge_state(&self, state: &MergeState) -> RepoResult<()> {
        self.check_worktree_locked("MERGE_STATE")?;
        write_atomic(&self.merge_state_path(), &state.encode()?)
    }

    pub(crate) fn remove_merge_state(&self) -> RepoResult<()> {
        self.check_worktree_locked("MERGE_STATE")?;
        let path = self.merge_state_path();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// Objects an unfinished merge still needs, for gc and fsck.
    pub(crate) fn merge_roots(&self) -> RepoResult<Vec<ObjectId>> {
        Ok(MergeState::load(&self.merge_state_path())?.map(|s| vec![s.theirs, s.target]).unwrap_or_default())
    }

    /// Merges commit `theirs` (named `label` in messages) into HEAD: see the module comment.
    pub fn merge(&self, theirs: ObjectId, label: &str, progress: &dyn Fn(u64, u64)) -> RepoResult<MergeOutcome> {
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::Conflict(format!("a merge of {} is already in progress; finish it with `dmv commit` or run `dmv merge --abort`", m.label)));
        }
        if self.store.kind_of(&theirs)? != ObjectKind::Commit {
            return Err(RepoError::Invalid(format!("{label} is not a commit")));
        }
        let (status, ds) = self.status_with_dirstate()?;
        if let Some(c) = status.staged.iter().chain(&status.unstaged).next() {
            return Err(RepoError::Conflict(format!("cannot merge: you have uncommitted changes (e.g. {}); commit them or restore the files first", show(&c.path))));
        }
        let Some(ours) = self.head_commit()? else {
            return self.fast_forward(None, theirs, label, (&status, &ds), progress);
        };
        if ours == theirs {
            return Ok(MergeOutcome::UpToDate);
        }
        let base = self.merge_base(ours, theirs)?;
        if base == Some(theirs) {
            return Ok(MergeOutcome::UpToDate);
        }
        if base == Some(ours) {
            return self.fast_forward(Some(ours), theirs, label, (&status, &ds), progress);
        }
        // Unrelated histories (no base) merge as if from an empty tree: every path both add differently conflicts.
        self.three_way_merge(ours, base, theirs, label, (&status, &ds), progress)
    }

    fn fast_forward(&self, head: Option<ObjectId>, theirs: ObjectId, label: &str, now: (&Status, &Dirstate), progress: &dyn Fn(u64, u64)) -> RepoResult<MergeOutcome> {
        let target = self.commit(&theirs)?.tree;
        let wanted = flatten(&self.store, &target)?;
        refuse_overwriting_untracked(now.0, now.1, &wanted)?;
        self.check_data_present(new_entries(now.1, &wanted))?;
        let state = MergeState { head, theirs, label: label.to_string(), target, phase: MergePhase::Applying, conflicts: Vec::new() };
        self.save_merge_state(&state)?;
        dmv_store::failpoint("merge-state-written");
        self.checkout_tree_during_merge(&target, &BTreeMap::new(), progress)?;
        dmv_store::failpoint("merge-worktree-written");
        self.advance_head(head, theirs, &format!("merge {label}: fast-forward"))?;
        dmv_store::failpoint("merge-after-ref");
        self.remove_merge_state()?;
        Ok(MergeOutcome::FastForward(theirs))
    }

    fn three_way_merge(
        &self,
        ours: ObjectId,
        base: Option<ObjectId>,
        theirs: ObjectId,
        label: &str,
        now: (&Status, &Dirstate),
        progress: &dyn Fn(u64, u64),
    ) -> RepoResult<MergeOutcome> {
        let flat_of_commit = |c: &ObjectId| -> RepoResult<FlatTree> { flatten(&self.store, &self.commit(c)?.tree) };
        let base_flat = match base {
            Some(b) => flat_of_commit(&b)?,
            None => FlatTree::new(),
        };
        let (merged, conflicts) = three_way(&base_flat, &flat_of_commit(&ours)?, &flat_of_commit(&theirs)?);
        refuse_overwriting_untracked(now.0, now.1, &merged)?;
        self.check_data_present(new_entries(now.1, &merged))?;

        let mut session = self.store.begin_write()?;
        let entries: Vec<(&[u8], FlatEntry)> = merged.iter().map(|(p, e)| (p.as_slice(), *e)).collect();
        let target = crate::tree::build(&mut session, &entries)?;
        session.finish()?;
        let mut state = MergeState { head: Some(ours), theirs, label: label.to_string(), target, phase: MergePhase::Applying, conflicts };
        // Saved while the session still holds the gc lock: from here on the
        // state file keeps the new tree alive.
        self.save_merge_state(&state)?;
        drop(session);
        dmv_store::failpoint("merge-state-written");
        self.checkout_tree_during_merge(&target, &BTreeMap::new(), progress)?;
        dmv_store::failpoint("merge-worktree-written");
        state.phase = MergePhase::Resolving;
        self.save_merge_state(&state)?;
        if let Some(tool) = self.config.merge_tool.clone().filter(|t| !t.trim().is_empty()) {
            self.run_merge_tool(&tool, &mut state)?;
        }
        if !state.conflicts.is_empty() {
            return Ok(MergeOutcome::Conflicts(state.conflicts.into_iter().map(|c| c.path).collect()));
        }
        // The commit is made by the merge-aware commit, which also removes the state file after the ref update.
        match self.commit_staged(&format!("Merge {label}"))? {
            Some(id) => Ok(MergeOutcome::Merged(id)),
            None => Err(RepoError::Invalid("the merge commit was not created".into())),
        }
    }

    /// Runs the configured merge tool (`sh -c TOOL`) on each conflict where
    /// both sides are regular files (a missing base is an empty file), with
    /// DMV_BASE, DMV_OURS, DMV_THEIRS naming temporary files with the three
    /// versions, DMV_MERGED the working-tree file to write and DMV_PATH the
    /// repository path. Exit status 0: the result is staged and the conflict
    /// resolved (if the tool deleted DMV_MERGED, the deletion is). Anything
    /// else: our version goes back into the working tree and the conflict stays.
    fn run_merge_tool(&self, tool: &str, state: &mut MergeState) -> RepoResult<()> {
        let regular = |e: Option<FlatEntry>| e.map(|e| e.kind != EntryKind::Symlink);
        let candidates: Vec<Conflict> =
            state.conflicts.iter().filter(|c| regular(c.ours) == Some(true) && regular(c.theirs) == Some(true) && regular(c.base) != Some(false)).cloned().collect();
        if candidates.is_empty() {
            return Ok(());
        }
        let scratch = self.dmv.join(format!("merge-tool-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).at(&scratch)?;
        let outcome = self.run_tool_on(tool, &candidates, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        let (resolved, failed) = outcome?;

        if !failed.is_empty() {
            let mut ds = self.load_dirstate()?;
            for c in &failed {
                if let Some(e) = c.ours {
                    let meta = self.write_entry(&c.path, &e)?;
                    ds.entries.insert(c.path.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                }
            }
            self.save_dirstate(&ds)?;
        }
        if !resolved.is_empty() {
            // Every resolved path is tracked (ours had it), so `add` stages a deleted one as deleted.
            self.add(&resolved, false, &|_, _| {})?;
            state.conflicts.retain(|c| !resolved.contains(&c.path));
            self.save_merge_state(state)?;
        }
        Ok(())
    }

    /// Runs the tool once per conflict; returns the paths it resolved and the conflicts it did not.
    fn run_tool_on(&self, tool: &str, candidates: &[Conflict], scratch: &Path) -> RepoResult<(Vec<Vec<u8>>, Vec<Conflict>)> {
        let mut resolved = Vec::new();
        let mut failed = Vec::new();
        for c in candidates {
            // Named like the file (shot.base.jpg) so a tool can go by the extension.
            let name = c.path.rsplit(|b| *b == b'/').next().unwrap_or(&c.path);
            let mut inputs = Vec::new();
            for (side, entry) in [("base", c.base), ("ours", c.ours), ("theirs", c.theirs)] {
                let file = scratch.join(OsStr::from_bytes(&side_name(name, side)));
                let mut out = std::io::BufWriter::new(std::fs::File::create(&file).at(&file)?);
                if let Some(e) = entry {
                    self.store.write_content(&e.id, &mut out)?;
                }
                out.flush().at(&file)?;
                inputs.push(file);
            }
            let ran = std::process::Command::new("sh")
                .arg("-c")
                .arg(tool)
                .current_dir(&self.root)
                .env("DMV_BASE", &inputs[0])
                .env("DMV_OURS", &inputs[1])
                .env("DMV_THEIRS", &inputs[2])
                .env("DMV_MERGED", self.abs_path(&c.path))
                .env("DMV_PATH", OsStr::from_bytes(&c.path))
                // The tool's chatter must not mix with dmv's own output.
                .stdout(std::io::stderr())
                .status();
            if ran.is_ok_and(|s| s.success()) {
                resolved.push(c.path.clone());
            } else {
                failed.push(c.clone());
            }
            for f in inputs {
                let _ = std::fs::remove_file(f);
            }
        }
        Ok((resolved, failed))
    }

    /// `merge --abort`: the working tree and dirstate back to HEAD and the
    /// merge state removed. Files the merge added go, files it changed or
    /// removed come back from HEAD; other untracked files are left alone.
    pub fn merge_abort(&self) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        let state = match self.merge_state() {
            Ok(Some(s)) => Some(s),
            Ok(None) => return Err(RepoError::Invalid("there is no merge to abort".into())),
            // A damaged state file must not block the way out, which needs only HEAD.
            Err(RepoError::Corrupt { .. }) => {
                self.remove_merge_state()?;
                None
            }
            Err(e) => return Err(e),
        };
        let head_flat = match self.head_tree()? {
            Some(t) => flatten(&self.store, &t)?,
            None => FlatTree::new(),
        };
        let (status, mut ds) = self.status_with_dirstate()?;
        // What the working tree holds at tracked paths.
        let mut current = flat_of(&ds);
        for c in &status.unstaged {
            match c.new {
                Some(e) => current.insert(c.path.clone(), e),
                None => current.remove(&c.path),
            };
        }

        let mut doomed: Vec<Vec<u8>> = ds.entries.keys().filter(|p| !head_flat.contains_key(*p)).cloned().collect();
        if let Some(s) = state.filter(|s| s.phase == MergePhase::Applying) {
            // Interrupted before the dirstate was saved: files the merge already
            // wrote show as untracked. Remove those holding exactly what it wrote,
            // and the temporary file of a write it was killed in.
            let target = flatten(&self.store, &s.target)?;
            for p in status.untracked.iter().filter(|p| !head_flat.contains_key(*p)) {
                let name = p.rsplit(|b| *b == b'/').next().unwrap_or(p);
                if name.starts_with(TEMP_PREFIX.as_bytes()) {
                    doomed.push(p.clone());
                    continue;
                }
                let Some(want) = target.get(p) else { continue };
                let Ok(meta) = std::fs::symlink_metadata(self.abs_path(p)) else { continue };
                if kind_of(&meta) == Some(want.kind) && self.current_id(p, &meta)?.0 == want.id {
                    doomed.push(p.clone());
                }
            }
        }
        for p in doomed {
            let abs = self.abs_path(&p);
            match std::fs::remove_file(&abs) {
                Ok(()) => self.remove_empty_parents(&p),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RepoError::io(abs, e)),
            }
            ds.entries.remove(&p);
        }
        for (p, e) in &head_flat {
            if same(current.get(p), Some(e)) {
                // The file is right; only a staged version may need to go.
                if !ds.entries.get(p).is_some_and(|d| d.kind == e.kind && d.id == e.id) {
                    let meta = std::fs::symlink_metadata(self.abs_path(p)).at(&self.abs_path(p))?;
                    ds.entries.insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                }
                continue;
            }
            let meta = self.write_entry(p, e)?;
            ds.entries.insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
        }
        self.save_dirstate(&ds)?;
        self.remove_merge_state()
    }

    /// Settles the conflicts at or under `specs` (repository-relative paths;
    /// empty = all) and stages the result. Each spec must name a conflict.
    pub fn resolve_conflicts(&self, specs: &[Vec<u8>], how: Resolution) -> RepoResult<Vec<Resolved>> {
        let _wlock = self.lock_worktree()?;
        let mut state = self.merge_state()?.ok_or_else(|| RepoError::Invalid("there is no merge in progress".into()))?;
        if state.phase == MergePhase::Applying {
            return Err(interrupted(&state.label));
        }
        let mut chosen: Vec<Conflict> = Vec::new();
        for spec in specs {
            let hits: Vec<&Conflict> = state.conflicts.iter().filter(|c| matches(&c.path, spec)).collect();
            if hits.is_empty() {
                let name = if spec.is_empty() { ".".to_string() } else { show(spec) };
                return Err(RepoError::Invalid(format!("{name} is not in conflict")));
            }
            for c in hits {
                if !chosen.iter().any(|x| x.path == c.path) {
                    chosen.push(c.clone());
                }
            }
        }
        let results = match how {
            Resolution::AsIs => self.resolve_as_is(&chosen)?,
            _ => self.resolve_with_versions(&chosen, how)?,
        };
        // After the dirstate: a crash in between only leaves the paths listed, and resolving again is harmless.
        state.conflicts.retain(|c| !chosen.iter().any(|x| x.path == c.path));
        self.save_merge_state(&state)?;
        Ok(results)
    }

    fn resolve_as_is(&self, chosen: &[Conflict]) -> RepoResult<Vec<Resolved>> {
        let ds = self.load_dirstate()?;
        let mut to_stage = Vec::new();
        let mut results = Vec::new();
        for c in chosen {
            let on_disk = std::fs::symlink_metadata(self.abs_path(&c.path)).is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
            if on_disk || ds.entries.contains_key(&c.path) {
                to_stage.push(c.path.clone());
            }
            results.push(Resolved { path: c.path.clone(), kept: if on_disk { vec![c.path.clone()] } else { Vec::new() } });
        }
        drop(ds);
        if !to_stage.is_empty() {
            self.add(&to_stage, false, &|_, _| {})?;
        }
        Ok(results)
    }

    fn resolve_with_versions(&self, chosen: &[Conflict], how: Resolution) -> RepoResult<Vec<Resolved>> {
        let mut ds = self.load_dirstate()?;
        // What each affected path becomes (None: absent).
        let mut plan: Vec<(Vec<u8>, Option<FlatEntry>)> = Vec::new();
        let mut results = Vec::new();
        for c in chosen {
            let mut kept = Vec::new();
            if how == Resolution::Both {
                plan.push((c.path.clone(), None));
                for (side, entry) in [("ours", c.ours), ("theirs", c.theirs)] {
                    let Some(e) = entry else { continue };
                    let name = side_name(&c.path, side);
                    self.check_free(&name, &e, &ds, &plan)?;
                    plan.push((name.clone(), Some(e)));
                    kept.push(name);
                }
            } else {
                let entry = if how == Resolution::Ours { c.ours } else { c.theirs };
                plan.push((c.path.clone(), entry));
                kept.extend(entry.map(|_| c.path.clone()));
            }
            results.push(Resolved { path: c.path.clone(), kept });
        }

        // The result must still be a tree: no path both a file and a directory.
        let mut next: BTreeSet<Vec<u8>> = ds.entries.keys().cloned().collect();
        for (p, e) in &plan {
            match e {
                Some(_) => next.insert(p.clone()),
                None => next.remove(p),
            };
        }
        for (p, _) in plan.iter().filter(|(_, e)| e.is_some()) {
            if let Some(other) = clash_with(&next, p) {
                let (p, other) = (show(p), show(&other));
                return Err(RepoError::Conflict(format!(
                    "{p} and {other} cannot both exist (one is a file, the other a directory); resolve them together, e.g. `dmv resolve {} {p} {other}`",
                    how.flag()
                )));
            }
        }

        for (p, _) in plan.iter().filter(|(_, e)| e.is_none()) {
            let abs = self.abs_path(p);
            match std::fs::remove_file(&abs) {
                Ok(()) => self.remove_empty_parents(p),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(RepoError::io(abs, e)),
            }
            ds.entries.remove(p);
        }
        for (p, e) in &plan {
            let Some(e) = e else { continue };
            // A big file already right on disk (e.g. ours, shown during the merge) is not rewritten.
            let staged_and_unchanged =
                ds.entries.get(p).is_some_and(|d| d.kind == e.kind && d.id == e.id && std::fs::symlink_metadata(self.abs_path(p)).is_ok_and(|m| d.stat_matches(&m, ds.written_ns)));
            if !staged_and_unchanged {
                let meta = self.write_entry(p, e)?;
                ds.entries.insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
            }
        }
        self.save_dirstate(&ds)?;
        Ok(results)
    }

    /// `--both` must not overwrite anything: its names must be free, unless a
    /// resolve that was interrupted already wrote exactly this version there.
    fn check_free(&self, name: &[u8], e: &FlatEntry, ds: &Dirstate, plan: &[(Vec<u8>, Option<FlatEntry>)]) -> RepoResult<()> {
        let taken = || RepoError::Conflict(format!("cannot keep both versions: {} already exists; move it away first", show(name)));
        let tracked_other = ds.entries.get(name).is_some_and(|d| d.kind != e.kind || d.id != e.id);
        if tracked_other || plan.iter().any(|(p, _)| p == name) {
            return Err(taken());
        }
        let abs = self.abs_path(name);
        match std::fs::symlink_metadata(&abs) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(RepoError::io(abs, err)),
            Ok(m) if kind_of(&m) == Some(e.kind) && self.current_id(name, &m)?.0 == e.id => Ok(()),
            Ok(_) => Err(taken()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(n: u8) -> FlatEntry {
        FlatEntry { kind: EntryKind::File, id: ObjectId([n; 32]), size: n as u64 }
    }

    fn tree(items: &[(&str, u8)]) -> FlatTree {
        items.iter().map(|(p, n)| (p.as_bytes().to_vec(), e(*n))).collect()
    }

    #[test]
    fn side_names() {
        assert_eq!(side_name(b"shot.jpg", "ours"), b"shot.ours.jpg");
        assert_eq!(side_name(b"dir.d/README", "theirs"), b"dir.d/README.theirs");
        assert_eq!(side_name(b"a/.hidden", "ours"), b"a/.hidden.ours");
        assert_eq!(side_name(b"a/b.tar.gz", "ours"), b"a/b.tar.ours.gz");
    }

    #[test]
    fn one_sided_changes_merge_and_two_sided_ones_conflict() {
        let base = tree(&[("same", 1), ("ours-mod", 2), ("theirs-mod", 3), ("both", 4), ("del-ours", 5), ("moddel", 6)]);
        let ours = tree(&[("same", 1), ("ours-mod", 20), ("theirs-mod", 3), ("both", 40), ("moddel", 60), ("added", 9)]);
        let theirs = tree(&[("same", 1), ("ours-mod", 2), ("theirs-mod", 30), ("both", 41), ("del-ours", 5), ("added", 9)]);
        let (merged, conflicts) = three_way(&base, &ours, &theirs);
        assert_eq!(merged, tree(&[("same", 1), ("ours-mod", 20), ("theirs-mod", 30), ("both", 40), ("moddel", 60), ("added", 9)]));
        let paths: Vec<&[u8]> = conflicts.iter().map(|c| c.path.as_slice()).collect();
        assert_eq!(paths, [b"both".as_slice(), b"moddel"]);
        assert_eq!(conflicts[1].describe().1, "deleted by them");
    }

    #[test]
    fn file_against_directory_conflicts_and_shows_ours() {
        let base = tree(&[("x", 1)]);
        let ours = tree(&[("x", 1), ("a", 2)]);
        let theirs = tree(&[("x", 1), ("a/b", 3), ("a/c", 4)]);
        let (merged, conflicts) = three_way(&base, &ours, &theirs);
        assert_eq!(merged, tree(&[("x", 1), ("a", 2)]));
        assert_eq!(conflicts.len(), 3);
        assert!(clashes(&merged).is_empty());
    }

    #[test]
    fn clash_lookup() {
        let set: BTreeSet<Vec<u8>> = [b"a".to_vec(), b"a.txt".to_vec(), b"d/e".to_vec()].into();
        assert_eq!(clash_with(&set, b"a/b"), Some(b"a".to_vec()));
        assert_eq!(clash_with(&set, b"d"), Some(b"d/e".to_vec()));
        assert_eq!(clash_with(&set, b"a.txt2"), None);
    }
}
