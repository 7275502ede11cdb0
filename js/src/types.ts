/*
 * types.ts - the JSON objects of airlockd's API (docs/server.md, src/server/openapi.json) as
 * TypeScript interfaces. Members are those the server documents; it may add more, which pass
 * through untouched. Times are RFC 3339 strings in UTC. Values in the boundary format (a run's
 * `value`, the `args` of a host call or an approval) are decoded by the client (values.ts) and
 * typed `unknown` unless the caller names a type.
 */

export type Role = 'admin' | 'author' | 'approver' | 'auditor' | 'agent';
export type Autonomy = 'autonomous' | 'supervised';
export type Language = 'js' | 'ts';
export type VersionState = 'draft' | 'submitted' | 'approved' | 'rejected' | 'revoked';
export type RunStatus =
    | 'queued'
    | 'running'
    | 'awaiting_approval'
    | 'completed'
    | 'failed'
    | 'cancelled'
    | 'denied';
/** The statuses a run never leaves. */
export type EndedRunStatus = 'completed' | 'failed' | 'cancelled' | 'denied';
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'cancelled' | 'answered';
/** A JSON Schema of the subset airlockd implements (docs/schema.md). */
export type JsonSchema = { [keyword: string]: unknown } | boolean;

export interface Grant {
    role: Role;
    /** a department, or "*" for all */
    department: string;
}

export interface KeyInfo {
    prefix: string;
    created: string;
    revoked: string | null;
}

/** GET /v1/me, and each item of GET /v1/principals. */
export interface Principal {
    name: string;
    kind: 'user' | 'agent';
    created: string;
    /** who its identity provider signs in as it (kind user); null: none */
    identity?: string | null;
    /** its keys and sessions are refused */
    disabled?: boolean;
    roles: Grant[];
    keys: KeyInfo[];
}

export interface PrincipalCreated {
    name: string;
    kind: 'user' | 'agent';
    /** the API key, shown this once */
    key: string;
    prefix: string;
    identity?: string | null;
}

export interface Department {
    name: string;
    autonomy: Autonomy;
    allow_adhoc: boolean;
    created: string;
}

export interface ConnectorFunction {
    description?: string;
    args_schema?: JsonSchema;
    result_schema?: JsonSchema;
    sensitive?: boolean;
    idempotent?: boolean;
}

/** POST /v1/connectors (admin). */
export interface ConnectorCreate {
    name: string;
    department: string;
    url: string;
    signing_secret: string;
    headers?: Record<string, string>;
    timeout_ms?: number;
    functions: Record<string, ConnectorFunction>;
}

export interface Connector {
    name: string;
    department: string;
    url: string;
    header_names: string[];
    timeout_ms: number;
    functions: Record<string, Required<Pick<ConnectorFunction, 'sensitive' | 'idempotent'>> &
        ConnectorFunction>;
    created: string;
    created_by: string;
}

/** A version as a template lists it. */
export interface VersionSummary {
    template: string;
    version: number;
    state: VersionState;
    digest: string;
    author: string;
    created: string;
}

export interface Template {
    name: string;
    department: string;
    description: string;
    created: string;
    created_by: string;
    versions: VersionSummary[];
}

export interface Limits {
    timeout_ms?: number;
    cpu_ms?: number;
    memory_bytes?: number;
    output_bytes?: number;
    host_calls?: number;
}

/** POST /v1/templates/{t}/versions: only `source` is required. */
export interface VersionCreate {
    source: string;
    language?: Language;
    input_schema?: JsonSchema;
    /** "connector.fn" names the runs of the version may call */
    functions?: string[];
    autonomy?: Autonomy;
    limits?: Limits;
}

