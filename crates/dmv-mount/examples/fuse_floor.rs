//! A measuring tool, not part of DMV: a bare passthrough FUSE file system
//! that shows folder SOURCE at MOUNTPOINT and does nothing else, so that
//! the bench can tell what FUSE itself costs (a round trip to this process
//! per lookup, getattr, open, create, write, fsync, release, rename) from
//! what `dmv mount --worktree` adds. It speaks to the kernel as the
//! worktree mount does: the same mount options, threads, capabilities,
//! entry and attribute time (1 s), open flags, and FUSE passthrough of
//! open files (root and Linux 6.9; `--no-passthrough` turns it off, as
//! `DMV_MOUNT_PASSTHROUGH=0` does for the mount).
//!
//! ```text
//! cargo build --release -p dmv-mount --example fuse_floor
//! target/release/examples/fuse_floor SOURCE MOUNTPOINT [--no-passthrough]
//! fusermount3 -u MOUNTPOINT
//! ```
//!
//! It runs in the foreground until the folder is unmounted.

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let passthrough = !args.iter().any(|a| a == "--no-passthrough");
    let paths: Vec<_> = args.iter().filter(|a| *a != "--no-passthrough").collect();
    let [source, mountpoint] = paths[..] else {
        eprintln!("usage: fuse_floor SOURCE MOUNTPOINT [--no-passthrough]");
        std::process::exit(2);
    };
    if let Err(e) = floor::run(source.into(), mountpoint.into(), passthrough) {
        eprintln!("fuse_floor: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("fuse_floor: Linux only");
    std::process::exit(1);
}

#[cfg(target_os = "linux")]
mod floor {
    use std::collections::HashMap;
    use std::ffi::{CString, OsStr};
    use std::fs::File;
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard, Weak};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use fuser::{
        BackingId, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
        Generation, INodeNo, InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags,
        RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus,
        ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, SessionACL, TimeOrNow,
        WriteFlags,
    };

    /// The worktree mount's entry and attribute time.
    const KEPT: Duration = Duration::from_secs(1);

    /// The worktree mount's open flags for a file of the working tree.
    fn open_flags(passthrough: bool) -> FopenFlags {
        match passthrough {
            true => FopenFlags::FOPEN_NOFLUSH,
            false => FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_NOFLUSH,
        }
    }

    /// Mounts `source` at `mountpoint` as the worktree mount is mounted and
    /// serves it until it is unmounted.
    pub fn run(source: PathBuf, mountpoint: PathBuf, passthrough: bool) -> std::io::Result<()> {
        let fs = Floor {
            source: source.canonicalize()?,
            inodes: Mutex::new(Inodes::default()),
            files: Mutex::new(HashMap::new()),
            backing: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            passthrough: AtomicBool::new(passthrough),
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::RW,
            MountOption::DefaultPermissions,
            MountOption::NoDev,
            MountOption::NoSuid,
            MountOption::FSName("fuse_floor".into()),
            MountOption::Subtype("fuse_floor".into()),
        ];
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            config.mount_options.push(MountOption::AutoUnmount);
            config.acl = SessionACL::RootAndOwner;
        }
        config.n_threads = Some(4);
        fuser::mount(fs, mountpoint, &config)
    }

    /// Inode numbers, each for one path relative to the source ("" the root, 1).
    struct Inodes {
        paths: HashMap<u64, PathBuf>,
        numbers: HashMap<PathBuf, u64>,
        next: u64,
    }

    impl Default for Inodes {
        fn default() -> Inodes {
            Inodes {
                paths: HashMap::from([(1, PathBuf::new())]),
                numbers: HashMap::from([(PathBuf::new(), 1)]),
                next: 2,
            }
        }
    }

    impl Inodes {
        fn number(&mut self, path: &Path) -> u64 {
            if let Some(n) = self.numbers.get(path) {
                return *n;
            }
            let n = self.next;
            self.next += 1;
            self.paths.insert(n, path.to_path_buf());
            self.numbers.insert(path.to_path_buf(), n);
            n
        }

        /// `from` and what is under it are now at `to`; what was numbered
        /// at `to` is forgotten. Only a folder's rename looks through every
        /// number (a file's stays cheap in a large folder: an editor's save).
        fn renamed(&mut self, from: &Path, to: &Path, folder: bool) {
            let at_or_under = |root: &Path| -> Vec<PathBuf> {
                match folder {
                    true => self
                        .numbers
                        .keys()
                        .filter(|p| p.starts_with(root))
                        .cloned()
                        .collect(),
                    false => vec![root.to_path_buf()],
                }
            };
            let (gone, moving) = (at_or_under(to), at_or_under(from));
            for p in gone {
                if let Some(n) = self.numbers.remove(&p) {
                    self.paths.remove(&n);
                }
            }
            for p in moving {
                let Some(n) = self.numbers.remove(&p) else {
                    continue;
                };
                // (joining "" would add a slash)
                let moved = match p.strip_prefix(from) {
                    Ok(under) if !under.as_os_str().is_empty() => to.join(under),
                    _ => to.to_path_buf(),
                };
                self.paths.insert(n, moved.clone());
                self.numbers.insert(moved, n);
            }
        }
    }

    /// An open file, with the kernel's id of it when passed through.
    type Open = Arc<(File, Option<Arc<BackingId>>)>;

    /// A folder's entry: the offset of the next, name, path, inode number, kind.
    type Listed = (u64, Vec<u8>, PathBuf, u64, FileType);

    struct Floor {
        source: PathBuf,
        inodes: Mutex<Inodes>,
        files: Mutex<HashMap<u64, Open>>,
        /// One registered file per inode while a handle of it is open.
        backing: Mutex<HashMap<u64, Weak<BackingId>>>,
        next_fh: AtomicU64,
        passthrough: AtomicBool,
    }

    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn errno(e: &std::io::Error) -> Errno {
        Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
    }

    fn when(t: TimeOrNow) -> SystemTime {
        match t {
            TimeOrNow::SpecificTime(t) => t,
            TimeOrNow::Now => SystemTime::now(),
        }
    }

    fn kind_of(t: std::fs::FileType) -> FileType {
        if t.is_dir() {
            FileType::Directory
        } else if t.is_symlink() {
            FileType::Symlink
        } else {
            FileType::RegularFile
        }
    }

    fn attr(ino: u64, m: &std::fs::Metadata) -> FileAttr {
        let time = |s: i64, ns: i64| UNIX_EPOCH + Duration::new(s.max(0) as u64, ns as u32);
        FileAttr {
            ino: INodeNo(ino),
            size: m.size(),
            blocks: m.blocks(),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            crtime: time(m.ctime(), m.ctime_nsec()),
            kind: kind_of(m.file_type()),
            perm: (m.mode() & 0o7777) as u16,
            nlink: m.nlink() as u32,
            uid: m.uid(),
            gid: m.gid(),
            rdev: 0,
            blksize: m.blksize() as u32,
            flags: 0,
        }
    }

    impl Floor {
        fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
            lock(&self.inodes)
                .paths
                .get(&ino.0)
                .cloned()
                .ok_or(Errno::ENOENT)
        }

        fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
            Ok(self.path(parent)?.join(name))
        }

        fn attr_of(&self, rel: &Path) -> Result<FileAttr, Errno> {
            let meta = std::fs::symlink_metadata(self.source.join(rel)).map_err(|e| errno(&e))?;
            Ok(attr(lock(&self.inodes).number(rel), &meta))
        }

        fn keep(&self, file: File, backing: Option<Arc<BackingId>>) -> FileHandle {
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            lock(&self.files).insert(fh, Arc::new((file, backing)));
            FileHandle(fh)
        }

        fn file(&self, fh: FileHandle) -> Result<Open, Errno> {
            lock(&self.files).get(&fh.0).cloned().ok_or(Errno::EBADF)
        }

        fn open_disk(&self, rel: &Path, flags: i32, mode: u32) -> Result<File, Errno> {
            let c = CString::new(self.source.join(rel).as_os_str().as_bytes())
                .map_err(|_| Errno::EINVAL)?;
            let flags = flags & !libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: `c` is a valid C string; the File below owns the descriptor.
            let fd = unsafe { libc::open(c.as_ptr(), flags, mode) };
            if fd < 0 {
                return Err(errno(&std::io::Error::last_os_error()));
            }
            // SAFETY: `fd` was just opened and nothing else owns it.
            Ok(unsafe { File::from_raw_fd(fd) })
        }

        /// The kernel's id of `file` for inode `ino` (one per inode), or
        /// None without passthrough (off after the first refusal).
        fn backing_for(
            &self,
            ino: u64,
            file: &File,
            register: impl FnOnce(&File) -> std::io::Result<BackingId>,
        ) -> Option<Arc<BackingId>> {
            if !self.passthrough.load(Ordering::Relaxed) {
                return None;
            }
            let mut backing = lock(&self.backing);
            if let Some(id) = backing.get(&ino).and_then(Weak::upgrade) {
                return Some(id);
            }
            match register(file) {
                Ok(id) => {
                    let id = Arc::new(id);
                    backing.retain(|_, w| w.strong_count() > 0);
                    backing.insert(ino, Arc::downgrade(&id));
                    Some(id)
                }
                Err(e) => {
                    eprintln!("fuse_floor: no passthrough: {e}");
                    self.passthrough.store(false, Ordering::Relaxed);
                    None
                }
            }
        }

        /// Folder `ino`'s entries from `offset` on.
        fn listing(&self, ino: INodeNo, offset: u64) -> Result<Vec<Listed>, Errno> {
            let rel = self.path(ino)?;
            let mut names = vec![
                (b".".to_vec(), FileType::Directory),
                (b"..".to_vec(), FileType::Directory),
            ];
            for e in std::fs::read_dir(self.source.join(&rel)).map_err(|e| errno(&e))? {
                let e = e.map_err(|e| errno(&e))?;
                let kind = e.file_type().map_or(FileType::RegularFile, kind_of);
                names.push((e.file_name().as_bytes().to_vec(), kind));
            }
            let mut inodes = lock(&self.inodes);
            let parent = rel.parent().map_or(1, |p| inodes.number(p));
            Ok(names
                .into_iter()
                .enumerate()
                .skip(offset as usize)
                .map(|(i, (name, kind))| {
                    let (path, n) = match &name[..] {
                        b"." => (rel.clone(), ino.0),
                        b".." => (rel.parent().unwrap_or(&rel).to_path_buf(), parent),
                        _ => {
                            let path = rel.join(OsStr::from_bytes(&name));
                            let n = inodes.number(&path);
                            (path, n)
                        }
                    };
                    (i as u64 + 1, name, path, n, kind)
                })
                .collect())
        }
    }

    impl Filesystem for Floor {
        fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
            // The worktree mount's capabilities, asked for the same way.
            let _ = config.set_max_readahead(1 << 20);
            let _ = config.add_capabilities(InitFlags::FUSE_BIG_WRITES);
            let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
            let _ = config.add_capabilities(InitFlags::FUSE_AUTO_INVAL_DATA);
            let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
            let passthrough = self.passthrough.load(Ordering::Relaxed)
                && config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(2).is_ok();
            self.passthrough.store(passthrough, Ordering::Relaxed);
            eprintln!(
                "fuse_floor: {} mounted, passthrough {}",
                self.source.display(),
                if passthrough { "on" } else { "off" }
            );
            Ok(())
        }

        fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
            match self.child(parent, name).and_then(|p| self.attr_of(&p)) {
                Ok(a) => reply.entry(&KEPT, &a, Generation(0)),
                Err(e) => reply.error(e),
            }
        }

        fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
            match self.path(ino).and_then(|p| self.attr_of(&p)) {
                Ok(a) => reply.attr(&KEPT, &a),
                Err(e) => reply.error(e),
            }
        }

        fn setattr(
            &self,
            _req: &Request,
            ino: INodeNo,
            mode: Option<u32>,
            _uid: Option<u32>,
            _gid: Option<u32>,
            size: Option<u64>,
            atime: Option<TimeOrNow>,
            mtime: Option<TimeOrNow>,
            _ctime: Option<SystemTime>,
            fh: Option<FileHandle>,
            _crtime: Option<SystemTime>,
            _chgtime: Option<SystemTime>,
            _bkuptime: Option<SystemTime>,
            _flags: Option<fuser::BsdFileFlags>,
            reply: ReplyAttr,
        ) {
            let done = (|| {
                let rel = self.path(ino)?;
                let disk = self.source.join(&rel);
                if let Some(size) = size {
                    match fh.and_then(|fh| self.file(fh).ok()) {
                        Some(open) => open.0.set_len(size),
                        None => File::options()
                            .write(true)
                            .open(&disk)
                            .and_then(|f| f.set_len(size)),
                    }
                    .map_err(|e| errno(&e))?;
                }
                if let Some(mode) = mode {
                    std::fs::set_permissions(&disk, PermissionsExt::from_mode(mode & 0o7777))
                        .map_err(|e| errno(&e))?;
                }
                if atime.is_some() || mtime.is_some() {
                    let mut times = std::fs::FileTimes::new();
                    if let Some(t) = atime {
                        times = times.set_accessed(when(t));
                    }
                    if let Some(t) = mtime {
                        times = times.set_modified(when(t));
                    }
                    File::options()
                        .write(true)
                        .open(&disk)
                        .or_else(|_| File::open(&disk))
                        .and_then(|f| f.set_times(times))
                        .map_err(|e| errno(&e))?;
                }
                self.attr_of(&rel)
            })();
            match done {
                Ok(a) => reply.attr(&KEPT, &a),
                Err(e) => reply.error(e),
            }
        }

        fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
            match self
                .path(ino)
                .and_then(|p| std::fs::read_link(self.source.join(p)).map_err(|e| errno(&e)))
            {
                Ok(target) => reply.data(target.as_os_str().as_bytes()),
                Err(e) => reply.error(e),
            }
        }

        fn mkdir(
            &self,
            _req: &Request,
            parent: INodeNo,
            name: &OsStr,
            mode: u32,
            umask: u32,
            reply: ReplyEntry,
        ) {
            let made = self.child(parent, name).and_then(|rel| {
                let disk = self.source.join(&rel);
                std::fs::create_dir(&disk).map_err(|e| errno(&e))?;
                let _ = std::fs::set_permissions(
                    &disk,
                    PermissionsExt::from_mode(mode & !umask & 0o7777),
                );
                self.attr_of(&rel)
            });
            match made {
                Ok(a) => reply.entry(&KEPT, &a, Generation(0)),
                Err(e) => reply.error(e),
            }
        }

        fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
            match self
                .child(parent, name)
                .and_then(|rel| std::fs::remove_file(self.source.join(rel)).map_err(|e| errno(&e)))
            {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        }

        fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
            match self
                .child(parent, name)
                .and_then(|rel| std::fs::remove_dir(self.source.join(rel)).map_err(|e| errno(&e)))
            {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        }

        fn rename(
            &self,
            _req: &Request,
            parent: INodeNo,
            name: &OsStr,
            newparent: INodeNo,
            newname: &OsStr,
            flags: RenameFlags,
            reply: ReplyEmpty,
        ) {
            let done = (|| {
                if flags.contains(RenameFlags::RENAME_EXCHANGE) {
                    return Err(Errno::EINVAL);
                }
                let (from, to) = (self.child(parent, name)?, self.child(newparent, newname)?);
                let c = |rel: &Path| {
                    CString::new(self.source.join(rel).as_os_str().as_bytes())
                        .map_err(|_| Errno::EINVAL)
                };
                let (c_from, c_to) = (c(&from)?, c(&to)?);
                // SAFETY: both are valid C strings.
                let r = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        c_from.as_ptr(),
                        libc::AT_FDCWD,
                        c_to.as_ptr(),
                        flags.bits(),
                    )
                };
                if r != 0 {
                    return Err(errno(&std::io::Error::last_os_error()));
                }
                let folder =
                    std::fs::symlink_metadata(self.source.join(&to)).is_ok_and(|m| m.is_dir());
                lock(&self.inodes).renamed(&from, &to, folder);
                Ok(())
            })();
            match done {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        }

        fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
            let file = match self.path(ino).and_then(|p| self.open_disk(&p, flags.0, 0)) {
                Ok(f) => f,
                Err(e) => return reply.error(e),
            };
            let backing = self.backing_for(ino.0, &file, |f| reply.open_backing(f));
            let how = open_flags(backing.is_some());
            let fh = self.keep(file, backing.clone());
            match backing {
                Some(id) => reply.opened_passthrough(fh, how, &id),
                None => reply.opened(fh, how),
            }
        }

        fn create(
            &self,
            _req: &Request,
            parent: INodeNo,
            name: &OsStr,
            mode: u32,
            umask: u32,
            flags: i32,
            reply: ReplyCreate,
        ) {
            let made = self.child(parent, name).and_then(|rel| {
                let file = self.open_disk(&rel, flags | libc::O_CREAT, mode & !umask)?;
                Ok((self.attr_of(&rel)?, file))
            });
            let (a, file) = match made {
                Ok(m) => m,
                Err(e) => return reply.error(e),
            };
            let backing = self.backing_for(a.ino.0, &file, |f| reply.open_backing(f));
            let how = open_flags(backing.is_some());
            let fh = self.keep(file, backing.clone());
            match backing {
                Some(id) => reply.created_passthrough(&KEPT, &a, Generation(0), fh, how, &id),
                None => reply.created(&KEPT, &a, Generation(0), fh, how),
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
            let open = match self.file(fh) {
                Ok(o) => o,
                Err(e) => return reply.error(e),
            };
            let mut buf = vec![0u8; size as usize];
            let mut got = 0;
            while got < buf.len() {
                match open.0.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return reply.error(errno(&e)),
                }
            }
            reply.data(&buf[..got]);
        }

        fn write(
            &self,
            _req: &Request,
            _ino: INodeNo,
            fh: FileHandle,
            offset: u64,
            data: &[u8],
            _write_flags: WriteFlags,
            _flags: OpenFlags,
            _lock: Option<LockOwner>,
            reply: ReplyWrite,
        ) {
            match self
                .file(fh)
                .and_then(|o| o.0.write_all_at(data, offset).map_err(|e| errno(&e)))
            {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            }
        }

        fn flush(
            &self,
            _req: &Request,
            _ino: INodeNo,
            _fh: FileHandle,
            _lock_owner: LockOwner,
            reply: ReplyEmpty,
        ) {
            reply.ok();
        }

        fn fsync(
            &self,
            _req: &Request,
            _ino: INodeNo,
            fh: FileHandle,
            datasync: bool,
            reply: ReplyEmpty,
        ) {
            let synced = self.file(fh).and_then(|o| {
                match datasync {
                    true => o.0.sync_data(),
                    false => o.0.sync_all(),
                }
                .map_err(|e| errno(&e))
            });
            match synced {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
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
            reply: ReplyEmpty,
        ) {
            lock(&self.files).remove(&fh.0);
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
            match self.listing(ino, offset) {
                Ok(listed) => {
                    for (next, name, _, n, kind) in listed {
                        if reply.add(INodeNo(n), next, kind, OsStr::from_bytes(&name)) {
                            break;
                        }
                    }
                    reply.ok();
                }
                Err(e) => reply.error(e),
            }
        }

        fn readdirplus(
            &self,
            _req: &Request,
            ino: INodeNo,
            _fh: FileHandle,
            offset: u64,
            mut reply: ReplyDirectoryPlus,
        ) {
            let listed = match self.listing(ino, offset) {
                Ok(l) => l,
                Err(e) => return reply.error(e),
            };
            for (next, name, path, n, _) in listed {
                // Gone since it was listed: left out.
                let Ok(meta) = std::fs::symlink_metadata(self.source.join(&path)) else {
                    continue;
                };
                let a = attr(n, &meta);
                if reply.add(
                    INodeNo(n),
                    next,
                    OsStr::from_bytes(&name),
                    &KEPT,
                    &a,
                    Generation(0),
                ) {
                    break;
                }
            }
            reply.ok();
        }

        fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
            let Ok(c) = CString::new(self.source.as_os_str().as_bytes()) else {
                return reply.error(Errno::EINVAL);
            };
            // SAFETY: `c` is a valid C string and `st` a zeroed statvfs to fill.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
                return reply.error(errno(&std::io::Error::last_os_error()));
            }
            reply.statfs(
                st.f_blocks as u64,
                st.f_bfree as u64,
                st.f_bavail as u64,
                st.f_files as u64,
                st.f_ffree as u64,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            );
        }
    }
}
