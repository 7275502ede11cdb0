#!/usr/bin/env python3
"""Data-driven guest cases: tests/cases/<area>/<name>.js + <name>.expect (JSON).

usage: run_cases.py --cli PATH --worker PATH [--area AREA]... [--jobs N] [CASE_OR_DIR]...

Each case runs `airlock run --json [args] FILE` with AIRLOCK_WORKER set and checks the result
against its .expect:

    {"args": ["--limit", "timeout=200ms"],      extra CLI args; "{hosts}" expands to
                                               tests/integration/hosts, "{case_dir}" to the
                                               case's directory, "{python}" to this
                                               script's interpreter
     "status": "completed" | "failed",
     "code": "TIMEOUT",                         error code (failed only)
     "name": "TypeError",                       error name (failed only, optional)
     "value": <boundary JSON>,                  exact value (compared as parsed JSON, and as
                                               bytes when "value_bytes" is given)
     "value_bytes": "...",                      exact bytes of the value in the JSON output
     "message_contains": "...",                 substring(s) of error.message
     "stack_contains": "...",                   substring(s) of error.stack
     "stack_excludes": "...",                   substring(s) that must not be in error.stack
     "stack_matches": "...",                    regular expression(s) searched in error.stack
     "console": [...],                          exact console entries
     "console_contains": "...",                 substring(s) of the console text (all entries)
     "stats": {"host_calls": 0},                exact stats values
     "exit": N,                                 expected exit status (default 0 / 1 by status)
     "timeout": 20}                             seconds before the case counts as hung

Cases under tests/cases/_pending/ are run for information and reported as "pending": they
document known airlock bugs and do not count as passes or failures.
Prints one line per case and a final line exactly `N passed, M failed`; exits 1 on any failure.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
HOSTS = os.path.join(HERE, "integration", "hosts")
PENDING = "_pending"


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def expand(arg, case_dir):
    return (arg.replace("{hosts}", HOSTS).replace("{case_dir}", case_dir)
            .replace("{python}", sys.executable))


def find_cases(paths, areas):
    """Returns sorted (area, name, js_path, expect_path, pending) tuples."""
    found = []
    roots = paths or [CASES]
    for root in roots:
        root = os.path.abspath(root)
        if os.path.isfile(root):
            files = [root]
        else:
            files = []
            for d, _, fs in os.walk(root):
                files += [os.path.join(d, f) for f in fs]
        for f in files:
            if not f.endswith(".js"):
                continue
            rel = os.path.relpath(f, CASES)
            parts = rel.split(os.sep)
            pending = parts[0] == PENDING
            area = parts[1] if pending and len(parts) > 2 else parts[0]
            if areas and area not in areas:
                continue
            expect = f[:-3] + ".expect"
            name = os.path.relpath(f[:-3], CASES)
            found.append((area, name, f, expect, pending))
    return sorted(set(found))


def check(case, env, cli):
    """Runs one case; returns (ok, detail)."""
    area, name, js, expect_path, pending = case
    try:
        with open(expect_path, encoding="utf-8") as f:
            exp = json.load(f)
    except (OSError, ValueError) as e:
        return False, f"bad or missing .expect: {e}"
    case_dir = os.path.dirname(js)
    args = [expand(a, case_dir) for a in exp.get("args", [])]
    cmd = [cli, "run", "--json"] + args + [js]
    limit = exp.get("timeout", 30)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=limit, cwd=case_dir)
    except subprocess.TimeoutExpired:
        return False, f"hung for more than {limit} s: {' '.join(cmd)}"
    took = time.monotonic() - t0
    errs = []
    status = exp.get("status", "completed")
    want_exit = exp.get("exit", 0 if status == "completed" else 1)
    if p.returncode != want_exit:
        errs.append(f"exit {p.returncode}, expected {want_exit}")
    out = p.stdout.decode("utf-8", "replace")
    stderr = p.stderr.decode("utf-8", "replace").strip()
    lines = out.rstrip("\n").split("\n")  # not splitlines(): U+2028 may be in a value
    if len(lines) != 1:
        errs.append(f"stdout has {len(lines)} lines, expected exactly one JSON line")
    try:
        res = json.loads(out)
    except ValueError as e:
        errs.append(f"stdout is not JSON ({e}): {out[:300]!r}; stderr: {stderr[:300]!r}")
        return False, "; ".join(errs)
    if res.get("status") != status:
        errs.append(f"status {res.get('status')!r}, expected {status!r}")
    err = res.get("error") or {}
    if status == "failed" and "code" in exp and err.get("code") != exp["code"]:
        errs.append(f"code {err.get('code')!r}, expected {exp['code']!r}")
    if "name" in exp and err.get("name") != exp["name"]:
        errs.append(f"name {err.get('name')!r}, expected {exp['name']!r}")
    if "value" in exp and res.get("value", "<absent>") != exp["value"]:
        errs.append(f"value {json.dumps(res.get('value'))[:400]}, "
                    f"expected {json.dumps(exp['value'])[:400]}")
    if "value_bytes" in exp:
        # the value is the raw text between "value": and ,"console":
        start = out.find('"value":')
        end = out.rfind(',"console":')
        raw = out[start + 8:end] if start >= 0 and end > start else None
        if raw != exp["value_bytes"]:
            errs.append(f"value bytes {raw!r}, expected {exp['value_bytes']!r}")
    for s in as_list(exp.get("message_contains")):
        if s not in err.get("message", ""):
            errs.append(f"message {err.get('message')!r} lacks {s!r}")
    for s in as_list(exp.get("stack_contains")):
        if s not in err.get("stack", ""):
            errs.append(f"stack {err.get('stack')!r} lacks {s!r}")
    for s in as_list(exp.get("stack_matches")):
        if not re.search(s, err.get("stack", "")):
            errs.append(f"stack {err.get('stack')!r} does not match {s!r}")
    for s in as_list(exp.get("stack_excludes")):
        if s in err.get("stack", ""):
            errs.append(f"stack {err.get('stack')!r} contains {s!r}")
    if "console" in exp and res.get("console") != exp["console"]:
        errs.append(f"console {json.dumps(res.get('console'))[:400]}, "
                    f"expected {json.dumps(exp['console'])[:400]}")
    text = "\n".join(e.get("text", "") for e in res.get("console", []))
    for s in as_list(exp.get("console_contains")):
        if s not in text:
            errs.append(f"console lacks {s!r}: {text[:300]!r}")
    for k, v in exp.get("stats", {}).items():
        if res.get("stats", {}).get(k) != v:
            errs.append(f"stats.{k} {res.get('stats', {}).get(k)!r}, expected {v!r}")
    if errs and status == "failed" and res.get("status") == "failed":
        errs.append(f"error was {json.dumps(err)[:400]}")
    elif errs and res.get("status") == "failed":
        errs.append(f"run failed: {json.dumps(err)[:400]}")
    if errs:
        return False, "; ".join(errs)
    return True, f"{took:.2f}s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--area", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-pending", action="store_true", help="skip the _pending cases")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    env = dict(os.environ)
    env["AIRLOCK_WORKER"] = os.path.abspath(a.worker)
    cli = os.path.abspath(a.cli)
    cases = find_cases(a.paths, set(a.area))
    if a.no_pending:
        cases = [c for c in cases if not c[4]]
    if not cases:
        print("no cases found")
        print("0 passed, 1 failed")
        return 1
    passed = failed = pending = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futures = [(c, ex.submit(check, c, env, cli)) for c in cases]
        for c, fut in futures:
            ok, detail = fut.result()
            if c[4]:
                pending += 1
                state = "still failing" if not ok else "NOW PASSES (move it out of _pending)"
                print(f"pending {c[1]}: {state}: {detail}", flush=True)
            elif ok:
                passed += 1
                print(f"ok      {c[1]} ({detail})", flush=True)
            else:
                failed += 1
                print(f"FAIL    {c[1]}: {detail}", flush=True)
    if pending:
        print(f"{pending} pending (known bugs, not counted)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
