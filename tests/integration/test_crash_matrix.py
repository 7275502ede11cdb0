#!/usr/bin/env python3
"""The crash matrix of durable runs (docs/server.md "Durable runs"): airlockd killed with a real
SIGKILL at each boundary of a connector call, and every run goes on from its journal.

usage: test_crash_matrix.py --airlockd PATH --cli PATH [-k SUBSTRING]

airlockd must be a test build (CMake option AIRLOCK_FAULT_HOOKS, on for Debug builds): started
with AIRLOCK_CRASH_AT=BOUNDARY:CALL it raises SIGKILL at that point of the guest's call number
CALL (src/server/fault.h):

  before_mark     the call reached airlockd, nothing of it recorded or sent
  after_send      the connector answered it, the answer not journaled
  after_journal   its answer durable in the journal, still held from the guest
  after_delivery  the guest had the answer (its next call arrived)

A 20-call template runs against the shop connector (hosts/shop_connector.py), which counts
every call it receives by idempotency key (RUN:CALL); the function is declared idempotent in
one variant (connector "steps") and not in the other ("once"). On SQLite airlockd is restarted
on the same data; on PostgreSQL (AIRLOCK_TEST_DATABASE set, tests/support/pg_cluster.sh) three
nodes share the database, the one executing the run dies and another takes the run over once
its lease has run out. Every case must end `completed` with 210, or - the call in doubt of a
function not idempotent (after_send) - wait in an approval of kind `in_doubt` (function, args,
connector, sent) which an approver approves: the call is sent again under the same key and the
run completes. In every case no call whose answer was journaled reaches the connector twice,
run.recover is recorded from the right call, and the audit chain verifies.

AIRLOCK_CRASH_MATRIX=full (`make crashtest`): every boundary at calls 1, 10 and 19, both
variants, and a fork killed mid-run. Otherwise (CTest, `make test`) a short matrix: on SQLite
every boundary at call 10 in both variants and the fork; on PostgreSQL every boundary at call 10
with the function not idempotent. Waits poll with deadlines; no verdict depends on timing.
"""
import http.client
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_durable as td  # noqa: E402
import test_nodes as tn  # noqa: E402
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, audit_rows, check, db_rows  # noqa: E402

BOUNDARIES = ("before_mark", "after_send", "after_journal", "after_delivery")
FULL = os.environ.get("AIRLOCK_CRASH_MATRIX") == "full"
STEPS = 20
TOTAL = td.TOTAL
LEASE_MS = 1500
# s: a wait's deadline, never a measure; a takeover waits for a lease to run out
HANG = tn.HANG
ENDED = ("completed", "failed", "cancelled", "denied")


class OneNode:
    """airlockd on SQLite, restarted on the same data after its death."""

    def __init__(self, tmp, crash_at):
        self.w = tr.World(tmp, env_extra={"AIRLOCK_CRASH_AT": crash_at})
        self.victim = self.w.s
        self.dir = self.w.dir
        self.shop = self.w.shop
        self.keys = self.w.keys
        for name, idempotent in (("steps", True), ("once", False)):
            self.w.ok("POST", "/v1/connectors", {
                "name": name, "department": "finance", "url": self.shop.url,
                "signing_secret": tr.SECRET, "timeout_ms": 30000,
                "functions": {"step": {"idempotent": idempotent}}}, self.w.admin, 201)
            self.w.template(name, td.STEPS % name, [name + ".step"])

    def node(self):
        """A live airlockd to ask."""
        return self.w.s

    def ok(self, method, path, body, key, want=200):
        st, doc, _ = self.node().request(method, path, body, key=key)
        check(st == want, "%s %s: %d, want %d: %r" % (method, path, st, want, doc))
        return doc

    def start(self, path, body):
        """Starts a run (or a fork) on the victim without waiting for it; its id."""
        try:
            st, doc, _ = self.victim.request("POST", path, dict(body, wait=False),
                                             key=self.keys["agent-7"])
        except (OSError, http.client.HTTPException):
            return None  # killed before it answered: the caller finds the run in the store
        check(st == 202, "POST %s: %d %r" % (path, st, doc))
        return doc["id"]

    def restart(self):
        self.w.s = ts.Server(self.dir)
        check(self.w.s.port, "airlockd did not start again: " + self.w.s.stderr())

    def recovering_nodes(self):
        return [""]

    def crash_state(self, run_id, template):
        """The run's id (run_id, or the template's run in the store), and the call ids
        journaled for it and the idempotency keys marked sent as the crash left them (nobody
        runs on the data meanwhile)."""
        run_id = run_id or run_of(self, template)
        calls = [int(r[0]) for r in db_rows(self.dir, "SELECT call_id FROM journal WHERE run = ?"
                                            " ORDER BY position", (run_id,))]
        marks = [r[0] for r in db_rows(self.dir, "SELECT idempotency_key FROM calls_sent "
                                       "WHERE run = ?", (run_id,))]
        return run_id, (calls, marks)

    def restart_hooked(self, crash_at):
        """airlockd stopped (SIGTERM) and started again with another crash point."""
        check(self.w.s.stop() == 0, "SIGTERM exit status")
        self.w.s = ts.Server(self.dir, env_extra={"AIRLOCK_CRASH_AT": crash_at})
        check(self.w.s.port, "airlockd did not start again: " + self.w.s.stderr())
        self.victim = self.w.s

    def close(self):
        self.w.close()


