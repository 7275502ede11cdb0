// airlock_tool.test.mjs - js.agents: the example's tool invoked directly through the SDK's
// FunctionTool.invoke(runContext, inputJson), as the agent loop would invoke it after a model's
// tool call, against a real airlockd with the shop connector. No model, no network but loopback.
// js/CMakeLists.txt copies this file and airlock_tool.mjs beside the example's node_modules.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { RunContext } from '@openai/agents';
import { z } from 'zod';

import { airlockTool } from './airlock_tool.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { World } = await import(pathToFileURL(process.env.AIRLOCK_JS_WORLD ||
    path.join(HERE, '..', '..', 'js', 'test', 'world.mjs')).href);
let w;
let ordersTool;
let refundTool;

before(async () => {
    w = await World.start();
    await w.approvedTemplate('order-totals', {
        source: 'const o = await shop.orders(input.status);\n' +
            'console.log("looked at " + o.length + " orders");\n' +
            'return { orders: o.length, total: o.reduce((s, x) => s + x.amount, 0) };',
        functions: ['shop.orders'],
        input_schema: { type: 'object', properties: { status: { enum: ['paid', 'pending'] } },
            required: ['status'], additionalProperties: false },
    });
    await w.approvedTemplate('refund-order', {
        source: 'return await shop.refund(input.order, input.amount);',
        functions: ['shop.refund'],
        input_schema: { type: 'object', properties: { order: { type: 'string' },
            amount: { type: 'number', maximum: 50 } }, required: ['order', 'amount'] },
    });
    const agent = w.client('agent-7');
    ordersTool = airlockTool({ client: agent, template: 'order-totals',
        description: 'The number and total amount of the shop\'s orders with a status.',
        parameters: z.object({ status: z.string().describe('paid or pending') }) });
    refundTool = airlockTool({ client: agent, template: 'refund-order', name: 'refund',
        description: 'Refund an amount on an order (a person approves each refund).',
        parameters: z.object({ order: z.string(), amount: z.number() }) });
});

after(async () => {
    await w?.stop();
});

test('the tool is a function tool with the template\'s name and a JSON schema', () => {
    assert.equal(ordersTool.type, 'function');
    assert.equal(ordersTool.name, 'order_totals');
    assert.equal(refundTool.name, 'refund');
    assert.deepEqual(ordersTool.parameters.required, ['status']);
});

test('invoked with the model\'s arguments, it runs the approved template', async () => {
    const out = await ordersTool.invoke(new RunContext({}), JSON.stringify({ status: 'paid' }));
    assert.equal(out.status, 'completed');
    assert.deepEqual(out.value, { orders: 2, total: 150 });
    assert.deepEqual(out.console, ['looked at 2 orders']);
    const run = await w.client('agent-7').runs.get(out.run);
    assert.equal(run.template, 'order-totals');
    assert.equal(run.version, 1);
    assert.deepEqual(run.input, { status: 'paid' });
});

test('input the version\'s schema refuses reaches the model with its code', async () => {
    const out = await ordersTool.invoke(new RunContext({}), JSON.stringify({ status: 'lost' }));
    assert.match(out, /^airlock refused the run: INPUT_INVALID: input \/status/);
    const big = await refundTool.invoke(new RunContext({}),
        JSON.stringify({ order: 'o-1', amount: 500 }));
    assert.match(big, /INPUT_INVALID: input \/amount: must be <= 50/);
});

test('a sensitive call: the model hears that a person decides, and the run completes once approved',
    async () => {
        const out = await refundTool.invoke(new RunContext({}),
            JSON.stringify({ order: 'o-2', amount: 20 }));
        assert.equal(out.status, 'awaiting_approval');
        assert.equal(out.approvals.length, 1);
        await w.client('bob').approvals.approve(out.approvals[0], 'fine');
        const done = await w.client('agent-7').runs.wait(out.run);
        assert.deepEqual(done.value, { refunded: 'o-2', amount: 20 });
    });
