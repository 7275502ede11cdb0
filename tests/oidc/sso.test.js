// sso.test.js - single sign-on of the web UI (docs/sso.md) in Chromium against a real OpenID
// Connect provider (provider.mjs: oidc-provider on loopback): sign-in, an identity with no
// principal refused, group_roles, CSRF (missing and wrong token refused), a tampered state, a
// token for another audience, an expired token, logout ending the session on the server, a
// disabled or relinked principal ending it too, and key_sign_in false.
//
// Environment (tests/oidc/CMakeLists.txt): AIRLOCKD, AIRLOCK_E2E_DEPS (playwright-core),
// AIRLOCK_OIDC_DEPS (oidc-provider).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { AIRLOCKD, TIMEOUT, launch, newPage, shot } from '../e2e/lib.js';
import { startProvider } from './provider.mjs';

const CLIENT_ID = 'airlock';
const CLIENT_SECRET = 'client-secret-0123456789-abcdef';

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

let provider;
let airlockd;
let base;
let adminKey;
let browser;
let tmp;

async function api(method, url, body, key) {
    const r = await fetch(base + url, {
        method, body: body === undefined ? undefined : JSON.stringify(body),
        headers: { Authorization: 'Bearer ' + (key || adminKey), 'Content-Type': 'application/json' },
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
}

// a principal of kind user linked to an identity (POST /v1/principals {"identity"})
async function userFor(name, identity) {
    const r = await api('POST', '/v1/principals', { name, kind: 'user', identity });
    assert.equal(r.status, 201, JSON.stringify(r.body));
}

// airlockd with config file `config`, its log in dir; resolves once it listens.
async function spawnAirlockd(config, dir) {
    const env = { ...process.env };
    delete env.AIRLOCK_BOOTSTRAP_KEY;
    const proc = spawn(AIRLOCKD, ['--config', config], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr.pipe(fs.createWriteStream(path.join(dir, 'airlockd.log')));
    await new Promise((resolve, reject) => {
        const rl = readline.createInterface({ input: proc.stderr });
        const timer = setTimeout(() => reject(new Error('airlockd did not start')), TIMEOUT);
        rl.on('line', (l) => {
            if (/^airlockd: listening on /.test(l)) {
                clearTimeout(timer);
                resolve();
            }
        });
        proc.once('exit', () => reject(new Error('airlockd exited; see ' + dir)));
    });
    return proc;
}

// SIGTERM, resolved once airlockd has exited (its data folder may then be removed)
function stopAirlockd(proc) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
        return Promise.resolve();
    }
    const done = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    return done;
}

before(async () => {
    const [pport, aport] = [await freePort(), await freePort()];
    base = 'http://127.0.0.1:' + aport;
    provider = await startProvider({
        port: pport, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUrl: base + '/auth/callback',
        accounts: {
            alice: { email: 'alice@example.com', groups: ['staff'] },
            bob: { email: 'bob@example.com', groups: ['finance-approvers'] },
            mallory: { email: 'mallory@example.com', groups: ['finance-approvers'] },
        },
    });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-sso-'));
    const config = path.join(tmp, 'airlockd.json');
    fs.writeFileSync(config, JSON.stringify({
        listen: '127.0.0.1:' + aport, data_dir: path.join(tmp, 'var'),
        oidc: {
            issuer: provider.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET,
            redirect_url: base + '/auth/callback', principal_claim: 'email', groups_claim: 'groups',
            group_roles: { 'finance-approvers': [{ role: 'approver', department: 'finance' }] },
        },
    }));
    airlockd = await spawnAirlockd(config, tmp);
    adminKey = fs.readFileSync(path.join(tmp, 'var', 'admin.key'), 'utf8').trim();
    assert.equal((await api('POST', '/v1/departments', { name: 'finance' })).status, 201);
    await userFor('alice', 'alice@example.com');
    assert.equal((await api('POST', '/v1/principals/alice/roles', { role: 'admin', department: '*' })).status, 201);
    await userFor('bob', 'bob@example.com');
    browser = await launch();
});

after(async () => {
    await browser?.close();
    if (airlockd) {
        await stopAirlockd(airlockd);
    }
    await provider?.stop();
    if (tmp) {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
});

// Through the provider's login form as `login`; resolves on the page airlockd's callback leads to.
// From the desk's sign-in link with viaDesk, else straight from /auth/login (what the link is).
async function signInAs(page, login, viaDesk) {
    if (viaDesk) {
        await page.goto(base + '/');
        await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    } else {
        await page.goto(base + '/auth/login');
    }
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
}

async function me(page) {
    return page.evaluate(async () => {
        const r = await fetch('/v1/me', { credentials: 'same-origin' });
        return { status: r.status, body: await r.json() };
    });
}

async function auditOf(action) {
    const r = await api('GET', '/v1/audit?action=' + action);
    return r.body.records || r.body;
}

test('sign-in: the provider vouches for alice, the desk shows her; the cookie is HttpOnly and SameSite=Strict', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'alice', true);
    await page.locator('#who .me').waitFor();
    assert.equal(await page.locator('#who .me').textContent(), 'alice');
    const cookie = (await ctx.cookies(base)).find((c) => c.name === 'airlock_session');
    assert.ok(cookie, 'the session cookie is set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie.includes('airlock_session')), false);
    const m = await me(page);
    assert.equal(m.status, 200);
    assert.equal(m.body.name, 'alice');
    assert.equal(m.body.identity, 'alice@example.com');
    assert.match(m.body.csrf_token, /^[0-9a-f]{64}$/);
    await shot(page, 'sso-signed-in');
    // the audit names the identity behind the session's sign-in
    const logins = await auditOf('auth.login');
    assert.ok(JSON.stringify(logins).includes('alice@example.com'));
    // the provider's development login form asks for a web font (refused: Chromium is off the
    // network); airlockd's pages ask for nothing from anywhere else
    assert.deepEqual(page.problems.filter((p) => !p.includes('fonts.googleapis.com')), []);
    await ctx.close();
});

test('CSRF: a session\'s change without X-CSRF-Token, or with a wrong one, is 403 FORBIDDEN; with its token it goes through and the audit names the identity', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'alice');
    await page.locator('#who .me').waitFor();
    const token = (await me(page)).body.csrf_token;
    const post = (headers, name) => page.evaluate(async ([h, n]) => {
        const r = await fetch('/v1/departments', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', ...h }, body: JSON.stringify({ name: n }) });
        return { status: r.status, body: await r.json() };
    }, [headers, name]);
    const missing = await post({}, 'csrf-missing');
    assert.equal(missing.status, 403);
    assert.equal(missing.body.error.code, 'FORBIDDEN');
    const wrong = await post({ 'X-CSRF-Token': '0'.repeat(64) }, 'csrf-wrong');
    assert.equal(wrong.status, 403);
    assert.equal(wrong.body.error.code, 'FORBIDDEN');
    // an agent's route takes an API key, never a session
    const run = await page.evaluate(async (t) => {
        const r = await fetch('/v1/runs', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': t }, body: '{}' });
        return { status: r.status, body: await r.json() };
    }, token);
    assert.equal(run.status, 403);
    assert.match(run.body.error.message, /takes an API key/);
    const right = await post({ 'X-CSRF-Token': token }, 'csrf-right');
    assert.equal(right.status, 201, JSON.stringify(right.body));
    const names = (await api('GET', '/v1/departments')).body.map((d) => d.name);
    assert.ok(names.includes('csrf-right') && !names.includes('csrf-missing') && !names.includes('csrf-wrong'));
    const created = JSON.stringify(await auditOf('department.create'));
    assert.ok(created.includes('"session_identity":"alice@example.com"'), created);
    // and so do its refusals
    const denied = (await auditOf('auth.denied')).filter((r) => /X-CSRF-Token/.test(JSON.stringify(r)));
    assert.equal(denied.length, 2); // the run's refusal above is for its key, not its token
    assert.ok(denied.every((r) => r.details.session_identity === 'alice@example.com'), JSON.stringify(denied));
    await ctx.close();
});

test('an identity with no linked principal is refused', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'mallory');
    await page.waitForURL(/\/auth\/callback/);
    assert.match(await page.content(), /no principal of kind user is linked to identity mallory@example\.com/);
    assert.equal((await ctx.cookies(base)).some((c) => c.name === 'airlock_session'), false);
    assert.equal((await me(page)).status, 401);
    await ctx.close();
});

