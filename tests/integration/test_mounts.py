#!/usr/bin/env python3
"""Integration tests of airlockd's mounts and of the workspace manifest on template versions
(docs/server.md "Mounts", "Templates and versions"): POST/GET/DELETE /v1/mounts, the config's
mounts.local_roots (an admin key cannot mount /etc, nor reach out through `..` or a symlink),
the sealed secret access key (a canary found in no answer, audit record, log line or the
database), who sees which mount, a manifest's entries checked against the mounts of the
version's department, the manifest in the version's digest (a version without one keeps the
digest it always had), in GET and in the diff, and the 409 of deleting a mount an approved
version names.

usage: test_mounts.py --airlockd PATH [-k SUBSTRING]   (AIRLOCK_TEST_DATABASE: on PostgreSQL)
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_server as ts  # noqa: E402
from test_server import audit_rows, check, db_bytes, db_rows, error_of  # noqa: E402

CANARY = "canary-SECRET-7f3a9c1e5b"


def start(tmp, roots=None, var="var"):
    """airlockd in tmp/VAR, with mounts.local_roots = roots when given."""
    d = os.path.join(tmp, var)
    args = ["--listen", "127.0.0.1:0", "--data-dir", d]
    if roots is not None:
        cfg = os.path.join(tmp, "airlockd.json")
        with open(cfg, "w") as f:
            json.dump({"mounts": {"local_roots": roots}}, f)
        args += ["--config", cfg]
    s = ts.Server(d, args=args)
    check(s.port, "airlockd did not start: %s" % s.stderr())
    return s, d


def setup(s, k, depts=("finance", "hr")):
    for dept in depts:
        check(s.request("POST", "/v1/departments", {"name": dept}, key=k)[0] == 201, dept)


def principal(s, k, name, role, dept):
    st, doc, _ = s.request("POST", "/v1/principals", {"name": name}, key=k)
    check(st == 201, "principal %s: %r" % (name, doc))
    st, _, _ = s.request("POST", "/v1/principals/%s/roles" % name,
                         {"role": role, "department": dept}, key=k)
    check(st == 201, "grant %s" % name)
    return doc["key"]


def s3_body(name, dept, **over):
    body = {"name": name, "department": dept, "kind": "s3", "endpoint": "http://127.0.0.1:9/",
            "bucket": "finance-lake", "region": "us-east-1", "access_key_id": "AKIDEXAMPLE",
            "secret_access_key": CANARY + "-" + name}
    body.update(over)
    return body


def mkdirs(tmp):
    """tmp/files (the root) with handbook/ and inner -> handbook, tmp/outside, and in the root
    out -> tmp/outside and etc -> /etc."""
    root = os.path.join(tmp, "files")
    outside = os.path.join(tmp, "outside")
    for p in (os.path.join(root, "handbook", "policies"), outside):
        os.makedirs(p)
    os.symlink(os.path.join(root, "handbook"), os.path.join(root, "inner"))
    os.symlink(outside, os.path.join(root, "out"))
    os.symlink("/etc", os.path.join(root, "etc"))
    with open(os.path.join(root, "file"), "w") as f:
        f.write("not a directory")
    return root, outside


# --------------------------------------------------------------------------------------------- local
def t_local_paths(tmp):
    root, outside = mkdirs(tmp)
    s, d = start(tmp, [root])
    try:
        k = s.admin_key()
        setup(s, k)

        def post(name, path):
            return s.request("POST", "/v1/mounts", {"name": name, "department": "finance",
                                                    "kind": "local", "path": path}, key=k)[:2]

        refused = [
            "/etc",                                    # outside every root
            "etc",                                     # relative
            root + "/handbook/../../outside",          # .. out of the root
            root + "/../outside",
            root + "/handbook/..",
            root + "/./handbook",
            root + "//handbook",
            root + "/handbook/",                       # trailing /
            root + "/out",                             # a symlink under the root that leads out
            root + "/etc",                             # ... to /etc
            root + "/missing",                         # no such directory
            root + "/file",                            # not a directory
            outside,
            "/",
            "",
        ]
        for i, path in enumerate(refused):
            st, doc = post("bad%d" % i, path)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("path" in doc["error"]["message"], "message: %r" % doc)
        st, doc = post("nul", root + "/handbook\u0000x")
        error_of(st, doc, 400, "INVALID_REQUEST")
        check(db_rows(d, "SELECT name FROM mounts") == [], "a refused mount was stored")

        st, doc = post("handbook", root + "/handbook")
        check(st == 201 and doc["kind"] == "local" and
              doc["path"] == os.path.realpath(root + "/handbook") and doc["endpoint"] is None and
              doc["access_key_id"] is None and doc["created_by"] == "admin", "created: %r" % doc)
        # a symlink that stays under the root: kept resolved
        st, doc = post("inner", root + "/inner/policies")
        check(st == 201 and doc["path"] == os.path.realpath(root + "/handbook/policies"),
              "inner: %r" % doc)
        # the root itself may be mounted
        check(post("whole", root)[0] == 201, "the root itself")
        error_of(*post("handbook", root + "/handbook"), 409, "CONFLICT")
        st, doc = s.request("POST", "/v1/mounts", {"name": "x", "department": "nowhere",
                                                   "kind": "local", "path": root}, key=k)[:2]
        error_of(st, doc, 400, "INVALID_REQUEST")
        # members of the other kind, a wrong kind, a name that is no name
        for body in ({"name": "y", "department": "finance", "kind": "local", "path": root,
                      "bucket": "b-1"},
                     {"name": "y", "department": "finance", "kind": "local"},
                     {"name": "y", "department": "finance", "kind": "nfs", "path": root},
                     {"name": "Y!", "department": "finance", "kind": "local", "path": root},
                     {"name": "y", "department": "finance", "kind": "local", "path": root,
                      "extra": 1}):
            error_of(*s.request("POST", "/v1/mounts", body, key=k)[:2], 400, "INVALID_REQUEST")
        recs = audit_rows(d, "mount.created")
        check([r["subject"] for r in recs] == ["handbook", "inner", "whole"] and
              recs[0]["department"] == "finance" and
              recs[0]["details"] == {"department": "finance", "kind": "local",
                                     "path": os.path.realpath(root + "/handbook")},
              "mount.created records: %r" % recs)
    finally:
        s.kill()


def t_no_local_roots_no_local_mounts(tmp):
    root, _ = mkdirs(tmp)
    for i, roots in enumerate((None, [])):
        s, _ = start(tmp, roots, "var%d" % i)
        try:
            k = s.admin_key()
            setup(s, k, ("finance",))
            st, doc, _ = s.request("POST", "/v1/mounts", {"name": "h", "department": "finance",
                                                          "kind": "local", "path": root}, key=k)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("local_roots" in doc["error"]["message"], "message: %r" % doc)
        finally:
            s.kill()


def t_config_roots_checked(tmp):
    # a root that is no directory refuses to start (exit 2), naming it
    for roots in (["relative/dir"], [os.path.join(tmp, "missing")], "/tmp", [7]):
        cfg = os.path.join(tmp, "bad.json")
        with open(cfg, "w") as f:
            json.dump({"mounts": {"local_roots": roots}}, f)
        s = ts.Server(os.path.join(tmp, "var"), args=["--listen", "127.0.0.1:0", "--data-dir",
                                                      os.path.join(tmp, "var"), "--config", cfg])
        try:
            check(s.port is None and s.proc.wait(timeout=ts.HANG) == 2 and
                  "mounts" in s.stderr(), "config %r: %s" % (roots, s.stderr()))
        finally:
            s.kill()


# --------------------------------------------------------------------------------------------- s3
def t_s3_secret_sealed(tmp):
    s, d = start(tmp)
    try:
        k = s.admin_key()
        setup(s, k)
        answers = []
        st, doc, _ = s.request("POST", "/v1/mounts", s3_body("finance-lake", "finance"), key=k)
        answers.append(doc)
        check(st == 201 and doc == {
            "name": "finance-lake", "department": "finance", "kind": "s3", "path": None,
            "endpoint": "http://127.0.0.1:9/", "bucket": "finance-lake", "region": "us-east-1",
            "access_key_id": "AKIDEXAMPLE", "created": doc["created"], "created_by": "admin"},
            "created: %r" % doc)
        refused = [
            s3_body("b", "finance", endpoint="ftp://host/"),
            s3_body("b", "finance", endpoint="http://user:" + CANARY + "@host/"),
            s3_body("b", "finance", endpoint="http://host/?X-Amz-Credential=" + CANARY),
            s3_body("b", "finance", endpoint="not a url"),
            s3_body("b", "finance", bucket="A_Bucket"),
            s3_body("b", "finance", bucket="ab"),
            s3_body("b", "finance", region="us east"),
            s3_body("b", "finance", access_key_id=""),
            s3_body("b", "finance", secret_access_key=""),
            s3_body("b", "finance", secret_access_key=CANARY + " with a space"),
            s3_body("b", "finance", secret_access_key=CANARY + "\n"),
            s3_body("b", "finance", path="/srv"),
            {k2: v for k2, v in s3_body("b", "finance").items() if k2 != "secret_access_key"},
            {k2: v for k2, v in s3_body("b", "finance").items() if k2 != "endpoint"},
        ]
        for body in refused:
            st, doc, _ = s.request("POST", "/v1/mounts", body, key=k)
            error_of(st, doc, 400, "INVALID_REQUEST")
            answers.append(doc)
        st, doc, _ = s.request("POST", "/v1/mounts", s3_body("finance-lake", "finance"), key=k)
        error_of(st, doc, 409, "CONFLICT")
        answers.append(doc)
        st, doc, _ = s.request("GET", "/v1/mounts", key=k)
        check(st == 200 and [m["name"] for m in doc] == ["finance-lake"], "list: %r" % doc)
        answers.append(doc)
        st, doc, _ = s.request("GET", "/v1/audit?limit=1000", key=k)
        check(st == 200, "audit: %r" % doc)
        answers.append(doc)
        export = s.raw_get("/v1/audit/export", k)
        check(export[0] == 200, "export: %r" % (export,))
        # the canary is nowhere a client, the audit log, the log or the database shows
        for a in answers:
            check(CANARY not in json.dumps(a), "the secret in an answer: %r" % a)
        check(CANARY.encode() not in export[2], "the secret in the audit export")
        rec = audit_rows(d, "mount.created")
        check(len(rec) == 1 and rec[0]["details"] == {
            "department": "finance", "kind": "s3", "endpoint": "http://127.0.0.1:9/",
            "bucket": "finance-lake", "region": "us-east-1", "access_key_id": "AKIDEXAMPLE"},
            "mount.created: %r" % rec)
        sealed = db_rows(d, "SELECT secret FROM mounts WHERE name = ?", ("finance-lake",))
        check(len(sealed) == 1 and sealed[0][0].startswith("v1:"), "stored: %r" % sealed)
        s.stop()
        check(CANARY not in s.stderr(), "the secret in airlockd's log")
        check(CANARY.encode() not in db_bytes(d), "the secret in the database in the clear")
    finally:
        s.kill()


def t_list_follows_the_department(tmp):
    root, _ = mkdirs(tmp)
    s, d = start(tmp, [root])
    try:
        k = s.admin_key()
        setup(s, k)
        check(s.request("POST", "/v1/mounts", s3_body("lake", "finance"), key=k)[0] == 201, "lake")
        check(s.request("POST", "/v1/mounts", {"name": "hr-files", "department": "hr",
                                               "kind": "local", "path": root},
                        key=k)[0] == 201, "hr-files")
        keys = {"finance-agent": principal(s, k, "fa", "agent", "finance"),
                "finance-auditor": principal(s, k, "fu", "auditor", "finance"),
                "hr-author": principal(s, k, "ha", "author", "hr"),
                "everywhere-auditor": principal(s, k, "eu", "auditor", "*"),
                "admin": k}
        want = {"finance-agent": ["lake"], "finance-auditor": ["lake"], "hr-author": ["hr-files"],
                "everywhere-auditor": ["hr-files", "lake"], "admin": ["hr-files", "lake"]}
        for who, key in keys.items():
            st, doc, _ = s.request("GET", "/v1/mounts", key=key)
            check(st == 200 and [m["name"] for m in doc] == want[who],
                  "%s sees %r" % (who, doc))
            check(all("secret_access_key" not in m and "secret" not in m for m in doc),
                  "a secret member: %r" % doc)
        # only an admin registers or deletes
        for who in ("finance-agent", "finance-auditor", "hr-author", "everywhere-auditor"):
            error_of(*s.request("POST", "/v1/mounts", s3_body("x", "finance"),
                                key=keys[who])[:2], 403, "FORBIDDEN")
            error_of(*s.request("DELETE", "/v1/mounts/lake", key=keys[who])[:2], 403,
                     "FORBIDDEN")
        check(db_rows(d, "SELECT count(*) FROM mounts")[0][0] == 2, "a refused change was made")
    finally:
        s.kill()


# --------------------------------------------------------------------------------------------- versions
def jcs_digest(content):
    """docs/server.md's digest: sha256 over the RFC 8785 form (ASCII keys, integers here)."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def version_world(s, k, root):
    """finance and hr, an author and an approver of finance, template t in finance, mounts:
    handbook (local) and lake (s3) of finance, hr-lake (s3) of hr."""
    setup(s, k)
    author = principal(s, k, "alice", "author", "finance")
    approver = principal(s, k, "bob", "approver", "finance")
    check(s.request("POST", "/v1/templates", {"name": "t", "department": "finance"},
                    key=author)[0] == 201, "template")
    for body in ({"name": "handbook", "department": "finance", "kind": "local", "path": root},
                 s3_body("lake", "finance"), s3_body("hr-lake", "hr")):
        st, doc, _ = s.request("POST", "/v1/mounts", body, key=k)
        check(st == 201, "mount %s: %r" % (body["name"], doc))
    return author, approver


