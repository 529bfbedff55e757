//! Encrypted bucket remotes (issue 68) against a real MinIO, the first
//! three on moto as well: what the storage holds after a push, who can
//! clone, and what happens when the storage changes what it holds.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::needs::{lacks, Need};
use common::servers::{S3Kind, S3Server};
use common::*;

/// Where the encrypted repository `vault/r` is kept: a bucket of an S3
/// server, or a `dmv serve` keeping it sealed (`r` = `{ sealed = DIR }`,
/// write token `w`).
trait Storage {
    /// The repository's URL.
    fn repo_url(&self) -> String;
    /// What a dmv command needs to reach it (credentials, endpoint, token).
    fn reach(&self, cmd: &mut std::process::Command);
}

impl Storage for S3Server {
    fn repo_url(&self) -> String {
        "s3://vault/r".into()
    }

    fn reach(&self, cmd: &mut std::process::Command) {
        self.env(cmd);
        cmd.env("AWS_ENDPOINT_URL", self.endpoint());
    }
}

impl Storage for common::servers::HttpServer {
    fn repo_url(&self) -> String {
        self.url("r")
    }

    fn reach(&self, cmd: &mut std::process::Command) {
        cmd.env("DMV_TOKEN", "w");
    }
}

/// A `dmv serve` keeping `r` sealed in `t/r-objects`, for the token `w`.
fn sealed_hub(t: &Path) -> common::servers::HttpServer {
    let config = "[repos]\nr = { sealed = \"r-objects\" }\n[tokens]\n\"w\" = { access = \"write\", user = \"w\" }\n";
    common::servers::HttpServer::start(config, t, 0)
}

/// Runs dmv in `dir` reaching the storage, with this device's config
/// folder (its key) at `device`.
fn on(store: &dyn Storage, device: &Path, dir: &Path, args: &[&str]) -> Output {
    device_cmd(store, device, dir).args(args).output().unwrap()
}

