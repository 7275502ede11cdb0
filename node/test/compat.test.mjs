// compat.test.mjs - what a program can observe of the npm package `run` 2.1.5, pinned so that
// `@airlock/run` is held to the same expectations: values across the boundary, host functions
// and their errors, guest errors, limits, abort, the worker cap, the host function context,
// interrupt and resume with every continuation codec, synchronous host functions, modules,
// console output.
//
// RUN_IMPL_DIR names the package directory under test (its package.json is `run` or
// `@airlock/run`); unset, the suite checks `run` itself in /tmp/runpeer/node_modules/run.
//   RUN_IMPL_DIR=build/npm/airlock-run node --test node/test/compat.test.mjs
// Continuation token formats differ by design: no test decodes a token; tokens are only handed
// back, altered, or handed to another runner. Nothing here measures time: a limit test trips
// the limit for certain (a busy loop, a promise that never settles) and checks the error only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

// run() reads RUN_CONTINUATION_SECRET; a secret inherited from the shell would hide the
// "signing is not configured" behaviour. The test that needs it sets it in a child process.
delete process.env.RUN_CONTINUATION_SECRET;

const IMPL_DIR = path.resolve(process.env.RUN_IMPL_DIR || '/tmp/runpeer/node_modules/run');

// The package's ESM entry: exports['.'] (import, then default, nested conditions allowed),
// else main.
function entryUrl(dir) {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if (pkg.name !== 'run' && pkg.name !== '@airlock/run') {
        throw new Error(`${dir}: package.json names ${pkg.name}, not run or @airlock/run`);
    }
    const pick = (target) => {
        if (typeof target === 'string') {
            return target;
        }
        if (target && typeof target === 'object') {
            return pick(target.import ?? target.default);
        }
        return undefined;
    };
    const exported = typeof pkg.exports === 'string' ? pkg.exports : pkg.exports?.['.'];
    const rel = pick(exported) ?? pkg.main ?? 'index.js';
    return pathToFileURL(path.join(dir, rel)).href;
}

const IMPL_URL = entryUrl(IMPL_DIR);
// Where @airlock/run differs from run on purpose or by its engine (docs/node.md, "What
// differs"), a test checks airlock's documented behaviour instead, marked AIRLOCK:
// - an error thrown into the guest carries its message only (no `code`, name Error);
// - memory, stack, console and host-argument limits end the run, the guest cannot catch them,
//   and so do arguments that cannot cross;
// - a group member that is no host function is no function (TypeError in the guest);
// - eval and Function exist and throw; QuickJS 2021-03-27's messages ('x' is not defined);
// - an ES module cannot use top-level await (its default export is awaited instead).
const AIRLOCK = JSON.parse(fs.readFileSync(path.join(IMPL_DIR, 'package.json'), 'utf8'))
    .name === '@airlock/run';
const R = await import(IMPL_URL);
const {
    RunAbortedError, RunBridgeLimitError, RunConcurrencyError, RunDetachedBridgeRequestError,
    RunError, RunHostFunctionError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
    createRunner, createSignedContinuationCodec, createStoredContinuationCodec,
    getHostFunctionContext, isRunInterruptedResult, run, setMaxWorkers,
} = R;

const SUBCLASSES = {
    RunAbortedError, RunBridgeLimitError, RunConcurrencyError, RunDetachedBridgeRequestError,
    RunHostFunctionError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
};
const SECRET = 'compat-suite-continuation-secret-0123456789';
const OTHER_SECRET = 'compat-suite-another-secret-abcdefghijklmnop';
// Generous: a loaded machine is slow, never wrong.
const T = { timeout: 120_000 };

// The rejection of a promise that must reject.
async function failure(promise) {
    try {
        await promise;
    } catch (error) {
        return error;
    }
    assert.fail('expected a rejection, the promise fulfilled');
}

// A RunError of exactly this subclass and code.
function assertRunError(error, Class, code) {
    assert.ok(error instanceof RunError, `a RunError, got ${error?.name}: ${error?.message}`);
    assert.ok(error instanceof Class, `a ${Class.name}, got ${error?.constructor?.name}`);
    assert.equal(error.code, code, error.message);
    assert.equal(RunError.isInstance(error), true);
}

// A RunError of the base class only (how run reports what the guest did).
function assertBaseRunError(error, code) {
    assertRunError(error, RunError, code);
    for (const [name, Class] of Object.entries(SUBCLASSES)) {
        assert.ok(!(error instanceof Class), `not a ${name}`);
    }
}

// A plain TypeError (configuration errors are not RunErrors).
function assertTypeError(error, message) {
    assert.ok(error instanceof TypeError, `a TypeError, got ${error?.name}: ${error?.message}`);
    assert.equal(RunError.isInstance(error), false);
    if (message instanceof RegExp) {
        assert.match(error.message, message);
    } else {
        assert.equal(error.message, message);
    }
}

// Guest code that reports what a caught error looks like from inside the sandbox.
const DESCRIBE_CAUGHT = `(e) => ({ isError: e instanceof Error, name: e.name,
    message: e.message, code: e.code })`;

function guestCatch(statement) {
    return `const describe = ${DESCRIBE_CAUGHT};
try { ${statement}; return 'no error'; } catch (e) { return describe(e); }`;
}

// A promise and the function that settles it: lets a test hold a host function open.
function gate() {
    let open;
    const opened = new Promise((resolve) => {
        open = resolve;
    });
    return { open, opened };
}

const NEVER = () => new Promise(() => {});

// A host function that interrupts on its first invocation and returns the resolution after.
function asking(log = []) {
    return (...args) => {
        const ctx = getHostFunctionContext();
        log.push({ args, resume: ctx.resume });
        if (ctx.resume === undefined) {
            ctx.interrupt({ asked: args[0] });
        }
        return ctx.resume.resolution;
    };
}

function resolveAll(result, value) {
    return result.interruptions.map((i) => ({ interruptionId: i.id, value }));
}

// Runs an ES module script in a fresh node with the implementation's URL in COMPAT_IMPL_URL.
function runChild(script, env = {}) {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
            env: { ...process.env, COMPAT_IMPL_URL: IMPL_URL, ...env },
            stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk) => {
            stdout += chunk;
        });
        child.stderr.on('data', (chunk) => {
            stderr += chunk;
        });
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
}

// The line the child printed as `RESULT <json>`, parsed; the other stdout lines.
function childResult(stdout) {
    const lines = stdout.split('\n');
    const line = lines.find((l) => l.startsWith('RESULT '));
    assert.ok(line, `the child printed a RESULT line; stdout: ${stdout}`);
    return { result: JSON.parse(line.slice('RESULT '.length)),
        rest: lines.filter((l) => !l.startsWith('RESULT ')).join('\n') };
}

describe('exports and error classes', () => {
    test('exports: the public API functions and RunError subclasses', T, () => {
        for (const name of ['run', 'createRunner', 'getHostFunctionContext',
            'isRunInterruptedResult', 'setMaxWorkers', 'createSignedContinuationCodec',
            'createStoredContinuationCodec']) {
            assert.equal(typeof R[name], 'function', name);
        }
        assert.equal(typeof RunError.isInstance, 'function');
        assert.ok(RunError.prototype instanceof Error);
        for (const [name, Class] of Object.entries(SUBCLASSES)) {
            assert.equal(typeof Class, 'function', name);
            assert.equal(Object.getPrototypeOf(Class), RunError, `${name} extends RunError`);
        }
    });

    test('RunError: name RunError, default code RUN_ERROR, explicit code and details', T, () => {
        const plain = new RunError('m');
        assert.ok(plain instanceof Error);
        assert.equal(plain.name, 'RunError');
        assert.equal(plain.message, 'm');
        assert.equal(plain.code, 'RUN_ERROR');
        assert.equal(plain.details, undefined);
        const full = new RunError('m2', 'MY_CODE', { d: 1 });
        assert.equal(full.code, 'MY_CODE');
        assert.deepEqual(full.details, { d: 1 });
    });

    test('RunError subclasses: fixed codes, names, messages and details', T, () => {
        const cases = [
            [new RunAbortedError(), 'RUN_ABORTED', 'JavaScript runtime execution was aborted.',
                undefined],
            [new RunTimeoutError(200), 'RUN_TIMEOUT',
                'JavaScript runtime execution timed out after 200ms.', { timeoutMs: 200 }],
            [new RunConcurrencyError(3), 'RUN_CONCURRENCY_LIMIT',
                'JavaScript runtime maxWorkers limit reached (3).', { maxWorkers: 3 }],
            [new RunSourceTooLargeError(10, 5), 'RUN_SOURCE_TOO_LARGE',
                'JavaScript runtime source exceeds the 5 byte size limit.',
                { bytes: 10, maxBytes: 5 }],
            [new RunBridgeLimitError('m', { d: 1 }), 'RUN_BRIDGE_LIMIT', 'm', { d: 1 }],
            [new RunDetachedBridgeRequestError('m', { d: 1 }), 'RUN_DETACHED_BRIDGE_REQUEST', 'm',
                { d: 1 }],
            [new RunProtocolError('m', { d: 1 }), 'RUN_PROTOCOL_ERROR', 'm', { d: 1 }],
            [new RunHostFunctionError('m', { d: 1 }), 'RUN_HOST_FUNCTION_ERROR', 'm', { d: 1 }],
        ];
        for (const [error, code, message, details] of cases) {
            assert.ok(error instanceof RunError);
            assert.equal(error.name, error.constructor.name);
            assert.equal(error.code, code);
            assert.equal(error.message, message);
            assert.deepEqual(error.details, details);
        }
    });

    test('RunError.isInstance: true for run errors, also from a second copy of the package', T,
        async () => {
            assert.equal(RunError.isInstance(new RunTimeoutError(5)), true);
            assert.equal(RunError.isInstance(new RunError('m')), true);
            assert.equal(RunError.isInstance(new Error('m')), false);
            assert.equal(RunError.isInstance({ name: 'RunError', code: 'RUN_TIMEOUT' }), false);
            assert.equal(RunError.isInstance(null), false);
            assert.equal(RunError.isInstance(undefined), false);
            assert.equal(RunError.isInstance('RUN_TIMEOUT'), false);
            const copyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'compat-copy-'));
            try {
                fs.cpSync(IMPL_DIR, copyDir, { recursive: true });
                const copy = await import(entryUrl(copyDir));
                assert.notEqual(copy.RunError, RunError, 'a second copy has its own classes');
                assert.equal(RunError.isInstance(new copy.RunTimeoutError(5)), true);
                assert.equal(copy.RunError.isInstance(new RunAbortedError()), true);
            } finally {
                fs.rmSync(copyDir, { recursive: true, force: true });
            }
        });
});

