// consumer.ts - js.types: code that uses @airlock/client as a consumer would, type-checked with
// `tsc --noEmit` against the emitted declarations (build/js/dist). Right usage compiles; each
// wrong use below must be an error, or the unused @ts-expect-error fails the check.
import {
    AirlockError,
    Client,
    createExecutor,
    decode,
    type AirlockExecuteResult,
    type Approval,
    type AuditRecord,
    type Providers,
    type Run,
    type Template,
    type Version,
} from '@airlock/client';

// The Executor shape of @cloudflare/codemode (executor.ts there), declared here as a consumer
// that hands an airlock executor to codemode would see it.
interface CodemodeResolvedProvider {
    name: string;
    fns: Record<string, (...args: unknown[]) => Promise<unknown>>;
    positionalArgs?: boolean;
}
interface CodemodeExecuteResult {
    result: unknown;
    error?: string;
    logs?: string[];
}
interface CodemodeExecutor {
    execute(code: string, providers: CodemodeResolvedProvider[]): Promise<CodemodeExecuteResult>;
    /** @deprecated there too: the flat functions of the namespace codemode */
    execute(code: string, fns: Record<string, (...args: unknown[]) => Promise<unknown>>):
        Promise<CodemodeExecuteResult>;
}

export async function uses(url: string, key: string): Promise<void> {
    const c = new Client({ url, key, timeoutMs: 5000 });
    const c2 = new Client(url, key, { timeoutMs: 0 });
    const me = await c2.me();
    const roles: string[] = me.roles.map((g) => g.role);

    const t: Template = await c.templates.create({ name: 't', department: 'd' });
    const v: Version = await c.templates.createVersion(t.name, {
        source: 'return 1', functions: ['crm.lookup'], limits: { timeout_ms: 100 },
    });
    await c.templates.submit('t', v.version);
    const types: string = await c.templates.types('t');

    const run: Run<{ total: number }> = await c.runs.start<{ total: number }>({
        template: 't', input: { id: 1 },
    }, { signal: AbortSignal.timeout(1000) });
    const total: number | undefined = run.value?.total;
    const adhoc = await c.runs.start({ source: 'return 1', department: 'd', functions: [] });
    const ended = await c.runs.wait(adhoc.id, { waitMs: 100 });
    if (ended.status === 'completed' || ended.status === 'awaiting_approval') {
        const ids: string[] = ended.approvals;
        void ids;
    }
    const pending: Approval[] = await c.approvals.list({ status: 'pending' });
    await c.approvals.approve(pending[0]?.id ?? '', 'ok');
    const records: AuditRecord[] = await c.audit.export();
    const verify = await c.audit.verify();
    const bad: number | undefined = verify.ok ? undefined : verify.first_bad_seq;

    try {
        await c.runs.get('run_x');
    } catch (e) {
        if (e instanceof AirlockError) {
            const status: number = e.status;
            const code: string = e.code;
            const isInput: boolean = e.code === 'INPUT_INVALID';
            void status, code, isInput;
        }
    }

    const executor = createExecutor({ url, key, department: 'd', timeoutMs: 1000 });
    const asCodemode: CodemodeExecutor = executor;
    const r: AirlockExecuteResult = await executor.execute('async () => 1', { crm: ['lookup'] });
    const logs: string[] | undefined = r.logs;
    await asCodemode.execute('return 1', [{ name: 'crm', fns: { lookup: async () => 1 } }]);
    await asCodemode.execute('return 1', { search: async () => 1 });
    const forms: Providers[] = [['crm.lookup'], { crm: ['lookup'] }, { crm: { lookup() {} } },
        { search: async () => 1 }, [{ name: 'crm', fns: { lookup: async () => 1 } }, 'a.b']];
    const value: unknown = decode('{"$type":"bigint","value":"1"}');
    void roles, types, total, records, bad, logs, forms, value;
}

export async function misuses(c: Client): Promise<void> {
    // @ts-expect-error a run names a template or source, not both
    await c.runs.start({ template: 't', source: 'return 1', department: 'd' });
    // @ts-expect-error an ad-hoc run needs its department
    await c.runs.start({ source: 'return 1' });
    // @ts-expect-error a template run takes no functions: the version has them
    await c.runs.start({ template: 't', functions: ['crm.lookup'] });
    // @ts-expect-error no such status
    await c.runs.list({ status: 'done' });
    // @ts-expect-error versions are numbers
    await c.templates.submit('t', '1');
    // @ts-expect-error a version's language is js or ts
    await c.templates.createVersion('t', { source: 'x', language: 'py' });
    // @ts-expect-error url and key are needed
    new Client({ url: 'http://127.0.0.1:1' });
    // @ts-expect-error providers name functions, not numbers
    await createExecutor({ url: '', key: '' }).execute('return 1', { crm: [1] });
    // @ts-expect-error the value is unknown until narrowed
    const n: number = (await c.runs.get('run_x')).value;
    // @ts-expect-error AirlockError's status is read-only
    new AirlockError({ status: 400, code: 'X', message: 'm' }).status = 1;
    void n;
}
