#!/usr/bin/env python3
"""Replay before approval: a submitted version is replayed against the journals of recent runs of
the approved version it would replace, no connector called (docs/server.md "Replay before
approval"); GET /v1/templates/{t}/versions/{v}/replay and `airlock template diff` show it.

usage: test_replay.py --airlockd PATH --cli PATH [-k SUBSTRING]

The shop connector (hosts/shop_connector.py) counts every call it receives, so a test sees that
a replay sent nothing. Waiting polls with deadlines; nothing sleeps.
"""
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_client_cli as tc  # noqa: E402
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import check, db_rows  # noqa: E402

# Three calls; with input.refund the third is the sensitive shop.refund, which waits for a
# person. v1 is approved and run; the other versions are replayed against its runs.
V1 = """
const paid = await shop.orders("paid");
const pending = await shop.orders("pending");
if (input.refund) {
    return await shop.refund(paid[0].id, input.refund);
}
const again = await shop.orders("paid");
return paid.length + pending.length + again.length;
"""
# the same calls, written otherwise
V2 = """
// the same behaviour, refactored
const [paid, pending] = [await shop.orders("paid"), await shop.orders("pending")];
if (input.refund) { return await shop.refund(paid[0].id, input.refund); }
return paid.length + pending.length + (await shop.orders("paid")).length;
"""
# call 3 changes: other arguments for the completed runs, a doubled refund for the waiting one
V3 = V1.replace('const again = await shop.orders("paid");',
                'const again = await shop.orders("refunded");').replace(
                    "input.refund);", "input.refund * 2);")
# makes every recorded call, then throws
V4 = V1.replace("return paid.length", 'throw new Error("v4 is broken"); return paid.length')

FUNCTIONS = ["shop.orders", "shop.refund"]


def digest(args):
    """SHA-256 of a call's arguments as the guest sends them (JSON.stringify of the array)."""
    return hashlib.sha256(json.dumps(args, separators=(",", ":")).encode()).hexdigest()


def push(w, source, submit=True, limits=None):
    body = {"source": source, "language": "js", "functions": FUNCTIONS,
            "input_schema": {"type": "object"}, "autonomy": "autonomous"}
    if limits:
        body["limits"] = limits
    v = w.ok("POST", "/v1/templates/refunds/versions", body, w.keys["alice"], 201)["version"]
    if submit:
        w.ok("POST", "/v1/templates/refunds/versions/%d/submit" % v, {}, w.keys["alice"])
    return v


def replay(w, v, key=None):
    """GET .../replay, polled while it answers 202 (a replay still under way)."""
    deadline = time.monotonic() + 240
    while True:
        st, doc, _ = w.s.request("GET", "/v1/templates/refunds/versions/%d/replay" % v, None,
                                 key=key or w.keys["bob"])
        if st != 202 or time.monotonic() > deadline:
            check(st == 200 and doc["state"] == "done", "replay of v%d: %d %r" % (v, st, doc))
            return doc


def world(tmp):
    """v1 approved and run three times to completion; a fourth run waits on its refund."""
    w = tr.World(tmp)
    w.template("refunds", V1, FUNCTIONS)
    done = []
    for _ in range(3):
        st, doc = w.run({"template": "refunds", "input": {}}, want=200)
        check(doc["status"] == "completed" and doc["value"] == 5, "a run of v1: %r" % doc)
        done.append(doc["id"])
    st, doc = w.run({"template": "refunds", "input": {"refund": 7}}, want=202)
    check(doc["status"] == "awaiting_approval", "the waiting run: %r" % doc)
    return w, done, doc["id"]