/** The whole version: GET /v1/templates/{t}/versions/{v}. */
export interface Version extends VersionSummary {
    department: string;
    language: Language;
    autonomy: Autonomy;
    functions: string[];
    limits: Limits;
    input_schema: JsonSchema;
    source: string;
    submitted: string | null;
    submitted_by: string | null;
    approved: string | null;
    approved_by: string | null;
    approve_comment: string | null;
    rejected: string | null;
    rejected_by: string | null;
    reject_comment: string | null;
    revoked: string | null;
    revoked_by: string | null;
    revoke_reason: string | null;
}

export interface VersionDiff {
    template: string;
    version: number;
    from: number | null;
    /** a unified diff; "" for equal sources */
    source_diff: string;
    changes: {
        functions?: { added: string[]; removed: string[] };
        limits?: Record<string, { from: number | null; to: number | null }>;
        input_schema?: { changed: boolean; from?: JsonSchema; to?: JsonSchema };
        autonomy?: { from: Autonomy; to: Autonomy };
        language?: { from: Language; to: Language };
    };
}

export interface ConsoleEntry {
    level: 'log' | 'info' | 'warn' | 'error' | 'debug';
    text: string;
}

export interface RunError {
    /** the core's code (USER_ERROR, HOST_FUNCTION_ERROR, TIMEOUT, ABORTED, DENIED, ...) */
    code: string;
    name: string;
    message: string;
    stack?: string | null;
}

export interface RunStats {
    wall_ms?: number;
    cpu_ms?: number;
    peak_memory_bytes?: number;
    host_calls?: number;
    jail?: string;
    [more: string]: unknown;
}

export interface HostCall {
    call: number;
    function: string;
    /** the guest's arguments, decoded */
    args: unknown[];
    outcome: 'returned' | 'threw' | 'interrupted' | 'unfinished';
    duration_ms: number;
    message: string | null;
}

/** A run: POST /v1/runs, GET /v1/runs/{id}. `value` is decoded from the boundary format. */
export interface Run<T = unknown> {
    id: string;
    status: RunStatus;
    /** null for an ad-hoc run */
    template: string | null;
    version: number | null;
    department: string;
    principal: string;
    input: Record<string, unknown>;
    created: string;
    updated: string;
    /** the value the run returned once completed, else null */
    value: T | null;
    error: RunError | null;
    console: ConsoleEntry[];
    stats: RunStats;
    host_calls: HostCall[];
    /** ids (apr_…) of every approval the run opened */
    approvals: string[];
}

export interface Approval {
    id: string;
    /** in_doubt: a call a dead execution sent whose answer was never recorded */
    kind: 'run' | 'host_call' | 'in_doubt';
    status: ApprovalStatus;
    run: string;
    template: string | null;
    version: number | null;
    department: string;
    /** "connector.fn" for kinds host_call and in_doubt, else null */
    function: string | null;
    /** the call's exact arguments, decoded; null for kind run */
    args: unknown[] | null;
    requested_by: string;
    created: string;
    decided_by: string | null;
    decided: string | null;
    comment: string | null;
    /** in_doubt only: the call's connector */
    connector?: string;
    /** in_doubt only: when the call was marked sent (RFC 3339) */
    sent?: string;
    /** in_doubt only: the key it was sent under (and is sent again under, when approved) */
    idempotency_key?: string;
    /** in_doubt only: the call's number in the run */
    call?: number;
    /** in_doubt only: the value a person answered (status answered), decoded; null before */
    result?: unknown;
}

/** A record of the audit log, exactly as exported (docs/audit.md). */
export interface AuditRecord {
    seq: number;
    time: string;
    actor: string;
    action: string;
    subject: string;
    department: string | null;
    details: Record<string, unknown>;
    prev: string;
    hash: string;
}

export interface AuditPage {
    records: AuditRecord[];
    /** the last seq returned: pass it as `after` for the next page */
    next: number;
}

export type AuditVerify =
    | { ok: true; records: number; head: string }
    | { ok: false; first_bad_seq: number; reason: string };

export interface Checkpoint {
    seq: number;
    hash: string;
    time: string;
    public_key: string;
    signature: string;
}