describe('values across the boundary', () => {
    test('values: run value carries undefined, BigInt, NaN, Infinity, -0, Date, RegExp, Map, Set',
        T, async () => {
            const result = await run({ source: `return {
                u: undefined, big: -12345678901234567890n, nan: NaN, inf: Infinity,
                ninf: -Infinity, nz: -0, date: new Date(86400000), bad: new Date(NaN),
                re: /x\\d+/gu, map: new Map([[1, 'a'], ['k', { v: 2 }]]), set: new Set([1, 'a']),
                str: 'é\\u0000😀', nul: null, bool: false };` });
            assert.deepEqual(Object.keys(result), ['status', 'value']);
            assert.equal(result.status, 'completed');
            const v = result.value;
            assert.ok('u' in v);
            assert.equal(v.u, undefined);
            assert.equal(v.big, -12345678901234567890n);
            assert.ok(Number.isNaN(v.nan));
            assert.equal(v.inf, Infinity);
            assert.equal(v.ninf, -Infinity);
            assert.ok(Object.is(v.nz, -0));
            assert.ok(v.date instanceof Date);
            assert.equal(v.date.getTime(), 86400000);
            assert.ok(Number.isNaN(v.bad.getTime()));
            assert.ok(v.re instanceof RegExp);
            assert.equal(v.re.source, 'x\\d+');
            assert.equal(v.re.flags, 'gu');
            assert.ok(v.map instanceof Map);
            assert.deepEqual([...v.map], [[1, 'a'], ['k', { v: 2 }]]);
            assert.ok(v.set instanceof Set);
            assert.deepEqual([...v.set], [1, 'a']);
            assert.equal(v.str, 'é\u0000😀');
            assert.equal(v.nul, null);
            assert.equal(v.bool, false);
        });

    test('values: typed arrays, ArrayBuffer, DataView and sparse arrays as run value', T,
        async () => {
            const { value: v } = await run({ source: `return {
                u8: new Uint8Array([1, 255]), i32: new Int32Array([-1, 7]),
                f64: new Float64Array([1.5, -0]), b64: new BigInt64Array([-5n]),
                ab: new Uint8Array([3, 4, 5]).buffer,
                dv: new DataView(new Uint8Array([9, 8, 7]).buffer, 1, 2),
                sparse: [1, , 3] };` });
            assert.ok(v.u8 instanceof Uint8Array);
            assert.deepEqual([...v.u8], [1, 255]);
            assert.ok(v.i32 instanceof Int32Array);
            assert.deepEqual([...v.i32], [-1, 7]);
            assert.ok(v.f64 instanceof Float64Array);
            assert.equal(v.f64[0], 1.5);
            assert.ok(Object.is(v.f64[1], -0));
            assert.ok(v.b64 instanceof BigInt64Array);
            assert.equal(v.b64[0], -5n);
            assert.ok(v.ab instanceof ArrayBuffer);
            assert.deepEqual([...new Uint8Array(v.ab)], [3, 4, 5]);
            assert.ok(v.dv instanceof DataView);
            assert.equal(v.dv.byteOffset, 1);
            assert.equal(v.dv.byteLength, 2);
            assert.equal(v.dv.getUint8(0), 8);
            assert.equal(v.sparse.length, 3);
            assert.ok(!(1 in v.sparse), 'the hole stays a hole');
            assert.equal(v.sparse[2], 3);
        });

    test('values: Error with cause and AggregateError as run value', T, async () => {
        const { value: v } = await run({ source: `return {
            e: new TypeError('outer', { cause: new RangeError('inner') }),
            agg: new AggregateError([new Error('a1'), 'plain'], 'many') };` });
        assert.ok(v.e instanceof TypeError);
        assert.equal(v.e.name, 'TypeError');
        assert.equal(v.e.message, 'outer');
        assert.ok(v.e.cause instanceof RangeError);
        assert.equal(v.e.cause.message, 'inner');
        assert.ok(v.agg instanceof AggregateError);
        assert.equal(v.agg.message, 'many');
        assert.equal(v.agg.errors.length, 2);
        assert.ok(v.agg.errors[0] instanceof Error);
        assert.equal(v.agg.errors[0].message, 'a1');
        assert.equal(v.agg.errors[1], 'plain');
    });

    test('values: cycles and repeated references keep their identity in the run value', T,
        async () => {
            const { value: v } = await run({ source: `
                const o = { name: 'o' }; o.self = o;
                const shared = { s: 1 };
                return { o, pair: [shared, shared], map: new Map([[shared, shared]]),
                    set: new Set([shared]) };` });
            assert.equal(v.o.self, v.o);
            assert.equal(v.pair[0], v.pair[1]);
            const [[key, val]] = [...v.map];
            assert.equal(key, v.pair[0]);
            assert.equal(val, v.pair[0]);
            assert.equal([...v.set][0], v.pair[0]);
            assert.equal(Object.getPrototypeOf(v.o), Object.prototype);
        });

    test('values: no return and return undefined complete with value undefined; a returned '
        + 'promise is awaited', T, async () => {
        assert.deepEqual(await run({ source: '1 + 1;' }),
            { status: 'completed', value: undefined });
        assert.deepEqual(await run({ source: 'return undefined' }),
            { status: 'completed', value: undefined });
        assert.deepEqual(await run({ source: 'return Promise.resolve(3)' }),
            { status: 'completed', value: 3 });
    });

    test('values: guest arguments reach the host function intact, explicit undefined counted', T,
        async () => {
            let args;
            const counts = [];
            const hostFunctions = { t: {
                take: (...a) => {
                    args = a;
                    return a.length;
                },
                count: (...a) => {
                    counts.push([a.length, 2 in a]);
                    return a.length;
                },
            } };
            const result = await run({ hostFunctions, source: `
                const o = { name: 'o' }; o.self = o; const shared = { s: 1 };
                await t.count(1, undefined, undefined);
                await t.count();
                return await t.take(undefined, -12345678901234567890n, NaN, -0, -Infinity,
                    new Date(5), /a+/gi, new Map([[shared, 'v']]), new Set([shared]),
                    new Uint8Array([1, 255]),
                    new TypeError('te', { cause: new RangeError('re') }), o, [shared, shared],
                    [1, , 3], new DataView(new Uint8Array([9, 8, 7]).buffer, 1, 2),
                    new AggregateError([new Error('a1')], 'agg'));` });
            assert.deepEqual(result, { status: 'completed', value: 16 });
            assert.deepEqual(counts, [[3, true], [0, false]]);
            assert.equal(args[0], undefined);
            assert.equal(args[1], -12345678901234567890n);
            assert.ok(Number.isNaN(args[2]));
            assert.ok(Object.is(args[3], -0));
            assert.equal(args[4], -Infinity);
            assert.equal(args[5].getTime(), 5);
            assert.equal(String(args[6]), '/a+/gi');
            assert.ok(args[7] instanceof Map);
            assert.ok(args[8] instanceof Set);
            assert.equal([...args[7].keys()][0], [...args[8]][0], 'shared key keeps identity');
            assert.ok(args[9] instanceof Uint8Array);
            assert.deepEqual([...args[9]], [1, 255]);
            assert.ok(args[10] instanceof TypeError);
            assert.equal(args[10].message, 'te');
            assert.ok(args[10].cause instanceof RangeError);
            assert.equal(args[10].cause.message, 're');
            assert.equal(args[11].self, args[11]);
            assert.equal(Object.getPrototypeOf(args[11]), Object.prototype);
            assert.equal(args[12][0], args[12][1]);
            assert.ok(!(1 in args[13]));
            assert.equal(args[13].length, 3);
            assert.ok(args[14] instanceof DataView);
            assert.equal(args[14].byteOffset, 1);
            assert.equal(args[14].byteLength, 2);
            assert.ok(args[15] instanceof AggregateError);
            assert.equal(args[15].errors[0].message, 'a1');
        });

    test('values: host function results reach the guest intact', T, async () => {
        const give = () => {
            const o = { name: 'o' };
            o.self = o;
            const shared = { s: 1 };
            return { u: undefined, big: -12345678901234567890n, nan: NaN, nz: -0,
                inf: -Infinity, d: new Date(86400000), re: /x\d+/gu,
                m: new Map([[shared, 'v'], ['k', shared]]), set: new Set([1, 'a', shared]),
                u8: new Uint8Array([1, 255]), b64: new BigInt64Array([-5n]),
                ab: new ArrayBuffer(4), dv: new DataView(new Uint8Array([9, 8, 7]).buffer, 1, 2),
                e: new TypeError('te', { cause: new RangeError('re') }),
                ag: new AggregateError([new Error('a1'), 'str'], 'agg'), o,
                pair: [shared, shared], sparse: [1, , 3] };
        };
        const result = await run({ hostFunctions: { t: { give } }, source: `
            const v = await t.give();
            return {
                u: 'u' in v && v.u === undefined, big: v.big === -12345678901234567890n,
                nan: Number.isNaN(v.nan), nz: Object.is(v.nz, -0), inf: v.inf === -Infinity,
                d: v.d instanceof Date && v.d.getTime(),
                re: v.re instanceof RegExp && v.re.source + '/' + v.re.flags,
                m: v.m instanceof Map && v.m.get([...v.m.keys()][0]),
                mshared: v.m.get('k') === [...v.m.keys()][0],
                set: v.set instanceof Set && v.set.size,
                u8: v.u8 instanceof Uint8Array && [...v.u8],
                b64: v.b64 instanceof BigInt64Array && v.b64[0],
                ab: v.ab instanceof ArrayBuffer && v.ab.byteLength,
                dv: v.dv instanceof DataView
                    && [v.dv.byteOffset, v.dv.byteLength, v.dv.getUint8(0)],
                e: v.e instanceof TypeError && [v.e.name, v.e.message,
                    v.e.cause instanceof RangeError, v.e.cause.message],
                ag: v.ag instanceof AggregateError && [v.ag.message, v.ag.errors.length,
                    v.ag.errors[0] instanceof Error, v.ag.errors[1]],
                cyc: v.o.self === v.o, pair: v.pair[0] === v.pair[1],
                sparse: [1 in v.sparse, v.sparse.length] };` });
        assert.deepEqual(result, { status: 'completed', value: {
            u: true, big: true, nan: true, nz: true, inf: true, d: 86400000, re: 'x\\d+/gu',
            m: 'v', mshared: true, set: 3, u8: [1, 255], b64: -5n, ab: 4, dv: [1, 2, 8],
            e: ['TypeError', 'te', true, 're'], ag: ['agg', 2, true, 'str'], cyc: true,
            pair: true, sparse: [false, 3] } });
    });

    test('values: a function, symbol or class instance as run value is RUN_SERIALIZATION_ERROR',
        T, async () => {
            for (const source of ['return () => 1', 'return Symbol("s")',
                'class K { constructor() { this.k = 1; } } return new K()',
                'return { nested: { f() {} } }']) {
                const error = await failure(run({ source }));
                assertBaseRunError(error, 'RUN_SERIALIZATION_ERROR');
                assert.match(error.message, /^JavaScript runtime result is not serializable/,
                    source);
            }
        });

    test('values: a non-serializable host result is a RUN_SERIALIZATION_ERROR the guest can '
        + 'catch', T, async () => {
        const hostFunctions = { t: { give: () => ({ f: () => 1 }) } };
        const caught = await run({ hostFunctions, source: guestCatch('await t.give()') });
        assert.equal(caught.value.isError, true);
        assert.equal(caught.value.code, AIRLOCK ? undefined : 'RUN_SERIALIZATION_ERROR');
        assert.equal(caught.value.name, AIRLOCK ? 'Error' : 'RunError');
        assert.match(caught.value.message, /^Host function "t\.give" output is not serializable/);
        const error = await failure(run({ hostFunctions, source: 'await t.give()' }));
        assertBaseRunError(error, 'RUN_SERIALIZATION_ERROR');
        assert.match(error.message, /^Host function "t\.give" output is not serializable/);
    });

    test('values: non-serializable guest arguments throw TypeError in the guest; uncaught they '
        + 'are RUN_USER_SOURCE_ERROR', T, async () => {
        let calls = 0;
        const hostFunctions = { t: { take: () => ++calls } };
        if (AIRLOCK) { // the run ends: the guest cannot catch it
            const error = await failure(run({ hostFunctions,
                source: guestCatch('await t.take(() => 1)') }));
            assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
            assert.equal(error.name, 'TypeError');
            assert.match(error.message, /^Host function arguments are not serializable/);
            assert.equal(calls, 0, 'the host function was never invoked');
            return;
        }
        const caught = await run({ hostFunctions, source: guestCatch('await t.take(() => 1)') });
        assert.deepEqual(caught.value.isError, true);
        assert.equal(caught.value.name, 'TypeError');
        assert.equal(caught.value.code, 'RUN_SERIALIZATION_ERROR');
        assert.match(caught.value.message, /^Host function arguments are not serializable/);
        const error = await failure(run({ hostFunctions, source: 'await t.take(Symbol("s"))' }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'TypeError');
        assert.match(error.message, /^Host function arguments are not serializable/);
        assert.equal(calls, 0, 'the host function was never invoked');
    });
});

describe('host functions', () => {
    test('host functions: sync and async functions; groups are globals; results in order', T,
        async () => {
            const hostFunctions = {
                tools: { add: (a, b) => a + b, join: (sep, ...v) => v.join(sep) },
                users: { find: async ({ id }) => ({ id, name: `user ${id}` }) },
            };
            const result = await run({ hostFunctions, source: `
                const sum = await tools.add(1, 2);
                const joined = await tools.join('-', 'a', 'b', 'c');
                const [u1, u2] = await Promise.all([users.find({ id: 1 }), users.find({ id: 2 })]);
                return { sum, joined, u1, u2, missing: typeof notAGroup };` });
            assert.deepEqual(result, { status: 'completed', value: { sum: 3, joined: 'a-b-c',
                u1: { id: 1, name: 'user 1' }, u2: { id: 2, name: 'user 2' },
                missing: 'undefined' } });
        });

    test('host functions: a call returns a promise-like with then, catch and finally', T,
        async () => {
            const hostFunctions = { t: {
                one: () => 1,
                boom: () => {
                    throw new Error('x');
                },
            } };
            const result = await run({ hostFunctions, source: `
                const p = t.one();
                const shape = [typeof p.then, typeof p.catch, typeof p.finally];
                const caught = await t.boom().catch((e) => 'caught ' + e.message);
                let settled = false;
                await t.one().finally(() => { settled = true; });
                return [shape, await p, caught, settled];` });
            assert.deepEqual(result.value, [['function', 'function', 'function'], 1,
                'caught Host function failed.', true]);
        });

    test('host functions: a thrown error reaches the guest as Error "Host function failed." '
        + 'with code RUN_HOST_FUNCTION_ERROR', T, async () => {
        const hostFunctions = { t: {
            error: () => {
                throw new Error('secret db password');
            },
            typeError: () => {
                throw new TypeError('typed secret');
            },
            rejects: async () => {
                throw new RangeError('async secret');
            },
            string: () => {
                throw 'a thrown string';
            },
            coded: () => {
                throw Object.assign(new Error('coded secret'), { code: 'E_HOST' });
            },
        } };
        const result = await run({ hostFunctions, source: `
            const describe = ${DESCRIBE_CAUGHT};
            const out = {};
            for (const n of ['error', 'typeError', 'rejects', 'string', 'coded']) {
                try { await t[n](); out[n] = 'no error'; } catch (e) {
                    out[n] = { ...describe(e), keys: Object.getOwnPropertyNames(e).sort(),
                        cause: e.cause, text: String(e) };
                }
            }
            return out;` });
        const sanitised = { isError: true, name: 'Error', message: 'Host function failed.',
            code: AIRLOCK ? undefined : 'RUN_HOST_FUNCTION_ERROR',
            keys: AIRLOCK ? ['message', 'stack'] : ['code', 'message', 'name', 'stack'],
            cause: undefined, text: 'Error: Host function failed.' };
        assert.deepEqual(result.value, { error: sanitised, typeError: sanitised,
            rejects: sanitised, string: sanitised, coded: sanitised });
    });

    test('host functions: an uncaught host failure rejects the run with a base RunError, code '
        + 'RUN_HOST_FUNCTION_ERROR, message "Host function failed."', T, async () => {
        const hostFunctions = { t: { boom: async () => {
            throw new Error('secret db password');
        } } };
        const error = await failure(run({ hostFunctions,
            source: '\nconst x = 1;\nawait t.boom();' }));
        assertBaseRunError(error, 'RUN_HOST_FUNCTION_ERROR');
        assert.equal(error.name, 'Error');
        assert.equal(error.message, 'Host function failed.');
        assert.ok(!error.stack.includes('secret'), 'the host message stays in the host');
        const [first, ...frames] = error.stack.split('\n');
        assert.equal(first, 'Error: Host function failed.');
        assert.ok(frames.length >= 1);
        assert.match(frames[0], /^ {4}at .*run\.js:3:\d+\)?$/);
    });

    test('host functions: a RunError thrown by the host keeps name, message and code', T,
        async () => {
            const hostFunctions = { t: {
                visible: () => {
                    throw new RunHostFunctionError('Order 7 is not yours.');
                },
                custom: () => {
                    throw new RunError('Quota used up.', 'MY_QUOTA');
                },
            } };
            const caught = await run({ hostFunctions, source: `const describe = ${DESCRIBE_CAUGHT};
                const out = [];
                try { await t.visible() } catch (e) { out.push(describe(e)) }
                try { await t.custom() } catch (e) { out.push(describe(e)) }
                return out;` });
            assert.deepEqual(caught.value, AIRLOCK ? [
                { isError: true, name: 'Error', message: 'Order 7 is not yours.', code: undefined },
                { isError: true, name: 'Error', message: 'Quota used up.', code: undefined },
            ] : [
                { isError: true, name: 'RunHostFunctionError', message: 'Order 7 is not yours.',
                    code: 'RUN_HOST_FUNCTION_ERROR' },
                { isError: true, name: 'RunError', message: 'Quota used up.', code: 'MY_QUOTA' },
            ]);
            const visible = await failure(run({ hostFunctions, source: 'await t.visible()' }));
            assertBaseRunError(visible, 'RUN_HOST_FUNCTION_ERROR');
            assert.equal(visible.name, 'RunHostFunctionError');
            assert.equal(visible.message, 'Order 7 is not yours.');
            const custom = await failure(run({ hostFunctions, source: 'await t.custom()' }));
            assertBaseRunError(custom, 'MY_QUOTA');
            assert.equal(custom.message, 'Quota used up.');
        });

    test('host functions: unknown and inherited members are not callable', T, async () => {
        let inheritedCalls = 0;
        const group = Object.create({ inherited: () => ++inheritedCalls });
        group.own = () => 'own';
        const hostFunctions = { t: group };
        assert.deepEqual(await run({ hostFunctions, source: 'return await t.own()' }),
            { status: 'completed', value: 'own' });
        // AIRLOCK: a group is a plain frozen object, so t.toString is Object.prototype's.
        for (const [member, name] of [['inherited', 't.inherited'], ['nope', 't.nope'],
            ...(AIRLOCK ? [] : [['toString', 't.toString']])]) {
            const error = await failure(run({ hostFunctions, source: `await t.${member}()` }));
            if (AIRLOCK) { // the group holds its own functions only: the rest is no function
                assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
                assert.equal(error.name, 'TypeError');
                assert.match(error.message, /not a function/);
                continue;
            }
            assertBaseRunError(error, 'RUN_HOST_FUNCTION_ERROR');
            assert.equal(error.name, 'RunHostFunctionError');
            assert.equal(error.message, `Unknown host function: ${name}`);
        }
        assert.equal(inheritedCalls, 0);
    });

    test('host functions: invalid configuration rejects with TypeError naming the problem', T,
        async () => {
            const cases = [
                [{ t: 5 }, 'Host function namespace "t" must be an object.'],
                [{ t: { f: 5 } }, 'Host function "t.f" must be a function.'],
                [{ Math: { f: () => 1 } }, 'Reserved host function namespace: Math'],
                [{ console: { f: () => 1 } }, 'Reserved host function namespace: console'],
                [{ 'a-b': { f: () => 1 } }, 'Invalid host function namespace: a-b'],
                [{ ab: { 'f g': () => 1 } }, 'Invalid host function name: ab.f g'],
            ];
            for (const [hostFunctions, message] of cases) {
                assertTypeError(await failure(run({ source: 'return 1', hostFunctions })),
                    message);
            }
        });
});

