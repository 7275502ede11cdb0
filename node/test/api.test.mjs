// api.test.mjs - @airlock/run on its own: what airlock adds to `run`'s interface (the jail,
// limits `run` has not, console and stats, TypeScript), what the addon must get right (host
// functions on Node's event loop, Node never blocked, a hostile guest never reaching the
// process) and the continuation forms. `run`'s interface itself is compat.test.mjs's.
//
// The package folder comes from $AIRLOCK_RUN_PKG (build/npm/airlock-run).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const pkg = process.env.AIRLOCK_RUN_PKG;
assert.ok(pkg, 'AIRLOCK_RUN_PKG names the built package folder');
const {
    createRunner, createSignedContinuationCodec, createStoredContinuationCodec,
    getHostFunctionContext, run, RunAbortedError, RunBridgeLimitError, RunConcurrencyError,
    RunError, RunProtocolError, RunTimeoutError, setMaxWorkers,
} = await import(pathToFileURL(path.join(pkg, 'dist', 'index.js')).href);

const SECRET = 'api-test-continuation-secret-0123456789';

test('a run completes in a jailed worker, with console and stats on the result', async () => {
    const r = await run({
        source: 'console.log("hello", 1); console.warn("careful"); return await t.add(2, 3);',
        hostFunctions: { t: { add: (a, b) => a + b } },
    });
    assert.equal(r.status, 'completed');
    assert.equal(r.value, 5);
    assert.deepEqual(r.console, [{ level: 'log', text: 'hello 1' },
        { level: 'warn', text: 'careful' }]);
    assert.equal(r.stats.jailed, true, 'the worker runs under its seccomp filter');
    assert.equal(r.stats.hostCalls, 1);
    assert.match(r.stats.runId, /^[0-9a-f]{32}$/);
});

test('the guest has nothing of Node: no process, require, fetch or timers', async () => {
    const r = await run({
        source: 'return [typeof process, typeof require, typeof fetch, typeof setTimeout];',
    });
    assert.deepEqual(r.value, ['undefined', 'undefined', 'undefined', 'undefined']);
});

test('host functions run on Node\'s event loop and Node is never blocked by a run', async () => {
    // A guest that spins until it is aborted: if Node's thread waited for the run, the timer
    // below could not fire before the run ended, and the run ends only by the abort after it.
    const ac = new AbortController();
    let pinged = false;
    let settled = false;
    const running = run({
        source: 'await t.ping(); while (true) {}',
        hostFunctions: { t: { ping: () => { pinged = true; } } },
        abortSignal: ac.signal,
        limits: { timeoutMs: 600_000 },
    }).catch(e => e).finally(() => { settled = true; });
    await new Promise(resolve => setTimeout(resolve, 20));
    assert.equal(settled, false, 'Node\'s timers fire while the guest spins');
    while (!pinged) { // the host function ran on this loop too
        await new Promise(resolve => setTimeout(resolve, 10));
    }
    ac.abort();
    const err = await running;
    assert.ok(err instanceof RunAbortedError, `${err}`);
    assert.equal(err.code, 'RUN_ABORTED');
});

test('many runs at once each get their own answers (async host functions, out of order)',
    async () => {
        const delay = ms => new Promise(resolve => setTimeout(resolve, ms));
        const hostFunctions = {
            t: { echo: async (v, ms) => { await delay(ms); return v; } },
        };
        const runs = [];
        for (let i = 0; i < 12; i++) {
            runs.push(run({
                source: `const xs = await Promise.all([t.echo(${i}, 30), t.echo(${i * 10}, 1),
                    t.echo(${i * 100}, 15)]); return xs;`,
                hostFunctions,
            }));
        }
        const results = await Promise.all(runs);
        results.forEach((r, i) => assert.deepEqual(r.value, [i, i * 10, i * 100]));
    });

test('a failing host function: the guest sees "Host function failed.", the caller the cause',
    async () => {
        const secret = new Error('db password in /etc/app.conf');
        const hostFunctions = { t: { boom: () => { throw secret; } } };
        const caught = await run({
            source: 'try { await t.boom(); } catch (e) { return e.message; }',
            hostFunctions,
        });
        assert.equal(caught.value, 'Host function failed.');
        const err = await run({ source: 'await t.boom();', hostFunctions }).catch(e => e);
        assert.ok(RunError.isInstance(err));
        assert.equal(err.code, 'RUN_HOST_FUNCTION_ERROR');
        assert.equal(err.message, 'Host function failed.');
        assert.equal(err.cause, secret, 'the host keeps the original error');

        // A RunError is the host's own report: the guest reads its message, the caller gets it.
        const own = new RunError('quota exceeded', 'APP_QUOTA', { left: 0 });
        const report = { t: { quota: () => { throw own; } } };
        const read = await run({
            source: 'try { await t.quota(); } catch (e) { return e.message; }',
            hostFunctions: report,
        });
        assert.equal(read.value, 'quota exceeded');
        const failed = await run({ source: 'await t.quota();', hostFunctions: report })
            .catch(e => e);
        assert.ok(RunError.isInstance(failed));
        assert.deepEqual([failed.code, failed.message, failed.details, failed.cause],
            ['APP_QUOTA', 'quota exceeded', { left: 0 }, own]);
    });

