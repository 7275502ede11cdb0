#!/usr/bin/env python3
"""Integration tests from a review of airlockd's run engine: each test is a failure a user can
run into (a crash after a cancel, a 5xx for a large value or input, an approved run lost to a
SIGTERM, a run with no end record, guest source semantics changed by the `input` prefix).

usage: test_runs_review.py --airlockd PATH --cli PATH [-k SUBSTRING]

Uses test_runs.World (airlockd + the shop connector). Waiting polls with a deadline.
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
from test_runs import World  # noqa: E402
from test_server import Fail, audit_rows, check  # noqa: E402

HANG = ts.HANG
ENDED = ("completed", "failed", "cancelled", "denied")


def with_env(env):
    """World's airlockd started with extra environment variables."""
    real = ts.Server

    def make(data_dir, env_extra=None, args=None):
        e = dict(env)
        e.update(env_extra or {})
        return real(data_dir, env_extra=e, args=args)
    return make


BIG = "console.log('y'.repeat(60000)); return 'x'.repeat(1000000);"


def raw_run(w, body):
    """POST /v1/runs without the OpenAPI check (a 500 body here lacks request_id)."""
    conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG)
    try:
        conn.request("POST", "/v1/runs", body=json.dumps(body).encode(),
                     headers={"Authorization": "Bearer " + w.keys["agent-7"],
                              "Content-Type": "application/json"})
        r = conn.getresponse()
        text = r.read()
    finally:
        conn.close()
    return r.status, json.loads(text), text


def wait_for(cond, what):
    deadline = time.monotonic() + HANG
    while not cond():
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        time.sleep(0.02)


# ---------------------------------------------------------------------------------------------
def t_cancel_during_connector_call_then_stop(tmp):
    """A run cancelled while its connector call is in flight: the run's plan (and with it the
    connector target) is freed by the writer while the connector thread still holds the call,
    and the call's later failure message reads target->name and fn->name. With freed memory
    poisoned (MALLOC_PERTURB_) that read faults; under ASan it is a heap-use-after-free."""
    real = tr.Server
    tr.Server = with_env({"MALLOC_PERTURB_": "165"})
    try:
        w = World(tmp)
    finally:
        tr.Server = real
    try:
        w.template("slow", "await shop.slow(20000); return 'woke';", ["shop.slow"])
        st, doc = w.run({"template": "slow", "wait": False}, want=202)
        wait_for(lambda: w.shop.calls()["by_function"].get("shop.slow"), "the slow call")
        w.ok("POST", "/v1/runs/%s/cancel" % doc["id"], {}, w.keys["agent-7"])
        w.until(doc["id"], ("cancelled",))
        # the connector thread finishes the cancelled call (its poll, or the client's free at
        # stop): airlockd must still be alive and exit 0
        st, _, _ = w.s.request("GET", "/healthz")
        check(st == 200, "healthz after cancel: %d" % st)
        code = w.s.stop()
        check(code == 0, "airlockd exit status %r after a cancelled connector call: %s" %
              (code, w.s.stderr()[-2000:]))
    finally:
        w.close()


def t_large_value_is_not_a_5xx(tmp):
    """A value and a console under their limits (1 MiB, 64 KiB) whose run.end record passes
    the store's 1 MiB audit line cap make the writer's whole batch fail: the client gets 500
    (without a request_id) and the row stays 'running' until a restart marks it ABORTED."""
    w = World(tmp)
    try:
        w.template("big", BIG, [])
        st, doc, _ = raw_run(w, {"template": "big"})
        check(st != 500, "a 1,000,000-byte value answered 500: %r" % (doc,))
        check(doc.get("status") in ENDED, "status %r" % doc.get("status"))
        listed = w.ok("GET", "/v1/runs?template=big", None, w.keys["bob"])
        check(all(r["status"] in ENDED for r in listed),
              "a run stays %r" % [r["status"] for r in listed])
        check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the chain verifies")
    finally:
        w.close()


def t_run_list_past_the_body_cap_is_json(tmp):
    """GET /v1/runs puts every listed run's input and outcome in one answer capped at 64 MiB; a
    capped buffer drops the append that does not fit and takes the next ones, so 70 runs of a
    1 MB value answer 200 with a body that is not JSON (a member cut out mid-object)."""
    w = World(tmp)
    try:
        w.template("mb", "return 'x'.repeat(1000000);", [])
        for _ in range(70):
            w.run({"template": "mb"}, want=200)
        conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG * 4)
        try:
            conn.request("GET", "/v1/runs?limit=100",
                         headers={"Authorization": "Bearer " + w.keys["bob"]})
            r = conn.getresponse()
            text = r.read()
        finally:
            conn.close()
        try:
            json.loads(text)
        except ValueError as e:
            raise Fail("GET /v1/runs answered %d with %d bytes that are not JSON: %s" %
                       (r.status, len(text), e))
    finally:
        w.close()


