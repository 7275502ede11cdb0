/*
 * tar.ts - the workspace archives a session persists and hydrates, and the snapshots it sends
 * to and reads from airlockd: POSIX ustar, with a pax header for a name longer than ustar holds.
 *
 * Only what a workspace holds crosses: regular files and directories, names relative to the
 * workspace's root. An archive from outside (hydrateWorkspace's data, a run's workspace.tar) is
 * untrusted: an absolute name, a `..` segment, a link, a device, a size past the end or past the
 * limits is a TarError naming the member, never a file written somewhere else.
 */

/** A member of a workspace archive: a directory has no data. */
export interface TarEntry {
    /** relative to the workspace's root, '/'-separated, no trailing '/' */
    path: string;
    type: 'file' | 'dir';
    data?: Uint8Array;
}

export interface TarLimits {
    /** bytes of the whole archive */
    maxInputBytes?: number | null;
    /** bytes of every file together */
    maxExtractedBytes?: number | null;
    maxMembers?: number | null;
}

export class TarError extends Error {
    constructor(message: string) {
        super(message);
        this.name = 'TarError';
    }
}

const BLOCK = 512;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

/**
 * A workspace path made canonical: '/'-separated segments below the root, none empty, '.' or
 * '..'. Throws a TarError (naming `what`) for anything that would leave the root.
 */
export function cleanPath(path: string, what = 'path'): string {
    const segs = path.replace(/\/+$/, '').split('/');
    if (path.startsWith('/') || segs.some((s) => s === '..')) {
        throw new TarError(`${what} ${JSON.stringify(path)} leaves the workspace`);
    }
    const kept = segs.filter((s) => s !== '' && s !== '.');
    if (kept.length === 0 || kept.some((s) => s.includes('\0'))) {
        throw new TarError(`${what} ${JSON.stringify(path)} names no file`);
    }
    return kept.join('/');
}

function octal(field: Uint8Array, what: string): number {
    const s = String.fromCharCode(...field).replace(/[\0 ]+$/, '').replace(/^[ ]+/, '');
    if (s === '') {
        return 0;
    }
    if (!/^[0-7]+$/.test(s)) {
        throw new TarError(`${what}: not an octal number`);
    }
    return parseInt(s, 8);
}

function text(field: Uint8Array): string {
    const end = field.indexOf(0);
    return dec.decode(end < 0 ? field : field.subarray(0, end));
}

/* The records of a pax extended header: "LEN key=value\n" each. */
function paxRecords(data: Uint8Array, member: number): Map<string, string> {
    const out = new Map<string, string>();
    let at = 0;
    while (at < data.length) {
        const sp = data.indexOf(0x20, at);
        const len = sp < 0 ? NaN : Number(String.fromCharCode(...data.subarray(at, sp)));
        if (!Number.isInteger(len) || len <= 0 || at + len > data.length) {
            throw new TarError(`member ${member}: a malformed pax record`);
        }
        const rec = dec.decode(data.subarray(sp + 1, at + len - 1));
        const eq = rec.indexOf('=');
        if (eq > 0) {
            out.set(rec.slice(0, eq), rec.slice(eq + 1));
        }
        at += len;
    }
    return out;
}

