#!/usr/bin/env python3
"""Durable runs: airlockd killed with SIGKILL in the middle of a 20-call run, restarted on the
same data (SQLite, or PostgreSQL under tests/support/pg_cluster.sh), and the run goes on from its
journal - its answered calls never sent again (docs/server.md "Durable runs").

usage: test_durable.py --airlockd PATH --cli PATH [-k SUBSTRING]

The shop connector (hosts/shop_connector.py) counts every call it receives by idempotency key
and, armed with airlockd's pid (GET /kill/PID/I), SIGKILLs airlockd when step I arrives and never
answers it: that call was sent, its answer never journaled. Waiting polls with deadlines.
"""
import json
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, audit_rows, check, db_rows  # noqa: E402

STEPS = """
let total = 0;
for (let i = 1; i <= 20; i++) {
    total += await %s.step(i);
    if (i === input.spin_at) {
        let x = 0;
        for (let k = 0; k < input.spin; k++) { x = (x + k) %% 7; }
        total += x * 0;
    }
}
return total;
"""
TOTAL = 210


def world(tmp):
    w = tr.World(tmp)
    for name, idempotent in (("steps", True), ("once", False)):
        w.ok("POST", "/v1/connectors", {
            "name": name, "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": idempotent}}}, w.admin, 201)
        w.template(name, STEPS % name, [name + ".step"],
                   limits={"cpu_ms": 600000, "timeout_ms": 600000})
    return w


def arm(w, at, pid=None):
    """Step `at` SIGKILLs airlockd (pid: this one; 0: the one given next) when it arrives."""
    with urllib.request.urlopen("%skill/%d/%d" % (w.shop.url, w.s.proc.pid if pid is None
                                                  else pid, at), timeout=ts.HANG) as r:
        r.read()


def start(w, template, spin_at=0, spin=0):
    st, doc = w.run({"template": template, "input": {"spin_at": spin_at, "spin": spin},
                     "wait": False}, want=202)
    return doc["id"]


def died(w):
    """Waits for airlockd to be gone (SIGKILLed), then starts it again on the same data."""
    try:
        code = w.s.proc.wait(timeout=ts.HANG * 4)
    except Exception:  # noqa: BLE001
        raise Fail("airlockd was never killed")
    check(code == -9, "airlockd exited with %r, not SIGKILL" % code)
    w.s = ts.Server(w.dir)
    check(w.s.port, "airlockd did not start again: " + w.s.stderr())


def counts(w, run_id):
    """{call number: times the shop received it} for the run's calls."""
    got = {}
    for key, n in w.shop.calls()["by_key"].items():
        if key.startswith(run_id + ":"):
            got[int(key.split(":")[1])] = n
    return got


def verifies(w):
    check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the audit chain does not verify")


def recover_records(w, run_id):
    return [r["details"] for r in audit_rows(w.dir, "run.recover") if r["subject"] == run_id]


def t_idempotent_call_in_doubt_is_sent_again(tmp):
    """(a) killed when call 10 reaches the connector: after the restart calls 1-9 are replayed
    from the journal, call 10 is sent again with the same key, the run completes."""
    w = world(tmp)
    try:
        arm(w, 10)
        run_id = start(w, "steps")
        died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == TOTAL,
              "after the restart: %r" % done)
        check(done["recovered"] == 1, "recovered: %r" % done["recovered"])
        got = counts(w, run_id)
        want = {i: 1 for i in range(1, 21)}
        want[10] = 2
        check(got == want, "calls by number: %r" % got)
        rec = recover_records(w, run_id)
        check(len(rec) == 1 and rec[0]["from_call"] == 10 and rec[0]["run"] == run_id and
              "node" in rec[0], "run.recover: %r" % rec)
        # a call of a function marked idempotent is not marked sent: run.recover's from_call
        # names it, and no call is listed as retried
        retried = [r["details"] for r in audit_rows(w.dir, "run.retried")
                   if r["subject"] == run_id]
        check(len(retried) == 1 and retried[0]["calls_retried"] == [],
              "run.retried: %r" % retried)
        check(not db_rows(w.dir, "SELECT run FROM calls_sent"), "an idempotent call was marked")
        verifies(w)
    finally:
        w.close()


def t_call_in_doubt_not_idempotent_aborts(tmp):
    """(b) the same with a function not marked idempotent: the run ends ABORTED naming call 10
    in doubt; calls 1-9 reached the connector once and are not in doubt."""
    w = world(tmp)
    try:
        arm(w, 10)
        run_id = start(w, "once")
        died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "failed" and done["error"]["code"] == "ABORTED",
              "after the restart: %r" % done)
        rows = [r["details"] for r in audit_rows(w.dir, "run.abandoned") if r["subject"] == run_id]
        check(len(rows) == 1, "run.abandoned: %r" % rows)
        doubt = [c["idempotency_key"] for c in rows[0]["calls_in_doubt"]]
        check(doubt == [run_id + ":10"], "calls_in_doubt: %r" % rows[0])
        got = counts(w, run_id)
        check(got == {i: 1 for i in range(1, 11)}, "calls by number: %r" % got)
        check(done["recovered"] == 0, "recovered: %r" % done["recovered"])
        verifies(w)
    finally:
        w.close()


