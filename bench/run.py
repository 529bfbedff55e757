#!/usr/bin/env python3
"""DMV benchmark suite: DMV against git, Mercurial, bup, cp, DVC and Oxen on this machine.

    python3 bench/run.py --quick      # about 5 minutes
    python3 bench/run.py --full       # hours
    python3 bench/run.py --quick --experiments sync   # clone/push over ssh and HTTP
    python3 bench/run.py --quick --experiments s3     # push/clone to a MinIO on loopback
    python3 bench/run.py --quick --experiments partial  # meta clone and get over ssh and HTTP
    python3 bench/run.py --quick --experiments history  # 1,000 small commits, then log
    python3 bench/run.py --quick --experiments web      # thumbnails of a commit, seeking in a film
    python3 bench/run.py --quick --experiments import   # dmv import git against git clone --mirror; archive
    python3 bench/run.py --quick --experiments store    # 10,000 files of 1 KiB stored by dmv, git, restic, borg
    python3 bench/run.py --quick --experiments attack   # a clone of 100 MiB from dmv serve under DoS attacks
    python3 bench/run.py --quick --experiments availability  # get with the nearest copy stalled; a ring of 3 peers
    python3 bench/run.py --quick --experiments hubtier  # push/clone: one dmv serve on disk vs two over a MinIO bucket
    python3 bench/run.py --quick --experiments hub-replicas  # clone, pull, fetch, push of a hub 8 replicas cloned
    python3 bench/run.py --quick --experiments watch    # dmv watch: last write to commit and to another replica, idle cost; Syncthing
    python3 bench/run.py --quick --experiments mount    # dmv mount: ls -l of 100,000 files, 1 GiB read, random reads (8 min)
    python3 bench/run.py --quick --experiments worktree-mount  # dmv mount --worktree against the plain tree and dmv get (8 min)
    python3 bench/run.py --quick --experiments habits   # dmv against git: add+commit in a big tree, rebase, log --graph
    python3 bench/run.py --quick --experiments habits-text  # issue 70's rows alone: blame, grep, log --all, bisect
    python3 bench/run.py --quick --experiments locks    # issue 71: lock/unlock over HTTP, push past 1,000 locks, vs git-lfs
    python3 bench/run.py --quick --experiments webui    # web UI in Chromium: big folder, commit, search, compare, upload
    python3 bench/run.py --quick --experiments wall --wall-before OLD_DMV  # photo wall at 390 and 1440 px, new UI and old
    python3 bench/run.py --quick --experiments review-page  # a review of 2,000 photos, 500 comments: server and Chromium
    python3 bench/run.py --quick --experiments platforms  # commits by the x86-64, musl, aarch64 (qemu), Windows (Wine) builds
    python3 bench/run.py --quick --experiments encrypted  # push/clone: dmv plain, dmv --encrypt, sealed hub, restic (20 min)
    python3 bench/run.py --quick --experiments oxen-workloads  # issue 73: Oxen's and DVC's own workloads, dmv vs them
    python3 bench/run.py --huge       # one file larger than RAM: DMV against cat and cp of it

Raw results go to bench/results/<date>-<mode>.jsonl; report.py then rewrites
BENCHMARKS.md and bench/plots/. See bench/README.md.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import experiments  # noqa: E402
import measure      # noqa: E402
import servers      # noqa: E402
import tools        # noqa: E402

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
OXEN_EDIT_MIN = 100  # oxen-workloads edits 1% of the photos: at least one

MODES = {
    "quick": dict(sizes="1,64,4K,256K,1M,4M,16M,64M", counts="1,10,100,1000,2500,5000,10000",
                  status_files=10_000, status_changed=500,
                  refs="1,1000,100000", refs_separate="1,1000",
                  sync_sizes="256M", sync_counts="10000", s3_sizes="256M", s3_counts="10000",
                  history_commits=1000, web_images=20, web_film="1G",
                  import_files=10_000, import_commits=20, archive_size="256M", store_files=10_000, attack_pairs=5,
                  avail_size="64M", avail_files=1000, hubtier_size="256M", hubtier_files=10_000,
                  watch_size="100M", watch_files="2000,10000", watch_tree=100_000, watch_idle=20,
                  mount_files=100_000, mount_size="1G", mount_remote_size="4G", mount_repeats=5,
                  wtm_size="256M", wtm_absent_size="1G", wtm_photos=2_000, wtm_tree=10_000, wtm_repeats=3,
                  habits_files="100000", habits_rebase_commits=100, habits_log_commits=10_000,
                  webui_folder=10_000, webui_commit=2_000, webui_paths=1_000_000, webui_upload="1G",
                  platforms_size="1G", platforms_files=100_000, platforms_tries=5,
                  encrypted_size="1G", encrypted_files=100_000, encrypted_tries=3,
                  oxen_photos=10_000, oxen_small=100_000, oxen_tries=3, hubrep_files=10_000, hubrep_replicas=8,
                  timeout=600),
    "full": dict(sizes="1..8G", counts="1..1M",
                 status_files=100_000, status_changed=5_000,
                 refs="1,1000,100000,1000000", refs_separate="1,1000",
                 sync_sizes="1G", sync_counts="100000", s3_sizes="1G", s3_counts="100000",
                 history_commits=10_000, web_images=100, web_film="4G",
                 import_files=100_000, import_commits=100, archive_size="1G", store_files=100_000, attack_pairs=10,
                 avail_size="1G", avail_files=10_000, hubtier_size="1G", hubtier_files=100_000,
                 watch_size="100M", watch_files="2000,10000", watch_tree=100_000, watch_idle=60,
                 mount_files=100_000, mount_size="1G", mount_remote_size="4G", mount_repeats=5,
                 wtm_size="1G", wtm_absent_size="1G", wtm_photos=10_000, wtm_tree=100_000, wtm_repeats=5,
                 habits_files="100000,1000000", habits_rebase_commits=100, habits_log_commits=10_000,
                 webui_folder=10_000, webui_commit=2_000, webui_paths=1_000_000, webui_upload="1G",
                 platforms_size="1G", platforms_files=100_000, platforms_tries=5,
                 encrypted_size="1G", encrypted_files=100_000, encrypted_tries=5,
                 oxen_photos=100_000, oxen_small=1_000_000, oxen_tries=3, hubrep_files=100_000, hubrep_replicas=17,
                 timeout=1800),
}
# the experiments each mode runs when --experiments is not given
DEFAULT_EXPERIMENTS = {"quick": ["filesize", "filecount", "status", "refs"],
                       "full": ["filesize", "filecount", "status", "refs", "sync", "s3", "partial", "history"]}
# web is in no default list: it makes photos on first use (about 2 minutes for 100); nor is
# import: it makes its Git source on first use and writes the archived file (1 GiB) twice more; nor is
# store: a comparison with backup tools (restic, borg) rather than a measure of DMV's own operations; nor is
# attack: it floods the machine (a core's worth of loopback traffic) and measures a defence, not a speed; nor is
# availability: it freezes a server on purpose and waits out the client's stall timeout; nor is hubtier: a
# comparison of two ways to host a hub, measured when the hub tier changes; nor is watch: its idle-CPU window
# wants the machine otherwise quiet, and it is measured when the watcher changes; nor is mount: it mounts FUSE
# folders (root and fusermount3) and is measured when the mount changes; nor is habits: issue 47's comparison
# with git (a tree of 100,000 files, 1,000,000 in --full, written and committed by both tools first); nor is webui:
# issue 48's pages in a headless Chromium (chromedriver) and an upload of 1 GiB from it, measured when the web UI changes;
# nor is platforms: issue 49's builds for other targets (the musl builds, scripts/package's, qemu-user, and the
# Windows build under Wine), measured when the builds or the hot paths change; nor is encrypted: issue 68's cost
# of an encrypted bucket remote against a plain one and against restic, measured when the encryption changes; nor
# is wall: issue 69's photo wall in Chromium at a phone's and a desktop's size, against the previous UI's binary;
# nor is habits-text: issue 70's rows of the habits comparison alone (blame, grep, log --all, bisect; habits runs
# them too); nor is locks: issue 71's lock latency over HTTP against git-lfs on lfs-test-server (built with go);
# nor is review-page: issue 72's page of a review of 2,000 photos with 500 comments, in Chromium; nor is
# worktree-mount: issue 74's writable mount of the working tree (FUSE, root), measured when the mount changes; nor
# is oxen-workloads: issue 73's comparison with Oxen and DVC on their own workloads (pip-installed peers, MinIO); nor
# is hub-replicas: the location exchange of a hub many replicas cloned, measured when the exchange changes
ALL_EXPERIMENTS = ["filesize", "filecount", "status", "refs", "sync", "s3", "partial", "history", "web", "import",
                   "store", "attack", "availability", "hubtier", "watch", "mount", "worktree-mount", "habits", "habits-text", "locks",
                   "webui", "wall", "review-page",
                   "platforms", "encrypted", "oxen-workloads", "hub-replicas", "huge"]


def parse_number(text, binary):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    base = 1024 if binary else 1000
    return int(float(m.group(1)) * base ** " KMGT".index(m.group(2).upper() or " "))


def size_ladder(lo, hi):
    """Powers of two with a 1.5x step between them: 1 2 3 4 6 8 12 16 ..."""
    out, p = [], 1
    while p <= hi:
        for v in (p, p + p // 2):
            if lo <= v <= hi and v not in out:
                out.append(v)
        p *= 2
    return out


def count_ladder(lo, hi):
    """1, 2.5, 5, 7.5 per decade (rounded down): 1 2 5 7 10 25 50 75 100 ..."""
    out, decade = [], 1
    while decade <= hi:
        for v in (int(m * decade) for m in (1, 2.5, 5, 7.5)):
            if lo <= v <= hi and v not in out:
                out.append(v)
        decade *= 10
    return out


def parse_points(spec, binary):
    """'1K..1G' (the whole ladder between) or '1,1K,1M' (just these)."""
    if ".." in spec:
        lo, hi = (parse_number(x, binary) for x in spec.split(".."))
        return (size_ladder if binary else count_ladder)(lo, hi)
    return sorted({parse_number(x, binary) for x in spec.split(",") if x.strip()})


def machine_info(workdir):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return dict(nproc=os.cpu_count(), mem_bytes=mem, cpu_model=cpu,
                kernel=platform.release(), workdir_fs=measure.fs_type(workdir),
                workdir_free_bytes=measure.free_bytes(workdir))


def build_dmv(log_path):
    """cargo build --release -p dmv-cli; returns (path, None) or (None, reason)."""
    print("building dmv: cargo build --release -p dmv-cli (may wait for the cargo lock)", flush=True)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    with open(log_path, "wb") as log:
        try:
            r = subprocess.run(["cargo", "build", "--release", "-p", "dmv-cli"], cwd=REPO,
                               stdout=log, stderr=subprocess.STDOUT, timeout=3 * 3600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, "cargo build failed: %s" % e
    if r.returncode != 0:
        with open(log_path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        errors = [l.strip() for l in lines if l.startswith("error")] or lines[-3:]
        return None, "cargo build --release -p dmv-cli failed (exit %d): %s" % (
            r.returncode, " / ".join(errors[:3])[:600])
    path = os.path.join(target, "release", "dmv")
    return (path, None) if os.path.exists(path) else (None, "build succeeded but %s is missing" % path)


def build_fuse_floor(log_path):
    """cargo build --release -p dmv-mount --example fuse_floor (worktree-mount's bare FUSE floor); returns
    (path, None) or (None, reason)."""
    print("building fuse_floor: cargo build --release -p dmv-mount --example fuse_floor", flush=True)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    with open(log_path, "wb") as log:
        try:
            r = subprocess.run(["cargo", "build", "--release", "-p", "dmv-mount", "--example", "fuse_floor"],
                               cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=3600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, "cargo build of fuse_floor failed: %s" % e
    if r.returncode != 0:
        return None, "cargo build --release -p dmv-mount --example fuse_floor failed (exit %d)" % r.returncode
    path = os.path.join(target, "release", "examples", "fuse_floor")
    return (path, None) if os.path.exists(path) else (None, "build succeeded but %s is missing" % path)


def apt_install(package):
    """apt-get install -y PACKAGE (after apt-get update when the first try fails);
    returns (ok, tail of the output)."""
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return False, "cannot run apt-get here (not root or no apt-get)"
    print("installing %s: apt-get install -y %s" % (package, package), flush=True)
    out = ""
    for argvs in ([["apt-get", "install", "-y", "--no-install-recommends", package]],
                  [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", package]]):
        ok = True
        for argv in argvs:
            try:
                r = subprocess.run(argv, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
                                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, out = False, str(e)
                break
            out = (r.stdout + r.stderr).strip()[-300:]
            if r.returncode != 0:
                ok = False
                break
        if ok:
            return True, out
    return False, out


def tool_env(home):
    """A clean environment: no user or system configuration of the tools."""
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, ".gitconfig"), "w") as f:
        f.write("[user]\n\tname = bench\n\temail = bench@example.com\n"
                "[init]\n\tdefaultBranch = main\n"
                # auto-gc still happens, but inside the timed command, not after it
                "[gc]\n\tautoDetach = false\n")
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + os.environ.get("PATH", ""),
        "HOME": home, "USER": "bench", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
        "TERM": "dumb", "GIT_CONFIG_NOSYSTEM": "1", "HGRCPATH": "", "HGPLAIN": "1",
        "HGUSER": "bench <bench@example.com>", "EMAIL": "bench@example.com",
        "DMV_AUTHOR_NAME": "bench", "DMV_AUTHOR_EMAIL": "bench@example.com",
    }


def dmv_binary_info(path, private):
    """The dmv binary measured: its path as given, and the size, mtime and sha256 of the private copy run."""
    if not private or not os.path.isfile(private):
        return None
    import hashlib
    h = hashlib.sha256()
    with open(private, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    st = os.stat(private)
    return dict(path=path, bytes=st.st_size, sha256=h.hexdigest(),
                mtime=datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).isoformat(timespec="seconds"))


def repo_revision():
    try:  # read-only
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="small points, about 5 minutes (default)")
    g.add_argument("--full", action="store_true", help="1 B..8 GiB, 1..1M files, 100k-file status table: hours")
    ap.add_argument("--huge", action="store_true",
                    help="commit, re-commit, read, restore and clone a file larger than RAM with DMV, against "
                         "cat and cp of it (alone: only this; with --quick/--full: in addition)")
    ap.add_argument("--huge-size", default=None, help="size for --huge (default: RAM + 8 GiB, e.g. 32G)")
    ap.add_argument("--sizes", help="experiment 1 file sizes, binary units: '1K..1G' (ladder) or '1,1K,1M'")
    ap.add_argument("--counts", help="experiment 2 file counts, decimal units: '1..100K' or '1,10,100'")
    ap.add_argument("--status-files", type=lambda s: parse_number(s, False),
                    help="files in the status table's tree")
    ap.add_argument("--status-changed", type=lambda s: parse_number(s, False),
                    help="files changed in the status table")
    ap.add_argument("--refs", help="ref counts, e.g. '1,1000,100000'")
    ap.add_argument("--sync-sizes", help="sync and partial: size of the one big file, binary units (quick 256M, full 1G)")
    ap.add_argument("--sync-counts", help="sync and partial: number of 1 KiB files (quick 10000, full 100000)")
    ap.add_argument("--sync-settle", type=float,
                    help="sync, partial, availability and watch: seconds to wait before the many-files steps so that "
                         "no tool "
                         "creates files among inodes freed just before (default: 180 on ext4 without a journal, else 0)")
    ap.add_argument("--s3-sizes", help="s3: size of the one big file, binary units (quick 256M, full 1G)")
    ap.add_argument("--s3-counts", help="s3: number of 1 KiB files (quick 10000, full 100000)")
    ap.add_argument("--s3-settle", type=float,
                    help="s3: seconds to wait before the many-files steps (default: as --sync-settle)")
    ap.add_argument("--history-commits", type=lambda s: parse_number(s, False),
                    help="history: number of commits of one small change each (quick 1000, full 10000)")
    ap.add_argument("--web-images", type=lambda s: parse_number(s, False),
                    help="web: photos of 24 megapixels in the commit (quick 20, full 100; made once in "
                         "WORKDIR/web-photos and reused)")
    ap.add_argument("--web-film-size", help="web: size of the film seeked in, binary units (quick 1G, full 4G)")
    ap.add_argument("--import-files", type=lambda s: parse_number(s, False),
                    help="import: files of 1 KiB in the Git source (quick 10000, full 100000; made once in "
                         "WORKDIR and reused)")
    ap.add_argument("--import-commits", type=lambda s: parse_number(s, False),
                    help="import: commits in the Git source, the first adding every file, each other changing "
                         "100 files (quick 20, full 100)")
    ap.add_argument("--archive-size", help="import: size of the file archived, binary units (quick 256M, full 1G)")
    ap.add_argument("--store-files", type=lambda s: parse_number(s, False),
                    help="store: files of 1 KiB random bytes stored once by each tool (quick 10000, full 100000)")
    ap.add_argument("--attack-pairs", type=int,
                    help="attack: pairs of clones, one unloaded and one under attack, alternated (quick 5, full 10; "
                         "at least 3)")
    ap.add_argument("--avail-size", help="availability: size of the file got with the nearest copy stalled, binary "
                                         "units (quick 64M, full 1G)")
    ap.add_argument("--avail-files", type=lambda s: parse_number(s, False),
                    help="availability: files of 1 KiB that each of the ring's three peers adds (quick 1000, "
                         "full 10000)")
    ap.add_argument("--hubtier-size", help="hubtier: size of the one big file, binary units (quick 256M, full 1G)")
    ap.add_argument("--hubtier-files", type=lambda s: parse_number(s, False),
                    help="hubtier: number of 1 KiB files (quick 10000, full 100000)")
    ap.add_argument("--watch-size", help="watch: size of the one big file written into the watched replica, binary "
                                         "units (quick and full 100M)")
    ap.add_argument("--watch-files",
                    help="watch: the bursts, files of 1 KiB each written at once into the watched replica, decimal "
                         "units: '2K,10K' (quick and full 2000,10000)")
    ap.add_argument("--watch-tree", type=lambda s: parse_number(s, False),
                    help="watch: files of 1 KiB in the tree an idle watcher watches (quick and full 100000)")
    ap.add_argument("--watch-idle", type=float,
                    help="watch: seconds over which the idle watcher's CPU time is measured (quick 20, full 60)")
    ap.add_argument("--watch-idle-sync", type=float,
                    help="watch: seconds over which the two synced watchers and their hub, then the two Syncthing "
                         "instances, are left alone after the latency points (default: --watch-idle; the hub holds "
                         "a watcher's wait for news up to 55 s and --sync-every is 60 s, so 60 s or more shows "
                         "them)")
    ap.add_argument("--mount-files", type=lambda s: parse_number(s, False),
                    help="mount: files of 1 KiB in the one folder listed with ls -l (quick and full 100000)")
    ap.add_argument("--mount-size", help="mount: size of the one large file read through the mount, binary units "
                                         "(quick and full 1G)")
    ap.add_argument("--mount-remote-size",
                    help="mount: size of the file read at random offsets in a meta replica, binary units (quick and "
                         "full 4G; 1G when the disk has no room for 4 of it + 2 GiB, unless given)")
    ap.add_argument("--mount-repeats", type=int,
                    help="mount: fresh mounts per measure for dmv (quick and full 5; restic and bup: at most 3)")
    ap.add_argument("--wtm-size", help="worktree-mount: size of the present file read and of the file written "
                                       "through the mount, binary units (quick 256M, full 1G)")
    ap.add_argument("--wtm-absent-size", help="worktree-mount: size of the file read in meta clones, through the "
                                              "mount and with dmv get, binary units (quick and full 1G)")
    ap.add_argument("--wtm-photos", type=lambda s: parse_number(s, False),
                    help="worktree-mount: photos of about 50 KiB copied with cp -r (quick 2000, full 10000)")
    ap.add_argument("--wtm-tree", type=lambda s: parse_number(s, False),
                    help="worktree-mount: files of 1 KiB in the tree dmv status runs in after 100 edits (quick "
                         "10000, full 100000)")
    ap.add_argument("--wtm-repeats", type=int,
                    help="worktree-mount: paired tries per row (quick 3, full 5; at least 1)")
    ap.add_argument("--fuse-floor", help="worktree-mount: the bare FUSE floor, crates/dmv-mount/examples/fuse_floor.rs "
                                         "built (default: cargo build --release -p dmv-mount --example fuse_floor)")
    ap.add_argument("--habits-files",
                    help="habits: files of 1 KiB in the tree a small file is added and committed in, decimal units: "
                         "'100K,1M' or '1K..1M' (quick 100000, full 100000,1000000)")
    ap.add_argument("--habits-rebase-commits", type=lambda s: parse_number(s, False),
                    help="habits: commits of the branch rebased (quick and full 100)")
    ap.add_argument("--habits-log-commits", type=lambda s: parse_number(s, False),
                    help="habits: commits of the history drawn by log --graph (quick and full 10000)")
    ap.add_argument("--webui-folder", type=lambda s: parse_number(s, False),
                    help="webui: photos of %dx%d in the folder shown (quick and full 10000; made once in "
                         "WORKDIR/webui-photos and reused)" % (experiments.WEBUI_SMALL_W, experiments.WEBUI_SMALL_H))
    ap.add_argument("--webui-commit", type=lambda s: parse_number(s, False),
                    help="webui: photos the commit shown adds, the folder's last ones (quick and full 2000)")
    ap.add_argument("--webui-paths", type=lambda s: parse_number(s, False),
                    help="webui: paths (empty files) searched (quick and full 1000000)")
    ap.add_argument("--webui-upload-size", help="webui: size of the file uploaded from the browser and pushed, "
                                                "binary units (quick and full 1G)")
    ap.add_argument("--wall-before", help="wall: the previous web UI's dmv binary (e.g. built at 4c45ba1), measured "
                                          "beside the run's; without it its rows are skipped")
    ap.add_argument("--review-photos", type=lambda s: parse_number(s, False),
                    help="review-page: photos the reviewed branch adds (quick and full %d; the webui photos, made "
                         "once in WORKDIR/webui-photos)" % experiments.REVIEW_PHOTOS)
    ap.add_argument("--review-comments", type=lambda s: parse_number(s, False),
                    help="review-page: comments on them, one a photo (quick and full %d)" % experiments.REVIEW_COMMENTS)
    ap.add_argument("--wall-presses", type=int, help="wall: ArrowRight presses in the lightbox (default %d)" %
                    experiments.WALL_PRESSES)
    ap.add_argument("--platforms-x86-64-musl", default=os.path.join(REPO, "target", "x86_64-unknown-linux-musl",
                                                                     "release", "dmv"),
                    help="platforms: the static x86-64 musl build of dmv (default: %(default)s)")
    ap.add_argument("--platforms-aarch64-musl", default=os.path.join(REPO, "target", "aarch64-unknown-linux-musl",
                                                                      "release", "dmv"),
                    help="platforms: the static aarch64 musl build of dmv, run under qemu-user (default: %(default)s)")
    ap.add_argument("--platforms-qemu", default="qemu-aarch64-static",
                    help="platforms: the qemu-user that runs aarch64 programs (default: %(default)s)")
    ap.add_argument("--platforms-windows", default=os.path.join(REPO, "target", "x86_64-pc-windows-gnu", "release",
                                                                 "dmv.exe"),
                    help="platforms: the Windows build of dmv (MinGW-w64), run under Wine (default: %(default)s)")
    ap.add_argument("--platforms-wine", default="wine",
                    help="platforms: the wine that runs the Windows build, in the prefix $WINEPREFIX (default: "
                         "~/.cache/dmv-wine, scripts/test's, which holds the bcryptprimitives.dll stand-in it "
                         "builds) with WINEDEBUG=-all (default: %(default)s)")
    ap.add_argument("--platforms-dist", default=os.path.join(REPO, "dist"),
                    help="platforms: the folder whose .tar.gz, .deb and .zip packages are measured (default: "
                         "%(default)s)")
    ap.add_argument("--platforms-size", help="platforms: size of the one file committed, binary units (quick and "
                                             "full 1G); also the bytes BLAKE3 hashes in the references")
    ap.add_argument("--platforms-files", type=lambda s: parse_number(s, False),
                    help="platforms: files of 1 KiB committed, 1,000 a folder (quick and full 100000)")
    ap.add_argument("--platforms-tries", type=int,
                    help="platforms: rounds per case, every build once a round (quick and full 5)")
    ap.add_argument("--encrypted-size", help="encrypted: size of the one file of random bytes, binary units (quick "
                                             "and full 1G)")
    ap.add_argument("--encrypted-files", type=lambda s: parse_number(s, False),
                    help="encrypted: files of 10 KiB, 1,000 a folder (quick and full 100000)")
    ap.add_argument("--encrypted-tries", type=int,
                    help="encrypted: rounds, every variant (dmv plain, dmv encrypted, restic) once a round, the "
                         "report shows medians (quick 3, full 5)")
    ap.add_argument("--experiments", help="comma list of %s (default: %s; --full adds sync, s3, partial and history)" % (
        ",".join(ALL_EXPERIMENTS), ",".join(DEFAULT_EXPERIMENTS["quick"])))
    ap.add_argument("--tools", default=",".join(tools.ORDER + list(tools.MURPHY_PEERS) + list(tools.S3_PEERS) + [
                        t for t in tools.STORE_PEERS if t not in tools.S3_PEERS] + list(tools.WATCH_PEERS)),
                    help="comma list (default: %(default)s; dvc and oxen (pip-installed into "
                         "~/.cache/dmv-bench/peers-venv) only run in filesize and filecount; restic only runs in the "
                         "s3, store, mount and encrypted experiments, rclone only in s3, borg only in store, syncthing only in watch)")
    ap.add_argument("--dmv", help="use this dmv binary instead of building one")
    ap.add_argument("--workdir", default=os.path.join(os.path.dirname(REPO), "bench-tmp"),
                    help="scratch space, not tmpfs (default: %(default)s)")
    ap.add_argument("--oxen-photos", type=lambda s: parse_number(s, False),
                    help="oxen-workloads: photo-sized files of 50 KiB added, pushed and cloned (quick 10000, full 100000)")
    ap.add_argument("--oxen-small", type=lambda s: parse_number(s, False),
                    help="oxen-workloads: 1 KiB files of DVC's status and no-op push rows (quick 100000, full 1000000)")
    ap.add_argument("--oxen-tries", type=int, help="oxen-workloads: paired tries per row (quick and full 3)")
    ap.add_argument("--timeout", type=float, help="seconds per tool step (quick 600, full 1800)")
    ap.add_argument("--no-report", action="store_true", help="do not run report.py at the end")
    args = ap.parse_args(argv)

    mode = "full" if args.full else "quick" if (args.quick or not args.huge) else "huge"
    cfg = dict(MODES["full" if mode == "full" else "quick"])
    if args.experiments:
        exps = [e.strip() for e in args.experiments.split(",") if e.strip()]
    else:
        exps = [] if mode == "huge" else list(DEFAULT_EXPERIMENTS[mode])
    if args.huge and "huge" not in exps:
        exps.append("huge")
    unknown = set(exps) - set(ALL_EXPERIMENTS)
    if unknown:
        ap.error("unknown experiments: %s" % ", ".join(sorted(unknown)))
    sizes = parse_points(args.sizes or cfg["sizes"], True)
    counts = parse_points(args.counts or cfg["counts"], False)
    ref_counts = parse_points(args.refs or cfg["refs"], False)
    separate = parse_points(cfg["refs_separate"], False)
    status_files = args.status_files or cfg["status_files"]
    status_changed = min(args.status_changed or cfg["status_changed"], status_files)
    sync_sizes = parse_points(args.sync_sizes or cfg["sync_sizes"], True)
    sync_counts = parse_points(args.sync_counts or cfg["sync_counts"], False)
    sync_settle = args.sync_settle if args.sync_settle is not None else (
        180 if measure.ext4_without_journal(args.workdir) else 0)
    s3_sizes = parse_points(args.s3_sizes or cfg["s3_sizes"], True)
    s3_counts = parse_points(args.s3_counts or cfg["s3_counts"], False)
    s3_settle = args.s3_settle if args.s3_settle is not None else sync_settle
    history_commits = args.history_commits or cfg["history_commits"]
    hubrep_files, hubrep_replicas = cfg["hubrep_files"], cfg["hubrep_replicas"]
    web_images = args.web_images or cfg["web_images"]
    web_film = parse_number(args.web_film_size or cfg["web_film"], True)
    import_files = args.import_files or cfg["import_files"]
    import_commits = max(1, args.import_commits or cfg["import_commits"])
    archive_size = parse_number(args.archive_size or cfg["archive_size"], True)
    store_files = args.store_files or cfg["store_files"]
    attack_pairs = max(3, args.attack_pairs or cfg["attack_pairs"])
    avail_size = parse_number(args.avail_size or cfg["avail_size"], True)
    avail_files = args.avail_files or cfg["avail_files"]
    hubtier_size = parse_number(args.hubtier_size or cfg["hubtier_size"], True)
    hubtier_files = args.hubtier_files or cfg["hubtier_files"]
    watch_size = parse_number(args.watch_size or cfg["watch_size"], True)
    watch_files = parse_points(args.watch_files or cfg["watch_files"], False)
    watch_tree = args.watch_tree or cfg["watch_tree"]
    watch_idle = args.watch_idle or cfg["watch_idle"]
    watch_idle_sync = args.watch_idle_sync or watch_idle
    mount_files = args.mount_files or cfg["mount_files"]
    mount_size = parse_number(args.mount_size or cfg["mount_size"], True)
    mount_remote_size = parse_number(args.mount_remote_size or cfg["mount_remote_size"], True)
    mount_remote_note = None
    mount_repeats = max(1, args.mount_repeats or cfg["mount_repeats"])
    mount_peer_repeats = min(mount_repeats, experiments.MOUNT_PEER_REPEATS)
    wtm_size = parse_number(args.wtm_size or cfg["wtm_size"], True)
    wtm_absent_size = parse_number(args.wtm_absent_size or cfg["wtm_absent_size"], True)
    wtm_photos = max(1, args.wtm_photos or cfg["wtm_photos"])
    wtm_tree = max(experiments.WTM_EDITS, args.wtm_tree or cfg["wtm_tree"])
    wtm_repeats = max(1, args.wtm_repeats or cfg["wtm_repeats"])
    habits_files = parse_points(args.habits_files or cfg["habits_files"], False)
    habits_rebase_commits = max(1, args.habits_rebase_commits or cfg["habits_rebase_commits"])
    habits_log_commits = max(1, args.habits_log_commits or cfg["habits_log_commits"])
    webui_folder = max(1, args.webui_folder or cfg["webui_folder"])
    webui_commit = max(1, min(args.webui_commit or cfg["webui_commit"], webui_folder))
    webui_paths = max(1, args.webui_paths or cfg["webui_paths"])
    webui_upload = max(1, parse_number(args.webui_upload_size or cfg["webui_upload"], True))
    platforms_size = max(1, parse_number(args.platforms_size or cfg["platforms_size"], True))
    platforms_files = max(1, args.platforms_files or cfg["platforms_files"])
    platforms_tries = max(1, args.platforms_tries or cfg["platforms_tries"])
    encrypted_size = max(1, parse_number(args.encrypted_size or cfg["encrypted_size"], True))
    encrypted_files = max(1, args.encrypted_files or cfg["encrypted_files"])
    encrypted_tries = max(1, args.encrypted_tries or cfg["encrypted_tries"])
    oxen_photos = max(OXEN_EDIT_MIN, args.oxen_photos or cfg["oxen_photos"])
    oxen_small = max(1, args.oxen_small or cfg["oxen_small"])
    oxen_tries = max(1, args.oxen_tries or cfg["oxen_tries"])
    timeout = args.timeout or cfg["timeout"]

    os.makedirs(args.workdir, exist_ok=True)
    fs = measure.fs_type(args.workdir)
    if fs in ("tmpfs", "ramfs"):
        sys.exit("%s is on %s (RAM): use --workdir on a real disk" % (args.workdir, fs))
    scratch = os.path.join(args.workdir, "run-%d" % os.getpid())
    os.makedirs(scratch)

    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    versions, missing, chosen = {}, {}, []
    dmv_source = None
    for name in tools.ORDER:
        if name not in wanted:
            continue
        if name == "dmv":
            path, why = (args.dmv, None) if args.dmv else build_dmv(os.path.join(scratch, "cargo.log"))
            dmv_source = os.path.abspath(path) if path else None
            if path and os.path.isfile(path):
                # a private copy: target/release/dmv may be rebuilt while we run
                private = os.path.join(scratch, "bin", "dmv")
                os.makedirs(os.path.dirname(private), exist_ok=True)
                shutil.copy2(path, private)
                path = private
            tool = tools.Dmv(os.path.abspath(path) if path else None)
            if why:
                missing[name] = why
        else:
            tool = tools.ALL[name]()
        version, why = tool.probe()
        if version:
            versions[name] = version
        else:
            missing.setdefault(name, why)
        # a missing dmv still runs: every step records the failure
        if version or name == "dmv":
            chosen.append(tool)
    def peer(name, cls):
        """A peer of the s3 or store experiment (installed with apt-get when missing), or None."""
        tool = cls()
        version, why = tool.probe()
        if not version:
            ok, log = apt_install(cls.apt_package)
            tool = cls()
            version, why = tool.probe()
            if not version:
                why = "%s; apt-get install -y %s: %s" % (why, cls.apt_package, log)
        if version:
            versions[name] = version
            return tool
        missing[name] = why
        return None

    # the Murphy experiments' peers from the Python package registry (DVC, Oxen): pip-installed once into
    # the harness's venv (tools.peers_venv()) when missing
    murphy_tools = []
    if "filesize" in exps or "filecount" in exps or "oxen-workloads" in exps:
        for name, cls in tools.MURPHY_PEERS.items():
            if name not in wanted:
                continue
            tool = cls()
            version, why = tool.probe()
            if not version:
                ok, log = tools.pip_install(cls.pip_package)
                tool = cls()
                version, why = tool.probe()
                if not version:
                    why = "%s; pip install %s: %s" % (why, cls.pip_package, log)
            if version:
                versions[name] = version
                murphy_tools.append(tool)
            else:
                missing[name] = why

    # the s3 experiment's own peers and server: installed when missing
    s3_tools, minio_bin, minio_why = [], None, None
    if "s3" in exps:
        s3_tools = [t for t in chosen if t.name == "dmv"]
        for name, cls in tools.S3_PEERS.items():
            if name not in wanted:
                continue
            tool = peer(name, cls)
            if tool:
                s3_tools.append(tool)
    # the hubtier experiment's floor (rclone, installed when missing) and server (MinIO)
    hubtier_rclone, hubtier_rclone_why = None, None
    if "hubtier" in exps:
        if "rclone" in wanted:
            hubtier_rclone = next((t for t in s3_tools if t.name == "rclone"), None) or (
                None if "rclone" in missing else peer("rclone", tools.Rclone))
            hubtier_rclone_why = None if hubtier_rclone else missing.get("rclone")
        else:
            hubtier_rclone_why = "not among --tools"
    # the encrypted experiment's peer: restic (installed when missing) and server (MinIO)
    encrypted_restic, encrypted_restic_why = None, None
    if "encrypted" in exps:
        if "restic" in wanted:
            encrypted_restic = next((t for t in s3_tools if t.name == "restic"), None) or (
                None if "restic" in missing else peer("restic", tools.Restic))
            encrypted_restic_why = None if encrypted_restic else missing.get("restic")
        else:
            encrypted_restic_why = "not among --tools"
    # the locks experiment's peer: git-lfs (git's subcommand) on lfs-test-server (built with go when missing)
    lfs_bin, lfs_why = None, None
    if "locks" in exps:
        r = subprocess.run(["git", "lfs", "version"], capture_output=True, text=True)
        if r.returncode != 0:
            lfs_why = "git lfs is not installed (apt-get install -y git-lfs)"
        else:
            versions["git-lfs"] = r.stdout.strip()
            lfs_bin, lfs_why = servers.install_lfs_test_server(os.path.join(scratch, "lfs-test-server-build.log"))
            if lfs_bin:
                versions["lfs-test-server"] = servers.LfsTestServer.version
        if lfs_why:
            missing["git-lfs"] = lfs_why
    # oxen-workloads: DVC's S3 remotes need the dvc-s3 plugin (pip-installed into the same venv when missing)
    oxen_dvc = next((t for t in murphy_tools if t.name == "dvc"), None) if "oxen-workloads" in exps else None
    oxen_peer = next((t for t in murphy_tools if t.name == "oxen"), None) if "oxen-workloads" in exps else None
    if oxen_dvc:
        py = os.path.join(tools.peers_venv(), "bin", "python")
        if subprocess.run([py, "-c", "import dvc_s3"], capture_output=True).returncode != 0:
            ok, log = tools.pip_install("dvc-s3")
            if not ok:
                missing["dvc-s3"] = log
        r = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('dvc-s3'))"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            versions["dvc-s3"] = r.stdout.strip()
    oxen_lfs_why = None  # oxen-workloads: git-lfs takes part in the photo rows when installed
    if "oxen-workloads" in exps:
        if "git-lfs" not in wanted and args.tools != ap.get_default("tools"):
            oxen_lfs_why = "not among --tools"
        else:
            r = subprocess.run(["git", "lfs", "version"], capture_output=True, text=True)
            if r.returncode == 0:
                versions["git-lfs"] = r.stdout.strip()
            else:
                oxen_lfs_why = missing["git-lfs"] = "git lfs is not installed (apt-get install -y git-lfs)"
    if "s3" in exps or "hubtier" in exps or "encrypted" in exps or "oxen-workloads" in exps:
        minio_bin, minio_why = servers.install_minio(os.path.join(scratch, "minio-build.log"))
        if minio_bin:
            versions["minio"] = servers.minio_version(minio_bin)
        else:
            missing["minio"] = minio_why
    # the store experiment's peers (restic, borg): installed when missing
    store_tools = []
    if "store" in exps:
        store_tools = [t for t in chosen if t.in_store]
        for name, cls in tools.STORE_PEERS.items():
            if name in wanted and name not in missing:
                tool = peer(name, cls)
                if tool:
                    store_tools.append(tool)
    # the mount experiment's peers: restic mount (installed when missing) and bup fuse (bup's python needs the
    # fuse module: python3-fuse, installed when missing)
    mount_restic, mount_bup, mount_bup_why = None, None, None
    if "mount" in exps:
        if "restic" in wanted:
            mount_restic = next((t for t in s3_tools + store_tools if t.name == "restic"), None) or (
                None if "restic" in missing else peer("restic", tools.Restic))
        mount_bup = next((t for t in chosen if t.name == "bup"), None)
        if mount_bup:
            def fuse_module():
                try:
                    # Debian's bup runs the system's python (libpython3), not a python3 first on PATH
                    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
                    return subprocess.run([py, "-c", "import fuse"], capture_output=True,
                                          timeout=60).returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    return False
            if not fuse_module():
                ok, log = apt_install("python3-fuse")
                if not fuse_module():
                    mount_bup_why = "bup fuse needs the python fuse module: apt-get install -y python3-fuse: %s" % log
                    mount_bup = None
        else:
            mount_bup_why = missing.get("bup", "not among --tools")
        free = measure.free_bytes(args.workdir)
        if not args.mount_remote_size and free < 4 * mount_remote_size + 2 * GiB and mount_remote_size > GiB:
            mount_remote_note = "%s: %s free on the disk, %s needed" % (
                cfg["mount_remote_size"], experiments.human_bytes(free),
                experiments.human_bytes(4 * mount_remote_size + 2 * GiB))
            mount_remote_size = GiB
    # the worktree-mount experiment's floor: bare FUSE (a private copy: target/ may be rebuilt while we run)
    wtm_floor, wtm_floor_why, wtm_floor_source = None, None, None
    if "worktree-mount" in exps:
        path, wtm_floor_why = (args.fuse_floor, None) if args.fuse_floor else build_fuse_floor(
            os.path.join(scratch, "cargo-fuse-floor.log"))
        if path and os.path.isfile(path):
            wtm_floor_source = os.path.abspath(path)
            private = os.path.join(scratch, "bin", "fuse_floor")
            os.makedirs(os.path.dirname(private), exist_ok=True)
            shutil.copy2(path, private)
            wtm_floor = experiments.FuseFloor(private)
        elif path:
            wtm_floor_why = "%s not found" % path
    # the watch experiment's peer: Syncthing (installed when missing; else its points are recorded as skipped)
    watch_syncthing, watch_syncthing_why = None, None
    if "watch" in exps:
        if "syncthing" in wanted:
            watch_syncthing = peer("syncthing", tools.Syncthing)
            watch_syncthing_why = None if watch_syncthing else missing.get("syncthing")
        else:
            watch_syncthing_why = "not among --tools"
    # the platforms experiment's builds: private copies (target/ may be rebuilt while we run) and qemu-user
    platforms_builds, platforms_qemu, platforms_qemu_version = {}, None, None
    platforms_wine, platforms_wine_version, platforms_wineprefix = None, None, None
    if "platforms" in exps:
        dmv_tool = next((t for t in chosen if t.name == "dmv"), None)
        if dmv_tool and dmv_tool.path and "dmv" in versions:
            platforms_builds["native"] = (dmv_tool.path, dmv_source)
        else:
            platforms_builds["native"] = (None, missing.get("dmv", "dmv is not among --tools"))
        for target, given in (("x86_64-musl", args.platforms_x86_64_musl),
                              ("aarch64-qemu", args.platforms_aarch64_musl)):
            if given and os.path.isfile(given):
                private = os.path.join(scratch, "bin-" + target, "dmv")
                os.makedirs(os.path.dirname(private), exist_ok=True)
                shutil.copy2(given, private)
                platforms_builds[target] = (private, os.path.abspath(given))
            else:
                platforms_builds[target] = (None, "%s not found (build it with scripts/package)" % given)
        def emulator(name, given, packages):
            """The emulator's path with its version noted in `versions`, or None with why in `missing`."""
            found = shutil.which(given)
            if not found:
                missing[name] = "%s not found (apt-get install -y %s)" % (given, packages)
                return None
            try:
                r = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60)
                versions[name] = (r.stdout.strip().splitlines() or ["?"])[0]
                return found
            except (OSError, subprocess.TimeoutExpired) as e:
                missing[name] = "%s --version: %s" % (found, e)
                return None
        platforms_qemu = emulator("qemu-user", args.platforms_qemu, "qemu-user-static")
        platforms_qemu_version = versions.get("qemu-user")
        # the Windows build, under Wine: in scripts/test's prefix (the suite's own HOME is a scratch one)
        platforms_wineprefix = os.environ.get("WINEPREFIX") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                              "dmv-wine")
        wine = emulator("wine", args.platforms_wine, "wine wine64")
        platforms_wine_version = versions.get("wine")
        given = args.platforms_windows
        if not given or not os.path.isfile(given):
            why = "%s not found (cargo build --release --target x86_64-pc-windows-gnu -p dmv-cli)" % given
        else:
            why = missing.get("wine") or experiments.wine_prefix_problem(platforms_wineprefix)
        if why:
            platforms_builds["windows-wine"] = (None, why)
        else:
            private = os.path.join(scratch, "bin-windows-wine", "dmv.exe")
            os.makedirs(os.path.dirname(private), exist_ok=True)
            shutil.copy2(given, private)
            platforms_builds["windows-wine"] = (private, os.path.abspath(given))
            platforms_wine = dict(path=wine, env=dict(WINEPREFIX=platforms_wineprefix, WINEDEBUG="-all"))
    for name, why in missing.items():
        hint = " (apt-get install -y mercurial bup)" if name in ("hg", "bup") else ""
        print("missing: %s: %s%s" % (name, why[-300:], hint), flush=True)

    now = datetime.datetime.now(datetime.timezone.utc).astimezone()
    run_id = now.strftime("%Y-%m-%dT%H%M%S") + "-" + mode
    results_dir = os.path.join(HERE, "results")
    os.makedirs(results_dir, exist_ok=True)
    out_path = os.path.join(results_dir, "%s-%s.jsonl" % (now.strftime("%Y-%m-%d"), mode))
    n = 2
    while os.path.exists(out_path):
        out_path = os.path.join(results_dir, "%s-%s-%d.jsonl" % (now.strftime("%Y-%m-%d"), mode, n))
        n += 1
    meta = dict(run_id=run_id, mode=mode, date=now.isoformat(timespec="seconds"),
                machine=machine_info(args.workdir), versions=versions, missing=missing,
                dmv_revision=repo_revision(), timeout_s=timeout, rss_method=measure.RSS_METHOD, experiments=exps,
                tools=list(dict.fromkeys(t.name for t in chosen + murphy_tools + s3_tools + store_tools +
                                         ([hubtier_rclone] if hubtier_rclone else []) +
                                         ([mount_restic] if mount_restic else []) +
                                         ([encrypted_restic] if encrypted_restic else []) +
                                         ([watch_syncthing] if watch_syncthing else []))),
                config=dict(sizes=sizes, counts=counts, status_files=status_files,
                            status_changed=status_changed, refs=ref_counts, refs_separate=separate,
                            sync_sizes=sync_sizes, sync_counts=sync_counts, sync_settle_s=sync_settle,
                            partial_status_tries=experiments.PARTIAL_STATUS_TRIES,
                            s3_sizes=s3_sizes, s3_counts=s3_counts, s3_settle_s=s3_settle,
                            s3_minio=minio_bin, history_commits=history_commits,
                            hubrep_files=hubrep_files, hubrep_replicas=hubrep_replicas,
                            web_images=web_images, web_film_bytes=web_film, import_files=import_files,
                            import_commits=import_commits, archive_bytes=archive_size, store_files=store_files,
                            store_settle_s=sync_settle, attack_pairs=attack_pairs,
                            attack_bytes=experiments.ATTACK_BYTES, attack_slow=experiments.ATTACK_SLOW,
                            attack_flood=experiments.ATTACK_FLOOD,
                            attack_max_connections=experiments.ATTACK_MAX_CONNECTIONS,
                            attack_request_timeout_s=experiments.ATTACK_REQUEST_TIMEOUT_S,
                            avail_bytes=avail_size, avail_files=avail_files, avail_settle_s=sync_settle,
                            avail_stall_s=experiments.AVAIL_STALL_S, avail_margin_s=experiments.AVAIL_MARGIN_S,
                            avail_max_rounds=experiments.AVAIL_MAX_ROUNDS,
                            hubtier_bytes=hubtier_size, hubtier_files=hubtier_files, hubtier_settle_s=sync_settle,
                            hubtier_minio=minio_bin if "hubtier" in exps else None,
                            watch_bytes=watch_size, watch_small_bytes=experiments.WATCH_SMALL, watch_files=watch_files,
                            watch_tree_files=watch_tree, watch_idle_s=watch_idle, watch_idle_sync_s=watch_idle_sync,
                            watch_idle_sample_s=experiments.WATCH_IDLE_SAMPLE_S,
                            watch_idle_wait_s=experiments.WATCH_IDLE_WAIT_S,
                            watch_syncthing_missing=watch_syncthing_why,
                            watch_syncthing_watcher_delay_s=experiments.SYNCTHING_WATCHER_DELAY_S,
                            watch_syncthing_options=experiments.SYNCTHING_OPTIONS,
                            watch_quiet_s=experiments.WATCH_QUIET_S, watch_sync_every_s=experiments.WATCH_SYNC_EVERY_S,
                            watch_check_every_s=experiments.WATCH_CHECK_EVERY_S,
                            watch_poll_s=experiments.WATCH_POLL_S, watch_calm_s=experiments.WATCH_CALM_S,
                            watch_wait_s=experiments.WATCH_WAIT_S, watch_settle_s=sync_settle,
                            mount_files=mount_files, mount_bytes=mount_size, mount_remote_bytes=mount_remote_size,
                            mount_remote_reduced=mount_remote_note, mount_repeats=mount_repeats,
                            mount_peer_repeats=mount_peer_repeats, mount_bup_list_s=experiments.MOUNT_BUP_LIST_S,
                            mount_reads=experiments.MOUNT_READS, mount_read_bytes=experiments.MOUNT_READ_BYTES,
                            mount_seed=experiments.MOUNT_SEED, mount_bup_missing=mount_bup_why,
                            wtm=dict(size=wtm_size, absent_size=wtm_absent_size, photos=wtm_photos,
                                     photo_min=experiments.WTM_PHOTO_MIN, photo_max=experiments.WTM_PHOTO_MAX,
                                     saves=experiments.WTM_SAVES, tree=wtm_tree, edits=experiments.WTM_EDITS,
                                     repeats=wtm_repeats, seed=experiments.WTM_SEED, can_drop_caches=os.access(
                                         experiments.DROP_CACHES, os.W_OK),
                                     fuse_floor=dmv_binary_info(wtm_floor_source, wtm_floor and wtm_floor.path),
                                     fuse_floor_missing=wtm_floor_why, settle_s=sync_settle),
                            habits_files=habits_files, habits_rebase_commits=habits_rebase_commits,
                            habits_log_commits=habits_log_commits, habits_tries=experiments.HABITS_TRIES,
                            habits_new_bytes=experiments.HABITS_NEW_BYTES,
                            habits_merge_every=experiments.HABITS_MERGE_EVERY,
                            habits_side_commits=experiments.HABITS_SIDE_COMMITS,
                            habits_text=dict(
                                blame_lines=experiments.HABITS_BLAME_LINES,
                                blame_commits=experiments.HABITS_BLAME_COMMITS,
                                blame_changed=experiments.HABITS_BLAME_CHANGED,
                                grep_files=experiments.HABITS_GREP_FILES, grep_every=experiments.HABITS_GREP_EVERY,
                                grep_word=experiments.HABITS_GREP_WORD, all_commits=experiments.HABITS_ALL_COMMITS,
                                all_branches=experiments.HABITS_ALL_BRANCHES,
                                branch_commits=experiments.HABITS_BRANCH_COMMITS,
                                bisect_commits=experiments.HABITS_BISECT_COMMITS, seed=experiments.HABITS_SEED),
                            locks=dict(tries=experiments.LOCKS_TRIES, counts=list(experiments.LOCKS_COUNTS),
                                       held=experiments.LOCKS_HELD, lfs_repo=experiments.LOCKS_LFS_REPO,
                                       lfs_server=lfs_bin, lfs_missing=lfs_why),
                            webui_folder=webui_folder, webui_commit=webui_commit, webui_paths=webui_paths,
                            webui_upload_bytes=webui_upload,
                            webui_per_page=experiments.WEBUI_PER_PAGE, webui_queries=list(experiments.WEBUI_QUERIES),
                            webui_window=list(experiments.WEBUI_WINDOW), webui_chrome_args=experiments.CHROME_ARGS,
                            webui_connections=experiments.WEB_CONNECTIONS,
                            wall_photos=webui_folder, wall_before=args.wall_before,
                            wall_presses=args.wall_presses or experiments.WALL_PRESSES,
                            wall_sizes=[list(s) for s in experiments.WALL_SIZES],
                            wall_per_page=experiments.WALL_PER_PAGE, wall_settle_ms=experiments.WALL_SETTLE_MS,
                            wall_chrome_args=experiments.WALL_CHROME_ARGS,
                            review_photos=args.review_photos or experiments.REVIEW_PHOTOS,
                            review_comments=args.review_comments or experiments.REVIEW_COMMENTS,
                            review_listed=experiments.REVIEW_LISTED, review_warm_gets=experiments.REVIEW_WARM_GETS,
                            platforms_bytes=platforms_size, platforms_files=platforms_files,
                            platforms_tries=platforms_tries, platforms_qemu=platforms_qemu,
                            platforms_qemu_version=platforms_qemu_version, platforms_dist=args.platforms_dist,
                            platforms_builds={t: v[1] if v[0] else None for t, v in platforms_builds.items()},
                            platforms_missing={t: v[1] for t, v in platforms_builds.items() if not v[0]},
                            platforms_ref_flags=experiments.PLATFORMS_REF_FLAGS,
                            platforms_start_tries=max(platforms_tries, experiments.PLATFORMS_START_TRIES),
                            platforms_wine=platforms_wine and platforms_wine["path"],
                            platforms_wine_version=platforms_wine_version, platforms_wineprefix=platforms_wineprefix,
                            encrypted_bytes=encrypted_size, encrypted_files=encrypted_files,
                            encrypted_file_bytes=experiments.ENCRYPTED_FILE_BYTES, encrypted_tries=encrypted_tries,
                            encrypted_settle_s=sync_settle, encrypted_restic_missing=encrypted_restic_why,
                            encrypted_minio=minio_bin if "encrypted" in exps else None,
                            oxen_photos=oxen_photos, oxen_small=oxen_small, oxen_tries=oxen_tries,
                            oxen_photo_bytes=experiments.OXEN_PHOTO_BYTES,
                            oxen_edit_every=experiments.OXEN_EDIT_EVERY,
                            oxen_settle_s=sync_settle if "oxen-workloads" in exps else None,
                            dmv_binary=dmv_binary_info(dmv_source, next(
                                (t.path for t in chosen if t.name == "dmv"), None))),
                argv=sys.argv[1:])
    rec = experiments.Recorder(out_path, meta, tool_env(os.path.join(scratch, "home")), timeout)
    ctx = experiments.Context(rec, chosen, scratch, args)
    ctx.murphy = murphy_tools  # filesize and filecount only
    print("results: %s" % os.path.relpath(out_path), flush=True)

    start = time.time()
    interrupted = False

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        for exp in exps:
            t0 = time.time()
            print("== %s" % exp, flush=True)
            if exp == "filesize":
                experiments.filesize(ctx, sizes)
            elif exp == "filecount":
                experiments.filecount(ctx, counts)
            elif exp == "status":
                experiments.status_table(ctx, status_files, status_changed)
            elif exp == "refs":
                experiments.refs(ctx, ref_counts, separate)
            elif exp == "sync":
                experiments.sync(ctx, sync_sizes, sync_counts, sync_settle)
            elif exp == "partial":
                experiments.partial(ctx, sync_sizes, sync_counts, sync_settle)
            elif exp == "s3":
                experiments.s3(ctx, s3_tools, minio_bin, s3_sizes, s3_counts, s3_settle, minio_why)
            elif exp == "history":
                experiments.history(ctx, history_commits)
            elif exp == "hub-replicas":
                experiments.hub_replicas(ctx, hubrep_files, hubrep_replicas, sync_settle)
            elif exp == "web":
                experiments.web(ctx, web_images, web_film)
            elif exp == "import":
                experiments.git_import(ctx, import_files, import_commits, archive_size, sync_settle)
            elif exp == "store":
                experiments.store(ctx, store_tools, store_files, sync_settle)
            elif exp == "attack":
                experiments.attack(ctx, attack_pairs)
            elif exp == "availability":
                experiments.availability(ctx, avail_size, avail_files, sync_settle)
            elif exp == "hubtier":
                experiments.hubtier(ctx, hubtier_rclone, minio_bin, hubtier_size, hubtier_files, sync_settle,
                                    minio_why, hubtier_rclone_why)
            elif exp == "watch":
                experiments.watch(ctx, watch_size, watch_files, watch_tree, watch_idle, sync_settle,
                                  watch_idle_sync, watch_syncthing, watch_syncthing_why)
            elif exp == "mount":
                experiments.mount(ctx, mount_restic, mount_bup, mount_bup_why, mount_files, mount_size,
                                  mount_remote_size, mount_remote_note, mount_repeats, mount_peer_repeats)
            elif exp == "worktree-mount":
                experiments.worktree_mount(ctx, wtm_size, wtm_absent_size, wtm_photos, wtm_tree, wtm_repeats,
                                           wtm_floor, wtm_floor_why, sync_settle)
            elif exp == "habits":
                experiments.habits(ctx, habits_files, habits_rebase_commits, habits_log_commits)
                experiments.habits_text(ctx)
            elif exp == "habits-text":
                experiments.habits_text(ctx)
            elif exp == "locks":
                experiments.locks(ctx, lfs_bin, lfs_why)
            elif exp == "webui":
                experiments.webui(ctx, webui_folder, webui_commit, webui_paths, webui_upload)
            elif exp == "wall":
                experiments.wall(ctx, webui_folder, args.wall_before, args.wall_presses or experiments.WALL_PRESSES)
            elif exp == "review-page":
                experiments.review_page(ctx, args.review_photos or experiments.REVIEW_PHOTOS,
                                        args.review_comments or experiments.REVIEW_COMMENTS)
            elif exp == "platforms":
                experiments.platforms(ctx, platforms_builds, platforms_qemu, platforms_size, platforms_files,
                                      platforms_tries, args.platforms_dist, platforms_wine)
            elif exp == "encrypted":
                experiments.encrypted(ctx, encrypted_restic, minio_bin, encrypted_size, encrypted_files,
                                      encrypted_tries, sync_settle, minio_why, encrypted_restic_why)
            elif exp == "oxen-workloads":
                experiments.oxen_workloads(ctx, oxen_peer, oxen_dvc, None if oxen_peer else missing.get("oxen"),
                                           None if oxen_dvc else missing.get("dvc"), minio_bin, minio_why,
                                           oxen_photos, oxen_small, oxen_tries, sync_settle, oxen_lfs_why)
            elif exp == "huge":
                dmv = next((t for t in chosen if t.name == "dmv"), None)
                size = (parse_number(args.huge_size, True) if args.huge_size
                        else meta["machine"]["mem_bytes"] + 8 * GiB)
                if dmv:
                    experiments.huge(ctx, dmv, size)
            print("== %s done in %.0f s" % (exp, time.time() - t0), flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted", flush=True)
    finally:
        duration = time.time() - start
        rec.close(duration_s=round(duration, 1), interrupted=interrupted)
        shutil.rmtree(scratch, ignore_errors=True)
    print("run took %.0f s; results in %s" % (duration, os.path.relpath(out_path)), flush=True)
    if not args.no_report:
        subprocess.run([sys.executable, os.path.join(HERE, "report.py")], check=False)
    return 1 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
