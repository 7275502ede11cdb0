/*
 * context.ts - getHostFunctionContext(): what a host function knows about the call it serves,
 * carried by AsyncLocalStorage so that it follows awaited work and stays apart between
 * concurrent calls. A context ends when its call is answered: from then on (detached work, a
 * timer the function left behind) asking for it throws.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Present when an interrupted host function is invoked again on a resume. */
export interface HostFunctionResumeContext {
    interruptionId: string;
    payload: unknown;
    resolution: unknown;
}

export interface HostFunctionContext {
    /** Aborted when the run is aborted, times out, fails or ends with the call unanswered. */
    abortSignal: AbortSignal;
    /** This attempt of the run (a resume is a new attempt). */
    invocationId: string;
    /** The run across every resume of its continuations. */
    logicalRunId: string;
    /** This call within the attempt. */
    requestId: string;
    /** 1-based order of the call within the run. */
    requestIndex: number;
    /** "group.fn". */
    hostFunctionName: string;
    /** Interrupts the run for a person's decision; never returns. */
    interrupt(payload: unknown): never;
    resume?: HostFunctionResumeContext;
}

/**
 * Thrown by interrupt(); the call's answer becomes the interruption whatever happens to it. Its
 * name is the one `run` gives its signal, which code that wraps host functions (the AI SDK's code
 * mode) lets through.
 */
export class InterruptSignal extends Error {
    constructor() {
        super('Host function interruption requested.');
        this.name = 'HostFunctionInterruptSignal';
    }
}

/** A call's context: exactly `run`'s members; what the package tracks stays in `CallState`. */
export interface CallState {
    context: HostFunctionContext;
    active: boolean;
    interruption: { payload: unknown } | undefined;
}

export function newCallState(abortSignal: AbortSignal, invocationId: string,
    logicalRunId: string, requestIndex: number, hostFunctionName: string,
    resume: HostFunctionResumeContext | undefined): CallState {
    const state: CallState = { context: undefined as never, active: true, interruption: undefined };
    const context: HostFunctionContext = {
        abortSignal,
        hostFunctionName,
        interrupt(payload: unknown): never {
            state.interruption ??= { payload };
            throw new InterruptSignal();
        },
        invocationId,
        logicalRunId,
        requestId: `${invocationId}:${requestIndex}`,
        requestIndex,
    };
    if (resume) {
        context.resume = resume;
    }
    state.context = context;
    return state;
}

export const callStorage = new AsyncLocalStorage<CallState>();

/** The context of the host function call being served; throws anywhere else. */
export function getHostFunctionContext(): HostFunctionContext {
    const state = callStorage.getStore();
    if (!state?.active) {
        throw new Error(
            'getHostFunctionContext() can only be called while executing a host function.');
    }
    return state.context;
}

/** The name `run`'s next version gives getHostFunctionContext. */
export const getBindingContext = getHostFunctionContext;
