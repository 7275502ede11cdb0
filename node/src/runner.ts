/*
 * runner.ts - createRunner() and run(): `run`'s interface over libairlock's runner.
 *
 * A run starts in a jailed worker process (native.ts, node/addon/) and never blocks Node's
 * thread. Each host call arrives here through the addon as (call, "group.fn", boundary-JSON
 * arguments): the JavaScript host function is invoked inside its own context
 * (getHostFunctionContext) and its value, throw or interrupt goes back as the call's answer.
 * The run's end arrives the same way and settles the promise run() returned.
 *
 * What crosses is airlock's boundary format (values.ts, docs/values.md), which carries the same
 * values `run` does. What the guest sees of a failing host function is "Host function failed."
 * (the caller gets the original error as the RunError's `cause`), unless the function threw a
 * RunError: that is the host's own report, and crosses with its message, as in `run`.
 */
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';

import {
    checkState, type ContinuationCodec, type ContinuationDecodeTransaction, joinToken,
    type RunContinuationState, secretBytes, SIGNED_KEYS, type SignedCodec, splitToken,
} from './codecs.js';
import { callStorage, type CallState, type HostFunctionResumeContext, newCallState } from './context.js';
import {
    RunAbortedError, RunBridgeLimitError, RunConcurrencyError, RunDetachedBridgeRequestError,
    RunError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
} from './errors.js';
import {
    Answer, native, type NativeCall, type NativeStats, type NativeResult, type NativeRun, type NativeRunner, workerPath,
} from './native.js';
import { decode, encode } from './values.js';

export type HostFunction<ARGS extends unknown[] = unknown[], OUT = unknown> =
    (...args: ARGS) => OUT | Promise<OUT>;
export type HostFunctionGroup = Record<string, HostFunction<never[], unknown>>;
export type HostFunctions = Record<string, HostFunctionGroup>;
export type SyncHostFunctions = HostFunctions;

export interface RunModuleLoader {
    /** Names the loader; continuations of runs that import are bound to it. */
    identity?: string;
    /** Resolves a specifier against its importer; default: the specifier as is. */
    normalize?(specifier: string, importer: string): string | Promise<string>;
    /** The source of a normalized module; a name ending in .ts is TypeScript. */
    load(specifier: string): string | Promise<string>;
}

/** `run`'s eleven limits (same names and defaults) and airlock's CPU limit. */
export interface RunLimits {
    /** Wall clock, default 30000. */
    timeoutMs?: number;
    /** Worker CPU time (airlock); default: the timeout. */
    cpuTimeoutMs?: number;
    memoryLimitBytes?: number;
    maxStackSizeBytes?: number;
    maxResultBytes?: number;
    maxConsoleOutputBytes?: number;
    maxSourceBytes?: number;
    maxHostFunctionArgumentsBytes?: number;
    maxHostFunctionOutputBytes?: number;
    /** The name `run`'s next version gives maxHostFunctionArgumentsBytes. */
    maxBindingArgumentsBytes?: number;
    /** The name `run`'s next version gives maxHostFunctionOutputBytes. */
    maxBindingOutputBytes?: number;
    maxBridgeRequests?: number;
    maxInFlightBridgeRequests?: number;
    maxContinuationBytes?: number;
}

export interface RunnerOptions<TOKEN = string> {
    limits?: RunLimits;
    /** Host functions the guest calls without await (the guest waits, never Node). */
    syncHostFunctions?: SyncHostFunctions;
    /** The name `run`'s next version gives syncHostFunctions. */
    syncBindings?: SyncHostFunctions;
    /** Signs continuations (at least 32 bytes); default $RUN_CONTINUATION_SECRET. */
    continuationSecret?: string | Uint8Array;
    continuationCodec?: ContinuationCodec<TOKEN>;
    /** The audience continuations are bound to; default "run". */
    continuationAudience?: string;
    /** airlock: workers kept started ahead of runs (default 1, at most 64). */
    warmWorkers?: number;
}

export type RunSourceType = 'function-body' | 'module';

export interface RunInput<TOKEN = unknown> {
    source: string;
    sourceType?: RunSourceType;
    hostFunctions?: HostFunctions;
    /** The name `run`'s next version gives hostFunctions. */
    bindings?: HostFunctions;
    moduleLoader?: RunModuleLoader;
    abortSignal?: AbortSignal;
    limits?: RunLimits;
    continuation?: TOKEN;
    resolutions?: RunResolution[];
    continuationContext?: unknown;
    /** airlock: 'ts' (default) strips TypeScript types keeping lines and columns; 'js' does not. */
    lang?: 'js' | 'ts';
}

/** A console entry of the guest (airlock). */
export interface ConsoleEntry {
    level: 'log' | 'info' | 'warn' | 'error' | 'debug';
    text: string;
}

/** What airlock measured of a run. */
export interface RunStats extends NativeStats {
    runId: string;
}

export interface RunCompletedResult<OUTPUT = unknown> {
    status: 'completed';
    value: OUTPUT;
    /** airlock: the guest's console, also written to this process's console. */
    console: ConsoleEntry[];
    stats: RunStats;
}

export interface RunInterruption<PAYLOAD = unknown> {
    id: string;
    hostFunctionName: string;
    arguments: unknown[];
    payload: PAYLOAD;
}

export interface RunInterruptedResult<TOKEN = unknown> {
    status: 'interrupted';
    interruptions: RunInterruption[];
    continuation: TOKEN;
    console: ConsoleEntry[];
    stats: RunStats;
}

