/*
 * values.ts - the boundary-JSON codec (docs/values.md) between guest values and JavaScript
 * values, the counterpart of python/airlock/values.py.
 *
 * A run's value, a host call's arguments and an approval's arguments arrive from airlockd in the
 * boundary format: plain JSON where JSON can carry the value, tagged objects ({"$type": ...})
 * where it cannot. decode() gives back the value the guest had: undefined, NaN, -0, BigInt, Date
 * (also an invalid one), RegExp, Map, Set, ArrayBuffer, typed arrays and DataView over a shared
 * buffer, Error (name, message, cause, errors), sparse arrays with their holes, escaped objects
 * with their own "$type" key, and shared or cyclic references as the same object. encode() is the
 * way back, for a connector written in JavaScript that answers {"result": V}.
 *
 * Decoding never runs code of the document: members are defined (a "__proto__" member is an own
 * property, never a prototype), and a malformed tag, an unknown one or a reference to nothing is
 * a BoundaryError naming where it is.
 */

/** A document that breaks docs/values.md, or a value that cannot cross. */
export class BoundaryError extends TypeError {
    constructor(message: string) {
        super(message);
        this.name = 'BoundaryError';
    }
}

type Step = string | number;
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const TYPED = {
    Int8Array,
    Uint8Array,
    Uint8ClampedArray,
    Int16Array,
    Uint16Array,
    Int32Array,
    Uint32Array,
    Float32Array,
    Float64Array,
    BigInt64Array,
    BigUint64Array,
} as const;
type TypedName = keyof typeof TYPED;
type AnyTyped = InstanceType<(typeof TYPED)[TypedName]>;

const ERRORS: Record<string, ErrorConstructor> = {
    Error,
    EvalError,
    RangeError,
    ReferenceError,
    SyntaxError,
    TypeError,
    URIError,
};

const NUMBERS: Record<string, number> = {
    NaN: NaN,
    Infinity: Infinity,
    '-Infinity': -Infinity,
    '-0': -0,
};

/* Own members only: a name from the document ("constructor", "__proto__") must not find
 * Object.prototype's. */
function own<T>(table: Record<string, T>, key: string): T | undefined {
    return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined;
}

function where(path: readonly Step[]): string {
    return JSON.stringify(path);
}

function isObject(v: unknown): v is { [key: string]: Json } {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function define(obj: object, key: string, value: unknown): void {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

function hidden(obj: object, key: string, value: unknown): void {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: false, configurable: true });
}

function base64ToBuffer(s: string, path: readonly Step[]): ArrayBuffer {
    let bin: string;
    try {
        bin = atob(s);
    } catch {
        throw new BoundaryError('invalid base64 at ' + where(path));
    }
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) {
        out[i] = bin.charCodeAt(i);
    }
    return out.buffer;
}

function bufferToBase64(b: ArrayBuffer, offset = 0, length = b.byteLength): string {
    const bytes = new Uint8Array(b, offset, length);
    let bin = '';
    /* in slices: String.fromCharCode takes its arguments on the stack */
    for (let i = 0; i < bytes.length; i += 0x8000) {
        bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    }
    return btoa(bin);
}

/* Where each decoded container is, for references: a tree of path steps, so that remembering
 * one costs its depth in lookups of steps already hashed, never its path's text (a long key
 * over many elements would be copied once per element). */
interface Place {
    value?: unknown;
    known: boolean;
    next?: Map<unknown, Place>;
}

class Decoder {
    private readonly places: Place = { known: false };

    private remember(path: readonly Step[], value: unknown): void {
        let at = this.places;
        for (const step of path) {
            at.next ??= new Map();
            let p = at.next.get(step);
            if (!p) {
                p = { known: false };
                at.next.set(step, p);
            }
            at = p;
        }
        at.value = value;
        at.known = true;
    }

    private recall(path: readonly unknown[]): Place | undefined {
        let at: Place | undefined = this.places;
        for (const step of path) {
            at = at.next?.get(step);
            if (!at) {
                return undefined;
            }
        }
        return at.known ? at : undefined;
    }

