//! Locking paths on a remote from a replica: `dmv lock`, `unlock`, `locks`,
//! and the checks that keep a replica from committing or pushing a change
//! to a path someone else holds. The remote's table (or, in a bucket, its
//! lock objects) decides; this replica keeps what it last learned
//! ([`KnownLocks`]) so status can show holders and checkouts know which
//! lockable files to leave writable.

use dmv_repo::store::ObjectId;
use dmv_repo::{
    CommitRequest, Committed, KnownLocks, Lockable, PathLock, Progress, RepoError, Repository,
    ATTRIBUTES_FILE,
};

use crate::operations::named_remotes::{default_remote, find_remote, NamedRemote};
use crate::operations::send::PushRef;
use crate::transport::remote::{PathLocks, Remote};
use crate::AddressError;
use crate::{SyncError, SyncResult};

/// The remote locks are taken on: the one named, else the current branch's
/// upstream remote, else `origin`, else the only remote.
pub fn lock_remote(repo: &Repository, named: Option<&str>) -> SyncResult<NamedRemote> {
    match named {
        Some(name) => find_remote(repo, name),
        None if repo.config.remotes.is_empty() => {
            Err(SyncError::Address(AddressError::NeedsNamedRemote {
                what: "locking",
            }))
        }
        None => default_remote(repo, "locking"),
    }
}

/// Our name where the remote cannot tell who we are (an object store).
fn me(repo: &Repository) -> String {
    repo.identity().name
}

/// Locks `paths` on the remote for us (all or none) and makes the lockable
/// ones among them writable here.
pub fn lock(repo: &Repository, remote: &mut dyn Remote, paths: &[String]) -> SyncResult<PathLocks> {
    let taken = remote
        .path_locks()?
        .lock_paths(paths, &repo.copies().replica_name(), &me(repo))?;
    refresh_known(repo, remote)?;
    for l in &taken.locks {
        repo.worktree().set_lock_mode(&l.path, true)?;
    }
    Ok(taken)
}

/// Releases `paths` on the remote (all or none; `force` breaks other
/// people's locks, for admins) and makes the lockable ones read-only here.
pub fn unlock(
    repo: &Repository,
    remote: &mut dyn Remote,
    paths: &[String],
    force: bool,
) -> SyncResult<PathLocks> {
    let released = remote.path_locks()?.unlock_paths(paths, force, &me(repo))?;
    refresh_known(repo, remote)?;
    for l in &released.locks {
        repo.worktree().set_lock_mode(&l.path, false)?;
    }
    Ok(released)
}

