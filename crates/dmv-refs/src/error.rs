use std::path::PathBuf;
use std::time::Duration;

use crate::value::RefValue;

/// Every message is a single line so the CLI can print it as is.
#[derive(thiserror::Error, Debug)]
pub enum RefError {
    /// A ref name breaks the rules of [`crate::validate_name`].
    #[error("invalid ref name '{name}': {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },

    /// Compare-and-swap failure: the ref did not hold the expected value.
    #[error("ref '{name}' changed: expected {}, found {}", show(.expected), show(.found))]
    Changed {
        /// The ref whose expectation failed (the first one, in name order).
        name: String,
        /// The value the update expected; None for [`crate::Expect::Absent`].
        expected: Option<RefValue>,
        /// What the ref held; None: it does not exist.
        found: Option<RefValue>,
    },

    /// [`crate::Transaction::update`] was given the same ref twice.
    #[error("ref '{name}' is updated twice in one transaction")]
    DuplicateUpdate {
        /// The ref named twice.
        name: String,
    },

    /// Another writer holds `tables.list.lock` and did not release it in time.
    #[error("refs are locked by {holder} (file {}); waited {}; {advice}", .path.display(), secs(.waited))]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, as the lock file tells ("process 123 on host h").
        holder: String,
        /// How long this writer waited: its lock timeout.
        waited: Duration,
        /// When deleting the lock file is safe, for the message.
        advice: String,
    },

    /// A table's bytes fail a check (checksum, order, a record's contents).
    #[error("ref table {} is corrupt: {reason}", .path.display())]
    Corrupt {
        /// The table file (`tables.list` for a table carried inline in it).
        path: PathBuf,
        /// What is wrong, and where in the table.
        reason: String,
    },

    /// `tables.list` cannot be read as a list of tables.
    #[error("ref table list {} is corrupt: {reason}", .path.display())]
    CorruptList {
        /// The list file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The directory has no `tables.list`: [`crate::RefStore::init`] never ran there.
    #[error("no ref store at {} (missing tables.list)", .0.display())]
    NotInitialized(PathBuf),

    /// [`crate::RefStore::init`] found a ref store already there.
    #[error("ref store at {} already exists", .0.display())]
    AlreadyExists(PathBuf),

    /// Reading or writing a file of the store failed.
    #[error("ref store I/O error on {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },

    /// Readers kept racing with compactions that deleted the tables they were
    /// about to open. Practically unreachable; retrying the command helps.
    #[error("ref tables in {} kept changing while reading; try again", .0.display())]
    Unstable(PathBuf),
}

fn show(v: &Option<RefValue>) -> String {
    match v {
        None => "no ref".to_string(),
        Some(v) => format!("{}..", &hex::encode(v)[..12]),
    }
}

fn secs(d: &Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 0.05 {
        format!("{}s", s.round() as u64)
    } else {
        format!("{s:.1}s")
    }
}

impl RefError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> RefError {
        RefError::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> RefError {
        RefError::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
