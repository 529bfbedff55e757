//! Windows: the nearest equivalents, and fallbacks where there are none.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt as _;
use std::os::windows::fs::{FileExt as _, MetadataExt as _};
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Foundation::{CloseHandle, ERROR_LOCK_VIOLATION, STILL_ACTIVE};
use windows_sys::Win32::Storage::FileSystem::{
    GetDiskFreeSpaceExW, LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

use crate::LockKind;

/// Whether files keep an executable bit of their own: on Windows they do
/// not, so the bit recorded in the tree is kept as it is (git's
/// `core.fileMode = false`).
pub const EXECUTABLE_BIT: bool = false;
/// Whether a checkout can make symbolic links: Windows needs a privilege
/// for them, so a link is checked out as a small file holding its target
/// (git's `core.symlinks = false`).
pub const SYMLINKS: bool = false;

/// Reads and writes at an offset, as `std::os::unix::fs::FileExt` does.
/// Windows moves the file's cursor as it does so; DMV never mixes the two
/// on one handle.
pub trait FileExt {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;
    fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_at(buf, offset) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl FileExt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self.seek_read(buf, offset) {
            // Reading at or past the end is an error of its own on Windows.
            Err(e) if e.raw_os_error() == Some(38) => Ok(0),
            other => other,
        }
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.seek_write(buf, offset)
    }
}

/// The stat fields the dirstate compares, as `std::os::unix::fs::MetadataExt`
/// names them. Windows has no inode or device number here (0), no change
/// time (the creation time stands in), and no mode: one is made up from the
/// file's type and its read-only flag.
pub trait MetadataExt {
    fn mtime(&self) -> i64;
    fn mtime_nsec(&self) -> i64;
    fn ctime(&self) -> i64;
    fn ctime_nsec(&self) -> i64;
    fn ino(&self) -> u64;
    fn dev(&self) -> u64;
    fn nlink(&self) -> u64;
    fn mode(&self) -> u32;
}

/// 100 ns ticks from 1601-01-01 to 1970-01-01.
const UNIX_EPOCH_TICKS: i64 = 116_444_736_000_000_000;

fn unix_time(ticks: u64) -> (i64, i64) {
    let since = ticks as i64 - UNIX_EPOCH_TICKS;
    (
        since.div_euclid(10_000_000),
        since.rem_euclid(10_000_000) * 100,
    )
}

impl MetadataExt for std::fs::Metadata {
    fn mtime(&self) -> i64 {
        unix_time(self.last_write_time()).0
    }
    fn mtime_nsec(&self) -> i64 {
        unix_time(self.last_write_time()).1
    }
    fn ctime(&self) -> i64 {
        unix_time(self.creation_time()).0
    }
    fn ctime_nsec(&self) -> i64 {
        unix_time(self.creation_time()).1
    }
    fn ino(&self) -> u64 {
        0
    }
    fn dev(&self) -> u64 {
        0
    }
    fn nlink(&self) -> u64 {
        1
    }
    fn mode(&self) -> u32 {
        let kind = self.file_type();
        match () {
            _ if kind.is_symlink() => 0o120777,
            _ if kind.is_dir() => 0o040755,
            _ if self.permissions().readonly() => 0o100444,
            _ => 0o100644,
        }
    }
}

/// File names as bytes, as `std::os::unix::ffi::OsStrExt` has them: UTF-8.
pub trait OsStrExt {
    /// `bytes` as a name. Windows names are Unicode: a name that is not
    /// UTF-8 becomes one that Windows refuses to create (checkout refuses
    /// such names first, with a message).
    fn from_bytes(bytes: &[u8]) -> &Self;
    fn as_bytes(&self) -> &[u8];
}

impl OsStrExt for OsStr {
    fn from_bytes(bytes: &[u8]) -> &OsStr {
        match std::str::from_utf8(bytes) {
            Ok(name) => OsStr::new(name),
            Err(_) => OsStr::new("<a name that is not UTF-8>"),
        }
    }
    fn as_bytes(&self) -> &[u8] {
        self.as_encoded_bytes()
    }
}

