//! A remote that stops answering (a frozen server: `SIGSTOP`, as a hung
//! machine or a dead link that still looks open behaves) is abandoned after
//! `remote.timeout`, and the next copy serves: over HTTP, over ssh and on an
//! object store, for get, whereis, cat, fetch and sync.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::needs::{lacks, Need};
use common::remote::{head_of, ok, one_line_error, snapshot};
use common::servers::{HttpServer, S3Server, Sshd, MINIO_SECRET, MINIO_USER};
use common::*;

/// The wait each remote is allowed here, in seconds.
const TIMEOUT: &str = "2";
/// A command still running after this long hangs: before waits were
/// bounded, a get from a frozen hub waited for 408 s and more.
const HUNG: Duration = Duration::from_secs(120);

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with the pid of a server this test started, and a standard signal.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// Runs dmv in `dir` with `env` set, failing the test if it hangs; with
/// how long it took.
fn run(dir: &Path, args: &[&str], env: &dyn Fn(&mut Command)) -> (Output, Duration) {
    let mut cmd = dmv_cmd(dir);
    env(&mut cmd);
    let start = Instant::now();
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The pipes are read on threads, so a long output cannot block the child.
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v)
            .map(|_| v)
            .unwrap_or_default()
    });
    let stderr = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v)
            .map(|_| v)
            .unwrap_or_default()
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > HUNG {
            let _ = child.kill();
            panic!(
                "dmv {} hung: still running after {} s",
                args.join(" "),
                HUNG.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = start.elapsed();
    (
        Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        },
        took,
    )
}

