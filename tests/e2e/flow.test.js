// flow.test.js - the whole flow in a real browser: an author writes a new version in the UI
// and submits it; an approver signs in, reviews the diff and approves; an agent (over the API)
// runs it; the sensitive call appears in the approver's inbox, is approved there and the run
// completes; the auditor browses the audit log and sees every step with the right actors; a
// revoked version's waiting run leaves the inbox. Screenshots of each page go to the build folder.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { approvedTemplate, launch, newPage, runStatus, shot, signIn, TIMEOUT, until, world } from './lib.js';

const V1 = 'const paid = await shop.orders("paid");\nreturn paid.length;\n';
const V2 = '// refund the first paid order\nconst paid = await shop.orders("paid");\nconsole.log("paid orders: " + paid.length);\n' +
    'const r = await shop.refund(paid[0].id, input.amount);\nreturn { refunded: r.refunded, amount: r.amount };\n';

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

test('author, approver, agent, inbox, auditor, revocation', { timeout: 120000 }, async () => {
    const w = await world();
    const base = w.a.url;
    const pages = [];
    try {
        await approvedTemplate(w, 'refund', V1);

        // the author writes version 2 in the UI and submits it
        const au = await newPage(browser);
        pages.push(au);
        await signIn(au.page, base, '/templates/refund', w.keys.alice);
        await au.page.getByLabel('Source').fill(V2);
        await au.page.getByLabel('Functions').fill('shop.orders, shop.refund');
        await au.page.getByLabel('Input schema (JSON)').fill('{"type":"object","properties":{"amount":{"type":"number","maximum":50}},"required":["amount"]}');
        await shot(au.page, 'template-new-version');
        await au.page.getByRole('button', { name: 'Create version' }).click();
        await au.page.waitForURL(/\/templates\/refund\/versions\/2$/);
        await au.page.getByRole('button', { name: 'Submit for approval' }).click();
        await au.page.locator('h1 .badge', { hasText: 'submitted' }).waitFor();
        let v2 = await w.a.ok('GET', '/v1/templates/refund/versions/2');
        assert.equal(v2.state, 'submitted');
        assert.equal(v2.author, 'alice');
        assert.equal(v2.source, V2);

        // the approver reviews the diff against v1 and approves
        const ap = await newPage(browser);
        pages.push(ap);
        await signIn(ap.page, base, '/templates/refund/versions/2', w.keys.bob);
        const diff = ap.page.locator('#diff');
        await diff.getByText('Against the last approved version, refund v1.').waitFor();
        await diff.locator('.diff-add', { hasText: 'const r = await shop.refund(paid[0].id, input.amount);' }).waitFor();
        await diff.locator('.diff-del', { hasText: 'return paid.length;' }).waitFor();
        await diff.getByText('input schema changed').waitFor();
        // the source, numbered, with the sensitive function marked
        await ap.page.locator('.code .line').nth(4).locator('.ln', { hasText: '5' }).waitFor();
        await ap.page.locator('.functions li', { hasText: 'shop.refund' }).locator('.badge', { hasText: 'sensitive' }).waitFor();
        await shot(ap.page, 'template-review');
        await diff.scrollIntoViewIfNeeded();
        await shot(ap.page, 'template-diff');
        await ap.page.getByLabel('Comment').fill('refund cap checked');
        await ap.page.getByRole('button', { name: 'Approve', exact: true }).click();
        await ap.page.locator('h1 .badge', { hasText: 'approved' }).waitFor();
        v2 = await w.a.ok('GET', '/v1/templates/refund/versions/2');
        assert.equal(v2.approved_by, 'bob');
        assert.equal(v2.approve_comment, 'refund cap checked');

        // the agent runs it over the API; its sensitive call waits in the inbox
        await ap.page.getByRole('link', { name: /^Approvals/ }).click();
        await ap.page.waitForURL(/\/approvals$/);
        const run = await w.a.ok('POST', '/v1/runs', { template: 'refund', input: { amount: 30 }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        const item = ap.page.locator('li.approval', { hasText: run.id });
        await item.waitFor({ timeout: TIMEOUT });
        await item.locator('code.function', { hasText: 'shop.refund' }).waitFor();
        assert.equal(await item.locator('pre.args').textContent(), JSON.stringify(['o-1', 30], null, 2));
        await item.locator('.requested-by', { hasText: 'agent-7' }).waitFor();
        await ap.page.locator('#pending-badge', { hasText: '1' }).waitFor();
        await shot(ap.page, 'approvals');
        await item.getByLabel('Comment').fill('ok to refund o-1');
        await item.getByRole('button', { name: 'Approve' }).click();
        // marked where it is (nothing in the inbox moves while shown)
        await item.locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        const done = await runStatus(w, run.id, 'completed');
        assert.deepEqual(done.value, { refunded: 'o-1', amount: 30 });

        // the approver opens the run
        await ap.page.goto(base + '/runs/' + run.id);
        await ap.page.locator('h1 .badge', { hasText: 'completed' }).waitFor();
        await ap.page.locator('.console', { hasText: 'paid orders: 2' }).waitFor();
        await ap.page.locator('#approvals', { hasText: 'bob' }).waitFor();

        // the auditor sees every step with its actor
        const ad = await newPage(browser);
        pages.push(ad);
        await signIn(ad.page, base, '/audit?template=refund', w.keys.eve);
        await ad.page.locator('#chain', { hasText: /^Chain verified up to seq \d+$/ }).waitFor();
        const actorOf = async (action) => {
            const rows = ad.page.locator('tr.record[data-action="' + action + '"] td.actor');
            await rows.first().waitFor();
            return rows.allTextContents();
        };
        assert.deepEqual(await actorOf('version.create'), ['alice', 'alice']);
        assert.deepEqual(await actorOf('version.submit'), ['alice', 'alice']);
        assert.deepEqual(await actorOf('version.approve'), ['bob', 'carol']);
        await shot(ad.page, 'audit');
        await ad.page.goto(base + '/audit?run=' + run.id);
        assert.deepEqual(await actorOf('run.start'), ['agent-7']);
        assert.deepEqual(await actorOf('approval.request'), ['airlockd']);
        assert.deepEqual(await actorOf('approval.approve'), ['bob']);
        assert.deepEqual(await actorOf('run.end'), ['airlockd']);
        assert.equal((await actorOf('run.host_call')).length, 3);
        // a record's details
        const rec = ad.page.locator('tr.record[data-action="approval.approve"]');
        await rec.getByRole('button', { name: 'Details' }).click();
        await ad.page.locator('tr.details:not([hidden]) pre', { hasText: 'ok to refund o-1' }).waitFor();
        // the export is the JSON Lines file of the whole log
        const [download] = await Promise.all([ad.page.waitForEvent('download'), ad.page.getByRole('button', { name: 'Export JSON Lines' }).click()]);
        const lines = (await streamText(await download.createReadStream())).trim().split('\n').map((l) => JSON.parse(l));
        assert.ok(lines.some((r) => r.action === 'approval.approve' && r.actor === 'bob'));
        assert.equal(lines[lines.length - 1].action, 'audit.checkpoint');

        // the auditor's run inspector shows the host calls in order
        await ad.page.goto(base + '/runs/' + run.id);
        await ad.page.locator('#host-calls table.calls tbody tr').nth(2).waitFor();
        assert.deepEqual(await ad.page.locator('#host-calls table.calls tbody tr td:nth-child(2)').allTextContents(),
            ['shop.orders', 'shop.refund', 'shop.refund']);
        assert.equal(await ad.page.locator('#host-calls svg.timeline rect').count(), 3);
        await shot(ad.page, 'run');
        await ad.page.goto(base + '/runs');
        await ad.page.locator('table.runs a', { hasText: run.id }).waitFor();
        await shot(ad.page, 'runs');
        await ad.page.goto(base + '/overview');
        await ad.page.locator('svg.chart rect.bar').first().waitFor();
        await shot(ad.page, 'overview');

        // a waiting run of a version revoked in the UI is marked no longer pending in the open
        // inbox and leaves its count
        await ap.page.goto(base + '/approvals');
        const run2 = await w.a.ok('POST', '/v1/runs', { template: 'refund', input: { amount: 10 }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run2.id, 'awaiting_approval');
        const item2 = ap.page.locator('li.approval', { hasText: run2.id });
        await item2.waitFor();
        const rv = await newPage(browser);
        pages.push(rv);
        await signIn(rv.page, base, '/templates/refund/versions/2', w.keys.carol);
        await rv.page.getByLabel('Reason').fill('refunds paused');
        await rv.page.getByRole('button', { name: 'Revoke…' }).click();
        const dialog = rv.page.getByRole('dialog');
        await dialog.getByText('Running and waiting runs of this version will be cancelled').waitFor();
        await shot(rv.page, 'revoke-confirm');
        assert.equal(await rv.page.getByRole('button', { name: 'Revoke' }).count(), 1, 'the opener hides behind the dialog');
        await dialog.getByRole('button', { name: 'Revoke' }).click();
        await rv.page.locator('h1 .badge', { hasText: 'revoked' }).waitFor();
        await item2.locator('.item-status', { hasText: 'No longer pending' }).waitFor();
        await ap.page.locator('#pending-badge', { hasText: '0' }).waitFor();
        const cancelled = await runStatus(w, run2.id, 'cancelled');
        assert.equal(cancelled.error.code, 'ABORTED');
        // the overview counts the runs and lists the revoked version
        await ad.page.goto(base + '/overview');
        await ad.page.locator('ul.revoked a', { hasText: 'refund v2' }).waitFor();
        assert.equal(await ad.page.locator('#runs-hour').textContent(), '2');
        assert.equal(await ad.page.locator('#pending-count').textContent(), '0');

        // the admin pages
        const adm = await newPage(browser);
        pages.push(adm);
        await signIn(adm.page, base, '/admin', w.keys.admin);
        await adm.page.locator('table.connectors', { hasText: 'shop' }).waitFor();
        const html = await adm.page.content();
        assert.ok(!html.includes('shop-signing-secret'), 'the connector secret shows');
        await shot(adm.page, 'admin');
        for (const p of pages) {
            assert.deepEqual(p.page.problems, []);
        }
    } finally {
        for (const p of pages) {
            await p.ctx.close();
        }
        await w.stop();
    }
});

async function streamText(stream) {
    const chunks = [];
    for await (const c of stream) {
        chunks.push(c);
    }
    return Buffer.concat(chunks).toString('utf8');
}
void until;
