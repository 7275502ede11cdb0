// hostile.test.mjs - @airlock/run against a hostile caller, host function and guest: what must
// never happen whatever a host function throws or returns, whatever limits or names it is given,
// however a continuation is forged and whenever a run is aborted or its process dies.
//
// - the Node process never crashes and never hangs: every run settles with a value or a RunError
//   (or a TypeError for bad input), none waits for its timeout because an answer was lost, and
//   the process (or a worker thread) that used the package ends cleanly;
// - no airlock-worker outlives the process that started it, and none is left per run behind;
// - a continuation resumes only the interruptions it holds, in the scope it was made for, once
//   for a stored key, never after the caller aborted;
// - limits and host-function names that libairlock refuses are refused as docs/node.md says.
//
// Whatever may take a process down runs in a child node (`child`), with Node-API's strict policy
// for exceptions thrown into its callbacks (Node deprecates the lax one, DEP0168): with it, an
// exception lost in the addon's thread-safe callback ends the child at once instead of leaving
// its call unanswered until the run's timeout.
//
// The package folder comes from $AIRLOCK_RUN_PKG (build/npm/airlock-run).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const pkg = process.env.AIRLOCK_RUN_PKG;
assert.ok(pkg, 'AIRLOCK_RUN_PKG names the built package folder');
const entry = pathToFileURL(path.join(pkg, 'dist', 'index.js')).href;
const {
    createRunner, createStoredContinuationCodec, getHostFunctionContext, run, RunAbortedError,
    RunConcurrencyError, RunError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
} = await import(entry);

const SECRET = 'hostile-test-continuation-secret-0123456789';
const LONG = 120_000; // a timeout no run here reaches unless an answer was lost
const MiB = 1024 * 1024;

/* ---------------------------------------------------------------- helpers */

// What every child starts with; its line `RESULT <json>` (the last one) is what it found.
const CHILD_PRELUDE = `
const ENTRY = ${JSON.stringify(entry)};
const airlock = await import(ENTRY);
const { run, createRunner, getHostFunctionContext, RunError } = airlock;
const outcome = async p => {
    try {
        const r = await p;
        return { status: r.status, value: typeof r.value === 'string' ? r.value.slice(0, 200) : r.value };
    } catch (e) {
        return { error: e?.constructor?.name, code: e?.code, message: String(e?.message).slice(0, 200) };
    }
};
const report = x => console.log('RESULT ' + JSON.stringify(x));
const fs = await import('node:fs');
function descendants(pid) {
    const out = [];
    for (const d of fs.readdirSync('/proc')) {
        if (!/^[0-9]+$/.test(d)) continue;
        try {
            const st = fs.readFileSync('/proc/' + d + '/stat', 'utf8');
            if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === pid) {
                out.push(Number(d), ...descendants(Number(d)));
            }
        } catch {}
    }
    return out;
}
`;

