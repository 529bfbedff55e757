//! A DMV repository: configuration, refs, commits and trees, the working tree
//! and its dirstate. Built on `dmv-store`; knows nothing of the command line.

mod atomic;
mod config;
mod dirstate;
mod early;
mod error;
mod graph;
mod merge;
mod refs;
mod repo;
mod requires;
pub mod tree;
mod wlock;
mod worktree;

pub use config::{Config, RemoteConfig};
pub use dirstate::{DirEntry, Dirstate};
pub use dmv_refs;
pub use early::{EarlyCheckout, Lookup};
pub use error::{RepoError, RepoResult};
pub use graph::{CommitInfo, CommitWalk};
pub use merge::{Conflict, ConflictStatus, MergeOutcome, MergePhase, MergeState, MergeStatus, Resolution, Resolved};
pub use refs::{validate_ref_name, Head, RefBackend, RefUpdate, Reftable};
pub use repo::{GcPolicy, Repository};
pub use requires::REQUIREMENTS;
pub use tree::{diff_flat, Change, ChangeKind, FlatEntry, FlatTree};
pub use wlock::{WorktreeGuard, WorktreeLock};
pub use worktree::{Status, StatusEntry};

pub use dmv_store as store;
