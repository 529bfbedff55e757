#!/usr/bin/env python3
"""Denial-of-service attackers against `dmv serve` on loopback, for the
`attack` experiment (bench/experiments.py). Run as a child process of the
suite, so that its busy loop never shares a Python interpreter (and its
GIL) with the harness timing the clone:

    python3 bench/attack.py --port PORT [--slow 530] [--flood 16] [--deadline SECONDS]
    python3 bench/attack.py --port PORT --slow 0 --flood 0 --readers 520 --raw /hub/raw/ID/big.bin
    python3 bench/attack.py --port PORT --slow 0 --flood 0 --searches 300 | --zips 300 | --uploads 300 --token T

Attacks from one event loop (epoll), each connection reconnecting as soon as
the server closes it:

- slow bodies: `--slow` connections each send the head of `POST
  /hub/dmv/has` with `Content-Length: 1000` and `Connection: close`, then
  trickle the body one byte about every second (any bytes);
- body flood: `--flood` connections each send `POST /hub/dmv/has` with
  `Content-Length: 67108868` and then the body as fast as they can: a frame
  length of 67108863 (4 bytes, little-endian), one byte 0x01, then zeros,
  in writes of 1 MiB;
- slow readers: `--readers` connections each ask for a large file
  (`GET --raw PATH`) and never read the answer (the socket's state is looked
  at every half second, to reconnect once the server closes it);
- searches, zips, upload slots and the floor: `--searches`, `--zips`, `--uploads`, `--statics`
  connections each send a request (a search of the whole tree for a new
  word each time; a zip of the folder `small/`; opening an upload of one
  byte with `--token`; `/-/theme.js`, what answering any request costs),
  read its answer whole and send the next at once.

Only to 127.0.0.1. It prints JSON lines on stdout: `ready` once every slow
connection has sent its head and every flood connection its first MiB (or
after `--ramp` seconds), then the counters when stdin says `stop` (or
closes), at `--deadline` seconds at the latest, and exits. The counters:
connections open now (`*_open`: connected, head sent, not yet closed),
connections made, answers by status code (`*_answers`), closes without an
answer, connection errors, bytes sent.
"""
import argparse
import errno
import heapq
import json
import os
import random
import resource
import selectors
import signal
import socket
import sys
import struct
import time

HOST = "127.0.0.1"
PATH = "/hub/dmv/has"
SLOW_LENGTH = 1000
FLOOD_FRAME = 67108863                      # a frame length just under the protocol's 64 MiB
FLOOD_LENGTH = 4 + 1 + FLOOD_FRAME          # 67108868: length, kind byte 0x01, zeros
CHUNK = 1 << 20
ZEROS = memoryview(bytes(CHUNK))
FLOOD_WRITES_PER_EVENT = 4                  # writes of 1 MiB on one connection before the loop moves on
RECONNECT_BACKOFF = 0.1                     # after a failed connect (the server refuses or is gone)


def _head(length):
    return ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        PATH, length)).encode()


SLOW_HEAD = _head(SLOW_LENGTH)
READER_PROBE = 0.5                          # seconds between looks at a never-reading connection's state
TCP_CLOSE_STATES = {7, 8, 9}                # TCP_CLOSE, TCP_CLOSE_WAIT, TCP_LAST_ACK (linux/tcp_states.h)
LOOPING = ("search", "zip", "upload", "static")  # kinds that send a request, read its answer, and send the next


def _get(path):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path).encode()


def looping_head(kind, token):
    """The next request of a looping connection."""
    if kind == "search":
        return _get("/hub/search?q=w%08x&rev=main" % random.getrandbits(32))
    if kind == "zip":
        return _get("/hub/zip/main/small/")
    if kind == "static":
        return _get("/-/theme.js")
    body = b'{"name":"slot.bin","size":1}'
    return ("POST /hub/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
                token, len(body))).encode() + body
FLOOD_HEAD = _head(FLOOD_LENGTH) + FLOOD_FRAME.to_bytes(4, "little") + b"\x01"


class Stats:
    def __init__(self, kind):
        self.kind = kind
        self.open = 0            # connected with the head sent, not closed yet
        self.connects = 0        # connections established
        self.connect_errors = 0
        self.answers = {}        # status code -> count
        self.closed_unanswered = 0  # closed (EOF or reset) without a status line
        self.bytes_sent = 0

    def as_dict(self):
        k = self.kind
        return {k + "_open": self.open, k + "_connects": self.connects, k + "_connect_errors": self.connect_errors,
                k + "_answers": {str(c): n for c, n in sorted(self.answers.items())},
                k + "_closed_unanswered": self.closed_unanswered, k + "_bytes_sent": self.bytes_sent}


