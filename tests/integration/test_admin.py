#!/usr/bin/env python3
"""Integration tests of airlockd's administration (docs/server.md "Routes"): a principal's
identity and disabled flag (PATCH /v1/principals/{p}, POST /v1/principals with an identity), a
disabled principal's keys refused and its runs ended, one principal read with its grants,
principals deleted; connectors changed and deleted (PATCH and DELETE /v1/connectors/{c}): a
change of what an approved version may do (its args_schema included) refused, or with
?force=true revoking the version; departments renamed and deleted (409 unless empty, while a run
of it is queued or running, or while oidc.group_roles names it); web UI sessions ended for good
by a disable, a delete or a link to another identity.

usage: test_admin.py --airlockd PATH [-k SUBSTRING]   (AIRLOCK_TEST_DATABASE: on PostgreSQL)
"""
import hashlib
import json
import os
import secrets
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import audit_rows, check, error_of  # noqa: E402


def start(tmp):
    d = os.path.join(tmp, "var")
    s = ts.Server(d)
    check(s.port, "airlockd did not start: %s" % s.stderr())
    return s, d, s.admin_key()


def create(s, k, name, **body):
    st, doc, _ = s.request("POST", "/v1/principals", dict(name=name, **body), key=k)
    check(st == 201, "create %s: %r" % (name, doc))
    return doc


