//! Writers and gc exclude each other with flock(2) on `objects/gc.lock`: writers
//! hold it shared for a whole write session (until their ref update is done), gc
//! holds it exclusive while it deletes. The kernel drops the lock of a killed
//! process, so a crash never leaves it behind.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::IoContext;
use crate::{StoreError, StoreResult};

/// The gc lock, held until dropped.
pub struct GcLock {
    _file: File,
}

impl GcLock {
    /// Takes the lock shared, as writers do; waits while gc holds it.
    pub fn shared(path: &Path) -> StoreResult<GcLock> {
        Self::take(path, libc::LOCK_SH)
    }

    /// Takes the lock exclusively, as gc does; waits for every writer to finish.
    pub fn exclusive(path: &Path) -> StoreResult<GcLock> {
        Self::take(path, libc::LOCK_EX)
    }

    /// The exclusive lock if nobody holds the lock now (no writer, no gc):
    /// for work that may as well wait for the next chance.
    pub fn try_exclusive(path: &Path) -> StoreResult<Option<GcLock>> {
        match Self::take(path, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(lock) => Ok(Some(lock)),
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn take(path: &Path, mode: libc::c_int) -> StoreResult<GcLock> {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path).at(path)?;
        loop {
            // SAFETY: flock on a descriptor we own; no memory is involved.
            let rc = unsafe { libc::flock(file.as_raw_fd(), mode) };
            if rc == 0 {
                return Ok(GcLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(StoreError::io(path, err));
            }
        }
    }
}
