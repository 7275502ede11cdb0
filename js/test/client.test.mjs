// client.test.mjs - Client against a real airlockd with the shop connector: a governed run of an
// approved template, a sensitive call that waits for a person and completes once approved,
// the server's errors as AirlockErrors with their status and code, run values decoded into
// JavaScript values, the client's own timeout, AbortSignal and network failures, the audit.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { airlock, until, World } from './world.mjs';

const { AirlockError, Client } = airlock;
let w;

before(async () => {
    w = await World.start();
});

after(async () => {
    await w?.stop();
});

// Rejects with an AirlockError of this status and code; the error, for more checks.
async function refused(promise, status, code) {
    let err;
    await assert.rejects(promise, (e) => {
        err = e;
        return true;
    });
    assert.ok(err instanceof AirlockError, `${err} is an AirlockError`);
    assert.equal(err.name, 'AirlockError');
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status, err.message);
    return err;
}

const PAID_TOTAL = {
    source: 'const o = await shop.orders(input.status);\n' +
        'console.log("orders: " + o.length);\n' +
        'return { count: o.length, total: o.reduce((s, x) => s + x.amount, 0) };',
    functions: ['shop.orders'],
    input_schema: { type: 'object', properties: { status: { type: 'string' } },
        required: ['status'] },
};

test('a governed run of an approved template', async () => {
    const agent = w.client('agent-7');
    const me = await agent.me();
    assert.equal(me.name, 'agent-7');
    assert.deepEqual(me.roles, [{ role: 'agent', department: 'finance' }]);

    const version = await w.approvedTemplate('paid-total', PAID_TOTAL);
    const run = await agent.runs.start({ template: 'paid-total', input: { status: 'paid' } });
    assert.equal(run.status, 'completed');
    assert.match(run.id, /^run_[0-9a-f]{32}$/);
    assert.equal(run.template, 'paid-total');
    assert.equal(run.version, version);
    assert.equal(run.principal, 'agent-7');
    assert.deepEqual(run.value, { count: 2, total: 150 });
    assert.deepEqual(run.console, [{ level: 'log', text: 'orders: 2' }]);
    assert.equal(run.host_calls.length, 1);
    assert.equal(run.host_calls[0].function, 'shop.orders');
    assert.deepEqual(run.host_calls[0].args, ['paid']);
    assert.equal(run.error, null);

    assert.deepEqual((await agent.runs.get(run.id)).value, run.value);
    const listed = await agent.runs.list({ template: 'paid-total', status: 'completed' });
    assert.deepEqual(listed.map((r) => r.id), [run.id]);

    // what the agent sees of the template, and what it may read of its version
    const [t] = (await agent.templates.list()).filter((x) => x.name === 'paid-total');
    assert.deepEqual(t.versions.map((v) => [v.version, v.state]), [[version, 'approved']]);
    const v = await agent.templates.version('paid-total', version);
    assert.equal(v.source, PAID_TOTAL.source);
    assert.equal(v.approved_by, 'carol');
    assert.match(await agent.templates.types('paid-total'), /declare const shop/);
    const diff = await agent.templates.diff('paid-total', version);
    assert.equal(diff.from, null);
    assert.deepEqual(diff.changes.functions.added, ['shop.orders']);

    // the run in the audit log, which verifies; the export as records and as its exact text
    const eve = w.client('eve');
    const page = await eve.audit.list({ run: run.id });
    const actions = page.records.map((r) => r.action);
    assert.ok(actions.includes('run.start') && actions.includes('run.end'), actions.join());
    assert.equal(page.next, page.records.at(-1).seq);
    const verify = await eve.audit.verify();
    assert.equal(verify.ok, true, JSON.stringify(verify));
    const records = await eve.audit.export();
    assert.equal(records.at(-1).action, 'audit.checkpoint');
    const text = await eve.audit.exportText();
    const lines = text.trim().split('\n');
    assert.equal(lines.length, records.length, 'the log ends with a checkpoint: none added');
    assert.deepEqual(JSON.parse(lines.at(-1)), records.at(-1));
    const cp = await eve.audit.checkpoint();
    assert.match(cp.public_key, /^[0-9a-f]{64}$/);
});

