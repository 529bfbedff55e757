//! A killed mount's folder is unmounted all the same. fusermount3's
//! `auto_unmount` waits for a socket the mount process holds to close,
//! then unmounts only if opening the folder fails with ENOTCONN (3.14).
//! But the socket can close before the kernel has let go of the
//! process's FUSE file: the open then waits, is caught by the
//! connection's abort, and fails with ECONNABORTED instead, and the
//! folder stays, dead ("Transport endpoint is not connected"), until
//! someone unmounts it by hand. Mounts killed right after a read were
//! left so in 2 of 3 tries here.
//!
//! So a small process, forked once the folder is mounted, waits for the
//! mount process to end (a pipe it alone writes to reaches its end),
//! then opens the folder, and unmounts it if the open fails as it does
//! on a dead FUSE connection. A folder unmounted already, or mounted
//! again by another process meanwhile, opens, and is left alone.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Forks the watcher of the folder `dir` (absolute) this process has
/// just mounted. Its only tie to this process is the pipe.
pub(crate) fn unmount_when_killed(dir: &Path) -> io::Result<()> {
    // Everything the child needs is made before the fork: a child of a
    // process with threads may only make async-signal-safe calls.
    let folder = CString::new(dir.as_os_str().as_bytes())?;
    let null = CString::new("/dev/null")?;
    let fusermount = fusermount3().and_then(|p| CString::new(p.as_os_str().as_bytes()).ok());
    let args: Vec<CString> = ["fusermount3", "-u", "-z", "-q"]
        .iter()
        .map(|a| CString::new(*a))
        .chain([Ok(folder.clone())])
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: sysconf only reads a limit.
    let most_fds = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(1024, 1 << 20) as libc::c_int;
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, write_end] = ends;
    // SAFETY: the child only makes async-signal-safe calls (watch) and
    // never returns into Rust code.
    match unsafe { libc::fork() } {
        -1 => {
            let e = io::Error::last_os_error();
            // SAFETY: both ends are ours and used nowhere else.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            Err(e)
        }
        0 => unsafe {
            watch(
                read_end,
                most_fds,
                &folder,
                &null,
                fusermount.as_ref(),
                &argv,
            )
        },
        _ => {
            // The write end stays open until this process ends, however
            // it ends; close-on-exec keeps it from anything it starts.
            // SAFETY: the read end is the child's now.
            unsafe { libc::close(read_end) };
            Ok(())
        }
    }
}

/// The forked child: waits for the pipe's end, unmounts `folder` if its
/// FUSE connection is gone, and exits.
///
/// # Safety
/// Only in the child of a fork; makes async-signal-safe calls only.
unsafe fn watch(
    read_end: libc::c_int,
    most_fds: libc::c_int,
    folder: &CString,
    null: &CString,
    fusermount: Option<&CString>,
    argv: &[*const libc::c_char],
) -> ! {
    // Nothing of the mount's kept open here (its FUSE file above all,
    // or the connection would never end), nor its terminal.
    libc::dup2(read_end, 0);
    let devnull = libc::open(null.as_ptr(), libc::O_RDWR);
    libc::dup2(devnull, 1);
    libc::dup2(devnull, 2);
    if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
        // Before Linux 5.9: one at a time.
        for fd in 3..most_fds {
            libc::close(fd);
        }
    }
    // Out of the mount's session: a Ctrl-C meant for it is not for this.
    libc::setsid();
    let mut byte = 0u8;
    loop {
        let n = libc::read(0, (&mut byte as *mut u8).cast(), 1);
        if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
            break;
        }
    }
    let fd = libc::open(folder.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
    if fd >= 0 {
        libc::_exit(0);
    }
    let errno = *libc::__errno_location();
    if errno != libc::ENOTCONN && errno != libc::ECONNABORTED {
        libc::_exit(0);
    }
    if libc::geteuid() == 0 {
        libc::umount2(folder.as_ptr(), libc::MNT_DETACH);
    } else if let Some(path) = fusermount {
        libc::execv(path.as_ptr(), argv.as_ptr());
    }
    libc::_exit(0)
}

/// fusermount3's path, looked up in PATH before the fork.
fn fusermount3() -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("fusermount3"))
        .find(|p| p.is_file())
}
