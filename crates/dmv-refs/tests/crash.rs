//! Kills the real torture binary (src/bin/dmv-refs-torture.rs) at every
//! fail point and at random moments, then checks that the store holds the
//! state before or after the interrupted transaction and still accepts new
//! transactions.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use dmv_refs::internals::{LIST_FILE, LOCK_FILE};
use dmv_refs::FAIL_POINTS;

const BIN: &str = env!("CARGO_BIN_EXE_dmv-refs-torture");

/// Each test runs twice: its writers keep every table in a file of its own,
/// then they carry small tables inside tables.list.
const INLINE_LIMITS: [&str; 2] = ["0", "2048"];

thread_local! {
    static INLINE: std::cell::Cell<&'static str> = const { std::cell::Cell::new("0") };
}

/// The torture binary, writing inline tables as this test's round says.
fn torture_cmd() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("DMV_FAILPOINT")
        .env("DMV_TORTURE_INLINE", INLINE.with(|i| i.get()));
    c
}

fn torture(dir: &Path, args: &[&str], failpoint: Option<&str>) -> Output {
    let mut c = torture_cmd();
    c.arg(dir).args(args);
    if let Some(fp) = failpoint {
        c.env("DMV_FAILPOINT", fp);
    }
    c.output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = torture(dir, args, None);
    assert!(
        out.status.success(),
        "torture {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Counter value the checker found (it also verified the full state).
fn check(dir: &Path) -> u64 {
    let out = ok(dir, &["check"]);
    out.trim().strip_prefix("ok ").unwrap().parse().unwrap()
}

fn last_committed(stdout: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("committed ")?.parse().ok())
        .next_back()
}

/// Every *.ref file in the directory is listed (no orphans).
fn no_orphans(dir: &Path) -> bool {
    let list = std::fs::read_to_string(dir.join(LIST_FILE)).unwrap();
    std::fs::read_dir(dir).unwrap().flatten().all(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        (!n.ends_with(".ref") || list.lines().any(|l| l == n))
            && !n.starts_with("tables.list.lock.tmp-")
    })
}

#[test]
fn every_fail_point_leaves_old_or_new_state() {
    for inline in INLINE_LIMITS {
        INLINE.with(|i| i.set(inline));
        every_fail_point_once();
    }
}

fn every_fail_point_once() {
    for fp in FAIL_POINTS {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("refs");
        ok(&dir, &["init"]);
        ok(&dir, &["run", "3"]);
        assert_eq!(check(&dir), 3);
        let spec = format!("{fp}@2");
        let out = torture(&dir, &["run", "300"], Some(&spec));
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "fail point {fp} never fired: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let p = last_committed(&out.stdout).unwrap_or(3);
        let c = check(&dir);
        match *fp {
            // Killed before the list swap: the transaction is not there.
            "refs-after-lock"
            | "refs-during-table-write"
            | "refs-after-table-write"
            | "refs-after-list-write" => assert_eq!(c, p, "{fp}"),
            // Killed after the swap, before commit() returned.
            "refs-after-list-rename" => assert_eq!(c, p + 1, "{fp}"),
            // Compaction runs after a commit (auto) or between commits (gc).
            _ => assert!(c == p || c == p + 1, "{fp}: counter {c}, last printed {p}"),
        }
        if *fp == "refs-after-lock" {
            assert!(
                dir.join(LOCK_FILE).exists(),
                "the dead writer's lock should remain"
            );
        }
        // Recovery: a stale lock is broken, orphans are collected, and new
        // transactions commit.
        let out = ok(&dir, &["run", "3"]);
        assert_eq!(last_committed(out.as_bytes()), Some(c + 3), "{fp}");
        assert_eq!(check(&dir), c + 3, "{fp}");
        assert!(!dir.join(LOCK_FILE).exists(), "{fp}: lock left behind");
        assert!(no_orphans(&dir), "{fp}: orphan table left behind");
    }
}

#[test]
fn random_sigkill_leaves_old_or_new_state() {
    for inline in INLINE_LIMITS {
        INLINE.with(|i| i.set(inline));
        random_sigkills();
    }
}

