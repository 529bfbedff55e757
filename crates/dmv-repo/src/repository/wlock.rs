//! The working-tree lock (`.dmv/wlock`, like Mercurial's wlock): one command
//! at a time changes the dirstate, HEAD, MERGE_STATE and the files they
//! describe. It is an flock(2) (std's File::lock), so the kernel drops it when its holder dies
//! and a stale lock is never left behind; the file names the holder so a
//! waiter can say who it waited for.
//!
//! Re-entrant within a thread: an operation made of others (commit -a is
//! add then commit) takes it once around all of them. Another thread of
//! the same process waits for it as another process would: a mount
//! fetches a file (`get`) on one thread while it frees what is past its
//! budget (`drop`) on another, and both write the dirstate.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use dmv_os::FileExt;

use crate::error::IoContext;
use crate::{RepoError, RepoResult};

/// How long a command waits for another to finish before giving up
/// (`DMV_LOCK_WAIT_MS` overrides it).
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The working-tree lock, `.dmv/wlock`: an OS file lock, so a killed
/// command leaves it free. Held by [`WorktreeGuard`]s.
pub struct WorktreeLock {
    path: PathBuf,
    /// The locked file, how many guards hold it, and the thread they are on.
    held: Mutex<(Option<File>, usize, Option<ThreadId>)>,
}

/// Holds the working-tree lock until dropped.
#[must_use = "the lock is released when the guard is dropped"]
pub struct WorktreeGuard<'a> {
    lock: &'a WorktreeLock,
}

impl WorktreeLock {
    /// The lock at `path`; nothing is taken until [`WorktreeLock::acquire`].
    pub fn new(path: &Path) -> WorktreeLock {
        WorktreeLock {
            path: path.to_path_buf(),
            held: Mutex::new((None, 0, None)),
        }
    }

    /// Takes the lock, waiting a while for another command to finish.
    pub fn acquire(&self) -> RepoResult<WorktreeGuard<'_>> {
        let wait = std::env::var("DMV_LOCK_WAIT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_WAIT);
        self.take(Some(wait))?.ok_or_else(|| RepoError::Locked {
            what: "the working tree".into(),
            holder: self.holder(),
        })
    }

    /// Takes the lock only if nobody holds it (for refreshing a cache, which
    /// can be skipped).
    pub fn try_acquire(&self) -> RepoResult<Option<WorktreeGuard<'_>>> {
        self.take(None)
    }

    fn held(&self) -> MutexGuard<'_, (Option<File>, usize, Option<ThreadId>)> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self, wait: Option<Duration>) -> RepoResult<Option<WorktreeGuard<'_>>> {
        let deadline = wait.map(|w| Instant::now() + w);
        let here = std::thread::current().id();
        let mut pause = Duration::from_millis(1);
        let mut held = loop {
            let mut held = self.held();
            match held.2 {
                None => break held,
                Some(t) if t == here => {
                    held.1 += 1;
                    return Ok(Some(WorktreeGuard { lock: self }));
                }
                Some(_) => {}
            }
            drop(held);
            match deadline {
                Some(d) if Instant::now() < d => {
                    std::thread::sleep(pause.min(d.saturating_duration_since(Instant::now())))
                }
                _ => return Ok(None),
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(RepoError::io(&self.path, e)),
            }
            match deadline {
                Some(d) if Instant::now() < d => {
                    std::thread::sleep(pause.min(d.saturating_duration_since(Instant::now())))
                }
                _ => return Ok(None),
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // Only a description for waiters: failing to write it does not matter.
        // Written over the last holder's, then cut to length: emptying the
        // file first would free its block, which costs a small commit a
        // discard on file systems mounted with `discard`.
        let line = format!("{}\n", describe_self());
        let _ = file
            .write_all_at(line.as_bytes(), 0)
            .and_then(|_| file.set_len(line.len() as u64));
        *held = (Some(file), 1, Some(here));
        Ok(Some(WorktreeGuard { lock: self }))
    }

    /// Whether this process holds the lock now (on any of its threads:
    /// an operation's workers act under their caller's lock).
    pub fn held_here(&self) -> bool {
        self.held().1 > 0
    }

    /// The process that holds the lock, as its holder described itself.
    pub fn holder_pid(&self) -> Option<u32> {
        self.holder()
            .strip_prefix("pid ")?
            .split(' ')
            .next()?
            .parse()
            .ok()
    }

    /// Who holds the lock, as its holder described itself.
    pub fn holder(&self) -> String {
        let mut text = String::new();
        let _ = File::open(&self.path).and_then(|mut f| f.read_to_string(&mut text));
        match text.trim() {
            "" => "another dmv command".into(),
            t => t.to_string(),
        }
    }
}

impl Drop for WorktreeGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.lock.held();
        held.1 -= 1;
        if held.1 == 0 {
            // Closing the file releases the flock.
            *held = (None, 0, None);
        }
    }
}

fn describe_self() -> String {
    let command: String = std::env::args()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect();
    format!("pid {} ({command})", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn it_is_reentrant_on_one_thread_and_exclusive_between_threads() {
        let dir = tempfile::tempdir().unwrap();
        let lock = WorktreeLock::new(&dir.path().join("wlock"));
        let outer = lock.acquire().unwrap();
        let inner = lock.acquire().expect("the same thread takes it again");
        std::thread::scope(|s| {
            s.spawn(|| assert!(lock.try_acquire().unwrap().is_none()))
                .join()
                .unwrap();
        });
        drop(inner);
        std::thread::scope(|s| {
            s.spawn(|| assert!(lock.try_acquire().unwrap().is_none()))
                .join()
                .unwrap();
        });
        drop(outer);
        assert!(!lock.held_here());
        std::thread::scope(|s| {
            s.spawn(|| assert!(lock.try_acquire().unwrap().is_some()))
                .join()
                .unwrap();
        });
        // Threads that wait for it hold it one at a time.
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20 {
                        let _guard = lock.acquire().unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
