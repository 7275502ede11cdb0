#!/usr/bin/env python3
"""airlockd under races that crashed it or made its audit disagree with its runs: a run cancelled
while it makes a connector call, and a cancel that meets the run's own end; and a disk that
fails the writer's fsync.

usage: test_crash.py --airlockd PATH --cli PATH [-k SUBSTRING]

Each test starts airlockd and the shop connector (test_runs.World) in a fresh directory, posts
short runs with "wait": false and cancels each at once on the same keep-alive connection, so the
cancel lands anywhere in the run: queued, in the guest, inside shop.slow, or just as the run
ends. A cancel answers 200 "cancelled" or 409 CONFLICT (the run had ended); afterwards airlockd
must still be up, no run may be left unfinished, a run answered "cancelled" must stay cancelled,
and a run's run.end record must say what the run is. Waiting polls with a deadline.
"""
import http.client
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, audit_rows, check  # noqa: E402

ROUNDS = 200
ENDED = ("completed", "failed", "cancelled", "denied")


def post_and_cancel(w, body_of):
    """ROUNDS runs, each cancelled right after its 202: {run id: cancel answer status}."""
    conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=ts.HANG)
    h = {"Authorization": "Bearer " + w.keys["agent-7"], "Content-Type": "application/json"}
    answers = {}
    try:
        for i in range(ROUNDS):
            try:
                conn.request("POST", "/v1/runs", body=json.dumps(body_of(i)), headers=h)
                r = conn.getresponse()
                doc = json.loads(r.read())
                check(r.status == 202 and doc["status"] in ("running", "queued"),
                      "POST /v1/runs: %d %r" % (r.status, doc))
                conn.request("POST", "/v1/runs/%s/cancel" % doc["id"], body=b"{}", headers=h)
                r = conn.getresponse()
                c = json.loads(r.read())
            except (OSError, http.client.HTTPException) as e:
                time.sleep(0.2)  # let a dying airlockd finish dying, to report its end
                notes = [line for line in w.s.stderr().splitlines()
                         if not line.startswith('{"log":"request"')]
                raise Fail("round %d: no answer (%r); airlockd %s; stderr: %s" % (
                    i, e, "exited with %r" % w.s.proc.poll() if w.s.proc.poll() is not None
                    else "still up", "\n".join(notes[-8:])))
            check((r.status == 200 and c["status"] == "cancelled") or
                  (r.status == 409 and c["error"]["code"] == "CONFLICT"),
                  "cancel %s: %d %r" % (doc["id"], r.status, c))
            answers[doc["id"]] = c["status"] if r.status == 200 else "ended"
    finally:
        conn.close()
    return answers


def settle_and_check(w, answers):
    for run_id in answers:
        w.until(run_id, ENDED)
    check(w.s.proc.poll() is None, "airlockd exited: %r" % w.s.proc.poll())
    ends = {}
    for r in audit_rows(w.dir, "run.end"):
        ends.setdefault(r["subject"], []).append(r["details"]["status"])
    wrong = []
    for run_id, said in answers.items():
        now = w.get(run_id)
        if said == "cancelled" and now["status"] != "cancelled":
            wrong.append("%s answered cancelled, now %s" % (run_id, now["status"]))
        recorded = ends.get(run_id, [])
        if len(recorded) > 1 or any(s != now["status"] for s in recorded):
            wrong.append("%s is %s (%s), its run.end records say %r" % (
                run_id, now["status"], said, recorded))
    check(not wrong, "%d of %d runs: %s" % (len(wrong), len(answers), "; ".join(wrong[:3])))
    check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the chain verifies")


def t_cancel_during_a_connector_call(tmp):
    # a run cancelled while shop.slow is in flight: the connector thread must not touch the
    # run's freed plan when it notices the cancel (seen: SIGSEGV, ASan heap-use-after-free in
    # connector_fail reading call->target after runs_writer freed the plan)
    w = tr.World(tmp)
    try:
        w.template("nap", "await shop.slow(input.ms); return 'woke';", ["shop.slow"])
        answers = post_and_cancel(w, lambda i: {"template": "nap", "input": {"ms": i % 20},
                                                "wait": False})
        settle_and_check(w, answers)
    finally:
        w.close()


def t_cancel_meets_the_end_of_the_run(tmp):
    # no connector: a cancel that arrives as the guest returns; seen: the run stored cancelled
    # (as the cancel answered) while its run.end record says completed, with its value
    w = tr.World(tmp)
    try:
        w.template("count", "let s = 0; for (let i = 0; i < input.n; i++) { s += i; } return s;",
                   [])
        answers = post_and_cancel(w, lambda i: {"template": "count",
                                                "input": {"n": (i % 20) * 500}, "wait": False})
        settle_and_check(w, answers)
    finally:
        w.close()


def t_failed_fsync_stops_airlockd_before_any_answer_or_call(tmp):
    # the writer's fsync fails (hosts/failsync.c, preloaded): airlockd stops before it answers
    # the run or sends its connector call, and its restart resumes the run it had begun from its
    # (empty) journal: it completes, its call made once
    lib = os.environ.get("FAILSYNC_LIB", "")
    check(os.path.exists(lib), "FAILSYNC_LIB (the failsync library, set by ctest) is %r" % lib)
    asan = os.environ.get("ASAN_OPTIONS", "")
    armed = os.path.join(tmp, "armed")
    w = tr.World(tmp, env_extra={
        "LD_PRELOAD": lib, "FAILSYNC_THREAD": "airlockd-writer", "FAILSYNC_ARMED": armed,
        # under AddressSanitizer its runtime would insist on coming first
        "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"})
    try:
        w.template("paid", "return (await shop.orders('paid')).length;", ["shop.orders"])
        open(armed, "w").close()  # the setup's writes are in: the next fsync fails
        answered = None
        try:
            answered = w.run({"template": "paid"})
        except (OSError, http.client.HTTPException):
            pass
        check(answered is None, "answered before its record was on the disk: %r" % (answered,))
        check(w.s.proc.wait(timeout=ts.HANG) == -signal.SIGABRT,
              "airlockd exited with %r" % w.s.proc.returncode)
        check("could not be synced to disk" in w.s.stderr(), "no word of the failed fsync")
        check(w.shop.calls()["by_function"].get("shop.orders", 0) == 0,
              "a connector call left before its run's record was on the disk")
        os.unlink(armed)
        w.s = ts.Server(w.dir)
        started = [r["subject"] for r in audit_rows(w.dir, "run.start")]
        check(len(started) <= 1, "run.start records: %r" % started)
        for run_id in started:
            done = w.until(run_id, ("completed", "failed"))
            check(done["status"] == "completed" and done["value"] == 2 and
                  done["recovered"] == 1, "after the restart: %r" % done)
            check(w.shop.calls()["by_function"].get("shop.orders", 0) == 1,
                  "calls: %r" % w.shop.calls())
        check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the chain verifies")
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-crash-")


if __name__ == "__main__":
    sys.exit(main())
