// run_bench.mjs - the Node side of `make bench`: the workloads of bench/bench.c on a package with
// the interface of the npm package `run` 2.1.5, one JSON object per line on stdout in bench.c's
// format (its runtime named by the first argument), progress on stderr. The same code measures
// `run` itself (QuickJS in WASM on Node worker threads) and @airlock/run (libairlock in a
// Node-API addon, each run in an airlock-worker process): only the package differs. Every run's
// value is checked (for W7, the interruption and the resume's value).
//
// Usage: node --expose-gc bench/run_bench.mjs RUNTIME PACKAGE_DIR [--quick]
//   RUNTIME: the name its lines carry ("run", "airlock-run").
//   PACKAGE_DIR: the package's folder, where its package.json is (for `run`,
//   build-release/bench-peer/node_modules/run; for @airlock/run, build-release/npm/airlock-run).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [runtime, packageDir] = process.argv.slice(2);
const quick = process.argv.includes('--quick');
if (!runtime || !packageDir || runtime.startsWith('--') || packageDir.startsWith('--')) {
  process.stderr.write('usage: run_bench.mjs RUNTIME PACKAGE_DIR [--quick]\n');
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
const entry = pkg.exports['.'];
const { createRunner, getHostFunctionContext } = await import(
  pathToFileURL(path.resolve(packageDir, typeof entry === 'string' ? entry : entry.import)).href
);
const log = text => process.stderr.write(`run_bench (${runtime}): ${text}\n`);

const scale = quick ? 10 : 1;
const tputSeconds = quick ? 1 : 10;
const PARKED_RUNS = 8;
const PARK_HOLD_MS = 1000;

// The same 1,000 orders bench.c builds: integer amounts, so both sums are exact.
const statuses = ['paid', 'pending', 'refunded'];
const orders = [];
let ordersTotal = 0;
for (let i = 0; i < 1000; i++) {
  const amount = 100 + ((i * 37) % 900);
  orders.push({ id: i + 1, customer: `customer-${i % 50}`, amount, status: statuses[i % 3] });
  ordersTotal += amount;
}

// Parked host calls of the memory measurement.
const parking = { resolvers: [], onArrive: null, open: false };

const hostFunctions = {
  store: {
    get: () => ({ id: 'k1', value: 42 }),
    orders: () => orders,
    park: () => {
      if (!parking.open) {
        return 1;
      }
      return new Promise(resolve => {
        parking.resolvers.push(resolve);
        parking.onArrive?.();
      });
    },
  },
};

const runner = createRunner({});
// W7's runner: the only one with a continuation secret (at least 32 bytes), as in bench.c.
const interruptRunner = createRunner({
  continuationSecret: 'airlock-bench-continuation-key-0123456789',
});
const now = () => performance.now();

async function runOnce(source, expect) {
  const t0 = now();
  const result = await runner.run({ source, hostFunctions });
  const t1 = now();
  if (result.status !== 'completed' || result.value !== expect) {
    throw new Error(`run returned ${JSON.stringify(result)}, expected ${expect}`);
  }
  return t1 - t0;
}

const median = s => (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2);
// Nearest rank: the smallest sample with at least 99% of the samples at or below it.
const p99 = s => s[Math.max(1, Math.ceil(0.99 * s.length)) - 1];
const fix = x => Number(x.toFixed(4));
const emit = obj => process.stdout.write(`${JSON.stringify({ runtime, ...obj })}\n`);

async function benchLatency(w) {
  const iterations = Math.max(5, Math.floor(w.iterations / scale));
  log(`${w.name} (${iterations} runs)`);
  for (let i = 0; i < w.warmup; i++) {
    await runOnce(w.src, w.expect);
  }
  const samples = [];
  for (let i = 0; i < iterations; i++) {
    if (w.paceMs) {
      await new Promise(resolve => setTimeout(resolve, w.paceMs)); // not timed
    }
    samples.push(await runOnce(w.src, w.expect));
  }
  samples.sort((a, b) => a - b);
  const m = median(samples);
  emit({
    workload: w.name,
    desc: w.desc,
    iterations,
    median_ms: fix(m),
    p99_ms: fix(p99(samples)),
    min_ms: fix(samples[0]),
  });
  return m;
}

// W7: orders.refund interrupts with {refund: 42}; reinvoked on the resume, it returns the
// person's resolution.
const refund = {
  src: 'const r = await orders.refund(42); return r;',
  payload: JSON.stringify({ refund: 42 }),
  resolution: { ok: true },
  hostFunctions: {
    orders: {
      refund: async id => {
        const { interrupt, resume } = getHostFunctionContext();
        if (resume === undefined) {
          interrupt({ refund: id });
        }
        return resume.resolution;
      },
    },
  },
};

// One interrupt and its resume; returns the wall time of the pair (both runs and, between
// them, reading the interruption id and the token) and the token's size in UTF-8 bytes.
async function pairOnce() {
  const { src: source, hostFunctions } = refund;
  const t0 = now();
  const first = await interruptRunner.run({ source, hostFunctions });
  if (first.status !== 'interrupted' || first.interruptions.length !== 1) {
    throw new Error(`W7: the first run returned ${JSON.stringify(first)}, expected an interrupt`);
  }
  const { continuation } = first;
  const second = await interruptRunner.run({
    source,
    hostFunctions,
    continuation,
    resolutions: [{ interruptionId: first.interruptions[0].id, value: refund.resolution }],
  });
  const t1 = now();
  const [i] = first.interruptions;
  if (i.hostFunctionName !== 'orders.refund' || JSON.stringify(i.payload) !== refund.payload) {
    throw new Error(`W7: interruption ${JSON.stringify(i)}, expected ${refund.payload}`);
  }
  if (second.status !== 'completed' || JSON.stringify(second.value) !== '{"ok":true}') {
    throw new Error(`W7: the resume returned ${JSON.stringify(second)}, expected {"ok":true}`);
  }
  return { ms: t1 - t0, tokenBytes: Buffer.byteLength(continuation, 'utf8') };
}

// Reports the largest token, as bench.c does.
async function benchInterrupt(w) {
  const iterations = Math.max(5, Math.floor(w.iterations / scale));
  log(`${w.name} (${iterations} pairs)`);
  for (let i = 0; i < w.warmup; i++) {
    await pairOnce();
  }
  const samples = [];
  let tokenBytes = 0;
  for (let i = 0; i < iterations; i++) {
    const { ms, tokenBytes: bytes } = await pairOnce();
    samples.push(ms);
    tokenBytes = Math.max(tokenBytes, bytes);
  }
  samples.sort((a, b) => a - b);
  emit({
    workload: w.name,
    desc: w.desc,
    iterations,
    median_ms: fix(median(samples)),
    p99_ms: fix(p99(samples)),
    min_ms: fix(samples[0]),
    token_bytes: tokenBytes,
  });
}

// N concurrent async loops on one runner (run gives each in-flight run its own worker thread,
// @airlock/run its own worker process).
async function benchThroughput(w, concurrency, seconds) {
  log(`W6 at concurrency ${concurrency} (${seconds} s)`);
  const t0 = now();
  const deadline = t0 + seconds * 1000;
  let runs = 0;
  const loop = async () => {
    while (now() < deadline) {
      await runOnce(w.src, w.expect);
      runs++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (now() - t0) / 1000;
  emit({
    workload: `W6c${concurrency}`,
    desc: `W2 throughput at concurrency ${concurrency}`,
    concurrency,
    seconds: Number(elapsed.toFixed(2)),
    runs,
    runs_per_s: Number((runs / elapsed).toFixed(1)),
  });
}

// A "Key:   123 kB" line of a /proc file, in kB; -1 when absent or unreadable.
function procKb(file, key) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return -1;
  }
  const m = text.match(new RegExp(`^${key}:\\s*(\\d+) kB`, 'm'));
  return m ? Number(m[1]) : -1;
}

// RSS and PSS (kB) summed over this process's children, as bench.c sums its workers: @airlock/run
// runs each run in an airlock-worker process (and its zygote) started by this one; `run` starts
// none. PSS stays -1 when any child's smaps_rollup is unreadable.
function childrenMemory() {
  let count = 0;
  let rss = 0;
  let pss = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) {
      continue;
    }
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // the name, in parentheses, may hold spaces: the fields after the last ')' are fixed
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) {
      continue;
    }
    const kb = procKb(`/proc/${name}/status`, 'VmRSS');
    if (kb < 0) {
      continue;
    }
    count++;
    rss += kb;
    const p = procKb(`/proc/${name}/smaps_rollup`, 'Pss');
    pss = p < 0 || pss < 0 ? -1 : pss + p;
  }
  return { count, rss, pss };
}

