//! The requests a client makes and the responses a server gives. Each is one
//! message frame; `Get` answers and `Put` bodies are object frames ending in
//! an `End` frame, `GetLocations` answers and `PutLocations` bodies locations
//! frames ending in one. Bump [`VERSION`] on any change to these enums or to
//! the frames.

use dmv_repo::store::{ChunkParams, ObjectId};
use dmv_repo::PathLock;
use serde::{Deserialize, Serialize};

pub const VERSION: u32 = 6;

/// Location records per locations frame (57 B each: ~0.9 MiB). A sender
/// reads its log a piece at a time and a receiver spools each piece to disk,
/// so a piece is what either side holds of a log of any size.
pub const LOCATIONS_PER_PIECE: usize = 16_384;

/// Above this many ids, `has` and `get` requests are split.
pub const MAX_IDS_PER_REQUEST: usize = 32 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Hello,
    ListRefs,
    WalkCommits,
    Has,
    Get,
    Put,
    UpdateRefs,
    Replica,
    GetLocations,
    PutLocations,
    LockContent,
    UnlockContent,
    DropContent,
    LockPaths,
    UnlockPaths,
    ListLocks,
}

impl Verb {
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
        }
    }

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
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }

    /// Verbs whose request is followed by frames up to an `End` frame.
    pub fn has_body(self) -> bool {
        matches!(self, Verb::Put | Verb::PutLocations)
    }

    /// Verbs that change the served repository need write access.
    pub fn writes(self) -> bool {
        matches!(self, Verb::Put | Verb::UpdateRefs | Verb::PutLocations | Verb::LockContent | Verb::UnlockContent | Verb::DropContent | Verb::LockPaths | Verb::UnlockPaths)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    Hello {
        version: u32,
    },
    ListRefs,
    /// Commits reachable from `wants` and not from `haves` (haves the server lacks are ignored).
    WalkCommits {
        wants: Vec<ObjectId>,
        haves: Vec<ObjectId>,
    },
    /// Which of these objects the server has (with all they reach).
    Has {
        ids: Vec<ObjectId>,
    },
    /// The objects, in order; with `chunks: false` a chunk is answered by a stub.
    Get {
        ids: Vec<ObjectId>,
        chunks: bool,
    },
    /// Followed by object frames, children before parents, and an `End` frame.
    Put,
    /// All or nothing; each update compares-and-swaps on `old`.
    UpdateRefs {
        updates: Vec<WireRefUpdate>,
        who: String,
        message: String,
    },
    /// The served replica's id and name.
    Replica,
    /// The served replica's location log, answered by locations frames,
    /// pieces of it in key order (the names on the first), and an `End` frame.
    GetLocations,
    /// Followed by locations frames, pieces of one log in key order, and an
    /// `End` frame; merged into the served replica's log once all came.
    PutLocations,
    /// Confirms which of these files' data (content ids) is all here, and
    /// keeps what it confirms from being dropped for `seconds` or until unlocked.
    LockContent {
        ids: Vec<ObjectId>,
        seconds: u64,
    },
    UnlockContent {
        lock: String,
    },
    /// Frees these files' data on the served replica, unless another replica's drop holds a lock on it.
    DropContent {
        ids: Vec<ObjectId>,
    },
    /// Locks these paths for the caller (all or none), taken from the named replica.
    LockPaths {
        paths: Vec<String>,
        replica: String,
    },
    /// Releases these paths (all or none); `force` breaks others' locks (admins only).
    UnlockPaths {
        paths: Vec<String>,
        force: bool,
    },
    /// Every lock, and who the server takes the caller for.
    ListLocks,
}

impl Request {
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
            Request::PutLocations => Verb::PutLocations,
            Request::LockContent { .. } => Verb::LockContent,
            Request::UnlockContent { .. } => Verb::UnlockContent,
            Request::DropContent { .. } => Verb::DropContent,
            Request::LockPaths { .. } => Verb::LockPaths,
            Request::UnlockPaths { .. } => Verb::UnlockPaths,
            Request::ListLocks => Verb::ListLocks,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRefUpdate {
    pub name: String,
    /// `None`: the ref must not exist.
    pub old: Option<ObjectId>,
    /// `None`: delete.
    pub new: Option<ObjectId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    Hello {
        version: u32,
        chunking: ChunkParams,
        bare: bool,
        /// The server may lack some file data (it has a slice, or dropped some).
        partial: bool,
    },
    Refs {
        head: Option<String>,
        refs: Vec<(String, ObjectId)>,
    },
    Commits {
        ids: Vec<ObjectId>,
    },
    Has {
        present: Vec<bool>,
    },
    Stored {
        objects: u64,
        bytes: u64,
    },
    RefsUpdated,
    /// A compare-and-swap lost: the ref is not at the value the client expected.
    Rejected {
        name: String,
        found: Option<ObjectId>,
    },
    Error {
        message: String,
    },
    Replica {
        id: [u8; 16],
        name: String,
    },
    LocationsMerged,
    ContentLocked {
        lock: String,
        held: Vec<bool>,
    },
    Unlocked,
    /// `locked`: ids another replica's drop holds (nothing was dropped then).
    ContentDropped {
        freed_bytes: u64,
        locked: Vec<ObjectId>,
    },
    /// Path locks: those taken, released or held (by request), and the
    /// caller's name there (None: the server does not know it).
    PathLocks {
        you: Option<String>,
        locks: Vec<PathLock>,
    },
}
