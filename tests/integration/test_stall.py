#!/usr/bin/env python3
"""airlockd under everything that once stalled it, at once, on loopback (integration.stall):

  - 1,000 slowloris connections from one address (127.0.0.2), each sending a header byte every
    few seconds and opened again as soon as it is closed;
  - 200 unauthenticated uploads of 1 MiB trickling in from another (127.0.0.3);
  - 10 parallel full re-verifications (?full=true) of a large audit log;
  - the writer's fsync held for 2 s (hosts/failsync.c's gate);
  - one agent with 200 slow runs queued.

Meanwhile probes from 127.0.0.1 ask GET /healthz and, with a key, GET /v1/me every 50 ms. The
verdict: every probe is answered within 2 s (a deadline many times what a probe takes, not a
speed: they wait for nobody's work); another department's run completes while the flood is still
queued (fair shares); airlockd's peak RSS stays under 300 MB; every full re-verification is
answered (200 with ok, or 429 past its rate limit), and afterwards the chain verifies.

usage: test_stall.py --airlockd PATH [--cli PATH] [--records N] [--seconds S] [--report]

--records is the audit log's size before the storm (default 20,000), --seconds how long the
storm lasts (default 12); --report prints the probes' latencies (p50, p99, max) - `make
loadtest` runs it with a bigger log. Needs FAILSYNC_LIB (set by ctest) for the held fsync.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import resource
import selectors
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, check  # noqa: E402

PROBE_DEADLINE = 2.0  # s: the liveness bound
RSS_LIMIT = 300 << 20
ARGS = None


class Http:
    """A keep-alive client of airlockd from one source address."""

    def __init__(self, port, key=None, source="127.0.0.1", timeout=60):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                            source_address=(source, 0))
        self.key = key

    def call(self, method, path, body=None):
        h = {"Authorization": "Bearer " + self.key} if self.key else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            self.c.request(method, path, body=data, headers=h)
            r = self.c.getresponse()
            text = r.read()
        except (OSError, http.client.HTTPException):
            self.c.close()
            raise
        return r.status, (json.loads(text) if text.strip() else None)

    def close(self):
        self.c.close()


def setup(w_dir, port, admin):
    """Departments finance (the flood) and ops (the quick run), their people and templates."""
    a = Http(port, admin)

    def ok(method, path, body, want):
        st, doc = a.call(method, path, body)
        check(st == want, "%s %s: %d %r" % (method, path, st, doc))
        return doc

    keys = {}
    for d in ("finance", "ops"):
        ok("POST", "/v1/departments", {"name": d}, 201)
    for name, grants in (("alice", [("author", "*")]), ("bob", [("approver", "*")]),
                         ("flood", [("agent", "finance")]), ("quick", [("agent", "ops")])):
        keys[name] = ok("POST", "/v1/principals", {"name": name, "kind": "agent"}, 201)["key"]
        for role, dept in grants:
            ok("POST", "/v1/principals/%s/roles" % name, {"role": role, "department": dept}, 201)
    a.close()
    return keys


def template(port, keys, name, dept, source, functions):
    alice = Http(port, keys["alice"])
    bob = Http(port, keys["bob"])
    for who, method, path, body, want in (
            (alice, "POST", "/v1/templates", {"name": name, "department": dept,
                                              "description": name}, 201),
            (alice, "POST", "/v1/templates/%s/versions" % name,
             {"source": source, "functions": functions, "input_schema": {"type": "object"}}, 201),
            (alice, "POST", "/v1/templates/%s/versions/1/submit" % name, {}, 200),
            (bob, "POST", "/v1/templates/%s/versions/1/approve" % name, {}, 200)):
        st, doc = who.call(method, path, body)
        check(st == want, "%s %s: %d %r" % (method, path, st, doc))
    alice.close()
    bob.close()


def fill_audit(port, n, key):
    """n refusals of a valid key without the role (403, each one audit record; 401s are tallied
    per address) from 16 keep-alive clients: a large log, quickly."""
    left = [n]
    lock = threading.Lock()

    def worker():
        c = Http(port, key)
        while True:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
            st, _ = c.call("GET", "/v1/principals")
            check(st == 403, "a refusal to fill the log answered %d" % st)
        c.close()

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Slowloris(multiprocessing.Process):
    """count sockets from `source`, each holding a request's headers open, one byte at a time;
    a socket airlockd closes is opened again after `again` seconds. A process of its own, so
    that its busy loop never holds up the probes' thread in this one."""

    def __init__(self, port, source, count, first, trickle, every, again=0.5):
        super().__init__(daemon=True)
        self.port, self.source, self.count = port, source, count
        self.first, self.trickle, self.every, self.again = first, trickle, every, again
        self.stop = multiprocessing.Event()
        self._n_opened = multiprocessing.Value("l", 0)
        self._n_closed = multiprocessing.Value("l", 0)

    @property
    def opened(self):
        return self._n_opened.value

    @property
    def closed_by_server(self):
        return self._n_closed.value

    def open(self, sel, now):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((self.source, 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return None
        with self._n_opened.get_lock():
            self._n_opened.value += 1
        sel.register(s, selectors.EVENT_READ, {"sent_first": False, "next": now})
        return s

    def run(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        sel = selectors.DefaultSelector()
        waiting = []  # times at which a closed socket is opened again
        now = time.monotonic()
        for _ in range(self.count):
            self.open(sel, now)
        while not self.stop.is_set():
            now = time.monotonic()
            for key, _ in sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
                    with self._n_closed.get_lock():
                        self._n_closed.value += 1
                    waiting.append(now + self.again)
            for key in list(sel.get_map().values()):
                st = key.data
                if now < st["next"]:
                    continue
                try:
                    if not st["sent_first"]:
                        key.fileobj.send(self.first)
                        st["sent_first"] = True
                    else:
                        key.fileobj.send(self.trickle)
                except OSError:
                    pass  # full, or closed: the read side sees it closed
                st["next"] = now + self.every
            due = [t for t in waiting if t <= now]
            waiting = [t for t in waiting if t > now]
            for _ in due:
                self.open(sel, now)
        for key in list(sel.get_map().values()):
            key.fileobj.close()


class Probe(threading.Thread):
    """GET /healthz and GET /v1/me every 50 ms, each on a connection of its own."""

    def __init__(self, port, key):
        super().__init__(daemon=True)
        self.port, self.key = port, key
        self.stop = threading.Event()
        self.times = []
        self.failures = []

    def one(self, path, key):
        t0 = time.monotonic()
        try:
            c = Http(self.port, key, timeout=30)
            st, _ = c.call("GET", path)
            c.close()
        except (OSError, http.client.HTTPException) as e:
            self.failures.append("%s: %r after %.2f s" % (path, e, time.monotonic() - t0))
            return
        took = time.monotonic() - t0
        self.times.append((path, took))
        if st != 200:
            self.failures.append("%s answered %d" % (path, st))

    def run(self):
        while not self.stop.is_set():
            self.one("/healthz", None)
            self.one("/v1/me", self.key)
            self.stop.wait(0.05)


def peak_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * p))] if v else 0.0


