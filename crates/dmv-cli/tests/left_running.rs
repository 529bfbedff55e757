//! Left running for a month, compressed: three replicas with `dmv watch
//! --sync` through one `dmv serve` hub, while a writer on each writes its
//! own folder (whole files, files written slowly in pieces and kept open
//! across pauses longer than the watchers' quiet time, deletions), and the
//! watchers and the hub are killed with SIGKILL at random and started
//! again. Then nothing is touched by hand, and:
//!
//! - every replica converges on one history holding every file's last
//!   version, with nothing left uncommitted, without a person typing;
//! - no history anywhere records a version of a file no writer completed
//!   (a half-written file, or one at 0 bytes after its truncation);
//! - every repository passes fsck.
//!
//! `DMV_LEFT_RUNNING_SECONDS` sets how long the writers and the kills go
//! on (CI runs 15 s; longer by hand); the figures go to RELIABILITY.md.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::remote::fsck_clean;
use common::servers::HttpServer;
use common::*;
use dmv_repo::store::{ObjectId, ObjectKind};
use rand::{Rng, SeedableRng};

const REPLICAS: usize = 3;
const FILES_EACH: usize = 4;
/// How long healing may take once the writers stopped.
const PATIENCE: Duration = Duration::from_secs(180);

fn digest(bytes: &[u8]) -> ObjectId {
    ObjectId::hash(ObjectKind::Chunk, bytes)
}

/// What the writers completed: every version of each path (by digest), and
/// each path's last state (None: deleted).
#[derive(Default)]
struct Written {
    versions: HashMap<String, HashSet<ObjectId>>,
    last: BTreeMap<String, Option<ObjectId>>,
    whole: usize,
    slow: usize,
    deleted: usize,
}

/// A replica's watcher, its output appended to a log beside the replica.
struct Watcher {
    dir: PathBuf,
    child: Option<Child>,
}

impl Watcher {
    fn start(dir: &Path) -> Watcher {
        let mut w = Watcher {
            dir: dir.to_path_buf(),
            child: None,
        };
        w.restart();
        w
    }

    fn restart(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.with_extension("log"))
            .unwrap();
        let child = dmv_cmd(&self.dir)
            .args([
                "watch",
                "--quiet",
                "0.3",
                "--sync",
                "--sync-every",
                "2",
                "--check-every",
                "0.5",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("log")).unwrap_or_default()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One writer's life: files in `folder` of replica `dir`, until `until`.
fn write_for(dir: &Path, folder: &str, seed: u64, until: Instant, written: &Mutex<Written>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    std::fs::create_dir_all(dir.join(folder)).unwrap();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let path = format!("{folder}/f{}.bin", rng.gen_range(0..FILES_EACH));
        let abs = dir.join(&path);
        let roll = rng.gen_range(0..100);
        if roll < 15 {
            if std::fs::remove_file(&abs).is_ok() {
                let mut w = written.lock().unwrap();
                w.last.insert(path, None);
                w.deleted += 1;
            }
            continue;
        }
        let data = dmv_testkit::noise(rng.gen_range(10_000..300_000), seed * 1_000_000 + n);
        if roll < 55 {
            std::fs::write(&abs, &data).unwrap();
        } else {
            // In three pieces, the file kept open across pauses shorter and longer than the quiet time.
            let mut file = std::fs::File::create(&abs).unwrap();
            let third = data.len() / 3;
            for (i, piece) in [&data[..third], &data[third..2 * third], &data[2 * third..]]
                .into_iter()
                .enumerate()
            {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(
                        [50, 200, 500, 900][rng.gen_range(0..4)],
                    ));
                }
                file.write_all(piece).unwrap();
            }
        }
        let mut w = written.lock().unwrap();
        w.versions
            .entry(path.clone())
            .or_default()
            .insert(digest(&data));
        w.last.insert(path, Some(digest(&data)));
        if roll < 55 {
            w.whole += 1;
        } else {
            w.slow += 1;
        }
        drop(w);
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..400)));
    }
}

/// Whether `dir`'s working tree holds each path's last state.
fn holds_last(dir: &Path, last: &BTreeMap<String, Option<ObjectId>>) -> bool {
    last.iter()
        .all(|(path, want)| std::fs::read(dir.join(path)).ok().map(|b| digest(&b)) == *want)
}

