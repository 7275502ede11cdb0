#!/usr/bin/env python3
"""airlockd's core, each promise against the attack it answers (integration.core):

  - framing is strict: a request that could be read two ways (Content-Length beside
    Transfer-Encoding, two Content-Lengths, a Transfer-Encoding that is not exactly chunked) is
    answered 400 and its connection closed: nothing smuggled behind it is served;
  - a request is decided from its headers: an unauthenticated or oversized one is answered
    before a byte of its body is sent, and a client that sends all before it reads still gets
    the answer;
  - connections cannot be hoarded: a limit per client address (the local machine exempt by
    default), deadlines for headers and bodies however slowly they trickle, a budget of bodies;
  - GET /v1/audit/verify goes on from the head it verified: an edit of an old record is found by
    ?full=true (rate limited), an edit after the head by the next verification;
  - fair shares: an agent's flood waits behind its share, another department's run does not,
    and a principal's queue is bounded (429).

usage: test_core.py --airlockd PATH [--cli PATH] [-k SUBSTRING]

Every wait is bounded by a deadline many times what it needs (ts.HANG); no verdict depends on
how fast the machine is.
"""
import json
import os
import select
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Server, audit_rows, check, error_of  # noqa: E402

HANG = ts.HANG


def start(tmp, config=None):
    d = os.path.join(tmp, "var")
    if config is None:
        return Server(d)
    path = os.path.join(tmp, "airlockd.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return Server(d, args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", path])


def connect(port, source="127.0.0.1"):
    s = socket.socket()
    s.settimeout(HANG)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_all(s):
    """Everything until the server closes (or HANG passes): bytes, closed."""
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return data, False
        except OSError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def responses(data):
    """The status lines of the HTTP answers in data, in order."""
    return [line.split(b" ")[1].decode() for line in data.split(b"\r\n")
            if line.startswith(b"HTTP/1.1 ")]


def closed_soon(s):
    """True when the server closes s (or it is reset) within HANG."""
    _, closed = read_all(s)
    return closed


