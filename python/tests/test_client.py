"""Client mode against a real airlockd and the shop connector: templates and versions through
their states, runs, a sensitive call that waits for a person and completes once approved,
approvals, audit export and verify, and typed errors carrying the server's codes."""
import os
import subprocess
import sys

import pytest

import airlock
from airlock import errors

from world import World

HERE = os.path.dirname(os.path.abspath(__file__))

REFUND = """
const orders = await shop.orders("paid");
const r = await shop.refund(orders[0].id, input.amount);
return { first: orders[0].id, refund: r };
"""


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.close()


def test_templates_versions_runs_approvals_audit(world):
    alice, bob, carol, agent = (world.client(n) for n in ("alice", "bob", "carol", "agent-7"))
    t = alice.create_template("refund", "finance", "refund the first paid order")
    assert t["name"] == "refund" and t["versions"] == []
    v = alice.create_version("refund", REFUND, functions=["shop.orders", "shop.refund"],
                             input_schema={"type": "object",
                                           "properties": {"amount": {"type": "integer",
                                                                     "maximum": 50}},
                                           "required": ["amount"]})
    assert v["version"] == 1 and v["state"] == "draft"
    # a draft does not run, and to an agent it is not there at all
    with pytest.raises(errors.NotFound) as e:
        agent.run("refund", {"amount": 7})
    assert e.value.status == 404 and e.value.code == "NOT_FOUND"
    assert e.value.request_id.startswith("req_")
    assert alice.submit("refund", 1)["state"] == "submitted"
    # four eyes: the author cannot approve her own version
    with pytest.raises(errors.ApiError) as e:
        alice.approve_version("refund", 1, "mine")
    assert e.value.status in (403, 409)
    assert bob.approve_version("refund", 1, "fine")["state"] == "approved"
    assert alice.version("refund", 1)["approved_by"] == "bob"
    assert [x["name"] for x in agent.templates()] == ["refund"]
    assert agent.template("refund")["versions"][0]["state"] == "approved"

    # input checked before anything runs
    with pytest.raises(errors.InputInvalid) as e:
        agent.run("refund", {"amount": 500})
    assert e.value.status == 422 and "/amount" in e.value.message

    # the sensitive call waits for a person
    run = agent.run("refund", {"amount": 7})
    assert run["status"] == "awaiting_approval" and len(run["approvals"]) == 1
    apr = run["approvals"][0]
    pending = [a for a in bob.approvals() if a["id"] == apr]
    assert pending and pending[0]["function"] == "shop.refund"
    assert pending[0]["args"] == ["o-1", 7]
    assert world.shop_calls()["by_function"].get("shop.refund", 0) == 0
    with pytest.raises(errors.Forbidden):
        agent.approve(apr)
    # only a call in doubt is answered: a sensitive call's approval is refused, still pending
    with pytest.raises(errors.Conflict) as e:
        bob.answer(apr, {"refunded": "o-1"}, "it happened")
    assert "in_doubt" in e.value.message
    assert [a for a in bob.approvals() if a["id"] == apr][0]["status"] == "pending"
    assert bob.approve(apr, "ok")["status"] == "approved"
    with pytest.raises(errors.Conflict) as e:
        carol.deny(apr, "late")
    assert e.value.code == "CONFLICT" and e.value.status == 409
    done = agent.wait_run(run["id"])
    assert done["status"] == "completed"
    assert done["value"] == {"first": "o-1", "refund": {"refunded": "o-1", "amount": 7}}
    assert world.shop_calls()["by_function"] == {"shop.orders": 1, "shop.refund": 1}
    assert agent.get_run(run["id"])["status"] == "completed"
    assert run["id"] in [r["id"] for r in bob.runs(template="refund")]
    with pytest.raises(errors.Conflict):
        agent.cancel_run(run["id"])

    # a run without waiting, cancelled while it waits for a person
    r2 = agent.run("refund", {"amount": 3})
    assert agent.cancel_run(r2["id"])["status"] == "cancelled"

    # audit
    eve = world.client("eve")
    acts = [r["action"] for r in eve.audit(run=run["id"], limit=1000)["records"]]
    for want in ("run.start", "approval.approve", "run.end"):
        assert want in acts, acts
    assert eve.audit_verify()["ok"] is True
    export = eve.audit_export()
    assert isinstance(export, list) and len(export) > 5
    assert eve.audit_checkpoint()["seq"] >= 1

    # revoke, reject
    assert bob.revoke_version("refund", 1, "paused")["state"] == "revoked"
    with pytest.raises(errors.TemplateRevoked):
        agent.run("refund", {"amount": 1})
    alice.create_version("refund", "return 1", functions=[])
    alice.submit("refund", 2)
    assert bob.reject_version("refund", 2, "no")["state"] == "rejected"
    assert "source_diff" in alice.diff("refund", 2, 1)