def t_replay_before_approval(tmp):
    """v2 (same calls) replays every run identically and sends nothing; v3 diverges at call 3 on
    every run, both sides named, the waiting run listed; v4 fails where v1 completed."""
    w, done, waiting = world(tmp)
    try:
        before = w.shop.calls()
        v2 = push(w, V2)
        r = replay(w, v2)
        check(r["template"] == "refunds" and r["version"] == v2 and r["against"] == 1 and
              r["runs"] == 4 and r["same"] == 4 and r["diverged"] == [] and r["failed"] == [] and
              r["waiting"] == [], "v2's replay: %r" % r)
        check(w.shop.calls() == before, "a replay reached the connector: %r -> %r"
              % (before, w.shop.calls()))
        kept = db_rows(w.dir, "SELECT against, result FROM version_replays WHERE template = ? "
                       "AND version = ?", ("refunds", v2))
        check(len(kept) == 1 and kept[0][0] == 1 and json.loads(kept[0][1]) == r,
              "the replay is kept with the version: %r" % kept)

        v3 = push(w, V3)
        r = replay(w, v3)
        check(r["runs"] == 4 and r["same"] == 0 and r["failed"] == [] and
              sorted(d["run"] for d in r["diverged"]) == sorted(done + [waiting]),
              "v3's replay: %r" % r)
        journal = {(run, int(call)): sha for run, call, sha in db_rows(
            w.dir, "SELECT run, call_id, args_sha256 FROM journal")}
        for d in r["diverged"]:
            check(d["at_call"] == 3, "v3 diverges at call 3: %r" % d)
            if d["run"] == waiting:
                want = ({"function": "shop.refund", "args_sha256": digest(["o-1", 7])},
                        {"function": "shop.refund", "args_sha256": digest(["o-1", 14])})
            else:
                want = ({"function": "shop.orders", "args_sha256": digest(["paid"])},
                        {"function": "shop.orders", "args_sha256": digest(["refunded"])})
                check(journal[(d["run"], 3)] == want[0]["args_sha256"],
                      "expected is the journal's call: %r %r" % (d, journal))
            check((d["expected"], d["got"]) == want, "v3's divergence: %r, want %r" % (d, want))
        check(r["waiting"] == [waiting], "the waiting run v3 diverges on: %r" % r["waiting"])

        v4 = push(w, V4)
        r = replay(w, v4)
        check(r["runs"] == 4 and r["same"] == 1 and r["diverged"] == [] and
              sorted(f["run"] for f in r["failed"]) == sorted(done), "v4's replay: %r" % r)
        for f in r["failed"]:
            check(f["error"] == {"code": "USER_ERROR", "same_as_run": False},
                  "v4's failure: %r" % f)
        check(w.shop.calls() == before, "replays reached the connector: %r -> %r"
              % (before, w.shop.calls()))

        # the approver reads it with the diff
        bob = tc.As(w, "bob")
        out, _ = bob("template", "diff", "refunds", str(v3))
        for want in ("replay: replays 0 of 4 recent runs of v1 identically; diverges on 4 at "
                     "call 3", "diverges at call 3: expected shop.orders (args sha256 %s), got "
                     "shop.orders (args sha256 %s)" % (digest(["paid"])[:12],
                                                      digest(["refunded"])[:12]),
                     "waiting run %s would diverge" % waiting):
            check(want in out, "diff lacks %r:\n%s" % (want, out))
        out, _ = bob("template", "diff", "refunds", str(v2))
        check("replay: replays 4 of 4 recent runs of v1 identically\n" in out, out)
        d = bob.json("template", "diff", "refunds", str(v3))
        check(d["version"] == v3 and d["replay"] == replay(w, v3), "diff --json: %r" % d)
        # an agent reads the diff of an approved version, never the replay naming runs
        d = tc.As(w, "agent-7").json("template", "diff", "refunds", "1")
        check(d["replay"] is None, "an agent's diff --json: %r" % d)
        ts.check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the audit chain")
    finally:
        w.close()


