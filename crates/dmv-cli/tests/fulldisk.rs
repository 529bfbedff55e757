//! Full disks: a command that runs out of space fails in one line naming
//! the file system, leaves the repository as it was and no temporary packs
//! behind, and works once space is freed. Each test mounts a small tmpfs
//! (so the suite must run as root, as CI does) and fills it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::remote::{commit_all, fsck_clean, head_of, ok, one_line_error};
use common::servers::HttpServer;
use common::*;

const MIB: u64 = 1 << 20;

/// A tmpfs of a given size, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// None when not root (mounting needs it): the caller skips, saying so.
    fn mount(bytes: u64) -> Option<SmallDisk> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a small file system needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={}k", bytes / 1024),
                "tmpfs",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cannot mount a tmpfs as root: {}",
            stderr(&out)
        );
        Some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn resize(&self, bytes: u64) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={}k", bytes / 1024)])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cannot resize the tmpfs: {}",
            stderr(&out)
        );
    }

    fn free(&self) -> u64 {
        let path = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: statvfs writes into the zeroed struct; the path is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut st) }, 0);
        st.f_bavail as u64 * st.f_frsize as u64
    }

    /// Fills the disk until `left` bytes are free; returns the filler to remove.
    fn fill_until(&self, left: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let len = self.free().saturating_sub(left);
        std::fs::write(&filler, vec![0u8; len as usize]).unwrap();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .output();
    }
}

/// The command failed in one line saying the disk at `disk` is full.
fn says_full(out: &Output, disk: &SmallDisk) -> String {
    let line = one_line_error(out);
    assert!(
        line.contains("No space left on device")
            && line.contains(&format!("mounted at {} is full", disk.path().display())),
        "{line}"
    );
    line
}

/// Temporary files (of packs, indexes, atomically replaced files) under `dmv_dir`.
fn leftovers(dmv_dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dmv_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.starts_with("tmp-") || name.contains(".tmp-") {
                found.push(e.path().display().to_string());
            }
        }
    }
    found
}

#[test]
fn add_and_commit_on_a_full_disk_change_nothing_and_work_once_space_is_freed() {
    let Some(disk) = SmallDisk::mount(16 * MIB) else {
        return;
    };
    let r = disk.path().join("r");
    std::fs::create_dir(&r).unwrap();
    dmv(&r, &["init"]);
    write_noise(&r.join("a.raw"), 2 * MIB, 1);
    commit_all(&r, "a");
    let head = head_of(&r, "refs/heads/main");
    write_noise(&r.join("b.raw"), 3 * MIB, 2);
    write_noise(&r.join("a.raw"), 3 * MIB, 3);
    let filler = disk.fill_until(MIB);

    says_full(&dmv_out(&r, &["add", "b.raw"]), &disk);
    says_full(&dmv_out(&r, &["commit", "-a", "-m", "edit"]), &disk);
    assert_eq!(head_of(&r, "refs/heads/main"), head);
    assert_eq!(dmv(&r, &["status", "--short"]), " M a.raw\n?? b.raw\n");
    assert_eq!(leftovers(&r.join(".dmv")), Vec::<String>::new());
    fsck_clean(&r);

    std::fs::remove_file(filler).unwrap();
    dmv(&r, &["add", "b.raw"]);
    ok(&dmv_out(&r, &["commit", "-a", "-m", "edit"]));
    assert_eq!(dmv(&r, &["status", "--short"]), "");
    fsck_clean(&r);
}

#[test]
fn clone_and_fetch_onto_a_full_disk_fail_cleanly_and_resume() {
    let Some(disk) = SmallDisk::mount(4 * MIB) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    write_noise(&src.join("a.raw"), 6 * MIB, 1);
    commit_all(&src, "a");

    let c = disk.path().join("c");
    says_full(
        &dmv_out(disk.path(), &["clone", src.to_str().unwrap(), "c"]),
        &disk,
    );
    disk.resize(64 * MIB);
    ok(&dmv_out(
        disk.path(),
        &["clone", src.to_str().unwrap(), "c"],
    ));
    assert!(std::fs::read(c.join("a.raw")).unwrap() == std::fs::read(src.join("a.raw")).unwrap());

    write_noise(&src.join("b.raw"), 6 * MIB, 2);
    commit_all(&src, "b");
    let tracking = head_of(&c, "refs/remotes/origin/main");
    let filler = disk.fill_until(MIB);
    says_full(&dmv_out(&c, &["fetch"]), &disk);
    assert_eq!(head_of(&c, "refs/remotes/origin/main"), tracking);
    assert_eq!(leftovers(&c.join(".dmv")), Vec::<String>::new());
    fsck_clean(&c);
    std::fs::remove_file(filler).unwrap();
    ok(&dmv_out(&c, &["pull"]));
    assert!(std::fs::read(c.join("b.raw")).unwrap() == std::fs::read(src.join("b.raw")).unwrap());
    fsck_clean(&c);
}