class ThreeNodes:
    """Three airlockd on one PostgreSQL database; node a (the victim) has the crash point, and
    the run executes there; b or c takes it over once a's lease has run out."""

    def __init__(self, tmp, crash_at):
        self.c = tn.Cluster(tmp, lease_ms=LEASE_MS,
                            node_env={0: {"AIRLOCK_CRASH_AT": crash_at}})
        self.victim = self.c.nodes[0]
        self.dir = self.c.dirs[0]
        self.shop = self.c.shop
        self.keys = self.c.keys
        a, b, cc = self.c.nodes
        for name, idempotent in (("steps", True), ("once", False)):
            self.c.ok(b, "POST", "/v1/connectors", {
                "name": name, "department": "finance", "url": self.shop.url,
                "signing_secret": tr.SECRET, "timeout_ms": 30000,
                "functions": {"step": {"idempotent": idempotent}}}, self.c.admin, 201)
            self.c.template(name, td.STEPS % name, [name + ".step"])

    def node(self):
        return self.c.nodes[1]

    def ok(self, method, path, body, key, want=200):
        return self.c.ok(self.node(), method, path, body, key, want)

    def start(self, path, body):
        """Starts the run on node a with "wait": true, so that it executes there (a run that
        does not wait goes to the queue, for any node); its client thread gets an error when a
        dies. The run's id comes from the store."""
        victim, key = self.victim, self.keys["agent-7"]

        def go():
            try:
                victim.request("POST", path, dict(body, wait=True), key=key)
            except (OSError, http.client.HTTPException):
                pass  # the node was killed under the request
        threading.Thread(target=go, daemon=True).start()
        return None

    def restart(self):
        pass  # another node takes the run over once the victim's lease has run out

    def recovering_nodes(self):
        return [self.c.node_id(i) for i in (1, 2)]

    def crash_state(self, run_id, template):
        """As OneNode's, read in one statement (the template's newest run), the state only
        while the run is still recorded running on the dead node: once another node has taken
        it over (a busy machine may take longer than the lease to get here), None, and the
        crash state is checked through run.recover's from_call alone."""
        rows = db_rows(self.dir, "SELECT r.id, r.node, r.status, (SELECT string_agg(j.call_id, "
                       "',' ORDER BY j.position) FROM journal j WHERE j.run = r.id) AS calls, "
                       "(SELECT string_agg(m.idempotency_key, ',') FROM calls_sent m WHERE "
                       "m.run = r.id) AS marks FROM runs r WHERE r.template = ? ORDER BY r.seq "
                       "DESC LIMIT 1", (template,))
        check(rows, "no run of %s in the store" % template)
        run_id, node, status, calls, marks = rows[0]
        if node != self.c.node_id(0) or status != "running":
            print("note: run %s taken over before the journal was read; its crash state is "
                  "checked through run.recover alone" % run_id, flush=True)
            return run_id, None
        return run_id, ([int(x) for x in calls.split(",")] if calls else [],
                        marks.split(",") if marks else [])

    def restart_hooked(self, crash_at):
        self.victim.kill()
        self.c.node_env[0] = {"AIRLOCK_CRASH_AT": crash_at}
        self.c.nodes[0] = self.c.start_node(0)
        check(self.c.nodes[0].port, "node a did not restart: " + self.c.nodes[0].stderr())
        self.victim = self.c.nodes[0]

    def close(self):
        self.c.close()


def backend(tmp, crash_at):
    return (ThreeNodes if ts.PG else OneNode)(tmp, crash_at)


