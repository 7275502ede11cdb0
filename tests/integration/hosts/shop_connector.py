#!/usr/bin/env python3
"""A shop application as an airlockd connector, for the run tests.

    shop_connector.py SECRET [DATABASE]

Listens on 127.0.0.1 (a free port) and prints "PORT\\n" once ready. POST / takes a connector
call (docs/server.md) and answers by its function:

  shop.orders(status)        the orders with that status
  shop.refund(order, amount) {"refunded": order, "amount": amount}; counted by idempotency key
  shop.fail(message)         {"error": message}: the connector's own error
  shop.slow(ms)              answers after ms milliseconds (at most 30 s)
  shop.hold(ms, ...)         as shop.slow the first time a key comes, at once after that (an
                             idempotent service answering a repeated key from what it did);
                             with a string GATE instead of ms, the first time waits until GET
                             /open/GATE (at most 30 s): a test decides when it answers
  shop.stall(ms)             as shop.slow every time a key comes (declared idempotent by the
                             tests: an execution that is there each time its run is retried)
  shop.credit(order, amount) as shop.refund (declared sensitive and idempotent by the tests)
  garbled.note()             {"note": "ok \\ud800"}: an answer holding a lone surrogate (a
                             connector serving garbled text, or a compromised one)
  steps.step(i), once.step(i), steps.ask(i), once.ask(i)
                             i (durable runs: steps is declared idempotent, once is not; ask is
                             declared sensitive, and counts as a step for /kill and /hold). GET
                             /kill/PID/I arms step I: its first call to arrive SIGKILLs process
                             PID (airlockd) and is never answered. PID 0 arms a step for a pid
                             given later; I 0 gives only the pid (a restarted airlockd's): a
                             step armed without one waits for it (at most 60 s). GET /hold/I:
                             the first call of step I waits until GET /open/step-I (at most 30 s)
  store.listOrders(status)   the orders with that status (examples/orders.ts's host functions,
  billing.invoices(customer) for tests/typescript) and {"due": 10} per order of the customer

Every call's signature is checked with SECRET (a bad one answers 401). GET /calls answers
{"by_key": {idempotency_key: count}, "by_function": {function: count}, "args_by_key":
{idempotency_key: [args, ...]}, "answered_by_key": {idempotency_key: count}} so a test can see
that a resumed run did not repeat a finished call, that an approved call reached the shop once,
what a retried call was sent with, and that an answer has left.

With DATABASE (airlockd's airlock.db, or the postgres:// URL of its database), every call first
looks there for its run's run.start record, read-only, as another process sees what airlockd
committed; "unrecorded" in GET /calls
lists the runs whose call arrived before that record.
"""
import hashlib
import hmac
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = sys.argv[1].encode()
DATABASE = sys.argv[2] if len(sys.argv) > 2 else None
UNRECORDED = []
LOCK = threading.Lock()
BY_KEY = {}
BY_FUNCTION = {}
ARGS_BY_KEY = {}
ANSWERED = {}
GATES = {}
KILL = {"pid": 0, "at": set()}  # GET /kill/PID/I
KILL_SET = threading.Condition(LOCK)
ORDERS = [
    {"id": "o-1", "customer": "acme", "amount": 120, "status": "paid"},
    {"id": "o-2", "customer": "globex", "amount": 30, "status": "paid"},
    {"id": "o-3", "customer": "acme", "amount": 5, "status": "pending"},
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        key = getattr(self, "key", None)
        if key is not None:
            with LOCK:
                ANSWERED[key] = ANSWERED.get(key, 0) + 1

    def do_GET(self):
        self.key = None
        if self.path.startswith("/hold/"):
            with LOCK:
                KILL.setdefault("hold", set()).add(int(self.path[len("/hold/"):]))
            self.answer(200, {"held": self.path[len("/hold/"):]})
            return
        if self.path.startswith("/kill/"):
            pid, at = (int(x) for x in self.path[len("/kill/"):].split("/"))
            with LOCK:
                if pid:
                    KILL["pid"] = pid
                if at:
                    KILL["at"].add(at)
                KILL_SET.notify_all()
            self.answer(200, {"armed": sorted(KILL["at"])})
            return
        if self.path.startswith("/open/"):
            gate(self.path[len("/open/"):]).set()
            self.answer(200, {"opened": self.path[len("/open/"):]})
            return
        with LOCK:
            self.answer(200, {"by_key": dict(BY_KEY), "by_function": dict(BY_FUNCTION),
                              "args_by_key": dict(ARGS_BY_KEY), "unrecorded": list(UNRECORDED),
                              "answered_by_key": dict(ANSWERED)})

    def do_POST(self):
        self.key = None
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        sig = dict(p.split("=", 1) for p in self.headers.get("X-Airlock-Signature", "").split(",")
                   if "=" in p)
        want = hmac.new(SECRET, sig.get("t", "").encode() + b"." + raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, sig.get("v1", "")):
            self.answer(401, {"error": "bad signature"})
            return
        call = json.loads(raw)
        fn, args = call["function"], call["args"]
        self.key = call["idempotency_key"]
        if DATABASE and not started(call["run"]):
            with LOCK:
                UNRECORDED.append(call["run"])
        with LOCK:
            BY_KEY[call["idempotency_key"]] = BY_KEY.get(call["idempotency_key"], 0) + 1
            BY_FUNCTION[fn] = BY_FUNCTION.get(fn, 0) + 1
            ARGS_BY_KEY.setdefault(call["idempotency_key"], []).append(args)
            seen = BY_KEY[call["idempotency_key"]]
        if fn == "shop.orders":
            self.answer(200, {"result": [o for o in ORDERS if o["status"] == args[0]]})
        elif fn == "shop.hold":
            if seen == 1 and isinstance(args[0], str):
                gate(args[0]).wait(30)
            elif seen == 1:
                time.sleep(min(args[0], 30000) / 1000.0)
            self.answer(200, {"result": "held"})
        elif fn in ("shop.refund", "shop.credit"):
            self.answer(200, {"result": {"refunded": args[0], "amount": args[1]}})
        elif fn == "shop.fail":
            self.answer(200, {"error": args[0]})
        elif fn in ("steps.step", "once.step", "steps.ask", "once.ask"):
            with LOCK:
                kill = args[0] in KILL["at"] and seen == 1
                if kill:
                    KILL["at"].discard(args[0])
                    KILL_SET.wait_for(lambda: KILL["pid"], timeout=60)
                    pid, KILL["pid"] = KILL["pid"], 0
            if seen == 1 and args[0] in KILL.get("hold", ()):
                gate("step-%d" % args[0]).wait(30)
            if kill and pid:
                os.kill(pid, signal.SIGKILL)  # sent, never answered: in doubt
                time.sleep(1)
                return
            self.answer(200, {"result": args[0]})
        elif fn == "garbled.note":
            self.answer(200, {"result": {"note": "ok \ud800"}})
        elif fn == "store.listOrders":
            self.answer(200, {"result": [o for o in ORDERS if o["status"] == args[0]]})
        elif fn == "billing.invoices":
            self.answer(200, {"result": [{"due": 10} for o in ORDERS if o["customer"] == args[0]]})
        elif fn in ("shop.slow", "shop.stall"):
            time.sleep(min(args[0], 30000) / 1000.0)
            self.answer(200, {"result": "slept"})
        else:
            self.answer(200, {"error": "no function " + fn})


def gate(name):
    with LOCK:
        return GATES.setdefault(name, threading.Event())


def started(run):
    if DATABASE.startswith(("postgres://", "postgresql://")):
        p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-v", "run=" + run,
                            DATABASE], input="SELECT count(*) FROM audit WHERE action = "
                           "'run.start' AND subject = :'run';\n", capture_output=True, text=True,
                           timeout=10)
        return p.returncode == 0 and p.stdout.strip() == "1"
    db = sqlite3.connect("file:%s?mode=ro" % DATABASE, uri=True, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM audit WHERE action = 'run.start' AND subject = ?",
                          (run,)).fetchone()[0] == 1
    finally:
        db.close()


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a cancelled call closes its connection before the answer: expected, not news
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
