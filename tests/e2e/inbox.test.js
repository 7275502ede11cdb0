// inbox.test.js - the inbox holds still under the approver's pointer. A poll that brings a new
// approval must not move the item being aimed at: the new one waits behind an "N new approvals"
// bar; an item decided elsewhere is marked where it is; a decision button acts on its own item
// only and ignores clicks for half a second after the layout changed. The page's clock is
// Playwright's fake one, paused: polls and the half second pass only when the test says so, so
// no verdict depends on how busy the machine is.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { approvedTemplate, launch, newPage, runStatus, shot, signIn, until, world } from './lib.js';

const POLL_MS = 3000; // app.js
const HOLD_MS = 500; // pages/approvals.js

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

// The pending approval whose first argument is order.
async function pendingOf(w, order) {
    const pending = await w.a.ok('GET', '/v1/approvals?status=pending');
    return pending.find((a) => a.args && a.args[0] === order) || null;
}

async function centre(locator) {
    const b = await locator.boundingBox();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

test('a poll never moves the item under the click: the attacker\'s approval waits behind "1 new approval"', { timeout: 90000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    const posts = [];
    page.on('request', (r) => {
        if (r.method() === 'POST') {
            posts.push(r.url());
        }
    });
    try {
        await approvedTemplate(w, 'refund', 'return await shop.refund(input.order, input.amount);\n');
        const start = async (order, amount) => {
            const run = await w.a.ok('POST', '/v1/runs', { template: 'refund', input: { order, amount }, wait: false }, w.keys['agent-7']);
            await runStatus(w, run.id, 'awaiting_approval');
            return pendingOf(w, order);
        };
        // o-2 first, so the newest-first inbox shows o-1 on top and o-2 below it
        const o2 = await start('o-2', 7);
        const o1 = await start('o-1', 5);

        await page.clock.install();
        await page.clock.pauseAt(Date.now() + 1000);
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        await page.locator('#pending-badge', { hasText: '2' }).waitFor(); // the first poll is in
        const item = (a) => page.locator('li.approval[data-id="' + a.id + '"]');
        await item(o1).waitFor();
        await page.clock.runFor(HOLD_MS + 100);
        const aimed = item(o1).getByRole('button', { name: 'Approve' });
        assert.equal(await aimed.isEnabled(), true);
        const at = await centre(aimed);
        assert.equal(await page.locator('li.approval').first().getAttribute('data-id'), o1.id);

        // the attacker's run asks while the approver aims at o-1; then the poll comes
        const evil = await start('ATTACKER-ORDER', 49999);
        await page.clock.runFor(POLL_MS);
        await page.locator('#pending-badge', { hasText: '3' }).waitFor(); // the poll is in
        // the click lands where o-1's Approve was measured before the poll
        await page.mouse.click(at.x, at.y);
        await until('a decision', async () => (await w.a.ok('GET', '/v1/approvals?status=pending')).length < 3);
        assert.ok(await pendingOf(w, 'ATTACKER-ORDER'), 'the attacker\'s approval was decided');
        assert.equal(await pendingOf(w, 'o-1'), null, 'o-1 is still pending');
        const decided = (await w.a.ok('GET', '/v1/audit?action=approval.approve')).records;
        assert.deepEqual(decided.map((r) => [r.actor, r.details.approval]), [['bob', o1.id]]);
        const bar = page.getByRole('button', { name: '1 new approval', exact: true });
        await bar.waitFor();
        assert.equal(await item(evil).count(), 0, 'the new approval went into the shown list');
        await shot(page, 'inbox-new-approval');
        // o-1 stays where it was, marked, with no button left to press
        await item(o1).locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        assert.equal(await item(o1).getByRole('button', { name: 'Approve' }).isDisabled(), true);
        assert.deepEqual(await centre(aimed), at);

        // opening the bar shows the attacker's item (on top, newest first) and takes away the
        // decided one; for half a second after that change its buttons ignore clicks
        await bar.click();
        const evilApprove = item(evil).getByRole('button', { name: 'Approve' });
        await evilApprove.waitFor();
        assert.equal(await page.locator('li.approval').first().getAttribute('data-id'), evil.id);
        assert.equal(await item(o1).count(), 0);
        assert.equal(await bar.isVisible(), false);
        assert.equal(await evilApprove.isDisabled(), true);
        const evilAt = await centre(evilApprove);
        await page.mouse.click(evilAt.x, evilAt.y);
        await page.clock.runFor(HOLD_MS + 100);
        // a click that had acted would have left the buttons disabled (the request in flight)
        await until('the hold to end', async () => evilApprove.isEnabled());
        assert.deepEqual(posts.filter((u) => u.includes(evil.id)), []);
        assert.ok(await pendingOf(w, 'ATTACKER-ORDER'));

        // decided elsewhere: the attacker's item is marked in place, o-2 below it does not move
        const o2Approve = item(o2).getByRole('button', { name: 'Approve' });
        const o2At = await centre(o2Approve);
        await w.a.ok('POST', '/v1/approvals/' + evil.id + '/deny', { comment: 'not ours' }, w.keys.carol);
        await page.clock.runFor(POLL_MS);
        await item(evil).locator('.item-status', { hasText: 'No longer pending' }).waitFor();
        assert.equal(await evilApprove.isDisabled(), true);
        assert.deepEqual(await centre(o2Approve), o2At, 'o-2 moved');
        await page.clock.runFor(HOLD_MS + 100);
        await o2Approve.click();
        await item(o2).locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        await runStatus(w, o2.run, 'completed');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('a call in doubt after a crash waits in the inbox with its call, and an approver answers it: the run goes on with that value, nothing sent again', { timeout: 90000 }, async () => {
    // docs/server.md "Durable runs": shop.slow is not idempotent; airlockd dies while the call
    // is at the shop, so after the restart the run waits for a person on that call
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'slowly', 'const r = await shop.slow(30000);\nreturn "got " + r;\n', { version: { functions: ['shop.slow'] } });
        const run = await w.a.ok('POST', '/v1/runs', { template: 'slowly', wait: false }, w.keys['agent-7']);
        const key = run.id + ':1';
        await until('the call at the shop', async () => {
            const r = await fetch(w.shop.url + 'calls');
            const calls = await r.json();
            return calls.by_key[key] === 1;
        });
        await w.a.crash();
        const a = await until('the in_doubt approval', async () => {
            const pending = await w.a.ok('GET', '/v1/approvals?status=pending', undefined, w.keys.bob);
            return pending.find((x) => x.kind === 'in_doubt' && x.run === run.id) || null;
        });
        assert.equal(a.function, 'shop.slow');
        assert.deepEqual(a.args, [30000]);
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        const item = page.locator('li.approval[data-id="' + a.id + '"]');
        await item.getByText('Call in doubt').waitFor();
        await item.getByText('shop.slow').first().waitFor();
        await item.getByLabel(/Result it had/).fill('"settled"');
        await item.getByRole('button', { name: 'Answer' }).click();
        const done = await runStatus(w, run.id, 'completed');
        assert.equal(done.value, 'got settled');
        const r = await fetch(w.shop.url + 'calls');
        assert.equal((await r.json()).by_key[key], 1, 'the call in doubt was not sent again');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});
