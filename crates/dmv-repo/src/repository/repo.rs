//! The repository: opening and creating it, its configuration, HEAD and
//! refs, commits, revisions and the working-tree lock.
//! Other files add the operations (`impl Repository` blocks of their own).

use std::path::{Path, PathBuf};

use dmv_store::object::{Commit, Signature, Tag};
use dmv_store::{ChunkParams, ObjectId, ObjectKind, Store};

use crate::error::{IoContext, RepoError, RepoResult};
use crate::paths::DMV_DIR;
use crate::ref_names::{branch_ref, tag_ref, REMOTE_BRANCHES};
use crate::repository::attributes::ReadOnlyRule;
use crate::repository::config::{self, Config};
use crate::repository::refs::{validate_ref_name, Head, RefBackend, RefUpdate, Reftable};
use crate::repository::requires;
use crate::repository::wlock::{WorktreeGuard, WorktreeLock};

/// Trees' files (content ids, sorted), by tree, most recently read last.
pub(crate) type TreeFilesSeen = std::sync::Mutex<
    Vec<(
        dmv_store::ObjectId,
        std::sync::Arc<Vec<dmv_store::ObjectId>>,
    )>,
>;

/// An open repository: its folders, configuration, object store and refs.
/// Operations on it are methods, spread over the crate's files.
pub struct Repository {
    /// The working tree's root (a bare repository's own folder), canonical.
    pub root: PathBuf,
    /// The `.dmv` folder under `root`.
    pub dmv: PathBuf,
    /// `.dmv/config` as loaded at open (or as last written by [`Repository::update_config`]).
    pub config: Config,
    /// The object store, `.dmv/objects`.
    pub store: Store,
    /// Branches, tags and remote-tracking branches (`.dmv/refs`).
    pub refs: Box<dyn RefBackend>,
    wlock: WorktreeLock,
    /// Which files checkouts write read-only (read when first needed).
    pub(crate) read_only: std::sync::RwLock<Option<std::sync::Arc<ReadOnlyRule>>>,
    /// The files of the trees the location log claims, as last read: each
    /// tree's content ids, sorted (kept and bounded by location_claims.rs).
    pub(crate) claimed_files: TreeFilesSeen,
    /// The claimed trees walked once for a few files without keeping their
    /// files: walked a second time, a tree's files are kept.
    pub(crate) claimed_trees_walked: std::sync::Mutex<Vec<dmv_store::ObjectId>>,
    /// Commits are refused while no name and email are set (see [`Repository::signer`]).
    strict_identity: bool,
    /// Set when a drop made this replica partial after it was opened: the
    /// config on disk says so, and this handle must act on it too (a
    /// watcher's next pull would otherwise fetch back what it dropped).
    pub(crate) became_partial: std::sync::atomic::AtomicBool,
}

