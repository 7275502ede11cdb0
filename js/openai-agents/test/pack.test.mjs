// pack.test.mjs - openai_agents.pack: what `npm pack` of the built package holds - package.json,
// README.md and every module's .js and .d.ts, nothing of src/, test/ or node_modules - and that
// its entry exports what docs/openai-agents.md documents.
//
// Environment (set by js/openai-agents/CMakeLists.txt): AIRLOCK_NPM (npm).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { pkg } from './servers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

test('the tarball holds the package and nothing else', () => {
    const [info] = JSON.parse(execFileSync(process.env.AIRLOCK_NPM || 'npm',
        ['pack', '--dry-run', '--json', '--loglevel=error'],
        { cwd: path.join(HERE, '..'), encoding: 'utf8' }));
    assert.equal(info.name, '@airlock/openai-agents');
    const files = info.files.map((f) => f.path).sort();
    const stems = ['code', 'http', 'index', 'sandbox', 'tar'];
    assert.deepEqual(files, ['README.md', ...stems.flatMap((s) => [`dist/${s}.d.ts`, `dist/${s}.js`]),
        'package.json'].sort());
});

test('the entry exports the client, the session, the code tool and capability, the archive', () => {
    for (const name of ['AirlockSandboxClient', 'AirlockSandboxSession', 'AirlockRunError',
        'AirlockHttpError', 'airlockCodeTool', 'airlockCode', 'readTar', 'writeTar', 'TarError']) {
        assert.equal(typeof pkg[name], 'function', name);
    }
    assert.equal(new pkg.AirlockSandboxClient({ url: 'http://127.0.0.1:1', key: 'ak_x',
        department: 'finance' }).backendId, 'airlock');
    assert.throws(() => new pkg.AirlockSandboxClient({ url: 'ftp://x', key: 'ak_x', department: 'd' }),
        /url must be an http/);
    assert.throws(() => new pkg.AirlockSandboxClient({ url: 'http://x', key: '', department: 'd' }),
        /key must be an API key/);
    assert.throws(() => new pkg.AirlockSandboxClient({ url: 'http://x', key: 'ak_x' }),
        /department must name a department/);
});
