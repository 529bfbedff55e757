use std::path::PathBuf;
use std::time::Duration;

use crate::value::RefValue;

/// Every message is a single line so the CLI can print it as is.
#[derive(thiserror::Error, Debug)]
pub enum RefError {
    #[error("invalid ref name '{name}': {reason}")]
    InvalidName { name: String, reason: &'static str },

    /// Compare-and-swap failure: the ref did not hold the expected value.
    #[error("ref '{name}' changed: expected {}, found {}", show(.expected), show(.found))]
    Changed { name: String, expected: Option<RefValue>, found: Option<RefValue> },

    #[error("ref '{name}' is updated twice in one transaction")]
    DuplicateUpdate { name: String },

    /// Another writer holds `tables.list.lock` and did not release it in time.
    #[error("refs are locked by {holder} (file {}); waited {}; {advice}", .path.display(), secs(.waited))]
    Locked { path: PathBuf, holder: String, waited: Duration, advice: String },

    #[error("ref table {} is corrupt: {reason}", .path.display())]
    Corrupt { path: PathBuf, reason: String },

    #[error("ref table list {} is corrupt: {reason}", .path.display())]
    CorruptList { path: PathBuf, reason: String },

    #[error("no ref store at {} (missing tables.list)", .0.display())]
    NotInitialized(PathBuf),

    #[error("ref store at {} already exists", .0.display())]
    AlreadyExists(PathBuf),

    #[error("ref store I/O error on {}: {source}", .path.display())]
    Io {
        path: PathBuf,
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
        RefError::Io { path: path.into(), source }
    }
    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> RefError {
        RefError::Corrupt { path: path.into(), reason: reason.into() }
    }
}
