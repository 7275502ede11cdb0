// admin.test.js - the admin page changes and removes what it lists: a principal disabled (its
// key then refused) and deleted, a department renamed and deleted, a connector edited - a
// change that would alter what an approved version may do refused with airlockd's reason, then
// made with the box that revokes the version ticked.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { approvedTemplate, launch, newPage, shot, signIn, world } from './lib.js';

let browser;
before(async () => {
    browser = await launch();
});
after(async () => {
    await browser.close();
});

test('admin: a principal disabled and deleted, a department renamed and deleted, a connector edited', { timeout: 60000 }, async () => {
    const w = await world();
    const { ctx, page } = await newPage(browser);
    try {
        await approvedTemplate(w, 'refund', 'return await shop.refund("o-1", 5);\n');
        await w.a.ok('POST', '/v1/departments', { name: 'ops' });
        await signIn(page, w.a.url, '/admin', w.keys.admin);
        const dialog = page.getByRole('dialog');

        // disabled: its key is refused; then deleted
        const agent = page.locator('tr[data-principal="agent-7"]');
        await agent.getByRole('button', { name: 'Disable agent-7' }).click();
        await dialog.getByRole('button', { name: 'Disable' }).click();
        await agent.getByText('disabled').waitFor();
        assert.equal((await w.a.req('GET', '/v1/me', undefined, w.keys['agent-7'])).status, 401);
        await page.locator('tr[data-principal="nora"]').getByRole('button', { name: 'Delete principal nora' }).click();
        await dialog.getByRole('button', { name: 'Delete principal' }).click();
        await page.locator('tr[data-principal="nora"]').waitFor({ state: 'detached' });
        assert.equal((await w.a.req('GET', '/v1/principals/nora')).status, 404);
        assert.equal(await page.locator('tr[data-principal="admin"]').getByRole('button', { name: /Disable|Delete/ }).count(), 0,
            'the admin is offered to disable or delete itself');

        // renamed, then deleted (empty); finance, which is not, stays with airlockd's reason
        await page.getByRole('button', { name: 'Rename department ops' }).click();
        await dialog.getByLabel('New name').fill('ops2');
        await dialog.getByRole('button', { name: 'Rename' }).click();
        await page.getByRole('button', { name: 'Delete department ops2' }).click();
        await dialog.getByRole('button', { name: 'Delete department' }).click();
        await page.locator('tr[data-department="ops2"]').waitFor({ state: 'detached' });
        assert.deepEqual((await w.a.ok('GET', '/v1/departments')).map((d) => d.name), ['finance']);
        await page.getByRole('button', { name: 'Delete department finance' }).click();
        await dialog.getByRole('button', { name: 'Delete department' }).click();
        await page.locator('#admin-msg').getByText(/not empty/).waitFor();

        // the refund made not sensitive: refused while version 1 is approved, then forced
        const edit = async (force) => {
            await page.getByRole('button', { name: 'Edit connector shop' }).click();
            const fns = dialog.getByLabel('Functions');
            const text = JSON.parse(await fns.inputValue());
            text.refund.sensitive = false;
            await fns.fill(JSON.stringify(text));
            await dialog.getByLabel('Timeout (ms)').fill('9000');
            if (force) {
                await dialog.getByLabel(/Also revoke the approved versions/).check();
            }
            await shot(page, 'admin-edit-connector');
            await dialog.getByRole('button', { name: 'Save connector' }).click();
        };
        await edit(false);
        await page.locator('#admin-msg').getByText(/version 1 of template refund/).waitFor();
        assert.equal((await w.a.ok('GET', '/v1/connectors/shop')).timeout_ms, 30000);
        await edit(true);
        await page.locator('tr[data-connector="shop"]').getByText('(sensitive)').waitFor({ state: 'detached' });
        const shop = await w.a.ok('GET', '/v1/connectors/shop');
        assert.equal(shop.timeout_ms, 9000);
        assert.equal(shop.functions.refund.sensitive, false);
        assert.equal((await w.a.ok('GET', '/v1/templates/refund/versions/1')).state, 'revoked');
        assert.deepEqual(page.problems, []);
    } finally {
        await ctx.close();
        await w.stop();
    }
});
