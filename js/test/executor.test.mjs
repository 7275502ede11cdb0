// executor.test.mjs - createExecutor against a real airlockd: refused while the department
// disallows ad-hoc runs, then code (a body, or codemode's arrow function) runs with the
// connector functions the providers name, in each providers form; logs, the run's error, a run
// that waits for a person (answered at once, or waited for and approved), bad input.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { airlock, until, World } from './world.mjs';

const { createExecutor, functionNames, toBody } = airlock;
let w;

before(async () => {
    w = await World.start();
});

after(async () => {
    await w?.stop();
});

function executor(options) {
    return createExecutor({ url: w.url, key: w.keys['agent-7'], ...options });
}

test('refused while the department does not allow ad-hoc runs, allowed once it does', async () => {
    const r = await executor().execute('return 1');
    assert.equal(r.result, undefined);
    assert.match(r.error, /^ADHOC_DISABLED: /);
    assert.equal(r.run, undefined);

    await w.client('admin').departments.setPolicy('finance', { allow_adhoc: true });
    const ok = await executor().execute('return 1');
    assert.equal(ok.error, undefined);
    assert.equal(ok.result, 1);
    assert.equal(ok.run.department, 'finance', 'the agent\'s one department');
    assert.equal(ok.run.template, null);
});

test('a body and codemode\'s arrow function both run, with their logs', async () => {
    const ex = executor();
    const body = await ex.execute('console.log("hi", 1); console.warn("careful"); return 1 + 1;');
    assert.equal(body.result, 2);
    assert.deepEqual(body.logs, ['hi 1', '[warn] careful']);

    let called = false;
    const shopFns = { orders: async () => { called = true; } };
    const arrow = await ex.execute(
        'async () => {\n  const o = await shop.orders("paid");\n  return o.map((x) => x.id);\n};',
        [{ name: 'shop', fns: shopFns }]);
    assert.equal(arrow.error, undefined);
    assert.deepEqual(arrow.result, ['o-1', 'o-2']);
    assert.equal(called, false, 'the function object is a name: the connector served the call');
    assert.deepEqual(arrow.run.host_calls.map((c) => c.function), ['shop.orders']);
});

test('every providers form names the functions; an unnamed one does not exist', async () => {
    const ex = executor();
    const code = 'return (await shop.orders("pending")).length';
    for (const providers of [['shop.orders'], { shop: ['orders'] }, { shop: { orders() {} } },
        [{ name: 'shop', fns: { orders: async () => 0 } }]]) {
        const r = await ex.execute(code, providers);
        assert.equal(r.result, 1, JSON.stringify(providers) + ': ' + r.error);
    }
    const none = await ex.execute(code);
    assert.match(none.error, /'shop' is not defined/);
    const other = await ex.execute('return await shop.refund("o-1", 1)', ['shop.orders']);
    assert.match(other.error, /not a function|undefined/);

    assert.deepEqual(functionNames({ search: async () => 1, shop: ['orders', 'orders'] }),
        ['codemode.search', 'shop.orders']);
    for (const bad of [['nodot'], ['a.b.c'], [42], { shop: [1] }, { shop: 'orders' },
        ['1x.y']]) {
        const r = await ex.execute('return 1', bad);
        assert.match(r.error, /providers/, JSON.stringify(bad));
        assert.equal(r.run, undefined);
    }
});

test('a failing run: its error message and the logs before it', async () => {
    const r = await executor().execute('console.error("before"); throw new TypeError("boom");');
    assert.equal(r.result, undefined);
    assert.equal(r.error, 'boom');
    assert.deepEqual(r.logs, ['[error] before']);
    assert.equal(r.run.error.code, 'USER_ERROR');
    assert.equal(r.run.error.name, 'TypeError');

    const syntax = await executor().execute('async () => { return 1 +; }');
    assert.equal(syntax.run.error.code, 'USER_ERROR');
    assert.equal(syntax.run.error.name, 'SyntaxError');

    const connector = await executor().execute('return await shop.fail("no stock")', ['shop.fail']);
    assert.match(connector.error, /no stock/);
    const notString = await executor().execute(42);
    assert.match(notString.error, /code must be a string/);
});

test('a run that waits for a person: answered at once, or waited for until approved', async () => {
    const code = 'return await shop.refund("o-2", 5)';
    const now = await executor().execute(code, ['shop.refund']);
    assert.equal(now.run.status, 'awaiting_approval');
    assert.equal(now.error, `run ${now.run.id} is awaiting approval (${now.run.approvals[0]})`);
    await w.client('agent-7').runs.cancel(now.run.id);

    const bob = w.client('bob');
    const pending = executor({ approvalWaitMs: 20000 }).execute(code, { shop: ['refund'] });
    const [approval] = await until('the refund\'s approval', async () => {
        const open = (await bob.approvals.list({ status: 'pending' }))
            .filter((a) => a.run !== now.run.id);
        return open.length ? open : null;
    });
    assert.deepEqual(approval.args, ['o-2', 5]);
    await bob.approvals.approve(approval.id, 'ok');
    const done = await pending;
    assert.equal(done.error, undefined);
    assert.deepEqual(done.result, { refunded: 'o-2', amount: 5 });
    assert.equal(done.run.id, approval.run);
});

test('the department: named, unknown, or not to be guessed', async () => {
    assert.equal((await executor({ department: 'finance' }).execute('return 3')).result, 3);
    const unknown = await executor({ department: 'nope' }).execute('return 3');
    assert.match(unknown.error, /^(FORBIDDEN|NOT_FOUND): /);
    const bob = createExecutor({ url: w.url, key: w.keys.bob });
    assert.match((await bob.execute('return 1')).error, /bob is an agent of no department/);
    const closed = createExecutor({ url: 'http://127.0.0.1:1', key: 'ak_x', department: 'finance' });
    assert.match((await closed.execute('return 1')).error, /^NETWORK_ERROR: /);
    const slow = executor({ timeoutMs: 200 });
    assert.match((await slow.execute('return await shop.slow(20000)', ['shop.slow'])).error,
        /^TIMEOUT: /);
});

test('toBody keeps a body and calls an arrow function, lines in place', () => {
    assert.equal(toBody('return 1'), 'return 1');
    assert.equal(toBody('const f = async () => 1;\nreturn f()'), 'const f = async () => 1;\nreturn f()');
    assert.equal(toBody('async () => {\n  return 1;\n};'), 'return await (async () => {\n  return 1;\n}\n)();');
    assert.equal(toBody('x => x'), 'return await (x => x\n)();');
});
