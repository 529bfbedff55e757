"""How each tool is driven. One small class per tool.

Every method returns the list of commands (measure.Cmd) of one step, or None
when the tool has no such operation (recorded as "n/a"). A point directory
`pt.root` holds the work tree `pt.work`; each tool keeps its repository where
`meta(pt)` says, so the work tree can be shared by the tools one after the
other (the suite removes `meta(pt)` between tools).
"""
import os
import shlex
import shutil
import subprocess

from measure import Cmd


class Remote:
    """The far side of a sync step: `kind` "ssh" or "http", the URL the client
    uses, extra environment for the client, the repository's path on the
    server and, over ssh, the argv that logs in (for the tar floor)."""

    def __init__(self, kind, url, env, path, login=None):
        self.kind, self.url, self.env, self.path, self.login = kind, url, env, path, login


class Bucket:
    """The far side of an s3 step: a bucket (and a prefix in it) on an S3
    endpoint, and the client environment that holds the credentials."""

    def __init__(self, endpoint, bucket, prefix, user, password, region):
        self.endpoint, self.bucket, self.prefix = endpoint, bucket, prefix
        self.env = {"AWS_ACCESS_KEY_ID": user, "AWS_SECRET_ACCESS_KEY": password, "AWS_REGION": region}

    @property
    def url(self):
        return "s3://%s/%s" % (self.bucket, self.prefix)


class Point:
    """One measurement point: a directory with a work tree in it."""

    def __init__(self, root):
        self.root = root
        self.work = os.path.join(root, "work")
        self.commits = 0


def _first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    text = (r.stdout or r.stderr).strip().splitlines()
    if r.returncode != 0:
        return None, (text[-1] if text else "exit %d" % r.returncode)
    return (text[0] if text else "?"), None


class Tool:
    name = "?"
    binary = "?"
    version_args = ["--version"]
    has_refs = False

    def __init__(self, path=None):
        self.path = path or shutil.which(self.binary)

    def probe(self):
        """(version string, None) when usable, else (None, reason)."""
        if not self.path or not os.path.exists(self.path):
            return None, "%s not found" % (self.path or self.binary)
        return _first_line([self.path] + self.version_args)

    def cmd(self, pt, *args, **kw):
        return Cmd([self.path or self.binary] + list(args), cwd=kw.pop("cwd", pt.work), **kw)

    # The operations; None means "the tool has no such thing".
    def meta(self, pt): raise NotImplementedError
    def init(self, pt): raise NotImplementedError
    def commit(self, pt, first): raise NotImplementedError
    def fsck(self, pt): return None
    def read(self, pt, rel): return None      # streams the committed file to stdout
    def status(self, pt): return None
    def diff_stat(self, pt): return None
    def gc(self, pt): return None

    # history (experiment `history`): many commits of one small change each
    store = None                                     # the object store, relative to meta(pt)
    def commit_all(self, pt, msg): return None       # commit every modified tracked file
    def commit_all_durable(self, pt, msg): return None  # the same, syncing what a dmv commit syncs
    def log(self, pt, path=None, last=False): return None  # history (of `path`; only the newest commit)

    # sync (experiment `sync`): which transports the tool is measured over
    sync = ()
    def init_remote(self, pt, path): return None   # an empty repository to push into
    def push(self, pt, remote): return None          # the current branch to `remote`
    def clone(self, pt, remote, dest): return None   # `remote` into the new directory `dest`
    def clone_meta(self, dest): return dest          # what the repository size is measured on

    # s3 (experiment `s3`): an object-storage bucket on MinIO
    s3 = False
    s3_setup_step = None                             # name of the (small) step before the push
    def s3_setup(self, pt, bucket): return None      # e.g. add the remote, init the repository
    def s3_push(self, pt, bucket): return None        # the committed work tree (or the work tree) to the bucket
    def s3_clone(self, pt, bucket, dest): return None  # the bucket into the new directory `dest`

    # store (experiment `store`): the work tree stored once, then the store measured
    in_store = False                                 # measured in the store experiment
    def store_repo(self, pt): return self.meta(pt)   # the whole repository
    def store_objects(self, pt):                     # its object store (the whole repository when it has none apart)
        return os.path.join(self.meta(pt), self.store) if self.store else self.store_repo(pt)
    def store_init(self, pt): return self.init(pt)
    def store_save(self, pt): return self.commit(pt, True)  # everything in the work tree, stored once
    def store_after(self, pt): return ()             # [(step, commands)] run after the save, e.g. git gc
    def store_cache(self, pt): return None           # a cache the tool keeps outside the repository, if any


