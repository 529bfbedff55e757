//! The store's one error type, so a caller can tell a missing object from a
//! damaged one from a failing disk without reading messages.

use std::path::PathBuf;

use crate::ObjectId;

/// What the store's calls return.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store call failed. Every message is one line naming the object or file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// No pack holds the object.
    #[error("object {id} not found")]
    NotFound {
        /// The object looked for.
        id: ObjectId,
    },
    /// A pack holds the object, but its bytes do not read back as it.
    #[error("object {id} in pack {pack} is damaged: {detail}")]
    DamagedObject {
        /// The object.
        id: ObjectId,
        /// The pack's file name.
        pack: String,
        /// What is wrong (a hash mismatch, a bad record header, ...).
        detail: String,
    },
    /// A pack or index file fails its own checks (checksum, layout).
    #[error("{} is corrupt: {detail}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// An object's bytes are intact but do not decode as its kind.
    #[error("object {id} cannot be decoded as {kind}: {detail}")]
    BadEncoding {
        /// The object.
        id: ObjectId,
        /// The kind it was decoded as ([`crate::ObjectKind::name`]).
        kind: &'static str,
        /// What the decoder said.
        detail: String,
    },
    /// A working-tree file kept changing while ingest read it.
    #[error("{} changed while it was being read (tried {tries} times); nothing was recorded for it", path.display())]
    ChangedWhileReading {
        /// The file.
        path: PathBuf,
        /// How many times it was read.
        tries: u32,
    },
    /// More than one object id starts with the prefix.
    #[error("ambiguous object id prefix {prefix}")]
    Ambiguous {
        /// The prefix, in lower case.
        prefix: String,
    },
    /// An object larger than [`crate::object::MAX_OBJECT_SIZE`] was to be written.
    #[error("{kind} {id} is {len} bytes, larger than the largest object a repository holds ({max_mib} MiB)")]
    TooLarge {
        /// Its kind's name.
        kind: &'static str,
        /// The object.
        id: ObjectId,
        /// Its length in bytes.
        len: u64,
        /// The limit, in MiB.
        max_mib: u64,
    },
    /// The object is of another kind than the caller asked for.
    #[error("object {id} is a {actual}, not {expected}")]
    WrongKind {
        /// The object.
        id: ObjectId,
        /// Its kind's name.
        actual: &'static str,
        /// What was asked for, with its article ("a commit", "file content").
        expected: &'static str,
    },
    /// An object received from elsewhere does not hash to its id (or its
    /// length or compression is wrong); it was not stored.
    #[error("received object {id} is damaged: {detail}")]
    Received {
        /// The id it came under.
        id: ObjectId,
        /// What is wrong.
        detail: String,
    },
    /// A path given to ingest or hashing is not a regular file.
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// [`crate::Store::resolve_prefix`] was given something that is not hex.
    #[error("{0:?} is not a hexadecimal object id prefix")]
    BadPrefix(String),
    /// Writing content to the caller's writer failed (the store is fine).
    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),
    /// zstd could not be set up.
    #[error("cannot start the compressor: {0}")]
    Compressor(std::io::Error),
    /// A broken invariant of this program, not of the data or the machine.
    #[error("internal error: {0}")]
    Internal(String),
}

impl StoreError {
    /// An [`StoreError::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// The file whose I/O failed, and how, if that is what went wrong.
    pub fn failed_file(&self) -> Option<(&std::path::Path, &std::io::Error)> {
        match self {
            StoreError::Io { path, source } => Some((path, source)),
            _ => None,
        }
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
