// airlock_tool.mjs - an OpenAI Agents SDK function tool that runs an approved airlock template.
//
// The model never writes code here: it picks the tool and fills in its arguments, which become
// the run's input. What runs is the template version an approver approved on airlockd, with only
// the connector functions that version names; its input schema is checked again by airlockd,
// sensitive calls wait for a person, and every run is in the audit log. The tool answers the
// model with the run's value, or with why there is none (refused, failed, waiting for a person).
import { AirlockError } from '@airlock/client';
import { tool } from '@openai/agents';

/**
 * A function tool running `template` (its newest approved version, or `version`) as the
 * principal of `client` (an agent of the template's department). `parameters` is a zod object
 * describing the input for the model; airlockd validates it against the version's own schema.
 * The name defaults to the template's, other characters than letters, digits and _ made _.
 */
export function airlockTool({ client, template, version, name, description, parameters }) {
    return tool({
        name: name ?? template.replace(/[^A-Za-z0-9_]/g, '_'),
        description,
        parameters,
        async execute(input, _context, details) {
            const run = await client.runs.start({ template, version, input },
                { signal: details?.signal });
            return answer(run);
        },
        // a refusal of airlockd reaches the model with its code, so it can correct the input
        errorFunction(_context, error) {
            if (error instanceof AirlockError) {
                return `airlock refused the run: ${error.code}: ${error.message}`;
            }
            return `the tool failed: ${error instanceof Error ? error.message : String(error)}`;
        },
    });
}

// What the model is told of a run: JSON data only.
function answer(run) {
    const out = { status: run.status, run: run.id };
    if (run.status === 'completed') {
        out.value = run.value;
    } else if (run.status === 'awaiting_approval') {
        out.approvals = run.approvals;
        out.message = 'a person must approve this run before it goes on; nothing was done twice';
    } else {
        out.error = `${run.error?.code}: ${run.error?.message}`;
    }
    if (run.console.length > 0) {
        out.console = run.console.map((c) => c.text);
    }
    return out;
}
