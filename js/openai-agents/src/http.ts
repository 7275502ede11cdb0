/*
 * http.ts - the few airlockd routes a sandbox session uses (docs/server.md), over the global
 * fetch: ad-hoc runs with a workspace, snapshots up (POST /v1/snapshots) and down
 * (GET /v1/runs/{id}/workspace.tar). Every failure is an AirlockHttpError with airlockd's error
 * code and message; the key never appears in one.
 */

export interface AirlockConnection {
    /** airlockd's base URL, e.g. "http://127.0.0.1:8080" */
    url: string;
    /** an API key (ak_…) of an agent of the department */
    key: string;
    /** ms a request may take; default 120000 */
    timeoutMs?: number;
}

export class AirlockHttpError extends Error {
    readonly status: number;
    readonly code: string;
    constructor(status: number, code: string, message: string) {
        super(message);
        this.name = 'AirlockHttpError';
        this.status = status;
        this.code = code;
    }
}

/** A run as airlockd answers it (the members this package reads). */
export interface RunDoc {
    id: string;
    status: string;
    value?: unknown;
    error?: { code: string; name?: string; message: string } | null;
    console?: { level: string; text: string }[];
}

const ENDED = new Set(['completed', 'failed', 'cancelled', 'denied']);

export class Http {
    readonly url: string;
    readonly #key: string;
    readonly #timeoutMs: number;

    constructor(c: AirlockConnection) {
        if (typeof c.url !== 'string' || !/^https?:\/\/[^/]/.test(c.url)) {
            throw new TypeError('AirlockSandboxClient: url must be an http:// or https:// URL');
        }
        if (typeof c.key !== 'string' || c.key === '') {
            throw new TypeError('AirlockSandboxClient: key must be an API key (ak_…)');
        }
        this.url = c.url.replace(/\/+$/, '');
        this.#key = c.key;
        this.#timeoutMs = c.timeoutMs ?? 120000;
    }

    async #fetch(method: string, path: string, body?: string | Uint8Array,
        type?: string): Promise<Response> {
        const headers: Record<string, string> = { Authorization: 'Bearer ' + this.#key };
        if (type) {
            headers['Content-Type'] = type;
        }
        let r: Response;
        try {
            r = await fetch(this.url + path, { method, headers, body: body as BodyInit | undefined,
                signal: AbortSignal.timeout(this.#timeoutMs) });
        } catch (e) {
            throw new AirlockHttpError(0, 'NETWORK_ERROR', `${method} ${path}: ${(e as Error).message}`);
        }
        if (!r.ok) {
            const text = await r.text();
            let err: { code?: unknown; message?: unknown } = {};
            try {
                err = (JSON.parse(text) as { error?: typeof err }).error ?? {};
            } catch {
                /* not JSON: the status says it */
            }
            throw new AirlockHttpError(r.status,
                typeof err.code === 'string' ? err.code : 'HTTP_' + r.status,
                `${method} ${path}: ` + (typeof err.message === 'string' ? err.message : 'HTTP ' + r.status));
        }
        return r;
    }

    async json<T>(method: string, path: string, body?: unknown): Promise<T> {
        const r = await this.#fetch(method, path,
            body === undefined ? undefined : JSON.stringify(body),
            body === undefined ? undefined : 'application/json');
        return (await r.json()) as T;
    }

    /** POST /v1/snapshots: the archive's snapshot id (snap_…), for runs of the department. */
    async upload(tar: Uint8Array, department: string): Promise<string> {
        const r = await this.#fetch('POST',
            '/v1/snapshots?department=' + encodeURIComponent(department), tar, 'application/x-tar');
        const doc = (await r.json()) as { id?: unknown };
        if (typeof doc.id !== 'string') {
            throw new AirlockHttpError(r.status, 'BAD_ANSWER', 'POST /v1/snapshots: no id in the answer');
        }
        return doc.id;
    }

    /** GET /v1/runs/{id}/workspace.tar: the workspace at the run's end. */
    async workspaceTar(run: string): Promise<Uint8Array> {
        const r = await this.#fetch('GET', `/v1/runs/${encodeURIComponent(run)}/workspace.tar`);
        return new Uint8Array(await r.arrayBuffer());
    }

    /**
     * POST /v1/runs, then the run once it has ended: a run that waits for a person (a supervised
     * department) is looked at again until one has decided, for at most waitMs.
     */
    async run(body: Record<string, unknown>, waitMs: number): Promise<RunDoc> {
        let run = await this.json<RunDoc>('POST', '/v1/runs', { ...body, wait: true });
        const until = Date.now() + waitMs;
        while (!ENDED.has(run.status)) {
            if (Date.now() > until) {
                throw new AirlockHttpError(0, 'WAIT_TIMEOUT',
                    `run ${run.id} is still ${run.status} after ${waitMs} ms`);
            }
            await new Promise((resolve) => setTimeout(resolve, 200));
            run = await this.json<RunDoc>('GET', `/v1/runs/${encodeURIComponent(run.id)}`);
        }
        return run;
    }
}
