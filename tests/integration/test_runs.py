#!/usr/bin/env python3
"""Integration tests of airlockd's runs: only approved versions run, input validation, the
connector calls a run makes, sensitive calls that wait for a person and resume without
repeating finished calls, denial, supervised departments, cancellation, revocation, ad-hoc
runs, tool calls over MCP, visibility, and what survives a restart, a kill -9 and a SIGTERM drain.

usage: test_runs.py --airlockd PATH --cli PATH [-k SUBSTRING]

Each test starts airlockd (test_server.Server) and the shop connector
(hosts/shop_connector.py) on free ports in a fresh directory. Waiting for a run to reach a state
polls GET /v1/runs/{id} with a deadline; nothing sleeps for timing.
"""
import hashlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_server as ts  # noqa: E402
from test_server import Fail, Server, audit_rows, check, error_of  # noqa: E402

SECRET = "shop-signing-secret-0123456789"
HANG = ts.HANG


class Shop:
    """The shop connector process."""

    def __init__(self, database=None):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "hosts", "shop_connector.py"), SECRET] +
            ([database] if database else []), stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d/" % self.port

    def calls(self):
        with urllib.request.urlopen(self.url + "calls", timeout=HANG) as r:
            return json.loads(r.read())

    def open(self, gate):
        """Lets the shop.hold calls waiting on gate answer."""
        with urllib.request.urlopen(self.url + "open/" + gate, timeout=HANG) as r:
            r.read()

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=HANG)


class World:
    """airlockd with department finance (and other), its people and the shop connector."""

    def __init__(self, tmp, autonomy="autonomous", adhoc=False, shop=None, env_extra=None,
                 config=None):
        self.tmp = tmp
        self.dir = os.path.join(tmp, "var")
        self.shop = shop or Shop()
        if config is not None:  # airlockd's config file, as a dict
            path = os.path.join(tmp, "airlockd.json")
            with open(path, "w") as f:
                json.dump(config, f)
            self.s = Server(self.dir, args=["--listen", "127.0.0.1:0", "--data-dir", self.dir,
                                            "--config", path])
        # without env_extra, Server is called as tests that replace it expect
        elif env_extra:
            self.s = Server(self.dir, env_extra=env_extra)
        else:
            self.s = Server(self.dir)
        check(self.s.port, "airlockd did not start: " + self.s.stderr())
        self.admin = self.s.admin_key()
        for d in ("finance", "other"):
            self.ok("POST", "/v1/departments", {"name": d}, self.admin, 201)
        if autonomy != "autonomous" or adhoc:
            self.ok("PUT", "/v1/departments/finance/policy",
                    {"autonomy": autonomy, "allow_adhoc": adhoc}, self.admin)
        self.keys = {}
        for name, role, dept in (("alice", "author", "finance"), ("bob", "approver", "finance"),
                                 ("carol", "approver", "finance"), ("agent-7", "agent", "finance"),
                                 ("agent-9", "agent", "other"), ("eve", "auditor", "*"),
                                 ("mallory", "agent", "finance")):
            self.keys[name] = self.ok("POST", "/v1/principals", {"name": name, "kind": "user"},
                                      self.admin, 201)["key"]
            self.ok("POST", "/v1/principals/%s/roles" % name, {"role": role, "department": dept},
                    self.admin, 201)
        # mallory is an agent and an approver: four eyes still keeps her from her own runs
        self.ok("POST", "/v1/principals/mallory/roles", {"role": "approver",
                                                         "department": "finance"}, self.admin, 201)
        self.ok("POST", "/v1/connectors", {
            "name": "shop", "department": "finance", "url": self.shop.url,
            "signing_secret": SECRET, "timeout_ms": 30000,
            "functions": {"orders": {"description": "orders by status"},
                          "refund": {"sensitive": True}, "fail": {}, "slow": {}}}, self.admin, 201)

    def ok(self, method, path, body, key, want=200):
        st, doc, _ = self.s.request(method, path, body, key=key)
        check(st == want, "%s %s: %d, want %d: %r" % (method, path, st, want, doc))
        return doc

    def template(self, name, source, functions, schema=None, autonomy="autonomous",
                 approve=True, limits=None, language="js"):
        self.ok("POST", "/v1/templates", {"name": name, "department": "finance",
                                          "description": name}, self.keys["alice"], 201)
        body = {"source": source, "language": language, "functions": functions,
                "input_schema": schema or {"type": "object"}, "autonomy": autonomy}
        if limits:
            body["limits"] = limits
        v = self.ok("POST", "/v1/templates/%s/versions" % name, body, self.keys["alice"], 201)
        n = v["version"]
        if approve:
            self.ok("POST", "/v1/templates/%s/versions/%d/submit" % (name, n), {},
                    self.keys["alice"])
            self.ok("POST", "/v1/templates/%s/versions/%d/approve" % (name, n),
                    {"comment": "fine"}, self.keys["bob"])
        return n

    def run(self, body, key=None, want=None):
        st, doc, _ = self.s.request("POST", "/v1/runs", body, key=key or self.keys["agent-7"])
        if want is not None:
            check(st == want, "POST /v1/runs %r: %d, want %d: %r" % (body, st, want, doc))
        return st, doc

    def get(self, run_id, key=None):
        return self.ok("GET", "/v1/runs/" + run_id, None, key or self.keys["agent-7"])

    def until(self, run_id, statuses, key=None):
        deadline = time.monotonic() + HANG
        while True:
            doc = self.get(run_id, key)
            if doc["status"] in statuses:
                return doc
            check(time.monotonic() < deadline,
                  "run %s still %s, want %s" % (run_id, doc["status"], statuses))
            time.sleep(0.02)

    def until_called(self, fn):
        """Waits until the shop has been called with function fn (a run is parked there)."""
        deadline = time.monotonic() + HANG
        while not self.shop.calls()["by_function"].get(fn):
            check(time.monotonic() < deadline, "%s never reached the shop" % fn)
            time.sleep(0.02)

    def pending(self, key=None):
        return self.ok("GET", "/v1/approvals?status=pending", None, key or self.keys["bob"])

    def close(self):
        self.s.kill()
        self.shop.stop()


def metrics_text(w):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % w.s.port, timeout=HANG) as r:
        return r.read().decode()


def metric(w, series):
    """The value of one series of /metrics (None when absent)."""
    for line in metrics_text(w).splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def run_shape(doc):
    for k in ("id", "status", "template", "version", "console", "stats", "approvals"):
        check(k in doc, "run object without %s: %r" % (k, doc))
    check(doc["id"].startswith("run_"), "id %r" % doc["id"])


# ---------------------------------------------------------------------------------------------
SUMMARY = """
const orders = await shop.orders(input.status);
console.log("orders", orders.length);
return { count: orders.length, total: orders.reduce((s, o) => s + o.amount, 0) };
"""


def t_completed_run_and_its_audit(tmp):
    w = World(tmp)
    try:
        w.template("summary", SUMMARY, ["shop.orders"],
                   schema={"type": "object", "properties": {"status": {"enum": ["paid",
                                                                                  "pending"]}},
                           "required": ["status"], "additionalProperties": False})
        st, doc = w.run({"template": "summary", "input": {"status": "paid"}}, want=200)
        run_shape(doc)
        check(doc["status"] == "completed", "status: %r" % doc)
        check(doc["value"] == {"count": 2, "total": 150}, "value: %r" % doc["value"])
        check(doc["template"] == "summary" and doc["version"] == 1, "names: %r" % doc)
        check(doc["console"] == [{"level": "log", "text": "orders 2"}], "console %r" %
              doc["console"])
        check(doc["stats"]["host_calls"] == 1 and "wall_ms" in doc["stats"], "stats %r" %
              doc["stats"])
        # durable before the answer: the records are in the database the moment it arrives
        by_action = {}
        for r in audit_rows(w.dir):
            if r["subject"] == doc["id"]:
                by_action.setdefault(r["action"], []).append(r)
        check(set(by_action) == {"run.start", "run.host_call", "run.end"},
              "records of the run: %r" % sorted(by_action))
        start = by_action["run.start"][0]
        check(start["actor"] == "agent-7" and start["details"]["approved_by"] == "bob" and
              start["details"]["input"] == {"status": "paid"}, "run.start %r" % start)
        call = by_action["run.host_call"][0]["details"]
        check(call["function"] == "shop.orders" and call["args"] == ["paid"] and
              call["outcome"] == "returned", "run.host_call %r" % call)
        end = by_action["run.end"][0]["details"]
        check(end["status"] == "completed" and end["value"] == doc["value"] and
              end["console"] == doc["console"] and "cpu_ms" in end["stats"], "run.end %r" % end)
        # the input is validated before anything runs
        before = w.shop.calls()["by_function"].get("shop.orders", 0)
        st, e = w.run({"template": "summary", "input": {"status": "lost"}})
        error_of(st, e, 422, "INPUT_INVALID")
        check("/status" in e["error"]["message"], "names the path: %r" % e)
        st, e = w.run({"template": "summary", "input": {"status": "paid", "x": 1}})
        error_of(st, e, 422, "INPUT_INVALID")
        check(w.shop.calls()["by_function"].get("shop.orders", 0) == before,
              "an invalid input reached the connector")
        # the frozen global input
        w.template("frozen", "input.status = 'x'; input.nested.y = 2; return input;", [])
        st, doc = w.run({"template": "frozen", "input": {"status": "a", "nested": {"y": 1}}},
                        want=200)
        check(doc["status"] == "completed" and doc["value"] == {"status": "a",
                                                                "nested": {"y": 1}},
              "input is not frozen: %r" % doc)
        # a run's failure is not an HTTP error
        w.template("thrower", "throw new TypeError('bad ' + input.n)", [])
        st, doc = w.run({"template": "thrower", "input": {"n": 1}}, want=200)
        check(doc["status"] == "failed" and doc["error"]["name"] == "TypeError" and
              doc["error"]["message"] == "bad 1", "failed run: %r" % doc)
        w.template("failing-call", "return await shop.fail('out of stock')", ["shop.fail"])
        st, doc = w.run({"template": "failing-call"}, want=200)
        check(doc["status"] == "failed" and "out of stock" in doc["error"]["message"],
              "connector error: %r" % doc)
        # only functions the version names exist in the guest
        w.template("sneaky", "return [typeof shop, typeof fetch, typeof require];", [])
        st, doc = w.run({"template": "sneaky"}, want=200)
        check(doc["value"] == ["undefined", "undefined", "undefined"], "globals: %r" % doc)
    finally:
        w.close()


