//! Real servers on loopback for the sync tests: OpenSSH's sshd with its own
//! keys and config, and `dmv serve` over HTTP. Both are killed on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::bin;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for_port(port: u16, child: &mut Child, log: &Path) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server exited ({status}): {}", std::fs::read_to_string(log).unwrap_or_default());
        }
        assert!(start.elapsed() < Duration::from_secs(20), "server did not start: {}", std::fs::read_to_string(log).unwrap_or_default());
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
        assert!(sshd.exists(), "openssh-server is not installed (scripts/test installs it)");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "client_key"] {
            let ok = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(d.join(key)).status().unwrap();
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
        let mut child = Command::new(sshd).arg("-D").arg("-f").arg(d.join("sshd_config")).arg("-E").arg(&log).spawn().unwrap();
        wait_for_port(port, &mut child, &log);
        Sshd { child, port, dir }
    }

    /// The value for DMV_SSH: the system ssh with this server's key.
    pub fn ssh_command(&self) -> String {
        format!(
            "ssh -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR",
            self.dir.path().join("client_key").display()
        )
    }

    pub fn url(&self, path: &Path) -> String {
        let user = std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "root".into());
        format!("ssh://{user}@127.0.0.1:{}{}", self.port, path.display())
    }

    /// Sets what an ssh remote needs on a dmv command.
    pub fn env(&self, cmd: &mut Command) {
        cmd.env("DMV_SSH", self.ssh_command()).env("DMV_REMOTE_DMV", bin());
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
}

impl HttpServer {
    /// Starts `dmv serve` with a TOML config; `port` 0 picks a free one.
    pub fn start(config_text: &str, dir: &Path, port: u16) -> HttpServer {
        let config = dir.join("server.toml");
        std::fs::write(&config, config_text).unwrap();
        Self::start_with(&config, port)
    }

    pub fn start_with(config: &Path, port: u16) -> HttpServer {
        let mut child = Command::new(bin())
            .arg("serve")
            .arg("--config")
            .arg(config)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("serve printed nothing").unwrap();
        let port: u16 = first.rsplit(':').next().and_then(|p| p.trim().parse().ok()).unwrap_or_else(|| panic!("unexpected first line: {first}"));
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        HttpServer { child, port, config: config.to_path_buf() }
    }

    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
    }
}
