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
    #[error("the HTTP server stopped: {0}")]
    Server(String),
}

impl SyncError {
    /// A local operation that failed with an OS error, said once.
    pub fn local(what: impl Into<String>, cause: std::io::Error) -> SyncError {
        SyncError::Local { what: what.into(), cause }
    }
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
