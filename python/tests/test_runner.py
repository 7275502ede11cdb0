"""Embedded mode: host functions (sync, async, raising, interrupting), call_context(),
interrupt -> continuation -> resume, limits, asyncio (arun concurrency, cancellation), and the
message when the library is missing."""
import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

import airlock

from conftest import SECRET

HANG = 15  # s: a deadline, never a measure


def test_completed_value_console_stats(runner):
    r = runner.run("console.log('hi', 1); console.warn('w'); return {x: 1}", seed=7)
    assert r.status == "completed" and r.ok and r.value == {"x": 1} and r.error is None
    assert [(c.level, c.text) for c in r.console] == [("log", "hi 1"), ("warn", "w")]
    assert r.stats.seed == 7 and r.stats.wall_us > 0 and r.stats.host_calls == 0
    assert r.run_id and r.continuation is None and r.interruptions == []


def test_seed_makes_random_repeat(runner):
    a = runner.run("return Math.random()", seed=42).value
    assert runner.run("return Math.random()", seed=42).value == a


def test_typescript(runner):
    r = runner.run("const n: number = 2; return n * 2", lang="ts")
    assert r.value == 4
    r = runner.run("const n: number = 2; return n", lang="js")
    assert r.status == "failed" and r.error.code == "USER_ERROR"


def test_failed_guest_error(runner):
    r = runner.run("throw new RangeError('nope')")
    assert r.status == "failed" and r.value is None
    assert r.error.code == "USER_ERROR" and r.error.name == "RangeError"
    assert r.error.message == "nope" and "run.js" in r.error.stack


def test_sync_host_with_positional_args_and_context(runner):
    seen = []

    def lookup(cid, opts):
        ctx = airlock.call_context()
        seen.append((ctx.run_id, ctx.function, ctx.seq, ctx.interruption_id, ctx.resolution))
        return {"id": cid, "name": "Initech", "opts": opts}

    r = runner.run("return await crm.lookup('c-42', {deep: true})", host={"crm.lookup": lookup},
                   run_id="run-ctx-1")
    assert r.value == {"id": "c-42", "name": "Initech", "opts": {"deep": True}}
    assert seen == [("run-ctx-1", "crm.lookup", 1, None, None)]
    assert r.stats.host_calls == 1
    with pytest.raises(LookupError):
        airlock.call_context()


def test_async_host_in_sync_run(runner):
    async def slow(x):
        await asyncio.sleep(0.01)
        return {"x": x, "run": airlock.call_context().run_id}

    r = runner.run("return await Promise.all([a.slow(1), a.slow(2)])", host={"a.slow": slow},
                   run_id="r-async")
    assert r.value == [{"x": 1, "run": "r-async"}, {"x": 2, "run": "r-async"}]


def test_host_raises(runner):
    def bad(x):
        raise ValueError("no customer %s" % x)

    r = runner.run("try { await crm.bad(3) } catch (e) { return [e instanceof Error, e.message] }",
                   host={"crm.bad": bad})
    assert r.value == [True, "no customer 3"]
    r = runner.run("return await crm.bad(4)", host={"crm.bad": bad})
    assert r.status == "failed" and r.error.code == "HOST_FUNCTION_ERROR"
    assert "no customer 4" in r.error.message

    async def abad():
        raise KeyError("k")
    r = runner.run("try { await crm.abad() } catch (e) { return e.message }",
                   host={"crm.abad": abad})
    assert r.value == "'k'"


def test_host_type_error_is_the_guests(runner):
    # raising TypeError, or being called with arguments the function cannot take, is a
    # TypeError in the guest; any other exception an Error
    def typed(amount):
        if not isinstance(amount, int):
            raise TypeError("amount must be an integer")
        return amount

    r = runner.run("const out = [];"
                   "for (const a of [['x'], [1, 2]]) {"
                   "  try { await shop.typed(...a) } catch (e) {"
                   "    out.push([e instanceof TypeError, e.name, e.message]) } }"
                   "return out", host={"shop.typed": typed})
    assert r.value[0] == [True, "TypeError", "amount must be an integer"]
    assert r.value[1][:2] == [True, "TypeError"] and "positional argument" in r.value[1][2]
    r = runner.run("return await shop.typed('x')", host={"shop.typed": typed})
    assert r.status == "failed" and r.error.code == "HOST_FUNCTION_ERROR"
    assert r.error.name == "TypeError"


