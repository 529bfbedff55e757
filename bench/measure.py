"""Running tool commands and measuring them: wall time, peak RSS, disk usage.

Peak RSS comes from the kernel: the rusage of a waited-for child, whose
ru_maxrss on Linux is the largest resident set of the child and of all its
descendants that were waited for (git spawned by bup, hooks, ...). It is the
peak of the largest single process of the tree, not a sum over processes
running at the same time.

A child forked from this Python process starts its accounting with Python's
own resident set (the kernel records the old address space's high-water mark
at exec), about 45 MiB. So when GNU time is installed, every command runs
under `/usr/bin/time -f %M`, which forks the tool from a 1 MiB process and
reports the tool tree's ru_maxrss from its own wait4. Without it, os.wait4's
figure is used and carries that floor (recorded in the run's metadata).
"""
import fcntl
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from datagen import hasher

STDERR_TAIL = 1500


def _gnu_time():
    path = "/usr/bin/time"
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        return path if "GNU" in (r.stdout + r.stderr) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


TIME_BIN = _gnu_time()
RSS_METHOD = ("GNU time %M (wait4 of the tool tree, forked from a 1 MiB process)" if TIME_BIN
              else "os.wait4 of the child tree (includes the Python launcher's ~45 MiB)")


@dataclass
class Cmd:
    argv: list
    cwd: str
    env: dict = None          # extra variables on top of the suite's environment
    stdin: bytes = None       # data fed to the command's standard input
    stdout: str = None        # None (discard) | "hash" | "capture"


@dataclass
class Outcome:
    wall_s: float = 0.0
    peak_rss_kib: int = 0
    ok: bool = True
    timed_out: bool = False
    returncode: int = 0
    error: str = None
    stdout_hash: str = None
    stdout_bytes: int = 0
    captured: bytes = b""
    stderr_tail: str = ""     # the last STDERR_TAIL bytes of the last command's stderr
    commands: list = field(default_factory=list)


def _feed(pipe, data):
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def run_cmds(cmds, base_env, timeout):
    """Runs `cmds` one after the other as one measured step.

    The step fails at the first command that exits non-zero or when the step
    exceeds `timeout` seconds (its process group is then killed)."""
    out = Outcome()
    deadline = time.monotonic() + timeout
    for cmd in cmds:
        out.commands.append(" ".join(cmd.argv))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            out.ok, out.timed_out, out.error = False, True, "timeout after %ss" % timeout
            return out
        env = dict(base_env)
        env.update(cmd.env or {})
        with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
            argv = ([TIME_BIN, "-f", "%M", "-o", rss.name, "--"] if TIME_BIN else []) + cmd.argv
            start = time.perf_counter()
            try:
                p = subprocess.Popen(
                    argv, cwd=cmd.cwd, env=env,
                    stdin=subprocess.PIPE if cmd.stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if cmd.stdout else subprocess.DEVNULL,
                    stderr=err, start_new_session=True)
            except OSError as e:
                out.ok, out.returncode, out.error = False, 127, "%s: %s" % (cmd.argv[0], e)
                return out
            killed = threading.Event()

            def kill():
                killed.set()
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(remaining, kill)
            timer.start()
            feeder = None
            if cmd.stdin is not None:
                feeder = threading.Thread(target=_feed, args=(p.stdin, cmd.stdin))
                feeder.start()
            if cmd.stdout:
                fd = p.stdout.fileno()
                try:
                    fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer, larger reads
                except OSError:
                    pass
                h, chunks = hasher(), []
                while True:
                    block = os.read(fd, 1 << 20)
                    if not block:
                        break
                    out.stdout_bytes += len(block)
                    if cmd.stdout == "hash":
                        h.update(block)
                    elif sum(map(len, chunks)) < (64 << 20):
                        chunks.append(block)
                p.stdout.close()
                out.stdout_hash = h.hexdigest()
                out.captured = b"".join(chunks)
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            elapsed = time.perf_counter() - start
            timer.cancel()
            if feeder:
                feeder.join()
            # The group may still hold stray grandchildren (daemons); end them.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            out.wall_s += elapsed
            peak = usage.ru_maxrss
            if TIME_BIN:
                lines = rss.read().split()
                peak = int(lines[-1]) if lines and lines[-1].isdigit() else peak
            out.peak_rss_kib = max(out.peak_rss_kib, peak)
            out.returncode = p.returncode
            if killed.is_set():
                out.ok, out.timed_out = False, True
                out.error = "timeout after %ss: %s" % (timeout, " ".join(cmd.argv))
                return out
            err.seek(0, os.SEEK_END)
            err.seek(max(0, err.tell() - STDERR_TAIL))
            tail = err.read().decode("utf-8", "replace").strip()
            out.stderr_tail = tail
            if p.returncode != 0:
                out.ok = False
                out.error = "exit %d: %s: %s" % (p.returncode, " ".join(cmd.argv[:3]), tail)
                return out
    return out


def disk_usage(path):
    """(bytes on disk = sum of st_blocks*512, apparent bytes, number of files)."""
    disk = apparent = files = 0
    stack = [path]
    while stack:
        top = stack.pop()
        try:
            it = os.scandir(top)
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            st = os.lstat(top)
            return st.st_blocks * 512, st.st_size, 1
        with it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                disk += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    apparent += st.st_size
                    files += 1
    return disk, apparent, files


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _mount(path):
    """(device, mount point, file system type) of the mount holding `path` (from /proc/mounts)."""
    path = os.path.realpath(path)
    best = ("?", "", "?")
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
                    best = (parts[0], mnt, parts[2])
    except OSError:
        pass
    return best


def fs_type(path):
    """File system type of the mount holding `path` (from /proc/mounts)."""
    return _mount(path)[2]


def ext4_without_journal(path):
    """True when `path` is on ext4 mounted without a journal. There, a new
    inode is never one freed in the last 60 s (360 s while its inode table
    block is dirty): every file created skips, one by one, the group's recently
    deleted inodes (recently_deleted() in fs/ext4/ialloc.c), so creating many
    files within a minute of deleting many is several times slower."""
    dev, _, kind = _mount(path)
    if kind != "ext4":
        return False
    try:
        with open("/sys/fs/ext4/%s/journal_task" % os.path.basename(os.path.realpath(dev))) as f:
            return f.read().strip() == "<none>"
    except OSError:
        return False
