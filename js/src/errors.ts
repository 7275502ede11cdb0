/*
 * errors.ts - the one error class of the package.
 *
 * Every failure of a request is an AirlockError: an error answer of airlockd carries the server's
 * status, code (docs/server.md "Errors": INPUT_INVALID, NOT_FOUND, ...), message and request id;
 * failures that never got an answer have status 0 and a code of this package (TIMEOUT, ABORTED,
 * NETWORK_ERROR, BAD_ANSWER), so a caller branches on `code` alone.
 */

/** The error codes airlockd answers with (src/server/openapi.json, ErrorCode). */
export type ServerErrorCode =
    | 'INVALID_REQUEST'
    | 'UNAUTHENTICATED'
    | 'FORBIDDEN'
    | 'ADHOC_DISABLED'
    | 'NOT_FOUND'
    | 'METHOD_NOT_ALLOWED'
    | 'CONFLICT'
    | 'VERSION_NOT_APPROVED'
    | 'TEMPLATE_REVOKED'
    | 'PAYLOAD_TOO_LARGE'
    | 'INPUT_INVALID'
    | 'RATE_LIMITED'
    | 'INTERNAL';

/**
 * Codes of failures without an answer from airlockd: the client's timeout passed (TIMEOUT), the
 * caller's AbortSignal fired (ABORTED), no connection (NETWORK_ERROR), an answer that is not
 * what the API documents (BAD_ANSWER), or a wait for a run that outlasted its limit
 * (WAIT_TIMEOUT).
 */
export type ClientErrorCode = 'TIMEOUT' | 'ABORTED' | 'NETWORK_ERROR' | 'BAD_ANSWER' | 'WAIT_TIMEOUT';

/** Either kind; `string & {}` keeps codes a newer airlockd may add assignable. */
export type ErrorCode = ServerErrorCode | ClientErrorCode | (string & {});

export interface AirlockErrorInit {
    status: number;
    code: ErrorCode;
    message: string;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    body?: unknown;
    cause?: unknown;
}

export class AirlockError extends Error {
    /** The HTTP status of airlockd's answer; 0 when there was none. */
    readonly status: number;
    /** The server's error code, or one of ClientErrorCode. */
    readonly code: ErrorCode;
    /** `req_…`, the id of the request in airlockd's log and X-Request-Id. */
    readonly requestId: string | undefined;
    /** Seconds to wait before retrying, from Retry-After (429 RATE_LIMITED). */
    readonly retryAfter: number | undefined;
    /** The parsed error answer as airlockd sent it. */
    readonly body: unknown;

    constructor(init: AirlockErrorInit) {
        super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = 'AirlockError';
        this.status = init.status;
        this.code = init.code;
        this.requestId = init.requestId;
        this.retryAfter = init.retryAfter;
        this.body = init.body;
    }
}
