#!/usr/bin/env python3
"""Integration tests of airlockd: bootstrap, errors, departments, principals, keys, roles,
restart, schema version, and the permission table walked route x role x department.

usage: test_server.py --airlockd PATH [--cli PATH] [-k SUBSTRING]

Each test starts airlockd on port 0 in a fresh temporary data directory, reads its listening
line from stderr and drives it with http.client. With AIRLOCK_TEST_DATABASE set to a PostgreSQL
cluster's URL (tests/support/pg_cluster.sh; CTest's integration.server.postgres), every data
directory gets a fresh database of its own there and airlockd runs with --database; what a test
reads or edits in the store goes through db_rows/db_exec/db_bytes, on either back end. Every wait is bounded (HANG seconds); a server
is always killed at the end. Prints `N passed, M failed` last and exits 1 on any failure.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import openapi_check

HANG = 15
# AIRLOCK_TEST_DATABASE: run airlockd on PostgreSQL (a database per data directory); None: SQLite
PG = os.environ.get("AIRLOCK_TEST_DATABASE") or None
PG_DATABASES = {}  # data directory -> its database's URL
AIRLOCKD = None
CLI = None
# A fixed audit signing key, so a test knows the public key without asking the server.
AUDIT_KEY = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
ROLES = ["admin", "author", "approver", "auditor", "agent"]
# what the web UI answers (src/server/ui.c), read as text
UI_TYPES = ("text/html", "text/javascript", "text/css")


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def pg_url(data_dir):
    """The URL of data_dir's database on the PostgreSQL cluster, created on first use."""
    data_dir = os.path.abspath(data_dir)
    if data_dir not in PG_DATABASES:
        name = "airlockd_test_%d_%d" % (os.getpid(), len(PG_DATABASES) + 1)
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", PG, "-c",
                        "CREATE DATABASE " + name], check=True, timeout=HANG,
                       stdout=subprocess.DEVNULL)
        head, _, query = PG.partition("?")
        base = head[:head.index("/", head.index("://") + 3)]
        PG_DATABASES[data_dir] = base + "/" + name + ("?" + query if query else "")
    return PG_DATABASES[data_dir]


def pg_drop_all():
    for url in PG_DATABASES.values():
        name = url.partition("?")[0].rsplit("/", 1)[1]
        subprocess.run(["psql", "-X", "-q", PG, "-c",
                        "DROP DATABASE IF EXISTS %s WITH (FORCE)" % name],
                       timeout=HANG, stdout=subprocess.DEVNULL)
    PG_DATABASES.clear()


def psql(data_dir, sql, params):
    """Runs sql on data_dir's PostgreSQL database, ? placeholders bound as psql variables."""
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", pg_url(data_dir)]
    parts = sql.split("?")
    check(len(parts) == len(params) + 1, "placeholders: %r" % sql)
    text = parts[0]
    for i, value in enumerate(params):
        args += ["-v", "p%d=%s" % (i, value)]
        text += ":'p%d'" % i + parts[i + 1]
    p = subprocess.run(args, input=text + ";\n", capture_output=True, text=True, timeout=HANG)
    check(p.returncode == 0, "psql: %s: %s" % (text, p.stderr))
    return p.stdout


def db_rows(data_dir, sql, params=()):
    """The rows (tuples) of a query on data_dir's store, SQLite or PostgreSQL."""
    if PG:
        out = psql(data_dir, "SELECT coalesce(json_agg(row_to_json(t)), '[]') FROM (%s) t" % sql,
                   params)
        return [tuple(r.values()) for r in json.loads(out)]
    db = sqlite3.connect(os.path.join(data_dir, "airlock.db"), timeout=HANG)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def db_exec(data_dir, sql, params=()):
    """Changes data_dir's store behind airlockd's back (a test of what it finds)."""
    if PG:
        psql(data_dir, sql, params)
        return
    db = sqlite3.connect(os.path.join(data_dir, "airlock.db"), timeout=HANG)
    try:
        db.execute(sql, params)
        db.commit()
    finally:
        db.close()


def db_bytes(data_dir):
    """Everything the store holds as bytes: SQLite's file and WAL, or a dump of the database."""
    if PG:
        p = subprocess.run(["pg_dump", "--data-only", pg_url(data_dir)], capture_output=True,
                           timeout=HANG)
        check(p.returncode == 0, "pg_dump: %s" % p.stderr)
        return p.stdout
    blob = b""
    for name in ("airlock.db", "airlock.db-wal"):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                blob += f.read()
    return blob


def schema_version_sql(version):
    return ("UPDATE airlock_schema SET version = %d" if PG else "PRAGMA user_version = %d") % version


class Server:
    def __init__(self, data_dir, env_extra=None, args=None):
        self.data_dir = data_dir
        self.log_path = os.path.join(os.path.dirname(data_dir), "stderr-%d.log" % time.monotonic_ns())
        env = dict(os.environ)
        env.pop("AIRLOCK_BOOTSTRAP_KEY", None)
        env.update(env_extra or {})
        self.log = open(self.log_path, "wb")
        argv = [AIRLOCKD]
        if PG:
            # the database of the data directory, or of the --data-dir among args
            where = args[args.index("--data-dir") + 1] if args and "--data-dir" in args else data_dir
            argv += ["--database", pg_url(where)]
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
        if r.status in (200, 304) and ctype.startswith(UI_TYPES):
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
    q = "SELECT seq, actor, action, subject, department, details FROM audit"
    rows = db_rows(data_dir, q + (" WHERE action = ?" if action else "") + " ORDER BY seq",
                   (action,) if action else ())
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
        check(key.encode() not in db_bytes(d), "the key is stored in clear")
        # on PostgreSQL nothing of the store is in the data directory: only the key files
        check(not PG or not os.path.exists(os.path.join(d, "airlock.db")), "airlock.db on PG")
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
        error_of(*s.request("GET", "/nothing", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/runs/a/b", key=k)[:2], 404, "NOT_FOUND")
        st, page, _ = s.request("GET", "/", key=k)
        check(st == 200 and page.startswith("<!doctype html>"), "GET / is the web UI: %d" % st)
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
        # the address's first 401 is recorded at once; the two after it wait for its next record
        denied = audit_rows(d, "auth.denied")
        check(len(denied) == 1, "auth.denied records: %r" % denied)
        check(denied[0]["details"]["method"] == "GET" and
              denied[0]["details"]["route"] == "/v1/principals" and
              denied[0]["details"]["status"] == 401 and denied[0]["details"]["count"] == 1,
              "auth.denied details: %r" % denied[0])
        log = [json.loads(l) for l in s.stderr().splitlines() if l.startswith("{")]
        check(len(log) >= len(bad) + 10, "request log lines: %d" % len(log))
        check(all(re.fullmatch(r"req_[0-9a-f]{16}", l["request_id"]) for l in log), "log ids")
        check(s.stop() == 0, "SIGTERM exit status not 0")
        denied = audit_rows(d, "auth.denied")
        check([r["details"]["count"] for r in denied] == [1, 2], "auth.denied: %r" % denied)
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
        # an auditor of finance sees the principals of finance, without their keys
        st, doc, _ = s.request("GET", "/v1/principals", key=alice["key"])
        check(st == 200 and doc == [{"name": "alice", "kind": "agent", "created": doc[0]["created"],
                                     "identity": None, "disabled": False,
                                     "roles": [grant], "keys": []}], "list: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/principals", key=k)
        check(st == 200 and {p["name"] for p in doc} == {"admin", "alice"}, "list: %r" % doc)
        check(all("key" not in p and p["keys"] and all(set(x) == {"prefix", "created", "revoked"}
                                                       for x in p["keys"]) for p in doc),
              "keys shown: %r" % doc)
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
        blob = db_bytes(d)
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
    db_exec(d, schema_version_sql(999))
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
    # --database takes PostgreSQL's URLs only, and never echoes one (it may hold a password)
    for argv in (["--database", "mysql://u:hunter2@db/x"], ["--database", "airlock.db"],
                 ["--database"]):
        p = subprocess.run([AIRLOCKD] + argv, capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"usage:" in p.stderr and b"hunter2" not in p.stderr,
              "%r: rc %d %r" % (argv, p.returncode, p.stderr))
    with open(bad, "w") as f:
        json.dump({"database": "sqlite:///srv/airlock.db"}, f)
    p = subprocess.run([AIRLOCKD, "--config", bad], capture_output=True, timeout=HANG)
    check(p.returncode == 2 and b"database" in p.stderr and b"/srv/airlock.db" not in p.stderr,
          "bad database in config: %r" % p.stderr)
    # a database that cannot be reached stops the start, with libpq's reason and no password
    p = subprocess.run([AIRLOCKD, "--data-dir", os.path.join(tmp, "nodb"), "--database",
                        "postgresql://u:hunter2@/airlock?host=%s" % os.path.join(tmp, "nowhere")],
                       capture_output=True, timeout=HANG)
    check(p.returncode == 1 and b"postgres: cannot connect" in p.stderr and
          b"hunter2" not in p.stderr, "unreachable database: rc %d %r" % (p.returncode, p.stderr))
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
    # a token every 1000 s: within the test no bucket gains one, so the burst alone decides how
    # many requests pass, however fast or slow they come
    d = os.path.join(tmp, "var")
    cfg = os.path.join(tmp, "limit.json")
    with open(cfg, "w") as f:
        json.dump({"listen": "127.0.0.1:0", "data_dir": d,
                   "rate_limit": {"requests_per_second": 0.001, "burst": 5,
                                  "unauthenticated_requests_per_second": 0.001,
                                  "unauthenticated_burst": 5}}, f)
    s = Server(d, args=["--config", cfg])
    try:
        check(s.port, "did not start: %s" % s.stderr())
        k = s.admin_key()
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "bystander"}, key=k)
        check(st == 201, "principal: %d %r" % (st, doc))
        other = doc["key"]

        def flood(n, **kw):
            answers = []
            for _ in range(n):
                st, doc, _ = s.request("GET", "/v1/me", **kw)
                answers.append((st, doc, s.last_headers.get("retry-after")))
            return answers

        n = 30
        answers = flood(n, key=k)
        ok = [a for a in answers if a[0] == 200]
        limited = [a for a in answers if a[0] == 429]
        check(len(ok) + len(limited) == n, "other statuses: %r" % answers)
        # burst 5, one token already spent on the principal: the first 4 pass, then none
        check([a[0] for a in answers] == [200] * 4 + [429] * (n - 4),
              "%d allowed of %d: %r" % (len(ok), n, [a[0] for a in answers]))
        for st, doc, retry in limited:
            error_of(st, doc, 429, "RATE_LIMITED")
            # the whole seconds until the next token: at most the 1000 s between two
            check(retry and retry.isdigit() and 1 <= int(retry) <= 1000, "Retry-After: %r" % retry)
        # another key has its own bucket
        st, doc, _ = s.request("GET", "/v1/me", key=other)
        check(st == 200 and doc["name"] == "bystander", "other key: %d %r" % (st, doc))

        # bad keys are limited by client address: most of a flood is refused before the tally
        before = len(audit_rows(d, "auth.denied"))
        answers = flood(n, key="ak_000000000000_" + "0" * 64)
        denied = [a for a in answers if a[0] == 401]
        limited = [a for a in answers if a[0] == 429]
        check(len(denied) + len(limited) == n, "bad keys: %r" % answers[:3])
        # the address's bucket for bad keys is full (every request so far had a valid key): 5
        # pass to be refused 401, the rest are 429
        check([a[0] for a in answers] == [401] * 5 + [429] * (n - 5),
              "bad keys: %d 401, %d 429: %r" % (len(denied), len(limited),
                                                [a[0] for a in answers]))
        # the first 401 recorded at once, the others counted for the address's next record
        check(len(audit_rows(d, "auth.denied")) - before == 1, "audited 401s")
        # ... and not the valid keys
        st, doc, _ = s.request("GET", "/v1/me", key=other)
        check(st == 200, "other key after the bad keys: %d %r" % (st, doc))
        check(s.stop() == 0, "SIGTERM exit status not 0")
        counts = [r["details"]["count"] for r in audit_rows(d, "auth.denied")[before:]]
        check(counts == [1, len(denied) - 1], "audited 401s: %r" % counts)
    finally:
        s.kill()


def status_from(source, port, path, key=None):
    """The status of one GET sent from the loopback address source (Linux routes all of 127/8
    to lo), on a connection of its own."""
    c = socket.socket()
    c.settimeout(HANG)
    try:
        c.bind((source, 0))
        c.connect(("127.0.0.1", port))
        auth = "Authorization: Bearer %s\r\n" % key if key else ""
        c.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n"
                   % (path, auth)).encode())
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        c.close()
    check(data.startswith(b"HTTP/1.1 "), "no answer from %s: %r" % (source, data[:100]))
    return int(data.split(b" ")[1])


def unauth_rows(d):
    """The auth.denied records of 401s, by client address."""
    by = {}
    for r in audit_rows(d, "auth.denied"):
        if r["details"]["status"] == 401:
            by.setdefault(r["details"].get("address"), []).append(r)
    return by


