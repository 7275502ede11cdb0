// lib.js - what the browser tests share (and tests/mcp and js/test, which have no browser):
// airlockd on a free port in a fresh folder, the shop connector
// (tests/integration/hosts/shop_connector.py), a small API client, the world of principals the
// tests act as, Debian's chromium through playwright-core kept off the network, sign-in,
// screenshots and a check that no page broke the CSP or threw.
//
// Environment (set by tests/e2e/CMakeLists.txt): AIRLOCKD (the binary), AIRLOCK_E2E_DEPS (the
// folder holding node_modules/playwright-core), AIRLOCK_E2E_SHOTS (where screenshots go),
// CHROMIUM (default /usr/bin/chromium).

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
// where npm_ci.cmake installed playwright-core: AIRLOCK_E2E_DEPS, else the default build folder's
const DEPS = process.env.AIRLOCK_E2E_DEPS ||
    [path.join(HERE, '..', '..', 'build', 'tests', 'e2e', 'deps'), HERE].find((d) => fs.existsSync(path.join(d, 'node_modules', 'playwright-core')));
const require = createRequire(path.join(DEPS || HERE, 'package.json'));

export const AIRLOCKD = process.env.AIRLOCKD || path.join(HERE, '..', '..', 'build', 'bin', 'airlockd');
export const SHOTS = process.env.AIRLOCK_E2E_SHOTS || path.join(HERE, '..', '..', 'build', 'e2e-screenshots');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const SECRET = 'shop-signing-secret-0123456789';
export const TIMEOUT = 20000; // ms: the longest any condition is waited for

// The first line of a child's stream that matches re, or an error after ms.
function lineOf(stream, re, ms, what) {
    return new Promise((resolve, reject) => {
        const rl = readline.createInterface({ input: stream });
        const timer = setTimeout(() => {
            rl.close();
            reject(new Error(what + ': no line matching ' + re + ' within ' + ms + ' ms'));
        }, ms);
        rl.on('line', (line) => {
            const m = re.exec(line);
            if (m) {
                clearTimeout(timer);
                rl.removeAllListeners('line');
                resolve(m);
            }
        });
        rl.on('close', () => {
            clearTimeout(timer);
            reject(new Error(what + ': exited before printing ' + re));
        });
    });
}

export class Airlockd {
    static async start() {
        const a = new Airlockd();
        a.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-e2e-'));
        a.dir = path.join(a.tmp, 'var');
        a.log = fs.createWriteStream(path.join(a.tmp, 'airlockd.log'));
        await a.spawn();
        a.adminKey = fs.readFileSync(path.join(a.dir, 'admin.key'), 'utf8').trim();
        return a;
    }

    async spawn() {
        const env = { ...process.env };
        delete env.AIRLOCK_BOOTSTRAP_KEY;
        this.proc = spawn(AIRLOCKD, ['--listen', '127.0.0.1:0', '--data-dir', this.dir], { env, stdio: ['ignore', 'ignore', 'pipe'] });
        this.proc.stderr.pipe(this.log, { end: false });
        const m = await lineOf(this.proc.stderr, /^airlockd: listening on (http:\/\/127\.0\.0\.1:\d+)$/, TIMEOUT, 'airlockd');
        this.url = m[1];
    }

    // SIGKILL, then airlockd again on the same data (on another port: this.url changes)
    async crash() {
        const done = new Promise((resolve) => this.proc.once('exit', resolve));
        this.proc.kill('SIGKILL');
        await done;
        await this.spawn();
    }

    async req(method, url, body, key) {
        const headers = { Authorization: 'Bearer ' + (key || this.adminKey) };
        if (body !== undefined) {
            headers['Content-Type'] = 'application/json';
        }
        const r = await fetch(this.url + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        let doc = null;
        try {
            doc = JSON.parse(text);
        } catch (e) {
            doc = text;
        }
        return { status: r.status, doc };
    }

    async ok(method, url, body, key, want) {
        const r = await this.req(method, url, body, key);
        if (r.status !== (want || 200) && !(want === undefined && r.status < 300)) {
            throw new Error(method + ' ' + url + ': ' + r.status + ' ' + JSON.stringify(r.doc));
        }
        return r.doc;
    }

    async stop() {
        if (this.proc.exitCode === null) {
            const done = new Promise((resolve) => this.proc.once('exit', resolve));
            this.proc.kill('SIGKILL');
            await done;
        }
        this.log.end();
        fs.rmSync(this.tmp, { recursive: true, force: true });
    }
}

export class Shop {
    static async start() {
        const s = new Shop();
        s.proc = spawn('python3', [path.join(HERE, '..', 'integration', 'hosts', 'shop_connector.py'), SECRET], { stdio: ['ignore', 'pipe', 'inherit'] });
        const m = await lineOf(s.proc.stdout, /^(\d+)$/, TIMEOUT, 'shop connector');
        s.url = 'http://127.0.0.1:' + m[1] + '/';
        return s;
    }

