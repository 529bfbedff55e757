//! The requests a client makes and the responses a server gives. Each is one
//! message frame; `Get` answers and `Put` bodies are object frames ending in
//! an `End` frame, `GetLocations` answers and `PutLocations` bodies locations
//! frames ending in one. Bump [`VERSION`] on any change to these enums or to
//! the frames that an older side would misread. A request added at the end
//! needs none: an older server refuses its verb (HTTP 404, or an error
//! frame) and the client does without it (`WaitRefs`: the watcher polls).

use dmv_repo::store::{ChunkParams, ObjectId};
use dmv_repo::PathLock;
use serde::{Deserialize, Serialize};

/// The protocol version this side speaks; both sides of a connection must
/// speak the same one (`Hello`).
pub const VERSION: u32 = 7;

/// The HTTP header with which a server refuses every request of the
/// protocol for a repository it keeps sealed (encrypted end to end, which
/// it cannot read), naming where under the repository's URL its clients
/// read and write the objects themselves.
pub const SEALED_HUB_HEADER: &str = "dmv-sealed-objects";

/// Location records per locations frame (57 B each: ~0.9 MiB). A sender
/// reads its log a piece at a time and a receiver spools each piece to disk,
/// so a piece is what either side holds of a log of any size.
pub const LOCATIONS_PER_PIECE: usize = 16_384;

/// Above this many ids, `has` and `get` requests are split.
pub const MAX_IDS_PER_REQUEST: usize = 32 * 1024;

/// The most refs a `Refs` answer may list. A frame of 64 MiB holds about
/// two million short ones, and a clone holds about 1.1 KB a ref (250,000
/// refs: 270 MB), so a hostile server could make a clone take gigabytes;
/// at this bound a clone of a repository of as many refs takes about 300 MB.
pub const MAX_REFS_PER_ANSWER: usize = 1 << 18;

/// The most trees a `GetLocationClaims` may name: a log claims at most
/// [`dmv_repo::MAX_CLAIMED_TREES`], and a client names the trees it would claim.
pub const MAX_TREES_PER_CLAIMS_REQUEST: usize = 16;

/// The longest a server holds a `WaitRefs` before answering: under the
/// 60 s many proxies allow an answer that sends nothing.
pub const MAX_WAIT_SECONDS: u32 = 55;

/// The kind of a request, without its arguments: what the HTTP URL names
/// (`POST /NAME/dmv/VERB`), so a server can check access before it reads the
/// body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Opens a connection: the versions are compared.
    Hello,
    /// The branches and tags, and what HEAD names.
    ListRefs,
    /// The commits between wants and haves.
    WalkCommits,
    /// Which of some objects the server has.
    Has,
    /// Some objects.
    Get,
    /// Uploads objects.
    Put,
    /// Moves refs.
    UpdateRefs,
    /// The served replica's id and name.
    Replica,
    /// The served replica's location log.
    GetLocations,
    /// Merges location records into the served replica's log.
    PutLocations,
    /// Confirms and locks files' data against a drop.
    LockContent,
    /// Releases a `LockContent` lock.
    UnlockContent,
    /// Frees files' data there.
    DropContent,
    /// Locks paths.
    LockPaths,
    /// Releases path locks.
    UnlockPaths,
    /// Lists path locks.
    ListLocks,
    /// Answers once the branches, tags or HEAD change (a long poll).
    WaitRefs,
    /// The served replica's location log, with its claims of trees the
    /// client reads given as claims.
    GetLocationClaims,
    /// Merges a log into the served replica's, with claims of trees the
    /// server reads given as claims.
    PutLocationClaims,
}

