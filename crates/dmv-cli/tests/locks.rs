//! Exclusive path locks on every transport: who holds what, lockable files
//! read-only until locked, commits and pushes over someone else's lock
//! refused (by the client, and by the server when a lock comes between the
//! client's check and the ref update), admins breaking locks, and two
//! clients locking one path at the same moment.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::{HttpServer, S3Server, Sshd};
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A working replica and how its commands reach the remote as one person.
struct Client<'a> {
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
    setup: &'a dyn Fn(&mut Command),
}

impl Client<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = dmv_cmd(&self.dir);
        c.args(args);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        (self.setup)(&mut c);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        ok(&out);
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "{args:?} should fail: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        one_line_error(&out)
    }

    fn locks(&self) -> Vec<serde_json::Value> {
        serde_json::from_str::<Vec<serde_json::Value>>(&self.ok(&["locks", "--json"])).unwrap()
    }
}

fn writable(path: &Path) -> bool {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o222 != 0
}

/// A bare hub holding one commit: a lockable `cover.psd` and a plain `notes.txt`.
fn seeded_hub(t: &Path) -> PathBuf {
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let seed = t.join("seed");
    dmv(t, &["init", seed.to_str().unwrap()]);
    std::fs::write(seed.join(".dmvattributes"), "*.psd lockable\n").unwrap();
    std::fs::write(seed.join("cover.psd"), "layers v1").unwrap();
    std::fs::write(seed.join("notes.txt"), "notes v1").unwrap();
    commit_all(&seed, "seed");
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    hub
}

fn clone(t: &Path, url: &str, name: &str, extra: &[&str], setup: &dyn Fn(&mut Command)) -> PathBuf {
    let mut c = dmv_cmd(t);
    c.args(["clone", url, name]).args(extra);
    setup(&mut c);
    ok(&c.output().unwrap());
    t.join(name)
}

fn edit(dir: &Path, file: &str, content: &str) {
    let path = dir.join(file);
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_mode(perms.mode() | 0o200);
    std::fs::set_permissions(&path, perms).unwrap();
    std::fs::write(path, content).unwrap();
}

fn packs(hub: &Path) -> usize {
    files_under(&hub.join(".dmv/objects"))
}

const TOKENS: &str = "[tokens]\n\"tok-alice\" = { access = \"write\", user = \"alice\" }\n\"tok-bob\" = { access = \"write\", user = \"bob\" }\n\"tok-boss\" = { access = \"admin\", user = \"boss\" }\n\"tok-read\" = \"read\"\n\"tok-anon\" = \"write\"\n";

