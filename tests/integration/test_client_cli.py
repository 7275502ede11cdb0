#!/usr/bin/env python3
"""Integration tests of the airlock command as airlockd's client: `airlock template`, `runs`,
`approvals` and `audit export`, each against a real airlockd and the shop connector, through
the command line only (the people are made through the API, as an admin would).

usage: test_client_cli.py --airlockd PATH --cli PATH [-k SUBSTRING]

The flow: an author creates, pushes and submits a template; an approver diffs and approves it
(its author, holding the approver role too, is refused: four eyes); an agent runs it (exit 0),
a sensitive call waits (exit 3, the approval id printed), the approver approves, the run shows
completed; a waiting run is cancelled, the version revoked, and the audit export piped into
`airlock audit verify -` verifies. Every command's --json output parses; guest text with escape
sequences never reaches the output raw; usage errors exit 2 naming what was wrong; a server
that is not there exits 1. Waiting for a run's state polls with a deadline, nothing sleeps.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_runs as tr  # noqa: E402
import test_server as ts  # noqa: E402
from test_server import check  # noqa: E402

HANG = ts.HANG
ESC = "\x1b"


def cli(args, key=None, port=None, stdin=None, env=None, timeout=HANG):
    """Runs `airlock ARGS` as the principal with `key`: (exit status, stdout, stderr)."""
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            e[k] = os.environ[k]
    if port is not None:
        e["AIRLOCK_URL"] = "http://127.0.0.1:%d" % port
    if key is not None:
        e["AIRLOCK_KEY"] = key
    e.update(env or {})
    p = subprocess.run([ts.CLI] + args, env=e, input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class As:
    """The command line of one principal of a World."""

    def __init__(self, w, name):
        self.w, self.key = w, w.keys[name] if name != "admin" else w.admin

    def __call__(self, *args, want=0, stdin=None):
        rc, out, err = cli(list(args), self.key, self.w.s.port, stdin=stdin)
        check(rc == want, "airlock %s: exit %d, want %d\nstdout %r\nstderr %r" % (
            " ".join(args), rc, want, out[:600], err[:600]))
        return out, err

    def json(self, *args, want=0):
        out, err = self(*(list(args) + ["--json"]), want=want)
        try:
            return json.loads(out)
        except ValueError:
            raise ts.Fail("airlock %s --json: not one JSON document: %r" % (" ".join(args),
                                                                          out[:300]))


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def audit_public_key(w):
    m = re.search(r"airlockd: audit public key ([0-9a-f]{64})", w.s.stderr())
    check(m, "no audit public key in airlockd's stderr")
    return m.group(1)


REFUND_SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}},
                 "required": ["amount"]}


# ---------------------------------------------------------------------------------------------
def t_whole_flow(tmp):
    w = tr.World(tmp)
    try:
        # alice writes templates and holds the approver role too: four eyes still stops her
        w.ok("POST", "/v1/principals/alice/roles", {"role": "approver", "department": "finance"},
             w.admin, 201)
        alice, bob, agent, eve = (As(w, n) for n in ("alice", "bob", "agent-7", "eve"))

        out, _ = alice("template", "create", "refund", "--department", "finance",
                       "--description", "refunds up to 50")
        check("template refund created in department finance" in out, out)
        doc = alice.json("template", "create", "summary", "--department", "finance")
        check(doc["name"] == "summary" and doc["versions"] == [], "create --json: %r" % doc)
        _, err = alice("template", "create", "refund", "--department", "finance", want=1)
        check("409 CONFLICT" in err, "a taken name: %r" % err)

        src = write(tmp, "refund.js", tr.REFUND)
        schema = write(tmp, "refund.schema.json", json.dumps(REFUND_SCHEMA))
        out, _ = alice("template", "push", "refund", src, "--functions",
                       "shop.orders,shop.refund", "--input-schema", schema, "--limits",
                       '{"timeout_ms":20000,"host_calls":5}')
        check(re.search(r"^refund v1  draft  sha256:[0-9a-f]{64}$", out, re.M), "push: %r" % out)
        v = w.ok("GET", "/v1/templates/refund/versions/1", None, w.keys["alice"])
        check(v["source"] == tr.REFUND and v["functions"] == ["shop.orders", "shop.refund"] and
              v["input_schema"] == REFUND_SCHEMA and v["limits"] == {"timeout_ms": 20000,
                                                                     "host_calls": 5} and
              v["language"] == "js" and v["autonomy"] == "autonomous", "pushed: %r" % v)
        out, _ = alice("template", "submit", "refund", "1")
        check("refund v1  submitted" in out and "submitted by alice" in out, out)

        # the approver reads what changed, against nothing approved yet
        out, _ = bob("template", "diff", "refund", "1")
        for want in ("refund v1 against nothing", "functions:", "+ shop.orders",
                     "+ shop.refund", "limits.timeout_ms: null -> 20000", "input_schema: null",
                     "+++ refund v1", "+const r = await shop.refund(orders[0].id, input.amount);"):
            check(want in out, "diff lacks %r:\n%s" % (want, out))
        d = bob.json("template", "diff", "refund", "1")
        check(d["version"] == 1 and d["from"] is None and "+++ refund v1" in d["source_diff"],
              "diff --json: %r" % d)

        # four eyes: the author is refused with the server's code, the other approver approves
        _, err = alice("template", "approve", "refund", "1", want=1)
        check("409 CONFLICT" in err and "four eyes" in err, "the author approved: %r" % err)
        out, _ = bob("template", "approve", "refund", "1", "--comment", "checked the cap")
        check("refund v1  approved" in out and "approved by bob: checked the cap" in out, out)

        # push --submit in one go, approve with --json; a second version diffs against it
        ssrc = write(tmp, "summary.js", tr.SUMMARY)
        doc = alice.json("template", "push", "summary", ssrc, "--functions", "shop.orders",
                         "--submit")
        check(doc["version"] == 1 and doc["state"] == "submitted", "push --submit: %r" % doc)
        doc = bob.json("template", "approve", "summary", "1")
        check(doc["state"] == "approved" and doc["approved_by"] == "bob", "%r" % doc)
        doc = alice.json("template", "push", "summary", write(tmp, "summary2.ts", tr.SUMMARY +
                                                                "// v2\n"),
                         "--functions", "shop.orders,shop.fail", "--autonomy", "supervised")
        check(doc["version"] == 2 and doc["language"] == "ts" and doc["autonomy"] ==
              "supervised", "a .ts file is TypeScript: %r" % doc)
        out, _ = bob("template", "diff", "summary", "2")
        for want in ("summary v2 against v1", "+ shop.fail", 'autonomy: "autonomous" -> '
                     '"supervised"', 'language: "js" -> "ts"', "+// v2"):
            check(want in out, "diff v2 lacks %r:\n%s" % (want, out))
        out, _ = alice("template", "list")
        check("summary  (finance)" in out and "  v2  draft  by alice" in out, out)
        alice("template", "submit", "summary", "2")
        out, _ = bob("template", "reject", "summary", "2", "--comment", "no schema")
        check("summary v2  rejected" in out and "rejected by bob: no schema" in out, out)
        _, err = bob("template", "approve", "summary", "2", want=1)
        check("409 CONFLICT" in err and "rejected" in err, "approve a rejected one: %r" % err)
        check(isinstance(alice.json("template", "list"), list), "list --json")
        out, _ = bob("template", "show", "refund", "1")
        check("approved by bob" in out and "source:\n" + tr.REFUND in out, out)
        check(bob.json("template", "show", "refund")["name"] == "refund", "show --json")

        # the agent runs it: completed, exit 0, the value pretty-printed
        out, _ = agent("runs", "start", "summary", "--input", '{"status":"paid"}')
        check(re.search(r"^run_[0-9a-f]{32}  completed  summary v1  by agent-7", out, re.M) and
              "console:\n  log: orders 2\n" in out and
              'value:\n{\n  "count": 2,\n  "total": 150\n}\n' in out, "runs start: %r" % out)
        doc = agent.json("runs", "start", "summary", "--version", "1", "--input-file",
                         write(tmp, "in.json", '{"status":"pending"}'))
        check(doc["status"] == "completed" and doc["value"] == {"count": 1, "total": 5},
              "runs start --json: %r" % doc)
        done = doc["id"]

        # a sensitive call: exit 3, and the id to decide is printed
        out, _ = agent("runs", "start", "refund", "--input", '{"amount":7}', want=3)
        run = re.search(r"^(run_[0-9a-f]{32})  awaiting_approval  refund v1", out, re.M)
        check(run, "a waiting run: %r" % out)
        run = run.group(1)
        pending = w.ok("GET", "/v1/approvals?status=pending&run=" + run, None, w.keys["bob"])
        check(len(pending) == 1, "%r" % pending)
        apr = pending[0]["id"]
        check("waits for a person: 1 approval\n  %s  shop.refund(\"o-1\",7)\n" % apr in out,
              "the approval id and call: %r" % out)
        out, _ = agent("runs", "show", run, want=3)
        check(apr in out, "runs show of a waiting run: %r" % out)

        out, _ = bob("approvals", "list")
        check(out.startswith(apr + "  pending  shop.refund(\"o-1\",7)\n    run " + run +
                             "  refund v1  requested by agent-7"), "approvals list: %r" % out)
        # what informs the decision: the arguments by name, the line that made the call, the wait
        check("\n    arg1: \"o-1\"\n    arg2: 7\n    line 3: "
              "const r = await shop.refund(orders[0].id, input.amount);\n    waiting 0d 00h" in out,
              "approvals list's informing lines: %r" % out)
        lst = bob.json("approvals", "list", "--run", run)
        check([a["id"] for a in lst] == [apr], "approvals list --json: %r" % lst)
        # four eyes on runs too: the agent that started it cannot decide it (no approver role)
        _, err = agent("approvals", "approve", apr, want=1)
        check("403 FORBIDDEN" in err, "%r" % err)
        out, _ = bob("approvals", "approve", apr, "--comment", "refund ok")
        check(out.startswith(apr + "  approved  shop.refund") and
              "decided by bob: refund ok" in out, "approve: %r" % out)
        _, err = bob("approvals", "approve", apr, want=1)
        check("409 CONFLICT" in err, "decided twice: %r" % err)
        w.until(run, ("completed",))
        out, _ = agent("runs", "show", run)
        check(run + "  completed  refund v1" in out and '"refunded": "o-1"' in out, out)
        doc = agent.json("runs", "show", run)
        check(doc["value"]["refund"] == {"refunded": "o-1", "amount": 7}, "%r" % doc)

        lst = bob.json("runs", "list")
        check({done, run} <= {r["id"] for r in lst}, "runs list --json: %r" % lst)
        out, _ = bob("runs", "list", "--template", "refund", "--status", "completed",
                     "--limit", "10")
        check(out.startswith("ID") and run in out and done not in out, "runs list: %r" % out)
        out, _ = bob("runs", "list", "--principal", "nobody")
        check(out == "no runs\n", out)

        # a denied call throws in the guest; the run goes on and fails, exit 1
        out, _ = agent("runs", "start", "refund", "--input", '{"amount":8}', want=3)
        apr2 = w.ok("GET", "/v1/approvals?status=pending", None, w.keys["bob"])[0]["id"]
        doc = bob.json("approvals", "deny", apr2, "--comment", "over the cap")
        check(doc["status"] == "denied" and doc["comment"] == "over the cap", "%r" % doc)

        # a waiting run cancelled
        out, _ = agent("runs", "start", "refund", "--input", '{"amount":9}', want=3)
        waiting = re.search(r"^(run_[0-9a-f]{32})", out, re.M).group(1)
        out, _ = agent("runs", "cancel", waiting)
        check(waiting + "  cancelled" in out and "ABORTED" in out, "cancel: %r" % out)
        agent("runs", "show", waiting, want=1)
        _, err = agent("runs", "cancel", waiting, want=1)
        check("409 CONFLICT" in err, "a second cancel: %r" % err)
        doc = agent.json("runs", "show", waiting, want=1)
        check(doc["status"] == "cancelled", "%r" % doc)

        # revoked: new runs refused with the server's code
        out, _ = bob("template", "revoke", "refund", "1", "--reason", "refunds paused")
        check("refund v1  revoked" in out and "revoked by bob: refunds paused" in out, out)
        _, err = agent("runs", "start", "refund", "--input", '{"amount":1}', want=1)
        check("409 TEMPLATE_REVOKED" in err, "a run of a revoked version: %r" % err)
        _, err = agent("runs", "start", "nosuch", want=1)
        check("404 NOT_FOUND" in err, "%r" % err)
        out, _ = bob("approvals", "list")
        check(out == "no pending approvals\n", "the cancel closed its approval: %r" % out)
        decided = {a["id"]: a["status"] for a in bob.json("approvals", "list", "--status", "all")}
        check(decided.get(apr) == "approved" and decided.get(apr2) == "denied" and
              "cancelled" in decided.values(), "approvals list --status all: %r" % decided)

        # the audit export, piped into the verifier; into a file, pinned to the server's key
        exp = subprocess.Popen([ts.CLI, "audit", "export"], stdout=subprocess.PIPE,
                               env={"AIRLOCK_URL": "http://127.0.0.1:%d" % w.s.port,
                                    "AIRLOCK_KEY": w.keys["eve"],
                                    "PATH": os.environ.get("PATH", "")})
        ver = subprocess.run([ts.CLI, "audit", "verify", "-"], stdin=exp.stdout,
                             capture_output=True, timeout=HANG)
        exp.stdout.close()
        check(exp.wait(timeout=HANG) == 0, "audit export exited %r" % exp.returncode)
        check(ver.returncode == 0 and b"verified" in ver.stdout,
              "export | verify -: %d %r %r" % (ver.returncode, ver.stdout, ver.stderr))
        pub = audit_public_key(w)
        path = os.path.join(tmp, "audit.jsonl")
        out, _ = eve("audit", "export", "-o", path)
        check(re.fullmatch(re.escape(path) + r": \d+ records\n", out), out)
        check(os.stat(path).st_mode & 0o777 == 0o600, "the export is readable by others")
        eve("audit", "verify", path, "--public-key", pub)
        with open(path) as f:
            lines = f.read().splitlines()
        actions = [json.loads(line)["action"] for line in lines]
        for a in ("template.create", "version.create", "version.submit", "version.approve",
                  "run.start", "approval.approve", "run.cancel", "version.revoke"):
            check(a in actions, "the export lacks %s" % a)
        last = json.loads(lines[-1])["seq"]
        early = write(tmp, "early.jsonl", "\n".join(lines) + "\n")
        # --after: the rest of an export; appended to the first one, the whole file verifies
        alice("template", "create", "later", "--department", "finance")
        rest, _ = eve("audit", "export", "--after", str(last))
        recs = [json.loads(line) for line in rest.splitlines()]
        check(recs and recs[0]["seq"] == last + 1 and
              recs[-1]["action"] == "audit.checkpoint", "export --after: %r" % recs[:2])
        with open(path, "a") as f:
            f.write(rest)
        out, _ = eve("audit", "verify", path, "--public-key", pub)
        check("verified %d records" % recs[-1]["seq"] in out, out)
        # A file alone cannot show that its tail was cut together with its checkpoints: the
        # earlier export is such a cut, and it verifies, pinned key and all. The checkpoint the
        # auditor kept (`airlock audit checkpoint`) is what finds it.
        cp_text, _ = eve("audit", "checkpoint")
        cp = json.loads(cp_text)
        check(cp["seq"] == recs[-1]["seq"] and cp["public_key"] == pub, "checkpoint: %r" % cp)
        cp_file = write(tmp, "cp.json", cp_text)
        out, _ = eve("audit", "verify", path, "--public-key", pub, "--checkpoint", cp_file)
        check("the kept checkpoint of seq %d is reached" % cp["seq"] in out, out)
        eve("audit", "verify", early, "--public-key", pub)
        _, err = eve("audit", "verify", early, "--public-key", pub, "--checkpoint", cp_file,
                     want=1)
        check("export ends before the kept checkpoint" in err and
              "ends at seq %d" % last in err, err)
        doc = eve.json("audit", "verify", early, "--checkpoint", cp_file, want=1)
        check(doc["ok"] is False and doc["fault"] == "export ends before the kept checkpoint" and
              doc["seq"] == cp["seq"], "%r" % doc)
        forged = dict(cp, hash="0" * 64)
        _, err = eve("audit", "verify", path, "--checkpoint",
                     write(tmp, "forged.json", json.dumps(forged)), want=1)
        check("bad checkpoint signature" in err, err)
        _, err = eve("audit", "verify", path, "--checkpoint",
                     write(tmp, "bad.json", '{"seq":1}'), want=2)
        check("is not a checkpoint" in err, err)
        # the agent may not read the audit log: refused, and no file is left behind
        gone = os.path.join(tmp, "agent.jsonl")
        _, err = agent("audit", "export", "-o", gone, want=1)
        check("403 FORBIDDEN" in err and not os.path.exists(gone), "%r" % err)
        # nor is a file that was there before lost: a refused or failed export leaves it whole
        with open(path) as f:
            before = f.read()
        _, err = agent("audit", "export", "-o", path, want=1)
        check("403 FORBIDDEN" in err and os.path.exists(path), "a refusal removed %s" % path)
        with open(path) as f:
            check(f.read() == before, "a refused export truncated the earlier one")
        rc, _, err = cli(["audit", "export", "-o", path], w.keys["eve"], free_port())
        check(rc == 1 and os.path.exists(path), "unreachable: %d %r" % (rc, err))
        with open(path) as f:
            check(f.read() == before, "an unreachable server truncated the earlier export")
        # -o over a symlink (a shared folder): the file it points to is never written
        target, link = os.path.join(tmp, "victim.txt"), os.path.join(tmp, "link.jsonl")
        with open(target, "w") as f:
            f.write("keep me\n")
        os.symlink(target, link)
        agent("audit", "export", "-o", link, want=1)
        eve("audit", "export", "-o", link)
        with open(target) as f:
            check(f.read() == "keep me\n", "audit export -o wrote through a symlink")
        check(not os.path.islink(link) and os.stat(link).st_mode & 0o777 == 0o600, "%s" % link)
        eve("audit", "verify", link, "--public-key", pub)
    finally:
        w.close()


def t_supervised_and_timeout(tmp):
    w = tr.World(tmp)
    try:
        alice, bob, agent = (As(w, n) for n in ("alice", "bob", "agent-7"))
        alice("template", "create", "slow", "--department", "finance")
        alice("template", "push", "slow", write(tmp, "slow.js", "return await shop.slow(input.ms);"),
              "--functions", "shop.slow", "--submit")
        bob("template", "approve", "slow", "1")
        alice("template", "create", "sup", "--department", "finance")
        alice("template", "push", "sup", write(tmp, "sup.js", "return 42;"), "--autonomy",
              "supervised")
        doc = alice.json("template", "submit", "sup", "1")
        check(doc["state"] == "submitted" and doc["submitted_by"] == "alice", "%r" % doc)
        bob("template", "approve", "sup", "1")
        # a supervised run waits for a person before it starts: exit 3, the approval named
        out, _ = agent("runs", "start", "sup", want=3)
        run = re.search(r"^(run_[0-9a-f]{32})", out, re.M).group(1)
        apr = w.ok("GET", "/v1/approvals?run=" + run, None, w.keys["bob"])[0]["id"]
        check("  %s  the start of the run (supervised)\n" % apr in out, out)
        doc = bob.json("approvals", "approve", apr)
        check(doc["id"] == apr and doc["status"] == "approved" and doc["kind"] == "run",
              "approvals approve --json: %r" % doc)
        w.until(run, ("completed",))
        out, _ = agent("runs", "show", run)
        check("value:\n42\n" in out, out)
        # --no-wait: accepted, exit 0, still running; then shown completed
        doc = agent.json("runs", "start", "slow", "--input", '{"ms":300}', "--no-wait")
        check(doc["status"] in ("running", "queued"), "--no-wait: %r" % doc)
        w.until(doc["id"], ("completed",))
        out, _ = agent("runs", "start", "slow", "--input", '{"ms":200}', "--no-wait")
        run = re.search(r"^(run_[0-9a-f]{32})  (running|queued)  slow v1", out, re.M)
        check(run and "still running: see `airlock runs show %s`" % run.group(1) in out, out)
        w.until(run.group(1), ("completed",))
        # a run longer than --timeout: the client gives up, exit 1, saying so
        _, err = agent("runs", "start", "slow", "--input", '{"ms":3000}', "--timeout", "1",
                       want=1)
        check("timeout" in err.lower() or "timed out" in err.lower(), "%r" % err)
        # a running run cancelled (--json: the run object), reject and revoke with --json
        doc = agent.json("runs", "start", "slow", "--input", '{"ms":20000}', "--no-wait")
        doc = agent.json("runs", "cancel", doc["id"])
        check(doc["status"] == "cancelled" and doc["error"]["code"] == "ABORTED",
              "runs cancel --json: %r" % doc)
        alice("template", "push", "slow", write(tmp, "slow2.js", "return 2;"), "--submit")
        doc = bob.json("template", "reject", "slow", "2", "--comment", "no")
        check(doc["state"] == "rejected" and doc["reject_comment"] == "no", "%r" % doc)
        doc = bob.json("template", "revoke", "slow", "1", "--reason", "gone")
        check(doc["state"] == "revoked" and doc["revoke_reason"] == "gone", "%r" % doc)
        # the export is JSON Lines, --json or not
        out, _ = As(w, "eve")("audit", "export", "--json")
        recs = [json.loads(line) for line in out.splitlines()]
        check(recs[-1]["action"] == "audit.checkpoint", "audit export --json: %r" % recs[-1])
    finally:
        w.close()


HOSTILE = r"""
console.log("\x1b[2J\x1b[Hcleared");
console.error("bell\x07 and \u009b31m C1");
return { title: "\x1b]0;owned\x07", move: "\x1b[1A\x1b[2K", del: "a\x7fb" };
"""
THROWS = r"""throw new Error("\x1b[31mred\x1b[0m failure");"""


def t_guest_escape_sequences_never_reach_the_terminal(tmp):
    w = tr.World(tmp, adhoc=True)
    try:
        alice, bob, agent = (As(w, n) for n in ("alice", "bob", "agent-7"))
        alice("template", "create", "hostile", "--department", "finance", "--description",
              "desc \x1b[31m red")
        alice("template", "push", "hostile", write(tmp, "h.js", HOSTILE), "--submit")
        bob("template", "approve", "hostile", "1")
        out, err = agent("runs", "start", "hostile")
        for s in (out, err):
            check(ESC not in s and "\x07" not in s and "\x7f" not in s and "\u009b" not in s,
                  "a raw control reached the output: %r" % s)
        check("\\x1b[2J\\x1b[Hcleared" in out and "\\u009b31m" in out, "escaped: %r" % out)
        check('"title": "\\u001b]0;owned\\u0007"' in out, "the value: %r" % out)
        # --json is the server's JSON: the same value, controls escaped by JSON itself
        doc = agent.json("runs", "start", "hostile")
        check(doc["value"]["title"] == "\x1b]0;owned\x07" and
              doc["console"][0]["text"] == "\x1b[2J\x1b[Hcleared", "--json: %r" % doc)
        out, _ = agent("runs", "show", doc["id"])
        check(ESC not in out and "\\x1b" in out, out)
        # a failure's message, an ad-hoc run
        out, err = agent("runs", "start", "--source", write(tmp, "t.js", THROWS),
                         "--department", "finance", want=1)
        check(ESC not in out + err and "error: USER_ERROR: Error: \\x1b[31mred" in out,
              "a failed run: %r %r" % (out, err))
        for args in (("template", "list"), ("template", "show", "hostile"),
                     ("template", "show", "hostile", "1")):
            out, _ = bob(*args)
            check(ESC not in out and "\\x1b" in out, "%r: %r" % (args, out))
    finally:
        w.close()


def t_deep_values_are_shown(tmp):
    """A run's value and a call's arguments nest as deep as values cross the sandbox's boundary
    (here 300 levels): shown, in short lines and --json, and passed on by `airlock mcp` - not
    'airlockd's answer is not JSON' (or a waiting approval nobody can list)."""
    w = tr.World(tmp, adhoc=True)
    try:
        bob, agent = As(w, "bob"), As(w, "agent-7")
        make = "let v = 1; for (let i = 0; i < 300; i++) v = [v];"
        src = write(tmp, "deep.js", make + " return v;")
        out, _ = agent("runs", "start", "--source", src, "--department", "finance")
        check(" completed " in out and "value:\n" in out and out.count("[") == 300,
              "runs start: %r" % out[:300])
        doc = agent.json("runs", "start", "--source", src, "--department", "finance")
        check(doc["status"] == "completed", "--json: %r" % str(doc)[:300])
        out, _ = agent("runs", "show", doc["id"])
        check("completed" in out, "runs show: %r" % out[:300])
        # a sensitive call with such arguments: its approval is listed and can be decided
        src = write(tmp, "deep_call.js", make + " return await shop.refund(v, 1);")
        out, _ = agent("runs", "start", "--source", src, "--department", "finance",
                       "--functions", "shop.refund", want=3)
        out, _ = bob("approvals", "list")
        check("shop.refund([[[[" in out, "approvals list: %r" % out[:300])
        check(len(bob.json("approvals", "list")) == 1, "approvals list --json")
        # airlock mcp hands the tool's deep result on as it came
        line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"source": make + " return v;",
                                                  "functions": []}}})
        rc, out, err = cli(["mcp"], w.keys["agent-7"], w.s.port, stdin=(line + "\n").encode())
        check(rc == 0 and len(out.splitlines()) == 1, "airlock mcp: %d %r %r" % (rc, out, err))
        answer = json.loads(out)
        check("error" not in answer and answer["result"]["structuredContent"]["status"] ==
              "completed", "airlock mcp: %r" % out[:300])
    finally:
        w.close()