class Git(Tool):
    name = binary = "git"
    has_refs = True

    def meta(self, pt): return os.path.join(pt.work, ".git")
    def init(self, pt): return [self.cmd(pt, "init", "-q")]

    def commit(self, pt, first):
        return [self.cmd(pt, "add", "-A"), self.cmd(pt, "commit", "-q", "-m", "m")]

    def fsck(self, pt): return [self.cmd(pt, "fsck", "--no-progress")]
    def read(self, pt, rel): return [self.cmd(pt, "cat-file", "blob", "HEAD:" + rel, stdout="hash")]
    def status(self, pt): return [self.cmd(pt, "status", "--porcelain")]
    def diff_stat(self, pt): return [self.cmd(pt, "diff", "--stat")]
    def gc(self, pt): return [self.cmd(pt, "gc", "-q")]

    # history
    store = "objects"
    def commit_all(self, pt, msg): return [self.cmd(pt, "commit", "-qam", msg)]

    # git's defaults sync nothing in a commit; these sync its objects, refs and index to disk
    def commit_all_durable(self, pt, msg):
        return [self.cmd(pt, "-c", "core.fsync=committed,index", "-c", "core.fsyncMethod=fsync", "commit", "-qam", msg)]

    def log(self, pt, path=None, last=False):
        return [self.cmd(pt, "log", "--oneline", *(["-n", "1"] if last else []), *(["--", path] if path else []))]

    # refs
    def head_id(self, pt): return [self.cmd(pt, "rev-parse", "HEAD", stdout="capture")]
    def update_refs(self, pt, text): return [self.cmd(pt, "update-ref", "--stdin", stdin=text)]
    def show_refs(self, pt): return [self.cmd(pt, "show-ref", stdout="hash")]
    def show_ref(self, pt, ref): return [self.cmd(pt, "show-ref", "--verify", ref, stdout="capture")]
    def pack_refs(self, pt): return [self.cmd(pt, "pack-refs", "--all")]

    # sync: git over ssh (HTTP would need a web server running git-http-backend)
    sync = ("ssh",)
    def init_remote(self, pt, path): return [self.cmd(pt, "init", "-q", "--bare", path, cwd=pt.root)]
    def push(self, pt, remote): return [self.cmd(pt, "push", "-q", remote.url, "HEAD:refs/heads/main", env=remote.env)]
    def clone(self, pt, remote, dest): return [self.cmd(pt, "clone", "-q", remote.url, dest, cwd=pt.root, env=remote.env)]
    def clone_meta(self, dest): return os.path.join(dest, ".git")

    # store: the commit runs without its automatic gc (`gc --auto` would pack the loose objects inside the
    # commit), so the loose objects are measured after it, and the packed ones after an explicit `git gc`
    in_store = True

    def store_save(self, pt):
        return [self.cmd(pt, "add", "-A"), self.cmd(pt, "-c", "gc.auto=0", "commit", "-q", "-m", "m")]

    def store_after(self, pt): return [("gc", self.gc(pt))]


class Hg(Tool):
    name = binary = "hg"

    def meta(self, pt): return os.path.join(pt.work, ".hg")
    def init(self, pt): return [self.cmd(pt, "init", "-q")]
    # -A adds new files, like `git add -A`; one process for both commits.
    def commit(self, pt, first): return [self.cmd(pt, "commit", "-A", "-q", "-m", "m", "-u", "bench")]
    def fsck(self, pt): return [self.cmd(pt, "verify", "-q")]
    def read(self, pt, rel): return [self.cmd(pt, "cat", "-r", ".", rel, stdout="hash")]
    def status(self, pt): return [self.cmd(pt, "status")]
    def diff_stat(self, pt): return [self.cmd(pt, "diff", "--stat")]

    # history: hg commits every modified tracked file by default
    store = "store"
    def commit_all(self, pt, msg): return [self.cmd(pt, "commit", "-q", "-m", msg)]

    def log(self, pt, path=None, last=False):
        return [self.cmd(pt, "log", "-q", *(["-l", "1"] if last else []), *(["--", path] if path else []))]