    node(n: Json, path: Step[]): unknown {
        if (Array.isArray(n)) {
            const out: unknown[] = [];
            this.remember(path, out);
            n.forEach((x, i) => out.push(this.node(x, [...path, i])));
            return out;
        }
        if (!isObject(n)) {
            return n;
        }
        if (!Object.prototype.hasOwnProperty.call(n, '$type')) {
            return this.members({}, n, path, path);
        }
        return this.tag(n, path);
    }

    private members(out: object, n: { [key: string]: Json }, at: Step[], inner: Step[]): object {
        this.remember(at, out);
        for (const k of Object.keys(n)) {
            define(out, k, this.node(n[k] as Json, [...inner, k]));
        }
        return out;
    }

    private field<T extends 'string' | 'number'>(
        n: { [key: string]: Json },
        key: string,
        type: T,
        path: Step[],
    ): T extends 'string' ? string : number {
        const v = n[key];
        if (typeof v !== type) {
            throw new BoundaryError(`tag ${String(n.$type)} needs ${type} "${key}" at ${where(path)}`);
        }
        return v as T extends 'string' ? string : number;
    }

    private view(n: { [key: string]: Json }, path: Step[]): ArrayBuffer {
        const buf = this.node(n.buffer as Json, [...path, 'buffer']);
        if (!(buf instanceof ArrayBuffer)) {
            throw new BoundaryError('a view\'s "buffer" is no arraybuffer at ' + where(path));
        }
        return buf;
    }

