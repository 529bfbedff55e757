//! What DMV asks of the operating system that Unix and Windows answer
//! differently: positional reads and writes, whole-file advisory locks,
//! whether a process still runs, the host's name, the stat fields the
//! dirstate compares, a folder's fsync, free disk space, and file names as
//! bytes. Unix gets the same calls it always made; Windows gets the nearest
//! equivalent, or a documented fallback where there is none (no inode
//! numbers, no executable bit, no fsync of a folder).
//!
//! The traits carry the names of `std::os::unix`'s, so code written against
//! those reads the same with `use dmv_os::{FileExt, MetadataExt, OsStrExt}`.

pub mod fault;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// How a lock is shared: readers of a store share it, gc and the ref
/// writer hold it alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

/// Whether `e` says the file system cannot make hard links (FAT, exFAT,
/// some network shares), so the caller should fall back to creating the
/// file exclusively.
pub fn no_hard_links(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported || no_hard_links_code(e.raw_os_error())
}

/// A temporary folder of this process, `PREFIX-PID-XXXXXX` in the system's
/// temporary folder, removed when dropped. Those of processes that no
/// longer run (killed, so never dropped) are removed first: a server
/// restarted after each kill for a month leaves one, not hundreds.
pub fn process_temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let own = std::process::id();
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix)?.strip_prefix('-'))
                .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok());
            if pid.is_some_and(|pid| pid != own && !process_alive(pid)) {
                // Another user's, or one going at the same moment: left as it is.
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-{own}-"))
        .tempdir()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_process_temp_dir_clears_those_of_dead_processes_only() {
        let prefix = format!("dmv-os-test-{}", std::process::id());
        // Past what pid_t holds: no process has it.
        let dead = u32::MAX;
        let at = |pid: u32| std::env::temp_dir().join(format!("{prefix}-{pid}-abcdef"));
        let alive = std::process::id();
        for pid in [dead, alive] {
            std::fs::create_dir_all(at(pid).join("inside")).unwrap();
        }
        let other = std::env::temp_dir().join(format!("{prefix}x-{dead}-abcdef"));
        std::fs::create_dir_all(&other).unwrap();
        let made = process_temp_dir(&prefix).unwrap();
        assert!(!at(dead).exists(), "a dead process's folder is removed");
        assert!(at(alive).exists(), "a running process's folder is kept");
        assert!(other.exists(), "another prefix's folder is kept");
        let name = made
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(&format!("{prefix}-{alive}-")), "{name}");
        let kept = made.path().to_path_buf();
        drop(made);
        assert!(!kept.exists());
        for dir in [at(alive), other] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn an_unnamed_file_appears_whole_under_its_name_and_never_over_another() {
        let dir = tempfile::tempdir().unwrap();
        let made = create_unnamed_in(dir.path(), 0o444);
        if !cfg!(any(target_os = "linux", target_os = "android")) {
            assert_eq!(made.unwrap_err().kind(), std::io::ErrorKind::Unsupported);
            return;
        }
        let mut f = made.unwrap();
        f.write_all(b"whole").unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no name yet"
        );
        let at = dir.path().join("photo.jpg");
        std::fs::write(&at, b"theirs").unwrap();
        let refused = name_unnamed(&f, &at).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&at).unwrap(), b"theirs");
        std::fs::remove_file(&at).unwrap();
        name_unnamed(&f, &at).unwrap();
        assert_eq!(std::fs::read(&at).unwrap(), b"whole");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        #[cfg(unix)]
        assert_eq!(
            mode_of(&std::fs::metadata(&at).unwrap()) & 0o222,
            0,
            "its mode"
        );
    }

    #[test]
    fn positional_reads_and_writes_leave_the_rest_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        f.write_all(b"0123456789").unwrap();
        f.write_all_at(b"ab", 3).unwrap();
        let mut buf = [0u8; 4];
        f.read_exact_at(&mut buf, 2).unwrap();
        assert_eq!(&buf, b"2ab5");
        assert_eq!(f.read_at(&mut buf, 8).unwrap(), 2);
        assert_eq!(&buf[..2], b"89");
        assert_eq!(
            f.read_exact_at(&mut buf, 9).unwrap_err().kind(),
            std::io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn an_exclusive_lock_keeps_out_every_other_taker_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let open = || {
            std::fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .unwrap()
        };
        let (a, b) = (open(), open());
        lock(&a, LockKind::Shared).unwrap();
        assert!(
            try_lock(&b, LockKind::Shared).unwrap(),
            "two shared holders"
        );
        drop(b);
        let c = open();
        assert!(
            !try_lock(&c, LockKind::Exclusive).unwrap(),
            "shared holder keeps exclusive out"
        );
        drop(a);
        assert!(try_lock(&c, LockKind::Exclusive).unwrap());
        // The holder's bytes stay readable by others (the refs lock names its holder in them).
        (&c).write_all(b"held by me").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"held by me");
        assert!(!try_lock(&open(), LockKind::Shared).unwrap());
    }

    /// The thread that asks gets nice 10; the others keep theirs.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_lowers_its_own_priority_only() {
        // SAFETY: gettid and getpriority only read.
        let nice_of_this_thread = || unsafe {
            libc::getpriority(
                libc::PRIO_PROCESS,
                libc::syscall(libc::SYS_gettid) as libc::id_t,
            )
        };
        let before = nice_of_this_thread();
        let lowered = std::thread::spawn(move || {
            lower_this_threads_priority();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, before.max(10));
        assert_eq!(nice_of_this_thread(), before);
    }

    #[test]
    fn names_go_to_bytes_and_back() {
        let name = std::ffi::OsStr::from_bytes("Café.jpg".as_bytes());
        assert_eq!(name, "Café.jpg");
        assert_eq!(name.as_bytes(), "Café.jpg".as_bytes());
    }

    #[test]
    fn stat_fields_follow_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let before = std::fs::metadata(&path).unwrap();
        let t = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::new(1_700_000_000, 123_456_700);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(
            (after.mtime(), after.mtime_nsec()),
            (1_700_000_000, 123_456_700)
        );
        assert_ne!(before.mtime(), after.mtime());
        assert_eq!(after.mode() & 0o170000, 0o100000);
        assert!(available_bytes(dir.path()).is_some_and(|n| n > 0));
        sync_dir(dir.path()).unwrap();
    }
}