def t_replay_edges(tmp):
    """Nothing approved: nothing to replay; a draft has none; who may not read the version gets
    404, an agent 403."""
    w = tr.World(tmp)
    try:
        w.template("refunds", V1, FUNCTIONS, approve=False)
        w.ok("POST", "/v1/templates/refunds/versions/1/submit", {}, w.keys["alice"])
        r = replay(w, 1)
        check(r["runs"] == 0 and r["same"] == 0 and r["against"] is None and
              r["diverged"] == [] and r["failed"] == [], "nothing approved: %r" % r)
        w.ok("POST", "/v1/templates/refunds/versions/1/approve", {"comment": "ok"}, w.keys["bob"])
        v2 = push(w, V2, submit=False)
        r = w.ok("GET", "/v1/templates/refunds/versions/%d/replay" % v2, None, w.keys["bob"])
        check(r["state"] == "none" and r["runs"] == 0 and r["against"] is None,
              "a draft: %r" % r)
        v3 = push(w, V3)
        r = replay(w, v3)
        check(r["runs"] == 0 and r["against"] == 1, "no runs of v1 yet: %r" % r)
        # an author of another department may not read finance's versions: they do not exist
        w.keys["olga"] = w.ok("POST", "/v1/principals", {"name": "olga", "kind": "user"},
                              w.admin, 201)["key"]
        w.ok("POST", "/v1/principals/olga/roles", {"role": "author", "department": "other"},
             w.admin, 201)
        for v in (1, v2, v3):
            st, doc, _ = w.s.request("GET", "/v1/templates/refunds/versions/%d/replay" % v, None,
                                     key=w.keys["olga"])
            check(st == 404 and doc["error"]["code"] == "NOT_FOUND", "olga v%d: %d %r"
                  % (v, st, doc))
        # the replay names runs: agents, who see only their own, are refused
        for who in ("agent-7", "agent-9"):
            st, doc, _ = w.s.request("GET", "/v1/templates/refunds/versions/1/replay", None,
                                     key=w.keys[who])
            check(st == 403 and doc["error"]["code"] == "FORBIDDEN", "%s v1: %d %r"
                  % (who, st, doc))
        st, doc, _ = w.s.request("GET", "/v1/templates/refunds/versions/99/replay", None,
                                 key=w.keys["bob"])
        check(st == 404, "no such version: %d %r" % (st, doc))
        for who in ("alice", "eve"):
            w.ok("GET", "/v1/templates/refunds/versions/%d/replay" % v3, None, w.keys[who])
    finally:
        w.close()


# Makes the recorded calls, then throws what the connector answered: an author who submits it
# (nobody approves it) must not read the answers through the replay.
EXFIL = """
const paid = await shop.orders("paid");
const pending = await shop.orders("pending");
const again = await shop.orders("paid");
throw new Error("LEAK " + JSON.stringify({input, paid, pending}));
"""


def t_replay_shows_no_text_of_the_source(tmp):
    """A failed replay shows its error code and whether the run failed the same, never the
    message the replayed source chose (which could carry the journal's answers): not to its
    author, not to an approver, not in what is kept."""
    w, done, waiting = world(tmp)
    try:
        v = push(w, EXFIL)
        for who in ("alice", "bob"):
            r = replay(w, v, key=w.keys[who])
            check(r["runs"] == 4 and sorted(f["run"] for f in r["failed"]) == sorted(done) and
                  all(f["error"] == {"code": "USER_ERROR", "same_as_run": False}
                      for f in r["failed"]), "%s reads: %r" % (who, r))
            text = json.dumps(r)
            check("LEAK" not in text and "o-1" not in text and "message" not in text,
                  "the replay shows the source's text: %s" % text)
        kept = db_rows(w.dir, "SELECT result FROM version_replays WHERE version = ?", (v,))
        check(len(kept) == 1 and "LEAK" not in kept[0][0], "kept: %r" % kept)
    finally:
        w.close()


# Makes the recorded calls, then takes 768 MiB of heap (under a 4 GiB limit it set itself).
HOG = """
const paid = await shop.orders("paid");
const pending = await shop.orders("pending");
if (input.refund) {
    return await shop.refund(paid[0].id, input.refund);
}
const again = await shop.orders("paid");
const keep = [];
for (let i = 0; i < 12; i++) keep.push(new Float64Array(8 * 1024 * 1024));
return paid.length + pending.length + again.length + keep.length * 0;
"""


def t_replay_runs_under_the_stricter_limits(tmp):
    """A version not approved gets no more than the approved one had: one that sets a 4 GiB heap
    and a year of time is replayed under v1's (the runner's defaults, 64 MiB): taking 768 MiB
    fails MEMORY_LIMIT."""
    w, done, waiting = world(tmp)
    try:
        year = 365 * 24 * 3600 * 1000
        v = push(w, HOG, limits={"memory_bytes": 4 << 30, "timeout_ms": year, "cpu_ms": year})
        r = replay(w, v)
        check(r["runs"] == 4 and sorted(f["run"] for f in r["failed"]) == sorted(done) and
              all(f["error"] == {"code": "MEMORY_LIMIT", "same_as_run": False}
                  for f in r["failed"]) and r["same"] == 1, "the hog's replay: %r" % r)
    finally:
        w.close()


