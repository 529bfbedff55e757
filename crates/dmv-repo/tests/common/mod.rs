//! A repository with a working tree in a temporary folder, driven through
//! the library as a front end would: for behaviour tests of dmv-repo
//! without the `dmv` binary.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dmv_repo::ref_names::branch_ref;
use dmv_repo::store::{ChunkParams, ObjectId};
use dmv_repo::{Head, Repository, Silent};

/// A repository in a temporary folder that goes away with it.
pub struct Scratch {
    _tmp: tempfile::TempDir,
    /// The working tree.
    pub dir: PathBuf,
    /// The repository, open.
    pub repo: Repository,
}

impl Scratch {
    /// An empty repository on branch main, signing as Ada.
    pub fn new() -> Scratch {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let dir = tmp.path().join("work");
        let mut repo = Repository::init(&dir, ChunkParams::default()).expect("init");
        repo.set_setting("user.name", Some("Ada")).unwrap();
        repo.set_setting("user.email", Some("ada@example.org"))
            .unwrap();
        Scratch {
            _tmp: tmp,
            dir,
            repo,
        }
    }

    /// The repository opened again from disk, as the next command would.
    pub fn reopen(&mut self) {
        self.repo = Repository::open(&self.dir).expect("the repository opens");
    }

    /// Writes `bytes` at `path` (`/`-separated), making folders.
    pub fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let file = self.dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("a folder");
        }
        std::fs::write(&file, bytes).expect("a file written");
    }

    /// The bytes at `path`, None when no file is there.
    pub fn read(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(self.dir.join(path)).ok()
    }

    /// Removes the file at `path`.
    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.join(path)).expect("a file removed");
    }

    /// Stages the given paths (empty: everything), settling the conflicts
    /// of a merge at them, as `dmv add`.
    pub fn add(&self, paths: &[&str]) {
        let specs: Vec<Vec<u8>> = if paths.is_empty() {
            vec![Vec::new()]
        } else {
            paths.iter().map(|p| p.as_bytes().to_vec()).collect()
        };
        self.repo.add_settling(&specs, false, &Silent).expect("add");
    }

    /// Stages everything and commits it; None when there was nothing to commit.
    pub fn commit_all(&self, message: &str) -> Option<ObjectId> {
        self.add(&[]);
        self.repo.commit_staged(message).expect("commit")
    }

    /// A new branch at HEAD, switched to.
    pub fn branch_here(&self, name: &str) {
        let head = self.repo.head_commit().unwrap().expect("a commit");
        self.repo
            .create_ref(&branch_ref(name), head, "branch: created")
            .expect("a branch");
        self.switch(name);
    }

    /// Checks out branch `name`.
    pub fn switch(&self, name: &str) {
        self.repo
            .switch_to(&Head::Branch(branch_ref(name)), &Silent)
            .expect("switch");
    }

    /// The commit `rev` names.
    pub fn rev(&self, rev: &str) -> ObjectId {
        self.repo.history().resolve(rev).expect("a revision")
    }

    /// The parents of the commit `rev` names.
    pub fn parents(&self, rev: &str) -> Vec<ObjectId> {
        self.repo.commit(&self.rev(rev)).unwrap().parents
    }

    /// The bytes of `path` in the commit `rev` names, None when it has none.
    pub fn in_commit(&self, rev: &str, path: &str) -> Option<Vec<u8>> {
        let (_, entry) = self.repo.history().entry_at(rev, path).ok()?;
        let id = entry.id;
        let mut bytes = Vec::new();
        self.repo
            .store
            .write_content(&id, &mut bytes)
            .expect("the file's data");
        Some(bytes)
    }

    /// The paths of the files in the commit `rev` names, in order.
    pub fn files_in(&self, rev: &str) -> Vec<String> {
        let tree = self.repo.commit(&self.rev(rev)).unwrap().tree;
        let flat = dmv_repo::tree::flatten(&self.repo.store, &tree).unwrap();
        flat.keys()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// The paths staged as new files, in order.
    pub fn staged_new(&self) -> Vec<String> {
        let status = self.repo.status().unwrap();
        (status.staged.iter())
            .filter(|c| c.kind == dmv_repo::ChangeKind::Added)
            .map(|c| String::from_utf8_lossy(&c.path).into_owned())
            .collect()
    }

    /// Every file under the working tree (not .dmv) with its bytes.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.file_name().unwrap() == ".dmv" {
                    continue;
                }
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    let name = p.strip_prefix(root).unwrap().to_string_lossy();
                    out.insert(name.replace('\\', "/"), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &self.dir, &mut out);
        out
    }

    /// Paths with staged, unstaged or untracked changes, nothing else.
    pub fn changed_paths(&self) -> Vec<String> {
        let s = self.repo.status().unwrap();
        let mut paths: Vec<String> = (s.staged.iter().chain(&s.unstaged))
            .map(|c| String::from_utf8_lossy(&c.path).into_owned())
            .chain(
                s.untracked
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
            )
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// fsck --full finds nothing wrong.
    pub fn assert_fsck_clean(&self) {
        let report = self.repo.maintenance().fsck(true, &Silent).expect("fsck");
        assert!(report.problems.is_empty(), "fsck: {:?}", report.problems);
    }
}

/// Bytes that look random and do not compress: a photo, a sound.
#[allow(unused_imports)] // Not every test file uses it.
pub use dmv_testkit::noise;

/// main and feature diverged from one base commit: `on_main` and
/// `on_feature` change the working tree before each side's commit (main
/// stays at the base when `on_main` changes nothing: a fast-forward).
pub fn diverged(
    base: impl Fn(&Scratch),
    on_main: impl Fn(&Scratch),
    on_feature: impl Fn(&Scratch),
) -> Scratch {
    let s = Scratch::new();
    base(&s);
    s.commit_all("base").expect("a base commit");
    s.branch_here("feature");
    on_feature(&s);
    s.commit_all("feature work").expect("a feature commit");
    s.switch("main");
    on_main(&s);
    s.commit_all("main work");
    s
}
