// agent.mjs - a shop assistant on the AI SDK's code mode, with a refund a person must approve.
//
// The model sees one tool, `code_mode`, and answers with a program that calls the shop's tools
// (`tools.getOrder`, `tools.listOrders`, `tools.refundOrder`); @ai-sdk/code-mode runs it in a
// QuickJS sandbox through the `run` package, where each tool is a host function. `refundOrder`
// needs approval: its call interrupts the program, the conversation stops with an approval
// request, and once a person answers, the program resumes where it stopped, without calling
// the tools it already called again. Nothing here names the sandbox: replacing `run` with
// another implementation of its API changes no line of this file.
import {
    experimental_codeModeTool as codeModeTool,
    experimental_continueCodeModeApproval as continueCodeModeApproval,
    experimental_getCodeModeApprovalResponse as getCodeModeApprovalResponse,
    experimental_getCodeModeInterrupt as getCodeModeInterrupt,
    experimental_isCodeModeApprovalInterrupt as isCodeModeApprovalInterrupt,
    experimental_toCodeModeApprovalMessages as toCodeModeApprovalMessages,
    CodeModeToolApprovalDeniedError,
} from '@ai-sdk/code-mode';
import { generateText, isStepCount, tool } from 'ai';
import { z } from 'zod';

const order = z.object({
    id: z.string(),
    customer: z.string(),
    amount: z.number().describe('EUR'),
    status: z.enum(['paid', 'pending', 'refunded']),
});

/**
 * The shop's tools over `shop`, the application's own data access: `getOrder(id)`,
 * `listOrders(status)` and `refund(id, amount)`, each returning plain data.
 */
export function shopTools(shop) {
    return {
        getOrder: tool({
            description: 'One order by its id.',
            inputSchema: z.object({ id: z.string() }),
            outputSchema: order,
            execute: async ({ id }) => await shop.getOrder(id),
        }),
        listOrders: tool({
            description: 'The orders with a status.',
            inputSchema: z.object({ status: z.enum(['paid', 'pending', 'refunded']) }),
            outputSchema: z.array(order),
            execute: async ({ status }) => await shop.listOrders(status),
        }),
        refundOrder: tool({
            description: 'Refund an amount of an order. A person approves every refund.',
            inputSchema: z.object({ id: z.string(), amount: z.number().positive() }),
            outputSchema: z.object({ id: z.string(), refunded: z.number() }),
            needsApproval: true,
            execute: async ({ id, amount }) => await shop.refund(id, amount),
        }),
    };
}

/**
 * An agent answering questions about `shop` with `model`. `signingKey` signs the code-mode
 * continuations kept in the conversation: give the same key to every process that may resume
 * one (without it, a random key of this process is used).
 *
 * `ask(prompt)` and `resume(messages, replies)` answer a turn:
 *   { messages, text }                       the model's answer; messages is the conversation
 *   { messages, approvalRequest }            a tool call waits for a person: approvalRequest
 *                                            holds the AI SDK's assistant message with the
 *                                            nested tool call and its tool-approval-request
 * `resume` takes the conversation and the person's reply, a tool message with a
 * tool-approval-response part, as the AI SDK's own tool approvals do.
 */
export function createShopAgent({ model, shop, signingKey }) {
    const tools = shopTools(shop);
    const options = {
        approval: { mode: 'interrupt' },
        ...(signingKey === undefined ? {} : { continuationSecurity: { signingKey } }),
    };
    const security = options.continuationSecurity;
    const codeMode = codeModeTool(options);

    async function step(messages) {
        const result = await generateText({
            model,
            system: 'You help the staff of a shop. Use code_mode to look at and refund orders.',
            messages,
            tools: { code_mode: codeMode, ...tools },
            // the shop's tools are reachable only from programs the model writes
            experimental_toolCallers: {
                getOrder: ['code_mode'],
                listOrders: ['code_mode'],
                refundOrder: ['code_mode'],
            },
            // a program waiting for a person ends the turn: the model never sees the interrupt
            stopWhen: [isStepCount(8),
                ({ steps }) => getCodeModeInterrupt(steps.at(-1), security) !== undefined],
        });
        const history = [...messages, ...result.response.messages];
        const interrupt = getCodeModeInterrupt(result, security);
        if (interrupt === undefined) {
            return { messages: history, text: result.text };
        }
        if (!isCodeModeApprovalInterrupt(interrupt, security)) {
            throw new Error(`code mode stopped for ${interrupt.payload.kind}, not for an approval`);
        }
        return { messages: history, approvalRequest: toCodeModeApprovalMessages(interrupt) };
    }

    return {
        ask: (prompt) => step([{ role: 'user', content: prompt }]),

        async resume(messages, replies) {
            const last = messages.at(-1);
            const interrupt = last?.role === 'tool' ?
                getCodeModeInterrupt({ content: last.content }, security) : undefined;
            if (interrupt === undefined) {
                throw new Error('the conversation has no program waiting for approval');
            }
            const approvalResponse = getCodeModeApprovalResponse(replies, interrupt);
            if (approvalResponse === undefined) {
                throw new Error(`no reply to approval ${interrupt.interruptId}`);
            }
            let output;
            try {
                const value = await continueCodeModeApproval({ interrupt, approvalResponse,
                    tools, options });
                output = { type: 'json', value };
            } catch (error) {
                // a denied call ends the program; the model is told and answers the person
                if (!(error instanceof CodeModeToolApprovalDeniedError)) {
                    throw error;
                }
                output = { type: 'execution-denied', reason: error.message };
            }
            // the program's outcome (or its next interrupt) takes the place of the interrupt
            // in code_mode's tool result, so the model goes on from what the program did
            const content = last.content.map((part) =>
                part.type === 'tool-result' && part.toolCallId === interrupt.outerToolCallId ?
                    { ...part, output } : part);
            const history = [...messages.slice(0, -1), { role: 'tool', content }];
            const next = output.type === 'json' ? getCodeModeInterrupt(output.value, security) :
                undefined;
            if (next !== undefined) {
                return { messages: history, approvalRequest: toCodeModeApprovalMessages(next) };
            }
            return step(history);
        },
    };
}