/** Runs `body` (an ES module's code after CHILD_PRELUDE) in a child node. */
function child(body, { flags = [], env = {} } = {}) {
    return new Promise(resolve => {
        const p = spawn(process.execPath, ['--force-node-api-uncaught-exceptions-policy=true',
            ...flags, '--input-type=module', '-e', CHILD_PRELUDE + body],
        { env: { ...process.env, RUN_CONTINUATION_SECRET: SECRET, ...env },
            stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        p.stdout.on('data', d => { out += d; });
        p.stderr.on('data', d => { err += d; });
        p.on('close', (code, signal) => {
            const line = out.split('\n').reverse().find(l => l.startsWith('RESULT '));
            resolve({ code, signal, out, err, result: line ? JSON.parse(line.slice(7)) : undefined });
        });
    });
}

function assertSurvived(c) {
    assert.equal(c.signal, null, `the child was killed by ${c.signal}: ${c.err}`);
    assert.equal(c.code, 0, `the child crashed: ${c.err.split('\n').slice(0, 12).join('\n')}`);
    assert.ok(c.result !== undefined, `the child reported nothing: ${c.out}\n${c.err}`);
    assert.doesNotMatch(c.err, /Uncaught N-API callback exception/);
}

const procState = pid => {
    try {
        const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        return { comm: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')),
            state: st.slice(st.lastIndexOf(')') + 2)[0] };
    } catch {
        return undefined;
    }
};
const alive = pid => { const s = procState(pid); return s !== undefined && s.state !== 'Z'; };
const delay = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Polls until `pids` are all gone or `ms` passed; returns those still alive. */
async function waitGone(pids, ms) {
    const end = Date.now() + ms;
    let left = pids.filter(alive);
    while (left.length > 0 && Date.now() < end) {
        await delay(100);
        left = left.filter(alive);
    }
    return left;
}

/** Ends workers a failing test left running (ours only: recorded by pid, checked by name). */
function killLeftovers(pids) {
    for (const pid of pids) {
        if (alive(pid) && procState(pid)?.comm === 'airlock-worker') {
            try {
                process.kill(pid, 'SIGKILL');
            } catch { /* gone meanwhile */ }
        }
    }
}

const catching = p => p.then(r => r, e => e);

/* ---------------------------------------------------------------- 1. the process survives */

// glibc fills freed memory when asked to (and with its per-thread cache off, which it does not
// fill): a read of freed memory then finds garbage every time instead of now and then.
const PERTURBED = { GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0', MALLOC_PERTURB_: '85' };

test('a process that ran a run ends cleanly: no freed runner is walked at exit', async () => {
    const c = await child(`
        report(await outcome(run({ source: 'return 1' })));
        await outcome(createRunner({ continuationSecret: 'x'.repeat(40) }).run({ source: 'return 2' }));
        // no process.exit: Node tears its environment down, the addon's finalizers run
    `, { env: PERTURBED });
    assertSurvived(c);
});

test('a worker thread that used the package ends without harming the process', async () => {
    const c = await child(`
        const { Worker } = await import('node:worker_threads');
        const w = new Worker(\`
            const { run } = await import(\${JSON.stringify(ENTRY)});
            await run({ source: 'return 1' });\`, { eval: true });
        const code = await new Promise(resolve => w.on('exit', resolve));
        // the main thread goes on after the worker's environment is gone
        report({ code, after: (await outcome(run({ source: 'return 3' }))).value });
        process.exit(0);
    `, { env: PERTURBED });
    assertSurvived(c);
    assert.deepEqual(c.result, { code: 0, after: 3 });
});

test('a host function that never settles: the run still times out, the call\'s signal aborts, ' +
    'and nothing keeps the process alive afterwards', async () => {
    const c = await child(`
        let signal;
        const r = await outcome(run({
            source: 'await t.never();',
            hostFunctions: { t: { never: () => {
                signal = getHostFunctionContext().abortSignal;
                return new Promise(() => {});
            } } },
            limits: { timeoutMs: 500 },
        }));
        report({ ...r, aborted: signal.aborted });
        // no process.exit: the child must end by itself, its loop empty
    `);
    assertSurvived(c);
    assert.deepEqual(c.result, { error: 'RunTimeoutError', code: 'RUN_TIMEOUT',
        message: 'JavaScript runtime execution timed out after 500ms.', aborted: true });
});

test('answering after the run ended (value, throw, interrupt) changes nothing and harms nothing',
    async () => {
        let late;
        const lateDone = new Promise(resolve => { late = resolve; });
        const err = await catching(run({
            source: 'await Promise.all([t.value(), t.fail(), t.ask()]);',
            hostFunctions: {
                t: {
                    value: () => delay(800).then(() => 1),
                    fail: () => delay(800).then(() => { throw new Error('late'); }),
                    ask: () => {
                        const { interrupt } = getHostFunctionContext();
                        return delay(800).then(() => {
                            try {
                                interrupt('late');
                            } finally {
                                late();
                            }
                        });
                    },
                },
            },
            limits: { timeoutMs: 200 },
        }));
        assert.ok(err instanceof RunTimeoutError, `${err}`);
        await lateDone;
        await delay(50);
        assert.equal((await run({ source: 'return 40 + 2' })).value, 42);
    });

// What the guest reads when a host function throws something that is no Error, or a Proxy.
const THROWS = {
    'null': '() => { throw null; }',
    'undefined': '() => { throw undefined; }',
    'an object whose message getter throws': '() => { throw { get message() { throw new Error("m"); } }; }',
    'an Error subclass named RunError': '() => { class RunError extends Error {} ; const e = new RunError("db at 10.0.0.5"); e.name = "RunError"; throw e; }',
    'a Proxy whose traps throw': '() => { throw new Proxy({}, { get() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); } }); }',
    'a revoked Proxy': '() => { const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy; }',
    'a Proxy, asynchronously': 'async () => { throw new Proxy({}, { get() { throw new Error("trap"); } }); }',
    'a revoked Proxy, asynchronously': 'async () => { const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy; }',
};
for (const [what, fn] of Object.entries(THROWS)) {
    test(`a host function throwing ${what}: the guest sees "Host function failed."`, async () => {
        const c = await child(`report(await outcome(run({
            source: 'try { await t.f(); return "no throw"; } catch (e) { return "guest saw: " + e.message; }',
            hostFunctions: { t: { f: ${fn} } },
            limits: { timeoutMs: ${LONG} },
        })));`);
        assertSurvived(c);
        assert.deepEqual(c.result, { status: 'completed', value: 'guest saw: Host function failed.' });
    });
}

// An object carrying RunError's registry symbol is a RunError by RunError.isInstance: its message
// reaches the guest. The host threw it, so that is the host's report (as for a real RunError) -
// but whatever it is made of must not take the process down or lose the call.
const FAKE = 'Symbol.for("airlock.run.RunError")';
for (const [what, fn] of Object.entries({
    'with a string message': `() => { throw { message: "quota", [${FAKE}]: true }; }`,
    'with a message that is no string': `() => { throw { message: { a: 1 }, [${FAKE}]: true }; }`,
    'with a message getter that throws': `() => { throw { get message() { throw new Error("m"); }, [${FAKE}]: true }; }`,
    'with a message that is no string, asynchronously': `async () => { throw { message: 42, [${FAKE}]: true }; }`,
    'with a message getter that throws, asynchronously': `async () => { throw { get message() { throw new Error("m"); }, [${FAKE}]: true }; }`,
})) {
    test(`a host function throwing a fake RunError ${what}: the run goes on`, async () => {
        const c = await child(`report(await outcome(run({
            source: 'try { await t.f(); return "no throw"; } catch (e) { return "guest saw: " + e.message; }',
            hostFunctions: { t: { f: ${fn} } },
            limits: { timeoutMs: ${LONG} },
        })));`);
        assertSurvived(c);
        assert.equal(c.result.status, 'completed', JSON.stringify(c.result));
        assert.match(c.result.value, /^guest saw: /);
    });
}

// Answers whose encoding throws, or that are no answer at all: the run fails with
// RUN_SERIALIZATION_ERROR, or the guest sees the call fail (as `run`'s guest does: "Host
// function failed." or "Host function "t.f" output is not serializable: ..."); never a lost call.
const RETURNS = {
    'a Proxy whose traps throw': '() => new Proxy({}, { get() { throw new Error("trap"); } })',
    'a revoked Proxy': '() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; }',
    'an object whose then getter throws': '() => ({ get then() { throw new Error("then"); } })',
    'an object whose getter throws null': '() => ({ get x() { throw null; } })',
    'an object whose getter throws null, asynchronously': 'async () => ({ get x() { throw null; } })',
    'an object whose getter throws a Proxy, asynchronously': 'async () => ({ get x() { throw new Proxy({}, { get() { throw new Error("trap"); } }); } })',
    'an interruption payload whose getter throws null': '() => getHostFunctionContext().interrupt({ get x() { throw null; } })',
};
for (const [what, fn] of Object.entries(RETURNS)) {
    test(`a host function returning ${what}: a clean failure, never a lost call`, async () => {
        const c = await child(`report(await outcome(run({
            source: 'try { return await t.f(); } catch (e) { return "guest saw: " + e.message; }',
            hostFunctions: { t: { f: ${fn} } },
            limits: { timeoutMs: ${LONG} },
        })));`);
        assertSurvived(c);
        assert.ok(c.result.code === 'RUN_SERIALIZATION_ERROR' ||
            c.result.value === 'guest saw: Host function failed.' ||
            /^guest saw: Host function "t\.f" output is not serializable/.test(c.result.value),
        JSON.stringify(c.result));
    });
}

test('a host answer nested 100,000 levels deep fails the run cleanly', async () => {
        const err = await catching(run({
            source: 'return await t.f();',
            hostFunctions: { t: { f: () => { let v = []; for (let i = 0; i < 100_000; i++) v = [v]; return v; } } },
        }));
        assert.ok(RunError.isInstance(err), `${err}`);
        // too deep for the worker's decoder: the guest's call fails, uncaught it is the guest's
        assert.ok(['RUN_SERIALIZATION_ERROR', 'RUN_USER_SOURCE_ERROR'].includes(err.code),
            `${err.code}: ${err.message}`);
        // the guest's own deep values are refused by the worker, also before they reach Node
        const deep = await catching(run({
            source: 'let v = []; for (let i = 0; i < 100000; i++) v = [v]; return await t.f(v);',
            hostFunctions: { t: { f: () => 'reached' } },
        }));
        // arguments that cannot cross are the guest's error, as in `run`
        assert.equal(deep.code, 'RUN_USER_SOURCE_ERROR');
        assert.equal(deep.name, 'TypeError');
    });

test('a huge BigInt crosses whole', async () => {
    const big = 10n ** 200_000n + 7n;
    const r = await run({ source: 'return (await t.f()) + 1n;', hostFunctions: { t: { f: () => big } } });
    assert.equal(r.value, big + 1n);
});

// Answers of more than 64 MiB (the most the addon takes): they are over every host-output limit,
// so the run must end as it does for 5 MiB - with `run`'s RUN_SERIALIZATION_ERROR "output
// exceeds the N byte size limit" - not with a lost call or an exception in the caller's process.
for (const [what, fn, expect] of [
    ['a string of 64 MiB', '() => "x".repeat(64 * 1024 * 1024 + 16)', 'RUN_SERIALIZATION_ERROR'],
    ['a string of 64 MiB, asynchronously', 'async () => "x".repeat(64 * 1024 * 1024 + 16)', 'RUN_SERIALIZATION_ERROR'],
    ['an interruption payload of 64 MiB', '() => getHostFunctionContext().interrupt("x".repeat(64 * 1024 * 1024 + 16))', 'RUN_SERIALIZATION_ERROR'],
    ['a RunError with a message of 64 MiB, asynchronously', 'async () => { throw new RunError("x".repeat(64 * 1024 * 1024 + 16)); }', undefined],
]) {
    test(`a host function answering ${what}: the run ends cleanly`, async () => {
        const c = await child(`report(await outcome(run({
            source: 'return await t.f();',
            hostFunctions: { t: { f: ${fn} } },
            limits: { timeoutMs: ${LONG} },
        })));`);
        assertSurvived(c);
        assert.notEqual(c.result.code, 'RUN_TIMEOUT', 'the answer was lost');
        if (expect) {
            assert.equal(c.result.code, expect, JSON.stringify(c.result));
        }
    });
}

test('a module loader answering 64 MiB of source: RUN_SOURCE_TOO_LARGE, as for 1 MiB', async () => {
    const c = await child(`
        const load = n => outcome(run({
            source: 'return (await import("/big.js")).default;',
            sourceType: 'function-body',
            moduleLoader: { identity: 'big', load: async () => '//' + 'x'.repeat(n) },
            limits: { timeoutMs: ${LONG} },
        }));
        report([await load(1024 * 1024), await load(64 * 1024 * 1024 + 16)]);
    `);
    assertSurvived(c);
    assert.equal(c.result[0].code, 'RUN_SOURCE_TOO_LARGE');
    assert.equal(c.result[1].code, 'RUN_SOURCE_TOO_LARGE', JSON.stringify(c.result[1]));
});

test('200 runs at once without setMaxWorkers: each completes or is refused at once', async () => {
    const runs = [];
    for (let i = 0; i < 200; i++) {
        runs.push(run({
            source: `await t.wait(); return ${i};`,
            hostFunctions: { t: { wait: () => delay(100) } },
        }));
    }
    const results = await Promise.allSettled(runs);
    results.forEach((r, i) => {
        if (r.status === 'fulfilled') {
            assert.equal(r.value.value, i);
        } else {
            assert.ok(r.reason instanceof RunConcurrencyError, `${r.reason}`);
        }
    });
    assert.equal((await run({ source: 'return 1' })).value, 1);
});

test('garbage collection while calls are in flight collects no handle still in use', async () => {
    const c = await child(`
        const timer = setInterval(() => gc(), 1);
        const runs = [];
        for (let i = 0; i < 30; i++) {
            runs.push(outcome(run({
                source: 'const a = await Promise.all([t.w(1), t.w(2), t.w(3)]); return a[0] + a[1] + a[2] + ' + i + ';',
                hostFunctions: { t: { w: async x => { gc(); await new Promise(r => setTimeout(r, 20)); gc(); return x; } } },
                limits: { timeoutMs: ${LONG} },
            })));
        }
        const results = await Promise.all(runs);
        clearInterval(timer);
        report(results.map(r => r.value ?? r.message));
    `, { flags: ['--expose-gc'] });
    assertSurvived(c);
    assert.deepEqual(c.result, Array.from({ length: 30 }, (_, i) => 6 + i));
});

// The process dies with runs in flight, spinning guests among them: none of its workers may
// stay behind (they would spin until their CPU limit, here ten minutes).
for (const how of ['process.exit()', 'an uncaught exception', 'SIGKILL']) {
    test(`no airlock-worker outlives its process ending by ${how}`, async () => {
        const end = {
            'process.exit()': 'process.exit(0);',
            'an uncaught exception': 'throw new Error("the application fails");',
            'SIGKILL': 'process.kill(process.pid, "SIGKILL");',
        }[how];
        const c = await child(`
            let started = 0;
            await new Promise(resolve => {
                for (let i = 0; i < 3; i++) {
                    run({
                        source: 'await t.started(); while (true) {}',
                        hostFunctions: { t: { started: () => { if (++started === 3) resolve(); } } },
                        limits: { timeoutMs: 600000 },
                    }).catch(() => {});
                }
            });
            console.log('PIDS ' + JSON.stringify(descendants(process.pid)));
            ${end}
        `);
        const line = c.out.split('\n').find(l => l.startsWith('PIDS '));
        assert.ok(line, `the child did not start its runs: ${c.err}`);
        const pids = JSON.parse(line.slice(5));
        assert.ok(pids.length >= 3, `workers found: ${pids}`);
        try {
            const left = await waitGone(pids, 15_000);
            assert.deepEqual(left.map(p => [p, procState(p)]), [],
                'airlock-worker processes still running after their process died');
        } finally {
            killLeftovers(pids);
        }
    });
}

test('the package in a worker thread and in the main thread at once; the worker terminated ' +
    'mid-run takes its workers with it and nothing else', async () => {
    const c = await child(`
        const { Worker } = await import('node:worker_threads');
        const before = new Set(descendants(process.pid));
        const w = new Worker(\`
            // a module, as the child's code (--input-type=module applies to it too)
            const { parentPort } = await import('node:worker_threads');
            const { run } = await import(\${JSON.stringify(ENTRY)});
            parentPort.postMessage('first ' + (await run({ source: 'return 6 * 7' })).value);
            run({ source: 'await t.ping(); while (true) {}',
                hostFunctions: { t: { ping: () => parentPort.postMessage('spinning') } },
                limits: { timeoutMs: 600000 } }).catch(() => {});\`, { eval: true });
        const messages = [];
        await new Promise(resolve => w.on('message', m => { messages.push(m); if (m === 'spinning') resolve(); }));
        const theirs = descendants(process.pid).filter(p => !before.has(p));
        const main = await outcome(run({ source: 'return await t.x();', hostFunctions: { t: { x: () => 'main' } } }));
        await w.terminate();
        const after = await outcome(run({ source: 'return await t.x();', hostFunctions: { t: { x: () => 'main again' } } }));
        let left = theirs;
        for (let i = 0; i < 150 && left.length; i++) {
            await new Promise(r => setTimeout(r, 100));
            left = left.filter(p => { try { return fs.readFileSync('/proc/' + p + '/stat', 'utf8').split(') ')[1][0] !== 'Z'; } catch { return false; } });
        }
        report({ messages, main: main.value, after: after.value, theirs: theirs.length, left });
        process.exit(0);
    `);
    assertSurvived(c);
    assert.deepEqual(c.result.messages, ['first 42', 'spinning']);
    assert.equal(c.result.main, 'main');
    assert.equal(c.result.after, 'main again');
    assert.ok(c.result.theirs >= 1);
    assert.deepEqual(c.result.left, [], 'the terminated thread\'s workers are gone');
});

test('runs with a new anonymous module loader each leave no runner, thread or worker behind',
    async () => {
        const c = await child(`
            const threads = () => fs.readdirSync('/proc/self/task').length;
            await run({ source: 'return 1' });
            const base = { children: descendants(process.pid).length, threads: threads() };
            for (let i = 0; i < 10; i++) {
                await run({
                    source: 'return (await import("/m.js")).default;',
                    sourceType: 'function-body',
                    moduleLoader: { load: () => 'export default ' + i },
                });
            }
            let now;
            for (let i = 0; i < 50; i++) { // whatever is freed when collected has its chance
                gc();
                await new Promise(r => setTimeout(r, 20));
                now = { children: descendants(process.pid).length, threads: threads() };
                if (now.children <= base.children + 2) break;
            }
            report({ base, now });
            process.exit(0);
        `, { flags: ['--expose-gc'] });
        assertSurvived(c);
        const { base, now } = c.result;
        assert.ok(now.children <= base.children + 2,
            `10 runs with anonymous loaders: ${base.children} -> ${now.children} child ` +
            `processes, ${base.threads} -> ${now.threads} threads`);
    });

/* ---------------------------------------------------------------- 2. the contract */

test('RunError.isInstance answers false, never throws, for a revoked Proxy', () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    assert.equal(RunError.isInstance(r.proxy), false);
});

test('a host RunError comes out of the run with its code and message, also a long one or one ' +
    'with a NUL in it', async () => {
        for (const message of ['q'.repeat(4096), 'q'.repeat(70_000), 'quota\u0000tenant b']) {
            const own = new RunError(message, 'APP_QUOTA');
            const err = await catching(run({
                source: 'await t.f();',
                hostFunctions: { t: { f: () => { throw own; } } },
            }));
            assert.ok(RunError.isInstance(err) && err.code === 'APP_QUOTA' &&
                err.message === message && err.cause === own,
            `message of ${message.length} characters: got ${err.code}`);
        }
    });

test('every RunError of a run carries its runId (abort, an answer that cannot cross)',
    async () => {
        const ac = new AbortController();
        const aborted = await catching(run({
            source: 'await t.w();',
            abortSignal: ac.signal,
            hostFunctions: { t: { w: () => { ac.abort(); return new Promise(() => {}); } } },
        }));
        assert.ok(aborted instanceof RunAbortedError, `${aborted}`);
        const unserializable = await catching(run({
            source: 'await t.w();',
            hostFunctions: { t: { w: () => () => 1 } },
        }));
        assert.equal(unserializable.code, 'RUN_SERIALIZATION_ERROR');
        for (const err of [aborted, unserializable]) {
            assert.match(String(err.runId), /^[0-9a-f]{32}$/, `${err.code}`);
        }
    });

function interrupting() {
    const calls = [];
    const hostFunctions = {
        t: {
            ask: x => {
                const { interrupt, resume } = getHostFunctionContext();
                calls.push(resume ? `resumed ${x} ${resume.interruptionId}` : `asked ${x}`);
                return resume ? resume.resolution : interrupt(x);
            },
        },
    };
    return { calls, hostFunctions, source: 'return await t.ask("a");' };
}

test('a resolution resolves only an interruption the continuation holds, named exactly',
    async () => {
        const runner = createRunner({ continuationSecret: SECRET });
        const { calls, hostFunctions, source } = interrupting();
        const first = await runner.run({ source, hostFunctions });
        assert.deepEqual(first.interruptions.map(i => i.id), ['interrupt-1']);
        calls.length = 0;
        const wrong = [];
        for (const ids of [['interrupt-0'], ['interrupt-01'], ['interrupt-2'], ['interrupt-1 '],
            ['interrupt-1', 'interrupt-1'], ['interrupt-4294967297'], ['interrupt-4294967296'],
            ['interrupt-9999999999']]) {
            const err = await catching(runner.run({
                source, hostFunctions, continuation: first.continuation,
                resolutions: ids.map(interruptionId => ({ interruptionId, value: ids.join() })),
            }));
            if (!(err instanceof RunProtocolError) ||
                err.message !== 'A resolution does not match exactly one pending interruption.') {
                wrong.push(`${ids}: ${err.status ? `${err.status} ${err.value}` : `${err.code} ${err.message}`}`);
            }
        }
        assert.deepEqual(wrong, [], 'resolutions taken for interrupt-1 or refused otherwise');
        assert.deepEqual(calls, [], 'no resolution reached the interrupted function');
    });

test('two continuations spliced, or one with another run id, are refused', async () => {
    const runner = createRunner({ continuationSecret: SECRET });
    const { calls, hostFunctions, source } = interrupting();
    const a = (await runner.run({ source, hostFunctions })).continuation;
    const b = (await runner.run({ source, hostFunctions })).continuation;
    calls.length = 0;
    const [idA, tokenA] = [a.slice(0, 32), a.slice(33)];
    const [idB, tokenB] = [b.slice(0, 32), b.slice(33)];
    for (const forged of [`${idA}.${tokenB}`, `${idB}.${tokenA}`, `${idA}.${tokenA}.${tokenB}`,
        `${idA.toUpperCase()}.${tokenA}`, `${idA}.`, `.${tokenA}`, tokenA]) {
        const err = await catching(runner.run({
            source, hostFunctions, continuation: forged,
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
        }));
        assert.ok(err instanceof RunProtocolError, `${forged.slice(0, 40)}: ${err?.status ?? err}`);
    }
    assert.deepEqual(calls, []);
});

test('a continuation made for one audience is refused by another, NUL or not', async () => {
    const { calls, hostFunctions, source } = interrupting();
    let a;
    try {
        a = createRunner({ continuationSecret: SECRET, continuationAudience: 'orders\u0000tenant-a' });
    } catch (e) {
        assert.ok(e instanceof TypeError, `${e}`); // refusing the NUL is as good
        return;
    }
    const first = await a.run({ source, hostFunctions });
    calls.length = 0;
    const wrong = [];
    for (const audience of ['orders\u0000tenant-b', 'orders', 'orders\u0000tenant-a ']) {
        const err = await catching((async () => createRunner({
            continuationSecret: SECRET, continuationAudience: audience,
        }).run({ source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }] }))());
        // refusing the NUL at createRunner is as good as refusing the token
        if (!(err instanceof RunProtocolError || err instanceof TypeError)) {
            wrong.push(`${JSON.stringify(audience)}: ${err.status ?? err}`);
        }
    }
    assert.deepEqual(wrong, [], 'resumed under another audience');
    assert.deepEqual(calls, [], 'the interrupted function ran under another audience');
});

