// review.test.js - the desk against what docs/ui.md promises, where a first version fell short:
// four eyes for an author who is no approver, a run's approvals and host calls in its inspector,
// roles re-read while the desk is open, keyboard focus after a decision, the badge's name.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';

import { approvedTemplate, launch, newPage, runStatus, signIn, until, world } from './lib.js';

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

test('review: an author who is not an approver sees Approve disabled on their own version, with the reason', { timeout: 60000 }, async () => {
    // four eyes: the author can never approve their own version, and the button says why;
    // alice holds author in finance only, the common case of an author
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await w.a.ok('POST', '/v1/templates', { name: 'mine', department: 'finance', description: 'alice writes' }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/mine/versions', { source: 'return 1;\n' }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/mine/versions/1/submit', {}, w.keys.alice);
        await signIn(page, w.a.url, '/templates/mine/versions/1', w.keys.alice);
        await page.locator('h1 .badge', { hasText: 'submitted' }).waitFor();
        const approve = page.getByRole('button', { name: 'Approve', exact: true });
        assert.equal(await approve.count(), 1, 'the author sees an Approve button (disabled)');
        assert.equal(await approve.isDisabled(), true);
        await page.getByText('you wrote it').waitFor();
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: a submitted version shows the approver how it replays against the recent runs of the approved one', { timeout: 90000 }, async () => {
    // docs/server.md "Replay before approval": the version's page says it in the CLI's words and
    // lists each run it diverges on, linked, with what the run called and what it calls
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'counts', 'const o = await shop.orders("paid");\nreturn o.length;\n');
        const ids = [];
        for (let i = 0; i < 3; i++) {
            const r = await w.a.ok('POST', '/v1/runs', { template: 'counts' }, w.keys['agent-7']);
            assert.equal(r.status, 'completed');
            ids.push(r.id);
        }
        const v = await w.a.ok('POST', '/v1/templates/counts/versions', { source: 'const o = await shop.orders("refunded");\nreturn o.length;\n', functions: ['shop.orders', 'shop.refund'] }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/counts/versions/' + v.version + '/submit', {}, w.keys.alice);
        const r = await until('the replay', async () => {
            const x = await w.a.req('GET', '/v1/templates/counts/versions/' + v.version + '/replay', undefined, w.keys.bob);
            return x.status === 200 && x.doc.state === 'done' ? x.doc : null;
        }, 60000);
        assert.equal(r.runs, 3);
        assert.equal(r.diverged.length, 3);
        await signIn(page, w.a.url, '/templates/counts/versions/' + v.version, w.keys.bob);
        const card = page.locator('#replay');
        await card.getByText('replays 0 of 3 recent runs identically; diverges on 3 at call 1').waitFor();
        for (const id of ids) {
            await card.getByRole('link', { name: id }).waitFor();
        }
        assert.equal(await card.locator('.replay-diverged tbody tr').count(), 3);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

// 32 runs of 32 sensitive calls each (a run has at most 32 host calls in flight): 1024
// pending approvals, more than GET /v1/approvals answers at once (1000)
async function manyPending(w) {
    await approvedTemplate(w, 'many', 'const ps = [];\nfor (let i = 0; i < 32; i++) ps.push(shop.refund("o-1", i));\nawait Promise.allSettled(ps);\nreturn 32;\n');
    const ids = [];
    for (let i = 0; i < 32; i++) {
        const r = await w.a.ok('POST', '/v1/runs', { template: 'many', wait: false }, w.keys['agent-7']);
        ids.push(r.id);
    }
    for (const id of ids) {
        await runStatus(w, id, 'awaiting_approval');
    }
    const pending = await w.a.ok('GET', '/v1/approvals?status=pending');
    assert.equal(pending.length, 1000, 'the API answers 1000 of the 1024');
    return ids;
}

test('review: the run inspector shows who decided the approvals of a run older than the newest 1000 approvals', { timeout: 120000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'one', 'return await shop.refund("o-2", 5);\n');
        const old = await w.a.ok('POST', '/v1/runs', { template: 'one', wait: false }, w.keys['agent-7']);
        await runStatus(w, old.id, 'awaiting_approval');
        const [apr] = await w.a.ok('GET', '/v1/approvals?status=pending');
        await w.a.ok('POST', '/v1/approvals/' + apr.id + '/approve', { comment: 'refund ok' }, w.keys.carol);
        await runStatus(w, old.id, 'completed');
        await manyPending(w);
        await signIn(page, w.a.url, '/runs/' + old.id, w.keys.bob);
        await page.locator('h1 .badge', { hasText: 'completed' }).waitFor();
        // the run's one approval, who decided it and the comment
        await page.locator('#approvals td', { hasText: 'carol' }).waitFor();
        await page.locator('#approvals td', { hasText: 'refund ok' }).waitFor();
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: an approver of the run\'s department sees its host calls in the run inspector', { timeout: 60000 }, async () => {
    // the run inspector: "every host call in order with arguments, outcome and duration
    // (a timeline bar)"; bob, the approver who decided the call, may read the run
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'calls', 'const o = await shop.orders("paid");\nreturn await shop.refund("o-1", o.length);\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'calls', wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        const [apr] = await w.a.ok('GET', '/v1/approvals?status=pending');
        await w.a.ok('POST', '/v1/approvals/' + apr.id + '/approve', {}, w.keys.bob);
        await runStatus(w, run.id, 'completed');
        await signIn(page, w.a.url, '/runs/' + run.id, w.keys.bob);
        await page.locator('h1 .badge', { hasText: 'completed' }).waitFor();
        await page.locator('#host-calls svg.timeline').waitFor();
        await page.locator('#host-calls td code', { hasText: 'shop.orders' }).waitFor();
        await page.locator('#host-calls pre.args', { hasText: '"paid"' }).waitFor();
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: a role revoked while the desk is open is no longer offered (Approve on a version)', { timeout: 60000 }, async () => {
    // "the UI never offers an action the API would refuse": olga is author and approver of
    // finance; an admin revokes her approver role while she is signed in
    const w = await world({ people: [['olga', 'author']] });
    const { ctx, page } = await newPage(browser);
    try {
        await w.a.ok('POST', '/v1/principals/olga/roles', { role: 'approver', department: 'finance' });
        await w.a.ok('POST', '/v1/templates', { name: 'late', department: 'finance' }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/late/versions', { source: 'return 1;\n' }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/late/versions/1/submit', {}, w.keys.alice);
        await signIn(page, w.a.url, '/templates/late', w.keys.olga);
        await page.getByRole('link', { name: 'late v1' }).waitFor();
        await w.a.ok('DELETE', '/v1/principals/olga/roles', { role: 'approver', department: 'finance' });
        // the API now refuses olga's approval
        const refused = await w.a.req('POST', '/v1/templates/late/versions/1/approve', {}, w.keys.olga);
        assert.equal(refused.status, 403);
        // she moves on inside the desk (no reload) to the version
        await page.getByRole('link', { name: 'late v1' }).click();
        await page.locator('h1 .badge', { hasText: 'submitted' }).waitFor();
        await page.getByRole('link', { name: 'all versions' }).waitFor();
        assert.equal(await page.getByRole('button', { name: 'Approve', exact: true }).count(), 0, 'Approve is offered to a principal the API refuses');
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: after deciding an inbox item from the keyboard, the focus stays in the inbox', { timeout: 60000 }, async () => {
    // keyboard navigation: the decided item leaves the page with the focused button in it; the
    // focus must not fall back to the document's start (the next Tab would begin at the top)
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'two', 'await Promise.all([shop.refund("o-1", 1), shop.refund("o-2", 2)]);\nreturn 2;\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'two', wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await signIn(page, w.a.url, '/approvals', w.keys.bob);
        const items = page.locator('li.approval:not(.decided)', { hasText: run.id });
        await until('two items', async () => (await items.count()) === 2);
        const approve = items.first().getByRole('button', { name: 'Approve' });
        // a fresh list holds its buttons for half a second: focus() does not wait for that
        await until('Approve enabled', async () => approve.isEnabled());
        await approve.focus();
        await page.keyboard.press('Enter');
        await until('one item left', async () => (await items.count()) === 1);
        const where = await page.evaluate(() => ({ tag: document.activeElement.tagName, inMain: document.getElementById('main').contains(document.activeElement) && document.activeElement.id !== 'main' }));
        assert.ok(where.inMain, 'the focus went to ' + where.tag);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: the navigation\'s count badge is in the Approvals link\'s accessible name', { timeout: 60000 }, async () => {
    // aria-label="pending approvals" on the badge replaces its number: a screen reader hears
    // "Approvals pending approvals", never how many
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'cnt', 'return await shop.refund("o-1", 1);\n');
        const run = await w.a.ok('POST', '/v1/runs', { template: 'cnt', wait: false }, w.keys['agent-7']);
        await runStatus(w, run.id, 'awaiting_approval');
        await signIn(page, w.a.url, '/overview', w.keys.bob);
        await page.locator('#pending-badge', { hasText: '1' }).waitFor();
        const snap = await page.locator('#nav').ariaSnapshot();
        assert.match(snap, /link "Approvals[^"]*\b1\b[^"]*"/, snap);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: the audit log\'s action filter offers every action docs/server.md lists', { timeout: 60000 }, async () => {
    // an auditor looking for the runs a takeover executed again filters by run.retried
    const doc = fs.readFileSync(new URL('../../docs/server.md', import.meta.url), 'utf8');
    // the table of audit records: from its header to the first line that is no table row
    const lines = doc.split('\n');
    const listed = [];
    for (let i = lines.indexOf('| action | actor | subject | `details` |') + 2; i > 1 && lines[i].startsWith('|'); i++) {
        for (const m of lines[i].split('|')[1].matchAll(/`([a-z_]+\.[a-z_]+)`/g)) {
            listed.push(m[1]);
        }
    }
    assert.ok(listed.includes('run.retried') && listed.includes('run.start'), 'the table: ' + listed);
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await signIn(page, w.a.url, '/audit', w.keys.eve);
        await page.locator('#chain.ok').waitFor();
        const offered = await page.locator('select[name="action"] option').evaluateAll((os) => os.map((o) => o.value));
        assert.deepEqual(listed.filter((a) => !offered.includes(a)), []);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});

test('review: the approver sees the version\'s workspace manifest - its entries, their mounts, what is writable', { timeout: 60000 }, async () => {
    // the manifest is part of what is approved: each entry with the mount it names and whether
    // the run may write there, and the diff says the workspace changed
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await w.a.ok('POST', '/v1/mounts', {
            name: 'finance-lake', department: 'finance', kind: 's3', endpoint: 'http://127.0.0.1:9/',
            bucket: 'finance-lake', region: 'us-east-1', access_key_id: 'AKID', secret_access_key: 'never-shown-0123',
        });
        const workspace = {
            version: 1, root: '/workspace',
            entries: {
                'README.md': { type: 'file', content: 'read me' },
                lake: { type: 's3_mount', mount: 'finance-lake', prefix: '2026/' },
                'out/export': { type: 's3_mount', mount: 'finance-lake', prefix: 'reports/', read_only: false },
            },
            outputs: ['out/'],
        };
        await w.a.ok('POST', '/v1/templates', { name: 'report', department: 'finance' }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/report/versions', { source: 'return 1;\n', workspace }, w.keys.alice);
        await w.a.ok('POST', '/v1/templates/report/versions/1/submit', {}, w.keys.alice);
        await signIn(page, w.a.url, '/templates/report/versions/1', w.keys.bob);
        const card = page.locator('section.workspace');
        await card.waitFor();
        const rows = await card.locator('table.entries tbody tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent.trim())));
        assert.deepEqual(rows, [
            ['README.md', 'file', '7 characters inline', 'read-only'],
            ['lake', 's3_mount', 'finance-lake 2026/', 'read-only'],
            ['out/export', 's3_mount', 'finance-lake reports/', 'writable'],
        ]);
        await card.getByText('Outputs:').waitFor();
        assert.match(await card.locator('pre.manifest').textContent(), /"finance-lake"/);
        await page.getByText('workspace changed').waitFor();
        assert.equal(await page.getByText('never-shown-0123').count(), 0);
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});