JUDGE_V1 = 'const p = await shop.orders("paid"); if (input.boom) throw new Error("boom"); ' \
           'return p.length;'
JUDGE_V2 = 'const p = await shop.orders("paid"); if (input.boom) { ' \
           'await shop.orders("refund-everything"); throw new Error("boom"); } return p.length;'


def t_replay_of_a_run_the_guest_ended(tmp):
    """A run that failed by its own throw made every call it would make: a version that makes one
    more call there diverges (expected null), as for a completed run."""
    w = tr.World(tmp)
    try:
        w.template("refunds", JUDGE_V1, FUNCTIONS)
        runs = []
        for _ in range(2):
            st, doc = w.run({"template": "refunds", "input": {"boom": 1}}, want=200)
            check(doc["status"] == "failed" and doc["error"]["code"] == "USER_ERROR",
                  "a run of v1: %r" % doc)
            runs.append(doc["id"])
        v = push(w, JUDGE_V2)
        r = replay(w, v)
        check(r["runs"] == 2 and r["same"] == 0 and r["failed"] == [] and
              sorted(d["run"] for d in r["diverged"]) == sorted(runs), "v2's replay: %r" % r)
        for d in r["diverged"]:
            check(d["at_call"] == 2 and d["expected"] is None and
                  d["got"] == {"function": "shop.orders",
                               "args_sha256": digest(["refund-everything"])},
                  "the extra call: %r" % d)
        # the same calls and the same throw replay identically
        v = push(w, JUDGE_V1 + "\n// unchanged")
        r = replay(w, v)
        check(r["runs"] == 2 and r["same"] == 2, "v1 again: %r" % r)
    finally:
        w.close()


SPIN = "for (;;) {}"


def t_replay_storm_queues_the_newest(tmp):
    """Versions of one template submitted one after another while the replays' thread is busy
    (another template's replay spins until its 60 s) queue one replay, the newest's: the others
    answer "superseded" (runs 0), and nothing is kept for them."""
    w = tr.World(tmp)
    try:
        for name in ("spinner", "refunds"):
            w.template(name, V1, FUNCTIONS, limits={"timeout_ms": 60000, "cpu_ms": 60000})
            st, doc = w.run({"template": name, "input": {}}, want=200)
            check(doc["status"] == "completed", "a run of %s: %r" % (name, doc))
        busy = w.ok("POST", "/v1/templates/spinner/versions",
                    {"source": SPIN, "functions": FUNCTIONS,
                     "limits": {"timeout_ms": 60000, "cpu_ms": 60000}},
                    w.keys["alice"], 201)["version"]
        w.ok("POST", "/v1/templates/spinner/versions/%d/submit" % busy, {}, w.keys["alice"])
        versions = [push(w, V2 + "\n// %d" % i) for i in range(6)]
        kept = db_rows(w.dir, "SELECT template, version FROM version_replays WHERE version > 1")
        check(kept == [], "the spinning replay ended before the versions were submitted "
              "(the machine took over 60 s): %r" % kept)
        for v in versions[:-1]:
            r = w.ok("GET", "/v1/templates/refunds/versions/%d/replay" % v, None, w.keys["bob"])
            check(r["state"] == "superseded" and r["runs"] == 0 and r["against"] is None,
                  "v%d: %r" % (v, r))
        deadline = time.monotonic() + 240  # the spinning replay ends first (no request waits)
        while not db_rows(w.dir, "SELECT 1 FROM version_replays WHERE template = 'spinner' AND "
                          "version > 1"):
            check(time.monotonic() < deadline, "the spinning replay never ended")
            time.sleep(0.2)
        r = replay(w, versions[-1])
        check(r["runs"] == 1 and r["same"] == 1, "the newest: %r" % r)
        kept = sorted(db_rows(w.dir, "SELECT template, version FROM version_replays WHERE version > 1"))
        check(kept == [("refunds", versions[-1]), ("spinner", busy)], "replays made: %r" % kept)
        out, _ = tc.As(w, "bob")("template", "diff", "refunds", str(versions[0]))
        check("replay: superseded" in out, out)
    finally:
        w.close()

TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-replay-")


if __name__ == "__main__":
    sys.exit(main())
