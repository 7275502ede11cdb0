#!/usr/bin/env python3
"""`make run`: airlockd on SQLite in ./var with a demo, ready for a first curl.

    demo.py --airlockd PATH [--data-dir DIR] [--listen HOST:PORT] [--connector-port N]
            [--once] [--fresh]

Starts the example application (examples/orders_connector.py) as an HTTP connector and airlockd,
then, through the API with the admin key, sets up what is missing: department `demo`, the
connectors `store` and `billing`, the principals demo-author, demo-approver and demo-agent (their
keys in DIR/demo-*.key, mode 0600), and the template `orders-summary` (examples/orders.js)
approved by demo-approver. It prints the URL, where the admin key is and a curl line that runs
the template, and serves until Ctrl-C. Running it again reuses what exists. --once runs the
template itself, prints the answer and stops (the test of this script).
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT_S = 30


def die(msg):
    print("demo: " + msg, file=sys.stderr)
    sys.exit(1)


class Api:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None, key=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + key)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=WAIT_S) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def want(self, method, path, body, key, ok=(200, 201), exists_ok=False):
        st, doc = self.call(method, path, body, key)
        if st in ok or (exists_ok and st == 409):
            return st, doc
        die("%s %s answered %d: %s" % (method, path, st, json.dumps(doc)))


def write_secret(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")


def read_line_matching(stream, pattern, echo):
    """Reads lines until one matches; echoes the others to stderr. None at EOF or timeout."""
    found = {}

    def reader():
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            m = re.search(pattern, line)
            if m and "m" not in found:
                found["m"] = m
                ready.set()
            elif echo:
                print(line, file=sys.stderr)
        ready.set()

    ready = threading.Event()
    threading.Thread(target=reader, daemon=True).start()
    ready.wait(WAIT_S)
    return found.get("m")


def setup(api, admin, data_dir, connector_url, secret):
    api.want("POST", "/v1/departments", {"name": "demo"}, admin, exists_ok=True)
    # typed arguments: `airlock types orders-summary` declares them for a model's prompt, and a
    # call with the wrong ones is a TypeError in the guest before it reaches the connector
    status = {"enum": ["paid", "pending", "refunded"], "description": "an order's status"}
    customer = {"type": "string", "description": "a customer's id"}
    for name, fns in (("store", {"listOrders": {
                          "description": "orders with a status",
                          "args_schema": {"type": "array", "prefixItems": [status],
                                          "minItems": 1, "items": False}}}),
                      ("billing", {"invoices": {
                          "description": "a customer's invoices",
                          "args_schema": {"type": "array", "prefixItems": [customer],
                                          "minItems": 1, "items": False}}})):
        api.want("POST", "/v1/connectors", {
            "name": name, "department": "demo", "url": connector_url, "signing_secret": secret,
            "functions": fns}, admin, exists_ok=True)
    keys = {}
    for name, role in (("demo-author", "author"), ("demo-approver", "approver"),
                       ("demo-agent", "agent")):
        path = os.path.join(data_dir, name + ".key")
        st, doc = api.want("POST", "/v1/principals", {"name": name, "kind": "user"}, admin,
                           exists_ok=True)
        if st == 201:
            write_secret(path, doc["key"])
        elif not os.path.exists(path):
            st, doc = api.want("POST", "/v1/principals/%s/keys" % name, {}, admin)
            write_secret(path, doc["key"])
        api.want("POST", "/v1/principals/%s/roles" % name, {"role": role, "department": "demo"},
                 admin, exists_ok=True)
        with open(path) as f:
            keys[name] = f.read().strip()
    api.want("POST", "/v1/templates", {"name": "orders-summary", "department": "demo",
                                       "description": "paid orders and open invoices per "
                                                      "customer"},
             keys["demo-author"], exists_ok=True)
    st, tpl = api.want("GET", "/v1/templates/orders-summary", None, admin)
    if not any(v.get("state") == "approved" for v in tpl.get("versions", [])):
        with open(os.path.join(ROOT, "examples", "orders.js")) as f:
            source = f.read()
        st, v = api.want("POST", "/v1/templates/orders-summary/versions", {
            "source": source, "language": "js",
            "input_schema": {"type": "object", "additionalProperties": False},
            "functions": ["store.listOrders", "billing.invoices"], "autonomy": "autonomous"},
            keys["demo-author"])
        n = v["version"]
        api.want("POST", "/v1/templates/orders-summary/versions/%d/submit" % n, {},
                 keys["demo-author"])
        api.want("POST", "/v1/templates/orders-summary/versions/%d/approve" % n,
                 {"comment": "the demo's summary"}, keys["demo-approver"])
    return keys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlockd", required=True)
    ap.add_argument("--data-dir", default="./var")
    ap.add_argument("--listen", default="127.0.0.1:8080")
    ap.add_argument("--connector-port", type=int, default=8081)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--fresh", action="store_true", help="start from an empty data directory")
    a = ap.parse_args()
    if a.fresh and os.path.isdir(a.data_dir):
        shutil.rmtree(a.data_dir)
    os.makedirs(a.data_dir, mode=0o700, exist_ok=True)
    secret_path = os.path.join(a.data_dir, "demo-connector.secret")
    if not os.path.exists(secret_path):
        write_secret(secret_path, secrets.token_hex(32))
    with open(secret_path) as f:
        secret = f.read().strip()

    connector = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "examples", "orders_connector.py"),
         "--port", str(a.connector_port), "--secret-file", secret_path],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    m = read_line_matching(connector.stdout, r"listening on (\d+)", echo=True)
    if not m:
        connector.kill()
        die("the orders connector did not start (is port %d free? --connector-port N picks "
            "another)" % a.connector_port)
    connector_url = "http://127.0.0.1:%s/" % m.group(1)

    server = subprocess.Popen([a.airlockd, "--listen", a.listen, "--data-dir", a.data_dir],
                              stderr=subprocess.PIPE)
    m = read_line_matching(server.stderr, r"^airlockd: listening on (http://\S+)$", echo=True)
    if not m:
        server.kill()
        connector.kill()
        die("airlockd did not start (see above)")
    url = m.group(1)
    print("airlockd: listening on " + url, file=sys.stderr)
    status = 0
    try:
        admin_path = os.path.join(a.data_dir, "admin.key")
        admin = os.environ.get("AIRLOCK_BOOTSTRAP_KEY") or open(admin_path).read().strip()
        api = Api(url)
        keys = setup(api, admin, a.data_dir, connector_url, secret)
        agent_key = os.path.join(a.data_dir, "demo-agent.key")
        print("\nairlock demo: ready\n"
              "  URL        %s\n"
              "  web UI     %s/  (sign in with a key: the admin key, or %s for decisions)\n"
              "  admin key  %s\n"
              "  run the approved template orders-summary as demo-agent:\n\n"
              "    curl -s -H \"Authorization: Bearer $(cat %s)\" -d '{\"template\":"
              "\"orders-summary\"}' %s/v1/runs\n" % (url, url, os.path.join(a.data_dir, "demo-approver.key"),
                                                 admin_path, agent_key, url),
              flush=True)
        if a.once:
            st, doc = api.call("POST", "/v1/runs", {"template": "orders-summary"},
                               keys["demo-agent"])
            print(json.dumps(doc, indent=2), flush=True)
            status = 0 if st == 200 and doc.get("status") == "completed" else 1
        else:
            print("Ctrl-C stops airlockd.", flush=True)
            stop = threading.Event()
            signal.signal(signal.SIGINT, lambda *_: stop.set())
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            while not stop.is_set() and server.poll() is None:
                stop.wait(0.5)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                server.kill()
        connector.kill()
        connector.wait()
    return status


if __name__ == "__main__":
    sys.exit(main())
