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
# calls 1-8, those named in input.asks to the sensitive `ask` (each waits for a person)
ASKS = """
let total = 0;
for (let i = 1; i <= 8; i++) {
    total += await (input.asks.includes(i) ? %s.ask(i) : %s.step(i));
}
return total;
"""
# the steps of `once`, each call's throw caught and returned: what a denied call in doubt gives
DOUBT = """
let total = 0;
for (let i = 1; i <= 20; i++) {
    try {
        total += await once.step(i);
    } catch (e) {
        return "call " + i + " threw: " + e.message;
    }
}
return total;
"""


def world(tmp):
    w = tr.World(tmp)
    for name, idempotent in (("steps", True), ("once", False)):
        w.ok("POST", "/v1/connectors", {
            "name": name, "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": idempotent,
                                   "result_schema": {"type": "integer"}},
                          "ask": {"idempotent": idempotent, "sensitive": True,
                                  "result_schema": {"type": "integer"}}}}, w.admin, 201)
        w.template(name, STEPS % name, [name + ".step"],
                   limits={"cpu_ms": 600000, "timeout_ms": 600000})
        w.template("asks-" + name, ASKS % (name, name), [name + ".step", name + ".ask"],
                   limits={"cpu_ms": 600000, "timeout_ms": 600000})
    w.template("doubt", DOUBT, ["once.step"], limits={"cpu_ms": 600000, "timeout_ms": 600000})
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


def in_doubt(w, run_id, key=None):
    """The run, killed at call 10 of a function not idempotent, waits for a person: one pending
    approval of kind in_doubt showing the call. Returns that approval."""
    doc = w.until(run_id, ("awaiting_approval", "completed", "failed", "cancelled"),
                  key=w.keys[key] if key else None)
    check(doc["status"] == "awaiting_approval", "after the restart: %r" % doc)
    got = w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])
    check(len(got) == 1, "approvals: %r" % got)
    a = got[0]
    check(a["kind"] == "in_doubt" and a["status"] == "pending" and a["run"] == run_id and
          a["function"] == "once.step" and a["args"] == [10] and a["connector"] == "once" and
          a["idempotency_key"] == run_id + ":10" and a["call"] == 10 and a["result"] is None and
          a["requested_by"] == (key or "agent-7") and doc["approvals"] == [a["id"]],
          "the in_doubt approval: %r" % a)
    check(len(a["sent"]) == 24 and a["sent"].endswith("Z") and a["sent"][10] == "T",
          "sent is no RFC 3339 time: %r" % a["sent"])
    check(a["id"] in [x["id"] for x in w.ok("GET", "/v1/approvals?status=pending", None,
                                            w.keys["carol"])], "not in carol's inbox")
    waits = [r["details"] for r in audit_rows(w.dir, "run.wait") if r["subject"] == run_id]
    check(len(waits) == 1 and waits[0]["approvals"] == [a["id"]] and
          [c["idempotency_key"] for c in waits[0]["calls_in_doubt"]] == [run_id + ":10"],
          "run.wait: %r" % waits)
    asked = [r["details"] for r in audit_rows(w.dir, "approval.request") if r["subject"] == a["id"]]
    check(len(asked) == 1 and asked[0]["kind"] == "in_doubt" and asked[0]["args"] == [10],
          "approval.request: %r" % asked)
    check(counts(w, run_id) == {i: 1 for i in range(1, 11)}, "calls: %r" % counts(w, run_id))
    return a


def decide(w, a, verb, body, key, want=200):
    return w.ok("POST", "/v1/approvals/%s/%s" % (a["id"], verb), body, w.keys[key], want)


def t_call_in_doubt_approved_is_sent_again(tmp):
    """(b) the same with a function not marked idempotent: the run waits for a person; the
    starter (an agent) and an auditor cannot decide; approved, call 10 is sent again under the
    same key and the run completes."""
    w = world(tmp)
    try:
        arm(w, 10)
        run_id = start(w, "doubt")
        died(w)
        a = in_doubt(w, run_id)
        for who in ("agent-7", "eve", "agent-9"):
            st, doc, _ = w.s.request("POST", "/v1/approvals/%s/approve" % a["id"], {},
                                     key=w.keys[who])
            check(st == 403, "%s approving: %d %r" % (who, st, doc))
        got = decide(w, a, "approve", {"comment": "not at the shop: send it"}, "bob")
        check(got["status"] == "approved" and got["decided_by"] == "bob", "approved: %r" % got)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == TOTAL, "after: %r" % done)
        want = {i: 1 for i in range(1, 21)}
        want[10] = 2  # sent again, under the same key: the shop counts it by key
        check(counts(w, run_id) == want, "calls by number: %r" % counts(w, run_id))
        check([r["from_call"] for r in recover_records(w, run_id)] == [10],
              "run.recover: %r" % recover_records(w, run_id))
        check(done["recovered"] == 1, "recovered: %r" % done["recovered"])
        decided = [r for r in audit_rows(w.dir, "approval.approve") if r["subject"] == a["id"]]
        check(len(decided) == 1 and decided[0]["actor"] == "bob" and
              decided[0]["details"]["kind"] == "in_doubt", "approval.approve: %r" % decided)
        verifies(w)
    finally:
        w.close()


