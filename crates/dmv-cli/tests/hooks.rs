//! The server's pre-receive hook (docs/server.md, "A pre-receive hook"):
//! a shell script a real `dmv serve` runs before any branch or tag moves,
//! refusing new files with capitals in their names, files over 9,999 bytes
//! and the deletion of main. A refused push says the script's lines as
//! `remote: …`, leaves the hub's branch where it was and the audit log
//! without a push; an allowed one lands, and the JSON the script read is
//! checked field by field. A browser upload, a ref deletion, a hook that
//! hangs (killed at its timeout) and a hub in a bucket (MinIO) behind it.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::commit_all;
use common::servers::{http, HttpServer, S3Server, MINIO_SECRET, MINIO_USER};
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const TOKENS: &str = "[tokens]\n\"tok-lead\" = { access = \"admin\", user = \"lead\" }\n\"tok-artist\" = { access = \"write\", user = \"artist\" }\n";

/// The studio's rules, as a script that keeps what it read in `seen/`.
fn studio_hook(t: &Path) -> PathBuf {
    let seen = t.join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let script = format!(
        r#"#!/bin/sh
cat > '{seen}/input.json'
echo "$DMV_USER $DMV_REPO" > '{seen}/env'
if grep -q '"path":"[^"]*[A-Z][^"]*","change":"added"' '{seen}/input.json'; then
  printf 'names are lowercase here:\033[31m rename the file\n' >&2
  echo 'see the studio handbook' >&2
  exit 1
fi
if grep -Eq '"size":[0-9]{{5,}}' '{seen}/input.json'; then
  echo 'files over 9999 bytes go through the lead' >&2
  exit 3
fi
if grep -q '"ref":"refs/heads/main","old":"[0-9a-f]*","new":null' '{seen}/input.json'; then
  echo 'main is never deleted' >&2
  exit 1
fi
exit 0
"#,
        seen = seen.display()
    );
    write_script(&t.join("hook.sh"), &script)
}

fn write_script(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.to_path_buf()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    dmv_cmd(dir)
        .env_remove("DMV_TOKEN")
        .args(args)
        .output()
        .unwrap()
}