#[test]
fn locks_over_http_hold_across_branches_and_stop_other_peoples_commits_and_pushes() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let mut server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let url = server.url("hub");
    let none = |_: &mut Command| {};
    let alice = Client {
        dir: clone(t, &url, "alice", &["--token", "tok-alice"], &none),
        env: vec![],
        setup: &none,
    };
    let bob = Client {
        dir: clone(t, &url, "bob", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };

    // Lockable files are read-only in every working tree until locked.
    for c in [&alice, &bob] {
        assert!(!writable(&c.dir.join("cover.psd")), "cover.psd is lockable");
        assert!(writable(&c.dir.join("notes.txt")));
    }

    // Bob changes cover.psd while nobody holds it: his commit asks the server and goes through.
    edit(&bob.dir, "cover.psd", "layers v2 by bob");
    bob.ok(&["commit", "-a", "-m", "bob's retouch"]);

    assert_eq!(alice.ok(&["lock", "cover.psd"]).trim(), "Locked cover.psd");
    assert!(
        writable(&alice.dir.join("cover.psd")),
        "a held lockable file is writable"
    );
    let err = bob.fails(&["lock", "cover.psd"]);
    assert!(err.contains("cover.psd is locked by alice"), "{err}");
    let listed = bob.locks();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0]["path"].as_str(),
            listed[0]["owner"].as_str(),
            listed[0]["mine"].as_bool()
        ),
        (Some("cover.psd"), Some("alice"), Some(false))
    );
    assert!(
        listed[0]["replica"].as_str().unwrap().contains("alice"),
        "the lock names the replica it came from"
    );
    assert_eq!(alice.ok(&["locks", "--mine"]).lines().count(), 1);
    assert_eq!(bob.ok(&["locks", "--mine"]), "");

    // Bob's commit from before the lock is refused at push, on any branch, and nothing lands.
    let (main_before, packs_before) = (head_of(&hub, "main"), packs(&hub));
    for target in ["main", "HEAD:side"] {
        let err = bob.fails(&["push", "origin", target]);
        assert!(
            err.contains("cover.psd is locked by alice") && err.contains("push refused"),
            "{err}"
        );
    }
    assert_eq!(head_of(&hub, "main"), main_before);
    assert!(!dmv(&hub, &["branch"]).contains("side"));
    assert_eq!(packs(&hub), packs_before, "a refused push sends nothing");

    // status names the holder of a changed file; a new commit to it is refused outright.
    edit(&bob.dir, "cover.psd", "layers v3 by bob");
    assert!(bob.ok(&["status"]).contains("cover.psd\tlocked by alice"));
    // As `status --json` says it, for a script.
    let said: serde_json::Value = serde_json::from_str(&bob.ok(&["status", "--json"])).unwrap();
    let locked = said["locked_by_others"].as_array().unwrap();
    assert_eq!(
        (locked.len(), &locked[0]["path"], &locked[0]["owner"]),
        (
            1,
            &serde_json::json!("cover.psd"),
            &serde_json::json!("alice")
        ),
        "{said}"
    );
    let head = head_of(&bob.dir, "HEAD");
    let err = bob.fails(&["commit", "-a", "-m", "over the lock"]);
    assert!(
        err.contains("cannot commit: cover.psd is locked by alice"),
        "{err}"
    );
    assert_eq!(head_of(&bob.dir, "HEAD"), head);
    // Other files stay free: notes.txt commits and pushes.
    bob.ok(&["restore", "cover.psd"]);
    bob.ok(&["reset", "--hard", "origin/main"]);
    edit(&bob.dir, "notes.txt", "notes by bob");
    bob.ok(&["commit", "-a", "-m", "notes"]);
    bob.ok(&["push", "origin", "main"]);

    // Only the holder or an admin releases a lock; read tokens and nameless tokens take none.
    assert!(bob
        .fails(&["unlock", "cover.psd"])
        .contains("only they can unlock it"));
    assert!(bob
        .fails(&["unlock", "--force", "cover.psd"])
        .contains("needs an admin"));
    assert!(
        bob.run(&["lock", "x.psd"]).status.success()
            && bob.ok(&["unlock", "x.psd"]).contains("Unlocked x.psd")
    );
    let reader = Client {
        dir: bob.dir.clone(),
        env: vec![("DMV_TOKEN", "tok-read".into())],
        setup: &none,
    };
    let err = reader.fails(&["lock", "y.psd"]);
    assert!(err.contains("may read but not write"), "{err}");
    let anon = Client {
        dir: bob.dir.clone(),
        env: vec![("DMV_TOKEN", "tok-anon".into())],
        setup: &none,
    };
    assert!(anon
        .fails(&["lock", "y.psd"])
        .contains("does not know who you are"));
    let boss = Client {
        dir: bob.dir.clone(),
        env: vec![("DMV_TOKEN", "tok-boss".into())],
        setup: &none,
    };
    assert_eq!(
        boss.ok(&["unlock", "--force", "cover.psd"]).trim(),
        "Unlocked cover.psd"
    );
    assert!(bob.locks().is_empty());

    // Without the server, a commit to a lockable file warns and goes on.
    bob.ok(&["pull", "origin", "main"]);
    server.kill();
    edit(&bob.dir, "cover.psd", "layers v4 offline");
    let out = bob.run(&["commit", "-a", "-m", "offline"]);
    ok(&out);
    assert!(
        stderr(&out).contains("warning: could not ask origin"),
        "{}",
        stderr(&out)
    );
    fsck_clean(&hub);
}