function memoryStorage({ acquireDelayMs = 0, failConsume = false, failRelease = false } = {}) {
    const map = new Map();
    return {
        map,
        set: (k, v) => { map.set(k, { v, claim: null }); },
        acquire: async (k, claim) => {
            if (acquireDelayMs) {
                await delay(acquireDelayMs);
            }
            const e = map.get(k);
            if (!e || e.claim) {
                return undefined;
            }
            e.claim = claim;
            return e.v;
        },
        consume: async (k, claim) => {
            if (failConsume) {
                throw new Error('storage unavailable (consume)');
            }
            if (map.get(k)?.claim === claim) {
                map.delete(k);
            }
        },
        release: async (k, claim) => {
            if (failRelease) {
                throw new Error('storage unavailable (release)');
            }
            const e = map.get(k);
            if (e?.claim === claim) {
                e.claim = null;
            }
        },
    };
}

test('a stored key resumed twice at once runs the interrupted function once', async () => {
    const storage = memoryStorage({ acquireDelayMs: 20 });
    const runner = createRunner({ continuationCodec: createStoredContinuationCodec({ storage }) });
    const { calls, hostFunctions, source } = interrupting();
    const first = await runner.run({ source, hostFunctions });
    calls.length = 0;
    const both = await Promise.allSettled([0, 1].map(() => runner.run({
        source, hostFunctions, continuation: first.continuation,
        resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
    })));
    assert.deepEqual(calls, ['resumed a interrupt-1']);
    assert.equal(both.filter(r => r.status === 'fulfilled').length, 1);
    assert.ok(both.find(r => r.status === 'rejected').reason instanceof RunProtocolError);
    assert.equal(storage.map.size, 0);
});

