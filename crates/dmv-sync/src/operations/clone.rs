//! `clone`, resumable: a new repository, every branch and tag of the source,
//! and (unless bare) the working tree of its HEAD branch.
//!
//! A marker file names the clone's source until it has finished. Running the
//! same clone again finds it and resumes: packs sealed before the stop stay
//! (gc's grace period keeps them), the transfer skips what landed, and files
//! a stopped checkout already wrote are kept if they are right. The branch
//! is created last, so a clone whose branch exists has its files.

use std::path::PathBuf;

use dmv_repo::store::ObjectId;
use dmv_repo::{EarlyCheckout, Head, Phase, Progress, RefUpdate, RemoteConfig, Repository};

use crate::operations::fetch::{fetch_refs_unshared, FetchedRef};
use crate::operations::locations::share_locations_after_fetch;
use crate::operations::named_remotes::{normalize_url, remote_cache_dir};
use crate::operations::partial::get_what_the_source_lacked;
use crate::operations::remote_spec::{LocalServer, RemoteSpec};
use crate::protocol::objects::TransferStats;
use crate::transport::remote::Remote;
#[cfg(feature = "s3")]
use crate::BucketOptions;
use crate::{SyncError, SyncResult};
use dmv_repo::ref_names::{branch_ref, remote_branch_ref, BRANCHES};

/// Marks a clone that has not finished, so running it again resumes it.
const CLONE_MARKER: &str = "clone-in-progress";

/// What to clone, and into what ([`ClonePlan::new`]).
#[derive(Clone, Debug, Default)]
pub struct CloneOptions {
    /// A path, ssh://, http(s):// or s3:// URL.
    pub source: String,
    /// Directory to create (default: the source's last path component).
    pub directory: Option<PathBuf>,
    /// No working tree: every branch is mirrored, for others to push to.
    pub bare: bool,
    /// Bearer token for an HTTP server (stored with the remote).
    pub token: Option<String>,
    /// How to reach an object store (stored with the remote).
    #[cfg(feature = "s3")]
    pub bucket: BucketOptions,
    /// A device key file that opens an encrypted bucket (stored with the
    /// remote, so later fetches and pushes use it too).
    #[cfg(feature = "s3")]
    pub identity: Option<std::path::PathBuf>,
    /// How a local path source is served.
    pub local_server: LocalServer,
    /// Which files' data the new replica fetches and keeps.
    pub slice: dmv_repo::Slice,
}

/// A clone about to start or resume: where, from what, and whether it resumes.
pub struct ClonePlan {
    /// The source's URL, local paths made absolute (what the `origin` remote
    /// is set to).
    pub url: String,
    /// The directory the repository is created in.
    pub dir: PathBuf,
    /// A stopped clone of the same source is in `dir`.
    pub resuming: bool,
    /// How to connect to the source (a resumed clone's with the cache it had).
    pub spec: RemoteSpec,
    options: CloneOptions,
}

/// What a clone did.
pub struct Cloned {
    /// The new repository.
    pub repo: Repository,
    /// The source's URL, as `origin` holds it.
    pub url: String,
    /// The refs created.
    pub updated: Vec<FetchedRef>,
    /// What was received.
    pub stats: TransferStats,
    /// The branch checked out (or HEAD of a bare clone).
    pub head_branch: String,
    /// The source had no commits.
    pub empty: bool,
    /// Files written while their chunks arrived, before the checkout (None: no working tree was filled).
    pub written_while_receiving: Option<usize>,
}

/// Clones with the source's own connection.
pub fn clone(options: CloneOptions, progress: &dyn Progress) -> SyncResult<Cloned> {
    let plan = ClonePlan::new(options)?;
    let mut remote = plan.spec.connect()?;
    plan.run(remote.as_mut(), progress)
}

