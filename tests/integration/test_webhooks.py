#!/usr/bin/env python3
"""Integration tests of airlockd's webhooks (docs/webhooks.md): POST/GET/DELETE /v1/webhooks,
each event type delivered to a receiver the test runs with a valid X-Airlock-Signature and a link
under public_url, Slack's body, a retry after a 500 with the same event id, a receiver that hangs
never delaying the run or the approval request that caused its event, a URL airlockd would not
call refused, and the signing secret (a canary) in no answer, audit export, log line or database.

usage: test_webhooks.py --airlockd PATH [-k SUBSTRING]   (AIRLOCK_TEST_DATABASE: on
PostgreSQL)

Waiting for a delivery polls what the receiver got with a deadline; nothing sleeps for timing.
The config's webhooks.retry_first_ms makes the first retry come within a tenth of a second.
"""
import hashlib
import hmac
import http.server
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import HANG, audit_rows, check, db_bytes, db_exec, error_of  # noqa: E402

CANARY = "canary-WEBHOOK-SECRET-4e1d"
DESK = "https://desk.example.com"
CONFIG = {"public_url": DESK + "/", "webhooks": {"retry_first_ms": 100, "poll_ms": 50}}
TYPES = ["approval.requested", "approval.decided", "version.submitted", "version.approved",
         "run.failed", "audit.truncated"]


class Receiver:
    """An HTTP server on a free port that records every POST: /ok answers 200, /flaky 500 to the
    first attempt of each event and 200 after, /hang holds each request until release()."""

    def __init__(self):
        self.got = []  # (path, headers, body bytes), in arrival order
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.held = 0  # /hang requests inside the handler now
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    seen = [g for g in outer.got if g[0] == self.path and
                            g[1].get("x-airlock-event-id") ==
                            self.headers.get("X-Airlock-Event-Id")]
                    outer.got.append((self.path, {k.lower(): v for k, v in self.headers.items()},
                                      body))
                if self.path == "/hang":
                    with outer.lock:
                        outer.held += 1
                    outer.gate.wait(4 * HANG)  # airlockd gives up on it first, and tries again
                    with outer.lock:
                        outer.held -= 1
                status = 500 if self.path == "/flaky" and not seen else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def posts(self, path):
        with self.lock:
            return [(h, b) for p, h, b in self.got if p == path]

    def events(self, path):
        return [json.loads(b) for _, b in self.posts(path)]

    def until(self, path, cond, what):
        deadline = time.monotonic() + HANG
        while True:
            got = self.events(path)
            if cond(got):
                return got
            check(time.monotonic() < deadline, "%s: never came; got %r" % (what, got))
            time.sleep(0.02)

    def release(self):
        self.gate.set()

    def stop(self):
        self.gate.set()
        self.server.shutdown()


def signed(headers, body, secret):
    """Whether X-Airlock-Signature is t=T,v1=HMAC-SHA-256(secret, "T." + body), as a connector
    call's."""
    parts = dict(p.split("=", 1) for p in headers.get("x-airlock-signature", "").split(","))
    want = hmac.new(secret.encode(), parts.get("t", "").encode() + b"." + body,
                    hashlib.sha256).hexdigest()
    return hmac.compare_digest(parts.get("v1", ""), want)


def hook(w, path, events, dept="finance", fmt=None, secret=None, want=201):
    body = {"url": w.receiver.url + path, "events": events, "department": dept,
            "signing_secret": secret or CANARY + path}
    if fmt:
        body["format"] = fmt
    return w.ok("POST", "/v1/webhooks", body, w.admin, want)


def world(tmp):
    w = tr.World(tmp, config=CONFIG)
    w.receiver = Receiver()
    return w


def close(w):
    w.receiver.stop()
    w.close()


FAIL = "throw new Error('boom');"


