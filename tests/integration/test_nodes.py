#!/usr/bin/env python3
"""Integration tests of several airlockd nodes on one PostgreSQL database: three nodes started
together bootstrap the database once; templates run through all three; a run interrupted on one node
is approved on another and completes without repeating its finished calls; races of concurrent
decisions across nodes (50 on one approval: one decision; 50 racing to resume one continuation: one
resume); a decided run, and a run started without waiting on a full node, go through the queue to a
node that can run them (a queued run can be cancelled); a cancel, a revocation and a key revocation
decided on one node take effect on the others (the run ends cancelled with the stored reason); with
an hour between polls, only the wake-ups (LISTEN/NOTIFY) can make that so: a run queued on a full
node is claimed by another, a cancel and a revocation stop runs on other nodes; listeners whose
connections the server ends log it, polling still claims meanwhile, they listen again and wake-ups
work again; a node killed with -9 while it holds runs has them taken over once its lease runs out,
with no call made twice (runs whose calls in doubt are all idempotent go on from their journal,
resumed runs too, at most three times; a run cancelled before the takeover ended by it); a node paused past its lease (SIGSTOP)
sends, claims and records nothing of the runs taken over meanwhile when it goes on; a live node
keeps its runs past the lease (its heartbeat does not wait for a minute's poll); --lease-ms and
--poll-ms; the one audit chain verifies with `airlock audit verify`, and each node keeps its own
newest checkpoint (DIR/audit.head) without taking the others' later ones for a cut. Runs that must execute on one
given node are started with "wait": true (a run started without waiting goes to the queue, for any
node).

usage: test_nodes.py --airlockd PATH --cli PATH [-k SUBSTRING]

Needs AIRLOCK_TEST_DATABASE (a cluster from tests/support/pg_cluster.sh; CTest's
integration.nodes.postgres): without it every test fails, none is skipped. Each test makes one
fresh database, and three data directories whose nodes share it: two get the cluster's keys
from the environment, the third as key files copied into its data directory (both ways
docs/server.md describes). The shop connector (hosts/shop_connector.py) counts calls by
idempotency key. Waits poll with a deadline; nothing sleeps for timing. No verdict depends on
how fast the machine is: a deadline is only there so that a hang fails, at least 10 times what
the wait takes on a machine whose cores are all busy (`make test-busy`); the time a wake-up or a
cancel took is printed, never asserted (docs/server.md promises no bound: "usually well under a
second").
"""
import binascii
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import Fail, Server, audit_rows, check, error_of  # noqa: E402

# s: a wait's deadline (never a measure). Twice the other files' HANG: waits here include a lease
# running out (1.5 s) and a takeover, which a busy machine stretches.
HANG = 2 * ts.HANG
KEY_NAMES = (("audit.key", "AIRLOCK_AUDIT_KEY"), ("secret.key", "AIRLOCK_SECRET_KEY"),
             ("continuation.key", "AIRLOCK_CONTINUATION_KEY"))


def public_key_of(private_hex):
    return ts.public_key_of(private_hex)


class Cluster:
    """Three airlockd nodes on one database, department finance, its people, the shop."""

    def __init__(self, tmp, lease_ms=None, node_args=None, poll_ms=None, one_at_a_time=(),
                 node_env=None):
        """one_at_a_time: the nodes (0, 1, 2) that execute one run at a time, so that a test can
        fill them. node_env: {node: {variable: value}}, more environment for those nodes."""
        check(ts.PG, "AIRLOCK_TEST_DATABASE is not set: these tests need a PostgreSQL cluster")
        self.lease_ms = lease_ms
        self.poll_ms = poll_ms
        self.node_args = dict(node_args or {})
        self.node_env = dict(node_env or {})
        if one_at_a_time:
            cfg = os.path.join(tmp, "one-at-a-time.json")
            with open(cfg, "w") as f:
                f.write('{"runs": {"max_concurrent": 1}}')
            for i in one_at_a_time:
                self.node_args[i] = self.node_args.get(i, []) + ["--config", cfg]
        self.tmp = tmp
        self.dirs = [os.path.join(tmp, "node-" + n) for n in "abc"]
        url = ts.pg_url(self.dirs[0])
        for d in self.dirs[1:]:
            ts.PG_DATABASES[os.path.abspath(d)] = url  # one database for every node
        self.url = url
        self.keys_hex = {env: binascii.hexlify(os.urandom(32)).decode() for _, env in KEY_NAMES}
        # node c: the keys as files in its data directory, as copied from another node
        os.makedirs(self.dirs[2], mode=0o700)
        for name, env in KEY_NAMES:
            path = os.path.join(self.dirs[2], name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.keys_hex[env] + "\n")
        self.shop = tr.Shop()
        self.nodes = [None, None, None]
        errors = []

        def start(i):
            try:
                self.nodes[i] = self.start_node(i)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        # the three start at once on the empty database: migrations and bootstrap race
        threads = [threading.Thread(target=start, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise errors[0]
        for n in self.nodes:
            check(n.port, "a node did not start: " + n.stderr())
        found = [d for d in self.dirs if os.path.exists(os.path.join(d, "admin.key"))]
        check(len(found) == 1, "admin.key in %d data directories, want 1" % len(found))
        with open(os.path.join(found[0], "admin.key")) as f:
            self.admin = f.read().strip()
        a, b, c = self.nodes
        self.ok(a, "POST", "/v1/departments", {"name": "finance"}, self.admin, 201)
        self.keys = {}
        for name, role in (("alice", "author"), ("bob", "approver"), ("carol", "approver"),
                           ("agent-7", "agent"), ("eve", "auditor")):
            node = self.nodes[len(self.keys) % 3]
            self.keys[name] = self.ok(node, "POST", "/v1/principals",
                                      {"name": name, "kind": "user"}, self.admin, 201)["key"]
            self.ok(node, "POST", "/v1/principals/%s/roles" % name,
                    {"role": role, "department": "finance" if role != "auditor" else "*"},
                    self.admin, 201)
        # sealed under node b's secret key, opened by a and c for their runs
        self.ok(b, "POST", "/v1/connectors", {
            "name": "shop", "department": "finance", "url": self.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"orders": {"idempotent": True}, "refund": {"sensitive": True},
                          "slow": {}, "hold": {"idempotent": True},
                          "stall": {"idempotent": True},
                          "credit": {"sensitive": True, "idempotent": True}}},
            self.admin, 201)

    def start_node(self, i):
        args = ["--listen", "127.0.0.1:0", "--data-dir", self.dirs[i]]
        if self.lease_ms:
            args += ["--lease-ms", str(self.lease_ms)]
        if self.poll_ms:
            args += ["--poll-ms", str(self.poll_ms)]
        args += self.node_args.get(i, [])
        env = dict(self.keys_hex) if i < 2 else {}
        env.update(self.node_env.get(i, {}))
        return Server(self.dirs[i], env_extra=env or None, args=args)

    def node_id(self, i):
        """The id node i names itself by: its data directory's node.id, in hex."""
        with open(os.path.join(self.dirs[i], "node.id")) as f:
            return "node_" + f.read().strip()

    def ok(self, node, method, path, body, key, want=200):
        st, doc, _ = node.request(method, path, body, key=key)
        check(st == want, "%s %s: %d, want %d: %r" % (method, path, st, want, doc))
        return doc

    def template(self, name, source, functions, limits=None):
        a, b, c = self.nodes
        self.ok(a, "POST", "/v1/templates", {"name": name, "department": "finance",
                                             "description": name}, self.keys["alice"], 201)
        body = {"source": source, "functions": functions, "input_schema": {}}
        if limits:
            body["limits"] = limits
        v = self.ok(b, "POST", "/v1/templates/%s/versions" % name, body,
                    self.keys["alice"], 201)["version"]
        self.ok(c, "POST", "/v1/templates/%s/versions/%d/submit" % (name, v), {},
                self.keys["alice"])
        self.ok(a, "POST", "/v1/templates/%s/versions/%d/approve" % (name, v), {},
                self.keys["bob"])
        return v

    def run(self, node, body, want):
        return self.ok(node, "POST", "/v1/runs", body, self.keys["agent-7"], want)

    def until(self, node, run_id, statuses):
        deadline = time.monotonic() + HANG
        while True:
            doc = self.ok(node, "GET", "/v1/runs/" + run_id, None, self.keys["agent-7"])
            if doc["status"] in statuses:
                return doc
            check(time.monotonic() < deadline,
                  "run %s still %s, want %s" % (run_id, doc["status"], statuses))
            time.sleep(0.02)

    def node_id(self, i):
        with open(os.path.join(self.dirs[i], "node.id")) as f:
            return "node_" + f.read().strip()

    def executing(self, run_id):
        """The index of the node executing the run, once one is recorded executing it."""
        ids = [self.node_id(i) for i in range(3)]
        deadline = time.monotonic() + HANG
        while True:
            rows = ts.db_rows(self.dirs[0], "SELECT node, status FROM runs WHERE id = ?",
                              (run_id,))
            if rows and rows[0][1] == "running" and rows[0][0] in ids:
                return ids.index(rows[0][0])
            check(time.monotonic() < deadline, "run %s never executing: %r" % (run_id, rows))
            time.sleep(0.02)

    def listening(self, want=3):
        """Waits until want listeners of this database have run their LISTEN."""
        deadline = time.monotonic() + HANG
        while True:
            rows = ts.db_rows(self.dirs[0], "SELECT count(*) FROM pg_stat_activity WHERE "
                              "application_name = 'airlockd-listen' AND "
                              "datname = current_database() AND query LIKE 'LISTEN %'")
            if rows == [(want,)]:
                return
            check(time.monotonic() < deadline, "listeners: %r, want %d" % (rows, want))
            time.sleep(0.02)

    def node_of(self, run_id):
        """The node recorded for the run (the one that executes or executed it)."""
        rows = ts.db_rows(self.dirs[0], "SELECT node FROM runs WHERE id = ?", (run_id,))
        return rows[0][0] if rows else None

    def running_on(self, i):
        """The ids of the runs recorded executing on node i."""
        return [r[0] for r in ts.db_rows(
            self.dirs[0], "SELECT id FROM runs WHERE node = ? AND status = 'running' ORDER BY seq",
            (self.node_id(i),))]

    def start_waiting(self, node, body):
        """Starts a run with "wait": true on node (so that it executes there) from a thread of
        its own; the thread, and a list that gets its (status, answer) or exception."""
        got = []

        def go():
            try:
                got.append(node.request("POST", "/v1/runs", dict(body, wait=True),
                                        key=self.keys["agent-7"])[:2])
            except Exception as e:  # noqa: BLE001 - a node killed meanwhile
                got.append(e)
        t = threading.Thread(target=go, daemon=True)  # a paused node may never answer
        t.start()
        return t, got

    def records(self, action, subject):
        return [r for r in audit_rows(self.dirs[0], action) if r["subject"] == subject]

    def verify_chain(self, nodes=None):
        """The export of any node (of those given: all) verifies offline under the shared
        audit key."""
        pub = public_key_of(self.keys_hex["AIRLOCK_AUDIT_KEY"])
        for i, node in enumerate(nodes or self.nodes):
            st, ctype, body = node.raw_get("/v1/audit/export", self.keys["eve"])
            check(st == 200, "export from node %d: %d" % (i, st))
            path = os.path.join(self.tmp, "export-%d.jsonl" % i)
            with open(path, "wb") as f:
                f.write(body)
            p = subprocess.run([ts.CLI, "audit", "verify", path, "--public-key", pub],
                               capture_output=True, timeout=HANG)
            check(p.returncode == 0, "audit verify of node %d's export: %d %r %r" % (
                i, p.returncode, p.stdout, p.stderr))

    def close(self):
        for n in self.nodes:
            if n:
                n.kill()
        self.shop.stop()
        for d in self.dirs[1:]:
            ts.PG_DATABASES.pop(os.path.abspath(d), None)  # the database is dropped once


def race(calls):
    """Runs every call (a function of no argument) at once on its own thread; their results."""
    results = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def go(i):
        start.wait(timeout=HANG)
        try:
            results[i] = calls[i]()
        except Exception as e:  # noqa: BLE001 - a failed call is one of the results
            results[i] = e
    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=2 * HANG)
    return results


