// session.test.mjs - openai_agents.session (and .airlockd): AirlockSandboxClient and its
// sessions called as the SDK calls them. The manifest's files become one snapshot; reads come
// from the workspace's archive; every write is a run that airlockd checks against the outputs
// (a write elsewhere fails EROFS and changes nothing); the workspace persists and hydrates as a
// tar and an archive reaching outside the root never leaves the process; a session resumed from
// its serialized state (which holds no key and no file) sees the same files; the code tool runs
// in the same workspace. Against the fake, the requests are checked member by member.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { RunContext } from '@openai/agents';
import { Manifest } from '@openai/agents/sandbox';

import { ORDERS, client, manifest } from './agent_world.mjs';
import { REAL, pkg, startServer } from './servers.mjs';

let server;
let sandbox;

before(async () => {
    server = await startServer();
    sandbox = client(server);
});

after(async () => {
    await server?.stop();
});

const text = (b) => new TextDecoder().decode(b);
/* airlockd's run.file records of a run (the admin reads the audit log): [op, path, sha256?] */
async function fileRecords(run) {
    const doc = await server.airlockd.ok('GET',
        `/v1/audit?run=${run}&action=run.file&limit=1000`);
    return doc.records.map((r) => [r.details.op, r.details.path, r.details.error]);
}
const requests = (method, prefix) => (server.fake?.requests ?? [])
    .filter((r) => r.method === method && r.path.startsWith(prefix));

test('create uploads the manifest\'s files as one snapshot; reads come from it', async () => {
    const before = requests('POST', '/v1/snapshots').length;
    const s = await sandbox.create({ manifest: manifest() });
    assert.match(s.state.workspace.from_snapshot, /^snap_[0-9a-f]{32}$/);
    assert.equal(text(await s.readFile({ path: 'in/orders.csv' })), ORDERS);
    assert.equal(text(await s.readFile({ path: '/workspace/in/orders.csv' })), ORDERS);
    assert.equal(text(await s.readFile({ path: 'in/orders.csv', maxBytes: 9 })), 'id,amount');
    assert.deepEqual(await s.listDir({ path: '.' }), [
        { name: 'in', path: 'in', type: 'dir' }, { name: 'out', path: 'out', type: 'dir' }]);
    assert.deepEqual(await s.listDir({ path: '/workspace/in' }),
        [{ name: 'orders.csv', path: 'in/orders.csv', type: 'file' }]);
    assert.equal(await s.pathExists('in/orders.csv'), true);
    assert.equal(await s.pathExists('in/missing.csv'), false);
    assert.equal(await s.directoryExists('out'), true);
    assert.equal(await s.directoryExists('in/orders.csv'), false);
    await assert.rejects(s.readFile({ path: 'in/missing.csv' }), /^Error: ENOENT/);
    await assert.rejects(s.readFile({ path: 'in' }), /^Error: EISDIR/);
    await assert.rejects(s.readFile({ path: '../etc/passwd' }), /^Error: EACCES/);
    await assert.rejects(s.readFile({ path: '/etc/passwd' }), /^Error: EACCES/);
    if (!REAL) {
        const ups = requests('POST', '/v1/snapshots');
        assert.equal(ups.length, before + 1);
        assert.equal(ups.at(-1).path, '/v1/snapshots?department=finance');
        assert.equal(ups.at(-1).type, 'application/x-tar');
        assert.deepEqual(pkg.readTar(ups.at(-1).body).map((e) => e.path), ['in', 'in/orders.csv', 'out']);
        assert.equal(requests('POST', '/v1/runs').length, 0, 'no run for reads');
    }
});

test('a manifest entry that is no file or directory is refused: storage is an airlockd mount', async () => {
    await assert.rejects(sandbox.create({ manifest: new Manifest({
        entries: { data: { type: 'local_dir', src: '/etc' } } }) }),
    /manifest entry data is a local_dir: .*airlockd mount/);
});