def t_every_event_signed_with_its_link(tmp):
    w = world(tmp)
    try:
        h = hook(w, "/ok", TYPES)
        check(h["id"].startswith("wh_") and h["events"] == TYPES and h["format"] == "json" and
              h["department"] == "finance" and h["created_by"] == "admin" and h["created"],
              "created: %r" % h)
        slack = hook(w, "/slack", ["approval.requested"], dept="*", fmt="slack")
        other = hook(w, "/other", TYPES, dept="other")
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        w.template("boom", FAIL, [])
        st, doc = w.run({"template": "refund", "input": {"amount": 7}}, want=202)
        run_id, apr = doc["id"], doc["approvals"][0]
        w.ok("POST", "/v1/approvals/%s/approve" % apr, {"comment": "ok"}, w.keys["bob"])
        w.until(run_id, ("completed",))
        st, doc = w.run({"template": "boom", "input": {}})
        check(doc["status"] == "failed", "boom: %r" % doc)
        failed_id = doc["id"]
        want = {"version.submitted": 2, "version.approved": 2, "approval.requested": 1,
                "approval.decided": 1, "run.failed": 1}
        got = w.receiver.until("/ok", lambda g: sorted(e["type"] for e in g) == sorted(
            t for t, n in want.items() for _ in range(n)), "the finance events")
        secret = CANARY + "/ok"
        for (headers, body), e in zip(w.receiver.posts("/ok"), got):
            check(signed(headers, body, secret), "bad signature on %r" % e)
            check(headers["x-airlock-event-id"] == e["id"] and e["id"].startswith("evt_") and
                  headers["content-type"] == "application/json", "headers: %r" % headers)
            check(set(e) == {"id", "type", "time", "department", "data", "link"} and
                  e["department"] == "finance" and e["time"].endswith("Z"), "event: %r" % e)
        by = {e["type"]: e for e in got}
        check(by["approval.requested"]["data"] == {
            "approval": apr, "run": run_id, "kind": "host_call", "function": "shop.refund"} and
            by["approval.requested"]["link"] == DESK + "/runs/" + run_id, "%r" % by)
        check(by["approval.decided"]["data"] == {
            "approval": apr, "run": run_id, "decision": "approved", "decided_by": "bob"},
            "%r" % by["approval.decided"])
        check(by["run.failed"]["data"]["run"] == failed_id and
              by["run.failed"]["data"]["template"] == "boom" and
              by["run.failed"]["link"] == DESK + "/runs/" + failed_id, "%r" % by["run.failed"])
        approved = [e for e in got if e["type"] == "version.approved"]
        check({(e["data"]["template"], e["data"]["version"], e["data"]["by"], e["link"])
               for e in approved} == {
            ("refund", 1, "bob", DESK + "/templates/refund/versions/1"),
            ("boom", 1, "bob", DESK + "/templates/boom/versions/1")}, "%r" % approved)
        # Slack's incoming-webhook body, with the same link; the event id in the header
        s = w.receiver.until("/slack", lambda g: len(g) == 1, "the slack message")[0]
        headers, body = w.receiver.posts("/slack")[0]
        check(set(s) == {"text"} and DESK + "/runs/" + run_id in s["text"] and
              "approval.requested" in s["text"] and signed(headers, body, CANARY + "/slack"),
              "slack: %r" % s)
        check(w.receiver.posts("/other") == [], "another department's events went out")
        # listed, never with the secret; deleted, audited
        lst = w.ok("GET", "/v1/webhooks", None, w.admin)
        check(sorted(x["id"] for x in lst) == sorted([h["id"], slack["id"], other["id"]]),
              "list: %r" % lst)
        doc = w.ok("DELETE", "/v1/webhooks/" + other["id"], None, w.admin)
        check(doc == {"id": other["id"], "deleted": True}, "delete: %r" % doc)
        error_of(*w.s.request("DELETE", "/v1/webhooks/" + other["id"], key=w.admin)[:2], 404,
                 "NOT_FOUND")
        error_of(*w.s.request("GET", "/v1/webhooks", key=w.keys["bob"])[:2], 403, "FORBIDDEN")
        recs = audit_rows(w.dir, "webhook.create")
        check(len(recs) == 3 and recs[0]["details"] == {
            "url_origin": w.receiver.url, "events": TYPES, "department": "finance",
            "format": "json"}, "webhook.create: %r" % recs)
        check([r["subject"] for r in audit_rows(w.dir, "webhook.delete")] == [other["id"]],
              "webhook.delete")
        only_urls_airlockd_calls(w)
    finally:
        close(w)


def t_a_failed_delivery_is_retried_with_the_same_id(tmp):
    w = world(tmp)
    try:
        h = hook(w, "/flaky", ["run.failed"], secret=CANARY)
        w.template("boom", FAIL, [])
        st, doc = w.run({"template": "boom", "input": {}})
        got = w.receiver.until("/flaky", lambda g: len(g) >= 2, "the retry")
        check(got[0] == got[1] and got[0]["data"]["run"] == doc["id"], "retried: %r" % got)
        ids = {h["x-airlock-event-id"] for h, _ in w.receiver.posts("/flaky")}
        check(ids == {got[0]["id"]}, "event ids: %r" % ids)
        # delivered once the receiver took it: no third attempt
        deadline = time.monotonic() + HANG
        while ts.db_rows(w.dir, "SELECT status FROM webhook_deliveries") != [("delivered",)]:
            check(time.monotonic() < deadline, "not recorded delivered: %r" %
                  ts.db_rows(w.dir, "SELECT status, attempts FROM webhook_deliveries"))
            time.sleep(0.02)
        check(ts.db_rows(w.dir, "SELECT attempts FROM webhook_deliveries") == [(2,)], "attempts")
        check(len(w.receiver.posts("/flaky")) == 2, "sent again after it was delivered")
        the_secret_is_never_shown(w, h)
    finally:
        close(w)


