// scenario.js - what an agent does through MCP, told once and run over both transports
// (http.test.js: POST /v1/mcp with StreamableHTTPClientTransport; stdio.test.js: `airlock mcp`
// with StdioClientTransport). Each test gets its own airlockd and shop connector from
// tests/e2e/lib.js, and a client made by the transport's connect(world, key).
//
// The world: department finance (tests/e2e/lib.js) with templates refund (approved; its
// shop.refund is sensitive, its input schema caps amount at 50), paid-orders (approved, no
// input schema), draft-only (a draft), gone (approved, then revoked); department sales with
// sales-report (approved) where agent-7 is no agent.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { approvedTemplate, until, world } from '../e2e/lib.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
// where npm_ci.cmake installed the SDK: AIRLOCK_MCP_DEPS, else the default build folder's
const DEPS = process.env.AIRLOCK_MCP_DEPS || path.join(HERE, '..', '..', 'build', 'tests', 'mcp', 'deps');
if (!fs.existsSync(path.join(DEPS, 'node_modules', '@modelcontextprotocol', 'sdk'))) {
    throw new Error('@modelcontextprotocol/sdk is not installed in ' + DEPS + ': run the mcp.setup test');
}
const require = createRequire(path.join(DEPS, 'package.json'));
export const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
export const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
export const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const REFUND = 'const paid = await shop.orders("paid");\n' +
    'const r = await shop.refund(paid[0].id, input.amount);\nreturn { refunded: r.refunded, amount: r.amount };\n';
const REFUND_SCHEMA = {
    type: 'object', properties: { amount: { type: 'number', maximum: 50 } }, required: ['amount'], additionalProperties: false,
};

export async function mcpWorld() {
    const w = await world();
    const a = w.a;
    await approvedTemplate(w, 'refund', REFUND, { description: 'refunds the first paid order', version: { input_schema: REFUND_SCHEMA } });
    await approvedTemplate(w, 'paid-orders', 'const o = await shop.orders("paid");\nreturn { count: o.length, ids: o.map((x) => x.id) };\n',
        { description: 'the paid orders', version: { functions: ['shop.orders'], input_schema: undefined } });
    await a.ok('POST', '/v1/templates', { name: 'draft-only', department: 'finance', description: 'never approved' }, w.keys.alice);
    await a.ok('POST', '/v1/templates/draft-only/versions', { source: 'return 1' }, w.keys.alice);
    await approvedTemplate(w, 'gone', 'return 1', { description: 'revoked', version: { functions: [] } });
    await a.ok('POST', '/v1/templates/gone/versions/1/revoke', { reason: 'no longer wanted' }, w.keys.bob);
    // sales: its own author and approver; agent-7 is an agent of finance only
    await a.ok('POST', '/v1/departments', { name: 'sales' });
    for (const [name, role] of [['sam', 'author'], ['sue', 'approver']]) {
        const p = await a.ok('POST', '/v1/principals', { name, kind: 'user' });
        w.keys[name] = p.key;
        await a.ok('POST', '/v1/principals/' + name + '/roles', { role, department: 'sales' });
    }
    await a.ok('POST', '/v1/templates', { name: 'sales-report', department: 'sales', description: 'sales' }, w.keys.sam);
    await a.ok('POST', '/v1/templates/sales-report/versions', { source: 'return 2' }, w.keys.sam);
    await a.ok('POST', '/v1/templates/sales-report/versions/1/submit', {}, w.keys.sam);
    await a.ok('POST', '/v1/templates/sales-report/versions/1/approve', {}, w.keys.sue);
    return w;
}

