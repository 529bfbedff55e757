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

mod ranges;
mod refs;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dmv_store::trace;
use dmv_store::{check_record_header, index_file_name, pack_file_name, verify_pack_index, ChunkParams, Located, ObjectId, Store, StoreError, StoredObject};
use futures_util::StreamExt;
use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::{ErrorKind, Operator};
use serde::{Deserialize, Serialize};

pub use refs::RefTable;

pub const CONFIG_KEY: &str = "dmv-repository.json";
pub const REFS_KEY: &str = "refs";
pub const PACKS_PREFIX: &str = "packs/";
pub const FORMAT_VERSION: u32 = 1;
/// Packs a push is writing live in `<cache>/staging-<pid>` until uploaded.
const STAGING_PREFIX: &str = "staging-";
/// Packs in a bucket roll over at this size: large enough that listing and
/// request costs stay small, small enough that a resumed push resends little.
pub const PACK_SIZE: u64 = 32 << 20;
/// Multipart part size, how many parts of one pack upload at once, and how
/// many packs upload at once (their indexes still go up one after another).
/// Two packs in flight measured no faster on loopback and cost 30 MiB more;
/// a store far away may want more.
const PART_SIZE: usize = 8 << 20;
const UPLOAD_CONCURRENCY: usize = 4;
const PACKS_IN_FLIGHT: usize = 1;
/// Ranged GETs in flight, and how they are cut.
const READ_CONCURRENCY: usize = 6;
const MAX_READ_GAP: u64 = 256 << 10;
const MAX_READ_LEN: u64 = 4 << 20;
/// Reading or swapping the ref table gives up after losing this many races in a row.
const MAX_SWAP_ATTEMPTS: u32 = 30;
/// The largest objects read whole from a bucket: what the bucket says it
/// holds is checked against these before anything is downloaded, so a
/// damaged or hostile bucket cannot make a client hold gigabytes. The config
/// is a few hundred bytes; the ref table ~80 bytes per ref (1.6 million refs);
/// a pack index 56 bytes per object of a pack of at most `PACK_SIZE` plus
/// one object, each object at least a 44-byte record header (~90 MiB).
const MAX_CONFIG_SIZE: u64 = 1 << 20;
const MAX_REF_TABLE_SIZE: u64 = 128 << 20;
const MAX_INDEX_SIZE: u64 = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("{url}: {detail}")]
    NotARepository { url: String, detail: String },
    #[error("authentication failed for {url}: {detail}")]
    Auth { url: String, detail: String },
    #[error("{url}: the bucket {bucket} does not exist")]
    NoBucket { url: String, bucket: String },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url}: {detail}")]
    Storage { url: String, detail: String },
    #[error("{url}: damaged data in the bucket: {detail}")]
    Damaged { url: String, detail: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type BucketResult<T> = Result<T, BucketError>;

/// `s3://bucket[/prefix]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketUrl {
    pub bucket: String,
    pub prefix: String,
}

