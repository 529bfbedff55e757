//! The repository's config object: the format and chunking fixed when the
//! first push created the repository, and the id its local mirror is kept by.

use dmv_store::ChunkParams;
use opendal::ErrorKind;
use serde::{Deserialize, Serialize};

use crate::error::{BucketError, BucketResult, Target};
use crate::layout::CONFIG_KEY;
use crate::objects::Objects;
use crate::url::Conn;

/// The repository format this dmv writes and reads; a bucket with another is refused.
pub const FORMAT_VERSION: u32 = 1;
/// The format of an encrypted repository: the same layout, every object
/// but the config and the wrapped keys sealed. A dmv that knows only
/// [`FORMAT_VERSION`] refuses it (upgrade) rather than read ciphertext.
pub const SEALED_FORMAT_VERSION: u32 = 2;
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
    /// Present when the repository is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<SealedConfig>,
}

/// What the config says of an encrypted repository's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedConfig {
    /// The keyring's fingerprint (a keyed name of nothing, 64 hex digits):
    /// of the wrapped keys in `keys/`, only those that open to this keyring
    /// are the repository's (two clients creating the repository at once
    /// both write keys; one config wins).
    pub keyring: String,
}

impl BucketConfig {
    /// Whether the config's format and encryption agree.
    fn format_fits(&self) -> bool {
        match self.sealed {
            Some(_) => self.format == SEALED_FORMAT_VERSION,
            None => self.format == FORMAT_VERSION,
        }
    }
}

/// A keyring's fingerprint, as the config records it.
pub(crate) fn fingerprint(keyring: &dmv_crypt::Keyring) -> String {
    keyring.name_hex(b"keyring fingerprint", b"")
}

/// A repository to make if the location is empty: its chunking, and for an
/// encrypted one its new keyring and the wrapped keys to store first.
pub(crate) struct Creation<'a> {
    pub chunking: ChunkParams,
    /// Makes the keyring and its wrapped copies (object key, body), only
    /// if the repository is really created.
    pub sealed: Option<&'a dyn Fn() -> BucketResult<Wrapped>>,
}

/// A new keyring and its wrapped copies (object key, body).
pub(crate) type Wrapped = (dmv_crypt::Keyring, Vec<(String, Vec<u8>)>);

/// Reads the config, and its bytes exactly as stored. With `create`, an
/// empty location becomes a repository with those chunking parameters
/// (encrypted if `create.sealed` says how to make its keys); without, it is
/// an error.
pub(crate) fn read_or_create(
    conn: &Conn,
    create: Option<Creation<'_>>,
) -> BucketResult<(BucketConfig, Vec<u8>)> {
    let target = conn.target.clone();
    loop {
        let read = read_async(Objects::of(conn), target.clone());
        if let Some(found) = conn.run("reading the repository config", read)? {
            return Ok(found);
        }
        let Some(create) = &create else {
            return Err(not_repo(
                &target,
                format!("not a DMV repository (no {CONFIG_KEY} there; push to it to create one)"),
            ));
        };
        let (sealed, wrapped) = match create.sealed {
            None => (None, Vec::new()),
            Some(make) => {
                let (keyring, wrapped) = make()?;
                let sealed = SealedConfig {
                    keyring: fingerprint(&keyring),
                };
                (Some(sealed), wrapped)
            }
        };
        let config = BucketConfig {
            format: match sealed {
                Some(_) => SEALED_FORMAT_VERSION,
                None => FORMAT_VERSION,
            },
            chunking: create.chunking,
            id: new_repository_id(),
            sealed,
        };
        let bytes = serde_json::to_vec_pretty(&config).map_err(|e| BucketError::Internal {
            what: "writing the repository config",
            detail: e.to_string(),
        })?;
        let (objects, target) = (Objects::of(conn), target.clone());
        conn.run("creating the repository", async move {
            // The keys first: a config saying "encrypted" never stands without them.
            for (key, body) in wrapped {
                objects
                    .put(&key, body)
                    .await
                    .map_err(|e| target.classify(e, &format!("writing {key}")))?;
            }
            // Created, or someone else created it at the same moment: read what won.
            objects
                .put_if_absent(CONFIG_KEY, bytes)
                .await
                .map_err(|e| target.classify(e, "creating the repository"))
        })?;
    }
}

fn not_repo(target: &Target, detail: String) -> BucketError {
    BucketError::NotARepository {
        url: target.url.clone(),
        detail,
    }
}

/// The config and its bytes; None if there is none.
async fn read_async(
    objects: Objects,
    target: Target,
) -> BucketResult<Option<(BucketConfig, Vec<u8>)>> {
    let not_repo = |detail: String| not_repo(&target, detail);
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
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(target.classify(e, "reading the repository config")),
    };
    let config: BucketConfig = serde_json::from_slice(&bytes)
        .map_err(|e| not_repo(format!("{CONFIG_KEY} is not a DMV repository config: {e}")))?;
    if !config.format_fits() {
        if ![FORMAT_VERSION, SEALED_FORMAT_VERSION].contains(&config.format) {
            return Err(BucketError::UnsupportedFormat {
                url: target.url.clone(),
                found: config.format,
                supported: SEALED_FORMAT_VERSION,
            });
        }
        return Err(not_repo(format!(
            "{CONFIG_KEY}: format {} does not fit its encryption",
            config.format
        )));
    }
    if let Some(sealed) = &config.sealed {
        let hex64 =
            sealed.keyring.len() == 64 && sealed.keyring.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex64 {
            return Err(not_repo(format!(
                "{CONFIG_KEY}: the keyring fingerprint is not 64 hex digits"
            )));
        }
    }
    config
        .chunking
        .validate()
        .map_err(|d| not_repo(format!("{CONFIG_KEY}: {d}")))?;
    Ok(Some((config, bytes)))
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
