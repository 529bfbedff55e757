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

/// What every fallible call of this crate returns.
pub type RepoResult<T> = Result<T, RepoError>;

/// Everything that can go wrong in a repository. Front ends print the
/// message; the variants let them add a hint or react to particular cases.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The object store failed (missing or damaged object, store I/O).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading or writing a file of the repository or working tree failed.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file or folder the operation was on.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },

    // The repository itself.
    /// No `.dmv` folder at the path (or, when discovering, in any folder above it).
    #[error("not a dmv repository (or any parent up to /): {}", .0.display())]
    NotARepository(PathBuf),
    /// `init` on a folder that already has a `.dmv`.
    #[error("{} already holds a dmv repository", .0.display())]
    AlreadyExists(PathBuf),
    /// An operation on the working tree in a bare repository.
    #[error("{} is a bare repository: it has no working tree", root.display())]
    Bare {
        /// The repository's root.
        root: PathBuf,
    },
    /// `init` with chunking parameters that do not validate.
    #[error("{detail}")]
    BadChunking {
        /// What is wrong with them.
        detail: String,
    },
    /// The config's format version is newer than this build knows.
    #[error("repository format {found} is not supported by this dmv (supports {supported})")]
    UnsupportedFormat {
        /// The version in the config.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The repository's `requires` file names features this build lacks.
    #[error("{} needs a newer dmv: it requires {}", path.display(), missing.join(", "))]
    UnknownRequirements {
        /// The repository's root.
        path: PathBuf,
        /// The requirements this build does not know.
        missing: Vec<String>,
    },
    /// A file of the repository's own (config, HEAD, dirstate, merge state,
    /// location log, locks, ...) cannot be parsed.
    #[error("{} is corrupt: {detail}", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong in it.
        detail: String,
    },
    /// Serializing a file of the repository's own failed before it was written.
    #[error("cannot encode {what}: {detail}")]
    Encode {
        /// What was being encoded, e.g. "the configuration".
        what: &'static str,
        /// The serializer's error.
        detail: String,
    },
    /// The working-tree lock is held by another command and was not
    /// released within the wait (`DMV_LOCK_WAIT_MS`).
    #[error("{what} is in use by {holder}; try again when it has finished")]
    Locked {
        /// What is locked.
        what: String,
        /// Who holds it, as the lock file says.
        holder: String,
    },
    /// A bug: the working-tree state was about to change without the lock held.
    #[error("internal error: {what} changed without the working-tree lock")]
    NotLocked {
        /// What was about to change.
        what: &'static str,
    },

    // Revisions and refs.
    /// A revision (or branch) that resolves to no commit.
    #[error("unknown revision or path: {0}")]
    UnknownRevision(String),
    /// A revision that names an object other than a commit.
    #[error("{what} is not a commit")]
    NotACommit {
        /// The revision as given.
        what: String,
    },
    /// A rebase started while another is unfinished.
    #[error("a rebase is in progress; continue it or abort it first")]
    RebaseInProgress,
    /// `rebase --continue`, `--skip` or `--abort` with no rebase to act on.
    #[error("no rebase in progress")]
    NoRebaseInProgress,
    /// A rebase todo list that cannot be followed.
    #[error("the rebase plan cannot be followed: {detail}")]
    BadTodo {
        /// Which line, and why.
        detail: String,
    },
    /// A cherry-pick of a merge commit: which parent's change is meant is not said.
    #[error("{what} is a merge; only a commit with one parent can be picked")]
    PickOfAMerge {
        /// The revision as given.
        what: String,
    },
    /// A ref update whose expected old value no longer holds: another
    /// process moved the ref. Nothing was updated.
    #[error("ref {name} moved concurrently (expected {expected}, found {found}); try again")]
    RefChanged {
        /// The full ref name.
        name: String,
        /// The short id expected, or "nothing".
        expected: String,
        /// The short id found, or "nothing".
        found: String,
    },
    /// Creating a ref (branch, tag) that already exists.
    #[error("{name} already exists")]
    RefExists {
        /// The ref's name.
        name: String,
    },
    /// A path that names a folder where a file is needed.
    #[error("{}", folder_not_file(path))]
    IsAFolder {
        /// The path in the repository.
        path: String,
    },
    /// Reading a staged file (empty revision) that is not in the dirstate.
    #[error("path '{path}' is not in the staging area")]
    PathNotStaged {
        /// The path in the repository.
        path: String,
    },
    /// Reading a file at a revision whose tree does not hold it.
    #[error("path '{path}' does not exist in {rev}")]
    PathNotInRevision {
        /// The path in the repository.
        path: String,
        /// The revision as given.
        rev: String,
    },
    /// Switching to a branch that exists neither here nor on any remote.
    #[error("no branch named '{name}'")]
    NoSuchBranch {
        /// The branch name as given.
        name: String,
    },
    /// Switching to a branch that is not local and that several remotes have.
    /// `remotes`: each remote's branch of that name, as `REMOTE/NAME`.
    #[error("'{name}' is a branch of several remotes ({}): name the one to start from", remotes.join(", "))]
    BranchOfSeveralRemotes {
        /// The branch name as given.
        name: String,
        /// `REMOTE/NAME` for each remote that has it.
        remotes: Vec<String>,
    },
    /// Deleting or renaming a branch or tag that does not exist.
    #[error("{kind} '{name}' not found")]
    NoSuchRef {
        /// "branch" or "tag".
        kind: &'static str,
        /// The short name as given.
        name: String,
    },
    /// Deleting the branch HEAD is on.
    #[error("cannot delete branch '{name}': it is checked out")]
    BranchCheckedOut {
        /// The branch's short name.
        name: String,
    },
    /// Deleting, without force, a branch whose commits nothing else keeps.
    #[error("branch {name} is not merged into HEAD or its remote-tracking branch: deleting it would leave its commits to gc; merge or push it first, or delete it anyway")]
    BranchNotMerged {
        /// The branch's short name.
        name: String,
    },
    /// Anything else the ref store reports (locked, corrupt, invalid name, I/O).
    #[error("{0}")]
    Refs(dmv_refs::RefError),

    // Trees.
    /// A stored tree that cannot be read: bad names, order or nesting.
    #[error("tree {tree} is malformed: {detail}")]
    MalformedTree {
        /// The tree node's id.
        tree: ObjectId,
        /// What is wrong with it.
        detail: String,
    },
    /// An object that breaks the rules every object must keep (see `object_rules`).
    #[error("{kind} {id} is malformed: {detail}")]
    MalformedObject {
        /// The object's kind, e.g. "commit".
        kind: &'static str,
        /// The object's id.
        id: ObjectId,
        /// Which rule it breaks.
        detail: String,
    },
    /// A path that cannot be written into a tree or locked (bad name, a
    /// name that is both a file and a folder). Nothing was recorded.
    #[error("cannot record {path}: {reason}")]
    BadPath {
        /// The path or name.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A path with more folders than a tree may nest (`tree::MAX_PATH_DEPTH`).
    #[error("path {path}... nests more than {max} directories")]
    PathTooDeep {
        /// The path's first 80 bytes.
        path: String,
        /// The most folders allowed.
        max: usize,
    },
    /// A tree node that is not in the objects at hand (early checkout
    /// during a transfer).
    #[error("tree node {id} is unknown")]
    UnknownTreeNode {
        /// The node's id.
        id: ObjectId,
    },

    // Paths and the working tree.
    /// A path given on the command line that is not under the working tree.
    #[error("{} is outside the working tree {}", path.display(), root.display())]
    OutsideWorktree {
        /// The path as given.
        path: PathBuf,
        /// The working tree's root.
        root: PathBuf,
    },
    /// A path given on the command line that is inside `.dmv`.
    #[error("{} is inside the repository's {DMV_DIR} directory", path.display())]
    InsideDmvDir {
        /// The path as given.
        path: PathBuf,
    },
    /// A pathspec (add, rm, mv, restore, archive, drop) that matches nothing.
    #[error("pathspec '{0}' did not match any files")]
    NoMatch(String),
    /// Walking the working tree or reading the dirstate failed, or a
    /// setting's file has no place (no home folder).
    #[error("cannot scan the working tree: {detail}")]
    Scan {
        /// What failed.
        detail: String,
    },
    /// `mv` onto a path that is already there.
    #[error("destination {path} exists")]
    DestinationExists {
        /// The destination, in the repository.
        path: String,
    },
    /// A commit with no name and email set anywhere (a person's command line refuses to sign as nobody).
    #[error("author identity unknown: no user name and email are set (nor DMV_AUTHOR_NAME and DMV_AUTHOR_EMAIL)")]
    UnknownIdentity,
    /// An operation that would lose changes not committed (checkout, merge,
    /// revert, stash apply).
    /// `merge`: the refusal came from a merge (the message says so).
    #[error("{}you have uncommitted changes to {path}; commit them, stash them or restore the file first", if *merge { "cannot merge: " } else { "" })]
    UncommittedChanges {
        /// The first changed path.
        path: String,
        /// Whether a merge refused.
        merge: bool,
    },
    /// A checkout or merge would write over an untracked file (or a folder
    /// of them). Nothing was changed.
    #[error("untracked file {path} would be overwritten{}; move or remove it first", if *merge { " by the merge" } else { "" })]
    UntrackedInTheWay {
        /// The untracked path in the way.
        path: String,
        /// Whether a merge refused.
        merge: bool,
    },
    /// A checkout or archive whose file data is missing or damaged in the
    /// store, found before anything was written.
    #[error("cannot check out {path}: {reason}; the working tree was not changed")]
    CheckoutRefused {
        /// The file in the repository.
        path: String,
        /// What the store found.
        reason: StoreError,
    },

    // Merges.
    /// An operation refused while a merge is in progress (commit --amend,
    /// reset, revert, stash, switch).
    #[error("a merge of {label} is in progress; commit it or abort it first")]
    MergeInProgress {
        /// What is being merged, as the user named it.
        label: String,
    },
    /// Starting a merge while another is in progress.
    #[error("a merge of {label} is already in progress; commit it or abort it")]
    MergeAlreadyInProgress {
        /// What is being merged.
        label: String,
    },
    /// A merge stopped while writing the working tree: only abort may follow.
    #[error("the merge of {label} was interrupted before the working tree was written; abort it and merge again")]
    MergeInterrupted {
        /// What was being merged.
        label: String,
    },
    /// Committing a merge after HEAD moved away from where it started.
    #[error("HEAD moved since the merge of {label} started; abort the merge")]
    HeadMoved {
        /// What is being merged.
        label: String,
    },
    /// Committing a merge that still has conflicts.
    #[error("unresolved conflicts: {}", first_ten(paths))]
    UnresolvedConflicts {
        /// Every conflicted path (the message shows ten).
        paths: Vec<String>,
    },
    /// Resolving conflicts when no merge is in progress.
    #[error("there is no merge in progress")]
    NoMergeInProgress,
    /// Applying or dropping a stash entry that does not exist.
    #[error("no stash@{{{index}}}")]
    NoStash {
        /// The entry asked for, 0 the newest.
        index: usize,
    },
    /// `merge --ff-only` where both sides have commits the other lacks.
    #[error("not possible to fast-forward to {label}: each side has commits the other lacks; nothing was changed (a merge that is not only a fast-forward joins them)")]
    NotFastForward {
        /// What was to be merged.
        label: String,
    },
    /// Applying a stash over a file changed since it was stashed.
    #[error("cannot apply the stash: {path} was changed differently since; nothing was changed and the stash is kept")]
    StashConflict {
        /// The file changed both ways.
        path: String,
    },
    /// A file whose data this replica does not hold was to be written or
    /// read (an archive, a resolution): nothing was changed.
    #[error("the data of {path} is not in this replica; nothing was changed")]
    DataAbsent {
        /// The file in the repository.
        path: String,
    },
    /// Writing the archive to its output failed part way.
    #[error("the archive stopped: {detail}")]
    Output {
        /// The writer's or zip's error.
        detail: String,
    },
    /// Locking a path that someone else has locked. No lock was taken.
    #[error("{path} is locked by {holder}")]
    PathLocked {
        /// The locked path.
        path: String,
        /// Who holds the lock.
        holder: String,
    },
    /// A lock request past one of the lock table's budgets (docs/security.md).
    /// No lock was taken.
    #[error("cannot lock: {detail}; no lock was taken")]
    LockBudget {
        /// Which budget, and by how much.
        detail: String,
    },
    /// A ref move that would leave a branch holding another version of a
    /// path someone else has locked than it held before. Nothing moved.
    #[error("push refused: {path} is locked by {holder}, and {branch} would {how}; nothing was updated (ask them to unlock it, or leave the file as the branch has it)")]
    LockedPathMoved {
        /// The locked path.
        path: String,
        /// Who holds the lock.
        holder: String,
        /// The branch, as its short name.
        branch: String,
        /// What the move would do to the path.
        how: String,
    },
    /// A push whose commits change a path someone else has locked.
    #[error("push refused: {path} is locked by {holder}, and commit {commit} changes it; nothing was updated (ask them to unlock it, or take that change out)")]
    LockedPathChanged {
        /// The locked path.
        path: String,
        /// Who holds the lock.
        holder: String,
        /// The short id of the commit that changes it.
        commit: String,
    },
    /// A commit that changes a path someone else has locked.
    #[error("cannot commit: {path} is locked by {holder}; ask them to unlock it, or restore the file (nothing was committed)")]
    CommitOverLock {
        /// The locked path.
        path: String,
        /// Who holds the lock.
        holder: String,
    },
    /// Unlocking a path that has no lock.
    #[error("{path} is not locked")]
    PathNotLocked {
        /// The path as given.
        path: String,
    },
    /// Unlocking, without force, a path someone else has locked.
    #[error("{path} is locked by {holder}; only they can unlock it (or an admin, by force)")]
    LockHeldByOther {
        /// The locked path.
        path: String,
        /// Who holds the lock.
        holder: String,
    },
    /// Reading or setting a setting this build does not know.
    #[error("unknown setting {key} (known: {known})")]
    UnknownSetting {
        /// The key as given.
        key: String,
        /// The known keys, comma-separated.
        known: String,
    },
    /// Dropping file data in a bare repository that does not allow it.
    /// A hub keeps every file's data unless its admin allows drops.
    #[error("{path} keeps every file's data (a bare repository is a full replica others clone from); its admin can allow drops there (setting drop.allowed true)")]
    DropsNotAllowed {
        /// The repository's root.
        path: PathBuf,
    },
    /// `bisect` asked for what the bisection in progress (or its absence) does not allow.
    #[error("{0}")]
    Bisect(String),
    /// A union log (the review log) that cannot take or give its entries:
    /// an entry out of bounds, a log past its reader's budget.
    #[error("{0}")]
    Log(String),
    /// Chosen changes were to be staged on a version of a file that is no
    /// longer the one staged: something else staged it meanwhile.
    #[error("{path} was staged again meanwhile: nothing of it was staged; look at it again")]
    StagedMeanwhile {
        /// The file.
        path: String,
    },
    /// A setting given a value it cannot take.
    #[error("bad value for {key}: {detail}")]
    BadSetting {
        /// The setting's key.
        key: String,
        /// Why the value is refused.
        detail: String,
    },
    /// `revert`: what the reverted commit changed was changed again since, at `path`.
    #[error("cannot revert {commit}: {path} was changed since; nothing was changed; revert it by hand from the commit's parent")]
    RevertConflict {
        /// The short id of the commit to revert.
        commit: String,
        /// The first path changed since.
        path: String,
    },
    /// Reverting a commit whose changes HEAD has already undone.
    #[error("nothing to revert: the changes of {commit} are already undone on HEAD")]
    NothingToRevert {
        /// The short id of the commit.
        commit: String,
    },
    /// Reverting a merge commit: there is no one parent to go back to.
    #[error("cannot revert {commit}: it is a merge, and which side to keep is not known")]
    RevertMerge {
        /// The short id of the commit.
        commit: String,
    },
    /// A commit with no message, and no merge whose message could be used.
    #[error("a commit message is required")]
    MessageRequired,
    /// `merge --abort` with no merge in progress.
    #[error("there is no merge to abort")]
    NoMergeToAbort,
    /// Resolving a path that has no conflict in the merge in progress.
    #[error("{path} is not in conflict")]
    NotInConflict {
        /// The path as given.
        path: String,
    },
    /// Resolving one of two conflicted paths where one is a file and the
    /// other a folder: they must be resolved together.
    /// `how`: the resolution asked for, to ask again for both paths.
    #[error("{path} and {other} cannot both exist (one is a file, the other a directory); resolve them together")]
    FileDirectoryClash {
        /// The path asked to resolve.
        path: String,
        /// The clashing path.
        other: String,
        /// The resolution asked for.
        how: crate::resolution::Resolution,
    },
    /// A checkout of a tree with two names in one folder that the working
    /// tree's file system takes for one (case, Unicode normalization).
    #[error("cannot check out here: {first} and {second} would be one file on this file system (it ignores {folds}); rename one of them on a replica whose file system tells them apart")]
    FoldedNames {
        /// The first of the two paths.
        first: String,
        /// The second.
        second: String,
        /// What the file system ignores.
        folds: &'static str,
    },
    /// A checkout of a tree with a name the working tree's file system
    /// cannot hold (Windows: a device name, a trailing dot, a `:`).
    #[error("cannot check out here: {path} {problem}; rename it on a replica whose file system can hold it")]
    UnfitName {
        /// The path.
        path: String,
        /// Why it cannot be held.
        problem: String,
    },
    /// Keeping both versions of a conflicted file when a side's new name is taken.
    #[error("cannot keep both versions: {path} already exists; move it away first")]
    SideNameTaken {
        /// The name taken.
        path: String,
    },
    /// A line-by-line reading (blame) of a file that is not text.
    #[error("{path} is binary (a NUL byte in its first 8,000 bytes): only text files are read line by line")]
    NotText {
        /// The file in the repository.
        path: String,
    },
    /// A file to be read whole that is larger than the reader's bound.
    #[error("{path} is {size} bytes, more than the {limit} read whole at most")]
    TooLargeToRead {
        /// The file in the repository.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The bound, in bytes.
        limit: u64,
    },
    /// A search pattern that cannot be read.
    #[error("cannot read the pattern {pattern:?}: {detail}")]
    BadPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        detail: String,
    },
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
    /// An [`RepoError::Io`] at `path`.
    pub fn io(path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        RepoError::Io {
            path: path.into(),
            cause,
        }
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

/// Why a folder's path is not a file's (the empty path is the top folder).
fn folder_not_file(path: &str) -> String {
    match path.is_empty() {
        true => "an empty path names the top folder, not a file".into(),
        false => format!("'{path}' is a folder, not a file"),
    }
}
