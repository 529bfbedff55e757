//! Helpers for tests that run the real `dmv` binary.
#![allow(dead_code)]

pub mod needs;
pub mod proxy;
pub mod remote;
pub mod servers;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The dmv under test: this build's, or `DMV_TEST_BIN` (the test command
/// sets it to run tests against a build for another platform, e.g. a
/// script running an aarch64 build under qemu-user).
pub fn bin() -> PathBuf {
    std::env::var_os("DMV_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_dmv")))
}

pub fn dmv_cmd(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(dir)
        .env("DMV_AUTHOR_NAME", "Test")
        .env("DMV_AUTHOR_EMAIL", "test@example.com")
        .env_remove("DMV_FAILPOINT")
        .env_remove("DMV_TRACE");
    // No editor of the person running the tests: a commit without -m asks for one.
    for editor in ["DMV_EDITOR", "GIT_EDITOR", "VISUAL", "EDITOR"] {
        c.env_remove(editor);
    }
    c
}

/// Runs dmv, panicking with its output when it fails.
pub fn dmv(dir: &Path, args: &[&str]) -> String {
    let out = dmv_cmd(dir).args(args).output().expect("run dmv");
    assert!(
        out.status.success(),
        "dmv {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn dmv_out(dir: &Path, args: &[&str]) -> Output {
    dmv_cmd(dir).args(args).output().expect("run dmv")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Deterministic pseudo-random bytes (xorshift), fast enough for GiB files.
pub struct Noise(u64);
impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let b = self.0.to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
}

pub fn write_noise(path: &Path, len: u64, seed: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut n = Noise::new(seed);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        n.fill(&mut buf[..k]);
        f.write_all(&buf[..k]).unwrap();
        left -= k as u64;
    }
}

/// Runs a command and returns its exit code and peak RSS in KiB, from
/// wait4(2). That peak counts this process's own peak as the child was
/// made (see `dmv_testkit::in_a_process_of_its_own`, which a test
/// measuring with this runs in): a figure no higher than this process's
/// peak may be this process's, not the command's, and is refused.
pub fn run_with_peak_rss(mut cmd: Command) -> (i32, u64) {
    let child = cmd.spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid);
    std::mem::forget(child);
    let code = std::process::ExitStatus::from_raw(status)
        .code()
        .unwrap_or(-1);
    let peak = usage.ru_maxrss as u64;
    let own = own_peak_rss_kib();
    assert!(
        peak > own,
        "the command's peak, {peak} KiB, may be this test process's ({own} KiB): \
         run the test in a process of its own"
    );
    (code, peak)
}

/// This process's peak RSS in KiB (VmHWM).
fn own_peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

pub fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { files_under(&p) } else { 1 })
        .sum()
}

/// Every file under `dir` with its bytes, by path relative to it: to show
/// that a command changed nothing there.
pub fn file_bytes(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let rel = e
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// The bytes of the files under `dir`. A file removed while it is
/// counted (a store a running mount rewrites) counts as gone.
pub fn bytes_under(dir: &Path) -> u64 {
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let entries = match std::fs::read_dir(dir) {
        Err(e) if gone(&e) => return 0,
        entries => entries.unwrap(),
    };
    entries
        .filter_map(|e| {
            e.map(|e| e.path())
                .map_err(|e| assert!(gone(&e), "{e}"))
                .ok()
        })
        .map(|p| match p.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&p),
            Ok(m) => m.len(),
            Err(e) if gone(&e) => 0,
            Err(e) => panic!("{}: {e}", p.display()),
        })
        .sum()
}

/// Edits `.dmv/config` by hand, as a person would (who then deletes its
/// checksum, as `fsck` asks).
#[allow(dead_code)]
pub fn edit_config(repo: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = repo.join(".dmv/config");
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut cfg);
    cfg.as_object_mut().unwrap().remove("checksum");
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
}

pub fn new_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    dmv(dir.path(), &["init"]);
    dir
}

/// A dmv command stopped at a named point until [`Paused::resume`].
pub struct Paused {
    pub child: Child,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Paused {
    pub fn start(mut cmd: Command, point: &str) -> Paused {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("paused");
        cmd.env("DMV_PAUSEPOINT", format!("{point}:{}", file.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        while !file.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "the command ended ({status}) before reaching {point}: {}",
                    stderr(&out)
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{point} not reached"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Paused {
            child,
            file,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn resume(self) -> Output {
        self.release().wait_with_output().unwrap()
    }

    /// Lets it go on, without waiting for it to end (a watcher does not).
    pub fn release(self) -> Child {
        std::fs::remove_file(&self.file).unwrap();
        self.child
    }
}

/// Writes a fault test's figures to `$DMV_FAULTS_REPORT_DIR/NAME.json` when
/// `scripts/faults` runs it (RELIABILITY.md is made from them).
pub fn fault_report(name: &str, figures: serde_json::Value) {
    if let Ok(dir) = std::env::var("DMV_FAULTS_REPORT_DIR") {
        std::fs::write(
            Path::new(&dir).join(format!("{name}.json")),
            serde_json::to_vec_pretty(&figures).unwrap(),
        )
        .unwrap();
    }
}

/// A security test's figures: how many hostile requests of one class it
/// sent, how many the server refused (or answered harmlessly), the server's
/// peak memory, and that nothing was lost (the test fails otherwise).
pub fn security_report(
    test: &str,
    class: &str,
    tried: usize,
    refused: usize,
    peak_rss: Option<u64>,
) {
    fault_report(
        &format!("security-{test}"),
        serde_json::json!({ "class": class, "tried": tried, "refused": refused, "peak_rss_mib": peak_rss.map(|b| b >> 20), "lost": 0 }),
    );
}