test('airlock limits: cpuTimeoutMs ends a spinning guest, memory and host calls are capped',
    async () => {
        const cpu = await run({
            source: 'while (true) {}',
            limits: { cpuTimeoutMs: 200, timeoutMs: 60_000 },
        }).catch(e => e);
        assert.ok(cpu instanceof RunTimeoutError, `${cpu}`);
        assert.equal(cpu.airlockCode, 'CPU_LIMIT');

        const mem = await run({
            source: 'const a = []; while (true) a.push(new Array(100000).fill(1));',
            limits: { memoryLimitBytes: 16 * 1024 * 1024 },
        }).catch(e => e);
        assert.ok(RunError.isInstance(mem), `${mem}`);
        assert.equal(mem.airlockCode, 'MEMORY_LIMIT');

        const calls = await run({
            source: 'for (let i = 0; i < 10; i++) await t.f();',
            hostFunctions: { t: { f: () => 1 } },
            limits: { maxBridgeRequests: 3 },
        }).catch(e => e);
        assert.ok(calls instanceof RunBridgeLimitError, `${calls}`);

        // The process survived all of it and runs on.
        assert.equal((await run({ source: 'return 1 + 1' })).value, 2);
    });

test('TypeScript by default, plain JavaScript with lang: "js"', async () => {
    const source = 'const n: number = 2; return n * 21;';
    assert.equal((await run({ source })).value, 42);
    const err = await run({ source, lang: 'js' }).catch(e => e);
    assert.ok(RunError.isInstance(err));
    assert.equal(err.code, 'RUN_USER_SOURCE_ERROR');
});

test('interrupt and resume: finished calls are not repeated, the context carries the resume',
    async () => {
        const runner = createRunner({ continuationSecret: SECRET });
        const seen = [];
        const ids = [];
        const hostFunctions = {
            shop: {
                order: id => { seen.push(`order ${id}`); return { id, amount: 42 }; },
                refund: order => {
                    const { interrupt, resume, logicalRunId } = getHostFunctionContext();
                    ids.push(logicalRunId);
                    if (!resume) {
                        interrupt({ ask: `refund ${order.amount}?` });
                    }
                    seen.push(`refund ${resume.resolution}`);
                    return resume.resolution === 'yes' ? 'refunded' : 'kept';
                },
            },
        };
        const source = 'const o = await shop.order("o-1"); return await shop.refund(o);';
        const first = await runner.run({ source, hostFunctions });
        assert.equal(first.status, 'interrupted');
        assert.equal(typeof first.continuation, 'string');
        assert.deepEqual(first.interruptions, [{
            id: 'interrupt-2', hostFunctionName: 'shop.refund',
            arguments: [{ id: 'o-1', amount: 42 }], payload: { ask: 'refund 42?' },
        }]);
        const second = await runner.run({
            source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: first.interruptions[0].id, value: 'yes' }],
        });
        assert.equal(second.status, 'completed');
        assert.equal(second.value, 'refunded');
        assert.deepEqual(seen, ['order o-1', 'refund yes'], 'shop.order ran once');
        assert.equal(ids[0], ids[1], 'logicalRunId is stable across the resume');
        const unknown = await runner.run({
            source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: 'interrupt-1', value: 'yes' }],
        }).catch(e => e);
        assert.ok(unknown instanceof RunProtocolError, `${unknown}`);
        assert.equal(unknown.message,
            'A resolution does not match exactly one pending interruption.');
    });

test('a continuation cannot be altered, moved to another context or replayed elsewhere',
    async () => {
        const runner = createRunner({ continuationSecret: SECRET });
        const hostFunctions = { t: { ask: () => getHostFunctionContext().interrupt('?') } };
        const source = 'return await t.ask();';
        const first = await runner.run({ source, hostFunctions, continuationContext: { tenant: 'a' } });
        const resolutions = [{ interruptionId: first.interruptions[0].id, value: 1 }];
        const tamper = async (continuation, extra = {}) => runner.run({
            source, hostFunctions, continuation, resolutions,
            continuationContext: { tenant: 'a' }, ...extra,
        }).catch(e => e);
        const token = first.continuation;
        const flipped = token.slice(0, -5) + (token.at(-5) === 'A' ? 'B' : 'A') + token.slice(-4);
        const otherId = 'f'.repeat(32) + token.slice(32);
        for (const err of [
            await tamper(flipped),
            await tamper(otherId),
            await tamper(token, { continuationContext: { tenant: 'b' } }),
            await tamper(token, { source: 'return await t.ask() ' }),
            await createRunner({ continuationSecret: `${SECRET}-other` }).run({
                source, hostFunctions, continuation: token, resolutions,
                continuationContext: { tenant: 'a' },
            }).catch(e => e),
        ]) {
            assert.ok(err instanceof RunProtocolError, `${err}`);
            assert.equal(err.code, 'RUN_PROTOCOL_ERROR');
        }
    });