test('apply_patch writes by a run; the run\'s workspace becomes the session\'s', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    const snap = s.state.workspace.from_snapshot;
    const editor = s.createEditor();
    const made = await editor.createFile({ type: 'create_file', path: 'out/a/notes.md',
        diff: '+one\n+two\n' });
    assert.equal(made.status, 'completed');
    assert.match(s.state.workspace.from_run, /^run_[0-9a-f]{32}$/);
    if (REAL) {
        /* the write is airlockd's: audited as the run's file operations */
        const ops = await fileRecords(s.state.workspace.from_run);
        assert.ok(ops.some(([op, p, e]) => op === 'writeFile' && p === 'out/a/notes.md' && !e),
            JSON.stringify(ops));
    }
    assert.equal(text(await s.readFile({ path: 'out/a/notes.md' })), 'one\ntwo');
    await editor.updateFile({ type: 'update_file', path: 'out/a/notes.md',
        diff: '@@\n one\n-two\n+three\n', moveTo: 'out/notes.md' });
    assert.equal(text(await s.readFile({ path: 'out/notes.md' })), 'one\nthree');
    await assert.rejects(s.readFile({ path: 'out/a/notes.md' }), /ENOENT/);
    await editor.deleteFile({ type: 'delete_file', path: 'out/notes.md' });
    await assert.rejects(s.readFile({ path: 'out/notes.md' }), /ENOENT/);
    if (!REAL) {
        const body = requests('POST', '/v1/runs').at(-3).body;
        assert.deepEqual(Object.keys(body).sort(),
            ['department', 'functions', 'input', 'language', 'source', 'wait', 'workspace']);
        assert.equal(body.department, 'finance');
        assert.deepEqual(body.input, { path: 'out/a/notes.md', content: 'one\ntwo' });
        assert.deepEqual(body.workspace, { version: 1, root: '/workspace', entries: {},
            outputs: ['out/'], from_snapshot: snap });
    }
});

test('a write outside the outputs fails EROFS in airlockd and changes nothing', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    const where = { ...s.state.workspace };
    const out = await s.createEditor().updateFile({ type: 'update_file', path: 'in/orders.csv',
        diff: '@@\n id,amount\n-o-1,100\n+o-1,1000000\n' }).catch((e) => e);
    assert.ok(out instanceof pkg.AirlockRunError, String(out));
    assert.match(out.message, /EROFS/);
    assert.equal(out.run.status, 'failed');
    if (REAL) {
        assert.deepEqual((await fileRecords(out.run.id)).filter(([op]) => op === 'writeFile'),
            [['writeFile', 'in/orders.csv', 'EROFS']]);
    }
    assert.deepEqual(s.state.workspace, where);
    assert.equal(text(await s.readFile({ path: 'in/orders.csv' })), ORDERS);
});

test('persist and hydrate: the workspace as a tar, into another session', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    await s.createEditor().createFile({ type: 'create_file', path: 'out/r.md', diff: '+done\n' });
    const tar = await s.persistWorkspace();
    assert.deepEqual(pkg.readTar(tar).filter((e) => e.type === 'file').map((e) => e.path).sort(),
        ['in/orders.csv', 'out/r.md']);
    const t = await sandbox.create({ manifest: new Manifest({}) });
    await t.hydrateWorkspace(tar);
    assert.match(t.state.workspace.from_snapshot, /^snap_/);
    assert.equal(text(await t.readFile({ path: 'out/r.md' })), 'done');
    assert.equal(text(await t.readFile({ path: 'in/orders.csv' })), ORDERS);
});

test('an archive reaching outside the root is refused before anything is sent', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    const where = { ...s.state.workspace };
    const evil = pkg.writeTar([{ path: 'x', type: 'file', data: new Uint8Array([1]) }]);
    evil.set(new TextEncoder().encode('../../etc/cron.d/x\0'), 0);
    /* fix the checksum so only the name is wrong */
    evil.fill(0x20, 148, 156);
    const sum = evil.subarray(0, 512).reduce((a, b) => a + b, 0);
    evil.set(new TextEncoder().encode(sum.toString(8).padStart(6, '0') + '\0 '), 148);
    const ups = requests('POST', '/v1/snapshots').length;
    await assert.rejects(s.hydrateWorkspace(evil), /leaves the workspace/);
    assert.equal(requests('POST', '/v1/snapshots').length, ups);
    assert.deepEqual(s.state.workspace, where);
});

