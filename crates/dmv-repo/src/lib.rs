//! A DMV repository: configuration, refs, commits and trees, the working tree
//! and its dirstate. Built on `dmv-store`; knows nothing of the command line.
//!
//! Files, bottom up (a file only uses files listed before it): the leaves
//! `paths`, `pathmap`, `stat`, `seal` (checksums of text files), `time`,
//! `sizes` and `attributes` (`.dmvattributes`); `error`, `atomic`, `slice`,
//! `config`, `requires`, `wlock`, `refs`, `tree`, `dirstate`; `repo` (the
//! `Repository` itself); `settings`; `branches`, `graph`, `early`; the
//! replica: `locations`, `location_journal`, `location_file` (the location
//! log), `availability`, `retention` (what a slice lets go), `locks` (path
//! locks), `object_rules` (what every stored object keeps); `tree_diff`; the
//! working tree: `parallel`, `files`, `walk`, `sieve`, `status`, `staging`,
//! `checkout`; the merge: `three_way`, `merge_state`, `mergetool`,
//! `resolve`, `merge`; `reset`, `revert`, `stash`, `archive`; on top, `gc`,
//! `dropping` (freeing file data), `checks` (what fsck checks beside the
//! store) and `ops` (status, commit and checkouts, which consult the merge
//! in progress).

mod archive;
mod atomic;
mod attributes;
mod availability;
mod branches;
mod checkout;
mod checks;
mod config;
mod dirstate;
mod dropping;
mod early;
mod error;
mod files;
mod gc;
mod graph;
mod location_file;
mod location_journal;
mod locations;
mod locks;
mod merge;
mod merge_state;
mod mergetool;
mod object_rules;
mod ops;
mod parallel;
mod pathmap;
mod paths;
mod refs;
mod repo;
mod requires;
mod reset;
mod resolve;
mod retention;
mod revert;
mod seal;
mod settings;
mod sieve;
mod sizes;
mod slice;
mod staging;
mod stash;
mod stat;
mod status;
mod three_way;
mod time;
pub mod tree;
mod tree_diff;
mod walk;
mod wlock;

pub use archive::ArchiveFormat;
pub use atomic::write_atomic;
pub use attributes::{Lockable, ATTRIBUTES_FILE};
pub use availability::{FileAvailability, UnderCopied};
pub use config::{global_path, Config, GlobalSettings, RemoteConfig, Upstream};
pub use dirstate::{DirEntry, Dirstate, Stat};
pub use dmv_refs;
pub use dropping::DataDropped;
pub use early::{EarlyCheckout, Lookup};
pub use error::{RepoError, RepoResult};
pub use gc::GcPolicy;
pub use graph::{CommitInfo, CommitWalk};
pub use location_file::{LocationPages, LocationSpool};
pub use locations::{now_ns, BadLocationLog, LocationLog, LocationRecord, ReplicaId, ReplicaNames, Stamp};
pub use locks::{check_lock_path, HeldLocks, KnownLocks, LockTable, PathLock};
pub use merge::MergeOutcome;
pub use merge_state::{ConflictStatus, MergePhase, MergeState, MergeStatus};
pub use object_rules::{check_object, stored_facts, ObjectFacts};
pub use ops::{Status, StatusListing};
pub use pathmap::PathMap;
pub use refs::{validate_ref_name, Head, RefBackend, RefUpdate, Reftable};
pub use repo::Repository;
pub use requires::REQUIREMENTS;
pub use reset::ResetMode;
pub use resolve::{Resolution, Resolved};
pub use settings::KEYS as SETTING_KEYS;
pub use sizes::human_bytes;
pub use slice::{BadSlice, PathFilter, Slice};
pub use stash::Stash;
pub use status::StatusEntry;
pub use three_way::Conflict;
pub use time::{civil, utc_time};
pub use tree::{diff_flat, Change, ChangeKind, FlatEntry, FlatTree};
pub use tree_diff::{diff_trees, find_renames, Listed};
pub use wlock::{WorktreeGuard, WorktreeLock};

pub use dmv_store as store;