def t_only_approved_versions_run(tmp):
    w = World(tmp)
    try:
        w.template("draft", "return 1", [], approve=False)
        # to an agent, a version not approved is not there; to one who reads it (mallory is an
        # approver too), it is not approved
        error_of(*w.run({"template": "draft"}), 404, "NOT_FOUND")
        error_of(*w.run({"template": "draft", "version": 1}), 404, "NOT_FOUND")
        mallory = w.keys["mallory"]
        error_of(*w.run({"template": "draft"}, key=mallory), 409, "VERSION_NOT_APPROVED")
        error_of(*w.run({"template": "draft", "version": 1}, key=mallory), 409,
                 "VERSION_NOT_APPROVED")
        w.ok("POST", "/v1/templates/draft/versions/1/submit", {}, w.keys["alice"])
        error_of(*w.run({"template": "draft", "version": 1}), 404, "NOT_FOUND")
        error_of(*w.run({"template": "draft", "version": 1}, key=mallory), 409,
                 "VERSION_NOT_APPROVED")
        error_of(*w.run({"template": "nosuch"}), 404, "NOT_FOUND")
        # an agent of another department (to which it is not there), an author, an auditor:
        # not theirs to run
        w.ok("POST", "/v1/templates/draft/versions/1/approve", {}, w.keys["bob"])
        error_of(*w.run({"template": "draft"}, key=w.keys["agent-9"]), 404, "NOT_FOUND")
        error_of(*w.run({"template": "draft"}, key=w.keys["alice"]), 403, "FORBIDDEN")
        error_of(*w.run({"template": "draft"}, key=w.keys["eve"]), 403, "FORBIDDEN")
        st, doc = w.run({"template": "draft"}, want=200)
        check(doc["value"] == 1, "approved run: %r" % doc)
        # bad bodies
        for body in ({}, {"template": 1}, {"template": "draft", "input": [1]},
                     {"template": "draft", "wait": "yes"}, {"template": "draft", "extra": 1},
                     {"template": "draft", "version": 0}, {"template": "draft", "version": 1.5},
                     {"template": "draft", "source": "return 1"}):
            error_of(*w.run(body), 400, "INVALID_REQUEST")
    finally:
        w.close()


REFUND = """
const orders = await shop.orders("paid");
const r = await shop.refund(orders[0].id, input.amount);
return { first: orders[0].id, refund: r };
"""


def t_sensitive_call_waits_and_resumes_once(tmp):
    w = World(tmp)
    try:
        w.template("refund", REFUND, ["shop.orders", "shop.refund"])
        st, doc = w.run({"template": "refund", "input": {"amount": 7}}, want=202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
        run_id, apr = doc["id"], doc["approvals"][0]
        items = [a for a in w.pending() if a["id"] == apr]
        check(len(items) == 1, "pending approvals: %r" % w.pending())
        a = items[0]
        check(a["kind"] == "host_call" and a["function"] == "shop.refund" and
              a["args"] == ["o-1", 7] and a["run"] == run_id and a["template"] == "refund" and
              a["version"] == 1 and a["department"] == "finance" and
              a["requested_by"] == "agent-7" and a["created"], "approval item: %r" % a)
        check(w.shop.calls()["by_function"].get("shop.refund", 0) == 0,
              "the sensitive call reached the shop before approval")
        check(metric(w, "airlock_approvals_pending") == 1, "approvals pending gauge")
        # nobody but an approver of finance decides; an agent cannot approve
        error_of(*w.s.request("POST", "/v1/approvals/%s/approve" % apr, {},
                              key=w.keys["agent-7"])[:2], 403, "FORBIDDEN")
        w.ok("POST", "/v1/approvals/%s/approve" % apr, {"comment": "ok by me"}, w.keys["bob"])
        # decided once
        error_of(*w.s.request("POST", "/v1/approvals/%s/deny" % apr, {},
                              key=w.keys["carol"])[:2], 409, "CONFLICT")
        doc = w.until(run_id, ("completed", "failed"))
        check(doc["status"] == "completed" and doc["value"] == {
            "first": "o-1", "refund": {"refunded": "o-1", "amount": 7}}, "resumed: %r" % doc)
        calls = w.shop.calls()
        check(calls["by_function"] == {"shop.orders": 1, "shop.refund": 1},
              "finished calls repeated or the refund not made once: %r" % calls)
        check(metric(w, "airlock_approvals_pending") == 0, "approvals pending gauge after")
        check(metric(w, 'airlock_runs_total{template="refund",status="awaiting_approval"}') == 1
              and metric(w, 'airlock_runs_total{template="refund",status="completed"}') == 1,
              "runs_total: %s" % metrics_text(w))
        check(metric(w, 'airlock_host_calls_total{connector="shop",outcome="returned"}') == 2,
              "host calls counted: %s" % metrics_text(w))
        keys = [k for k in calls["by_key"] if calls["by_key"][k] != 1]
        check(not keys, "an idempotency key used twice: %r" % calls)
        acts = [r["action"] for r in audit_rows(w.dir)
                if r["subject"] in (run_id, apr)]
        for want in ("run.start", "approval.request", "run.wait", "approval.approve",
                     "run.end"):
            check(want in acts, "%s missing from %r" % (want, acts))
        decided = [r for r in audit_rows(w.dir, "approval.approve") if r["subject"] == apr][0]
        check(decided["actor"] == "bob" and decided["details"]["comment"] == "ok by me",
              "decision record %r" % decided)
    finally:
        w.close()


DENY = """
try {
  await shop.refund("o-2", 30);
  return "refunded";
} catch (e) {
  return "caught: " + e.message;
}
"""

TWO = """
const [a, b] = await Promise.all([shop.refund("o-1", 1), shop.refund("o-2", 2)]);
return [a.amount, b.amount];
"""


def t_deny_and_several_calls(tmp):
    w = World(tmp)
    try:
        w.template("deny", DENY, ["shop.refund"])
        st, doc = w.run({"template": "deny"}, want=202)
        w.ok("POST", "/v1/approvals/%s/deny" % doc["approvals"][0], {"comment": "too much"},
             w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed"))
        check(done["value"] == "caught: denied: too much", "denied call: %r" % done)
        check(w.shop.calls()["by_function"].get("shop.refund", 0) == 0,
              "a denied call reached the shop")
        # two sensitive calls at once: two approvals, resumed only when both are decided
        w.template("two", TWO, ["shop.refund"])
        st, doc = w.run({"template": "two"}, want=202)
        check(len(doc["approvals"]) == 2, "two approvals: %r" % doc)
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        check(w.get(doc["id"])["status"] == "awaiting_approval", "resumed with one pending")
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][1], {}, w.keys["carol"])
        done = w.until(doc["id"], ("completed", "failed"))
        check(done["status"] == "completed" and sorted(done["value"]) == [1, 2], "%r" % done)
        # four eyes: who started the run never decides its approval
        st, doc = w.run({"template": "deny"}, key=w.keys["mallory"], want=202)
        error_of(*w.s.request("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {},
                              key=w.keys["mallory"])[:2], 409, "CONFLICT")
    finally:
        w.close()


