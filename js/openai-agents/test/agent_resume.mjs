// agent_resume.mjs - the second process of agent.test.mjs: the run resumed from the RunState
// string at OA_STATE alone (a new AirlockSandboxClient, the same agent definition, a new
// ScriptedModel for the turns after the approval); what it finished with goes to OA_OUT as JSON.
import fs from 'node:fs';

import { RunState, run, setTracingDisabled } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents-core/testing';

import { client, makeAgent } from './agent_world.mjs';

setTracingDisabled(true);
const WRITE = 'const notes = await workspace.readFile("out/notes.md");\n' +
    'await workspace.writeFile("out/report.md", "# Orders\\n\\n3 orders, 175 in all.\\n\\n" + notes);\n' +
    'return "written";';
const model = new ScriptedModel([
    [functionCall('run_javascript', { code: WRITE }, { callId: 'c-write' })],
    [assistantMessage('The report is in out/report.md and published.')],
]);
const agent = makeAgent(model);
const sandboxClient = client({ url: process.env.OA_URL, key: process.env.OA_KEY,
    department: process.env.OA_DEPARTMENT });
let resumedFrom;
const resume = sandboxClient.resume.bind(sandboxClient);
sandboxClient.resume = async (state, options) => {
    resumedFrom ??= { ...state.workspace };
    return await resume(state, options);
};
const state = await RunState.fromString(agent, fs.readFileSync(process.env.OA_STATE, 'utf8'));
for (const item of state.getInterruptions()) {
    state.approve(item);
}
const result = await run(agent, state, { sandbox: { client: sandboxClient } });
const publish = result.newItems.find((i) => i.type === 'tool_call_output_item' &&
    i.rawItem.callId === 'c-publish');
/* the workspace as the run left it, read through a session resumed from the final state */
const final = JSON.parse(result.state.toString()).sandbox.sessionState.providerState;
const session = await sandboxClient.resume({ manifest: agent.defaultManifest,
    workspace: final.workspace });
const text = async (p) => new TextDecoder().decode(await session.readFile({ path: p }));
fs.writeFileSync(process.env.OA_OUT, JSON.stringify({
    finalOutput: result.finalOutput,
    published: publish?.output,
    report: await text('out/report.md'),
    notes: await text('out/notes.md'),
    resumedFrom: resumedFrom,
}));
