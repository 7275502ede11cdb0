#!/usr/bin/env python3
"""Integration tests of `airlock run` as a command: options, output modes, co-processes.

usage: test_cli.py --cli PATH --worker PATH [-k SUBSTRING]

Runs from the repository root (examples/ must be reachable). Every airlock invocation has a
subprocess timeout of 20 s; a hang fails the test. Tests named in KNOWN_BUGS document airlock
bugs: they run, are reported as "pending" and do not count. Prints `N passed, M failed` last and
exits 1 on any failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS = os.path.join(HERE, "hosts")
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
HANG = 20

# test name -> what is wrong (see the report / tests/cases/_pending)
KNOWN_BUGS = {}

CLI = WORKER = None
SANITIZE = False
TMP = None


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def run(args, stdin=None, env_extra=None, timeout=HANG, env_unset=()):
    env = dict(os.environ)
    for k in env_unset:
        env.pop(k, None)
    env["AIRLOCK_WORKER"] = WORKER
    if env_extra:
        env.update(env_extra)
    try:
        p = subprocess.run([CLI] + args, input=stdin, capture_output=True, timeout=timeout,
                           env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise Fail(f"airlock hung for more than {timeout} s: {args}")
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def run_json(args, **kw):
    rc, out, err = run(["run", "--json"] + args, **kw)
    try:
        return rc, json.loads(out), err
    except ValueError:
        raise Fail(f"stdout is not one JSON object (exit {rc}): {out[:300]!r} / {err[:300]!r}")


def test_every_double_crosses_exactly():
    # 5,000 doubles made from pseudo-random bit patterns: each reaches a JSON host as digits
    # that read back as exactly the same bits (shortest round-trip, as JSON.stringify).
    f = write("bits.js", """