#[test]
fn gc_on_a_full_disk_loses_nothing_and_works_once_space_is_freed() {
    let Some(disk) = SmallDisk::mount(32 * MIB) else {
        return;
    };
    let r = disk.path().join("r");
    std::fs::create_dir(&r).unwrap();
    dmv(&r, &["init"]);
    write_noise(&r.join("keep.raw"), 4 * MIB, 1);
    commit_all(&r, "keep");
    dmv(&r, &["switch", "-c", "scrap"]);
    write_noise(&r.join("scrap.raw"), 4 * MIB, 2);
    commit_all(&r, "scrap");
    dmv(&r, &["switch", "main"]);
    dmv(&r, &["branch", "-D", "scrap"]);
    // gc writes the pack it keeps before removing the old ones: leave it no room.
    let filler = disk.fill_until(MIB);
    says_full(
        &dmv_out(&r, &["gc", "--prune", "now", "--prune-reflog"]),
        &disk,
    );
    assert_eq!(leftovers(&r.join(".dmv")), Vec::<String>::new());
    fsck_clean(&r);
    let keep = std::fs::read(r.join("keep.raw")).unwrap();
    assert!(dmv_out(&r, &["cat", "HEAD:keep.raw"]).stdout == keep);

    std::fs::remove_file(filler).unwrap();
    let before = bytes_under(&r.join(".dmv/objects"));
    ok(&dmv_out(&r, &["gc", "--prune", "now", "--prune-reflog"]));
    assert!(
        bytes_under(&r.join(".dmv/objects")) + 3 * MIB < before,
        "gc freed too little"
    );
    assert!(dmv_out(&r, &["cat", "HEAD:keep.raw"]).stdout == keep);
    fsck_clean(&r);
}

#[test]
fn a_server_whose_disk_fills_during_a_push_refuses_it_and_takes_it_later() {
    let Some(disk) = SmallDisk::mount(8 * MIB) else {
        return;
    };
    dmv(disk.path(), &["init", "--bare", "hub"]);
    let hub = disk.path().join("hub");
    let mut server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        disk.path(),
        0,
    );
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    dmv(
        &src,
        &["remote", "add", "hub", &server.url("hub"), "--token", "w"],
    );
    write_noise(&src.join("small.raw"), MIB / 2, 1);
    commit_all(&src, "small");
    ok(&dmv_out(&src, &["push", "hub", "main"]));
    let landed = head_of(&src, "refs/heads/main");
    write_noise(&src.join("big.raw"), 12 * MIB, 2);
    commit_all(&src, "big");

    let line = one_line_error(&dmv_out(&src, &["push", "hub", "main"]));
    assert!(line.contains("No space left on device"), "{line}");
    assert_eq!(head_of(&hub, "refs/heads/main"), landed);
    assert_eq!(leftovers(&hub), Vec::<String>::new());
    fsck_clean(&hub);

    disk.resize(64 * MIB);
    ok(&dmv_out(&src, &["push", "hub", "main"]));
    assert_eq!(
        head_of(&hub, "refs/heads/main"),
        head_of(&src, "refs/heads/main")
    );
    fsck_clean(&hub);
    server.kill();
}

/// A push to a path remote whose disk has a few KiB left: the disk filled
/// as the hub sealed the pack, after the push's last frame, and the hub
/// waited for more of a body it had read whole while the pusher waited
/// for its answer, until `remote.timeout` (30 s) blamed the hub for not
/// answering (4 of 11 pushes). It now fails at once, naming the disk, at
/// every amount of room left.
#[test]
fn a_push_onto_a_nearly_full_disk_says_so_at_once() {
    let Some(disk) = SmallDisk::mount(16 * MIB) else {
        return;
    };
    let r = disk.path().join("r");
    std::fs::create_dir(&r).unwrap();
    dmv(&r, &["init"]);
    dmv(disk.path(), &["init", "--bare", "hub"]);
    let hub = disk.path().join("hub");
    std::fs::write(r.join("notes.txt"), "one\n").unwrap();
    commit_all(&r, "notes");
    dmv(&r, &["push", "../hub", "main"]);
    dmv(&r, &["config", "remote.timeout", "20"]);
    let landed = head_of(&hub, "refs/heads/main");
    for (i, left) in [4u64 << 10, 16 << 10, 64 << 10, 256 << 10]
        .into_iter()
        .enumerate()
    {
        write_noise(&r.join(format!("take{i}.raw")), 200_000, i as u64);
        commit_all(&r, "a take");
        let filler = disk.fill_until(left);
        let out = dmv_out(&r, &["push", "../hub", "main"]);
        std::fs::remove_file(filler).unwrap();
        let line = one_line_error(&out);
        assert!(
            line.contains("No space left on device") && !line.contains("stopped answering"),
            "{left} bytes left: {line}"
        );
        assert_eq!(
            head_of(&hub, "refs/heads/main"),
            landed,
            "{left} bytes left"
        );
        assert_eq!(leftovers(&hub), Vec::<String>::new(), "{left} bytes left");
    }
    ok(&dmv_out(&r, &["push", "../hub", "main"]));
    assert_eq!(
        head_of(&hub, "refs/heads/main"),
        head_of(&r, "refs/heads/main")
    );
    fsck_clean(&hub);
}
