//! What can go wrong talking to another replica. Every message is one line
//! that says what failed and what to do.
//!
//! By layer: how a peer broke the protocol ([`Violation`]), why a remote
//! could not be reached or its wire failed ([`TransportError`]), why this
//! side refuses a request it serves ([`Refusal`]), why a remote's name or
//! URL cannot be used ([`AddressError`]); [`SyncError`], what the
//! operations return, holds each of those beside the operations' own
//! failures (a push rejected, too few copies to drop, a clone stopped).

use std::path::PathBuf;

use dmv_repo::store::{ObjectId, StoreError};
use dmv_repo::{BadLocationLog, RepoError};

/// What the operations of this crate return.
pub type SyncResult<T> = Result<T, SyncError>;

/// Why an operation on replicas failed, or why a request could not be
/// answered. The message is one line, said to a person.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The repository failed (this one, or the served one): its files, refs or
    /// objects.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// The object store failed: reading or writing packs, or a damaged object.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An object-storage remote failed in a way none of the variants here
    /// says (those of access, reachability and the store are mapped to them).
    #[cfg(feature = "s3")]
    #[error(transparent)]
    Bucket(dmv_bucket::BucketError),
    /// Reaching the remote, or the wire to it, failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A remote's name, URL or path that cannot be used.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The other side (or what a bucket holds) broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(Violation),
    /// The remote refused the request and said why.
    #[error("remote: {0}")]
    Remote(String),
    /// This side refuses a request or an operation (serving, sent to the client as its error).
    #[error("{0}")]
    Refused(Refusal),
    /// A remote that speaks no protocol (a bucket, a memory remote) lacks an
    /// object asked of it.
    #[error("{url}: object {id} is missing there")]
    MissingObject {
        /// The remote's URL.
        url: String,
        /// The object asked for.
        id: ObjectId,
    },
    /// A server asked for an object it lacks: who else the log says holds it.
    #[error("this replica does not hold object {id}; {}", if holders.is_empty() { "no other replica is known to hold it".to_string() } else { format!("the location log says {} hold it", holders.join(", ")) })]
    NotHeld {
        /// The object asked for.
        id: ObjectId,
        /// The names of the replicas the location log says hold it (empty: none
        /// is known to).
        holders: Vec<String>,
    },
    /// A push's ref update lost its compare-and-swap: another push moved the
    /// ref since the remote's refs were listed (`Rejected` in the protocol).
    #[error("rejected: {name} changed on the remote while pushing; pull and push again")]
    Rejected {
        /// The full ref name, e.g. `refs/heads/main`.
        name: String,
        /// What the ref holds on the remote now (`None`: it does not exist).
        found: Option<ObjectId>,
    },
    /// A push without force of a branch whose remote tip is not an ancestor of
    /// the pushed commit (or is a commit this side does not have).
    #[error("rejected: the remote {branch} has commits you do not have (not a fast-forward); pull first, or push by force to replace them")]
    NotFastForward {
        /// The branch's short name, e.g. `main`.
        branch: String,
    },
    /// A forced push of a branch whose remote tip is not what this side's
    /// remote-tracking ref says (force-with-lease).
    #[error("rejected: {branch} on the remote moved since your last fetch; fetch and look before forcing")]
    LeaseBroken {
        /// The branch's short name, e.g. `main`.
        branch: String,
    },
    /// A push of a `BRANCH` that does not exist here.
    #[error("no local branch {branch}")]
    NoLocalBranch {
        /// The branch's short name, as given.
        branch: String,
    },
    /// A push's `SRC:DST` with an empty side, or a `DST` that is not a valid
    /// branch name.
    #[error("cannot push '{spec}': expected BRANCH or SRC:DST, DST a branch name (deleting a remote branch is not supported)")]
    BadRefspec {
        /// The refspec as given.
        spec: String,
    },
    /// A pull of a branch the remote does not have (after fetching).
    #[error("{url} has no branch {branch}")]
    NoRemoteBranch {
        /// The remote's URL.
        url: String,
        /// The branch's short name.
        branch: String,
    },
    /// A push or pull that names no branch while HEAD is not on one.
    #[error("HEAD is detached; name the branch to use")]
    DetachedHead,
    /// A clone into a directory that holds files (other than what an earlier
    /// clone killed while creating its repository left).
    #[error("destination {} already exists and is not empty", .0.display())]
    DestinationNotEmpty(PathBuf),
    /// A clone given no directory, whose URL (the field) ends in no name to
    /// call it.
    #[error("cannot guess a directory name from {0}; give one")]
    NoDirectoryName(String),
    /// A clone that stopped part way; running it again resumes it.
    #[error("clone of {url} stopped; run the same command again to resume: {cause}")]
    CloneStopped {
        /// The URL cloned from.
        url: String,
        /// What stopped it.
        cause: Box<SyncError>,
    },
    /// A clone whose history arrived whole but whose files this file system
    /// cannot hold as they are named (see `RepoError::FoldedNames` and
    /// `RepoError::UnfitName`): running it again would be refused again.
    #[error("cloned into {}, but its files are not checked out: {cause}", .dir.display())]
    CheckoutRefused {
        /// The clone's folder.
        dir: PathBuf,
        /// Why.
        cause: Box<SyncError>,
    },
    /// A partial replica needs files' data it does not hold, and no configured
    /// remote that was reached holds it.
    #[error("the data of {} is not here and no reachable remote has it; make one reachable that does: {}", some_of(files), if tried.is_empty() { "none is configured".to_string() } else { tried.join("; ") })]
    NoRemoteReachable {
        /// The files still lacking, each with the replicas the location log says
        /// hold it.
        files: Vec<String>,
        /// Each remote tried and why it did not serve (empty: none is
        /// configured).
        tried: Vec<String>,
    },
    /// A drop without force of files fewer than `needed` other replicas
    /// confirmed holding: nothing was dropped.
    #[error("refusing to drop: {} needed, and only these were confirmed: {}{}; make more copies (push to another remote), lower numcopies, or drop by force", match needed { 1 => "1 other copy is".to_string(), n => format!("{n} other copies are") }, files.join(", "), if unreachable.is_empty() { String::new() } else { format!(" (could not ask: {})", unreachable.join("; ")) })]
    NotEnoughCopies {
        /// How many other copies must be confirmed (`numcopies`).
        needed: usize,
        /// The files short of copies, each with how many were confirmed.
        files: Vec<String>,
        /// The remotes that could not be asked, each with why.
        unreachable: Vec<String>,
    },
    /// A drop from a remote (`--from`) where another replica's drop holds a
    /// lock on some of the files: nothing was dropped there.
    #[error("refusing to drop: {count} of the files are locked on {replica} by another replica's drop that counts that copy; try again later")]
    CopyLocked {
        /// The name of the remote dropped from.
        replica: String,
        /// How many of the files are locked there.
        count: usize,
    },
    /// The remote cannot do what was asked: a capability only some remotes
    /// have (see [`KeepsCopies`](crate::KeepsCopies) and
    /// [`KeepsPathLocks`](crate::KeepsPathLocks)).
    #[error("{url} does not support {what}")]
    Unsupported {
        /// The remote's URL.
        url: String,
        /// What it cannot do, e.g. `"locks"`.
        what: &'static str,
    },
    /// A replica's slice (which files' data it keeps) that cannot be parsed.
    #[error(transparent)]
    BadSlice(#[from] dmv_repo::BadSlice),
    /// A local operation failed with an OS error (made by [`SyncError::local`]).
    #[error("{what}: {cause}")]
    Local {
        /// What was being done, e.g. "cannot listen on 0.0.0.0:8080".
        what: String,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A server's configuration file (or a TLS file it names) that cannot be
    /// read, parsed, or is refused.
    #[error("{}: {detail}", path.display())]
    ServerConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
}

/// Why a remote could not be reached or its wire failed: the transports'
/// errors (a pipe, ssh, HTTP, object storage), whatever the operation.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The remote's URL names a transport this build leaves out (a cargo
    /// feature of dmv-sync: `http` or `s3`).
    #[error("{url}: this build of dmv cannot reach {transport} remotes")]
    TransportLeftOut {
        /// The remote's URL.
        url: String,
        /// The transport, as a person names it ("HTTP", "object-storage").
        transport: &'static str,
    },
    /// The connection broke part way: the pipe or stream closed (inside a
    /// frame, or before an answer came), or an HTTP request failed after it
    /// connected. The text says how (with what the remote process last wrote
    /// on stderr, when there is that).
    #[error("connection to the remote lost: {0}")]
    Disconnected(String),
    /// The server keeps the repository sealed (encrypted end to end): it
    /// answers no request of the protocol, and its clients read and write
    /// its objects themselves, as in a bucket (`objects` is where, under
    /// the remote's URL).
    #[error("{url} is encrypted end to end: its objects are read at {objects}")]
    SealedHub {
        /// The remote's URL.
        url: String,
        /// The path of its objects under the URL (`objects/store`).
        objects: String,
    },
    /// The remote's `Hello` names another protocol version than this side's.
    #[error(
        "remote speaks DMV protocol {remote}, this dmv speaks {local}; upgrade the older side"
    )]
    Version {
        /// The version the remote speaks.
        remote: u32,
        /// The version this side speaks ([`VERSION`](crate::protocol::VERSION)).
        local: u32,
    },
    /// The remote could not be reached: connecting failed, HTTP could not be
    /// set up, or the child process (ssh, `dmv serve --stdio`) could not be
    /// started.
    #[error("cannot reach {url}: {detail}")]
    Unreachable {
        /// The remote's URL, or what was to be run for it.
        url: String,
        /// What failed, in the words of the OS or the HTTP or storage library.
        detail: String,
    },
    /// The remote stopped answering: nothing came, or nothing could be sent,
    /// for as long as `remote.timeout` allows, and it was abandoned (a
    /// frozen server, a dead link that still looks open).
    #[error("{url} stopped answering: nothing for {seconds} s")]
    Stalled {
        /// The remote's URL.
        url: String,
        /// How long it was waited for.
        seconds: u64,
    },
    /// The remote refused the credentials: a server answered 403 (the token
    /// lacks the access), or an object store refused its keys.
    #[error("authentication failed for {url}: {detail}")]
    Auth {
        /// The remote's URL.
        url: String,
        /// What the server or the object store said.
        detail: String,
    },
    /// The server wants a token, and none or a wrong one was sent.
    #[error("authentication failed for {url}: {detail} (no token, or a wrong one)")]
    TokenRefused {
        /// The remote's URL.
        url: String,
        /// What the server said (the body of its 401 answer).
        detail: String,
    },
    /// Nothing at the URL is a DMV repository: the server answered `Hello`
    /// so, or the bucket holds none.
    #[error("{url}: {detail}")]
    NotARepository {
        /// The remote's URL.
        url: String,
        /// What the server or the bucket said.
        detail: String,
    },
}

