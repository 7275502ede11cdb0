/*
 * native.ts - loads the addon (prebuilds/linux-x64/airlock_run.node, built from node/addon/) and
 * finds the jailed airlock-worker shipped beside it. $AIRLOCK_RUN_ADDON and $AIRLOCK_WORKER
 * point elsewhere (a development build).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The addon's exports (node/addon/airlock_run.c documents each). */
export interface Native {
    init(dispatch: (kind: number, key: number, ...rest: unknown[]) => void): void;
    newRunner(options: {
        worker: string;
        warm?: number;
        secret?: Uint8Array;
        verify?: Uint8Array[];
        ttlMs?: number;
        loader?: string;
        unsafeNoJail?: boolean;
    }): NativeRunner;
    start(runner: NativeRunner, key: number, options: {
        source: string;
        type: number;
        hosts: [string, boolean][];
        limits: [number, number][];
        context?: string;
        audience?: string;
        resume?: string;
        resolutions?: [number, string][];
        runId?: string;
    }): NativeRun;
    cancel(run: NativeRun): void;
    answer(call: NativeCall, kind: Answer, text: string): void;
    limitDefault(index: number): number;
    version(): string;
}
/** How a call is answered: with a value (boundary JSON), a throw, or an interruption. */
export const enum Answer { Return = 0, Throw = 1, TypeError = 2, Interrupt = 3 }
declare const nativeBrand: unique symbol;
export type NativeRunner = { readonly [nativeBrand]: 'runner' };
export type NativeRun = { readonly [nativeBrand]: 'run' };
export type NativeCall = { readonly [nativeBrand]: 'call' };

/** What airlock measured of a run (al_stats). */
export interface NativeStats {
    wallMs: number;
    cpuMs: number;
    peakMemoryBytes: number;
    hostCalls: number;
    /** The Math.random seed, decimal. */
    seed: string;
    /** The guest clock's start, ms since the epoch. */
    clockMs: number;
    /** The worker ran under its seccomp filter. */
    jailed: boolean;
}

/** What a finished run looks like when it reaches JavaScript. */
export interface NativeResult {
    status: 'completed' | 'failed' | 'interrupted';
    runId: string;
    value?: string;
    code?: string;
    name?: string;
    message?: string;
    stack?: string;
    console: { level: 'log' | 'info' | 'warn' | 'error' | 'debug'; text: string }[];
    stats: NativeStats;
    interruptions?: { id: string; call: number; function: string; args: string; payload: string }[];
    continuation?: string;
}

const PLATFORM = `${process.platform}-${process.arch}`;
const here = path.dirname(fileURLToPath(import.meta.url));
const prebuilds = path.join(here, '..', 'prebuilds', PLATFORM);

function load(): Native {
    const addon = process.env.AIRLOCK_RUN_ADDON || path.join(prebuilds, 'airlock_run.node');
    if (!existsSync(addon)) {
        throw new Error(`@airlock/run has no build for ${PLATFORM} (it ships linux-x64 with ` +
            `glibc): ${addon} is missing`);
    }
    return createRequire(import.meta.url)(addon) as Native;
}

export const native: Native = load();

/** The airlock-worker runs execute in. */
export const workerPath: string = process.env.AIRLOCK_WORKER || path.join(prebuilds, 'airlock-worker');
