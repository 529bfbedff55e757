//! What goes wrong in review: input out of its bounds, a comment or review
//! not found, a step its state forbids, and the repository's own errors.

use dmv_repo::RepoError;

/// A review operation's failure.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The repository: its store, refs or log.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Input out of its bounds or malformed.
    #[error("{0}")]
    Invalid(String),
    /// No comment or review has this id (or prefix), or several have.
    #[error("{0}")]
    NotFound(String),
    /// The step is not allowed in the review's state.
    #[error("{0}")]
    Refused(String),
}

/// A review operation's result.
pub type ReviewResult<T> = Result<T, ReviewError>;