fn must(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(out.status.success(), "dmv {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(dir: &Path, file: &str, content: &[u8]) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn head(dir: &Path) -> String {
    must(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The hub's main as a fresh clone by the lead sees it.
fn hub_main(t: &Path, url: &str) -> String {
    let dir = tempfile::tempdir_in(t).unwrap();
    let clone = dir.path().join("c");
    must(
        t,
        &["clone", "--token", "tok-lead", url, clone.to_str().unwrap()],
    );
    head(&clone)
}

/// The lead's first commit, and an artist's clone of the hub at `url`.
fn seed_and_clone(t: &Path, push_to: &mut Command, url: &str) -> PathBuf {
    let lead = t.join("lead");
    must(t, &["init", lead.to_str().unwrap()]);
    write(&lead, "README.md", b"the game\n");
    write(&lead, "art/hero.psd", b"hero v1");
    commit_all(&lead, "seed");
    let out = push_to.current_dir(&lead).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let artist = t.join("artist");
    must(
        t,
        &[
            "clone",
            "--token",
            "tok-artist",
            url,
            artist.to_str().unwrap(),
        ],
    );
    artist
}

/// A refused push: non-zero, the hook's lines as `remote: …` (escapes
/// gone), the hub's main where it was.
fn refused_with(t: &Path, artist: &Path, url: &str, args: &[&str], says: &[&str]) {
    let before = hub_main(t, url);
    let out = run(artist, args);
    let err = stderr(&out);
    assert!(!out.status.success(), "dmv {args:?} went through: {err}");
    assert!(err.contains("pre-receive hook"), "{err}");
    for line in says {
        assert!(
            err.lines().any(|l| l == format!("remote: {line}")),
            "dmv {args:?} should say `remote: {line}` on a line of its own: {err}"
        );
    }
    assert!(!err.contains('\x1b'), "{err:?}");
    assert_eq!(hub_main(t, url), before, "dmv {args:?} moved main");
}

/// A browser upload of one file into `folder` of main as the artist:
/// the commit's status and body.
fn upload(port: u16, seen: &str, folder: &str, name: &str, data: &[u8]) -> (u16, String) {
    let auth = [
        ("Authorization", "Bearer tok-artist"),
        ("Content-Type", "application/json"),
    ];
    let (code, _, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &auth,
        format!(r#"{{"name":"{name}","size":{}}}"#, data.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let id = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, body) = http(
        port,
        "PUT",
        &format!("/hub/uploads/{id}?offset=0"),
        &auth[..1],
        data,
    );
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(
        port,
        "POST",
        "/hub/commit-uploads",
        &auth,
        format!(
            r#"{{"branch":"main","seen":"{seen}","folder":"{folder}","message":"uploaded","files":[{{"name":"{name}","id":"{id}"}}]}}"#
        )
        .as_bytes(),
    );
    (code, body)
}

/// Every rule of the studio's hook, over the hub at `url` (`port`).
fn the_hook_guards_every_way_in(t: &Path, artist: &Path, url: &str, port: u16) {
    let seen = t.join("seen");
    let seed = head(artist);
    // A name with capitals: refused, with the script's two lines.
    write(artist, "art/Hero2.PSD", b"hero two");
    commit_all(artist, "a second hero");
    refused_with(
        t,
        artist,
        url,
        &["push", "origin", "main"],
        &[
            "names are lowercase here:[31m rename the file",
            "see the studio handbook",
        ],
    );
    must(artist, &["reset", "--hard", &seed]);
    // Too large.
    write(artist, "art/sky.png", &[7u8; 20_000]);
    commit_all(artist, "a big sky");
    refused_with(
        t,
        artist,
        url,
        &["push", "origin", "main"],
        &["files over 9999 bytes go through the lead"],
    );
    let err = stderr(&run(artist, &["push", "origin", "main"]));
    assert!(err.contains("exited with status 3"), "{err}");
    must(artist, &["reset", "--hard", &seed]);

    // An allowed push lands; the hook read who, where and what, field by field.
    write(artist, "art/hero.psd", b"hero v2, brighter");
    write(artist, "art/sky.png", &[7u8; 900]);
    std::fs::remove_file(artist.join("README.md")).unwrap();
    must(artist, &["add", "-A", "."]);
    must(artist, &["commit", "-m", "sky, hero, no readme"]);
    let tip = head(artist);
    must(artist, &["push", "origin", "main"]);
    assert_eq!(hub_main(t, url), tip);
    let input: serde_json::Value =
        serde_json::from_slice(&std::fs::read(seen.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["user"], "artist");
    assert_eq!(input["repository"], "hub");
    let refs = input["refs"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{input}");
    assert_eq!(refs[0]["ref"], "refs/heads/main");
    assert_eq!(refs[0]["old"], seed.as_str());
    assert_eq!(refs[0]["new"], tip.as_str());
    assert_eq!(refs[0]["truncated"], false);
    assert_eq!(
        refs[0]["paths"],
        serde_json::json!([
            {"path": "README.md", "change": "deleted", "size": 9},
            {"path": "art/hero.psd", "change": "modified", "size": 17},
            {"path": "art/sky.png", "change": "added", "size": 900},
        ])
    );
    assert_eq!(
        std::fs::read_to_string(seen.join("env")).unwrap().trim(),
        "artist hub"
    );

    // A new branch is told as made from nothing; deleting it is fine,
    // deleting main is refused.
    must(artist, &["push", "origin", "main:wip"]);
    let input: serde_json::Value =
        serde_json::from_slice(&std::fs::read(seen.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["refs"][0]["old"], serde_json::Value::Null);
    assert_eq!(input["refs"][0]["new"], tip.as_str());
    must(artist, &["push", "origin", "--delete", "wip"]);
    refused_with(
        t,
        artist,
        url,
        &["push", "origin", "--delete", "main"],
        &["main is never deleted"],
    );

    // A browser upload goes through the hook too.
    let (code, body) = upload(port, &tip, "art", "Moon.png", b"moon");
    assert!(!(200..300).contains(&code), "{code} {body}");
    assert!(body.contains("names are lowercase here"), "{body}");
    assert_eq!(hub_main(t, url), tip);
    let (code, body) = upload(port, &tip, "art", "moon.png", b"moon");
    assert_eq!(code, 200, "{body}");
    assert_ne!(hub_main(t, url), tip);
}

fn config_with(t: &Path, hook: &Path, timeout: u64, repos: &str) -> PathBuf {
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "pre_receive = [{:?}]\npre_receive_timeout_secs = {timeout}\n[repos]\n{repos}\n{TOKENS}",
            hook.to_str().unwrap()
        ),
    )
    .unwrap();
    config
}

/// The audit log's push events.
fn pushes_audited(hub: &Path) -> usize {
    must(hub, &["audit", "--json"])
        .lines()
        .filter(|l| l.contains("\"event\":\"push\""))
        .count()
}

#[test]
fn a_directory_hub_runs_its_pre_receive_hook_on_every_way_in() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let hub = t.join("hub");
    must(t, &["init", "--bare", hub.to_str().unwrap()]);
    let hook = studio_hook(t);
    let config = config_with(t, &hook, 60, "hub = \"hub\"");
    let server = HttpServer::start_with(&config, 0);
    let url = server.url("hub");
    let mut push = dmv_cmd(t);
    push.args(["push", hub.to_str().unwrap(), "main"]);
    let artist = seed_and_clone(t, &mut push, &url);

    // A refused push leaves no push in the audit log.
    let audited = pushes_audited(&hub);
    write(&artist, "art/Villain.psd", b"villain");
    commit_all(&artist, "a villain");
    refused_with(t, &artist, &url, &["push", "origin", "main"], &[]);
    assert_eq!(pushes_audited(&hub), audited);
    must(&artist, &["reset", "--hard", "HEAD~1"]);

    the_hook_guards_every_way_in(t, &artist, &url, server.port);
    assert!(pushes_audited(&hub) > audited);
}

#[test]
fn a_hook_that_hangs_is_killed_at_its_timeout_and_the_push_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let hub = t.join("hub");
    must(t, &["init", "--bare", hub.to_str().unwrap()]);
    // It starts a child that would keep its pipes open for a minute too.
    let hook = write_script(
        &t.join("hang.sh"),
        "#!/bin/sh\necho 'thinking it over' >&2\nsleep 60 &\nsleep 60\n",
    );
    let config = config_with(t, &hook, 1, "hub = \"hub\"");
    let server = HttpServer::start_with(&config, 0);
    let url = server.url("hub");
    let mut push = dmv_cmd(t);
    push.args(["push", hub.to_str().unwrap(), "main"]);
    let artist = seed_and_clone(t, &mut push, &url);
    write(&artist, "art/hero.psd", b"hero v2");
    commit_all(&artist, "brighter");
    let started = Instant::now();
    refused_with(
        t,
        &artist,
        &url,
        &["push", "origin", "main"],
        &["thinking it over"],
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let err = stderr(&run(&artist, &["push", "origin", "main"]));
    assert!(err.contains("ran past its 1 s and was killed"), "{err}");
}

#[test]
fn a_broken_hook_setting_stops_the_server_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    must(t, &["init", "--bare", "hub"]);
    for (keys, says) in [
        ("pre_receive = []", "pre_receive: give the program"),
        ("pre_receive = [\"./no-such-hook\"]", "is not a file"),
        (
            "pre_receive = [\"true\"]\npre_receive_timeout_secs = 0",
            "pre_receive_timeout_secs = 0",
        ),
    ] {
        let config = t.join("server.toml");
        std::fs::write(&config, format!("{keys}\n[repos]\nhub = \"hub\"\n")).unwrap();
        let out = run(
            t,
            &[
                "serve",
                "--config",
                config.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ],
        );
        let err = stderr(&out);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(says), "{err}");
        let lines = err.trim().lines().filter(|l| !l.starts_with("warning"));
        assert_eq!(lines.count(), 1, "{err}");
    }
}

#[test]
fn a_bucket_hub_runs_its_pre_receive_hook_on_every_way_in() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let minio = S3Server::minio();
    minio.create_bucket("studio");
    let hook = studio_hook(t);
    let config = config_with(
        t,
        &hook,
        60,
        &format!(
            "hub = {{ url = \"s3://studio/hub\", endpoint = \"{}\" }}",
            minio.endpoint()
        ),
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let server = HttpServer::start_with_env(&config, 0, &env);
    let url = server.url("hub");
    let mut push = Command::new(bin());
    push.args(["push", "s3://studio/hub", "main"]);
    minio.env(&mut push);
    push.env("AWS_ENDPOINT_URL", minio.endpoint());
    let artist = seed_and_clone(t, &mut push, &url);
    the_hook_guards_every_way_in(t, &artist, &url, server.port);
}