class Conn:
    def __init__(self, kind, index):
        self.kind, self.index = kind, index
        self.sock = None
        self.state = "idle"      # idle | connecting | open
        self.out = b""           # head (and frame prefix) still to send
        self.body_left = 0       # body bytes still to send (zeros or trickle)
        self.inbuf = b""
        self.answered = False
        self.ready = False       # counted in `ready` once
        self.gen = 0             # which connection of this slot a timer belongs to


class Attack:
    def __init__(self, port, slow, flood, others=(), raw="", token=""):
        self.port, self.raw, self.token = port, raw, token
        self.sel = selectors.DefaultSelector()
        self.stats = {k: Stats(k) for k in ("slow", "flood", "reader") + LOOPING}
        self.conns = [Conn("slow", i) for i in range(slow)] + [Conn("flood", i) for i in range(flood)]
        for kind, n in others:
            self.conns += [Conn(kind, i) for i in range(n)]
        self.ready_other = 0
        self.timers = []         # (when, seq, action, conn, generation)
        self.seq = 0
        self.ready_slow = self.ready_flood = 0
        self.started = time.monotonic()

    # ---- timers
    def at(self, when, action, conn):
        self.seq += 1
        heapq.heappush(self.timers, (when, self.seq, action, conn, conn.gen))

    # ---- connections
    def connect(self, c):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((HOST, self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.stats[c.kind].connect_errors += 1
            self.at(time.monotonic() + RECONNECT_BACKOFF, "connect", c)
            return
        c.sock, c.state, c.inbuf, c.answered = s, "connecting", b"", False
        c.gen += 1
        if c.kind in ("slow", "flood"):
            c.out = SLOW_HEAD if c.kind == "slow" else FLOOD_HEAD
            c.body_left = SLOW_LENGTH if c.kind == "slow" else FLOOD_LENGTH - 5
        else:
            c.out = _get(self.raw) if c.kind == "reader" else looping_head(c.kind, self.token)
            c.body_left = 0
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)

    def close(self, c, reason=None):
        """Closes c (the server closed it, or it broke) and reconnects it at once."""
        st = self.stats[c.kind]
        if c.sock is None:
            return
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        c.sock = None
        if c.state == "open":
            st.open -= 1
            if not c.answered:
                st.closed_unanswered += 1
        elif c.state == "connecting":
            st.connect_errors += 1
        was_connecting = c.state == "connecting"
        c.state = "idle"
        self.at(time.monotonic() + (RECONNECT_BACKOFF if was_connecting else 0), "connect", c)

    def _drain(self, c):
        """Reads what the server sent; True when it closed the connection."""
        while True:
            try:
                data = c.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return True
            if not data:
                return True
            if not c.answered:
                c.inbuf += data
                if b"\r\n" in c.inbuf or len(c.inbuf) > 64:
                    parts = c.inbuf.split(b" ", 2)
                    code = parts[1].decode("ascii", "replace") if len(parts) > 1 and parts[0].startswith(b"HTTP/") else "?"
                    st = self.stats[c.kind]
                    st.answers[code] = st.answers.get(code, 0) + 1
                    c.answered = True
                    c.inbuf = b""

    def _send(self, c, data):
        """Sends what it can of data; returns the bytes sent, or None when the connection broke."""
        try:
            n = c.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            return None
        self.stats[c.kind].bytes_sent += n
        return n

    def on_event(self, c, mask):
        st = self.stats[c.kind]
        if c.state == "connecting":
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.close(c)
                return
            c.state = "open"
            st.open += 1
            st.connects += 1
        if mask & selectors.EVENT_READ:
            if self._drain(c):
                self.close(c)
                return
        if mask & selectors.EVENT_WRITE:
            while c.out:
                n = self._send(c, c.out)
                if n is None:
                    self._drain(c)  # an answer sent before the close still counts
                    self.close(c)
                    return
                if n == 0:
                    return
                c.out = c.out[n:]
            if c.kind == "reader":
                # asked: never read; look at the socket's state now and then
                self.sel.unregister(c.sock)
                if not c.ready:
                    c.ready = True
                    self.ready_other += 1
                self.at(time.monotonic() + READER_PROBE, "probe", c)
                return
            if c.kind in LOOPING:
                # asked: read the answer whole (the close reconnects and asks again)
                self.sel.modify(c.sock, selectors.EVENT_READ, c)
                if not c.ready:
                    c.ready = True
                    self.ready_other += 1
                return
            if c.kind == "slow":
                # head sent: now one byte about every second, from a timer
                self.sel.modify(c.sock, selectors.EVENT_READ, c)
                if not c.ready:
                    c.ready = True
                    self.ready_slow += 1
                self.at(time.monotonic() + random.uniform(0.5, 1.5), "trickle", c)
                return
            for _ in range(FLOOD_WRITES_PER_EVENT):  # then the other connections' turn
                if c.body_left <= 0:
                    break
                n = self._send(c, ZEROS[:min(CHUNK, c.body_left)])
                if n is None:
                    self._drain(c)
                    self.close(c)
                    return
                if n == 0:
                    return
                c.body_left -= n
                if not c.ready and FLOOD_LENGTH - 5 - c.body_left >= CHUNK:
                    c.ready = True
                    self.ready_flood += 1
            if c.body_left <= 0:
                # whole body sent (the server should have cut it at 8 MiB): wait for its answer
                self.sel.modify(c.sock, selectors.EVENT_READ, c)

    def probe(self, c):
        """A never-reading connection: closed by the server yet?"""
        if c.sock is None or c.state != "open":
            return
        try:
            state = struct.unpack("B", c.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[:1])[0]
        except OSError:
            state = 7
        if state in TCP_CLOSE_STATES:
            # closed without reading: whatever it sent does not count as an answer
            self.sel.register(c.sock, selectors.EVENT_READ, c)
            self.close(c)
            return
        self.at(time.monotonic() + READER_PROBE, "probe", c)

    def trickle(self, c):
        if c.sock is None or c.state != "open":
            return
        if c.body_left > 0:
            n = self._send(c, b"x")
            if n is None:
                self._drain(c)
                self.close(c)
                return
            c.body_left -= n
        if c.body_left > 0:
            self.at(time.monotonic() + 1.0, "trickle", c)

    def snapshot(self, event):
        out = dict(event=event, t=round(time.monotonic() - self.started, 3),
                   ready_slow=self.ready_slow, ready_flood=self.ready_flood, ready_other=self.ready_other)
        for st in self.stats.values():
            out.update(st.as_dict())
        return out

    def run(self, deadline, ramp, control):
        """Until `stop` on `control` (stdin), its end, or `deadline` seconds."""
        # spread the first connects over 0.5 s: no burst larger than the listen backlog
        for i, c in enumerate(self.conns):
            self.at(self.started + 0.5 * i / max(1, len(self.conns)), "connect", c)
        self.sel.register(control, selectors.EVENT_READ, None)
        end = self.started + deadline
        ready_sent, ctrl_buf = False, b""
        total_slow = sum(1 for c in self.conns if c.kind == "slow")
        total_flood = sum(1 for c in self.conns if c.kind == "flood")
        total_other = len(self.conns) - total_slow - total_flood
        while True:
            now = time.monotonic()
            if now >= end:
                return self.snapshot("deadline")
            if not ready_sent and ((self.ready_slow >= total_slow and self.ready_flood >= total_flood
                                    and self.ready_other >= total_other)
                                   or now - self.started >= ramp):
                print(json.dumps(self.snapshot("ready")), flush=True)
                ready_sent = True
            while self.timers and self.timers[0][0] <= now:
                _, _, action, c, gen = heapq.heappop(self.timers)
                if gen != c.gen:
                    continue  # a timer of a connection of this slot that is closed now
                if action == "connect":
                    if c.sock is None:
                        self.connect(c)
                elif action == "probe":
                    self.probe(c)
                else:
                    self.trickle(c)
            timeout = max(0.0, min(end, self.timers[0][0] if self.timers else end) - time.monotonic())
            for key, mask in self.sel.select(min(timeout, 0.2)):
                if key.data is None:  # the control pipe
                    chunk = os.read(control.fileno(), 4096)
                    ctrl_buf += chunk
                    if not chunk or b"stop" in ctrl_buf:
                        return self.snapshot("stop")
                    continue
                if key.data.sock is not None and key.fileobj is key.data.sock:
                    self.on_event(key.data, mask)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--slow", type=int, default=530)
    ap.add_argument("--flood", type=int, default=16)
    ap.add_argument("--readers", type=int, default=0, help="connections asking for --raw and never reading")
    ap.add_argument("--raw", default="", help="the path the readers ask for")
    ap.add_argument("--searches", type=int, default=0)
    ap.add_argument("--zips", type=int, default=0)
    ap.add_argument("--uploads", type=int, default=0)
    ap.add_argument("--statics", type=int, default=0, help="the floor: connections asking for a small static file")
    ap.add_argument("--token", default="", help="the write token the uploads open slots with")
    ap.add_argument("--deadline", type=float, default=600, help="seconds after which it stops by itself")
    ap.add_argument("--ramp", type=float, default=60, help="seconds after which it reports `ready` anyway")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    others = [("reader", args.readers), ("search", args.searches), ("zip", args.zips), ("upload", args.uploads), ("static", args.statics)]
    want = args.slow + args.flood + sum(n for _, n in others) + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard) if hard != resource.RLIM_INFINITY else want, hard))
    attack = Attack(args.port, args.slow, args.flood, [(k, n) for k, n in others if n], args.raw, args.token)
    final = attack.run(args.deadline, args.ramp, sys.stdin)
    print(json.dumps(final), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
