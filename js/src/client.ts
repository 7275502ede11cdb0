/*
 * client.ts - airlockd's HTTP API (docs/server.md) as typed methods over the global fetch.
 *
 * One method per route an agent builder uses, grouped by resource (client.templates, .runs,
 * .approvals, .audit, plus the admin routes a setup needs), each returning the answer's JSON as
 * typed in types.ts. Values in the boundary format are decoded on the way in (a run's value, the
 * args of its host calls and of approvals); audit records stay exactly as exported, since their
 * hashes are over those bytes. Every failure is an AirlockError (errors.ts). Nothing here
 * retries: a 429 carries its Retry-After for the caller to honour.
 */
import { AirlockError } from './errors.js';
import type {
    Approval,
    ApprovalStatus,
    AuditPage,
    AuditRecord,
    AuditVerify,
    Autonomy,
    Checkpoint,
    Connector,
    ConnectorCreate,
    Department,
    EndedRunStatus,
    Grant,
    Language,
    Principal,
    PrincipalCreated,
    Role,
    Run,
    RunStatus,
    Template,
    Version,
    VersionCreate,
    VersionDiff,
} from './types.js';
import { decode, encode } from './values.js';

export interface ClientOptions {
    /** airlockd's base URL, e.g. "http://127.0.0.1:8080" */
    url: string;
    /** an API key (ak_…) */
    key: string;
    /** ms a request may take before it fails with code TIMEOUT; default 60000, 0: no limit */
    timeoutMs?: number;
    /** a fetch to use instead of the global one */
    fetch?: typeof fetch;
}

/** Per-call options every method takes last. */
export interface RequestOptions {
    signal?: AbortSignal;
    /** overrides the client's timeoutMs for this call */
    timeoutMs?: number;
}

type Query = Record<string, string | number | boolean | undefined | null>;

interface Req extends RequestOptions {
    body?: unknown;
    query?: Query | undefined;
    /** the answer's text as is, unparsed */
    raw?: boolean;
}

/** A run of an approved template version. */
export interface TemplateRunRequest {
    template: string;
    /** default: the newest approved version */
    version?: number;
    input?: Record<string, unknown>;
    /** default true: answer once the run ended or waits for a person */
    wait?: boolean;
    source?: never;
    department?: never;
    functions?: never;
    language?: never;
}

/** An ad-hoc run of source (the department's policy must have allow_adhoc). */
export interface AdhocRunRequest {
    source: string;
    department: string;
    /** "connector.fn" names the source may call */
    functions?: string[];
    language?: Language;
    input?: Record<string, unknown>;
    wait?: boolean;
    template?: never;
    version?: never;
}

export type RunRequest = TemplateRunRequest | AdhocRunRequest;

export interface RunListQuery {
    template?: string;
    status?: RunStatus;
    principal?: string;
    /** a run id (the runs after it) or a time */
    after?: string;
    limit?: number;
}

export interface WaitOptions extends RequestOptions {
    /** statuses that end the wait; default the ended ones */
    until?: readonly RunStatus[];
    /** ms before the wait fails with code WAIT_TIMEOUT; default 60000 */
    waitMs?: number;
    /** ms between two looks at the run; default 100 */
    intervalMs?: number;
}

export interface AuditQuery {
    after?: number;
    limit?: number;
    run?: string;
    template?: string;
    action?: string;
}

export interface ApprovalQuery {
    status?: ApprovalStatus;
    run?: string;
    limit?: number;
}

const ENDED: readonly EndedRunStatus[] = ['completed', 'failed', 'cancelled', 'denied'];

function seg(s: string | number): string {
    return encodeURIComponent(String(s));
}

