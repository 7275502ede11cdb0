#!/usr/bin/env python3
"""`make run`: airlockd on SQLite in ./var with a demo, ready for a first curl.

    demo.py --airlockd PATH [--data-dir DIR] [--listen HOST:PORT] [--connector-port N]
            [--once] [--fresh]

Starts the example application (examples/orders_connector.py) as an HTTP connector and airlockd
(their output in DIR/connector.log and DIR/airlockd.log), then, through the API with the admin
key, sets up what is missing: department `demo`, the connectors `store` and `billing` (whose
`refund` is sensitive), the principals demo-author, demo-approver, demo-agent and demo-auditor
(auditor of "*"; their keys in DIR/demo-*.key, mode 0600), and the templates `orders-summary`
(examples/orders.js) and `refund` (examples/refund.js), approved by demo-approver. When
demo-approver's inbox is empty, demo-agent starts a refund, which waits there for a decision:
README.md's team flow goes on from it. It prints its banner last - the URL, where the keys are,
what waits and a curl line that runs a template - and serves until Ctrl-C. Running it again
reuses what exists. --once also runs orders-summary, prints the answer and stops (the test of
this script).
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


def start_logged(argv, log_path, pattern):
    """Starts argv with its output appended to log_path and waits for a line of this start
    matching pattern: (process, match), or (process, None) when it exited or took too long -
    then what it wrote is on stderr."""
    with open(log_path, "ab") as log:
        offset = log.tell()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + WAIT_S
    while True:
        with open(log_path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", "replace")
        for line in text.splitlines():
            m = re.search(pattern, line)
            if m:
                return proc, m
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.stderr.write(text)
            return proc, None
        time.sleep(0.05)


def setup(api, admin, data_dir, connector_url, secret):
    api.want("POST", "/v1/departments", {"name": "demo"}, admin, exists_ok=True)
    # typed arguments: `airlock types orders-summary` declares them for a model's prompt, and a
    # call with the wrong ones is a TypeError in the guest before it reaches the connector
    status = {"enum": ["paid", "pending", "refunded"], "description": "an order's status"}
    customer = {"type": "string", "description": "a customer's id"}
    order = {"type": "string", "title": "order", "description": "a paid order's id"}
    amount = {"type": "number", "title": "amount", "exclusiveMinimum": 0}
    for name, fns in (("store", {"listOrders": {
                          "description": "orders with a status",
                          "args_schema": {"type": "array", "prefixItems": [status],
                                          "minItems": 1, "items": False}}}),
                      ("billing", {"invoices": {
                          "description": "a customer's invoices",
                          "args_schema": {"type": "array", "prefixItems": [customer],
                                          "minItems": 1, "items": False}},
                                   "refund": {
                          "description": "refund a paid order (a person decides each call)",
                          "sensitive": True,
                          "args_schema": {"type": "array", "prefixItems": [order, amount],
                                          "minItems": 2, "items": False}}})):
        api.want("POST", "/v1/connectors", {
            "name": name, "department": "demo", "url": connector_url, "signing_secret": secret,
            "functions": fns}, admin, exists_ok=True)
    st, billing = api.want("GET", "/v1/connectors/billing", None, admin)
    if "refund" not in billing.get("functions", {}):
        die("%s is from an older demo (its connector billing has no refund): remove it and run "
            "again" % data_dir)
    keys = {}
    for name, role, department in (("demo-author", "author", "demo"),
                                   ("demo-approver", "approver", "demo"),
                                   ("demo-agent", "agent", "demo"),
                                   ("demo-auditor", "auditor", "*")):
        path = os.path.join(data_dir, name + ".key")
        st, doc = api.want("POST", "/v1/principals", {"name": name, "kind": "user"}, admin,
                           exists_ok=True)
        if st == 201:
            write_secret(path, doc["key"])
        elif not os.path.exists(path):
            st, doc = api.want("POST", "/v1/principals/%s/keys" % name, {}, admin)
            write_secret(path, doc["key"])
        api.want("POST", "/v1/principals/%s/roles" % name,
                 {"role": role, "department": department}, admin, exists_ok=True)
        with open(path) as f:
            keys[name] = f.read().strip()
    with open(os.path.join(ROOT, "examples", "refund.schema.json")) as f:
        refund_schema = json.load(f)
    for name, description, source, input_schema, functions in (
            ("orders-summary", "paid orders and open invoices per customer", "orders.js",
             {"type": "object", "additionalProperties": False},
             ["store.listOrders", "billing.invoices"]),
            ("refund", "refund a paid order in full", "refund.js", refund_schema,
             ["store.listOrders", "billing.refund"])):
        approved_template(api, admin, keys, name, description, source, input_schema, functions)
    return keys


def approved_template(api, admin, keys, name, description, source, input_schema, functions):
    """The template, written by demo-author from examples/SOURCE and approved by
    demo-approver, unless it has an approved version already."""
    api.want("POST", "/v1/templates", {"name": name, "department": "demo",
                                       "description": description},
             keys["demo-author"], exists_ok=True)
    st, tpl = api.want("GET", "/v1/templates/" + name, None, admin)
    if any(v.get("state") == "approved" for v in tpl.get("versions", [])):
        return
    with open(os.path.join(ROOT, "examples", source)) as f:
        text = f.read()
    st, v = api.want("POST", "/v1/templates/%s/versions" % name, {
        "source": text, "language": "js", "input_schema": input_schema,
        "functions": functions, "autonomy": "autonomous"}, keys["demo-author"])
    path = "/v1/templates/%s/versions/%d/" % (name, v["version"])
    api.want("POST", path + "submit", {}, keys["demo-author"])
    api.want("POST", path + "approve", {"comment": "the demo's " + name}, keys["demo-approver"])


def waiting_refund(api, keys):
    """Something in demo-approver's inbox: a refund demo-agent asks for, stopped at its
    sensitive billing.refund call, unless an approval waits already."""
    st, pending = api.want("GET", "/v1/approvals?status=pending", None, keys["demo-approver"])
    if pending:
        return
    st, run = api.want("POST", "/v1/runs", {"template": "refund", "input": {"order": "o-1004"}},
                       keys["demo-agent"], ok=(200, 201, 202))
    if run.get("status") != "awaiting_approval" or not run.get("approvals"):
        die("the demo's refund did not wait for an approver: " + json.dumps(run))


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

    connector, m = start_logged(
        [sys.executable, os.path.join(ROOT, "examples", "orders_connector.py"),
         "--port", str(a.connector_port), "--secret-file", secret_path],
        os.path.join(a.data_dir, "connector.log"), r"listening on (\d+)")
    if not m:
        connector.kill()
        die("the orders connector did not start (is port %d free? --connector-port N picks "
            "another)" % a.connector_port)
    connector_url = "http://127.0.0.1:%s/" % m.group(1)

    log_path = os.path.join(a.data_dir, "airlockd.log")
    server, m = start_logged([a.airlockd, "--listen", a.listen, "--data-dir", a.data_dir],
                             log_path, r"^airlockd: listening on (http://\S+)$")
    if not m:
        server.kill()
        connector.kill()
        die("airlockd did not start (see above)")
    url = m.group(1)
    status = 0
    try:
        admin_path = os.path.join(a.data_dir, "admin.key")
        admin = os.environ.get("AIRLOCK_BOOTSTRAP_KEY") or open(admin_path).read().strip()
        api = Api(url)
        keys = setup(api, admin, a.data_dir, connector_url, secret)
        waiting_refund(api, keys)
        key_path = os.path.join(a.data_dir, "demo-%s.key")
        print("\nairlock demo: ready\n"
              "  URL        %s\n"
              "  web UI     %s/  (sign in with a key: the admin key, or %s for decisions)\n"
              "  admin key  %s\n"
              "  keys       %s (author, approver, agent, auditor)\n"
              "  logs       %s, %s\n"
              "  inbox      a refund waits for demo-approver's decision: %s/approvals\n"
              "  next       README.md, \"The command line as airlockd's client\": the team flow\n"
              "  run the approved template orders-summary as demo-agent:\n\n"
              "    curl -s -H \"Authorization: Bearer $(cat %s)\" -d '{\"template\":"
              "\"orders-summary\"}' %s/v1/runs\n"
              % (url, url, key_path % "approver", admin_path, key_path % "*", log_path,
                 os.path.join(a.data_dir, "connector.log"), url,
                 key_path % "agent", url), flush=True)
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
            if not stop.is_set():
                die("airlockd stopped (exit status %d): see %s" % (server.returncode, log_path))
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