class Bup(Tool):
    name = binary = "bup"

    def meta(self, pt): return os.path.join(pt.root, "bup")
    def cmd(self, pt, *args, **kw):
        return super().cmd(pt, *args, env={"BUP_DIR": self.meta(pt)}, **kw)

    def init(self, pt): return [self.cmd(pt, "init")]

    def commit(self, pt, first):
        return [self.cmd(pt, "index", pt.work),
                self.cmd(pt, "save", "-q", "-n", "main", "--strip", pt.work)]

    def fsck(self, pt): return [self.cmd(pt, "fsck")]
    def read(self, pt, rel): return [self.cmd(pt, "cat-file", "/main/latest/" + rel, stdout="hash")]
    # bup has no status; `bup index` (stat every file, update the index) is the
    # closest thing and is what its next save starts with.
    def status(self, pt): return [self.cmd(pt, "index", pt.work)]
    def gc(self, pt): return [self.cmd(pt, "gc", "--unsafe")]

    # store: the bup directory is a git repository (history and log do not use `store`)
    in_store = True
    store = "objects"


class Cp(Tool):
    """The floor: a "commit" is a full copy of the work tree (each commit its
    own copy, so the "repository" holds every version, like the others)."""
    name = binary = "cp"

    def meta(self, pt): return os.path.join(pt.root, "cp")
    def init(self, pt): return [Cmd(["mkdir", "-p", self.meta(pt)], cwd=pt.root)]

    def commit(self, pt, first):
        pt.commits += 1
        return [self.cmd(pt, "-r", pt.work, os.path.join(self.meta(pt), str(pt.commits)), cwd=pt.root)]

    def read(self, pt, rel):
        return [Cmd(["cat", os.path.join(self.meta(pt), str(pt.commits), rel)], cwd=pt.root, stdout="hash")]

    # sync: the floor of the ssh transport, the work tree as a tar stream through
    # ssh; and the floor of the disk, a local copy that writes the data once
    sync = ("ssh",)

    def copy_local(self, pt, dest):
        return [Cmd(["cp", "-r", pt.work, dest], cwd=pt.root)]

    def push(self, pt, remote):
        far = "mkdir -p %s && tar -xf - -C %s" % (shlex.quote(remote.path), shlex.quote(remote.path))
        return [Cmd(["bash", "-o", "pipefail", "-c", "tar -C %s -cf - . | %s" % (
            shlex.quote(pt.work), shlex.join(remote.login + [far]))], cwd=pt.root)]

    def clone(self, pt, remote, dest):
        far = "tar -C %s -cf - ." % shlex.quote(remote.path)
        return [Cmd(["bash", "-o", "pipefail", "-c", "mkdir %s && %s | tar -xf - -C %s" % (
            shlex.quote(dest), shlex.join(remote.login + [far]), shlex.quote(dest))], cwd=pt.root)]


