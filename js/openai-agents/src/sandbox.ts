/*
 * sandbox.ts - AirlockSandboxClient and its sessions: the OpenAI Agents SDK's sandbox client and
 * session (@openai/agents-core/sandbox) for the Filesystem capability, over an airlockd
 * workspace (docs/openai-agents.md).
 *
 * A session's workspace lives in airlockd, named by its source: a snapshot uploaded by the
 * session ({"from_snapshot": "snap_…"}), or the workspace a run of the session left
 * ({"from_run": "run_…"}). create() uploads the manifest's files as the first snapshot. Every
 * write (the apply_patch editor, the code tool) is an ad-hoc run in the session's department
 * that starts from that source and uses the guest's `workspace` API: airlockd checks it against
 * the manifest's outputs and limits, journals and audits it, exactly as for any run; a run that
 * completed becomes the new source, a failed one changes nothing. Reads come from the source's
 * archive (GET /v1/runs/{id}/workspace.tar, fetched once per source), which is what a run would
 * see, so no run is spent on them - except below a mount entry, whose files are not in an
 * archive and are read by a run. The session state the SDK persists in a RunState is the
 * source alone: no file, no key; the workspace is airlockd's.
 *
 * Operations of one session are queued one after another (the model may call tools in
 * parallel), so each starts from the source the one before left.
 */
import { applyDiff } from '@openai/agents-core';
import type { ApplyPatchResult, Editor } from '@openai/agents-core';
import {
    Manifest,
    cloneManifest,
    normalizeSandboxClientCreateArgs,
} from '@openai/agents-core/sandbox';
import type {
    Entry,
    ListDirectoryArgs,
    ManifestInput,
    ReadFileArgs,
    SandboxClient,
    SandboxClientCreateArgs,
    SandboxClientOptions,
    SandboxDirectoryEntry,
    SandboxSession,
    SandboxSessionState,
    ViewImageArgs,
    WorkspaceArchiveData,
} from '@openai/agents-core/sandbox';
import type { ToolOutputImage } from '@openai/agents-core';

import { AirlockHttpError, Http } from './http.js';
import type { AirlockConnection, RunDoc } from './http.js';
import { TarError, cleanPath, readTar, writeTar } from './tar.js';
import type { TarEntry, TarLimits } from './tar.js';

/** A manifest entry naming a mount an admin registered in airlockd (POST /v1/mounts). */
export interface AirlockMountEntry {
    type: 'local_dir' | 's3_mount';
    mount: string;
    prefix?: string;
    /** an s3_mount entry under an outputs prefix with false is written back to its bucket */
    read_only?: boolean;
}

/** The workspace limits airlockd enforces (the workspace manifest's `limits`, docs/workspace.md). */
export interface AirlockWorkspaceLimits {
    bytes?: number;
    files?: number;
    file_bytes?: number;
}

export interface AirlockSandboxClientOptions extends AirlockConnection {
    /** the department whose ad-hoc runs hold the workspace (its policy must allow_adhoc) */
    department: string;
    /** prefixes below the root a run may write; default ["out/"] */
    outputs?: string[];
    limits?: AirlockWorkspaceLimits;
    /** mount entries by their path below the root: storage stays airlockd's, never a credential here */
    mounts?: Record<string, AirlockMountEntry>;
    /** ms a run may wait for a person (a supervised department) before it fails; default 600000 */
    waitMs?: number;
}

/** Where the workspace is: a snapshot the session uploaded, or the end of one of its runs. */
export type AirlockWorkspaceSource = { from_snapshot: string } | { from_run: string };

export interface AirlockSandboxSessionState extends SandboxSessionState {
    workspace: AirlockWorkspaceSource;
}

/** A run of the session that did not complete: its status and airlockd's error. */
export class AirlockRunError extends Error {
    readonly run: RunDoc;
    constructor(run: RunDoc) {
        const e = run.error;
        super(e ? e.message : `run ${run.id} ended ${run.status}`);
        this.name = 'AirlockRunError';
        this.run = run;
    }
}

const MAX_IMAGE_BYTES = 10 * 1024 * 1024; /* the SDK's limit for view_image */
const SOURCE_ID = /^(snap|run)_[0-9A-Za-z]+$/;

