//! A DMV repository kept in an S3-compatible object store (MinIO, Ceph,
//! Garage, AWS S3) with nothing of DMV running there. The layout is the local
//! one (docs/object-storage.md): `packs/pack-<sum>.pack` and `.idx` exactly as
//! in `.dmv/objects/packs`, a ref table replaced by compare-and-swap, and a
//! small config fixing the format and chunking.
//!
//! Visibility rules that keep readers from ever seeing a half-written state:
//! a pack counts only once its index exists, an index is uploaded only after
//! its pack, packs are published one after another in the order they were
//! written (chunks before the metadata that refers to them), and refs move
//! only after everything they reach is published. So the bucket, like a
//! local store, holds an object only together with everything it reaches,
//! and an interrupted push resumes by skipping the packs it finished.
//!
//! The bucket's pack indexes are mirrored in a local cache directory, opened
//! as an ordinary [`Store`](dmv_store::Store): lookups are the local ones,
//! and a push stages its packs there (the store's own pack writer) before
//! uploading them.
//!
//! Data leaves a bucket only by `dmv drop --from`: see `leases` for how a
//! drop keeps clear of pushes and of other replicas' drops, and `dropping`
//! for how it rewrites packs.
//!
//! An encrypted repository keeps the same layout under keyed names, every
//! body sealed (`sealing`), its key wrapped per device and passphrase in
//! `keys/` (`keys`), sealed again with a rotated key by `resealing`.
//!
//! The files, each using only those listed before it: `error` (what can go
//! wrong, and telling the store's failures apart), `layout` (object keys),
//! `sealing` (an encrypted repository's names and bodies), `url` (the URL,
//! options and connection), `objects` (every read and write of the bucket's
//! objects: the one place keys and bodies meet the store), `config`, `keys`
//! (the wrapped keys), `resealing`, `mirror` (the local mirror of the indexes), `locations`
//! (location logs), `path_locks`, `records` (what the servers of a
//! bucket share), `staging` (browser uploads staged there), `ranges` and `read` (ranged reads),
//! `upload`, `refs` (the ref table's format), `refswap` (moving refs),
//! `ref_moves` (ref moves announced to lock takers), `leases` (drops,
//! pushes and content locks in the bucket) and `dropping`; this file ties
//! them into a [`Bucket`].

#![warn(missing_docs)]

mod config;
mod dropping;
mod error;
mod keys;
mod layout;
mod leases;
mod locations;
mod mirror;
mod objects;
mod path_locks;
mod ranges;
mod read;
mod records;
mod ref_moves;
mod refs;
mod refswap;
mod resealing;
mod sealing;
mod staging;
mod upload;
mod url;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use dmv_store::object::FileNode;
use dmv_store::{ChunkParams, Located, ObjectId, ObjectKind, StoreError, StoredObject, Tally};

pub use config::{BucketConfig, SealedConfig, FORMAT_VERSION, SEALED_FORMAT_VERSION};
pub use dmv_crypt::{Identity, Recipient};
pub use dropping::BucketDropped;
pub use error::{BucketError, BucketResult};
pub use keys::{KeyEntry, Rotated, MAX_EPOCHS, MAX_KEYS, PASSPHRASE_BUDGET};
pub use layout::{CONFIG_KEY, PACKS_PREFIX, PACK_SIZE, REFS_KEY};
pub use locations::{LogMerge, LOCATIONS_PREFIX};
pub use records::{SharedRecords, MAX_RECORD_SIZE};
pub use refs::{DropLease, DropState, RefTable};
pub use refswap::{RefChange, RefSnapshot, RefUpdateOutcome};
pub use resealing::Resealed;
pub use sealing::{BucketKeys, KnownKeyrings};
pub use staging::{StagedRecord, MAX_STAGED_RECORD};
pub use upload::{ObjectSink, Producer};
pub use url::{BucketOptions, BucketUrl, SealedHub, DEFAULT_STALL_AFTER, RETRIES};

use mirror::Mirror;
use refswap::DropsSeen;
use url::Conn;

/// An open DMV repository in a bucket, with the local mirror of its indexes.
pub struct Bucket {
    conn: Conn,
    config: BucketConfig,
    /// The config object exactly as stored (the conditional-write probe rewrites it).
    config_bytes: Vec<u8>,
    /// The bucket's pack indexes, and only those of published packs.
    mirror: Mirror,
    /// The drops the mirror's answers reflect, from the start of a push: its
    /// ref update lands only if none began since (objects it skipped as
    /// there may be gone).
    drops_seen: Mutex<Option<DropsSeen>>,
    /// This client's push registration (see `leases`), while it pushes.
    push_token: Mutex<Option<String>>,
}