impl Verb {
    /// The name in URLs and messages, e.g. `"list-refs"`.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Hello => "hello",
            Verb::ListRefs => "list-refs",
            Verb::WalkCommits => "walk-commits",
            Verb::Has => "has",
            Verb::Get => "get",
            Verb::Put => "put",
            Verb::UpdateRefs => "update-refs",
            Verb::Replica => "replica",
            Verb::GetLocations => "get-locations",
            Verb::PutLocations => "put-locations",
            Verb::LockContent => "lock-content",
            Verb::UnlockContent => "unlock-content",
            Verb::DropContent => "drop-content",
            Verb::LockPaths => "lock",
            Verb::UnlockPaths => "unlock",
            Verb::ListLocks => "list-locks",
            Verb::WaitRefs => "wait-refs",
            Verb::GetLocationClaims => "get-location-claims",
            Verb::PutLocationClaims => "put-location-claims",
        }
    }

    /// The verb of a [`name`](Verb::name) (`None`: no verb has it).
    pub fn from_name(name: &str) -> Option<Verb> {
        [
            Verb::Hello,
            Verb::ListRefs,
            Verb::WalkCommits,
            Verb::Has,
            Verb::Get,
            Verb::Put,
            Verb::UpdateRefs,
            Verb::Replica,
            Verb::GetLocations,
            Verb::PutLocations,
            Verb::LockContent,
            Verb::UnlockContent,
            Verb::DropContent,
            Verb::LockPaths,
            Verb::UnlockPaths,
            Verb::ListLocks,
            Verb::WaitRefs,
            Verb::GetLocationClaims,
            Verb::PutLocationClaims,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }

    /// Verbs whose request is followed by frames up to an `End` frame.
    pub fn has_body(self) -> bool {
        matches!(
            self,
            Verb::Put | Verb::PutLocations | Verb::PutLocationClaims
        )
    }

    /// Verbs that change the served repository need write access.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Verb::Put
                | Verb::UpdateRefs
                | Verb::PutLocations
                | Verb::PutLocationClaims
                | Verb::LockContent
                | Verb::UnlockContent
                | Verb::DropContent
                | Verb::LockPaths
                | Verb::UnlockPaths
        )
    }
}

/// What a client asks, one message frame each (docs/protocol.md, "Requests").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Opens a connection; the server answers with its own version whatever
    /// the client's, and the client stops if they differ.
    Hello {
        /// The protocol version the client speaks ([`VERSION`]).
        version: u32,
    },
    /// Every branch and tag, answered by [`Response::Refs`].
    ListRefs,
    /// Commits reachable from `wants` and not from `haves` (haves the server lacks are ignored).
    WalkCommits {
        /// The commits to start from (the tips the client lacks).
        wants: Vec<ObjectId>,
        /// The commits the client has (its ref tips): the walk stops at them.
        haves: Vec<ObjectId>,
    },
    /// Which of these objects the server has (with all they reach).
    Has {
        /// At most [`MAX_IDS_PER_REQUEST`]; a partial replica says yes to a file's
        /// content id only when all its data is there.
        ids: Vec<ObjectId>,
    },
    /// The objects, in order; with `chunks: false` a chunk is answered by a stub.
    Get {
        /// At most [`MAX_IDS_PER_REQUEST`], answered in this order.
        ids: Vec<ObjectId>,
        /// `false`: answer a chunk with a chunk stub (its id and size) instead.
        chunks: bool,
    },
    /// Followed by object frames, children before parents, and an `End` frame.
    Put,
    /// All or nothing; each update compares-and-swaps on `old`.
    UpdateRefs {
        /// The refs to move; none changes nothing, and tells the client whether
        /// it may write.
        updates: Vec<WireRefUpdate>,
        /// Who moves them, for the served repository's reflog.
        who: String,
        /// Why, for the reflog, e.g. "push".
        message: String,
    },
    /// The served replica's id and name.
    Replica,
    /// The served replica's location log, answered by locations frames,
    /// pieces of it in key order (the names on the first), and an `End` frame.
    GetLocations,
    /// Followed by locations frames, pieces of one log in key order, and an
    /// `End` frame; merged into the served replica's log once all came.
    PutLocations {
        /// The replica whose log (or records) these are: a server in front
        /// of a bucket keeps each replica's log apart, as a client writing
        /// to the bucket itself does.
        from: [u8; 16],
    },
    /// Confirms which of these files' data (content ids) is all here, and
    /// keeps what it confirms from being dropped for `seconds` or until unlocked.
    LockContent {
        /// Files' content ids.
        ids: Vec<ObjectId>,
        /// How long the lock lasts (the server allows at most an hour).
        seconds: u64,
    },
    /// Releases a lock `LockContent` took before it expires.
    UnlockContent {
        /// The lock's name, from [`Response::ContentLocked`].
        lock: String,
    },
    /// Frees these files' data on the served replica, unless another replica's drop holds a lock on it.
    DropContent {
        /// Files' content ids.
        ids: Vec<ObjectId>,
    },
    /// Locks these paths for the caller (all or none), taken from the named replica.
    LockPaths {
        /// Paths in the repository, `/`-separated.
        paths: Vec<String>,
        /// The name of the replica the caller locks from.
        replica: String,
    },
    /// Releases these paths (all or none); `force` breaks others' locks (admins only).
    UnlockPaths {
        /// Paths in the repository, `/`-separated.
        paths: Vec<String>,
        /// Release them whoever holds them.
        force: bool,
    },
    /// Every lock, and who the server takes the caller for.
    ListLocks,
    /// Answered by [`Response::RefsDigest`] once the digest of what
    /// `ListRefs` would answer differs from `since`, or after `seconds`
    /// (at most [`MAX_WAIT_SECONDS`]); a server that cannot wait (over ssh
    /// or stdio, or holding too many waits of this caller) answers at once.
    WaitRefs {
        /// The digest last answered (zeros: none yet, answered at once).
        since: [u8; 32],
        /// How long the client waits at most.
        seconds: u32,
    },
    /// As `GetLocations`, except that the served log's claims of these trees
    /// (which the client reads whole: its HEAD's and ref tips') are answered
    /// as they are, in a [`Response::LocationClaims`] message before the
    /// locations frames, which then leave out the records the claims stand
    /// for: 56 bytes a tree and replica where the records take 57 bytes a
    /// file. At most [`MAX_TREES_PER_CLAIMS_REQUEST`] trees.
    GetLocationClaims {
        /// Root tree ids.
        trees: Vec<ObjectId>,
    },
    /// As `PutLocations`, except that the log's claims of trees the server
    /// reads whole (its HEAD's and ref tips') come as they are, and the
    /// pieces leave out the records they stand for: a clone's log of
    /// 100,000 files held by three replicas is three claims, where its
    /// records were 17 MB. The server refuses claims of any other tree,
    /// and the client then sends the records.
    PutLocationClaims {
        /// As `PutLocations`' `from`.
        from: [u8; 16],
        /// Sorted by tree and replica, each once; at most 256 of 8 trees.
        claims: Vec<WireClaim>,
    },
}

