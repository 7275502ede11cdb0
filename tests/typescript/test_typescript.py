#!/usr/bin/env python3
"""typescript.check: airlock erases types, it does not check them (docs/typescript.md). The
TypeScript template examples/orders.ts runs through airlockd; checked with the typescript
package against the declarations airlockd gives for its version (GET .../types), it passes;
with a wrong argument it runs all the same (and its connector's args_schema refuses the call: a
TypeError), while tsc names the mistake.

usage: test_typescript.py --airlockd PATH [-k SUBSTRING]   (AIRLOCK_TSC: how to run tsc)
"""
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import check  # noqa: E402

ORDER = {"type": "object", "properties": {"id": {"type": "string"},
                                          "customer": {"type": "string"},
                                          "amount": {"type": "number"},
                                          "status": {"type": "string"}},
         "required": ["id", "customer", "amount"]}
ONE_STRING = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 1}


def tsc(tmp, declarations, source):
    """tsc --noEmit --strict over the declarations and the template wrapped in an async
    function (a template is a function body: top-level await and return): (status, output)."""
    with open(os.path.join(tmp, "airlock.d.ts"), "w") as f:
        f.write(declarations)
    with open(os.path.join(tmp, "template.ts"), "w") as f:
        f.write("async function template(): Promise<unknown> {\n" + source + "\n}\n")
    cmd = shlex.split(os.environ.get("AIRLOCK_TSC", "tsc")) + [
        "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022",
        "--noUnusedLocals", "false", os.path.join(tmp, "airlock.d.ts"),
        os.path.join(tmp, "template.ts")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def t_orders_ts_checks_against_its_declarations(tmp):
    check(os.environ.get("AIRLOCK_TSC"), "AIRLOCK_TSC (set by ctest) is missing")
    w = tr.World(tmp)
    try:
        for name, fn, result in (("store", "listOrders", {"type": "array", "items": ORDER}),
                                 ("billing", "invoices", {"type": "array", "items": {
                                     "type": "object", "properties": {"due": {"type": "number"}},
                                     "required": ["due"]}})):
            w.ok("POST", "/v1/connectors", {
                "name": name, "department": "finance", "url": w.shop.url,
                "signing_secret": tr.SECRET, "functions": {fn: {
                    "args_schema": ONE_STRING, "result_schema": result}}}, w.admin, 201)
        functions = ["store.listOrders", "billing.invoices"]
        with open(os.path.join(ROOT, "examples", "orders.ts")) as f:
            source = f.read()
        wrong = source.replace('listOrders("paid")', "listOrders(42)")
        check(wrong != source, "examples/orders.ts no longer calls listOrders(\"paid\")")

        # the example runs through airlockd, and tsc finds nothing wrong with it
        n = w.template("orders-ts", source, functions, language="ts")
        st, doc = w.run({"template": "orders-ts"})
        check(st == 200 and doc["status"] == "completed" and doc["value"]["totalPaid"] == 150,
              "examples/orders.ts through airlockd: %d %r" % (st, doc))
        st, decl, _ = w.s.request("GET", "/v1/templates/orders-ts/versions/%d/types" % n,
                                  key=w.keys["agent-7"])
        check(st == 200 and "listOrders(arg1: string)" in decl, "types: %d %r" % (st, decl))
        rc, out = tsc(tmp, decl, source)
        check(rc == 0, "tsc refused examples/orders.ts:\n" + out)

        # a number where a string belongs: airlockd takes and runs the version (types are
        # erased, never checked) and only the connector's args_schema stops the call; tsc
        # names the mistake before anyone submits it
        w.template("orders-wrong", wrong, functions, language="ts")
        st, doc = w.run({"template": "orders-wrong"})
        check(doc["status"] == "failed" and doc["error"]["name"] == "TypeError" and
              doc["error"]["message"] == "store.listOrders: argument 1 (arg1): must be string",
              "the unchecked version ran into args_schema: %d %r" % (st, doc))
        rc, out = tsc(tmp, decl, wrong)
        check(rc != 0 and "TS2345" in out and "'number'" in out and "'string'" in out,
              "tsc did not name the wrong argument:\n" + out)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]

if __name__ == "__main__":
    sys.exit(ts.run_tests(TESTS, "airlock-typescript-", need_cli=False))
