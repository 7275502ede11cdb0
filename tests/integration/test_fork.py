#!/usr/bin/env python3
"""Forks of durable runs: POST /v1/runs/{id}/fork {"at_call": N, "input"} starts a new run of the
same approved version whose calls before N are answered from the original's journal (never sent
again) and whose calls from N on run live (docs/server.md "Durable runs").

usage: test_fork.py --airlockd PATH --cli PATH [-k SUBSTRING]

The shop connector (hosts/shop_connector.py) counts every call it receives by idempotency key
(RUN:CALL), so a test sees which calls of which run reached it. Waiting polls with deadlines.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_durable as td  # noqa: E402
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import audit_rows, check  # noqa: E402

# Five sequential calls; each carries a tag drawn from Math.random, so a replay with another
# seed than the original's diverges at call 1.
FIVE = """
const tag = Math.floor(Math.random() * 1e9);
let total = 0;
for (let i = 1; i <= 5; i++) {
    total += await steps.step(i * (input.k || 1), tag);
}
return total;
"""


def world(tmp):
    w = tr.World(tmp)
    w.ok("POST", "/v1/connectors", {
        "name": "steps", "department": "finance", "url": w.shop.url,
        "signing_secret": tr.SECRET, "timeout_ms": 30000,
        "functions": {"step": {"idempotent": True}}}, w.admin, 201)
    w.template("five", FIVE, ["steps.step"])
    # another agent of finance: agent-7's runs are not its to see
    w.keys["agent-8"] = w.ok("POST", "/v1/principals", {"name": "agent-8", "kind": "user"},
                             w.admin, 201)["key"]
    w.ok("POST", "/v1/principals/agent-8/roles", {"role": "agent", "department": "finance"},
         w.admin, 201)
    return w


def original(w):
    st, doc = w.run({"template": "five", "input": {}}, want=200)
    check(doc["status"] == "completed" and doc["value"] == 15, "the original: %r" % doc)
    check(td.counts(w, doc["id"]) == {i: 1 for i in range(1, 6)},
          "the original's calls: %r" % td.counts(w, doc["id"]))
    return doc["id"]


def fork(w, run_id, body, key=None):
    st, doc, _ = w.s.request("POST", "/v1/runs/%s/fork" % run_id, body,
                             key=key or w.keys["agent-7"])
    return st, doc


def t_fork_replays_calls_before_at_call(tmp):
    """Forked at call 3: the same value, calls 1-2 answered from the original's journal and
    never sent again, calls 3-5 sent for the fork; forked_from and at_call in its JSON and its
    run.start record; the original's calls are not sent again either."""
    w = world(tmp)
    try:
        run_id = original(w)
        st, doc = fork(w, run_id, {"at_call": 3})
        check(st == 200 and doc["status"] == "completed" and doc["value"] == 15,
              "fork at 3: %d %r" % (st, doc))
        fork_id = doc["id"]
        check(fork_id != run_id, "the fork is the original")
        check(doc["forked_from"] == run_id and doc["at_call"] == 3, "fork's object: %r" % doc)
        got = w.get(fork_id)
        check(got["forked_from"] == run_id and got["at_call"] == 3 and got["template"] == "five",
              "GET the fork: %r" % got)
        orig = w.get(run_id)
        check(orig["forked_from"] is None and orig["at_call"] is None, "the original: %r" % orig)
        check(td.counts(w, fork_id) == {3: 1, 4: 1, 5: 1},
              "the fork's calls: %r" % td.counts(w, fork_id))
        check(td.counts(w, run_id) == {i: 1 for i in range(1, 6)},
              "the original's calls after the fork: %r" % td.counts(w, run_id))
        starts = [r for r in audit_rows(w.dir, "run.start") if r["subject"] == fork_id]
        check(len(starts) == 1 and starts[0]["details"]["forked_from"] == run_id and
              starts[0]["details"]["at_call"] == 3 and starts[0]["actor"] == "agent-7",
              "the fork's run.start: %r" % starts)
        plain = [r for r in audit_rows(w.dir, "run.start") if r["subject"] == run_id]
        check(len(plain) == 1 and "forked_from" not in plain[0]["details"],
              "the original's run.start: %r" % plain)
        # past the last call: every call replayed, nothing sent
        st, doc = fork(w, run_id, {"at_call": 6})
        check(st == 200 and doc["status"] == "completed" and doc["value"] == 15,
              "fork at 6: %d %r" % (st, doc))
        check(td.counts(w, doc["id"]) == {}, "fork at 6 sent %r" % td.counts(w, doc["id"]))
        # without waiting: answered 202, then completes
        st, doc = fork(w, run_id, {"at_call": 2, "wait": False})
        check(st == 202 and doc["forked_from"] == run_id, "fork without wait: %d %r" % (st, doc))
        done = w.until(doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 15, "fork at 2: %r" % done)
        check(td.counts(w, doc["id"]) == {2: 1, 3: 1, 4: 1, 5: 1},
              "fork at 2's calls: %r" % td.counts(w, doc["id"]))
        td.verifies(w)
    finally:
        w.close()


