//! What can go wrong talking to another replica. Every message is one line
//! that says what failed and what to do.

use std::path::PathBuf;

use dmv_repo::store::{ObjectId, StoreError};
use dmv_repo::{BadLocationLog, RepoError};

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
    /// The other side (or what a bucket holds) broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(Violation),
    #[error("remote speaks DMV protocol {remote}, this dmv speaks {local}; upgrade the older side")]
    Version { remote: u32, local: u32 },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("authentication failed for {url}: {detail}")]
    Auth { url: String, detail: String },
    /// The server wants a token, and none or a wrong one was sent.
    #[error("authentication failed for {url}: {detail} (no token, or a wrong one)")]
    TokenRefused { url: String, detail: String },
    #[error("{url}: {detail}")]
    NotARepository { url: String, detail: String },
    #[error("bad remote {url:?}: {why}")]
    BadUrl { url: String, why: String },
    #[error("no remote named {name}")]
    NoSuchRemote { name: String },
    #[error("{what} needs a configured remote")]
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
    /// This side refuses a request or an operation (serving, sent to the client as its error).
    #[error("{0}")]
    Refused(Refusal),
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
    #[error("the data of {} is not here and no reachable remote has it; make one reachable that does: {}", some_of(files), if tried.is_empty() { "none is configured".to_string() } else { tried.join("; ") })]
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