describe('guest errors', () => {
    test('guest errors: an uncaught throw is RUN_USER_SOURCE_ERROR keeping name and message; '
        + 'the stack has only run.js frames', T, async () => {
        const source = '\n\nfunction f() { throw new TypeError("boom"); }\nf();';
        const error = await failure(run({ source }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'TypeError');
        assert.equal(error.message, 'boom');
        const [first, ...frames] = error.stack.split('\n');
        assert.equal(first, 'TypeError: boom');
        assert.equal(frames.length, 2, error.stack);
        assert.match(frames[0], /^ {4}at f \(run\.js:3:\d+\)$/);
        assert.match(frames[1], /^ {4}at .*\(run\.js:4:\d+\)$/);
        const reference = await failure(run({ source: 'return notDeclared' }));
        assertBaseRunError(reference, 'RUN_USER_SOURCE_ERROR');
        assert.equal(reference.name, 'ReferenceError');
        assert.equal(reference.message,
            AIRLOCK ? "'notDeclared' is not defined" : 'notDeclared is not defined');
    });

    test('guest errors: a guest-authored code property is replaced by RUN_USER_SOURCE_ERROR', T,
        async () => {
            const error = await failure(run({ source:
                'throw Object.assign(new Error("c"), { code: "RUN_TIMEOUT" })' }));
            assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
            assert.equal(error.message, 'c');
        });

    test('guest errors: a thrown non-Error value becomes an Error with message String(value)', T,
        async () => {
            for (const [thrown, message] of [['"a string"', 'a string'], ['42', '42'],
                ['{ a: 1 }', '[object Object]']]) {
                const error = await failure(run({ source: `throw ${thrown}` }));
                assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
                assert.equal(error.name, 'Error');
                assert.equal(error.message, message);
            }
        });

    test('guest errors: a syntax error is RUN_USER_SOURCE_ERROR, name SyntaxError, run.js line '
        + 'in the stack', T, async () => {
        const error = await failure(run({ source: 'let x = 1;\nlet y = ;' }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'SyntaxError');
        assert.match(error.stack.split('\n')[0], /^SyntaxError: /);
        assert.match(error.stack, /run\.js:2:\d+/);
    });

    test('guest sandbox: no Node or timer globals, no eval or Function, a fresh global per run',
        T, async () => {
            const result = await run({ source: `return [typeof process, typeof require,
                typeof fetch, typeof setTimeout, typeof eval, typeof SharedArrayBuffer,
                typeof Atomics, typeof WebAssembly];` });
            const expected = Array(8).fill('undefined');
            if (AIRLOCK) {
                expected[4] = 'function'; // eval exists and throws
                const ev = await failure(run({ source: 'return eval("1")' }));
                assertBaseRunError(ev, 'RUN_USER_SOURCE_ERROR');
                assert.equal(ev.name, 'TypeError');
            }
            assert.deepEqual(result.value, expected);
            const fn = await failure(run({ source: 'return new Function("return 1")()' }));
            assertBaseRunError(fn, 'RUN_USER_SOURCE_ERROR');
            assert.equal(fn.name, 'TypeError');
            await run({ source: 'globalThis.leak = 1; return 1' });
            assert.deepEqual(await run({ source: 'return typeof globalThis.leak' }),
                { status: 'completed', value: 'undefined' });
        });

    test('guest sandbox: built-in prototypes are frozen', T, async () => {
        const result = await run({ source: `"use strict";
            try { Array.prototype.extra = 1; return 'writable'; }
            catch (e) { return [e.name, Object.isFrozen(Array.prototype)]; }` });
        assert.deepEqual(result.value, ['TypeError', true]);
    });
});

describe('detached bridge requests', () => {
    test('detached: a host call never awaited fails with RunDetachedBridgeRequestError', T,
        async () => {
            const hostFunctions = { a: { x: () => 1 } };
            const error = await failure(run({ hostFunctions, source: 'a.x(); return 1' }));
            assertRunError(error, RunDetachedBridgeRequestError, 'RUN_DETACHED_BRIDGE_REQUEST');
            assert.match(error.message, /a\.x/);
        });

    test('detached: returning while a host call is still pending fails with '
        + 'RunDetachedBridgeRequestError', T, async () => {
        const hostFunctions = { a: { x: NEVER } };
        const error = await failure(run({ hostFunctions,
            source: 'a.x().then(() => {}); return 1' }));
        assertRunError(error, RunDetachedBridgeRequestError, 'RUN_DETACHED_BRIDGE_REQUEST');
        assert.match(error.message, /a\.x/);
    });
});

describe('limits', () => {
    test('limits: timeoutMs ends a busy loop with RunTimeoutError', T, async () => {
        const error = await failure(run({ source: 'while (true) {}', limits: { timeoutMs: 200 } }));
        assertRunError(error, RunTimeoutError, 'RUN_TIMEOUT');
        assert.equal(error.message, 'JavaScript runtime execution timed out after 200ms.');
        assert.deepEqual(error.details, { timeoutMs: 200 });
    });

    test('limits: timeoutMs ends a run waiting on a host function and aborts its signal', T,
        async () => {
            let signal;
            const hostFunctions = { t: { wait: () => {
                signal = getHostFunctionContext().abortSignal;
                return NEVER();
            } } };
            // Long enough for a cold worker to reach the host function on a loaded machine.
            const error = await failure(run({ hostFunctions, source: 'await t.wait()',
                limits: { timeoutMs: 5000 } }));
            assertRunError(error, RunTimeoutError, 'RUN_TIMEOUT');
            assert.ok(signal instanceof AbortSignal);
            assert.equal(signal.aborted, true);
            assert.ok(signal.reason instanceof RunTimeoutError);
        });

    test('limits: memoryLimitBytes - 16 MiB fails at 8 MiB (InternalError, RUN_USER_SOURCE_ERROR)'
        + ' and fits the default', T, async () => {
        const source = 'const a = new Uint8Array(16 * 1024 * 1024); a[1] = 1; return a.length';
        const error = await failure(run({ source,
            limits: { memoryLimitBytes: 8 * 1024 * 1024 } }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'InternalError');
        assert.equal(error.message, 'out of memory');
        assert.deepEqual(await run({ source }), { status: 'completed', value: 16 * 1024 * 1024 });
    });

    test('limits: maxStackSizeBytes - depth 1000 overflows 64 KiB (catchable RangeError) and fits '
        + 'the default', T, async () => {
        const source = 'function f(n) { return n === 0 ? 0 : 1 + f(n - 1); } return f(1000);';
        const limits = { maxStackSizeBytes: 64 * 1024 };
        const error = await failure(run({ source, limits }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'RangeError');
        assert.equal(error.message, 'Maximum call stack size exceeded');
        const catching = run({ limits,
            source: `function f(n) { return n === 0 ? 0 : 1 + f(n - 1); }
                try { f(1000); return 'no error'; }
                catch (e) { return [e instanceof RangeError, e.message]; }` });
        if (AIRLOCK) { // the stack limit ends the run
            assertBaseRunError(await failure(catching), 'RUN_USER_SOURCE_ERROR');
        } else {
            assert.deepEqual((await catching).value, [true, 'Maximum call stack size exceeded']);
        }
        assert.deepEqual(await run({ source }), { status: 'completed', value: 1000 });
    });

    test('limits: maxResultBytes - over the limit is RUN_SERIALIZATION_ERROR, under completes', T,
        async () => {
            const limits = { maxResultBytes: 1000 };
            const error = await failure(run({ source: 'return "x".repeat(2000)', limits }));
            assertBaseRunError(error, 'RUN_SERIALIZATION_ERROR');
            assert.equal(error.message,
                'JavaScript runtime result exceeds the 1000 byte size limit.');
            assert.equal(error.details?.maxBytes, 1000);
            const ok = await run({ source: 'return "x".repeat(900)', limits });
            assert.equal(ok.value.length, 900);
        });

    test('limits: maxSourceBytes counts UTF-8 bytes; over it is RunSourceTooLargeError and '
        + 'nothing runs', T, async () => {
        let calls = 0;
        const hostFunctions = { t: { f: () => ++calls } };
        const source = 'await t.f(); return "éééé"'; // 30 bytes, 26 characters
        const error = await failure(run({ source, hostFunctions,
            limits: { maxSourceBytes: 29 } }));
        assertRunError(error, RunSourceTooLargeError, 'RUN_SOURCE_TOO_LARGE');
        assert.equal(error.message, 'JavaScript runtime source exceeds the 29 byte size limit.');
        assert.deepEqual(error.details, { bytes: 30, maxBytes: 29 });
        assert.equal(calls, 0);
        assert.deepEqual(await run({ source, hostFunctions, limits: { maxSourceBytes: 30 } }),
            { status: 'completed', value: 'éééé' });
    });

    test('limits: maxHostFunctionArgumentsBytes - the guest call throws and the host is not '
        + 'invoked', T, async () => {
        let calls = 0;
        const hostFunctions = { t: { take: (s) => (++calls, s.length) } };
        const limits = { maxHostFunctionArgumentsBytes: 1000 };
        const catching = run({ hostFunctions, limits,
            source: guestCatch('await t.take("x".repeat(2000))') });
        if (AIRLOCK) { // the run ends with the same message
            const error = await failure(catching);
            assertRunError(error, RunBridgeLimitError, 'RUN_BRIDGE_LIMIT');
            assert.equal(error.message,
                'Host function arguments exceed the 1000 byte size limit.');
            assert.equal(calls, 0);
            assert.deepEqual(await run({ hostFunctions, limits,
                source: 'return await t.take("x".repeat(900))' }),
            { status: 'completed', value: 900 });
            return;
        } else {
            assert.deepEqual((await catching).value, { isError: true, name: 'Error',
                message: 'Host function arguments exceed the 1000 byte size limit.',
                code: undefined });
        }
        const error = await failure(run({ hostFunctions, limits,
            source: 'await t.take("x".repeat(2000))' }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.message, 'Host function arguments exceed the 1000 byte size limit.');
        assert.equal(calls, 0);
        assert.deepEqual(await run({ hostFunctions, limits,
            source: 'return await t.take("x".repeat(900))' }), { status: 'completed', value: 900 });
    });

    test('limits: maxHostFunctionOutputBytes - the guest call throws RUN_SERIALIZATION_ERROR '
        + 'naming the function', T, async () => {
        const hostFunctions = { t: { big: () => 'y'.repeat(2000), small: () => 'y'.repeat(900) } };
        const limits = { maxHostFunctionOutputBytes: 1000 };
        const message = 'Host function "t.big" output exceeds the 1000 byte size limit.';
        const caught = await run({ hostFunctions, limits, source: guestCatch('await t.big()') });
        assert.deepEqual(caught.value, AIRLOCK ? { isError: true, name: 'Error', message,
            code: undefined } : { isError: true, name: 'RunError', message,
            code: 'RUN_SERIALIZATION_ERROR' });
        const error = await failure(run({ hostFunctions, limits, source: 'await t.big()' }));
        assertBaseRunError(error, 'RUN_SERIALIZATION_ERROR');
        assert.equal(error.message, message);
        const ok = await run({ hostFunctions, limits, source: 'return (await t.small()).length' });
        assert.equal(ok.value, 900);
    });

    test('limits: maxBridgeRequests - call N+1 fails the run with RunBridgeLimitError even when '
        + 'caught', T, async () => {
        const hostFunctions = { t: { n: () => 1 } };
        const limits = { maxBridgeRequests: 3 };
        assert.deepEqual(await run({ hostFunctions, limits,
            source: 'let s = 0; for (let i = 0; i < 3; i++) s += await t.n(); return s' }),
        { status: 'completed', value: 3 });
        const error = await failure(run({ hostFunctions, limits, source: `
            for (let i = 0; i < 5; i++) { try { await t.n(); } catch (e) {} }
            return 'survived'` }));
        assertRunError(error, RunBridgeLimitError, 'RUN_BRIDGE_LIMIT');
        assert.equal(error.message, 'JavaScript runtime exceeded the 3 bridge request limit.');
        assert.equal(error.details?.maxBridgeRequests, 3);
    });

    test('limits: maxInFlightBridgeRequests - one concurrent call too many fails the run with '
        + 'RunBridgeLimitError', T, async () => {
        const hostFunctions = { t: { n: NEVER } };
        const error = await failure(run({ hostFunctions, limits: { maxInFlightBridgeRequests: 2 },
            source: 'return await Promise.allSettled([t.n(), t.n(), t.n()])' }));
        assertRunError(error, RunBridgeLimitError, 'RUN_BRIDGE_LIMIT');
        assert.equal(error.message,
            'JavaScript runtime exceeded the 2 in-flight bridge request limit.');
        assert.equal(error.details?.maxInFlightBridgeRequests, 2);
    });

    test('limits: maxConsoleOutputBytes - output past the limit is dropped, the run completes',
        T, async () => {
            const { code, stdout, stderr } = await runChild(`
                const R = await import(process.env.COMPAT_IMPL_URL);
                const result = await R.run({ limits: { maxConsoleOutputBytes: 100 }, source: \`
                    for (let i = 0; i < 10; i++) console.log('line-' + i + '-' + 'x'.repeat(20));
                    return 1;\` }).catch((e) => ({ code: e.code }));
                process.stdout.write('RESULT ' + JSON.stringify(result) + '\\n');`);
            assert.equal(code, 0, stderr);
            const { result, rest } = childResult(stdout);
            // AIRLOCK: the console limit ends the run; what fitted was written.
            assert.deepEqual(result, AIRLOCK ? { code: 'RUN_OUTPUT_LIMIT' } :
                { status: 'completed', value: 1 });
            const lines = rest.split('\n').filter((l) => l !== '');
            const pad = 'x'.repeat(20);
            assert.deepEqual(lines.slice(0, 3),
                [`line-0-${pad}`, `line-1-${pad}`, `line-2-${pad}`]);
            assert.ok(Buffer.byteLength(rest) <= 100, `at most 100 bytes, got ${rest}`);
            for (let i = 4; i < 10; i++) {
                assert.ok(!rest.includes(`line-${i}-`), `line ${i} dropped`);
            }
        });

    test('limits: invalid values reject run() with TypeError naming the key', T, async () => {
        for (const value of [0, -1, 1.5, NaN, Infinity, '100']) {
            assertTypeError(await failure(run({ source: 'return 1',
                limits: { timeoutMs: value } })), 'limits.timeoutMs must be a positive integer.');
        }
        assertTypeError(await failure(run({ source: 'return 1',
            limits: { timeoutMs: 2147483648 } })), 'limits.timeoutMs must be at most 2147483647.');
        for (const key of ['memoryLimitBytes', 'maxStackSizeBytes', 'maxResultBytes',
            'maxConsoleOutputBytes', 'maxSourceBytes', 'maxHostFunctionArgumentsBytes',
            'maxHostFunctionOutputBytes', 'maxBridgeRequests', 'maxInFlightBridgeRequests',
            'maxContinuationBytes']) {
            assertTypeError(await failure(run({ source: 'return 1', limits: { [key]: 0 } })),
                `limits.${key} must be a positive integer.`);
            assertTypeError(await failure(run({ source: 'return 1',
                limits: { [key]: 2 ** 31 } })), `limits.${key} must be at most 2147483647.`);
        }
        const promise = run({ source: 'return 1', limits: { timeoutMs: -1 } });
        assert.ok(promise instanceof Promise, 'run() rejects rather than throws');
        await failure(promise);
        for (const limits of [{ timeoutMs: 2147483647 }, { timeoutMs: null }, null, {},
            { notALimit: -1 }]) {
            assert.deepEqual(await run({ source: 'return 1', limits }),
                { status: 'completed', value: 1 });
        }
    });

    test('limits: invalid runner limits reject runner.run, not createRunner; a run override '
        + 'of the key mends them', T, async () => {
        const runner = createRunner({ limits: { timeoutMs: -1 } });
        assertTypeError(await failure(runner.run({ source: 'return 1' })),
            'limits.timeoutMs must be a positive integer.');
        assert.deepEqual(await runner.run({ source: 'return 1', limits: { timeoutMs: 5000 } }),
            { status: 'completed', value: 1 });
    });

    test('limits: run limits override runner limits per key, keeping the others', T, async () => {
        const runner = createRunner({ limits: { maxSourceBytes: 50, maxResultBytes: 100,
            timeoutMs: 300 } });
        const longSource = `return 1;${' '.repeat(60)}`;
        const tooLong = await failure(runner.run({ source: longSource,
            limits: { maxResultBytes: 10_000 } }));
        assertRunError(tooLong, RunSourceTooLargeError, 'RUN_SOURCE_TOO_LARGE');
        assert.equal(tooLong.details.maxBytes, 50);
        const big = await runner.run({ source: 'return "x".repeat(500)',
            limits: { maxResultBytes: 10_000 } });
        assert.equal(big.value.length, 500);
        const tooBig = await failure(runner.run({ source: 'return "x".repeat(500)' }));
        assertBaseRunError(tooBig, 'RUN_SERIALIZATION_ERROR');
        const timeout = await failure(runner.run({ source: 'while (true) {}',
            limits: { maxResultBytes: 10_000 } }));
        assertRunError(timeout, RunTimeoutError, 'RUN_TIMEOUT');
        assert.deepEqual(timeout.details, { timeoutMs: 300 });
    });
});

describe('abort', () => {
    test('abort: an already-aborted signal rejects with RunAbortedError and invokes nothing', T,
        async () => {
            let calls = 0;
            const controller = new AbortController();
            controller.abort(new Error('caller reason'));
            const error = await failure(run({ source: 'await t.f(); return 1',
                hostFunctions: { t: { f: () => ++calls } }, abortSignal: controller.signal }));
            assertRunError(error, RunAbortedError, 'RUN_ABORTED');
            assert.equal(error.message, 'JavaScript runtime execution was aborted.');
            assert.equal(calls, 0);
        });

    test('abort: aborting mid-run rejects with RunAbortedError and aborts the host function '
        + 'context signal', T, async () => {
        const entered = gate();
        let signal;
        const controller = new AbortController();
        const pending = run({ abortSignal: controller.signal, source: 'await t.wait(); return 1',
            hostFunctions: { t: { wait: () => {
                signal = getHostFunctionContext().abortSignal;
                entered.open();
                return NEVER();
            } } } });
        await entered.opened;
        assert.equal(signal.aborted, false);
        controller.abort();
        const error = await failure(pending);
        assertRunError(error, RunAbortedError, 'RUN_ABORTED');
        assert.equal(signal.aborted, true);
        assert.ok(signal.reason instanceof RunAbortedError);
    });

    test('abort: aborting a busy guest loop rejects with RunAbortedError', T, async () => {
        const controller = new AbortController();
        const pending = run({ source: 'while (true) {}', abortSignal: controller.signal });
        setTimeout(() => controller.abort(), 100);
        assertRunError(await failure(pending), RunAbortedError, 'RUN_ABORTED');
    });
});

describe('worker cap', () => {
    test('setMaxWorkers(1): a second concurrent run rejects at once with RunConcurrencyError',
        T, async () => {
            const entered = gate();
            const release = gate();
            setMaxWorkers(1);
            try {
                const first = run({ source: 'return await t.hold()', hostFunctions: { t: {
                    hold: () => {
                        entered.open();
                        return release.opened.then(() => 'first done');
                    },
                } } });
                await entered.opened;
                // Were it queued, this would wait for `first`, which waits for us: no verdict.
                const error = await failure(run({ source: 'return 2' }));
                assertRunError(error, RunConcurrencyError, 'RUN_CONCURRENCY_LIMIT');
                assert.equal(error.message, 'JavaScript runtime maxWorkers limit reached (1).');
                assert.deepEqual(error.details, { maxWorkers: 1 });
                release.open();
                assert.deepEqual(await first, { status: 'completed', value: 'first done' });
                assert.deepEqual(await run({ source: 'return 3' }),
                    { status: 'completed', value: 3 });
            } finally {
                setMaxWorkers();
            }
        });

    test('setMaxWorkers(): restores the default, which admits two small runs at once', T,
        async () => {
            // The default cap follows free memory: two 8 MiB runs need well under 1 GiB.
            const entered = gate();
            const release = gate();
            setMaxWorkers(1);
            setMaxWorkers();
            const limits = { memoryLimitBytes: 8 * 1024 * 1024 };
            const first = run({ limits, source: 'return await t.hold()', hostFunctions: { t: {
                hold: () => {
                    entered.open();
                    return release.opened.then(() => 1);
                },
            } } });
            await entered.opened;
            assert.deepEqual(await run({ limits, source: 'return 2' }),
                { status: 'completed', value: 2 });
            release.open();
            assert.deepEqual(await first, { status: 'completed', value: 1 });
        });

    test('setMaxWorkers: a non-positive or non-integer cap throws TypeError', T, () => {
        for (const value of [0, -1, 1.5, 'a', null, NaN]) {
            assert.throws(() => setMaxWorkers(value), (e) => {
                assertTypeError(e, 'maxWorkers must be a positive integer.');
                return true;
            });
        }
        setMaxWorkers(undefined);
    });
});

describe('host function context', () => {
    test('getHostFunctionContext: fields and their types', T, async () => {
        const seen = [];
        const hostFunctions = { tools: { look: () => {
            const ctx = getHostFunctionContext();
            seen.push({ keys: Object.keys(ctx).sort(), ctx });
            return 1;
        } } };
        await run({ hostFunctions, source: 'return await tools.look()' });
        await run({ hostFunctions, source: 'return await tools.look()' });
        const [{ keys, ctx }, { ctx: other }] = seen;
        assert.deepEqual(keys, ['abortSignal', 'hostFunctionName', 'interrupt', 'invocationId',
            'logicalRunId', 'requestId', 'requestIndex']);
        assert.ok(ctx.abortSignal instanceof AbortSignal);
        assert.equal(ctx.hostFunctionName, 'tools.look');
        assert.equal(typeof ctx.interrupt, 'function');
        for (const key of ['invocationId', 'logicalRunId', 'requestId']) {
            assert.equal(typeof ctx[key], 'string', key);
            assert.ok(ctx[key].length > 0, key);
            assert.notEqual(ctx[key], other[key], `${key} differs between runs`);
        }
        assert.equal(ctx.requestIndex, 1);
        assert.equal(ctx.resume, undefined);
        assert.equal(ctx.abortSignal.aborted, false, 'not aborted after a clean completion');
    });

    test('getHostFunctionContext: requestIndex is the 1-based request order, requestId unique',
        T, async () => {
            const seen = [];
            const record = () => {
                const { hostFunctionName, requestIndex, requestId, invocationId, logicalRunId } =
                    getHostFunctionContext();
                seen.push({ hostFunctionName, requestIndex, requestId, invocationId,
                    logicalRunId });
            };
            await run({ hostFunctions: { a: { x: record, y: record }, b: { z: record } },
                source: 'await a.x(); await a.y(); await b.z(); await a.x(); return 1' });
            assert.deepEqual(seen.map((s) => [s.hostFunctionName, s.requestIndex]),
                [['a.x', 1], ['a.y', 2], ['b.z', 3], ['a.x', 4]]);
            assert.equal(new Set(seen.map((s) => s.requestId)).size, 4);
            assert.equal(new Set(seen.map((s) => s.invocationId)).size, 1);
            assert.equal(new Set(seen.map((s) => s.logicalRunId)).size, 1);
        });

    test('getHostFunctionContext: follows awaited asynchronous work', T, async () => {
        const result = await run({ source: 'return await Promise.all([a.x(), a.y()])',
            hostFunctions: { a: {
                x: async () => {
                    await new Promise((resolve) => setTimeout(resolve, 20));
                    return getHostFunctionContext().hostFunctionName;
                },
                y: async () => {
                    await new Promise((resolve) => setTimeout(resolve, 5));
                    return getHostFunctionContext().hostFunctionName;
                },
            } } });
        assert.deepEqual(result.value, ['a.x', 'a.y']);
    });

    test('getHostFunctionContext: throws outside a host function and after it settled', T,
        async () => {
            const message =
                'getHostFunctionContext() can only be called while executing a host function.';
            const outside = (e) => {
                assert.ok(e instanceof Error);
                assert.equal(RunError.isInstance(e), false);
                assert.equal(e.message, message);
                return true;
            };
            assert.throws(() => getHostFunctionContext(), outside);
            let later;
            await run({ source: 'return await a.x()', hostFunctions: { a: { x: () => {
                later = () => getHostFunctionContext();
                return 1;
            } } } });
            assert.throws(later, outside);
        });
});

describe('interrupt and resume', () => {
    const runner = createRunner({ continuationSecret: SECRET });

    test('interrupt: result is {status, interruptions[{id, hostFunctionName, arguments, '
        + 'payload}], continuation string}', T, async () => {
        const result = await runner.run({ hostFunctions: { docs: { publish: asking() } },
            source: 'return await docs.publish("draft-1", { force: true }, 2n)' });
        assert.deepEqual(Object.keys(result).sort(), ['continuation', 'interruptions', 'status']);
        assert.equal(result.status, 'interrupted');
        assert.equal(typeof result.continuation, 'string');
        assert.ok(result.continuation.length > 0);
        assert.equal(result.interruptions.length, 1);
        const [i] = result.interruptions;
        assert.deepEqual(Object.keys(i).sort(), ['arguments', 'hostFunctionName', 'id', 'payload']);
        assert.equal(typeof i.id, 'string');
        assert.ok(i.id.length > 0);
        assert.equal(i.hostFunctionName, 'docs.publish');
        assert.deepEqual(i.arguments, ['draft-1', { force: true }, 2n]);
        assert.deepEqual(i.payload, { asked: 'draft-1' });
        assert.equal(isRunInterruptedResult(result), true);
    });

    test('resume: only the interrupted function is reinvoked, with context.resume; earlier calls '
        + 'are replayed', T, async () => {
        const log = [];
        const ask = asking(log);
        let preCalls = 0;
        const hostFunctions = { a: { pre: (x) => (++preCalls, x * 2), ask } };
        const source = 'const p = await a.pre(21); const r = await a.ask("ship?"); return [p, r]';
        const first = await runner.run({ source, hostFunctions });
        assert.equal(first.status, 'interrupted');
        assert.equal(preCalls, 1);
        const [interruption] = first.interruptions;
        const done = await runner.run({ source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: interruption.id, value: 'yes' }] });
        assert.deepEqual(done, { status: 'completed', value: [42, 'yes'] });
        assert.equal(preCalls, 1, 'a.pre was not invoked again');
        assert.equal(log.length, 2);
        assert.deepEqual(log[1].args, ['ship?']);
        assert.deepEqual(log[1].resume, { interruptionId: interruption.id,
            payload: { asked: 'ship?' }, resolution: 'yes' });
    });

    test('resume: logicalRunId stays, invocationId changes, the reinvoked call keeps its '
        + 'requestIndex', T, async () => {
        const seen = [];
        const record = (name) => () => {
            const ctx = getHostFunctionContext();
            seen.push({ name, logicalRunId: ctx.logicalRunId, invocationId: ctx.invocationId,
                requestIndex: ctx.requestIndex, resumed: ctx.resume !== undefined });
            if (name === 'ask' && ctx.resume === undefined) {
                ctx.interrupt({});
            }
            return name;
        };
        const hostFunctions = { a: { pre: record('pre'), ask: record('ask') } };
        const source = 'await a.pre(); return await a.ask()';
        const first = await runner.run({ source, hostFunctions });
        await runner.run({ source, hostFunctions, continuation: first.continuation,
            resolutions: resolveAll(first, true) });
        assert.deepEqual(seen.map((s) => [s.name, s.requestIndex, s.resumed]),
            [['pre', 1, false], ['ask', 2, false], ['ask', 2, true]]);
        assert.equal(seen[2].logicalRunId, seen[0].logicalRunId);
        assert.equal(seen[1].invocationId, seen[0].invocationId);
        assert.notEqual(seen[2].invocationId, seen[0].invocationId);
    });

    test('resume: Math.random and Date.now replay identically', T, async () => {
        const log = [];
        const hostFunctions = { a: { ask: asking(log) } };
        const source = `const r = Math.random(); const d = Date.now();
            const answer = await a.ask(r, d, new Date().getTime());
            return [r, d, answer];`;
        const first = await runner.run({ source, hostFunctions });
        const args = first.interruptions[0].arguments;
        assert.equal(typeof args[0], 'number');
        const done = await runner.run({ source, hostFunctions, continuation: first.continuation,
            resolutions: resolveAll(first, 'ok') });
        assert.deepEqual(done.value, [args[0], args[1], 'ok']);
        assert.deepEqual(log[1].args, args, 'the reinvoked call gets the same arguments');
    });

    test('interrupt: two concurrent interruptions come back together, in call order', T,
        async () => {
            const hostFunctions = { act: { del: asking(), pay: asking() } };
            const result = await runner.run({ hostFunctions, source:
                'return await Promise.all([act.del("acc-1"), act.pay("p-1", 10n)])' });
            assert.equal(result.status, 'interrupted');
            assert.deepEqual(result.interruptions.map((i) => [i.hostFunctionName, i.arguments,
                i.payload]), [['act.del', ['acc-1'], { asked: 'acc-1' }],
                ['act.pay', ['p-1', 10n], { asked: 'p-1' }]]);
            assert.notEqual(result.interruptions[0].id, result.interruptions[1].id);
        });

    test('resume: a partial resolution keeps the other interruption pending with the same id '
        + 'and payload', T, async () => {
        const delLog = [];
        const payLog = [];
        const hostFunctions = { act: { del: asking(delLog), pay: asking(payLog) } };
        const source = 'return await Promise.all([act.del("acc-1"), act.pay("p-1", 10n)])';
        const first = await runner.run({ source, hostFunctions });
        const [del, pay] = first.interruptions;
        const second = await runner.run({ source, hostFunctions, continuation: first.continuation,
            resolutions: [{ interruptionId: pay.id, value: 'paid' }] });
        assert.equal(second.status, 'interrupted');
        assert.deepEqual(second.interruptions, [del]);
        assert.equal(delLog.length, 1, 'the pending function was not invoked again');
        assert.equal(payLog.length, 2);
        const third = await runner.run({ source, hostFunctions,
            continuation: second.continuation,
            resolutions: [{ interruptionId: del.id, value: 'deleted' }] });
        assert.deepEqual(third, { status: 'completed', value: ['deleted', 'paid'] });
        assert.equal(payLog.length, 2, 'the resolved function was replayed, not reinvoked');
        assert.equal(delLog.length, 2);
    });

    test('interrupt: sequential interruptions get distinct ids; each continuation carries on', T,
        async () => {
            const hostFunctions = { s: { step: (n) => {
                const ctx = getHostFunctionContext();
                if (ctx.resume === undefined) {
                    ctx.interrupt({ n });
                }
                return n * 10 + ctx.resume.resolution;
            } } };
            const source = 'const a = await s.step(1); const b = await s.step(2); return [a, b]';
            const r1 = await runner.run({ source, hostFunctions });
            assert.deepEqual(r1.interruptions.map((i) => i.payload), [{ n: 1 }]);
            const r2 = await runner.run({ source, hostFunctions, continuation: r1.continuation,
                resolutions: resolveAll(r1, 1) });
            assert.equal(r2.status, 'interrupted');
            assert.deepEqual(r2.interruptions.map((i) => i.payload), [{ n: 2 }]);
            assert.notEqual(r2.interruptions[0].id, r1.interruptions[0].id);
            const r3 = await runner.run({ source, hostFunctions, continuation: r2.continuation,
                resolutions: resolveAll(r2, 2) });
            assert.deepEqual(r3, { status: 'completed', value: [11, 22] });
        });

    test('interrupt: the guest cannot catch an interruption', T, async () => {
        const result = await runner.run({ hostFunctions: { a: { ask: asking() } },
            source: 'try { return await a.ask("q"); } catch (e) { return "caught"; }' });
        assert.equal(result.status, 'interrupted');
    });

    test('interrupt: in-flight host calls settle first and are not reinvoked on resume', T,
        async () => {
            let slowCalls = 0;
            const hostFunctions = { a: {
                slow: async () => {
                    slowCalls++;
                    await new Promise((resolve) => setTimeout(resolve, 50));
                    return 'slow done';
                },
                ask: asking(),
            } };
            const source = 'return await Promise.all([a.slow(), a.ask("q")])';
            const first = await runner.run({ source, hostFunctions });
            assert.equal(first.status, 'interrupted');
            assert.deepEqual(first.interruptions.map((i) => i.hostFunctionName), ['a.ask']);
            const done = await runner.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'answer') });
            assert.deepEqual(done, { status: 'completed', value: ['slow done', 'answer'] });
            assert.equal(slowCalls, 1);
        });

    test('interrupt: rich payloads and resolutions cross intact', T, async () => {
        const hostFunctions = { a: { b: () => {
            const ctx = getHostFunctionContext();
            if (ctx.resume === undefined) {
                ctx.interrupt(new Map([[1, 2n]]));
            }
            return [ctx.resume.payload, ctx.resume.resolution];
        } } };
        const source = 'return await a.b()';
        const first = await runner.run({ source, hostFunctions });
        assert.deepEqual(first.interruptions[0].payload, new Map([[1, 2n]]));
        const done = await runner.run({ source, hostFunctions, continuation: first.continuation,
            resolutions: resolveAll(first, { d: new Date(0), n: 5n }) });
        assert.deepEqual(done.value, [new Map([[1, 2n]]), { d: new Date(0), n: 5n }]);
        const none = await runner.run({ source: 'return await a.b()', hostFunctions: { a: {
            b: () => getHostFunctionContext().interrupt() } } });
        assert.equal(none.interruptions[0].payload, undefined);
        assert.deepEqual(none.interruptions[0].arguments, []);
    });

    test('interrupt: a non-serializable or oversized payload is RUN_SERIALIZATION_ERROR', T,
        async () => {
            const bad = await failure(runner.run({ source: 'return await a.b()',
                hostFunctions: { a: { b: () => getHostFunctionContext().interrupt({ f() {} }),
                } } }));
            assertBaseRunError(bad, 'RUN_SERIALIZATION_ERROR');
            assert.match(bad.message, /^Interruption payload is not serializable/);
            const big = await failure(runner.run({ source: 'return await a.b()',
                limits: { maxHostFunctionOutputBytes: 1000 },
                hostFunctions: { a: { b: () => getHostFunctionContext().interrupt('p'.repeat(2000)),
                } } }));
            assertBaseRunError(big, 'RUN_SERIALIZATION_ERROR');
            assert.equal(big.message,
                'Host function "a.b" interruption payload exceeds the 1000 byte size limit.');
        });

    test('resume: a signed continuation can be resumed more than once', T, async () => {
        const hostFunctions = { a: { ask: asking() } };
        const source = 'return await a.ask("q")';
        const first = await runner.run({ source, hostFunctions });
        for (const value of ['one', 'two']) {
            assert.deepEqual(await runner.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, value) }),
            { status: 'completed', value });
        }
    });

    test('resume: resolution validation is RunProtocolError', T, async () => {
        const hostFunctions = { a: { ask: asking() } };
        const source = 'return await Promise.all([a.ask(1), a.ask(2)])';
        const first = await runner.run({ source, hostFunctions });
        const [one] = first.interruptions;
        const resume = (extra) => runner.run({ source, hostFunctions,
            continuation: first.continuation, ...extra });
        const cases = [
            [{}, 'A continuation requires at least one resolution for a pending interruption.'],
            [{ resolutions: [] },
                'A continuation requires at least one resolution for a pending interruption.'],
            [{ resolutions: [{ interruptionId: 'no-such-id', value: 1 }] },
                'A resolution does not match exactly one pending interruption.'],
            [{ resolutions: [{ interruptionId: one.id, value: 1 },
                { interruptionId: one.id, value: 2 }] },
            'A resolution does not match exactly one pending interruption.'],
        ];
        for (const [extra, message] of cases) {
            const error = await failure(resume(extra));
            assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            assert.equal(error.message, message);
        }
        const orphan = await failure(runner.run({ source, hostFunctions,
            resolutions: [{ interruptionId: one.id, value: 1 }] }));
        assertRunError(orphan, RunProtocolError, 'RUN_PROTOCOL_ERROR');
        assert.equal(orphan.message, 'Interruption resolutions require a continuation.');
    });

    test('interrupt: without a secret or codec fails with TypeError "signing is not configured"',
        T, async () => {
            const log = [];
            const error = await failure(run({ source: 'return await a.ask("q")',
                hostFunctions: { a: { ask: asking(log) } } }));
            assertTypeError(error, 'Continuation signing is not configured. Set '
                + 'RUN_CONTINUATION_SECRET or pass continuationSecret or continuationCodec to '
                + 'createRunner().');
            assert.equal(log.length, 1, 'the host function ran and asked to interrupt');
        });

    test('continuationSecret: under 32 bytes throws TypeError from createRunner', T, () => {
        const message = 'Continuation secret must contain at least 32 bytes of key material.';
        for (const continuationSecret of ['short', 'x'.repeat(31), new Uint8Array(31)]) {
            assert.throws(() => createRunner({ continuationSecret }), (e) => {
                assertTypeError(e, message);
                return true;
            });
        }
        createRunner({ continuationSecret: 'x'.repeat(32) });
        createRunner({ continuationSecret: new Uint8Array(32).fill(7) });
    });

    test('continuationSecret with continuationCodec throws TypeError from createRunner', T, () => {
        assert.throws(() => createRunner({ continuationSecret: SECRET,
            continuationCodec: createSignedContinuationCodec({ secret: SECRET }) }), (e) => {
            assertTypeError(e,
                'Runner continuationCodec and continuationSecret cannot be used together.');
            return true;
        });
    });

    test('RUN_CONTINUATION_SECRET: run() and createRunner() sign with the environment secret',
        T, async () => {
            const envSecret = 'compat-suite-environment-secret-0123456789';
            const { code, stdout, stderr } = await runChild(`
                const R = await import(process.env.COMPAT_IMPL_URL);
                const hostFunctions = { a: { ask: () => {
                    const ctx = R.getHostFunctionContext();
                    if (ctx.resume === undefined) ctx.interrupt({});
                    return ctx.resume.resolution;
                } } };
                const source = 'return await a.ask()';
                const first = await R.run({ source, hostFunctions });
                const again = await R.createRunner().run({ source, hostFunctions,
                    continuation: first.continuation,
                    resolutions: [{ interruptionId: first.interruptions[0].id, value: 'env' }] });
                const explicit = await R.createRunner({
                    continuationSecret: ${JSON.stringify(SECRET)} }).run({ source, hostFunctions });
                const all = { first, again, explicit };
                process.stdout.write('RESULT ' + JSON.stringify(all) + '\\n');
            `, { RUN_CONTINUATION_SECRET: envSecret });
            assert.equal(code, 0, stderr);
            const { result: { first, again, explicit } } = childResult(stdout);
            assert.equal(first.status, 'interrupted');
            assert.deepEqual(again, { status: 'completed', value: 'env' });
            const hostFunctions = { a: { ask: asking() } };
            const source = 'return await a.ask()';
            const withEnvKey = createRunner({ continuationSecret: envSecret });
            assert.deepEqual(await withEnvKey.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'here') }),
            { status: 'completed', value: 'here' });
            const wrongKey = await failure(runner.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'x') }));
            assertRunError(wrongKey, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            // An explicit continuationSecret wins over the environment.
            assert.deepEqual(await runner.run({ source, hostFunctions,
                continuation: explicit.continuation, resolutions: resolveAll(explicit, 'mine') }),
            { status: 'completed', value: 'mine' });
        });

    test('continuationContext: a different or missing context on resume is RunProtocolError '
        + 'and invokes nothing', T, async () => {
        const log = [];
        const hostFunctions = { a: { ask: asking(log) } };
        const source = 'return await a.ask("go")';
        const first = await runner.run({ source, hostFunctions,
            continuationContext: { tenant: 't1', user: 7 } });
        for (const continuationContext of [{ tenant: 't2', user: 7 }, undefined]) {
            const error = await failure(runner.run({ source, hostFunctions, continuationContext,
                continuation: first.continuation, resolutions: resolveAll(first, true) }));
            assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            assert.equal(error.message,
                'Continuation does not match the supplied source, scope, or runtime version.');
        }
        assert.equal(log.length, 1);
        assert.deepEqual(await runner.run({ source, hostFunctions,
            continuationContext: { tenant: 't1', user: 7 }, continuation: first.continuation,
            resolutions: resolveAll(first, true) }), { status: 'completed', value: true });
    });

    test('continuation scope: another source or host function set on resume is '
        + 'RunProtocolError', T, async () => {
        const log = [];
        const hostFunctions = { a: { ask: asking(log) } };
        const source = 'return await a.ask("go")';
        const first = await runner.run({ source, hostFunctions });
        const attempts = [
            { source: `${source} `, hostFunctions },
            { source, hostFunctions: { ...hostFunctions, b: { extra: () => 1 } } },
        ];
        for (const attempt of attempts) {
            const error = await failure(runner.run({ ...attempt,
                continuation: first.continuation, resolutions: resolveAll(first, true) }));
            assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            assert.equal(error.message,
                'Continuation does not match the supplied source, scope, or runtime version.');
        }
        assert.equal(log.length, 1);
    });

    test('continuation: a tampered, garbage or foreign-secret token is RunProtocolError', T,
        async () => {
            const log = [];
            const hostFunctions = { a: { ask: asking(log) } };
            const source = 'return await a.ask("go")';
            const first = await runner.run({ source, hostFunctions });
            const token = first.continuation;
            const mid = Math.floor(token.length / 2);
            const tampered = token.slice(0, mid) + (token[mid] === 'A' ? 'B' : 'A')
                + token.slice(mid + 1);
            const foreign = createRunner({ continuationSecret: OTHER_SECRET });
            const attempts = [[runner, tampered], [runner, 'garbage'], [runner, ''],
                [foreign, token]];
            for (const [who, continuation] of attempts) {
                const error = await failure(who.run({ source, hostFunctions, continuation,
                    resolutions: resolveAll(first, true) }));
                assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            }
            assert.equal(log.length, 1);
        });

    test('continuationAudience: another or no audience is RunProtocolError; the same resumes', T,
        async () => {
            const hostFunctions = { a: { ask: asking() } };
            const source = 'return await a.ask("go")';
            const audience = (continuationAudience) => createRunner({ continuationSecret: SECRET,
                continuationAudience });
            const first = await audience('publish-v1').run({ source, hostFunctions });
            for (const other of [audience('publish-v2'), runner]) {
                const error = await failure(other.run({ source, hostFunctions,
                    continuation: first.continuation, resolutions: resolveAll(first, 1) }));
                assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            }
            assert.deepEqual(await audience('publish-v1').run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 1) }),
            { status: 'completed', value: 1 });
        });

    test('createSignedContinuationCodec: verificationSecrets accept the previous key; short '
        + 'keys throw', T, async () => {
            const oldKey = 'o'.repeat(32);
            const newKey = 'n'.repeat(32);
            const hostFunctions = { a: { ask: asking() } };
            const source = 'return await a.ask("go")';
            const before = createRunner({ continuationCodec:
                createSignedContinuationCodec({ secret: oldKey }) });
            const first = await before.run({ source, hostFunctions });
            const rotated = createRunner({ continuationCodec: createSignedContinuationCodec({
                secret: newKey, verificationSecrets: [oldKey] }) });
            assert.deepEqual(await rotated.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'rotated') }),
            { status: 'completed', value: 'rotated' });
            const newOnly = createRunner({ continuationCodec:
                createSignedContinuationCodec({ secret: newKey }) });
            assertRunError(await failure(newOnly.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 1) })),
            RunProtocolError, 'RUN_PROTOCOL_ERROR');
            // New tokens are signed with the new key only.
            const fresh = await rotated.run({ source, hostFunctions });
            assertRunError(await failure(before.run({ source, hostFunctions,
                continuation: fresh.continuation, resolutions: resolveAll(fresh, 1) })),
            RunProtocolError, 'RUN_PROTOCOL_ERROR');
            assert.equal((await newOnly.run({ source, hostFunctions,
                continuation: fresh.continuation, resolutions: resolveAll(fresh, 1) })).value, 1);
            const message = 'Continuation secret must contain at least 32 bytes of key material.';
            for (const options of [{ secret: 'short' },
                { secret: newKey, verificationSecrets: ['short'] }]) {
                assert.throws(() => createSignedContinuationCodec(options), (e) => {
                    assertTypeError(e, message);
                    return true;
                });
            }
        });

    test('createSignedContinuationCodec and continuationSecret with one key are interchangeable',
        T, async () => {
            const hostFunctions = { a: { ask: asking() } };
            const source = 'return await a.ask("go")';
            const viaCodec = createRunner({ continuationCodec:
                createSignedContinuationCodec({ secret: SECRET }) });
            const first = await viaCodec.run({ source, hostFunctions });
            assert.deepEqual(await runner.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'same') }),
            { status: 'completed', value: 'same' });
        });

    // An in-memory ContinuationStorage that records each call.
    function memoryStorage() {
        const entries = new Map();
        const calls = [];
        return { entries, calls, storage: {
            set(key, value) {
                calls.push('set');
                assert.equal(typeof key, 'string');
                assert.equal(typeof value.expiresAtMs, 'number');
                assert.ok('state' in value);
                entries.set(key, { value, claim: undefined });
            },
            acquire(key, claimId) {
                calls.push('acquire');
                const entry = entries.get(key);
                if (entry === undefined || entry.claim !== undefined) {
                    return undefined;
                }
                entry.claim = claimId;
                return entry.value;
            },
            consume(key, claimId) {
                calls.push('consume');
                if (entries.get(key)?.claim === claimId) {
                    entries.delete(key);
                }
            },
            release(key, claimId) {
                calls.push('release');
                const entry = entries.get(key);
                if (entry?.claim === claimId) {
                    entry.claim = undefined;
                }
            },
        } };
    }

    test('createStoredContinuationCodec: set on interrupt, acquire and consume on resume; a '
        + 'second resume is RunProtocolError', T, async () => {
        const { entries, calls, storage } = memoryStorage();
        const stored = createRunner({
            continuationCodec: createStoredContinuationCodec({ storage }) });
        const log = [];
        const hostFunctions = { a: { ask: asking(log) } };
        const source = 'return await a.ask("go")';
        const first = await stored.run({ source, hostFunctions });
        assert.equal(first.status, 'interrupted');
        assert.equal(typeof first.continuation, 'string');
        assert.deepEqual(calls, ['set']);
        assert.equal(entries.size, 1);
        assert.deepEqual(await stored.run({ source, hostFunctions,
            continuation: first.continuation, resolutions: resolveAll(first, 'once') }),
        { status: 'completed', value: 'once' });
        assert.deepEqual(calls, ['set', 'acquire', 'consume']);
        assert.equal(entries.size, 0);
        const again = await failure(stored.run({ source, hostFunctions,
            continuation: first.continuation, resolutions: resolveAll(first, 'twice') }));
        assertRunError(again, RunProtocolError, 'RUN_PROTOCOL_ERROR');
        assert.equal(log.length, 2, 'the second resume invoked nothing');
    });

    test('createStoredContinuationCodec: a resume that fails validation releases the claim; '
        + 'the token still resumes', T, async () => {
        const { calls, storage } = memoryStorage();
        const stored = createRunner({
            continuationCodec: createStoredContinuationCodec({ storage }) });
        const hostFunctions = { a: { ask: asking() } };
        const source = 'return await a.ask("go")';
        const first = await stored.run({ source, hostFunctions });
        const wrong = await failure(stored.run({ source: `${source} `, hostFunctions,
            continuation: first.continuation, resolutions: resolveAll(first, 1) }));
        assertRunError(wrong, RunProtocolError, 'RUN_PROTOCOL_ERROR');
        assert.deepEqual(calls, ['set', 'acquire', 'release']);
        assert.deepEqual(await stored.run({ source, hostFunctions,
            continuation: first.continuation, resolutions: resolveAll(first, 2) }),
        { status: 'completed', value: 2 });
    });

    test('custom continuationCodec: any token type; the state survives a JSON round trip', T,
        async () => {
            const encoded = [];
            const codec = {
                encode: (state) => {
                    const box = { box: JSON.stringify(state) };
                    encoded.push(box);
                    return box;
                },
                decode: (token) => JSON.parse(token.box),
            };
            const custom = createRunner({ continuationCodec: codec });
            const hostFunctions = { a: { ask: asking() } };
            const source = 'return await a.ask("go")';
            const first = await custom.run({ source, hostFunctions });
            assert.equal(first.continuation, encoded[0]);
            assert.deepEqual(await custom.run({ source, hostFunctions,
                continuation: first.continuation, resolutions: resolveAll(first, 'custom') }),
            { status: 'completed', value: 'custom' });
        });
});

