#!/usr/bin/env python3
"""The workspace scenario end to end (docs/server.md "Workspaces"): a template reads a CSV from
an s3_mount on s3rver and a policy file from a local_dir, writes out/report.md and
out/summary.json; they land in the bucket and under /v1/runs/{id}/files; the approver saw the
manifest in the version; the audit has every file operation; a canary secret planted in the
mount's credentials is in none of the API's answers, the guest's reach, the journal, the audit
export, the logs or the database. Also: a writable mount that cannot be written fails the run
with an error naming the mount, and keeps nothing of it; a run cancelled while its objects are
being written has them undone.

usage: test_workspace_s3.py --airlockd PATH --cli PATH [-k SUBSTRING]
   with S3_NODE (node) and S3_MODULES (tests/s3's node_modules, s3.setup) in the environment
"""
import hashlib
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
import test_workspaces as tw  # noqa: E402
from test_server import HANG, audit_rows, check, db_bytes  # noqa: E402

CANARY = "CANARY-lake-secret-4e1d8b"
BUCKET = "airlock-test"  # made by tests/s3/s3rver.js
CSV = b"region,amount\nnorth,120\nsouth,80\neast,40\n"
POLICY = b"Refunds above 100 need a second approver.\n"

SOURCE = """
const csv = await workspace.readFile('lake/sales.csv');
const policy = await workspace.readFile('docs/policy.md');
const rows = csv.trim().split('\\n').slice(1).map((l) => l.split(','));
const total = rows.reduce((s, r) => s + Number(r[1]), 0);
await workspace.writeFile('out/report.md',
    '# Sales\\n\\n' + rows.map((r) => '- ' + r[0] + ': ' + r[1]).join('\\n') +
    '\\n\\nTotal: ' + total + '\\n\\nPolicy: ' + policy);
await workspace.writeJson('out/summary.json', {regions: rows.length, total});
return {total, listed: await workspace.readdir('lake')};
"""


