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

export class CallContext implements HostFunctionContext {
    active = true;
    interruption: { payload: unknown } | undefined;
    resume?: HostFunctionResumeContext;

    constructor(readonly abortSignal: AbortSignal, readonly invocationId: string,
        readonly logicalRunId: string, readonly requestIndex: number,
        readonly hostFunctionName: string, resume: HostFunctionResumeContext | undefined) {
        if (resume) {
            this.resume = resume;
        }
        this.interrupt = this.interrupt.bind(this);
    }

    get requestId(): string {
        return `${this.invocationId}:${this.requestIndex}`;
    }

    interrupt(payload: unknown): never {
        this.interruption ??= { payload };
        throw new InterruptSignal();
    }
}

export const callStorage = new AsyncLocalStorage<CallContext>();

/** The context of the host function call being served; throws anywhere else. */
export function getHostFunctionContext(): HostFunctionContext {
    const context = callStorage.getStore();
    if (!context?.active) {
        throw new Error('getHostFunctionContext() must be called inside an active host function.');
    }
    return context;
}

/** The name `run`'s next version gives getHostFunctionContext. */
export const getBindingContext = getHostFunctionContext;
