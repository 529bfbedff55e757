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
    #[error("{0}")]
    Other(String),
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