export interface RunResolution<VALUE = unknown> {
    interruptionId: string;
    value: VALUE;
}

export type RunResult<OUTPUT = unknown, TOKEN = unknown> =
    RunCompletedResult<OUTPUT> | RunInterruptedResult<TOKEN>;

export interface Runner<TOKEN = unknown> {
    run<OUTPUT = unknown>(input: RunInput<TOKEN>): Promise<RunResult<OUTPUT, TOKEN>>;
}

/* ---------------------------------------------------------------- limits */

const LIMIT_INDEX: Record<string, number> = {
    timeoutMs: 0,
    cpuTimeoutMs: 1,
    memoryLimitBytes: 2,
    maxStackSizeBytes: 3,
    maxSourceBytes: 4,
    maxResultBytes: 5,
    maxConsoleOutputBytes: 6,
    maxHostFunctionArgumentsBytes: 7,
    maxBindingArgumentsBytes: 7,
    maxHostFunctionOutputBytes: 8,
    maxBindingOutputBytes: 8,
    maxBridgeRequests: 9,
    maxInFlightBridgeRequests: 10,
    maxContinuationBytes: 11,
};
const LIMIT_MAX = 2_147_483_647;
// libairlock's ceilings (src/lib/limits.c): 64 MiB for the stack and every size, 2^24 calls. A
// larger value `run` accepts means "no smaller bound", and is taken as the ceiling.
const MIB64 = 64 * 1024 * 1024;
const LIMIT_CEILING: Record<number, number> = {
    3: MIB64, 4: MIB64, 5: MIB64, 6: MIB64, 7: MIB64, 8: MIB64, 9: 1 << 24, 10: 1 << 24,
    11: MIB64,
};

function limitEntries(limits: unknown): [string, unknown][] {
    if (limits === undefined || limits === null) {
        return [];
    }
    if (typeof limits !== 'object' || limits === null) {
        throw new TypeError('limits must be an object.');
    }
    return Object.entries(limits);
}

/**
 * The run's limits: the runner's, then the run's key by key (a run's key replaces the runner's
 * for that key only, and may mend an invalid one), checked as `run` checks them when a run
 * starts. Values above libairlock's ceilings are taken as the ceiling.
 */
function mergeLimits(runner: unknown, input: unknown): Map<number, number> {
    const named = new Map<string, unknown>();
    for (const [name, value] of [...limitEntries(runner), ...limitEntries(input)]) {
        if (value !== undefined && value !== null && LIMIT_INDEX[name] !== undefined) {
            named.set(name, value); // other keys are not limits, and ignored as `run` does
        }
    }
    const merged = new Map<number, number>();
    for (const [name, value] of named) {
        const index = LIMIT_INDEX[name] as number;
        if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
            throw new TypeError(`limits.${name} must be a positive integer.`);
        }
        if (value > LIMIT_MAX) {
            throw new TypeError(`limits.${name} must be at most ${LIMIT_MAX}.`);
        }
        merged.set(index, Math.min(value, LIMIT_CEILING[index] ?? LIMIT_MAX));
    }
    return merged;
}

// libairlock's defaults, the same as `run`'s (constants of the library).
const LIMIT_DEFAULTS = Array.from({ length: 12 }, (_, i) => native.limitDefault(i));

function limitOf(merged: Map<number, number>, index: number): number {
    return merged.get(index) ?? LIMIT_DEFAULTS[index] as number;
}

/* ---------------------------------------------------------------- interruptions */

// An interruption is named by its call, as `run` names it: "interrupt-N", N the call's 1-based
// requestIndex, stable across resumes (libairlock resolves it by the call).
const INTERRUPTION_ID = /^interrupt-([1-9][0-9]{0,9})$/;
const NO_MATCH = 'A resolution does not match exactly one pending interruption.';

/* ---------------------------------------------------------------- concurrency */

let maxWorkers: number | undefined;
let activeRuns = 0;

/**
 * The process-wide cap on runs at once, shared by every runner; a run beyond it is refused
 * with RunConcurrencyError, never queued. Without a number: the default, which admits a run
 * while the machine's available memory covers its memory limit.
 */
export function setMaxWorkers(max?: number): void {
    if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max <= 0)) {
        throw new TypeError('maxWorkers must be a positive integer.');
    }
    maxWorkers = max;
}

function admit(memoryBytes: number): void {
    if (maxWorkers !== undefined) {
        if (activeRuns >= maxWorkers) {
            throw new RunConcurrencyError(maxWorkers);
        }
    } else if (activeRuns > 0 && os.freemem() < memoryBytes + 16 * 1024 * 1024) {
        throw new RunConcurrencyError(activeRuns);
    }
}

/* ---------------------------------------------------------------- native runners */

// Tokens of runners given a codec are the codec's to protect (its storage, or its own
// signature): libairlock signs them with this fixed key, as `run` leaves such state unsigned.
const CODEC_KEY = new TextEncoder().encode('@airlock/run: a codec keeps this state; key fixed');
const CODEC_TTL_MS = 365 * 24 * 3_600_000;

const nativeRunners = new Map<string, NativeRunner>();
const anonymousLoaders = new WeakMap<RunModuleLoader, string>();
// A runner made for a loader without identity serves that loader object alone: it goes (its
// thread, zygote and warm worker with it, once its external is collected) with the loader.
const anonymousRunners = new FinalizationRegistry<string>(id => nativeRunners.delete(id));