def t_usage_errors_and_unreachable(tmp):
    usage = [
        (["template"], "usage: airlock template SUBCOMMAND"),
        (["template", "psuh", "x", "f"], "did you mean 'push'?"),
        (["runs", "lsit"], "did you mean 'list'?"),
        (["approvals", "aprove", "apr_1"], "did you mean 'approve'?"),
        (["audit", "exprot"], "did you mean 'export'?"),
        (["template", "push", "x"], "template push: missing arguments"),
        (["template", "create", "x"], "--department is required"),
        (["template", "create", "bad name", "--department", "d"], "'bad name' is not a template"),
        (["template", "submit", "x", "one"], "VERSION must be a number"),
        (["template", "approve", "x", "0"], "VERSION must be a number"),
        (["template", "revoke", "x", "1", "--comment", "c"], "unknown option '--comment'"),
        (["template", "revoke", "x", "1", "--reasn", "c"], "did you mean '--reason'?"),
        (["template", "push", "x", "f.js", "--language", "py"], "--language must be one of js"),
        (["template", "push", "x", "f.js", "--limits", "{bad"], "--limits is not JSON"),
        (["template", "push", "x", "f.js", "--limits", "[1]"], "--limits must be a JSON object"),
        (["template", "push", "x", os.path.join(tmp, "missing.js")], "cannot open"),
        (["template", "diff", "x"], "missing arguments"),
        (["runs", "start"], "name a TEMPLATE or give --source FILE"),
        (["runs", "start", "t", "--source", "f"], "name a TEMPLATE or give --source FILE"),
        (["runs", "start", "--source", "f.js"], "--source needs --department"),
        (["runs", "start", "t", "--input", "{nope"], "--input is not JSON"),
        (["runs", "start", "t", "--input", "3"], "--input must be a JSON object"),
        (["runs", "start", "t", "--input", "{}", "--input-file", "f"], "not both"),
        (["runs", "start", "t", "--version"], "--version needs a value"),
        (["runs", "start", "t", "--version", "-1"], "--version must be a number"),
        (["runs", "start", "t", "--no-wait", "--no-wait"], "--no-wait is given twice"),
        (["runs", "start", "t", "--no-wait=1"], "--no-wait takes no value"),
        (["runs", "show"], "missing arguments"),
        (["runs", "show", "a", "b"], "unexpected argument 'b'"),
        (["runs", "list", "--stauts", "x"], "did you mean '--status'?"),
        (["runs", "list", "--status", "done"], "--status must be one of queued"),
        (["runs", "list", "--limit", "5000"], "--limit must be a number from 1 to 1000"),
        (["approvals", "list", "--status", "maybe"], "--status must be one of pending"),
        (["audit", "export", "--after", "x"], "--after must be a number"),
    ]
    for args, want in usage:
        rc, out, err = cli(args, "k", 1)
        check(rc == 2 and want in err and out == "", "airlock %s: exit %d, stderr %r (want %r)"
              % (" ".join(args), rc, err, want))
    # every group and subcommand has --help, with the exit status table
    for args in (["template"], ["runs"], ["approvals"], ["audit"], ["template", "push"],
                 ["template", "create"], ["template", "submit"], ["template", "approve"],
                 ["template", "reject"], ["template", "revoke"], ["template", "diff"],
                 ["template", "list"], ["template", "show"], ["runs", "start"], ["runs", "show"],
                 ["runs", "fork"], ["runs", "list"], ["runs", "cancel"], ["approvals", "list"],
                 ["approvals", "approve"], ["approvals", "deny"], ["audit", "export"]):
        rc, out, err = cli(args + ["--help"])
        check(rc == 0 and out.startswith("usage: airlock " + args[0]) and err == "",
              "%r --help: %d %r %r" % (args, rc, out[:100], err))
        if args[0] != "audit":
            check("3 the run waits for a person" in out, "%r --help lacks the exit codes" % args)
    rc, out, _ = cli(["--help"])
    check(rc == 0 and "approvals" in out and "AIRLOCK_URL" in out and
          "3 the run waits for a person" in out, "airlock --help: %r" % out)
    # no AIRLOCK_URL / AIRLOCK_KEY: exit 2, naming them
    for args in (["template", "list"], ["runs", "show", "run_1"], ["approvals", "list"],
                 ["audit", "export"], ["runs", "start", "t"]):
        for key, port in ((None, None), ("k", None), (None, 1)):
            rc, out, err = cli(args, key, port)
            check(rc == 2 and "AIRLOCK_URL" in err and "AIRLOCK_KEY" in err,
                  "%r without the environment: %d %r" % (args, rc, err))
    # nobody at the address: exit 1, saying so
    port = free_port()
    for args in (["template", "list"], ["runs", "start", "t"], ["approvals", "approve", "apr_1"],
                 ["audit", "export"]):
        rc, out, err = cli(args, "k", port)
        check(rc == 1 and "127.0.0.1:%d" % port in err and out == "",
              "%r unreachable: %d %r" % (args, rc, err))


