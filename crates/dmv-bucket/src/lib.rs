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
//! as an ordinary [`Store`]: lookups are the local ones, and a push stages
//! its packs there (the store's own pack writer) before uploading them.
//!
//! The files, each using only those listed before it: `error` (what can go
//! wrong, and telling the store's failures apart), `url` (the URL, options
//! and connection), `layout` (object keys), `config`, `mirror` (the local
//! mirror of the indexes), `locations` (location logs), `ranges` and `read` (ranged reads), `upload`,
//! `refs` (the ref table's format) and `refswap` (moving refs); this file
//! ties them into a [`Bucket`].

mod config;
mod error;
mod layout;
mod locations;
mod mirror;
mod ranges;
mod read;
mod refs;
mod refswap;
mod upload;
mod url;

use std::path::Path;

use dmv_store::{ChunkParams, Located, ObjectId, StoreError, StoredObject};

pub use config::{BucketConfig, FORMAT_VERSION};
pub use error::{BucketError, BucketResult};
pub use layout::{CONFIG_KEY, PACKS_PREFIX, PACK_SIZE, REFS_KEY};
pub use locations::LOCATIONS_PREFIX;
pub use refs::RefTable;
pub use refswap::{RefChange, RefSnapshot, RefUpdateOutcome};
pub use upload::{ObjectSink, Producer};
pub use url::{BucketOptions, BucketUrl};

use mirror::Mirror;
use url::Conn;

pub struct Bucket {
    conn: Conn,
    config: BucketConfig,
    /// The config object exactly as stored (the conditional-write probe rewrites it).
    config_bytes: Vec<u8>,
    /// The bucket's pack indexes, and only those of published packs.
    mirror: Mirror,
}

impl Bucket {
    /// Connects and reads the repository's config. With `create`, an empty
    /// location becomes a repository with those chunking parameters (the
    /// first push creates it); without, it is an error. The mirror of the
    /// bucket's indexes is kept under `cache_dir` (default: a temporary
    /// directory) and brought up to date.
    pub fn open(url: &str, options: &BucketOptions, cache_dir: Option<&Path>, create: Option<ChunkParams>) -> BucketResult<Bucket> {
        let conn = Conn::new(url, options)?;
        let (config, config_bytes) = config::read_or_create(&conn, create)?;
        let mirror = Mirror::open(cache_dir, &config, url)?;
        let bucket = Bucket { conn, config, config_bytes, mirror };
        bucket.refresh()?;
        Ok(bucket)
    }

    pub fn url(&self) -> &str {
        &self.conn.target.url
    }

    pub fn chunking(&self) -> ChunkParams {
        self.config.chunking
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
    pub fn read_objects<E: From<BucketError>>(&self, wanted: Vec<Located>, sink: &mut dyn FnMut(StoredObject) -> Result<(), E>) -> Result<(), E> {
        read::read_objects(&self.conn, wanted, sink)
    }

    /// Uploads the objects `produce` hands over (chunks first, then each
    /// object after the ones it refers to; each verified, as
    /// [`dmv_store::Store::read_stored`] gives them: readers re-hash on
    /// receipt), as packs. Packs are staged in a directory of their own (so
    /// the mirror of the bucket never holds what is not published), upload
    /// in the background while the next is written, and are published in
    /// order. Returns (objects, bytes) stored; objects the bucket has are
    /// skipped.
    pub fn put_objects<E: From<BucketError> + From<StoreError>>(&self, produce: Producer<'_, E>) -> Result<(u64, u64), E> {
        upload::put_objects(&self.conn, &self.mirror, self.config.chunking, produce)
    }

    /// The ref table and its version.
    pub fn read_refs(&self) -> BucketResult<RefSnapshot> {
        refswap::read_refs(&self.conn)
    }

    /// Applies `changes` all or nothing, each only if its ref is still at
    /// `old`. Concurrent writers race on the ref table's ETag: exactly one
    /// wins each round, and a loser whose refs were not touched retries.
    /// No changes: only checks that this client may push ([`Bucket::check_writable`]).
    pub fn update_refs(&self, changes: &[RefChange]) -> BucketResult<RefUpdateOutcome> {
        refswap::update_refs(&self.conn, &self.config_bytes, changes)
    }

    /// Checks, before anything is uploaded, that this client may write and
    /// that the store honours conditional writes (without them refs could
    /// be lost).
    pub fn check_writable(&self) -> BucketResult<()> {
        refswap::check_writable(&self.conn, &self.config_bytes)
    }
}