/// Every lock on the remote, remembered here.
pub fn list(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<PathLocks> {
    let listed = remote.path_locks()?.list_locks(&me(repo))?;
    remember(repo, remote.url(), &listed)?;
    Ok(listed)
}

fn refresh_known(repo: &Repository, remote: &mut dyn Remote) -> SyncResult<()> {
    list(repo, remote).map(|_| ())
}

fn remember(repo: &Repository, url: &str, listed: &PathLocks) -> SyncResult<()> {
    let learned = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(repo.locks().save_known_locks(&KnownLocks {
        remote: url.to_string(),
        you: listed.you.clone(),
        learned,
        locks: listed.locks.clone(),
    })?)
}

/// Before a push uploads anything: refuses it when one of its new commits
/// changes a path someone else holds there. The server checks again when
/// the refs move (a bucket has no server: this is its only check).
pub fn refuse_push_over_locks(
    repo: &Repository,
    remote: &mut dyn Remote,
    updates: &[PushRef],
    remote_tips: &[ObjectId],
) -> SyncResult<()> {
    let listed = match list(repo, remote) {
        Ok(l) => l,
        Err(SyncError::Unsupported { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let others: Vec<&PathLock> = listed
        .locks
        .iter()
        .filter(|l| Some(&l.owner) != listed.you.as_ref())
        .collect();
    if others.is_empty() {
        dmv_repo::store::failpoint("push-locks-checked");
        return Ok(());
    }
    let tips: Vec<ObjectId> = remote_tips
        .iter()
        .filter(|t| repo.store.contains(t).unwrap_or(false))
        .copied()
        .collect();
    for update in updates {
        let Some(new) = update.new else { continue };
        let commits = repo.history().commits_between(&[new], &tips)?;
        if let Some((lock, commit)) = repo.locks().change_to_locked(&commits, &others)? {
            return Err(RepoError::LockedPathChanged {
                path: lock.path.clone(),
                holder: lock.holder(),
                commit: commit.short(),
            }
            .into());
        }
    }
    // A lock taken from here on is the server's to enforce.
    dmv_repo::store::failpoint("push-locks-checked");
    Ok(())
}

/// After a push to `remote` moved `updates` (from the remote's `old_tips`):
/// gives back the locks this user holds there on paths the pushed commits
/// change, so the next person can take them (Anchorpoint's and Diversion's
/// release on push). Asks the remote nothing unless this replica last
/// learned from it of locks this user holds, so pushes of repositories
/// without locks cost no request. Returns the paths given back.
pub fn release_landed_locks(
    repo: &Repository,
    remote: &mut dyn Remote,
    updates: &[PushRef],
    old_tips: &[ObjectId],
) -> SyncResult<Vec<String>> {
    let known = repo.locks().known_locks();
    if known.remote != remote.url() {
        return Ok(Vec::new());
    }
    let mine: Vec<&PathLock> = known
        .locks
        .iter()
        .filter(|l| known.you.as_ref() == Some(&l.owner))
        .collect();
    if mine.is_empty() {
        return Ok(Vec::new());
    }
    let tips: Vec<ObjectId> = old_tips
        .iter()
        .filter(|t| repo.store.contains(t).unwrap_or(false))
        .copied()
        .collect();
    let news: Vec<ObjectId> = updates.iter().filter_map(|u| u.new).collect();
    let commits = repo.history().commits_between(&news, &tips)?;
    let landed: Vec<String> = repo
        .locks()
        .locks_changed(&commits, &mine)?
        .into_iter()
        .map(|l| l.path.clone())
        .collect();
    if landed.is_empty() {
        return Ok(landed);
    }
    let released = unlock(repo, remote, &landed, false)?;
    Ok(released.locks.into_iter().map(|l| l.path).collect())
}

/// The paths of `listed`'s locks held by this user whose files have not
/// changed here for `days` days: no change to commit, and the working
/// file last modified (or, when absent, the lock taken) that long ago.
/// What `dmv locks --stale` shows, so forgotten locks are given back.
pub fn stale_locks(repo: &Repository, listed: &PathLocks, days: u32) -> SyncResult<Vec<String>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let before = now.saturating_sub(u64::from(days) * 86_400);
    let status = repo.status()?;
    let changed = |path: &str| {
        status
            .staged
            .iter()
            .chain(&status.unstaged)
            .any(|c| c.path == path.as_bytes())
    };
    let mut stale = Vec::new();
    for l in listed
        .locks
        .iter()
        .filter(|l| listed.you.as_ref() == Some(&l.owner))
    {
        let modified = std::fs::metadata(repo.root.join(&l.path))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(l.since, |d| d.as_secs());
        if !changed(&l.path) && modified <= before {
            stale.push(l.path.clone());
        }
    }
    Ok(stale)
}

/// What [`take_locks_of_changes`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LocksForChanges {
    /// The paths whose locks were taken now.
    pub taken: Vec<String>,
    /// Changed lockable paths someone else holds, with who.
    pub held_by_others: Vec<(String, String)>,
}

/// A watcher's step: takes the locks of the lockable files changed here
/// that this user does not hold yet, as an artist starts editing
/// (Anchorpoint's and Unity's automatic checkout), one path at a time so
/// that one someone else holds keeps none of the others from being taken,
/// and names those. Asks the remote nothing when no lockable file changed
/// or the repository has no remote.
pub fn take_locks_of_changes(repo: &Repository) -> SyncResult<LocksForChanges> {
    let mut done = LocksForChanges::default();
    let lockable = Lockable::parse(
        &std::fs::read_to_string(repo.root.join(ATTRIBUTES_FILE)).unwrap_or_default(),
    );
    if lockable.is_empty() {
        return Ok(done);
    }
    let status = repo.status()?;
    let known = repo.locks().known_locks();
    let held_by_me = |path: &str| {
        known
            .locks
            .iter()
            .any(|l| l.path == path && known.you.as_ref() == Some(&l.owner))
    };
    let mut changed: Vec<String> = status
        .staged
        .iter()
        .chain(&status.unstaged)
        .map(|c| c.path.as_slice())
        .chain(status.untracked.iter().map(Vec::as_slice))
        .filter(|p| lockable.matches(p))
        .filter_map(|p| String::from_utf8(p.to_vec()).ok())
        .filter(|p| !held_by_me(p))
        .collect();
    changed.sort();
    changed.dedup();
    if changed.is_empty() {
        return Ok(done);
    }
    let named = match lock_remote(repo, None) {
        Ok(r) => r,
        Err(SyncError::Address(AddressError::NeedsNamedRemote { .. })) => return Ok(done),
        Err(e) => return Err(e),
    };
    let mut remote = named.connect()?;
    for path in changed {
        match lock(repo, remote.as_mut(), std::slice::from_ref(&path)) {
            Ok(_) => done.taken.push(path),
            Err(e) => {
                // Held by someone else, as the remote's list says; else a failure to tell.
                let listed = list(repo, remote.as_mut())?;
                match listed
                    .locks
                    .iter()
                    .find(|l| l.path == path && listed.you.as_ref() != Some(&l.owner))
                {
                    Some(l) => done.held_by_others.push((path, l.holder())),
                    None => return Err(e),
                }
            }
        }
    }
    Ok(done)
}

/// What a commit's check of the locks found.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitLockCheck {
    /// No change touches a lockable or locked path, or none held by others.
    Clear,
    /// The remote could not be asked: go on, and say so.
    Unchecked {
        /// The remote's name.
        remote: String,
        /// Why it could not be asked.
        why: String,
    },
}

/// `commit`, as one call: the lock check of [`check_commit`], then
/// [`Repository::commit_with`], under one hold of the working-tree lock so
/// that what was checked is what is committed.
pub fn commit(
    repo: &Repository,
    request: &CommitRequest<'_>,
    progress: &dyn Progress,
) -> SyncResult<(CommitLockCheck, Committed)> {
    let _wlock = repo.lock_worktree()?;
    let check = check_commit(repo, request.all)?;
    Ok((check, repo.commit_with(request, progress)?))
}

/// Before a commit (of the staged changes, or with `all` of every change
/// to tracked files): refuses when a changed path is locked by someone else
/// on the lock remote. Asks the remote only when the repository uses locks
/// (lockable patterns in `.dmvattributes`, or locks seen there before) and
/// a changed path is lockable or was locked, so repositories that use no
/// locks never wait on the network or for a status.
pub fn check_commit(repo: &Repository, all: bool) -> SyncResult<CommitLockCheck> {
    let lockable = Lockable::parse(
        &std::fs::read_to_string(repo.root.join(ATTRIBUTES_FILE)).unwrap_or_default(),
    );
    let known = repo.locks().known_locks();
    if lockable.is_empty() && known.locks.is_empty() {
        return Ok(CommitLockCheck::Clear);
    }
    let status = repo.status()?;
    let changed = status
        .staged
        .iter()
        .chain(all.then_some(&status.unstaged).into_iter().flatten())
        .map(|c| &c.path);
    let relevant: Vec<&Vec<u8>> = changed
        .filter(|p| {
            lockable.matches(p)
                || known
                    .locks
                    .iter()
                    .any(|l| l.path.as_bytes() == p.as_slice())
        })
        .collect();
    if relevant.is_empty() {
        return Ok(CommitLockCheck::Clear);
    }
    let named = match lock_remote(repo, None) {
        Ok(r) => r,
        Err(SyncError::Address(AddressError::NeedsNamedRemote { .. })) => {
            return Ok(CommitLockCheck::Clear)
        }
        Err(e) => return Err(e),
    };
    let listed = match named
        .connect()
        .and_then(|mut remote| list(repo, remote.as_mut()))
    {
        Ok(l) => l,
        Err(SyncError::Unsupported { .. }) => return Ok(CommitLockCheck::Clear),
        Err(e) => {
            return Ok(CommitLockCheck::Unchecked {
                remote: named.name.clone().unwrap_or(named.spec.url.clone()),
                why: e.to_string(),
            })
        }
    };
    for path in relevant {
        if let Some(l) = listed
            .locks
            .iter()
            .find(|l| l.path.as_bytes() == path.as_slice() && Some(&l.owner) != listed.you.as_ref())
        {
            return Err(RepoError::CommitOverLock {
                path: l.path.clone(),
                holder: l.holder(),
            }
            .into());
        }
    }
    Ok(CommitLockCheck::Clear)
}