test('a storage whose release fails, with a resume refused at its start: the caller gets an ' +
    'error and the process lives', async () => {
    const c = await child(`
        const storage = {
            map: new Map(),
            set(k, v) { this.map.set(k, v); },
            async acquire(k) { return this.map.get(k); },
            async consume(k) { this.map.delete(k); },
            async release() { throw new Error('storage unavailable (release)'); },
        };
        const runner = createRunner({ continuationCodec: airlock.createStoredContinuationCodec({ storage }) });
        const hostFunctions = { t: { ask: x => getHostFunctionContext().interrupt(x) } };
        const source = 'return await t.ask("a");';
        const first = await runner.run({ source, hostFunctions });
        const refused = await outcome(runner.run({
            source, continuation: first.continuation,
            hostFunctions: { ...hostFunctions, 'not a name': { f: () => 1 } },
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
        }));
        await new Promise(r => setTimeout(r, 200));
        report(refused);
    `);
    assertSurvived(c);
    assert.ok(c.result.error, JSON.stringify(c.result));
});

test('a storage whose consume fails: the resume does not go on as if the key were used',
    async () => {
        const storage = memoryStorage({ failConsume: true });
        const runner = createRunner({ continuationCodec: createStoredContinuationCodec({ storage }) });
        const { calls, hostFunctions, source } = interrupting();
        const first = await runner.run({ source, hostFunctions });
        calls.length = 0;
        const r = await catching(runner.run({
            source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
        }));
        // The key is still in the storage: once its claim lapses it resumes again. The caller
        // must learn that, before the interrupted function acts on the resolution.
        assert.equal(storage.map.size, 1);
        assert.ok(r instanceof Error, `the run ${r.status} with the key unconsumed`);
        assert.deepEqual(calls, []);
    });

