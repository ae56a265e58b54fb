#!/usr/bin/env python3
"""What a wait costs the server; the figures of docs/design/waiting.md (sections 1 and 2).

  bench/waiting.py memory SERVER MODULE N KIND [KEYS]
      Starts SERVER (redis-server or valkey-server) with MODULE (an absolute path) on
      loopback, opens N clients of KIND and prints the server's used_memory delta per client,
      at once and 5 s later (once the client cron has shrunk idle buffers), and
      rlock_waiters_memory per wait.
      KIND: idle (PING), blpop (BLPOP 0), sub2 (RESP2 SUBSCRIBE), sub3 (RESP3 SUBSCRIBE),
      track3 (RESP3 CLIENT TRACKING on), wait (LOCK.ACQUIRE ... WAIT 0, one connection each,
      on KEYS locks), push (all N waits over one RESP3 connection: needs the prototype module
      of the design's appendix).
  bench/waiting.py contend PORT N SECONDS block|push|pull
      Against a running server: N waits on one lock, each grant released at once and its
      owner queued again. block: today's LOCK.ACQUIRE ... WAIT 0, one connection per wait;
      push: every wait over one RESP3 connection; pull: waits sent on one connection name a
      second one that collects grants with two pipelined GRANTS calls (push and pull need the
      prototype). Prints grants/s and the server's commandstats and used_cpu µs per grant:
      wall-clock figures that move with the machine's load. WAITING_KEY sets the lock's key;
      WAITING_MS the WAIT of the memory runs' waits (default 0: no limit, no timer).

Needs only python3 (raw RESP on sockets). For N clients, raise `ulimit -n` above N + 100.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *args):
        self.s.sendall(enc(*args))

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bulk(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        """One RESP2/RESP3 value; a push comes back as ("push", [...])."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"("):
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t == b",":
            return float(rest)
        if t in (b"$", b"="):
            n = int(rest)
            return None if n < 0 else self._bulk(n)
        if t in (b"*", b">", b"~"):
            n = int(rest)
            items = None if n < 0 else [self.read() for _ in range(n)]
            return ("push", items) if t == b">" else items
        if t == b"%":
            n = int(rest)
            return {self.read(): self.read() for _ in range(n)}
        raise ValueError("unexpected reply %r" % line)

    def call(self, *args):
        self.send(*args)
        return self.read()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(server, module):
    port = free_port()
    work = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", work, "--maxclients", "19000", "--loadmodule", module],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            c = Conn(port)
            if c.call("PING") == "PONG":
                return proc, port, c
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("server did not start")


def info(c, section, name):
    text = c.call("INFO", section).decode()
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    return 0


def settle(c, name, want):
    for _ in range(600):
        if info(c, "clients" if "client" in name else "rlock", name) >= want:
            return
        time.sleep(0.05)
    sys.exit("%s never reached %d" % (name, want))


# The WAIT of the memory runs' waits: 0 (no limit, no timer) unless WAITING_MS says.
WAIT_MS = os.environ.get("WAITING_MS", "0")


def open_many(port, n, kind, keys):
    conns = []
    if kind == "push":
        c = Conn(port)
        c.call("HELLO", "3")
        cid = c.call("CLIENT", "ID")
        c.call("SUBSCRIBE", "rlock:grant:%d" % cid)
        for i in range(n):
            c.send("LOCK.ACQUIRE", "lock:%d" % (i % keys), "w-%d:1" % i, "WAIT", WAIT_MS, "PUSH")
        for _ in range(n):
            reply = c.read()
            assert isinstance(reply, int) and reply < 0, reply
        return [c]
    for i in range(n):
        c = Conn(port)
        if kind == "idle":
            c.call("PING")
        elif kind == "blpop":
            c.send("BLPOP", "list:%d" % (i % keys), "0")
        elif kind == "sub2":
            c.call("SUBSCRIBE", "rlock:grant:%d" % i)
        elif kind == "sub3":
            c.call("HELLO", "3")
            c.call("SUBSCRIBE", "rlock:grant:%d" % i)
        elif kind == "track3":
            c.call("HELLO", "3")
            c.call("CLIENT", "TRACKING", "on")
        elif kind == "wait":
            c.send("LOCK.ACQUIRE", "lock:%d" % (i % keys), "w-%d:1" % i, "WAIT", WAIT_MS)
        conns.append(c)
    return conns


def memory(server, module, n, kind, keys):
    proc, port, c = start(server, module)
    try:
        if kind in ("wait", "push"):
            for k in range(keys):
                c.call("LOCK.ACQUIRE", "lock:%d" % k, "holder:1")
        time.sleep(1.5)
        base = info(c, "memory", "used_memory")
        conns = open_many(port, n, kind, keys)
        settle(c, "connected_clients", 1 + len(conns))
        if kind in ("wait", "push"):
            settle(c, "rlock_waiters", n)
        elif kind == "blpop":
            settle(c, "blocked_clients", n)
        at_once = info(c, "memory", "used_memory") - base
        time.sleep(5)
        later = info(c, "memory", "used_memory") - base
        waiters_memory = info(c, "rlock", "rlock_waiters_memory")
        print("%s %s n=%d keys=%d: used_memory delta per wait %.0f B at once, %.0f B after 5 s; "
              "rlock_waiters_memory per wait %.0f B; connections %d"
              % (os.path.basename(server), kind, n, keys, at_once / n, later / n,
                 waiters_memory / n, len(conns)))
    finally:
        proc.kill()
        proc.wait()


# A key of its own per run: a run leaves its last holding behind for the lease.
KEY = os.environ.get("WAITING_KEY", "lock:contend:%d" % os.getpid())


# Release sent -> the next holder's grant read, in seconds (wall-clock, client included).
GAPS = []
RELEASED_AT = [None]


def released():
    RELEASED_AT[0] = time.perf_counter()


def granted():
    if RELEASED_AT[0] is not None:
        GAPS.append(time.perf_counter() - RELEASED_AT[0])
        RELEASED_AT[0] = None


def stats(c):
    text = c.call("INFO", "everything").decode()
    usec, cpu, handoffs = 0, 0.0, 0
    for line in text.splitlines():
        if line.startswith(("cmdstat_lock.acquire:", "cmdstat_lock.release:")):
            usec += int(line.split("usec=")[1].split(",")[0])
        elif line.startswith(("used_cpu_sys:", "used_cpu_user:")):
            cpu += float(line.split(":")[1])
        elif line.startswith("rlock_handoffs:"):
            handoffs = int(line.split(":")[1])
    return usec, cpu, handoffs


def contend(port, n, seconds, how):
    admin = Conn(port)
    admin.call("CONFIG", "RESETSTAT")
    before = stats(admin)
    run = {"push": contend_push, "pull": contend_pull, "block": contend_block}[how]
    grants = run(port, n, seconds)
    usec, cpu, handoffs = stats(admin)
    assert handoffs - before[2] >= grants, "the server handed off fewer locks than were seen"
    gaps = sorted(GAPS)
    p50, p99 = (1e6 * gaps[int(q * (len(gaps) - 1))] for q in (0.5, 0.99))
    print("%s: %d waits, %.0f grants/s, %.2f commandstats µs and %.2f used_cpu µs per grant; "
          "release -> grant p50 %.0f µs, p99 %.0f µs"
          % (how, n, grants / seconds, (usec - before[0]) / grants,
             1e6 * (cpu - before[1]) / grants, p50, p99))


def contend_block(port, n, seconds):
    import selectors
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        c = Conn(port)
        c.owner = "w-%d:1" % i
        c.send("LOCK.ACQUIRE", KEY, c.owner, "LEASE", "30000", "WAIT", "0")
        sel.register(c.s, selectors.EVENT_READ, c)
        conns.append(c)
    grants, end = 0, time.time() + seconds
    while time.time() < end:
        for key, _ in sel.select(timeout=1):
            c = key.data
            while True:
                reply = c.read()
                if reply != 0:
                    assert isinstance(reply, int) and reply > 0, reply
                    granted()
                    released()
                    c.send("LOCK.RELEASE", KEY, c.owner)
                    c.send("LOCK.ACQUIRE", KEY, c.owner, "LEASE", "30000", "WAIT", "0")
                    grants += 1
                if b"\r\n" not in c.buf:
                    break
    return grants


def drain(c):
    """The replies already read into the buffer of `c`, at least one."""
    replies = [c.read()]
    while b"\r\n" in c.buf:
        replies.append(c.read())
    return replies


def contend_pull(port, n, seconds):
    import selectors
    g, c = Conn(port), Conn(port)
    gid = g.call("CLIENT", "ID")
    g.send("LOCK.ACQUIRE", "x", "x", "GRANTS")
    g.send("LOCK.ACQUIRE", "x", "x", "GRANTS")
    queue = lambda owner: c.send("LOCK.ACQUIRE", KEY, owner, "LEASE", "30000", "WAIT", "0",
                                 "PULL", gid)
    owner_of, held, requeued = {}, None, []
    for i in range(n):
        queue("w-%d:1" % i)
        reply = c.read()
        if reply > 0:
            held = "w-%d:1" % i
        else:
            owner_of[-reply] = "w-%d:1" % i
    sel = selectors.DefaultSelector()
    sel.register(g.s, selectors.EVENT_READ, g)
    sel.register(c.s, selectors.EVENT_READ, c)
    # Release the first holding; each grant then releases the one before it.
    c.send("LOCK.RELEASE", KEY, held)
    queue(held)
    requeued.append(held)
    grants, end = 0, time.time() + seconds
    while time.time() < end:
        for key, _ in sel.select(timeout=1):
            for reply in drain(key.data):
                if key.data is c:
                    if isinstance(reply, int) and reply < 0:
                        owner_of[-reply] = requeued.pop(0)
                    continue
                g.send("LOCK.ACQUIRE", "x", "x", "GRANTS")
                for wid in reply[0::2]:
                    owner = owner_of.pop(wid)
                    granted()
                    released()
                    c.send("LOCK.RELEASE", KEY, owner)
                    queue(owner)
                    requeued.append(owner)
                    grants += 1
    return grants


def contend_push(port, n, seconds):
    c = Conn(port)
    c.call("HELLO", "3")
    cid = c.call("CLIENT", "ID")
    c.call("SUBSCRIBE", "rlock:grant:%d" % cid)
    owner_of, held = {}, None
    for i in range(n):
        owner = "w-%d:1" % i
        c.send("LOCK.ACQUIRE", KEY, owner, "LEASE", "30000", "WAIT", "0", "PUSH")
        reply = c.read()
        if isinstance(reply, int) and reply > 0:
            held = owner
        else:
            owner_of[-reply] = owner
    grants, end = 0, time.time() + seconds
    while time.time() < end:
        # Release the holding, queue its owner again, and wait for the pushed grant.
        released()
        c.send("LOCK.RELEASE", KEY, held)
        c.send("LOCK.ACQUIRE", KEY, held, "LEASE", "30000", "WAIT", "0", "PUSH")
        got, queued = None, None
        while got is None or queued is None:
            reply = c.read()
            if isinstance(reply, tuple):
                wid, _token = reply[1][2].split()
                got = owner_of.pop(int(wid))
                granted()
            elif isinstance(reply, int) and reply < 0:
                queued = -reply
            elif isinstance(reply, int) and reply == 0:
                continue
            else:
                sys.exit("unexpected reply %r" % (reply,))
        owner_of[queued] = held
        held = got
        grants += 1
    return grants


def main(argv):
    if len(argv) >= 5 and argv[1] == "memory":
        keys = int(argv[6]) if len(argv) > 6 else 1
        memory(argv[2], argv[3], int(argv[4]), argv[5], keys)
    elif len(argv) == 6 and argv[1] == "contend" and argv[5] in ("push", "pull", "block"):
        contend(int(argv[2]), int(argv[3]), float(argv[4]), argv[5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