/// dmv in `dir` as [`on`] runs it, to be given more (a fail point, a trace).
fn device_cmd(store: &dyn Storage, device: &Path, dir: &Path) -> std::process::Command {
    let mut c = dmv_cmd(dir);
    store.reach(&mut c);
    c.env("XDG_CONFIG_HOME", device)
        .env_remove("DMV_PASSPHRASE");
    c
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `t/a`: a repository of one file, pushed to the storage encrypted.
fn one_file_pushed_encrypted(store: &dyn Storage, device: &Path, t: &Path) -> std::path::PathBuf {
    let a = t.join("a");
    ok(on(store, device, t, &["init", "a"]));
    std::fs::write(a.join("one.txt"), "one\n").unwrap();
    ok(on(store, device, &a, &["add", "."]));
    ok(on(store, device, &a, &["commit", "-m", "first"]));
    let add = ["remote", "add", "origin", &store.repo_url(), "--encrypt"];
    ok(on(store, device, &a, &add));
    ok(on(store, device, &a, &["push", "origin", "main"]));
    a
}

#[test]
fn an_encrypted_remote_holds_only_ciphertext_and_opens_only_with_a_key() {
    holds_only_ciphertext(S3Kind::Minio);
}

fn holds_only_ciphertext(kind: S3Kind) {
    let Some(minio) = S3Server::start_if_here(kind) else {
        return;
    };
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let (alice, bob) = (t.join("alice-config"), t.join("bob-config"));
    let a = t.join("a");
    ok(on(&minio, &alice, t, &["init", "a"]));
    let marker = "PLAINTEXT-MARKER-7f3a";
    std::fs::write(a.join("IMG_SECRETNAME_0001.txt"), format!("{marker}\n")).unwrap();
    write_noise(&a.join("shoot.raw"), 6_000_000, 7);
    ok(on(&minio, &alice, &a, &["add", "."]));
    ok(on(&minio, &alice, &a, &["commit", "-m", "first"]));
    ok(on(
        &minio,
        &alice,
        &a,
        &["remote", "add", "origin", "s3://vault/r", "--encrypt"],
    ));
    ok(on(&minio, &alice, &a, &["push", "origin", "main"]));

    // Nothing the storage holds names or contains what was pushed.
    let commit = ok(on(&minio, &alice, &a, &["rev-parse", "HEAD"]));
    // What any S3 client reads, and for MinIO also what it keeps on disk.
    let mut objects = minio.objects("vault", "");
    if kind == S3Kind::Minio {
        let on_disk = file_bytes(&minio.data_dir().join("vault"));
        objects.extend(on_disk.into_iter().map(|(k, v)| (format!("disk:{k}"), v)));
    }
    assert!(
        objects.keys().any(|k| k.contains("packs/")),
        "{:?}",
        objects.keys().collect::<Vec<_>>()
    );
    let raw = std::fs::read(a.join("shoot.raw")).unwrap();
    for (key, body) in &objects {
        for needle in [marker, "IMG_SECRETNAME", "shoot.raw", commit.trim()] {
            assert!(!key.contains(needle), "{key} names {needle}");
            assert!(
                !contains(body, needle.as_bytes()),
                "{key} holds {needle:?} in the clear"
            );
        }
        assert!(
            !contains(body, &raw[1000..1032]),
            "{key} holds the raw file's bytes"
        );
    }

    // Another device without a key: refused, and nothing written.
    let out = on(&minio, &bob, t, &["clone", "s3://vault/r", "b"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("encrypted") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!t.join("b").exists(), "a refused clone left a folder");

    // Its key added from a device that opens it: a byte-exact clone.
    let bob_key = ok(on(&minio, &bob, t, &["keys", "device"]));
    assert!(bob_key.starts_with("dmvpub1"), "{bob_key}");
    ok(on(
        &minio,
        &alice,
        &a,
        &["keys", "add", "--recipient", bob_key.trim()],
    ));
    let listed = ok(on(&minio, &alice, &a, &["keys", "list"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    ok(on(&minio, &bob, t, &["clone", "-q", "s3://vault/r", "b"]));
    for name in ["IMG_SECRETNAME_0001.txt", "shoot.raw"] {
        assert_eq!(
            std::fs::read(t.join("b").join(name)).unwrap(),
            std::fs::read(a.join(name)).unwrap(),
            "{name}"
        );
    }

    // A meta clone gets one file on demand, through ranged reads of sealed
    // packs: the segments holding its chunks, and little more.
    ok(on(
        &minio,
        &bob,
        t,
        &["clone", "-q", "--slice", "meta", "s3://vault/r", "m"],
    ));
    let out = device_cmd(&minio, &bob, &t.join("m"))
        .env("DMV_TRACE", "1")
        .args(["get", "shoot.raw"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(std::fs::read(t.join("m").join("shoot.raw")).unwrap(), raw);
    let received: u64 = err
        .lines()
        .find_map(|l| l.split(" bytes-received ").nth(1))
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    assert!(
        received <= raw.len() as u64 * 11 / 10,
        "a get of {} bytes received {received}",
        raw.len()
    );

    // Removed, the key opens the repository no more.
    ok(on(&minio, &alice, &a, &["keys", "remove", bob_key.trim()]));
    let out = on(&minio, &bob, &t.join("b"), &["fetch"]);
    assert!(!out.status.success(), "a removed key still fetched");
    // The last key is never removed.
    let alice_key = ok(on(&minio, &alice, t, &["keys", "device"]));
    let out = on(&minio, &alice, &a, &["keys", "remove", alice_key.trim()]);
    assert!(stderr(&out).contains("only key"), "{}", stderr(&out));
}

#[test]
fn an_object_the_storage_swaps_or_changes_is_refused_by_name() {
    refuses_what_the_storage_changes(S3Kind::Minio);
}

fn refuses_what_the_storage_changes(kind: S3Kind) {
    let Some(minio) = S3Server::start_if_here(kind) else {
        return;
    };
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let alice = t.join("alice-config");
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    ok(on(&minio, &alice, t, &["clone", "-q", "s3://vault/r", "b"]));
    // The ref table (the one sealed object at the top) replaced by the
    // location log, sealed with the same key under another name.
    let top_level: Vec<String> = minio
        .list("vault", "r/")
        .into_iter()
        .filter(|k| k.ends_with(".s") && !k[2..].contains('/'))
        .collect();
    assert_eq!(top_level.len(), 1, "{top_level:?}");
    let logs = minio.list("vault", "r/locations/");
    let (log, refs) = (t.join("log"), t.join("refs"));
    minio.get("vault", &logs[0], &log);
    minio.get("vault", &top_level[0], &refs);
    minio.put("vault", &top_level[0], &log);
    let out = on(&minio, &alice, &t.join("b"), &["fetch"]);
    assert!(!out.status.success(), "a swapped ref table was read");
    let err = stderr(&out);
    assert!(
        err.contains("does not open") && err.contains(&top_level[0][2..]),
        "{err}"
    );
    // A plain repository in its place (the storage's downgrade): a clone of
    // the encrypted one sends nothing to it in the clear.
    let plain = t.join("plain");
    ok(on(&minio, &alice, t, &["init", "plain"]));
    std::fs::write(plain.join("p.txt"), "p\n").unwrap();
    ok(on(&minio, &alice, &plain, &["add", "."]));
    ok(on(&minio, &alice, &plain, &["commit", "-m", "plain"]));
    ok(on(
        &minio,
        &alice,
        &plain,
        &["push", "s3://vault/plain", "main"],
    ));
    let plain_objects = minio.list("vault", "plain/");
    let b = t.join("b");
    ok(on(
        &minio,
        &alice,
        &b,
        &["remote", "set-url", "origin", "s3://vault/plain"],
    ));
    std::fs::write(b.join("new.txt"), "new\n").unwrap();
    ok(on(&minio, &alice, &b, &["add", "."]));
    ok(on(&minio, &alice, &b, &["commit", "-m", "second"]));
    let out = on(&minio, &alice, &b, &["push", "origin", "main"]);
    assert!(!out.status.success(), "a push went to a plain repository");
    assert!(stderr(&out).contains("unencrypted"), "{}", stderr(&out));
    assert_eq!(
        minio.list("vault", "plain/"),
        plain_objects,
        "the push wrote"
    );
    ok(on(
        &minio,
        &alice,
        &b,
        &["remote", "set-url", "origin", "s3://vault/r"],
    ));
    // Put back, it is read again; a byte flipped in a location log is refused the same way.
    minio.put("vault", &top_level[0], &refs);
    ok(on(&minio, &alice, &t.join("b"), &["fetch"]));
    let mut flipped = std::fs::read(&log).unwrap();
    flipped[40] ^= 1;
    let flipped_log = t.join("flipped-log");
    std::fs::write(&flipped_log, flipped).unwrap();
    minio.put("vault", &logs[0], &flipped_log);
    let out = on(&minio, &alice, &t.join("b"), &["fetch"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains(&logs[0][2..]),
        "{err}"
    );
    minio.put("vault", &logs[0], &log);
    ok(on(&minio, &alice, &t.join("b"), &["fetch"]));

    // A remote added without --encrypt is remembered as encrypted once it
    // is found so: the same downgrade then gets nothing from it either.
    let h = t.join("h");
    ok(on(&minio, &alice, t, &["init", "h"]));
    ok(on(
        &minio,
        &alice,
        &h,
        &["remote", "add", "origin", "s3://vault/r"],
    ));
    ok(on(&minio, &alice, &h, &["fetch", "origin"]));
    let set_url = ["remote", "set-url", "origin", "s3://vault/plain"];
    ok(on(&minio, &alice, &h, &set_url));
    std::fs::write(h.join("h.txt"), "h\n").unwrap();
    ok(on(&minio, &alice, &h, &["add", "."]));
    ok(on(&minio, &alice, &h, &["commit", "-m", "by hand"]));
    let out = on(&minio, &alice, &h, &["push", "origin", "main"]);
    assert!(stderr(&out).contains("unencrypted"), "{}", stderr(&out));
    assert_eq!(
        minio.list("vault", "plain/"),
        plain_objects,
        "the push wrote"
    );

    // Whoever can write the bucket puts there a config and a key of a
    // keyring they know, wrapped for this device's public key (the bucket
    // shows it): the device, which opened the repository before, refuses.
    ok(on(
        &minio,
        &alice,
        &a,
        &["remote", "add", "evil", "s3://vault/evil", "--encrypt"],
    ));
    ok(on(&minio, &alice, &a, &["push", "evil", "main"]));
    let (evil_config, real_config) = (t.join("evil.json"), t.join("real.json"));
    minio.get("vault", "evil/dmv-repository.json", &evil_config);
    minio.get("vault", "r/dmv-repository.json", &real_config);
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let mut forged = read(&evil_config);
    forged["id"] = read(&real_config)["id"].clone();
    std::fs::write(&evil_config, serde_json::to_vec(&forged).unwrap()).unwrap();
    let key = minio
        .list("vault", "evil/keys/")
        .pop()
        .expect("a device key");
    let wrapped = t.join("wrapped");
    minio.get("vault", &key, &wrapped);
    minio.put("vault", "r/dmv-repository.json", &evil_config);
    minio.put("vault", &format!("r/{}", &key["evil/".len()..]), &wrapped);
    let out = on(&minio, &alice, &t.join("b"), &["fetch"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("first opened"),
        "{err}"
    );
}

#[test]
fn a_passphrase_opens_an_encrypted_remote_on_a_device_without_a_key() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let (alice, carol) = (t.join("alice-config"), t.join("carol-config"));
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    let mut add = device_cmd(&minio, &alice, &a);
    add.args(["keys", "add", "--passphrase"])
        .stdin(std::process::Stdio::piped());
    let mut child = add.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"correct horse battery\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    let clone = |pass: &str, dir: &str| {
        let mut c = device_cmd(&minio, &carol, t);
        c.env("DMV_PASSPHRASE", pass)
            .args(["clone", "-q", "s3://vault/r", dir]);
        c.output().unwrap()
    };
    let out = clone("wrong horse", "wrong");
    assert!(
        stderr(&out).contains("passphrase does not open"),
        "{}",
        stderr(&out)
    );
    assert!(!t.join("wrong").exists());
    ok(clone("correct horse battery", "c"));
    assert_eq!(std::fs::read(t.join("c/one.txt")).unwrap(), b"one\n");
    // Without DMV_PASSPHRASE, on a terminal, the clone asks for it.
    let typed = |pass: &str, dir: &str| {
        let mut c = std::process::Command::new("script");
        let line = format!("{} clone -q s3://vault/r {dir}", bin().display());
        minio.env(&mut c);
        c.args(["-qec", &line, "/dev/null"])
            .current_dir(t)
            .env("SHELL", "/bin/sh")
            .env("XDG_CONFIG_HOME", &carol)
            .env("AWS_ENDPOINT_URL", minio.endpoint())
            .env_remove("DMV_PASSPHRASE")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(format!("{pass}\n").as_bytes()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        )
    };
    let (cloned, shown) = typed("correct horse battery", "typed");
    assert!(cloned, "{shown}");
    assert!(shown.contains("Passphrase for s3://vault/r: "), "{shown}");
    assert_eq!(std::fs::read(t.join("typed/one.txt")).unwrap(), b"one\n");
    let (cloned, shown) = typed("wrong horse", "mistyped");
    assert!(
        !cloned && shown.contains("passphrase does not open"),
        "{shown}"
    );
    assert!(!t.join("mistyped").exists());

    // A rotation given the passphrase wraps it again; one without removes it.
    let rotate = |pass: Option<&str>| {
        let mut c = device_cmd(&minio, &alice, &a);
        c.args(["keys", "rotate"]);
        if let Some(p) = pass {
            c.env("DMV_PASSPHRASE", p);
        }
        c.output().unwrap()
    };
    let out = rotate(Some("correct horse battery"));
    assert!(
        stderr(&out).contains("epoch 2: 2 keys wrapped again"),
        "{}",
        stderr(&out)
    );
    ok(clone("correct horse battery", "c2"));
    let out = rotate(None);
    let err = stderr(&out);
    assert!(
        err.contains("epoch 3: 1 key wrapped again") && err.contains("Removed key passphrase-"),
        "{err}"
    );
    let out = clone("correct horse battery", "c3");
    assert!(
        stderr(&out).contains("passphrase does not open"),
        "{}",
        stderr(&out)
    );
    assert!(!t.join("c3").exists());
    // What is pushed now is sealed with the newest epoch; the device reads old and new.
    let before = minio.list("vault", "r/packs/");
    std::fs::write(a.join("two.txt"), "two\n").unwrap();
    ok(on(&minio, &alice, &a, &["add", "."]));
    ok(on(&minio, &alice, &a, &["commit", "-m", "second"]));
    ok(on(&minio, &alice, &a, &["push", "origin", "main"]));
    let new_pack = minio
        .list("vault", "r/packs/")
        .into_iter()
        .find(|k| k.ends_with(".p") && !before.contains(k))
        .expect("a new pack");
    let body = t.join("new-pack");
    minio.get("vault", &new_pack, &body);
    let header = std::fs::read(&body).unwrap();
    assert_eq!(&header[..5], b"DMVE\x01");
    assert_eq!(u32::from_le_bytes(header[5..9].try_into().unwrap()), 3);
    ok(on(
        &minio,
        &alice,
        t,
        &["clone", "-q", "s3://vault/r", "after"],
    ));
    assert_eq!(std::fs::read(t.join("after/one.txt")).unwrap(), b"one\n");
    assert_eq!(std::fs::read(t.join("after/two.txt")).unwrap(), b"two\n");
}

#[test]
fn a_rewrite_leaves_a_removed_key_nothing_to_read_and_finishes_when_cut_short() {
    rewrites_and_rotates(S3Kind::Minio);
}

fn rewrites_and_rotates(kind: S3Kind) {
    let Some(minio) = S3Server::start_if_here(kind) else {
        return;
    };
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let (alice, bob, carol) = (t.join("alice"), t.join("bob"), t.join("carol"));
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    write_noise(&a.join("take.wav"), 3_000_000, 11);
    ok(on(&minio, &alice, &a, &["add", "."]));
    ok(on(&minio, &alice, &a, &["commit", "-m", "second"]));
    ok(on(&minio, &alice, &a, &["push", "origin", "main"]));
    let bob_key = ok(on(&minio, &bob, t, &["keys", "device"]));
    ok(on(
        &minio,
        &alice,
        &a,
        &["keys", "add", "--recipient", bob_key.trim()],
    ));
    ok(on(&minio, &bob, t, &["clone", "-q", "s3://vault/r", "b"]));

    // Bob keeps his copy of the key; it is removed, and the key rotated
    // with a rewrite that is killed after sealing two objects again.
    let listed = ok(on(&minio, &alice, &a, &["keys", "list"]));
    let bob_copy = listed
        .lines()
        .find(|l| l.contains(bob_key.trim()))
        .and_then(|l| l.split('\t').next())
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    let kept = t.join("bob-kept-copy");
    minio.get("vault", &format!("r/keys/{bob_copy}"), &kept);
    ok(on(&minio, &alice, &a, &["keys", "remove", bob_key.trim()]));
    let out = device_cmd(&minio, &alice, &a)
        .env("DMV_FAILPOINT", "bucket-object-resealed@2")
        .args(["keys", "rotate", "--rewrite"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the failpoint did not fire");
    let epochs = sealed_epochs(&minio, t);
    let new = epochs.iter().filter(|(_, e)| *e == 2).count();
    assert_eq!(new, 2, "{epochs:?}");
    assert!(epochs.len() > 4, "{epochs:?}");

    // Run again, it finishes: every object is sealed with the new key.
    let err = stderr(&on(&minio, &alice, &a, &["keys", "rewrite"]));
    assert!(
        err.contains(&format!("Sealed {} objects again", epochs.len() - 2)),
        "{err}"
    );
    let epochs = sealed_epochs(&minio, t);
    assert!(epochs.iter().all(|(_, e)| *e == 2), "{epochs:?}");
    let err = stderr(&on(&minio, &alice, &a, &["keys", "rewrite"]));
    assert!(err.contains("Sealed 0 objects again"), "{err}");

    // Bob's copy put back opens the repository, and reads nothing in it.
    minio.put("vault", &format!("r/keys/{bob_copy}"), &kept);
    let out = on(&minio, &bob, &t.join("b"), &["fetch"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "an old key read rewritten objects");
    assert!(err.lines().count() == 1 && err.contains("epoch 2"), "{err}");
    ok(on(&minio, &alice, &a, &["keys", "remove", &bob_copy]));
    // The devices with the key clone every version byte for byte.
    ok(on(
        &minio,
        &alice,
        t,
        &["clone", "-q", "s3://vault/r", "a2"],
    ));
    for name in ["one.txt", "take.wav"] {
        assert_eq!(
            std::fs::read(t.join("a2").join(name)).unwrap(),
            std::fs::read(a.join(name)).unwrap()
        );
    }

    // A rotation killed after wrapping one of two copies: the device whose
    // copy is older may not fork the key; the other finishes it.
    let carol_key = ok(on(&minio, &carol, t, &["keys", "device"]));
    ok(on(
        &minio,
        &alice,
        &a,
        &["keys", "add", "--recipient", carol_key.trim()],
    ));
    ok(on(&minio, &carol, t, &["clone", "-q", "s3://vault/r", "c"]));
    let out = device_cmd(&minio, &alice, &a)
        .env("DMV_FAILPOINT", "bucket-key-rewrapped")
        .args(["keys", "rotate"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the failpoint did not fire");
    // The copy written before the kill is one keyring epoch (36 bytes) longer.
    let listed = ok(on(&minio, &alice, &a, &["keys", "list"]));
    let sizes = minio.list_sizes("vault", "r/keys/");
    let size_of = |public: &str| {
        let name = listed
            .lines()
            .find(|l| l.ends_with(public))
            .and_then(|l| l.split('\t').next())
            .unwrap_or_else(|| panic!("{listed}"));
        sizes
            .iter()
            .find(|(k, _)| k.ends_with(name))
            .map(|(_, size)| *size)
            .unwrap()
    };
    let alice_key = ok(on(&minio, &alice, t, &["keys", "device"]));
    let (alice_size, carol_size) = (size_of(alice_key.trim()), size_of(carol_key.trim()));
    assert_eq!(alice_size.abs_diff(carol_size), 36, "{sizes:?}");
    let (behind, ahead) = match alice_size < carol_size {
        true => ((&alice, a.clone()), (&carol, t.join("c"))),
        false => ((&carol, t.join("c")), (&alice, a.clone())),
    };
    let out = on(&minio, behind.0, &behind.1, &["keys", "rotate"]);
    assert!(
        !out.status.success(),
        "a device whose copy is behind rotated"
    );
    assert!(
        stderr(&out).contains("rotation was cut short"),
        "{}",
        stderr(&out)
    );
    ok(on(&minio, ahead.0, &ahead.1, &["keys", "rotate"]));
    ok(on(&minio, behind.0, &behind.1, &["keys", "rotate"]));
    for (device, dir) in [(&alice, "a3"), (&carol, "c3")] {
        ok(on(&minio, device, t, &["clone", "-q", "s3://vault/r", dir]));
        assert_eq!(
            std::fs::read(t.join(dir).join("one.txt")).unwrap(),
            b"one\n"
        );
    }
}

/// A server in front of an encrypted bucket opens it only with a device key
/// of its own (the studio's server trusted, the storage not): without one
/// it refuses, saying why; with one, clients without keys clone and push
/// through it, and the bucket still holds only ciphertext.
#[test]
fn a_server_in_front_of_an_encrypted_bucket_opens_it_with_its_own_key() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let (alice, bob, server_home) = (t.join("alice"), t.join("bob"), t.join("server"));
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    let credentials = [
        ("AWS_ACCESS_KEY_ID", common::servers::MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", common::servers::MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let serve = |identity: &str| {
        let config = t.join("server.toml");
        std::fs::write(
            &config,
            format!(
                "[repos]\nhub = {{ url = \"s3://vault/r\", endpoint = \"{}\"{identity} }}\n[tokens]\n\"bob-secret\" = {{ access = \"write\", user = \"bob\" }}\n",
                minio.endpoint()
            ),
        )
        .unwrap();
        common::servers::HttpServer::start_with_env(&config, 0, &credentials)
    };
    let through = |server: &common::servers::HttpServer, dir: &Path, args: &[&str]| {
        let mut c = dmv_cmd(dir);
        c.env("XDG_CONFIG_HOME", &bob)
            .env("DMV_TOKEN", "bob-secret")
            .env_remove("DMV_PASSPHRASE")
            .args(args.iter().map(|a| a.replace("URL", &server.url("hub"))));
        c.output().unwrap()
    };

    let server = serve("");
    let out = through(&server, t, &["clone", "-q", "URL", "refused"]);
    let err = stderr(&out);
    assert!(!out.status.success() && err.contains("encrypted"), "{err}");
    assert!(!t.join("refused").exists());
    drop(server);

    let server_key = ok(on(&minio, &server_home, t, &["keys", "device"]));
    ok(on(
        &minio,
        &alice,
        &a,
        &["keys", "add", "--recipient", server_key.trim()],
    ));
    let identity = server_home.join("dmv").join("identity");
    let server = serve(&format!(", identity = \"{}\"", identity.display()));
    ok(through(&server, t, &["clone", "-q", "URL", "b"]));
    assert_eq!(std::fs::read(t.join("b/one.txt")).unwrap(), b"one\n");
    let marker = "THROUGH-THE-SERVER-5c1e";
    std::fs::write(t.join("b/two.txt"), format!("{marker}\n")).unwrap();
    ok(through(&server, &t.join("b"), &["add", "."]));
    ok(through(&server, &t.join("b"), &["commit", "-m", "second"]));
    ok(through(&server, &t.join("b"), &["push", "origin", "main"]));
    // A browser's upload through the server: staged in the bucket and
    // committed there, sealed at each step.
    let uploaded = "FROM-A-BROWSER-7d2a";
    let sealed_everywhere = |marker: &str| {
        for (key, body) in file_bytes(&minio.data_dir().join("vault")) {
            assert!(
                !contains(&body, marker.as_bytes()),
                "{key} holds the marker"
            );
        }
    };
    let web = |path: &str, body: &[u8]| {
        let (code, _, reply) = common::servers::http(
            server.port,
            if path.contains("offset") {
                "PUT"
            } else {
                "POST"
            },
            path,
            &[
                ("Authorization", "Bearer bob-secret"),
                ("Content-Type", "application/json"),
            ],
            body,
        );
        (code, reply)
    };
    let bytes = format!("{uploaded}\n");
    let (code, reply) = web(
        "/hub/uploads",
        format!(r#"{{"name":"web.txt","size":{}}}"#, bytes.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{reply}");
    let id = serde_json::from_str::<serde_json::Value>(&reply).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, reply) = web(&format!("/hub/uploads/{id}?offset=0"), bytes.as_bytes());
    assert_eq!(code, 200, "{reply}");
    assert!(!minio.list("vault", "r/server/staged/").is_empty());
    sealed_everywhere(uploaded);
    let seen = ok(through(&server, &t.join("b"), &["rev-parse", "main"]));
    let (code, reply) = web(
        "/hub/commit-uploads",
        format!(
            r#"{{"branch":"main","seen":"{}","folder":"","files":[{{"name":"web.txt","id":"{id}"}}]}}"#,
            seen.trim()
        )
        .as_bytes(),
    );
    assert_eq!(code, 200, "{reply}");
    sealed_everywhere(uploaded);
    sealed_everywhere(marker);
    ok(on(&minio, &alice, &a, &["pull", "origin", "main"]));
    assert_eq!(
        std::fs::read_to_string(a.join("two.txt")).unwrap(),
        format!("{marker}\n")
    );
    assert_eq!(std::fs::read_to_string(a.join("web.txt")).unwrap(), bytes);
}

/// What a replica does with a plain bucket it does with an encrypted one:
/// a `paths:` slice and a get on demand, whereis, fsck --from, a push cut
/// after a pack and run again, sync, and a numcopies-safe drop --from.
#[test]
fn slices_repairs_resumes_and_drops_work_over_an_encrypted_remote() {
    let Some(minio) = S3Server::start_if_here(S3Kind::Minio) else {
        return;
    };
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    slices_repairs_resumes_and_drops(&minio, top.path());
}

/// The same through a `dmv serve` that keeps the repository sealed.
#[test]
fn slices_repairs_resumes_and_drops_work_through_a_sealed_hub() {
    let top = tempfile::tempdir().unwrap();
    let hub = sealed_hub(top.path());
    slices_repairs_resumes_and_drops(&hub, top.path());
}

fn slices_repairs_resumes_and_drops(store: &dyn Storage, t: &Path) {
    let url = store.repo_url();
    let (alice, bob) = (t.join("alice"), t.join("bob"));
    let a = one_file_pushed_encrypted(store, &alice, t);
    write_noise(&a.join("photo.raw"), 2_000_000, 21);
    ok(on(store, &alice, &a, &["add", "."]));
    ok(on(store, &alice, &a, &["commit", "-m", "photo"]));
    ok(on(store, &alice, &a, &["push", "origin", "main"]));
    let bob_key = ok(on(store, &bob, t, &["keys", "device"]));
    ok(on(
        store,
        &alice,
        &a,
        &["keys", "add", "--recipient", bob_key.trim()],
    ));

    // A slice of the text files; the photo got on demand, byte for byte.
    let slice = ["clone", "-q", "--slice", "paths:*.txt", &url, "b"];
    ok(on(store, &bob, t, &slice));
    let b = t.join("b");
    assert!(!b.join("photo.raw").exists());
    let whereis = ok(on(store, &bob, &b, &["whereis", "photo.raw"]));
    assert!(whereis.contains("origin"), "{whereis}");
    ok(on(store, &bob, &b, &["get", "photo.raw"]));
    assert_eq!(
        std::fs::read(b.join("photo.raw")).unwrap(),
        std::fs::read(a.join("photo.raw")).unwrap()
    );
    ok(on(store, &bob, &b, &["fsck", "--from", "origin"]));

    // (Before the killed push below: its lease holds drops off for minutes.)
    // A drop from it keeps a copy counted elsewhere, and the bucket then
    // no longer claims the photo.
    let out = on(
        store,
        &alice,
        &a,
        &["drop", "--from", "origin", "--numcopies", "3", "photo.raw"],
    );
    assert!(!out.status.success(), "a drop left fewer copies than asked");
    let drop = ["drop", "--from", "origin", "--numcopies", "1", "photo.raw"];
    ok(on(store, &alice, &a, &drop));
    let whereis = ok(on(store, &alice, &a, &["whereis", "photo.raw"]));
    assert!(!whereis.contains("origin"), "{whereis}");
    ok(on(store, &alice, &a, &["fsck", "--from", "origin"]));

    // A push killed after 40 MB went up, run again, lands, and sends
    // again none of the pack (32 MiB) finished and published before.
    write_noise(&a.join("second.raw"), 70_000_000, 22);
    ok(on(store, &alice, &a, &["add", "."]));
    ok(on(store, &alice, &a, &["commit", "-m", "second"]));
    let push = |env: (&str, &str)| {
        let mut c = device_cmd(store, &alice, &a);
        c.env("DMV_TRACE", "1")
            .env(env.0, env.1)
            .args(["push", "origin", "main"])
            .output()
            .unwrap()
    };
    let out = push(("DMV_ABORT_AFTER_BYTES", "40000000"));
    assert!(!out.status.success(), "the push was not cut");
    let out = push(("DMV_TRACE", "1"));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let sent: u64 = err
        .lines()
        .find_map(|l| l.split(" bytes-sent ").nth(1)?.split(' ').next())
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    // What was left, sealed (padded by up to 1/8), and not the pack before.
    let left = 70_000_000 - (32 << 20);
    assert!(
        sent < left * 9 / 8 && sent < 70_000_000 - (16 << 20),
        "the resumed push sent {sent}, {left} were left"
    );
    ok(on(store, &bob, &b, &["pull", "origin", "main"]));
    ok(on(store, &bob, &b, &["get", "second.raw"]));
    assert_eq!(
        std::fs::read(b.join("second.raw")).unwrap(),
        std::fs::read(a.join("second.raw")).unwrap()
    );

    // Sync both ways through it.
    std::fs::write(b.join("one.txt"), "one, edited by bob\n").unwrap();
    ok(on(store, &bob, &b, &["commit", "-a", "-m", "bob's edit"]));
    ok(on(store, &bob, &b, &["sync", "origin"]));
    ok(on(store, &alice, &a, &["sync", "origin"]));
    assert_eq!(
        std::fs::read_to_string(a.join("one.txt")).unwrap(),
        "one, edited by bob\n"
    );
}

#[test]
fn wrapped_keys_past_their_budget_are_refused_unread() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let alice = t.join("alice");
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    // One wrapped key larger than a keyring of 1,024 epochs can be.
    let big = t.join("big-key");
    std::fs::write(&big, vec![b'k'; (64 << 10) + 1]).unwrap();
    minio.put("vault", "r/keys/device-big", &big);
    let out = on(&minio, &alice, &a, &["fetch"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("keys/device-big is 65537 bytes"), "{err}");
    // 257 small ones: more than a repository's devices and passphrases.
    let small = t.join("small-key");
    std::fs::write(&small, b"DMVW").unwrap();
    for n in 0..257 {
        minio.put("vault", &format!("r/keys/device-{n:03}"), &small);
    }
    let out = on(&minio, &alice, &a, &["fetch"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("more than 256"), "{err}");
}

/// A rewrite stopped between reading an object and writing it back while
/// another device pushes: whichever object it was (the ref table, a
/// location log, an index), the push is what stays, never the rewrite's
/// older copy. Each round rotates first, so every object is on an old key
/// and is read; the rewrite stops at its Nth, for every N up to the count
/// before the first push (the listing order puts each kind within it).
#[test]
fn a_rewrite_never_writes_back_over_what_a_push_wrote_meanwhile() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let minio = S3Server::minio();
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let (alice, bob) = (t.join("alice"), t.join("bob"));
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    let bob_key = ok(on(&minio, &bob, t, &["keys", "device"]));
    ok(on(
        &minio,
        &alice,
        &a,
        &["keys", "add", "--recipient", bob_key.trim()],
    ));
    ok(on(&minio, &bob, t, &["clone", "-q", "s3://vault/r", "b"]));
    let b = t.join("b");
    // The objects before any push of bob's (each push adds a pack, its
    // index and more): every kind is among them.
    let objects = sealed_epochs(&minio, t).len();
    for n in 1..=objects {
        ok(on(&minio, &alice, &a, &["keys", "rotate"]));
        let mut rewrite = device_cmd(&minio, &alice, &a);
        rewrite.args(["keys", "rewrite"]);
        let paused = common::Paused::start(rewrite, &format!("bucket-reseal-read@{n}"));
        std::fs::write(b.join(format!("b{n}.txt")), format!("bob {n}\n")).unwrap();
        ok(on(&minio, &bob, &b, &["add", "."]));
        ok(on(&minio, &bob, &b, &["commit", "-m", &format!("bob {n}")]));
        ok(on(&minio, &bob, &b, &["push", "origin", "main"]));
        let out = paused.resume();
        assert!(out.status.success(), "{}", stderr(&out));
        // Bob's push is there: his commit is the branch, his file in a clone.
        ok(on(&minio, &alice, &a, &["fetch", "origin"]));
        assert_eq!(
            ok(on(&minio, &alice, &a, &["rev-parse", "origin/main"])),
            ok(on(&minio, &bob, &b, &["rev-parse", "HEAD"])),
            "the rewrite stopped at object {n} undid bob's push"
        );
    }
    ok(on(
        &minio,
        &alice,
        t,
        &["clone", "-q", "s3://vault/r", "last"],
    ));
    ok(on(&minio, &alice, &t.join("last"), &["fsck"]));
    for n in 1..=objects {
        assert_eq!(
            std::fs::read_to_string(t.join("last").join(format!("b{n}.txt"))).unwrap(),
            format!("bob {n}\n")
        );
    }
}

/// A `dmv serve` repository kept sealed (`{ sealed = "DIR" }`): the server
/// stores what its clients encrypted and checks tokens only. Its folder
/// holds no name, marker or id; a device without the key is refused; a
/// read token clones but cannot push; locks are kept under keyed names and
/// enforced by the clients; the web UI says it cannot show it; a plain
/// repository cannot be pushed there; a changed object is refused by name.
#[test]
fn a_server_that_keeps_a_repository_sealed_never_holds_what_it_could_read() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let config = "[repos]\nvault = { sealed = \"vault-objects\" }\nempty = { sealed = \"empty-objects\" }\n[tokens]\n\"alice-secret\" = { access = \"write\", user = \"alice\" }\n\"bob-secret\" = { access = \"write\", user = \"bob\" }\n\"rita-secret\" = { access = \"read\", user = \"rita\" }\n";
    let server = common::servers::HttpServer::start(config, t, 0);
    let url = server.url("vault");
    let as_user = |who: &str, token: &str, dir: &Path, args: &[&str]| -> Output {
        dmv_cmd(dir)
            .env("XDG_CONFIG_HOME", t.join(format!("{who}-config")))
            .env("DMV_AUTHOR_NAME", who)
            .env("DMV_TOKEN", token)
            .env_remove("DMV_PASSPHRASE")
            .args(args)
            .output()
            .unwrap()
    };
    let alice = |dir: &Path, args: &[&str]| as_user("alice", "alice-secret", dir, args);
    let bob = |dir: &Path, args: &[&str]| as_user("bob", "bob-secret", dir, args);

    let a = t.join("a");
    ok(alice(t, &["init", "a"]));
    let marker = "PLAINTEXT-MARKER-b7e1";
    std::fs::write(a.join("IMG_SEALEDNAME_7.txt"), format!("{marker}\n")).unwrap();
    write_noise(&a.join("shoot.raw"), 3_000_000, 5);
    ok(alice(&a, &["add", "."]));
    ok(alice(&a, &["commit", "-m", "first"]));
    ok(alice(&a, &["remote", "add", "origin", &url, "--encrypt"]));
    ok(alice(&a, &["push", "origin", "main"]));

    // Another device without a key: refused, nothing written.
    let out = bob(t, &["clone", &url, "refused"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("encrypted") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!t.join("refused").exists());
    // With its key added: a byte-exact clone on a read token, which may not push.
    let bob_key = ok(bob(t, &["keys", "device"]));
    ok(alice(&a, &["keys", "add", "--recipient", bob_key.trim()]));
    ok(as_user(
        "bob",
        "rita-secret",
        t,
        &["clone", "-q", &url, "b"],
    ));
    let b = t.join("b");
    for name in ["IMG_SEALEDNAME_7.txt", "shoot.raw"] {
        assert_eq!(
            std::fs::read(b.join(name)).unwrap(),
            std::fs::read(a.join(name)).unwrap()
        );
    }
    std::fs::write(b.join("IMG_SEALEDNAME_7.txt"), "bob's\n").unwrap();
    ok(bob(&b, &["commit", "-a", "-m", "bob"]));
    let out = as_user("bob", "rita-secret", &b, &["push", "origin", "main"]);
    assert!(
        stderr(&out).contains("may read but not write"),
        "{}",
        stderr(&out)
    );

    // A lock, kept by the clients: bob can neither take it nor push over it.
    ok(alice(&a, &["lock", "IMG_SEALEDNAME_7.txt"]));
    let out = bob(&b, &["lock", "IMG_SEALEDNAME_7.txt"]);
    assert!(
        stderr(&out).contains("is locked by alice"),
        "{}",
        stderr(&out)
    );
    let out = bob(&b, &["push", "origin", "main"]);
    assert!(
        stderr(&out).contains("is locked by alice"),
        "{}",
        stderr(&out)
    );
    ok(alice(&a, &["unlock", "IMG_SEALEDNAME_7.txt"]));
    ok(bob(&b, &["push", "origin", "main"]));

    // A meta clone gets one file through ranged reads of sealed packs.
    ok(bob(t, &["clone", "-q", "--slice", "meta", &url, "m"]));
    let out = dmv_cmd(&t.join("m"))
        .env("XDG_CONFIG_HOME", t.join("bob-config"))
        .env("DMV_TOKEN", "bob-secret")
        .env("DMV_TRACE", "1")
        .args(["get", "shoot.raw"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let received: u64 = err
        .lines()
        .find_map(|l| l.split(" bytes-received ").nth(1))
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    assert!(
        received <= 3_000_000 * 11 / 10,
        "a get of 3000000 bytes received {received}"
    );

    // The folder holds no name, marker, id or content in the clear.
    let commit = ok(alice(&a, &["rev-parse", "HEAD"]));
    let objects = file_bytes(&t.join("vault-objects"));
    assert!(
        objects.keys().any(|k| k.starts_with("packs/")),
        "{:?}",
        objects.keys()
    );
    let raw = std::fs::read(a.join("shoot.raw")).unwrap();
    for (key, body) in &objects {
        for needle in [
            marker,
            "IMG_SEALEDNAME",
            "shoot.raw",
            "bob's",
            commit.trim(),
        ] {
            assert!(!key.contains(needle), "{key} names {needle}");
            assert!(!contains(body, needle.as_bytes()), "{key} holds {needle:?}");
        }
        assert!(
            !contains(body, &raw[1000..1032]),
            "{key} holds the raw file's bytes"
        );
    }

    // The web UI cannot show it, and says so.
    let page = std::process::Command::new("curl")
        .args([
            "-s",
            "-H",
            "Authorization: Bearer alice-secret",
            &format!("{url}/"),
        ])
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(page.contains("encrypted end to end"), "{page}");

    // A plain repository is not taken: nothing of it stays.
    let p = t.join("p");
    ok(alice(t, &["init", "p"]));
    std::fs::write(p.join("p.txt"), "plain\n").unwrap();
    ok(alice(&p, &["add", "."]));
    ok(alice(&p, &["commit", "-m", "plain"]));
    let out = alice(&p, &["push", &server.url("empty"), "main"]);
    assert!(
        stderr(&out).contains("only encrypted repositories"),
        "{}",
        stderr(&out)
    );
    let kept = file_bytes(&t.join("empty-objects"));
    assert!(
        !kept.keys().any(|k| k.ends_with("dmv-repository.json")),
        "{:?}",
        kept.keys()
    );
    assert!(
        !kept.values().any(|v| contains(v, b"plain\n")),
        "{:?}",
        kept.keys()
    );

    // A byte the server changes in the ref table: refused, naming it.
    let table = objects
        .keys()
        .find(|k| k.ends_with(".s") && !k.contains('/'))
        .expect("the ref table")
        .clone();
    let path = t.join("vault-objects").join(&table);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let out = bob(&b, &["fetch"]);
    let err = stderr(&out);
    assert!(!out.status.success() && err.contains(&table), "{err}");
}

/// Two devices push to a repository a server keeps sealed at the same
/// moment, round after round: exactly one wins each (the ref table is
/// swapped by a conditional write the server makes atomic under its
/// folder's lock), and the loser's work lands after a pull.
#[test]
fn pushes_racing_to_a_sealed_repository_lose_nothing() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let config = "[repos]\nvault = { sealed = \"vault-objects\" }\n[tokens]\n\"w\" = { access = \"write\", user = \"w\" }\n";
    let server = common::servers::HttpServer::start(config, t, 0);
    let url = server.url("vault");
    let cmd = |dir: &Path, args: &[&str]| {
        let mut c = dmv_cmd(dir);
        c.env("XDG_CONFIG_HOME", t.join("device"))
            .env("DMV_TOKEN", "w")
            .env_remove("DMV_PASSPHRASE")
            .args(args);
        c
    };
    let run = |dir: &Path, args: &[&str]| ok(cmd(dir, args).output().unwrap());
    run(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("base.txt"), "base\n").unwrap();
    run(&a, &["add", "."]);
    run(&a, &["commit", "-m", "base"]);
    run(&a, &["remote", "add", "origin", &url, "--encrypt"]);
    run(&a, &["push", "origin", "main"]);
    run(t, &["clone", "-q", &url, "b"]);
    run(t, &["clone", "-q", &url, "c"]);
    let (b, c) = (t.join("b"), t.join("c"));
    for round in 0..4u64 {
        for (dir, who) in [(&b, "b"), (&c, "c")] {
            let seed = round * 2 + (who == "c") as u64;
            write_noise(&dir.join(format!("{who}-{round}.bin")), 256 * 1024, seed);
            run(dir, &["add", "."]);
            run(dir, &["commit", "-m", &format!("{who} {round}")]);
        }
        let spawn = |dir: &Path| {
            cmd(dir, &["push", "origin", "main"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (pb, pc) = (spawn(&b), spawn(&c));
        let (ob, oc) = (
            pb.wait_with_output().unwrap(),
            pc.wait_with_output().unwrap(),
        );
        assert!(
            ob.status.success() != oc.status.success(),
            "round {round}: exactly one push must win: {} / {}",
            stderr(&ob),
            stderr(&oc)
        );
        let (loser_dir, loser) = if ob.status.success() {
            (&c, &oc)
        } else {
            (&b, &ob)
        };
        assert!(
            stderr(loser).contains("pull"),
            "round {round}: {}",
            stderr(loser)
        );
        run(loser_dir, &["pull", "origin", "main"]);
        run(loser_dir, &["push", "origin", "main"]);
        let winner_dir = if ob.status.success() { &b } else { &c };
        run(winner_dir, &["pull", "origin", "main"]);
    }
    run(t, &["clone", "-q", &url, "d"]);
    let d = t.join("d");
    for round in 0..4 {
        for who in ["b", "c"] {
            assert!(
                d.join(format!("{who}-{round}.bin")).exists(),
                "{who}'s round {round} was lost"
            );
        }
    }
    run(&d, &["fsck"]);
}

/// A rewrite paused after reading each object in turn while a `drop
/// --from` removes a version from the bucket: the rewrite brings back no
/// pack the drop deleted, the bucket claims nothing it lacks, and every
/// version kept stays readable.
#[test]
fn a_rewrite_brings_back_nothing_a_drop_removed_meanwhile() {
    let Some(minio) = S3Server::start_if_here(S3Kind::Minio) else {
        return;
    };
    minio.create_bucket("vault");
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let alice = t.join("alice");
    let a = one_file_pushed_encrypted(&minio, &alice, t);
    let packs = || -> std::collections::BTreeSet<String> {
        minio.list("vault", "r/packs/").into_iter().collect()
    };
    let objects = sealed_epochs(&minio, t).len();
    assert!(objects >= 4, "{objects} objects");
    for n in 1..=objects {
        let photo = format!("photo{n}.raw");
        write_noise(&a.join(&photo), 300_000, n as u64);
        ok(on(&minio, &alice, &a, &["add", "."]));
        ok(on(&minio, &alice, &a, &["commit", "-m", &photo]));
        ok(on(&minio, &alice, &a, &["push", "origin", "main"]));
        ok(on(&minio, &alice, &a, &["keys", "rotate"]));
        let before = packs();
        let mut rewrite = device_cmd(&minio, &alice, &a);
        rewrite.args(["keys", "rewrite"]);
        let paused = common::Paused::start(rewrite, &format!("bucket-reseal-read@{n}"));
        let drop = ["drop", "--from", "origin", "--numcopies", "1", &photo];
        ok(on(&minio, &alice, &a, &drop));
        let during = packs();
        let out = paused.resume();
        // The rewrite may finish or stop saying an object changed under
        // it; either way what the drop removed stays removed.
        let after = packs();
        let removed: Vec<_> = before.difference(&during).collect();
        assert!(
            !removed.is_empty(),
            "the drop at object {n} removed no pack"
        );
        for key in removed {
            assert!(
                !after.contains(key),
                "the rewrite paused at object {n} brought back {key} ({})",
                stderr(&out)
            );
        }
        let whereis = ok(on(&minio, &alice, &a, &["whereis", &photo]));
        assert!(!whereis.contains("origin"), "{whereis}");
        ok(on(&minio, &alice, &a, &["fsck", "--from", "origin"]));
    }
    ok(on(&minio, &alice, &a, &["keys", "rewrite"]));
    let epochs = sealed_epochs(&minio, t);
    let newest = epochs.iter().map(|(_, e)| *e).max().unwrap();
    assert!(epochs.iter().all(|(_, e)| *e == newest), "{epochs:?}");
    // What was never dropped is read back from the bucket alone.
    let clone = ["clone", "-q", "--slice", "paths:*.txt", "s3://vault/r", "c"];
    ok(on(&minio, &alice, t, &clone));
    assert_eq!(std::fs::read(t.join("c/one.txt")).unwrap(), b"one\n");
    ok(on(
        &minio,
        &alice,
        &t.join("c"),
        &["fsck", "--from", "origin"],
    ));
}

/// The epoch in the header of every sealed object under `vault/r`.
fn sealed_epochs(minio: &S3Server, t: &Path) -> Vec<(String, u32)> {
    let body = t.join("sealed-object");
    minio
        .list("vault", "r/")
        .into_iter()
        .filter(|k| k != "r/dmv-repository.json" && !k.starts_with("r/keys/"))
        .map(|k| {
            minio.get("vault", &k, &body);
            let bytes = std::fs::read(&body).unwrap();
            assert_eq!(&bytes[..5], b"DMVE\x01", "{k}");
            let epoch = u32::from_le_bytes(bytes[5..9].try_into().unwrap());
            (k, epoch)
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The same tests on the suite's second S3 implementation.
mod on_moto {
    use super::*;

    #[test]
    fn an_encrypted_remote_holds_only_ciphertext_and_opens_only_with_a_key() {
        holds_only_ciphertext(S3Kind::Moto);
    }

    #[test]
    fn an_object_the_storage_swaps_or_changes_is_refused_by_name() {
        refuses_what_the_storage_changes(S3Kind::Moto);
    }

    #[test]
    fn a_rewrite_leaves_a_removed_key_nothing_to_read_and_finishes_when_cut_short() {
        rewrites_and_rotates(S3Kind::Moto);
    }
}
