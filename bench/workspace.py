#!/usr/bin/env python3
"""bench/workspace.py BUILD - a 50 MB workspace through airlockd (docs/benchmarks.md,
"Workspaces"): its upload as a snapshot (POST /v1/snapshots), a run restored from it
(POST /v1/runs with {"workspace": {"from_snapshot"}}, answered once the run completed and its
workspace at the end is kept), and that run's snapshot read back (GET .../workspace.tar).

airlockd is BUILD/bin/airlockd (the release build `make bench` makes) on a fresh data directory,
SQLite with synchronous=FULL, a snapshot's body up to 64 MiB (the default). The workspace is 50 files of
1 MiB of random bytes (nothing compresses). Each step runs ROUNDS times (default 5); the best and
the median are printed as one JSON line per step, then a markdown table. Times are measured from
the client (loopback), reported, never asserted.
"""
import hashlib
import http.client
import io
import json
import os
import statistics
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import test_server as ts  # noqa: E402

FILES = 50
FILE_BYTES = 1 << 20
ROUNDS = int(os.environ.get("BENCH_WORKSPACE_ROUNDS", "5"))


def workspace_tar():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i in range(FILES):
            data = os.urandom(FILE_BYTES)
            info = tarfile.TarInfo("data/part-%02d.bin" % i)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def request(port, method, path, key, body=None, ctype="application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    h = {"Authorization": "Bearer " + key}
    if body is not None:
        h["Content-Type"] = ctype
    try:
        t0 = time.monotonic()
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        return r.status, data, time.monotonic() - t0
    finally:
        conn.close()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-release")
    ts.AIRLOCKD = os.path.join(os.path.abspath(build), "bin", "airlockd")
    with tempfile.TemporaryDirectory(prefix="airlock-bench-workspace-") as tmp:
        cfg = os.path.join(tmp, "airlockd.json")
        with open(cfg, "w") as f:
            json.dump({"http": {"body_budget_bytes": 256 << 20}}, f)
        d = os.path.join(tmp, "var")
        s = ts.Server(d, args=["--listen", "127.0.0.1:0", "--data-dir", d, "--config", cfg])
        try:
            if not s.port:
                sys.exit("workspace.py: airlockd did not start: " + s.stderr())
            admin = s.admin_key()
            for method, path, body in (
                    ("POST", "/v1/departments", {"name": "bench"}),
                    ("PUT", "/v1/departments/bench/policy", {"allow_adhoc": True}),
                    ("POST", "/v1/principals", {"name": "bench-agent"})):
                st, doc, _ = s.request(method, path, body, key=admin)
                if st not in (200, 201):
                    sys.exit("workspace.py: %s %s: %d %r" % (method, path, st, doc))
                if path == "/v1/principals":
                    agent = doc["key"]
            s.request("POST", "/v1/principals/bench-agent/roles",
                      {"role": "agent", "department": "bench"}, key=admin)
            tar = workspace_tar()
            times = {"upload": [], "restore": [], "snapshot": []}
            for _ in range(ROUNDS):
                st, data, dt = request(s.port, "POST", "/v1/snapshots?department=bench", agent,
                                       tar, "application/x-tar")
                if st != 201:
                    sys.exit("workspace.py: upload: %d %r" % (st, data[:300]))
                times["upload"].append(dt)
                snap = json.loads(data)["id"]
                body = json.dumps({"source": "return (await workspace.readdir('data')).length",
                                   "department": "bench",
                                   "workspace": {"version": 1, "from_snapshot": snap}})
                st, data, dt = request(s.port, "POST", "/v1/runs", agent, body.encode())
                run = json.loads(data)
                if st != 200 or run.get("value") != FILES:
                    sys.exit("workspace.py: restore: %d %r" % (st, data[:300]))
                times["restore"].append(dt)
                st, data, dt = request(s.port, "GET", "/v1/runs/%s/workspace.tar" % run["id"],
                                       agent)
                with tarfile.open(fileobj=io.BytesIO(data)) as t:
                    names = [m.name for m in t.getmembers() if m.isfile()]
                if st != 200 or len(names) != FILES:
                    sys.exit("workspace.py: snapshot: %d, %d files" % (st, len(names)))
                times["snapshot"].append(dt)
            what = {"upload": "POST /v1/snapshots (the tar checked and kept)",
                    "restore": "POST /v1/runs from_snapshot (loaded, run, its end kept)",
                    "snapshot": "GET /v1/runs/{id}/workspace.tar"}
            rows = []
            for step in ("upload", "restore", "snapshot"):
                line = {"step": step, "bytes": len(tar), "files": FILES,
                        "best_ms": round(min(times[step]) * 1000, 1),
                        "median_ms": round(statistics.median(times[step]) * 1000, 1),
                        "rounds": ROUNDS}
                print(json.dumps(line), flush=True)
                rows.append("| %s | %.1f | %.1f |" % (what[step], line["best_ms"],
                                                       line["median_ms"]))
            print("\n| a 50 MB workspace (%d files of 1 MiB) | best ms | median ms |" % FILES)
            print("|---|---:|---:|")
            print("\n".join(rows))
            print("\nsha256 of the tar: %s" % hashlib.sha256(tar).hexdigest())
        finally:
            s.kill()


if __name__ == "__main__":
    main()