/// Permission bits for a new file, as `std::os::unix::fs::OpenOptionsExt`
/// takes them: Windows has none to set, and a file made without write bits
/// is made read-only afterwards by [`set_mode`].
pub trait OpenOptionsExt {
    fn mode(&mut self, mode: u32) -> &mut Self;
}

impl OpenOptionsExt for std::fs::OpenOptions {
    fn mode(&mut self, _mode: u32) -> &mut Self {
        self
    }
}

/// A repository-relative path (bytes, '/' between folders) as a path, with
/// Windows's separator.
pub fn rel_path(rel: &[u8]) -> std::borrow::Cow<'_, Path> {
    let name = OsStr::from_bytes(rel).to_string_lossy().replace('/', "\\");
    std::borrow::Cow::Owned(name.into())
}

/// The absolute path of `path` with every link resolved, as a path people
/// write (`C:\photos`), not the `\\?\C:\photos` form Windows returns, which
/// takes no '/' and shows in every message.
pub fn canonicalize(path: &Path) -> io::Result<std::path::PathBuf> {
    let full = path.canonicalize()?;
    let text = full.to_string_lossy();
    let short = text
        .strip_prefix(r"\\?\")
        .filter(|rest| rest.as_bytes().get(1) == Some(&b':') && rest.len() < 260);
    Ok(short.map_or(full.clone(), std::path::PathBuf::from))
}

/// Removes a file that this or another process may still have open or
/// mapped. Windows keeps such a file, name and all, until the last handle
/// closes, so a listing of its folder would still show it: it is first
/// renamed to `tmp-removed-…` beside itself (a name the store's cleanup
/// removes), which frees its name at once.
pub fn remove_file(path: &Path) -> io::Result<()> {
    let aside = aside(path);
    match std::fs::rename(path, &aside) {
        Ok(()) => std::fs::remove_file(&aside),
        Err(_) => std::fs::remove_file(path),
    }
}

/// A name beside `path` for it to be moved to and removed.
fn aside(path: &Path) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        "tmp-removed-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// Files with no name yet are a Linux idea: always `Unsupported` here.
pub fn create_unnamed_in(_dir: &Path, _mode: u32) -> io::Result<std::fs::File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Never called: [`create_unnamed_in`] makes no file here.
pub fn name_unnamed(_file: &std::fs::File, _at: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Renames `from` over `to`, which this or another process may have open
/// or mapped: for files whose absence for a moment is harmless (an index
/// the per-pack indexes stand in for, a working-tree file). Windows refuses
/// to replace a mapped file, and a virus scanner or an indexer may hold one
/// for a moment: `to` is moved aside first (see [`remove_file`]), and the
/// rename tried again for up to two seconds.
pub fn replace_file(from: &Path, to: &Path) -> io::Result<()> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        let err = match std::fs::rename(from, to) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => e,
            done => return done,
        };
        let aside = aside(to);
        if std::fs::rename(to, &aside).is_ok() {
            match std::fs::rename(from, to) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&aside);
                    return Ok(());
                }
                Err(_) => {
                    let _ = std::fs::rename(&aside, to);
                }
            }
        }
        if started.elapsed() > std::time::Duration::from_secs(2) {
            return Err(err);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(200));
    }
}

/// Makes a symbolic link at `link` to the file `target` (which needs a
/// privilege or developer mode on Windows).
pub fn symlink(target: &OsStr, link: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}

/// Sets what Windows keeps of permission bits: read-only when no write bit is set.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, permissions)
}

/// A file's permission bits, as [`MetadataExt::mode`] makes them up.
pub fn mode_of(meta: &std::fs::Metadata) -> u32 {
    meta.mode() & 0o7777
}

/// The whole-file lock is taken on one byte far past any end of file, so
/// that it keeps out other lockers but not readers: Windows's locks are
/// mandatory on the bytes they cover, and the refs lock's holder line must
/// stay readable.
const LOCK_AT: u64 = 1 << 62;

