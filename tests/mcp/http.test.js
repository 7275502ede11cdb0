// http.test.js - airlockd's POST /v1/mcp with the official client's StreamableHTTPClientTransport,
// the agent's key as bearer: the scenario (scenario.js), then what only HTTP shows: a bad key,
// malformed JSON-RPC posted raw, GET and DELETE, a foreign Origin.

import assert from 'node:assert/strict';
import test from 'node:test';
import { Client, mcpWorld, scenario, StreamableHTTPClientTransport } from './scenario.js';

async function connect(w, key) {
    const c = new Client({ name: 'airlock-mcp-test', version: '1.0.0' });
    const t = new StreamableHTTPClientTransport(new URL(w.a.url + '/v1/mcp'), {
        requestInit: { headers: { Authorization: 'Bearer ' + key } },
    });
    await c.connect(t);
    return c;
}

scenario(test, connect);

async function post(w, body, headers) {
    const r = await fetch(w.a.url + '/v1/mcp', {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + w.keys['agent-7'], 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body,
    });
    return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

test('over HTTP: a bad key is 401, malformed JSON-RPC -32700, GET and DELETE 405, a foreign Origin 403', async () => {
    const w = await mcpWorld();
    try {
        const c = new Client({ name: 'airlock-mcp-test', version: '1.0.0' });
        const t = new StreamableHTTPClientTransport(new URL(w.a.url + '/v1/mcp'), {
            requestInit: { headers: { Authorization: 'Bearer ak_000000000000_' + '0'.repeat(64) } },
        });
        await assert.rejects(c.connect(t), (e) => e.code === 401);
        // a principal that is no agent
        await assert.rejects(connect(w, w.keys.alice), (e) => e.code === 403);

        const bad = await post(w, '{"jsonrpc":"2.0","id":1,"method":');
        assert.equal(bad.status, 400);
        assert.match(bad.type, /^application\/json/);
        const doc = JSON.parse(bad.text);
        assert.equal(doc.jsonrpc, '2.0');
        assert.equal(doc.id, null);
        assert.equal(doc.error.code, -32700);

        const unknown = JSON.parse((await post(w, JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'resources/list' }))).text);
        assert.equal(unknown.id, 'x');
        assert.equal(unknown.error.code, -32601);
        const params = JSON.parse((await post(w, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { arguments: {} } }))).text);
        assert.equal(params.error.code, -32602);
        const batch = await post(w, JSON.stringify([{ jsonrpc: '2.0', id: 3, method: 'ping' }]));
        assert.equal(JSON.parse(batch.text).error.code, -32600);
        const note = await post(w, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
        assert.equal(note.status, 202);
        assert.equal(note.text, '');
        const ping = JSON.parse((await post(w, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }))).text);
        assert.deepEqual(ping, { jsonrpc: '2.0', id: 4, result: {} });
        const version = await post(w, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }), { 'MCP-Protocol-Version': '1999-01-01' });
        assert.equal(version.status, 400);

        for (const method of ['GET', 'DELETE']) {
            const r = await fetch(w.a.url + '/v1/mcp', { method, headers: { Authorization: 'Bearer ' + w.keys['agent-7'] } });
            assert.equal(r.status, 405, method);
            assert.equal(r.headers.get('allow'), 'POST');
        }
        const foreign = await post(w, JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }), { Origin: 'http://attacker.example' });
        assert.equal(foreign.status, 403);
        const own = await post(w, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }), { Origin: w.a.url });
        assert.equal(own.status, 200);
    } finally {
        await w.stop();
    }
});
