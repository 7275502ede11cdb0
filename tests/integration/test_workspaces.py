#!/usr/bin/env python3
"""Workspaces on airlockd's runs (docs/server.md "Workspaces"): snapshots uploaded with
POST /v1/snapshots, "workspace" on POST /v1/runs (a manifest, from_run, from_snapshot) with its
visibility checks, the run's workspace recorded with its start, and a run's outputs served by
GET /v1/runs/{id}/files, .../files/{path+} and .../workspace.tar to whoever may see the run.

usage: test_workspaces.py --airlockd PATH --cli PATH [-k SUBSTRING]
"""
import hashlib
import http.client
import http.server
import io
import json
import os
import sys
import tarfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import HANG, audit_rows, check, db_exec, db_rows  # noqa: E402


def tar_of(files):
    """A ustar archive of {name: bytes}."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def raw(w, method, path, key, body=None, ctype="application/x-tar"):
    """A request whose answer may be bytes: (status, content type, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", w.s.port, timeout=HANG)
    h = {"Authorization": "Bearer " + key}
    if body is not None:
        h["Content-Type"] = ctype
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read()
    finally:
        conn.close()


def upload(w, data, key=None, department="finance"):
    st, ctype, body = raw(w, "POST", "/v1/snapshots?department=" + department,
                          key or w.keys["agent-7"], data)
    return st, json.loads(body)


def world(tmp):
    w = tr.World(tmp, adhoc=True)
    # another agent of finance: agent-7's runs and snapshots are not its own
    w.keys["agent-8"] = w.ok("POST", "/v1/principals", {"name": "agent-8", "kind": "user"},
                             w.admin, 201)["key"]
    w.ok("POST", "/v1/principals/agent-8/roles", {"role": "agent", "department": "finance"},
         w.admin, 201)
    return w


def adhoc(w, workspace, key=None, wait=False):
    body = {"source": "return 1", "department": "finance", "workspace": workspace,
            "wait": wait}
    return w.run(body, key=key)


# ---------------------------------------------------------------------------------------------
def t_snapshot_upload(tmp):
    """An agent uploads a tar for its department: 201 with its id and the SHA-256 of the bytes,
    kept once (a second upload of the same bytes shares them), audited as snapshot.create
    without the bytes. Refused: no or a malformed department (400), one where the caller is no
    agent (403), a body that is no tar or one a workspace would refuse (400), one past
    snapshot_limit_bytes (413), which is the only route's cap above body_limit_bytes."""
    w = world(tmp)
    try:
        data = tar_of({"in/a.csv": b"id,amount\n1,5\n", "notes.md": b"# notes\n"})
        st, doc = upload(w, data)
        check(st == 201, "upload: %d %r" % (st, doc))
        check(doc["id"].startswith("snap_") and len(doc["id"]) == 37, "id: %r" % doc)
        check(doc["sha256"] == hashlib.sha256(data).hexdigest() and doc["bytes"] == len(data)
              and doc["department"] == "finance", "snapshot: %r" % doc)
        st2, doc2 = upload(w, data)
        check(st2 == 201 and doc2["id"] != doc["id"] and doc2["sha256"] == doc["sha256"],
              "second upload: %r" % doc2)
        blobs = db_rows(w.dir, "SELECT count(*) FROM workspace_blobs WHERE sha256 = ?",
                        (doc["sha256"],))
        check(blobs == [(1,)], "the bytes kept once: %r" % blobs)
        recs = [r for r in audit_rows(w.dir, "snapshot.create") if r["subject"] == doc["id"]]
        check(len(recs) == 1 and recs[0]["actor"] == "agent-7" and
              recs[0]["department"] == "finance" and
              recs[0]["details"] == {"snapshot": doc["id"], "department": "finance",
                                     "principal": "agent-7", "sha256": doc["sha256"],
                                     "bytes": len(data)}, "snapshot.create: %r" % recs)

        for path, key, want in (("/v1/snapshots", "agent-7", 400),
                                ("/v1/snapshots?department=", "agent-7", 400),
                                ("/v1/snapshots?department=Fin%20ance", "agent-7", 400),
                                ("/v1/snapshots?department=other", "agent-7", 403),
                                ("/v1/snapshots?department=finance", "eve", 403),
                                ("/v1/snapshots?department=finance", "bob", 403)):
            st, _, body = raw(w, "POST", path, w.keys[key], data)
            check(st == want, "%s as %s: %d %r, want %d" % (path, key, st, body, want))
        escape = tar_of({"../escape.txt": b"x"})
        link = io.BytesIO()
        with tarfile.open(fileobj=link, mode="w", format=tarfile.USTAR_FORMAT) as t:
            info = tarfile.TarInfo("passwd")
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            t.addfile(info)
        # a member cut short, a path out of the root, a link: refused as a run would refuse them
        for bad in (b"", b'{"not":"a tar"}', b"\x1f\x8b" + b"\0" * 1022, data[:520], escape,
                    link.getvalue()):
            st, doc = upload(w, bad)
            check(st == 400 and doc["error"]["code"] == "INVALID_REQUEST",
                  "%r...: %d %r" % (bad[:8], st, doc))
        # a snapshot's body has a cap of its own (snapshot_limit_bytes, 64 MiB by default):
        # past body_limit_bytes (1 MiB), which every other route keeps
        big = tar_of({"big-%d.bin" % i: os.urandom(1 << 20) for i in range(3)})
        st, doc = upload(w, big)
        check(st == 201 and doc["bytes"] == len(big), "3 MiB: %d %r" % (st, doc))
        st, _, body = raw(w, "POST", "/v1/runs", w.keys["agent-7"],
                          json.dumps({"source": "x" * (2 << 20)}).encode(), "application/json")
        check(st == 413, "a 2 MiB run: %d %r" % (st, body[:200]))
    finally:
        w.close()
    os.makedirs(os.path.join(tmp, "small"))
    small = tr.World(os.path.join(tmp, "small"), adhoc=True,
                     config={"snapshot_limit_bytes": 100000})
    try:
        st, doc = upload(small, tar_of({"a.bin": b"a" * 50000}))
        check(st == 201, "under snapshot_limit_bytes: %d %r" % (st, doc))
        st, doc = upload(small, tar_of({"a.bin": b"a" * 100000}))
        check(st == 413 and doc["error"]["code"] == "PAYLOAD_TOO_LARGE",
              "past snapshot_limit_bytes: %d %r" % (st, doc))
    finally:
        small.close()


def t_workspace_refusals(tmp):
    """"workspace" on POST /v1/runs names only what the caller may use, and nothing starts
    otherwise: another principal's snapshot and an unknown one are 404 (the same answer), a
    snapshot of another department 409, from_run and from_snapshot together 400, from_run of a
    run the caller may not see 404, of a run that kept no workspace 409; a template run takes
    its manifest from its version (manifest members are 400)."""
    w = world(tmp)
    try:
        w.template("plain", "return 2", [])
        st, mine = upload(w, tar_of({"a.txt": b"a"}))
        check(st == 201, "upload: %r" % mine)
        st, theirs = upload(w, tar_of({"b.txt": b"b"}), key=w.keys["agent-8"])
        check(st == 201, "upload: %r" % theirs)
        w.ok("POST", "/v1/principals/agent-7/roles", {"role": "agent", "department": "other"},
             w.admin, 201)
        w.ok("PUT", "/v1/departments/other/policy", {"allow_adhoc": True}, w.admin)
        st, elsewhere = upload(w, tar_of({"c.txt": b"c"}), department="other")
        check(st == 201, "upload: %r" % elsewhere)
        st, plain = w.run({"template": "plain"}, want=200)
        n = len(audit_rows(w.dir, "run.start"))

        def refused(workspace, want, code, message=None, body=None):
            st, doc = w.run(body or {"source": "return 1", "department": "finance",
                                     "workspace": workspace})
            check(st == want and doc["error"]["code"] == code and
                  (message is None or doc["error"]["message"] == message),
                  "%r: %d %r, want %d %s" % (workspace, st, doc, want, code))
            return doc

        a = refused({"from_snapshot": theirs["id"]}, 404, "NOT_FOUND",
                    "workspace: no snapshot " + theirs["id"])
        b = refused({"from_snapshot": "snap_" + "0" * 32}, 404, "NOT_FOUND")
        check(a["error"]["message"].split(" snap_")[0] == b["error"]["message"].split(" snap_")[0],
              "another's snapshot is told apart from a missing one")
        refused({"from_snapshot": elsewhere["id"]}, 409, "CONFLICT")
        refused({"from_snapshot": mine["id"], "from_run": plain["id"]}, 400, "INVALID_REQUEST")
        refused({"from_snapshot": 7}, 400, "INVALID_REQUEST")
        refused({"from_run": "run_" + "0" * 32}, 404, "NOT_FOUND")
        refused({"from_run": plain["id"]}, 409, "CONFLICT",
                "workspace: run %s has no workspace kept at its end" % plain["id"])
        # agent-8 may not see agent-7's run: as if it did not exist
        st, doc = w.run({"source": "return 1", "department": "finance",
                         "workspace": {"from_run": plain["id"]}}, key=w.keys["agent-8"])
        check(st == 404 and doc["error"]["message"] == "workspace: no run " + plain["id"],
              "another's run: %d %r" % (st, doc))
        refused(None, 400, "INVALID_REQUEST",
                body={"template": "plain", "workspace": {"version": 1}})
        refused(None, 400, "INVALID_REQUEST",
                body={"template": "plain", "workspace": {"from_snapshot": mine["id"],
                                                         "outputs": ["out/"]}})
        refused(None, 400, "INVALID_REQUEST",
                body={"template": "plain", "workspace": []})
        check(len(audit_rows(w.dir, "run.start")) == n, "a refused run was recorded")
    finally:
        w.close()


def t_workspace_recorded_with_start(tmp):
    """A run with a workspace keeps it with its start: the manifest (as a blob, shared by runs
    with the same one) and the tar it starts from; its run.start record says which manifest
    (whole, and its SHA-256) and where the files came from - never the tar's bytes."""
    w = world(tmp)
    try:
        tar = tar_of({"in/a.csv": b"id\n1\n"})
        st, snap = upload(w, tar)
        check(st == 201, "upload: %r" % snap)
        manifest = {"version": 1, "outputs": ["out/"],
                    "entries": {"README.md": {"type": "file", "content": "hello"}}}
        ids = []
        for _ in range(2):
            st, doc = adhoc(w, dict(manifest, from_snapshot=snap["id"]))
            check(st == 202, "start: %d %r" % (st, doc))
            ids.append(doc["id"])
        text = json.dumps(manifest, separators=(",", ":"), sort_keys=True)  # RFC 8785 here
        msha = hashlib.sha256(text.encode()).hexdigest()
        for run_id in ids:
            rows = db_rows(w.dir, "SELECT manifest_sha256, start_sha256 FROM run_workspaces "
                           "WHERE run = ?", (run_id,))
            check(rows == [(msha, snap["sha256"])], "run_workspaces of %s: %r" % (run_id, rows))
            rec = [r for r in audit_rows(w.dir, "run.start") if r["subject"] == run_id]
            d = rec[0]["details"]
            check(d["workspace"] == manifest and d["workspace_sha256"] == msha and
                  d["workspace_from"] == {"snapshot": snap["id"], "sha256": snap["sha256"]},
                  "run.start: %r" % d)
        blobs = db_rows(w.dir, "SELECT count(*) FROM workspace_blobs WHERE sha256 = ?", (msha,))
        check(blobs == [(1,)], "the manifest kept once: %r" % blobs)
        # a run without a workspace keeps none
        st, doc = w.run({"source": "return 1", "department": "finance"}, want=200)
        check(db_rows(w.dir, "SELECT count(*) FROM run_workspaces WHERE run = ?",
                      (doc["id"],)) == [(0,)], "a run without a workspace has one")
        check("workspace" not in audit_rows(w.dir, "run.start")[-1]["details"],
              "run.start of a run without a workspace")
    finally:
        w.close()


def plant_outputs(w, run_id, files, tar):
    """What a completed run's workspace leaves, written as airlockd's store keeps it."""
    def blob(data):
        sha = hashlib.sha256(data).hexdigest()
        if ts.PG:
            db_exec(w.dir, "INSERT INTO workspace_blobs(sha256, bytes) VALUES (?, "
                    "decode(?, 'hex')) ON CONFLICT DO NOTHING", (sha, data.hex()))
        else:
            db_exec(w.dir, "INSERT OR IGNORE INTO workspace_blobs(sha256, bytes) VALUES (?, ?)",
                    (sha, data))
        return sha
    msha = blob(b'{"version":1,"outputs":["out/"]}')
    db_exec(w.dir, "INSERT INTO run_workspaces(run, manifest_sha256, end_sha256) VALUES (?, ?, ?)",
            (run_id, msha, blob(tar)))
    for path, data in files.items():
        db_exec(w.dir, "INSERT INTO run_files(run, path, size, sha256) VALUES (?, ?, ?, ?)",
                (run_id, path, len(data), blob(data)))


def t_outputs_served_to_who_sees_the_run(tmp):
    """GET /v1/runs/{id}/files lists a run's outputs in path order ({path, size, sha256});
    .../files/{path} answers a file's bytes (application/octet-stream, a path of any depth),
    404 for any other path; .../workspace.tar the tar kept at its end (application/x-tar).
    Whoever may see the run: its starter, the department's approvers and auditors; another
    agent of the department gets 404, an agent elsewhere 403, as GET /v1/runs/{id} answers."""
    w = world(tmp)
    try:
        st, run = w.run({"source": "return 1", "department": "finance"}, want=200)
        deep = "out/" + "/".join("d%d" % i for i in range(12)) + "/leaf.txt"
        files = {"out/report.md": b"# Report\n\ntotal 5\n",
                 "out/summary.json": b'{"total":5}',
                 deep: b"deep",
                 "out/empty": b""}
        tar = tar_of(files)
        plant_outputs(w, run["id"], files, tar)
        base = "/v1/runs/%s" % run["id"]
        for who in ("agent-7", "bob", "eve"):
            doc = w.ok("GET", base + "/files", None, w.keys[who])
            check(doc == {"files": [{"path": p, "size": len(files[p]),
                                     "sha256": hashlib.sha256(files[p]).hexdigest()}
                                    for p in sorted(files)]}, "files as %s: %r" % (who, doc))
            for path, data in files.items():
                st, ctype, body = raw(w, "GET", base + "/files/" + path, w.keys[who])
                check(st == 200 and ctype == "application/octet-stream" and body == data,
                      "%s as %s: %d %s %r" % (path, who, st, ctype, body[:40]))
            st, ctype, body = raw(w, "GET", base + "/workspace.tar", w.keys[who])
            check(st == 200 and ctype == "application/x-tar" and body == tar,
                  "workspace.tar as %s: %d %s" % (who, st, ctype))
        # a path percent-encoded is the same path
        st, _, body = raw(w, "GET", base + "/files/out%2Freport.md", w.keys["agent-7"])
        check(st == 200 and body == files["out/report.md"], "encoded: %d" % st)
        for path in ("out/missing.md", "out", "out/report.md/x", "out/../out/report.md",
                     "OUT/report.md", "/out/report.md"):
            st, doc, _ = w.s.request("GET", base + "/files/" + path, key=w.keys["agent-7"])
            check(st == 404 and doc["error"]["code"] == "NOT_FOUND", "%s: %d %r" % (path, st, doc))
        for path in ("/files", "/files/out/report.md", "/workspace.tar"):
            st, doc, _ = w.s.request("GET", base + path, key=w.keys["agent-8"])
            check(st == 404 and doc["error"]["message"] == "no run " + run["id"],
                  "agent-8 %s: %d %r" % (path, st, doc))
            st, doc, _ = w.s.request("GET", base + path, key=w.keys["agent-9"])
            check(st == 403, "agent-9 %s: %d %r" % (path, st, doc))
            st, doc, _ = w.s.request("GET", "/v1/runs/run_%s%s" % ("0" * 32, path),
                                     key=w.keys["bob"])
            check(st == 404, "no such run %s: %d %r" % (path, st, doc))
        # a run without a workspace: no files, no tar
        st, other = w.run({"source": "return 1", "department": "finance"}, want=200)
        doc = w.ok("GET", "/v1/runs/%s/files" % other["id"], None, w.keys["agent-7"])
        check(doc == {"files": []}, "no workspace: %r" % doc)
        st, doc, _ = w.s.request("GET", "/v1/runs/%s/workspace.tar" % other["id"],
                                 key=w.keys["agent-7"])
        check(st == 404, "no workspace's tar: %d %r" % (st, doc))
    finally:
        w.close()


def t_from_run_takes_its_workspace(tmp):
    """{"from_run"} starts from the run's workspace at its end: an ad-hoc run naming no manifest
    of its own takes the run's manifest, and the tar it starts from is the run's workspace.tar
    (recorded with its start as workspace_from {run, sha256})."""
    w = world(tmp)
    try:
        st, run = w.run({"source": "return 1", "department": "finance"}, want=200)
        tar = tar_of({"out/report.md": b"r"})
        plant_outputs(w, run["id"], {"out/report.md": b"r"}, tar)
        st, doc = adhoc(w, {"from_run": run["id"]})
        check(st == 202, "from_run: %d %r" % (st, doc))
        rows = db_rows(w.dir, "SELECT manifest_sha256, start_sha256 FROM run_workspaces "
                       "WHERE run = ?", (doc["id"],))
        msha = hashlib.sha256(b'{"version":1,"outputs":["out/"]}').hexdigest()
        check(rows == [(msha, hashlib.sha256(tar).hexdigest())], "run_workspaces: %r" % rows)
        rec = [r for r in audit_rows(w.dir, "run.start") if r["subject"] == doc["id"]][0]
        check(rec["details"]["workspace_from"] == {"run": run["id"],
                                                   "sha256": hashlib.sha256(tar).hexdigest()},
              "run.start: %r" % rec["details"])
        # an auditor sees the run but is no agent: it starts nothing
        st, doc = adhoc(w, {"from_run": run["id"]}, key=w.keys["eve"])
        check(st == 403, "an auditor's run: %d %r" % (st, doc))
    finally:
        w.close()


WRITER = """
const notes = await workspace.readFile('README.md');
await workspace.mkdir('out', {recursive: true});
await workspace.writeFile('out/report.md', '# Report\\n' + notes);
await workspace.writeJson('out/summary.json', {lines: notes.split('\\n').length});
let refused = null;
try { await workspace.writeFile('README.md', 'changed'); } catch (e) { refused = e.code; }
return {files: await workspace.readdir('out'), refused};
"""

README = "alpha\nbeta\nSECRET-CONTENT-7f3a\n"


def members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def t_adhoc_run_keeps_its_outputs(tmp):
    """An ad-hoc run with a manifest reads its inline file and writes under its outputs: the
    outputs are listed and served, workspace.tar is the workspace at its end, a write outside
    the outputs is EROFS; every file operation is a run.file record (op, path, size, sha256,
    error) between run.start and run.end, never the bytes."""
    w = world(tmp)
    try:
        manifest = {"version": 1, "outputs": ["out/"],
                    "entries": {"README.md": {"type": "file", "content": README}}}
        st, doc = w.run({"source": WRITER, "department": "finance", "workspace": manifest},
                        want=200)
        check(doc["status"] == "completed" and doc["value"] == {
            "files": ["report.md", "summary.json"], "refused": "EROFS"}, "run: %r" % doc)
        run_id = doc["id"]
        report = ("# Report\n" + README).encode()
        listed = w.ok("GET", "/v1/runs/%s/files" % run_id, None, w.keys["agent-7"])["files"]
        check([f["path"] for f in listed] == ["out/report.md", "out/summary.json"] and
              listed[0]["sha256"] == hashlib.sha256(report).hexdigest() and
              listed[0]["size"] == len(report), "files: %r" % listed)
        st, ctype, body = raw(w, "GET", "/v1/runs/%s/files/out/report.md" % run_id,
                              w.keys["bob"])
        check(st == 200 and body == report, "report: %d %r" % (st, body))
        st, ctype, body = raw(w, "GET", "/v1/runs/%s/files/out/summary.json" % run_id,
                              w.keys["agent-7"])
        check(st == 200 and json.loads(body) == {"lines": 4}, "summary: %d %r" % (st, body))
        st, ctype, tar = raw(w, "GET", "/v1/runs/%s/workspace.tar" % run_id, w.keys["agent-7"])
        check(st == 200 and ctype == "application/x-tar", "workspace.tar: %d %s" % (st, ctype))
        got = members(tar)
        check(set(got) == {"README.md", "out/report.md", "out/summary.json"} and
              got["README.md"] == README.encode() and got["out/report.md"] == report and
              json.loads(got["out/summary.json"]) == {"lines": 4}, "workspace.tar: %r" % got)
        rows = [r for r in audit_rows(w.dir) if r["subject"] == run_id]
        actions = [r["action"] for r in rows]
        # file operations are run.file records, not run.host_call ones (whose args would hold
        # the bytes written), nor in the run's host_calls
        check(actions[0] == "run.start" and actions[-1] == "run.end" and
              set(actions[1:-1]) == {"run.file"} and doc["host_calls"] == [],
              "records: %r, host_calls %r" % (actions, doc["host_calls"]))
        ops = [(r["details"]["op"], r["details"]["path"], r["details"]["error"])
               for r in rows if r["action"] == "run.file"]
        check(("readFile", "README.md", None) in ops and ("mkdir", "out", None) in ops and
              ("writeFile", "out/report.md", None) in ops and
              ("writeFile", "README.md", "EROFS") in ops, "run.file ops: %r" % ops)
        wrote = [r["details"] for r in rows if r["action"] == "run.file" and
                 r["details"]["path"] == "out/report.md"][0]
        check(wrote["size"] == len(report) and
              wrote["sha256"] == hashlib.sha256(report).hexdigest() and
              wrote["run"] == run_id, "run.file of the report: %r" % wrote)
        check(not any("SECRET-CONTENT-7f3a" in json.dumps(r["details"]) for r in rows
                      if r["action"] == "run.file"), "a run.file record holds the bytes")

        # the next run starts from this one's workspace: its manifest, its files
        st, doc = w.run({"source": "return await workspace.readFile('out/report.md')",
                         "department": "finance", "workspace": {"from_run": run_id}}, want=200)
        check(doc["status"] == "completed" and doc["value"] == report.decode(),
              "from_run: %r" % doc)
        # and from an uploaded snapshot, with a manifest of its own
        st, snap = upload(w, tar)
        st, doc = w.run({"source": "return (await workspace.readdir('out')).length",
                         "department": "finance",
                         "workspace": {"version": 1, "from_snapshot": snap["id"]}}, want=200)
        check(doc["status"] == "completed" and doc["value"] == 2, "from_snapshot: %r" % doc)
        # a manifest libairlock refuses is refused before anything starts, naming the member
        for bad in ({"version": 2}, {"version": 1, "limits": {"bytes": 0}},
                    {"version": 1, "entries": {"../x": {"type": "dir"}}},
                    {"version": 1, "entries": {"lake": {"type": "s3_mount", "mount": "nope"}}}):
            st, doc = w.run({"source": "return 1", "department": "finance", "workspace": bad})
            check(st == 400 and doc["error"]["code"] == "INVALID_REQUEST",
                  "%r: %d %r" % (bad, st, doc))
        # a snapshot bigger than the manifest's limits: refused with the member named
        st, doc = w.run({"source": "return 1", "department": "finance",
                         "workspace": {"version": 1, "limits": {"files": 1},
                                       "from_snapshot": snap["id"]}})
        check(st == 400 and "snapshot " + snap["id"] in doc["error"]["message"],
              "snapshot past the limits: %d %r" % (st, doc))
    finally:
        w.close()


RESUMED = """
await workspace.mkdir('out', {recursive: true});
await workspace.writeFile('out/before.txt', 'written before the refund');
const r = await shop.refund('o-1', input.amount);
const before = await workspace.readFile('out/before.txt');
await workspace.writeFile('out/after.txt', before + ', then refunded ' + r.amount);
return before;
"""


def t_template_run_resumes_with_its_workspace(tmp):
    """A template whose version has a workspace interrupts for a sensitive call; once approved
    it resumes in a workspace built again from the version's manifest, where what it wrote
    before the interruption is there again (replayed, not redone) and what it writes after
    joins it. A template run may start from another run of the same template only."""
    w = world(tmp)
    try:
        manifest = {"version": 1, "outputs": ["out/"],
                    "entries": {"in": {"type": "dir"}}}
        w.ok("POST", "/v1/templates", {"name": "ws-refund", "department": "finance",
                                      "description": "refund with files"}, w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/ws-refund/versions",
             {"source": RESUMED, "functions": ["shop.refund"], "workspace": manifest},
             w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/ws-refund/versions/1/submit", {}, w.keys["alice"])
        w.ok("POST", "/v1/templates/ws-refund/versions/1/approve", {}, w.keys["bob"])
        st, doc = w.run({"template": "ws-refund", "input": {"amount": 7}}, want=202)
        check(doc["status"] == "awaiting_approval", "waits: %r" % doc)
        run_id = doc["id"]
        check(w.ok("GET", "/v1/runs/%s/files" % run_id, None, w.keys["agent-7"]) ==
              {"files": []}, "outputs kept before the run completed")
        w.ok("POST", "/v1/approvals/%s/approve" % doc["approvals"][0], {}, w.keys["bob"])
        doc = w.until(run_id, ("completed", "failed"))
        check(doc["status"] == "completed" and doc["value"] == "written before the refund",
              "resumed: %r" % doc)
        files = {f["path"]: f for f in
                 w.ok("GET", "/v1/runs/%s/files" % run_id, None, w.keys["agent-7"])["files"]}
        check(set(files) == {"out/before.txt", "out/after.txt"}, "files: %r" % files)
        st, _, body = raw(w, "GET", "/v1/runs/%s/files/out/after.txt" % run_id,
                          w.keys["agent-7"])
        check(body == b"written before the refund, then refunded 7", "after: %r" % body)
        ops = [(r["details"]["op"], r["details"]["path"]) for r in audit_rows(w.dir, "run.file")
               if r["subject"] == run_id]
        # each operation once: the resume replays the first leg's from the ledger, unrecorded
        check(ops.count(("writeFile", "out/before.txt")) == 1 and
              ops.count(("readFile", "out/before.txt")) == 1 and
              ops.count(("writeFile", "out/after.txt")) == 1, "run.file ops: %r" % ops)
        # from_run: a run of the same template only
        w.template("plain", "return 2", [])
        st, doc = w.run({"template": "ws-refund", "input": {"amount": 1},
                         "workspace": {"from_run": run_id}}, want=202)
        st, other = w.run({"template": "plain"}, want=200)
        st, doc = w.run({"template": "ws-refund", "input": {"amount": 1},
                         "workspace": {"from_run": other["id"]}})
        check(st == 409 and "not a run of template ws-refund" in doc["error"]["message"],
              "from another template's run: %d %r" % (st, doc))
    finally:
        w.close()


LOGGED = """
await workspace.mkdir('out', {recursive: true});
let total = 0;
for (let i = 1; i <= 4; i++) {
    total += await steps.step(i);
    await workspace.appendFile('out/log.txt', 'step ' + i + '\\n');
}
return {total, log: await workspace.readFile('out/log.txt')};
"""


def t_recovered_run_rebuilds_its_workspace(tmp):
    """airlockd SIGKILLed when call 3 of a template run with a workspace reaches its connector:
    after the restart the run goes on from its journal in a workspace built again from its
    manifest, the writes of its answered steps applied again (not written twice), and it
    completes with every step's line once."""
    import test_durable as td
    w = world(tmp)
    try:
        w.ok("POST", "/v1/connectors", {
            "name": "steps", "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": True, "result_schema": {"type": "integer"}}}},
            w.admin, 201)
        w.ok("POST", "/v1/templates", {"name": "logged", "department": "finance",
                                      "description": "steps logged to a file"},
             w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/logged/versions",
             {"source": LOGGED, "functions": ["steps.step"],
              "workspace": {"version": 1, "outputs": ["out/"]}}, w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/logged/versions/1/submit", {}, w.keys["alice"])
        w.ok("POST", "/v1/templates/logged/versions/1/approve", {}, w.keys["bob"])
        td.arm(w, 3)
        st, doc = w.run({"template": "logged", "wait": False}, want=202)
        run_id = doc["id"]
        td.died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        log = "".join("step %d\n" % i for i in range(1, 5))
        check(done["status"] == "completed" and done["recovered"] == 1 and
              done["value"]["log"] == log, "after the restart: %r" % done)
        st, _, body = raw(w, "GET", "/v1/runs/%s/files/out/log.txt" % run_id, w.keys["agent-7"])
        check(st == 200 and body == log.encode(), "out/log.txt: %d %r" % (st, body))
        # a fork from its third call starts from the same workspace: the writes of the calls it
        # replays land again, the rest it makes itself
        st, fork = w.s.request("POST", "/v1/runs/%s/fork" % run_id, {"at_call": 3},
                               key=w.keys["agent-7"])[:2]
        check(st == 200 and fork["status"] == "completed" and fork["value"]["log"] == log,
              "fork: %d %r" % (st, fork))
        rows = db_rows(w.dir, "SELECT manifest_sha256 FROM run_workspaces WHERE run IN (?, ?)",
                       (run_id, fork["id"]))
        check(len(rows) == 2 and rows[0] == rows[1], "the fork's workspace: %r" % rows)
    finally:
        w.close()


READS = """
const first = {};
const seen = [];
for (let i = 1; i <= 4; i++) {
    if (i <= 3) {
        const text = await workspace.readFile('in/big.txt');
        const bytes = await workspace.readFile('in/big.txt', null);
        let sum = 0;
        for (let k = 0; k < bytes.length; k += 61) {
            sum = (sum * 31 + bytes[k]) >>> 0;
        }
        if (i === 1) {
            first.text = text;
        }
        seen.push({same: text === first.text, chars: text.length, head: text.slice(0, 40),
                   tail: text.slice(-40), bytes: bytes.length, last: bytes[bytes.length - 1],
                   sum});
    }
    await steps.step(i);
}
return seen;
"""


def t_recovered_run_reads_its_files_from_blobs(tmp):
    """A template run reads a 2 MB file of the snapshot it starts from three times, as text and
    as bytes, and airlockd is SIGKILLed when its step 3 reaches the connector: after the restart
    it goes on from its journal and every read gives the same value as before. The journal
    keeps each read as a reference to the file's blob, so the database holds the bytes once
    (in the blob) besides the snapshot's tar - never a copy per read."""
    import test_durable as td
    w = world(tmp)
    try:
        line = "row %06d,caf\u00e9 \u2713,\t\"quoted\"\n"
        data = "".join(line % i for i in range(70000)).encode()
        check(len(data) > 2000000, "the file: %d bytes" % len(data))
        tar = tar_of({"in/big.txt": data})
        st, snap = upload(w, tar)
        check(st == 201, "upload: %r" % snap)
        w.ok("POST", "/v1/connectors", {
            "name": "steps", "department": "finance", "url": w.shop.url,
            "signing_secret": tr.SECRET, "timeout_ms": 30000,
            "functions": {"step": {"idempotent": True, "result_schema": {"type": "integer"}}}},
            w.admin, 201)
        w.ok("POST", "/v1/templates", {"name": "reads", "department": "finance",
                                      "description": "reads a big file"}, w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/reads/versions",
             {"source": READS, "functions": ["steps.step"],
              "workspace": {"version": 1, "outputs": ["out/"]}}, w.keys["alice"], 201)
        w.ok("POST", "/v1/templates/reads/versions/1/submit", {}, w.keys["alice"])
        w.ok("POST", "/v1/templates/reads/versions/1/approve", {}, w.keys["bob"])
        td.arm(w, 3)
        st, doc = w.run({"template": "reads", "wait": False,
                         "workspace": {"from_snapshot": snap["id"]}}, want=202)
        run_id = doc["id"]
        td.died(w)
        done = w.until(run_id, ("completed", "failed", "cancelled"))
        text = data.decode()
        total = 0
        for k in range(0, len(data), 61):
            total = (total * 31 + data[k]) & 0xffffffff
        want = {"same": True, "chars": len(text), "head": text[:40], "tail": text[-40:],
                "bytes": len(data), "last": data[-1], "sum": total}
        check(done["status"] == "completed" and done["recovered"] == 1 and
              done["value"] == [want] * 3,
              "after the restart: %r" % {k: v for k, v in done.items() if k != "value"})
        # a fork at its last step replays the six reads from their references
        st, fork = w.s.request("POST", "/v1/runs/%s/fork" % run_id, {"at_call": 10},
                               key=w.keys["agent-7"])[:2]
        check(st == 200 and fork["status"] == "completed" and fork["value"] == [want] * 3,
              "fork: %d %r" % (st, {k: v for k, v in fork.items() if k != "value"}))
        # every journaled answer is small: the reads are references to one blob
        size = "octet_length" if ts.PG else "length"
        rows = db_rows(w.dir, "SELECT j.function, %s(b.bytes) FROM journal j JOIN journal_blobs "
                       "b ON b.sha256 = j.answer_sha256 WHERE j.run = ? ORDER BY j.position"
                       % size, (run_id,))
        reads = [n for fn, n in rows if fn == "workspace.readFile"]
        check(len(reads) == 6 and max(n for _, n in rows) < 1024,
              "the journal's answers: %r" % rows)
        sha = hashlib.sha256(data).hexdigest()
        check(db_rows(w.dir, "SELECT count(*) FROM workspace_blobs WHERE sha256 = ?", (sha,)) ==
              [(1,)], "the file's bytes are not a blob")
        # besides the tars the run started and ended with, one copy of the file
        kept = db_rows(w.dir, "SELECT coalesce(sum(%s(bytes)), 0) FROM workspace_blobs WHERE "
                       "sha256 NOT IN (SELECT start_sha256 FROM run_workspaces WHERE start_sha256 "
                       "IS NOT NULL UNION SELECT end_sha256 FROM run_workspaces WHERE end_sha256 "
                       "IS NOT NULL)" % size)[0][0]
        kept += db_rows(w.dir, "SELECT coalesce(sum(%s(bytes)), 0) FROM journal_blobs" % size)[0][0]
        check(len(data) <= int(kept) < len(data) + 65536,
              "the database keeps %d bytes of blobs for a %d-byte file" % (int(kept), len(data)))
    finally:
        w.close()


REPORT = """
const rows = (await workspace.readFile('in/data.csv')).trim().split('\\n');
await workspace.mkdir('out', {recursive: true});
await workspace.writeFile('out/count.txt', String(rows.length));
return rows.length;
"""


def replay_of(w, name, v):
    """GET .../replay of version v, polled while it answers 202."""
    deadline = time.monotonic() + 240
    while True:
        st, doc, _ = w.s.request("GET", "/v1/templates/%s/versions/%d/replay" % (name, v), None,
                                 key=w.keys["bob"])
        if st != 202 or time.monotonic() > deadline:
            check(st == 200 and doc["state"] == "done", "replay of v%d: %d %r" % (v, st, doc))
            return doc


def t_replay_before_approval_builds_the_workspace(tmp):
    """A submitted version of a template with a workspace is replayed against the approved
    one's runs in the workspace it would run with: the same file operations replay the same,
    a write of other bytes diverges at that call."""
    w = world(tmp)
    try:
        manifest = {"version": 1, "outputs": ["out/"],
                    "entries": {"in/data.csv": {"type": "file", "content": "a\nb\nc\n"}}}
        w.ok("POST", "/v1/templates", {"name": "counts", "department": "finance",
                                      "description": "counts rows"}, w.keys["alice"], 201)

        def version(source, submit=True):
            v = w.ok("POST", "/v1/templates/counts/versions",
                     {"source": source, "workspace": manifest}, w.keys["alice"], 201)["version"]
            w.ok("POST", "/v1/templates/counts/versions/%d/submit" % v, {}, w.keys["alice"])
            return v

        version(REPORT)
        w.ok("POST", "/v1/templates/counts/versions/1/approve", {}, w.keys["bob"])
        for _ in range(2):
            st, doc = w.run({"template": "counts"}, want=200)
            check(doc["status"] == "completed" and doc["value"] == 3, "v1's run: %r" % doc)
        same = replay_of(w, "counts", version("// refactored\n" + REPORT))
        check(same["runs"] == 2 and same["same"] == 2 and same["diverged"] == [] and
              same["failed"] == [], "the same file operations: %r" % same)
        other = replay_of(w, "counts", version(REPORT.replace("String(rows.length)",
                                                              "'rows: ' + rows.length")))
        check(other["runs"] == 2 and other["same"] == 0 and len(other["diverged"]) == 2 and
              all(d["got"]["function"] == "workspace.writeFile" for d in other["diverged"]),
              "another write: %r" % other)
    finally:
        w.close()



# ---------------------------------------------------------------------------------------------
class GateS3:
    """A bucket in memory on a loopback port (no signature checked) whose PUTs, or reads, wait
    until the test releases them: what a slow or stalled S3 server does, on the test's cue."""

    def __init__(self, hold_puts=False, hold_reads=False):
        self.objects = {}
        self.lock = threading.Lock()
        self.arrived = threading.Event()  # a held request came in
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body=b""):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def handle_any(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = urllib.parse.unquote(self.path.partition("?")[0])
                key = path.split("/", 2)[2] if path.count("/") >= 2 else ""
                if (self.command == "PUT" and hold_puts) or \
                        (self.command in ("GET", "HEAD") and hold_reads):
                    outer.arrived.set()
                    outer.release.wait(300)
                with outer.lock:
                    if not key:  # a listing: nothing is listed (stat asks whether a directory)
                        return self.answer(200, b"<ListBucketResult><IsTruncated>false"
                                                b"</IsTruncated></ListBucketResult>")
                    if self.command == "PUT":
                        outer.objects[key] = body
                        return self.answer(200)
                    if self.command == "DELETE":
                        outer.objects.pop(key, None)
                        return self.answer(204)
                    if key in outer.objects:
                        return self.answer(200, outer.objects[key])
                    return self.answer(404, b"<Error><Code>NoSuchKey</Code></Error>")

            do_GET = do_PUT = do_HEAD = do_DELETE = handle_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = "http://127.0.0.1:%d" % self.server.server_address[1]

    def wait_arrived(self):
        check(self.arrived.wait(HANG), "no request reached the bucket")

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def gate_world(tmp, s3):
    w = world(tmp)
    w.ok("POST", "/v1/mounts", {"name": "lake", "department": "finance", "kind": "s3",
                                "endpoint": s3.endpoint, "bucket": "gated",
                                "region": "us-east-1", "access_key_id": "GATE",
                                "secret_access_key": "gate-secret"}, w.admin, 201)
    return w


GATE_MANIFEST = {"entries": {"out": {"type": "s3_mount", "mount": "lake", "prefix": "r/",
                                     "read_only": False}},
                 "outputs": ["out/"]}


def t_stalled_mount_never_holds_the_writer(tmp):
    """A run that ends (cancelled) while a read of its mount is stuck in the network leaves
    airlockd writing: the stuck read is waited for off the writer's thread, so the next run
    starts and ends at once."""
    s3 = GateS3(hold_reads=True)
    w = gate_world(tmp, s3)
    try:
        manifest = {"entries": {"lake": {"type": "s3_mount", "mount": "lake"}}}
        st, doc = w.run({"source": "return await workspace.readFile('lake/a.txt');",
                         "department": "finance", "workspace": manifest, "wait": False})
        check(st in (200, 201, 202), "start: %d %r" % (st, doc))
        run_id = doc["id"]
        s3.wait_arrived()
        w.ok("POST", "/v1/runs/%s/cancel" % run_id, {}, w.keys["agent-7"])
        w.until(run_id, ("cancelled",))
        # the mount's read stays stuck (the S3 client's timeout is a minute): the writer is free
        st, doc = w.run({"source": "return 2", "department": "finance", "wait": True})
        check(st in (200, 201) and doc.get("status") == "completed",
              "a run after it: %d %r" % (st, doc))
    finally:
        w.close()
        s3.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-workspaces-")


if __name__ == "__main__":
    sys.exit(main())