// The tests, each in a fresh world; connect(w, key) answers a connected Client.
export function scenario(test, connect) {
    test('tools/list: the approved templates of the agent\'s departments, get_run, execute_code only with allow_adhoc', async () => {
        const w = await mcpWorld();
        try {
            const c = await connect(w, w.keys['agent-7']);
            const { tools } = await c.listTools();
            assert.deepEqual(tools.map((t) => t.name).sort(), ['get_run', 'paid-orders', 'refund']);
            const refund = tools.find((t) => t.name === 'refund');
            assert.equal(refund.description, 'refunds the first paid order');
            assert.deepEqual(refund.inputSchema, REFUND_SCHEMA);
            // no input schema: any object
            assert.deepEqual(tools.find((t) => t.name === 'paid-orders').inputSchema, { type: 'object' });
            assert.deepEqual(tools.find((t) => t.name === 'get_run').inputSchema.required, ['run']);
            await c.close();

            await w.a.ok('PUT', '/v1/departments/finance/policy', { allow_adhoc: true });
            const c2 = await connect(w, w.keys['agent-7']);
            const after = (await c2.listTools()).tools;
            const exec = after.find((t) => t.name === 'execute_code');
            assert.ok(exec, 'execute_code listed once finance allows ad-hoc code');
            assert.deepEqual(exec.inputSchema.required, ['source', 'functions']);
            const r = await c2.callTool({ name: 'execute_code', arguments: { source: 'return 6 * 7', functions: [] } });
            assert.equal(r.isError, undefined);
            assert.equal(r.content[0].text, '42');
            assert.equal(r.structuredContent.status, 'completed');
            const run = await w.a.ok('GET', '/v1/runs/' + r.structuredContent.run);
            assert.equal(run.template, null);
            assert.equal(run.department, 'finance');
            await c2.close();
        } finally {
            await w.stop();
        }
    });

    test('tools/call of a template: a governed run, listed in /v1/runs and the audit', async () => {
        const w = await mcpWorld();
        try {
            const c = await connect(w, w.keys['agent-7']);
            const r = await c.callTool({ name: 'paid-orders', arguments: {} });
            assert.equal(r.isError, undefined, JSON.stringify(r));
            assert.deepEqual(JSON.parse(r.content[0].text), { count: 2, ids: ['o-1', 'o-2'] });
            assert.equal(r.structuredContent.status, 'completed');
            assert.deepEqual(r.structuredContent.value, { count: 2, ids: ['o-1', 'o-2'] });
            const id = r.structuredContent.run;
            const runs = await w.a.ok('GET', '/v1/runs?template=paid-orders');
            const run = runs.find((x) => x.id === id);
            assert.ok(run, 'the run is listed');
            assert.equal(run.principal, 'agent-7');
            assert.equal(run.status, 'completed');
            assert.equal(run.host_calls.length, 1);
            const audit = await w.a.ok('GET', '/v1/audit?run=' + id);
            const actions = audit.records.map((x) => x.action);
            assert.ok(actions.includes('run.start') && actions.includes('run.end'), JSON.stringify(actions));
            assert.equal(audit.records.find((x) => x.action === 'run.start').actor, 'agent-7');
            // a template of another department, a draft, a revoked one: no tool of the agent's
            for (const name of ['sales-report', 'draft-only', 'gone', 'execute_code']) {
                await assert.rejects(c.callTool({ name, arguments: {} }), (e) => e.code === -32602, name);
            }
            await c.close();
        } finally {
            await w.stop();
        }
    });

    test('a sensitive call: the tool answers at once that the run waits, get_run sees it go on once approved', async () => {
        const w = await mcpWorld();
        try {
            const c = await connect(w, w.keys['agent-7']);
            const r = await c.callTool({ name: 'refund', arguments: { amount: 30 } });
            assert.equal(r.isError, undefined, JSON.stringify(r));
            const { run, status, approvals } = r.structuredContent;
            assert.equal(status, 'awaiting_approval');
            assert.equal(approvals.length, 1);
            assert.match(approvals[0], /^apr_/);
            assert.ok(r.content[0].text.includes(run) && r.content[0].text.includes(approvals[0]), r.content[0].text);
            assert.match(r.content[0].text, /waits for a person/);
            assert.match(r.content[0].text, /get_run/);

            const waiting = await c.callTool({ name: 'get_run', arguments: { run } });
            assert.equal(waiting.structuredContent.status, 'awaiting_approval');
            assert.deepEqual(waiting.structuredContent.approvals, approvals);

            await w.a.ok('POST', '/v1/approvals/' + approvals[0] + '/approve', { comment: 'ok' }, w.keys.bob);
            const done = await until('get_run completed', async () => {
                const g = await c.callTool({ name: 'get_run', arguments: { run } });
                return g.structuredContent.status === 'completed' ? g : null;
            });
            assert.deepEqual(done.structuredContent.value, { refunded: 'o-1', amount: 30 });
            assert.deepEqual(JSON.parse(done.content[0].text), { refunded: 'o-1', amount: 30 });

            // supervised: the run itself waits for a person before it starts
            await w.a.ok('PUT', '/v1/departments/finance/policy', { autonomy: 'supervised' });
            const held = await c.callTool({ name: 'paid-orders', arguments: {} });
            assert.equal(held.isError, undefined);
            assert.equal(held.structuredContent.status, 'awaiting_approval');
            assert.equal(held.structuredContent.approvals.length, 1);
            assert.match(held.content[0].text, /waits for a person/);

            // get_run of no run, or of bad arguments: an error result the model can read
            const none = await c.callTool({ name: 'get_run', arguments: { run: 'run_0000' } });
            assert.equal(none.isError, true);
            assert.match(none.content[0].text, /NOT_FOUND/);
            const wrong = await c.callTool({ name: 'get_run', arguments: { id: run } });
            assert.equal(wrong.isError, true);
            assert.match(wrong.content[0].text, /field run/);
            await c.close();
        } finally {
            await w.stop();
        }
    });

    test('arguments against the input schema: an error result naming the field, and no run', async () => {
        const w = await mcpWorld();
        try {
            const c = await connect(w, w.keys['agent-7']);
            const r = await c.callTool({ name: 'refund', arguments: { amount: 80 } });
            assert.equal(r.isError, true);
            assert.match(r.content[0].text, /^INPUT_INVALID: input \/amount: /);
            const missing = await c.callTool({ name: 'refund', arguments: {} });
            assert.equal(missing.isError, true);
            assert.match(missing.content[0].text, /INPUT_INVALID.*amount/);
            const runs = await w.a.ok('GET', '/v1/runs?template=refund');
            assert.equal(runs.length, 0, 'no run started');
            await c.close();
        } finally {
            await w.stop();
        }
    });
}
