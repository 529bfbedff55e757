"""Servers on loopback: for the sync experiment OpenSSH's sshd with its own
keys and config, and `dmv serve` over HTTP (as in crates/dmv-cli/tests/common/servers.rs);
for the s3 experiment a MinIO object store; for the attack experiment a `dmv serve`
restarted before every step (DmvServe).

All are context managers that kill their server on exit, also after a
failure or an interrupt; the servers also die with this Python process
(PR_SET_PDEATHSIG), so a killed suite leaves none behind.

Peak RSS of the server side: over ssh, every server process (dmv serve
--stdio, git-upload-pack, git-receive-pack) is started through a wrapper that
runs it under GNU time, which appends the process tree's ru_maxrss to
`rss_file`; over HTTP, the fresh `dmv serve` process's VmHWM.
"""
import ctypes
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from measure import TIME_BIN

SSHD = "/usr/sbin/sshd"
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_tail(path, n=800):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-n:].strip()
    except OSError:
        return ""



def vm_hwm_kib(pid):
    """Peak resident memory (VmHWM) of a live process, in KiB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None

def _cpu_has_aes():
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags.update(line.split(":", 1)[1].split())
    except OSError:
        return False
    return "aes" in flags and ("pclmulqdq" in flags or "pmull" in flags)


class ServerError(Exception):
    pass


class Sshd:
    """sshd on 127.0.0.1 accepting one fresh ed25519 key for root (this user)."""

    def __init__(self, root, env, dmv):
        self.dir = root
        self.env, self.dmv = env, dmv
        self.port, self.proc = None, None
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.bin = os.path.join(root, "bin")
        self.rss_file = os.path.join(root, "server-rss")

    def _wrapper(self, name, target):
        """A script that runs `target` (under GNU time when installed)."""
        path = os.path.join(self.bin, name)
        timed = ("%s -f %%M -a -o %s " % (TIME_BIN, shlex.quote(self.rss_file))) if TIME_BIN else ""
        with open(path, "w") as f:
            f.write('#!/bin/sh\nexec %s%s "$@"\n' % (timed, shlex.quote(target)))
        os.chmod(path, 0o755)
        return path

    def __enter__(self):
        if not os.path.exists(SSHD):
            raise ServerError("%s is missing (apt-get install -y --no-install-recommends openssh-server)" % SSHD)
        os.makedirs(self.bin, exist_ok=True)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, key)],
                           check=True, capture_output=True, timeout=60)
        shutil.copy(os.path.join(self.dir, "client_key.pub"), os.path.join(self.dir, "authorized_keys"))
        os.makedirs("/run/sshd", exist_ok=True)
        # Server-side processes find these wrappers first on PATH.
        self.remote_dmv = self._wrapper("dmv", self.dmv) if self.dmv else None
        for name in ("git-upload-pack", "git-receive-pack"):
            target = shutil.which(name, path=self.env["PATH"])
            if target:
                self._wrapper(name, target)
        path = self.bin + ":" + self.env["PATH"]
        setenv = " ".join('"%s=%s"' % (k, v) for k, v in (
            ("PATH", path), ("HOME", self.env["HOME"]), ("GIT_CONFIG_NOSYSTEM", "1"),
            ("LANG", "C.UTF-8"), ("LC_ALL", "C.UTF-8")))
        self.port = free_port()
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "PermitRootLogin prohibit-password\nSetEnv %s\n" % (
                        self.port, os.path.join(self.dir, "host_key"), os.path.join(self.dir, "sshd.pid"),
                        os.path.join(self.dir, "authorized_keys"), setenv))
        self.log = os.path.join(self.dir, "sshd.log")
        self.proc = subprocess.Popen([SSHD, "-D", "-f", config, "-E", self.log], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise ServerError("sshd did not start: %s" % _read_tail(self.log))
                time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        return False

    def ssh_argv(self):
        return ["ssh", "-F", "/dev/null", "-i", os.path.join(self.dir, "client_key"), "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
                "-o", "LogLevel=ERROR"]

    def ssh_command(self):
        """DMV_SSH / GIT_SSH_COMMAND: the system ssh with this server's key."""
        return " ".join(self.ssh_argv())

    def url(self, path):
        return "ssh://%s@127.0.0.1:%d%s" % (self.user, self.port, path)

    def login(self):
        """ssh argv that runs a command on this server (for the tar floor), with
        the cipher order DMV asks for on a CPU with AES instructions
        (crates/dmv-sync/src/transport/ssh.rs), so that the floor moves bytes as cheaply
        as DMV's ssh transport can."""
        ciphers = []
        if _cpu_has_aes():
            ciphers = ["-o", "Ciphers=aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,"
                             "aes128-ctr,aes192-ctr,aes256-ctr"]
        return self.ssh_argv() + ciphers + ["-p", str(self.port), "%s@127.0.0.1" % self.user]

    def reset_rss(self):
        try:
            os.remove(self.rss_file)
        except FileNotFoundError:
            pass

    def server_rss_kib(self):
        """Largest peak RSS among the server processes since reset_rss()."""
        try:
            with open(self.rss_file) as f:
                values = [int(x) for x in f.read().split() if x.isdigit()]
        except OSError:
            return None
        return max(values) if values else None


