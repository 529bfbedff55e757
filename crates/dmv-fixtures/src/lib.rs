//! Fixtures for behaviour tests in the libraries: a fleet of replicas of one
//! repository in a temporary folder, cloned from a bare hub and pushing to
//! it over path remotes the sync library serves in this process (no `dmv`
//! binary, no server, no network). What only the binary shows (its output,
//! exit codes, the real servers and the browser) stays in dmv-cli's tests;
//! what the repository and the sync library do is tested with these.
//!
//! It sits above dmv-sync, so dmv-testkit (below every crate) cannot hold
//! it; the crates above dmv-sync, and dmv-sync's own integration tests,
//! take it as a dev-dependency.

use std::path::{Path, PathBuf};

use dmv_repo::store::ChunkParams;
use dmv_repo::store::ObjectId;
use dmv_repo::RemoteConfig;
use dmv_repo::{Repository, Silent, Slice};
use dmv_sync::{
    CloneOptions, ClonePlan, DropOptions, Dropped, Fetched, FileCopies, GetOptions, Got, Pulled,
    PushOptions, Pushed, SyncResult, Synced,
};

/// Stages everything in `repo`'s working tree and commits it, as
/// `dmv add . && dmv commit`; there must be something to commit.
pub fn commit_all(repo: &Repository, message: &str) -> ObjectId {
    repo.worktree()
        .add(&[Vec::new()], false, &Silent)
        .expect("add");
    repo.commit_staged(message)
        .expect("commit")
        .expect("something to commit")
}

/// A bare hub and the replicas cloned from it, in one temporary folder that
/// goes away with the fleet.
pub struct Fleet {
    tmp: tempfile::TempDir,
    hub: PathBuf,
}

impl Default for Fleet {
    fn default() -> Self {
        Fleet::new()
    }
}

impl Fleet {
    /// An empty bare hub, `hub/` in a new temporary folder.
    pub fn new() -> Fleet {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let hub = tmp.path().join("hub");
        Repository::init_with(&hub, ChunkParams::default(), true).expect("a bare hub");
        Fleet { tmp, hub }
    }

    /// The folder the hub and the replicas are in.
    pub fn folder(&self) -> &Path {
        self.tmp.path()
    }

    /// The hub's folder, a path remote's URL.
    pub fn hub_path(&self) -> &Path {
        &self.hub
    }

    /// The hub, opened now (it changes under every push).
    pub fn hub(&self) -> Repository {
        Repository::open(&self.hub).expect("the hub opens")
    }

    /// A replica holding every file's data, cloned from the hub into `name/`.
    pub fn full(&self, name: &str) -> Replica {
        self.clone_as(name, Slice::Full)
    }

    /// A replica holding the data `slice` names (`meta`, `paths:…`,
    /// `recent:N`), cloned from the hub into `name/`.
    pub fn partial(&self, name: &str, slice: &str) -> Replica {
        self.clone_as(name, Slice::parse(slice).expect("a slice"))
    }

    fn clone_as(&self, name: &str, slice: Slice) -> Replica {
        let dir = self.tmp.path().join(name);
        let plan = ClonePlan::new(CloneOptions {
            source: self.hub.to_string_lossy().into_owned(),
            directory: Some(dir.clone()),
            slice,
            ..Default::default()
        })
        .expect("a clone plan");
        let mut remote = plan.spec.connect().expect("the hub answers");
        let cloned = plan.run(remote.as_mut(), &Silent).expect("the clone");
        Replica {
            name: name.to_string(),
            dir,
            repo: cloned.repo,
        }
    }

    /// Another empty bare repository, `name/` beside the hub (a second hub
    /// for replicas to add as a remote).
    pub fn bare(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join(name);
        Repository::init_with(&dir, ChunkParams::default(), true).expect("a bare repository");
        dir
    }

    /// A repository of its own with a working tree, `name/` beside the hub,
    /// with no remote (a camera's card, a laptop others clone from).
    pub fn init(&self, name: &str) -> Replica {
        let dir = self.tmp.path().join(name);
        let repo = Repository::init(&dir, ChunkParams::default()).expect("a repository");
        Replica {
            name: name.to_string(),
            dir,
            repo,
        }
    }

