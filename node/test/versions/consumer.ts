/*
 * consumer.ts - an application's TypeScript against the installed package's declarations,
 * checked by versions.sh with `tsc --noEmit` (strict, NodeNext) in a project where the tarball
 * was just installed. The @ts-expect-error lines fail the check if the declarations resolve to
 * `any` or stop catching a wrong call.
 */
import {
    createRunner, getHostFunctionContext, isRunInterruptedResult, RunError, RunTimeoutError,
    type HostFunctions, type RunLimits, type RunResult,
} from '@airlock/run';

const limits: RunLimits = { timeoutMs: 5_000, memoryLimitBytes: 32 * 1024 * 1024 };
const hostFunctions: HostFunctions = {
    shop: {
        price: async (item: string) => item.length * 10,
        refund: (orderId: string) => {
            const context = getHostFunctionContext();
            if (!context.resume) {
                context.interrupt({ orderId });
            }
            return context.resume?.resolution;
        },
    },
};
const runner = createRunner<string>({ limits, continuationSecret: 'a secret of 32 bytes or longer!!' });

export async function priceOf(item: string): Promise<number | string> {
    const result: RunResult<number, string> = await runner.run<number>({
        source: `return await shop.price(${JSON.stringify(item)});`,
        hostFunctions,
    });
    if (isRunInterruptedResult(result)) {
        const token: string = result.continuation;
        return token;
    }
    const jailed: boolean = result.stats.jailed;
    return jailed ? result.value : -1;
}

export function codeOf(error: unknown): string | undefined {
    if (error instanceof RunTimeoutError) {
        return 'timeout';
    }
    return RunError.isInstance(error) ? error.code : undefined;
}

// @ts-expect-error: not one of the package's limits
createRunner({ limits: { timeoutSeconds: 5 } });

// @ts-expect-error: source is a string
void runner.run({ source: 42 });