#[test]
fn the_server_refuses_a_push_over_a_lock_taken_after_the_clients_check() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let url = server.url("hub");
    let none = |_: &mut Command| {};
    let alice = Client {
        dir: clone(t, &url, "alice", &["--token", "tok-alice"], &none),
        env: vec![],
        setup: &none,
    };
    let bob = Client {
        dir: clone(t, &url, "bob", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };
    edit(&bob.dir, "cover.psd", "bob's version");
    bob.ok(&["commit", "-a", "-m", "retouch"]);
    let main_before = head_of(&hub, "main");
    // Bob's push has checked the locks (none) and is about to upload; alice locks now.
    let paused = Paused::start(bob.cmd(&["push", "origin", "main"]), "push-locks-checked");
    alice.ok(&["lock", "cover.psd"]);
    let out = paused.resume();
    assert!(!out.status.success());
    let err = one_line_error(&out);
    assert!(
        err.contains("push refused: cover.psd is locked by alice")
            && err.contains("nothing was updated"),
        "{err}"
    );
    assert_eq!(
        head_of(&hub, "main"),
        main_before,
        "the branch did not move"
    );
    // A merge that only takes the holder's version is no change of bob's: it pushes.
    alice.ok(&["unlock", "cover.psd"]);
    bob.ok(&["push", "origin", "main"]);
    fsck_clean(&hub);
}

#[test]
fn locks_over_ssh_name_the_ssh_user_and_its_repository_owner_may_break_them() {
    if lacks(&[Need::Sshd]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let sshd = Sshd::start();
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let ssh_env = |c: &mut Command| sshd.env(c);
    let none = |_: &mut Command| {};
    let over_ssh = Client {
        dir: clone(t, &sshd.url(&hub), "ssh-user", &[], &ssh_env),
        env: vec![],
        setup: &ssh_env,
    };
    let alice = Client {
        dir: clone(
            t,
            &server.url("hub"),
            "alice",
            &["--token", "tok-alice"],
            &none,
        ),
        env: vec![],
        setup: &none,
    };
    assert!(!writable(&over_ssh.dir.join("cover.psd")));

    over_ssh.ok(&["lock", "notes.txt"]);
    let me = over_ssh.locks()[0]["owner"].as_str().unwrap().to_string();
    let account =
        String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    assert_eq!(
        me,
        account.trim(),
        "over ssh the lock's owner is the ssh user"
    );
    assert!(alice
        .fails(&["lock", "notes.txt"])
        .contains(&format!("notes.txt is locked by {me}")));

    alice.ok(&["lock", "cover.psd"]);
    edit(&over_ssh.dir, "cover.psd", "ssh user's version");
    let err = over_ssh.fails(&["commit", "-a", "-m", "over alice's lock"]);
    assert!(err.contains("cover.psd is locked by alice"), "{err}");
    // Committed anyway (the check is skipped without lockable patterns or known locks): the push is refused.
    std::fs::remove_file(over_ssh.dir.join(".dmv/locks-known")).unwrap();
    std::fs::write(over_ssh.dir.join(".dmvattributes"), "").unwrap();
    over_ssh.ok(&["commit", "-a", "-m", "over alice's lock"]);
    let main_before = head_of(&hub, "main");
    let err = over_ssh.fails(&["push", "origin", "main"]);
    assert!(
        err.contains("push refused: cover.psd is locked by alice"),
        "{err}"
    );
    assert_eq!(head_of(&hub, "main"), main_before);
    // The account that owns the repository is its admin.
    assert_eq!(
        over_ssh.ok(&["unlock", "--force", "cover.psd"]).trim(),
        "Unlocked cover.psd"
    );
    over_ssh.ok(&["push", "origin", "main"]);
    fsck_clean(&hub);
}

#[test]
fn locks_in_a_bucket_are_conditional_objects_that_hold_across_clients() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    seeded_hub(t);
    let minio = S3Server::minio();
    minio.create_bucket("locks");
    let s3_env = |c: &mut Command| minio.env(c);
    let seed = Client {
        dir: t.join("seed"),
        env: vec![],
        setup: &s3_env,
    };
    seed.ok(&[
        "remote",
        "add",
        "origin",
        "s3://locks/studio",
        "--endpoint",
        &minio.endpoint(),
    ]);
    seed.ok(&["push", "origin", "main"]);
    let clone_as = |name: &'static str| Client {
        dir: clone(
            t,
            "s3://locks/studio",
            name,
            &["--endpoint", &minio.endpoint()],
            &s3_env,
        ),
        env: vec![("DMV_AUTHOR_NAME", name.to_string())],
        setup: &s3_env,
    };
    let (alice, bob) = (clone_as("alice"), clone_as("bob"));
    assert!(!writable(&bob.dir.join("cover.psd")));
    edit(&bob.dir, "cover.psd", "bob's version");
    bob.ok(&["commit", "-a", "-m", "retouch"]);

    alice.ok(&["lock", "cover.psd"]);
    assert_eq!(
        minio.list("locks", "studio/path-locks/").len(),
        1,
        "one lock object"
    );
    assert!(bob
        .fails(&["lock", "cover.psd", "notes.txt"])
        .contains("cover.psd is locked by alice"));
    assert!(
        bob.locks().iter().all(|l| l["path"] == "cover.psd"),
        "all or nothing: notes.txt was not kept"
    );
    let err = bob.fails(&["push", "origin", "main"]);
    assert!(
        err.contains("push refused: cover.psd is locked by alice"),
        "{err}"
    );
    assert!(bob
        .fails(&["unlock", "cover.psd"])
        .contains("only they can unlock it"));
    bob.ok(&["unlock", "--force", "cover.psd"]);
    assert!(minio.list("locks", "studio/path-locks/").is_empty());
    bob.ok(&["push", "origin", "main"]);
}