function nativeRunner(keys: { secret?: Uint8Array; verify: Uint8Array[]; ttlMs?: number } | null,
    loaderIdentity: string | undefined, warm: number, anonymousLoader?: object): NativeRunner {
    const h = createHash('sha256');
    if (keys?.secret) {
        h.update(keys.secret).update('|');
        for (const v of keys.verify) {
            h.update(v).update('|');
        }
    }
    const id = `${h.digest('hex')}/${keys?.ttlMs ?? ''}/${loaderIdentity ?? ''}/${warm}`;
    let runner = nativeRunners.get(id);
    if (!runner) {
        runner = native.newRunner({
            worker: workerPath,
            warm,
            ...(keys?.secret ? { secret: keys.secret, verify: keys.verify } : {}),
            ...(keys?.ttlMs ? { ttlMs: keys.ttlMs } : {}),
            ...(loaderIdentity !== undefined ? { loader: loaderIdentity } : {}),
        });
        nativeRunners.set(id, runner);
        if (anonymousLoader) {
            anonymousRunners.register(anonymousLoader, id);
        }
    }
    return runner;
}

/* ---------------------------------------------------------------- runs in flight */

interface PendingCall {
    call: NativeCall;
    state: CallState;
    abort: AbortController;
    sync: boolean;
}

interface RunState {
    hosts: Map<string, Host>;
    /** Its libairlock runner, held while the run is in flight. */
    runner: NativeRunner;
    key: number;
    /** The stored continuation's consumption, once libairlock verified the token. */
    committed: Promise<void> | undefined;
    limits: Map<number, number>;
    resuming: boolean;
    /** The source is an ES module. */
    module: boolean;
    loader: RunModuleLoader | undefined;
    invocationId: string;
    logicalRunId: string;
    handle: NativeRun | undefined;
    pending: Set<PendingCall>;
    aborted: boolean;
    /** A failure decided here (a host answer that cannot cross), thrown instead. */
    failure: RunError | undefined;
    /** What host functions threw, by the message the guest saw. */
    hostErrors: Map<string, unknown>;
    transaction: ContinuationDecodeTransaction | undefined;
    done(result: NativeResult, error: Error | undefined): void;
}

const runs = new Map<number, RunState>();
let nextKey = 1;
let initialised = false;

function takeKey(): number {
    while (runs.has(nextKey) || nextKey === 0) {
        nextKey = (nextKey + 1) >>> 0;
    }
    const key = nextKey;
    nextKey = (nextKey + 1) >>> 0;
    return key;
}

/** The message of what was thrown, never throwing itself. */
function messageOf(e: unknown): string {
    try {
        const m = (e as { message?: unknown } | null)?.message;
        return typeof m === 'string' ? m : String(e);
    } catch {
        return 'an unreadable value was thrown';
    }
}

/** What the guest reads of a host function's throw: a RunError's message, else nothing. */
function guestMessage(e: unknown): string {
    try {
        if (RunError.isInstance(e) && typeof e.message === 'string') {
            // no NUL (it crosses as a C string), bounded as the worker's own messages are
            return e.message.replace(/\0/g, '\uFFFD').slice(0, 1024);
        }
    } catch { /* a getter that throws: nothing of it crosses */ }
    return 'Host function failed.';
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
    return (typeof v === 'object' || typeof v === 'function') && v !== null &&
        typeof (v as { then?: unknown }).then === 'function';
}

function commit(st: RunState): void {
    const tx = st.transaction;
    if (tx) {
        st.transaction = undefined;
        st.committed = Promise.resolve().then(() => tx.commit());
        st.committed.catch(() => undefined);
    }
}

function onCall(key: number, call: NativeCall, name: string, argsJson: string, seq: number,
    interruptionId?: string, payloadJson?: string, resolutionJson?: string): void {
    const st = runs.get(key);
    if (!st) {
        native.answer(call, Answer.Throw, 'the run is over');
        return;
    }
    // libairlock verified the continuation: it is used now, and nothing is served before the
    // storage said so (a key it could not consume would resume again).
    commit(st);
    if (st.committed) {
        st.committed.then(() => serve(st, call, name, argsJson, seq, interruptionId, payloadJson,
            resolutionJson), e => {
            st.failure ??= new RunProtocolError('The stored continuation could not be consumed.',
                { cause: e });
            native.answer(call, Answer.Throw, 'Host function failed.');
            if (st.handle) {
                native.cancel(st.handle);
            }
        });
        return;
    }
    serve(st, call, name, argsJson, seq, interruptionId, payloadJson, resolutionJson);
}