def t_call_in_doubt_denied_throws_in_the_guest(tmp):
    """Denied, the guest's call 10 throws Error("in doubt: COMMENT") and the run goes on (the
    template catches it); nothing is sent again. Its starter, an approver too, is refused (four
    eyes)."""
    w = world(tmp)
    try:
        arm(w, 10)
        st, doc = w.run({"template": "doubt", "input": {}, "wait": False},
                        key=w.keys["mallory"], want=202)
        run_id = doc["id"]
        died(w)
        a = in_doubt(w, run_id, key="mallory")
        st, doc, _ = w.s.request("POST", "/v1/approvals/%s/deny" % a["id"], {},
                                 key=w.keys["mallory"])
        check(st == 409 and "four eyes" in doc["error"]["message"], "mallory: %d %r" % (st, doc))
        got = decide(w, a, "deny", {"comment": "it went through at the shop"}, "carol")
        check(got["status"] == "denied", "denied: %r" % got)
        done = w.until(run_id, ("completed", "failed", "cancelled"), key=w.keys["mallory"])
        check(done["status"] == "completed" and
              done["value"] == "call 10 threw: in doubt: it went through at the shop",
              "after: %r" % done)
        check(counts(w, run_id) == {i: 1 for i in range(1, 11)}, "calls: %r" % counts(w, run_id))
        verifies(w)
    finally:
        w.close()


def t_call_in_doubt_answered_returns_the_value(tmp):
    """Answered, the guest's call 10 returns the value given, nothing is sent again, and the run
    goes on live from call 11. A result that breaks the function's result_schema, or an answer
    to an approval of another kind, is refused."""
    w = world(tmp)
    try:
        arm(w, 10)
        run_id = start(w, "doubt")
        died(w)
        a = in_doubt(w, run_id)
        decide(w, a, "answer", {"result": "ten"}, "bob", 400)
        decide(w, a, "answer", {"comment": "no result"}, "bob", 400)
        decide(w, a, "answer", {"result": 1000}, "agent-7", 403)
        got = decide(w, a, "answer", {"result": 1000, "comment": "the shop says 1000"}, "bob")
        check(got["status"] == "answered" and got["result"] == 1000 and
              got["comment"] == "the shop says 1000", "answered: %r" % got)
        decide(w, a, "approve", {}, "carol", 409)  # decided once
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == TOTAL - 10 + 1000,
              "after: %r" % done)
        check(counts(w, run_id) == {i: 1 for i in range(1, 21)}, "calls: %r" % counts(w, run_id))
        rows = [r for r in audit_rows(w.dir, "approval.answer") if r["subject"] == a["id"]]
        check(len(rows) == 1 and rows[0]["actor"] == "bob" and rows[0]["details"]["result"] == 1000
              and rows[0]["details"]["decision"] == "answered", "approval.answer: %r" % rows)
        # a sensitive call's approval is approved or denied, never answered
        w.template("refund", "return await shop.refund(7, 1);", ["shop.refund"])
        st, doc = w.run({"template": "refund", "input": {}}, want=202)
        ask = w.ok("GET", "/v1/approvals?run=" + doc["id"], None, w.keys["bob"])[0]
        check(ask["kind"] == "host_call" and "connector" not in ask, "host_call: %r" % ask)
        decide(w, ask, "answer", {"result": 1}, "bob", 409)
        check(w.ok("GET", "/v1/approvals?run=" + doc["id"], None, w.keys["bob"])[0]["status"] ==
              "pending", "the refused answer decided it")
        verifies(w)
    finally:
        w.close()


# each call's answer described as the guest sees it, a throw caught
DESCRIBE = """
let out = [];
for (let i = 1; i <= 3; i++) {
    try {
        const v = await once.step(i);
        out.push(typeof v === "object" && v ? Object.prototype.toString.call(v) : typeof v);
    } catch (e) {
        out.push("threw: " + e.message);
    }
}
return out;
"""