impl Repository {
    /// Whether file data may be absent here by design (a slice, or a drop
    /// since): the config as loaded, or a drop through this handle since.
    pub fn is_partial(&self) -> bool {
        self.config.partial
            || self
                .became_partial
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Creates a repository with a working tree at `path` (made if missing).
    /// Fails with [`RepoError::AlreadyExists`] if it already holds one.
    pub fn init(path: &Path, chunking: ChunkParams) -> RepoResult<Repository> {
        Repository::init_with(path, chunking, false)
    }

    /// `bare`: a repository without a working tree, for others to push to.
    pub fn init_with(path: &Path, chunking: ChunkParams, bare: bool) -> RepoResult<Repository> {
        Repository::init_set_up(path, chunking, bare, |_, _| Ok(()))
    }

    /// [`Repository::init_with`], `set_up` changing the config and adding
    /// files to `.dmv` (given as the folder it is built in) before the
    /// repository appears: a kill leaves it whole or not there at all.
    pub fn init_set_up(
        path: &Path,
        chunking: ChunkParams,
        bare: bool,
        set_up: impl FnOnce(&Path, &mut Config) -> RepoResult<()>,
    ) -> RepoResult<Repository> {
        chunking
            .validate()
            .map_err(|detail| RepoError::BadChunking { detail })?;
        std::fs::create_dir_all(path).at(path)?;
        let root = dmv_os::canonicalize(path).at(path)?;
        let dmv = root.join(DMV_DIR);
        if dmv.exists() {
            return Err(RepoError::AlreadyExists(root));
        }
        // Build in a temporary directory and rename, so a failed init leaves nothing.
        let tmp = root.join(format!(".dmv-init-{}", std::process::id()));
        std::fs::create_dir(&tmp).at(&tmp)?;
        let result = (|| {
            requires::write(&tmp)?;
            Store::create(&tmp.join("objects"))?;
            Reftable::init(&tmp.join("refs"))?;
            let mut config = Config::new(chunking);
            config.bare = bare;
            // Before `set_up`, which may name another first branch.
            Head::Branch(branch_ref("main")).save(&tmp.join("HEAD"))?;
            set_up(&tmp, &mut config)?;
            config.save(&tmp.join("config"))?;
            std::fs::rename(&tmp, &dmv).at(&dmv)
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        result?;
        Repository::open_at(&root)
    }

    /// Whether `name` is the folder a killed `init` was building in.
    pub fn is_init_leftover(name: &std::ffi::OsStr) -> bool {
        name.to_str()
            .and_then(|n| n.strip_prefix(".dmv-init-"))
            .is_some_and(|pid| pid.parse::<u32>().is_ok())
    }

    /// Finds the repository containing `start` (or one of its parents).
    pub fn discover(start: &Path) -> RepoResult<Repository> {
        let start = dmv_os::canonicalize(start).at(start)?;
        let mut dir = Some(start.as_path());
        while let Some(d) = dir {
            if d.join(DMV_DIR).join("config").is_file() {
                return Repository::open_at(d);
            }
            dir = d.parent();
        }
        Err(RepoError::NotARepository(start))
    }

    /// Opens the repository at exactly `root` (no search of parent directories).
    pub fn open(root: &Path) -> RepoResult<Repository> {
        let root = dmv_os::canonicalize(root).at(root)?;
        if !root.join(DMV_DIR).join("config").is_file() {
            return Err(RepoError::NotARepository(root));
        }
        Repository::open_at(&root)
    }

    /// Changes the configuration as one step against other writers: under
    /// `.dmv/config.lock`, the file is read again, `edit` changes it, and
    /// it is written back whole. Two commands changing different settings
    /// at once (a remote added while a drop marks the replica partial)
    /// both keep their change. `self.config` becomes what was written.
    pub fn update_config<T, E: From<RepoError>>(
        &mut self,
        edit: impl FnOnce(&mut Config) -> Result<T, E>,
    ) -> Result<T, E> {
        let (answer, config) = self.edit_config_file(edit)?;
        self.config = config;
        Ok(answer)
    }

    /// Records in the config file that remote `name` is encrypted, so that
    /// nothing is later sent to it in the clear (without updating `self`,
    /// which other threads may share). A remote no longer configured is left.
    pub fn remember_remote_encrypted(&self, name: &str) -> RepoResult<()> {
        self.edit_config_file(|c| {
            if let Some(remote) = c.remotes.get_mut(name) {
                remote.encrypt = true;
            }
            Ok::<_, RepoError>(())
        })
        .map(|_| ())
    }

    /// [`Repository::update_config`] without updating `self` (which other threads may share).
    pub(crate) fn edit_config_file<T, E: From<RepoError>>(
        &self,
        edit: impl FnOnce(&mut Config) -> Result<T, E>,
    ) -> Result<(T, Config), E> {
        let lock_path = self.dmv.join("config.lock");
        let _lock = crate::atomic::hold_lock_file(&lock_path)?;
        let path = self.dmv.join("config");
        let mut config = Config::load(&path)?;
        dmv_store::failpoint("config-loaded");
        let answer = edit(&mut config)?;
        config.save(&path)?;
        Ok((answer, config))
    }

    fn open_at(root: &Path) -> RepoResult<Repository> {
        let dmv = root.join(DMV_DIR);
        let listed = requires::check(&dmv)?;
        let mut config = Config::load(&dmv.join("config"))?;
        // Read-only to us: used as it is (nothing new is written into it).
        let tolerate_read_only = |written: RepoResult<()>| match written {
            Err(e) if !requires::read_only(&e) => Err(e),
            _ => Ok(()),
        };
        match listed {
            requires::Listed::Nothing if config.format == config::FORMAT_WITHOUT_REQUIRES => {
                // Made before requirements were listed: list them, then move to the format older dmvs refuse.
                tolerate_read_only(requires::write(&dmv).and_then(|_| {
                    config.format = config::FORMAT_VERSION;
                    config.save(&dmv.join("config"))
                }))?;
            }
            requires::Listed::Nothing => {
                return Err(RepoError::Corrupt {
                    path: dmv.join(requires::FILE),
                    detail: "missing (the repository's format needs it)".into(),
                });
            }
            // Made by an older dmv, which must not meet what this one writes (packs of version 3).
            requires::Listed::Fewer => tolerate_read_only(requires::write(&dmv))?,
            requires::Listed::All => {}
        }
        let store = Store::open(
            &dmv.join("objects"),
            config.chunking,
            config.pack_size_limit,
        )?;
        let refs = Box::new(Reftable::open(&dmv.join("refs"))?);
        Ok(Repository {
            root: root.to_path_buf(),
            wlock: WorktreeLock::new(&dmv.join("wlock")),
            dmv,
            config,
            store,
            refs,
            read_only: Default::default(),
            claimed_files: Default::default(),
            claimed_trees_walked: Default::default(),
            strict_identity: false,
            became_partial: Default::default(),
        })
    }

    /// Takes the working-tree lock: one command at a time changes the
    /// dirstate, HEAD, MERGE_STATE and the working tree. Waits a while for
    /// another command, then fails naming it. Re-entrant in a process.
    pub fn lock_worktree(&self) -> RepoResult<WorktreeGuard<'_>> {
        self.wlock.acquire()
    }

    /// The working-tree lock if it is free now (for work that can be
    /// skipped, like refreshing a cache; a read-only repository gives none).
    pub(crate) fn try_lock_worktree(&self) -> Option<WorktreeGuard<'_>> {
        self.wlock.try_acquire().ok().flatten()
    }

    /// Refuses a change of the working-tree state made without the lock: a
    /// missing lock would let two commands overwrite each other's changes.
    pub(crate) fn check_worktree_locked(&self, what: &'static str) -> RepoResult<()> {
        if self.wlock.held_here() {
            return Ok(());
        }
        Err(RepoError::NotLocked { what })
    }

    /// Refuses a bare repository: for operations on the working tree.
    pub fn require_worktree(&self) -> RepoResult<()> {
        if self.config.bare {
            return Err(RepoError::Bare {
                root: self.root.clone(),
            });
        }
        Ok(())
    }

    /// The lock a watcher holds while it runs (`.dmv/watch.lock`): one
    /// `dmv watch` per repository, named with its pid.
    pub fn watcher_lock(&self) -> WorktreeLock {
        WorktreeLock::new(&self.dmv.join("watch.lock"))
    }

    /// Reads `.dmv/HEAD`.
    pub fn head(&self) -> RepoResult<Head> {
        Head::load(&self.dmv.join("HEAD"))
    }

    /// Points HEAD at a branch or a commit, under the working-tree lock;
    /// the working tree and dirstate are left as they are.
    pub fn set_head(&self, head: &Head) -> RepoResult<()> {
        let _wlock = self.lock_worktree()?;
        head.save(&self.dmv.join("HEAD"))
    }

    /// The commit HEAD is on; None on a branch with no commits yet.
    pub fn head_commit(&self) -> RepoResult<Option<ObjectId>> {
        match self.head()? {
            Head::Branch(name) => self.refs.get(&name),
            Head::Detached(id) => Ok(Some(id)),
        }
    }

    /// The tree of HEAD's commit; None when there is no commit yet.
    pub fn head_tree(&self) -> RepoResult<Option<ObjectId>> {
        match self.head_commit()? {
            Some(c) => Ok(Some(self.commit(&c)?.tree)),
            None => Ok(None),
        }
    }

    /// Reads and decodes commit `id`; fails if it is missing or not a commit.
    pub fn commit(&self, id: &ObjectId) -> RepoResult<Commit> {
        Ok(self.store.read_decoded(id, ObjectKind::Commit)?)
    }

    /// Reads and decodes annotated tag `id`; fails if it is missing or not a tag.
    pub fn annotated_tag(&self, id: &ObjectId) -> RepoResult<Tag> {
        Ok(self.store.read_decoded(id, ObjectKind::Tag)?)
    }

    /// What a ref's value stands for in history: an annotated tag's commit,
    /// else the id itself (a commit, or anything else for the caller to refuse).
    pub fn peel(&self, id: &ObjectId) -> RepoResult<ObjectId> {
        match self.store.locate(id)? {
            Some(loc) if loc.entry.kind == ObjectKind::Tag => Ok(self.annotated_tag(id)?.target),
            _ => Ok(*id),
        }
    }

    /// [`Repository::peel`] of each id.
    pub(crate) fn peel_all(&self, ids: &[ObjectId]) -> RepoResult<Vec<ObjectId>> {
        ids.iter().map(|id| self.peel(id)).collect()
    }

    /// Writes a commit of `tree` signed by [`Repository::identity`] into `session`,
    /// returning its id. Moves no ref.
    pub fn write_commit(
        &self,
        session: &mut dmv_store::WriteSession<'_>,
        tree: ObjectId,
        parents: Vec<ObjectId>,
        message: &str,
    ) -> RepoResult<ObjectId> {
        let me = self.signer()?;
        let commit = Commit {
            tree,
            parents,
            author: me.clone(),
            committer: me,
            message: message.to_string(),
        };
        Ok(session.put_object(ObjectKind::Commit, &dmv_store::object::encode(&commit))?)
    }

    /// Who signs commits: `DMV_AUTHOR_NAME`/`DMV_AUTHOR_EMAIL`, else the
    /// repository's then the global `user.name`/`user.email`, else `$USER <$USER@localhost>`;
    /// dated now, UTC.
    pub fn identity(&self) -> Signature {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let user = env("USER").unwrap_or_else(|| "dmv".into());
        // Read when a command signs something; a damaged global file is
        // reported by `dmv config`, and signing falls back as if it were not there.
        let global = std::cell::OnceCell::new();
        let global = || {
            global.get_or_init(|| {
                crate::repository::config::GlobalSettings::load().unwrap_or_default()
            })
        };
        let name = env("DMV_AUTHOR_NAME")
            .or_else(|| self.config.user_name.clone())
            .or_else(|| global().user_name.clone())
            .unwrap_or_else(|| user.clone());
        let email = env("DMV_AUTHOR_EMAIL")
            .or_else(|| self.config.user_email.clone())
            .or_else(|| global().user_email.clone())
            .unwrap_or_else(|| format!("{user}@localhost"));
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Signature {
            name,
            email,
            time,
            tz_minutes: 0,
        }
    }

    /// From now on, commits (and merges, picks, reverts, rebases, stashes)
    /// are refused while no name and email are set, as git refuses them:
    /// what a person's command line asks for. Without it, commits are
    /// signed `$USER <$USER@localhost>` (a program's own repositories).
    pub fn refuse_unknown_identity(&mut self) {
        self.strict_identity = true;
    }

    /// Who signs a commit made now: [`Repository::identity`], or, after
    /// [`Repository::refuse_unknown_identity`], an error while no name and
    /// email are set. Operations that commit ask first, before they change anything.
    pub fn signer(&self) -> RepoResult<Signature> {
        if self.strict_identity && !self.identity_is_set() {
            return Err(RepoError::UnknownIdentity);
        }
        Ok(self.identity())
    }

    /// Whether a name and an email were set somewhere (else commits are
    /// signed `$USER <$USER@localhost>`, and `commit` says how to set them).
    pub(crate) fn identity_is_set(&self) -> bool {
        let env = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty());
        let global = crate::repository::config::GlobalSettings::load().unwrap_or_default();
        (env("DMV_AUTHOR_NAME") || self.config.user_name.is_some() || global.user_name.is_some())
            && (env("DMV_AUTHOR_EMAIL")
                || self.config.user_email.is_some()
                || global.user_email.is_some())
    }