function checkSource(s: unknown): AirlockWorkspaceSource {
    const o = (typeof s === 'object' && s !== null ? s : {}) as Record<string, unknown>;
    if (typeof o.from_snapshot === 'string' && o.from_snapshot.startsWith('snap_') &&
        SOURCE_ID.test(o.from_snapshot) && o.from_run === undefined) {
        return { from_snapshot: o.from_snapshot };
    }
    if (typeof o.from_run === 'string' && o.from_run.startsWith('run_') &&
        SOURCE_ID.test(o.from_run) && o.from_snapshot === undefined) {
        return { from_run: o.from_run };
    }
    throw new TypeError('airlock session state: workspace must be {"from_snapshot":"snap_…"} or {"from_run":"run_…"}');
}

/* The manifest's files and directories as archive members (parents first). */
function manifestMembers(manifest: Manifest, mounts: Record<string, AirlockMountEntry>): TarEntry[] {
    const out: TarEntry[] = [];
    const enc = new TextEncoder();
    const walk = (base: string, entries: Record<string, Entry>) => {
        for (const [name, e] of Object.entries(entries)) {
            const path = cleanPath(base ? `${base}/${name}` : name, 'manifest entry');
            if (e.type === 'file') {
                out.push({ path, type: 'file',
                    data: typeof e.content === 'string' ? enc.encode(e.content) : e.content });
            } else if (e.type === 'dir') {
                out.push({ path, type: 'dir' });
                walk(path, e.children ?? {});
            } else {
                throw new TypeError(`AirlockSandboxClient: manifest entry ${path} is a ${e.type}: ` +
                    'an airlock workspace holds files and directories; storage is an airlockd ' +
                    'mount named in the client\'s mounts option');
            }
        }
    };
    walk('', manifest.entries);
    for (const path of Object.keys(mounts)) {
        if (out.some((m) => m.path === path || m.path.startsWith(path + '/'))) {
            throw new TypeError(`AirlockSandboxClient: manifest entry ${path} is also a mount`);
        }
    }
    return out;
}

/* Bytes of a boundary-format Uint8Array (docs/values.md), as a run's value carries them. */
function boundaryBytes(v: unknown): Uint8Array {
    const o = v as { $type?: string; buffer?: { base64?: string }; byteOffset?: number; length?: number };
    if (o?.$type !== 'Uint8Array' || typeof o.buffer?.base64 !== 'string') {
        throw new AirlockHttpError(0, 'BAD_ANSWER', 'the run did not answer a Uint8Array');
    }
    const all = Uint8Array.from(atob(o.buffer.base64), (c) => c.charCodeAt(0));
    return all.subarray(o.byteOffset ?? 0, (o.byteOffset ?? 0) + (o.length ?? all.length));
}

/* Guest sources of the session's operations: function bodies over `input` and `workspace`. */
const GUEST = {
    read: 'return await workspace.readFile(input.path, null);',
    list: 'const all = await workspace.readdir(input.path, { withFileTypes: true });\n' +
        'return all.map((d) => ({ name: d.name, dir: d.isDirectory() }));',
    write: 'const slash = input.path.lastIndexOf("/");\n' +
        'if (slash > 0) {\n' +
        '    await workspace.mkdir(input.path.slice(0, slash), { recursive: true });\n' +
        '}\n' +
        'await workspace.writeFile(input.path, input.content);\n' +
        'if (input.remove) {\n' +
        '    await workspace.rm(input.remove);\n' +
        '}\n' +
        'return null;',
    remove: 'await workspace.rm(input.path);\nreturn null;',
    touch: 'return null;',
};

export class AirlockSandboxSession implements SandboxSession<AirlockSandboxSessionState> {
    readonly state: AirlockSandboxSessionState;
    readonly #client: AirlockSandboxClient;
    /* the archive of state.workspace, once fetched: path -> member */
    #files: Map<string, TarEntry> | undefined;
    #archive: Uint8Array | undefined;
    #queue: Promise<unknown> = Promise.resolve();
    #limits: TarLimits = {};

    /** @internal sessions come from AirlockSandboxClient.create() and resume() */
    constructor(client: AirlockSandboxClient, state: AirlockSandboxSessionState,
        archive?: Uint8Array) {
        this.#client = client;
        this.state = state;
        if (archive) {
            this.#adopt(archive);
        }
    }

