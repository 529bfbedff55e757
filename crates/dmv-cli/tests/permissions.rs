//! Write permissions by path (docs/server.md, "Write grants"): a token's
//! `write = ["art/**"]` lets its holder change only what the patterns
//! cover, whatever way into a branch they take: a push, a force push, a
//! pushed merge, a browser upload, a lock, a branch deletion. Over a
//! directory hub and over a bucket hub, each served by two servers: the
//! artist's change inside art/ lands, one outside is refused naming the
//! path, and the hub's refs are as they were after every refusal. A
//! change made and undone in a later commit is refused too.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::{http, HttpServer, S3Server, MINIO_SECRET, MINIO_USER};
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TOKENS: &str = "[tokens]\n\"tok-lead\" = { access = \"admin\", user = \"lead\" }\n\"tok-artist\" = { access = \"write\", user = \"artist\", write = [\"art/**\"] }\n";

/// A hub served by two servers, and how to run dmv against it.
struct Hub {
    servers: [HttpServer; 2],
    t: PathBuf,
    checks: std::cell::Cell<u32>,
}

impl Hub {
    fn url(&self, n: usize) -> String {
        self.servers[n].url("hub")
    }

    /// The hub's branches as a lead's fresh clone sees them.
    fn refs(&self) -> String {
        let n = self.checks.get() + 1;
        self.checks.set(n);
        let dir = self.t.join(format!("check{n}"));
        let out = run(
            &self.t,
            &[
                "clone",
                "--token",
                "tok-lead",
                &self.url(0),
                dir.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let refs = dmv(&dir, &["show-ref"]);
        let mut lines: Vec<&str> = refs
            .lines()
            .filter(|l| l.contains("refs/remotes/origin/") && !l.ends_with("/HEAD"))
            .collect();
        lines.sort_unstable();
        lines.join("\n")
    }

    fn branch(&self, name: &str) -> Option<String> {
        let suffix = format!(" refs/remotes/origin/{name}");
        self.refs()
            .lines()
            .find_map(|l| l.strip_suffix(&suffix).map(str::to_string))
    }
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let mut c = dmv_cmd(dir);
    c.env_remove("DMV_TOKEN").args(args);
    c.output().unwrap()
}

fn must(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "dmv {args:?}: {}{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must be refused for writing `path`, and checks
/// the hub's refs did not move.
fn refused(hub: &Hub, dir: &Path, args: &[&str], path: &str) {
    let before = hub.refs();
    let out = run(dir, args);
    let err = stderr(&out);
    assert!(!out.status.success(), "dmv {args:?} went through: {err}");
    assert!(
        err.contains("may not write") && err.contains(path),
        "dmv {args:?} should name {path}: {err}"
    );
    assert_eq!(hub.refs(), before, "dmv {args:?} moved the hub's refs");
}

fn head(dir: &Path) -> String {
    must(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

fn write(dir: &Path, file: &str, content: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn commit(dir: &Path, file: &str, content: &str, message: &str) -> String {
    write(dir, file, content);
    commit_all(dir, message);
    head(dir)
}

/// The lead's first commit: art, code and a README.
fn seed(t: &Path) -> PathBuf {
    let lead = t.join("lead");
    dmv(t, &["init", lead.to_str().unwrap()]);
    write(&lead, "README.md", "the game\n");
    write(&lead, "art/hero.psd", "hero v1");
    write(&lead, "code/main.rs", "fn main() {}\n");
    commit_all(&lead, "seed");
    lead
}

fn json_of(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A browser upload of one file into `folder` of main, as the artist:
/// the status and body of the commit.
fn upload(port: u16, seen: &str, folder: &str, name: &str) -> (u16, String) {
    let auth = [
        ("Authorization", "Bearer tok-artist"),
        ("Content-Type", "application/json"),
    ];
    let data = format!("{folder}/{name} from a browser");
    let (code, _, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &auth,
        format!(r#"{{"name":"{name}","size":{}}}"#, data.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_str().unwrap().to_string();
    let (code, _, body) = http(
        port,
        "PUT",
        &format!("/hub/uploads/{id}?offset=0"),
        &auth[..1],
        data.as_bytes(),
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

/// Every way into a branch, inside the grant and out of it.
fn every_way_in(hub: &Hub, lead: &Path) {
    let t = &hub.t;
    must(
        lead,
        &[
            "remote",
            "add",
            "origin",
            &hub.url(0),
            "--token",
            "tok-lead",
        ],
    );
    let artist = t.join("artist");
    must(
        t,
        &[
            "clone",
            "--token",
            "tok-artist",
            &hub.url(0),
            artist.to_str().unwrap(),
        ],
    );
    let artist = artist.as_path();
    // The second server of the same hub.
    must(
        artist,
        &["remote", "add", "b", &hub.url(1), "--token", "tok-artist"],
    );

    // A push inside the grant lands; one outside is refused, by either server.
    let mine = commit(artist, "art/hero.psd", "hero v2", "hero, brighter");
    must(artist, &["push", "origin", "main"]);
    assert_eq!(hub.branch("main").as_deref(), Some(mine.as_str()));
    commit(artist, "code/main.rs", "fn main() { cheat() }\n", "a fix");
    refused(hub, artist, &["push", "b", "main"], "code/main.rs");
    refused(hub, artist, &["push", "origin", "main"], "code/main.rs");
    must(artist, &["reset", "--hard", &mine]);

    // Whatever route the change takes: changed in one commit, restored in the next.
    commit(artist, "code/main.rs", "fn main() { cheat() }\n", "sneak");
    commit(artist, "code/main.rs", "fn main() {}\n", "and back");
    commit(artist, "art/hero.psd", "hero v3", "hero again");
    refused(hub, artist, &["push", "b", "main"], "code/main.rs");
    must(artist, &["reset", "--hard", &mine]);

    // A pushed merge: the lead's change to code/ comes in from the hub, the
    // artist's art/ change goes out with it.
    must(lead, &["pull", "origin", "main"]);
    commit(lead, "code/main.rs", "fn main() { run() }\n", "run");
    must(lead, &["push", "origin", "main"]);
    commit(artist, "art/villain.psd", "villain v1", "a villain");
    must(artist, &["pull", "origin", "main"]);
    let merged = head(artist);
    must(artist, &["push", "b", "main"]);
    assert_eq!(hub.branch("main").as_deref(), Some(merged.as_str()));
    // A merge bringing a change of the artist's own outside the grant is refused.
    must(artist, &["switch", "-c", "side"]);
    commit(artist, "code/main.rs", "fn main() { side() }\n", "side fix");
    must(artist, &["switch", "main"]);
    commit(artist, "art/villain.psd", "villain v2", "villain, darker");
    must(artist, &["merge", "side", "-m", "merge side"]);
    refused(hub, artist, &["push", "origin", "main"], "code/main.rs");
    must(artist, &["reset", "--hard", &merged]);

    // A force push that would drop the lead's commit to code/ is refused.
    must(lead, &["pull", "origin", "main"]);
    commit(
        lead,
        "code/main.rs",
        "fn main() { run(); quit() }\n",
        "quit",
    );
    must(lead, &["push", "origin", "main"]);
    commit(artist, "art/hero.psd", "hero v4", "hero, final");
    // Seen, and forced over all the same (a force push asks for a look first).
    must(artist, &["fetch", "b"]);
    refused(
        hub,
        artist,
        &["push", "--force", "b", "main"],
        "code/main.rs",
    );
    // One that drops only the artist's own art/ commits lands.
    let wip = commit(artist, "art/wip.psd", "sketch", "a sketch");
    must(artist, &["push", "origin", "main:wip"]);
    assert_eq!(hub.branch("wip").as_deref(), Some(wip.as_str()));
    must(artist, &["reset", "--hard", "HEAD~1"]);
    let redone = commit(artist, "art/wip.psd", "sketch, redone", "a sketch again");
    must(artist, &["fetch", "b"]);
    must(artist, &["push", "--force", "b", "main:wip"]);
    assert_eq!(hub.branch("wip").as_deref(), Some(redone.as_str()));

    // A browser upload: into art/ it lands, elsewhere it is refused (403).
    let seen = hub.branch("main").unwrap();
    let port = hub.servers[1].port;
    let (code, body) = upload(port, &seen, "art", "ref.png");
    assert_eq!(code, 200, "{body}");
    let uploaded = json_of(&body)["commit"].as_str().unwrap().to_string();
    assert_eq!(hub.branch("main").as_deref(), Some(uploaded.as_str()));
    let before = hub.refs();
    let (code, body) = upload(hub.servers[0].port, &uploaded, "code", "evil.rs");
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("code/evil.rs"), "{body}");
    assert_eq!(hub.refs(), before);

    // A lock: of art/ taken, of anything else refused naming it.
    must(artist, &["lock", "art/hero.psd"]);
    let out = run(artist, &["lock", "code/main.rs"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("code/main.rs"), "{}", stderr(&out));
    let locks = must(artist, &["locks"]);
    assert!(locks.contains("art/hero.psd"), "{locks}");
    assert!(!locks.contains("code/main.rs"), "{locks}");
    must(artist, &["unlock", "art/hero.psd"]);

    // A branch deletion needs the grant of every path the branch holds.
    refused(hub, artist, &["push", "b", "--delete", "wip"], "README.md");
    must(lead, &["push", "origin", "--delete", "wip"]);
    assert_eq!(hub.branch("wip"), None);
}

#[test]
fn a_directory_hub_holds_writers_to_their_paths() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let lead = seed(t);
    let dir = t.join("hub");
    dmv(t, &["init", "--bare", dir.to_str().unwrap()]);
    must(&lead, &["push", dir.to_str().unwrap(), "main"]);
    let config = format!("[repos]\nhub = \"hub\"\n{TOKENS}");
    std::fs::write(t.join("server.toml"), config).unwrap();
    let servers = [
        HttpServer::start_with(&t.join("server.toml"), 0),
        HttpServer::start_with(&t.join("server.toml"), 0),
    ];
    let hub = Hub {
        servers,
        t: t.to_path_buf(),
        checks: Default::default(),
    };
    every_way_in(&hub, &lead);
}

#[test]
fn a_bucket_hub_holds_writers_to_their_paths() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let minio = S3Server::minio();
    minio.create_bucket("studio");
    let lead = seed(t);
    let mut push = Command::new(bin());
    push.current_dir(&lead)
        .args(["push", "s3://studio/hub", "main"]);
    minio.env(&mut push);
    push.env("AWS_ENDPOINT_URL", minio.endpoint());
    let out = push.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nhub = {{ url = \"s3://studio/hub\", endpoint = \"{}\" }}\n{TOKENS}",
            minio.endpoint()
        ),
    )
    .unwrap();
    let env = [
        ("AWS_ACCESS_KEY_ID", MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let servers = [
        HttpServer::start_with_env(&config, 0, &env),
        HttpServer::start_with_env(&config, 0, &env),
    ];
    let hub = Hub {
        servers,
        t: t.to_path_buf(),
        checks: Default::default(),
    };
    every_way_in(&hub, &lead);
}

/// A grant that cannot be read stops the server at start, in one line.
#[test]
fn a_broken_write_list_stops_the_server_in_one_line() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    for (list, says) in [
        ("[\"art/[\"]", "not a glob"),
        (
            &format!("[{}]", vec!["\"a\""; 257].join(",")),
            "past the 256",
        ),
        (&format!("[\"{}\"]", "a".repeat(1025)), "past the 1024"),
    ] {
        let config = t.join("server.toml");
        std::fs::write(
            &config,
            format!("[repos]\nhub = \"hub\"\n[tokens]\n\"tok\" = {{ access = \"write\", user = \"u\", write = {list} }}\n"),
        )
        .unwrap();
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
        assert_eq!(
            err.trim()
                .lines()
                .filter(|l| !l.starts_with("warning"))
                .count(),
            1,
            "{err}"
        );
    }
}

/// `dmv tokens add --write` keeps the list; `list` shows it.
#[test]
fn tokens_keep_and_show_their_write_lists() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let file = t.join("tokens.toml");
    let file = file.to_str().unwrap();
    let token = must(
        t,
        &[
            "tokens",
            "--file",
            file,
            "add",
            "--user",
            "artist",
            "--access",
            "write",
            "--write",
            "art/**",
            "--write",
            "audio/*.wav",
        ],
    );
    assert_eq!(token.trim().len(), 64);
    let listed = must(t, &["tokens", "--file", file, "list"]);
    assert!(listed.contains("write art/**, audio/*.wav"), "{listed}");
    let json: serde_json::Value =
        serde_json::from_str(&must(t, &["tokens", "--file", file, "list", "--json"])).unwrap();
    assert_eq!(
        json[0]["write"],
        serde_json::json!(["art/**", "audio/*.wav"])
    );
    let bad = run(
        t,
        &[
            "tokens", "--file", file, "add", "--user", "x", "--access", "write", "--write", "a/[",
        ],
    );
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("not a glob"), "{}", stderr(&bad));
}

/// Groups: `[groups] artists = { write = ["art/**"] }`; a token in
/// several groups may write what any of them may (and its own `write`),
/// whether it is in `[tokens]` or made by `dmv tokens add --group`.
#[test]
fn a_member_writes_what_its_groups_grant_and_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let lead = seed(t);
    write(&lead, "audio/theme.wav", "la la");
    write(&lead, "docs/guide.md", "read me");
    commit_all(&lead, "audio and docs");
    let dir = t.join("hub");
    dmv(t, &["init", "--bare", dir.to_str().unwrap()]);
    must(&lead, &["push", dir.to_str().unwrap(), "main"]);
    let tokens = t.join("tokens.toml");
    let bea = must(
        t,
        &[
            "tokens",
            "--file",
            tokens.to_str().unwrap(),
            "add",
            "--user",
            "bea",
            "--access",
            "write",
            "--group",
            "audio",
            "--write",
            "docs/**",
        ],
    );
    let listed = must(t, &["tokens", "--file", tokens.to_str().unwrap(), "list"]);
    assert!(listed.contains("write docs/**  groups audio"), "{listed}");
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        "tokens_file = \"tokens.toml\"\n[repos]\nhub = \"hub\"\n\
         [groups]\nartists = { write = [\"art/**\"] }\naudio = { write = [\"audio/**\"] }\nleads = {}\n\
         [tokens]\n\"tok-lead\" = { access = \"write\", user = \"lead\", groups = [\"leads\"], write = [] }\n\
         \"tok-ann\" = { access = \"write\", user = \"ann\", groups = [\"artists\", \"audio\"] }\n",
    )
    .unwrap();
    let server = HttpServer::start_with(&config, 0);
    let hub = Hub {
        servers: [server, HttpServer::start_with(&config, 0)],
        t: t.to_path_buf(),
        checks: Default::default(),
    };
    for (user, token) in [("ann", "tok-ann"), ("bea", bea.trim())] {
        let clone = t.join(user);
        must(
            t,
            &[
                "clone",
                "--token",
                token,
                &hub.url(0),
                clone.to_str().unwrap(),
            ],
        );
        // Inside either group's paths (or the token's own) it lands.
        let own = match user {
            "ann" => "art/hero.psd",
            _ => "docs/guide.md",
        };
        commit(&clone, own, &format!("{user}'s change"), "mine");
        let tip = commit(
            &clone,
            "audio/theme.wav",
            &format!("{user}'s theme"),
            "theme",
        );
        must(&clone, &["push", "origin", "main"]);
        assert_eq!(hub.branch("main").as_deref(), Some(tip.as_str()));
        // Outside all of them it is refused, naming the path.
        let outside = match user {
            "ann" => "docs/guide.md",
            _ => "art/hero.psd",
        };
        commit(&clone, outside, "not yours", "overreach");
        refused(&hub, &clone, &["push", "origin", "main"], outside);
        must(&clone, &["reset", "--hard", &tip]);
    }
    // A group without `write` grants everything, whatever the token's own list.
    let lead_clone = t.join("lead2");
    must(
        t,
        &[
            "clone",
            "--token",
            "tok-lead",
            &hub.url(1),
            lead_clone.to_str().unwrap(),
        ],
    );
    let tip = commit(&lead_clone, "code/main.rs", "fn main() { go() }\n", "go");
    must(&lead_clone, &["push", "origin", "main"]);
    assert_eq!(hub.branch("main").as_deref(), Some(tip.as_str()));
}

/// A token naming a group the configuration lacks stops the server at
/// start, in one line, in `[tokens]` and in a tokens file alike.
#[test]
fn an_unknown_group_stops_the_server_in_one_line() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    dmv(t, &["init", "--bare", "hub"]);
    let tokens = t.join("tokens.toml");
    must(
        t,
        &[
            "tokens",
            "--file",
            tokens.to_str().unwrap(),
            "add",
            "--user",
            "x",
            "--access",
            "write",
            "--group",
            "sound",
        ],
    );
    for (text, says) in [
        (
            "[repos]\nhub = \"hub\"\n[groups]\nart = { write = [\"art/**\"] }\n[tokens]\n\"tok\" = { access = \"write\", user = \"u\", groups = [\"artists\"] }\n",
            "no group \"artists\"",
        ),
        (
            "tokens_file = \"tokens.toml\"\n[repos]\nhub = \"hub\"\n[groups]\nart = { write = [\"art/**\"] }\n",
            "no group \"sound\"",
        ),
        (
            "[repos]\nhub = \"hub\"\n[groups]\nart = { write = [\"art/[\"] }\n",
            "not a glob",
        ),
    ] {
        let config = t.join("server.toml");
        std::fs::write(&config, text).unwrap();
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
