// servers.mjs - the airlockd a test of the package talks to: the real one (AIRLOCKD, started
// as tests/e2e/lib.js starts it, in a fresh folder, with a local root for the mount
// finance-lake; department finance allowing ad-hoc runs, agent-7 an agent there) when
// AIRLOCK_OA_SERVER=airlockd, else the contract fake (fake_airlockd.mjs).
//
// Environment (set by js/openai-agents/CMakeLists.txt): AIRLOCK_OA_PKG (the built package),
// AIRLOCK_SRC (the source tree), AIRLOCKD, AIRLOCK_OA_SERVER.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { FakeAirlockd } from './fake_airlockd.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
// the tests run from the built package's test/ (build.cmake copies them there)
const PKG = process.env.AIRLOCK_OA_PKG || path.join(HERE, '..');
const SRC = process.env.AIRLOCK_SRC || path.join(HERE, '..', '..');

/** The built package's entry as a URL (a child process imports it too), and the package. */
export const pkgUrl = pathToFileURL(path.join(PKG, 'dist', 'index.js')).href;
export const pkg = await import(pkgUrl);
export const REAL = process.env.AIRLOCK_OA_SERVER === 'airlockd';

/* airlockd as tests/e2e/lib.js starts it, with a config file: mounts.local_roots = [roots]. */
async function spawnAirlockd(Airlockd, roots) {
    const a = new Airlockd();
    a.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'oa-airlockd-'));
    a.dir = path.join(a.tmp, 'var');
    a.log = fs.createWriteStream(path.join(a.tmp, 'airlockd.log'));
    const config = path.join(a.tmp, 'airlockd.json');
    fs.writeFileSync(config, JSON.stringify({ mounts: { local_roots: [roots] } }));
    a.proc = spawn(process.env.AIRLOCKD, ['--listen', '127.0.0.1:0', '--data-dir', a.dir,
        '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    a.proc.stderr.pipe(a.log, { end: false });
    a.url = await new Promise((resolve, reject) => {
        const rl = readline.createInterface({ input: a.proc.stderr });
        rl.on('line', (line) => {
            const m = /^airlockd: listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
            if (m) {
                rl.removeAllListeners('line');
                resolve(m[1]);
            }
        });
        rl.on('close', () => reject(new Error('airlockd exited before listening')));
    });
    a.adminKey = fs.readFileSync(path.join(a.dir, 'admin.key'), 'utf8').trim();
    return a;
}

/**
 * {url, key, department, mount, plant(files), fake? | airlockd and approverKey, stop()}:
 * `mount` is a manifest entry naming the mount finance-lake (prefix 2026/), `plant` puts files
 * ({key: bytes}) into it; approverKey is bob's, an approver of finance.
 */
export async function startServer() {
    if (!REAL) {
        const key = 'ak_test_agent_key_0123456789';
        const fake = await FakeAirlockd.start({ key, readTar: pkg.readTar, writeTar: pkg.writeTar });
        return { url: fake.url, key, department: 'finance', fake, stop: () => fake.stop(),
            mount: { type: 's3_mount', mount: 'finance-lake', prefix: '2026/' },
            plant: (files) => (fake.mounts['finance-lake'] = files) };
    }
    const { Airlockd } = await import(pathToFileURL(
        path.join(SRC, 'tests', 'e2e', 'lib.js')).href);
    const roots = fs.mkdtempSync(path.join(os.tmpdir(), 'oa-roots-'));
    const lake = path.join(roots, 'lake');
    fs.mkdirSync(lake);
    let a;
    const stop = async () => {
        await a?.stop();
        fs.rmSync(roots, { recursive: true, force: true });
    };
    try {
        a = await spawnAirlockd(Airlockd, roots);
        await a.ok('POST', '/v1/departments', { name: 'finance' });
        await a.ok('PUT', '/v1/departments/finance/policy',
            { autonomy: 'autonomous', allow_adhoc: true });
        const { key } = await a.ok('POST', '/v1/principals', { name: 'agent-7', kind: 'agent' });
        await a.ok('POST', '/v1/principals/agent-7/roles', { role: 'agent', department: 'finance' });
        const bob = await a.ok('POST', '/v1/principals', { name: 'bob', kind: 'user' });
        await a.ok('POST', '/v1/principals/bob/roles', { role: 'approver', department: 'finance' });
        await a.ok('POST', '/v1/mounts', { name: 'finance-lake', department: 'finance',
            kind: 'local', path: lake });
        const plant = (files) => {
            for (const [k, data] of Object.entries(files)) {
                fs.mkdirSync(path.dirname(path.join(lake, k)), { recursive: true });
                fs.writeFileSync(path.join(lake, k), data);
            }
        };
        return { url: a.url, key, approverKey: bob.key, department: 'finance', airlockd: a, stop, plant,
            mount: { type: 'local_dir', mount: 'finance-lake', prefix: '2026/' } };
    } catch (e) {
        await stop();
        throw e;
    }
}
