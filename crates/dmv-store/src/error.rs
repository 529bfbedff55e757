//! The store's one error type, so a caller can tell a missing object from a
//! damaged one from a failing disk without reading messages.

use std::path::PathBuf;

use crate::ObjectId;

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("object {id} not found")]
    NotFound { id: ObjectId },
    #[error("object {id} in pack {pack} is damaged: {detail}")]
    DamagedObject { id: ObjectId, pack: String, detail: String },
    #[error("{} is corrupt: {detail}", path.display())]
    CorruptFile { path: PathBuf, detail: String },
    #[error("object {id} cannot be decoded as {kind}: {detail}")]
    BadEncoding { id: ObjectId, kind: &'static str, detail: String },
    #[error("{} changed while it was being read (tried {tries} times); nothing was recorded for it", path.display())]
    ChangedWhileReading { path: PathBuf, tries: u32 },
    #[error("ambiguous object id prefix {prefix}")]
    Ambiguous { prefix: String },
    #[error("{kind} {id} is {len} bytes, larger than the largest object a repository holds ({max_mib} MiB)")]
    TooLarge { kind: &'static str, id: ObjectId, len: u64, max_mib: u64 },
    #[error("object {id} is a {actual}, not {expected}")]
    WrongKind { id: ObjectId, actual: &'static str, expected: &'static str },
    #[error("received object {id} is damaged: {detail}")]
    Received { id: ObjectId, detail: String },
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{0:?} is not a hexadecimal object id prefix")]
    BadPrefix(String),
    #[error("cannot write output: {0}")]
    Output(std::io::Error),
    #[error("cannot start the compressor: {0}")]
    Compressor(std::io::Error),
    /// A broken invariant of this program, not of the data or the machine.
    #[error("internal error: {0}")]
    Internal(String),
}

impl StoreError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io { path: path.into(), source }
    }
}

/// Attach a path to an io::Result.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> StoreResult<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> StoreResult<T> {
        self.map_err(|e| StoreError::io(path, e))
    }
}