def t_unauthenticated_refusals_tallied(tmp):
    # refusals of requests without a valid key: one auth.denied record per address per minute,
    # their counts adding up to the refusals, and a far smaller bucket than a key's (the defaults:
    # 50 at once, then 10 a second)
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        check(s.port, "did not start: %s" % s.stderr())
        k = s.admin_key()
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "nobody"}, key=k)
        check(st == 201, "principal: %d %r" % (st, doc))
        nobody = doc["key"]
        sources = ["127.0.0.%d" % i for i in range(2, 7)]
        bad = [None, "nope", "ak_000000000000_" + "0" * 64]
        refused = {}
        for src in sources:
            answers = [status_from(src, s.port, "/v1/me", bad[i % 3]) for i in range(80)]
            refused[src] = answers.count(401)
            # the burst answers 401, then 429s and what the refill lets through (how many
            # depends on the machine's speed: test_unauthenticated_bucket_... pins it)
            check(set(answers) <= {401, 429} and answers[:50] == [401] * 50,
                  "%s: %r" % (src, answers))
        # a public route keeps the address's own bucket (1000 at once) ...
        check(all(status_from(sources[0], s.port, "/healthz") == 200 for _ in range(60)),
              "healthz limited with the bad keys' bucket")
        # ... and a valid key its own, its 403s one record each
        forbidden = [status_from(sources[0], s.port, "/v1/principals", nobody) for _ in range(3)]
        check(forbidden == [403] * 3, "403s: %r" % forbidden)
        rows = audit_rows(d, "auth.denied")
        check(len([r for r in rows if r["details"]["status"] == 403]) == 3,
              "403 records: %r" % [r["details"] for r in rows if r["details"]["status"] == 403])
        # while airlockd runs: the first refusal of each address, recorded at once
        n = len([r for r in rows if r["details"]["status"] == 401])
        check(n == len(sources), "%d records of %d refusals from %d addresses"
              % (n, sum(refused.values()), len(sources)))
        by = unauth_rows(d)
        check(sorted(by) == sorted("ip4:" + src for src in sources),
              "addresses: %r" % sorted(by))
        for src in sources:
            recs = by["ip4:" + src]
            check(len(recs) == 1 and recs[0]["details"]["count"] == 1,
                  "%s: %d records while running: %r" % (src, len(recs),
                                                        [r["details"] for r in recs[:3]]))
            det = recs[0]["details"]
            check(recs[0]["actor"] == "airlockd" and det["route"] == "/v1/me" and
                  det["reason"] == "no Authorization header" and
                  det["reasons"] == ["no Authorization header"] and
                  re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", det["first"]) and
                  det["first"] == det["last"], "record: %r" % recs[0])
        # stopping writes what waits: at most one more record per address, the counts complete
        check(s.stop() == 0, "SIGTERM exit status not 0")
        by = unauth_rows(d)
        for src in sources:
            recs = by["ip4:" + src]
            check(len(recs) <= 2, "%s: %d records" % (src, len(recs)))
            total = sum(r["details"]["count"] for r in recs)
            check(total == refused[src], "%s: counts %d, refusals %d" % (src, total, refused[src]))
            check(recs[-1]["details"]["first"] <= recs[-1]["details"]["last"], "times: %r" % recs)
            check(set(recs[-1]["details"]["reasons"]) <= {
                "no Authorization header", "malformed key",
                "unknown or revoked key 000000000000"}, "reasons: %r" % recs[-1]["details"])
    finally:
        s.kill()


def t_unauthenticated_bucket_and_interval_configured(tmp):
    # a smaller bad-key bucket, and a short interval: the summary comes at the interval's end
    d = os.path.join(tmp, "var")
    cfg = os.path.join(tmp, "limit.json")
    with open(cfg, "w") as f:
        json.dump({"listen": "127.0.0.1:0", "data_dir": d,
                   "rate_limit": {"unauthenticated_burst": 4,
                                  "unauthenticated_requests_per_second": 0.001,
                                  "unauthenticated_audit_interval_ms": 1000}}, f)
    s = Server(d, args=["--config", cfg])
    try:
        check(s.port, "did not start: %s" % s.stderr())
        answers = [status_from("127.0.0.2", s.port, "/v1/me") for _ in range(10)]
        check(answers == [401] * 4 + [429] * 6, "bad-key bucket of 4: %r" % answers)
        check(status_from("127.0.0.2", s.port, "/healthz") == 200, "healthz limited")
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            recs = unauth_rows(d).get("ip4:127.0.0.2", [])
            if len(recs) >= 2:
                break
            time.sleep(0.1)
        check([r["details"]["count"] for r in recs] == [1, 3],
              "records of 127.0.0.2: %r" % [r["details"] for r in recs])
        check(recs[1]["details"]["first"] >= recs[0]["details"]["last"], "times: %r" % recs)
        # nothing was waiting: stopping adds nothing
        check(s.stop() == 0, "SIGTERM exit status not 0")
        check(len(unauth_rows(d).get("ip4:127.0.0.2", [])) == 2, "a record at stop")
    finally:
        s.kill()
    # out of range: refused at start
    for bad in ({"unauthenticated_burst": 0.5}, {"unauthenticated_audit_interval_ms": 999},
                {"unauthenticated_audit_interval_ms": 1500.5}):
        with open(cfg, "w") as f:
            json.dump({"listen": "127.0.0.1:0", "data_dir": d, "rate_limit": bad}, f)
        s = Server(d, args=["--config", cfg])
        try:
            check(s.proc.wait(timeout=HANG) != 0 and "unauthenticated" in s.stderr(),
                  "config %r accepted: %s" % (bad, s.stderr()))
        finally:
            s.kill()


# The permission table as this test expects it: (method, path) -> who may, where.
#   "public": no key; "principal": any valid key; a set: those roles (admin granted "*", the
#   others in the department "own"), and with "dept" only for the route's own department.
#   A (roles, "dept") pair: those roles, the non-admins only for a resource of their department
#   (probe names one in "own" and one in "other").
EXPECT = {
    ("GET", "/healthz"): "public",
    ("GET", "/readyz"): "public",
    ("GET", "/v1/me"): "principal",
    ("GET", "/v1/audit"): {"admin", "auditor"},
    # ("everywhere", roles): those roles granted for "*" (the export is every record or none)
    ("GET", "/v1/audit/export"): ("everywhere", {"admin", "auditor"}),
    ("GET", "/v1/audit/verify"): {"admin", "auditor"},
    ("GET", "/v1/audit/checkpoint"): {"admin", "auditor"},
    ("POST", "/v1/departments"): {"admin"},
    ("GET", "/v1/departments"): set(ROLES),
    ("PUT", "/v1/departments/{d}/policy"): {"admin"},
    # the probes: a rename to its own name (409), a department that is not empty (409)
    ("PATCH", "/v1/departments/{d}"): {"admin"},
    ("DELETE", "/v1/departments/{d}"): {"admin"},
    ("POST", "/v1/principals"): {"admin"},
    ("GET", "/v1/principals"): {"admin", "auditor"},
    ("POST", "/v1/principals/{p}/keys"): {"admin"},
    ("DELETE", "/v1/principals/{p}/keys/{prefix}"): {"admin"},
    ("POST", "/v1/principals/{p}/roles"): {"admin"},
    ("DELETE", "/v1/principals/{p}/roles"): {"admin"},
    # one principal (the probe: "ghost", which does not exist: 404 once allowed)
    ("GET", "/v1/principals/{p}"): {"admin", "auditor"},
    ("PATCH", "/v1/principals/{p}"): {"admin"},
    ("DELETE", "/v1/principals/{p}"): {"admin"},
    # templates: ("dept", roles, anywhere): those roles in the template's own department, and
    # the `anywhere` roles (besides admin's "*") in every department
    ("POST", "/v1/templates"): ("dept", {"author"}, set()),
    ("GET", "/v1/templates"): set(ROLES),
    ("GET", "/v1/templates/{t}"): ("dept", set(ROLES), set()),
    ("POST", "/v1/templates/{t}/versions"): ("dept", {"author"}, set()),
    ("GET", "/v1/templates/{t}/versions/{v}"): ("dept", set(ROLES), set()),
    ("GET", "/v1/templates/{t}/versions/{v}/diff"): ("dept", set(ROLES), set()),
    ("GET", "/v1/templates/{t}/versions/{v}/types"): ("dept", set(ROLES), set()),
    # the replay names runs: the department's roles that see its runs, not an agent
    ("GET", "/v1/templates/{t}/versions/{v}/replay"): ("dept", {"admin", "author", "approver",
                                                               "auditor"}, set()),
    ("POST", "/v1/templates/{t}/versions/{v}/submit"): ("dept", {"author"}, set()),
    ("POST", "/v1/templates/{t}/versions/{v}/approve"): ("dept", {"approver"}, set()),
    ("POST", "/v1/templates/{t}/versions/{v}/reject"): ("dept", {"approver"}, set()),
    ("POST", "/v1/templates/{t}/versions/{v}/revoke"): ("dept", {"approver", "admin"}, set()),
    ("POST", "/v1/connectors"): {"admin"},
    ("GET", "/v1/connectors"): set(ROLES),
    ("GET", "/v1/connectors/{c}"): ("dept", set(ROLES), set()),
    # the probes: an empty change (400 once allowed), a connector that does not exist (404)
    ("PATCH", "/v1/connectors/{c}"): {"admin"},
    ("DELETE", "/v1/connectors/{c}"): {"admin"},
    # mounts: an admin's; the list shows each role its departments' (the probe: a name taken,
    # a mount that does not exist)
    ("POST", "/v1/mounts"): {"admin"},
    ("GET", "/v1/mounts"): set(ROLES),
    ("DELETE", "/v1/mounts/{m}"): {"admin"},
    ("POST", "/v1/webhooks"): {"admin"},
    ("GET", "/v1/webhooks"): {"admin"},
    ("DELETE", "/v1/webhooks/{id}"): {"admin"},
    # runs and approvals: runs made by probe_setup in own and other (supervised, their approvals
    # denied); an agent reading or cancelling a run of its department that is not its own gets
    # 404, which the walk counts as allowed (not refused by role)
    ("POST", "/v1/runs"): ("dept", {"agent"}, set()),
    ("GET", "/v1/runs"): set(ROLES),
    ("GET", "/v1/runs/{id}"): ("dept", set(ROLES), set()),
    ("POST", "/v1/runs/{id}/cancel"): ("dept", {"agent", "approver", "admin"}, set()),
    # a fork: an agent of the run's department; to an agent elsewhere that may not see the run,
    # it is not there (404)
    ("POST", "/v1/runs/{id}/fork"): ("dept", {"agent"}, set()),
    # a run's workspace (docs/server.md "Workspaces"): whoever sees the run; the probes' runs
    # have none (404 once allowed)
    ("GET", "/v1/runs/{id}/files"): ("dept", set(ROLES), set()),
    ("GET", "/v1/runs/{id}/files/{path+}"): ("dept", set(ROLES), set()),
    ("GET", "/v1/runs/{id}/workspace.tar"): ("dept", set(ROLES), set()),
    # an agent of the department its query names; the probe's body is no tar (400 once allowed)
    ("POST", "/v1/snapshots"): ("dept", {"agent"}, set()),
    ("GET", "/v1/approvals"): {"approver", "auditor", "admin"},
    ("POST", "/v1/approvals/{id}/approve"): ("dept", {"approver"}, set()),
    ("POST", "/v1/approvals/{id}/deny"): ("dept", {"approver"}, set()),
    # an answer (in_doubt only): the probe's approval, of kind run and decided, is then a 409
    ("POST", "/v1/approvals/{id}/answer"): ("dept", {"approver"}, set()),
    # MCP (docs/mcp.md): an agent's; the probe is a ping
    ("POST", "/v1/mcp"): {"agent"},
    ("GET", "/v1/openapi.json"): "public",
    ("GET", "/metrics"): "public",
    # the web UI (src/server/ui.c): every page and asset is public; what a page shows comes
    # from /v1/ with the user's key
    ("GET", "/"): "public",
    ("GET", "/overview"): "public",
    ("GET", "/approvals"): "public",
    ("GET", "/templates"): "public",
    ("GET", "/templates/{t}"): "public",
    ("GET", "/templates/{t}/versions/{v}"): "public",
    ("GET", "/runs"): "public",
    ("GET", "/runs/{id}"): "public",
    ("GET", "/audit"): "public",
    ("GET", "/admin"): "public",
    ("GET", "/ui/{asset}"): "public",
    ("GET", "/ui/pages/{asset}"): "public",
    # single sign-on of the web UI (docs/sso.md): the sign-in needs no key (404 here, where no
    # oidc is configured); logout is any session's (an API key has none: 400)
    ("GET", "/auth/options"): "public",
    ("GET", "/auth/login"): "public",
    ("GET", "/auth/callback"): "public",
    ("POST", "/auth/logout"): "principal",
}

def connector_body(name, dept, **over):
    body = {"name": name, "department": dept, "url": "http://127.0.0.1:9/" + name,
            "signing_secret": "signing-secret-of-" + name,
            "headers": {"Authorization": "Bearer header-secret-of-" + name},
            "functions": {"lookup": {"description": "finds a customer",
                                     "args_schema": {"type": "array",
                                                     "items": {"type": "string"}},
                                     "result_schema": {"type": "object"}},
                          "refund": {"sensitive": True, "idempotent": False}}}
    body.update(over)
    return body


def mount_body(name, dept):
    return {"name": name, "department": dept, "kind": "s3", "endpoint": "http://127.0.0.1:9/",
            "bucket": "bucket-" + dept, "region": "us-east-1", "access_key_id": "AKID",
            "secret_access_key": "secret-of-" + name}