/* ---------------------------------------------------------------- 3. limits and names */

const LIMITS = ['timeoutMs', 'cpuTimeoutMs', 'memoryLimitBytes', 'maxStackSizeBytes',
    'maxSourceBytes', 'maxResultBytes', 'maxConsoleOutputBytes', 'maxHostFunctionArgumentsBytes',
    'maxBindingArgumentsBytes', 'maxHostFunctionOutputBytes', 'maxBindingOutputBytes',
    'maxBridgeRequests', 'maxInFlightBridgeRequests', 'maxContinuationBytes'];

test('limits that are no positive integer of 32 bits are a TypeError naming limits.NAME, ' +
    'when a run of the runner starts, as in `run`', async () => {
    for (const name of LIMITS) {
        // null is no value, as in `run`: the default holds
        for (const value of [0, -0, -1, 1.5, '5', NaN, Infinity, 1n, 2_147_483_648]) {
            const runner = createRunner({ limits: { [name]: value } });
            for (const err of [await catching(runner.run({ source: 'return 1' })),
                await catching(run({ source: 'return 1', limits: { [name]: value } }))]) {
                assert.ok(err instanceof TypeError && err.message.startsWith(`limits.${name} `),
                    `${name}: ${String(value)}: ${err}`);
            }
        }
    }
    // above libairlock's ceiling (64 MiB of stack) is the ceiling; a key that is no limit is
    // ignored, as in `run`
    assert.equal((await run({ source: 'return 1', limits: { maxStackSizeBytes: 64 * MiB + 1 } }))
        .value, 1);
    assert.equal((await run({ source: 'return 1', limits: { timeout: 5 } })).value, 1);
    assert.equal((await run({ source: 'return 1', limits: { maxStackSizeBytes: 64 * MiB } })).value, 1);
});