    /// A replica cloned from `source` (any replica's or bare repository's
    /// folder) into `name/`, holding what `slice` names; the clone's error
    /// when it stops (its folder may then hold what arrived).
    pub fn clone_from(&self, name: &str, source: &Path, slice: &str) -> SyncResult<Replica> {
        let dir = self.tmp.path().join(name);
        let plan = ClonePlan::new(CloneOptions {
            source: source.to_string_lossy().into_owned(),
            directory: Some(dir.clone()),
            slice: Slice::parse(slice)?,
            ..Default::default()
        })?;
        let mut remote = plan.spec.connect()?;
        let cloned = plan.run(remote.as_mut(), &Silent)?;
        Ok(Replica {
            name: name.to_string(),
            dir,
            repo: cloned.repo,
        })
    }
}

/// One replica of the fleet: its working tree and its repository, whose
/// `origin` is the hub.
pub struct Replica {
    /// The name it was cloned as (its folder's name).
    pub name: String,
    /// Its working tree.
    pub dir: PathBuf,
    /// Its repository, open.
    pub repo: Repository,
}

impl Replica {
    /// Writes `bytes` at `path` (`/`-separated) in the working tree, making folders.
    pub fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let file = self.dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("a folder");
        }
        std::fs::write(&file, bytes).expect("a file written");
    }

    /// The bytes at `path` in the working tree, None when no file is there.
    pub fn read(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(self.dir.join(path)).ok()
    }

    /// Stages everything and commits it, as `dmv add . && dmv commit`.
    pub fn commit_all(&self, message: &str) -> ObjectId {
        commit_all(&self.repo, message)
    }

    /// Pushes the current branch to the hub.
    pub fn push(&self) -> SyncResult<Pushed> {
        let remote = dmv_sync::find_remote(&self.repo, "origin")?;
        let mut connection = remote.connect_to_push(&self.repo)?;
        dmv_sync::push(
            &self.repo,
            connection.as_mut(),
            Some("origin"),
            &PushOptions::default(),
            &Silent,
        )
    }

    /// Fetches the hub's branches into `origin/…`.
    pub fn fetch(&self) -> SyncResult<Fetched> {
        let remote = dmv_sync::find_remote(&self.repo, "origin")?;
        let mut connection = remote.connect()?;
        dmv_sync::fetch(&self.repo, connection.as_mut(), "origin", &Silent)
    }

    /// Fetches from the hub and merges its branch into the current one.
    pub fn pull(&self) -> SyncResult<Pulled> {
        let remote = dmv_sync::find_remote(&self.repo, "origin")?;
        let mut connection = remote.connect()?;
        dmv_sync::pull(&self.repo, connection.as_mut(), "origin", None, &Silent)
    }

    /// Fetches the data of `paths` (all when empty) and writes them, as `dmv get`.
    pub fn get(&self, paths: &[&str]) -> SyncResult<Got> {
        let options = GetOptions {
            paths: paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
            ..Default::default()
        };
        dmv_sync::get(&self.repo, &options, &Silent)
    }

    /// Panics unless `fsck` finds the replica whole (no damage, nothing of
    /// its slice missing, no version known nowhere).
    pub fn assert_fsck_clean(&self) {
        let report = self
            .repo
            .maintenance()
            .fsck(false, &Silent)
            .expect("fsck runs");
        assert_eq!(
            report.problem_count(),
            0,
            "{}: {:?}, missing {:?}",
            self.name,
            report.problems,
            report
                .missing
                .iter()
                .map(|f| String::from_utf8_lossy(&f.path))
                .collect::<Vec<_>>()
        );
    }

    /// The paths of the checked-out commit whose data is not here, sorted.
    pub fn absent(&self) -> Vec<String> {
        let mut absent: Vec<String> = self
            .repo
            .copies()
            .availability_here(&[])
            .expect("availability")
            .into_iter()
            .filter(|f| !f.present)
            .map(|f| String::from_utf8_lossy(&f.path).into_owned())
            .collect();
        absent.sort();
        absent
    }

    /// Opens the repository again (after a change another handle made).
    pub fn reopen(&mut self) {
        self.repo = Repository::open(&self.dir).expect("the replica opens");
    }

    /// Adds remote `name` at `path` (another replica's or bare repository's folder).
    pub fn add_remote(&mut self, name: &str, path: &Path) {
        let config = RemoteConfig {
            url: path.to_string_lossy().into_owned(),
            ..Default::default()
        };
        dmv_sync::add_remote(&mut self.repo, name, config).expect("the remote added");
    }

    /// Pushes the current branch to remote `name`.
    pub fn push_to(&self, name: &str) -> SyncResult<Pushed> {
        let remote = dmv_sync::find_remote(&self.repo, name)?;
        let mut connection = remote.connect_to_push(&self.repo)?;
        dmv_sync::push(
            &self.repo,
            connection.as_mut(),
            Some(name),
            &PushOptions::default(),
            &Silent,
        )
    }

    /// Syncs with remote `name`: fetches, merges what it offers and what it
    /// has, then sends what is committed here, as `dmv sync NAME`.
    pub fn sync_with(&self, name: &str) -> SyncResult<Synced> {
        let remote = dmv_sync::find_remote(&self.repo, name)?;
        let mut connection = remote.connect_to_push(&self.repo)?;
        dmv_sync::sync(&self.repo, connection.as_mut(), name, &Silent)
    }

    /// Frees the data of `paths` here once `numcopies` other copies are
    /// confirmed, as `dmv drop --numcopies N PATH…`.
    pub fn drop_data(&self, paths: &[&str], numcopies: u32) -> SyncResult<Dropped> {
        dmv_sync::drop_files(
            &self.repo,
            &DropOptions {
                paths: paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
                numcopies: Some(numcopies),
                ..Default::default()
            },
        )
    }

    /// How many pack files the store holds (fetches seal packs; a roll
    /// joins them).
    pub fn pack_files(&self) -> usize {
        std::fs::read_dir(self.repo.store.packs_dir())
            .expect("the packs folder")
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("pack".as_ref()))
            .count()
    }

    /// The paths of the checked-out commit whose data is here, sorted.
    pub fn present(&self) -> Vec<String> {
        let mut present: Vec<String> = self
            .repo
            .copies()
            .availability_here(&[])
            .expect("availability")
            .into_iter()
            .filter(|f| f.present)
            .map(|f| String::from_utf8_lossy(&f.path).into_owned())
            .collect();
        present.sort();
        present
    }

    /// Where the data of HEAD's files under `path` is, as `dmv whereis PATH`.
    pub fn whereis(&self, path: &str) -> Vec<FileCopies> {
        whereis(&self.repo, path)
    }
}

