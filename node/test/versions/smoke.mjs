/*
 * smoke.mjs - what an application does first with @airlock/run, run by versions.sh with each
 * Node.js version from a project where the package was just installed from its tarball (this
 * file is copied there, so '@airlock/run' resolves to that project's node_modules). Prints
 * "ok NAME" for each check; the first one that fails throws, and node exits non-zero.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

import {
    createRunner, getHostFunctionContext, isRunInterruptedResult, RunError,
} from '@airlock/run';

const SECRET = 'smoke test continuation secret, 32 bytes or more';
const LIMITS = { timeoutMs: 120_000 }; // generous: the verdict never depends on load

function ok(name) {
    console.log(`ok ${name}`);
}

/* The package in use is the one npm just installed here, addon and worker included. */
const entry = createRequire(import.meta.url).resolve('@airlock/run');
assert.ok(entry.startsWith(path.join(process.cwd(), 'node_modules', '@airlock', 'run') + path.sep),
    `@airlock/run resolved to ${entry}`);
assert.equal(process.env.AIRLOCK_RUN_ADDON, undefined);
assert.equal(process.env.AIRLOCK_WORKER, undefined);
ok(`installed copy in use (node ${process.version}, Node-API ${process.versions.napi})`);

/* A completed run calling a synchronous host function (the guest blocks, Node does not) and
 * an asynchronous one that answers after a timer of this process. */
{
    const runner = createRunner({
        limits: LIMITS,
        syncHostFunctions: { math: { add: (a, b) => a + b } },
    });
    const result = await runner.run({
        source: 'const sum = math.add(2, 3);\n' +
            'const price = await shop.price("tea");\n' +
            'console.log("priced", price);\n' +
            'return { sum, price };',
        hostFunctions: {
            shop: {
                price: async item => {
                    await new Promise(resolve => setTimeout(resolve, 1));
                    return item.length * 10;
                },
            },
        },
    });
    assert.equal(result.status, 'completed');
    assert.deepEqual(result.value, { sum: 5, price: 30 });
    assert.deepEqual(result.console, [{ level: 'log', text: 'priced 30' }]);
    assert.equal(result.stats.hostCalls, 2);
    ok('completed run with a sync and an async host function');
    assert.equal(result.stats.jailed, true);
    ok('result.stats.jailed === true');
}

/* Interrupt for a decision, then resume the continuation on a new runner with the same
 * continuationSecret (as after a restart): the call answered before the interrupt is not made
 * again, and the interrupted function sees the resolution. A runner with another secret
 * refuses the continuation. */
{
    let counted = 0;
    const hostFunctions = {
        ledger: { count: () => ++counted },
        desk: {
            approve: amount => {
                const context = getHostFunctionContext();
                if (!context.resume) {
                    context.interrupt({ amount });
                }
                return context.resume.resolution;
            },
        },
    };
    const source = 'const n = await ledger.count();\n' +
        'const decision = await desk.approve(n * 10);\n' +
        'return { n, decision };';
    const first = await createRunner({ limits: LIMITS, continuationSecret: SECRET })
        .run({ source, hostFunctions });
    assert.ok(isRunInterruptedResult(first), `status ${first.status}`);
    assert.equal(first.interruptions.length, 1);
    const [interruption] = first.interruptions;
    assert.equal(interruption.hostFunctionName, 'desk.approve');
    assert.deepEqual(interruption.arguments, [10]);
    assert.deepEqual(interruption.payload, { amount: 10 });
    assert.equal(typeof first.continuation, 'string');

    const resolutions = [{ interruptionId: interruption.id, value: 'approved' }];
    await assert.rejects(
        createRunner({ limits: LIMITS, continuationSecret: `${SECRET}, but another one` })
            .run({ source, hostFunctions, continuation: first.continuation, resolutions }),
        error => RunError.isInstance(error) && error.code === 'RUN_PROTOCOL_ERROR');
    const second = await createRunner({ limits: LIMITS, continuationSecret: SECRET })
        .run({ source, hostFunctions, continuation: first.continuation, resolutions });
    assert.equal(second.status, 'completed');
    assert.deepEqual(second.value, { n: 1, decision: 'approved' });
    assert.equal(counted, 1);
    ok('interrupt, then resume with continuationSecret (another secret refused)');
}

/* An error the guest throws reaches the caller as a RunError with a stable code. */
{
    const runner = createRunner({ limits: LIMITS });
    let caught;
    try {
        await runner.run({ source: 'throw new RangeError("out of range: " + 7);' });
    } catch (error) {
        caught = error;
    }
    assert.ok(caught instanceof RunError, `caught ${caught}`);
    assert.ok(RunError.isInstance(caught));
    assert.equal(caught.code, 'RUN_USER_SOURCE_ERROR');
    assert.match(caught.message, /out of range: 7/);
    ok('guest error -> RunError RUN_USER_SOURCE_ERROR');
}