test('serialized, a session is where its workspace is (no key, no file); resumed, it sees it', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    await s.createEditor().createFile({ type: 'create_file', path: 'out/x.txt', diff: '+kept\n' });
    const saved = await sandbox.serializeSessionState(s.state);
    assert.deepEqual(saved, { workspace: s.state.workspace });
    assert.ok(!JSON.stringify(saved).includes(server.key));
    const other = client(server);
    const state = await other.deserializeSessionState({ ...saved, manifest: manifest() });
    const r = await other.resume(state);
    assert.equal(text(await r.readFile({ path: 'out/x.txt' })), 'kept');
    /* a resumed snapshot (no run yet) is read through a run that starts from it */
    const fresh = await sandbox.create({ manifest: manifest() });
    const r2 = await other.resume(await other.deserializeSessionState({
        ...(await sandbox.serializeSessionState(fresh.state)), manifest: manifest() }));
    assert.equal(text(await r2.readFile({ path: 'in/orders.csv' })), ORDERS);
    await assert.rejects(other.deserializeSessionState({ manifest: manifest(),
        workspace: { from_run: '../v1/x' } }), /workspace must be/);
});

test('the code tool runs JavaScript in the same workspace; a failed run changes nothing', async () => {
    const s = await sandbox.create({ manifest: manifest() });
    const code = pkg.airlockCodeTool(s);
    assert.equal(code.name, 'run_javascript');
    const ok = JSON.parse(await code.invoke(new RunContext({}), JSON.stringify({ code:
        'const csv = await workspace.readFile("in/orders.csv");\n' +
        'await workspace.writeFile("out/lines.txt", String(csv.trim().split("\\n").length));\n' +
        'console.log("counted");\nreturn "ok";' })));
    assert.equal(ok.status, 'completed', JSON.stringify(ok));
    assert.equal(ok.value, 'ok');
    assert.deepEqual(ok.console, ['counted']);
    assert.equal(s.state.workspace.from_run, ok.run);
    assert.equal(text(await s.readFile({ path: 'out/lines.txt' })), '4');
    const bad = JSON.parse(await code.invoke(new RunContext({}), JSON.stringify({ code:
        'await workspace.writeFile("out/half.txt", "x");\nthrow new Error("stop");' })));
    assert.equal(bad.status, 'failed');
    assert.match(bad.error.message, /stop/);
    assert.equal(s.state.workspace.from_run, ok.run);
    await assert.rejects(s.readFile({ path: 'out/half.txt' }), /ENOENT/);
});