def t_a_hanging_receiver_delays_nothing(tmp):
    w = world(tmp)
    try:
        hook(w, "/hang", TYPES)
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        w.template("boom", FAIL, [])
        # the versions' events are out: the receiver holds the first of them
        w.receiver.until("/hang", lambda g: len(g) >= 1, "the first event")
        st, doc = w.run({"template": "boom", "input": {}})
        check(st == 200 and doc["status"] == "failed", "a failing run while it hangs: %r" % doc)
        st, doc = w.run({"template": "refund", "input": {"amount": 3}}, want=202)
        check(doc["status"] == "awaiting_approval", "approval requested while it hangs: %r" % doc)
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        check(w.until(doc["id"], ("completed",))["status"] == "completed", "resumed")
        with w.receiver.lock:
            check(w.receiver.held >= 1, "the receiver was not holding a delivery meanwhile")
        w.receiver.release()
        w.receiver.until("/hang", lambda g: {"run.failed", "approval.decided"} <= {
            e["type"] for e in g}, "the events after the hang")
    finally:
        close(w)


def only_urls_airlockd_calls(w):
    """A URL airlockd would not call (another scheme, userinfo, no host, a bad port, ...) or a
    malformed body is refused, nothing kept; only an admin registers."""
    before = ts.db_rows(w.dir, "SELECT id FROM webhooks")
    for url in ["file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://example.com/",
                "http://user:pw@example.com/", "http:///x", "http://exa mple.com/",
                "http://example.com:99999/", "javascript:alert(1)", "http://e.com/#frag",
                "", "http://" + "a" * 2100 + ".com/"]:
        st, doc, _ = w.s.request("POST", "/v1/webhooks", {
            "url": url, "events": ["run.failed"], "department": "finance",
            "signing_secret": CANARY}, key=w.admin)
        error_of(st, doc, 400, "INVALID_REQUEST")
        check("url" in doc["error"]["message"], "message: %r" % doc)
    for body in [{"events": ["run.started"]}, {"events": []},
                 {"events": ["run.failed", "run.failed"]}, {"format": "xml"},
                 {"department": "nowhere"}, {"department": "a b"},
                 {"signing_secret": "short"}]:
        full = {"url": w.receiver.url + "/ok", "events": ["run.failed"],
                "department": "finance", "signing_secret": CANARY}
        full.update(body)
        error_of(*w.s.request("POST", "/v1/webhooks", full, key=w.admin)[:2], 400,
                 "INVALID_REQUEST")
    check(ts.db_rows(w.dir, "SELECT id FROM webhooks") == before, "a refused webhook was kept")
    # only an admin registers one
    error_of(*w.s.request("POST", "/v1/webhooks", {
        "url": w.receiver.url + "/ok", "events": ["run.failed"], "department": "finance",
        "signing_secret": CANARY}, key=w.keys["bob"])[:2], 403, "FORBIDDEN")


def the_secret_is_never_shown(w, h):
    """The signing secret (a canary) is in no answer, audit export, log line or database row."""
    answers = [json.dumps(h), json.dumps(w.ok("GET", "/v1/webhooks", None, w.admin))]
    st, _, export = w.s.raw_get("/v1/audit/export", w.admin)
    check(st == 200, "export")
    check(not any(CANARY in a for a in answers), "the secret in an answer: %r" % answers)
    check(CANARY.encode() not in export, "the secret in the audit export")
    check(CANARY not in w.s.stderr(), "the secret in the log")
    check(w.receiver.url not in w.s.stderr(), "the URL in the log")
    check(CANARY.encode() not in db_bytes(w.dir), "the secret in the database")


def t_a_cut_audit_log_is_told(tmp):
    """audit.truncated: with airlockd stopped the newest records go; the restart finds the cut
    and tells the webhooks of "*"."""
    d = os.path.join(tmp, "var")
    cfg = os.path.join(tmp, "airlockd.json")
    with open(cfg, "w") as f:
        json.dump(CONFIG, f)
    args = ["--listen", "127.0.0.1:0", "--data-dir", d, "--config", cfg]
    env = {"AIRLOCK_AUDIT_KEY": ts.AUDIT_KEY}
    r = Receiver()
    s = ts.Server(d, env_extra=env, args=args)
    try:
        k = s.admin_key()
        check(s.request("POST", "/v1/webhooks", {
            "url": r.url + "/ok", "events": ["audit.truncated"], "department": "*",
            "signing_secret": CANARY}, key=k)[0] == 201, "webhook")
        for i in range(3):
            check(s.request("POST", "/v1/departments", {"name": "d%d" % i}, key=k)[0] == 201, i)
        st, _, _ = s.raw_get("/v1/audit/export", k)  # seals the log: audit.head is kept
        check(st == 200 and s.stop() == 0, "export, stop")
    finally:
        s.kill()
    cut = [x for x in audit_rows(d, "department.create")][0]["seq"]
    db_exec(d, "DELETE FROM audit WHERE seq >= ?", (cut,))
    s = ts.Server(d, env_extra=env, args=args)
    try:
        check(s.port, "no start: %s" % s.stderr())
        got = r.until("/ok", lambda g: len(g) == 1, "audit.truncated")[0]
        check(got["type"] == "audit.truncated" and got["department"] is None and
              got["data"]["first_bad_seq"] == cut and got["link"] == DESK + "/audit",
              "event: %r" % got)
    finally:
        s.kill()
        r.stop()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]

if __name__ == "__main__":
    sys.exit(ts.run_tests(TESTS, "airlockd-webhooks-", need_cli=False))
