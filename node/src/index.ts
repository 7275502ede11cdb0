/*
 * @airlock/run - the npm package `run`'s interface (2.1.5) on airlock: every run in a jailed
 * worker process with hard limits, host functions plain JavaScript functions of this process.
 * Changing the import (or mapping `run` to this package) is the whole migration.
 */
export {
    createRunner, isRunInterruptedResult, run, setMaxWorkers,
    type ConsoleEntry, type HostFunction, type HostFunctionGroup, type HostFunctions,
    type Runner, type RunnerOptions, type RunCompletedResult, type RunInput,
    type RunInterruptedResult, type RunInterruption, type RunLimits, type RunModuleLoader,
    type RunResolution, type RunResult, type RunSourceType, type RunStats, type SyncHostFunctions,
} from './runner.js';
export {
    getBindingContext, getHostFunctionContext, type HostFunctionContext,
    type HostFunctionResumeContext,
} from './context.js';
export {
    createSignedContinuationCodec, createStoredContinuationCodec, type ContinuationCodec,
    type ContinuationDecodeTransaction, type ContinuationOperationContext,
    type ContinuationStorage, type RunContinuationState, type SignedContinuationCodecOptions,
    type StoredContinuation,
} from './codecs.js';
export {
    RunAbortedError, RunBridgeLimitError, RunConcurrencyError, RunDetachedBridgeRequestError,
    RunError, RunHostFunctionError, RunProtocolError, RunSourceTooLargeError, RunTimeoutError,
} from './errors.js';
