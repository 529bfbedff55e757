//! An object-storage remote (`s3://bucket/prefix`) as a [`Remote`]: the
//! same negotiation as with a DMV server, answered from the bucket's pack
//! indexes (mirrored locally) and ranged GETs, with refs moved by
//! compare-and-swap on the bucket's ref table.

use std::collections::HashSet;

use dmv_bucket::{Bucket, BucketError, RefChange, RefUpdateOutcome};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind};
use dmv_repo::{
    check_lock_path, release_locks, take_locks, LocationLog, LocationPages, LockStore, PathLock,
    ReplicaId, Tally,
};

use crate::protocol::WireRefUpdate;
use crate::transport::remote::{
    KeepsCopies, KeepsPathLocks, LocationPageSink, ObjectProducer, PathLocks, Received, Remote,
    RemoteRefs,
};
use crate::TransportError;
use crate::{SyncError, SyncResult, Violation};

/// Chunks per `get`: the bucket streams them in bounded ranges whatever the
/// count, and fewer calls keep the downloads overlapping.
const CHUNKS_PER_GET: usize = 16 * 1024;

/// A repository in an S3-compatible bucket as a [`Remote`] (and, behind `dmv serve`, answering requests: relay.rs).
pub struct BucketRemote {
    bucket: Bucket,
}

impl BucketRemote {
    /// The kind of object `id` is in the bucket, and its length as content (None: not there).
    pub(crate) fn kind_and_len(&self, id: &ObjectId) -> SyncResult<Option<(ObjectKind, u32)>> {
        Ok(self
            .bucket
            .locate(id)?
            .map(|loc| (loc.entry.kind, loc.entry.raw_len)))
    }

    /// Merges `log` into the log replica `from` keeps in the bucket, by
    /// compare-and-swap (a server in front of the bucket takes pieces of
    /// logs, where a client writing here itself sends its whole log).
    pub(crate) fn merge_locations(&mut self, from: ReplicaId, log: &LocationLog) -> SyncResult<()> {
        let url = self.bucket.url().to_string();
        let mut merge = |stored: Option<&[u8]>| -> dmv_bucket::BucketResult<Vec<u8>> {
            let mut merged = match stored {
                Some(bytes) => LocationLog::decode(bytes).map_err(|e| BucketError::Damaged {
                    url: url.clone(),
                    detail: e.to_string(),
                })?,
                None => LocationLog::default(),
            };
            merged.merge(log);
            Ok(merged.encode())
        };
        Ok(self
            .bucket
            .merge_location_log(&from.to_string(), &mut merge)?)
    }

    /// Opens the repository in the bucket at `url` (s3://bucket[/prefix]),
    /// its pack indexes mirrored under `cache_dir` (None: a temporary directory).
    pub fn open(
        url: &str,
        options: &dmv_bucket::BucketOptions,
        cache_dir: Option<&std::path::Path>,
    ) -> SyncResult<BucketRemote> {
        Ok(BucketRemote::new(Bucket::open(
            url, options, cache_dir, None,
        )?))
    }

    /// The repository in `bucket` as a remote.
    pub fn new(bucket: Bucket) -> BucketRemote {
        BucketRemote { bucket }
    }

    /// The bucket itself, for what is no remote's business (the uploads
    /// `dmv serve` stages there).
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }
}

impl From<BucketError> for SyncError {
    fn from(e: BucketError) -> SyncError {
        match e {
            BucketError::NotARepository { url, detail } => {
                SyncError::Transport(TransportError::NotARepository { url, detail })
            }
            BucketError::Auth { url, detail } => {
                SyncError::Transport(TransportError::Auth { url, detail })
            }
            BucketError::Unreachable { url, detail } => {
                SyncError::Transport(TransportError::Unreachable { url, detail })
            }
            BucketError::Store(e) => SyncError::Store(e),
            other => SyncError::Bucket(other),
        }
    }
}

impl Remote for BucketRemote {
    fn url(&self) -> &str {
        self.bucket.url()
    }

    fn chunking(&self) -> ChunkParams {
        self.bucket.chunking()
    }

    fn bare(&self) -> bool {
        true
    }

    fn encrypted(&self) -> bool {
        self.bucket.is_encrypted()
    }

    /// A drop may have freed data there; asking is a lookup in the index already read.
    fn may_lack_data(&self) -> bool {
        true
    }