    private tag(n: { [key: string]: Json }, path: Step[]): unknown {
        const t = n.$type;
        let out: unknown;
        switch (t) {
        case 'undefined':
            return undefined;
        case 'number': {
            const v = this.field(n, 'value', 'string', path);
            const num = own(NUMBERS, v);
            if (num === undefined) {
                throw new BoundaryError(`unknown number "${v}" at ${where(path)}`);
            }
            return num;
        }
        case 'bigint': {
            const v = this.field(n, 'value', 'string', path);
            if (!/^-?(0|[1-9][0-9]*)$/.test(v)) {
                throw new BoundaryError(`invalid bigint "${v}" at ${where(path)}`);
            }
            return BigInt(v);
        }
        case 'ref': {
            const place = Array.isArray(n.path) ? this.recall(n.path) : undefined;
            if (!place) {
                throw new BoundaryError(
                    `reference to nothing: ${JSON.stringify(n.path)} at ${where(path)}`);
            }
            return place.value;
        }
        case 'object': {
            if (!isObject(n.value)) {
                throw new BoundaryError('tag object needs an object "value" at ' + where(path));
            }
            return this.members({}, n.value, path, [...path, 'value']);
        }
        case 'array': {
            const length = this.field(n, 'length', 'number', path);
            if (!isObject(n.items)) {
                throw new BoundaryError('tag array needs an object "items" at ' + where(path));
            }
            const arr = new Array<unknown>(length);
            this.remember(path, arr);
            for (const k of Object.keys(n.items)) {
                const i = Number(k);
                if (!Number.isInteger(i) || i < 0 || i >= length || String(i) !== k) {
                    throw new BoundaryError(`sparse index "${k}" out of range at ${where(path)}`);
                }
                arr[i] = this.node(n.items[k] as Json, [...path, 'items', k]);
            }
            return arr;
        }
        case 'set': {
            if (!Array.isArray(n.values)) {
                throw new BoundaryError('tag set needs an array "values" at ' + where(path));
            }
            const set = new Set<unknown>();
            this.remember(path, set);
            n.values.forEach((x, i) => set.add(this.node(x, [...path, 'values', i])));
            return set;
        }
        case 'map': {
            if (!Array.isArray(n.entries)) {
                throw new BoundaryError('tag map needs an array "entries" at ' + where(path));
            }
            const map = new Map<unknown, unknown>();
            this.remember(path, map);
            n.entries.forEach((e, i) => {
                if (!Array.isArray(e) || e.length !== 2) {
                    throw new BoundaryError(`map entry ${i} is no pair at ${where(path)}`);
                }
                const k = this.node(e[0] as Json, [...path, 'entries', i, 0]);
                map.set(k, this.node(e[1] as Json, [...path, 'entries', i, 1]));
            });
            return map;
        }
        case 'error': {
            const name = this.field(n, 'name', 'string', path);
            const message = this.field(n, 'message', 'string', path);
            const Ctor = own(ERRORS, name);
            let err: Error;
            if (Ctor) {
                err = new Ctor(message);
            } else if (name === 'AggregateError') {
                err = new AggregateError([], message);
            } else {
                /* InternalError and the guest's own names: an Error whose own name says it */
                err = new Error(message);
                hidden(err, 'name', name);
            }
            hidden(err, 'stack', `${name}: ${message}`);
            this.remember(path, err);
            if ('cause' in n) {
                hidden(err, 'cause', this.node(n.cause as Json, [...path, 'cause']));
            }
            if (name === 'AggregateError' || 'errors' in n) {
                if (n.errors !== undefined && !Array.isArray(n.errors)) {
                    throw new BoundaryError('tag error needs an array "errors" at ' + where(path));
                }
                const errors = (n.errors ?? []).map((x, i) => this.node(x, [...path, 'errors', i]));
                hidden(err, 'errors', errors);
            }
            return err;
        }
        case 'date': {
            if (n.value === null) {
                out = new Date(NaN);
            } else {
                out = new Date(this.field(n, 'value', 'string', path));
                if (Number.isNaN((out as Date).getTime())) {
                    throw new BoundaryError(`invalid date "${String(n.value)}" at ${where(path)}`);
                }
            }
            break;
        }
        case 'regexp':
            try {
                out = new RegExp(this.field(n, 'source', 'string', path),
                        this.field(n, 'flags', 'string', path));
            } catch (e) {
                if (e instanceof BoundaryError) {
                    throw e;
                }
                throw new BoundaryError(`invalid regexp at ${where(path)}: ${(e as Error).message}`);
            }
            break;
        case 'arraybuffer':
            out = base64ToBuffer(this.field(n, 'base64', 'string', path), path);
            break;
        case 'DataView': {
            const buf = this.view(n, path);
            try {
                out = new DataView(buf, this.field(n, 'byteOffset', 'number', path),
                        this.field(n, 'byteLength', 'number', path));
            } catch (e) {
                if (e instanceof BoundaryError) {
                    throw e;
                }
                throw new BoundaryError('DataView outside its buffer at ' + where(path));
            }
            break;
        }
        default: {
            if (typeof t === 'string' && Object.prototype.hasOwnProperty.call(TYPED, t)) {
                const Ctor = TYPED[t as TypedName];
                const buf = this.view(n, path);
                const offset = this.field(n, 'byteOffset', 'number', path);
                const length = this.field(n, 'length', 'number', path);
                try {
                    out = new Ctor(buf, offset, length);
                } catch {
                    throw new BoundaryError(`${t} outside its buffer or misaligned at ${where(path)}`);
                }
                break;
            }
            throw new BoundaryError(`unknown tag ${JSON.stringify(t)} at ${where(path)}`);
        }
        }
        this.remember(path, out);
        return out;
    }
}

/**
 * The value of a boundary-JSON document: a text (parsed first) or what JSON.parse gave. Throws
 * a BoundaryError for a document that breaks docs/values.md (a SyntaxError for text that is no
 * JSON).
 */
export function decode(doc: string | unknown): unknown {
    const tree = typeof doc === 'string' ? JSON.parse(doc) : doc;
    return new Decoder().node(tree as Json, []);
}

/* ---------------------------------------------------------------------------- encoding */

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

class Encoder {
    private readonly seen = new Map<object, Step[]>();

    constructor(private readonly root: string) {}

    private where(path: readonly Step[]): string {
        let s = this.root;
        for (const p of path) {
            if (typeof p === 'number') {
                s += `[${p}]`;
            } else {
                s += IDENT.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
            }
        }
        return s;
    }

    private refuse(what: string, path: readonly Step[]): never {
        throw new BoundaryError(`cannot serialize ${what} at ${this.where(path)}`);
    }