test('group_roles: bob holds no grant, his group makes him an approver in finance for the session', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'bob');
    await page.locator('#who .me').waitFor();
    const m = await me(page);
    assert.deepEqual(m.body.roles, []);
    assert.deepEqual(m.body.session_roles, [{ role: 'approver', department: 'finance' }]);
    const list = await page.evaluate(async () => (await fetch('/v1/approvals?department=finance', { credentials: 'same-origin' })).status);
    assert.equal(list, 200);
    await page.getByRole('link', { name: /Approvals/ }).waitFor();
    await ctx.close();
});

test('a tampered state is refused', async () => {
    const { ctx, page } = await newPage(browser);
    // the provider's redirect back carries another state than the one this sign-in made
    await provider.setMode('tamper_state');
    try {
        await signInAs(page, 'alice');
        await page.waitForURL(/\/auth\/callback/);
        assert.match(await page.content(), /the state is not this sign-in's/);
        assert.equal((await me(page)).status, 401);
    } finally {
        await provider.setMode('');
    }
    await ctx.close();
});

for (const [mode, why] of [['wrong_audience', /aud is not this client/], ['expired', /expired/]]) {
    test('an ID token ' + (mode === 'expired' ? 'that has expired' : 'for another audience') + ' is refused', async () => {
        const { ctx, page } = await newPage(browser);
        await provider.setMode(mode);
        try {
            await signInAs(page, 'alice');
            await page.waitForURL(/\/auth\/callback/);
            assert.match(await page.content(), why);
            assert.equal((await me(page)).status, 401);
        } finally {
            await provider.setMode('');
        }
        await ctx.close();
    });
}

test('logout ends the session on the server: the cookie, replayed, is refused', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'alice', true);
    await page.locator('#who .me').waitFor();
    const cookie = (await ctx.cookies(base)).find((c) => c.name === 'airlock_session');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    assert.equal((await me(page)).status, 401);
    // the old cookie sent again, as a thief who copied it would
    const replay = await fetch(base + '/v1/me', { headers: { Cookie: 'airlock_session=' + cookie.value } });
    assert.equal(replay.status, 401);
    assert.ok(JSON.stringify(await auditOf('auth.logout')).includes('alice'));
    await ctx.close();
});