const dv = new DataView(new ArrayBuffer(8)); const out = [];
let s = 12345n;
for (let i = 0; i < 5000; i++) {
  s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  dv.setBigUint64(0, s); const y = dv.getFloat64(0);
  if (Number.isFinite(y) && !Object.is(y, -0)) out.push([s.toString(16), y]);
}
return out;""")
    rc, res, err = run_json(["--limit", "result=10M", f])
    check(rc == 0, f"exit {rc}: {err[:300]}")
    import struct
    bad = [(h, y) for h, y in res["value"]
           if struct.pack(">d", float(y)) != bytes.fromhex(h.zfill(16))]
    check(len(res["value"]) > 4900, f"only {len(res['value'])} values")
    check(not bad, f"{len(bad)} doubles changed, e.g. {bad[:3]}")


def usage_error(args, want_in_stderr, stdin=None):
    rc, out, err = run(args, stdin=stdin)
    check(rc == 2, f"{args}: exit {rc}, expected 2 (stderr {err[:200]!r})")
    check(out == "", f"{args}: stdout should be empty, got {out[:200]!r}")
    check(err.strip() != "", f"{args}: stderr is empty")
    for s in ([want_in_stderr] if isinstance(want_in_stderr, str) else want_in_stderr):
        check(s in err, f"{args}: stderr lacks {s!r}: {err[:300]!r}")
    return err


# ------------------------------------------------------------------ bad options

def test_unknown_option():
    usage_error(["run", "--frobnicate", write("a.js", "return 1")], ["--frobnicate", "usage"])


def test_missing_file():
    usage_error(["run"], "FILE")
    usage_error(["run", "--json"], "FILE")


def test_two_files():
    f = write("a.js", "return 1")
    usage_error(["run", f, f], "FILE")


def test_limit_unknown_key():
    usage_error(["run", "--limit", "junk=1", write("a.js", "return 1")], "junk")


def test_limit_junk_value():
    f = write("a.js", "return 1")
    usage_error(["run", "--limit", "junk", f], "--limit")
    usage_error(["run", "--limit", "timeout=abc", f], "timeout")
    usage_error(["run", "--limit", "memory=12Q", f], "memory")
    usage_error(["run", "--limit", "timeout=", f], "timeout")


def test_limit_zero():
    f = write("a.js", "return 1")
    usage_error(["run", "--limit", "timeout=0", f], "timeout")
    usage_error(["run", "--limit", "host-calls=0", f], "host-calls")


def test_limit_overflow():
    usage_error(["run", "--limit", "memory=99999999999999999999G", write("a.js", "return 1")],
                "memory")


def test_limit_stack_above_max():
    usage_error(["run", "--limit", "stack=1G", write("a.js", "return 1")], "stack")


def test_seed_bad():
    f = write("a.js", "return 1")
    usage_error(["run", "--seed", "zz", f], "--seed")
    usage_error(["run", "--seed", "", f], "--seed")
    usage_error(["run", "--seed", "1" * 17, f], "--seed")


def test_host_without_exec():
    f = write("a.js", "return 1")
    usage_error(["run", "--host", "g.f=cat", f], "exec:")
    usage_error(["run", "--host", "g.f", f], "exec:")
    usage_error(["run", "--host", "g.f=exec:", f], "exec:")


def test_host_invalid_names():
    f = write("a.js", "return 1")
    for name in ["a.constructor", "a.__proto__", "a.then", "a.toString", "a.hasOwnProperty",
                 "Math.x", "console.x", "globalThis.x", "Object.x", "nodot", ".f", "g.",
                 "g.f.h", "1g.f", "g.1f", "g-x.f", "g.f;x"]:
        usage_error(["run", "--host", name + "=exec:cat", f], name)


def test_host_duplicate_name():
    f = write("a.js", "return 1")
    usage_error(["run", "--host", "g.f=exec:cat", "--host", "g.f=exec:cat", f], "g.f")


def test_host_process_twice():
    f = write("a.js", "return 1")
    usage_error(["run", "--host-process", "true", "--host-process", "true", f], "host-process")


def test_unreadable_file():
    usage_error(["run", os.path.join(TMP, "does-not-exist.js")], "does-not-exist.js")
    d = os.path.join(TMP, "a-directory.js")
    os.makedirs(d, exist_ok=True)
    rc, out, err = run(["run", d])
    check(rc == 2 and out == "" and err.strip(), f"directory as FILE: exit {rc}, {out!r} {err!r}")
    if os.geteuid() != 0:  # root reads anything
        f = write("noperm.js", "return 1")
        os.chmod(f, 0)
        usage_error(["run", f], "noperm.js")


def test_help():
    rc, out, err = run(["run", "--help"])
    check(rc == 0 and "usage: airlock run" in out, f"--help: exit {rc}, {out[:200]!r}")


# ------------------------------------------------------------------ input and output modes

def test_stdin_file():
    rc, res, err = run_json(["-"], stdin=b"return 6 * 7;")
    check(rc == 0 and res["value"] == 42, f"stdin: {rc} {res}")


def test_stdin_source_limit():
    rc, res, err = run_json(["--limit", "source=10", "-"], stdin=b"return 123;")
    check(rc == 1 and res["error"]["code"] == "SOURCE_TOO_LARGE", f"{rc} {res}")


def test_json_shape_completed():
    f = write("a.js", 'console.log("hi"); return {a: 1};')
    rc, out, err = run(["run", "--json", f])
    check(rc == 0, f"exit {rc}")
    check(out.endswith("\n") and out.count("\n") == 1, f"not one line: {out!r}")
    res = json.loads(out)
    check(list(res) == ["status", "value", "console", "stats"], f"keys {list(res)}")
    check(res["status"] == "completed" and res["value"] == {"a": 1}, f"{res}")
    check(res["console"] == [{"level": "log", "text": "hi"}], f"{res['console']}")
    st = res["stats"]
    check(st.get("jail") == "seccomp", f"not jailed: {st}")
    check(set(st) == {"wall_ms", "cpu_ms", "peak_memory_bytes", "host_calls", "seed", "clock_ms",
                      "jail"},
          f"stats keys {sorted(st)}")
    check(isinstance(st["host_calls"], int) and st["host_calls"] == 0, f"{st}")
    check(isinstance(st["seed"], str) and len(st["seed"]) == 16 and
          all(c in "0123456789abcdef" for c in st["seed"]), f"seed {st['seed']!r}")
    check(st["wall_ms"] > 0 and st["peak_memory_bytes"] > 0, f"{st}")
    check(err == "", f"stderr in --json mode: {err!r}")


def test_json_shape_failed():
    f = write("a.js", "for (;;) {}")
    rc, res, err = run_json(["--limit", "timeout=200ms", f])
    check(rc == 1, f"exit {rc}")
    check(list(res) == ["status", "error", "console", "stats"], f"keys {list(res)}")
    check(list(res["error"]) == ["code", "name", "message", "stack"], f"{list(res['error'])}")
    check(res["error"]["code"] == "TIMEOUT", f"{res}")
    check(err == "", f"stderr in --json mode: {err!r}")


def test_json_mode_console_not_on_stdout():
    f = write("a.js", 'console.log("to-console"); console.error("err-console"); return 1;')
    rc, out, err = run(["run", "--json", f])
    check(out.count("\n") == 1 and json.loads(out)["value"] == 1, f"{out!r}")
    check("to-console" not in err and "err-console" not in err, f"console leaked: {err!r}")


def test_json_mode_host_stdout_not_leaked():
    # a host command's stdout is its answer; its stderr is the error message; neither leaks
    f = write("a.js", "try { await h.f(); } catch (e) { return e.message; }")
    rc, out, err = run(["run", "--json", "--host", "h.f=exec:echo LEAK >&2; exit 1", f])
    check(rc == 0 and out.count("\n") == 1 and json.loads(out)["value"] == "LEAK", f"{out!r}")
    check("LEAK" not in err, f"host stderr leaked to airlock's stderr: {err!r}")


def test_readable_completed():
    f = write("a.js", 'console.log("a log"); console.warn("a warning"); return {x: [1, 2]};')
    rc, out, err = run(["run", f])
    check(rc == 0, f"exit {rc}: {err!r}")
    check(json.loads(out) == {"x": [1, 2]}, f"value on stdout: {out!r}")
    check("a log" not in out and "a warning" not in out, f"console on stdout: {out!r}")
    check("a log" in err and "a warning" in err, f"console not on stderr: {err!r}")
    check("warn" in err, f"warn level not marked: {err!r}")


def test_readable_failed():
    f = write("a.js", "const a = 1;\nfunction f() {\n  throw new RangeError('bad thing');\n}\nf();\n")
    rc, out, err = run(["run", f])
    check(rc == 1, f"exit {rc}")
    check(out == "", f"stdout not empty: {out!r}")
    check("airlock: USER_ERROR: RangeError: bad thing" in err, f"{err!r}")
    check("run.js:3" in err, f"no stack: {err!r}")


def test_readable_limit_error():
    f = write("a.js", "for (;;) {}")
    rc, out, err = run(["run", "--limit", "timeout=200ms", f])
    check(rc == 1 and out == "" and err.startswith("airlock: TIMEOUT: "), f"{rc} {out!r} {err!r}")


def test_exit_status_values():
    f = write("a.js", "return undefined")
    rc, out, err = run(["run", f])
    check(rc == 0, f"completed with undefined: exit {rc}")
    f = write("b.js", "throw 1")
    rc, out, err = run(["run", f])
    check(rc == 1, f"failed: exit {rc}")


def test_worker_missing():
    f = write("a.js", "return 1")
    rc, out, err = run(["run", f], env_extra={"AIRLOCK_WORKER": os.path.join(TMP, "no-worker")})
    check(rc == 2 and out == "" and "no-worker" in err, f"{rc} {out!r} {err!r}")


def test_typescript_by_extension_and_lang():
    # a .ts file is TypeScript; --lang ts makes any file TypeScript, --lang js a .ts one not
    ts = "const x: number = 20;\nreturn x + (1 as number);"
    f = write("a.ts", ts)
    rc, res, err = run_json([f])
    check(rc == 0 and res["value"] == 21, f"{rc} {res} {err}")
    g = write("a_ts_as.js", ts)
    rc, res, err = run_json(["--lang", "ts", g])
    check(rc == 0 and res["value"] == 21, f"{rc} {res} {err}")
    rc, res, err = run_json(["--lang", "js", f])
    check(rc == 1 and res["error"]["code"] == "USER_ERROR" and
          res["error"]["name"] == "SyntaxError", f"{rc} {res}")
    usage_error(["run", "--lang", "cobol", f], "--lang cobol")


# ------------------------------------------------------------------ determinism

def seeded(src, seed):
    f = write("seeded.js", src)
    rc, res, err = run_json(["--seed", seed, f])
    check(rc == 0, f"{res}")
    check(res["stats"]["seed"] == seed.rjust(16, "0").lower(), f"seed echoed {res['stats']}")
    return res["value"]


def test_seed_makes_random_deterministic():
    src = "return Array.from({length: 5}, () => Math.random());"
    a, b = seeded(src, "2A"), seeded(src, "2a")
    check(a == b, f"same seed, different values: {a} {b}")
    c = seeded(src, "2b")
    check(a != c, f"different seeds, same values: {a}")


def test_seed_makes_date_deterministic():
    src = "return [Date.now(), new Date().toISOString()];"
    a = seeded(src, "2a")
    b = seeded(src, "2a")
    check(a == b, f"same seed, different clock: {a} {b}")


def test_seed_makes_clock_logical():
    # each host answer moves a seeded run's clock by exactly 1 ms, however long the host took
    f = write("clk.js", "const t0 = Date.now(); await h.slow(); await h.slow();"
                        " return Date.now() - t0;")
    rc, res, err = run_json(["--seed", "5", "--host", "h.slow=exec:sleep 0.05; echo 1", f])
    check(rc == 0, f"exit {rc}: {err}")
    check(res["value"] == 2, f"clock moved by {res['value']} ms over two answers, not 2")


def interrupted_by(sig, json_mode):
    """Starts a guest that spins once a host call has reported it running, then sends sig."""
    import signal
    import time
    marker = os.path.join(TMP, f"running-{sig}-{json_mode}")
    if os.path.exists(marker):
        os.unlink(marker)
    f = write("spin.js", "console.log('spinning'); await h.ready(); for (;;) {}")
    env = dict(os.environ, AIRLOCK_WORKER=WORKER)
    args = [CLI, "run"] + (["--json"] if json_mode else []) + \
        ["--limit", "timeout=60s", "--host", f"h.ready=exec:touch {marker}; echo 1", f]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + HANG
        while not os.path.exists(marker):  # waits for a state, bounded: not for a time
            check(time.monotonic() < deadline and p.poll() is None,
                  "the guest never reported running")
            time.sleep(0.01)
        p.send_signal(sig)
        out, err = p.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Fail(f"airlock did not end within {HANG} s of signal {sig}")
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def test_sigint_cancels_and_prints_the_result():
    import signal
    rc, out, err = interrupted_by(signal.SIGINT, True)
    check(rc == 130, f"exit {rc}, not 130: {out} {err}")
    res = json.loads(out)
    check(res["status"] == "failed" and res["error"]["code"] == "ABORTED", f"result: {res}")
    check(any(c.get("text") == "spinning" for c in res.get("console", [])),
          f"the console before the signal is lost: {res}")


def test_sigterm_cancels_readable():
    import signal
    rc, out, err = interrupted_by(signal.SIGTERM, False)
    check(rc == 143, f"exit {rc}, not 143: {out} {err}")
    check("ABORTED" in out + err, f"no ABORTED in the output: {out} {err}")


def test_error_text_keeps_nul_and_lone_surrogates():
    f = write("nul.js", 'throw new Error("a\\u0000b\\uD800c")')
    rc, res, err = run_json([f])
    check(rc == 1, f"exit {rc}: {err}")
    check(res["error"]["message"] == "a\u0000b\ufffdc", f"message: {res['error']['message']!r}")
    rc, out, err = run(["run", f])
    check("a\\x00b\ufffdc" in err, f"readable message not escaped as expected: {err!r}")


def test_random_seed_reported_and_replayable():
    f = write("r.js", "return Math.random();")
    rc, res, err = run_json([f])
    again = seeded("return Math.random();", res["stats"]["seed"])
    check(again == res["value"], f"replaying the reported seed gave {again} not {res['value']}")


def test_runs_are_isolated():
    # a second run must not see anything of the first
    f = write("iso.js", "const had = typeof leaked; globalThis.leaked = 1; return had;")
    for _ in range(2):
        rc, res, err = run_json([f])
        check(res["value"] == "undefined", f"{res}")


def test_json_matches_guest_stringify():
    # numbers and strings are printed exactly as the guest's own JSON.stringify prints them
    v = ('{a: [0.1, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 123456789012345680000, 2**53 + 2],'
         ' s: "\\u2028\\u2029\\ud800\\udc00\\udfff\\u0000\\u001f\\u007f", k: {"": 1, "10": 2, "1": 3}}')
    rc, res, err = run_json([write("v1.js", f"return {v};")])
    rc2, out2, _ = run(["run", "--json", write("v2.js", f"return JSON.stringify({v});")])
    _, res_raw, _ = run(["run", "--json", write("v1.js", f"return {v};")])
    raw = res_raw[len('{"status":"completed","value":'):res_raw.rindex(',"console":')]
    check(raw == json.loads(out2)["value"], f"{raw!r} != {json.loads(out2)['value']!r}")


# ------------------------------------------------------------------ host processes

def test_example_orders():
    rc, out, err = run(["run", "--host-process", f"{PY} examples/orders_host.py",
                        "examples/orders.js"])
    check(rc == 0, f"exit {rc}: {err!r}")
    v = json.loads(out)
    check("totalPaid" in v and v["totalPaid"] == 5760.5, f"{v}")
    check("summarised 3 paid orders for 3 customers" in err, f"console: {err!r}")


def host_process_fails(mode, extra=(), timeout=HANG):
    f = write("hp.js", "return await echo.f(1);")
    cmd = f"{PY} {HOSTS}/coproc.py --mode {mode}"
    rc, out, err = run(["run", "--limit", "timeout=1s", *extra, "--host-process", cmd, f],
                       timeout=timeout)
    check(rc != 0, f"{mode}: exit 0")
    check(err.strip() != "", f"{mode}: no message on stderr")
    check("host process" in err, f"{mode}: message does not name the host process: {err!r}")
    return rc, out, err


def test_host_process_exits_immediately():
    rc, out, err = host_process_fails("exit")
    check(rc == 2, f"exit {rc}")


def test_host_process_exits_immediately_shell():
    # airlock sees the exit, not the end of the wait for a declaration (the run's timeout, 30 s
    # by default: past HANG, a hang)
    f = write("hp.js", "return await echo.f(1);")
    rc, out, err = run(["run", "--host-process", "exit 3", f])
    check(rc == 2 and "host process exited before declaring its functions" in err,
          f"{rc} {err!r}")


def test_host_process_garbage_first_line():
    rc, out, err = host_process_fails("garbage-first")
    check("not JSON" in err or "declaration" in err, f"{err!r}")


def test_host_process_garbage_mid_run():
    rc, out, err = host_process_fails("garbage-mid")
    check("not JSON" in err and "garbage" in err, f"{err!r}")


def test_host_process_garbage_mid_run_json():
    f = write("hp.js", "return await echo.f(1);")
    cmd = f"{PY} {HOSTS}/coproc.py --mode garbage-mid"
    rc, out, err = run(["run", "--json", "--host-process", cmd, f])
    check(rc != 0, "exit 0")
    res = json.loads(out)
    check(res["status"] == "failed", f"{res}")


def test_host_process_dies_mid_run():
    rc, out, err = host_process_fails("die-mid")
    check("exited" in err, f"{err!r}")


def test_host_process_never_declares():
    rc, out, err = host_process_fails("silent")
    check("declaration" in err or "declar" in err, f"{err!r}")


def test_host_process_never_declares_exec():
    # as above with `exec`, so the shell is replaced and airlock's kill reaches the co-process
    f = write("hp.js", "return await echo.f(1);")
    cmd = f"exec {PY} {HOSTS}/coproc.py --mode silent"
    rc, out, err = run(["run", "--limit", "timeout=1s", "--host-process", cmd, f])
    check(rc == 2 and out == "" and "declaration" in err, f"{rc} {out!r} {err!r}")


def test_host_process_that_stops_reading_cannot_hang_airlock():
    # it declares a function, then never reads its stdin: the large request fills the pipe
    hp = write("stuck.sh", 'echo \'{"functions":["g.f"]}\'\nexec sleep 1000\n')
    f = write("stuck.js", 'await g.f("x".repeat(200000))')
    rc, out, err = run(["run", "--json", "--limit", "timeout=1s", "--host-process", f"sh {hp}", f])
    check(rc == 1, f"exit {rc}: {err!r}")
    check(json.loads(out)["error"]["code"] == "TIMEOUT", out)


def processes_naming(text):
    """The ids of the processes whose command line contains text (zombies have none)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(p))
        except OSError:
            pass  # ended meanwhile
    return pids


def sleeper(tag):
    """A shell command sleeping 1000 s, far past HANG, with tag in its command line."""
    return f"{PY} -c 'import time; time.sleep(1000)' {tag}"


def kill_processes_naming(text):
    import signal
    for pid in processes_naming(text):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_exec_host_descendant_cannot_hang_airlock():
    # a descendant that leaves the command's process group keeps the output pipe open, here
    # for longer than HANG: airlock waiting for it is a hang
    tag = os.path.join(TMP, "setsid-descendant")
    f = write("setsid.js", "return await g.f()")
    try:
        rc, out, err = run(["run", "--json", "--limit", "timeout=1s", "--host",
                            f"g.f=exec:setsid {sleeper(tag)}", f])
        check(rc == 1, f"exit {rc}: {err!r}")
        check(json.loads(out)["error"]["code"] == "TIMEOUT", out)
    finally:
        kill_processes_naming(tag)  # it left airlock's reach on purpose