test('below a mount entry, reads and listings are runs; the mount is never in an archive',
    async () => {
        server.plant({
            '2026/q1.csv': new TextEncoder().encode('q,total\n1,175\n'),
            '2026/deep/x.bin': Uint8Array.from([0, 255, 7]),
            '2025/old.csv': new TextEncoder().encode('old'),
        });
        const lake = new pkg.AirlockSandboxClient({ url: server.url, key: server.key,
            department: 'finance',
            mounts: { lake: server.mount } });
        const s = await lake.create({ manifest: manifest() });
        const runs = () => requests('POST', '/v1/runs').length;
        const n = runs();
        assert.deepEqual((await s.listDir({ path: '.' })).map((e) => [e.name, e.type]),
            [['in', 'dir'], ['lake', 'dir'], ['out', 'dir']]);
        assert.equal(runs(), n, 'the root is listed from the archive and the manifest');
        assert.equal(text(await s.readFile({ path: 'lake/q1.csv' })), 'q,total\n1,175\n');
        assert.deepEqual(await s.readFile({ path: '/workspace/lake/deep/x.bin' }),
            Uint8Array.from([0, 255, 7]));
        assert.deepEqual(await s.listDir({ path: 'lake' }), [
            { name: 'deep', path: 'lake/deep', type: 'dir' },
            { name: 'q1.csv', path: 'lake/q1.csv', type: 'file' }]);
        if (!REAL) {
            assert.equal(runs(), n + 3);
            const body = requests('POST', '/v1/runs').at(-1).body;
            assert.deepEqual(body.workspace.entries, { lake: server.mount });
        }
        /* the code tool sees the mount too, and cannot write into it */
        const code = pkg.airlockCodeTool(s);
        const copied = JSON.parse(await code.invoke(new RunContext({}), JSON.stringify({ code:
            'await workspace.writeFile("out/q1.csv", await workspace.readFile("lake/q1.csv"));' })));
        assert.equal(copied.status, 'completed', JSON.stringify(copied));
        const denied = JSON.parse(await code.invoke(new RunContext({}), JSON.stringify({ code:
            'await workspace.writeFile("lake/q1.csv", "forged");' })));
        assert.match(denied.error.message, /EROFS/);
        const tar = pkg.readTar(await s.persistWorkspace()).map((e) => e.path);
        assert.ok(tar.includes('out/q1.csv') && !tar.some((p) => p.startsWith('lake')), tar.join());
        await assert.rejects(s.hydrateWorkspace(pkg.writeTar([{ path: 'lake/q1.csv', type: 'file',
            data: new Uint8Array([1]) }])), /lies in the mount entry lake/);
        await assert.rejects(lake.create({ manifest: new Manifest({ entries: {
            lake: { type: 'dir' } } }) }), /manifest entry lake is also a mount/);
    });

test('view_image: an image of the workspace for the model, anything else refused by name', async () => {
    const s = await sandbox.create({ manifest: new Manifest({ entries: {
        'pic.png': { type: 'file', content: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10]) },
        'notes.txt': { type: 'file', content: 'not an image' } } }) });
    const img = await s.viewImage({ path: 'pic.png' });
    assert.equal(img.type, 'image');
    assert.equal(img.image.mediaType, 'image/png');
    assert.deepEqual(img.image.data, Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10]));
    await assert.rejects(s.viewImage({ path: 'notes.txt' }), /not a supported image/);
    await assert.rejects(s.viewImage({ path: 'none.png' }), /not found/);
});

test('a supervised department: each write waits for a person; approved it lands, denied nothing does',
    { skip: !REAL && 'the fake has no approvals' }, async () => {
        const a = server.airlockd;
        const s = await sandbox.create({ manifest: manifest() });
        /* the approver's pending approval of kind run, once the write has asked for one */
        const pending = async () => {
            for (let i = 0; i < 600; i++) {
                const list = await a.ok('GET', '/v1/approvals?status=pending', undefined,
                    server.approverKey);
                const mine = list.find((x) => x.kind === 'run');
                if (mine) {
                    return mine;
                }
                await new Promise((resolve) => setTimeout(resolve, 100));
            }
            throw new Error('no approval of the write appeared');
        };
        await a.ok('PUT', '/v1/departments/finance/policy',
            { autonomy: 'supervised', allow_adhoc: true });
        try {
            const editor = s.createEditor();
            const write = editor.createFile({ type: 'create_file', path: 'out/ok.md', diff: '+yes\n' });
            await a.ok('POST', `/v1/approvals/${(await pending()).id}/approve`, { comment: 'ok' },
                server.approverKey);
            assert.equal((await write).status, 'completed');
            assert.equal(text(await s.readFile({ path: 'out/ok.md' })), 'yes');
            const where = { ...s.state.workspace };
            const refused = editor.createFile({ type: 'create_file', path: 'out/no.md', diff: '+no\n' })
                .catch((e) => e);
            await a.ok('POST', `/v1/approvals/${(await pending()).id}/deny`, { comment: 'not now' },
                server.approverKey);
            const e = await refused;
            assert.ok(e instanceof pkg.AirlockRunError, String(e));
            assert.equal(e.run.status, 'denied');
            assert.deepEqual(s.state.workspace, where);
            await assert.rejects(s.readFile({ path: 'out/no.md' }), /ENOENT/);
        } finally {
            await a.ok('PUT', '/v1/departments/finance/policy',
                { autonomy: 'autonomous', allow_adhoc: true });
        }
    });