impl Bucket {
    /// Connects and reads the repository's config. With `create`, an empty
    /// location becomes a repository with those chunking parameters (the
    /// first push creates it); without, it is an error. The mirror of the
    /// bucket's indexes is kept under `cache_dir` (default: a temporary
    /// directory) and brought up to date.
    pub fn open(
        url: &str,
        options: &BucketOptions,
        cache_dir: Option<&Path>,
        create: Option<ChunkParams>,
    ) -> BucketResult<Bucket> {
        let mut conn = Conn::new(url, options)?;
        let make_keys = || keys::new_wrapped(&options.keys, url);
        let creation = create.map(|chunking| config::Creation {
            chunking,
            sealed: options.keys.encrypt.then_some(&make_keys as &dyn Fn() -> _),
        });
        let (config, config_bytes) = config::read_or_create(&conn, creation)?;
        if let Some(sealed) = &config.sealed {
            if let Some(known) = &options.keys.known {
                known
                    .check(&config.id, &sealed.keyring)
                    .map_err(|detail| BucketError::Keys {
                        url: url.to_string(),
                        detail,
                    })?;
            }
            let keyring = keys::unlock(&conn, &config, &options.keys)?;
            conn.sealing = Some(std::sync::Arc::new(sealing::Sealing::new(keyring)));
        } else if options.keys.encrypt {
            return Err(BucketError::Keys {
                url: url.to_string(),
                detail: "holds an unencrypted repository, and this remote is set to encrypt: nothing is sent to it in the clear (use another location, or remove the remote's encrypt setting)".into(),
            });
        }
        let mirror = Mirror::open(cache_dir, &config, url)?;
        let bucket = Bucket {
            conn,
            config,
            config_bytes,
            mirror,
            drops_seen: Mutex::new(None),
            push_token: Mutex::new(None),
        };
        bucket.refresh()?;
        Ok(bucket)
    }

    /// The remote as it was given to [`Bucket::open`].
    pub fn url(&self) -> &str {
        &self.conn.target.url
    }

    /// The repository's chunking, which a replica pushing here must use.
    pub fn chunking(&self) -> ChunkParams {
        self.config.chunking
    }

