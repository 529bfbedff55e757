//! The local mirror of a bucket's pack indexes: a cache directory per
//! repository id, opened as an ordinary [`Store`] that holds the indexes of
//! the bucket's published packs and nothing else, so lookups are the local
//! ones. Pushes stage their packs in `staging-<pid>-<n>` directories beside it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use dmv_store::{index_file_name, pack_of_index, ObjectId, Store};
use futures_util::StreamExt;

use crate::config::BucketConfig;
use crate::error::{BucketError, BucketResult};
use crate::layout::{pack_of_index_name, CONFIG_KEY, PACKS_PREFIX, PACK_SIZE};
use crate::objects::Objects;
use crate::url::{Conn, READS_IN_FLIGHT};

/// Packs a push is writing live in `<mirror>/staging-<pid>-<n>` until uploaded.
const STAGING_PREFIX: &str = "staging-";
/// A pack index is 56 bytes per object of a pack of at most `PACK_SIZE`
/// plus one object, each object at least a 44-byte record header (~90 MiB):
/// an index the bucket lists as larger is refused before it is downloaded.
const MAX_INDEX_SIZE: u64 = 256 << 20;

pub(crate) struct Mirror {
    pub store: Store,
    pub dir: PathBuf,
    /// Without a cache directory of the caller's, the mirror is temporary.
    _tmp: Option<tempfile::TempDir>,
}