describe('synchronous host functions', () => {
    const store = new Map();
    let syncContexts = [];
    const syncRunner = createRunner({ continuationSecret: SECRET, syncHostFunctions: { fs: {
        write: (key, value) => {
            store.set(key, value);
        },
        read: async (key) => {
            await new Promise((resolve) => setTimeout(resolve, 10));
            return store.get(key);
        },
        where: () => {
            const { hostFunctionName, requestIndex } = getHostFunctionContext();
            syncContexts.push({ hostFunctionName, requestIndex });
            return requestIndex;
        },
        interrupt: () => getHostFunctionContext().interrupt({ no: 1 }),
        boom: () => {
            throw new Error('sync secret');
        },
    } } });

    test('syncHostFunctions: the guest gets the value without await, async handlers included', T,
        async () => {
            const result = await syncRunner.run({ source: `
                fs.write('/a', { x: 1n });
                const v = fs.read('/a');
                return [v, typeof v.then];` });
            assert.deepEqual(result, { status: 'completed', value: [{ x: 1n }, 'undefined'] });
        });

    test('syncHostFunctions: context name and requestIndex shared with async calls', T,
        async () => {
            syncContexts = [];
            const result = await syncRunner.run({ hostFunctions: { t: { x: () => 1 } },
                source: 'const a = fs.where(); await t.x(); return [a, fs.where()]' });
            assert.deepEqual(result.value, [1, 3]);
            assert.deepEqual(syncContexts, [{ hostFunctionName: 'fs.where', requestIndex: 1 },
                { hostFunctionName: 'fs.where', requestIndex: 3 }]);
        });

    test('syncHostFunctions: interrupt is RunProtocolError, even when the guest catches', T,
        async () => {
            for (const source of ['return fs.interrupt()',
                'try { fs.interrupt(); } catch (e) { return "caught"; }']) {
                const error = await failure(syncRunner.run({ source }));
                assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
                assert.equal(error.message, 'Synchronous host functions cannot interrupt a run.');
            }
        });

    test('syncHostFunctions: a throwing handler is sanitised like an asynchronous one', T,
        async () => {
            const caught = await syncRunner.run({ source: guestCatch('fs.boom()') });
            assert.deepEqual(caught.value, { isError: true, name: 'Error',
                message: 'Host function failed.',
                code: AIRLOCK ? undefined : 'RUN_HOST_FUNCTION_ERROR' });
            const error = await failure(syncRunner.run({ source: 'fs.boom()' }));
            assertBaseRunError(error, 'RUN_HOST_FUNCTION_ERROR');
            assert.equal(error.message, 'Host function failed.');
        });

    test('syncHostFunctions: a namespace both sync and async is a TypeError; plain run() has '
        + 'none', T, async () => {
        assertTypeError(await failure(syncRunner.run({ source: 'return 1',
            hostFunctions: { fs: { extra: () => 1 } } })),
        'Host function namespace "fs" cannot be both asynchronous and synchronous.');
        assert.deepEqual(await run({ source: 'return typeof fs' }),
            { status: 'completed', value: 'undefined' });
    });
});