def t_fork_with_a_diverging_input(tmp):
    """A new input that changes call 1's arguments: 409 CONFLICT "diverges at call 1", the fork
    recorded failed PROTOCOL_ERROR and nothing sent; without wait its status says so. A new
    input that changes nothing before at_call runs."""
    w = world(tmp)
    try:
        run_id = original(w)
        st, doc = fork(w, run_id, {"at_call": 3, "input": {"k": 2}})
        check(st == 409 and doc["error"]["code"] == "CONFLICT" and
              "diverges at call 1" in doc["error"]["message"], "diverging fork: %d %r" % (st, doc))
        failed = w.get(doc["error"]["run"])
        check(failed["status"] == "failed" and failed["error"]["code"] == "PROTOCOL_ERROR" and
              "diverges at call 1" in failed["error"]["message"] and
              failed["forked_from"] == run_id, "the diverged fork: %r" % failed)
        check(td.counts(w, failed["id"]) == {}, "a diverged fork sent %r"
              % td.counts(w, failed["id"]))
        st, doc = fork(w, run_id, {"at_call": 3, "input": {"k": 2}, "wait": False})
        check(st == 202, "diverging fork without wait: %d %r" % (st, doc))
        done = w.until(doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "failed" and "diverges at call 1" in done["error"]["message"],
              "diverged without wait: %r" % done)
        # at_call 1: nothing is replayed, the new input runs live
        st, doc = fork(w, run_id, {"at_call": 1, "input": {"k": 2}})
        check(st == 200 and doc["status"] == "completed" and doc["value"] == 30,
              "fork at 1 with a new input: %d %r" % (st, doc))
    finally:
        w.close()


def t_fork_from_the_cli(tmp):
    """`airlock runs fork RUN --at-call N` forks as the route does and prints where the fork
    comes from; --json prints the answer; a missing --at-call is a usage error (exit 2) and a
    run the caller may not see exits 1 with airlockd's 404."""
    w = world(tmp)
    try:
        run_id = original(w)

        def cli(key, *args):
            env = dict(os.environ, AIRLOCK_URL="http://127.0.0.1:%d" % w.s.port,
                       AIRLOCK_KEY=key)
            return subprocess.run([ts.CLI, "runs", "fork"] + list(args), env=env,
                                  capture_output=True, text=True, timeout=120)

        p = cli(w.keys["agent-7"], run_id, "--at-call", "4")
        check(p.returncode == 0 and "completed" in p.stdout and "value:\n15" in p.stdout and
              "forked from %s at call 4" % run_id in p.stdout, "runs fork: %r" % (p,))
        p = cli(w.keys["agent-7"], run_id, "--at-call", "5", "--json")
        doc = json.loads(p.stdout)
        check(p.returncode == 0 and doc["forked_from"] == run_id and doc["at_call"] == 5 and
              doc["value"] == 15, "runs fork --json: %r" % (p,))
        check(td.counts(w, doc["id"]) == {5: 1}, "the fork's calls: %r" % td.counts(w, doc["id"]))
        p = cli(w.keys["agent-7"], run_id)
        check(p.returncode == 2 and "--at-call" in p.stderr, "no --at-call: %r" % (p,))
        p = cli(w.keys["agent-8"], run_id, "--at-call", "2")
        check(p.returncode == 1 and "404" in p.stderr and p.stdout == "",
              "another agent's run: %r" % (p,))
    finally:
        w.close()