/// How a peer broke the protocol: what it sent (or a bucket holds) that
/// the protocol does not allow, or a request this side cannot put in it.
#[derive(Debug, thiserror::Error)]
pub enum Violation {
    /// A frame's length is 0 or larger than any frame.
    #[error("bad frame length {len}")]
    FrameLength { len: usize },
    #[error("unknown frame type {frame_type}")]
    UnknownFrame { frame_type: u8 },
    #[error("{frame} frame of {len} bytes is larger than the largest one ({limit} bytes)")]
    FrameTooLarge { frame: &'static str, len: usize, limit: usize },
    #[error("malformed {frame} frame")]
    MalformedFrame { frame: &'static str },
    /// An object or chunk frame declares more bytes than any object holds.
    #[error("{what} {id} declares a length of {len} bytes, larger than the largest object ({} MiB)", dmv_repo::store::object::MAX_OBJECT_SIZE >> 20)]
    DeclaredTooLarge { what: &'static str, id: ObjectId, len: u64 },
    #[error("malformed message: {0}")]
    MalformedMessage(postcard::Error),
    /// A request this side cannot put in a frame.
    #[error("cannot encode the request: {detail}")]
    Unencodable { detail: String },
    /// Something other than what the exchange has next (`got`, when it can be said).
    #[error("expected {expected}{}", got.as_ref().map(|g| format!(", got {g}")).unwrap_or_default())]
    Unexpected { expected: &'static str, got: Option<String> },
    /// A request of one verb sent to the URL of another.
    #[error("a {sent} request sent to the {url} URL")]
    WrongUrl { sent: &'static str, url: &'static str },
    #[error("{asked} ids asked for at once; at most {limit} are answered")]
    TooManyIds { asked: usize, limit: usize },
    /// An object that was not asked for, not then, or a second time.
    #[error("remote sent {id}, which was not asked for next")]
    NotAskedFor { id: ObjectId },
    #[error("remote sent fewer objects than asked for")]
    FewerThanAsked,
    #[error("remote did not send {child}, which {id} refers to")]
    NotSent { id: ObjectId, child: ObjectId },
    /// Uploads send each object after the objects it refers to.
    #[error("object {id} arrived before {child}, which it refers to")]
    ArrivedBefore { id: ObjectId, child: ObjectId },
    /// An object from a remote: its copy there may be corrupt.
    #[error("received object {id} is damaged: {detail} (the remote's copy may be corrupt)")]
    Damaged { id: ObjectId, detail: String },
    /// An object in an upload (the answer goes to the uploader, whose copy it was).
    #[error("received object {id} is damaged: {detail}")]
    DamagedUpload { id: ObjectId, detail: String },
    /// A received object breaks the rules every object is held to (names, kinds, sizes).
    #[error("received a malformed object: {0}")]
    Malformed(RepoError),
    #[error("a piece of a location log: {}", .0.0)]
    BadLocationPiece(BadLocationLog),
    #[error("the pieces of a location log are not in key order")]
    LocationsOutOfOrder,
    #[error("a lock object is damaged: {0}")]
    DamagedLock(serde_json::Error),
    #[error("a lock object names a bad path {path:?}: {why}")]
    BadLockPath { path: String, why: &'static str },
    /// What a bucket holds, which speaks no protocol of its own.
    #[error("{url}: {violation}")]
    At { url: String, violation: Box<Violation> },
}

/// What this side refuses to do, and why (serving: sent to the client as its error).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{verb} needs write access")]
    NeedsWriteAccess { verb: &'static str },
    #[error("dropping data from this repository needs its admin: a token with access = \"admin\", or over ssh the account that owns the repository")]
    DropNeedsAdmin,
    #[error("breaking other people's locks (--force) needs an admin: a token with access = \"admin\", or over ssh the account that owns the repository")]
    BreakingLocksNeedsAdmin,
    #[error("the server does not know who you are, so you cannot lock: give your token a user in its config (tokens: \"TOKEN\" = {{ access = \"write\", user = \"NAME\" }})")]
    UnknownUser,
    /// An upload holding an object a clone would refuse.
    #[error("refusing the upload: {0}")]
    Upload(RepoError),
    #[error("refusing to update {name}: only branches and tags can be pushed")]
    NotBranchOrTag { name: String },
    #[error("refusing to update the checked-out branch {name} of a repository with a working tree; push to a bare repository or to another branch")]
    CheckedOutBranch { name: String },
    #[error("{id} is not a commit")]
    NotACommit { id: ObjectId },
    #[error("cannot set {name} to {id}: the commit was not received")]
    CommitNotReceived { name: String, id: ObjectId },
    /// A push from a partial replica of file versions whose data neither side holds.
    #[error("cannot push: the remote lacks the data of {count} file version(s) this partial replica does not hold either (e.g. {example}); fetch their data first, or push from a replica that has them")]
    DataHeldByNeither { count: usize, example: String },
    #[error("refusing to drop: numcopies is 0, so no other copy would be confirmed; use --force to drop without confirming")]
    NoCopiesToConfirm,
    #[error("--unwanted drops what this replica's slice does not keep: it takes no paths, --rev or --from")]
    UnwantedTakesNoSelection,
    #[error("refusing to drop: remote {remote} is this repository; drop without --from")]
    DropFromItself { remote: String },
    #[error("nothing to drop: there are no commits yet")]
    NoCommits,
    #[error("{path} has uncommitted changes; commit or restore it before dropping")]
    UncommittedChanges { path: String },
    /// The first copies confirmed may be unlocked before the drop is done.
    #[error("refusing to drop: confirming the other copies took {took_secs} s, too close to their locks' {lock_secs} s; nothing was dropped, run the drop again")]
    LocksNearExpiry { took_secs: u64, lock_secs: u64 },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A violation says, in one line, what the other side did wrong.
    #[test]
    fn violations_say_what_in_one_line() {
        let id = ObjectId([0xab; 32]);
        let protocol = |v: Violation| SyncError::Protocol(v).to_string();
        let said = [
            (protocol(Violation::FrameLength { len: 0 }), "protocol error: bad frame length 0".to_string()),
            (
                protocol(Violation::Unexpected { expected: "an object", got: Some("a piece of a location log".into()) }),
                "protocol error: expected an object, got a piece of a location log".into(),
            ),
            (protocol(Violation::Unexpected { expected: "a request", got: None }), "protocol error: expected a request".into()),
            (protocol(Violation::WrongUrl { sent: "put", url: "get" }), "protocol error: a put request sent to the get URL".into()),
            (protocol(Violation::TooManyIds { asked: 40_000, limit: 32_768 }), "protocol error: 40000 ids asked for at once; at most 32768 are answered".into()),
            (
                protocol(Violation::DeclaredTooLarge { what: "chunk", id, len: u32::MAX.into() }),
                format!("protocol error: chunk {id} declares a length of 4294967295 bytes, larger than the largest object (32 MiB)"),
            ),
            (
                protocol(Violation::Damaged { id, detail: "checksum mismatch".into() }),
                format!("protocol error: received object {id} is damaged: checksum mismatch (the remote's copy may be corrupt)"),
            ),
            (protocol(Violation::DamagedUpload { id, detail: "checksum mismatch".into() }), format!("protocol error: received object {id} is damaged: checksum mismatch")),
            (protocol(Violation::BadLocationPiece(BadLocationLog("checksum mismatch".into()))), "protocol error: a piece of a location log: checksum mismatch".into()),
            (
                protocol(Violation::At { url: "s3://bucket/photos".into(), violation: Box::new(Violation::NotAskedFor { id }) }),
                format!("protocol error: s3://bucket/photos: remote sent {id}, which was not asked for next"),
            ),
        ];
        for (said, want) in said {
            assert_eq!(said, want);
            assert!(!said.contains('\n'), "{said}");
        }
    }

    /// A refusal says, in one line, what this side will not do and why.
    #[test]
    fn refusals_say_why_in_one_line() {
        let id = ObjectId([0xab; 32]);
        let refused = |r: Refusal| SyncError::Refused(r).to_string();
        let said = [
            (refused(Refusal::NeedsWriteAccess { verb: "put" }), "put needs write access".to_string()),
            (
                refused(Refusal::CheckedOutBranch { name: "refs/heads/main".into() }),
                "refusing to update the checked-out branch refs/heads/main of a repository with a working tree; push to a bare repository or to another branch".into(),
            ),
            (refused(Refusal::CommitNotReceived { name: "refs/heads/main".into(), id }), format!("cannot set refs/heads/main to {id}: the commit was not received")),
            (
                refused(Refusal::DataHeldByNeither { count: 2, example: "shots/a.exr".into() }),
                "cannot push: the remote lacks the data of 2 file version(s) this partial replica does not hold either (e.g. shots/a.exr); fetch their data first, or push from a replica that has them".into(),
            ),
        ];
        for (said, want) in said {
            assert_eq!(said, want);
            assert!(!said.contains('\n'), "{said}");
        }
    }

    /// A refusal says what to do in words: the front end names its own commands.
    #[test]
    fn refusals_name_no_command() {
        let id = ObjectId([1; 32]);
        let refusals = [
            Refusal::NeedsWriteAccess { verb: "put" },
            Refusal::DropNeedsAdmin,
            Refusal::BreakingLocksNeedsAdmin,
            Refusal::UnknownUser,
            Refusal::Upload(RepoError::MalformedTree { tree: id, detail: "entry \"..\" is not a valid name or out of order".into() }),
            Refusal::NotBranchOrTag { name: "refs/notes/x".into() },
            Refusal::CheckedOutBranch { name: "refs/heads/main".into() },
            Refusal::NotACommit { id },
            Refusal::CommitNotReceived { name: "refs/heads/main".into(), id },
            Refusal::DataHeldByNeither { count: 1, example: "a.jpg".into() },
            Refusal::NoCopiesToConfirm,
            Refusal::UnwantedTakesNoSelection,
            Refusal::DropFromItself { remote: "origin".into() },
            Refusal::NoCommits,
            Refusal::UncommittedChanges { path: "a.jpg".into() },
            Refusal::LocksNearExpiry { took_secs: 590, lock_secs: 600 },
        ];
        for r in refusals {
            let said = r.to_string();
            assert!(!said.contains("dmv ") && !said.contains('`') && !said.contains('\n'), "{said}");
        }
    }
}
