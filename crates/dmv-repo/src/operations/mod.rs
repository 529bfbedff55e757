//! The operations on top of the working tree and the merge: those that
//! consult a merge in progress (status, commit, switch), reset and amend,
//! revert, rebase, stash, a watcher's commit of everything and its health record, gc, a diff's view of a file, `REV:PATH`, what fsck checks beside the store, and fsck and stats
//! as one call each.
//!
//! Read bottom up: `merge_aware`, `partial_commit` (`commit PATH…`), `bisect`, `autocommit`, `reset`, `revert`, `rebase`, `stash`, `gc`, `checks`, `fsck`, `diff_sides`,
//! `revision_paths`, `watch_health`, `dropping` (freeing file data safely
//! against other replicas), `worktree_grep` (grep over the working tree's
//! tracked files).

pub(crate) mod autocommit;
pub(crate) mod bisect;
pub(crate) mod checks;
pub(crate) mod diff_sides;
pub(crate) mod dropping;
pub(crate) mod fsck;
pub(crate) mod gc;
pub(crate) mod merge_aware;
pub(crate) mod partial_commit;
pub(crate) mod rebase;
pub(crate) mod received;
pub(crate) mod reset;
pub(crate) mod revert;
pub(crate) mod revision_paths;
pub(crate) mod stash;
pub(crate) mod watch_health;
pub(crate) mod worktree_grep;
