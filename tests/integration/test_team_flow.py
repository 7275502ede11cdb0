#!/usr/bin/env python3
"""The README's team flow, as a new user runs it after `make run`.

    test_team_flow.py --airlockd PATH --cli PATH

Starts scripts/demo.py as `make run` does (data in ./var of a fresh directory, which also
holds build/bin/airlock and examples/, so the README's relative paths hold; free ports instead
of 8080 and 8081), then takes the first `sh` block of the README's section "The command line
as airlockd's client" and runs it in bash, command by command, as it is written - only the URL
is the demo's. Each command must exit 0, or the status its trailing `# exit status N` comment
says. Then, through the API: the demo's refund was approved by demo-approver and completed,
refund-small v1 is approved, its refund of o-1002 waits with its exact arguments, and both
`audit verify` runs verified. Also: the demo's banner is the last thing it prints (its
servers' output is in var/*.log), and it is the banner the README's quick start shows; and
every link of the README's map of parts leads somewhere.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README_URL = "http://127.0.0.1:8080"
WAIT_S = 120  # a deadline, never a measure


def fail(msg):
    print("team flow: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def readme_block(readme, heading, fence):
    """The first block fenced with `fence` in the section under `heading`."""
    at = readme.find("\n" + heading + "\n")
    if at < 0:
        fail("README has no section %r" % heading)
    section = readme[at + len(heading) + 2:]
    section = section[:section.find("\n## ")] if "\n## " in section else section
    opening, body = None, []
    for line in section.splitlines():
        if opening is None and line.startswith("```"):
            opening, body = line, []
        elif opening is not None and line == "```":
            if opening == fence:
                return "\n".join(body) + "\n"
            opening = None
        elif opening is not None:
            body.append(line)
    fail("README's section %r has no %s block" % (heading, fence))


def commands(block):
    """[(text, expected exit status)]: lines joined where one ends in `\\` or `|`."""
    out, cur = [], []
    for line in block.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur.append(line)
        if not line.rstrip().endswith(("\\", "|")):
            text = "\n".join(cur)
            m = re.search(r"#\s*exit status (\d+)\s*$", line)
            out.append((text, int(m.group(1)) if m else 0))
            cur = []
    if cur:
        fail("the block ends inside a command: %r" % cur)
    return out


def script(cmds):
    """bash that runs each command and stops at the first unexpected exit status."""
    out = ["set -o pipefail"]
    for i, (text, want) in enumerate(cmds, 1):
        out += [text, "st=$?",
                'if [ "$st" -ne %d ]; then echo "team flow: command %d exited $st, not %d" >&2; '
                'exit 100; fi' % (want, i, want),
                "echo '@@ command %d done'" % i]
    return "\n".join(out) + "\n"


def api(url, key, path):
    req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=WAIT_S) as r:
        return json.loads(r.read())


def start_demo(airlockd, work):
    demo = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "scripts", "demo.py"), "--airlockd", airlockd,
         "--data-dir", "./var", "--listen", "127.0.0.1:0", "--connector-port", "0", "--fresh"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, ready = [], threading.Event()

    def read():
        for line in demo.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("Ctrl-C stops airlockd."):
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not ready.wait(WAIT_S) or demo.poll() is not None:
        demo.kill()
        fail("the demo did not get ready:\n%s\n%s" % ("\n".join(lines), demo.stderr.read()))
    return demo, reader, lines


def check_banner(readme, banner, url):
    """The demo prints its banner last, and the README's quick start shows that banner."""
    if not banner or banner[0] != "" or banner[1] != "airlock demo: ready":
        fail("the demo's output does not start with its banner: %r" % banner[:3])
    shown = readme_block(readme, "## Quick start", "```")
    printed = "\n".join(banner[1:]).replace(url, README_URL) + "\n"
    if printed != shown:
        fail("the README's banner is not the demo's:\n--- README\n%s--- demo\n%s"
             % (shown, printed))


def check_map(readme):
    """The README's map of parts: every link goes to a heading of the README or to a file."""
    heading = "## Which part for which job"
    at = readme.find("\n" + heading + "\n")
    if at < 0:
        fail("README has no section %r" % heading)
    section = readme[at + len(heading) + 2:]
    section = section[:section.find("\n## ")]
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", readme, re.M)}
    links = re.findall(r"\]\(([^)]+)\)", section)
    if len(links) < 8:
        fail("the map has %d links" % len(links))
    for link in links:
        if link.startswith("#") and link[1:] not in slugs:
            fail("the map links to %s, which is no heading of the README" % link)
        if not link.startswith("#") and not os.path.exists(os.path.join(ROOT, link)):
            fail("the map links to %s, which does not exist" % link)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlockd", required=True)
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    check_map(readme)
    cmds = commands(readme_block(readme, "## The command line as airlockd's client", "```sh"))
    if len(cmds) < 10:
        fail("the team flow has %d commands" % len(cmds))

    work = tempfile.mkdtemp(prefix="team-flow-")
    os.makedirs(os.path.join(work, "build", "bin"))
    os.symlink(os.path.abspath(a.cli), os.path.join(work, "build", "bin", "airlock"))
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
    demo, reader, lines = start_demo(os.path.abspath(a.airlockd), work)
    try:
        m = re.search(r"^  URL +(http://\S+)$", "\n".join(lines), re.M)
        if not m:
            fail("no URL in the banner: %r" % lines)
        url = m.group(1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
        run = subprocess.run(["bash", "-c", script(cmds).replace(README_URL, url)], cwd=work,
                             env=env, capture_output=True, text=True, timeout=WAIT_S * 3)
        if run.returncode != 0:
            fail("the README's commands stopped (%d):\n%s\n%s"
                 % (run.returncode, run.stdout, run.stderr))
        out = run.stdout
        if out.count("@@ command") != len(cmds):
            fail("not every command ran:\n" + out)
        if len(re.findall(r"^-: verified \d+ records", out, re.M)) != 2:
            fail("the audit export did not verify twice:\n" + out)
        if "the kept checkpoint of seq" not in out:
            fail("the checkpoint was not reached:\n" + out)

        with open(os.path.join(work, "var", "admin.key")) as f:
            admin = f.read().strip()
        decided = [x for x in api(url, admin, "/v1/approvals?status=approved")
                   if x["template"] == "refund"]
        if len(decided) != 1 or decided[0]["decided_by"] != "demo-approver" \
                or decided[0]["args"] != ["o-1004", 4200]:
            fail("the demo's refund was not approved by demo-approver: %r" % decided)
        refund = api(url, admin, "/v1/runs/" + decided[0]["run"])
        if refund["status"] != "completed" or refund["value"] != {
                "refund": "rf-1004", "order": "o-1004", "amount": 4200}:
            fail("the demo's refund did not complete: %r" % refund)
        small = api(url, admin, "/v1/templates/refund-small")
        if [v["state"] for v in small["versions"]] != ["approved"]:
            fail("refund-small v1 is not approved: %r" % small)
        waiting = api(url, admin, "/v1/approvals?status=pending")
        if [(x["template"], x["function"], x["args"]) for x in waiting] != [
                ("refund-small", "billing.refund", ["o-1002", 310.5])]:
            fail("the second refund does not wait alone: %r" % waiting)
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            demo.kill()
        reader.join(WAIT_S)
    err = demo.stderr.read()
    if err:
        fail("the demo wrote to stderr, which would mix with its banner:\n" + err)
    check_banner(readme, lines, url)
    shutil.rmtree(work, ignore_errors=True)
    print(out)
    print("team flow: ok (%d commands of the README)" % len(cmds))


if __name__ == "__main__":
    main()