/** The members of an archive, checked as untrusted (see the file's comment). */
export function readTar(data: Uint8Array, limits: TarLimits = {}): TarEntry[] {
    if (limits.maxInputBytes != null && data.length > limits.maxInputBytes) {
        throw new TarError(`the archive has ${data.length} bytes, more than ${limits.maxInputBytes}`);
    }
    const entries: TarEntry[] = [];
    const seen = new Set<string>();
    let total = 0;
    let pax: Map<string, string> | undefined;
    let at = 0;
    for (let member = 1; ; member++) {
        if (at + BLOCK > data.length) {
            /* an archive may end without its two zero blocks, never inside a header */
            if (at === data.length) {
                break;
            }
            throw new TarError(`member ${member}: the archive ends inside its header`);
        }
        const h = data.subarray(at, at + BLOCK);
        if (h.every((b) => b === 0)) {
            break;
        }
        let sum = 0;
        for (let i = 0; i < BLOCK; i++) {
            sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
        }
        if (sum !== octal(h.subarray(148, 156), `member ${member} checksum`)) {
            throw new TarError(`member ${member}: bad header checksum`);
        }
        const size = octal(h.subarray(124, 136), `member ${member} size`);
        const flag = String.fromCharCode(h[156]!);
        const body = at + BLOCK;
        if (body + size > data.length) {
            throw new TarError(`member ${member}: its ${size} bytes run past the archive's end`);
        }
        at = body + Math.ceil(size / BLOCK) * BLOCK;
        if (flag === 'x') {
            pax = paxRecords(data.subarray(body, body + size), member);
            continue;
        }
        if (flag === 'g') {
            continue;
        }
        const prefix = text(h.subarray(345, 500));
        const name = pax?.get('path') ?? (prefix ? prefix + '/' : '') + text(h.subarray(0, 100));
        pax = undefined;
        if (name === '.' || name === './') {
            continue;
        }
        const path = cleanPath(name, `member ${member}`);
        if (flag !== '0' && flag !== '\0' && flag !== '5') {
            throw new TarError(`member ${member} (${path}): only files and directories, not type ${JSON.stringify(flag)}`);
        }
        if (seen.has(path)) {
            throw new TarError(`member ${member} (${path}): a second member with that name`);
        }
        seen.add(path);
        if (limits.maxMembers != null && seen.size > limits.maxMembers) {
            throw new TarError(`more than ${limits.maxMembers} members`);
        }
        if (flag === '5') {
            entries.push({ path, type: 'dir' });
            continue;
        }
        total += size;
        if (limits.maxExtractedBytes != null && total > limits.maxExtractedBytes) {
            throw new TarError(`the files hold more than ${limits.maxExtractedBytes} bytes`);
        }
        entries.push({ path, type: 'file', data: data.slice(body, body + size) });
    }
    return entries;
}

function header(name: string, type: '0' | '5' | 'x', size: number): Uint8Array {
    const h = new Uint8Array(BLOCK);
    const put = (s: string, off: number, len: number) => {
        const b = enc.encode(s);
        h.set(b.subarray(0, len), off);
    };
    const num = (n: number, off: number, len: number) =>
        put(n.toString(8).padStart(len - 1, '0') + '\0', off, len);
    put(name, 0, 100);
    num(type === '5' ? 0o755 : 0o644, 100, 8);
    num(0, 108, 8);
    num(0, 116, 8);
    num(size, 124, 12);
    num(0, 136, 12);
    h.fill(0x20, 148, 156);
    put(type, 156, 1);
    put('ustar\0', 257, 6);
    put('00', 263, 2);
    let sum = 0;
    for (const b of h) {
        sum += b;
    }
    put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
    return h;
}

function padded(data: Uint8Array): Uint8Array[] {
    const rest = data.length % BLOCK;
    return rest === 0 ? [data] : [data, new Uint8Array(BLOCK - rest)];
}

/** An archive of entries, in their order: a directory's member before those below it. */
export function writeTar(entries: readonly TarEntry[]): Uint8Array {
    const parts: Uint8Array[] = [];
    for (const e of entries) {
        const path = cleanPath(e.path);
        const name = e.type === 'dir' ? path + '/' : path;
        const data = e.type === 'file' ? e.data ?? new Uint8Array() : new Uint8Array();
        if (enc.encode(name).length > 100) {
            /* "LEN path=NAME\n", where LEN counts its own digits */
            const rec = ` path=${path}\n`;
            const n = enc.encode(rec).length;
            let len = n + String(n).length;
            len = n + String(len).length;
            const body = enc.encode(len + rec);
            parts.push(header('PaxHeader', 'x', body.length), ...padded(body));
        }
        /* a long name's header keeps its first 100 bytes; readers take the pax path */
        parts.push(header(name, e.type === 'dir' ? '5' : '0', data.length), ...padded(data));
    }
    parts.push(new Uint8Array(2 * BLOCK));
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
        out.set(p, at);
        at += p.length;
    }
    return out;
}
