#!/usr/bin/env python3
"""Integration tests of airlockd's API document and metrics: src/server/openapi.json is a
structurally valid OpenAPI 3.1 document whose every schema is a valid JSON Schema 2020-12,
it names exactly the routes of the API contract and of the code's route table (both ways), it is
served as is with an ETag, the response check that test_server.py runs on every answer does
catch a mismatch, and /metrics is Prometheus text whose counters move by exactly the requests
made.

usage: test_openapi.py --airlockd PATH [-k SUBSTRING]

Prints `N passed, M failed` last and exits 1 on any failure.
"""
import copy
import json
import math
import os
import re
import sqlite3
import subprocess
import sys

import jsonschema

import openapi_check
import test_server
from test_server import Fail, Server, check

HANG = test_server.HANG
METHODS = openapi_check.METHODS
PUBLIC = {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"),
          ("GET", "/v1/openapi.json")}
# single sign-on of the web UI (docs/sso.md): the sign-in's own routes need no key
PUBLIC |= {("GET", "/auth/options"), ("GET", "/auth/login"), ("GET", "/auth/callback")}
# The API contract's routes (the API contract of docs/server.md), with the route table's parameter names.
CONTRACT = PUBLIC | {
    ("POST", "/v1/departments"), ("GET", "/v1/departments"),
    ("PUT", "/v1/departments/{d}/policy"),
    ("PATCH", "/v1/departments/{d}"), ("DELETE", "/v1/departments/{d}"),
    ("POST", "/v1/principals"), ("GET", "/v1/principals"),
    ("POST", "/v1/principals/{p}/keys"), ("DELETE", "/v1/principals/{p}/keys/{prefix}"),
    ("POST", "/v1/principals/{p}/roles"), ("DELETE", "/v1/principals/{p}/roles"),
    ("GET", "/v1/principals/{p}"), ("PATCH", "/v1/principals/{p}"),
    ("DELETE", "/v1/principals/{p}"),
    ("GET", "/v1/me"),
    ("POST", "/v1/connectors"), ("GET", "/v1/connectors"), ("GET", "/v1/connectors/{c}"),
    ("PATCH", "/v1/connectors/{c}"), ("DELETE", "/v1/connectors/{c}"),
    ("POST", "/v1/mounts"), ("GET", "/v1/mounts"), ("DELETE", "/v1/mounts/{m}"),
    ("POST", "/v1/webhooks"), ("GET", "/v1/webhooks"), ("DELETE", "/v1/webhooks/{id}"),
    ("POST", "/v1/templates"), ("GET", "/v1/templates"), ("GET", "/v1/templates/{t}"),
    ("POST", "/v1/templates/{t}/versions"), ("GET", "/v1/templates/{t}/versions/{v}"),
    ("POST", "/v1/templates/{t}/versions/{v}/submit"),
    ("POST", "/v1/templates/{t}/versions/{v}/approve"),
    ("POST", "/v1/templates/{t}/versions/{v}/reject"),
    ("POST", "/v1/templates/{t}/versions/{v}/revoke"),
    ("GET", "/v1/templates/{t}/versions/{v}/diff"),
    ("GET", "/v1/templates/{t}/versions/{v}/types"),
    ("GET", "/v1/templates/{t}/versions/{v}/replay"),
    ("POST", "/v1/runs"), ("GET", "/v1/runs"), ("GET", "/v1/runs/{id}"),
    ("POST", "/v1/runs/{id}/cancel"),
    ("POST", "/v1/runs/{id}/fork"),
    ("GET", "/v1/runs/{id}/files"), ("GET", "/v1/runs/{id}/files/{path+}"),
    ("GET", "/v1/runs/{id}/workspace.tar"), ("POST", "/v1/snapshots"),
    ("GET", "/v1/approvals"), ("POST", "/v1/approvals/{id}/approve"),
    ("POST", "/v1/approvals/{id}/deny"), ("POST", "/v1/approvals/{id}/answer"),
    ("GET", "/v1/audit"), ("GET", "/v1/audit/export"), ("GET", "/v1/audit/verify"),
    ("GET", "/v1/audit/checkpoint"),
    ("POST", "/v1/mcp"),
    ("POST", "/auth/logout"),
}
ERROR_CODES = ["UNAUTHENTICATED", "FORBIDDEN", "ADHOC_DISABLED", "NOT_FOUND",
               "METHOD_NOT_ALLOWED", "CONFLICT", "VERSION_NOT_APPROVED", "TEMPLATE_REVOKED",
               "PAYLOAD_TOO_LARGE", "INVALID_REQUEST", "INPUT_INVALID", "RATE_LIMITED",
               "INTERNAL"]
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def doc():
    return openapi_check.document()