/// Where the data of HEAD's files under `path` (all when empty) is, as
/// `dmv whereis PATH` in `repo`: the remotes that answer are asked live,
/// the others known from the location log.
pub fn whereis(repo: &Repository, path: &str) -> Vec<FileCopies> {
    let tree = repo.head_tree().expect("HEAD").expect("a commit");
    let specs: Vec<Vec<u8>> = match path {
        "" => Vec::new(),
        p => vec![p.as_bytes().to_vec()],
    };
    let mut files = Vec::new();
    dmv_sync::whereis(repo, &tree, &specs, &mut |f| {
        files.push(f);
        Ok(())
    })
    .expect("whereis");
    files
}

/// The ids of the replicas other than `repo` that its whereis says hold
/// the data of HEAD's `path`.
pub fn holders(repo: &Repository, path: &str) -> Vec<String> {
    whereis(repo, path)
        .into_iter()
        .flat_map(|f| f.copies)
        .filter(|c| !c.here)
        .map(|c| c.replica)
        .collect()
}

/// The paths of `repo`'s HEAD (a bare repository's too) whose data is not
/// there, sorted.
pub fn absent_in(repo: &Repository) -> Vec<String> {
    let tree = repo.head_tree().expect("HEAD").expect("a commit");
    let mut absent: Vec<String> = repo
        .copies()
        .availability(&tree, &[])
        .expect("availability")
        .into_iter()
        .filter(|f| !f.present)
        .map(|f| String::from_utf8_lossy(&f.path).into_owned())
        .collect();
    absent.sort();
    absent
}
