// agent_world.mjs - the SandboxAgent of agent.test.mjs, built the same way in the test and in
// the process that resumes its run (agent_resume.mjs): a manifest with an input CSV and an
// output directory, the Filesystem capability (apply_patch), airlockCode() (run_javascript) and
// a `publish` tool a person approves - the approval is where the run stops and is serialized.
import { tool } from '@openai/agents';
import { SandboxAgent, filesystem } from '@openai/agents/sandbox';

import { pkg } from './servers.mjs';

export const ORDERS = 'id,amount\no-1,100\no-2,50\no-3,25\n';

export function manifest() {
    return {
        entries: {
            in: { type: 'dir', children: { 'orders.csv': { type: 'file', content: ORDERS } } },
            out: { type: 'dir' },
        },
    };
}

export function makeAgent(model) {
    const publish = tool({
        name: 'publish',
        description: 'Publishes the report (a person approves).',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'],
            additionalProperties: false },
        strict: true,
        needsApproval: true,
        execute: async ({ path }) => `published ${path}`,
    });
    return new SandboxAgent({
        name: 'analyst',
        instructions: 'Summarize the orders into out/report.md.',
        model,
        defaultManifest: manifest(),
        capabilities: [filesystem(), pkg.airlockCode()],
        tools: [publish],
    });
}

export function client(server) {
    return new pkg.AirlockSandboxClient({ url: server.url, key: server.key,
        department: server.department });
}
