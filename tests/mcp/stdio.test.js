// stdio.test.js - `airlock mcp` (the stdio transport in front of POST /v1/mcp) with the official
// client's StdioClientTransport: the scenario (scenario.js), then what only the proxy shows: a
// bad key, a malformed line, a notification answered by nothing, the end of stdin, missing
// environment, airlockd unreachable.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, mcpWorld, scenario, StdioClientTransport } from './scenario.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = process.env.AIRLOCK_CLI || path.join(HERE, '..', '..', 'build', 'bin', 'airlock');

async function connect(w, key) {
    const c = new Client({ name: 'airlock-mcp-test', version: '1.0.0' });
    const t = new StdioClientTransport({ command: CLI, args: ['mcp'], env: { AIRLOCK_URL: w.a.url, AIRLOCK_KEY: key }, stderr: 'pipe' });
    await c.connect(t);
    return c;
}

scenario(test, connect);

// `airlock mcp` with env, fed `lines`; its exit code, stdout lines and stderr once it ends.
function proxy(env, lines) {
    return new Promise((resolve, reject) => {
        const p = spawn(CLI, ['mcp'], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
        const out = [];
        let err = '';
        readline.createInterface({ input: p.stdout }).on('line', (l) => out.push(l));
        p.stderr.on('data', (d) => {
            err += d;
        });
        p.on('error', reject);
        p.on('close', (code) => resolve({ code, out, err }));
        p.stdin.end(lines.map((l) => l + '\n').join(''));
    });
}

test('over stdio: a bad key, a malformed line, notifications, EOF, missing environment, airlockd unreachable', async () => {
    const w = await mcpWorld();
    try {
        const c = new Client({ name: 'airlock-mcp-test', version: '1.0.0' });
        const t = new StdioClientTransport({ command: CLI, args: ['mcp'], env: { AIRLOCK_URL: w.a.url, AIRLOCK_KEY: 'ak_000000000000_' + '0'.repeat(64) }, stderr: 'pipe' });
        await assert.rejects(c.connect(t), (e) => e.code === -32001 && /401/.test(e.message));
        await c.close();

        const env = { AIRLOCK_URL: w.a.url, AIRLOCK_KEY: w.keys['agent-7'] };
        const r = await proxy(env, [
            '{"jsonrpc":"2.0","method":"notifications/initialized"}',
            '',
            '{"jsonrpc":"2.0","id":1,"method":',
            JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }),
            JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'paid-orders', arguments: {} } }),
        ]);
        assert.equal(r.code, 0, r.err);
        assert.equal(r.out.length, 3, JSON.stringify(r.out));
        const [bad, ping, call] = r.out.map((l) => JSON.parse(l));
        assert.equal(bad.error.code, -32700);
        assert.equal(bad.id, null);
        assert.deepEqual(ping, { jsonrpc: '2.0', id: 'p', result: {} });
        assert.deepEqual(call.result.structuredContent.value, { count: 2, ids: ['o-1', 'o-2'] });

        const none = await proxy({}, ['{"jsonrpc":"2.0","id":1,"method":"ping"}']);
        assert.equal(none.code, 2);
        assert.deepEqual(none.out, []);
        assert.match(none.err, /AIRLOCK_URL/);

        const gone = await proxy({ AIRLOCK_URL: 'http://127.0.0.1:9', AIRLOCK_KEY: w.keys['agent-7'] },
            ['{"jsonrpc":"2.0","id":5,"method":"ping"}', '{"jsonrpc":"2.0","method":"notifications/initialized"}']);
        assert.equal(gone.code, 0);
        assert.equal(gone.out.length, 1);
        const e = JSON.parse(gone.out[0]);
        assert.equal(e.id, 5);
        assert.equal(e.error.code, -32000);
        assert.match(e.error.message, /could not be reached/);
    } finally {
        await w.stop();
    }
});

test('over stdio: a line holding a NUL byte is one malformed message, and the next line still its own', async () => {
    const w = await mcpWorld();
    try {
        const env = { AIRLOCK_URL: w.a.url, AIRLOCK_KEY: w.keys['agent-7'] };
        const r = await proxy(env, [
            '{"jsonrpc":"2.0","id":1,"method":"ping"}\u0000{"junk":',
            JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
        ]);
        assert.equal(r.code, 0, r.err);
        assert.equal(r.out.length, 2, JSON.stringify(r.out));
        const [bad, ping] = r.out.map((l) => JSON.parse(l));
        assert.equal(bad.id, null);
        assert.equal(bad.error.code, -32700);
        assert.deepEqual(ping, { jsonrpc: '2.0', id: 2, result: {} });
    } finally {
        await w.stop();
    }
});