def died(be, crash_at):
    """Waits for the victim's SIGKILL by its own crash point."""
    try:
        code = be.victim.proc.wait(timeout=HANG)
    except Exception:  # noqa: BLE001
        raise Fail("airlockd was never killed at %s: %s" % (crash_at, be.victim.stderr()[-2000:]))
    check(code == -9, "airlockd exited with %r, not SIGKILL: %s" % (code,
                                                                  be.victim.stderr()[-2000:]))
    check('{"log":"fault","crash_at":"%s"}' % crash_at in be.victim.stderr(),
          "airlockd was killed, but not by its crash point %s" % crash_at)


def run_of(be, template):
    """The id of the one run of the template (the run the victim was executing)."""
    deadline = time.monotonic() + HANG
    while True:
        rows = db_rows(be.dir, "SELECT id FROM runs WHERE template = ? ORDER BY seq", (template,))
        if rows:
            return rows[-1][0]
        check(time.monotonic() < deadline, "no run of %s in the store" % template)
        time.sleep(0.02)


def counts(be, run_id):
    """{call number: times the connector received it} for the run's calls."""
    got = {}
    for key, n in be.shop.calls()["by_key"].items():
        if key.startswith(run_id + ":"):
            got[int(key.split(":")[1])] = n
    return got


def until(be, run_id, statuses):
    deadline = time.monotonic() + 2 * HANG
    while True:
        doc = be.ok("GET", "/v1/runs/" + run_id, None, be.keys["agent-7"])
        if doc["status"] in statuses:
            return doc
        check(time.monotonic() < deadline, "run %s still %s, want %s" % (run_id, doc["status"],
                                                                          statuses))
        time.sleep(0.05)


def settle_in_doubt(be, run_id, n, connector):
    """The contract of the call in doubt of a function not idempotent (docs/server.md "Durable
    runs"): the run waits for a person in one approval of kind in_doubt showing the call; an
    approver approves it and the run goes on (the call sent again under the same key)."""
    doc = until(be, run_id, ENDED + ("awaiting_approval",))
    check(doc["status"] == "awaiting_approval",
          "call %d in doubt: the run is %s, want awaiting_approval for an in_doubt approval: %r"
          % (n, doc["status"], doc.get("error")))
    items = be.ok("GET", "/v1/approvals?status=pending&run=" + run_id, None, be.keys["bob"])
    check(len(items) == 1, "pending approvals of the run: %r" % items)
    a = items[0]
    check(a["kind"] == "in_doubt" and a["function"] == connector + ".step" and
          a["args"] == [n] and a["connector"] == connector and isinstance(a["sent"], str) and
          a["sent"], "the in_doubt approval: %r" % a)
    be.ok("POST", "/v1/approvals/%s/approve" % a["id"], {"comment": "not done, send it again"},
          be.keys["bob"])


def crash_case(boundary, n, idempotent):
    """One cell of the matrix: the run killed at `boundary` of call n, recovered, checked."""
    connector = "steps" if idempotent else "once"
    crash_at = "%s:%d" % (boundary, n)
    # the calls whose answer is journaled when airlockd dies: the recovery goes on from the next
    from_call = n if boundary in ("before_mark", "after_send") else n + 1
    in_doubt = boundary == "after_send" and not idempotent

    def case(tmp):
        be = backend(tmp, crash_at)
        try:
            run_id = be.start("/v1/runs", {"template": connector, "input": {}})
            died(be, crash_at)
            # what the connector received, then the store: if the store still has the run on
            # the dead node, nothing was sent for it since (a takeover comes first)
            seen = be.shop.calls()
            run_id, at_crash = be.crash_state(run_id, connector)
            key = "%s:%d" % (run_id, n)
            if at_crash is not None:
                calls, marks = at_crash
                check(calls == list(range(1, from_call)),
                      "journaled at the crash: calls %r, want 1-%d" % (calls, from_call - 1))
                if boundary == "before_mark":
                    check(key not in marks, "call %d marked sent before its crash point" % n)
                    check(key not in seen["by_key"], "call %d reached the connector" % n)
                if in_doubt:
                    check(key in marks, "call %d in doubt was not marked sent: %r" % (n, marks))
                if boundary == "after_send":
                    check(seen["by_key"].get(key) == 1 and seen["answered_by_key"].get(key) == 1,
                          "call %d was not sent and answered once before the crash: %r"
                          % (n, seen))
                nxt = "%s:%d" % (run_id, n + 1)
                if boundary in ("after_journal", "after_delivery"):
                    check(nxt not in seen["by_key"], "call %d reached the connector" % (n + 1))
            be.restart()
            if in_doubt:
                settle_in_doubt(be, run_id, n, connector)
            done = until(be, run_id, ENDED)
            check(done["status"] == "completed" and done["value"] == TOTAL,
                  "after the crash at %s: %r" % (crash_at, done))
            check(done["recovered"] == 1 or (in_doubt and done["recovered"] >= 1),
                  "recovered: %r" % done["recovered"])
            # exactly once for every answered call; the call sent before its answer was
            # journaled is sent again under its key (idempotent, or approved by a person)
            want = {i: 1 for i in range(1, STEPS + 1)}
            if boundary == "after_send":
                want[n] = 2
            got = counts(be, run_id)
            check(all(got.get(i) == 1 for i in range(1, from_call)),
                  "a call journaled before the crash reached the connector again: %r" % got)
            check(got == want, "calls by number: %r" % got)
            journaled = {r[0] for r in db_rows(be.dir, "SELECT idempotency_key FROM journal "
                                               "WHERE run = ?", (run_id,))}
            check(journaled == {"%s:%d" % (run_id, i) for i in range(1, STEPS + 1)},
                  "the journal's keys: %r" % journaled)
            sent = be.shop.calls()["args_by_key"]
            check(sent[key][0] == sent[key][-1] == [n], "call %d's arguments: %r" % (n, sent[key]))
            rec = [r["details"] for r in audit_rows(be.dir, "run.recover")
                   if r["subject"] == run_id]
            check(rec and rec[0]["from_call"] == from_call and rec[0]["run"] == run_id and
                  rec[0]["node"] in be.recovering_nodes(),
                  "run.recover: %r, want from_call %d" % (rec, from_call))
            check(be.ok("GET", "/v1/audit/verify", None, be.keys["eve"])["ok"],
                  "the audit chain does not verify")
        finally:
            be.close()
    return case


