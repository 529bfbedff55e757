//! Views of a [`Repository`] by concern. The repository itself keeps what
//! every command needs (opening it, its configuration, HEAD and refs,
//! revisions, status and commit, switching branches); the rest is reached
//! through a view named for its concern: `repo.history()`,
//! `repo.merges()`, `repo.worktree()`, `repo.copies()`, `repo.locks()`,
//! `repo.maintenance()`. Each view borrows the repository and reads
//! through to it (`Deref`), so an operation written on a view uses the
//! store, refs and configuration as the repository's own methods do.
//!
//! The views are declared here, below every folder that adds operations
//! to one; each folder adds its operations to its view in `impl` blocks of
//! its own, as it did to the repository.

use std::ops::Deref;

use crate::repository::repo::Repository;

macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'r> {
            repo: &'r Repository,
        }

        impl<'r> $name<'r> {
            /// The repository this is a view of.
            pub fn repository(&self) -> &'r Repository {
                self.repo
            }
        }

        impl Deref for $name<'_> {
            type Target = Repository;

            fn deref(&self) -> &Repository {
                self.repo
            }
        }
    };
}

view!(
    /// The history: walking commits, branches and tags, the changes of a
    /// commit, the log, blame-like last changes, archives and diff sides.
    History
);
view!(
    /// Merges and what replays commits: merge, cherry-pick, rebase,
    /// revert, stash, conflicts and the files kept both ways.
    Merges
);
view!(
    /// The working tree: adding, removing, moving and cleaning files,
    /// scanning it, restoring files and filling in absent ones.
    Worktree
);
view!(
    /// Where file data is: the location log, which replicas hold what,
    /// availability, retention, and dropping data here.
    Copies
);
view!(
    /// Path locks: who holds which lockable path, and the changes a lock
    /// refuses.
    Locks
);
view!(
    /// Upkeep: fsck and its repairs, gc, statistics and the watcher's
    /// health file.
    Maintenance
);

impl Repository {
    /// The history: walks, branches and tags, log, last changes, archives.
    pub fn history(&self) -> History<'_> {
        History { repo: self }
    }

    /// Merges, cherry-picks, rebases, reverts, stashes and conflicts.
    pub fn merges(&self) -> Merges<'_> {
        Merges { repo: self }
    }

    /// The working tree's files: add, rm, mv, clean, scan, restore.
    pub fn worktree(&self) -> Worktree<'_> {
        Worktree { repo: self }
    }

    /// Where file data is, and dropping it here.
    pub fn copies(&self) -> Copies<'_> {
        Copies { repo: self }
    }

    /// Path locks.
    pub fn locks(&self) -> Locks<'_> {
        Locks { repo: self }
    }

    /// fsck and its repairs, gc, the watcher's health.
    pub fn maintenance(&self) -> Maintenance<'_> {
        Maintenance { repo: self }
    }
}
