// differential.mjs - tsstrip against TypeScript, snippet by snippet.
//
// For each corpus/*.ts (a function body that returns a value):
//   1. TypeScript: ts.transpileModule (no type checking; options below only strip types);
//      a snippet TypeScript reports a syntax error for is a broken corpus entry.
//   2. tsstrip-cli (our stripper) on the same text. Without --transform its output must have
//      the input's length with every line terminator at the same offset.
//   3. Both outputs run in Node's vm as the body of an async function; the results (the
//      returned value, deeply serialized, or the thrown error's name and message) must match.
// A snippet whose first line is `// @refuse: WORDS` must be refused by tsstrip with a message
// containing WORDS and a LINE:COL position; `// @transform` on the next line means that with
// --transform it is rewritten instead and compared like any other snippet.
// Prints one line per failure and `N passed, N failed`; exit status 1 on any failure.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

const args = process.argv.slice(2);
const opt = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
};
const transform = args.includes('--transform');
const ts = createRequire(import.meta.url)(path.resolve(opt('--typescript')));
const cli = opt('--cli');
const corpus = opt('--corpus');
const only = opt('--only');

const compilerOptions = {
    target: ts.ScriptTarget.ESNext, // nothing down-levelled: only types go
    module: ts.ModuleKind.ESNext,
    useDefineForClassFields: true, // class fields keep JavaScript's [[Define]] semantics
    verbatimModuleSyntax: false,
    isolatedModules: true,
    experimentalDecorators: false,
    removeComments: false,
    sourceMap: false,
};

function serialize(v, depth = 0, seen = new Set()) {
    if (depth > 6) return '…';
    const t = typeof v;
    if (v === null) return 'null';
    if (t === 'undefined') return 'undefined';
    if (t === 'number') return Object.is(v, -0) ? '-0' : String(v);
    if (t === 'bigint') return `${v}n`;
    if (t === 'string') return JSON.stringify(v);
    if (t === 'boolean') return String(v);
    if (t === 'symbol') return `Symbol(${v.description ?? ''})`;
    if (t === 'function') {
        const own = Object.keys(v).map((k) => `${k}:${serialize(v[k], depth + 1, seen)}`);
        return `[function ${v.name}]{${own.join(',')}}`;
    }
    if (seen.has(v)) return '[cycle]';
    seen.add(v);
    let out;
    const tag = Object.prototype.toString.call(v);
    if (Array.isArray(v)) {
        out = `[${v.map((x) => serialize(x, depth + 1, seen)).join(',')}]`;
    } else if (tag === '[object Map]') {
        out = `Map{${[...v].map(([k, x]) => `${serialize(k, depth + 1, seen)}=>${serialize(x, depth + 1, seen)}`).join(',')}}`;
    } else if (tag === '[object Set]') {
        out = `Set{${[...v].map((x) => serialize(x, depth + 1, seen)).join(',')}}`;
    } else if (tag === '[object Date]') {
        out = `Date(${v.getTime()})`;
    } else if (tag === '[object RegExp]') {
        out = String(v);
    } else if (tag === '[object Error]') {
        out = `${v.name}(${v.message})`;
    } else {
        const ctor = v.constructor && typeof v.constructor === 'function' ? v.constructor.name : '';
        const keys = Reflect.ownKeys(v).map((k) => {
            const d = Object.getOwnPropertyDescriptor(v, k);
            const val = 'value' in d ? serialize(d.value, depth + 1, seen) : `get/set`;
            return `${typeof k === 'symbol' ? serialize(k) : k}:${val}`;
        });
        out = `${ctor}{${keys.join(',')}}`;
    }
    seen.delete(v);
    return out;
}

async function evaluate(js) {
    const context = vm.createContext({ console: { log() {} } });
    const code = `(async function () {\n${js}\n})()`;
    let timer;
    try {
        const promise = vm.runInContext(code, context, { timeout: 2000 });
        const timeout = new Promise((_, reject) => {
            timer = setTimeout(() => reject({ name: 'Timeout', message: 'no result in 2 s' }), 2000);
        });
        const value = await Promise.race([promise, timeout]);
        return `value ${serialize(value)}`;
    } catch (e) {
        const name = e && typeof e === 'object' ? e.name : typeof e;
        const message = e && typeof e === 'object' ? e.message : String(e);
        return `throw ${name}: ${message}`;
    } finally {
        clearTimeout(timer);
    }
}

