//! The repository itself: `.dmv/`'s layout and its small files (the
//! configuration, the settings a person sets, the format requirements, the
//! working-tree lock, HEAD and the refs), and [`Repository`](repo::Repository),
//! the facade every other folder adds its operations to; and the rules
//! the repository's own files set for every folder above: its slice (which
//! file data this replica keeps, read by the configuration) and
//! `.dmvattributes` (which paths are lockable).
//!
//! Read bottom up: `slice`, `attributes`, `config`, `requires`, `wlock`, `refs`, `repo`, `settings`.

pub(crate) mod attributes;
pub(crate) mod config;
pub(crate) mod handles;
pub(crate) mod refs;
pub(crate) mod repo;
pub(crate) mod requires;
pub(crate) mod settings;
pub(crate) mod slice;
pub(crate) mod wlock;