def test_unencodable_answer_throws_in_guest(runner):
    r = runner.run("try { await py.f() } catch (e) { return e.message }",
                   host={"py.f": lambda: object()})
    assert "cannot encode object" in r.value


def test_runner_functions_and_per_run_functions():
    calls = []
    with airlock.Runner(host={"shared.ping": lambda: "pong"}) as r:
        a = r.run("return [await shared.ping(), await only.me()]",
                  host={"only.me": lambda: calls.append(1) or "a"})
        b = r.run("return [await shared.ping(), typeof only]")
    assert a.value == ["pong", "a"] and b.value == ["pong", "undefined"] and calls == [1]


REFUND = """
const orders = await shop.orders();
const r = await shop.refund(orders[0], 30);
return {order: orders[0], refund: r};
"""


def test_interrupt_continuation_resume(runner):
    log = []

    def orders():
        log.append("orders")
        return ["o-1", "o-2"]

    def refund(order, amount):
        ctx = airlock.call_context()
        log.append(("refund", order, amount, ctx.interruption_id, ctx.resolution))
        if ctx.resolution is None:
            airlock.interrupt({"ask": "refund %s of %d?" % (order, amount)})
        if not ctx.resolution["approved"]:
            raise PermissionError("refund denied")
        assert ctx.interruption.id == ctx.interruption_id and ctx.args == [order, amount]
        assert ctx.interruption.function == "shop.refund"
        return {"refunded": order, "amount": amount, "key": ctx.interruption_id,
                "asked": ctx.interruption.payload}

    host = {"shop.orders": orders, "shop.refund": refund}
    r = runner.run(REFUND, host=host)
    assert r.status == "interrupted", r.error
    assert r.value is None and r.continuation
    assert len(r.interruptions) == 1
    it = r.interruptions[0]
    assert it.function == "shop.refund" and it.args == ["o-1", 30]
    assert it.payload == {"ask": "refund o-1 of 30?"}
    assert log == ["orders", ("refund", "o-1", 30, None, None)]

    done = runner.run(REFUND, host=host, resume=r.continuation,
                      resolutions={it.id: {"approved": True}})
    assert done.status == "completed", done.error
    assert done.value == {"order": "o-1", "refund": {"refunded": "o-1", "amount": 30,
                                                     "key": it.id, "asked": it.payload}}
    # orders() answered from the continuation: not called again
    assert log[2:] == [("refund", "o-1", 30, it.id, {"approved": True})]

    denied = runner.run(REFUND, host=host, resume=r.continuation,
                        resolutions={it.id: {"approved": False}})
    assert denied.status == "failed" and "refund denied" in denied.error.message


def test_async_interrupt(runner):
    async def ask(q):
        ctx = airlock.call_context()
        if ctx.resolution is None:
            airlock.interrupt(q)
        return ctx.resolution

    r = runner.run("return await p.ask('ok?')", host={"p.ask": ask})
    assert r.status == "interrupted" and r.interruptions[0].payload == "ok?"
    r2 = runner.run("return await p.ask('ok?')", host={"p.ask": ask}, resume=r.continuation,
                    resolutions={r.interruptions[0].id: "yes"})
    assert r2.value == "yes"


def test_interrupt_needs_a_secret():
    with airlock.Runner() as r:
        res = r.run("return await p.ask()", host={"p.ask": lambda: airlock.interrupt("x")})
    assert res.status == "failed" and res.error.code == "CONFIG_ERROR"


def test_timeout_and_limits():
    with airlock.Runner(limits={"memory": "16M", "host_calls": 2}) as r:
        t = r.run("while (true) {}", timeout=0.2)
        assert t.status == "failed" and t.error.code == "TIMEOUT"
        m = r.run("const a = []; while (true) a.push(new Array(1e5).fill(1));")
        assert m.error.code == "MEMORY_LIMIT"
        h = r.run("for (let i = 0; i < 3; i++) await p.f(); return 1", host={"p.f": lambda: 1})
        assert h.error.code == "BRIDGE_LIMIT"
    with airlock.Runner(limits={"timeout_ms": 150}) as r:
        assert r.run("while (true) {}").error.code == "TIMEOUT"
    with pytest.raises(airlock.ConfigError) as e:
        airlock.Runner(limits={"nonsense": 1})
    assert "nonsense" in str(e.value)
    with pytest.raises(airlock.ConfigError):
        airlock.Runner(secret="short")