# A request for each route that changes nothing once allowed (a duplicate, a missing principal).
def probe(method, path, where):
    dept = "own" if where == "own" else "other"
    concrete = (path.replace("{d}", dept).replace("{p}", "ghost")
                .replace("/ui/pages/{asset}", "/ui/pages/approvals.js")
                .replace("{asset}", "app.js")
                .replace("{prefix}", "000000000000").replace("{c}", "c_" + dept)
                .replace("{m}", "ghost-mount").replace("{path+}", "out/report.md"))
    if (method, path) == ("DELETE", "/v1/connectors/{c}"):
        concrete = "/v1/connectors/ghost_connector"
    if path == "/v1/snapshots":
        concrete += "?department=" + dept
    # templates made by probe_setup: tpl-own and tpl-other, v1 approved, v2 a draft; every
    # state change below is then a wrong state (409) once allowed
    concrete = concrete.replace("{t}", "tpl-" + dept).replace(
        "{v}", "2" if path.endswith("/revoke") else "1")
    concrete = concrete.replace("{id}", PROBE_IDS.get(
        ("apr-" if path.startswith("/v1/approvals") else "run-") + dept, "none"))
    body = {
        ("POST", "/v1/departments"): {"name": dept},
        ("PUT", "/v1/departments/{d}/policy"): {"allow_adhoc": False},
        ("PATCH", "/v1/departments/{d}"): {"name": dept},
        ("POST", "/v1/principals"): {"name": "rbac-admin"},
        ("POST", "/v1/principals/{p}/roles"): {"role": "agent", "department": dept},
        ("DELETE", "/v1/principals/{p}/roles"): {"role": "agent", "department": dept},
        ("PATCH", "/v1/principals/{p}"): {"disabled": False},
        ("POST", "/v1/templates"): {"name": "tpl-" + dept, "department": dept},
        ("POST", "/v1/templates/{t}/versions"): {"source": ""},
        ("POST", "/v1/templates/{t}/versions/{v}/approve"): {"comment": "rbac"},
        ("POST", "/v1/templates/{t}/versions/{v}/reject"): {"comment": "rbac"},
        ("POST", "/v1/templates/{t}/versions/{v}/revoke"): {"reason": "rbac"},
        ("POST", "/v1/connectors"): connector_body("c_" + dept, dept),
        ("POST", "/v1/mounts"): mount_body("m-" + dept, dept),
        # a URL airlockd would not call: an allowed admin gets 400 and nothing is kept
        ("POST", "/v1/webhooks"): {"url": "file:///etc/passwd", "events": ["run.failed"],
                                   "department": dept, "signing_secret": "x" * 16},
        # version 2 is a draft: an allowed agent gets 409 and no run starts
        ("POST", "/v1/runs"): {"template": "tpl-" + dept, "version": 2},
        ("POST", "/v1/runs/{id}/fork"): {"at_call": 1},
        ("POST", "/v1/approvals/{id}/answer"): {"result": 1},
        ("POST", "/v1/mcp"): {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    }.get((method, path))
    return concrete, body


PROBE_IDS = {}


def probe_setup(s, k):
    """What the probes act on: templates in the departments own and other."""
    for name, role in (("rbac-setup-author", "author"), ("rbac-setup-approver", "approver")):
        st, doc, _ = s.request("POST", "/v1/principals", {"name": name}, key=k)
        check(st == 201, "setup principal: %r" % doc)
        check(s.request("POST", "/v1/principals/%s/roles" % name,
                        {"role": role, "department": "*"}, key=k)[0] == 201, "setup grant")
        if role == "author":
            author = doc["key"]
        else:
            approver = doc["key"]
    for dept in ("own", "other"):
        t = "tpl-" + dept
        check(s.request("POST", "/v1/templates", {"name": t, "department": dept},
                        key=author)[0] == 201, "setup template")
        for _ in range(2):
            check(s.request("POST", "/v1/templates/%s/versions" % t, {"source": "1"},
                            key=author)[0] == 201, "setup version")
        check(s.request("POST", "/v1/templates/%s/versions/1/submit" % t, key=author)[0] == 200,
              "setup submit")
        check(s.request("POST", "/v1/templates/%s/versions/1/approve" % t, {},
                        key=approver)[0] == 200, "setup approve")
    # a run in each department, waiting for a person (supervised), then denied: every decision
    # or cancel a probe tries afterwards is a wrong state (409) once allowed
    st, doc, _ = s.request("POST", "/v1/principals", {"name": "rbac-setup-agent"}, key=k)
    check(st == 201, "setup agent: %r" % doc)
    agent = doc["key"]
    check(s.request("POST", "/v1/principals/rbac-setup-agent/roles",
                    {"role": "agent", "department": "*"}, key=k)[0] == 201, "setup grant")
    for dept in ("own", "other"):
        check(s.request("PUT", "/v1/departments/%s/policy" % dept, {"autonomy": "supervised"},
                        key=k)[0] == 200, "setup policy")
        st, run, _ = s.request("POST", "/v1/runs", {"template": "tpl-" + dept}, key=agent)
        check(st == 202 and run["status"] == "awaiting_approval", "setup run: %r" % run)
        PROBE_IDS["run-" + dept] = run["id"]
        PROBE_IDS["apr-" + dept] = run["approvals"][0]
        st, doc, _ = s.request("POST", "/v1/approvals/%s/deny" % run["approvals"][0],
                               {"comment": "setup"}, key=approver)
        check(st == 200, "setup deny: %r" % doc)


def rule_allows(rule, role, where):
    if rule == "public" or rule == "principal":
        return True
    if isinstance(rule, tuple):
        _, roles, anywhere = rule
        return role in roles and (where == "own" or role == "admin" or role in anywhere)
    return role in rule


# Principals of the walk: one role each (admin for "*", the others in own), none, and principals
# with mixed roles across departments - an agent in one and a role that sees runs in the other.
def walk_principals():
    grants = {role: [(role, "*" if role == "admin" else "own")] for role in ROLES}
    grants["none"] = []
    grants["agent+author"] = [("agent", "own"), ("author", "other")]
    grants["agent+approver"] = [("agent", "other"), ("approver", "own")]
    grants["agent+auditor"] = [("agent", "own"), ("auditor", "other")]
    return grants


def hidden(method, path, grants, where):
    """Whether the template (or version) a probe names is not there to these grants: a route
    naming one answers 404 to a caller who may not read it, before its roles in the department.
    The probes' templates have v1 approved and v2 a draft (see probe)."""
    if "{t}" not in path and (method, path) != ("POST", "/v1/runs"):
        return False
    here = {role for role, dept in grants if dept in ("*", where)}
    if any(role == "admin" for role, _ in grants) or here & {"author", "approver", "auditor"}:
        return False  # every version
    if not here:
        return True
    # an agent there reads the approved version only
    draft = path.endswith("/revoke") or (method, path) == ("POST", "/v1/runs")
    return draft and ("{v}" in path or path == "/v1/runs")


def grants_allow(rule, grants, where):
    """Whether any of a principal's grants meets the rule for the department `where` names."""
    if rule == "public" or rule == "principal":
        return True
    if isinstance(rule, tuple) and rule[0] == "everywhere":
        return any(role in rule[1] and dept == "*" for role, dept in grants)
    return any(rule_allows(rule, role, "own" if dept in ("*", where) else "other")
               for role, dept in grants)


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
            st, doc, _ = s.request("POST", "/v1/connectors", connector_body("c_" + dept, dept),
                                   key=k)
            check(st == 201, "connector in %s: %r" % (dept, doc))
            st, doc, _ = s.request("POST", "/v1/mounts", mount_body("m-" + dept, dept), key=k)
            check(st == 201, "mount in %s: %r" % (dept, doc))
        keys = {}
        principals = walk_principals()
        for who, grants in principals.items():
            name = "rbac-" + who.replace("+", "-")
            st, doc, _ = s.request("POST", "/v1/principals", {"name": name}, key=k)
            check(st == 201, "principal for %s: %r" % (who, doc))
            keys[who] = doc["key"]
            for role, dept in grants:
                grant = {"role": role, "department": dept}
                st, doc, _ = s.request("POST", "/v1/principals/%s/roles" % name, grant, key=k)
                check(st == 201, "grant %s: %r" % (who, doc))
        probe_setup(s, k)
        before = len(audit_rows(d, "auth.denied"))
        forbidden = unauthenticated = 0
        for method, path in sorted(routes):
            rule = EXPECT[(method, path)]
            for who, grants in principals.items():
                for where in ("own", "other"):
                    concrete, body = probe(method, path, where)
                    allowed = grants_allow(rule, grants, where)
                    st, doc, _ = s.request(method, concrete, body, key=keys[who])
                    what = "%s %s as %s (%s department): %d %r" % (method, concrete, who, where,
                                                                   st, doc)
                    check(st < 500, what)
                    here = {role for role, dept in grants if dept in ("*", where)}
                    passes = isinstance(rule, tuple) and any(r in rule[1] for r, _ in grants)
                    if passes and hidden(method, path, grants, where):
                        # past the router, a template or version it may not read is not there
                        error_of(st, doc, 404, "NOT_FOUND")
                    elif allowed and path.startswith("/v1/runs/{id}") and here == {"agent"}:
                        # another's run, to a principal that is only an agent there (whatever it
                        # holds elsewhere), is not there: decided per run
                        error_of(st, doc, 404, "NOT_FOUND")
                    elif (path == "/v1/runs/{id}/fork" and not here and
                          any(r == "agent" for r, _ in grants)):
                        # a fork of a run the caller may not see: not there
                        error_of(st, doc, 404, "NOT_FOUND")
                    elif allowed:
                        check(st not in (401, 403), "denied, want allowed: " + what)
                    else:
                        error_of(st, doc, 403, "FORBIDDEN")
                        forbidden += 1
            if rule == "public":
                st, doc, _ = s.request(method, probe(method, path, "own")[0])
                sso_off = path in ("/auth/login", "/auth/callback") and st == 404
                check(st == 200 or sso_off, "public route needs a key: %s %s %d" % (method, path,
                                                                                     st))
            else:
                concrete, body = probe(method, path, "own")
                error_of(*s.request(method, concrete, body)[:2], 401, "UNAUTHENTICATED")
                unauthenticated += 1
        # every 403 a record; the 401s (one address) a record at once and one when airlockd stops
        rows = audit_rows(d, "auth.denied")[before:]
        check(len(rows) == forbidden + 1, "auth.denied records %d, refusals %d + the first 401"
              % (len(rows), forbidden))
        check(all({"method", "route", "status"} <= set(r["details"]) for r in rows),
              "auth.denied details: %r" % rows[:2])
        check(s.stop() == 0, "SIGTERM exit status not 0")
        counts = [r["details"]["count"] for r in audit_rows(d, "auth.denied")[before:]
                  if r["details"]["status"] == 401]
        check(counts == [1, unauthenticated - 1], "401 records: %r of %d" % (counts,
                                                                            unauthenticated))
    finally:
        s.kill()


# --------------------------------------------------------------------------------------------- templates
def tpl_setup(s, k, depts=("finance",)):
    """Departments and one principal per role (granted in the first department); their keys."""
    for dept in depts:
        check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
    keys = {"admin": k}
    for name, role in (("alice", "author"), ("bob", "approver"), ("carol", "agent"),
                       ("dave", "auditor"), ("erin", "author")):
        st, doc, _ = s.request("POST", "/v1/principals",
                               {"name": name, "kind": "agent" if role == "agent" else "user"},
                               key=k)
        check(st == 201, "principal %s: %r" % (name, doc))
        keys[name] = doc["key"]
        st, doc, _ = s.request("POST", "/v1/principals/%s/roles" % name,
                               {"role": role, "department": depts[0]}, key=k)
        check(st == 201, "grant %s: %r" % (name, doc))
    return keys


TPL_SOURCE = "const r = await crm.lookup(input.id);\nreturn r;\n"


def tpl_version(s, key, t, **kw):
    body = {"source": TPL_SOURCE, "functions": ["crm.lookup"],
            "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
    body.update(kw)
    return s.request("POST", "/v1/templates/%s/versions" % t, body, key=key)


def t_templates_lifecycle(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k)
        st, doc, _ = s.request("POST", "/v1/templates", {"name": "refund-small",
                                                         "department": "finance",
                                                         "description": "small refunds"},
                               key=keys["alice"])
        check(st == 201 and doc["name"] == "refund-small" and doc["department"] == "finance" and
              doc["description"] == "small refunds" and doc["versions"] == [] and
              doc["created_by"] == "alice", "create template: %d %r" % (st, doc))
        error_of(*s.request("POST", "/v1/templates", {"name": "refund-small",
                                                      "department": "finance"},
                            key=keys["alice"])[:2], 409, "CONFLICT")
        st, v1, _ = tpl_version(s, keys["alice"], "refund-small",
                                limits={"timeout_ms": 5000, "host_calls": 3})
        check(st == 201 and v1["template"] == "refund-small" and v1["version"] == 1 and
              v1["state"] == "draft" and v1["author"] == "alice" and
              re.fullmatch(r"sha256:[0-9a-f]{64}", v1["digest"]) and v1["language"] == "js" and
              v1["autonomy"] == "autonomous" and v1["functions"] == ["crm.lookup"] and
              v1["limits"] == {"timeout_ms": 5000, "host_calls": 3} and
              v1["source"] == TPL_SOURCE and v1["approved_by"] is None,
              "create version: %d %r" % (st, v1))
        # the digest is over the content alone: the same content gives the same digest,
        # whatever the member order and spacing; another content another digest
        st, v2, _ = tpl_version(s, keys["erin"], "refund-small",
                                limits={"host_calls": 3, "timeout_ms": 5000})
        check(st == 201 and v2["version"] == 2 and v2["digest"] == v1["digest"], "v2: %r" % v2)
        st, v3, _ = tpl_version(s, keys["alice"], "refund-small", autonomy="supervised",
                                language="ts")
        check(st == 201 and v3["version"] == 3 and v3["digest"] != v1["digest"] and
              v3["autonomy"] == "supervised" and v3["language"] == "ts", "v3: %r" % v3)
        base = "/v1/templates/refund-small/versions/"
        # approving a draft is a wrong state
        error_of(*s.request("POST", base + "1/approve", {}, key=keys["bob"])[:2], 409, "CONFLICT")
        st, doc, _ = s.request("POST", base + "1/submit", key=keys["alice"])
        check(st == 200 and doc["state"] == "submitted" and doc["submitted_by"] == "alice",
              "submit: %d %r" % (st, doc))
        error_of(*s.request("POST", base + "1/submit", key=keys["alice"])[:2], 409, "CONFLICT")
        st, doc, _ = s.request("POST", base + "1/approve", {"comment": "looks right"},
                               key=keys["bob"])
        check(st == 200 and doc["state"] == "approved" and doc["approved_by"] == "bob" and
              doc["approve_comment"] == "looks right" and doc["approved"], "approve: %r" % doc)
        for action in ("approve", "reject", "submit"):
            error_of(*s.request("POST", base + "1/" + action, {} if action != "submit" else None,
                                key=keys["bob" if action != "submit" else "alice"])[:2], 409,
                     "CONFLICT")
        # reject
        check(s.request("POST", base + "2/submit", key=keys["erin"])[0] == 200, "submit v2")
        st, doc, _ = s.request("POST", base + "2/reject", {"comment": "duplicate"},
                               key=keys["bob"])
        check(st == 200 and doc["state"] == "rejected" and doc["rejected_by"] == "bob" and
              doc["reject_comment"] == "duplicate", "reject: %r" % doc)
        error_of(*s.request("POST", base + "2/approve", {}, key=keys["bob"])[:2], 409, "CONFLICT")
        error_of(*s.request("POST", base + "2/revoke", {"reason": "x"}, key=k)[:2], 409,
                 "CONFLICT")
        # revoke (an admin may), once
        st, doc, _ = s.request("POST", base + "1/revoke", {"reason": "leaks data"}, key=k)
        check(st == 200 and doc["state"] == "revoked" and doc["revoked_by"] == "admin" and
              doc["revoke_reason"] == "leaks data" and doc["approved_by"] == "bob",
              "revoke: %r" % doc)
        error_of(*s.request("POST", base + "1/revoke", {"reason": "again"}, key=keys["bob"])[:2],
                 409, "CONFLICT")
        error_of(*s.request("POST", base + "1/approve", {}, key=keys["bob"])[:2], 409, "CONFLICT")
        # bad version numbers and bodies
        for v in ("0", "01", "x", "-1", "99", "99999999999999999999"):
            error_of(*s.request("POST", base + v + "/submit", key=keys["alice"])[:2], 404,
                     "NOT_FOUND")
            error_of(*s.request("GET", base + v, key=keys["alice"])[:2], 404, "NOT_FOUND")
        error_of(*s.request("POST", base + "3/approve", {"note": "x"}, key=keys["bob"])[:2], 400,
                 "INVALID_REQUEST")
        error_of(*s.request("POST", base + "3/submit", {"comment": "x"},
                            key=keys["alice"])[:2], 400, "INVALID_REQUEST")
        error_of(*s.request("POST", "/v1/templates/nope/versions/1/submit",
                            key=keys["alice"])[:2], 404, "NOT_FOUND")
        # the full object
        st, doc, _ = s.request("GET", base + "1", key=keys["dave"])
        check(st == 200 and doc["state"] == "revoked" and doc["input_schema"] == {
            "type": "object", "properties": {"id": {"type": "string"}}} and
            doc["department"] == "finance" and doc["submitted"] and doc["revoked"],
            "get version: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/templates/refund-small", key=keys["bob"])
        check(st == 200 and [(x["version"], x["state"]) for x in doc["versions"]] ==
              [(1, "revoked"), (2, "rejected"), (3, "draft")], "get template: %r" % doc)
        check(set(doc["versions"][0]) >= {"version", "state", "digest", "author"},
              "summary: %r" % doc["versions"][0])

        # every change is in the audit log, with its actor, in one record each
        rows = audit_rows(d)
        want = [("alice", "template.create", None), ("alice", "version.create", 1),
                ("erin", "version.create", 2), ("alice", "version.create", 3),
                ("alice", "version.submit", 1), ("bob", "version.approve", 1),
                ("erin", "version.submit", 2), ("bob", "version.reject", 2),
                ("admin", "version.revoke", 1)]
        got = [(r["actor"], r["action"], r["details"].get("version")) for r in rows
               if r["action"].startswith(("template.", "version."))]
        check(got == want, "audit records: %r" % got)
        for r in rows:
            if r["action"].startswith("version."):
                check(r["subject"] == "refund-small" and r["department"] == "finance" and
                      r["details"]["template"] == "refund-small" and
                      re.fullmatch(r"sha256:[0-9a-f]{64}", r["details"]["digest"]),
                      "record: %r" % r)
        created = [r for r in rows if r["action"] == "version.create"][0]["details"]
        check(created["source"] == TPL_SOURCE and created["digest"] == v1["digest"] and
              created["functions"] == ["crm.lookup"], "version.create details: %r" % created)
        others = [r for r in rows if r["action"] in ("version.submit", "version.approve",
                                                     "version.reject", "version.revoke")]
        check(all("source" not in r["details"] for r in others), "source in a state record")
        approve = [r for r in rows if r["action"] == "version.approve"][0]["details"]
        check(approve["comment"] == "looks right", "approve details: %r" % approve)
        revoke = [r for r in rows if r["action"] == "version.revoke"][0]["details"]
        check(revoke["reason"] == "leaks data" and revoke["digest"] == v1["digest"],
              "revoke details: %r" % revoke)
        st, v, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(v["ok"] is True, "chain: %r" % v)
        # the state survives a restart
        check(s.stop() == 0, "SIGTERM")
    finally:
        s.kill()
    s = Server(d)
    try:
        st, doc, _ = s.request("GET", "/v1/templates/refund-small/versions/1", key=s.admin_key())
        check(st == 200 and doc["state"] == "revoked" and doc["digest"] == v1["digest"],
              "after restart: %r" % doc)
    finally:
        s.kill()


def t_templates_four_eyes(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k)
        # alice is author and approver: she still cannot approve her own version
        check(s.request("POST", "/v1/principals/alice/roles",
                        {"role": "approver", "department": "*"}, key=k)[0] == 201, "grant")
        check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                        key=keys["alice"])[0] == 201, "template")
        check(tpl_version(s, keys["alice"], "t")[0] == 201, "version")
        check(s.request("POST", "/v1/templates/t/versions/1/submit", key=keys["alice"])[0] == 200,
              "submit")
        st, doc, _ = s.request("POST", "/v1/templates/t/versions/1/approve", {"comment": "mine"},
                               key=keys["alice"])
        error_of(st, doc, 409, "CONFLICT")
        check("four eyes" in doc["error"]["message"] and "alice" in doc["error"]["message"],
              "message: %r" % doc)
        # an admin is no approver unless granted
        error_of(*s.request("POST", "/v1/templates/t/versions/1/approve", {}, key=k)[:2], 403,
                 "FORBIDDEN")
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/1", key=k)
        check(doc["state"] == "submitted", "state after the refusals: %r" % doc)
        check(not audit_rows(d, "version.approve"), "a refused approval was recorded")
        # she may reject her own (four eyes guards approvals)? no: another approver decides
        st, doc, _ = s.request("POST", "/v1/templates/t/versions/1/approve", {},
                               key=keys["bob"])
        check(st == 200 and doc["state"] == "approved" and doc["approved_by"] == "bob",
              "bob approves: %r" % doc)
    finally:
        s.kill()


