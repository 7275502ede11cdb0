// informs.test.js - an inbox item says what the approver decides on: the arguments by the names
// the connector's args_schema gives them (prefixItems titles) and the line of the template that
// made the call; and the run page decides too, for whoever may decide.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { SECRET, approvedTemplate, launch, newPage, runStatus, shot, signIn, world } from './lib.js';

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

const PAY = 'console.log("paying", input.order);\nconst receipt = await ledger.pay(input.order, input.amount);\nreturn receipt;\n';

test('the inbox shows the parameters by name and the line that made the call', { timeout: 90000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await w.a.ok('POST', '/v1/connectors', {
            name: 'ledger', department: 'finance', url: w.shop.url, signing_secret: SECRET,
            functions: { pay: { sensitive: true, args_schema: { type: 'array', minItems: 2, items: false,
                prefixItems: [{ type: 'string', title: 'order' }, { type: 'number', title: 'amount' }] } } },
        });
        await approvedTemplate(w, 'pay', PAY, { version: { functions: ['ledger.pay'] } });
        const run = await w.a.ok('POST', '/v1/runs', { template: 'pay', input: { order: 'o-1', amount: 42 }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        const item = page.locator('li.approval').first();
        await item.waitFor();
        assert.deepEqual(await item.locator('.param-name').allTextContents(), ['order', 'amount']);
        assert.deepEqual(await item.locator('.param-value').allTextContents(), ['"o-1"', '42']);
        assert.equal(await item.locator('.line-number').textContent(), '2');
        assert.equal(await item.locator('.line-text').textContent(), 'const receipt = await ledger.pay(input.order, input.amount);');
        await item.locator('.run-console summary').click();
        assert.match(await item.locator('.run-console').textContent(), /paying o-1/);
        await shot(page, 'inbox-informs');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('the run page approves a waiting call, and the run goes on', { timeout: 90000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'refund', 'const r = await shop.refund(input.order, input.amount);\nreturn r;\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'refund', input: { order: 'o-5', amount: 5 }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await signIn(page, w.a.url, '/runs/' + run.id, w.keys.bob);
        const row = page.locator('#approvals tr[data-id]');
        await row.waitFor();
        assert.equal(await row.locator('.line-number').textContent(), '1');
        await row.getByLabel(/Comment on/).fill('fine from the run page');
        await row.getByRole('button', { name: 'Approve' }).click();
        const done = await runStatus(w, run.id, 'completed');
        assert.deepEqual(done.value, { refunded: 'o-5', amount: 5 });
        const [a] = await w.a.ok('GET', '/v1/approvals?run=' + run.id);
        assert.equal(a.status, 'approved');
        assert.equal(a.decided_by, 'bob');
        assert.equal(a.comment, 'fine from the run page');
        // the page shows the run again, decided
        await page.locator('#approvals .badge-status-approved').waitFor();
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});