test('each limit at 1 ends the run cleanly, or lets it complete', async () => {
    for (const name of LIMITS) {
        const out = await catching(run({
            source: 'console.log("hi"); return await t.f("a");',
            hostFunctions: { t: { f: x => `${x}b` } },
            limits: { [name]: 1 },
        }));
        assert.ok(out.status === 'completed' || RunError.isInstance(out), `${name}: ${out}`);
    }
});

test('a limit docs/node.md accepts (a positive integer up to 2,147,483,647) is applied, or ' +
    'refused with a TypeError naming it', async () => {
    const wrong = [];
    for (const name of LIMITS) {
        if (name === 'maxStackSizeBytes') {
            continue; // 64 MiB at most, said and checked
        }
        const out = await catching(run({
            source: 'return await t.f("a");',
            hostFunctions: { t: { f: x => `${x}b` } },
            limits: { [name]: 2_147_483_647 },
        }));
        if (!(out.status === 'completed' ||
            (out instanceof TypeError && out.message.startsWith(`limits.${name} `)))) {
            wrong.push(`${name}: ${out.constructor.name} ${out.code} ${out.message}`);
        }
    }
    assert.deepEqual(wrong, []);
});

test('a limits object or host functions whose getters throw: run() rejects, nothing escapes',
    async () => {
        const boom = new Error('getter');
        const limits = { get timeoutMs() { throw boom; } };
        assert.equal(await catching(createRunner({ limits }).run({ source: 'return 1' })), boom);
        assert.equal(await catching(run({ source: 'return 1', limits })), boom);
        const hostFunctions = { t: { get f() { throw boom; } } };
        assert.equal(await catching(run({ source: 'return 1', hostFunctions })), boom);
        const proxied = new Proxy({}, { ownKeys() { throw boom; } });
        assert.equal(await catching(run({ source: 'return 1', hostFunctions: proxied })), boom);
        assert.equal(await catching(run({ source: 'return 1', limits: proxied })), boom);
    });