    /* One operation at a time, in the order asked; a failure does not stop the next. */
    #serial<T>(op: () => Promise<T>): Promise<T> {
        const next = this.#queue.then(op, op);
        this.#queue = next.catch(() => undefined);
        return next;
    }

    #adopt(archive: Uint8Array) {
        const files = new Map<string, TarEntry>();
        for (const e of readTar(archive, this.#limits)) {
            files.set(e.path, e);
        }
        this.#archive = archive;
        this.#files = files;
    }

    /** A path the model gave (relative, or absolute under the root) made relative to the root. */
    relative(path: string): string {
        const root = this.state.manifest.root.replace(/\/+$/, '');
        let p = path;
        if (p === root || p === root + '/') {
            return '';
        }
        if (p.startsWith(root + '/')) {
            p = p.slice(root.length + 1);
        } else if (p.startsWith('/')) {
            throw new Error(`EACCES: ${path} is outside the workspace ${root}`);
        }
        if (p === '' || p === '.') {
            return '';
        }
        try {
            return cleanPath(p);
        } catch (e) {
            throw new Error(`EACCES: ${(e as Error).message}`);
        }
    }

    /* The mount entry holding a path, if any. */
    #mountOf(path: string): string | undefined {
        return Object.keys(this.#client.mounts).find((m) => path === m || path.startsWith(m + '/'));
    }

    /** The body of a run in this session's workspace (POST /v1/runs). */
    runBody(source: string, input: Record<string, unknown>, functions: string[] = []) {
        const c = this.#client;
        return {
            source,
            department: c.department,
            language: 'js',
            functions,
            input,
            workspace: {
                version: 1,
                root: this.state.manifest.root,
                entries: c.mounts,
                outputs: c.outputs,
                ...(c.limits ? { limits: c.limits } : {}),
                ...this.state.workspace,
            },
        };
    }

    /*
     * A run in the workspace; a completed run that may have written becomes the source.
     * Throws AirlockRunError for a run that did not complete (its error says why: "EROFS: …").
     */
    async #run(source: string, input: Record<string, unknown>, writes: boolean,
        functions: string[] = []): Promise<RunDoc> {
        const run = await this.#client.http.run(this.runBody(source, input, functions),
            this.#client.waitMs);
        if (run.status === 'completed' && writes) {
            this.state.workspace = { from_run: run.id };
            this.#files = undefined;
            this.#archive = undefined;
        }
        return run;
    }

    async #ok(source: string, input: Record<string, unknown>, writes: boolean): Promise<unknown> {
        const run = await this.#run(source, input, writes);
        if (run.status !== 'completed') {
            throw new AirlockRunError(run);
        }
        return run.value;
    }

    /* The source's files: fetched from airlockd once per source. */
    async #tree(): Promise<Map<string, TarEntry>> {
        if (this.#files) {
            return this.#files;
        }
        if ('from_snapshot' in this.state.workspace) {
            /* airlockd gives a snapshot's archive through a run that starts from it */
            await this.#ok(GUEST.touch, {}, true);
        }
        const src = this.state.workspace as { from_run: string };
        this.#adopt(await this.#client.http.workspaceTar(src.from_run));
        return this.#files!;
    }

    async #readBytes(path: string): Promise<Uint8Array> {
        if (this.#mountOf(path) !== undefined) {
            return boundaryBytes(await this.#ok(GUEST.read, { path }, false));
        }
        const e = (await this.#tree()).get(path);
        if (!e) {
            throw new Error(`ENOENT: no such file ${path}`);
        }
        if (e.type === 'dir') {
            throw new Error(`EISDIR: ${path} is a directory`);
        }
        return e.data ?? new Uint8Array();
    }

    readFile(args: ReadFileArgs): Promise<Uint8Array> {
        return this.#serial(async () => {
            const data = await this.#readBytes(this.relative(args.path));
            return args.maxBytes !== undefined && data.length > args.maxBytes ?
                data.subarray(0, args.maxBytes) : data;
        });
    }

    /** An image file of the workspace for the model (view_image): PNG, JPEG, GIF or WebP. */
    async viewImage(args: ViewImageArgs): Promise<ToolOutputImage> {
        const data = await this.readFile({ path: args.path }).catch((e: Error) => {
            throw new Error(/^ENOENT/.test(e.message) ? `Image file not found: ${args.path}` :
                /^EISDIR/.test(e.message) ? `Image path is not a file: ${args.path}` : e.message);
        });
        if (data.length > MAX_IMAGE_BYTES) {
            throw new Error(`Image file exceeds the 10 MB limit: ${args.path}`);
        }
        const head = (sig: number[], at = 0) => sig.every((b, i) => data[at + i] === b);
        const mediaType = head([0x89, 0x50, 0x4e, 0x47]) ? 'image/png' :
            head([0xff, 0xd8, 0xff]) ? 'image/jpeg' :
            head([0x47, 0x49, 0x46, 0x38]) ? 'image/gif' :
            head([0x52, 0x49, 0x46, 0x46]) && head([0x57, 0x45, 0x42, 0x50], 8) ? 'image/webp' :
            undefined;
        if (!mediaType) {
            throw new Error(`${args.path} is not a supported image file (PNG, JPEG, GIF, WebP)`);
        }
        return { type: 'image', image: { data: new Uint8Array(data), mediaType } };
    }

    listDir(args: ListDirectoryArgs): Promise<SandboxDirectoryEntry[]> {
        return this.#serial(async () => {
            const dir = this.relative(args.path);
            const join = (name: string) => (dir ? `${dir}/${name}` : name);
            if (dir !== '' && this.#mountOf(dir) !== undefined) {
                const names = await this.#ok(GUEST.list, { path: dir }, false) as
                    { name: string; dir: boolean }[];
                return names.map((n) => ({ name: n.name, path: join(n.name),
                    type: n.dir ? 'dir' as const : 'file' as const }));
            }
            const tree = await this.#tree();
            const self = tree.get(dir);
            if (self?.type === 'file') {
                throw new Error(`ENOTDIR: ${dir} is a file`);
            }
            const out = new Map<string, SandboxDirectoryEntry>();
            const below = dir ? dir + '/' : '';
            const add = (path: string, isDir: boolean) => {
                if (!path.startsWith(below) || path === dir) {
                    return;
                }
                const rest = path.slice(below.length);
                const name = rest.split('/')[0]!;
                /* a member deeper down makes its first segment a directory here */
                const type = isDir || rest.includes('/') ? 'dir' : 'file';
                out.set(name, { name, path: join(name), type });
            };
            for (const e of tree.values()) {
                add(e.path, e.type === 'dir');
            }
            for (const m of Object.keys(this.#client.mounts)) {
                add(m, true);
            }
            if (dir !== '' && !self && out.size === 0) {
                throw new Error(`ENOENT: no such directory ${dir}`);
            }
            return [...out.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        });
    }

    /* listDir answers for a directory, throws ENOTDIR for a file and ENOENT for nothing */
    async pathExists(path: string): Promise<boolean> {
        try {
            const p = this.relative(path);
            if (p === '' || this.#mountOf(p) === p) {
                return true;
            }
            await this.listDir({ path: p }).catch(async (e: Error) => {
                if (!/^ENOTDIR/.test(e.message)) {
                    throw e;
                }
            });
            return true;
        } catch {
            return false;
        }
    }

    async directoryExists(path: string): Promise<boolean> {
        try {
            await this.listDir({ path });
            return true;
        } catch {
            return false;
        }
    }

    /** Writes a text file (its directories made) as a run; `remove` is deleted in the same run. */
    writeText(path: string, content: string, remove?: string): Promise<void> {
        return this.#serial(async () => {
            const input: Record<string, unknown> = { path: this.relative(path), content };
            if (remove !== undefined) {
                input.remove = this.relative(remove);
            }
            await this.#ok(GUEST.write, input, true);
        });
    }

    /** Deletes a file as a run. */
    remove(path: string): Promise<void> {
        return this.#serial(async () => {
            await this.#ok(GUEST.remove, { path: this.relative(path) }, true);
        });
    }

    /**
     * Runs JavaScript (a function body: `return` gives the value) in the workspace as a governed
     * ad-hoc run, with the department's connector functions it names. A run that completed
     * becomes the workspace; the run is returned whatever its end.
     */
    runCode(source: string, options: { input?: Record<string, unknown>; functions?: string[] } = {}):
        Promise<RunDoc> {
        return this.#serial(() => this.#run(source, options.input ?? {}, true, options.functions));
    }

    /** The editor behind apply_patch: V4A diffs applied here, the result written by a run. */
    createEditor(): Editor {
        const done = (output: string): ApplyPatchResult => ({ status: 'completed', output });
        const text = async (path: string) => new TextDecoder().decode(
            await this.readFile({ path }));
        return {
            createFile: async (op) => {
                await this.writeText(op.path, applyDiff('', op.diff, 'create'));
                return done(`Created ${op.path}`);
            },
            updateFile: async (op) => {
                const next = applyDiff(await text(op.path), op.diff);
                if (op.moveTo && op.moveTo !== op.path) {
                    await this.writeText(op.moveTo, next, op.path);
                    return done(`Updated ${op.path} and moved it to ${op.moveTo}`);
                }
                await this.writeText(op.path, next);
                return done(`Updated ${op.path}`);
            },
            deleteFile: async (op) => {
                await this.remove(op.path);
                return done(`Deleted ${op.path}`);
            },
        };
    }

    /** The workspace (mounts excluded) as a tar, names relative to the root. */
    persistWorkspace(): Promise<Uint8Array> {
        return this.#serial(async () => {
            await this.#tree();
            return this.#archive!;
        });
    }

    /**
     * Replaces the workspace by an archive (a tar; a string is its base64): its members are
     * checked here, uploaded as a snapshot, and checked by airlockd again.
     */
    hydrateWorkspace(data: WorkspaceArchiveData, options: { archiveLimits?: TarLimits | null } = {}):
        Promise<void> {
        return this.#serial(async () => {
            const bytes = typeof data === 'string' ?
                Uint8Array.from(atob(data), (c) => c.charCodeAt(0)) :
                data instanceof Uint8Array ? data : new Uint8Array(data);
            const limits = options.archiveLimits === undefined ? this.#limits : options.archiveLimits ?? {};
            for (const e of readTar(bytes, limits)) {
                const mount = this.#mountOf(e.path);
                if (mount !== undefined) {
                    throw new TarError(`member ${e.path} lies in the mount entry ${mount}`);
                }
            }
            const id = await this.#client.http.upload(bytes, this.#client.department);
            this.state.workspace = { from_snapshot: id };
            this.#adopt(bytes);
        });
    }

    setArchiveLimits(limits?: TarLimits | null): void {
        this.#limits = limits ?? {};
    }
}

