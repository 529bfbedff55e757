//! The kernel's side: FUSE requests answered from the names and the
//! reader. Read-only: anything that would change a file is refused
//! with EROFS.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyDirectoryPlus,
    ReplyEntry, ReplyOpen, ReplyStatfs, Request,
};

use crate::names::{Ino, Namespace, What};
use crate::reading::{OpenFile, Reader};

/// What is shown never changes while mounted: the kernel may keep it.
const KEPT: Duration = Duration::from_secs(3600);

/// Files this large are read past the kernel's page cache (direct I/O):
/// each read comes here at the reader's size and offset and is copied once,
/// where through the page cache it is copied twice, 128 KiB at a time. A
/// whole read of a film runs at 85–90% of `dmv cat`'s speed this way, 75%
/// the other way. Smaller files (sidecars, thumbnails read again and
/// again) stay in the page cache.
pub(crate) const DIRECT_FROM: u64 = 16 << 20;

/// The read size a file of `size` bytes suggests to its readers
/// (`st_blksize`; `cat`, `cp` and most players read at least this much per
/// call). A file read past the page cache ([`DIRECT_FROM`] and over): 1
/// MiB, which direct I/O brings whole in one request, four times fewer
/// round trips than 128 KiB reads (a whole read of a film at 0.92 of `dmv
/// cat`'s speed where 128 KiB reads reach 0.80). A smaller one: a disk
/// block, as a file on disk says, since `cp` sizes its buffer by it and a
/// 1 MiB buffer is a fresh mapping per file (`cp -r` of 10,000 absent
/// photos out of a worktree mount took 0.83x the time with 4 KiB).
pub(crate) fn suggested_read(size: u64) -> u32 {
    if size >= DIRECT_FROM {
        1 << 20
    } else {
        4096
    }
}

pub struct MountedFs {
    pub names: Mutex<Namespace>,
    pub reader: Reader,
    pub store: &'static dmv_repo::store::Store,
    /// Open files by handle.
    open: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_handle: AtomicU64,
    /// Whom the files belong to: whoever mounted.
    owner: (u32, u32),
    /// Where a read that failed is reported (a line naming the file).
    pub report: Box<dyn Fn(&str) + Send + Sync>,
    /// The kernel maps files read with direct I/O (FUSE_DIRECT_IO_ALLOW_MMAP,
    /// Linux 6.6): without it, large files keep the page cache, for mmap's sake.
    direct: bool,
}

impl MountedFs {
    pub fn new(
        names: Namespace,
        reader: Reader,
        store: &'static dmv_repo::store::Store,
        report: Box<dyn Fn(&str) + Send + Sync>,
    ) -> MountedFs {
        // SAFETY: getuid and getgid cannot fail.
        let owner = unsafe { (libc::getuid(), libc::getgid()) };
        MountedFs {
            names: Mutex::new(names),
            reader,
            store,
            open: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            owner,
            report,
            direct: false,
        }
    }

    fn attr(&self, names: &Namespace, ino: Ino) -> Option<FileAttr> {
        let node = names.node(ino)?;
        let (kind, perm) = match node.what {
            What::Made(_) | What::Tree { .. } => (FileType::Directory, 0o555),
            What::File {
                executable: true, ..
            } => (FileType::RegularFile, 0o555),
            What::File { .. } => (FileType::RegularFile, 0o444),
            What::Symlink { .. } => (FileType::Symlink, 0o777),
        };
        let time = UNIX_EPOCH + Duration::from_secs(node.time.max(0) as u64);
        Some(FileAttr {
            ino: INodeNo(ino),
            size: node.size,
            blocks: node.size.div_ceil(512),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            perm,
            nlink: if node.is_folder() { 2 } else { 1 },
            uid: self.owner.0,
            gid: self.owner.1,
            rdev: 0,
            blksize: suggested_read(node.size),
            flags: 0,
        })
    }

    fn names(&self) -> std::sync::MutexGuard<'_, Namespace> {
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The names, with folder `ino`'s entries read.
    fn listing(&self, ino: Ino) -> Result<std::sync::MutexGuard<'_, Namespace>, Errno> {
        let mut names = self.names();
        match names.entries(self.store, ino) {
            Ok(Some(_)) => Ok(names),
            Ok(None) => Err(Errno::ENOTDIR),
            Err(e) => Err(self.failed("list", &names.path(ino), &e.to_string())),
        }
    }

    fn failed(&self, what: &str, path: &str, why: &str) -> Errno {
        (self.report)(&format!("cannot {what} {path}: {why}"));
        Errno::EIO
    }
}