class DmvHttp:
    """`dmv serve --config FILE --listen 127.0.0.1:0` serving `repos` (name -> path). With `access_log`, the
    server logs one line per request on stderr (`access_log = true`): `requests` holds (time.monotonic() when
    the suite read the line, the line) of each, the stderr lines kept for errors leave them out."""

    def __init__(self, dmv, root, env, repos, token, access_log=False):
        self.dmv, self.dir, self.env, self.repos, self.token = dmv, root, env, repos, token
        self.access_log = access_log
        self.proc, self.port = None, None
        self.requests = []

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "server.toml")
        # It holds a token: for its owner's eyes only (dmv serve warns otherwise).
        with os.fdopen(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            if self.access_log:
                f.write("access_log = true\n")
            f.write("[repos]\n")
            for name, path in self.repos.items():
                f.write('%s = "%s"\n' % (name, path))
            f.write('[tokens]\n"%s" = "write"\n' % self.token)
        self.proc = subprocess.Popen([self.dmv, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                                     env=self.env, cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=_die_with_parent)
        first, lines = [], []
        reader = threading.Thread(target=lambda: first.append(self.proc.stderr.readline()), daemon=True)
        reader.start()
        reader.join(20)
        line = first[0].decode("utf-8", "replace").strip() if first else ""
        if "listening on http://" not in line:
            self.__exit__()
            rest = self.proc.stderr.read().decode("utf-8", "replace") if self.proc.stderr else ""
            raise ServerError("dmv serve did not start: %r %s" % (line, rest[-500:]))
        self.port = int(line.rsplit(":", 1)[1])

        def drain():  # the server must never block on a full stderr pipe
            for l in self.proc.stderr:
                if self.access_log and ACCESS_LINE.match(l.decode("utf-8", "replace")):
                    self.requests.append((time.monotonic(), l.decode("utf-8", "replace").rstrip("\n")))
                elif len(lines) < 100:
                    lines.append(l)
        threading.Thread(target=drain, daemon=True).start()
        self.stderr_lines = lines
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        return False

    def url(self, name):
        return "http://127.0.0.1:%d/%s" % (self.port, name)

    def server_rss_kib(self):
        """VmHWM of the server process (alive; one fresh server per step)."""
        return vm_hwm_kib(self.proc.pid)


# one line per request with `access_log = true` (crates/dmv-server/src/server.rs): method, path, status, bytes
ACCESS_LINE = re.compile(r"dmv serve: [A-Z]+ /\S* \d{3} ")


class DmvServe:
    """`dmv serve --config CONFIG --listen 127.0.0.1:0` with a configuration
    file the caller wrote (the attack experiment). The port is parsed from the
    line `dmv serve: listening on http://127.0.0.1:PORT` on stderr, lines
    starting with `warning:` before it skipped (kept in `warnings`).

    `restart()` starts a fresh server process (on a new port): the attack
    experiment restarts it before every timed step, so that its VmHWM
    (`peak_rss_kib`) is that step's alone. Writing 5 to /proc/PID/clear_refs
    does reset VmHWM here (to the current RSS), but the current RSS still
    holds what the allocator kept from earlier steps (a loaded step's
    request bodies), so it would lift the next step's figure."""

    START_TIMEOUT = 20

    def __init__(self, dmv, root, env, config, port=0):
        """`port` 0: a new port each start; else this port every time (the hubtier experiment
        restarts its servers on the ports its client's remotes name)."""
        self.dmv, self.dir, self.env, self.config = dmv, root, env, config
        self.fixed_port = port
        self.proc, self.port, self.warnings, self.lines = None, None, [], []
        self.requests = 0  # access-log lines (`access_log = true`) of the current process

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        import queue
        self.proc = subprocess.Popen([self.dmv, "serve", "--config", self.config,
                                      "--listen", "127.0.0.1:%d" % self.fixed_port],
                                     env=self.env, cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=_die_with_parent)
        lines, kept = queue.Queue(), []
        self.requests = 0

        def drain(proc=self.proc):  # the server must never block on a full stderr pipe
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                lines.put(line)
                if ACCESS_LINE.match(line):
                    if proc is self.proc:
                        self.requests += 1
                elif len(kept) < 100:
                    kept.append(line)
            lines.put(None)
        threading.Thread(target=drain, daemon=True).start()
        self.lines, self.warnings = kept, []
        deadline = time.monotonic() + self.START_TIMEOUT
        while True:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is not None and line.startswith("warning:"):
                self.warnings.append(line)
                continue
            m = re.search(r"dmv serve: listening on http://127\.0\.0\.1:(\d+)", line or "")
            if m:
                self.port = int(m.group(1))
                return
            self.stop()
            raise ServerError("dmv serve did not start: %r %s" % (line, " / ".join(kept)[-500:]))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()

    def restart(self):
        self.stop()
        self.start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def url(self, name):
        return "http://127.0.0.1:%d/%s" % (self.port, name)

    def peak_rss_kib(self):
        """VmHWM of the server process since it started."""
        return vm_hwm_kib(self.proc.pid) if self.proc else None

    def threads(self):
        """Threads of the server process now (/proc/PID/status), or None."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                return next(int(l.split()[1]) for l in f if l.startswith("Threads:"))
        except (OSError, StopIteration, ValueError, AttributeError):
            return None

    def open_files(self):
        """File descriptors the server process holds now (its sockets among them), or None."""
        try:
            return len(os.listdir("/proc/%d/fd" % self.proc.pid))
        except (OSError, AttributeError):
            return None


# ---------------------------------------------------------------- MinIO (s3 experiment)

MINIO_USER, MINIO_PASSWORD = "benchadmin", "bench-secret-key"
MINIO_REGION = "us-east-1"


def minio_binary():
    """~/go/bin/minio (where `go install` puts it), else a minio on PATH, else the Rust tests' build in
    ~/.cache/dmv-test/bin, else None."""
    home = os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    # ./scripts/test builds the same MinIO (MINIO_MODULE) into ~/.cache/dmv-test/bin for the Rust tests
    for path in (os.path.join(os.environ.get("GOBIN") or os.path.join(home, "go", "bin"), "minio"),
                 shutil.which("minio"), os.path.join(cache, "dmv-test", "bin", "minio")):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


# The MinIO scripts/test builds (MinIO publishes no tagged Go module versions).
MINIO_MODULE = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"


def install_minio(log_path, timeout=1800):
    """`go install MINIO_MODULE` (about 4 minutes here) unless a
    minio binary exists already. Returns (path, None) or (None, reason)."""
    path = minio_binary()
    if path:
        return path, None
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if not go:
        return None, "minio is not installed and there is no go to build it (go install %s)" % MINIO_MODULE
    print("s3: building MinIO: go install %s (about 4 minutes)" % MINIO_MODULE, flush=True)
    with open(log_path, "wb") as log:
        try:
            r = subprocess.run([go, "install", MINIO_MODULE], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, "go install %s failed: %s" % (MINIO_MODULE, e)
    path = minio_binary()
    if r.returncode != 0 or not path:
        return None, "go install %s failed (exit %d): %s" % (
            MINIO_MODULE, r.returncode, _read_tail(log_path, 400))
    return path, None


def minio_version(path):
    """The module version `go version -m` reports (`minio --version` of a go-installed
    build only says DEVELOPMENT.GOGET)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    try:
        r = subprocess.run([go, "version", "-m", path], capture_output=True, text=True, timeout=60)
        lines = r.stdout.splitlines()
        mod = next((l.split() for l in lines if l.strip().startswith("mod\t") or l.strip().startswith("mod ")), None)
        built = lines[0].split(":", 1)[1].strip() if lines and ":" in lines[0] else "?"
        if mod and len(mod) >= 3:
            return "minio %s (%s)" % (mod[2], built)
    except (OSError, subprocess.TimeoutExpired, IndexError):
        pass
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "minio (version unknown)"


class MinIO:
    """`minio server` on 127.0.0.1 with its data in `data_dir` (on disk, never tmpfs).

    `restart()` starts a fresh server process on the same data (and the same
    port): the s3 experiment restarts it before every timed step, so that the
    process's VmHWM (`server_rss_kib`) is that step's peak alone; a Go
    process keeps the memory it once used, so resetting the high-water mark
    (clear_refs) would still show the previous steps' heap."""

    def __init__(self, binary, root, data_dir, env):
        self.binary, self.dir, self.data, self.env = binary, root, data_dir, env
        self.proc, self.port, self.console_port = None, None, None
        self.log = os.path.join(root, "minio.log")

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        os.makedirs(self.data, exist_ok=True)
        self.port, self.console_port = free_port(), free_port()
        self.start()
        return self

    def start(self):
        env = dict(self.env, MINIO_ROOT_USER=MINIO_USER, MINIO_ROOT_PASSWORD=MINIO_PASSWORD,
                   MINIO_UPDATE="off", MINIO_BROWSER="off")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "server", "--quiet", "--address", "127.0.0.1:%d" % self.port,
                 "--console-address", "127.0.0.1:%d" % self.console_port, self.data],
                env=env, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 60
        while True:
            try:  # ready = the object layer is up, not just the port
                with urllib.request.urlopen(self.endpoint + "/minio/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ServerError("minio did not start: %s" % _read_tail(self.log))
            time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc:
            self.proc.wait()
        self.proc = None

    def restart(self):
        self.stop()
        self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def make_bucket(self, name):
        """PUT /BUCKET with curl's SigV4 signing (path-style)."""
        r = subprocess.run(["curl", "-sS", "-f", "--aws-sigv4", "aws:amz:%s:s3" % MINIO_REGION,
                            "--user", "%s:%s" % (MINIO_USER, MINIO_PASSWORD), "-X", "PUT",
                            "%s/%s" % (self.endpoint, name)],
                           env=self.env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise ServerError("could not create bucket %s: %s" % (name, (r.stderr or r.stdout).strip()[-300:]))

    def server_rss_kib(self):
        """VmHWM of the server process (alive; restarted before every measured step)."""
        return vm_hwm_kib(self.proc.pid) if self.proc else None

    def usage(self, bucket, prefix=""):
        """What a bucket (or a prefix in it) holds, from MinIO's data directory:
        (objects, apparent bytes of the files, bytes on disk of files and
        directories, files). MinIO (single drive)
        keeps every object as a directory with an `xl.meta` (small objects inline
        in it, larger ones as part files beside it), so the number of xl.meta
        files is the number of objects a listing shows."""
        top = os.path.join(self.data, bucket, prefix) if prefix else os.path.join(self.data, bucket)
        objects = apparent = disk = files = 0
        for root, dirs, names in os.walk(top):
            for name in dirs:  # every object is a directory: its blocks count on disk
                disk += os.lstat(os.path.join(root, name)).st_blocks * 512
            for name in names:
                st = os.lstat(os.path.join(root, name))
                apparent += st.st_size
                disk += st.st_blocks * 512
                files += 1
                if name == "xl.meta":
                    objects += 1
        return objects, apparent, disk, files


# ---------------------------------------------------------------- lfs-test-server (locks experiment)

# The git-lfs project's reference server of the LFS API (objects and locks). Its module has no go.mod and the
# Go proxy refuses its version list, so `go install …@latest` fails: the suite downloads the tagged version,
# gives it a go.mod and builds it, with go.zipexe at v1.0.2 (v1.0.0, which go.rice asks for, crashes at start
# with the Go toolchains of today while reading the binary's ELF sections).
LFS_TEST_SERVER_MODULE = "github.com/git-lfs/lfs-test-server"
LFS_TEST_SERVER_VERSION = "v0.4.0"
LFS_TEST_SERVER_PINS = ["github.com/daaku/go.zipexe@v1.0.2"]


def lfs_test_server_binary():
    """~/go/bin/lfs-test-server (or $GOBIN's), else one on PATH, else None."""
    home = os.path.expanduser("~")
    for path in (os.path.join(os.environ.get("GOBIN") or os.path.join(home, "go", "bin"), "lfs-test-server"),
                 shutil.which("lfs-test-server")):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def install_lfs_test_server(log_path, timeout=900):
    """Builds LFS_TEST_SERVER_MODULE at LFS_TEST_SERVER_VERSION into ~/go/bin (or $GOBIN) unless it is
    there. Returns (path, None) or (None, reason)."""
    path = lfs_test_server_binary()
    if path:
        return path, None
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if not go:
        return None, "lfs-test-server is not installed and there is no go to build it"
    dest = os.path.join(os.environ.get("GOBIN") or os.path.join(os.path.expanduser("~"), "go", "bin"),
                        "lfs-test-server")
    module = "%s@%s" % (LFS_TEST_SERVER_MODULE, LFS_TEST_SERVER_VERSION)
    print("locks: building lfs-test-server (%s)" % module, flush=True)
    import json
    import tempfile
    with open(log_path, "wb") as log, tempfile.TemporaryDirectory() as tmp:
        def go_run(*args, cwd=tmp):
            log.write(("$ go %s\n" % " ".join(args)).encode())
            log.flush()
            return subprocess.run([go] + list(args), cwd=cwd, stdout=subprocess.PIPE if args[:2] == (
                "mod", "download") else log, stderr=log, stdin=subprocess.DEVNULL, timeout=timeout,
                env=dict(os.environ, GOFLAGS="-mod=mod"))
        try:
            r = go_run("mod", "download", "-json", module)
            src = json.loads(r.stdout or b"{}").get("Dir") if r.returncode == 0 else None
            if not src:
                return None, "go mod download %s failed: %s" % (module, _read_tail(log_path, 400))
            work = os.path.join(tmp, "src")
            shutil.copytree(src, work)
            for root, dirs, files in os.walk(work):
                os.chmod(root, 0o755)
                for f in files:
                    os.chmod(os.path.join(root, f), 0o644)
            steps = [("mod", "init", LFS_TEST_SERVER_MODULE)] + [("get", p) for p in LFS_TEST_SERVER_PINS] + [
                ("mod", "tidy"), ("build", "-o", dest, ".")]
            for args in steps:
                r = go_run(*args, cwd=work)
                if r.returncode != 0:
                    return None, "go %s failed (exit %d): %s" % (" ".join(args), r.returncode,
                                                                 _read_tail(log_path, 400))
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            return None, "building lfs-test-server failed: %s" % e
    return dest, None


class LfsTestServer:
    """lfs-test-server on 127.0.0.1 (a free port) with its database and content in `root`, plain HTTP,
    and the users of `passwords` ({user: password}) added through its admin pages."""

    version = "lfs-test-server %s (%s, built with the suite's go.mod)" % (LFS_TEST_SERVER_VERSION,
                                                                        LFS_TEST_SERVER_MODULE)
    ADMIN = ("bench-admin", "bench-admin-pw")

    def __init__(self, binary, root, env, passwords):
        self.binary, self.root, self.env, self.passwords = binary, root, env, passwords
        self.proc, self.port = None, None

    def __enter__(self):
        os.makedirs(self.root, exist_ok=True)
        self.port = free_port()
        addr = "127.0.0.1:%d" % self.port
        env = dict(self.env, LFS_LISTEN="tcp://" + addr, LFS_HOST=addr, LFS_SCHEME="http",
                   LFS_METADB=os.path.join(self.root, "lfs.db"), LFS_CONTENTPATH=os.path.join(self.root, "content"),
                   LFS_ADMINUSER=self.ADMIN[0], LFS_ADMINPASS=self.ADMIN[1])
        self.log = open(os.path.join(self.root, "server.log"), "wb")
        self.proc = subprocess.Popen([self.binary], env=env, cwd=self.root, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        import base64
        auth = "Basic " + base64.b64encode(("%s:%s" % self.ADMIN).encode()).decode()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        opener = urllib.request.build_opener(NoRedirect)
        deadline = time.monotonic() + 20
        for user, pw in self.passwords.items():
            while True:
                try:
                    req = urllib.request.Request("http://%s/mgmt/add" % addr, method="POST", headers={
                        "Authorization": auth}, data=urllib.parse.urlencode(dict(name=user, password=pw)).encode())
                    try:
                        opener.open(req, timeout=5).read()
                    except urllib.error.HTTPError as e:
                        if e.code != 302:
                            raise
                    break
                except OSError as e:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        self.__exit__()
                        raise ServerError("lfs-test-server did not start: %s %s" % (
                            e, _read_tail(os.path.join(self.root, "server.log"), 400)))
                    time.sleep(0.1)
        return self

    def url(self, user, password, repo):
        return "http://%s:%s@127.0.0.1:%d/%s" % (user, password, self.port, repo)

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        self.log.close()
        return False
