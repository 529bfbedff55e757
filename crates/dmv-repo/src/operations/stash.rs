//! `stash`: the uncommitted changes to tracked files put aside as a commit
//! (its tree the working tree's, its parents HEAD and, when something was
//! staged, a commit of the staging area, as git keeps them) under
//! `refs/stashes/`, the working tree made HEAD's again, and later brought
//! back: as unstaged changes with new files staged, as git's `stash pop`
//! does, or with `--index` with what was staged staged again. With
//! untracked files (`stash -u`) a third parent holds them, as git's does,
//! and they come back untracked.

use crate::repository::handles::Merges;
use std::collections::HashSet;

use dmv_store::object::Commit;
use dmv_store::{ObjectId, ObjectKind, Progress};

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{build, flatten, FlatEntry, FlatTree};
use crate::merge::three_way::three_way;
use crate::paths::show;
use crate::ref_names::{BRANCHES, STASHES};
use crate::repository::refs::{Head, RefUpdate};
use crate::worktree::checkout::Written;
use crate::worktree::dirstate::{DirEntry, Dirstate};

const PREFIX: &str = STASHES;

/// One stashed set of changes, newest first in [`Merges::stashes`].
#[derive(Clone, Debug)]
pub struct Stash {
    /// Its ref, `refs/stashes/` and a sequence number.
    pub ref_name: String,
    /// Its commit (its parents: HEAD then, and the staged tree's commit if that differed).
    pub id: ObjectId,
    /// `On BRANCH: MESSAGE`, or `WIP on BRANCH: ID SUBJECT` when none was given.
    pub message: String,
}

