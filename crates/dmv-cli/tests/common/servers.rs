//! Real servers on loopback for the sync tests: OpenSSH's sshd with its own
//! keys and config, and `dmv serve` over HTTP. Both are killed on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::bin;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16, child: &mut Child, log: &Path) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "server exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "server did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub struct Sshd {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Sshd {
    /// Starts sshd on 127.0.0.1 accepting one fresh key for the current user.
    pub fn start() -> Sshd {
        let sshd = Path::new("/usr/sbin/sshd");
        assert!(
            sshd.exists(),
            "openssh-server is not installed (scripts/test installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .unwrap();
            assert!(ok.success());
        }
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n",
            d.join("host_key").display(),
            d.join("sshd.pid").display(),
            d.join("authorized_keys").display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let log = d.join("sshd.log");
        let mut child = Command::new(sshd)
            .arg("-D")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .arg("-E")
            .arg(&log)
            .spawn()
            .unwrap();
        wait_for_port(port, &mut child, &log);
        Sshd { child, port, dir }
    }

    /// The listening daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The value for DMV_SSH: the system ssh with this server's key.
    pub fn ssh_command(&self) -> String {
        format!("ssh -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR", self.dir.path().join("client_key").display())
    }

    pub fn url(&self, path: &Path) -> String {
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "root".into());
        format!("ssh://{user}@127.0.0.1:{}{}", self.port, path.display())
    }

    /// Sets what an ssh remote needs on a dmv command.
    pub fn env(&self, cmd: &mut Command) {
        cmd.env("DMV_SSH", self.ssh_command())
            .env("DMV_REMOTE_DMV", bin());
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct HttpServer {
    pub child: Child,
    pub port: u16,
    pub config: PathBuf,
    /// What the server printed after its first line (its access log, with `access_log = true`).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// The first line `dmv serve` printed that is not a warning (test
/// configurations are readable by others, which serve warns of).
fn listening_line(lines: &mut std::io::Lines<BufReader<std::process::ChildStderr>>) -> String {
    loop {
        let line = lines.next().expect("serve printed nothing").unwrap();
        if !line.starts_with("warning: ") {
            return line;
        }
    }
}

impl HttpServer {
    /// Starts `dmv serve` with a TOML config; `port` 0 picks a free one.
    pub fn start(config_text: &str, dir: &Path, port: u16) -> HttpServer {
        let config = dir.join("server.toml");
        std::fs::write(&config, config_text).unwrap();
        Self::start_with(&config, port)
    }

    pub fn start_with(config: &Path, port: u16) -> HttpServer {
        Self::start_with_env(config, port, &[])
    }

    /// [`HttpServer::start_with`] with extra environment for the server (test hooks).
    pub fn start_with_env(config: &Path, port: u16, env: &[(&str, &str)]) -> HttpServer {
        let mut child = Command::new(bin())
            .envs(env.iter().copied())
            .arg("serve")
            .arg("--config")
            .arg(config)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = listening_line(&mut lines);
        let port: u16 = first
            .rsplit(':')
            .next()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"));
        HttpServer {
            child,
            port,
            config: config.to_path_buf(),
            log: keep_lines(lines),
        }
    }

    /// Starts `dmv serve --config CONFIG --listen 127.0.0.1:0 ARGS…` and
    /// returns it with the line it printed first (`… listening on URL`).
    pub fn start_with_args(config: &Path, args: &[&str]) -> (HttpServer, String) {
        let mut child = Command::new(bin())
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = listening_line(&mut lines);
        let port: u16 = first
            .rsplit(':')
            .next()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"));
        (
            HttpServer {
                child,
                port,
                config: config.to_path_buf(),
                log: keep_lines(lines),
            },
            first,
        )
    }

    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drains the server's stderr on a thread of its own (so it never blocks
/// on it), keeping the lines.
fn keep_lines(
    lines: std::io::Lines<BufReader<std::process::ChildStderr>>,
) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .for_each(|l| kept.lock().unwrap_or_else(|e| e.into_inner()).push(l))
    });
    log
}

/// Lines of a server's stderr shown when a test fails.
const LINES_SHOWN: usize = 200;

impl Drop for HttpServer {
    /// When the test failed, shows what the server said last: a connection
    /// cut mid-answer is otherwise a client's "unexpected EOF" with no cause.
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            for line in &log[log.len().saturating_sub(LINES_SHOWN)..] {
                eprintln!("dmv serve on port {}: {line}", self.port);
            }
        }
    }
}

/// Which S3 implementation an [`S3Server`] runs. The suite runs the bucket
/// tests on MinIO, and the encrypted remote's and a few others on moto as
/// well: a second implementation (in Python, slower, which widens the race
/// windows MinIO's speed hides) keeps DMV to what S3 promises rather than
/// to what one server happens to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S3Kind {
    Minio,
    Moto,
}