/// Two clients lock one path at the same moment, round after round: exactly one wins each.
fn race(a: &Client, b: &Client, prefix: &str, rounds: usize) {
    for round in 0..rounds {
        let path = format!("{prefix}-{round}.psd");
        let (mut ca, mut cb) = (a.cmd(&["lock", &path]), b.cmd(&["lock", &path]));
        let (pa, pb) = (
            ca.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
            cb.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let (oa, ob) = (
            pa.wait_with_output().unwrap(),
            pb.wait_with_output().unwrap(),
        );
        assert!(
            oa.status.success() != ob.status.success(),
            "round {round}: exactly one wins ({} / {})",
            stderr(&oa),
            stderr(&ob)
        );
        let loser = if oa.status.success() { &ob } else { &oa };
        assert!(
            one_line_error(loser).contains("is locked by"),
            "{}",
            stderr(loser)
        );
        let holders: Vec<_> = a
            .locks()
            .into_iter()
            .filter(|l| l["path"] == path.as_str())
            .collect();
        assert_eq!(holders.len(), 1);
        let winner = if oa.status.success() { a } else { b };
        assert_eq!(
            holders[0]["replica"].as_str().unwrap().rsplit(':').next(),
            winner.dir.canonicalize().unwrap().to_str(),
            "the lock is the winner's"
        );
    }
}

#[test]
fn two_clients_locking_one_path_at_once_exactly_one_wins_on_every_transport() {
    if lacks(&[Need::Sshd, Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let none = |_: &mut Command| {};
    let server = HttpServer::start(
        &format!("[repos]\nhub = \"hub\"\nsealed = {{ sealed = \"sealed\" }}\n{TOKENS}"),
        t,
        0,
    );
    let url = server.url("hub");
    let http_a = Client {
        dir: clone(t, &url, "http-a", &["--token", "tok-alice"], &none),
        env: vec![],
        setup: &none,
    };
    let http_b = Client {
        dir: clone(t, &url, "http-b", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };
    race(&http_a, &http_b, "http", 8);

    // A repository the server keeps sealed: the clients take the locks.
    let device = t.join("device");
    let sealed_env = |c: &mut Command| {
        c.env("XDG_CONFIG_HOME", &device)
            .env("DMV_TOKEN", "tok-alice")
            .env_remove("DMV_PASSPHRASE");
    };
    let seed = Client {
        dir: t.join("seed"),
        env: vec![],
        setup: &sealed_env,
    };
    let sealed_url = server.url("sealed");
    seed.ok(&["remote", "add", "sealed", &sealed_url, "--encrypt"]);
    seed.ok(&["push", "sealed", "main"]);
    let sealed_as = |name: &'static str| Client {
        dir: clone(t, &sealed_url, name, &[], &sealed_env),
        env: vec![("DMV_AUTHOR_NAME", name.to_string())],
        setup: &sealed_env,
    };
    race(&sealed_as("sealed-a"), &sealed_as("sealed-b"), "sealed", 8);

    // Over ssh both are the same account, from two replicas: still one holder.
    let sshd = Sshd::start();
    let ssh_env = |c: &mut Command| sshd.env(c);
    let ssh_a = Client {
        dir: clone(t, &sshd.url(&hub), "ssh-a", &[], &ssh_env),
        env: vec![],
        setup: &ssh_env,
    };
    let ssh_b = Client {
        dir: clone(t, &sshd.url(&hub), "ssh-b", &[], &ssh_env),
        env: vec![],
        setup: &ssh_env,
    };
    race(&ssh_a, &ssh_b, "ssh", 8);

    let minio = S3Server::minio();
    minio.create_bucket("race");
    let s3_env = |c: &mut Command| minio.env(c);
    let seed = Client {
        dir: t.join("seed"),
        env: vec![],
        setup: &s3_env,
    };
    seed.ok(&[
        "remote",
        "add",
        "bucket",
        "s3://race/r",
        "--endpoint",
        &minio.endpoint(),
    ]);
    seed.ok(&["push", "bucket", "main"]);
    let s3_as = |name: &'static str| Client {
        dir: clone(
            t,
            "s3://race/r",
            name,
            &["--endpoint", &minio.endpoint()],
            &s3_env,
        ),
        env: vec![("DMV_AUTHOR_NAME", name.to_string())],
        setup: &s3_env,
    };
    let (s3_a, s3_b) = (s3_as("s3-a"), s3_as("s3-b"));
    race(&s3_a, &s3_b, "s3", 8);
}

/// Alice locks cover.psd and pushes a new version. Bob, without `--force`
/// to any lock, tried every route back to his old version: a merge of a side
/// branch from before her change with the file restored from it and the
/// merge amended (each commit "unchanged" against one parent), a reset and
/// a force push, a new branch, deleting the only branch holding her
/// version. The server compares what each branch holds before and after:
/// every one is refused, and the hub's branches stay as they were.
#[test]
fn a_locked_path_never_changes_on_a_branch_whatever_route_the_change_takes() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let url = server.url("hub");
    let none = |_: &mut Command| {};
    let alice = Client {
        dir: clone(t, &url, "alice", &["--token", "tok-alice"], &none),
        env: vec![],
        setup: &none,
    };
    let bob = Client {
        dir: clone(t, &url, "bob", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };
    let seed = head_of(&bob.dir, "HEAD");
    bob.ok(&["switch", "-c", "side"]);
    edit(&bob.dir, "notes.txt", "notes on the side");
    bob.ok(&["commit", "-a", "-m", "side notes"]);
    bob.ok(&["switch", "main"]);

    alice.ok(&["lock", "cover.psd"]);
    edit(&alice.dir, "cover.psd", "layers v2 by alice");
    alice.ok(&["commit", "-a", "-m", "alice's retouch"]);
    // Kept past the push, which would give it back once her change landed.
    alice.ok(&["push", "--keep-locks", "origin", "main"]);
    let held = head_of(&hub, "main");
    let held_by_alice = |hub: &Path| dmv(hub, &["cat", "main:cover.psd"]) == "layers v2 by alice";

    // A merge of the side, the file restored from it, the merge amended.
    bob.ok(&["pull", "origin", "main"]);
    bob.ok(&["merge", "side"]);
    bob.ok(&["restore", "--source", "side", "cover.psd"]);
    // His commit asks first and refuses; committed anyway (without lockable
    // patterns or known locks it is not asked), the server must hold.
    assert!(bob
        .fails(&["commit", "--amend", "-a", "-m", "merge side"])
        .contains("cover.psd is locked by alice"));
    std::fs::remove_file(bob.dir.join(".dmv/locks-known")).unwrap();
    std::fs::write(bob.dir.join(".dmvattributes"), "").unwrap();
    bob.ok(&["commit", "--amend", "-a", "-m", "merge side"]);
    assert_eq!(dmv(&bob.dir, &["cat", "HEAD:cover.psd"]), "layers v1");
    let err = bob.fails(&["push", "origin", "main"]);
    assert!(
        err.contains("push refused: cover.psd is locked by alice")
            && err.contains("main would hold another version of it"),
        "{err}"
    );
    // A reset to before her change, force-pushed.
    bob.ok(&["reset", "--hard", &seed]);
    let err = bob.fails(&["push", "--force", "origin", "main"]);
    assert!(
        err.contains("push refused: cover.psd is locked by alice"),
        "{err}"
    );
    // A new branch holding a version no branch holds; then deleting main, the only one holding hers.
    let err = bob.fails(&["push", "origin", "HEAD:old-cover"]);
    assert!(
        err.contains("new branch holding a version of it no branch holds"),
        "{err}"
    );
    let err = bob.fails(&["push", "--delete", "origin", "main"]);
    assert!(
        err.contains("be deleted, and no other branch holds its version"),
        "{err}"
    );
    assert_eq!(head_of(&hub, "main"), held);
    assert!(held_by_alice(&hub));
    assert!(!dmv(&hub, &["branch"]).contains("old-cover"));

    // What changes nothing of hers still lands: a branch holding her version, and its deletion.
    bob.ok(&["fetch", "origin"]);
    bob.ok(&["push", "origin", "origin/main:copy"]);
    bob.ok(&["push", "--delete", "origin", "copy"]);
    // Once she unlocks, the same force push goes through.
    alice.ok(&["unlock", "cover.psd"]);
    bob.ok(&["push", "--force", "origin", "main"]);
    assert_eq!(dmv(&hub, &["cat", "main:cover.psd"]), "layers v1");
    fsck_clean(&hub);
}

/// Two servers in front of one bucket: while a push through one had
/// checked the locks and not yet moved the ref, a lock on a file it
/// changes was granted through the other, and the push then landed (3 of
/// 12 trials). The push is held here between its check and its swap; the
/// lock taken meanwhile is answered only once the push is over, so it
/// holds the pushed version.
#[test]
fn a_lock_through_one_server_of_a_tier_waits_for_a_push_through_another() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    seeded_hub(t);
    let minio = S3Server::minio();
    minio.create_bucket("tier");
    let seed = t.join("seed");
    let mut push = dmv_cmd(&seed);
    minio.env(&mut push);
    ok(&push
        .env("AWS_ENDPOINT_URL", minio.endpoint())
        .args(["push", "s3://tier/hub", "main"])
        .output()
        .unwrap());
    let config = t.join("tier.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nhub = {{ url = \"s3://tier/hub\", endpoint = \"{}\" }}\n{TOKENS}",
            minio.endpoint()
        ),
    )
    .unwrap();
    let pause = t.join("paused");
    let pausepoint = format!("relay-locks-checked:{}", pause.display());
    let credentials = [
        ("AWS_ACCESS_KEY_ID", common::servers::MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", common::servers::MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let first = HttpServer::start_with_env(
        &config,
        0,
        &[
            credentials.as_slice(),
            &[("DMV_PAUSEPOINT", pausepoint.as_str())],
        ]
        .concat(),
    );
    let second = HttpServer::start_with_env(&config, 0, &credentials);
    let none = |_: &mut Command| {};
    let bob = Client {
        dir: clone(t, &first.url("hub"), "bob", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };
    let alice = Client {
        dir: clone(
            t,
            &second.url("hub"),
            "alice",
            &["--token", "tok-alice"],
            &none,
        ),
        env: vec![],
        setup: &none,
    };
    edit(&bob.dir, "cover.psd", "bob's version");
    bob.ok(&["commit", "-a", "-m", "retouch"]);

    let pushing = bob
        .cmd(&["push", "origin", "main"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !pause.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the push never reached its swap"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut locking = alice
        .cmd(&["lock", "cover.psd"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(locking.try_wait().unwrap().is_none(), "the lock was granted while a push that changes its file was between its check and its swap");
    std::fs::remove_file(&pause).unwrap();
    ok(&pushing.wait_with_output().unwrap());
    ok(&locking.wait_with_output().unwrap());
    // The lock holds the version the push landed.
    alice.ok(&["pull", "origin", "main"]);
    assert_eq!(
        std::fs::read_to_string(alice.dir.join("cover.psd")).unwrap(),
        "bob's version"
    );
    let held = bob.locks();
    assert!(held.len() == 1 && held[0]["owner"] == "alice", "{held:?}");
    assert!(
        minio.list("tier", "hub/ref-moves/").is_empty(),
        "every announced move was withdrawn"
    );
}

/// The lock workflow a studio expects: a push that lands a change of a
/// file you hold gives its lock back (unless `--keep-locks` or
/// `lock.releaseOnPush` says not to), locks of files left unchanged stay
/// and `locks --stale` finds them once they have been forgotten.
#[test]
fn a_landed_change_gives_its_lock_back_and_forgotten_locks_are_found() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let _hub = seeded_hub(t);
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let url = server.url("hub");
    let none = |_: &mut Command| {};
    let alice = Client {
        dir: clone(t, &url, "alice", &["--token", "tok-alice"], &none),
        env: vec![],
        setup: &none,
    };
    let bob = Client {
        dir: clone(t, &url, "bob", &["--token", "tok-bob"], &none),
        env: vec![],
        setup: &none,
    };
    let edited = alice.ok(&["edit", "cover.psd", "notes.txt"]);
    assert!(
        edited.contains("cover.psd") && edited.contains("notes.txt"),
        "{edited}"
    );
    assert!(
        writable(&alice.dir.join("cover.psd")),
        "edit makes it writable"
    );
    std::fs::write(alice.dir.join("cover.psd"), "layers v2 by alice").unwrap();
    alice.ok(&["commit", "-a", "-m", "alice's retouch"]);
    let out = alice.run(&["push"]);
    ok(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("Unlocked cover.psd (its change landed)"),
        "{said}"
    );
    assert!(!said.contains("Unlocked notes.txt"), "{said}");
    let held: Vec<String> = alice
        .locks()
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                l["path"].as_str().unwrap(),
                l["owner"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(held, ["notes.txt alice"], "the unchanged file's lock stays");
    assert!(
        !writable(&alice.dir.join("cover.psd")),
        "a lockable file given back is read-only again"
    );
    assert_eq!(bob.ok(&["lock", "cover.psd"]).trim(), "Locked cover.psd");

    // --keep-locks, and lock.releaseOnPush false, keep it.
    std::fs::write(alice.dir.join("notes.txt"), "notes v2").unwrap();
    alice.ok(&["commit", "-a", "-m", "notes"]);
    let out = alice.run(&["push", "--keep-locks"]);
    ok(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Unlocked"));
    alice.ok(&["config", "lock.releaseOnPush", "false"]);
    std::fs::write(alice.dir.join("notes.txt"), "notes v3").unwrap();
    alice.ok(&["commit", "-a", "-m", "notes again"]);
    alice.ok(&["push"]);
    assert_eq!(alice.ok(&["locks", "--mine"]).lines().count(), 1);

    // A lock on a file untouched for ten days is stale at 7 days, not at 30.
    assert_eq!(alice.ok(&["locks", "--stale"]), "");
    let ten_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(alice.dir.join("notes.txt"))
        .unwrap()
        .set_modified(ten_days_ago)
        .unwrap();
    let stale = alice.ok(&["locks", "--stale"]);
    assert!(stale.starts_with("notes.txt\talice"), "{stale}");
    assert_eq!(alice.ok(&["locks", "--stale", "30"]), "");
    assert_eq!(bob.ok(&["locks", "--stale"]), "", "only your own");
    // A change not yet committed is no forgotten lock.
    std::fs::write(alice.dir.join("notes.txt"), "notes v4").unwrap();
    std::fs::File::options()
        .write(true)
        .open(alice.dir.join("notes.txt"))
        .unwrap()
        .set_modified(ten_days_ago)
        .unwrap();
    assert_eq!(alice.ok(&["locks", "--stale"]), "");
}

/// A running `dmv watch` leaves a changed lockable file someone else holds
/// out of its commits (said once in its log) while committing and pushing
/// everything else; once the holder unlocks it, the watcher takes the lock
/// and commits it. A real hub, two replicas.
#[test]
fn a_watcher_leaves_a_file_locked_by_someone_else_uncommitted_until_the_lock_is_its_own() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    seeded_hub(t);
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let url = server.url("hub");
    let as_alice = |c: &mut Command| {
        c.env("DMV_TOKEN", "tok-alice");
    };
    let as_bob = |c: &mut Command| {
        c.env("DMV_TOKEN", "tok-bob");
    };
    let alice = clone(t, &url, "alice", &[], &as_alice);
    let bob = clone(t, &url, "bob", &[], &as_bob);
    let run = |dir: &Path, setup: &dyn Fn(&mut Command), args: &[&str]| {
        let mut c = dmv_cmd(dir);
        c.args(args);
        setup(&mut c);
        let out = c.output().unwrap();
        ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&bob, &as_bob, &["lock", "cover.psd"]);

    let log_path = t.join("alice-watch.log");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let mut watch = dmv_cmd(&alice);
    watch
        .args(["watch", "--quiet", "0.3", "--sync", "--sync-every", "1"])
        .stdin(std::process::Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file);
    as_alice(&mut watch);
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _watcher = Killed(watch.spawn().unwrap());
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let started = std::time::Instant::now();
        while !done() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "waited for {what}; the watcher's log:\n{}",
                log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait("the watcher to start", &|| log().contains("watching "));

    edit(&alice, "cover.psd", "layers v2 by alice");
    edit(&alice, "notes.txt", "notes v2 by alice");
    wait("the commit of notes.txt", &|| {
        // A word of its own: the lock's message says "stays uncommitted".
        log().contains("cover.psd is locked by bob") && log().contains(" committed ")
    });
    let shown = run(&alice, &as_alice, &["show", "--name-only", "HEAD"]);
    assert!(shown.contains("notes.txt"), "{shown}");
    assert!(!shown.contains("cover.psd"), "{shown}");
    let status = run(&alice, &as_alice, &["status", "--short"]);
    assert!(status.contains("cover.psd"), "{status}");
    // The rest reaches the hub: nothing of it was refused.
    wait("the push of notes.txt", &|| {
        log().contains("sent to origin")
    });
    assert!(!log().contains("refused"), "{}", log());

    // Another save: not said again, still not committed.
    edit(&alice, "cover.psd", "layers v3 by alice");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        log().matches("cover.psd is locked by bob").count(),
        1,
        "{}",
        log()
    );
    let shown = run(&alice, &as_alice, &["show", "--name-only", "HEAD"]);
    assert!(!shown.contains("cover.psd"), "{shown}");

    // Bob lets go: the watcher takes the lock and commits the file.
    run(&bob, &as_bob, &["unlock", "cover.psd"]);
    wait("alice's lock and commit of cover.psd", &|| {
        log().contains("locked cover.psd for you")
            && run(&alice, &as_alice, &["status", "--short"])
                .trim()
                .is_empty()
    });
    let shown = run(&alice, &as_alice, &["show", "HEAD:cover.psd"]);
    assert_eq!(shown, "layers v3 by alice");
    // It reaches the hub, and its landing gives the lock back.
    wait("bob to see alice's cover.psd", &|| {
        run(&bob, &as_bob, &["pull"]);
        std::fs::read_to_string(bob.join("cover.psd")).unwrap() == "layers v3 by alice"
    });
    assert!(!log().contains("refused"), "{}", log());
}
