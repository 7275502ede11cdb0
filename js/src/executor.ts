/*
 * executor.ts - createExecutor(): the Executor shape code-mode agents call
 * (`execute(code, providers) -> {result, error?, logs?}`, as in @cloudflare/codemode), backed by
 * an ad-hoc run on airlockd (POST /v1/runs with source, department and functions).
 *
 * The code runs on airlockd, not here, so `providers` cannot hand it JavaScript functions: it
 * names the connector functions the run may call (`crm.lookup`), which airlockd's connectors
 * serve. Any function objects passed are never called; only their names count. The department's
 * policy decides whether ad-hoc runs are allowed at all (ADHOC_DISABLED otherwise) and whether
 * they wait for a person; sensitive functions wait for one per call.
 *
 * Like codemode's executors, execute() never throws: every failure, also a refusal of airlockd,
 * is in `error`.
 */
import { Client, type RequestOptions } from './client.js';
import { AirlockError } from './errors.js';
import type { ConsoleEntry, Language, Run } from './types.js';

/** A function the guest may call, only its name matters (the run cannot call back into it). */
export type ProviderFunction = (...args: never[]) => unknown;

/** codemode's resolved provider: its `name` is the connector, the keys of `fns` its functions. */
export interface ResolvedProvider {
    name: string;
    fns: Readonly<Record<string, ProviderFunction>>;
    positionalArgs?: boolean;
}

/**
 * What a run may call, in any of these forms:
 * - `["crm.lookup", "shop.refund"]`: "connector.fn" names;
 * - `[{name: "crm", fns: {lookup}}]`: codemode's ResolvedProvider[] (mixable with names);
 * - `{crm: ["lookup"], shop: ["refund"]}`: function names by connector;
 * - `{crm: {lookup}}`: functions by connector (their keys are the names);
 * - `{search}`: codemode's older flat form: functions of the connector `codemode`.
 */
export type Providers =
    | readonly (string | ResolvedProvider)[]
    | Readonly<Record<string, readonly string[] | Readonly<Record<string, ProviderFunction>> |
        ProviderFunction>>;

/** As @cloudflare/codemode's ExecuteResult. */
export interface ExecuteResult {
    result: unknown;
    error?: string;
    logs?: string[];
}

/** ExecuteResult plus the run airlockd recorded (absent when none started). */
export interface AirlockExecuteResult extends ExecuteResult {
    run?: Run;
}

export interface ExecutorOptions {
    url: string;
    key: string;
    /**
     * The department the runs belong to; default: the one department in which the key holds
     * the agent role (an error names them when there are several).
     */
    department?: string;
    /** ms one execute() may take in total; default 60000 */
    timeoutMs?: number;
    /** js (default) or ts: how airlockd reads the code */
    language?: Language;
    /**
     * ms to wait for a person when the run stops for an approval; default 0: execute() answers
     * at once with an error naming the run and its approvals.
     */
    approvalWaitMs?: number;
    /** a client to use instead of one made from url and key */
    client?: Client;
}

export interface AirlockExecutor {
    execute(code: string, providers?: Providers, options?: RequestOptions):
        Promise<AirlockExecuteResult>;
}

const IDENT = '[A-Za-z_$][A-Za-z0-9_$]*';
const NAME = new RegExp(`^${IDENT}\\.${IDENT}$`);
const IDENT_ONLY = new RegExp(`^${IDENT}$`);
/* codemode hands executors an arrow function ("async () => {...}"), airlock runs a body */
const ARROW = new RegExp(`^(async\\s*)?(\\([^()]*\\)|${IDENT})\\s*=>`);