impl Request {
    /// Which request this is.
    pub fn verb(&self) -> Verb {
        match self {
            Request::Hello { .. } => Verb::Hello,
            Request::ListRefs => Verb::ListRefs,
            Request::WalkCommits { .. } => Verb::WalkCommits,
            Request::Has { .. } => Verb::Has,
            Request::Get { .. } => Verb::Get,
            Request::Put => Verb::Put,
            Request::UpdateRefs { .. } => Verb::UpdateRefs,
            Request::Replica => Verb::Replica,
            Request::GetLocations => Verb::GetLocations,
            Request::PutLocations { .. } => Verb::PutLocations,
            Request::LockContent { .. } => Verb::LockContent,
            Request::UnlockContent { .. } => Verb::UnlockContent,
            Request::DropContent { .. } => Verb::DropContent,
            Request::LockPaths { .. } => Verb::LockPaths,
            Request::UnlockPaths { .. } => Verb::UnlockPaths,
            Request::ListLocks => Verb::ListLocks,
            Request::WaitRefs { .. } => Verb::WaitRefs,
            Request::GetLocationClaims { .. } => Verb::GetLocationClaims,
            Request::PutLocationClaims { .. } => Verb::PutLocationClaims,
        }
    }
}

/// One ref an `UpdateRefs` moves, compared-and-swapped on its old value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRefUpdate {
    /// The full ref name, e.g. `refs/heads/main`.
    pub name: String,
    /// `None`: the ref must not exist.
    pub old: Option<ObjectId>,
    /// `None`: delete.
    pub new: Option<ObjectId>,
}

