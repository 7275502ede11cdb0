#!/usr/bin/env python3
"""Load on airlockd, and kill -9 under load: what airlockd promises under pressure.

usage: loadtest.py --airlockd PATH --cli PATH [--clients N] [--seconds T] [--rss-mib M]
                   [--kill9] [--sanitize]

Load (the default mode): airlockd (test_server.Server) with the shop connector
(test_runs.World), five approved templates and N client threads, each on its own keep-alive
HTTP/1.1 connection, posting runs for T seconds - pure compute, one connector call, a guest that
throws, a sensitive call that waits for a person (an approver thread decides them while the load
runs), an input the schema refuses (422), a short run cancelled right after its 202 - with
"wait" true or false, and reading runs back. Then every waiting run is let end, and the test
asserts: no 5xx and no connection error ever, every answer the one the contract gives; the runs
acknowledged (200/202) are exactly the runs of the audit log, each with one run.start and one
run.end, which says what the run is (a run answered "cancelled" stays cancelled); seq is 1..N
without a gap or a repeat;
/v1/audit/verify is ok and `airlock audit verify` passes the export; airlockd's peak RSS
(VmHWM) stays under --rss-mib. It prints requests, runs/s, the latency of POST /v1/runs,
errors and the peak RSS.

--kill9: clients post slow runs (shop.slow, 300 ms), sensitive runs that end awaiting approval
and pure compute; after T seconds, once two sensitive runs were answered awaiting approval, one
more slow run (5 s) is started and airlockd gets SIGKILL while its call is in the shop, so that a
run is executing at the kill however slow the machine is. Every answer a client got
is kept; airlockd restarts on the same data directory; then every run that got an answer has its
complete audit (run.start; run.end when it was answered ended; run.wait and its approvals when
it was answered awaiting_approval), the runs that were executing go on from their journal: the
ones whose call was in doubt at the kill (sent, not answered: shop.slow is not idempotent) wait
for a person in an `in_doubt` approval, with a run.wait record listing the call, and complete
once it is approved (the call sent again under its key); none is left running or queued, no run
is abandoned, the chain verifies (API and CLI), and runs awaiting approval are approved after the
restart and complete.

The rate limit is raised in a config file: all clients share a few keys and one address, and
the point here is the server, not the bucket (tests/integration covers 429). Performance is
printed, never asserted; polling for a state has a deadline; nothing sleeps for timing.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, check  # noqa: E402

CLIENT_TIMEOUT = 120  # s: a wait:true run behind a full queue still answers well before this
DRAIN = 120           # s: to let every waiting run end after the load
SEED = 12

COMPUTE = """
let s = 0;
for (let i = 0; i < input.n; i++) { s = (s + i * i) % 1000003; }
return s;
"""
LOOKUP = "const o = await shop.orders(input.status); return o.length;"
THROWER = "throw new RangeError('no stock for ' + input.sku);"
REFUND = "const r = await shop.refund(input.order, input.amount); return r.amount;"
SLOW = "await shop.slow(input.ms); return 'woke';"

SCHEMAS = {
    "compute": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
                                                       "maximum": 100000}},
                "required": ["n"], "additionalProperties": False},
    "lookup": {"type": "object", "properties": {"status": {"enum": ["paid", "pending"]}},
               "required": ["status"]},
    "thrower": {"type": "object", "properties": {"sku": {"type": "string"}}},
    "refund": {"type": "object", "properties": {"order": {"type": "string"},
                                                "amount": {"type": "integer", "minimum": 1}},
               "required": ["order", "amount"]},
    "slow": {"type": "object", "properties": {"ms": {"type": "integer", "maximum": 5000}},
             "required": ["ms"]},
}
ENDED = ("completed", "failed", "cancelled", "denied")


class Conn:
    """One client's keep-alive connection; every request reads its whole answer."""

    def __init__(self, port, key):
        self.port = port
        self.key = key
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)

    def call(self, method, path, body=None):
        h = {"Authorization": "Bearer " + self.key}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        t0 = time.monotonic()
        try:
            self.c.request(method, path, body=data, headers=h)
            r = self.c.getresponse()
            text = r.read()
        except Exception:
            self.c.close()
            raise
        dt = time.monotonic() - t0
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            doc = {"not_json": text[:200].decode("utf-8", "replace")}
        return r.status, doc, dt

    def close(self):
        self.c.close()


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.by_status = {}
        self.post_latency = []   # s, every POST /v1/runs answered
        self.acked = {}          # run id -> (kind, http status, run status, approvals)
        self.errors = []         # (what, detail), the first few kept in full
        self.n_errors = 0
        self.conn_errors = 0
        self.decided = 0
        self.decided_ids = {}    # approval id -> run id, approvals answered 200
        self.cancelled = {}      # run id -> the answer of a cancel that said "cancelled"

    def answer(self, status):
        with self.lock:
            self.requests += 1
            self.by_status[status] = self.by_status.get(status, 0) + 1

    def error(self, what):
        with self.lock:
            self.n_errors += 1
            if len(self.errors) < 20:
                self.errors.append(what)