impl Merges<'_> {
    /// The stashes, newest first (`stash@{0}` is the first).
    pub fn stashes(&self) -> RepoResult<Vec<Stash>> {
        let mut out = Vec::new();
        for (ref_name, id) in self.refs.list(PREFIX)?.into_iter().rev() {
            out.push(Stash {
                message: self.commit(&id)?.message,
                ref_name,
                id,
            });
        }
        Ok(out)
    }

    /// Stash `index` (0: the newest).
    pub fn stash(&self, index: usize) -> RepoResult<Stash> {
        self.stashes()?
            .into_iter()
            .nth(index)
            .ok_or(RepoError::NoStash { index })
    }

    /// Puts the uncommitted changes to tracked files (with `untracked`, the
    /// files neither tracked nor ignored too) aside and makes the working
    /// tree HEAD's. None when there is nothing to put aside.
    pub fn stash_push(
        &self,
        message: Option<&str>,
        untracked: bool,
        progress: &dyn Progress,
    ) -> RepoResult<Option<Stash>> {
        self.stash_push_paths(message, untracked, &[], progress)
    }

    /// [`Merges::stash_push`] of the changes at or under `paths` only (all:
    /// empty), as `stash push -- PATH…`: the stash holds HEAD's files with
    /// those paths' staged and working versions, and only those paths go
    /// back to HEAD; other changes stay where they are.
    pub fn stash_push_paths(
        &self,
        message: Option<&str>,
        untracked: bool,
        paths: &[Vec<u8>],
        progress: &dyn Progress,
    ) -> RepoResult<Option<Stash>> {
        let all = [Vec::new()];
        let specs: &[Vec<u8>] = if paths.is_empty() { &all } else { paths };
        let whole = paths.is_empty() || paths.iter().any(|p| p.is_empty());
        self.require_worktree()?;
        self.signer()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commit to stash on)".into()))?;
        let mut ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        let head_tree = self.commit(&head)?.tree;
        // With paths: HEAD's files, those at the paths as `from` has them.
        let only_paths = |session: &mut dmv_store::WriteSession<'_>, from: &Dirstate| {
            if whole {
                return from.write_tree(session);
            }
            let mut files = flatten(&self.store, &head_tree)?;
            files.retain(|p, _| !specs.iter().any(|s| crate::paths::matches(p, s)));
            for (p, e) in from.entries.iter() {
                if specs.iter().any(|s| crate::paths::matches(p, s)) {
                    files.insert(p.to_vec(), e.flat());
                }
            }
            build(session, files.iter().map(|(p, e)| (p.as_slice(), *e)))
        };
        let staged = only_paths(&mut session, &ds)?;
        // Files staged as new at the paths: stashed, so they leave the working tree too.
        let added_at_paths: Vec<Vec<u8>> = match whole {
            true => Vec::new(),
            false => {
                let head_files = flatten(&self.store, &head_tree)?;
                ds.entries
                    .keys()
                    .filter(|p| specs.iter().any(|s| crate::paths::matches(p, s)))
                    .filter(|p| !head_files.contains_key(*p))
                    .map(<[u8]>::to_vec)
                    .collect()
            }
        };
        // The changed files' content is stored as `add` would, into a copy of the dirstate that is not saved.
        self.worktree()
            .stage(&mut session, &mut ds, specs, true, progress)?;
        let tree = only_paths(&mut session, &ds)?;
        // The untracked files: what staging everything adds to the tracked entries.
        let mut loose: FlatTree = FlatTree::new();
        if untracked {
            let tracked: HashSet<Vec<u8>> = ds.entries.iter().map(|(p, _)| p.to_vec()).collect();
            self.worktree()
                .stage(&mut session, &mut ds, specs, false, progress)?;
            for (path, e) in ds.entries.iter().filter(|(p, _)| !tracked.contains(*p)) {
                loose.insert(
                    path.to_vec(),
                    FlatEntry {
                        kind: e.kind,
                        id: e.id,
                        size: e.size,
                    },
                );
            }
        }
        let head_commit = self.commit(&head)?;
        if tree == head_commit.tree && loose.is_empty() {
            return Ok(None);
        }
        let on = match self.head()? {
            Head::Branch(b) => b.strip_prefix(BRANCHES).unwrap_or(&b).to_string(),
            Head::Detached(_) => "(no branch)".into(),
        };
        let message = match message {
            Some(m) => format!("On {on}: {m}"),
            None => format!(
                "WIP on {on}: {} {}",
                head.short(),
                head_commit.message.lines().next().unwrap_or("")
            ),
        };
        let me = self.signer()?;
        // As git's: each of the stash's commits names HEAD by id and subject.
        let subject = head_commit.message.lines().next().unwrap_or("");
        let mut parents = vec![head];
        // The staged tree's commit is the second parent when it differs, and always before a third.
        if staged != head_commit.tree || !loose.is_empty() {
            let index = Commit {
                tree: staged,
                parents: vec![head],
                author: me.clone(),
                committer: me.clone(),
                message: format!("index on {on}: {} {subject}", head.short()),
            };
            parents
                .push(session.put_object(ObjectKind::Commit, &dmv_store::object::encode(&index))?);
        }
        if !loose.is_empty() {
            let files = build(&mut session, loose.iter().map(|(p, e)| (p.as_slice(), *e)))?;
            let commit = Commit {
                tree: files,
                parents: Vec::new(),
                author: me.clone(),
                committer: me.clone(),
                message: format!("untracked files on {on}: {} {subject}", head.short()),
            };
            parents
                .push(session.put_object(ObjectKind::Commit, &dmv_store::object::encode(&commit))?);
        }
        let commit = Commit {
            tree,
            parents,
            author: me.clone(),
            committer: me,
            message: message.clone(),
        };
        let id = session.put_object(ObjectKind::Commit, &dmv_store::object::encode(&commit))?;
        session.finish()?;
        dmv_store::failpoint("stash-before-ref");
        let seq = self
            .refs
            .list(PREFIX)?
            .last()
            .and_then(|(n, _)| n[PREFIX.len()..].parse::<u64>().ok())
            .map_or(1, |n| n + 1);
        let ref_name = format!("{PREFIX}{seq:010}");
        self.update_refs(
            &[RefUpdate {
                name: ref_name.clone(),
                expected: Some(None),
                new: Some(id),
            }],
            &self.who(),
            "stash",
        )?;
        drop(session);
        // Kept under its ref first: now the working tree may go back to HEAD.
        match whole {
            true => self.discard_changes()?,
            false => {
                self.worktree().restore(specs, None, true)?;
                self.worktree().restore(specs, None, false)?;
                for path in &added_at_paths {
                    self.worktree().remove_worktree_file(path)?;
                }
            }
        }
        for path in loose.keys() {
            self.worktree().remove_worktree_file(path)?;
        }
        Ok(Some(Stash {
            ref_name,
            id,
            message,
        }))
    }

    /// Brings stash `index` (0: the newest) back into the working tree,
    /// whose uncommitted changes to other paths stay as they are; with
    /// `drop`, removes it once applied; with `restore_index`, what was staged
    /// is staged again. Refused, with nothing changed, when a path it changed
    /// has uncommitted changes or was changed differently on HEAD since (with
    /// `restore_index`: changed at all, for a staged path).
    pub fn stash_apply(
        &self,
        index: usize,
        drop: bool,
        restore_index: bool,
        progress: &dyn Progress,
    ) -> RepoResult<Stash> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let stash = self.stash(index)?;
        // Uncommitted changes elsewhere stay as they are, as git's apply
        // keeps them; one at a path the stash changes refuses (the checkout below says so).
        let (status, _) = self.worktree().worktree_status()?;
        let dirty: HashSet<&[u8]> = status
            .staged
            .iter()
            .chain(&status.unstaged)
            .map(|c| c.path.as_slice())
            .collect();
        let head = self.head_commit()?;
        let stashed = self.commit(&stash.id)?;
        let flat_of = |c: Option<&ObjectId>| -> RepoResult<FlatTree> {
            match c {
                Some(c) => flatten(&self.store, &self.commit(c)?.tree),
                None => Ok(FlatTree::new()),
            }
        };
        let base = flat_of(stashed.parents.first())?;
        let ours = flat_of(head.as_ref())?;
        let (merged, conflicts) = three_way(&base, &ours, &flatten(&self.store, &stashed.tree)?);
        if let Some(c) = conflicts.first() {
            return Err(RepoError::StashConflict {
                path: show(&c.path),
            });
        }
        // Untracked files it put aside come back where nothing is now, tracked or not.
        let loose = flat_of(stashed.parents.get(2))?;
        for path in loose.keys() {
            if merged.contains_key(path) {
                return Err(RepoError::StashConflict { path: show(path) });
            }
            if std::fs::symlink_metadata(self.abs_path(path)).is_ok() {
                return Err(RepoError::UntrackedInTheWay {
                    path: show(path),
                    merge: false,
                });
            }
        }
        // The staged versions to stage again: where the staging area differed from the stash's HEAD.
        let staged: FlatTree = match (restore_index, stashed.parents.get(1)) {
            (true, Some(index)) => flatten(&self.store, &self.commit(index)?.tree)?,
            _ => base.clone(),
        };
        let restaged: Vec<&Vec<u8>> = base
            .keys()
            .chain(staged.keys())
            .filter(|p| base.get(*p) != staged.get(*p))
            .collect();
        if let Some(moved) = restaged.iter().find(|p| ours.get(**p) != base.get(**p)) {
            return Err(RepoError::StashConflict { path: show(moved) });
        }
        if let Some(changed) = restaged.iter().find(|p| dirty.contains(p.as_slice())) {
            return Err(RepoError::UncommittedChanges {
                path: show(changed),
                merge: false,
            });
        }
        // What the stash brings back; every other path keeps its entry (a carried change, staged or not).
        let touched = |path: &[u8]| merged.get(path) != ours.get(path);
        let mut session = self.store.begin_write()?;
        let target = build(
            &mut session,
            merged
                .iter()
                .chain(loose.iter())
                .map(|(p, e)| (p.as_slice(), *e)),
        )?;
        session.finish()?;
        self.worktree()
            .update_worktree(&target, &Written::new(), progress)?;
        // The changes back as changes: HEAD's entries where HEAD has the
        // path (re-read, so they show as unstaged), the stash's new files staged.
        let written = self.load_dirstate()?;
        let mut ds = Dirstate::default();
        for (path, e) in written
            .entries
            .iter()
            .filter(|(p, _)| !loose.contains_key(*p))
        {
            let entry = match ours.get(path) {
                Some(h) if touched(path) && (h.id != e.id || h.kind != e.kind) => {
                    DirEntry::stat_unknown(h.kind, h.id, h.size)
                }
                _ => e.clone(),
            };
            ds.entries.insert(path.to_vec(), entry);
        }
        for (path, h) in ours.iter().filter(|(p, _)| !merged.contains_key(*p)) {
            ds.entries
                .insert(path.clone(), DirEntry::stat_unknown(h.kind, h.id, h.size));
        }
        for path in restaged {
            match staged.get(path) {
                Some(i) => ds
                    .entries
                    .insert(path.clone(), DirEntry::stat_unknown(i.kind, i.id, i.size)),
                None => ds.entries.remove(path),
            };
        }
        self.save_dirstate(&ds)?;
        if drop {
            self.update_refs(
                &[RefUpdate {
                    name: stash.ref_name.clone(),
                    expected: Some(Some(stash.id)),
                    new: None,
                }],
                &self.who(),
                "stash pop",
            )?;
        }
        Ok(stash)
    }

    /// Removes every stash, in one update of the refs; returns how many.
    pub fn stash_clear(&self) -> RepoResult<usize> {
        let all = self.stashes()?;
        let updates: Vec<RefUpdate> = all
            .iter()
            .map(|s| RefUpdate {
                name: s.ref_name.clone(),
                expected: Some(Some(s.id)),
                new: None,
            })
            .collect();
        if !updates.is_empty() {
            self.update_refs(&updates, &self.who(), "stash clear")?;
        }
        Ok(all.len())
    }

    /// Removes stash `index` (0: the newest).
    pub fn stash_drop(&self, index: usize) -> RepoResult<Stash> {
        let stash = self.stash(index)?;
        self.update_refs(
            &[RefUpdate {
                name: stash.ref_name.clone(),
                expected: Some(Some(stash.id)),
                new: None,
            }],
            &self.who(),
            "stash drop",
        )?;
        Ok(stash)
    }
}
