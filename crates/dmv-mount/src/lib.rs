//! `dmv mount`: a revision of a repository as a read-only folder, through
//! FUSE. Listing a folder reads only its tree; reading a file reads only
//! the chunks the read touches, fetched from the nearest replica that
//! holds them when this one is partial (and kept, so a second read is
//! local). Linux only for now: elsewhere [`serve`] says so.

mod error;
#[cfg(target_os = "linux")]
mod fs;
#[cfg(target_os = "linux")]
mod names;
#[cfg(target_os = "linux")]
mod reading;
mod unmount;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

pub use error::MountError;
pub use unmount::unmount;

/// What a mount shows.
#[derive(Clone, Copy, Debug)]
pub enum View {
    /// One commit's tree at the root.
    Commit(ObjectId),
    /// `branches/`, `tags/` and `commits/`, each entry a commit's tree.
    Everything,
}

/// What a mount did while it was mounted.
#[derive(Clone, Debug, Default)]
pub struct Served {
    /// Chunk bytes fetched from other replicas.
    pub fetched: u64,
}

/// Mounts `view` of `repo` at `dir` and answers the kernel until the folder
/// is unmounted (`dmv umount`, `fusermount3 -u`) or `stop` is set, which
/// unmounts it. `mounted` runs once the folder shows the revision; `report`
/// gets a line for each read that failed, naming the file.
pub fn serve(
    repo: Repository,
    view: View,
    dir: &Path,
    stop: &AtomicBool,
    mounted: impl FnOnce(),
    report: Box<dyn Fn(&str) + Send + Sync>,
) -> Result<Served, MountError> {
    if !dir.is_dir() {
        return Err(MountError::NotAFolder(dir.to_path_buf()));
    }
    #[cfg(target_os = "linux")]
    {
        linux::serve(repo, view, dir, stop, mounted, report)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (repo, view, stop, mounted, report);
        Err(MountError::Unsupported)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use dmv_repo::Repository;
    use fuser::{Config, MountOption, SessionACL};

    use crate::fs::MountedFs;
    use crate::names::Namespace;
    use crate::reading::Reader;
    use crate::{MountError, Served, View};

    pub fn serve(
        repo: Repository,
        view: View,
        dir: &Path,
        stop: &AtomicBool,
        mounted: impl FnOnce(),
        report: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Result<Served, MountError> {
        // The filesystem outlives this call's borrows (the kernel's threads
        // hold it); the process ends soon after it is unmounted.
        let repo: &'static Repository = Box::leak(Box::new(repo));
        let names = match view {
            View::Commit(commit) => Namespace::of_commit(repo, &commit)?,
            View::Everything => Namespace::of_everything(repo)?,
        };
        let fetched = Arc::new(AtomicU64::new(0));
        let fs = MountedFs::new(
            names,
            Reader::new(repo, fetched.clone()),
            &repo.store,
            report,
        );
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::RO,
            MountOption::NoDev,
            MountOption::NoSuid,
            MountOption::FSName("dmv".into()),
            MountOption::Subtype("dmv".into()),
        ];
        if may_unmount_when_killed() {
            // fusermount3 unmounts the folder even when this process is killed: no folder is left dead.
            config.mount_options.push(MountOption::AutoUnmount);
            config.acl = SessionACL::RootAndOwner;
        }
        config.n_threads = Some(4);
        let session = fuser::spawn_mount(fs, dir, &config).map_err(|source| MountError::Mount {
            dir: dir.to_path_buf(),
            source,
        })?;
        mounted();
        while !stop.load(Ordering::Relaxed) && !session.guard.is_finished() {
            std::thread::sleep(Duration::from_millis(100));
        }
        let ended = if session.guard.is_finished() {
            session.join()
        } else {
            session.umount_and_join()
        };
        ended.map_err(|source| MountError::Mount {
            dir: dir.to_path_buf(),
            source,
        })?;
        repo.tidy_store();
        Ok(Served {
            fetched: fetched.load(Ordering::Relaxed),
        })
    }

    /// Whether fusermount3 may watch the mount for us (its auto_unmount
    /// needs allow_root: root may, a user only where /etc/fuse.conf says
    /// user_allow_other).
    fn may_unmount_when_killed() -> bool {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        root || std::fs::read_to_string("/etc/fuse.conf")
            .is_ok_and(|c| c.lines().any(|l| l.trim() == "user_allow_other"))
    }
}
