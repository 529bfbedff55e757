//! The replica invariant, tested Jepsen-style: a fleet of replicas on
//! loopback runs random operations two or three at a time, under faults,
//! and after every step the real stores are checked against it:
//!
//! - every version of every file in any replica's history has at least one
//!   copy somewhere (the test never drops with `--force`, so one is the
//!   floor; versions below two copies are counted, not failed);
//! - the location log never claims a copy that does not exist: an unknown
//!   is fine, a false "holds" is not.
//!
//! The fleet: a bare hub served by `dmv serve` over HTTP (its admin allows
//! drops there), a bucket in a real MinIO (which the same server also
//! serves: the desk reaches the bucket through it, the others directly), and four working replicas, each
//! with the hub as `origin`: `laptop` (full, also reachable by the others as
//! an ssh peer through a real sshd), `desk` (full), `phone`
//! (`paths:phone,desk`) and `tablet` (`meta`); see [`REPLICAS`] for who has
//! which remotes. Each replica writes only into its own folder
//! (`desk/f3.raw`), so a file's versions pile up in history and nobody else
//! changes them (merges of criss-cross histories still conflict: see
//! [`Fleet::settle_merges`]).
//!
//! The operations: commit new or changed files (2 to 100 KiB of noise),
//! `get`, `drop --numcopies 1|2`, `drop --from REMOTE`, `push`, `pull`,
//! `sync`, `gc`, `whereis`, and a watcher (`dmv watch --sync`, on the desk,
//! or on the phone with `--drop-after-push`) running for a few seconds
//! while files are written into its folder, then stopped with SIGTERM or
//! killed at a random moment; the faults: `kill -9` of a running command
//! after a random delay, the HTTP server killed and restarted, MinIO
//! stopped and restarted or frozen (`SIGSTOP`) for a moment. A failed
//! command is expected (a refused push, a drop short of copies, a killed
//! command) but must fail cleanly: exit 1 or 128, never a panic.
//!
//! How each store is asked, with nothing running (every command of the step
//! has ended, and every process it started):
//!
//! - the versions: every commit reachable from any ref or HEAD of any
//!   store (the bucket's refs too), walked in whichever store has it, and
//!   every file entry of its tree;
//! - a repository directory (the hub, the laptop, the working replicas) is
//!   opened with `dmv_repo::Repository` and each version's content read
//!   from its store whole (every node and chunk read and checked against
//!   its id, the length compared with the tree's): it holds the version
//!   only if that succeeds;
//! - the bucket is opened afresh (a new mirror of its pack indexes) through
//!   `dmv_sync::RemoteSpec`, each version's nodes read from it and its
//!   chunks located in its published indexes; the last check also reads
//!   and verifies every chunk;
//! - the location logs are read from disk (`.dmv/locations` and its
//!   journal; in the bucket, each replica's log object), every record of
//!   every history version; and `dmv whereis --json` is run in one replica
//!   per step, as a user would, its claims checked the same way.
//!
//! A log record is a time-stamped "R holds V" (or "does not"), so a record
//! can be old. A false "holds" is *stale* when some log in the fleet has a
//! newer "does not" for the same version and replica (the news has not
//! travelled yet: counted), and *false* when none has (nobody recorded the
//! copy going, or it never existed: a violation). A step that breaks the
//! invariant is checked again 2 s later (the HTTP server may still be
//! finishing a request whose client was killed): what is gone by then is
//! reported, not failed.
//!
//! `DMV_FLEET_SEED` picks the operations (default fixed); `DMV_FLEET_STEPS`
//! their number (default a CI-sized run, `full` several hundred steps). A
//! seed repeats the operations and their order, not the machine's timing.
//! On a violation the test prints the seed, the step, its operations, every
//! earlier step's operations and the whole state, keeps the fleet's folder,
//! and fails. The last two tests pin, deterministically, violations the
//! fleet found.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::needs::{lacks, Need};
use common::servers::{HttpServer, S3Server, Sshd, MINIO_SECRET, MINIO_USER};
use common::*;
use dmv_repo::store::object::{decode, FileNode};
use dmv_repo::store::{ObjectId, ObjectKind, StoreError};
use dmv_repo::{LocationLog, ReplicaId, Repository};
use dmv_sync::{Received, Remote, RemoteSpec};
use serde_json::json;

const DEFAULT_SEED: u64 = 20_260_401;
/// About two minutes in release on two busy cores.
const CI_STEPS: usize = 100;
const FULL_STEPS: usize = 500;

/// Files per replica folder: few, so most commits change a file (a new
/// version of it) rather than add one.
const FILES_PER_FOLDER: u64 = 6;
const BUCKET: &str = "fleet";
const ADMIN_TOKEN: &str = "fleet-admin";
const WRITE_TOKEN: &str = "fleet-write";
/// A command running longer than this is stuck: it is killed and reported.
const HUNG: Duration = Duration::from_secs(120);
/// Bucket leases last this long (the product's are 2 and 5 minutes, so a
/// killed push would hold off drops from the bucket for most of a run).
/// Every command here takes a few seconds, so a lease never lapses under one.
const LEASE_SECONDS: &str = "60";

/// A working replica: its name (also its folder in the tree and its
/// directory), how it was cloned, and its remotes (`origin` is the hub,
/// `laptop` the laptop over ssh).
struct ReplicaSpec {
    name: &'static str,
    slice: Option<&'static str>,
    token: &'static str,
    remotes: &'static [&'static str],
}

const REPLICAS: [ReplicaSpec; 4] = [
    ReplicaSpec {
        name: "laptop",
        slice: None,
        token: ADMIN_TOKEN,
        remotes: &["origin", "bucket"],
    },
    ReplicaSpec {
        name: "desk",
        slice: None,
        token: ADMIN_TOKEN,
        remotes: &["origin", "bucket", "laptop"],
    },
    // A write token: its drops from the hub are refused (only an admin may).
    ReplicaSpec {
        name: "phone",
        slice: Some("paths:phone,desk"),
        token: WRITE_TOKEN,
        remotes: &["origin", "laptop"],
    },
    ReplicaSpec {
        name: "tablet",
        slice: Some("meta"),
        token: ADMIN_TOKEN,
        remotes: &["origin", "bucket"],
    },
];

/// Where file data can be, in the order the state is printed: the hub, the
/// working replicas, then the bucket.
const STORES: [&str; 6] = ["hub", "laptop", "desk", "phone", "tablet", "bucket"];

/// SplitMix64: the same sequence for a seed on every machine and version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

// ---------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------

/// What one operation of a step does.
#[derive(Clone, Debug)]
enum Action {
    /// Writes these files (path, length, noise seed) into the replica's
    /// folder, then `dmv add FOLDER` and `dmv commit`.
    Commit { files: Vec<(String, u64, u64)> },
    /// One dmv command line.
    Dmv(Vec<String>),
    /// `dmv watch --sync` (the phone's with `--drop-after-push`) runs for
    /// `runs` while these files are written into the replica's folder, one
    /// every `runs / (files + 1)`; then it is stopped with SIGTERM (or
    /// killed, if the operation says when).
    Watch {
        files: Vec<(String, u64, u64)>,
        runs: Duration,
    },
    /// The HTTP server killed, and started again on its port after `down`.
    RestartHub { down: Duration },
    /// MinIO frozen with SIGSTOP for a moment, then SIGCONT.
    FreezeBucket { frozen: Duration },
    /// MinIO stopped, and started again on its port and data after `down`.
    RestartBucket { down: Duration },
}

#[derive(Clone, Debug)]
struct Planned {
    /// What it is, for the figures: commit, get, drop, drop-from, …
    kind: &'static str,
    /// The store it runs in (commands), or "" for a fault.
    at: &'static str,
    action: Action,
    /// kill -9 whichever of its commands runs at this moment after its start.
    kill_after: Option<Duration>,
}

impl Planned {
    fn is_fault(&self) -> bool {
        !matches!(
            self.action,
            Action::Commit { .. } | Action::Dmv(_) | Action::Watch { .. }
        )
    }

    /// The stores a push or sync sends data to (a sync without a remote: every remote).
    fn sends_to(&self) -> Vec<&'static str> {
        let remotes = REPLICAS
            .iter()
            .find(|r| r.name == self.at)
            .map_or(&[][..], |r| r.remotes);
        let named: Vec<&'static str> = match (&self.action, self.kind) {
            (Action::Dmv(args), "push" | "sync") => remotes
                .iter()
                .copied()
                .filter(|r| args.iter().any(|a| a == r))
                .collect(),
            (Action::Watch { .. }, _) => Vec::new(),
            _ => return Vec::new(),
        };
        let targets = if named.is_empty() {
            remotes.to_vec()
        } else {
            named
        };
        targets
            .into_iter()
            .map(|r| if r == "origin" { "hub" } else { r })
            .collect()
    }
}

