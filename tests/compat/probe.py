#!/usr/bin/env python3
"""The compatibility table of docs/javascript.md, generated from probes so it cannot drift.

usage: probe.py --cli PATH [--worker PATH] [--peer DIR] (--write | --check) [DOC]

Runs every probe of tests/compat/probes.txt (one ES2020-ES2025 feature each: a run's source that
returns true when the feature works) on airlock through `airlock run --json`, and, with --peer,
on run@2.1.5 through tests/compat/probe_run.mjs. DOC (default docs/javascript.md) holds the
table between the markers <!-- compat:begin --> and <!-- compat:end -->.

  --write  rewrites the table. Without --peer the run@2.1.5 column is kept from DOC, so only
           the airlock side is measured (no network, no Node package needed).
  --check  compares DOC's airlock column with what airlock does now and fails on any
           difference (the ctest compat.table). Prints one line per probe and a final
           `N passed, M failed` line.

To regenerate both columns (needs Node and the npm registry once):
    mkdir -p build/compat-peer && cp bench/package.json bench/package-lock.json build/compat-peer/
    npm ci --prefix build/compat-peer --no-audit --no-fund
    python3 tests/compat/probe.py --cli build/bin/airlock --peer build/compat-peer --write
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBES = os.path.join(HERE, "probes.txt")
BEGIN = "<!-- compat:begin -->"
END = "<!-- compat:end -->"
HEAD = ["| edition | kind | feature | airlock | run@2.1.5 |",
        "|---|---|---|---|---|"]


def load_probes():
    probes = []
    with open(PROBES, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            edition, kind, feature, source = line.split(" | ", 3)
            probes.append((edition, kind, feature, source.replace("\u23ce", "\n")))
    return probes


def run_airlock(cli, env, source):
    with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False, encoding="utf-8") as f:
        f.write(source)
        path = f.name
    try:
        p = subprocess.run([cli, "run", "--json", path], env=env, capture_output=True,
                           timeout=60)
        res = json.loads(p.stdout.decode("utf-8", "replace") or "{}")
    except (subprocess.TimeoutExpired, ValueError):
        return False, "no result"
    finally:
        os.unlink(path)
    if res.get("status") == "completed":
        return res.get("value") is True, "" if res.get("value") is True else "returned false"
    err = res.get("error") or {}
    return False, f"{err.get('name', '')}: {err.get('message', '')}".strip(": ")


def read_table(doc):
    """feature -> (airlock, run) cells of the table in DOC."""
    rows = {}
    text = open(doc, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        return rows, text
    for line in text.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 5 and cells[0] not in ("edition", "---"):
            rows[cells[2]] = (cells[3], cells[4])
    return rows, text


def cell(ok):
    return "yes" if ok else "no"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--worker")
    ap.add_argument("--peer")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    ap.add_argument("doc", nargs="?", default=os.path.join(ROOT, "docs", "javascript.md"))
    a = ap.parse_args()
    env = dict(os.environ)
    if a.worker:
        env["AIRLOCK_WORKER"] = os.path.abspath(a.worker)
    probes = load_probes()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(lambda p: run_airlock(os.path.abspath(a.cli), env, p[3]), probes))
    rows, text = read_table(a.doc)

    if a.check:
        passed = failed = 0
        for (edition, kind, feature, _), (ok, why) in zip(probes, results):
            want = rows.get(feature, ("missing", ""))[0]
            if want == cell(ok):
                passed += 1
                print(f"ok      {feature}: {cell(ok)}")
            else:
                failed += 1
                print(f"FAIL    {feature}: the table says {want!r}, airlock does "
                      f"{cell(ok)!r} ({why or 'works'}); regenerate: probe.py --write")
        extra = set(rows) - {p[2] for p in probes}
        for feature in sorted(extra):
            failed += 1
            print(f"FAIL    {feature}: in the table but not in probes.txt")
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0

    peer = {}
    if a.peer:
        p = subprocess.run(["node", os.path.join(HERE, "probe_run.mjs"), a.peer, PROBES],
                           capture_output=True, check=True, timeout=600)
        peer = {k: cell(v) for k, v in json.loads(p.stdout).items()}
    lines = list(HEAD)
    for (edition, kind, feature, _), (ok, _why) in zip(probes, results):
        run_cell = peer.get(feature) or rows.get(feature, ("", "?"))[1]
        lines.append(f"| {edition} | {kind} | {feature} | {cell(ok)} | {run_cell} |")
    table = "\n".join(lines)
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = f"{before}{BEGIN}\n{table}\n{END}{after}"
    else:
        text = f"{text.rstrip()}\n\n{BEGIN}\n{table}\n{END}\n"
    with open(a.doc, "w", encoding="utf-8") as f:
        f.write(text)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