/** The "connector.fn" names of `providers`, in order, each once; a TypeError for a bad one. */
export function functionNames(providers: Providers | undefined | null): string[] {
    const out = new Set<string>();
    const add = (connector: string, fn: string) => {
        const name = `${connector}.${fn}`;
        if (!NAME.test(name)) {
            throw new TypeError(`providers: "${name}" is not connector.function (two identifiers)`);
        }
        out.add(name);
    };
    if (providers === undefined || providers === null) {
        return [];
    }
    if (Array.isArray(providers)) {
        providers.forEach((p: unknown, i) => {
            if (typeof p === 'string') {
                const dot = p.indexOf('.');
                add(dot < 0 ? p : p.slice(0, dot), dot < 0 ? '' : p.slice(dot + 1));
            } else if (typeof p === 'object' && p !== null && typeof (p as ResolvedProvider).name ===
                    'string' && typeof (p as ResolvedProvider).fns === 'object') {
                const r = p as ResolvedProvider;
                Object.keys(r.fns ?? {}).forEach((fn) => add(r.name, fn));
            } else {
                throw new TypeError(`providers[${i}] is neither "connector.fn" nor {name, fns}`);
            }
        });
        return [...out];
    }
    if (typeof providers !== 'object') {
        throw new TypeError('providers must be an array or an object');
    }
    for (const [key, v] of Object.entries(providers as Record<string, unknown>)) {
        if (typeof v === 'function') {
            add('codemode', key);
        } else if (Array.isArray(v)) {
            v.forEach((fn: unknown) => {
                if (typeof fn !== 'string') {
                    throw new TypeError(`providers.${key} must list function names`);
                }
                add(key, fn);
            });
        } else if (typeof v === 'object' && v !== null) {
            Object.keys(v).forEach((fn) => add(key, fn));
        } else {
            throw new TypeError(`providers.${key} is neither names, functions nor a function`);
        }
    }
    return [...out];
}

/**
 * The function body airlock runs for `code`: a body as is, an arrow function (codemode's
 * normalized form) called and awaited. Lines stay where they were, so positions in errors match.
 */
export function toBody(code: string): string {
    const t = code.trim().replace(/;+$/, '');
    if (ARROW.test(t)) {
        return `return await (${t}\n)();`;
    }
    return code;
}

function formatLog(c: ConsoleEntry): string {
    return c.level === 'log' ? c.text : `[${c.level}] ${c.text}`;
}

function outcome(run: Run): AirlockExecuteResult {
    const logs = (run.console ?? []).map(formatLog);
    if (run.status === 'completed') {
        return { result: run.value, logs, run };
    }
    if (run.status === 'awaiting_approval') {
        const ids = run.approvals.length ? ` (${run.approvals.join(', ')})` : '';
        return { result: undefined, error: `run ${run.id} is awaiting approval${ids}`, logs, run };
    }
    const message = run.error?.message || `run ${run.id} ended ${run.status}`;
    return { result: undefined, error: message, logs, run };
}

/** An Executor whose execute() runs the code as an ad-hoc run on airlockd. */
export function createExecutor(options: ExecutorOptions): AirlockExecutor {
    const timeoutMs = options.timeoutMs ?? 60000;
    const client = options.client ?? new Client({ url: options.url, key: options.key, timeoutMs });
    let department: Promise<string> | undefined = options.department === undefined ? undefined :
        Promise.resolve(options.department);

    async function ownDepartment(o: RequestOptions): Promise<string> {
        const me = await client.me(o);
        const agentOf = [...new Set(me.roles.filter((g) => g.role === 'agent')
            .map((g) => g.department))];
        if (agentOf.length !== 1 || agentOf[0] === '*') {
            throw new TypeError(`createExecutor: ${me.name} is an agent of ` +
                (agentOf.length ? agentOf.join(', ') : 'no department') +
                ': name the department in the options');
        }
        return agentOf[0] as string;
    }

    return {
        async execute(code, providers, o = {}) {
            const start = Date.now();
            const left = () => Math.max(1, timeoutMs - (Date.now() - start));
            try {
                if (typeof code !== 'string') {
                    throw new TypeError('execute: code must be a string');
                }
                const functions = functionNames(providers);
                const req = { signal: o.signal, timeoutMs: o.timeoutMs ?? timeoutMs };
                if (department === undefined) {
                    department = ownDepartment(req);
                    department.catch(() => {
                        department = undefined;
                    });
                }
                const dept = await department;
                let run = await client.runs.start({ source: toBody(code), department: dept,
                    functions, language: options.language ?? 'js', wait: true },
                { ...req, timeoutMs: left() });
                const waitMs = Math.min(options.approvalWaitMs ?? 0, left());
                if (run.status === 'awaiting_approval' && waitMs > 0) {
                    try {
                        run = await client.runs.wait(run.id, { signal: o.signal, waitMs,
                            until: ['completed', 'failed', 'cancelled', 'denied'] });
                    } catch (e) {
                        if (!(e instanceof AirlockError && e.code === 'WAIT_TIMEOUT')) {
                            throw e;
                        }
                        run = await client.runs.get(run.id, req);
                    }
                }
                return outcome(run);
            } catch (e) {
                if (e instanceof AirlockError) {
                    return { result: undefined, error: `${e.code}: ${e.message}` };
                }
                return { result: undefined, error: e instanceof Error ? e.message : String(e) };
            }
        },
    };
}