def t_fork_killed_mid_run_is_recovered(tmp):
    """A fork at call 12 of a completed 20-call run, its airlockd killed once the fork's answer
    to call 15 is journaled: the fork goes on from its own journal (its calls before 12 from the
    original's, never sent), and completes; no call reaches the connector twice."""
    crash_at = "after_journal:15"
    be = backend(tmp, "after_journal:99")  # a point no run here reaches
    try:
        orig = be.start("/v1/runs", {"template": "once", "input": {}})
        orig = orig or run_of(be, "once")
        done = until(be, orig, ENDED)
        check(done["status"] == "completed" and done["value"] == TOTAL, "the original: %r" % done)
        be.restart_hooked(crash_at)
        fork_id = be.start("/v1/runs/%s/fork" % orig, {"at_call": 12})
        died(be, crash_at)
        if not fork_id:
            rows = db_rows(be.dir, "SELECT id FROM runs WHERE forked_from = ?", (orig,))
            check(len(rows) == 1, "forks of the original: %r" % rows)
            fork_id = rows[0][0]
        be.restart()
        done = until(be, fork_id, ENDED)
        check(done["status"] == "completed" and done["value"] == TOTAL and
              done["forked_from"] == orig and done["at_call"] == 12 and done["recovered"] == 1,
              "the fork after the crash: %r" % done)
        check(counts(be, orig) == {i: 1 for i in range(1, STEPS + 1)},
              "the original's calls: %r" % counts(be, orig))
        check(counts(be, fork_id) == {i: 1 for i in range(12, STEPS + 1)},
              "the fork's calls: %r" % counts(be, fork_id))
        rec = [r["details"] for r in audit_rows(be.dir, "run.recover") if r["subject"] == fork_id]
        check(len(rec) == 1 and rec[0]["from_call"] == 16 and
              rec[0]["node"] in be.recovering_nodes(), "run.recover: %r" % rec)
        check(be.ok("GET", "/v1/audit/verify", None, be.keys["eve"])["ok"],
              "the audit chain does not verify")
    finally:
        be.close()


def matrix():
    calls = (1, 10, 19) if FULL else (10,)
    if ts.PG and not FULL:
        variants = (False,)
    else:
        variants = (True, False)
    tests = []
    for boundary in BOUNDARIES:
        for n in calls:
            for idempotent in variants:
                name = "%s_%d_%s" % (boundary, n, "idempotent" if idempotent else "not_idempotent")
                tests.append((name, crash_case(boundary, n, idempotent)))
    tests.append(("fork_killed_mid_run_is_recovered", t_fork_killed_mid_run_is_recovered))
    return tests


def main():
    started = time.monotonic()
    rc = ts.run_tests(matrix(), "airlockd-crash-matrix-")
    print("%s matrix on %s: %.0f s" % ("full" if FULL else "short", "PostgreSQL" if ts.PG else
                                       "SQLite", time.monotonic() - started))
    return rc


if __name__ == "__main__":
    sys.exit(main())
