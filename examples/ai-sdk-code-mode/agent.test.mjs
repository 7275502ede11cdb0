// agent.test.mjs - the shop agent of agent.mjs driven by the AI SDK's mock language model: no
// network, no provider. The scripted model answers the prompt with a code_mode program that
// calls both plain tools at once and then the refund, which needs approval; once the program's
// outcome comes back as code_mode's tool result, it writes its answer from that outcome alone.
// The shop records every call, so the test sees what the sandboxed program really did.
//
// EXPECT_RUN_IMPL (run-test.sh sets it) names the package that must be installed as `run`:
// `run` for the real one, `@airlock/run` once overridden.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { MockLanguageModelV4 } from 'ai/test';

import { createShopAgent } from './agent.mjs';

const QUESTION = 'Refund order A-2 in full, and tell me what paid orders brought in.';

const SIGNING_KEY = 'example signing key shared by every process that resumes';

// TypeScript, as code mode's tool description invites: run strips the types before QuickJS
// sees the program (on Node 20 with the typescript package, hence its place in package.json).
const PROGRAM = `type Order = { id: string; amount: number };
const [order, paid] = await Promise.all([
    tools.getOrder({ id: 'A-2' }),
    tools.listOrders({ status: 'paid' }),
]);
const refund = await tools.refundOrder({ id: order.id, amount: order.amount });
return {
    refund,
    paidOrders: paid.length,
    paidTotal: paid.reduce((sum: number, o: Order) => sum + o.amount, 0),
};`;

// Both paid orders refunded at once: two approvals in one batch of the sandbox.
const REFUND_ALL_PAID = `const paid = await tools.listOrders({ status: 'paid' });
const refunds = await Promise.all(paid.map((o: { id: string; amount: number }) =>
    tools.refundOrder({ id: o.id, amount: o.amount })));
return { refunds };`;

// The application's data: three orders, and a log of every call the tools made.
function fakeShop() {
    const orders = new Map([
        ['A-1', { id: 'A-1', customer: 'Ada', amount: 20.5, status: 'paid' }],
        ['A-2', { id: 'A-2', customer: 'Bob', amount: 42, status: 'paid' }],
        ['A-3', { id: 'A-3', customer: 'Cy', amount: 7, status: 'pending' }],
    ]);
    const calls = [];
    return {
        calls,
        async getOrder(id) {
            calls.push(['getOrder', id]);
            return { ...orders.get(id) };
        },
        async listOrders(status) {
            calls.push(['listOrders', status]);
            return [...orders.values()].filter((o) => o.status === status).map((o) => ({ ...o }));
        },
        async refund(id, amount) {
            calls.push(['refund', id, amount]);
            orders.get(id).status = 'refunded';
            return { id, refunded: amount };
        },
    };
}

const USAGE = {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 10, text: 10, reasoning: 0 },
};

// A model that writes `program` for the person's question, then answers from the tool result.
function scriptedModel(program) {
    return new MockLanguageModelV4({
        doGenerate: async ({ prompt }) => {
            const last = prompt.at(-1);
            if (last.role === 'user') {
                return {
                    content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'code_mode',
                        input: JSON.stringify({ js: program }) }],
                    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
                    usage: USAGE,
                    warnings: [],
                };
            }
            const { output } = last.content.find((p) => p.type === 'tool-result');
            let text;
            if (output.type === 'json' && output.value.refunds !== undefined) {
                text = `Refunded ${output.value.refunds.map((r) => `${r.refunded} EUR on ${r.id}`)
                    .join(' and ')}.`;
            } else if (output.type === 'json') {
                const { refund, paidOrders, paidTotal } = output.value;
                text = `Refunded ${refund.refunded} EUR on order ${refund.id}; ` +
                    `${paidOrders} paid orders came to ${paidTotal} EUR.`;
            } else {
                text = `No refund was made: ${output.type}: ${output.reason}`;
            }
            return {
                content: [{ type: 'text', text }],
                finishReason: { unified: 'stop', raw: 'stop' },
                usage: USAGE,
                warnings: [],
            };
        },
    });
}

function startShop(program = PROGRAM) {
    const shop = fakeShop();
    const model = scriptedModel(program);
    const agent = createShopAgent({ model, shop, signingKey: SIGNING_KEY });
    return { shop, model, agent };
}

const approvalReply = (request, approved, reason) => ({
    role: 'tool',
    content: [{ type: 'tool-approval-response', approvalId: request[0].content[1].approvalId,
        approved, ...(reason === undefined ? {} : { reason }) }],
});

// concurrent calls reach the host in an order the test does not rely on
const sorted = (calls) => [...calls].sort((a, b) =>
    JSON.stringify(a).localeCompare(JSON.stringify(b)));

// The package Node loads for code mode's `import 'run'`: the nearest node_modules/run above
// @ai-sdk/code-mode, as Node's resolution finds it.
function runImplementation() {
    let dir = path.dirname(fileURLToPath(import.meta.resolve('@ai-sdk/code-mode')));
    for (;;) {
        const manifest = path.join(dir, 'node_modules', 'run', 'package.json');
        if (existsSync(manifest)) {
            const { name, version } = JSON.parse(readFileSync(manifest, 'utf8'));
            return { name, version, dir: path.dirname(manifest) };
        }
        const up = path.dirname(dir);
        assert.notEqual(up, dir, 'no node_modules/run above @ai-sdk/code-mode');
        dir = up;
    }
}