test('host functions: only own enumerable string-named members are capabilities', async () => {
    const group = { visible: () => 'v' };
    Object.defineProperty(group, 'hidden', { value: () => 'h', enumerable: false });
    group[Symbol('sym')] = () => 's';
    Object.setPrototypeOf(group, { inherited: () => 'i' });
    const viaGetter = { get g() { return () => 'g'; } };
    const proxy = new Proxy({ p: () => 'p' }, {});
    const r = await run({
        source: 'return [Object.getOwnPropertyNames(t).sort(), await t.visible(), await u.g(), ' +
            'await w.p(), typeof t.hidden, typeof t.inherited];',
        hostFunctions: { t: group, u: viaGetter, w: proxy },
    });
    assert.deepEqual(r.value, [['visible'], 'v', 'g', 'p', 'undefined', 'undefined']);
});

test('host-function names that are no identifiers or shadow builtins: refused before a run, ' +
    'as a TypeError or a RunError', async () => {
    const names = [['__proto__', 'f'], ['t', '__proto__'], ['constructor', 'f'],
        ['t', 'constructor'], ['Math', 'f'], ['Object', 'f'], ['globalThis', 'f'],
        ['a b', 'f'], ['t', 'a.b'], ['', 'f'], ['t', ''], ['1x', 'f'], ['t', 'toString']];
    for (const [g, f] of names) {
        const group = {};
        Object.defineProperty(group, f, { value: () => 1, enumerable: true });
        const hostFunctions = {};
        Object.defineProperty(hostFunctions, g, { value: group, enumerable: true });
        let called = false;
        const err = await catching(run({ source: 'return 1', hostFunctions }).then(() => { called = true; }));
        assert.ok(!called && (err instanceof TypeError || RunError.isInstance(err)),
            `${JSON.stringify([g, f])}: ${err}`);
    }
});