describe('modules', () => {
    const MODULES = {
        '/lib/value.js': 'export const value = 42; export default "dflt";',
        '/lib/b.js': 'import { value } from "./value.js"; export const doubled = value * 2;',
    };

    // A loader over MODULES that records normalize and load calls; identity given (even
    // undefined) or a fixed one.
    // AIRLOCK: no top-level await in a module: its last statement's promise is the default
    // export, which the run awaits.
    const tla = (source) => (AIRLOCK ? source.replace(/await ([^;]+);$/, 'export default $1;') :
        source);

    function loader(calls, ...identity) {
        return {
            identity: identity.length > 0 ? identity[0] : 'compat-modules-v1',
            normalize: (specifier, importer) => {
                calls.push(['normalize', specifier, importer]);
                const base = importer.startsWith('/') ? importer : '/lib/entry.js';
                return new URL(specifier, `file://${base}`).pathname;
            },
            load: async (specifier) => {
                calls.push(['load', specifier]);
                if (!(specifier in MODULES)) {
                    throw new Error(`secret path ${specifier} not found`);
                }
                return MODULES[specifier];
            },
        };
    }

    test('sourceType module: completes with value undefined after side effects; return is a '
        + 'SyntaxError', T, async () => {
        const seen = [];
        const result = await run({ sourceType: 'module',
            hostFunctions: { t: { put: (v) => seen.push(v) } },
            source: tla('const x = 5; export const y = x; await t.put(y);') });
        assert.deepEqual(result, { status: 'completed', value: undefined });
        assert.deepEqual(seen, [5]);
        const error = await failure(run({ sourceType: 'module', source: 'return 1' }));
        assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
        assert.equal(error.name, 'SyntaxError');
        const thrown = await failure(run({ sourceType: 'module',
            source: 'throw new Error("mod err")' }));
        assertBaseRunError(thrown, 'RUN_USER_SOURCE_ERROR');
        assert.equal(thrown.message, 'mod err');
    });

    test('moduleLoader: static imports through normalize(specifier, importer) and load; a '
        + 'loader makes the source a module', T, async () => {
        const calls = [];
        const seen = [];
        const result = await run({ moduleLoader: loader(calls),
            hostFunctions: { t: { put: (v) => seen.push(v) } },
            source: tla('import { doubled } from "./b.js"; await t.put(doubled);') });
        assert.deepEqual(result, { status: 'completed', value: undefined });
        assert.deepEqual(seen, [84]);
        assert.deepEqual(calls, [
            ['normalize', './b.js', '<entry>'],
            ['load', '/lib/b.js'],
            ['normalize', './value.js', '/lib/b.js'],
            ['load', '/lib/value.js'],
        ]);
    });

    test('moduleLoader: function-body with dynamic import returns a value; each module loads '
        + 'once per run', T, async () => {
        const calls = [];
        const result = await run({ sourceType: 'function-body', moduleLoader: loader(calls),
            source: `const m = await import('./b.js'); const v = await import('./value.js');
                return [m.doubled, v.default, v.value];` });
        assert.deepEqual(result, { status: 'completed', value: [84, 'dflt', 42] });
        assert.deepEqual(calls, [
            ['normalize', './b.js', 'run.js'],
            ['load', '/lib/b.js'],
            ['normalize', './value.js', '/lib/b.js'],
            ['load', '/lib/value.js'],
            ['normalize', './value.js', 'run.js'],
        ]);
    });

    test('moduleLoader: dynamic import inside a module', T, async () => {
        const seen = [];
        const result = await run({ moduleLoader: loader([]),
            hostFunctions: { t: { put: (v) => seen.push(v) } },
            source: AIRLOCK ? 'export default import("./b.js").then((m) => t.put(m.doubled));' :
                'const m = await import("./b.js"); await t.put(m.doubled);' });
        assert.deepEqual(result, { status: 'completed', value: undefined });
        assert.deepEqual(seen, [84]);
    });

    test('moduleLoader: load failures reach the guest redacted as "Host bridge request failed."',
        T, async () => {
            const caught = await run({ sourceType: 'function-body', moduleLoader: loader([]),
                source: guestCatch('await import("./missing.js")') });
            assert.deepEqual(caught.value, { isError: true, name: 'Error',
                message: 'Host bridge request failed.', code: undefined });
            const error = await failure(run({ moduleLoader: loader([]),
                source: 'import { x } from "./missing.js";' }));
            assertBaseRunError(error, 'RUN_USER_SOURCE_ERROR');
            assert.equal(error.message, 'Host bridge request failed.');
            assert.ok(!error.stack.includes('secret'));
        });

    test('moduleLoader: without normalize the raw specifier is loaded', T, async () => {
        const loaded = [];
        const result = await run({ source: tla('import { v } from "./v"; await t.put(v);'),
            hostFunctions: { t: { put: (v) => loaded.push(['put', v]) } },
            moduleLoader: { load: (specifier) => {
                loaded.push(['load', specifier]);
                return 'export const v = 1;';
            } } });
        assert.deepEqual(result, { status: 'completed', value: undefined });
        assert.deepEqual(loaded, [['load', './v'], ['put', 1]]);
    });

    test('moduleLoader: a loader without load, or an unknown sourceType, is a TypeError', T,
        async () => {
            assertTypeError(await failure(run({ source: 'return 1', moduleLoader: {} })),
                'Invalid moduleLoader configuration.');
            assertTypeError(await failure(run({ source: 'return 1', sourceType: 'script' })),
                'Invalid sourceType configuration.');
        });

    test('imports without a loader fail with RUN_USER_SOURCE_ERROR', T, async () => {
        const dynamic = await failure(run({ source: 'return (await import("./b.js")).doubled' }));
        assertBaseRunError(dynamic, 'RUN_USER_SOURCE_ERROR');
        const staticImport = await failure(run({ sourceType: 'module',
            source: 'import { a } from "./a.js";' }));
        assertBaseRunError(staticImport, 'RUN_USER_SOURCE_ERROR');
    });

    test('moduleLoader and continuations: identity required; loads are replayed on resume; '
        + 'another identity is RunProtocolError', T, async () => {
        const runner = createRunner({ continuationSecret: SECRET });
        const hostFunctions = { a: { ask: asking() } };
        const source = tla('import { doubled } from "./b.js"; await a.ask(doubled);');
        for (const identity of [undefined, '']) {
            const error = await failure(runner.run({ source, hostFunctions,
                moduleLoader: loader([], identity) }));
            assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
            assert.equal(error.message,
                'A module loader must have a non-empty identity to create a continuation.');
        }
        const first = await runner.run({ source, hostFunctions, moduleLoader: loader([]) });
        assert.equal(first.status, 'interrupted');
        assert.deepEqual(first.interruptions[0].arguments, [84]);
        const calls = [];
        assert.deepEqual(await runner.run({ source, hostFunctions, moduleLoader: loader(calls),
            continuation: first.continuation, resolutions: resolveAll(first, true) }),
        { status: 'completed', value: undefined });
        assert.deepEqual(calls, [], 'module loads come from the continuation');
        const error = await failure(runner.run({ source, hostFunctions,
            moduleLoader: loader([], 'compat-modules-v2'), continuation: first.continuation,
            resolutions: resolveAll(first, true) }));
        assertRunError(error, RunProtocolError, 'RUN_PROTOCOL_ERROR');
    });
});