    /// Whether the repository is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.conn.sealing.is_some()
    }

    /// The wrapped copies of an encrypted repository's key.
    pub fn keys(&self) -> BucketResult<Vec<KeyEntry>> {
        self.sealing()?;
        keys::list(&self.conn)
    }

    /// Lets another device's key (or a passphrase) open the repository.
    pub fn add_key(
        &self,
        recipient: Option<&dmv_crypt::Recipient>,
        passphrase: Option<&str>,
    ) -> BucketResult<KeyEntry> {
        keys::add(&self.conn, self.sealing()?.keyring(), recipient, passphrase)
    }

    /// Removes a wrapped copy of the key (by its name or device key), so
    /// that it opens the repository no more; not the last one.
    pub fn remove_key(&self, name: &str) -> BucketResult<KeyEntry> {
        self.sealing()?;
        keys::remove(&self.conn, name)
    }

    /// Seals what is written from now on with a new key: see `keys::rotate`.
    /// This handle keeps sealing with the key it opened with; open the
    /// bucket again to write with the new one.
    pub fn rotate_key(&self, passphrase: Option<&str>) -> BucketResult<Rotated> {
        keys::rotate(&self.conn, self.sealing()?.keyring(), passphrase)
    }

    /// Seals again with the newest key everything stored sealed with an
    /// older one (see `resealing`), calling `progress(done, total)` (stored
    /// bytes) as it goes. Open the bucket after the rotation: this handle seals with
    /// the newest key it opened with.
    pub fn reseal(&self, progress: &mut dyn FnMut(u64, u64)) -> BucketResult<Resealed> {
        resealing::reseal(&self.conn, progress)
    }

    fn sealing(&self) -> BucketResult<&sealing::Sealing> {
        self.conn
            .sealing
            .as_deref()
            .ok_or_else(|| BucketError::Keys {
                url: self.url().to_string(),
                detail: "the repository is not encrypted: it has no keys".into(),
            })
    }

    /// The repository's id, fixed when it was created (its replica id).
    pub fn id(&self) -> &str {
        &self.config.id
    }

    /// Every location log kept in the bucket, as stored.
    pub fn read_location_logs(&self) -> BucketResult<Vec<Vec<u8>>> {
        locations::read_all(&self.conn)
    }

    /// Replaces the location log that replica `writer` keeps in the bucket.
    pub fn write_location_log(&self, writer: &str, bytes: Vec<u8>) -> BucketResult<()> {
        locations::write(&self.conn, writer, bytes)
    }

    /// Merges records into the location log replica `writer` keeps in the
    /// bucket (see `locations::merge`: `merge` makes the new log from the stored one).
    pub fn merge_location_log(&self, writer: &str, merge: &mut LogMerge<'_>) -> BucketResult<()> {
        locations::merge(&self.conn, writer, merge)
    }

    /// Writes the shared record `kind/name` (see [`SharedRecords`]).
    pub fn put_shared_record(&self, kind: &str, name: &str, body: Vec<u8>) -> BucketResult<()> {
        records::put(&self.conn, kind, name, body)
    }

    /// The shared record `kind/name`, if there is one.
    pub fn shared_record(&self, kind: &str, name: &str) -> BucketResult<Option<Vec<u8>>> {
        records::get(&self.conn, kind, name)
    }

    /// The names of the shared records of `kind`, from one listing.
    pub fn shared_record_names(&self, kind: &str) -> BucketResult<Vec<String>> {
        records::names(&self.conn, kind)
    }

    /// The record of the browser upload `id` of owner `group` staged in
    /// the bucket (see `staging`), with its version.
    pub fn staged_record(&self, group: &str, id: &str) -> BucketResult<Option<StagedRecord>> {
        staging::read_record(&self.conn, group, id)
    }

    /// The records of the uploads staged by `group` (None: by anyone).
    pub fn staged_records(&self, group: Option<&str>) -> BucketResult<Vec<StagedRecord>> {
        staging::read_records(&self.conn, group)
    }

    /// Writes an upload's record if there is none (`version` None) or it
    /// is still at `version`; false when it was not.
    pub fn swap_staged_record(
        &self,
        group: &str,
        id: &str,
        body: Vec<u8>,
        version: Option<&str>,
    ) -> BucketResult<bool> {
        staging::swap_record(&self.conn, group, id, body, version)
    }

    /// Stores a piece of an upload's bytes.
    pub fn put_staged_piece(
        &self,
        group: &str,
        id: &str,
        piece: &str,
        bytes: Vec<u8>,
    ) -> BucketResult<()> {
        staging::put_piece(&self.conn, group, id, piece, bytes)
    }

    /// The bytes of a piece stored by [`Bucket::put_staged_piece`].
    pub fn staged_piece(&self, group: &str, id: &str, piece: &str) -> BucketResult<Vec<u8>> {
        staging::read_piece(&self.conn, group, id, piece)
    }

    /// Removes one piece of an upload (a piece whose record update lost).
    pub fn remove_staged_piece(&self, group: &str, id: &str, piece: &str) -> BucketResult<()> {
        staging::remove_piece(&self.conn, group, id, piece)
    }

    /// Removes a staged upload, its pieces and its record.
    pub fn remove_staged(&self, group: &str, id: &str) -> BucketResult<()> {
        staging::remove(&self.conn, group, id)
    }

    /// Creates the lock object of `path` holding `bytes`, unless one exists
    /// (a conditional write: of two clients, exactly one creates it).
    /// Returns whether this call created it.
    pub fn create_path_lock(&self, path: &str, bytes: Vec<u8>) -> BucketResult<bool> {
        path_locks::create(&self.conn, path, bytes)
    }

    /// The lock object of `path`, if one exists.
    pub fn read_path_lock(&self, path: &str) -> BucketResult<Option<Vec<u8>>> {
        path_locks::read(&self.conn, path)
    }

    /// Every lock object in the bucket.
    pub fn read_path_locks(&self) -> BucketResult<Vec<Vec<u8>>> {
        path_locks::read_all(&self.conn)
    }

    /// Announces a ref move to lock takers (see `ref_moves`): a server in
    /// front of the bucket calls it before it checks a push against the
    /// locks, and [`Bucket::end_ref_move`] once the refs moved or not.
    pub fn begin_ref_move(&self) -> BucketResult<String> {
        ref_moves::announce(&self.conn)
    }

    /// Ends a move [`Bucket::begin_ref_move`] announced.
    pub fn end_ref_move(&self, key: &str) -> BucketResult<()> {
        ref_moves::withdraw(&self.conn, key)
    }

    /// Waits until every ref move announced now is over: a lock taker calls
    /// it after creating its lock object, before saying the lock is held.
    pub fn wait_for_ref_moves(&self) -> BucketResult<()> {
        ref_moves::wait_for_moves(&self.conn)
    }

    /// Deletes the lock object of `path` (whoever created it).
    pub fn remove_path_lock(&self, path: &str) -> BucketResult<()> {
        path_locks::remove(&self.conn, path)
    }

    /// Mirrors the bucket's list of pack indexes into the cache: downloads
    /// (and verifies) the new ones, forgets the ones gone from the bucket.
    pub fn refresh(&self) -> BucketResult<()> {
        self.mirror.refresh(&self.conn)
    }

    /// Where an object is in the bucket, if it is there (with all it reaches).
    pub fn locate(&self, id: &ObjectId) -> BucketResult<Option<Located>> {
        Ok(self.mirror.store.locate(id)?)
    }

    /// Reads objects with as few ranged GETs as their positions allow, several
    /// at once. Objects reach `sink` in pack order, not in the order asked.
    pub fn read_objects<E: From<BucketError>>(
        &self,
        wanted: Vec<Located>,
        sink: &mut dyn FnMut(StoredObject) -> Result<(), E>,
    ) -> Result<(), E> {
        read::read_objects(&self.conn, wanted, sink)
    }

    /// Uploads the objects `produce` hands over (chunks first, then each
    /// object after the ones it refers to; each verified, as
    /// [`dmv_store::Store::read_stored`] gives them: readers re-hash on
    /// receipt), as packs. Packs are staged in a directory of their own (so
    /// the mirror of the bucket never holds what is not published), upload
    /// in the background while the next is written, and are published in
    /// order. Returns (objects, bytes) stored; objects the bucket has are
    /// skipped. `sent`: bytes of packs that reached the bucket.
    pub fn put_objects<E: From<BucketError> + From<StoreError>>(
        &self,
        produce: Producer<'_, E>,
        sent: &Tally<'_>,
    ) -> Result<(u64, u64), E> {
        let token = self
            .push_token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let renew = || match &token {
            Some(t) => leases::renew_push(&self.conn, t),
            None => Ok(()),
        };
        upload::put_objects(
            &self.conn,
            &self.mirror,
            self.config.chunking,
            upload::Skip::Present,
            &renew,
            sent,
            produce,
        )
    }

    /// The ref table and its version.
    pub fn read_refs(&self) -> BucketResult<RefSnapshot> {
        refswap::read_refs(&self.conn)
    }

    /// Applies `changes` all or nothing, each only if its ref is still at
    /// `old`. Concurrent writers race on the ref table's ETag: exactly one
    /// wins each round, and a loser whose refs were not touched retries.
    /// Refused if data was dropped from the bucket since it was opened.
    ///
    /// No changes: the start of a push. Checks that this client may push
    /// ([`Bucket::check_writable`]) and registers the push, so that no drop
    /// runs until its changes come (or the bucket is closed).
    pub fn update_refs(&self, changes: &[RefChange]) -> BucketResult<RefUpdateOutcome> {
        if changes.is_empty() {
            self.check_writable()?;
            return self.register_push().map(|_| RefUpdateOutcome::Updated);
        }
        self.register_push()?;
        let seen = self
            .drops_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_default();
        let outcome = refswap::update_refs(&self.conn, &self.config_bytes, changes, seen);
        let unregistered = self.unregister_push();
        let outcome = outcome?;
        unregistered?;
        Ok(outcome)
    }

    fn register_push(&self) -> BucketResult<()> {
        let mut token = self.push_token.lock().unwrap_or_else(|e| e.into_inner());
        if token.is_some() {
            return Ok(());
        }
        let t = config::new_token();
        let now = leases::register_push(&self.conn, &t)?;
        *token = Some(t);
        // Mirrored after the drops were read, so what the push decides to skip is at least as new.
        self.refresh()?;
        *self.drops_seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        Ok(())
    }

    fn unregister_push(&self) -> BucketResult<()> {
        match self
            .push_token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(t) => leases::unregister_push(&self.conn, &t),
            None => Ok(()),
        }
    }

    /// Confirms which of these files' data is all in the bucket, and locks
    /// those copies against drops from it for `seconds`. Returns the lock's
    /// name (empty when nothing is held) and, per file, whether it is held.
    /// While a drop runs there, nothing is held.
    pub fn lock_content(
        &self,
        ids: &[ObjectId],
        seconds: u64,
    ) -> BucketResult<(String, Vec<bool>)> {
        let token = config::new_token();
        if !leases::lock_content(&self.conn, &token, ids, seconds)? {
            return Ok((String::new(), vec![false; ids.len()]));
        }
        let held = self.refresh().and_then(|_| self.whole_files(ids));
        let held = match held {
            Ok(held) if held.iter().any(|h| *h) => held,
            other => {
                leases::unlock_content(&self.conn, &token)?;
                return other.map(|held| (String::new(), held));
            }
        };
        Ok((token, held))
    }

    /// Releases a lock [`Bucket::lock_content`] took (gone already is fine).
    pub fn unlock_content(&self, lock: &str) -> BucketResult<()> {
        if lock.is_empty() || !lock.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self
                .conn
                .target
                .damaged(format!("{lock:?} is not a content lock")));
        }
        leases::unlock_content(&self.conn, lock)
    }

    /// Per file (content id): whether the bucket holds it and every chunk
    /// it is made of, reading the nodes of all the files level by level
    /// (one round of ranged reads per level, not per file).
    fn whole_files(&self, ids: &[ObjectId]) -> BucketResult<Vec<bool>> {
        let mut whole = vec![true; ids.len()];
        // Nodes to read, each with the files it is part of; a node is read once.
        let mut level: HashMap<ObjectId, (Located, Vec<usize>)> = HashMap::new();
        let mut seen = HashSet::new();
        for (i, id) in ids.iter().enumerate() {
            match self.locate(id)? {
                None => whole[i] = false,
                Some(loc) if loc.entry.kind == ObjectKind::Chunk => {}
                Some(loc) => level.entry(*id).or_insert((loc, Vec::new())).1.push(i),
            }
        }
        while !level.is_empty() {
            let mut next: HashMap<ObjectId, (Located, Vec<usize>)> = HashMap::new();
            let wanted: Vec<Located> = level.values().map(|(loc, _)| *loc).collect();
            self.read_objects(wanted, &mut |obj| {
                let content = obj
                    .content()
                    .map_err(|e| self.conn.target.damaged(format!("object {}: {e}", obj.id)))?;
                let node: FileNode = dmv_store::object::decode(&obj.id, obj.kind, &content)?;
                let files = &level[&obj.id].1;
                for e in node.entries {
                    match self.locate(&e.id)? {
                        None => files.iter().for_each(|f| whole[*f] = false),
                        Some(loc) if loc.entry.kind != ObjectKind::Chunk => {
                            match next.get_mut(&e.id) {
                                // Shared by files of this level: read once, for all of them.
                                Some((_, more)) => more.extend(files),
                                // A damaged or hostile node that lists itself must not loop.
                                None if seen.insert(e.id) => {
                                    drop(next.insert(e.id, (loc, files.clone())))
                                }
                                None => {}
                            }
                        }
                        Some(_) => {}
                    }
                }
                Ok::<_, BucketError>(())
            })?;
            level = next;
        }
        Ok(whole)
    }

    /// Frees these files' data in the bucket (the caller has confirmed
    /// enough other copies): see `dropping`. Nothing is freed if another
    /// replica's drop has locked some of it (`locked` names it).
    pub fn drop_files(&self, files: &[ObjectId]) -> BucketResult<BucketDropped> {
        dropping::drop_files(&self.conn, &self.mirror, self.config.chunking, files)
    }

    /// Checks, before anything is uploaded, that this client may write and
    /// that the store honours conditional writes (without them refs could
    /// be lost).
    pub fn check_writable(&self) -> BucketResult<()> {
        refswap::check_writable(&self.conn, &self.config_bytes)
    }
}

impl Drop for Bucket {
    /// A push that stopped before its ref update leaves no registration to
    /// hold off drops until it expires (a killed one does, for an hour at most).
    fn drop(&mut self) {
        let _ = self.unregister_push();
    }
}
