//! What can go wrong talking to another replica. Every message is one line
//! that says what failed and what to do.

use std::path::PathBuf;

use dmv_repo::store::{ObjectId, StoreError};
use dmv_repo::RepoError;

pub type SyncResult<T> = Result<T, SyncError>;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Bucket(dmv_bucket::BucketError),
    #[error("connection to the remote lost: {0}")]
    Disconnected(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("remote speaks DMV protocol {remote}, this dmv speaks {local}; upgrade the older side")]
    Version { remote: u32, local: u32 },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("authentication failed for {url}: {detail}")]
    Auth { url: String, detail: String },
    #[error("{url}: {detail}")]
    NotARepository { url: String, detail: String },
    #[error("bad remote {url:?}: {why}")]
    BadUrl { url: String, why: String },
    #[error("no remote named {name}; add one with `dmv remote add {name} URL`")]
    NoSuchRemote { name: String },
    #[error("{what} needs a configured remote (dmv remote add NAME URL)")]
    NeedsNamedRemote { what: &'static str },
    #[error("remote {name} already exists")]
    RemoteExists { name: String },
    #[error("{name:?} is not a valid remote name")]
    BadRemoteName { name: String },
    #[error("cannot find repository {}: {cause}", path.display())]
    NoLocalRepository { path: PathBuf, cause: std::io::Error },
    /// The remote refused the request and said why.
    #[error("remote: {0}")]
    Remote(String),
    /// This side, serving, refuses a request (sent to the client as its error).
    #[error("{0}")]
    Refused(String),
    #[error("{url}: object {id} is missing there")]
    MissingObject { url: String, id: ObjectId },
    /// A server asked for an object it lacks: who else the log says holds it.
    #[error("this replica does not hold object {id}; {}", if holders.is_empty() { "no other replica is known to hold it".to_string() } else { format!("the location log says {} hold it", holders.join(", ")) })]
    NotHeld { id: ObjectId, holders: Vec<String> },
    #[error("rejected: {name} changed on the remote while pushing; pull and push again")]
    Rejected { name: String, found: Option<ObjectId> },
    #[error("rejected: the remote {branch} has commits you do not have (not a fast-forward); pull first, or push --force to replace them")]
    NotFastForward { branch: String },
    #[error("rejected: {branch} on the remote moved since your last fetch; fetch and look before forcing")]
    LeaseBroken { branch: String },
    #[error("no local branch {branch}")]
    NoLocalBranch { branch: String },
    #[error("cannot push '{spec}': expected BRANCH or SRC:DST, DST a branch name (deleting a remote branch is not supported)")]
    BadRefspec { spec: String },
    #[error("{url} has no branch {branch}")]
    NoRemoteBranch { url: String, branch: String },
    #[error("HEAD is detached; name the branch to use")]
    DetachedHead,
    #[error("destination {} already exists and is not empty", .0.display())]
    DestinationNotEmpty(PathBuf),
    #[error("cannot guess a directory name from {0}; give one")]
    NoDirectoryName(String),
    /// A clone that stopped part way; running it again resumes it.
    #[error("clone of {url} stopped; run the same command again to resume: {cause}")]
    CloneStopped { url: String, cause: Box<SyncError> },
    #[error("the data of {} is not here and no reachable remote has it; make one reachable that does: {}", some_of(files), if tried.is_empty() { "none is configured (dmv remote add NAME URL)".to_string() } else { tried.join("; ") })]
    NoRemoteReachable { files: Vec<String>, tried: Vec<String> },
    #[error("refusing to drop: {needed} other copies are needed, and only these were confirmed: {}{}; make more copies (push to another remote), lower numcopies, or use --force", files.join(", "), if unreachable.is_empty() { String::new() } else { format!(" (could not ask: {})", unreachable.join("; ")) })]
    NotEnoughCopies { needed: usize, files: Vec<String>, unreachable: Vec<String> },
    #[error("refusing to drop: {count} of the files are locked on {replica} by another replica's drop that counts that copy; try again later")]
    CopyLocked { replica: String, count: usize },
    #[error("{url} does not support {what}")]
    Unsupported { url: String, what: &'static str },
    #[error(transparent)]
    BadSlice(#[from] dmv_repo::BadSlice),
    #[error("{what}: {cause}")]
    Local { what: String, cause: std::io::Error },
    #[error("{}: {detail}", path.display())]
    ServerConfig { path: PathBuf, detail: String },
}

impl SyncError {
    /// A local operation that failed with an OS error, said once.
    pub fn local(what: impl Into<String>, cause: std::io::Error) -> SyncError {
        SyncError::Local { what: what.into(), cause }
    }

    /// The file whose I/O failed, and how, if that is what went wrong.
    pub fn failed_file(&self) -> Option<(&std::path::Path, &std::io::Error)> {
        match self {
            SyncError::Store(s) => s.failed_file(),
            SyncError::Repo(r) => r.failed_file(),
            SyncError::CloneStopped { cause, .. } => cause.failed_file(),
            _ => None,
        }
    }
}

/// Where the file system that ran out of space (or of quota) is mounted, if
/// that is what an error, or one of its causes, says went wrong: the one
/// fact that tells a person what to do about a failed write.
pub fn full_file_system<'a>(causes: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>) -> Option<PathBuf> {
    let full = |io: &std::io::Error| matches!(io.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT));
    let (mut path, mut is_full) = (None, false);
    for cause in causes {
        let failed = cause.downcast_ref::<StoreError>().and_then(StoreError::failed_file);
        let failed = failed.or_else(|| cause.downcast_ref::<RepoError>().and_then(RepoError::failed_file));
        let failed = failed.or_else(|| cause.downcast_ref::<SyncError>().and_then(SyncError::failed_file));
        if let Some((p, io)) = failed {
            (path, is_full) = (Some(p.to_path_buf()), is_full || full(io));
        } else if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            is_full |= full(io);
        }
    }
    if !is_full {
        return None;
    }
    Some(mount_point(&path.or_else(|| std::env::current_dir().ok())?))
}

/// The mount point of the file system holding `path` (or its nearest existing folder).
fn mount_point(path: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let mut at = path.ancestors().find(|p| p.exists()).unwrap_or(std::path::Path::new("/")).to_path_buf();
    let Ok(dev) = std::fs::metadata(&at).map(|m| m.dev()) else { return at };
    while let Some(parent) = at.parent() {
        if std::fs::metadata(parent).map(|m| m.dev()).ok() != Some(dev) {
            break;
        }
        at = parent.to_path_buf();
    }
    at
}

/// The first few of `names`, and how many more: a message stays one line.
fn some_of(names: &[String]) -> String {
    const SHOWN: usize = 3;
    match names.len() {
        0 => "these files".into(),
        n if n <= SHOWN => names.join(", "),
        n => format!("{} and {} more", names[..SHOWN].join(", "), n - SHOWN),
    }
}
