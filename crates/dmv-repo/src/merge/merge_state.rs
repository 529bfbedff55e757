//! `.dmv/MERGE_STATE`: the state kept while a merge is unfinished, read and
//! written here, and the merge in progress as `status` reports it.
//! Layout: magic, version, postcard-encoded state, BLAKE3 checksum.

use crate::repository::handles::Merges;
use std::path::{Path, PathBuf};

use dmv_store::ObjectId;
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::error::{RepoError, RepoResult};
use crate::merge::three_way::Conflict;
use crate::paths::{ser_path, show};

const STATE_FILE: &str = "MERGE_STATE";
/// The message `merge -m` gave, kept beside the state until the merge ends.
const MESSAGE_FILE: &str = "MERGE_MSG";
/// `merge --squash`'s prepared message, which the next commit takes (git's `SQUASH_MSG`).
pub const SQUASH_MESSAGE_FILE: &str = "SQUASH_MSG";
const MAGIC: &[u8; 8] = b"DMVMERGE";
/// 2 added [`MergeKind`]; a version 1 file is a merge's.
const VERSION: u32 = 2;

/// Where a merge in progress stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergePhase {
    /// The working tree is being written; only `merge --abort` may follow.
    Applying,
    /// The working tree holds the merge result; conflicts are being resolved.
    Resolving,
}

/// What is being merged: a branch, or one commit's change (cherry-pick).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergeKind {
    /// `merge`: concluded by a commit with parents [HEAD, theirs].
    Merge,
    /// `cherry-pick`: `theirs`'s change to its parent, concluded by a commit
    /// on HEAD alone with `theirs`'s message and author.
    CherryPick,
    /// `merge --squash`: the merge's result, concluded by a commit on HEAD
    /// alone (as its committer's) with `SQUASH_MSG`'s message.
    Squash,
}

/// `.dmv/MERGE_STATE`: present exactly while a merge is unfinished.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergeState {
    /// HEAD when the merge started (None: unborn, which only fast-forwards).
    pub head: Option<ObjectId>,
    /// The commit being merged in.
    pub theirs: ObjectId,
    /// How the other side is named in messages ("feature", "origin/main").
    pub label: String,
    /// The tree being written to the working tree (merge result or provisional).
    pub target: ObjectId,
    /// Whether the working tree is still being written.
    pub phase: MergePhase,
    /// Unresolved paths, sorted.
    pub conflicts: Vec<Conflict>,
    /// A merge or a cherry-pick.
    pub kind: MergeKind,
}

/// A version 1 state: a merge's, before [`MergeKind`].
#[derive(Deserialize)]
struct MergeStateV1 {
    head: Option<ObjectId>,
    theirs: ObjectId,
    label: String,
    target: ObjectId,
    phase: MergePhase,
    conflicts: Vec<Conflict>,
}

impl MergeState {
    fn load(path: &Path) -> RepoResult<Option<MergeState>> {
        let corrupt = |detail: &str| RepoError::Corrupt {
            path: path.into(),
            detail: format!("{detail} (aborting the merge discards it)"),
        };
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
        match u32::from_le_bytes([body[8], body[9], body[10], body[11]]) {
            VERSION => postcard::from_bytes(&body[12..])
                .map(Some)
                .map_err(|e| corrupt(&e.to_string())),
            1 => {
                let v1: MergeStateV1 =
                    postcard::from_bytes(&body[12..]).map_err(|e| corrupt(&e.to_string()))?;
                let MergeStateV1 {
                    head,
                    theirs,
                    label,
                    target,
                    phase,
                    conflicts,
                } = v1;
                Ok(Some(MergeState {
                    head,
                    theirs,
                    label,
                    target,
                    phase,
                    conflicts,
                    kind: MergeKind::Merge,
                }))
            }
            _ => Err(corrupt("unsupported merge state version")),
        }
    }

    fn encode(&self) -> RepoResult<Vec<u8>> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend(postcard::to_stdvec(self).map_err(|e| RepoError::Encode {
            what: "the merge state",
            detail: e.to_string(),
        })?);
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        Ok(bytes)
    }

    /// Why the staged tree cannot be committed as this merge yet, if it cannot.
    pub(crate) fn check_ready_to_commit(&self, head: Option<ObjectId>) -> RepoResult<()> {
        self.check_applied()?;
        if head.is_none() || head != self.head {
            return Err(RepoError::HeadMoved {
                label: self.label.clone(),
            });
        }
        if !self.conflicts.is_empty() {
            return Err(RepoError::UnresolvedConflicts {
                paths: self.conflicts.iter().map(|c| show(&c.path)).collect(),
            });
        }
        Ok(())
    }

    /// Refuses a merge stopped while writing the working tree: only
    /// `merge --abort` may follow it.
    pub(crate) fn check_applied(&self) -> RepoResult<()> {
        if self.phase == MergePhase::Applying {
            return Err(RepoError::MergeInterrupted {
                label: self.label.clone(),
            });
        }
        Ok(())
    }
}

