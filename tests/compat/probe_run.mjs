// probe_run.mjs - the run@2.1.5 side of the compatibility table: runs each probe of probes.txt
// on the npm package `run` (the peer) and prints {"<feature>": true|false, ...} as JSON.
//
// Usage: node tests/compat/probe_run.mjs PEER_DIR PROBES
//   PEER_DIR: an npm prefix holding run@2.1.5 (see probe.py for how to install it).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [peerDir, probesPath] = process.argv.slice(2);
const require = createRequire(path.resolve(peerDir, 'package.json'));
const pkgPath = require.resolve('run/package.json');
const pkg = require(pkgPath);
const { createRunner } = await import(
  pathToFileURL(path.join(path.dirname(pkgPath), pkg.exports['.'].import)).href
);
const runner = createRunner({});
const out = {};
for (const line of fs.readFileSync(probesPath, 'utf8').split('\n')) {
  if (!line.trim() || line.startsWith('#')) continue;
  const parts = line.split(' | ');
  const feature = parts[2];
  const source = parts.slice(3).join(' | ').replaceAll('\u23ce', '\n');
  let ok = false;
  try {
    const r = await runner.run({ source, hostFunctions: {} });
    ok = r.status === 'completed' && r.value === true;
  } catch (e) {
    ok = false;
  }
  out[feature] = ok;
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