// 8 runs parked on a host call; measured once all 8 wait, answered 1 s after the first arrived.
// The measure is bench.c's: this process's RSS delta plus the summed RSS of its children then.
// The baseline follows the sequential workloads, so run's pool then holds the one worker thread
// they used, and @airlock/run's runner its zygote and one warm worker.
async function benchMemory() {
  log('MEM8');
  // V8 returns the pages a collection freed a little later, on its own threads: the baseline is
  // read once that has settled, so that it is not counted as memory the runs gave back.
  globalThis.gc?.();
  await new Promise(resolve => setTimeout(resolve, 200));
  const before = process.memoryUsage().rss;
  let firstAt = 0;
  const allParked = new Promise(resolve => {
    parking.onArrive = () => {
      if (parking.resolvers.length === 1) {
        firstAt = now();
      }
      if (parking.resolvers.length === PARKED_RUNS) {
        resolve();
      }
    };
  });
  parking.open = true;
  const runs = Array.from({ length: PARKED_RUNS }, () =>
    runOnce('return await store.park();', 1),
  );
  await allParked;
  const during = process.memoryUsage().rss;
  const children = childrenMemory();
  const wait = firstAt + PARK_HOLD_MS - now();
  if (wait > 0) {
    await new Promise(resolve => setTimeout(resolve, wait));
  }
  parking.open = false;
  for (const resolve of parking.resolvers.splice(0)) {
    resolve(1);
  }
  await Promise.all(runs);
  const mb = bytes => Number((bytes / 1048576).toFixed(2));
  emit({
    workload: 'MEM8',
    desc: `memory added by ${PARKED_RUNS} concurrent idle runs`,
    process_rss_before_mb: mb(before),
    process_rss_during_mb: mb(during),
    host_delta_mb: mb(during - before),
    workers: children.count,
    workers_rss_mb: mb(children.rss * 1024),
    workers_pss_mb: children.pss < 0 ? -1 : mb(children.pss * 1024),
    added_mb: mb(during - before + children.rss * 1024),
  });
}

