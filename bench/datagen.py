"""Test data: big pseudo-random files and trees of many small files.

Everything here is untimed set-up work; it only has to be fast. Random bytes
come from numpy's SFC64 generator when numpy is installed (about 700 MB/s,
deterministic per seed) and from os.urandom otherwise (about 300 MB/s, this
machine's disk speed). Random data is incompressible and never repeats, so no
tool can win by compression or deduplication inside one version.
"""
import hashlib
import os
import random

MiB = 1 << 20
FILES_PER_DIR = 1000
SMALL_FILE_SIZE = 1024
# Region of every small file that "overwrite part of every file" rewrites.
SMALL_EDIT_OFFSET, SMALL_EDIT_LEN = 512, 64

try:  # optional speed-up; matplotlib pulls numpy in anyway
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the machine
    _np = None


class RandomStream:
    """Deterministic (with numpy) stream of pseudo-random bytes."""

    def __init__(self, seed):
        self._bitgen = _np.random.SFC64(seed) if _np is not None else None

    def read(self, n):
        if self._bitgen is None:
            return os.urandom(n)
        words = (n + 7) // 8
        return self._bitgen.random_raw(words).tobytes()[:n]


def hasher():
    return hashlib.sha1()  # fastest on this CPU (SHA-NI); only used to compare bytes


def write_random_file(path, size, seed=1):
    """Writes `size` random bytes to `path`; returns the sha1 hex digest."""
    stream, h = RandomStream(seed), hasher()
    with open(path, "wb") as f:
        left = size
        while left:
            block = stream.read(min(left, MiB))
            f.write(block)
            h.update(block)
            left -= len(block)
    return h.hexdigest()


def file_hash(path):
    h = hasher()
    with open(path, "rb", buffering=0) as f:
        while True:
            block = f.read(4 * MiB)
            if not block:
                return h.hexdigest()
            h.update(block)


class BigFileEdit:
    """The experiment-1 edit: size/1024 bytes (at least 1) at 1/4 of the file.

    Keeps the original bytes so that the same data file can be handed to the
    next tool unchanged (`restore`), and precomputes the hash after the edit.
    """

    def __init__(self, path, size, seed=2):
        self.path = path
        self.offset = size // 4
        self.length = max(1, size // 1024)
        if self.offset + self.length > size:
            self.offset = max(0, size - self.length)
        self.new = RandomStream(seed).read(self.length)
        with open(path, "rb") as f:
            f.seek(self.offset)
            self.old = f.read(self.length)
        if self.old == self.new:  # only plausible for 1-byte files
            self.new = bytes([(self.old[0] + 1) % 256]) + self.new[1:]
        self.hash_after = self._hash_with(self.new)

    def _hash_with(self, region):
        h = hasher()
        with open(self.path, "rb", buffering=0) as f:
            pos = 0
            while True:
                block = f.read(4 * MiB)
                if not block:
                    break
                end = pos + len(block)
                if pos < self.offset + self.length and end > self.offset:
                    block = bytearray(block)
                    lo = max(self.offset, pos)
                    hi = min(self.offset + self.length, end)
                    block[lo - pos:hi - pos] = region[lo - self.offset:hi - self.offset]
                h.update(block)
                pos = end
        return h.hexdigest()

    def _write(self, region):
        with open(self.path, "r+b") as f:
            f.seek(self.offset)
            f.write(region)

    def apply(self):
        self._write(self.new)

    def restore(self):
        self._write(self.old)


def small_file_path(root, i):
    return os.path.join(root, "d%05d" % (i // FILES_PER_DIR), "f%07d" % i)


def _dir_block(seed, d, n, size=SMALL_FILE_SIZE):
    """Contents of the `n` files of folder `d` (deterministic per seed)."""
    return random.Random(seed * 1_000_003 + d).randbytes(n * size)


def write_tree(root, count, seed=1, size=SMALL_FILE_SIZE):
    """`count` files of `size` bytes (1 KiB unless told), FILES_PER_DIR per folder."""
    for d in range((count + FILES_PER_DIR - 1) // FILES_PER_DIR):
        n = min(FILES_PER_DIR, count - d * FILES_PER_DIR)
        os.makedirs(os.path.join(root, "d%05d" % d), exist_ok=True)
        block = _dir_block(seed, d, n, size)
        for k in range(n):
            with open(small_file_path(root, d * FILES_PER_DIR + k), "wb") as f:
                f.write(block[k * size:(k + 1) * size])


def edit_tree(root, count, seed, every=1):
    """Rewrites SMALL_EDIT_LEN bytes at SMALL_EDIT_OFFSET of every `every`-th file
    with the bytes that `write_tree(seed=seed)` puts there: seed=1 restores the
    original, any other seed is a real change."""
    for d in range((count + FILES_PER_DIR - 1) // FILES_PER_DIR):
        n = min(FILES_PER_DIR, count - d * FILES_PER_DIR)
        block = _dir_block(seed, d, n)
        for k in range(n):
            i = d * FILES_PER_DIR + k
            if i % every:
                continue
            start = k * SMALL_FILE_SIZE + SMALL_EDIT_OFFSET
            with open(small_file_path(root, i), "r+b") as f:
                f.seek(SMALL_EDIT_OFFSET)
                f.write(block[start:start + SMALL_EDIT_LEN])


def tree_hash(root, skip=(".dmv", ".git")):
    """(hash over every file's path and content, files, bytes) of a directory,
    leaving out the repositories' own folders: compares a clone with its source."""
    h, files, size = hasher(), 0, 0
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(names):
            path = os.path.join(top, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb", buffering=0) as f:
                while True:
                    block = f.read(4 * MiB)
                    if not block:
                        break
                    h.update(block)
                    size += len(block)
            h.update(b"\0")
            files += 1
    return h.hexdigest(), files, size


def touch_tree(root, count, when_ns):
    for i in range(count):
        os.utime(small_file_path(root, i), ns=(when_ns, when_ns))