    fn list_refs(&mut self) -> SyncResult<RemoteRefs> {
        let table = self.bucket.read_refs()?.table;
        // A pack is published before the refs that name its objects: listed
        // after the refs (not only when the bucket was opened, before a push
        // that landed since), every object they name is found.
        self.bucket.refresh()?;
        Ok(RemoteRefs {
            head: table.head,
            refs: table.refs.into_iter().collect(),
        })
    }

    fn walk_commits(
        &mut self,
        wants: Vec<ObjectId>,
        _haves: Vec<ObjectId>,
    ) -> SyncResult<Vec<ObjectId>> {
        Ok(wants)
    }

    fn has(&mut self, ids: &[ObjectId]) -> SyncResult<Vec<bool>> {
        ids.iter()
            .map(|id| Ok(self.bucket.locate(id)?.is_some()))
            .collect()
    }

    fn chunks_per_get(&self) -> usize {
        CHUNKS_PER_GET
    }

    fn get(
        &mut self,
        ids: &[ObjectId],
        chunks: bool,
        sink: &mut dyn FnMut(Received) -> SyncResult<()>,
    ) -> SyncResult<()> {
        let mut wanted = Vec::with_capacity(ids.len());
        let mut owed: HashSet<ObjectId> = HashSet::with_capacity(ids.len());
        for id in ids {
            let loc = self
                .bucket
                .locate(id)?
                .ok_or_else(|| SyncError::MissingObject {
                    url: self.bucket.url().to_string(),
                    id: *id,
                })?;
            if !chunks && loc.entry.kind == ObjectKind::Chunk {
                sink(Received::ChunkStub {
                    id: *id,
                    raw_len: loc.entry.raw_len,
                })?;
            } else if owed.insert(*id) {
                wanted.push(loc);
            }
        }
        let url = self.bucket.url().to_string();
        self.bucket.read_objects(wanted, &mut |obj| {
            if !owed.remove(&obj.id) {
                return Err(violation_at(&url, Violation::NotAskedFor { id: obj.id }));
            }
            sink(Received::Object(obj))
        })?;
        // Every object asked for arrived, or the caller would trust a gap.
        match owed.iter().next() {
            Some(id) => Err(SyncError::MissingObject { url, id: *id }),
            None => Ok(()),
        }
    }

    fn put(&mut self, objects: ObjectProducer<'_>, sent: &Tally<'_>) -> SyncResult<(u64, u64)> {
        self.bucket.put_objects(objects, sent)
    }

    fn update_refs(
        &mut self,
        updates: Vec<WireRefUpdate>,
        _who: &str,
        _message: &str,
    ) -> SyncResult<()> {
        for u in &updates {
            dmv_repo::validate_ref_name(&u.name)?;
        }
        let changes: Vec<RefChange> = updates
            .into_iter()
            .map(|u| RefChange {
                name: u.name,
                old: u.old,
                new: u.new,
            })
            .collect();
        match self.bucket.update_refs(&changes)? {
            RefUpdateOutcome::Updated => Ok(()),
            RefUpdateOutcome::Rejected { name, found } => Err(SyncError::Rejected { name, found }),
        }
    }

    fn replica(&mut self) -> SyncResult<(ReplicaId, String)> {
        let id = ReplicaId::parse(self.bucket.id())
            .unwrap_or_else(|| ReplicaId::derived(self.bucket.url()));
        Ok((id, self.bucket.url().to_string()))
    }

    /// Each replica's log in the bucket, one piece each.
    fn get_locations(&mut self, page: &mut LocationPageSink<'_>) -> SyncResult<()> {
        for bytes in self.bucket.read_location_logs()? {
            let (mut records, names) = LocationLog::read_encoded(&bytes)
                .map_err(|e| violation_at(self.bucket.url(), Violation::BadLocationPiece(e)))?;
            page(&mut records, names)?;
        }
        Ok(())
    }

    fn takes_pieces_of_logs(&self) -> bool {
        false
    }

    fn put_locations(&mut self, from: ReplicaId, log: LocationPages) -> SyncResult<()> {
        // The bucket's object is written whole: its encoding is built here, not a decoded log.
        let mut bytes = Vec::new();
        log.encode_to(&mut bytes)?;
        Ok(self.bucket.write_location_log(&from.to_string(), bytes)?)
    }

    fn copies(&mut self) -> SyncResult<&mut dyn KeepsCopies> {
        Ok(self)
    }

    fn path_locks(&mut self) -> SyncResult<&mut dyn KeepsPathLocks> {
        Ok(self)
    }
}