# --------------------------------------------------------------------------------------------- principals
def t_identity_linked_once(tmp):
    s, d, k = start(tmp)
    try:
        doc = create(s, k, "alice", kind="user", identity="alice@example.com")
        check(doc["identity"] == "alice@example.com", "created: %r" % doc)
        check(create(s, k, "bob")["identity"] is None, "no identity")
        # an agent signs in with keys only; an identity is linked to one principal at most
        error_of(*s.request("POST", "/v1/principals", {"name": "bot", "kind": "agent",
                                                       "identity": "bot@example.com"},
                            key=k)[:2], 400, "INVALID_REQUEST")
        error_of(*s.request("POST", "/v1/principals", {"name": "carol",
                                                       "identity": "alice@example.com"},
                            key=k)[:2], 409, "CONFLICT")
        check(s.request("GET", "/v1/principals/carol", key=k)[0] == 404,
              "a refused principal was kept")
        for bad in ("", "a\nb", "x" * 257, 7, ["a"]):
            error_of(*s.request("PATCH", "/v1/principals/bob", {"identity": bad}, key=k)[:2],
                     400, "INVALID_REQUEST")
        error_of(*s.request("PATCH", "/v1/principals/bob", {"identity": "alice@example.com"},
                            key=k)[:2], 409, "CONFLICT")
        st, doc, _ = s.request("PATCH", "/v1/principals/bob", {"identity": "bob@example.com"},
                               key=k)
        check(st == 200 and doc["identity"] == "bob@example.com" and doc["disabled"] is False,
              "patched: %r" % doc)
        # the same identity again is no change of owner; null unlinks it
        check(s.request("PATCH", "/v1/principals/bob", {"identity": "bob@example.com"},
                        key=k)[0] == 200, "same identity again")
        st, doc, _ = s.request("PATCH", "/v1/principals/alice", {"identity": None}, key=k)
        check(st == 200 and doc["identity"] is None, "unlinked: %r" % doc)
        check(create(s, k, "carol", identity="alice@example.com")["identity"] ==
              "alice@example.com", "an unlinked identity is free again")
        create(s, k, "bot", kind="agent")
        error_of(*s.request("PATCH", "/v1/principals/bot", {"identity": "bot@example.com"},
                            key=k)[:2], 400, "INVALID_REQUEST")
        error_of(*s.request("PATCH", "/v1/principals/ghost", {"identity": "g@example.com"},
                            key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("PATCH", "/v1/principals/bob", {}, key=k)[:2], 400,
                 "INVALID_REQUEST")
        error_of(*s.request("PATCH", "/v1/principals/bob", {"name": "x"}, key=k)[:2], 400,
                 "INVALID_REQUEST")
        recs = [(r["subject"], r["details"]) for r in audit_rows(d, "principal.update")]
        check(recs == [("bob", {"identity": "bob@example.com"}),
                       ("bob", {"identity": "bob@example.com"}),
                       ("alice", {"identity": None})], "principal.update records: %r" % recs)
        creates = {r["subject"]: r["details"] for r in audit_rows(d, "principal.create")}
        check(creates["alice"] == {"kind": "user", "identity": "alice@example.com"} and
              creates["bob"] == {"kind": "user"}, "principal.create records: %r" % creates)
    finally:
        s.kill()


def t_disabled_principal_keys_answer_401(tmp):
    s, d, k = start(tmp)
    try:
        doc = create(s, k, "ops", kind="user")
        key = doc["key"]
        check(s.request("POST", "/v1/principals/ops/roles", {"role": "admin", "department": "*"},
                        key=k)[0] == 201, "grant")
        second = s.request("POST", "/v1/principals/ops/keys", key=k)[1]["key"]
        check(s.request("GET", "/v1/me", key=key)[0] == 200, "enabled: 200")
        st, doc, _ = s.request("PATCH", "/v1/principals/ops", {"disabled": True}, key=k)
        check(st == 200 and doc["disabled"] is True, "disabled: %r" % doc)
        # every key of it, on a read route and a writing one (authenticated again on the writer)
        for kk in (key, second):
            error_of(*s.request("GET", "/v1/me", key=kk)[:2], 401, "UNAUTHENTICATED")
            error_of(*s.request("POST", "/v1/departments", {"name": "x"}, key=kk)[:2], 401,
                     "UNAUTHENTICATED")
        check(s.request("GET", "/v1/departments", key=k)[1] == [], "a disabled admin wrote")
        # its keys and grants stay: enabled again, it works as before
        st, doc, _ = s.request("GET", "/v1/principals/ops", key=k)
        check(st == 200 and doc["disabled"] is True and
              doc["roles"] == [{"role": "admin", "department": "*"}] and
              all(x["revoked"] is None for x in doc["keys"]) and len(doc["keys"]) == 2,
              "GET: %r" % doc)
        st, doc, _ = s.request("PATCH", "/v1/principals/ops", {"disabled": False}, key=k)
        check(st == 200 and doc["disabled"] is False, "enabled: %r" % doc)
        check(s.request("GET", "/v1/me", key=key)[0] == 200, "enabled again: 200")
        # nobody disables or deletes itself
        error_of(*s.request("PATCH", "/v1/principals/ops", {"disabled": True}, key=key)[:2],
                 409, "CONFLICT")
        error_of(*s.request("DELETE", "/v1/principals/ops", key=key)[:2], 409, "CONFLICT")
        check(s.request("GET", "/v1/me", key=key)[0] == 200, "still enabled")
        recs = [(r["actor"], r["subject"], r["details"]) for r in audit_rows(d, "principal.update")]
        check(recs == [("admin", "ops", {"disabled": True}), ("admin", "ops", {"disabled": False})],
              "records: %r" % recs)
        denied = [r for r in audit_rows(d, "auth.denied") if r["details"].get("status") == 401]
        check(denied and "disabled" in " ".join(r["details"].get("reason", "") +
                                                " ".join(r["details"].get("reasons", []))
                                                for r in denied), "401 reason: %r" % denied)
    finally:
        s.kill()


def t_principal_get_and_delete(tmp):
    s, d, k = start(tmp)
    try:
        for dept in ("finance", "hr"):
            check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
        key = create(s, k, "agent-7", kind="agent")["key"]
        for dept in ("finance", "hr"):
            check(s.request("POST", "/v1/principals/agent-7/roles",
                            {"role": "agent", "department": dept}, key=k)[0] == 201, "grant")
        aud = create(s, k, "aud-hr")["key"]
        check(s.request("POST", "/v1/principals/aud-hr/roles",
                        {"role": "auditor", "department": "hr"}, key=k)[0] == 201, "grant")
        create(s, k, "nobody")
        st, doc, _ = s.request("GET", "/v1/principals/agent-7", key=k)
        check(st == 200 and doc["name"] == "agent-7" and doc["kind"] == "agent" and
              doc["roles"] == [{"role": "agent", "department": "finance"},
                               {"role": "agent", "department": "hr"}] and len(doc["keys"]) == 1,
              "GET: %r" % doc)
        # an auditor of hr: its department's grants alone, no keys; others are not there
        st, doc, _ = s.request("GET", "/v1/principals/agent-7", key=aud)
        check(st == 200 and doc["roles"] == [{"role": "agent", "department": "hr"}] and
              doc["keys"] == [], "scoped GET: %r" % doc)
        error_of(*s.request("GET", "/v1/principals/nobody", key=aud)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/principals/ghost", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("GET", "/v1/principals/agent-7", key=key)[:2], 403, "FORBIDDEN")
        # deleted: its keys, grants and the principal go; the name is free again
        st, doc, _ = s.request("DELETE", "/v1/principals/agent-7", key=k)
        check(st == 200 and doc == {"name": "agent-7", "deleted": True}, "delete: %r" % doc)
        error_of(*s.request("GET", "/v1/me", key=key)[:2], 401, "UNAUTHENTICATED")
        error_of(*s.request("GET", "/v1/principals/agent-7", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("DELETE", "/v1/principals/agent-7", key=k)[:2], 404, "NOT_FOUND")
        check(ts.db_rows(d, "SELECT count(*) FROM api_keys WHERE principal = 'agent-7'") ==
              [(0,)] and ts.db_rows(d, "SELECT count(*) FROM role_grants WHERE principal = "
                                       "'agent-7'") == [(0,)], "keys or grants left")
        recs = [(r["subject"], r["details"]) for r in audit_rows(d, "principal.delete")]
        check(recs == [("agent-7", {"kind": "agent"})], "principal.delete: %r" % recs)
        again = create(s, k, "agent-7", kind="agent")
        check(s.request("GET", "/v1/principals/agent-7", key=k)[1]["roles"] == [],
              "a new principal of that name inherited grants: %r" % again)
    finally:
        s.kill()


# --------------------------------------------------------------------------------------------- connectors
def shop_functions(**over):
    fns = {"orders": {"description": "orders by status"}, "refund": {"sensitive": True},
           "fail": {}, "slow": {}}
    fns.update(over)
    return {k: v for k, v in fns.items() if v is not None}


def t_connector_changes_what_was_approved_only_with_force(tmp):
    w = tr.World(tmp)
    try:
        a = w.admin
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        st, waiting = w.run({"template": "refund", "input": {"amount": 3}}, want=202)
        check(waiting["status"] == "awaiting_approval", "waiting: %r" % waiting)

        def patch(body, force=None, want=200):
            q = "" if force is None else "?force=" + force
            st, doc, _ = w.s.request("PATCH", "/v1/connectors/shop" + q, body, key=a)
            if want == 200:
                check(st == 200, "PATCH %r: %d %r" % (body, st, doc))
            else:
                error_of(st, doc, want, {400: "INVALID_REQUEST", 404: "NOT_FOUND",
                                         409: "CONFLICT"}[want])
            return doc

        def version_state():
            return w.ok("GET", "/v1/templates/refund/versions/1", None, a)["state"]

        # what a version does not depend on changes freely: headers (sealed), timeout, the
        # secret, a description, a function no approved version names
        canary = "canary-HEADER-5b1e"
        doc = patch({"headers": {"X-Token": canary}, "timeout_ms": 20000,
                     "signing_secret": tr.SECRET + "-next"})
        check(doc["header_names"] == ["X-Token"] and doc["timeout_ms"] == 20000 and
              canary not in str(doc), "patched: %r" % doc)
        patch({"signing_secret": tr.SECRET})
        patch({"functions": shop_functions(orders={"description": "paid orders"},
                                           slow={"idempotent": True}, fail=None,
                                           extra={"sensitive": True})})
        check(version_state() == "approved", "a free change revoked the version")
        # the URL, the refund's flags, a function it names removed: refused, nothing changed
        before = w.ok("GET", "/v1/connectors/shop", None, a)
        for body in ({"url": "http://127.0.0.1:9/elsewhere"},
                     {"functions": shop_functions(refund={"sensitive": False})},
                     {"functions": shop_functions(refund={"sensitive": True,
                                                          "idempotent": True})},
                     {"functions": shop_functions(orders=None)}):
            doc = patch(body, want=409)
            check("version 1 of template refund" in doc["error"]["message"], "409: %r" % doc)
            patch(body, force="false", want=409)
        check(w.ok("GET", "/v1/connectors/shop", None, a) == before, "a refused change was kept")
        check(version_state() == "approved", "a refused change revoked the version")
        patch({"url": "http://127.0.0.1:9/x"}, force="yes", want=400)
        # the waiting run still goes on as approved
        check(w.get(waiting["id"])["status"] == "awaiting_approval", "the waiting run ended")
        # forced: the version is revoked in the same change, its runs end, new runs are refused
        doc = patch({"functions": shop_functions(refund={"sensitive": False})}, force="true")
        check(doc["functions"]["refund"]["sensitive"] is False, "forced change: %r" % doc)
        check(version_state() == "revoked", "forced change left the version approved")
        done = w.get(waiting["id"])
        check(done["status"] == "cancelled" and done["error"]["code"] == "ABORTED",
              "waiting run after the revocation: %r" % done)
        error_of(*w.run({"template": "refund", "input": {"amount": 1}}), 409, "TEMPLATE_REVOKED")
        check(w.shop.calls()["by_function"].get("shop.refund", 0) == 0,
              "the refund reached the shop")
        rev = audit_rows(w.dir, "version.revoke")
        check([(r["actor"], r["subject"], r["details"]["version"], r["details"]["reason"])
               for r in rev] == [("admin", "refund", 1, "connector shop changed")],
              "version.revoke: %r" % rev)
        ups = audit_rows(w.dir, "connector.update")
        check(len(ups) == 4 and ups[-1]["details"]["revoked"] ==
              [{"template": "refund", "version": 1}] and
              "refund" in ups[-1]["details"]["functions_changed"] and
              ups[0]["details"]["signing_secret"] == "changed" and
              ups[0]["details"]["header_names"] == ["X-Token"], "connector.update: %r" % ups)
        check(canary not in json.dumps(ts.db_rows(w.dir, "SELECT details FROM audit")) and
              canary not in json.dumps(ts.db_rows(w.dir, "SELECT headers FROM connectors")),
              "a header value in the clear")
        error_of(*w.s.request("PATCH", "/v1/connectors/ghost", {"timeout_ms": 5},
                              key=a)[:2], 404, "NOT_FOUND")
        error_of(*w.s.request("PATCH", "/v1/connectors/shop", {}, key=a)[:2], 400,
                 "INVALID_REQUEST")
        error_of(*w.s.request("PATCH", "/v1/connectors/shop", {"name": "x"}, key=a)[:2], 400,
                 "INVALID_REQUEST")
        error_of(*w.s.request("PATCH", "/v1/connectors/shop", {"timeout_ms": 5},
                              key=w.keys["bob"])[:2], 403, "FORBIDDEN")
    finally:
        w.close()


def t_connector_args_schema_widened_only_with_force(tmp):
    """A function's args_schema is checked on every call: what an approved version may send. Its
    approvers saw refunds of at most 10; a schema changed under the approved version (here: none
    left) would let the same source refund any amount, so it is a change of what was approved."""
    w = tr.World(tmp)
    try:
        a = w.admin
        capped = {"type": "array", "prefixItems": [{"type": "string"},
                                                   {"type": "integer", "maximum": 10}]}
        w.ok("PATCH", "/v1/connectors/shop",
             {"functions": shop_functions(refund={"sensitive": True, "args_schema": capped})}, a)
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        st, doc, _ = w.s.request("PATCH", "/v1/connectors/shop",
                                 {"functions": shop_functions()}, key=a)
        error_of(st, doc, 409, "CONFLICT")
        check("version 1 of template refund" in doc["error"]["message"], "409: %r" % doc)
        check(w.ok("GET", "/v1/connectors/shop", None, a)["functions"]["refund"]["args_schema"] ==
              capped, "the schema was changed")
        # a result schema, or the schema of a function no approved version names, is free
        w.ok("PATCH", "/v1/connectors/shop", {"functions": shop_functions(
            refund={"sensitive": True, "args_schema": capped, "result_schema": {}},
            slow={"args_schema": {"type": "array"}})}, a)
        check(w.ok("GET", "/v1/templates/refund/versions/1", None, a)["state"] == "approved",
              "a free change revoked the version")
        doc = w.ok("PATCH", "/v1/connectors/shop?force=true", {"functions": shop_functions()}, a)
        check("args_schema" not in doc["functions"]["refund"], "forced: %r" % doc)
        check(w.ok("GET", "/v1/templates/refund/versions/1", None, a)["state"] == "revoked",
              "forced change left the version approved")
    finally:
        w.close()


def t_connector_deleted_only_when_no_approved_version_names_it(tmp):
    w = tr.World(tmp)
    try:
        a = w.admin
        w.template("orders", "return await shop.orders('paid');", ["shop.orders"])
        check(w.run({"template": "orders"}, want=200)[1]["status"] == "completed", "a run")
        st, doc, _ = w.s.request("DELETE", "/v1/connectors/shop", key=a)
        error_of(st, doc, 409, "CONFLICT")
        check(w.ok("GET", "/v1/connectors/shop", None, a)["name"] == "shop", "deleted anyway")
        st, doc, _ = w.s.request("DELETE", "/v1/connectors/shop?force=true", key=a)
        check(st == 200 and doc == {"name": "shop", "deleted": True,
                                    "revoked": [{"template": "orders", "version": 1}]},
              "forced delete: %r" % doc)
        error_of(*w.s.request("GET", "/v1/connectors/shop", key=a)[:2], 404, "NOT_FOUND")
        error_of(*w.run({"template": "orders"}), 409, "TEMPLATE_REVOKED")
        error_of(*w.s.request("DELETE", "/v1/connectors/shop", key=a)[:2], 404, "NOT_FOUND")
        recs = audit_rows(w.dir, "connector.delete")
        check([(r["subject"], r["department"], r["details"]) for r in recs] ==
              [("shop", "finance", {"department": "finance", "url": w.shop.url,
                                     "revoked": [{"template": "orders", "version": 1}]})],
              "connector.delete: %r" % recs)
        # a connector no approved version names goes at once; its name is free again
        body = {"name": "crm", "department": "finance", "url": "http://127.0.0.1:9/crm",
                "signing_secret": tr.SECRET, "functions": {"lookup": {}}}
        w.ok("POST", "/v1/connectors", body, a, 201)
        check(w.s.request("DELETE", "/v1/connectors/crm", key=a)[1]["revoked"] == [], "crm")
        w.ok("POST", "/v1/connectors", body, a, 201)
    finally:
        w.close()


def t_a_disabled_principals_runs_end(tmp):
    w = tr.World(tmp)
    try:
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        st, waiting = w.run({"template": "refund", "input": {"amount": 3}}, want=202)
        w.ok("PATCH", "/v1/principals/agent-7", {"disabled": True}, w.admin)
        done = w.get(waiting["id"], key=w.admin)
        check(done["status"] == "cancelled" and done["error"]["code"] == "ABORTED",
              "a disabled principal's run went on: %r" % done)
        error_of(*w.run({"template": "refund", "input": {"amount": 1}}), 401, "UNAUTHENTICATED")
        error_of(*w.s.request("POST", "/v1/approvals/%s/approve" % waiting["approvals"][0],
                              {}, key=w.keys["bob"])[:2], 409, "CONFLICT")
    finally:
        w.close()


def session_for(d, principal, identity):
    """A session of the web UI for principal, kept in the store as the sign-in's callback keeps
    one (the sign-in itself is tests/oidc's): the cookie's token, whose SHA-256 the row holds."""
    token = secrets.token_hex(32)
    ts.db_exec(d, "INSERT INTO sessions(token_sha256, principal, identity, grants, created, "
               "expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
               (hashlib.sha256(token.encode()).hexdigest(), principal, identity, "[]",
                "2026-01-01T00:00:00.000Z", str(int(time.time() * 1000) + 3600 * 1000)))
    return token


def me_by_session(s, token):
    return s.request("GET", "/v1/me", headers={"Cookie": "airlock_session=" + token})[0]


def t_a_session_ended_by_its_principal_stays_ended(tmp):
    """Disabling a principal, deleting it or linking it to another identity is what an admin
    does about a stolen or forgotten browser: the sessions it ended are gone for good, not good
    again once the principal is enabled, made again under its name or linked back."""
    s, d, k = start(tmp)
    try:
        for name in ("alice", "bob", "carol"):
            create(s, k, name, kind="user", identity=name + "@example.com")
        alice = session_for(d, "alice", "alice@example.com")
        bob = session_for(d, "bob", "bob@example.com")
        carol = session_for(d, "carol", "carol@example.com")
        check([me_by_session(s, t) for t in (alice, bob, carol)] == [200, 200, 200],
              "the sessions sign in")
        check(s.request("PATCH", "/v1/principals/alice", {"disabled": True}, key=k)[0] == 200,
              "disable alice")
        check(me_by_session(s, alice) == 401, "a disabled principal's session")
        check(s.request("PATCH", "/v1/principals/alice", {"disabled": False}, key=k)[0] == 200,
              "enable alice")
        check(me_by_session(s, alice) == 401, "the session a disable ended signs in again")
        check(s.request("DELETE", "/v1/principals/bob", key=k)[0] == 200, "delete bob")
        create(s, k, "bob", kind="user", identity="bob@example.com")
        check(me_by_session(s, bob) == 401, "a deleted principal's session signs its successor in")
        for identity in (None, "carol@example.com"):
            check(s.request("PATCH", "/v1/principals/carol", {"identity": identity},
                            key=k)[0] == 200, "carol linked to %r" % identity)
        check(me_by_session(s, carol) == 401, "the session an unlink ended signs in again")
        fresh = session_for(d, "carol", "carol@example.com")
        check(me_by_session(s, fresh) == 200, "a new sign-in works")
        check(s.request("PATCH", "/v1/principals/carol", {"identity": "carol@example.com"},
                        key=k)[0] == 200, "the same identity again")
        check(me_by_session(s, fresh) == 200, "linked to the same identity again: no change")
    finally:
        s.kill()


# --------------------------------------------------------------------------------------------- departments
def t_department_renamed_with_what_names_it(tmp):
    w = tr.World(tmp)
    try:
        a = w.admin
        w.template("orders", "return await shop.orders('paid');", ["shop.orders"])
        run = w.run({"template": "orders"}, want=200)[1]
        w.ok("PUT", "/v1/departments/finance/policy", {"approval_ttl_ms": 60000}, a)
        w.ok("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["run.failed"],
                                      "department": "finance", "format": "json",
                                      "signing_secret": "a-signing-secret-long-enough"}, a, 201)
        st, doc, _ = w.s.request("PATCH", "/v1/departments/finance", {"name": "fin"}, key=a)
        check(st == 200 and doc["name"] == "fin" and doc["autonomy"] == "autonomous" and
              doc["approval_ttl_ms"] == 60000, "renamed, with its policy: %r" % doc)
        hooks = w.ok("GET", "/v1/webhooks", None, a)
        hooks = hooks["webhooks"] if isinstance(hooks, dict) else hooks
        check([h["department"] for h in hooks] == ["fin"], "the webhook follows: %r" % hooks)
        # everything that named it follows: grants, templates, connectors, runs
        check(w.ok("GET", "/v1/templates/orders", None, a)["department"] == "fin", "template")
        check(w.ok("GET", "/v1/connectors/shop", None, a)["department"] == "fin", "connector")
        check(w.get(run["id"])["department"] == "fin", "run")
        check({"role": "agent", "department": "fin"} in
              w.ok("GET", "/v1/principals/agent-7", None, a)["roles"], "grant")
        check(w.run({"template": "orders"}, want=200)[1]["status"] == "completed",
              "the department's agent runs on")
        error_of(*w.s.request("PATCH", "/v1/departments/fin", {"name": "other"}, key=a)[:2],
                 409, "CONFLICT")
        error_of(*w.s.request("PATCH", "/v1/departments/finance", {"name": "x"}, key=a)[:2],
                 404, "NOT_FOUND")
        error_of(*w.s.request("PATCH", "/v1/departments/fin", {"name": "*"}, key=a)[:2],
                 400, "INVALID_REQUEST")
        error_of(*w.s.request("PATCH", "/v1/departments/fin", {"name": "x"},
                              key=w.keys["alice"])[:2], 403, "FORBIDDEN")
        recs = audit_rows(w.dir, "department.rename")
        check([(r["subject"], r["department"], r["details"]) for r in recs] ==
              [("fin", "fin", {"from": "finance", "to": "fin"})], "records: %r" % recs)
    finally:
        w.close()


def t_department_renamed_only_when_no_run_executes(tmp):
    """A run executing holds its department's name from its start: an approval it asked for
    after a rename would name the old department, which the approvers (their grants renamed)
    no longer see and a department made later under that name would decide. So a department
    is renamed only while none of its runs is queued or running; a run waiting for a person is
    stored whole and follows the rename."""
    w = tr.World(tmp)
    try:
        a = w.admin
        w.ok("PATCH", "/v1/connectors/shop", {"functions": {
            "orders": {}, "refund": {"sensitive": True}, "fail": {}, "slow": {}, "hold": {}}}, a)
        w.template("pay", "await shop.hold('rename'); return await shop.refund('o-1', 5);",
                   ["shop.hold", "shop.refund"])
        running = w.run({"template": "pay", "wait": False}, want=202)[1]
        w.until_called("shop.hold")
        st, doc, _ = w.s.request("PATCH", "/v1/departments/finance", {"name": "fin"}, key=a)
        error_of(st, doc, 409, "CONFLICT")
        check("run" in doc["error"]["message"], "message: %r" % doc)
        check(w.get(running["id"])["department"] == "finance", "renamed under a running run")
        w.shop.open("rename")
        w.until(running["id"], ("awaiting_approval",))
        check([p["department"] for p in w.pending()] == ["finance"], "the approval: %r" %
              w.pending())
        # waiting for a person, the run is stored whole: the rename takes it along
        w.ok("PATCH", "/v1/departments/finance", {"name": "fin"}, a)
        pending = w.pending()
        check([p["department"] for p in pending] == ["fin"], "the approval follows: %r" % pending)
        w.ok("POST", "/v1/approvals/%s/approve" % pending[0]["id"], {}, w.keys["bob"])
        done = w.until(running["id"], ("completed", "failed", "cancelled"))
        check(done["status"] == "completed" and done["department"] == "fin", "done: %r" % done)
    finally:
        w.close()


def t_department_named_by_group_roles_kept_under_its_name(tmp):
    """oidc.group_roles grants roles in a department by its name, from the config file: renamed,
    the department would leave its group's admins behind with a grant for a name nobody holds,
    and deleted or renamed, a department made later under that name would hand its group the
    role there. Both wait until the config file names it no more."""
    d = os.path.join(tmp, "var")
    path = os.path.join(tmp, "airlockd.json")
    with open(path, "w") as f:
        json.dump({"oidc": {"issuer": "http://127.0.0.1:9", "client_id": "airlock",
                            "client_secret": "a-client-secret",
                            "redirect_url": "http://127.0.0.1:9/auth/callback",
                            "group_roles": {"eng-admins": [{"role": "admin",
                                                            "department": "eng"}]}}}, f)
    s = ts.Server(d, args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", path])
    check(s.port, "airlockd did not start: %s" % s.stderr())
    try:
        k = s.admin_key()
        for dept in ("eng", "ops"):
            check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
        st, doc, _ = s.request("PATCH", "/v1/departments/eng", {"name": "engineering"}, key=k)
        error_of(st, doc, 409, "CONFLICT")
        check("group_roles" in doc["error"]["message"], "message: %r" % doc)
        st, doc, _ = s.request("DELETE", "/v1/departments/eng", key=k)
        error_of(st, doc, 409, "CONFLICT")
        check("group_roles" in doc["error"]["message"], "message: %r" % doc)
        check([x["name"] for x in s.request("GET", "/v1/departments", key=k)[1]] ==
              ["eng", "ops"], "eng was changed")
        # a department no group's grant names is renamed and deleted as ever
        check(s.request("PATCH", "/v1/departments/ops", {"name": "operations"}, key=k)[0] == 200,
              "rename ops")
        check(s.request("DELETE", "/v1/departments/operations", key=k)[0] == 200, "delete")
    finally:
        s.kill()


def t_department_deleted_only_when_empty(tmp):
    s, d, k = start(tmp)
    try:
        for dept in ("finance", "empty"):
            check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)
        create(s, k, "ann")
        check(s.request("POST", "/v1/principals/ann/roles", {"role": "author",
                                                             "department": "finance"},
                        key=k)[0] == 201, "grant")
        ann = s.request("POST", "/v1/principals/ann/keys", key=k)[1]["key"]
        check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                        key=ann)[0] == 201, "template")
        st, doc, _ = s.request("DELETE", "/v1/departments/finance", key=k)
        error_of(st, doc, 409, "CONFLICT")
        check("1 template" in doc["error"]["message"] and "1 role grant" in
              doc["error"]["message"], "message: %r" % doc)
        check([x["name"] for x in s.request("GET", "/v1/departments", key=k)[1]] ==
              ["empty", "finance"], "a department with content was deleted")
        st, doc, _ = s.request("DELETE", "/v1/departments/empty", key=k)
        check(st == 200 and doc == {"name": "empty", "deleted": True}, "delete: %r" % doc)
        error_of(*s.request("DELETE", "/v1/departments/empty", key=k)[:2], 404, "NOT_FOUND")
        recs = audit_rows(d, "department.delete")
        check([(r["subject"], r["details"]) for r in recs] == [("empty", {"name": "empty"})],
              "records: %r" % recs)
        # a grant alone keeps it too: taken back, it goes
        check(s.request("POST", "/v1/departments", {"name": "hr"}, key=k)[0] == 201, "hr")
        check(s.request("POST", "/v1/principals/ann/roles", {"role": "agent",
                                                             "department": "hr"},
                        key=k)[0] == 201, "grant hr")
        error_of(*s.request("DELETE", "/v1/departments/hr", key=k)[:2], 409, "CONFLICT")
        check(s.request("DELETE", "/v1/principals/ann/roles", {"role": "agent",
                                                               "department": "hr"},
                        key=k)[0] == 200, "revoke hr")
        check(s.request("DELETE", "/v1/departments/hr", key=k)[0] == 200, "hr deleted")
    finally:
        s.kill()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]

if __name__ == "__main__":
    sys.exit(ts.run_tests(TESTS, "airlockd-admin-", need_cli=False))