def t_killed_after_an_answer_was_delivered(tmp):
    """(c) killed while the guest computes after call 10's answer was journaled and delivered:
    every call reaches the connector exactly once."""
    w = world(tmp)
    try:
        run_id = start(w, "once", spin_at=10, spin=50_000_000)
        deadline = time.monotonic() + ts.HANG * 4
        while True:
            n = db_rows(w.dir, "SELECT count(*) FROM journal WHERE run = ?", (run_id,))[0][0]
            if n >= 10:
                break
            check(time.monotonic() < deadline, "the journal never had 10 answers (%d)" % n)
            time.sleep(0.01)
        before = counts(w, run_id)
        w.s.proc.kill()
        w.s.proc.wait(timeout=ts.HANG)
        w.s = ts.Server(w.dir)
        check(w.s.port, "airlockd did not start again: " + w.s.stderr())
        done = until(w, run_id)
        check(done["status"] == "completed" and done["value"] == TOTAL,
              "after the restart: %r (calls before the kill: %r)" % (done, before))
        got = counts(w, run_id)
        check(got == {i: 1 for i in range(1, 21)}, "calls by number: %r" % got)
        check(done["recovered"] == 1, "recovered: %r" % done["recovered"])
        verifies(w)
    finally:
        w.close()


def until(w, run_id):
    """As World.until, with room for a guest that computes for a while."""
    deadline = time.monotonic() + ts.HANG * 8
    while True:
        doc = w.get(run_id)
        if doc["status"] in ("completed", "failed", "cancelled"):
            return doc
        check(time.monotonic() < deadline, "run %s still %s" % (run_id, doc["status"]))
        time.sleep(0.05)


def t_fourth_recovery_ends_the_run(tmp):
    """(e) a run killed four times: three recoveries, each recorded and counted, and the fourth
    ends it failed ABORTED instead of looping."""
    w = world(tmp)
    try:
        arm(w, 2)
        for at in (4, 6, 8):
            arm(w, at, pid=0)  # each waits for the pid of the airlockd it kills
        run_id = start(w, "steps")
        for n in range(1, 5):
            died(w)
            if n < 4:
                # resumed (counted before airlockd listens), and held at the next armed step
                doc = w.get(run_id)
                check(doc["recovered"] == n, "recovered after kill %d: %r" % (n, doc))
                arm(w, 0)  # that step kills this airlockd
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "failed" and done["error"]["code"] == "ABORTED",
              "after the fourth kill: %r" % done)
        check(done["recovered"] == 3, "recovered: %r" % done["recovered"])
        rec = recover_records(w, run_id)
        check([r["from_call"] for r in rec] == [2, 4, 6], "run.recover: %r" % rec)
        got = counts(w, run_id)
        want = {i: 1 for i in range(1, 9)}
        for i in (2, 4, 6, 8):
            want[i] = 2
        want[8] = 1  # the fourth kill's call is never sent again
        check(got == want, "calls by number: %r" % got)
        verifies(w)
    finally:
        w.close()


def t_drain_past_its_grace_hands_the_run_back(tmp):
    """A SIGTERM drain whose grace runs out while call 10 is at the connector hands the run
    back instead of cancelling it: the next start (or another node) goes on from its journal."""
    w = tr.World(tmp, config={"runs": {"drain_grace_ms": 0}})
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "steps", "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": True}}}, w.admin, 201)
        w.template("steps", STEPS % "steps", ["steps.step"])
        with urllib.request.urlopen(w.shop.url + "hold/10", timeout=ts.HANG) as r:
            r.read()
        run_id = start(w, "steps")
        deadline = time.monotonic() + ts.HANG
        while 10 not in counts(w, run_id):
            check(time.monotonic() < deadline, "call 10 never reached the connector")
            time.sleep(0.02)
        check(w.s.stop() == 0, "SIGTERM exit status")
        w.shop.open("step-10")
        stopped = w.s.stderr()
        w.s = ts.Server(w.dir)
        check(w.s.port, "airlockd did not start again: " + w.s.stderr())
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == TOTAL and
              done["recovered"] == 1, "after the drain: %r (%s)" % (done, stopped[-2000:]))
        got = counts(w, run_id)
        want = {i: 1 for i in range(1, 21)}
        want[10] = 2
        check(got == want, "calls by number: %r" % got)
        check([r["from_call"] for r in recover_records(w, run_id)] == [10],
              "run.recover: %r" % recover_records(w, run_id))
        verifies(w)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-durable-")


if __name__ == "__main__":
    sys.exit(main())
