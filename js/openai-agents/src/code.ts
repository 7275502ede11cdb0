/*
 * code.ts - airlockCodeTool(session): a function tool that runs the model's JavaScript in the
 * session's workspace as a governed ad-hoc run (the guest has the `workspace` API and the
 * department's connector functions it is given, nothing else), and airlockCode(), the
 * capability that gives a SandboxAgent that tool over whichever session the run binds (created,
 * or resumed from a RunState in another process).
 *
 * A run that completed becomes the session's workspace; a failed one leaves it as it was. The
 * model hears the run's id, status, value, console and error as JSON: a failure is an answer to
 * reason about, not an exception of the agent loop.
 */
import { UserError, tool } from '@openai/agents-core';
import type { FunctionTool } from '@openai/agents-core';
import { Capability } from '@openai/agents-core/sandbox';
import type { Tool } from '@openai/agents-core';

import { AirlockSandboxSession } from './sandbox.js';

export interface AirlockCodeToolOptions {
    /** default "run_javascript" */
    name?: string;
    description?: string;
    /** "connector.fn" names the code may call (the department's connectors); default none */
    functions?: string[];
    /** a person approves each call in the agent loop before it runs (the SDK's approvals) */
    needsApproval?: boolean;
}

const DESCRIPTION = 'Runs JavaScript in the sandbox workspace and answers its value. The code ' +
    'is the body of an async function: `return` gives the value, `await` works. A global ' +
    '`workspace` reads and writes the workspace\'s files: readFile(path) (text; with null, ' +
    'bytes), writeFile(path, data), appendFile, readJson, writeJson, readdir, stat, exists, ' +
    'mkdir(path, {recursive: true}), rm, rename, glob - all promises; paths are relative to the ' +
    'workspace root. Only the workspace\'s output directories are writable. There is no ' +
    'network, no process and no other filesystem.';

export function airlockCodeTool(session: AirlockSandboxSession, options: AirlockCodeToolOptions = {}):
    FunctionTool {
    if (!(session instanceof AirlockSandboxSession)) {
        throw new UserError('airlockCodeTool needs a session of an AirlockSandboxClient');
    }
    return tool({
        name: options.name ?? 'run_javascript',
        description: options.description ?? DESCRIPTION,
        parameters: {
            type: 'object',
            properties: {
                code: { type: 'string', description: 'the body of an async function' },
            },
            required: ['code'],
            additionalProperties: false,
        },
        strict: true,
        needsApproval: options.needsApproval ?? false,
        execute: async (input) => {
            const { code } = input as { code: string };
            const run = await session.runCode(code, { functions: options.functions ?? [] });
            return JSON.stringify({
                run: run.id,
                status: run.status,
                value: run.value ?? null,
                console: (run.console ?? []).map((c) => c.text),
                error: run.error ?? null,
            });
        },
    }) as FunctionTool;
}

class AirlockCodeCapability extends Capability {
    readonly type = 'airlock_code';
    readonly codeOptions: AirlockCodeToolOptions;

    constructor(options: AirlockCodeToolOptions) {
        super();
        this.codeOptions = options;
    }

    override tools(): Tool<any>[] {
        if (!(this._session instanceof AirlockSandboxSession)) {
            throw new UserError('airlockCode() works in a session of an AirlockSandboxClient');
        }
        return [airlockCodeTool(this._session, this.codeOptions)];
    }
}

/** The capability giving a SandboxAgent airlockCodeTool over its bound session. */
export function airlockCode(options: AirlockCodeToolOptions = {}): Capability {
    return new AirlockCodeCapability(options);
}
