//! What was committed: trees as flat path maps and the changes between them,
//! the commit graph, revisions as users type them, branches and tags as a user names them, the rules every
//! stored object keeps, and a commit's files as an archive. Nothing here reads
//! or writes the working tree.
//!
//! Read bottom up: `tree`, `graph`, `revisions`, `log_query`, `branches`, `object_rules`,
//! `tree_diff`, `archive`.

pub(crate) mod archive;
pub(crate) mod branches;
pub(crate) mod graph;
pub(crate) mod last_changes;
pub(crate) mod log_query;
pub(crate) mod object_rules;
pub(crate) mod revisions;
pub mod tree;
pub(crate) mod tree_diff;