impl ClonePlan {
    /// Checks the destination: empty or absent, or a stopped clone of the same source.
    pub fn new(options: CloneOptions) -> SyncResult<ClonePlan> {
        let url = normalize_url(&options.source)?;
        let dir = match &options.directory {
            Some(d) => d.clone(),
            None => {
                let last = url
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(".dmv");
                if last.is_empty() {
                    return Err(SyncError::NoDirectoryName(url));
                }
                PathBuf::from(last)
            }
        };
        let dmv_dir = dir.join(".dmv");
        let resuming =
            std::fs::read_to_string(dmv_dir.join(CLONE_MARKER)).is_ok_and(|m| m.trim() == url);
        if !resuming && dir.exists() {
            // What a clone killed while creating its repository left is not in the way.
            let entries: Vec<_> = std::fs::read_dir(&dir)
                .map(|d| d.flatten().collect())
                .unwrap_or_default();
            if entries
                .iter()
                .all(|e| Repository::is_init_leftover(&e.file_name()))
            {
                for e in entries {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            } else {
                return Err(SyncError::DestinationNotEmpty(dir));
            }
        }
        let mut spec = RemoteSpec::parse(&url)?;
        spec.token = options.token.clone();
        #[cfg(feature = "s3")]
        {
            spec.bucket = options.bucket.clone();
        }
        spec.local_server = options.local_server;
        if resuming {
            spec.cache_dir = Some(remote_cache_dir(&dmv_dir, &url));
        }
        Ok(ClonePlan {
            url,
            dir,
            resuming,
            spec,
            options,
        })
    }

    /// Runs the clone against `remote` (connected with [`ClonePlan::spec`]).
    pub fn run(self, remote: &mut dyn Remote, progress: &dyn Progress) -> SyncResult<Cloned> {
        let stopped = |cause: SyncError| SyncError::CloneStopped {
            url: self.url.clone(),
            cause: Box::new(cause),
        };
        let mut repo = match self.resuming {
            true => Repository::open(&self.dir)?,
            false => self.create(remote)?,
        };
        // The working tree is still to fill (a resumed clone may have stopped during its checkout):
        // large files are written while their chunks arrive (a meta clone receives none).
        let fills_worktree = !repo.config.bare
            && repo.head_commit()?.is_none()
            && repo.load_dirstate()?.entries.is_empty();
        let mut early = match fills_worktree && repo.config.slice != dmv_repo::Slice::Meta {
            true => Some(EarlyCheckout::new(&repo)?),
            false => None,
        };
        progress.phase(Phase::Receiving);
        let fetched = fetch_refs_unshared(&repo, remote, "origin", progress, early.as_mut());
        progress.finish();
        let (mut fetched, received) = fetched.map_err(stopped)?;
        release_free_memory();
        if !fetched.lacking.is_empty() {
            // The fetch made the replica partial on disk: its checkout leaves those files absent.
            repo.update_config(|c| {
                c.partial = true;
                Ok::<_, SyncError>(())
            })?;
        }

        let default_head = branch_ref("main");
        let head_short = fetched.remote_head.as_deref().unwrap_or(&default_head);
        let head_short = head_short
            .strip_prefix(BRANCHES)
            .unwrap_or(head_short)
            .to_string();
        let mut branches = Vec::new();
        for (name, id) in repo.refs.list(&remote_branch_ref("origin", ""))? {
            let Some(branch) = name.strip_prefix(&remote_branch_ref("origin", "")) else {
                continue;
            };
            // A bare clone mirrors every branch; a working clone starts with the remote's HEAD branch.
            if self.options.bare || branch == head_short {
                branches.push(RefUpdate {
                    name: branch_ref(branch),
                    expected: None,
                    new: Some(id),
                });
            }
        }
        let _wlock = repo.lock_worktree()?;
        repo.set_head(&Head::Branch(branch_ref(&head_short)))?;
        let head_tip = branches
            .iter()
            .find(|u| u.name == branch_ref(&head_short))
            .and_then(|u| u.new);
        // The working tree is written while HEAD is still unborn (so it counts as
        // clean), then the branch is created: a resumed clone whose branch exists
        // has its files.
        let check_out = |tip: ObjectId| -> SyncResult<usize> {
            let tree = repo.commit(&tip)?.tree;
            // A clone stopped during its checkout before keeps what is in place and right.
            let mut written = match self.resuming {
                true => repo
                    .worktree()
                    .take_over_interrupted_checkout(&tree)
                    .map_err(|e| stopped(e.into()))?,
                false => Default::default(),
            };
            // Names this file system cannot hold: running the clone again would not help.
            let refused_or_stopped = |e: dmv_repo::RepoError| match e {
                dmv_repo::RepoError::FoldedNames { .. } | dmv_repo::RepoError::UnfitName { .. } => {
                    SyncError::CheckoutRefused {
                        dir: self.dir.clone(),
                        cause: Box::new(e.into()),
                    }
                }
                e => stopped(e.into()),
            };
            let mut early_written = 0;
            if let Some(early) = early {
                let written_early = early.finish(&repo).map_err(refused_or_stopped)?;
                early_written = written_early.len();
                written.extend(written_early);
            }
            progress.phase(Phase::CheckingOut);
            let checkout = repo.checkout_tree_with(&tree, &written, progress);
            progress.finish();
            checkout.map_err(refused_or_stopped)?;
            Ok(early_written)
        };
        // The fetch's last request, the exchange of location logs, runs
        // while the files are written: in a clone of 100,000 files over
        // ssh this replica's merge of the source's log, then the source's
        // of this one's copies, took 0.5 s (over a second from a hub whose
        // log names many replicas) on one core, the checkout waiting.
        // Neither reads the working tree, nor the checkout the log.
        let mut share = || share_locations_after_fetch(&repo, remote, &received);
        let (shared, checked_out) = match (head_tip, fills_worktree) {
            (Some(tip), true) => std::thread::scope(|s| {
                let sharing = s.spawn(share);
                let checked_out = check_out(tip);
                let shared = sharing
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (shared, Some(checked_out))
            }),
            _ => (share(), None),
        };
        let written_while_receiving = checked_out.transpose()?;
        shared.map_err(stopped)?;
        if !branches.is_empty() {
            repo.update_refs(&branches, &repo.who(), &format!("clone: from {}", self.url))
                .map_err(|e| stopped(e.into()))?;
        }
        let marker = repo.dmv.join(CLONE_MARKER);
        std::fs::remove_file(&marker).map_err(|e| {
            SyncError::local(
                format!("cannot clear the clone marker {}", marker.display()),
                e,
            )
        })?;
        drop(_wlock);
        // As git's clone: the checked-out branch follows origin's.
        if head_tip.is_some() && !self.options.bare {
            let upstream = dmv_repo::Upstream {
                remote: "origin".into(),
                branch: head_short.clone(),
            };
            repo.update_config(|c| {
                Ok::<_, dmv_repo::RepoError>(c.upstreams.insert(head_short.clone(), upstream))
            })
            .map_err(|e| stopped(e.into()))?;
        }
        // The clone is whole but for the data the source lacked: fetched
        // from elsewhere if a remote has it, else named with its holders.
        let tips: Vec<ObjectId> = fetched.updated.iter().map(|u| u.new).collect();
        get_what_the_source_lacked(
            &repo,
            &std::mem::take(&mut fetched.lacking),
            &tips,
            progress,
        )?;
        Ok(Cloned {
            url: self.url,
            updated: fetched.updated,
            stats: fetched.stats,
            head_branch: head_short,
            empty: head_tip.is_none(),
            written_while_receiving,
            repo,
        })
    }

    /// The new repository, with `origin` configured and the marker that
    /// makes a stopped clone resumable, both there before the repository
    /// appears: a clone killed at any moment can be run again.
    fn create(&self, remote: &dyn Remote) -> SyncResult<Repository> {
        let origin = RemoteConfig {
            url: self.url.clone(),
            token: self.options.token.clone(),
            #[cfg(feature = "s3")]
            endpoint: self.options.bucket.endpoint.clone(),
            #[cfg(feature = "s3")]
            region: self.options.bucket.region.clone(),
            #[cfg(feature = "s3")]
            virtual_host_style: self.options.bucket.virtual_host_style,
            #[cfg(feature = "s3")]
            identity: self.options.identity.clone(),
            // The storage cannot later turn this remote into a plain one that a push fills in the clear.
            encrypt: remote.encrypted(),
            ..Default::default()
        };
        let repo =
            Repository::init_set_up(&self.dir, remote.chunking(), self.options.bare, |dmv, c| {
                let marker = dmv.join(CLONE_MARKER);
                std::fs::write(&marker, format!("{}\n", self.url))
                    .map_err(|e| dmv_repo::RepoError::io(&marker, e))?;
                c.remotes.insert("origin".into(), origin);
                c.partial = !self.options.slice.is_full();
                c.slice = self.options.slice.clone();
                Ok(())
            })?;
        Ok(repo)
    }
}

/// Hands the memory the transfer freed back to the system before the
/// checkout allocates its own: glibc's allocator keeps freed memory in its
/// arenas, where it would count twice in the clone's peak.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}