MANIFEST = {"version": 1, "root": "/workspace",
            "entries": {"README.md": {"type": "file", "content": "read me"},
                        "in": {"type": "dir"},
                        "docs": {"type": "local_dir", "mount": "handbook", "prefix": "policies/"},
                        "lake": {"type": "s3_mount", "mount": "lake", "prefix": "2026/"},
                        "out/export": {"type": "s3_mount", "mount": "lake", "prefix": "reports/",
                                       "read_only": False}},
            "outputs": ["out/"],
            "limits": {"bytes": 67108864, "files": 1000, "file_bytes": 16777216}}


def with_entry(name, entry):
    m = json.loads(json.dumps(MANIFEST))
    m["entries"][name] = entry
    return m


def t_version_workspace_checked(tmp):
    root, _ = mkdirs(tmp)
    s, d = start(tmp, [root])
    try:
        k = s.admin_key()
        author, _ = version_world(s, k, root)

        def post(ws):
            return s.request("POST", "/v1/templates/t/versions",
                             {"source": "return 1", "workspace": ws}, key=author)[:2]

        bad = [
            (with_entry("x", {"type": "s3_mount", "mount": "nowhere"}), "nowhere"),
            # another department's mount is not there
            (with_entry("x", {"type": "s3_mount", "mount": "hr-lake"}), "hr-lake"),
            # the kind must match the entry's type
            (with_entry("x", {"type": "local_dir", "mount": "lake"}), "kind"),
            (with_entry("x", {"type": "s3_mount", "mount": "handbook"}), "kind"),
            (with_entry("x", {"type": "s3_mount"}), "\"x\""),
            (with_entry("x", {"type": "local_dir", "mount": 7}), "\"x\""),
            (with_entry("x", "a string"), "\"x\""),
            (dict(MANIFEST, entries=[]), "entries"),
        ]
        for ws, word in bad:
            st, doc = post(ws)
            error_of(st, doc, 400, "INVALID_REQUEST")
            check("workspace" in doc["error"]["message"] and word in doc["error"]["message"],
                  "message for %r: %r" % (word, doc))
        for ws in ("a string", [MANIFEST], None):
            error_of(*post(ws), 400, "INVALID_REQUEST")
        check(db_rows(d, "SELECT count(*) FROM versions")[0][0] == 0, "a refused version")
        st, doc = post(MANIFEST)
        check(st == 201 and doc["workspace"] == MANIFEST, "created: %r" % doc)
        # the entry is named in the message as given
        st, doc = post(with_entry("deep/er", {"type": "s3_mount", "mount": "hr-lake"}))
        error_of(st, doc, 400, "INVALID_REQUEST")
        check("deep/er" in doc["error"]["message"], "entry named: %r" % doc)
    finally:
        s.kill()


