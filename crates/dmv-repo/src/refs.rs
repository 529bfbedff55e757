//! The one interface through which the repository reads and moves refs.
//! `HEAD` is a small file of its own (a symbolic ref or a detached id).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dmv_store::ObjectId;

use crate::error::IoContext;
use crate::{RepoError, RepoResult};

#[derive(Clone, Debug)]
pub struct RefUpdate {
    pub name: String,
    /// `None`: any old value; `Some(None)`: must not exist; `Some(Some(id))`: must equal.
    pub expected: Option<Option<ObjectId>>,
    /// `None` deletes.
    pub new: Option<ObjectId>,
}

pub trait RefBackend: Send + Sync {
    fn get(&self, name: &str) -> RepoResult<Option<ObjectId>>;
    fn list(&self, prefix: &str) -> RepoResult<Vec<(String, ObjectId)>>;
    /// All or nothing, each update checked against its expected old value.
    fn update(&self, updates: &[RefUpdate], who: &str, message: &str) -> RepoResult<()>;
    fn verify(&self) -> RepoResult<()>;
    fn compact(&self) -> RepoResult<()>;
    /// Every id the reflog remembers (gc keeps them).
    fn reflog_ids(&self) -> RepoResult<Vec<ObjectId>>;
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    Branch(String),
    Detached(ObjectId),
}

impl Head {
    pub fn load(path: &Path) -> RepoResult<Head> {
        let text = std::fs::read_to_string(path).at(path)?;
        let text = text.trim_end();
        if let Some(name) = text.strip_prefix("ref: ") {
            return Ok(Head::Branch(name.to_string()));
        }
        ObjectId::from_hex(text).map(Head::Detached).ok_or_else(|| RepoError::Corrupt { path: path.into(), detail: "HEAD is neither a ref nor an id".into() })
    }

    pub fn save(&self, path: &Path) -> RepoResult<()> {
        let text = match self {
            Head::Branch(name) => format!("ref: {name}\n"),
            Head::Detached(id) => format!("{id}\n"),
        };
        crate::repo::write_atomic(path, text.as_bytes())
    }
}

/// Refuses names a user could not have meant, and names that would be
/// ambiguous in revision syntax.
pub fn validate_ref_name(name: &str) -> RepoResult<()> {
    let bad = |why: &str| Err(RepoError::Invalid(format!("invalid ref name '{}': {why}", name.escape_debug())));
    if name.is_empty() || name.len() > 1024 {
        return bad("empty or too long");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return bad("empty path component");
    }
    if name.split('/').any(|c| c == "." || c == ".." || c.ends_with(".lock") || c.starts_with('.')) {
        return bad("component '.', '..', starting with '.' or ending in '.lock'");
    }
    if name.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c)) || name.contains("@{") {
        return bad("control characters, spaces and ~^:?*[\\ are not allowed");
    }
    Ok(())
}

/// A deliberately simple backend: one sorted text file replaced atomically
/// under an exclusive lock file. The reftable store replaces it.
pub struct FileRefs {
    path: PathBuf,
    lock: PathBuf,
    timeout: Duration,
}

impl FileRefs {
    pub fn new(dir: &Path) -> FileRefs {
        FileRefs { path: dir.join("refs.txt"), lock: dir.join("refs.txt.lock"), timeout: Duration::from_secs(5) }
    }

    fn read_all(&self) -> RepoResult<BTreeMap<String, ObjectId>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(RepoError::io(&self.path, e)),
        };
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let (id, name) = line.split_once(' ').ok_or_else(|| RepoError::Corrupt { path: self.path.clone(), detail: format!("bad line '{line}'") })?;
            let id = ObjectId::from_hex(id).ok_or_else(|| RepoError::Corrupt { path: self.path.clone(), detail: format!("bad id in '{line}'") })?;
            map.insert(name.to_string(), id);
        }
        Ok(map)
    }
}

/// A lock whose writer process no longer exists can be removed: the ref file
/// itself is only ever replaced by rename, so it is intact.
fn lock_owner_is_dead(lock: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(lock) else { return false };
    let Ok(pid) = text.trim().parse::<i32>() else { return false };
    // SAFETY: kill with signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

struct LockFile(PathBuf);
impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl RefBackend for FileRefs {
    fn get(&self, name: &str) -> RepoResult<Option<ObjectId>> {
        Ok(self.read_all()?.get(name).copied())
    }

    fn list(&self, prefix: &str) -> RepoResult<Vec<(String, ObjectId)>> {
        Ok(self.read_all()?.into_iter().filter(|(n, _)| n.starts_with(prefix)).collect())
    }

    fn update(&self, updates: &[RefUpdate], _who: &str, _message: &str) -> RepoResult<()> {
        for u in updates {
            validate_ref_name(&u.name)?;
        }
        let start = Instant::now();
        let _lock = loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&self.lock) {
                Ok(mut f) => {
                    use std::io::Write;
                    let _ = write!(f, "{}", std::process::id());
                    break LockFile(self.lock.clone());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && lock_owner_is_dead(&self.lock) => {
                    let _ = std::fs::remove_file(&self.lock);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && start.elapsed() < self.timeout => std::thread::sleep(Duration::from_millis(10)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(RepoError::Invalid(format!("refs are locked ({} exists); if no dmv process is running, delete it", self.lock.display())))
                }
                Err(e) => return Err(RepoError::io(&self.lock, e)),
            }
        };
        let mut map = self.read_all()?;
        for u in updates {
            let current = map.get(&u.name).copied();
            if let Some(expected) = u.expected {
                if expected != current {
                    let show = |v: Option<ObjectId>| v.map(|i| i.short()).unwrap_or_else(|| "nothing".into());
                    return Err(RepoError::RefChanged { name: u.name.clone(), expected: show(expected), found: show(current) });
                }
            }
            match u.new {
                Some(id) => map.insert(u.name.clone(), id),
                None => map.remove(&u.name),
            };
        }
        let mut text = String::new();
        for (name, id) in &map {
            text.push_str(&format!("{id} {name}\n"));
        }
        dmv_store::failpoint("refs-before-write");
        crate::repo::write_atomic(&self.path, text.as_bytes())
    }

    fn verify(&self) -> RepoResult<()> {
        self.read_all().map(|_| ())
    }

    fn compact(&self) -> RepoResult<()> {
        Ok(())
    }

    fn reflog_ids(&self) -> RepoResult<Vec<ObjectId>> {
        Ok(Vec::new())
    }
}
