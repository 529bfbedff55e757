//! What a watcher commits: everything that changed in the working tree, as
//! one commit whose message says what changed and where.

use dmv_store::{ObjectId, Progress};

use crate::error::RepoResult;
use crate::history::tree::{Change, ChangeKind};
use crate::repository::repo::Repository;
use crate::stat::Stat;

/// A commit made of every change in the working tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoCommit {
    /// The commit made.
    pub id: ObjectId,
    /// Its message, as [`describe_changes`] wrote it.
    pub message: String,
}

/// What [`Repository::commit_everything`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AutoCommitted {
    /// The commit made; None when nothing (else) changed.
    pub commit: Option<AutoCommit>,
    /// Changed files left out because a process still had them open for
    /// writing, or wrote to them after they were read: committed once they
    /// are closed and settled. (The paths the caller left out are not
    /// among them.)
    pub held_back: Vec<Vec<u8>>,
    /// Those of `held_back` a process still had open for writing (their
    /// close is still to come).
    pub still_open: Vec<Vec<u8>>,
}

impl Repository {
    /// Stages every change of the working tree (new, changed and deleted
    /// files, not ignored ones; a partial replica's absent files stay
    /// absent) and commits it as one commit with a message counting the
    /// changes. Nothing while a merge or rebase is in progress (whoever started it
    /// settles it). One working-tree lock is held from the staging to the
    /// commit: a change staged by another command in between cannot slip
    /// into the commit under this message.
    ///
    /// A file some process still holds open for writing once the tree was
    /// read, or whose stat changed since it was read, is left out, as it
    /// was before, whatever the caller's watch said: a writer pausing
    /// between pieces of a file opened it after the watch settled, or
    /// before a watcher started, and its first piece was committed as a
    /// version that never was. Where the system cannot say which files are
    /// open (not Linux), the stat and the caller's watch are all there is.
    ///
    /// The changes of `left_out` stay out of the commit, in the working
    /// tree (a watcher's files someone else holds locked: a push of them
    /// would be refused).
    pub fn commit_everything(
        &self,
        left_out: &[Vec<u8>],
        progress: &dyn Progress,
    ) -> RepoResult<AutoCommitted> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        // A commit on a rebase's detached HEAD would be left behind when it ends.
        if self.merges().merge_state()?.is_some() || self.merges().rebase_state()?.is_some() {
            return Ok(AutoCommitted::default());
        }
        dmv_store::failpoint("autocommit-before-staging");
        self.worktree().add(&[Vec::new()], false, progress)?;
        if !left_out.is_empty() {
            self.worktree().restore(left_out, None, true)?;
        }
        let mut staged = self.status()?.staged;
        // Looked at once the files were read: a file opened for writing
        // before then is still open now, or was closed whole; and one
        // written to after it was read (then closed) has another stat now.
        let still_open = self.open_for_writing(staged.iter().map(|c| c.path.as_slice()));
        let mut held_back = still_open.clone();
        for path in self.changed_since_staged(&staged)? {
            if !held_back.contains(&path) {
                held_back.push(path);
            }
        }
        if !held_back.is_empty() {
            self.worktree().restore(&held_back, None, true)?;
            staged.retain(|c| !held_back.contains(&c.path));
        }
        if staged.is_empty() {
            return Ok(AutoCommitted {
                commit: None,
                held_back,
                still_open,
            });
        }
        let message = describe_changes(&staged);
        let commit = self
            .commit_staged(&message)?
            .map(|id| AutoCommit { id, message });
        Ok(AutoCommitted {
            commit,
            held_back,
            still_open,
        })
    }

    /// The added or changed files among `staged` whose stat is no longer
    /// the one the dirstate recorded when they were read.
    fn changed_since_staged(&self, staged: &[Change]) -> RepoResult<Vec<Vec<u8>>> {
        let ds = self.load_dirstate()?;
        let mut changed = Vec::new();
        for c in staged.iter().filter(|c| c.kind != ChangeKind::Deleted) {
            let Some(entry) = ds.entries.get(&c.path) else {
                continue;
            };
            let now = std::fs::symlink_metadata(self.abs_path(&c.path))
                .ok()
                .map(|m| Stat::of(&m));
            if !now.is_some_and(|st| entry.unchanged_since_read(&st)) {
                changed.push(c.path.clone());
            }
        }
        Ok(changed)
    }

    /// Those of `paths` some process holds open for writing.
    fn open_for_writing<'p>(&self, paths: impl Iterator<Item = &'p [u8]>) -> Vec<Vec<u8>> {
        let Some(root) = dmv_os::canonicalize(&self.root).ok() else {
            return Vec::new();
        };
        let Some(open) = dmv_os::files_open_for_writing(&root) else {
            return Vec::new();
        };
        if open.is_empty() {
            return Vec::new();
        }
        paths
            .filter(|p| open.contains(&root.join(dmv_os::rel_path(p))))
            .map(<[u8]>::to_vec)
            .collect()
    }
}