# ---------------------------------------------------------------------------------------------
SUMMARY = """
const orders = await shop.orders("paid");
return { count: orders.length, node: input.node };
"""


def t_bootstrap_once_and_runs_on_every_node(tmp):
    c = Cluster(tmp)
    try:
        boots = [r for r in audit_rows(c.dirs[0], "key.create") if r["details"].get("bootstrap")]
        check(len(boots) == 1, "bootstrap records: %r" % boots)
        check(len(audit_rows(c.dirs[0], "principal.create")) == 6, "principals created")
        c.template("summary", SUMMARY, ["shop.orders"])
        for i, node in enumerate(c.nodes):
            doc = c.run(node, {"template": "summary", "input": {"node": i}}, 200)
            check(doc["status"] == "completed" and doc["value"] == {"count": 2, "node": i},
                  "run on node %d: %r" % (i, doc))
            # every node reads what another ran
            other = c.nodes[(i + 1) % 3]
            check(c.ok(other, "GET", "/v1/runs/" + doc["id"], None,
                       c.keys["agent-7"])["status"] == "completed", "run read elsewhere")
        check(c.shop.calls()["by_function"] == {"shop.orders": 3}, "%r" % c.shop.calls())
        # a node restarted on the non-empty database with the same keys serves on
        c.nodes[2].stop()
        c.nodes[2] = c.start_node(2)
        check(c.nodes[2].port, "node c did not restart: " + c.nodes[2].stderr())
        check(not os.path.exists(os.path.join(c.dirs[2], "admin.key")) or
              c.dirs[2] in [d for d in c.dirs if os.path.exists(os.path.join(d, "admin.key"))],
              "a restart bootstrapped")
        doc = c.run(c.nodes[2], {"template": "summary", "input": {"node": 2}}, 200)
        check(doc["status"] == "completed", "run after the restart: %r" % doc)
        c.verify_chain()
    finally:
        c.close()


REFUND = """
const orders = await shop.orders("paid");
const r = await shop.refund(orders[0].id, input.amount);
return { first: orders[0].id, refund: r };
"""


def t_webhook_events_are_sent_once_by_the_nodes(tmp):
    """Three nodes deliver one outbox (docs/webhooks.md): each event is claimed by one node under
    a lease, so every event reaches the receiver, each once (one attempt each), whichever nodes
    looked at the outbox at the same time."""
    import test_webhooks as tw
    cfg = os.path.join(tmp, "webhooks.json")
    with open(cfg, "w") as f:
        json.dump({"webhooks": {"poll_ms": 20, "retry_first_ms": 100}}, f)
    receiver = tw.Receiver()
    c = Cluster(tmp, node_args={i: ["--config", cfg] for i in range(3)})
    try:
        c.ok(c.nodes[0], "POST", "/v1/webhooks", {
            "url": receiver.url + "/ok", "events": ["version.submitted"],
            "department": "finance", "signing_secret": tw.CANARY}, c.admin, 201)
        n = 12
        for i in range(n):
            node = c.nodes[i % 3]
            name = "t%d" % i
            c.ok(node, "POST", "/v1/templates", {"name": name, "department": "finance"},
                 c.keys["alice"], 201)
            c.ok(node, "POST", "/v1/templates/%s/versions" % name, {"source": "1"},
                 c.keys["alice"], 201)
            c.ok(node, "POST", "/v1/templates/%s/versions/1/submit" % name, {}, c.keys["alice"])
        deadline = time.monotonic() + HANG
        while ts.db_rows(c.dirs[0], "SELECT count(*) FROM webhook_deliveries WHERE status = "
                                    "'delivered'") != [(n,)]:
            check(time.monotonic() < deadline, "not all delivered: %r" % ts.db_rows(
                c.dirs[0], "SELECT status, attempts FROM webhook_deliveries"))
            time.sleep(0.02)
        check(ts.db_rows(c.dirs[0], "SELECT DISTINCT attempts FROM webhook_deliveries") ==
              [(1,)], "an event claimed twice")
        got = receiver.events("/ok")
        check(len(got) == n and len({e["id"] for e in got}) == n and
              sorted(e["data"]["template"] for e in got) == sorted("t%d" % i for i in range(n)),
              "received: %r" % got)
    finally:
        c.close()
        receiver.stop()


