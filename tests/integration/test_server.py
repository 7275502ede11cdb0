#!/usr/bin/env python3
"""Integration tests of airlockd: bootstrap, errors, departments, principals, keys, roles,
restart, schema version, and the permission table walked route x role x department.

usage: test_server.py --airlockd PATH [--cli PATH] [-k SUBSTRING]

Each test starts airlockd on port 0 in a fresh temporary data directory, reads its listening
line from stderr and drives it with http.client. Every wait is bounded (HANG seconds); a server
is always killed at the end. Prints `N passed, M failed` last and exits 1 on any failure.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import traceback

import openapi_check

HANG = 15
AIRLOCKD = None
CLI = None
# A fixed audit signing key, so a test knows the public key without asking the server.
AUDIT_KEY = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
ROLES = ["admin", "author", "approver", "auditor", "agent"]


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Server:
    def __init__(self, data_dir, env_extra=None, args=None):
        self.data_dir = data_dir
        self.log_path = os.path.join(os.path.dirname(data_dir), "stderr-%d.log" % time.monotonic_ns())
        env = dict(os.environ)
        env.pop("AIRLOCK_BOOTSTRAP_KEY", None)
        env.update(env_extra or {})
        self.log = open(self.log_path, "wb")
        argv = [AIRLOCKD]
        if args is None:
            argv += ["--listen", "127.0.0.1:0", "--data-dir", data_dir]
        else:
            argv += args
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.port = None
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            m = re.search(r"^airlockd: listening on http://127\.0\.0\.1:(\d+)$", self.stderr(), re.M)
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                return
            time.sleep(0.02)
        self.kill()
        raise Fail("airlockd did not print its listening line within %d s" % HANG)

    def stderr(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def admin_key(self):
        with open(os.path.join(self.data_dir, "admin.key")) as f:
            return f.read().strip()

    def raw_get(self, path, key):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        try:
            conn.request("GET", path, headers={"Authorization": "Bearer " + key})
            r = conn.getresponse()
            return r.status, r.getheader("Content-Type"), r.read()
        finally:
            conn.close()

    def request(self, method, path, body=None, key=None, raw=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = "Bearer " + key
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            text = r.read()
            allow = r.getheader("Allow")
            self.last_headers = {k.lower(): v for k, v in r.getheaders()}
            ctype = r.getheader("Content-Type") or ""
        finally:
            conn.close()
        if r.status == 200 and ctype.startswith("application/x-ndjson"):
            return r.status, [json.loads(l) for l in text.decode().splitlines()], allow
        if r.status == 200 and ctype.startswith("text/plain"):
            return r.status, text.decode(), allow
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            raise Fail("%s %s: answer is not JSON: %r" % (method, path, text[:200]))
        # every JSON answer of every test must be what the OpenAPI document says
        try:
            openapi_check.validate(method, path, r.status, doc)
        except openapi_check.Mismatch as e:
            raise Fail("the answer does not match src/server/openapi.json: %s" % e)
        return r.status, doc, allow

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                self.kill()
                raise Fail("airlockd did not exit within %d s of SIGTERM" % HANG)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=HANG)
        self.log.close()


def error_of(status, doc, want_status, want_code):
    check(status == want_status, "status %d, want %d: %r" % (status, want_status, doc))
    check(isinstance(doc, dict) and set(doc) == {"error"}, "not an error body: %r" % doc)
    e = doc["error"]
    check(e.get("code") == want_code, "code %r, want %s" % (e.get("code"), want_code))
    check(isinstance(e.get("message"), str) and e["message"], "no message: %r" % e)
    check(re.fullmatch(r"req_[0-9a-f]{16}", e.get("request_id", "")), "no request_id: %r" % e)


def audit_rows(data_dir, action=None):
    db = sqlite3.connect(os.path.join(data_dir, "airlock.db"), timeout=HANG)
    try:
        q = "SELECT seq, actor, action, subject, department, details FROM audit"
        rows = db.execute(q + (" WHERE action = ?" if action else "") + " ORDER BY seq",
                          (action,) if action else ()).fetchall()
    finally:
        db.close()
    return [dict(seq=r[0], actor=r[1], action=r[2], subject=r[3], department=r[4],
                 details=json.loads(r[5])) for r in rows]


# ---------------------------------------------------------------------------------------------
def t_bootstrap_key_file(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        check(s.port, "no listening line: %s" % s.stderr())
        key_path = os.path.join(d, "admin.key")
        check(stat.S_IMODE(os.stat(d).st_mode) == 0o700, "data dir mode %o" % os.stat(d).st_mode)
        check(stat.S_IMODE(os.stat(key_path).st_mode) == 0o600, "admin.key not 0600")
        key = s.admin_key()
        check(re.fullmatch(r"ak_[0-9a-f]{12}_[0-9a-f]{64}", key), "key shape: %r" % key)
        err = s.stderr()
        check(key_path in err, "stderr does not name the key file: %s" % err)
        check(key not in err, "the key is printed on stderr")
        lines = [l for l in err.splitlines() if l.startswith("airlockd: listening on")]
        check(len(lines) == 1, "listening lines: %r" % lines)
        st, doc, _ = s.request("GET", "/v1/me", key=key)
        check(st == 200 and doc["name"] == "admin", "me: %d %r" % (st, doc))
        check({"role": "admin", "department": "*"} in doc["roles"], "admin roles: %r" % doc)
        with open(os.path.join(d, "airlock.db"), "rb") as f:
            check(key.encode() not in f.read(), "the key is stored in clear")
        check(s.stop() == 0, "SIGTERM exit status not 0")
    finally:
        s.kill()


def t_bootstrap_key_from_env(tmp):
    d = os.path.join(tmp, "var")
    key = "operator-chosen-key-0123456789abcdef-XYZ"
    s = Server(d, env_extra={"AIRLOCK_BOOTSTRAP_KEY": key})
    try:
        check(s.port, "no listening line: %s" % s.stderr())
        check(key not in s.stderr(), "the key is printed")
        st, doc, _ = s.request("GET", "/v1/me", key=key)
        check(st == 200 and doc["name"] == "admin", "me: %d %r" % (st, doc))
        st, doc, _ = s.request("GET", "/v1/me", key=key + "x")
        error_of(st, doc, 401, "UNAUTHENTICATED")
    finally:
        s.kill()
    s = Server(os.path.join(tmp, "short"), env_extra={"AIRLOCK_BOOTSTRAP_KEY": "short"})
    try:
        check(s.proc.wait(timeout=HANG) != 0 and "AIRLOCK_BOOTSTRAP_KEY" in s.stderr(),
              "a short bootstrap key was accepted: %s" % s.stderr())
    finally:
        s.kill()


def t_error_bodies(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        error_of(*s.request("GET", "/v1/principals")[:2], 401, "UNAUTHENTICATED")
        error_of(*s.request("GET", "/v1/principals", key="nope" * 10)[:2], 401, "UNAUTHENTICATED")
        error_of(*s.request("GET", "/v1/principals", headers={"Authorization": "Basic eA=="})[:2],
                 401, "UNAUTHENTICATED")
        error_of(*s.request("GET", "/v1/nothing", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/departments/", key=k)[:2], 404, "NOT_FOUND")
        st, doc, allow = s.request("DELETE", "/v1/departments", key=k)
        error_of(st, doc, 405, "METHOD_NOT_ALLOWED")
        check(allow and "POST" in allow and "GET" in allow, "Allow: %r" % allow)
        error_of(*s.request("BREW", "/healthz")[:2], 405, "METHOD_NOT_ALLOWED")
        bad = [b"{", b"[]", b"\"x\"", b"{\"name\":}", b"{\"name\":\"a\"} x",
               b"{\"name\":1}", b"{\"name\":null}", b"{\"name\":\"ok\",\"extra\":1}",
               b"{\"name\":\"\xff\xfe\"}", b"{\"name\":\"a\",\"name\":\"b\"}",
               b"{\"name\":\"a\\u0000b\"}", b"{\"name\":\"Bad Name\"}", b"{}",
               b"[" * 100 + b"]" * 100, b"{\"a\":" * 60 + b"1" + b"}" * 60, b"\xef\xbb\xbf{}"]
        for raw in bad:
            st, doc, _ = s.request("POST", "/v1/departments", raw=raw, key=k)
            error_of(st, doc, 400, "INVALID_REQUEST")
        error_of(*s.request("POST", "/v1/principals", {"name": "x", "kind": "robot"}, key=k)[:2],
                 400, "INVALID_REQUEST")
        error_of(*s.request("GET", "/v1/me", raw=b"{\"x\":1}", key=k)[:2], 400, "INVALID_REQUEST")
        big = b"{\"name\":\"" + b"a" * (1 << 20) + b"\"}"
        error_of(*s.request("POST", "/v1/departments", raw=big, key=k)[:2], 413,
                 "PAYLOAD_TOO_LARGE")
        # the server is still there and well
        st, doc, _ = s.request("GET", "/healthz")
        check(st == 200 and doc == {"status": "ok"}, "healthz: %d %r" % (st, doc))
        st, doc, _ = s.request("GET", "/readyz")
        check(st == 200 and doc["status"] == "ready", "readyz: %d %r" % (st, doc))
        denied = audit_rows(d, "auth.denied")
        check(len(denied) == 3, "auth.denied records: %r" % denied)
        check(denied[0]["details"]["method"] == "GET" and
              denied[0]["details"]["route"] == "/v1/principals" and
              denied[0]["details"]["status"] == 401, "auth.denied details: %r" % denied[0])
        log = [json.loads(l) for l in s.stderr().splitlines() if l.startswith("{")]
        check(len(log) >= len(bad) + 10, "request log lines: %d" % len(log))
        check(all(re.fullmatch(r"req_[0-9a-f]{16}", l["request_id"]) for l in log), "log ids")
    finally:
        s.kill()


def t_lifecycle(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        st, doc, _ = s.request("POST", "/v1/departments", {"name": "finance"}, key=k)
        check(st == 201 and doc["name"] == "finance" and doc["autonomy"] == "autonomous" and
              doc["allow_adhoc"] is False, "create department: %d %r" % (st, doc))
        error_of(*s.request("POST", "/v1/departments", {"name": "finance"}, key=k)[:2], 409,
                 "CONFLICT")
        st, doc, _ = s.request("PUT", "/v1/departments/finance/policy",
                               {"autonomy": "supervised", "allow_adhoc": True}, key=k)
        check(st == 200 and doc["autonomy"] == "supervised" and doc["allow_adhoc"] is True,
              "policy: %d %r" % (st, doc))
        error_of(*s.request("PUT", "/v1/departments/finance/policy", {"autonomy": "wild"},
                            key=k)[:2], 400, "INVALID_REQUEST")
        error_of(*s.request("PUT", "/v1/departments/nowhere/policy", {}, key=k)[:2], 404,
                 "NOT_FOUND")
        st, doc, _ = s.request("GET", "/v1/departments", key=k)
        check(st == 200 and [x["name"] for x in doc] == ["finance"], "list: %r" % doc)

        st, alice, _ = s.request("POST", "/v1/principals", {"name": "alice", "kind": "agent"},
                                 key=k)
        check(st == 201 and alice["name"] == "alice" and alice["kind"] == "agent" and
              re.fullmatch(r"ak_[0-9a-f]{12}_[0-9a-f]{64}", alice["key"]),
              "create principal: %d %r" % (st, alice))
        error_of(*s.request("POST", "/v1/principals", {"name": "alice"}, key=k)[:2], 409,
                 "CONFLICT")
        st, me, _ = s.request("GET", "/v1/me", key=alice["key"])
        check(st == 200 and me["name"] == "alice" and me["roles"] == [], "me: %r" % me)
        error_of(*s.request("GET", "/v1/principals", key=alice["key"])[:2], 403, "FORBIDDEN")

        grant = {"role": "auditor", "department": "finance"}
        st, doc, _ = s.request("POST", "/v1/principals/alice/roles", grant, key=k)
        check(st == 201 and doc == dict(grant, principal="alice"), "grant: %d %r" % (st, doc))
        error_of(*s.request("POST", "/v1/principals/alice/roles", grant, key=k)[:2], 409,
                 "CONFLICT")
        error_of(*s.request("POST", "/v1/principals/alice/roles",
                            {"role": "admin", "department": "finance"}, key=k)[:2], 400,
                 "INVALID_REQUEST")
        error_of(*s.request("POST", "/v1/principals/alice/roles",
                            {"role": "boss", "department": "*"}, key=k)[:2], 400,
                 "INVALID_REQUEST")
        error_of(*s.request("POST", "/v1/principals/alice/roles",
                            {"role": "agent", "department": "nowhere"}, key=k)[:2], 404,
                 "NOT_FOUND")
        error_of(*s.request("POST", "/v1/principals/bob/roles", grant, key=k)[:2], 404,
                 "NOT_FOUND")
        st, doc, _ = s.request("GET", "/v1/principals", key=alice["key"])
        check(st == 200 and {p["name"] for p in doc} == {"admin", "alice"}, "list: %r" % doc)
        check(all("key" not in p and all(set(x) == {"prefix", "created", "revoked"}
                                         for x in p["keys"]) for p in doc), "keys shown: %r" % doc)
        st, doc, _ = s.request("DELETE", "/v1/principals/alice/roles", grant, key=k)
        check(st == 200, "revoke role: %d %r" % (st, doc))
        error_of(*s.request("DELETE", "/v1/principals/alice/roles", grant, key=k)[:2], 404,
                 "NOT_FOUND")
        error_of(*s.request("GET", "/v1/principals", key=alice["key"])[:2], 403, "FORBIDDEN")

        st, k2, _ = s.request("POST", "/v1/principals/alice/keys", key=k)
        check(st == 201 and k2["prefix"] in k2["key"] and k2["key"] != alice["key"],
              "new key: %d %r" % (st, k2))
        error_of(*s.request("POST", "/v1/principals/bob/keys", key=k)[:2], 404, "NOT_FOUND")
        st, doc, _ = s.request("DELETE", "/v1/principals/alice/keys/" + alice["prefix"], key=k)
        check(st == 200 and doc["revoked"] is True, "revoke key: %d %r" % (st, doc))
        error_of(*s.request("DELETE", "/v1/principals/alice/keys/" + alice["prefix"], key=k)[:2],
                 404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/me", key=alice["key"])[:2], 401, "UNAUTHENTICATED")
        st, me, _ = s.request("GET", "/v1/me", key=k2["key"])
        check(st == 200 and me["name"] == "alice", "second key: %d %r" % (st, me))

        actions = [(r["actor"], r["action"]) for r in audit_rows(d)]
        for want in [("admin", "department.create"), ("admin", "department.policy"),
                     ("admin", "principal.create"), ("admin", "key.create"),
                     ("admin", "role.grant"), ("admin", "role.revoke"), ("admin", "key.revoke"),
                     ("alice", "auth.denied"), ("airlockd", "auth.denied")]:
            check(want in actions, "no audit record %r in %r" % (want, actions))
        with open(os.path.join(d, "airlock.db"), "rb") as f:
            blob = f.read()
        wal = os.path.join(d, "airlock.db-wal")
        if os.path.exists(wal):
            with open(wal, "rb") as f:
                blob += f.read()
        check(alice["key"].encode() not in blob and k2["key"].encode() not in blob,
              "a key is stored in clear")
    finally:
        s.kill()


def t_restart_keeps_data(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        check(s.request("POST", "/v1/departments", {"name": "ops"}, key=k)[0] == 201, "create")
        check(s.stop() == 0, "SIGTERM exit status not 0")
    finally:
        s.kill()
    s = Server(d)
    try:
        check(s.port, "no restart: %s" % s.stderr())
        check("created principal" not in s.stderr(), "bootstrapped again: %s" % s.stderr())
        check(s.admin_key() == k, "admin.key changed")
        st, doc, _ = s.request("GET", "/v1/departments", key=k)
        check(st == 200 and [x["name"] for x in doc] == ["ops"], "after restart: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/principals", key=k)
        check([p["name"] for p in doc] == ["admin"], "principals: %r" % doc)
    finally:
        s.kill()


def t_newer_schema_refused(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    s.stop()
    s.kill()
    db = sqlite3.connect(os.path.join(d, "airlock.db"))
    db.execute("PRAGMA user_version = 999")
    db.commit()
    db.close()
    s = Server(d)
    try:
        rc = s.proc.wait(timeout=HANG)
        err = s.stderr()
        check(rc != 0 and "schema version 999" in err and "newer" in err,
              "newer schema not refused: rc %s, %s" % (rc, err))
    finally:
        s.kill()


def t_options_and_config(tmp):
    for argv in (["--bogus"], ["--listen"], ["--listen", "nohost"], ["--listen", "h:99999"],
                 ["positional"]):
        p = subprocess.run([AIRLOCKD] + argv, capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"usage:" in p.stderr, "%r: rc %d %r" % (argv, p.returncode,
                                                                           p.stderr))
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"listen":"127.0.0.1:0","colour":"blue"}')
    p = subprocess.run([AIRLOCKD, "--config", bad], capture_output=True, timeout=HANG)
    check(p.returncode == 2 and b"colour" in p.stderr, "bad config: %r" % p.stderr)
    for limit in ({"burst": 0.5}, {"requests_per_second": 0}, {"burst": "10"}, {"rate": 1}):
        with open(bad, "w") as f:
            json.dump({"rate_limit": limit}, f)
        p = subprocess.run([AIRLOCKD, "--config", bad], capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"rate_limit" in p.stderr, "%r: %r" % (limit, p.stderr))
    p = subprocess.run([AIRLOCKD, "--config", os.path.join(tmp, "missing.json")],
                       capture_output=True, timeout=HANG)
    check(p.returncode == 2, "missing config accepted")
    good = os.path.join(tmp, "good.json")
    d = os.path.join(tmp, "cfgvar")
    with open(good, "w") as f:
        json.dump({"listen": "127.0.0.1:0", "data_dir": d, "body_limit_bytes": 64,
                   "rate_limit": {"requests_per_second": 10, "burst": 20}}, f)
    s = Server(d, args=["--config", good])
    try:
        check(s.port, "config not used: %s" % s.stderr())
        k = s.admin_key()
        error_of(*s.request("POST", "/v1/departments", {"name": "x" * 60}, key=k)[:2], 413,
                 "PAYLOAD_TOO_LARGE")
        check(s.request("POST", "/v1/departments", {"name": "x"}, key=k)[0] == 201, "small body")
    finally:
        s.kill()


def t_rate_limit(tmp):
    d = os.path.join(tmp, "var")
    cfg = os.path.join(tmp, "limit.json")
    with open(cfg, "w") as f:
        json.dump({"listen": "127.0.0.1:0", "data_dir": d,
                   "rate_limit": {"requests_per_second": 5, "burst": 5}}, f)
    s = Server(d, args=["--config", cfg])
    try:
        check(s.port, "did not start: %s" % s.stderr())
        k = s.admin_key()
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "bystander"}, key=k)
        check(st == 201, "principal: %d %r" % (st, doc))
        other = doc["key"]

        def flood(n, **kw):
            t0 = time.monotonic()
            answers = []
            for _ in range(n):
                st, doc, _ = s.request("GET", "/v1/me", **kw)
                answers.append((st, doc, s.last_headers.get("retry-after")))
            return answers, time.monotonic() - t0

        n = 30
        answers, took = flood(n, key=k)
        ok = [a for a in answers if a[0] == 200]
        limited = [a for a in answers if a[0] == 429]
        check(len(ok) + len(limited) == n, "other statuses: %r" % answers)
        check(limited, "no 429 in %d requests over %.2f s" % (n, took))
        # burst 5 (one token already spent on the principal) plus 5 a second since
        check(len(ok) <= 5 + 5 * took + 1, "%d allowed in %.2f s" % (len(ok), took))
        for st, doc, retry in limited:
            error_of(st, doc, 429, "RATE_LIMITED")
            check(retry and retry.isdigit() and int(retry) >= 1, "Retry-After: %r" % retry)
        # another key has its own bucket
        st, doc, _ = s.request("GET", "/v1/me", key=other)
        check(st == 200 and doc["name"] == "bystander", "other key: %d %r" % (st, doc))

        # bad keys are limited by client address: most of a flood is refused before any audit
        before = len(audit_rows(d, "auth.denied"))
        answers, took = flood(n, key="ak_000000000000_" + "0" * 64)
        denied = [a for a in answers if a[0] == 401]
        limited = [a for a in answers if a[0] == 429]
        check(len(denied) + len(limited) == n, "bad keys: %r" % answers[:3])
        check(limited and len(denied) <= 5 + 5 * took + 1,
              "bad keys: %d 401, %d 429 in %.2f s" % (len(denied), len(limited), took))
        check(len(audit_rows(d, "auth.denied")) - before == len(denied), "audited 429s")
        # ... and not the valid keys
        st, doc, _ = s.request("GET", "/v1/me", key=other)
        check(st == 200, "other key after the bad keys: %d %r" % (st, doc))
    finally:
        s.kill()


# The permission table as this test expects it: (method, path) -> who may, where.
#   "public": no key; "principal": any valid key; a set: those roles (admin granted "*", the
#   others in the department "own"), and with "dept" only for the route's own department.
EXPECT = {
    ("GET", "/healthz"): "public",
    ("GET", "/readyz"): "public",
    ("GET", "/v1/me"): "principal",
    ("GET", "/v1/audit"): {"admin", "auditor"},
    ("GET", "/v1/audit/export"): {"admin", "auditor"},
    ("GET", "/v1/audit/verify"): {"admin", "auditor"},
    ("GET", "/v1/audit/checkpoint"): {"admin", "auditor"},
    ("POST", "/v1/departments"): {"admin"},
    ("GET", "/v1/departments"): set(ROLES),
    ("PUT", "/v1/departments/{d}/policy"): {"admin"},
    ("POST", "/v1/principals"): {"admin"},
    ("GET", "/v1/principals"): {"admin", "auditor"},
    ("POST", "/v1/principals/{p}/keys"): {"admin"},
    ("DELETE", "/v1/principals/{p}/keys/{prefix}"): {"admin"},
    ("POST", "/v1/principals/{p}/roles"): {"admin"},
    ("DELETE", "/v1/principals/{p}/roles"): {"admin"},
    ("GET", "/v1/openapi.json"): "public",
    ("GET", "/metrics"): "public",
}

# A request for each route that changes nothing once allowed (a duplicate, a missing principal).
def probe(method, path, where):
    dept = "own" if where == "own" else "other"
    concrete = (path.replace("{d}", dept).replace("{p}", "ghost")
                .replace("{prefix}", "000000000000"))
    body = {
        ("POST", "/v1/departments"): {"name": dept},
        ("PUT", "/v1/departments/{d}/policy"): {"allow_adhoc": False},
        ("POST", "/v1/principals"): {"name": "rbac-admin"},
        ("POST", "/v1/principals/{p}/roles"): {"role": "agent", "department": dept},
        ("DELETE", "/v1/principals/{p}/roles"): {"role": "agent", "department": dept},
    }.get((method, path))
    return concrete, body


def t_permission_table(tmp):
    p = subprocess.run([AIRLOCKD, "--print-routes"], capture_output=True, timeout=HANG)
    check(p.returncode == 0, "--print-routes: %r" % p.stderr)
    table = json.loads(p.stdout)
    routes = {(r["method"], r["path"]) for r in table}
    check(len(routes) == len(table), "duplicate rows in the route table")
    missing = routes - set(EXPECT)
    check(not missing, "routes without a row in the test's permission table: %r" % missing)
    gone = set(EXPECT) - routes
    check(not gone, "rows for routes that do not exist: %r" % gone)

    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        for dept in ("own", "other"):
            check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
        keys = {}
        for role in ROLES + ["none"]:
            st, doc, _ = s.request("POST", "/v1/principals", {"name": "rbac-" + role}, key=k)
            check(st == 201, "principal for %s: %r" % (role, doc))
            keys[role] = doc["key"]
            if role != "none":
                grant = {"role": role, "department": "*" if role == "admin" else "own"}
                st, doc, _ = s.request("POST", "/v1/principals/rbac-%s/roles" % role, grant, key=k)
                check(st == 201, "grant %s: %r" % (role, doc))
        before = len(audit_rows(d, "auth.denied"))
        denials = 0
        for method, path in sorted(routes):
            rule = EXPECT[(method, path)]
            for role in ROLES + ["none"]:
                for where in ("own", "other"):
                    concrete, body = probe(method, path, where)
                    if rule == "public" or rule == "principal":
                        allowed = True
                    else:
                        allowed = role in rule
                    st, doc, _ = s.request(method, concrete, body, key=keys[role])
                    what = "%s %s as %s (%s department): %d %r" % (method, concrete, role, where,
                                                                   st, doc)
                    check(st < 500, what)
                    if allowed:
                        check(st not in (401, 403), "denied, want allowed: " + what)
                    else:
                        error_of(st, doc, 403, "FORBIDDEN")
                        denials += 1
            if rule == "public":
                st, doc, _ = s.request(method, probe(method, path, "own")[0])
                check(st == 200, "public route needs a key: %s %s %d" % (method, path, st))
            else:
                concrete, body = probe(method, path, "own")
                error_of(*s.request(method, concrete, body)[:2], 401, "UNAUTHENTICATED")
                denials += 1
        rows = audit_rows(d, "auth.denied")[before:]
        check(len(rows) == denials, "auth.denied records %d, refusals %d" % (len(rows), denials))
        check(all({"method", "route", "status"} <= set(r["details"]) for r in rows),
              "auth.denied details: %r" % rows[:2])
    finally:
        s.kill()


# ---------------------------------------------------------------------------------------------
def public_key_of(private_hex):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    k = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private_hex))
    return k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def some_admin_actions(s, k):
    for name in ("finance", "ops"):
        check(s.request("POST", "/v1/departments", {"name": name}, key=k)[0] == 201, name)
    st, doc, _ = s.request("POST", "/v1/principals", {"name": "carol", "kind": "user"}, key=k)
    check(st == 201, "principal: %r" % doc)
    check(s.request("POST", "/v1/principals/carol/roles",
                    {"role": "auditor", "department": "finance"}, key=k)[0] == 201, "grant")
    error_of(*s.request("GET", "/v1/principals")[:2], 401, "UNAUTHENTICATED")
    return doc["key"]


def t_audit_key_file(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        check(s.port, "no listening line: %s" % s.stderr())
        path = os.path.join(d, "audit.key")
        check(stat.S_IMODE(os.stat(path).st_mode) == 0o600, "audit.key not 0600")
        with open(path) as f:
            priv = f.read().strip()
        check(re.fullmatch(r"[0-9a-f]{64}", priv), "audit.key shape")
        check(priv not in s.stderr(), "the audit key is printed")
        st, cp, _ = s.request("GET", "/v1/audit/checkpoint", key=s.admin_key())
        check(st == 200 and cp["public_key"] == public_key_of(priv), "checkpoint key: %r" % cp)
        check(("audit public key " + cp["public_key"]) in s.stderr(), "public key not logged")
        s.stop()
    finally:
        s.kill()
    s = Server(d)
    try:
        st, cp2, _ = s.request("GET", "/v1/audit/checkpoint", key=s.admin_key())
        check(cp2["public_key"] == cp["public_key"], "the key changed on restart")
    finally:
        s.kill()
    s = Server(os.path.join(tmp, "bad"), env_extra={"AIRLOCK_AUDIT_KEY": "xyz"})
    try:
        check(s.proc.wait(timeout=HANG) != 0 and "AIRLOCK_AUDIT_KEY" in s.stderr(),
              "a bad AIRLOCK_AUDIT_KEY was accepted: %s" % s.stderr())
    finally:
        s.kill()


def t_audit_export_verifies(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    pub = public_key_of(AUDIT_KEY)
    try:
        k = s.admin_key()
        carol = some_admin_actions(s, k)
        for who in (k, carol):
            st, ctype, body = s.raw_get("/v1/audit/export", who)
            check(st == 200 and ctype.startswith("application/x-ndjson"),
                  "export: %d %r" % (st, ctype))
            lines = body.decode().splitlines()
            last = json.loads(lines[-1])
            check(last["action"] == "audit.checkpoint" and
                  last["details"]["seq"] == last["seq"] - 1 and
                  last["details"]["public_key"] == pub, "export's last line: %r" % last)
            path = os.path.join(tmp, "export.jsonl")
            with open(path, "wb") as f:
                f.write(body)
            p = subprocess.run([CLI, "audit", "verify", path, "--public-key", pub],
                               capture_output=True, timeout=HANG)
            check(p.returncode == 0, "audit verify: %d %r %r" % (p.returncode, p.stdout,
                                                                 p.stderr))
            # with the record the server itself would return
            st, cp, _ = s.request("GET", "/v1/audit/checkpoint", key=who)
            check(st == 200 and cp["seq"] == last["seq"] and cp["hash"] == last["hash"] and
                  cp["public_key"] == pub and re.fullmatch(r"[0-9a-f]{128}", cp["signature"]),
                  "checkpoint: %r" % cp)
        # a second export with nothing new appends no second seal
        n = len(lines)
        st, _, body = s.raw_get("/v1/audit/export", k)
        check(len(body.decode().splitlines()) == n, "an idle export appended a record")
        st, v, _ = s.request("GET", "/v1/audit/verify", key=carol)
        check(st == 200 and v == {"ok": True, "records": n, "head": last["hash"]},
              "verify: %r" % v)
        # a cut export is refused by the CLI
        with open(path, "w") as f:
            f.write("\n".join(lines[:-2]) + "\n")
        p = subprocess.run([CLI, "audit", "verify", path, "--public-key", pub],
                           capture_output=True, timeout=HANG)
        check(p.returncode == 1, "a cut export verified: %r" % p.stdout)
    finally:
        s.kill()


def t_audit_records_and_pages(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        some_admin_actions(s, k)
        st, doc, _ = s.request("GET", "/v1/audit?limit=1000", key=k)
        check(st == 200 and set(doc) == {"records", "next"}, "list: %r" % doc)
        recs = doc["records"]
        check([r["seq"] for r in recs] == list(range(1, len(recs) + 1)), "seqs")
        check(doc["next"] == recs[-1]["seq"], "next: %r" % doc["next"])
        prev = "0" * 64
        for r in recs:
            check(set(r) == {"seq", "time", "actor", "action", "subject", "department", "details",
                             "prev", "hash"}, "members: %r" % r)
            check(r["prev"] == prev, "prev of seq %d" % r["seq"])
            check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r["time"])
            prev = r["hash"]
        denied = [r for r in recs if r["action"] == "auth.denied"]
        check(len(denied) == 1 and denied[0]["actor"] == "airlockd" and
              denied[0]["details"]["status"] == 401 and
              denied[0]["details"]["route"] == "/v1/principals", "auth.denied: %r" % denied)
        st, doc, _ = s.request("GET", "/v1/audit?action=auth.denied", key=k)
        check([r["seq"] for r in doc["records"]] == [denied[0]["seq"]], "action filter: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/audit?action=no.such", key=k)
        check(doc == {"records": [], "next": 0}, "empty filter: %r" % doc)
        # pages of 2 walk the same records
        seen, after = [], 0
        for _ in range(100):
            st, doc, _ = s.request("GET", "/v1/audit?after=%d&limit=2" % after, key=k)
            check(st == 200 and len(doc["records"]) <= 2, "page: %r" % doc)
            if not doc["records"]:
                check(doc["next"] == after, "next of the last page: %r" % doc)
                break
            seen += doc["records"]
            after = doc["next"]
        check(seen == recs, "pages differ from the whole list")
        for bad in ("limit=-1", "limit=1001", "after=x", "limit=", "after=1e3"):
            error_of(*s.request("GET", "/v1/audit?" + bad, key=k)[:2], 400, "INVALID_REQUEST")
    finally:
        s.kill()


def t_audit_tamper_found(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        k = s.admin_key()
        some_admin_actions(s, k)
        st, v, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and v["ok"] is True, "verify: %r" % v)
        check(s.stop() == 0, "SIGTERM")
    finally:
        s.kill()
    target = [r for r in audit_rows(d) if r["action"] == "department.create"][1]["seq"]
    db = sqlite3.connect(os.path.join(d, "airlock.db"), timeout=HANG)
    db.execute("UPDATE audit SET line = replace(line, '\"ops\"', '\"0ps\"') WHERE seq = ?",
               (target,))
    db.commit()
    db.close()
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        check(s.port, "no start on a broken chain: %s" % s.stderr())
        check("broken at seq %d" % target in s.stderr(), "not logged: %s" % s.stderr())
        k = s.admin_key()
        st, v, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and v["ok"] is False and v["first_bad_seq"] == target and
              "hash" in v["reason"], "verify after tamper: %r" % v)
        st, _, body = s.raw_get("/v1/audit/export", k)
        check(st == 200, "export of a broken chain: %d" % st)
        path = os.path.join(tmp, "export.jsonl")
        with open(path, "wb") as f:
            f.write(body)
        p = subprocess.run([CLI, "audit", "verify", path, "--public-key",
                            public_key_of(AUDIT_KEY), "--json"], capture_output=True, timeout=HANG)
        check(p.returncode == 1 and json.loads(p.stdout)["seq"] == target,
              "CLI on the tampered export: %r" % p.stdout)
    finally:
        s.kill()
    # an edited column (not the line) is found as well
    db = sqlite3.connect(os.path.join(d, "airlock.db"), timeout=HANG)
    db.execute("UPDATE audit SET line = replace(line, '\"0ps\"', '\"ops\"') WHERE seq = ?",
               (target,))
    db.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 1")
    db.commit()
    db.close()
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        st, v, _ = s.request("GET", "/v1/audit/verify", key=s.admin_key())
        check(v["ok"] is False and v["first_bad_seq"] == 1, "column edit: %r" % v)
    finally:
        s.kill()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]


def main():
    global AIRLOCKD, CLI
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlockd", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("-k", default="")
    a = ap.parse_args()
    AIRLOCKD = os.path.abspath(a.airlockd)
    CLI = os.path.abspath(a.cli)
    passed = failed = 0
    for name, fn in TESTS:
        if a.k not in name:
            continue
        tmp = tempfile.mkdtemp(prefix="airlockd-test-")
        try:
            fn(tmp)
            passed += 1
            print("ok   " + name)
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            failed += 1
            print("FAIL " + name + ": " + (str(e) if isinstance(e, Fail) else
                                           traceback.format_exc()))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
