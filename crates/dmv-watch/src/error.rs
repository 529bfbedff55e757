use std::io;
use std::path::PathBuf;

/// Every message is a single line so the CLI can print it as is.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum WatchError {
    /// The folder to watch cannot be read (it does not exist, was removed
    /// while watched, or we may not list it).
    #[error("cannot watch {}: {source}", .path.display())]
    Root {
        /// The folder as given.
        path: PathBuf,
        /// Why it cannot be read.
        source: io::Error,
    },

    /// The path to watch is a file, not a folder.
    #[error("cannot watch {}: not a folder", .path.display())]
    NotAFolder {
        /// The path as given.
        path: PathBuf,
    },
}