def t_nothing_stalls_airlockd(tmp):
    so = os.environ.get("FAILSYNC_LIB", "")
    check(os.path.exists(so), "FAILSYNC_LIB (the failsync library, set by ctest) is %r" % so)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    check(hard >= 2048, "this test opens 1,300 sockets: RLIMIT_NOFILE's hard limit is %d" % hard)
    gate = os.path.join(tmp, "gate")
    armed = os.path.join(tmp, "armed")
    cfg = os.path.join(tmp, "airlockd.json")
    with open(cfg, "w") as f:
        # the log is filled from one key at full speed: the point is the storm, not the bucket
        json.dump({"rate_limit": {"requests_per_second": 1000000, "burst": 1000000}}, f)
    d = os.path.join(tmp, "var")
    shop = tr.Shop()
    s = ts.Server(d, args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", cfg],
                  env_extra={"LD_PRELOAD": so, "FAILSYNC_THREAD": "airlockd-writer",
                             "FAILSYNC_GATE": gate, "FAILSYNC_ARMED": armed,
                             # under AddressSanitizer freed memory waits in its quarantine
                             # (256 MB by default) and counts in RSS: kept small, so that RSS
                             # still measures what airlockd holds
                             "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                             ":verify_asan_link_order=0:quarantine_size_mb=1"})
    attackers = []
    probe = None
    try:
        check(s.port, "airlockd did not start: " + s.stderr())
        admin = s.admin_key()
        keys = setup(d, s.port, admin)
        a = Http(s.port, admin)
        st, doc = a.call("POST", "/v1/connectors", {
            "name": "shop", "department": "finance", "url": shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000, "functions": {"slow": {}}})
        check(st == 201, "connector: %d %r" % (st, doc))
        template(s.port, keys, "nap", "finance", "await shop.slow(input.ms); return 'rested';",
                 ["shop.slow"])
        template(s.port, keys, "sum", "ops", "return 6 * 7;", [])
        a.close()
        fill_audit(s.port, ARGS.records if ARGS else 20000, keys["quick"])
        a = Http(s.port, admin, timeout=120)
        st, doc = a.call("GET", "/v1/audit/verify")
        check(st == 200 and doc["ok"], "the filled log verifies: %d %r" % (st, doc))
        records = doc["records"]
        open(armed, "w").close()  # the writer's fsyncs from here on go through the gate

        probe = Probe(s.port, admin)
        probe.start()
        attackers = [
            Slowloris(s.port, "127.0.0.2", 1000, b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
                      b"X", every=4.0),
            Slowloris(s.port, "127.0.0.3", 200,
                      b"POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                      b"ak_000000000000_" + b"1" * 64 + b"\r\nContent-Type: application/json"
                      b"\r\nContent-Length: 1048576\r\n\r\n", b"x" * 1024, every=0.5)]
        for t in attackers:
            t.start()

        # one agent floods finance with slow runs, queued behind its fair share
        flood_ids = []
        flood_errors = []

        def flood():
            c = Http(s.port, keys["flood"])
            for _ in range(200):
                st, doc = c.call("POST", "/v1/runs", {"template": "nap", "input": {"ms": 3000},
                                                      "wait": False})
                if st == 202:
                    flood_ids.append(doc["id"])
                else:
                    flood_errors.append((st, doc))
            c.close()

        flooder = threading.Thread(target=flood, daemon=True)
        flooder.start()

        verifies = []

        def verify():
            c = Http(s.port, admin, timeout=120)
            verifies.append(c.call("GET", "/v1/audit/verify?full=true"))
            c.close()

        checkers = [threading.Thread(target=verify, daemon=True) for _ in range(10)]
        for t in checkers:
            t.start()

        storm = ARGS.seconds if ARGS else 12
        time.sleep(storm / 4)
        open(gate, "w").close()  # the writer's next fsync waits 2 s
        time.sleep(2.0)
        os.unlink(gate)

        # another department's quick run while the flood is queued: it completes
        q = Http(s.port, keys["quick"])
        st, quick = q.call("POST", "/v1/runs", {"template": "sum", "input": {}})
        check(st == 200 and quick["status"] == "completed" and quick["value"] == 42,
              "the other department's run: %d %r" % (st, quick))
        flooder.join(60)
        check(not flood_errors, "the flood's runs were refused: %r" % flood_errors[:3])
        check(len(flood_ids) == 200, "the flood started %d runs" % len(flood_ids))
        f = Http(s.port, keys["flood"])
        st, queued = f.call("GET", "/v1/runs?template=nap&status=running&limit=500")
        check(st == 200, "the flood's runs: %d" % st)
        st, done = f.call("GET", "/v1/runs?template=nap&status=completed&limit=500")
        check(len(done) < 200 - 8, "the flood was not queued when the quick run completed: "
              "%d of 200 done" % len(done))

        time.sleep(max(0.0, storm - storm / 4 - 2.0))
        for t in checkers:
            t.join(120)
        probe.stop.set()
        probe.join(30)
        for t in attackers:
            t.stop.set()
        for t in attackers:
            t.join(30)

        rss = peak_rss(s.proc.pid)
        times = [t for _, t in probe.times]
        if ARGS and ARGS.report:
            print("probes: %d, p50 %.1f ms, p99 %.1f ms, max %.1f ms; peak RSS %.0f MB; "
                  "slowloris opened %d (closed by airlockd %d), uploads opened %d; log %d records"
                  % (len(times), 1e3 * pct(times, 0.5), 1e3 * pct(times, 0.99),
                     1e3 * max(times or [0]), rss / 2**20, attackers[0].opened,
                     attackers[0].closed_by_server, attackers[1].opened, records), flush=True)
        check(not probe.failures, "probes failed: %r" % probe.failures[:5])
        check(len(times) >= 20, "only %d probes were made" % len(times))
        slow = [(p, t) for p, t in probe.times if t > PROBE_DEADLINE]
        check(not slow, "probes over %.0f s: %r" % (PROBE_DEADLINE, slow[:5]))
        check(rss < RSS_LIMIT, "airlockd's peak RSS is %.0f MB" % (rss / 2**20))
        check(len(verifies) == 10, "full verifications answered: %d of 10" % len(verifies))
        for st, doc in verifies:
            check((st == 200 and doc["ok"]) or (st == 429 and doc["error"]["code"] ==
                                                "RATE_LIMITED"), "a full verify: %d %r" % (st, doc))
        check(any(st == 200 for st, _ in verifies), "no full verification ran")
        check(attackers[0].closed_by_server >= 900,
              "airlockd kept the slowloris' connections: %d closed" % attackers[0].closed_by_server)
        a = Http(s.port, admin)  # a kept-alive connection idle past the header deadline is closed
        st, doc = a.call("GET", "/v1/audit/verify")
        check(st == 200 and doc["ok"], "the chain verifies after the storm: %r" % doc)
        check(s.proc.poll() is None, "airlockd exited")
    finally:
        for t in attackers:
            t.stop.set()
        if probe:
            probe.stop.set()
        if os.path.exists(gate):
            os.unlink(gate)
        s.kill()
        shop.stop()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--report", action="store_true")
    ARGS, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    return ts.run_tests(TESTS, "airlockd-stall-", need_cli=False)


if __name__ == "__main__":
    sys.exit(main())
