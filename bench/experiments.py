"""The experiments (after Murphy et al., 2017) and the ref benchmarks.

Each experiment walks its points in increasing order; for every point it
prepares the data once (untimed) and then runs every tool on it, one tool
after the other, each in a fresh repository. A tool that fails a commit or
times out is skipped for all larger points of that experiment.
"""
import contextlib
import glob
import hashlib
import http.client
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import datagen
import servers
from measure import Cmd, Outcome, disk_usage, free_bytes, run_cmds
from tools import Bucket, Point, Remote

GiB = 1 << 30
AGED = 1_500_000_000 * 10**9  # mtime (ns) given to generated files: well before any index


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" or n == int(n) else "%.1f %s" % (n, unit)
        n /= 1024


class Recorder:
    """Runs steps and writes one JSON object per step to the results file."""

    def __init__(self, path, run_meta, env, timeout):
        self.path, self.meta, self.env, self.timeout = path, run_meta, env, timeout
        self.file = open(path, "a", buffering=1)
        self.write(dict(kind="run", **run_meta))

    def write(self, obj):
        self.file.write(json.dumps(obj, sort_keys=False) + "\n")

    def _record(self, tool, experiment, param, step, status, out=None, measure_path=None, **extra):
        rec = dict(kind="step", tool=tool, experiment=experiment, parameter=param, step=step,
                   status=status, ok=status == "ok",
                   wall_s=round(out.wall_s, 6) if out else None,
                   peak_rss_kib=out.peak_rss_kib if out else None,
                   repo_bytes_disk=None, repo_bytes_apparent=None, repo_files=None,
                   error=(out.error if out else None))
        if measure_path:
            rec["repo_bytes_disk"], rec["repo_bytes_apparent"], rec["repo_files"] = disk_usage(measure_path)
        rec["loadavg_1m"] = round(os.getloadavg()[0], 2)  # the machine may be shared
        rec.update(extra)
        for key in ("run_id", "mode", "date", "machine", "versions"):
            rec[key] = self.meta[key]
        self.write(rec)
        shown = "%8.3fs %8.1f MiB" % (out.wall_s, out.peak_rss_kib / 1024) if out else ""
        size = human_bytes(rec["repo_bytes_disk"]) if rec["repo_bytes_disk"] is not None else ""
        print("  %-4s %-9s %-10s %-20s %-8s %s %s %s" % (
            tool, experiment, param, step, status, shown, size,
            ("| " + rec["error"][-160:].replace("\n", " | ")) if rec["error"] and status != "ok" else ""),
            flush=True)
        return rec

    def note(self, tool, experiment, param, step, status, error):
        return self._record(tool, experiment, param, step, status, error=error)

    def fact(self, tool, experiment, param, step, status="ok", error=None, **extra):
        """Records something measured without running a timed step (e.g. a file's size)."""
        return self._record(tool, experiment, param, step, status, error=error, **extra)

    def step(self, tool, experiment, param, step, cmds, measure_path, expect_hash=None, timeout=None, after=None):
        """Runs one step; returns its Outcome (ok=True for n/a steps).

        `after(out)`, untimed, returns extra fields for the record and may
        fail the step (out.ok = False, out.error = why)."""
        if cmds is None:
            self.note(tool.name, experiment, param, step, "n/a", "%s has no such operation" % tool.name)
            return Outcome()
        out = run_cmds(cmds, self.env, timeout or self.timeout)
        extra = {}
        if expect_hash is not None and out.ok:
            extra["bytes_read"] = out.stdout_bytes
            if out.stdout_hash != expect_hash:
                out.ok = False
                out.error = "read back %d bytes whose hash differs from the committed file" % out.stdout_bytes
        if after:
            extra.update(after(out))
        status = "ok" if out.ok else ("timeout" if out.timed_out else "fail")
        self._record(tool.name, experiment, param, step, status, out, measure_path, **extra)
        return out

    def record(self, tool, experiment, param, step, out, measure_path, **extra):
        """Records a step the experiment timed itself (e.g. a loop of commands
        timed one by one); its status comes from `out` as in `step`."""
        status = "ok" if out.ok else ("timeout" if out.timed_out else "fail")
        return self._record(tool.name, experiment, param, step, status, out, measure_path, **extra)

    def close(self, **end):
        self.write(dict(kind="end", run_id=self.meta["run_id"], **end))
        self.file.close()


class Context:
    def __init__(self, rec, tools, workdir, args):
        self.rec, self.tools, self.workdir, self.args = rec, tools, workdir, args
        self.murphy = []  # peers of filesize and filecount only (tools.MURPHY_PEERS: DVC, Oxen)

    def point(self, experiment, param):
        root = os.path.join(self.workdir, "%s-%s" % (experiment, param))
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "work"))
        return Point(root)


class Skips:
    """Tools that failed at a smaller point of one experiment."""

    def __init__(self, ctx, experiment):
        self.ctx, self.experiment, self.why = ctx, experiment, {}

    def active(self, tool, param):
        if tool.name in self.why:
            self.ctx.rec.note(tool.name, self.experiment, param, "all", "skipped", self.why[tool.name])
            return False
        return True

    def fail(self, tool, param, out):
        self.why[tool.name] = "failed at %s: %s" % (param, (out.error or "")[-300:])


class S:
    """A measured step: `make` returns its commands when it is about to run.

    `tool`: run it as this tool instead (a floor among a tool's steps: no
    repository measured, and its failure never stops the tool's steps);
    `after`: as in Recorder.step."""

    def __init__(self, name, make, fatal=False, expect=None, tool=None, after=None):
        self.name, self.make, self.fatal, self.expect = name, make, fatal, expect
        self.tool, self.after = tool, after


class Prep:
    """Untimed preparation between steps (e.g. editing the data)."""

    def __init__(self, action):
        self.action = action


def _run_tool_steps(ctx, skips, tool, pt, experiment, param, steps):
    """Runs the steps in order. Stops at the first failed fatal step or at any
    timeout, and then skips the tool for the larger points."""
    meta = tool.meta(pt)
    for st in steps:
        if isinstance(st, Prep):
            st.action()
            continue
        expect = st.expect() if callable(st.expect) else st.expect
        who = st.tool or tool
        os.sync()  # untimed: no step pays for writing back what the one before it (or the data generator) wrote
        out = ctx.rec.step(who, experiment, param, st.name, st.make(), meta if who is tool else None,
                           expect_hash=expect, after=st.after)
        if not out.ok and who is tool and (st.fatal or out.timed_out):
            skips.fail(tool, param, out)
            return False
    return True


def _stored_check(tool, pt, size, expect_hash=None, blobs=None):
    """An `after` (untimed) for a peer with no read of a committed file (tools.MURPHY_PEERS): its store must
    hold the committed bytes, as whole files: one of `size` bytes whose hash is `expect_hash`, or at least
    `blobs` files of `size` bytes. None for the tools that have a read step or fsck instead."""
    if not hasattr(tool, "store_dir"):
        return None

    def after(out):
        if not out.ok:
            return {}
        found, match = 0, False
        for top, _, files in os.walk(tool.store_dir(pt)):
            for f in files:
                path = os.path.join(top, f)
                if os.path.getsize(path) != size:
                    continue
                found += 1
                if expect_hash is not None and not match and datagen.file_hash(path) == expect_hash:
                    match = True
        if expect_hash is not None and not match:
            out.ok, out.error = False, "no file of %d bytes with the committed bytes in %s (%d of that size)" % (
                size, tool.store_dir(pt), found)
        elif blobs is not None and found < blobs:
            out.ok, out.error = False, "%d files of %d bytes in %s, expected at least %d" % (
                found, size, tool.store_dir(pt), blobs)
        return {"stored_files_checked": found}
    return after


def _startup(tool, pt):
    """The step measuring a peer's fixed start-up cost alone (Oxen: the interpreter and `import oxen`), if any."""
    return [S("startup", lambda: tool.startup(pt))] if hasattr(tool, "startup") else []


def _forget(tool, pt):
    """Removes the tool's repository from the point (and, for DVC, its files beside the work tree)."""
    shutil.rmtree(tool.meta(pt), ignore_errors=True)
    if hasattr(tool, "cleanup"):
        tool.cleanup(pt)


def filesize(ctx, sizes):
    """Experiment 1: one file of growing size, committed twice."""
    skips = Skips(ctx, "filesize")
    for size in sizes:
        param = str(size)
        need = 4 * size + GiB
        if free_bytes(ctx.workdir) < need:
            for tool in ctx.tools:
                if skips.active(tool, param):
                    ctx.rec.note(tool.name, "filesize", param, "all", "skipped",
                                 "not enough free disk: need %s" % human_bytes(need))
            continue
        pt = ctx.point("filesize", size)
        data = os.path.join(pt.work, "file.bin")
        print("filesize %s: writing data" % human_bytes(size), flush=True)
        h1 = datagen.write_random_file(data, size)
        edit = datagen.BigFileEdit(data, size)
        os.utime(data, ns=(AGED, AGED))
        for tool in ctx.tools + ctx.murphy:
            if not skips.active(tool, param):
                continue
            _run_tool_steps(ctx, skips, tool, pt, "filesize", param, [
                S("init", lambda: tool.init(pt), fatal=True)] + _startup(tool, pt) + [
                S("commit1", lambda: tool.commit(pt, True), fatal=True,
                  after=_stored_check(tool, pt, size, expect_hash=h1)),
                S("fsck1", lambda: tool.fsck(pt)),
                S("read1", lambda: tool.read(pt, "file.bin"), expect=h1),
                Prep(edit.apply),
                S("commit2", lambda: tool.commit(pt, False), fatal=True,
                  after=_stored_check(tool, pt, size, expect_hash=edit.hash_after)),
                S("fsck2", lambda: tool.fsck(pt)),
                S("read2", lambda: tool.read(pt, "file.bin"), expect=edit.hash_after),
                S("gc", lambda: tool.gc(pt)),
            ])
            _forget(tool, pt)
            edit.restore()
            os.utime(data, ns=(AGED, AGED))
            pt.commits = 0
        shutil.rmtree(pt.root, ignore_errors=True)


def _tree(ctx, experiment, count):
    pt = ctx.point(experiment, count)
    print("%s %d: writing %d files" % (experiment, count, count), flush=True)
    datagen.write_tree(pt.work, count)
    datagen.touch_tree(pt.work, count, AGED)
    return pt


def _reset_tree(tool, pt, count, every):
    _forget(tool, pt)
    datagen.edit_tree(pt.work, count, seed=1, every=every)
    datagen.touch_tree(pt.work, count, AGED)
    pt.commits = 0


def filecount(ctx, counts):
    """Experiment 2: many 1 KiB files; commit, edit all, status, commit."""
    skips = Skips(ctx, "filecount")
    for count in counts:
        param = str(count)
        pt = _tree(ctx, "filecount", count)
        for tool in ctx.tools + ctx.murphy:
            if not skips.active(tool, param):
                continue
            _run_tool_steps(ctx, skips, tool, pt, "filecount", param, [
                S("init", lambda: tool.init(pt), fatal=True)] + _startup(tool, pt) + [
                S("commit1", lambda: tool.commit(pt, True), fatal=True,
                  after=_stored_check(tool, pt, datagen.SMALL_FILE_SIZE, blobs=count)),
                Prep(lambda: datagen.edit_tree(pt.work, count, seed=2)),
                S("status", lambda: tool.status(pt)),
                S("commit2", lambda: tool.commit(pt, False), fatal=True,
                  after=_stored_check(tool, pt, datagen.SMALL_FILE_SIZE, blobs=2 * count)),
            ])
            _reset_tree(tool, pt, count, every=1)
        shutil.rmtree(pt.root, ignore_errors=True)


def status_table(ctx, count, changed):
    """Mercurial's classic table: status after touching every file, after
    changing `changed` of them, and the diff of those changes."""
    experiment, param = "status", str(count)
    every = max(1, count // changed)
    pt = _tree(ctx, experiment, count)
    skips = Skips(ctx, experiment)
    touched = AGED + 3600 * 10**9
    for tool in ctx.tools:
        if tool.status(pt) is None:
            continue  # cp: nothing to compare
        _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
            S("init", lambda: tool.init(pt), fatal=True),
            S("commit", lambda: tool.commit(pt, True), fatal=True),
            S("status_clean", lambda: tool.status(pt)),
            Prep(lambda: datagen.touch_tree(pt.work, count, touched)),
            S("status_touched", lambda: tool.status(pt)),
            S("status_touched_again", lambda: tool.status(pt)),
            Prep(lambda: datagen.edit_tree(pt.work, count, seed=3, every=every)),
            S("status_changed", lambda: tool.status(pt)),
            S("diff_stat", lambda: tool.diff_stat(pt)),
        ])
        _reset_tree(tool, pt, count, every=every)
    shutil.rmtree(pt.root, ignore_errors=True)


HEX64 = re.compile(rb"\b[0-9a-f]{64}\b")
HEX40 = re.compile(rb"\b[0-9a-f]{40}\b")


def _supports(ctx, tool, pt, *subcommands):
    for sub in subcommands:
        out = run_cmds([tool.cmd(pt, sub, "--help", stdout="capture")], ctx.rec.env, 60)
        if not out.ok:
            return "`%s %s` unsupported: %s" % (tool.name, sub, (out.error or "")[-200:])
    return None


def _commit_id(ctx, tool, pt):
    """Id of HEAD's commit, from `rev-parse HEAD` or the first ref listed."""
    pattern = HEX64 if tool.name == "dmv" else HEX40
    for cmds in (tool.head_id(pt), getattr(tool, "list_for_id", lambda p: None)(pt)):
        if cmds:
            out = run_cmds(cmds, ctx.rec.env, 60)
            m = pattern.search(out.captured) if out.ok else None
            if m:
                return m.group(0).decode()
    return None


def refs(ctx, counts, separate_counts):
    """Ref store: N refs created in one transaction, listed, one printed, one
    deleted; N refs created by N separate invocations."""
    experiment = "refs"
    for tool in ctx.tools:
        if not tool.has_refs:
            continue
        probe = ctx.point(experiment, "probe")
        # git has these for ever; the dmv under construction may not yet.
        unsupported = _supports(ctx, tool, probe, "update-ref", "show-ref") if tool.name == "dmv" else None
        shutil.rmtree(probe.root, ignore_errors=True)
        skips = Skips(ctx, experiment)
        for n in counts:
            param = str(n)
            if unsupported:
                ctx.rec.note(tool.name, experiment, param, "all", "unsupported", unsupported)
                continue
            if not skips.active(tool, param):
                continue
            pt = ctx.point(experiment, n)
            with open(os.path.join(pt.work, "a"), "w") as f:
                f.write("a\n")
            meta = tool.meta(pt)
            ok = _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                S("init", lambda: tool.init(pt), fatal=True),
                S("commit", lambda: tool.commit(pt, True), fatal=True)])
            oid = ok and _commit_id(ctx, tool, pt)
            if ok and not oid:
                ctx.rec.note(tool.name, experiment, param, "all", "fail", "could not read the commit id")
                skips.why[tool.name] = "no commit id"
            if not oid:
                shutil.rmtree(pt.root, ignore_errors=True)
                continue
            names = ["refs/heads/bench/%07d" % i for i in range(n)]
            batch = "".join("create %s %s\n" % (r, oid) for r in names).encode()
            mid = names[n // 2]
            packs = tool.pack_refs(pt) is not None
            _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                S("create_txn", lambda: tool.update_refs(pt, batch), fatal=True),
                S("list_all", lambda: tool.show_refs(pt)),
                S("show_one", lambda: tool.show_ref(pt, mid)),
                S("delete_one", lambda: tool.update_refs(pt, b"delete %s\n" % mid.encode())),
                S("pack_refs", lambda: tool.pack_refs(pt)),  # n/a for a ref store without loose refs
            ] + ([
                S("delete_one_packed", lambda: tool.update_refs(pt, b"delete %s\n" % names[0].encode())),
            ] if packs else []))
            if n in separate_counts:  # a fresh repository, one process per ref
                shutil.rmtree(meta, ignore_errors=True)
                _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                    S("init_separate", lambda: tool.init(pt), fatal=True),
                    S("commit_separate", lambda: tool.commit(pt, True), fatal=True),
                    S("create_separate", lambda: [  # this repository's own commit id
                        c for fresh in [_commit_id(ctx, tool, pt)] for r in names
                        for c in tool.update_refs(pt, ("create %s %s\n" % (r, fresh)).encode())]),
                ])
            shutil.rmtree(pt.root, ignore_errors=True)


def _verify_file(path, expected):
    """Untimed: the file `path` against the hash `expected`; fails the step if it differs."""
    def check(out):
        if not out.ok:
            return {}
        verified = os.path.exists(path) and datagen.file_hash(path) == expected
        if not verified:
            out.ok = False
            out.error = "%s is missing or its hash differs from the committed file's" % path
        return dict(verified=verified)
    return check


def huge(ctx, tool, size):
    """A file larger than RAM (issue 16): DMV's commit, re-commit after a small
    edit, read, fsck, restore of the deleted file and clone, each with its
    time and peak RSS, against `cat FILE > /dev/null` and `cp` + `sync` of the
    same file in the same run (recorded as tool `cp`). The disk holds the file
    and at most one more copy at a time (the cp floor's, then DMV's store),
    and a clone only when there is room for it: with room for one more copy
    only, the clone is bare and its file is read back from its store."""
    experiment, param = "huge", str(size)
    need = 2 * size + 2 * GiB
    free = free_bytes(ctx.workdir)
    if free < need:
        msg = "cannot run: needs %s free in %s (the file and one more copy at a time), has %s" % (
            human_bytes(need), ctx.workdir, human_bytes(free))
        print(msg, flush=True)
        ctx.rec.note(tool.name, experiment, param, "all", "skipped", msg)
        return
    pt = ctx.point(experiment, size)
    data = os.path.join(pt.work, "huge.bin")
    copy = os.path.join(pt.root, "copy.bin")
    print("huge %s: writing data" % human_bytes(size), flush=True)
    t = time.perf_counter()
    h = datagen.write_random_file(data, size)
    print("  written in %.0f s" % (time.perf_counter() - t), flush=True)
    edit = datagen.BigFileEdit(data, size)
    cat = [Cmd(["cat", data], cwd=pt.root)]  # stdout: /dev/null
    skips = Skips(ctx, experiment)
    ok = _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
        S("cat1", lambda: cat, tool=_Floor),
        S("cp", lambda: [Cmd(["cp", data, copy], cwd=pt.root), Cmd(["sync", copy], cwd=pt.root)], tool=_Floor),
        Prep(lambda: os.remove(copy)),
        S("init", lambda: tool.init(pt), fatal=True),
        S("commit1", lambda: tool.commit(pt, True), fatal=True),
        S("read1", lambda: tool.read(pt, "huge.bin"), expect=h),
        S("fsck1", lambda: tool.fsck(pt)),
        Prep(edit.apply),
        S("cat2", lambda: cat, tool=_Floor),
        S("commit2", lambda: tool.commit(pt, False), fatal=True),
        S("read2", lambda: tool.read(pt, "huge.bin"), expect=edit.hash_after),
        Prep(lambda: os.remove(data)),
        S("checkout", lambda: [tool.cmd(pt, "restore", "huge.bin")], after=_verify_file(data, edit.hash_after)),
    ])
    free = free_bytes(ctx.workdir)  # the clone's store and checkout: as much again
    if ok and free >= need:
        dest = os.path.join(pt.root, "clone")
        os.sync()
        ctx.rec.step(tool, experiment, param, "clone", [tool.cmd(pt, "clone", pt.work, dest, cwd=pt.root)],
                     tool.clone_meta(dest), after=_verify_file(os.path.join(dest, "huge.bin"), edit.hash_after))
        _remove([dest], None)
    elif ok:
        # No room for a second store and a second checkout: the source's file goes (its commit holds it),
        # the clone is bare (its store only) and its file is read back from that store, hash checked.
        os.remove(data)
        free = free_bytes(ctx.workdir)
        if free < size + 2 * GiB:
            ctx.rec.note(tool.name, experiment, param, "clone", "skipped",
                         "not enough free disk for a clone, even bare: %d bytes free (%s), needs %d (%s)" % (
                             free, human_bytes(free), size + 2 * GiB, human_bytes(size + 2 * GiB)))
        else:
            dest = os.path.join(pt.root, "clone.dmv")
            _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                S("clone_bare", lambda: [tool.cmd(pt, "clone", "--bare", pt.work, dest, cwd=pt.root)]),
                S("read_clone", lambda: [tool.cmd(pt, "cat", "HEAD:huge.bin", stdout="hash", cwd=dest)],
                  expect=edit.hash_after)])
            _remove([dest], None)
    shutil.rmtree(pt.root, ignore_errors=True)


HISTORY_FOLDERS, HISTORY_FILES_PER_FOLDER, HISTORY_LINES = 10, 10, 20
HISTORY_SINGLES = 20               # extra commits timed one by one: "one small commit" is their median
HISTORY_PATH = "d5/f50.txt"        # the file whose history `log -- PATH` lists


class HistoryTree:
    """100 small text files (20 lines each) in 10 folders. Edit k rewrites one
    line of file k mod 100 (cycling through the files, then the lines) with a
    text no earlier edit wrote, so every edit is a change to commit."""

    def __init__(self, root):
        self.root = root
        self.files = HISTORY_FOLDERS * HISTORY_FILES_PER_FOLDER
        self.text = [["file %02d line %02d: as first written\n" % (f, l) for l in range(HISTORY_LINES)]
                     for f in range(self.files)]
        self.edits = 0

    def path(self, f):
        return "d%d/f%02d.txt" % (f // HISTORY_FILES_PER_FOLDER, f)

    def _write(self, f):
        with open(os.path.join(self.root, self.path(f)), "w") as out:
            out.write("".join(self.text[f]))

    def write(self):
        for d in range(HISTORY_FOLDERS):
            os.makedirs(os.path.join(self.root, "d%d" % d), exist_ok=True)
        for f in range(self.files):
            self._write(f)

    def edit(self):
        k, f = self.edits, self.edits % self.files
        line = (k // self.files) % HISTORY_LINES
        self.text[f][line] = "file %02d line %02d: changed by edit %d\n" % (f, line, k)
        self._write(f)
        self.edits += 1
        return k

    def commits_of(self, rel):
        """Commits that changed `rel` so far: the first commit and its edits."""
        f = next(i for i in range(self.files) if self.path(i) == rel)
        return 1 + sum(1 for k in range(self.edits) if k % self.files == f)


def _commit_loop(ctx, tool, pt, tree, count, commit_all=None):
    """`count` commits of one edit each (`commit_all`, by default the tool's), the edits untimed.
    Returns (Outcome whose wall_s is the sum of the commits' times, the list of
    the commits' times). Each commit is timed from fork to wait4 without GNU
    time, whose extra process would add milliseconds to every commit (more than
    a small commit takes on a loaded machine); so no peak RSS here."""
    out, walls, current = Outcome(), [], [None]
    timeout = ctx.rec.timeout
    killed = threading.Event()

    def kill():  # the whole loop is one step: one deadline for all its commits
        killed.set()
        if current[0]:
            try:
                os.killpg(current[0], signal.SIGKILL)
            except ProcessLookupError:
                pass

    commit_all = commit_all or tool.commit_all
    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        with tempfile.TemporaryFile() as err:
            for _ in range(count):
                k = tree.edit()
                for cmd in commit_all(pt, "edit %d" % k):
                    env = dict(ctx.rec.env)
                    env.update(cmd.env or {})
                    err.seek(0)
                    err.truncate()
                    start = time.perf_counter()
                    p = subprocess.Popen(cmd.argv, cwd=cmd.cwd, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
                    current[0] = p.pid
                    _, status, _ = os.wait4(p.pid, 0)
                    wall = time.perf_counter() - start
                    current[0] = None
                    p.returncode = os.waitstatus_to_exitcode(status)
                    out.wall_s += wall
                    walls.append(wall)
                    out.commands = [" ".join(cmd.argv)]
                    if killed.is_set():
                        out.ok, out.timed_out = False, True
                        out.error = "timeout after %ss at commit %d of %d: %s" % (
                            timeout, len(walls), count, " ".join(cmd.argv))
                        return out, walls
                    if p.returncode != 0:
                        err.seek(0)
                        tail = err.read()[-1500:].decode("utf-8", "replace").strip()
                        out.ok, out.returncode = False, p.returncode
                        out.error = "exit %d at commit %d of %d: %s: %s" % (
                            p.returncode, len(walls), count, " ".join(cmd.argv[:3]), tail)
                        return out, walls
    finally:
        timer.cancel()
    return out, walls


def _commit_stats(walls):
    ms = sorted(w * 1000 for w in walls)
    if not ms:
        return {}

    def pct(q):
        return round(ms[min(len(ms) - 1, int(q * len(ms)))], 3)
    # mean per tenth of the run, in commit order: does a commit slow down as the history grows?
    tenths = [walls[len(walls) * i // 10:len(walls) * (i + 1) // 10] for i in range(10)]
    return dict(commits_done=len(ms), per_commit_ms=round(sum(ms) / len(ms), 3),
                commit_mean_ms_tenths=[round(1000 * sum(t) / len(t), 3) if t else None for t in tenths],
                commit_median_ms=round(statistics.median(ms), 3), commit_p90_ms=pct(0.9),
                commit_p99_ms=pct(0.99), commit_max_ms=round(ms[-1], 3))


def _store_usage(tool, pt):
    """Files and bytes of the object store alone (.dmv/objects, .git/objects)."""
    disk, apparent, files = disk_usage(os.path.join(tool.meta(pt), tool.store))
    return dict(store_files=files, store_bytes_disk=disk, store_bytes_apparent=apparent)


def _log_path_unsupported(ctx, tool, pt):
    """Why `log -- PATH` cannot be measured for this dmv (None when it can):
    its usage line must name paths (`-C <PATH>` is an option, not a filter)."""
    if tool.name != "dmv":
        return None
    out = run_cmds([tool.cmd(pt, "log", "--help", stdout="capture")], ctx.rec.env, 60)
    if not out.ok:
        return "`dmv log --help` failed: %s" % (out.error or "")[-200:]
    usage = next((l for l in out.captured.decode("utf-8", "replace").splitlines() if l.startswith("Usage:")), "")
    if "PATH" not in usage:
        return "`dmv log` has no path filter (%s)" % usage.strip()
    return None


def _log_lines(ctx, tool, pt, cmds, expected):
    """Untimed check of a log step: it lists `expected` commits, one line each."""
    def check(out):
        if not out.ok:
            return {}
        again = run_cmds([Cmd(c.argv, c.cwd, c.env, stdout="capture") for c in cmds], ctx.rec.env, ctx.rec.timeout)
        lines = len(again.captured.splitlines()) if again.ok else None
        if lines != expected:
            out.ok = False
            out.error = "listed %s commits, expected %d%s" % (
                lines, expected, "" if again.ok else ": " + (again.error or "")[-200:])
        return dict(log_commits=lines, log_commits_expected=expected)
    return check


def history(ctx, commits):
    """Long histories of small commits: `commits` commits of one changed line
    each on 100 small text files, then 20 more timed one by one, then log,
    log of one file and the commit that last changed that file."""
    experiment, param = "history", str(commits)
    skips = Skips(ctx, experiment)
    for tool in ctx.tools:
        if tool.commit_all(Point(ctx.workdir), "m") is None:
            continue  # bup, cp: no commit of every modified file, no log
        pt = ctx.point(experiment, commits)
        tree = HistoryTree(pt.work)
        tree.write()
        meta = tool.meta(pt)
        if not _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                S("init", lambda: tool.init(pt), fatal=True),
                S("commit1", lambda: tool.commit(pt, True), fatal=True)]):
            shutil.rmtree(pt.root, ignore_errors=True)
            continue
        print("history %s: {:,} commits".format(commits) % tool.name, flush=True)
        os.sync()
        t = time.perf_counter()
        out, walls = _commit_loop(ctx, tool, pt, tree, commits)
        ctx.rec.record(tool, experiment, param, "commits", out, meta, commits=commits, peak_rss_kib=None,
                       loop_elapsed_s=round(time.perf_counter() - t, 3), **_commit_stats(walls),
                       **_store_usage(tool, pt))
        if not out.ok:
            skips.fail(tool, param, out)
            shutil.rmtree(pt.root, ignore_errors=True)
            continue
        # one small commit: the median of HISTORY_SINGLES commits timed alone; its
        # peak RSS from one more commit run under GNU time like every other step
        os.sync()
        out, walls = _commit_loop(ctx, tool, pt, tree, HISTORY_SINGLES)
        rss = run_cmds(tool.commit_all(pt, "edit %d" % tree.edit()), ctx.rec.env, ctx.rec.timeout) if out.ok else None
        one = Outcome(wall_s=statistics.median(walls) if walls else 0.0,
                      peak_rss_kib=rss.peak_rss_kib if rss else 0, ok=out.ok and rss.ok,
                      timed_out=out.timed_out or bool(rss and rss.timed_out), error=out.error or (rss and rss.error))
        ctx.rec.record(tool, experiment, param, "commit_one", one, meta, commits=commits + HISTORY_SINGLES + 1,
                       commit_samples_ms=[round(w * 1000, 3) for w in walls],
                       rss_commit_wall_s=round(rss.wall_s, 6) if rss else None, **_store_usage(tool, pt))
        if not one.ok:
            skips.fail(tool, param, one)
            shutil.rmtree(pt.root, ignore_errors=True)
            continue
        if tool.commit_all_durable(pt, "m") is not None:
            # the same 20 commits, each syncing to disk what it wrote (git's defaults do not)
            out, walls = _commit_loop(ctx, tool, pt, tree, HISTORY_SINGLES, tool.commit_all_durable)
            durable = Outcome(wall_s=statistics.median(walls) if walls else 0.0, ok=out.ok,
                              timed_out=out.timed_out, error=out.error)
            ctx.rec.record(tool, experiment, param, "commit_one_durable", durable, meta, peak_rss_kib=None,
                           commit_samples_ms=[round(w * 1000, 3) for w in walls])
        total = 1 + tree.edits
        on_path = tree.commits_of(HISTORY_PATH)
        unsupported = _log_path_unsupported(ctx, tool, pt)
        for step, cmds, expected in (("log", tool.log(pt), total),
                                     ("log_path", tool.log(pt, HISTORY_PATH), on_path),
                                     ("log_path_last", tool.log(pt, HISTORY_PATH, last=True), 1)):
            if step != "log" and unsupported:
                ctx.rec.note(tool.name, experiment, param, step, "unsupported", unsupported)
                continue
            os.sync()
            ctx.rec.step(tool, experiment, param, step, cmds, meta,
                         after=_log_lines(ctx, tool, pt, cmds, expected) if cmds else None)
        shutil.rmtree(pt.root, ignore_errors=True)


SYNC_TOKEN = "bench-write-token"


def sync(ctx, sizes, counts, settle=0):
    """Clone and push over loopback: one big file (`sizes`) and many 1 KiB files
    (`counts`), over ssh (a real sshd on 127.0.0.1) and over HTTP (`dmv serve`).

    Per tool and transport: push the committed source into a fresh empty
    repository, then clone that repository into a fresh directory (which
    includes the checkout) and compare the clone's files with the source.
    Recorded as experiments `sync-bigfile` (parameter: bytes) and `sync-files`
    (parameter: number of files).

    With many files, nothing is deleted until the point is done, unless the
    disk runs short before a tool (then the copies of the tools before it go,
    and the suite waits), and the suite waits `settle` seconds at the start of
    the point and after each tool's commit (git's auto-gc deletes its loose
    objects): see measure.ext4_without_journal."""
    tools = [t for t in ctx.tools if t.sync]
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    points = [("sync-bigfile", n) for n in sizes] + [("sync-files", n) for n in counts]
    root = os.path.join(ctx.workdir, "sync-sshd")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    try:
        with servers.Sshd(root, ctx.rec.env, dmv.path if dmv else None) as sshd:
            print("sync: sshd listening on 127.0.0.1:%d" % sshd.port, flush=True)
            skips = {e: Skips(ctx, e) for e in ("sync-bigfile", "sync-files")}
            for experiment, n in points:
                _sync_point(ctx, sshd, dmv, tools, skips[experiment], experiment, n, settle)
    except servers.ServerError as e:
        print("sync: %s" % e, flush=True)
        for experiment, n in points:
            for tool in tools:
                ctx.rec.note(tool.name, experiment, str(n), "all", "fail", str(e))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _write_point_data(experiment, n, many, work):
    """The data of a point in `work`: n files of 1 KiB when `many`, else
    one file of n bytes (`file.bin`). Returns its tree hash."""
    if many:
        print("%s %d: writing %d files" % (experiment, n, n), flush=True)
        datagen.write_tree(work, n)
    else:
        print("%s %s: writing data" % (experiment, human_bytes(n)), flush=True)
        datagen.write_random_file(os.path.join(work, "file.bin"), n)
    return datagen.tree_hash(work)


def _settle(seconds, why):
    if seconds > 0:
        print("  waiting %.0f s: %s" % (seconds, why), flush=True)
        os.sync()
        time.sleep(seconds)


# Disk one tool's copies of a file of the many-files point may take: its
# repository, the pushed one, and clones over ssh and HTTP with their
# checkouts, at most a 4 KiB block each, with a margin.
ROOM_PER_SYNCED_FILE = 24 << 10


def _sync_point(ctx, sshd, dmv, tools, skips, experiment, n, settle):
    param = str(n)
    many = experiment == "sync-files"
    settle = settle if many else 0
    # with many files, keep every copy until the end: deleting them would slow the next step's creates
    later = [] if many else None
    if experiment == "sync-bigfile":
        need = 6 * n + GiB  # data, source repository, pushed repository, clone (repository + checkout)
        if not _enough_disk(ctx, tools, skips, experiment, param, need):
            return
    pt = ctx.point(experiment, n)
    try:
        source = _write_point_data(experiment, n, experiment != "sync-bigfile", pt.work)
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        for tool in tools:
            if not skips.active(tool, param):
                continue
            if later and free_bytes(ctx.workdir) < n * ROOM_PER_SYNCED_FILE:
                print("  deleting the copies of the tools before (%s free)" % human_bytes(free_bytes(ctx.workdir)), flush=True)
                _remove(later, None)
                later.clear()
                _settle(settle, "files deleted before this tool slow down creating files (ext4 without a journal)")
            if tool.name != "cp":  # cp (tar) sends the work tree itself
                if not _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                        S("init", lambda: tool.init(pt), fatal=True),
                        Prep(os.sync),
                        S("commit", lambda: tool.commit(pt, True), fatal=True)]):
                    shutil.rmtree(tool.meta(pt), ignore_errors=True)
                    continue
                _settle(settle, "after %s's commit (git's auto-gc deletes its loose objects)" % tool.name)
            if tool.name == "cp":
                out = _sync_copy_local(ctx, tool, pt, experiment, param, source, later)
                if out.timed_out:
                    skips.fail(tool, param, out)
                    continue
                if not many:
                    _sync_disk_floor(ctx, tool, pt, experiment, param, source)
                else:
                    _sync_connect_and_copy(ctx, sshd, tool, pt, experiment, param, source, later)
            for kind in tool.sync:
                if not _sync_transport(ctx, sshd, dmv, tool, pt, skips, experiment, param, kind, source, later):
                    break
            if later is None:
                shutil.rmtree(tool.meta(pt), ignore_errors=True)
            else:  # the next tool's work tree must not hold this one's repository
                later.append(os.path.join(pt.root, "meta-%s" % tool.name))
                if os.path.exists(tool.meta(pt)) and tool.meta(pt).startswith(pt.work + os.sep):
                    os.rename(tool.meta(pt), later[-1])
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _enough_disk(ctx, tools, skips, experiment, param, need):
    """Whether the workdir has `need` bytes free; if not, records every active tool as skipped."""
    if free_bytes(ctx.workdir) >= need:
        return True
    for tool in tools:
        if skips.active(tool, param):
            ctx.rec.note(tool.name, experiment, param, "all", "skipped",
                         "not enough free disk: need %s" % human_bytes(need))
    return False


def _verify_clone(dest, source, extra):
    """Untimed: the clone's files against the source's (tree_hash); fails the step if they differ."""
    def check(out):
        extra_now = dict(extra() if callable(extra) else extra)
        if out.ok:
            got = datagen.tree_hash(dest)
            extra_now["verified"] = got[0] == source[0]
            if not extra_now["verified"]:
                out.ok = False
                out.error = "the clone's files differ from the source (%d files, %d bytes; source: %d, %d)" % (
                    got[1], got[2], source[1], source[2])
        return extra_now
    return check


def _remove(paths, later):
    """Deletes now, or at the end of the point when `later` is a list."""
    if later is not None:
        later.extend(paths)
        return
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _sync_copy_local(ctx, tool, pt, experiment, param, source, later):
    """The disk's floor: `cp -r` of the work tree (no network, no repository)."""
    dest = os.path.join(pt.root, "copy-local")
    try:
        os.sync()
        return ctx.rec.step(tool, experiment, param, "copy_local", tool.copy_local(pt, dest), dest, after=_verify_clone(
            dest, source, dict(data_bytes=source[2], data_files=source[1], transport="local")))
    finally:
        _remove([dest], later)


# run as a child (`python3 -c`): the disk's part of a clone of one big file. Reads SOURCE past the page
# cache and writes its bytes to every DEST past the page cache, a reader and one writer per DEST running
# at once on 8 MiB blocks (a queue of 4 each), then syncs every DEST.
DISK_FLOOR_SCRIPT = r"""
import mmap, os, queue, sys, threading
BLOCK = 8 << 20
source, dests = sys.argv[1], sys.argv[2:]
queues = [queue.Queue(4) for _ in dests]
def write(path, q):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o644)
    size = 0
    while True:
        item = q.get()
        if item is None:
            break
        block, n = item
        os.writev(fd, [memoryview(block)[: (n + 4095) // 4096 * 4096]])
        size += n
    os.ftruncate(fd, size)
    os.fsync(fd)
    os.close(fd)
writers = [threading.Thread(target=write, args=(d, q)) for d, q in zip(dests, queues)]
for w in writers:
    w.start()
fd = os.open(source, os.O_RDONLY | os.O_DIRECT)
while True:
    block = mmap.mmap(-1, BLOCK)
    n = os.readv(fd, [block])
    if n <= 0:
        break
    for q in queues:
        q.put((block, n))
for q in queues:
    q.put(None)
for w in writers:
    w.join()
"""


def _sync_disk_floor(ctx, tool, pt, experiment, param, source):
    """The disk's floor of a clone of one big file (no network, no repository):
    the hub's copy, written past the page cache as a hub writes its packs
    (untimed), read past the cache and written twice (repository and
    checkout, `clone_floor`) or once (`clone_floor_once`) past the cache."""
    hub = os.path.join(pt.root, "floor-hub.bin")
    dests = [os.path.join(pt.root, "floor-%d.bin" % i) for i in (1, 2)]
    data = dict(data_bytes=source[2], data_files=source[1], transport="local")
    try:
        subprocess.run(["dd", "if=" + os.path.join(pt.work, "file.bin"), "of=" + hub, "bs=8M", "oflag=direct",
                        "status=none"], check=True)
        want = datagen.file_hash(os.path.join(pt.work, "file.bin"))  # not the hub's: it stays out of the cache

        def verify(outs):
            def check(out):
                if out.ok and any(datagen.file_hash(d) != want for d in outs):
                    out.ok, out.error = False, "the floor's copy differs from the source"
                return dict(data, copies=len(outs))
            return check

        for step, outs in (("clone_floor", dests), ("clone_floor_once", dests[:1])):
            for d in dests:
                if os.path.exists(d):
                    os.unlink(d)
            os.sync()
            ctx.rec.step(tool, experiment, param, step,
                         [Cmd([sys.executable, "-c", DISK_FLOOR_SCRIPT, hub] + outs, cwd=pt.root)],
                         None, after=verify(outs))
    except (OSError, subprocess.CalledProcessError) as e:
        ctx.rec.note(tool.name, experiment, param, "clone_floor", "fail", str(e))
    finally:
        for path in [hub] + dests:
            if os.path.exists(path):
                os.unlink(path)


# run by bash: a connection to the sshd (`"$@" true`), then the work tree copied from the page cache by one
# `cp -r` per core, each taking whole folders.
CONNECT_AND_COPY_SCRIPT = r"""
set -eo pipefail
"$@" true
mkdir "$DEST"
cd "$SRC"
ls -A | grep -v '^[.]' | xargs -d '\n' -P "$JOBS" -n "$PER" cp -r -t "$DEST"
"""


def _sync_connect_and_copy(ctx, sshd, tool, pt, experiment, param, source, later):
    """For reference beside a clone of many small files over ssh
    (`connect_and_copy`): a connection to the same sshd, then the files
    copied with every core (`cp -r` of whole folders, one per core, from
    the page cache). Not a floor: `cp` reads each file and looks at it
    before it writes, where a clone writes from its packs."""
    dest = os.path.join(pt.root, "copy-cores")
    jobs = os.cpu_count() or 1
    folders = [n for n in os.listdir(pt.work) if not n.startswith(".")]
    env = dict(SRC=pt.work, DEST=dest, JOBS=str(jobs), PER=str(max(1, len(folders) // (4 * jobs))))
    try:
        os.sync()
        ctx.rec.step(tool, experiment, param, "connect_and_copy",
                     [Cmd(["bash", "-c", CONNECT_AND_COPY_SCRIPT, "copy"] + sshd.login(), cwd=pt.root, env=env)],
                     dest, after=_verify_clone(dest, source, dict(
                         data_bytes=source[2], data_files=source[1], transport="ssh", cores=jobs)))
    finally:
        _remove([dest], later)


def _sync_transport(ctx, sshd, dmv, tool, pt, skips, experiment, param, kind, source, later):
    """init_remote (untimed), push_KIND, clone_KIND; False after a timeout."""
    remote_path = os.path.join(pt.root, "remote-%s-%s" % (tool.name, kind))
    dest = os.path.join(pt.root, "clone-%s-%s" % (tool.name, kind))
    data = dict(data_bytes=source[2], data_files=source[1], transport=kind)

    def server():
        if kind == "ssh":
            sshd.reset_rss()
            return contextlib.nullcontext(sshd)
        return servers.DmvHttp(dmv.path, os.path.join(pt.root, "http-%s" % tool.name), ctx.rec.env,
                               {"r": remote_path}, SYNC_TOKEN)

    def remote(srv):
        if kind == "ssh":
            return Remote(kind, srv.url(remote_path), {
                "DMV_SSH": srv.ssh_command(), "DMV_REMOTE_DMV": srv.remote_dmv or "dmv",
                "GIT_SSH_COMMAND": srv.ssh_command()}, remote_path, srv.login())
        return Remote(kind, srv.url("r"), {"DMV_TOKEN": SYNC_TOKEN}, remote_path)

    def server_rss(srv):
        return lambda out: dict(data, server_peak_rss_kib=srv.server_rss_kib())

    def verify(srv):
        return _verify_clone(dest, source, lambda: dict(data, server_peak_rss_kib=srv.server_rss_kib()))

    try:
        init = tool.init_remote(pt, remote_path)
        if init:
            out = ctx.rec.step(tool, experiment, param, "init_remote_" + kind, init, remote_path)
            if not out.ok:
                return not out.timed_out
        try:
            os.sync()  # no step pays for writing back what the one before it wrote
            with server() as srv:
                out = ctx.rec.step(tool, experiment, param, "push_" + kind, tool.push(pt, remote(srv)),
                                   remote_path, after=server_rss(srv))
            if out.ok:
                os.sync()
                with server() as srv:
                    out = ctx.rec.step(tool, experiment, param, "clone_" + kind, tool.clone(pt, remote(srv), dest),
                                       tool.clone_meta(dest), after=verify(srv))
        except servers.ServerError as e:
            ctx.rec.note(tool.name, experiment, param, "all", "fail", str(e))
            return True
        if out.timed_out:
            skips.fail(tool, param, out)
            return False
        return True
    finally:
        _remove([remote_path, dest], later)


TRACE = re.compile(r"trace: bytes-sent (\d+) bytes-received (\d+)")


def hub_replicas(ctx, files, replicas, settle=0):
    """A hub that many replicas cloned: what every clone, fetch and push of
    it costs once its location log names them all (DMV's; git keeps none).

    Per tool: `files` files of 1 KiB (1,000 a folder) committed, cloned into
    a bare hub, which `replicas` full replicas clone (untimed). Replica 0
    commits one new file and pushes it (`push_one`); replica 1 pulls it
    (`pull_one`), fetches again with nothing new (`fetch_nothing`) and
    pushes with nothing to send (`push_nothing`); then a fresh clone of the
    hub (`clone`). dmv through local paths (`dmv serve --stdio` through a
    pipe) with DMV_TRACE's bytes sent and received; git through file://
    URLs (its pack protocol, not a local copy). Recorded as experiment
    `hub-replicas` (parameter: files; `replicas` in each record). Nothing
    is deleted until both tools are done, and the suite waits `settle`
    seconds before each tool's steps (see measure.ext4_without_journal)."""
    experiment, param = "hub-replicas", str(files)
    tools = [t for t in ctx.tools if t.name in ("dmv", "git")]
    skips = Skips(ctx, experiment)
    pt = ctx.point(experiment, files)
    try:
        print("hub-replicas: writing %d files" % files, flush=True)
        datagen.write_tree(pt.work, files)
        for tool in tools:
            if not skips.active(tool, param):
                continue
            _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
            _hub_replicas_tool(ctx, skips, tool, pt, experiment, param, replicas)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _hub_replicas_tool(ctx, skips, tool, pt, experiment, param, replicas):
    binary = tool.path or tool.binary
    root = os.path.join(pt.root, tool.name)
    hub = os.path.join(root, "hub")
    url = hub if tool.name == "dmv" else "file://" + hub
    trace = {"DMV_TRACE": "1"} if tool.name == "dmv" else {}

    def cmd(where, *args):
        return Cmd([binary] + list(args), cwd=where, env=trace)

    def setup(*cmds):
        out = run_cmds(list(cmds), ctx.rec.env, ctx.rec.timeout)
        if not out.ok:
            ctx.rec.note(tool.name, experiment, param, "all", "fail", "setup: %s" % (out.error or out.stderr_tail))
        return out.ok

    try:
        os.makedirs(root)
        if not _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                S("init", lambda: tool.init(pt), fatal=True),
                S("commit", lambda: tool.commit(pt, True), fatal=True)]):
            return
        source = pt.work if tool.name == "dmv" else "file://" + pt.work
        print("hub-replicas: %s, a hub and %d clones of it" % (tool.name, replicas), flush=True)
        if not setup(cmd(root, "clone", "-q", "--bare", source, hub)):
            return
        for i in range(replicas):
            if not setup(cmd(root, "clone", "-q", url, "r%d" % i)):
                return
        r0, r1 = os.path.join(root, "r0"), os.path.join(root, "r1")
        with open(os.path.join(r0, "one-more.txt"), "w") as f:
            f.write("one more file\n")
        if not setup(cmd(r0, "add", "one-more.txt"), cmd(r0, "commit", "-q", "-m", "one more")):
            return
        extra = dict(replicas=replicas, data_files=int(param))
        for step, where, args in (("push_one", r0, ["push", "-q"]), ("pull_one", r1, ["pull", "-q"]),
                                  ("fetch_nothing", r1, ["fetch", "-q"]), ("push_nothing", r1, ["push", "-q"]),
                                  ("clone", root, ["clone", "-q", url, "fresh"])):
            os.sync()
            out = ctx.rec.step(tool, experiment, param, step, [cmd(where, *args)], root,
                               after=lambda out: dict(extra, **_trace(out)))
            if out.timed_out:
                skips.fail(tool, param, out)
                return
    finally:
        # kept until the point is done (deleting many files slows creating them); the next tool commits the work tree
        if os.path.exists(tool.meta(pt)):
            os.rename(tool.meta(pt), os.path.join(root, "source-meta"))



def s3(ctx, tools, minio_bin, sizes, counts, settle=0, minio_missing=None):
    """Push to and clone from object storage: a real MinIO on 127.0.0.1, one
    big file (`sizes`) and many 1 KiB files (`counts`).

    Per tool, each into a fresh bucket of the same MinIO (one data directory
    per point, on the work disk): dmv commits, pushes to s3://BUCKET/dmv and
    clones from it; restic inits and backs up to s3:.../BUCKET/restic and
    restores the snapshot; rclone uploads every file as one object and
    downloads them all (the raw floor). Every "clone" is compared with the
    source (untimed). MinIO is restarted (untimed) before each push and clone
    so that its VmHWM is that step's peak. Recorded as experiments
    `s3-bigfile` (parameter: bytes) and `s3-files` (parameter: files)."""
    tools = [t for t in tools if t.s3]
    points = [("s3-bigfile", n) for n in sizes] + [("s3-files", n) for n in counts]
    if not minio_bin:
        why = "no MinIO server: %s" % (minio_missing or "minio not found")
        print("s3: %s" % why, flush=True)
        for experiment, n in points:
            for tool in tools:
                ctx.rec.note(tool.name, experiment, str(n), "all", "fail", why)
        return
    skips = {e: Skips(ctx, e) for e in ("s3-bigfile", "s3-files")}
    for experiment, n in points:
        _s3_point(ctx, minio_bin, tools, skips[experiment], experiment, n, settle)


def _s3_point(ctx, minio_bin, tools, skips, experiment, n, settle):
    param = str(n)
    many = experiment == "s3-files"
    settle = settle if many else 0
    if not many:
        # data, dmv's repository, three buckets, one clone at a time (dmv's: repository + checkout)
        need = 7 * n + GiB
        if not _enough_disk(ctx, tools, skips, experiment, param, need):
            return
    pt = ctx.point(experiment, n)
    try:
        source = _write_point_data(experiment, n, many, pt.work)
        try:
            with servers.MinIO(minio_bin, pt.root, os.path.join(pt.root, "minio-data"), ctx.rec.env) as minio:
                print("%s: MinIO listening on %s, data in %s" % (experiment, minio.endpoint, minio.data), flush=True)
                _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
                for tool in tools:
                    if skips.active(tool, param):
                        _s3_tool(ctx, minio, tool, pt, skips, experiment, param, source, settle, many)
        except servers.ServerError as e:
            print("%s: %s" % (experiment, e), flush=True)
            for tool in tools:
                ctx.rec.note(tool.name, experiment, param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _s3_tool(ctx, minio, tool, pt, skips, experiment, param, source, settle, many):
    """[init, commit,] setup, push, clone of one tool into its own fresh bucket."""
    b = Bucket(minio.endpoint, "%s-%s" % (tool.name, experiment), tool.name,
               servers.MINIO_USER, servers.MINIO_PASSWORD, servers.MINIO_REGION)
    data = dict(data_bytes=source[2], data_files=source[1], bucket=b.bucket, prefix=b.prefix,
                endpoint=minio.endpoint)
    dest = os.path.join(pt.root, "clone-%s" % tool.name)
    try:
        if tool.name == "dmv":  # restic and rclone read the work tree itself
            if not _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                    S("init", lambda: tool.init(pt), fatal=True),
                    Prep(os.sync),
                    S("commit", lambda: tool.commit(pt, True), fatal=True)]):
                return
            _settle(settle, "after dmv's commit")
        try:
            minio.make_bucket(b.bucket)
        except servers.ServerError as e:
            ctx.rec.note(tool.name, experiment, param, "all", "fail", str(e))
            return
        bucket_dir = os.path.join(minio.data, b.bucket)
        setup = tool.s3_setup(pt, b)
        if setup:
            out = ctx.rec.step(tool, experiment, param, tool.s3_setup_step, setup, None,
                               after=lambda out: dict(data))
            if not out.ok:
                if out.timed_out:
                    skips.fail(tool, param, out)
                return

        def after_push(out):
            extra = dict(data, server_peak_rss_kib=minio.server_rss_kib())
            objects, apparent, disk, files = minio.usage(b.bucket)
            extra.update(bucket_objects=objects, bucket_bytes_apparent=apparent, bucket_bytes_disk=disk,
                         bucket_files=files)
            extra.update(_trace(out))
            return extra

        try:
            os.sync()  # no step pays for writing back what the one before it wrote
            minio.restart()  # a fresh server process: its VmHWM is this step's
            out = ctx.rec.step(tool, experiment, param, "push", tool.s3_push(pt, b), bucket_dir, after=after_push)
            if out.ok:
                os.sync()
                minio.restart()
        except servers.ServerError as e:
            ctx.rec.note(tool.name, experiment, param, "all", "fail", str(e))
            return
        if out.ok:
            verify = _verify_clone(dest, source, data)

            def after_clone(out):
                rss = minio.server_rss_kib()  # before the (slow) verification
                extra = verify(out)
                extra.update(server_peak_rss_kib=rss, **_trace(out))
                return extra
            out = ctx.rec.step(tool, experiment, param, "clone", tool.s3_clone(pt, b, dest), tool.clone_meta(dest),
                               after=after_clone)
        if out.timed_out:
            skips.fail(tool, param, out)
    finally:
        # the next tool reads the work tree: dmv's repository must leave it
        meta = os.path.join(pt.work, ".dmv")
        if os.path.isdir(meta):
            os.rename(meta, os.path.join(pt.root, "meta-%s" % tool.name))
        if not many:  # with many files, delete nothing until the point is done (see sync)
            for path in (dest, os.path.join(pt.root, "meta-%s" % tool.name)):
                shutil.rmtree(path, ignore_errors=True)


def _trace(out):
    """dmv's DMV_TRACE=1 line: bytes sent and received over the network (the last one printed)."""
    found = TRACE.findall(getattr(out, "stderr_tail", "") or "")
    if not found:
        return {}
    sent, received = found[-1]
    return dict(bytes_sent=int(sent), bytes_received=int(received))


# ---------------------------------------------------------------- encrypted (issue 68)

# dmv to a plain bucket, dmv --encrypt to a bucket, dmv --encrypt to a `dmv serve` that keeps it sealed, restic backup
ENCRYPTED_VARIANTS = ("plain", "encrypted", "sealed", "restic")
SEALED_TOKEN = "bench-writer"
ENCRYPTED_FILE_BYTES = 10 << 10  # the many-files point's files: 10 KiB of random bytes each, 1,000 a folder


def encrypted(ctx, restic, minio_bin, size, files, tries, settle=0, minio_missing=None, restic_missing=None):
    """Issue 68: what encrypting a bucket remote costs. On one MinIO on 127.0.0.1 per point, `tries` rounds;
    in each, in an order rotated by one a round, every variant into a fresh bucket of its own: `plain`,
    `dmv remote add` then `dmv push` and `dmv clone`; `encrypted`, the same with `remote add --encrypt` (the
    first push makes the encrypted repository; the device key, in this run's own XDG_CONFIG_HOME, is made
    untimed before); `sealed`, the same as `encrypted` to a fresh repository of one `dmv serve` on
    127.0.0.1 that keeps it sealed (`{ sealed = DIR }`: the client reads and writes the objects through
    it; its CPU seconds and peak RSS recorded as MinIO's are for the others); `restic`, `restic init` (untimed) then `restic backup .` of the work tree and `restic
    restore latest`, each with a fresh cache. Each timed command under GNU time for its CPU seconds, MinIO's
    CPU seconds during the step from /proc (restarted, untimed, before every push and clone). Every clone and
    restore compared with the source (untimed). Recorded as `encrypted-files` (parameter: files of
    ENCRYPTED_FILE_BYTES) and `encrypted-bigfile` (parameter: bytes), steps `push_VARIANT_N` and
    `clone_VARIANT_N`: the many-files point first, so that its clones create files before this experiment
    has deleted any (ext4 without a journal: see measure.ext4_without_journal)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    points = [("encrypted-files", files), ("encrypted-bigfile", size)]
    if not minio_bin:
        why = "no MinIO server: %s" % (minio_missing or "minio not found")
        print("encrypted: %s" % why, flush=True)
        for experiment, n in points:
            ctx.rec.note("dmv", experiment, str(n), "all", "fail", why)
        return
    xdg = os.path.join(ctx.workdir, "encrypted-xdg")  # this run's own device key, nothing in the real home
    os.makedirs(xdg, exist_ok=True)
    for experiment, n in points:
        _encrypted_point(ctx, dmv, restic, restic_missing, minio_bin, experiment, n, tries, settle, xdg)


def _with_env(cmds, env):
    for c in cmds:
        c.env = dict(c.env or {}, **env)
    return cmds


def _with_cpu(cmds, path):
    """Each command under GNU time, appending `user system` seconds to `path` (see _cpu_seconds)."""
    import measure
    if measure.TIME_BIN:
        for c in cmds:
            c.argv = [measure.TIME_BIN, "-a", "-o", path, "-f", "%U %S", "--"] + c.argv
    return cmds


def _proc_cpu_s(pid):
    """User + system CPU seconds of a live process so far (its threads included), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, TypeError):
        return None


def _encrypted_point(ctx, dmv, restic, restic_missing, minio_bin, experiment, n, tries, settle, xdg):
    rec = ctx.rec
    param = str(n)
    many = experiment == "encrypted-files"
    if not many:
        # data, dmv's repository, a bucket per variant and try, one clone at a time
        need = (3 + 3 * tries) * n + GiB
        if free_bytes(ctx.workdir) < need:
            rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
            return
    pt = ctx.point(experiment, n)
    xenv = {"XDG_CONFIG_HOME": xdg}
    try:
        if many:
            print("%s %d: writing %d files of %s" % (experiment, n, n, human_bytes(ENCRYPTED_FILE_BYTES)), flush=True)
            datagen.write_tree(pt.work, n, size=ENCRYPTED_FILE_BYTES)
        else:
            print("%s %s: writing data" % (experiment, human_bytes(n)), flush=True)
            datagen.write_random_file(os.path.join(pt.work, "file.bin"), n)
        source = datagen.tree_hash(pt.work)
        data = dict(data_bytes=source[2], data_files=source[1], file_bytes=ENCRYPTED_FILE_BYTES if many else n)
        # dmv's repository, committed once (timed, for reference); the device key made before anything is timed
        if not _run_tool_steps(ctx, Skips(ctx, experiment), dmv, pt, experiment, param, [
                S("init", lambda: _with_env(dmv.init(pt), xenv), fatal=True),
                Prep(os.sync),
                S("commit", lambda: _with_env(dmv.commit(pt, True), xenv), fatal=True)]):
            return
        if not _run_untimed(ctx, [dmv.cmd(pt, "keys", "device", env=xenv, stdout="capture")], dmv, experiment,
                            param, "device_key"):
            return
        variants = [v for v in ENCRYPTED_VARIANTS if v != "restic" or restic]
        if not restic:
            rec.note("restic", experiment, param, "all", "skipped", restic_missing or "restic is not among --tools")
        if many:
            _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        # the sealed variant's server: one repository (a folder of its own) per round, on a fixed port
        config = os.path.join(pt.root, "sealed-serve.toml")
        with open(config, "w") as f:
            f.write("[repos]\n" + "".join('sealed%d = { sealed = "sealed-%d" }\n' % (i, i)
                                          for i in range(1, tries + 1)) +
                    '[tokens]\n"%s" = { access = "write", user = "bench" }\n' % SEALED_TOKEN)
        os.chmod(config, 0o600)
        try:
            with servers.MinIO(minio_bin, pt.root, os.path.join(pt.root, "minio-data"), rec.env) as minio, \
                    servers.DmvServe(dmv.path or dmv.binary, pt.root, rec.env, config, port=servers.free_port()) as hub:
                print("%s: MinIO listening on %s, data in %s" % (experiment, minio.endpoint, minio.data), flush=True)
                stopped = {}
                for i in range(1, tries + 1):
                    k = (i - 1) % len(variants)
                    for place, v in enumerate(variants[k:] + variants[:k], 1):
                        tool = restic if v == "restic" else dmv
                        if v in stopped:
                            for op in ("push", "clone"):
                                rec.note(tool.name, experiment, param, "%s_%s_%d" % (op, v, i), "skipped", stopped[v])
                            continue
                        out = _encrypted_try(ctx, minio, hub, tool, pt, experiment, param, v, i, place, source,
                                             data, xenv, many)
                        if out is not None and out.timed_out:
                            stopped[v] = "timed out in round %d: %s" % (i, (out.error or "")[-200:])
        except servers.ServerError as e:
            print("%s: %s" % (experiment, e), flush=True)
            rec.note("dmv", experiment, param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _encrypted_try(ctx, minio, hub, tool, pt, experiment, param, v, i, place, source, data, xenv, many):
    """One variant's round: a fresh bucket (or, sealed, a fresh repository of `hub`), set-up (untimed,
    recorded), push, clone (each timed, with CPU seconds); returns the last step's Outcome (None when the
    set-up could not start)."""
    rec = ctx.rec
    b = Bucket(minio.endpoint, "%s-%s-%d" % (v, "files" if many else "big", i), "restic" if v == "restic" else "dmv",
               servers.MINIO_USER, servers.MINIO_PASSWORD, servers.MINIO_REGION)
    dest = os.path.join(pt.root, "clone-%s-%d" % (v, i))
    fields = dict(data, variant=v, try_index=i, place=place, bucket=b.bucket, prefix=b.prefix,
                  endpoint=minio.endpoint)
    meta, parked = os.path.join(pt.work, ".dmv"), os.path.join(pt.root, "meta-dmv")
    if v == "restic":
        def env(step):  # a fresh, empty cache per step and round, as on a machine that never saw the repository
            return dict(b.env, RESTIC_REPOSITORY="s3:%s/%s/%s" % (b.endpoint, b.bucket, b.prefix),
                        RESTIC_PASSWORD=tool.PASSWORD,
                        RESTIC_CACHE_DIR=os.path.join(pt.root, "restic-cache-%s-%d" % (step, i)))
        setup = [tool.cmd(pt, "init", env=env("init"))]
        push = [tool.cmd(pt, "backup", ".", env=env("push"))]
        clone = [tool.cmd(pt, "restore", "latest", "--target", dest, cwd=pt.root, env=env("clone"))]
    elif v == "sealed":
        name = "%s%d" % (v, i)
        url, denv = hub.url(name), dict(xenv, DMV_TOKEN=SEALED_TOKEN)
        fields.update(bucket=None, prefix=None, endpoint=url)
        setup = [tool.cmd(pt, "remote", "add", name, url, "--encrypt", env=denv)]
        push = [tool.cmd(pt, "push", name, env=dict(denv, DMV_TRACE="1"))]
        clone = [tool.cmd(pt, "clone", url, dest, cwd=pt.root, env=dict(denv, DMV_TRACE="1"))]
    else:
        name = "%s%d" % (v, i)
        denv = dict(b.env, **xenv)
        setup = [tool.cmd(pt, "remote", "add", name, b.url, "--endpoint", b.endpoint,
                          *(["--encrypt"] if v == "encrypted" else []), env=denv)]
        push = [tool.cmd(pt, "push", name, env=dict(denv, DMV_TRACE="1"))]
        clone = [tool.cmd(pt, "clone", b.url, dest, "--endpoint", b.endpoint, cwd=pt.root,
                          env=dict(denv, DMV_TRACE="1"))]
    cpu = os.path.join(pt.root, "cpu.txt")
    state = {}

    # the server of this variant's storage: MinIO, or for the sealed hub the `dmv serve` keeping it
    server = hub if v == "sealed" else minio
    stored = os.path.join(pt.root, "sealed-%d" % i) if v == "sealed" else os.path.join(minio.data, b.bucket)

    def timed(cmds):
        if os.path.exists(cpu):
            os.remove(cpu)
        os.sync()  # untimed: no step pays for writing back what the one before it wrote
        server.restart()  # a fresh server: its VmHWM and CPU seconds are this step's
        state["server_cpu"] = _proc_cpu_s(server.proc.pid)
        return _with_cpu(cmds, cpu)

    def measured(out):
        user, system = _cpu_seconds(cpu)
        after = _proc_cpu_s(server.proc.pid) if server.proc else None
        before = state.get("server_cpu")
        rss = server.peak_rss_kib() if v == "sealed" else minio.server_rss_kib()
        return dict(cpu_user_s=user, cpu_sys_s=system, cpu_s=round(user + system, 3) if user is not None else None,
                    minio_cpu_s=round(after - before, 3) if after is not None and before is not None else None,
                    server_peak_rss_kib=rss, **_trace(out))

    def after_push(out):
        extra = dict(fields, **measured(out))
        if v == "sealed":  # the server's folder: files, as a bucket's objects
            sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(stored) for f in fs
                     if not f.startswith(".") and "/." not in d[len(stored):]]
            objects, apparent, disk, files = len(sizes), sum(sizes), None, len(sizes)
        else:
            objects, apparent, disk, files = minio.usage(b.bucket)
        extra.update(bucket_objects=objects, bucket_bytes_apparent=apparent, bucket_bytes_disk=disk,
                     bucket_files=files)
        return extra

    def after_clone(out):
        extra = measured(out)  # before the (slow) verification
        extra.update(_verify_clone(dest, source, fields)(out))
        return extra

    try:
        if v != "sealed":
            minio.make_bucket(b.bucket)
        if v == "restic":  # restic reads the work tree itself: dmv's repository must leave it meanwhile
            os.rename(meta, parked)
        out = rec.step(tool, experiment, param, "setup_%s_%d" % (v, i), setup, None, after=lambda out: dict(fields))
        if not out.ok:
            return out
        out = rec.step(tool, experiment, param, "push_%s_%d" % (v, i), timed(push), stored, after=after_push)
        if out.ok:
            out = rec.step(tool, experiment, param, "clone_%s_%d" % (v, i), timed(clone), tool.clone_meta(dest),
                           after=after_clone)
        return out
    except (servers.ServerError, OSError) as e:
        rec.note(tool.name, experiment, param, "push_%s_%d" % (v, i), "fail", str(e))
        return None
    finally:
        if os.path.isdir(parked):
            os.rename(parked, meta)
        if not many:  # with many files, delete nothing until the point is done (see sync)
            shutil.rmtree(dest, ignore_errors=True)

PARTIAL_DATASETS = ("partial-bigfile", "partial-files")


def partial(ctx, sizes, counts, settle=0):
    """Partial replicas over loopback: one big file (`sizes`) and many 1 KiB
    files (`counts`), the same data sets as the sync experiment.

    Per point, untimed: dmv and git commit the work tree and push it to a bare
    repository over ssh (a real sshd on 127.0.0.1). Then, timed: a full `dmv
    clone`; `dmv clone --slice meta` (commits and trees, no file data) and
    git's blobless partial clone (`git clone --filter=blob:none
    --no-checkout`); with many files, git's blobless sparse clone (`git clone
    --filter=blob:none --sparse`, cone mode: the top-level files only, here
    none) right after the meta clone, then `status` in both (`dmv status` in
    the meta clone, `git status` in the sparse clone: a first run each, then
    PARTIAL_STATUS_TRIES tries in pairs back to back; see _partial_status);
    `dmv ls --absent` in the meta clone; `dmv get FILE` of
    one file from the meta clone and git's on-demand fetch of the same blob
    (`git checkout HEAD -- FILE` in the blobless clone), against copying the
    file's bytes over the same transport (`ssh cat FILE`, into a file and into
    /dev/null); `dmv whereis` of every file in the meta clone, after the get
    (whereis keeps the location log it learned: before the get it would swell
    the store measured after it), against `git ls-tree -r HEAD` in the
    blobless clone and (many files, up to ANNEX_MAX_FILES, git-annex
    installed) `git annex whereis` in a clone of an annex of the same files;
    and over HTTP (`dmv serve`) the meta clone and get against
    `curl` from a plain static server (`python3 -m http.server`), and with
    many files `dmv get .` of every file in a second meta clone against a
    full clone through the same server (see _partial_get_all). git is
    measured over ssh only (the harness has no git smart-HTTP server).
    Recorded as experiments `partial-bigfile` (parameter: bytes; the file got
    is the whole data) and `partial-files` (parameter: number of 1 KiB files;
    one file is got).

    With many files, nothing is deleted until the point is done and the suite
    waits `settle` seconds after the preparation (see sync)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    if dmv is None:
        return
    points = [("partial-bigfile", n) for n in sizes] + [("partial-files", n) for n in counts]
    root = os.path.join(ctx.workdir, "partial-sshd")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    try:
        with servers.Sshd(root, ctx.rec.env, dmv.path) as sshd:
            print("partial: sshd listening on 127.0.0.1:%d" % sshd.port, flush=True)
            skips = {e: Skips(ctx, e) for e in PARTIAL_DATASETS}
            for experiment, n in points:
                _partial_point(ctx, sshd, dmv, git, skips[experiment], experiment, n, settle)
    except servers.ServerError as e:
        print("partial: %s" % e, flush=True)
        for experiment, n in points:
            ctx.rec.note("dmv", experiment, str(n), "all", "fail", str(e))
    finally:
        shutil.rmtree(root, ignore_errors=True)


class _Floor:
    """The plain copies of one file's bytes (recorded as tool `cp`)."""
    name = "cp"


class _Annex:
    """git-annex (Debian package), whose `git annex whereis` the partial experiment times against dmv's."""
    name = "git-annex"


# `git annex add` takes about 8.5 ms a file here (10,000 files: 1.5 min untimed; 100,000: a quarter of an
# hour), so git-annex's side runs only up to this many files and is recorded as skipped above
ANNEX_MAX_FILES = 10_000


def _partial_point(ctx, sshd, dmv, git, skips, experiment, n, settle):
    param = str(n)
    many = experiment == "partial-files"
    settle = settle if many else 0
    later = [] if many else None  # with many files, delete nothing until the point is done (see sync)
    tools = [t for t in (dmv, git) if t]
    if not many:
        # data; dmv's and git's source repositories and bare remotes; a full clone (repository and
        # checkout); the meta clone after get (store and file); the plain copy
        need = 8 * n + GiB
        if not _enough_disk(ctx, tools, skips, experiment, param, need):
            return
    tools = [t for t in tools if skips.active(t, param)]
    if dmv not in tools:
        return
    pt = ctx.point(experiment, n)
    try:
        source = _write_point_data(experiment, n, many, pt.work)
        got = os.path.join("d00000", sorted(os.listdir(os.path.join(pt.work, "d00000")))[0]) if many else "file.bin"
        data = dict(data_bytes=source[2], data_files=source[1], got_path=got,
                    got_bytes=os.path.getsize(os.path.join(pt.work, got)))
        remotes = _partial_prepare(ctx, sshd, tools, pt, experiment, param)
        if "dmv" not in remotes:
            return
        annex = _annex_prepare(ctx, skips, pt, experiment, param, n) if many and git in tools else None
        _settle(settle, "files deleted before this point and by git's auto-gc slow down creating files "
                        "(ext4 without a journal)")
        _partial_ssh(ctx, sshd, dmv, git if "git" in remotes else None, remotes, skips, pt, experiment, param,
                     got, source, data, later)
        if annex:
            _partial_annex(ctx, skips, pt, experiment, param, data, annex)
        _partial_http(ctx, dmv, skips, pt, experiment, param, remotes["dmv"].path, got, data, source, later)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _partial_prepare(ctx, sshd, tools, pt, experiment, param):
    """Untimed: each tool commits the work tree and pushes it into a fresh bare
    repository over ssh; its own repository then leaves the work tree (kept
    aside until the point is done). Returns {tool name: Remote}."""
    rec = ctx.rec
    env = {"DMV_SSH": sshd.ssh_command(), "DMV_REMOTE_DMV": sshd.remote_dmv or "dmv",
           "GIT_SSH_COMMAND": sshd.ssh_command()}
    remotes = {}
    for tool in tools:
        print("  %s: commit and push over ssh (untimed)" % tool.name, flush=True)
        remote_path = os.path.join(pt.root, "remote-%s" % tool.name)
        remote = Remote("ssh", sshd.url(remote_path), env, remote_path, sshd.login())
        steps = [tool.init(pt), tool.commit(pt, True), tool.init_remote(pt, remote_path)]
        if tool.name == "git":
            # the server must allow the blobless filter, and the later fetch of one blob by its id: over
            # ssh without AcceptEnv GIT_PROTOCOL, git speaks protocol v0, which refuses unadvertised
            # objects unless told otherwise (v2 servers, e.g. the big forges, allow them)
            steps.append([tool.cmd(pt, "-C", remote_path, "config", "uploadpack.allowFilter", "true", cwd=pt.root),
                          tool.cmd(pt, "-C", remote_path, "config", "uploadpack.allowAnySHA1InWant", "true",
                                   cwd=pt.root)])
        steps.append(tool.push(pt, remote))
        os.sync()
        out = run_cmds([c for s in steps for c in s], rec.env, rec.timeout)
        if out.ok:
            remotes[tool.name] = remote
        else:
            rec.note(tool.name, experiment, param, "prepare", "timeout" if out.timed_out else "fail", out.error)
        if os.path.exists(tool.meta(pt)):
            os.rename(tool.meta(pt), os.path.join(pt.root, "source-%s" % tool.name))
    return remotes


def _annex_prepare(ctx, skips, pt, experiment, param, n):
    """Untimed: git-annex's counterpart of the meta clone. A copy of the work tree becomes an annex
    (`git annex init`, `git annex add .`, `git commit`: the data moves into its `.git/annex/objects`),
    then a plain `git clone` of it plus `git annex init` is a replica that knows, from the git-annex
    branch, where every file's data is but holds none. Returns (the clone, git-annex's version, the
    preparation's seconds), or None (git-annex not installed, more than ANNEX_MAX_FILES files, or a
    failure: recorded)."""
    rec = ctx.rec
    if not shutil.which("git-annex", path=rec.env.get("PATH")):
        rec.note(_Annex.name, experiment, param, "whereis", "skipped",
                 "git-annex is not installed (apt-get install -y git-annex)")
        return None
    if n > ANNEX_MAX_FILES:
        rec.note(_Annex.name, experiment, param, "whereis", "skipped",
                 "more than {:,} files: `git annex add` takes about 8.5 ms a file here".format(ANNEX_MAX_FILES))
        return None
    if not skips.active(_Annex, param):
        return None
    src, dest = os.path.join(pt.root, "annex-source"), os.path.join(pt.root, "annex-meta")
    print("  git-annex: copy the data, annex add, commit, clone, annex init (untimed)", flush=True)
    shutil.copytree(pt.work, src, symlinks=True)
    git = ["git", "-c", "gc.auto=0"]
    out = run_cmds([Cmd(git + ["init", "-q"], cwd=src), Cmd(git + ["annex", "init", "-q", "source"], cwd=src),
                    Cmd(git + ["annex", "add", "-q", "."], cwd=src), Cmd(git + ["commit", "-qm", "data"], cwd=src),
                    Cmd(git + ["clone", "-q", src, dest], cwd=pt.root),
                    Cmd(git + ["annex", "init", "-q", "meta"], cwd=dest)], rec.env, rec.timeout)
    if not out.ok:
        rec.note(_Annex.name, experiment, param, "prepare", "timeout" if out.timed_out else "fail", out.error)
        skips.fail(_Annex, param, out)
        return None
    print("  git-annex: prepared in %.1f s" % out.wall_s, flush=True)
    r = subprocess.run(["git", "annex", "version", "--raw"], cwd=dest, env=rec.env, capture_output=True,
                       text=True, timeout=60)
    return dest, (r.stdout.strip() or None), round(out.wall_s, 3)


def _partial_annex(ctx, skips, pt, experiment, param, data, annex):
    """Timed: `git annex whereis` of every file in git-annex's counterpart of the meta clone (local: it
    reads the location logs of the git-annex branch; it asks no remote). Its output is read by the
    harness (about 130 bytes a file) to check that it lists every file."""
    dest, version, prepare_s = annex

    def check(out):
        listed = sum(1 for line in out.captured.splitlines() if line.startswith(b"whereis "))
        extra = dict(data, transport="local", annex_version=version, annex_prepare_s=prepare_s,
                     whereis_files=listed, whereis_bytes=out.stdout_bytes, verified=listed == data["data_files"])
        if out.ok and not extra["verified"]:
            out.ok, out.error = False, "git annex whereis listed %d files; the data has %d" % (
                listed, data["data_files"])
        return extra
    os.sync()
    out = ctx.rec.step(_Annex, experiment, param, "whereis",
                       [Cmd(["git", "annex", "whereis"], cwd=dest, stdout="capture")],
                       os.path.join(dest, ".git"), after=check)
    if out.timed_out:
        skips.fail(_Annex, param, out)


def _git_pack_bytes(dest):
    """Bytes of the packs in a git clone: what it received (a clone keeps every pack it fetched)."""
    pack = os.path.join(dest, ".git", "objects", "pack")
    try:
        return sum(os.path.getsize(os.path.join(pack, f)) for f in os.listdir(pack) if f.endswith(".pack"))
    except OSError:
        return None


def _worktree_files(dest):
    """Files in a clone outside its repository folder."""
    count = 0
    for top, dirs, names in os.walk(dest):
        dirs[:] = [d for d in dirs if d not in (".dmv", ".git")]
        count += len(names)
    return count


def _absent_files(dmv, dest, env):
    """Untimed: the number of files `dmv ls --absent` lists in `dest` (None if it fails)."""
    r = subprocess.run([dmv.path, "ls", "--absent"], cwd=dest, env=env, capture_output=True, timeout=600)
    return len(r.stdout.splitlines()) if r.returncode == 0 else None


def _trace_rss(out):
    """dmv's own peak RSS (VmHWM) from its DMV_TRACE=1 line `trace: peak-rss-kib K`."""
    found = re.findall(r"trace: peak-rss-kib (\d+)", getattr(out, "stderr_tail", "") or "")
    return dict(self_peak_rss_kib=int(found[-1])) if found else {}


def _whereis_check(dmv, dest, env, files):
    """Untimed, after `dmv whereis`: its own peak RSS (DMV_TRACE), then one more run whose output is
    read: one unindented line `PATH (N copies)` per file, which must be every file of the data."""
    def check(out):
        extra = _trace_rss(out)
        if not out.ok:
            return extra
        r = subprocess.run([dmv.path, "whereis"], cwd=dest, env=env, capture_output=True, timeout=600)
        heads = [line for line in r.stdout.splitlines() if line and not line[:1].isspace()]
        copies = [int(m.group(1)) for m in (re.search(rb"\((\d+) cop(?:y|ies)\)$", h) for h in heads) if m]
        extra.update(whereis_files=len(heads), whereis_bytes=len(r.stdout),
                     whereis_copies_min=min(copies) if copies else None,
                     whereis_copies_max=max(copies) if copies else None,
                     verified=r.returncode == 0 and len(heads) == files)
        if not extra["verified"]:
            out.ok, out.error = False, "whereis listed %d files (exit %d); the data has %d" % (
                len(heads), r.returncode, files)
        return extra
    return check


def _lines_check(argv, cwd, env, files, what):
    """Untimed: one more run of `argv` whose output must have one line per file of the data."""
    def check(out):
        if not out.ok:
            return {}
        r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=600)
        listed = len(r.stdout.splitlines()) if r.returncode == 0 else None
        extra = dict(listed_files=listed, verified=listed == files)
        if not extra["verified"]:
            out.ok, out.error = False, "%s listed %s files; the data has %d" % (what, listed, files)
        return extra
    return check


def _verify_got(path, source):
    """Untimed: the file get (or git's checkout) wrote against the source's bytes."""
    def check(out):
        extra = {}
        if out.ok:
            same = os.path.exists(path) and datagen.file_hash(path) == datagen.file_hash(source)
            extra["verified"] = same
            if not same:
                out.ok, out.error = False, "the file written differs from the source"
        return extra
    return check


def _partial_ssh(ctx, sshd, dmv, git, remotes, skips, pt, experiment, param, got, source, data, later):
    """The ssh half of a point: full clone, meta clone, ls --absent, get, the plain copies, git's side."""
    rec = ctx.rec
    r = remotes["dmv"]
    env = dict(r.env, DMV_TRACE="1")
    full, meta = os.path.join(pt.root, "full-ssh"), os.path.join(pt.root, "meta-ssh")
    copy = os.path.join(pt.root, "copy-ssh")
    source_file = os.path.join(pt.work, got)

    def step(tool, name, cmds, measure_path, check=None, transport="ssh"):
        """One timed step (sync(2) first, untimed); a timeout skips the tool for larger points."""
        os.sync()
        sshd.reset_rss()

        def after(out):
            extra = dict(data, transport=transport)
            if transport == "ssh":
                extra["server_peak_rss_kib"] = sshd.server_rss_kib()
            extra.update(_trace(out))
            if check:
                extra.update(check(out))
            return extra
        out = rec.step(tool, experiment, param, name, cmds, measure_path, after=after)
        if out.timed_out:
            skips.fail(tool, param, out)
        return out

    def meta_check(dest):
        def check(out):
            return dict(worktree_files=_worktree_files(dest)) if out.ok else {}
        return check

    def store_check(check):
        """`check`, plus the bytes of the meta clone's location logs (what get and whereis add to its store)."""
        def both(out):
            extra = check(out) if check else {}
            if out.ok:
                extra["location_log_bytes_disk"] = _location_log_bytes(os.path.join(meta, ".dmv"))
            return extra
        return both

    many = experiment == "partial-files"
    sparse = os.path.join(pt.root, "git-sparse")
    try:
        step(dmv, "clone_full_ssh", dmv.clone(pt, Remote("ssh", r.url, env, r.path), full), os.path.join(full, ".dmv"),
             check=_verify_clone(full, source, lambda: dict(worktree_files=_worktree_files(full))))
        _remove([full], later)
        out = step(dmv, "clone_meta_ssh", [dmv.cmd(pt, "clone", "--slice", "meta", r.url, meta, cwd=pt.root, env=env)],
                   os.path.join(meta, ".dmv"), check=store_check(meta_check(meta)))
        sparse_ok = False
        if many and git:
            # git's blobless sparse clone (cone mode: only the top-level files are checked out; the data has
            # none, so its work tree is as empty as the meta clone's), right after the meta clone, so that both
            # `status` below run in clones as they are right after cloning
            g = remotes["git"]
            top = sum(1 for e in os.scandir(pt.work) if not e.is_dir(follow_symlinks=False))
            sout = step(git, "clone_sparse_ssh", [git.cmd(pt, "clone", "-q", "--filter=blob:none", "--sparse", g.url,
                                                          sparse, cwd=pt.root, env=g.env)],
                        os.path.join(sparse, ".git"), check=_sparse_check(git, sparse, dict(rec.env, **g.env), top))
            sparse_ok = sout.ok
        if out.ok and many:
            _partial_status(step, pt, dmv, git if sparse_ok else None, meta, sparse, r.env,
                            remotes["git"].env if sparse_ok else None, rec.env)
        if out.ok:
            def absent(out):
                listed = len(out.captured.splitlines())
                extra = dict(absent_files=listed, verified=listed == data["data_files"])
                if out.ok and not extra["verified"]:
                    out.ok, out.error = False, "ls --absent listed %d files; the data has %d" % (
                        listed, data["data_files"])
                return extra
            step(dmv, "ls_absent", [dmv.cmd(pt, "ls", "--absent", cwd=meta, stdout="capture")],
                 os.path.join(meta, ".dmv"), check=absent, transport="local")

            def got_check(out):
                extra = _verify_got(os.path.join(meta, got), source_file)(out)
                if out.ok:
                    extra["worktree_files"] = _worktree_files(meta)
                    extra["absent_files_after"] = _absent_files(dmv, meta, dict(rec.env, **r.env))
                return extra
            step(dmv, "get_ssh", [dmv.cmd(pt, "get", got, cwd=meta, env=env)], os.path.join(meta, ".dmv"),
                 check=store_check(got_check))
            # whereis of every file, output to /dev/null: it asks the reachable remotes live (origin, over
            # the same sshd); checked afterwards by one more run, untimed. After get, not before: whereis
            # keeps the location log it learned from origin in the meta clone (about 16 MiB at 100,000
            # files), so before get it would swell the store that get_ssh's record measures
            whereis_check = _whereis_check(dmv, meta, dict(rec.env, **env), data["data_files"])
            step(dmv, "whereis", [dmv.cmd(pt, "whereis", cwd=meta, env=env)], os.path.join(meta, ".dmv"),
                 check=store_check(lambda out: dict(whereis_check(out), after_get=True)))
        # The floors: the same bytes through the same sshd (DMV's cipher order), into a file as get
        # writes one (get also keeps them in its store), and into /dev/null (the transport alone).
        login = shlex.join(sshd.login() + ["cat", source_file])
        step(_Floor, "copy_ssh", [Cmd(["sh", "-c", "%s > %s" % (login, shlex.quote(copy))], cwd=pt.root)], None,
             check=_verify_got(copy, source_file))
        _remove([copy], later)
        # And into a file synced to the disk: get's store is durable (it fsyncs its packs).
        step(_Floor, "copy_ssh_sync", [Cmd(["sh", "-c", "%s > %s && sync %s" % (login, shlex.quote(copy + "-synced"),
                                                                             shlex.quote(copy + "-synced"))],
                                           cwd=pt.root)], None, check=_verify_got(copy + "-synced", source_file))
        _remove([copy + "-synced"], later)
        step(_Floor, "copy_ssh_null", [Cmd(["sh", "-c", "%s > /dev/null" % login], cwd=pt.root)], None)
        if git:
            g = remotes["git"]
            dest = os.path.join(pt.root, "git-blobless")
            out = step(git, "clone_meta_ssh", [git.cmd(pt, "clone", "-q", "--filter=blob:none", "--no-checkout", g.url,
                                                       dest, cwd=pt.root, env=g.env)],
                       os.path.join(dest, ".git"),
                       check=lambda out: dict(meta_check(dest)(out),
                                              pack_bytes_received=_git_pack_bytes(dest)))
            if out.ok:
                # the closest thing git has to whereis: every file of HEAD with its blob id, from the trees
                # its blobless clone holds (no index: the clone has no checkout)
                step(git, "ls_tree", [git.cmd(pt, "ls-tree", "-r", "HEAD", cwd=dest, env=g.env)],
                     os.path.join(dest, ".git"), transport="local",
                     check=_lines_check([git.path or git.binary, "ls-tree", "-r", "HEAD"], dest,
                                        dict(rec.env, **g.env), data["data_files"], "ls-tree -r HEAD"))
                before = _git_pack_bytes(dest) or 0

                def git_got(out):
                    extra = _verify_got(os.path.join(dest, got), source_file)(out)
                    after = _git_pack_bytes(dest)
                    extra["worktree_files"] = _worktree_files(dest)
                    extra["pack_bytes_received"] = after - before if after is not None else None
                    return extra
                step(git, "get_ssh", [git.cmd(pt, "checkout", "-q", "HEAD", "--", got, cwd=dest, env=g.env)],
                     os.path.join(dest, ".git"), check=git_got)
            _remove([dest], later)
            if out.ok:
                _meta_clone_pairs(step, pt, dmv, git, r, g, env, later)
    finally:
        _remove([meta, copy, sparse], later)


def _location_log_bytes(dmv_dir):
    """Bytes on disk of a dmv store's location logs: `locations` (the logs it took in, packed) and
    `locations.journal` (what it noted since)."""
    return sum(disk_usage(os.path.join(dmv_dir, name))[0] for name in ("locations", "locations.journal"))


def _sparse_check(git, dest, env, top):
    """Untimed, after git's sparse clone: its work tree must hold the data's `top` top-level files and nothing
    else (cone mode); records the packs received, the index's size (one entry per file of HEAD, checked out or
    not) and git's `core.sparseCheckoutCone`."""
    def check(out):
        if not out.ok:
            return {}
        files = _worktree_files(dest)
        index = os.path.join(dest, ".git", "index")
        cone = subprocess.run([git.path or git.binary, "config", "core.sparseCheckoutCone"], cwd=dest, env=env,
                              capture_output=True, text=True, timeout=60).stdout.strip() or None
        extra = dict(worktree_files=files, pack_bytes_received=_git_pack_bytes(dest),
                     index_bytes=os.path.getsize(index) if os.path.exists(index) else None,
                     sparse_cone=cone, verified=files == top)
        if not extra["verified"]:
            out.ok, out.error = False, "the sparse clone checked out %d files; the data has %d top-level files" % (
                files, top)
        return extra
    return check


# `dmv status` in the meta clone and `git status` in git's sparse clone: tries of each after the first run
PARTIAL_STATUS_TRIES = 5
STATUS_ABSENT = re.compile(rb"(\d+) of (\d+) tracked files are not here")
STATUS_SPARSE = re.compile(rb"sparse checkout with (\d+)% of tracked files present")


def _partial_status(step, pt, dmv, git, meta, sparse, d_env, g_env, base_env):
    """Timed, local, output to /dev/null: `dmv status` in the meta clone and (git given) `git status` in git's
    sparse clone, right after both clones: first one run each (`status_first`: dmv's first run after the clone,
    git's first on its fresh index; not in the medians), then PARTIAL_STATUS_TRIES warm tries each
    (`status_N`), back to back in pairs, dmv first in odd tries and git first in even ones (as
    _meta_clone_pairs). The first run of each is checked by one more run, untimed: the short form (`dmv status
    --short`, `git status --porcelain`) must print nothing, as neither clone has a change; the long form's
    count of absent files (dmv) or share of files present (git) is recorded when it says one. A tool's tries
    stop at its first failure."""
    # (name, tool, clone, its repository, the short form's flag, the remote's environment, the long form's count)
    ways = [("dmv", dmv, meta, os.path.join(meta, ".dmv"), "--short", d_env, STATUS_ABSENT)]
    if git:
        ways.append(("git", git, sparse, os.path.join(sparse, ".git"), "--porcelain", g_env, STATUS_SPARSE))
    tools = {name: (tool, cwd, store, cmd_env) for name, tool, cwd, store, _, cmd_env, _ in ways}

    def verify(name, tool, cwd, short, cmd_env, said):
        def check(out):
            extra = dict(status_tries=PARTIAL_STATUS_TRIES)
            if not out.ok:
                return extra
            argv, run_env = [tool.path or tool.binary, "status"], dict(base_env, **cmd_env)
            r = subprocess.run(argv + [short], cwd=cwd, env=run_env, capture_output=True, timeout=600)
            long_form = subprocess.run(argv, cwd=cwd, env=run_env, capture_output=True, timeout=600)
            m = said.search(long_form.stdout)
            if m and name == "dmv":
                extra.update(status_absent_files=int(m.group(1)), status_tracked_files=int(m.group(2)))
            elif m:
                extra["status_present_pct"] = int(m.group(1))
            extra["verified"] = r.returncode == 0 and not r.stdout.strip()
            if not extra["verified"]:
                out.ok, out.error = False, "`%s status %s` after the clone: exit %d, %d bytes of output" % (
                    name, short, r.returncode, len(r.stdout))
            return extra
        return check

    stopped = set()
    for name, tool, cwd, store, short, cmd_env, said in ways:
        out = step(tool, "status_first", [tool.cmd(pt, "status", cwd=cwd, env=cmd_env)], store,
                   check=verify(name, tool, cwd, short, cmd_env, said), transport="local")
        if not out.ok:
            stopped.add(name)
    for i in range(1, PARTIAL_STATUS_TRIES + 1):
        order = [w[0] for w in ways]
        for place, name in enumerate(order if i % 2 else order[::-1]):
            if name in stopped:
                continue
            tool, cwd, store, cmd_env = tools[name]
            fields = dict(pair=i, pair_place="first" if place == 0 else "second")
            out = step(tool, "status_%d" % i, [tool.cmd(pt, "status", cwd=cwd, env=cmd_env)], store,
                       check=lambda out, fields=fields: fields, transport="local")
            if not out.ok:
                stopped.add(name)


# Meta clones against git's blobless clones, in pairs back to back (issue 44: no slower than git's); the report
# takes the median of the pairs' ratios, which the machine's drift between the pairs does not move.
META_CLONE_PAIRS = 7


def _meta_clone_pairs(step, pt, dmv, git, r, g, env, later):
    for i in range(1, META_CLONE_PAIRS + 1):
        name = "clone_meta_ssh_pair_%d" % i
        dmv_dest, git_dest = (os.path.join(pt.root, "pair-%s-%d" % (t, i)) for t in ("dmv", "git"))
        ways = [lambda: step(dmv, name, [dmv.cmd(pt, "clone", "--slice", "meta", r.url, dmv_dest, cwd=pt.root,
                                                 env=env)], None),
                lambda: step(git, name, [git.cmd(pt, "clone", "-q", "--filter=blob:none", "--no-checkout", g.url,
                                                 git_dest, cwd=pt.root, env=g.env)], None)]
        for way in (ways if i % 2 else ways[::-1]):
            way()
        _remove([dmv_dest, git_dest], later)


def _partial_http(ctx, dmv, skips, pt, experiment, param, remote_path, got, data, source, later):
    """The HTTP half: meta clone and get through one `dmv serve` (the clone's origin is its URL),
    then curl of the file from a plain static server, into a file and into /dev/null."""
    rec = ctx.rec
    meta = os.path.join(pt.root, "meta-http")
    source_file = os.path.join(pt.work, got)
    env = {"DMV_TOKEN": SYNC_TOKEN, "DMV_TRACE": "1"}

    def step(tool, name, cmds, measure_path, check=None, server=None):
        os.sync()

        def after(out):
            extra = dict(data, transport="http")
            if server is not None:
                extra["server_peak_rss_kib"] = server.server_rss_kib()  # VmHWM since the server started
            extra.update(_trace(out))
            if check:
                extra.update(check(out))
            return extra
        out = rec.step(tool, experiment, param, name, cmds, measure_path, after=after)
        if out.timed_out:
            skips.fail(tool, param, out)
        return out

    try:
        with servers.DmvHttp(dmv.path, os.path.join(pt.root, "http"), rec.env, {"r": remote_path},
                             SYNC_TOKEN) as srv:
            out = step(dmv, "clone_meta_http", [dmv.cmd(pt, "clone", "--slice", "meta", srv.url("r"), meta, cwd=pt.root,
                                                        env=env)],
                       os.path.join(meta, ".dmv"), server=srv,
                       check=lambda out: dict(worktree_files=_worktree_files(meta)) if out.ok else {})
            if out.ok:
                step(dmv, "get_http", [dmv.cmd(pt, "get", got, cwd=meta, env=env)], os.path.join(meta, ".dmv"),
                     server=srv, check=_verify_got(os.path.join(meta, got), source_file))
            if out.ok and os.path.dirname(got):
                _partial_small_reads(step, pt, dmv, meta, got, env, rec.env, srv, later)
                _partial_get_all(step, pt, dmv, srv, env, rec.env, source, later)
    except servers.ServerError as e:
        rec.note("dmv", experiment, param, "http", "fail", str(e))
    finally:
        _remove([meta], later)
    port = servers.free_port()
    static = subprocess.Popen(["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port),
                               "--directory", pt.work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    copy = os.path.join(pt.root, "copy-http")
    try:
        url = "http://127.0.0.1:%d/%s" % (port, got)
        for _ in range(200):
            if subprocess.run(["curl", "-s", "-f", "-o", "/dev/null", "-r", "0-0", url]).returncode == 0:
                break
            time.sleep(0.05)
        else:
            rec.note("cp", experiment, param, "copy_http", "fail", "python3 -m http.server did not answer on %s" % url)
            return
        step(_Floor, "copy_http", [Cmd(["curl", "-s", "-f", "-o", copy, url], cwd=pt.root)], None,
             check=_verify_got(copy, source_file))
        synced = copy + "-synced"
        step(_Floor, "copy_http_sync", [Cmd(["sh", "-c", "curl -s -f -o %s %s && sync %s" % (
            shlex.quote(synced), shlex.quote(url), shlex.quote(synced))], cwd=pt.root)], None,
             check=_verify_got(synced, source_file))
        _remove([synced], later)
        step(_Floor, "copy_http_null", [Cmd(["curl", "-s", "-f", "-o", "/dev/null", url], cwd=pt.root)], None)
    finally:
        static.kill()
        static.wait()
        _remove([copy], later)


def _partial_get_all(step, pt, dmv, srv, env, base_env, source, later):
    """With many files: `get_all_http`, `dmv get .` of every file in a second meta clone (made untimed just
    before), against `clone_full_http`, a full clone through the same server right after; each checked
    against the source file by file (untimed)."""
    meta_all, full = os.path.join(pt.root, "meta-http-all"), os.path.join(pt.root, "full-http")
    made = subprocess.run([dmv.path, "clone", "-q", "--slice", "meta", srv.url("r"), meta_all], cwd=pt.root,
                          env=dict(base_env, **env), capture_output=True, timeout=600)
    try:
        if made.returncode == 0:
            step(dmv, "get_all_http", [dmv.cmd(pt, "get", ".", cwd=meta_all, env=env)], os.path.join(meta_all, ".dmv"),
                 server=srv, check=_verify_clone(meta_all, source, {}))
        step(dmv, "clone_full_http", [dmv.cmd(pt, "clone", srv.url("r"), full, cwd=pt.root, env=env)],
             os.path.join(full, ".dmv"), server=srv, check=_verify_clone(full, source, {}))
    finally:
        _remove([meta_all, full], later)


def _partial_small_reads(step, pt, dmv, meta, got, env, base_env, srv, later):
    """Issue 73's other small reads, in the meta clone after the get, each of another absent file of `got`'s
    folder (the next two by name): `cat_http`, `dmv cat HEAD:FILE > COPY`; `mount_read_http`, the first read
    of a file through `dmv mount --worktree` of the meta clone (mounted in the background before, untimed,
    unmounted after), `cat MNT/FILE > COPY`. Each copy is compared with the source (untimed)."""
    folder = os.path.dirname(got)
    names = sorted(os.listdir(os.path.join(pt.work, folder)))
    if len(names) < 3:
        return
    cat_file, mount_file = (os.path.join(folder, n) for n in names[1:3])
    copy = os.path.join(pt.root, "copy-cat")
    step(dmv, "cat_http", [Cmd(["sh", "-c", "exec %s cat HEAD:%s > %s" % (
        shlex.quote(dmv.path), shlex.quote(cat_file), shlex.quote(copy))], cwd=meta, env=env)],
         None, server=srv, check=_verify_got(copy, os.path.join(pt.work, cat_file)))
    mnt, copy2 = os.path.join(pt.root, "mnt-meta"), os.path.join(pt.root, "copy-mount")
    os.makedirs(mnt, exist_ok=True)
    run_env = dict(base_env, **env)
    mounted = subprocess.run([dmv.path, "mount", "--worktree", "--background", mnt], cwd=meta, env=run_env,
                             capture_output=True, timeout=120)
    try:
        if mounted.returncode == 0:
            step(dmv, "mount_read_http", [Cmd(["sh", "-c", "exec cat %s > %s" % (
                shlex.quote(os.path.join(mnt, mount_file)), shlex.quote(copy2))], cwd=pt.root)],
                 None, server=srv, check=_verify_got(copy2, os.path.join(pt.work, mount_file)))
    finally:
        if mounted.returncode == 0:
            subprocess.run([dmv.path, "umount", mnt], cwd=meta, env=run_env, capture_output=True, timeout=120)
        _remove([copy, copy2], later)


# ---------------------------------------------------------------- web UI (experiment `web`)

WEB_REPO, WEB_TOKEN = "hub", "bench-read-token"
WEB_CONNECTIONS = 6              # parallel connections per host of Chromium and Firefox
WEB_THUMB_EDGE = 256             # the server's thumbnails fit in this square
WEB_SEEK_ASK = 1 << 20           # the bounded range a seek asks for
WEB_SEEK_READ = 4 << 20          # what the client reads of an open-ended range before it closes
WEB_READ_CAP = 64 << 20          # a bounded answer is read at most this far (a server ignoring Range sends all)
PHOTO_W, PHOTO_H = 6000, 4000    # 24 megapixels
THUMB_SRC = re.compile(rb'<img[^>]*\ssrc="(/%s/thumb/[0-9a-f]{64})"' % WEB_REPO.encode())
VIDEO_SRC = re.compile(rb'<video[^>]*\ssrc="(/%s/raw/[0-9a-f]{64}/[^"]+)"' % WEB_REPO.encode())
ACCESS = re.compile(r"dmv serve: GET (\S+) (\d{3}) (\S+)(?: range=(\S+))?")


def _photo(path, seed):
    """One photo-like JPEG of PHOTO_W x PHOTO_H: a colour gradient in a random
    direction, soft blotches (noise upscaled 50x) and per-pixel grain, so that
    it compresses like a photo (about 4.5 MB at quality 88) and every seed
    gives different bytes. Written to a temporary name first: a killed run
    leaves no truncated photo to be reused."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, PHOTO_H, dtype=np.float32)[:, None]
    x = np.linspace(0, 1, PHOTO_W, dtype=np.float32)[None, :]
    angle = rng.uniform(0, 2 * np.pi)
    ramp = np.float32(np.cos(angle)) * x + np.float32(np.sin(angle)) * y
    ramp -= ramp.min()
    ramp /= ramp.max()
    c0, c1 = rng.uniform(50, 205, 3).astype(np.float32), rng.uniform(50, 205, 3).astype(np.float32)
    small = rng.integers(0, 256, (PHOTO_H // 50, PHOTO_W // 50, 3), dtype=np.uint8)
    blotches = np.asarray(Image.fromarray(small).resize((PHOTO_W, PHOTO_H), Image.BICUBIC))
    grain = rng.integers(-10, 11, (PHOTO_H, PHOTO_W, 3), dtype=np.int8)
    pixels = np.empty((PHOTO_H, PHOTO_W, 3), np.uint8)
    for k in range(3):  # one channel at a time: a float copy of the whole image would need 290 MB
        channel = c0[k] + (c1[k] - c0[k]) * ramp
        channel += blotches[:, :, k] * np.float32(0.2) - 25
        channel += grain[:, :, k]
        np.clip(channel, 0, 255, out=channel)
        pixels[:, :, k] = channel
    tmp = path + ".tmp"
    Image.fromarray(pixels).save(tmp, "JPEG", quality=88)
    os.replace(tmp, path)


def _web_photos(cache, count):
    """`count` photos in `cache` (outside the run's scratch space), made once
    and reused by later runs. Returns (paths, how many were made now)."""
    os.makedirs(cache, exist_ok=True)
    paths, made = [], 0
    for i in range(count):
        path = os.path.join(cache, "photo-%03d.jpg" % i)
        if not (os.path.exists(path) and os.path.getsize(path) > 0):
            if made == 0:
                print("web: making photos of %dx%d in %s (once; later runs reuse them)" % (
                    PHOTO_W, PHOTO_H, cache), flush=True)
            _photo(path, seed=1000 + i)
            made += 1
        paths.append(path)
    return paths, made


class _WebServer:
    """`dmv serve` of one repository for the web experiment: a read-only
    token and the access log on (one stderr line per request, all kept).
    Also the process's counters: VmHWM (its peak RSS) and wchar (every byte
    it passed to write(2), its sockets included)."""

    def __init__(self, dmv, root, env, repo, config=None):
        """`config`: the whole server.toml instead of the one repository and
        read-only token (the webui experiment's)."""
        self.dmv, self.dir, self.env, self.repo, self.config = dmv, root, env, repo, config
        self.proc, self.port, self.lines = None, None, []
        self.times = []  # time.monotonic() when each line of `lines` was read (set before the line is added)

    def __enter__(self):
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "server.toml")
        # owner-only, as dmv serve asks of a file holding tokens (else its first line is a warning)
        with os.fdopen(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            # a JSON string is a TOML basic string; top-level keys before the tables
            f.write(self.config or "access_log = true\n[repos]\n%s = %s\n[tokens]\n%s = \"read\"\n" % (
                WEB_REPO, json.dumps(self.repo), json.dumps(WEB_TOKEN)))
        self.proc = subprocess.Popen([self.dmv.path, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                                     env=self.env, cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=servers._die_with_parent)
        first = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stderr.readline()), daemon=True)
        reader.start()
        reader.join(20)
        line = first[0].decode("utf-8", "replace").strip() if first else ""
        if "listening on http://" not in line:
            self.__exit__()
            rest = self.proc.stderr.read().decode("utf-8", "replace") if self.proc.stderr else ""
            raise servers.ServerError("dmv serve did not start: %r %s" % (line, rest[-500:]))
        self.port = int(line.rsplit(":", 1)[1])

        def drain():  # the server must never block on a full stderr pipe
            for raw in self.proc.stderr:
                self.times.append(time.monotonic())
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
        threading.Thread(target=drain, daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        return False

    def connection(self, timeout):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def peak_rss_kib(self):
        return servers.vm_hwm_kib(self.proc.pid)

    def wchar(self):
        try:
            with open("/proc/%d/io" % self.proc.pid) as f:
                return next(int(l.split()[1]) for l in f if l.startswith("wchar:"))
        except (OSError, StopIteration, ValueError):
            return None

    def wchar_settled(self, quiet=0.3, limit=10.0):
        """wchar once it has not grown for `quiet` seconds: the server has
        written all it will for a request the client is done with."""
        last, since, deadline = self.wchar(), time.monotonic(), time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.wchar()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return last

    def access(self, path, since, wait=2.0):
        """The access-log line of `path` among the lines from index `since`:
        (status, Content-Length or None, range) or None. The line is printed
        with the answer's headers; the drain thread may lag behind a little."""
        deadline = time.monotonic() + wait
        while True:
            for line in self.lines[since:]:
                m = ACCESS.search(line)
                if m and m.group(1) == path:
                    return int(m.group(2)), int(m.group(3)) if m.group(3).isdigit() else None, m.group(4)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)


def _get(conn, path, headers=None, token=WEB_TOKEN):
    """One GET on a keep-alive connection: (status, content type, body)."""
    conn.request("GET", path, headers=dict(headers or {}, Authorization="Bearer " + token))
    resp = conn.getresponse()
    return resp.status, resp.getheader("Content-Type", ""), resp.read()


def _web_page(srv, path, timeout, token=WEB_TOKEN):
    """GET one page on a fresh connection: (Outcome, body)."""
    conn = srv.connection(timeout)
    out = Outcome()
    start = time.perf_counter()
    try:
        status, _, body = _get(conn, path, token=token)
        out.wall_s = time.perf_counter() - start
        if status != 200:
            out.ok, out.error = False, "GET %s: %d %s" % (path, status, body[:200].decode("utf-8", "replace"))
        return out, body
    except (OSError, http.client.HTTPException) as e:
        out.wall_s = time.perf_counter() - start
        out.ok, out.timed_out = False, isinstance(e, TimeoutError)
        out.error = "GET %s: %s" % (path, e)
        return out, b""
    finally:
        conn.close()


def _browse_commit(srv, page, timeout, token=WEB_TOKEN, images=THUMB_SRC):
    """A browser opening a commit page: GET the page, then every thumbnail it
    shows, in page order, over WEB_CONNECTIONS keep-alive connections (the
    page's own among them). Every time counts from the page request. Returns
    (Outcome whose wall_s is the time to the last thumbnail, fields, thumbs);
    thumbs: (url, status, content type, body, error) for the untimed check.
    `images`: the pattern of the image URLs in the page (each URL fetched
    once, as a browser does)."""
    conns = [srv.connection(timeout) for _ in range(WEB_CONNECTIONS)]
    out, fields, thumbs = Outcome(), {}, []
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    try:
        try:
            status, _, body = _get(conns[0], page, token=token)
        except (OSError, http.client.HTTPException) as e:
            out.wall_s = time.perf_counter() - start
            out.ok, out.timed_out, out.error = False, isinstance(e, TimeoutError), "GET %s: %s" % (page, e)
            return out, fields, thumbs
        fields["page_s"] = round(time.perf_counter() - start, 6)
        fields["page_bytes"] = len(body)
        if status != 200:
            out.wall_s = fields["page_s"]
            out.ok, out.error = False, "GET %s: %d" % (page, status)
            return out, fields, thumbs
        urls = list(dict.fromkeys(u.decode() for u in images.findall(body)))
        done, times, next_url = [None] * len(urls), [None] * len(urls), [0]
        lock = threading.Lock()

        def worker(conn):
            while True:
                with lock:
                    i = next_url[0]
                    next_url[0] += 1
                if i >= len(urls):
                    return
                if time.monotonic() > deadline:
                    done[i] = (urls[i], None, "", b"", "timeout")
                    continue
                try:
                    status, ctype, data = _get(conn, urls[i], token=token)
                    done[i] = (urls[i], status, ctype, data, None)
                except (OSError, http.client.HTTPException) as e:
                    done[i] = (urls[i], None, "", b"", "%s: %s" % (type(e).__name__, e))
                    conn.close()  # the next request opens a new connection
                times[i] = time.perf_counter() - start
        workers = [threading.Thread(target=worker, args=(c,), daemon=True) for c in conns]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        out.wall_s = max([fields["page_s"]] + [t for t in times if t is not None])
        ok_times = [t for t, d in zip(times, done) if d and d[1] == 200]
        fields.update(thumbs=len(urls), first_thumb_s=round(min(ok_times), 6) if ok_times else None,
                      all_thumbs_s=round(out.wall_s, 6),
                      thumbs_only_s=round(out.wall_s - fields["page_s"], 6),
                      thumb_bytes=sum(len(d[3]) for d in done if d))
        if any(d and d[4] == "timeout" for d in done):
            out.ok, out.timed_out = False, True
            out.error = "timeout after %ss" % timeout
        thumbs = done
        return out, fields, thumbs
    finally:
        for c in conns:
            c.close()


def _check_thumbs(out, fields, thumbs, expected, edge=WEB_THUMB_EDGE, page="the commit page"):
    """Untimed: the page shows one thumbnail per photo, and every answer is
    200 image/jpeg and decodes (PIL) to at most `edge` px on its long
    side. A failed check fails the step."""
    from PIL import Image
    errors, longest = [], 0
    if fields.get("thumbs") is not None and fields["thumbs"] != expected:
        errors.append("%s shows %d thumbnails, expected %d" % (page, fields["thumbs"], expected))
    for url, status, ctype, body, error in thumbs:
        if error:
            errors.append("%s: %s" % (url, error))
        elif status != 200 or ctype.split(";")[0].strip() != "image/jpeg":
            errors.append("%s: %s %s %s" % (url, status, ctype, body[:120].decode("utf-8", "replace")))
        else:
            try:
                with Image.open(io.BytesIO(body)) as im:
                    im.load()
                    fmt, size = im.format, im.size
            except Exception as e:  # PIL raises many kinds for a bad image
                errors.append("%s: does not decode: %s" % (url, e))
                continue
            longest = max(longest, *size)
            if fmt != "JPEG" or max(size) > edge:
                errors.append("%s: %s of %dx%d" % (url, fmt, size[0], size[1]))
    fields.update(thumbs_verified=not errors, thumb_longest_px=longest or None, thumb_errors=len(errors))
    if errors and out.ok:
        out.ok = False
        out.error = "%d of %d thumbnails wrong; first: %s" % (len(errors), max(len(thumbs), 1), "; ".join(errors[:3]))


def _web_cache_usage(repo):
    disk, apparent, files = disk_usage(os.path.join(repo, ".dmv", "web-cache"))
    return dict(cache_files=files, cache_bytes_apparent=apparent, cache_bytes_disk=disk)


def _range_get(srv, path, first, last, read, film, timeout):
    """GET `path` with `Range: bytes=FIRST-LAST` (LAST None: open-ended),
    reading at most `read` bytes of the answer, then closing the connection.
    Returns (Outcome timed from the request to the last byte read, fields);
    the bytes read are compared with the film's (untimed)."""
    asked = None if last is None else last - first + 1
    spec = "bytes=%d-%s" % (first, "" if last is None else last)
    since, w0 = len(srv.lines), srv.wchar()
    conn = srv.connection(timeout)
    out, fields = Outcome(), dict(range=spec, bytes_asked=asked, client_read_limit=read)
    start = time.perf_counter()
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer " + WEB_TOKEN, "Range": spec})
        resp = conn.getresponse()
        fields["headers_s"] = round(time.perf_counter() - start, 6)
        body, chunk = bytearray(), None
        while len(body) < read and chunk != b"":
            chunk = resp.read(min(1 << 20, read - len(body)))
            body += chunk
        out.wall_s = time.perf_counter() - start
        resp.close()
    except (OSError, http.client.HTTPException) as e:
        out.wall_s = time.perf_counter() - start
        out.ok, out.timed_out, out.error = False, isinstance(e, TimeoutError), "GET %s %s: %s" % (path, spec, e)
        return out, fields
    finally:
        conn.close()
    # served: what the answer holds (its Content-Length), whether or not the client reads it all
    length = resp.getheader("Content-Length")
    served = int(length) if length and length.isdigit() else len(body)
    fields.update(status_code=resp.status, content_range=resp.getheader("Content-Range"), bytes_received=len(body),
                  bytes_promised=int(length) if length and length.isdigit() else None, server_bytes_written=None)
    if asked:
        fields["served_over_asked"] = round(served / asked, 4)
    logged = srv.access(path, since)
    fields["logged_bytes"] = logged[1] if logged else None
    w1 = srv.wchar_settled()
    if w0 is not None and w1 is not None:
        fields["server_bytes_written"] = w1 - w0  # the answer and its access-log line
    total = os.path.getsize(film)
    end = total - 1 if last is None else min(last, total - 1)
    with open(film, "rb") as f:
        f.seek(first)
        expected = f.read(len(body))
    want = "bytes %d-%d/%d" % (first, end, total)
    if resp.status != 206 or fields["content_range"] != want:
        out.ok, out.error = False, "answered %d, Content-Range %s (expected 206, %s)" % (
            resp.status, fields["content_range"], want)
    elif bytes(body) != expected:
        out.ok, out.error = False, "the %d bytes received differ from the film's at %d" % (len(body), first)
    fields["verified"] = out.ok
    return out, fields


def web(ctx, images, film_size):
    """The web UI of `dmv serve`: thumbnails of a commit of `images` new
    photos of 24 megapixels (cold, then cached) with the server's peak RSS,
    and seeking to the middle of a film of `film_size` random bytes.
    Recorded as experiments `web-thumbs` (parameter: photos) and `web-seek`
    (parameter: the film's bytes)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    thumbs_param, seek_param = str(images), str(film_size)
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as e:
        for exp, param in (("web-thumbs", thumbs_param), ("web-seek", seek_param)):
            ctx.rec.note("dmv", exp, param, "all", "fail", "cannot make the photos: %s (pip install pillow numpy)" % e)
        return
    photos, made = _web_photos(os.path.join(ctx.args.workdir, "web-photos"), images)
    pt = ctx.point("web", images)
    try:
        os.makedirs(os.path.join(pt.work, "photos"))
        for src in photos:  # hard links: the repository's work tree costs no disk
            dest = os.path.join(pt.work, "photos", os.path.basename(src))
            try:
                os.link(src, dest)
            except OSError:
                shutil.copyfile(src, dest)
        data = dict(images=images, photo_px="%dx%d" % (PHOTO_W, PHOTO_H), photos_made=made,
                    photos_bytes=sum(os.path.getsize(p) for p in photos))
        if not _run_tool_steps(ctx, Skips(ctx, "web-thumbs"), dmv, pt, "web-thumbs", thumbs_param, [
                S("init", lambda: dmv.init(pt), fatal=True),
                S("commit", lambda: dmv.commit(pt, True), fatal=True)]):
            return
        commit = _commit_id(ctx, dmv, pt)
        film = _web_film(ctx, dmv, pt, seek_param, film_size)
        try:
            with _WebServer(dmv, os.path.join(pt.root, "server"), ctx.rec.env, pt.work) as srv:
                print("web: dmv serve listening on 127.0.0.1:%d" % srv.port, flush=True)
                _web_thumbs(ctx, dmv, srv, pt, thumbs_param, commit, data)
                if film:
                    _web_seek(ctx, dmv, srv, pt, seek_param, film)
        except servers.ServerError as e:
            print("web: %s" % e, flush=True)
            ctx.rec.note("dmv", "web-thumbs", thumbs_param, "all", "fail", str(e))
            if film:
                ctx.rec.note("dmv", "web-seek", seek_param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)  # the photos stay in the workdir for the next run


def _web_film(ctx, dmv, pt, param, size):
    """`film.mp4` of `size` random bytes (a player only asks for byte ranges;
    the content need not be a real video), committed on top of the photos.
    Returns its path, or None (recorded) when it cannot be made."""
    need = 2 * size + GiB  # the file and the repository's copy of it
    if free_bytes(ctx.workdir) < need:
        ctx.rec.note("dmv", "web-seek", param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return None
    path = os.path.join(pt.work, "film.mp4")
    print("web: writing a film of %s" % human_bytes(size), flush=True)
    datagen.write_random_file(path, size, seed=7)
    os.sync()
    out = ctx.rec.step(dmv, "web-seek", param, "commit", [dmv.cmd(pt, "add", "film.mp4"),
                                                           dmv.cmd(pt, "commit", "-m", "film")], dmv.meta(pt))
    return path if out.ok else None


def _web_thumbs(ctx, dmv, srv, pt, param, commit, data):
    """The history page, then the photos' commit page with its thumbnails:
    cold (fresh server, empty thumbnail cache), then again (cached)."""
    rec, timeout = ctx.rec, ctx.rec.timeout
    start_rss = srv.peak_rss_kib()
    os.sync()
    out, body = _web_page(srv, "/%s/log/main" % WEB_REPO, timeout)
    if out.ok and commit and ("/%s/commit/%s" % (WEB_REPO, commit)).encode() not in body:
        out.ok, out.error = False, "the history page does not link the commit %s" % commit
    rec.record(dmv, "web-thumbs", param, "log_page", out, None, peak_rss_kib=None, page_bytes=len(body), **data)
    if not commit:
        rec.note("dmv", "web-thumbs", param, "cold", "fail", "no commit id from `dmv rev-parse HEAD`")
        return
    for step in ("cold", "cached"):
        os.sync()  # untimed: the cold step's cache writes are not the cached step's to pay
        out, fields, thumbs = _browse_commit(srv, "/%s/commit/%s" % (WEB_REPO, commit), timeout)
        # VmHWM since the server started: the cold step's peak, then the peak over both
        fields.update(server_peak_rss_kib=srv.peak_rss_kib(), server_start_rss_kib=start_rss,
                      connections=WEB_CONNECTIONS, **_web_cache_usage(pt.work))
        _check_thumbs(out, fields, thumbs, data["images"])
        rec.record(dmv, "web-thumbs", param, step, out, None, peak_rss_kib=None, **dict(data, **fields))


def _web_seek(ctx, dmv, srv, pt, param, film):
    """The film's file page (the <video> element's URL), then a seek to its
    middle: a bounded 1 MiB range and an open-ended range of which the client
    reads 4 MiB before it closes the connection, as a player does; and, as
    the floor, the same 1 MiB read from the plain file (warm)."""
    rec, timeout = ctx.rec, ctx.rec.timeout
    size = os.path.getsize(film)
    os.sync()
    out, body = _web_page(srv, "/%s/file/main/film.mp4" % WEB_REPO, timeout)
    m = VIDEO_SRC.search(body)
    if out.ok and not m:
        out.ok, out.error = False, "no <video src=...> on the file page"
    rec.record(dmv, "web-seek", param, "file_page", out, None, peak_rss_kib=None, film_bytes=size,
               page_bytes=len(body))
    if not m:
        return
    raw, middle = m.group(1).decode(), size // 2
    for step, last, read in (("seek_range", middle + WEB_SEEK_ASK - 1, WEB_READ_CAP),
                             ("seek_open", None, WEB_SEEK_READ)):
        os.sync()
        out, fields = _range_get(srv, raw, middle, last, read, film, timeout)
        rec.record(dmv, "web-seek", param, step, out, None, peak_rss_kib=None, film_bytes=size,
                   server_peak_rss_kib=srv.peak_rss_kib(), **fields)
    # the floor: the same range from the plain file, warm in the page cache (it was just written and committed)
    out = Outcome()
    start = time.perf_counter()
    with open(film, "rb", buffering=0) as f:
        f.seek(middle)
        got = f.read(WEB_SEEK_ASK)
    out.wall_s = time.perf_counter() - start
    rec.record(_Floor, "web-seek", param, "read_range_file", out, None, peak_rss_kib=None, film_bytes=size,
               range="bytes=%d-%d" % (middle, middle + WEB_SEEK_ASK - 1), bytes_asked=WEB_SEEK_ASK,
               bytes_received=len(got), page_cache="warm")


# ---------------------------------------------------------------- web UI, second round (experiment `webui`, issue 48)

WEBUI_REPO, WEBUI_PATHS_REPO, WEBUI_UP_REPO, WEBUI_PUSH_REPO = "hub", "paths", "up", "pushed"
WEBUI_TOKEN, WEBUI_USER = "bench-write-token", "al"   # write access: the upload page needs it
WEBUI_SMALL_W, WEBUI_SMALL_H = 640, 480   # the folder's and the commit's photos (made once, distinct bytes)
WEBUI_FOLDER = "photos"
WEBUI_PER_PAGE = 200                      # entries of a folder's page and files of a commit's page (dmv-web)
WEBUI_PATHS_PER_FOLDER = 1000             # the search's paths: pNNN/qNN/img_NNNNNNN.txt, empty files
WEBUI_QUERIES = ("img_0001", "img_00012")  # the first search, then the same with more letters
WEBUI_UPLOAD_NAME = "big.bin"
WEBUI_WINDOW = (1280, 1000)               # the browser's window (CSS px)
WEBUI_IMAGES_WAIT_S = 120                 # a page's images not all complete by then: the load fails
WEBUI_POLL_S = 0.05                       # how often the upload's end (the commit page's URL) is looked for
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--window-size=%d,%d" % WEBUI_WINDOW]
UI_IMG_SRC = re.compile(rb'<img[^>]*\ssrc="(/[^"/]+/(?:thumb|preview)/[0-9a-f]{64})"')


class _WebDriverError(Exception):
    pass


class _Chromedriver:
    """chromedriver on a free port of 127.0.0.1, spoken to with the W3C
    WebDriver protocol over plain HTTP (urllib, no selenium); killed on exit."""

    def __init__(self, path=CHROMEDRIVER):
        self.path, self.proc, self.port = path, None, None

    def __enter__(self):
        if not os.path.exists(self.path):
            raise _WebDriverError("%s is missing (apt-get install -y chromium-driver)" % self.path)
        self.port = servers.free_port()
        self.proc = subprocess.Popen([self.path, "--port=%d" % self.port], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=servers._die_with_parent)
        deadline = time.monotonic() + 30
        while True:
            try:
                if (self.call("GET", "/status", timeout=5) or {}).get("ready"):
                    return self
            except (_WebDriverError, OSError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.__exit__()
                raise _WebDriverError("chromedriver did not start on port %d" % self.port)
            time.sleep(0.1)

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        return False

    def call(self, method, path, body=None, timeout=60):
        import urllib.error
        import urllib.request
        data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
                                     headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read() or b"{}").get("value") or {}
            except ValueError:
                v = {}
            raise _WebDriverError("%s %s: %s: %s" % (method, path.split("/")[-1] or path, v.get("error", e.code),
                                                     (v.get("message") or "").split("\n")[0][:300]))
        except (OSError, http.client.HTTPException) as e:
            raise _WebDriverError("%s %s: %s" % (method, path, e))

    def session(self, timeout, options=None):
        """A new browser: a fresh profile, so an empty HTTP cache. `options`: goog:chromeOptions
        instead of CHROME_ARGS alone (the wall experiment's window sizes and phone emulation)."""
        # "eager": navigating returns at DOMContentLoaded; PAGE_SCRIPT waits for the load event in the page
        caps = {"browserName": "chrome", "pageLoadStrategy": "eager",
                "timeouts": {"pageLoad": int(timeout * 1000), "script": int(timeout * 1000), "implicit": 0},
                "goog:chromeOptions": options or {"args": CHROME_ARGS}}
        v = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=120)
        return _Browser(self, v["sessionId"], v.get("capabilities", {}).get("browserVersion"), timeout)


class _Browser:
    """One WebDriver session (one headless Chromium)."""

    def __init__(self, driver, sid, version, timeout):
        self.driver, self.base, self.version, self.timeout = driver, "/session/%s" % sid, version, timeout

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.driver.call("DELETE", self.base, timeout=30)
        except _WebDriverError:
            pass
        return False

    def call(self, method, path, body=None):
        return self.driver.call(method, self.base + path, body, timeout=self.timeout + 30)

    def goto(self, url, complete=False):
        """Navigates; returns at DOMContentLoaded, or with `complete` once the load event is over."""
        self.call("POST", "/url", {"url": url})
        deadline = time.monotonic() + self.timeout
        while complete and self.run("return document.readyState") != "complete" and time.monotonic() < deadline:
            time.sleep(0.02)

    def url(self):
        return self.call("GET", "/url")

    def run(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def run_async(self, script, *args):
        return self.call("POST", "/execute/async", {"script": script, "args": list(args)})

    def cdp(self, cmd, params):
        """A Chrome DevTools Protocol command through chromedriver's own endpoint."""
        return self.call("POST", "/goog/cdp/execute", {"cmd": cmd, "params": params})

    def find(self, css):
        v = self.call("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(v.values()))  # {"element-6066-...": ID}

    def type(self, element, text):
        self.call("POST", "/element/%s/value" % element, {"text": text})

    def click(self, element):
        self.call("POST", "/element/%s/click" % element, {})

    def log_in(self, base, token):
        """The login form, as a person fills it; True once the server let us in."""
        self.goto(base + "/login", complete=True)
        self.type(self.find("input[name=token]"), token)
        self.click(self.find("button[type=submit]"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "/login" not in self.url() and self.run("return document.readyState") == "complete":
                return True
            time.sleep(0.05)
        return False


# Run right after DOMContentLoaded (pageLoadStrategy "eager"): waits for the load event, notes the
# images inside the window then, switches the grid's loading="lazy" images outside it to eager (as
# if the person scrolled through the page at once) and waits until every <img> is complete (decoded,
# naturalWidth > 0, or its load failed). An image's time: when this script saw it complete, or, when
# it was complete at the first look, its response's end (resource timing). Times in ms from the
# navigation's start.
PAGE_SCRIPT = """var done = arguments[arguments.length - 1], limit = arguments[0], begun = performance.now();
function nav() { return performance.getEntriesByType('navigation')[0] || {}; }
function inView(i) { var r = i.getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth; }
var imgs = [], seen = [], shown = [], eager = null, first = true;
function ended(i) { var e = performance.getEntriesByName(i.currentSrc || i.src, 'resource')[0];
  return e ? e.responseEnd : null; }
function latest(list) { var t = list.length ? 0 : null; for (var k = 0; k < list.length; k++) {
  if (seen[list[k]] === null) return null; t = Math.max(t, seen[list[k]]); } return t; }
function finish(n, timedOut) {
  var idx = imgs.map(function (_, k) { return k; });
  done({http_status: n.responseStatus || null, response_end_ms: n.responseEnd, dom_ms: n.domContentLoadedEventEnd,
        load_ms: n.loadEventEnd, transfer_bytes: n.transferSize || null, title: document.title,
        text: (document.body ? document.body.innerText : '').slice(0, 400), timed_out: timedOut,
        images: imgs.length, images_in_window: shown.length, eager_at_ms: eager,
        visible_ms: latest(shown), all_ms: latest(idx),
        images_pending: imgs.filter(function (i) { return !i.complete; }).length,
        images_decoded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
        images_failed: imgs.filter(function (i) { return i.complete && i.naturalWidth === 0; }).length});
}
function check() {
  var now = performance.now(), n = nav();
  if (now - begun > limit) return finish(n, true);
  if (eager === null) {
    if (document.readyState !== 'complete' || !(n.loadEventEnd > 0)) return setTimeout(check, 5);
    imgs = Array.prototype.slice.call(document.images);
    shown = []; imgs.forEach(function (i, k) { seen.push(null); if (inView(i)) shown.push(k); });
    eager = now;
    imgs.forEach(function (i) { if (i.loading === 'lazy') i.loading = 'eager'; });
  }
  var pending = 0;
  imgs.forEach(function (i, k) { if (seen[k] !== null) return;
    if (i.complete) seen[k] = first ? (ended(i) || now) : now; else pending++; });
  first = false;
  if (pending === 0) return finish(n, false);
  setTimeout(check, 5);
}
check();"""


def _browser_load(driver, base, path, timeout, expect_images=None, then=None):
    """A fresh browser (empty HTTP cache) logs in (untimed), then opens
    `path`: returns (Outcome, fields). wall_s: from the navigation's start to
    the load event's end or to the last image complete, whichever is later.
    `then(browser, fields)`: more pages in the same browser, after it."""
    out, fields = Outcome(), dict(client="chromium", window="%dx%d" % WEBUI_WINDOW, fresh_profile=True)
    try:
        with driver.session(timeout) as b:
            fields["browser_version"] = b.version
            if not b.log_in(base, WEBUI_TOKEN):
                out.ok, out.error = False, "the login form did not let the browser in: %s" % b.run(
                    "return document.body.innerText").strip()[:300]
                return out, fields
            _browser_page(b, base + path, timeout, out, fields, expect_images)
            if then and out.ok:
                then(b, fields)
    except _WebDriverError as e:
        out.ok, out.error = False, "WebDriver: %s" % e
        out.timed_out = "timeout" in str(e)
    return out, fields


def _browser_page(b, url, timeout, out, fields, expect_images=None):
    """Opens `url` in browser `b` and fills `out` and `fields`."""
    b.goto(url)
    got = b.run_async(PAGE_SCRIPT, min(timeout, WEBUI_IMAGES_WAIT_S) * 1000)
    f = {k: v for k, v in got.items() if k not in ("text", "title", "timed_out")}
    if got.get("http_status") not in (None, 200):
        out.ok, out.error = False, "%s: HTTP %s: %s" % (url, got.get("http_status"),
                                                       " ".join((got.get("text") or "").split())[:300])
    elif got.get("timed_out"):
        out.ok, out.timed_out = False, True
        out.error = "%s: after %ss: load event %s, %d of %d images still loading" % (
            url, WEBUI_IMAGES_WAIT_S, "over" if got.get("load_ms") else "not yet", got.get("images_pending") or 0,
            got.get("images") or 0)
    elif got.get("images_failed"):
        out.ok, out.error = False, "%d of %d images failed to load" % (got["images_failed"], got["images"])
    elif expect_images is not None and got.get("images") != expect_images:
        out.ok, out.error = False, "the page shows %d images, expected %d" % (got.get("images"), expect_images)
    out.wall_s = max(got.get("load_ms") or 0, got.get("all_ms") or 0) / 1000
    fields.update({k: (round(v, 1) if isinstance(v, float) else v) for k, v in f.items()})


def _small_photo(path, seed):
    """A JPEG of WEBUI_SMALL_W x WEBUI_SMALL_H: random colours upscaled from 16x12, distinct bytes per seed."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    tmp = path + ".tmp"
    Image.fromarray(small).resize((WEBUI_SMALL_W, WEBUI_SMALL_H), Image.BICUBIC).save(tmp, "JPEG", quality=85)
    os.replace(tmp, path)


def _webui_photos(cache, count):
    """`count` small photos in `cache` (outside the run's scratch space), made once and reused."""
    os.makedirs(cache, exist_ok=True)
    paths, made = [], 0
    for i in range(count):
        path = os.path.join(cache, "photo-%05d.jpg" % i)
        if not (os.path.exists(path) and os.path.getsize(path) > 0):
            if made == 0:
                print("webui: making photos of %dx%d in %s (once; later runs reuse them)" % (
                    WEBUI_SMALL_W, WEBUI_SMALL_H, cache), flush=True)
            _small_photo(path, seed=48_000 + i)
            made += 1
        paths.append(path)
    return paths, made


def _link_into(paths, folder):
    os.makedirs(folder, exist_ok=True)
    for src in paths:  # hard links: the work tree costs no disk
        dest = os.path.join(folder, os.path.basename(src))
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)


def _rev_parse(ctx, dmv, cwd, rev):
    out = run_cmds([Cmd([dmv.path, "rev-parse", rev], cwd=cwd, stdout="capture")], ctx.rec.env, 120)
    m = HEX64.search(out.captured) if out.ok else None
    return m.group(0).decode() if m else None


def _clear_web_cache(repo):
    shutil.rmtree(os.path.join(repo, ".dmv", "web-cache"), ignore_errors=True)


def _webui_config(repos):
    lines = ["access_log = true", "[repos]"] + ["%s = %s" % (k, json.dumps(v)) for k, v in repos.items()]
    lines += ["[tokens]", "%s = { access = \"write\", user = %s }" % (json.dumps(WEBUI_TOKEN), json.dumps(WEBUI_USER))]
    return "\n".join(lines) + "\n"


def webui(ctx, folder_photos, commit_photos, paths, upload_size):
    """Issue 48's web UI, second round: server time (Python's GETs with a bearer token) and
    load time in headless Chromium (WebDriver) of (1) a folder of `folder_photos` photos
    (`webui-folder`), (2) the commit adding `commit_photos` of them (`webui-commit`), (3) a
    search over `paths` paths (`webui-search`), (4) the compare page of two 24-megapixel JPEGs
    (`webui-compare`), thumbnails cold then warm; (5) the upload of a file of `upload_size`
    bytes from the browser against `dmv push` of it over HTTP (`webui-upload`)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    commit_photos = min(commit_photos, folder_photos)
    exps = [("webui-folder", folder_photos), ("webui-commit", commit_photos), ("webui-search", paths),
            ("webui-compare", PHOTO_W * PHOTO_H), ("webui-upload", upload_size)]

    def fail_all(status, why, which=exps):
        for exp, param in which:
            ctx.rec.note("dmv", exp, str(param), "all", status, why)
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as e:
        fail_all("fail", "cannot make the photos: %s (pip install pillow numpy)" % e)
        return
    need = 3 * upload_size + 4 * GiB  # the file, the local repository, the two servers' copies, the photos
    if free_bytes(ctx.workdir) < need:
        fail_all("skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    small, made = _webui_photos(os.path.join(ctx.args.workdir, "webui-photos"), folder_photos)
    big, big_made = _web_photos(os.path.join(ctx.args.workdir, "web-photos"), 2)
    setup = dict(photo_px="%dx%d" % (WEBUI_SMALL_W, WEBUI_SMALL_H), photos_made=made,
                 photo_bytes_mean=round(sum(os.path.getsize(p) for p in small) / max(1, len(small))))
    pt = ctx.point("webui", folder_photos)
    ptp = ctx.point("webui-paths", paths)
    try:
        hub = _webui_hub(ctx, dmv, pt, small, commit_photos, big, setup)
        searched = _webui_paths(ctx, dmv, ptp, paths)
        up, pushed = os.path.join(pt.root, "up"), os.path.join(pt.root, "pushed")
        for bare in (up, pushed):
            run_cmds([Cmd([dmv.path, "init", "--bare", bare], cwd=pt.root)], ctx.rec.env, 120)
        repos = {WEBUI_REPO: pt.work, WEBUI_PATHS_REPO: ptp.work, WEBUI_UP_REPO: up, WEBUI_PUSH_REPO: pushed}
        config = _webui_config(repos)
        try:
            with _Chromedriver() as driver, \
                    _WebServer(dmv, os.path.join(pt.root, "server"), ctx.rec.env, pt.work, config) as srv:
                print("webui: dmv serve on 127.0.0.1:%d, chromedriver on %d" % (srv.port, driver.port), flush=True)
                if hub:
                    _webui_folder(ctx, dmv, srv, driver, pt, folder_photos, setup)
                    _webui_commit(ctx, dmv, srv, driver, pt, commit_photos, hub, setup)
                    _webui_compare(ctx, dmv, srv, driver, pt, hub, big_made)
                if searched:
                    _webui_search_server(ctx, dmv, srv, paths)
                _webui_upload(ctx, dmv, srv, driver, pt, up, pushed, upload_size)
            if searched:  # the browser's first search on a fresh server: no paths kept yet
                with _Chromedriver() as driver, \
                        _WebServer(dmv, os.path.join(pt.root, "server2"), ctx.rec.env, pt.work, config) as srv:
                    _webui_search_browser(ctx, dmv, srv, driver, paths)
        except (servers.ServerError, _WebDriverError) as e:
            print("webui: %s" % e, flush=True)
            fail_all("fail", str(e))
    finally:
        shutil.rmtree(ptp.root, ignore_errors=True)
        shutil.rmtree(pt.root, ignore_errors=True)  # the photos stay in the workdir for the next run


def _webui_hub(ctx, dmv, pt, small, commit_photos, big, setup):
    """The hub's history: photos/ with all but `commit_photos` of the small photos, then a commit
    adding the last `commit_photos`, then photo.jpg (24 MP), then photo.jpg replaced by another
    24 MP photo. Returns the ids {added, before, after} or None (recorded)."""
    folder, param_f, param_c = os.path.join(pt.work, WEBUI_FOLDER), str(len(small)), str(commit_photos)
    param_cmp = str(PHOTO_W * PHOTO_H)
    base = small[:len(small) - commit_photos]
    _link_into(base, folder)
    if not _run_tool_steps(ctx, Skips(ctx, "webui-folder"), dmv, pt, "webui-folder", param_f, [
            S("setup_init", lambda: dmv.init(pt), fatal=True),
            S("setup_commit_base", lambda: [dmv.cmd(pt, "add", "."), dmv.cmd(pt, "commit", "-q", "-m",
                                                                                "%d photos" % len(base))],
              fatal=True),
            Prep(lambda: _link_into(small[len(base):], folder)),
            S("setup_commit_added", lambda: [dmv.cmd(pt, "add", "."), dmv.cmd(pt, "commit", "-q", "-m",
                                                                                 "%d more photos" % commit_photos)],
              fatal=True)]):
        ctx.rec.note("dmv", "webui-commit", param_c, "all", "fail", "the photos' commits failed")
        ctx.rec.note("dmv", "webui-compare", param_cmp, "all", "fail", "the photos' commits failed")
        return None
    photo = os.path.join(pt.work, "photo.jpg")

    def put(src):
        if os.path.exists(photo):
            os.remove(photo)
        shutil.copyfile(src, photo)
    if not _run_tool_steps(ctx, Skips(ctx, "webui-compare"), dmv, pt, "webui-compare", param_cmp, [
            Prep(lambda: put(big[0])),
            S("setup_commit_before", lambda: [dmv.cmd(pt, "add", "photo.jpg"),
                                              dmv.cmd(pt, "commit", "-q", "-m", "photo")], fatal=True),
            Prep(lambda: put(big[1])),
            S("setup_commit_after", lambda: [dmv.cmd(pt, "add", "photo.jpg"),
                                             dmv.cmd(pt, "commit", "-q", "-m", "photo, again")], fatal=True)]):
        return None
    ids = dict(added=_rev_parse(ctx, dmv, pt.work, "main~2"), before=_rev_parse(ctx, dmv, pt.work, "main~1:photo.jpg"),
               after=_rev_parse(ctx, dmv, pt.work, "main:photo.jpg"))
    setup["big_photo_bytes"] = [os.path.getsize(p) for p in big]
    if not all(ids.values()):
        ctx.rec.note("dmv", "webui-commit", param_c, "all", "fail", "rev-parse gave no id: %s" % ids)
        return None
    return ids


def _webui_paths(ctx, dmv, pt, count):
    """`count` empty files pNNN/qNN/img_NNNNNNN.txt (WEBUI_PATHS_PER_FOLDER a folder), committed;
    True when committed."""
    print("webui: writing %s empty files" % "{:,}".format(count), flush=True)
    t0 = time.perf_counter()
    for i in range(count):
        d = os.path.join(pt.work, "p%03d" % (i // (WEBUI_PATHS_PER_FOLDER * 10)),
                         "q%02d" % (i // WEBUI_PATHS_PER_FOLDER % 10))
        if i % WEBUI_PATHS_PER_FOLDER == 0:
            os.makedirs(d, exist_ok=True)
        os.close(os.open(os.path.join(d, "img_%07d.txt" % i), os.O_CREAT | os.O_WRONLY, 0o644))
    written = time.perf_counter() - t0
    return _run_tool_steps(ctx, Skips(ctx, "webui-search"), dmv, pt, "webui-search", str(count), [
        S("setup_init", lambda: dmv.init(pt), fatal=True),
        S("setup_commit", lambda: [dmv.cmd(pt, "add", "."), dmv.cmd(pt, "commit", "-q", "-m", "paths")], fatal=True,
          after=lambda out: dict(paths=count, files_written_s=round(written, 3)))])


def _webui_server_pages(ctx, dmv, srv, pt, experiment, param, page, expect, edge, data, check_edge=True):
    """Python's GETs of `page` and its images over WEB_CONNECTIONS connections: cold (web-cache
    removed) then warm. Steps server_cold, server_warm."""
    for step in ("server_cold", "server_warm"):
        if step == "server_cold":
            _clear_web_cache(pt.work)
        os.sync()
        out, fields, thumbs = _browse_commit(srv, page, ctx.rec.timeout, token=WEBUI_TOKEN, images=UI_IMG_SRC)
        fields.update(server_peak_rss_kib=srv.peak_rss_kib(), connections=WEB_CONNECTIONS, url=page,
                      **_web_cache_usage(pt.work))
        _check_thumbs(out, fields, thumbs, expect, edge=edge, page=page)
        ctx.rec.record(dmv, experiment, param, step, out, None, peak_rss_kib=None, **dict(data, **fields))


def _webui_browser_pages(ctx, dmv, srv, driver, pt, experiment, param, page, expect, data):
    """Chromium, a fresh profile each time: cold (web-cache removed) then warm (the server's
    cache as the cold load left it). Steps browser_cold, browser_warm."""
    base = "http://127.0.0.1:%d" % srv.port
    for step in ("browser_cold", "browser_warm"):
        if step == "browser_cold":
            _clear_web_cache(pt.work)
        os.sync()
        since = len(srv.lines)
        out, fields = _browser_load(driver, base, page, ctx.rec.timeout, expect_images=expect)
        fields.update(url=page, server_peak_rss_kib=srv.peak_rss_kib(), **_web_cache_usage(pt.work))
        fields["server_requests"] = sum(1 for l in srv.lines[since:] if ACCESS.search(l))
        if not out.ok:
            bad = [l for l in srv.lines[since:] if " 200 " not in l and "dmv serve:" in l][:3]
            if bad:
                out.error = "%s; server: %s" % (out.error, " / ".join(bad))
        ctx.rec.record(dmv, experiment, param, step, out, None, peak_rss_kib=None, **dict(data, **fields))


def _webui_html(ctx, dmv, srv, experiment, param, step, page, must, data):
    """One GET of a page's HTML alone (server time), its body checked for `must`."""
    os.sync()
    out, body = _web_page(srv, page, ctx.rec.timeout, token=WEBUI_TOKEN)
    if out.ok and must and must.encode() not in body:
        out.ok, out.error = False, "%s does not show %r: %s" % (page, must, body[:200].decode("utf-8", "replace"))
    ctx.rec.record(dmv, experiment, param, step, out, None, peak_rss_kib=None, url=page, page_bytes=len(body),
                   images_on_page=len(set(UI_IMG_SRC.findall(body))), server_peak_rss_kib=srv.peak_rss_kib(), **data)


def _webui_folder(ctx, dmv, srv, driver, pt, n, setup):
    param, here = str(n), "/%s/tree/main/%s/" % (WEBUI_REPO, WEBUI_FOLDER)
    shown = min(n, WEBUI_PER_PAGE)
    data = dict(setup, photos=n, per_page=WEBUI_PER_PAGE)
    _webui_server_pages(ctx, dmv, srv, pt, "webui-folder", param, here, shown, WEB_THUMB_EDGE, data)
    _webui_browser_pages(ctx, dmv, srv, driver, pt, "webui-folder", param, here, shown, data)
    # the HTML alone: the first page, the last page (after the name before its first entry), the list view
    last_after = "photo-%05d.jpg" % (((n - 1) // WEBUI_PER_PAGE) * WEBUI_PER_PAGE - 1) if n > WEBUI_PER_PAGE else None
    _webui_html(ctx, dmv, srv, "webui-folder", param, "html_first_page", here, "photo-00000.jpg", data)
    if last_after:
        _webui_html(ctx, dmv, srv, "webui-folder", param, "html_last_page", here + "?view=grid&after=" + last_after,
                    "photo-%05d.jpg" % (n - 1), data)
    _webui_html(ctx, dmv, srv, "webui-folder", param, "html_list_view", here + "?view=list", "photo-00000.jpg", data)


def _webui_commit(ctx, dmv, srv, driver, pt, n, ids, setup):
    param, page = str(n), "/%s/commit/%s" % (WEBUI_REPO, ids["added"])
    shown = min(n, WEBUI_PER_PAGE)
    data = dict(setup, photos_added=n, per_page=WEBUI_PER_PAGE, commit=ids["added"])
    _webui_server_pages(ctx, dmv, srv, pt, "webui-commit", param, page, shown, WEB_THUMB_EDGE, data)
    _webui_browser_pages(ctx, dmv, srv, driver, pt, "webui-commit", param, page, shown, data)
    _webui_html(ctx, dmv, srv, "webui-commit", param, "html_first_page", page, "/thumb/", data)
    if n > WEBUI_PER_PAGE:
        skip = ((n - 1) // WEBUI_PER_PAGE) * WEBUI_PER_PAGE
        _webui_html(ctx, dmv, srv, "webui-commit", param, "html_last_page", "%s?skip=%d" % (page, skip), "/thumb/",
                    data)


def _webui_compare(ctx, dmv, srv, driver, pt, ids, made):
    param = str(PHOTO_W * PHOTO_H)
    page = "/%s/compare/%s/%s?name=photo.jpg" % (WEBUI_REPO, ids["before"], ids["after"])
    data = dict(photo_px="%dx%d" % (PHOTO_W, PHOTO_H), before=ids["before"], after=ids["after"], photos_made=made)
    # two previews, each shown twice on the page (side by side, and over each other): 4 <img>, 2 URLs
    _webui_server_pages(ctx, dmv, srv, pt, "webui-compare", param, page, 2, 1600, data)
    _webui_browser_pages(ctx, dmv, srv, driver, pt, "webui-compare", param, page, 4, data)


def _search_url(q):
    return "/%s/search?q=%s&rev=main" % (WEBUI_PATHS_REPO, q)


def _search_hits(body):
    return body.count(('<li><a href="/%s/file/' % WEBUI_PATHS_REPO).encode())


def _webui_search_server(ctx, dmv, srv, n):
    """The first search on a server that has searched nothing (it reads every path of the tree),
    the same with more letters (the paths kept in memory), and the first again."""
    param = str(n)
    for step, q in (("server_first", WEBUI_QUERIES[0]), ("server_more", WEBUI_QUERIES[1]),
                    ("server_first_again", WEBUI_QUERIES[0])):
        os.sync()
        before = dict(server_peak_rss_before_kib=srv.peak_rss_kib(), server_rss_before_kib=_vm_rss_kib(srv.proc.pid))
        out, body = _web_page(srv, _search_url(q), ctx.rec.timeout, token=WEBUI_TOKEN)
        hits = _search_hits(body)
        if out.ok and not hits:
            out.ok, out.error = False, "no hit for %r: %s" % (q, body[-300:].decode("utf-8", "replace"))
        ctx.rec.record(dmv, "webui-search", param, step, out, None, peak_rss_kib=None, query=q, hits_shown=hits,
                       page_bytes=len(body), paths=n, server_peak_rss_kib=srv.peak_rss_kib(),
                       server_rss_kib=_vm_rss_kib(srv.proc.pid), **before)


def _vm_rss_kib(pid):
    """Resident memory (VmRSS) of a live process now, in KiB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        return None


def _webui_search_browser(ctx, dmv, srv, driver, n):
    """In a fresh browser on a fresh server: the first search, then the one with more letters."""
    param, base = str(n), "http://127.0.0.1:%d" % srv.port
    more = {}

    def then(b, fields):
        out = Outcome()
        try:
            _browser_page(b, base + _search_url(WEBUI_QUERIES[1]), ctx.rec.timeout, out, more)
        except _WebDriverError as e:
            out.ok, out.error = False, "WebDriver: %s" % e
        more["out"] = out
    os.sync()
    out, fields = _browser_load(driver, base, _search_url(WEBUI_QUERIES[0]), ctx.rec.timeout, then=then)
    ctx.rec.record(dmv, "webui-search", param, "browser_first", out, None, peak_rss_kib=None, query=WEBUI_QUERIES[0],
                   paths=n, server_peak_rss_kib=srv.peak_rss_kib(), **fields)
    second = more.pop("out", None)
    if second is None:
        ctx.rec.note("dmv", "webui-search", param, "browser_more", "fail", "the first search failed: %s" % out.error)
    else:
        ctx.rec.record(dmv, "webui-search", param, "browser_more", second, None, peak_rss_kib=None,
                       query=WEBUI_QUERIES[1], paths=n, client="chromium", fresh_profile=False, **more)


def _webui_upload(ctx, dmv, srv, driver, pt, up, pushed, size):
    """A file of `size` random bytes: committed locally (for reference), uploaded from the
    browser's upload page into the bare `up` (timed from the click on the submit button to the
    commit page's URL) and pushed with `dmv push` over HTTP into the bare `pushed`; then the
    three repositories' ids of the file compared (untimed)."""
    param = str(size)
    src = os.path.join(pt.root, "upsrc")
    lpt = Point(src)
    os.makedirs(lpt.work)
    path = os.path.join(lpt.work, WEBUI_UPLOAD_NAME)
    print("webui: writing a file of %s" % human_bytes(size), flush=True)
    digest = datagen.write_random_file(path, size, seed=48)
    data = dict(data_bytes=size, file=WEBUI_UPLOAD_NAME)
    if not _run_tool_steps(ctx, Skips(ctx, "webui-upload"), dmv, lpt, "webui-upload", param, [
            S("setup_init", lambda: dmv.init(lpt), fatal=True),
            S("commit_local", lambda: [dmv.cmd(lpt, "add", WEBUI_UPLOAD_NAME),
                                       dmv.cmd(lpt, "commit", "-q", "-m", "upload")], fatal=True)]):
        return
    local_id = _rev_parse(ctx, dmv, lpt.work, "main:" + WEBUI_UPLOAD_NAME)
    base = "http://127.0.0.1:%d" % srv.port
    # the browser
    os.sync()
    out, fields = Outcome(), dict(client="chromium", fresh_profile=True)
    since = len(srv.lines)
    try:
        with driver.session(ctx.rec.timeout) as b:
            fields["browser_version"] = b.version
            if not b.log_in(base, WEBUI_TOKEN):
                raise _WebDriverError("the login form did not let the browser in")
            b.goto("%s/%s/upload/main/" % (base, WEBUI_UP_REPO), complete=True)
            b.type(b.find("#files"), path)
            b.type(b.find("#message"), "upload of %s from the browser" % human_bytes(size))
            button = b.find("#upload button[type=submit]")
            prefix = "/%s/commit/" % WEBUI_UP_REPO
            deadline = time.monotonic() + ctx.rec.timeout
            clicked_epoch, clicked = time.time(), time.monotonic()
            start = time.perf_counter()
            b.click(button)
            last_status, checked = "", time.monotonic()
            while True:
                now_url = b.url()
                if urlsplit_path(now_url).startswith(prefix):
                    out.wall_s = time.perf_counter() - start
                    break
                if time.monotonic() - checked > 1:  # the page says why it stopped: the button is enabled again
                    checked = time.monotonic()
                    st = b.run("var s=document.getElementById('status'),b=document.querySelector("
                               "'#upload button[type=submit]');return s?[s.textContent,b?b.disabled:null]:null;")
                    if st:
                        last_status = st[0]
                        if st[1] is False and st[0] not in ("", "Uploading…", "Committing…"):
                            out.wall_s = time.perf_counter() - start
                            out.ok, out.error = False, "the upload page says: %s" % st[0][:400]
                            break
                if time.monotonic() > deadline:
                    out.wall_s = time.perf_counter() - start
                    out.ok, out.timed_out = False, True
                    out.error = "timeout after %ss; the page says: %s" % (ctx.rec.timeout, last_status[:300])
                    break
                time.sleep(WEBUI_POLL_S)
            if out.ok:
                origin = b.run("return performance.timeOrigin;")
                fields["commit_page_navigation_after_click_s"] = round(origin / 1000 - clicked_epoch, 3)
                fields["commit_url"] = now_url
    except _WebDriverError as e:
        out.ok, out.error = False, "WebDriver: %s" % e
    fields["server_requests"] = len(srv.lines) - since
    fields["server_put_requests"] = sum(1 for l in srv.lines[since:] if "dmv serve: PUT " in l)
    if out.ok:  # where the time went, from when the server's access-log lines were read (after each answer)
        at = {}
        for i in range(since, len(srv.lines)):
            line = srv.lines[i]
            if "dmv serve: PUT /%s/uploads/" % WEBUI_UP_REPO in line:
                at.setdefault("first_piece_done_s", srv.times[i] - clicked)
                at["last_piece_done_s"] = srv.times[i] - clicked
            elif "dmv serve: POST /%s/commit-uploads " % WEBUI_UP_REPO in line:
                at["committed_s"] = srv.times[i] - clicked
        fields.update({k: round(v, 3) for k, v in at.items()})
        if "committed_s" in at and "last_piece_done_s" in at:
            fields["server_commit_s"] = round(at["committed_s"] - at["last_piece_done_s"], 3)
    bad = [l for l in srv.lines[since:] if "dmv serve:" in l and not re.search(r" (200|201|204|303) ", l)]
    if bad:
        fields["server_errors"] = bad[:5]
        if not out.ok:
            out.error = "%s; server: %s" % (out.error, " / ".join(bad[:3]))
    up_id = _rev_parse(ctx, dmv, up, "main:" + WEBUI_UPLOAD_NAME) if out.ok else None
    if out.ok and up_id != local_id:
        out.ok, out.error = False, "the uploaded file's id %s differs from the local commit's %s" % (up_id, local_id)
    fields["verified"] = out.ok
    mib = size / (1 << 20)
    ctx.rec.record(dmv, "webui-upload", param, "browser_upload", out, None, peak_rss_kib=None,
                   mib_per_s=round(mib / out.wall_s, 2) if out.ok and out.wall_s else None,
                   server_peak_rss_kib=srv.peak_rss_kib(), **dict(data, **fields))
    # dmv push of the same commit over HTTP
    remote = "%s/%s" % (base, WEBUI_PUSH_REPO)

    def check(o):
        got = _rev_parse(ctx, dmv, pushed, "main:" + WEBUI_UPLOAD_NAME) if o.ok else None
        if o.ok and got != local_id:
            o.ok, o.error = False, "the pushed file's id %s differs from the local commit's %s" % (got, local_id)
        return dict(data, verified=o.ok, mib_per_s=round(mib / o.wall_s, 2) if o.ok and o.wall_s else None,
                    server_peak_rss_kib=srv.peak_rss_kib(), source_sha1=digest)
    os.sync()
    ctx.rec.step(dmv, "webui-upload", param, "push_http",
                 [dmv.cmd(lpt, "push", "-q", remote, "main", env={"DMV_TOKEN": WEBUI_TOKEN})], None, after=check)


def urlsplit_path(url):
    import urllib.parse
    return urllib.parse.urlsplit(url or "").path


# ---------------------------------------------------------------- web UI, third round (experiment `wall`, issue 69)

WALL_EXP = "webui-wall"
# (label, CSS width, CSS height, phone): a phone through Chrome's mobile emulation (as crates/dmv-cli/tests/web.rs's
# sized_browser), a desktop window
WALL_SIZES = (("390", 390, 844, True), ("1440", 1440, 900, False))
WALL_UIS = ("new", "old")                 # the UI of the dmv measured, and the previous one's (--wall-before)
WALL_IMG = {"new": "#photos .wall a.ph img", "old": "ul.grid img"}   # a folder's photos, in each UI
WALL_PER_PAGE = {"new": 240, "old": 200}  # photos of a folder's first page, in each UI (dmv-web)
WALL_PRESSES = 20                         # ArrowRight presses in the lightbox
WALL_SETTLE_MS = 1000                     # after the full viewport: no new request for this long ends the load
WALL_WAIT_S = 120                         # a viewport not full by then: the load fails
WALL_CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--hide-scrollbars", "--window-size=1440,900"]

# Added to every document before its own scripts (CDP Page.addScriptToEvaluateOnNewDocument): a resource
# timing buffer large enough for a wall's requests, and each <img>'s times, from the navigation's start:
# its load event (`__loaded`), then img.decode() resolved (`__decoded`: the photo can be painted), or its
# error event (`__failed`).
WALL_INIT = """(function () {
  try { performance.setResourceTimingBufferSize(100000); } catch (e) {}
  document.addEventListener('load', function (e) {
    var i = e.target; if (!i || i.tagName !== 'IMG' || i.__loaded != null) return;
    i.__loaded = performance.now();
    (i.decode ? i.decode() : Promise.resolve()).then(function () {
      if (i.__decoded == null) i.__decoded = performance.now(); }, function () { i.__failed = true; });
  }, true);
  document.addEventListener('error', function (e) {
    if (e.target && e.target.tagName === 'IMG') e.target.__failed = true; }, true);
})();"""

# Run right after DOMContentLoaded (pageLoadStrategy "eager"). The first photo: the earliest `__decoded` of
# the folder's <img>; the full viewport: once every photo <img> intersecting the viewport has been decoded,
# the latest of their `__decoded` (the set is taken when it is complete, after the HTML is parsed). Then
# waits for the load event and WALL_SETTLE_MS without a new resource entry, and sums Resource Timing's sizes
# (the navigation's own, and the resources' up to the full viewport and up to then). Times in ms.
WALL_SCRIPT = """var done = arguments[arguments.length - 1], sel = arguments[0], limit = arguments[1],
    settle = arguments[2], begun = performance.now();
function nav() { return performance.getEntriesByType('navigation')[0] || {}; }
function inView(i) { var r = i.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth; }
var lcp = null;
try { new PerformanceObserver(function (l) { var e = l.getEntries(); if (e.length) lcp = e[e.length - 1].startTime; })
  .observe({type: 'largest-contentful-paint', buffered: true}); } catch (e) {}
var full = null, inview = 0, count = -1, quiet = null, fullAt = null;
function sizes(upTo) {
  var o = {requests: 0, transfer: 0, encoded: 0, decoded: 0, img_requests: 0, img_transfer: 0, img_encoded: 0};
  performance.getEntriesByType('resource').forEach(function (e) {
    if (upTo !== null && e.responseEnd > upTo) return;
    o.requests++; o.transfer += e.transferSize || 0; o.encoded += e.encodedBodySize || 0;
    o.decoded += e.decodedBodySize || 0;
    if (e.initiatorType === 'img') { o.img_requests++; o.img_transfer += e.transferSize || 0;
      o.img_encoded += e.encodedBodySize || 0; }
  });
  return o;
}
function finish(timedOut, error) {
  var n = nav(), imgs = Array.prototype.slice.call(document.querySelectorAll(sel)), first = null;
  imgs.forEach(function (i) { if (i.__decoded != null && (first === null || i.__decoded < first)) first = i.__decoded; });
  var fcp = performance.getEntriesByName('first-contentful-paint')[0];
  done({timed_out: timedOut, error: error || null, http_status: n.responseStatus || null,
        title: document.title, text: (document.body ? document.body.innerText : '').slice(0, 300),
        inner: [innerWidth, innerHeight], dpr: devicePixelRatio,
        sw: !!(navigator.serviceWorker && navigator.serviceWorker.controller),
        html_ms: n.responseEnd || null, dom_ms: n.domContentLoadedEventEnd || null, load_ms: n.loadEventEnd || null,
        fcp_ms: fcp ? fcp.startTime : null, lcp_ms: lcp, first_ms: first, viewport_ms: full,
        viewport_seen_ms: fullAt, images: imgs.length, images_in_view: inview,
        images_decoded: imgs.filter(function (i) { return i.__decoded != null; }).length,
        html_transfer: n.transferSize, html_encoded: n.encodedBodySize, html_decoded: n.decodedBodySize,
        to_viewport: full === null ? null : sizes(full), settled: sizes(null), settled_ms: performance.now()});
}
function check() {
  var now = performance.now();
  if (now - begun > limit) return finish(true);
  if (full === null) {
    var imgs = document.readyState === 'loading' ? [] : Array.prototype.slice.call(document.querySelectorAll(sel));
    var vis = imgs.filter(inView);
    if (!vis.length) return setTimeout(check, 5);
    var bad = vis.filter(function (i) { return i.__failed; });
    if (bad.length) return finish(false, bad.length + ' photos in the viewport failed to load: ' + bad[0].src);
    if (!vis.every(function (i) { return i.__decoded != null; })) return setTimeout(check, 5);
    full = Math.max.apply(null, vis.map(function (i) { return i.__decoded; }));
    inview = vis.length; fullAt = now;
  }
  var c = performance.getEntriesByType('resource').length;
  if (c !== count) { count = c; quiet = now; }
  if (document.readyState === 'complete' && nav().loadEventEnd > 0 && now - quiet >= settle) return finish(false);
  setTimeout(check, 20);
}
check();"""

# On a loaded wall: a click on its first photo (the lightbox opens), then `presses` times a keydown of
# ArrowRight dispatched on the document, each as soon as the photo before it is shown. A press's time: from
# the dispatch to the lightbox's <img> (its new preview) decoded (img.decode() resolved); the name the
# lightbox shows must be the next photo's. Times in ms.
LIGHTBOX_SCRIPT = """var done = arguments[arguments.length - 1], presses = arguments[0];
var box = document.getElementById('lightbox'), links = Array.prototype.slice.call(document.querySelectorAll('.wall a.ph'));
if (!box || links.length < presses + 1)
  return done({error: 'no lightbox (' + !!box + ') or too few photos (' + links.length + ')'});
var img = box.querySelector('.stage img'), name = box.querySelector('.name'), times = [], errors = [];
function shown(t0) { return img.decode().then(function () { return performance.now() - t0; }); }
var t0 = performance.now();
links[0].click();
shown(t0).then(function (open) {
  if (box.hidden) errors.push('the click did not open the lightbox');
  function step(k) {
    if (k >= presses) return done({open_ms: open, times: times, errors: errors, shown: name.textContent,
                                   preview: img.currentSrc, width: img.naturalWidth});
    var want = links[k + 1].dataset.name, t = performance.now();
    document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
    shown(t).then(function (ms) {
      if (name.textContent !== want) errors.push('press ' + (k + 1) + ' shows ' + name.textContent + ', not ' + want);
      if (!(img.naturalWidth > 0)) errors.push('press ' + (k + 1) + ': the preview has no pixels');
      times.push(ms); step(k + 1);
    }, function (e) { errors.push('press ' + (k + 1) + ': ' + e); times.push(null); step(k + 1); });
  }
  step(0);
}, function (e) { done({error: 'the first photo did not show: ' + e}); });"""


class _Binary:
    """A dmv binary other than the run's (the previous UI's), shaped as a tool for _WebServer."""

    def __init__(self, path):
        self.path, self.name = path, "dmv"


def _wall_options(width, height, phone):
    """Chrome's options for a viewport of exactly `width` x `height` CSS px: a phone's (device pixel ratio
    2, touch, mobile viewport) or a desktop's (ratio 1; the window alone would leave less than its height
    to the page)."""
    return {"args": list(WALL_CHROME_ARGS),
            "mobileEmulation": {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0 if phone else 1.0,
                                                  "mobile": phone, "touch": phone}}}


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if not n else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


def wall(ctx, photos, before, presses=WALL_PRESSES):
    """Issue 69: a folder of `photos` photos as the web UI shows it, in headless Chromium at a phone's size
    (390×844, mobile emulation) and a desktop's (1440×900), for the dmv measured (`new`) and for `before`,
    the previous UI's dmv binary (`old`, or noted as skipped): time to the first photo and to a full
    viewport of thumbnails, cold (a fresh server, its web cache removed, a fresh browser) and warm (the same
    browser again, and a fresh browser on the warm server); the bytes loaded; the lightbox's next-photo
    latency (`new` only), its previews cold and warm; the wall's HTML alone, cold and warm."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    param = str(photos)
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as e:
        ctx.rec.note("dmv", WALL_EXP, param, "all", "fail", "cannot make the photos: %s (pip install pillow numpy)" % e)
        return
    small, made = _webui_photos(os.path.join(ctx.args.workdir, "webui-photos"), photos)
    pt = ctx.point("wall", photos)
    setup = dict(photo_px="%dx%d" % (WEBUI_SMALL_W, WEBUI_SMALL_H), photos_made=made, photos=photos,
                 photo_bytes_mean=round(sum(os.path.getsize(p) for p in small) / max(1, len(small))))
    bins = {"new": dmv}
    if before and os.path.isfile(before):
        bins["old"] = _Binary(before)
        try:
            setup["old_version"] = subprocess.run([before, "--version"], capture_output=True, text=True,
                                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
        setup["old_binary"] = before
    try:
        _link_into(small, os.path.join(pt.work, WEBUI_FOLDER))
        if not _run_tool_steps(ctx, Skips(ctx, WALL_EXP), dmv, pt, WALL_EXP, param, [
                S("setup_init", lambda: dmv.init(pt), fatal=True),
                S("setup_commit", lambda: [dmv.cmd(pt, "add", "."),
                                           dmv.cmd(pt, "commit", "-q", "-m", "%d photos" % photos)], fatal=True)]):
            return
        config = _webui_config({WEBUI_REPO: pt.work})
        page = "/%s/tree/main/%s/" % (WEBUI_REPO, WEBUI_FOLDER)
        with _Chromedriver() as driver:
            for ui in WALL_UIS:
                if ui not in bins:
                    for label, _, _, _ in WALL_SIZES:
                        for step in ("cold", "warm", "fresh", "lightbox-cold", "lightbox-warm"):
                            ctx.rec.note("dmv", WALL_EXP, param, "%s-%s-%s" % (ui, label, step), "skipped",
                                         "no previous UI's binary given (--wall-before)")
                    continue
                _wall_html(ctx, dmv, bins[ui], pt, ui, param, page, config, setup)
                for label, width, height, phone in WALL_SIZES:
                    _wall_size(ctx, dmv, bins[ui], driver, pt, ui, param, page, config, setup,
                               label, _wall_options(width, height, phone), presses)
    except (servers.ServerError, _WebDriverError) as e:
        print("wall: %s" % e, flush=True)
        ctx.rec.note("dmv", WALL_EXP, param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)  # the photos stay in the workdir for the next run


def _wall_server(ctx, bin_, pt, name, config):
    """A fresh `dmv serve` of the folder's repository, its web cache removed first."""
    _clear_web_cache(pt.work)
    os.sync()
    return _WebServer(bin_, os.path.join(pt.root, name), ctx.rec.env, pt.work, config)


def _wall_html(ctx, dmv, bin_, pt, ui, param, page, config, setup):
    """The wall's HTML alone (Python's GET): on a fresh server (cold: what it reads to lay out the folder),
    then again (warm)."""
    with _wall_server(ctx, bin_, pt, "server-%s-html" % ui, config) as srv:
        for state in ("cold", "warm"):
            os.sync()
            out, body = _web_page(srv, page, ctx.rec.timeout, token=WEBUI_TOKEN)
            imgs = len(set(UI_IMG_SRC.findall(body)))
            if out.ok and not imgs:
                out.ok, out.error = False, "%s shows no photo: %s" % (page, body[:200].decode("utf-8", "replace"))
            ctx.rec.record(dmv, WALL_EXP, param, "%s-html-%s" % (ui, state), out, None, peak_rss_kib=None, ui=ui,
                           url=page, page_bytes=len(body), images_on_page=imgs,
                           server_peak_rss_kib=srv.peak_rss_kib(), server_rss_kib=_vm_rss_kib(srv.proc.pid),
                           **setup)


def _wall_browser(driver, srv, options, timeout):
    """A fresh browser with WALL_INIT on every document, logged in (untimed)."""
    b = driver.session(timeout, options)
    try:
        b.cdp("Page.addScriptToEvaluateOnNewDocument", {"source": WALL_INIT})
        if not b.log_in("http://127.0.0.1:%d" % srv.port, WEBUI_TOKEN):
            raise _WebDriverError("the login form did not let the browser in: %s" % b.run(
                "return document.body.innerText").strip()[:300])
    except BaseException:
        b.__exit__()
        raise
    return b


def _wall_load(ctx, dmv, srv, b, ui, param, step, page, label, fields, exp=WALL_EXP, sel=None, expect=None):
    """Opens the wall in browser `b` and records its times and bytes as `step` (of `exp`; another page's
    photos: `sel`, at least `expect` of them)."""
    out, f = Outcome(), dict(fields, ui=ui, window=label, url=page, presses=None)
    since = len(srv.lines)
    os.sync()
    try:
        b.goto("about:blank")
        b.goto("http://127.0.0.1:%d%s" % (srv.port, page))
        got = b.run_async(WALL_SCRIPT, sel or WALL_IMG[ui], min(ctx.rec.timeout, WALL_WAIT_S) * 1000, WALL_SETTLE_MS)
    except _WebDriverError as e:
        out.ok, out.error, out.timed_out = False, "WebDriver: %s" % e, "timeout" in str(e)
        ctx.rec.record(dmv, exp, param, step, out, None, peak_rss_kib=None, **f)
        return None
    if expect is None:
        expect = min(int(param), WALL_PER_PAGE[ui])
    if got.get("http_status") not in (None, 200):
        out.ok, out.error = False, "HTTP %s: %s" % (got.get("http_status"), " ".join((got.get("text") or "").split()))
    elif got.get("timed_out"):
        out.ok, out.timed_out = False, True
        out.error = "after %ss: %s of %s photos decoded, the viewport not full" % (
            WALL_WAIT_S, got.get("images_decoded"), got.get("images"))
    elif got.get("error"):
        out.ok, out.error = False, got["error"]
    elif got.get("images", 0) < expect:
        out.ok, out.error = False, "the wall shows %s photos, expected at least %d" % (got.get("images"), expect)
    out.wall_s = (got.get("viewport_ms") or 0) / 1000
    for k in ("text", "title", "timed_out", "error"):
        got.pop(k, None)
    f.update({k: (round(v, 1) if isinstance(v, float) else v) for k, v in got.items()})
    # what the server sent (its access log: status and Content-Length of each answer) for this load
    lines = [ACCESS.search(l) for l in srv.lines[since:]]
    lines = [m for m in lines if m]
    f["server_requests"] = len(lines)
    f["server_body_bytes"] = sum(int(m.group(3)) for m in lines if m.group(3).isdigit())
    f["server_not_ok"] = [m.group(0)[:120] for m in lines if m.group(2) not in ("200", "304")][:5]
    f["server_peak_rss_kib"] = srv.peak_rss_kib()
    f.update(_web_cache_usage(srv.repo))
    ctx.rec.record(dmv, exp, param, step, out, None, peak_rss_kib=None, **f)
    return got if out.ok else None


def _wall_lightbox(ctx, dmv, b, ui, param, step, label, presses, fields):
    out, f = Outcome(), dict(fields, ui=ui, window=label, presses=presses)
    try:
        got = b.run_async(LIGHTBOX_SCRIPT, presses) or {}
    except _WebDriverError as e:
        got = {"error": "WebDriver: %s" % e}
    times = [t for t in got.get("times") or [] if t is not None]
    if got.get("error"):
        out.ok, out.error = False, got["error"]
    elif got.get("errors"):
        out.ok, out.error = False, "; ".join(got["errors"][:3])
    elif len(times) != presses:
        out.ok, out.error = False, "%d of %d presses timed" % (len(times), presses)
    med = _median(times)
    out.wall_s = (med or 0) / 1000
    f.update(open_ms=got.get("open_ms") and round(got["open_ms"], 1), times_ms=[round(t, 1) for t in times],
             median_ms=med and round(med, 1), min_ms=times and round(min(times), 1),
             max_ms=times and round(max(times), 1), preview_width=got.get("width"), shown=got.get("shown"))
    ctx.rec.record(dmv, WALL_EXP, param, step, out, None, peak_rss_kib=None, **f)


def _wall_size(ctx, dmv, bin_, driver, pt, ui, param, page, config, setup, label, options, presses):
    """One UI at one window size: a fresh server; cold, warm (the same browser), the lightbox with its
    previews cold; then a fresh browser on the warm server, the lightbox with its previews warm."""
    fields = dict(setup, chrome_options=options)
    with _wall_server(ctx, bin_, pt, "server-%s-%s" % (ui, label), config) as srv:
        print("wall: %s UI at %s px: dmv serve on 127.0.0.1:%d" % (ui, label, srv.port), flush=True)
        b = _wall_browser(driver, srv, options, ctx.rec.timeout)
        with b:
            fields["browser_version"] = b.version
            _wall_load(ctx, dmv, srv, b, ui, param, "%s-%s-cold" % (ui, label), page, label,
                       dict(fields, fresh_profile=True, server_fresh=True))
            warm = _wall_load(ctx, dmv, srv, b, ui, param, "%s-%s-warm" % (ui, label), page, label,
                              dict(fields, fresh_profile=False, server_fresh=False))
            if ui == "new":
                if warm:
                    _wall_lightbox(ctx, dmv, b, ui, param, "%s-%s-lightbox-cold" % (ui, label), label, presses,
                                   fields)
                else:
                    ctx.rec.note("dmv", WALL_EXP, param, "%s-%s-lightbox-cold" % (ui, label), "fail",
                                 "the wall did not load")
        with _wall_browser(driver, srv, options, ctx.rec.timeout) as b:
            fresh = _wall_load(ctx, dmv, srv, b, ui, param, "%s-%s-fresh" % (ui, label), page, label,
                               dict(fields, fresh_profile=True, server_fresh=False))
            if ui == "new":
                if fresh:
                    _wall_lightbox(ctx, dmv, b, ui, param, "%s-%s-lightbox-warm" % (ui, label), label, presses,
                                   fields)
                else:
                    ctx.rec.note("dmv", WALL_EXP, param, "%s-%s-lightbox-warm" % (ui, label), "fail",
                                 "the wall did not load")
    if ui != "new":
        for state in ("cold", "warm"):
            ctx.rec.note("dmv", WALL_EXP, param, "%s-%s-lightbox-%s" % (ui, label, state), "n/a",
                         "the previous UI has no lightbox")




# ---------------------------------------------------------------- review page (issue 72)

REVIEW_EXP = "webui-review"
REVIEW_BRANCH, REVIEW_INTO = "shoot", "main"
REVIEW_PHOTOS, REVIEW_COMMENTS = 2000, 500   # the branch's photos (added), comments on them (one a photo)
REVIEW_IMG = "ul.changes .pair img"          # the review page's photos: each changed file's before and after
REVIEW_LISTED = 200                          # files the review page lists with their photos (dmv-web MOST_LISTED)
REVIEW_WARM_GETS = 5                         # warm GETs of the HTML; the median is recorded


def review_page(ctx, photos=REVIEW_PHOTOS, comments=REVIEW_COMMENTS):
    """Issue 72: the page of a review whose branch adds `photos` small photos, `comments` of them
    commented on (one comment each, at a point, made with `dmv comment add`): the server's time for its
    HTML (Python's GET: a fresh server process, cold; then again, warm), and headless Chromium's time to
    its first photo painted and to a full viewport of photos at a phone's size (390×844) and a desktop's
    (1440×900), cold (a fresh server, its web cache removed, a fresh browser) and warm (the same browser
    again). No peer: no other tool's review page of photos runs on this machine."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    param = str(photos)
    comments = min(comments, photos)
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as e:
        ctx.rec.note("dmv", REVIEW_EXP, param, "all", "fail", "cannot make the photos: %s (pip install pillow numpy)" % e)
        return
    small, made = _webui_photos(os.path.join(ctx.args.workdir, "webui-photos"), photos)
    pt = ctx.point("review", photos)
    setup = dict(photo_px="%dx%d" % (WEBUI_SMALL_W, WEBUI_SMALL_H), photos_made=made, photos=photos,
                 comments=comments, photo_bytes_mean=round(sum(os.path.getsize(p) for p in small) / max(1, len(small))))
    # one comment on every (photos / comments)-th photo, at a point that moves from photo to photo
    commented = sorted({i * photos // max(1, comments) for i in range(comments)})

    def comment_cmds():
        return [dmv.cmd(pt, "comment", "add", "%s/%s" % (WEBUI_FOLDER, os.path.basename(small[i])), "--at",
                        "%d,%d" % (37 * k % WEBUI_SMALL_W, 53 * k % WEBUI_SMALL_H), "-m",
                        "comment %d: the light on the left is too warm, lift the shadows a little" % k)
                for k, i in enumerate(commented)]
    try:
        with open(os.path.join(pt.work, "README.md"), "w") as f:
            f.write("The shoot's selects.\n")
        if not _run_tool_steps(ctx, Skips(ctx, REVIEW_EXP), dmv, pt, REVIEW_EXP, param, [
                S("setup_init", lambda: dmv.init(pt), fatal=True),
                S("setup_commit_main", lambda: [dmv.cmd(pt, "add", "."), dmv.cmd(pt, "commit", "-q", "-m", "readme")],
                  fatal=True),
                S("setup_branch", lambda: [dmv.cmd(pt, "switch", "-c", REVIEW_BRANCH)], fatal=True),
                Prep(lambda: _link_into(small, os.path.join(pt.work, WEBUI_FOLDER))),
                S("setup_commit_photos", lambda: [dmv.cmd(pt, "add", "."),
                                                  dmv.cmd(pt, "commit", "-q", "-m", "%d photos" % photos)], fatal=True),
                S("setup_review", lambda: [dmv.cmd(pt, "review", "create", REVIEW_BRANCH, "--into", REVIEW_INTO,
                                                   "-m", "The shoot's selects")], fatal=True),
                S("setup_comments", comment_cmds, fatal=True,
                  after=lambda out: dict(comments=len(commented), comment_add_mean_s=round(
                      out.wall_s / max(1, len(commented)), 4)))]):
            return
        listed = run_cmds([Cmd([dmv.path, "review", "list"], cwd=pt.work, stdout="capture")], ctx.rec.env, 120)
        m = re.search(rb"\b[0-9a-f]{8,64}\b", listed.captured or b"") if listed.ok else None
        if not m:
            ctx.rec.note("dmv", REVIEW_EXP, param, "all", "fail", "no review in `dmv review list`: %r" % (
                (listed.captured or b"")[:300]))
            return
        page = "/%s/review/%s" % (WEBUI_REPO, m.group(0).decode())
        config = _webui_config({WEBUI_REPO: pt.work})
        setup.update(url=page, files_listed=min(photos, REVIEW_LISTED))
        _review_html(ctx, dmv, pt, param, page, config, setup, small[commented[0]])
        with _Chromedriver() as driver:
            for label, width, height, phone in WALL_SIZES:
                options = _wall_options(width, height, phone)
                fields = dict(setup, chrome_options=options)
                with _wall_server(ctx, dmv, pt, "server-%s" % label, config) as srv:
                    print("review-page: %s px: dmv serve on 127.0.0.1:%d" % (label, srv.port), flush=True)
                    with _wall_browser(driver, srv, options, ctx.rec.timeout) as b:
                        fields["browser_version"] = b.version
                        for state in ("cold", "warm"):
                            _wall_load(ctx, dmv, srv, b, "new", param, "%s-%s" % (label, state), page, label,
                                       dict(fields, fresh_profile=state == "cold", server_fresh=state == "cold"),
                                       exp=REVIEW_EXP, sel=REVIEW_IMG, expect=min(photos, REVIEW_LISTED))
    except (servers.ServerError, _WebDriverError) as e:
        print("review-page: %s" % e, flush=True)
        ctx.rec.note("dmv", REVIEW_EXP, param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)  # the photos stay in the workdir for the next run


def _review_html(ctx, dmv, pt, param, page, config, setup, first_commented):
    """The review page's HTML alone (Python's GET): on a fresh server (cold), then REVIEW_WARM_GETS times
    again (warm: their median, each kept); then, warm, the pages it is compared with."""
    with _wall_server(ctx, dmv, pt, "server-html", config) as srv:
        os.sync()
        out, body = _web_page(srv, page, ctx.rec.timeout, token=WEBUI_TOKEN)
        facts = dict(page_bytes=len(body), images_on_page=len(set(UI_IMG_SRC.findall(body))),
                     comments_on_page=body.count(b'<li class="thread'))
        if out.ok and not facts["images_on_page"]:
            out.ok, out.error = False, "%s shows no photo: %s" % (page, body[:200].decode("utf-8", "replace"))
        ctx.rec.record(dmv, REVIEW_EXP, param, "html-cold", out, None, peak_rss_kib=None,
                       server_peak_rss_kib=srv.peak_rss_kib(), server_rss_kib=_vm_rss_kib(srv.proc.pid),
                       **dict(setup, **facts))
        times, warm = [], Outcome()
        for _ in range(REVIEW_WARM_GETS):
            o, body = _web_page(srv, page, ctx.rec.timeout, token=WEBUI_TOKEN)
            if not o.ok:
                warm = o
                break
            times.append(o.wall_s)
        if warm.ok:
            warm.wall_s = _median(times)
        ctx.rec.record(dmv, REVIEW_EXP, param, "html-warm", warm, None, peak_rss_kib=None,
                       times_ms=[round(t * 1000, 1) for t in times], server_peak_rss_kib=srv.peak_rss_kib(),
                       server_rss_kib=_vm_rss_kib(srv.proc.pid), **dict(setup, **facts))
        # For comparison, on the same warm server: pages that read the same review log and do less with it
        # (the list of reviews; a commented photo's page, its comments alone) and the commit page of the
        # branch's commit (its changed files without the log).
        for step, path in (("reviews-html-warm", "/%s/reviews" % WEBUI_REPO),
                           ("file-html-warm", "/%s/file/%s/%s/%s" % (WEBUI_REPO, REVIEW_BRANCH, WEBUI_FOLDER,
                                                                      os.path.basename(first_commented))),
                           ("commit-html-warm", "/%s/commit/%s" % (WEBUI_REPO, REVIEW_BRANCH))):
            times, o = [], Outcome()
            for _ in range(REVIEW_WARM_GETS + 1):  # the first GET warms this page's own caches: not counted
                o, body = _web_page(srv, path, ctx.rec.timeout, token=WEBUI_TOKEN)
                if not o.ok:
                    break
                times.append(o.wall_s)
            if o.ok:
                times = times[1:]
                o.wall_s = _median(times)
            ctx.rec.record(dmv, REVIEW_EXP, param, step, o, None, peak_rss_kib=None, **dict(
                setup, url=path, page_bytes=len(body), times_ms=[round(t * 1000, 1) for t in times]))


# ---------------------------------------------------------------- import

IMPORT_CHANGED = 100               # files each commit after the first changes
IMPORT_DATE = 1_700_000_000        # first commit date; one a minute after it: the same commit ids every time
IMPORT_LINE = re.compile(r"Imported (\d+) commits? \((\d+) imported before\), (\d+) branch(?:es)?, (\d+) tags?")
ARCHIVE_FILE = "film.bin"


class _SourceError(Exception):
    pass


def _git(env, repo, *args, data=None, timeout=600):
    """Untimed git plumbing in `repo`; returns stdout (bytes), raises _SourceError on failure."""
    try:
        r = subprocess.run(["git"] + list(args), cwd=repo, env=env, input=data, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise _SourceError("git %s: %s" % (args[0], e))
    if r.returncode != 0:
        raise _SourceError("git %s: exit %d: %s" % (args[0], r.returncode,
                                                    r.stderr.decode("utf-8", "replace").strip()[-300:]))
    return r.stdout


def _commit_header(c, parent=None):
    """fast-import's header of commit number c (0: the first), bench as author and committer."""
    ident = b"bench <bench@example.com> %d +0000" % (IMPORT_DATE + 60 * c)
    msg = (b"add the files" if c == 0 else b"change %d files (commit %d)" % (IMPORT_CHANGED, c + 1)) + b"\n"
    head = b"commit refs/heads/main\nauthor %s\ncommitter %s\ndata %d\n%s" % (ident, ident, len(msg), msg)
    return head + (b"from %s\n" % parent if parent else b"")


def _file_command(i, content):
    """fast-import: file i (datagen's layout, 1,000 per folder) gets `content`, given inline."""
    return b"M 100644 inline %s\ndata %d\n%s\n" % (
        datagen.small_file_path("", i).encode(), len(content), content)


def _changed(files, c):
    """The files commit c (1: the second commit) changes: IMPORT_CHANGED of them spread evenly over
    the folders, a different set each commit (the sets repeat after files/IMPORT_CHANGED commits)."""
    n = min(IMPORT_CHANGED, files)
    stride = files // n
    return [k * stride + (c - 1) % stride for k in range(n)]


def _edit(c, files, content):
    """Commit c's changes: 64 bytes in the middle of each changed file get new random bytes, as
    filecount's edit of every file (so git's repack can store each new version as a delta)."""
    ids = _changed(files, c)
    fresh = datagen.RandomStream(1_000_000 + c).read(len(ids) * datagen.SMALL_EDIT_LEN)
    lo, n = datagen.SMALL_EDIT_OFFSET, datagen.SMALL_EDIT_LEN
    return [(i, content(i)[:lo] + fresh[k * n:(k + 1) * n] + content(i)[lo + n:]) for k, i in enumerate(ids)]


def _history_stream(files, commits):
    """fast-import's input, chunk by chunk: the first commit adds `files` files of 1 KiB random
    bytes, then commits-1 commits change IMPORT_CHANGED files each."""
    per = datagen.FILES_PER_DIR
    size = datagen.SMALL_FILE_SIZE
    blocks, current = [], {}
    yield _commit_header(0)
    for d in range((files + per - 1) // per):
        n = min(per, files - d * per)
        blocks.append(datagen.RandomStream(d + 1).read(n * size))
        yield b"".join(_file_command(d * per + k, blocks[d][k * size:(k + 1) * size]) for k in range(n))

    def content(i):
        return current.get(i) or blocks[i // per][(i % per) * size:(i % per + 1) * size]
    for c in range(1, commits):
        edits = _edit(c, files, content)
        current.update(edits)
        yield _commit_header(c) + b"".join(_file_command(i, data) for i, data in edits)


def _fast_import(repo, env, chunks):
    """Feeds `chunks` to `git fast-import` in `repo` (untimed set-up)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=repo, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=err)
        try:
            for chunk in chunks:
                p.stdin.write(chunk)
            p.stdin.close()
        except BrokenPipeError:
            pass
        if p.wait(timeout=3600) != 0:
            err.seek(0)
            raise _SourceError("git fast-import: exit %d: %s" % (
                p.returncode, err.read().decode("utf-8", "replace").strip()[-300:]))


def _import_source(ctx, files, commits):
    """The Git repository to convert, made once in WORKDIR and reused by later runs (a bare
    repository: nothing here needs its work tree). Made with `git fast-import` (seconds where
    add/commit loops take minutes), then `git repack -a -d -f` as a repository that has seen a gc:
    one pack, each changed file's new version a delta. Built under a temporary name and renamed
    when complete, so a killed run leaves nothing to reuse. Returns (path, seconds spent making it,
    0 when reused)."""
    cache = os.path.join(ctx.args.workdir, "import-source-%d-files-%d-commits.git" % (files, commits))
    if os.path.isfile(os.path.join(cache, "bench-complete")):
        return cache, 0.0
    env = ctx.rec.env
    print("import: making the Git source, %s files and %d commits, in %s (once; later runs reuse it)" % (
        "{:,}".format(files), commits, cache), flush=True)
    t = time.perf_counter()
    tmp = cache + ".tmp"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    _git(env, tmp, "init", "-q", "--bare", "--initial-branch=main")
    _fast_import(tmp, env, _history_stream(files, commits))
    # -f: compute deltas afresh (fast-import stores its objects whole, and a plain repack reuses them so)
    _git(env, tmp, "repack", "-a", "-d", "-f", "-q", timeout=3600)
    count = int(_git(env, tmp, "rev-list", "--count", "main").strip())
    if count != commits:
        raise _SourceError("the source has %d commits on main, expected %d" % (count, commits))
    with open(os.path.join(tmp, "bench-complete"), "w") as f:
        json.dump(dict(files=files, commits=commits), f)
    os.rename(tmp, cache)
    return cache, time.perf_counter() - t


def _add_source_commit(env, source, files, commits):
    """Untimed: one more commit on the source's main, changing IMPORT_CHANGED files as before
    (their current bytes read back with one `git cat-file --batch`)."""
    ids = _changed(files, commits)
    paths = [datagen.small_file_path("", i) for i in ids]
    raw = _git(env, source, "cat-file", "--batch", data="".join("main:%s\n" % p for p in paths).encode())
    current, pos = {}, 0
    for i in ids:  # each answer: "<id> blob <size>\n<bytes>\n"
        end = raw.index(b"\n", pos)
        size = int(raw[pos:end].split()[2])
        current[i] = raw[end + 1:end + 1 + size]
        pos = end + 2 + size
    edits = _edit(commits, files, current.__getitem__)
    _fast_import(source, env, [_commit_header(commits, b"refs/heads/main^0")] +
                 [_file_command(i, data) for i, data in edits])


def _git_head(env, repo):
    return _git(env, repo, "rev-parse", "refs/heads/main").strip().decode()


def _git_blob_ids(env, repo):
    """{path: blob id} of every file on main."""
    ids = {}
    for entry in _git(env, repo, "ls-tree", "-r", "-z", "main").split(b"\0"):
        if entry:
            meta, path = entry.split(b"\t", 1)
            ids[path.decode()] = meta.split()[2].decode()
    return ids


def _worktree_blob_ids(root):
    """{path: git blob id} of every file in a work tree outside .dmv and .git."""
    import hashlib
    ids = {}
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".dmv", ".git")]
        for name in names:
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                data = f.read()
            ids[os.path.relpath(path, root)] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return ids


def _check_import(ctx, dmv, pt, dest, source, expected, before, data, first):
    """Untimed, after a `dmv import git` step: the line it printed must count `expected` new
    commits and `before` earlier ones. After the first import, the checked-out work tree must hold
    main's files of the source, byte for byte, and `dmv log` list every commit. A mismatch fails
    the step."""
    def check(out):
        env = ctx.rec.env
        fields = dict(data, expected_commits=expected, expected_before=before)
        disk, apparent, count = disk_usage(os.path.join(dest, ".dmv", "objects"))
        fields.update(store_bytes_disk=disk, store_bytes_apparent=apparent, store_files=count)
        if not out.ok:
            return fields
        text = out.captured.decode("utf-8", "replace") + "\n" + out.stderr_tail
        m = IMPORT_LINE.search(text)
        if not m:
            out.ok, out.error = False, "no `Imported N commits (M imported before), ...` line in: %s" % text[-300:]
            return fields
        got = [int(x) for x in m.groups()]
        fields.update(imported_commits=got[0], imported_before=got[1], imported_branches=got[2], imported_tags=got[3])
        errors = []
        if (got[0], got[1]) != (expected, before):
            errors.append("printed %d commits (%d imported before), expected %d (%d)" % (got[0], got[1], expected, before))
        if first:
            want, have = _git_blob_ids(env, source), _worktree_blob_ids(dest)
            differ = sum(1 for p in set(want) | set(have) if want.get(p) != have.get(p))
            fields.update(worktree_files=len(have), worktree_differ=differ)
            if differ:
                errors.append("%d of %d files of the checkout differ from the source's main" % (differ, len(want)))
        log = run_cmds([dmv.cmd(pt, "log", "--oneline", cwd=dest, stdout="capture")], env, ctx.rec.timeout)
        fields["log_commits"] = len(log.captured.splitlines()) if log.ok else None
        if fields["log_commits"] != expected + before:
            errors.append("`dmv log` lists %s commits, expected %d" % (fields["log_commits"], expected + before))
        fields["verified"] = not errors
        if errors:
            out.ok, out.error = False, "; ".join(errors)
        return fields
    return check


def _hardlinked(root):
    """(files, bytes) under `root` that have other links: shared with another repository."""
    files = size = 0
    for top, _, names in os.walk(root):
        for name in names:
            st = os.lstat(os.path.join(top, name))
            if st.st_nlink > 1:
                files, size = files + 1, size + st.st_size
    return files, size


def _check_mirror(ctx, dest, source, data):
    """Untimed, after a git clone or fetch: the mirror's main is the source's; how much of its
    object store is hard-linked to the source's (a local clone links instead of copying)."""
    def check(out):
        fields = dict(data)
        disk, apparent, count = disk_usage(os.path.join(dest, "objects"))
        linked, linked_bytes = _hardlinked(os.path.join(dest, "objects"))
        fields.update(store_bytes_disk=disk, store_bytes_apparent=apparent, store_files=count,
                      hardlinked_files=linked, hardlinked_bytes=linked_bytes)
        if out.ok:
            try:
                fields["verified"] = _git_head(ctx.rec.env, dest) == _git_head(ctx.rec.env, source)
            except _SourceError as e:
                fields["verified"], out.error = False, str(e)
            if not fields["verified"]:
                out.ok = False
                out.error = out.error or "the mirror's main differs from the source's"
        return fields
    return check


def git_import(ctx, files, commits, archive_size, settle=0):
    """`dmv import git` of a Git repository of `files` files of 1 KiB and `commits` commits against
    `git clone --mirror` of it, then the import of one more commit against `git fetch`; and
    `dmv archive` of one file of `archive_size` random bytes against `git archive`. Recorded as
    experiments `import-git` (parameter: files) and `import-archive` (parameter: bytes)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    if dmv is None:
        return
    if git is None:  # the source is made with git
        ctx.rec.note("dmv", "import-git", str(files), "all", "fail", "git is missing: no source to import")
    else:
        _import_point(ctx, dmv, git, files, commits, settle)
    _archive_point(ctx, [t for t in (dmv, git) if t], archive_size)


def _import_point(ctx, dmv, git, files, commits, settle):
    experiment, param = "import-git", str(files)
    rec = ctx.rec
    # the source (cached and the run's copy), two mirrors, dmv's store and its checkout
    need = 8 * files * datagen.SMALL_FILE_SIZE + GiB
    if not _enough_disk(ctx, [dmv, git], Skips(ctx, experiment), experiment, param, need):
        return
    try:
        cache, made_s = _import_source(ctx, files, commits)
    except (OSError, ValueError, subprocess.SubprocessError, _SourceError) as e:
        print("import: %s" % e, flush=True)
        for tool in (dmv, git):
            rec.note(tool.name, experiment, param, "all", "fail", "making the source: %s" % e)
        return
    pt = ctx.point(experiment, files)
    try:
        # a copy for this run: the incremental step adds a commit to it, the cached source stays as made
        source = os.path.join(pt.root, "source.git")
        shutil.copytree(cache, source, symlinks=True)
        disk, apparent, count = disk_usage(source)
        data = dict(source_files=files, source_commits=commits, changed_per_commit=min(IMPORT_CHANGED, files),
                    file_bytes=datagen.SMALL_FILE_SIZE, source_made_s=round(made_s, 1) if made_s else None,
                    source_bytes_disk=disk, source_bytes_apparent=apparent, source_repo_files=count)
        dest = os.path.join(pt.root, "dmv")
        mirror = os.path.join(pt.root, "mirror")
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        os.sync()
        # dmv converts every commit and checks out main; a mirror clone copies git's objects as they are
        out = rec.step(dmv, experiment, param, "import", [
            dmv.cmd(pt, "init", dest, cwd=pt.root),
            dmv.cmd(pt, "import", "git", source, cwd=dest, stdout="capture")], os.path.join(dest, ".dmv"),
            after=_check_import(ctx, dmv, pt, dest, source, commits, 0, data, first=True))
        imported = out.ok
        os.sync()
        out = rec.step(git, experiment, param, "clone_mirror", [
            git.cmd(pt, "clone", "--mirror", "-q", source, mirror, cwd=pt.root)], mirror,
            after=_check_mirror(ctx, mirror, source, data))
        if _hardlinked(os.path.join(mirror, "objects"))[0]:
            # a local clone of a path hard-links the objects (no copy, no conversion): --no-local
            # sends them through upload-pack and pack-objects, as a clone from a remote does
            os.sync()
            nolocal = os.path.join(pt.root, "mirror-no-local")
            rec.step(git, experiment, param, "clone_mirror_no_local", [
                git.cmd(pt, "clone", "--mirror", "--no-local", "-q", source, nolocal, cwd=pt.root)], nolocal,
                after=_check_mirror(ctx, nolocal, source, data))
        try:
            _add_source_commit(rec.env, source, files, commits)
        except (OSError, ValueError, IndexError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "incremental", "fail", "adding a commit to the source: %s" % e)
            return
        data = dict(data, source_commits_after=commits + 1)
        if not imported:
            rec.note(dmv.name, experiment, param, "import_again", "skipped", "the first import failed")
        else:
            os.sync()
            rec.step(dmv, experiment, param, "import_again", [
                dmv.cmd(pt, "import", "git", source, cwd=dest, stdout="capture")], os.path.join(dest, ".dmv"),
                after=_check_import(ctx, dmv, pt, dest, source, 1, commits, data, first=False))
        if os.path.isdir(mirror):
            os.sync()
            rec.step(git, experiment, param, "fetch", [git.cmd(pt, "fetch", "-q", cwd=mirror)], mirror,
                     after=_check_mirror(ctx, mirror, source, data))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)  # the cached source stays for the next run


def _check_tar(tar, size, digest, data):
    """Untimed, after an archive step: the tar holds one file, ARCHIVE_FILE, of `size` bytes whose
    hash is the committed file's. A mismatch fails the step. The tar is deleted afterwards."""
    import tarfile

    def check(out):
        fields = dict(data, tar_bytes=os.path.getsize(tar) if os.path.exists(tar) else None)
        if not out.ok:
            return fields
        try:
            with tarfile.open(tar, "r:") as tf:
                members = [m for m in tf if m.isfile()]
                fields["tar_files"] = len(members)
                names = [m.name[2:] if m.name.startswith("./") else m.name for m in members]
                if names != [ARCHIVE_FILE]:
                    raise ValueError("the tar holds %s, expected only %s" % (names[:5], ARCHIVE_FILE))
                fields["tar_file_bytes"] = members[0].size
                if members[0].size != size:
                    raise ValueError("%s is %d bytes in the tar, expected %d" % (ARCHIVE_FILE, members[0].size, size))
                h, f = datagen.hasher(), tf.extractfile(members[0])
                for block in iter(lambda: f.read(4 << 20), b""):
                    h.update(block)
                if h.hexdigest() != digest:
                    raise ValueError("%s's bytes in the tar differ from the committed file's" % ARCHIVE_FILE)
            fields["verified"] = True
        except (OSError, ValueError, tarfile.TarError) as e:
            fields["verified"] = False
            out.ok, out.error = False, str(e)
        return fields
    return check


def _archive_cmds(tool, pt, tar):
    if tool.name == "dmv":
        return [tool.cmd(pt, "archive", "-o", tar, "HEAD")]
    return [tool.cmd(pt, "archive", "--format=tar", "-o", tar, "HEAD")]


def _archive_point(ctx, tools, size):
    """One file of `size` random bytes, committed by each tool in a fresh repository, then its
    commit written as a tar file (`dmv archive -o` / `git archive --format=tar -o`)."""
    experiment, param = "import-archive", str(size)
    skips = Skips(ctx, experiment)
    need = 3 * size + GiB  # the file, one repository's copy, one tar (each tool's are deleted before the next's)
    if not _enough_disk(ctx, tools, skips, experiment, param, need):
        return
    pt = ctx.point(experiment, size)
    try:
        path = os.path.join(pt.work, ARCHIVE_FILE)
        print("import-archive %s: writing data" % human_bytes(size), flush=True)
        digest = datagen.write_random_file(path, size, seed=11)
        os.utime(path, ns=(AGED, AGED))
        data = dict(data_bytes=size, data_file=ARCHIVE_FILE)
        for tool in tools:
            tar = os.path.join(pt.root, "%s.tar" % tool.name)
            if _run_tool_steps(ctx, skips, tool, pt, experiment, param, [
                    S("init", lambda: tool.init(pt), fatal=True),
                    S("commit", lambda: tool.commit(pt, True), fatal=True)]):
                os.sync()
                ctx.rec.step(tool, experiment, param, "archive", _archive_cmds(tool, pt, tar), tool.meta(pt),
                             after=_check_tar(tar, size, digest, data))
            # the next tool commits the same work tree: this one's repository and tar go first
            shutil.rmtree(tool.meta(pt), ignore_errors=True)
            if os.path.exists(tar):
                os.remove(tar)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def store(ctx, tools, count, settle=0):
    """How big is the store of many small random files: `count` files of 1 KiB (filecount's data and
    layout, 1,000 per folder) stored once by each tool, each in its own fresh repository: dmv (init,
    add, commit), git (init, add, commit without its automatic gc, then `git gc`), bup (when
    installed), restic and borg (a local repository next to the work tree). Every step records the
    whole repository (repo_*) and its object store (store_*: `.dmv/objects`, `.git/objects`, bup's
    `objects`, restic's and borg's whole repository). Recorded as experiment `store` (parameter:
    files). Nothing is deleted until every tool is done (ext4 without a journal: see sync)."""
    experiment, param = "store", str(count)
    tools = [t for t in tools if t.in_store]
    skips = Skips(ctx, experiment)
    # the data, git's loose objects (a block each) and every other store, kept until the end
    need = 3 * count * 4096 + 4 * count * datagen.SMALL_FILE_SIZE + GiB
    if not _enough_disk(ctx, tools, skips, experiment, param, need):
        return
    pt = _tree(ctx, experiment, count)
    try:
        src_disk, src_apparent, src_files = disk_usage(pt.work)
        data = dict(data_bytes=count * datagen.SMALL_FILE_SIZE, data_files=count,
                    source_bytes_disk=src_disk, source_bytes_apparent=src_apparent, source_files=src_files)
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        for tool in tools:
            if skips.active(tool, param):
                _store_tool(ctx, tool, pt, skips, experiment, param, data)
            # the next tool stores the work tree: this one's repository leaves it (kept until the end)
            repo = tool.store_repo(pt)
            if os.path.exists(repo) and repo.startswith(pt.work + os.sep):
                os.rename(repo, os.path.join(pt.root, "kept-%s" % tool.name))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _store_tool(ctx, tool, pt, skips, experiment, param, data):
    """init, save (the store step), then any step after it (git gc), each measured on the whole
    repository and, untimed, on its object store."""
    def after(out):
        disk, apparent, files = disk_usage(tool.store_objects(pt))
        extra = dict(data, store_bytes_disk=disk, store_bytes_apparent=apparent, store_files=files,
                     store_path=os.path.relpath(tool.store_objects(pt), pt.root))
        cache = tool.store_cache(pt)
        if cache and os.path.exists(cache):
            extra["cache_bytes_disk"], _, extra["cache_files"] = disk_usage(cache)
        return extra
    steps = [("init", tool.store_init(pt), True), ("store", tool.store_save(pt), True)]
    steps += [(name, cmds, False) for name, cmds in tool.store_after(pt)]
    for name, cmds, fatal in steps:
        os.sync()  # untimed: no step pays for writing back what the one before it (or the data generator) wrote
        out = ctx.rec.step(tool, experiment, param, name, cmds, tool.store_repo(pt), after=after)
        if not out.ok and (fatal or out.timed_out):
            skips.fail(tool, param, out)
            return False
    return True


# ---------------------------------------------------------------- attack

ATTACK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attack.py")
ATTACK_REPO = "hub"
ATTACK_SLOW, ATTACK_FLOOD = 530, 16       # slow-body and body-flood connections (bench/attack.py)
ATTACK_BIG, ATTACK_SMALL, ATTACK_SMALL_FILES = 64 << 20, 1 << 20, 36   # 100 MiB in all
ATTACK_BYTES = ATTACK_BIG + ATTACK_SMALL * ATTACK_SMALL_FILES
# The server's bound on open connections, above its default of 512: the 546 attack connections
# must not crowd out the clone's through the eviction of the quietest (see docs/server.md).
# That eviction is a defence of its own; this experiment measures the others (bodies read
# without a thread, within the request timeout, 8 MiB each, a shared budget).
ATTACK_MAX_CONNECTIONS = 2000
ATTACK_REQUEST_TIMEOUT_S = 60             # the server's default request_timeout_secs (not set in server.toml)
ATTACK_RAMP_S = 60                        # the attackers report ready after this at the latest
ATTACK_WRITER = "bench-writer"            # the write token the upload-slot attack opens uploads with
# Further classes, each against a server of its own with the defaults (max_connections 512: the
# eviction of the quietest is part of the defence here), browsing open, and one write token:
# (experiment, what the attack is, bench/attack.py arguments; RAW stands for the large file's path).
ATTACK_CLASSES = [
    ("attack-readers", "520 downloads of the 64 MiB file that never read their socket", ["--readers", "520", "--raw", "RAW"]),
    ("attack-searches", "300 connections searching the tree at once, a new word each time", ["--searches", "300"]),
    ("attack-zips", "300 connections each asking for a zip of `small/` (36 MiB) and reading it whole, again and again", ["--zips", "300"]),
    ("attack-uploads", "300 connections opening upload slots with one write token, again and again", ["--uploads", "300", "--token", ATTACK_WRITER]),
    # The floor of the three above: as many requests for a 1 KB static file, which costs the server
    # nothing but HTTP itself (the attackers share the clone's address, so nothing tells them apart).
    ("attack-floor", "300 connections asking for a static file of 1 KB, again and again (the floor)", ["--statics", "300"]),
]


class _Attackers:
    """bench/attack.py against 127.0.0.1:PORT as a child process (its busy
    loop never shares this interpreter's GIL with the timing of the clone),
    killed with this process. `ready()` waits for its first report, `stop()`
    ends it and returns its counters at that moment."""

    def __init__(self, port, deadline, workdir, args=None):
        import queue
        self.err = tempfile.TemporaryFile(dir=workdir)
        args = args or ["--slow", str(ATTACK_SLOW), "--flood", str(ATTACK_FLOOD)]
        self.proc = subprocess.Popen(
            [sys.executable, ATTACK_SCRIPT, "--port", str(port)] + args
            + ["--deadline", str(int(deadline)), "--ramp", str(ATTACK_RAMP_S)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, preexec_fn=servers._die_with_parent)
        self.lines = queue.Queue()

        def read(proc=self.proc, lines=self.lines):
            for raw in proc.stdout:
                lines.put(raw)
            lines.put(None)
        threading.Thread(target=read, daemon=True).start()

    def _report(self, timeout):
        import queue
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def ready(self):
        return self._report(ATTACK_RAMP_S + 30)

    def stop(self):
        try:
            self.proc.stdin.write(b"stop\n")
            self.proc.stdin.close()
        except OSError:
            pass
        return self._report(30)

    def error_tail(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-400:].strip()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.err.close()


def _attack_fields(ready, end):
    """The record's attack figures, from the attackers' counters when they
    were ready (the clone then started) and when the clone had ended."""
    def answers(snap, code):
        return sum(int(snap.get(k + "_answers", {}).get(code, 0)) for k in ("slow", "flood"))
    other = {}
    for k in ("slow", "flood"):
        for code, n in end.get(k + "_answers", {}).items():
            if code not in ("408", "413"):
                other["%s %s" % (k, code)] = n
    return dict(
        attack_slow=ATTACK_SLOW, attack_flood=ATTACK_FLOOD,
        attack_ramp_s=ready.get("t"), attack_s=end.get("t"), attack_ended=end.get("event"),
        attack_slow_ready=ready.get("ready_slow"), attack_flood_ready=ready.get("ready_flood"),
        attack_slow_open_at_end=end.get("slow_open"), attack_flood_open_at_end=end.get("flood_open"),
        attack_open_at_end=end.get("slow_open", 0) + end.get("flood_open", 0),
        attack_413=answers(end, "413"), attack_408=answers(end, "408"),
        attack_413_during_clone=answers(end, "413") - answers(ready, "413"),
        attack_408_during_clone=answers(end, "408") - answers(ready, "408"),
        attack_other_answers=other,
        attack_closed_unanswered=end.get("slow_closed_unanswered", 0) + end.get("flood_closed_unanswered", 0),
        attack_slow_connects=end.get("slow_connects"), attack_flood_connects=end.get("flood_connects"),
        attack_connect_errors=end.get("slow_connect_errors", 0) + end.get("flood_connect_errors", 0),
        attack_slow_bytes_sent=end.get("slow_bytes_sent"), attack_flood_bytes_sent=end.get("flood_bytes_sent"),
        attack_ready=ready, attack_end=end)


def attack(ctx, pairs):
    """A clone of 100 MiB over HTTP from `dmv serve`, unloaded and under two
    denial-of-service attacks at once (bench/attack.py: 530 slow request
    bodies, 16 body floods), alternating unloaded and attacked `pairs` times
    (A B A B ...), the server restarted (untimed) before every step so that
    its VmHWM is that step's. Recorded as experiment `attack` (parameter:
    the data's bytes), steps `clone_unloaded_N` and `clone_attack_N`."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    experiment, param = "attack", str(ATTACK_BYTES)
    need = 4 * ATTACK_BYTES + GiB  # data, repository, hub, one clone (repository + checkout)
    if free_bytes(ctx.workdir) < need:
        ctx.rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point(experiment, ATTACK_BYTES)
    try:
        print("attack: writing %s (one file of %s, %d of %s)" % (
            human_bytes(ATTACK_BYTES), human_bytes(ATTACK_BIG), ATTACK_SMALL_FILES, human_bytes(ATTACK_SMALL)),
              flush=True)
        datagen.write_random_file(os.path.join(pt.work, "big.bin"), ATTACK_BIG, seed=1)
        os.makedirs(os.path.join(pt.work, "small"))
        for i in range(ATTACK_SMALL_FILES):
            datagen.write_random_file(os.path.join(pt.work, "small", "f%02d.bin" % i), ATTACK_SMALL, seed=100 + i)
        source = datagen.tree_hash(pt.work)
        hub = os.path.join(pt.root, ATTACK_REPO)
        # set-up: commit and push into the served repository (recorded, not part of the measure)
        if not _run_tool_steps(ctx, Skips(ctx, experiment), dmv, pt, experiment, param, [
                S("init", lambda: dmv.init(pt), fatal=True),
                S("commit", lambda: dmv.commit(pt, True), fatal=True),
                S("init_hub", lambda: dmv.init_remote(pt, hub), fatal=True),
                S("push", lambda: [dmv.cmd(pt, "push", hub)], fatal=True)]):
            return
        config = os.path.join(pt.root, "server.toml")
        with open(config, "w") as f:  # top-level keys before the [repos] table
            f.write("max_connections = %d\n[repos]\n%s = %s\n" % (
                ATTACK_MAX_CONNECTIONS, ATTACK_REPO, json.dumps(ATTACK_REPO)))
        data = dict(data_bytes=source[2], data_files=source[1], transport="http",
                    server_max_connections=ATTACK_MAX_CONNECTIONS)
        try:
            with servers.DmvServe(dmv.path, pt.root, ctx.rec.env, config) as srv:
                print("attack: dmv serve listening on 127.0.0.1:%d; %d pairs of clones, unloaded then attacked" % (
                    srv.port, pairs), flush=True)
                _alternate_clones(ctx, dmv, srv, pt, experiment, param, pairs, source, data)
        except servers.ServerError as e:
            print("attack: %s" % e, flush=True)
            ctx.rec.note("dmv", experiment, param, "all", "fail", str(e))
        _attack_classes(ctx, dmv, pt, param, pairs, source, data)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _alternate_clones(ctx, dmv, srv, pt, experiment, param, pairs, source, data, attack_args=None):
    """`pairs` clones unloaded and attacked, alternately, as steps
    `clone_unloaded_N` and `clone_attack_N`; after a step times out, the
    rest are recorded as skipped."""
    stopped = None
    for i in range(1, pairs + 1):
        for load in ("unloaded", "attack"):
            name = "clone_%s_%d" % (load, i)
            if stopped:
                ctx.rec.note("dmv", experiment, param, name, "skipped", stopped)
                continue
            out = _attack_step(ctx, dmv, srv, pt, experiment, param, name, load, i, source, data, attack_args)
            if out is not None and out.timed_out:
                stopped = "%s timed out: %s" % (name, (out.error or "")[-200:])


def _attack_classes(ctx, dmv, pt, param, pairs, source, data):
    """The classes of ATTACK_CLASSES, each against a `dmv serve` of its own
    with the default bound on connections, `pairs` alternations each."""
    listing = subprocess.run([dmv.path, "ls-tree", "HEAD"], cwd=pt.work, env=ctx.rec.env, capture_output=True, text=True).stdout
    big = next((line.split()[1] for line in listing.splitlines() if line.endswith("big.bin")), None)
    config = os.path.join(pt.root, "server-classes.toml")
    with open(config, "w") as f:
        f.write('read = "open"\nbrowse = "open"\n[repos]\n%s = %s\n[tokens]\n"%s" = { access = "write", user = "bench" }\n' % (
            ATTACK_REPO, json.dumps(ATTACK_REPO), ATTACK_WRITER))
    for experiment, what, args in ATTACK_CLASSES:
        # Only this class: attack.py runs slow bodies and a flood unless told not to.
        args = ["--slow", "0", "--flood", "0"] + [("/%s/raw/%s/big.bin" % (ATTACK_REPO, big)) if a == "RAW" else a for a in args]
        fields = dict(data, server_max_connections=512, attack_class=what)
        try:
            with servers.DmvServe(dmv.path, pt.root, ctx.rec.env, config) as srv:
                print("%s: %s; %d pairs of clones" % (experiment, what, pairs), flush=True)
                _alternate_clones(ctx, dmv, srv, pt, experiment, param, pairs, source, fields, args)
        except servers.ServerError as e:
            print("%s: %s" % (experiment, e), flush=True)
            ctx.rec.note("dmv", experiment, param, "all", "fail", str(e))


def _attack_step(ctx, dmv, srv, pt, experiment, param, name, load, pair, source, data, attack_args=None):
    """One timed clone into a fresh directory (removed after), the server
    restarted before it; under attack, the attackers run from before the clone
    (all connected) until it has ended."""
    dest = os.path.join(pt.root, "clone-%s" % name)
    shutil.rmtree(dest, ignore_errors=True)
    srv.restart()  # untimed: a fresh process, its VmHWM this step's alone
    extra = dict(data, load=load, pair=pair, server_start_rss_kib=srv.peak_rss_kib())
    if srv.warnings:
        extra["server_warnings"] = srv.warnings
    os.sync()  # untimed: no step pays for writing back what the one before it wrote
    attackers, ready = None, None
    try:
        if load == "attack":
            attackers = _Attackers(srv.port, ctx.rec.timeout + ATTACK_RAMP_S + 60, pt.root, attack_args)
            ready = attackers.ready()
            if not ready:
                ctx.rec.note("dmv", experiment, param, name, "fail",
                             "the attackers did not start: %s" % attackers.error_tail())
                return None
        verify = _verify_clone(dest, source, {})

        def after(out):
            # before the attackers stop: the peak, and the threads and descriptors the server holds
            fields = dict(extra, server_peak_rss_kib=srv.peak_rss_kib(), server_threads_at_end=srv.threads(),
                          server_open_files_at_end=srv.open_files())
            if attackers:
                end = attackers.stop()
                if end:
                    fields.update(_attack_fields(ready, end))
                else:
                    fields["attack_error"] = "no counters from the attackers: %s" % attackers.error_tail()
            if not srv.alive():
                out.ok = False
                out.error = "dmv serve died (exit %s): %s" % (srv.proc.returncode, " / ".join(srv.lines)[-300:])
            fields.update(verify(out))
            return fields
        return ctx.rec.step(dmv, experiment, param, name,
                            [dmv.cmd(pt, "clone", srv.url(ATTACK_REPO), dest, cwd=pt.root)],
                            dmv.clone_meta(dest), after=after)
    finally:
        if attackers:
            attackers.close()
        shutil.rmtree(dest, ignore_errors=True)


# ---------------------------------------------------------------- availability

AVAIL_STALL_S = 5              # `dmv config remote.timeout` in the client of the stalled get
AVAIL_MARGIN_S = 2             # target: stalled get within AVAIL_STALL_S + the unstalled get + this
AVAIL_MAX_ROUNDS = 5           # the ring stops after this many rounds, converged or not
AVAIL_PEERS = ("a", "b", "c")  # the ring's peers, each syncing with the next
GOT_FROM = re.compile(r"\) from (.+?); \d+ files? written")


def availability(ctx, size, files, settle=0):
    """Availability, in one run: (1) `dmv get FILE` (one file of `size` random
    bytes) in a meta clone whose origin is one of two `dmv serve` copies on
    loopback, with both up and with the origin frozen (SIGSTOP), against curl
    of the same bytes from a static server; (2) three peers, each with `files`
    files of its own, syncing in a ring without a hub (`dmv sync NEXT`) until
    all hold one HEAD and every file, against git doing the same ring with
    `git pull NEXT main`. Recorded as experiments `availability-get`
    (parameter: bytes) and `availability-ring` (parameter: files per peer)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    if dmv is None:
        return
    _avail_get(ctx, dmv, git, size)
    _avail_ring(ctx, dmv, git, files, settle)


def _run_untimed(ctx, cmds, tool, experiment, param, step):
    """Untimed set-up commands; a failure is recorded (step `step`) and returns False."""
    out = run_cmds(cmds, ctx.rec.env, ctx.rec.timeout)
    if not out.ok:
        ctx.rec.note(tool.name, experiment, param, step, "timeout" if out.timed_out else "fail", out.error)
    return out.ok


def _reach(dest, urls):
    """Untimed: what the client's `.dmv/reach` says of each remote ({name: {class fields}})."""
    try:
        with open(os.path.join(dest, ".dmv", "reach")) as f:
            book = json.load(f)
    except (OSError, ValueError):
        return None
    return {name: book.get(url) for name, url in urls.items()}


@contextlib.contextmanager
def _static_server(directory):
    """`python3 -m http.server` on 127.0.0.1 serving `directory`; yields its base URL (None if it does not answer)."""
    port = servers.free_port()
    proc = subprocess.Popen(["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port),
                             "--directory", directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=servers._die_with_parent)
    try:
        url = "http://127.0.0.1:%d" % port
        for _ in range(200):
            if subprocess.run(["curl", "-s", "-o", "/dev/null", url + "/"]).returncode == 0:
                break
            time.sleep(0.05)
        else:
            url = None
        yield url
    finally:
        proc.kill()
        proc.wait()


def _avail_get(ctx, dmv, git, size):
    """Two `dmv serve` on loopback, each serving its own bare copy of one commit of `size` bytes. Per
    timed step, untimed first: a fresh `dmv clone --slice meta` from A (origin), `dmv remote add second
    URL_B`, `dmv config remote.timeout AVAIL_STALL_S` (a fresh clone each time: it has no `.dmv/reach`,
    so `origin` goes first; a clone that saw A stall would try B first). Timed: `dmv get FILE` with both up
    (`get_nearest`), then with A frozen by SIGSTOP (`get_stalled`, SIGCONT after it, untimed)."""
    rec = ctx.rec
    experiment, param = "availability-get", str(size)
    need = 6 * size + GiB  # data, source store, two bare copies, the meta clone (store and file), the copy
    if free_bytes(ctx.workdir) < need:
        rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point(experiment, size)
    got = "file.bin"
    try:
        print("%s %s: writing data" % (experiment, human_bytes(size)), flush=True)
        datagen.write_random_file(os.path.join(pt.work, got), size)
        source_file = os.path.join(pt.work, got)
        data = dict(data_bytes=size, data_files=1, got_path=got, got_bytes=size, transport="http",
                    stall_after_s=AVAIL_STALL_S)
        hubs = {name: os.path.join(pt.root, "hub-%s" % name) for name in ("a", "b")}
        print("  dmv: commit, two bare copies (untimed)", flush=True)
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True) + [
                c for name in ("a", "b") for c in dmv.init_remote(pt, hubs[name]) + [
                    dmv.cmd(pt, "push", hubs[name])]], dmv, experiment, param, "prepare"):
            return
        env = {"DMV_TOKEN": SYNC_TOKEN, "DMV_TRACE": "1"}
        with servers.DmvHttp(dmv.path, os.path.join(pt.root, "http-a"), rec.env, {"r": hubs["a"]},
                             SYNC_TOKEN) as srv_a, \
                servers.DmvHttp(dmv.path, os.path.join(pt.root, "http-b"), rec.env, {"r": hubs["b"]},
                                SYNC_TOKEN) as srv_b:
            urls = {"origin": srv_a.url("r"), "second": srv_b.url("r")}
            print("  copies: origin %s, second %s" % (urls["origin"], urls["second"]), flush=True)
            nearest = None
            for name in ("get_nearest", "get_stalled"):
                dest = os.path.join(pt.root, "meta-%s" % name)
                if not _run_untimed(ctx, [
                        dmv.cmd(pt, "clone", "--slice", "meta", urls["origin"], dest, cwd=pt.root, env=env),
                        dmv.cmd(pt, "remote", "add", "second", urls["second"], cwd=dest, env=env),
                        dmv.cmd(pt, "config", "remote.timeout", str(AVAIL_STALL_S), cwd=dest, env=env)],
                        dmv, experiment, param, name):
                    continue
                stalled = name == "get_stalled"
                reach_before = _reach(dest, urls)

                def check(out, dest=dest, stalled=stalled, reach_before=reach_before):
                    extra = dict(data, stalled=stalled, stalled_remote="origin" if stalled else None,
                                 server_a_peak_rss_kib=srv_a.server_rss_kib(),
                                 server_b_peak_rss_kib=srv_b.server_rss_kib(),
                                 reach_before=reach_before, reach_after=_reach(dest, urls))
                    extra.update(_trace(out))
                    m = GOT_FROM.search(out.stderr_tail or "")
                    extra["got_from"] = m.group(1) if m else None
                    extra.update(_verify_got(os.path.join(dest, got), source_file)(out))
                    return extra
                # a stalled get that never gives up ends long before the suite's timeout
                timeout = rec.timeout if not stalled or nearest is None else min(
                    rec.timeout, max(120, 10 * (AVAIL_STALL_S + nearest)))
                os.sync()  # untimed
                if stalled:
                    os.kill(srv_a.proc.pid, signal.SIGSTOP)
                try:
                    out = rec.step(dmv, experiment, param, name, [dmv.cmd(pt, "get", got, cwd=dest, env=env)],
                                   os.path.join(dest, ".dmv"), timeout=timeout, after=check)
                finally:
                    if stalled:
                        os.kill(srv_a.proc.pid, signal.SIGCONT)
                if not stalled and out.ok:
                    nearest = out.wall_s
                shutil.rmtree(dest, ignore_errors=True)
        if git:
            for name in ("get_nearest", "get_stalled"):
                rec.note(git.name, experiment, param, name, "n/a",
                         "no git equivalent: a blobless clone fetches a missing blob from its promisor remote, "
                         "with no second copy to move on to")
        # the floor: the same bytes with curl from a plain static server, into a file (and synced: get's
        # store is durable)
        copy = os.path.join(pt.root, "copy-http")
        with _static_server(pt.work) as base:
            if base is None:
                rec.note(_Floor.name, experiment, param, "copy_http", "fail", "python3 -m http.server did not answer")
                return
            url = "%s/%s" % (base, got)
            for name, script in (("copy_http", "curl -s -f -o {c} {u}"),
                                 ("copy_http_sync", "curl -s -f -o {c} {u} && sync {c}")):
                os.sync()
                rec.step(_Floor, experiment, param, name,
                         [Cmd(["sh", "-c", script.format(c=shlex.quote(copy), u=shlex.quote(url))], cwd=pt.root)],
                         None, after=lambda out: dict(data, **_verify_got(copy, source_file)(out)))
                if os.path.exists(copy):
                    os.remove(copy)
    except servers.ServerError as e:
        print("%s: %s" % (experiment, e), flush=True)
        rec.note("dmv", experiment, param, "all", "fail", str(e))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


class _Ring:
    """One tool's side of the ring: how to make the seed, the peers and their remotes, how a peer
    syncs with the next, and how to read a peer's HEAD."""

    def __init__(self, tool, root):
        self.tool, self.root = tool, root
        self.seed = os.path.join(root, "%s-seed" % tool.name)
        self.peers = {p: os.path.join(root, "%s-%s" % (tool.name, p)) for p in AVAIL_PEERS}

    def cmd(self, cwd, *args):
        return Cmd([self.tool.path or self.tool.binary] + list(args), cwd=cwd)

    def init_seed(self):
        if self.tool.name == "dmv":
            return [self.cmd(self.seed, "init"), self.cmd(self.seed, "add", "."),
                    self.cmd(self.seed, "commit", "-m", "seed")]
        return [self.cmd(self.seed, "init", "-q"), self.cmd(self.seed, "add", "-A"),
                self.cmd(self.seed, "commit", "-q", "-m", "seed")]

    def clone(self, peer):
        q = ["-q"] if self.tool.name == "git" else []
        return [self.cmd(self.root, "clone", *q, self.seed, self.peers[peer])]

    def commit(self, peer):
        d = self.peers[peer]
        if self.tool.name == "dmv":
            return [self.cmd(d, "add", "."), self.cmd(d, "commit", "-m", "work on %s" % peer)]
        return [self.cmd(d, "add", "-A"), self.cmd(d, "commit", "-q", "-m", "work on %s" % peer)]

    def add_remotes(self, peer):
        return [self.cmd(self.peers[peer], "remote", "add", other, self.peers[other])
                for other in AVAIL_PEERS if other != peer]

    def sync(self, peer, nxt):
        if self.tool.name == "dmv":
            return self.cmd(self.peers[peer], "sync", nxt)
        return self.cmd(self.peers[peer], "pull", "-q", "--no-edit", "--no-rebase", nxt, "main")

    def head(self, env, peer):
        r = subprocess.run([self.tool.path or self.tool.binary, "rev-parse", "HEAD"], cwd=self.peers[peer],
                           env=env, capture_output=True, text=True, timeout=600)
        return r.stdout.strip() if r.returncode == 0 else None


def _avail_ring(ctx, dmv, git, files, settle):
    """Three non-bare replicas cloned from one seed, each with `files` files of 1 KiB of its own
    (committed), each with the other two as remotes. Timed: rounds of each syncing with the next (a
    with b, b with c, c with a) until all three HEADs are equal and every working tree holds every
    file (checked untimed after each round), at most AVAIL_MAX_ROUNDS rounds; dmv with `dmv sync
    NEXT`, git with `git pull --no-edit --no-rebase NEXT main`. Steps `round_N` (the three syncs of
    round N) and `ring` (all rounds up to convergence, or all run)."""
    rec = ctx.rec
    experiment, param = "availability-ring", str(files)
    pt = ctx.point(experiment, files)
    rings = [_Ring(t, pt.root) for t in (dmv, git) if t]
    expected = 3 * files + 1  # every peer's files and the seed's README
    try:
        # Untimed: the seeds, the clones, each peer's files and commit, the remotes. Nothing is deleted
        # until the point is done (see sync).
        ready = []
        for ring in rings:
            print("%s %d: %s seed, three clones, %d files each, commits (untimed)" % (
                experiment, files, ring.tool.name, files), flush=True)
            os.makedirs(ring.seed)
            with open(os.path.join(ring.seed, "README"), "w") as f:
                f.write("three peers in a ring\n")
            cmds = ring.init_seed() + [c for p in AVAIL_PEERS for c in ring.clone(p)]
            if not _run_untimed(ctx, cmds, ring.tool, experiment, param, "prepare"):
                continue
            for i, p in enumerate(AVAIL_PEERS):
                datagen.write_tree(os.path.join(ring.peers[p], "peer-%s" % p), files, seed=11 + i)
            cmds = [c for p in AVAIL_PEERS for c in ring.commit(p) + ring.add_remotes(p)]
            if _run_untimed(ctx, cmds, ring.tool, experiment, param, "prepare"):
                ready.append(ring)
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        for ring in ready:
            _ring_rounds(ctx, ring, experiment, param, files, expected)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _ring_rounds(ctx, ring, experiment, param, files, expected):
    rec = ctx.rec
    tool = ring.tool
    total, peak, syncs, converged_at, trees_at, per_round = 0.0, 0, 0, None, None, []
    failed = None
    for r in range(1, AVAIL_MAX_ROUNDS + 1):
        out = Outcome()
        sync_s = []
        for i, p in enumerate(AVAIL_PEERS):
            os.sync()  # untimed
            one = run_cmds([ring.sync(p, AVAIL_PEERS[(i + 1) % len(AVAIL_PEERS)])], rec.env, rec.timeout)
            out.wall_s += one.wall_s
            out.peak_rss_kib = max(out.peak_rss_kib, one.peak_rss_kib)
            out.commands += one.commands
            out.stderr_tail = one.stderr_tail
            sync_s.append(round(one.wall_s, 6))
            syncs += 1
            if not one.ok:
                out.ok, out.timed_out, out.error = False, one.timed_out, "%s: %s" % (p, one.error)
                break
        # untimed: one HEAD? every file in every working tree? the same files everywhere?
        heads = {p: ring.head(rec.env, p) for p in AVAIL_PEERS}
        worktree = {p: _worktree_files(ring.peers[p]) for p in AVAIL_PEERS}
        heads_equal = None not in heads.values() and len(set(heads.values())) == 1
        all_files = all(n == expected for n in worktree.values())
        trees_equal = all_files and len({datagen.tree_hash(ring.peers[p])[0] for p in AVAIL_PEERS}) == 1
        converged = out.ok and heads_equal and all_files
        total += out.wall_s
        peak = max(peak, out.peak_rss_kib)
        per_round.append(round(out.wall_s, 6))
        if trees_equal and trees_at is None:
            trees_at = r
        rec.record(tool, experiment, param, "round_%d" % r, out, None, round=r, sync_s=sync_s,
                   heads={p: (h or "")[:16] for p, h in heads.items()}, heads_equal=heads_equal,
                   worktree_files=worktree, expected_files=expected, trees_equal=trees_equal,
                   converged=converged, files_per_peer=files, peers=len(AVAIL_PEERS))
        if not out.ok:
            failed = out
            break
        if converged:
            converged_at = r
            break
    ring_out = Outcome(wall_s=total, peak_rss_kib=peak, ok=failed is None,
                       timed_out=bool(failed and failed.timed_out), error=failed.error if failed else None)
    rec.record(tool, experiment, param, "ring", ring_out, None, converged=converged_at is not None,
               rounds=converged_at, rounds_run=len(per_round), round_s=per_round, syncs=syncs,
               trees_equal_round=trees_at, max_rounds=AVAIL_MAX_ROUNDS, files_per_peer=files,
               peers=len(AVAIL_PEERS), expected_files=expected)


# ---------------------------------------------------------------- hubtier

HUBTIER_TOKEN = "w"                                  # the servers' write token (the client's `--token`)
HUBTIER_REPO = "hub"                                 # the repository's name on every server
HUBTIER_BUCKET, HUBTIER_PREFIX = "hubtier", "hub"    # the bucket repository: s3://hubtier/hub
HUBTIER_RAW_BUCKET = "hubtier-raw"                   # the floor's bucket (rclone)
HUBTIER_SEED = "README"                              # the seed commit's one file, pushed untimed


def hubtier(ctx, rclone, minio_bin, size, files, settle=0, minio_missing=None, rclone_missing=None):
    """The hub tier: push to and clone from one `dmv serve` over a bare repository on this disk (the
    baseline), against two `dmv serve` over one repository in a MinIO bucket (the client's remote lists
    both URLs; the push goes through the first, the clone through the second), against the same bytes
    uploaded and downloaded by rclone (the floor), for one file of `size` random bytes and `files` files of
    1 KiB. Recorded as `hubtier-bigfile` (parameter: bytes) and `hubtier-files` (parameter: files)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    points = [("hubtier-bigfile", size), ("hubtier-files", files)]
    if not minio_bin:
        why = "no MinIO server: %s" % (minio_missing or "minio not found")
        print("hubtier: %s" % why, flush=True)
        for experiment, n in points:
            ctx.rec.note("dmv", experiment, str(n), "all", "fail", why)
        return
    for experiment, n in points:
        _hubtier_point(ctx, dmv, rclone, rclone_missing, minio_bin, experiment, n, settle)


def _hubtier_config(path, repo_line):
    """A server.toml with the access log on (requests counted per server), one repository, one write token.
    It holds a token: for its owner's eyes only (dmv serve warns otherwise)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write('access_log = true\n[repos]\n%s = %s\n[tokens]\n"%s" = "write"\n' % (
            HUBTIER_REPO, repo_line, HUBTIER_TOKEN))
    return path


def _server_log(srv):
    """The server's own stderr lines (access-log lines left out), for a failed step's record."""
    return list(srv.lines or [])[-30:]


def _hubtier_point(ctx, dmv, rclone, rclone_missing, minio_bin, experiment, n, settle):
    rec = ctx.rec
    param = str(n)
    many = experiment == "hubtier-files"
    settle = settle if many else 0
    if not many:
        # data, the client's store, the disk hub, the bucket repository, the raw bucket, one clone at a time
        need = 7 * n + GiB
        if free_bytes(ctx.workdir) < need:
            rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
            return
    pt = ctx.point(experiment, n)
    later = [] if many else None  # with many files, delete nothing until the point is done (see sync)
    creds = {"AWS_ACCESS_KEY_ID": servers.MINIO_USER, "AWS_SECRET_ACCESS_KEY": servers.MINIO_PASSWORD,
             "AWS_REGION": servers.MINIO_REGION}
    trace = {"DMV_TRACE": "1"}
    running = []
    try:
        with servers.MinIO(minio_bin, pt.root, os.path.join(pt.root, "minio-data"), rec.env) as minio:
            print("%s: MinIO listening on %s, data in %s" % (experiment, minio.endpoint, minio.data), flush=True)
            bucket_url = "s3://%s/%s" % (HUBTIER_BUCKET, HUBTIER_PREFIX)
            hub_disk = os.path.join(pt.root, "hub-disk")
            # untimed: a seed commit of one tiny file, pushed into the bare repository on the disk and straight
            # into the bucket (which makes the repository there), so that the timed pushes carry the same data
            with open(os.path.join(pt.work, HUBTIER_SEED), "w") as f:
                f.write("hubtier seed\n")
            if not _run_untimed(ctx, dmv.init(pt) + [dmv.cmd(pt, "add", HUBTIER_SEED),
                                                     dmv.cmd(pt, "commit", "-m", "seed")] +
                                dmv.init_remote(pt, hub_disk) + [dmv.cmd(pt, "push", hub_disk, "main")],
                                dmv, experiment, param, "prepare"):
                return
            minio.make_bucket(HUBTIER_BUCKET)
            if not _run_untimed(ctx, [dmv.cmd(pt, "push", bucket_url, "main",
                                              env=dict(creds, AWS_ENDPOINT_URL=minio.endpoint))],
                                dmv, experiment, param, "seed_bucket"):
                return
            source = _write_point_data(experiment, n, many, pt.work)
            data = dict(data_bytes=source[2], data_files=source[1], bucket=HUBTIER_BUCKET, prefix=HUBTIER_PREFIX,
                        endpoint=minio.endpoint)
            skips = Skips(ctx, experiment)
            if not _run_tool_steps(ctx, skips, dmv, pt, experiment, param, [
                    S("commit", lambda: dmv.commit(pt, True), fatal=True)]):
                return
            _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")

            ports = {k: servers.free_port() for k in ("disk", "a", "b")}
            env = dict(rec.env, **creds)
            disk_conf = _hubtier_config(os.path.join(pt.root, "serve-disk", "server.toml"), '"%s"' % hub_disk)
            tier_conf = _hubtier_config(os.path.join(pt.root, "serve-tier", "server.toml"),
                                        '{ url = "%s", endpoint = "%s" }' % (bucket_url, minio.endpoint))
            srv = {"disk": servers.DmvServe(dmv.path, os.path.dirname(disk_conf), env, disk_conf, ports["disk"]),
                   "a": servers.DmvServe(dmv.path, os.path.dirname(tier_conf), env, tier_conf, ports["a"]),
                   "b": servers.DmvServe(dmv.path, os.path.dirname(tier_conf), env, tier_conf, ports["b"])}
            url = {k: "http://127.0.0.1:%d/%s" % (p, HUBTIER_REPO) for k, p in ports.items()}
            # the client's remotes: `disk` (one URL) and `tier` (both bucket servers' URLs, A first)
            if not _run_untimed(ctx, [
                    dmv.cmd(pt, "remote", "add", "disk", url["disk"], "--token", HUBTIER_TOKEN),
                    dmv.cmd(pt, "remote", "add", "tier", url["a"], "--token", HUBTIER_TOKEN),
                    dmv.cmd(pt, "remote", "set-url", "--add", "tier", url["b"])], dmv, experiment, param, "remotes"):
                return
            print("  servers: disk %s, bucket A %s, bucket B %s" % (url["disk"], url["a"], url["b"]), flush=True)

            def fresh(names, with_minio):
                """Untimed: fresh server processes (same ports), so that each VmHWM is this step's alone."""
                for k in names:
                    srv[k].stop()
                if with_minio:
                    minio.restart()
                for k in names:
                    srv[k].start()
                    if srv[k] not in running:
                        running.append(srv[k])

            def servers_fields(names, out, minio_too):
                extra = {}
                for k in names:
                    extra["server_%s_peak_rss_kib" % k] = srv[k].peak_rss_kib()
                    extra["server_%s_requests" % k] = srv[k].requests
                    if not out.ok:
                        extra["server_%s_log" % k] = _server_log(srv[k])
                rss = [extra["server_%s_peak_rss_kib" % k] for k in names
                       if extra["server_%s_peak_rss_kib" % k] is not None]
                extra["server_peak_rss_kib"] = max(rss) if rss else None
                if minio_too:
                    extra["minio_peak_rss_kib"] = minio.server_rss_kib()
                return extra

            def push(name, remote, names, hub, measure_path):
                def after(out):
                    extra = dict(data, hub=hub, urls=[url[k] for k in names], **servers_fields(names, out, hub == "bucket"))
                    if hub == "bucket":
                        objects, apparent, disk, files = minio.usage(HUBTIER_BUCKET)
                        extra.update(bucket_objects=objects, bucket_bytes_apparent=apparent, bucket_bytes_disk=disk,
                                     bucket_files=files)
                    extra.update(_trace(out))
                    return extra
                os.sync()  # untimed
                fresh(names, hub == "bucket")
                return rec.step(dmv, experiment, param, name,
                                [dmv.cmd(pt, "push", remote, "main", env=trace)], measure_path, after=after)

            def clone(name, k, names, hub):
                dest = os.path.join(pt.root, "clone-%s" % hub)
                verify = _verify_clone(dest, source, {})

                def after(out):
                    fields = servers_fields(names, out, hub == "bucket")  # before the (slow) verification
                    extra = dict(data, hub=hub, url=url[k], **fields)
                    extra.update(verify(out))
                    extra.update(_trace(out))
                    extra["worktree_files"] = _worktree_files(dest) if out.ok else None
                    return extra
                os.sync()  # untimed
                fresh(names, hub == "bucket")
                out = rec.step(dmv, experiment, param, name,
                               [dmv.cmd(pt, "clone", "--token", HUBTIER_TOKEN, url[k], dest, cwd=pt.root, env=trace)],
                               os.path.join(dest, ".dmv"), after=after)
                return out, dest

            try:
                out = push("push_disk", "disk", ["disk"], "disk", hub_disk)
                if out.ok:
                    _remove([clone("clone_disk", "disk", ["disk"], "disk")[1]], later)
                srv["disk"].stop()
                bucket_dir = os.path.join(minio.data, HUBTIER_BUCKET)
                out = push("push_bucket", "tier", ["a", "b"], "bucket", bucket_dir)
                if out.ok:
                    out, dest = clone("clone_bucket", "b", ["a", "b"], "bucket")
                    if out.ok:  # untimed: the clone's remote lists both servers too
                        _run_untimed(ctx, [dmv.cmd(pt, "remote", "set-url", "--add", "origin", url["a"], cwd=dest)],
                                     dmv, experiment, param, "clone_bucket_second_url")
                    _remove([dest], later)
                for k in ("a", "b"):
                    srv[k].stop()
            except servers.ServerError as e:
                print("%s: %s" % (experiment, e), flush=True)
                rec.note("dmv", experiment, param, "all", "fail", str(e))
            _hubtier_raw(ctx, rclone, rclone_missing, minio, pt, experiment, param, source, data, later)
    except servers.ServerError as e:
        print("%s: %s" % (experiment, e), flush=True)
        rec.note("dmv", experiment, param, "all", "fail", str(e))
    finally:
        for s in running:
            s.stop()
        shutil.rmtree(pt.root, ignore_errors=True)


def _hubtier_raw(ctx, rclone, rclone_missing, minio, pt, experiment, param, source, data, later):
    """The floor: the work tree's files uploaded to the same MinIO by rclone (one object per file, as in the
    s3 experiment) and downloaded again, each after a fresh MinIO process (its VmHWM: that step's)."""
    rec = ctx.rec
    if rclone is None:
        for step in ("upload_raw", "download_raw"):
            rec.note("rclone", experiment, param, step, "n/a", "rclone is not installed: %s" % (rclone_missing or "?"))
        return
    meta = os.path.join(pt.work, ".dmv")
    if os.path.isdir(meta):  # rclone copies the work tree: the client's repository leaves it
        os.rename(meta, os.path.join(pt.root, "client-dmv"))
    b = Bucket(minio.endpoint, HUBTIER_RAW_BUCKET, "rclone", servers.MINIO_USER, servers.MINIO_PASSWORD,
               servers.MINIO_REGION)
    dest = os.path.join(pt.root, "download-raw")
    try:
        minio.make_bucket(b.bucket)
        os.sync()
        minio.restart()

        def after_up(out):
            objects, apparent, disk, files = minio.usage(b.bucket)
            return dict(data, hub="raw", minio_peak_rss_kib=minio.server_rss_kib(), bucket_objects=objects,
                        bucket_bytes_apparent=apparent, bucket_bytes_disk=disk, bucket_files=files)
        out = rec.step(rclone, experiment, param, "upload_raw", rclone.s3_push(pt, b),
                       os.path.join(minio.data, b.bucket), after=after_up)
        if not out.ok:
            return
        os.sync()
        minio.restart()
        verify = _verify_clone(dest, source, {})

        def after_down(out):
            rss = minio.server_rss_kib()  # before the (slow) verification
            extra = dict(data, hub="raw", minio_peak_rss_kib=rss)
            extra.update(verify(out))
            return extra
        rec.step(rclone, experiment, param, "download_raw", rclone.s3_clone(pt, b, dest), None, after=after_down)
    except servers.ServerError as e:
        rec.note("rclone", experiment, param, "all", "fail", str(e))
    finally:
        _remove([dest], later)


# ---------------------------------------------------------------- watch mode (experiment `watch`)

WATCH_QUIET_S = 1          # `dmv watch --quiet`: seconds without a change before what changed is committed
WATCH_SYNC_EVERY_S = 60    # `dmv watch --sync-every`: seconds between syncs when nothing changes (its default)
WATCH_CHECK_EVERY_S = 5    # `dmv watch --check-every`: seconds between looks at whether a remote moved (its default)
WATCH_POLL_S = 0.02        # how often the suite reads A's log and looks at B's working tree
WATCH_WAIT_S = 300         # a point fails when the commit or the arrival takes longer (or the suite's timeout)
WATCH_CALM_S = 2.5         # between points: no watcher logged anything for this long (more than --sync-every)
WATCH_SMALL = 1024         # the one small file
WATCH_BURST_SEED = 31      # the largest burst's files (datagen.write_tree's seed); each smaller burst its own seed
WATCH_IDLE_SAMPLE_S = 1.0  # idle windows: how often /proc is read (threads that end keep what they did until then)
WATCH_IDLE_WAIT_S = 120    # before an idle window: the processes must be quiet within this many seconds
WATCH_HUB, WATCH_HAND_HUB = "hub", "hand"  # the watched replicas' hub; the by-hand replicas' own hub
COMMITTED = re.compile(r" committed (\S+): (\d+) added")


class _Watcher:
    """`dmv watch ARGS` in `cwd`, in the foreground as a child of the suite, its stdout (the log) and stderr in
    files. Under GNU time when installed (its %M after the watcher has stopped: the peak RSS of its whole
    life) and under `setpriv --pdeathsig KILL` when there is one (GNU time's child dies with it, and GNU time
    with the suite: no watcher outlives a killed suite). `pid` is dmv's own process (SIGTERM goes to it:
    GNU time would die of it without passing it on)."""

    def __init__(self, dmv, cwd, env, args, name, logdir):
        self.dmv, self.cwd, self.env, self.args, self.name = dmv, cwd, env, args, name
        self.log = os.path.join(logdir, "watch-%s.log" % name)
        self.err = os.path.join(logdir, "watch-%s.err" % name)
        self.rss = os.path.join(logdir, "watch-%s.rss" % name)
        self.proc, self.pid, self.started, self.offset = None, None, None, 0
        self.exit_code, self.stopped_s, self.lifetime_s = None, None, None

    def start(self):
        from measure import TIME_BIN
        setpriv = shutil.which("setpriv", path=self.env.get("PATH"))
        argv = ([TIME_BIN, "-f", "%M", "-o", self.rss] if TIME_BIN else []) + (
            [setpriv, "--pdeathsig", "KILL"] if setpriv else []) + [self.dmv.path, "watch"] + self.args
        with open(self.log, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, start_new_session=True, preexec_fn=servers._die_with_parent)
        self.started = time.monotonic()
        self.pid = self.proc.pid
        if TIME_BIN:  # dmv is GNU time's one child (setpriv execs it)
            children = "/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with open(children) as f:
                        kids = f.read().split()
                except OSError:
                    kids = []
                if kids and self._exe(int(kids[0])) == os.path.realpath(self.dmv.path):
                    self.pid = int(kids[0])
                    break
                time.sleep(0.005)
        return self

    @staticmethod
    def _exe(pid):
        try:
            return os.path.realpath("/proc/%d/exe" % pid)
        except OSError:
            return None

    def text(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def new_lines(self):
        """The complete lines logged since the last call."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode("utf-8", "replace").splitlines()

    def size(self):
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_for(self, word, timeout):
        """Seconds from the start until the log holds `word`, or None (timeout, or the watcher ended)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if word in self.text():
                return time.monotonic() - self.started
            if not self.alive():
                return None
            time.sleep(0.01)
        return None

    def cpu(self):
        """(utime + stime in seconds from /proc/PID/stat, every thread's run time in seconds from
        /proc/PID/task/*/schedstat: nanoseconds, but only of the threads alive now), or (None, None)."""
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return None, None
        ns = 0
        try:
            for task in os.listdir("/proc/%d/task" % self.pid):
                try:
                    with open("/proc/%d/task/%s/schedstat" % (self.pid, task)) as f:
                        ns += int(f.read().split()[0])
                except (OSError, IndexError, ValueError):
                    pass
        except OSError:
            ns = None
        return ticks / os.sysconf("SC_CLK_TCK"), (ns / 1e9 if ns is not None else None)

    def status(self, key):
        """A field of /proc/PID/status in KiB or as a number (VmHWM, VmRSS, Threads), or None."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            return None
        return None

    def inotify_watches(self):
        """Inotify watches the watcher holds (lines `inotify wd:` in its descriptors' fdinfo), or None."""
        total, found = 0, False
        try:
            for fd in os.listdir("/proc/%d/fdinfo" % self.pid):
                try:
                    with open("/proc/%d/fdinfo/%s" % (self.pid, fd)) as f:
                        n = sum(1 for line in f if line.startswith("inotify wd:"))
                except OSError:
                    continue
                if n:
                    total, found = total + n, True
        except OSError:
            return None
        return total if found else 0

    def wait_idle(self, timeout, window=1.0):
        """Seconds from the start until the watcher used no CPU (at most one clock tick) in two windows in a
        row, or None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        calm, last = 0, self.cpu()[0]
        while time.monotonic() < deadline and self.alive():
            time.sleep(window)
            now = self.cpu()[0]
            if now is None or last is None:
                return None
            calm = calm + 1 if now - last <= 1.0 / os.sysconf("SC_CLK_TCK") + 1e-9 else 0
            last = now
            if calm >= 2:
                return time.monotonic() - self.started - 2 * window
        return None

    def stop(self, timeout=30):
        """SIGTERM to dmv; returns its exit code (GNU time passes it on), or None if it had to be killed."""
        if self.proc is None or self.exit_code is not None:
            return self.exit_code
        t = time.monotonic()
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.exit_code = self.proc.wait(timeout)
            self.stopped_s = time.monotonic() - t
        except subprocess.TimeoutExpired:
            for pid in (self.pid, self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()
            self.exit_code = None
        self.lifetime_s = time.monotonic() - self.started
        return self.exit_code

    def gnu_time_rss(self):
        """GNU time's %M (KiB) once the watcher has ended, or None."""
        try:
            with open(self.rss) as f:
                words = f.read().split()
        except OSError:
            return None
        return int(words[-1]) if words and words[-1].isdigit() else None

    def err_tail(self):
        return _read_text(self.err)[-600:].strip()


def _read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _log_counts(text):
    """What a watcher's log says it did: lines of each kind."""
    lines = text.splitlines()
    count = lambda word: sum(1 for l in lines if word in l)
    return dict(log_lines=len(lines), log_committed=count(" committed "), log_sent=count(" sent to "),
                log_merged=count(" merged "), log_cannot=count(" cannot "), log_did_not_reach=count(" did not reach "),
                log_kept_both=count(" both versions kept"), log_stopped=any(l.endswith(" stopped") for l in lines))


def _calm(watchers, quiet, timeout):
    """Waits until no watcher logged anything for `quiet` seconds (at most `timeout`); whether it was calm."""
    sizes = [w.size() for w in watchers]
    since, deadline = time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = [w.size() for w in watchers]
        if now != sizes:
            sizes, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
    return False


def _head(dmv, cwd, env):
    r = subprocess.run([dmv.path, "rev-parse", "HEAD"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return r.stdout.strip() if r.returncode == 0 else None


class _Change:
    """One point's data: the files (relative path, bytes) the writer writes into A, in order, also written
    once into a staging folder (the floors' source); `expected` (files) and how B is checked."""

    def __init__(self, experiment, n, staging, seed=WATCH_BURST_SEED):
        self.experiment, self.n = experiment, n
        self.burst = experiment == "watch-burst"
        self.top = ("burst-%d" % n) if self.burst else ("file-%d.bin" % n)
        self.staging = os.path.join(staging, self.top)
        os.makedirs(staging, exist_ok=True)
        if self.burst:
            # bursts of other sizes get other bytes: no burst finds its blocks in an earlier one
            datagen.write_tree(self.staging, n, seed=seed)
        else:
            datagen.write_random_file(self.staging, n, seed=32 if n == WATCH_SMALL else 33)
        self.files = []
        for top, dirs, names in os.walk(self.staging) if self.burst else [(staging, [], [self.top])]:
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(top, name)
                with open(path, "rb") as f:
                    self.files.append((os.path.relpath(path, staging), f.read()))
        assert len(self.files) == (n if self.burst else 1)
        self.expected = len(self.files)
        self.bytes = sum(len(b) for _, b in self.files)
        self.hash = datagen.tree_hash(self.staging)[0] if self.burst else datagen.file_hash(self.staging)

    def write(self, root):
        """The writer: every file written (1 MiB at a time) and closed; returns when the last is closed."""
        for rel, data in self.files:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                for i in range(0, len(data), 1 << 20):
                    f.write(data[i:i + (1 << 20)])

    def seen(self, root):
        """Cheap: whether every file is in `root` (count, or the one file at its size). Names starting with a
        dot are not counted: a synchroniser's temporary files (Syncthing's `.syncthing.NAME.tmp`) would make the
        count look complete early and the suite hash the whole tree at every look."""
        path = os.path.join(root, self.top)
        if not self.burst:
            try:
                return os.stat(path).st_size == self.n
            except OSError:
                return False
        count = 0
        try:
            for d in os.scandir(path):
                if d.is_dir():
                    count += sum(1 for name in os.listdir(d.path) if not name.startswith("."))
        except OSError:
            return False
        return count == self.expected

    def same(self, root):
        """Whether `root` holds these files with these bytes."""
        path = os.path.join(root, self.top)
        try:
            return (datagen.tree_hash(path)[0] if self.burst else datagen.file_hash(path)) == self.hash
        except OSError:
            return False


def _watch_points(size, bursts):
    """The latency points, in order: (experiment, parameter, datagen seed)."""
    bursts = sorted(set(bursts))
    return [("watch-file", WATCH_SMALL, None), ("watch-file", size, None)] + [
        ("watch-burst", n, WATCH_BURST_SEED if n == bursts[-1] else WATCH_BURST_SEED + 100 * (k + 1))
        for k, n in enumerate(bursts)]


def watch(ctx, size, bursts, tree, idle_s, settle=0, idle_sync_s=None, syncthing=None, syncthing_why=None):
    """Watch mode. (1) Latency: two replicas A and B of one bare hub served by `dmv serve` over HTTP on
    127.0.0.1, each running `dmv watch --quiet WATCH_QUIET_S --sync --sync-every WATCH_SYNC_EVERY_S
    --check-every WATCH_CHECK_EVERY_S` in the
    foreground (under GNU time). For one file of 1 KiB, one file of `size` bytes and a burst of each of `bursts`
    files of 1 KiB written into A: from the writer's last close to A's watcher logging the commit of every file,
    and to the files in B's working tree with the same bytes; against the same data committed, pushed and
    pulled by hand in two unwatched replicas (`dmv add . && dmv commit`, `dmv push`, `dmv pull`) and `cp -r`
    of it. Recorded as `watch-file` (parameter: bytes) and `watch-burst` (parameter: files), steps `commit`,
    `arrive`, `commit_by_hand`, `push_by_hand`, `pull_by_hand`, `copy`. Then both watchers and the hub left
    alone for `idle_sync_s` seconds (default `idle_s`): each one's CPU, context switches and memory over the
    window and the requests the hub answered in it, as `watch-idle-sync` (parameter: 2), steps `replica_a`,
    `replica_b`, `hub`; and the two watchers' whole lives (peak RSS, CPU, exit after SIGTERM) as
    `watch-watchers` (parameter: 2), steps `replica_a`, `replica_b`.
    (2) The peer: two Syncthing instances on 127.0.0.1 sharing one folder (`syncthing`, installed by run.py
    when missing, else recorded as skipped with `syncthing_why`): the same points, from the last close in A's
    folder to the files in B's with the same bytes (step `arrive`), and the same idle window
    (`watch-idle-sync`, steps `replica_a`, `replica_b`).
    (3) Idle: `dmv watch --quiet WATCH_QUIET_S` (no sync) over a committed tree of `tree` files of 1 KiB,
    its CPU over `idle_s` seconds of nothing changing and its peak RSS: `watch-idle` (parameter: files),
    steps `idle` and `stop`."""
    idle_sync_s = idle_sync_s or idle_s
    points = _watch_points(size, bursts)
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    why = None
    if dmv is not None:
        probe = ctx.point("watch-probe", 0)
        try:
            why = _supports(ctx, dmv, probe, "watch")
        finally:
            shutil.rmtree(probe.root, ignore_errors=True)
        if why:
            for experiment, n in [(e, n) for e, n, _ in points] + [("watch-idle-sync", 2), ("watch-idle", tree)]:
                ctx.rec.note("dmv", experiment, str(n), "all", "unsupported", why)
        else:
            _watch_latency(ctx, dmv, points, settle, idle_sync_s)
    _watch_syncthing(ctx, syncthing, syncthing_why, points, settle, idle_sync_s)
    if dmv is not None and not why:
        _watch_idle(ctx, dmv, tree, idle_s)


def _watch_latency(ctx, dmv, points, settle, idle_sync_s):
    rec = ctx.rec
    size = max(n for e, n, _ in points if e == "watch-file")
    need = 8 * size + GiB  # A, B (files and stores), the hub, the by-hand replicas and their hub, the copy
    if free_bytes(ctx.workdir) < need:
        for experiment, n, _ in points:
            rec.note("dmv", experiment, str(n), "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point("watch-sync", 2)
    watchers = []
    try:
        print("watch: hub, dmv serve, replicas A and B (watched), C and D (by hand) (untimed)", flush=True)
        staging = os.path.join(pt.root, "staging")
        changes = [_Change(experiment, n, staging, seed) for experiment, n, seed in points]
        hubs = {WATCH_HUB: os.path.join(pt.root, "hub"), WATCH_HAND_HUB: os.path.join(pt.root, "hub-hand")}
        with open(os.path.join(pt.work, "README"), "w") as f:
            f.write("watch seed\n")
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True) + [
                c for h in hubs.values() for c in dmv.init_remote(pt, h) + [dmv.cmd(pt, "push", h, "main")]],
                dmv, "watch-file", str(WATCH_SMALL), "prepare"):
            return
        # the hub logs every request (`access_log = true`): the idle window counts those it answered
        with servers.DmvHttp(dmv.path, os.path.join(pt.root, "http"), rec.env, hubs, SYNC_TOKEN,
                             access_log=True) as srv:
            print("  dmv serve on 127.0.0.1:%d" % srv.port, flush=True)
            rep = {k: os.path.join(pt.root, k) for k in ("A", "B", "C", "D")}
            if not _run_untimed(ctx, [
                    dmv.cmd(pt, "clone", "--token", SYNC_TOKEN, srv.url(WATCH_HUB if k in "AB" else WATCH_HAND_HUB),
                            rep[k], cwd=pt.root) for k in ("A", "B", "C", "D")],
                    dmv, "watch-file", str(WATCH_SMALL), "prepare_replicas"):
                return
            _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
            args = ["--quiet", str(WATCH_QUIET_S), "--sync", "--sync-every", str(WATCH_SYNC_EVERY_S),
                    "--check-every", str(WATCH_CHECK_EVERY_S)]
            a = _Watcher(dmv, rep["A"], rec.env, args, "a", pt.root).start()
            watchers.append(a)
            b = _Watcher(dmv, rep["B"], rec.env, args, "b", pt.root).start()
            watchers.append(b)
            for w in (a, b):
                if w.wait_for(" watching ", 60) is None:
                    raise servers.ServerError("watcher %s did not start: %s %s" % (
                        w.name, w.text()[-300:], w.err_tail()))
            _calm(watchers, WATCH_CALM_S, 60)
            for ch in changes:
                _watch_change(ctx, dmv, ch, a, b, rep, pt)
            _watch_idle_sync(ctx, dmv, a, b, srv, idle_sync_s)
            _watch_stop(ctx, dmv, watchers)
    except servers.ServerError as e:
        print("watch: %s" % e, flush=True)
        for experiment, n, _ in points:
            rec.note("dmv", experiment, str(n), "all", "fail", str(e))
    finally:
        for w in watchers:
            w.stop(timeout=10)
        shutil.rmtree(pt.root, ignore_errors=True)


def _watch_change(ctx, dmv, ch, a, b, rep, pt):
    """One point: the writer writes into A; the suite reads A's log and looks at B every WATCH_POLL_S."""
    rec = ctx.rec
    experiment, param = ch.experiment, str(ch.n)
    data = dict(data_bytes=ch.bytes, data_files=ch.expected, quiet_s=WATCH_QUIET_S,
                sync_every_s=WATCH_SYNC_EVERY_S, check_every_s=WATCH_CHECK_EVERY_S, poll_s=WATCH_POLL_S, transport="http")
    print("%s %s: writing into A" % (experiment, human_bytes(ch.n) if not ch.burst else "%d files" % ch.n),
          flush=True)
    a.new_lines()
    b.new_lines()
    a_lines, b_lines, commits = [], [], []
    added = 0
    t_commit = t_arrive = None
    os.sync()  # untimed
    start = time.monotonic()
    ch.write(rep["A"])
    t0 = time.monotonic()
    deadline = t0 + min(rec.timeout, WATCH_WAIT_S)
    while time.monotonic() < deadline and (t_commit is None or t_arrive is None):
        now = time.monotonic()
        for line in a.new_lines():
            a_lines.append(line)
            m = COMMITTED.search(line)
            if m:
                commits.append(dict(id=m.group(1), added=int(m.group(2)), at_s=round(now - t0, 3), line=line[-200:]))
                added += int(m.group(2))
                if t_commit is None and added >= ch.expected:
                    t_commit = now
        b_lines += b.new_lines()
        if t_arrive is None and ch.seen(rep["B"]):
            seen = time.monotonic()
            if ch.same(rep["B"]):
                t_arrive = seen
        if not (a.alive() and b.alive()):
            break
        time.sleep(WATCH_POLL_S)
    calm = _calm([a, b], WATCH_CALM_S, 120)  # the sync that follows the arrival has ended too
    a_lines += a.new_lines()
    b_lines += b.new_lines()
    heads = (_head(dmv, rep["A"], rec.env), _head(dmv, rep["B"], rec.env))
    common = dict(data, write_s=round(t0 - start, 6), commits=len(commits), commit_log=commits[:10],
                  a_log=a_lines[-12:], b_log=b_lines[-12:], heads_equal=heads[0] is not None and heads[0] == heads[1],
                  calm_after=calm, watcher_a_peak_rss_kib=a.status("VmHWM"), watcher_b_peak_rss_kib=b.status("VmHWM"))

    def outcome(t, what):
        if t is not None:
            return Outcome(wall_s=t - t0)
        why = "watcher %s ended" % ("A" if not a.alive() else "B") if not (a.alive() and b.alive()) else \
            "timeout after %ss" % min(rec.timeout, WATCH_WAIT_S)
        return Outcome(wall_s=time.monotonic() - t0, ok=False, timed_out=why.startswith("timeout"),
                       error="%s: %s; A logged: %s; B logged: %s" % (
                           what, why, " / ".join(a_lines[-5:]) or "nothing", " / ".join(b_lines[-5:]) or "nothing"))
    out = outcome(t_commit, "no commit of every file on A")
    out.peak_rss_kib = common["watcher_a_peak_rss_kib"] or 0
    rec.record(dmv, experiment, param, "commit", out, os.path.join(rep["A"], ".dmv"),
               commit_minus_quiet_s=round(out.wall_s - WATCH_QUIET_S, 6) if out.ok else None, **common)
    out2 = outcome(t_arrive, "the files did not arrive on B")
    out2.peak_rss_kib = common["watcher_b_peak_rss_kib"] or 0
    rec.record(dmv, experiment, param, "arrive", out2, os.path.join(rep["B"], ".dmv"), verified=t_arrive is not None,
               arrive_after_commit_s=round(t_arrive - t_commit, 6) if t_arrive and t_commit else None, **common)
    # By hand, in the unwatched replicas C and D of the other hub: the same data committed, pushed, pulled,
    # back to back. Then the floor: cp -r of the same data on the same disk.
    if ch.burst:
        shutil.copytree(ch.staging, os.path.join(rep["C"], ch.top))
    else:
        shutil.copy(ch.staging, os.path.join(rep["C"], ch.top))
    hand = dict(data, transport="http")
    steps = [("commit_by_hand", [dmv.cmd(pt, "add", ".", cwd=rep["C"]), dmv.cmd(pt, "commit", "-m", "m", cwd=rep["C"])],
              rep["C"], None),
             ("push_by_hand", [dmv.cmd(pt, "push", cwd=rep["C"])], rep["C"], None),
             ("pull_by_hand", [dmv.cmd(pt, "pull", cwd=rep["D"])], rep["D"], lambda: ch.same(rep["D"]))]
    for name, cmds, where, check in steps:
        os.sync()  # untimed

        def after(out, check=check):
            extra = dict(hand)
            if check and out.ok:
                extra["verified"] = check()
                if not extra["verified"]:
                    out.ok, out.error = False, "the pulled files differ from the data"
            return extra
        out = rec.step(dmv, experiment, param, name, cmds, os.path.join(where, ".dmv"), after=after)
        if not out.ok:
            break
    copy = os.path.join(pt.root, "copy-%s" % ch.top)
    os.sync()

    def copied(out):
        extra = dict(data, transport="local")
        if out.ok:
            extra["verified"] = (datagen.tree_hash(copy)[0] if ch.burst else datagen.file_hash(copy)) == ch.hash
            if not extra["verified"]:
                out.ok, out.error = False, "the copy differs from the data"
        return extra
    rec.step(_Floor, experiment, param, "copy", [Cmd(["cp", "-r", ch.staging, copy], cwd=pt.root)], None,
             after=copied)


def _watch_stop(ctx, dmv, watchers):
    """SIGTERM to each watcher: it must log `stopped` and exit 0. Recorded as `watch-watchers`: its whole life."""
    for w in watchers:
        hwm, cpu = w.status("VmHWM"), w.cpu()
        code = w.stop()
        text = w.text()
        counts = _log_counts(text)
        ok = code == 0 and counts["log_stopped"]
        out = Outcome(wall_s=w.lifetime_s or 0.0, peak_rss_kib=w.gnu_time_rss() or hwm or 0, ok=ok,
                      error=None if ok else "exit %s after SIGTERM%s; log: %s; stderr: %s" % (
                          code, "" if counts["log_stopped"] else " (no `stopped` line)",
                          " / ".join(text.splitlines()[-5:]), w.err_tail()))
        ctx.rec.record(dmv, "watch-watchers", str(len(watchers)), "replica_%s" % w.name, out, None,
                       exit_code=code, stop_s=round(w.stopped_s, 3) if w.stopped_s is not None else None,
                       vm_hwm_kib=hwm, cpu_s=cpu[0], cpu_schedstat_s=cpu[1], args=w.args,
                       quiet_s=WATCH_QUIET_S, sync_every_s=WATCH_SYNC_EVERY_S, check_every_s=WATCH_CHECK_EVERY_S, **counts)


# ---- idle windows: what /proc says a process did over a window

def _proc_read(pid):
    """A live process now, from /proc: dict(ticks: utime + stime of the whole process in clock ticks, its
    ended threads included; tasks: {tid: (run time in ns from schedstat, voluntary, involuntary context
    switches)} of its live threads; rss, hwm: VmRSS, VmHWM in KiB; threads), or None once it has ended."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        status = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                status[key] = value.split()
        tids = os.listdir("/proc/%d/task" % pid)
    except (OSError, IndexError, ValueError):
        return None
    if fields[0] in "ZX":
        return None
    tasks = {}
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                run = int(f.read().split()[0])
            switches = {}
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        switches[line.split(":")[0]] = int(line.split()[1])
            tasks[int(tid)] = (run, switches["voluntary_ctxt_switches"], switches["nonvoluntary_ctxt_switches"])
        except (OSError, IndexError, ValueError, KeyError):
            continue  # the thread ended meanwhile
    num = lambda key: int(status[key][0]) if status.get(key) else None
    return dict(ticks=ticks, tasks=tasks, rss=num("VmRSS"), hwm=num("VmHWM"), threads=num("Threads"))


class _ProcWindow:
    """One process followed over a window: /proc read at its start, every WATCH_IDLE_SAMPLE_S and at its end.
    CPU: utime + stime of the whole process (clock ticks). Run time (schedstat, ns) and context switches:
    summed over its threads, each from its first to its last reading in the window (a thread that started in
    the window counts from its start; one that ended keeps what it did until its last reading, and what it
    did after that is lost)."""

    def __init__(self, pid):
        self.pid = pid
        self.first = _proc_read(pid)
        self.t0 = time.monotonic()
        self.base = dict(self.first["tasks"]) if self.first else {}
        self.seen = dict(self.base)
        self.last, self.t1, self.samples = self.first, self.t0, 1

    def sample(self):
        now = _proc_read(self.pid)
        if now is None:
            return False
        self.seen.update(now["tasks"])
        self.last, self.t1 = now, time.monotonic()
        self.samples += 1
        return True

    def result(self):
        """The window's figures (CPU per hour, context switches per minute), or {} when the process ended."""
        if not self.first or not self.last or self.t1 <= self.t0:
            return {}
        window = self.t1 - self.t0
        tick = 1.0 / os.sysconf("SC_CLK_TCK")
        cpu = (self.last["ticks"] - self.first["ticks"]) * tick
        run, vol, invol = (sum(v[i] - self.base.get(tid, (0, 0, 0))[i] for tid, v in self.seen.items())
                           for i in range(3))
        return dict(window_s=round(window, 3), cpu_s=round(cpu, 3), clock_tick_s=tick,
                    cpu_s_per_hour=round(cpu * 3600 / window, 3), cpu_percent=round(100 * cpu / window, 4),
                    run_s=round(run / 1e9, 6), run_s_per_hour=round(run / 1e9 * 3600 / window, 4),
                    ctx_voluntary=vol, ctx_involuntary=invol, wakeups=vol + invol,
                    wakeups_per_min=round((vol + invol) * 60 / window, 2),
                    voluntary_per_min=round(vol * 60 / window, 2), threads_start=self.first["threads"],
                    threads_end=self.last["threads"], threads_started=len(set(self.seen) - set(self.base)),
                    threads_ended=len(set(self.seen) - set(self.last["tasks"])), vm_rss_kib=self.last["rss"],
                    vm_hwm_kib=self.last["hwm"], samples=self.samples)


def _idle_window(pids, seconds):
    """Follows each process over `seconds` seconds; returns their _ProcWindow, in order."""
    wins = [_ProcWindow(p) for p in pids]
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(WATCH_IDLE_SAMPLE_S, left))
        for w in wins:
            w.sample()
    return wins


def _wait_quiet(pids, timeout, window=1.0):
    """Seconds until every process used at most one clock tick of CPU in each of two `window`s in a row, or
    None after `timeout` seconds (or once one has ended)."""
    start = time.monotonic()

    def ticks():
        now = [_proc_read(p) for p in pids]
        return None if any(r is None for r in now) else [r["ticks"] for r in now]
    last, calm = ticks(), 0
    while last is not None and time.monotonic() - start < timeout:
        time.sleep(window)
        now = ticks()
        if now is None:
            return None
        calm = calm + 1 if all(b - a <= 1 for a, b in zip(last, now)) else 0
        last = now
        if calm >= 2:
            return time.monotonic() - start
    return None


def _request_kinds(lines):
    """Access-log lines (`dmv serve: METHOD /NAME/dmv/VERB STATUS BYTES`) counted by VERB (and by status)."""
    kinds, statuses = {}, {}
    for line in lines:
        words = line.split()
        kind = words[3].rsplit("/", 1)[-1] if len(words) > 4 else "?"
        kinds[kind] = kinds.get(kind, 0) + 1
        status = words[4] if len(words) > 4 else "?"
        statuses[status] = statuses.get(status, 0) + 1
    return kinds, statuses


def _watch_idle_sync(ctx, dmv, a, b, srv, seconds):
    """After the latency points: both synced watchers and their hub left alone for `seconds` seconds, once
    all three used at most one clock tick of CPU in each of two 1-second windows in a row. Per process: CPU,
    threads' run time, context switches, VmRSS and VmHWM over the window (_ProcWindow); the hub's requests
    answered in the window (its access log: a line per request, written when the request is answered, so a
    long poll counts when it ends). Recorded as `watch-idle-sync` (parameter: 2), steps `replica_a`,
    `replica_b`, `hub`; a watcher that commits, or any process that ends, fails its step."""
    rec = ctx.rec
    experiment, param = "watch-idle-sync", "2"
    print("%s: both watchers and the hub left alone for %.0f s" % (experiment, seconds), flush=True)
    quiet = _wait_quiet([a.pid, b.pid, srv.proc.pid], WATCH_IDLE_WAIT_S)
    a.new_lines()
    b.new_lines()
    t0 = time.monotonic()
    wins = _idle_window([a.pid, b.pid, srv.proc.pid], seconds)
    t1 = time.monotonic()
    time.sleep(0.2)  # the drain thread reads the last lines
    requests = [(t - t0, line) for t, line in list(srv.requests) if t0 <= t < t1]
    kinds, statuses = _request_kinds([line for _, line in requests])
    logs = {"a": a.new_lines(), "b": b.new_lines()}
    common = dict(quiet_s=WATCH_QUIET_S, sync_every_s=WATCH_SYNC_EVERY_S, check_every_s=WATCH_CHECK_EVERY_S,
                  transport="http", idle_s=seconds, sample_s=WATCH_IDLE_SAMPLE_S,
                  quiet_after_s=round(quiet, 3) if quiet is not None else None)
    for w, win, step in ((a, wins[0], "replica_a"), (b, wins[1], "replica_b"), (None, wins[2], "hub")):
        fields = win.result()
        if w is not None:
            lines = logs[w.name]
            committed = [l for l in lines if " committed " in l]
            fields.update(args=w.args, log=lines[-12:], log_lines=len(lines), log_committed=len(committed))
            alive, what = w.alive(), "watcher %s" % w.name.upper()
        else:
            committed = []
            window = fields.get("window_s") or (t1 - t0)
            fields.update(requests=len(requests), requests_per_hour=round(len(requests) * 3600 / window, 1),
                          requests_by_kind=kinds, requests_by_status=statuses,
                          request_log=["+%.1f s: %s" % (t, line) for t, line in requests[:40]],
                          requests_since_start=len(srv.requests))
            alive, what = srv.proc.poll() is None, "dmv serve"
        ok = alive and bool(fields) and not committed
        error = None if ok else "%s %s" % (what, "ended" if not alive or not fields else
                                          "committed during the window: %s" % " / ".join(committed[-3:]))
        rec.record(dmv, experiment, param, step, Outcome(
            wall_s=fields.get("window_s", t1 - t0), peak_rss_kib=fields.get("vm_hwm_kib") or 0, ok=ok,
            error=error), None, **dict(common, **fields))


# ---- the peer: Syncthing

SYNCTHING_FOLDER = "bench"           # the shared folder's id
SYNCTHING_WATCHER_DELAY_S = 1        # the folder's fsWatcherDelayS (default 10): DMV's --quiet
SYNCTHING_START_S = 120              # both up, connected to each other and done scanning within this
# options changed in config.xml before the first start: the two instances know each other's address, so no
# discovery, relays, NAT traversal (UPnP, NAT-PMP, STUN), usage or crash reporting or upgrades; and no lower
# priority (`setLowPriority`, default true: nice and ionice), as dmv watch runs at the default priority
SYNCTHING_OPTIONS = dict(globalAnnounceEnabled="false", localAnnounceEnabled="false", relaysEnabled="false",
                         natEnabled="false", stunKeepaliveStartS="0", urAccepted="-1", crashReportingEnabled="false",
                         startBrowser="false", autoUpgradeIntervalH="0", announceLANAddresses="false",
                         setLowPriority="false")


# Syncthing runs as two processes (a monitor and the process that syncs, its child); PR_SET_PDEATHSIG reaches
# only the first. So it runs under this shell, in a session of its own: when the suite ends, however, the shell
# gets SIGTERM and passes it to the whole session (no Syncthing outlives the suite).
SYNCTHING_GUARD = 'trap "kill -TERM 0; exit 143" TERM; "$@" & wait $!'


def _term_with_parent():
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child_of(pid):
    """The first child of a process (any of its threads may have started it), or None."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except (OSError, TypeError):
        return None
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids = f.read().split()
        except OSError:
            continue
        if kids:
            return int(kids[0])
    return None


class _SyncthingPeer:
    """One Syncthing instance: its home (config.xml, keys, database) made by `syncthing generate`, config.xml
    edited before the first start (SYNCTHING_OPTIONS; the other instance as a device at
    tcp://127.0.0.1:PORT; one shared folder, fsWatcherEnabled with fsWatcherDelayS
    SYNCTHING_WATCHER_DELAY_S), then `syncthing serve --home HOME --no-browser --no-restart --no-upgrade
    --gui-address=...` in the foreground as a child of the suite (its log to a file; it dies with the suite).
    That process (`pid`) is Syncthing's monitor: it starts the process that syncs (`inner_pid()`, its one
    child) and would restart it (--no-restart: not after a crash); both are measured. The REST API (the
    config's API key) tells whether it is connected and done."""

    def __init__(self, tool, root, name, env):
        self.tool, self.name = tool, name
        self.home = os.path.join(root, "syncthing-%s" % name)
        self.folder = os.path.join(root, name.upper())
        self.log = os.path.join(root, "syncthing-%s.log" % name)
        self.env = dict(env, STNODEFAULTFOLDER="1", STNOUPGRADE="1", STNORESTART="1")
        self.port, self.gui_port = servers.free_port(), servers.free_port()
        self.proc = self.pid = self.device_id = self.api_key = None
        self.exit_code, self.started = None, None

    def generate(self):
        r = subprocess.run([self.tool.path, "generate", "--home", self.home, "--no-default-folder",
                            "--skip-port-probing"], env=self.env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise servers.ServerError("syncthing generate: exit %d: %s" % (r.returncode, (r.stdout + r.stderr)[-300:]))
        import xml.etree.ElementTree as ET
        root = ET.parse(os.path.join(self.home, "config.xml")).getroot()
        self.device_id = root.find("device").get("id")
        self.api_key = root.find("gui/apikey").text
        return self

    def configure(self, peer):
        import copy
        import xml.etree.ElementTree as ET
        path = os.path.join(self.home, "config.xml")
        tree = ET.parse(path)
        root = tree.getroot()
        me = root.find("device")
        me.set("name", self.name)
        root.find("gui/address").text = "127.0.0.1:%d" % self.gui_port
        options = root.find("options")
        for key, value in dict(SYNCTHING_OPTIONS, listenAddress="tcp://127.0.0.1:%d" % self.port).items():
            element = options.find(key)
            if element is None:
                element = ET.SubElement(options, key)
            element.text = value
        defaults = root.find("defaults")
        other = copy.deepcopy(defaults.find("device"))  # every field at its default
        other.set("id", peer.device_id)
        other.set("name", peer.name)
        other.find("address").text = "tcp://127.0.0.1:%d" % peer.port
        root.insert(list(root).index(me) + 1, other)
        folder = copy.deepcopy(defaults.find("folder"))
        folder.set("id", SYNCTHING_FOLDER)
        folder.set("label", SYNCTHING_FOLDER)
        folder.set("path", self.folder)
        folder.set("type", "sendreceive")
        folder.set("fsWatcherEnabled", "true")
        folder.set("fsWatcherDelayS", str(SYNCTHING_WATCHER_DELAY_S))
        shared = folder.find("device")
        for device_id in (self.device_id, peer.device_id):
            d = copy.deepcopy(shared)
            d.set("id", device_id)
            folder.append(d)
        folder.remove(shared)
        root.insert(0, folder)
        tree.write(path)
        os.makedirs(os.path.join(self.folder, ".stfolder"), exist_ok=True)  # the folder marker
        return self

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                ["sh", "-c", SYNCTHING_GUARD, "sh", self.tool.path, "serve", "--home", self.home, "--no-browser",
                 "--no-restart", "--no-upgrade", "--gui-address=http://127.0.0.1:%d" % self.gui_port,
                 "--logflags=3"],
                env=self.env, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_term_with_parent)
        self.started = time.monotonic()
        deadline = time.monotonic() + 10
        while self.pid is None and time.monotonic() < deadline and self.proc.poll() is None:
            self.pid = _child_of(self.proc.pid)
            time.sleep(0.005)
        if self.pid is None:
            raise servers.ServerError("syncthing did not start: %s" % self.log_tail())
        return self

    def alive(self):
        """Whether the monitor runs (it starts the process that syncs anew if that one ends)."""
        return self.proc is not None and self.proc.poll() is None and _child_of(self.proc.pid) == self.pid

    def inner_pid(self):
        """The process that syncs: the monitor's one child (looked up each time: the monitor may start
        another), or None."""
        return _child_of(self.pid)

    def rest(self, path):
        """GET /rest/PATH as JSON, or None."""
        import urllib.request
        req = urllib.request.Request("http://127.0.0.1:%d/rest/%s" % (self.gui_port, path),
                                     headers={"X-API-Key": self.api_key})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read().decode("utf-8"))
        except (OSError, ValueError):
            return None

    def state(self):
        """The shared folder's state ("idle", "scanning", "syncing", ...) and its items still needed."""
        st = self.rest("db/status?folder=%s" % SYNCTHING_FOLDER) or {}
        return st.get("state"), st.get("needTotalItems")

    def connected(self, peer):
        conns = (self.rest("system/connections") or {}).get("connections") or {}
        return bool((conns.get(peer.device_id) or {}).get("connected"))

    def log_tail(self, n=400):
        return _read_text(self.log)[-n:].strip().replace("\n", " / ")

    def stop(self, timeout=30):
        """SIGTERM to the monitor (it stops the process that syncs); its exit code, or None if the group had to
        be killed."""
        if self.proc is None or self.exit_code is not None:
            return self.exit_code
        if self.proc.poll() is None and self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            self.exit_code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever is left of its session
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        return self.exit_code


def _syncthing_in_sync(a, b):
    """Both instances idle, B needing nothing, and A seeing B complete."""
    (sa, na), (sb, nb) = a.state(), b.state()
    done = (a.rest("db/completion?folder=%s&device=%s" % (SYNCTHING_FOLDER, b.device_id)) or {}).get("completion")
    return sa == "idle" and sb == "idle" and not na and not nb and done == 100


def _syncthing_wait(a, b, timeout, connected=False):
    """Seconds until both are alive (and connected) and in sync, or None after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not (a.alive() and b.alive()):
            return None
        if (not connected or (a.connected(b) and b.connected(a))) and _syncthing_in_sync(a, b):
            return time.monotonic() - start
        time.sleep(0.2)
    return None


def _watch_syncthing(ctx, st, why, points, settle, idle_s):
    """The peer of the latency points and the synced idle window: two Syncthing instances A and B on
    127.0.0.1 sharing one folder. The same data as DMV's written into A's folder; from the last close until
    B's folder holds the files with the same bytes (step `arrive`, tool `syncthing`); then both left alone
    for `idle_s` seconds (`watch-idle-sync`, steps `replica_a`, `replica_b`). Without Syncthing, every point
    is recorded as skipped with `why`."""
    rec = ctx.rec
    if st is None:
        for experiment, n, _ in points:
            rec.note("syncthing", experiment, str(n), "arrive", "skipped", why or "syncthing is not installed")
        rec.note("syncthing", "watch-idle-sync", "2", "all", "skipped", why or "syncthing is not installed")
        return
    size = max(n for e, n, _ in points if e == "watch-file")
    need = 4 * size + GiB  # A, B, the staging copy, B's temporary file
    if free_bytes(ctx.workdir) < need:
        for experiment, n, _ in points:
            rec.note("syncthing", experiment, str(n), "arrive", "skipped", "not enough free disk: need %s" %
                     human_bytes(need))
        return
    pt = ctx.point("watch-syncthing", 2)
    peers = []
    try:
        print("watch: Syncthing A and B on 127.0.0.1, one shared folder (untimed)", flush=True)
        staging = os.path.join(pt.root, "staging")
        changes = [_Change(experiment, n, staging, seed) for experiment, n, seed in points]
        a = _SyncthingPeer(st, pt.root, "a", rec.env).generate()
        peers.append(a)
        b = _SyncthingPeer(st, pt.root, "b", rec.env).generate()
        peers.append(b)
        a.configure(b)
        b.configure(a)
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        a.start()
        b.start()
        up = _syncthing_wait(a, b, SYNCTHING_START_S, connected=True)
        if up is None:
            raise servers.ServerError("syncthing A and B not connected and idle after %d s: A: %s; B: %s" % (
                SYNCTHING_START_S, a.log_tail(), b.log_tail()))
        print("  connected and idle %.1f s after the start" % up, flush=True)
        for ch in changes:
            _syncthing_change(ctx, st, ch, a, b, up)
        _syncthing_idle(ctx, st, a, b, idle_s)
    except (servers.ServerError, OSError, subprocess.SubprocessError, ValueError, AttributeError, SyntaxError) as e:
        # SyntaxError: xml.etree's ParseError (a config.xml it cannot read); AttributeError: one without a field
        print("watch: %s" % e, flush=True)
        for experiment, n, _ in points + [("watch-idle-sync", 2, None)]:
            rec.note("syncthing", experiment, str(n), "all", "fail", str(e))
    finally:
        for p in peers:
            p.stop(timeout=10)
        shutil.rmtree(pt.root, ignore_errors=True)


def _syncthing_change(ctx, st, ch, a, b, up_s):
    """One point: the writer writes into A's folder; the suite looks at B's folder every WATCH_POLL_S."""
    rec = ctx.rec
    experiment, param = ch.experiment, str(ch.n)
    print("%s %s: writing into Syncthing's A" % (experiment, human_bytes(ch.n) if not ch.burst else
                                                 "%d files" % ch.n), flush=True)
    os.sync()  # untimed
    start = time.monotonic()
    ch.write(a.folder)
    t0 = time.monotonic()
    t_arrive = None
    deadline = t0 + min(rec.timeout, WATCH_WAIT_S)
    while time.monotonic() < deadline and t_arrive is None:
        if ch.seen(b.folder):
            seen = time.monotonic()
            if ch.same(b.folder):
                t_arrive = seen
        if not (a.alive() and b.alive()):
            break
        time.sleep(WATCH_POLL_S)
    if t_arrive is not None:
        out = Outcome(wall_s=t_arrive - t0)
    else:
        why = "syncthing %s ended" % ("A" if not a.alive() else "B") if not (a.alive() and b.alive()) else \
            "timeout after %ss" % min(rec.timeout, WATCH_WAIT_S)
        out = Outcome(wall_s=time.monotonic() - t0, ok=False, timed_out=why.startswith("timeout"),
                      error="the files did not arrive on B: %s; A: %s; B: %s" % (why, a.log_tail(), b.log_tail()))
    calm = _syncthing_wait(a, b, 120)  # both done (B's index sent back to A) before the next point
    hwm_a, hwm_b = (servers.vm_hwm_kib(p.inner_pid() or p.pid) for p in (a, b))  # the process that syncs
    out.peak_rss_kib = hwm_b or 0
    rec.record(st, experiment, param, "arrive", out, b.home, verified=t_arrive is not None,
               data_bytes=ch.bytes, data_files=ch.expected, write_s=round(t0 - start, 6),
               fs_watcher_delay_s=SYNCTHING_WATCHER_DELAY_S, poll_s=WATCH_POLL_S, transport="tcp (127.0.0.1)",
               in_sync_after_s=round(calm, 3) if calm is not None else None, up_s=round(up_s, 3),
               a_peak_rss_kib=hwm_a, b_peak_rss_kib=hwm_b, options=SYNCTHING_OPTIONS)


def _sum_windows(results):
    """The additive figures of several processes' windows summed (CPU, run time, context switches)."""
    keys = ("cpu_s", "cpu_s_per_hour", "run_s", "run_s_per_hour", "ctx_voluntary", "ctx_involuntary", "wakeups",
            "wakeups_per_min", "voluntary_per_min")
    if not all(results):
        return {}
    return {k: round(sum(r[k] for r in results), 6) for k in keys}


def _syncthing_idle(ctx, st, a, b, seconds):
    """Both instances left alone for `seconds` seconds once their processes used at most one clock tick of CPU
    in each of two 1-second windows in a row (no REST call in the window): as _watch_idle_sync, without a
    hub. Each instance's record: CPU, run time and context switches of its two processes summed (the process
    that syncs and its monitor; each apart in `syncing_process` and `monitor_process`), VmRSS and VmHWM of the
    process that syncs (the monitor's as `monitor_vm_rss_kib`, `monitor_vm_hwm_kib`)."""
    rec = ctx.rec
    print("watch-idle-sync: Syncthing A and B left alone for %.0f s" % seconds, flush=True)
    pids = [a.inner_pid(), a.pid, b.inner_pid(), b.pid]
    if None in pids:
        rec.note("syncthing", "watch-idle-sync", "2", "all", "fail", "syncthing ended before the idle window: A: %s; B: %s" % (
            a.log_tail(), b.log_tail()))
        return
    quiet = _wait_quiet(pids, WATCH_IDLE_WAIT_S)
    size0 = [os.path.getsize(p.log) for p in (a, b)]
    wins = [w.result() for w in _idle_window(pids, seconds)]
    for p, (inner, monitor), step, size in ((a, wins[0:2], "replica_a", size0[0]),
                                            (b, wins[2:4], "replica_b", size0[1])):
        fields = dict(inner, **_sum_windows([inner, monitor])) if inner and monitor else {}
        if fields:
            fields.update(syncing_process=inner, monitor_process=monitor, monitor_vm_rss_kib=monitor["vm_rss_kib"],
                          monitor_vm_hwm_kib=monitor["vm_hwm_kib"])
        lines = _read_text(p.log)[size:].splitlines()
        ok = p.alive() and p.inner_pid() == pids[0 if p is a else 2] and bool(fields)
        rec.record(st, "watch-idle-sync", "2", step, Outcome(
            wall_s=fields.get("window_s", seconds), peak_rss_kib=fields.get("vm_hwm_kib") or 0, ok=ok,
            error=None if ok else "syncthing %s ended: %s" % (p.name.upper(), p.log_tail())), None,
            idle_s=seconds, sample_s=WATCH_IDLE_SAMPLE_S, quiet_after_s=round(quiet, 3) if quiet is not None else None,
            fs_watcher_delay_s=SYNCTHING_WATCHER_DELAY_S, log=lines[-12:], log_lines=len(lines), **fields)


def _watch_idle(ctx, dmv, files, idle_s):
    """A replica with `files` files of 1 KiB committed (untimed), then `dmv watch --quiet WATCH_QUIET_S`
    (no sync): once it logged `watching` and used no CPU for two seconds in a row (its first pass, which
    finds nothing to commit, done), its CPU time (utime + stime, /proc/PID/stat) over `idle_s` seconds of
    nothing changing, its VmHWM, then SIGTERM."""
    rec = ctx.rec
    experiment, param = "watch-idle", str(files)
    pt = ctx.point(experiment, files)
    w = None
    try:
        print("%s %d: writing %d files, dmv add . && dmv commit (untimed)" % (experiment, files, files), flush=True)
        datagen.write_tree(pt.work, files, seed=41)
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True), dmv, experiment, param, "prepare"):
            return
        head = _head(dmv, pt.work, rec.env)
        os.sync()
        w = _Watcher(dmv, pt.work, rec.env, ["--quiet", str(WATCH_QUIET_S)], "idle", pt.root).start()
        up = w.wait_for(" watching ", 120)
        if up is None:
            rec.note("dmv", experiment, param, "idle", "fail", "the watcher did not start: %s %s" % (
                w.text()[-300:], w.err_tail()))
            return
        idle_at = w.wait_idle(120)
        ticks0, ns0 = w.cpu()
        t = time.monotonic()
        time.sleep(idle_s)
        ticks1, ns1 = w.cpu()
        window = time.monotonic() - t
        fields = dict(data_files=files, data_bytes=files * datagen.SMALL_FILE_SIZE, quiet_s=WATCH_QUIET_S,
                      startup_s=round(up, 3), idle_after_s=round(idle_at, 3) if idle_at is not None else None,
                      window_s=round(window, 3), vm_hwm_kib=w.status("VmHWM"), vm_rss_kib=w.status("VmRSS"),
                      threads=w.status("Threads"), inotify_watches=w.inotify_watches(), mode_line=(
                          w.text().splitlines() or [""])[0][-200:])
        if ticks0 is not None and ticks1 is not None:
            cpu = ticks1 - ticks0
            fields.update(cpu_s=round(cpu, 3), cpu_s_per_min=round(cpu * 60 / window, 4),
                          cpu_percent=round(100 * cpu / window, 4), clock_tick_s=1.0 / os.sysconf("SC_CLK_TCK"))
        if ns0 is not None and ns1 is not None:
            fields.update(cpu_schedstat_s=round(ns1 - ns0, 6), cpu_schedstat_s_per_min=round((ns1 - ns0) * 60 / window, 6))
        committed = [l for l in w.text().splitlines() if " committed " in l]
        fields.update(log_committed=len(committed), head_unchanged=_head(dmv, pt.work, rec.env) == head)
        ok = ticks1 is not None and w.alive() and not committed
        rec.record(dmv, experiment, param, "idle", Outcome(
            wall_s=window, peak_rss_kib=fields["vm_hwm_kib"] or 0, ok=ok,
            error=None if ok else "watcher %s; log: %s" % ("ended" if not w.alive() else "committed during the window",
                                                           " / ".join(w.text().splitlines()[-5:]))),
            os.path.join(pt.work, ".dmv"), **fields)
        hwm, cpu = w.status("VmHWM"), w.cpu()
        code = w.stop()
        counts = _log_counts(w.text())
        ok = code == 0 and counts["log_stopped"]
        rec.record(dmv, experiment, param, "stop", Outcome(
            wall_s=w.stopped_s or 0.0, peak_rss_kib=w.gnu_time_rss() or fields["vm_hwm_kib"] or 0, ok=ok,
            error=None if ok else "exit %s after SIGTERM; log: %s; stderr: %s" % (
                code, " / ".join(w.text().splitlines()[-5:]), w.err_tail())),
            None, exit_code=code, lifetime_s=round(w.lifetime_s, 3), vm_hwm_kib=hwm, cpu_s=cpu[0],
            cpu_schedstat_s=cpu[1], args=w.args, quiet_s=WATCH_QUIET_S, data_files=files, **counts)
    finally:
        if w:
            w.stop(timeout=10)
        shutil.rmtree(pt.root, ignore_errors=True)


# ---------------------------------------------------------------- mount (experiment `mount`, issue 46)

MOUNT_REPEATS = 5            # fresh mounts per measure for dmv (and the working tree): the report takes medians
MOUNT_PEER_REPEATS = 3       # the same for restic mount and bup fuse (slower: fewer)
MOUNT_BUP_LIST_S = 60        # bup fuse's `ls -l` of the big folder is tried once and stopped after this
MOUNT_READS = 100            # reads at random offsets in the meta replica
MOUNT_READ_BYTES = 1 << 20   # each of this many bytes
MOUNT_SEED = 46              # their offsets: random.Random(MOUNT_SEED)
MOUNT_WAIT_S = 60            # a mount that does not show its folder, or a log without its `unmounted` line
MOUNT_FOLDER = "files"       # the listing's one folder
MOUNT_FILE = "big.bin"       # the one large file (and the file read at random offsets in a meta replica)
MOUNT_SEQ_FILE = "seq.bin"   # in a meta replica, the file read whole (as large as the one large file)
MOUNT_HUB = "hub"            # the served bare repository's name
UNMOUNTED = re.compile(r"^unmounted (.+?)(?: \((\d+) bytes fetched from other replicas, kept here\))?$")

# run as a child (`python3 -c`): reads through the mount, each checked against the source; prints JSON
MOUNT_READS_SCRIPT = r"""
import json, os, random, sys, time
path, source = sys.argv[1], sys.argv[2]
size, count, length, seed = (int(a) for a in sys.argv[3:7])
rng = random.Random(seed)
offsets = [rng.randrange(0, size - length + 1) for _ in range(count)]
fd, src = os.open(path, os.O_RDONLY), os.open(source, os.O_RDONLY)
seconds, got, bad = [], 0, []
for off in offsets:
    t = time.perf_counter()
    data = os.pread(fd, length, off)
    seconds.append(time.perf_counter() - t)
    got += len(data)
    if data != os.pread(src, length, off):
        bad.append(off)
os.close(fd)
os.close(src)
print(json.dumps(dict(offsets=offsets, seconds=seconds, bytes=got, mismatches=len(bad), bad_offsets=bad[:10])))
"""


def _mount_points():
    """The mount points of this machine (from /proc/self/mounts)."""
    try:
        with open("/proc/self/mounts") as f:
            return {line.split()[1].encode().decode("unicode_escape") for line in f if line.strip()}
    except OSError:
        return set()


def _serving(mnt):
    """Processes serving the mount folder `mnt`: a command line with `mnt` itself as an argument and `mount`
    or `fuse` as another (dmv's mount process, restic mount, bup fuse; not `fusermount3 -u MNT`)."""
    pids, want = [], mnt.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if want in argv and (b"mount" in argv or b"fuse" in argv):
            pids.append(int(d))
    return pids


def _unmount(mnt, argv, env, proc=None):
    """Unmounts `mnt` with `argv` (`dmv umount MNT`, `fusermount3 -u MNT`); if it stays mounted, lazily
    (`fusermount3 -uz`); then waits for what served it to end (`proc`, or the processes found by
    _serving), killing it after 10 s. Returns what went wrong, or None."""
    problems = []
    if mnt in _mount_points():
        try:
            r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                problems.append("%s: exit %d: %s" % (" ".join(argv[:2]), r.returncode, (r.stdout + r.stderr).strip()[-300:]))
        except (OSError, subprocess.TimeoutExpired) as e:
            problems.append("%s: %s" % (" ".join(argv[:2]), e))
        deadline = time.monotonic() + 10
        while mnt in _mount_points() and time.monotonic() < deadline:
            time.sleep(0.05)
        if mnt in _mount_points():
            subprocess.run(["fusermount3", "-uz", mnt], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
            problems.append("still mounted 10 s after %s: unmounted lazily (fusermount3 -uz)" % " ".join(argv[:2]))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = (proc.poll() is None) if proc is not None else bool(_serving(mnt))
        if not alive:
            break
        time.sleep(0.05)
    else:
        problems.append("the mount's process had not ended 10 s after the unmount: killed")
        for pid in ([proc.pid] if proc is not None else []) + _serving(mnt):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc is not None:
            proc.wait()
    return "; ".join(problems) or None


def _mount_cleanup(root, env):
    """Every mount left under `root` unmounted (lazily) and what served it ended: on every way out."""
    for mnt in sorted(m for m in _mount_points() if m == root or m.startswith(root.rstrip("/") + "/")):
        print("  cleaning up a mount left at %s" % mnt, flush=True)
        _unmount(mnt, ["fusermount3", "-uz", mnt], env)
    for mnt in (os.path.join(root, d) for d in (os.listdir(root) if os.path.isdir(root) else [])):
        for pid in _serving(mnt):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class _MountLog:
    """A repository's .dmv/mount.log: the lines written since `mark`, and the `unmounted` line of a mount's end."""

    def __init__(self, repo):
        self.path = os.path.join(repo, ".dmv", "mount.log")
        self.offset = 0
        self.mark()

    def mark(self):
        try:
            self.offset = os.path.getsize(self.path)
        except OSError:
            self.offset = 0

    def since(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                return f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []

    def wait_unmounted(self, timeout=MOUNT_WAIT_S):
        """(the `unmounted` line or None, the bytes fetched it names or None, every line since `mark`)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.since()
            for line in lines:
                m = UNMOUNTED.match(line.strip())
                if m:
                    return line.strip(), (int(m.group(2)) if m.group(2) else 0), lines
            if time.monotonic() > deadline:
                return None, None, lines
            time.sleep(0.05)

    @staticmethod
    def odd(lines):
        """The lines that are neither a mount's start nor its end (failed reads and the like)."""
        return [l for l in lines if l.strip() and not l.startswith("mounted ") and not UNMOUNTED.match(l.strip())]


class _DmvMount:
    """`dmv mount --background MNT` of `repo`, optionally timed as a step; `close` unmounts it with `dmv umount`
    and reads its end from the log."""

    def __init__(self, ctx, dmv, repo, mnt):
        self.ctx, self.dmv, self.repo, self.mnt = ctx, dmv, repo, mnt
        self.log = _MountLog(repo)
        self.pid, self.error, self.end_line, self.fetched, self.lines = None, None, None, None, []
        self.opened = self.up = False

    def cmd(self):
        return Cmd([self.dmv.path, "mount", "--background", self.mnt], cwd=self.repo)

    def open(self, experiment=None, param=None, step=None, extra=None):
        """Mounts (a recorded step when `step` is given); returns the Outcome (ok only if the folder is a mount)."""
        os.makedirs(self.mnt, exist_ok=True)
        self.log.mark()
        self.opened = True

        def check(out):
            if out.ok and self.mnt not in _mount_points():
                out.ok, out.error = False, "dmv mount --background returned but %s is no mount point" % self.mnt
            pids = _serving(self.mnt) if out.ok else []
            self.pid = pids[0] if pids else None
            return dict(extra or {}, mount_pid=self.pid)
        if step:
            out = self.ctx.rec.step(self.dmv, experiment, param, step, [self.cmd()], None, after=check)
        else:
            out = run_cmds([self.cmd()], self.ctx.rec.env, MOUNT_WAIT_S)
            check(out)
        self.up = out.ok
        if not out.ok:
            self.error = out.error
        return out

    def hwm(self):
        return servers.vm_hwm_kib(self.pid) if self.pid else None

    def close(self):
        """Unmounts; returns what went wrong (also in `error`), or None. `fetched`: the bytes the log's
        `unmounted` line names (0 when it names none), None without that line. Once per open."""
        if not self.opened:
            return self.error
        self.opened = False
        problem = _unmount(self.mnt, [self.dmv.path, "umount", self.mnt], self.ctx.rec.env)
        if not self.up:  # it never showed the folder: no end to wait for in the log
            self.lines = self.log.since()
            self.error = "; ".join(p for p in (self.error, problem) if p) or None
            return self.error
        self.end_line, self.fetched, self.lines = self.log.wait_unmounted()
        if self.end_line is None:
            problem = "; ".join(p for p in (problem, "no `unmounted` line in .dmv/mount.log within %d s" %
                                            MOUNT_WAIT_S) if p)
        self.error = problem
        return problem

    def fields(self):
        return dict(unmount_line=self.end_line, bytes_fetched=self.fetched,
                    mount_log_odd=_MountLog.odd(self.lines)[:10], unmount_error=self.error)


class _PeerMount:
    """A peer's FUSE mount of its repository: `restic mount MNT` (in the foreground, a child of the suite:
    it is up once `probe` shows) or `bup fuse MNT` (it returns once mounted, serving from a daemon); both
    unmounted with `fusermount3 -u`."""

    def __init__(self, ctx, tool, pt, env, mnt, probe):
        self.ctx, self.tool, self.pt, self.env, self.mnt, self.probe = ctx, tool, pt, env, mnt, probe
        self.proc, self.pid, self.error = None, None, None
        self.logpath = os.path.join(pt.root, "%s-mount.log" % tool.name)

    def open(self, experiment, param, step=None, extra=None):
        os.makedirs(self.mnt, exist_ok=True)
        env = dict(self.ctx.rec.env, **self.env)
        if self.tool.name == "bup":
            cmd = Cmd([self.tool.path, "fuse", self.mnt], cwd=self.pt.root, env=self.env)

            def check(out):
                if out.ok and not os.path.exists(self.probe):
                    out.ok, out.error = False, "bup fuse returned but %s does not show" % self.probe
                pids = _serving(self.mnt)
                self.pid = pids[0] if pids else None
                return dict(extra or {}, mount_pid=self.pid)
            if step:
                out = self.ctx.rec.step(self.tool, experiment, param, step, [cmd], None, after=check)
            else:
                out = run_cmds([cmd], self.ctx.rec.env, MOUNT_WAIT_S)
                check(out)
            self.error = None if out.ok else out.error
            return out
        # restic mount: up once the probe path shows (restic loads its index and snapshots first)
        log = open(self.logpath, "ab")
        t = time.perf_counter()
        self.proc = subprocess.Popen([self.tool.path, "mount", self.mnt], cwd=self.pt.root, env=env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                     preexec_fn=servers._die_with_parent)
        log.close()
        self.pid = self.proc.pid
        deadline = time.monotonic() + MOUNT_WAIT_S
        while not os.path.exists(self.probe) and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        wall = time.perf_counter() - t
        ok = os.path.exists(self.probe)
        out = Outcome(wall_s=wall, ok=ok, error=None if ok else "restic mount: %s did not show within %d s%s: %s" % (
            self.probe, MOUNT_WAIT_S, " (exit %s)" % self.proc.returncode if self.proc.poll() is not None else "",
            _read_text(self.logpath)[-300:]))
        self.error = out.error
        if step:
            out.peak_rss_kib = servers.vm_hwm_kib(self.pid) or 0
            self.ctx.rec.record(self.tool, experiment, param, step, out, None, mount_pid=self.pid, **(extra or {}))
        return out

    def hwm(self):
        return servers.vm_hwm_kib(self.pid) if self.pid else None

    def close(self):
        problem = _unmount(self.mnt, ["fusermount3", "-u", self.mnt], self.ctx.rec.env, self.proc)
        self.proc = None
        return problem


def _warm(*paths):
    """Untimed: every file under `paths` read once, so that every tool reads its repository from the page cache
    (dmv writes its packs past the page cache: its first read would otherwise be the only one from the disk)."""
    for path in paths:
        if os.path.isfile(path):
            datagen.file_hash(path)
            continue
        for top, _, names in os.walk(path):
            for name in names:
                try:
                    with open(os.path.join(top, name), "rb", buffering=0) as f:
                        while f.read(4 << 20):
                            pass
                except OSError:
                    pass


def _restic_env(restic, pt):
    return dict(RESTIC_PASSWORD=restic.PASSWORD, RESTIC_REPOSITORY=os.path.join(pt.root, "restic-repo"),
                RESTIC_CACHE_DIR=os.path.join(pt.root, "restic-cache"))


def _mount_peers_prepare(ctx, restic, bup, pt, experiment, param, target):
    """Untimed: `target` (a path relative to the work tree) stored by restic (`restic init`, `restic backup
    TARGET` from the work tree: the snapshot shows it at its top) and bup (`bup init`, `bup index`, `bup save
    --strip-path WORK`: /main/latest/TARGET). Returns {tool name: (tool, env)} of those that made it."""
    ready = {}
    if restic:
        renv = _restic_env(restic, pt)
        if _run_untimed(ctx, [restic.cmd(pt, "init", env=renv), restic.cmd(pt, "backup", "-q", target, env=renv)],
                        restic, experiment, param, "prepare"):
            ready["restic"] = (restic, renv)
    if bup:
        benv = {"BUP_DIR": os.path.join(pt.root, "bup")}
        path = os.path.join(pt.work, target)
        if _run_untimed(ctx, [Cmd([bup.path, "init"], cwd=pt.root, env=benv),
                              Cmd([bup.path, "index", path], cwd=pt.root, env=benv),
                              Cmd([bup.path, "save", "-q", "-n", "main", "--strip-path", pt.work, path], cwd=pt.root,
                                  env=benv)], bup, experiment, param, "prepare"):
            ready["bup"] = (bup, benv)
    return ready


def _peer_view(name, mnt, target):
    """Where a peer's mount shows `target`."""
    return os.path.join(mnt, "snapshots", "latest", target) if name == "restic" else \
        os.path.join(mnt, "main", "latest", target)


def mount(ctx, restic, bup, bup_why, files, size, remote_size, remote_note, repeats, peer_repeats):
    """`dmv mount` (issue 46), in one run: (1) `ls -l` of one folder of `files` files of 1 KiB through a fresh
    `dmv mount` of HEAD in a full replica, against `ls -l` of the working tree, restic mount and bup fuse of
    the same folder, and the time to mount (`mount-list`, parameter: files); (2) one file of `size` random
    bytes: time to first byte (`head -c 1`) and a whole read (`cat FILE > /dev/null`) through a fresh mount,
    against `dmv cat HEAD:FILE`, restic mount, bup fuse and cat of the working tree's file (`mount-file`,
    parameter: bytes); (3) a file of `remote_size` random bytes and one of `size` in one commit in a bare hub
    served by `dmv serve` over HTTP on 127.0.0.1; a meta clone (`--slice meta`) mounted: MOUNT_READS reads of
    MOUNT_READ_BYTES at seeded random offsets in the first, each checked against the source, then the bytes the
    mount fetched (its `unmounted` line in .dmv/mount.log; `mount-remote`, parameter: bytes); and in fresh meta
    clones the first byte and a whole read of the second through the mount, against `dmv cat` there
    (`mount-remote-seq`, parameter: bytes). dmv and the working tree get `repeats` fresh mounts
    (or reads) each, restic and bup `peer_repeats`; the report takes medians."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    probe = ctx.point("mount-probe", 0)
    try:
        why = _supports(ctx, dmv, probe, "mount", "umount")
    finally:
        shutil.rmtree(probe.root, ignore_errors=True)
    points = [("mount-list", files), ("mount-file", size), ("mount-remote", remote_size), ("mount-remote-seq", size)]
    if why:
        for experiment, n in points:
            ctx.rec.note("dmv", experiment, str(n), "all", "unsupported", why)
        return
    if bup is None and bup_why:
        for experiment, n in points[:2]:
            ctx.rec.note("bup", experiment, str(n), "all", "n/a", bup_why)
    _mount_list(ctx, dmv, restic, bup, files, repeats, peer_repeats)
    _mount_file(ctx, dmv, restic, bup, size, repeats, peer_repeats)
    _mount_remote(ctx, dmv, remote_size, size, remote_note)


def _mount_list(ctx, dmv, restic, bup, files, repeats, peer_repeats):
    rec = ctx.rec
    experiment, param = "mount-list", str(files)
    need = 8 * files * 4096 + GiB  # the tree, dmv's store, restic's and bup's repositories, with margin
    if free_bytes(ctx.workdir) < need:
        rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point(experiment, files)
    try:
        folder = os.path.join(pt.work, MOUNT_FOLDER)
        print("%s %d: writing %d files of 1 KiB into one folder; dmv, restic and bup store it (untimed)" % (
            experiment, files, files), flush=True)
        os.makedirs(folder)
        stream = datagen.RandomStream(45)
        for start in range(0, files, 1000):
            n = min(1000, files - start)
            block = stream.read(n * datagen.SMALL_FILE_SIZE)
            for k in range(n):
                with open(os.path.join(folder, "f%06d" % (start + k)), "wb") as f:
                    f.write(block[k * datagen.SMALL_FILE_SIZE:(k + 1) * datagen.SMALL_FILE_SIZE])
        data = dict(data_files=files, data_bytes=files * datagen.SMALL_FILE_SIZE, folder=MOUNT_FOLDER)
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True), dmv, experiment, param, "prepare"):
            return
        peers = _mount_peers_prepare(ctx, restic, bup, pt, experiment, param, MOUNT_FOLDER)
        os.sync()
        _warm(dmv.meta(pt), *[os.path.join(pt.root, d) for d in ("restic-repo", "bup")])
        run_cmds([Cmd(["ls", "-l", folder], cwd=pt.root)], rec.env, rec.timeout)  # untimed: the same for every try

        def counted(view):
            def after(out):
                extra = dict(data)
                if out.ok:
                    try:
                        extra["entries"] = len(os.listdir(view))
                    except OSError as e:
                        extra["entries"] = None
                        out.ok, out.error = False, "listing the folder again (untimed): %s" % e
                    if extra["entries"] is not None and extra["entries"] != files:
                        out.ok, out.error = False, "%d entries, not %d" % (extra["entries"], files)
                return extra
            return after
        mnt = os.path.join(pt.root, "mnt")
        for i in range(1, repeats + 1):
            print("%s %d: try %d of %d" % (experiment, files, i, repeats), flush=True)
            os.sync()
            rec.step(_Floor, experiment, param, "ls_worktree_%d" % i, [Cmd(["ls", "-l", folder], cwd=pt.root)], None,
                     after=counted(folder))
            m = _DmvMount(ctx, dmv, pt.work, mnt)
            try:
                os.sync()
                if m.open(experiment, param, "mount_%d" % i, data).ok:
                    view = os.path.join(mnt, MOUNT_FOLDER)

                    def after(out, view=view, m=m):
                        extra = counted(view)(out)
                        extra["mount_peak_rss_kib"] = m.hwm()
                        return extra
                    rec.step(dmv, experiment, param, "ls_mount_%d" % i,
                             [Cmd(["ls", "-l", view], cwd=pt.root)], None, after=after)
            finally:
                problem = m.close()
                if problem or _MountLog.odd(m.lines):
                    rec.note("dmv", experiment, param, "unmount_%d" % i, "fail" if problem else "ok",
                             "; ".join([problem or ""] + _MountLog.odd(m.lines)[:5]).strip("; "))
            for name, (tool, env) in peers.items():
                if i > (1 if name == "bup" else peer_repeats):
                    continue
                pm = _PeerMount(ctx, tool, pt, env, os.path.join(pt.root, "mnt-%s" % name),
                                _peer_view(name, os.path.join(pt.root, "mnt-%s" % name), MOUNT_FOLDER))
                try:
                    os.sync()
                    if pm.open(experiment, param, "mount_%d" % i, data).ok:
                        view = pm.probe

                        def after(out, view=view, pm=pm):
                            extra = counted(view)(out) if out.ok else dict(data)
                            extra["mount_peak_rss_kib"] = pm.hwm()
                            return extra
                        # bup fuse answers each stat in about 0.1 s here: its one try is stopped early
                        rec.step(tool, experiment, param, "ls_mount_%d" % i, [Cmd(["ls", "-l", view], cwd=pt.root)],
                                 None, after=after, timeout=MOUNT_BUP_LIST_S if name == "bup" else None)
                finally:
                    pm.close()
    finally:
        _mount_cleanup(pt.root, rec.env)
        shutil.rmtree(pt.root, ignore_errors=True)


def _mount_file(ctx, dmv, restic, bup, size, repeats, peer_repeats):
    rec = ctx.rec
    experiment, param = "mount-file", str(size)
    need = 5 * size + GiB  # the file, dmv's store, restic's and bup's repositories, margin
    if free_bytes(ctx.workdir) < need:
        rec.note("dmv", experiment, param, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point(experiment, size)
    try:
        print("%s %s: writing the file; dmv, restic and bup store it (untimed)" % (experiment, human_bytes(size)),
              flush=True)
        source = os.path.join(pt.work, MOUNT_FILE)
        digest = datagen.write_random_file(source, size, seed=46)
        data = dict(data_bytes=size, data_files=1)
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True), dmv, experiment, param, "prepare"):
            return
        peers = _mount_peers_prepare(ctx, restic, bup, pt, experiment, param, MOUNT_FILE)
        os.sync()
        _warm(dmv.meta(pt), source, *[os.path.join(pt.root, d) for d in ("restic-repo", "bup")])
        ttfb = lambda path: [Cmd(["head", "-c", "1", path], cwd=pt.root)]
        whole = lambda path: [Cmd(["cat", path], cwd=pt.root)]

        def verified(path, first, extra):
            """Untimed, after the first whole read: the file through the mount hashed and compared."""
            def after(out):
                fields = dict(data, **extra)
                if out.ok and first:
                    fields["verified"] = datagen.file_hash(path) == digest
                    if not fields["verified"]:
                        out.ok, out.error = False, "the file read through the mount differs from the source"
                return fields
            return after
        mnt = os.path.join(pt.root, "mnt")
        view = os.path.join(mnt, MOUNT_FILE)
        for i in range(1, repeats + 1):
            print("%s %s: try %d of %d" % (experiment, human_bytes(size), i, repeats), flush=True)
            os.sync()
            rec.step(_Floor, experiment, param, "read_worktree_%d" % i, whole(source), None, after=lambda o: dict(data))

            def through_mounts(i=i):
                # through a fresh mount each: the kernel keeps the pages of a file read through the mount
                for step, cmds in (("ttfb_mount_%d" % i, ttfb(view)), ("read_mount_%d" % i, whole(view))):
                    m = _DmvMount(ctx, dmv, pt.work, mnt)
                    try:
                        if m.open().ok:
                            os.sync()
                            rec.step(dmv, experiment, param, step, cmds, None, after=lambda out, m=m, step=step: verified(
                                view, step == "read_mount_1", dict(mount_peak_rss_kib=m.hwm()))(out))
                        else:
                            rec.note("dmv", experiment, param, step, "fail", "dmv mount --background: %s" % m.error)
                    finally:
                        problem = m.close()
                        if problem or _MountLog.odd(m.lines):
                            rec.note("dmv", experiment, param, "unmount_%s" % step, "fail" if problem else "ok",
                                     "; ".join([problem or ""] + _MountLog.odd(m.lines)[:5]).strip("; "))

            def with_cat(i=i):
                os.sync()
                rec.step(dmv, experiment, param, "ttfb_cat_%d" % i,
                         [Cmd(["sh", "-c", "%s cat HEAD:%s | head -c 1 >/dev/null" % (shlex.quote(dmv.path), MOUNT_FILE)],
                              cwd=pt.work)], None, after=lambda o: dict(data))
                os.sync()
                rec.step(dmv, experiment, param, "read_cat_%d" % i, [dmv.cmd(pt, "cat", "HEAD:" + MOUNT_FILE)], None,
                         after=lambda o: dict(data))
            # Each try's mount read and dmv cat read are a pair, run back to back, in turn A B, B A, ...: the
            # report takes the median of the pairs' ratios, which a machine's drift between tries does not move.
            for way in ((through_mounts, with_cat) if i % 2 else (with_cat, through_mounts)):
                way()
            if i == 1:  # untimed: what dmv cat writes, hashed
                out = run_cmds([dmv.cmd(pt, "cat", "HEAD:" + MOUNT_FILE, stdout="hash")], rec.env, rec.timeout)
                if not out.ok or out.stdout_hash != digest:
                    rec.note("dmv", experiment, param, "read_cat_verify", "fail",
                             out.error or "dmv cat wrote %d bytes that differ from the source" % out.stdout_bytes)
            if i > peer_repeats:
                continue
            for name, (tool, env) in peers.items():
                pmnt = os.path.join(pt.root, "mnt-%s" % name)
                pview = _peer_view(name, pmnt, MOUNT_FILE)
                for step, cmds in (("ttfb_mount_%d" % i, ttfb(pview)), ("read_mount_%d" % i, whole(pview))):
                    pm = _PeerMount(ctx, tool, pt, env, pmnt, pview)
                    try:
                        if pm.open(experiment, param).ok:
                            os.sync()
                            rec.step(tool, experiment, param, step, cmds, None,
                                     after=lambda out, pm=pm, step=step, pview=pview: verified(
                                         pview, step == "read_mount_1", dict(mount_peak_rss_kib=pm.hwm()))(out))
                        else:
                            rec.note(name, experiment, param, step, "fail", pm.error)
                    finally:
                        pm.close()
    finally:
        _mount_cleanup(pt.root, rec.env)
        shutil.rmtree(pt.root, ignore_errors=True)


def _server_written(srv):
    """Bytes the server process has written so far (wchar of /proc/PID/io: its socket writes, the data it sent),
    or None: a check on the count the mount logs."""
    try:
        with open("/proc/%d/io" % srv.proc.pid) as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _mount_remote(ctx, dmv, size, seq_size, note):
    """A file of `size` bytes (random reads) and one of `seq_size` bytes (the first byte and whole reads) in
    one commit pushed into a bare hub served by `dmv serve`; each measure in a fresh meta clone."""
    rec = ctx.rec
    experiment, param = "mount-remote", str(size)
    seq_experiment, seq_param = "mount-remote-seq", str(seq_size)
    total = size + seq_size
    need = 3 * total + seq_size + 2 * GiB  # the files, the source's store (deleted once pushed), the hub, a clone
    if free_bytes(ctx.workdir) < need:
        for e, p in ((experiment, param), (seq_experiment, seq_param)):
            rec.note("dmv", e, p, "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    pt = ctx.point(experiment, size)
    try:
        print("%s: writing files of %s and %s, commit, push into a bare hub (untimed)" % (
            experiment, human_bytes(size), human_bytes(seq_size)), flush=True)
        source = os.path.join(pt.work, MOUNT_FILE)
        datagen.write_random_file(source, size, seed=47)
        seq_source = os.path.join(pt.work, MOUNT_SEQ_FILE)
        seq_digest = datagen.write_random_file(seq_source, seq_size, seed=48)
        hub = os.path.join(pt.root, "hub")
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True) + dmv.init_remote(pt, hub) + [
                dmv.cmd(pt, "push", hub, "main")], dmv, experiment, param, "prepare"):
            return
        shutil.rmtree(dmv.meta(pt), ignore_errors=True)  # the hub holds it now: room for the clones
        data = dict(data_bytes=size, data_files=1, transport="http", reduced_note=note)
        seq_data = dict(data_bytes=seq_size, data_files=1, transport="http")
        mnt = os.path.join(pt.root, "mnt")
        with servers.DmvHttp(dmv.path, os.path.join(pt.root, "http"), rec.env, {MOUNT_HUB: hub}, SYNC_TOKEN) as srv:
            url = srv.url(MOUNT_HUB)
            print("  dmv serve on 127.0.0.1:%d" % srv.port, flush=True)

            def fresh(name, e, p):
                dest = os.path.join(pt.root, name)
                shutil.rmtree(dest, ignore_errors=True)
                ok = _run_untimed(ctx, [dmv.cmd(pt, "clone", "--token", SYNC_TOKEN, "--slice", "meta", url, dest,
                                                cwd=pt.root)], dmv, e, p, "clone_%s" % name)
                return dest if ok else None

            # (a) random reads in a fresh meta clone
            dest = fresh("meta-random", experiment, param)
            if dest:
                store0 = disk_usage(os.path.join(dest, ".dmv"))
                m = _DmvMount(ctx, dmv, dest, mnt)
                try:
                    os.sync()
                    sent0 = _server_written(srv)
                    if m.open(experiment, param, "mount", data).ok:
                        print("%s: %d reads of %s at random offsets" % (experiment, MOUNT_READS,
                                                                       human_bytes(MOUNT_READ_BYTES)), flush=True)
                        reads = run_cmds([Cmd([sys.executable, "-c", MOUNT_READS_SCRIPT, os.path.join(mnt, MOUNT_FILE),
                                               source, str(size), str(MOUNT_READS), str(MOUNT_READ_BYTES),
                                               str(MOUNT_SEED)], cwd=pt.root, stdout="capture")],
                                         rec.env, rec.timeout)
                        hwm = m.hwm()
                        m.close()
                        sent1 = _server_written(srv)
                        store1 = disk_usage(os.path.join(dest, ".dmv"))
                        fields = dict(data, mount_peak_rss_kib=hwm, store_growth_bytes=store1[1] - store0[1],
                                      store_growth_disk_bytes=store1[0] - store0[0],
                                      server_bytes_written=sent1 - sent0 if sent0 is not None and sent1 is not None
                                      else None)
                        _record_random_reads(ctx, dmv, experiment, param, dest, fields, reads, m)
                finally:
                    m.close()
                shutil.rmtree(dest, ignore_errors=True)
            # (b) the first byte, (c) the whole file, each through a fresh mount of a fresh meta clone
            for step, cmds, digest in (
                    ("ttfb_mount", [Cmd(["head", "-c", "1", os.path.join(mnt, MOUNT_SEQ_FILE)], cwd=pt.root)], None),
                    ("read_mount", [Cmd(["cat", os.path.join(mnt, MOUNT_SEQ_FILE)], cwd=pt.root)], seq_digest)):
                dest = fresh("meta-%s" % step, seq_experiment, seq_param)
                if dest:
                    _remote_read(ctx, dmv, srv, seq_experiment, seq_param, dest, mnt, step, cmds, seq_data, digest)
                    shutil.rmtree(dest, ignore_errors=True)
            # (d) dmv cat in a fresh meta clone: it gets the whole file first
            dest = fresh("meta-cat", seq_experiment, seq_param)
            if dest:
                os.sync()
                sent0 = _server_written(srv)

                def after(out, dest=dest, sent0=sent0):
                    sent1 = _server_written(srv)
                    fields = dict(seq_data, server_bytes_written=sent1 - sent0 if sent0 is not None and
                                  sent1 is not None else None)
                    fields.update(_trace(out))
                    if out.ok:
                        again = run_cmds([dmv.cmd(pt, "cat", "HEAD:" + MOUNT_SEQ_FILE, cwd=dest, stdout="hash")],
                                         rec.env, rec.timeout)
                        fields["verified"] = again.ok and again.stdout_hash == seq_digest
                        if not fields["verified"]:
                            out.ok, out.error = False, "dmv cat in the meta clone: %s" % (
                                again.error or "its bytes differ from the source")
                    return fields
                rec.step(dmv, seq_experiment, seq_param, "read_cat",
                         [dmv.cmd(pt, "cat", "HEAD:" + MOUNT_SEQ_FILE, cwd=dest, env={"DMV_TRACE": "1"})],
                         os.path.join(dest, ".dmv"), after=after)
                shutil.rmtree(dest, ignore_errors=True)
    except servers.ServerError as e:
        print("%s: %s" % (experiment, e), flush=True)
        for e_, p_ in ((experiment, param), (seq_experiment, seq_param)):
            rec.note("dmv", e_, p_, "all", "fail", str(e))
    finally:
        _mount_cleanup(pt.root, rec.env)
        shutil.rmtree(pt.root, ignore_errors=True)


def _record_random_reads(ctx, dmv, experiment, param, dest, fields, reads, m):
    """The random reads' record, once the mount has ended and its log said what it fetched."""
    fields = dict(fields, reads=MOUNT_READS, read_size=MOUNT_READ_BYTES, seed=MOUNT_SEED,
                  process_wall_s=round(reads.wall_s, 6), **m.fields())
    out = Outcome(wall_s=reads.wall_s, ok=reads.ok, timed_out=reads.timed_out, error=reads.error,
                  peak_rss_kib=reads.peak_rss_kib)
    try:
        res = json.loads(reads.captured.decode()) if reads.ok else None
    except ValueError:
        res = None
        out.ok, out.error = False, "the readers' output is no JSON: %r" % reads.captured[-200:]
    if res:
        secs = sorted(res["seconds"])
        out.wall_s = sum(secs)
        fields.update(bytes_read=res["bytes"], mismatches=res["mismatches"], bad_offsets=res["bad_offsets"],
                      read_ms_median=round(statistics.median(secs) * 1000, 3),
                      read_ms_p90=round(secs[int(0.9 * (len(secs) - 1))] * 1000, 3),
                      read_ms_max=round(secs[-1] * 1000, 3), read_ms_first=round(res["seconds"][0] * 1000, 3),
                      offsets=res["offsets"][:10])
        if m.fetched is not None and res["bytes"]:
            fields["fetched_over_read"] = round(m.fetched / res["bytes"], 4)
        fields["verified"] = res["mismatches"] == 0 and res["bytes"] == MOUNT_READS * MOUNT_READ_BYTES
        if not fields["verified"]:
            out.ok, out.error = False, "%d of %d reads differ from the source (%d bytes read)" % (
                res["mismatches"], MOUNT_READS, res["bytes"])
    if out.ok and m.fetched is None:
        out.ok, out.error = False, m.error or "no `unmounted` line in .dmv/mount.log"
    ctx.rec.record(dmv, experiment, param, "random_reads", out, os.path.join(dest, ".dmv"), **fields)


def _remote_read(ctx, dmv, srv, experiment, param, dest, mnt, step, cmds, data, digest):
    """One timed read through a fresh mount of the meta clone `dest`, recorded once the mount has ended (with
    the bytes it fetched, and those the server wrote meanwhile); `digest`: then, untimed, `dmv cat` of the
    file in the clone (from the pieces the mount kept: it must receive nothing) hashed and compared."""
    rec = ctx.rec
    m = _DmvMount(ctx, dmv, dest, mnt)
    try:
        if not m.open().ok:
            rec.note("dmv", experiment, param, step, "fail", "dmv mount --background: %s" % m.error)
            return
        os.sync()
        print("%s: %s" % (experiment, step), flush=True)
        sent0 = _server_written(srv)
        out = run_cmds(cmds, rec.env, rec.timeout)
        hwm = m.hwm()
        m.close()
        sent1 = _server_written(srv)
        fields = dict(data, mount_peak_rss_kib=hwm, server_bytes_written=sent1 - sent0 if sent0 is not None and
                      sent1 is not None else None, **m.fields())
        if m.fetched is not None:
            fields["fetched_over_file"] = round(m.fetched / data["data_bytes"], 4)
        if out.ok and m.fetched is None:
            out.ok, out.error = False, m.error or "no `unmounted` line in .dmv/mount.log"
        if out.ok and digest:
            again = run_cmds([Cmd([dmv.path, "cat", "HEAD:" + MOUNT_SEQ_FILE], cwd=dest, stdout="hash",
                                  env={"DMV_TRACE": "1"})], rec.env, rec.timeout)
            fields["verified"] = again.ok and again.stdout_hash == digest
            fields["verify_bytes_received"] = _trace(again).get("bytes_received")
            if not fields["verified"]:
                out.ok, out.error = False, "dmv cat after the read through the mount: %s" % (
                    again.error or "its bytes differ from the source")
        rec.record(dmv, experiment, param, step, out, os.path.join(dest, ".dmv"), **fields)
    finally:
        m.close()


# ---------------------------------------------------------------- worktree-mount (experiment `worktree-mount`, issue 74)

# Issue 74: `dmv mount --worktree DIR`, the replica's working tree as a writable FUSE folder, against the same
# replica's plain working tree (and, for data that is absent, against `dmv get`). Every row is WTM_REPEATS tries,
# each a pair run back to back (the mount first in odd tries, the other way first in even ones); the report takes
# the medians and the median of the pairs' ratios.
WTM_FILE = "big.bin"          # the present file read (rows 1) and the source of the writes (row 3)
WTM_ABSENT_FILE = "abs.bin"   # the file read in meta clones (row 2)
WTM_WRITE_FILE = "w.bin"      # the file each write creates (row 3), removed after each try
WTM_PHOTOS = "photos"         # the folder copied (row 4) and saved into (row 5)
WTM_PHOTO_MIN, WTM_PHOTO_MAX = 40 << 10, 60 << 10   # the photos' sizes: seeded, uniform (about 50 KiB)
WTM_SAVES = 100               # files saved the editor's way (row 5)
WTM_EDITS = 100               # files edited before `dmv status` (row 6)
WTM_TREE_PER_FOLDER = 1000    # row 6's tree: this many files of 1 KiB a folder
WTM_SEED = 74
WTM_NOPT_ENV = {"DMV_MOUNT_PASSTHROUGH": "0"}
DROP_CACHES = "/proc/sys/vm/drop_caches"

# run as a child (`python3 -c`): a photo editor's save of COUNT files of DIR (sorted names): a temporary file
# beside each, fsync, rename over it; prints JSON (the loop's seconds, each new content's sha1)
WTM_SAVE_SCRIPT = r"""
import hashlib, json, os, random, sys, time
folder, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = sorted(n for n in os.listdir(folder) if not n.endswith(".tmp"))[:count]
rng = random.Random(seed)
datas = [rng.randbytes(os.path.getsize(os.path.join(folder, n)) + rng.randrange(-512, 512)) for n in names]
t = time.perf_counter()
for name, data in zip(names, datas):
    final = os.path.join(folder, name)
    tmp = final + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, final)
seconds = time.perf_counter() - t
print(json.dumps(dict(seconds=seconds, files=len(names), bytes=sum(map(len, datas)),
                      sha1={n: hashlib.sha1(d).hexdigest() for n, d in zip(names, datas)})))
"""


class _WorktreeMount(_DmvMount):
    """`dmv mount --worktree --background MNT` in the replica `repo` (env: e.g. DMV_MOUNT_PASSTHROUGH=0)."""

    def __init__(self, ctx, dmv, repo, mnt, env=None):
        super().__init__(ctx, dmv, repo, mnt)
        self.env = env

    def cmd(self):
        return Cmd([self.dmv.path, "mount", "--worktree", "--background", self.mnt], cwd=self.repo, env=self.env)


class FuseFloor:
    """fuse_floor (crates/dmv-mount/examples/fuse_floor.rs): a bare passthrough FUSE file system that mounts a
    folder as `dmv mount --worktree` mounts the working tree (options, threads, capabilities, TTL, open flags,
    passthrough) with no DMV logic, so its time is what FUSE alone costs; recorded as tool `fuse-floor`."""
    name = "fuse-floor"

    def __init__(self, path):
        self.path = path


WTM_FLOOR_NOPT = ["--no-passthrough"]   # fuse_floor's DMV_MOUNT_PASSTHROUGH=0


def _drop_caches():
    """sync, then the page cache, dentries and inodes dropped (root only); True if it could."""
    os.sync()
    try:
        with open(DROP_CACHES, "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def _tree_hashes(top):
    """{relative path: sha1} of every file under `top`."""
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, top)] = datagen.file_hash(p)
    return out


def _tree_check(top, expected, what):
    """An `after` check: the files under `top` are exactly `expected` ({relative path: sha1})."""
    def check(out):
        if not out.ok:
            return {}
        got = _tree_hashes(top) if os.path.isdir(top) else {}
        bad = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        if bad:
            out.ok, out.error = False, "%s: %d of %d files missing or differing, e.g. %s" % (
                what, len(bad), len(expected), ", ".join(bad[:3]))
        return dict(verified=not bad, files_checked=len(expected))
    return check


def _file_check(path, digest, what):
    def check(out):
        if not out.ok:
            return {}
        got = datagen.file_hash(path) if os.path.isfile(path) else None
        if got != digest:
            out.ok, out.error = False, "%s: %s" % (what, "missing" if got is None else "its bytes differ")
        return dict(verified=got == digest)
    return check


def _paired(i, *ways):
    """The ways of a try back to back, in the order given in odd tries and the other way round in even ones
    (the mount's first, then the plain tree's, ...; with three, the plain tree in the middle of both mounts)."""
    for way in (ways if i % 2 else ways[::-1]):
        way()


def worktree_mount(ctx, size, absent_size, photos, tree, repeats, floor=None, floor_why=None, settle=0):
    """`dmv mount --worktree` (issue 74) against the same replica's plain working tree, in one run; each row
    `repeats` paired tries. Present data (one replica, `size` file and `photos` files of about 50 KiB):
    (1) `cat FILE` cold (after sync and drop_caches, when root) and warm (`wtm-read`); (3) `dd bs=1M
    conv=fsync` of a new file (`wtm-write`); both also with DMV_MOUNT_PASSTHROUGH=0; (4) `cp -r` of the photos
    out (`wtm-copy`); (5) an editor's save of WTM_SAVES photos: temporary file, fsync, rename (`wtm-save`).
    Absent data, from `dmv serve` on loopback, each measure in a fresh meta clone: (2) `cat` of a file of
    `absent_size` through the mount against `dmv get FILE` (`wtm-absent`); (4b) `cp -r` of the photos out of
    the mount against `dmv get photos` (`wtm-copy`). (6) `dmv status` after WTM_EDITS of `tree` files of 1 KiB
    were edited through the mount, against the same edit in the plain tree (`wtm-status`). Every present-data
    step also runs through `floor` (a FuseFloor: bare FUSE over the same plain tree, as tool `fuse-floor`, steps
    named `*_floor*`), in the same tries: the floor of each row, what FUSE itself costs; without it
    (`floor_why`) those steps are noted skipped. The suite waits `settle` seconds (untimed) before (5), which
    follows the deletes of (2) and (4b) (ext4 without a journal: see measure.ext4_without_journal)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if dmv is None:
        return
    rows = [("wtm-read", size), ("wtm-absent", absent_size), ("wtm-write", size), ("wtm-copy", photos),
            ("wtm-save", WTM_SAVES), ("wtm-status", tree)]
    probe = ctx.point("wtm-probe", 0)
    why = None
    try:
        why = _supports(ctx, dmv, probe, "mount", "umount")
        if not why:
            r = subprocess.run([dmv.path, "mount", "--help"], capture_output=True, text=True, timeout=60)
            if "--worktree" not in r.stdout + r.stderr:
                why = "this dmv's mount has no --worktree"
    finally:
        shutil.rmtree(probe.root, ignore_errors=True)
    if why:
        for e, n in rows:
            ctx.rec.note("dmv", e, str(n), "all", "unsupported", why)
        return
    need = 4 * (size + absent_size + photos * WTM_PHOTO_MAX) + 2 * absent_size + 2 * GiB
    if free_bytes(ctx.workdir) < need:
        for e, n in rows:
            ctx.rec.note("dmv", e, str(n), "all", "skipped", "not enough free disk: need %s" % human_bytes(need))
        return
    if floor is None:
        for e, n in rows:
            if e != "wtm-absent":
                ctx.rec.note(FuseFloor.name, e, str(n), "all", "skipped", floor_why or "no fuse_floor")
    can_drop = _drop_caches()
    _wtm_present(ctx, dmv, size, absent_size, photos, repeats, can_drop, floor, settle)
    _wtm_status(ctx, dmv, tree, repeats, floor)


def _wtm_mounted(ctx, dmv, repo, mnt, e, p, step, env=None):
    """A context: a fresh worktree mount of `repo` at `mnt` (None if it failed: noted), unmounted after, and
    what its log said besides its start and end noted."""
    @contextlib.contextmanager
    def cm():
        m = _WorktreeMount(ctx, dmv, repo, mnt, env)
        try:
            out = m.open()
            if not out.ok:
                ctx.rec.note("dmv", e, p, step, "fail", "dmv mount --worktree --background: %s" % m.error)
            yield m if out.ok else None
        finally:
            problem = m.close()
            if problem or _MountLog.odd(m.lines):
                ctx.rec.note("dmv", e, p, "unmount_%s" % step, "fail" if problem else "ok",
                             "; ".join([problem or ""] + _MountLog.odd(m.lines)[:5]).strip("; "))
    return cm()


def _wtm_floor(ctx, floor, source, mnt, e, p, step, args=()):
    """A context: `fuse_floor SOURCE MNT [ARGS]` in the foreground (None if it failed or there is no floor:
    noted), unmounted after with `fusermount3 -u`; what it printed besides its start noted."""
    @contextlib.contextmanager
    def cm():
        if floor is None:
            yield None
            return
        os.makedirs(mnt, exist_ok=True)
        log_path = mnt.rstrip("/") + ".log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([floor.path, source, mnt] + list(args), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, env=ctx.rec.env)
        problem = None
        try:
            deadline = time.monotonic() + MOUNT_WAIT_S
            while mnt not in _mount_points() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            up = mnt in _mount_points()
            if up:
                os.stat(mnt)  # the kernel's INIT answered before the step
            else:
                problem = "fuse_floor did not mount %s (exit %s)" % (mnt, proc.poll())
                ctx.rec.note(floor.name, e, p, step, "fail", problem)
            yield mnt if up else None
        finally:
            problem = _unmount(mnt, ["fusermount3", "-u", mnt], ctx.rec.env, proc) or problem
            with open(log_path, "rb") as f:
                said = f.read().decode("utf-8", "replace").strip().splitlines()
            want = "passthrough off" if "--no-passthrough" in args else "passthrough on"
            odd = [l for l in said if not l.startswith("fuse_floor: ") or " mounted, " not in l or want not in l]
            if problem or odd:
                ctx.rec.note(floor.name, e, p, "unmount_%s" % step, "fail" if problem else "ok",
                             "; ".join([problem or ""] + odd[:5]).strip("; "))
    return cm()


def _wtm_present(ctx, dmv, size, absent_size, photos, repeats, can_drop, floor=None, settle=0):
    rec = ctx.rec
    pt = ctx.point("worktree-mount", size)
    try:
        print("worktree-mount: writing %s, %s and %d photos; commit; push into a bare hub (untimed)" % (
            human_bytes(size), human_bytes(absent_size), photos), flush=True)
        source = os.path.join(pt.work, WTM_FILE)
        digest = datagen.write_random_file(source, size, seed=WTM_SEED)
        abs_digest = datagen.write_random_file(os.path.join(pt.work, WTM_ABSENT_FILE), absent_size, seed=WTM_SEED + 1)
        folder = os.path.join(pt.work, WTM_PHOTOS)
        os.makedirs(folder)
        rng, stream = random.Random(WTM_SEED), datagen.RandomStream(WTM_SEED + 2)
        photo_bytes = 0
        for k in range(photos):
            n = rng.randrange(WTM_PHOTO_MIN, WTM_PHOTO_MAX + 1)
            with open(os.path.join(folder, "IMG_%05d.jpg" % k), "wb") as f:
                f.write(stream.read(n))
            photo_bytes += n
        photo_hashes = _tree_hashes(folder)
        hub = os.path.join(pt.root, "hub")
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True) + dmv.init_remote(pt, hub) + [
                dmv.cmd(pt, "push", hub, "main")], dmv, "wtm-read", str(size), "prepare"):
            return
        mnt = os.path.join(pt.root, "mnt")
        view = lambda *rel: os.path.join(mnt, *rel)
        fmnt = os.path.join(pt.root, "floor")  # fuse_floor's mount of the plain tree
        fview = lambda *rel: os.path.join(fmnt, *rel)
        common = dict(cold_cache_dropped=can_drop, repeats=repeats)

        # (1) reads of a present file: cold (fresh mount, caches dropped), then warm (the same again)
        e, p = "wtm-read", str(size)
        data = dict(common, data_bytes=size, data_files=1)
        for i in range(1, repeats + 1):
            print("%s %s: try %d of %d" % (e, human_bytes(size), i, repeats), flush=True)

            def mounted(variant, env, i=i):
                with _wtm_mounted(ctx, dmv, pt.work, mnt, e, p, "cold_mount%s_%d" % (variant, i), env) as m:
                    if m is None:
                        return
                    for temp in ("cold", "warm"):
                        dropped = _drop_caches() if temp == "cold" else None
                        rec.step(dmv, e, p, "%s_mount%s_%d" % (temp, variant, i), [Cmd(["cat", view(WTM_FILE)], cwd=pt.root)],
                                 None, after=lambda o, m=m: dict(data, dropped=dropped, variant=variant or "passthrough",
                                                                 mount_peak_rss_kib=m.hwm()))
                    if i == 1:  # untimed: the bytes through the mount
                        ok = datagen.file_hash(view(WTM_FILE)) == digest
                        rec.fact("dmv", e, p, "verify_mount%s" % variant, "ok" if ok else "fail",
                                 None if ok else "the file read through the mount differs from the source",
                                 verified=ok)

            def plain(i=i):
                for temp in ("cold", "warm"):
                    dropped = _drop_caches() if temp == "cold" else None
                    rec.step(_Floor, e, p, "%s_plain_%d" % (temp, i), [Cmd(["cat", source], cwd=pt.root)], None,
                             after=lambda o: dict(data, dropped=dropped))

            def bare(variant, args, i=i):
                with _wtm_floor(ctx, floor, pt.work, fmnt, e, p, "cold_floor%s_%d" % (variant, i), args) as m:
                    if m is None:
                        return
                    for temp in ("cold", "warm"):
                        dropped = _drop_caches() if temp == "cold" else None
                        rec.step(floor, e, p, "%s_floor%s_%d" % (temp, variant, i),
                                 [Cmd(["cat", fview(WTM_FILE)], cwd=pt.root)], None,
                                 after=lambda o: dict(data, dropped=dropped, variant=variant or "passthrough"))
            _paired(i, lambda: mounted("", None), lambda: bare("", ()), plain, lambda: bare("-nopt", WTM_FLOOR_NOPT),
                    lambda: mounted("-nopt", WTM_NOPT_ENV))

        # (3) writes: dd of a new file of `size` bytes, fsync'd, into the mount and into the plain tree
        e, p = "wtm-write", str(size)
        data = dict(common, data_bytes=size, data_files=1)
        _warm(source)

        def dd(target):
            return [Cmd(["dd", "if=" + source, "of=" + target, "bs=1M", "conv=fsync", "status=none"], cwd=pt.root)]
        plain_target = os.path.join(pt.work, WTM_WRITE_FILE)
        for i in range(1, repeats + 1):
            print("%s %s: try %d of %d" % (e, human_bytes(size), i, repeats), flush=True)

            def mounted(variant, env, i=i):
                with _wtm_mounted(ctx, dmv, pt.work, mnt, e, p, "write_mount%s_%d" % (variant, i), env) as m:
                    if m is None:
                        return
                    os.sync()
                    rec.step(dmv, e, p, "write_mount%s_%d" % (variant, i), dd(view(WTM_WRITE_FILE)), None,
                             after=lambda o, m=m: dict(_file_check(plain_target, digest, "the file written "
                                                       "through the mount, in the working tree")(o), **data,
                                                       variant=variant or "passthrough", mount_peak_rss_kib=m.hwm()))
                    try:
                        os.remove(view(WTM_WRITE_FILE))
                    except OSError:
                        pass
                if os.path.exists(plain_target):
                    os.remove(plain_target)
                os.sync()

            def plain(i=i):
                os.sync()
                rec.step(_Floor, e, p, "write_plain_%d" % i, dd(plain_target), None,
                         after=lambda o: dict(_file_check(plain_target, digest, "the file written")(o), **data))
                if os.path.exists(plain_target):
                    os.remove(plain_target)
                os.sync()

            def bare(variant, args, i=i):
                with _wtm_floor(ctx, floor, pt.work, fmnt, e, p, "write_floor%s_%d" % (variant, i), args) as m:
                    if m is None:
                        return
                    os.sync()
                    rec.step(floor, e, p, "write_floor%s_%d" % (variant, i), dd(fview(WTM_WRITE_FILE)), None,
                             after=lambda o: dict(_file_check(plain_target, digest, "the file written through "
                                                  "fuse_floor, in the working tree")(o), **data,
                                                  variant=variant or "passthrough"))
                    try:
                        os.remove(fview(WTM_WRITE_FILE))
                    except OSError:
                        pass
                if os.path.exists(plain_target):
                    os.remove(plain_target)
                os.sync()
            _paired(i, lambda: mounted("", None), lambda: bare("", ()), plain, lambda: bare("-nopt", WTM_FLOOR_NOPT),
                    lambda: mounted("-nopt", WTM_NOPT_ENV))

        # (4) cp -r of the photos out of the mount and out of the plain tree (present data, page cache warm).
        # Every copy is kept until the row ends: on ext4 without a journal a new file skips the inodes freed in
        # the last minute one by one (measure.ext4_without_journal), so a copy made right after another was
        # deleted would pay for that delete.
        e, p = "wtm-copy", str(photos)
        data = dict(common, data_files=photos, data_bytes=photo_bytes, folder=WTM_PHOTOS, copies_kept=True)
        _warm(folder)
        copies = []
        for i in range(1, repeats + 1):
            print("%s %d: try %d of %d (present)" % (e, photos, i, repeats), flush=True)

            def kept(way, i=i):
                """The copy's folder of `way` in try `i`; left for the end of the row."""
                path = os.path.join(pt.root, "copy-%s-%d" % (way, i))
                copies.append(path)
                return path

            def mounted(i=i):
                dest = kept("mount")
                with _wtm_mounted(ctx, dmv, pt.work, mnt, e, p, "cp_mount_%d" % i) as m:
                    if m is None:
                        return
                    os.sync()
                    rec.step(dmv, e, p, "cp_mount_%d" % i, [Cmd(["cp", "-r", view(WTM_PHOTOS), dest], cwd=pt.root)],
                             None, after=lambda o, m=m: dict(_tree_check(dest, photo_hashes, "cp -r out of the mount")(o),
                                                             **data, mount_peak_rss_kib=m.hwm()))

            def plain(i=i):
                dest = kept("plain")
                os.sync()
                rec.step(_Floor, e, p, "cp_plain_%d" % i, [Cmd(["cp", "-r", folder, dest], cwd=pt.root)], None,
                         after=lambda o: dict(_tree_check(dest, photo_hashes, "cp -r")(o), **data))

            def bare(i=i):
                dest = kept("floor")
                with _wtm_floor(ctx, floor, pt.work, fmnt, e, p, "cp_floor_%d" % i) as m:
                    if m is None:
                        return
                    os.sync()
                    rec.step(floor, e, p, "cp_floor_%d" % i, [Cmd(["cp", "-r", fview(WTM_PHOTOS), dest],
                                                                  cwd=pt.root)], None,
                             after=lambda o: dict(_tree_check(dest, photo_hashes, "cp -r out of fuse_floor")(o),
                                                  **data))
            _paired(i, mounted, bare, plain)
        for path in copies:
            shutil.rmtree(path, ignore_errors=True)

        # (2) and (4b): absent data in fresh meta clones of the hub, served by dmv serve on 127.0.0.1
        _wtm_absent(ctx, dmv, pt, hub, mnt, size, absent_size, abs_digest, photos, photo_bytes, photo_hashes,
                    repeats, common)

        # (5) a photo editor's save of WTM_SAVES photos: temporary file beside it, fsync, rename over it; after
        # the meta clones of (2) and (4b) were deleted, the first try's files would skip their inodes
        e, p = "wtm-save", str(WTM_SAVES)
        data = dict(common, data_files=WTM_SAVES, folder=WTM_PHOTOS, settle_s=settle)
        _settle(settle, "the meta clones were deleted, and freed inodes slow down creating files (ext4 without "
                        "a journal)")
        for i in range(1, repeats + 1):
            print("%s %d: try %d of %d" % (e, WTM_SAVES, i, repeats), flush=True)

            def save(tool, step, where, seed, m=None):
                os.sync()
                out = run_cmds([Cmd([sys.executable, "-c", WTM_SAVE_SCRIPT, where, str(WTM_SAVES), str(seed)],
                                    cwd=pt.root, stdout="capture")], rec.env, rec.timeout)
                fields = dict(data, process_wall_s=round(out.wall_s, 6))
                if m is not None:
                    fields["mount_peak_rss_kib"] = m.hwm()
                try:
                    res = json.loads(out.captured.decode()) if out.ok else None
                except ValueError:
                    res, out.ok, out.error = None, False, "the saver's output is no JSON: %r" % out.captured[-200:]
                if res:
                    out.wall_s = res["seconds"]
                    fields.update(data_bytes=res["bytes"], saved=res["files"])
                    bad = [n for n, h in res["sha1"].items() if not os.path.isfile(os.path.join(folder, n))
                           or datagen.file_hash(os.path.join(folder, n)) != h]
                    left = [n for n in os.listdir(folder) if n.endswith(".tmp")]
                    fields.update(verified=not bad and not left and res["files"] == min(WTM_SAVES, photos))
                    if not fields["verified"]:
                        out.ok, out.error = False, "%d saved files differ in the working tree, %d .tmp left, %d saved" % (
                            len(bad), len(left), res["files"])
                rec.record(tool, e, p, step, out, None, **fields)

            def mounted(i=i):
                with _wtm_mounted(ctx, dmv, pt.work, mnt, e, p, "save_mount_%d" % i) as m:
                    if m is not None:
                        save(dmv, "save_mount_%d" % i, view(WTM_PHOTOS), WTM_SEED * 100 + 2 * i, m)

            def bare(i=i):
                with _wtm_floor(ctx, floor, pt.work, fmnt, e, p, "save_floor_%d" % i) as m:
                    if m is not None:
                        save(floor, "save_floor_%d" % i, fview(WTM_PHOTOS), WTM_SEED * 100 + 50 + i)
            _paired(i, mounted, bare, lambda i=i: save(_Floor, "save_plain_%d" % i, folder, WTM_SEED * 100 + 2 * i + 1))
    finally:
        _mount_cleanup(pt.root, rec.env)
        shutil.rmtree(pt.root, ignore_errors=True)


def _wtm_absent(ctx, dmv, pt, hub, mnt, size, absent_size, abs_digest, photos, photo_bytes, photo_hashes, repeats,
                common):
    rec = ctx.rec
    ea, pa = "wtm-absent", str(absent_size)
    ec, pc = "wtm-copy", str(photos)
    data_a = dict(common, data_bytes=absent_size, data_files=1, transport="http")
    data_c = dict(common, data_files=photos, data_bytes=photo_bytes, folder=WTM_PHOTOS, transport="http")
    try:
        with servers.DmvHttp(dmv.path, os.path.join(pt.root, "http"), rec.env, {MOUNT_HUB: hub}, SYNC_TOKEN) as srv:
            url = srv.url(MOUNT_HUB)
            print("  dmv serve on 127.0.0.1:%d" % srv.port, flush=True)

            def fresh(name, i):
                dest = os.path.join(pt.root, name)
                shutil.rmtree(dest, ignore_errors=True)
                ok = _run_untimed(ctx, [dmv.cmd(pt, "clone", "--token", SYNC_TOKEN, "--slice", "meta", url, dest,
                                                cwd=pt.root)], dmv, ea, pa, "clone_%s_%d" % (name, i))
                return dest if ok else None

            for i in range(1, repeats + 1):
                print("%s %s: try %d of %d (absent, meta clones)" % (ea, human_bytes(absent_size), i, repeats),
                      flush=True)

                def read_mounted(i=i):
                    clone = fresh("meta-mount", i)
                    if not clone:
                        return
                    with _wtm_mounted(ctx, dmv, clone, mnt, ea, pa, "read_mount_%d" % i) as m:
                        if m is not None:
                            os.sync()
                            sent0 = _server_written(srv)
                            rec.step(dmv, ea, pa, "read_mount_%d" % i,
                                     [Cmd(["cat", os.path.join(mnt, WTM_ABSENT_FILE)], cwd=pt.root)], None,
                                     after=lambda o, m=m, s=sent0: dict(data_a, mount_peak_rss_kib=m.hwm(),
                                                                        server_bytes_written=_delta(s, srv)))
                            # untimed: the file through the mount again (from what it kept), hashed
                            ok = datagen.file_hash(os.path.join(mnt, WTM_ABSENT_FILE)) == abs_digest
                            rec.fact("dmv", ea, pa, "verify_mount_%d" % i, "ok" if ok else "fail",
                                     None if ok else "the file read through the mount differs from the source",
                                     verified=ok)
                    shutil.rmtree(clone, ignore_errors=True)

                def read_got(i=i):
                    clone = fresh("meta-get", i)
                    if not clone:
                        return
                    os.sync()
                    sent0 = _server_written(srv)
                    rec.step(dmv, ea, pa, "get_%d" % i, [dmv.cmd(pt, "get", WTM_ABSENT_FILE, cwd=clone)], None,
                             after=lambda o, s=sent0: dict(_file_check(os.path.join(clone, WTM_ABSENT_FILE), abs_digest,
                                                                       "dmv get")(o), **data_a,
                                                           server_bytes_written=_delta(s, srv)))
                    shutil.rmtree(clone, ignore_errors=True)
                _paired(i, read_mounted, read_got)

            for i in range(1, repeats + 1):
                print("%s %d: try %d of %d (absent, meta clones)" % (ec, photos, i, repeats), flush=True)

                def copy_mounted(i=i):
                    clone = fresh("meta-mount", i)
                    if not clone:
                        return
                    with _wtm_mounted(ctx, dmv, clone, mnt, ec, pc, "cp_absent_mount_%d" % i) as m:
                        if m is not None:
                            dest = os.path.join(pt.root, "copy")
                            os.sync()
                            sent0 = _server_written(srv)
                            rec.step(dmv, ec, pc, "cp_absent_mount_%d" % i,
                                     [Cmd(["cp", "-r", os.path.join(mnt, WTM_PHOTOS), dest], cwd=pt.root)], None,
                                     after=lambda o, m=m, s=sent0: dict(
                                         _tree_check(dest, photo_hashes, "cp -r out of the meta clone's mount")(o),
                                         **data_c, mount_peak_rss_kib=m.hwm(), server_bytes_written=_delta(s, srv)))
                            shutil.rmtree(dest, ignore_errors=True)
                    shutil.rmtree(clone, ignore_errors=True)

                def copy_got(i=i):
                    clone = fresh("meta-get", i)
                    if not clone:
                        return
                    os.sync()
                    sent0 = _server_written(srv)
                    rec.step(dmv, ec, pc, "get_%d" % i, [dmv.cmd(pt, "get", WTM_PHOTOS, cwd=clone)], None,
                             after=lambda o, s=sent0: dict(_tree_check(os.path.join(clone, WTM_PHOTOS), photo_hashes,
                                                                       "dmv get of the folder")(o), **data_c,
                                                           server_bytes_written=_delta(s, srv)))
                    shutil.rmtree(clone, ignore_errors=True)
                _paired(i, copy_mounted, copy_got)
    except servers.ServerError as e:
        print("%s: %s" % (ea, e), flush=True)
        for e_, p_ in ((ea, pa), (ec, pc)):
            rec.note("dmv", e_, p_, "absent", "fail", str(e))


def _delta(sent0, srv):
    sent1 = _server_written(srv)
    return sent1 - sent0 if sent0 is not None and sent1 is not None else None


def _wtm_status(ctx, dmv, tree, repeats, floor=None):
    """(6) `dmv status` after WTM_EDITS of `tree` files of 1 KiB were rewritten (new bytes, the same size)
    through the mount, against the same edit in the plain tree and through `floor` (fuse_floor over the plain
    tree, still mounted); after each, `dmv commit -a` (untimed)."""
    rec = ctx.rec
    e, p = "wtm-status", str(tree)
    pt = ctx.point(e, tree)
    try:
        print("%s %d: writing %d files of 1 KiB, commit (untimed)" % (e, tree, tree), flush=True)
        stream = datagen.RandomStream(WTM_SEED + 3)
        names = []
        for start in range(0, tree, WTM_TREE_PER_FOLDER):
            d = "d%03d" % (start // WTM_TREE_PER_FOLDER)
            os.makedirs(os.path.join(pt.work, d))
            n = min(WTM_TREE_PER_FOLDER, tree - start)
            block = stream.read(n * datagen.SMALL_FILE_SIZE)
            for k in range(n):
                rel = "%s/f%06d" % (d, start + k)
                with open(os.path.join(pt.work, rel), "wb") as f:
                    f.write(block[k * datagen.SMALL_FILE_SIZE:(k + 1) * datagen.SMALL_FILE_SIZE])
                names.append(rel)
        if not _run_untimed(ctx, dmv.init(pt) + dmv.commit(pt, True), dmv, e, p, "prepare"):
            return
        mnt = os.path.join(pt.root, "mnt")
        data = dict(data_files=tree, edited=WTM_EDITS, repeats=repeats)
        run_cmds([dmv.cmd(pt, "status")], rec.env, rec.timeout)  # untimed: the same start for every try

        def edit(top, seed):
            rng = random.Random(seed)
            picked = sorted(rng.sample(names, min(WTM_EDITS, len(names))))
            for rel in picked:
                with open(os.path.join(top, rel), "r+b") as f:
                    f.write(rng.randbytes(datagen.SMALL_FILE_SIZE))
            return picked

        def status(tool, step, picked, extra):
            def after(out):
                fields = dict(data, **extra)
                if out.ok:
                    text = out.captured.decode("utf-8", "replace")
                    seen = sum(1 for rel in picked if rel in text)
                    fields.update(listed=seen, verified=seen == len(picked))
                    if seen != len(picked):
                        out.ok, out.error = False, "dmv status names %d of the %d edited files" % (seen, len(picked))
                return fields
            rec.step(tool, e, p, step, [dmv.cmd(pt, "status", stdout="capture")], None, after=after)
            _run_untimed(ctx, dmv.commit(pt, False), dmv, e, p, "commit_%s" % step)

        for i in range(1, repeats + 1):
            print("%s %d: try %d of %d" % (e, tree, i, repeats), flush=True)

            def mounted(i=i):
                with _wtm_mounted(ctx, dmv, pt.work, mnt, e, p, "status_mount_%d" % i) as m:
                    if m is not None:
                        picked = edit(mnt, WTM_SEED * 1000 + 2 * i)
                        os.sync()
                        status(dmv, "status_mount_%d" % i, picked, dict(mount_peak_rss_kib=m.hwm()))

            def plain(i=i):
                picked = edit(pt.work, WTM_SEED * 1000 + 2 * i + 1)
                os.sync()
                status(_Floor, "status_plain_%d" % i, picked, {})

            def bare(i=i):
                with _wtm_floor(ctx, floor, pt.work, os.path.join(pt.root, "floor"), e, p, "status_floor_%d" % i) as m:
                    if m is not None:
                        picked = edit(m, WTM_SEED * 1000 + 500 + i)
                        os.sync()
                        status(floor, "status_floor_%d" % i, picked, {})
            _paired(i, mounted, bare, plain)
    finally:
        _mount_cleanup(pt.root, rec.env)
        shutil.rmtree(pt.root, ignore_errors=True)


# ---------------------------------------------------------------- habits

# Issue 47: everyday Git habits, dmv side by side with git in one run. Every timed row is HABITS_TRIES tries
# of one step per tool, back to back in pairs (dmv first in odd tries, git first in even ones, as
# _meta_clone_pairs); the report takes each tool's median and the median of the pairs' dmv/git ratios.
HABITS_TRIES = 5
HABITS_NEW_BYTES = 100       # the one small new file each add + commit try commits
HABITS_MERGE_EVERY = 100     # log history: every this many commits, a side branch merged (the merge included)
HABITS_SIDE_COMMITS = 3      # commits on each side branch
HABITS_DATE = IMPORT_DATE    # first commit date of the fast-imported histories; one a minute after it


def habits(ctx, counts, rebase_commits, log_commits):
    """Issue 47's habits, dmv against git in one run: (1) `add` + `commit` of one new file of HABITS_NEW_BYTES
    bytes in a tree already holding N committed files of 1 KiB, for each N of `counts` (`habits-commit`,
    parameter: N); (2) `rebase main` of a branch of `rebase_commits` small commits, each changing a text file
    of its own, onto main advanced by one commit touching another file (`habits-rebase`, parameter: commits);
    (3) `log --graph --oneline` of a history of `log_commits` commits in which, every HABITS_MERGE_EVERY
    commits, a side branch of HABITS_SIDE_COMMITS commits is merged (`habits-log`, parameter: commits).
    The histories of (2) and (3) are made with `git fast-import` and brought into dmv with `dmv import git`."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    points = [("habits-commit", n) for n in counts] + [("habits-rebase", rebase_commits),
                                                       ("habits-log", log_commits)]
    if dmv is None or git is None:
        for tool in (dmv, git):
            if tool:
                for experiment, n in points:
                    ctx.rec.note(tool.name, experiment, str(n), "all", "skipped",
                                 "habits compares dmv with git: %s is missing" % ("git" if git is None else "dmv"))
        return
    probe = ctx.point("habits-probe", 0)
    try:
        why = _supports(ctx, dmv, probe, "rebase", "reset", "import")
    finally:
        shutil.rmtree(probe.root, ignore_errors=True)
    skips = Skips(ctx, "habits-commit")
    for n in counts:
        _habits_commit(ctx, dmv, git, skips, n)
    if why:
        for experiment, n in points[len(counts):]:
            ctx.rec.note("dmv", experiment, str(n), "all", "unsupported", why)
        return
    _habits_rebase(ctx, dmv, git, rebase_commits)
    _habits_log(ctx, dmv, git, log_commits)


def _habits_pairs(ctx, dmv, git, experiment, param, prefix, make, prepare=None, check=None, data=None):
    """HABITS_TRIES tries of step PREFIX_i for each tool, in pairs back to back. `make(tool, i)`: the try's
    commands; `prepare(tool, i)`: untimed set-up before it, False on failure (recorded by it); `check(tool, i)`:
    None or an `after` for Recorder.step. A tool's tries stop at its first failure (the rest are recorded
    as skipped)."""
    stopped = {}
    for i in range(1, HABITS_TRIES + 1):
        order = (dmv, git) if i % 2 else (git, dmv)
        for place, tool in enumerate(order):
            step = "%s_%d" % (prefix, i)
            if tool.name in stopped:
                ctx.rec.note(tool.name, experiment, param, step, "skipped", stopped[tool.name])
                continue
            if prepare and not prepare(tool, i):
                stopped[tool.name] = "the set-up of try %d failed" % i
                continue
            fields = dict(data or {}, pair=i, pair_place="first" if place == 0 else "second")
            after = check(tool, i) if check else None

            def extra(out, after=after, fields=fields):
                return dict(fields, **(after(out) if after else {}))
            os.sync()  # untimed: no try pays for writing back what the set-up or the try before wrote
            out = ctx.rec.step(tool, experiment, param, step, make(tool, i), None, after=extra)
            if not out.ok:
                stopped[tool.name] = "try %d failed: %s" % (i, (out.error or "")[-300:])


def _capture(ctx, tool, cwd, *args):
    """Untimed: (stdout of `tool ARGS` in cwd, None) or (None, why it failed)."""
    out = run_cmds([Cmd([tool.path] + list(args), cwd=cwd, stdout="capture")], ctx.rec.env, ctx.rec.timeout)
    if not out.ok:
        return None, out.error or "failed"
    return out.captured.decode("utf-8", "replace"), None


def _habit_file(i):
    """The new file of add + commit try i: HABITS_NEW_BYTES bytes of text."""
    line = ("habit %d: one small new file in a big tree\n" % i).encode()
    return "habit-%03d.txt" % i, (line * (HABITS_NEW_BYTES // len(line) + 1))[:HABITS_NEW_BYTES - 1] + b"\n"


def _habits_commit(ctx, dmv, git, skips, n):
    """Row 1: a tree of n files of 1 KiB per tool (its own copy), committed untimed (`dmv add . && dmv commit
    -m`, `git add -A && git commit`); then HABITS_TRIES paired tries of `sh -c 'TOOL add FILE && TOOL commit
    -q -m MSG'` with a fresh file each."""
    rec = ctx.rec
    experiment, param = "habits-commit", str(n)
    tools = [t for t in (dmv, git) if skips.active(t, param)]
    if len(tools) < 2:
        for t in tools:
            rec.note(t.name, experiment, param, "all", "skipped", "the other tool failed at a smaller tree")
        return
    # per tool: the tree (a 4 KiB block a file), its repository and index, with a margin
    need = 2 * n * 8192 + GiB
    if not _enough_disk(ctx, tools, skips, experiment, param, need):
        return
    root = ctx.point(experiment, n).root
    pts = {t.name: Point(os.path.join(root, t.name)) for t in tools}
    try:
        for t in tools:
            print("%s %d: writing %s files for %s" % (experiment, n, "{:,}".format(n), t.name), flush=True)
            datagen.write_tree(pts[t.name].work, n)
            datagen.touch_tree(pts[t.name].work, n, AGED)
        ready = []
        for t in tools:
            pt = pts[t.name]

            def loose(out, pt=pt, t=t):
                if not out.ok or t.name != "git":
                    return dict(tree_files=n)
                text, _ = _capture(ctx, t, pt.work, "count-objects", "-v")
                counts = dict(l.split(": ", 1) for l in (text or "").splitlines() if ": " in l)
                return dict(tree_files=n, git_loose_objects=int(counts.get("count", -1)),
                            git_packed_objects=int(counts.get("in-pack", -1)))
            os.sync()
            # the set-up, recorded for reference (git's automatic gc runs inside its commit here)
            out = rec.step(t, experiment, param, "setup_commit", t.init(pt) + t.commit(pt, True), t.meta(pt),
                           after=loose)
            if out.ok:
                ready.append(t)
            else:
                skips.fail(t, param, out)
        if len(ready) < 2:
            for t in ready:
                rec.note(t.name, experiment, param, "all", "skipped", "the other tool's set-up commit failed")
            return

        def prepare(tool, i):
            name, content = _habit_file(i)
            with open(os.path.join(pts[tool.name].work, name), "wb") as f:
                f.write(content)
            return True

        def make(tool, i):
            name, _ = _habit_file(i)
            script = "%s add %s && %s commit -q -m %s" % (
                shlex.quote(tool.path), name, shlex.quote(tool.path), shlex.quote("habit %d" % i))
            return [Cmd(["sh", "-c", script], cwd=pts[tool.name].work)]

        def check(tool, i):
            name, content = _habit_file(i)

            def after(out):
                if not out.ok:
                    return {}
                argv = ["cat", "HEAD:" + name] if tool.name == "dmv" else ["cat-file", "blob", "HEAD:" + name]
                text, err = _capture(ctx, tool, pts[tool.name].work, *argv)
                verified = text is not None and text.encode() == content
                if not verified:
                    out.ok, out.error = False, "HEAD:%s after the commit: %s" % (
                        name, err or "its bytes differ from the file's")
                return dict(verified=verified)
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "add_commit", make, prepare, check,
                      data=dict(tree_files=n, new_file_bytes=HABITS_NEW_BYTES))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _fi_commit(mark, ref, seq, msg, parents, files):
    """fast-import: commit `mark` on `ref` at HABITS_DATE + a minute per `seq`, its parents by mark (the first
    is `from`, the others `merge`), `files` {path: bytes} written inline."""
    ident = b"bench <bench@example.com> %d +0000" % (HABITS_DATE + 60 * seq)
    msg = msg.encode() + b"\n"
    out = [b"commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s" % (ref.encode(), mark, ident, ident,
                                                                             len(msg), msg)]
    for k, p in enumerate(parents):
        out.append(b"%s :%d\n" % (b"from" if k == 0 else b"merge", p))
    for path, content in sorted(files.items()):
        out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(content), content))
    return b"".join(out) + b"\n"


def _rebase_file(k):
    return "topic/t%03d.txt" % k


def _rebase_stream(commits):
    """A base commit on main (README, main.txt and one text file per topic commit), `commits` commits on
    topic each changing its own file, then one commit on main changing main.txt."""
    def text(what, k=None):
        return ("%s\n" % what + "".join("line %02d of %s\n" % (l, what) for l in range(10))).encode()
    base = {"README.txt": b"the base\n", "main.txt": text("main.txt")}
    base.update({_rebase_file(k): text(_rebase_file(k)) for k in range(commits)})
    yield _fi_commit(1, "refs/heads/main", 0, "base", [], base)
    for k in range(commits):  # commit k + 1 of topic: mark 2 + k, on the one before it (the base for the first)
        yield _fi_commit(2 + k, "refs/heads/topic", 1 + k, "topic %d" % (k + 1), [1 + k],
                         {_rebase_file(k): text(_rebase_file(k)) + b"changed by topic commit %d\n" % (k + 1)})
    yield _fi_commit(2 + commits, "refs/heads/main", 1 + commits, "main moves on", [1],
                     {"main.txt": text("main.txt") + b"changed on main\n"})


def _habits_rebase(ctx, dmv, git, commits):
    """Row 2: a branch `topic` of `commits` commits on a base, main one commit further (fast-imported into a
    git repository, which `dmv import git` converts); from topic, HABITS_TRIES paired tries of `rebase main`,
    each after `reset --hard` back to topic's old tip (untimed), each checked (untimed): on topic, `commits`
    commits in `log main..HEAD`, main's history below them, main's change in the working tree."""
    rec = ctx.rec
    experiment, param = "habits-rebase", str(commits)
    env = rec.env
    pt = ctx.point(experiment, commits)
    gwork, dwork = os.path.join(pt.root, "git"), os.path.join(pt.root, "dmv")
    try:
        try:
            os.makedirs(gwork)
            _git(env, gwork, "init", "-q", "--initial-branch=main")
            _fast_import(gwork, env, _rebase_stream(commits))
            _git(env, gwork, "reset", "-q", "--hard")
            _git(env, gwork, "checkout", "-q", "topic")
            git_tip = _git(env, gwork, "rev-parse", "topic").strip().decode()
            main_total = int(_git(env, gwork, "rev-list", "--count", "main").strip())
        except (OSError, ValueError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "all", "fail", "making the history with git: %s" % e)
            return
        os.makedirs(dwork)
        os.sync()
        out = rec.step(dmv, experiment, param, "setup_import", [
            Cmd([dmv.path, "init"], cwd=dwork), Cmd([dmv.path, "import", "git", gwork], cwd=dwork),
            Cmd([dmv.path, "switch", "-q", "topic"], cwd=dwork)], os.path.join(dwork, ".dmv"),
            after=lambda out: dict(source_commits=commits + 2))
        if not out.ok:
            rec.note(git.name, experiment, param, "all", "skipped", "dmv's copy of the history failed")
            return
        tip, err = _capture(ctx, dmv, dwork, "rev-parse", "topic")
        if tip is None:
            rec.note(dmv.name, experiment, param, "setup_import", "fail", "dmv rev-parse topic: %s" % err)
            return
        tips = {"dmv": tip.strip(), "git": git_tip}
        works = {"dmv": dwork, "git": gwork}
        main_text = _git(env, gwork, "cat-file", "blob", "main:main.txt")

        def prepare(tool, i):
            quiet = ["-q"] if tool.name == "git" else []  # dmv reset has no -q (its one line is discarded)
            return _run_untimed(ctx, [Cmd([tool.path, "reset"] + quiet + ["--hard", tips[tool.name]],
                                          cwd=works[tool.name])], tool, experiment, param, "reset_%d" % i)

        def make(tool, i):
            return [Cmd([tool.path, "rebase", "main"], cwd=works[tool.name])]

        def check(tool, i):
            def after(out):
                if not out.ok:
                    return {}
                errors, fields = [], {}
                above, err = _capture(ctx, tool, works[tool.name], "log", "--oneline", "main..HEAD")
                total, err2 = _capture(ctx, tool, works[tool.name], "log", "--oneline", "HEAD")
                branch, err3 = _capture(ctx, tool, works[tool.name], "rev-parse", "--abbrev-ref", "HEAD")
                fields["commits_above_main"] = len(above.splitlines()) if above is not None else None
                fields["commits_in_head"] = len(total.splitlines()) if total is not None else None
                fields["branch_after"] = branch.strip() if branch is not None else None
                if fields["commits_above_main"] != commits:
                    errors.append("`log main..HEAD` lists %s commits, expected %d%s" % (
                        fields["commits_above_main"], commits, (": " + err[-200:]) if err else ""))
                if fields["commits_in_head"] != main_total + commits:
                    errors.append("`log HEAD` lists %s commits, expected main's %d + %d%s" % (
                        fields["commits_in_head"], main_total, commits, (": " + err2[-200:]) if err2 else ""))
                if fields["branch_after"] != "topic":
                    errors.append("HEAD is %s after the rebase, not topic%s" % (
                        fields["branch_after"], (": " + err3[-200:]) if err3 else ""))
                with open(os.path.join(works[tool.name], "main.txt"), "rb") as f:
                    if f.read() != main_text:
                        errors.append("main.txt in the working tree is not main's")
                fields["verified"] = not errors
                if errors:
                    out.ok, out.error = False, "; ".join(errors)
                return fields
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "rebase", make, prepare, check,
                      data=dict(rebased_commits=commits, main_commits=main_total))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _graph_stream(commits):
    """`commits` commits on main: every HABITS_MERGE_EVERY commits a block of a side branch of
    HABITS_SIDE_COMMITS commits (forked at the block's start, its commits dated among main's) and its merge;
    main's commits change m/fNN.txt (50 files, in turn), the side's s/fNN.txt, and a merge writes the side's
    files into main's tree. Yields fast-import chunks: `commits` commits on main in all, (commits - 1) //
    HABITS_MERGE_EVERY of them merges; the side branch's ref is left for the caller to delete."""
    def text(what, n):
        return ("%s, as commit %d left it\n" % (what, n)).encode()
    yield _fi_commit(1, "refs/heads/main", 0, "first", [], {"README.txt": b"a long history\n"})
    mark, seq, tip, made, m, s = 1, 0, 1, 1, 0, 0

    def main_commit(parent):
        nonlocal mark, seq, m
        mark, seq, m = mark + 1, seq + 1, m + 1
        path = "m/f%02d.txt" % (m % 50)
        return _fi_commit(mark, "refs/heads/main", seq, "main %d" % m, [parent], {path: text(path, seq)})
    while made < commits:
        if commits - made >= HABITS_MERGE_EVERY:
            fork, side, side_files = tip, None, {}
            mains = HABITS_MERGE_EVERY - HABITS_SIDE_COMMITS - 1
            for k in range(mains):
                yield main_commit(tip)
                tip = mark
                if k < HABITS_SIDE_COMMITS:
                    mark, seq, s = mark + 1, seq + 1, s + 1
                    path = "s/f%02d.txt" % (s % 50)
                    side_files[path] = text(path, seq)
                    yield _fi_commit(mark, "refs/heads/side", seq, "side %d" % s, [side or fork],
                                     {path: side_files[path]})
                    side = mark
            mark, seq = mark + 1, seq + 1
            yield _fi_commit(mark, "refs/heads/main", seq, "merge side branch ending at side %d" % s, [tip, side],
                             side_files)
            tip = mark
            made += HABITS_MERGE_EVERY
        else:
            yield main_commit(tip)
            tip = mark
            made += 1


def _habits_log(ctx, dmv, git, commits):
    """Row 3: `log --graph --oneline` (to /dev/null) of a history of `commits` commits with merges, made with
    `git fast-import` in a bare repository and gc'd (`git gc`: packed, with the commit-graph file a repository
    that has seen an automatic gc has), converted by `dmv import git`; HABITS_TRIES paired tries. The first try
    of each tool is checked (untimed, run again): as many commit lines (lines with `*`) as commits."""
    rec = ctx.rec
    experiment, param = "habits-log", str(commits)
    env = rec.env
    pt = ctx.point(experiment, commits)
    gdir, dwork = os.path.join(pt.root, "git.git"), os.path.join(pt.root, "dmv")
    merges = (commits - 1) // HABITS_MERGE_EVERY
    try:
        try:
            os.makedirs(gdir)
            print("%s %d: making the history with git fast-import" % (experiment, commits), flush=True)
            _git(env, gdir, "init", "-q", "--bare", "--initial-branch=main")
            _fast_import(gdir, env, _graph_stream(commits))
            if merges:
                _git(env, gdir, "update-ref", "-d", "refs/heads/side")
            _git(env, gdir, "gc", "-q", timeout=3600)
            count = int(_git(env, gdir, "rev-list", "--count", "main").strip())
            got_merges = int(_git(env, gdir, "rev-list", "--count", "--merges", "main").strip())
            graph_file = os.path.isfile(os.path.join(gdir, "objects", "info", "commit-graph")) or os.path.isdir(
                os.path.join(gdir, "objects", "info", "commit-graphs"))
            if (count, got_merges) != (commits, merges):
                raise _SourceError("the history has %d commits and %d merges, expected %d and %d" % (
                    count, got_merges, commits, merges))
        except (OSError, ValueError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "all", "fail", "making the history with git: %s" % e)
            return
        os.makedirs(dwork)
        os.sync()
        print("%s %d: dmv import git" % (experiment, commits), flush=True)
        out = rec.step(dmv, experiment, param, "setup_import", [
            Cmd([dmv.path, "init"], cwd=dwork), Cmd([dmv.path, "import", "git", gdir], cwd=dwork)],
            os.path.join(dwork, ".dmv"), after=lambda out: dict(source_commits=commits, source_merges=merges))
        if not out.ok:
            rec.note(git.name, experiment, param, "all", "skipped", "dmv's copy of the history failed")
            return
        works = {"dmv": dwork, "git": gdir}

        def make(tool, i):
            return [Cmd([tool.path, "log", "--graph", "--oneline"], cwd=works[tool.name])]

        def check(tool, i):
            if i > 1:
                return None

            def after(out):
                if not out.ok:
                    return {}
                text, err = _capture(ctx, tool, works[tool.name], "log", "--graph", "--oneline")
                lines = text.splitlines() if text is not None else []
                stars = sum(1 for l in lines if "*" in l)
                fields = dict(log_lines=len(lines) if text is not None else None, log_commit_lines=stars,
                              log_bytes=len(text.encode()) if text is not None else None)
                if text is None or stars != commits:
                    out.ok, out.error = False, "%s lines with `*`, expected %d%s" % (
                        stars if text is not None else "no", commits, (": " + err[-200:]) if err else "")
                return fields
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "log_graph", make, None, check,
                      data=dict(history_commits=commits, history_merges=merges, git_commit_graph=graph_file))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


# Issue 70: the habits of a Git user who looks into text, dmv against git in one run, each row HABITS_TRIES
# paired tries as above (`habits-text` runs these rows alone; `habits` runs them after issue 47's).
HABITS_BLAME_LINES = 10_000     # blame: the text file's lines
HABITS_BLAME_COMMITS = 1_000    # blame: its commits (the first writes every line)
HABITS_BLAME_CHANGED = 10       # blame: lines each later commit rewrites, picked at random (seeded)
HABITS_BLAME_FILE = "story.txt"
HABITS_GREP_FILES = 100_000     # grep: committed text files (1,000 a folder, about 1 KiB each)
HABITS_GREP_EVERY = 100         # grep: one file in this many holds the word, on one line
HABITS_GREP_WORD = "quokka"
HABITS_ALL_COMMITS = 10_000     # log --all: commits in all
HABITS_ALL_BRANCHES = 100       # log --all: feature branches besides main, none merged
HABITS_BRANCH_COMMITS = 5       # log --all: commits on each feature branch
HABITS_BISECT_COMMITS = 1_000   # bisect: commits of the linear history searched
HABITS_SEED = 70                # blame's changed lines, bisect's bad commit
HABITS_TEXT_EXPS = ("habits-blame", "habits-grep", "habits-all", "habits-bisect")


def habits_text(ctx):
    """Issue 70's rows, dmv against git: `blame` of a HABITS_BLAME_LINES-line file with HABITS_BLAME_COMMITS
    commits of history (`habits-blame`, parameter: commits), `grep WORD` over HABITS_GREP_FILES committed text
    files (`habits-grep`, parameter: files), `log --graph --oneline --decorate --all` over HABITS_ALL_COMMITS
    commits on main and HABITS_ALL_BRANCHES branches (`habits-all`, parameter: commits) and `bisect start` +
    `bisect run` over HABITS_BISECT_COMMITS commits (`habits-bisect`, parameter: commits). The histories are
    made with `git fast-import` and converted with `dmv import git`; the grep tree is written and committed by
    each tool."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    points = [("habits-blame", HABITS_BLAME_COMMITS), ("habits-grep", HABITS_GREP_FILES),
              ("habits-all", HABITS_ALL_COMMITS), ("habits-bisect", HABITS_BISECT_COMMITS)]
    if dmv is None or git is None:
        for tool in (dmv, git):
            if tool:
                for experiment, n in points:
                    ctx.rec.note(tool.name, experiment, str(n), "all", "skipped",
                                 "habits compares dmv with git: %s is missing" % ("git" if git is None else "dmv"))
        return
    probe = ctx.point("habits-probe", 0)
    try:
        why = _supports(ctx, dmv, probe, "import", "blame", "grep", "bisect")
    finally:
        shutil.rmtree(probe.root, ignore_errors=True)
    if why:
        for experiment, n in points:
            ctx.rec.note("dmv", experiment, str(n), "all", "unsupported", why)
        return
    _habits_blame(ctx, dmv, git)
    _habits_grep(ctx, dmv, git)
    _habits_all(ctx, dmv, git)
    _habits_bisect(ctx, dmv, git)


def _habits_import(ctx, dmv, git, experiment, param, gsrc, dwork, **fields):
    """Untimed-ish set-up, recorded for reference: `dmv init`, `dmv import git GSRC` and `dmv reset --hard
    HEAD` in dwork (the working tree as the history's tip has it). False when it failed."""
    os.makedirs(dwork)
    os.sync()
    print("%s %s: dmv import git" % (experiment, param), flush=True)
    out = ctx.rec.step(dmv, experiment, param, "setup_import", [
        Cmd([dmv.path, "init"], cwd=dwork), Cmd([dmv.path, "import", "git", gsrc], cwd=dwork),
        Cmd([dmv.path, "reset", "--hard", "HEAD"], cwd=dwork)], os.path.join(dwork, ".dmv"),
        after=lambda out: dict(fields))
    if not out.ok:
        ctx.rec.note(git.name, experiment, param, "all", "skipped", "dmv's copy of the history failed")
    return out.ok


def _blame_history():
    """fast-import chunks of the blame history, and for each line of the file the message of the commit
    that last wrote it: commit 1 writes HABITS_BLAME_LINES numbered lines, each later commit rewrites
    HABITS_BLAME_CHANGED lines picked at random (seeded), each new line's text naming its commit."""
    rng = random.Random(HABITS_SEED)
    lines = ["line %05d: as commit 1 wrote it\n" % i for i in range(HABITS_BLAME_LINES)]
    last = [1] * HABITS_BLAME_LINES
    chunks = [_fi_commit(1, "refs/heads/main", 0, "commit 1", [], {HABITS_BLAME_FILE: "".join(lines).encode()})]
    for c in range(2, HABITS_BLAME_COMMITS + 1):
        for i in rng.sample(range(HABITS_BLAME_LINES), HABITS_BLAME_CHANGED):
            lines[i], last[i] = "line %05d: as commit %d wrote it\n" % (i, c), c
        chunks.append(_fi_commit(c, "refs/heads/main", c - 1, "commit %d" % c, [c - 1],
                                 {HABITS_BLAME_FILE: "".join(lines).encode()}))
    return chunks, ["commit %d" % c for c in last]


BLAME_HEADER = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64}) \d+ \d+( \d+)?$")


def _blame_summaries(text):
    """Each line's commit summary, from `blame --porcelain` output."""
    summary, out, cur = {}, [], None
    for line in text.split("\n"):
        if line.startswith("\t"):
            out.append(cur)
            continue
        m = BLAME_HEADER.match(line)
        if m:
            cur = m.group(1)
        elif line.startswith("summary ") and cur is not None:
            summary[cur] = line[len("summary "):]
    return [summary.get(c) for c in out]


def _habits_blame(ctx, dmv, git):
    """Row: `blame FILE` (to /dev/null) of the working file, unchanged from HEAD; the first try of each tool is
    checked (untimed): `blame --porcelain FILE` must name, for every line, the commit that last wrote it."""
    rec, env = ctx.rec, ctx.rec.env
    experiment, param = "habits-blame", str(HABITS_BLAME_COMMITS)
    pt = ctx.point(experiment, HABITS_BLAME_COMMITS)
    gwork, dwork = os.path.join(pt.root, "git"), os.path.join(pt.root, "dmv")
    try:
        try:
            print("%s: making the history with git fast-import" % experiment, flush=True)
            chunks, expected = _blame_history()
            os.makedirs(gwork)
            _git(env, gwork, "init", "-q", "--initial-branch=main")
            _fast_import(gwork, env, chunks)
            del chunks
            _git(env, gwork, "gc", "-q", timeout=3600)
            _git(env, gwork, "reset", "-q", "--hard")
        except (OSError, ValueError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "all", "fail", "making the history with git: %s" % e)
            return
        if not _habits_import(ctx, dmv, git, experiment, param, gwork, dwork, source_commits=HABITS_BLAME_COMMITS,
                              file_lines=HABITS_BLAME_LINES):
            return
        works = {"dmv": dwork, "git": gwork}

        def make(tool, i):
            return [Cmd([tool.path, "blame", HABITS_BLAME_FILE], cwd=works[tool.name])]

        def check(tool, i):
            if i > 1:
                return None

            def after(out):
                if not out.ok:
                    return {}
                text, err = _capture(ctx, tool, works[tool.name], "blame", "--porcelain", HABITS_BLAME_FILE)
                got = _blame_summaries(text) if text is not None else []
                wrong = [k for k in range(min(len(got), len(expected))) if got[k] != expected[k]]
                fields = dict(blame_lines=len(got), blame_lines_wrong=len(wrong) + abs(len(got) - len(expected)),
                              blame_commits_named=len(set(got)))
                if text is None or len(got) != len(expected) or wrong:
                    out.ok, out.error = False, "blame --porcelain: %s" % (
                        err[-200:] if text is None else "%d lines, expected %d" % (len(got), len(expected))
                        if len(got) != len(expected) else "%d lines name another commit than the one that last "
                        "wrote them (line %d: %r, expected %r)" % (len(wrong), wrong[0] + 1, got[wrong[0]],
                                                                    expected[wrong[0]]))
                return fields
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "blame", make, None, check,
                      data=dict(history_commits=HABITS_BLAME_COMMITS, file_lines=HABITS_BLAME_LINES,
                                lines_changed_per_commit=HABITS_BLAME_CHANGED))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _grep_file(i):
    """Text file i of the grep tree: 13 lines of about 80 bytes; every HABITS_GREP_EVERY-th file has
    HABITS_GREP_WORD on one line. Returns (bytes, the matching line or None)."""
    hit = i % HABITS_GREP_EVERY == HABITS_GREP_EVERY // 2
    at = i % 13
    out, match = [], None
    for n in range(13):
        if hit and n == at:
            line = "file %07d line %02d: a %s was seen near the river bank this morning\n" % (i, n, HABITS_GREP_WORD)
            match = line[:-1]
        else:
            line = "file %07d line %02d: the quick brown fox jumps over the lazy dog once again\n" % (i, n)
        out.append(line)
    return "".join(out).encode(), match


def _write_grep_tree(root, files):
    """The grep tree under root (datagen's layout, 1,000 a folder); returns the expected `grep` lines."""
    expected = []
    for i in range(files):
        path = datagen.small_file_path(root, i)
        if i % datagen.FILES_PER_DIR == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        data, match = _grep_file(i)
        with open(path, "wb") as f:
            f.write(data)
        if match:
            expected.append("%s:%s" % (os.path.relpath(path, root), match))
    return sorted(expected)


def _habits_grep(ctx, dmv, git):
    """Row: `grep WORD` (to /dev/null) over a committed tree of text files, the same tree written for each
    tool and committed untimed; the first try of each tool is checked (untimed): its lines must be exactly
    the matching lines, `PATH:LINE`."""
    rec = ctx.rec
    files = HABITS_GREP_FILES
    experiment, param = "habits-grep", str(files)
    root = ctx.point(experiment, files).root
    pts = {t.name: Point(os.path.join(root, t.name)) for t in (dmv, git)}
    try:
        expected = None
        for t in (dmv, git):
            print("%s: writing %s text files for %s" % (experiment, "{:,}".format(files), t.name), flush=True)
            expected = _write_grep_tree(pts[t.name].work, files)
            datagen.touch_tree(pts[t.name].work, files, AGED)
        for t in (dmv, git):
            pt = pts[t.name]
            os.sync()
            out = rec.step(t, experiment, param, "setup_commit", t.init(pt) + t.commit(pt, True), t.meta(pt),
                           after=lambda out: dict(tree_files=files))
            if not out.ok:
                other = git if t is dmv else dmv
                rec.note(other.name, experiment, param, "all", "skipped", "%s's set-up commit failed" % t.name)
                return

        def make(tool, i):
            return [Cmd([tool.path, "grep", HABITS_GREP_WORD], cwd=pts[tool.name].work)]

        def check(tool, i):
            if i > 1:
                return None

            def after(out):
                if not out.ok:
                    return {}
                text, err = _capture(ctx, tool, pts[tool.name].work, "grep", HABITS_GREP_WORD)
                got = sorted(text.splitlines()) if text is not None else []
                fields = dict(grep_lines=len(got), grep_expected_lines=len(expected))
                if got != expected:
                    missing = sorted(set(expected) - set(got))
                    extra = sorted(set(got) - set(expected))
                    out.ok, out.error = False, "grep: %s" % (
                        err[-200:] if text is None else "%d lines, expected %d; missing e.g. %r, unexpected e.g. %r" % (
                            len(got), len(expected), missing[:1], extra[:1]))
                return fields
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "grep", make, None, check,
                      data=dict(tree_files=files, matching_files=len(expected)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _branches_stream(forks, branches):
    """fast-import chunks: HABITS_ALL_BRANCHES branches feature-NNN, each HABITS_BRANCH_COMMITS commits on
    `forks[NNN]` = (commit id, its commit time), dated 10 s apart right after it (among main's commits,
    which are a minute apart), each changing a file of its own."""
    mark = 0
    for b in range(branches):
        fork, when = forks[b]
        ref = "refs/heads/feature-%03d" % b
        for j in range(HABITS_BRANCH_COMMITS):
            mark += 1
            ident = b"bench <bench@example.com> %d +0000" % (when + 10 * (j + 1))
            msg = b"work %d on topic %d\n" % (j + 1, b)
            path = b"topics/t%03d.txt" % b
            content = b"topic %d after work %d\n" % (b, j + 1)
            yield b"commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s%s" % (
                ref.encode(), mark, ident, ident, len(msg), msg,
                b"from %s\n" % fork.encode() if j == 0 else b"from :%d\n" % (mark - 1)) + \
                b"M 100644 inline %s\ndata %d\n%s\n\n" % (path, len(content), content)


def _habits_all(ctx, dmv, git):
    """Row: `log --graph --oneline --decorate --all` (to /dev/null) of HABITS_ALL_COMMITS commits: main made
    as the log --graph row's history (a side branch merged every HABITS_MERGE_EVERY commits), then
    HABITS_ALL_BRANCHES unmerged branches of HABITS_BRANCH_COMMITS commits forked from main at even spaces;
    `git gc`, then `dmv import git`. The first try of each tool is checked (untimed, run again): as many lines
    with `*` as commits, and every branch's name printed."""
    rec, env = ctx.rec, ctx.rec.env
    commits, branches = HABITS_ALL_COMMITS, HABITS_ALL_BRANCHES
    main_commits = commits - branches * HABITS_BRANCH_COMMITS
    merges = (main_commits - 1) // HABITS_MERGE_EVERY
    experiment, param = "habits-all", str(commits)
    pt = ctx.point(experiment, commits)
    gdir, dwork = os.path.join(pt.root, "git.git"), os.path.join(pt.root, "dmv")
    try:
        try:
            os.makedirs(gdir)
            print("%s %d: making the history with git fast-import" % (experiment, commits), flush=True)
            _git(env, gdir, "init", "-q", "--bare", "--initial-branch=main")
            _fast_import(gdir, env, _graph_stream(main_commits))
            if merges:
                _git(env, gdir, "update-ref", "-d", "refs/heads/side")
            fp = [l.split() for l in _git(env, gdir, "log", "--first-parent", "--reverse", "--format=%H %ct",
                                          "main").decode().splitlines()]
            forks = [(fp[(b + 1) * len(fp) // (branches + 1)][0], int(fp[(b + 1) * len(fp) // (branches + 1)][1]))
                     for b in range(branches)]
            _fast_import(gdir, env, _branches_stream(forks, branches))
            _git(env, gdir, "gc", "-q", timeout=3600)
            count = int(_git(env, gdir, "rev-list", "--count", "--all").strip())
            nbranches = len(_git(env, gdir, "for-each-ref", "refs/heads").splitlines())
            if (count, nbranches) != (commits, branches + 1):
                raise _SourceError("the history has %d commits and %d branches, expected %d and %d" % (
                    count, nbranches, commits, branches + 1))
        except (OSError, ValueError, IndexError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "all", "fail", "making the history with git: %s" % e)
            return
        if not _habits_import(ctx, dmv, git, experiment, param, gdir, dwork, source_commits=commits,
                              source_branches=branches + 1):
            return
        works = {"dmv": dwork, "git": gdir}
        argv = ["log", "--graph", "--oneline", "--decorate", "--all"]

        def make(tool, i):
            return [Cmd([tool.path] + argv, cwd=works[tool.name])]

        def check(tool, i):
            if i > 1:
                return None

            def after(out):
                if not out.ok:
                    return {}
                text, err = _capture(ctx, tool, works[tool.name], *argv)
                lines = text.splitlines() if text is not None else []
                stars = sum(1 for l in lines if "*" in l)
                unnamed = [b for b in range(branches) if text is None or "feature-%03d" % b not in text]
                fields = dict(log_lines=len(lines) if text is not None else None, log_commit_lines=stars,
                              log_bytes=len(text.encode()) if text is not None else None,
                              branches_not_named=len(unnamed))
                errors = []
                if text is None or stars != commits:
                    errors.append("%s lines with `*`, expected %d%s" % (
                        stars if text is not None else "no", commits, (": " + err[-200:]) if err else ""))
                if text is not None and unnamed:
                    errors.append("%d branch names not printed (feature-%03d first)" % (len(unnamed), unnamed[0]))
                if errors:
                    out.ok, out.error = False, "; ".join(errors)
                return fields
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "log_all", make, None, check,
                      data=dict(history_commits=commits, history_merges=merges, history_branches=branches + 1,
                                branch_commits=HABITS_BRANCH_COMMITS))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _bisect_stream(commits, bad):
    """fast-import chunks: `commits` linear commits "commit K", each writing counter.txt; state.txt says `ok`
    from commit 1 and `broken` from commit `bad` on."""
    for k in range(1, commits + 1):
        files = {"counter.txt": b"%d\n" % k}
        if k == 1:
            files["state.txt"] = b"ok\n"
        elif k == bad:
            files["state.txt"] = b"broken\n"
        yield _fi_commit(k, "refs/heads/main", k - 1, "commit %d" % k, [k - 1] if k > 1 else [], files)


FIRST_BAD = re.compile(r"\b([0-9a-f]{40}|[0-9a-f]{64})\b is the first bad commit")


def _habits_bisect(ctx, dmv, git):
    """Row: `sh -c 'TOOL bisect start HEAD FIRST && TOOL bisect run SCRIPT'` over a linear history of
    HABITS_BISECT_COMMITS commits whose commit number `bad` (random, seeded) breaks state.txt; SCRIPT (outside
    the repository) is `grep -qx ok state.txt`. Each try is checked (untimed): the commit named first bad has
    commit `bad`'s message; then `bisect reset` (untimed)."""
    rec, env = ctx.rec, ctx.rec.env
    commits = HABITS_BISECT_COMMITS
    bad = random.Random(HABITS_SEED).randrange(2, commits + 1)
    experiment, param = "habits-bisect", str(commits)
    pt = ctx.point(experiment, commits)
    gwork, dwork = os.path.join(pt.root, "git"), os.path.join(pt.root, "dmv")
    script = os.path.join(pt.root, "test-state.sh")
    try:
        try:
            with open(script, "w") as f:
                f.write("#!/bin/sh\nexec grep -qx ok state.txt\n")
            os.chmod(script, 0o755)
            os.makedirs(gwork)
            _git(env, gwork, "init", "-q", "--initial-branch=main")
            _fast_import(gwork, env, _bisect_stream(commits, bad))
            _git(env, gwork, "reset", "-q", "--hard")
        except (OSError, ValueError, subprocess.SubprocessError, _SourceError) as e:
            for tool in (dmv, git):
                rec.note(tool.name, experiment, param, "all", "fail", "making the history with git: %s" % e)
            return
        if not _habits_import(ctx, dmv, git, experiment, param, gwork, dwork, source_commits=commits,
                              bad_commit=bad):
            return
        works = {"dmv": dwork, "git": gwork}
        firsts = {}
        for tool in (dmv, git):
            text, err = _capture(ctx, tool, works[tool.name], "log", "--format=%H %s", "HEAD")
            ids = [l.split(" ", 1)[0] for l in (text or "").splitlines() if l.endswith(" commit 1")]
            if not ids:
                rec.note(tool.name, experiment, param, "all", "fail", "the first commit's id: %s" % (
                    err or "not in `log --format=%H %s`")[-300:])
                return
            firsts[tool.name] = ids[0]
        expected = "commit %d" % bad

        def prepare(tool, i):
            run_cmds([Cmd([tool.path, "bisect", "reset"], cwd=works[tool.name])], env, rec.timeout)
            return True

        def make(tool, i):
            line = "%s bisect start HEAD %s && %s bisect run %s" % (
                shlex.quote(tool.path), firsts[tool.name], shlex.quote(tool.path), shlex.quote(script))
            return [Cmd(["sh", "-c", line], cwd=works[tool.name], stdout="capture")]

        def check(tool, i):
            def after(out):
                if not out.ok:
                    return {}
                m = FIRST_BAD.search(out.captured.decode("utf-8", "replace"))
                found, err = (None, "no line `ID is the first bad commit` in its output") if not m else \
                    _capture(ctx, tool, works[tool.name], "log", "-1", "--format=%s", m.group(1))
                found = found.strip() if found is not None else None
                if found != expected:
                    out.ok, out.error = False, "bisect run found %r, expected %r%s" % (
                        found, expected, (": " + err[-200:]) if err else "")
                return dict(found_commit=found, verified=found == expected)
            return after
        _habits_pairs(ctx, dmv, git, experiment, param, "bisect_run", make, prepare, check,
                      data=dict(history_commits=commits, bad_commit=bad))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


# ---------------------------------------------------------------- locks (issue 71)

# Issue 71: lock and unlock latency over HTTP, dmv lock/unlock against a `dmv serve` on loopback, against
# git-lfs's `git lfs lock`/`unlock` on lfs-test-server (the git-lfs project's reference server of the LFS
# API, locks included) on loopback; and a push past LOCKS_HELD locks another user holds. Every row is
# LOCKS_TRIES paired tries, dmv first in odd tries and git-lfs first in even ones, as the habits rows.
LOCKS_TRIES = 5
LOCKS_COUNTS = (1, 100)          # paths locked (and then unlocked) by one command
LOCKS_HELD = 1_000               # locks the other user holds while the pushes run
LOCKS_LFS_REPO = "studio/hub"    # lfs-test-server's USER/REPO path of the locks
LOCKS_PASSWORDS = {"alice": "alice-pw-71", "bob": "bob-pw-71"}
LOCKS_TOKENS = {"alice": "tok-alice-71-0123456789abcdef", "bob": "tok-bob-71-0123456789abcdef"}


def _locks_path(i):
    return "assets/a%04d.bin" % i


class _LfsTool:
    """git with git-lfs, as a tool of the records (name `git-lfs`)."""
    name = "git-lfs"
    path = "git"


def locks(ctx, lfs_server, lfs_why):
    """Issue 71's benchmark. One repository of LOCKS_HELD + max(LOCKS_COUNTS) small files under assets/ and
    a notes.txt, cloned by alice and by bob (each their own token or password). `locks` (parameter: paths
    per command): LOCKS_TRIES paired tries of alice's `lock PATHS…` then `unlock PATHS…`, each checked
    (untimed) by listing the locks; then bob locks LOCKS_HELD other paths (untimed) and `locks-push`
    (parameter: locks the other user holds, 0 before bob's and LOCKS_HELD after): alice changes notes.txt,
    commits (untimed) and pushes (timed), checked (untimed) on the hub."""
    rec = ctx.rec
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    git = next((t for t in ctx.tools if t.name == "git"), None)
    lfs = _LfsTool()
    points = [("locks", str(n)) for n in LOCKS_COUNTS] + [("locks-push", "0"), ("locks-push", str(LOCKS_HELD))]
    if dmv is None:
        return
    if git is None or lfs_server is None:
        for experiment, p in points:
            rec.note(lfs.name, experiment, p, "all", "skipped", lfs_why or "git is missing")
    pt = ctx.point("locks", 0)
    env = dict(rec.env, GIT_TERMINAL_PROMPT="0")
    try:
        files = LOCKS_HELD + max(LOCKS_COUNTS)

        def seed_tree(work):
            for i in range(files):
                path = os.path.join(work, _locks_path(i))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(b"asset %d, version 1\n" % i)
            with open(os.path.join(work, "notes.txt"), "wb") as f:
                f.write(b"notes, version 0\n")

        with contextlib.ExitStack() as stack:
            # dmv: a bare hub served over HTTP with a write token for each user
            droot = os.path.join(pt.root, "dmv")
            hub, seed = os.path.join(droot, "hub"), os.path.join(droot, "seed")
            os.makedirs(seed)
            seed_tree(seed)
            config = os.path.join(droot, "serve.toml")
            with open(config, "w") as f:
                f.write("[repos]\nhub = \"hub\"\n[tokens]\n" + "".join(
                    "%s = { access = \"write\", user = \"%s\" }\n" % (json.dumps(tok), user)
                    for user, tok in LOCKS_TOKENS.items()))
            if not _run_untimed(ctx, [Cmd([dmv.path, "init", "--bare", hub], cwd=droot),
                                      Cmd([dmv.path, "init"], cwd=seed), Cmd([dmv.path, "add", "."], cwd=seed),
                                      Cmd([dmv.path, "commit", "-m", "seed"], cwd=seed),
                                      Cmd([dmv.path, "push", hub, "main"], cwd=seed)],
                                dmv, "locks", "0", "setup"):
                return
            srv = stack.enter_context(servers.DmvServe(dmv.path, droot, env, config))
            works = {}
            for user, tok in LOCKS_TOKENS.items():
                dest = os.path.join(droot, user)
                if not _run_untimed(ctx, [Cmd([dmv.path, "clone", "--token", tok, srv.url("hub"), dest],
                                              cwd=droot)], dmv, "locks", "0", "setup_clone_" + user):
                    return
                works[("dmv", user)] = dest
            hubs = {"dmv": hub}
            tools = [dmv]
            if git is not None and lfs_server is not None:
                # git-lfs: a bare git hub on disk (file path), lfs-test-server for the LFS API (locks)
                groot = os.path.join(pt.root, "git")
                ghub, gseed = os.path.join(groot, "hub.git"), os.path.join(groot, "seed")
                os.makedirs(gseed)
                seed_tree(gseed)
                server = stack.enter_context(servers.LfsTestServer(lfs_server, os.path.join(groot, "lfs"), env,
                                                                   LOCKS_PASSWORDS))
                try:
                    _git(env, groot, "init", "-q", "--bare", "--initial-branch=main", ghub)
                    _git(env, gseed, "init", "-q", "--initial-branch=main")
                    _git(env, gseed, "add", "-A")
                    _git(env, gseed, "commit", "-q", "-m", "seed")
                    _git(env, gseed, "push", "-q", ghub, "main")
                    for user, pw in LOCKS_PASSWORDS.items():
                        dest = os.path.join(groot, user)
                        _git(env, groot, "clone", "-q", ghub, dest)
                        _git(env, dest, "lfs", "install", "--local")
                        url = server.url(user, pw, LOCKS_LFS_REPO)
                        _git(env, dest, "config", "lfs.url", url)
                        _git(env, dest, "config", "lfs.%s.locksverify" % url, "true")
                        works[("git-lfs", user)] = dest
                    hubs["git-lfs"] = ghub
                    tools.append(lfs)
                except (OSError, _SourceError) as e:
                    for experiment, p in points:
                        rec.note(lfs.name, experiment, p, "all", "fail", "setting up git-lfs: %s" % e)
                rec.fact(lfs.name, "locks", "0", "versions", git_lfs=_first_out(["git", "lfs", "version"], env),
                         lfs_test_server=server.version, lfs_api=server.url("USER", "PASSWORD", LOCKS_LFS_REPO))
            rec.fact(dmv.name, "locks", "0", "versions", dmv_url=srv.url("hub"))

            def lock_argv(tool, verb, paths):
                return ([dmv.path, verb] if tool is dmv else ["git", "lfs", verb]) + list(paths)

            def held(tool, user):
                """Untimed: the paths the hub lists as locked by `user` (None when listing failed)."""
                argv = [dmv.path, "locks", "--json"] if tool is dmv else ["git", "lfs", "locks", "--json"]
                out = run_cmds([Cmd(argv, cwd=works[(tool.name, user)], env=env, stdout="capture")], env, rec.timeout)
                if not out.ok:
                    return None
                try:
                    listed = json.loads(out.captured.decode() or "[]")
                except ValueError:
                    return None
                got = set()
                for l in listed:
                    owner = l.get("owner")
                    who = owner.get("name") if isinstance(owner, dict) else (
                        l.get("user") or l.get("holder") or owner)
                    if who == user:
                        got.add(l.get("path"))
                return got

            def pairs(experiment, param, steps, prepare=None, data=None):
                """LOCKS_TRIES tries; in each, the tools in turn (dmv first in odd tries), each running
                `steps` [(prefix, make(tool, i), check(tool, i) -> after)] back to back."""
                stopped = {}
                for i in range(1, LOCKS_TRIES + 1):
                    order = tools if i % 2 else tools[::-1]
                    for place, tool in enumerate(order):
                        if tool.name in stopped:
                            for prefix, _, _ in steps:
                                rec.note(tool.name, experiment, param, "%s_%d" % (prefix, i), "skipped",
                                         stopped[tool.name])
                            continue
                        if prepare and not prepare(tool, i):
                            stopped[tool.name] = "the set-up of try %d failed" % i
                            continue
                        for prefix, make, check in steps:
                            fields = dict(data or {}, pair=i, pair_place="first" if place == 0 else "second")
                            after = check(tool, i)

                            def extra(out, after=after, fields=fields):
                                return dict(fields, **(after(out) if after else {}))
                            os.sync()
                            out = rec.step(tool, experiment, param, "%s_%d" % (prefix, i), make(tool, i), None,
                                           after=extra)
                            if not out.ok:
                                stopped[tool.name] = "try %d failed: %s" % (i, (out.error or "")[-300:])
                                break

            # lock and unlock of N paths by alice, nobody else holding any
            for n in LOCKS_COUNTS:
                paths = [_locks_path(k) for k in range(n)]

                def make_lock(tool, i, paths=paths):
                    return [Cmd(lock_argv(tool, "lock", paths), cwd=works[(tool.name, "alice")], env=env)]

                def make_unlock(tool, i, paths=paths):
                    return [Cmd(lock_argv(tool, "unlock", paths), cwd=works[(tool.name, "alice")], env=env)]

                def check(want, paths=paths):
                    def outer(tool, i):
                        def after(out):
                            if not out.ok:
                                return {}
                            got = held(tool, "alice")
                            ok = got is not None and (set(paths) <= got if want else not (set(paths) & got))
                            if not ok:
                                out.ok, out.error = False, "the hub lists %s of the %d paths as alice's after it" % (
                                    "?" if got is None else len(set(paths) & got), len(paths))
                            return dict(verified=ok)
                        return after
                    return outer
                pairs("locks", str(n), [("lock", make_lock, check(True)), ("unlock", make_unlock, check(False))],
                      data=dict(paths=n, locks_held_by_others=0))

            # pushes of a change to notes.txt, before and after bob holds LOCKS_HELD locks
            def prepare_push(held_now):
                def prepare(tool, i):
                    work = works[(tool.name, "alice")]
                    with open(os.path.join(work, "notes.txt"), "wb") as f:
                        f.write(b"notes, version %d with %d locks held\n" % (i, held_now))
                    msg = "notes %d (%d locks held)" % (i, held_now)
                    argv = [dmv.path, "commit", "-a", "-m", msg] if tool is dmv else ["git", "commit", "-qam", msg]
                    return _run_untimed(ctx, [Cmd(argv, cwd=work, env=env)], tool, "locks-push", str(held_now),
                                        "commit_%d" % i)
                return prepare

            def make_push(tool, i):
                work = works[(tool.name, "alice")]
                return [Cmd([dmv.path, "push"] if tool is dmv else ["git", "push", "-q", "origin", "main"],
                            cwd=work, env=env)]

            def check_push(held_now):
                def outer(tool, i):
                    msg = "notes %d (%d locks held)" % (i, held_now)

                    def after(out):
                        if not out.ok:
                            return {}
                        argv = [dmv.path, "log", "-1", "--format=%s", "main"] if tool is dmv else \
                            ["git", "log", "-1", "--format=%s", "main"]
                        r = run_cmds([Cmd(argv, cwd=hubs[tool.name], env=env, stdout="capture")], env, 60)
                        got = r.captured.decode("utf-8", "replace").strip() if r.ok else None
                        if got != msg:
                            out.ok, out.error = False, "the hub's main says %r, expected %r%s" % (
                                got, msg, (": " + r.error[-200:]) if r.error else "")
                        return dict(verified=got == msg)
                    return after
                return outer
            pairs("locks-push", "0", [("push", make_push, check_push(0))], prepare=prepare_push(0),
                  data=dict(locks_held_by_others=0))
            others = [_locks_path(k) for k in range(max(LOCKS_COUNTS), files)]
            for tool in list(tools):
                out = rec.step(tool, "locks-push", str(LOCKS_HELD), "setup_bob_locks",
                               [Cmd(lock_argv(tool, "lock", others), cwd=works[(tool.name, "bob")], env=env)], None,
                               after=lambda out: dict(paths=len(others)))
                got = held(tool, "bob") if out.ok else None
                if got is None or set(others) - got:
                    rec.note(tool.name, "locks-push", str(LOCKS_HELD), "all", "fail",
                             "bob's %d locks: %s" % (len(others), out.error or "the hub lists %s" % (
                                 "nothing" if got is None else "%d of them" % len(set(others) & got))))
                    tools.remove(tool)
            if tools:
                pairs("locks-push", str(LOCKS_HELD), [("push", make_push, check_push(LOCKS_HELD))],
                      prepare=prepare_push(LOCKS_HELD), data=dict(locks_held_by_others=LOCKS_HELD))
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _first_out(argv, env):
    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        return (r.stdout.strip().splitlines() or ["?"])[0]
    except (OSError, subprocess.SubprocessError) as e:
        return "unknown (%s)" % e


# ---------------------------------------------------------------- platforms (issue 49)

# the tables' order; native: the run's dmv
PLATFORMS_TARGETS = ("native", "x86_64-musl", "aarch64-qemu", "windows-wine")
PLATFORMS_TRIPLES = {"native": "x86_64-unknown-linux-gnu", "x86_64-musl": "x86_64-unknown-linux-musl",
                     "aarch64-qemu": "aarch64-unknown-linux-musl", "windows-wine": "x86_64-pc-windows-gnu"}
PLATFORMS_START_TRIES = 5      # `dmv --version` of each build: at least this many rounds, whatever --platforms-tries
# what the Windows build needs in the Wine prefix: Wine 8 lacks bcryptprimitives.dll (Rust's standard library
# draws its random numbers from it); scripts/test builds a stand-in into the prefix (scripts/wine)
WINE_DLL = os.path.join("drive_c", "windows", "system32", "bcryptprimitives.dll")
PLATFORMS_FILE = "big.bin"     # the one big file's name in each work tree (a hard link to the data)
PLATFORMS_MESSAGE = "x"
PLATFORMS_REF_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "platforms_ref.c")
PLATFORMS_REF_FLAGS = ["-O3", "-static"]
PLATFORMS_REF_COMMON = ["blake3.c", "blake3_dispatch.c", "blake3_portable.c"]
# (target, kind) -> (compiler, defines, the blake3 crate's C and assembly files besides PLATFORMS_REF_COMMON):
# "simd" is what the blake3 crate builds for the target (x86-64: SSE2, SSE4.1, AVX2 and AVX-512 kernels, the
# best one picked at run time; aarch64: NEON, always), "portable" its plain C code alone
PLATFORMS_REF_BUILDS = {
    ("native", "simd"): ("gcc", [], ["blake3_sse2_x86-64_unix.S", "blake3_sse41_x86-64_unix.S",
                                     "blake3_avx2_x86-64_unix.S", "blake3_avx512_x86-64_unix.S"]),
    ("native", "portable"): ("gcc", ["-DBLAKE3_NO_SSE2", "-DBLAKE3_NO_SSE41", "-DBLAKE3_NO_AVX2",
                                     "-DBLAKE3_NO_AVX512"], []),
    ("aarch64-qemu", "simd"): ("aarch64-linux-gnu-gcc", ["-DBLAKE3_USE_NEON=1"], ["blake3_neon.c"]),
    ("aarch64-qemu", "portable"): ("aarch64-linux-gnu-gcc", ["-DBLAKE3_USE_NEON=0"], []),
}


class _Build:
    """One build of dmv the platforms experiment runs (recorded as tool dmv, the build as `target`):
    `argv` runs it, under qemu-user (`runner`) for aarch64 and under wine for Windows, with `env` (WINEPREFIX,
    WINEDEBUG) on top of the suite's environment; `source` is the file it was copied from."""
    name = "dmv"

    def __init__(self, target, path, source, runner=None, env=None):
        self.target, self.path, self.source, self.runner, self.env = target, path, source, runner, env
        self.triple = PLATFORMS_TRIPLES[target]
        self.argv = ([runner] if runner else []) + [path]


def wine_prefix_problem(prefix):
    """Why the Windows build cannot run in the Wine prefix `prefix`, or None."""
    if not os.path.isfile(os.path.join(prefix, WINE_DLL)):
        return ("the Wine prefix %s lacks %s (scripts/test builds it: run it once, or set WINEPREFIX)" % (
            prefix, os.path.basename(WINE_DLL)))
    return None


def _wineserver(prefix):
    """(pid, user s, system s) of the wineserver serving the Wine prefix `prefix`, or None: it works in a folder
    named server-DEV-INODE of the prefix (under /tmp/.wine-UID, or elsewhere as Debian's Wine chooses)."""
    try:
        st = os.stat(prefix)
    except OSError:
        return None
    folder = "server-%x-%x" % (st.st_dev, st.st_ino)
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                if not f.read().startswith("wineserver"):
                    continue
            if os.path.basename(os.readlink("/proc/%s/cwd" % pid)) != folder:
                continue
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(pid), int(fields[11]) / tick, int(fields[12]) / tick
        except (OSError, IndexError, ValueError):
            continue
    return None


class _WineKeeper:
    """A Windows program (Wine's cmd.exe, waiting on its standard input) kept running in the prefix for the
    whole experiment, so that its wineserver and the prefix's services (started at the first Windows program:
    wineboot, services.exe, ...) stay up between the measured commands, which then all find Wine warm; without
    it the wineserver ends 3 s after the last program and the next command pays Wine's start again. Stopped by
    closing its input (its process group, which this started, killed if it does not end)."""

    def __init__(self, wine, env, cwd, timeout=120):
        import select
        self.proc, self.error = None, None
        try:
            self.proc = subprocess.Popen([wine, "cmd.exe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
            # the caret is cmd's escape: "keeper-ready" can only come from the echo having run
            self.proc.stdin.write(b"echo keeper^-ready\r\n")
            self.proc.stdin.flush()
            seen, deadline = b"", time.monotonic() + timeout
            while b"keeper-ready" not in seen:
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.1, deadline - time.monotonic()))
                block = os.read(self.proc.stdout.fileno(), 4096) if ready else b""
                if not block:
                    raise OSError("no answer from %s cmd.exe in %d s (%r)" % (wine, timeout, seen[-200:]))
                seen += block
        except OSError as e:
            self.error = str(e)
            self.stop()

    def stop(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
        p.stdout.close()


class _RefTool:
    """platforms_ref.c's builds (recorded as tool `ref`)."""
    name = "ref"


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            block = f.read(4 << 20)
            if not block:
                return h.hexdigest()
            h.update(block)


def _file_type(path):
    try:
        r = subprocess.run(["file", "-b", path], capture_output=True, text=True, timeout=60)
        return r.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _blake3_c_dir():
    """(the C sources of the blake3 crate dmv's Cargo.lock names, in cargo's registry, or None; its version)."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    version = None
    try:
        with open(os.path.join(repo, "Cargo.lock")) as f:
            m = re.search(r'name = "blake3"\nversion = "([^"]+)"', f.read())
            version = m.group(1) if m else None
    except OSError:
        pass
    home = os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo")
    found = sorted(glob.glob(os.path.join(home, "registry", "src", "*", "blake3-%s" % (version or "*"), "c",
                                          "blake3.c")))
    return (os.path.dirname(found[-1]) if found else None), version


def platforms(ctx, builds, runner, size, files, tries, dist_dir, wine=None):
    """Issue 49: `dmv init` + `dmv add .` + `dmv commit -m x` of one file of `size` random bytes
    (`platforms-bigfile`, parameter: bytes) and of `files` files of 1 KiB (`platforms-files`, parameter: files)
    by four builds of dmv in one run: the run's own (x86-64, glibc), the static x86-64 musl build, the static
    aarch64 musl build under qemu-user (`runner`, None when missing) and the Windows build (MinGW-w64) under Wine
    (`wine`: dict(path=the wine program, env={WINEPREFIX, WINEDEBUG}), or None; Wine kept warm by a _WineKeeper
    during the experiment, its first start timed once as `platforms-ref` step `first_start_windows-wine`).
    `builds`: {target: (private copy, source path) or (None, why it is missing)}. Each case `tries` rounds, every
    build once a round (the order rotated by one each round), each in a fresh work tree of hard links to the same
    data, after sync(2); checked untimed with the native build. Then the references (`platforms-ref`): the start
    of each build (`dmv --version`), and platforms_ref.c built for x86-64 and aarch64 and run natively and under
    qemu-user: BLAKE3 of `size` bytes (SIMD and portable) and a walk of the `files` files, which tell what the
    emulation itself costs; and the binaries' and packages' sizes (`platforms-binary`)."""
    rec = ctx.rec
    usable, missing, keeper = [], {}, None
    try:
        for target in PLATFORMS_TARGETS:
            path, source = builds.get(target, (None, "not given"))
            if path is None:
                missing[target] = source
                continue
            if target == "aarch64-qemu" and not runner:
                missing[target] = "no qemu-user (qemu-aarch64-static) to run it"
                continue
            if target == "windows-wine" and not wine:
                missing[target] = "no wine to run it"
                continue
            if target == "windows-wine":
                b = _Build(target, path, source, wine["path"], wine["env"])
                server_before = _wineserver(wine["env"]["WINEPREFIX"])
            else:
                b = _Build(target, path, source, runner if target == "aarch64-qemu" else None)
            out = run_cmds([Cmd(b.argv + ["--version"], cwd=ctx.workdir, env=b.env, stdout="capture")], rec.env,
                           120)
            if not out.ok:
                missing[target] = "%s --version: %s" % (" ".join(b.argv), out.error)
                continue
            b.version = out.captured.decode("utf-8", "replace").strip()
            if target == "windows-wine":
                # the first Windows program in the prefix starts the wineserver and the prefix's services
                # (unless a wineserver was already up: then this start is a warm one like the others)
                rec.record(b, "platforms-ref", "0", "first_start_windows-wine", out, None, target=b.target,
                           runner=b.runner, cold=server_before is None, wineprefix=wine["env"]["WINEPREFIX"],
                           wineserver_before=server_before[0] if server_before else None)
                keeper = _WineKeeper(wine["path"], dict(rec.env, **wine["env"]), ctx.workdir)
                server = _wineserver(wine["env"]["WINEPREFIX"])
                rec.fact("dmv", "platforms-ref", "0", "wine_keeper", "ok" if keeper.proc else "fail", keeper.error,
                         wineserver_pid=server[0] if server else None, wineprefix=wine["env"]["WINEPREFIX"])
            usable.append(b)
        for target, why in missing.items():
            print("platforms: %s build left out: %s" % (target, why[-300:]), flush=True)
        _platforms_run(ctx, usable, missing, builds, runner, size, files, tries, dist_dir)
    finally:
        if keeper:
            keeper.stop()


def _platforms_run(ctx, usable, missing, builds, runner, size, files, tries, dist_dir):
    """platforms() once the builds are known: `usable`, the _Builds that answered `--version`; `missing`,
    {target: why it is left out}."""
    rec = ctx.rec
    native = next((b for b in usable if b.target == "native"), None)
    _platforms_binaries(ctx, usable, missing, builds, dist_dir)
    refs, ref_note = _platforms_refs_build(ctx, os.path.join(ctx.workdir, "platforms-ref-bin"))
    _platforms_start(ctx, usable, tries)

    def skip_all(experiment, param):
        for target, why in missing.items():
            rec.note("dmv", experiment, param, "commit_%s_1" % target, "skipped", why)

    # the big file
    experiment, param = "platforms-bigfile", str(size)
    skip_all(experiment, param)
    if free_bytes(ctx.workdir) < 2 * size + GiB:
        for b in usable:
            rec.note(b.name, experiment, param, "commit_%s_1" % b.target, "skipped",
                     "not enough free disk: need %s" % human_bytes(2 * size + GiB))
    elif usable:
        pt = ctx.point(experiment, size)
        try:
            data = os.path.join(pt.root, "data.bin")
            print("%s %s: writing data" % (experiment, human_bytes(size)), flush=True)
            digest = datagen.write_random_file(data, size)
            os.utime(data, ns=(AGED, AGED))
            ids = {}

            def prepare(work):
                os.makedirs(work)
                os.link(data, os.path.join(work, PLATFORMS_FILE))

            def check(b, work, out):
                if native is None:
                    return dict(verified=None)
                fid, err = _capture_argv(ctx, [native.path, "rev-parse", "HEAD:" + PLATFORMS_FILE], work)
                fid = fid.strip() if fid else None
                r = run_cmds([Cmd([native.path, "cat", "HEAD:" + PLATFORMS_FILE], cwd=work, stdout="hash")],
                             rec.env, rec.timeout)
                first = ids.setdefault("file", fid)
                verified = fid is not None and r.ok and r.stdout_hash == digest and fid == first
                if not verified:
                    out.ok, out.error = False, "checked with the native build: %s" % (
                        "rev-parse failed: %s" % err if fid is None else
                        "cat failed: %s" % r.error if not r.ok else
                        "the file read back differs from the data" if r.stdout_hash != digest else
                        "file id %s, the first build's was %s" % (fid, first))
                return dict(file_id=fid, verified=verified)
            _platforms_case(ctx, usable, experiment, param, tries, pt.root, prepare, check,
                            dict(data_bytes=size, data_files=1))
            same = datagen.file_hash(data) == digest
            rec.fact("dmv", experiment, param, "data_check", "ok" if same else "fail",
                     None if same else "the data file changed during the run (a work tree's hard link written?)",
                     data_unchanged=same)
        finally:
            shutil.rmtree(pt.root, ignore_errors=True)
    _platforms_hash_refs(ctx, refs, ref_note, runner, size, tries)

    # the many files
    experiment, param = "platforms-files", str(files)
    skip_all(experiment, param)
    if usable:
        pt = ctx.point(experiment, files)
        try:
            src = os.path.join(pt.root, "src")
            print("%s %d: writing %s files" % (experiment, files, "{:,}".format(files)), flush=True)
            datagen.write_tree(src, files)
            datagen.touch_tree(src, files, AGED)
            before = datagen.tree_hash(src)
            ids, listed = {}, set()

            def prepare(work):
                r = subprocess.run(["cp", "-al", src, work], capture_output=True, text=True, timeout=3600)
                if r.returncode:
                    raise OSError("cp -al: %s" % r.stderr.strip()[-300:])

            def check(b, work, out):
                if native is None:
                    return dict(verified=None)
                tid, err = _capture_argv(ctx, [native.path, "rev-parse", "HEAD:"], work)
                tid = tid.strip() if tid else None
                first = ids.setdefault("tree", tid)
                fields = dict(tree_id=tid)
                why = None
                if tid is None:
                    why = "rev-parse HEAD: failed: %s" % err
                elif tid != first:
                    why = "root tree %s, the first build's was %s" % (tid, first)
                elif b.target not in listed:  # each build's first commit: every file listed
                    text, err = _capture_argv(ctx, [native.path, "ls-tree", "-r", "HEAD"], work)
                    n = sum(1 for l in (text or "").splitlines() if l.startswith("file "))
                    fields["files_listed"] = n
                    listed.add(b.target)
                    if n != files:
                        why = "ls-tree -r HEAD lists %d files, expected %d%s" % (n, files, (": " + err) if err else "")
                fields["verified"] = why is None
                if why:
                    out.ok, out.error = False, "checked with the native build: " + why
                return fields
            _platforms_case(ctx, usable, experiment, param, tries, pt.root, prepare, check,
                            dict(data_bytes=files * datagen.SMALL_FILE_SIZE, data_files=files))
            _platforms_walk_refs(ctx, refs, ref_note, runner, src, files, tries)
            same = datagen.tree_hash(src) == before
            rec.fact("dmv", experiment, param, "data_check", "ok" if same else "fail",
                     None if same else "the files changed during the run (a work tree's hard link written?)",
                     data_unchanged=same)
        finally:
            shutil.rmtree(pt.root, ignore_errors=True)
    shutil.rmtree(os.path.join(ctx.workdir, "platforms-ref-bin"), ignore_errors=True)


def _capture_argv(ctx, argv, cwd):
    """Untimed: (stdout of argv, None) or (None, why it failed)."""
    out = run_cmds([Cmd(argv, cwd=cwd, stdout="capture")], ctx.rec.env, ctx.rec.timeout)
    if not out.ok:
        return None, (out.error or "failed")[-300:]
    return out.captured.decode("utf-8", "replace"), None


def _cpu_seconds(path):
    """(user, system) CPU seconds summed over the GNU time lines `U S` in path (None, None without any)."""
    user = system = 0.0
    seen = False
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and all(re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
                    user, system, seen = user + float(parts[0]), system + float(parts[1]), True
    except OSError:
        pass
    return (round(user, 3), round(system, 3)) if seen else (None, None)


def _platforms_case(ctx, builds, experiment, param, tries, root, prepare, check, data):
    """`tries` rounds; in round i every build, in an order rotated by one each round, runs `dmv init`, `dmv add
    .` and `dmv commit -m x` (one timed step, `commit_TARGET_i`, each command under GNU time for its CPU
    seconds) in a fresh work tree `prepare(work)` fills untimed; `check(build, work, out)` (untimed) returns
    fields and may fail the step; the tree is deleted after it. A build's rounds stop at its first failure."""
    import measure
    rec = ctx.rec
    stopped = {}
    work = os.path.join(root, "work")
    for i in range(1, tries + 1):
        k = (i - 1) % len(builds)
        for place, b in enumerate(builds[k:] + builds[:k], 1):
            step = "commit_%s_%d" % (b.target, i)
            if b.target in stopped:
                rec.note(b.name, experiment, param, step, "skipped", stopped[b.target])
                continue
            shutil.rmtree(work, ignore_errors=True)
            try:
                prepare(work)
            except OSError as e:
                rec.note(b.name, experiment, param, step, "fail", "preparing the work tree: %s" % e)
                stopped[b.target] = "the work tree of try %d could not be prepared" % i
                continue
            cpu = os.path.join(root, "cpu.txt")
            if os.path.exists(cpu):
                os.remove(cpu)
            wrap = [measure.TIME_BIN, "-a", "-o", cpu, "-f", "%U %S", "--"] if measure.TIME_BIN else []
            cmds = [Cmd(wrap + b.argv + args, cwd=work, env=b.env)
                    for args in (["init"], ["add", "."], ["commit", "-m", PLATFORMS_MESSAGE])]
            prefix = (b.env or {}).get("WINEPREFIX")

            def after(out, b=b, i=i, place=place, prefix=prefix):
                user, system = _cpu_seconds(cpu)
                fields = dict(data, target=b.target, triple=b.triple, runner=b.runner, binary=b.source,
                              try_index=i, place=place, cpu_user_s=user, cpu_sys_s=system,
                              cpu_s=round(user + system, 3) if user is not None else None)
                if prefix:
                    # Wine: the wineserver (a process of its own, not the command's child) serves the program's
                    # file, handle and synchronisation calls; its CPU seconds during the step count as the step's
                    server = _wineserver(prefix)
                    if server and server_before and server[0] == server_before[0]:
                        ws = round(server[1] + server[2] - server_before[1] - server_before[2], 3)
                        fields.update(wineserver_cpu_s=ws, wineserver_pid=server[0])
                        if fields["cpu_s"] is not None:
                            fields.update(cpu_s=round(fields["cpu_s"] + ws, 3),
                                          cpu_s_without_wineserver=fields["cpu_s"])
                    else:
                        fields.update(wineserver_cpu_s=None, wineserver_note="the wineserver %s during the step" % (
                            "was not found" if not server or not server_before else "changed"))
                if out.ok:
                    fields.update(check(b, work, out))
                return fields
            os.sync()  # untimed: no try pays for writing back what the one before it (or the set-up) wrote
            server_before = _wineserver(prefix) if prefix else None
            out = rec.step(b, experiment, param, step, cmds, os.path.join(work, ".dmv"), after=after)
            if not out.ok:
                stopped[b.target] = "try %d failed: %s" % (i, (out.error or "")[-300:])
            shutil.rmtree(work, ignore_errors=True)


def _platforms_binaries(ctx, usable, missing, builds, dist_dir):
    """`platforms-binary` facts: each build's file (bytes, `file`'s description, stripped or not, sha256) and
    each .tar.gz, .deb and .zip in dist_dir (bytes, and which build the dmv or dmv.exe inside is, by sha256)."""
    rec = ctx.rec
    shas = {}
    for b in usable:
        st = os.stat(b.path)
        sha = _sha256(b.path)
        shas[sha] = b.target
        kind = _file_type(b.path)
        if b.target == "windows-wine":
            # `file` says "stripped to external PDB" of any PE whose header flag says so, debug sections or not
            stripped = _pe_stripped(b.path)
        else:
            stripped = None if kind is None else ("not stripped" not in kind and "stripped" in kind)
        rec.fact("dmv", "platforms-binary", "0", b.target, bytes=st.st_size, sha256=sha, file_type=kind,
                 stripped=stripped, binary=b.source, triple=b.triple, version=getattr(b, "version", None))
    for target, why in missing.items():
        rec.fact("dmv", "platforms-binary", "0", target, "skipped", why, triple=PLATFORMS_TRIPLES[target])
    if not dist_dir or not os.path.isdir(dist_dir):
        return
    import tarfile
    import zipfile
    for name in sorted(os.listdir(dist_dir)):
        path = os.path.join(dist_dir, name)
        if not name.endswith((".tar.gz", ".deb", ".zip")) or not os.path.isfile(path):
            continue
        inner, why = None, None
        try:
            if name.endswith(".zip"):
                with zipfile.ZipFile(path) as z:
                    member = next((m for m in z.infolist() if not m.is_dir() and
                                   os.path.basename(m.filename).lower() == "dmv.exe"), None)
                    if member is None:
                        why = "no file named dmv.exe inside"
                    else:
                        inner = dict(member=member.filename, bytes=member.file_size,
                                     sha256=hashlib.sha256(z.read(member)).hexdigest())
            elif name.endswith(".deb"):
                p = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], capture_output=True, timeout=600)
                if p.returncode:
                    raise OSError(p.stderr.decode("utf-8", "replace").strip()[-200:])
                tar = tarfile.open(fileobj=io.BytesIO(p.stdout))
            else:
                tar = tarfile.open(path, "r:gz")
            with tar:
                member = next((m for m in tar.getmembers() if m.isfile() and os.path.basename(m.name) == "dmv"),
                              None)
                if member is None:
                    why = "no file named dmv inside"
                else:
                    inner = dict(member=member.name, bytes=member.size,
                                 sha256=hashlib.sha256(tar.extractfile(member).read()).hexdigest())
        except (OSError, tarfile.TarError, zipfile.BadZipFile, subprocess.TimeoutExpired) as e:
            why = "could not read it: %s" % e
        rec.fact("dmv", "platforms-binary", "0", "dist/" + name, bytes=os.path.getsize(path),
                 mtime=int(os.path.getmtime(path)), inner_member=inner and inner["member"],
                 inner_bytes=inner and inner["bytes"], inner_sha256=inner and inner["sha256"],
                 inner_is=shas.get(inner["sha256"]) if inner else None, inner_error=why)


def _pe_stripped(path):
    """Whether the PE file at `path` has neither a COFF symbol table nor debug sections (.debug_*, which MinGW's
    linker names through the string table: /4, /19, ...), or None when it cannot be read as PE."""
    import struct
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        pe = struct.unpack_from("<I", head, 0x3c)[0]
        if head[pe:pe + 4] != b"PE\0\0":
            return None
        sections, symtab, symbols, optional = struct.unpack_from("<H4xIIH", head, pe + 6)
        table = pe + 24 + optional
        names = [head[table + 40 * i:table + 40 * i + 8].rstrip(b"\0") for i in range(sections)]
    except (OSError, struct.error):
        return None
    return symtab == 0 and symbols == 0 and not any(n.startswith((b"/", b".debug")) for n in names)


def _platforms_refs_build(ctx, dest):
    """Untimed: platforms_ref.c built for each (target, kind) of PLATFORMS_REF_BUILDS with the blake3 crate's C
    sources; returns ({(target, kind): path}, why some are missing or None), recorded as `platforms-ref` step
    `build`."""
    cdir, version = _blake3_c_dir()
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    built, why, compilers = {}, [], {}
    if cdir is None:
        why.append("the blake3 crate's C sources (blake3-%s) are not in cargo's registry" % (version or "?"))
    for (target, kind), (cc, defines, extra) in PLATFORMS_REF_BUILDS.items():
        if cdir is None:
            break
        if not shutil.which(cc):
            why.append("%s is not installed (%s %s)" % (cc, target, kind))
            continue
        if cc not in compilers:
            compilers[cc] = (_first_line_of([cc, "--version"]) or "?")
        path = os.path.join(dest, "ref-%s-%s" % (target, kind))
        argv = ([cc] + PLATFORMS_REF_FLAGS + defines + ["-I", cdir, "-o", path, PLATFORMS_REF_SRC] +
                [os.path.join(cdir, f) for f in PLATFORMS_REF_COMMON + extra])
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            ok, err = r.returncode == 0, r.stderr.strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as e:
            ok, err = False, str(e)
        if ok:
            built[(target, kind)] = path
        else:
            why.append("%s %s: %s" % (target, kind, err))
    note = "; ".join(why) or None
    ctx.rec.fact("ref", "platforms-ref", "0", "build", "ok" if built and not note else "fail" if note else "ok",
                 note, blake3_version=version, blake3_c=cdir, compilers=compilers, flags=PLATFORMS_REF_FLAGS,
                 builds={"%s-%s" % k: dict(compiler=v[0], defines=v[1], files=PLATFORMS_REF_COMMON + v[2])
                         for k, v in PLATFORMS_REF_BUILDS.items()},
                 built=sorted("%s-%s" % k for k in built))
    return built, note


def _first_line_of(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        lines = (r.stdout or r.stderr).strip().splitlines()
        return lines[0] if lines else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _platforms_start(ctx, builds, tries):
    """Reference: `dmv --version` of each build, `tries` rounds but at least PLATFORMS_START_TRIES (rotated),
    step `start_TARGET_i`."""
    for i in range(1, max(tries, PLATFORMS_START_TRIES) + 1):
        k = (i - 1) % len(builds) if builds else 0
        for place, b in enumerate(builds[k:] + builds[:k], 1):
            ctx.rec.step(b, "platforms-ref", "0", "start_%s_%d" % (b.target, i),
                         [Cmd(b.argv + ["--version"], cwd=ctx.workdir, env=b.env)], None,
                         after=lambda out, b=b, i=i, place=place: dict(target=b.target, runner=b.runner,
                                                                       try_index=i, place=place))


def _ref_output(text):
    """platforms_ref's output: {key: value} of its `key value` lines, the hash line as `hash`."""
    fields = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 1 and re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            fields["hash"] = parts[0]
        elif len(parts) == 2:
            fields[parts[0]] = parts[1]
    return fields


def _platforms_ref_runs(ctx, refs, ref_note, runner, kind, what, args, tries, data, expect_key):
    """`tries` rounds of platforms_ref ARGS built as `kind`, natively and under qemu-user (rotated), steps
    `WHAT_TARGET_i` of `platforms-ref`; its output's `expect_key` must be the same in every run."""
    rec, tool = ctx.rec, _RefTool()
    runs = []
    for target in ("native", "aarch64-qemu"):
        path = refs.get((target, kind))
        if path is None:
            rec.note("ref", "platforms-ref", "0", "%s_%s_1" % (what, target), "skipped",
                     ref_note or "not built")
        elif target == "aarch64-qemu" and not runner:
            rec.note("ref", "platforms-ref", "0", "%s_%s_1" % (what, target), "skipped", "no qemu-user to run it")
        else:
            runs.append((target, ([runner] if target == "aarch64-qemu" else []) + [path]))
    seen = {}
    for i in range(1, tries + 1):
        k = (i - 1) % len(runs) if runs else 0
        for place, (target, argv) in enumerate(runs[k:] + runs[:k], 1):
            def after(out, target=target, i=i, place=place):
                fields = dict(data, target=target, kind=kind, try_index=i, place=place,
                              runner=runner if target == "aarch64-qemu" else None)
                if not out.ok:
                    return fields
                got = _ref_output(out.captured.decode("utf-8", "replace"))
                try:
                    fields["work_s"] = float(got["work_s"])
                except (KeyError, ValueError):
                    out.ok, out.error = False, "no work_s in the output: %r" % out.captured[-200:]
                    return fields
                fields["output"] = {key: v for key, v in got.items() if key != "work_s"}
                if "data_files" in data and got.get("files") != str(data["data_files"]):
                    out.ok, out.error = False, "walked %s files, expected %d" % (got.get("files"), data["data_files"])
                    return fields
                first = seen.setdefault(expect_key, got.get(expect_key))
                if got.get(expect_key) is None or got.get(expect_key) != first:
                    out.ok, out.error = False, "%s %s, the first run's was %s" % (expect_key, got.get(expect_key),
                                                                                   first)
                return fields
            os.sync()
            rec.step(tool, "platforms-ref", "0", "%s_%s_%d" % (what, target, i),
                     [Cmd(argv + args, cwd=ctx.workdir, stdout="capture")], None, after=after)


def _platforms_hash_refs(ctx, refs, ref_note, runner, size, tries):
    mib = max(1, size >> 20)
    for kind in ("simd", "portable"):
        print("platforms-ref: BLAKE3 (%s) of %d MiB, natively and under qemu-user" % (kind, mib), flush=True)
        _platforms_ref_runs(ctx, refs, ref_note, runner, kind, "hash_" + kind, ["hash", str(mib)], tries,
                            dict(data_bytes=mib << 20), "hash")


def _platforms_walk_refs(ctx, refs, ref_note, runner, src, files, tries):
    print("platforms-ref: a walk of %s files, natively and under qemu-user" % "{:,}".format(files), flush=True)
    _platforms_ref_runs(ctx, refs, ref_note, runner, "portable", "walk", ["walk", src], tries,
                        dict(data_files=files), "sum")


# ---------------------------------------------------------------- oxen-workloads (issue 73)

OXEN_PHOTO_BYTES = 50 << 10  # Oxen's published workloads: photo-sized files of about 50 KiB (random bytes here)
OXEN_EDIT_EVERY = 100        # status after editing 1% of them: every 100th file rewritten
OXEN_TOKEN = "bench-oxen-token"
# why Oxen has no remote steps: its Python package (the only Oxen the registry ships) carries no server, and
# Oxen's remotes are oxen-server URLs only (set_remote refuses a path: "Remote invalid, must be fully qualified
# URL"; a file:// URL fails as a network error; no S3 remote type)
OXEN_NO_REMOTE = ("oxenai (PyPI) carries no oxen-server, and Oxen pushes to and clones from an oxen-server over "
                  "HTTP only: set_remote refuses a path (\"must be fully qualified URL\"), file:// fails, and it has "
                  "no bucket (S3) remote; oxen-server is not on PyPI")


OXEN_LFS_NO_BUCKET = ("git-lfs sends LFS objects to an LFS server (its Batch API over HTTP) or, with its standalone "
                      "file adapter, to a local repository: it has no bucket (S3) remote")


class OxenGitLfs:
    """git with git-lfs tracking every photo (`git lfs track 'f*'`: the files of write_tree's layout), the peer of
    the oxen-photos rows when `git lfs` is installed: init (`git init`, `git lfs install --local`, the track
    rule; untimed), commit (`git add -A` + `git commit`; git-lfs's clean filter stores each file in
    .git/lfs/objects), status (`git status --porcelain`); push and clone through a bare hub over file:// (git-lfs's
    standalone file adapter copies the LFS objects into the hub's lfs/objects)."""
    name = "git-lfs"

    def meta(self, p): return os.path.join(p.work, ".git")

    def _git(self, p, *args, **kw): return Cmd(["git"] + list(args), cwd=kw.pop("cwd", p.work), **kw)

    def init(self, p):
        return [self._git(p, "init", "-q"), self._git(p, "lfs", "install", "--local"),
                self._git(p, "lfs", "track", "f*")]

    def commit(self, p, first): return [self._git(p, "add", "-A"), self._git(p, "commit", "-q", "-m", "m")]
    def status(self, p): return [self._git(p, "status", "--porcelain")]


def _cp_al(src, dest):
    """A work tree of hard links to the data: no tool writes into its files (edits replace them)."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    subprocess.run(["cp", "-al", src, dest], check=True)


def _replace_every(root, count, every, size, seed):
    """Rewrites every `every`-th file of write_tree's layout with new random bytes, through a new file renamed
    over it (the old inode, hard-linked into other tools' trees, is left alone). Returns the files changed."""
    rng, n = random.Random(seed), 0
    for i in range(0, count, every):
        path = datagen.small_file_path(root, i)
        tmp = path + ".tmp-edit"
        with open(tmp, "wb") as f:
            f.write(rng.randbytes(size))
        os.replace(tmp, path)
        n += 1
    return n


def _dvc_cmd(dvc, cwd, *args, env=None, **kw):
    e = {"DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": os.path.join(cwd, ".dvc", "site")}
    e.update(env or {})
    return Cmd([dvc.path] + list(args), cwd=cwd, env=e, **kw)


def _dmv_cmd(dmv, cwd, *args, env=None, **kw):
    return Cmd([dmv.path] + list(args), cwd=cwd, env=env, **kw)


def oxen_workloads(ctx, oxen, dvc, oxen_why, dvc_why, minio_bin, minio_why, photos, small, tries, settle=0,
                   lfs_why=None):
    """Issue 73: Oxen's published workloads at this machine's scale (`oxen-photos`, parameter: files) and DVC's
    reported pain (`dvc-pain`, parameter: files); dmv against Oxen (oxenai) and DVC (--no-scm)."""
    dmv = next((t for t in ctx.tools if t.name == "dmv"), None)
    if not dmv:
        print("oxen-workloads: dmv is not among --tools", flush=True)
        return
    peers = [t for t in (dvc, oxen) if t] + ([] if lfs_why else [OxenGitLfs()])
    if lfs_why:
        ctx.rec.note("git-lfs", "oxen-photos", str(photos), "all", "fail", "not installed: %s" % lfs_why)
    for name, why in (("dvc", dvc_why), ("oxen", oxen_why)):
        if why:
            for exp, n in (("oxen-photos", photos), ("dvc-pain", small)):
                ctx.rec.note(name, exp, str(n), "all", "fail", "not installed: %s" % why)
    _oxen_photos(ctx, dmv, peers, minio_bin, minio_why, photos, tries, settle)
    if dvc:
        _dvc_pain(ctx, dmv, dvc, small, tries, settle)


# Peers whose own steps free inodes (ext4 without a journal: see measure.ext4_without_journal), so the next tool's
# try waits `settle` seconds after theirs; seen with strace on 2,000 photos.
OXEN_FREES_INODES = {
    "dvc": "DVC's add, push and pull create, delete and create again a temporary file per file",
    "git-lfs": "git's automatic gc (detached, after the commit) deletes the loose objects it packs, and git-lfs's "
               "clone deletes a temporary file per LFS object",
}


def _oxen_photos(ctx, dmv, peers, minio_bin, minio_why, n, tries, settle):
    """Oxen's workload: paired tries of commit, status, push to a hub and a bucket, and clone, per tool.

    On ext4 without a journal a new file skips every inode freed in the last minute or more one by one
    (measure.ext4_without_journal), so no timed step may follow a large delete closely: every try's trees (work
    tree, store, hub, bucket, clone) are kept until the point ends, and the suite waits `settle` seconds (untimed)
    before the first try and before a tool's try that follows one of a peer whose own steps free inodes
    (OXEN_FREES_INODES; a tool's own deletes stay in its own steps' times). Kept, one try of every tool holds about
    16 copies of the data (quick, 3 tries of 500 MB of photos: 25-30 GB): when the disk has less than one more
    try's room, the kept trees are deleted and the suite waits `settle` seconds before the next try."""
    exp, param = "oxen-photos", str(n)
    rec = ctx.rec
    # the data, and one tool's try at a time: work tree (links), store, hub, bucket, clone with its checkout
    need, free = 7 * n * OXEN_PHOTO_BYTES + GiB, free_bytes(ctx.workdir)
    if free < need:
        for tool in [dmv] + peers:
            rec.note(tool.name, exp, param, "all", "skipped", "%s free on the disk, %s needed" % (
                human_bytes(free), human_bytes(need)))
        return
    # room to keep before one more tool's try: its copies (blocks of 4 KiB) and a margin for the rest of the machine
    try_room = 6 * n * (OXEN_PHOTO_BYTES + 4096) + 4 * GiB
    pt = ctx.point(exp, n)
    data = os.path.join(pt.root, "data")
    try:
        t0 = time.monotonic()
        datagen.write_tree(data, n, seed=73, size=OXEN_PHOTO_BYTES)
        source = datagen.tree_hash(data)
        rec.fact(dmv.name, exp, param, "setup_data", data_files=source[1], data_bytes=source[2],
                 file_bytes=OXEN_PHOTO_BYTES, edit_every=OXEN_EDIT_EVERY, tries=tries,
                 write_s=round(time.monotonic() - t0, 3), settle_s=settle)
        for step in ("push_hub", "push_bucket", "clone"):
            if any(t.name == "oxen" for t in peers):
                rec.note("oxen", exp, param, step, "n/a", OXEN_NO_REMOTE)
        if any(t.name == "git-lfs" for t in peers):
            rec.note("git-lfs", exp, param, "push_bucket", "n/a", OXEN_LFS_NO_BUCKET)
        hubs = {"hub%d" % i: os.path.join(pt.root, "dmv-hub-%d" % i) for i in range(1, tries + 1)}
        for path in hubs.values():
            if not _run_untimed(ctx, [_dmv_cmd(dmv, pt.root, "init", "--bare", path)], dmv, exp, param, "setup_hub"):
                return
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        minio = None
        stack = contextlib.ExitStack()
        with stack:
            if minio_bin:
                try:
                    minio = stack.enter_context(servers.MinIO(minio_bin, pt.root, os.path.join(pt.root, "minio-data"),
                                                              rec.env))
                except servers.ServerError as e:
                    minio_why = str(e)
            srv = stack.enter_context(servers.DmvHttp(dmv.path, os.path.join(pt.root, "http"), rec.env, hubs,
                                                      OXEN_TOKEN))
            tools = [dmv] + peers
            kept, freed = [], None  # every try's trees, deleted when the point ends; the peer that freed inodes last
            for i in range(1, tries + 1):
                for tool in (tools if i % 2 else tools[::-1]):
                    if kept and free_bytes(ctx.workdir) < try_room:
                        print("  deleting the tries before (%s free)" % human_bytes(free_bytes(ctx.workdir)),
                              flush=True)
                        rec.fact(dmv.name, exp, param, "deleted_kept_%d_%s" % (i, tool.name),
                                 free_bytes=free_bytes(ctx.workdir), room_bytes=try_room)
                        _remove(kept, None)
                        kept.clear()
                        freed = "the tries before were deleted to make room"
                    if freed:
                        _settle(settle, "%s, and freed inodes slow down creating files (ext4 without a journal)"
                                % freed)
                    try:
                        _oxen_photo_try(ctx, tool, pt, exp, param, i, data, n, source, srv, minio, minio_why)
                    finally:
                        # kept until the point ends (or the disk runs short), bucket included
                        kept.extend([os.path.join(pt.root, "%s%s-%d" % (tool.name, part, i))
                                     for part in ("", "-clone", "-hub")] +
                                    [os.path.join(pt.root, "lfs-hub-%d" % i)] * (tool.name == "git-lfs") +
                                    [os.path.join(minio.data, "%s-%d" % (tool.name, i))] * (minio is not None))
                        freed = ("%s's try freed inodes (%s)" % (tool.name, OXEN_FREES_INODES[tool.name])
                                 if tool.name in OXEN_FREES_INODES else None)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)


def _oxen_photo_try(ctx, tool, pt, exp, param, i, data, n, source, srv, minio, minio_why):
    rec = ctx.rec
    root = os.path.join(pt.root, "%s-%d" % (tool.name, i))
    p = Point(root)
    _cp_al(data, p.work)
    meas = tool.meta(p)
    info = dict(data_files=source[1], data_bytes=source[2], try_=i)

    def step(name, cmds, measure_path=None, after=None):
        os.sync()  # no step pays for writing back what the one before it wrote
        return rec.step(tool, exp, param, "%s_%d" % (name, i), cmds, measure_path,
                        after=after or (lambda out: dict(info)))

    if not _run_untimed(ctx, tool.init(p), tool, exp, param, "init_%d" % i):  # untimed for every tool
        return
    out = step("commit", tool.commit(p, True), meas)
    if not out.ok:
        return
    changed = _replace_every(p.work, n, OXEN_EDIT_EVERY, OXEN_PHOTO_BYTES, 7300 + i)
    step("status", tool.status(p), None, after=lambda out: dict(info, changed=changed))
    if tool.name == "oxen":
        return
    # (c) push to a hub on loopback
    hub_dir = os.path.join(pt.root, "dvc-hub-%d" % i)
    if tool.name == "dmv":
        url = srv.url("hub%d" % i)
        denv = {"DMV_TOKEN": OXEN_TOKEN, "DMV_TRACE": "1"}
        push = [_dmv_cmd(tool, p.work, "push", url, env=denv)]
        hub_measure = os.path.join(pt.root, "dmv-hub-%d" % i)
    elif tool.name == "git-lfs":
        hub_dir = os.path.join(pt.root, "lfs-hub-%d" % i)
        if not _run_untimed(ctx, [Cmd(["git", "init", "-q", "--bare", hub_dir], cwd=pt.root)], tool, exp, param,
                            "setup_hub_%d" % i):
            return
        push = [tool._git(p, "push", "-q", "file://" + hub_dir, "HEAD:refs/heads/main")]
        hub_measure = hub_dir
    else:
        os.makedirs(hub_dir)
        if not _run_untimed(ctx, [_dvc_cmd(tool, root, "remote", "add", "hub", hub_dir)], tool, exp, param,
                            "setup_hub_%d" % i):
            return
        push = [_dvc_cmd(tool, root, "push", "-q", "-r", "hub")]
        hub_measure = hub_dir
    out = step("push_hub", push, hub_measure,
               after=lambda out: dict(info, server_peak_rss_kib=srv.server_rss_kib() if tool.name == "dmv" else None,
                                      **_trace(out)))
    hub_ok = out.ok
    # (d) push to a bucket (MinIO on loopback)
    if tool.name == "git-lfs":
        pass  # no bucket remote: noted once for the point
    elif minio is None:
        rec.note(tool.name, exp, param, "push_bucket_%d" % i, "fail", "no MinIO server: %s" % (
            minio_why or "minio not found"))
    else:
        b = Bucket(minio.endpoint, "%s-%d" % (tool.name, i), tool.name, servers.MINIO_USER, servers.MINIO_PASSWORD,
                   servers.MINIO_REGION)
        try:
            minio.make_bucket(b.bucket)
            minio.restart()  # a fresh server process: its VmHWM is this step's
        except servers.ServerError as e:
            rec.note(tool.name, exp, param, "push_bucket_%d" % i, "fail", str(e))
            b = None
        if b is not None:
            if tool.name == "dmv":
                setup = [_dmv_cmd(tool, p.work, "remote", "add", "bucket", b.url, "--endpoint", b.endpoint, env=b.env)]
                push = [_dmv_cmd(tool, p.work, "push", "bucket", env=dict(b.env, DMV_TRACE="1"))]
            else:
                setup = [_dvc_cmd(tool, root, "remote", "add", "bucket", "s3://%s/%s" % (b.bucket, b.prefix)),
                         _dvc_cmd(tool, root, "remote", "modify", "bucket", "endpointurl", b.endpoint)]
                push = [_dvc_cmd(tool, root, "push", "-q", "-r", "bucket", env=b.env)]
            if _run_untimed(ctx, setup, tool, exp, param, "setup_bucket_%d" % i):
                def after_bucket(out, b=b):
                    objects, apparent, disk, files = minio.usage(b.bucket)
                    return dict(info, server_peak_rss_kib=minio.server_rss_kib(), bucket_objects=objects,
                                bucket_bytes_apparent=apparent, bucket_bytes_disk=disk, **_trace(out))
                step("push_bucket", push, None, after=after_bucket)
    # (e) clone from the hub
    if not hub_ok:
        return
    dest = os.path.join(pt.root, "%s-clone-%d" % (tool.name, i))
    if tool.name == "dmv":
        cmds = [_dmv_cmd(tool, pt.root, "clone", srv.url("hub%d" % i), dest,
                         env={"DMV_TOKEN": OXEN_TOKEN, "DMV_TRACE": "1"})]
        verify_dir, meas = dest, os.path.join(dest, ".dmv")
    elif tool.name == "git-lfs":
        # git-lfs's filters in the new repository's config (what `git lfs install` puts in the global one)
        cmds = [Cmd(["git", "clone", "-q", "-b", "main", "-c", "filter.lfs.process=git-lfs filter-process",
                     "-c", "filter.lfs.smudge=git-lfs smudge -- %f", "-c", "filter.lfs.clean=git-lfs clean -- %f",
                     "-c", "filter.lfs.required=true", "file://" + hub_dir, dest], cwd=pt.root)]
        verify_dir, meas = dest, os.path.join(dest, ".git")
    else:
        # a fresh copy of DVC's metadata (its config, with the hub remote, and work.dvc), then dvc pull
        os.makedirs(os.path.join(dest, ".dvc"))
        shutil.copy2(os.path.join(root, ".dvc", "config"), os.path.join(dest, ".dvc", "config"))
        shutil.copy2(os.path.join(root, "work.dvc"), os.path.join(dest, "work.dvc"))
        cmds = [_dvc_cmd(tool, dest, "pull", "-q", "-r", "hub")]
        verify_dir, meas = os.path.join(dest, "work"), os.path.join(dest, ".dvc")
    check = _verify_clone(verify_dir, source, info)

    def after_clone(out):
        rss = srv.server_rss_kib() if tool.name == "dmv" else None
        attrs = os.path.join(dest, ".gitattributes")
        if tool.name == "git-lfs" and os.path.exists(attrs):  # the track rule is no photo: out of the comparison
            os.replace(attrs, os.path.join(dest, ".git", "bench-gitattributes"))
        extra = check(out)
        extra.update(server_peak_rss_kib=rss, **_trace(out))
        return extra
    step("clone", cmds, meas, after=after_clone)


def _dvc_pain(ctx, dmv, dvc, n, tries, settle):
    """DVC's reported pain: `dvc status` and a no-op `dvc push` in a tree of `n` small files, against `dmv
    status` and a no-op `dmv push` of the same tree (both remotes a directory on the same disk)."""
    exp, param = "dvc-pain", str(n)
    rec = ctx.rec
    pt = ctx.point(exp, n)
    data = os.path.join(pt.root, "data")
    try:
        _settle(settle, "files deleted before this point slow down creating files (ext4 without a journal)")
        t0 = time.monotonic()
        datagen.write_tree(data, n, seed=74)
        rec.fact("dmv", exp, param, "setup_data", data_files=n, data_bytes=n * datagen.SMALL_FILE_SIZE,
                 write_s=round(time.monotonic() - t0, 3), tries=tries)
        pts = {}
        # both trees linked before either tool reads them: a new hard link changes the inode's ctime, and a
        # tree linked after dmv's commit made dmv's first status re-read every file (1.1-1.2 s against
        # 0.13-0.24 s for the next ones at 100,000 files)
        for tool in (dmv, dvc):
            _cp_al(data, Point(os.path.join(pt.root, tool.name)).work)
        for tool in (dmv, dvc):
            p = Point(os.path.join(pt.root, tool.name))
            hub = os.path.join(pt.root, "%s-hub" % tool.name)
            if tool is dmv:
                setup = [("setup_commit", tool.init(p) + tool.commit(p, True), tool.meta(p)),
                         ("setup_hub", [_dmv_cmd(dmv, pt.root, "init", "--bare", hub)], None),
                         ("setup_push", [_dmv_cmd(dmv, p.work, "push", hub)], hub)]
            else:
                os.makedirs(hub)
                setup = [("setup_commit", tool.init(p) + tool.commit(p, True), tool.meta(p)),
                         ("setup_hub", [_dvc_cmd(dvc, p.root, "remote", "add", "-d", "hub", hub)], None),
                         ("setup_push", [_dvc_cmd(dvc, p.root, "push", "-q")], hub)]
            ok = True
            for name, cmds, meas in setup:
                os.sync()
                out = rec.step(tool, exp, param, name, cmds, meas)
                if not out.ok:
                    ok = False
                    break
            if ok:
                pts[tool.name] = p
        tools = [t for t in (dmv, dvc) if t.name in pts]
        for i in range(1, tries + 1):
            for tool in (tools if i % 2 else tools[::-1]):
                p = pts[tool.name]
                os.sync()
                rec.step(tool, exp, param, "status_%d" % i, tool.status(p), None)
                os.sync()
                push = ([_dmv_cmd(dmv, p.work, "push", os.path.join(pt.root, "dmv-hub"))] if tool is dmv else
                        [_dvc_cmd(dvc, p.root, "push", "-q")])
                rec.step(tool, exp, param, "push_noop_%d" % i, push, None)
    finally:
        shutil.rmtree(pt.root, ignore_errors=True)