def t_version_workspace_digest_and_diff(tmp):
    root, _ = mkdirs(tmp)
    s, d = start(tmp, [root])
    try:
        k = s.admin_key()
        author, approver = version_world(s, k, root)
        base = {"source": "return 1", "functions": ["crm.lookup"], "limits": {"timeout_ms": 100}}
        content = {"source": "return 1", "language": "js", "input_schema": {},
                   "functions": ["crm.lookup"], "autonomy": "autonomous",
                   "limits": {"timeout_ms": 100}}
        # without a workspace: the digest of before workspaces, and "workspace": null
        st, v1, _ = s.request("POST", "/v1/templates/t/versions", base, key=author)
        check(st == 201 and v1["workspace"] is None and v1["digest"] == jcs_digest(content),
              "v1: %r, want %s" % (v1, jcs_digest(content)))
        st, v2, _ = s.request("POST", "/v1/templates/t/versions", dict(base, workspace=MANIFEST),
                              key=author)
        check(st == 201 and v2["digest"] == jcs_digest(dict(content, workspace=MANIFEST)) and
              v2["digest"] != v1["digest"], "v2: %r" % v2)
        # the same manifest with its members in another order: the same digest
        reordered = json.loads(json.dumps(MANIFEST), object_pairs_hook=lambda p: dict(p[::-1]))
        st, v3, _ = s.request("POST", "/v1/templates/t/versions", dict(base, workspace=reordered),
                              key=author)
        check(st == 201 and v3["digest"] == v2["digest"], "reordered: %r" % v3)
        st, diff, _ = s.request("GET", "/v1/templates/t/versions/3/diff?from=2", key=approver)
        check(st == 200 and diff["changes"]["workspace"] == {"changed": False},
              "the same manifest reordered is no change: %r" % diff)
        st, got, _ = s.request("GET", "/v1/templates/t/versions/2", key=approver)
        check(st == 200 and got["workspace"] == MANIFEST and got["digest"] == v2["digest"],
              "GET: %r" % got)
        rec = [r for r in audit_rows(d, "version.create") if r["details"]["version"] == 2]
        check(len(rec) == 1 and rec[0]["details"]["workspace"] == MANIFEST and
              "workspace" not in [r for r in audit_rows(d, "version.create")
                                  if r["details"]["version"] == 1][0]["details"],
              "version.create: %r" % rec)
        # the diff: from nothing to a manifest, and equal manifests
        st, diff, _ = s.request("GET", "/v1/templates/t/versions/2/diff?from=1", key=approver)
        check(st == 200 and diff["changes"]["workspace"] == {"changed": True, "from": None,
                                                             "to": MANIFEST},
              "diff 1 -> 2: %r" % diff)
        st, diff, _ = s.request("GET", "/v1/templates/t/versions/1/diff?from=2", key=approver)
        check(st == 200 and diff["changes"]["workspace"] == {"changed": True, "from": MANIFEST,
                                                             "to": None},
              "diff 2 -> 1: %r" % diff)
        st, diff, _ = s.request("GET", "/v1/templates/t/versions/2/diff?from=2", key=approver)
        check(st == 200 and diff["changes"]["workspace"] == {"changed": False},
              "diff 2 -> 2: %r" % diff)
        changed = with_entry("docs", {"type": "local_dir", "mount": "handbook", "prefix": "hr/"})
        st, v4, _ = s.request("POST", "/v1/templates/t/versions", dict(base, workspace=changed),
                              key=author)
        check(st == 201, "v4: %r" % v4)
        st, diff, _ = s.request("GET", "/v1/templates/t/versions/4/diff?from=2", key=approver)
        check(st == 200 and diff["changes"]["workspace"] == {"changed": True, "from": MANIFEST,
                                                             "to": changed},
              "diff 2 -> 4: %r" % diff)
        # the review page has the code that shows the manifest
        st, page, _ = s.request("GET", "/ui/pages/templates.js")
        check(st == 200 and "workspaceCard(ver.workspace)" in page, "review page")
    finally:
        s.kill()


