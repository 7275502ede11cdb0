/*
 * @airlock/openai-agents - airlockd as a sandbox for the OpenAI Agents SDK
 * (docs/openai-agents.md): AirlockSandboxClient and its sessions (sandbox.ts), the code tool
 * and its capability (code.ts), and the workspace archive format (tar.ts).
 */
export { AirlockRunError, AirlockSandboxClient, AirlockSandboxSession } from './sandbox.js';
export type {
    AirlockMountEntry,
    AirlockSandboxClientOptions,
    AirlockSandboxSessionState,
    AirlockWorkspaceLimits,
    AirlockWorkspaceSource,
} from './sandbox.js';
export { airlockCode, airlockCodeTool } from './code.js';
export type { AirlockCodeToolOptions } from './code.js';
export { AirlockHttpError } from './http.js';
export type { AirlockConnection, RunDoc } from './http.js';
export { TarError, readTar, writeTar } from './tar.js';
export type { TarEntry, TarLimits } from './tar.js';
