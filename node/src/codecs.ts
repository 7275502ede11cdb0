/*
 * codecs.ts - continuation codecs with `run`'s names. A continuation is airlock's token
 * (docs/continuations.md: HMAC-SHA-256 over the source, the host-function manifest, the
 * audience, the context, the seed and clock, and every answered call) plus the logical run id,
 * which the token's context binds, so neither can be changed without the resume failing.
 *
 * - createSignedContinuationCodec: the token is handed out as is, signed by libairlock with the
 *   codec's secret; older secrets verify only (rotation). The default of every runner with a
 *   continuationSecret or RUN_CONTINUATION_SECRET.
 * - createStoredContinuationCodec: the token stays in the application's storage and the caller
 *   holds a random key that resumes at most once.
 * - any other codec receives and returns the state object; its integrity is then the codec's
 *   to keep, as with `run`.
 * Tokens of `run` and of @airlock/run are not interchangeable.
 */
import { randomBytes, randomUUID } from 'node:crypto';

import { RunProtocolError } from './errors.js';

/** What a codec stores: airlock's signed token and the run's logical id. Opaque otherwise. */
export interface RunContinuationState {
    version: 1;
    runtime: 'airlock-continuation-v1';
    logicalRunId: string;
    token: string;
}

export interface ContinuationOperationContext {
    abortSignal: AbortSignal;
    deadlineMs: number;
}

export interface ContinuationDecodeTransaction {
    state: RunContinuationState;
    commit(): void | Promise<void>;
    rollback(): void | Promise<void>;
}

export interface ContinuationCodec<TOKEN = unknown> {
    encode(state: RunContinuationState, context?: ContinuationOperationContext):
        TOKEN | Promise<TOKEN>;
    decode(token: TOKEN, context?: ContinuationOperationContext):
        RunContinuationState | Promise<RunContinuationState>;
    decodeTransaction?(token: TOKEN, context?: ContinuationOperationContext):
        ContinuationDecodeTransaction | Promise<ContinuationDecodeTransaction>;
}

export interface SignedContinuationCodecOptions {
    /** Signs new continuations and verifies them; at least 32 bytes. */
    secret: string | Uint8Array;
    /** Older secrets accepted when verifying only (at most 7). */
    verificationSecrets?: (string | Uint8Array)[];
    /** Lifetime of a new continuation; default one hour. */
    maxAgeMs?: number;
    /** The largest continuation made or taken; default 32 MiB. */
    maxTokenBytes?: number;
    /** Accepted for compatibility; airlock allows a fixed 60 s of skew. */
    clockSkewMs?: number;
}

export interface StoredContinuation {
    state: RunContinuationState;
    expiresAtMs: number;
}

export interface ContinuationStorage {
    set(key: string, value: StoredContinuation, context?: ContinuationOperationContext):
        void | Promise<void>;
    /** Claims the key without removing it; a claim must lapse after a bounded time. */
    acquire(key: string, claimId: string, context?: ContinuationOperationContext):
        StoredContinuation | undefined | Promise<StoredContinuation | undefined>;
    /** Removes the key if claimId holds its claim. */
    consume(key: string, claimId: string): void | Promise<void>;
    /** Gives the claim back if claimId holds it. */
    release(key: string, claimId: string): void | Promise<void>;
}

/** How a signed codec configures libairlock; the runner reads it (runner.ts). */
export interface SignedKeys {
    secret: Uint8Array;
    verify: Uint8Array[];
    maxAgeMs: number | undefined;
    maxTokenBytes: number | undefined;
}
export const SIGNED_KEYS = Symbol('airlock.run.signedKeys');

const DEFAULT_MAX_AGE_MS = 3_600_000;
const MAX_AGE_MS = 365 * 24 * 3_600_000; // libairlock's ceiling
const LOGICAL_ID = /^[0-9a-f]{32}$/;

export function secretBytes(secret: unknown, what: string): Uint8Array {
    const bytes = typeof secret === 'string' ? new TextEncoder().encode(secret) :
        secret instanceof Uint8Array ? secret : undefined;
    if (!bytes) {
        throw new TypeError(`${what} must be a string or a Uint8Array.`);
    }
    if (bytes.length < 32) {
        throw new TypeError(`${what} must contain at least 32 bytes of key material.`);
    }
    return new Uint8Array(bytes);
}