class S3rver:
    """s3rver (tests/s3/s3rver.js) on a free port with its files in tmp/s3 and every request it
    receives logged in tmp/s3rver.log."""

    def __init__(self, tmp):
        node = os.environ.get("S3_NODE", "node")
        modules = os.environ["S3_MODULES"]
        script = os.path.join(HERE, "..", "s3", "s3rver.js")
        port_file = os.path.join(tmp, "s3rver.port")
        self.log_path = os.path.join(tmp, "s3rver.log")
        self.log = open(self.log_path, "wb")
        # DES for its continuation tokens is in OpenSSL 3's legacy provider (tests/s3/run.py)
        self.p = subprocess.Popen([node, "--openssl-legacy-provider", script, modules,
                                   os.path.join(tmp, "s3"), port_file], stdin=subprocess.PIPE,
                                  stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + HANG
        while not os.path.exists(port_file):
            check(self.p.poll() is None and time.monotonic() < deadline,
                  "s3rver did not start: %s" % self.logged())
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read())
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def logged(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def request(self, method, key, body=None):
        """s3rver checks no signature: an anonymous request reads and writes the bucket."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        try:
            conn.request(method, "/%s/%s" % (BUCKET, urllib.parse.quote(key)), body=body)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def close(self):
        self.p.stdin.close()
        self.p.kill()
        self.p.wait()
        self.log.close()


class HoldingProxy:
    """A pass-through to s3rver that holds a PUT whose path ends with `hold` until release():
    a bucket write in flight for as long as a test needs."""

    def __init__(self, upstream_port, hold):
        proxy = self
        self.held = threading.Event()
        self.released = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if self.command == "PUT" and self.path.split("?")[0].endswith(hold):
                    proxy.held.set()
                    proxy.released.wait(HANG)
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=HANG)
                try:
                    conn.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items()})
                    r = conn.getresponse()
                    data = r.read()
                finally:
                    conn.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # a HEAD's length is the object's, as the bucket said
                self.send_header("Content-Length", r.getheader("Content-Length", "0")
                                 if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.server.shutdown()
        self.server.server_close()


def world(tmp, s3):
    roots = os.path.join(tmp, "roots")
    os.makedirs(os.path.join(roots, "handbook", "policies"))
    with open(os.path.join(roots, "handbook", "policies", "policy.md"), "wb") as f:
        f.write(POLICY)
    w = tr.World(tmp, config={"mounts": {"local_roots": [roots]}})
    w.ok("PUT", "/v1/departments/finance/policy", {"allow_adhoc": True}, w.admin)
    w.ok("POST", "/v1/mounts", {"name": "handbook", "department": "finance", "kind": "local",
                                "path": os.path.join(roots, "handbook")}, w.admin, 201)
    for name, bucket in (("finance-lake", BUCKET), ("broken-lake", "no-such-bucket")):
        w.ok("POST", "/v1/mounts", {"name": name, "department": "finance", "kind": "s3",
                                    "endpoint": s3.endpoint, "bucket": bucket,
                                    "region": "us-east-1", "access_key_id": "S3RVER",
                                    "secret_access_key": CANARY}, w.admin, 201)
    return w


def manifest(lake="finance-lake", out="finance-lake"):
    return {"version": 1,
            "entries": {"docs": {"type": "local_dir", "mount": "handbook", "prefix": "policies/"},
                        "lake": {"type": "s3_mount", "mount": lake, "prefix": "2026/"},
                        "out": {"type": "s3_mount", "mount": out, "prefix": "reports/",
                                "read_only": False}},
            "outputs": ["out/"]}


def template(w, name, ws):
    w.ok("POST", "/v1/templates", {"name": name, "department": "finance",
                                  "description": "sales report"}, w.keys["alice"], 201)
    w.ok("POST", "/v1/templates/%s/versions" % name, {"source": SOURCE, "workspace": ws},
         w.keys["alice"], 201)
    w.ok("POST", "/v1/templates/%s/versions/1/submit" % name, {}, w.keys["alice"])
    # what the approver reviews: the manifest, with the version
    seen = w.ok("GET", "/v1/templates/%s/versions/1" % name, None, w.keys["bob"])
    check(seen["workspace"] == ws, "the reviewed version's workspace: %r" % seen)
    w.ok("POST", "/v1/templates/%s/versions/1/approve" % name, {}, w.keys["bob"])


def t_done_when(tmp):
    s3 = S3rver(tmp)
    w = None
    try:
        check(s3.request("PUT", "2026/sales.csv", CSV)[0] == 200, "seeding the bucket")
        w = world(tmp, s3)
        template(w, "sales-report", manifest())
        answers = []  # every API answer, searched for the canary at the end
        st, doc = w.run({"template": "sales-report"}, want=200)
        answers.append(json.dumps(doc))
        check(doc["status"] == "completed" and
              doc["value"] == {"total": 240, "listed": ["sales.csv"]}, "run: %r" % doc)
        run_id = doc["id"]

        # the outputs, in the bucket and with the run, the same bytes
        files = w.ok("GET", "/v1/runs/%s/files" % run_id, None, w.keys["agent-7"])["files"]
        answers.append(json.dumps(files))
        check([f["path"] for f in files] == ["out/report.md", "out/summary.json"],
              "files: %r" % files)
        for f in files:
            st, ctype, kept = tw.raw(w, "GET", "/v1/runs/%s/files/%s" % (run_id, f["path"]),
                                     w.keys["agent-7"])
            answers.append(kept.decode("utf-8", "replace"))
            key = "reports/" + f["path"][len("out/"):]
            st2, in_bucket = s3.request("GET", key)
            check(st == 200 and st2 == 200 and kept == in_bucket and
                  hashlib.sha256(kept).hexdigest() == f["sha256"],
                  "%s: kept %d, bucket %s %d" % (f["path"], st, key, st2))
        st, _, report = tw.raw(w, "GET", "/v1/runs/%s/files/out/report.md" % run_id,
                               w.keys["agent-7"])
        check(b"Total: 240" in report and POLICY in report, "report: %r" % report)
        st, _, tar = tw.raw(w, "GET", "/v1/runs/%s/workspace.tar" % run_id, w.keys["agent-7"])
        answers.append(tar.decode("utf-8", "replace"))
        # mounts excluded: nothing of the bucket or the handbook in it
        check(st == 200 and not any(n.startswith(("lake/", "docs/", "out/"))
                                    for n in tw.members(tar)),
              "workspace.tar: %d %r" % (st, tw.members(tar) if st == 200 else None))

        # the audit: every file operation, each object written to the bucket
        recs = [r["details"] for r in audit_rows(w.dir, "run.file") if r["subject"] == run_id]
        ops = {(d["op"], d["path"]) for d in recs}
        for want in (("readFile", "lake/sales.csv"), ("readFile", "docs/policy.md"),
                     ("writeFile", "out/report.md"), ("writeFile", "out/summary.json"),
                     ("readdir", "lake"), ("commit", "out/report.md"),
                     ("commit", "out/summary.json")):
            check(want in ops, "no run.file for %r: %r" % (want, sorted(ops)))
        read = [d for d in recs if d["path"] == "lake/sales.csv"][0]
        check(read["size"] == len(CSV) and read["sha256"] == hashlib.sha256(CSV).hexdigest(),
              "the CSV's read: %r" % read)
        commit = [d for d in recs if d["op"] == "commit" and d["path"] == "out/summary.json"][0]
        check(commit["mount"] == "finance-lake" and commit["key"] == "reports/summary.json",
              "the summary's commit: %r" % commit)

        # the guest's reach: whatever it reads or fails to read, the secret is not there
        probe = """
const seen = [];
for (const p of ['lake', 'lake/', 'out', 'docs', '/workspace/lake/../../etc/passwd',
                 'lake/missing.csv', '../lake', 'docs/../../..']) {
  try { seen.push(JSON.stringify(await workspace.readdir(p))); }
  catch (e) { seen.push(String(e.code) + ' ' + e.message); }
  try { seen.push(JSON.stringify(await workspace.stat(p))); }
  catch (e) { seen.push(String(e.code) + ' ' + e.message); }
}
seen.push(Object.getOwnPropertyNames(globalThis).join(','));
return seen;
"""
        st, doc = w.run({"source": probe, "department": "finance", "workspace": manifest()},
                        want=200)
        check(doc["status"] == "completed" and any(v.startswith("EACCES") for v in doc["value"]),
              "probe: %r" % doc)
        answers.append(json.dumps(doc))

        # a writable mount that cannot be written: the run fails naming the mount, keeps nothing
        template(w, "broken-report", manifest(out="broken-lake"))
        st, doc = w.run({"template": "broken-report"}, want=200)
        answers.append(json.dumps(doc))
        check(doc["status"] == "failed" and "broken-lake" in doc["error"]["message"],
              "broken mount: %r" % doc)
        check(w.ok("GET", "/v1/runs/%s/files" % doc["id"], None, w.keys["agent-7"]) ==
              {"files": []}, "a failed run kept outputs")

        # a department's mounts are its own: named by another department's ad-hoc manifest (400),
        # or reached through from_run of a run of another department (409, nothing starts)
        w.ok("POST", "/v1/principals/agent-7/roles", {"role": "agent", "department": "other"},
             w.admin, 201)
        w.ok("PUT", "/v1/departments/other/policy", {"allow_adhoc": True}, w.admin)
        st, doc = w.run({"source": "return 1", "department": "other", "workspace": manifest()})
        check(st == 400 and doc["error"]["code"] == "INVALID_REQUEST" and
              "handbook" in doc["error"]["message"], "another department's mount: %d %r"
              % (st, doc))
        st, doc = w.run({"source": "return 1", "department": "finance",
                         "workspace": {"version": 1, "entries": {"docs": {
                             "type": "local_dir", "mount": "handbook"}}}}, want=200)
        st, doc = w.run({"source": "return await workspace.readFile('docs/policies/policy.md')",
                         "department": "other", "workspace": {"from_run": doc["id"]}})
        check(st == 409 and doc["error"]["code"] == "CONFLICT" and
              "handbook" in doc["error"]["message"], "from_run across departments: %d %r"
              % (st, doc))

        for path in ("/v1/mounts", "/v1/runs", "/v1/audit?run=" + run_id,
                     "/v1/templates/sales-report/versions/1"):
            st, doc, _ = w.s.request("GET", path, key=w.admin)
            answers.append(json.dumps(doc))
        st, _, export = tw.raw(w, "GET", "/v1/audit/export", w.admin)
        check(st == 200, "export: %d" % st)
        answers.append(export.decode("utf-8", "replace"))
        for what, text in (("an API answer", "\n".join(answers)),
                           ("the database (journal, audit, runs)",
                            db_bytes(w.dir).decode("latin-1")),
                           ("airlockd's log", w.s.stderr()),
                           ("what s3rver received", s3.logged())):
            check(CANARY not in text, "the canary secret is in " + what)
    finally:
        if w:
            w.close()
        s3.close()


def t_cancel_while_committing(tmp):
    """A run cancelled while its objects are being written to its bucket ends cancelled, and
    its writes are undone: the object it replaced holds its old bytes again, the one it made is
    gone, and the run keeps no output."""
    s3 = S3rver(tmp)
    proxy = HoldingProxy(s3.port, "/reports/summary.json")
    w = None
    try:
        check(s3.request("PUT", "2026/sales.csv", CSV)[0] == 200, "seeding the bucket")
        check(s3.request("PUT", "reports/report.md", b"last week's report")[0] == 200,
              "seeding the old report")
        w = world(tmp, s3)
        w.ok("POST", "/v1/mounts", {"name": "held-lake", "department": "finance", "kind": "s3",
                                    "endpoint": proxy.endpoint, "bucket": BUCKET,
                                    "region": "us-east-1", "access_key_id": "S3RVER",
                                    "secret_access_key": CANARY}, w.admin, 201)
        template(w, "held-report", manifest(out="held-lake"))
        st, doc = w.run({"template": "held-report", "wait": False}, want=202)
        run_id = doc["id"]
        # report.md is written (it sorts first), summary.json's PUT is held
        check(proxy.held.wait(HANG), "the commit never reached the bucket")
        st2, old = s3.request("GET", "reports/report.md")
        check(st2 == 200 and old != b"last week's report", "report.md not yet replaced")
        w.ok("POST", "/v1/runs/%s/cancel" % run_id, {}, w.keys["agent-7"])
        proxy.release()
        done = w.until(run_id, ("cancelled", "completed", "failed"))
        check(done["status"] == "cancelled" and done["error"]["code"] == "ABORTED",
              "cancelled while committing: %r" % done)
        # undone off the writer's path: poll until it has happened
        deadline = time.monotonic() + HANG
        while True:
            report = s3.request("GET", "reports/report.md")
            summary = s3.request("GET", "reports/summary.json")[0]
            if report == (200, b"last week's report") and summary == 404:
                break
            check(time.monotonic() < deadline,
                  "the cancelled run's writes stayed: report.md %r, summary.json %d"
                  % (report, summary))
            time.sleep(0.05)
        check(w.ok("GET", "/v1/runs/%s/files" % run_id, None, w.keys["agent-7"]) ==
              {"files": []}, "a cancelled run kept outputs")
        commits = [r for r in audit_rows(w.dir, "run.file")
                   if r["subject"] == run_id and r["details"]["op"] == "commit"]
        check(commits == [], "a cancelled run's objects audited as committed: %r" % commits)
    finally:
        if w:
            w.close()
        proxy.close()
        s3.close()


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlockd-workspace-s3-")


if __name__ == "__main__":
    sys.exit(main())