def t_answer_that_is_no_boundary_value_is_refused(tmp):
    """An answer's result is decoded as the guest would be handed it (docs/values.md) before it
    is accepted: an unknown tag, a reference to nothing or bad base64 is 400 INVALID_REQUEST
    naming why, and the approval stays pending; a tagged value that decodes is answered and the
    guest gets it (a Map), even for a function with no result_schema."""
    w = tr.World(tmp)
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "once", "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000, "functions": {"step": {}}},
            w.admin, 201)
        w.template("loose", DESCRIBE, ["once.step"])
        arm(w, 2)
        run_id = start(w, "loose")
        died(w)
        doc = w.until(run_id, ("awaiting_approval", "completed", "failed", "cancelled"))
        check(doc["status"] == "awaiting_approval", "after the restart: %r" % doc)
        a = w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])[0]
        check(a["kind"] == "in_doubt" and a["call"] == 2, "the approval: %r" % a)
        for bad, why in (({"$type": "nope"}, 'unknown tag "nope"'),
                         ({"$type": "ref", "path": [0, 1, 2]}, "reference to nothing"),
                         ({"$type": "arraybuffer", "base64": "!!!"}, "bad base64")):
            st, got, _ = w.s.request("POST", "/v1/approvals/%s/answer" % a["id"],
                                     {"result": bad}, key=w.keys["bob"])
            check(st == 400 and got["error"]["code"] == "INVALID_REQUEST" and
                  "not a boundary value" in got["error"]["message"] and
                  why in got["error"]["message"], "answer %r: %d %r" % (bad, st, got))
            check(w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])[0]["status"]
                  == "pending", "a refused answer decided it")
        check(not [r for r in audit_rows(w.dir, "approval.answer") if r["subject"] == a["id"]],
              "a refused answer was recorded")
        got = decide(w, a, "answer", {"result": {"$type": "map", "entries": [[1, 2]]}}, "bob")
        check(got["status"] == "answered", "answered: %r" % got)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and
              done["value"] == ["number", "[object Map]", "number"], "after: %r" % done)
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
                # resumed, and held at the next armed step. With SQLite the recovery is counted
                # before airlockd listens; on PostgreSQL the restarted node queues the run and
                # counts it when it claims it, which may come after it listens
                deadline = time.monotonic() + ts.HANG
                doc = w.get(run_id)
                while doc["recovered"] < n and time.monotonic() < deadline:
                    time.sleep(0.05)
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


def asked(w, run_id, asks):
    """Starts template asks-CONNECTOR, waits for its approval of call `asks`, approves it (bob)
    and returns the approval."""
    deadline = time.monotonic() + ts.HANG * 4
    while True:
        doc = w.get(run_id)
        check(doc["status"] not in ("completed", "failed", "cancelled"),
              "before call %d: %r" % (asks, doc))
        got = [a for a in w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])
               if a["status"] == "pending"]
        if doc["status"] == "awaiting_approval" and got:
            break
        check(time.monotonic() < deadline, "call %d never asked: %r" % (asks, doc))
        time.sleep(0.05)
    check(len(got) == 1 and got[0]["kind"] == "host_call" and got[0]["args"] == [asks],
          "approvals: %r" % got)
    decide(w, got[0], "approve", {"comment": "yes"}, "bob")
    return got[0]


def start_asks(w, connector, asks):
    st, doc = w.run({"template": "asks-" + connector, "input": {"asks": asks}, "wait": False},
                    want=202)
    return doc["id"]


def sent(w, run_id):
    """{call number: times the shop received it}, under RUN:N or, for an approved sensitive
    call, under its interruption id (the world runs no other run), and {call number: keys}."""
    got, keys = {}, {}
    for key, args in w.shop.calls()["args_by_key"].items():
        if key.startswith(run_id + ":") or ":" not in key:
            got[args[0][0]] = got.get(args[0][0], 0) + len(args)
            keys.setdefault(args[0][0], set()).add(key)
    return got, keys


def journal_of(w, run_id):
    """The run's journal: [(position, call, idempotency key)] in position order."""
    return [(int(p), int(c), k) for p, c, k in db_rows(
        w.dir, "SELECT position, call_id, idempotency_key FROM journal WHERE run = ? "
        "ORDER BY position", (run_id,))]


def host_calls_asked(w, run_id):
    return [a for a in w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])
            if a["kind"] == "host_call"]


def t_resumed_run_killed_goes_on_from_its_journal(tmp):
    """A run resumed after its sensitive call 4 was approved, airlockd killed when call 6 reaches
    the connector: after the restart it goes on from its journal (both legs' answers, positions
    1-5 in one journal, call 4's under its interruption id), calls 1-5 are never sent again, call
    6 is sent again under its key, nobody is asked again."""
    w = world(tmp)
    try:
        arm(w, 6)
        run_id = start_asks(w, "steps", [4])
        a = asked(w, run_id, 4)
        died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 36 and done["recovered"] == 1,
              "after the restart: %r" % done)
        got, keys = sent(w, run_id)
        want = {i: 1 for i in range(1, 9)}
        want[6] = 2
        check(got == want, "calls by number: %r" % got)
        (interruption,) = keys[4]
        check(not interruption.startswith(run_id), "call 4's key: %r" % keys[4])
        check(journal_of(w, run_id) == [(i, i, interruption if i == 4 else "%s:%d" % (run_id, i))
                                        for i in range(1, 9)],
              "the journal: %r" % journal_of(w, run_id))
        check([r["from_call"] for r in recover_records(w, run_id)] == [6],
              "run.recover: %r" % recover_records(w, run_id))
        check([x["id"] for x in host_calls_asked(w, run_id)] == [a["id"]], "asked again")
        verifies(w)
    finally:
        w.close()


