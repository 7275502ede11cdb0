// servers.mjs - the airlockd a test of the package talks to: the real one (AIRLOCKD, started by
// tests/e2e/lib.js in a fresh folder, department finance allowing ad-hoc runs, agent-7 an agent
// there) when AIRLOCK_OA_SERVER=airlockd, else the contract fake (fake_airlockd.mjs).
//
// Environment (set by js/openai-agents/CMakeLists.txt): AIRLOCK_OA_PKG (the built package),
// AIRLOCK_SRC (the source tree), AIRLOCKD, AIRLOCK_OA_SERVER.
import path from 'node:path';
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

/** {url, key, department, fake?, stop()} */
export async function startServer() {
    if (!REAL) {
        const key = 'ak_test_agent_key_0123456789';
        const fake = await FakeAirlockd.start({ key, readTar: pkg.readTar, writeTar: pkg.writeTar });
        return { url: fake.url, key, department: 'finance', fake, stop: () => fake.stop() };
    }
    const { Airlockd } = await import(pathToFileURL(
        path.join(SRC, 'tests', 'e2e', 'lib.js')).href);
    const a = await Airlockd.start();
    try {
        await a.ok('POST', '/v1/departments', { name: 'finance' });
        await a.ok('PUT', '/v1/departments/finance/policy',
            { autonomy: 'autonomous', allow_adhoc: true });
        const { key } = await a.ok('POST', '/v1/principals', { name: 'agent-7', kind: 'agent' });
        await a.ok('POST', '/v1/principals/agent-7/roles', { role: 'agent', department: 'finance' });
        return { url: a.url, key, department: 'finance', airlockd: a, stop: () => a.stop() };
    } catch (e) {
        await a.stop();
        throw e;
    }
}