    /// [`Repository::identity`] as `Name <email>`, as ref updates record it.
    pub fn who(&self) -> String {
        let s = self.identity();
        format!("{} <{}>", s.name, s.email)
    }

    /// Moves HEAD's branch (or detached HEAD) from `old` to `new`.
    pub fn advance_head(
        &self,
        old: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> RepoResult<()> {
        match self.head()? {
            Head::Branch(name) => self.update_refs(
                &[RefUpdate {
                    name,
                    expected: Some(old),
                    new: Some(new),
                }],
                &self.who(),
                message,
            ),
            Head::Detached(_) => self.set_head(&Head::Detached(new)),
        }
    }

    /// Turns a branch or tag short name into its full ref name, if it exists.
    pub fn full_ref(&self, name: &str) -> RepoResult<Option<String>> {
        for candidate in [
            name.to_string(),
            branch_ref(name),
            tag_ref(name),
            format!("{REMOTE_BRANCHES}{name}"),
        ] {
            if candidate.starts_with("refs/") && self.refs.get(&candidate)?.is_some() {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }

    /// Moves refs (all or nothing), after checking that every new value is
    /// here, while gc is held off: gc may not delete an object between the
    /// check and the moment a ref keeps it alive.
    pub fn update_refs(&self, updates: &[RefUpdate], who: &str, message: &str) -> RepoResult<()> {
        let _gc = self.store.hold_off_gc()?;
        for u in updates {
            if let Some(new) = u.new {
                if !self.store.contains(&new)? {
                    return Err(RepoError::Store(dmv_store::StoreError::NotFound {
                        id: new,
                    }));
                }
            }
        }
        self.refs.update(updates, who, message)
    }

    /// For the end of a command that wrote to the store, once its refs
    /// moved: rolls small packs together when they pile up (one or two per
    /// commit), as `git gc --auto` does. Its failure is not the command's:
    /// what the command wrote stands, and the next command tries again.
    pub fn tidy_store(&self) {
        let _ = self.store.repack_if_many_small();
    }

    /// Creates ref `name` (full name, e.g. `refs/tags/v1`) at `id`; fails with
    /// [`RepoError::RefExists`] if it exists.
    pub fn create_ref(&self, name: &str, id: ObjectId, message: &str) -> RepoResult<()> {
        validate_ref_name(name)?;
        self.update_refs(
            &[RefUpdate {
                name: name.into(),
                expected: Some(None),
                new: Some(id),
            }],
            &self.who(),
            message,
        )
        .map_err(|e| match e {
            RepoError::RefChanged { .. } => RepoError::RefExists {
                name: name.to_string(),
            },
            other => other,
        })
    }

    /// A path given on the command line (relative to the current directory)
    /// as repository-relative bytes; refuses paths outside the working tree.
    pub fn repo_path(&self, cwd: &Path, arg: &Path) -> RepoResult<Vec<u8>> {
        use dmv_os::OsStrExt;
        let joined = if arg.is_absolute() {
            arg.to_path_buf()
        } else {
            cwd.join(arg)
        };
        let mut normal = PathBuf::new();
        for c in joined.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    normal.pop();
                }
                // A root or a drive starts the path again.
                other => normal.push(other),
            }
        }
        let rel = normal
            .strip_prefix(&self.root)
            .map_err(|_| RepoError::OutsideWorktree {
                path: arg.to_path_buf(),
                root: self.root.clone(),
            })?;
        if rel
            .components()
            .next()
            .is_some_and(|c| c.as_os_str() == DMV_DIR)
        {
            return Err(RepoError::InsideDmvDir {
                path: arg.to_path_buf(),
            });
        }
        // '/' between folders, whatever the system writes between them.
        Ok(rel
            .components()
            .map(|c| c.as_os_str().as_bytes())
            .collect::<Vec<_>>()
            .join(&b'/'))
    }

    /// The absolute path of repository-relative `rel`.
    pub(crate) fn abs_path(&self, rel: &[u8]) -> PathBuf {
        self.root.join(dmv_os::rel_path(rel))
    }
}