/// Why a remote's name, URL or path cannot be used: the errors of naming
/// and addressing remotes, before anything is connected.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    /// A remote's URL or path that cannot be parsed or is not supported.
    #[error("bad remote {url:?}: {why}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// No configured remote has this name, and it does not look like a URL
    /// or a path; also when removing a remote that is not configured.
    #[error("no remote named {name}")]
    NoSuchRemote {
        /// The name as given.
        name: String,
    },
    /// An operation that needs a configured remote (its remote-tracking refs,
    /// its upstream) was given a URL, or none was named and none is the
    /// default (several remotes, none `origin` or the upstream).
    #[error("{what} needs a configured remote")]
    NeedsNamedRemote {
        /// The operation, e.g. `"pull"` or `"sync"`.
        what: &'static str,
    },
    /// Adding a remote under a name already configured.
    #[error("remote {name} already exists")]
    RemoteExists {
        /// The name as given.
        name: String,
    },
    /// Adding a remote under a name that contains `/` or cannot be part of a
    /// ref name.
    #[error("{name:?} is not a valid remote name")]
    BadRemoteName {
        /// The name as given.
        name: String,
    },
    /// A remote given as a local path that cannot be resolved (it does not
    /// exist, or cannot be read).
    #[error("cannot find repository {}: {cause}", path.display())]
    NoLocalRepository {
        /// The path as given.
        path: PathBuf,
        /// Why it could not be made absolute.
        cause: std::io::Error,
    },
}

