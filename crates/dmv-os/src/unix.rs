//! Unix: the calls DMV always made.

use std::io;
use std::os::unix::io::AsRawFd;
use std::path::Path;

pub use std::os::unix::ffi::OsStrExt;
pub use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};

use crate::LockKind;

/// Whether files keep an executable bit of their own.
pub const EXECUTABLE_BIT: bool = true;
/// Whether a checkout can make symbolic links.
pub const SYMLINKS: bool = true;

/// Takes an flock(2) on the whole file, waiting while others hold it. The
/// kernel drops it when the last descriptor closes, a killed process's too.
pub fn lock(file: &std::fs::File, kind: LockKind) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), flock_mode(kind)) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Takes the lock if nobody holds it in a way that excludes us: Ok(false) when busy.
pub fn try_lock(file: &std::fs::File, kind: LockKind) -> io::Result<bool> {
    // SAFETY: as in `lock`.
    if unsafe { libc::flock(file.as_raw_fd(), flock_mode(kind) | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock => Ok(false),
        _ => Err(err),
    }
}

fn flock_mode(kind: LockKind) -> libc::c_int {
    match kind {
        LockKind::Shared => libc::LOCK_SH,
        LockKind::Exclusive => libc::LOCK_EX,
    }
}

/// Whether process `pid` of this host still runs. True when that cannot be
/// told (pid 0), as every caller would rather wait than break a live
/// holder's lock; a pid past what pid_t holds names no process.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid == 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    {
        return false;
    }
    // An unreaped zombie still answers kill(0) but holds no files any more.
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        if let Some((_, rest)) = stat.rsplit_once(')') {
            if rest.trim_start().starts_with('Z') {
                return false;
            }
        }
    }
    true
}

/// Asks process `pid` to stop (SIGTERM), as a terminal's Ctrl-C would.
pub fn ask_to_stop(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::other("no such process"))?;
    // SAFETY: sends a signal; no memory is involved.
    match unsafe { libc::kill(pid, libc::SIGTERM) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Ends this process at once, as an outside kill -9 would: no handlers, no
/// flushing of user-space buffers, no core dump.
pub fn kill_self() -> ! {
    // SAFETY: SIGKILL to ourselves is delivered before kill() returns.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

/// This host's name, "unknown" when the system will not say.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer's length is passed with it.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "unknown".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A repository-relative path (bytes, '/' between folders) as a path.
pub fn rel_path(rel: &[u8]) -> std::borrow::Cow<'_, Path> {
    std::borrow::Cow::Borrowed(Path::new(std::ffi::OsStr::from_bytes(rel)))
}

/// The absolute path of `path` with every link resolved.
pub fn canonicalize(path: &Path) -> io::Result<std::path::PathBuf> {
    path.canonicalize()
}

/// Removes a file that this or another process may still have open or
/// mapped; its name is free at once.
pub fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
}

/// Renames `from` over `to`, which this or another process may have open
/// or mapped: for files whose absence for a moment is harmless (an index
/// the per-pack indexes stand in for, a working-tree file).
pub fn replace_file(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

/// A new file in folder `dir` with no name yet (`O_TMPFILE`), of
/// permissions `mode` before the umask, open to write: named once whole
/// by [`name_unnamed`], so no reader sees it half written and a kill
/// leaves nothing behind (the kernel frees it). An error of kind
/// `Unsupported` where the system or the file system makes none.
pub fn create_unnamed_in(dir: &Path, mode: u32) -> io::Result<std::fs::File> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let made = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
            .mode(mode)
            .open(dir);
        // EISDIR: a kernel that knows no O_TMPFILE takes it for O_DIRECTORY.
        match made {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                ) =>
            {
                Err(io::Error::new(io::ErrorKind::Unsupported, e))
            }
            made => made,
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (dir, mode);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// Names `file`, made by [`create_unnamed_in`], `at` (in the folder it was
/// made in): an error of kind `AlreadyExists`, and nothing changed, when
/// something has that name; another error where `/proc` is not mounted.
pub fn name_unnamed(file: &std::fs::File, at: &Path) -> io::Result<()> {
    use std::ffi::CString;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let to = CString::new(at.as_os_str().as_encoded_bytes())?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let linked = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    match linked {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Makes a symbolic link at `link` to `target`.
pub fn symlink(target: &std::ffi::OsStr, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Sets a file's permission bits.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A file's permission bits.
pub fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode()
}

/// This process's standard output as a file of its own, written past
/// std's line buffer.
pub fn stdout_file() -> io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    Ok(std::io::stdout().as_fd().try_clone_to_owned()?.into())
}

/// Makes a folder's entries (a rename into it, a new file) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Bytes an unprivileged writer may still use on the file system of `path`.
pub fn available_bytes(path: &Path) -> Option<u64> {
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct it is given; the path is a C string.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    #[allow(clippy::unnecessary_cast)]
    (unsafe { libc::statvfs(path.as_ptr(), &mut stat) } == 0)
        .then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

pub(crate) fn no_hard_links_code(code: Option<i32>) -> bool {
    matches!(
        code,
        Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS | libc::EMLINK)
    )
}

/// Lowers the calling thread's CPU priority to nice 10 for the rest of
/// its life (it cannot be raised again without privilege): work that may
/// wait, such as a web page, then leaves the cores to the work a person
/// is waiting on, such as a clone, when both want them. Linux only, where
/// nice is a thread's own; a no-op elsewhere.
pub fn lower_this_threads_priority() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: gettid takes nothing; setpriority changes only the calling thread's nice value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// The files under `folder` (canonical) that a process this user may look
/// at holds open for writing, from `/proc/PID/fd` and its `fdinfo` flags:
/// what a writer pausing between pieces of a file still has open. None
/// where the system does not say (not Linux, or `/proc` not mounted).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn files_open_for_writing(
    folder: &Path,
) -> Option<std::collections::HashSet<std::path::PathBuf>> {
    let mut found = std::collections::HashSet::new();
    for process in std::fs::read_dir("/proc").ok()?.flatten() {
        if !process
            .file_name()
            .as_bytes()
            .iter()
            .all(u8::is_ascii_digit)
        {
            continue;
        }
        // Another user's processes, or one that ended meanwhile: not ours to see.
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if !target.starts_with(folder) {
                continue;
            }
            let info = std::fs::read_to_string(process.path().join("fdinfo").join(fd.file_name()))
                .unwrap_or_default();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
            if flags.is_some_and(|f| f & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32) {
                found.insert(target);
            }
        }
    }
    Some(found)
}

/// Not known here: see the Linux version.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn files_open_for_writing(
    _folder: &Path,
) -> Option<std::collections::HashSet<std::path::PathBuf>> {
    None
}

/// Runs `read` with the terminal on standard input not echoing what is
/// typed (a passphrase), and puts the echo back after, whatever `read`
/// did. Without a terminal there, `read` runs as it is.
pub fn without_echo<T>(read: impl FnOnce() -> T) -> T {
    // SAFETY: tcgetattr fills the struct it is given, for fd 0 only.
    let mut was: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(0, &mut was) } != 0 {
        return read();
    }
    let mut quiet = was;
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    // SAFETY: a termios read back from the same fd, with flags changed.
    unsafe { libc::tcsetattr(0, libc::TCSANOW, &quiet) };
    let got = read();
    // SAFETY: as above, the settings it had.
    unsafe { libc::tcsetattr(0, libc::TCSANOW, &was) };
    got
}