def test_typed_errors(world):
    alice = world.client("alice")
    alice.create_template("t1", "finance", "x")
    with pytest.raises(errors.Conflict) as e:
        alice.create_template("t1", "finance", "x")
    assert e.value.status == 409 and e.value.code == "CONFLICT"
    with pytest.raises(errors.NotFound) as e:
        alice.template("nope")
    assert e.value.status == 404 and e.value.code == "NOT_FOUND"
    with pytest.raises(errors.NotFound):
        world.client("agent-7").get_run("run_" + "0" * 32)
    with pytest.raises(errors.BadRequest) as e:
        alice.create_version("t1", "")
    assert e.value.status == 400 and e.value.code == "INVALID_REQUEST"
    with pytest.raises(errors.Unauthenticated) as e:
        airlock.Client(world.url, "al_bogus").me()
    assert e.value.status == 401
    with pytest.raises(errors.Forbidden):
        world.client("agent-7").create_template("t2", "finance", "x")
    with pytest.raises(errors.AdhocDisabled) as e:
        world.client("agent-7").run_source("return 1", "finance")
    assert e.value.status == 403 and e.value.code == "ADHOC_DISABLED"
    world.admin.set_policy("finance", allow_adhoc=True)
    r = world.client("agent-7").run_source("return input.a + 1", "finance", input={"a": 1})
    assert r["status"] == "completed" and r["value"] == 2
    assert world.client("alice").me()["name"] == "alice"


def test_readme_refund_example(world):
    env = dict(os.environ, AIRLOCK_URL=world.url, AUTHOR_KEY=world.keys["alice"],
               APPROVER_KEY=world.keys["bob"], AGENT_KEY=world.keys["agent-7"],
               PYTHONPATH=os.path.dirname(HERE))
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "examples",
                                                       "refund_approval.py")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["awaiting_approval", "{'refunded': 'o-1', 'amount': 30}"]
    assert world.shop_calls()["by_function"] == {"shop.orders": 1, "shop.refund": 1}


def test_grouped_calls(world):
    alice, bob, agent = (world.client(n) for n in ("alice", "bob", "agent-7"))
    alice.templates.create("sum", "finance", "sums orders")
    n = alice.versions.create("sum", "const o = await shop.orders('paid'); return o.length;",
                              functions=["shop.orders"])["version"]
    alice.versions.submit("sum", n)
    bob.versions.approve("sum", n, "ok")
    assert alice.versions.get("sum", n)["state"] == "approved"
    assert [t["name"] for t in agent.templates.list()] == ["sum"]
    assert agent.templates.get("sum")["name"] == "sum"
    r = agent.runs.start("sum", wait=False)
    assert agent.runs.wait(r["id"])["value"] == 2
    assert [x["id"] for x in agent.runs.list(status="completed")] == [r["id"]]
    assert agent.runs.get(r["id"])["status"] == "completed"
    assert bob.approvals.list() == []
    eve = world.client("eve")
    assert eve.audit.verify()["ok"] is True
    assert eve.audit.list(action="run.end")["records"]
    assert eve.audit.export()[-1]
    assert eve.audit.checkpoint()["seq"] >= 1
