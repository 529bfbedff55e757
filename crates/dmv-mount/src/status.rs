//! What a running mount tells `dmv mount --status`: each mount of a
//! replica writes `.dmv/mounts/PID.json` once a second while it runs (the
//! folder, what it shows, the bytes it fetched, the absent files being
//! read now) and removes it as it ends; a file whose process is gone (a
//! killed mount) is passed over and removed by the next reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Absent files listed as being read, at most (the rest are counted).
const MOST_LISTED: usize = 100;
/// Bytes of a status file read at most.
const MOST_READ: u64 = 64 << 10;

/// A mount's state as it runs, shared with its filesystem.
#[derive(Default)]
pub struct Live {
    /// Bytes fetched from other replicas.
    pub fetched: std::sync::Arc<AtomicU64>,
    /// Whether the kernel reads and writes working-tree files itself.
    pub passthrough: AtomicBool,
    /// Absent files open to read now, by handle: path and size.
    pub reading: Mutex<HashMap<u64, (String, u64)>>,
}

/// One mount, as `dmv mount --status` shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct MountStatus {
    /// The mounting process.
    pub pid: u32,
    /// The folder.
    pub dir: PathBuf,
    /// `worktree`, or the revision shown.
    pub shows: String,
    /// Seconds since 1970 when it was mounted.
    pub since: i64,
    /// Bytes fetched from other replicas so far.
    pub fetched_bytes: u64,
    /// Whether the kernel reads and writes working-tree files itself.
    pub passthrough: bool,
    /// Absent files being read now: path and size.
    pub reading: Vec<(String, u64)>,
    /// More being read than listed.
    pub more_reading: usize,
}

fn folder(dmv_dir: &Path) -> PathBuf {
    dmv_dir.join("mounts")
}

impl MountStatus {
    /// The status of a mount of `dir` showing `shows`, as `live` says now.
    pub fn now(dir: &Path, shows: &str, since: i64, live: &Live) -> MountStatus {
        let reading = live.reading.lock().unwrap_or_else(|e| e.into_inner());
        let mut listed: Vec<(String, u64)> = reading.values().cloned().collect();
        listed.sort();
        listed.dedup();
        let more_reading = listed.len().saturating_sub(MOST_LISTED);
        listed.truncate(MOST_LISTED);
        MountStatus {
            pid: std::process::id(),
            dir: dir.to_path_buf(),
            shows: shows.to_string(),
            since,
            fetched_bytes: live.fetched.load(Ordering::Relaxed),
            passthrough: live.passthrough.load(Ordering::Relaxed),
            reading: listed,
            more_reading,
        }
    }

    /// Writes it where `dmv mount --status` reads it (a failure only
    /// leaves the status unsaid).
    pub fn save(&self, dmv_dir: &Path) {
        let dir = folder(dmv_dir);
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{}.json", self.pid));
        let tmp = dir.join(format!("{}.tmp", self.pid));
        if let Ok(text) = serde_json::to_vec(self) {
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }

    /// Removes this process's status (its mount ended).
    pub fn remove(dmv_dir: &Path) {
        let _ = std::fs::remove_file(folder(dmv_dir).join(format!("{}.json", std::process::id())));
    }
}

/// The mounts of the replica whose `.dmv` is `dmv_dir` that run now,
/// oldest first; a status left by a process that is gone is removed.
pub fn running_mounts(dmv_dir: &Path) -> Vec<MountStatus> {
    let Ok(entries) = std::fs::read_dir(folder(dmv_dir)) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let read = std::fs::File::open(&path).and_then(|f| {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, MOST_READ), &mut text)?;
            Ok(text)
        });
        let Ok(status) = read.map(|t| serde_json::from_slice::<MountStatus>(&t)) else {
            continue;
        };
        match status {
            Ok(s) if alive(s.pid) => found.push(s),
            // A killed mount's, or damage: nothing runs behind it.
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    found.sort_by_key(|s| (s.since, s.pid));
    found
}

/// Whether process `pid` runs: one that ended but was not yet reaped
/// (a zombie) does not.
pub(crate) fn alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // `PID (NAME) STATE …`: the state follows the last parenthesis.
        let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let state = stat
            .iter()
            .rposition(|b| *b == b')')
            .and_then(|end| stat.get(end + 2));
        pid != 0 && state.is_some_and(|s| *s != b'Z')
    }
    #[cfg(target_os = "macos")]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // Signal 0 only asks; EPERM: it runs, as another user.
        // SAFETY: kill with signal 0 sends nothing.
        pid != 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        // No mount runs here.
        let _ = pid;
        false
    }
}

/// Waits until process `pid` has ended, for at most `within`; whether it has.
pub fn wait_ended(pid: u32, within: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    while alive(pid) {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_back_and_a_gone_process_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let live = Live::default();
        live.fetched.store(1234, Ordering::Relaxed);
        for i in 0..(MOST_LISTED as u64 + 5) {
            live.reading
                .lock()
                .unwrap()
                .insert(i, (format!("shoot/{i:04}.jpg"), 10));
        }
        let status = MountStatus::now(Path::new("/mnt/x"), "worktree", 7, &live);
        assert_eq!(
            (status.reading.len(), status.more_reading),
            (MOST_LISTED, 5)
        );
        status.save(dir.path());
        assert_eq!(running_mounts(dir.path()), std::slice::from_ref(&status));
        // A process that is gone: its status goes.
        let gone = MountStatus {
            pid: u32::MAX - 1,
            ..status.clone()
        };
        gone.save(dir.path());
        std::fs::write(folder(dir.path()).join("9.json"), b"{damage").unwrap();
        assert_eq!(running_mounts(dir.path()), [status]);
        assert_eq!(std::fs::read_dir(folder(dir.path())).unwrap().count(), 1);
        MountStatus::remove(dir.path());
        assert!(running_mounts(dir.path()).is_empty());
    }
}
