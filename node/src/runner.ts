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
import { CallContext, callStorage, type HostFunctionResumeContext } from './context.js';
import {
    RunAbortedError, RunBridgeLimitError, RunConcurrencyError, RunDetachedBridgeRequestError,
    RunError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
} from './errors.js';
import {
    native, type NativeCall, type NativeResult, type NativeRun, type NativeRunner, workerPath,
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
export interface RunStats {
    wallMs: number;
    cpuMs: number;
    peakMemoryBytes: number;
    hostCalls: number;
    /** The Math.random seed, decimal. */
    seed: string;
    clockMs: number;
    /** The worker ran under its seccomp filter. */
    jailed: boolean;
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
const STACK_MAX = 64 * 1024 * 1024; // libairlock's ceiling for the guest stack

function checkLimits(limits: unknown, path: string): [number, number][] {
    if (limits === undefined) {
        return [];
    }
    if (typeof limits !== 'object' || limits === null) {
        throw new TypeError(`${path} must be an object.`);
    }
    const out: [number, number][] = [];
    for (const [name, value] of Object.entries(limits)) {
        const index = LIMIT_INDEX[name];
        if (index === undefined) {
            throw new TypeError(`${path}.${name} is not a limit.`);
        }
        if (value === undefined) {
            continue;
        }
        if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
            throw new TypeError(`${path}.${name} must be a positive integer.`);
        }
        const max = index === 3 ? STACK_MAX : LIMIT_MAX;
        if (value > max) {
            throw new TypeError(`${path}.${name} must be at most ${max}.`);
        }
        out.push([index, value]);
    }
    return out;
}

/** Runner limits, then the run's: a run's key replaces the runner's for that key only. */
function mergeLimits(runner: [number, number][], input: [number, number][]): Map<number, number> {
    const merged = new Map<number, number>();
    for (const [i, v] of [...runner, ...input]) {
        merged.set(i, v);
    }
    return merged;
}

function limitOf(merged: Map<number, number>, index: number): number {
    return merged.get(index) ?? native.limitDefault(index);
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

interface NativeEntry {
    runner: NativeRunner;
}
const nativeRunners = new Map<string, NativeEntry>();
const anonymousLoaders = new WeakMap<RunModuleLoader, string>();

function nativeRunner(keys: { secret?: Uint8Array; verify: Uint8Array[]; ttlMs?: number } | null,
    loaderIdentity: string | undefined, warm: number): NativeRunner {
    const h = createHash('sha256');
    if (keys?.secret) {
        h.update(keys.secret).update('|');
        for (const v of keys.verify) {
            h.update(v).update('|');
        }
    }
    const id = `${h.digest('hex')}/${keys?.ttlMs ?? ''}/${loaderIdentity ?? ''}/${warm}`;
    let entry = nativeRunners.get(id);
    if (!entry) {
        entry = {
            runner: native.newRunner({
                worker: workerPath,
                warm,
                ...(keys?.secret ? { secret: keys.secret, verify: keys.verify } : {}),
                ...(keys?.ttlMs ? { ttlMs: keys.ttlMs } : {}),
                ...(loaderIdentity !== undefined ? { loader: loaderIdentity } : {}),
            }),
        };
        nativeRunners.set(id, entry);
    }
    return entry.runner;
}

/* ---------------------------------------------------------------- runs in flight */

interface PendingCall {
    call: NativeCall;
    context: CallContext;
    abort: AbortController;
}

interface RunState {
    hosts: Map<string, HostFunction<unknown[]>>;
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
    done(result: NativeResult): void;
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

function isThenable(v: unknown): v is PromiseLike<unknown> {
    return (typeof v === 'object' || typeof v === 'function') && v !== null &&
        typeof (v as { then?: unknown }).then === 'function';
}

function commit(st: RunState): void {
    const tx = st.transaction;
    if (tx) {
        st.transaction = undefined;
        Promise.resolve().then(() => tx.commit()).catch(() => undefined);
    }
}

function onCall(key: number, call: NativeCall, name: string, argsJson: string, seq: number,
    interruptionId?: string, payloadJson?: string, resolutionJson?: string): void {
    const st = runs.get(key);
    if (!st) {
        native.callThrow(call, 'the run is over', false);
        return;
    }
    commit(st); // libairlock verified the continuation: it is used now, whatever follows
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
        native.callThrow(call, 'Host function failed.', true);
        return;
    }
    if (name === '#modules.resolve' || name === '#modules.load') {
        loaderCall(st, call, name, args);
        return;
    }
    const fn = st.hosts.get(name);
    if (!fn) {
        native.callThrow(call, 'Host function failed.', false);
        return;
    }
    const abort = new AbortController();
    const context = new CallContext(abort.signal, st.invocationId, st.logicalRunId, seq, name,
        resume);
    const p: PendingCall = { call, context, abort };
    st.pending.add(p);
    let out: unknown;
    try {
        out = callStorage.run(context, fn, ...args);
    } catch (e) {
        settle(st, p, false, e);
        return;
    }
    if (isThenable(out)) {
        Promise.resolve(out).then(v => settle(st, p, true, v), e => settle(st, p, false, e));
    } else {
        settle(st, p, true, out);
    }
}

function settle(st: RunState, p: PendingCall, ok: boolean, value: unknown): void {
    if (!st.pending.delete(p)) {
        return; // the run ended first; its calls were answered then
    }
    p.context.active = false;
    const name = p.context.hostFunctionName;
    if (p.context.interruption) {
        let json: string;
        try {
            json = encode(p.context.interruption.payload);
        } catch (e) {
            failRun(st, p, new RunError(`Host function "${name}" interruption payload is not ` +
                `serializable: ${(e as Error).message}`, 'RUN_SERIALIZATION_ERROR'));
            return;
        }
        native.callInterrupt(p.call, json);
        return;
    }
    if (!ok) {
        // A RunError is the host's own report and crosses as it is; anything else may hold
        // what the guest must not read.
        const message = RunError.isInstance(value) ? value.message : 'Host function failed.';
        st.hostErrors.set(message, value);
        native.callThrow(p.call, message, false);
        return;
    }
    let json: string;
    try {
        json = encode(value);
    } catch (e) {
        failRun(st, p, new RunError(`Host function "${name}" output is not serializable: ` +
            `${(e as Error).message}`, 'RUN_SERIALIZATION_ERROR'));
        return;
    }
    native.callReturn(p.call, json);
}

function failRun(st: RunState, p: PendingCall, error: RunError): void {
    st.failure ??= error;
    native.callThrow(p.call, 'Host function failed.', false);
    if (st.handle) {
        native.cancel(st.handle);
    }
}

function loaderCall(st: RunState, call: NativeCall, name: string, args: unknown[]): void {
    const loader = st.loader;
    const [specifier, importer] = args as [string, string];
    let out: unknown;
    try {
        if (!loader) {
            throw new Error('modules are not available');
        }
        out = name === '#modules.resolve' ?
            (loader.normalize ? loader.normalize(specifier, importer) : specifier) :
            loader.load(specifier);
    } catch {
        native.callThrow(call, `Cannot load module "${String(specifier)}".`, false);
        return;
    }
    Promise.resolve(out).then(v => {
        if (typeof v !== 'string') {
            native.callThrow(call, `Cannot load module "${String(specifier)}".`, false);
        } else {
            native.callReturn(call, JSON.stringify(v));
        }
    }, () => native.callThrow(call, `Cannot load module "${String(specifier)}".`, false));
}

function onDone(key: number, result: NativeResult): void {
    const st = runs.get(key);
    if (!st) {
        return;
    }
    runs.delete(key);
    activeRuns--;
    st.handle = undefined;
    for (const p of st.pending) { // calls the guest can no longer read: end them
        p.context.active = false;
        p.abort.abort(new RunAbortedError());
        native.callThrow(p.call, 'the run is over', false);
    }
    st.pending.clear();
    st.done(result);
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

function forwardConsole(entries: ConsoleEntry[]): void {
    for (const e of entries) {
        (console[e.level] ?? console.log)(e.text);
    }
}

function stats(result: NativeResult): RunStats {
    return { ...result.stats, runId: result.runId };
}

function failure(result: NativeResult, st: RunState, timeoutMs: number): RunError {
    const message = result.message || 'The run failed.';
    const details = { airlockCode: result.code, runId: result.runId };
    let error: RunError;
    switch (result.code) {
    case 'ABORTED':
        return new RunAbortedError();
    case 'TIMEOUT':
        error = new RunTimeoutError(timeoutMs);
        break;
    case 'CPU_LIMIT':
        error = new RunTimeoutError(timeoutMs);
        error.message = `The run used more CPU time than its limit. ${message}`;
        break;
    case 'BRIDGE_LIMIT':
        return new RunBridgeLimitError(message, details);
    case 'DETACHED_BRIDGE_REQUEST':
        return new RunDetachedBridgeRequestError(message, details);
    case 'PROTOCOL_ERROR':
        return new RunProtocolError(message, details);
    case 'CONFIG_ERROR':
        if (/interruption/.test(message)) { // a resolution the continuation does not hold
            return new RunProtocolError(NO_MATCH, details);
        }
        error = new RunError(message, 'RUN_CONFIG_ERROR', details);
        break;
    case 'CONCURRENCY_LIMIT':
        return new RunConcurrencyError(maxWorkers ?? activeRuns);
    case 'SOURCE_TOO_LARGE':
        error = new RunError(message, 'RUN_SOURCE_TOO_LARGE', details);
        break;
    case 'SERIALIZATION_ERROR':
        error = new RunError(message, 'RUN_SERIALIZATION_ERROR', details);
        break;
    case 'HOST_FUNCTION_ERROR': {
        const thrown = st.hostErrors.get(result.message ?? '');
        if (RunError.isInstance(thrown)) {
            return thrown; // the host's own RunError, code and class kept, as `run` does
        }
        error = new RunError('Host function failed.', 'RUN_HOST_FUNCTION_ERROR', details);
        if (thrown !== undefined) {
            error.cause = thrown;
        }
        break;
    }
    case 'USER_ERROR':
        error = new RunError(message, 'RUN_USER_SOURCE_ERROR', details);
        break;
    default: // memory, stack, output, configuration, a crashed worker, the host side
        error = new RunError(message, `RUN_${result.code ?? 'ERROR'}`, details);
        break;
    }
    (error as { details: unknown }).details = { ...(error.details as object), ...details };
    if (result.stack) {
        error.stack = `${result.name || 'Error'}: ${message}\n${result.stack}`;
    }
    return error;
}

/* ---------------------------------------------------------------- the runner */

function checkHostFunctions(groups: unknown, path: string, sync: boolean,
    out: Map<string, HostFunction<unknown[]>>, hosts: [string, boolean][]): void {
    if (groups === undefined) {
        return;
    }
    if (typeof groups !== 'object' || groups === null) {
        throw new TypeError(`${path} must be an object.`);
    }
    for (const group of Object.keys(groups)) {
        const fns = (groups as Record<string, unknown>)[group];
        if (typeof fns !== 'object' || fns === null) {
            throw new TypeError(`${path}.${group} must be an object of functions.`);
        }
        for (const name of Object.keys(fns)) {
            const fn = (fns as Record<string, unknown>)[name];
            if (typeof fn !== 'function') {
                throw new TypeError(`${path}.${group}.${name} must be a function.`);
            }
            const full = `${group}.${name}`;
            if (out.has(full)) {
                throw new TypeError(`Host function ${full} is defined twice.`);
            }
            out.set(full, fn as HostFunction<unknown[]>);
            hosts.push([full, sync]);
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
    const runnerLimits = checkLimits(options.limits, 'limits');
    const syncHosts = new Map<string, HostFunction<unknown[]>>();
    const syncList: [string, boolean][] = [];
    checkHostFunctions(options.syncHostFunctions ?? options.syncBindings, 'syncHostFunctions',
        true, syncHosts, syncList);
    if (options.continuationSecret !== undefined && options.continuationCodec !== undefined) {
        throw new TypeError('continuationSecret and continuationCodec cannot be used together.');
    }
    const secret = options.continuationSecret !== undefined ?
        secretBytes(options.continuationSecret, 'continuationSecret') : undefined;
    const codec = options.continuationCodec as ContinuationCodec<unknown> | undefined;
    if (codec !== undefined && (typeof codec?.encode !== 'function' ||
        typeof codec.decode !== 'function')) {
        throw new TypeError('continuationCodec must have encode and decode.');
    }
    const audience = options.continuationAudience ?? 'run';
    if (typeof audience !== 'string' || audience.length === 0 || audience.length > 255) {
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
        return env ? { secret: secretBytes(env, 'RUN_CONTINUATION_SECRET'), verify: [] } : null;
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
        const limits = mergeLimits(runnerLimits, checkLimits(input.limits, 'limits'));
        const hosts = new Map(syncHosts);
        const hostList = [...syncList];
        checkHostFunctions(input.hostFunctions ?? input.bindings, 'hostFunctions', false, hosts,
            hostList);
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
                throw new TypeError('Resuming a continuation needs at least one resolution.');
            }
            resolutions = input.resolutions.map((r, i) => {
                if (typeof r !== 'object' || r === null || typeof r.interruptionId !== 'string') {
                    throw new TypeError(`resolutions[${i}] must have an interruptionId.`);
                }
                const call = INTERRUPTION_ID.exec(r.interruptionId);
                if (!call) {
                    throw new RunProtocolError(NO_MATCH);
                }
                return [Number(call[1]), encode(r.value)];
            });
            const decoded = await decodeContinuation(input.continuation, input.abortSignal);
            logicalRunId = decoded.state.logicalRunId;
            resume = decoded.state.token;
            tx = decoded.tx;
        } else if (input.resolutions !== undefined && input.resolutions.length > 0) {
            throw new TypeError('resolutions need a continuation.');
        }
        let loaderIdentity: string | undefined;
        if (loader) {
            loaderIdentity = loader.identity;
            if (!loaderIdentity) {
                loaderIdentity = anonymousLoaders.get(loader) ?? `anonymous:${newLogicalId()}`;
                anonymousLoaders.set(loader, loaderIdentity);
            }
        }
        let runner: NativeRunner;
        try {
            runner = nativeRunner(keys(), loaderIdentity, warm);
        } catch (e) {
            await tx?.rollback();
            throw e;
        }
        const context = JSON.stringify([logicalRunId,
            input.continuationContext === undefined ? null : encode(input.continuationContext)]);
        const timeoutMs = limitOf(limits, 0);

        return new Promise((resolve, reject) => {
            const key = takeKey();
            const st: RunState = {
                hosts,
                loader,
                invocationId: newLogicalId(),
                logicalRunId,
                handle: undefined,
                pending: new Set(),
                aborted: false,
                failure: undefined,
                hostErrors: new Map(),
                transaction: tx,
                done: result => {
                    input.abortSignal?.removeEventListener('abort', onAbort);
                    forwardConsole(result.console);
                    settleRun(result).then(resolve, reject);
                },
            };
            const onAbort = () => {
                st.aborted = true;
                if (st.handle) {
                    native.cancel(st.handle);
                }
            };
            const settleRun = async (result: NativeResult): Promise<RunResult<OUTPUT, TOKEN>> => {
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
                if (st.failure) {
                    throw st.failure;
                }
                if (result.status === 'failed') {
                    throw st.aborted ? new RunAbortedError() : failure(result, st, timeoutMs);
                }
                if (result.status === 'completed') {
                    return {
                        status: 'completed',
                        value: (sourceType === 'module' ? undefined :
                            decode(result.value ?? '{"$type":"undefined"}')) as OUTPUT,
                        console: result.console,
                        stats: stats(result),
                    };
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
                return { status: 'interrupted', interruptions, continuation,
                    console: result.console, stats: stats(result) };
            };
            let handle: NativeRun;
            try {
                handle = native.start(runner, key, {
                    source: input.source,
                    type: (sourceType === 'module' ? 1 : 0) | (lang === 'ts' ? 0x100 : 0),
                    hosts: hostList,
                    limits: [...limits],
                    context,
                    audience,
                    runId: logicalRunId,
                    ...(resume !== undefined ? { resume, resolutions } : {}),
                });
            } catch (e) {
                const t = tx;
                (t ? Promise.resolve(t.rollback()) : Promise.resolve()).finally(() =>
                    reject(new RunError((e as Error).message, 'RUN_ERROR')));
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
        Array.isArray((value as { interruptions?: unknown }).interruptions);
}