def percentile(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


# ---------------------------------------------------------------------------------------------
class QuietShop(tr.Shop):
    """The shop connector, its stderr discarded: after a kill -9 it reports every broken pipe."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(tr.HERE, "hosts", "shop_connector.py"), tr.SECRET],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d/" % self.port


def start_world(tmp):
    """World (test_runs) whose airlockd has the fixed audit key and the raised rate limit."""
    cfg = os.path.join(tmp, "airlockd.json")
    with open(cfg, "w") as f:
        json.dump({"rate_limit": {"requests_per_second": 1000000, "burst": 1000000}}, f)
    real = ts.Server

    def server(data_dir):
        return real(data_dir, env_extra={"AIRLOCK_AUDIT_KEY": ts.AUDIT_KEY},
                    args=["--listen", "127.0.0.1:0", "--data-dir", data_dir, "--config", cfg])

    tr.Server = server
    w = tr.World(tmp, shop=QuietShop())
    w.server = server
    w.template("compute", COMPUTE, [], schema=SCHEMAS["compute"])
    w.template("lookup", LOOKUP, ["shop.orders"], schema=SCHEMAS["lookup"])
    w.template("thrower", THROWER, [], schema=SCHEMAS["thrower"])
    w.template("refund", REFUND, ["shop.refund"], schema=SCHEMAS["refund"])
    w.template("slow", SLOW, ["shop.slow"], schema=SCHEMAS["slow"])
    return w


def pick(rnd, kill9):
    """(kind, body, want): want maps the HTTP status expected to the run statuses allowed."""
    x = rnd.random()
    wait = rnd.random() < 0.7
    if kill9:
        if x < 0.45:
            return "slow", {"template": "slow", "input": {"ms": 300}, "wait": wait}, want_of(
                wait, ("completed",))
        if x < 0.75:
            return "refund", {"template": "refund", "input": {"order": "o-1", "amount": 3},
                              "wait": True}, {202: ("awaiting_approval",)}
        return "compute", {"template": "compute", "input": {"n": 2000}, "wait": wait}, want_of(
            wait, ("completed",))
    if x < 0.35:
        return "compute", {"template": "compute", "input": {"n": rnd.randint(0, 5000)},
                           "wait": wait}, want_of(wait, ("completed",))
    if x < 0.65:
        return "lookup", {"template": "lookup", "input": {"status": rnd.choice(["paid",
                                                                                "pending"])},
                          "wait": wait}, want_of(wait, ("completed",))
    if x < 0.75:
        return "thrower", {"template": "thrower", "input": {"sku": "s-%d" % rnd.randint(1, 9)},
                           "wait": wait}, want_of(wait, ("failed",))
    if x < 0.85:
        return "refund", {"template": "refund", "input": {"order": "o-%d" % rnd.randint(1, 3),
                                                          "amount": rnd.randint(1, 50)},
                          "wait": wait}, want_of(wait, ("awaiting_approval",), waiting=True)
    if x < 0.89:
        return "invalid", {"template": "compute", "input": {"n": "many"}}, {422: ()}
    if x < 0.93:
        return "cancel", {"template": "slow", "input": {"ms": rnd.randint(0, 40)},
                          "wait": False}, want_of(False, ())
    return "get", None, {200: ()}


def want_of(wait, ended, waiting=False):
    if not wait:
        return {202: ("running", "queued")}
    return {202: ended} if waiting else {200: ended}


def client(w, port, key, idx, stop, stats, kill9, mine_cap=50):
    rnd = random.Random(SEED * 1000 + idx)
    conn = Conn(port, key)
    mine = []
    try:
        while not stop.is_set():
            kind, body, want = pick(rnd, kill9)
            if kind == "get" and not mine:
                continue
            try:
                if kind == "get":
                    run_id = rnd.choice(mine)
                    st, doc, _ = conn.call("GET", "/v1/runs/" + run_id)
                else:
                    st, doc, dt = conn.call("POST", "/v1/runs", body)
            except Exception as e:  # noqa: BLE001 - any failure to get an answer counts
                if stop.is_set() and kill9:
                    return  # airlockd was killed under this request: no answer, nothing kept
                with stats.lock:
                    stats.conn_errors += 1
                stats.error("connection: %s %r" % (kind, e))
                if w.s.proc.poll() is not None:
                    return  # airlockd is gone: reported once, by load()
                conn = Conn(port, key)
                continue
            stats.answer(st)
            if kind != "get":
                with stats.lock:
                    stats.post_latency.append(dt)
            ok = st in want and (not want[st] or (isinstance(doc, dict) and
                                                  doc.get("status") in want[st]))
            if kind == "invalid":
                ok = ok and doc.get("error", {}).get("code") == "INPUT_INVALID"
            if kind == "get":
                ok = ok and doc.get("id") == run_id
            if not ok:
                stats.error("%s %r: %d %r" % (kind, body, st, doc))
            if st in (200, 202) and kind not in ("get", "invalid") and isinstance(doc, dict):
                with stats.lock:
                    stats.acked[doc["id"]] = (kind, st, doc.get("status"),
                                              tuple(doc.get("approvals") or ()))
                if kind == "cancel":
                    cancel(conn, doc["id"], stats)
                if len(mine) < mine_cap:
                    mine.append(doc["id"])
                else:
                    mine[rnd.randrange(mine_cap)] = doc["id"]
    finally:
        conn.close()


def cancel(conn, run_id, stats):
    """Cancels a run that may be ending right now: 200 cancelled, or 409 when it has ended."""
    try:
        st, doc, _ = conn.call("POST", "/v1/runs/%s/cancel" % run_id, {})
    except Exception as e:  # noqa: BLE001
        with stats.lock:
            stats.conn_errors += 1
        stats.error("connection: cancel %r" % e)
        return
    stats.answer(st)
    if st == 200 and doc.get("status") == "cancelled":
        with stats.lock:
            stats.cancelled[run_id] = doc
    elif not (st == 409 and doc.get("error", {}).get("code") == "CONFLICT"):
        stats.error("cancel %s: %d %r" % (run_id, st, doc))


def approver(w, port, stop, stats, kill9=False):
    """bob decides pending approvals while the load runs: under load every one, three in four
    approved; with --kill9 every second one he sees, approved, so that some are decided just
    before the kill and the others stay waiting across it."""
    conn = Conn(port, w.keys["bob"])
    n = 0
    seen = set()
    try:
        while not stop.is_set():
            try:
                st, doc, _ = conn.call("GET", "/v1/approvals?status=pending")
                stats.answer(st)
                if st != 200:
                    stats.error("approvals list: %d %r" % (st, doc))
                    continue
                fresh = [a for a in doc if a["id"] not in seen]
                for a in fresh:
                    seen.add(a["id"])
                    n += 1
                    if kill9 and n % 2 == 0:
                        continue
                    verb = "deny" if n % 4 == 3 and not kill9 else "approve"
                    st, d, _ = conn.call("POST", "/v1/approvals/%s/%s" % (a["id"], verb),
                                         {"comment": "load"})
                    stats.answer(st)
                    if st != 200:
                        stats.error("approval %s: %d %r" % (verb, st, d))
                    else:
                        with stats.lock:
                            stats.decided += 1
                            stats.decided_ids[a["id"]] = a["run"]
                if not fresh:
                    stop.wait(0.02)  # nothing new to decide: poll again shortly
            except Exception as e:  # noqa: BLE001
                if stop.is_set() and kill9:
                    return
                with stats.lock:
                    stats.conn_errors += 1
                stats.error("approver connection: %r" % e)
                if w.s.proc.poll() is not None:
                    return
                conn = Conn(port, w.keys["bob"])
    finally:
        conn.close()


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self.stop = threading.Event()

    def field(self, name):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(name + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def run(self):
        while not self.stop.wait(0.1):
            self.peak_kib = max(self.peak_kib, self.field("VmRSS"))

    def hwm_kib(self):
        return max(self.peak_kib, self.field("VmHWM"))


def alive(w, stats):
    """Fails with airlockd's end and its last words when it died under the load."""
    if w.s.proc.poll() is None:
        return
    notes = [line for line in w.s.stderr().splitlines() if not line.startswith('{"log"')]
    raise Fail("airlockd exited with %r under the load (%d errors, first %s); stderr: %s" % (
        w.s.proc.poll(), stats.n_errors, stats.errors[:2], "\n".join(notes[-8:])))


def export_and_verify(w, tmp, key):
    """The export, checked by `airlock audit verify`, and /v1/audit/verify; the records."""
    st, ctype, body = w.s.raw_get("/v1/audit/export", key)
    check(st == 200 and ctype.startswith("application/x-ndjson"), "export: %d %r" % (st, ctype))
    path = os.path.join(tmp, "export.jsonl")
    with open(path, "wb") as f:
        f.write(body)
    pub = ts.public_key_of(ts.AUDIT_KEY)
    p = subprocess.run([ts.CLI, "audit", "verify", path, "--public-key", pub],
                       capture_output=True, timeout=ts.HANG * 4)
    check(p.returncode == 0, "airlock audit verify: %d %r %r" % (p.returncode, p.stdout,
                                                                 p.stderr))
    records = [json.loads(line) for line in body.decode().splitlines()]
    st, v, _ = w.s.request("GET", "/v1/audit/verify", key=key)
    check(st == 200 and v.get("ok") is True, "/v1/audit/verify: %d %r" % (st, v))
    seqs = [r["seq"] for r in records]
    check(seqs == list(range(1, len(seqs) + 1)),
          "seq is not 1..%d without gaps or repeats" % len(seqs))
    return records


def by_subject(records):
    out = {}
    for r in records:
        out.setdefault(r["subject"], {}).setdefault(r["action"], []).append(r)
    return out


def db_runs(data_dir):
    # SQLite's file, or PostgreSQL's database with AIRLOCK_TEST_DATABASE (test_server.py)
    rows = ts.db_rows(data_dir, "SELECT id, status, outcome FROM runs")
    return {r[0]: (r[1], json.loads(r[2]) if r[2] else None) for r in rows}


# ---------------------------------------------------------------------------------------------
def load(a, tmp):
    w = start_world(tmp)
    try:
        port, pid = w.s.port, w.s.proc.pid
        keys = [w.keys["agent-7"], w.keys["mallory"]]
        stats = Stats()
        stop = threading.Event()
        sampler = RssSampler(pid)
        sampler.start()
        threads = [threading.Thread(target=client, args=(w, port, keys[i % 2], i, stop, stats,
                                                         False), daemon=True)
                   for i in range(a.clients)]
        appr_stop = threading.Event()
        appr = threading.Thread(target=approver, args=(w, port, appr_stop, stats), daemon=True)
        t0 = time.monotonic()
        appr.start()
        for t in threads:
            t.start()
        stop.wait(a.seconds)
        stop.set()
        for t in threads:
            t.join(CLIENT_TIMEOUT + 10)
            check(not t.is_alive(), "a client did not come back")
        elapsed = time.monotonic() - t0
        alive(w, stats)
        # let every acknowledged run end: the approver keeps deciding, wait:false runs finish
        open_runs = {i for i, v in stats.acked.items() if v[2] not in ENDED}
        deadline = time.monotonic() + DRAIN
        while open_runs and time.monotonic() < deadline:
            for run_id in list(open_runs):
                st, doc, _ = w.s.request("GET", "/v1/runs/" + run_id, key=w.keys["eve"])
                check(st == 200, "GET run %s: %d %r" % (run_id, st, doc))
                if doc["status"] in ENDED:
                    open_runs.discard(run_id)
            if open_runs:
                time.sleep(0.05)
        appr_stop.set()
        appr.join(ts.HANG)
        alive(w, stats)
        check(not open_runs, "%d runs did not end within %d s: %r" %
              (len(open_runs), DRAIN, sorted(open_runs)[:5]))
        sampler.stop.set()
        hwm_mib = sampler.hwm_kib() / 1024.0

        records = export_and_verify(w, tmp, w.keys["eve"])
        subj = by_subject(records)
        starts = {r["subject"] for r in records if r["action"] == "run.start"}
        acked = set(stats.acked)
        check(starts == acked, "runs acknowledged != runs in the audit: %d acked, %d run.start, "
              "%d acked without a record, %d records never acknowledged" %
              (len(acked), len(starts), len(acked - starts), len(starts - acked)))
        for run_id, (kind, st, status, apr) in stats.acked.items():
            acts = subj.get(run_id, {})
            check(len(acts.get("run.start", ())) == 1 and len(acts.get("run.end", ())) == 1,
                  "run %s (%s): %d run.start, %d run.end" % (
                      run_id, kind, len(acts.get("run.start", ())),
                      len(acts.get("run.end", ()))))
            if kind == "refund" and status == "awaiting_approval":
                check(acts.get("run.wait") and all(subj.get(x, {}).get("approval.request")
                                                   for x in apr),
                      "run %s: no run.wait or approval.request" % run_id)
        check(w.s.stop() == 0, "airlockd did not exit 0 on SIGTERM")
        rows = db_runs(w.dir)
        # what the audit says a run ended as is what the run is, and a cancel that answered
        # "cancelled" stands
        for run_id, acts in subj.items():
            for r in acts.get("run.end", ()):
                check(rows[run_id][0] == r["details"]["status"],
                      "run %s is %s, its run.end says %s" % (run_id, rows[run_id][0],
                                                            r["details"]["status"]))
        for run_id in stats.cancelled:
            check(rows[run_id][0] == "cancelled", "run %s answered cancelled is now %s" %
                  (run_id, rows[run_id][0]))
        check(set(rows) == acked, "the runs table holds %d runs, %d acknowledged" %
              (len(rows), len(acked)))
        check(all(s in ENDED for s, _ in rows.values()), "a run is left unfinished")

        lat = stats.post_latency
        kinds = {}
        for v in stats.acked.values():
            kinds[v[0]] = kinds.get(v[0], 0) + 1
        print("load: %d clients x %.1f s" % (a.clients, elapsed))
        print("  requests       %d (%.0f/s), by status %s" % (
            stats.requests, stats.requests / elapsed,
            json.dumps(dict(sorted(stats.by_status.items())))))
        print("  runs           %d acknowledged (%.1f runs/s) %s, %d approvals decided" % (
            len(acked), len(acked) / elapsed, json.dumps(dict(sorted(kinds.items()))),
            stats.decided))
        print("  POST /v1/runs  p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d)" % (
            percentile(lat, 50) * 1e3, percentile(lat, 95) * 1e3, percentile(lat, 99) * 1e3,
            max(lat or [0]) * 1e3, len(lat)))
        print("  cancels        %d answered cancelled" % len(stats.cancelled))
        print("  audit          %d records, chain verified (API and CLI)" % len(records))
        print("  errors         %d (connection %d)" % (stats.n_errors, stats.conn_errors))
        print("  airlockd peak RSS %.1f MiB (bound %d MiB)" % (hwm_mib, a.rss_mib))
        for e in stats.errors:
            print("  error: " + e)
        fives = sum(n for s, n in stats.by_status.items() if s >= 500)
        check(fives == 0, "%d 5xx answers" % fives)
        check(stats.n_errors == 0, "%d errors (first: %s)" % (stats.n_errors,
                                                             stats.errors[:1]))
        check(hwm_mib < a.rss_mib, "airlockd peak RSS %.1f MiB over %d MiB" % (hwm_mib,
                                                                              a.rss_mib))
    finally:
        w.close()


def kill9(a, tmp):
    w = start_world(tmp)
    try:
        port = w.s.port
        stats = Stats()
        stop = threading.Event()
        threads = [threading.Thread(target=client, args=(
            w, port, w.keys["agent-7"], i, stop, stats, True), daemon=True)
            for i in range(a.clients)]
        appr = threading.Thread(target=approver, args=(w, port, stop, stats, True), daemon=True)
        appr.start()
        for t in threads:
            t.start()
        stop.wait(a.seconds)
        # What the checks after the restart need, whatever the machine's speed (a deadline
        # only): two refunds answered awaiting approval (the approver decides every second one
        # it sees, so one at least still waits at the kill) ...
        deadline = time.monotonic() + 4 * ts.HANG
        while True:
            with stats.lock:
                waits = sum(1 for v in stats.acked.values()
                            if v[0] == "refund" and v[2] == "awaiting_approval")
            if waits >= 2:
                break
            alive(w, stats)
            check(time.monotonic() < deadline, "%d refunds answered awaiting approval, want 2"
                  % waits)
            time.sleep(0.02)
        # ... and a run executing at the kill: one of the load's slow runs may end (300 ms)
        # between a look and the kill on a busy machine, so the kill waits for a run of its
        # own to be inside its 5 s call (its first, key RUN:1, at the shop and not answered)
        conn = Conn(port, w.keys["agent-7"])
        try:
            st, doc, _ = conn.call("POST", "/v1/runs", {"template": "slow", "input": {"ms": 5000},
                                                         "wait": False})
        finally:
            conn.close()
        check(st == 202 and doc.get("status") in ("running", "queued"),
              "the run executing at the kill: %d %r" % (st, doc))
        with stats.lock:
            stats.acked[doc["id"]] = ("slow", st, doc["status"], ())
        key = doc["id"] + ":1"
        while True:
            calls = w.shop.calls()
            if calls["by_key"].get(key) and not calls["answered_by_key"].get(key):
                break
            check(time.monotonic() < deadline, "run %s's call never reached the shop: %r" %
                  (doc["id"], calls["by_key"].get(key)))
            time.sleep(0.005)
        stop.set()
        w.s.proc.kill()
        w.s.proc.wait(timeout=ts.HANG)
        for t in threads + [appr]:
            t.join(CLIENT_TIMEOUT + 10)
            check(not t.is_alive(), "a client did not come back after the kill")
        for e in stats.errors:
            print("  error: " + e)
        check(stats.n_errors == 0, "%d errors before the kill (first: %s)" %
              (stats.n_errors, stats.errors[:1]))
        answered = dict(stats.acked)
        decided = dict(stats.decided_ids)
        w.s.log.close()
        w.s = w.server(w.dir)
        check(w.s.port, "airlockd did not restart: " + w.s.stderr())

        # a run whose approvals were all decided before the kill resumes at the restart: let
        # those end; nothing else may be running
        deadline = time.monotonic() + ts.HANG
        while True:
            rows = db_runs(w.dir)
            left = [i for i, (s, _) in rows.items() if s in ("running", "queued")]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        check(not left, "runs left running or queued after the restart: %r" % left[:5])
        records = export_and_verify(w, tmp, w.keys["eve"])
        subj = by_subject(records)
        abandoned = {r["subject"] for r in records if r["action"] == "run.abandoned"}
        for run_id, (status, outcome) in rows.items():
            if status == "failed" and outcome and outcome.get("error", {}).get(
                    "code") == "ABORTED":
                check(run_id in abandoned, "run %s failed ABORTED without run.abandoned" %
                      run_id)
        for run_id in abandoned:
            status, outcome = rows[run_id]
            check(status == "failed" and outcome["error"]["code"] == "ABORTED",
                  "abandoned run %s is %s %r" % (run_id, status, outcome))
            check(len(subj[run_id]["run.abandoned"]) == 1, "run %s abandoned twice" % run_id)
        # the runs whose call was in doubt at the kill wait for a person (docs/server.md,
        # "Durable runs"): one of them at least, the 5 s run started above
        in_doubt = {r["subject"] for r in records if r["action"] == "run.wait" and
                    r["details"].get("calls_in_doubt")}
        check(doc["id"] in in_doubt and rows[doc["id"]][0] == "awaiting_approval",
              "the run executing at the kill does not wait for a person: %r" %
              (rows.get(doc["id"]),))
        # a run's first execution is never abandoned: only one resumed after a decision can be
        # (executed again from its continuation when all it sent is idempotent, else ABORTED)
        first = [r for r in abandoned if not subj[r].get("approval.request")]
        check(not first, "runs abandoned at the restart: %r" % first[:5])
        waiting = []
        for run_id, (kind, st, status, apr) in answered.items():
            acts = subj.get(run_id, {})
            check(len(acts.get("run.start", ())) == 1,
                  "answered run %s has %d run.start" % (run_id, len(acts.get("run.start", ()))))
            check(run_id in rows, "answered run %s is not in the runs table" % run_id)
            now = rows[run_id][0]
            if status in ENDED:
                check(len(acts.get("run.end", ())) == 1 and now == status,
                      "run %s answered %s is now %s with %d run.end" %
                      (run_id, status, now, len(acts.get("run.end", ()))))
            elif status == "awaiting_approval":
                check(acts.get("run.wait") and apr and all(
                    subj.get(x, {}).get("approval.request") for x in apr),
                    "run %s: no run.wait or approval.request" % run_id)
                # approved before the kill (an approval whose answer the kill cut off counts:
                # its approval.approve record says it was decided): resumed, and then
                # completed, or waiting for a person to settle its call in doubt
                if any(x in decided or subj.get(x, {}).get("approval.approve") for x in apr):
                    check((now == "completed" and len(acts.get("run.end", ())) == 1) or
                          run_id in in_doubt or run_id in abandoned,
                          "run %s approved before the kill is now %s" %
                          (run_id, now))
                else:
                    check(now == "awaiting_approval",
                          "run %s answered awaiting_approval is now %s" % (run_id, now))
                    waiting.append((run_id, apr))
            else:
                ended = len(acts.get("run.end", ())) == 1 and now == "completed"
                check(ended or run_id in in_doubt,
                      "run %s answered %s is now %s, neither ended nor waiting on its call in "
                      "doubt" % (run_id, status, now))
        check(waiting, "no run was answered awaiting_approval")
        for x, run_id in decided.items():
            check(len(subj.get(x, {}).get("approval.approve", ())) == 1,
                  "approval %s answered approved has no single approval.approve record" % x)
        # runs awaiting approval survive: their approvals are pending; approve a few, each completes
        pending = {x["id"] for x in w.pending()}
        lost = [x for _, apr in waiting for x in apr if x not in pending]
        check(not lost, "approvals of waiting runs no longer pending: %r" % lost[:5])
        # the calls in doubt: approved, each is sent again under its key and its run completes
        doubts = [x for x in w.pending() if x["kind"] == "in_doubt"]
        check({x["run"] for x in doubts} == in_doubt,
              "in_doubt approvals %r for runs in doubt %r" % (doubts[:3], sorted(in_doubt)[:3]))
        for x in doubts:
            w.ok("POST", "/v1/approvals/%s/approve" % x["id"], {"comment": "send it again"},
                 w.keys["bob"])
        for run_id in in_doubt:
            done = w.until(run_id, ENDED, key=w.keys["eve"])
            check(done["status"] == "completed" and
                  (run_id != doc["id"] or done["value"] == "woke"),
                  "run %s in doubt, approved: %r" % (run_id, done))
        for run_id, apr in waiting[:5]:
            for x in apr:
                w.ok("POST", "/v1/approvals/%s/approve" % x, {"comment": "after restart"},
                     w.keys["bob"])
            done = w.until(run_id, ENDED, key=w.keys["eve"])
            check(done["status"] == "completed" and done["value"] == 3,
                  "run %s approved after the restart: %r" % (run_id, done))
        records = export_and_verify(w, tmp, w.keys["eve"])
        check(w.s.stop() == 0, "airlockd did not exit 0 on SIGTERM")
        kinds = {}
        for v in answered.values():
            kinds["%s %s" % (v[0], v[2])] = kinds.get("%s %s" % (v[0], v[2]), 0) + 1
        print("kill9: %d clients, %d runs answered before SIGKILL %s" % (
            a.clients, len(answered), json.dumps(dict(sorted(kinds.items())))))
        print("  after restart: %d runs in the table, %d with a call in doubt, "
              "%d approved before the kill, %d still awaiting approval (%d approved after the "
              "restart and completed), %d audit records verified" % (
                  len(rows), len(in_doubt), len(decided), len(waiting), min(5, len(waiting)),
                  len(records)))
    finally:
        w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlockd", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rss-mib", type=int, default=256)
    ap.add_argument("--kill9", action="store_true")
    ap.add_argument("--sanitize", action="store_true",
                    help="airlockd is an ASan build: its shadow memory counts in RSS, so the "
                         "bound is 4 times --rss-mib")
    a = ap.parse_args()
    if a.sanitize:
        a.rss_mib *= 4
    ts.AIRLOCKD = os.path.abspath(a.airlockd)
    ts.CLI = os.path.abspath(a.cli)
    tmp = tempfile.mkdtemp(prefix="airlockd-load-")
    try:
        (kill9 if a.kill9 else load)(a, tmp)
        print("ok")
        return 0
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
