//! `dmv watch`: what settles is committed as one commit, a second watcher is
//! refused, the background watcher starts, reports and stops, kills lose
//! nothing, and two watching replicas keep in step through an HTTP hub and
//! a bucket, keeping both versions of a file changed on both.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::needs::{lacks, Need};
use common::remote::{commit_all, fsck_clean, ok};
use common::servers::{HttpServer, S3Server};
use common::*;

/// Long enough for any of these waits on a loaded two-core machine; a
/// condition met sooner ends the wait at once.
const PATIENCE: Duration = Duration::from_secs(120);

/// Waits until `done` holds, polling; panics naming `what` after [`PATIENCE`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// [`wait_for`], with the watchers' logs in the panic's message.
fn wait_for_logged(what: &str, watchers: &[&Watcher], mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > PATIENCE {
            let logs: Vec<String> = watchers
                .iter()
                .map(|w| format!("{}:\n{}", w.log.display(), w.log()))
                .collect();
            panic!("waited {PATIENCE:?} for {what}\n{}", logs.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A foreground `dmv watch` in `dir`, its log read back from a file.
struct Watcher {
    child: Child,
    log: PathBuf,
}

impl Watcher {
    fn start(dir: &Path, args: &[&str], env: &dyn Fn(&mut Command)) -> Watcher {
        let log = dir.join(format!(
            "../{}-watch.log",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut cmd = dmv_cmd(dir);
        cmd.arg("watch")
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        env(&mut cmd);
        let watcher = Watcher {
            child: cmd.spawn().unwrap(),
            log,
        };
        wait_for("the watcher to start", || {
            watcher.log().contains("watching ")
        });
        watcher
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then its exit status: it stops cleanly, and soon.
    fn stop(mut self) -> std::process::ExitStatus {
        signal(self.child.id(), libc::SIGTERM);
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the watcher did not stop on SIGTERM: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with the pid of a process this test started, and a standard signal.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

fn no_env(_: &mut Command) {}

/// The messages of HEAD's history, newest first.
fn messages(dir: &Path) -> Vec<String> {
    let out = dmv_out(dir, &["log", "--format", "%s"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn what_settles_is_one_commit_and_a_second_watcher_is_refused() {
    let t = new_repo();
    let r = t.path();
    std::fs::write(r.join("before.txt"), b"written before the watch").unwrap();
    let watcher = Watcher::start(r, &["--quiet", "0.5"], &no_env);
    // What changed while no watcher ran is committed first.
    wait_for("the first commit", || messages(r).len() == 1);
    assert_eq!(messages(r), ["1 added"]);
    let second = dmv_out(r, &["watch"]);
    assert_eq!(second.status.code(), Some(128));
    assert!(
        stderr(&second).contains("a watcher already runs in this repository (pid"),
        "{}",
        stderr(&second)
    );
    // A burst of 10,000 new files is one commit.
    for f in 0..10 {
        std::fs::create_dir_all(r.join(format!("photos/2026/day{f}"))).unwrap();
        for i in 0..1000 {
            std::fs::write(
                r.join(format!("photos/2026/day{f}/IMG_{i:04}.jpg")),
                format!("{f} {i}"),
            )
            .unwrap();
        }
    }
    wait_for("the burst's commit", || messages(r).len() == 2);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(messages(r), ["10000 added in photos/2026/", "1 added"]);
    assert!(dmv(r, &["status", "--short"]).is_empty());
    // Changes and deletions, counted.
    std::fs::write(r.join("photos/2026/day0/IMG_0000.jpg"), b"edited").unwrap();
    std::fs::remove_file(r.join("photos/2026/day1/IMG_0001.jpg")).unwrap();
    wait_for("the edit's commit", || messages(r).len() == 3);
    assert_eq!(messages(r)[0], "1 modified, 1 deleted in photos/2026/");
    let log = watcher.log();
    assert!(watcher.stop().success(), "{log}");
    fsck_clean(r);
}

#[test]
fn the_background_watcher_starts_reports_idles_and_stops() {
    let t = new_repo();
    let r = t.path();
    let out = dmv_out(r, &["watch", "--background", "--quiet", "0.3"]);
    ok(&out);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let pid: u32 = said
        .split("(pid ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    let status = dmv(r, &["watch", "--status"]);
    assert!(
        status.contains(&format!("a watcher runs in this repository (pid {pid})")),
        "{status}"
    );
    std::fs::write(r.join("a.txt"), b"a").unwrap();
    wait_for("a commit", || messages(r).len() == 1);
    // Idle, it uses next to no CPU: clock ticks of user and system time over 5 s.
    let ticks = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = ticks();
    std::thread::sleep(Duration::from_secs(5));
    let used = ticks() - before;
    assert!(used <= 5, "{used} ticks (1/100 s) of CPU in 5 s of idling");
    let stopped = dmv(r, &["watch", "--stop"]);
    assert!(
        stopped.contains(&format!("stopped the watcher (pid {pid})")),
        "{stopped}"
    );
    assert!(dmv(r, &["watch", "--status"]).contains("no watcher runs in this repository"));
    let log = std::fs::read_to_string(r.join(".dmv/watch.log")).unwrap();
    assert!(
        log.contains("committed ") && log.contains(": 1 added") && log.contains("stopped"),
        "{log}"
    );
}

/// A log grown past 4 MiB is moved aside and begun again, and `--status`
/// shows its last lines.
#[test]
fn the_watch_log_is_kept_to_its_limit() {
    let t = new_repo();
    let r = t.path();
    let old = "2026-01-01 00:00:00 UTC an old line\n".repeat(140_000);
    assert!(old.len() > 4 << 20);
    std::fs::write(r.join(".dmv/watch.log"), &old).unwrap();
    ok(&dmv_out(r, &["watch", "--background", "--quiet", "0.3"]));
    std::fs::write(r.join("a.txt"), b"a").unwrap();
    wait_for("a commit", || messages(r).len() == 1);
    ok(&dmv_out(r, &["watch", "--stop"]));
    let aside = std::fs::read_to_string(r.join(".dmv/watch.log.1")).unwrap();
    assert!(aside.starts_with(&old), "the old log was moved aside whole");
    let log = std::fs::read_to_string(r.join(".dmv/watch.log")).unwrap();
    assert!(
        log.len() < 4096 && log.contains("committed ") && log.contains("stopped"),
        "{log}"
    );
    let status = dmv(r, &["watch", "--status"]);
    assert!(
        status.contains("stopped") && !status.contains("an old line"),
        "{status}"
    );
}

/// A watcher killed (`SIGKILL`) at random moments of a stream of new files,
/// then started again, commits every file; nothing is half-committed.
#[test]
fn a_watcher_killed_at_any_moment_loses_nothing() {
    let t = new_repo();
    let r = t.path();
    let mut noise = Noise::new(7);
    let mut written = 0;
    for round in 0..4 {
        let mut watcher = Watcher::start(r, &["--quiet", "0.2"], &no_env);
        for _ in 0..20 {
            std::fs::write(
                r.join(format!("f{written:03}.raw")),
                vec![round as u8; 1000 + written * 10],
            )
            .unwrap();
            written += 1;
            std::thread::sleep(Duration::from_millis(below(&mut noise, 60)));
        }
        std::thread::sleep(Duration::from_millis(below(&mut noise, 800)));
        let _ = watcher.child.kill();
        let _ = watcher.child.wait();
    }
    let watcher = Watcher::start(r, &["--quiet", "0.2"], &no_env);
    wait_for("every file committed", || {
        dmv(r, &["status", "--short"]).is_empty()
            && dmv(r, &["ls-tree", "-r", "HEAD"]).lines().count() == written
    });
    assert!(watcher.stop().success());
    fsck_clean(r);
}

fn below(noise: &mut Noise, n: u64) -> u64 {
    u64::from_le_bytes(noise.bytes(8).try_into().unwrap()) % n
}

const TOKEN: &str = "watch-test-token";

/// A MinIO with `bucket` made, and a bare repository `hub` in `t` served
/// over HTTP, writable with [`TOKEN`].
fn hub_and_bucket(t: &Path, bucket: &str) -> (S3Server, HttpServer) {
    let minio = S3Server::minio();
    minio.create_bucket(bucket);
    dmv(t, &["init", "--bare", "hub"]);
    let hub = HttpServer::start(
        &format!("[repos]\nhub = \"hub\"\n[tokens]\n\"{TOKEN}\" = \"write\"\n"),
        t,
        0,
    );
    (minio, hub)
}

/// What a replica's commands and watcher need: MinIO's credentials and the hub's token.
fn env_of(minio: &S3Server) -> impl Fn(&mut Command) + '_ {
    move |cmd: &mut Command| {
        minio.env(cmd);
        cmd.env("DMV_TOKEN", TOKEN);
    }
}

/// dmv in `dir` with `env`, which must succeed; its stdout.
fn run_ok(env: &dyn Fn(&mut Command), dir: &Path, args: &[&str]) -> String {
    let mut cmd = dmv_cmd(dir);
    cmd.args(args);
    env(&mut cmd);
    let out = cmd.output().unwrap();
    ok(&out);
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Two replicas, each watching and syncing with an HTTP hub and a bucket:
/// a file made on one arrives on the other; a file changed on both while
/// one watcher was stopped keeps both versions on both; either watcher and
/// the hub killed and started again lose nothing.
#[test]
fn two_watching_replicas_keep_in_step_and_keep_both_versions_of_a_conflict() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (minio, mut hub) = hub_and_bucket(t, "watched");
    let env = env_of(&minio);
    let run = |dir: &Path, args: &[&str]| run_ok(&env, dir, args);
    std::fs::create_dir(t.join("laptop")).unwrap();
    let laptop = t.join("laptop");
    run(&laptop, &["init"]);
    std::fs::write(laptop.join("IMG_1.jpg"), b"the first version").unwrap();
    run(&laptop, &["add", "."]);
    run(&laptop, &["commit", "-m", "first"]);
    run(&laptop, &["remote", "add", "origin", &hub.url("hub")]);
    run(
        &laptop,
        &[
            "remote",
            "add",
            "bucket",
            "s3://watched/photos",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    run(&laptop, &["push", "origin", "main"]);
    run(&laptop, &["push", "bucket", "main"]);
    run(t, &["clone", &hub.url("hub"), "desk"]);
    let desk = t.join("desk");
    run(
        &desk,
        &[
            "remote",
            "add",
            "bucket",
            "s3://watched/photos",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let args = ["--quiet", "0.3", "--sync", "--sync-every", "1"];
    let mut on_laptop = Watcher::start(&laptop, &args, &env);
    let on_desk = Watcher::start(&desk, &args, &env);
    // Made on the laptop, it arrives on the desk.
    std::fs::write(laptop.join("IMG_2.jpg"), b"from the laptop").unwrap();
    wait_for_logged("IMG_2 on the desk", &[&on_laptop, &on_desk], || {
        std::fs::read(desk.join("IMG_2.jpg")).is_ok_and(|b| b == b"from the laptop")
    });
    // The desk's watcher stops; both change IMG_1.
    assert!(on_desk.stop().success());
    std::fs::write(laptop.join("IMG_1.jpg"), b"edited on the laptop").unwrap();
    // At the hub and in the bucket both, so that the desk, which cannot
    // then push its edit anywhere, is the replica that finds the conflict
    // (each keeps its own report of what it kept); with the bucket still
    // behind, the desk's edit could land there and the laptop merge instead.
    for remote in ["origin/main", "bucket/main"] {
        wait_for(&format!("the laptop's edit at {remote}"), || {
            let mut cmd = dmv_cmd(&laptop);
            cmd.args(["log", "--format", "%s", remote, "-n", "1"]);
            String::from_utf8_lossy(&cmd.output().unwrap().stdout).contains("1 modified")
        });
    }
    std::fs::write(desk.join("IMG_1.jpg"), b"edited on the desk").unwrap();
    // The hub is killed and started again meanwhile: the watchers carry on.
    hub.kill();
    let port = hub.port;
    hub = HttpServer::start_with(&t.join("server.toml"), port);
    let on_desk = Watcher::start(&desk, &args, &env);
    let both = |dir: &Path| {
        std::fs::read(dir.join("IMG_1.ours.jpg")).is_ok()
            && std::fs::read(dir.join("IMG_1.theirs.jpg")).is_ok()
    };
    wait_for_logged("both versions on the desk", &[&on_laptop, &on_desk], || {
        both(&desk)
    });
    wait_for_logged(
        "both versions on the laptop",
        &[&on_laptop, &on_desk],
        || both(&laptop),
    );
    let versions = |dir: &Path| {
        let mut v = vec![
            std::fs::read(dir.join("IMG_1.ours.jpg")).unwrap(),
            std::fs::read(dir.join("IMG_1.theirs.jpg")).unwrap(),
        ];
        v.sort();
        v
    };
    assert_eq!(
        versions(&desk),
        [
            b"edited on the desk".to_vec(),
            b"edited on the laptop".to_vec()
        ]
    );
    assert_eq!(versions(&laptop), versions(&desk));
    assert!(
        on_desk
            .log()
            .contains("changed on two replicas, both versions kept: IMG_1.jpg"),
        "{}",
        on_desk.log()
    );
    // `dmv status` says so on the replica that kept them, until a person chooses.
    let status = dmv(&desk, &["status"]);
    assert!(
        status.contains("Changed on two replicas, both versions kept:")
            && status.contains("IMG_1.jpg: IMG_1.ours.jpg, IMG_1.theirs.jpg"),
        "{status}"
    );
    let said: serde_json::Value = serde_json::from_str(&dmv(&desk, &["status", "--json"])).unwrap();
    assert_eq!(
        said["kept_both"],
        serde_json::json!([{"path": "IMG_1.jpg", "kept": ["IMG_1.ours.jpg", "IMG_1.theirs.jpg"]}]),
    );
    let said = dmv(&desk, &["watch", "--status"]);
    assert!(
        said.contains("files changed on two replicas (both versions kept):")
            && said.contains("IMG_1.jpg"),
        "{said}"
    );
    // The laptop's watcher killed outright, a file made meanwhile: picked up when it starts again.
    let _ = on_laptop.child.kill();
    let _ = on_laptop.child.wait();
    std::fs::write(laptop.join("IMG_3.jpg"), b"while no watcher ran").unwrap();
    on_laptop = Watcher::start(&laptop, &args, &env);
    wait_for_logged("IMG_3 on the desk", &[&on_laptop, &on_desk], || {
        std::fs::read(desk.join("IMG_3.jpg")).is_ok()
    });
    // Both replicas and the bucket end with one history.
    wait_for_logged("one history", &[&on_laptop, &on_desk], || {
        let head = |dir: &Path| dmv(dir, &["rev-parse", "HEAD"]);
        run(&laptop, &["fetch", "bucket"]);
        head(&laptop) == head(&desk) && dmv(&laptop, &["rev-parse", "bucket/main"]) == head(&laptop)
    });
    assert!(on_laptop.stop().success());
    assert!(on_desk.stop().success());
    std::fs::remove_file(desk.join("IMG_1.theirs.jpg")).unwrap();
    assert!(!dmv(&desk, &["status"]).contains("both versions kept"));
    fsck_clean(&laptop);
    fsck_clean(&desk);
    drop(hub);
}

#[test]
fn install_writes_a_systemd_unit_and_a_launchd_agent_that_parse() {
    let t = new_repo();
    let r = t.path();
    let home = tempfile::tempdir().unwrap();
    for (service, dir, ext) in [
        ("systemd", ".config/systemd/user", "service"),
        ("launchd", "Library/LaunchAgents", "plist"),
    ] {
        let out = dmv_cmd(r)
            .args(["watch", "--install", "--service", service, "--sync"])
            .env("HOME", home.path())
            .output()
            .unwrap();
        ok(&out);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        let written: Vec<PathBuf> = std::fs::read_dir(home.path().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        assert_eq!(written.len(), 1, "{said}");
        let text = std::fs::read_to_string(&written[0]).unwrap();
        assert!(said.contains(&written[0].display().to_string()), "{said}");
        match service {
            "systemd" => {
                assert!(said.contains("systemctl --user enable --now"), "{said}");
                assert!(
                    text.contains(&format!("WorkingDirectory=\"{}\"", r.display())),
                    "{text}"
                );
                assert!(
                    text.contains(&format!("ExecStart=\"{}\" \"watch\"", bin().display()))
                        && text.contains("\"--sync\""),
                    "{text}"
                );
            }
            _ => {
                assert!(said.contains("launchctl load -w"), "{said}");
                // Read by a real plist parser, its types checked.
                let check = "import plistlib,sys\np=plistlib.load(open(sys.argv[1],'rb'))\nassert isinstance(p['Label'],str) and p['RunAtLoad'] is True and p['KeepAlive'] is True\nassert p['ProgramArguments'][1:3]==['watch','--quiet'] and '--sync' in p['ProgramArguments'], p\nprint(p['WorkingDirectory'])";
                let out = Command::new("python3")
                    .args(["-c", check])
                    .arg(&written[0])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}\n{text}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout).trim(),
                    r.display().to_string()
                );
            }
        }
    }
}

/// The camera-card flow: a phone holding only `paths:camera` watches with
/// --drop-after-push; a new photo is committed, sent to the hub and the
/// bucket, then freed on the phone once both copies are confirmed. Its
/// data stays at both, and a get brings it back.
#[test]
fn a_partial_replica_sends_new_photos_and_frees_them_once_two_copies_exist() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (minio, hub) = hub_and_bucket(t, "ingest");
    let env = env_of(&minio);
    let run = |dir: &Path, args: &[&str]| run_ok(&env, dir, args);
    let desk = t.join("desk");
    std::fs::create_dir(&desk).unwrap();
    run(&desk, &["init"]);
    std::fs::create_dir_all(desk.join("edits")).unwrap();
    std::fs::write(desk.join("edits/plan.txt"), b"what to shoot").unwrap();
    run(&desk, &["add", "."]);
    run(&desk, &["commit", "-m", "plan"]);
    run(&desk, &["remote", "add", "origin", &hub.url("hub")]);
    run(
        &desk,
        &[
            "remote",
            "add",
            "bucket",
            "s3://ingest/photos",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    run(&desk, &["push", "origin", "main"]);
    run(&desk, &["push", "bucket", "main"]);
    run(
        t,
        &["clone", "--slice", "paths:camera", &hub.url("hub"), "phone"],
    );
    let phone = t.join("phone");
    run(
        &phone,
        &[
            "remote",
            "add",
            "bucket",
            "s3://ingest/photos",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let watcher = Watcher::start(
        &phone,
        &[
            "--quiet",
            "0.3",
            "--sync",
            "--sync-every",
            "1",
            "--drop-after-push",
        ],
        &env,
    );
    std::fs::create_dir_all(phone.join("camera")).unwrap();
    let mut photo = vec![0u8; 300_000];
    Noise::new(3).fill(&mut photo);
    std::fs::write(phone.join("camera/IMG_0001.jpg"), &photo).unwrap();
    wait_for_logged("the photo freed on the phone", &[&watcher], || {
        watcher.log().contains("freed 1 files")
    });
    assert!(!phone.join("camera/IMG_0001.jpg").exists());
    assert_eq!(
        run(&phone, &["ls", "--absent"])
            .lines()
            .filter(|l| l.ends_with("camera/IMG_0001.jpg"))
            .count(),
        1
    );
    // Still one commit of it, not a deletion: the watcher saw the file go and committed nothing.
    std::thread::sleep(Duration::from_secs(2));
    assert!(run(&phone, &["status", "--short"]).is_empty());
    assert_eq!(messages(&phone)[0], "1 added in camera/");
    // Both copies hold it: the desk pulls it from the hub, and the bucket serves it too.
    run(&desk, &["pull", "origin", "main"]);
    assert_eq!(
        std::fs::read(desk.join("camera/IMG_0001.jpg")).unwrap(),
        photo
    );
    run(
        &phone,
        &["get", "--remote", "bucket", "camera/IMG_0001.jpg"],
    );
    assert_eq!(
        std::fs::read(phone.join("camera/IMG_0001.jpg")).unwrap(),
        photo
    );
    assert!(watcher.stop().success());
    fsck_clean(&phone);
    drop(hub);
}

/// A person commits, edits and runs gc in a watched folder while the
/// watcher commits too: each change lands in exactly one commit or the
/// other, every command either succeeds or says why in one line (nothing
/// to commit: the watcher took it), and nothing is lost.
#[test]
fn a_watcher_and_a_person_committing_at_once_lose_nothing() {
    let t = new_repo();
    let r = t.path();
    let watcher = Watcher::start(r, &["--quiet", "0.1"], &no_env);
    for i in 0..30 {
        std::fs::write(r.join(format!("f{i}.txt")), format!("version {i}")).unwrap();
        if i > 0 {
            std::fs::write(
                r.join(format!("f{}.txt", i - 1)),
                format!("edited {}", i - 1),
            )
            .unwrap();
        }
        let args: &[&str] = match i % 3 {
            0 => &["add", "."],
            1 => &["commit", "-a", "-m", "by hand"],
            _ => &["gc", "--prune", "now"],
        };
        let out = dmv_out(r, args);
        let said = stderr(&out);
        assert!(
            out.status.success()
                || (args[0] == "commit"
                    && String::from_utf8_lossy(&out.stdout).contains("nothing")),
            "{args:?}: {said}"
        );
        assert!(!said.contains("panicked"), "{said}");
        if args[0] == "add" {
            let out = dmv_out(r, &["commit", "-m", "by hand"]);
            assert!(
                out.status.success() || String::from_utf8_lossy(&out.stdout).contains("nothing"),
                "{}",
                stderr(&out)
            );
        }
    }
    wait_for_logged("everything committed", &[&watcher], || {
        dmv(r, &["status", "--short"]).is_empty()
    });
    assert!(watcher.stop().success());
    for i in 0..30 {
        let want = if i < 29 {
            format!("edited {i}")
        } else {
            format!("version {i}")
        };
        assert_eq!(dmv(r, &["cat", &format!("HEAD:f{i}.txt")]), want);
    }
    fsck_clean(r);
}

/// In `t`: `a` with one commit, pushed to a bare `hub` (a's origin), and
/// `b` cloned from it.
fn two_replicas_of_a_hub(t: &Path) -> (PathBuf, PathBuf, PathBuf) {
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("first.txt"), "first\n").unwrap();
    commit_all(&a, "first");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    dmv(&a, &["push"]);
    dmv(t, &["clone", "hub", "b"]);
    (a, t.join("hub"), t.join("b"))
}

/// A watcher killed in the merge of its sync, started again after the hub
/// moved on, mends what was cut short and keeps in step: its sync had
/// refused every later merge until a person typed `merge --abort`.
#[test]
fn a_watcher_killed_in_its_merge_mends_it_when_it_starts_again() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (a, hub, b) = two_replicas_of_a_hub(t);
    std::fs::write(b.join("from-b.txt"), "b\n").unwrap();
    commit_all(&b, "b's work");
    dmv(&b, &["push"]);
    // Made while no watcher ran: committed when it starts, then merged with b's work, where it dies.
    std::fs::write(a.join("from-a.txt"), "a\n").unwrap();
    let args = ["--quiet", "0.2", "--sync", "--sync-every", "1"];
    let mut killed = Watcher::start(&a, &args, &|c: &mut Command| {
        c.env("DMV_FAILPOINT", "merge-state-written");
    });
    wait_for("the watcher to die in its merge", || {
        killed.child.try_wait().unwrap().is_some()
    });
    assert!(
        killed
            .log()
            .contains("failpoint merge-state-written reached"),
        "{}",
        killed.log()
    );
    assert!(dmv(&a, &["status"]).contains("interrupted before the working tree was written"));
    drop(killed);
    std::fs::write(b.join("later-b.txt"), "later\n").unwrap();
    commit_all(&b, "b's later work");
    dmv(&b, &["push"]);
    let watcher = Watcher::start(&a, &args, &no_env);
    wait_for_logged("a in step with the hub", &[&watcher], || {
        a.join("later-b.txt").exists()
            && dmv(&a, &["rev-parse", "HEAD"]) == dmv(&hub, &["rev-parse", "main"])
            && dmv(&a, &["status", "--short"]).is_empty()
    });
    assert!(
        watcher
            .log()
            .contains("Undid the merge of origin/main a sync left cut short"),
        "{}",
        watcher.log()
    );
    assert!(watcher.stop().success());
    for name in ["first.txt", "from-a.txt", "from-b.txt", "later-b.txt"] {
        assert!(a.join(name).exists(), "{name}");
    }
    fsck_clean(&a);
}

/// Every version of `path` in HEAD's history, oldest first.
#[cfg(target_os = "linux")]
fn versions_of(dir: &Path, path: &str) -> Vec<Vec<u8>> {
    let log = dmv(dir, &["log", "--format=%H"]);
    let mut found: Vec<Vec<u8>> = log
        .lines()
        .rev()
        .map(|c| dmv_out(dir, &["cat", &format!("{c}:{path}")]))
        .filter(|out| out.status.success())
        .map(|out| out.stdout)
        .collect();
    found.dedup();
    found
}

/// A writer pausing between pieces of a file it keeps open: never
/// committed half-written. One file is open before the watcher starts
/// (it commits what changed meanwhile, and committed open files too);
/// another is opened while the watcher is between deciding that a batch
/// settled and reading the tree (held there by a pause point: 3 of 228
/// versions in a month-long run were such halves, a file at 0 bytes among
/// them). Each is committed once closed, whole, and never before.
#[cfg(target_os = "linux")]
#[test]
fn a_file_still_open_for_writing_is_never_committed_half_written() {
    use std::io::Write;
    let t = new_repo();
    let d = t.path();
    std::fs::write(d.join("notes.txt"), "one\n").unwrap();
    commit_all(d, "notes");
    let whole = |seed: u64| dmv_testkit::noise(600_000, seed);
    // Written in three pieces, with pauses longer than the quiet time.
    let finish = |mut file: std::fs::File, seed: u64| {
        for piece in [200_000..400_000, 400_000..600_000] {
            std::thread::sleep(Duration::from_millis(500));
            file.write_all(&whole(seed)[piece]).unwrap();
        }
    };
    let args = ["--quiet", "0.2"];

    // Open before the watcher starts, its first piece written.
    let mut early = std::fs::File::create(d.join("early.mov")).unwrap();
    early.write_all(&whole(1)[..200_000]).unwrap();
    let watcher = Watcher::start(d, &args, &no_env);
    wait_for_logged("the watcher's first look", &[&watcher], || {
        watcher
            .log()
            .contains("waiting: early.mov: still being written")
    });
    assert!(
        !dmv_out(d, &["cat", "HEAD:early.mov"]).status.success(),
        "committed while open: {}",
        watcher.log()
    );
    finish(early, 1);
    wait_for_logged("early.mov committed", &[&watcher], || {
        dmv_out(d, &["cat", "HEAD:early.mov"]).stdout == whole(1)
    });
    assert!(watcher.stop().success());

    // Opened between the batch settling and the tree being read.
    let pause = d.join("../paused");
    // Committed as the watcher starts (its first staging), so that the change after is its second.
    std::fs::write(d.join("marker.txt"), "m\n").unwrap();
    let watcher = Watcher::start(d, &args, &|c: &mut Command| {
        c.env(
            "DMV_PAUSEPOINT",
            format!("autocommit-before-staging@2:{}", pause.display()),
        );
    });
    wait_for_logged("the first commit", &[&watcher], || {
        dmv_out(d, &["cat", "HEAD:marker.txt"]).status.success()
    });
    std::fs::write(d.join("notes.txt"), "two\n").unwrap();
    wait_for_logged("the watcher at its pause", &[&watcher], || pause.exists());
    let mut late = std::fs::File::create(d.join("late.mov")).unwrap();
    late.write_all(&whole(2)[..200_000]).unwrap();
    std::fs::remove_file(&pause).unwrap();
    wait_for_logged("notes.txt committed", &[&watcher], || {
        dmv(d, &["cat", "HEAD:notes.txt"]) == "two\n"
    });
    assert!(
        !dmv_out(d, &["cat", "HEAD:late.mov"]).status.success(),
        "committed while open: {}",
        watcher.log()
    );
    finish(late, 2);
    wait_for_logged("late.mov committed", &[&watcher], || {
        dmv_out(d, &["cat", "HEAD:late.mov"]).stdout == whole(2)
    });
    assert!(watcher.stop().success());
    assert_eq!(
        versions_of(d, "early.mov"),
        [whole(1)],
        "every version of early.mov in the history"
    );
    assert_eq!(
        versions_of(d, "late.mov"),
        [whole(2)],
        "every version of late.mov in the history"
    );
    fsck_clean(d);
}

/// What a person who left a watcher running for a month asks `dmv watch
/// --status`: is it running, when did it last commit and reach each
/// remote, what holds it back (a file still being written, a remote that
/// does not answer); `--json` says the same to a script.
#[cfg(target_os = "linux")]
#[test]
fn watch_status_says_what_the_watcher_did_and_what_holds_it_back() {
    use std::io::Write;
    let t = new_repo();
    let d = t.path();
    std::fs::write(d.join("notes.txt"), "one\n").unwrap();
    commit_all(d, "notes");
    dmv(d, &["remote", "add", "origin", "http://127.0.0.1:1/hub"]);
    let mut take = std::fs::File::create(d.join("take.mov")).unwrap();
    take.write_all(b"the first piece").unwrap();
    std::fs::write(d.join("notes.txt"), "two\n").unwrap();
    let watcher = Watcher::start(
        d,
        &["--quiet", "0.2", "--sync", "--sync-every", "1"],
        &no_env,
    );
    wait_for_logged("a commit and a sync tried", &[&watcher], || {
        watcher.log().contains("committed") && watcher.log().contains("did not reach origin")
    });
    let said = dmv(d, &["watch", "--status"]);
    let expect = [
        "a watcher runs in this repository (pid ",
        "running since: ",
        "last commit: ",
        "1 modified",
        "origin: last synced never",
        "  not reached since ",
        "waiting: take.mov: still being written",
    ];
    for expected in expect {
        assert!(said.contains(expected), "{expected:?} in:\n{said}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&dmv(d, &["watch", "--status", "--json"])).unwrap();
    assert_eq!(json["running"], true);
    assert_eq!(json["pid"].as_u64(), Some(watcher.child.id() as u64));
    assert!(
        json["health"]["waiting"][0]
            .as_str()
            .unwrap()
            .starts_with("take.mov"),
        "{json}"
    );
    assert!(
        json["health"]["last_commit"]["what"]
            .as_str()
            .unwrap()
            .contains("1 modified"),
        "{json}"
    );
    assert!(
        !json["health"]["remotes"]["origin"]["last_failed"]["what"]
            .as_str()
            .unwrap()
            .is_empty(),
        "{json}"
    );
    // Closed: committed, and nothing waits any more.
    take.write_all(b" and the last").unwrap();
    drop(take);
    wait_for_logged("take.mov committed", &[&watcher], || {
        dmv_out(d, &["cat", "HEAD:take.mov"]).stdout == b"the first piece and the last"
    });
    wait_for("the record to say so", || {
        !dmv(d, &["watch", "--status"]).contains("waiting:")
    });
    assert!(watcher.stop().success());
    let said = dmv(d, &["watch", "--status"]);
    assert!(
        said.contains("no watcher runs in this repository")
            && said.contains("last started: ")
            && said.contains("1 added"),
        "{said}"
    );
}

/// Two watching replicas of one hub whose syncs are an hour apart: a file
/// written on one arrives on the other within seconds, because each looks
/// every half second at whether the hub moved (it waited for the other's
/// timer, 60 s by default), and the history stays one.
#[test]
fn a_change_reaches_another_watching_replica_without_waiting_for_its_timer() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (a, _, b) = two_replicas_of_a_hub(t);
    let args = [
        "--quiet",
        "0.2",
        "--sync",
        "--sync-every",
        "3600",
        "--check-every",
        "0.5",
    ];
    let on_a = Watcher::start(&a, &args, &no_env);
    let on_b = Watcher::start(&b, &args, &no_env);
    std::fs::write(a.join("from-a.txt"), "a\n").unwrap();
    wait_for_logged("from-a.txt on b", &[&on_a, &on_b], || {
        std::fs::read(b.join("from-a.txt")).is_ok_and(|got| got == b"a\n")
    });
    std::fs::write(b.join("from-b.txt"), "b\n").unwrap();
    wait_for_logged("from-b.txt on a", &[&on_a, &on_b], || {
        std::fs::read(a.join("from-b.txt")).is_ok_and(|got| got == b"b\n")
    });
    wait_for_logged("one history", &[&on_a, &on_b], || {
        dmv(&a, &["rev-parse", "HEAD"]) == dmv(&b, &["rev-parse", "HEAD"])
    });
    assert!(on_a.stop().success());
    assert!(on_b.stop().success());
    fsck_clean(&a);
    fsck_clean(&b);
}

/// A merge a person started stopped on a conflict: the watcher commits
/// nothing into it, yet goes on sending what was committed before it and
/// fetching others' work, which it merges once the person committed.
#[test]
fn a_person_s_merge_with_conflicts_holds_back_merging_not_sending_or_fetching() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let (a, hub, b) = two_replicas_of_a_hub(t);
    std::fs::write(a.join("from-a.txt"), "a\n").unwrap();
    commit_all(&a, "a's earlier work");
    dmv(&a, &["switch", "-c", "side"]);
    std::fs::write(a.join("first.txt"), "side\n").unwrap();
    commit_all(&a, "side");
    dmv(&a, &["switch", "main"]);
    std::fs::write(a.join("first.txt"), "main\n").unwrap();
    commit_all(&a, "main");
    assert_eq!(
        dmv_out(&a, &["merge", "side"]).status.code(),
        Some(1),
        "the merge stops on its conflict"
    );
    let before_merge = dmv(&a, &["rev-parse", "HEAD"]);

    let args = [
        "--quiet",
        "0.2",
        "--sync",
        "--sync-every",
        "3600",
        "--check-every",
        "0.5",
    ];
    let watcher = Watcher::start(&a, &args, &no_env);
    wait_for_logged("a's commits on the hub", &[&watcher], || {
        dmv(&hub, &["rev-parse", "main"]) == before_merge
    });
    wait_for("the watcher to say the merge waits", || {
        dmv(&a, &["watch", "--status"]).contains("waiting: a merge of side has 1 conflicted files")
    });
    dmv(&b, &["pull"]);
    assert!(b.join("from-a.txt").exists());
    std::fs::write(b.join("from-b.txt"), "b\n").unwrap();
    commit_all(&b, "b's work");
    dmv(&b, &["push"]);
    let b_head = dmv(&b, &["rev-parse", "HEAD"]);
    wait_for_logged("b's work fetched", &[&watcher], || {
        dmv(&a, &["rev-parse", "origin/main"]) == b_head
    });
    assert_eq!(
        dmv(&a, &["rev-parse", "HEAD"]),
        before_merge,
        "nothing was committed or merged into the person's merge"
    );
    assert!(!a.join("from-b.txt").exists() && dmv(&a, &["status"]).contains("first.txt"));

    // Settled: the watcher merges b's work and sends it all.
    std::fs::write(a.join("first.txt"), "both\n").unwrap();
    dmv(&a, &["add", "first.txt"]);
    dmv(&a, &["commit", "-m", "merge side"]);
    wait_for_logged("one history with b's work", &[&watcher], || {
        a.join("from-b.txt").exists()
            && dmv(&a, &["rev-parse", "HEAD"]) == dmv(&hub, &["rev-parse", "main"])
            && dmv(&a, &["status", "--short"]).is_empty()
    });
    assert!(watcher.stop().success());
    assert_eq!(
        std::fs::read_to_string(a.join("first.txt")).unwrap(),
        "both\n"
    );
    fsck_clean(&a);
}

/// Two watchers of one HTTP hub, told by the hub when it moves (a long
/// poll, `WaitRefs`): a change on one arrives on the other although each
/// syncs by its timer once an hour, and while every remote tells of news
/// neither lists the hub's refs every --check-every seconds.
#[test]
fn an_http_hub_tells_its_watchers_of_news_and_they_stop_polling_it() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    let hub = HttpServer::start(
        &format!("access_log = true\n[repos]\nhub = \"hub\"\n[tokens]\n\"{TOKEN}\" = \"write\"\n"),
        t,
        0,
    );
    let url = format!("http://127.0.0.1:{}/hub", hub.port);
    let token = |c: &mut Command| {
        c.env("DMV_TOKEN", TOKEN);
    };
    dmv(t, &["init", "a"]);
    let (a, b) = (t.join("a"), t.join("b"));
    std::fs::write(a.join("first.txt"), "first\n").unwrap();
    commit_all(&a, "first");
    dmv(&a, &["remote", "add", "origin", &url]);
    run_ok(&token, &a, &["push"]);
    run_ok(&token, t, &["clone", &url, "b"]);
    // Polling every half second, were the hub not telling.
    let args = [
        "--quiet",
        "0.2",
        "--sync",
        "--sync-every",
        "3600",
        "--check-every",
        "0.5",
    ];
    let on_a = Watcher::start(&a, &args, &token);
    let on_b = Watcher::start(&b, &args, &token);
    std::fs::write(a.join("from-a.txt"), "a\n").unwrap();
    wait_for_logged("from-a.txt on b", &[&on_a, &on_b], || {
        b.join("from-a.txt").exists()
    });
    std::fs::write(b.join("from-b.txt"), "b\n").unwrap();
    wait_for_logged("from-b.txt on a", &[&on_a, &on_b], || {
        a.join("from-b.txt").exists()
    });
    wait_for_logged("one history", &[&on_a, &on_b], || {
        dmv(&a, &["rev-parse", "HEAD"]) == dmv(&b, &["rev-parse", "HEAD"])
    });
    // Settled (the last push heard of and looked at), then idle: nothing but waits reaches the hub.
    std::thread::sleep(Duration::from_secs(3));
    let before = hub.log.lock().unwrap().len();
    std::thread::sleep(Duration::from_secs(4));
    let idle: Vec<String> = hub.log.lock().unwrap()[before..].to_vec();
    let polls = idle
        .iter()
        .filter(|l| l.contains("/dmv/") && !l.contains("/dmv/wait-refs"))
        .count();
    assert_eq!(polls, 0, "requests other than waits while idle: {idle:#?}");
    assert!(on_a.stop().success());
    assert!(on_b.stop().success());
    fsck_clean(&a);
    fsck_clean(&b);
}

/// A watcher in a meta clone applies the repository's rules as in a full
/// clone: ignored junk is never committed, and the absent files are not
/// taken for deletions.
#[test]
fn a_watcher_in_a_meta_clone_applies_the_repositorys_rules() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let studio = t.join("studio");
    dmv(t, &["init", "studio"]);
    std::fs::write(studio.join(".dmvignore"), "*.tmp\n.DS_Store\n").unwrap();
    std::fs::write(studio.join("photo.jpg"), b"a photo").unwrap();
    dmv(&studio, &["add", "."]);
    dmv(&studio, &["commit", "-m", "rules and a photo"]);
    dmv(
        t,
        &[
            "clone",
            "--slice",
            "meta",
            studio.to_str().unwrap(),
            "phone",
        ],
    );
    let phone = t.join("phone");
    let watcher = Watcher::start(&phone, &["--quiet", "0.3"], &no_env);
    for junk in ["render.tmp", ".DS_Store"] {
        std::fs::write(phone.join(junk), b"junk").unwrap();
    }
    std::fs::write(phone.join("notes.txt"), b"kept").unwrap();
    wait_for_logged("the commit of notes.txt", &[&watcher], || {
        messages(&phone).len() == 2
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(messages(&phone), ["1 added", "rules and a photo"]);
    let listed = dmv(&phone, &["ls", "--bytes"]);
    let states: Vec<(&str, &str)> = listed
        .lines()
        .map(|l| {
            (
                l.split_whitespace().next().unwrap(),
                l.split_whitespace().last().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("present", ".dmvignore"),
            ("present", "notes.txt"),
            ("absent", "photo.jpg")
        ],
        "{listed}"
    );
    assert!(watcher.stop().success());
}

/// A watcher takes the lock of a lockable file the moment it settles
/// changed (an editor saves it through a temporary file and a rename,
/// which a read-only file allows), and says at once, on its log and on
/// the desktop, when someone else holds it: once, not at every turn.
#[test]
fn a_watcher_takes_the_lock_of_a_changed_lockable_file_or_says_who_holds_it() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    let hub = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-ann\" = { access = \"write\", user = \"ann\" }\n\"tok-bo\" = { access = \"write\", user = \"bo\" }\n",
        t,
        0,
    );
    let url = format!("http://127.0.0.1:{}/hub", hub.port);
    dmv(t, &["init", "seed"]);
    let seed = t.join("seed");
    std::fs::write(seed.join(".dmvattributes"), "*.psd lockable\n").unwrap();
    std::fs::write(seed.join("cover.psd"), "layers v1").unwrap();
    std::fs::write(seed.join("back.psd"), "layers v1").unwrap();
    commit_all(&seed, "seed");
    dmv(&seed, &["push", t.join("hub").to_str().unwrap(), "main"]);
    let as_user = |token: &'static str| {
        move |c: &mut Command| {
            c.env("DMV_TOKEN", token);
        }
    };
    let (ann_env, bo_env) = (as_user("tok-ann"), as_user("tok-bo"));
    run_ok(&ann_env, t, &["clone", &url, "ann"]);
    run_ok(&bo_env, t, &["clone", &url, "bo"]);
    let (ann, bo) = (t.join("ann"), t.join("bo"));
    run_ok(&bo_env, &bo, &["lock", "back.psd"]);
    // The desktop's notifier, as the watcher finds it on PATH: it writes what it was told.
    let bin_dir = t.join("desktop");
    std::fs::create_dir(&bin_dir).unwrap();
    let told = t.join("notified.txt");
    let notifier = bin_dir.join("notify-send");
    std::fs::write(
        &notifier,
        format!("#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n", told.display()),
    )
    .unwrap();
    std::fs::set_permissions(&notifier, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let watch_env = move |c: &mut Command| {
        c.env("DMV_TOKEN", "tok-ann").env("PATH", &path);
    };
    let on_ann = Watcher::start(&ann, &["--quiet", "0.3"], &watch_env);
    // Saved as an editor saves: a new file renamed over the read-only one.
    let save = |name: &str, text: &str| {
        let temp = ann.join(format!(".{name}.tmp"));
        std::fs::write(&temp, text).unwrap();
        std::fs::rename(&temp, ann.join(name)).unwrap();
    };
    save("cover.psd", "layers v2 by ann");
    wait_for_logged("ann's lock of cover.psd", &[&on_ann], || {
        on_ann.log().contains("locked cover.psd for you")
    });
    let locks = run_ok(&bo_env, &bo, &["locks"]);
    assert!(locks.contains("cover.psd\tann"), "{locks}");
    let refused = dmv_cmd(&bo)
        .env("DMV_TOKEN", "tok-bo")
        .args(["lock", "cover.psd"])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "ann holds it now");
    save("back.psd", "layers v2 by ann");
    wait_for_logged("the word that bo holds back.psd", &[&on_ann], || {
        on_ann.log().contains("back.psd is locked by bo")
    });
    wait_for("the desktop to be told", || {
        std::fs::read_to_string(&told).is_ok_and(|s| s.contains("back.psd is locked by bo"))
    });
    // Another change of it is not said again.
    let commits = || on_ann.log().matches("committed ").count();
    let before = commits();
    save("back.psd", "layers v3 by ann");
    save("cover.psd", "layers v3 by ann");
    wait_for_logged("the next commit", &[&on_ann], || commits() > before);
    assert_eq!(
        on_ann.log().matches("back.psd is locked by bo").count(),
        1,
        "{}",
        on_ann.log()
    );
    assert_eq!(std::fs::read_to_string(&told).unwrap().lines().count(), 1);
    assert_eq!(on_ann.log().matches("locked cover.psd for you").count(), 1);
    assert!(on_ann.stop().success());
}