function isObject(v: unknown): v is Record<string, unknown> {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/* The boundary-format members of a run or an approval, decoded in place. */
function decodeRun<T>(doc: unknown): Run<T> {
    if (!isObject(doc) || typeof doc.id !== 'string') {
        throw new AirlockError({ status: 0, code: 'BAD_ANSWER', message: 'the answer is no run' });
    }
    if (doc.value !== undefined && doc.value !== null) {
        doc.value = decode(doc.value);
    }
    if (Array.isArray(doc.host_calls)) {
        for (const c of doc.host_calls) {
            if (isObject(c) && c.args !== undefined) {
                c.args = decode(c.args);
            }
        }
    }
    return doc as unknown as Run<T>;
}

function decodeApproval(doc: unknown): Approval {
    if (isObject(doc) && doc.args !== undefined && doc.args !== null) {
        doc.args = decode(doc.args);
        // each parameter is its place in args: decoded with the whole array (references)
        if (Array.isArray(doc.params) && Array.isArray(doc.args)) {
            const args = doc.args;
            doc.params.forEach((p: unknown, i: number) => {
                if (isObject(p) && i < args.length) {
                    p.value = args[i];
                }
            });
        }
    }
    if (isObject(doc) && doc.result !== undefined && doc.result !== null) {
        doc.result = decode(doc.result);
    }
    return doc as Approval;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(done, ms);
        function done() {
            signal?.removeEventListener('abort', abort);
            resolve();
        }
        function abort() {
            clearTimeout(timer);
            reject(new AirlockError({ status: 0, code: 'ABORTED', message: 'aborted',
                cause: signal?.reason }));
        }
        if (signal?.aborted) {
            abort();
            return;
        }
        signal?.addEventListener('abort', abort, { once: true });
    });
}

export class Client {
    readonly url: string;
    readonly timeoutMs: number;
    readonly #key: string;
    readonly #fetch: typeof fetch;

    constructor(options: ClientOptions);
    constructor(url: string, key: string, options?: Omit<ClientOptions, 'url' | 'key'>);
    constructor(a: ClientOptions | string, key?: string, more?: Omit<ClientOptions, 'url' | 'key'>) {
        const o: ClientOptions = typeof a === 'string' ? { ...more, url: a, key: key ?? '' } : a;
        if (typeof o.url !== 'string' || !/^https?:\/\/[^/]/.test(o.url)) {
            throw new TypeError('Client: url must be an http:// or https:// URL, not ' +
                JSON.stringify(o.url));
        }
        if (typeof o.key !== 'string' || o.key === '') {
            throw new TypeError('Client: key must be an API key (ak_…)');
        }
        this.url = o.url.replace(/\/+$/, '');
        this.#key = o.key;
        this.timeoutMs = o.timeoutMs ?? 60000;
        const f = o.fetch ?? globalThis.fetch;
        if (typeof f !== 'function') {
            throw new TypeError('Client: no global fetch (Node 18 or later has one); pass options.fetch');
        }
        this.#fetch = f;
    }

