//! What a remote is to the code that talks to it: the [`Remote`] trait every
//! transport implements (a DMV server over a pipe or HTTP, an object store,
//! memory for tests), and the capabilities only some have ([`KeepsCopies`],
//! [`KeepsPathLocks`]), with what they answer.

use dmv_repo::store::{ChunkParams, ObjectId, StoredObject};
use dmv_repo::{
    LocationPages, LocationRecord, PathLock, ReplicaCards, ReplicaId, Tally, TreeClaim,
};

use crate::protocol::WireRefUpdate;
use crate::{SyncError, SyncResult};

/// Hands each object of an upload to the remote (children before parents).
pub type ObjectProducer<'a> =
    &'a mut (dyn FnMut(&mut dyn FnMut(&StoredObject) -> SyncResult<()>) -> SyncResult<()> + Send);

/// Takes a piece of a location log: its records in key order, and the replicas' names it carries.
pub type LocationPageSink<'a> =
    dyn FnMut(&mut dyn Iterator<Item = LocationRecord>, ReplicaCards) -> SyncResult<()> + 'a;

/// A remote as the transfer code sees it, whatever carries the requests: a
/// DMV server at the other end of a pipe or HTTP, or an object store with
/// nothing of DMV running there.
pub trait Remote: Send {
    /// The remote's URL, for messages and the location log.
    fn url(&self) -> &str;
    /// The chunking every replica of this history must use.
    fn chunking(&self) -> ChunkParams;
    /// Whether the remote has no working tree (so any branch may be pushed).
    fn bare(&self) -> bool;
    /// Whether the remote keeps what it holds encrypted: a clone of it
    /// keeps it so, and refuses to send in the clear to that remote later.
    fn encrypted(&self) -> bool {
        false
    }
    /// Whether the remote may lack some files' data (a partial replica): a
    /// fetch then asks which it holds before asking for them.
    fn may_lack_data(&self) -> bool {
        false
    }
    /// Branches and tags, and the branch HEAD names.
    fn list_refs(&mut self) -> SyncResult<RemoteRefs>;
    /// Commits reachable from `wants` and not from `haves`. A remote that
    /// cannot walk history cheaply may answer with `wants` alone: the fetch
    /// explores parents like any other reference and stops at what it has.
    fn walk_commits(
        &mut self,
        wants: Vec<ObjectId>,
        haves: Vec<ObjectId>,
    ) -> SyncResult<Vec<ObjectId>>;
    /// Which of these objects the remote has (with everything they reach).
    fn has(&mut self, ids: &[ObjectId]) -> SyncResult<Vec<bool>>;
    /// The objects (chunks as stubs unless `chunks`), each once, in any order.
    fn get(
        &mut self,
        ids: &[ObjectId],
        chunks: bool,
        sink: &mut dyn FnMut(Received) -> SyncResult<()>,
    ) -> SyncResult<()>;
    /// How many chunks of the default size a fetch asks for per `get`
    /// (4096: one answer of about 256 MiB, so the pause between two
    /// answers, while the server starts reading the disk again, is rare);
    /// of smaller chunks as many bytes' worth (receive.rs).
    fn chunks_per_get(&self) -> usize {
        4096
    }
    /// Uploads what `objects` produces; returns (objects, bytes) stored.
    /// `sent` counts the bytes that left for the remote.
    fn put(&mut self, objects: ObjectProducer<'_>, sent: &Tally<'_>) -> SyncResult<(u64, u64)>;
    /// All or nothing; each update compares-and-swaps on its `old` value.
    /// An empty list checks write access.
    fn update_refs(
        &mut self,
        updates: Vec<WireRefUpdate>,
        who: &str,
        message: &str,
    ) -> SyncResult<()>;
    /// The remote replica's id and name (a remote that stores none: one derived from its URL).
    fn replica(&mut self) -> SyncResult<(ReplicaId, String)> {
        Ok((ReplicaId::derived(self.url()), self.url().to_string()))
    }
    /// The remote's location log, handed to `page` in pieces, each its
    /// records in key order and the names it carries (one that keeps none: no piece).
    fn get_locations(&mut self, _page: &mut LocationPageSink<'_>) -> SyncResult<()> {
        Ok(())
    }
    /// [`Remote::get_locations`], except that the log's claims of `trees`
    /// (trees this replica reads whole, see
    /// [`Copies::trees_read_for_claims`](dmv_repo::Copies::trees_read_for_claims))
    /// may be returned as they are, checked, the pieces then leaving out the
    /// records they stand for. One that sends none: the whole log, no claims.
    fn get_locations_claiming(
        &mut self,
        _trees: &[ObjectId],
        page: &mut LocationPageSink<'_>,
    ) -> SyncResult<Vec<TreeClaim>> {
        self.get_locations(page).map(|()| Vec::new())
    }
    /// Merges `log`, as replica `from` knows it, into the remote's (one that keeps none: nothing happens).
    fn put_locations(&mut self, _from: ReplicaId, _log: LocationPages) -> SyncResult<()> {
        Ok(())
    }
    /// [`Remote::put_locations`] of pages whose claims
    /// ([`LocationPages::claims`]) stand for records they leave out. False
    /// when the remote took none of it (it takes no claims, or not of
    /// those trees): the caller sends the records instead.
    fn put_location_claims(&mut self, _from: ReplicaId, _log: LocationPages) -> SyncResult<bool> {
        Ok(false)
    }
    /// Whether [`Remote::put_locations`] merges what it is given into what
    /// it holds (a server), rather than keeping it as the sender's whole log
    /// (an object store, one log object per replica).
    fn takes_pieces_of_logs(&self) -> bool {
        true
    }
    /// Waits for the remote's refs to change from those whose digest
    /// (see [`crate::protocol::refs_digest`]) it answered last (`since`;
    /// None: answers at once), for about `remote.timeout` at most, and
    /// answers the digest now. None: it cannot wait (only a DMV server
    /// over HTTP holds such a request open), and the caller polls.
    fn wait_for_refs(&mut self, _since: Option<[u8; 32]>) -> SyncResult<Option<[u8; 32]>> {
        Ok(None)
    }
    /// What a replica that holds copies does for another's drop; a remote
    /// that cannot answers `Unsupported`.
    fn copies(&mut self) -> SyncResult<&mut dyn KeepsCopies> {
        Err(SyncError::Unsupported {
            url: self.url().to_string(),
            what: "confirming, locking and dropping copies",
        })
    }
    /// Path locks kept there; a remote that keeps none answers `Unsupported`.
    fn path_locks(&mut self) -> SyncResult<&mut dyn KeepsPathLocks> {
        Err(SyncError::Unsupported {
            url: self.url().to_string(),
            what: "locks",
        })
    }
}