test('a sensitive call waits for a person, then the run completes once approved', async () => {
    await w.approvedTemplate('refund-first', {
        source: 'const o = await shop.orders("paid");\nreturn await shop.refund(o[0].id, input.amount);',
        functions: ['shop.orders', 'shop.refund'],
        input_schema: { type: 'object', properties: { amount: { type: 'number' } } },
    });
    const agent = w.client('agent-7');
    const bob = w.client('bob');
    const ordersBefore = (await w.shopCalls()).by_function['shop.orders'] ?? 0;

    const run = await agent.runs.start({ template: 'refund-first', input: { amount: 30 } });
    assert.equal(run.status, 'awaiting_approval');
    assert.equal(run.approvals.length, 1);
    assert.equal(run.value, null);
    // a wait that gives up at once: the run is still waiting
    await refused(agent.runs.wait(run.id, { waitMs: 0 }), 0, 'WAIT_TIMEOUT');
    const waiting = await agent.runs.wait(run.id, { until: ['awaiting_approval'] });
    assert.equal(waiting.status, 'awaiting_approval');

    const [approval] = await bob.approvals.list({ status: 'pending', run: run.id });
    assert.equal(approval.id, run.approvals[0]);
    assert.equal(approval.kind, 'host_call');
    assert.equal(approval.function, 'shop.refund');
    assert.deepEqual(approval.args, ['o-1', 30]);
    assert.equal(approval.requested_by, 'agent-7');
    // the agent holds no approver role
    await refused(agent.approvals.approve(approval.id), 403, 'FORBIDDEN');
    // only a call in doubt is answered: a sensitive call's approval is refused, still pending
    await refused(bob.approvals.answer(approval.id, { refunded: 'o-1' }, 'it happened'), 409, 'CONFLICT');
    assert.equal((await bob.approvals.list({ run: run.id }))[0].status, 'pending');

    const decided = await bob.approvals.approve(approval.id, 'refund ok');
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decided_by, 'bob');
    assert.equal(decided.comment, 'refund ok');
    await refused(w.client('carol').approvals.deny(approval.id), 409, 'CONFLICT');

    const done = await agent.runs.wait(run.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.value, { refunded: 'o-1', amount: 30 });
    const calls = (await w.shopCalls()).by_function;
    assert.equal(calls['shop.orders'] - ordersBefore, 1, 'the resumed run did not repeat shop.orders');
});

test('a denied approval: the guest call throws "denied: COMMENT"', async () => {
    const agent = w.client('agent-7');
    const run = await agent.runs.start({ template: 'refund-first', input: { amount: 99 } });
    const denied = await w.client('bob').approvals.deny(run.approvals[0], 'over the cap');
    assert.equal(denied.status, 'denied');
    const done = await agent.runs.wait(run.id);
    assert.equal(done.status, 'failed');
    assert.match(done.error.message, /denied: over the cap/);
});

test('error answers are AirlockErrors with the server\'s status, code and request id', async () => {
    const agent = w.client('agent-7');
    const e = await refused(agent.runs.start({ template: 'paid-total', input: { status: 5 } }),
        422, 'INPUT_INVALID');
    assert.match(e.message, /\/status/);
    assert.match(e.requestId, /^req_[0-9a-f]{16}$/);
    assert.equal(e.body.error.code, 'INPUT_INVALID');

    await refused(agent.runs.get('run_' + '0'.repeat(32)), 404, 'NOT_FOUND');
    await refused(agent.runs.start({ template: 'no-such-template' }), 404, 'NOT_FOUND');
    await refused(agent.templates.create({ name: 'x', department: 'finance' }), 403, 'FORBIDDEN');
    await refused(agent.runs.start({ source: 'return 1', department: 'finance' }), 403,
        'ADHOC_DISABLED');
    await refused(new Client(w.url, 'ak_000000000000_' + 'a'.repeat(64)).me(), 401,
        'UNAUTHENTICATED');
    await refused(agent.runs.start({ template: 'paid-total', input: { status: 'x'.repeat(2 << 20) } }),
        413, 'PAYLOAD_TOO_LARGE');

    // four eyes: alice wrote it and cannot approve it, even as an approver
    const alice = w.client('alice');
    await w.client('admin').principals.grant('alice', 'approver', 'finance');
    await alice.templates.create({ name: 'draft-only', department: 'finance' });
    const v = await alice.templates.createVersion('draft-only', { source: 'return 1' });
    await alice.templates.submit('draft-only', v.version);
    const four = await refused(alice.templates.approve('draft-only', v.version), 409, 'CONFLICT');
    assert.match(four.message, /four eyes/);
    // a version the agent may not read (submitted, not approved) is one that does not exist
    const hidden = await refused(agent.runs.start({ template: 'draft-only' }), 404, 'NOT_FOUND');
    assert.match(hidden.message, /^no template draft-only/);
    await refused(alice.templates.createVersion('draft-only', { source: 'return 1', limits:
        { timeout_ms: -1 } }), 400, 'INVALID_REQUEST');

    // revoked: new runs refused
    await w.client('carol').templates.approve('draft-only', v.version, 'fine');
    assert.equal((await agent.runs.start({ template: 'draft-only' })).value, 1);
    const revoked = await w.client('bob').templates.revoke('draft-only', v.version, 'paused');
    assert.equal(revoked.state, 'revoked');
    await refused(agent.runs.start({ template: 'draft-only' }), 409, 'TEMPLATE_REVOKED');
});

