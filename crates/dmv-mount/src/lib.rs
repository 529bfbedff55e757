//! `dmv mount`: a revision of a repository as a read-only folder, through
//! FUSE. Listing a folder reads only its tree; reading a file reads only
//! the chunks the read touches, fetched from the nearest replica that
//! holds them when this one is partial (and kept, so a second read is
//! local). `dmv mount --worktree`: the replica's working tree as a
//! writable folder, every tracked file shown whether or not its data is
//! here ([`serve_worktree`]). Linux (FUSE) and macOS (macFUSE) only for
//! now: elsewhere [`serve`] says so.

mod error;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod fs;
#[cfg(target_os = "linux")]
mod guard;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod mountinfo;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod names;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod prefetch;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod read_cache;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod reading;
mod status;
mod unmount;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod worktree_fs;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod worktree_names;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

pub use error::MountError;
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub use mountinfo::{in_replica_behind, is_mount_point, mount_process};

/// Where a folder lies in the replica a worktree mount above it shows:
/// mounts are Linux's and macOS's only for now.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn in_replica_behind(_dir: &Path) -> Option<std::path::PathBuf> {
    None
}

/// Whether a folder is a mount point: known from Linux's and macOS's tables only.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn is_mount_point(_dir: &Path) -> bool {
    false
}

/// The process serving a mount: mounts are Linux's and macOS's only for now.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn mount_process(_dir: &Path, _replica: Option<&Path>) -> Option<u32> {
    None
}
pub use status::{running_mounts, wait_ended, MountStatus};
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
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        session::serve(repo, view, dir, stop, mounted, report)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (repo, view, stop, mounted, report);
        Err(MountError::Unsupported)
    }
}