/// What a wire puts inside the `io::Error` of a read or write it gave up on
/// because the remote stopped answering, so the error reaches the caller as
/// [`TransportError::Stalled`] through code that only passes I/O errors on.
#[derive(Debug, thiserror::Error)]
#[error("{url} stopped answering: nothing for {seconds} s")]
pub(crate) struct GaveUpWaiting {
    pub url: String,
    pub seconds: u64,
}

impl GaveUpWaiting {
    pub(crate) fn io_error(url: &str, after: std::time::Duration) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            GaveUpWaiting {
                url: url.to_string(),
                seconds: after.as_secs(),
            },
        )
    }
}

impl SyncError {
    /// The connection failed part way: [`TransportError::Stalled`] when a wire
    /// gave up waiting, else [`TransportError::Disconnected`] saying how.
    pub(crate) fn connection_lost(e: std::io::Error) -> SyncError {
        match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<GaveUpWaiting>())
        {
            Some(GaveUpWaiting { url, seconds }) => TransportError::Stalled {
                url: url.clone(),
                seconds: *seconds,
            }
            .into(),
            None => TransportError::Disconnected(e.to_string()).into(),
        }
    }

    /// Whether the remote failed (did not answer, stalled, broke off, broke
    /// the protocol, refused our credentials, or is not a repository), as
    /// opposed to this side (its disk, its repository, the request asked):
    /// another remote that holds a copy may still serve.
    pub fn is_remote_failure(&self) -> bool {
        matches!(
            self,
            SyncError::Transport(_)
                | SyncError::Protocol(_)
                | SyncError::Remote(_)
                | SyncError::MissingObject { .. }
        ) || self.is_buckets()
    }

    /// An object store's own failure.
    fn is_buckets(&self) -> bool {
        #[cfg(feature = "s3")]
        if let SyncError::Bucket(_) = self {
            return true;
        }
        false
    }

    /// A local operation that failed with an OS error, said once.
    pub fn local(what: impl Into<String>, cause: std::io::Error) -> SyncError {
        SyncError::Local {
            what: what.into(),
            cause,
        }
    }

    /// The file whose I/O failed, and how, if that is what went wrong.
    pub fn failed_file(&self) -> Option<(&std::path::Path, &std::io::Error)> {
        match self {
            SyncError::Store(s) => s.failed_file(),
            SyncError::Repo(r) => r.failed_file(),
            SyncError::CloneStopped { cause, .. } | SyncError::CheckoutRefused { cause, .. } => {
                cause.failed_file()
            }
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
    FrameLength {
        /// The length declared, in bytes.
        len: usize,
    },
    /// A frame whose type byte is none of the protocol's.
    #[error("unknown frame type {frame_type}")]
    UnknownFrame {
        /// The type byte.
        frame_type: u8,
    },
    /// A frame whose declared length is more than its type allows.
    #[error("{frame} frame of {len} bytes is larger than the largest one ({limit} bytes)")]
    FrameTooLarge {
        /// The frame type's name, e.g. `"object"`.
        frame: &'static str,
        /// The length declared, in bytes.
        len: usize,
        /// The largest this type allows, in bytes.
        limit: usize,
    },
    /// An object, chunk stub or end frame whose body is not what its type
    /// says (too short, an unknown object kind, a stray byte).
    #[error("malformed {frame} frame")]
    MalformedFrame {
        /// The frame type's name.
        frame: &'static str,
    },
    /// An object or chunk frame declares more bytes than any object holds.
    #[error("{what} {id} declares a length of {len} bytes, larger than the largest object ({} MiB)", dmv_repo::store::object::MAX_OBJECT_SIZE >> 20)]
    DeclaredTooLarge {
        /// `"object"` or `"chunk"`.
        what: &'static str,
        /// The id the frame names.
        id: ObjectId,
        /// The raw length declared, in bytes.
        len: u64,
    },
    /// A message frame that does not decode as the message expected.
    #[error("malformed message: {0}")]
    MalformedMessage(postcard::Error),
    /// A request this side cannot put in a frame.
    #[error("cannot encode the request: {detail}")]
    Unencodable {
        /// Why it could not be encoded.
        detail: String,
    },
    /// Something other than what the exchange has next (`got`, when it can be said).
    #[error("expected {expected}{}", got.as_ref().map(|g| format!(", got {g}")).unwrap_or_default())]
    Unexpected {
        /// What was expected, e.g. `"an object"`.
        expected: &'static str,
        /// What came instead (`None`: not said).
        got: Option<String>,
    },
    /// A request of one verb sent to the URL of another.
    #[error("a {sent} request sent to the {url} URL")]
    WrongUrl {
        /// The request's verb.
        sent: &'static str,
        /// The verb the URL names.
        url: &'static str,
    },
    /// A `Has`, `Get`, `LockContent` or `DropContent` of more ids than
    /// [`MAX_IDS_PER_REQUEST`](crate::protocol::MAX_IDS_PER_REQUEST), or a
    /// `GetLocationClaims` of more trees than
    /// [`MAX_TREES_PER_CLAIMS_REQUEST`](crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST).
    #[error("{asked} ids asked for at once; at most {limit} are answered")]
    TooManyIds {
        /// How many were asked for.
        asked: usize,
        /// The most one request may ask for.
        limit: usize,
    },
    /// A `Refs` answer listing more than
    /// [`MAX_REFS_PER_ANSWER`](crate::protocol::MAX_REFS_PER_ANSWER).
    #[error("the remote lists {listed} refs; at most {limit} are taken")]
    TooManyRefs {
        /// How many it listed.
        listed: usize,
        /// The most an answer may list.
        limit: usize,
    },
    /// An object that was not asked for, not then, or a second time.
    #[error("remote sent {id}, which was not asked for next")]
    NotAskedFor {
        /// The object sent.
        id: ObjectId,
    },
    /// A `Get` answer that ended before every id asked for was sent.
    #[error("remote sent fewer objects than asked for")]
    FewerThanAsked,
    /// A transfer ended without an object that another one it sent refers
    /// to (and that this side does not have).
    #[error("remote did not send {child}, which {id} refers to")]
    NotSent {
        /// The object that refers to it.
        id: ObjectId,
        /// The object missing.
        child: ObjectId,
    },
    /// Uploads send each object after the objects it refers to.
    #[error("object {id} arrived before {child}, which it refers to")]
    ArrivedBefore {
        /// The object that came too early.
        id: ObjectId,
        /// The object it refers to, not yet received.
        child: ObjectId,
    },
    /// An object from a remote that does not decompress, or does not hash
    /// to its id: its copy there may be corrupt.
    #[error("received object {id} is damaged: {detail} (the remote's copy may be corrupt)")]
    Damaged {
        /// The id it was sent as.
        id: ObjectId,
        /// What is wrong with it.
        detail: String,
    },
    /// An object in an upload that is damaged (the answer goes to the
    /// uploader, whose copy it was).
    #[error("received object {id} is damaged: {detail}")]
    DamagedUpload {
        /// The id it was sent as.
        id: ObjectId,
        /// What is wrong with it.
        detail: String,
    },
    /// A received object breaks the rules every object is held to (names, kinds, sizes).
    #[error("received a malformed object: {0}")]
    Malformed(RepoError),
    /// A piece of a location log (a locations frame, or one a bucket holds)
    /// that does not decode: a bad checksum or record.
    #[error("a piece of a location log: {}", .0.0)]
    BadLocationPiece(BadLocationLog),
    /// A piece of a location log whose records are not in key order after the
    /// piece before it.
    #[error("the pieces of a location log are not in key order")]
    LocationsOutOfOrder,
    /// Claims of a location log that are out of order, beyond their bounds,
    /// or of a tree the client did not name.
    #[error("the claims of a location log: {0}")]
    BadLocationClaims(&'static str),
    /// A path lock object a bucket holds that does not decode.
    #[error("a lock object is damaged: {0}")]
    DamagedLock(serde_json::Error),
    /// A path lock object a bucket holds whose path is not a valid repository
    /// path.
    #[error("a lock object names a bad path {path:?}: {why}")]
    BadLockPath {
        /// The path it names.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// What a bucket holds, which speaks no protocol of its own.
    #[error("{url}: {violation}")]
    At {
        /// The bucket's URL.
        url: String,
        /// What is wrong with what it holds.
        violation: Box<Violation>,
    },
}

/// What this side refuses to do, and why (serving: sent to the client as its error).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A request that changes the served repository, from a caller with read
    /// access only.
    #[error("{verb} needs write access")]
    NeedsWriteAccess {
        /// The request's verb, e.g. `"put"`.
        verb: &'static str,
    },
    /// A `DropContent` from a caller who is not the repository's admin.
    #[error("dropping data from this repository needs its admin: a token with access = \"admin\", or over ssh the account that owns the repository")]
    DropNeedsAdmin,
    /// An `UnlockPaths` with `force` from a caller who is not an admin.
    #[error("breaking other people's locks needs an admin: a token with access = \"admin\", or over ssh the account that owns the repository")]
    BreakingLocksNeedsAdmin,
    /// Locking or unlocking paths for a caller the server has no user name
    /// for.
    #[error("the server does not know who you are, so you cannot lock: give your token a user in its config (tokens: \"TOKEN\" = {{ access = \"write\", user = \"NAME\" }})")]
    UnknownUser,
    /// An upload holding an object a clone would refuse.
    #[error("refusing the upload: {0}")]
    Upload(RepoError),
    /// A push, an upload or a lock that changes a path outside the
    /// caller's write grant (the server's `write = [...]` for the token).
    #[error("refused: your token may not write {path} ({how}); nothing was changed (the server's admin grants paths with write = [...])")]
    OutsideWriteGrant {
        /// The path.
        path: String,
        /// How the request would change it.
        how: String,
    },
    /// A ref update the server's pre-receive hook refused (exited
    /// non-zero, or was killed at its timeout), with the first lines it
    /// printed, each said on a line of its own as git says them.
    #[error("refused by the server's pre-receive hook ({why}); nothing was changed{}", output.iter().map(|l| format!("\nremote: {l}")).collect::<String>())]
    PreReceive {
        /// How it ended: `it exited with status 1`, `it ran past its 60 s`.
        why: String,
        /// Its first lines of output (stderr, then stdout), bounded.
        output: Vec<String>,
    },
    /// A ref update review forbids: a protected branch moved other than
    /// by landing an approved review, or an approval sent by someone else.
    #[error("refused: {0}; nothing was changed")]
    Review(String),
    /// A ref update of a name outside `refs/heads/` and `refs/tags/`.
    #[error("refusing to update {name}: only branches and tags can be pushed")]
    NotBranchOrTag {
        /// The full ref name.
        name: String,
    },
    /// A ref update of the branch checked out in a served repository that has
    /// a working tree.
    #[error("refusing to update the checked-out branch {name} of a repository with a working tree; push to a bare repository or to another branch")]
    CheckedOutBranch {
        /// The full ref name.
        name: String,
    },
    /// A ref update to an object that is not a commit (nor, for a tag, an annotated tag).
    #[error("{id} is not a commit")]
    NotACommit {
        /// The object the ref was to hold.
        id: ObjectId,
    },
    /// A ref update to a commit the served repository does not have (it was
    /// not uploaded first).
    #[error("cannot set {name} to {id}: the commit was not received")]
    CommitNotReceived {
        /// The full ref name.
        name: String,
        /// The commit it was to hold.
        id: ObjectId,
    },
    /// A push from a partial replica of file versions whose data neither side holds.
    #[error("cannot push: the remote lacks the data of {count} file version(s) this partial replica does not hold either (e.g. {example}); fetch their data first, or push from a replica that has them")]
    DataHeldByNeither {
        /// How many file versions.
        count: usize,
        /// The path of one of them.
        example: String,
    },
    /// A drop without force while `numcopies` is 0.
    #[error("refusing to drop: numcopies is 0, so no other copy would be confirmed; only a drop by force drops without confirming")]
    NoCopiesToConfirm,
    /// A drop of what the slice does not keep (`--unwanted`) that also names
    /// paths, a revision or a remote.
    #[error("dropping what this replica's slice does not keep takes no paths, revision or remote")]
    UnwantedTakesNoSelection,
    /// A drop `--from` a remote that is this repository itself.
    #[error("refusing to drop: remote {remote} is this repository; drop here instead")]
    DropFromItself {
        /// The remote's name as given.
        remote: String,
    },
    /// A drop that names no revision in a repository with no commits yet.
    #[error("nothing to drop: there are no commits yet")]
    NoCommits,
    /// A drop of a file that has changes not committed (staged or not).
    #[error("{path} has uncommitted changes; commit or restore it before dropping")]
    UncommittedChanges {
        /// The file's path in the repository.
        path: String,
    },
    /// The first copies confirmed may be unlocked before the drop is done.
    #[error("refusing to drop: confirming the other copies took {took_secs} s, too close to their locks' {lock_secs} s; nothing was dropped, run the drop again")]
    LocksNearExpiry {
        /// How long confirming took, in seconds.
        took_secs: u64,
        /// How long each lock lasts, in seconds.
        lock_secs: u64,
    },
    /// An upload of a path that changed on the branch after the uploader was shown it.
    #[error("{path} changed on {branch} since you opened this page; reload it to see the new version, then upload again")]
    ChangedSinceSeen {
        /// The path in the repository.
        path: String,
        /// The branch's short name.
        branch: String,
    },
    /// An upload that lost the branch to other writers again and again.
    #[error("{branch} moved {tries} times while your upload was committed; nothing was committed, try again")]
    BranchKeptMoving {
        /// The branch's short name.
        branch: String,
        /// How many times it was tried.
        tries: usize,
    },
    /// A pull asked to fast-forward only, when both sides have commits the other lacks.
    #[error("not a fast-forward: {label} and this branch have each gone their own way; merge them, or pull without fast-forward only")]
    NotFastForward {
        /// The remote branch, as `origin/main`.
        label: String,
    },
}

/// Where the file system that ran out of space (or of quota) is mounted, if
/// that is what an error, or one of its causes, says went wrong: the one
/// fact that tells a person what to do about a failed write.
pub fn full_file_system<'a>(
    causes: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> Option<PathBuf> {
    let full = |io: &std::io::Error| {
        matches!(
            io.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        )
    };
    let (mut path, mut is_full) = (None, false);
    for cause in causes {
        let failed = cause
            .downcast_ref::<StoreError>()
            .and_then(StoreError::failed_file);
        let failed = failed.or_else(|| {
            cause
                .downcast_ref::<RepoError>()
                .and_then(RepoError::failed_file)
        });
        let failed = failed.or_else(|| {
            cause
                .downcast_ref::<SyncError>()
                .and_then(SyncError::failed_file)
        });
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
    use dmv_os::MetadataExt;
    let mut at = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(std::path::Path::new("/"))
        .to_path_buf();
    let Ok(dev) = std::fs::metadata(&at).map(|m| m.dev()) else {
        return at;
    };
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
            (protocol(Violation::TooManyRefs { listed: 300_000, limit: 262_144 }), "protocol error: the remote lists 300000 refs; at most 262144 are taken".into()),
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
            (protocol(Violation::BadLocationClaims("a tree not asked for")), "protocol error: the claims of a location log: a tree not asked for".into()),
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
            Refusal::Upload(RepoError::MalformedTree {
                tree: id,
                detail: "entry \"..\" is not a valid name or out of order".into(),
            }),
            Refusal::NotBranchOrTag {
                name: "refs/notes/x".into(),
            },
            Refusal::Review("main is protected".into()),
            Refusal::CheckedOutBranch {
                name: "refs/heads/main".into(),
            },
            Refusal::NotACommit { id },
            Refusal::CommitNotReceived {
                name: "refs/heads/main".into(),
                id,
            },
            Refusal::DataHeldByNeither {
                count: 1,
                example: "a.jpg".into(),
            },
            Refusal::NoCopiesToConfirm,
            Refusal::UnwantedTakesNoSelection,
            Refusal::DropFromItself {
                remote: "origin".into(),
            },
            Refusal::NoCommits,
            Refusal::UncommittedChanges {
                path: "a.jpg".into(),
            },
            Refusal::LocksNearExpiry {
                took_secs: 590,
                lock_secs: 600,
            },
            Refusal::NotFastForward {
                label: "origin/main".into(),
            },
        ];
        for r in refusals {
            let said = r.to_string();
            assert!(
                !said.contains("dmv ") && !said.contains('`') && !said.contains('\n'),
                "{said}"
            );
        }
    }
}