# --------------------------------------------------------------------------------------------- delete
def t_delete(tmp):
    root, _ = mkdirs(tmp)
    s, d = start(tmp, [root])
    try:
        k = s.admin_key()
        author, approver = version_world(s, k, root)
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": "return 1", "workspace": MANIFEST}, key=author)
        check(st == 201, "v1: %r" % doc)
        # a draft naming a mount does not hold it; an approved version does
        for path in ("submit", "approve"):
            check(s.request("POST", "/v1/templates/t/versions/1/" + path, {},
                            key=author if path == "submit" else approver)[0] == 200, path)
        for name in ("lake", "handbook"):
            st, doc, _ = s.request("DELETE", "/v1/mounts/" + name, key=k)
            error_of(st, doc, 409, "CONFLICT")
            check("version 1 of template t" in doc["error"]["message"], "message: %r" % doc)
        # hr's mount of the same kind is not named: deleted
        st, doc, _ = s.request("DELETE", "/v1/mounts/hr-lake", key=k)
        check(st == 200 and doc == {"name": "hr-lake", "deleted": True}, "delete: %r" % doc)
        error_of(*s.request("DELETE", "/v1/mounts/hr-lake", key=k)[:2], 404, "NOT_FOUND")
        error_of(*s.request("DELETE", "/v1/mounts/ghost", key=k)[:2], 404, "NOT_FOUND")
        # revoked, the version no longer holds its mounts
        check(s.request("POST", "/v1/templates/t/versions/1/revoke", {"reason": "done"},
                        key=k)[0] == 200, "revoke")
        st, doc, _ = s.request("DELETE", "/v1/mounts/lake", key=k)
        check(st == 200 and doc["deleted"] is True, "delete after revoke: %r" % doc)
        names = [m["name"] for m in s.request("GET", "/v1/mounts", key=k)[1]]
        check(names == ["handbook"], "left: %r" % names)
        recs = audit_rows(d, "mount.deleted")
        check([(r["subject"], r["department"], r["details"]) for r in recs] == [
            ("hr-lake", "hr", {"department": "hr", "kind": "s3"}),
            ("lake", "finance", {"department": "finance", "kind": "s3"})],
            "mount.deleted records: %r" % recs)
        # a version naming a deleted mount can no longer be written
        st, doc, _ = s.request("POST", "/v1/templates/t/versions",
                               {"source": "return 1", "workspace": MANIFEST}, key=author)
        error_of(st, doc, 400, "INVALID_REQUEST")
    finally:
        s.kill()


TESTS = [(n[2:], f) for n, f in sorted(globals().items()) if n.startswith("t_") and callable(f)]

if __name__ == "__main__":
    sys.exit(ts.run_tests(TESTS, "airlockd-mounts-", need_cli=False))
