//! The one interface through which the repository reads and moves refs.
//! `HEAD` is a small file of its own (a symbolic ref or a detached id).

use std::path::Path;
use std::time::Duration;

use dmv_store::ObjectId;

use crate::error::IoContext;
use crate::{RepoError, RepoResult};

/// One change in a [`RefBackend::update`].
#[derive(Clone, Debug)]
pub struct RefUpdate {
    /// The full ref name, e.g. `refs/heads/main`.
    pub name: String,
    /// `None`: any old value; `Some(None)`: must not exist; `Some(Some(id))`: must equal.
    pub expected: Option<Option<ObjectId>>,
    /// `None` deletes.
    pub new: Option<ObjectId>,
}

/// Where the repository's refs are kept. Names are full (`refs/heads/...`).
pub trait RefBackend: Send + Sync {
    /// The ref's commit; None if it does not exist.
    fn get(&self, name: &str) -> RepoResult<Option<ObjectId>>;
    /// Every ref whose name starts with `prefix`, with its id, in name order.
    fn list(&self, prefix: &str) -> RepoResult<Vec<(String, ObjectId)>>;
    /// All or nothing, each update checked against its expected old value.
    fn update(&self, updates: &[RefUpdate], who: &str, message: &str) -> RepoResult<()>;
    /// Checks the stored refs (checksums, order, contents), for fsck;
    /// fails with [`RepoError::Refs`] if they are damaged.
    fn verify(&self) -> RepoResult<()>;
    /// Merges the stored tables into one, dropping deleted refs (gc).
    fn compact(&self) -> RepoResult<()>;
    /// Every id the reflog remembers (gc keeps them).
    fn reflog_ids(&self) -> RepoResult<Vec<ObjectId>>;
    /// Newest first; kept after the ref is deleted.
    fn reflog(&self, name: &str) -> RepoResult<Vec<dmv_refs::ReflogEntry>>;
}

/// What HEAD points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// A branch, by full ref name; it may not exist yet (a new repository).
    Branch(String),
    /// A commit, not on any branch.
    Detached(ObjectId),
}

impl Head {
    /// Reads a HEAD file; fails with [`RepoError::Corrupt`] if it is neither.
    pub fn load(path: &Path) -> RepoResult<Head> {
        let text = std::fs::read_to_string(path).at(path)?;
        let text = text.trim_end();
        if let Some(name) = text.strip_prefix("ref: ") {
            return Ok(Head::Branch(name.to_string()));
        }
        ObjectId::from_hex(text)
            .map(Head::Detached)
            .ok_or_else(|| RepoError::Corrupt {
                path: path.into(),
                detail: "HEAD is neither a ref nor an id".into(),
            })
    }

    /// Writes a HEAD file atomically.
    pub fn save(&self, path: &Path) -> RepoResult<()> {
        let text = match self {
            Head::Branch(name) => format!("ref: {name}\n"),
            Head::Detached(id) => format!("{id}\n"),
        };
        crate::atomic::write_atomic(path, text.as_bytes())
    }
}

/// Refuses names a user could not have meant, and names that would be
/// ambiguous in revision syntax.
pub fn validate_ref_name(name: &str) -> RepoResult<()> {
    dmv_refs::validate_name(name).map_err(RepoError::Refs)?;
    // As in Git: `A..B` reads as a range.
    if name.contains("..") {
        return Err(RepoError::Refs(dmv_refs::RefError::InvalidName {
            name: name.to_string(),
            reason: "'..' is not allowed",
        }));
    }
    Ok(())
}

/// The largest ref table carried inside tables.list: its base64 and the
/// table names fit in one 4 KiB block.
const INLINE_TABLE_LIMIT: u64 = 2560;

/// The reftable-style store of `dmv-refs` behind the repository's interface.
pub struct Reftable {
    store: dmv_refs::RefStore,
}

impl Reftable {
    /// Creates an empty ref store in `dir`.
    pub fn init(dir: &Path) -> RepoResult<()> {
        dmv_refs::RefStore::init(dir)
            .map(|_| ())
            .map_err(refs_error)
    }

    /// Opens the ref store in `dir`. `DMV_REF_LOCK_TIMEOUT` (seconds) sets how
    /// long an update waits for another writer.
    pub fn open(dir: &Path) -> RepoResult<Reftable> {
        // The repository lists `refs-inline`: a small transaction's table travels inside
        // tables.list (one file written and two flushes instead of two and four).
        let mut opts = dmv_refs::Options {
            inline_limit: INLINE_TABLE_LIMIT,
            ..Default::default()
        };
        if let Some(secs) = std::env::var("DMV_REF_LOCK_TIMEOUT")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
        {
            opts.lock_timeout = Duration::from_secs_f64(secs);
        }
        Ok(Reftable {
            store: dmv_refs::RefStore::open(dir, opts).map_err(refs_error)?,
        })
    }

    /// The underlying `dmv-refs` store, for what the interface does not cover.
    pub fn inner(&self) -> &dmv_refs::RefStore {
        &self.store
    }
}

fn short(v: &Option<dmv_refs::RefValue>) -> String {
    v.map(|b| ObjectId(b).short())
        .unwrap_or_else(|| "nothing".into())
}

/// A failed compare-and-swap becomes [`RepoError::RefChanged`] (with short
/// ids); anything else stays the ref store's own error.
fn refs_error(e: dmv_refs::RefError) -> RepoError {
    match e {
        dmv_refs::RefError::Changed {
            name,
            expected,
            found,
        } => RepoError::RefChanged {
            name,
            expected: short(&expected),
            found: short(&found),
        },
        other => RepoError::Refs(other),
    }
}

fn now() -> (i64, i16) {
    (
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
        0,
    )
}

impl RefBackend for Reftable {
    fn get(&self, name: &str) -> RepoResult<Option<ObjectId>> {
        Ok(self.store.get(name).map_err(refs_error)?.map(ObjectId))
    }

    fn list(&self, prefix: &str) -> RepoResult<Vec<(String, ObjectId)>> {
        Ok(self
            .store
            .list(prefix)
            .map_err(refs_error)?
            .into_iter()
            .map(|(n, v)| (n, ObjectId(v)))
            .collect())
    }

    fn update(&self, updates: &[RefUpdate], who: &str, message: &str) -> RepoResult<()> {
        let mut tx = self.store.transaction();
        for u in updates {
            validate_ref_name(&u.name)?;
            let expect = match u.expected {
                None => dmv_refs::Expect::Any,
                Some(None) => dmv_refs::Expect::Absent,
                Some(Some(id)) => dmv_refs::Expect::Value(id.0),
            };
            tx.update(&u.name, expect, u.new.map(|id| id.0))
                .map_err(refs_error)?;
        }
        tx.commit(who, now(), message).map_err(refs_error)
    }

    fn verify(&self) -> RepoResult<()> {
        self.store.verify().map_err(refs_error)
    }

    fn compact(&self) -> RepoResult<()> {
        self.store.compact_all().map_err(refs_error)
    }

    fn reflog_ids(&self) -> RepoResult<Vec<ObjectId>> {
        let mut ids = Vec::new();
        for name in self.store.reflog_names().map_err(refs_error)? {
            for e in self.store.reflog(&name).map_err(refs_error)? {
                ids.extend(e.old.into_iter().chain(e.new).map(ObjectId));
            }
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    fn reflog(&self, name: &str) -> RepoResult<Vec<dmv_refs::ReflogEntry>> {
        self.store.reflog(name).map_err(refs_error)
    }
}