test('the run implementation is the expected one', (t) => {
    const impl = runImplementation();
    t.diagnostic(`run implementation: ${impl.name}@${impl.version} (${impl.dir})`);
    if (process.env.EXPECT_RUN_IMPL) {
        assert.equal(impl.name, process.env.EXPECT_RUN_IMPL);
    }
});

test('the model is offered code_mode alone, with the shop\'s tools in its description',
    async () => {
        const { model, agent } = startShop();
        await agent.ask(QUESTION);
        const offered = model.doGenerateCalls[0].tools;
        assert.deepEqual(offered.map((t) => t.name), ['code_mode']);
        for (const name of ['getOrder', 'listOrders', 'refundOrder']) {
            assert.match(offered[0].description, new RegExp(`\\b${name}: \\(input`));
        }
    });

test('the program runs the plain tools, and the refund stops it for a person', async () => {
    const { shop, model, agent } = startShop();
    const turn = await agent.ask(QUESTION);

    assert.deepEqual(sorted(shop.calls), [['getOrder', 'A-2'], ['listOrders', 'paid']]);
    assert.equal(turn.text, undefined);
    // the request as the AI SDK shows any tool approval: the nested call and its request
    const [message] = turn.approvalRequest;
    assert.equal(message.role, 'assistant');
    const [call, request] = message.content;
    assert.equal(call.type, 'tool-call');
    assert.equal(call.toolName, 'refundOrder');
    assert.deepEqual(call.input, { id: 'A-2', amount: 42 });
    assert.equal(request.type, 'tool-approval-request');
    assert.equal(request.toolCallId, call.toolCallId);
    assert.equal(typeof request.approvalId, 'string');
    // the turn ended at the interrupt: the model never saw it
    assert.equal(model.doGenerateCalls.length, 1);
});

test('approved, the program resumes past the refund without calling the other tools again, ' +
    'and the answer holds the tools\' results', async () => {
    const { shop, model, agent } = startShop();
    const paused = await agent.ask(QUESTION);
    const before = [...shop.calls];

    // the conversation is kept as JSON between requests and resumed by another agent instance
    const stored = JSON.parse(JSON.stringify(paused));
    const later = createShopAgent({ model, shop, signingKey: SIGNING_KEY });
    const turn = await later.resume(stored.messages, [approvalReply(stored.approvalRequest, true)]);

    assert.deepEqual(shop.calls, [...before, ['refund', 'A-2', 42]]);
    assert.equal(turn.approvalRequest, undefined);
    assert.equal(turn.text, 'Refunded 42 EUR on order A-2; 2 paid orders came to 62.5 EUR.');
    const result = turn.messages.flatMap((m) => (m.role === 'tool' ? m.content : []))
        .find((p) => p.toolName === 'code_mode');
    assert.deepEqual(result.output, { type: 'json', value: {
        refund: { id: 'A-2', refunded: 42 }, paidOrders: 2, paidTotal: 62.5 } });
    assert.equal(model.doGenerateCalls.length, 2);
});

test('denied, the refund never runs and the model is told why', async () => {
    const { shop, model, agent } = startShop();
    const paused = await agent.ask(QUESTION);
    const before = [...shop.calls];

    const turn = await agent.resume(paused.messages,
        [approvalReply(paused.approvalRequest, false, 'refunds over 40 EUR need a manager')]);

    assert.deepEqual(shop.calls, before);
    assert.match(turn.text, /^No refund was made: execution-denied: /);
    assert.match(turn.text, /refundOrder.*denied: refunds over 40 EUR need a manager/);
    assert.equal(model.doGenerateCalls.length, 2);
});

test('two refunds at once: each waits for its own answer, and both run once both are approved',
    async () => {
        const { shop, model, agent } = startShop(REFUND_ALL_PAID);
        const first = await agent.ask('Refund every paid order.');
        assert.deepEqual(shop.calls, [['listOrders', 'paid']]);
        assert.deepEqual(first.approvalRequest[0].content[0].input, { id: 'A-1', amount: 20.5 });

        const second = await agent.resume(first.messages,
            [approvalReply(first.approvalRequest, true)]);
        // code mode holds the first answer until the batch's last one: nothing ran yet
        assert.deepEqual(shop.calls, [['listOrders', 'paid']]);
        assert.deepEqual(second.approvalRequest[0].content[0].input, { id: 'A-2', amount: 42 });
        assert.notEqual(second.approvalRequest[0].content[1].approvalId,
            first.approvalRequest[0].content[1].approvalId);

        const done = await agent.resume(second.messages,
            [approvalReply(second.approvalRequest, true)]);
        assert.deepEqual(sorted(shop.calls),
            [['listOrders', 'paid'], ['refund', 'A-1', 20.5], ['refund', 'A-2', 42]]);
        assert.equal(done.text, 'Refunded 20.5 EUR on A-1 and 42 EUR on A-2.');
        assert.equal(model.doGenerateCalls.length, 2);
    });