def test_doctor_reports_the_jail():
    rc, out, err = run(["doctor"])
    check(rc == 0, f"exit {rc}: {out!r} {err!r}")
    for line in ("no_new_privs: active", "dumpable: off", "seccomp: active", "namespaces: user ",
                 "jail: ok"):
        check(line in out, f"missing {line!r} in {out!r}")


def test_unsafe_no_jail_is_reported():
    f = write("nj.js", "return 1")
    rc, res, err = run_json(["--unsafe-no-jail", f])
    check(rc == 0 and res["stats"]["jail"] == "none", f"{rc} {res}")


def test_host_process_bad_declarations():
    f = write("hp.js", "return 1;")
    for decl in ['{"functions": "echo.f"}', '{"functions": ["nodot"]}',
                 '{"functions": ["a.constructor"]}', '{"functions": ["Math.max"]}',
                 '{"functions": ["g.f"], "sync": "g"}', '[]', '{}']:
        script = write("decl.sh", f"printf '%s\\n' '{decl}'; cat > /dev/null\n")
        rc, out, err = run(["run", "--host-process", f"sh {script}", f])
        check(rc == 2 and out == "" and "host" in err, f"declaration {decl}: {rc} {out!r} {err!r}")


def test_host_process_command_not_found():
    f = write("hp.js", "return 1;")
    rc, out, err = run(["run", "--host-process", "/nonexistent/host-binary", f])
    check(rc == 2 and out == "" and err.strip(), f"{rc} {out!r} {err!r}")


def test_host_process_answer_for_unknown_id():
    script = write("badid.py", "import json,sys\n"
                   "print(json.dumps({'functions':['echo.f']}), flush=True)\n"
                   "for line in sys.stdin:\n"
                   "    r = json.loads(line)\n"
                   "    print(json.dumps({'id': r['id'] + 100, 'result': 1}), flush=True)\n"
                   "    print(json.dumps({'id': r['id'], 'result': 2}), flush=True)\n")
    f = write("hp.js", "return await echo.f(1);")
    rc, out, err = run(["run", "--json", "--limit", "timeout=2s", "--host-process",
                        f"{PY} {script}", f])
    check(rc != 0 or json.loads(out)["value"] == 2, f"{rc} {out!r} {err!r}")


# ------------------------------------------------------------------ what reaches a host

def test_never_awaited_call_not_dispatched():
    marker = os.path.join(TMP, "marker-never-awaited")
    f = write("na.js", "echo.f('never awaited');\nreturn 1;")
    rc, res, err = run_json(["--host", f"echo.f=exec:sh {HOSTS}/marker.sh {marker}", f])
    check(rc == 1 and res["error"]["code"] == "DETACHED_BRIDGE_REQUEST", f"{res}")
    check(not os.path.exists(marker), "the never-awaited call reached the host")


def test_awaited_call_is_dispatched():
    # the positive control of the test above: the marker host really writes
    marker = os.path.join(TMP, "marker-awaited")
    f = write("aw.js", "return await echo.f('awaited');")
    rc, res, err = run_json(["--host", f"echo.f=exec:sh {HOSTS}/marker.sh {marker}", f])
    check(rc == 0 and res["value"] == ["awaited"], f"{res}")
    with open(marker) as m:
        check(m.read() == 'echo.f ["awaited"]\n', "marker content")


def test_reserved_members_never_reach_process_host():
    marker = os.path.join(TMP, "marker-reserved")
    f = write("rs.js", "const r = [];\n"
              "for (const k of ['constructor','__proto__','toString','hasOwnProperty','then',"
              "'valueOf']) { try { await echo[k]('x'); } catch (e) {} }\n"
              "await echo;\nreturn 1;")
    rc, res, err = run_json(["--host-process", f"{PY} {HOSTS}/coproc.py --marker {marker}", f])
    check(rc == 0 and res["stats"]["host_calls"] == 0, f"{res}")
    check(not os.path.exists(marker), "a reserved member reached the co-process")


def test_exec_host_killed_at_timeout():
    # a slow exec host is killed with the run: once airlock has exited nothing of its command
    # is left (the shell, and the sleeper it waits for, both naming the marker), so its side
    # effect after the sleep never happens. A kill may take a moment to land: HANG for that.
    import time
    marker = os.path.join(TMP, "marker-late")
    f = write("sl.js", "return await sl.f();")
    try:
        rc, res, err = run_json(["--limit", "timeout=300ms", "--host",
                                 f"sl.f=exec:{sleeper(marker)}; touch {marker}", f])
        check(res["error"]["code"] == "TIMEOUT", f"{res}")
        deadline = time.monotonic() + HANG
        while processes_naming(marker):
            check(time.monotonic() < deadline,
                  f"the exec host outlived the run: {processes_naming(marker)}")
            time.sleep(0.02)
        check(not os.path.exists(marker), "the exec host's side effect happened")
    finally:
        kill_processes_naming(marker)


# ------------------------------------------------------------------ interrupt and resume

SECRET = "resume-tests-secret-0123456789-abcdef"      # >= 32 bytes
NEW_SECRET = "resume-tests-new-secret-0123456789-abcd"
CONT_ENV = ("AIRLOCK_CONTINUATION_SECRET", "AIRLOCK_CONTINUATION_PREVIOUS_SECRET",
            "AIRLOCK_RESUME")
INTERRUPTED_KEYS = ["status", "interruptions", "continuation", "console", "stats"]
STATS_KEYS = {"wall_ms", "cpu_ms", "peak_memory_bytes", "host_calls", "seed", "clock_ms", "jail"}


def cont_run(args, secret=SECRET, previous=None, json_out=True):
    # `airlock run` with exactly the continuation secrets given (None: unset in the environment)
    extra = {}
    if secret is not None:
        extra["AIRLOCK_CONTINUATION_SECRET"] = secret
    if previous is not None:
        extra["AIRLOCK_CONTINUATION_PREVIOUS_SECRET"] = previous
    unset = [k for k in CONT_ENV if k not in extra]
    if not json_out:
        return run(["run"] + args, env_extra=extra, env_unset=unset)
    rc, out, err = run(["run", "--json"] + args, env_extra=extra, env_unset=unset)
    try:
        return rc, json.loads(out), err
    except ValueError:
        raise Fail(f"stdout is not one JSON object (exit {rc}): {out[:300]!r} / {err[:300]!r}")


def approve_host(log, name="ask.approve"):
    # exec host: interrupts with {"ask": args[0]}; re-invoked, returns {"resolution", "args"}
    return ["--host", f"{name}=exec:{PY} {HOSTS}/approve.py {log}"]


def marker_host(log, name="echo.f"):
    return ["--host", f"{name}=exec:sh {HOSTS}/marker.sh {log}"]


def log_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def approve_log(path):
    return [json.loads(line) for line in log_lines(path)]


def check_interrupted(rc, res, err, what=""):
    check(rc == 3, f"{what}: exit {rc}, expected 3: {res}")
    check(list(res) == INTERRUPTED_KEYS, f"{what}: keys {list(res)}")
    check(res["status"] == "interrupted", f"{what}: {res}")
    check(isinstance(res["continuation"], str) and res["continuation"], f"{what}: {res}")
    check(set(res["stats"]) == STATS_KEYS, f"{what}: stats keys {sorted(res['stats'])}")
    for i in res["interruptions"]:
        check(list(i) == ["id", "function", "args", "payload"], f"{what}: {i}")
        check(isinstance(i["id"], str) and i["id"], f"{what}: {i}")
    check(err == "", f"{what}: stderr in --json mode: {err!r}")
    return res


def check_failed(rc, res, code, what=""):
    # every CONFIG_ERROR exits 2 (usage or configuration error), any other failure 1
    want = 2 if code == "CONFIG_ERROR" else 1
    check(rc == want, f"{what}: exit {rc}, expected {want}: {res}")
    check(res["status"] == "failed" and res["error"]["code"] == code,
          f"{what}: expected failed {code}: {res}")
    return res["error"]["message"]


RESUME_SRC = """const r = Math.random();
const a = await echo.f("before", r);
console.log("asked");
const b = await ask.approve("pay 10", 10);
const c = await echo.f("after");
return {a, b, c};
"""