def t_templates_validation(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k, depts=("finance", "ops"))
        a = keys["alice"]
        for body in ({"name": "Bad Name", "department": "finance"}, {"name": "x"},
                     {"name": "x", "department": "finance", "extra": 1},
                     {"name": "x", "department": "finance", "description": 5},
                     {"name": "x", "department": "finance", "description": "d" * 2000}):
            error_of(*s.request("POST", "/v1/templates", body, key=a)[:2], 400,
                     "INVALID_REQUEST")
        # another department's author is refused; an unknown department is not found (for
        # one who may write everywhere) and refused for the others
        error_of(*s.request("POST", "/v1/templates", {"name": "x", "department": "ops"},
                            key=a)[:2], 403, "FORBIDDEN")
        error_of(*s.request("POST", "/v1/templates", {"name": "x", "department": "nowhere"},
                            key=a)[:2], 403, "FORBIDDEN")
        check(s.request("POST", "/v1/principals/erin/roles", {"role": "author", "department": "*"},
                        key=k)[0] == 201, "grant")
        error_of(*s.request("POST", "/v1/templates", {"name": "x", "department": "nowhere"},
                            key=keys["erin"])[:2], 404, "NOT_FOUND")
        check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                        key=a)[0] == 201, "template")
        error_of(*s.request("POST", "/v1/templates/ghost/versions", {"source": "1"}, key=a)[:2],
                 404, "NOT_FOUND")
        bad = [
            {"source": ""}, {"source": 1}, {}, {"source": "1", "language": "py"},
            {"source": "1", "autonomy": "wild"}, {"source": "1", "extra": True},
            {"source": "1", "input_schema": "x"}, {"source": "1", "functions": "crm.lookup"},
            {"source": "x" * (256 * 1024 + 1)}, {"source": "\u0001" * (150 * 1024)},
            # schemas with a keyword airlockd does not implement, or ill-formed
            {"source": "1", "input_schema": {"type": "object", "oneOf": []}},
            {"source": "1", "input_schema": {"properties": {"a": {"$ref": "#"}}}},
            {"source": "1", "input_schema": {"type": "strng"}},
            {"source": "1", "input_schema": {"minimum": "1"}},
            {"source": "1", "input_schema": {"pattern": "("}},
            # function names
            {"source": "1", "functions": ["lookup"]}, {"source": "1", "functions": ["a.b.c"]},
            {"source": "1", "functions": ["crm.look-up"]}, {"source": "1", "functions": ["1a.b"]},
            {"source": "1", "functions": [".b"]}, {"source": "1", "functions": ["a."]},
            {"source": "1", "functions": [1]}, {"source": "1", "functions": ["a.b", "a.b"]},
            {"source": "1", "functions": ["a.b\u0000"]}, {"source": "1", "functions": ["é.b"]},
            # limits
            {"source": "1", "limits": {"timeout_ms": 0}}, {"source": "1", "limits": {"cpu_ms": -5}},
            {"source": "1", "limits": {"memory_bytes": 1.5}},
            {"source": "1", "limits": {"host_calls": "3"}},
            {"source": "1", "limits": {"host_calls": 16777217}},
            {"source": "1", "limits": {"output_bytes": 67108865}},
            {"source": "1", "limits": {"stack_bytes": 1}}, {"source": "1", "limits": []},
            {"source": "1", "limits": {"timeout_ms": 1e300}},
        ]
        for body in bad:
            st, doc, _ = s.request("POST", "/v1/templates/t/versions", body, key=a)
            error_of(st, doc, 400, "INVALID_REQUEST")
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": "1", "input_schema": {"type": "object",
                                                                "oneOf": []}}, key=a)
        check("oneOf" in doc["error"]["message"], "the keyword is not named: %r" % doc)
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": "1", "functions": ["crm.look-up"]}, key=a)
        check("crm.look-up" in doc["error"]["message"], "the function is not named: %r" % doc)
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": "1", "limits": {"stack_bytes": 1}}, key=a)
        check("stack_bytes" in doc["error"]["message"], "the limit is not named: %r" % doc)
        # the edges that are fine: every limit at its maximum, identifiers with _ and $
        st, doc, _ = s.request("POST", "/v1/templates/t/versions", {
            "source": "1", "functions": ["$c._f1", "crm.lookup"],
            "limits": {"timeout_ms": 31536000000, "cpu_ms": 1, "memory_bytes": 1099511627776,
                       "output_bytes": 67108864, "host_calls": 16777216}}, key=a)
        check(st == 201 and doc["version"] == 1 and doc["input_schema"] == {}, "edges: %r" % doc)
        # another department's author may not add versions (to it, the template is not there);
        # nothing was written by the refusals
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "olga"}, key=k)
        olga = doc["key"]
        s.request("POST", "/v1/principals/olga/roles", {"role": "author", "department": "ops"},
                  key=k)
        error_of(*s.request("POST", "/v1/templates/t/versions", {"source": "1"}, key=olga)[:2],
                 404, "NOT_FOUND")
        error_of(*s.request("POST", "/v1/templates/t/versions/1/submit", key=olga)[:2], 404,
                 "NOT_FOUND")
        check(len(audit_rows(d, "version.create")) == 1, "refused versions recorded")
        st, doc, _ = s.request("GET", "/v1/templates/t", key=k)
        check([x["version"] for x in doc["versions"]] == [1], "versions: %r" % doc)
    finally:
        s.kill()


BIDI = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F,
        0x061C]


def t_trojan_source_refused(tmp):
    # Trojan Source (CVE-2021-42574): with bidirectional controls, a diff shows
    # `if (input.amount <= 50) {` as code while it sits inside a comment, so a reviewer approves
    # a refund of any amount. A version holding any of them is refused, naming LINE:COL and
    # the code point, whatever its language; written as an escape in a string, it is fine.
    s = Server(os.path.join(tmp, "var"))
    try:
        k = s.admin_key()
        a = tpl_setup(s, k)["alice"]
        check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                        key=a)[0] == 201, "template")
        trojan = ("let allowed = false;\n"
                  "/* refunds \u202e } \u2066if (input.amount <= 50) {\u2069 \u2066 // small */\n"
                  "allowed = true;\n"
                  "/* end \u202e } \u2066*/\n"
                  "if (allowed) await shop.refund(input.order, input.amount);\n")
        col = trojan.split("\n")[1].index("\u202e") + 1
        for lang in ("js", "ts"):
            st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                                   {"source": trojan, "language": lang}, key=a)
            error_of(st, doc, 400, "INVALID_REQUEST")
            msg = doc["error"]["message"]
            check("2:%d" % col in msg and "U+202E" in msg, "the refusal: %r" % msg)
        for cp in BIDI:
            st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                                   {"source": "return 1;\n// a" + chr(cp) + "b\n"}, key=a)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("2:5" in doc["error"]["message"] and "U+%04X" % cp in doc["error"]["message"],
                  "U+%04X: %r" % (cp, doc))
        st, doc, _ = s.request("GET", "/v1/templates/t", key=a)
        check(st == 200 and doc["versions"] == [], "a refused source was kept: %r" % doc)
        # an escape is text the reviewer sees as it is; a zero-width space is shown, not refused
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": 'return "\\u202e" + "a\u200bb";\n'}, key=a)
        check(st == 201, "an escaped control: %d %r" % (st, doc))
    finally:
        s.kill()