function serve(st: RunState, call: NativeCall, name: string, argsJson: string, seq: number,
    interruptionId?: string, payloadJson?: string, resolutionJson?: string): void {
    if (!runs.has(st.key)) { // the run ended while its continuation was being consumed
        native.answer(call, Answer.Throw, 'the run is over');
        return;
    }
    let args: unknown[];
    let resume: HostFunctionResumeContext | undefined;
    try {
        args = decode(argsJson) as unknown[];
        if (interruptionId !== undefined) {
            resume = {
                interruptionId: `interrupt-${seq}`,
                payload: decode(payloadJson || '{"$type":"undefined"}'),
                resolution: decode(resolutionJson || '{"$type":"undefined"}'),
            };
        }
    } catch {
        native.answer(call, Answer.TypeError, 'Host function failed.');
        return;
    }
    if (name === '#modules.resolve' || name === '#modules.load') {
        loaderCall(st, call, name, args);
        return;
    }
    const host = st.hosts.get(name);
    if (!host) {
        native.answer(call, Answer.Throw, 'Host function failed.');
        return;
    }
    const abort = new AbortController();
    const state = newCallState(abort.signal, st.invocationId, st.logicalRunId, seq, name,
        resume);
    const p: PendingCall = { call, state, abort, sync: host.sync };
    st.pending.add(p);
    let out: unknown;
    let thenable: boolean;
    try {
        out = callStorage.run(state, host.fn, ...args);
        thenable = isThenable(out);
    } catch (e) {
        settle(st, p, false, e);
        return;
    }
    if (thenable) {
        Promise.resolve(out).then(v => settle(st, p, true, v), e => settle(st, p, false, e));
    } else {
        settle(st, p, true, out);
    }
}

function settle(st: RunState, p: PendingCall, ok: boolean, value: unknown): void {
    if (!st.pending.delete(p)) {
        return; // the run ended first; its calls were answered then
    }
    p.state.active = false;
    const name = p.state.context.hostFunctionName;
    const maxOutput = limitOf(st.limits, 8); // maxHostFunctionOutputBytes
    if (p.state.interruption) {
        if (p.sync) {
            failRun(st, p,
                new RunProtocolError('Synchronous host functions cannot interrupt a run.'));
            return;
        }
        if (st.loader && !st.loader.identity) {
            failRun(st, p, new RunProtocolError(
                'A module loader must have a non-empty identity to create a continuation.'));
            return;
        }
        let json: string;
        try {
            json = encode(p.state.interruption.payload);
        } catch (e) {
            failRun(st, p, new RunError(`Interruption payload is not serializable: ${
                messageOf(e)}`, 'RUN_SERIALIZATION_ERROR'));
            return;
        }
        if (tooLarge(json, maxOutput)) {
            failRun(st, p, new RunError(`Host function "${name}" interruption payload exceeds ` +
                `the ${maxOutput} byte size limit.`, 'RUN_SERIALIZATION_ERROR'));
            return;
        }
        native.answer(p.call, Answer.Interrupt, json);
        return;
    }
    if (!ok) {
        // A RunError is the host's own report and crosses as it is; anything else may hold
        // what the guest must not read.
        hostThrow(st, p, guestMessage(value), value);
        return;
    }
    let json: string;
    try {
        json = encode(value);
    } catch (e) {
        const message = `Host function "${name}" output is not serializable: ${messageOf(e)}`;
        hostThrow(st, p, message, new RunError(message, 'RUN_SERIALIZATION_ERROR'));
        return;
    }
    if (tooLarge(json, maxOutput)) {
        const message = `Host function "${name}" output exceeds the ${maxOutput} byte size ` +
            'limit.';
        hostThrow(st, p, message, new RunError(message, 'RUN_SERIALIZATION_ERROR',
            { maxBytes: maxOutput }));
        return;
    }
    native.answer(p.call, Answer.Return, json);
}

/** Whether boundary JSON is over `max` UTF-8 bytes (counted only when it may be). */
function tooLarge(json: string, max: number): boolean {
    return json.length > max / 3 && Buffer.byteLength(json) > max;
}

/** The guest's call throws `message`; uncaught, the run fails with `error` (hostErrors). */
function hostThrow(st: RunState, p: PendingCall, message: string, error: unknown): void {
    st.hostErrors.set(message, error);
    native.answer(p.call, Answer.Throw, message);
}

function failRun(st: RunState, p: PendingCall, error: RunError): void {
    st.failure ??= error;
    native.answer(p.call, Answer.Throw, 'Host function failed.');
    if (st.handle) {
        native.cancel(st.handle);
    }
}

// What the guest sees of a loader's failure: its own message stays with the host.
const LOADER_FAILED = 'Host bridge request failed.';

function loaderCall(st: RunState, call: NativeCall, name: string, args: unknown[]): void {
    const loader = st.loader;
    const [specifier, referrer] = args as [string, string];
    // `run` names the entry module's importer "<entry>" (a function body's is its file name).
    const importer = st.module && referrer === 'run.js' ? '<entry>' : referrer;
    let out: unknown;
    try {
        if (!loader) {
            throw new Error('modules are not available');
        }
        out = name === '#modules.resolve' ?
            (loader.normalize ? loader.normalize(specifier, importer) : specifier) :
            loader.load(specifier);
    } catch {
        native.answer(call, Answer.Throw, LOADER_FAILED);
        return;
    }
    Promise.resolve(out).then(v => {
        if (typeof v !== 'string') {
            native.answer(call, Answer.Throw, LOADER_FAILED);
        } else if (v.length > limitOf(st.limits, 4)) { // past the source limit: libairlock names it
            native.answer(call, Answer.Return,
                JSON.stringify(v.slice(0, limitOf(st.limits, 4) + 1)));
        } else {
            native.answer(call, Answer.Return, JSON.stringify(v));
        }
    }, () => native.answer(call, Answer.Throw, LOADER_FAILED));
}