class FakeServer:
    """A stand-in for airlockd on a free port that answers every request with `answer`
    (status, body bytes): what a broken proxy or a hostile server could send."""

    def __init__(self):
        import http.server
        import threading
        fake = self
        self.answer = (200, b"{}")

        class H(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                status, body = fake.answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def t_a_hostile_server_never_reaches_the_terminal_raw(tmp):
    fake = FakeServer()
    commands = (["template", "list"], ["template", "show", "t"], ["template", "diff", "t", "1"],
                ["runs", "show", "run_1"], ["runs", "list"], ["runs", "start", "t"],
                ["approvals", "list"], ["approvals", "approve", "apr_1"], ["audit", "export"])
    try:
        # a refusal whose code and message hold escape sequences: printed escaped on stderr
        fake.answer = (403, json.dumps({"error": {
            "code": "FORBIDDEN\x1b[2J", "message": "\x1b]0;owned\x07 \x1b[31mred \u009b"}}
        ).encode())
        for args in commands:
            rc, out, err = cli(args, "k", fake.port)
            check(rc == 1 and out == "", "%r refused: exit %d, stdout %r" % (args, rc, out))
            check(ESC not in err and "\x07" not in err and "\u009b" not in err,
                  "%r: a raw control reached stderr: %r" % (args, err))
            check("403 FORBIDDEN\\x1b[2J: \\x1b]0;owned" in err, "%r: %r" % (args, err))
        # answers of the wrong shape, or no JSON at all: a clear failure or a dash, no crash
        odd = [b"", b"not json \x1b[2J", b"null", b"7", b'"\\u001b[2J"', b"[1,2,3]",
               b'{"id":7,"status":[],"error":"x","versions":{},"approvals":5}',
               b'[{"id":{},"status":1,"function":3,"args":"x"},null,[]]',
               b"[" * 100000 + b"]" * 100000, b'{"value":' + b'"a",' * 1 + b'"b"}']
        for body in odd:
            for status in (200, 202, 500):
                fake.answer = (status, body)
                for args in commands:
                    rc, out, err = cli(args, "k", fake.port)
                    check(rc in (0, 1, 3), "%r answered %d %r: exit %d\nstderr %r" % (
                        args, status, body[:40], rc, err[-600:]))
                    # (audit export's stdout is the export's bytes, for a file or a pipe)
                    shown = err if args[0] == "audit" else out + err
                    check(ESC not in shown, "%r answered %r: raw ESC: %r %r" % (
                        args, body[:40], out, err))
        # --json promises one JSON document on stdout: an answer that is none is a failure
        for body in (b"not json", b"", b'{"a":1} trailing', b"[1,2"):
            fake.answer = (200, body)
            for args in (["template", "list"], ["template", "show", "t"], ["runs", "list"],
                         ["runs", "show", "run_1"], ["approvals", "list"],
                         ["approvals", "approve", "apr_1"]):
                rc, out, err = cli(args + ["--json"], "k", fake.port)
                check(rc == 1 and out == "" and "answer is not JSON" in err,
                      "%r --json answered %r: exit %d, stdout %r, stderr %r" % (
                          args, body, rc, out, err))
    finally:
        fake.close()


def t_admin_commands(tmp):
    """`airlock admin`: principals, connectors and departments listed, shown, changed and
    deleted from the command line, airlockd's refusals printed with their code."""
    w = tr.World(tmp)
    try:
        admin = As(w, "admin")
        agent = As(w, "agent-7")
        names = [p["name"] for p in admin.json("admin", "principals", "list")]
        check("agent-7" in names and "alice" in names, "principals list --json: %r" % names)
        out, _ = admin("admin", "principals", "show", "agent-7")
        check("agent-7  user  enabled" in out and "agent@finance" in out, "show: %r" % out)
        out, _ = admin("admin", "principals", "patch", "alice", "--identity", "alice@example.com")
        check("alice@example.com" in out, "patch --identity: %r" % out)
        out, _ = admin("admin", "principals", "patch", "agent-7", "--disable")
        check("agent-7  user  disabled" in out, "patch --disable: %r" % out)
        _, err = agent("runs", "list", want=1)
        check("UNAUTHENTICATED" in err and "disabled" in err, "a disabled agent: %r" % err)
        admin("admin", "principals", "patch", "agent-7", "--enable")
        agent("runs", "list")
        doc = admin.json("admin", "principals", "patch", "alice", "--no-identity")
        check(doc["identity"] is None, "--no-identity: %r" % doc)
        # connectors: a free change, then one that would widen an approved version
        w.template("refund", tr.REFUND, ["shop.orders", "shop.refund"])
        out, _ = admin("admin", "connectors", "show", "shop")
        check("shop  finance  " + w.shop.url in out and "refund  sensitive" in out,
              "connectors show: %r" % out)
        secret = write(tmp, "secret", tr.SECRET + "\n")
        out, _ = admin("admin", "connectors", "patch", "shop", "--timeout-ms", "9000",
                       "--signing-secret-file", secret)
        check("9000 ms" in out and tr.SECRET not in out, "patch: %r" % out)
        check(w.run({"template": "refund", "input": {"amount": 1}}, want=202)[1]["status"] ==
              "awaiting_approval", "the connector still signs with the secret from the file")
        fns = write(tmp, "functions.json", json.dumps(
            {"orders": {}, "refund": {"sensitive": False}, "fail": {}, "slow": {}}))
        _, err = admin("admin", "connectors", "patch", "shop", "--functions-file", fns, want=1)
        check("409 CONFLICT" in err and "--force" not in err and "force" in err,
              "refused change: %r" % err)
        out, _ = admin("admin", "connectors", "patch", "shop", "--functions-file", fns, "--force")
        check("refund  sensitive" not in out, "forced: %r" % out)
        check(w.ok("GET", "/v1/templates/refund/versions/1", None, w.admin)["state"] ==
              "revoked", "--force did not revoke the version")
        out, _ = admin("admin", "connectors", "delete", "shop")
        check(out == "deleted shop\n", "delete: %r" % out)
        check(admin.json("admin", "connectors", "list") == [], "connectors left")
        # departments
        out, _ = admin("admin", "departments", "patch", "other", "--name", "others")
        check(out.startswith("others  autonomous"), "rename: %r" % out)
        _, err = admin("admin", "departments", "delete", "others", want=1)
        check("409 CONFLICT" in err and "1 role grant" in err, "not empty: %r" % err)
        w.ok("POST", "/v1/departments", {"name": "scratch"}, w.admin, 201)
        out, _ = admin("admin", "departments", "delete", "scratch")
        check(out == "deleted scratch\n", "delete: %r" % out)
        check([d["name"] for d in admin.json("admin", "departments", "list")] ==
              ["finance", "others"], "departments left")
        # usage errors exit 2 and say what was wrong; an agent is refused by airlockd
        for args, words in ((["admin"], "usage: airlock admin"),
                            (["admin", "principal"], "did you mean 'principals'"),
                            (["admin", "principals", "patch", "alice"], "nothing to change"),
                            (["admin", "principals", "patch", "alice", "--disable", "--enable"],
                             "exclude"),
                            (["admin", "connectors", "patch", "shop", "--timeout-ms", "x"],
                             "--timeout-ms"),
                            (["admin", "departments", "patch", "finance"], "--name"),
                            (["admin", "principals", "show", "../x"], "name")):
            _, err = admin(*args, want=2)
            check(words in err, "%r: %r" % (args, err))
        out, _ = admin("admin", "--help")
        check("principals" in out and "connectors" in out and "departments" in out,
              "--help: %r" % out)
        _, err = agent("admin", "principals", "delete", "alice", want=1)
        check("403 FORBIDDEN" in err, "an agent deleting: %r" % err)
    finally:
        w.close()


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


TESTS = [(name, fn) for name, fn in sorted(globals().items()) if name.startswith("t_")]


def main():
    return ts.run_tests(TESTS, "airlock-client-")


if __name__ == "__main__":
    sys.exit(main())