/// What a server answers, one message frame each; any request may be
/// answered by [`Response::Error`] instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// Answers `Hello`.
    Hello {
        /// The protocol version the server speaks.
        version: u32,
        /// The served repository's chunking: a clone takes it, so the same file
        /// cuts into the same chunks on both sides.
        chunking: ChunkParams,
        /// The served repository has no working tree.
        bare: bool,
        /// The server may lack some file data (it has a slice, or dropped some).
        partial: bool,
    },
    /// Answers `ListRefs`.
    Refs {
        /// The branch HEAD names, e.g. `refs/heads/main` (`None`: HEAD is
        /// detached).
        head: Option<String>,
        /// Every `refs/heads/*` and `refs/tags/*`, by full name, with its commit.
        refs: Vec<(String, ObjectId)>,
    },
    /// Answers `WalkCommits`.
    Commits {
        /// The commits reachable from the wants and not from the haves.
        ids: Vec<ObjectId>,
    },
    /// Answers `Has`.
    Has {
        /// One per id asked, in order: whether the server has it.
        present: Vec<bool>,
    },
    /// Answers `Put` once its `End` frame came and the objects are stored.
    Stored {
        /// How many objects were new to the server.
        objects: u64,
        /// The bytes of the object payloads received (as sent, compressed or not).
        bytes: u64,
    },
    /// Answers `UpdateRefs`: every ref moved.
    RefsUpdated,
    /// A compare-and-swap lost: the ref is not at the value the client expected.
    Rejected {
        /// The full ref name of the update that lost.
        name: String,
        /// What the ref holds now (`None`: it does not exist).
        found: Option<ObjectId>,
    },
    /// The request failed or was refused; nothing else comes for it.
    Error {
        /// Why, in one line for a person.
        message: String,
    },
    /// Answers `Replica`.
    Replica {
        /// The served replica's id (`.dmv/replica-id`; one derived from its path
        /// when it is served read-only and has none).
        id: [u8; 16],
        /// The name of its directory.
        name: String,
    },
    /// Answers `PutLocations`: the pieces were merged into the served
    /// replica's log.
    LocationsMerged,
    /// Answers `LockContent`.
    ContentLocked {
        /// The lock's name, for `UnlockContent`.
        lock: String,
        /// One per id asked, in order: whether all that file's data is there (and
        /// now locked).
        held: Vec<bool>,
    },
    /// Answers `UnlockContent`.
    Unlocked,
    /// `locked`: ids another replica's drop holds (nothing was dropped then).
    ContentDropped {
        /// The bytes freed on the served replica (0 when `locked` is not empty).
        freed_bytes: u64,
        /// The ids another replica's drop holds locked (empty: the drop was done).
        locked: Vec<ObjectId>,
    },
    /// Path locks: those taken, released or held (by request), and the
    /// caller's name there (None: the server does not know it).
    PathLocks {
        /// The caller's user name there (`None`: the server does not know it).
        you: Option<String>,
        /// The locks taken, released or held, by request.
        locks: Vec<PathLock>,
    },
    /// Answers `WaitRefs`.
    RefsDigest {
        /// See [`refs_digest`].
        digest: [u8; 32],
    },
    /// Begins the answer to `GetLocationClaims`: the served log's claims of
    /// the trees asked for, sorted by tree and replica, each once (at most
    /// [`dmv_repo::MAX_CLAIMS`]). Locations frames and an `End` frame follow.
    LocationClaims {
        /// The claims.
        claims: Vec<WireClaim>,
    },
}

impl WireClaim {
    /// A log's claim as sent.
    pub fn of(claim: &dmv_repo::TreeClaim) -> WireClaim {
        WireClaim {
            tree: claim.tree,
            replica: claim.replica.0,
            time_ns: claim.time_ns,
        }
    }

    /// The claim received.
    pub fn claim(&self) -> dmv_repo::TreeClaim {
        dmv_repo::TreeClaim {
            tree: self.tree,
            replica: dmv_repo::ReplicaId(self.replica),
            time_ns: self.time_ns,
        }
    }
}

/// A claim of a location log: `replica` held the data of every file of
/// `tree` as of `time_ns` (see [`dmv_repo::TreeClaim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireClaim {
    /// The root tree's id.
    pub tree: ObjectId,
    /// The replica's id.
    pub replica: [u8; 16],
    /// Nanoseconds since the epoch.
    pub time_ns: u64,
}

/// What `WaitRefs` compares: the BLAKE3 of HEAD's branch and every ref
/// `ListRefs` answers with, each name and id (names end with a zero byte).
/// Never all zeros, which `since` uses for "none yet".
pub fn refs_digest(head: Option<&str>, refs: &[(String, ObjectId)]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(head.unwrap_or("").as_bytes()).update(&[0]);
    for (name, id) in refs {
        hasher.update(name.as_bytes()).update(&[0]).update(&id.0);
    }
    *hasher.finalize().as_bytes()
}