/// Every distinct version of a writer's path in `dir`'s history that no
/// writer completed, as `PATH (N bytes) in COMMIT`; and how many versions were looked at.
fn torn_versions(
    dir: &Path,
    versions: &HashMap<String, HashSet<ObjectId>>,
) -> (Vec<String>, usize) {
    let repo = dmv_repo::Repository::open(dir).unwrap();
    let head = repo.head_commit().unwrap().unwrap();
    let mut seen: HashSet<(String, ObjectId)> = HashSet::new();
    let mut torn = Vec::new();
    for commit in repo.history().ancestors(&[head]).unwrap() {
        let tree = repo.commit(&commit).unwrap().tree;
        for (path, entry) in dmv_repo::tree::flatten(&repo.store, &tree).unwrap() {
            let path = String::from_utf8(path).unwrap();
            if !path.starts_with('r') || !seen.insert((path.clone(), entry.id)) {
                continue;
            }
            let out = dmv_out(dir, &["cat", &format!("{}:{path}", commit.to_hex())]);
            assert!(out.status.success(), "{}", stderr(&out));
            if !versions
                .get(&path)
                .is_some_and(|v| v.contains(&digest(&out.stdout)))
            {
                torn.push(format!(
                    "{path} ({} bytes) in {}",
                    out.stdout.len(),
                    commit.short()
                ));
            }
        }
    }
    (torn, seen.len())
}

#[test]
fn replicas_left_watching_converge_and_never_record_a_half_written_file() {
    let seconds: u64 = std::env::var("DMV_LEFT_RUNNING_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "--bare", "hub"]);
    let mut hub = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = { access = \"write\", user = \"w\" }\n",
        t,
        0,
    );
    let port = hub.port;
    let url = hub.url("hub");
    dmv(t, &["init", "seed"]);
    std::fs::write(t.join("seed/README.txt"), "the shoot\n").unwrap();
    common::remote::commit_all(&t.join("seed"), "seed");
    dmv(
        &t.join("seed"),
        &["remote", "add", "origin", &url, "--token", "w"],
    );
    dmv(&t.join("seed"), &["push"]);
    let dirs: Vec<PathBuf> = (0..REPLICAS)
        .map(|i| t.join(format!("replica{i}")))
        .collect();
    for dir in &dirs {
        dmv(t, &["clone", "--token", "w", &url, dir.to_str().unwrap()]);
    }
    let mut watchers: Vec<Watcher> = dirs.iter().map(|d| Watcher::start(d)).collect();

    let until = Instant::now() + Duration::from_secs(seconds);
    let written = Arc::new(Mutex::new(Written::default()));
    let writers: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let (dir, written) = (dir.clone(), written.clone());
            std::thread::spawn(move || {
                write_for(&dir, &format!("r{i}"), 11 + i as u64, until, &written)
            })
        })
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut watcher_kills, mut hub_kills) = (0, 0);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(rng.gen_range(500..2000)));
        match rng.gen_range(0..10) {
            0..=3 => {
                let w = &mut watchers[rng.gen_range(0..REPLICAS)];
                w.kill();
                watcher_kills += 1;
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..500)));
                w.restart();
            }
            4..=5 => {
                hub.kill();
                hub_kills += 1;
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..1000)));
                hub = HttpServer::start_with(&t.join("server.toml"), port);
            }
            _ => {}
        }
    }
    for w in writers {
        w.join().unwrap();
    }

    // Healing: nobody types anything.
    let written = std::mem::take(&mut *written.lock().unwrap());
    let healing = Instant::now();
    loop {
        let heads: Vec<String> = dirs
            .iter()
            .map(|d| dmv(d, &["rev-parse", "HEAD"]))
            .collect();
        let settled = heads.iter().all(|h| *h == heads[0])
            && dirs
                .iter()
                .all(|d| holds_last(d, &written.last) && dmv(d, &["status", "--short"]).is_empty());
        if settled {
            break;
        }
        if healing.elapsed() > PATIENCE {
            let logs: Vec<String> = watchers
                .iter()
                .map(|w| format!("{}:\n{}", w.dir.display(), w.log()))
                .collect();
            panic!(
                "the replicas did not converge within {PATIENCE:?}: {heads:?}\n{}",
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let converged_in = healing.elapsed();
    for w in &mut watchers {
        w.kill();
    }
    let mut looked_at = 0;
    for dir in &dirs {
        let (torn, seen) = torn_versions(dir, &written.versions);
        assert!(
            torn.is_empty(),
            "{}: versions no writer completed: {torn:?}",
            dir.display()
        );
        looked_at += seen;
        fsck_clean(dir);
    }
    fsck_clean(&t.join("hub"));
    assert_eq!(
        dmv(&t.join("hub"), &["rev-parse", "main"]),
        dmv(&dirs[0], &["rev-parse", "HEAD"]),
        "the hub holds the history too"
    );
    fault_report(
        "left-running",
        serde_json::json!({
            "seconds": seconds, "replicas": REPLICAS, "whole_writes": written.whole, "slow_writes": written.slow,
            "deletions": written.deleted, "watcher_kills": watcher_kills, "hub_kills": hub_kills,
            "versions_checked": looked_at, "torn": 0, "converged_ms": converged_in.as_millis() as u64,
        }),
    );
}