def t_supervised_department(tmp):
    w = World(tmp, autonomy="supervised")
    try:
        w.template("summary", SUMMARY, ["shop.orders"])
        st, doc = w.run({"template": "summary", "input": {"status": "paid"}}, want=202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
        a = [x for x in w.pending() if x["id"] == doc["approvals"][0]][0]
        check(a["kind"] == "run" and a["run"] == doc["id"], "run approval: %r" % a)
        check(w.shop.calls()["by_function"] == {}, "a supervised run executed before approval")
        w.ok("POST", "/v1/approvals/%s/approve" % a["id"], {}, w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed"))
        check(done["status"] == "completed" and done["value"]["count"] == 2, "%r" % done)
        st, doc = w.run({"template": "summary", "input": {"status": "paid"}}, want=202)
        w.ok("POST", "/v1/approvals/%s/deny" % doc["approvals"][0], {"comment": "no"},
             w.keys["bob"])
        done = w.get(doc["id"])
        check(done["status"] == "denied", "denied run: %r" % done)
        check(w.shop.calls()["by_function"] == {"shop.orders": 1}, "a denied run executed")
    finally:
        w.close()


SLOW = "await shop.slow(20000); return 'woke';"


def t_cancel_and_revoke(tmp):
    w = World(tmp)
    try:
        w.template("slow", SLOW, ["shop.slow"])
        st, doc = w.run({"template": "slow", "wait": False}, want=202)
        # at once: running here, or (PostgreSQL: several nodes) queued for the first to claim it
        check(doc["status"] in ("running", "queued"), "wait:false answers at once: %r" % doc)
        # another agent may not cancel it; its own agent may
        st, e, _ = w.s.request("POST", "/v1/runs/%s/cancel" % doc["id"], {},
                               key=w.keys["agent-9"])
        check(st in (403, 404), "another department's agent cancelled: %d %r" % (st, e))
        w.ok("POST", "/v1/runs/%s/cancel" % doc["id"], {}, w.keys["agent-7"])
        done = w.until(doc["id"], ("cancelled",))
        check(done["error"]["code"] == "ABORTED", "cancelled run: %r" % done)
        error_of(*w.s.request("POST", "/v1/runs/%s/cancel" % doc["id"], {},
                              key=w.keys["agent-7"])[:2], 409, "CONFLICT")
        # revocation: refuses new runs, cancels waiting and running ones
        w.template("refund", REFUND, ["shop.orders", "shop.refund"])
        st, waiting = w.run({"template": "refund", "input": {"amount": 1}}, want=202)
        w.template("slow2", SLOW, ["shop.slow"])
        st, running = w.run({"template": "slow2", "wait": False}, want=202)
        w.ok("POST", "/v1/templates/refund/versions/1/revoke", {"reason": "leak"},
             w.keys["bob"])
        w.ok("POST", "/v1/templates/slow2/versions/1/revoke", {"reason": "leak"},
             w.keys["bob"])
        check(w.get(waiting["id"])["status"] == "cancelled", "waiting run not cancelled")
        check(w.until(running["id"], ("cancelled",))["error"]["code"] == "ABORTED", "running")
        error_of(*w.run({"template": "refund", "input": {"amount": 1}}), 409,
                 "TEMPLATE_REVOKED")
        error_of(*w.s.request("POST", "/v1/approvals/%s/approve" % waiting["approvals"][0], {},
                              key=w.keys["bob"])[:2], 409, "CONFLICT")
        check(w.shop.calls()["by_function"].get("shop.refund", 0) == 0, "revoked call made")
    finally:
        w.close()




class Waiter(threading.Thread):
    """One request that waits for a run (POST /v1/runs with "wait": true, or an MCP tool call),
    made on a thread of its own with a timeout far past the run's own end."""

    def __init__(self, port, path, body, key):
        super().__init__(daemon=True)
        self.args = (port, path, json.dumps(body), key)
        self.status = None
        self.doc = None

    def run(self):
        port, path, body, key = self.args
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=4 * HANG)
        try:
            conn.request("POST", path, body=body, headers={
                "Authorization": "Bearer " + key, "Content-Type": "application/json"})
            r = conn.getresponse()
            self.status, self.doc = r.status, json.loads(r.read() or b"null")
        except OSError as e:
            self.doc = repr(e)
        finally:
            conn.close()


def t_a_revoked_key_ends_its_wait(tmp):
    """A client waiting for a run, over POST /v1/runs or an MCP tool call, whose key is revoked
    meanwhile is answered 401 (recorded as auth.denied), not the run's result, long before the
    run would end; the run itself goes on (its principal holds another key) and completes."""
    w = World(tmp)
    try:
        w.template("nap", "return await shop.slow(input.ms)", ["shop.slow"])
        waiting = {}
        for how in ("api", "mcp"):
            key = w.ok("POST", "/v1/principals/agent-7/keys", None, w.admin, 201)
            if how == "api":
                body = {"template": "nap", "input": {"ms": 25000}, "wait": True}
                waiting[how] = (key, Waiter(w.s.port, "/v1/runs", body, key["key"]))
            else:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "nap", "arguments": {"ms": 25000}}}
                waiting[how] = (key, Waiter(w.s.port, "/v1/mcp", body, key["key"]))
            waiting[how][1].start()
        deadline = time.monotonic() + HANG
        while w.shop.calls()["by_function"].get("shop.slow", 0) < 2:
            check(time.monotonic() < deadline, "the runs never reached the shop")
            time.sleep(0.02)
        runs = w.ok("GET", "/v1/runs?template=nap", None, w.admin)
        check(len(runs) == 2 and all(r["status"] == "running" for r in runs), "%r" % runs)
        for key, _ in waiting.values():
            w.ok("DELETE", "/v1/principals/agent-7/keys/" + key["prefix"], None, w.admin)
        # the runs answer after 25 s: well before, each client has its 401
        for how, (key, t) in waiting.items():
            t.join(HANG)
            check(not t.is_alive(), "%s: no answer %d s after its key was revoked" % (how, HANG))
            error_of(t.status, t.doc, 401, "UNAUTHENTICATED")
            check(key["prefix"] in t.doc["error"]["message"], "%s: %r" % (how, t.doc))
        denied = [r["details"] for r in audit_rows(w.dir, "auth.denied")
                  if r["details"]["status"] == 401]
        check(sorted(d["route"] for d in denied) == ["/v1/mcp", "/v1/runs"] and
              all("was revoked while the request waited" in d["reason"] for d in denied),
              "auth.denied: %r" % denied)
        # agent-7 keeps its first key: its runs go on
        for r in runs:
            check(w.get(r["id"])["status"] == "running", "run ended with the waiter: %r" % r)
    finally:
        w.close()


def revoke_setup(w, agent):
    """A supervised run of `agent` waiting for a person, and one executing (wait: false)."""
    w.ok("PUT", "/v1/departments/finance/policy", {"autonomy": "supervised"}, w.admin)
    st, held = w.run({"template": "summary", "input": {"status": "paid"}},
                     key=w.keys[agent], want=202)
    check(held["status"] == "awaiting_approval" and len(held["approvals"]) == 1, "%r" % held)
    w.ok("PUT", "/v1/departments/finance/policy", {"autonomy": "autonomous"}, w.admin)
    st, running = w.run({"template": "slow", "wait": False}, key=w.keys[agent], want=202)
    w.until(running["id"], ("running",), key=w.admin)
    return held, running


def revoke_check(w, agent, held, running, reason):
    """Both runs ended cancelled ABORTED with `reason` in their run.cancel records, the approval
    closed (approval.cancel), and no decision resumes the held run."""
    for run in (held, running):
        done = w.until(run["id"], ("cancelled", "completed", "failed", "denied"), key=w.admin)
        check(done["status"] == "cancelled" and done["error"]["code"] == "ABORTED" and
              done["error"]["message"] == reason, "%s: %r" % (run["id"], done))
        cancels = [r for r in audit_rows(w.dir, "run.cancel") if r["subject"] == run["id"]]
        check(len(cancels) == 1 and cancels[0]["details"] == {"run": run["id"], "reason": reason},
              "run.cancel of %s: %r" % (run["id"], cancels))
    apr = held["approvals"][0]
    a = w.ok("GET", "/v1/approvals?run=" + held["id"], None, w.keys["bob"])
    check([x["status"] for x in a] == ["cancelled"], "approval: %r" % a)
    closed = [r["details"] for r in audit_rows(w.dir, "approval.cancel") if r["subject"] == apr]
    check(closed == [{"approval": apr, "run": held["id"], "reason": reason}], "%r" % closed)
    error_of(*w.s.request("POST", "/v1/approvals/%s/approve" % apr, {}, key=w.keys["bob"])[:2],
             409, "CONFLICT")
    check(w.get(held["id"], key=w.admin)["status"] == "cancelled", "a decision resumed it")
    check(w.shop.calls()["by_function"].get("shop.orders", 0) == 0, "the held run executed")


def t_a_lost_agent_role_ends_the_runs_it_let_start(tmp):
    """Taking back the agent role that let a principal start its runs ends them: the one waiting
    for a person (its approval closed) and the one executing, cancelled ABORTED with the reason
    recorded; an approver's decision does not resume it."""
    w = World(tmp)
    try:
        w.template("summary", SUMMARY, ["shop.orders"])
        w.template("slow", SLOW, ["shop.slow"])
        held, running = revoke_setup(w, "agent-7")
        # another principal's run, and another role of agent-7's, are not touched
        st, other = w.run({"template": "slow", "wait": False}, key=w.keys["mallory"], want=202)
        w.ok("DELETE", "/v1/principals/agent-7/roles", {"role": "agent", "department": "finance"},
             w.admin)
        revoke_check(w, "agent-7", held, running,
                     "cancelled: agent-7 no longer holds role agent in department finance")
        check(w.get(other["id"], key=w.admin)["status"] == "running", "mallory's run ended")
    finally:
        w.close()


def t_a_revoked_last_key_ends_its_principals_runs(tmp):
    """Revoking a principal's last key ends its runs in progress as a lost role does; while it
    holds another key they go on."""
    w = World(tmp)
    try:
        w.template("summary", SUMMARY, ["shop.orders"])
        w.template("slow", SLOW, ["shop.slow"])
        extra = w.ok("POST", "/v1/principals/agent-7/keys", None, w.admin, 201)
        held, running = revoke_setup(w, "agent-7")
        first = w.ok("GET", "/v1/principals", None, w.admin)
        first = [k["prefix"] for p in first if p["name"] == "agent-7" for k in p["keys"]
                 if k["prefix"] != extra["prefix"]][0]
        w.ok("DELETE", "/v1/principals/agent-7/keys/" + first, None, w.admin)
        check(w.get(held["id"], key=w.admin)["status"] == "awaiting_approval" and
              w.get(running["id"], key=w.admin)["status"] == "running",
              "a key revoked while another is left ended the runs")
        w.ok("DELETE", "/v1/principals/agent-7/keys/" + extra["prefix"], None, w.admin)
        revoke_check(w, "agent-7", held, running, "cancelled: agent-7 has no API key left")
    finally:
        w.close()


def t_a_decision_never_resumes_a_run_its_principal_could_not_start(tmp):
    """The role taken back behind airlockd's back (the grant deleted in the database, so the
    approval is still pending): the decision answers 409 CONFLICT and the run ends cancelled
    ABORTED instead of executing."""
    w = World(tmp, autonomy="supervised")
    try:
        w.template("summary", SUMMARY, ["shop.orders"])
        st, held = w.run({"template": "summary", "input": {"status": "paid"}}, want=202)
        ts.db_exec(w.dir, "DELETE FROM role_grants WHERE principal = ? AND role = ?",
                   ("agent-7", "agent"))
        st, doc, _ = w.s.request("POST", "/v1/approvals/%s/approve" % held["approvals"][0], {},
                                 key=w.keys["bob"])
        error_of(st, doc, 409, "CONFLICT")
        reason = "cancelled: agent-7 no longer holds role agent in department finance"
        check(reason[len("cancelled: "):] in doc["error"]["message"], "%r" % doc)
        done = w.get(held["id"], key=w.admin)
        check(done["status"] == "cancelled" and done["error"]["code"] == "ABORTED" and
              done["error"]["message"] == reason, "%r" % done)
        a = w.ok("GET", "/v1/approvals?run=" + held["id"], None, w.keys["bob"])
        check([x["status"] for x in a] == ["cancelled"], "approval: %r" % a)
        check([r["details"]["reason"] for r in audit_rows(w.dir, "run.cancel")] == [reason],
              "run.cancel")
        check(w.shop.calls()["by_function"] == {}, "the run executed")
    finally:
        w.close()


def t_a_runs_start_is_fixed_and_keyed(tmp):
    # Math.random's seed is an HMAC of the run's id under the continuation key (the same on
    # every node, unknown without the key; never the id's plain hash), different for each run;
    # the guest clock starts at the run's creation
    import calendar
    import hashlib
    import hmac
    w = World(tmp)
    try:
        w.template("rand", "return [Math.random(), Date.now()];", [])
        with open(os.path.join(w.dir, "continuation.key")) as f:
            key = bytes.fromhex(f.read().strip())
        seeds = set()
        for _ in range(3):
            st, doc = w.run({"template": "rand"}, want=200)
            text = ("airlock-run-seed\n" + doc["id"]).encode()
            want = hmac.new(key, text, hashlib.sha256).hexdigest()[:16]
            check(doc["stats"]["seed"] == want, "seed %r, want %r" % (doc["stats"]["seed"], want))
            check(doc["stats"]["seed"] != hashlib.sha256(text).hexdigest()[:16], "unkeyed seed")
            seeds.add(doc["stats"]["seed"])
            created = doc["created"]
            ms = calendar.timegm(time.strptime(created[:19], "%Y-%m-%dT%H:%M:%S")) * 1000 + \
                int(created[20:23])
            check(doc["stats"]["clock_ms"] == ms and doc["value"][1] == ms,
                  "clock %r, value %r, created %s" % (doc["stats"]["clock_ms"], doc["value"],
                                                      created))
        check(len(seeds) == 3, "runs share a seed: %r" % seeds)
    finally:
        w.close()