function positive(value: unknown, what: string, max: number): number | undefined {
    if (value === undefined) {
        return undefined;
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
        throw new TypeError(`${what} must be a positive integer.`);
    }
    if (value > max) {
        throw new TypeError(`${what} must be at most ${max}.`);
    }
    return value;
}

/** The signed form: "LOGICALID.TOKEN". */
export function joinToken(state: RunContinuationState): string {
    return `${state.logicalRunId}.${state.token}`;
}

export function splitToken(token: unknown): RunContinuationState {
    if (typeof token !== 'string') {
        throw new RunProtocolError('Continuation token must be a string.');
    }
    const dot = token.indexOf('.');
    const logicalRunId = token.slice(0, dot);
    if (dot < 0 || !LOGICAL_ID.test(logicalRunId) || dot === token.length - 1) {
        throw new RunProtocolError('Continuation token is malformed.');
    }
    return { version: 1, runtime: 'airlock-continuation-v1', logicalRunId,
        token: token.slice(dot + 1) };
}

export function checkState(state: unknown): RunContinuationState {
    const s = state as RunContinuationState | undefined;
    if (typeof s !== 'object' || s === null || s.version !== 1 ||
        s.runtime !== 'airlock-continuation-v1' || typeof s.token !== 'string' ||
        typeof s.logicalRunId !== 'string' || !LOGICAL_ID.test(s.logicalRunId)) {
        throw new RunProtocolError('Continuation state is not an @airlock/run continuation.');
    }
    return s;
}

export type SignedCodec = ContinuationCodec<string> & { readonly [SIGNED_KEYS]: SignedKeys };

export function createSignedContinuationCodec(options: SignedContinuationCodecOptions): SignedCodec {
    if (typeof options !== 'object' || options === null) {
        throw new TypeError('createSignedContinuationCodec options must be an object.');
    }
    const verify = (options.verificationSecrets ?? []).map(
        s => secretBytes(s, 'Continuation secret'));
    if (verify.length > 7) {
        throw new TypeError('verificationSecrets holds at most 7 secrets.');
    }
    positive(options.clockSkewMs, 'Continuation clockSkewMs', MAX_AGE_MS);
    const keys: SignedKeys = {
        secret: secretBytes(options.secret, 'Continuation secret'),
        verify,
        maxAgeMs: positive(options.maxAgeMs, 'Continuation maxAgeMs', MAX_AGE_MS),
        maxTokenBytes: positive(options.maxTokenBytes, 'Continuation maxTokenBytes', 2_147_483_647),
    };
    return {
        [SIGNED_KEYS]: keys,
        encode: state => joinToken(checkState(state)),
        decode: token => splitToken(token),
    };
}

export function createStoredContinuationCodec(
    { storage, maxAgeMs = DEFAULT_MAX_AGE_MS }: { storage: ContinuationStorage; maxAgeMs?: number },
): ContinuationCodec<string> {
    if (typeof storage !== 'object' || storage === null) {
        throw new TypeError('createStoredContinuationCodec needs a storage.');
    }
    const ttl = positive(maxAgeMs, 'Continuation maxAgeMs', MAX_AGE_MS) ?? DEFAULT_MAX_AGE_MS;
    const KEY = /^[A-Za-z0-9_-]{32}$/;
    const decodeTransaction = async (token: string, context?: ContinuationOperationContext):
        Promise<ContinuationDecodeTransaction> => {
        if (typeof token !== 'string' || !KEY.test(token)) {
            throw new RunProtocolError('Stored continuation key is invalid.');
        }
        const claimId = randomUUID();
        const stored = await storage.acquire(token, claimId, context);
        if (stored === undefined) {
            throw new RunProtocolError('Stored continuation was not found.');
        }
        if (typeof stored.expiresAtMs !== 'number' || stored.expiresAtMs <= Date.now()) {
            await storage.consume(token, claimId);
            throw new RunProtocolError('Stored continuation has expired.');
        }
        let state: RunContinuationState;
        try {
            state = checkState(stored.state);
        } catch (e) {
            await storage.release(token, claimId);
            throw e;
        }
        return {
            state,
            commit: () => storage.consume(token, claimId),
            rollback: () => storage.release(token, claimId),
        };
    };
    return {
        async encode(state, context) {
            const key = randomBytes(24).toString('base64url');
            await storage.set(key, { state: checkState(state), expiresAtMs: Date.now() + ttl },
                context);
            return key;
        },
        async decode(token, context) {
            const tx = await decodeTransaction(token, context);
            await tx.commit();
            return tx.state;
        },
        decodeTransaction,
    };
}
