//! What was committed: trees as flat path maps and the changes between them,
//! the commit graph, revisions as users type them, branches and tags as a user names them, the rules every
//! stored object keeps, and a commit's files as an archive; then what git's
//! text commands read of it: lists of commits (`rev_list`, with shortlog's
//! grouping), a commit named after its nearest tag (`describe`), each line's
//! last change (`blame`), lines that match a pattern (`grep`), the
//! names people go by (`mailmap`), and whether a commit changed a text
//! (`pickaxe`, for `log -S` and `-G`). Nothing here reads or writes the
//! working tree.
//!
//! Read bottom up: `tree`, `graph`, `revisions`, `branches`, `object_rules`,
//! `tree_diff`, `archive`, `mailmap`, `rev_list`, `describe`, `blame`,
//! `grep`, `pickaxe`, `log_query`, and `union_log` (logs of entries kept
//! as history and merged by union: the review log).

pub(crate) mod archive;
pub(crate) mod blame;
pub(crate) mod branches;
pub(crate) mod describe;
pub(crate) mod graph;
pub(crate) mod grep;
pub(crate) mod last_changes;
pub(crate) mod log_query;
pub(crate) mod mailmap;
pub(crate) mod object_rules;
pub(crate) mod pickaxe;
pub(crate) mod rev_list;
pub(crate) mod revisions;
pub mod tree;
pub(crate) mod tree_diff;
pub(crate) mod union_log;
