//! The repository's format requirements (`.dmv/requires`) through the
//! library: `Repository::init` lists them, `open` and `discover` refuse a
//! repository that needs what this build does not know before touching
//! it, and upgrade one an older dmv made. dmv-cli's tests/format.rs keeps
//! the one line the binary prints for a refusal.

mod common;
use common::Scratch;

use std::collections::BTreeMap;
use std::path::Path;

use dmv_repo::{RepoError, Repository, REQUIREMENTS};

/// What this dmv lists in every repository it makes, byte for byte.
const ALL: &str = "packs-v2\npacks-v3\ngc-lock-v2\nworktree-lock\nlocations-journal\nrefs-inline\nlocations-packed\nlocations-claims\n";

fn requires(s: &Scratch) -> String {
    std::fs::read_to_string(s.dir.join(".dmv/requires")).unwrap()
}

fn config(s: &Scratch) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(s.dir.join(".dmv/config")).unwrap()).unwrap()
}

/// Sets the config's format as a hand (or an old dmv) would, dropping its checksum.
fn set_format(s: &Scratch, format: u32) {
    let path = s.dir.join(".dmv/config");
    let mut cfg = config(s);
    cfg["format"] = format.into();
    cfg.as_object_mut().unwrap().remove("checksum");
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
}

/// Every file under `dir` with its bytes.
fn file_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A repository with one commit, "a", of a.txt.
fn one_commit() -> Scratch {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    s.commit_all("a").unwrap();
    s
}

#[test]
fn a_new_repository_lists_its_requirements() {
    let s = Scratch::new();
    assert_eq!(requires(&s), ALL);
    let listed: String = REQUIREMENTS.iter().map(|r| format!("{r}\n")).collect();
    assert_eq!(listed, ALL);
    assert_eq!(config(&s)["format"], 2);
    assert_eq!(s.repo.config.format, 2);
    let bare = tempfile::tempdir().unwrap();
    Repository::init_with(&bare.path().join("hub"), Default::default(), true).unwrap();
    assert_eq!(
        std::fs::read_to_string(bare.path().join("hub/.dmv/requires")).unwrap(),
        ALL
    );
}

#[test]
fn an_unknown_requirement_is_refused_before_anything_is_touched() {
    let s = one_commit();
    s.write("b.txt", "b\n");
    s.write("sub/c.txt", "c\n");
    std::fs::write(s.dir.join(".dmv/requires"), format!("{ALL}packs-v9\n")).unwrap();
    let before = file_bytes(&s.dir.join(".dmv"));
    let refused = |e: RepoError| match e {
        RepoError::UnknownRequirements { path, missing } => {
            assert_eq!(missing, ["packs-v9"], "only what is unknown is named");
            assert_eq!(path, s.dir.canonicalize().unwrap(), "the repository's root");
        }
        other => panic!("expected UnknownRequirements, got {other:?}"),
    };
    refused(Repository::open(&s.dir).err().expect("open refuses"));
    refused(
        Repository::discover(&s.dir)
            .err()
            .expect("discover refuses"),
    );
    refused(
        Repository::discover(&s.dir.join("sub"))
            .err()
            .expect("discover from a folder inside refuses"),
    );
    assert!(matches!(
        Repository::init(&s.dir, Default::default()),
        Err(RepoError::AlreadyExists(_))
    ));
    assert!(
        file_bytes(&s.dir.join(".dmv")) == before,
        "a refused open changed the repository"
    );
    // Blank lines and spaces around a name are not requirements.
    std::fs::write(
        s.dir.join(".dmv/requires"),
        format!("\n  packs-v2 \n{ALL}\n"),
    )
    .unwrap();
    Repository::open(&s.dir).expect("a list with blank lines opens");
}

#[test]
fn a_repository_from_before_requirements_is_upgraded_when_opened() {
    let mut s = one_commit();
    // As the dmv of format 1 left it.
    std::fs::remove_file(s.dir.join(".dmv/requires")).unwrap();
    set_format(&s, 1);
    s.reopen();
    assert_eq!(s.repo.commit(&s.rev("HEAD")).unwrap().message, "a");
    assert_eq!(s.repo.config.format, 2);
    assert_eq!(config(&s)["format"], 2);
    assert_eq!(requires(&s), ALL);
    s.assert_fsck_clean();

    // Format 2 without its list is damage, not an old repository.
    std::fs::remove_file(s.dir.join(".dmv/requires")).unwrap();
    match Repository::open(&s.dir).err().expect("refused") {
        RepoError::Corrupt { path, detail } => {
            assert!(path.ends_with(".dmv/requires"), "{}", path.display());
            assert!(detail.contains("missing"), "{detail}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(!s.dir.join(".dmv/requires").exists(), "nothing written");
    // A format this dmv does not know at all.
    set_format(&s, 3);
    match Repository::open(&s.dir).err().expect("refused") {
        RepoError::UnsupportedFormat { found, supported } => {
            assert_eq!((found, supported), (3, 2));
        }
        other => panic!("expected UnsupportedFormat, got {other:?}"),
    }
    assert!(!s.dir.join(".dmv/requires").exists(), "nothing written");
    assert_eq!(config(&s)["format"], 3);
}

#[test]
fn a_repository_of_an_older_dmv_gets_the_full_list_when_opened() {
    let mut s = one_commit();
    // As the dmv that wrote packs of version 2 left it: it must not meet version 3.
    std::fs::write(
        s.dir.join(".dmv/requires"),
        "packs-v2\ngc-lock-v2\nworktree-lock\n",
    )
    .unwrap();
    s.reopen();
    assert_eq!(requires(&s), ALL);
    assert_eq!(s.repo.commit(&s.rev("HEAD")).unwrap().message, "a");
    s.assert_fsck_clean();
}