// Offsets (in bytes, as the stripper keeps them) of every line terminator.
function lineBreaks(text) {
    const b = Buffer.from(text, 'utf8');
    const at = [];
    for (let i = 0; i < b.length; i++) {
        if (b[i] === 0x0a || b[i] === 0x0d) at.push(i);
        else if (b[i] === 0xe2 && b[i + 1] === 0x80 && (b[i + 2] === 0xa8 || b[i + 2] === 0xa9)) at.push(i);
    }
    return at.join(',');
}

const files = fs.readdirSync(corpus).filter((f) => f.endsWith('.ts')).sort();
let passed = 0;
let failed = 0;
const fail = (file, why) => {
    failed++;
    console.log(`FAIL ${file}: ${why}`);
};

for (const file of files) {
    if (only && !file.includes(only)) continue;
    const src = fs.readFileSync(path.join(corpus, file), 'utf8');
    const lines = src.split('\n');
    const refuse = /^\/\/ @refuse: (.*)$/.exec(lines[0])?.[1];
    const transformable = refuse !== undefined && lines[1] === '// @transform';

    const ts_out = ts.transpileModule(src, { compilerOptions, reportDiagnostics: true, fileName: file });
    const diags = (ts_out.diagnostics ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' '));
    if (diags.length > 0) {
        fail(file, `TypeScript reports: ${diags.join('; ')} (broken corpus entry)`);
        continue;
    }
    const ts_js = ts_out.outputText.replace(/^export \{\};\s*$/m, '');

    const cliArgs = transform ? ['--transform', '--name', file] : ['--name', file];
    const ours = spawnSync(cli, cliArgs, { input: src, encoding: 'utf8', timeout: 10000 });
    if (ours.status === null) {
        fail(file, `tsstrip-cli died (${ours.signal ?? ours.error})`);
        continue;
    }
    const expectRefusal = refuse !== undefined && !(transform && transformable);
    if (expectRefusal) {
        const msg = ours.stderr.trim();
        const pos = new RegExp(`\\(${file.replace(/[.]/g, '\\.')}:\\d+:\\d+\\)`);
        if (ours.status !== 1) {
            fail(file, `expected a refusal mentioning "${refuse}", got exit ${ours.status}`);
        } else if (!msg.toLowerCase().includes(refuse.toLowerCase()) || !pos.test(msg)) {
            fail(file, `refusal message lacks "${refuse}" or (${file}:LINE:COL): ${msg}`);
        } else {
            passed++;
        }
        continue;
    }
    if (ours.status !== 0) {
        fail(file, `tsstrip refused: ${ours.stderr.trim()}`);
        continue;
    }
    const js = ours.stdout;
    if (!transform || refuse === undefined) {
        if (Buffer.byteLength(js) !== Buffer.byteLength(src)) {
            fail(file, `output length ${Buffer.byteLength(js)} != input length ${Buffer.byteLength(src)}`);
            continue;
        }
        if (lineBreaks(js) !== lineBreaks(src)) {
            fail(file, 'line terminators moved');
            continue;
        }
    }
    const want = await evaluate(ts_js);
    if (want.startsWith('throw SyntaxError')) {
        fail(file, `TypeScript's output does not run: ${want} (broken corpus entry)`);
        continue;
    }
    const got = await evaluate(js);
    if (got !== want) {
        fail(file, `results differ\n  typescript: ${want}\n  tsstrip:    ${got}\n  --- tsstrip output ---\n${js}\n  --- typescript output ---\n${ts_js}`);
        continue;
    }
    passed++;
}

console.log(`tsstrip.differential${transform ? ' (--transform)' : ''}: typescript ${ts.version}, ${files.length} snippets`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
