//! `dmv mount` through the real kernel FUSE (`/dev/fuse`, fusermount3 from
//! fuse3, which the test command installs): what the folder shows against
//! the committed tree, bytes read through it against the committed
//! content at every chunk boundary, in a full replica and in a meta
//! replica that fetches only what reads touch, with its server killed or
//! frozen while it reads.

use crate::common;

use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::needs::{lacks, Need};
use common::proxy::CuttingProxy;
use common::remote::{fsck_clean, ok};
use common::servers::{HttpServer, S3Server};
use common::*;
use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

/// A mount folder, unmounted at the end of the test whatever happens.
struct Mounted {
    repo: PathBuf,
    dir: PathBuf,
    /// The mount's process, as `dmv mount --background` names it.
    pid: u32,
}

impl Mounted {
    /// `dmv mount --background ARGS… DIR` in `repo`.
    fn new(repo: &Path, dir: &Path, args: &[&str]) -> Mounted {
        Self::new_with(repo, dir, args, |_| {})
    }

    /// [`Mounted::new`] with the command's environment prepared by `prepare`.
    fn new_with(repo: &Path, dir: &Path, args: &[&str], prepare: impl Fn(&mut Command)) -> Mounted {
        std::fs::create_dir_all(dir).unwrap();
        let mut all: Vec<&str> = vec!["mount", "--background"];
        all.extend(args);
        all.push(dir.to_str().unwrap());
        let mut cmd = dmv_cmd(repo);
        prepare(&mut cmd);
        let out = cmd.args(&all).output().unwrap();
        assert!(out.status.success(), "dmv {all:?}: {}", stderr(&out));
        let said = String::from_utf8_lossy(&out.stdout);
        let pid = said
            .split_once("(pid ")
            .and_then(|(_, rest)| rest.split(')').next())
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("no pid in {said:?}"));
        Mounted {
            repo: repo.to_path_buf(),
            dir: dir.to_path_buf(),
            pid,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Unmounts, and returns the bytes the mount said it fetched (its last log line).
    fn unmount(self) -> u64 {
        let out = dmv_cmd(&self.repo)
            .args(["umount", self.dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "dmv umount: {}", stderr(&out));
        // `dmv umount` returns once the mount's process has ended, its
        // last line written.
        // (Ended, it may wait to be reaped: a zombie, state Z.)
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid));
        let state = stat
            .as_deref()
            .ok()
            .and_then(|s| s.rsplit_once(") "))
            .map(|(_, s)| &s[..1]);
        assert!(
            matches!(state, None | Some("Z")),
            "the mount's process runs on: {stat:?}"
        );
        let log = self.repo.join(".dmv/mount.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let Some(last) = text.lines().rev().find(|l| l.starts_with("unmounted ")) else {
            panic!("the mount never said it was unmounted: {text}");
        };
        let fetched = last
            .split_once(" (")
            .and_then(|(_, n)| n.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        // One line per mount: the next mount's is its own.
        std::fs::write(&log, "").unwrap();
        std::mem::forget(self);
        fetched
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg(&self.dir)
            .output();
    }
}

/// `cp -r FROM TO`, as a person copies a folder out of a mount.
fn copy_out(from: &Path, to: &Path) {
    let cp = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(
        cp.status.success(),
        "{}",
        String::from_utf8_lossy(&cp.stderr)
    );
}

fn mounted_at(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(dir.to_str().unwrap()))
}

/// Where each chunk of `path`'s version in `rev` starts, and its content id.
fn chunk_starts(repo: &Path, rev: &str, path: &str) -> (ObjectId, Vec<u64>) {
    let repo = Repository::open(repo).unwrap();
    let (_, entry) = repo.history().entry_at(rev, path).unwrap();
    let mut starts = Vec::new();
    let mut at = 0;
    for (_, len) in repo.store.chunk_list(&entry.id).unwrap() {
        starts.push(at);
        at += len;
    }
    (entry.id, starts)
}

/// Reads `file` at a few bytes either side of every chunk boundary, and at
/// its first and last byte, comparing with `expected`. Returns the bytes read.
fn read_at_boundaries(file: &Path, expected: &[u8], starts: &[u64]) -> u64 {
    let f = std::fs::File::open(file).unwrap();
    let mut read = 0;
    let len = expected.len() as u64;
    let mut spots: Vec<u64> = starts.to_vec();
    spots.extend([0, len.saturating_sub(1)]);
    for spot in spots {
        let from = spot.saturating_sub(3);
        let to = (spot + 4).min(len);
        let mut buf = vec![0u8; (to - from) as usize];
        f.read_exact_at(&mut buf, from)
            .unwrap_or_else(|e| panic!("reading {} at {from}: {e}", file.display()));
        assert_eq!(
            buf,
            expected[from as usize..to as usize],
            "bytes {from}..{to} of {}",
            file.display()
        );
        read += to - from;
    }
    read
}

/// A repository with what a mount must show exactly: a folder of many
/// files, a film of many chunks, an executable, a symlink, an empty file,
/// names with spaces and accents; a second commit changes the film.
fn project(root: &Path) -> PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(src.join("many")).unwrap();
    std::fs::create_dir_all(src.join("media/deep/er")).unwrap();
    dmv(&src, &["init"]);
    for i in 0..2000 {
        std::fs::write(
            src.join(format!("many/f{i:05}.txt")),
            format!("file {i}\n").repeat(i % 7),
        )
        .unwrap();
    }
    write_noise(&src.join("media/film.bin"), 6 << 20, 1);
    std::fs::write(src.join("media/deep/er/Café au lait.txt"), "crème\n").unwrap();
    std::fs::write(src.join("run.sh"), "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(src.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("media/deep/er/Café au lait.txt", src.join("latest")).unwrap();
    std::fs::write(src.join("empty"), "").unwrap();
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "first"]);
    dmv(&src, &["tag", "v1"]);
    write_noise(&src.join("media/film.bin"), (6 << 20) + 12_345, 2);
    dmv(&src, &["commit", "-a", "-m", "a new cut"]);
    src
}

