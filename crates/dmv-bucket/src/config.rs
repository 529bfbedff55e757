//! The repository's config object: the format and chunking fixed when the
//! first push created the repository, and the id its local mirror is kept by.

use dmv_store::{trace, ChunkParams};
use opendal::ErrorKind;
use serde::{Deserialize, Serialize};

use crate::error::{BucketError, BucketResult, Target};
use crate::layout::CONFIG_KEY;
use crate::objects::Objects;
use crate::url::Conn;

/// The repository format this dmv writes and reads; a bucket with another is refused.
pub const FORMAT_VERSION: u32 = 1;
/// The config is a few hundred bytes: what the bucket says it holds is
/// checked against this before anything is downloaded.
const MAX_CONFIG_SIZE: u64 = 1 << 20;

/// The repository config object (`dmv-repository.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketConfig {
    /// The repository format ([`FORMAT_VERSION`]).
    pub format: u32,
    /// The chunking every replica of the repository must use.
    pub chunking: ChunkParams,
    /// Random, fixed at creation: the local mirror of this repository's
    /// indexes is kept per id, so two repositories behind one URL (another
    /// endpoint, a recreated bucket) never share a mirror.
    #[serde(default)]
    pub id: String,
}

/// Reads the config, and its bytes exactly as stored. With `create`, an
/// empty location becomes a repository with those chunking parameters;
/// without, it is an error.
pub(crate) fn read_or_create(
    conn: &Conn,
    create: Option<ChunkParams>,
) -> BucketResult<(BucketConfig, Vec<u8>)> {
    conn.run(
        "reading the repository config",
        read_or_create_async(Objects::of(conn), conn.target.clone(), create),
    )
}

async fn read_or_create_async(
    objects: Objects,
    target: Target,
    create: Option<ChunkParams>,
) -> BucketResult<(BucketConfig, Vec<u8>)> {
    let not_repo = |detail: String| BucketError::NotARepository {
        url: target.url.clone(),
        detail,
    };
    loop {
        let read = match objects.stat(CONFIG_KEY).await {
            Ok(meta) if meta.len > MAX_CONFIG_SIZE => {
                return Err(not_repo(format!(
                    "{CONFIG_KEY} is {} bytes, more than a DMV repository config can be",
                    meta.len
                )));
            }
            Ok(meta) if meta.len == 0 => Ok(Vec::new()),
            // The config is written once (if absent) and never replaced: its length bounds the read.
            Ok(meta) => objects.get_range(CONFIG_KEY, 0..meta.len).await,
            Err(e) => Err(e),
        };
        match read {
            Ok(bytes) => {
                trace::count_received(bytes.len() as u64);
                let config: BucketConfig = serde_json::from_slice(&bytes).map_err(|e| {
                    not_repo(format!("{CONFIG_KEY} is not a DMV repository config: {e}"))
                })?;
                if config.format != FORMAT_VERSION {
                    return Err(BucketError::UnsupportedFormat {
                        url: target.url.clone(),
                        found: config.format,
                        supported: FORMAT_VERSION,
                    });
                }
                config
                    .chunking
                    .validate()
                    .map_err(|d| not_repo(format!("{CONFIG_KEY}: {d}")))?;
                return Ok((config, bytes));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let Some(chunking) = create else {
                    return Err(not_repo(format!(
                        "not a DMV repository (no {CONFIG_KEY} there; push to it to create one)"
                    )));
                };
                let config = BucketConfig {
                    format: FORMAT_VERSION,
                    chunking,
                    id: new_repository_id(),
                };
                let bytes =
                    serde_json::to_vec_pretty(&config).map_err(|e| BucketError::Internal {
                        what: "writing the repository config",
                        detail: e.to_string(),
                    })?;
                trace::count_sent(bytes.len() as u64);
                match objects.put_if_absent(CONFIG_KEY, bytes).await {
                    // Created, or someone else created it at the same moment: read what won.
                    Ok(_) => continue,
                    Err(e) => return Err(target.classify(e, "creating the repository")),
                }
            }
            Err(e) => return Err(target.classify(e, "reading the repository config")),
        }
    }
}

/// 128 random-enough bits: unique per repository, not a secret.
fn new_repository_id() -> String {
    new_token()
}

/// 128 random-enough bits as 32 hex digits: unique, not a secret.
pub(crate) fn new_token() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut h = blake3::Hasher::new();
    h.update(
        format!(
            "{:?}{}{:?}{n}",
            std::time::SystemTime::now(),
            std::process::id(),
            std::thread::current().id()
        )
        .as_bytes(),
    );
    h.update(&(&h as *const _ as usize).to_le_bytes());
    h.finalize().to_hex()[..32].to_string()
}