function onDone(key: number, result: NativeResult): void {
    const st = runs.get(key);
    if (!st) {
        return;
    }
    runs.delete(key);
    activeRuns--;
    st.handle = undefined;
    const error = result.status !== 'failed' ? undefined :
        st.failure ?? (st.aborted ? new RunAbortedError() : failure(result, st));
    if (error) { // every error of a run names it (not enumerable: it looks as `run`'s does)
        Object.defineProperties(error, {
            airlockCode: { value: result.code, configurable: true, writable: true },
            runId: { value: result.runId, configurable: true, writable: true },
        });
    }
    for (const p of st.pending) { // calls the guest can no longer read: end them
        p.state.active = false;
        p.abort.abort(error ?? new RunAbortedError());
        native.answer(p.call, Answer.Throw, 'the run is over');
    }
    st.pending.clear();
    st.done(result, error);
}

function dispatch(kind: number, key: number, ...rest: unknown[]): void {
    if (kind === 1) {
        const [call, name, args, seq, iid, payload, resolution] = rest as [NativeCall, string,
            string, number, string | undefined, string | undefined, string | undefined];
        onCall(key, call, name, args, seq, iid, payload, resolution);
    } else {
        onDone(key, rest[0] as NativeResult);
    }
}

/* ---------------------------------------------------------------- results */

// As `run` writes the guest's console: errors and warnings to stderr, the rest to stdout.
// libairlock's note that the console limit cut the output is for the result only.
function forwardConsole(entries: ConsoleEntry[]): void {
    const last = entries.at(-1);
    const truncated = last?.level === 'warn' &&
        last.text.startsWith('[console output truncated: limit of ');
    const shown = truncated ? entries.slice(0, -1) : entries;
    for (const e of shown) {
        (e.level === 'error' || e.level === 'warn' ? process.stderr : process.stdout)
            .write(`${e.text}\n`);
    }
}

/** airlock's console and stats on a result, not enumerable: the result's shape is `run`'s. */
function extras(out: object, result: NativeResult): object {
    return Object.defineProperties(out, {
        console: { value: result.console, writable: true, configurable: true },
        stats: { value: { ...result.stats, runId: result.runId }, writable: true,
            configurable: true },
    });
}

const SCOPE = 'Continuation does not match the supplied source, scope, or runtime version.';
const UNSIGNED = 'Continuation signing is not configured. Set RUN_CONTINUATION_SECRET or pass ' +
    'continuationSecret or continuationCodec to createRunner().';

/**
 * The error a failed run rejects with: `run`'s class, code, message and details for each
 * failure (onDone adds airlock's own code and the run's id, not enumerable).
 */
