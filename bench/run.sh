#!/bin/sh
# bench/run.sh BUILD - the driver of `make bench`.
#
# Installs the peer (npm `run`, pinned by bench/package.json + bench/package-lock.json) into
# BUILD/bench-peer with `npm ci` when it is missing, then runs three sides one after the other
# (one process per side, never two at once) for BENCH_ROUNDS rounds (default 3): airlock, the C
# library (BUILD/bin/airlock_bench); @airlock/run, the package the build makes in
# BUILD/npm/airlock-run (target airlock_run_npm); and `run`. Both npm packages go through the same
# bench/run_bench.mjs, given the package's folder. Each round starts one side later than the
# round before, so over three rounds each side runs once in each place. It keeps each
# side's best round per workload, joins the JSON lines into a markdown table, prints it and
# rewrites the generated part of docs/benchmarks.md (between the bench:begin and bench:end
# markers).
#
# Each round ends with BUILD/bin/airlock_governed (bench/governed.c): al_run against airlockd's
# POST /v1/runs of an approved template, in a fresh BUILD/bench-governed (airlockd's data
# directory and request log stay there until the next round), joined into the second table.
#
# Then, once, the nodes phase: BUILD/bin/airlock_nodes (bench/nodes.c) on a throwaway PostgreSQL
# cluster (tests/support/pg_cluster.sh setup --durable: fsync and synchronous_commit on, as
# SQLite's commits are fsync'd) in BUILD/bench-pg, removed afterwards; 1, 2 and 3 airlockd nodes
# on one database against SQLite on one node, joined into the third table.
#
# After it, bench/workspace.py: a 50 MB workspace uploaded as a snapshot, restored into a run
# and read back as that run's workspace.tar (BUILD/bench-workspace.jsonl), the fifth table.
#
# BENCH_BASELINE=COMMIT adds the journal's cost against that commit (docs/benchmarks.md, "The
# journal's cost"; f4334e3 is the commit before the journal): its airlockd and airlock-worker are
# built from `git archive COMMIT` in BUILD/baseline (Release), then BUILD/bin/airlock_ab runs it
# against this build's, once on SQLite after the rounds and once on the nodes phase's PostgreSQL
# cluster (--pg), into BUILD/bench-ab.sqlite.jsonl and BUILD/bench-ab.pg.jsonl, joined into a
# fourth table.
#
# BENCH_QUICK=1 runs a tenth of the iterations and 1 s throughput phases, and leaves
# docs/benchmarks.md alone (a smoke test of the harness, not a measurement).
set -eu