    val(v: unknown, path: Step[]): Json {
        switch (typeof v) {
        case 'undefined':
            return { $type: 'undefined' };
        case 'boolean':
        case 'string':
            return v;
        case 'number':
            if (Number.isNaN(v)) {
                return { $type: 'number', value: 'NaN' };
            }
            if (!Number.isFinite(v)) {
                return { $type: 'number', value: v > 0 ? 'Infinity' : '-Infinity' };
            }
            return Object.is(v, -0) ? { $type: 'number', value: '-0' } : v;
        case 'bigint':
            return { $type: 'bigint', value: v.toString() };
        case 'function':
        case 'symbol':
            return this.refuse(typeof v, path);
        default:
            break;
        }
        if (v === null) {
            return null;
        }
        const obj = v as object;
        const first = this.seen.get(obj);
        if (first) {
            return { $type: 'ref', path: first };
        }
        this.seen.set(obj, path);
        if (Array.isArray(obj)) {
            let sparse = false;
            for (let i = 0; i < obj.length && !sparse; i++) {
                sparse = !(i in obj);
            }
            if (!sparse) {
                return obj.map((x, i) => this.val(x, [...path, i]));
            }
            const items: { [key: string]: Json } = {};
            for (const k of Object.keys(obj)) {
                if (String(Number(k)) === k) {
                    items[k] = this.val(obj[Number(k)], [...path, 'items', k]);
                }
            }
            return { $type: 'array', length: obj.length, items };
        }
        if (obj instanceof Date) {
            const t = obj.getTime();
            return { $type: 'date', value: Number.isNaN(t) ? null : obj.toISOString() };
        }
        if (obj instanceof RegExp) {
            return { $type: 'regexp', source: obj.source, flags: obj.flags };
        }
        if (obj instanceof Map) {
            const entries: Json[] = [];
            let i = 0;
            for (const [k, x] of obj) {
                entries.push([this.val(k, [...path, 'entries', i, 0]),
                    this.val(x, [...path, 'entries', i, 1])]);
                i++;
            }
            return { $type: 'map', entries };
        }
        if (obj instanceof Set) {
            const values: Json[] = [];
            let i = 0;
            for (const x of obj) {
                values.push(this.val(x, [...path, 'values', i++]));
            }
            return { $type: 'set', values };
        }
        if (obj instanceof ArrayBuffer) {
            return { $type: 'arraybuffer', base64: bufferToBase64(obj) };
        }
        if (ArrayBuffer.isView(obj)) {
            const buf = this.val(obj.buffer, [...path, 'buffer']);
            if (obj instanceof DataView) {
                return { $type: 'DataView', buffer: buf, byteOffset: obj.byteOffset,
                    byteLength: obj.byteLength };
            }
            const name = Object.keys(TYPED).find((k) => obj instanceof TYPED[k as TypedName]);
            if (!name) {
                return this.refuse('instance of ' + obj.constructor.name, path);
            }
            return { $type: name, buffer: buf, byteOffset: obj.byteOffset,
                length: (obj as AnyTyped).length };
        }
        if (obj instanceof Error) {
            const out: { [key: string]: Json } = { $type: 'error', name: String(obj.name),
                message: String(obj.message) };
            if (Object.prototype.hasOwnProperty.call(obj, 'cause')) {
                out.cause = this.val((obj as { cause?: unknown }).cause, [...path, 'cause']);
            }
            if (obj instanceof AggregateError) {
                out.errors = obj.errors.map((x, i) => this.val(x, [...path, 'errors', i]));
            }
            return out;
        }
        const proto = Object.getPrototypeOf(obj);
        if (proto !== Object.prototype && proto !== null) {
            const name = typeof proto.constructor === 'function' ? proto.constructor.name : '';
            return this.refuse(name ? 'instance of ' + name : 'class instance', path);
        }
        const escaped = Object.prototype.hasOwnProperty.call(obj, '$type');
        const inner = escaped ? [...path, 'value'] : path;
        const out: { [key: string]: Json } = {};
        for (const k of Object.keys(obj)) {
            define(out, k, this.val((obj as Record<string, unknown>)[k], [...inner, k]));
        }
        return escaped ? { $type: 'object', value: out } : out;
    }
}

/**
 * The boundary-JSON text of a value; a BoundaryError naming the path (`value.items[3].fn`) for
 * what cannot cross (functions, symbols, class instances). `root` names the value in that path.
 */
export function encode(value: unknown, root = 'value'): string {
    return JSON.stringify(new Encoder(root).val(value, []));
}