function failure(result: NativeResult, st: RunState): Error {
    const message = result.message || 'The run failed.';
    const limit = (index: number) => limitOf(st.limits, index);
    let error: RunError;
    switch (result.code) {
    case 'ABORTED':
        return new RunAbortedError();
    case 'TIMEOUT':
    case 'CPU_LIMIT':
        error = new RunTimeoutError(limit(0));
        break;
    case 'BRIDGE_LIMIT':
        if (/in flight/.test(message)) {
            return new RunBridgeLimitError(`JavaScript runtime exceeded the ${limit(10)} ` +
                'in-flight bridge request limit.', { maxInFlightBridgeRequests: limit(10) });
        }
        if (/host calls/.test(message)) {
            return new RunBridgeLimitError(`JavaScript runtime exceeded the ${limit(9)} bridge ` +
                'request limit.', { maxBridgeRequests: limit(9) });
        }
        if (/host-args/.test(message)) {
            return new RunBridgeLimitError(`Host function arguments exceed the ${limit(7)} byte ` +
                'size limit.', { maxBytes: limit(7) });
        }
        return new RunBridgeLimitError(message);
    case 'DETACHED_BRIDGE_REQUEST':
        return new RunDetachedBridgeRequestError(message);
    case 'PROTOCOL_ERROR':
        return new RunProtocolError(st.resuming && /another|made for/.test(message) ? SCOPE :
            message);
    case 'CONCURRENCY_LIMIT':
        return new RunConcurrencyError(maxWorkers ?? activeRuns);
    case 'CONFIG_ERROR':
        if (/no continuation key/.test(message)) {
            return new TypeError(UNSIGNED);
        }
        if (/interruption/.test(message)) { // a resolution the continuation does not hold
            return new RunProtocolError(NO_MATCH);
        }
        error = new RunError(message, 'RUN_CONFIG_ERROR');
        break;
    case 'SOURCE_TOO_LARGE':
        return new RunSourceTooLargeError(Buffer.byteLength(message), limit(4));
    case 'SERIALIZATION_ERROR':
        if (/\(call to /.test(message)) { // the guest's arguments
            error = new RunError(`Host function arguments are not serializable: ${message}`,
                'RUN_USER_SOURCE_ERROR');
            error.name = 'TypeError';
        } else {
            error = new RunError(`JavaScript runtime result is not serializable: ${message}`,
                'RUN_SERIALIZATION_ERROR');
        }
        break;
    case 'OUTPUT_LIMIT':
        if (/console/.test(message)) { // a hard limit here, where `run` drops the rest
            error = new RunError(`JavaScript runtime console output exceeds the ${limit(6)} ` +
                'byte size limit.', 'RUN_OUTPUT_LIMIT', { maxBytes: limit(6) });
        } else {
            error = /continuation/.test(message) ?
                new RunError(message, 'RUN_SERIALIZATION_ERROR') :
                new RunError(`JavaScript runtime result exceeds the ${limit(5)} byte size ` +
                    'limit.', 'RUN_SERIALIZATION_ERROR', { maxBytes: limit(5) });
        }
        break;
    case 'HOST_FUNCTION_ERROR': {
        if (message === LOADER_FAILED) { // an import the loader could not serve
            error = new RunError(message, 'RUN_USER_SOURCE_ERROR');
            error.name = 'Error';
            break;
        }
        const thrown = st.hostErrors.get(message);
        if (RunError.isInstance(thrown)) { // the host's own report: its name, code and message
            error = new RunError(thrown.message, thrown.code, thrown.details);
            error.name = thrown.name;
            error.cause = thrown;
            break;
        }
        error = new RunError('Host function failed.', 'RUN_HOST_FUNCTION_ERROR');
        error.name = 'Error';
        if (thrown !== undefined) {
            error.cause = thrown;
        }
        break;
    }
    case 'USER_ERROR':
        error = new RunError(message, 'RUN_USER_SOURCE_ERROR');
        error.name = result.name || 'Error';
        break;
    case 'MEMORY_LIMIT': // a hard limit here: the guest cannot catch it
        error = new RunError('out of memory', 'RUN_USER_SOURCE_ERROR');
        error.name = 'InternalError';
        break;
    case 'STACK_OVERFLOW': // likewise
        error = new RunError('Maximum call stack size exceeded', 'RUN_USER_SOURCE_ERROR');
        error.name = 'RangeError';
        break;
    default: // a crashed worker, the host side
        error = new RunError(message, `RUN_${result.code ?? 'ERROR'}`);
        break;
    }
    if (result.stack && (result.code === 'USER_ERROR' || result.code === 'HOST_FUNCTION_ERROR')) {
        error.stack = `${error.name}: ${error.message}\n${result.stack}`;
    }
    return error;
}

/* ---------------------------------------------------------------- the runner */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
// Globals a group cannot replace, and names that are no capability (libairlock refuses both).
const RESERVED = new Set(['globalThis', 'console', 'Object', 'Function', 'Array', 'Number',
    'parseFloat', 'parseInt', 'Infinity', 'NaN', 'undefined', 'Boolean', 'String', 'Symbol',
    'Date', 'Promise', 'RegExp', 'Error', 'AggregateError', 'EvalError', 'RangeError',
    'ReferenceError', 'SyntaxError', 'TypeError', 'URIError', 'JSON', 'Math', 'Intl',
    'ArrayBuffer', 'Uint8Array', 'Int8Array', 'Uint16Array', 'Int16Array', 'Uint32Array',
    'Int32Array', 'Float32Array', 'Float64Array', 'Uint8ClampedArray', 'BigUint64Array',
    'BigInt64Array', 'DataView', 'Map', 'BigInt', 'Set', 'WeakMap', 'WeakSet', 'Proxy',
    'Reflect', 'FinalizationRegistry', 'WeakRef', 'decodeURI', 'decodeURIComponent',
    'encodeURI', 'encodeURIComponent', 'escape', 'unescape', 'eval', 'isFinite', 'isNaN',
    'SharedArrayBuffer', 'Atomics', 'queueMicrotask', 'structuredClone', 'TextEncoder',
    'TextDecoder', 'URL', 'URLSearchParams', 'atob', 'btoa', 'workspace']);
const NOT_DATA = new Set(['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty',
    'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', 'then', '__defineGetter__',
    '__defineSetter__', '__lookupGetter__', '__lookupSetter__']);

interface Host {
    fn: HostFunction<unknown[]>;
    sync: boolean;
}

function checkHostFunctions(groups: unknown, sync: boolean, out: Map<string, Host>): void {
    if (groups === undefined) {
        return;
    }
    if (typeof groups !== 'object' || groups === null) {
        throw new TypeError('hostFunctions must be an object.');
    }
    for (const group of Object.keys(groups)) {
        if (!IDENTIFIER.test(group) || NOT_DATA.has(group)) {
            throw new TypeError(`Invalid host function namespace: ${group}`);
        }
        if (RESERVED.has(group)) {
            throw new TypeError(`Reserved host function namespace: ${group}`);
        }
        const fns = (groups as Record<string, unknown>)[group];
        if (typeof fns !== 'object' || fns === null) {
            throw new TypeError(`Host function namespace "${group}" must be an object.`);
        }
        for (const name of Object.keys(fns)) {
            if (!IDENTIFIER.test(name) || NOT_DATA.has(name)) {
                throw new TypeError(`Invalid host function name: ${group}.${name}`);
            }
            const fn = (fns as Record<string, unknown>)[name];
            if (typeof fn !== 'function') {
                throw new TypeError(`Host function "${group}.${name}" must be a function.`);
            }
            const full = `${group}.${name}`;
            if (out.has(full) ||
                [...out].some(([n, h]) => h.sync !== sync && n.startsWith(`${group}.`))) {
                throw new TypeError(`Host function namespace "${group}" cannot be both ` +
                    'asynchronous and synchronous.');
            }
            out.set(full, { fn: fn as HostFunction<unknown[]>, sync });
        }
    }
}

function newLogicalId(): string {
    return randomBytes(16).toString('hex');
}

/** Creates a runner with shared limits, synchronous host functions and continuation setup. */
export function createRunner<TOKEN = string>(options: RunnerOptions<TOKEN> = {}): Runner<TOKEN> {
    if (typeof options !== 'object' || options === null) {
        throw new TypeError('createRunner options must be an object.');
    }
    const runnerLimits = options.limits;
    const syncHosts = new Map<string, Host>();
    checkHostFunctions(options.syncHostFunctions ?? options.syncBindings, true, syncHosts);
    if (options.continuationSecret !== undefined && options.continuationCodec !== undefined) {
        throw new TypeError(
            'Runner continuationCodec and continuationSecret cannot be used together.');
    }
    const secret = options.continuationSecret !== undefined ?
        secretBytes(options.continuationSecret, 'Continuation secret') : undefined;
    const codec = options.continuationCodec as ContinuationCodec<unknown> | undefined;
    if (codec !== undefined && (typeof codec?.encode !== 'function' ||
        typeof codec.decode !== 'function')) {
        throw new TypeError('continuationCodec must have encode and decode.');
    }
    const audience = options.continuationAudience ?? 'run';
    if (typeof audience !== 'string' || audience.length === 0 || audience.length > 255 ||
        audience.includes('\0')) {
        throw new TypeError('continuationAudience must be a string of 1 to 255 characters.');
    }
    const warm = options.warmWorkers ?? 1;
    if (!Number.isInteger(warm) || warm < 0 || warm > 64) {
        throw new TypeError('warmWorkers must be an integer from 0 to 64.');
    }
    if (!initialised) {
        native.init(dispatch);
        initialised = true;
    }

    // How continuations are signed: the codec's keys, the secret, or $RUN_CONTINUATION_SECRET
    // (read at each run, as `run` reads it).
    const signed = codec && (codec as Partial<SignedCodec>)[SIGNED_KEYS];
    function keys(): { secret?: Uint8Array; verify: Uint8Array[]; ttlMs?: number } | null {
        if (signed) {
            return { secret: signed.secret, verify: signed.verify,
                ...(signed.maxAgeMs ? { ttlMs: signed.maxAgeMs } : {}) };
        }
        if (codec) {
            return { secret: CODEC_KEY, verify: [], ttlMs: CODEC_TTL_MS };
        }
        if (secret) {
            return { secret, verify: [] };
        }
        const env = process.env.RUN_CONTINUATION_SECRET;
        return env ? { secret: secretBytes(env, 'Continuation secret'), verify: [] } : null;
    }

    async function encodeContinuation(state: RunContinuationState): Promise<unknown> {
        if (!codec || signed) {
            return joinToken(state);
        }
        const ac = new AbortController();
        return codec.encode(state as never, { abortSignal: ac.signal, deadlineMs: Date.now() + 30_000 });
    }

    async function decodeContinuation(token: unknown, abortSignal: AbortSignal | undefined):
        Promise<{ state: RunContinuationState; tx?: ContinuationDecodeTransaction }> {
        if (!codec || signed) {
            return { state: splitToken(token) };
        }
        const context = { abortSignal: abortSignal ?? new AbortController().signal,
            deadlineMs: Date.now() + 30_000 };
        if (codec.decodeTransaction) {
            const tx = await codec.decodeTransaction(token, context);
            try {
                return { state: checkState(tx.state), tx };
            } catch (e) {
                await tx.rollback();
                throw e;
            }
        }
        return { state: checkState(await codec.decode(token, context)) };
    }

    async function runOne<OUTPUT>(input: RunInput<TOKEN>): Promise<RunResult<OUTPUT, TOKEN>> {
        if (typeof input !== 'object' || input === null) {
            throw new TypeError('run input must be an object.');
        }
        if (typeof input.source !== 'string') {
            throw new TypeError('source must be a string.');
        }
        const limits = mergeLimits(runnerLimits, input.limits);
        const hosts = new Map(syncHosts);
        checkHostFunctions(input.hostFunctions ?? input.bindings, false, hosts);
        const loader = input.moduleLoader;
        if (loader !== undefined && (typeof loader !== 'object' || loader === null ||
            typeof loader.load !== 'function')) {
            throw new TypeError('Invalid moduleLoader configuration.');
        }
        const sourceType = input.sourceType ?? (loader ? 'module' : 'function-body');
        if (sourceType !== 'module' && sourceType !== 'function-body') {
            throw new TypeError('Invalid sourceType configuration.');
        }
        const lang = input.lang ?? 'ts';
        if (lang !== 'ts' && lang !== 'js') {
            throw new TypeError("lang must be 'js' or 'ts'.");
        }
        const maxSource = limitOf(limits, 4);
        const sourceBytes = Buffer.byteLength(input.source, 'utf8');
        if (sourceBytes > maxSource) {
            throw new RunSourceTooLargeError(sourceBytes, maxSource);
        }
        if (input.abortSignal?.aborted) {
            throw new RunAbortedError();
        }
        admit(limitOf(limits, 2));

        let logicalRunId = newLogicalId();
        let resume: string | undefined;
        let resolutions: [number, string][] | undefined;
        let tx: ContinuationDecodeTransaction | undefined;
        if (input.continuation !== undefined) {
            if (!Array.isArray(input.resolutions) || input.resolutions.length === 0) {
                throw new RunProtocolError('A continuation requires at least one resolution for ' +
                    'a pending interruption.');
            }
            const seen = new Set<number>();
            resolutions = input.resolutions.map(r => {
                const call = typeof r === 'object' && r !== null &&
                    typeof r.interruptionId === 'string' ? INTERRUPTION_ID.exec(r.interruptionId) :
                    null;
                if (!call || Number(call[1]) > 0xffffffff || seen.has(Number(call[1]))) {
                    throw new RunProtocolError(NO_MATCH);
                }
                seen.add(Number(call[1]));
                return [Number(call[1]), encode(r.value)];
            });
            const decoded = await decodeContinuation(input.continuation, input.abortSignal);
            if (input.abortSignal?.aborted) { // while decoding: the resume never starts
                await decoded.tx?.rollback();
                throw new RunAbortedError();
            }
            logicalRunId = decoded.state.logicalRunId;
            resume = decoded.state.token;
            tx = decoded.tx;
        } else if (input.resolutions !== undefined && input.resolutions.length > 0) {
            throw new RunProtocolError('Interruption resolutions require a continuation.');
        }
        let loaderIdentity: string | undefined;
        if (loader) {
            loaderIdentity = loader.identity;
            if (typeof loaderIdentity === 'string' && loaderIdentity.includes('\0')) {
                throw new TypeError('Invalid moduleLoader configuration.');
            }
            if (!loaderIdentity) {
                loaderIdentity = anonymousLoaders.get(loader) ?? `anonymous:${newLogicalId()}`;
                anonymousLoaders.set(loader, loaderIdentity);
            }
        }
        let runner: NativeRunner;
        try {
            runner = nativeRunner(keys(), loaderIdentity, warm,
                loader && !loader.identity ? loader : undefined);
        } catch (e) {
            await tx?.rollback();
            throw e;
        }
        const context = JSON.stringify([logicalRunId,
            input.continuationContext === undefined ? null : encode(input.continuationContext)]);

        return new Promise((resolve, reject) => {
            const key = takeKey();
            const st: RunState = {
                hosts,
                runner,
                key,
                committed: undefined,
                limits,
                resuming: resume !== undefined,
                module: sourceType === 'module',
                loader,
                invocationId: newLogicalId(),
                logicalRunId,
                handle: undefined,
                pending: new Set(),
                aborted: false,
                failure: undefined,
                hostErrors: new Map(),
                transaction: tx,
                done: (result, error) => {
                    input.abortSignal?.removeEventListener('abort', onAbort);
                    forwardConsole(result.console);
                    settleRun(result, error).then(resolve, reject);
                },
            };
            const onAbort = () => {
                st.aborted = true;
                if (st.handle) {
                    native.cancel(st.handle);
                }
            };
            const settleRun = async (result: NativeResult, error: Error | undefined):
                Promise<RunResult<OUTPUT, TOKEN>> => {
                if (st.transaction) { // never got past the continuation's checks
                    const t = st.transaction;
                    st.transaction = undefined;
                    if (result.status === 'failed' && (result.code === 'PROTOCOL_ERROR' ||
                        result.code === 'ABORTED' || result.code === 'CONFIG_ERROR')) {
                        await t.rollback();
                    } else {
                        await t.commit();
                    }
                }
                if (error) {
                    throw error;
                }
                if (result.status === 'completed') {
                    return extras({
                        status: 'completed',
                        value: (sourceType === 'module' ? undefined :
                            decode(result.value ?? '{"$type":"undefined"}')) as OUTPUT,
                    }, result) as RunCompletedResult<OUTPUT>;
                }
                const interruptions = (result.interruptions ?? []).map(i => ({
                    id: `interrupt-${i.call}`,
                    hostFunctionName: i.function,
                    arguments: decode(i.args) as unknown[],
                    payload: decode(i.payload || '{"$type":"undefined"}'),
                }));
                const continuation = await encodeContinuation({
                    version: 1,
                    runtime: 'airlock-continuation-v1',
                    logicalRunId,
                    token: result.continuation ?? '',
                }) as TOKEN;
                return extras({ status: 'interrupted', interruptions, continuation },
                    result) as RunInterruptedResult<TOKEN>;
            };
            let handle: NativeRun;
            try {
                handle = native.start(runner, key, {
                    source: input.source,
                    type: (sourceType === 'module' ? 1 : 0) | (lang === 'ts' ? 0x100 : 0),
                    hosts: [...hosts].map(([name, h]) => [name, h.sync]),
                    limits: [...limits],
                    context,
                    audience,
                    runId: logicalRunId,
                    ...(resume !== undefined ? { resume, resolutions } : {}),
                });
            } catch (e) {
                const t = tx;
                Promise.resolve().then(() => t?.rollback()).catch(() => undefined).then(() =>
                    reject(new RunError(messageOf(e), 'RUN_ERROR')));
                return;
            }
            st.handle = handle;
            runs.set(key, st);
            activeRuns++;
            input.abortSignal?.addEventListener('abort', onAbort, { once: true });
        });
    }

    return { run: runOne };
}

let defaultRunner: Runner<string> | undefined;

/** Runs `source` once on the default runner (continuations signed by RUN_CONTINUATION_SECRET). */
export function run<OUTPUT = unknown>(input: RunInput<string>): Promise<RunResult<OUTPUT, string>> {
    defaultRunner ??= createRunner<string>();
    return defaultRunner.run<OUTPUT>(input);
}

/** Whether `value` is an interrupted run's result. */
export function isRunInterruptedResult(value: unknown): value is RunInterruptedResult<unknown> {
    return typeof value === 'object' && value !== null &&
        (value as { status?: unknown }).status === 'interrupted' &&
        Array.isArray((value as { interruptions?: unknown }).interruptions) &&
        (value as { continuation?: unknown }).continuation !== undefined;
}