BUILD=${1:-build-release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in
/*) ;;
*) BUILD=$ROOT/$BUILD ;;
esac
PEER=$BUILD/bench-peer
QUICK=
if [ "${BENCH_QUICK:-0}" = 1 ]; then
    QUICK=--quick
fi
ROUNDS=${BENCH_ROUNDS:-3}
case $ROUNDS in
'' | *[!0-9]* | 0) echo "run.sh: BENCH_ROUNDS must be a positive integer" >&2; exit 1 ;;
esac

for f in "$BUILD/bin/airlock_bench" "$BUILD/bin/airlock-worker" "$BUILD/bin/airlock_governed" \
    "$BUILD/bin/airlock_nodes" "$BUILD/bin/airlockd"; do
    if [ ! -x "$f" ]; then
        echo "run.sh: $f is missing; build first (make bench does)" >&2
        exit 1
    fi
done
AIRLOCK_RUN=$BUILD/npm/airlock-run
if [ ! -f "$AIRLOCK_RUN/package.json" ]; then
    echo "run.sh: $AIRLOCK_RUN is missing; build first (make bench does; target airlock_run_npm)" >&2
    exit 1
fi
command -v node >/dev/null || { echo "run.sh: node is required for the peer" >&2; exit 1; }
command -v python3 >/dev/null || { echo "run.sh: python3 is required for the table" >&2; exit 1; }
command -v psql >/dev/null || { echo "run.sh: psql (postgresql, scripts/bootstrap.sh) is required for the nodes phase" >&2; exit 1; }

# The baseline for the journal's cost, built once per commit: only airlockd and its worker. Its
# Release build trips GCC's -Wnonnull in runs.c (runs_cancel_where), fixed since; the flag keeps
# that one warning a warning and changes no code.
BASELINE=${BENCH_BASELINE:-}
if [ -n "$BASELINE" ]; then
    BASE_SHA=$(git -C "$ROOT" rev-parse --verify "$BASELINE^{commit}")
    BASE_DIR=$BUILD/baseline
    if [ "$(cat "$BASE_DIR/commit" 2>/dev/null)" != "$BASE_SHA" ]; then
        echo "run.sh: building airlockd of $BASELINE into $BASE_DIR" >&2
        rm -rf "$BASE_DIR"
        mkdir -p "$BASE_DIR/src" "$BASE_DIR/build/_deps" "$BASE_DIR/ab-base" "$BASE_DIR/ab-this"
        git -C "$ROOT" archive "$BASE_SHA" | tar -x -C "$BASE_DIR/src"
        if [ -f "$BUILD/_deps/qjsc-0.3.0.tgz" ]; then
            cp "$BUILD/_deps/qjsc-0.3.0.tgz" "$BASE_DIR/build/_deps/"
        fi
        cmake -S "$BASE_DIR/src" -B "$BASE_DIR/build" -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_C_FLAGS=-Wno-error=nonnull >&2
        cmake --build "$BASE_DIR/build" -j "$(nproc)" --target airlockd airlock-worker >&2
        cp "$BASE_DIR/build/bin/airlockd" "$BASE_DIR/build/bin/airlock-worker" "$BASE_DIR/ab-base/"
        echo "$BASE_SHA" >"$BASE_DIR/commit"
    fi
    # each airlockd finds the airlock-worker beside it
    cp "$BUILD/bin/airlockd" "$BUILD/bin/airlock-worker" "$BASE_DIR/ab-this/"
fi

# The peer, installed into the build folder only. npm ci checks the lock's integrity hash.
want=$(node -p "require('$ROOT/bench/package.json').dependencies.run")
have=$(node -p "try { require('$PEER/node_modules/run/package.json').version } catch { '' }")
if [ "$have" != "$want" ] || ! cmp -s "$ROOT/bench/package-lock.json" "$PEER/package-lock.json"; then
    echo "run.sh: installing run@$want into $PEER" >&2
    mkdir -p "$PEER"
    cp "$ROOT/bench/package.json" "$ROOT/bench/package-lock.json" "$PEER/"
    npm ci --prefix "$PEER" --no-audit --no-fund >&2
fi

# The machine, read before the runs (the load average says whether anything else was busy).
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# One side of a round, into BUILD/bench-SIDE.ROUND.jsonl.
bench_side() {
    case $1 in
    airlock)
        echo "run.sh: round $2/$ROUNDS: airlock (C API) ..." >&2
        (cd "$BUILD/bin" && ./airlock_bench $QUICK) >"$BUILD/bench-airlock.$2.jsonl"
        ;;
    airlock-run)
        echo "run.sh: round $2/$ROUNDS: @airlock/run $AIRLOCK_RUN_VERSION (Node $(node --version)) ..." >&2
        node --expose-gc "$ROOT/bench/run_bench.mjs" airlock-run "$AIRLOCK_RUN" $QUICK \
            >"$BUILD/bench-airlock-run.$2.jsonl"
        ;;
    run)
        echo "run.sh: round $2/$ROUNDS: run@$want (Node $(node --version)) ..." >&2
        node --expose-gc "$ROOT/bench/run_bench.mjs" run "$PEER/node_modules/run" $QUICK \
            >"$BUILD/bench-run.$2.jsonl"
        ;;
    esac
}
AIRLOCK_RUN_VERSION=$(node -p "require('$AIRLOCK_RUN/package.json').version")

# Rounds rotate the order of the sides, so a burst of outside load hits one round, not one side.
rm -f "$BUILD"/bench-airlock.*.jsonl "$BUILD"/bench-airlock-run.*.jsonl "$BUILD"/bench-run.*.jsonl \
    "$BUILD"/bench-governed.*.jsonl "$BUILD/bench-nodes.jsonl"
round=1
while [ "$round" -le "$ROUNDS" ]; do
    case $(((round - 1) % 3)) in
    0) order="airlock airlock-run run" ;;
    1) order="airlock-run run airlock" ;;
    *) order="run airlock airlock-run" ;;
    esac
    for side in $order; do
        bench_side "$side" "$round"
    done
    echo "run.sh: round $round/$ROUNDS: governed runs (al_run against airlockd) ..." >&2
    rm -rf "$BUILD/bench-governed"
    (cd "$BUILD/bin" && ./airlock_governed $QUICK ./airlockd "$BUILD/bench-governed") \
        >"$BUILD/bench-governed.$round.jsonl"
    round=$((round + 1))
done
AB_PAIRS=1000
if [ -n "$QUICK" ]; then
    AB_PAIRS=100
fi
rm -f "$BUILD/bench-ab.sqlite.jsonl" "$BUILD/bench-ab.pg.jsonl"
if [ -n "$BASELINE" ]; then
    echo "run.sh: the journal's cost: airlockd of $BASELINE against this one, SQLite ..." >&2
    rm -rf "$BUILD/bench-ab"
    (cd "$BUILD/bin" && ./airlock_ab "$BASE_DIR/ab-base/airlockd" "$BASE_DIR/ab-this/airlockd" \
        "$BUILD/bench-ab" $AB_PAIRS) >"$BUILD/bench-ab.sqlite.jsonl"
fi

# The nodes phase, once (its nodes share the cores with PostgreSQL: one run, not rounds).
PG=$BUILD/bench-pg
PG_CLUSTER=$ROOT/tests/support/pg_cluster.sh
echo "run.sh: several nodes: SQLite x1, then 1, 2 and 3 nodes on one PostgreSQL ..." >&2
rm -rf "$BUILD/bench-nodes"
trap '"$PG_CLUSTER" teardown "$PG" >/dev/null 2>&1 || true' EXIT
"$PG_CLUSTER" setup "$PG" --durable >&2
PG_VERSION=$(psql -X -At -d "$(cat "$PG/url")" -c 'SHOW server_version' 2>/dev/null || echo '?')
(cd "$BUILD/bin" && ./airlock_nodes $QUICK ./airlockd "$BUILD/bench-nodes" "$PG") \
    >"$BUILD/bench-nodes.jsonl"
if [ -n "$BASELINE" ]; then
    echo "run.sh: the journal's cost: airlockd of $BASELINE against this one, PostgreSQL ..." >&2
    rm -rf "$BUILD/bench-ab-pg"
    (cd "$BUILD/bin" && ./airlock_ab --pg "$PG" "$BASE_DIR/ab-base/airlockd" \
        "$BASE_DIR/ab-this/airlockd" "$BUILD/bench-ab-pg" $AB_PAIRS) >"$BUILD/bench-ab.pg.jsonl"
fi
"$PG_CLUSTER" teardown "$PG" >&2
trap - EXIT

# A 50 MB workspace through airlockd: uploaded as a snapshot, restored into a run, read back
echo "run.sh: a 50 MB workspace: snapshot and restore ..." >&2
BENCH_WORKSPACE_ROUNDS=$([ -n "$QUICK" ] && echo 1 || echo 5) \
    python3 "$ROOT/bench/workspace.py" "$BUILD" | grep '^{' >"$BUILD/bench-workspace.jsonl"

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
DOC=$ROOT/docs/benchmarks.md
if [ -n "$QUICK" ]; then
    DOC=
fi

export LOAD_BEFORE LOAD_AFTER PG_VERSION
python3 - "$BUILD" "$ROUNDS" "$want" "$ROOT" "$DOC" "$AIRLOCK_RUN_VERSION" <<'PY'
import json, os, platform, subprocess, sys, time

build, rounds, run_version, root, doc, airlock_run_version = sys.argv[1:7]
rounds = int(rounds)

# Per workload, the best round of each side: lowest median, most runs/s, least memory.
def better(new, old):
    for key, sign in (("median_ms", 1), ("runs_per_s", -1), ("added_mb", 1)):
        if key in new and key in old:
            return sign * new[key] < sign * old[key]
    return False

def load(side):
    rows = {}
    for n in range(1, rounds + 1):
        with open(f"{build}/bench-{side}.{n}.jsonl") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    row = json.loads(line)
                    row["round"] = n
                    w = row["workload"]
                    if w not in rows or better(row, rows[w]):
                        rows[w] = row
    # The marginal host-call cost from the chosen W2 and W3, not from one round's line.
    if "W2" in rows and "W3" in rows:
        rows["W3call"] = {"median_ms": (rows["W3"]["median_ms"] - rows["W2"]["median_ms"]) / 99}
    return rows

a, pkg, r = load("airlock"), load("airlock-run"), load("run")

# Governed runs: per row, the best round (most runs/s for throughput, lowest median otherwise).
g = {}
for n in range(1, rounds + 1):
    with open(f"{build}/bench-governed.{n}.jsonl") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            row["round"] = n
            w = row["workload"]
            old = g.get(w)
            if old is None:
                g[w] = row
            elif "runs_per_s" in row:
                if row["runs_per_s"] > old["runs_per_s"]:
                    g[w] = row
            elif "median_ms" in row and row["median_ms"] < old["median_ms"]:
                g[w] = row

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"

def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=root).stdout.strip()
    except OSError:
        return ""

def ms(x):
    return "-" if x is None else f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.1f}"

def ratio(x, y):
    return "-" if x is None or y in (None, 0) else f"{x / y:.2f}"

def get(rows, w, key):
    return rows.get(w, {}).get(key)

def size(x):
    return "-" if x is None else f"{x:,} bytes"

lines = []
lines.append("| workload | airlock median ms | airlock p99 ms | @airlock/run median ms "
             "| @airlock/run p99 ms | run median ms | run p99 ms | airlock/run (median) "
             "| @airlock/run/run (median) |")
lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
for w in ["W1", "W2", "W3", "W4", "W5", "W1p", "W2p", "W7"]:
    if w not in a and w not in pkg and w not in r:
        continue
    desc = get(a, w, "desc") or get(pkg, w, "desc") or get(r, w, "desc") or ""
    am, ap = get(a, w, "median_ms"), get(a, w, "p99_ms")
    nm, np_ = get(pkg, w, "median_ms"), get(pkg, w, "p99_ms")
    rm, rp = get(r, w, "median_ms"), get(r, w, "p99_ms")
    count = get(a, w, "iterations") or get(pkg, w, "iterations") or get(r, w, "iterations")
    unit = "pairs" if w == "W7" else "runs"
    lines.append(f"| {w} {desc} ({count} {unit}) | {ms(am)} | {ms(ap)} | {ms(nm)} | {ms(np_)} "
                 f"| {ms(rm)} | {ms(rp)} | {ratio(am, rm)} | {ratio(nm, rm)} |")
    if w == "W2p":
        am, nm, rm = (get(x, "W3call", "median_ms") for x in (a, pkg, r))
        lines.append(f"| W3 per extra host call, (W3-W2)/99 | {ms(am)} | | {ms(nm)} | "
                     f"| {ms(rm)} | | {ratio(am, rm)} | {ratio(nm, rm)} |")
if "W7" in a or "W7" in pkg or "W7" in r:
    lines.append("")
    lines.append(f"W7 continuation token (the largest of the pairs): airlock "
                 f"{size(get(a, 'W7', 'token_bytes'))}, @airlock/run "
                 f"{size(get(pkg, 'W7', 'token_bytes'))}, run {size(get(r, 'W7', 'token_bytes'))}.")
if "FLOOR" in a:
    f = a["FLOOR"]
    lines.append("")
    lines.append(f"This machine's floor for a process per run, measured by the bench without "
                 f"airlock: fork, exit and reap of a small process {ms(f['fork_exit_wait_ms'])} ms "
                 f"(median of {f['forks']}); a first write to a fresh 4 KiB page "
                 f"{f['page_fault_us']:.1f} us; a one-byte round trip over a Unix socket between "
                 f"two processes {f['socket_round_trip_us']:.1f} us.")
if "W2a" in a:
    lines.append("")
    lines.append(f"W2a, {get(a, 'W2a', 'desc')}: median {ms(get(a, 'W2a', 'median_ms'))} ms, "
                 f"p99 {ms(get(a, 'W2a', 'p99_ms'))} ms ({get(a, 'W2a', 'iterations')} runs), "
                 f"{ratio(get(a, 'W2a', 'median_ms'), get(a, 'W2', 'median_ms'))}x W2's median "
                 f"through al_run.")
if "W8" in a:
    lines.append("")
    lines.append(f"W8, {get(a, 'W8', 'desc')}: airlock strips it natively in "
                 f"{ms(get(a, 'W8', 'median_ms'))} ms (median of {get(a, 'W8', 'iterations')}), "
                 f"{get(a, 'W8', 'percent_of_w1'):.1f}% of W1's median hello run; run has no "
                 f"TypeScript of its own (it needs Node's stripper or the typescript package).")
if "WS1" in a:
    lines.append("")
    lines.append(f"WS1, {get(a, 'WS1', 'desc')}: restored in {ms(get(a, 'WS1', 'load_median_ms'))} "
                 f"ms, snapshotted in {ms(get(a, 'WS1', 'tar_median_ms'))} ms (medians of "
                 f"{get(a, 'WS1', 'iterations')}; the goal is at most 1000 ms each).")
lines.append("")
lines.append("| throughput of W2 | airlock runs/s | @airlock/run runs/s | run runs/s | airlock/run "
             "| @airlock/run/run |")
lines.append("|---|--:|--:|--:|--:|--:|")
def rate(x):
    return "-" if x is None else f"{x:.1f}"
for w in sorted(k for k in set(a) | set(pkg) | set(r) if k.startswith("W6c")):
    ar, nr, rr = (get(x, w, "runs_per_s") for x in (a, pkg, r))
    c = get(a, w, "concurrency") or get(pkg, w, "concurrency") or get(r, w, "concurrency")
    secs = get(a, w, "seconds") or get(pkg, w, "seconds") or get(r, w, "seconds")
    lines.append(f"| concurrency {c}, {secs or '-'} s | {rate(ar)} | {rate(nr)} | {rate(rr)} "
                 f"| {ratio(ar, rr)} | {ratio(nr, rr)} |")
lines.append("")
if "MEM8" in a or "MEM8" in pkg or "MEM8" in r:
    am, nm, rm = (get(x, "MEM8", "added_mb") for x in (a, pkg, r))
    lines.append("| memory, 8 concurrent idle runs | airlock MB | @airlock/run MB | run MB "
                 "| airlock/run | @airlock/run/run |")
    lines.append("|---|--:|--:|--:|--:|--:|")
    lines.append(f"| added RSS: the process's RSS delta + its children's summed RSS | {ms(am)} "
                 f"| {ms(nm)} | {ms(rm)} | {ratio(am, rm)} | {ratio(nm, rm)} |")
    lines.append("")
    def memory(name, rows, what):
        m = rows.get("MEM8")
        if not m:
            return f"{name}: not measured"
        text = f"{name}: {what} RSS delta {ms(m.get('host_delta_mb'))} MB"
        if "process_rss_before_mb" in m:
            text += (f" ({ms(m['process_rss_before_mb'])} MB before, "
                     f"{ms(m['process_rss_during_mb'])} MB during)")
        if m.get("workers"):
            pss = m.get("workers_pss_mb")
            text += (f" + the {m['workers']} workers' summed RSS {ms(m.get('workers_rss_mb'))} MB"
                     + (f" (summed PSS, which splits shared pages: {ms(pss)} MB)"
                        if pss and pss > 0 else ""))
        else:
            text += ", no child processes"
        return text
    lines.append(memory("airlock", a, "host process") + "; " +
                 memory("@airlock/run", pkg, "Node process") + "; " +
                 memory("run", r, "Node process") + ".")
else:
    lines.append("Memory: not measured.")

# @airlock/run against the goals set for it: `run`'s interface at a fraction of its cost, and a
# host call that costs little more than the C library's.
def goal_row(label, value, fmt, goal, met):
    shown = "-" if value is None else fmt(value)
    verdict = "-" if value is None else ("met" if met(value) else "not met")
    lines.append(f"| {label} | {shown} | {goal} | {verdict} |")

lines.append("")
lines.append("| @airlock/run | measured | goal | |")
lines.append("|---|--:|--:|---|")
def over(x, y):
    return None if x is None or y in (None, 0) else x / y
for w in ("W1", "W2"):
    goal_row(f"{w} median, @airlock/run / run", over(get(pkg, w, "median_ms"), get(r, w, "median_ms")),
             lambda v: f"{v:.2f}", "<= 0.20", lambda v: v <= 0.20)
for c in (2, 8):
    w = f"W6c{c}"
    goal_row(f"W6 at concurrency {c}, runs/s, @airlock/run / run",
             over(get(pkg, w, "runs_per_s"), get(r, w, "runs_per_s")), lambda v: f"{v:.2f}",
             ">= 8.00", lambda v: v >= 8)
goal_row("MEM8 added RSS, @airlock/run / run",
         over(get(pkg, "MEM8", "added_mb"), get(r, "MEM8", "added_mb")), lambda v: f"{v:.3f}",
         "<= 0.125", lambda v: v <= 0.125)
goal_row("W7 median, @airlock/run / run", over(get(pkg, "W7", "median_ms"), get(r, "W7", "median_ms")),
         lambda v: f"{v:.3f}", "<= 0.100", lambda v: v <= 0.10)
nc, ac = get(pkg, "W3call", "median_ms"), get(a, "W3call", "median_ms")
goal_row("W3 per extra host call, @airlock/run - airlock (ms)",
         None if nc is None or ac is None else nc - ac, lambda v: f"{v:+.3f}", "<= +0.050",
         lambda v: v <= 0.05)

# The second table: governed runs (airlockd) beside the same runs through al_run.
lines.append("")
lines.append("### Governed runs (airlockd)")
lines.append("")
lines.append("| concurrency | al_run runs/s | airlockd runs/s | airlockd/al_run (goal >= 0.50) "
             "| al_run median ms | airlockd median ms (server log) | added median ms |")
lines.append("|---|--:|--:|--:|--:|--:|--:|")
for c in (1, 2, 8):
    lib, srv = g.get(f"GLIB{c}"), g.get(f"GSRV{c}")
    if not lib or not srv:
        continue
    sm = srv.get("server_median_ms")
    lines.append(f"| {c}, {srv['seconds']:.1f} s | {lib['runs_per_s']:.1f} | "
                 f"{srv['runs_per_s']:.1f} | {ratio(srv['runs_per_s'], lib['runs_per_s'])} | "
                 f"{ms(lib['median_ms'])} | {ms(srv['median_ms'])} "
                 f"({'-' if sm is None else ms(sm)}) | "
                 f"{ms(srv['median_ms'] - lib['median_ms'])} |")
# Where the CPU of a governed run goes: the same best rounds as the table above, per run.
cpu_rows = [(c, g.get(f"GLIB{c}", {}).get("cpu_ms_per_run"), g.get(f"GSRV{c}", {}).get("cpu_ms_per_run"))
            for c in (1, 2, 8)]
cpu_rows = [(c, l, s) for c, l, s in cpu_rows if l and s]
if cpu_rows:
    fixed = ["workers", "bench"]
    names = sorted({k for _, _, s in cpu_rows for k in s if k not in fixed},
                   key=lambda k: -max(s.get(k, 0) for _, _, s in cpu_rows))
    lines.append("")
    lines.append("CPU per run in ms (utime + stime from /proc over each phase of the table, divided "
                 "by its runs): the library's side is the bench process and its workers; "
                 "airlockd's is its workers, each of its threads by name (`MHD-worker` are "
                 "libmicrohttpd's request threads, `airlockd` the main thread), and the bench "
                 "process (the clients and the connector). airlockd's own is all but its workers.")
    lines.append("")
    lines.append("| concurrency | al_run (with its workers) | airlockd: all | workers | "
                 "airlockd's own | " + " | ".join(names) + " | bench's clients and connector |")
    lines.append("|---|--:|--:|--:|--:|" + "--:|" * len(names) + "--:|")
    for c, l, s in cpu_rows:
        total = sum(v for k, v in s.items() if k != "bench")
        own = total - s.get("workers", 0)
        lines.append(f"| {c} | {l['bench']:.3f} | {total:.3f} | {s.get('workers', 0):.3f} | "
                     f"{own:.3f} | "
                     + " | ".join(f"{s.get(k, 0):.3f}" for k in names)
                     + f" | {s['bench']:.3f} |")
apr, w7 = g.get("GAPR"), a.get("W7")
if apr:
    lines.append("")
    lines.append(f"Approval round trip (POST /v1/runs -> 202, POST /v1/approvals/{{id}}/approve, "
                 f"GET /v1/runs/{{id}} every 0.2 ms until completed; {apr['gets_per_trip']:.1f} GETs per trip): "
                 f"median {ms(apr['median_ms'])} ms, p99 {ms(apr['p99_ms'])} ms "
                 f"({apr['iterations']} trips); the library's W7 (interrupt and resume, no "
                 f"person, nothing stored): median {ms(get(a, 'W7', 'median_ms'))} ms"
                 + (f", {ratio(apr['median_ms'], w7['median_ms'])}x." if w7 else "."))
c1, c2, fs = g.get("GCONN1"), g.get("GCONN2"), g.get("GFSYNC")
if c1 or fs:
    lines.append("")
    parts = []
    if c1:
        parts.append(f"the bench's connector alone, POSTed over keep-alive as airlockd calls it: "
                     f"{c1['runs_per_s']:.0f} calls/s at concurrency 1 (median "
                     f"{ms(c1['median_ms'])} ms)"
                     + (f", {c2['runs_per_s']:.0f} calls/s at 2" if c2 else ""))
    if fs:
        parts.append(f"a 4 KiB append and fsync in airlockd's data directory (the floor of one "
                     f"durable SQLite commit): median {ms(fs['median_ms'])} ms, p99 "
                     f"{ms(fs['p99_ms'])} ms (of {fs['iterations']})"
                     + (f", {ms(fs['cpu_ms'])} ms of the calling thread's CPU each"
                        if "cpu_ms" in fs else ""))
    lines.append("This machine's floor for governed runs, measured by the bench: "
                 + "; ".join(parts) + ".")

# The third table: several nodes on one PostgreSQL, against SQLite on one node (one run).
nd = {}
with open(f"{build}/bench-nodes.jsonl") as f:
    for line in f:
        line = line.strip()
        if line.startswith("{"):
            row = json.loads(line)
            nd[row["workload"]] = row
if any(k.startswith("Npg") for k in nd):
    def rate(w):
        return "-" if w not in nd else f"{nd[w]['runs_per_s']:.1f}"
    def trio(c, key, fmt):
        return " / ".join("-" if f"Npg{n}c{c}" not in nd else fmt(nd[f"Npg{n}c{c}"][key])
                          for n in (1, 2, 3))
    lines.append("")
    lines.append("### Several nodes on PostgreSQL")
    lines.append("")
    lines.append(f"PostgreSQL {os.environ.get('PG_VERSION', '?')} on this machine (fsync and "
                 "synchronous_commit on; a Unix socket), every node a fresh airlockd on one fresh "
                 "database, the client threads spread round-robin over the nodes; the nodes, "
                 "their workers, PostgreSQL and the bench share the same cores. CPU per run: "
                 "utime + stime across the phase, divided by its runs.")
    lines.append("")
    lines.append("| concurrency | SQLite x1 runs/s | PG x1 runs/s | PG x2 runs/s | PG x3 runs/s "
                 "| PG x3 / PG x1 | PG database CPU ms per run (x1 / x2 / x3) "
                 "| database share of all CPU per run (x1 / x2 / x3) |")
    lines.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    for c in (2, 8):
        one, three = nd.get(f"Npg1c{c}"), nd.get(f"Npg3c{c}")
        sec = (one or nd.get(f"Nsqlite1c{c}") or {}).get("seconds", 0)
        lines.append(f"| {c}, {sec:.1f} s | {rate(f'Nsqlite1c{c}')} | {rate(f'Npg1c{c}')} "
                     f"| {rate(f'Npg2c{c}')} | {rate(f'Npg3c{c}')} "
                     f"| {ratio(three and three['runs_per_s'], one and one['runs_per_s'])} "
                     f"| {trio(c, 'db_cpu_ms_per_run', lambda x: f'{x:.2f}')} "
                     f"| {trio(c, 'db_share', lambda x: f'{100 * x:.0f}%')} |")
    lines.append("")
    parts = []
    for w, label in (("Nsqlite1c8", "SQLite x1"), ("Npg1c8", "PG x1"), ("Npg3c8", "PG x3")):
        if w in nd:
            r = nd[w]
            db = ("SQLite inside them" if w.startswith("Nsqlite") else
                  f"{r['db_cpu_ms_per_run']:.2f} ms in PostgreSQL")
            parts.append(f"{label} {r['nodes_cpu_ms_per_run']:.2f} ms in the nodes and their "
                         f"workers ({db if db[0] == 'S' else 'plus ' + db}), "
                         f"{r['bench_cpu_ms_per_run']:.2f} ms in the bench's clients and connector")
    lines.append("CPU per run at concurrency 8: " + "; ".join(parts) + ".")
# The fourth table: the journal's cost, the baseline's airlockd (A) against this one (B).
def ab_final(path):
    try:
        with open(path) as f:
            rows = [json.loads(l) for l in f if l.startswith("{\"workload\":\"AB\"")]
    except FileNotFoundError:
        return None
    return rows[-1] if rows else None

abs_ = {db: ab_final(f"{build}/bench-ab.{db}.jsonl") for db in ("sqlite", "pg")}
if any(abs_.values()):
    base = os.environ.get("BENCH_BASELINE", "?")
    lines.append("")
    lines.append("### The journal's cost")
    lines.append("")
    lines.append(f"`airlock_ab` of airlockd at {base} (A, before the journal) and this build (B), "
                 "both at once, interleaved; medians of the phases (CPU: utime + stime from /proc "
                 "over each phase, per run; a call's cost is (W3 - W2) / 99).")
    lines.append("")
    lines.append("| store | row | before | after | after - before | after / before | goal |")
    lines.append("|---|---|--:|--:|--:|--:|---|")
    def row(db, label, a, b, goal, diff=True):
        d = f"{b - a:+.3f}" if diff else ""
        f = ".3f" if diff else ".1f"
        lines.append(f"| {db} | {label} | {a:{f}} | {b:{f}} | {d} | {ratio(b, a)} | {goal} |")
    for db, r in abs_.items():
        if not r:
            continue
        name = "SQLite" if db == "sqlite" else "PostgreSQL"
        A, B = r["A"], r["B"]
        row(name, "airlockd's own CPU ms per extra connector call (W3)", A["own_ms_per_call"],
            B["own_ms_per_call"], "+0.1 ms" if db == "sqlite" else "")
        row(name, "... per extra call of a function marked idempotent",
            A["own_ms_per_idempotent_call"], B["own_ms_per_idempotent_call"], "")
        row(name, "runs/s at concurrency 8 (W2)", A["c8_runs_per_s"], B["c8_runs_per_s"],
            ">= 0.90x", diff=False)
        row(name, "median ms at concurrency 1 (W2)", A["c1_median_ms"], B["c1_median_ms"], "")
        row(name, "airlockd's own CPU ms per one-call run", A["get"]["own_ms"], B["get"]["own_ms"],
            "")
        if db == "pg":
            row(name, "database CPU ms per one-call run", A["get"]["database_ms"],
                B["get"]["database_ms"], "<= 0.8 ms")
            row(name, "database CPU ms per extra connector call", A["database_ms_per_call"],
                B["database_ms_per_call"], "")
# The fifth table: a 50 MB workspace's snapshot and restore (bench/workspace.py).
try:
    with open(f"{build}/bench-workspace.jsonl") as f:
        ws = {r["step"]: r for r in (json.loads(l) for l in f if l.startswith("{"))}
except FileNotFoundError:
    ws = {}
if ws:
    lines.append("")
    lines.append("### Workspaces")
    lines.append("")
    lines.append("A 50 MB workspace (50 files of 1 MiB of random bytes) through airlockd "
                 "(`bench/workspace.py`, SQLite with synchronous=FULL, from the client over "
                 "loopback); the goal is at most 1 s each.")
    lines.append("")
    lines.append("| step | best ms | median ms |")
    lines.append("|---|--:|--:|")
    for step, label in (("upload", "upload: `POST /v1/snapshots` (the tar checked and kept)"),
                        ("restore", "restore: `POST /v1/runs` from_snapshot (loaded, run, its end "
                                    "kept)"),
                        ("snapshot", "snapshot: `GET /v1/runs/{id}/workspace.tar`")):
        if step in ws:
            lines.append(f"| {label} | {ws[step]['best_ms']:.1f} | {ws[step]['median_ms']:.1f} |")
table = "\n".join(lines)

commit = sh("git", "rev-parse", "--short", "HEAD")
dirty = sh("git", "status", "--porcelain", "--untracked-files=no")
machine = [
    f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
    f"- CPU: {cpu_model()}, nproc {sh('nproc') or os.cpu_count()}",
    f"- kernel: {platform.system()} {platform.release()} ({platform.machine()})",
    f"- load average (1/5/15 min) before: {os.environ.get('LOAD_BEFORE', '?')}, "
    f"after: {os.environ.get('LOAD_AFTER', '?')}",
    f"- airlock {commit}{' (with uncommitted changes)' if dirty else ''}, Release build, "
    f"{sh('cc', '-dumpfullversion') and 'cc ' + sh('cc', '-dumpfullversion')}; "
    f"@airlock/run {airlock_run_version} (its package folder) and run {run_version} on Node "
    f"{sh('node', '--version')}",
    f"- {rounds} round{'s' if rounds > 1 else ''} per side, the order of the three sides rotated "
    f"each round; each cell is the side's best round for that workload",
]
section = "\n".join(machine) + "\n\n" + table + "\n"

print(section)

if doc:
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    try:
        with open(doc) as f:
            text = f.read()
    except FileNotFoundError:
        text = f"# Benchmarks\n\n{begin}\n{end}\n"
    if begin not in text or end not in text:
        text = text.rstrip("\n") + f"\n\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(f"{head}{begin}\n<!-- generated by bench/run.sh; do not edit by hand -->\n\n"
                f"{section}\n{end}{tail}")
    print(f"run.sh: wrote {doc}", file=sys.stderr)
PY