class Dmv(Tool):
    name = binary = "dmv"
    has_refs = True

    def meta(self, pt): return os.path.join(pt.work, ".dmv")
    def init(self, pt): return [self.cmd(pt, "init")]

    def commit(self, pt, first):
        if first:
            return [self.cmd(pt, "add", "."), self.cmd(pt, "commit", "-m", "m")]
        return [self.cmd(pt, "commit", "-a", "-m", "m")]

    def fsck(self, pt): return [self.cmd(pt, "fsck")]
    def read(self, pt, rel): return [self.cmd(pt, "cat", "HEAD:" + rel, stdout="hash")]
    def status(self, pt): return [self.cmd(pt, "status")]
    def diff_stat(self, pt): return [self.cmd(pt, "diff", "--stat")]
    def gc(self, pt): return [self.cmd(pt, "gc")]

    # history (log of a path only if this dmv has it; see experiments.history)
    store = "objects"
    def commit_all(self, pt, msg): return [self.cmd(pt, "commit", "-a", "-m", msg)]
    def commit_all_durable(self, pt, msg): return self.commit_all(pt, msg)  # a dmv commit always syncs

    def log(self, pt, path=None, last=False):
        return [self.cmd(pt, "log", "--oneline", *(["-n", "1"] if last else []), *(["--", path] if path else []))]

    # refs (only if this dmv has them; see experiments.refs)
    def head_id(self, pt): return [self.cmd(pt, "rev-parse", "HEAD", stdout="capture")]
    def list_for_id(self, pt): return [self.cmd(pt, "show-ref", stdout="capture")]
    def update_refs(self, pt, text): return [self.cmd(pt, "update-ref", "--stdin", stdin=text)]
    def show_refs(self, pt): return [self.cmd(pt, "show-ref", stdout="hash")]
    def show_ref(self, pt, ref): return [self.cmd(pt, "show-ref", ref, stdout="capture")]
    def pack_refs(self, pt): return None

    # sync
    sync = ("ssh", "http")
    def init_remote(self, pt, path): return [self.cmd(pt, "init", "--bare", path, cwd=pt.root)]
    def push(self, pt, remote): return [self.cmd(pt, "push", remote.url, env=remote.env)]
    def clone(self, pt, remote, dest): return [self.cmd(pt, "clone", remote.url, dest, cwd=pt.root, env=remote.env)]
    def clone_meta(self, dest): return os.path.join(dest, ".dmv")

    # s3: DMV_TRACE=1 prints `trace: bytes-sent N bytes-received M` on stderr
    s3 = True
    s3_setup_step = "remote_add"

    def s3_setup(self, pt, b):
        return [self.cmd(pt, "remote", "add", "origin", b.url, "--endpoint", b.endpoint, env=b.env)]

    def s3_push(self, pt, b):
        return [self.cmd(pt, "push", "origin", env=dict(b.env, DMV_TRACE="1"))]

    def s3_clone(self, pt, b, dest):
        return [self.cmd(pt, "clone", b.url, dest, "--endpoint", b.endpoint, cwd=pt.root,
                         env=dict(b.env, DMV_TRACE="1"))]

    in_store = True  # store: init, add ., commit; .dmv/objects and .dmv measured


ALL = {t.name: t for t in (Dmv, Git, Hg, Bup, Cp)}
ORDER = list(ALL)  # dmv first: every table compares the others against it


# ---------------------------------------------------------------- peers of the s3 experiment only

class Restic(Tool):
    """restic backup to an s3: repository; restore of the latest snapshot as
    its clone. Each step gets a fresh, empty cache directory (RESTIC_CACHE_DIR),
    as on a machine that has never seen the repository: restore must not read
    the index the backup left in the local cache."""
    name = binary = "restic"
    version_args = ["version"]
    apt_package = "restic"
    s3 = True
    s3_setup_step = "init_remote"
    PASSWORD = "bench-restic-password"

    def _env(self, pt, b, step):
        return dict(b.env, RESTIC_REPOSITORY="s3:%s/%s/%s" % (b.endpoint, b.bucket, b.prefix),
                    RESTIC_PASSWORD=self.PASSWORD,
                    RESTIC_CACHE_DIR=os.path.join(pt.root, "restic-cache-%s" % step))

    def s3_setup(self, pt, b): return [self.cmd(pt, "init", env=self._env(pt, b, "init"))]
    # `backup .` from the work tree: the snapshot's root is the work tree itself
    def s3_push(self, pt, b): return [self.cmd(pt, "backup", ".", env=self._env(pt, b, "push"))]

    def s3_clone(self, pt, b, dest):
        return [self.cmd(pt, "restore", "latest", "--target", dest, cwd=pt.root, env=self._env(pt, b, "clone"))]

    # store (experiment `store`): a local repository directory next to the work tree, each step with a
    # fresh, empty cache directory outside it (the backup fills its cache; it is not counted as the store)
    in_store = True

    def store_repo(self, pt): return os.path.join(pt.root, "restic-repo")

    def _local_env(self, pt, step):
        return dict(RESTIC_PASSWORD=self.PASSWORD, RESTIC_CACHE_DIR=os.path.join(pt.root, "restic-cache-%s" % step))

    def store_init(self, pt):
        return [self.cmd(pt, "init", "--repo", self.store_repo(pt), cwd=pt.root, env=self._local_env(pt, "init"))]

    # `backup .` from the work tree: the snapshot's paths are relative to it
    def store_save(self, pt):
        return [self.cmd(pt, "backup", "--repo", self.store_repo(pt), ".", env=self._local_env(pt, "store"))]

    def store_cache(self, pt): return os.path.join(pt.root, "restic-cache-store")