def operations():
    for path, item in doc()["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item, item[method]


def schemas_in(node, where):
    """Every schema object inside parameters, request bodies, responses and headers."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "schema" and isinstance(v, dict):
                yield where, v
            else:
                yield from schemas_in(v, where + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from schemas_in(v, "%s/%d" % (where, i))


def refs_in(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from refs_in(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs_in(v)


# ---------------------------------------------------------------------------------------------
def t_document_structure(tmp):
    d = doc()
    check(re.fullmatch(r"3\.1\.\d+", d.get("openapi", "")), "openapi: %r" % d.get("openapi"))
    check(d.get("jsonSchemaDialect") == DIALECT, "jsonSchemaDialect: %r" % d.get("jsonSchemaDialect"))
    top = {"openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components",
           "security", "tags", "externalDocs"}
    check(set(d) <= top, "unknown top-level members: %r" % (set(d) - top))
    info = d.get("info", {})
    check(isinstance(info.get("title"), str) and isinstance(info.get("version"), str),
          "info needs title and version: %r" % info)
    check(d["components"]["securitySchemes"]["bearerAuth"] == {
        **d["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"},
        "bearerAuth is not an HTTP bearer scheme")
    check(d.get("security") == [{"bearerAuth": []}], "the default security is not bearerAuth")

    op_keys = {"tags", "summary", "description", "externalDocs", "operationId", "parameters",
               "requestBody", "responses", "callbacks", "deprecated", "security", "servers"}
    item_keys = set(METHODS) | {"$ref", "summary", "description", "servers", "parameters"}
    ids = set()
    for path, item in d["paths"].items():
        check(path.startswith("/"), "path %r" % path)
        check(set(item) <= item_keys, "%s: unknown members %r" % (path, set(item) - item_keys))
    for method, path, item, op in operations():
        what = "%s %s" % (method, path)
        check(set(op) <= op_keys, "%s: unknown members %r" % (what, set(op) - op_keys))
        check(op.get("operationId") and op["operationId"] not in ids, what + ": operationId")
        ids.add(op["operationId"])
        # path parameters: each {name} declared once, in path, required; nothing else in path
        declared = {}
        for p in item.get("parameters", []) + op.get("parameters", []):
            p = openapi_check.resolve(p)
            check(p.get("in") in ("path", "query", "header", "cookie") and p.get("name"),
                  "%s: parameter %r" % (what, p))
            check("schema" in p or "content" in p, "%s: parameter %s has no schema" % (what, p))
            if p["in"] == "path":
                check(p.get("required") is True, "%s: path parameter %s not required" %
                      (what, p["name"]))
                check(p["name"] not in declared, "%s: %s declared twice" % (what, p["name"]))
                declared[p["name"]] = p
        names = re.findall(r"\{([^}]+)\}", path)
        check(sorted(names) == sorted(declared), "%s: path parameters %r, declared %r" %
              (what, names, sorted(declared)))
        responses = op.get("responses")
        check(responses, what + ": no responses")
        for status, r in responses.items():
            check(status == "default" or re.fullmatch(r"[1-5][0-9][0-9]", status),
                  "%s: response key %r" % (what, status))
            r = openapi_check.resolve(r)
            check(isinstance(r.get("description"), str), "%s %s: no description" % (what, status))
            for media, m in r.get("content", {}).items():
                check("schema" in m, "%s %s %s: no schema" % (what, status, media))
        # the sign-in's routes answer a browser with a redirect (302) when they succeed
        check(any(s.startswith("2") or (path.startswith("/auth/") and s == "302")
                  for s in responses), what + ": no success response")
        if "requestBody" in op:
            rb = openapi_check.resolve(op["requestBody"])
            # a snapshot's body is the tar itself (docs/server.md "Workspaces")
            want = "application/x-tar" if (method, path) == ("POST", "/v1/snapshots") \
                else "application/json"
            check(want in rb.get("content", {}), what + ": body not " + want)
        # security: the public routes say so, every other one needs the bearer key
        if (method, path) in PUBLIC:
            check(op.get("security") == [], what + ": a public route must have security []")
        else:
            check(op.get("security", d["security"]) == [{"bearerAuth": []}],
                  what + ": not behind bearerAuth")
            for st, code in (("401", "UNAUTHENTICATED"), ("403", "FORBIDDEN")):
                check(st in op["responses"], "%s: %s not documented" % (what, st))
                body = {"error": {"code": code, "message": "m", "request_id": "req_" + "0" * 16}}
                openapi_check.validate(method, path, int(st), body)
    for ref in set(refs_in(d)):
        try:
            openapi_check.resolve({"$ref": ref})
        except (KeyError, TypeError) as e:
            raise Fail("unresolved $ref %s (%s)" % (ref, e))
    check(d["components"]["schemas"]["ErrorCode"]["enum"] == ERROR_CODES,
          "the error codes are not the contract's")


def t_schemas_are_2020_12(tmp):
    d = doc()
    meta = jsonschema.Draft202012Validator
    n = 0
    for name, s in d["components"]["schemas"].items():
        try:
            meta.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            raise Fail("components/schemas/%s: %s" % (name, e.message))
        n += 1
    for where, s in schemas_in(d["paths"], "paths"):
        try:
            meta.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            raise Fail("%s: %s" % (where, e.message))
        n += 1
    for where, s in schemas_in(d["components"]["responses"], "responses"):
        meta.check_schema(s)
        n += 1
    check(n > 50, "only %d schemas found: the walk is broken" % n)
    # the check is not vacuous: a broken schema is refused
    try:
        meta.check_schema({"type": "strnig"})
    except jsonschema.exceptions.SchemaError:
        pass
    else:
        raise Fail("check_schema accepted an invalid schema")


def t_document_is_the_contract(tmp):
    ops = {(m, p) for m, p, _, _ in operations()}
    check(ops == CONTRACT, "document vs API contract: missing %r, extra %r" %
          (sorted(CONTRACT - ops), sorted(ops - CONTRACT)))


def t_routes_in_code_match_document(tmp):
    p = subprocess.run([test_server.AIRLOCKD, "--print-routes"], capture_output=True,
                       timeout=HANG)
    check(p.returncode == 0, "--print-routes: %r" % p.stderr)
    # the web UI's rows (pages and assets, src/server/ui.c) are not the API: not in the document
    rows = [r for r in json.loads(p.stdout) if not r["ui"]]
    ui = [r for r in json.loads(p.stdout) if r["ui"]]
    check(ui and all(r["scope"] == "public" and not r["path"].startswith("/v1/") for r in ui),
          "UI rows: %r" % ui)
    code = {(r["method"], r["path"]) for r in rows}
    public = {(r["method"], r["path"]) for r in rows if r["scope"] == "public"}
    ops = {(m, p) for m, p, _, _ in operations()}
    missing = code - ops
    check(not missing, "routes of the code missing from openapi.json: %r" % sorted(missing))
    check(public <= PUBLIC, "public in the code, not in the document: %r" % (public - PUBLIC))
    extra = ops - code
    check(not extra, "routes of openapi.json not in the code's route table: %r" % sorted(extra))


get = test_server.ui_get  # a GET with its raw body and headers


def t_document_served(tmp):
    s = Server(os.path.join(tmp, "var"))
    try:
        st, h, body = get(s, "/v1/openapi.json")
        check(st == 200, "status %d" % st)
        check(h.get("content-type", "").startswith("application/json"), "type %r" % h)
        with open(openapi_check.DOC_PATH, "rb") as f:
            check(body == f.read(), "the served document is not src/server/openapi.json")
        etag = h.get("etag", "")
        check(re.fullmatch(r'"[0-9a-f]{32}"', etag), "ETag %r" % etag)
        st2, h2, body2 = get(s, "/v1/openapi.json", {"Authorization": "Bearer nonsense"})
        check(st2 == 200 and h2.get("etag") == etag and body2 == body,
              "a second fetch differs (or a bad key is refused on a public route)")
    finally:
        s.kill()


def t_every_run_says_how_often_it_was_recovered(tmp):
    """A run object always has "recovered" (0 for a run that never went on from its journal)."""
    run = openapi_check.document()["components"]["schemas"]["Run"]
    check("recovered" in run["required"], "Run does not require recovered")
    check(run["properties"]["recovered"]["type"] == "integer", "recovered: %r" %
          run["properties"]["recovered"])


def t_response_check_catches_mismatch(tmp):
    """The hook in test_server.Server.request fails a test whose answer breaks the document."""
    s = Server(os.path.join(tmp, "var"))
    saved = copy.deepcopy(openapi_check.document())
    try:
        k = s.admin_key()
        st, me, _ = s.request("GET", "/v1/me", key=k)
        check(st == 200 and me["name"] == "admin", "GET /v1/me: %d %r" % (st, me))
        # the document now demands a member airlockd does not send
        openapi_check.document()["components"]["schemas"]["Principal"]["required"].append("nope")
        openapi_check._validators.clear()
        try:
            s.request("GET", "/v1/me", key=k)
        except Fail as e:
            check("openapi.json" in str(e) and "nope" in str(e), "message: %s" % e)
        else:
            raise Fail("an answer missing a required member passed the check")
        # an undocumented status fails too
        del openapi_check.document()["paths"]["/v1/me"]["get"]["responses"]["default"]
        del openapi_check.document()["paths"]["/v1/me"]["get"]["responses"]["401"]
        try:
            s.request("GET", "/v1/me", key="wrong")
        except Fail as e:
            check("401" in str(e), "message: %s" % e)
        else:
            raise Fail("an undocumented status passed the check")
    finally:
        openapi_check._doc.clear()
        openapi_check._doc.update(saved)
        openapi_check._validators.clear()
        s.kill()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|'
                    r'\\["\\n])*",?)*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"')


def parse_metrics(text):
    """{(name, ((label, value), ...)): float}; every line must parse, TYPE before samples."""
    check(text.endswith("\n"), "the exposition does not end with a newline")
    types = {}
    samples = {}
    for line in text.split("\n")[:-1]:
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)", line)
            check(m, "comment line does not parse: %r" % line)
            if m.group(1) == "TYPE":
                check(m.group(3) in ("counter", "gauge", "histogram"), "type: %r" % line)
                check(m.group(2) not in types, "TYPE twice: %r" % line)
                types[m.group(2)] = m.group(3)
            continue
        m = SAMPLE.match(line)
        check(m, "sample line does not parse: %r" % line)
        name = m.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        check(family in types, "sample before its TYPE: %r" % line)
        labels = tuple(LABEL.findall(m.group(3) or ""))
        value = float(m.group(4))
        check(not math.isnan(value) or types[family] == "gauge", "NaN counter: %r" % line)
        key = (name, labels)
        check(key not in samples, "series twice: %r" % line)
        samples[key] = value
    return types, samples


def t_metrics_scrape(tmp):
    d = os.path.join(tmp, "var")
    s = Server(d)
    try:
        k = s.admin_key()
        st, h, body = get(s, "/metrics")
        check(st == 200, "status %d" % st)
        check(h.get("content-type", "").startswith("text/plain; version=0.0.4"), "type %r" % h)
        types, before = parse_metrics(body.decode())
        for fam, t in (("airlock_http_requests_total", "counter"), ("airlock_runs_total", "counter"),
                       ("airlock_run_duration_seconds", "histogram"),
                       ("airlock_host_calls_total", "counter"),
                       ("airlock_approvals_pending", "gauge"), ("airlock_workers_warm", "gauge"),
                       ("airlock_runs_active", "gauge"), ("airlock_audit_records", "gauge")):
            check(types.get(fam) == t, "family %s: %r" % (fam, types.get(fam)))
        for _ in range(7):
            check(s.request("GET", "/v1/me", key=k)[0] == 200, "me")
        for _ in range(2):
            check(s.request("GET", "/v1/me", key="bad")[0] == 401, "bad key")
        for path in ("/nope", '/v1/"x\\', "/v1/me/"):
            check(s.request("GET", path)[0] == 404, path)
        check(s.request("DELETE", "/v1/me")[0] == 405, "405")
        st, h, body = get(s, "/metrics")
        _, after = parse_metrics(body.decode())

        def moved(route, code):
            key = ("airlock_http_requests_total", (("route", route), ("code", code)))
            return after.get(key, 0) - before.get(key, 0)
        check(moved("/v1/me", "200") == 7, "/v1/me 200 moved %r" % moved("/v1/me", "200"))
        check(moved("/v1/me", "401") == 2, "/v1/me 401 moved %r" % moved("/v1/me", "401"))
        check(moved("unmatched", "404") == 3, "404 moved %r" % moved("unmatched", "404"))
        check(moved("unmatched", "405") == 1, "405 moved %r" % moved("unmatched", "405"))
        check(moved("/metrics", "200") == 1, "the first scrape counted %r" % moved("/metrics", "200"))
        routes = {dict(l)["route"] for (n, l) in after if n == "airlock_http_requests_total"}
        check(routes <= {"/v1/me", "unmatched", "/metrics"}, "routes from paths: %r" % routes)
        # the histogram is cumulative and ends at its count
        buckets = [(float(dict(l)["le"]), v) for (n, l), v in after.items()
                   if n == "airlock_run_duration_seconds_bucket"]
        buckets.sort()
        check(len(buckets) == 16 and buckets[0][0] == 0.001 and buckets[-2][0] == 60 and
              math.isinf(buckets[-1][0]), "buckets %r" % buckets)
        check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), "not cumulative")
        check(buckets[-1][1] == after[("airlock_run_duration_seconds_count", ())], "+Inf != count")
        # the audit gauge is the log's last seq
        db = sqlite3.connect(os.path.join(d, "airlock.db"))
        try:
            last = db.execute("SELECT max(seq) FROM audit").fetchone()[0]
        finally:
            db.close()
        check(after[("airlock_audit_records", ())] == last,
              "audit gauge %r, last seq %r" % (after[("airlock_audit_records", ())], last))
        check(last >= 3, "the refusals were not audited")
    finally:
        s.kill()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]


def main():
    return test_server.run_tests(TESTS, "airlockd-openapi-", need_cli=False)


if __name__ == "__main__":
    sys.exit(main())