#[test]
fn a_full_replica_mounted_shows_the_tree_exactly_and_reads_match_at_every_chunk_boundary() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let m = Mounted::new(&src, &t.path().join("mnt"), &[]);
    assert!(mounted_at(&m.dir));

    // The folder of 2,000 files: every name, every size, no data read.
    let mut names: Vec<(String, u64)> = std::fs::read_dir(m.path("many"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    names.sort();
    let expected: Vec<(String, u64)> = (0..2000)
        .map(|i| {
            (
                format!("f{i:05}.txt"),
                (format!("file {i}\n").len() * (i % 7)) as u64,
            )
        })
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        std::fs::read(m.path("many/f00006.txt")).unwrap(),
        "file 6\n".repeat(6).as_bytes()
    );

    // Modes, the link, the empty file, names with spaces and accents.
    let mode = |rel: &str| {
        std::fs::symlink_metadata(m.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("run.sh"), 0o555);
    assert_eq!(mode("empty"), 0o444);
    assert!(std::fs::symlink_metadata(m.path("media")).unwrap().is_dir());
    assert_eq!(
        std::fs::read_link(m.path("latest")).unwrap(),
        Path::new("media/deep/er/Café au lait.txt")
    );
    assert_eq!(
        std::fs::read_to_string(m.path("latest")).unwrap(),
        "crème\n"
    );
    assert_eq!(std::fs::read(m.path("empty")).unwrap(), b"");
    let ran = Command::new(m.path("run.sh")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "ran\n");

    // The film at every chunk boundary, then whole.
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let (_, starts) = chunk_starts(&src, "HEAD", "media/film.bin");
    assert!(
        starts.len() > 20,
        "the film is many chunks: {}",
        starts.len()
    );
    read_at_boundaries(&m.path("media/film.bin"), &film, &starts);
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == film,
        "the film whole"
    );

    // Read-only, refused as such.
    let e = std::fs::write(m.path("new.txt"), "x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("empty"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    assert_eq!(m.unmount(), 0, "a full replica fetches nothing");
    assert!(!mounted_at(&t.path().join("mnt")));

    // An older revision by its tag.
    let m = Mounted::new(&src, &t.path().join("mnt"), &["v1"]);
    write_noise(&t.path().join("old.bin"), 6 << 20, 1);
    let old = std::fs::read(t.path().join("old.bin")).unwrap();
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == old,
        "v1's film"
    );
    m.unmount();

    // Every branch, tag and commit.
    let m = Mounted::new(&src, &t.path().join("mnt"), &["--all"]);
    let list = |rel: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(m.path(rel))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(list(""), ["branches", "commits", "tags"]);
    assert_eq!(list("branches"), ["main"]);
    assert_eq!(list("tags"), ["v1"]);
    let commits = list("commits");
    assert_eq!(commits.len(), 2, "{commits:?}");
    assert!(
        std::fs::read(m.path("tags/v1/media/film.bin")).unwrap() == old,
        "tags/v1's film"
    );
    assert!(
        std::fs::read(m.path("branches/main/media/film.bin")).unwrap() == film,
        "branches/main's film"
    );
    let films: Vec<Vec<u8>> = commits
        .iter()
        .map(|c| std::fs::read(m.path(&format!("commits/{c}/media/film.bin"))).unwrap())
        .collect();
    assert!(
        films.contains(&old) && films.contains(&film),
        "each commit's folder shows its own film"
    );
    m.unmount();
}

#[test]
fn bad_input_to_mount_and_umount_is_one_line_and_changes_nothing() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let dir = t.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    for (args, says) in [
        (
            vec!["mount", "no-such-rev", dir.to_str().unwrap()],
            "no-such-rev",
        ),
        (vec!["mount", "HEAD", "/no/such/folder"], "/no/such/folder"),
        (
            vec!["mount", "HEAD", src.join("run.sh").to_str().unwrap()],
            "not a folder",
        ),
        (
            vec!["mount", "--all", "HEAD", dir.to_str().unwrap()],
            "--all",
        ),
        (vec!["umount", dir.to_str().unwrap()], "not a mount point"),
    ] {
        let out = dmv_out(&src, &args);
        assert_eq!(
            out.status.code(),
            Some(128),
            "dmv {args:?}: {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "dmv {args:?} said: {err}");
        assert!(err.contains(says), "dmv {args:?} said: {err}");
        assert!(!mounted_at(&dir));
    }
    // A second mount on a mount point is refused; the first stays.
    let m = Mounted::new(&src, &dir, &[]);
    let out = dmv_out(&src, &["mount", "--background", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).contains("already a mount point"));
    assert_eq!(
        std::fs::read_to_string(m.path("run.sh")).unwrap(),
        "#!/bin/sh\necho ran\n"
    );
    m.unmount();
}

/// A bare hub served over HTTP holding the project, and a meta clone of it.
fn hub_and_meta_clone(root: &Path, src: &Path) -> (HttpServer, PathBuf) {
    dmv(root, &["init", "--bare", "hub"]);
    let server = HttpServer::start(
        "access_log = true\n[repos]\nhub = \"hub\"\n[tokens]\n\"mount-test\" = \"write\"\n",
        root,
        0,
    );
    dmv(
        src,
        &[
            "remote",
            "add",
            "origin",
            &server.url("hub"),
            "--token",
            "mount-test",
        ],
    );
    dmv(src, &["push", "origin", "main"]);
    dmv(
        root,
        &[
            "clone",
            "--token",
            "mount-test",
            "--slice",
            "meta",
            &server.url("hub"),
            "phone",
        ],
    );
    let phone = root.join("phone");
    dmv(&phone, &["config", "remote.timeout", "3"]);
    dmv(&phone, &["replica", "--name", "phone"]);
    (server, phone)
}

/// A worktree mount tells the hub of the copies a `cp -r` fetched (not
/// after each batch, see `dmv_sync::TELL_EVERY`): a hub down when the
/// tell is due is told later, once it is back, at the latest as the mount
/// ends.
#[test]
fn a_hub_down_when_a_mount_tells_of_its_copies_is_told_once_back() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (mut server, phone) = hub_and_meta_clone(t.path(), &src);
    let holders = |path: &str| dmv(&t.path().join("hub"), &["whereis", path]);
    assert!(!holders("many/f01000.txt").contains("phone"));
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    copy_out(&m.path("many"), &t.path().join("many-out"));
    // Down past the next tell (due 5 s after the last, or the mount's start).
    server.kill();
    std::thread::sleep(Duration::from_secs(6));
    let config = server.config.clone();
    let _server = HttpServer::start_with(&config, server.port);
    m.unmount();
    let said = holders("many/f01000.txt");
    assert!(said.contains("phone"), "{said}");
}

#[test]
fn a_meta_replica_mounted_fetches_only_the_chunks_reads_touch_and_keeps_them() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let (film_id, starts) = chunk_starts(&src, "HEAD", "media/film.bin");
    let phone_bytes = bytes_under(&phone.join(".dmv"));

    // Listing reads no data; reads at chunk boundaries fetch little more than they read.
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    assert_eq!(std::fs::read_dir(m.path("many")).unwrap().count(), 2000);
    assert_eq!(
        std::fs::metadata(m.path("media/film.bin")).unwrap().len(),
        film.len() as u64
    );
    let read = read_at_boundaries(
        &m.path("media/film.bin"),
        &film,
        &starts[..starts.len() / 2],
    );
    let fetched = m.unmount();
    eprintln!(
        "reads at {} chunk boundaries: {read} bytes read, {fetched} fetched",
        starts.len() / 2 + 2
    );
    assert!(fetched > 0, "a meta replica fetches what it reads");
    // Each spot read touches at most two chunks of at most 256 KiB, and the kernel reads whole pages ahead.
    let chunks_touched = (starts.len() / 2 + 2) as u64 * 2;
    assert!(
        fetched <= chunks_touched * 256 * 1024,
        "read {read} bytes at {} spots, fetched {fetched}",
        starts.len() / 2 + 2
    );
    assert!(
        fetched < film.len() as u64 / 2 + 512 * 1024,
        "half the boundaries read fetched {fetched} of {} bytes",
        film.len()
    );

    // Random reads of 1 MiB, as a player seeks: under twice the bytes read.
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    let f = std::fs::File::open(m.path("media/film.bin")).unwrap();
    let mut noise = Noise::new(9);
    let mut read = 0u64;
    for _ in 0..4 {
        let offset = u64::from_le_bytes(noise.bytes(8).try_into().unwrap())
            % (film.len() as u64 - (1 << 20));
        let mut buf = vec![0u8; 1 << 20];
        f.read_exact_at(&mut buf, offset).unwrap();
        assert!(
            buf == film[offset as usize..offset as usize + (1 << 20)],
            "1 MiB at {offset}"
        );
        read += 1 << 20;
    }
    drop(f);
    let fetched = m.unmount();
    eprintln!("random reads of 1 MiB: {read} bytes read, {fetched} fetched");
    assert!(
        fetched < 2 * read,
        "random reads of {read} bytes fetched {fetched}"
    );

    // Part of the film is here: not a copy, never claimed as one; a drop frees it.
    let here = |whereis: &str| -> bool {
        let whereis: serde_json::Value = serde_json::from_str(whereis).unwrap();
        whereis[0]["copies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "phone" && c["here"] == true)
    };
    assert!(
        !here(&dmv(&phone, &["whereis", "--json", "media/film.bin"])),
        "a part is not a copy"
    );
    assert!(dmv(&phone, &["ls", "--absent"]).contains("media/film.bin"));
    let with_pieces = bytes_under(&phone.join(".dmv"));
    assert!(
        with_pieces > phone_bytes + (1 << 20),
        "the pieces read are kept: {with_pieces} bytes, {phone_bytes} before"
    );
    dmv(&phone, &["drop", "media/film.bin"]);
    assert!(
        bytes_under(&phone.join(".dmv")) < phone_bytes + (256 << 10),
        "drop frees what the mount fetched"
    );
    dmv(&phone, &["fsck"]);

    // Whole, then again: the second read is local, and the film is now a copy here.
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == film,
        "the film whole"
    );
    assert!(m.unmount() >= film.len() as u64);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == film,
        "the film whole again"
    );
    assert_eq!(m.unmount(), 0, "what was read once is kept");
    assert!(here(&dmv(&phone, &["whereis", "--json", "media/film.bin"])));
    dmv(&phone, &["drop", "--numcopies", "1", "media/film.bin"]);
    assert!(!Repository::open(&phone)
        .unwrap()
        .copies()
        .has_data(&film_id)
        .unwrap());
    dmv(&phone, &["fsck"]);
}