/**
 * The OpenAI Agents SDK's sandbox client over airlockd: `new AirlockSandboxClient({url, key,
 * department})`, given to a run as `sandbox: {client}`.
 */
export class AirlockSandboxClient implements SandboxClient<SandboxClientOptions, AirlockSandboxSessionState> {
    readonly backendId = 'airlock';
    readonly department: string;
    readonly outputs: string[];
    readonly limits: AirlockWorkspaceLimits | undefined;
    readonly mounts: Record<string, AirlockMountEntry>;
    readonly waitMs: number;
    /** @internal */
    readonly http: Http;

    constructor(options: AirlockSandboxClientOptions) {
        this.http = new Http(options);
        if (typeof options.department !== 'string' || options.department === '') {
            throw new TypeError('AirlockSandboxClient: department must name a department');
        }
        this.department = options.department;
        this.outputs = options.outputs ?? ['out/'];
        this.limits = options.limits;
        this.mounts = {};
        for (const [path, m] of Object.entries(options.mounts ?? {})) {
            if (m.type !== 'local_dir' && m.type !== 's3_mount') {
                throw new TypeError(`AirlockSandboxClient: mount ${path} must be a local_dir or an s3_mount`);
            }
            this.mounts[cleanPath(path, 'mount')] = { ...m };
        }
        this.waitMs = options.waitMs ?? 600000;
    }

