// desk.test.js - the desk's rules in a real browser: a key with no desk role gets a clear page
// and the key stays in sessionStorage only; the author of a version sees Approve disabled with
// the reason; batch approval sends one decision per item (one audit record each); and guest
// text (source, console, host call arguments, error message and stack, comments, description)
// containing HTML is shown as text and never runs; its bidirectional and invisible characters
// are shown marked.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { approvedTemplate, launch, newPage, runStatus, shot, signIn, until, world } from './lib.js';

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

test('sign-in: a bad key, a key without a desk role, the key kept in sessionStorage only', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await page.goto(w.a.url + '/');
        await page.getByLabel('API key').fill('ak_000000000000_' + 'a'.repeat(64));
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').getByText('That key was refused').waitFor();
        await shot(page, 'signin');
        for (const who of ['nora', 'zed']) {
            await signIn(page, w.a.url, '/approvals', w.keys[who]);
            await page.getByRole('heading', { name: 'This key has no role on the desk' }).waitFor();
            await page.locator('.norole strong', { hasText: who }).waitFor();
            assert.equal(await page.locator('#nav a').count(), 0);
            if (who === 'nora') {
                await shot(page, 'no-role');
            }
            await page.getByRole('button', { name: 'Sign in with another key' }).click();
            await page.getByLabel('API key').waitFor();
        }
        await signIn(page, w.a.url, '/', w.keys.bob);
        await page.waitForURL(/\/approvals$/);
        const stored = await page.evaluate(() => ({ s: sessionStorage.getItem('airlock.key'), l: localStorage.length, url: location.href }));
        assert.equal(stored.s, w.keys.bob);
        assert.equal(stored.l, 0);
        assert.ok(!stored.url.includes(w.keys.bob));
        // bob is an approver, not an auditor or admin: no audit or admin page is offered
        assert.deepEqual(await page.locator('#nav a').allTextContents(), ['Overview', 'Approvals 0', 'Templates', 'Runs']);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByLabel('API key').waitFor();
        assert.equal(await page.evaluate(() => sessionStorage.getItem('airlock.key')), null);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('the author cannot approve their own version: Approve is disabled and says why', { timeout: 60000 }, async () => {
    const w = await world({ people: [['olga', 'author']] });
    const { ctx, page } = await newPage(browser);
    try {
        await w.a.ok('POST', '/v1/principals/olga/roles', { role: 'approver', department: 'finance' });
        await w.a.ok('POST', '/v1/templates', { name: 'own', department: 'finance', description: 'olga writes and approves' }, w.keys.olga);
        await w.a.ok('POST', '/v1/templates/own/versions', { source: 'return 1;\n' }, w.keys.olga);
        await w.a.ok('POST', '/v1/templates/own/versions/1/submit', {}, w.keys.olga);
        await signIn(page, w.a.url, '/templates/own/versions/1', w.keys.olga);
        const approve = page.getByRole('button', { name: 'Approve', exact: true });
        await approve.waitFor();
        assert.equal(await approve.isDisabled(), true);
        await page.locator('#approve-why', { hasText: 'you wrote it' }).waitFor();
        assert.equal(await approve.getAttribute('aria-describedby'), 'approve-why');
        assert.match(await approve.getAttribute('title'), /you wrote it/);
        assert.equal(await page.getByRole('button', { name: 'Reject' }).isEnabled(), true);
        await shot(page, 'own-version');
        // another approver may
        await signIn(page, w.a.url, '/templates/own/versions/1', w.keys.bob);
        await page.getByRole('button', { name: 'Approve', exact: true }).click();
        await page.locator('h1 .badge', { hasText: 'approved' }).waitFor();
        // an auditor is offered no decision at all
        await signIn(page, w.a.url, '/templates/own/versions/1', w.keys.eve);
        await page.locator('h1 .badge', { hasText: 'approved' }).waitFor();
        assert.equal(await page.getByRole('button', { name: /Approve|Reject|Revoke/ }).count(), 0);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('batch approve: each selected item is its own decision and audit record; deny with a comment', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'batch', 'const rs = await Promise.all([shop.refund("o-1", 1), shop.refund("o-2", 2), shop.refund("o-3", 3)]);\nreturn rs.length;\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'batch', wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        // decided items stay, marked, until the list is next refreshed: count the open ones
        const items = page.locator('li.approval:not(.decided)', { hasText: run.id });
        await until('three items', async () => (await items.count()) === 3);
        await page.locator('#pending-badge', { hasText: '3' }).waitFor();
        // the batch controls appear once something is selected
        assert.equal(await page.getByRole('button', { name: 'Approve selected' }).count(), 0);
        for (let i = 0; i < 3; i++) {
            await items.nth(i).getByRole('checkbox').check();
        }
        await page.getByLabel('Comment for the selected').fill('batch ok');
        await page.getByRole('button', { name: 'Approve selected' }).click();
        await until('the items to leave', async () => (await items.count()) === 0);
        await page.getByRole('status').filter({ hasText: '3 approved.' }).waitFor();
        const done = await runStatus(w, run.id, 'completed');
        assert.equal(done.value, 3);
        const recs = (await w.a.ok('GET', '/v1/audit?run=' + run.id + '&action=approval.approve')).records;
        assert.equal(recs.length, 3);
        assert.deepEqual(recs.map((r) => r.actor), ['bob', 'bob', 'bob']);
        assert.equal(new Set(recs.map((r) => r.details.approval)).size, 3);
        assert.ok(recs.every((r) => r.details.comment === 'batch ok'));

        // Deny: the guest's call throws "denied: COMMENT"
        await approvedTemplate(w, 'settled', 'const rs = await Promise.allSettled([shop.refund("o-1", 1), shop.refund("o-2", 2), shop.refund("o-3", 3)]);\n' +
            'return rs.map((r) => (r.status === "fulfilled" ? "refunded " + r.value.refunded : r.reason.message));\n');
        const run2 = await w.a.ok('POST', '/v1/runs', { template: 'settled', wait: false }, w.keys['agent-7']);
        await runStatus(w, run2.id, 'awaiting_approval');
        // they wait behind the bar while the decided items are shown
        await page.getByRole('button', { name: '3 new approvals', exact: true }).click();
        const items2 = page.locator('li.approval:not(.decided)', { hasText: run2.id });
        await until('three more items', async () => (await items2.count()) === 3);
        assert.equal(await page.locator('li.approval.decided').count(), 0);
        await items2.first().getByLabel('Comment').fill('not this one');
        await items2.first().getByRole('button', { name: 'Deny' }).click();
        await until('two left', async () => (await items2.count()) === 2);
        for (let i = 0; i < 2; i++) {
            await items2.first().getByRole('button', { name: 'Approve' }).click();
            await until('one fewer', async () => (await items2.count()) === 1 - i);
        }
        const settled = await runStatus(w, run2.id, 'completed');
        assert.equal(settled.value.filter((v) => v === 'denied: not this one').length, 1);
        assert.equal(settled.value.filter((v) => v.startsWith('refunded o-')).length, 2);
        const denied = (await w.a.ok('GET', '/v1/audit?run=' + run2.id + '&action=approval.deny')).records;
        assert.deepEqual(denied.map((r) => [r.actor, r.details.comment]), [['bob', 'not this one']]);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

const IMG = '<img src=x onerror="window.__pwned=(window.__pwned||0)+1;console.log(\'PWNED\')">';
const SCRIPT = '<script>window.__pwned=(window.__pwned||0)+1;console.log("PWNED")</script>';

test('guest text with HTML in it is shown as text and never runs', { timeout: 90000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    const pwned = [];
    page.on('console', (m) => {
        if (m.text().includes('PWNED')) {
            pwned.push(m.text());
        }
    });
    page.on('dialog', (d) => {
        pwned.push('dialog ' + d.message());
        d.dismiss();
    });
    const clean = async (what) => {
        const state = await page.evaluate(() => ({
            pwned: window.__pwned, imgs: document.querySelectorAll('main img, main script, main iframe').length,
        }));
        assert.equal(state.pwned, undefined, what + ': guest HTML ran');
        assert.equal(state.imgs, 0, what + ': guest HTML became elements');
        assert.deepEqual(pwned, [], what);
    };
    try {
        const source = '// ' + IMG + '\nconst s = ' + JSON.stringify(SCRIPT) + ';\nconsole.log(input.p);\nconsole.log(s);\n' +
            'await shop.orders(input.p);\nawait shop.refund(input.p, 1);\nthrow new Error(input.p + s);\n';
        await approvedTemplate(w, 'xss', source, { description: 'desc ' + IMG + SCRIPT });
        const run = await w.a.ok('POST', '/v1/runs', { template: 'xss', input: { p: IMG }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');

        // the inbox: the arguments
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        const item = page.locator('li.approval', { hasText: run.id });
        await item.locator('pre.args', { hasText: IMG.replace(/"/g, '\\"') }).waitFor();
        await clean('inbox');
        await item.getByLabel('Comment').fill(IMG + SCRIPT);
        await item.getByRole('button', { name: 'Approve' }).click();
        await item.locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        const failed = await runStatus(w, run.id, 'failed');
        assert.ok(failed.error.message.includes(IMG + SCRIPT));

        // the review page: source, description, approval comment
        await w.a.ok('POST', '/v1/templates/xss/versions', { source: source + '// ' + SCRIPT + '\n', functions: ['shop.orders', 'shop.refund'] }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/xss/versions/2/submit', {}, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/xss/versions/2/reject', { comment: IMG }, w.keys.carol);
        await page.goto(w.a.url + '/templates/xss/versions/1');
        await page.locator('.code .line', { hasText: '// ' + IMG }).waitFor();
        await page.locator('.code .line', { hasText: JSON.stringify(SCRIPT) }).waitFor();
        await page.locator('.description', { hasText: 'desc ' + IMG + SCRIPT }).waitFor();
        await clean('version 1');
        await page.goto(w.a.url + '/templates/xss/versions/2');
        await page.locator('q.comment', { hasText: IMG }).waitFor();
        await page.locator('#diff .diff-add', { hasText: SCRIPT }).waitFor();
        await clean('version 2');
        await page.goto(w.a.url + '/templates');
        await page.getByText('desc ' + IMG + SCRIPT).waitFor();
        await clean('templates');

        // the run: input, console, error and stack, approval comment (as bob), host calls (as eve)
        await page.goto(w.a.url + '/runs/' + run.id);
        await page.locator('pre.input', { hasText: IMG.replace(/"/g, '\\"') }).waitFor();
        await page.locator('.console .text', { hasText: IMG }).first().waitFor();
        await page.locator('.console .text', { hasText: SCRIPT }).waitFor();
        await page.locator('pre.error-message', { hasText: IMG + SCRIPT }).waitFor();
        await page.locator('pre.stack').waitFor();
        await page.locator('#approvals td', { hasText: IMG + SCRIPT }).waitFor();
        await clean('run as approver');
        await signIn(page, w.a.url, '/runs/' + run.id, w.keys.eve);
        await page.locator('#host-calls pre.args', { hasText: IMG.replace(/"/g, '\\"') }).first().waitFor();
        await page.locator('pre.error-message', { hasText: IMG + SCRIPT }).waitFor();
        await shot(page, 'xss-run');
        await clean('run as auditor');

        // the audit log, a record's details opened
        await page.goto(w.a.url + '/audit?run=' + run.id);
        const rec = page.locator('tr.record[data-action="approval.approve"]');
        await rec.getByRole('button', { name: 'Details' }).click();
        await page.locator('tr.details:not([hidden]) pre', { hasText: 'onerror' }).waitFor();
        await clean('audit');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('hidden characters in source, arguments, input and console are shown marked, never as they act', { timeout: 90000 }, async () => {
    // "o-1\u202e05" shows as "o-150" to an approver who reads it raw; a zero-width space in a
    // source is invisible. Each is shown as a marked code point, and the version page warns.
    const w = await world();
    const { ctx, page } = await newPage(browser);
    const raw = async (locator) => {
        const t = await locator.evaluate((e) => e.textContent);
        assert.ok(!/[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/.test(t), 'a hidden character shown as it is: ' + JSON.stringify(t));
        return t;
    };
    try {
        const source = '// refunds\u200b of paid orders\nconsole.log("order " + input.p);\nawait shop.refund(input.p, 1);\nreturn input.p;\n';
        await approvedTemplate(w, 'hidden', source);
        const run = await w.a.ok('POST', '/v1/runs', { template: 'hidden', input: { p: 'o-1\u202e05' }, wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');

        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        const args = page.locator('li.approval', { hasText: run.id }).locator('pre.args');
        await args.locator('.hidden-char', { hasText: 'U+202E' }).waitFor();
        assert.ok((await raw(args)).includes('o-1U+202E05'));

        await page.goto(w.a.url + '/templates/hidden/versions/1');
        await page.locator('.notice-error', { hasText: 'invisible or bidirectional characters' }).waitFor();
        const line = page.locator('.code .line', { hasText: '// refunds' });
        await line.locator('.hidden-char', { hasText: 'U+200B' }).waitFor();
        await raw(page.locator('.code'));
        await shot(page, 'hidden-source');

        await page.goto(w.a.url + '/runs/' + run.id);
        await page.locator('pre.input .hidden-char', { hasText: 'U+202E' }).waitFor();
        await page.locator('.console .text .hidden-char', { hasText: 'U+202E' }).waitFor();
        await raw(page.locator('main'));
        // a source without any has no warning
        await approvedTemplate(w, 'plain', 'return 1;\n');
        await page.goto(w.a.url + '/templates/plain/versions/1');
        await page.locator('.code .line', { hasText: 'return 1;' }).waitFor();
        assert.equal(await page.locator('.notice-error').count(), 0);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('admin: a principal and its key (shown once, with a copy button), a grant, a key revoked, a policy', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await signIn(page, w.a.url, '/admin', w.keys.admin);
        const np = page.getByRole('form', { name: 'New principal' });
        await np.getByLabel('Name').fill('frank');
        await np.getByRole('button', { name: 'Create principal' }).click();
        const key = await page.locator('#new-key').textContent();
        assert.match(key, /^ak_[0-9a-f]{12}_/);
        await page.getByRole('button', { name: 'Copy' }).click();
        await page.locator('.newkey [role=status]', { hasText: /Copied|Selected/ }).waitFor();
        await shot(page, 'admin-new-key');
        assert.equal((await w.a.ok('GET', '/v1/me', undefined, key)).name, 'frank');

        const grant = page.getByRole('form', { name: 'Grant a role' });
        await grant.getByLabel('Principal').selectOption('frank');
        await grant.getByLabel('Role').selectOption('approver');
        await grant.getByLabel('Department').selectOption('finance');
        await grant.getByRole('button', { name: 'Grant' }).click();
        const row = page.locator('tr[data-principal="frank"]');
        await row.getByText('approver in finance').waitFor();
        assert.deepEqual((await w.a.ok('GET', '/v1/me', undefined, key)).roles, [{ role: 'approver', department: 'finance' }]);

        const prefix = key.split('_')[1];
        await row.getByRole('button', { name: 'Revoke key ' + prefix }).click();
        await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
        await row.getByText('(revoked)').waitFor();
        assert.equal((await w.a.req('GET', '/v1/me', undefined, key)).status, 401);
        await page.reload();
        await row.waitFor();
        assert.equal(await page.locator('#new-key').count(), 0, 'the key is shown once');

        const nd = page.getByRole('form', { name: 'New department' });
        await nd.getByLabel('Name').fill('ops');
        await nd.getByRole('button', { name: 'Create department' }).click();
        await page.getByLabel('Autonomy of ops').selectOption('supervised');
        await page.getByLabel('Allow ad-hoc runs in ops').check();
        await page.locator('tr', { has: page.getByLabel('Autonomy of ops') }).getByRole('button', { name: 'Save policy' }).click();
        await page.getByText('Saved the policy of ops.').waitFor();
        const ops = (await w.a.ok('GET', '/v1/departments')).find((d) => d.name === 'ops');
        assert.equal(ops.autonomy, 'supervised');
        assert.equal(ops.allow_adhoc, true);

        // an auditor reads the same tables and is offered no change
        await signIn(page, w.a.url, '/admin', w.keys.eve);
        await page.locator('tr[data-principal="frank"]').waitFor();
        await page.getByText('Read only: changes need the admin role.').waitFor();
        assert.equal(await page.getByRole('button', { name: /Create|Grant|New key|Revoke|Save/ }).count(), 0);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('keyboard only: sign in, reach an item\'s Approve button with Tab, see its focus outline, press Enter; cancel a run', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'keys', 'return await shop.refund("o-2", 5);\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'keys', wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await page.goto(w.a.url + '/approvals');
        await page.getByLabel('API key').waitFor();
        assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
        await page.keyboard.type(w.keys.bob);
        await page.keyboard.press('Enter');
        const item = page.locator('li.approval', { hasText: run.id });
        // a fresh list holds its buttons for half a second; Tab passes disabled ones by
        await until('Approve enabled', async () => item.getByRole('button', { name: 'Approve' }).isEnabled());
        let focused = '';
        for (let i = 0; i < 40 && focused !== 'Approve'; i++) {
            await page.keyboard.press('Tab');
            focused = await page.evaluate(() => document.activeElement.textContent);
        }
        assert.equal(focused, 'Approve');
        const outline = await page.evaluate(() => {
            const s = getComputedStyle(document.activeElement);
            return { style: s.outlineStyle, width: parseFloat(s.outlineWidth), visible: document.activeElement.matches(':focus-visible') };
        });
        assert.deepEqual(outline, { style: 'solid', width: 3, visible: true });
        await page.keyboard.press('Enter');
        await item.locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        await runStatus(w, run.id, 'completed');

        // an approver cancels a waiting run from its inspector, after a confirmation
        const run2 = await w.a.ok('POST', '/v1/runs', { template: 'keys', wait: false }, w.keys['agent-7']);
        await runStatus(w, run2.id, 'awaiting_approval');
        await page.goto(w.a.url + '/runs/' + run2.id);
        await page.getByRole('button', { name: 'Cancel run' }).click();
        const dialog = page.getByRole('dialog');
        await dialog.getByText('its pending approvals are cancelled').waitFor();
        assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 1, 'the opener hides behind the dialog');
        await dialog.getByRole('button', { name: 'Cancel run' }).click();
        await page.locator('h1 .badge', { hasText: 'cancelled' }).waitFor();
        assert.equal((await w.a.ok('GET', '/v1/runs/' + run2.id)).error.code, 'ABORTED');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('a supervised run waits in the inbox for its start and runs once approved', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'sup', 'return await shop.orders("pending");\n', { version: { autonomy: 'supervised' } });
        await signIn(page, w.a.url, '/approvals', w.keys.carol);
        const run = await w.a.ok('POST', '/v1/runs', { template: 'sup', wait: false }, w.keys['agent-7']);
        assert.equal(run.status, 'awaiting_approval');
        const item = page.locator('li.approval', { hasText: run.id });
        await item.getByRole('heading', { name: 'Start of a supervised run' }).waitFor();
        assert.equal(await item.locator('pre.args').count(), 0);
        await item.getByRole('button', { name: 'Approve' }).click();
        await item.locator('.item-status', { hasText: 'Approved by you.' }).waitFor();
        const done = await runStatus(w, run.id, 'completed');
        assert.deepEqual(done.value, [{ id: 'o-3', customer: 'acme', amount: 5, status: 'pending' }]);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});
