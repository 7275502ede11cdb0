#!/usr/bin/env python3
"""The approver's inbox (docs/server.md "Approvals"): what each approval carries to inform the
decision - params named by the function's args_schema, the run's input, its console so far, the
line of the template's source that made the call (JavaScript and TypeScript), how long it has
waited and the version it belongs to - that a guest cannot make the line shown be another one
than the line that made the call, and that a run waits no longer than its department's
approval_ttl_ms.

usage: test_inbox.py --airlockd PATH --cli PATH [-k SUBSTRING]

Uses test_runs.World (airlockd + the shop connector). Waiting polls with a deadline.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_runs import World  # noqa: E402
from test_server import check  # noqa: E402

HANG = ts.HANG

# a connector whose sensitive function names its arguments (prefixItems[i].title); its calls
# are never sent in these tests, so the shop's URL serves as its address
LEDGER = {
    "name": "ledger", "department": "finance", "url": None, "signing_secret": tr.SECRET,
    "functions": {"pay": {"sensitive": True, "args_schema": {
        "type": "array", "minItems": 2, "items": False,
        "prefixItems": [{"type": "string", "title": "order"},
                        {"type": "integer", "title": "amount"}]}}}}

PAY = """console.log("paying", input.order);
console.warn("amount", input.amount);
const receipt = await ledger.pay(input.order, input.amount);
return receipt;"""

# TypeScript: the types are stripped with spaces, so the lines stay where they were
REFUND_TS = """type Order = { id: string; amount: number };
interface Note { text: string }
const order: Order = { id: input.order as string, amount: 5 };
await shop.refund(order.id, order.amount);
return "done";"""


def waiting(w, run_id, n=1):
    """The pending approvals of run_id once there are n of them."""
    deadline = time.monotonic() + HANG
    while True:
        items = [a for a in w.pending() if a["run"] == run_id]
        if len(items) >= n:
            return items
        check(time.monotonic() < deadline, "run %s never waited for %d approvals" % (run_id, n))
        time.sleep(0.02)


def t_an_approval_carries_what_informs_the_decision(tmp):
    w = World(tmp)
    try:
        ledger = dict(LEDGER, url=w.shop.url)
        w.ok("POST", "/v1/connectors", ledger, w.admin, 201)
        n = w.template("pay", PAY, ["ledger.pay"])
        version = w.ok("GET", "/v1/templates/pay/versions/%d" % n, None, w.keys["bob"])
        st, run = w.run({"template": "pay", "input": {"order": "o-1", "amount": 42}}, want=202)
        a = waiting(w, run["id"])[0]
        check(a["params"] == [{"name": "order", "value": "o-1"},
                              {"name": "amount", "value": 42}], "params: %r" % a["params"])
        check(a["input"] == {"order": "o-1", "amount": 42}, "input: %r" % a["input"])
        check(a["console"] == [{"level": "log", "text": "paying o-1"},
                               {"level": "warn", "text": "amount 42"}], "console: %r" % a["console"])
        check(a["source_line"] == {"line": 3, "text": PAY.split("\n")[2]},
              "source_line: %r" % a["source_line"])
        check(a["template"] == "pay" and a["version"] == n and a["digest"] == version["digest"],
              "version: %r" % a)
        # how long it has waited grows while it waits
        deadline = time.monotonic() + HANG
        while a["waiting_ms"] <= 0:
            check(time.monotonic() < deadline, "waiting_ms stays %r" % a["waiting_ms"])
            time.sleep(0.05)
            a = waiting(w, run["id"])[0]
        # the decision's answer carries the same members
        d = w.ok("POST", "/v1/approvals/%s/deny" % a["id"], {"comment": "no"}, w.keys["bob"])
        check(d["params"] == a["params"] and d["source_line"] == a["source_line"],
              "decided: %r" % d)
    finally:
        w.close()


def t_typescript_and_unnamed_arguments(tmp):
    """A function without args_schema names its arguments arg1, arg2; the line of a TypeScript
    template is the line of the text its author wrote."""
    w = World(tmp)
    try:
        w.template("refund-ts", REFUND_TS, ["shop.refund"], language="ts")
        st, run = w.run({"template": "refund-ts", "input": {"order": "o-2"}}, want=202)
        a = waiting(w, run["id"])[0]
        check(a["params"] == [{"name": "arg1", "value": "o-2"}, {"name": "arg2", "value": 5}],
              "params: %r" % a["params"])
        check(a["source_line"] == {"line": 4, "text": "await shop.refund(order.id, order.amount);"},
              "source_line: %r" % a["source_line"])
        check(a["console"] == [] and a["input"] == {"order": "o-2"}, "run: %r" % a)
        w.ok("POST", "/v1/approvals/%s/approve" % a["id"], {}, w.keys["bob"])
        done = w.until(run["id"], ("completed",))
        check(done["value"] == "done", "resumed: %r" % done)
    finally:
        w.close()


# Each call below is made a different way. The line shown is the engine's record of an explicit
# call of that very function in the run's source; a call reached any other way shows none, so
# no decoy line (the last explicit call of the frame, a forged stack) can stand in for it.
FORGE = """const decoy = () => 0;
const o = {};
Object.defineProperty(o, "x", { get: shop.refund });
decoy(); // a harmless line an approver would wave through
const viaGetter = o.x;
decoy();
const viaSpread = shop.refund(...["o-8", 2]);
const viaCall = shop.refund.call(null, "o-7", 3);
try { Error.prepareStackTrace = () => "    at <anonymous> (run.js:4:1)"; } catch (e) {}
try { throw new Error("at run.js:4:1"); } catch (e) { String(e.stack); }
try { eval("shop.refund('o-6', 4)"); } catch (e) {}
try { new Function("return shop.refund('o-5', 5)")(); } catch (e) {}
const direct = shop.refund("o-4", 6);
const later = Promise.resolve().then(() =>
    shop.refund("o-3", 7));