def test_resume_exec_host():
    alog, mlog = os.path.join(TMP, "r1-approve.log"), os.path.join(TMP, "r1-marker.log")
    f = write("r1.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    check(res["continuation"][:4] != "als_", f"a token without --store: {res['continuation']}")
    check(len(res["interruptions"]) == 1, f"{res}")
    iid = res["interruptions"][0]["id"]
    check(res["interruptions"] == [{"id": iid, "function": "ask.approve", "args": ["pay 10", 10],
                                    "payload": {"ask": "pay 10"}}], f"{res['interruptions']}")
    check(res["console"] == [{"level": "log", "text": "asked"}], f"{res['console']}")
    check(res["stats"]["host_calls"] == 2, f"{res['stats']}")
    before = log_lines(mlog)
    check(len(before) == 1 and before[0].startswith('echo.f ["before",'), f"{before}")
    first = approve_log(alog)
    check(first == [{"function": "ask.approve", "args": ["pay 10", 10], "resume": None}],
          f"{first}")

    decision = {"ok": True, "by": "ann", "n": [1, 2.5]}
    rc, res2, err = cont_run(hosts + ["--resume", res["continuation"],
                                      "--resolve", f"{iid}={json.dumps(decision)}", f])
    check(rc == 0 and res2["status"] == "completed", f"resume: exit {rc}: {res2}")
    v = res2["value"]
    check(v["b"] == {"resolution": decision, "args": ["pay 10", 10]}, f"{v}")
    check(v["c"] == ["after"], f"{v}")
    check(v["a"][0] == "before" and json.dumps(v["a"], separators=(",", ":")) in before[0],
          f"the replayed answer differs from the first one: {v['a']} vs {before}")
    check(res2["console"] == [{"level": "log", "text": "asked"}], f"{res2['console']}")
    lines = log_lines(mlog)
    check(sum(1 for x in lines if x.startswith('echo.f ["before",')) == 1,
          f"the finished call reached the host again: {lines}")
    check(lines[1:] == ['echo.f ["after"]'], f"the call past the ledger: {lines}")
    calls = approve_log(alog)
    check(len(calls) == 2, f"ask.approve invoked {len(calls)} times: {calls}")
    check(calls[1] == {"function": "ask.approve", "args": ["pay 10", 10],
                       "resume": {"interruptionId": iid, "payload": {"ask": "pay 10"},
                                  "resolution": decision}},
          f"AIRLOCK_RESUME of the re-invoked call: {calls[1]}")


def test_resume_host_process():
    plog = os.path.join(TMP, "r2-coproc.log")
    f = write("r2.js", RESUME_SRC)
    hosts = ["--host-process", f"{PY} {HOSTS}/interrupt_coproc.py {plog}"]
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    iid = res["interruptions"][0]["id"]
    check(res["interruptions"] == [{"id": iid, "function": "ask.approve", "args": ["pay 10", 10],
                                    "payload": {"ask": "pay 10"}}], f"{res['interruptions']}")
    reqs = [json.loads(x) for x in log_lines(plog)]
    check([r["function"] for r in reqs] == ["echo.f", "ask.approve"], f"{reqs}")
    check(all("resume" not in r for r in reqs), f"a first call carried resume: {reqs}")
    ask_id = reqs[1]["id"]

    rc, res2, err = cont_run(hosts + ["--resume", res["continuation"],
                                      "--resolve", f'{iid}="approved"', f])
    check(rc == 0 and res2["status"] == "completed", f"resume: exit {rc}: {res2}")
    check(res2["value"]["b"] == {"resolution": "approved", "args": ["pay 10", 10]} and
          res2["value"]["c"] == ["after"], f"{res2['value']}")
    new = [json.loads(x) for x in log_lines(plog)][2:]
    check([r["function"] for r in new] == ["ask.approve", "echo.f"],
          f"requests of the resumed run: {new}")
    check(new[0]["args"] == ["pay 10", 10] and new[0]["id"] == ask_id, f"{new[0]}")
    check(new[0].get("resume") == {"interruptionId": iid, "payload": {"ask": "pay 10"},
                                   "resolution": "approved"}, f"resume member: {new[0]}")
    check(new[1]["args"] == ["after"] and "resume" not in new[1], f"{new[1]}")


def test_resume_two_interruptions_one_at_a_time():
    alog, mlog = os.path.join(TMP, "r3-approve.log"), os.path.join(TMP, "r3-marker.log")
    f = write("r3.js", 'const x = await echo.f("first");\n'
              'const [a, b] = await Promise.all([ask.approve("A"), ask.approve("B")]);\n'
              'return {x, a, b};\n')
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    ins = res["interruptions"]
    check([(i["function"], i["args"], i["payload"]) for i in ins] ==
          [("ask.approve", ["A"], {"ask": "A"}), ("ask.approve", ["B"], {"ask": "B"})],
          f"interruptions (call order): {ins}")
    ia, ib = ins[0]["id"], ins[1]["id"]
    check(ia != ib, f"same id twice: {ins}")
    check(len(approve_log(alog)) == 2, f"{approve_log(alog)}")

    rc, res2, err = cont_run(hosts + ["--resume", res["continuation"], "--resolve", f'{ia}="yes-A"',
                                      f])
    check_interrupted(rc, res2, err, "after resolving A")
    check(res2["interruptions"] == [ins[1]], f"B must stay pending as it was: {res2['interruptions']}"
          f" vs {ins[1]}")
    calls = approve_log(alog)[2:]
    check(len(calls) == 1 and calls[0]["args"] == ["A"] and
          calls[0]["resume"] == {"interruptionId": ia, "payload": {"ask": "A"},
                                 "resolution": "yes-A"},
          f"only A is invoked again: {calls}")

    rc, res3, err = cont_run(hosts + ["--resume", res2["continuation"],
                                      "--resolve", f'{ib}="yes-B"', f])
    check(rc == 0 and res3["status"] == "completed", f"after resolving B: exit {rc}: {res3}")
    check(res3["value"] == {"x": ["first"], "a": {"resolution": "yes-A", "args": ["A"]},
                            "b": {"resolution": "yes-B", "args": ["B"]}}, f"{res3['value']}")
    calls = approve_log(alog)[3:]
    check(len(calls) == 1 and calls[0]["args"] == ["B"] and
          calls[0]["resume"] == {"interruptionId": ib, "payload": {"ask": "B"},
                                 "resolution": "yes-B"},
          f"only B is invoked again: {calls}")
    check(log_lines(mlog) == ['echo.f ["first"]'], f"echo.f: {log_lines(mlog)}")


def test_resume_readable_mode():
    alog, mlog = os.path.join(TMP, "r4-approve.log"), os.path.join(TMP, "r4-marker.log")
    f = write("r4.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, out, err = cont_run(hosts + [f], json_out=False)
    check(rc == 3, f"exit {rc}: {out!r} {err!r}")
    check(out.endswith("\n") and out.count("\n") == 1 and " " not in out.strip(),
          f"stdout must be the continuation alone: {out!r}")
    token = out.strip()
    check(token, "empty continuation")
    check("asked" not in out and "asked" in err, f"console: {out!r} {err!r}")
    check("ask.approve" in err and '"pay 10"' in err, f"the interruption is not on stderr: {err!r}")
    # the id is the word before "ask.approve(" on stderr
    ids = [ln.split()[0] for ln in err.splitlines() if "ask.approve(" in ln]
    check(len(ids) == 1 and ids[0] not in out, f"interruption id on stderr: {err!r}")
    iid = ids[0]
    tok = write("r4.token", out)
    rc, out2, err2 = cont_run(hosts + ["--resume", "@" + tok, "--resolve", f"{iid}=[true]", f],
                              json_out=False)
    check(rc == 0, f"resume @FILE: exit {rc}: {out2!r} {err2!r}")
    v = json.loads(out2)
    check(v["b"] == {"resolution": [True], "args": ["pay 10", 10]} and v["c"] == ["after"], f"{v}")
    check(len(log_lines(mlog)) == 2 and len(approve_log(alog)) == 2,
          f"{log_lines(mlog)} {approve_log(alog)}")


def test_resume_secret_needed_only_to_interrupt():
    alog, mlog = os.path.join(TMP, "r5-approve.log"), os.path.join(TMP, "r5-marker.log")
    hosts = marker_host(mlog) + approve_host(alog)
    # a run that never interrupts needs no secret, even with the interrupting host declared
    plain = write("r5-plain.js", 'return await echo.f("plain");')
    rc, res, err = cont_run(hosts + [plain], secret=None)
    check(rc == 0 and res["value"] == ["plain"], f"no secret, no interruption: {rc} {res}")
    # interrupting without a secret: a failed CONFIG_ERROR that names the variable
    f = write("r5.js", RESUME_SRC)
    rc, res, err = cont_run(hosts + [f], secret=None)
    msg = check_failed(rc, res, "CONFIG_ERROR", "interrupt without a secret")
    check("AIRLOCK_CONTINUATION_SECRET" in msg, f"message: {msg!r}")
    rc, out, err = cont_run(hosts + [f], secret=None, json_out=False)
    check(rc == 2 and out == "" and "CONFIG_ERROR" in err and "AIRLOCK_CONTINUATION_SECRET" in err,
          f"readable: {rc} {out!r} {err!r}")
    # a resume needs it too
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "with the secret")
    iid = res["interruptions"][0]["id"]
    n = len(approve_log(alog))
    rc, res2, err = cont_run(hosts + ["--resume", res["continuation"], "--resolve", f"{iid}=1", f],
                             secret=None)
    msg = check_failed(rc, res2, "CONFIG_ERROR", "resume without a secret")
    check("AIRLOCK_CONTINUATION_SECRET" in msg, f"message: {msg!r}")
    check(len(approve_log(alog)) == n, "resume without a secret reached the host")
    # a secret shorter than 32 bytes is a configuration error before anything runs
    for short in ("x", "y" * 31):
        rc, out, err = cont_run(hosts + [f], secret=short, json_out=False)
        check(rc == 2 and out == "", f"short secret: exit {rc}, {out!r}")
        check("AIRLOCK_CONTINUATION_SECRET" in err and "32" in err, f"message: {err!r}")
    check(len(approve_log(alog)) == n, "a run with a short secret reached the host")
    rc, out, err = cont_run(hosts + [f], secret="z" * 32, json_out=False)
    check(rc == 3, f"a 32-byte secret is enough: exit {rc} {err!r}")


def test_resume_refused_bindings():
    alog, mlog = os.path.join(TMP, "r6-approve.log"), os.path.join(TMP, "r6-marker.log")
    f = write("r6.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    bind = ["--context", '{"tenant":"a","user":7}', "--audience", "billing"]
    rc, res, err = cont_run(hosts + bind + [f])
    check_interrupted(rc, res, err, "first run")
    token, iid = res["continuation"], res["interruptions"][0]["id"]
    resolve = ["--resume", token, "--resolve", f"{iid}=1"]
    other_src = write("r6-other.js", RESUME_SRC + "// another source\n")
    bad_token = token[:len(token) // 2] + ("A" if token[len(token) // 2] != "A" else "B") + \
        token[len(token) // 2 + 1:]
    # an expired continuation: a lifetime of 1 ms is over by the time airlock starts again
    rc, res_exp, err = cont_run(hosts + bind + ["--continuation-ttl", "1ms", f])
    check_interrupted(rc, res_exp, err, "short-lived run")
    exp = ["--resume", res_exp["continuation"],
           "--resolve", f"{res_exp['interruptions'][0]['id']}=1"]
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    cases = [
        ("wrong context", hosts + ["--context", '{"tenant":"b","user":7}', "--audience", "billing"]
         + resolve + [f], SECRET, None),
        ("no context", hosts + ["--audience", "billing"] + resolve + [f], SECRET, None),
        ("wrong audience", hosts + ["--context", '{"tenant":"a","user":7}', "--audience", "other"]
         + resolve + [f], SECRET, None),
        ("default audience", hosts + ["--context", '{"tenant":"a","user":7}'] + resolve + [f],
         SECRET, None),
        ("other source", hosts + bind + resolve + [other_src], SECRET, None),
        ("other host setup", hosts + ["--host", "more.g=exec:true"] + bind + resolve + [f],
         SECRET, None),
        ("other secret", hosts + bind + resolve + [f], NEW_SECRET, None),
        ("tampered token", hosts + bind + ["--resume", bad_token, "--resolve", f"{iid}=1", f],
         SECRET, None),
        ("garbage token", hosts + bind + ["--resume", "not-a-continuation", "--resolve",
                                          f"{iid}=1", f], SECRET, None),
        ("expired", hosts + bind + exp + [f], SECRET, None),
    ]
    for what, args, secret, previous in cases:
        rc, r, err = cont_run(args, secret=secret, previous=previous)
        check_failed(rc, r, "PROTOCOL_ERROR", what)
        check(len(log_lines(alog)) == n_a and len(log_lines(mlog)) == n_m,
              f"{what}: a host was invoked: {log_lines(alog)} {log_lines(mlog)}")
    # key rotation: signed with the old secret, verified with it as the previous one
    rc, r, err = cont_run(hosts + bind + resolve + [f], secret=NEW_SECRET, previous=SECRET)
    check(rc == 0 and r["status"] == "completed" and r["value"]["b"]["resolution"] == 1,
          f"rotation: exit {rc}: {r}")
    check(approve_log(alog)[-1]["resume"]["interruptionId"] == iid, f"{approve_log(alog)}")


def test_resume_store():
    alog, mlog = os.path.join(TMP, "r7-approve.log"), os.path.join(TMP, "r7-marker.log")
    store = os.path.join(TMP, "r7-store")
    f = write("r7.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog) + ["--store", store]
    rc, res, err = cont_run(hosts + ["--context", '"ctx-1"', f])
    check_interrupted(rc, res, err, "first run")
    cid, iid = res["continuation"], res["interruptions"][0]["id"]
    check(cid.startswith("als_"), f"not a stored id: {cid!r}")
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    good = ["--resume", cid, "--resolve", f'{iid}="ok"', f]
    # attempts that fail validation release the id
    rc, r, err = cont_run(hosts + ["--context", '"ctx-2"'] + good)
    check_failed(rc, r, "PROTOCOL_ERROR", "wrong context")
    rc, r, err = cont_run(hosts + ["--context", '"ctx-1"', "--resume", cid, "--resolve",
                                   "0123456789abcdef0123456789abcdef=1", f])
    check_failed(rc, r, "CONFIG_ERROR", "unknown interruption id")
    check(len(log_lines(alog)) == n_a and len(log_lines(mlog)) == n_m,
          "a failed attempt invoked a host")
    rc, r, err = cont_run(hosts + ["--context", '"ctx-1"'] + good)
    check(rc == 0 and r["status"] == "completed" and r["value"]["b"]["resolution"] == "ok",
          f"the correct resume after bad attempts: exit {rc}: {r}")
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    # at most once
    rc, r, err = cont_run(hosts + ["--context", '"ctx-1"'] + good)
    check_failed(rc, r, "PROTOCOL_ERROR", "second resume of the same id")
    check(len(log_lines(alog)) == n_a and len(log_lines(mlog)) == n_m,
          "the second resume invoked a host")


def stored_run(tag):
    # an interrupted run with --store: (hosts, store dir, source file, id, interruption id, logs)
    alog, mlog = os.path.join(TMP, f"{tag}-approve.log"), os.path.join(TMP, f"{tag}-marker.log")
    store = os.path.join(TMP, f"{tag}-store")
    f = write(f"{tag}.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + ["--store", store, f])
    check_interrupted(rc, res, err, "first run")
    return hosts, store, f, res["continuation"], res["interruptions"][0]["id"], alog, mlog


def check_no_host_ran(alog, mlog, n_a, n_m, what):
    check(len(log_lines(alog)) == n_a and len(log_lines(mlog)) == n_m,
          f"{what}: a host was invoked: {log_lines(alog)} {log_lines(mlog)}")


def check_resumes_once(hosts, store, f, cid, iid, what):
    # the stored id itself still resumes, exactly once
    good = hosts + ["--store", store, "--resume", cid, "--resolve", f'{iid}="ok"', f]
    rc, r, err = cont_run(good)
    check(rc == 0 and r["status"] == "completed" and r["value"]["b"]["resolution"] == "ok",
          f"{what}: the legitimate resume: exit {rc}: {r}")
    rc, r, err = cont_run(good)
    check_failed(rc, r, "PROTOCOL_ERROR", f"{what}: a second resume")


def test_resume_store_file_is_not_a_token():
    # A stored file is a complete signed token after its expiry line: it must not resume as a
    # token (as often as one likes), only by its id from the store.
    hosts, store, f, cid, iid, alog, mlog = stored_run("s1")
    with open(os.path.join(store, cid + ".cont")) as fh:
        token = fh.read().split("\n", 1)[1]
    check(token.startswith("alc1."), f"the stored file holds no token: {token[:40]!r}")
    tok = write("s1.tok", token)
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    for i in range(2):
        rc, r, err = cont_run(hosts + ["--resume", "@" + tok, "--resolve", f"{iid}=1", f])
        msg = check_failed(rc, r, "PROTOCOL_ERROR", f"the stored body as a token ({i})")
        check("stored" in msg, f"message: {msg}")
    check_no_host_ran(alog, mlog, n_a, n_m, "the stored body as a token")
    check_resumes_once(hosts, store, f, cid, iid, "after the token attempts")


def test_resume_store_copy_under_another_id():
    # A copy, a hard link or a symbolic link of ID.cont under another id resumes nothing.
    hosts, store, f, cid, iid, alog, mlog = stored_run("s2")
    src = os.path.join(store, cid + ".cont")
    copies = {"copy": "als_" + "1" * 32, "hard link": "als_" + "2" * 32,
              "symlink": "als_" + "3" * 32}
    shutil.copyfile(src, os.path.join(store, copies["copy"] + ".cont"))
    os.link(src, os.path.join(store, copies["hard link"] + ".cont"))
    os.symlink(src, os.path.join(store, copies["symlink"] + ".cont"))
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    for what, other in copies.items():
        rc, r, err = cont_run(hosts + ["--store", store, "--resume", other, "--resolve",
                                       f"{iid}=1", f])
        check_failed(rc, r, "PROTOCOL_ERROR", what)
    check_no_host_ran(alog, mlog, n_a, n_m, "copies")
    check_resumes_once(hosts, store, f, cid, iid, "after the copies")


def test_resume_store_fifo_does_not_hang():
    # A FIFO planted as ID.cont: the resume is refused at once instead of waiting for a writer.
    hosts, store, f, cid, iid, alog, mlog = stored_run("s3")
    fifo_id = "als_" + "4" * 32
    os.mkfifo(os.path.join(store, fifo_id + ".cont"), 0o600)
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    rc, r, err = cont_run(hosts + ["--store", store, "--resume", fifo_id, "--resolve",
                                   f"{iid}=1", f])
    msg = check_failed(rc, r, "PROTOCOL_ERROR", "a FIFO")
    check("regular file" in msg, f"message: {msg}")
    check_no_host_ran(alog, mlog, n_a, n_m, "a FIFO")
    check_resumes_once(hosts, store, f, cid, iid, "after the FIFO")


def test_resume_store_dir_writable_by_others():
    # A store directory others can write is refused: they could plant or copy continuations.
    f = write("s4.js", "return 1;")
    for mode in (0o770, 0o702, 0o1777):
        store = os.path.join(TMP, f"s4-store-{mode:o}")
        os.mkdir(store)
        os.chmod(store, mode)
        rc, out, err = cont_run(["--store", store, f], json_out=False)
        check(rc != 0 and "writable by group or others" in err,
              f"mode {mode:o}: exit {rc}: {out!r} {err!r}")
    store = os.path.join(TMP, "s4-store-700")
    os.mkdir(store)
    os.chmod(store, 0o700)
    rc, out, err = cont_run(["--store", store, f], json_out=False)
    check(rc == 0 and out.strip() == "1", f"mode 700: exit {rc}: {out!r} {err!r}")


def test_resume_source_type_is_bound():
    # The same text as run.js and as TypeScript or a module is another program: a continuation
    # made for one is refused for the other before any host function runs.
    alog, mlog = os.path.join(TMP, "t1-approve.log"), os.path.join(TMP, "t1-marker.log")
    f = write("t1.js", RESUME_SRC)
    ts = write("t1.ts", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    resume = ["--resume", res["continuation"], "--resolve", f'{res["interruptions"][0]["id"]}=1']
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    for what, args in [(".ts file", [ts]), ("--lang ts", ["--lang", "ts", f])]:
        rc, r, err = cont_run(hosts + resume + args)
        msg = check_failed(rc, r, "PROTOCOL_ERROR", what)
        check("JavaScript body" in msg and "TypeScript body" in msg, f"{what}: {msg}")
    check_no_host_ran(alog, mlog, n_a, n_m, "another source type")
    rc, r, err = cont_run(hosts + resume + [f])
    check(rc == 0 and r["status"] == "completed", f"the same type: exit {rc}: {r}")


def test_resume_resolution_errors():
    alog, mlog = os.path.join(TMP, "r8-approve.log"), os.path.join(TMP, "r8-marker.log")
    f = write("r8.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    token, iid = res["continuation"], res["interruptions"][0]["id"]
    n_a, n_m = len(log_lines(alog)), len(log_lines(mlog))
    for what, extra in [("unknown id", ["--resolve", "0123456789abcdef0123456789abcdef=1"]),
                        ("unknown id (junk)", ["--resolve", "nope=1"]),
                        ("duplicate id", ["--resolve", f"{iid}=1", "--resolve", f"{iid}=2"]),
                        ("no --resolve", [])]:
        rc, r, err = cont_run(hosts + ["--resume", token] + extra + [f])
        check_failed(rc, r, "CONFIG_ERROR", what)
        check(len(log_lines(alog)) == n_a and len(log_lines(mlog)) == n_m,
              f"{what}: a host was invoked")
    # --resolve without --resume is a usage error
    rc, out, err = cont_run(hosts + ["--resolve", f"{iid}=1", f], json_out=False)
    check(rc == 2 and out == "" and "--resolve" in err, f"--resolve alone: {rc} {out!r} {err!r}")


def test_resume_sync_group_cannot_interrupt():
    plog = os.path.join(TMP, "r9-coproc.log")
    f = write("r9.js", 'return sync.approve("now");')
    hosts = ["--host-process", f"{PY} {HOSTS}/interrupt_coproc.py {plog} --sync sync"]
    rc, res, err = cont_run(hosts + [f])
    msg = check_failed(rc, res, "PROTOCOL_ERROR", "sync interrupt")
    check("sync.approve" in msg, f"message: {msg!r}")
    reqs = [json.loads(x) for x in log_lines(plog)]
    check([r["function"] for r in reqs] == ["sync.approve"], f"{reqs}")


def test_resume_reinvoked_call_interrupts_again():
    # the re-invoked call may interrupt again: the interruption keeps its id, the payload is new
    log = os.path.join(TMP, "r10.log")
    f = write("r10.js", 'return await ask.approve("q");')
    host = ["--host", f'ask.approve=exec:cat > /dev/null; printf "%s\\n" "${{AIRLOCK_RESUME:-none}}"'
            f' >> {log}; echo 7; exit 75']
    rc, res, err = cont_run(host + [f])
    check_interrupted(rc, res, err, "first run")
    iid = res["interruptions"][0]["id"]
    check(res["interruptions"][0]["payload"] == 7, f"{res}")
    rc, res2, err = cont_run(host + ["--resume", res["continuation"], "--resolve", f"{iid}=1", f])
    check_interrupted(rc, res2, err, "re-invoked")
    check(res2["interruptions"] == [{"id": iid, "function": "ask.approve", "args": ["q"],
                                     "payload": 7}], f"{res2['interruptions']}")
    lines = log_lines(log)
    check(lines[0] == "none" and json.loads(lines[1]) == {"interruptionId": iid, "payload": 7,
                                                           "resolution": 1}, f"{lines}")


def test_resume_exec_context_too_large_says_so():
    # An exec host gets the resume context in one environment string, which the kernel caps at
    # 128 KiB: beyond that the re-invoked call fails with a message naming the way out.
    f = write("r13.js", 'return await ask.approve("q");')
    host = ("ask.approve=exec:cat >/dev/null; "
            f"{PY} -c 'import json; print(json.dumps(\"x\" * 140000))'; exit 75")
    rc, res, err = cont_run(["--host", host, f])
    check_interrupted(rc, res, err, "big payload")
    iid = res["interruptions"][0]["id"]
    token = write("r13.cont", res["continuation"])  # too long for one argument too
    rc, res, err = cont_run(["--host", host, "--resume", "@" + token, "--resolve", f"{iid}=1",
                             f])
    check(rc == 1 and res["error"]["code"] == "HOST_FUNCTION_ERROR" and
          "use --host-process" in res["error"]["message"], f"{rc} {res}")


def test_resume_exec_payload_forms():
    f = write("r11.js", 'return await ask.approve("q");')
    # empty stdout: the payload is undefined
    rc, res, err = cont_run(["--host", "ask.approve=exec:cat >/dev/null; exit 75", f])
    check_interrupted(rc, res, err, "empty payload")
    check(res["interruptions"][0]["payload"] == {"$type": "undefined"}, f"{res}")
    # stdout that is not JSON: the run fails
    rc, res, err = cont_run(["--host", "ask.approve=exec:cat >/dev/null; echo not json; exit 75",
                             f])
    check_failed(rc, res, "PROTOCOL_ERROR", "payload not JSON")


def test_resume_interrupted_json_is_one_line():
    # --json prints one JSON object on one line, whatever the payload's own layout
    f = write("r12.js", 'return await ask.approve("q");')
    rc, out, err = cont_run(["--json", "--host", "ask.approve=exec:cat >/dev/null; "
                             "printf '{\\n  \"a\": 1\\n}\\n'; exit 75", f], json_out=False)
    check(rc == 3, f"exit {rc}: {out!r} {err!r}")
    check(json.loads(out)["interruptions"][0]["payload"] == {"a": 1}, out)
    check(out.endswith("\n") and out.count("\n") == 1, f"not one line: {out!r}")


# ------------------------------------------------------------------ modules

def test_modules_hostile_worker_cannot_load_outside():
    # A compromised worker may call the loader's load with any name: load refuses anything
    # that leaves the module root (symlink or ..), whatever resolve would have said.
    base = tempfile.mkdtemp(dir=TMP)
    root = os.path.join(base, "root")
    os.mkdir(root)
    with open(os.path.join(base, "secret.txt"), "w") as f:
        f.write("TOP SECRET")
    with open(os.path.join(root, "inside.mjs"), "w") as f:
        f.write("export const ok = 1;")
    os.symlink(os.path.join(base, "secret.txt"), os.path.join(root, "outside.mjs"))
    main = write("evil_main.js", "return 1")
    env = {"AIRLOCK_WORKER": os.path.join(HOSTS, "evil_loader_worker.py")}
    rc, out, err = run(["run", "--unsafe-no-jail", "--json", "--modules", root, main],
                       env_extra=env)
    check("TOP SECRET" not in out, f"the secret leaked: {out}")
    res = json.loads(out)
    v = res["value"]
    check(v[0][0] == "throw" and "cannot be read" in v[0][1], f"symlink out: {v}")
    check(v[1][0] == "throw", f"..: {v}")
    check(v[2] == ["value", "export const ok = 1;"], f"inside: {v}")


def test_modules_fifo_does_not_hang():
    # A FIFO in the module root is not a module: refused at once, the run goes on.
    root = tempfile.mkdtemp(dir=TMP)
    os.mkfifo(os.path.join(root, "f.mjs"))
    main = write("fifo_main.js",
                 'try { await import("./f.mjs"); } catch (e) { return e.message; }')
    rc, out, err = run(["run", "--json", "--limit", "timeout=5s", "--modules", root, main])
    res = json.loads(out)
    check(res.get("value") == "module '/f.mjs' cannot be read", f"{rc} {out} {err}")


# ------------------------------------------------------------------ the command line

def first_line(text):
    return text.split("\n", 1)[0]


def test_options_after_file():
    f = write("spin.js", "for (;;) {}")
    rc, out, err = run(["run", f, "--limit", "cpu=100ms"])
    check(rc == 1 and out == "" and first_line(err) ==
          "airlock: CPU_LIMIT: the run exceeded its CPU limit of 100 ms", f"{rc} {out!r} {err!r}")
    g = write("one.js", "return 1")
    rc, res, err = run_json([g, "--seed", "2a"])
    check(rc == 0 and res["value"] == 1 and res["stats"]["seed"] == "000000000000002a",
          f"{rc} {res}")
    # "--" ends the options: a FILE may then start with "-"
    dash = write("-dash.js", "return 2")
    rc, out, err = run(["run", "--json", "--", dash])
    check(rc == 0 and json.loads(out)["value"] == 2, f"{rc} {out!r} {err!r}")


def test_unknown_option_names_the_closest():
    f = write("a.js", "return 1")
    for typo, real in [("--limti", "--limit"), ("--jsno", "--json"), ("--hosts", "--host"),
                       ("--resovle", "--resolve"), ("--continuation-tll", "--continuation-ttl")]:
        err = usage_error(["run", typo, "x", f], typo)
        check(first_line(err) ==
              f"airlock: run: unknown option '{typo}'; did you mean '{real}'?", f"{err!r}")
    # also after FILE, and with the value attached
    err = usage_error(["run", f, "--limti=cpu=1s"], "--limti")
    check(first_line(err) == "airlock: run: unknown option '--limti'; did you mean '--limit'?",
          f"{err!r}")
    # nothing close: no suggestion
    err = usage_error(["run", "--frobnicate", f], "--frobnicate")
    check(first_line(err) == "airlock: run: unknown option '--frobnicate'", f"{err!r}")
    err = usage_error(["run", "--mod", f], "--mod")
    check(first_line(err) == "airlock: run: ambiguous option '--mod' ('--module', '--modules')",
          f"{err!r}")
    err = usage_error(["run", f, "--limit"], "--limit")
    check("needs a value" in first_line(err), f"{err!r}")
    err = usage_error(["run", "--json=yes", f], "--json")
    check("takes no value" in first_line(err), f"{err!r}")
    err = usage_error(["rnu", f], "rnu")
    check("did you mean 'run'?" in first_line(err), f"{err!r}")


def test_version():
    rc, out, err = run(["--version"])
    check(rc == 0 and err == "", f"{rc} {out!r} {err!r}")
    import re
    check(re.fullmatch(r"airlock \d+\.\d+\.\d+\n", out), f"--version: {out!r}")
    for args in (["-V"], ["version"]):
        rc2, out2, err2 = run(args)
        check(rc2 == 0 and out2 == out, f"{args}: {rc2} {out2!r}")


def test_doctor_json():
    rc, out, err = run(["doctor", "--json"])
    check(rc == 0, f"exit {rc}: {out!r} {err!r}")
    check(out.endswith("\n") and out.count("\n") == 1, f"not one line: {out!r}")
    d = json.loads(out)
    check(list(d) == ["version", "layers", "jail"] and d["jail"] == "ok", f"{d}")
    _, version, _ = run(["--version"])
    check(version == f"airlock {d['version']}\n", f"{d['version']!r} vs {version!r}")
    layers = d["layers"]
    check(layers["seccomp"].startswith("active") and layers["no_new_privs"] == "active" and
          layers["dumpable"] == "off" and layers["namespaces"].startswith("user "),
          f"{layers}")
    # the same layers as the readable report, in the same order
    _, text, _ = run(["doctor"])
    lines = [ln.split(": ", 1) for ln in text.splitlines()[1:-1]]
    check([[k, v] for k, v in layers.items()] == lines, f"{layers} vs {lines}")
    usage_error(["doctor", "--jsno"], "--jsno")


def test_help_is_the_readme_usage_block():
    rc, out, err = run(["run", "--help"])
    check(rc == 0 and err == "", f"{rc} {err!r}")
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("## `airlock run`"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```\n")]
    check(block == out, "README's usage block differs from `airlock run --help`:\n" +
          "\n".join(l for l in __import__("difflib").unified_diff(
              block.splitlines(), out.splitlines(), "README.md", "--help", lineterm="")))
    check(max(len(ln) for ln in out.splitlines()) <= 100, "a --help line is over 100 columns")


def readme_block(heading, fence, nth=0):
    # the nth ```fence block after the heading
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    rest = readme[readme.index(heading):]
    for _ in range(nth + 1):
        rest = rest[rest.index("```" + fence + "\n") + len(fence) + 4:]
    return rest[:rest.index("```\n")]


def readme_dir():
    # a scratch directory where the README's commands find build/bin and include/ as in a checkout
    d = tempfile.mkdtemp(dir=TMP)
    os.symlink(os.path.dirname(os.path.dirname(CLI)), os.path.join(d, "build"))
    os.symlink(os.path.join(ROOT, "include"), os.path.join(d, "include"))
    return d


def test_readme_resume_example_runs_as_written():
    # the README's interrupt-and-resume block, pasted into a shell as is
    script = readme_block("## Interrupt and resume", "sh")
    check("$ " not in script, "the block has prompts: it cannot be pasted as is")
    d = readme_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
    env["AIRLOCK_WORKER"] = WORKER
    p = subprocess.run(["sh", "-e", "-c", script], cwd=d, env=env, capture_output=True,
                       timeout=60)
    out = p.stdout.decode()
    check(p.returncode == 0, f"exit {p.returncode}: {out!r} {p.stderr.decode()!r}")
    check(out.endswith('{\n  "approved": true\n}\n'), f"the resumed run's value: {out!r}")


def test_readme_c_example_builds_and_runs():
    # the README's C program, compiled and linked as the README says, against the built library
    src = readme_block("## The C library", "c")
    how = readme_block("## The C library", "sh")
    check("int main(" in src, "the C example is not a complete program")
    d = readme_dir()
    with open(os.path.join(d, "orders.c"), "w") as f:
        f.write(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
    if SANITIZE:
        # a sanitized library links only into a sanitized program: the README's `cc` line runs
        # as written, through a `cc` that adds the flags
        bindir = os.path.join(d, "cc-wrap")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "cc"), "w") as f:
            f.write(f'#!/bin/sh\nexec {shutil.which("cc")} -fsanitize=address,undefined "$@"\n')
        os.chmod(os.path.join(bindir, "cc"), 0o755)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    p = subprocess.run(["sh", "-e", "-c", how], cwd=d, env=env, capture_output=True, timeout=120)
    out = p.stdout.decode()
    check(p.returncode == 0, f"exit {p.returncode}: {out!r} {p.stderr.decode()!r}")
    check(out == '[{"id":1,"amount":12.5}]\n', f"the program printed {out!r}")


def test_config_errors_exit_2():
    # CONFIG_ERROR, from the command line or from the library's result, exits 2 in both modes
    alog, mlog = os.path.join(TMP, "ce-approve.log"), os.path.join(TMP, "ce-marker.log")
    f = write("ce.js", RESUME_SRC)
    hosts = marker_host(mlog) + approve_host(alog)
    rc, res, err = cont_run(hosts + [f])
    check_interrupted(rc, res, err, "first run")
    token = res["continuation"]
    for json_out in (True, False):
        rc, r, err = cont_run(hosts + ["--resume", token, f], json_out=json_out)
        check(rc == 2, f"resume without --resolve: exit {rc} {r!r} {err!r}")
        rc, r, err = cont_run(hosts + ["--resume", token, "--resolve", "nope=1", f],
                              json_out=json_out)
        check(rc == 2, f"unknown id: exit {rc} {r!r} {err!r}")
        rc, r, err = cont_run(hosts + [f], secret=None, json_out=json_out)
        check(rc == 2, f"missing key: exit {rc} {r!r} {err!r}")
        if not json_out:
            check("airlock: CONFIG_ERROR: " in err, f"{err!r}")


# ------------------------------------------------------------------ co-process protocol errors

def test_host_process_error_not_leaked_to_guest():
    # the co-process prints a line that is not an answer: the guest's error says so, but never
    # quotes it (a co-process's stray output is not the guest's to read); the report does
    script = write("leak.py", "import json,sys\n"
                   "print(json.dumps({'functions':['echo.f']}), flush=True)\n"
                   "for line in sys.stdin:\n"
                   "    print('debug: token=SECRET-1234 \\x1b[2J', flush=True)\n")
    f = write("leak.js", "const m = [];\n"
              "try { await echo.f(1); } catch (e) { m.push(e.message); }\n"
              "try { await echo.f(2); } catch (e) { m.push(e.message); }\n"
              "return m;")
    rc, out, err = run(["run", "--host-process", f"{PY} {script}", f])
    check(rc == 2, f"exit {rc}: {out!r} {err!r}")
    msgs = json.loads(out)
    check(len(msgs) == 2 and all("not JSON" in m and "SECRET-1234" not in m for m in msgs),
          f"the guest saw {msgs!r}")
    check("SECRET-1234" in err and "\x1b" not in err and "\\x1b[2J" in err,
          f"the report must quote the line, escaped: {err!r}")
    # --json: exit 2 is never "completed"
    rc, out, err = run(["run", "--json", "--host-process", f"{PY} {script}", f])
    res = json.loads(out)
    check(rc == 2 and res["status"] == "failed" and res["error"]["code"] == "CONFIG_ERROR" and
          res["error"]["message"].startswith("host process: "), f"{rc} {res}")
    check(list(res) == ["status", "error", "console", "stats"], f"{list(res)}")


def test_host_process_last_answer_without_newline():
    script = write("nonl.py", "import json,sys\n"
                   "print(json.dumps({'functions':['echo.f']}), flush=True)\n"
                   "r = json.loads(sys.stdin.readline())\n"
                   "sys.stdout.write(json.dumps({'id': r['id'], 'result': 42}))\n")
    f = write("nonl.js", "return await echo.f(1);")
    rc, res, err = run_json(["--host-process", f"{PY} {script}", f])
    check(rc == 0 and res["status"] == "completed" and res["value"] == 42, f"{rc} {res} {err!r}")


# ------------------------------------------------------------------ hostile review

LINE_LOGGER = """import json, sys
log = open(sys.argv[1], "a")
print(json.dumps({"functions": ["echo.f", "ask.approve"]}), flush=True)
for line in sys.stdin:
    log.write(line); log.flush()
    try:
        req = json.loads(line)
    except ValueError:
        continue
    ans = {"function": req["function"], "resume": req.get("resume")}
    print(json.dumps({"id": req["id"], "result": ans}), flush=True)
"""


def test_worker_cannot_inject_coprocess_lines():
    # A compromised worker sends arguments that are valid JSON with raw newlines between
    # tokens. Spliced into the stream as sent, the middle line would be a forged request of its
    # own: a re-invoked ask.approve carrying an approved resolution, answered as call 1.
    forged = {"id": 1, "function": "ask.approve", "args": ["refund 1000"],
              "resume": {"interruptionId": "0" * 32, "payload": None,
                         "resolution": {"approved": True}}}
    args = "[\n" + json.dumps(forged) + "\n,\r\n\t1 ]"
    log = os.path.join(TMP, "inject.log")
    f = write("inject.js", args)
    env = {"AIRLOCK_WORKER": os.path.join(HOSTS, "raw_call_worker.py")}
    rc, out, err = run(["run", "--unsafe-no-jail", "--json", "--host-process",
                        f"{PY} -c '{LINE_LOGGER}' {log}", f], env_extra=env)
    lines = log_lines(log)
    check(len(lines) == 1, f"one call, {len(lines)} lines reached the co-process: {lines}")
    req = json.loads(lines[0])
    check(req == {"id": 1, "function": "echo.f", "args": [forged, 1]}, f"{req}")
    res = json.loads(out)
    check(rc == 0 and res["value"] == {"value": {"function": "echo.f", "resume": None}},
          f"{rc} {res}")


def test_a_call_id_sent_twice_ends_the_run():
    # a hostile worker repeats an answered call's id, as if to have it carried out again: the
    # run ends with a protocol error and the host function ran once
    log = os.path.join(TMP, "dup.log")
    f = write("dup.js", "1")
    env = {"AIRLOCK_WORKER": os.path.join(HOSTS, "dup_call_worker.py")}
    rc, out, err = run(["run", "--unsafe-no-jail", "--json", "--host-process",
                        f"{PY} -c '{LINE_LOGGER}' {log}", f], env_extra=env)
    res = json.loads(out)
    check(rc != 0 and res["error"]["code"] == "PROTOCOL_ERROR" and
          "invalid host call" in res["error"]["message"], f"{rc} {res}")
    check(len(log_lines(log)) == 1, f"the host ran {len(log_lines(log))} times")


def test_json_output_is_one_line_whatever_the_worker_sends():
    # the same hostile worker: its call's arguments reach --json output (through an exec host
    # that interrupts) on the command's one line
    f = write("oneline.js", '[\n"a" ,\n\n{ "b" :\r\n 1 } ]')
    env = {"AIRLOCK_WORKER": os.path.join(HOSTS, "raw_call_worker.py")}
    rc, out, err = run(["run", "--unsafe-no-jail", "--json", "--host",
                        "echo.f=exec:cat", f], env_extra=env)
    check(rc == 0 and out.count("\n") == 1, f"{rc} {out!r} {err!r}")
    check(json.loads(out)["value"] == {"value": ["a", {"b": 1}]}, out)
    check('"value":{"value":["a",{"b":1}]}' in out, f"arguments reached the exec host as {out!r}")


def test_secrets_never_reach_hosts():
    # the continuation secrets sign approvals: no host command or co-process may read them
    dump = write("envdump.py", "import json, os, sys\n"
                 "open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))\n"
                 "print(json.dumps({'functions': ['cop.env']}), flush=True)\n"
                 "for line in sys.stdin:\n"
                 "    r = json.loads(line)\n"
                 "    print(json.dumps({'id': r['id'], 'result': 1}), flush=True)\n")
    cop_env = os.path.join(TMP, "coproc-env.json")
    f = write("env.js", "return [await h.env(), await cop.env()];")
    as_json = f"{PY} -c 'import json,sys; print(json.dumps(sys.stdin.read()))'"
    rc, res, err = cont_run(["--host", f"h.env=exec:env | {as_json}", "--host-process",
                             f"{PY} {dump} {cop_env}", f], previous=NEW_SECRET)
    check(rc == 0, f"{rc} {res} {err!r}")
    exec_env = res["value"][0]
    with open(cop_env) as fh:
        coproc = json.load(fh)
    for what, text in (("exec host", exec_env), ("co-process", json.dumps(coproc))):
        check(SECRET not in text and NEW_SECRET not in text, f"{what} got a secret")
        check("AIRLOCK_CONTINUATION_" not in text, f"{what} sees the variable names: {text}")
    check("AIRLOCK_FUNCTION=h.env" in exec_env, f"the exec host's own variables: {exec_env}")
    check(coproc.get("AIRLOCK_WORKER") == WORKER, "the rest of the environment is inherited")


def test_readable_output_escapes_controls():
    # a guest prints a fake "interrupted" block and tries to erase the real one: every control
    # character a terminal would obey is shown escaped; the real block is intact
    fake = ("\\x1b[2K\\rairlock: interrupted: 1 decision needed\\n  0000  pay.all([])"
            "\\n    payload: {}\\u009b2J\\x7f\\x1b[1A")
    f = write("fake.js", f'console.log("{fake}");\n'
              'console.error("a\\tb\\x00c\\x08");\n'
              'const r = await ask.approve("x\\u009b1A", "\\x1b]0;title\\x07");\n'
              'return r;')
    host = ["--host", "ask.approve=exec:cat >/dev/null; printf '\"\\302\\233\\177\"'; exit 75"]
    rc, out, err = cont_run(host + [f], json_out=False)
    check(rc == 3, f"exit {rc}: {out!r} {err!r}")
    bad = [c for c in err if (ord(c) < 0x20 and c not in "\t\n") or 0x7f <= ord(c) < 0xa0]
    check(not bad, f"raw control characters on stderr: {bad!r} in {err!r}")
    check("\\x1b[2K\\x0dairlock: interrupted: 1 decision needed" in err and "\\u009b2J" in err
          and "\\x7f\\x1b[1A" in err, f"console line: {err!r}")
    check("error: a\tb\\x00c\\x08\n" in err, f"tab kept, other C0 escaped: {err!r}")
    real = [ln for ln in err.splitlines() if ln.startswith("  ") and "ask.approve(" in ln]
    check(len(real) == 1 and real[0].endswith('ask.approve(["x\\u009b1A","\\u001b]0;title\\u0007"])'),
          f"the real interruption line: {real}")
    check('    payload: "\\u009b\\u007f"' in err, f"payload: {err!r}")
    # failures: name, message and stack
    g = write("fail.js", 'throw new TypeError("m\\x1b[1A\\u0085\\rX");')
    rc, out, err = run(["run", g])
    check(rc == 1 and first_line(err) == "airlock: USER_ERROR: TypeError: m\\x1b[1A\\u0085\\x0dX",
          f"{rc} {err!r}")
    check("\x1b" not in err and "\x85" not in err, f"{err!r}")
    # the value stays the same JSON value, with the C1 and DEL characters as \\u escapes
    h = write("val.js", 'return {"k\\u009b": "v\\x7f\\u0085é"};')
    rc, out, err = run(["run", h])
    check(rc == 0 and json.loads(out) == {"k\u009b": "v\x7f\u0085é"}, f"{rc} {out!r}")
    check(not [c for c in out if 0x7f <= ord(c) < 0xa0], f"raw controls in the value: {out!r}")


HIDDEN = "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"


def test_readable_output_shows_hidden_characters():
    # Trojan Source in a value or a console line: "refund 05" reads "refund 50" with U+202E
    # before it. Bidirectional and invisible characters are shown as \u escapes, so a person
    # reads the text as it is; the value is the same JSON value.
    f = write("hidden.js", 'console.log("refund \\u202e05 \\ufeff ok");\n'
              'return {"amount\\u2066": "' + "".join("\\u%04x" % ord(c) for c in HIDDEN) + '"};')
    rc, out, err = run(["run", f])
    check(rc == 0 and json.loads(out) == {"amount\u2066": HIDDEN}, f"{rc} {out!r}")
    check("refund \\u202e05 \\ufeff ok" in err, f"console line: {err!r}")
    for text in (out, err):
        check(not [c for c in text if c in HIDDEN], f"a hidden character shown raw: {text!r}")
    check("".join("\\u%04x" % ord(c) for c in HIDDEN) in out, f"value: {out!r}")


# ------------------------------------------------------------------ main

# ---- airlock audit verify: exports written here by an independent Python implementation of
# the format in docs/audit.md (JCS of records holding only integers, strings, null and objects is
# json.dumps with sorted keys and no spaces), then tampered with.

ZERO_HASH = "0" * 64


class Signer:
    """Ed25519 through the cryptography package, or the openssl command when it is missing."""

    def __init__(self):
        try:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
            from cryptography.hazmat.primitives import serialization
            self.key = Ed25519PrivateKey.generate()
            self.public_hex = self.key.public_key().public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
            self.sign = lambda msg: self.key.sign(msg).hex()
        except ImportError:
            pem = os.path.join(TMP, f"audit-key-{id(self)}.pem")
            subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", pem],
                           check=True, capture_output=True)
            der = subprocess.run(["openssl", "pkey", "-in", pem, "-pubout", "-outform", "DER"],
                                 check=True, capture_output=True).stdout
            self.public_hex = der[-32:].hex()

            def sign(msg):
                path = os.path.join(TMP, "audit-msg")
                with open(path, "wb") as f:
                    f.write(msg)
                return subprocess.run(["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", pem,
                                       "-in", path], check=True, capture_output=True).stdout.hex()
            self.sign = sign


def jcs(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def audit_record(seq, prev, action="run.complete", actor="alice", subject="orders",
                 department="finance", details=None):
    import hashlib
    rec = {"seq": seq, "time": f"2026-01-31T12:00:{seq % 60:02d}.{seq % 1000:03d}Z",
           "actor": actor, "action": action, "subject": subject, "department": department,
           "details": details if details is not None else {"ms": 12, "note": "a\nb \u20ac"},
           "prev": prev}
    rec["hash"] = hashlib.sha256((prev + jcs(rec)).encode("utf-8")).hexdigest()
    return rec


def audit_checkpoint(seq, covered, signer):
    msg = f"airlock-audit-checkpoint\n{covered['seq']}\n{covered['hash']}\n".encode()
    details = {"seq": covered["seq"], "hash": covered["hash"], "public_key": signer.public_hex,
               "signature": signer.sign(msg)}
    return audit_record(seq, covered["hash"], action="audit.checkpoint", actor="airlockd",
                        subject="audit", department=None, details=details)


def audit_export(signer, n=7, checkpoint_every=4):
    """Records 1..n, a checkpoint after every `checkpoint_every`, and one at the end."""
    recs = []
    while len(recs) < n:
        prev = recs[-1]["hash"] if recs else ZERO_HASH
        if len(recs) % checkpoint_every == checkpoint_every - 1:
            recs.append(audit_checkpoint(len(recs) + 1, recs[-1], signer))
        else:
            recs.append(audit_record(len(recs) + 1, prev, department=None if len(recs) % 2
                                     else "finance"))
    recs.append(audit_checkpoint(len(recs) + 1, recs[-1], signer))
    return recs


def write_export(name, lines):
    return write(name, "".join((ln if isinstance(ln, str) else jcs(ln)) + "\n" for ln in lines))


def audit_verify(path, *extra):
    return run(["audit", "verify", path] + list(extra))


def expect_bad(path, seq, what, *extra):
    rc, out, err = audit_verify(path, *extra)
    check(rc == 1, f"exit {rc}, want 1: {out!r} {err!r}")
    check(f"seq {seq}:" in err and what in err, f"want seq {seq} and {what!r}: {err!r}")


def test_audit_verify_valid_export():
    signer = Signer()
    path = write_export("audit-ok.jsonl", audit_export(signer))
    rc, out, err = audit_verify(path)
    check(rc == 0, f"exit {rc}: {out!r} {err!r}")
    check("verified 8 records" in out and "NOT pinned" in out, out)
    rc, out, err = audit_verify(path, "--public-key", signer.public_hex)
    check(rc == 0 and "(pinned)" in out, f"exit {rc}: {out!r} {err!r}")
    with open(path, "rb") as f:
        rc, out, err = run(["audit", "verify", "-"], stdin=f.read())
    check(rc == 0 and "verified 8 records" in out, f"stdin: exit {rc}: {out!r} {err!r}")
    rc, out, err = audit_verify(path, "--json", "--public-key", signer.public_hex.upper())
    doc = json.loads(out)
    check(rc == 0 and doc["ok"] is True and doc["records"] == 8 and doc["checkpoints"] == 2 and
          doc["key_pinned"] is True and doc["public_key"] == signer.public_hex, out)


def test_audit_verify_edited_record():
    recs = audit_export(Signer())
    recs[2]["subject"] = "refunds"
    expect_bad(write_export("audit-edit.jsonl", recs), 3, "hash mismatch")
    # Rehashed too: the next record's prev link breaks.
    recs = audit_export(Signer())
    recs[1] = audit_record(2, recs[0]["hash"], actor="mallory")
    expect_bad(write_export("audit-edit2.jsonl", recs), 3, "broken prev link")


def test_audit_verify_deleted_inserted_swapped():
    recs = audit_export(Signer())
    expect_bad(write_export("audit-del.jsonl", recs[:1] + recs[2:]), 3, "seq gap")
    expect_bad(write_export("audit-dup.jsonl", recs[:3] + recs[2:]), 3, "duplicate seq")
    forged = audit_record(3, recs[1]["hash"], actor="mallory")
    expect_bad(write_export("audit-ins.jsonl", recs[:2] + [forged] + recs[2:]), 3,
               "duplicate seq")
    expect_bad(write_export("audit-swap.jsonl", recs[:1] + [recs[2], recs[1]] + recs[3:]), 3,
               "seq gap")


def test_audit_verify_truncated():
    recs = audit_export(Signer())
    expect_bad(write_export("audit-trunc.jsonl", recs[:-1]), 7, "unsealed")
    rc, out, err = audit_verify(write_export("audit-trunc2.jsonl", recs[:-1]), "--allow-unsealed")
    check(rc == 0 and "not signed" in out, f"exit {rc}: {out!r} {err!r}")
    text = "".join(jcs(r) + "\n" for r in recs)
    path = write("audit-cut.jsonl", text[:-40])
    rc, out, err = audit_verify(path)
    check(rc == 1 and "line 8" in err and "malformed" in err, f"exit {rc}: {err!r}")


def test_audit_verify_checkpoint_signature_and_key():
    signer, other = Signer(), Signer()
    recs = audit_export(signer)
    bad = dict(recs[3]["details"])
    bad["signature"] = ("0" if bad["signature"][0] != "0" else "1") + bad["signature"][1:]
    recs[3] = audit_record(4, recs[2]["hash"], action="audit.checkpoint", actor="airlockd",
                           subject="audit", department=None, details=bad)
    # Rehashed, so the chain after it must follow the new hash.
    for i in range(4, len(recs)):
        r = recs[i]
        if r["action"] == "audit.checkpoint":
            recs[i] = audit_checkpoint(i + 1, recs[i - 1], signer)
        else:
            recs[i] = audit_record(i + 1, recs[i - 1]["hash"], department=r["department"])
    expect_bad(write_export("audit-sig.jsonl", recs), 4, "bad checkpoint signature")
    path = write_export("audit-other.jsonl", audit_export(other))
    rc, out, err = audit_verify(path)
    check(rc == 0 and other.public_hex in out and "NOT pinned" in out, f"{rc} {out!r} {err!r}")
    expect_bad(path, 4, "not the pinned key", "--public-key", signer.public_hex)
    rc, out, err = audit_verify(path, "--json", "--public-key", signer.public_hex)
    doc = json.loads(out)
    check(rc == 1 and doc == {"ok": False, "fault": "checkpoint key not the expected key",
                              "seq": 4, "line": 4, "why": doc["why"]}, out)


def test_audit_verify_malformed_line():
    recs = audit_export(Signer())
    lines = [jcs(r) for r in recs]
    lines[4] = lines[4][:-1] + ',"extra":1}'
    expect_bad(write_export("audit-extra.jsonl", lines), 5, "malformed record")
    lines[4] = "not json"
    rc, out, err = audit_verify(write_export("audit-junk.jsonl", lines))
    check(rc == 1 and "line 5" in err and "not JSON" in err, f"exit {rc}: {err!r}")


def test_audit_verify_usage():
    usage_error(["audit"], "usage: airlock audit verify")
    usage_error(["audit", "check", "x"], "unknown subcommand")
    usage_error(["audit", "verify"], "no export given")
    usage_error(["audit", "verify", "x.jsonl", "--public-key", "abc"], "64 hex digits")
    usage_error(["audit", "verify", "x.jsonl", "--public-key", "zz" * 32], "64 lowercase hex")
    usage_error(["audit", "verify", os.path.join(TMP, "missing.jsonl")], "cannot open")
    rc, out, err = run(["audit", "verify", "--help"])
    check(rc == 0 and "--public-key" in out, out)
    rc, out, err = audit_verify(write("audit-empty.jsonl", ""))
    check(rc == 1 and "empty export" in err, f"exit {rc}: {err!r}")


def main():
    global CLI, WORKER, TMP, SANITIZE
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("--sanitize", action="store_true", help="the build uses ASan and UBSan")
    a = ap.parse_args()
    SANITIZE = a.sanitize
    CLI, WORKER = os.path.abspath(a.cli), os.path.abspath(a.worker)
    TMP = tempfile.mkdtemp(prefix="airlock-cli-")
    tests = [(n, f) for n, f in sorted(globals().items())
             if n.startswith("test_") and callable(f) and a.k in n]
    passed = failed = pending = 0
    try:
        for name, fn in tests:
            try:
                fn()
                ok, detail = True, ""
            except Fail as e:
                ok, detail = False, str(e)
            except Exception:
                ok, detail = False, traceback.format_exc()
            if name in KNOWN_BUGS:
                pending += 1
                print(f"pending {name}: {'NOW PASSES' if ok else 'still failing'}: "
                      f"{KNOWN_BUGS[name]}; {detail}", flush=True)
            elif ok:
                passed += 1
                print(f"ok      {name}", flush=True)
            else:
                failed += 1
                print(f"FAIL    {name}: {detail}", flush=True)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if pending:
        print(f"{pending} pending (known bugs, not counted)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
