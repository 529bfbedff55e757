//! The stat data the dirstate compares, taken from `std`'s metadata or
//! from an `fstatat` relative to an open folder.

use std::fs::Metadata;

use dmv_os::MetadataExt;

use dmv_store::object::EntryKind;

pub fn mtime_ns(m: &Metadata) -> i64 {
    m.mtime() * 1_000_000_000 + m.mtime_nsec()
}

pub fn ctime_ns(m: &Metadata) -> i64 {
    m.ctime() * 1_000_000_000 + m.ctime_nsec()
}

pub fn kind_of(m: &Metadata) -> Option<EntryKind> {
    Stat::of(m).kind()
}

/// What a file found in the working tree is taken for, given what was
/// recorded for its path. Where the file system keeps no executable bit or
/// makes no symlinks (Windows), a plain file keeps the recorded kind, as
/// git's `core.fileMode` and `core.symlinks` set to false do: checkout
/// wrote a link there as a file holding its target.
pub fn kind_on_disk(found: EntryKind, recorded: EntryKind) -> EntryKind {
    match (found, recorded) {
        (EntryKind::File, EntryKind::Executable) if !dmv_os::EXECUTABLE_BIT => recorded,
        (EntryKind::File, EntryKind::Symlink) if !dmv_os::SYMLINKS => recorded,
        _ => found,
    }
}

/// The stat data the dirstate compares, and no more: a walk of 100,000 files
/// keeps one per file, and `Metadata` is five times its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status-change time, in nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// File type and permission bits, as `st_mode`.
    pub mode: u32,
}

impl Stat {
    /// The stat data of `m`; for a symlink to be seen as one, `m` comes from
    /// `symlink_metadata`.
    pub fn of(m: &Metadata) -> Stat {
        Stat {
            size: m.len(),
            mtime_ns: mtime_ns(m),
            ctime_ns: ctime_ns(m),
            ino: m.ino(),
            mode: m.mode(),
        }
    }

    // The fields' integer types differ from target to target.
    #[cfg(unix)]
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of_raw(st: &rustix::fs::Stat) -> Stat {
        Stat {
            size: st.st_size as u64,
            mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
            ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
        }
    }

    /// What a tree would record it as; None for what a tree cannot hold (socket, device, FIFO).
    pub fn kind(&self) -> Option<EntryKind> {
        const TYPE: u32 = 0o170000;
        match self.mode & TYPE {
            0o120000 => Some(EntryKind::Symlink),
            0o100000 if self.mode & 0o111 != 0 => Some(EntryKind::Executable),
            0o100000 => Some(EntryKind::File),
            0o040000 => Some(EntryKind::Dir),
            _ => None,
        }
    }

    /// Whether it is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.kind() == Some(EntryKind::Symlink)
    }

    /// Whether this is what a tracked path can hold: a file or a symlink
    /// (not a folder, a socket, a device).
    pub fn is_file_or_symlink(&self) -> bool {
        matches!(
            self.kind(),
            Some(EntryKind::File | EntryKind::Executable | EntryKind::Symlink)
        )
    }
}