#[test]
fn frozen_remotes_are_abandoned_after_the_timeout_and_the_next_copy_serves() {
    if lacks(&[Need::Sshd, Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let src = t.join("src");
    std::fs::create_dir(&src).unwrap();
    dmv(&src, &["init"]);
    write_noise(&src.join("a.raw"), 300_000, 1);
    write_noise(&src.join("b.raw"), 300_000, 2);
    write_noise(&src.join("c.raw"), 300_000, 3);
    dmv(&src, &["add", "."]);
    dmv(&src, &["commit", "-m", "shoot"]);
    let want = file_bytes(&src);

    // Four full copies: a hub over HTTP, one over ssh, a bucket, and a backup on this disk.
    let sshd = Sshd::start();
    let minio = S3Server::minio();
    minio.create_bucket("stalls");
    let env = |c: &mut Command| {
        sshd.env(c);
        minio.env(c);
    };
    for hub in ["hub", "sshhub"] {
        dmv(t, &["init", "--bare", hub]);
        dmv(&src, &["push", t.join(hub).to_str().unwrap(), "main"]);
    }
    dmv(
        &src,
        &[
            "remote",
            "add",
            "bucket",
            "s3://stalls/shoot",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    ok(&run(&src, &["push", "bucket", "main"], &env).0);
    dmv(t, &["clone", "--bare", src.to_str().unwrap(), "backup"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );

    // A phone's meta clone of the HTTP hub, knowing the others; the stalled ones come first.
    ok(&dmv_out(
        t,
        &[
            "clone",
            "--slice",
            "meta",
            "--token",
            "w",
            &server.url("hub"),
            "phone",
        ],
    ));
    let phone = t.join("phone");
    dmv(
        &phone,
        &["remote", "add", "b-ssh", &sshd.url(&t.join("sshhub"))],
    );
    dmv(
        &phone,
        &[
            "remote",
            "add",
            "c-bucket",
            "s3://stalls/shoot",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    dmv(
        &phone,
        &[
            "remote",
            "add",
            "z-backup",
            t.join("backup").to_str().unwrap(),
        ],
    );
    dmv(&phone, &["config", "remote.timeout", TIMEOUT]);

    let frozen = [server.child.id(), sshd.pid(), minio.pid().unwrap()];
    for pid in frozen {
        signal(pid, libc::SIGSTOP);
    }
    let mut took = Vec::new();

    // get: each frozen remote is left after the wait, and the backup serves.
    let (out, time) = run(&phone, &["get", "a.raw"], &env);
    ok(&out);
    took.push(("get", time));
    assert_eq!(std::fs::read(phone.join("a.raw")).unwrap(), want["a.raw"]);

    // whereis: the copies as known, and which remotes could not be asked, and why.
    let (out, time) = run(&phone, &["whereis", "b.raw"], &env);
    ok(&out);
    took.push(("whereis", time));
    let (said, warned) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(said.contains("z-backup [near, "), "{said}");
    // The hub's copy is classed by what was seen of it; the phone never
    // reached the other two, so it cannot tell their copies are theirs.
    assert!(said.contains("origin [unreachable]"), "{said}");
    assert!(said.contains("sshhub [unknown]"), "{said}");
    for name in ["origin", "b-ssh", "c-bucket"] {
        assert!(
            warned
                .lines()
                .any(|l| l.starts_with(&format!("warning: could not ask {name} ("))),
            "{name} not named: {warned}"
        );
    }
    assert!(
        warned.contains("stopped answering: nothing for 2 s"),
        "{warned}"
    );

    // cat of a file whose data is not here.
    let (out, time) = run(&phone, &["cat", "HEAD:b.raw"], &env);
    ok(&out);
    took.push(("cat", time));
    assert_eq!(out.stdout, want["b.raw"]);

    // fetch from a frozen remote fails in one line naming it.
    for (remote, names) in [
        ("origin", server.url("hub")),
        ("b-ssh", sshd.url(&t.join("sshhub"))),
        ("c-bucket", "s3://stalls/shoot".to_string()),
    ] {
        let (out, time) = run(&phone, &["fetch", remote], &env);
        took.push(("fetch", time));
        let line = one_line_error(&out);
        assert!(line.contains(&names), "{line}");
        assert!(
            line.contains("stopped answering") || line.contains("does not answer"),
            "{line}"
        );
    }

    // sync: the frozen remotes are skipped (and said), the backup takes the new commit.
    std::fs::write(phone.join("notes.txt"), "picked a.raw").unwrap();
    dmv(&phone, &["add", "notes.txt"]);
    dmv(&phone, &["commit", "-m", "notes"]);
    let (out, time) = run(&phone, &["sync"], &env);
    took.push(("sync", time));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sync did not reach 3 of 4 remotes: origin, b-ssh, c-bucket"),
        "{}",
        stderr(&out)
    );
    assert_eq!(head_of(&t.join("backup"), "main"), head_of(&phone, "main"));

    for pid in frozen {
        signal(pid, libc::SIGCONT);
    }
    // Thawed, no wait may run out: on a loaded machine an ssh login alone
    // can take longer than the 2 s the frozen remotes were given.
    dmv(&phone, &["config", "remote.timeout", "120"]);
    // Thawed, all four answer; the copy that answered last time is tried
    // first, ahead of origin, which did not.
    let (out, _) = run(&phone, &["get", "--json", "c.raw"], &env);
    ok(&out);
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["from"], "z-backup", "{got}");
    let (out, _) = run(&phone, &["whereis", "--json", "c.raw"], &env);
    ok(&out);
    let files: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let copies = files[0]["copies"].as_array().unwrap();
    for name in ["origin", "b-ssh", "c-bucket", "z-backup"] {
        let copy = copies
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no copy named {name}: {files}"));
        assert_eq!(copy["reachable"], true, "{copy}");
        assert!(copy["class"] == "near" || copy["class"] == "far", "{copy}");
        assert!(copy["connect_ms"].is_u64(), "{copy}");
    }
    // What each command took with three frozen remotes and a 2 s wait (for the note).
    eprintln!(
        "took: {}",
        took.iter()
            .map(|(c, d)| format!("{c} {:.1} s", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Issue 44, item 5: a remote listing two URLs, two `dmv serve` over one hub
/// on this disk. While one server is killed mid-push, frozen, or restarted,
/// every push and clone completes on the other URL, and every push
/// acknowledged is in the hub.
#[test]
fn a_remote_with_two_urls_fails_over_while_its_servers_are_killed_frozen_and_restarted() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
    )
    .unwrap();
    let laptop = t.join("laptop");
    std::fs::create_dir(&laptop).unwrap();
    dmv(&laptop, &["init"]);
    push_and_clone_through_two_servers_failing_in_turn(t, &config, &[], &laptop);
}

/// What a server over MinIO needs in its environment.
const BUCKET_CREDENTIALS: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", MINIO_USER),
    ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
    ("AWS_REGION", "us-east-1"),
];

/// A repository made in `bucket` (created) by a first push from a new
/// repository at `first` with one commit; returns the configuration of a
/// server serving it as `hub`, with the write token `w`, next to `first`.
fn repository_in_a_bucket(minio: &S3Server, bucket: &str, first: &Path) -> std::path::PathBuf {
    minio.create_bucket(bucket);
    std::fs::create_dir(first).unwrap();
    dmv(first, &["init"]);
    write_noise(&first.join("first.raw"), 300_000, 1);
    dmv(first, &["add", "."]);
    dmv(first, &["commit", "-m", "first"]);
    // The repository is made in the bucket by a first push straight to it.
    let made = run(
        first,
        &["push", &format!("s3://{bucket}/hub"), "main"],
        &|c: &mut Command| {
            minio.env(c);
            c.env("AWS_ENDPOINT_URL", minio.endpoint());
        },
    );
    ok(&made.0);
    let config = first.parent().unwrap().join("server.toml");
    std::fs::write(&config, format!("[repos]\nhub = {{ url = \"s3://{bucket}/hub\", endpoint = \"{}\" }}\n[tokens]\n\"w\" = \"write\"\n", minio.endpoint())).unwrap();
    config
}

/// Issue 44, item 5: the hub tier with no single machine. Two `dmv serve`
/// over one repository in a real MinIO bucket (nothing of it on their
/// disks), pushes and clones while each is killed, frozen and restarted.
#[test]
fn two_servers_over_one_bucket_serve_one_repository_while_each_is_killed_frozen_and_restarted() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    let laptop = t.join("laptop");
    let config = repository_in_a_bucket(&minio, "tier", &laptop);
    let credentials = BUCKET_CREDENTIALS;
    push_and_clone_through_two_servers_failing_in_turn(t, &config, &credentials, &laptop);
    // Nothing of the repository is on the servers' side but the bucket: a new server over it serves everything.
    let third = HttpServer::start_with_env(&config, 0, &credentials);
    ok(&run(
        t,
        &["clone", "--token", "w", &third.url("hub"), "late"],
        &|_: &mut Command| {},
    )
    .0);
    assert_eq!(
        head_of(&t.join("late"), "HEAD"),
        head_of(&laptop, "refs/heads/main")
    );
    assert!(
        snapshot(&t.join("late")) == snapshot(&laptop),
        "the late clone's files differ from the laptop's"
    );
}

/// Two `dmv serve` with `config` (and `env`), `laptop` pushing to them as one
/// remote with two URLs for six rounds, each round failing one server in
/// another way; then clones from each, fetching with the first URL gone.
fn push_and_clone_through_two_servers_failing_in_turn(
    t: &Path,
    config: &Path,
    env: &[(&str, &str)],
    laptop: &Path,
) {
    let mut servers = [
        HttpServer::start_with_env(config, 0, env),
        HttpServer::start_with_env(config, 0, env),
    ];
    let ports = [servers[0].port, servers[1].port];
    dmv(
        laptop,
        &[
            "remote",
            "add",
            "origin",
            &servers[0].url("hub"),
            "--token",
            "w",
        ],
    );
    dmv(
        laptop,
        &[
            "remote",
            "set-url",
            "--add",
            "origin",
            &servers[1].url("hub"),
        ],
    );
    dmv(laptop, &["config", "remote.timeout", TIMEOUT]);
    assert_eq!(
        dmv(laptop, &["remote", "-v"]),
        format!(
            "origin\t{}\norigin\t{}\n",
            servers[0].url("hub"),
            servers[1].url("hub")
        )
    );
    let none = |_: &mut Command| {};
    let commits = |dir: &Path| {
        let log = dmv_out(dir, &["log", "--oneline"]);
        // A repository without commits has no log.
        if log.status.success() {
            String::from_utf8_lossy(&log.stdout).lines().count()
        } else {
            0
        }
    };
    let commits_before = commits(laptop);
    for round in 0..6usize {
        write_noise(
            &laptop.join(format!("r{round}.raw")),
            400_000,
            round as u64 + 10,
        );
        dmv(laptop, &["add", "."]);
        dmv(laptop, &["commit", "-m", &format!("round {round}")]);
        let victim = round % 2;
        let push = match round % 3 {
            // Killed before the push: refused connections, the next URL at once.
            0 => {
                servers[victim].kill();
                run(laptop, &["push", "origin", "main"], &none).0
            }
            // Frozen: abandoned after the timeout.
            1 => {
                signal(servers[victim].child.id(), libc::SIGSTOP);
                let (out, took) = run(laptop, &["push", "origin", "main"], &none);
                signal(servers[victim].child.id(), libc::SIGCONT);
                assert!(took < HUNG, "{took:?}");
                out
            }
            // Killed part way through (or just before or after) the push.
            _ => {
                let pid = servers[victim].child.id();
                let killer = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20 + 40 * round as u64));
                    signal(pid, libc::SIGKILL);
                });
                let out = run(laptop, &["push", "origin", "main"], &none).0;
                killer.join().unwrap();
                servers[victim].kill();
                // A push cut short by the kill is retried as a user would: the other URL takes it.
                match out.status.success() {
                    true => out,
                    false => run(laptop, &["push", "origin", "main"], &none).0,
                }
            }
        };
        ok(&push);
        if servers[victim].child.try_wait().unwrap().is_some() {
            servers[victim] = HttpServer::start_with_env(config, ports[victim], env);
        }
    }
    let acknowledged = head_of(laptop, "refs/heads/main");
    // A clone from either server, with the other's URL too, holds every acknowledged push.
    for (first, second) in [(0, 1), (1, 0)] {
        let dir = format!("clone{first}");
        ok(&run(
            t,
            &["clone", "--token", "w", &servers[first].url("hub"), &dir],
            &none,
        )
        .0);
        let clone = t.join(&dir);
        dmv(
            &clone,
            &[
                "remote",
                "set-url",
                "--add",
                "origin",
                &servers[second].url("hub"),
            ],
        );
        assert_eq!(head_of(&clone, "refs/heads/main"), acknowledged);
        assert!(
            snapshot(&clone) == snapshot(laptop),
            "the clone's files differ from the laptop's"
        );
        // The first URL gone: fetch completes on the second.
        servers[first].kill();
        ok(&run(&clone, &["fetch"], &none).0);
        servers[first] = HttpServer::start_with_env(config, ports[first], env);
    }
    assert_eq!(commits(laptop), commits_before + 6);
}

/// Two pushes at once through one server in front of a bucket: to two
/// branches, both land (each upload stages its packs apart); to one branch,
/// exactly one wins and the other is told to pull, and nothing is lost.
#[test]
fn pushes_at_once_through_one_server_over_a_bucket_both_land_or_one_is_told_to_pull() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    let config = repository_in_a_bucket(&minio, "twice", &t.join("seed"));
    let server = HttpServer::start_with_env(&config, 0, &BUCKET_CREDENTIALS);
    let none = |_: &mut Command| {};
    for (name, seed) in [("a", 2u64), ("b", 3)] {
        ok(&run(
            t,
            &["clone", "--token", "w", &server.url("hub"), name],
            &none,
        )
        .0);
        write_noise(&t.join(name).join(format!("{name}.raw")), 3_000_000, seed);
        dmv(&t.join(name), &["add", "."]);
        dmv(&t.join(name), &["commit", "-m", name]);
    }
    let push_both = |args: [&[&str]; 2]| -> Vec<Output> {
        std::thread::scope(|s| {
            let pushes: Vec<_> = ["a", "b"]
                .iter()
                .zip(args)
                .map(|(name, args)| {
                    s.spawn(move || run(&t.join(name), args, &|_: &mut Command| {}).0)
                })
                .collect();
            pushes.into_iter().map(|p| p.join().unwrap()).collect()
        })
    };
    // Two branches: both land.
    for out in push_both([
        &["push", "origin", "main:from-a"],
        &["push", "origin", "main:from-b"],
    ]) {
        ok(&out);
    }
    ok(&run(
        t,
        &["clone", "--token", "w", &server.url("hub"), "check"],
        &none,
    )
    .0);
    let check = t.join("check");
    ok(&dmv_out(&check, &["fetch"]));
    for (name, branch) in [("a", "origin/from-a"), ("b", "origin/from-b")] {
        assert_eq!(head_of(&check, branch), head_of(&t.join(name), "HEAD"));
    }
    // One branch: exactly one wins; the other is refused, and nothing is lost after a pull.
    let outs = push_both([&["push", "origin", "main"], &["push", "origin", "main"]]);
    assert_eq!(
        outs.iter().filter(|o| o.status.success()).count(),
        1,
        "{:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    let loser = if outs[0].status.success() { "b" } else { "a" };
    assert!(one_line_error(&outs[if loser == "a" { 0 } else { 1 }]).contains("pull"));
    ok(&dmv_out(&t.join(loser), &["pull"]));
    ok(&run(&t.join(loser), &["push", "origin", "main"], &none).0);
    ok(&dmv_out(&check, &["pull"]));
    for f in ["first.raw", "a.raw", "b.raw"] {
        assert!(check.join(f).exists(), "{f} is lost");
    }
}

/// A server left running in front of a bucket keeps a cache of the
/// bucket's indexes in the temporary folder, which cleaners empty
/// (systemd-tmpfiles, a person freeing space). The next push and clone
/// rebuild it from the bucket instead of failing until a restart.
#[test]
fn a_server_whose_bucket_cache_was_deleted_rebuilds_it_from_the_bucket() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    let config = repository_in_a_bucket(&minio, "cleaned", &t.join("seed"));
    let server_tmp = t.join("server-tmp");
    std::fs::create_dir(&server_tmp).unwrap();
    let mut env = BUCKET_CREDENTIALS.to_vec();
    env.push(("TMPDIR", server_tmp.to_str().unwrap()));
    let server = HttpServer::start_with_env(&config, 0, &env);
    let none = |_: &mut Command| {};
    ok(&run(
        t,
        &["clone", "--token", "w", &server.url("hub"), "a"],
        &none,
    )
    .0);
    let a = t.join("a");
    let empty_the_cache = || {
        let mut emptied = 0;
        for entry in std::fs::read_dir(&server_tmp).unwrap() {
            std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
            emptied += 1;
        }
        emptied
    };
    for round in 0..2u64 {
        write_noise(&a.join(format!("round{round}.raw")), 200_000, 10 + round);
        dmv(&a, &["add", "."]);
        dmv(&a, &["commit", "-m", &format!("round {round}")]);
        assert!(
            empty_the_cache() > 0,
            "the server keeps its cache in TMPDIR"
        );
        ok(&run(&a, &["push"], &none).0);
    }
    assert!(empty_the_cache() > 0);
    ok(&run(
        t,
        &["clone", "--token", "w", &server.url("hub"), "check"],
        &none,
    )
    .0);
    let check = t.join("check");
    assert_eq!(head_of(&check, "HEAD"), head_of(&a, "HEAD"));
    for f in ["first.raw", "round0.raw", "round1.raw"] {
        assert_eq!(
            std::fs::read(check.join(f)).unwrap(),
            std::fs::read(a.join(f)).unwrap(),
            "{f}"
        );
    }
}
