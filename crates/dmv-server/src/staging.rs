//! The files being uploaded from browsers, piece by piece: which are open,
//! whose each is, where its bytes wait (the repository's `.dmv/uploads/`)
//! and whether a piece is being written to it. The file on disk is the
//! count of what arrived, so a piece cut short still counts what it wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Uploads open at once, over all users.
pub(crate) const OPEN_MAX: usize = 256;
/// An upload nobody touched for this long is removed with its bytes.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// One file being uploaded.
struct Staged {
    repo: String,
    /// Whose it is: the token's user ("" for a token without one).
    owner: String,
    size: u64,
    file: PathBuf,
    touched: Instant,
    /// A piece is being written: another waits its turn.
    busy: bool,
}

/// An open upload as a request finds it.
pub(crate) struct Found {
    pub file: PathBuf,
    pub size: u64,
    pub received: u64,
}

/// Why an upload was not found or not claimed.
pub(crate) enum Unavailable {
    /// No such upload of this repository and owner.
    Unknown,
    /// A piece of it is being written; `received` so far.
    Busy { received: u64 },
    /// [`OPEN_MAX`] are open.
    Full,
    /// Its file could not be made.
    Io(std::io::Error),
}

/// The uploads open on this server, by id.
#[derive(Default)]
pub(crate) struct StagedUploads {
    open: Mutex<HashMap<String, Staged>>,
}

impl StagedUploads {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Staged>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens an upload `id` of `size` bytes into `staging`, after removing stale ones.
    pub fn open(&self, id: &str, repo: &str, owner: &str, size: u64, staging: &Path) -> Result<(), Unavailable> {
        let mut open = self.table();
        forget_stale(&mut open, staging);
        if open.len() >= OPEN_MAX {
            return Err(Unavailable::Full);
        }
        let file = staging.join(id);
        std::fs::File::create(&file).map_err(Unavailable::Io)?;
        open.insert(id.to_string(), Staged { repo: repo.to_string(), owner: owner.to_string(), size, file, touched: Instant::now(), busy: false });
        Ok(())
    }

    /// The upload `id` of `repo` if `owner`'s; with `claim`, marks a piece
    /// being written ([`StagedUploads::release`] ends it).
    pub fn find(&self, id: &str, repo: &str, owner: &str, claim: bool) -> Result<Found, Unavailable> {
        let mut open = self.table();
        let Some(s) = open.get_mut(id).filter(|s| s.repo == repo && s.owner == owner) else { return Err(Unavailable::Unknown) };
        let received = std::fs::metadata(&s.file).map(|m| m.len()).unwrap_or(0);
        if claim {
            if s.busy {
                return Err(Unavailable::Busy { received });
            }
            s.busy = true;
        }
        s.touched = Instant::now();
        Ok(Found { file: s.file.clone(), size: s.size, received })
    }

    /// Ends the piece being written to `id`.
    pub fn release(&self, id: &str) {
        if let Some(s) = self.table().get_mut(id) {
            s.busy = false;
            s.touched = Instant::now();
        }
    }

    /// Closes the uploads whose files are `files` (committed), removing the files.
    pub fn finish(&self, files: &[&Path]) {
        self.table().retain(|_, s| !files.contains(&s.file.as_path()));
        for f in files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Removes uploads left untouched too long, and staged files no open upload
/// names that are as old (a server that stopped left them).
fn forget_stale(open: &mut HashMap<String, Staged>, staging: &Path) {
    let now = Instant::now();
    open.retain(|_, s| {
        let keep = s.busy || now.duration_since(s.touched) < STALE_AFTER;
        if !keep {
            let _ = std::fs::remove_file(&s.file);
        }
        keep
    });
    for entry in std::fs::read_dir(staging).into_iter().flatten().flatten() {
        let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE_AFTER);
        if old && !open.contains_key(entry.file_name().to_string_lossy().as_ref()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