def t_fork_of_a_supervised_version(tmp):
    """In a supervised department a fork waits for a person as POST /v1/runs does (202
    awaiting_approval, an approval of kind run); approved, it replays the original's calls before
    at_call and sends only the rest, at the original's seed (its Math.random tag matches, or call
    1 would diverge). A new input that changes the path is refused at its start: failed
    PROTOCOL_ERROR "diverges at call 1", nothing sent."""
    w = world(tmp)
    try:
        run_id = original(w)
        w.ok("PUT", "/v1/departments/finance/policy", {"autonomy": "supervised"}, w.admin)
        st, doc = fork(w, run_id, {"at_call": 3})
        check(st == 202 and doc["status"] == "awaiting_approval" and
              doc["forked_from"] == run_id and doc["at_call"] == 3 and len(doc["approvals"]) == 1,
              "supervised fork: %d %r" % (st, doc))
        check(td.counts(w, doc["id"]) == {}, "a fork waiting for its start sent %r"
              % td.counts(w, doc["id"]))
        (apr,) = doc["approvals"]
        check([x["kind"] for x in w.pending() if x["id"] == apr] == ["run"], "the fork's approval")
        w.ok("POST", "/v1/approvals/%s/approve" % apr, {"comment": "again from 3"}, w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 15, "approved fork: %r" % done)
        check(td.counts(w, doc["id"]) == {3: 1, 4: 1, 5: 1},
              "the approved fork's calls: %r" % td.counts(w, doc["id"]))
        check(td.counts(w, run_id) == {i: 1 for i in range(1, 6)},
              "the original's calls: %r" % td.counts(w, run_id))
        st, doc = fork(w, run_id, {"at_call": 3, "input": {"k": 2}})
        check(st == 202 and doc["status"] == "awaiting_approval", "%d %r" % (st, doc))
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "failed" and done["error"]["code"] == "PROTOCOL_ERROR" and
              "diverges at call 1" in done["error"]["message"], "diverging fork: %r" % done)
        check(td.counts(w, doc["id"]) == {}, "a diverged fork sent %r" % td.counts(w, doc["id"]))
        td.verifies(w)
    finally:
        w.close()


def t_fork_refusals(tmp):
    """A caller who may not see the original gets the 404 of a run that does not exist; at_call
    out of range is 400; a revoked version is 409 TEMPLATE_REVOKED as POST /v1/runs answers."""
    w = world(tmp)
    try:
        run_id = original(w)
        st, missing = fork(w, "run_" + "0" * 32, {"at_call": 1})
        check(st == 404 and missing["error"]["code"] == "NOT_FOUND", "no such run: %d %r"
              % (st, missing))
        for who in ("agent-8", "agent-9"):
            st, doc = fork(w, run_id, {"at_call": 3}, key=w.keys[who])
            check(st == 404 and doc["error"]["code"] == "NOT_FOUND" and
                  doc["error"]["message"] == "no run " + run_id, "%s: %d %r" % (who, st, doc))
        for at in (0, 7, -1, 2.5, 1e300):
            st, doc = fork(w, run_id, {"at_call": at})
            check(st == 400 and doc["error"]["code"] == "INVALID_REQUEST",
                  "at_call %r: %d %r" % (at, st, doc))
        for body in ({}, {"at_call": "3"}, {"at_call": 3, "template": "five"},
                     {"at_call": 3, "input": [1]}):
            st, doc = fork(w, run_id, body)
            check(st == 400, "%r: %d %r" % (body, st, doc))
        n = len(audit_rows(w.dir, "run.start"))
        w.ok("POST", "/v1/templates/five/versions/1/revoke", {"reason": "leak"}, w.keys["bob"])
        st, doc = fork(w, run_id, {"at_call": 3})
        st2, doc2 = w.run({"template": "five", "version": 1, "input": {}})
        check(st == 409 and doc["error"]["code"] == "TEMPLATE_REVOKED" and st2 == st and
              doc2["error"]["code"] == doc["error"]["code"], "revoked: %d %r (POST /v1/runs: %d %r)"
              % (st, doc, st2, doc2))
        check(len(audit_rows(w.dir, "run.start")) == n, "a refused fork was recorded")
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-fork-")


if __name__ == "__main__":
    sys.exit(main())
