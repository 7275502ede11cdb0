// world.mjs - what the package's tests share: the built package (AIRLOCK_JS, the build folder's
// js/), and a world of airlockd and the shop connector (started by tests/e2e/lib.js, as for the
// browser and MCP tests) with department finance and its people, set up through the package's
// own Client (its admin routes).
//
// Environment (set by js/CMakeLists.txt): AIRLOCKD (the binary), AIRLOCK_JS (the package).

import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { Airlockd, SECRET, Shop, TIMEOUT, until } from '../../tests/e2e/lib.js';

export { SECRET, TIMEOUT, until };

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKG = process.env.AIRLOCK_JS || path.join(HERE, '..', '..', 'build', 'js');

/** The built package's entry (a URL, for a worker to import too), and the package itself. */
export const airlockUrl = pathToFileURL(path.join(PKG, 'dist', 'index.js')).href;
export const airlock = await import(airlockUrl);

// The people of department finance (eve audits every department) and their roles.
const PEOPLE = [['alice', 'author', 'user'], ['bob', 'approver', 'user'], ['carol', 'approver', 'user'],
    ['agent-7', 'agent', 'agent'], ['eve', 'auditor', 'user']];

export class World {
    // airlockd and the shop started, finance and its people and the shop connector made.
    static async start() {
        const w = new World();
        try {
            w.shop = await Shop.start();
            w.shopUrl = w.shop.url;
            w.airlockd = await Airlockd.start();
            w.url = w.airlockd.url;
            w.keys = { admin: w.airlockd.adminKey };
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
        await this.airlockd?.stop();
        await this.shop?.stop();
    }
}