class Rclone(Tool):
    """The raw upload: every file of the work tree as one object, with rclone
    (16 files at a time), and the download of all of them. Configured entirely
    through RCLONE_CONFIG_MINIO_* variables (no config file)."""
    name = binary = "rclone"
    version_args = ["version"]
    apt_package = "rclone"
    s3 = True
    PARALLEL = ["--transfers", "16", "--checkers", "16"]

    def _env(self, b):
        return {"RCLONE_CONFIG_MINIO_TYPE": "s3", "RCLONE_CONFIG_MINIO_PROVIDER": "Minio",
                "RCLONE_CONFIG_MINIO_ENDPOINT": b.endpoint,
                "RCLONE_CONFIG_MINIO_ACCESS_KEY_ID": b.env["AWS_ACCESS_KEY_ID"],
                "RCLONE_CONFIG_MINIO_SECRET_ACCESS_KEY": b.env["AWS_SECRET_ACCESS_KEY"],
                "RCLONE_CONFIG_MINIO_REGION": b.env["AWS_REGION"]}

    # --s3-disable-checksum: do not read a multipart file once more before the
    # upload only to store its MD5 in the object's metadata
    def s3_push(self, pt, b):
        return [self.cmd(pt, "copy", pt.work, "minio:%s/%s" % (b.bucket, b.prefix), *self.PARALLEL,
                         "--s3-disable-checksum", cwd=pt.root, env=self._env(b))]

    def s3_clone(self, pt, b, dest):
        return [self.cmd(pt, "copy", "minio:%s/%s" % (b.bucket, b.prefix), dest, *self.PARALLEL,
                         cwd=pt.root, env=self._env(b))]


S3_PEERS = {t.name: t for t in (Restic, Rclone)}


# ---------------------------------------------------------------- peers of the store experiment only

class Borg(Tool):
    """borg create into a local, unencrypted repository: `borg init --encryption=none DIR`, then
    `borg create DIR::a .` from the work tree. BORG_BASE_DIR points at a fresh folder of the point
    (borg's cache, config and security records go there: nothing outside the point is touched, nothing
    of it is counted as the repository)."""
    name = binary = "borg"
    apt_package = "borgbackup"
    in_store = True

    def store_repo(self, pt): return os.path.join(pt.root, "borg-repo")
    def store_objects(self, pt): return self.store_repo(pt)
    def store_cache(self, pt): return os.path.join(pt.root, "borg-base")

    def _env(self, pt):
        return {"BORG_BASE_DIR": self.store_cache(pt), "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes",
                "BORG_RELOCATED_REPO_ACCESS_IS_OK": "yes"}

    def store_init(self, pt):
        return [self.cmd(pt, "init", "--encryption=none", self.store_repo(pt), cwd=pt.root, env=self._env(pt))]

    def store_save(self, pt):
        return [self.cmd(pt, "create", self.store_repo(pt) + "::a", ".", env=self._env(pt))]


# restic and borg; restic also takes part in s3 (S3_PEERS)
STORE_PEERS = {t.name: t for t in (Restic, Borg)}


# ---------------------------------------------------------------- peer of the watch experiment only

class Syncthing(Tool):
    """Syncthing, a file synchroniser (Debian's package): two instances on 127.0.0.1 sharing one folder are
    the watch experiment's peer of two `dmv watch --sync` replicas (experiments._SyncthingPeer drives them).
    It syncs files and keeps no history: no commits, only the arrival is measured."""
    name = binary = "syncthing"
    apt_package = "syncthing"


WATCH_PEERS = {t.name: t for t in (Syncthing,)}


# ---------------------------------------------------------------- peers of the Murphy experiments (filesize, filecount) only

