//! The repository's errors. Each says what went wrong in one line and, where
//! the user can do something, what to do.
//!
//! One rule for wrapped errors: a variant whose message includes the error it
//! wraps (an OS error, a ref store error) does not also expose it as
//! `source()`, since front ends print the chain of sources after the message
//! and would show it twice. `Store` is transparent: its message and sources
//! are the store error's own.

use std::path::PathBuf;

use dmv_store::{ObjectId, StoreError};

use crate::paths::DMV_DIR;

pub type RepoResult<T> = Result<T, RepoError>;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{}: {cause}", path.display())]
    Io { path: PathBuf, cause: std::io::Error },

    // The repository itself.
    #[error("not a dmv repository (or any parent up to /): {}", .0.display())]
    NotARepository(PathBuf),
    #[error("{} already holds a dmv repository", .0.display())]
    AlreadyExists(PathBuf),
    #[error("{} is a bare repository: it has no working tree", root.display())]
    Bare { root: PathBuf },
    #[error("{detail}")]
    BadChunking { detail: String },
    #[error("repository format {found} is not supported by this dmv (supports {supported})")]
    UnsupportedFormat { found: u32, supported: u32 },
    #[error("{} needs a newer dmv: it requires {}", path.display(), missing.join(", "))]
    UnknownRequirements { path: PathBuf, missing: Vec<String> },
    #[error("{} is corrupt: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("cannot encode {what}: {detail}")]
    Encode { what: &'static str, detail: String },
    #[error("{what} is in use by {holder}; try again when it has finished")]
    Locked { what: String, holder: String },
    #[error("internal error: {what} changed without the working-tree lock")]
    NotLocked { what: &'static str },

    // Revisions and refs.
    #[error("unknown revision or path: {0}")]
    UnknownRevision(String),
    #[error("{what} is not a commit")]
    NotACommit { what: String },
    #[error("ref {name} moved concurrently (expected {expected}, found {found}); try again")]
    RefChanged { name: String, expected: String, found: String },
    #[error("{name} already exists")]
    RefExists { name: String },
    #[error("'{path}' is a folder")]
    IsAFolder { path: String },
    #[error("path '{path}' is not in the staging area")]
    PathNotStaged { path: String },
    #[error("path '{path}' does not exist in {rev}")]
    PathNotInRevision { path: String, rev: String },
    #[error("no branch named '{name}'")]
    NoSuchBranch { name: String },
    /// `remotes`: each remote's branch of that name, as `REMOTE/NAME`.
    #[error("'{name}' is a branch of several remotes ({}): name the one to start from", remotes.join(", "))]
    BranchOfSeveralRemotes { name: String, remotes: Vec<String> },
    #[error("{kind} '{name}' not found")]
    NoSuchRef { kind: &'static str, name: String },
    #[error("cannot delete branch '{name}': it is checked out")]
    BranchCheckedOut { name: String },
    #[error("branch {name} is not merged into HEAD or its remote-tracking branch: deleting it would leave its commits to gc; merge or push it first, or delete it anyway")]
    BranchNotMerged { name: String },
    /// Anything else the ref store reports (locked, corrupt, invalid name, I/O).
    #[error("{0}")]
    Refs(dmv_refs::RefError),

    // Trees.
    #[error("tree {tree} is malformed: {detail}")]
    MalformedTree { tree: ObjectId, detail: String },
    /// An object that breaks the rules every object must keep (see `object_rules`).
    #[error("{kind} {id} is malformed: {detail}")]
    MalformedObject { kind: &'static str, id: ObjectId, detail: String },
    #[error("cannot record {path}: {reason}")]
    BadPath { path: String, reason: &'static str },
    #[error("path {path}... nests more than {max} directories")]
    PathTooDeep { path: String, max: usize },
    #[error("tree node {id} is unknown")]
    UnknownTreeNode { id: ObjectId },

    // Paths and the working tree.
    #[error("{} is outside the working tree {}", path.display(), root.display())]
    OutsideWorktree { path: PathBuf, root: PathBuf },
    #[error("{} is inside the repository's {DMV_DIR} directory", path.display())]
    InsideDmvDir { path: PathBuf },
    #[error("pathspec '{0}' did not match any files")]
    NoMatch(String),
    #[error("cannot scan the working tree: {detail}")]
    Scan { detail: String },
    #[error("destination {path} exists")]
    DestinationExists { path: String },
    /// `merge`: the refusal came from a merge (the message says so).
    #[error("{}you have uncommitted changes (e.g. {path}); commit them or restore the files first", if *merge { "cannot merge: " } else { "" })]
    UncommittedChanges { path: String, merge: bool },
    #[error("untracked file {path} would be overwritten{}; move or remove it first", if *merge { " by the merge" } else { "" })]
    UntrackedInTheWay { path: String, merge: bool },
    #[error("cannot check out {path}: {reason}; the working tree was not changed")]
    CheckoutRefused { path: String, reason: StoreError },

    // Merges.
    #[error("a merge of {label} is in progress; commit it or abort it first")]
    MergeInProgress { label: String },
    #[error("a merge of {label} is already in progress; commit it or abort it")]
    MergeAlreadyInProgress { label: String },
    #[error("the merge of {label} was interrupted before the working tree was written; abort it and merge again")]
    MergeInterrupted { label: String },
    #[error("HEAD moved since the merge of {label} started; abort the merge")]
    HeadMoved { label: String },
    #[error("unresolved conflicts: {}", first_ten(paths))]
    UnresolvedConflicts { paths: Vec<String> },
    #[error("there is no merge in progress")]
    NoMergeInProgress,
    #[error("no stash@{{{index}}}")]
    NoStash { index: usize },
    #[error("cannot apply the stash: {path} was changed differently since; nothing was changed and the stash is kept")]
    StashConflict { path: String },
    #[error("the data of {path} is not in this replica; fetch it first")]
    ArchiveDataAbsent { path: String },
    #[error("the archive stopped: {detail}")]
    Output { detail: String },
    #[error("{path} is locked by {holder}")]
    PathLocked { path: String, holder: String },
    #[error("push refused: {path} is locked by {holder}, and commit {commit} changes it; nothing was updated (ask them to unlock it, or take that change out)")]
    LockedPathChanged { path: String, holder: String, commit: String },
    #[error("cannot commit: {path} is locked by {holder}; ask them to unlock it, or restore the file (nothing was committed)")]
    CommitOverLock { path: String, holder: String },
    #[error("{path} is not locked")]
    PathNotLocked { path: String },
    #[error("{path} is locked by {holder}; only they can unlock it (or an admin, with --force)")]
    LockHeldByOther { path: String, holder: String },
    #[error("unknown setting {key} (known: {known})")]
    UnknownSetting { key: String, known: String },
    /// A hub keeps every file's data unless its admin allows drops.
    #[error("{path} keeps every file's data (a bare repository is a full replica others clone from); its admin can allow drops there (setting drop.allowed true)")]
    DropsNotAllowed { path: PathBuf },
    #[error("bad value for {key}: {detail}")]
    BadSetting { key: String, detail: String },
    /// `revert`: what the reverted commit changed was changed again since, at `path`.
    #[error("cannot revert {commit}: {path} was changed since; nothing was changed (revert it by hand from the commit's parent)")]
    RevertConflict { commit: String, path: String },
    #[error("nothing to revert: the changes of {commit} are already undone on HEAD")]
    NothingToRevert { commit: String },
    #[error("cannot revert {commit}: it is a merge, and which side to keep is not known")]
    RevertMerge { commit: String },
    #[error("a commit message is required")]
    MessageRequired,
    #[error("there is no merge to abort")]
    NoMergeToAbort,
    #[error("{path} is not in conflict")]
    NotInConflict { path: String },
    /// `how`: the resolution asked for, to ask again for both paths.
    #[error("{path} and {other} cannot both exist (one is a file, the other a directory); resolve them together")]
    FileDirectoryClash { path: String, other: String, how: crate::merge::resolution::Resolution },
    #[error("cannot keep both versions: {path} already exists; move it away first")]
    SideNameTaken { path: String },
}

/// At most ten paths, then how many more.
fn first_ten(paths: &[String]) -> String {
    let mut names: Vec<&str> = paths.iter().take(10).map(String::as_str).collect();
    let more = format!("and {} more", paths.len().saturating_sub(10));
    if paths.len() > 10 {
        names.push(&more);
    }
    names.join(", ")
}

impl RepoError {
    pub fn io(path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        RepoError::Io { path: path.into(), cause }
    }

    /// The file whose I/O failed, and how, if that is what went wrong.
    pub fn failed_file(&self) -> Option<(&std::path::Path, &std::io::Error)> {
        match self {
            RepoError::Io { path, cause } => Some((path, cause)),
            RepoError::Store(s) => s.failed_file(),
            _ => None,
        }
    }
}

pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> RepoResult<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> RepoResult<T> {
        self.map_err(|e| RepoError::io(path, e))
    }
}
