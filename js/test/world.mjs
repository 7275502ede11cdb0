// world.mjs - what the package's tests share: the built package (AIRLOCK_JS, the build folder's
// js/), and a world of airlockd on a free port in a fresh folder with the shop connector of
// tests/integration/hosts/shop_connector.py, department finance and its people, set up through
// the package's own Client (its admin routes).
//
// Environment (set by js/CMakeLists.txt): AIRLOCKD (the binary), AIRLOCK_JS (the package).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..', '..');
const PKG = process.env.AIRLOCK_JS || path.join(ROOT, 'build', 'js');
const AIRLOCKD = process.env.AIRLOCKD || path.join(ROOT, 'build', 'bin', 'airlockd');
const SHOP = path.join(ROOT, 'tests', 'integration', 'hosts', 'shop_connector.py');
export const SECRET = 'shop-signing-secret-0123456789';
export const TIMEOUT = 20000; // ms: the longest any condition is waited for

/** The built package, as a consumer imports it. */
export const airlock = await import(pathToFileURL(path.join(PKG, 'dist', 'index.js')).href);

// The first line of a child's stream that matches re, or an error after ms.
function lineOf(stream, re, ms, what) {
    return new Promise((resolve, reject) => {
        const rl = readline.createInterface({ input: stream });
        const timer = setTimeout(() => {
            rl.close();
            reject(new Error(`${what}: no line matching ${re} within ${ms} ms`));
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
            reject(new Error(`${what}: exited before printing ${re}`));
        });
    });
}

async function kill(proc) {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
        const done = new Promise((resolve) => proc.once('exit', resolve));
        proc.kill('SIGKILL');
        await done;
    }
}

// The people of department finance (eve audits every department) and their roles.
const PEOPLE = [['alice', 'author', 'user'], ['bob', 'approver', 'user'], ['carol', 'approver', 'user'],
    ['agent-7', 'agent', 'agent'], ['eve', 'auditor', 'user']];

export class World {
    // airlockd and the shop started, finance and its people and the shop connector made.
    static async start() {
        const w = new World();
        w.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-js-'));
        try {
            w.shop = spawn('python3', [SHOP, SECRET], { stdio: ['ignore', 'pipe', 'inherit'] });
            const port = await lineOf(w.shop.stdout, /^(\d+)$/, TIMEOUT, 'shop connector');
            w.shopUrl = `http://127.0.0.1:${port[1]}/`;
            const env = { ...process.env };
            delete env.AIRLOCK_BOOTSTRAP_KEY;
            const dir = path.join(w.tmp, 'var');
            w.proc = spawn(AIRLOCKD, ['--listen', '127.0.0.1:0', '--data-dir', dir],
                { env, stdio: ['ignore', 'ignore', 'pipe'] });
            w.log = fs.createWriteStream(path.join(w.tmp, 'airlockd.log'));
            w.proc.stderr.pipe(w.log);
            const m = await lineOf(w.proc.stderr,
                /^airlockd: listening on (http:\/\/127\.0\.0\.1:\d+)$/, TIMEOUT, 'airlockd');
            w.url = m[1];
            w.keys = { admin: fs.readFileSync(path.join(dir, 'admin.key'), 'utf8').trim() };
            const admin = w.client('admin');
            await admin.departments.create('finance');
            for (const [name, role, kind] of PEOPLE) {
                w.keys[name] = (await admin.principals.create(name, kind)).key;
                await admin.principals.grant(name, role, role === 'auditor' ? '*' : 'finance');
            }
            await admin.connectors.create({
                name: 'shop', department: 'finance', url: w.shopUrl, signing_secret: SECRET,
                timeout_ms: 30000,
                functions: { orders: { description: 'orders by status' },
                    refund: { sensitive: true }, fail: {}, slow: {} },
            });
            return w;
        } catch (e) {
            await w.stop();
            throw e;
        }
    }

    client(name, options) {
        return new airlock.Client({ url: this.url, key: this.keys[name], ...options });
    }

    // A template with one version written by alice and approved by carol: its number.
    async approvedTemplate(name, version) {
        const alice = this.client('alice');
        await alice.templates.create({ name, department: 'finance', description: name });
        const v = await alice.templates.createVersion(name, version);
        await alice.templates.submit(name, v.version);
        await this.client('carol').templates.approve(name, v.version, 'ok');
        return v.version;
    }

    // What the shop counted: {by_key, by_function}.
    async shopCalls() {
        const r = await fetch(this.shopUrl + 'calls');
        return r.json();
    }

    async stop() {
        await kill(this.proc);
        await kill(this.shop);
        this.log?.end();
        fs.rmSync(this.tmp, { recursive: true, force: true });
    }
}

// Waits until fn() answers something truthy, looking every 50 ms, or fails after ms.
export async function until(what, fn, ms = TIMEOUT) {
    const deadline = Date.now() + ms;
    let last;
    for (;;) {
        last = await fn();
        if (last) {
            return last;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
}