impl std::fmt::Display for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.action {
            Action::Commit { files } => {
                let written: Vec<String> = files
                    .iter()
                    .map(|(p, len, seed)| format!("{p} ({len} bytes, noise {seed})"))
                    .collect();
                write!(
                    f,
                    "{}$ write {}; dmv add {}; dmv commit -m …",
                    self.at,
                    written.join(", "),
                    self.at
                )?;
            }
            Action::Dmv(args) => write!(f, "{}$ dmv {}", self.at, args.join(" "))?,
            Action::Watch { files, runs } => {
                let written: Vec<String> = files
                    .iter()
                    .map(|(p, len, seed)| format!("{p} ({len} bytes, noise {seed})"))
                    .collect();
                write!(
                    f,
                    "{}$ dmv {} for {} ms, writing {}",
                    self.at,
                    watch_args(self.at).join(" "),
                    runs.as_millis(),
                    written.join(", ")
                )?;
            }
            Action::RestartHub { down } => write!(
                f,
                "kill -9 the HTTP server, start it again after {} ms",
                down.as_millis()
            )?,
            Action::FreezeBucket { frozen } => {
                write!(f, "kill -STOP MinIO, -CONT after {} ms", frozen.as_millis())?
            }
            Action::RestartBucket { down } => write!(
                f,
                "stop MinIO, start it again after {} ms",
                down.as_millis()
            )?,
        }
        if let Some(k) = self.kill_after {
            write!(f, " [kill -9 after {} ms]", k.as_millis())?;
        }
        Ok(())
    }
}

/// A path of the fleet's tree: a replica's folder or one of its files.
fn pick_path(rng: &mut Rng) -> String {
    let owner = rng.pick(&REPLICAS).name;
    match rng.chance(40) {
        true => owner.to_string(),
        false => format!("{owner}/f{}.raw", rng.below(FILES_PER_FOLDER)),
    }
}

/// One operation, chosen by the seed alone (never by what earlier steps did,
/// so that a seed repeats the same operations). `faults`: whether a fault
/// may be chosen (one per step at most).
fn plan_operation(rng: &mut Rng, faults: bool) -> Planned {
    loop {
        let replica = rng.pick(&REPLICAS);
        let at = replica.name;
        let remote = *rng.pick(replica.remotes);
        let numcopies = if rng.chance(50) { "1" } else { "2" };
        // Out of 108: commit 22, get 10, drop 14, drop --from 9, push 10,
        // pull 9, sync 9, gc 5, whereis 4, faults 8, a watcher 8.
        let roll = rng.below(108);
        let dmv_op = |kind: &'static str, at: &'static str, args: Vec<String>| Planned {
            kind,
            at,
            action: Action::Dmv(args),
            kill_after: None,
        };
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut planned = match roll {
            0..=21 => {
                let mut files: Vec<(String, u64, u64)> = Vec::new();
                for _ in 0..1 + rng.below(3) {
                    let (path, len, noise) = (
                        format!("{at}/f{}.raw", rng.below(FILES_PER_FOLDER)),
                        2048 + rng.below(98 * 1024),
                        rng.next() >> 16,
                    );
                    if files.iter().all(|(p, _, _)| *p != path) {
                        files.push((path, len, noise));
                    }
                }
                Planned {
                    kind: "commit",
                    at,
                    action: Action::Commit { files },
                    kill_after: None,
                }
            }
            22..=31 => {
                let mut a = args(&["get"]);
                if rng.chance(30) {
                    a.extend(["--rev".to_string(), format!("HEAD~{}", 1 + rng.below(3))]);
                }
                if rng.chance(30) {
                    a.extend(["--remote".to_string(), remote.to_string()]);
                }
                a.push(pick_path(rng));
                dmv_op("get", at, a)
            }
            32..=45 => dmv_op(
                "drop",
                at,
                [
                    args(&["drop", "--numcopies", numcopies]),
                    vec![pick_path(rng)],
                ]
                .concat(),
            ),
            46..=54 => dmv_op(
                "drop-from",
                at,
                [
                    args(&["drop", "--numcopies", numcopies, "--from", remote]),
                    vec![pick_path(rng)],
                ]
                .concat(),
            ),
            // The laptop has its branch checked out: pushes to it go to a branch of the pusher's own.
            55..=64 if remote == "laptop" => dmv_op(
                "push",
                at,
                vec!["push".into(), remote.into(), format!("main:from-{at}")],
            ),
            55..=64 => dmv_op("push", at, args(&["push", remote, "main"])),
            65..=73 => dmv_op("pull", at, args(&["pull", remote])),
            74..=82 if rng.chance(50) => dmv_op("sync", at, args(&["sync"])),
            74..=82 => dmv_op("sync", at, args(&["sync", remote])),
            83..=87 => {
                let store = *rng.pick(&["hub", "laptop", "desk", "phone", "tablet"]);
                let a = if rng.chance(50) {
                    args(&["gc"])
                } else {
                    args(&["gc", "--prune=now"])
                };
                dmv_op("gc", store, a)
            }
            88..=91 => dmv_op("whereis", at, args(&["whereis", "--json"])),
            92..=94 if faults => Planned {
                kind: "restart-hub",
                at: "",
                action: Action::RestartHub {
                    down: rng.millis(50, 1500),
                },
                kill_after: None,
            },
            95..=97 if faults => Planned {
                kind: "freeze-bucket",
                at: "",
                action: Action::FreezeBucket {
                    frozen: rng.millis(200, 2000),
                },
                kill_after: None,
            },
            98..=99 if faults => Planned {
                kind: "restart-bucket",
                at: "",
                action: Action::RestartBucket {
                    down: rng.millis(50, 1000),
                },
                kill_after: None,
            },
            100..=107 => {
                let at = if rng.chance(50) { "desk" } else { "phone" };
                let files = (0..1 + rng.below(3))
                    .map(|_| {
                        (
                            format!("{at}/f{}.raw", rng.below(FILES_PER_FOLDER)),
                            2048 + rng.below(98 * 1024),
                            rng.next() >> 16,
                        )
                    })
                    .collect();
                let runs = rng.millis(1500, 6000);
                // Killed at any moment of its run, or stopped as a person would.
                let kill_after = rng
                    .chance(40)
                    .then(|| rng.millis(100, runs.as_millis() as u64));
                return Planned {
                    kind: "watch",
                    at,
                    action: Action::Watch { files, runs },
                    kill_after,
                };
            }
            _ => continue,
        };
        if !planned.is_fault() && rng.chance(20) {
            planned.kill_after = Some(rng.millis(2, 300));
        }
        return planned;
    }
}

/// A step: two or three operations, started at once.
fn plan_step(rng: &mut Rng) -> Vec<Planned> {
    let count = 2 + rng.below(2) as usize;
    let mut ops: Vec<Planned> = Vec::new();
    while ops.len() < count {
        let no_fault_yet = ops.iter().all(|o| !o.is_fault());
        ops.push(plan_operation(rng, no_fault_yet));
    }
    ops
}

/// How an operation ended.
#[derive(Debug)]
enum Ended {
    Ok,
    /// Exit code and the command's last line on stderr.
    Failed(i32, String),
    /// Killed by the test while this command ran.
    Killed(String),
    /// A fault, done.
    Fault,
}

struct Outcome {
    planned: Planned,
    ended: Ended,
    took: Duration,
    /// What is wrong with how it ended (a panic, a crash, an unclean error, a hang).
    wrong: Vec<String>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ended = match &self.ended {
            Ended::Ok => "ok".to_string(),
            Ended::Failed(code, line) => format!("exit {code}: {line}"),
            Ended::Killed(during) => format!("killed during `dmv {during}`"),
            Ended::Fault => "done".to_string(),
        };
        write!(
            f,
            "{} → {ended} ({} ms)",
            self.planned,
            self.took.as_millis()
        )
    }
}

// ---------------------------------------------------------------------------
// The fleet
// ---------------------------------------------------------------------------

struct Fleet {
    root: PathBuf,
    sshd: Sshd,
    hub: Mutex<HttpServer>,
    hub_port: u16,
    /// Every HTTP server started, its output (checked for panics).
    hub_logs: Mutex<Vec<std::sync::Arc<Mutex<Vec<String>>>>>,
    minio: Mutex<S3Server>,
    endpoint: String,
    /// The environment every dmv command gets: MinIO's credentials, short
    /// bucket leases, and what ssh remotes need.
    env: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
}

fn bucket_url() -> String {
    format!("s3://{BUCKET}/photos")
}

/// Every rewrite of a location log claims the trees it can (in the
/// product, logs of 1,024 records and more; the fleet's are smaller), so
/// claims on disk and sent as claims meet every operation and fault.
const CLAIMS_ALWAYS: [(&str, &str); 1] = [("DMV_TEST_CLAIMS_FROM_RECORDS", "1")];

impl Fleet {
    fn dir(&self, store: &str) -> PathBuf {
        self.root.join(store)
    }

