// node_expect.mjs - checks (or writes) the expected values of guest cases against Node.
//
// Usage: node tests/compat/node_expect.mjs [--write] [--polyfill MODULE] CASE.js|DIR...
//
// Each case whose .expect says "status": "completed" (the default) and does not say
// "node": false runs in Node as the body of an async function, like airlock runs it; the value
// it returns must be JSON data (the builtins and intl cases return plain data on purpose), and
// is compared with the .expect "value" (--write replaces it). TZ is UTC, as in airlock's Intl.
// Node 20 lacks a few ES2024-ES2025 builtins (Object.groupBy, Promise.withResolvers, the Set
// methods, Array.fromAsync): --polyfill core-js/actual (installed anywhere outside the
// repository, e.g. `npm install --prefix /tmp/oracle core-js`) supplies them as reference
// implementations. Cases that need them are reported as skipped when they are missing.
// "node_ignore": [keys] in a .expect names top-level keys of the value where the reference
// implementation is known to depart from the specification (each with a comment in the case).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

process.env.TZ = 'UTC';
const args = process.argv.slice(2);
const write = args.includes('--write');
const pi = args.indexOf('--polyfill');
if (pi >= 0) {
  const req = createRequire(path.resolve(args[pi + 1]) + '/');
  req(path.resolve(args[pi + 1]));
  args.splice(pi, 2);
}
const files = [];
for (const a of args.filter((x) => !x.startsWith('--'))) {
  if (fs.statSync(a).isDirectory()) {
    for (const f of fs.readdirSync(a).sort()) {
      if (f.endsWith('.js')) files.push(path.join(a, f));
    }
  } else {
    files.push(a);
  }
}
const AsyncFunction = (async () => {}).constructor;
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
let ok = 0, bad = 0, skipped = 0;
for (const f of files) {
  const expPath = f.replace(/\.js$/, '.expect');
  const exp = JSON.parse(fs.readFileSync(expPath, 'utf8'));
  if ((exp.status ?? 'completed') !== 'completed' || exp.node === false) {
    skipped++;
    continue;
  }
  let value;
  try {
    value = JSON.parse(JSON.stringify(await new AsyncFunction(fs.readFileSync(f, 'utf8'))()));
  } catch (e) {
    console.log(`skip    ${f}: throws in Node (${e})`);
    skipped++;
    continue;
  }
  for (const k of exp.node_ignore ?? []) {
    if (value && typeof value === 'object' && exp.value && typeof exp.value === 'object') {
      value[k] = exp.value[k];
    }
  }
  if (same(value, exp.value)) {
    ok++;
    continue;
  }
  if (write) {
    exp.value = value;
    fs.writeFileSync(expPath, JSON.stringify(exp, null, 2) + '\n');
    console.log(`wrote   ${expPath}`);
    ok++;
  } else {
    bad++;
    console.log(`DIFFER  ${f}\n  node:   ${JSON.stringify(value)}\n  expect: ${JSON.stringify(exp.value)}`);
  }
}
console.log(`${ok} passed, ${bad} failed, ${skipped} skipped`);
process.exit(bad ? 1 : 0);
