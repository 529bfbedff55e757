use std::path::PathBuf;

use dmv_store::StoreError;

pub type RepoResult<T> = Result<T, RepoError>;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("not a dmv repository (or any parent up to /): {}", .0.display())]
    NotARepository(PathBuf),
    #[error("{} already holds a dmv repository", .0.display())]
    AlreadyExists(PathBuf),
    #[error("{} is outside the working tree {}", path.display(), root.display())]
    OutsideWorktree { path: PathBuf, root: PathBuf },
    #[error("unknown revision or path: {0}")]
    UnknownRevision(String),
    #[error("pathspec '{0}' did not match any files")]
    NoMatch(String),
    #[error("ref {name} moved concurrently (expected {expected}, found {found}); try again")]
    RefChanged { name: String, expected: String, found: String },
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Refs(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{} is corrupt: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("cannot check out {path}: {reason}; the working tree was not changed")]
    CheckoutRefused { path: String, reason: StoreError },
    #[error("{what} is in use by {holder}; try again when it has finished")]
    Locked { what: String, holder: String },
    #[error("{} needs a newer dmv: it requires {}", path.display(), missing.join(", "))]
    UnknownRequirements { path: PathBuf, missing: Vec<String> },
}

impl RepoError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RepoError::Io { path: path.into(), source }
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