def t_framing_is_strict(tmp):
    s = start(tmp)
    try:
        k = s.admin_key()
        smuggled = ("POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: 19\r\n\r\n"
                    '{"name":"smuggled"}' % k)
        cases = {
            "both": "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "two lengths": "Content-Length: 0\r\nContent-Length: %d\r\n" % len(smuggled),
            "gzip": "Transfer-Encoding: gzip\r\n",
            "gzip, chunked": "Transfer-Encoding: gzip, chunked\r\n",
            "chunked twice": "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        }
        for name, headers in cases.items():
            c = connect(s.port)
            c.sendall(("POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                       "Content-Type: application/json\r\n%s\r\n0\r\n\r\n%s" %
                       (k, headers, smuggled)).encode())
            data, closed = read_all(c)
            c.close()
            check(responses(data) == ["400"], "%s: answers %r" % (name, data[:300]))
            check(b'"code":"INVALID_REQUEST"' in data, "%s: %r" % (name, data[:300]))
            check(closed, "%s: the connection was kept" % name)
        st, deps, _ = s.request("GET", "/v1/departments", key=k)
        check(st == 200 and all(d["name"] != "smuggled" for d in deps),
              "a smuggled request was served: %r" % deps)
        # one Content-Length, or chunks alone, are read as ever
        st, doc, _ = s.request("POST", "/v1/departments", {"name": "fine"}, key=k)
        check(st == 201, "a plain request: %d %r" % (st, doc))
        c = connect(s.port)
        body = b'{"name":"chunked"}'
        c.sendall(b"POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                  k.encode() + b"\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                  b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
        data, _ = read_all(c)
        c.close()
        check(responses(data) == ["201"], "a chunked request: %r" % data[:300])
    finally:
        s.kill()


def t_refused_from_the_headers(tmp):
    s = start(tmp)
    try:
        k = s.admin_key()
        # the headers alone: the answer comes though no byte of the body is sent (each from an
        # address of its own, whose first 401 is recorded at once)
        for i, (key, length, want) in enumerate(((None, 1 << 20, "401"),
                                                 ("ak_000000000000_" + "0" * 64, 1 << 20, "401"),
                                                 (k, (1 << 20) + 1, "413"),
                                                 (None, 1 << 40, "413"))):
            c = connect(s.port, "127.0.0.%d" % (2 + i))
            auth = "Authorization: Bearer %s\r\n" % key if key else ""
            c.sendall(("POST /v1/departments HTTP/1.1\r\nHost: x\r\n%s"
                       "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                       % (auth, length)).encode())
            data, closed = read_all(c)
            c.close()
            check(responses(data) == [want], "key %r, %d bytes declared: %r"
                  % (key and key[:6], length, data[:200]))
            check(closed, "the connection of a refused request was kept")
        denied = audit_rows(s.data_dir, "auth.denied")
        check(len(denied) == 2, "every 401 recorded (a 413 is not): %r" % denied)
        # a client that sends its whole body before it reads gets the answer, not a reset
        st, doc, _ = s.request("POST", "/v1/departments", raw=b"x" * (1 << 20))
        error_of(st, doc, 401, "UNAUTHENTICATED")
        big = b'{"name":"' + b"a" * (1 << 20) + b'"}'
        error_of(*s.request("POST", "/v1/departments", raw=big, key=k)[:2], 413,
                 "PAYLOAD_TOO_LARGE")
        check(s.request("GET", "/healthz")[0] == 200, "airlockd is well")
    finally:
        s.kill()


def t_connections_per_address(tmp):
    s = start(tmp, {"http": {"per_client_connections": 4}})
    try:
        k = s.admin_key()
        held = [connect(s.port, "127.0.0.2") for _ in range(4)]
        for c in held:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        extra = connect(s.port, "127.0.0.2")
        check(closed_soon(extra), "a fifth connection from 127.0.0.2 was kept")
        # another address, and the machine's own (exempt by default), are served meanwhile
        for source in ("127.0.0.3", "127.0.0.1"):
            c = connect(s.port, source)
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data, _ = read_all(c)
            c.close()
            check(responses(data) == ["200"], "from %s: %r" % (source, data[:200]))
        many = [connect(s.port) for _ in range(10)]
        for c in many:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        for c in many:
            data, _ = read_all(c)
            c.close()
            check(responses(data) == ["200"], "127.0.0.1, ten at once: %r" % data[:200])
        # a held connection that goes frees a place for its address
        held.pop().close()
        deadline = time.monotonic() + HANG
        while True:
            c = connect(s.port, "127.0.0.2")
            c.sendall(b"GET /v1/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Authorization: Bearer " + k.encode() + b"\r\n\r\n")
            data, _ = read_all(c)
            c.close()
            if responses(data) == ["200"]:
                break
            check(time.monotonic() < deadline, "127.0.0.2 never got its place back")
            time.sleep(0.05)
        for c in held:
            c.close()
    finally:
        s.kill()
    # per_client_exempt: [] limits the local machine too
    d = os.path.join(tmp, "2")
    os.makedirs(d)
    s = start(d, {"http": {"per_client_connections": 2, "per_client_exempt": []}})
    try:
        held = [connect(s.port) for _ in range(2)]
        for c in held:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        check(closed_soon(connect(s.port)), "127.0.0.1 was not limited with no exemption")
        for c in held:
            c.close()
    finally:
        s.kill()


def t_deadlines_hold_whatever_trickles_in(tmp):
    s = start(tmp, {"http": {"header_timeout_ms": 1000, "body_timeout_ms": 1000}})
    try:
        k = s.admin_key()
        slow = connect(s.port, "127.0.0.2")
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        body = connect(s.port, "127.0.0.3")
        body.sendall(b"POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     k.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: 100"
                     b"\r\n\r\n{")
        gone = {}

        def trickle(name, c):
            # a byte every 100 ms keeps any idle timeout at bay: only the deadline ends it
            deadline = time.monotonic() + HANG
            while time.monotonic() < deadline:
                try:
                    c.sendall(b"X" if name == "headers" else b" ")
                except OSError:
                    gone[name] = True
                    return
                time.sleep(0.1)

        threads = [threading.Thread(target=trickle, args=a) for a in (("headers", slow),
                                                                       ("body", body))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(2 * HANG)
        check(gone == {"headers": True, "body": True}, "held past its deadline: %r" % gone)
        slow.close()
        body.close()
        # a request that arrives at once is served as ever
        st, doc, _ = s.request("POST", "/v1/departments", {"name": "quick"}, key=k)
        check(st == 201, "%d %r" % (st, doc))
    finally:
        s.kill()


def t_bodies_share_a_budget(tmp):
    s = start(tmp, {"body_limit_bytes": 65536, "http": {"body_budget_bytes": 100000}})
    try:
        k = s.admin_key()

        def first_body():
            c = connect(s.port)
            c.sendall(b"POST /v1/departments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      k.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: 60000"
                      b"\r\n\r\n{")
            return c

        first = first_body()
        deadline = time.monotonic() + HANG
        while True:  # the first has been admitted once its first byte is read
            st, doc, headers = s.request("POST", "/v1/departments", raw=b'{"name":"x"}' +
                                         b" " * 59988, key=k)
            if st == 429:
                break
            check(time.monotonic() < deadline, "the budget never filled: %d %r" % (st, doc))
            if select.select([first], [], [], 0)[0]:
                # the first came in while this one held its share, and was refused: again
                first.close()
                first = first_body()
            time.sleep(0.05)
        error_of(st, doc, 429, "RATE_LIMITED")
        check("request bodies" in doc["error"]["message"], "%r" % doc)
        check(s.last_headers.get("retry-after") == "1", "Retry-After: %r" % s.last_headers)
        first.close()
        deadline = time.monotonic() + HANG
        while True:  # its share comes back once it is gone
            st, doc, _ = s.request("POST", "/v1/departments", {"name": "later"}, key=k)
            if st == 201:
                break
            check(time.monotonic() < deadline, "the budget never came back: %d %r" % (st, doc))
            time.sleep(0.05)
    finally:
        s.kill()


def t_verify_goes_on_from_its_head(tmp):
    s = start(tmp)
    try:
        k = s.admin_key()
        for i in range(20):
            check(s.request("POST", "/v1/departments", {"name": "d%d" % i}, key=k)[0] == 201, "")
        st, first, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and first["ok"], "%r" % first)
        # an old record edited behind airlockd's back: what was verified is not read again...
        rows = ts.db_rows(s.data_dir, "SELECT seq FROM audit WHERE action = 'department.create' "
                          "ORDER BY seq LIMIT 1")
        old = rows[0][0]
        ts.db_exec(s.data_dir, "UPDATE audit SET line = replace(line, '\"d0\"', '\"dX\"') "
                   "WHERE seq = ?", (old,))
        st, doc, _ = s.request("POST", "/v1/departments", {"name": "after"}, key=k)
        st, inc, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and inc["ok"] and inc["records"] > first["records"],
              "the incremental verification: %r" % inc)
        # ... a full one reads everything again and finds it
        st, full, _ = s.request("GET", "/v1/audit/verify?full=true", key=k)
        check(st == 200 and not full["ok"] and full["first_bad_seq"] == old,
              "the full verification: %r" % full)
        # a fault, once found, stays until a full verification finds the log whole
        st, again, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and not again["ok"], "after the full one: %r" % again)
        # full ones are rate limited on their own: two at once, then one a minute
        st, doc, _ = s.request("GET", "/v1/audit/verify?full=true", key=k)
        check(st == 200, "the second full verification: %d" % st)
        st, doc, _ = s.request("GET", "/v1/audit/verify?full=true", key=k)
        error_of(st, doc, 429, "RATE_LIMITED")
        check(int(s.last_headers.get("retry-after", "0")) >= 1, "%r" % s.last_headers)
        error_of(*s.request("GET", "/v1/audit/verify?full=yes", key=k)[:2], 400,
                 "INVALID_REQUEST")
    finally:
        s.kill()
    # an edit after the verified head is found by the next verification
    d = os.path.join(tmp, "2")
    os.makedirs(d)
    s = start(d)
    try:
        k = s.admin_key()
        st, first, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and first["ok"], "%r" % first)
        check(s.request("POST", "/v1/departments", {"name": "new"}, key=k)[0] == 201, "")
        seq = ts.db_rows(s.data_dir, "SELECT max(seq) FROM audit")[0][0]
        ts.db_exec(s.data_dir, "UPDATE audit SET line = replace(line, '\"new\"', '\"old\"') "
                   "WHERE seq = ?", (seq,))
        st, doc, _ = s.request("GET", "/v1/audit/verify", key=k)
        check(st == 200 and not doc["ok"] and doc["first_bad_seq"] == seq, "%r" % doc)
    finally:
        s.kill()


def t_fair_shares(tmp):
    w = tr.World(tmp, config={"runs": {"per_principal_concurrent": 2,
                                       "per_principal_queued": 4}})
    try:
        w.template("nap", "await shop.slow(input.ms); return 'rested';", ["shop.slow"])
        # agent-7 floods finance: 2 execute, 4 wait, the 7th is refused and not recorded
        ids = []
        for _ in range(6):
            st, doc = w.run({"template": "nap", "input": {"ms": 2000}, "wait": False}, want=202)
            ids.append(doc["id"])
        st, doc = w.run({"template": "nap", "input": {"ms": 2000}, "wait": False})
        error_of(st, doc, 429, "RATE_LIMITED")
        check(len(audit_rows(w.dir, "run.start")) == 6, "a refused run was recorded")
        deadline = time.monotonic() + HANG
        while w.shop.calls()["by_function"].get("shop.slow", 0) < 2:
            check(time.monotonic() < deadline, "the flood's first two never called")
            time.sleep(0.02)
        # another department's run is not held behind the flood
        w.ok("POST", "/v1/principals/alice/roles", {"role": "author", "department": "other"},
             w.admin, 201)
        w.ok("POST", "/v1/principals/bob/roles", {"role": "approver", "department": "other"},
             w.admin, 201)
        w.ok("POST", "/v1/templates", {"name": "sum", "department": "other",
                                       "description": "sum"}, w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/sum/versions", {"source": "return 6 * 7;", "functions": [],
                                                    "input_schema": {"type": "object"}},
             w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/sum/versions/1/submit", {}, w.keys["alice"])
        w.ok("POST", "/v1/templates/sum/versions/1/approve", {}, w.keys["bob"])
        st, quick = w.run({"template": "sum"}, key=w.keys["agent-9"])
        check(st == 200 and quick["value"] == 42, "the other department's run: %r" % quick)
        calls = w.shop.calls()["by_function"].get("shop.slow", 0)
        check(calls == 2, "the flood's share is 2 at once; %d calls made" % calls)
        # the flood goes on two at a time, every run completes
        for run_id in ids:
            check(w.until(run_id, ("completed",))["value"] == "rested", "run %s" % run_id)
        # a waiting run that is cancelled ends at once, cancelled
        more = [w.run({"template": "nap", "input": {"ms": 1500}, "wait": False}, want=202)[1]["id"]
                for _ in range(3)]
        doc = w.ok("POST", "/v1/runs/%s/cancel" % more[2], {}, w.keys["agent-7"])
        check(doc["status"] == "cancelled", "%r" % doc)
        for run_id in more[:2]:
            check(w.until(run_id, ("completed",))["value"] == "rested", "run %s" % run_id)
        ends = [r for r in audit_rows(w.dir, "run.end") if r["subject"] == more[2]]
        check(len(ends) == 1 and ends[0]["details"]["status"] == "cancelled", "%r" % ends)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-core-", need_cli=False)


if __name__ == "__main__":
    sys.exit(main())
