// agent.test.mjs - openai_agents.agent (and .airlockd): the OpenAI Agents SDK drives a
// SandboxAgent on AirlockSandboxClient with the SDK's ScriptedModel (no network, no key of a
// model provider): the model reads the input CSV by run_javascript, writes a note with
// apply_patch and patches it, asks to publish - a tool a person approves, so the run stops and
// its RunState is serialized - and a NEW process (agent_resume.mjs) resumes the run from that
// state alone: the SDK restores the sandbox session through the client, the approved tool runs,
// the model writes out/report.md by run_javascript from the patched note, and the run finishes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { run, setTracingDisabled } from '@openai/agents';
import { SandboxAgent, filesystem } from '@openai/agents/sandbox';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents-core/testing';

import { client, makeAgent, manifest } from './agent_world.mjs';
import { REAL, pkg, startServer } from './servers.mjs';

setTracingDisabled(true);
const HERE = path.dirname(fileURLToPath(import.meta.url));
let server;
let tmp;

before(async () => {
    server = await startServer();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'oa-agent-'));
});

after(async () => {
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
});

const READ = 'const csv = await workspace.readFile("in/orders.csv");\n' +
    'const rows = csv.trim().split("\\n").slice(1).map((l) => l.split(","));\n' +
    'return { orders: rows.length, total: rows.reduce((s, r) => s + Number(r[1]), 0) };';

function patchCall(callId, operation) {
    return { type: 'apply_patch_call', callId, status: 'completed', operation };
}

test('a SandboxAgent reads, patches, is serialized at an approval, resumes in a new process and finishes',
    async () => {
        const model = new ScriptedModel([
            [functionCall('run_javascript', { code: READ }, { callId: 'c-read' })],
            [patchCall('p-create', { type: 'create_file', path: 'out/notes.md',
                diff: '+# Notes\n+orders: ?\n+total: ?\n' })],
            [patchCall('p-update', { type: 'update_file', path: 'out/notes.md',
                diff: '@@\n # Notes\n-orders: ?\n-total: ?\n+orders: 3\n+total: 175\n' })],
            [functionCall('publish', { path: 'out/report.md' }, { callId: 'c-publish' })],
        ]);
        const sandboxClient = client(server);
        const first = await run(makeAgent(model), 'Summarize the orders.',
            { sandbox: { client: sandboxClient } });

        /* the model saw what the code read, and each patch applied */
        const outputs = first.newItems.filter((i) => i.type === 'tool_call_output_item')
            .map((i) => i.rawItem);
        const read = JSON.parse(outputs.find((o) => o.callId === 'c-read').output.text ??
            outputs.find((o) => o.callId === 'c-read').output);
        assert.equal(read.status, 'completed');
        assert.deepEqual(read.value, { orders: 3, total: 175 });
        const patched = outputs.filter((o) => o.type === 'apply_patch_call_output');
        assert.deepEqual(patched.map((o) => o.status), ['completed', 'completed'],
            JSON.stringify(patched));

        /* it stopped for the person; the state goes to disk as a string, nothing else does:
         * of the session it holds where the workspace is in airlockd, no file, no key */
        assert.equal(first.interruptions.length, 1);
        assert.equal(first.interruptions[0].name, 'publish');
        const saved = first.state.toString();
        assert.ok(!saved.includes(server.key), 'the API key is not in the RunState');
        const provider = JSON.parse(saved).sandbox.sessionState.providerState;
        assert.deepEqual(Object.keys(provider), ['workspace']);
        assert.match(provider.workspace.from_run, /^run_[0-9a-f]{32}$/);
        fs.writeFileSync(path.join(tmp, 'state.json'), saved);

        /* asynchronously: the fake airlockd answers from this process */
        const child = await new Promise((resolve) => {
            const p = spawn(process.execPath, [path.join(HERE, 'agent_resume.mjs')], {
                env: { ...process.env, OA_URL: server.url, OA_KEY: server.key,
                    OA_DEPARTMENT: server.department, OA_STATE: path.join(tmp, 'state.json'),
                    OA_OUT: path.join(tmp, 'out.json') },
                stdio: ['ignore', 'pipe', 'pipe'],
            });
            let text = '';
            p.stdout.on('data', (d) => (text += d));
            p.stderr.on('data', (d) => (text += d));
            p.on('exit', (status) => resolve({ status, text }));
        });
        assert.equal(child.status, 0, child.text);
        const out = JSON.parse(fs.readFileSync(path.join(tmp, 'out.json'), 'utf8'));
        assert.equal(out.finalOutput, 'The report is in out/report.md and published.');
        assert.equal(out.published, 'published out/report.md');
        assert.equal(out.report, '# Orders\n\n3 orders, 175 in all.\n\n# Notes\norders: 3\ntotal: 175');
        /* applyDiff's create mode ends the file at its last line, as the SDK's editors do */
        assert.equal(out.notes, '# Notes\norders: 3\ntotal: 175');
        /* the resumed session started where the first process left the workspace */
        assert.deepEqual(out.resumedFrom, JSON.parse(saved).sandbox.sessionState.providerState.workspace);
        if (!REAL) {
            const runs = server.fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/runs');
            assert.ok(runs.every((r) => r.body.department === 'finance' && r.body.language === 'js'));
        }
    });

test('a session made by the application: airlockCodeTool(session) and apply_patch share it', async () => {
    const session = await client(server).create({ manifest: manifest() });
    const model = new ScriptedModel([
        [functionCall('run_javascript', { code:
            'await workspace.writeFile("out/p.txt", "from code"); return 1;' }, { callId: 'c1' })],
        [patchCall('p1', { type: 'update_file', path: 'out/p.txt',
            diff: '@@\n-from code\n+from code, patched\n' })],
        [assistantMessage('done')],
    ]);
    const agent = new SandboxAgent({ name: 'own', instructions: 'Write out/p.txt.', model,
        capabilities: [filesystem()], tools: [pkg.airlockCodeTool(session)] });
    const result = await run(agent, 'Go.', { sandbox: { session } });
    assert.equal(result.finalOutput, 'done');
    assert.equal(new TextDecoder().decode(await session.readFile({ path: 'out/p.txt' })),
        'from code, patched');
});