/// The merge in progress as `status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct MergeStatus {
    /// How the other side is named in messages ("feature", "origin/main").
    pub label: String,
    /// The commit being merged in.
    pub theirs: ObjectId,
    /// Stopped while writing the working tree: only `merge --abort` helps.
    pub interrupted: bool,
    /// A cherry-pick of `theirs`, not a merge.
    pub cherry_pick: bool,
    /// The unresolved paths, sorted.
    pub conflicts: Vec<ConflictStatus>,
}

/// One unresolved path of a merge in progress.
#[derive(Clone, Debug, Serialize)]
pub struct ConflictStatus {
    /// The path, '/'-separated bytes.
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    /// UU, AA, DU, UD, AU or UA, as in `git status --short`.
    pub code: &'static str,
    /// The code in words, e.g. "both modified", "deleted by us".
    pub description: &'static str,
}

impl Merges<'_> {
    fn merge_state_path(&self) -> PathBuf {
        self.dmv.join(STATE_FILE)
    }

    /// The unfinished merge, if any. A state file left by a merge that was
    /// stopped after its ref update (HEAD is their commit, or a commit whose
    /// parents are exactly [the merge's HEAD, theirs], or for a cherry-pick
    /// [the pick's HEAD]) is removed, not returned.
    pub fn merge_state(&self) -> RepoResult<Option<MergeState>> {
        let Some(state) = MergeState::load(&self.merge_state_path())? else {
            return Ok(None);
        };
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
        Ok(match state.kind {
            MergeKind::Merge => state
                .head
                .is_some_and(|ours| parents == [ours, state.theirs]),
            // A pick stopped after its commit: nothing else commits on HEAD while it is unfinished.
            MergeKind::CherryPick | MergeKind::Squash => {
                state.head.is_some_and(|ours| parents == [ours])
            }
        })
    }

    pub(crate) fn merge_status(&self) -> RepoResult<Option<MergeStatus>> {
        Ok(self.merge_state()?.map(|s| MergeStatus {
            label: s.label,
            theirs: s.theirs,
            interrupted: s.phase == MergePhase::Applying,
            cherry_pick: s.kind == MergeKind::CherryPick,
            conflicts: s
                .conflicts
                .iter()
                .map(|c| {
                    let (code, description) = c.describe();
                    ConflictStatus {
                        path: c.path.clone(),
                        code,
                        description,
                    }
                })
                .collect(),
        }))
    }

    pub(crate) fn save_merge_state(&self, state: &MergeState) -> RepoResult<()> {
        self.check_worktree_locked("MERGE_STATE")?;
        write_atomic(&self.merge_state_path(), &state.encode()?)
    }

    pub(crate) fn remove_merge_state(&self) -> RepoResult<()> {
        self.check_worktree_locked("MERGE_STATE")?;
        self.forget_merge_message()?;
        let path = self.merge_state_path();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// The message `merge -m` gave the merge of `theirs` (`.dmv/MERGE_MSG`,
    /// as git keeps it, after the id of the commit merged: one left by a
    /// merge killed before its state was written is another merge's).
    pub(crate) fn given_merge_message(&self, theirs: &ObjectId) -> RepoResult<Option<String>> {
        let path = self.dmv.join(MESSAGE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                Ok(text
                    .split_once('\n')
                    .filter(|(id, _)| *id == theirs.to_hex())
                    .map(|(_, message)| message.to_string()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    pub(crate) fn keep_merge_message(&self, theirs: &ObjectId, message: &str) -> RepoResult<()> {
        let text = format!("{}\n{message}", theirs.to_hex());
        write_atomic(&self.dmv.join(MESSAGE_FILE), text.as_bytes())
    }

    /// Removes `merge -m`'s message and `merge --squash`'s, whose merge ended.
    pub(crate) fn forget_merge_message(&self) -> RepoResult<()> {
        for name in [MESSAGE_FILE, SQUASH_MESSAGE_FILE] {
            let path = self.dmv.join(name);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(RepoError::io(path, e))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Objects an unfinished merge still needs, for gc and fsck.
    pub(crate) fn merge_roots(&self) -> RepoResult<Vec<ObjectId>> {
        Ok(MergeState::load(&self.merge_state_path())?
            .map(|s| vec![s.theirs, s.target])
            .unwrap_or_default())
    }
}