impl KeepsCopies for BucketRemote {
    /// Confirms the bucket's copies and locks them there against a drop
    /// from it (see `dmv_bucket::Bucket::lock_content`).
    fn lock_content(&mut self, ids: &[ObjectId], seconds: u64) -> SyncResult<(String, Vec<bool>)> {
        Ok(self.bucket.lock_content(ids, seconds)?)
    }

    fn unlock_content(&mut self, lock: &str) -> SyncResult<()> {
        match lock.is_empty() {
            true => Ok(()),
            false => Ok(self.bucket.unlock_content(lock)?),
        }
    }

    fn drop_content(&mut self, ids: &[ObjectId]) -> SyncResult<(u64, Vec<ObjectId>)> {
        let dropped = self.bucket.drop_files(ids)?;
        Ok((dropped.freed_bytes, dropped.locked))
    }
}

impl KeepsPathLocks for BucketRemote {
    /// One conditional create per path (the rules: [`take_locks`]).
    fn lock_paths(&mut self, paths: &[String], replica: &str, me: &str) -> SyncResult<PathLocks> {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let locks = take_locks(&mut LockObjects(self), paths, me, replica, since)?;
        // Held once every push being checked now has landed or been refused.
        self.bucket.wait_for_ref_moves()?;
        Ok(PathLocks {
            you: Some(me.to_string()),
            locks,
        })
    }

    fn unlock_paths(&mut self, paths: &[String], force: bool, me: &str) -> SyncResult<PathLocks> {
        Ok(PathLocks {
            you: Some(me.to_string()),
            locks: release_locks(&mut LockObjects(self), paths, me, force)?,
        })
    }

    fn list_locks(&mut self, me: &str) -> SyncResult<PathLocks> {
        let mut locks = self
            .bucket
            .read_path_locks()?
            .iter()
            .map(|b| self.decode_lock(b))
            .collect::<SyncResult<Vec<_>>>()?;
        locks.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(PathLocks {
            you: Some(me.to_string()),
            locks,
        })
    }
}

impl BucketRemote {
    /// Runs `check_and_swap` as one announced ref move: a lock taken
    /// through another server meanwhile is answered only once it is over
    /// (see dmv-bucket's `ref_moves`).
    pub(crate) fn moving_refs<T>(
        &mut self,
        check_and_swap: impl FnOnce(&mut BucketRemote) -> SyncResult<T>,
    ) -> SyncResult<T> {
        let key = self.bucket.begin_ref_move()?;
        let done = check_and_swap(self);
        // Left behind on failure, it expires within a minute.
        let _ = self.bucket.end_ref_move(&key);
        done
    }
}

/// The bucket's lock objects, one per locked path.
struct LockObjects<'a>(&'a BucketRemote);

impl LockStore for LockObjects<'_> {
    type Error = SyncError;

    fn create(&mut self, lock: &PathLock) -> SyncResult<bool> {
        Ok(self
            .0
            .bucket
            .create_path_lock(&lock.path, encode_lock(lock))?)
    }

    fn read(&mut self, path: &str) -> SyncResult<Option<PathLock>> {
        self.0.read_lock(path)
    }

    fn remove(&mut self, path: &str) -> SyncResult<()> {
        Ok(self.0.bucket.remove_path_lock(path)?)
    }
}

/// What the bucket at `url` holds that breaks the protocol.
fn violation_at(url: &str, violation: Violation) -> SyncError {
    SyncError::Protocol(Violation::At {
        url: url.to_string(),
        violation: Box::new(violation),
    })
}

/// A lock object's content: the lock as JSON (small, and readable by
/// whoever looks in the bucket).
fn encode_lock(lock: &PathLock) -> Vec<u8> {
    serde_json::to_vec(lock).expect("a lock encodes")
}

impl BucketRemote {
    fn read_lock(&self, path: &str) -> SyncResult<Option<PathLock>> {
        self.bucket
            .read_path_lock(path)?
            .map(|b| self.decode_lock(&b))
            .transpose()
    }

    fn decode_lock(&self, bytes: &[u8]) -> SyncResult<PathLock> {
        let lock: PathLock = serde_json::from_slice(bytes)
            .map_err(|e| violation_at(self.bucket.url(), Violation::DamagedLock(e)))?;
        check_lock_path(&lock.path).map_err(|why| {
            violation_at(
                self.bucket.url(),
                Violation::BadLockPath {
                    path: lock.path.clone(),
                    why,
                },
            )
        })?;
        Ok(lock)
    }
}
