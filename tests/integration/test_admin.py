#!/usr/bin/env python3
"""Integration tests of airlockd's administration (docs/server.md "Routes"): a principal's
identity and disabled flag (PATCH /v1/principals/{p}, POST /v1/principals with an identity), a
disabled principal's keys refused, one principal read with its grants, principals deleted.

usage: test_admin.py --airlockd PATH [-k SUBSTRING]   (AIRLOCK_TEST_DATABASE: on PostgreSQL)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
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


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]

if __name__ == "__main__":
    sys.exit(ts.run_tests(TESTS, "airlockd-admin-", need_cli=False))