/// A real S3 server on 127.0.0.1, MinIO (`DMV_MINIO` names the binary) or
/// moto (`DMV_MOTO`); scripts/test installs both when missing. MinIO keeps
/// its objects in a data folder of its own, moto in its memory (lost at
/// [`S3Server::stop`]). Killed on drop.
pub struct S3Server {
    kind: S3Kind,
    child: Option<Child>,
    pub port: u16,
    data: tempfile::TempDir,
}

pub const MINIO_USER: &str = "dmv-test-user";
pub const MINIO_SECRET: &str = "dmv-test-secret-key";

/// The cache folder scripts/test installs servers into.
fn test_cache() -> PathBuf {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"))
        .join("dmv-test")
}

/// `name` in `env`, else the first of `candidates` or PATH that exists.
fn find_program(env: &str, name: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name));
    on_path
        .chain(candidates.iter().cloned())
        .find(|p| p.is_file())
}

/// The MinIO binary: `DMV_MINIO`, else on PATH or where scripts/test builds it.
pub fn find_minio() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let candidates = [test_cache().join("bin/minio"), home.join("go/bin/minio")];
    find_program("DMV_MINIO", "minio", &candidates)
}

/// moto's server: `DMV_MOTO`, else on PATH or in the virtual environment
/// scripts/test installs it into.
pub fn find_moto() -> Option<PathBuf> {
    let candidates = [test_cache().join("moto/bin/moto_server")];
    find_program("DMV_MOTO", "moto_server", &candidates)
}

impl S3Server {
    /// A MinIO.
    pub fn minio() -> S3Server {
        S3Server::start(S3Kind::Minio)
    }

    pub fn start(kind: S3Kind) -> S3Server {
        let mut m = S3Server {
            kind,
            child: None,
            port: free_port(),
            data: tempfile::tempdir().unwrap(),
        };
        m.restart();
        m
    }

    /// A server of `kind`, or None when this machine lacks one (said on
    /// stderr; under scripts/test the calling test fails instead).
    pub fn start_if_here(kind: S3Kind) -> Option<S3Server> {
        let need = match kind {
            S3Kind::Minio => super::needs::Need::Minio,
            S3Kind::Moto => super::needs::Need::Moto,
        };
        (!super::needs::lacks(&[need])).then(|| S3Server::start(kind))
    }

    pub fn kind(&self) -> S3Kind {
        self.kind
    }