def test_arun_concurrent_without_blocking_the_loop(runner):
    # each run's slow() waits until all four runs are inside slow() at once, and another task
    # of the loop (the releaser) has seen them there: runs one after another, or a loop blocked
    # while they run, never get there (HANG is the deadline, not a measure)
    inside = set()
    released = None

    async def slow(i):
        inside.add(i)
        try:
            await asyncio.wait_for(released.wait(), HANG)
        except asyncio.TimeoutError:
            raise AssertionError("runs did not overlap: %d of 4 inside slow() at once"
                                 % len(inside))
        return i * 10

    def plain(i):
        return threading.current_thread().name != "MainThread" and i

    async def main():
        nonlocal released
        released = asyncio.Event()

        async def releaser():
            while len(inside) < 4:
                await asyncio.sleep(0.01)
            released.set()
        t = asyncio.ensure_future(releaser())
        results = await asyncio.gather(*[
            runner.arun("return [await s.slow(%d), await s.plain(%d)]" % (i, i),
                        host={"s.slow": slow, "s.plain": plain}) for i in range(4)])
        t.cancel()
        return results, released.is_set()

    results, all_at_once = asyncio.run(main())
    assert all_at_once, "runs did not overlap: %r" % [(r.status, r.error) for r in results]
    assert [r.value for r in results] == [[0, 0], [10, 1], [20, 2], [30, 3]], \
        [(r.status, r.value, r.error) for r in results]


def test_arun_cancellation(runner):
    # the cancelled task ends at once, not when the run's timeout (30 s) would end the run;
    # HANG is a deadline well short of that, far past what it takes (milliseconds)
    async def main():
        task = asyncio.ensure_future(runner.arun("while (true) {}", timeout=30))
        await asyncio.sleep(0.2)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start
    assert asyncio.run(main()) < HANG
    # the runner goes on serving runs
    assert runner.run("return 1").value == 1


def test_arun_cancel_while_host_waits(runner):

    async def forever():
        await asyncio.sleep(3600)

    async def main():
        task = asyncio.ensure_future(runner.arun("return await h.forever()",
                                                 host={"h.forever": forever}))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())


def test_arun_result_like_run(runner):
    async def main():
        return await runner.arun("return await p.f(2)", host={"p.f": lambda x: x + 1})
    r = asyncio.run(main())
    assert r.status == "completed" and r.value == 3


