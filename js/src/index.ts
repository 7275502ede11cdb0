/*
 * @airlock/client - a typed client for airlockd (client.ts), the boundary-value codec
 * (values.ts) and createExecutor, the Executor of code-mode agents backed by airlock runs
 * (executor.ts). No runtime dependencies: Node 18 or later (global fetch). docs/js.md.
 */
export { Client } from './client.js';
export type {
    AdhocRunRequest,
    ApprovalQuery,
    AuditQuery,
    ClientOptions,
    RequestOptions,
    RunListQuery,
    RunRequest,
    TemplateRunRequest,
    WaitOptions,
} from './client.js';
export { AirlockError } from './errors.js';
export type { AirlockErrorInit, ClientErrorCode, ErrorCode, ServerErrorCode } from './errors.js';
export { createExecutor, functionNames, toBody } from './executor.js';
export type {
    AirlockExecuteResult,
    AirlockExecutor,
    ExecuteResult,
    ExecutorOptions,
    ProviderFunction,
    Providers,
    ResolvedProvider,
} from './executor.js';
export { BoundaryError, decode, encode } from './values.js';
export type * from './types.js';
