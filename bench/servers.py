"""Servers on loopback for the sync experiment: OpenSSH's sshd with its own
keys and config, and `dmv serve` over HTTP (as in crates/dmv-cli/tests/common/servers.rs).

Both are context managers that kill their server on exit, also after a
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
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time

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
        """ssh argv that runs a command on this server (for the tar floor)."""
        return self.ssh_argv() + ["-p", str(self.port), "%s@127.0.0.1" % self.user]

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
    """`dmv serve --config FILE --listen 127.0.0.1:0` serving `repos` (name -> path)."""

    def __init__(self, dmv, root, env, repos, token):
        self.dmv, self.dir, self.env, self.repos, self.token = dmv, root, env, repos, token
        self.proc, self.port = None, None

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "server.toml")
        with open(config, "w") as f:
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
                if len(lines) < 100:
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
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None