const workloads = [
  { name: 'W1', desc: 'return 1+1', src: 'return 1+1', expect: 2, iterations: 200, warmup: 10 },
  {
    name: 'W2',
    desc: 'one awaited host call',
    src: 'return (await store.get("k1")).value;',
    expect: 42,
    iterations: 200,
    warmup: 10,
  },
  {
    name: 'W3',
    desc: '100 sequential awaited host calls',
    src: 'let s = 0;\nfor (let i = 0; i < 100; i++) {\n    s += (await store.get("k" + i)).value;\n}\nreturn s;',
    expect: 4200,
    iterations: 50,
    warmup: 3,
  },
  {
    name: 'W4',
    desc: 'recursive fib(27)',
    src: 'function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nreturn fib(27);',
    expect: 196418,
    iterations: 20,
    warmup: 2,
  },
  {
    name: 'W5',
    desc: 'host returns 1,000 orders, guest totals them',
    src: 'const orders = await store.orders();\nlet total = 0;\nfor (const o of orders) { total += o.amount; }\nreturn total;',
    expect: ordersTotal,
    iterations: 50,
    warmup: 3,
  },
  {
    name: 'W1p',
    desc: 'return 1+1, one run every 10 ms',
    src: 'return 1+1',
    expect: 2,
    iterations: 100,
    warmup: 10,
    paceMs: 10,
  },
  {
    name: 'W2p',
    desc: 'one awaited host call, one run every 10 ms',
    src: 'return (await store.get("k1")).value;',
    expect: 42,
    iterations: 100,
    warmup: 10,
    paceMs: 10,
  },
];

const medians = {};
for (const w of workloads) {
  medians[w.name] = await benchLatency(w);
}
emit({
  workload: 'W3call',
  desc: 'marginal cost per extra host call, (W3-W2)/99 of medians',
  median_ms: fix((medians.W3 - medians.W2) / 99),
});
await benchMemory();
for (const c of [1, 2, 8]) {
  await benchThroughput(workloads[1], c, tputSeconds);
}
// Last, as in bench.c.
await benchInterrupt({
  name: 'W7',
  desc: 'interrupt on the first host call, then resume',
  iterations: 200,
  warmup: 10,
});