    /// Starts the server again on the same port (and, for MinIO, the same
    /// data) after [`S3Server::stop`].
    pub fn restart(&mut self) {
        let log = self.data.path().with_extension("log");
        let mut cmd = match self.kind {
            S3Kind::Minio => {
                let mut cmd = Command::new(find_minio().expect(
                    "MinIO is not installed: run ./scripts/test (it builds MinIO) or set DMV_MINIO",
                ));
                cmd.args([
                    "server",
                    "--quiet",
                    "--address",
                    &format!("127.0.0.1:{}", self.port),
                    "--console-address",
                    &format!("127.0.0.1:{}", free_port()),
                ])
                .arg(self.data.path())
                .env("MINIO_ROOT_USER", MINIO_USER)
                .env("MINIO_ROOT_PASSWORD", MINIO_SECRET)
                .env("MINIO_BROWSER", "off");
                cmd
            }
            S3Kind::Moto => {
                let mut cmd = Command::new(find_moto().expect(
                    "moto is not installed: run ./scripts/test (it installs moto) or set DMV_MOTO",
                ));
                cmd.args(["-H", "127.0.0.1", "-p", &self.port.to_string()]);
                cmd
            }
        };
        let mut child = cmd
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_port(self.port, &mut child, &log);
        // The port opens a moment before requests are served.
        let ready = match self.kind {
            S3Kind::Minio => "/minio/health/ready",
            S3Kind::Moto => "/",
        };
        let start = Instant::now();
        while !self.curl(&["-X", "GET"], ready).0 {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{:?} did not become ready: {}",
                self.kind,
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The folder MinIO keeps its buckets in (one folder per bucket and
    /// key); empty for moto.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A signed request with curl; returns (success, body).
    fn curl(&self, args: &[&str], path: &str) -> (bool, String) {
        let out = Command::new("curl")
            .args([
                "-s",
                "-S",
                "-f",
                "--aws-sigv4",
                "aws:amz:us-east-1:s3",
                "--user",
                &format!("{MINIO_USER}:{MINIO_SECRET}"),
            ])
            .args(args)
            .arg(format!("{}{path}", self.endpoint()))
            .output()
            .expect("curl is not installed (scripts/test installs it)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }

    pub fn create_bucket(&self, name: &str) {
        // Right after /minio/health/ready, MinIO may still answer 503 for a moment.
        let start = Instant::now();
        loop {
            let (ok, body) = self.curl(&["-X", "PUT"], &format!("/{name}"));
            if ok {
                return;
            }
            assert!(
                body.contains("503") && start.elapsed() < Duration::from_secs(20),
                "cannot create bucket {name}: {body}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every key under `prefix` in `bucket` (ListObjectsV2, all pages).
    pub fn list(&self, bucket: &str, prefix: &str) -> Vec<String> {
        self.list_sizes(bucket, prefix)
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    /// [`S3Server::list`], each key with its object's size.
    pub fn list_sizes(&self, bucket: &str, prefix: &str) -> Vec<(String, u64)> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // SigV4 signs the query as percent-encoded; curl sends it as given.
            let encode = |v: &str| {
                v.replace('%', "%25")
                    .replace('+', "%2B")
                    .replace('/', "%2F")
                    .replace('=', "%3D")
            };
            let mut query = format!("/{bucket}?list-type=2&prefix={}", encode(prefix));
            if let Some(t) = &token {
                query = format!(
                    "/{bucket}?continuation-token={}&list-type=2&prefix={}",
                    encode(t),
                    encode(prefix)
                );
            }
            let (ok, body) = self.curl(&[], &query);
            assert!(ok, "listing {bucket}/{prefix} failed: {body}");
            keys.extend(
                xml_values(&body, "Key").into_iter().zip(
                    xml_values(&body, "Size")
                        .into_iter()
                        .map(|s| s.parse::<u64>().unwrap()),
                ),
            );
            token = xml_values(&body, "NextContinuationToken")
                .into_iter()
                .next();
            if token.is_none() {
                return keys;
            }
        }
    }

    /// The ETag of an object (a multipart upload's ends in `-PARTS`).
    pub fn etag(&self, bucket: &str, key: &str) -> String {
        let out = Command::new("curl")
            .args([
                "-s",
                "-f",
                "-I",
                "--aws-sigv4",
                "aws:amz:us-east-1:s3",
                "--user",
                &format!("{MINIO_USER}:{MINIO_SECRET}"),
            ])
            .arg(format!("{}/{bucket}/{key}", self.endpoint()))
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout).into_owned();
        head.lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("etag:")
                    .then(|| l[5..].trim().trim_matches('"').to_string())
            })
            .unwrap_or_else(|| panic!("no ETag for {key}: {head}"))
    }

    /// Replaces an object's bytes (to damage it on purpose).
    pub fn put(&self, bucket: &str, key: &str, body: &Path) {
        let (ok, out) = self.curl(
            &["-T", &body.display().to_string()],
            &format!("/{bucket}/{key}"),
        );
        assert!(ok, "cannot put {key}: {out}");
    }

    /// Every object under `prefix` in `bucket` with its bytes, as any S3
    /// client reads them.
    pub fn objects(
        &self,
        bucket: &str,
        prefix: &str,
    ) -> std::collections::BTreeMap<String, Vec<u8>> {
        let body = self.data.path().with_extension("object");
        self.list(bucket, prefix)
            .into_iter()
            .map(|key| {
                self.get(bucket, &key, &body);
                let bytes = std::fs::read(&body).unwrap();
                (key, bytes)
            })
            .collect()
    }

    pub fn get(&self, bucket: &str, key: &str, to: &Path) {
        let (ok, out) = self.curl(
            &["-o", &to.display().to_string()],
            &format!("/{bucket}/{key}"),
        );
        assert!(ok, "cannot get {key}: {out}");
    }

    /// Sets the credentials and region a dmv command needs (not the endpoint).
    pub fn env(&self, cmd: &mut Command) {
        cmd.env("AWS_ACCESS_KEY_ID", MINIO_USER)
            .env("AWS_SECRET_ACCESS_KEY", MINIO_SECRET)
            .env("AWS_REGION", "us-east-1");
        for v in [
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT",
            "AWS_S3_ENDPOINT",
        ] {
            cmd.env_remove(v);
        }
    }
}

fn xml_values(body: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    body.split(&open)
        .skip(1)
        .filter_map(|s| s.split_once(&close).map(|(v, _)| v.replace("&amp;", "&")))
        .collect()
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A form's body, encoded as a browser encodes it.
pub fn form_body(fields: &[(&str, &str)]) -> Vec<u8> {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
        .into_bytes()
}

/// One HTTP/1.1 request on a fresh connection: status, head and body.
/// A server refusing early answers and closes before the body is all
/// sent: what it said is read all the same.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
}