fn lock_file(file: &std::fs::File, kind: LockKind, wait: bool) -> io::Result<()> {
    let mut flags = 0;
    if kind == LockKind::Exclusive {
        flags |= LOCKFILE_EXCLUSIVE_LOCK;
    }
    if !wait {
        flags |= LOCKFILE_FAIL_IMMEDIATELY;
    }
    // SAFETY: an OVERLAPPED of zeroes but for the offset; the handle is ours and synchronous.
    let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
    at.Anonymous.Anonymous.Offset = LOCK_AT as u32;
    at.Anonymous.Anonymous.OffsetHigh = (LOCK_AT >> 32) as u32;
    match unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut at) } {
        0 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// Takes the lock, waiting while others hold it. Windows drops it when the
/// handle closes, a killed process's too.
pub fn lock(file: &std::fs::File, kind: LockKind) -> io::Result<()> {
    lock_file(file, kind, true)
}

/// Takes the lock if nobody holds it in a way that excludes us: Ok(false) when busy.
pub fn try_lock(file: &std::fs::File, kind: LockKind) -> io::Result<bool> {
    match lock_file(file, kind, false) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether process `pid` still runs. True when that cannot be told (we
/// may not open it), as every caller would rather wait than break a live
/// holder's lock.
pub fn process_alive(pid: u32) -> bool {
    // SAFETY: opens a handle we close below; the exit code is written to a local.
    unsafe {
        let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if handle.is_null() {
            // ERROR_INVALID_PARAMETER: no process has that id.
            return io::Error::last_os_error().raw_os_error() != Some(87);
        }
        let mut code = 0u32;
        let ok = GetExitCodeProcess(handle, &mut code);
        CloseHandle(handle);
        ok == 0 || code == STILL_ACTIVE as u32
    }
}

/// Asks process `pid` to stop. Windows has no signal for a console program
/// of another console, so this ends it (TerminateProcess), as Task Manager
/// would.
pub fn ask_to_stop(pid: u32) -> io::Result<()> {
    use windows_sys::Win32::System::Threading::{TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: opens a handle we close below.
    unsafe {
        let handle = OpenProcess(PROCESS_TERMINATE, 0, pid);
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        let ok = TerminateProcess(handle, 1);
        CloseHandle(handle);
        match ok {
            0 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        }
    }
}

/// Ends this process at once, as an outside kill would: no handlers, no
/// flushing of user-space buffers.
pub fn kill_self() -> ! {
    std::process::abort()
}

/// This host's name, "unknown" when the system will not say.
pub fn host_name() -> String {
    std::env::var("COMPUTERNAME")
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// This process's standard output as a file of its own, written past
/// std's line buffer.
pub fn stdout_file() -> io::Result<std::fs::File> {
    use std::os::windows::io::AsHandle;
    Ok(std::io::stdout().as_handle().try_clone_to_owned()?.into())
}

/// Windows cannot open a folder as a file to fsync it; NTFS journals the
/// folder's entries itself.
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Bytes the caller may still use on the volume of `path`.
pub fn available_bytes(path: &Path) -> Option<u64> {
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    let mut free = 0u64;
    // SAFETY: a NUL-terminated wide string and one out-parameter; the others may be null.
    (unsafe {
        GetDiskFreeSpaceExW(
            wide.as_ptr(),
            &mut free,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    } != 0)
        .then_some(free)
}

/// Left as it is on Windows (see the Unix version).
pub fn lower_this_threads_priority() {}

/// Not known on Windows (a writer's open file is locked against most
/// readers there anyway).
pub fn files_open_for_writing(
    _folder: &Path,
) -> Option<std::collections::HashSet<std::path::PathBuf>> {
    None
}

pub(crate) fn no_hard_links_code(code: Option<i32>) -> bool {
    // ERROR_INVALID_FUNCTION (FAT), ERROR_NOT_SUPPORTED, ERROR_TOO_MANY_LINKS.
    matches!(code, Some(1 | 50 | 1142))
}

/// Runs `read` (a passphrase typed at the console). The console keeps
/// echoing on Windows for now: a piped passphrase or DMV_PASSPHRASE is
/// the private way there.
pub fn without_echo<T>(read: impl FnOnce() -> T) -> T {
    read()
}
