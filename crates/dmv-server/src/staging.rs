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
/// Uploads one user (or one token without a user) may have open: one
/// user held all 256 for a day, and everyone else got 503.
pub(crate) const OPEN_PER_OWNER: usize = 32;
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
    /// [`OPEN_PER_OWNER`] of this owner's are open.
    YoursFull,
    /// This owner's open uploads and this one would reserve more than its
    /// share: `reserved` bytes already, `share` in all.
    YoursTooLarge { reserved: u64, share: u64 },
    /// The disk's free space does not hold this upload beside what the
    /// open ones will still write (`reserved` bytes).
    NoRoom { reserved: u64 },
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

    /// Opens an upload `id` of `size` bytes into `staging`, after removing
    /// stale ones. The sizes of `owner`'s open uploads, this one included,
    /// add up to at most `share` bytes. `free` (None: not known) is what
    /// the disk may take: it must hold this upload and the rest of every
    /// open one (three uploads each of the whole free space were accepted
    /// when each was checked alone).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        id: &str,
        repo: &str,
        owner: &str,
        size: u64,
        share: u64,
        staging: &Path,
        free: Option<u64>,
    ) -> Result<(), Unavailable> {
        let mut open = self.table();
        forget_stale(&mut open, staging);
        if open.len() >= OPEN_MAX {
            return Err(Unavailable::Full);
        }
        if open.values().filter(|s| s.owner == owner).count() >= OPEN_PER_OWNER {
            return Err(Unavailable::YoursFull);
        }
        let reserved: u64 = open
            .values()
            .filter(|s| s.owner == owner)
            .map(|s| s.size)
            .sum();
        if reserved.saturating_add(size) > share {
            return Err(Unavailable::YoursTooLarge { reserved, share });
        }
        if let Some(free) = free {
            let remaining = |s: &Staged| {
                s.size
                    .saturating_sub(std::fs::metadata(&s.file).map_or(0, |m| m.len()))
            };
            let reserved: u64 = open.values().map(remaining).sum();
            // What is written already is out of `free`; what open uploads will still write is not.
            let room = free.saturating_sub(reserved);
            if size > room {
                return Err(Unavailable::NoRoom { reserved });
            }
        }
        let file = staging.join(id);
        std::fs::File::create(&file).map_err(Unavailable::Io)?;
        open.insert(
            id.to_string(),
            Staged {
                repo: repo.to_string(),
                owner: owner.to_string(),
                size,
                file,
                touched: Instant::now(),
                busy: false,
            },
        );
        Ok(())
    }

    /// How many uploads `owner` has open.
    pub fn open_by(&self, owner: &str) -> usize {
        self.table().values().filter(|s| s.owner == owner).count()
    }

    /// The upload `id` of `repo` if `owner`'s; with `claim`, marks a piece
    /// being written ([`StagedUploads::release`] ends it).
    pub fn find(
        &self,
        id: &str,
        repo: &str,
        owner: &str,
        claim: bool,
    ) -> Result<Found, Unavailable> {
        let mut open = self.table();
        let Some(s) = open
            .get_mut(id)
            .filter(|s| s.repo == repo && s.owner == owner)
        else {
            return Err(Unavailable::Unknown);
        };
        let received = std::fs::metadata(&s.file).map(|m| m.len()).unwrap_or(0);
        if claim {
            if s.busy {
                return Err(Unavailable::Busy { received });
            }
            s.busy = true;
        }
        s.touched = Instant::now();
        Ok(Found {
            file: s.file.clone(),
            size: s.size,
            received,
        })
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
        self.table()
            .retain(|_, s| !files.contains(&s.file.as_path()));
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
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && !open.contains_key(entry.file_name().to_string_lossy().as_ref()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARE: u64 = 1 << 40;

    #[test]
    fn one_owner_holds_at_most_its_share_and_free_space_counts_every_open_upload() {
        let dir = tempfile::tempdir().unwrap();
        let staged = StagedUploads::default();
        for i in 0..OPEN_PER_OWNER {
            assert!(staged
                .open(
                    &format!("m{i}"),
                    "hub",
                    "user mallory",
                    1,
                    SHARE,
                    dir.path(),
                    None
                )
                .is_ok());
        }
        assert!(matches!(
            staged.open("m-more", "hub", "user mallory", 1, SHARE, dir.path(), None),
            Err(Unavailable::YoursFull)
        ));
        assert!(
            staged
                .open("al-1", "hub", "user al", 1, SHARE, dir.path(), None)
                .is_ok(),
            "others still upload"
        );

        // Three uploads each of the whole free space: the first fits, the
        // second does not beside it; as the first arrives it still counts.
        let (dir, staged) = (tempfile::tempdir().unwrap(), StagedUploads::default());
        let free = Some(1000);
        assert!(staged
            .open("big-1", "hub", "user al", 990, SHARE, dir.path(), free)
            .is_ok());
        assert!(matches!(
            staged.open("big-2", "hub", "user bo", 990, SHARE, dir.path(), free),
            Err(Unavailable::NoRoom { .. })
        ));
        std::fs::write(dir.path().join("big-1"), vec![0u8; 500]).unwrap();
        let free_now = Some(500);
        assert!(matches!(
            staged.open("big-3", "hub", "user bo", 100, SHARE, dir.path(), free_now),
            Err(Unavailable::NoRoom { .. })
        ));
        assert!(staged
            .open("small", "hub", "user bo", 1, SHARE, dir.path(), free_now)
            .is_ok());
        staged.finish(&[dir.path().join("big-1").as_path()]);
        assert!(staged
            .open("big-4", "hub", "user bo", 400, SHARE, dir.path(), free_now)
            .is_ok());
    }

    #[test]
    fn one_owner_reserves_at_most_its_share_of_bytes() {
        let (dir, staged) = (tempfile::tempdir().unwrap(), StagedUploads::default());
        assert!(staged
            .open("m-1", "hub", "user mallory", 600, 1000, dir.path(), None)
            .is_ok());
        assert!(
            staged
                .open("m-2", "hub", "user mallory", 400, 1000, dir.path(), None)
                .is_ok(),
            "up to the share exactly"
        );
        let refused = staged.open("m-3", "hub", "user mallory", 1, 1000, dir.path(), None);
        assert!(matches!(
            refused,
            Err(Unavailable::YoursTooLarge {
                reserved: 1000,
                share: 1000
            })
        ));
        assert!(
            staged
                .open("al-1", "hub", "user al", 1000, 1000, dir.path(), None)
                .is_ok(),
            "others keep their own share"
        );
        // A finished upload gives its bytes back.
        staged.finish(&[dir.path().join("m-1").as_path()]);
        assert!(staged
            .open("m-4", "hub", "user mallory", 600, 1000, dir.path(), None)
            .is_ok());
        assert!(matches!(
            staged.open(
                "m-5",
                "hub",
                "user mallory",
                u64::MAX,
                1000,
                dir.path(),
                None
            ),
            Err(Unavailable::YoursTooLarge { .. })
        ));
    }
}