    /**
     * A session whose workspace starts as the manifest's files and directories, uploaded as a
     * snapshot (its other entry types are refused: storage is an airlockd mount, see mounts).
     */
    async create(args?: SandboxClientCreateArgs | Manifest, options?: SandboxClientOptions):
        Promise<AirlockSandboxSession> {
        const { manifest } = normalizeSandboxClientCreateArgs(args, options);
        const archive = writeTar(manifestMembers(manifest, this.mounts));
        const id = await this.http.upload(archive, this.department);
        return new AirlockSandboxSession(this, { manifest, workspace: { from_snapshot: id } },
            archive);
    }

    async resume(state: AirlockSandboxSessionState): Promise<AirlockSandboxSession> {
        return new AirlockSandboxSession(this, { ...state, workspace: checkSource(state.workspace) });
    }

    /** What a RunState keeps of a session: where its workspace is (no file, no key). */
    async serializeSessionState(state: AirlockSandboxSessionState): Promise<Record<string, unknown>> {
        return { workspace: checkSource(state.workspace) };
    }

    async deserializeSessionState(state: Record<string, unknown>): Promise<AirlockSandboxSessionState> {
        return {
            manifest: cloneManifest(state.manifest as ManifestInput),
            workspace: checkSource(state.workspace),
        };
    }
}