def t_interrupt_on_a_approve_on_b(tmp):
    c = Cluster(tmp)
    try:
        a, b, cc = c.nodes
        c.template("refund", REFUND, ["shop.orders", "shop.refund"])
        doc = c.run(a, {"template": "refund", "input": {"amount": 7}}, 202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
        check(c.shop.calls()["by_function"] == {"shop.orders": 1}, "before the approval")
        c.ok(b, "POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {"comment": "ok"},
             c.keys["bob"])
        done = c.until(cc, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == {
            "first": "o-1", "refund": {"refunded": "o-1", "amount": 7}}, "resumed: %r" % done)
        calls = c.shop.calls()
        check(calls["by_function"] == {"shop.orders": 1, "shop.refund": 1},
              "finished calls repeated or the refund not made once: %r" % calls)
        check(all(n == 1 for n in calls["by_key"].values()), "a key used twice: %r" % calls)
        check(len(c.records("run.end", doc["id"])) == 1, "run.end records")
        c.verify_chain()
    finally:
        c.close()


def t_fifty_approvals_of_one_item(tmp):
    c = Cluster(tmp)
    try:
        c.template("refund", REFUND, ["shop.orders", "shop.refund"])
        doc = c.run(c.nodes[0], {"template": "refund", "input": {"amount": 3}}, 202)
        apr = doc["approvals"][0]

        def decide(i):
            node = c.nodes[i % 3]
            verb = "approve" if i % 2 == 0 else "deny"
            who = "bob" if i % 4 < 2 else "carol"
            return lambda: node.request("POST", "/v1/approvals/%s/%s" % (apr, verb),
                                        {"comment": "decider %d" % i}, key=c.keys[who])[:2]
        results = race([decide(i) for i in range(50)])
        wins = [r for r in results if isinstance(r, tuple) and r[0] == 200]
        losses = [r for r in results if isinstance(r, tuple) and r[0] == 409]
        check(len(wins) == 1 and len(losses) == 49,
              "50 decisions: %d won, %d conflicts, others %r" % (
                  len(wins), len(losses),
                  [r for r in results if not isinstance(r, tuple) or r[0] not in (200, 409)]))
        for st, body in losses:
            error_of(st, body, 409, "CONFLICT")
        decided = c.records("approval.approve", apr) + c.records("approval.deny", apr)
        check(len(decided) == 1, "decision records: %r" % decided)
        status = wins[0][1]["status"]
        # approved: the refund is made once; denied: the call throws and the run fails
        done = c.until(c.nodes[1], doc["id"], ("completed", "failed", "cancelled"))
        want = "completed" if status == "approved" else "failed"
        refunds = c.shop.calls()["by_function"].get("shop.refund", 0)
        check(done["status"] == want and refunds == (1 if status == "approved" else 0),
              "decision %s, refunds %d: %r" % (status, refunds, done))
        check(len(c.records("run.end", doc["id"])) == 1, "run.end records")
        c.verify_chain()
    finally:
        c.close()


# 30 sensitive calls interrupt together (the runner keeps at most 32 calls in flight): 30
# approvals, each of which may be the last one decided, so each decision tries to resume
MANY = """
const orders = await shop.orders("paid");
const all = [];
for (let i = 0; i < 30; i++) all.push(shop.refund("o-" + i, i));
const done = await Promise.all(all);
return { orders: orders.length, refunded: done.length };
"""


def t_fifty_decisions_resume_one_continuation(tmp):
    c = Cluster(tmp)
    try:
        c.template("many", MANY, ["shop.orders", "shop.refund"])
        doc = c.run(c.nodes[0], {"template": "many"}, 202)
        aprs = doc["approvals"]
        check(len(aprs) == 30, "approvals: %r" % doc)

        # every approval once, then 20 of them again: 50 decisions on three nodes at once
        def decide(i):
            node = c.nodes[i % 3]
            who = "bob" if i % 2 == 0 else "carol"
            apr = aprs[i % 30]
            return lambda: node.request("POST", "/v1/approvals/%s/approve" % apr, {},
                                        key=c.keys[who])[:2]
        results = race([decide(i) for i in range(50)])
        codes = sorted(r[0] if isinstance(r, tuple) else repr(r) for r in results)
        check(codes == [200] * 30 + [409] * 20, "decisions: %r" % codes)
        done = c.until(c.nodes[2], doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == {"orders": 2, "refunded": 30},
              "resumed: %r" % done)
        calls = c.shop.calls()
        check(calls["by_function"] == {"shop.orders": 1, "shop.refund": 30},
              "the continuation resumed more than once: %r" % calls)
        check(all(n == 1 for n in calls["by_key"].values()), "a key used twice: %r" % calls)
        check(len(c.records("run.end", doc["id"])) == 1, "run.end records")
        check(len(c.records("run.wait", doc["id"])) == 1, "run.wait records")
        c.verify_chain()
    finally:
        c.close()


def t_queue_resumes_where_the_decider_cannot(tmp):
    c = Cluster(tmp)
    try:
        a, b, cc = c.nodes
        c.template("refund", REFUND, ["shop.orders", "shop.refund"])
        c.template("slow", SLOW, ["shop.slow"])
        doc = c.run(a, {"template": "refund", "input": {"amount": 5}}, 202)
        apr = doc["approvals"][0]
        # node b drains (SIGTERM with a run of its own in progress, started waiting so that it
        # executes there): it launches nothing more, but still serves the connection it has open
        own, _ = c.start_waiting(b, {"template": "slow"})
        deadline = time.monotonic() + HANG
        while not c.running_on(1):
            check(time.monotonic() < deadline, "node b's own run never started")
            time.sleep(0.02)
        conn = http.client.HTTPConnection("127.0.0.1", b.port, timeout=HANG)
        # a first request makes sure node b has accepted the connection (kept alive after it)
        conn.request("GET", "/v1/me", headers={"Authorization": "Bearer " + c.keys["bob"]})
        r = conn.getresponse()
        check(r.status == 200 and r.getheader("Connection", "").lower() != "close",
              "GET /v1/me on node b: %d %r" % (r.status, r.getheaders()))
        r.read()
        b.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + HANG
        while "SIGTERM: stopping" not in b.stderr():
            check(time.monotonic() < deadline, "node b did not start draining")
            time.sleep(0.02)
        conn.request("POST", "/v1/approvals/%s/approve" % apr, body=b"{}",
                     headers={"Authorization": "Bearer " + c.keys["bob"],
                              "Content-Type": "application/json"})
        r = conn.getresponse()
        check(r.status == 200, "approve on the draining node: %d %r" % (r.status, r.read()))
        conn.close()
        # the decision queued the run; a node that is not draining claimed and resumed it
        done = c.until(cc, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed", "resumed: %r" % done)
        with open(os.path.join(c.dirs[1], "node.id")) as f:
            b_id = "node_" + f.read().strip()
        node = ts.db_rows(c.dirs[0], "SELECT node FROM runs WHERE id = ?", (doc["id"],))
        check(node and node[0][0] and node[0][0] != b_id, "claimed by %r" % node)
        calls = c.shop.calls()
        check(calls["by_function"].get("shop.refund") == 1 and
              calls["by_function"].get("shop.orders") == 1, "%r" % calls)
        check(len(c.records("run.end", doc["id"])) == 1, "run.end records")
        c.verify_chain([a, cc])  # b is stopping
        # and it stops cleanly once its grace period has cancelled its own run
        check(b.stop() == 0, "node b's exit: %s" % b.stderr()[-2000:])
        own.join(timeout=HANG)
    finally:
        c.close()


def t_queue_takes_what_a_full_node_cannot(tmp):
    c = Cluster(tmp, one_at_a_time=(0,))
    try:
        a, b, cc = c.nodes
        c.template("slow", SLOW_AFTER, ["shop.orders", "shop.slow"])
        c.template("fill", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        # node a executes one run at a time: this one (waited for: it executes there, until it
        # is cancelled) keeps it full
        waiter, _ = c.start_waiting(a, {"template": "fill"})
        deadline = time.monotonic() + HANG
        while not c.running_on(0):
            check(time.monotonic() < deadline, "node a's run never started")
            time.sleep(0.02)
        busy = c.running_on(0)[0]
        # a run started without waiting goes to the queue, and a node with room runs it
        doc = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)
        check(doc["status"] == "queued", "%r" % doc)
        done = c.until(b, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 2, "from the queue: %r" % done)
        check(c.ok(a, "GET", "/v1/runs/" + busy, None, c.keys["agent-7"])["status"] == "running",
              "the first run ended before the second")
        with open(os.path.join(c.dirs[0], "node.id")) as f:
            a_id = "node_" + f.read().strip()
        node = ts.db_rows(c.dirs[0], "SELECT node FROM runs WHERE id = ?", (doc["id"],))
        check(node and node[0][0] and node[0][0] != a_id, "claimed by %r" % node)
        check(len(c.records("run.start", doc["id"])) == 1 and
              len(c.records("run.end", doc["id"])) == 1, "its audit")
        # a queued run can be cancelled before any node claims it: nothing is free to claim it
        for n in (b, cc):
            n.proc.send_signal(signal.SIGSTOP)
        try:
            q = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)
            check(q["status"] == "queued", "with every other node stopped: %r" % q)
            c.ok(a, "POST", "/v1/runs/%s/cancel" % q["id"], {}, c.keys["agent-7"])
        finally:
            for n in (b, cc):
                n.proc.send_signal(signal.SIGCONT)
        gone = c.until(a, q["id"], ("cancelled",))
        check(gone["error"]["code"] == "ABORTED", "%r" % gone)
        ends = c.records("run.end", q["id"])
        check(len(ends) == 1 and ends[0]["details"]["status"] == "cancelled", "%r" % ends)
        # one shop.orders, of the run from the queue: the cancelled one never ran
        check(c.shop.calls()["by_function"].get("shop.orders") == 1, "the cancelled run ran")
        c.ok(a, "POST", "/v1/runs/%s/cancel" % busy, {}, c.keys["agent-7"])
        waiter.join(timeout=HANG)
        c.verify_chain()
    finally:
        c.close()


SLOW = "return await shop.slow(20000);"
ENDLESS_LIMITS = {"timeout_ms": 3600000}  # an hour: longer than CTest lets a test run


def endless(function):
    """The source of a run that never ends by itself: calls of function (20 s each) one after
    the other, up to its timeout (ENDLESS_LIMITS). Only a cancel, a revocation or the end of its
    node stops it, so a node it fills stays full however long a busy machine takes over the
    test's steps (a run of N seconds would make the verdict depend on finishing them within N
    seconds)."""
    return "for (;;) { await %s(20000); }" % function


def t_cancel_revoke_and_key_revoke_reach_every_node(tmp):
    c = Cluster(tmp)
    try:
        a, b, cc = c.nodes
        v = c.template("slow", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        # a cancel on another node than the one executing the run (whichever claimed it)
        run1 = c.run(a, {"template": "slow", "wait": False}, 202)["id"]
        on = c.executing(run1)
        deadline = time.monotonic() + HANG
        while c.shop.calls()["by_function"].get("shop.slow", 0) < 1:
            check(time.monotonic() < deadline, "the slow call never reached the shop")
            time.sleep(0.02)
        c.ok(c.nodes[(on + 1) % 3], "POST", "/v1/runs/%s/cancel" % run1, {}, c.keys["agent-7"])
        # the executing node ended it, inside its call, with the stored reason: its watch found
        # the cancel (had it not, the run would never end)
        end = ended(c, run1, "a node still executes a run cancelled elsewhere")
        check(end["status"] == "cancelled" and error_in(end)["code"] == "ABORTED" and
              "cancelled by agent-7" in error_in(end)["message"], "run.end: %r" % end)
        # a revocation on another node of the version a run executes
        run2 = c.run(a, {"template": "slow", "wait": False}, 202)["id"]
        on = c.executing(run2)
        c.ok(c.nodes[(on + 2) % 3], "POST", "/v1/templates/slow/versions/%d/revoke" % v,
             {"reason": "stop"}, c.keys["carol"])
        end = ended(c, run2, "a node still executes a revoked version's run")
        check(end["status"] == "cancelled" and "was revoked" in error_in(end)["message"],
              "run2's end: %r" % end)
        check(c.until(b, run2, ("cancelled",))["error"]["code"] == "ABORTED", "run2")
        # their ends recorded, nothing of them is left for a takeover
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM executions"), "execution rows left")
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM calls_sent"), "marks left")
        # a key revoked on node a is refused by b and c at once
        k = c.ok(a, "POST", "/v1/principals/eve/keys", {}, c.admin, 201)
        check(c.ok(b, "GET", "/v1/me", None, k["key"])["name"] == "eve", "the new key on b")
        c.ok(a, "DELETE", "/v1/principals/eve/keys/%s" % k["prefix"], None, c.admin)
        for node in (b, cc):
            error_of(*node.request("GET", "/v1/me", key=k["key"])[:2], 401, "UNAUTHENTICATED")
        c.verify_chain()
    finally:
        c.close()


def t_key_and_role_revoked_on_another_node_reach_work_in_flight(tmp):
    """A client waiting on node a for a run, its key revoked on node b, is answered 401 by a
    (its watch reads the key in the database, with no notification to go by); the agent role
    taken back on node c ends that run, still executing on a, cancelled with the reason."""
    c = Cluster(tmp)
    try:
        a, b, cc = c.nodes
        c.template("slow", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        k = c.ok(a, "POST", "/v1/principals/agent-7/keys", {}, c.admin, 201)
        waiter = tr.Waiter(a.port, "/v1/runs", {"template": "slow", "wait": True}, k["key"])
        waiter.start()
        deadline = time.monotonic() + HANG
        while c.shop.calls()["by_function"].get("shop.slow", 0) < 1:
            check(time.monotonic() < deadline, "the slow call never reached the shop")
            time.sleep(0.02)
        c.ok(b, "DELETE", "/v1/principals/agent-7/keys/%s" % k["prefix"], None, c.admin)
        waiter.join(HANG)
        check(not waiter.is_alive(), "no answer on a %d s after the key was revoked on b" % HANG)
        error_of(waiter.status, waiter.doc, 401, "UNAUTHENTICATED")
        runs = c.ok(a, "GET", "/v1/runs?template=slow", None, c.admin)
        check(len(runs) == 1 and runs[0]["status"] == "running", "the run: %r" % runs)
        c.ok(cc, "DELETE", "/v1/principals/agent-7/roles", {"role": "agent",
                                                           "department": "finance"}, c.admin)
        end = ended(c, runs[0]["id"], "a node still executes a run whose principal lost its role")
        check(end["status"] == "cancelled" and error_in(end)["code"] == "ABORTED" and
              "agent-7 no longer holds role agent in department finance" in
              error_in(end)["message"], "run.end: %r" % end)
        c.verify_chain()
    finally:
        c.close()


SLOW_AFTER = """
const orders = await shop.orders("paid");
await shop.slow(input.ms);
return orders.length;
"""


def t_kill9_node_holding_runs(tmp):
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("slow", SLOW_AFTER, ["shop.orders", "shop.slow"])
        # acknowledged runs that end on node a before it dies
        done = [c.run(a, {"template": "slow", "input": {"ms": 1}}, 200) for _ in range(3)]
        check(all(d["status"] == "completed" for d in done), "%r" % done)
        # runs node a holds when it dies (started waiting, so that they execute there): each
        # has made its calls, one of them still in flight
        waiters = [c.start_waiting(a, {"template": "slow", "input": {"ms": 30000}})[0]
                   for _ in range(6)]
        deadline = time.monotonic() + HANG
        while c.shop.calls()["by_function"].get("shop.slow", 0) < 3 + len(waiters):
            check(time.monotonic() < deadline, "the slow calls never reached the shop")
            time.sleep(0.02)
        held = c.running_on(0)
        check(len(held) == len(waiters), "runs executing on node a: %r" % held)
        a.kill()  # SIGKILL
        for t in waiters:
            t.join(timeout=HANG)
        killed = time.monotonic()
        # b and c go on serving meanwhile
        check(c.run(b, {"template": "slow", "input": {"ms": 1}}, 200)["status"] == "completed",
              "node b after the kill")
        # a deadline 10 times the lease, a heartbeat period to notice and a watch tick: without
        # a takeover the runs would stay running for good
        deadline = killed + 10 * (lease / 1000.0 * 2 + 1.0)
        for run_id in held:
            while True:
                doc = c.ok(cc, "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
                if doc["status"] != "running":
                    break
                check(time.monotonic() < deadline,
                      "run %s still running %.1f s after its node died" % (
                          run_id, time.monotonic() - killed))
                time.sleep(0.05)
            # shop.slow is not idempotent: a person settles it (an in_doubt approval)
            check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1,
                  "taken over: %r" % doc)
        note("taken over %.1f s after the kill (lease %d ms)" % (time.monotonic() - killed, lease))
        calls = c.shop.calls()
        for run_id in held:
            recs = c.records("run.wait", run_id)
            check(len(recs) == 1, "run.wait of %s: %r" % (run_id, recs))
            d = recs[0]["details"]
            check(d["status"] == "awaiting_approval" and d["node"].startswith("node_") and
                  len(d["approvals"]) == 1, "run.wait: %r" % d)
            # shop.orders was answered and journaled: it is not in doubt
            doubt = {x["function"]: x for x in d["calls_in_doubt"]}
            check(set(doubt) == {"shop.slow"} and
                  all(x["outcome"] == "unknown" for x in doubt.values()), "in doubt: %r" % d)
            check(doubt["shop.slow"]["idempotent"] is False, "flags: %r" % d)
            check(calls["by_key"].get(doubt["shop.slow"]["idempotency_key"]) == 1,
                  "the key in doubt is not the one the shop saw: %r" % d)
            check(len(c.records("run.start", run_id)) == 1, "run.start of %s" % run_id)
        for d in done:
            check(len(c.records("run.start", d["id"])) == 1 and
                  len(c.records("run.end", d["id"])) == 1, "audit of %s" % d["id"])
        # nothing made twice: no call of a taken-over run was sent again
        check(all(n == 1 for n in calls["by_key"].values()), "a key used twice: %r" % calls)
        check(calls["by_function"].get("shop.slow") == 3 + len(held) + 1, "%r" % calls)
        # no run is left running anywhere
        running = ts.db_rows(c.dirs[0], "SELECT id FROM runs WHERE status = 'running'")
        check(not running, "runs left running: %r" % running)
        # node a restarts on its data directory: the same node, nothing left to recover
        c.nodes[0] = c.start_node(0)
        check(c.nodes[0].port, "node a did not restart: " + c.nodes[0].stderr())
        check("abandoned" not in c.nodes[0].stderr(), c.nodes[0].stderr())
        check(c.run(c.nodes[0], {"template": "slow", "input": {"ms": 1}}, 200)["status"] ==
              "completed", "node a after its restart")
        c.verify_chain()
    finally:
        c.close()


# a run whose every call is idempotent: what it sends depends on its seed and start clock only
SAFE = """
const r = Math.random(), t = Date.now();
const orders = await shop.orders("paid");
await shop.hold(input.ms, r, t);
return { orders: orders.length, r, t };
"""

# the second call's arguments carry the wall time of the first call's answer
DRIFTING = """
const orders = await shop.orders("paid");
await shop.hold(input.ms, Date.now());
return orders.length;
"""

CREDIT = """
const orders = await shop.orders("paid");
const c = await shop.credit("o-1", 5);
await shop.hold(input.ms);
return { orders: orders.length, credited: c.refunded };
"""


def start_until_call(c, node, body, function, n=1):
    """n runs of body started on node, each waited for on its own thread (a client whose node
    dies gets an error, as a real one would), once n calls of function have reached the shop:
    the runs' ids, and each one's (thread, answers) of Cluster.start_waiting."""
    waiters = [c.start_waiting(node, body) for _ in range(n)]
    wait_calls(c, function, n)
    return runs_of(c, body["template"]), waiters


def wait_calls(c, function, count):
    deadline = time.monotonic() + HANG
    while c.shop.calls()["by_function"].get(function, 0) < count:
        check(time.monotonic() < deadline, "%d %s calls never reached the shop: %r" % (
            count, function, c.shop.calls()))
        time.sleep(0.02)


def runs_of(c, template):
    return [r[0] for r in ts.db_rows(c.dirs[0], "SELECT id FROM runs WHERE template = '%s' "
                                     "ORDER BY seq" % template)]


def t_kill9_retries_runs_whose_calls_are_idempotent(tmp):
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("safe", SAFE, ["shop.orders", "shop.hold"])
        ids, _ = start_until_call(c, a, {"template": "safe", "input": {"ms": 30000}}, "shop.hold",
                                  4)
        check(len(ids) == 4, "runs: %r" % ids)
        a.kill()  # SIGKILL, each run in the middle of its second call
        for run_id in ids:
            doc = c.until(b, run_id, ("completed", "failed", "cancelled"))
            check(doc["status"] == "completed" and doc["value"]["orders"] == 2,
                  "retried run %s: %r" % (run_id, doc))
            recs = c.records("run.retried", run_id)
            check(len(recs) == 1, "run.retried of %s: %r" % (run_id, recs))
            d = recs[0]["details"]
            check(d["status"] == "queued" and d["attempt"] == 1 and d["node"].startswith("node_"),
                  "run.retried: %r" % d)
            # shop.orders was answered and journaled: replayed, never sent again; shop.hold is
            # idempotent, so it was sent unmarked: made again live, listed nowhere as retried
            check(d["calls_retried"] == [], "calls retried: %r" % d)
            check(not c.records("run.abandoned", run_id), "abandoned as well: %s" % run_id)
            check(len(c.records("run.start", run_id)) == 1 and
                  len(c.records("run.end", run_id)) == 1, "audit of %s" % run_id)
            calls = c.shop.calls()
            check(calls["by_key"].get(run_id + ":1") == 1, "shop.orders sent again: %r" % calls)
            # sent again under the same key, with the same arguments: the same seed and clock
            key = run_id + ":2"
            check(calls["by_key"].get(key) == 2, "key %s: %r" % (key, calls))
            sent = calls["args_by_key"][key]
            check(sent[0] == sent[1], "%s sent with other arguments: %r" % (key, sent))
            hold = sent[0]
            check(hold[1:] == [doc["value"]["r"], doc["value"]["t"]],
                  "the value is not the retried execution's: %r %r" % (hold, doc["value"]))
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM executions"), "execution rows left")
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM calls_sent"), "marks left")
        c.verify_chain(nodes=[b, cc])
    finally:
        c.close()


def t_kill9_retry_reads_the_journaled_clock(tmp):
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("drifting", DRIFTING, ["shop.orders", "shop.hold"])
        [run_id], _ = start_until_call(
            c, a, {"template": "drifting", "input": {"ms": 30000}}, "shop.hold")
        a.kill()
        # the guest clock a call's answer set is journaled with it: the execution that goes on
        # from the journal reads the same Date.now() and makes the very same call again
        doc = c.until(b, run_id, ("completed", "failed", "cancelled"))
        check(doc["status"] == "completed" and doc["recovered"] == 1, "recovered: %r" % doc)
        calls = c.shop.calls()
        hold = run_id + ":2"
        check(calls["by_function"]["shop.orders"] == 1 and calls["by_key"][hold] == 2 and
              calls["args_by_key"][hold][0] == calls["args_by_key"][hold][1],
              "calls: %r" % calls)
        check(len(c.records("run.retried", run_id)) == 1 and
              len(c.records("run.recover", run_id)) == 1 and
              len(c.records("run.end", run_id)) == 1, "audit of %s" % run_id)
        c.verify_chain(nodes=[b, cc])
    finally:
        c.close()


def t_kill9_node_midway_through_twenty_calls_goes_on_elsewhere(tmp):
    # the node executing a 20-call run is SIGKILLed by the connector when call 10 arrives;
    # once its lease has run out another node takes the run over and goes on from its journal:
    # calls 1-9 are replayed, never sent again, call 10 (idempotent) is sent again with its key
    import urllib.request
    import test_durable as td
    c = Cluster(tmp, lease_ms=1500)
    try:
        a, b, cc = c.nodes
        c.ok(b, "POST", "/v1/connectors", {
            "name": "steps", "department": "finance", "url": c.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": True}}}, c.admin, 201)
        c.template("steps", td.STEPS % "steps", ["steps.step"])

        def shop(path):
            with urllib.request.urlopen(c.shop.url + path, timeout=HANG) as r:
                r.read()
        shop("kill/0/10")  # call 10 waits for the pid of the node to kill
        run_id = c.run(a, {"template": "steps", "input": {}, "wait": False}, 202)["id"]
        wait_calls(c, "steps.step", 10)
        i = c.executing(run_id)
        victim = c.nodes[i]
        shop("kill/%d/0" % victim.proc.pid)
        check(victim.proc.wait(timeout=HANG) == -signal.SIGKILL, "the node was not killed")
        others = [n for j, n in enumerate(c.nodes) if j != i]
        deadline = time.monotonic() + 4 * HANG
        while True:
            doc = c.ok(others[0], "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
            if doc["status"] in ("completed", "failed", "cancelled"):
                break
            check(time.monotonic() < deadline, "run %s still %s" % (run_id, doc["status"]))
            time.sleep(0.05)
        check(doc["status"] == "completed" and doc["value"] == td.TOTAL and
              doc["recovered"] == 1, "after the takeover: %r" % doc)
        got = {int(k.split(":")[1]): n for k, n in c.shop.calls()["by_key"].items()
               if k.startswith(run_id + ":")}
        want = {k: 1 for k in range(1, 21)}
        want[10] = 2
        check(got == want, "calls by number: %r" % got)
        rec = c.records("run.recover", run_id)
        ids = [c.node_id(j) for j in range(3) if j != i]
        check(len(rec) == 1 and rec[0]["details"]["from_call"] == 10 and
              rec[0]["details"]["node"] in ids, "run.recover: %r" % rec)
        c.verify_chain(nodes=others)
    finally:
        c.close()


def t_kill9_at_an_approved_call_goes_on_elsewhere(tmp):
    # a run resumed after its sensitive call 4 was approved, its node SIGKILLed by the connector
    # when that call arrives (before its answer is journaled): another node goes on from the
    # journal, sends call 4 again under its interruption id and asks nobody again
    import urllib.request
    import test_durable as td
    c = Cluster(tmp, lease_ms=1500)
    try:
        a, b, cc = c.nodes
        c.ok(b, "POST", "/v1/connectors", {
            "name": "steps", "department": "finance", "url": c.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": True},
                          "ask": {"idempotent": True, "sensitive": True}}}, c.admin, 201)
        c.template("asks", td.ASKS % ("steps", "steps"), ["steps.step", "steps.ask"])

        def shop(path):
            with urllib.request.urlopen(c.shop.url + path, timeout=HANG) as r:
                r.read()
        shop("kill/0/4")  # call 4 waits for the pid of the node to kill
        run_id = c.run(a, {"template": "asks", "input": {"asks": [4]}, "wait": False}, 202)["id"]
        deadline = time.monotonic() + 4 * HANG
        while True:
            asked = c.ok(b, "GET", "/v1/approvals?run=" + run_id, None, c.keys["bob"])
            if asked:
                break
            check(time.monotonic() < deadline, "call 4 never asked")
            time.sleep(0.05)
        check(len(asked) == 1 and asked[0]["kind"] == "host_call", "asked: %r" % asked)
        c.ok(b, "POST", "/v1/approvals/%s/approve" % asked[0]["id"], {}, c.keys["bob"])
        wait_calls(c, "steps.ask", 1)
        i = c.executing(run_id)
        victim = c.nodes[i]
        shop("kill/%d/0" % victim.proc.pid)
        check(victim.proc.wait(timeout=HANG) == -signal.SIGKILL, "the node was not killed")
        others = [n for j, n in enumerate(c.nodes) if j != i]
        deadline = time.monotonic() + 4 * HANG
        while True:
            doc = c.ok(others[0], "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
            if doc["status"] in ("completed", "failed", "cancelled"):
                break
            check(time.monotonic() < deadline, "run %s still %s" % (run_id, doc["status"]))
            time.sleep(0.05)
        check(doc["status"] == "completed" and doc["value"] == 36 and doc["recovered"] == 1,
              "after the takeover: %r" % doc)
        by_key = c.shop.calls()["by_key"]
        got = {int(k.split(":")[1]): n for k, n in by_key.items() if k.startswith(run_id + ":")}
        check(got == {k: 1 for k in (1, 2, 3, 5, 6, 7, 8)}, "calls by number: %r" % got)
        approved = [n for k, n in by_key.items() if ":" not in k]
        check(approved == [2], "call 4 under its interruption id: %r" % by_key)
        asked = c.ok(others[0], "GET", "/v1/approvals?run=" + run_id, None, c.keys["bob"])
        check([x["id"] for x in asked] == [asked[0]["id"]] and asked[0]["kind"] == "host_call",
              "asked again: %r" % asked)
        rec = c.records("run.recover", run_id)
        check(len(rec) == 1 and rec[0]["details"]["from_call"] == 4, "run.recover: %r" % rec)
        c.verify_chain(nodes=others)
    finally:
        c.close()


def t_kill9_call_in_doubt_answered_on_another_node(tmp):
    # the same with a function not idempotent: once the lease has run out the run waits for a
    # person (an in_doubt approval, seen on every node); answered on one node, the run goes on
    # from its journal on whichever claims it: call 10 is never sent again, it returns the value
    import urllib.request
    import test_durable as td
    c = Cluster(tmp, lease_ms=1500)
    try:
        a, b, cc = c.nodes
        c.ok(b, "POST", "/v1/connectors", {
            "name": "once", "department": "finance", "url": c.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {}}}, c.admin, 201)
        c.template("doubt", td.DOUBT, ["once.step"])

        def shop(path):
            with urllib.request.urlopen(c.shop.url + path, timeout=HANG) as r:
                r.read()
        shop("kill/0/10")
        run_id = c.run(a, {"template": "doubt", "input": {}, "wait": False}, 202)["id"]
        wait_calls(c, "once.step", 10)
        i = c.executing(run_id)
        victim = c.nodes[i]
        shop("kill/%d/0" % victim.proc.pid)
        check(victim.proc.wait(timeout=HANG) == -signal.SIGKILL, "the node was not killed")
        others = [n for j, n in enumerate(c.nodes) if j != i]
        deadline = time.monotonic() + 4 * HANG
        while True:
            doc = c.ok(others[0], "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
            if doc["status"] != "running":
                break
            check(time.monotonic() < deadline, "run %s still %s" % (run_id, doc["status"]))
            time.sleep(0.05)
        check(doc["status"] == "awaiting_approval", "after the takeover: %r" % doc)
        [apr] = c.ok(others[1], "GET", "/v1/approvals?run=" + run_id, None, c.keys["bob"])
        check(apr["kind"] == "in_doubt" and apr["call"] == 10 and apr["args"] == [10] and
              apr["connector"] == "once" and apr["idempotency_key"] == run_id + ":10",
              "the approval: %r" % apr)
        c.ok(others[1], "POST", "/v1/approvals/%s/answer" % apr["id"], {"result": 100},
             c.keys["bob"])
        deadline = time.monotonic() + 4 * HANG
        while True:
            doc = c.ok(others[0], "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
            if doc["status"] in ("completed", "failed", "cancelled"):
                break
            check(time.monotonic() < deadline, "run %s still %s" % (run_id, doc["status"]))
            time.sleep(0.05)
        check(doc["status"] == "completed" and doc["value"] == td.TOTAL - 10 + 100 and
              doc["recovered"] == 1, "after the answer: %r" % doc)
        got = {int(k.split(":")[1]): n for k, n in c.shop.calls()["by_key"].items()
               if k.startswith(run_id + ":")}
        check(got == {k: 1 for k in range(1, 21)}, "calls by number: %r" % got)
        c.verify_chain(nodes=others)
    finally:
        c.close()


# an idempotent call, then one that is not
HOLD_THEN_SLOW = """
await shop.hold(input.gate);
await shop.slow(1);
return 1;
"""


def t_paused_node_sends_nothing_its_retry_sent(tmp):
    # a node that stops (SIGSTOP: a pause, a frozen machine) loses its lease as a dead one does,
    # and its run is executed again elsewhere; when it goes on, its own execution of that run
    # must not send the call that is not idempotent a second time, nor record the run's end
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("pause", HOLD_THEN_SLOW, ["shop.hold", "shop.slow"])
        # the hold answers node a only once the retry has ended (its retry answers at once)
        [run_id], [(client, answers)] = start_until_call(
            c, a, {"template": "pause", "input": {"gate": "retried"}}, "shop.hold")
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            doc = c.until(b, run_id, ("completed", "failed", "cancelled"))
            check(doc["status"] == "completed" and doc["value"] == 1, "retried run: %r" % doc)
            check(len(c.records("run.retried", run_id)) == 1, "run.retried of %s" % run_id)
        finally:
            c.shop.open("retried")
            os.kill(a.proc.pid, signal.SIGCONT)
        client.join(timeout=2 * HANG)
        check(not client.is_alive(), "node a never answered its client after it went on")
        calls = c.shop.calls()
        slow = run_id + ":2"
        check(calls["by_key"].get(slow) == 1,
              "the call that is not idempotent was sent %r times: %r" % (
                  calls["by_key"].get(slow), calls))
        done = c.until(b, run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 1,
              "the paused node's end replaced the retry's: %r" % done)
        check(len(c.records("run.start", run_id)) == 1 and
              len(c.records("run.end", run_id)) == 1, "audit of %s" % run_id)
        c.verify_chain()
    finally:
        c.close()


def t_paused_node_claims_no_run_it_still_executes(tmp):
    # as above, but the other nodes are full: the run taken over from the paused node waits in
    # the queue, and the first node free to claim it is the paused one when it goes on, its
    # own execution of the run still there; it must not execute the run a second time beside
    # that one (both would send the call that is not idempotent)
    c = Cluster(tmp, lease_ms=1500, one_at_a_time=(1, 2))
    try:
        a, b, cc = c.nodes
        # the execution of the claimed run is still there (in its stall) when the paused one's
        # hold answers
        c.template("pause",
                   HOLD_THEN_SLOW.replace("return 1;", "await shop.stall(5000);\nreturn 1;"),
                   ["shop.hold", "shop.slow", "shop.stall"])
        c.template("busy", endless("shop.stall"), ["shop.stall"], ENDLESS_LIMITS)
        for n in (b, cc):
            busy = c.run(n, {"template": "busy", "wait": False}, 202)
            c.until(n, busy["id"], ("running",))
        [run_id], [(client, answers)] = start_until_call(
            c, a, {"template": "pause", "input": {"gate": "queued"}}, "shop.hold")
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + HANG
            while not c.records("run.retried", run_id):
                check(time.monotonic() < deadline, "the paused node's run was never taken over")
                time.sleep(0.05)
            check(c.ok(b, "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])["status"] ==
                  "queued", "a full node claimed the run")
        finally:
            c.shop.open("queued")
            os.kill(a.proc.pid, signal.SIGCONT)
        client.join(timeout=2 * HANG)
        check(not client.is_alive(), "node a never answered its client after it went on")
        done = c.until(b, run_id, ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == 1, "the run: %r" % done)
        calls = c.shop.calls()
        check(calls["by_key"].get(run_id + ":2") == 1,
              "the call that is not idempotent was sent %r times: %r" % (
                  calls["by_key"].get(run_id + ":2"), calls))
        check(len(c.records("run.start", run_id)) == 1 and
              len(c.records("run.end", run_id)) == 1, "audit of %s" % run_id)
        c.verify_chain()
    finally:
        c.close()


def t_run_cancelled_on_another_node_sends_nothing_more(tmp):
    # a cancel decided on node b commits the run's status before node a's watch sees it: a
    # call the run makes on node a after that commit is not sent (node a paused meanwhile, well
    # within its lease, so that its run's next call comes first). The hold answers only once
    # node a is paused and the cancel committed.
    c = Cluster(tmp)
    try:
        a, b, cc = c.nodes
        c.template("pause", HOLD_THEN_SLOW, ["shop.hold", "shop.slow"])
        [run_id], [(client, answers)] = start_until_call(
            c, a, {"template": "pause", "input": {"gate": "cancelled"}}, "shop.hold")
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            doc = c.ok(b, "POST", "/v1/runs/%s/cancel" % run_id, {}, c.keys["agent-7"])
            check(doc["status"] == "cancelled", "cancel: %r" % doc)
            c.shop.open("cancelled")
            deadline = time.monotonic() + HANG
            while not c.shop.calls()["answered_by_key"].get(run_id + ":1"):
                check(time.monotonic() < deadline, "the hold never answered")
                time.sleep(0.02)
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        client.join(timeout=2 * HANG)
        check(not client.is_alive(), "node a never answered its client after it went on")
        calls = c.shop.calls()
        check(calls["by_function"].get("shop.slow") is None,
              "a call of a cancelled run was sent: %r" % calls)
        done = c.until(b, run_id, ("cancelled",))
        check(done["error"]["code"] == "ABORTED", "%r" % done)
        check(len(c.records("run.end", run_id)) == 1, "audit of %s" % run_id)
        c.verify_chain()
    finally:
        c.close()


def t_kill9_run_cancelled_before_the_takeover_ends(tmp):
    # a run of a node that has just died is cancelled on another node before the lease runs
    # out: nobody executes it any more, so its end must be recorded by the node that takes the
    # dead one's runs over (run.end once, its marks and execution row gone), and nothing of it
    # is sent again
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("safe", SAFE, ["shop.orders", "shop.hold"])
        [run_id], _ = start_until_call(
            c, a, {"template": "safe", "input": {"ms": 30000}}, "shop.hold")
        dead = c.node_id(0)
        a.kill()
        doc = c.ok(b, "POST", "/v1/runs/%s/cancel" % run_id, {}, c.keys["agent-7"])
        check(doc["status"] == "cancelled", "cancel: %r" % doc)
        deadline = time.monotonic() + HANG
        while ts.db_rows(c.dirs[0], "SELECT id FROM nodes WHERE id = '%s'" % dead):
            check(time.monotonic() < deadline, "node a was never taken over")
            time.sleep(0.05)
        ends = c.records("run.end", run_id)
        check(len(ends) == 1 and ends[0]["details"]["status"] == "cancelled" and
              ends[0]["details"]["error"]["code"] == "ABORTED",
              "run.end of the cancelled run of a dead node: %r" % ends)
        check(c.until(b, run_id, ("cancelled",))["error"]["code"] == "ABORTED", "status")
        check(not c.records("run.retried", run_id), "a cancelled run was retried")
        check(c.shop.calls()["by_function"].get("shop.hold") == 1, "%r" % c.shop.calls())
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM executions"), "execution rows left")
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM calls_sent"), "marks left")
        c.verify_chain(nodes=[b, cc])
    finally:
        c.close()


def t_restarts_retry_a_run_three_times_then_abort_it(tmp):
    # a node killed while it executes a run whose only call is idempotent, then restarted on
    # its data directory, takes the run over again at its start (the cluster's only live node:
    # a long lease, the two others killed): three times executed again, the fourth aborted
    c = Cluster(tmp, lease_ms=60000)
    try:
        a, b, cc = c.nodes
        c.template("stall", "await shop.stall(input.ms); return 1;", ["shop.stall"])
        b.kill()
        cc.kill()
        c.start_waiting(a, {"template": "stall", "input": {"ms": 30000}})
        for n in range(1, 5):
            wait_calls(c, "shop.stall", n)
            run_id = runs_of(c, "stall")[0]
            c.nodes[0].kill()
            c.nodes[0] = c.start_node(0)
            check(c.nodes[0].port, "node a did not restart: " + c.nodes[0].stderr())
        a = c.nodes[0]
        doc = c.until(a, run_id, ("completed", "failed", "cancelled"))
        check(doc["status"] == "failed" and doc["error"]["code"] == "ABORTED" and
              "recovered 3 times already" in doc["error"]["message"], "%r" % doc)
        retried = [r["details"]["attempt"] for r in c.records("run.retried", run_id)]
        check(retried == [1, 2, 3], "run.retried attempts: %r" % retried)
        gone = c.records("run.abandoned", run_id)
        # shop.stall is idempotent: sent unmarked, so nothing is listed in doubt
        check(len(gone) == 1 and gone[0]["details"]["calls_in_doubt"] == [],
              "run.abandoned: %r" % gone)
        calls = c.shop.calls()
        check(calls["by_key"] == {run_id + ":1": 4}, "calls: %r" % calls)
        check(len(c.records("run.start", run_id)) == 1 and not c.records("run.end", run_id),
              "audit of %s" % run_id)
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM executions"), "execution rows left")
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM calls_sent"), "marks left")
        c.verify_chain(nodes=[a])
    finally:
        c.close()


def t_paused_node_records_no_second_end_of_a_run_cancelled_meanwhile(tmp):
    # as above with a node that was only paused: the node taking it over records the
    # cancelled run's end; when the paused node goes on, its execution of the run ends (the
    # cancel reaches it) but its end is not recorded a second time
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("safe", SAFE, ["shop.orders", "shop.hold"])
        [run_id], [(client, answers)] = start_until_call(
            c, a, {"template": "safe", "input": {"ms": 30000}}, "shop.hold")
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            c.ok(b, "POST", "/v1/runs/%s/cancel" % run_id, {}, c.keys["agent-7"])
            deadline = time.monotonic() + HANG
            while not c.records("run.end", run_id):
                check(time.monotonic() < deadline, "the paused node was never taken over")
                time.sleep(0.05)
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        client.join(timeout=2 * HANG)
        check(not client.is_alive(), "node a never answered its client after it went on")
        check(isinstance(answers[0], tuple) and answers[0][0] == 200 and
              answers[0][1]["status"] == "cancelled", "node a's answer: %r" % answers)
        # node a's answer comes after its writer's batch: whatever it records is there now
        ends = c.records("run.end", run_id)
        check(len(ends) == 1, "run.end of %s: %r" % (run_id, ends))
        check(c.shop.calls()["by_function"].get("shop.hold") == 1, "%r" % c.shop.calls())
        c.verify_chain()
    finally:
        c.close()


def t_kill9_run_queued_again_then_cancelled(tmp):
    # the run taken over waits in the queue (the other nodes full) and is cancelled there: it
    # ends once, nothing of it is sent again, nothing of it is left for a later claim
    c = Cluster(tmp, lease_ms=1500, one_at_a_time=(1, 2))
    try:
        a, b, cc = c.nodes
        c.template("safe", SAFE, ["shop.orders", "shop.hold"])
        c.template("busy", endless("shop.stall"), ["shop.stall"], ENDLESS_LIMITS)
        for n in (b, cc):  # each executing where it is asked, so that b and c are full
            c.start_waiting(n, {"template": "busy"})
        wait_calls(c, "shop.stall", 2)
        busy = [r[0] for r in ts.db_rows(c.dirs[0], "SELECT id FROM runs WHERE template = "
                                         "'busy' AND node = '%s'" % c.node_id(1))]
        check(len(busy) == 1, "node b's busy run: %r" % busy)
        [run_id], _ = start_until_call(
            c, a, {"template": "safe", "input": {"ms": 30000}}, "shop.hold")
        a.kill()
        deadline = time.monotonic() + HANG
        while not c.records("run.retried", run_id):
            check(time.monotonic() < deadline, "the dead node's run was never taken over")
            time.sleep(0.05)
        check(c.until(b, run_id, ("queued",))["status"] == "queued", "queued again")
        doc = c.ok(cc, "POST", "/v1/runs/%s/cancel" % run_id, {}, c.keys["agent-7"])
        check(doc["status"] == "cancelled", "cancel: %r" % doc)
        ends = c.records("run.end", run_id)
        check(len(ends) == 1 and ends[0]["details"]["status"] == "cancelled", "%r" % ends)
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM executions WHERE run = '%s'" % run_id),
              "its execution row is left")
        check(not ts.db_rows(c.dirs[0], "SELECT run FROM calls_sent WHERE run = '%s'" % run_id),
              "its marks are left")
        # a node free again claims nothing of it
        c.ok(b, "POST", "/v1/runs/%s/cancel" % busy[0], {}, c.keys["agent-7"])
        c.until(b, busy[0], ("cancelled",))
        probe = c.run(b, {"template": "safe", "input": {"ms": 1}, "wait": True}, 200)
        check(probe["status"] == "completed", "node b after: %r" % probe)
        check(c.until(b, run_id, ("cancelled",))["status"] == "cancelled", "the cancelled run")
        check(len(c.records("run.end", run_id)) == 1, "run.end twice")
        calls = c.shop.calls()
        check(calls["by_key"].get(run_id + ":2") == 1, "the hold was sent again: %r" % calls)
        c.verify_chain(nodes=[b, cc])
    finally:
        c.close()


def t_kill9_resumed_run_goes_on_from_its_journal(tmp):
    # a run resumed after its approval, its node killed at the call after the approved one: it
    # goes on from its journal on another node, the approved call never sent again
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("credit", CREDIT, ["shop.orders", "shop.credit", "shop.hold"])
        doc = c.run(a, {"template": "credit", "input": {"ms": 30000}, "wait": True}, 202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
        c.ok(b, "POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, c.keys["bob"])
        wait_calls(c, "shop.hold", 1)
        node = ts.db_rows(c.dirs[0], "SELECT node FROM runs WHERE id = '%s'" % doc["id"])[0][0]
        i = [c.node_id(j) for j in range(3)].index(node)
        c.nodes[i].kill()  # whichever node claimed the resume
        other = c.nodes[(i + 1) % 3]
        done = c.until(other, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == {"orders": 2, "credited": "o-1"},
              "recovered resume: %r" % done)
        check(done["recovered"] == 1, "recovered: %r" % done)
        calls = c.shop.calls()
        check(calls["by_function"] == {"shop.orders": 1, "shop.credit": 1, "shop.hold": 2},
              "calls: %r" % calls)
        check(len(c.records("run.retried", doc["id"])) == 1 and
              len(c.records("run.recover", doc["id"])) == 1 and
              len(c.records("run.end", doc["id"])) == 1 and
              not c.records("run.abandoned", doc["id"]), "audit of %s" % doc["id"])
        c.verify_chain(nodes=[n for j, n in enumerate(c.nodes) if j != i])
    finally:
        c.close()


DENY_ONE = """
const [a, b] = await Promise.allSettled([shop.refund("o-1", 5), shop.credit("o-2", 7)]);
await shop.hold(input.ms);
return { refund: a.status === "rejected" ? a.reason.message : "sent",
         credit: b.status === "fulfilled" ? b.value.refunded : b.reason.message };
"""


def t_kill9_recovered_resume_keeps_its_decisions(tmp):
    # a run resumed with one call denied and one approved, its node killed: recovered from its
    # journal, the denied call throws as it did (the comment too), the approved one is not
    # sent again
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("deny1", DENY_ONE, ["shop.refund", "shop.credit", "shop.hold"])
        doc = c.run(a, {"template": "deny1", "input": {"ms": 30000}, "wait": True}, 202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 2, "%r" % doc)
        comment = 'no refunds "today" \\ ünïcode'
        pending = c.ok(b, "GET", "/v1/approvals?status=pending", None, c.keys["bob"])
        fns = {x["id"]: x.get("function") for x in pending}
        for ap in doc["approvals"]:
            if fns[ap] == "shop.refund":
                c.ok(b, "POST", "/v1/approvals/%s/deny" % ap, {"comment": comment},
                     c.keys["bob"])
            else:
                c.ok(b, "POST", "/v1/approvals/%s/approve" % ap, {}, c.keys["bob"])
        wait_calls(c, "shop.hold", 1)
        node = ts.db_rows(c.dirs[0], "SELECT node FROM runs WHERE id = '%s'" % doc["id"])[0][0]
        i = [c.node_id(j) for j in range(3)].index(node)
        c.nodes[i].kill()
        other = c.nodes[(i + 1) % 3]
        done = c.until(other, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and
              done["value"] == {"refund": "denied: " + comment, "credit": "o-2"},
              "retried resume: %r" % done)
        calls = c.shop.calls()
        check(calls["by_function"] == {"shop.credit": 1, "shop.hold": 2},
              "calls: %r" % calls)
        check(len(c.records("run.retried", doc["id"])) == 1 and
              len(c.records("run.end", doc["id"])) == 1, "audit of %s" % doc["id"])
    finally:
        c.close()


def t_kill9_approved_call_not_idempotent_is_not_sent_again(tmp):
    # an approved sensitive call that is not idempotent, answered in the resumed execution before
    # its node died at the next call: replayed from the journal, never sent again
    lease = 1500
    c = Cluster(tmp, lease_ms=lease)
    try:
        a, b, cc = c.nodes
        c.template("refund", "const r = await shop.refund('o-1', 5);\n"
                   "await shop.hold(input.ms);\nreturn r.refunded;",
                   ["shop.refund", "shop.hold"])
        doc = c.run(a, {"template": "refund", "input": {"ms": 30000}, "wait": True}, 202)
        check(doc["status"] == "awaiting_approval" and len(doc["approvals"]) == 1, "%r" % doc)
        c.ok(b, "POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, c.keys["bob"])
        wait_calls(c, "shop.hold", 1)
        node = ts.db_rows(c.dirs[0], "SELECT node FROM runs WHERE id = '%s'" % doc["id"])[0][0]
        i = [c.node_id(j) for j in range(3)].index(node)
        c.nodes[i].kill()
        other = c.nodes[(i + 1) % 3]
        done = c.until(other, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["value"] == "o-1" and
              done["recovered"] == 1, "%r" % done)
        calls = c.shop.calls()
        check(calls["by_function"] == {"shop.refund": 1, "shop.hold": 2}, "calls: %r" % calls)
        check(not c.records("run.abandoned", doc["id"]), "abandoned")
        # shop.hold is idempotent: sent unmarked, so in doubt it is made again, not listed
        retried = c.records("run.retried", doc["id"])
        check(len(retried) == 1 and retried[0]["details"]["calls_retried"] == [],
              "run.retried: %r" % retried)
    finally:
        c.close()



def runs_active(node):
    """A node's airlock_runs_active: the runs it executes whose end is not committed yet."""
    st, text, _ = node.request("GET", "/metrics")
    check(st == 200, "GET /metrics: %d" % st)
    for line in text.splitlines():
        if line.startswith("airlock_runs_active "):
            return float(line.split()[-1])
    raise Fail("no airlock_runs_active in /metrics")


def t_cancel_on_another_node_as_the_run_ends_records_one_end(tmp):
    # cancels decided on another node than the one a run executes on, the moment it starts:
    # some reach it executing, some find it ended (409), and some commit while it is ending,
    # before its node has seen the cancel; whichever, each run has exactly one run.end, saying
    # the status the run shows
    c = Cluster(tmp)
    try:
        c.template("quick", "await shop.slow(input.ms); return 1;", ["shop.slow"])
        ids = []
        for i in range(150):  # the runs end 0 to 4 ms after they start: around the cancel
            doc = c.run(c.nodes[i % 3], {"template": "quick", "input": {"ms": i % 5},
                                         "wait": False}, 202)
            ids.append(doc["id"])
            st, _, _ = c.nodes[(i + 1) % 3].request("POST", "/v1/runs/%s/cancel" % doc["id"], {},
                                                    key=c.keys["agent-7"])
            check(st in (200, 409), "cancel: %d" % st)
        ended = {run_id: c.until(c.nodes[0], run_id, ("completed", "cancelled", "failed"))
                 for run_id in ids}
        # a run cancelled on another node has its run.end written by the node executing it,
        # once its execution actually ends (it may still be on its way): count them once no
        # node executes anything (airlock_runs_active counts a run until its end is committed)
        # and every run has one
        deadline = time.monotonic() + HANG
        while True:
            executing = [i for i, n in enumerate(c.nodes) if runs_active(n) != 0]
            ends = {}
            for r in audit_rows(c.dirs[0], "run.end"):
                ends.setdefault(r["subject"], []).append(r["details"]["status"])
            missing = [run_id for run_id in ids if run_id not in ends]
            if not executing and not missing:
                break
            check(time.monotonic() < deadline,
                  "nodes %r still executing runs, %d runs without a run.end (%s...)" % (
                      executing, len(missing), missing[:3]))
            time.sleep(0.05)
        for run_id in ids:
            check(ends.get(run_id) == [ended[run_id]["status"]],
                  "run %s is %s with run.end %r" % (run_id, ended[run_id]["status"],
                                                    ends.get(run_id)))
        c.verify_chain(nodes=[c.nodes[1]])
    finally:
        c.close()

def t_live_node_keeps_its_runs_past_the_lease(tmp):
    # a minute between polls: the heartbeat (a third of the lease) must not wait for them
    lease = 1000
    c = Cluster(tmp, lease_ms=lease, poll_ms=60000)
    try:
        a, b, cc = c.nodes
        c.template("slow", SLOW_AFTER, ["shop.orders", "shop.slow"])
        # a run three leases long, on a node that renews its lease: nobody takes it over
        t0 = time.monotonic()
        doc = c.run(a, {"template": "slow", "input": {"ms": 3 * lease}}, 200)
        check(time.monotonic() - t0 >= 3 * lease / 1000.0, "the run was not that long")
        check(doc["status"] == "completed" and doc["value"] == 2, "%r" % doc)
        check(not c.records("run.abandoned", doc["id"]), "a live node's run was taken over")
        nodes = ts.db_rows(c.dirs[0], "SELECT id FROM nodes")
        check(len(nodes) == 3, "nodes: %r" % nodes)
    finally:
        c.close()


# ms: the longest --poll-ms, an hour: no node started by a test polls before CTest ends the test
# (600 s), so whatever such a node claims or cancels, a wake-up made it look (or its own kick,
# for a run of its own that ended)
NO_POLL = 3600000
# s: how long a wake-up may take before the test fails, a deadline only: on an idle machine it
# takes milliseconds, and without it nothing would happen for an hour
WAKE = 60.0


def wait_line(node, text, count=1):
    """Waits until the node's stderr holds text (count times)."""
    deadline = time.monotonic() + HANG
    while node.stderr().count(text) < count:
        check(time.monotonic() < deadline, "no %r in the log: %s" % (text, node.stderr()[-2000:]))
        time.sleep(0.02)


def note(what):
    """Information for the log (a time taken, say), never a verdict."""
    print("     " + what, flush=True)


def error_in(end):
    """The error of a run.end's details (code None, message "" for a run that completed)."""
    return end.get("error") or {"code": None, "message": ""}


def until_woken(c, node, run_id, statuses, why):
    """The run once its status is one of statuses (within WAKE seconds, or the test fails)."""
    t0 = time.monotonic()
    while True:
        doc = c.ok(node, "GET", "/v1/runs/" + run_id, None, c.keys["agent-7"])
        if doc["status"] in statuses:
            note("%s: %.2f s" % (why, time.monotonic() - t0))
            return doc
        check(time.monotonic() - t0 < WAKE, "%s: run %s still %s after %.1f s" % (
            why, run_id, doc["status"], time.monotonic() - t0))
        time.sleep(0.02)


def ended(c, run_id, why):
    """The details of the run's run.end once it is recorded (within WAKE seconds, or the test
    fails with why)."""
    t0 = time.monotonic()
    while not c.records("run.end", run_id):
        check(time.monotonic() - t0 < WAKE, "%s: no run.end after %.1f s" % (
            why, time.monotonic() - t0))
        time.sleep(0.02)
    note("run.end of %s: %.2f s" % (run_id, time.monotonic() - t0))
    return c.records("run.end", run_id)[0]["details"]


def t_wakeups_without_polling(tmp):
    c = Cluster(tmp, poll_ms=NO_POLL, one_at_a_time=(0,))
    try:
        a, b, cc = c.nodes
        c.listening()
        c.template("slow", SLOW_AFTER, ["shop.orders", "shop.slow"])
        c.template("nap", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        c.template("fill", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        # node a is full (one run at a time, this one waited for, so executing there, until it
        # is cancelled)
        waiter, _ = c.start_waiting(a, {"template": "fill"})
        deadline = time.monotonic() + HANG
        while not c.running_on(0):
            check(time.monotonic() < deadline, "node a's run never started")
            time.sleep(0.02)
        busy = c.running_on(0)[0]
        # a run queued on the full node: another claims and completes it (notified: no node
        # polls within the hour)
        doc = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)
        check(doc["status"] == "queued", "%r" % doc)
        done = until_woken(c, b, doc["id"], ("completed", "failed", "cancelled"),
                           "the queued run claimed on a wake-up")
        check(done["status"] == "completed" and done["value"] == 2, "%r" % done)
        check(c.node_of(doc["id"]) != c.node_id(0), "claimed by the full node")
        # a cancel decided on another node stops a run there, inside its call: its watch, woken,
        # ends it with the stored reason (unwoken, the run would never end)
        run1 = c.run(a, {"template": "nap", "wait": False}, 202)["id"]
        on = c.executing(run1)
        check(on in (1, 2), "a full node claimed a run")
        deadline = time.monotonic() + HANG
        while not c.shop.calls()["by_key"].get(run1 + ":1"):
            check(time.monotonic() < deadline, "the slow call never reached the shop")
            time.sleep(0.02)
        c.ok(c.nodes[3 - on], "POST", "/v1/runs/%s/cancel" % run1, {}, c.keys["agent-7"])
        end = ended(c, run1, "a run cancelled on another node still executes")
        check(end["status"] == "cancelled" and "cancelled by agent-7" in error_in(end)["message"],
              "run.end: %r" % end)
        # with the other nodes stopped, a run queued on the full node waits; once its own run
        # ends, the node claims it (kicked by that end: it polls once an hour)
        for n in (b, cc):
            n.proc.send_signal(signal.SIGSTOP)
        try:
            q = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)["id"]
            check(c.ok(a, "GET", "/v1/runs/" + q, None, c.keys["agent-7"])["status"] == "queued",
                  "claimed while every node with room was stopped")
            c.ok(a, "POST", "/v1/runs/%s/cancel" % busy, {}, c.keys["agent-7"])
            waiter.join(timeout=HANG)
            done = until_woken(c, a, q, ("completed", "failed", "cancelled"),
                               "claimed by the node with room again")
            check(done["status"] == "completed" and c.node_of(q) == c.node_id(0), "%r" % done)
        finally:
            for n in (b, cc):
                n.proc.send_signal(signal.SIGCONT)
        waiter, _ = c.start_waiting(a, {"template": "fill"})
        deadline = time.monotonic() + HANG
        while not c.running_on(0):
            check(time.monotonic() < deadline, "node a's second run never started")
            time.sleep(0.02)
        busy = c.running_on(0)[0]
        # a revocation decided on one node stops the runs of its version on the others (each
        # ends with the revocation as its reason)
        run2 = c.run(b, {"template": "nap", "wait": False}, 202)["id"]
        on2 = c.executing(run2)
        deciding = 2 if on2 == 1 else 1
        for name, run_id in (("fill", busy), ("nap", run2)):
            c.ok(c.nodes[deciding], "POST", "/v1/templates/%s/versions/1/revoke" % name,
                 {"reason": "stop"}, c.keys["carol"])
            end = ended(c, run_id, "a revoked version's run still executes")
            check(end["status"] == "cancelled" and "was revoked" in error_in(end)["message"],
                  "run.end: %r" % end)
        waiter.join(timeout=HANG)
        # no listener reconnected meanwhile: no node looked because of a reconnect either
        for i, n in enumerate(c.nodes):
            check('"listener":"lost"' not in n.stderr(), "node %d's listener was lost: %s" % (
                i, n.stderr()[-2000:]))
        c.verify_chain()
    finally:
        c.close()


def t_listener_lost_polling_covers_then_listens_again(tmp):
    # node a full and node b polling once an hour; node c polls as by default
    c = Cluster(tmp, node_args={1: ["--poll-ms", str(NO_POLL)]}, one_at_a_time=(0,))
    try:
        a, b, cc = c.nodes
        c.listening()
        c.template("slow", SLOW_AFTER, ["shop.orders", "shop.slow"])
        c.template("fill", endless("shop.slow"), ["shop.slow"], ENDLESS_LIMITS)
        waiter, _ = c.start_waiting(a, {"template": "fill"})
        deadline = time.monotonic() + HANG
        while not c.running_on(0):
            check(time.monotonic() < deadline, "node a's run never started")
            time.sleep(0.02)
        busy = c.running_on(0)[0]
        # every listener's connection ended by the server
        ended = ts.db_rows(c.dirs[0], "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE application_name = 'airlockd-listen' AND "
                           "datname = current_database()")
        check(len(ended) == 3 and all(r[0] for r in ended), "listeners ended: %r" % ended)
        # a run queued meanwhile is still claimed (the poll, or the look after a reconnect)
        doc = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)
        done = c.until(cc, doc["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed", "%r" % done)
        # each listener says it lost its connection, and that it listens again
        for n in c.nodes:
            wait_line(n, '"listener":"lost"')
            wait_line(n, '"listener":"listening again"')
        for line in b.stderr().splitlines():
            if '"listener":"lost"' in line:
                check(json.loads(line)["error"], "the loss says why: %r" % line)
        c.listening()
        # wake-ups work again: with node c stopped only node b (an hour between its polls)
        # can claim, and it does, twice (the look after its reconnect was only one)
        cc.proc.send_signal(signal.SIGSTOP)
        try:
            for _ in range(2):
                doc = c.run(a, {"template": "slow", "input": {"ms": 1}, "wait": False}, 202)
                done = until_woken(c, a, doc["id"], ("completed", "failed", "cancelled"),
                                   "claimed on a wake-up after the listener reconnected")
                check(done["status"] == "completed", "%r" % done)
                check(c.node_of(doc["id"]) == c.node_id(1), "not claimed by node b")
        finally:
            cc.proc.send_signal(signal.SIGCONT)
        c.ok(a, "POST", "/v1/runs/%s/cancel" % busy, {}, c.keys["agent-7"])
        waiter.join(timeout=HANG)
        # and a node stops while its listener waits: SIGTERM wakes the listener (stop() fails
        # after ts.HANG s; a listener left in its wait would hold the node for up to a minute)
        t0 = time.monotonic()
        check(b.stop() == 0, "node b's exit: %s" % b.stderr()[-2000:])
        note("node b stopped in %.2f s" % (time.monotonic() - t0))
    finally:
        c.close()


def t_audit_head_per_node(tmp):
    """Each node keeps the newest checkpoint it knows in its own DIR/audit.head; records and
    checkpoints other nodes append later are no cut: a restarted node reports nothing."""
    c = Cluster(tmp)
    try:
        heads = []
        for i, node in enumerate(c.nodes):
            c.ok(node, "POST", "/v1/departments", {"name": "audit-%d" % i}, c.admin, 201)
            cp = c.ok(node, "GET", "/v1/audit/checkpoint", None, c.keys["eve"], 200)
            with open(os.path.join(c.dirs[i], "audit.head")) as f:
                head = json.load(f)
            check(head == cp, "node %d's audit.head %r is not its checkpoint %r" % (i, head, cp))
            heads.append(head["seq"])
        check(heads == sorted(set(heads)), "heads: %r" % heads)
        # node a restarts behind the others' later checkpoints
        check(c.nodes[0].stop() == 0, "SIGTERM")
        c.nodes[0] = c.start_node(0)
        check(c.nodes[0].port, "node a did not restart: " + c.nodes[0].stderr())
        c.ok(c.nodes[1], "POST", "/v1/departments", {"name": "audit-later"}, c.admin, 201)
        for i, node in enumerate(c.nodes):
            check("airlockd: audit: " not in node.stderr(), "node %d: %s" % (i, node.stderr()))
            st, doc, _ = node.request("GET", "/readyz")
            check(st == 200 and doc == {"status": "ready"}, "node %d readyz: %r" % (i, doc))
            v = c.ok(node, "GET", "/v1/audit/verify", None, c.keys["eve"], 200)
            check(v["ok"] is True, "node %d verify: %r" % (i, v))
        c.verify_chain()
    finally:
        c.close()


def t_lease_option_and_config(tmp):
    check(ts.PG, "AIRLOCK_TEST_DATABASE is not set: these tests need a PostgreSQL cluster")
    d = os.path.join(tmp, "var")
    for bad in ("10", "3600001", "1e4", "x", ""):
        p = subprocess.run([ts.AIRLOCKD, "--data-dir", d, "--lease-ms", bad],
                           capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"--lease-ms must be an integer from 500 to 3600000" in
              p.stderr, "--lease-ms %r: %d %r" % (bad, p.returncode, p.stderr))
    for bad in ("9", "3600001", "1e3", "250ms", ""):
        p = subprocess.run([ts.AIRLOCKD, "--data-dir", d, "--poll-ms", bad],
                           capture_output=True, timeout=HANG)
        check(p.returncode == 2 and b"--poll-ms must be an integer from 10 to 3600000" in
              p.stderr, "--poll-ms %r: %d %r" % (bad, p.returncode, p.stderr))
    p = subprocess.run([ts.AIRLOCKD, "--help"], capture_output=True, timeout=HANG)
    check(p.returncode == 0 and b"--poll-ms MS" in p.stdout, "--help: %r" % p.stdout)
    cfg = os.path.join(tmp, "airlockd.json")
    for key, bad in (("lease_ms", '"10000"'), ("lease_ms", "499"), ("lease_ms", "2.5"),
                     ("poll_ms", '"250"'), ("poll_ms", "0"), ("poll_ms", "12.5")):
        with open(cfg, "w") as f:
            f.write('{"%s": %s}' % (key, bad))
        p = subprocess.run([ts.AIRLOCKD, "--data-dir", d, "--config", cfg],
                           capture_output=True, timeout=HANG)
        check(p.returncode == 2 and (key + " must be an integer").encode() in p.stderr,
              "%s %s: %d %r" % (key, bad, p.returncode, p.stderr))
    # good ones from the config file: the lease the node writes is the one given
    with open(cfg, "w") as f:
        f.write('{"lease_ms": 4321, "poll_ms": 1000}')
    s = Server(d, args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", cfg])
    try:
        check(s.port, "did not start: " + s.stderr())
        rows = ts.db_rows(d, "SELECT id, lease_ms FROM nodes")
        with open(os.path.join(d, "node.id")) as f:
            check(rows == [("node_" + f.read().strip(), 4321)], "nodes: %r" % rows)
    finally:
        s.kill()


TESTS = [(name, fn) for name, fn in list(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-nodes-")


if __name__ == "__main__":
    sys.exit(main())