#[test]
fn a_meta_replica_of_a_bucket_mounted_reads_only_the_ranges_its_reads_touch() {
    meta_replica_of_a_bucket_mounted(false);
}

/// The same over an encrypted bucket: the ranges a read touches are whole
/// sealed segments, and the bound holds.
#[test]
fn a_meta_replica_of_an_encrypted_bucket_mounted_reads_only_the_ranges_its_reads_touch() {
    meta_replica_of_a_bucket_mounted(true);
}

fn meta_replica_of_a_bucket_mounted(encrypt: bool) {
    if lacks(&[Need::Fuse, Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("mount");
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    // This device's key, for the encrypted bucket.
    let device = t.path().join("device-config");
    let prepare = |cmd: &mut Command| {
        minio.env(cmd);
        cmd.env("XDG_CONFIG_HOME", &device);
    };
    let with_minio = |dir: &Path, args: &[&str]| {
        let mut cmd = dmv_cmd(dir);
        prepare(&mut cmd);
        let out = cmd.args(args).output().unwrap();
        assert!(out.status.success(), "dmv {args:?}: {}", stderr(&out));
    };
    let mut add = vec!["remote", "add", "bucket", "s3://mount/p", "--endpoint"];
    let endpoint = minio.endpoint();
    add.push(&endpoint);
    if encrypt {
        add.push("--encrypt");
    }
    with_minio(&src, &add);
    with_minio(&src, &["push", "bucket", "main"]);
    with_minio(
        t.path(),
        &[
            "clone",
            "--slice",
            "meta",
            "s3://mount/p",
            "phone",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let phone = t.path().join("phone");
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let (_, starts) = chunk_starts(&src, "HEAD", "media/film.bin");

    if encrypt {
        let sealed = minio.list("mount", "p/packs/");
        assert!(
            !sealed.is_empty()
                && sealed
                    .iter()
                    .all(|k| k.ends_with(".p") || k.ends_with(".i")),
            "{sealed:?}"
        );
    }
    let m = Mounted::new_with(&phone, &t.path().join("mnt"), &[], prepare);
    read_at_boundaries(&m.path("media/film.bin"), &film, &starts[..8]);
    let fetched = m.unmount();
    assert!(
        fetched > 0 && fetched <= 10 * 2 * 256 * 1024,
        "8 boundaries and both ends read from the bucket fetched {fetched} bytes"
    );
    let m = Mounted::new_with(&phone, &t.path().join("mnt"), &[], prepare);
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == film,
        "the film whole, from the bucket"
    );
    assert_eq!(
        std::fs::read_to_string(m.path("latest")).unwrap(),
        "crème\n"
    );
    m.unmount();
}

/// Reads `len` bytes at `offset` in a thread; the test fails if it does not end within 60 s.
fn read_in_time(file: &Path, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let file = file.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let f = std::fs::File::open(&file);
        let _ = tx.send(f.and_then(|f| {
            let mut buf = vec![0u8; len];
            f.read_exact_at(&mut buf, offset).map(|()| buf)
        }));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a read through the mount hung")
}

#[test]
fn a_mount_whose_server_dies_or_freezes_answers_eio_for_what_is_missing_and_serves_what_is_here() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (mut server, phone) = hub_and_meta_clone(t.path(), &src);
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    let path = m.path("media/film.bin");
    assert_eq!(read_in_time(&path, 0, 1 << 20).unwrap(), film[..1 << 20]);

    // Frozen: abandoned after the remote timeout (3 s here), EIO, the mount goes on.
    // SAFETY: kill(2) on the server this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGSTOP) };
    let e = read_in_time(&path, 3 << 20, 4096).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert_eq!(
        read_in_time(&path, 0, 1 << 20).unwrap(),
        film[..1 << 20],
        "what is here is served"
    );
    // SAFETY: as above.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGCONT) };

    // Killed: EIO at once for the rest.
    server.kill();
    let e = read_in_time(&path, 5 << 20, 4096).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert_eq!(
        std::fs::read_dir(m.path("many")).unwrap().count(),
        2000,
        "listing needs no server"
    );
    let log = std::fs::read_to_string(phone.join(".dmv/mount.log")).unwrap();
    assert!(
        log.contains("cannot read media/film.bin"),
        "the log names the file: {log}"
    );

    // The server back: the same mount reads the rest.
    let _server = HttpServer::start_with(&server.config, server.port);
    assert_eq!(
        read_in_time(&path, 5 << 20, 4096).unwrap(),
        film[5 << 20..(5 << 20) + 4096]
    );
    m.unmount();
}

/// A file large enough to be read past the page cache (direct I/O): whole,
/// at every chunk boundary, in reads that cross chunks, and mapped (mmap)
/// as image viewers map files; the bytes are the committed ones each way.
#[test]
fn a_large_file_reads_right_whole_at_boundaries_and_mapped() {
    large_file_reads_right(false);
}

/// The same through a worktree mount of a meta clone, the film absent.
#[test]
fn a_large_absent_file_reads_right_through_a_worktree_mount() {
    large_file_reads_right(true);
}

fn large_file_reads_right(worktree: bool) {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    write_noise(&src.join("take.mov"), (40 << 20) + 4321, 7);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "take"]);
    let film = std::fs::read(src.join("take.mov")).unwrap();
    let (_, starts) = chunk_starts(&src, "HEAD", "take.mov");
    let (_server, m) = match worktree {
        false => (None, Mounted::new(&src, &t.path().join("mnt"), &[])),
        true => {
            let (server, phone) = hub_and_meta_clone(t.path(), &src);
            let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
            (Some(server), m)
        }
    };
    let path = m.path("take.mov");
    // Readers size their reads by st_blksize: a film is read a MiB per call, not 64 KiB.
    assert_eq!(
        std::os::unix::fs::MetadataExt::blksize(&std::fs::metadata(&path).unwrap()),
        1 << 20
    );
    assert!(std::fs::read(&path).unwrap() == film, "read whole");
    read_at_boundaries(&path, &film, &starts);
    // Reads of 3 MiB from odd offsets: several chunks each.
    let f = std::fs::File::open(&path).unwrap();
    for offset in [1u64, 5_000_001, 33 << 20] {
        let mut buf = vec![0u8; 3 << 20];
        f.read_exact_at(&mut buf, offset).unwrap();
        assert!(
            buf == film[offset as usize..offset as usize + (3 << 20)],
            "3 MiB at {offset}"
        );
    }
    use std::os::fd::AsRawFd;
    // SAFETY: a private read-only mapping of a file open here, of its length; unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            film.len(),
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(
        map,
        libc::MAP_FAILED,
        "mmap through the mount: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: the mapping is `film.len()` bytes long and stays until munmap.
    let mapped = unsafe { std::slice::from_raw_parts(map as *const u8, film.len()) };
    assert!(mapped == &film[..], "mapped bytes");
    // SAFETY: unmapping what was mapped above, no longer used.
    unsafe { libc::munmap(map, film.len()) };
    drop(f);
    m.unmount();
}

/// A server, or a network, that lies: one byte in every 16 KiB it sends
/// arrives flipped. Reads through the mount of a meta replica answer EIO,
/// never wrong bytes, and keep nothing wrong: once the bytes arrive as
/// sent, the same mount reads the file right and fsck finds nothing.
#[test]
fn a_mount_fed_flipped_bytes_answers_eio_and_keeps_nothing_wrong() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (server, phone) = hub_and_meta_clone(t.path(), &src);
    let proxy = CuttingProxy::start(server.port);
    edit_config(&phone, |cfg| {
        cfg["remotes"]["origin"]["url"] = format!("http://127.0.0.1:{}/hub", proxy.port).into()
    });
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    let path = m.path("media/film.bin");
    let offsets = [0u64, 1 << 20, 3 << 20, (6 << 20) - 4096];

    proxy.flip_server_bytes_every(Some(16 << 10));
    for offset in offsets {
        let e = read_in_time(&path, offset, 4096)
            .expect_err("a read of bytes that arrived flipped must fail");
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "at {offset}: {e}");
    }
    let log = std::fs::read_to_string(phone.join(".dmv/mount.log")).unwrap();
    assert!(
        log.contains("cannot read media/film.bin"),
        "the log names the file: {log}"
    );

    proxy.flip_server_bytes_every(None);
    for offset in offsets {
        let at = offset as usize;
        assert_eq!(
            read_in_time(&path, offset, 4096).unwrap(),
            film[at..at + 4096],
            "at {offset}"
        );
    }
    m.unmount();
    let out = dmv_out(&phone, &["fsck", "--full"]);
    assert!(
        out.status.success(),
        "fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

#[test]
fn a_mount_killed_leaves_no_dead_folder() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let dir = t.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let mut child: Child = dmv_cmd(&src)
        .args(["mount", dir.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !mounted_at(&dir) {
        assert!(Instant::now() < deadline, "never mounted");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("run.sh")).unwrap(),
        "#!/bin/sh\necho ran\n"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // The mount's watcher (and fusermount3's) unmounts once the killed
    // process's FUSE file is closed; fusermount3's alone left the folder
    // dead in 2 of 3 kills right after a read. On a loaded machine that
    // took over 30 s once (a clean CI run beside two builds), so the wait
    // is generous: the test is about the folder being freed at all.
    let deadline = Instant::now() + Duration::from_secs(180);
    while mounted_at(&dir) {
        assert!(
            Instant::now() < deadline,
            "the folder stayed mounted three minutes after its process was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "the folder is a plain empty folder again"
    );
}

/// A meta replica's mount reading while gc, gets and drops run at the same
/// moment: every read returns the committed bytes (or, rarely, EIO for a
/// chunk a drop took between its fetch and its read: never wrong bytes),
/// and at the end the replica is whole: fsck clean, the files got are here.
#[test]
fn a_mount_reading_while_gc_gets_and_drops_run_loses_nothing() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let m = Mounted::new(&phone, &t.path().join("mnt"), &[]);
    let path = m.path("media/film.bin");
    let (mut good, mut eio) = (0, 0);
    std::thread::scope(|s| {
        let collector = s.spawn(|| {
            for _ in 0..6 {
                ok(&dmv_out(&phone, &["gc", "--prune", "now"]));
            }
        });
        let getter = s.spawn(|| {
            for i in 0..20 {
                ok(&dmv_out(&phone, &["get", &format!("many/f{i:05}.txt")]));
            }
        });
        let dropper = s.spawn(|| {
            for _ in 0..4 {
                ok(&dmv_out(&phone, &["drop", "media/film.bin"]));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let mut noise = Noise::new(5);
        for _ in 0..30 {
            let offset = u64::from_le_bytes(noise.bytes(8).try_into().unwrap())
                % (film.len() as u64 - (256 << 10));
            match read_in_time(&path, offset, 256 << 10) {
                Ok(bytes) => {
                    assert!(
                        bytes == film[offset as usize..offset as usize + (256 << 10)],
                        "256 KiB at {offset}"
                    );
                    good += 1;
                }
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
                    eio += 1;
                }
            }
        }
        for h in [collector, getter, dropper] {
            h.join().unwrap();
        }
    });
    assert!(good > eio, "{good} reads right, {eio} refused");
    assert!(
        std::fs::read(m.path("media/film.bin")).unwrap() == film,
        "the film whole once all is quiet"
    );
    m.unmount();
    for i in 0..20 {
        assert_eq!(
            std::fs::read_to_string(phone.join(format!("many/f{i:05}.txt"))).unwrap(),
            format!("file {i}\n").repeat(i % 7)
        );
    }
    fsck_clean(&phone);
}

/// `dmv mount --worktree` in a meta replica: every tracked file is listed
/// at its real size with none of its data here; a read fetches only what
/// it touches and writes nothing into the working tree; what applications
/// do (a new folder and file, an append to a file whose data was absent,
/// an editor's save through a temporary file renamed over an absent file,
/// a lock file made exclusively and renamed, a rename and a deletion of
/// absent files, a folder copied out) is what `dmv status` shows and
/// `dmv commit` commits, and the replica is whole after.
#[test]
fn a_meta_replica_mounted_as_its_working_tree_takes_changes_as_a_disk_does() {
    worktree_mount_takes_changes(true);
}

/// The same where the kernel leaves reads and writes to the mount (no
/// FUSE passthrough: before Linux 6.9, or without the right to it).
#[test]
fn a_worktree_mount_without_passthrough_takes_changes_as_a_disk_does() {
    worktree_mount_takes_changes(false);
}

fn worktree_mount_takes_changes(passthrough: bool) {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (server, phone) = hub_and_meta_clone(t.path(), &src);
    // Refused in one line: a folder inside the working tree, a revision with it.
    std::fs::create_dir(phone.join("inside")).unwrap();
    for args in [
        vec!["mount", "--worktree", "inside"],
        vec!["mount", "--worktree", "HEAD", "inside"],
    ] {
        let out = dmv_out(&phone, &args);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("working tree"), "{err}");
    }
    std::fs::remove_dir(phone.join("inside")).unwrap();
    let m = Mounted::new_with(&phone, &t.path().join("mnt"), &["--worktree"], |c| {
        if !passthrough {
            c.env("DMV_MOUNT_PASSTHROUGH", "0");
        }
    });

    // Everything listed, nothing of it here.
    assert_eq!(std::fs::read_dir(m.path("many")).unwrap().count(), 2000);
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let shown = std::fs::metadata(m.path("media/film.bin")).unwrap();
    assert_eq!(shown.len(), film.len() as u64);
    assert_ne!(shown.permissions().mode() & 0o111, 0o111);
    assert_ne!(
        std::fs::metadata(m.path("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    assert_eq!(
        std::fs::read_link(m.path("latest")).unwrap(),
        Path::new("media/deep/er/Café au lait.txt")
    );
    assert!(
        std::fs::read_dir(m.path(".dmv")).is_err(),
        "the replica's own folder is hidden"
    );
    // A lockable file whose lock is not held shows read-only, as a checkout writes it.
    std::fs::write(m.path(".dmvattributes"), "*.bin lockable\n").unwrap();
    let mode = |p: &str| std::fs::metadata(m.path(p)).unwrap().permissions().mode();
    let deadline = Instant::now() + Duration::from_secs(10);
    while mode("media/film.bin") & 0o222 != 0 {
        assert!(Instant::now() < deadline, "{:o}", mode("media/film.bin"));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ne!(mode("many/f00001.txt") & 0o200, 0);
    assert!(!phone.join("media").exists());

    // A read brings the bytes, not a working-tree file.
    assert_eq!(
        std::fs::read_to_string(m.path("media/deep/er/Café au lait.txt")).unwrap(),
        "crème\n"
    );
    assert!(!phone.join("media/deep/er/Café au lait.txt").exists());
    // `dmv mount --status` names the absent files being read now.
    let open = std::fs::File::open(m.path("media/film.bin")).unwrap();
    let mut buf = vec![0u8; 4096];
    open.read_at(&mut buf, 0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let said = loop {
        let said = dmv(&phone, &["mount", "--status"]);
        if said.contains("reading media/film.bin") || Instant::now() > deadline {
            break said;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(said.contains("shows the working tree"), "{said}");
    assert!(
        said.contains(&format!(
            "reading media/film.bin ({})",
            dmv_repo::human_bytes(film.len() as u64)
        )),
        "{said}"
    );
    // Without passthrough it says so (with it, a kernel before 6.9 would say so too).
    if !passthrough {
        assert!(
            said.contains("reads and writes go through the mount"),
            "{said}"
        );
    }
    drop(open);
    // A folder copied out, fetched as it goes.
    let out = t.path().join("out");
    copy_out(&m.path("media"), &out);
    assert!(std::fs::read(out.join("film.bin")).unwrap() == film);
    // A folder of 2,000 small files copied out is fetched in batches as
    // it is read in order, not one request per file, over connections
    // kept between batches (one per fetch at once: the reader's and two
    // ahead), and the hub is told of the new copies at most every five
    // seconds (dmv_sync::TELL_EVERY), not once a batch.
    let requests = || server.log.lock().unwrap().len();
    let of_kind = |from: usize, kind: &str| {
        let log = server.log.lock().unwrap();
        log[from..]
            .iter()
            .filter(|l| l.contains(&format!("/dmv/{kind} ")))
            .count()
    };
    // A small absent file suggests reads of a disk block, as on disk: `cp`
    // sizes its buffer by it, and a 1 MiB one is mapped afresh per file.
    assert_eq!(
        std::os::unix::fs::MetadataExt::blksize(
            &std::fs::metadata(m.path("many/f00001.txt")).unwrap()
        ),
        4096
    );
    let before = requests();
    let copying = Instant::now();
    copy_out(&m.path("many"), &t.path().join("many-out"));
    let made = requests() - before;
    let tells_due = 1 + copying.elapsed().as_secs() / 5;
    // A tell finding no kept connection idle makes one of its own.
    let hellos = of_kind(before, "hello") as u64;
    assert!(hellos <= 3 + tells_due, "{hellos} connections made");
    assert!(of_kind(before, "put-locations") as u64 <= tells_due);
    for i in [0, 1, 9, 10, 1000, 1999] {
        let copied = std::fs::read(t.path().join(format!("many-out/f{i:05}.txt"))).unwrap();
        assert_eq!(copied, format!("file {i}\n").repeat(i % 7).into_bytes());
    }
    assert!(made <= 100, "{made} requests to copy 2,000 files");
    assert!(!phone.join("many/f01000.txt").exists());
    // A listing read in many parts (one kept per open folder) names each
    // file once, and a folder opened again lists what was made since.
    let names = |dir: &Path| {
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let distinct: std::collections::HashSet<_> = names.iter().cloned().collect();
        assert_eq!(distinct.len(), names.len(), "a name listed twice");
        distinct
    };
    assert_eq!(names(&m.path("many")).len(), 2000);
    // The attributes a listing gave (absent files: no look at the disk).
    for i in [0usize, 1, 6, 1999] {
        let meta = std::fs::metadata(m.path(&format!("many/f{i:05}.txt"))).unwrap();
        assert_eq!(meta.len(), (format!("file {i}\n").len() * (i % 7)) as u64);
        assert!(meta.is_file());
    }
    std::fs::write(m.path("many/late.txt"), "late\n").unwrap();
    let listed = names(&m.path("many"));
    assert_eq!(listed.len(), 2001);
    assert!(listed.contains(std::ffi::OsStr::new("late.txt")));
    std::fs::remove_file(m.path("many/late.txt")).unwrap();

    // What applications do.
    let many = |i: u32| format!("file {i}\n").repeat(i as usize % 7);
    std::fs::create_dir(m.path("new")).unwrap();
    std::fs::write(m.path("new/notes.txt"), "hello\n").unwrap();
    let mut append = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path("many/f00003.txt"))
        .unwrap();
    std::io::Write::write_all(&mut append, b"more\n").unwrap();
    append.sync_all().unwrap();
    drop(append);
    // An editor's save: a temporary file, synced, renamed over the original.
    let tmp = m.path("many/.f00004.txt.swp");
    std::fs::write(&tmp, "saved\n").unwrap();
    std::fs::File::open(&tmp).unwrap().sync_all().unwrap();
    std::fs::rename(&tmp, m.path("many/f00004.txt")).unwrap();
    // A tool's lock file: made exclusively (a second try fails), then renamed.
    let lock = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m.path("state.lock"))
    };
    std::io::Write::write_all(&mut lock().unwrap(), b"v2\n").unwrap();
    assert_eq!(
        lock().unwrap_err().kind(),
        std::io::ErrorKind::AlreadyExists
    );
    std::fs::rename(m.path("state.lock"), m.path("state")).unwrap();
    // A rename and a deletion of files whose data is absent.
    std::fs::rename(m.path("many/f00010.txt"), m.path("many/moved.txt")).unwrap();
    std::fs::remove_file(m.path("many/f00011.txt")).unwrap();
    assert!(!m.path("many/f00011.txt").exists());
    assert_eq!(
        std::fs::read_to_string(m.path("many/moved.txt")).unwrap(),
        many(10)
    );
    assert_eq!(
        std::fs::read_to_string(m.path("many/f00003.txt")).unwrap(),
        many(3) + "more\n"
    );

    // A file changed beside the mount (a checkout, an editor on the
    // replica itself) reads as changed through it, its cached pages gone.
    std::fs::write(phone.join("beside.txt"), "first\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(m.path("beside.txt")).unwrap(),
        "first\n"
    );
    std::fs::write(phone.join("beside.txt"), "again\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(m.path("beside.txt")).unwrap() != "again\n" {
        assert!(
            Instant::now() < deadline,
            "still the old bytes through the mount"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::remove_file(phone.join("beside.txt")).unwrap();

    let status = dmv(&phone, &["status", "--porcelain"]);
    let mut lines: Vec<&str> = status.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            " M many/f00003.txt",
            " M many/f00004.txt",
            "?? .dmvattributes",
            "?? new/notes.txt",
            "?? state",
            "D  many/f00011.txt",
            "R  many/f00010.txt -> many/moved.txt",
        ],
        "{status}"
    );
    dmv(&phone, &["add", "."]);
    dmv(&phone, &["commit", "-m", "through the mount"]);
    let cat = |path: &str| dmv(&phone, &["cat", &format!("HEAD:{path}")]);
    assert_eq!(cat("many/f00003.txt"), many(3) + "more\n");
    assert_eq!(cat("many/f00004.txt"), "saved\n");
    assert_eq!(cat("many/moved.txt"), many(10));
    assert_eq!(cat("new/notes.txt"), "hello\n");
    assert_eq!(cat("state"), "v2\n");
    assert!(!dmv_out(&phone, &["cat", "HEAD:many/f00011.txt"])
        .status
        .success());
    // Only what was written or read whole is in the working tree.
    assert!(!phone.join("media/film.bin").exists());
    assert!(!phone.join("many/moved.txt").exists());
    m.unmount();
    assert_eq!(
        dmv(&phone, &["mount", "--status"]).trim(),
        "no mount of this replica runs"
    );
    fsck_clean(&phone);
}

/// A write the application synced outlives a kill of the mount: it went
/// to the working tree's file, and the folder is freed.
#[test]
fn a_worktree_mount_killed_loses_no_synced_write() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let dir = t.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let mut child: Child = dmv_cmd(&phone)
        .args(["mount", "--worktree", dir.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !mounted_at(&dir) {
        assert!(Instant::now() < deadline, "never mounted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut f = std::fs::File::create(dir.join("many/take-2.txt")).unwrap();
    std::io::Write::write_all(&mut f, b"kept\n").unwrap();
    f.sync_all().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(phone.join("many/take-2.txt")).unwrap(),
        "kept\n"
    );
    let deadline = Instant::now() + Duration::from_secs(180);
    while mounted_at(&dir) {
        assert!(Instant::now() < deadline, "still mounted after its kill");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(dmv(&phone, &["status", "--porcelain"]).contains("?? many/take-2.txt"));
    fsck_clean(&phone);
}

/// A watcher in a meta replica whose working tree is mounted commits what
/// is written through the mount, the whole library still listed there.
#[test]
fn a_watcher_commits_what_is_written_through_a_worktree_mount() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    ok(&dmv_out(
        &phone,
        &["watch", "--background", "--quiet", "0.3"],
    ));
    std::fs::write(m.path("many/from-the-phone.txt"), "shot on the phone\n").unwrap();
    std::fs::remove_file(m.path("many/f00020.txt")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = dmv(&phone, &["ls-files"]);
        if listed.contains("many/from-the-phone.txt") && !listed.contains("many/f00020.txt") {
            let said = dmv(&phone, &["status", "--porcelain"]);
            if said.trim().is_empty() {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "never committed: {}",
            dmv(&phone, &["status"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        dmv(&phone, &["cat", "HEAD:many/from-the-phone.txt"]),
        "shot on the phone\n"
    );
    assert_eq!(std::fs::read_dir(m.path("many")).unwrap().count(), 2000);
    dmv(&phone, &["watch", "--stop"]);
    m.unmount();
    fsck_clean(&phone);
}

/// `mount.cacheSize` bounds what a worktree mount's reads keep: past it
/// the least recently read version is dropped once another replica
/// confirms its copy (and read again from there when asked), while a file
/// changed through the mount is never freed.
#[test]
fn a_worktree_mount_keeps_its_reads_within_the_cache_size() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    dmv(&phone, &["config", "mount.cacheSize", "1M"]);
    dmv(&phone, &["config", "drop.numcopies", "1"]);
    let film = std::fs::read(src.join("media/film.bin")).unwrap();
    let before = bytes_under(&phone.join(".dmv"));
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    assert!(std::fs::read(m.path("media/film.bin")).unwrap() == film);
    let read = bytes_under(&phone.join(".dmv"));
    assert!(
        read >= before + film.len() as u64 * 9 / 10,
        "{before} → {read}"
    );
    // A small file read and then changed through the mount: never freed.
    assert_eq!(
        std::fs::read_to_string(m.path("many/f00002.txt")).unwrap(),
        "file 2\n".repeat(2)
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path("many/f00002.txt"))
        .unwrap_or_else(|e| {
            let log = std::fs::read_to_string(phone.join(".dmv/mount.log"));
            panic!("{e}: {}", log.unwrap_or_default())
        });
    std::io::Write::write_all(&mut f, b"mine\n").unwrap();
    drop(f);
    // The next read finds the film past the budget, and it goes.
    std::fs::read(m.path("many/f00001.txt")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while bytes_under(&phone.join(".dmv")) > before + (1 << 20) {
        assert!(
            Instant::now() < deadline,
            "still {} bytes past {before}: {}",
            bytes_under(&phone.join(".dmv")) - before,
            std::fs::read_to_string(phone.join(".dmv/mount.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read_to_string(phone.join("many/f00002.txt")).unwrap(),
        "file 2\n".repeat(2) + "mine\n"
    );
    // Read again, from the hub. The mount waits, as it ends, for what
    // it writes to the store (freeing, fetching): nothing is cut off.
    assert!(std::fs::read(m.path("media/film.bin")).unwrap() == film);
    m.unmount();
    let packs = std::fs::read_dir(phone.join(".dmv/objects/packs")).unwrap();
    let cut_off: Vec<_> = packs
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") || n.starts_with("tmp-"))
        .collect();
    assert!(cut_off.is_empty(), "{cut_off:?}");
    let log = std::fs::read_to_string(phone.join(".dmv/mount.log")).unwrap_or_default();
    assert!(!log.contains("cannot free"), "{log}");
    // Shown only when the test fails: what the mount freed, and when.
    eprintln!("mount.log:\n{log}");
    // The copy the drop confirmed is known here: fsck finds nothing lost.
    fsck_clean(&phone);
}

/// A command run inside a worktree mount works at the same place in the
/// replica the mount shows, whose `.dmv` the mount hides; even in a folder
/// whose files are all absent, which is not on disk yet.
#[test]
fn dmv_run_inside_a_worktree_mount_works_in_the_replica_it_shows() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    let deep = m.path("media/deep/er");
    assert!(!phone.join("media").exists());
    assert!(dmv(&deep, &["ls", "--absent", "."]).contains("media/deep/er/Café au lait.txt"));
    std::fs::write(deep.join("notes.txt"), "hello\n").unwrap();
    assert_eq!(
        dmv(&deep, &["status", "--short"]),
        "?? media/deep/er/notes.txt\n"
    );
    dmv(&deep, &["add", "notes.txt"]);
    dmv(&deep, &["commit", "-m", "written inside the mount"]);
    assert!(dmv(&phone, &["log", "--oneline", "-n", "1"]).contains("written inside the mount"));
    assert_eq!(dmv(&m.path("many"), &["status", "--short"]), "");
    assert_eq!(
        std::fs::read_to_string(phone.join("media/deep/er/notes.txt")).unwrap(),
        "hello\n"
    );
    m.unmount();
    // Unmounted, the folder is no replica's.
    let out = dmv_out(&t.path().join("mnt"), &["status"]);
    assert!(!out.status.success());
}

/// The kernel keeps an absent file's name and attributes for long (a copy
/// of a folder then asks for each once), so what commands outside the
/// mount change of absent files must reach it at once: a pull that brings
/// a new version of another size, a `get` that writes the file, a lock
/// rule that makes absent files read-only. Each is seen within seconds,
/// where the kernel would otherwise keep the old for 30.
#[test]
fn a_worktree_mount_shows_at_once_what_commands_outside_it_change() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    let seen_within = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ok() {
            assert!(
                Instant::now() < deadline,
                "not seen through the mount: {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Listed, and each looked at: the kernel keeps the names and sizes.
    assert_eq!(std::fs::read_dir(m.path("many")).unwrap().count(), 2000);
    let size = |p: &str| std::fs::metadata(m.path(p)).unwrap().len();
    assert_eq!(size("many/f00006.txt"), 42);
    assert_eq!(size("many/f00013.txt"), 48);

    let longer = "a new version, longer than the one before\n".repeat(3);
    std::fs::write(src.join("many/f00006.txt"), &longer).unwrap();
    dmv(&src, &["commit", "-a", "-m", "longer"]);
    dmv(&src, &["push", "origin", "main"]);
    dmv(&phone, &["pull"]);
    assert!(!phone.join("many/f00006.txt").exists(), "still absent");
    seen_within("the pulled version's size", &|| {
        size("many/f00006.txt") == longer.len() as u64
    });
    assert_eq!(
        std::fs::read_to_string(m.path("many/f00006.txt")).unwrap(),
        longer
    );

    dmv(&phone, &["get", "many/f00013.txt"]);
    let written = std::fs::metadata(phone.join("many/f00013.txt"))
        .unwrap()
        .modified()
        .unwrap();
    seen_within("the time of the file `get` wrote", &|| {
        std::fs::metadata(m.path("many/f00013.txt"))
            .unwrap()
            .modified()
            .unwrap()
            == written
    });

    let mode = |p: &str| std::fs::metadata(m.path(p)).unwrap().permissions().mode();
    assert_ne!(mode("many/f00001.txt") & 0o222, 0);
    std::fs::write(phone.join(".dmvattributes"), "many/*.txt lockable\n").unwrap();
    seen_within("lockable files read-only", &|| {
        mode("many/f00001.txt") & 0o222 == 0
    });
    m.unmount();
}

/// A folder read in order through a worktree mount brings its next small
/// files along, never a film among them: of a film a reader may want only
/// the start, which the chunks it reads bring.
#[test]
fn a_folder_read_in_order_brings_its_small_files_along_and_not_its_films() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("clips")).unwrap();
    dmv(&src, &["init"]);
    for name in ["a.txt", "b.txt", "d.txt", "e.txt"] {
        std::fs::write(src.join("clips").join(name), name.repeat(100)).unwrap();
    }
    // Past the 16 MiB under which files are fetched along.
    write_noise(&src.join("clips/c.mov"), 20 << 20, 11);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "clips"]);
    let (server, phone) = hub_and_meta_clone(t.path(), &src);
    let before = bytes_under(&phone.join(".dmv"));
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    // b.txt opened after a.txt, in order: the files after it come along.
    for name in ["a.txt", "b.txt"] {
        let read = std::fs::read_to_string(m.path(&format!("clips/{name}"))).unwrap();
        assert_eq!(read, name.repeat(100));
    }
    let brought = bytes_under(&phone.join(".dmv")) - before;
    assert!(
        brought < 4 << 20,
        "{brought} bytes brought for four small files"
    );
    let requests = || server.log.lock().unwrap().len();
    let asked = requests();
    for name in ["d.txt", "e.txt"] {
        let read = std::fs::read_to_string(m.path(&format!("clips/{name}"))).unwrap();
        assert_eq!(read, name.repeat(100));
    }
    assert_eq!(requests(), asked, "d.txt and e.txt came along with b.txt");
    m.unmount();
}

/// A small absent file opened through a worktree mount is in the
/// kernel's page cache when the open returns, so its reads never ask the
/// mount (a `cp -r` of photos asks three times a file instead of four);
/// a file past that size is read as asked. Looked at with mincore(2)
/// rather than by reading with the mount stopped, which needed every
/// request the kernel might add (attributes, a statx) to have come first.
#[test]
fn a_small_absent_file_opened_through_a_worktree_mount_is_in_the_page_cache() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("photos")).unwrap();
    dmv(&src, &["init"]);
    let names = ["a.jpg", "b.jpg", "c.jpg"];
    for (i, name) in names.iter().enumerate() {
        write_noise(&src.join("photos").join(name), 60 << 10, 70 + i as u64);
    }
    write_noise(&src.join("photos/raw.dng"), 4 << 20, 79);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "photos"]);
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    // a.jpg, opened first, is fetched by its reads; b.jpg, opened next in
    // order, brings c.jpg along, so both are here when they are opened.
    for (name, given) in [("a.jpg", false), ("b.jpg", true), ("c.jpg", true)] {
        let rel = format!("photos/{name}");
        let mut file = std::fs::File::open(m.path(&rel)).unwrap();
        if given {
            let (cached, pages) = dmv_testkit::pages_cached(&file, 0, 60 << 10);
            assert_eq!(cached, pages, "{rel}");
        }
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut read).unwrap();
        assert_eq!(read, std::fs::read(src.join(&rel)).unwrap(), "{rel}");
    }
    let raw = std::fs::File::open(m.path("photos/raw.dng")).unwrap();
    assert_eq!(
        dmv_testkit::pages_cached(&raw, 0, 4 << 20).0,
        0,
        "a raw file is read as asked"
    );
    drop(raw);
    assert_eq!(
        std::fs::read(m.path("photos/raw.dng")).unwrap(),
        std::fs::read(src.join("photos/raw.dng")).unwrap()
    );
    m.unmount();
    fsck_clean(&phone);
}

/// File `i` of the roll [`roll_in_meta_clone`] makes.
fn roll_name(i: usize) -> String {
    format!("roll/f{i:02}.jpg")
}

/// A roll of 40 small files (`roll/f00.jpg`…, each `frame N` on `lines`
/// lines) committed, pushed to a hub and cloned with the meta slice: the
/// hub's server and the clone.
fn roll_in_meta_clone(root: &Path, lines: usize) -> (HttpServer, PathBuf) {
    let src = root.join("src");
    std::fs::create_dir_all(src.join("roll")).unwrap();
    dmv(&src, &["init"]);
    for i in 0..40 {
        std::fs::write(src.join(roll_name(i)), format!("frame {i}\n").repeat(lines)).unwrap();
    }
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "roll"]);
    hub_and_meta_clone(root, &src)
}

/// A folder read in order through a worktree mount has its next batch
/// fetched ahead while the reader copies this one: once the second file
/// is read, the eight after it are here and the sixteen after those come
/// without being opened, and nothing past them.
#[test]
fn a_folder_read_in_order_is_fetched_ahead_of_the_reader() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (_server, phone) = roll_in_meta_clone(t.path(), 50);
    let name = roll_name;
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    for i in 0..2 {
        let read = std::fs::read_to_string(m.path(&name(i))).unwrap();
        assert_eq!(read, format!("frame {i}\n").repeat(50));
    }
    let absent = || {
        let listed = dmv(&phone, &["ls", "--absent"]);
        (0..40)
            .filter(|&i| listed.contains(&name(i)))
            .collect::<Vec<_>>()
    };
    // The batch ahead lands on a thread of its own: waited for, with a
    // deadline only so a broken mount fails rather than hangs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while absent() != (26..40).collect::<Vec<_>>() {
        assert!(
            Instant::now() < deadline,
            "absent after reading two: {:?}",
            absent()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 2..40 {
        let read = std::fs::read_to_string(m.path(&name(i))).unwrap();
        assert_eq!(read, format!("frame {i}\n").repeat(50), "{}", name(i));
    }
    m.unmount();
    fsck_clean(&phone);
}

/// A file replaced through a worktree mount while the batch holding its
/// old version is fetched ahead (the server frozen to hold the batch in
/// flight) reads what was written once the batch lands, through the
/// mount and on the disk, for a second after: nothing the fetch brought
/// (its chunks handed to the reader, the version noted as read) shows
/// over the new file. The mount reads and writes itself (no
/// passthrough), so what the page cache holds is what a reader sees.
#[test]
fn a_file_replaced_while_its_batch_is_fetched_ahead_reads_what_was_written() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (server, phone) = roll_in_meta_clone(t.path(), 500);
    let name = roll_name;
    let m = Mounted::new_with(&phone, &t.path().join("mnt"), &["--worktree"], |c| {
        c.env("DMV_MOUNT_PASSTHROUGH", "0");
    });
    // Listed first, as cp -r does: the kernel knows each file's inode.
    assert_eq!(std::fs::read_dir(m.path("roll")).unwrap().count(), 40);
    for i in 0..2 {
        assert_eq!(
            std::fs::read_to_string(m.path(&name(i))).unwrap(),
            format!("frame {i}\n").repeat(500)
        );
    }
    // The second read started the batch ahead (f10 to f25) on its own
    // thread: frozen in flight (well within the 3 s remote timeout).
    // SAFETY: kill(2) on the server this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGSTOP) };
    let in_flight = dmv(&phone, &["ls", "--absent"]).contains(&name(25));
    let edit = "edited\n".repeat(7);
    let replaced = [12, 20];
    for i in replaced {
        std::fs::remove_file(m.path(&name(i))).unwrap();
        std::fs::write(m.path(&name(i)), &edit).unwrap();
    }
    // SAFETY: as above.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGCONT) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while dmv(&phone, &["ls", "--absent"]).contains(&name(25)) {
        assert!(Instant::now() < deadline, "the batch ahead never landed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A second of reads: an old version shown over the new file after
    // the batch landed would be seen.
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        for i in replaced {
            let rel = name(i);
            assert_eq!(
                std::fs::read_to_string(m.path(&rel)).unwrap(),
                edit,
                "{rel}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in (0..40).filter(|i| !replaced.contains(i)) {
        let rel = name(i);
        let want = format!("frame {i}\n").repeat(500);
        assert_eq!(
            std::fs::read_to_string(m.path(&rel)).unwrap(),
            want,
            "{rel}"
        );
    }
    for i in replaced {
        let rel = name(i);
        assert_eq!(
            std::fs::read_to_string(phone.join(&rel)).unwrap(),
            edit,
            "{rel} on disk"
        );
    }
    assert!(
        in_flight,
        "the batch ahead had landed before the server froze"
    );
    m.unmount();
    fsck_clean(&phone);
}

/// Two commands at once: while a folder is read in order through a
/// worktree mount (its next batches fetched ahead on threads of their
/// own), gc runs again and again and a second writer gets and drops files
/// of the same folder, some of them just ahead of the reader. Every file
/// reads whole and right, and fsck finds nothing lost.
#[test]
fn a_folder_read_in_order_while_gc_gets_and_drops_run_reads_every_file_right() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    dmv(&phone, &["config", "drop.numcopies", "1"]);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (phone, stop) = (phone.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut done = 0;
            for i in (7..).step_by(13) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                // Files the reader reaches later, and files it never reads.
                let path = format!("many/f{:05}.txt", i % 2000);
                for args in [vec!["gc"], vec!["get", &path], vec!["drop", &path]] {
                    done += usize::from(dmv_out(&phone, &args).status.success());
                }
            }
            done
        })
    };
    for i in 0..600 {
        let read = std::fs::read_to_string(m.path(&format!("many/f{i:05}.txt"))).unwrap();
        assert_eq!(
            read,
            format!("file {i}\n").repeat(i % 7),
            "many/f{i:05}.txt"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let done = other.join().unwrap();
    assert!(done >= 3, "the other commands ran beside the reads: {done}");
    m.unmount();
    assert!(dmv(&phone, &["status", "--short"]).is_empty());
    fsck_clean(&phone);
}

/// rsync into a worktree mount: its temporary files renamed into place,
/// over files whose data is absent too, land as changes of the working
/// tree, and nothing of the files it replaced is fetched.
#[test]
fn an_rsync_into_a_worktree_mount_lands_as_changes() {
    if lacks(&[Need::Fuse, Need::Rsync]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    let edits = t.path().join("edits");
    std::fs::create_dir_all(edits.join("many")).unwrap();
    std::fs::write(edits.join("many/f00030.txt"), "retouched\n").unwrap();
    std::fs::write(edits.join("many/added.txt"), "new take\n").unwrap();
    let rsync = Command::new("rsync")
        .arg("-a")
        .arg(format!("{}/", edits.display()))
        .arg(format!("{}/", m.dir.display()))
        .output()
        .unwrap();
    assert!(
        rsync.status.success(),
        "{}",
        String::from_utf8_lossy(&rsync.stderr)
    );
    let fetched = m.unmount();
    assert_eq!(fetched, 0, "a file replaced whole is not fetched");
    let status = dmv(&phone, &["status", "--porcelain"]);
    let mut lines: Vec<&str> = status.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [" M many/f00030.txt", "?? many/added.txt"],
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(phone.join("many/f00030.txt")).unwrap(),
        "retouched\n"
    );
    fsck_clean(&phone);
}

/// Two commands at once: while files are written, and saved over absent
/// files, through a worktree mount, gc runs again and again and a second
/// writer gets and drops other files of the replica. Every file written
/// through the mount is committed whole afterwards, and fsck finds
/// nothing lost.
#[test]
fn a_worktree_mount_writing_while_gc_gets_and_drops_run_loses_nothing() {
    if lacks(&[Need::Fuse]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = project(t.path());
    let (_server, phone) = hub_and_meta_clone(t.path(), &src);
    dmv(&phone, &["config", "drop.numcopies", "1"]);
    let m = Mounted::new(&phone, &t.path().join("mnt"), &["--worktree"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (phone, stop) = (phone.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut done = 0;
            for i in 1000.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let path = format!("many/f{i:05}.txt");
                for args in [vec!["gc"], vec!["get", &path], vec!["drop", &path]] {
                    done += usize::from(dmv_out(&phone, &args).status.success());
                }
            }
            done
        })
    };
    std::fs::create_dir(m.path("new")).unwrap();
    for i in 0..60u32 {
        std::fs::write(m.path(&format!("new/w{i}.txt")), format!("written {i}\n")).unwrap();
        if i % 3 == 0 {
            let tmp = m.path(&format!("many/.f{i:05}.swp"));
            std::fs::write(&tmp, format!("saved {i}\n")).unwrap();
            std::fs::File::open(&tmp).unwrap().sync_all().unwrap();
            std::fs::rename(&tmp, m.path(&format!("many/f{i:05}.txt"))).unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let done = other.join().unwrap();
    assert!(
        done >= 3,
        "the other commands ran beside the writes: {done}"
    );
    m.unmount();
    dmv(&phone, &["add", "."]);
    dmv(&phone, &["commit", "-m", "beside gc"]);
    for i in 0..60u32 {
        let cat = |path: String| dmv(&phone, &["cat", &format!("HEAD:{path}")]);
        assert_eq!(cat(format!("new/w{i}.txt")), format!("written {i}\n"));
        if i % 3 == 0 {
            assert_eq!(cat(format!("many/f{i:05}.txt")), format!("saved {i}\n"));
        }
    }
    fsck_clean(&phone);
}
