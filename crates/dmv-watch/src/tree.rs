//! The watched folder seen through stat: which paths count, what a file looks
//! like now (its stamp), and a walk of a subtree.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Says which paths, relative to the watched folder, to leave out.
pub type Ignore = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// What stat says of a file (or symlink): any write changes the size or the
/// mtime, and the ctime also catches a replacement that kept both (`cp -p`,
/// `rsync -t`) and a change of mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    mtime: Option<SystemTime>,
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            mtime: meta.modified().ok(),
            ctime: ctime(meta),
        }
    }
}

#[cfg(unix)]
fn ctime(meta: &Metadata) -> (i64, i64) {
    use std::os::unix::fs::MetadataExt;
    (meta.ctime(), meta.ctime_nsec())
}

#[cfg(not(unix))]
fn ctime(_: &Metadata) -> (i64, i64) {
    (0, 0)
}

/// A path as stat finds it now.
pub(crate) enum Look {
    /// Gone, or unreadable: both are "not there" for a commit.
    Missing,
    Folder,
    Entry(Stamp),
}

impl Look {
    /// The stamp of a file; a folder where a file was counts as the file gone.
    pub(crate) fn stamp(&self) -> Option<Stamp> {
        match self {
            Look::Entry(stamp) => Some(*stamp),
            Look::Missing | Look::Folder => None,
        }
    }
}

pub(crate) struct Tree {
    pub(crate) root: PathBuf,
    ignore: Ignore,
}

impl Tree {
    pub(crate) fn new(root: PathBuf, ignore: Ignore) -> Tree {
        Tree { root, ignore }
    }

    /// `.dmv` at the root always, and whatever the caller's predicate names,
    /// itself or through a folder above it: a pattern that names a folder
    /// leaves out everything in it, as in Git.
    pub(crate) fn ignored(&self, rel: &Path) -> bool {
        if rel.components().next() == Some(Component::Normal(".dmv".as_ref())) {
            return true;
        }
        rel.ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| (self.ignore)(a))
    }

    /// An event's absolute path made relative, or None for the root itself,
    /// a path outside it, or an ignored one.
    pub(crate) fn rel(&self, abs: &Path) -> Option<PathBuf> {
        let rel = abs.strip_prefix(&self.root).ok()?;
        (!rel.as_os_str().is_empty() && !self.ignored(rel)).then(|| rel.to_path_buf())
    }

    pub(crate) fn look(&self, rel: &Path) -> Look {
        match std::fs::symlink_metadata(self.root.join(rel)) {
            Ok(meta) if meta.is_dir() => Look::Folder,
            Ok(meta) => Look::Entry(Stamp::of(&meta)),
            Err(_) => Look::Missing,
        }
    }

    /// A regular file with one name: what `open(O_CREAT)` makes, so a writer
    /// has it open and a close-write event will follow. A hard link or a
    /// symlink is created whole and gets no close event, so it is not one.
    pub(crate) fn fresh_file(&self, rel: &Path) -> bool {
        std::fs::symlink_metadata(self.root.join(rel))
            .is_ok_and(|meta| meta.is_file() && links(&meta) == 1)
    }

    /// Every file (and symlink, not followed) under the folder `rel` ("" for
    /// the root) that is not ignored, calling `on_folder` with each folder's
    /// absolute path before listing it, so that a watch put there misses
    /// nothing the listing does not see. Only an unreadable `rel` itself is an
    /// error: a subfolder that vanishes or may not be read is skipped.
    pub(crate) fn walk(
        &self,
        rel: &Path,
        on_folder: &mut dyn FnMut(&Path),
        out: &mut BTreeMap<PathBuf, Stamp>,
    ) -> io::Result<()> {
        let mut stack = vec![rel.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let abs = self.root.join(&dir);
            on_folder(&abs);
            let entries = match std::fs::read_dir(&abs) {
                Ok(entries) => entries,
                Err(e) if dir == rel => return Err(e),
                Err(_) => continue,
            };
            for entry in entries.flatten() {
                let path = dir.join(entry.file_name());
                let at_root_dmv = dir.as_os_str().is_empty() && entry.file_name() == ".dmv";
                if at_root_dmv || (self.ignore)(&path) {
                    continue;
                }
                match entry.metadata() {
                    Ok(meta) if meta.is_dir() => stack.push(path),
                    Ok(meta) => {
                        out.insert(path, Stamp::of(&meta));
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn links(meta: &Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn links(_: &Metadata) -> u64 {
    1
}

/// Whether the folder is on a file system whose changes made on another
/// machine raise no events here (NFS, SMB, 9p as in WSL's /mnt/c, Ceph, AFS,
/// FUSE such as sshfs): there only polling sees everything.
#[cfg(all(target_os = "linux", not(dmv_portable)))]
pub(crate) fn on_network_fs(root: &Path) -> bool {
    const REMOTE: [u32; 8] = [
        0x6969,
        0x517b,
        0xff53_4d42,
        0xfe53_4d42,
        0x0102_1997,
        0x00c3_6400,
        0x5346_414f,
        0x6573_5546,
    ];
    // The field's type differs between targets; the magic numbers fit 32 bits.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::statfs(root).is_ok_and(|fs| REMOTE.contains(&(fs.f_type as u32)))
}

#[cfg(not(all(target_os = "linux", not(dmv_portable))))]
pub(crate) fn on_network_fs(_: &Path) -> bool {
    false
}