    /**
     * One request: the parsed answer (JSON; text for text/plain; an array of objects for
     * application/x-ndjson). Any route, for what the typed methods do not cover.
     */
    async request<T = unknown>(method: string, path: string, req: Req = {}): Promise<T> {
        let url = this.url + path;
        if (req.query) {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(req.query)) {
                if (v !== undefined && v !== null) {
                    q.set(k, String(v));
                }
            }
            const s = q.toString();
            if (s) {
                url += '?' + s;
            }
        }
        const headers: Record<string, string> = {
            Authorization: 'Bearer ' + this.#key,
            Accept: 'application/json',
        };
        let body: string | undefined;
        if (req.body !== undefined) {
            headers['Content-Type'] = 'application/json';
            body = JSON.stringify(req.body);
        }
        /* one controller for the caller's signal and the timeout, so either ends the request */
        const ctl = new AbortController();
        const timeoutMs = req.timeoutMs ?? this.timeoutMs;
        let timedOut = false;
        const timer = timeoutMs > 0 ? setTimeout(() => {
            timedOut = true;
            ctl.abort();
        }, timeoutMs) : undefined;
        const onAbort = () => ctl.abort(req.signal?.reason);
        if (req.signal?.aborted) {
            onAbort();
        }
        req.signal?.addEventListener('abort', onAbort, { once: true });
        try {
            let r: Response;
            let text: string;
            try {
                r = await this.#fetch(url, { method, headers, body, signal: ctl.signal });
                text = await r.text();
            } catch (e) {
                if (timedOut) {
                    throw new AirlockError({ status: 0, code: 'TIMEOUT',
                        message: `${method} ${path}: no answer within ${timeoutMs} ms`, cause: e });
                }
                if (ctl.signal.aborted) {
                    throw new AirlockError({ status: 0, code: 'ABORTED',
                        message: `${method} ${path}: aborted`, cause: e });
                }
                throw new AirlockError({ status: 0, code: 'NETWORK_ERROR',
                    message: `${method} ${path}: ${(e as Error).message}`, cause: e });
            }
            if (req.raw && r.ok) {
                return text as T;
            }
            return this.#answer<T>(method, path, r, text);
        } finally {
            clearTimeout(timer);
            req.signal?.removeEventListener('abort', onAbort);
        }
    }

    #answer<T>(method: string, path: string, r: Response, text: string): T {
        const ctype = r.headers.get('Content-Type') ?? '';
        let doc: unknown = text;
        try {
            if (ctype.startsWith('application/x-ndjson')) {
                doc = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
            } else if (!ctype.startsWith('text/plain') && text !== '') {
                doc = JSON.parse(text);
            }
        } catch {
            if (r.ok) {
                throw new AirlockError({ status: r.status, code: 'BAD_ANSWER',
                    message: `${method} ${path}: the answer is not ${ctype || 'JSON'}` });
            }
        }
        if (r.ok) {
            return doc as T;
        }
        const e = isObject(doc) && isObject(doc.error) ? doc.error : {};
        const retry = r.headers.get('Retry-After');
        throw new AirlockError({
            status: r.status,
            code: typeof e.code === 'string' ? e.code : 'HTTP_' + r.status,
            message: typeof e.message === 'string' ? e.message : `${method} ${path}: HTTP ${r.status}`,
            requestId: typeof e.request_id === 'string' ? e.request_id :
                (r.headers.get('X-Request-Id') ?? undefined),
            retryAfter: retry === null ? undefined : Number(retry),
            body: doc,
        });
    }

    /** GET /v1/me: the caller, its roles and keys. */
    me(o?: RequestOptions): Promise<Principal> {
        return this.request('GET', '/v1/me', o);
    }

    readonly templates = {
        /** GET /v1/templates: the templates the caller may see. */
        list: (o?: RequestOptions): Promise<Template[]> => this.request('GET', '/v1/templates', o),
        get: (name: string, o?: RequestOptions): Promise<Template> =>
            this.request('GET', `/v1/templates/${seg(name)}`, o),
        create: (t: { name: string; department: string; description?: string },
            o?: RequestOptions): Promise<Template> =>
            this.request('POST', '/v1/templates', { ...o, body: t }),
        /** POST /v1/templates/{t}/versions: a new draft. */
        createVersion: (template: string, v: VersionCreate, o?: RequestOptions): Promise<Version> =>
            this.request('POST', `/v1/templates/${seg(template)}/versions`, { ...o, body: v }),
        version: (template: string, version: number, o?: RequestOptions): Promise<Version> =>
            this.request('GET', `/v1/templates/${seg(template)}/versions/${seg(version)}`, o),
        submit: (template: string, version: number, o?: RequestOptions): Promise<Version> =>
            this.#move(template, version, 'submit', undefined, o),
        /** Approve a submitted version (an approver who is not its author). */
        approve: (template: string, version: number, comment = '', o?: RequestOptions):
            Promise<Version> => this.#move(template, version, 'approve', { comment }, o),
        reject: (template: string, version: number, comment = '', o?: RequestOptions):
            Promise<Version> => this.#move(template, version, 'reject', { comment }, o),
        revoke: (template: string, version: number, reason = '', o?: RequestOptions):
            Promise<Version> => this.#move(template, version, 'revoke', { reason }, o),
        /** The diff of `version` against `from` (default: the newest approved before it). */
        diff: (template: string, version: number, from?: number, o?: RequestOptions):
            Promise<VersionDiff> =>
            this.request('GET', `/v1/templates/${seg(template)}/versions/${seg(version)}/diff`,
                { ...o, query: { from } }),
        /**
         * The TypeScript declarations of what a run of the version has (its connector functions,
         * console, input); without a version, of the newest approved one.
         */
        types: async (template: string, version?: number, o?: RequestOptions): Promise<string> => {
            const v = version ?? await this.#newestApproved(template, o);
            return this.request('GET',
                `/v1/templates/${seg(template)}/versions/${seg(v)}/types`, o);
        },
    };

    async #newestApproved(template: string, o?: RequestOptions): Promise<number> {
        const t = await this.templates.get(template, o);
        const approved = t.versions.filter((v) => v.state === 'approved').map((v) => v.version);
        if (approved.length === 0) {
            throw new AirlockError({ status: 0, code: 'VERSION_NOT_APPROVED',
                message: `template ${template} has no approved version` });
        }
        return Math.max(...approved);
    }

    #move(template: string, version: number, verb: string, body: unknown,
        o?: RequestOptions): Promise<Version> {
        return this.request('POST',
            `/v1/templates/${seg(template)}/versions/${seg(version)}/${verb}`, { ...o, body });
    }

    readonly runs = {
        /**
         * POST /v1/runs: a run of a template ({template, version?, input?}) or of ad-hoc source
         * ({source, department, functions?}). With wait (the default) the answer comes once
         * the run ended or waits for a person (status awaiting_approval).
         */
        start: async <T = unknown>(r: RunRequest, o?: RequestOptions): Promise<Run<T>> =>
            decodeRun<T>(await this.request('POST', '/v1/runs', { ...o, body: r })),
        get: async <T = unknown>(id: string, o?: RequestOptions): Promise<Run<T>> =>
            decodeRun<T>(await this.request('GET', `/v1/runs/${seg(id)}`, o)),
        /** GET /v1/runs: oldest first, at most `limit` (default 100). */
        list: async (q: RunListQuery = {}, o?: RequestOptions): Promise<Run[]> => {
            const docs = await this.request<unknown[]>('GET', '/v1/runs', { ...o,
                query: { ...q } });
            return docs.map((d) => decodeRun(d));
        },
        cancel: async <T = unknown>(id: string, o?: RequestOptions): Promise<Run<T>> =>
            decodeRun<T>(await this.request('POST', `/v1/runs/${seg(id)}/cancel`, o)),
        /** Looks at the run until its status is one of `until` (default: it ended). */
        wait: async <T = unknown>(id: string, o: WaitOptions = {}): Promise<Run<T>> => {
            const until = o.until ?? ENDED;
            const waitMs = o.waitMs ?? 60000;
            const deadline = Date.now() + waitMs;
            for (;;) {
                const run = await this.runs.get<T>(id, o);
                if (until.includes(run.status)) {
                    return run;
                }
                if (Date.now() >= deadline) {
                    throw new AirlockError({ status: 0, code: 'WAIT_TIMEOUT',
                        message: `run ${id} is still ${run.status} after ${waitMs} ms` });
                }
                await sleep(Math.min(o.intervalMs ?? 100, Math.max(0, deadline - Date.now())),
                    o.signal);
            }
        },
    };

    readonly approvals = {
        /** GET /v1/approvals: newest first; every status unless `status` is given. */
        list: async (q: ApprovalQuery = {}, o?: RequestOptions): Promise<Approval[]> => {
            const docs = await this.request<unknown[]>('GET', '/v1/approvals', { ...o,
                query: { ...q } });
            return docs.map(decodeApproval);
        },
        approve: async (id: string, comment?: string, o?: RequestOptions): Promise<Approval> =>
            decodeApproval(await this.request('POST', `/v1/approvals/${seg(id)}/approve`,
                { ...o, body: comment === undefined ? {} : { comment } })),
        deny: async (id: string, comment?: string, o?: RequestOptions): Promise<Approval> =>
            decodeApproval(await this.request('POST', `/v1/approvals/${seg(id)}/deny`,
                { ...o, body: comment === undefined ? {} : { comment } })),
        /**
         * POST /v1/approvals/{id}/answer: a call in doubt (kind in_doubt) returns `result` to the
         * guest (encoded to boundary JSON) and nothing is sent; 409 for another kind.
         */
        answer: async (id: string, result: unknown, comment?: string,
            o?: RequestOptions): Promise<Approval> =>
            decodeApproval(await this.request('POST', `/v1/approvals/${seg(id)}/answer`,
                { ...o, body: comment === undefined
                    ? { result: JSON.parse(encode(result, 'result')) }
                    : { result: JSON.parse(encode(result, 'result')), comment } })),
    };

    readonly audit = {
        /** GET /v1/audit: a page of records after `after`. */
        list: (q: AuditQuery = {}, o?: RequestOptions): Promise<AuditPage> =>
            this.request('GET', '/v1/audit', { ...o, query: { ...q } }),
        /** GET /v1/audit/export: every record, then the closing checkpoint. */
        export: (o?: RequestOptions): Promise<AuditRecord[]> =>
            this.request('GET', '/v1/audit/export', o),
        /** The export's exact text, for `airlock audit verify FILE` offline. */
        exportText: (o?: RequestOptions): Promise<string> =>
            this.request('GET', '/v1/audit/export', { ...o, raw: true }),
        verify: (o?: RequestOptions): Promise<AuditVerify> =>
            this.request('GET', '/v1/audit/verify', o),
        checkpoint: (o?: RequestOptions): Promise<Checkpoint> =>
            this.request('GET', '/v1/audit/checkpoint', o),
    };

    /* The admin routes a setup needs (departments, principals, roles, connectors). */

    readonly departments = {
        list: (o?: RequestOptions): Promise<Department[]> =>
            this.request('GET', '/v1/departments', o),
        create: (name: string, o?: RequestOptions): Promise<Department> =>
            this.request('POST', '/v1/departments', { ...o, body: { name } }),
        setPolicy: (name: string, p: { autonomy?: Autonomy; allow_adhoc?: boolean },
            o?: RequestOptions): Promise<Department> =>
            this.request('PUT', `/v1/departments/${seg(name)}/policy`, { ...o, body: p }),
    };

    readonly principals = {
        list: (o?: RequestOptions): Promise<Principal[]> =>
            this.request('GET', '/v1/principals', o),
        create: (name: string, kind: 'user' | 'agent' = 'user', o?: RequestOptions):
            Promise<PrincipalCreated> =>
            this.request('POST', '/v1/principals', { ...o, body: { name, kind } }),
        grant: (name: string, role: Role, department: string, o?: RequestOptions):
            Promise<Grant & { principal: string }> =>
            this.request('POST', `/v1/principals/${seg(name)}/roles`,
                { ...o, body: { role, department } }),
    };

    readonly connectors = {
        list: (o?: RequestOptions): Promise<Connector[]> =>
            this.request('GET', '/v1/connectors', o),
        get: (name: string, o?: RequestOptions): Promise<Connector> =>
            this.request('GET', `/v1/connectors/${seg(name)}`, o),
        create: (c: ConnectorCreate, o?: RequestOptions): Promise<Connector> =>
            this.request('POST', '/v1/connectors', { ...o, body: c }),
    };
}
