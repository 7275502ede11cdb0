/*
 * errors.ts - the errors a run throws, as the npm package `run` names them: a RunError with a
 * stable `code` (RUN_*), and a subclass for the failures a caller handles on their own; the
 * messages are `run`'s.
 * libairlock's codes (docs/errors.md) map onto them in runner.ts; the airlock code is kept in
 * `details.airlockCode` for whoever wants the finer one (CPU_LIMIT, MEMORY_LIMIT, ...).
 */

// One symbol for every copy of the package in a process, so isInstance works across copies.
const RUN_ERROR = Symbol.for('airlock.run.RunError');

export class RunError extends Error {
    /** Stable machine-readable error code (RUN_*). */
    code: string;
    /** Structured diagnostic details, when there are any. */
    readonly details?: unknown;

    constructor(message: string, code = 'RUN_ERROR', details?: unknown) {
        super(message);
        this.name = new.target.name;
        this.code = code;
        if (details !== undefined) {
            this.details = details;
        }
        Object.defineProperty(this, RUN_ERROR, { value: true });
    }

    /** Whether `error` is a RunError, also one of another copy of this package. */
    static isInstance(error: unknown): error is RunError {
        try {
            return typeof error === 'object' && error !== null &&
                (error as Record<symbol, unknown>)[RUN_ERROR] === true;
        } catch { // a revoked Proxy, a trap that throws: no RunError
            return false;
        }
    }
}

/** The caller's abort signal aborted the run. */
export class RunAbortedError extends RunError {
    constructor() {
        super('JavaScript runtime execution was aborted.', 'RUN_ABORTED');
    }
}

/** A host function failed and the guest did not catch it. */
export class RunHostFunctionError extends RunError {
    constructor(message: string, details?: unknown) {
        super(message, 'RUN_HOST_FUNCTION_ERROR', details);
    }
}

/** The guest went past a host-call limit (count, in flight, size of arguments or answers). */
export class RunBridgeLimitError extends RunError {
    constructor(message: string, details?: unknown) {
        super(message, 'RUN_BRIDGE_LIMIT', details);
    }
}

/** The process-wide cap on concurrent runs (setMaxWorkers) was reached: nothing was queued. */
export class RunConcurrencyError extends RunError {
    constructor(maxWorkers: number) {
        super(`JavaScript runtime maxWorkers limit reached (${maxWorkers}).`,
            'RUN_CONCURRENCY_LIMIT', { maxWorkers });
    }
}

/** The guest finished with a host call it never awaited. */
export class RunDetachedBridgeRequestError extends RunError {
    constructor(message: string, details?: unknown) {
        super(message, 'RUN_DETACHED_BRIDGE_REQUEST', details);
    }
}

/** A continuation that is malformed, tampered with, expired, out of scope or divergent. */
export class RunProtocolError extends RunError {
    constructor(message: string, details?: unknown) {
        super(message, 'RUN_PROTOCOL_ERROR', details);
    }
}

/** The source is larger than limits.maxSourceBytes. */
export class RunSourceTooLargeError extends RunError {
    constructor(bytes: number, maxBytes: number) {
        super(`JavaScript runtime source exceeds the ${maxBytes} byte size limit.`,
            'RUN_SOURCE_TOO_LARGE', { bytes, maxBytes });
    }
}

/** The run went past its timeout. */
export class RunTimeoutError extends RunError {
    constructor(timeoutMs: number) {
        super(`JavaScript runtime execution timed out after ${timeoutMs}ms.`, 'RUN_TIMEOUT',
            { timeoutMs });
    }
}