def t_bodies_must_be_ijson(tmp):
    # A lone surrogate or 1e999 in a body cannot be recorded in the audit log (its canonical
    # JSON has neither): the request is refused 400 naming where, never a 500 after the fact.
    s = Server(os.path.join(tmp, "var"))
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k)
        a, bob, agent = keys["alice"], keys["bob"], keys["carol"]
        for raw, where in ((b'{"name":"t1","department":"finance","description":"x\\ud800"}',
                            "$.description"),
                           (b'{"name":"t1","department":"finance","description":"\\udc00y"}',
                            "$.description"),
                           (b'{"name":"t1","department":"finance","name":"t2"}', "$.name")):
            st, doc, _ = s.request("POST", "/v1/templates", raw=raw, key=a)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("not I-JSON at " + where in doc["error"]["message"], "%r" % doc)
        st, doc, _ = s.request("POST", "/v1/templates", raw=b'{"name":"t","department":'
                               b'"finance","description":"pair \\ud83d\\ude00"}', key=a)
        check(st == 201 and doc["description"] == "pair \U0001F600", "%d %r" % (st, doc))
        check(s.request("POST", "/v1/templates/t/versions",
                        {"source": "return input;\n"}, key=a)[0] == 201, "version")
        check(s.request("POST", "/v1/templates/t/versions/1/submit", {}, key=a)[0] == 200, "")
        st, doc, _ = s.request("POST", "/v1/templates/t/versions/1/approve",
                               raw=b'{"comment":"ok \\ud800"}', key=bob)
        error_of(st, doc, 400, "INVALID_REQUEST")
        check("$.comment" in doc["error"]["message"], "%r" % doc)
        check(s.request("POST", "/v1/templates/t/versions/1/approve", {}, key=bob)[0] == 200, "")
        for raw, where in ((b'{"template":"t","input":{"a":1e999}}', "$.input.a"),
                           (b'{"template":"t","input":{"l":[1,"\\ud800"]}}', "$.input.l[1]"),
                           (b'{"template":"t","input":{"a":1,"a":2}}', "$.input.a"),
                           (b'{"template":"t","input":{"\\udfff":1}}', "$.input")):
            st, doc, _ = s.request("POST", "/v1/runs", raw=raw, key=agent)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("not I-JSON at " + where in doc["error"]["message"], "%s: %r" % (raw, doc))
        st, doc, _ = s.request("POST", "/v1/runs", raw=b'{"template":"t","input":{"a":-1e308}}',
                               key=agent)
        check(st == 200 and doc["value"] == {"a": -1e308}, "%d %r" % (st, doc))
        st, v, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and v["ok"], "the audit log: %r" % v)
    finally:
        s.kill()


def t_templates_visibility(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k, depts=("finance", "ops"))
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "otto"}, key=k)
        otto = doc["key"]
        s.request("POST", "/v1/principals/otto/roles", {"role": "author", "department": "ops"},
                  key=k)
        s.request("POST", "/v1/principals/otto/roles", {"role": "approver", "department": "*"},
                  key=k)
        check(s.request("POST", "/v1/templates", {"name": "fin", "department": "finance"},
                        key=keys["alice"])[0] == 201, "fin")
        check(s.request("POST", "/v1/templates", {"name": "opt", "department": "ops"},
                        key=otto)[0] == 201, "opt")
        for _ in range(3):
            check(tpl_version(s, keys["alice"], "fin")[0] == 201, "version")
        for v in (1, 2):
            s.request("POST", "/v1/templates/fin/versions/%d/submit" % v, key=keys["alice"])
        s.request("POST", "/v1/templates/fin/versions/2/approve", {}, key=keys["bob"])
        agent = keys["carol"]
        st, doc, _ = s.request("GET", "/v1/templates", key=agent)
        check(st == 200 and [t["name"] for t in doc] == ["fin"] and
              [v["version"] for v in doc[0]["versions"]] == [2] and
              doc[0]["versions"][0]["state"] == "approved", "agent's list: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/templates/fin", key=agent)
        check(st == 200 and [v["version"] for v in doc["versions"]] == [2], "agent: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/templates/fin/versions/2", key=agent)
        check(st == 200 and doc["source"] == TPL_SOURCE, "agent reads approved: %r" % doc)
        for v in ("1", "3"):
            error_of(*s.request("GET", "/v1/templates/fin/versions/" + v, key=agent)[:2], 404,
                     "NOT_FOUND")
            error_of(*s.request("GET", "/v1/templates/fin/versions/%s/diff" % v, key=agent)[:2],
                     404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/templates/fin/versions/2/diff?from=1", key=agent)[:2],
                 404, "NOT_FOUND")
        # another department's template is not there, as if it did not exist
        st, e, _ = s.request("GET", "/v1/templates/opt", key=agent)
        error_of(st, e, 404, "NOT_FOUND")
        check(e["error"]["message"] == "no template opt", "opt: %r" % e)
        # a template of its department without an approved version is not listed to an agent
        check(s.request("POST", "/v1/templates", {"name": "drafty", "department": "finance"},
                        key=keys["alice"])[0] == 201, "drafty")
        check(tpl_version(s, keys["alice"], "drafty")[0] == 201, "drafty v1")
        st, doc, _ = s.request("GET", "/v1/templates", key=agent)
        check([t["name"] for t in doc] == ["fin"], "agent lists a draft template: %r" % doc)
        error_of(*s.request("GET", "/v1/templates/drafty", key=agent)[:2], 404, "NOT_FOUND")
        st, doc, _ = s.request("GET", "/v1/templates", key=keys["alice"])
        check([t["name"] for t in doc] == ["drafty", "fin"], "author's list: %r" % doc)
        s.request("POST", "/v1/templates/fin/versions/2/revoke", {"reason": "r"}, key=keys["bob"])
        st, doc, _ = s.request("GET", "/v1/templates", key=agent)
        check(doc == [], "agent lists a revoked template: %r" % doc)
        error_of(*s.request("GET", "/v1/templates/fin/versions/2", key=agent)[:2], 404,
                 "NOT_FOUND")
        # the author sees every version of its department, not the other department
        st, doc, _ = s.request("GET", "/v1/templates", key=keys["alice"])
        check([t["name"] for t in doc] == ["drafty", "fin"] and len(doc[1]["versions"]) == 3,
              "author's list: %r" % doc)
        error_of(*s.request("GET", "/v1/templates/opt", key=keys["alice"])[:2], 404, "NOT_FOUND")
        # an auditor reads its department's templates, every version
        st, doc, _ = s.request("GET", "/v1/templates", key=keys["dave"])
        check([t["name"] for t in doc] == ["drafty", "fin"] and len(doc[1]["versions"]) == 3,
              "auditor's list: %r" % doc)
        error_of(*s.request("GET", "/v1/templates/opt", key=keys["dave"])[:2], 404, "NOT_FOUND")
        # "*" and admins see everything
        for who in (otto, k):
            st, doc, _ = s.request("GET", "/v1/templates", key=who)
            check([t["name"] for t in doc] == ["drafty", "fin", "opt"] and
                  len(doc[1]["versions"]) == 3, "list: %r" % doc)
            st, doc, _ = s.request("GET", "/v1/templates/opt", key=who)
            check(st == 200, "opt: %r" % doc)
        # a principal without roles is refused
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "nobody"}, key=k)
        error_of(*s.request("GET", "/v1/templates", key=doc["key"])[:2], 403, "FORBIDDEN")
        error_of(*s.request("GET", "/v1/templates/ghost", key=k)[:2], 404, "NOT_FOUND")
    finally:
        s.kill()


def t_templates_diff(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = tpl_setup(s, k)
        a = keys["alice"]
        check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                        key=a)[0] == 201, "template")
        src1 = "".join("line %d\n" % i for i in range(1, 11))
        src2 = src1.replace("line 5\n", "line five\n") + "line 11"
        check(tpl_version(s, a, "t", source=src1, limits={"timeout_ms": 100})[0] == 201, "v1")
        st, doc, _ = tpl_version(s, a, "t", source=src2, functions=["crm.lookup", "crm.refund"],
                                 limits={"timeout_ms": 200, "host_calls": 2},
                                 autonomy="supervised", input_schema={"type": "object"})
        check(st == 201, "v2: %r" % doc)
        # no approved version before v2: the diff is against nothing
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/2/diff", key=a)
        check(st == 200 and doc["from"] is None and doc["source_diff"].startswith(
            "--- t v0\n+++ t v2\n@@ -0,0 +1,11 @@\n+line 1\n") and
            doc["source_diff"].endswith("+line 11\n\\ No newline at end of file\n") and
            doc["changes"]["functions"]["added"] == ["crm.lookup", "crm.refund"],
            "diff from nothing: %r" % doc)
        for v in (1,):
            s.request("POST", "/v1/templates/t/versions/%d/submit" % v, key=a)
            s.request("POST", "/v1/templates/t/versions/%d/approve" % v, {}, key=keys["bob"])
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/2/diff", key=keys["bob"])
        want = ("--- t v1\n+++ t v2\n@@ -2,9 +2,10 @@\n line 2\n line 3\n line 4\n-line 5\n"
                "+line five\n line 6\n line 7\n line 8\n line 9\n line 10\n+line 11\n"
                "\\ No newline at end of file\n")
        check(st == 200 and doc["from"] == 1 and doc["source_diff"] == want,
              "diff: %r" % doc.get("source_diff"))
        ch = doc["changes"]
        check(ch["functions"] == {"added": ["crm.refund"], "removed": []} and
              ch["limits"] == {"timeout_ms": {"from": 100, "to": 200},
                               "host_calls": {"from": None, "to": 2}} and
              ch["input_schema"] == {"changed": True, "from": {"type": "object", "properties": {
                  "id": {"type": "string"}}}, "to": {"type": "object"}} and
              ch["autonomy"] == {"from": "autonomous", "to": "supervised"} and
              "language" not in ch, "changes: %r" % ch)
        # explicit from, backwards, and the same version
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/1/diff?from=2", key=a)
        check(st == 200 and doc["changes"]["functions"]["removed"] == ["crm.refund"] and
              "-line five\n" in doc["source_diff"], "backwards: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/2/diff?from=2", key=a)
        check(st == 200 and doc["source_diff"] == "" and
              doc["changes"]["input_schema"] == {"changed": False} and
              doc["changes"]["limits"] == {} and "autonomy" not in doc["changes"],
              "same: %r" % doc)
        for q in ("from=0", "from=x", "from=", "from=-1"):
            error_of(*s.request("GET", "/v1/templates/t/versions/2/diff?" + q, key=a)[:2], 400,
                     "INVALID_REQUEST")
        error_of(*s.request("GET", "/v1/templates/t/versions/2/diff?from=9", key=a)[:2], 404,
                 "NOT_FOUND")
        error_of(*s.request("GET", "/v1/templates/t/versions/9/diff", key=a)[:2], 404,
                 "NOT_FOUND")
        # a large source diffs in bounded time and memory: past src/gov/diff.h's bounds (20000
        # lines) the differing middle is one replacement, every old line removed and every new
        # one added, where a minimal diff of 30000 lines that differ everywhere would take
        # some 60000^2 steps. The request's own timeout (HANG, hundreds of times the 20 ms it
        # takes) is the deadline; the answer is the verdict.
        big1 = "".join("a%d\n" % i for i in range(30000))
        big2 = "".join("b%d\n" % i for i in range(30000))
        for src in (big1, big2):
            check(tpl_version(s, a, "t", source=src)[0] == 201, "big version")
        st, doc, _ = s.request("GET", "/v1/templates/t/versions/4/diff?from=3", key=a)
        want = ("--- t v3\n+++ t v4\n@@ -1,30000 +1,30000 @@\n" +
                "".join("-a%d\n" % i for i in range(30000)) +
                "".join("+b%d\n" % i for i in range(30000)))
        check(st == 200 and doc["source_diff"] == want, "big diff: %d %r" % (
            st, doc["source_diff"][:200] if st == 200 else doc))
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
                    {"role": "auditor", "department": "*"}, key=k)[0] == 201, "grant")
    error_of(*s.request("GET", "/v1/principals")[:2], 401, "UNAUTHENTICATED")
    return doc["key"]


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise Fail("no VmHWM in /proc/%d/status" % pid)