test('run values decode to the JavaScript values the guest returned', async () => {
    await w.approvedTemplate('values', {
        source: `const shared = { n: 1 };
const v = { big: 2n ** 64n, date: new Date(0), bad: new Date(NaN), map: new Map([[1, shared]]),
  set: new Set(["a", 2]), bytes: new Uint8Array([1, 2, 3]), nan: NaN, neg: -0, inf: -Infinity,
  undef: undefined, sparse: [1, , 3], re: /a+b/gi, err: new RangeError("r", { cause: shared }),
  shared, own: { $type: "date" } };
v.self = v;
return v;`,
    });
    const run = await w.client('agent-7').runs.start({ template: 'values' });
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const v = run.value;
    assert.equal(v.big, 2n ** 64n);
    assert.ok(v.date instanceof Date && v.date.getTime() === 0);
    assert.ok(v.bad instanceof Date && Number.isNaN(v.bad.getTime()));
    assert.ok(v.map instanceof Map);
    assert.equal(v.map.get(1), v.shared, 'a shared object is one object');
    assert.deepEqual([...v.set], ['a', 2]);
    assert.ok(v.bytes instanceof Uint8Array);
    assert.deepEqual([...v.bytes], [1, 2, 3]);
    assert.ok(Number.isNaN(v.nan));
    assert.ok(Object.is(v.neg, -0));
    assert.equal(v.inf, -Infinity);
    assert.ok('undef' in v && v.undef === undefined);
    assert.ok(!(1 in v.sparse) && v.sparse.length === 3);
    assert.ok(v.re instanceof RegExp && v.re.flags === 'gi' && v.re.source === 'a+b');
    assert.ok(v.err instanceof RangeError && v.err.message === 'r');
    assert.equal(v.err.cause, v.shared);
    assert.deepEqual(v.own, { $type: 'date' });
    assert.equal(v.self, v, 'a cycle is a cycle');
});

test('the client\'s timeout, an AbortSignal and an unreachable server', async () => {
    await w.approvedTemplate('slow', { source: 'return await shop.slow(input.ms);',
        functions: ['shop.slow'] });
    const agent = w.client('agent-7', { timeoutMs: 300 });
    const e = await refused(agent.runs.start({ template: 'slow', input: { ms: 20000 } }), 0,
        'TIMEOUT');
    assert.match(e.message, /within 300 ms/);
    // the run goes on on airlockd: the agent cancels it
    const [slow] = await until('the slow run listed', async () => {
        const running = await agent.runs.list({ template: 'slow', status: 'running' });
        return running.length ? running : null;
    });
    const cancelled = await agent.runs.cancel(slow.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.error.code, 'ABORTED');
    await refused(agent.runs.cancel(slow.id), 409, 'CONFLICT');

    const ctl = new AbortController();
    const pending = agent.runs.start({ template: 'slow', input: { ms: 20000 } },
        { signal: ctl.signal, timeoutMs: 0 });
    ctl.abort();
    await refused(pending, 0, 'ABORTED');
    await refused(agent.me({ signal: AbortSignal.abort() }), 0, 'ABORTED');
    for (const r of await agent.runs.list({ template: 'slow', status: 'running' })) {
        await agent.runs.cancel(r.id);
    }

    await refused(new Client('http://127.0.0.1:1', 'ak_x').me(), 0, 'NETWORK_ERROR');
    assert.throws(() => new Client('ftp://127.0.0.1', 'ak_x'), TypeError);
    assert.throws(() => new Client({ url: w.url, key: '' }), TypeError);
    const two = new Client(w.url + '/', w.keys['agent-7']);
    assert.equal(two.url, w.url);
    assert.equal((await two.me()).name, 'agent-7');
});