    async stop() {
        if (this.proc.exitCode === null) {
            const done = new Promise((resolve) => this.proc.once('exit', resolve));
            this.proc.kill('SIGKILL');
            await done;
        }
    }
}

// Department finance with its people (keys by name) and the shop connector; refund is sensitive.
export async function world(opts) {
    const a = await Airlockd.start();
    const shop = await Shop.start();
    await a.ok('POST', '/v1/departments', { name: 'finance' });
    const keys = { admin: a.adminKey };
    const people = [['alice', 'author'], ['bob', 'approver'], ['carol', 'approver'], ['agent-7', 'agent'], ['eve', 'auditor'],
        ['nora', null], ['zed', 'agent'], ...((opts && opts.people) || [])];
    for (const [name, role] of people) {
        const p = await a.ok('POST', '/v1/principals', { name, kind: name.startsWith('agent') || name === 'zed' ? 'agent' : 'user' });
        keys[name] = p.key;
        if (role) {
            await a.ok('POST', '/v1/principals/' + name + '/roles', { role, department: role === 'auditor' ? '*' : 'finance' });
        }
    }
    await a.ok('POST', '/v1/connectors', {
        name: 'shop', department: 'finance', url: shop.url, signing_secret: SECRET, timeout_ms: 30000,
        functions: { orders: { description: 'orders by status' }, refund: { sensitive: true }, fail: {}, slow: {} },
    });
    return { a, shop, keys, async stop() {
        await shop.stop();
        await a.stop();
    } };
}

// A template with version 1 approved (alice writes, carol approves).
export async function approvedTemplate(w, name, source, extra) {
    const a = w.a;
    await a.ok('POST', '/v1/templates', { name, department: 'finance', description: (extra && extra.description) || 'refunds for paid orders' }, w.keys.alice);
    const v = await a.ok('POST', '/v1/templates/' + name + '/versions', {
        source, functions: ['shop.orders', 'shop.refund'],
        input_schema: { type: 'object', properties: { amount: { type: 'number' } } }, ...((extra && extra.version) || {}),
    }, w.keys.alice);
    await a.ok('POST', '/v1/templates/' + name + '/versions/' + v.version + '/submit', {}, w.keys.alice);
    await a.ok('POST', '/v1/templates/' + name + '/versions/' + v.version + '/approve', { comment: 'ok' }, w.keys.carol);
    return v.version;
}

// Waits until fn() answers something truthy (polling every 100 ms), or fails after ms.
export async function until(what, fn, ms) {
    const deadline = Date.now() + (ms || TIMEOUT);
    let last;
    while (Date.now() < deadline) {
        last = await fn();
        if (last) {
            return last;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('timed out waiting for ' + what + ' (last: ' + JSON.stringify(last) + ')');
}

export async function runStatus(w, id, status) {
    return until('run ' + id + ' ' + status, async () => {
        const r = await w.a.ok('GET', '/v1/runs/' + id);
        return r.status === status ? r : null;
    });
}

export async function launch() {
    // loaded here, not at the top: tests/mcp imports airlockd and the shop from this file
    // without a browser
    const { chromium } = require('playwright-core');
    if (!fs.existsSync(CHROMIUM)) {
        throw new Error(CHROMIUM + ' is missing: scripts/bootstrap.sh installs Debian\'s chromium');
    }
    return chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        // off the network: every host name but loopback fails to resolve, and nothing of
        // Chromium's own (updates, sync, metrics) starts
        args: ['--no-sandbox', '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
            '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync',
            '--disable-default-apps', '--disable-breakpad', '--disable-domain-reliability', '--no-pings',
            '--disable-features=Translate,OptimizationHints,MediaRouter', '--metrics-recording-only'],
    });
}

// A fresh browser context and page, recording every page error, CSP violation and request
// that is not to airlockd.
export async function newPage(browser) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    ctx.setDefaultTimeout(TIMEOUT);
    const page = await ctx.newPage();
    page.problems = [];
    page.on('pageerror', (e) => page.problems.push('pageerror: ' + e.message));
    // the desk loads nothing from anywhere but airlockd
    page.on('request', (r) => {
        if (!/^(http:\/\/127\.0\.0\.1:\d+\/|data:|blob:)/.test(r.url())) {
            page.problems.push('request to another origin: ' + r.url());
        }
    });
    page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) {
            page.problems.push('console: ' + m.text());
        }
    });
    return { ctx, page };
}

// Signs in afresh (a key already in the tab's sessionStorage is dropped first) at url.
export async function signIn(page, base, url, key) {
    await page.goto(base + url);
    if (await page.evaluate(() => sessionStorage.length > 0)) {
        await page.evaluate(() => sessionStorage.clear());
        await page.goto(base + url);
    }
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#who .me').or(page.locator('.norole')).first().waitFor();
}

export async function shot(page, name) {
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, name + '.png') });
}