def t_cancel_as_the_run_ends_records_one_end(tmp):
    # cancels sent the moment each run starts: some find it executing (cancelled there), some
    # ended (409), and some commit while the run is ending, its end not yet recorded; whichever,
    # each run has exactly one run.end, saying the status the run shows
    w = World(tmp)
    try:
        w.template("quick", "await shop.slow(input.ms); return 1;", ["shop.slow"])
        ids = []
        for i in range(200):  # the runs end 0 to 4 ms after they start: around the cancel
            st, doc = w.run({"template": "quick", "input": {"ms": i % 5}, "wait": False},
                            want=202)
            ids.append(doc["id"])
            st, _, _ = w.s.request("POST", "/v1/runs/%s/cancel" % doc["id"], {},
                                   key=w.keys["agent-7"])
            check(st in (200, 409), "cancel: %d" % st)
        ended = {}
        for run_id in ids:
            ended[run_id] = w.until(run_id, ("completed", "cancelled", "failed"))["status"]
        # a run cancelled while it executes shows "cancelled" once the cancel commits; its
        # run.end comes from the writer once its execution has ended (it may still be on its
        # way): count them once nothing executes (airlock_runs_active counts a run until its end
        # is committed) and every run has one
        deadline = time.monotonic() + HANG
        while True:
            executing = metric(w, "airlock_runs_active")
            ends = {}
            for r in audit_rows(w.dir, "run.end"):
                ends.setdefault(r["subject"], []).append(r["details"]["status"])
            missing = [run_id for run_id in ids if run_id not in ends]
            if executing == 0 and not missing:
                break
            check(time.monotonic() < deadline, "%r runs still executing, %d without a run.end "
                  "(%s...)" % (executing, len(missing), missing[:3]))
            time.sleep(0.05)
        for run_id in ids:
            check(ends.get(run_id) == [ended[run_id]],
                  "run %s is %s with run.end %r" % (run_id, ended[run_id], ends.get(run_id)))
    finally:
        w.close()


def join_all(threads, deadline, what):
    """Joins threads against one deadline (a time.monotonic()) for them all, and fails naming
    how many still run at it: their answers are not all in, and a count of them would say
    something else."""
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = sum(t.is_alive() for t in threads)
    check(not alive, "%s: %d of %d threads still running at their deadline" %
          (what, alive, len(threads)))


