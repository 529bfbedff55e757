//! `dmv serve [PATH…]` without a configuration file, and `dmv tokens`:
//! a first start makes an admin token and prints the address that logs in
//! with it, tokens added and revoked while the server runs count from the
//! next request, a web upload is authored by the token's person, and what
//! cannot be served (two repositories of one name, a broken tokens file)
//! stops in one line. Real processes on loopback, each with a home of its
//! own.

use crate::common;
use common::remote::*;
use common::servers::http;
use common::*;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A home of its own: the tokens file and the global settings live there.
struct Home {
    dir: PathBuf,
}

impl Home {
    fn new(t: &Path) -> Home {
        let dir = t.join("home");
        std::fs::create_dir_all(&dir).unwrap();
        Home { dir }
    }

    fn tokens_file(&self) -> PathBuf {
        self.dir.join(".config/dmv/server-tokens.toml")
    }

    /// `dmv ARGS` in `dir` with this home, and no author from the
    /// environment (the repository's user.name counts).
    fn cmd(&self, dir: &Path) -> Command {
        let mut c = dmv_cmd(dir);
        c.env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join(".config"))
            .env_remove("DMV_TOKEN");
        c
    }

    fn run(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.cmd(dir).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "dmv {args:?}: {}{}",
            stderr(&out),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn out(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir).args(args).output().unwrap()
    }

    /// `dmv tokens add …`: the token printed, alone on its line.
    fn add_token(&self, dir: &Path, args: &[&str]) -> String {
        let mut all = vec!["tokens", "add"];
        all.extend_from_slice(args);
        let out = self.run(dir, &all);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(
            lines[0].len() == 64 && lines[0].bytes().all(|b| b.is_ascii_hexdigit()),
            "{out:?}"
        );
        lines[0].to_string()
    }

    fn tokens_json(&self, dir: &Path) -> (String, serde_json::Value) {
        let out = self.run(dir, &["tokens", "list", "--json"]);
        let json = serde_json::from_str(&out).unwrap();
        (out, json)
    }
}

/// A running `dmv serve [ARGS]`, killed on drop, with its start lines.
struct Served {
    child: Child,
    port: u16,
    lines: Vec<String>,
}

