#!/usr/bin/env python3
"""A fake HTTP connector for tests of airlockd's connector client.

    fake_connector.py SECRET

Listens on 127.0.0.1 (a free port), prints "PORT\\n" on stdout once ready, and answers POST by
path, each a connector fault the client must handle:

  /echo      200 {"result":{"body":<the request body, parsed>,"headers":{lowercased name: value},
             "signature_ok":bool,"skew_s":N}}: the signature checked with SECRET
  /value     200 {"result":<the request's first argument>}
  /error     200 {"error":<the first argument>}: the connector's own error message
  /500       500 with a body that must never reach the guest
  /garbage   200 with a body that is not JSON
  /shape     200 {"x":1}: JSON of neither shape
  /redirect  302 to /value: a client that follows it would get an answer
  /huge      200 {"result":"xxx..."} of 2 MiB
  /slow      answers after 5 s (the client's timeout is shorter)
  /close     promises 1000 bytes, sends 10 and closes the connection
  /barrier   waits until 50 requests are inside at once (20 s at most), then echoes: only a
             client with 50 calls in flight together gets answers
"""
import hashlib
import hmac
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = sys.argv[1].encode()
BARRIER = threading.Barrier(50, timeout=20)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def echo(self, raw):
        sig = self.headers.get("X-Airlock-Signature", "")
        parts = dict(p.split("=", 1) for p in sig.split(",") if "=" in p)
        want = hmac.new(SECRET, parts.get("t", "").encode() + b"." + raw,
                        hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(want, parts.get("v1", ""))
        skew = abs(time.time() - int(parts.get("t", "0") or 0))
        return {"result": {"body": json.loads(raw),
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "signature_ok": ok, "skew_s": int(skew)}}

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            args = json.loads(raw).get("args", [])
        except ValueError:
            args = []
        first = args[0] if args else None
        path = self.path
        if path == "/echo":
            self.answer(200, self.echo(raw))
        elif path == "/value":
            self.answer(200, {"result": first})
        elif path == "/error":
            self.answer(200, {"error": first})
        elif path == "/500":
            self.answer(500, b'{"error":"LEAKED-BODY internal stack trace"}')
        elif path == "/garbage":
            self.answer(200, b"LEAKED-BODY <html>not json")
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/value")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/shape":
            self.answer(200, {"x": 1})
        elif path == "/huge":
            self.answer(200, b'{"result":"' + b"x" * (2 << 20) + b'"}')
        elif path == "/slow":
            time.sleep(5)
            self.answer(200, {"result": "late"})
        elif path == "/close":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"result":')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif path == "/barrier":
            try:
                BARRIER.wait()
            except threading.BrokenBarrierError:
                self.answer(200, {"error": "the 50 calls were not in flight together"})
                return
            self.answer(200, self.echo(raw))
        else:
            self.answer(404, {"error": "no such path"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: 50 connections arrive at once

    def handle_error(self, request, client_address):
        pass  # a client that hung up (timed out, cancelled) is what the tests do on purpose


def main():
    server = Server(("127.0.0.1", 0), Handler)
    sys.stdout.write("%d\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
