#!/usr/bin/env python3
"""The example application of examples/orders_host.py as an airlockd connector (HTTP).

    orders_connector.py --port PORT --secret-file FILE

Serves store.listOrders and billing.invoices: airlockd POSTs each call as
{"function", "args", "run", ..., "idempotency_key"} signed with X-Airlock-Signature
(t=UNIX,v1=HMAC-SHA-256(secret, "UNIX.BODY")), and the answer is {"result": V} or
{"error": "message"}. A request whose signature does not verify, or is more than five minutes
old, is refused. Prints "orders connector: listening on PORT" when ready.
"""
import argparse
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from orders_host import FUNCTIONS  # noqa: E402 - the same application, over HTTP

SECRET = b""


def signature_ok(header, body):
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        stamp = int(parts.get("t", ""))
    except ValueError:
        return False
    want = hmac.new(SECRET, str(stamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return abs(time.time() - stamp) < 300 and hmac.compare_digest(want, parts.get("v1", ""))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: with Nagle on, the body waits for the ACK of the
    # headers, which the client delays up to 40 ms on a kept-alive connection
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

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not signature_ok(self.headers.get("X-Airlock-Signature", ""), body):
            self.answer(401, {"error": "bad signature"})
            return
        call = json.loads(body)
        fn = FUNCTIONS.get(call.get("function"))
        if fn is None:
            self.answer(200, {"error": "no function %s" % call.get("function")})
            return
        try:
            self.answer(200, {"result": fn(*call.get("args", []))})
        except Exception as exc:  # the guest sees the message as an Error
            self.answer(200, {"error": str(exc)})


def main():
    global SECRET
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8081)
    ap.add_argument("--secret-file", required=True)
    a = ap.parse_args()
    with open(a.secret_file, "rb") as f:
        SECRET = f.read().strip()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print("orders connector: listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