impl Served {
    /// Starts it in `dir` and reads its start lines, up to the one that
    /// says where to log in.
    fn start(home: &Home, dir: &Path, args: &[&str]) -> Served {
        let mut child = home
            .cmd(dir)
            .env_remove("DMV_AUTHOR_NAME")
            .env_remove("DMV_AUTHOR_EMAIL")
            .arg("serve")
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = Vec::new();
        loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("serve stopped after {seen:?}"))
                .unwrap();
            let done = line.contains("/login");
            seen.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        // The first line is what scripts and the other tests parse.
        let first = &seen[0];
        assert!(
            first.starts_with("dmv serve: listening on http://127.0.0.1:"),
            "{seen:?}"
        );
        let port = first.rsplit(':').next().unwrap().parse().unwrap();
        Served {
            child,
            port,
            lines: seen,
        }
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// The token in the login address the first start printed.
    fn login_token(&self) -> Option<String> {
        self.lines.iter().find_map(|l| {
            l.split("/login#token=")
                .nth(1)
                .map(|t| t.trim().to_string())
        })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_of(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A push with `token` in DMV_TOKEN: its output.
fn push_with(home: &Home, work: &Path, token: &str, url: &str) -> Output {
    home.cmd(work)
        .env("DMV_TOKEN", token)
        .args(["push", url, "main"])
        .output()
        .unwrap()
}

fn commit_file(home: &Home, work: &Path, name: &str, text: &str) {
    std::fs::write(work.join(name), text).unwrap();
    home.run(work, &["add", "."]);
    home.run(work, &["commit", "-m", name]);
}

#[test]
fn serve_without_a_config_with_tokens_managed_while_it_runs() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let home = Home::new(t);
    // A working tree whose own settings name its person, and a bare hub.
    let photos = t.join("photos");
    home.run(t, &["init", photos.to_str().unwrap()]);
    home.run(&photos, &["config", "user.name", "Lea Lead"]);
    home.run(&photos, &["config", "user.email", "lea@example.com"]);
    commit_file(&home, &photos, "one.txt", "first photo");
    let studio = t.join("studio.dmv");
    home.run(t, &["init", "--bare", studio.to_str().unwrap()]);

    let server = Served::start(&home, &photos, &[".", studio.to_str().unwrap()]);
    let lines = server.lines.join("\n");
    assert!(
        lines.contains("serving photos, studio"),
        "names without .dmv: {lines}"
    );
    assert!(lines.contains(&format!("http://127.0.0.1:{}/", server.port)));
    let admin = server.login_token().expect("a login address with a token");
    assert!(lines.contains(&format!(
        "http://127.0.0.1:{}/login#token={admin}",
        server.port
    )));
    // Kept as a hash, readable by its owner only.
    let file = std::fs::read_to_string(home.tokens_file()).unwrap();
    assert!(!file.contains(&admin), "{file}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.tokens_file())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    let (_, listed) = home.tokens_json(t);
    assert_eq!(listed[0]["access"], "admin");
    assert_eq!(listed[0]["user"], "Lea Lead");
    assert_eq!(listed[0]["email"], "lea@example.com");

    // The login address's token logs a browser in: the repository's page.
    let port = server.port;
    let (code, _, _) = http(port, "GET", "/photos/", &[], b"");
    assert_eq!(code, 401, "no login, no page");
    let body = format!("token={admin}");
    let (code, head, _) = http(
        port,
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    );
    assert_eq!(code, 303, "{head}");
    let cookie = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or(l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no cookie: {head}"))
        .to_string();
    let (code, _, page) = http(port, "GET", "/photos/", &[("Cookie", &cookie)], b"");
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("photos"), "{page}");

    // Clones need a token; the admin's clones and pushes.
    let out = home.out(t, &["clone", &server.url("photos"), "nope"]);
    assert!(!out.status.success(), "a clone without a token");
    assert!(
        stderr(&out).contains("401") || stderr(&out).contains("needs a token"),
        "{}",
        stderr(&out)
    );
    home.run(
        t,
        &["clone", "--token", &admin, &server.url("photos"), "copy"],
    );
    assert_eq!(
        std::fs::read_to_string(t.join("copy/one.txt")).unwrap(),
        "first photo"
    );
    let out = push_with(&home, &t.join("copy"), &admin, &server.url("studio"));
    assert!(out.status.success(), "{}", stderr(&out));

    // A write token made while the server runs pushes at once.
    let ann = home.add_token(
        t,
        &[
            "--user",
            "ann",
            "--name",
            "Ann Example",
            "--email",
            "ann@example.com",
            "--access",
            "write",
        ],
    );
    home.run(t, &["clone", "--token", &ann, &server.url("studio"), "ann"]);
    let work = t.join("ann");
    commit_file(&home, &work, "two.txt", "second photo");
    let out = push_with(&home, &work, &ann, &server.url("studio"));
    assert!(out.status.success(), "{}", stderr(&out));

    // A browser upload with it is authored by Ann, name and email.
    let bearer = format!("Bearer {ann}");
    let json = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let (code, _, body) = http(
        port,
        "POST",
        "/studio/uploads",
        &json,
        br#"{"name":"phone.jpg","size":5}"#,
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_str().unwrap().to_string();
    let (code, _, body) = http(
        port,
        "PUT",
        &format!("/studio/uploads/{id}?offset=0"),
        &[("Authorization", bearer.as_str())],
        b"hello",
    );
    assert_eq!(code, 200, "{body}");
    let seen = home.run(&studio, &["rev-parse", "main"]).trim().to_string();
    let commit = format!(
        r#"{{"branch":"main","seen":"{seen}","folder":"phone","message":"from the phone","files":[{{"name":"phone.jpg","id":"{id}"}}]}}"#
    );
    let (code, _, body) = http(
        port,
        "POST",
        "/studio/commit-uploads",
        &json,
        commit.as_bytes(),
    );
    assert_eq!(code, 200, "{body}");
    let author = home.run(&studio, &["log", "-n", "1", "--format=%an <%ae>", "main"]);
    assert_eq!(author.trim(), "Ann Example <ann@example.com>");

    // A read token reads and cannot push.
    let reader = home.add_token(t, &["--user", "rita", "--access", "read"]);
    home.run(
        t,
        &["clone", "--token", &reader, &server.url("studio"), "rita"],
    );
    commit_file(&home, &t.join("rita"), "three.txt", "third");
    let out = push_with(&home, &t.join("rita"), &reader, &server.url("studio"));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("may read but not write"),
        "{}",
        stderr(&out)
    );

    // The list shows who, never a secret.
    let (text, listed) = home.tokens_json(t);
    for secret in [&admin, &ann, &reader] {
        assert!(!text.contains(secret.as_str()), "{text}");
    }
    let entries = listed.as_array().unwrap();
    assert_eq!(entries.len(), 3, "{text}");
    let ann_entry = entries.iter().find(|e| e["user"] == "ann").unwrap();
    assert_eq!(ann_entry["name"], "Ann Example");
    assert_eq!(ann_entry["email"], "ann@example.com");
    assert_eq!(ann_entry["access"], "write");
    assert!(ann_entry.get("hash").is_none() && ann_entry.get("token").is_none());
    let plain = home.run(t, &["tokens", "list"]);
    assert!(plain.contains("Ann Example <ann@example.com>"), "{plain}");

    // Revoked while the server runs: the next push is refused, 403.
    let ann_id = ann_entry["id"].as_str().unwrap();
    home.run(t, &["tokens", "revoke", ann_id]);
    commit_file(&home, &work, "four.txt", "fourth");
    let out = push_with(&home, &work, &ann, &server.url("studio"));
    assert!(!out.status.success(), "a revoked token pushed");
    assert!(
        stderr(&out).contains("not valid for this server"),
        "{}",
        stderr(&out)
    );
    let (code, _, _) = http(
        port,
        "GET",
        "/studio/",
        &[("Authorization", bearer.as_str())],
        b"",
    );
    assert_eq!(code, 401, "a revoked token browses");
    let out = home.out(t, &["tokens", "revoke", ann_id]);
    assert!(one_line_error(&out).contains("no token"));
    drop(server);

    // A second start, from a folder inside the working tree: the same
    // repository by default, and no new admin token.
    let sub = photos.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let again = Served::start(&home, &sub, &["--listen", "127.0.0.1:0"]);
    let lines = again.lines.join("\n");
    assert!(again.login_token().is_none(), "{lines}");
    assert!(lines.contains("serving photos "), "{lines}");
    assert!(lines.contains("dmv tokens add"), "{lines}");
    assert!(lines.contains(&format!("http://127.0.0.1:{}/login", again.port)));
    let (_, listed) = home.tokens_json(t);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    home.run(
        t,
        &["clone", "--token", &admin, &again.url("photos"), "copy2"],
    );
}

#[test]
fn what_cannot_be_served_stops_in_one_line() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let home = Home::new(t);
    for side in ["a", "b"] {
        std::fs::create_dir_all(t.join(side)).unwrap();
        home.run(&t.join(side), &["init", "photos"]);
    }
    // Two repositories of one name.
    let out = home.out(
        t,
        &["serve", "a/photos", "b/photos", "--listen", "127.0.0.1:0"],
    );
    let line = one_line_error(&out);
    assert!(line.contains("both be served as photos"), "{line}");
    // Paths with a configuration file.
    std::fs::write(t.join("server.toml"), "[repos]\nx = \"a/photos\"\n").unwrap();
    let out = home.out(t, &["serve", "--config", "server.toml", "a/photos"]);
    assert!(one_line_error(&out).contains("give no PATH"));
    // Not a repository.
    let out = home.out(t, &["serve", "--listen", "127.0.0.1:0"]);
    one_line_error(&out);
    // A broken tokens file, for the server and for `dmv tokens`.
    let file = home.tokens_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for broken in [
        &b"[[token]\nid = 1"[..],
        &b"[[token]]\nid = \"a\"\nhash = \"00\"\naccess = \"read\"\nuser = \"u\"\ncreated = 1\n"[..],
        &[0xff, 0xfe, 0x00][..],
    ] {
        std::fs::write(&file, broken).unwrap();
        let out = home.out(&t.join("a/photos"), &["serve", "--listen", "127.0.0.1:0"]);
        let line = one_line_error(&out);
        assert!(line.contains("server-tokens.toml"), "{line}");
        let out = home.out(t, &["tokens", "list"]);
        assert!(one_line_error(&out).contains("server-tokens.toml"));
    }
    // A server's TOML takes a tokens file too, relative to itself.
    std::fs::write(
        t.join("server.toml"),
        "tokens_file = \"tokens.toml\"\n[repos]\nx = \"a/photos\"\n",
    )
    .unwrap();
    std::fs::write(t.join("tokens.toml"), "garbage =").unwrap();
    let out = home.out(
        t,
        &[
            "serve",
            "--config",
            "server.toml",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    assert!(one_line_error(&out).contains("tokens.toml"));
    let out = home.out(t, &["tokens", "add", "--user", "x", "--access", "root"]);
    assert!(!out.status.success());
}

/// A server's TOML naming a tokens file takes its tokens besides its
/// `[tokens]` table, and sees a token added to it without a restart.
#[test]
fn a_configured_server_takes_tokens_from_a_tokens_file() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    let home = Home::new(t);
    let hub = t.join("hub");
    home.run(t, &["init", "--bare", hub.to_str().unwrap()]);
    let work = t.join("work");
    home.run(t, &["init", work.to_str().unwrap()]);
    commit_file(&home, &work, "a.txt", "a");
    let config = t.join("server.toml");
    std::fs::write(
        &config,
        "read = \"token\"\ntokens_file = \"tokens.toml\"\n[repos]\nhub = \"hub\"\n[tokens]\n\"table-token\" = { access = \"write\", user = \"tab\", name = \"Tab Le\", email = \"tab@example.com\" }\n",
    )
    .unwrap();
    let server = common::servers::HttpServer::start_with(&config, 0);
    let url = server.url("hub");
    let out = push_with(&home, &work, "table-token", &url);
    assert!(out.status.success(), "{}", stderr(&out));
    let from_file = home.add_token(
        t,
        &["--file", "tokens.toml", "--user", "fi", "--access", "write"],
    );
    commit_file(&home, &work, "b.txt", "b");
    let out = push_with(&home, &work, &from_file, &url);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = push_with(&home, &work, "wrong", &url);
    assert!(!out.status.success());
}
