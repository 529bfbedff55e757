//! What can go wrong mounting and unmounting, in one line each.

use std::path::PathBuf;

use dmv_repo::RepoError;

/// Why a mount or an unmount failed.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error("cannot mount at {}: {source}{}", dir.display(), hint(source))]
    Mount {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot unmount {}: {detail}", dir.display())]
    Unmount { dir: PathBuf, detail: String },
    #[error("{0} is not a folder")]
    NotAFolder(PathBuf),
    #[error("cannot mount the working tree at {}: it is inside the working tree {} (or holds it); mount it outside", dir.display(), root.display())]
    InsideWorktree { dir: PathBuf, root: PathBuf },
    #[error("mounting needs FUSE, which DMV supports on Linux and macOS (macFUSE) only for now")]
    Unsupported,
}

#[cfg(not(target_os = "macos"))]
fn hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            " (is FUSE installed? `apt-get install fuse3` gives fusermount3)"
        }
        std::io::ErrorKind::PermissionDenied => " (FUSE needs /dev/fuse and fusermount3, or root)",
        _ => "",
    }
}

#[cfg(target_os = "macos")]
fn hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            " (is macFUSE installed and its system extension allowed? https://macfuse.github.io)"
        }
        _ => "",
    }
}