def t_connector_calls_wait_for_the_runs_record(tmp):
    # a run executes while the writer records its start, but its connector call leaves only
    # once that record is committed (the shop looks it up in the database at each call);
    # revoking the version meanwhile cancels or refuses runs, never leaves one unrecorded.
    # The deadlines are for the work, HANG for each run an agent makes one after another (as
    # one run gets anywhere here): on PostgreSQL every connector call starts a psql, and the 120
    # runs took 16 s on an idle machine, 21 s with both cores busy.
    import threading
    d = os.path.join(tmp, "var")
    w = World(tmp, shop=Shop(database=ts.pg_url(d) if ts.PG else os.path.join(d, "airlock.db")))
    try:
        w.template("paid", "return (await shop.orders('paid')).length;", ["shop.orders"])
        answers = []
        lock = threading.Lock()

        def agent(n):
            for _ in range(n):
                st, doc = w.run({"template": "paid"})
                with lock:
                    answers.append((st, doc))

        threads = [threading.Thread(target=agent, args=(20,)) for _ in range(6)]
        for t in threads:
            t.start()
        join_all(threads, time.monotonic() + 20 * HANG, "6 agents of 20 runs")
        check(len(answers) == 120 and all(st == 200 and d["value"] == 2 for st, d in answers),
              "runs: %r" % [a for a in answers if a[0] != 200 or a[1].get("value") != 2][:3])
        check(w.shop.calls()["unrecorded"] == [], "calls before their run's record: %r" %
              w.shop.calls()["unrecorded"][:3])

        w.template("racy", "return (await shop.orders('paid')).length;", ["shop.orders"])
        answers.clear()

        def racer():
            # runs until refused: some before the revocation, some meeting it
            for _ in range(500):
                st, doc = w.run({"template": "racy"})
                with lock:
                    answers.append((st, doc))
                if st == 409:
                    return

        threads = [threading.Thread(target=racer) for _ in range(6)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 5 * HANG  # 30 runs, 5 an agent
        while True:
            with lock:
                if len(answers) >= 30:
                    break
            check(time.monotonic() < deadline, "%d answers of 30" % len(answers))
            time.sleep(0.005)
        w.ok("POST", "/v1/templates/racy/versions/1/revoke", {"reason": "race"}, w.keys["bob"])
        # once revoked an agent finishes the run it has in flight, then is refused
        join_all(threads, time.monotonic() + 2 * HANG, "agents after the revocation")
        bad = [(st, d) for st, d in answers
               if not ((st == 200 and d["status"] in ("completed", "cancelled")) or
                       (st == 409 and d["error"]["code"] == "TEMPLATE_REVOKED"))]
        check(not bad, "answers around the revocation: %r" % bad[:3])
        refused = sum(st == 409 for st, _ in answers)
        check(refused == 6, "every agent refused once revoked: %d refusals" % refused)
        check(w.shop.calls()["unrecorded"] == [], "calls before their run's record: %r" %
              w.shop.calls()["unrecorded"][:3])
        # every run is recorded with one end, none is left running; the chain verifies
        ended = {}
        for r in audit_rows(w.dir, "run.end"):
            ended[r["subject"]] = ended.get(r["subject"], 0) + 1
        started = {r["subject"] for r in audit_rows(w.dir, "run.start")}
        check(all(ended.get(run, 0) == 1 for run in started) and set(ended) <= started,
              "run.start and run.end records disagree")
        answered = {d["id"] for st, d in answers if st == 200}
        check(answered <= started, "an answered run has no run.start record")
        check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the chain verifies")
    finally:
        w.close()


def threads_of(pid):
    """A process's threads: name -> thread ids (a thread's own threads take its name)."""
    threads = {}
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            threads.setdefault(f.read().strip(), []).append(int(t))
    return threads


def t_threads_are_named(tmp):
    # an operator's top -H or perf tells airlockd's threads apart (docs/server.md)
    w = World(tmp)
    try:
        w.template("paid", "return (await shop.orders('paid')).length;", ["shop.orders"])
        check(w.run({"template": "paid"}, want=200)[1]["value"] == 2, "the run")
        names = set(threads_of(w.s.proc.pid))
        want = {"airlockd-writer", "airlockd-reaper", "airlockd-curl", "airlock-loop"}
        check(want <= names, "threads %r, want %r among them" % (sorted(names), sorted(want)))
    finally:
        w.close()


def t_nothing_of_a_batch_is_answered_before_its_fsync(tmp):
    # docs/server.md: "nothing the batch records is answered before that fsync". The writer
    # commits unsynced and lets the store lock go before its fsync, so meanwhile any GET reads
    # the batch: a run nobody has been told of yet (its own POST is still waiting for that
    # fsync), and its run.start record in the audit export. A power cut in that window loses
    # what was answered (and the export's seqs are reused by other records after the restart).
    import threading
    # the writer's fsync waits while the gate file exists (hosts/failsync.c, built by ctest)
    so = os.environ.get("FAILSYNC_LIB", "")
    check(os.path.exists(so), "FAILSYNC_LIB (the failsync library, set by ctest) is %r" % so)
    gate = os.path.join(tmp, "gate")
    env = {"FAILSYNC_THREAD": "airlockd-writer", "FAILSYNC_GATE": gate, "LD_PRELOAD": so,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    w = World(tmp, env_extra=env)
    try:
        w.template("quick", "return 7;", [])
        open(gate, "w").close()
        answer = []
        t = threading.Thread(target=lambda: answer.append(w.run({"template": "quick",
                                                                 "wait": False})))
        t.start()
        deadline = time.monotonic() + HANG
        while not os.path.exists(gate + ".held"):
            check(time.monotonic() < deadline, "the writer's fsync never came")
            time.sleep(0.005)
        # the writer waits in the fsync of the batch that records the new run: what a reader
        # is answered meanwhile must not show it (a reader may also wait for that fsync)
        seen = {}

        def read(what, method, path, key):
            st, doc, _ = w.s.request(method, path, None, key=key)
            seen[what] = (time.monotonic(), st, json.dumps(doc))

        readers = [threading.Thread(target=read, args=("GET /v1/runs", "GET", "/v1/runs",
                                                       w.keys["agent-7"])),
                   threading.Thread(target=read, args=("GET /v1/audit/export", "GET",
                                                       "/v1/audit/export", w.admin))]
        for r in readers:
            r.start()
        for r in readers:
            r.join(1.0)
        released = time.monotonic()
        os.unlink(gate)
        for r in readers:
            r.join(HANG)
        t.join(HANG)
        check(answer and answer[0][0] == 202, "POST /v1/runs: %r" % answer)
        run_id = answer[0][1]["id"]
        early = [what for what, (at, st, text) in seen.items() if at < released and run_id in text]
        wrong = []
        if early:
            wrong.append("%s answered with run %s while the batch recording it was not on the "
                         "disk yet (its own POST was still waiting for that fsync)"
                         % (early, run_id))

        # the same for a run's end: its poller must not read "completed" before it is durable
        w.template("nap", "await shop.slow(500); return 'rested';", ["shop.slow"])
        st, doc = w.run({"template": "nap", "wait": False}, want=202)
        open(gate, "w").close()
        deadline = time.monotonic() + HANG
        while not os.path.exists(gate + ".held"):
            check(time.monotonic() < deadline, "the writer's fsync never came")
            time.sleep(0.005)
        seen.clear()
        reader = threading.Thread(target=read, args=("GET /v1/runs/{id}", "GET",
                                                     "/v1/runs/" + doc["id"], w.keys["agent-7"]))
        reader.start()
        reader.join(1.0)
        released = time.monotonic()
        os.unlink(gate)
        reader.join(HANG)
        at, st, text = seen["GET /v1/runs/{id}"]
        if at < released and json.loads(text)["status"] == "completed":
            wrong.append("GET /v1/runs/%s answered completed while the batch recording that end "
                         "was not on the disk yet" % doc["id"])
        check(not wrong, "; ".join(wrong))
    finally:
        if os.path.exists(gate):
            os.unlink(gate)
        w.close()


def t_a_batch_that_arrives_during_an_fsync_waits_for_its_own(tmp):
    # A run started while the writer waits for the disk (docs/server.md) must wait for its own
    # batch's fsync, not only for the one in flight when it arrived: its POST is not answered,
    # its run's connector call is not sent and nothing - no GET, no other connection to the
    # database - shows its run before then (a commit is visible only once it is durable).
    import sqlite3
    import threading
    so = os.environ.get("FAILSYNC_LIB", "")
    check(os.path.exists(so), "FAILSYNC_LIB (the failsync library, set by ctest) is %r" % so)
    gate = os.path.join(tmp, "gate")
    armed = os.path.join(tmp, "armed")
    env = {"FAILSYNC_THREAD": "airlockd-writer", "FAILSYNC_GATE": gate,
           "FAILSYNC_ARMED": armed, "LD_PRELOAD": so,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    w = World(tmp, env_extra=env)

    def held(n):
        deadline = time.monotonic() + HANG
        while not os.path.exists("%s.%d.held" % (gate, n)):
            check(time.monotonic() < deadline, "batch fsync %d never came" % n)
            time.sleep(0.005)

    def paid_rows():
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(w.dir, "airlock.db"), uri=True)
        try:
            return db.execute("SELECT id FROM runs WHERE template = 'paid'").fetchall()
        finally:
            db.close()

    try:
        w.template("nap", "await shop.slow(3000); return 'rested';", ["shop.slow"])
        w.template("paid", "return (await shop.orders('paid')).length;", ["shop.orders"])
        # from here the writer's first fsync (run 1's start) and its second (run 2's) wait for
        # the test; run 1 naps long enough that its end cannot be the second
        for n in (1, 2):
            open("%s.%d" % (gate, n), "w").close()
        open(armed, "w").close()
        answers = {}

        def post(name, template):
            answers[name] = (w.run({"template": template, "wait": False}), time.monotonic())

        first = threading.Thread(target=post, args=("nap", "nap"))
        first.start()
        held(1)
        # run 1's start is in the fsync; run 2 arrives meanwhile
        second = threading.Thread(target=post, args=("paid", "paid"))
        second.start()
        os.unlink("%s.1" % gate)  # run 1's fsync ends; run 2's batch goes to the next one
        first.join(HANG)
        check("nap" in answers and answers["nap"][0][0] == 202, "run 1: %r" % (answers.get("nap"),))
        held(2)
        seen = {}

        def read():
            st, doc, _ = w.s.request("GET", "/v1/runs?template=paid", None,
                                     key=w.keys["agent-7"])
            seen["get"] = (time.monotonic(), st, doc)

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(HANG)
        rows_meanwhile = paid_rows()
        calls_meanwhile = w.shop.calls()["by_function"].get("shop.orders", 0)
        released = time.monotonic()
        os.unlink("%s.2" % gate)
        second.join(HANG)
        wrong = []
        if calls_meanwhile:
            wrong.append("run 2's connector call was sent before its start record's fsync")
        if rows_meanwhile:
            wrong.append("run 2's row was visible before its batch's fsync: %r" % rows_meanwhile)
        if "get" not in seen or seen["get"][1] != 200 or seen["get"][2]:
            wrong.append("GET /v1/runs showed run 2 before its batch's fsync: %r"
                         % (seen.get("get"),))
        if "paid" not in answers or answers["paid"][1] < released:
            wrong.append("POST /v1/runs of run 2 was answered before its batch's fsync: %r"
                         % (answers.get("paid"),))
        check(not wrong, "; ".join(wrong))
        paid_id = answers["paid"][0][1]["id"]
        check(answers["paid"][0][0] == 202 and [r[0] for r in paid_rows()] == [paid_id],
              "run 2: %r" % (answers["paid"],))
        check(w.until(paid_id, ("completed",))["value"] == 2, "run 2 completes after its fsync")
        check(w.until(answers["nap"][0][1]["id"], ("completed",))["value"] == "rested", "run 1")
    finally:
        for n in (1, 2):
            if os.path.exists("%s.%d" % (gate, n)):
                os.unlink("%s.%d" % (gate, n))
        w.close()


def t_types_declare_what_a_run_has(tmp):
    # GET .../types: the version's host functions typed from their connector schemas, and its
    # input, as TypeScript for a model's prompt; agents see approved versions only
    w = World(tmp)
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "crm", "department": "finance", "url": w.shop.url,
            "signing_secret": SECRET, "functions": {"lookup": {
                "description": "a customer by id",
                "args_schema": {"type": "array", "items": {"type": "integer"},
                                "minItems": 1, "maxItems": 1},
                "result_schema": {"type": "object", "properties": {
                    "name": {"type": "string"}, "tier": {"enum": ["gold", "basic"]}},
                    "required": ["name"], "additionalProperties": False}}}}, w.admin, 201)
        schema = {"type": "object", "properties": {"customer": {"type": "integer",
                                                                "description": "crm id"}},
                  "required": ["customer"], "additionalProperties": False}
        n = w.template("greet", "const c = await crm.lookup(input.customer); return c.name;",
                       ["shop.refund", "crm.lookup"], schema=schema)
        st, text, _ = w.s.request("GET", "/v1/templates/greet/versions/%d/types" % n,
                                  key=w.keys["agent-7"])
        check(st == 200 and w.s.last_headers["content-type"].startswith("text/plain"),
              "types: %d %r" % (st, w.s.last_headers))
        for line in ("declare const crm: {", "  /** a customer by id */",
                     "  lookup(arg1: number): Promise<{", "    name: string;",
                     "    tier?: \"gold\" | \"basic\";", "declare const shop: {",
                     "  /** Sensitive: each call waits for a person's approval. */",
                     "  refund(...args: (unknown)[]): Promise<unknown>;",
                     "declare const input: {", "  /** crm id */", "  customer: number;"):
            check(line in text.splitlines(), "no line %r in:\n%s" % (line, text))
        check(text.index("declare const crm") < text.index("declare const shop"), text)
        # a draft is not the agent's to read, nor another department's agent's at all
        w.template("draft", "return 1;", [], approve=False)
        st, e, _ = w.s.request("GET", "/v1/templates/draft/versions/1/types",
                               key=w.keys["agent-7"])
        check(st == 404, "an agent read a draft's types: %d %r" % (st, e))
        st, e, _ = w.s.request("GET", "/v1/templates/greet/versions/%d/types" % n,
                               key=w.keys["agent-9"])
        check(st in (403, 404), "another department's agent: %d %r" % (st, e))
        st, text, _ = w.s.request("GET", "/v1/templates/draft/versions/1/types",
                                  key=w.keys["alice"])
        check(st == 200 and "declare const input: {" in text, "the author: %d %r" % (st, text))
        # airlock types: the same text; without VERSION the newest approved one
        st, want, _ = w.s.request("GET", "/v1/templates/greet/versions/%d/types" % n,
                                  key=w.keys["agent-7"])
        env = dict(os.environ, AIRLOCK_URL="http://127.0.0.1:%d/" % w.s.port,
                   AIRLOCK_KEY=w.keys["agent-7"])
        for args in (["greet"], ["greet", str(n)]):
            p = subprocess.run([ts.CLI, "types"] + args, env=env, capture_output=True,
                               text=True, timeout=HANG)
            check(p.returncode == 0 and p.stdout == want, "airlock types %r: %d %r %r" % (
                args, p.returncode, p.stdout[:200], p.stderr))
        p = subprocess.run([ts.CLI, "types", "draft"], env=env, capture_output=True, text=True,
                           timeout=HANG)
        # to an agent, a template without an approved version is not there
        check(p.returncode == 1 and "404 NOT_FOUND: no template draft" in p.stderr,
              "airlock types of a draft-only template: %d %r" % (p.returncode, p.stderr))
        p = subprocess.run([ts.CLI, "types", "greet", "9"], env=env, capture_output=True,
                           text=True, timeout=HANG)
        check(p.returncode == 1 and "404 NOT_FOUND" in p.stderr, "a missing version: %d %r" % (
            p.returncode, p.stderr))
        p = subprocess.run([ts.CLI, "types", "greet"], env={"PATH": os.environ["PATH"]},
                           capture_output=True, text=True, timeout=HANG)
        check(p.returncode == 2 and "AIRLOCK_URL" in p.stderr, "no AIRLOCK_URL: %r" % p.stderr)
    finally:
        w.close()