def t_large_input_is_not_a_5xx(tmp):
    """An input just under the body cap: its run.start record passes the 1 MiB audit line cap
    and POST /v1/runs answers 500 INTERNAL (never a 5xx for bad input)."""
    w = World(tmp)
    try:
        w.template("echo", "return input.s.length;", [])
        overhead = len(json.dumps({"template": "echo", "input": {"s": ""}}))
        body = {"template": "echo", "input": {"s": "y" * (1048576 - overhead - 16)}}
        st, doc, _ = raw_run(w, body)
        check(st < 500, "a large input answered %d: %r" % (st, doc))
    finally:
        w.close()


def t_approval_during_drain_keeps_the_run(tmp):
    """SIGTERM drains, but connections already open are still served. An approval that lands
    then claims the continuation, answers 200 'approved', and the resume is refused
    ('airlockd is shutting down'): the run ends failed although a person approved it - had the
    approval come after the restart, the run would have resumed."""
    w = World(tmp)
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        w.template("nap", "await shop.slow(3000); return 'rested';", ["shop.slow"])
        st, waiting = w.run({"template": "refund", "input": {"amount": 4}}, want=202)
        apr = waiting["approvals"][0]
        st, napping = w.run({"template": "nap", "wait": False}, want=202)
        wait_for(lambda: w.shop.calls()["by_function"].get("shop.slow"), "the slow call")
        conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG)
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        r.read()
        w.s.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "stopping" in w.s.stderr(), "airlockd to start draining")
        conn.request("POST", "/v1/approvals/%s/approve" % apr, body=b"{}",
                     headers={"Authorization": "Bearer " + w.keys["bob"],
                              "Content-Type": "application/json"})
        r = conn.getresponse()
        status = r.status
        r.read()
        conn.close()
        w.s.proc.wait(timeout=HANG)
        w.s = ts.Server(w.dir)
        doc = w.get(waiting["id"])
        if status == 200:
            if doc["status"] == "running":
                doc = w.until(waiting["id"], ENDED)
            check(doc["status"] == "completed",
                  "approved during the drain, then %r: %r" % (doc["status"], doc.get("error")))
        else:
            check(doc["status"] == "awaiting_approval",
                  "approval refused (%d) during the drain, run %r" % (status, doc["status"]))
    finally:
        w.close()


def t_denied_run_has_an_end_record(tmp):
    """A supervised run that is denied ends ('denied') with no run.end record: the audit log
    has its run.start but never its end."""
    w = World(tmp, autonomy="supervised")
    try:
        w.template("one", "return 1", [])
        st, doc = w.run({"template": "one"}, want=202)
        w.ok("POST", "/v1/approvals/%s/deny" % doc["approvals"][0], {"comment": "no"},
             w.keys["bob"])
        check(w.get(doc["id"])["status"] == "denied", "not denied")
        acts = [r["action"] for r in audit_rows(w.dir) if r["subject"] == doc["id"]]
        check("run.start" in acts and "run.end" in acts,
              "records of the denied run: %r" % acts)
    finally:
        w.close()


def t_cancelled_waiting_run_has_an_end_record(tmp):
    """A run cancelled while it waits for a person: run.cancel, but no run.end with its status
    (a run that executes and is cancelled gets both)."""
    w = World(tmp)
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        st, doc = w.run({"template": "refund", "input": {"amount": 2}}, want=202)
        w.ok("POST", "/v1/runs/%s/cancel" % doc["id"], {}, w.keys["agent-7"])
        ends = [r for r in audit_rows(w.dir, "run.end") if r["subject"] == doc["id"]]
        check(ends and ends[-1]["details"]["status"] == "cancelled",
              "no run.end for the cancelled run: %r" %
              [r["action"] for r in audit_rows(w.dir) if r["subject"] == doc["id"]])
    finally:
        w.close()


def t_use_strict_survives_the_input_prefix(tmp):
    """runs_source puts `const input = ...;` before the source on its first line, so a
    template's "use strict" directive is no longer a directive prologue."""
    w = World(tmp)
    try:
        w.template("strict", '"use strict";\nreturn (function () { return this === undefined; })();',
                   [])
        st, doc = w.run({"template": "strict"}, want=200)
        check(doc["status"] == "completed" and doc["value"] is True,
              "strict mode lost: %r" % doc)
    finally:
        w.close()


def t_input_text_cannot_break_out(tmp):
    """The input's JSON text is a JS string literal in the prefix: quotes, backslashes, line
    and paragraph separators and a script-ending text come back intact."""
    w = World(tmp)
    try:
        w.template("echo", "return input;", [])
        value = {"s": "\"); throw 1; (\"\\ \u2028 \u2029 </script> \u0000 \U0001F600",
                 "__proto__": {"x": 1}, "n": [1, {"k": None}]}
        st, doc = w.run({"template": "echo", "input": value}, want=200)
        check(doc["status"] == "completed" and doc["value"] == value, "echo: %r" % doc)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-review-")


if __name__ == "__main__":
    sys.exit(main())