test('disabling the principal ends its session at the next request; enabled again, it signs in again', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'bob');
    await page.locator('#who .me').waitFor();
    assert.equal((await me(page)).status, 200);
    assert.equal((await api('PATCH', '/v1/principals/bob', { disabled: true })).status, 200);
    try {
        assert.equal((await me(page)).status, 401);
        // nor can a disabled principal sign in afresh
        const { ctx: ctx2, page: page2 } = await newPage(browser);
        await signInAs(page2, 'bob');
        await page2.waitForURL(/\/auth\/callback/);
        assert.match(await page2.content(), /principal bob is disabled/);
        await ctx2.close();
    } finally {
        assert.equal((await api('PATCH', '/v1/principals/bob', { disabled: false })).status, 200);
    }
    await ctx.close();
});

test('a principal linked to another identity ends the sessions of the one it was linked to', async () => {
    const { ctx, page } = await newPage(browser);
    await signInAs(page, 'bob');
    await page.locator('#who .me').waitFor();
    assert.equal((await api('PATCH', '/v1/principals/bob', { identity: 'robert@example.com' })).status, 200);
    try {
        assert.equal((await me(page)).status, 401);
    } finally {
        assert.equal((await api('PATCH', '/v1/principals/bob', { identity: 'bob@example.com' })).status, 200);
    }
    await ctx.close();
});

test('key_sign_in false: the sign-in page offers single sign-on only; API keys still work for API clients', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-sso-keyless-'));
    const port = await freePort();
    const url = 'http://127.0.0.1:' + port;
    const config = path.join(dir, 'airlockd.json');
    fs.writeFileSync(config, JSON.stringify({
        listen: '127.0.0.1:' + port, data_dir: path.join(dir, 'var'),
        oidc: { issuer: provider.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_url: url + '/auth/callback', key_sign_in: false },
    }));
    const proc = await spawnAirlockd(config, dir);
    try {
        const { ctx, page } = await newPage(browser);
        await page.goto(url + '/');
        await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
        assert.equal(await page.getByLabel('API key').count(), 0);
        await shot(page, 'sso-sign-in-only');
        await ctx.close();
        const key = fs.readFileSync(path.join(dir, 'var', 'admin.key'), 'utf8').trim();
        const r = await fetch(url + '/v1/me', { headers: { Authorization: 'Bearer ' + key } });
        assert.equal(r.status, 200);
    } finally {
        await stopAirlockd(proc);
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
