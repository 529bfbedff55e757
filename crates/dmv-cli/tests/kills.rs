//! Kills: every command that writes, killed at its named fail points and at
//! random moments, on every transport (a path, ssh, HTTP, an S3 bucket),
//! client side and, for the HTTP server, server side. After each kill:
//! `fsck --full` is clean on both sides, every ref is its old or its new
//! value, and running the command again succeeds and leaves the new state
//! (or, if the kill came after the command had finished, the new state is
//! there already).
//!
//! The suite runs a sample (`DMV_KILLS` unset: at least 40 kill points);
//! `DMV_KILLS=full` runs every fail point of every scenario and 10 random
//! moments each, and writes `kills.json` to `$DMV_FAULTS_REPORT_DIR`.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::needs::{lacks, Need};
use common::remote::{commit_all, fsck_clean, head_of};
use common::servers::{HttpServer, S3Server, Sshd};
use common::*;

/// Fail points of the store and the ref tables a write passes through.
const STORE_POINTS: [&str; 5] = [
    "pack-before-sync",
    "pack-before-rename",
    "index-before-sync",
    "index-before-rename",
    "pack-sealed",
];
const REF_POINTS: [&str; 4] = [
    "refs-after-lock",
    "refs-after-table-write",
    "refs-after-list-write",
    "refs-after-list-rename",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transport {
    Path,
    Ssh,
    Http,
    Bucket,
}

/// The servers the transports need, started once.
struct Servers {
    sshd: Sshd,
    minio: S3Server,
}

/// One trial's repositories: a hub (bare), a client cloned from it with
/// one more commit, and how to reach the hub.
struct World {
    dir: tempfile::TempDir,
    transport: Transport,
    url: String,
    /// The hub's main before and after the change every scenario makes.
    old: String,
    new: String,
    http: Option<HttpServer>,
}

impl World {
    fn hub(&self) -> PathBuf {
        self.dir.path().join("hub")
    }
    fn client(&self) -> PathBuf {
        self.dir.path().join("client")
    }
}

fn env_for(transport: Transport, servers: &Servers, cmd: &mut Command) {
    match transport {
        Transport::Ssh => servers.sshd.env(cmd),
        Transport::Bucket => {
            servers.minio.env(cmd);
            cmd.env("AWS_ENDPOINT_URL", servers.minio.endpoint());
        }
        _ => {}
    }
}

fn run(
    dir: &Path,
    args: &[&str],
    transport: Transport,
    servers: &Servers,
    extra_env: &[(&str, &str)],
) -> Output {
    let mut cmd = dmv_cmd(dir);
    cmd.args(args).envs(extra_env.iter().copied());
    env_for(transport, servers, &mut cmd);
    cmd.output().unwrap()
}

fn must(out: Output, what: &str) -> Output {
    assert!(out.status.success(), "{what} failed: {}", stderr(&out));
    out
}

/// A hub holding commit `old` (a 3 MiB file and a small one), reached over
/// `transport`, and a client cloned from it that committed `new` on top (a
/// second 3 MiB file): every scenario moves something from old to new.
fn world(transport: Transport, servers: &Servers, trial: usize) -> World {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path();
    let seed = t.join("seed");
    std::fs::create_dir(&seed).unwrap();
    dmv(&seed, &["init"]);
    write_noise(&seed.join("a.raw"), 3 << 20, 1);
    std::fs::write(seed.join("notes.txt"), "one\n").unwrap();
    commit_all(&seed, "old");
    dmv(t, &["init", "--bare", "hub"]);
    let hub = t.join("hub");
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    let mut http = None;
    let url = match transport {
        Transport::Path => hub.to_str().unwrap().to_string(),
        Transport::Ssh => servers.sshd.url(&hub),
        Transport::Http => {
            let server = HttpServer::start(
                "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
                t,
                0,
            );
            let url = server.url("hub");
            http = Some(server);
            url
        }
        Transport::Bucket => {
            let url = format!("s3://kills/trial-{trial}");
            must(
                run(&seed, &["push", &url, "main"], transport, servers, &[]),
                "seeding the bucket",
            );
            url
        }
    };
    let args = remote_args(transport, &["clone", url.as_str(), "client"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    must(run(t, &args, transport, servers, &[]), "the client's clone");
    let client = t.join("client");
    write_noise(&client.join("b.raw"), 3 << 20, 2);
    std::fs::write(client.join("notes.txt"), "two\n").unwrap();
    commit_all(&client, "new");
    let old = head_of(&seed, "refs/heads/main");
    let new = head_of(&client, "refs/heads/main");
    World {
        dir,
        transport,
        url,
        old,
        new,
        http,
    }
}

/// The hub's main as its own files say (a bucket: as a fresh clone sees it).
fn hub_main(w: &World, servers: &Servers) -> String {
    match w.transport {
        Transport::Bucket => {
            let probe = w.dir.path().join(format!("probe-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&probe);
            must(
                run(
                    w.dir.path(),
                    &["clone", "--slice", "meta", &w.url, probe.to_str().unwrap()],
                    w.transport,
                    servers,
                    &[],
                ),
                "probing the bucket",
            );
            fsck_clean(&probe);
            let main = head_of(&probe, "refs/heads/main");
            std::fs::remove_dir_all(&probe).unwrap();
            main
        }
        _ => {
            fsck_clean(&w.hub());
            head_of(&w.hub(), "refs/heads/main")
        }
    }
}

/// A command a scenario kills, and what must hold after it ran to the end.
struct Scenario {
    name: String,
    transport: Transport,
    points: Vec<&'static str>,
    /// The command, run in `dir(world)`.
    args: fn(&World) -> Vec<String>,
    dir: fn(&World) -> PathBuf,
    /// After a kill (`finished`: false) or the rerun (true): refs old or new, and the new state once finished.
    check: fn(&World, &Servers, bool),
    /// Prepares the world for this scenario (a change to commit, garbage for gc, ...).
    prepare: fn(&World, &Servers),
    /// The fail points are armed in the server (HTTP, or the one sshd starts), not in the command.
    server_side: bool,
}

fn client(w: &World) -> PathBuf {
    w.client()
}

/// `verb` with what a clone over `transport` needs (an HTTP token; a bucket's endpoint comes from the environment).
fn remote_args(transport: Transport, verb: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = verb.iter().map(|s| s.to_string()).collect();
    if transport == Transport::Http && verb[0] == "clone" {
        args.extend(["--token".to_string(), "w".to_string()]);
    }
    args
}

fn nothing(_: &World, _: &Servers) {}

fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    for transport in [
        Transport::Path,
        Transport::Ssh,
        Transport::Http,
        Transport::Bucket,
    ] {
        let sync_points: Vec<&str> = match transport {
            Transport::Bucket => vec!["bucket-pack-uploaded"],
            _ => [
                STORE_POINTS.as_slice(),
                &["push-received"],
                REF_POINTS.as_slice(),
            ]
            .concat(),
        };
        for server_side in [false, true] {
            // The serving side: `dmv serve` over HTTP, `dmv serve --stdio` that sshd starts.
            if server_side && !matches!(transport, Transport::Http | Transport::Ssh) {
                continue;
            }
            all.push(Scenario {
                name: format!(
                    "push over {transport:?}{}",
                    if server_side { ", server killed" } else { "" }
                ),
                transport,
                points: [sync_points.as_slice(), REF_POINTS.as_slice()].concat(),
                args: |w| remote_args(w.transport, &["push", "origin", "main"]),
                dir: client,
                prepare: nothing,
                server_side,
                check: |w, s, finished| {
                    let main = hub_main(w, s);
                    assert!(main == w.old || main == w.new, "hub main is {main}");
                    if finished {
                        assert_eq!(main, w.new);
                    }
                    fsck_clean(&w.client());
                },
            });
        }
        all.push(Scenario {
            name: format!("fetch over {transport:?}"),
            transport,
            points: [STORE_POINTS.as_slice(), REF_POINTS.as_slice()].concat(),
            args: |w| remote_args(w.transport, &["fetch"]),
            dir: |w| w.dir.path().join("fetcher"),
            server_side: false,
            prepare: |w, s| {
                let args = remote_args(w.transport, &["clone", &w.url, "fetcher"]);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                must(
                    run(w.dir.path(), &args, w.transport, s, &[]),
                    "the fetcher's clone",
                );
                must(
                    run(
                        &w.client(),
                        &["push", "origin", "main"],
                        w.transport,
                        s,
                        &[],
                    ),
                    "the push to fetch",
                );
            },
            check: |w, _, finished| {
                let fetcher = w.dir.path().join("fetcher");
                fsck_clean(&fetcher);
                let tracking = head_of(&fetcher, "refs/remotes/origin/main");
                assert!(
                    tracking == w.old || tracking == w.new,
                    "origin/main is {tracking}"
                );
                if finished {
                    assert_eq!(tracking, w.new);
                }
            },
        });
        all.push(Scenario {
            name: format!("clone over {transport:?}"),
            transport,
            points: [STORE_POINTS.as_slice(), REF_POINTS.as_slice()].concat(),
            args: |w| remote_args(w.transport, &["clone", &w.url, "cloned"]),
            dir: |w| w.dir.path().to_path_buf(),
            server_side: false,
            prepare: |w, s| {
                must(
                    run(
                        &w.client(),
                        &["push", "origin", "main"],
                        w.transport,
                        s,
                        &[],
                    ),
                    "the push to clone",
                );
            },
            check: |w, _, finished| {
                let cloned = w.dir.path().join("cloned");
                if finished {
                    fsck_clean(&cloned);
                    assert_eq!(head_of(&cloned, "refs/heads/main"), w.new);
                    assert!(
                        std::fs::read(cloned.join("b.raw")).unwrap()
                            == std::fs::read(w.client().join("b.raw")).unwrap()
                    );
                }
            },
        });
    }
    let local = |name: &str,
                 points: Vec<&'static str>,
                 args: fn(&World) -> Vec<String>,
                 prepare: fn(&World, &Servers),
                 check: fn(&World, &Servers, bool)| Scenario {
        name: name.to_string(),
        transport: Transport::Path,
        points,
        args,
        dir: client,
        prepare,
        check,
        server_side: false,
    };
    all.push(local(
        "commit",
        [
            STORE_POINTS.as_slice(),
            &["commit-before-ref", "commit-after-ref"],
            REF_POINTS.as_slice(),
        ]
        .concat(),
        |_| ["commit", "-a", "-m", "third"].map(String::from).to_vec(),
        |w, _| write_noise(&w.client().join("b.raw"), 3 << 20, 3),
        |w, _, finished| {
            fsck_clean(&w.client());
            let main = head_of(&w.client(), "refs/heads/main");
            if finished {
                assert_ne!(main, w.new);
                assert_eq!(dmv(&w.client(), &["status", "--short"]), "");
            } else if main == w.new {
                // Killed before its commit: the change is there, staged or not.
                let status = dmv(&w.client(), &["status", "--short"]);
                assert!(status == " M b.raw\n" || status == "M  b.raw\n", "{status}");
            }
        },
    ));
    all.push(local(
        "gc",
        [
            STORE_POINTS.as_slice(),
            &["gc-before-delete", "gc-after-delete"],
        ]
        .concat(),
        |_| {
            ["gc", "--prune", "now", "--prune-reflog"]
                .map(String::from)
                .to_vec()
        },
        |w, _| {
            // A branch's commit that nothing keeps any more: garbage to collect.
            let c = w.client();
            dmv(&c, &["switch", "-c", "scrap"]);
            write_noise(&c.join("scrap.raw"), 2 << 20, 5);
            commit_all(&c, "scrap");
            dmv(&c, &["switch", "main"]);
            dmv(&c, &["branch", "-D", "scrap"]);
        },
        |w, _, _| {
            fsck_clean(&w.client());
            assert_eq!(head_of(&w.client(), "refs/heads/main"), w.new);
        },
    ));
    all.push(local(
        "merge",
        [
            STORE_POINTS.as_slice(),
            &[
                "merge-state-written",
                "merge-worktree-written",
                "merge-after-ref",
            ],
            REF_POINTS.as_slice(),
        ]
        .concat(),
        |_| ["merge", "side"].map(String::from).to_vec(),
        |w, _| {
            let c = w.client();
            dmv(&c, &["switch", "-c", "side", &w.old]);
            write_noise(&c.join("side.raw"), 2 << 20, 4);
            commit_all(&c, "side");
            dmv(&c, &["switch", "main"]);
        },
        |w, _, finished| {
            fsck_clean(&w.client());
            let main = head_of(&w.client(), "refs/heads/main");
            if finished {
                assert_ne!(main, w.new);
                assert!(w.client().join("side.raw").exists() && w.client().join("b.raw").exists());
            }
        },
    ));
    all.push(local(
        "drop",
        [
            STORE_POINTS.as_slice(),
            &["drop-confirmed", "drop-removed-first-file"],
        ]
        .concat(),
        |_| {
            ["drop", "--numcopies", "1", "a.raw"]
                .map(String::from)
                .to_vec()
        },
        nothing,
        |w, _, finished| {
            fsck_clean(&w.client());
            fsck_clean(&w.hub());
            assert_eq!(dmv(&w.client(), &["status", "--short"]), "");
            if finished {
                assert!(!w.client().join("a.raw").exists());
            }
        },
    ));
    all.push(local(
        "get",
        STORE_POINTS.to_vec(),
        |_| ["get", "a.raw"].map(String::from).to_vec(),
        |w, _| {
            let c = w.client();
            std::fs::remove_dir_all(&c).unwrap();
            dmv(
                w.dir.path(),
                &[
                    "clone",
                    "--slice",
                    "meta",
                    w.hub().to_str().unwrap(),
                    "client",
                ],
            );
        },
        |w, _, finished| {
            fsck_clean(&w.client());
            if finished {
                assert!(std::fs::read(w.client().join("a.raw")).unwrap().len() == 3 << 20);
            }
        },
    ));
    all.push(local(
        "commit --amend",
        [
            STORE_POINTS.as_slice(),
            &["commit-before-ref"],
            REF_POINTS.as_slice(),
        ]
        .concat(),
        |_| {
            ["commit", "--amend", "-m", "amended"]
                .map(String::from)
                .to_vec()
        },
        |w, _| {
            write_noise(&w.client().join("b.raw"), 3 << 20, 7);
            dmv(&w.client(), &["add", "b.raw"]);
        },
        |w, _, finished| {
            let c = w.client();
            fsck_clean(&c);
            let main = head_of(&c, "refs/heads/main");
            if main == w.new {
                assert!(!finished, "an amend that finished moved main");
                assert_eq!(
                    dmv(&c, &["status", "--short"]),
                    "M  b.raw\n",
                    "killed before its ref: the change is still staged"
                );
            } else {
                assert_eq!(
                    dmv(&c, &["rev-parse", "HEAD~1"]).trim(),
                    w.old,
                    "the amended commit has the old one's parent"
                );
                assert_eq!(dmv(&c, &["log", "-n", "1", "--format=%s"]), "amended\n");
            }
        },
    ));
    all.push(local(
        "revert",
        [
            STORE_POINTS.as_slice(),
            &["commit-before-ref", "commit-after-ref"],
            REF_POINTS.as_slice(),
        ]
        .concat(),
        // By id: run again after it finished, it finds nothing left to undo.
        |w| vec!["revert".to_string(), w.new.clone()],
        nothing,
        |w, _, finished| {
            let c = w.client();
            fsck_clean(&c);
            let main = head_of(&c, "refs/heads/main");
            if main != w.new {
                assert_eq!(dmv(&c, &["rev-parse", "HEAD~1"]).trim(), w.new);
                assert_eq!(dmv(&c, &["cat", "HEAD:notes.txt"]), "one\n");
            }
            if finished {
                assert_ne!(main, w.new);
                assert_eq!(dmv(&c, &["status", "--short"]), "");
            }
        },
    ));
    all.push(local(
        "stash",
        [
            STORE_POINTS.as_slice(),
            &["stash-before-ref"],
            REF_POINTS.as_slice(),
        ]
        .concat(),
        |_| ["stash"].map(String::from).to_vec(),
        |w, _| write_noise(&w.client().join("b.raw"), 3 << 20, 8),
        |w, _, finished| {
            let c = w.client();
            fsck_clean(&c);
            assert_eq!(head_of(&c, "refs/heads/main"), w.new);
            let mut expected = vec![0u8; 3 << 20];
            Noise::new(8).fill(&mut expected);
            // The change is in the working tree, or in the stash, or both: never lost.
            let in_tree = std::fs::read(c.join("b.raw")).unwrap() == expected;
            let stash = dmv(&c, &["show-ref"])
                .lines()
                .find(|l| l.contains("refs/stashes/"))
                .map(|l| l.split_whitespace().next().unwrap_or("").to_string());
            let in_stash = stash
                .is_some_and(|id| dmv_out(&c, &["cat", &format!("{id}:b.raw")]).stdout == expected);
            assert!(in_tree || in_stash, "the stashed change was lost");
            if finished {
                assert!(in_stash && !in_tree);
                assert_eq!(dmv(&c, &["status", "--short"]), "");
            }
        },
    ));
    all
}

#[derive(Default, serde::Serialize)]
struct Counts {
    /// Kill points that fired (fail points reached, random kills that landed).
    killed: u64,
    /// Fail points the command passed without reaching (nothing to count).
    not_reached: Vec<String>,
}

/// Runs `s` killed at `point` (a fail point, or None for a SIGKILL after
/// `delay`). Returns whether the kill landed before the command ended.
fn trial(s: &Scenario, servers: &Servers, n: usize, point: Option<&str>, delay: Duration) -> bool {
    let mut w = world(s.transport, servers, n);
    (s.prepare)(&w, servers);
    // Server side: the HTTP server runs with the fail point armed, on the same port.
    let restart = |w: &mut World, env: &[(&str, &str)]| {
        let old = w.http.take().unwrap();
        let (config, port) = (old.config.clone(), old.port);
        drop(old);
        w.http = Some(HttpServer::start_with_env(&config, port, env));
    };
    let server_point = point.filter(|_| s.server_side && s.transport == Transport::Http);
    if let Some(p) = server_point {
        restart(&mut w, &[("DMV_FAILPOINT", p)]);
    }
    let args = (s.args)(&w);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dir = (s.dir)(&w);
    let mut cmd = dmv_cmd(&dir);
    cmd.args(&args).stdout(Stdio::null()).stderr(Stdio::piped());
    env_for(s.transport, servers, &mut cmd);
    match point {
        Some(p) if !s.server_side => {
            cmd.env("DMV_FAILPOINT", p);
        }
        // The command sshd runs for the client, with the fail point armed.
        Some(p) if s.transport == Transport::Ssh => {
            cmd.env(
                "DMV_REMOTE_DMV",
                format!("env DMV_FAILPOINT={p} {}", bin().display()),
            );
        }
        _ => {}
    }
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = match point {
        Some(_) => child.wait().unwrap(),
        None => {
            while started.elapsed() < delay && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            child.wait().unwrap()
        }
    };
    let landed = !status.success();
    if server_point.is_some() {
        restart(&mut w, &[]);
    }
    if landed {
        (s.check)(&w, servers, false);
    }
    // The same command again, unkilled, finishes the job; only one that
    // had finished before the kill may refuse (a clone into its own result,
    // a commit of nothing), and then the job must be done.
    let out = run(&dir, &args, s.transport, servers, &[]);
    if !out.status.success() {
        eprintln!(
            "{} after a kill at {point:?} / {delay:?}: the rerun refused: {}",
            s.name,
            stderr(&out)
        );
    }
    (s.check)(&w, servers, true);
    drop(w.http);
    landed
}

#[test]
fn every_writing_command_killed_anywhere_recovers_on_every_transport() {
    if lacks(&[Need::Sshd, Need::Minio]) {
        return;
    }
    let full = std::env::var("DMV_KILLS").is_ok_and(|v| v == "full");
    let servers = Servers {
        sshd: Sshd::start(),
        minio: S3Server::minio(),
    };
    servers.minio.create_bucket("kills");
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    let mut n = 0;
    for s in scenarios() {
        let c = counts.entry(s.name.clone()).or_default();
        // How long an unkilled run takes, for the random moments.
        let w = world(s.transport, &servers, 100_000 + n);
        (s.prepare)(&w, &servers);
        let args = (s.args)(&w);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        must(
            run(&(s.dir)(&w), &args, s.transport, &servers, &[]),
            &s.name,
        );
        let took = started.elapsed();
        drop(w);
        let points: Vec<&str> = if full {
            s.points.clone()
        } else {
            s.points.iter().step_by(4).copied().collect()
        };
        for p in points {
            n += 1;
            match trial(&s, &servers, n, Some(p), Duration::ZERO) {
                true => c.killed += 1,
                false => c.not_reached.push(p.to_string()),
            }
        }
        // Random moments kill the command; a server-side scenario adds only its fail points.
        let moments = match (s.server_side, full) {
            (true, _) => 0,
            (false, true) => 10,
            (false, false) => 1,
        };
        for k in 0..moments {
            n += 1;
            let delay = took * (2 * k + 1) / (2 * moments);
            if trial(&s, &servers, n, None, delay) {
                c.killed += 1;
            }
        }
    }
    let total: u64 = counts.values().map(|c| c.killed).sum();
    if let Ok(dir) = std::env::var("DMV_FAULTS_REPORT_DIR") {
        std::fs::write(
            Path::new(&dir).join("kills.json"),
            serde_json::to_vec_pretty(&counts).unwrap(),
        )
        .unwrap();
    }
    eprintln!("{total} kills in {n} trials");
    assert!(
        total >= if full { 300 } else { 40 },
        "only {total} kills landed: {}",
        serde_json::to_string(&counts).unwrap()
    );
}