test('key rotation: a signed codec verifies tokens of its older secrets', async () => {
    const hostFunctions = { t: { ask: () => getHostFunctionContext().interrupt('?') } };
    const source = 'return await t.ask();';
    const old = createRunner({
        continuationCodec: createSignedContinuationCodec({ secret: SECRET }),
    });
    const first = await old.run({ source, hostFunctions });
    const rotated = createRunner({
        continuationCodec: createSignedContinuationCodec({
            secret: `${SECRET}-new`, verificationSecrets: [SECRET],
        }),
    });
    const hostFunctions2 = {
        t: { ask: () => getHostFunctionContext().resume.resolution },
    };
    const r = await rotated.run({
        source, hostFunctions: hostFunctions2, continuation: first.continuation,
        resolutions: [{ interruptionId: first.interruptions[0].id, value: 'ok' }],
    });
    assert.equal(r.value, 'ok');
});

test('a stored continuation resumes once; its key is all the caller holds', async () => {
    const map = new Map();
    const storage = {
        set: (k, v) => { map.set(k, { v, claim: null }); },
        acquire: (k, claim) => {
            const e = map.get(k);
            if (!e || e.claim) {
                return undefined;
            }
            e.claim = claim;
            return e.v;
        },
        consume: (k, claim) => { if (map.get(k)?.claim === claim) map.delete(k); },
        release: (k, claim) => { const e = map.get(k); if (e?.claim === claim) e.claim = null; },
    };
    const runner = createRunner({ continuationCodec: createStoredContinuationCodec({ storage }) });
    const hostFunctions = {
        t: {
            ask: () => {
                const { interrupt, resume } = getHostFunctionContext();
                return resume ? resume.resolution : interrupt('?');
            },
        },
    };
    const source = 'return await t.ask();';
    const first = await runner.run({ source, hostFunctions });
    assert.match(first.continuation, /^[A-Za-z0-9_-]{32}$/);
    const resume = () => runner.run({
        source, hostFunctions, continuation: first.continuation,
        resolutions: [{ interruptionId: first.interruptions[0].id, value: 7 }],
    });
    assert.equal((await resume()).value, 7);
    const again = await resume().catch(e => e);
    assert.ok(again instanceof RunProtocolError, `${again}`);
    assert.equal(map.size, 0);
});

test('aborting a run ends it and aborts its host functions\' signals', async () => {
    const ac = new AbortController();
    let hostSignal;
    const p = run({
        source: 'await t.wait();',
        abortSignal: ac.signal,
        hostFunctions: {
            t: {
                wait: () => {
                    hostSignal = getHostFunctionContext().abortSignal;
                    ac.abort();
                    return new Promise(() => {});
                },
            },
        },
    });
    const err = await p.catch(e => e);
    assert.ok(err instanceof RunAbortedError, `${err}`);
    assert.equal(hostSignal.aborted, true);
});

test('setMaxWorkers caps runs at once across runners and never queues', async () => {
    setMaxWorkers(1);
    try {
        let release;
        const gate = new Promise(resolve => { release = resolve; });
        const first = run({ source: 'return await t.wait();', hostFunctions: { t: { wait: () => gate } } });
        const second = await createRunner().run({ source: 'return 1' }).catch(e => e);
        assert.ok(second instanceof RunConcurrencyError, `${second}`);
        assert.equal(second.code, 'RUN_CONCURRENCY_LIMIT');
        release(3);
        assert.equal((await first).value, 3);
        assert.equal((await run({ source: 'return 2' })).value, 2);
    } finally {
        setMaxWorkers();
    }
});

test('getHostFunctionContext throws outside a host call and after the call is answered',
    async () => {
        assert.throws(() => getHostFunctionContext());
        let later;
        await run({
            source: 'await t.f();',
            hostFunctions: {
                t: {
                    f: () => {
                        later = new Promise(resolve => setTimeout(() => {
                            try {
                                getHostFunctionContext();
                                resolve('allowed');
                            } catch {
                                resolve('refused');
                            }
                        }, 20));
                    },
                },
            },
        });
        assert.equal(await later, 'refused');
    });

test('modules: a loader serves static and dynamic imports, TypeScript by its name', async () => {
    const files = {
        '/lib/math.ts': 'export const twice = (n: number): number => n * 2;',
        '/lib/name.js': 'export default "airlock";',
    };
    const moduleLoader = {
        identity: 'test-v1',
        normalize: (spec, importer) => new URL(spec, `file://${importer === '' ? '/' : importer}`)
            .pathname,
        load: spec => {
            if (!(spec in files)) {
                throw new Error(`no ${spec}`);
            }
            return files[spec];
        },
    };
    const r = await run({
        source: `const { twice } = await import('/lib/math.ts');
            const name = (await import('/lib/name.js')).default;
            return name + twice(21);`,
        sourceType: 'function-body',
        moduleLoader,
    });
    assert.equal(r.value, 'airlock42');
    const missing = await run({
        source: 'await import("/nope.js");', sourceType: 'function-body', moduleLoader,
    }).catch(e => e);
    assert.ok(RunError.isInstance(missing));
    assert.doesNotMatch(missing.message, /no \/nope/, 'the loader\'s own message stays here');
});
