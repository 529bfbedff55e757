//! Eight at once: processes committing to one branch of one repository,
//! and clients pushing to one remote over HTTP, ssh and object storage.
//! Every commit that reports success stays in the history, every push lands
//! or is refused with a line that says to pull, nothing accepted is lost,
//! and fsck is clean on every side.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::needs::{lacks, Need};
use common::remote::{commit_all, fsck_clean, ok, one_line_error};
use common::servers::{HttpServer, S3Server, Sshd};
use common::*;

const N: usize = 8;

/// `dmv` commands run one after another in a shell, started now in `dir`.
fn spawn_script(dir: &Path, script: &str, env: &dyn Fn(&mut Command)) -> Child {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .env("DMV", bin())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.env("DMV_AUTHOR_NAME", "Test")
        .env("DMV_AUTHOR_EMAIL", "test@example.com");
    env(&mut cmd);
    cmd.spawn().unwrap()
}

fn short_ids(dir: &Path) -> Vec<String> {
    dmv(dir, &["log", "--oneline"])
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn eight_processes_committing_to_one_branch_lose_no_commit() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("base.txt"), "base\n").unwrap();
    commit_all(d, "base");
    for i in 0..N {
        write_noise(&d.join(format!("f{i}.raw")), 300 << 10, i as u64 + 1);
    }
    let runs: Vec<Child> = (0..N)
        .map(|i| {
            spawn_script(
                d,
                &format!("\"$DMV\" add f{i}.raw && \"$DMV\" commit -m c{i}"),
                &|_| {},
            )
        })
        .collect();
    let outs: Vec<Output> = runs
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let history = short_ids(d);
    let mut landed = 0;
    for (i, out) in outs.iter().enumerate() {
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            // "[main 0123456789ab] cI": that commit is in the history.
            let id = said
                .split_whitespace()
                .nth(1)
                .unwrap()
                .trim_end_matches(']')
                .to_string();
            assert!(
                history.contains(&id),
                "commit {i} ({said}) is not in the history:\n{}",
                history.join("\n")
            );
            landed += 1;
        } else {
            // Another process committed this one's staged file with its own.
            assert!(
                said.contains("nothing to commit") || said.contains("nothing added to commit"),
                "commit {i} failed: {said}{}",
                stderr(out)
            );
        }
    }
    eprintln!("{landed} of {N} commits landed");
    assert!(
        landed >= 1 && history.len() == landed + 1,
        "{landed} commits reported, history has {}",
        history.len()
    );
    for i in 0..N {
        let name = format!("f{i}.raw");
        assert!(
            dmv_out(d, &["cat", &format!("HEAD:{name}")]).stdout
                == std::fs::read(d.join(&name)).unwrap(),
            "{name} is not in HEAD"
        );
    }
    assert_eq!(dmv(d, &["status", "--short"]), "");
    fsck_clean(d);
}

/// Eight clones of `url` each commit a file of their own and push at once;
/// the refused ones pull and push until theirs lands; a ninth clone then
/// holds every file.
fn eight_pushers(t: &Path, url: &str, extra: &[&str], env: &dyn Fn(&mut Command)) {
    let with_env = |dir: &Path, args: &[&str]| {
        let mut cmd = dmv_cmd(dir);
        cmd.args(args);
        env(&mut cmd);
        cmd.output().unwrap()
    };
    for i in 0..N {
        let mut args = vec!["clone", url];
        let name = format!("c{i}");
        args.push(&name);
        args.extend(extra);
        ok(&with_env(t, &args));
        let c = t.join(&name);
        write_noise(&c.join(format!("from-{i}.raw")), 400 << 10, 100 + i as u64);
        commit_all(&c, &format!("from {i}"));
    }
    let pushes: Vec<Child> = (0..N)
        .map(|i| spawn_script(&t.join(format!("c{i}")), "\"$DMV\" push", env))
        .collect();
    let mut pending = Vec::new();
    for (i, p) in pushes.into_iter().enumerate() {
        let out = p.wait_with_output().unwrap();
        if !out.status.success() {
            let line = one_line_error(&out);
            assert!(line.contains("pull"), "push {i} failed otherwise: {line}");
            pending.push(i);
        }
    }
    eprintln!("{} of {N} pushes refused at first", pending.len());
    assert!(pending.len() < N, "no push landed");
    // The refused ones pull (a merge) and push again until each lands.
    for _ in 0..N {
        pending.retain(|i| {
            let c = t.join(format!("c{i}"));
            ok(&with_env(&c, &["pull"]));
            let out = with_env(&c, &["push"]);
            !out.status.success()
        });
    }
    assert!(pending.is_empty(), "pushes that never landed: {pending:?}");
    let mut args = vec!["clone", url, "check"];
    args.extend(extra);
    ok(&with_env(t, &args));
    let check = t.join("check");
    for i in 0..N {
        let name = format!("from-{i}.raw");
        assert!(
            std::fs::read(check.join(&name)).unwrap()
                == std::fs::read(t.join(format!("c{i}")).join(&name)).unwrap(),
            "{name} was lost"
        );
    }
    fsck_clean(&check);
}

fn seeded_hub(t: &Path) -> std::path::PathBuf {
    let seed = t.join("seed");
    std::fs::create_dir(&seed).unwrap();
    dmv(&seed, &["init"]);
    std::fs::write(seed.join("readme.txt"), "shared\n").unwrap();
    commit_all(&seed, "seed");
    dmv(t, &["init", "--bare", "hub"]);
    let hub = t.join("hub");
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    hub
}

#[test]
fn eight_clients_pushing_to_one_http_remote_lose_nothing() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    eight_pushers(t, &server.url("hub"), &["--token", "w"], &|_| {});
    fsck_clean(&hub);
}

#[test]
fn eight_clients_pushing_to_one_ssh_remote_lose_nothing() {
    if lacks(&[Need::Sshd]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let sshd = Sshd::start();
    eight_pushers(t, &sshd.url(&hub), &[], &|c| sshd.env(c));
    fsck_clean(&hub);
}

#[test]
fn eight_clients_pushing_to_one_bucket_lose_nothing() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let minio = S3Server::minio();
    minio.create_bucket("crowd");
    let seed = t.join("seed");
    dmv(
        &seed,
        &[
            "remote",
            "add",
            "bucket",
            "s3://crowd/hub",
            "--endpoint",
            &minio.endpoint(),
        ],
    );
    let mut push = dmv_cmd(&seed);
    push.args(["push", "bucket", "main"]);
    minio.env(&mut push);
    ok(&push.output().unwrap());
    eight_pushers(
        t,
        "s3://crowd/hub",
        &["--endpoint", &minio.endpoint()],
        &|c| minio.env(c),
    );
    fsck_clean(&hub);
}