    fn command(&self, at: &str, args: &[String]) -> Command {
        let mut cmd = dmv_cmd(&self.dir(at));
        cmd.args(args);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }

    /// Runs a dmv command of the setup, which must succeed.
    fn setup(&self, at: &str, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let out = self.command(at, &args).output().unwrap();
        assert!(
            out.status.success(),
            "setup: {at}$ dmv {}: {}",
            args.join(" "),
            stderr(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The hub served over HTTP, the bucket in MinIO, the laptop reachable
    /// over ssh; the laptop's first commit pushed to both, the others cloned
    /// from the hub.
    fn start(root: PathBuf) -> Fleet {
        let sshd = Sshd::start();
        let minio = S3Server::minio();
        minio.create_bucket(BUCKET);
        dmv(&root, &["init", "--bare", "hub"]);
        // The same server also serves the bucket (issue 44, item 5): the desk reaches it through the server, the others directly.
        let config = format!(
            "[repos]\nhub = \"hub\"\nbucket = {{ url = \"{}\", endpoint = \"{}\" }}\n[tokens]\n\"{ADMIN_TOKEN}\" = \"admin\"\n\"{WRITE_TOKEN}\" = \"write\"\n",
            bucket_url(),
            minio.endpoint()
        );
        std::fs::write(root.join("server.toml"), config).unwrap();
        let hub = HttpServer::start_with_env(&root.join("server.toml"), 0, &CLAIMS_ALWAYS);
        let mut env_probe = Command::new("true");
        minio.env(&mut env_probe);
        sshd.env(&mut env_probe);
        env_probe.env("DMV_TEST_LEASE_SECONDS", LEASE_SECONDS);
        env_probe.envs(CLAIMS_ALWAYS);
        let env = env_probe
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        let fleet = Fleet {
            hub_port: hub.port,
            hub_logs: Mutex::new(vec![hub.log.clone()]),
            hub: Mutex::new(hub),
            endpoint: minio.endpoint(),
            minio: Mutex::new(minio),
            sshd,
            env,
            root,
        };
        let (hub_url, relay_url) = {
            let hub = fleet.hub.lock().unwrap();
            (hub.url("hub"), hub.url("bucket"))
        };
        let laptop_url = fleet.sshd.url(&fleet.dir("laptop"));
        // The first version of every file of every folder, so that every path the operations name exists.
        std::fs::create_dir_all(fleet.dir("laptop")).unwrap();
        fleet.setup("laptop", &["init"]);
        for (i, spec) in REPLICAS.iter().enumerate() {
            std::fs::create_dir_all(fleet.dir("laptop").join(spec.name)).unwrap();
            for k in 0..FILES_PER_FOLDER {
                let n = i as u64 * FILES_PER_FOLDER + k;
                write_noise(
                    &fleet.dir("laptop").join(format!("{}/f{k}.raw", spec.name)),
                    4096 + n * 1500,
                    1_000 + n,
                );
            }
        }
        fleet.setup("laptop", &["add", "."]);
        fleet.setup("laptop", &["commit", "-m", "the first files"]);
        fleet.setup(
            "laptop",
            &["remote", "add", "origin", &hub_url, "--token", ADMIN_TOKEN],
        );
        fleet.setup("laptop", &["push", "-u", "origin", "main"]);
        for spec in &REPLICAS[1..] {
            let mut args = vec!["clone", "--token", spec.token, &hub_url, spec.name];
            if let Some(slice) = spec.slice {
                args.extend(["--slice", slice]);
            }
            fleet.setup("", &args);
        }
        for spec in &REPLICAS {
            for remote in spec.remotes.iter().filter(|r| **r != "origin") {
                match *remote {
                    "bucket" if spec.name == "desk" => fleet.setup(
                        spec.name,
                        &["remote", "add", "bucket", &relay_url, "--token", spec.token],
                    ),
                    "bucket" => fleet.setup(
                        spec.name,
                        &[
                            "remote",
                            "add",
                            "bucket",
                            &bucket_url(),
                            "--endpoint",
                            &fleet.endpoint,
                        ],
                    ),
                    _ => fleet.setup(spec.name, &["remote", "add", remote, &laptop_url]),
                };
            }
        }
        fleet.setup("laptop", &["push", "bucket", "main"]);
        // A bare repository refuses drops unless its admin allows them: this one does, so drops from the hub run too.
        fleet.setup("hub", &["config", "drop.allowed", "true"]);
        // Names make whereis and the printed state readable; `replica` also makes each id now.
        for store in &STORES[..5] {
            fleet.setup(store, &["replica", "--name", store]);
        }
        fleet
    }

    /// Runs operation `index` of a step to its end.
    fn run(&self, step: usize, index: usize, planned: &Planned) -> Outcome {
        let started = Instant::now();
        let commands: Vec<Vec<String>> = match &planned.action {
            Action::Commit { files } => {
                std::fs::create_dir_all(self.dir(planned.at).join(planned.at)).unwrap();
                for (path, len, seed) in files {
                    write_noise(&self.dir(planned.at).join(path), *len, *seed);
                }
                vec![
                    vec!["add".into(), planned.at.into()],
                    vec![
                        "commit".into(),
                        "-m".into(),
                        format!("{} at step {step}", planned.at),
                    ],
                ]
            }
            Action::Dmv(args) => vec![args.clone()],
            Action::Watch { files, runs } => return self.watch(step, index, planned, files, *runs),
            Action::RestartHub { down } => {
                let mut hub = self.hub.lock().unwrap();
                hub.kill();
                std::thread::sleep(*down);
                *hub =
                    HttpServer::start_with_env(&hub.config.clone(), self.hub_port, &CLAIMS_ALWAYS);
                self.hub_logs.lock().unwrap().push(hub.log.clone());
                return Outcome {
                    planned: planned.clone(),
                    ended: Ended::Fault,
                    took: started.elapsed(),
                    wrong: Vec::new(),
                };
            }
            Action::FreezeBucket { frozen } => {
                let minio = self.minio.lock().unwrap();
                let pid = minio_pid(minio.port).expect("MinIO's process");
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(*frozen);
                signal(pid, libc::SIGCONT);
                return Outcome {
                    planned: planned.clone(),
                    ended: Ended::Fault,
                    took: started.elapsed(),
                    wrong: Vec::new(),
                };
            }
            Action::RestartBucket { down } => {
                let mut minio = self.minio.lock().unwrap();
                minio.stop();
                std::thread::sleep(*down);
                minio.restart();
                return Outcome {
                    planned: planned.clone(),
                    ended: Ended::Fault,
                    took: started.elapsed(),
                    wrong: Vec::new(),
                };
            }
        };
        let logs = self.root.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let mut wrong = Vec::new();
        for (i, args) in commands.iter().enumerate() {
            // Output to files: a command killed or stuck cannot block on a full pipe.
            let out_path = logs.join(format!(
                "step{step:04}-{index}-{}-{}-{i}.out",
                planned.at, planned.kind
            ));
            let err_path = out_path.with_extension("err");
            let mut cmd = self.command(planned.at, args);
            cmd.stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
                .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
            let mut child = cmd.spawn().unwrap();
            let (status, killed) = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break (status, false);
                }
                let running = started.elapsed();
                if planned.kill_after.is_some_and(|k| running >= k) || running >= HUNG {
                    child.kill().unwrap();
                    break (child.wait().unwrap(), true);
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            let err = std::fs::read_to_string(&err_path).unwrap_or_default();
            if err.contains("panicked") {
                wrong.push(format!("`dmv {}` panicked: {err}", args.join(" ")));
            }
            if killed {
                if started.elapsed() >= HUNG {
                    wrong.push(format!(
                        "`dmv {}` still ran after {} s (killed)",
                        args.join(" "),
                        HUNG.as_secs()
                    ));
                }
                return Outcome {
                    planned: planned.clone(),
                    ended: Ended::Killed(args.join(" ")),
                    took: started.elapsed(),
                    wrong,
                };
            }
            if !status.success() {
                let code = status.code().unwrap_or(-1);
                // The error line, else what it said last ("nothing to commit", a conflict: exit 1, on stdout).
                let said = format!(
                    "{err}{}",
                    std::fs::read_to_string(&out_path).unwrap_or_default()
                );
                let last = err
                    .lines()
                    .find(|l| l.starts_with("dmv: "))
                    .or_else(|| said.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("")
                    .to_string();
                // A clean failure: exit 1 (nothing to commit, a conflict) or 128 with a "dmv: " line.
                let clean =
                    code == 1 || (code == 128 && err.lines().any(|l| l.starts_with("dmv: ")));
                if !clean {
                    wrong.push(format!(
                        "`dmv {}` failed uncleanly ({status}): {err}",
                        args.join(" ")
                    ));
                }
                return Outcome {
                    planned: planned.clone(),
                    ended: Ended::Failed(code, last),
                    took: started.elapsed(),
                    wrong,
                };
            }
        }
        Outcome {
            planned: planned.clone(),
            ended: Ended::Ok,
            took: started.elapsed(),
            wrong,
        }
    }

    /// Runs a watcher in `planned.at` while files are written there, then
    /// stops it with SIGTERM (it must exit 0) or kills it at the planned moment.
    fn watch(
        &self,
        step: usize,
        index: usize,
        planned: &Planned,
        files: &[(String, u64, u64)],
        runs: Duration,
    ) -> Outcome {
        let started = Instant::now();
        let logs = self.root.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let out_path = logs.join(format!("step{step:04}-{index}-{}-watch.out", planned.at));
        let err_path = out_path.with_extension("err");
        let args: Vec<String> = watch_args(planned.at)
            .iter()
            .map(|a| a.to_string())
            .collect();
        let mut cmd = self.command(planned.at, &args);
        cmd.stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
        let mut child = cmd.spawn().unwrap();
        let gap = runs / (files.len() as u32 + 1);
        let mut next_write = started + gap;
        let mut files = files.iter();
        let deadline = started + planned.kill_after.unwrap_or(runs);
        let exited = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            let now = Instant::now();
            if now >= deadline {
                break None;
            }
            if now >= next_write {
                if let Some((path, len, seed)) = files.next() {
                    std::fs::create_dir_all(self.dir(planned.at).join(planned.at)).unwrap();
                    write_noise(&self.dir(planned.at).join(path), *len, *seed);
                }
                next_write += gap;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut wrong = Vec::new();
        let said = |wrong: &mut Vec<String>| {
            let err = std::fs::read_to_string(&err_path).unwrap_or_default();
            if err.contains("panicked") {
                wrong.push(format!("`dmv {}` panicked: {err}", args.join(" ")));
            }
            err.lines()
                .find(|l| l.starts_with("dmv: "))
                .unwrap_or("")
                .to_string()
        };
        let ended = match exited {
            // A watcher ends only when told to: one that stopped by itself says why in one line.
            Some(status) => {
                let line = said(&mut wrong);
                if !(status.code() == Some(128) && line.contains("a watcher already runs")) {
                    wrong.push(format!(
                        "`dmv {}` exited by itself ({status}): {line}",
                        args.join(" ")
                    ));
                }
                Ended::Failed(status.code().unwrap_or(-1), line)
            }
            None if planned.kill_after.is_some() => {
                child.kill().unwrap();
                child.wait().unwrap();
                said(&mut wrong);
                Ended::Killed(args.join(" "))
            }
            None => {
                signal(child.id() as i32, libc::SIGTERM);
                let asked = Instant::now();
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    if asked.elapsed() >= HUNG {
                        child.kill().unwrap();
                        wrong.push(format!(
                            "`dmv {}` still ran {} s after SIGTERM (killed)",
                            args.join(" "),
                            HUNG.as_secs()
                        ));
                        break child.wait().unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                let line = said(&mut wrong);
                if !status.success() {
                    wrong.push(format!(
                        "`dmv {}` stopped by SIGTERM exited {status}: {line}",
                        args.join(" ")
                    ));
                }
                Ended::Ok
            }
        };
        Outcome {
            planned: planned.clone(),
            ended,
            took: started.elapsed(),
            wrong,
        }
    }

    /// Waits until nothing the step started still runs: every process
    /// naming a path of the fleet (dmv commands, their ssh clients, the
    /// `dmv serve --stdio` behind sshd) but the HTTP server has ended.
    /// Returns what is wrong: a server that died by itself, a panic in its
    /// log, a process that never ends.
    fn quiesce(&self) -> Vec<String> {
        let mut wrong = Vec::new();
        let server = {
            let mut hub = self.hub.lock().unwrap();
            if let Ok(Some(status)) = hub.child.try_wait() {
                wrong.push(format!(
                    "the HTTP server exited by itself ({status}): {}",
                    hub.log.lock().unwrap().join("\n")
                ));
                *hub =
                    HttpServer::start_with_env(&hub.config.clone(), self.hub_port, &CLAIMS_ALWAYS);
                self.hub_logs.lock().unwrap().push(hub.log.clone());
            }
            hub.child.id()
        };
        for log in self.hub_logs.lock().unwrap().iter() {
            let log = log.lock().unwrap();
            if let Some(i) = log.iter().position(|l| l.contains("panicked")) {
                wrong.push(format!("the HTTP server panicked: {}", log[i..].join("\n")));
            }
        }
        let waiting = Instant::now();
        loop {
            let left = processes_naming(&self.root, server);
            if left.is_empty() {
                break;
            }
            if waiting.elapsed() > Duration::from_secs(30) {
                wrong.push(format!(
                    "processes still running 30 s after their step: {left:?}"
                ));
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        wrong
    }
}

impl Fleet {
    /// A pull or sync that stopped at conflicts leaves its replica mid-merge,
    /// and every later pull and commit there refuses. Replicas merging each
    /// other's work through different remotes make criss-cross histories,
    /// which conflict even on files only one replica writes (dmv merges from
    /// one merge base, not recursively as Git does: `History::merge_base`).
    /// The fleet settles them as the owner would: its own folder `--ours`,
    /// the others' `--theirs`, then commits (or aborts if that fails).
    /// Returns what it ran, and what went wrong (a panic, an unclean error).
    fn settle_merges(&self, step: usize) -> (Vec<String>, Vec<String>) {
        let (mut said, mut wrong) = (Vec::new(), Vec::new());
        for spec in &REPLICAS {
            if !self.dir(spec.name).join(".dmv/MERGE_STATE").exists() {
                continue;
            }
            let mut ran = Vec::new();
            for other in &REPLICAS {
                let side = if other.name == spec.name {
                    "--ours"
                } else {
                    "--theirs"
                };
                // A folder without conflicts is refused in one line: nothing to settle there.
                ran.push(
                    self.settle(spec.name, &["resolve", side, other.name], &mut wrong)
                        .0,
                );
            }
            let (line, committed) = self.settle(
                spec.name,
                &[
                    "commit",
                    "-m",
                    &format!("{} settles a merge at step {step}", spec.name),
                ],
                &mut wrong,
            );
            ran.push(line);
            if !committed {
                ran.push(self.settle(spec.name, &["merge", "--abort"], &mut wrong).0);
            }
            said.push(format!("{}$ {}", spec.name, ran.join("; ")));
        }
        (said, wrong)
    }

    fn settle(&self, at: &str, args: &[&str], wrong: &mut Vec<String>) -> (String, bool) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let out = self.command(at, &args).output().unwrap();
        let err = stderr(&out);
        if err.contains("panicked")
            || !(out.status.success() || matches!(out.status.code(), Some(1 | 128)))
        {
            wrong.push(format!(
                "{at}$ dmv {} failed uncleanly ({}): {err}",
                args.join(" "),
                out.status
            ));
        }
        let how = if out.status.success() {
            "ok".to_string()
        } else {
            err.lines().last().unwrap_or("").to_string()
        };
        (
            format!("dmv {} → {how}", args.join(" ")),
            out.status.success(),
        )
    }
}

/// How the fleet's watchers run: committing 0.3 s after the last change,
/// syncing after each commit and every second; the phone frees what it sent
/// once two other copies are confirmed (the camera card's flow).
fn watch_args(at: &str) -> Vec<&'static str> {
    let mut args = vec!["watch", "--quiet", "0.3", "--sync", "--sync-every", "1"];
    if at == "phone" {
        args.extend(["--drop-after-push", "--numcopies", "2"]);
    }
    args
}

/// The processes whose command line names a path under `root`, but `except`.
fn processes_naming(root: &Path, except: u32) -> Vec<String> {
    let root = root.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == except || pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&root) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// MinIO's process (the helper keeps its child to itself), by its address.
fn minio_pid(port: u16) -> Option<i32> {
    let address = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
            let cmdline =
                String::from_utf8_lossy(&std::fs::read(entry.path().join("cmdline")).ok()?)
                    .replace('\0', " ");
            (cmdline.contains("minio")
                && cmdline.contains(" server ")
                && cmdline.contains(&address))
            .then_some(pid)
        })
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid we found and a standard signal.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

// ---------------------------------------------------------------------------
// The state of the stores, read from the stores themselves
// ---------------------------------------------------------------------------

/// One store as the check found it.
struct StoreState {
    name: &'static str,
    replica: ReplicaId,
    /// The history versions whose data it holds whole.
    holds: HashSet<ObjectId>,
    /// Its config says it may lack data (always so for the phone and the tablet).
    partial: bool,
}

/// What the stores really hold and what the logs say, at one moment.
struct State {
    /// When the stores were read (nanoseconds since the epoch, as log stamps).
    read_ns: u64,
    /// Every file version in any store's history: a path it had and its length.
    versions: BTreeMap<ObjectId, (String, u64)>,
    stores: Vec<StoreState>,
    /// Every location log: where it is kept, and its records.
    logs: Vec<(String, LocationLog)>,
    /// What could not be read: damaged data, a ref to a commit no store has.
    problems: Vec<String>,
}

/// The whole content of a version from a local store, checked: Ok(false)
/// when some of it is not there.
fn dir_holds(repo: &Repository, id: &ObjectId, len: u64) -> Result<bool, String> {
    match repo.store.write_content(id, &mut std::io::sink()) {
        Ok(n) if n == len => Ok(true),
        Ok(n) => Err(format!("{n} bytes where the tree says {len}")),
        Err(StoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Per version: whether the bucket holds it whole. Its file nodes are read
/// from the bucket level by level (each checked against its id), every
/// chunk located in its published indexes, and with `read_chunks` read and
/// checked too. Answers "not there" only from `has`.
fn bucket_holds(
    remote: &mut dyn Remote,
    versions: &[ObjectId],
    read_chunks: bool,
) -> Result<Vec<bool>, String> {
    let mut whole = vec![true; versions.len()];
    // The objects to look at next, each with the versions it is part of.
    let mut level: HashMap<ObjectId, Vec<usize>> = HashMap::new();
    for (i, id) in versions.iter().enumerate() {
        level.entry(*id).or_default().push(i);
    }
    while !level.is_empty() {
        let ids: Vec<ObjectId> = level.keys().copied().collect();
        let there = remote.has(&ids).map_err(|e| e.to_string())?;
        let mut present = Vec::new();
        for (id, there) in ids.iter().zip(there) {
            match there {
                true => present.push(*id),
                false => level[id].iter().for_each(|v| whole[*v] = false),
            }
        }
        let mut next: HashMap<ObjectId, Vec<usize>> = HashMap::new();
        let mut damaged = Vec::new();
        remote
            .get(&present, read_chunks, &mut |received| {
                let Received::Object(obj) = received else {
                    return Ok(());
                };
                let content = match obj.content() {
                    Ok(c) => c,
                    Err(e) => {
                        damaged.push(format!("bucket object {}: {e}", obj.id));
                        return Ok(());
                    }
                };
                if obj.kind == ObjectKind::FileNode {
                    let node: FileNode = decode(&obj.id, obj.kind, &content)?;
                    for e in node.entries {
                        next.entry(e.id).or_default().extend(&level[&obj.id]);
                    }
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        if !damaged.is_empty() {
            return Err(damaged.join("; "));
        }
        level = next;
    }
    Ok(whole)
}

/// Opens a bucket afresh, in this process: a new mirror of its indexes in
/// `mirror`, nothing cached.
fn open_bucket(url: &str, endpoint: &str, mirror: &Path) -> Result<Box<dyn Remote>, String> {
    use_minio_credentials();
    let mut spec = RemoteSpec::parse(url).map_err(|e| e.to_string())?;
    spec.bucket.endpoint = Some(endpoint.to_string());
    spec.cache_dir = Some(mirror.to_path_buf());
    spec.connect().map_err(|e| e.to_string())
}

/// Opening a bucket in this process needs MinIO's credentials in its
/// environment: set once, the same for every test (none reads them but
/// through `std::env`, which serializes access).
fn use_minio_credentials() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        std::env::set_var("AWS_ACCESS_KEY_ID", MINIO_USER);
        std::env::set_var("AWS_SECRET_ACCESS_KEY", MINIO_SECRET);
        std::env::set_var("AWS_REGION", "us-east-1");
        for v in [
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT",
            "AWS_S3_ENDPOINT",
        ] {
            std::env::remove_var(v);
        }
    });
}

/// Adds the file versions of `tree` (and its subtrees not seen yet) to `versions`.
fn tree_versions(
    repo: &Repository,
    tree: &ObjectId,
    prefix: &str,
    trees: &mut HashSet<ObjectId>,
    versions: &mut BTreeMap<ObjectId, (String, u64)>,
) -> Result<(), String> {
    if !trees.insert(*tree) {
        return Ok(());
    }
    for e in dmv_repo::tree::read_dir(&repo.store, tree).map_err(|e| e.to_string())? {
        let path = format!("{prefix}{}", String::from_utf8_lossy(&e.name));
        if e.kind == dmv_repo::store::object::EntryKind::Dir {
            tree_versions(repo, &e.id, &format!("{path}/"), trees, versions)?;
        } else if e.kind.is_file() {
            versions.entry(e.id).or_insert((path, e.size));
        }
    }
    Ok(())
}

impl Fleet {
    /// Reads the stores, checks them, then runs `dmv whereis --json` in
    /// `whereis_at` and checks what it says. Returns what it read, found, and
    /// what whereis printed.
    fn check(
        &self,
        whereis_at: &str,
        read_chunks: bool,
    ) -> (State, Findings, std::process::Output) {
        let state = self.state(read_chunks);
        let mut found = state.check();
        let whereis = self
            .command(whereis_at, &["whereis".into(), "--json".into()])
            .output()
            .unwrap();
        if whereis.status.success() {
            state.check_whereis(
                whereis_at,
                &String::from_utf8_lossy(&whereis.stdout),
                &mut found,
            );
        } else if stderr(&whereis).contains("panicked") || whereis.status.code() != Some(128) {
            found.violations.push(format!(
                "{whereis_at}$ dmv whereis --json failed uncleanly: {}",
                stderr(&whereis)
            ));
        }
        (state, found, whereis)
    }

    /// Reads every store. `read_chunks`: read and check every chunk in the
    /// bucket too (local stores are always read whole). What cannot be read
    /// is a problem (a violation), and that store is taken to hold nothing.
    fn state(&self, read_chunks: bool) -> State {
        let read_ns = dmv_repo::now_ns();
        let mut problems = Vec::new();
        let mut repos: Vec<(&'static str, Repository)> = Vec::new();
        for name in &STORES[..5] {
            match Repository::open(&self.dir(name)) {
                Ok(repo) => repos.push((name, repo)),
                Err(e) => problems.push(format!("{name} cannot be opened: {e}")),
            }
        }
        let mirror = tempfile::tempdir().unwrap();
        let mut bucket = open_bucket(&bucket_url(), &self.endpoint, mirror.path())
            .map_err(|e| problems.push(format!("the bucket cannot be opened: {e}")))
            .ok();

        // Every tip of every store: its refs and HEAD.
        let mut tips: Vec<(String, ObjectId)> = Vec::new();
        for (name, repo) in &repos {
            match repo.refs.list("") {
                Ok(refs) => {
                    tips.extend(refs.into_iter().map(|(r, id)| (format!("{name} {r}"), id)))
                }
                Err(e) => problems.push(format!("{name}'s refs cannot be read: {e}")),
            }
            match repo.head_commit() {
                Ok(head) => tips.extend(head.map(|id| (format!("{name} HEAD"), id))),
                Err(e) => problems.push(format!("{name}'s HEAD cannot be read: {e}")),
            }
        }
        match bucket.as_mut().map(|b| b.list_refs()) {
            Some(Ok(refs)) => tips.extend(
                refs.refs
                    .into_iter()
                    .map(|(r, id)| (format!("bucket {r}"), id)),
            ),
            Some(Err(e)) => problems.push(format!("the bucket's refs cannot be read: {e}")),
            None => {}
        }
        // Their history, each commit read from whichever store has it.
        let (mut commits, mut trees) = (HashSet::new(), HashSet::new());
        let mut versions = BTreeMap::new();
        let mut stack: Vec<(String, ObjectId)> = tips;
        while let Some((from, id)) = stack.pop() {
            if !commits.insert(id) {
                continue;
            }
            let Some((repo, commit)) = repos
                .iter()
                .find_map(|(_, r)| r.commit(&id).ok().map(|c| (r, c)))
            else {
                problems.push(format!(
                    "commit {} (reached from {from}) is in no store",
                    id.to_hex()
                ));
                continue;
            };
            if let Err(e) = tree_versions(repo, &commit.tree, "", &mut trees, &mut versions) {
                problems.push(format!(
                    "the tree of commit {} cannot be read: {e}",
                    id.to_hex()
                ));
            }
            stack.extend(commit.parents.into_iter().map(|p| (from.clone(), p)));
        }

        let mut stores = Vec::new();
        let mut logs = Vec::new();
        for (name, repo) in &repos {
            let mut holds = HashSet::new();
            for (id, (path, len)) in &versions {
                match dir_holds(repo, id, *len) {
                    Ok(true) => {
                        holds.insert(*id);
                    }
                    Ok(false) => {}
                    Err(e) => problems.push(format!(
                        "{name}'s data of {path} ({}) is damaged: {e}",
                        short(id)
                    )),
                }
            }
            let replica = repo.copies().replica_id().unwrap_or_else(|e| {
                problems.push(format!("{name}'s replica id cannot be read: {e}"));
                ReplicaId([0; 16])
            });
            stores.push(StoreState {
                name,
                replica,
                holds,
                partial: repo.config.partial,
            });
            match repo.copies().load_locations() {
                Ok(log) => logs.push((name.to_string(), log)),
                Err(e) => problems.push(format!("{name}'s location log cannot be read: {e}")),
            }
        }
        let Some(mut bucket) = bucket else {
            return State {
                read_ns,
                versions,
                stores,
                logs,
                problems,
            };
        };
        let ids: Vec<ObjectId> = versions.keys().copied().collect();
        let holds = match bucket_holds(bucket.as_mut(), &ids, read_chunks) {
            Ok(whole) => ids
                .iter()
                .zip(whole)
                .filter(|(_, w)| *w)
                .map(|(id, _)| *id)
                .collect(),
            Err(e) => {
                problems.push(format!("the bucket's data cannot be read whole: {e}"));
                HashSet::new()
            }
        };
        let replica = bucket.replica().map(|(id, _)| id).unwrap_or_else(|e| {
            problems.push(format!("the bucket's replica id cannot be read: {e}"));
            ReplicaId([0; 16])
        });
        stores.push(StoreState {
            name: "bucket",
            replica,
            holds,
            partial: true,
        });
        // The bucket keeps one log per replica that wrote there.
        let mut pages = Vec::new();
        let read = bucket.get_locations(&mut |records, _names| {
            let mut log = LocationLog::default();
            records.for_each(|r| log.record(r.key, r.replica, r.stamp));
            pages.push(log);
            Ok(())
        });
        if let Err(e) = read {
            problems.push(format!("the bucket's location logs cannot be read: {e}"));
        }
        let count = pages.len();
        logs.extend(
            pages
                .into_iter()
                .enumerate()
                .map(|(i, log)| (format!("bucket (log {} of {count})", i + 1), log)),
        );
        State {
            read_ns,
            versions,
            stores,
            logs,
            problems,
        }
    }
}

fn short(id: &ObjectId) -> String {
    id.to_hex()[..12].to_string()
}

// ---------------------------------------------------------------------------
// The invariant
// ---------------------------------------------------------------------------

/// What the check found wrong, and the figures it counts.
#[derive(Default)]
struct Findings {
    /// Violations: each one line.
    violations: Vec<String>,
    copies_lost: usize,
    false_claims: usize,
    stale_claims: usize,
    /// Versions with fewer than two real copies (drops with `--numcopies 1` allow that).
    under_two_copies: usize,
    /// Versions a store's own log says it dropped (its newest word) that its store holds.
    dropped_yet_held: usize,
    whereis_claims: usize,
}

impl State {
    fn store_of(&self, replica: &ReplicaId) -> Option<&StoreState> {
        self.stores.iter().find(|s| s.replica == *replica)
    }

    fn name_of(&self, replica: &ReplicaId) -> String {
        self.store_of(replica).map_or_else(
            || format!("unknown replica {replica}"),
            |s| s.name.to_string(),
        )
    }

    fn holds(&self, store: &str, id: &ObjectId) -> bool {
        self.stores
            .iter()
            .any(|s| s.name == store && s.holds.contains(id))
    }

    /// Per repository: the versions it dropped (its own log's newest word on
    /// them is "does not hold") and does not hold.
    fn dropped(&self) -> Vec<(&'static str, HashSet<ObjectId>)> {
        let own_log = |name: &str| {
            self.logs
                .iter()
                .find(|(kept_in, _)| kept_in == name)
                .map(|(_, log)| log)
        };
        self.stores
            .iter()
            .filter_map(|st| {
                let log = own_log(st.name)?;
                let gone = self.versions.keys().filter(|id| {
                    log.records
                        .get(&(**id, st.replica))
                        .is_some_and(|s| !s.present)
                        && !st.holds.contains(id)
                });
                Some((st.name, gone.copied().collect()))
            })
            .collect()
    }

    /// Per (version, replica): the newest "does not hold" any log has.
    fn newest_absent(&self) -> HashMap<(ObjectId, ReplicaId), u64> {
        let mut newest: HashMap<(ObjectId, ReplicaId), u64> = HashMap::new();
        for (_, log) in &self.logs {
            for (&key, stamp) in log.records.iter().filter(|(_, s)| !s.present) {
                let t = newest.entry(key).or_default();
                *t = (*t).max(stamp.time_ns);
            }
        }
        newest
    }

    /// A claim that `replica` holds `id`, made at `time_ns` (None: live,
    /// just now): None when true, else whether it is stale (at equal times
    /// "does not" wins, as in the logs' merges).
    fn judge(
        &self,
        id: &ObjectId,
        replica: &ReplicaId,
        time_ns: Option<u64>,
        absent: &HashMap<(ObjectId, ReplicaId), u64>,
    ) -> Option<bool> {
        if self.store_of(replica).is_some_and(|s| s.holds.contains(id)) {
            return None;
        }
        Some(time_ns.is_some_and(|t| absent.get(&(*id, *replica)).is_some_and(|gone| *gone >= t)))
    }

    fn check(&self) -> Findings {
        let mut found = Findings::default();
        for p in &self.problems {
            found.violations.push(format!("unreadable: {p}"));
        }
        for (id, (path, _)) in &self.versions {
            let copies = self.stores.iter().filter(|s| s.holds.contains(id)).count();
            if copies == 0 {
                found.copies_lost += 1;
                found.violations.push(format!(
                    "lost: {path} ({}) has no copy in any store",
                    short(id)
                ));
            }
            if copies < 2 {
                found.under_two_copies += 1;
            }
        }
        let absent = self.newest_absent();
        for (kept_in, log) in &self.logs {
            for ((id, replica), stamp) in &log.records {
                let Some((path, _)) = self.versions.get(id) else {
                    continue;
                };
                if !stamp.present {
                    let own = self
                        .store_of(replica)
                        .is_some_and(|s| s.name == kept_in.as_str());
                    if own && self.store_of(replica).is_some_and(|s| s.holds.contains(id)) {
                        found.dropped_yet_held += 1;
                    }
                    continue;
                }
                match self.judge(id, replica, Some(stamp.time_ns), &absent) {
                    None => {}
                    Some(true) => found.stale_claims += 1,
                    Some(false) => {
                        found.false_claims += 1;
                        found.violations.push(format!(
                            "false claim: {kept_in}'s log says {} holds {path} ({}), recorded {} ms before this check, and no log says it went",
                            self.name_of(replica),
                            short(id),
                            self.read_ns.saturating_sub(stamp.time_ns) / 1_000_000
                        ));
                    }
                }
            }
        }
        found
    }

    /// Checks what `dmv whereis --json` printed in `at` (HEAD's files): a
    /// copy it names is a claim, live (`reachable`) or from the log.
    fn check_whereis(&self, at: &str, printed: &str, found: &mut Findings) {
        let files: serde_json::Value = match serde_json::from_str(printed) {
            Ok(v) => v,
            Err(e) => {
                return found.violations.push(format!(
                    "{at}$ dmv whereis --json printed no JSON ({e}): {printed}"
                ))
            }
        };
        let absent = self.newest_absent();
        for file in files.as_array().into_iter().flatten() {
            let (path, id) = (
                file["path"].as_str().unwrap_or("?"),
                ObjectId::from_hex(file["id"].as_str().unwrap_or("")).expect("a content id"),
            );
            for copy in file["copies"].as_array().into_iter().flatten() {
                found.whereis_claims += 1;
                let replica =
                    ReplicaId::parse(copy["replica"].as_str().unwrap_or("")).expect("a replica id");
                let live = copy["reachable"] == true;
                // A live answer is a claim of now; one from the log is as old as the record in this replica's log
                // (read before whereis ran, which may have merged in others' logs: then any "gone" makes it stale).
                let recorded = self
                    .logs
                    .iter()
                    .find(|(kept_in, _)| kept_in == at)
                    .and_then(|(_, log)| log.records.get(&(id, replica)));
                let made = if live {
                    None
                } else {
                    Some(recorded.filter(|s| s.present).map_or(0, |s| s.time_ns))
                };
                match self.judge(&id, &replica, made, &absent) {
                    None => {}
                    Some(true) => found.stale_claims += 1,
                    Some(false) => {
                        found.false_claims += 1;
                        let how = if copy["here"] == true {
                            "here"
                        } else if live {
                            "live"
                        } else {
                            "from the log"
                        };
                        found.violations.push(format!(
                            "false claim: {at}$ dmv whereis says {} holds {path} ({}), {how}",
                            self.name_of(&replica),
                            short(&id)
                        ));
                    }
                }
            }
        }
    }

    /// Which store holds which version, and what each log says of it.
    fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "versions (H: the store holds its data whole):");
        let _ = writeln!(
            s,
            "  {:<12}  {:<16} {:>7}  {}",
            "id",
            "path",
            "bytes",
            self.stores
                .iter()
                .map(|st| st.name)
                .collect::<Vec<_>>()
                .join(" ")
        );
        for (id, (path, len)) in &self.versions {
            let row: Vec<String> = self
                .stores
                .iter()
                .map(|st| {
                    format!(
                        "{:^w$}",
                        if st.holds.contains(id) { "H" } else { "-" },
                        w = st.name.len()
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "  {}  {:<16} {:>7}  {}",
                short(id),
                path,
                len,
                row.join(" ")
            );
        }
        let _ = writeln!(
            s,
            "partial stores: {:?}",
            self.stores
                .iter()
                .filter(|st| st.partial)
                .map(|st| st.name)
                .collect::<Vec<_>>()
        );
        let _ = writeln!(
            s,
            "location logs (REPLICA+ holds, REPLICA- does not, @ms since the first record):"
        );
        let first = self
            .logs
            .iter()
            .flat_map(|(_, l)| l.records.values().map(|s| s.time_ns))
            .min()
            .unwrap_or(0);
        for (kept_in, log) in &self.logs {
            let _ = writeln!(s, "  {kept_in}:");
            let mut by_version: BTreeMap<ObjectId, Vec<String>> = BTreeMap::new();
            for ((id, replica), stamp) in &log.records {
                let sign = if stamp.present { "+" } else { "-" };
                by_version.entry(*id).or_default().push(format!(
                    "{}{sign}@{}",
                    self.name_of(replica),
                    (stamp.time_ns - first) / 1_000_000
                ));
            }
            for (id, said) in by_version {
                let path = self
                    .versions
                    .get(&id)
                    .map_or("(not in history)", |(p, _)| p.as_str());
                let _ = writeln!(s, "    {} {:<16} {}", short(&id), path, said.join(" "));
            }
        }
        for p in &self.problems {
            let _ = writeln!(s, "problem: {p}");
        }
        s
    }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

/// Counts per kind of operation.
#[derive(Default, serde::Serialize)]
struct Counts {
    ok: usize,
    failed: usize,
    killed: usize,
}

/// What the run did and found, for the figures.
#[derive(Default)]
struct Tally {
    by_kind: BTreeMap<&'static str, Counts>,
    /// Failures by kind and message (numbers masked): the refusals one expects, and any other.
    refusals: BTreeMap<String, usize>,
    operations: usize,
    kills: usize,
    /// Steps that ran two drops or more at once.
    concurrent_drops: usize,
    merges_settled: usize,
    /// Versions checked, summed over the checks.
    version_checks: usize,
    versions: usize,
    whereis_claims: usize,
    stale_claims: usize,
    most_stale_at_once: usize,
    /// Violations summed over the run (the run stops at the first step that has any).
    copies_lost: usize,
    false_claims: usize,
    /// The last check's.
    under_two_copies: usize,
    dropped_yet_held: usize,
    /// Versions a replica dropped that came back in a step where it fetched
    /// nothing by `get` and nobody pushed to it (a pull or sync brought them):
    /// not a violation (a copy more), but a drop that undid itself.
    drops_undone: Vec<String>,
    /// Violations that were gone when looked at again 2 s later (reported, not failed).
    transient: Vec<String>,
    partial: Vec<&'static str>,
}

impl Tally {
    fn count(&mut self, o: &Outcome) {
        self.operations += 1;
        let c = self.by_kind.entry(o.planned.kind).or_default();
        match &o.ended {
            Ended::Ok | Ended::Fault => c.ok += 1,
            Ended::Failed(_, line) => {
                c.failed += 1;
                let masked: String = line
                    .chars()
                    .map(|ch| if ch.is_ascii_digit() { '#' } else { ch })
                    .collect();
                *self
                    .refusals
                    .entry(format!("{}: {masked}", o.planned.kind))
                    .or_default() += 1;
            }
            Ended::Killed(_) => {
                c.killed += 1;
                self.kills += 1;
            }
        }
    }

    fn checked(&mut self, state: &State, found: &Findings) {
        self.version_checks += state.versions.len();
        self.versions = state.versions.len();
        self.whereis_claims += found.whereis_claims;
        self.stale_claims += found.stale_claims;
        self.most_stale_at_once = self.most_stale_at_once.max(found.stale_claims);
        self.copies_lost += found.copies_lost;
        self.false_claims += found.false_claims;
        self.under_two_copies = found.under_two_copies;
        self.dropped_yet_held = found.dropped_yet_held;
        // Which stores say they may lack data (the bucket always may).
        self.partial = state
            .stores
            .iter()
            .filter(|s| s.partial && s.name != "bucket")
            .map(|s| s.name)
            .collect();
    }

    /// Writes `fleet.json` for scripts/faults.
    fn report(&self, seed: u64, steps: usize, seconds: f64, violations: &[String]) {
        let done = |kind: &str| self.by_kind.get(kind).map_or(0, |c| c.ok);
        fault_report(
            "fleet",
            json!({
                "seed": seed,
                "steps": steps,
                "seconds": seconds.round(),
                "operations": self.operations,
                "operations_by_kind": self.by_kind,
                "operations_per_second": (self.operations as f64 / seconds * 100.0).round() / 100.0,
                "concurrent_drops": self.concurrent_drops,
                "kills": self.kills,
                "hub_restarts": done("restart-hub"),
                "bucket_freezes": done("freeze-bucket"),
                "bucket_restarts": done("restart-bucket"),
                "merges_settled": self.merges_settled,
                "versions": self.versions,
                "version_checks": self.version_checks,
                "copies_lost": self.copies_lost,
                "false_location_claims": self.false_claims,
                "violations": violations,
                "stale_location_claims": self.stale_claims,
                "most_stale_claims_at_once": self.most_stale_at_once,
                "whereis_claims_checked": self.whereis_claims,
                "versions_under_two_copies": self.under_two_copies,
                "dropped_yet_held": self.dropped_yet_held,
                "drops_undone": self.drops_undone.len(),
                "transient_violations": self.transient,
                "partial_stores": self.partial,
            }),
        );
    }
}

fn steps_from_env() -> usize {
    match std::env::var("DMV_FLEET_STEPS")
        .ok()
        .filter(|v| !v.is_empty())
    {
        None => CI_STEPS,
        Some(v) if v == "full" => FULL_STEPS,
        Some(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("DMV_FLEET_STEPS is a number or \"full\", not {v:?}")),
    }
}

#[test]
fn a_fleet_under_random_operations_and_faults_keeps_every_version_and_claims_no_false_copy() {
    if lacks(&[Need::Sshd, Need::Minio]) {
        return;
    }
    let seed: u64 = std::env::var("DMV_FLEET_SEED")
        .ok()
        .filter(|v| !v.is_empty())
        .map_or(DEFAULT_SEED, |v| {
            v.parse().expect("DMV_FLEET_SEED is a number")
        });
    let steps = steps_from_env();
    eprintln!("fleet: DMV_FLEET_SEED={seed} DMV_FLEET_STEPS={steps}");
    use_minio_credentials();
    let dir = tempfile::tempdir().unwrap();
    let fleet = Fleet::start(dir.path().to_path_buf());
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut history: Vec<String> = Vec::new();
    // What each replica had dropped at the last check, to see drops undo themselves.
    let mut dropped: Vec<(&'static str, HashSet<ObjectId>)> = Vec::new();

    // The round after the last step runs nothing: it checks once more, reading every chunk in the bucket too.
    for step in 1..=steps + 1 {
        let last_round = step > steps;
        let planned = if last_round {
            Vec::new()
        } else {
            plan_step(&mut rng)
        };
        let whereis_at = rng.pick(&REPLICAS).name;
        if planned
            .iter()
            .filter(|p| p.kind.starts_with("drop"))
            .count()
            >= 2
        {
            tally.concurrent_drops += 1;
        }
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let fleet = &fleet;
            let running: Vec<_> = planned
                .iter()
                .enumerate()
                .map(|(i, p)| s.spawn(move || fleet.run(step, i, p)))
                .collect();
            running.into_iter().map(|h| h.join().unwrap()).collect()
        });
        outcomes.iter().for_each(|o| tally.count(o));
        let mut wrong: Vec<String> = outcomes
            .iter()
            .flat_map(|o| o.wrong.iter().cloned())
            .collect();
        let mut said: Vec<String> = outcomes.iter().map(|o| o.to_string()).collect();
        wrong.extend(fleet.quiesce());
        let (settled, unclean) = fleet.settle_merges(step);
        tally.merges_settled += settled.len();
        wrong.extend(unclean);
        said.extend(settled.into_iter().map(|s| format!("then {s}")));
        if !last_round {
            eprintln!("step {step}: {}", said.join(" | "));
        }

        let (mut state, mut found, mut whereis) = fleet.check(whereis_at, last_round);
        if !found.violations.is_empty() {
            // The HTTP server may still be finishing a request whose client was killed: look again once all is quiet.
            std::thread::sleep(Duration::from_secs(2));
            wrong.extend(fleet.quiesce());
            let first = std::mem::take(&mut found.violations);
            (state, found, whereis) = fleet.check(whereis_at, last_round);
            if found.violations.is_empty() {
                eprintln!(
                    "step {step}: gone when looked at again 2 s later: {}",
                    first.join("; ")
                );
                tally
                    .transient
                    .push(format!("step {step}: {}", first.join("; ")));
            }
        }
        found.violations.splice(0..0, wrong);
        tally.checked(&state, &found);
        // Not the hub: a push of a commit whose tree keeps a version it dropped sends that version again, as it must.
        for (store, gone) in dropped.iter().filter(|(store, _)| *store != "hub") {
            // A get fetches dropped data on purpose; a push to the laptop sends what it lacks (even one refused at the end).
            let fetched = planned
                .iter()
                .any(|p| (p.at == *store && p.kind == "get") || p.sends_to().contains(store));
            for id in gone.iter().filter(|id| !fetched && state.holds(store, id)) {
                let path = state.versions.get(id).map_or("?", |(p, _)| p.as_str());
                tally.drops_undone.push(format!(
                    "{store} dropped {path} ({}) before step {step} and holds it after: {}",
                    short(id),
                    said.join(" | ")
                ));
            }
        }
        dropped = state.dropped();

        if !found.violations.is_empty() {
            tally.report(
                seed,
                step,
                started.elapsed().as_secs_f64(),
                &found.violations,
            );
            let kept = dir.keep();
            let mut report = format!(
                "REPLICA INVARIANT VIOLATED: DMV_FLEET_SEED={seed}, step {step} of {steps}\n"
            );
            let _ = writeln!(report, "\nviolations:\n  {}", found.violations.join("\n  "));
            let _ = writeln!(
                report,
                "\nthe operations of step {step}, run at once:\n  {}",
                said.join("\n  ")
            );
            let _ = writeln!(
                report,
                "\ndmv whereis --json in {whereis_at} after the step: {}",
                String::from_utf8_lossy(&whereis.stdout)
                    .split_whitespace()
                    .collect::<String>()
            );
            let _ = writeln!(
                report,
                "\nthe state after step {step}:\n{}",
                state.describe()
            );
            let _ = writeln!(report, "earlier steps:\n  {}", history.join("\n  "));
            let _ = writeln!(
                report,
                "\nthe fleet is kept in {} (each command's output in logs/)",
                kept.display()
            );
            std::fs::write(kept.join("violation.txt"), &report).unwrap();
            eprintln!("{report}");
            panic!(
                "the replica invariant failed at step {step} with DMV_FLEET_SEED={seed}: {}",
                found.violations[0]
            );
        }
        history.push(format!("step {step}: {}", said.join(" | ")));
    }

    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "fleet: {steps} steps, {} operations in {seconds:.0} s, {} kills, {} versions at the end",
        tally.operations, tally.kills, tally.versions
    );
    eprintln!(
        "fleet: {} stale claims seen, {} versions under two copies, {} merges settled",
        tally.stale_claims, tally.under_two_copies, tally.merges_settled
    );
    // The watchers did their work, not only ran: read from their own logs.
    let watched = |needle: &str| -> usize {
        ["desk", "phone"]
            .iter()
            .map(|at| {
                std::fs::read_to_string(fleet.dir(at).join(".dmv/watch.log"))
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.contains(needle))
                    .count()
            })
            .sum()
    };
    let (commits, sends, frees, kept_both) = (
        watched(" committed "),
        watched(" sent to "),
        watched(" freed "),
        watched("both versions kept"),
    );
    eprintln!("fleet: watchers committed {commits} times, sent {sends} times, freed files {frees} times, kept both versions {kept_both} times");
    if tally.by_kind.get("watch").is_some_and(|c| c.ok >= 3) {
        assert!(
            commits > 0 && sends > 0,
            "the watchers ran to their end but committed {commits} times and sent {sends} times"
        );
    }
    for undone in &tally.drops_undone {
        eprintln!("fleet: a drop undid itself: {undone}");
    }
    eprintln!(
        "fleet: failures seen (each expected: refusals, unreachable servers, killed commands):"
    );
    for (line, n) in &tally.refusals {
        eprintln!("  {n:>4}  {line}");
    }
    tally.report(seed, steps, seconds, &[]);
}

/// The fleet's first find, pinned (`DMV_FLEET_SEED=3`, step 25: `laptop$
/// dmv drop --numcopies 1 laptop/f0.raw` beside `laptop$ dmv push origin
/// main`). A push that began while this replica held a file, and ended after
/// a drop here freed it, recorded "this replica holds it" after the drop had
/// recorded "it does not": the newer record wins in every log it reaches,
/// and the copy it claims does not exist.
#[test]
fn a_push_that_ends_after_a_drop_here_does_not_claim_the_dropped_copy() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let laptop = t.join("laptop");
    std::fs::create_dir(&laptop).unwrap();
    dmv(&laptop, &["init"]);
    write_noise(&laptop.join("f.raw"), 40_000, 7);
    dmv(&laptop, &["add", "f.raw"]);
    dmv(&laptop, &["commit", "-m", "f"]);
    for hub in ["hub", "backup"] {
        dmv(t, &["init", "--bare", hub]);
        dmv(
            &laptop,
            &["remote", "add", hub, t.join(hub).to_str().unwrap()],
        );
    }
    dmv(&laptop, &["push", "backup", "main"]);
    // The push to the hub stops once its objects are uploaded; the drop (confirmed by backup) runs then.
    let mut push = dmv_cmd(&laptop);
    push.args(["push", "hub", "main"]);
    let paused = Paused::start(push, "push-uploaded");
    dmv(&laptop, &["drop", "--numcopies", "1", "f.raw"]);
    let pushed = paused.resume();
    assert!(pushed.status.success(), "{}", stderr(&pushed));

    let repo = Repository::open(&laptop).unwrap();
    let id = dmv_repo::tree::lookup(&repo.store, &repo.head_tree().unwrap().unwrap(), b"f.raw")
        .unwrap()
        .unwrap()
        .id;
    assert!(
        !repo.copies().has_data(&id).unwrap(),
        "the drop freed f.raw here"
    );
    let me = repo.copies().replica_id().unwrap();
    for dir in [&laptop, &t.join("hub")] {
        let log = Repository::open(dir)
            .unwrap()
            .copies()
            .load_locations()
            .unwrap();
        assert!(
            !log.holders(&id).iter().any(|(r, _)| *r == me),
            "{}'s log says the laptop holds f.raw, which it dropped: {:?}",
            dir.display(),
            log.records
        );
    }
}

/// The fleet's second find, pinned (`DMV_FLEET_SEED=19`, step 180:
/// `laptop$ dmv drop --numcopies 1 --from bucket laptop/f5.raw`, killed
/// after 144 ms). A drop from a bucket that stopped part way (killed, or
/// failed: MinIO restarting) had removed the file from the bucket but not
/// yet recorded it: the dropper records "the bucket does not hold it" only
/// once the bucket's drop returns, and nothing runs in a bucket to record it
/// there. Every log still said the bucket held it.
#[test]
fn a_drop_from_a_bucket_cut_short_leaves_no_claim_of_the_copy_it_removed() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("cut");
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    write_noise(&src.join("f.raw"), 200_000, 11);
    dmv(&src, &["add", "f.raw"]);
    dmv(&src, &["commit", "-m", "f"]);
    dmv(
        &src,
        &[
            "remote",
            "add",
            "bucket",
            "s3://cut/r",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let with_minio = |args: &[&str], failpoint: Option<&str>| {
        let mut cmd = dmv_cmd(&src);
        cmd.args(args);
        minio.env(&mut cmd);
        if let Some(point) = failpoint {
            cmd.env("DMV_FAILPOINT", point);
        }
        cmd.output().unwrap()
    };
    assert!(with_minio(&["push", "bucket", "main"], None)
        .status
        .success());
    // Stopped after it removed the first of the bucket's packs.
    let out = with_minio(
        &["drop", "--numcopies", "1", "--from", "bucket", "f.raw"],
        Some("bucket-drop-removed-pack"),
    );
    assert!(
        !out.status.success(),
        "the drop was to stop part way: {}",
        stderr(&out)
    );

    let repo = Repository::open(&src).unwrap();
    let id = dmv_repo::tree::lookup(&repo.store, &repo.head_tree().unwrap().unwrap(), b"f.raw")
        .unwrap()
        .unwrap()
        .id;
    let mirror = tempfile::tempdir().unwrap();
    let mut bucket = open_bucket("s3://cut/r", &minio.endpoint(), mirror.path()).unwrap();
    assert_eq!(
        bucket_holds(bucket.as_mut(), &[id], true).unwrap(),
        vec![false],
        "the drop removed f.raw from the bucket"
    );
    let bucket_id = bucket.replica().unwrap().0;
    let log = repo.copies().load_locations().unwrap();
    assert!(
        !log.holders(&id).iter().any(|(r, _)| *r == bucket_id),
        "src's log says the bucket holds f.raw, which the drop removed: {:?}",
        log.records
    );
}