/// A replica that holds copies, as another replica's drop asks it: to
/// confirm and lock its copies for a while, and to drop its own.
pub trait KeepsCopies {
    /// Confirms, per file content id, that all its data is there, and locks
    /// what it confirms against the remote's own drop until unlocked or
    /// `seconds` pass. Returns the lock's name and the confirmations.
    fn lock_content(&mut self, ids: &[ObjectId], seconds: u64) -> SyncResult<(String, Vec<bool>)>;
    /// Releases a lock [`lock_content`](Self::lock_content) took, before it
    /// expires.
    fn unlock_content(&mut self, lock: &str) -> SyncResult<()>;
    /// Frees these files' data there (the caller checked the other copies),
    /// and finishes what a drop there that was cut short left (all that
    /// no ids ask for). Returns the bytes freed and the ids another drop
    /// had locked (then nothing was freed).
    fn drop_content(&mut self, ids: &[ObjectId]) -> SyncResult<(u64, Vec<ObjectId>)>;
}

/// A replica that keeps the path locks of a repository.
pub trait KeepsPathLocks {
    /// Locks these paths for us, all or none, noting `replica` as where
    /// from. `me` is our name where the remote cannot tell who we are (an
    /// object store); a server names us itself. Returns the locks taken.
    fn lock_paths(&mut self, paths: &[String], replica: &str, me: &str) -> SyncResult<PathLocks>;
    /// Releases these paths, all or none; `force` breaks other people's. Returns what was released.
    fn unlock_paths(&mut self, paths: &[String], force: bool, me: &str) -> SyncResult<PathLocks>;
    /// Every lock there, and who we are there.
    fn list_locks(&mut self, me: &str) -> SyncResult<PathLocks>;
}

/// Path locks a remote answered with, and the name it knows us by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathLocks {
    /// The name the remote knows us by (`None`: it does not know us, so we
    /// cannot lock).
    pub you: Option<String>,
    /// The locks taken, released or held, by request.
    pub locks: Vec<PathLock>,
}

/// A remote's branches and tags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteRefs {
    /// The branch the remote's HEAD names (None: detached or unknown).
    pub head: Option<String>,
    /// Every branch and tag, by full name (`refs/heads/…`, `refs/tags/…`),
    /// with its commit.
    pub refs: Vec<(String, ObjectId)>,
}

/// What arrives for a requested id.
pub enum Received {
    /// The object, as the remote stores it (not yet verified).
    Object(StoredObject),
    /// A chunk, not sent (its data was not asked for): its id and size.
    ChunkStub {
        /// The chunk's id.
        id: ObjectId,
        /// Its size, uncompressed, in bytes.
        raw_len: u32,
    },
}
