#![warn(missing_docs)]
//! A DMV repository: configuration, refs, commits and trees, the working tree
//! and its dirstate. Built on `dmv-store`; knows nothing of the command line.
//!
//! Folders by concern, read bottom up (a file only uses files listed before
//! it; each folder's `mod.rs` gives its own order; the layering test in
//! dmv-testkit checks the folders' order): the leaves here (`stat`, `paths`,
//! `pathmap`, `seal` for checksums of text files, `time`, `sizes`, `ref_names`,
//! `resolution`, `error`, `atomic`, `parallel`, `line_merge`); `repository`
//! (`.dmv/`, HEAD and refs, the slice and `.dmvattributes`, the
//! [`Repository`] facade); `history` (trees, the commit graph, branches, the
//! rules of stored objects); `replica` (the location log, availability,
//! retention, path locks); `worktree` (the dirstate,
//! walking, status, staging, checkout), which knows nothing of merges;
//! `merge`; and on top `operations` (what consults a merge in progress,
//! reset, revert, stash, gc, fsck's checks, drops).

mod atomic;
mod error;
mod history;
/// The line-level three-way merge of text files.
pub mod line_merge;
mod merge;
mod operations;
mod parallel;
mod pathmap;
mod paths;
pub use paths::matches as path_matches;
pub mod ref_names;
mod replica;
mod repository;
mod resolution;
mod seal;
mod sizes;
mod stat;
mod time;
mod worktree;

pub use atomic::{write_atomic, write_atomic_private, write_atomic_with, write_cache};
pub use dmv_refs;
pub use error::{RepoError, RepoResult};
pub use history::archive::ArchiveFormat;
pub use history::blame::{
    line_ranges, Blame, BlamedCommit, LineOrigin, MAX_BLAME_BYTES, NOT_COMMITTED,
};
pub use history::branches::Tracking;
pub use history::describe::Description;
pub use history::graph::{in_topo_order, CommitInfo, CommitWalk};
pub use history::grep::{
    GrepEvent, GrepOptions, GrepPattern, GrepRequest, GrepSink, GrepSummary, PatternSyntax,
    Searched, MAX_GREP_LINE,
};
pub use history::log_query::{Decoration, LogCommits, LogQuery};
pub use history::mailmap::{Mailmap, MAX_MAILMAP_BYTES, MAX_MAILMAP_LINES};
pub use history::object_rules::{check_object, facts_of_content, stored_facts, ObjectFacts};
pub use history::pickaxe::MAX_PICKAXE_BYTES;
pub use history::rev_list::{subject_of, AuthorCommits};
pub use history::revisions::RevisionRange;
pub use history::tree;
pub use history::tree::{diff_flat, Change, ChangeKind, FlatEntry, FlatTree};
pub use history::tree_diff::{
    diff_trees, find_renames, refuse_unholdable_paths_between, visit_changes_between, Listed,
};
pub use history::union_log::{log_commits, log_entries_read_by, LogEntry, MAX_LOG_ENTRY_BYTES};
pub use merge::kept_both::KeptBoth;
pub use merge::merge_state::{ConflictStatus, MergeKind, MergePhase, MergeState, MergeStatus};
pub use merge::merging::{ConflictedPath, FastForward, Mended, MergeOutcome, Squashed};
pub use merge::resolve::Resolved;
pub use merge::three_way::Conflict;
pub use operations::autocommit::{describe_changes, AutoCommit, AutoCommitted};
pub use operations::bisect::{
    waiting_status, Bisect, BisectState, BisectStep, Verdict, MAX_BISECT_CANDIDATES,
};
pub use operations::diff_sides::DiffSide;
pub use operations::dropping::DataDropped;
pub use operations::fsck::{FsckReport, RepoStats};
pub use operations::gc::GcPolicy;
pub use operations::merge_aware::{
    CommitRequest, Committed, NothingToCommit, Offer, Status, StatusListing,
};
pub use operations::rebase::{
    Action as RebaseAction, KeepMessages, RebaseEditor, RebaseOutcome, RebaseState,
    Step as RebaseStep,
};
pub use operations::reset::ResetMode;
pub use operations::stash::Stash;
pub use operations::watch_health::{Moment, RemoteHealth, WatchHealth};
pub use pathmap::PathMap;
pub use ref_names::RefName;
pub use replica::audit::{
    append_audit, audit_dir, read_audit, AuditEvent, AuditRead, AuditRef, MAX_AUDIT_READ,
    MAX_EVENT_LINE,
};
pub use replica::availability::{FileAvailability, UnderCopied};
pub use replica::grants::{
    first_change_of_its_own, refuse_moves_outside_grant, Breach, GrantObjects, RefMove, WriteGrant,
    MAX_WRITE_PATTERNS, MAX_WRITE_PATTERN_BYTES,
};
pub use replica::location_claims::{
    check_claims, TreeClaim, WithClaims, MAX_CLAIMED_TREES, MAX_CLAIMS,
};
pub use replica::location_file::{LocationNews, LocationPages, LocationSpool, MERGED_FROM_RECORDS};
pub use replica::locations::{
    now_ns, BadLocationLog, LocationLog, LocationRecord, ReplicaCard, ReplicaCards, ReplicaId,
    Stamp, MAX_PUBLISHED_URLS, MAX_PUBLISHED_URL_LEN,
};
pub use replica::locks::{
    check_lock_path, refuse_moves_over_locks, release_locks, take_locks, HeldLocks, KnownLocks,
    LockStore, LockTable, PathLock, RepoObjects,
};
pub use repository::attributes::{Lockable, ATTRIBUTES_FILE};
pub use repository::config::{global_path, Config, GlobalSettings, RemoteConfig, Upstream};
pub use repository::handles::{Copies, History, Locks, Maintenance, Merges, Worktree};
pub use repository::refs::{validate_ref_name, Head, RefBackend, RefUpdate, Reftable};
pub use repository::repo::Repository;
pub use repository::requires::REQUIREMENTS;
pub use repository::settings::{canonical_key, protected_branches, KEYS as SETTING_KEYS};
pub use repository::slice::{is_rule_file, BadSlice, PathFilter, Slice, RULE_FILES};
pub use repository::wlock::{WorktreeGuard, WorktreeLock};
pub use resolution::Resolution;
pub use sizes::human_bytes;
pub use time::{civil, parse_date, utc_time};
pub use worktree::dirstate::{DirEntry, Dirstate, Stat};
pub use worktree::early::{EarlyCheckout, Lookup};
pub use worktree::folded_names::Folding;
pub use worktree::status::StatusEntry;

pub use dmv_store as store;
pub use dmv_store::{Phase, Progress, Silent, Tally};