test('a host-function name with a NUL is refused, not registered cut short', async () => {
    const err = await catching(run({
        source: 'return Object.getOwnPropertyNames(t);',
        hostFunctions: { t: { 'x\u0000y': () => 1 } },
    }));
    assert.ok(err instanceof TypeError || RunError.isInstance(err),
        `the guest got ${JSON.stringify(err.value)}`);
});

/* ---------------------------------------------------------------- 4. abort */

test('abort before the run: RunAbortedError, no host function called', async () => {
    let called = false;
    const err = await catching(run({
        source: 'await t.f();',
        abortSignal: AbortSignal.abort(),
        hostFunctions: { t: { f: () => { called = true; } } },
    }));
    assert.ok(err instanceof RunAbortedError, `${err}`);
    assert.equal(called, false);
});

test('abort while a custom codec decodes the continuation: the run never resumes', async () => {
    const codec = { encode: s => s, decode: async t => { await delay(300); return t; } };
    const runner = createRunner({ continuationCodec: codec });
    const { calls, hostFunctions, source } = interrupting();
    const first = await runner.run({ source, hostFunctions });
    calls.length = 0;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    const r = await catching(runner.run({
        source, hostFunctions, continuation: first.continuation, abortSignal: ac.signal,
        resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
    }));
    assert.ok(r instanceof RunAbortedError, `the aborted run ${r.status ?? r}`);
    assert.deepEqual(calls, [], 'the interrupted function acted on the resolution');
});

test('abort while the stored codec claims the key: the run never resumes, the key stays',
    async () => {
        const storage = memoryStorage({ acquireDelayMs: 300 });
        const runner = createRunner({ continuationCodec: createStoredContinuationCodec({ storage }) });
        const { calls, hostFunctions, source } = interrupting();
        const first = await runner.run({ source, hostFunctions });
        calls.length = 0;
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 20);
        const r = await catching(runner.run({
            source, hostFunctions, continuation: first.continuation, abortSignal: ac.signal,
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
        }));
        assert.ok(r instanceof RunAbortedError, `the aborted run ${r.status ?? r}`);
        assert.deepEqual(calls, []);
        assert.equal(storage.map.size, 1, 'the key is still there to resume');
        assert.equal(storage.map.values().next().value.claim, null, 'and its claim released');
    });

test('abort during a host call ends the run; abort after the end changes nothing', async () => {
    const ac = new AbortController();
    let signal;
    const err = await catching(run({
        source: 'await t.f();',
        abortSignal: ac.signal,
        hostFunctions: {
            t: {
                f: () => {
                    signal = getHostFunctionContext().abortSignal;
                    setTimeout(() => ac.abort(), 10);
                    return new Promise(() => {});
                },
            },
        },
    }));
    assert.ok(err instanceof RunAbortedError, `${err}`);
    assert.equal(signal.aborted, true);

    const after = new AbortController();
    const r = await run({ source: 'return await t.f();', abortSignal: after.signal,
        hostFunctions: { t: { f: () => 5 } } });
    after.abort();
    await delay(20);
    assert.equal(r.value, 5);
    assert.equal((await run({ source: 'return 6' })).value, 6);
});

test('the source limit is checked before anything starts', async () => {
    const err = await catching(run({ source: 'x'.repeat(300 * 1024) }));
    assert.ok(err instanceof RunSourceTooLargeError, `${err}`);
});