impl Filesystem for MountedFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Larger reads ahead than the kernel's default 128 KiB: fewer requests for a film played or copied.
        let _ = config.set_max_readahead(1 << 20);
        // Entries with their attributes in one reply: `ls -l` of 100,000 files needs no lookup each.
        let _ = config
            .add_capabilities(InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO);
        self.direct = config
            .add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP)
            .is_ok();
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut names = self.names();
        match names.lookup(self.store, parent.0, name) {
            Ok(Some(ino)) => match self.attr(&names, ino) {
                Some(attr) => reply.entry(&KEPT, &attr, Generation(0)),
                None => reply.error(Errno::ENOENT),
            },
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => {
                let path = format!("{}/{}", names.path(parent.0), name.to_string_lossy());
                reply.error(self.failed("list", &path, &e.to_string()))
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(&self.names(), ino.0) {
            Some(attr) => reply.attr(&KEPT, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let names = self.names();
        let Some(What::Symlink { id }) = names.node(ino.0).map(|n| &n.what) else {
            return reply.error(Errno::EINVAL);
        };
        match self.reader.link_target(id) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(self.failed("read the link", &names.path(ino.0), &e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let (id, size, path) = {
            let names = self.names();
            match names.node(ino.0).map(|n| (&n.what, n.size)) {
                Some((What::File { id, .. }, size)) => (*id, size, names.path(ino.0)),
                Some(_) => return reply.error(Errno::EISDIR),
                None => return reply.error(Errno::ENOENT),
            }
        };
        match self.reader.open(id, size, path.clone()) {
            Ok(file) => {
                let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
                self.open
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(handle, Arc::new(file));
                // The content of a version never changes: the kernel may keep its pages across opens.
                let how = if self.direct && size >= DIRECT_FROM {
                    FopenFlags::FOPEN_DIRECT_IO
                } else {
                    FopenFlags::FOPEN_KEEP_CACHE
                };
                reply.opened(FileHandle(handle), how)
            }
            Err(e) => reply.error(self.failed("open", &path, &e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(file) = self
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh.0)
            .cloned()
        else {
            return reply.error(Errno::EBADF);
        };
        let read = self.reader.read(&file, offset, size);
        let path = &file.path;
        match read {
            Ok(bytes) => reply.data(bytes.as_slice()),
            Err(e) => reply.error(self.failed("read", path, &e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        _flush: bool,
        reply: fuser::ReplyEmpty,
    ) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let names = match self.listing(ino.0) {
            Ok(names) => names,
            Err(e) => return reply.error(e),
        };
        for (i, (name, child)) in dotted(&names, ino.0).enumerate().skip(offset as usize) {
            let kind = match names.node(child).map(|n| &n.what) {
                Some(What::File { .. }) => FileType::RegularFile,
                Some(What::Symlink { .. }) => FileType::Symlink,
                _ => FileType::Directory,
            };
            // The offset of the entry after this one: where the next call resumes.
            if reply.add(INodeNo(child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let names = match self.listing(ino.0) {
            Ok(names) => names,
            Err(e) => return reply.error(e),
        };
        for (i, (name, child)) in dotted(&names, ino.0).enumerate().skip(offset as usize) {
            let Some(attr) = self.attr(&names, child) else {
                continue;
            };
            if reply.add(
                INodeNo(child),
                i as u64 + 1,
                name,
                &KEPT,
                &attr,
                Generation(0),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.names().len() as u64;
        reply.statfs(0, 0, 0, files, 0, 64 * 1024, 255, 64 * 1024);
    }
}

/// A listed folder's entries after `.` and `..`, each with its node.
fn dotted(names: &Namespace, ino: Ino) -> impl Iterator<Item = (&OsStr, Ino)> {
    let parent = names.node(ino).map_or(ino, |n| n.parent);
    let entries = names.listed(ino).unwrap_or_default();
    [(OsStr::new("."), ino), (OsStr::new(".."), parent)]
        .into_iter()
        .chain(
            entries
                .iter()
                .map(|(name, child)| (name.as_os_str(), *child)),
        )
}