describe('results and console', () => {
    test('isRunInterruptedResult: true for interrupted results only', T, async () => {
        const runner = createRunner({ continuationSecret: SECRET });
        const interrupted = await runner.run({ source: 'return await a.ask()',
            hostFunctions: { a: { ask: asking() } } });
        const completed = await run({ source: 'return 1' });
        assert.equal(isRunInterruptedResult(interrupted), true);
        assert.equal(isRunInterruptedResult(completed), false);
        assert.equal(isRunInterruptedResult({ status: 'interrupted', interruptions: [],
            continuation: 'token' }), true);
        for (const value of [null, undefined, 'interrupted', { status: 'interrupted' },
            { status: 'interrupted', interruptions: [] },
            { status: 'interrupted', interruptions: {}, continuation: 'token' },
            { status: 'completed', value: 1 }]) {
            assert.equal(isRunInterruptedResult(value), false, JSON.stringify(value));
        }
    });

    test('console: log, info and debug go to stdout, error to stderr; the result holds none', T,
        async () => {
            const { code, stdout, stderr } = await runChild(`
                const R = await import(process.env.COMPAT_IMPL_URL);
                const result = await R.run({ source: \`
                    console.log('log line', 1, 'two');
                    console.info('info line');
                    console.debug('debug line');
                    console.error('error line');
                    return 7;\` });
                process.stdout.write('RESULT ' + JSON.stringify(result) + '\\n');`);
            assert.equal(code, 0, stderr);
            const { result, rest } = childResult(stdout);
            assert.deepEqual(result, { status: 'completed', value: 7 });
            const lines = rest.split('\n');
            for (const line of ['log line 1 two', 'info line', 'debug line']) {
                assert.ok(lines.includes(line), `stdout has "${line}": ${rest}`);
            }
            assert.ok(!rest.includes('error line'));
            assert.ok(stderr.split('\n').includes('error line'), `stderr: ${stderr}`);
        });
});