def t_audit_export_streams_a_consistent_prefix(tmp):
    """A large log is exported while another thread appends to it: the export is every record up
    to its seal and nothing after, it verifies, and it is streamed (the server's peak memory does
    not grow with the export's size)."""
    d = os.path.join(tmp, "var")
    config = os.path.join(tmp, "airlockd.json")
    with open(config, "w") as f:
        json.dump({"rate_limit": {"requests_per_second": 1e6, "burst": 1e6}}, f)
    # Under AddressSanitizer freed pages wait in its quarantine (and count in RSS): kept small
    # here, so the peak measures airlockd's buffering, not the sanitizer's (ignored otherwise).
    asan = os.environ.get("ASAN_OPTIONS", "")
    asan = (asan + ":" if asan else "") + "quarantine_size_mb=1"
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY, "ASAN_OPTIONS": asan},
               args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", config])
    pub = public_key_of(AUDIT_KEY)
    try:
        k = s.admin_key()
        h = {"Authorization": "Bearer " + k, "Content-Type": "application/json"}

        def post(conn, path, body):
            conn.request("POST", path, body=json.dumps(body).encode(), headers=h)
            r = conn.getresponse()
            text = r.read()
            check(r.status in (200, 201), "%s: %d %r" % (path, r.status, text[:200]))
            return json.loads(text)

        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
        for i in range(3000):
            post(conn, "/v1/departments", {"name": "d%d" % i})
        # and a few large records: versions with a 250 KB source each (the source is audited)
        post(conn, "/v1/principals/admin/roles", {"role": "author", "department": "d0"})
        post(conn, "/v1/templates", {"name": "big", "department": "d0"})
        for i in range(80):
            post(conn, "/v1/templates/big/versions",
                 {"source": "/* %d %s */ 1" % (i, "x" * 250000)})
        conn.close()
        hwm_before = vm_hwm_kib(s.proc.pid)

        appended = [0]
        stop = [False]
        errors = []

        def appender():
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
            try:
                while not stop[0]:
                    post(c, "/v1/departments", {"name": "late%d" % appended[0]})
                    appended[0] += 1
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)
            finally:
                c.close()

        def wait_appended(n):
            deadline = time.monotonic() + HANG
            while appended[0] < n and not errors:
                check(time.monotonic() < deadline, "the appender is stuck at %d" % appended[0])
                time.sleep(0.005)
            check(not errors, "appending: %r" % errors)

        t = threading.Thread(target=appender)
        t.start()
        try:
            wait_appended(10)  # the seal races these appends
            conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
            conn.request("GET", "/v1/audit/export", headers={"Authorization": "Bearer " + k})
            r = conn.getresponse()
            check(r.status == 200 and r.getheader("Content-Type").startswith(
                "application/x-ndjson"), "export: %d %r" % (r.status, r.getheader("Content-Type")))
            check(r.getheader("Transfer-Encoding") == "chunked", "not streamed: %r" %
                  r.getheaders())
            body = r.read(65536)
            # the rest of the log is read from the store after these appends have committed
            wait_appended(appended[0] + 50)
            body += r.read()
            conn.close()
        finally:
            stop[0] = True
            t.join(HANG)
        check(not errors, "appending: %r" % errors)
        hwm_after = vm_hwm_kib(s.proc.pid)

        lines = body.decode().splitlines()
        recs = [json.loads(l) for l in lines]
        n = len(recs)
        check([r["seq"] for r in recs] == list(range(1, n + 1)), "seqs are not 1..%d" % n)
        last = recs[-1]
        check(last["action"] == "audit.checkpoint" and last["details"]["seq"] == n - 1,
              "the export does not end with its seal: %r" % last)
        creates = [r["subject"] for r in recs if r["action"] == "department.create"]
        check(all(("d%d" % i) in creates for i in range(3000)), "a department record is missing")
        path = os.path.join(tmp, "export.jsonl")
        with open(path, "wb") as f:
            f.write(body)
        p = subprocess.run([CLI, "audit", "verify", path, "--public-key", pub],
                           capture_output=True, timeout=HANG)
        check(p.returncode == 0, "audit verify: %d %r %r" % (p.returncode, p.stdout, p.stderr))
        # what was appended while the export streamed is in the log, after the seal
        st, doc, _ = s.request("GET", "/v1/audit?after=%d&limit=1000" % n, key=k)
        later = [r["subject"] for r in doc["records"] if r["action"] == "department.create"]
        check(st == 200 and len(later) >= 50 and not set(later) & set(creates),
              "records after the seal: %d, %r" % (len(later), set(later) & set(creates)))
        # the whole export never sat in the server's memory: its peak grew by far less
        size = len(body)
        grew = (hwm_after - hwm_before) * 1024
        check(size > 20 << 20, "the export is only %d bytes" % size)
        check(grew < size // 4, "airlockd's peak RSS grew by %d bytes for a %d-byte export" %
              (grew, size))
        print("     export: %d records, %d bytes; VmHWM %d -> %d KiB" %
              (n, size, hwm_before, hwm_after))
    finally:
        s.kill()


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
    db_exec(d, "UPDATE audit SET line = replace(line, '\"ops\"', '\"0ps\"') WHERE seq = ?",
            (target,))
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
    db_exec(d, "UPDATE audit SET line = replace(line, '\"0ps\"', '\"ops\"') WHERE seq = ?",
            (target,))
    db_exec(d, "UPDATE audit SET actor = 'mallory' WHERE seq = 1")
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        st, v, _ = s.request("GET", "/v1/audit/verify", key=s.admin_key())
        check(v["ok"] is False and v["first_bad_seq"] == 1, "column edit: %r" % v)
    finally:
        s.kill()


def read_head(d):
    """DIR/audit.head: the newest checkpoint airlockd kept outside the database."""
    with open(os.path.join(d, "audit.head"), "rb") as f:
        return f.read()


def t_audit_cut_tail_found(tmp):
    """With airlockd stopped, an insider deletes the newest records and their checkpoints (the
    creation of eve, approver for *): the chain left is whole, but it ends before the checkpoint
    airlockd kept in DIR/audit.head, so the start warns, /readyz says so (still 200) and
    /v1/audit/verify fails from the first record missing; records appended after the cut do not
    hide it (the record at the kept seq is another one), nor move audit.head past it."""
    d = os.path.join(tmp, "var")
    pub = public_key_of(AUDIT_KEY)
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        k = s.admin_key()
        some_admin_actions(s, k)
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "eve", "kind": "user"}, key=k)
        check(st == 201, "eve: %r" % doc)
        st, doc, _ = s.request("POST", "/v1/principals/eve/roles",
                               {"role": "approver", "department": "*"}, key=k)
        check(st == 201, "eve approver: %r" % doc)
        # the export seals the log: the checkpoint it appends is kept in audit.head once durable
        st, _, body = s.raw_get("/v1/audit/export", k)
        seal = json.loads(body.decode().splitlines()[-1])
        check(st == 200 and seal["action"] == "audit.checkpoint", "export: %r" % seal)
        head = json.loads(read_head(d))
        check(head["seq"] == seal["details"]["seq"] and head["hash"] == seal["details"]["hash"] and
              head["signature"] == seal["details"]["signature"], "audit.head: %r" % head)
        check(stat.S_IMODE(os.stat(os.path.join(d, "audit.head")).st_mode) == 0o600, "mode")
        # a checkpoint handed out is kept too, as the very JSON answered
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
        conn.request("GET", "/v1/audit/checkpoint", headers={"Authorization": "Bearer " + k})
        answered = conn.getresponse().read()
        conn.close()
        check(read_head(d) == answered, "audit.head %r is not %r" % (read_head(d), answered))
        path = os.path.join(tmp, "export.jsonl")
        with open(path, "wb") as f:
            f.write(body)
        p = subprocess.run([CLI, "audit", "verify", path, "--public-key", pub, "--checkpoint",
                            os.path.join(d, "audit.head")], capture_output=True, timeout=HANG)
        check(p.returncode == 0, "verify against audit.head: %r %r" % (p.stdout, p.stderr))
        check(s.stop() == 0, "SIGTERM")
    finally:
        s.kill()
    kept = json.loads(read_head(d))
    eve = [r for r in audit_rows(d, "principal.create") if r["subject"] == "eve"][0]["seq"]
    check(kept["seq"] > eve, "kept %r, eve at %d" % (kept, eve))
    db_exec(d, "DELETE FROM audit WHERE seq >= ?", (eve,))
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY})
    try:
        check(s.port, "no start on a cut log: %s" % s.stderr())
        check("airlockd: audit: the log is cut at seq %d: truncated: " % eve in s.stderr(),
              "the cut is not logged: %s" % s.stderr())
        st, doc, _ = s.request("GET", "/readyz")
        check(st == 200 and doc == {"status": "ready", "audit": "truncated"}, "readyz: %r" % doc)
        k = s.admin_key()
        st, v, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and v["ok"] is False and v["first_bad_seq"] == eve and
              v["reason"].startswith("truncated: ") and str(kept["seq"]) in v["reason"] and
              kept["hash"] in v["reason"], "verify: %r" % v)
        # the next export verifies against the pinned key alone, but not against audit.head
        st, _, body = s.raw_get("/v1/audit/export", k)
        check(st == 200, "export of a cut log: %d" % st)
        with open(path, "wb") as f:
            f.write(body)
        p = subprocess.run([CLI, "audit", "verify", path, "--public-key", pub, "--checkpoint",
                            os.path.join(d, "audit.head")], capture_output=True, timeout=HANG)
        check(p.returncode == 1, "a cut export verified against audit.head: %r" % p.stdout)
        # records written again over the cut: the record at the kept seq is another one
        for i in range(kept["seq"] - eve + 2):
            check(s.request("POST", "/v1/departments", {"name": "d%d" % i}, key=k)[0] == 201, i)
        st, doc, _ = s.request("GET", "/v1/audit/checkpoint", key=k)
        check(st == 200 and doc["seq"] > kept["seq"], "checkpoint: %r" % doc)
        check(json.loads(read_head(d)) == kept, "audit.head moved past the cut")
        st, v, _ = s.request("GET", "/v1/audit/verify?full=true", key=k)
        check(v["ok"] is False and v["first_bad_seq"] == kept["seq"] and
              v["reason"].startswith("truncated: ") and "written again" in v["reason"],
              "verify after rewriting: %r" % v)
        st, doc, _ = s.request("GET", "/readyz")
        check(st == 200 and doc.get("audit") == "truncated", "readyz: %r" % doc)
    finally:
        s.kill()


def t_audit_head_whole_log(tmp):
    """A log that was not cut: restarts report nothing, and audit.head follows the log."""
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        some_admin_actions(s, k)
        st, doc, _ = s.request("GET", "/readyz")
        check(doc == {"status": "ready"}, "readyz: %r" % doc)
        check(s.stop() == 0, "SIGTERM")
    finally:
        s.kill()
    last = max(r["seq"] for r in audit_rows(d))
    check(json.loads(read_head(d))["seq"] == last, "audit.head at stop: %r" % read_head(d))
    s = Server(d)
    try:
        check("airlockd: audit: " not in s.stderr(), "a whole log reported: %s" % s.stderr())
        st, doc, _ = s.request("GET", "/readyz")
        check(doc == {"status": "ready"}, "readyz after restart: %r" % doc)
        st, v, _ = s.request("GET", "/v1/audit/verify", key=s.admin_key())
        check(v["ok"] is True, "verify: %r" % v)
    finally:
        s.kill()


class Witness:
    """A witness: keeps every checkpoint POSTed to it with its signature header; answers 500 to
    the first `fail` posts."""

    def __init__(self, fail=0):
        import http.server
        outer = self
        self.posts = []
        self.fail = fail
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    failing = outer.fail > 0
                    outer.fail -= 1 if failing else 0
                    if not failing:
                        outer.posts.append((self.path, dict(self.headers), body))
                self.send_response(500 if failing else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_seq(self, seq):
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            with self.lock:
                if any(json.loads(b)["seq"] == seq for _, _, b in self.posts):
                    return
            time.sleep(0.02)
        raise Fail("the witness got no checkpoint of seq %d: %r" % (seq, self.posts))

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def check_witnessed(posts, secret, pub):
    """Each post: signed as a connector call (HMAC-SHA-256 over "T.BODY"), a checkpoint whose
    Ed25519 signature verifies under the pinned key; seqs only grow."""
    import hashlib
    import hmac
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    seqs = []
    for path, headers, body in posts:
        check(path == "/witness" and headers.get("Content-Type") == "application/json", path)
        m = re.fullmatch(r"t=(\d+),v1=([0-9a-f]{64})", headers.get("X-Airlock-Signature", ""))
        check(m, "signature header: %r" % headers)
        want = hmac.new(secret.encode(), m.group(1).encode() + b"." + body,
                        hashlib.sha256).hexdigest()
        check(hmac.compare_digest(want, m.group(2)), "HMAC of %r" % body)
        check(abs(int(m.group(1)) - time.time()) < 600, "timestamp %s" % m.group(1))
        cp = json.loads(body)
        check(set(cp) == {"seq", "hash", "time", "public_key", "signature"} and
              cp["public_key"] == pub, "checkpoint: %r" % cp)
        text = ("airlock-audit-checkpoint\n%d\n%s\n" % (cp["seq"], cp["hash"])).encode()
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub)).verify(
            bytes.fromhex(cp["signature"]), text)  # raises when it does not verify
        seqs.append(cp["seq"])
    check(seqs == sorted(set(seqs)), "seqs delivered: %r" % seqs)