/// Mounts the working tree of `repo` (a replica with one) at `dir`,
/// writable, until the folder is unmounted or `stop` is set: its files
/// are read and written where they lie in the working tree, and the
/// tracked files whose data is absent are shown at their real size,
/// fetched chunk by chunk as they are read. `dir` must be outside the
/// working tree (a walk of the tree would enter the mount). With
/// `passthrough`, the kernel reads and writes the working tree's files
/// itself where it can (Linux 6.9 and the right to; else this process does).
pub fn serve_worktree(
    repo: Repository,
    dir: &Path,
    passthrough: bool,
    stop: &AtomicBool,
    mounted: impl FnOnce(),
    report: Box<dyn Fn(&str) + Send + Sync>,
) -> Result<Served, MountError> {
    if !dir.is_dir() {
        return Err(MountError::NotAFolder(dir.to_path_buf()));
    }
    repo.require_worktree()?;
    if dir.starts_with(&repo.root) || repo.root.starts_with(dir) {
        return Err(MountError::InsideWorktree {
            dir: dir.to_path_buf(),
            root: repo.root.clone(),
        });
    }
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        session::serve_worktree(repo, dir, passthrough, stop, mounted, report)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (passthrough, stop, mounted, report);
        Err(MountError::Unsupported)
    }
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod session {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use dmv_repo::Repository;
    use fuser::{Config, MountOption, Notifier, SessionACL};

    use crate::fs::MountedFs;
    use crate::names::Namespace;
    use crate::reading::Reader;
    use crate::status::{Live, MountStatus};
    use crate::worktree_fs::WorktreeFs;
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
        let live = Arc::new(Live::default());
        let fs = MountedFs::new(
            names,
            Reader::new(repo, live.fetched.clone()),
            &repo.store,
            report,
        );
        let options = vec![MountOption::RO];
        let shows = match view {
            View::Commit(commit) => commit.to_hex(),
            View::Everything => "everything".into(),
        };
        run(
            fs,
            dir,
            options,
            stop,
            mounted,
            (repo, &shows, &live),
            &OnceLock::new(),
            &|| {},
        )?;
        repo.tidy_store();
        Ok(Served {
            fetched: live.fetched.load(Ordering::Relaxed),
        })
    }

    pub fn serve_worktree(
        repo: Repository,
        dir: &Path,
        passthrough: bool,
        stop: &AtomicBool,
        mounted: impl FnOnce(),
        report: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Result<Served, MountError> {
        let repo: &'static Repository = Box::leak(Box::new(repo));
        let live = Arc::new(Live::default());
        // Passthrough is Linux's (6.9 on); macFUSE has none.
        let passthrough = passthrough && cfg!(target_os = "linux");
        live.passthrough.store(passthrough, Ordering::Relaxed);
        let kernel = Arc::new(OnceLock::new());
        let fs = WorktreeFs::new(
            repo,
            Reader::new(repo, live.fetched.clone()),
            live.clone(),
            report,
            kernel.clone(),
        )?;
        // The kernel checks each file's mode, as the disk's own files are checked.
        let options = vec![MountOption::RW, MountOption::DefaultPermissions];
        let watch = fs.dirstate_watch();
        run(
            fs,
            dir,
            options,
            stop,
            mounted,
            (repo, crate::mountinfo::WORKTREE, &live),
            &kernel,
            &|| watch.tick(),
        )?;
        repo.tidy_store();
        Ok(Served {
            fetched: live.fetched.load(Ordering::Relaxed),
        })
    }

    /// Mounts `fs` at `dir` with `options` and answers the kernel until
    /// the folder is unmounted or `stop` is set, saying how it goes in the
    /// replica's `.dmv/mounts/` once a second (`shown`: the replica, what
    /// the folder shows, the mount's state), and `kernel` the way to its
    /// page cache once mounted; `tick` runs every 200 ms meanwhile, on
    /// this thread (outside the kernel's requests).
    #[allow(clippy::too_many_arguments)]
    fn run(
        fs: impl fuser::Filesystem + 'static,
        dir: &Path,
        mut options: Vec<MountOption>,
        stop: &AtomicBool,
        mounted: impl FnOnce(),
        shown: (&Repository, &str, &Live),
        kernel: &OnceLock<Notifier>,
        tick: &dyn Fn(),
    ) -> Result<(), MountError> {
        let (repo, shows, live) = shown;
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut config = Config::default();
        // A worktree mount names its replica as its source, for a command
        // started inside it (see mountinfo.rs).
        let source = match shows == crate::mountinfo::WORKTREE {
            true => crate::mountinfo::source_naming(&repo.root),
            false => "dmv".to_string(),
        };
        options.extend([
            MountOption::NoDev,
            MountOption::NoSuid,
            MountOption::FSName(source),
        ]);
        // Linux's table then says `fuse.dmv`; macFUSE has no subtype.
        #[cfg(target_os = "linux")]
        options.push(MountOption::Subtype("dmv".into()));
        // macOS writes `._NAME` files beside files it keeps attributes of,
        // and `.DS_Store` in folders it shows: macFUSE refuses them, or
        // every folder opened in Finder would show new files to commit.
        #[cfg(target_os = "macos")]
        options.push(MountOption::CUSTOM("noappledouble".into()));
        config.mount_options = options;
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
        let _ = kernel.set(session.notifier());
        // A failure leaves the folder to fusermount3's own watch alone.
        #[cfg(target_os = "linux")]
        let _ = std::path::absolute(dir).and_then(|dir| crate::guard::unmount_when_killed(&dir));
        // Said before the caller learns the folder is mounted: a command run
        // inside it right away finds the replica behind it.
        MountStatus::now(dir, shows, since, live).save(&repo.dmv);
        mounted();
        let mut ticks = 1u32;
        while !stop.load(Ordering::Relaxed) && !session.guard.is_finished() {
            if ticks.is_multiple_of(10) {
                MountStatus::now(dir, shows, since, live).save(&repo.dmv);
            }
            if ticks.is_multiple_of(2) {
                tick();
            }
            ticks = ticks.wrapping_add(1);
            std::thread::sleep(Duration::from_millis(100));
        }
        MountStatus::remove(&repo.dmv);
        let ended = if session.guard.is_finished() {
            session.join()
        } else {
            session.umount_and_join()
        };
        ended.map_err(|source| MountError::Mount {
            dir: dir.to_path_buf(),
            source,
        })
    }

    /// Whether fusermount3 may watch the mount for us (its auto_unmount
    /// needs allow_root: root may, a user only where /etc/fuse.conf says
    /// user_allow_other).
    /// macFUSE has no fusermount3: a folder whose process died stays until
    /// `dmv umount` (umount(8)).
    fn may_unmount_when_killed() -> bool {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        cfg!(target_os = "linux")
            && (root
                || std::fs::read_to_string("/etc/fuse.conf")
                    .is_ok_and(|c| c.lines().any(|l| l.trim() == "user_allow_other")))
    }
}