def peers_venv():
    """The harness's own virtual environment for the peers that install from the Python package registry
    (DVC, Oxen): $XDG_CACHE_HOME/dmv-bench/peers-venv (default ~/.cache/...), made once and kept."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "dmv-bench", "peers-venv")


def pip_install(package):
    """pip install PACKAGE into peers_venv() (made with `python3 -m venv` when missing); (ok, tail of the output)."""
    venv = peers_venv()
    out = ""
    argvs = [] if os.path.exists(os.path.join(venv, "bin", "python")) else [
        ["/usr/bin/python3", "-m", "venv", venv]]
    argvs.append([os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check", package])
    print("installing %s: pip install %s into %s" % (package, package, venv), flush=True)
    for argv in argvs:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, str(e)
        out = (r.stdout + r.stderr).strip()[-300:]
        if r.returncode != 0:
            return False, out or "exit %d" % r.returncode
    return True, out


class Dvc(Tool):
    """DVC (`dvc` from PyPI, in the harness's venv) without git: `dvc init --no-scm` in the point's directory,
    the work tree tracked as one directory output (`dvc add work`: hashes every file, copies it into
    .dvc/cache and writes work.dvc; the same `dvc add work` again records the edited tree, DVC's commit when
    there is no git). Analytics off; DVC's site cache (its hash index, by default under /var/tmp/dvc) kept
    in .dvc/site so it is counted in the repository and removed with it."""
    name = "dvc"
    pip_package = "dvc"

    def __init__(self, path=None):
        self.path = path or os.path.join(peers_venv(), "bin", "dvc")

    def probe(self):
        if not os.path.exists(self.path):
            return None, "%s not found" % self.path
        v, why = _first_line([self.path, "--version"])
        return ("dvc %s (pip, %s)" % (v, peers_venv()) if v else None), why

    def meta(self, pt): return os.path.join(pt.root, ".dvc")
    def store_dir(self, pt): return os.path.join(self.meta(pt), "cache")

    def cmd(self, pt, *args, **kw):
        return Cmd([self.path] + list(args), cwd=pt.root,
                   env={"DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": os.path.join(self.meta(pt), "site")}, **kw)

    def cleanup(self, pt):
        for f in ("work.dvc", ".dvcignore"):
            if os.path.exists(os.path.join(pt.root, f)):
                os.remove(os.path.join(pt.root, f))

    def init(self, pt): return [self.cmd(pt, "init", "--no-scm", "-q")]
    def commit(self, pt, first): return [self.cmd(pt, "add", "-q", "work")]
    def status(self, pt): return [self.cmd(pt, "status")]


class Oxen(Tool):
    """Oxen through its Python package (`oxenai` from PyPI, in the harness's venv: it carries Oxen's Rust core,
    the one its CLI runs; the package installs no `oxen` command). Each step is one `python -c` that imports
    `oxen` and calls it from the work tree: init (`oxen.init`, after the author is configured with
    `oxen.user.config_user`, which writes HOME's config), commit (`Repo.add(".")` then `Repo.commit`), status
    (`Repo.status()` printed). The interpreter's start and `import oxen` are in every step's time; the step
    `startup` (`python -c "import oxen"`) measures them alone."""
    name = "oxen"
    pip_package = "oxenai"

    def __init__(self, path=None):
        self.path = path or os.path.join(peers_venv(), "bin", "python")

    def probe(self):
        if not os.path.exists(self.path):
            return None, "%s not found" % self.path
        v, why = _first_line([self.path, "-c", "import oxen, importlib.metadata as m; print(m.version('oxenai'))"])
        return ("oxenai %s (pip, %s)" % (v, peers_venv()) if v else None), why

    def meta(self, pt): return os.path.join(pt.work, ".oxen")
    def store_dir(self, pt): return os.path.join(self.meta(pt), "versions")

    def py(self, pt, code, **kw): return Cmd([self.path, "-c", code], cwd=pt.work, **kw)

    def startup(self, pt): return [self.py(pt, "import oxen")]

    def init(self, pt):
        return [self.py(pt, "import oxen; oxen.user.config_user('bench', 'bench@example.com'); oxen.init('.')")]

    def commit(self, pt, first):
        return [self.py(pt, "import oxen; r = oxen.Repo('.'); r.add('.'); r.commit('m')")]

    def status(self, pt): return [self.py(pt, "import oxen; print(oxen.Repo('.').status())")]


MURPHY_PEERS = {t.name: t for t in (Dvc, Oxen)}
