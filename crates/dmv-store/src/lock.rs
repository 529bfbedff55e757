//! Writers and gc exclude each other with flock(2) on `objects/gc.lock`: writers
//! hold it shared for a whole write session (until their ref update is done), gc
//! holds it exclusive while it deletes. The kernel drops the lock of a killed
//! process, so a crash never leaves it behind.

use std::fs::File;
use std::path::Path;

use dmv_os::LockKind;

use crate::error::IoContext;
use crate::StoreResult;

/// The gc lock, held until dropped.
pub struct GcLock {
    _file: File,
}

impl GcLock {
    /// Takes the lock shared, as writers do; waits while gc holds it.
    pub fn shared(path: &Path) -> StoreResult<GcLock> {
        Self::take(path, LockKind::Shared)
    }

    /// Takes the lock exclusively, as gc does; waits for every writer to finish.
    pub fn exclusive(path: &Path) -> StoreResult<GcLock> {
        Self::take(path, LockKind::Exclusive)
    }

    /// The exclusive lock if nobody holds the lock now (no writer, no gc):
    /// for work that may as well wait for the next chance.
    pub fn try_exclusive(path: &Path) -> StoreResult<Option<GcLock>> {
        let file = Self::open(path)?;
        match dmv_os::try_lock(&file, LockKind::Exclusive).at(path)? {
            true => Ok(Some(GcLock { _file: file })),
            false => Ok(None),
        }
    }

    fn take(path: &Path, kind: LockKind) -> StoreResult<GcLock> {
        let file = Self::open(path)?;
        dmv_os::lock(&file, kind).at(path)?;
        Ok(GcLock { _file: file })
    }

    fn open(path: &Path) -> StoreResult<File> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .at(path)
    }
}