impl BucketUrl {
    pub fn parse(url: &str) -> BucketResult<BucketUrl> {
        let bad = |why: &str| BucketError::Invalid(format!("bad object storage remote {url:?}: {why}"));
        let rest = url.strip_prefix("s3://").ok_or_else(|| bad("it must start with s3://"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with(['-', '.'])
            && !bucket.ends_with(['-', '.']);
        if !bucket_ok {
            return Err(bad("a bucket name is 3-63 lowercase letters, digits, '-' or '.'"));
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.split('/').any(|seg| seg == "." || seg == "..") || prefix.contains("//") || prefix.starts_with('/') {
            return Err(bad("the prefix has an empty, '.' or '..' component"));
        }
        Ok(BucketUrl { bucket: bucket.to_string(), prefix: prefix.to_string() })
    }
}

/// Where and how to reach the store, besides what the standard AWS
/// environment variables and files say (credentials, region, `AWS_ENDPOINT_URL`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketOptions {
    /// e.g. `http://127.0.0.1:9000`; default: AWS for the region.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// `bucket.host/key` instead of `host/bucket/key` (path style, the default,
    /// is what MinIO, Ceph and Garage expect).
    pub virtual_host_style: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketConfig {
    pub format: u32,
    pub chunking: ChunkParams,
    /// Random, fixed at creation: the local mirror of this repository's
    /// indexes is kept per id, so two repositories behind one URL (another
    /// endpoint, a recreated bucket) never share a mirror.
    #[serde(default)]
    pub id: String,
}

/// A ref table as read, with the version a compare-and-swap must match.
#[derive(Clone, Debug, Default)]
pub struct RefSnapshot {
    pub table: RefTable,
    etag: Option<String>,
}

/// One ref change: applied only if the ref is still at `old`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefChange {
    pub name: String,
    /// `None`: the ref must not exist.
    pub old: Option<ObjectId>,
    /// `None`: delete.
    pub new: Option<ObjectId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefUpdateOutcome {
    Updated,
    /// A ref is not where the caller expected: someone else moved it.
    Rejected {
        name: String,
        found: Option<ObjectId>,
    },
}

/// Hands each object of an upload to a sink (children before parents).
pub type Producer<'a, E> = &'a mut dyn FnMut(ObjectSink<'_, E>) -> Result<(), E>;
pub type ObjectSink<'a, E> = &'a mut dyn FnMut(&StoredObject) -> Result<(), E>;

pub struct Bucket {
    url: String,
    runtime: tokio::runtime::Runtime,
    op: Operator,
    config: BucketConfig,
    /// The config object exactly as stored (the conditional-write probe rewrites it).
    config_bytes: Vec<u8>,
    /// The bucket's pack indexes, and only those of published packs.
    cache: Store,
    cache_dir: PathBuf,
    _cache_tmp: Option<tempfile::TempDir>,
}

/// The code and message S3 put in an error body, or opendal's own message
/// and root cause, without the request context (headers, URI).
fn s3_detail(err: &opendal::Error) -> String {
    let msg = err.message();
    let field = |name: &str| {
        let at = msg.find(&format!("{name}: \""))? + name.len() + 3;
        let end = msg[at..].find('"')?;
        Some(msg[at..at + end].to_string()).filter(|s| !s.is_empty())
    };
    match (field("code"), field("message")) {
        (Some(code), Some(text)) => format!("{code}: {text}"),
        (Some(code), None) => code,
        _ => {
            let mut text = format!("{} {}", err.kind(), msg.trim());
            if let Some(cause) = root_cause(err) {
                text = format!("{text}: {cause}");
            }
            text.replace('\n', " ").trim().to_string()
        }
    }
}

fn root_cause(err: &opendal::Error) -> Option<String> {
    let mut cause: &dyn std::error::Error = std::error::Error::source(err)?;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Some(cause.to_string())
}

/// Whether the failure is the network's (nothing answered, or not in time),
/// judged from the error's causes, never from the request context.
fn is_unreachable(err: &opendal::Error) -> bool {
    let mut texts = vec![err.message().to_string()];
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        texts.push(c.to_string());
        cause = c.source();
    }
    texts.iter().any(|t| {
        ["error sending request", "connect", "dns error", "timed out", "timeout", "connection closed", "connection reset", "broken pipe"]
            .iter()
            .any(|s| t.to_ascii_lowercase().contains(s))
    })
}

impl Bucket {
    fn classify(&self, err: opendal::Error, what: &str) -> BucketError {
        classify(&self.url, &bucket_of(&self.url), err, what)
    }
}

fn classify(url: &str, bucket: &str, err: opendal::Error, what: &str) -> BucketError {
    let url = url.to_string();
    let detail = s3_detail(&err);
    match err.kind() {
        ErrorKind::PermissionDenied => BucketError::Auth { url, detail: format!("{detail} (check the AWS credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the profile)") },
        ErrorKind::ConfigInvalid if detail.contains("NoSuchBucket") => BucketError::NoBucket { url, bucket: bucket.to_string() },
        ErrorKind::ConfigInvalid => BucketError::Invalid(format!("{url}: {detail}")),
        _ => {
            if is_unreachable(&err) {
                BucketError::Unreachable { url, detail: format!("{what}: the object store does not answer") }
            } else {
                BucketError::Storage { url, detail: format!("{what}: {detail}") }
            }
        }
    }
}

/// opendal's HTTP client is process-wide, as is rustls's crypto provider
/// (ring: the one the rest of DMV builds with). Both calls are idempotent.
fn install_http_transport() {
    // A server that goes away mid-upload must be an error, not a SIGPIPE death.
    // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let _ = rustls::crypto::ring::default_provider().install_default();
    opendal_http_transport_reqwest::install_default();
}

impl Bucket {
    /// Connects and reads the repository's config. With `create`, an empty
    /// location becomes a repository with those chunking parameters (the
    /// first push creates it); without, it is an error.
    pub fn open(url: &str, options: &BucketOptions, cache_dir: Option<&Path>, create: Option<ChunkParams>) -> BucketResult<Bucket> {
        install_http_transport();
        let parsed = BucketUrl::parse(url)?;
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| BucketError::Invalid(format!("cannot start the I/O runtime: {e}")))?;
        let op = operator(&parsed, options).map_err(|e| classify(url, &parsed.bucket, e, "configuration"))?;
        let (cache_dir, cache_tmp) = match cache_dir {
            Some(dir) => (dir.to_path_buf(), None),
            None => {
                let tmp = tempfile::Builder::new().prefix("dmv-bucket-cache").tempdir().map_err(|e| BucketError::Invalid(format!("cannot create a cache directory: {e}")))?;
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let (config, config_bytes) = runtime.block_on(read_or_create_config(&op, url, &parsed.bucket, create))?;
        let id = if config.id.is_empty() { "no-id" } else { config.id.as_str() };
        if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(BucketError::NotARepository { url: url.to_string(), detail: format!("{CONFIG_KEY} has an invalid id") });
        }
        let cache_dir = cache_dir.join(id);
        Store::create(&cache_dir)?;
        remove_dead_staging(&cache_dir);
        let cache = Store::open(&cache_dir, config.chunking, PACK_SIZE)?;
        let bucket = Bucket { url: url.to_string(), runtime, op, config, config_bytes, cache, cache_dir, _cache_tmp: cache_tmp };
        bucket.refresh()?;
        Ok(bucket)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn chunking(&self) -> ChunkParams {
        self.config.chunking
    }

    /// Mirrors the bucket's list of pack indexes into the cache: downloads
    /// (and verifies) the new ones, forgets the ones gone from the bucket.
    pub fn refresh(&self) -> BucketResult<()> {
        let listed = self.runtime.block_on(async {
            let entries = self.op.list_with(PACKS_PREFIX).await.map_err(|e| self.classify(e, "listing packs"))?;
            Ok::<_, BucketError>(entries.into_iter().filter_map(|e| Some((pack_of_index_name(e.name())?, e.metadata().content_length()))).collect::<HashMap<ObjectId, u64>>())
        })?;
        let packs_dir = self.cache.packs_dir().to_path_buf();
        let mut cached = HashSet::new();
        let mut forgot = false;
        for entry in std::fs::read_dir(&packs_dir).map_err(|e| BucketError::Invalid(format!("{}: {e}", packs_dir.display())))? {
            let Ok(entry) = entry else { continue };
            let Some(pack) = entry.file_name().to_str().and_then(pack_of_index_name) else { continue };
            if listed.contains_key(&pack) {
                cached.insert(pack);
            } else {
                // Gone from the bucket: the mirror must never claim what the bucket lacks.
                std::fs::remove_file(entry.path()).map_err(|e| BucketError::Invalid(format!("{}: {e}", entry.path().display())))?;
                forgot = true;
            }
        }
        if forgot {
            let _ = std::fs::remove_file(packs_dir.join(dmv_store::MULTI_PACK_INDEX));
        }
        let missing: Vec<(ObjectId, u64)> = listed.into_iter().filter(|(pack, _)| !cached.contains(pack)).collect();
        for (pack, len) in &missing {
            if *len > MAX_INDEX_SIZE {
                let detail = format!("{PACKS_PREFIX}{} is {len} bytes, more than a pack index can be ({} MiB)", index_file_name(pack), MAX_INDEX_SIZE >> 20);
                return Err(BucketError::Damaged { url: self.url.clone(), detail });
            }
        }
        self.runtime.block_on(async {
            let mut downloads = futures_util::stream::iter(missing.into_iter().map(|(pack, len)| {
                let op = self.op.clone();
                async move {
                    let key = format!("{PACKS_PREFIX}{}", index_file_name(&pack));
                    // The listed length bounds the read (an index is never replaced).
                    let got = match len {
                        0 => Ok(opendal::Buffer::new()),
                        _ => op.read_with(&key).range(0..len).await,
                    };
                    (pack, key, got)
                }
            }))
            .buffer_unordered(READ_CONCURRENCY);
            while let Some((pack, key, got)) = downloads.next().await {
                let bytes = got.map_err(|e| self.classify(e, &format!("reading {key}")))?.to_vec();
                trace::count_received(bytes.len() as u64);
                self.install_index(&pack, &key, &bytes)?;
            }
            Ok::<_, BucketError>(())
        })?;
        self.cache.reload()?;
        // Thousands of packs must not mean thousands of probes per lookup.
        self.cache.index_packs_if_many()?;
        Ok(())
    }

    fn install_index(&self, pack: &ObjectId, key: &str, bytes: &[u8]) -> BucketResult<()> {
        let dir = self.cache.packs_dir();
        let tmp = tempfile::Builder::new().prefix("download-").suffix(".tmp").tempfile_in(dir).map_err(|e| BucketError::Invalid(format!("{}: {e}", dir.display())))?;
        std::fs::write(tmp.path(), bytes).map_err(|e| BucketError::Invalid(format!("{}: {e}", tmp.path().display())))?;
        verify_pack_index(tmp.path(), pack).map_err(|e| BucketError::Damaged { url: self.url.clone(), detail: format!("{key}: {e}") })?;
        tmp.persist(dir.join(index_file_name(pack))).map_err(|e| BucketError::Invalid(format!("{}: {e}", dir.display())))?;
        Ok(())
    }

    /// Where an object is in the bucket, if it is there (with all it reaches).
    pub fn locate(&self, id: &ObjectId) -> BucketResult<Option<Located>> {
        Ok(self.cache.locate(id)?)
    }

    /// Reads objects with as few ranged GETs as their positions allow, several
    /// at once. Objects reach `sink` in pack order, not in the order asked.
    pub fn read_objects<E: From<BucketError>>(&self, wanted: Vec<Located>, sink: &mut dyn FnMut(StoredObject) -> Result<(), E>) -> Result<(), E> {
        for loc in &wanted {
            // An index that passed its checksum can still lie about offsets.
            let end = loc.entry.offset.checked_add(loc.entry.record_len() as u64);
            if loc.entry.offset < dmv_store::PACK_HEADER_LEN || end.is_none_or(|e| e > u64::MAX / 2) {
                let detail = format!("the index of pack {} puts object {} at offset {}", loc.pack, loc.entry.id, loc.entry.offset);
                return Err(BucketError::Damaged { url: self.url.clone(), detail }.into());
            }
        }
        let plan = ranges::plan(wanted, MAX_READ_GAP, MAX_READ_LEN);
        let handle = self.runtime.handle().clone();
        self.runtime.block_on(async {
            // Each GET runs as its own task, so downloads go on while `sink` writes.
            let mut reads = futures_util::stream::iter(plan.into_iter().map(|range| {
                let op = self.op.clone();
                let task = handle.spawn(async move {
                    let key = format!("{PACKS_PREFIX}{}", pack_file_name(&range.pack));
                    let got = op.read_with(&key).range(range.start..range.end).await;
                    (range, key, got)
                });
                task
            }))
            .buffered(READ_CONCURRENCY);
            while let Some(joined) = reads.next().await {
                let (range, key, got) = joined.map_err(|e| BucketError::Invalid(format!("a download task failed: {e}")))?;
                let bytes = got.map_err(|e| self.classify(e, &format!("reading {key}")))?.to_bytes();
                trace::count_received(bytes.len() as u64);
                if bytes.len() as u64 != range.end - range.start {
                    return Err(BucketError::Damaged {
                        url: self.url.clone(),
                        detail: format!("{key}: a ranged read returned {} bytes, its index says {}", bytes.len(), range.end - range.start),
                    }
                    .into());
                }
                for e in &range.entries {
                    let at = (e.offset - range.start) as usize;
                    let record = &bytes[at..at + e.record_len()];
                    check_record_header(record, &key, e).map_err(BucketError::from)?;
                    let payload = record[dmv_store::RECORD_HEADER_LEN..].to_vec();
                    sink(StoredObject { id: e.id, kind: e.kind, compression: e.compression, raw_len: e.raw_len, payload })?;
                }
            }
            Ok(())
        })
    }

    /// Uploads the objects `produce` hands over (chunks first, then each
    /// object after the ones it refers to; each verified, as
    /// [`Store::read_stored`] gives them: readers re-hash on receipt), as packs. Packs are staged in a
    /// directory of their own (so the mirror of the bucket never holds what
    /// is not published), upload in the background while the next is
    /// written, and are published in order. Returns (objects, bytes) stored;
    /// objects the bucket has are skipped.
    pub fn put_objects<E: From<BucketError> + From<StoreError>>(&self, produce: Producer<'_, E>) -> Result<(u64, u64), E> {
        let staging_dir = self.cache_dir.join(format!("{STAGING_PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging_dir);
        Store::create(&staging_dir)?;
        let result = self.put_staged(&staging_dir, produce);
        let _ = std::fs::remove_dir_all(&staging_dir);
        let _ = self.cache.reload();
        result
    }

    fn put_staged<E: From<BucketError> + From<StoreError>>(&self, staging_dir: &Path, produce: Producer<'_, E>) -> Result<(u64, u64), E> {
        let staging = Store::open_scratch(staging_dir, self.config.chunking, PACK_SIZE)?;
        let (jobs, queue) = tokio::sync::mpsc::channel::<Sealed>(1);
        let op = self.op.clone();
        let handle = self.runtime.handle().clone();
        let url = self.url.clone();
        let mirror = self.cache.packs_dir().to_path_buf();
        let uploader = std::thread::spawn(move || handle.block_on(upload_in_order(op, url, queue, mirror)));
        let mut stored = (0u64, 0u64);
        let produced = (|| -> Result<(), E> {
            let mut session = staging.begin_write()?;
            session.on_seal(move |sealed| {
                let job = Sealed { checksum: sealed.checksum, pack: sealed.pack_path.to_path_buf(), index: sealed.index_path.to_path_buf() };
                jobs.blocking_send(job).map_err(|_| StoreError::Other("the upload stopped".into()))
            });
            produce(&mut |obj: &StoredObject| {
                if !self.cache.contains(&obj.id)? && session.put_verified(obj)? {
                    stored.0 += 1;
                    stored.1 += obj.payload.len() as u64;
                }
                Ok(())
            })?;
            session.finish()?;
            Ok(())
        })();
        let uploaded = uploader.join().unwrap_or_else(|_| Err(BucketError::Invalid("the upload thread failed".into())));
        // The upload's own error says more than "the upload stopped".
        uploaded.map_err(E::from)?;
        produced?;
        Ok(stored)
    }

    /// The ref table and its version.
    pub fn read_refs(&self) -> BucketResult<RefSnapshot> {
        self.runtime.block_on(async {
            for _ in 0..MAX_SWAP_ATTEMPTS {
                let etag = match self.op.stat(REFS_KEY).await {
                    Ok(meta) if meta.content_length() > MAX_REF_TABLE_SIZE => {
                        let detail = format!("{REFS_KEY} is {} bytes, more than a ref table can be ({} MiB)", meta.content_length(), MAX_REF_TABLE_SIZE >> 20);
                        return Err(BucketError::Damaged { url: self.url.clone(), detail });
                    }
                    Ok(meta) => meta.etag().map(str::to_string),
                    Err(e) if e.kind() == ErrorKind::NotFound => return Ok(RefSnapshot::default()),
                    Err(e) => return Err(self.classify(e, "reading refs")),
                };
                let Some(etag) = etag else {
                    return Err(BucketError::Storage { url: self.url.clone(), detail: "the object store gives no ETag for refs; it cannot do compare-and-swap".into() });
                };
                match self.op.read_with(REFS_KEY).if_match(&etag).await {
                    Ok(bytes) => {
                        let bytes = bytes.to_vec();
                        trace::count_received(bytes.len() as u64);
                        let table = RefTable::decode(&bytes).map_err(|d| BucketError::Damaged { url: self.url.clone(), detail: format!("{REFS_KEY}: {d}") })?;
                        return Ok(RefSnapshot { table, etag: Some(etag) });
                    }
                    // Replaced between the two requests: read the new one.
                    Err(e) if matches!(e.kind(), ErrorKind::ConditionNotMatch | ErrorKind::NotFound) => continue,
                    Err(e) => return Err(self.classify(e, "reading refs")),
                }
            }
            Err(BucketError::Storage { url: self.url.clone(), detail: "the ref table kept changing while it was read; try again".into() })
        })
    }

    /// Applies `changes` all or nothing, each only if its ref is still at
    /// `old`. Concurrent writers race on the ref table's ETag: exactly one
    /// wins each round, and a loser whose refs were not touched retries.
    pub fn update_refs(&self, changes: &[RefChange]) -> BucketResult<RefUpdateOutcome> {
        if changes.is_empty() {
            return self.check_writable().map(|_| RefUpdateOutcome::Updated);
        }
        let mut lost = 0u32;
        loop {
            let snapshot = self.read_refs()?;
            // After a lost race: a swap of ours that landed although its answer
            // was lost (and retried into a 412) shows as our own values.
            if lost > 0 && changes.iter().all(|c| snapshot.table.refs.get(&c.name).copied() == c.new) {
                return Ok(RefUpdateOutcome::Updated);
            }
            let mut table = snapshot.table.clone();
            for c in changes {
                let found = table.refs.get(&c.name).copied();
                if found != c.old {
                    return Ok(RefUpdateOutcome::Rejected { name: c.name.clone(), found });
                }
                match c.new {
                    Some(id) => {
                        table.refs.insert(c.name.clone(), id);
                    }
                    None => {
                        table.refs.remove(&c.name);
                    }
                }
            }
            if table.head.is_none() {
                table.head = changes.iter().find(|c| c.new.is_some() && c.name.starts_with("refs/heads/")).map(|c| c.name.clone());
            }
            test_pause_before_swap();
            if self.swap_refs(&table, snapshot.etag.as_deref())? {
                return Ok(RefUpdateOutcome::Updated);
            }
            lost += 1;
            if lost >= MAX_SWAP_ATTEMPTS {
                return Err(BucketError::Storage { url: self.url.clone(), detail: format!("the ref table changed under {lost} attempts to update it; try again") });
            }
            // Jittered backoff, so racing writers stop colliding.
            let jitter = u64::from(std::process::id() % 7 + lost) * 15;
            std::thread::sleep(Duration::from_millis(jitter.min(500)));
        }
    }

    /// Checks, before anything is uploaded, that this client may write and
    /// that the store honours conditional writes (without them refs could
    /// be lost): rewriting the config with `If-None-Match: *` must be refused.
    pub fn check_writable(&self) -> BucketResult<()> {
        let written = self.runtime.block_on(async { self.op.write_with(CONFIG_KEY, self.config_bytes.clone()).if_not_exists(true).await });
        match written {
            Err(e) if lost_race(&e) => Ok(()),
            Err(e) => Err(self.classify(e, "checking write access")),
            // It rewrote the same bytes: harmless, but the store ignores the condition.
            Ok(_) => Err(BucketError::Storage {
                url: self.url.clone(),
                detail: "this object store ignores conditional writes (If-None-Match), so concurrent pushes could lose updates; DMV will not push to it".into(),
            }),
        }
    }

    /// Writes the ref table if it is still at `etag` (None: if there is none).
    fn swap_refs(&self, table: &RefTable, etag: Option<&str>) -> BucketResult<bool> {
        let bytes = table.encode();
        let len = bytes.len() as u64;
        let written = self.runtime.block_on(async {
            let write = self.op.write_with(REFS_KEY, bytes);
            match etag {
                Some(etag) => write.if_match(etag).await,
                None => write.if_not_exists(true).await,
            }
        });
        match written {
            Ok(_) => {
                trace::count_sent(len);
                Ok(true)
            }
            Err(e) if lost_race(&e) => Ok(false),
            Err(e) => Err(self.classify(e, "updating refs")),
        }
    }
}

/// `DMV_TEST_PAUSE_BEFORE_REF_SWAP_MS`: the tests' way to make two pushes
/// read the same ref table and then race on the swap.
fn test_pause_before_swap() {
    if let Some(ms) = std::env::var("DMV_TEST_PAUSE_BEFORE_REF_SWAP_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// 128 random-enough bits: unique per repository, not a secret.
fn new_repository_id() -> String {
    let mut h = blake3::Hasher::new();
    h.update(format!("{:?}{}{:?}", std::time::SystemTime::now(), std::process::id(), std::thread::current().id()).as_bytes());
    h.update(&(&h as *const _ as usize).to_le_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// Removes what pushes killed before they finished left behind.
fn remove_dead_staging(cache_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(cache_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(STAGING_PREFIX)).and_then(|p| p.parse::<i32>().ok()) else { continue };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Another writer got there first (412), or the store saw two conditional
/// writes at once (409 ConditionalRequestConflict): either way, re-read.
fn lost_race(e: &opendal::Error) -> bool {
    e.kind() == ErrorKind::ConditionNotMatch
        || e.kind() == ErrorKind::AlreadyExists
        || e.message().contains("ConditionalRequestConflict")
        || e.message().contains("PreconditionFailed")
}

fn pack_of_index_name(name: &str) -> Option<ObjectId> {
    let name = name.rsplit('/').next()?;
    ObjectId::from_hex(name.strip_prefix("pack-")?.strip_suffix(".idx")?)
}

fn operator(url: &BucketUrl, options: &BucketOptions) -> opendal::Result<Operator> {
    let mut builder = opendal::services::S3::default().bucket(&url.bucket).root(&format!("/{}", url.prefix)).disable_ec2_metadata();
    if let Some(endpoint) = options.endpoint.as_deref().filter(|e| !e.is_empty()) {
        builder = builder.endpoint(endpoint);
    }
    let region = options
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "us-east-1".into());
    builder = builder.region(&region);
    if options.virtual_host_style {
        builder = builder.enable_virtual_host_style();
    }
    Ok(Operator::new(builder)?
        // A pack's close waits for its last parts: generous enough for slow uplinks.
        .layer(TimeoutLayer::new().with_timeout(Duration::from_secs(120)).with_io_timeout(Duration::from_secs(300)))
        .layer(RetryLayer::new().with_max_times(3).with_min_delay(Duration::from_millis(100)).with_max_delay(Duration::from_secs(2)).with_jitter()))
}

async fn read_or_create_config(op: &Operator, url: &str, bucket: &str, create: Option<ChunkParams>) -> BucketResult<(BucketConfig, Vec<u8>)> {
    let not_repo = |detail: String| BucketError::NotARepository { url: url.to_string(), detail };
    loop {
        let read = match op.stat(CONFIG_KEY).await {
            Ok(meta) if meta.content_length() > MAX_CONFIG_SIZE => {
                return Err(not_repo(format!("{CONFIG_KEY} is {} bytes, more than a DMV repository config can be", meta.content_length())));
            }
            Ok(meta) if meta.content_length() == 0 => Ok(opendal::Buffer::new()),
            // The config is written once (if absent) and never replaced: its length bounds the read.
            Ok(meta) => op.read_with(CONFIG_KEY).range(0..meta.content_length()).await,
            Err(e) => Err(e),
        };
        match read {
            Ok(bytes) => {
                let bytes = bytes.to_vec();
                trace::count_received(bytes.len() as u64);
                let config: BucketConfig = serde_json::from_slice(&bytes).map_err(|e| not_repo(format!("{CONFIG_KEY} is not a DMV repository config: {e}")))?;
                if config.format != FORMAT_VERSION {
                    return Err(BucketError::Invalid(format!("{url}: repository format {} is not supported by this dmv (supports {FORMAT_VERSION})", config.format)));
                }
                config.chunking.validate().map_err(|d| not_repo(format!("{CONFIG_KEY}: {d}")))?;
                return Ok((config, bytes));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let Some(chunking) = create else {
                    return Err(not_repo(format!("not a DMV repository (no {CONFIG_KEY} there; push to it to create one)")));
                };
                let config = BucketConfig { format: FORMAT_VERSION, chunking, id: new_repository_id() };
                let bytes = serde_json::to_vec_pretty(&config).map_err(|e| BucketError::Invalid(e.to_string()))?;
                trace::count_sent(bytes.len() as u64);
                match op.write_with(CONFIG_KEY, bytes).if_not_exists(true).await {
                    // Created, or someone else created it at the same moment: read what won.
                    Ok(_) => continue,
                    Err(e) if lost_race(&e) => continue,
                    Err(e) => return Err(classify(url, bucket, e, "creating the repository")),
                }
            }
            Err(e) => return Err(classify(url, bucket, e, "reading the repository config")),
        }
    }
}

/// A pack staged for upload.
struct Sealed {
    checksum: ObjectId,
    pack: PathBuf,
    index: PathBuf,
}

/// Uploads staged packs as they come, the bodies of up to
/// [`PACKS_IN_FLIGHT`] at once, and publishes each (uploads its index) only
/// after every pack before it: a pack becomes visible in the order written.
async fn upload_in_order(op: Operator, url: String, mut queue: tokio::sync::mpsc::Receiver<Sealed>, mirror: PathBuf) -> BucketResult<()> {
    let mut bodies = futures_util::stream::FuturesOrdered::new();
    let mut more = true;
    loop {
        while more && bodies.len() < PACKS_IN_FLIGHT {
            match queue.recv().await {
                // A task of its own, so the body keeps uploading while this waits for the next pack.
                Some(job) => bodies.push_back(tokio::spawn(upload_body(op.clone(), url.clone(), job))),
                None => more = false,
            }
        }
        let Some(done) = bodies.next().await else { return Ok(()) };
        let job = done.map_err(|e| BucketError::Invalid(format!("an upload task failed: {e}")))??;
        let index_key = format!("{PACKS_PREFIX}{}", index_file_name(&job.checksum));
        let index = std::fs::read(&job.index).map_err(|e| BucketError::Invalid(format!("{}: {e}", job.index.display())))?;
        let n = index.len() as u64;
        op.write(&index_key, index).await.map_err(|e| classify(&url, &bucket_of(&url), e, &format!("uploading {index_key}")))?;
        trace::count_sent(n);
        // Published: the index joins the mirror, the staged pack goes.
        let _ = std::fs::rename(&job.index, mirror.join(index_file_name(&job.checksum)));
        let _ = std::fs::remove_file(&job.pack);
    }
}

/// Uploads a staged pack's bytes (multipart, parts in parallel); invisible
/// until its index follows.
async fn upload_body(op: Operator, url: String, job: Sealed) -> BucketResult<Sealed> {
    let pack_key = format!("{PACKS_PREFIX}{}", pack_file_name(&job.checksum));
    let fail = |e: opendal::Error| classify(&url, &bucket_of(&url), e, &format!("uploading {pack_key}"));
    let local = |e: std::io::Error| BucketError::Invalid(format!("{}: {e}", job.pack.display()));
    let mut writer = op.writer_with(&pack_key).concurrent(UPLOAD_CONCURRENCY).chunk(PART_SIZE).await.map_err(fail)?;
    let written = async {
        let mut file = std::fs::File::open(&job.pack).map_err(local)?;
        loop {
            let mut part = Vec::with_capacity(PART_SIZE);
            (&mut file).take(PART_SIZE as u64).read_to_end(&mut part).map_err(local)?;
            if part.is_empty() {
                break;
            }
            let n = part.len() as u64;
            writer.write(part).await.map_err(fail)?;
            trace::count_sent(n);
        }
        writer.close().await.map_err(fail)
    }
    .await;
    if let Err(e) = written {
        // Best effort: an abandoned multipart upload costs storage until a lifecycle rule ends it.
        let _ = writer.abort().await;
        return Err(e);
    }
    dmv_store::failpoint("bucket-pack-uploaded");
    Ok(job)
}

fn bucket_of(url: &str) -> String {
    BucketUrl::parse(url).map(|u| u.bucket).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_urls() {
        assert_eq!(BucketUrl::parse("s3://photos").unwrap(), BucketUrl { bucket: "photos".into(), prefix: "".into() });
        assert_eq!(BucketUrl::parse("s3://photos/studio/2026/").unwrap(), BucketUrl { bucket: "photos".into(), prefix: "studio/2026".into() });
        for bad in ["s3://", "s3://ab", "s3://Photos/x", "s3://photos/../x", "s3://photos//x", "s3://-x/y", "http://photos/x", "s3://photos/./x"] {
            assert!(BucketUrl::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn index_names_give_their_pack() {
        let id = ObjectId([7; 32]);
        assert_eq!(pack_of_index_name(&format!("packs/{}", index_file_name(&id))), Some(id));
        assert_eq!(pack_of_index_name(&pack_file_name(&id)), None);
        assert_eq!(pack_of_index_name("packs/pack-zz.idx"), None);
    }
}