def t_arguments_breaking_args_schema_are_a_type_error(tmp):
    # a call whose arguments break its function's args_schema never leaves airlockd: the guest
    # gets a TypeError naming the argument (the engine's own, though the guest replaced
    # globalThis.TypeError), and a resumed run replays that answer as the same TypeError
    w = World(tmp)
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "store", "department": "finance", "url": w.shop.url,
            "signing_secret": SECRET, "functions": {"listOrders": {"args_schema": {
                "type": "array", "minItems": 1, "maxItems": 1,
                "items": {"type": "string"}}}}}, w.admin, 201)
        w.template("typed", """
            const Real = TypeError;
            globalThis.TypeError = function Forged() {};
            let first;
            try { await store.listOrders(7); }
            catch (e) { first = [e instanceof Real, e.name, e.message]; }
            const paid = await store.listOrders("paid");
            const r = await shop.refund(paid[0].id, 5);
            return { first, refunded: r.refunded };""", ["store.listOrders", "shop.refund"])
        st, doc = w.run({"template": "typed"}, want=202)
        check([c["outcome"] for c in doc["host_calls"]] == ["threw", "returned", "interrupted"],
              "calls: %r" % doc["host_calls"])
        want = "store.listOrders: argument 1 (arg1): must be string"
        check(doc["host_calls"][0]["message"] == want, "message: %r" % doc["host_calls"][0])
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed"))
        check(done["status"] == "completed" and done["value"] == {
            "first": [True, "TypeError", want], "refunded": "o-1"}, "resumed: %r" % done)
        # only the good call reached the shop, once, though the run executed twice
        check(w.shop.calls()["by_function"].get("store.listOrders") == 1,
              "shop saw: %r" % w.shop.calls())
        # uncaught: the run fails with the host's error, named TypeError
        w.template("untyped", "return await store.listOrders();", ["store.listOrders"])
        st, doc = w.run({"template": "untyped"}, want=200)
        check(doc["status"] == "failed" and doc["error"]["code"] == "HOST_FUNCTION_ERROR" and
              doc["error"]["name"] == "TypeError" and doc["error"]["message"] ==
              "store.listOrders: the arguments: must have at least 1 items", "uncaught: %r" % doc)
        # a sensitive call with bad arguments is refused before anyone is asked to approve it
        w.ok("POST", "/v1/connectors", {
            "name": "pay", "department": "finance", "url": w.shop.url,
            "signing_secret": SECRET, "functions": {"refund": {"sensitive": True, "args_schema": {
                "type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "minItems": 2, "items": False}}}},
            w.admin, 201)
        w.template("payit", """
            try { await pay.refund("o-1", "lots"); } catch (e) { return [e.name, e.message]; }""",
                   ["pay.refund"])
        st, doc = w.run({"template": "payit"}, want=200)
        check(doc["status"] == "completed" and doc["value"] == [
            "TypeError", "pay.refund: argument 2 (arg2): must be integer"] and
              doc["approvals"] == [] and w.pending() == [], "sensitive: %r" % doc)
        st, text, _ = w.s.request("GET", "/v1/templates/payit/versions/1/types",
                                  key=w.keys["agent-7"])
        check("  refund(arg1: string, arg2: number): Promise<unknown>;" in text.splitlines(),
              "positional types: %s" % text)
    finally:
        w.close()


def t_run_lists_its_host_calls(tmp):
    # the run object's host_calls: every call in order with its outcome, across the legs of a
    # resumed run; and GET /v1/approvals?run= keeps that run's approvals
    w = World(tmp)
    try:
        w.template("refund", REFUND, ["shop.orders", "shop.refund"])
        st, doc = w.run({"template": "refund", "input": {"amount": 7}}, want=202)
        calls = [(c["call"], c["function"], c["outcome"]) for c in doc["host_calls"]]
        check(calls == [(1, "shop.orders", "returned"), (2, "shop.refund", "interrupted")],
              "waiting: %r" % doc["host_calls"])
        check(doc["host_calls"][1]["args"] == ["o-1", 7], "args: %r" % doc["host_calls"])
        st, other = w.run({"template": "refund", "input": {"amount": 8}}, want=202)
        mine = w.ok("GET", "/v1/approvals?run=" + doc["id"], None, w.keys["bob"])
        check([a["id"] for a in mine] == doc["approvals"], "approvals?run=: %r" % mine)
        error_of(*w.s.request("GET", "/v1/approvals?run=", None, key=w.keys["bob"])[:2], 400,
                 "INVALID_REQUEST")
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        done = w.until(doc["id"], ("completed",))
        calls = [(c["function"], c["outcome"]) for c in done["host_calls"]]
        check(calls == [("shop.orders", "returned"), ("shop.refund", "interrupted"),
                        ("shop.refund", "returned")], "resumed: %r" % done["host_calls"])
        check(all(isinstance(c["duration_ms"], (int, float)) for c in done["host_calls"]), "ms")
        # a run not yet ended lists none
        w.template("nap", "await shop.slow(3000); return 1;", ["shop.slow"])
        st, napping = w.run({"template": "nap", "wait": False}, want=202)
        check(napping["host_calls"] == [], "running: %r" % napping)
    finally:
        w.close()


def t_adhoc_runs(tmp):
    w = World(tmp)
    try:
        body = {"source": "return await shop.orders('pending')", "department": "finance",
                "functions": ["shop.orders"]}
        error_of(*w.run(body), 403, "ADHOC_DISABLED")
        w.ok("PUT", "/v1/departments/finance/policy", {"allow_adhoc": True}, w.admin)
        st, doc = w.run(body, want=200)
        check(doc["status"] == "completed" and doc["value"][0]["id"] == "o-3", "%r" % doc)
        start = [r for r in audit_rows(w.dir, "run.start") if r["subject"] == doc["id"]][0]
        check(start["details"]["source"] == body["source"], "ad-hoc source not audited")
        error_of(*w.run(dict(body, department="other"), key=w.keys["agent-9"]), 403,
                 "ADHOC_DISABLED")
        error_of(*w.run(dict(body, functions=["nosuch.fn"])), 409, "CONFLICT")
    finally:
        w.close()


def mcp_call(w, name, arguments, key=None, want=200):
    """tools/call over POST /v1/mcp (docs/mcp.md); the JSON-RPC result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    doc = w.ok("POST", "/v1/mcp", body, key or w.keys["agent-7"], want)
    check(doc["jsonrpc"] == "2.0" and doc["id"] == 1 and "result" in doc, "mcp: %r" % doc)
    return doc["result"]


def t_mcp_calls_are_governed_runs(tmp):
    """A tool call over MCP is the run POST /v1/runs makes: the same records, the same wait for
    a person, the same resume; and a client that hangs up on a call leaves nothing behind
    (under the sanitizers: the deferred answer's reshape state freed once). The MCP client
    itself is tested in tests/mcp."""
    w = World(tmp)
    try:
        w.template("refund", REFUND, ["shop.orders", "shop.refund"],
                   schema={"type": "object", "properties": {"amount": {"maximum": 50}}})
        w.template("nap", "return await shop.slow(input.ms)", ["shop.slow"])
        r = mcp_call(w, "refund", {"amount": 7})
        check("isError" not in r and r["structuredContent"]["status"] == "awaiting_approval",
              "waiting: %r" % r)
        run_id, apr = r["structuredContent"]["run"], r["structuredContent"]["approvals"][0]
        check(run_id in r["content"][0]["text"] and apr in r["content"][0]["text"], "%r" % r)
        st, rest = w.run({"template": "refund", "input": {"amount": 7}}, want=202)
        # the same records, with the same members, as a run started with POST /v1/runs
        for action in ("run.start", "approval.request", "run.wait"):
            got = [r for r in audit_rows(w.dir, action) if r["subject"] in (run_id, apr)]
            want = [r for r in audit_rows(w.dir, action) if r["subject"] in
                    (rest["id"], rest["approvals"][0])]
            check(len(got) == 1 and len(want) == 1 and
                  set(got[0]["details"]) == set(want[0]["details"]) and
                  got[0]["actor"] == want[0]["actor"], "%s: %r vs %r" % (action, got, want))
        w.ok("POST", "/v1/approvals/%s/approve" % apr, {"comment": "ok"}, w.keys["bob"])
        w.until(run_id, ("completed",))
        g = mcp_call(w, "get_run", {"run": run_id})
        check(g["structuredContent"] == {"run": run_id, "status": "completed",
                                         "value": {"first": "o-1",
                                                   "refund": {"refunded": "o-1", "amount": 7}}},
              "get_run: %r" % g)
        # an input against the schema: an error result naming the field, no run
        bad = mcp_call(w, "refund", {"amount": 70})
        check(bad.get("isError") is True and "/amount" in bad["content"][0]["text"], "%r" % bad)
        # another department's agent has no such tool
        other = w.ok("POST", "/v1/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                         "params": {"name": "refund", "arguments": {}}},
                     w.keys["agent-9"])
        check(other["error"]["code"] == -32602, "agent-9: %r" % other)
        # a client that hangs up while its call runs: the run still ends, recorded
        conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG)
        body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                           "params": {"name": "nap", "arguments": {"ms": 300}}})
        conn.request("POST", "/v1/mcp", body=body, headers={
            "Authorization": "Bearer " + w.keys["agent-7"], "Content-Type": "application/json"})
        conn.close()
        deadline = time.monotonic() + HANG
        while True:
            naps = w.ok("GET", "/v1/runs?template=nap", None, w.admin)
            if naps and naps[0]["status"] == "completed":
                break
            check(time.monotonic() < deadline, "the abandoned call's run: %r" % naps)
            time.sleep(0.02)
        check(w.ok("POST", "/v1/mcp", {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                   w.keys["agent-7"]) == {"jsonrpc": "2.0", "id": 4, "result": {}}, "ping after")
    finally:
        w.close()


def t_mcp_a_deep_value_is_the_value(tmp):
    """A value nested as deep as a run may return (1000 levels cross the boundary) is the tool's
    result over MCP, as POST /v1/runs answers it: completed with that value, not an error about
    airlockd's answer."""
    w = World(tmp, adhoc=True)
    try:
        for depth in (60, 300, 900):
            mcp_deep_value(w, depth)
    finally:
        w.close()


def mcp_deep_value(w, depth):
    src = "let v = 1; for (let i = 0; i < %d; i++) v = [v]; return v;" % depth
    deep = 1
    for _ in range(depth):
        deep = [deep]
    st, doc = w.run({"source": src, "functions": [], "department": "finance", "wait": True})
    check(st == 200 and doc["status"] == "completed" and doc["value"] == deep,
          "POST /v1/runs: %d %r" % (st, str(doc)[:300]))
    r = mcp_call(w, "execute_code", {"source": src, "functions": []})
    check("isError" not in r and r["structuredContent"]["status"] == "completed" and
          r["structuredContent"]["value"] == deep and
          json.loads(r["content"][0]["text"]) == deep, "tools/call: %r" % str(r)[:300])
    g = mcp_call(w, "get_run", {"run": r["structuredContent"]["run"]})
    check("isError" not in g and g["structuredContent"]["value"] == deep,
          "get_run: %r" % str(g)[:300])


def t_deep_values_are_recorded(tmp):
    """A value, or a host call's arguments, nested deeper than an audit record may hold (it
    reads records 64 levels deep) is recorded as a huge one is, by its size and digest: the run
    ends as the guest made it end, not 'could not be recorded' - above all after its call
    reached the connector, which the audit must show."""
    w = World(tmp, adhoc=True)
    try:
        deep = 1
        for _ in range(100):
            deep = [deep]
        make = "let v = 1; for (let i = 0; i < 100; i++) v = [v];"
        st, doc = w.run({"source": make + " return v;", "functions": [], "department": "finance",
                         "wait": True})
        check(st == 200 and doc["status"] == "completed" and doc["value"] == deep,
              "a deep value: %d %r" % (st, str(doc)[:300]))
        end = [r for r in audit_rows(w.dir, "run.end") if r["subject"] == doc["id"]]
        check(len(end) == 1 and end[0]["details"]["value"]["$truncated"] is True, "%r" % end)
        st, doc = w.run({"source": make + " await shop.orders(v); return 'called';",
                         "functions": ["shop.orders"], "department": "finance", "wait": True})
        check(st == 200 and doc["status"] == "completed" and doc["value"] == "called",
              "deep arguments: %d %r" % (st, str(doc)[:300]))
        check(w.shop.calls()["by_function"].get("shop.orders") == 1, "%r" % w.shop.calls())
        calls = [r for r in audit_rows(w.dir, "run.host_call") if r["subject"] == doc["id"]]
        check(len(calls) == 1 and calls[0]["details"]["function"] == "shop.orders" and
              calls[0]["details"]["args"]["$truncated"] is True, "run.host_call: %r" % calls)
    finally:
        w.close()


def stringify(value):
    """JSON.stringify's text of a value as the boundary format carries it: compact, everything
    as is but a lone surrogate, written as lowercase \\udxxx."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return re.sub("[\ud800-\udfff]", lambda m: "\\u%04x" % ord(m.group()), text)


def sha256_of(value):
    return hashlib.sha256(stringify(value).encode()).hexdigest()


def the_log_verifies(w, tmp):
    """GET /v1/audit/verify says ok, and so does `airlock audit verify` on an export."""
    v = w.ok("GET", "/v1/audit/verify", None, w.admin)
    check(v["ok"], "the chain does not verify: %r" % v)
    pub = w.ok("GET", "/v1/audit/checkpoint", None, w.admin)["public_key"]
    st, _, body = w.s.raw_get("/v1/audit/export", w.admin)
    check(st == 200, "export: %d" % st)
    path = os.path.join(tmp, "export.jsonl")
    with open(path, "wb") as f:
        f.write(body)
    p = subprocess.run([ts.CLI, "audit", "verify", path, "--public-key", pub],
                       capture_output=True, timeout=HANG)
    check(p.returncode == 0, "audit verify: %d %r %r" % (p.returncode, p.stdout, p.stderr))


NOTE = """
const s = input.note.slice(0, 5);
console.log(s);
await shop.orders(s);
return s;
"""


def t_a_lone_surrogate_is_recorded_replaced_with_its_digest(tmp):
    """Cutting an emoji in two (a lone surrogate) in the value and a call's arguments (and
    logging it) ends the run as it ended; its records hold U+FFFD and the SHA-256 of what the
    boundary format carried, and the chain verifies."""
    w = World(tmp)
    try:
        w.template("note", NOTE, ["shop.orders"])
        st, doc = w.run({"template": "note", "input": {"note": "abcd\U0001F600ef"}}, want=200)
        cut = "abcd\ud83d"
        check(doc["status"] == "completed" and doc["value"] == cut, "run: %r" % doc)
        # the run's own JSON keeps the value as the guest made it
        got = w.get(doc["id"])
        # (console texts are Unicode already: libairlock hands them out with U+FFFD)
        logged = [{"level": "log", "text": "abcd\ufffd"}]
        check(got["value"] == cut and got["console"] == logged and
              [c["args"] for c in got["host_calls"]] == [[cut]], "GET: %r" % got)
        check(w.shop.calls()["by_function"] == {"shop.orders": 1}, "%r" % w.shop.calls())
        calls = [r["details"] for r in audit_rows(w.dir, "run.host_call")
                 if r["subject"] == doc["id"]]
        check(len(calls) == 1 and calls[0]["function"] == "shop.orders" and
              calls[0]["args"] == ["abcd\ufffd"] and calls[0]["args_sha256"] == sha256_of([cut]),
              "run.host_call: %r" % calls)
        ends = [r["details"] for r in audit_rows(w.dir, "run.end") if r["subject"] == doc["id"]]
        check(len(ends) == 1, "run.end: %r" % ends)
        end = ends[0]
        check(end["status"] == "completed" and end["value"] == "abcd\ufffd" and
              end["value_sha256"] == sha256_of(cut) and
              end["console"] == logged and "console_sha256" not in end, "run.end: %r" % end)
        the_log_verifies(w, tmp)
    finally:
        w.close()


GARBLED = """
const refund = await shop.refund("o-1", 7);
const g = await garbled.note();
return { refund, note: g.note };
"""


def t_a_connector_answering_a_lone_surrogate_erases_no_call(tmp):
    """A connector that answers with a lone surrogate cannot erase the records of the calls
    made before it: the approved refund that reached the shop keeps its run.host_call."""
    w = World(tmp)
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "garbled", "department": "finance", "url": w.shop.url,
            "signing_secret": SECRET, "functions": {"note": {}}}, w.admin, 201)
        w.template("garbled", GARBLED, ["shop.refund", "garbled.note"])
        st, doc = w.run({"template": "garbled"}, want=202)
        run_id = doc["id"]
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        doc = w.until(run_id, ("completed", "failed"))
        check(doc["status"] == "completed" and doc["value"] == {
            "refund": {"refunded": "o-1", "amount": 7}, "note": "ok \ud800"}, "run: %r" % doc)
        check(w.shop.calls()["by_function"] == {"shop.refund": 1, "garbled.note": 1},
              "%r" % w.shop.calls())
        calls = [(r["details"]["function"], r["details"]["outcome"])
                 for r in audit_rows(w.dir, "run.host_call") if r["subject"] == run_id]
        # the first leg's refund interrupted; the resumed leg sent it, then the garbled call
        check(calls == [("shop.refund", "interrupted"), ("shop.refund", "returned"),
                        ("garbled.note", "returned")], "run.host_call records: %r" % calls)
        ends = [r["details"] for r in audit_rows(w.dir, "run.end") if r["subject"] == run_id]
        check(len(ends) == 1 and ends[0]["status"] == "completed" and
              ends[0]["value"] == {"refund": {"refunded": "o-1", "amount": 7},
                                   "note": "ok \ufffd"} and
              ends[0]["value_sha256"] == sha256_of(doc["value"]), "run.end: %r" % ends)
        the_log_verifies(w, tmp)
    finally:
        w.close()


def t_visibility(tmp):
    w = World(tmp)
    try:
        w.template("one", "return 1", [])
        st, doc = w.run({"template": "one"}, want=200)
        st, doc2 = w.run({"template": "one"}, key=w.keys["mallory"], want=200)
        # an agent sees its own runs only; an approver and an auditor see the department's
        mine = w.ok("GET", "/v1/runs", None, w.keys["agent-7"])
        check([r["id"] for r in mine] == [doc["id"]], "agent's list: %r" % mine)
        st, e, _ = w.s.request("GET", "/v1/runs/" + doc2["id"], key=w.keys["agent-7"])
        error_of(st, e, 404, "NOT_FOUND")
        st, e, _ = w.s.request("GET", "/v1/runs/" + doc["id"], key=w.keys["agent-9"])
        error_of(st, e, 403, "FORBIDDEN")
        all_ids = {r["id"] for r in w.ok("GET", "/v1/runs", None, w.keys["eve"])}
        check(all_ids == {doc["id"], doc2["id"]}, "auditor's list: %r" % all_ids)
        bobs = w.ok("GET", "/v1/runs?template=one&status=completed", None, w.keys["bob"])
        check(len(bobs) == 2, "filtered list: %r" % bobs)
        after = w.ok("GET", "/v1/runs?after=" + doc["id"], None, w.keys["bob"])
        check([r["id"] for r in after] == [doc2["id"]], "after: %r" % after)
        check(w.ok("GET", "/v1/runs?status=failed", None, w.keys["bob"]) == [], "status filter")
        by = w.ok("GET", "/v1/runs?principal=mallory", None, w.keys["bob"])
        check([r["id"] for r in by] == [doc2["id"]], "principal filter: %r" % by)
        check(w.ok("GET", "/v1/runs?principal=mallory", None, w.keys["agent-7"]) == [],
              "principal filter for an agent: only its own runs still")
        check(w.ok("GET", "/v1/runs?principal=nobody", None, w.keys["eve"]) == [],
              "principal filter, no such principal")
    finally:
        w.close()


def t_an_agent_with_another_role_sees_only_its_own_runs(tmp):
    """Issue 33 item 1: a run is visible per run. A principal that is an agent in finance and an
    author in hr reads no other agent's finance run - not by id, not in the list, not over MCP -
    and cancels none (each answers as if the run did not exist); a finance auditor and an admin
    still see it, and the principal still sees its own. (World's mallory is an approver of
    finance as well, who may see finance runs: this principal is another.)"""
    w = World(tmp)
    try:
        w.ok("POST", "/v1/departments", {"name": "hr"}, w.admin, 201)
        keys = {}
        for name, grants in (("mallory-hr", (("agent", "finance"), ("author", "hr"))),
                             ("audra", (("auditor", "finance"),))):
            keys[name] = w.ok("POST", "/v1/principals", {"name": name, "kind": "user"}, w.admin,
                              201)["key"]
            for role, dept in grants:
                w.ok("POST", "/v1/principals/%s/roles" % name, {"role": role, "department": dept},
                     w.admin, 201)
        mallory = keys["mallory-hr"]
        w.template("payroll", "console.log('pin ' + input.pin); return {pin: input.pin};", [])
        w.template("payout", "return input.pin;", [], autonomy="supervised")
        secret = "pin-4711-of-agent-7"
        st, done = w.run({"template": "payroll", "input": {"pin": secret}}, want=200)
        check(done["status"] == "completed", "the victim's run: %r" % done)
        st, held = w.run({"template": "payout", "input": {"pin": secret}}, want=202)
        check(held["status"] == "awaiting_approval", "the victim's held run: %r" % held)
        victims = (done["id"], held["id"])
        for run_id in victims:
            st, e, _ = w.s.request("GET", "/v1/runs/" + run_id, key=mallory)
            error_of(st, e, 404, "NOT_FOUND")
            check(secret not in json.dumps(e), "GET leaks: %r" % e)
        for query in ("", "?template=payroll", "?principal=agent-7", "?status=completed"):
            seen = w.ok("GET", "/v1/runs" + query, None, mallory)
            check(not {r["id"] for r in seen} & set(victims) and secret not in json.dumps(seen),
                  "the list %r leaks: %r" % (query, seen))
        for run_id in victims:
            r = mcp_call(w, "get_run", {"run": run_id}, key=mallory)
            check(r.get("isError") is True and r["structuredContent"]["http_status"] == 404 and
                  r["structuredContent"]["error"]["code"] == "NOT_FOUND" and
                  secret not in json.dumps(r), "MCP get_run leaks: %r" % r)
        st, e, _ = w.s.request("POST", "/v1/runs/%s/cancel" % held["id"], key=mallory)
        error_of(st, e, 404, "NOT_FOUND")
        check(w.get(held["id"])["status"] == "awaiting_approval", "cancelled by mallory-hr")
        # whoever may see the department's runs still does, whole
        for key in (keys["audra"], w.admin, w.keys["eve"]):
            got = w.get(done["id"], key)
            check(got["value"] == {"pin": secret} and got["input"] == {"pin": secret},
                  "a reader of finance: %r" % got)
            ids = {r["id"] for r in w.ok("GET", "/v1/runs", None, key)}
            check(set(victims) <= ids, "a reader's list: %r" % ids)
        # and the principal its own runs, by id, in the list and over MCP
        st, own = w.run({"template": "payroll", "input": {"pin": "mine"}}, key=mallory, want=200)
        check(w.get(own["id"], mallory)["value"] == {"pin": "mine"}, "its own run")
        check([r["id"] for r in w.ok("GET", "/v1/runs", None, mallory)] == [own["id"]],
              "its own list")
        r = mcp_call(w, "get_run", {"run": own["id"]}, key=mallory)
        check(r["structuredContent"]["value"] == {"pin": "mine"}, "its own run over MCP: %r" % r)
    finally:
        w.close()


def t_restart_keeps_waiting_runs(tmp):
    w = World(tmp)
    try:
        w.template("refund", REFUND, ["shop.orders", "shop.refund"])
        st, doc = w.run({"template": "refund", "input": {"amount": 3}}, want=202)
        check(w.s.stop() == 0, "SIGTERM exit status")
        w.s = Server(w.dir)
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        done = w.until(doc["id"], ("completed", "failed"))
        check(done["status"] == "completed", "resumed after a restart: %r" % done)
        check(w.shop.calls()["by_function"] == {"shop.orders": 1, "shop.refund": 1},
              "calls %r" % w.shop.calls())
    finally:
        w.close()


def t_kill9_leaves_a_call_in_doubt_to_a_person(tmp):
    w = World(tmp)
    try:
        w.template("slow", SLOW, ["shop.slow"])
        st, doc = w.run({"template": "slow", "wait": False}, want=202)
        # executing, its call sent (on PostgreSQL: claimed from the queue first; a run killed
        # before it sent anything would be executed again, not left to a person)
        w.until_called("shop.slow")
        w.s.proc.kill()
        w.s.proc.wait(timeout=HANG)
        w.s = Server(w.dir)
        done = w.get(doc["id"])
        # shop.slow is not idempotent: the run waits for a person to settle the call in doubt
        check(done["status"] == "awaiting_approval" and len(done["approvals"]) == 1, "%r" % done)
        check([r for r in audit_rows(w.dir, "run.wait") if r["subject"] == doc["id"]],
              "no run.wait record")
        check(w.ok("GET", "/v1/audit/verify", None, w.admin)["ok"], "the chain verifies")
    finally:
        w.close()


def t_sigterm_drains(tmp):
    w = World(tmp)
    try:
        w.template("nap", "await shop.slow(1500); return 'rested';", ["shop.slow"])
        import threading
        got = {}

        def waiter():
            got["answer"] = w.run({"template": "nap"})

        t = threading.Thread(target=waiter)
        t.start()
        w.until_called("shop.slow")
        # a connection opened before the SIGTERM is still served, but starts no run
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG)
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        w.s.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + HANG
        while "stopping" not in w.s.stderr():
            check(time.monotonic() < deadline, "airlockd did not start draining")
            time.sleep(0.02)
        conn.request("POST", "/v1/runs", body=json.dumps({"template": "nap"}).encode(),
                     headers={"Authorization": "Bearer " + w.keys["agent-7"],
                              "Content-Type": "application/json"})
        r = conn.getresponse()
        late = json.loads(r.read())
        conn.close()
        check(r.status == 500 and late["error"]["code"] == "INTERNAL" and
              "shutting down" in late["error"]["message"], "a run started while draining: %d %r"
              % (r.status, late))
        check(w.s.stop() == 0, "SIGTERM exit status")
        t.join(HANG)
        st, doc = got["answer"]
        check(st == 200 and doc["status"] == "completed" and doc["value"] == "rested",
              "the run in flight was not let finish: %d %r" % (st, doc))
        check(w.shop.calls()["by_function"]["shop.slow"] == 1, "the late run executed")
    finally:
        w.close()


def t_runs_config(tmp):
    for bad in ({"max_concurrent": 0}, {"warm_workers": 99}, {"colour": 1},
                {"max_queue": "many"}, {"drain_grace_ms": -1}):
        path = os.path.join(tmp, "bad.json")
        with open(path, "w") as f:
            json.dump({"runs": bad}, f)
        p = subprocess.run([ts.AIRLOCKD, "--config", path], capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"runs takes" in p.stderr, "bad %r: %r" % (bad, p.stderr))
    # no grace: SIGTERM stops the run in flight and hands it back; its call to shop.slow (not
    # idempotent) was sent and never answered, so it cannot go on alone: it waits for a person
    # to settle that call in doubt, and its client still gets the answer
    w = World(tmp, config={"runs": {"max_concurrent": 1, "warm_workers": 0,
                                    "drain_grace_ms": 0}})
    try:
        w.template("nap", "await shop.slow(10000); return 'rested';", ["shop.slow"])
        import threading
        got = {}
        t = threading.Thread(target=lambda: got.setdefault("a", w.run({"template": "nap"})))
        t.start()
        w.until_called("shop.slow")
        check(w.s.stop() == 0, "SIGTERM exit status")
        t.join(HANG)
        st, doc = got["a"]
        check(st == 202 and doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1,
              "no grace: %d %r" % (st, doc))
        waits = [r["details"] for r in audit_rows(w.dir, "run.wait") if r["subject"] == doc["id"]]
        check(len(waits) == 1 and [c["function"] for c in waits[0]["calls_in_doubt"]] ==
              ["shop.slow"] and "drained" in waits[0]["reason"], "run.wait: %r" % waits)
    finally:
        w.close()


def t_version_limits_hold(tmp):
    """docs/server.md's threat model: a run cannot exceed its version's limits (hostile guests)."""
    w = World(tmp)
    try:
        w.template("spin", "while (true) {}", [], limits={"timeout_ms": 300})
        st, doc = w.run({"template": "spin"}, want=200)
        check(doc["status"] == "failed" and doc["error"]["code"] in ("TIMEOUT", "CPU_LIMIT"),
              "a spinning guest past timeout_ms: %r" % doc)
        w.template("greedy", "await shop.orders('paid'); await shop.orders('paid'); return 1;",
                   ["shop.orders"], limits={"host_calls": 1})
        st, doc = w.run({"template": "greedy"}, want=200)
        check(doc["status"] == "failed" and doc["error"]["code"] == "BRIDGE_LIMIT",
              "a second host call past host_calls 1: %r" % doc)
        check(w.shop.calls()["by_function"].get("shop.orders", 0) == 1,
              "the call past the limit reached the connector")
        w.template("hog", "const a = []; while (true) a.push('x'.repeat(1 << 16));", [],
                   limits={"memory_bytes": 8 << 20})
        st, doc = w.run({"template": "hog"}, want=200)
        check(doc["status"] == "failed" and doc["error"]["code"] == "MEMORY_LIMIT",
              "a guest past memory_bytes: %r" % doc)
        w.template("loud", "return 'y'.repeat(100000);", [], limits={"output_bytes": 4096})
        st, doc = w.run({"template": "loud"}, want=200)
        check(doc["status"] == "failed" and doc["error"]["code"] == "OUTPUT_LIMIT",
              "a value past output_bytes: %r" % doc)
    finally:
        w.close()


def t_continuation_key_file(tmp):
    import stat
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        check(s.port, "airlockd did not start: " + s.stderr())
        path = os.path.join(d, "continuation.key")
        mode = stat.S_IMODE(os.stat(path).st_mode)
        check(mode == 0o600, "continuation.key mode %o" % mode)
        key = open(path).read().strip()
        check(len(key) == 64 and all(c in "0123456789abcdef" for c in key), "key %r" % key)
    finally:
        s.kill()
    # the same key at the next start; a bad one from the environment stops airlockd
    s = Server(d)
    s.kill()
    check(open(path).read().strip() == key, "the key changed across a restart")
    for bad in ("zz" * 32, "ab" * 10):
        p = subprocess.run([ts.AIRLOCKD, "--listen", "127.0.0.1:0", "--data-dir", d],
                           env=dict(os.environ, AIRLOCK_CONTINUATION_KEY=bad),
                           capture_output=True, timeout=HANG)
        check(p.returncode != 0 and b"AIRLOCK_CONTINUATION_KEY" in p.stderr,
              "bad key accepted: %r" % p.stderr)
    # never read through a symbolic link
    os.rename(path, path + ".real")
    os.symlink(path + ".real", path)
    p = subprocess.run([ts.AIRLOCKD, "--listen", "127.0.0.1:0", "--data-dir", d],
                       capture_output=True, timeout=HANG)
    check(p.returncode != 0 and b"continuation.key" in p.stderr,
          "a symlinked key was used: %r" % p.stderr)


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]
# SQLite only: the WAL's fsync after an unsynced commit, held back by hosts/failsync.c. On
# PostgreSQL a commit is durable when it returns (the store's sync does nothing): no such window.
SQLITE_ONLY = {"t_nothing_of_a_batch_is_answered_before_its_fsync",
               "t_a_batch_that_arrives_during_an_fsync_waits_for_its_own"}
if ts.PG:
    for name in sorted(SQLITE_ONLY):
        print("not run on PostgreSQL: " + name, flush=True)
    TESTS = [(name, fn) for name, fn in TESTS if name not in SQLITE_ONLY]


def main():
    return ts.run_tests(TESTS, "airlockd-runs-")


if __name__ == "__main__":
    sys.exit(main())