def t_audit_witness(tmp):
    """audit.witness receives each checkpoint, signed with audit.witness_secret; a witness that
    fails is tried again in the background (counted in /metrics) and blocks nothing."""
    d = os.path.join(tmp, "var")
    secret = "witness-secret-0123456789"
    w = Witness(fail=1)
    cfg = os.path.join(tmp, "airlockd.json")
    with open(cfg, "w") as f:
        json.dump({"audit": {"witness": "http://127.0.0.1:%d/witness" % w.port,
                             "witness_secret": secret}}, f)
    s = Server(d, env_extra={"AIRLOCK_AUDIT_KEY": AUDIT_KEY},
               args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", cfg])
    try:
        check(s.port, "no start: %s" % s.stderr())
        k = s.admin_key()
        some_admin_actions(s, k)  # answered while the witness fails
        st, _, body = s.raw_get("/v1/audit/export", k)
        seal = json.loads(body.decode().splitlines()[-1])
        w.wait_seq(seal["details"]["seq"])  # the checkpoint the export appended
        st, cp, _ = s.request("GET", "/v1/audit/checkpoint", key=k)
        w.wait_seq(cp["seq"])
        with w.lock:
            posts = list(w.posts)
        check_witnessed(posts, secret, public_key_of(AUDIT_KEY))
        check(json.loads(posts[-1][2]) == cp, "the last delivered: %r" % posts[-1][2])
        check(posts[-1][2] == read_head(d), "the witness and audit.head differ")
        st, text, _ = s.request("GET", "/metrics")
        m = re.search(r"^airlock_audit_witness_failures (\d+)", text, re.M)
        check(m and int(m.group(1)) >= 1, "failures not counted: %s" % text[-600:])
        check("audit witness: answered HTTP 500" in s.stderr(), "not logged: %s" % s.stderr())
    finally:
        s.kill()
        w.close()
    # a witness the config names wrong refuses the start
    for audit in ({"witness": "ftp://h/x", "witness_secret": secret},
                  {"witness": "http://u:p@h/x", "witness_secret": secret},
                  {"witness": "http://h/x", "witness_secret": "short"}, {"witness": "http://h/x"},
                  {"witness": "http://h/x", "witness_secret": secret, "other": 1}):
        with open(cfg, "w") as f:
            json.dump({"audit": audit}, f)
        p = subprocess.run([AIRLOCKD, "--config", cfg, "--data-dir", d], capture_output=True,
                           timeout=HANG)
        check(p.returncode == 2 and b"audit" in p.stderr and b"u:p" not in p.stderr,
              "config %r: %d %r" % (audit, p.returncode, p.stderr))


# ---------------------------------------------------------------------------------------------
def t_connectors(tmp):
    d = os.path.join(tmp, "var")
def two_departments(s, k):
    """finance and hr (supervised: a run waits for a person, with its input recorded), a
    principal per grant; hr's template payroll with v1 approved and v2 a draft, finance's refund
    with a draft only and paused with its one version revoked. The keys by name."""
    keys = {"admin": k}
    for dept in ("finance", "hr"):
        check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
    check(s.request("PUT", "/v1/departments/hr/policy", {"autonomy": "supervised"},
                    key=k)[0] == 200, "hr policy")
    for name, grants in (("fin-auditor", (("auditor", "finance"),)),
                         ("all-auditor", (("auditor", "*"),)),
                         ("fin-author", (("author", "finance"),)),
                         ("fin-approver", (("approver", "finance"),)),
                         ("fin-agent", (("agent", "finance"),)),
                         ("fin-author-agent", (("author", "finance"), ("agent", "finance"))),
                         ("hr-author", (("author", "hr"),)), ("hr-approver", (("approver", "hr"),)),
                         ("hr-agent", (("agent", "hr"),))):
        st, doc, _ = s.request("POST", "/v1/principals", {"name": name}, key=k)
        check(st == 201, "principal %s: %r" % (name, doc))
        keys[name] = doc["key"]
        for role, dept in grants:
            check(s.request("POST", "/v1/principals/%s/roles" % name,
                            {"role": role, "department": dept}, key=k)[0] == 201, "grant")

    def template(name, dept, versions, approve=(), revoke=()):
        short = "fin" if dept == "finance" else dept
        author, approver = keys[short + "-author"], keys[short + "-approver"]
        check(s.request("POST", "/v1/templates", {"name": name, "department": dept},
                        key=author)[0] == 201, "template " + name)
        for source in versions:
            check(s.request("POST", "/v1/templates/%s/versions" % name, {"source": source},
                            key=author)[0] == 201, "version of " + name)
        for v in approve:
            for path, key in (("submit", author), ("approve", approver)):
                st, doc, _ = s.request("POST", "/v1/templates/%s/versions/%d/%s" % (name, v, path),
                                       {}, key=key)
                check(st == 200, "%s %s v%d: %r" % (path, name, v, doc))
        for v in revoke:
            check(s.request("POST", "/v1/templates/%s/versions/%d/revoke" % (name, v),
                            {"reason": "paused"}, key=approver)[0] == 200, "revoke")

    template("payroll", "hr", ("return input.salary", "return 'HR-DRAFT-SOURCE'"), approve=(1,))
    template("refund", "finance", ("return 'FIN-DRAFT-SOURCE'",))
    template("paused", "finance", ("return 1",), approve=(1,), revoke=(1,))
    return keys


def t_audit_follows_the_auditors_departments(tmp):
    """An auditor of finance reads finance's records only: not an hr run's input through
    ?run=, not hr's drafts through ?template=, not the records without a department
    (principals, keys, grants for all, refusals), and no export (a chain with records left out
    does not verify). An auditor of every department and an admin read them all."""
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = two_departments(s, k)
        secret = "HR-SALARY-4711"
        st, run, _ = s.request("POST", "/v1/runs", {"template": "payroll",
                                                    "input": {"salary": secret}},
                               key=keys["hr-agent"])
        check(st == 202 and run["status"] == "awaiting_approval", "hr run: %r" % run)
        fin = keys["fin-auditor"]
        for query in ("run=" + run["id"], "template=payroll", "action=run.start"):
            st, doc, _ = s.request("GET", "/v1/audit?" + query, key=fin)
            check(st == 200 and doc["records"] == [], "%s to finance's auditor: %r" % (query, doc))
        st, doc, _ = s.request("GET", "/v1/audit?limit=1000", key=fin)
        text = json.dumps(doc)
        check(st == 200 and doc["records"] and
              all(r["department"] == "finance" for r in doc["records"]) and
              secret not in text and "HR-DRAFT-SOURCE" not in text,
              "finance's auditor reads: %r" % sorted({r["department"] for r in doc["records"]},
                                                     key=str))
        actions = {r["action"] for r in doc["records"]}
        check({"department.create", "template.create", "version.create"} <= actions and
              not actions & {"principal.create", "key.create", "auth.denied"},
              "finance's auditor: %r" % actions)
        # pages of one walk past the records it may not read, to the same records
        seen, after = [], 0
        for _ in range(200):
            st, page, _ = s.request("GET", "/v1/audit?after=%d&limit=1" % after, key=fin)
            check(st == 200 and len(page["records"]) <= 1, "page: %r" % page)
            if not page["records"]:
                break
            seen += page["records"]
            after = page["next"]
        check(seen == doc["records"], "pages differ from the list")
        st, e, _ = s.request("GET", "/v1/audit/export", key=fin)
        error_of(st, e, 403, "FORBIDDEN")
        # the principals: those holding a role in finance, with those roles alone, and no keys
        st, doc, _ = s.request("GET", "/v1/principals", key=fin)
        check(st == 200, "principals to finance's auditor: %r" % doc)
        check(sorted(p["name"] for p in doc) == ["fin-agent", "fin-approver", "fin-auditor",
                                                 "fin-author", "fin-author-agent"],
              "principals to finance's auditor: %r" % doc)
        check(all(p["keys"] == [] and p["roles"] and
                  all(r["department"] == "finance" for r in p["roles"]) for p in doc),
              "roles and keys to finance's auditor: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/principals", key=keys["all-auditor"])
        check(st == 200 and {"hr-agent", "all-auditor"} <= {p["name"] for p in doc} and
              all(p["keys"] for p in doc), "principals to an auditor of all: %r" % doc)
        st, v, _ = s.request("GET", "/v1/audit/verify", key=fin)
        check(st == 200 and v["ok"] is True, "verify to finance's auditor: %r" % v)
        # hr's templates are not there to finance's auditor; finance's, drafts included, are
        for path in ("/v1/templates/payroll", "/v1/templates/payroll/versions/2",
                     "/v1/templates/payroll/versions/1/diff",
                     "/v1/templates/payroll/versions/1/types"):
            st, e, _ = s.request("GET", path, key=fin)
            error_of(st, e, 404, "NOT_FOUND")
            check("hr" not in e["error"]["message"], "names the department: %r" % e)
        st, doc, _ = s.request("GET", "/v1/templates", key=fin)
        check(st == 200 and [t["name"] for t in doc] == ["paused", "refund"], "list: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/templates/refund/versions/1", key=fin)
        check(st == 200 and doc["source"] == "return 'FIN-DRAFT-SOURCE'", "own draft: %r" % doc)
        # an auditor of every department and an admin read everything, and export it whole
        for key in (keys["all-auditor"], k):
            st, doc, _ = s.request("GET", "/v1/audit?run=" + run["id"], key=key)
            check(st == 200 and secret in json.dumps(doc), "?run= to a reader of all: %r" % doc)
            st, doc, _ = s.request("GET", "/v1/audit?limit=1000", key=key)
            check({"principal.create", "key.create", "role.grant"} <=
                  {r["action"] for r in doc["records"]}, "a reader of all: %r" % doc)
            st, _, body = s.raw_get("/v1/audit/export", key)
            check(st == 200 and secret.encode() in body, "export: %d" % st)
            st, doc, _ = s.request("GET", "/v1/templates/payroll/versions/2", key=key)
            check(st == 200 and doc["source"] == "return 'HR-DRAFT-SOURCE'", "draft: %r" % doc)
    finally:
        s.kill()


def t_runs_hide_versions_the_caller_cannot_read(tmp):
    """POST /v1/runs answers a version the caller may not read as one that does not exist: an
    agent learns neither that a draft is there nor another department's name. Whoever reads the
    version learns its state; a revoked version stays known to the department's agents."""
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        keys = two_departments(s, k)
        agent = keys["fin-agent"]

        def message(body, key=agent, want=404, code="NOT_FOUND"):
            st, e, _ = s.request("POST", "/v1/runs", body, key=key)
            error_of(st, e, want, code)
            check("hr" not in e["error"]["message"] and
                  "finance" not in e["error"]["message"], "names a department: %r" % e)
            return e["error"]["message"].replace(body["template"], "T")

        missing = message({"template": "nosuch", "version": 1})
        newest = message({"template": "nosuch"})
        for body in ({"template": "refund", "version": 1}, {"template": "payroll", "version": 1},
                     {"template": "payroll", "version": 2}):
            check(message(body) == missing, "%r answers otherwise than a missing one" % body)
        for body in ({"template": "refund"}, {"template": "payroll"}):
            check(message(body) == newest, "%r answers otherwise than a missing one" % body)
        # the same from the routes that read templates and versions, and from MCP
        for path in ("/v1/templates/refund", "/v1/templates/refund/versions/1",
                     "/v1/templates/payroll", "/v1/templates/payroll/versions/1"):
            st, e, _ = s.request("GET", path, key=agent)
            error_of(st, e, 404, "NOT_FOUND")
            check("hr" not in e["error"]["message"], "names the department: %r" % e)
        for name in ("refund", "payroll"):
            st, doc, _ = s.request("POST", "/v1/mcp", {
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": {}}}, key=agent)
            check(st == 200 and doc["error"]["message"] == "unknown tool " + name,
                  "MCP %s: %r" % (name, doc))
        # an author who is also an agent of finance reads the draft, and learns its state
        message({"template": "refund", "version": 1}, keys["fin-author-agent"], 409,
                "VERSION_NOT_APPROVED")
        message({"template": "refund"}, keys["fin-author-agent"], 409, "VERSION_NOT_APPROVED")
        # a revoked version was approved: finance's agents learn it was taken back
        message({"template": "paused", "version": 1}, agent, 409, "TEMPLATE_REVOKED")
        message({"template": "paused"}, agent, 409, "TEMPLATE_REVOKED")
        # an author of another department moves none of hr's versions, nor learns they exist
        for v, action, who in ((2, "submit", "fin-author"), (1, "revoke", "fin-approver"),
                               (2, "reject", "fin-approver")):
            st, e, _ = s.request("POST", "/v1/templates/payroll/versions/%d/%s" % (v, action),
                                 {}, key=keys[who])
            error_of(st, e, 404, "NOT_FOUND")
        st, e, _ = s.request("POST", "/v1/templates/payroll/versions", {"source": "1"},
                             key=keys["fin-author"])
        error_of(st, e, 404, "NOT_FOUND")
        moved = [r for r in audit_rows(d, "version.submit") if r["subject"] == "payroll"]
        check(len(moved) == 1, "a move went through: %r" % moved)
    finally:
        s.kill()


# ---------------------------------------------------------------------------------------------
def t_connectors(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        for dept in ("finance", "ops"):
            check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
        key_file = os.path.join(d, "secret.key")
        check(stat.S_IMODE(os.stat(key_file).st_mode) == 0o600, "secret.key mode")
        body = connector_body("crm", "finance", timeout_ms=2500)
        st, doc, _ = s.request("POST", "/v1/connectors", body, key=k)
        check(st == 201, "create: %d %r" % (st, doc))
        want = {"name": "crm", "department": "finance", "url": "http://127.0.0.1:9/crm",
                "header_names": ["Authorization"], "timeout_ms": 2500, "created_by": "admin"}
        check({x: doc.get(x) for x in want} == want, "created: %r" % doc)
        check(doc["functions"]["refund"] == {"sensitive": True, "idempotent": False},
              "refund: %r" % doc["functions"])
        check(doc["functions"]["lookup"]["args_schema"] == body["functions"]["lookup"]
              ["args_schema"] and doc["functions"]["lookup"]["sensitive"] is False,
              "lookup: %r" % doc["functions"])
        text = json.dumps(doc)
        check("signing-secret-of" not in text and "header-secret-of" not in text,
              "a secret in the answer: %s" % text)
        error_of(*s.request("POST", "/v1/connectors", body, key=k)[:2], 409, "CONFLICT")
        default = connector_body("erp", "ops")
        st, doc, _ = s.request("POST", "/v1/connectors", default, key=k)
        check(st == 201 and doc["timeout_ms"] == 5000, "default timeout: %r" % doc)

        # refused definitions, each a 400 naming nothing secret
        bad = [
            {"name": "Math"}, {"name": "console"}, {"name": "input"}, {"name": "json"[:0]},
            {"name": "9crm"}, {"name": "crm-x"}, {"name": "constructor"}, {"name": "new"},
            {"name": "x" * 65},
            {"department": "nowhere"},
            {"url": "ftp://127.0.0.1/x"}, {"url": "http://"}, {"url": "http://u:p@host/x"},
            {"url": "file:///etc/passwd"}, {"url": "http://host/a b"}, {"url": "gopher://h/"},
            {"url": "http://host:99999/"}, {"url": "HTTP://host/"},
            {"signing_secret": "short"}, {"signing_secret": 7},
            {"headers": {"X-A": "a\r\nX-Injected: 1"}}, {"headers": {"Bad Name": "v"}},
            {"headers": {"X-A": 1}}, {"headers": {"Content-Type": "text/plain"}},
            {"headers": {"X-Airlock-Signature": "forged"}}, {"headers": {"X-A": "a\nb"}},
            {"timeout_ms": 0}, {"timeout_ms": 60001}, {"timeout_ms": 1.5}, {"timeout_ms": "5"},
            {"functions": {"constructor": {}}}, {"functions": {"toString": {}}},
            {"functions": {"bad-name": {}}}, {"functions": {"f": {"sensitive": "yes"}}},
            {"functions": {"f": {"extra": 1}}}, {"functions": {"f": []}},
            {"functions": {"f": {"args_schema": {"oneOf": []}}}},
            {"functions": {"f": {"result_schema": {"type": "nonsense"}}}},
            {"functions": {"f": {"args_schema": 5}}},
            {"unknown_field": 1},
        ]
        for i, over in enumerate(bad):
            b = connector_body("bad%d" % i, "finance")
            b.update(over)
            st, doc, _ = s.request("POST", "/v1/connectors", b, key=k)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("header-secret-of" not in json.dumps(doc) and "a\r\n" not in json.dumps(doc),
                  "a secret in an error: %r" % doc)
        # a credential in the URL would be stored in the clear and shown to every role of the
        # department and in the audit log: a query or a fragment is refused (headers are sealed)
        for i, url in enumerate(("http://127.0.0.1:9/crm?token=tok-SECRET-1",
                                 "http://127.0.0.1:9/crm?", "http://127.0.0.1:9/crm#tok-SECRET-1",
                                 "https://crm.example/api/?a=1&token=tok-SECRET-1")):
            b = connector_body("query%d" % i, "finance")
            b["url"] = url
            st, doc, _ = s.request("POST", "/v1/connectors", b, key=k)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("tok-SECRET-1" not in json.dumps(doc) and "headers" in doc["error"]["message"],
                  "%s: %r" % (url, doc))
        rows = db_rows(d, "SELECT count(*) FROM audit WHERE line LIKE '%tok-SECRET-1%'")
        check(rows[0][0] == 0, "a refused URL's credential is in the audit log")
        b = connector_body("nofns", "finance")
        del b["functions"]
        error_of(*s.request("POST", "/v1/connectors", b, key=k)[:2], 400, "INVALID_REQUEST")
        # the wrong key never registers
        st, doc, _ = s.request("POST", "/v1/principals", {"name": "agent-f", "kind": "agent"},
                               key=k)
        agent = doc["key"]
        check(s.request("POST", "/v1/principals/agent-f/roles",
                        {"role": "agent", "department": "finance"}, key=k)[0] == 201, "grant")
        error_of(*s.request("POST", "/v1/connectors", connector_body("evil", "finance"),
                            key=agent)[:2], 403, "FORBIDDEN")

        # reads: the admin sees both, the finance agent only finance's
        st, doc, _ = s.request("GET", "/v1/connectors", key=k)
        check(st == 200 and [c["name"] for c in doc] == ["crm", "erp"], "list: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/connectors", key=agent)
        check(st == 200 and [c["name"] for c in doc] == ["crm"], "agent's list: %r" % doc)
        st, doc, _ = s.request("GET", "/v1/connectors/crm", key=agent)
        check(st == 200 and doc["name"] == "crm" and doc["header_names"] == ["Authorization"],
              "get: %r" % doc)
        error_of(*s.request("GET", "/v1/connectors/erp", key=agent)[:2], 403, "FORBIDDEN")
        error_of(*s.request("GET", "/v1/connectors/nope", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/connectors/crm")[:2], 401, "UNAUTHENTICATED")

        # the audit names headers, never their values nor the secret
        rows = audit_rows(d, "connector.create")
        check([r["subject"] for r in rows] == ["crm", "erp"], "audit: %r" % rows)
        r = rows[0]
        check(r["department"] == "finance" and r["details"]["url"] == "http://127.0.0.1:9/crm"
              and r["details"]["header_names"] == ["Authorization"]
              and r["details"]["functions"] == {"lookup": {"sensitive": False,
                                                           "idempotent": False},
                                                "refund": {"sensitive": True,
                                                           "idempotent": False}},
              "audit details: %r" % r)
        # nothing secret in the clear anywhere in the database
        s.stop()
        s.kill()
        for name in os.listdir(d):
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            check(b"signing-secret-of" not in data and b"header-secret-of" not in data,
                  "a secret in the clear in %s" % name)
        data = db_bytes(d)
        check(b"signing-secret-of" not in data and b"header-secret-of" not in data,
              "a secret in the clear in the store")
        row = db_rows(d, "SELECT signing_secret, headers FROM connectors WHERE name = 'crm'")[0]
        check(row[0].startswith("v1:") and row[1].startswith("v1:"), "not sealed: %r" % (row,))

        # the same key file opens them after a restart; another key is refused at first use,
        # and a malformed AIRLOCK_SECRET_KEY stops the start
        s = Server(d, env_extra={"AIRLOCK_SECRET_KEY": "00"})
        check(s.proc.wait(timeout=HANG) != 0 and "AIRLOCK_SECRET_KEY" in s.stderr(),
              "bad AIRLOCK_SECRET_KEY: %s" % s.stderr())
        s.kill()
        s = Server(d)
        st, doc, _ = s.request("GET", "/v1/connectors/crm", key=k)
        check(st == 200 and doc["name"] == "crm", "after restart: %r" % doc)
    finally:
        s.kill()


# ----------------------------------------------------------------------------------------- web UI
UI_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
UI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "server", "ui")


def ui_get(s, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def ui_files():
    out = []
    for root, _, files in os.walk(UI_DIR):
        for f in files:
            full = os.path.join(root, f)
            out.append(("/ui/" + os.path.relpath(full, UI_DIR).replace(os.sep, "/"), full))
    return sorted(out)


def t_head_is_get_without_the_body(tmp):
    """HEAD of a GET route (a pasted link checked by a tool, curl -I) answers what GET would,
    headers and all, without the body; it is no 405."""
    s = Server(os.path.join(tmp, "var"))
    try:
        for path, ctype, key in (("/approvals", "text/html", None),
                                 ("/v1/openapi.json", "application/json", None),
                                 ("/v1/me", "application/json", s.admin_key())):
            conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
            try:
                conn.request("HEAD", path, headers={"Authorization": "Bearer " + key}
                             if key else {})
                r = conn.getresponse()
                body = r.read()
                h = {k.lower(): v for k, v in r.getheaders()}
            finally:
                conn.close()
            check(r.status == 200 and h.get("content-type", "").startswith(ctype) and
                  body == b"", "HEAD %s: %d %r %r" % (path, r.status, h, body[:80]))
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=HANG)
        try:
            conn.request("HEAD", "/v1/me")
            r = conn.getresponse()
            r.read()
        finally:
            conn.close()
        check(r.status == 401, "HEAD /v1/me without a key: %d" % r.status)
    finally:
        s.kill()


def t_ui_assets_and_headers(tmp):
    """Every page path answers the one shell, every file of src/server/ui/ is served as itself
    with its content type, the CSP and the other security headers, an ETag that a matching
    If-None-Match turns into a 304; an unknown asset is 404; the shell has no inline script or
    style and no asset uses innerHTML (guest text is only ever a text node)."""
    s = Server(os.path.join(tmp, "var"))
    try:
        types = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8"}
        files = ui_files()
        check(len(files) >= 10, "UI files: %r" % files)
        for url, full in files:
            with open(full, "rb") as f:
                want = f.read()
            st, h, body = ui_get(s, url)
            check(st == 200 and body == want, "%s: %d, %d bytes" % (url, st, len(body)))
            check(h.get("content-type") == types[os.path.splitext(full)[1]], "%s: %r" % (url, h))
            check(h.get("content-security-policy") == UI_CSP, "%s CSP: %r" % (url, h))
            check(h.get("x-content-type-options") == "nosniff", "%s: %r" % (url, h))
            check(h.get("referrer-policy") == "no-referrer", "%s: %r" % (url, h))
            check(h.get("cache-control") == "no-cache", "%s: %r" % (url, h))
            etag = h.get("etag", "")
            check(re.fullmatch(r'"[0-9a-f]{32}"', etag), "%s ETag %r" % (url, etag))
            st2, h2, body2 = ui_get(s, url, {"If-None-Match": etag})
            check(st2 == 304 and body2 == b"" and h2.get("etag") == etag, "%s: %d %r" % (url, st2, h2))
            st3, _, body3 = ui_get(s, url, {"If-None-Match": '"0123"'})
            check(st3 == 200 and body3 == want, "%s with another ETag: %d" % (url, st3))
            if url.endswith(".js"):
                text = want.decode()
                bad = re.search(r"\.(innerHTML|outerHTML|insertAdjacentHTML)\b|document\.write|"
                                r"\beval\(|new Function|createContextualFragment", text)
                check(not bad, "%s writes HTML: %r" % (url, bad and bad.group(0)))
        with open(os.path.join(UI_DIR, "index.html"), "rb") as f:
            shell = f.read()
        check(b"<script>" not in shell and not re.search(rb"\sstyle\s*=", shell, re.I) and
              not re.search(rb"\son[a-z]+\s*=", shell, re.I), "inline code in index.html")
        for page in ("/", "/overview", "/approvals", "/templates", "/templates/refund-small",
                     "/templates/refund-small/versions/3", "/templates/%3Cimg%3E/versions/x",
                     "/runs", "/runs/run_0123", "/audit", "/admin"):
            st, h, body = ui_get(s, page)
            check(st == 200 and body == shell, "%s: %d" % (page, st))
            check(h.get("content-type") == "text/html; charset=utf-8" and
                  h.get("content-security-policy") == UI_CSP, "%s: %r" % (page, h))
        st, h, body = ui_get(s, "/ui/nope.js")
        check(st == 404 and json.loads(body)["error"]["code"] == "NOT_FOUND", "unknown asset %d" % st)
        st, h, body = ui_get(s, "/ui/pages/../app.js")
        check(st == 404, "dot-dot asset: %d" % st)
        st, _, _ = ui_get(s, "/templates/a/versions/1/diff")
        check(st == 404, "a path under a page that is none: %d" % st)
        # the API stays JSON and carries no UI headers
        st, h, _ = ui_get(s, "/healthz")
        check(st == 200 and "content-security-policy" not in h, "/healthz: %r" % h)
    finally:
        s.kill()


# ------------------------------------------------------------------------------ PostgreSQL only
def pg_cluster(command):
    """Stops or starts the test cluster (tests/support/pg_cluster.sh, AIRLOCK_TEST_PG_DIR)."""
    p = subprocess.run([os.environ["AIRLOCK_TEST_PG_CLUSTER"], command,
                        os.environ["AIRLOCK_TEST_PG_DIR"]], capture_output=True, timeout=90)
    check(p.returncode == 0, "pg_cluster.sh %s: %s" % (command, p.stderr))


def pg_outage_readyz(tmp):
    """/readyz says 503 while the database is down and 200 again once it is back; the node
    reconnects by itself and serves as before, without a restart."""
    d = os.path.join(tmp, "var")
    s = Server(d)
    stopped = False
    try:
        k = s.admin_key()
        st, doc, _ = s.request("GET", "/readyz")
        check(st == 200 and doc["status"] == "ready", "readyz: %d %r" % (st, doc))
        pg_cluster("stop")
        stopped = True
        for _ in range(2):  # the broken connection, then a failed reconnect
            st, doc, _ = s.request("GET", "/readyz")
            check(st == 503 and doc["status"] == "unavailable", "readyz down: %d %r" % (st, doc))
        st, doc, _ = s.request("GET", "/v1/me", key=k)
        check(st >= 500 and "error" in doc, "a request while the database is down: %d %r"
              % (st, doc))
        st, _, _ = s.request("GET", "/healthz")
        check(st == 200, "healthz (the process) while the database is down: %d" % st)
        pg_cluster("start")
        stopped = False
        st, doc, _ = s.request("GET", "/readyz")
        check(st == 200 and doc["status"] == "ready", "readyz back: %d %r" % (st, doc))
        st, doc, _ = s.request("GET", "/v1/me", key=k)
        check(st == 200 and doc["name"] == "admin", "me after the outage: %d %r" % (st, doc))
        st, doc, _ = s.request("POST", "/v1/departments", {"name": "ops"}, key=k)
        check(st == 201, "a write after the outage: %d %r" % (st, doc))
        check(s.proc.poll() is None, "airlockd exited: %s" % s.stderr())
        check(s.stop() == 0, "SIGTERM exit status not 0")
    finally:
        if stopped:
            pg_cluster("start")
        s.kill()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]
if PG:
    TESTS.append(("pg_outage_readyz", pg_outage_readyz))


def run_tests(tests, prefix, need_cli=True):
    """The command line every airlockd test file shares: --airlockd PATH [--cli PATH]
    [-k SUBSTRING]; each test gets a fresh temporary folder, removed after it. Prints
    `N passed, M failed` last; the exit status is 1 on any failure."""
    global AIRLOCKD, CLI
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlockd", required=True)
    ap.add_argument("--cli", required=need_cli)
    ap.add_argument("-k", default="")
    a = ap.parse_args()
    AIRLOCKD = os.path.abspath(a.airlockd)
    CLI = os.path.abspath(a.cli) if a.cli else None
    passed = failed = 0
    for name, fn in tests:
        if a.k not in name:
            continue
        tmp = tempfile.mkdtemp(prefix=prefix)
        try:
            fn(tmp)
            passed += 1
            print("ok   " + name, flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            failed += 1
            print("FAIL " + name + ": " + (str(e) if isinstance(e, Fail) else
                                           traceback.format_exc()), flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if PG:
                pg_drop_all()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main():
    return run_tests(TESTS, "airlockd-test-")


if __name__ == "__main__":
    sys.exit(main())