fn random_sigkills() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("refs");
    ok(&dir, &["init"]);
    let mut prev = 0;
    let mut kills_mid_run = 0;
    // Rounds whose kill provably landed inside a transaction or compaction:
    // the dead writer's lock or an unlisted table is left behind, or the
    // transaction was published but its "committed" line never printed.
    let mut interrupted = 0;
    for round in 0..30u64 {
        let mut child = torture_cmd()
            .arg(&dir)
            .args(["run", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for one commit so every round makes progress however slow
        // the machine is, then kill at a random moment of what follows.
        let mut rd = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = String::new();
        rd.read_line(&mut stdout).unwrap();
        let ms = (round * 7919 + rand::random::<u64>()) % 60;
        std::thread::sleep(Duration::from_millis(ms));
        child.kill().unwrap(); // SIGKILL
        rd.read_to_string(&mut stdout).unwrap();
        let mut out = child.wait_with_output().unwrap();
        out.stdout = stdout.into_bytes();
        if out.status.signal() == Some(libc::SIGKILL) {
            kills_mid_run += 1;
        } else {
            panic!(
                "torture exited by itself: {:?} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let p = last_committed(&out.stdout).unwrap_or(prev);
        // Looked at before anything opens the store again.
        let stale_lock = dir.join(LOCK_FILE).exists();
        let orphans = !no_orphans(&dir);
        let c = check(&dir);
        assert!(
            c == p || c == p + 1,
            "round {round}: counter {c}, last printed {p}"
        );
        let unprinted = c == p + 1;
        if stale_lock || orphans || unprinted {
            interrupted += 1;
        }
        eprintln!("round {round}: slept {ms} ms, counter {c}, lock {stale_lock}, orphans {orphans}, unprinted {unprinted}, stderr {}", String::from_utf8_lossy(&out.stderr));
        prev = c;
    }
    assert_eq!(kills_mid_run, 30);
    // A runner spends nearly all its time inside commit(), so most kills
    // must land there; none would mean the kills never hit a transaction.
    assert!(
        interrupted >= 10,
        "only {interrupted} of 30 kills left evidence of an interrupted transaction"
    );
    assert!(prev >= 30, "too few transactions ran ({prev})");
    let out = ok(&dir, &["run", "2"]);
    assert_eq!(last_committed(out.as_bytes()), Some(prev + 2));
    assert_eq!(check(&dir), prev + 2);
}

#[test]
fn concurrent_processes_serialise_through_cas() {
    // Whether two processes overlap is up to the scheduler, so races run
    // until overlap has been seen: several swaps lost to the other runner
    // and commits switching runner more than once, summed over races
    // because on a loaded machine one race often barely interleaves. Every
    // race must be exact.
    'limits: for inline in INLINE_LIMITS {
        INLINE.with(|i| i.set(inline));
        let (mut lost_total, mut switches_total) = (0, 0);
        for round in 1..=10 {
            let (lost, switches) = race_two_runners();
            eprintln!("inline {inline}, round {round}: lost {lost:?}, {switches} switches");
            lost_total += lost.len();
            switches_total += switches;
            if lost_total >= 3 && switches_total >= 6 {
                continue 'limits;
            }
        }
        panic!("inline {inline}: in 10 races the runners barely overlapped ({lost_total} lost compare-and-swaps, {switches_total} switches)");
    }
}

/// Two runners commit 25 transactions each against one store; checks that
/// together they committed each of 1..=50 exactly once and that every swap a
/// runner lost went to a transaction the other committed. Returns the lost
/// swaps and how often the sequence of commits switches runner.
fn race_two_runners() -> (Vec<u64>, usize) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("refs");
    ok(&dir, &["init"]);
    // Both runners open the store, then wait for this file: they start
    // together however slowly each process comes up.
    let start = d.path().join("start");
    let children: Vec<_> = (0..2)
        .map(|_| {
            torture_cmd()
                .arg(&dir)
                .args(["run", "25"])
                .env("DMV_TORTURE_START", &start)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(&start, b"").unwrap();
    let mut total = 0;
    // Per runner: the transactions it committed and the ones it lost.
    let mut committed: Vec<Vec<u64>> = Vec::new();
    let mut lost: Vec<Vec<u64>> = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        total += String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("committed "))
            .count();
        let numbers = |prefix: &str| -> Vec<u64> {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.strip_prefix(prefix)?.parse().ok())
                .collect()
        };
        committed.push(numbers("committed "));
        lost.push(numbers("lost "));
    }
    assert_eq!(total, 50);
    assert_eq!(check(&dir), 50);
    let mut all: Vec<u64> = committed.concat();
    all.sort_unstable();
    assert_eq!(all, (1..=50).collect::<Vec<u64>>());
    for (me, other) in [(0, 1), (1, 0)] {
        for i in &lost[me] {
            assert!(
                committed[other].contains(i),
                "runner {me} lost transaction {i}, which runner {other} did not commit"
            );
        }
    }
    // One runner's 25 then the other's would switch once.
    let owner = |i: u64| usize::from(committed[1].contains(&i));
    let switches = (2..=50u64).filter(|&i| owner(i) != owner(i - 1)).count();
    (lost.concat(), switches)
}
