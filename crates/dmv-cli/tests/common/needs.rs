//! What some tests need beyond Rust and this build: real servers and kernel
//! facilities (sshd, MinIO, moto, Chromium, FUSE, rsync, exFAT on a loop device). Plain
//! `cargo test` on a machine without one of them skips the tests that need
//! it, saying so on stderr; `scripts/test` installs them all and sets
//! `DMV_TEST_EVERYTHING`, under which a missing one fails the test instead.

use std::path::Path;

/// Something a test needs that a developer's machine may lack.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// OpenSSH's sshd (and ssh-keygen) for ssh remotes.
    Sshd,
    /// A MinIO binary for bucket remotes.
    Minio,
    /// moto's S3 server, the second S3 implementation.
    Moto,
    /// Chromium and chromedriver for the web UI.
    Chromium,
    /// The kernel's FUSE and fusermount3 for `dmv mount`.
    Fuse,
    /// rsync, an application a mounted working tree must take files from.
    Rsync,
    /// Root, a loop device, mkfs.exfat and exfat-fuse for a case-folding file system.
    Exfat,
}

impl Need {
    /// Why this machine cannot give it (None: it can).
    fn missing(self) -> Option<&'static str> {
        let on_path = |name: &str| {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        };
        let root = || {
            // SAFETY: geteuid has no preconditions.
            unsafe { libc::geteuid() == 0 }
        };
        match self {
            Need::Sshd => (!Path::new("/usr/sbin/sshd").exists() || !on_path("ssh-keygen"))
                .then_some("openssh-server is not installed"),
            Need::Minio => super::servers::find_minio()
                .is_none()
                .then_some("MinIO is not installed (nor named by DMV_MINIO)"),
            Need::Moto => super::servers::find_moto()
                .is_none()
                .then_some("moto is not installed (nor named by DMV_MOTO)"),
            Need::Chromium => (!Path::new("/usr/bin/chromedriver").exists())
                .then_some("chromium-driver is not installed"),
            Need::Fuse => (!Path::new("/dev/fuse").exists() || !on_path("fusermount3"))
                .then_some("FUSE (/dev/fuse and fusermount3) is not here"),
            Need::Rsync => (!on_path("rsync")).then_some("rsync is not here"),
            Need::Exfat => (!root()
                || !on_path("losetup")
                || !on_path("mkfs.exfat")
                || !on_path("mount.exfat-fuse"))
            .then_some("an exFAT loop mount needs root, losetup, exfatprogs and exfat-fuse"),
        }
    }
}

/// True when the calling test must stop here because this machine lacks
/// one of `needs` (said on stderr with the test's name). Under
/// `scripts/test` nothing may be missing: the test fails instead.
pub fn lacks(needs: &[Need]) -> bool {
    let Some((need, why)) = needs.iter().find_map(|n| n.missing().map(|why| (*n, why))) else {
        return false;
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    assert!(
        std::env::var_os("DMV_TEST_EVERYTHING").is_none(),
        "{test} needs {need:?}: {why} (scripts/test installs it)"
    );
    eprintln!("skipped {test}: it needs {need:?}: {why}; ./scripts/test installs it");
    true
}