impl Mirror {
    /// Opens (or creates) the mirror of the repository `config` describes,
    /// under `root` or in a temporary directory, and removes what pushes
    /// killed before they finished left behind.
    pub fn open(root: Option<&Path>, config: &BucketConfig, url: &str) -> BucketResult<Mirror> {
        let id = if config.id.is_empty() {
            "no-id"
        } else {
            config.id.as_str()
        };
        if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(BucketError::NotARepository {
                url: url.to_string(),
                detail: format!("{CONFIG_KEY} has an invalid id"),
            });
        }
        let (root, tmp) = match root {
            Some(dir) => (dir.to_path_buf(), None),
            None => {
                let tmp = dmv_os::process_temp_dir("dmv-bucket-cache").map_err(|e| {
                    BucketError::io(
                        "cannot create a cache directory in",
                        std::env::temp_dir(),
                        e,
                    )
                })?;
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let dir = root.join(id);
        Store::create(&dir)?;
        remove_dead_staging(&dir);
        let store = Store::open(&dir, config.chunking, PACK_SIZE)?;
        Ok(Mirror {
            store,
            dir,
            _tmp: tmp,
        })
    }

    /// A directory of its own where a push stages its packs: `staging-PID-N`
    /// (a server runs several pushes at once over one mirror).
    pub fn staging_dir(&self) -> PathBuf {
        static PUSHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = PUSHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir
            .join(format!("{STAGING_PREFIX}{}-{n}", std::process::id()))
    }

    /// Mirrors the bucket's list of pack indexes: downloads (and verifies)
    /// the new ones, forgets the ones gone from the bucket. Packs are
    /// matched by the name the listing gives them (in an encrypted
    /// repository a token, not the sum the mirror's files are named by).
    pub fn refresh(&self, conn: &Conn) -> BucketResult<()> {
        let names = Objects::of(conn);
        let (objects, target) = (names.clone(), conn.target.clone());
        let listed = conn.run("listing packs", async move {
            let entries = objects
                .list(PACKS_PREFIX)
                .await
                .map_err(|e| target.classify(e, "listing packs"))?;
            Ok(entries
                .into_iter()
                .filter_map(|e| Some((objects.listed_index(&e.key)?, (e.key, e.len))))
                .collect::<HashMap<ObjectId, (String, u64)>>())
        })?;
        let packs_dir = self.store.packs_dir().to_path_buf();
        let mut cached = HashSet::new();
        let mut forgot = false;
        for entry in std::fs::read_dir(&packs_dir).map_err(|e| {
            BucketError::io(
                "cannot list the mirror of the bucket's indexes",
                &packs_dir,
                e,
            )
        })? {
            let Ok(entry) = entry else { continue };
            let Some(pack) = entry.file_name().to_str().and_then(pack_of_index_name) else {
                continue;
            };
            let name = names.listed_pack_name(&pack);
            if listed.contains_key(&name) {
                cached.insert(name);
            } else {
                // Gone from the bucket: the mirror must never claim what the bucket lacks.
                std::fs::remove_file(entry.path()).map_err(|e| {
                    BucketError::io(
                        "cannot remove an index gone from the bucket from the mirror",
                        entry.path(),
                        e,
                    )
                })?;
                forgot = true;
            }
        }
        if forgot {
            let _ = std::fs::remove_file(packs_dir.join(dmv_store::MULTI_PACK_INDEX));
        }
        let missing: Vec<(ObjectId, (String, u64))> = listed
            .into_iter()
            .filter(|(name, _)| !cached.contains(name))
            .collect();
        for (_, (key, len)) in &missing {
            if *len > MAX_INDEX_SIZE {
                let detail = format!(
                    "{key} is {len} bytes, more than a pack index can be ({} MiB)",
                    MAX_INDEX_SIZE >> 20
                );
                return Err(conn.target.damaged(detail));
            }
        }
        let handle = conn.runtime.handle().clone();
        conn.runtime.block_on(async {
            // Each download runs as a task of its own (see `Conn::run`); this thread installs them.
            let mut downloads =
                futures_util::stream::iter(missing.into_iter().map(|(name, (key, len))| {
                    let objects = Objects::of(conn);
                    handle.spawn(async move {
                        // The listed length bounds the read (an index is never replaced).
                        let got = match len {
                            0 => Ok(Vec::new()),
                            _ => objects.get_range(&key, 0..len).await,
                        };
                        (name, key, got)
                    })
                }))
                .buffer_unordered(READS_IN_FLIGHT);
            while let Some(joined) = downloads.next().await {
                let (name, key, got) = joined.map_err(|e| BucketError::Internal {
                    what: "an index download task",
                    detail: e.to_string(),
                })?;
                let bytes = got.map_err(|e| conn.target.classify(e, &format!("reading {key}")))?;
                self.install_index(conn, &names, &name, &key, &bytes)?;
            }
            Ok::<_, BucketError>(())
        })?;
        self.store.reload()?;
        // Thousands of packs must not mean thousands of probes per lookup.
        self.store.index_packs_if_many()?;
        Ok(())
    }

    /// Installs a downloaded index if it indexes the pack its listed name
    /// (`name`) stands for, under that pack's sum.
    fn install_index(
        &self,
        conn: &Conn,
        names: &Objects,
        name: &ObjectId,
        key: &str,
        bytes: &[u8],
    ) -> BucketResult<()> {
        let dir = self.store.packs_dir();
        let tmp = tempfile::Builder::new()
            .prefix("download-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| {
                BucketError::io(
                    "cannot create a file in the mirror of the bucket's indexes",
                    dir,
                    e,
                )
            })?;
        std::fs::write(tmp.path(), bytes)
            .map_err(|e| BucketError::io("cannot write a downloaded index to", tmp.path(), e))?;
        let pack =
            pack_of_index(tmp.path()).map_err(|e| conn.target.damaged(format!("{key}: {e}")))?;
        if names.listed_pack_name(&pack) != *name {
            return Err(conn
                .target
                .damaged(format!("{key} indexes another pack ({pack})")));
        }
        let path = dir.join(index_file_name(&pack));
        tmp.persist(&path)
            .map_err(|e| BucketError::io("cannot install a downloaded index as", &path, e.error))?;
        Ok(())
    }
}

/// Removes the staging directories of pushes that were killed before they finished.
fn remove_dead_staging(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        // `staging-PID-N`, or `staging-PID` as older versions named it.
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(STAGING_PREFIX))
            .and_then(|p| p.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if !dmv_os::process_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