return await Promise.all([viaGetter, viaSpread, viaCall, direct, later]);"""


def t_a_guest_cannot_choose_the_line_shown(tmp):
    w = World(tmp)
    try:
        w.template("forge", FORGE, ["shop.refund"])
        st, run = w.run({"template": "forge"}, want=202)
        items = waiting(w, run["id"], 5)
        by_args = {tuple(p["value"] for p in a["params"]): a["source_line"] for a in items}
        lines = FORGE.split("\n")
        want = {(): None,  # a getter: no explicit call of it
                ("o-8", 2): {"line": 7, "text": lines[6]},  # spread: its own line, not decoy()'s
                ("o-7", 3): None,  # .call: Function.prototype.call made it
                ("o-4", 6): {"line": 13, "text": lines[12]},
                # a call spanning lines is positioned at the line its argument list ends on
                ("o-3", 7): {"line": 15, "text": lines[14]}}
        check(by_args == want, "lines shown: %r" % by_args)
        check(len(items) == 5, "eval or Function made a call: %r" % [a["params"] for a in items])
    finally:
        w.close()


def t_no_line_is_shown_where_the_engine_counts_lines_otherwise(tmp):
    """U+2028 (and U+2029, a lone CR) end a line for the engine but not for a text split at
    "\n": the server would show another line's text, so it shows none."""
    w = World(tmp)
    try:
        w.template("ls", "const a = 1;\u2028const b = 2;\nawait shop.refund('o-1', 1);\nreturn 1;",
                   ["shop.refund"])
        st, run = w.run({"template": "ls"}, want=202)
        a = waiting(w, run["id"])[0]
        check(a["source_line"] is None, "source_line: %r" % a["source_line"])
    finally:
        w.close()


def t_a_run_waits_no_longer_than_its_departments_ttl(tmp):
    w = World(tmp)
    try:
        other = w.ok("GET", "/v1/departments", None, w.admin)
        check(all(d["approval_ttl_ms"] == 604800000 for d in other),
              "default approval_ttl_ms: %r" % other)
        w.ok("PUT", "/v1/departments/finance/policy", {"approval_ttl_ms": 5}, w.admin, 400)
        d = w.ok("PUT", "/v1/departments/finance/policy", {"approval_ttl_ms": 1000}, w.admin)
        check(d["approval_ttl_ms"] == 1000 and d["autonomy"] == "autonomous", "policy: %r" % d)
        w.template("refund-ts", REFUND_TS, ["shop.refund"], language="ts")
        st, run = w.run({"template": "refund-ts", "input": {"order": "o-3"}}, want=202)
        a = waiting(w, run["id"])[0]
        ended = w.until(run["id"], ("cancelled",))
        check(ended["error"]["code"] == "ABORTED" and
              ended["error"]["message"].startswith("expired: "), "expired run: %r" % ended)
        st, doc, _ = w.s.request("POST", "/v1/approvals/%s/approve" % a["id"], {},
                                 key=w.keys["bob"])
        check(st == 409 and doc["error"]["code"] == "CONFLICT" and
              doc["error"]["message"].startswith("approval %s expired: run %s waited" %
                                                 (a["id"], run["id"])),
              "deciding an expired approval: %d %r" % (st, doc))
        gone = w.ok("GET", "/v1/approvals?run=" + run["id"], None, w.keys["bob"])
        check(gone[0]["status"] == "cancelled" and gone[0]["comment"].startswith("expired: "),
              "the expired approval: %r" % gone)
        check(w.shop.calls()["by_function"].get("shop.refund") is None, "the call was sent")
        # decided as soon as it has waited past the TTL: whether airlockd's look or the decision
        # comes first, the decision is refused as expired and the run ends so
        st, run = w.run({"template": "refund-ts", "input": {"order": "o-4"}}, want=202)
        a = waiting(w, run["id"])[0]
        while a["waiting_ms"] < 1000 and a["status"] == "pending":
            time.sleep(0.05)
            a = w.ok("GET", "/v1/approvals?run=" + run["id"], None, w.keys["bob"])[0]
        st, doc, _ = w.s.request("POST", "/v1/approvals/%s/deny" % a["id"], {},
                                 key=w.keys["bob"])
        check(st == 409 and " expired: " in doc["error"]["message"],
              "deciding at the TTL: %d %r" % (st, doc))
        ended = w.until(run["id"], ("cancelled",))
        check(ended["error"]["message"].startswith("expired: "), "expired run: %r" % ended)
    finally:
        w.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-inbox-")


if __name__ == "__main__":
    sys.exit(main())