/// "12 added, 3 modified, 1 deleted in photos/2026/": the changes counted
/// by kind, and the deepest folder holding them all (none when that is the
/// top folder). A person reading `dmv log` of a watched folder sees at a
/// glance what each commit was.
pub fn describe_changes(changes: &[Change]) -> String {
    let count = |kind| changes.iter().filter(|c| c.kind == kind).count();
    let parts: Vec<String> = [
        (ChangeKind::Added, "added"),
        (ChangeKind::Modified, "modified"),
        (ChangeKind::Deleted, "deleted"),
    ]
    .into_iter()
    .map(|(kind, word)| (count(kind), word))
    .filter(|(n, _)| *n > 0)
    .map(|(n, word)| format!("{n} {word}"))
    .collect();
    let mut message = parts.join(", ");
    let folder = common_folder(changes.iter().map(|c| c.path.as_slice()));
    if !folder.is_empty() {
        message.push_str(&format!(" in {}/", String::from_utf8_lossy(folder)));
    }
    message
}

/// The deepest folder (no trailing '/') holding every path; empty for the top.
fn common_folder<'p>(mut paths: impl Iterator<Item = &'p [u8]>) -> &'p [u8] {
    let Some(first) = paths.next() else {
        return b"";
    };
    let mut folder = folder_of(first);
    for path in paths {
        let holds =
            |folder: &[u8]| path.starts_with(folder) && path.get(folder.len()) == Some(&b'/');
        while !folder.is_empty() && !holds(folder) {
            folder = folder_of(folder);
        }
    }
    folder
}

/// The folder part of a '/'-separated path (empty for a top-level name).
fn folder_of(path: &[u8]) -> &[u8] {
    path.iter()
        .rposition(|&b| b == b'/')
        .map_or(&[][..], |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, kind: ChangeKind) -> Change {
        Change {
            path: path.as_bytes().to_vec(),
            kind,
            old: None,
            new: None,
        }
    }

    #[test]
    fn a_message_counts_the_changes_and_names_the_folder_holding_them() {
        let photos = [
            change("photos/2026/a.jpg", ChangeKind::Added),
            change("photos/2026/b.jpg", ChangeKind::Added),
            change("photos/2026/day2/c.jpg", ChangeKind::Modified),
        ];
        assert_eq!(
            describe_changes(&photos),
            "2 added, 1 modified in photos/2026/"
        );
        assert_eq!(
            describe_changes(&[change("a.jpg", ChangeKind::Deleted)]),
            "1 deleted"
        );
        assert_eq!(
            describe_changes(&[
                change("x/a", ChangeKind::Added),
                change("y/b", ChangeKind::Added)
            ]),
            "2 added"
        );
        // A folder named like the start of another is not theirs.
        assert_eq!(
            describe_changes(&[
                change("ab/c", ChangeKind::Added),
                change("a/d", ChangeKind::Added)
            ]),
            "2 added"
        );
        assert_eq!(
            describe_changes(&[
                change("a/b/c", ChangeKind::Added),
                change("a/b", ChangeKind::Deleted)
            ]),
            "1 added, 1 deleted in a/"
        );
    }
}