def t_resumed_run_killed_at_its_approved_call(tmp):
    """The hard case: killed after call 4 was approved and sent, before its answer was
    journaled. Idempotent, it is sent again under the same key (its interruption id, one key for
    both sends) - the decision is kept, nobody is asked again - and the run completes."""
    w = world(tmp)
    try:
        arm(w, 4)
        run_id = start_asks(w, "steps", [4])
        a = asked(w, run_id, 4)
        died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 36 and done["recovered"] == 1,
              "after the restart: %r" % done)
        got, keys = sent(w, run_id)
        want = {i: 1 for i in range(1, 9)}
        want[4] = 2
        check(got == want and len(keys[4]) == 1, "calls by number: %r %r" % (got, keys))
        (interruption,) = keys[4]
        # an approved sensitive call is marked, idempotent or not: listed as retried
        retried = [r["details"] for r in audit_rows(w.dir, "run.retried")
                   if r["subject"] == run_id]
        check(len(retried) == 1 and [c["idempotency_key"] for c in
                                     retried[0]["calls_retried"]] == [interruption],
              "run.retried: %r" % retried)
        check([r["from_call"] for r in recover_records(w, run_id)] == [4],
              "run.recover: %r" % recover_records(w, run_id))
        check([x["id"] for x in host_calls_asked(w, run_id)] == [a["id"]], "asked again")
        verifies(w)
    finally:
        w.close()


def t_resumed_run_killed_at_its_approved_call_not_idempotent(tmp):
    """The same with call 4 not idempotent: a person settles it (in_doubt, call 4 under its
    interruption id); answered, the guest's call returns the value and nothing is sent again."""
    w = world(tmp)
    try:
        arm(w, 4)
        run_id = start_asks(w, "once", [4])
        a = asked(w, run_id, 4)
        died(w)
        doc = w.until(run_id, ("awaiting_approval", "completed", "failed", "cancelled"))
        check(doc["status"] == "awaiting_approval", "after the restart: %r" % doc)
        got, keys = sent(w, run_id)
        (interruption,) = keys[4]
        doubt = [x for x in w.ok("GET", "/v1/approvals?run=" + run_id, None, w.keys["bob"])
                 if x["status"] == "pending"]
        check(len(doubt) == 1 and doubt[0]["kind"] == "in_doubt" and
              doubt[0]["function"] == "once.ask" and doubt[0]["args"] == [4] and
              doubt[0]["call"] == 4 and doubt[0]["idempotency_key"] == interruption,
              "the in_doubt approval: %r" % doubt)
        decide(w, doubt[0], "answer", {"result": 400, "comment": "the shop says 400"}, "bob")
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 36 - 4 + 400 and
              done["recovered"] == 1, "after the answer: %r" % done)
        got, keys = sent(w, run_id)
        check(got == {i: 1 for i in range(1, 9)}, "calls by number: %r" % got)
        check([x["id"] for x in host_calls_asked(w, run_id)] == [a["id"]], "asked again")
        verifies(w)
    finally:
        w.close()


def t_run_resumed_twice_killed_goes_on_from_its_journal(tmp):
    """A run that interrupts at call 4, is resumed, interrupts again at call 7, is resumed
    again and killed when call 8 reaches the connector: recovered from its journal (positions
    1-7 from three legs), only call 8 sent again."""
    w = world(tmp)
    try:
        arm(w, 8)
        run_id = start_asks(w, "steps", [4, 7])
        first = asked(w, run_id, 4)
        second = asked(w, run_id, 7)
        died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 36 and done["recovered"] == 1,
              "after the restart: %r" % done)
        got, keys = sent(w, run_id)
        want = {i: 1 for i in range(1, 9)}
        want[8] = 2
        check(got == want, "calls by number: %r" % got)
        check([(p, c) for p, c, _ in journal_of(w, run_id)] == [(i, i) for i in range(1, 9)],
              "the journal: %r" % journal_of(w, run_id))
        check([r["from_call"] for r in recover_records(w, run_id)] == [8],
              "run.recover: %r" % recover_records(w, run_id))
        check(sorted(x["id"] for x in host_calls_asked(w, run_id)) ==
              sorted([first["id"], second["id"]]), "asked again")
        verifies(w)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-durable-")


if __name__ == "__main__":
    sys.exit(main())