def test_library_not_found_message(tmp_path):
    code = ("import airlock\n"
            "try:\n"
            "    airlock.Runner()\n"
            "except airlock.LibraryNotFound as e:\n"
            "    print('MSG', e)\n")
    env = dict(os.environ, AIRLOCK_LIBRARY=str(tmp_path / "missing.so"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert "MSG libairlock not found: AIRLOCK_LIBRARY=" in out.stdout, out.stderr
    env.pop("AIRLOCK_LIBRARY")
    env["LD_LIBRARY_PATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if "MSG" in out.stdout:  # an installed libairlock would be found and no error raised
        assert "set AIRLOCK_LIBRARY" in out.stdout and "LD_LIBRARY_PATH" in out.stdout
    # Client mode needs no library
    out = subprocess.run([sys.executable, "-c", "import airlock; airlock.Client('http://x', 'k')"],
                         env=dict(env, AIRLOCK_LIBRARY=str(tmp_path / "missing.so")),
                         capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr


def test_worker_from_environment(tmp_path):
    code = ("import airlock\n"
            "r = airlock.Runner()\n"
            "print(r.run('return 1').error)\n")
    env = dict(os.environ, AIRLOCK_WORKER=str(tmp_path / "no-worker"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert "no-worker" in out.stdout + out.stderr


def test_start_cancel_from_another_thread(runner):
    run = runner.start("while (true) {}", run_id="to-cancel")
    assert run.run_id == "to-cancel"
    threading.Timer(0.2, run.cancel).start()
    r = run.result(timeout=10)
    assert r.status == "failed" and r.error.code == "ABORTED"


def test_start_with_hosts(runner):
    async def a(x):
        await asyncio.sleep(0.01)
        return x + airlock.call_context().seq

    run = runner.start("return [await h.a(10), await h.b(1)]",
                       host={"h.a": a, "h.b": lambda x: -x})
    assert run.result(timeout=10).value == [11, -1]


def test_arun_interrupt_and_resume(runner):
    async def ask(q):
        ctx = airlock.call_context()
        if ctx.resolution is None:
            airlock.interrupt({"q": q})
        return ctx.resolution

    async def main():
        r = await runner.arun("return await p.ask('go?')", host={"p.ask": ask})
        assert r.status == "interrupted"
        return await runner.arun("return await p.ask('go?')", host={"p.ask": ask},
                                 resume=r.continuation,
                                 resolutions={r.interruptions[0].id: "go"})
    assert asyncio.run(main()).value == "go"


def test_threads_share_a_runner(runner):
    out = [None] * 8

    def one(i):
        out[i] = runner.run("return await p.f(%d)" % i, host={"p.f": lambda x: x * 2}).value
    ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [i * 2 for i in range(8)]


def test_wrong_argument_count_is_an_error_in_the_guest(runner):
    async def one(x):
        return x

    r = runner.run("const out = [];"
                   "try { await p.sync(1, 2) } catch (e) { out.push(e.message) }"
                   "try { await p.one(1, 2) } catch (e) { out.push(e.message) }"
                   "return out", host={"p.sync": lambda x: x, "p.one": one})
    assert r.status == "completed" and len(r.value) == 2
    assert all("positional argument" in m for m in r.value), r.value


def test_cancelled_flag_for_slow_hosts(runner):
    seen = []

    async def slow():
        ctx = airlock.call_context()
        seen.append(ctx.cancelled)
        while not ctx.cancelled:
            await asyncio.sleep(0.01)
        seen.append(ctx.cancelled)
        return 1

    r = runner.run("return await p.slow()", host={"p.slow": slow}, timeout=0.3)
    assert r.error.code == "TIMEOUT"
    deadline = time.monotonic() + HANG
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [False, True]


# ---------------------------------------------------------------------------------- journal

JOURNAL_SRC = """
const a = await shop.get(1);
let e;
try { await shop.fail(); } catch (x) { e = x.message; }
const [b, c] = await Promise.all([shop.get(2), shop.get(3)]);
return [a, e, b, c, Date.now(), Math.random()];
"""


def _journal_host(calls):
    def get(n):
        calls.append(n)
        return n * 10

    def fail():
        calls.append("fail")
        raise ValueError("out of stock")
    return {"shop.get": get, "shop.fail": fail}


def test_journal_replays_without_the_host(runner):
    calls, kept = [], []
    first = runner.run(JOURNAL_SRC, host=_journal_host(calls), seed=5, clock_ms=1_000_000,
                       journal=kept.append)
    assert first.ok and len(calls) == 4 and [e.position for e in kept] == [1, 2, 3, 4]
    assert kept[0].function == "shop.get" and kept[0].call == 1 and kept[0].payload == "10"
    assert kept[1].kind == "throw" and kept[1].payload == "out of stock"
    assert all(len(e.args_sha256) == 64 and not e.sync for e in kept)

    # from the whole journal, as dicts (what a database gives back): no host call at all
    calls.clear()
    again = runner.run(JOURNAL_SRC, host=_journal_host(calls), seed=5, clock_ms=1_000_000,
                       journal_entries=[e.to_dict() for e in kept])
    assert again.value == first.value and calls == [] and again.stats.host_calls == 0

    # from the first two: only the calls after them reach the host, journaled from position 3
    calls.clear()
    rest = []
    part = runner.run(JOURNAL_SRC, host=_journal_host(calls), seed=5, clock_ms=1_000_000,
                      journal_entries=kept[:2], journal=rest.append)
    assert part.ok and sorted(calls) == [2, 3]
    assert [e.position for e in rest] == [3, 4]
    assert part.value[:4] == first.value[:4]


def test_journal_refusals(runner):
    kept = []
    host = _journal_host([])
    runner.run(JOURNAL_SRC, host=host, seed=5, clock_ms=0, journal=kept.append)
    gap = [kept[0], airlock.JournalEntry(**dict(kept[1].to_dict(), position=3))]
    r = runner.run(JOURNAL_SRC, host=host, seed=5, clock_ms=0, journal_entries=gap)
    assert r.status == "failed" and r.error.code == "CONFIG_ERROR"
    # a position past 32 bits is refused, not wrapped into 1
    wrapped = [airlock.JournalEntry(**dict(kept[0].to_dict(), position=2**32 + 1))]
    with pytest.raises(airlock.ConfigError):
        runner.run(JOURNAL_SRC, host=host, seed=5, clock_ms=0, journal_entries=wrapped)
    other = runner.run(JOURNAL_SRC.replace("shop.get(1)", "shop.get(9)"), host=host, seed=5,
                       clock_ms=0, journal_entries=kept)
    assert other.error.code == "PROTOCOL_ERROR" and "diverges at call 1" in other.error.message

    def broken(entry):
        raise OSError("disk full")
    calls = []
    r = runner.run(JOURNAL_SRC, host=_journal_host(calls), journal=broken)
    assert r.status == "failed" and r.error.code == "INTERNAL_ERROR" and calls == [1]


def test_input_is_the_guests_frozen_global(runner):
    """input= is the guest's global `input`, as airlockd gives a template's run: every level
    frozen, the binding const; a guest that tries to change it changes nothing."""
    given = {"order": "o-7", "amount": 30, "lines": [{"sku": "a", "qty": 2}], "note": None}
    sloppy = """
        input.amount = 1e9; input.lines.push({sku: "x"}); input.lines[0].qty = 99;
        delete input.order; input.extra = true;
        return {input, frozen: [input, input.lines, input.lines[0]].every(Object.isFrozen)};
    """
    r = runner.run(sloppy, input=given)
    assert r.status == "failed" and r.error.name == "TypeError", r.value  # push() throws
    r = runner.run(sloppy.replace('input.lines.push({sku: "x"}); ', ""), input=given)
    assert r.status == "completed", r.error
    assert r.value == {"input": given, "frozen": True}
    strict = """"use strict";
        const tries = [() => { input.amount = 0; }, () => { input.lines[0].qty = 0; },
                       () => { input = {}; }, () => { Object.defineProperty(input, "x", {}); }];
        return tries.map((t) => { try { t(); return "changed"; } catch (e) { return e.name; } });
    """
    r = runner.run(strict, input=given)
    assert r.value == ["TypeError"] * 4, r.error
    assert runner.run("input = 5; return input", input=given).error.name == "TypeError"
    assert runner.run("return input", input=[1, "two"]).value == [1, "two"]
    assert runner.run("return input", input="text").value == "text"
    # TypeScript, and the source's lines keep their numbers
    r = runner.run("const n: number = input.amount;\nthrow new Error(String(n));", lang="ts",
                   input=given)
    assert r.error.message == "30" and ".js:2:" in r.error.stack, r.error.stack
    # without input= there is no such global, and a guest may declare its own
    assert runner.run("return typeof input").value == "undefined"
    assert runner.run("const input = 3; return input").value == 3


def test_input_must_be_json(runner):
    for bad in (float("nan"), {"f": print}, {1j}):
        with pytest.raises(airlock.ConfigError, match="input is not a JSON value"):
            runner.run("return input", input=bad)


def test_input_in_start_arun_and_resume(runner):
    async def ask(q):
        ctx = airlock.call_context()
        if ctx.resolution is None:
            airlock.interrupt({"q": q})
        return ctx.resolution

    src = "return [input.id, await p.ask(input.id)]"
    assert runner.start("return input.id", input={"id": "s"}).result(timeout=HANG).value == "s"

    async def main():
        r = await runner.arun(src, host={"p.ask": ask}, input={"id": "a"})
        assert r.status == "interrupted", r.error
        resolutions = {r.interruptions[0].id: "yes"}
        # the continuation is bound to the source, which holds the input: another input is
        # another run, refused before any host call
        other = await runner.arun(src, host={"p.ask": ask}, input={"id": "b"},
                                  resume=r.continuation, resolutions=resolutions)
        assert other.status == "failed" and other.error.code == "PROTOCOL_ERROR", other.error
        return await runner.arun(src, host={"p.ask": ask}, input={"id": "a"},
                                 resume=r.continuation, resolutions=resolutions)
    assert asyncio.run(main()).value == ["a", "yes"]
