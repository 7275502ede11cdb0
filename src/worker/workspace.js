/*
 * workspace.js - the guest's file API (docs/workspace.md): the global `workspace` and the
 * module `node:fs/promises`, over the run's hidden host operations "workspace.<op>".
 *
 * modules.c runs this per run, only for a run with a workspace, after the context was hardened
 * and before any guest code: it calls the function this file evaluates to with the raw host
 * functions (`native.ops`), and gets back {workspace, fs}. Everything made here is frozen
 * (intrinsics are frozen already; these objects arrive after that), and the raw functions stay
 * in this closure - the guest can call only the wrappers.
 *
 * The host answers a failure by throwing "CODE: message" (ENOENT, EROFS, ...); a wrapper turns
 * it into an Error with Node's `code`, as Node's fs does. Intrinsics are captured before any
 * guest code exists, so a guest cannot change what a wrapper calls.
 */
'use strict';
'use strip';
(function (native) {
    const ops = native.ops;
    const { freeze, getOwnPropertyDescriptor, getPrototypeOf } = Object;
    const call = Function.prototype.call.bind(Function.prototype.call);
    const ErrorCtor = Error;
    const TypeErrorCtor = TypeError;
    const JSONParse = JSON.parse;
    const JSONStringify = JSON.stringify;
    const U8 = Uint8Array;
    const isView = ArrayBuffer.isView;
    const ArrayBufferProto = ArrayBuffer.prototype;
    const abSlice = ArrayBufferProto.slice;
    const abByteLength = getOwnPropertyDescriptor(ArrayBufferProto, 'byteLength').get;
    const TypedArrayProto = getPrototypeOf(Int8Array.prototype);
    const taBuffer = getOwnPropertyDescriptor(TypedArrayProto, 'buffer').get;
    const taOffset = getOwnPropertyDescriptor(TypedArrayProto, 'byteOffset').get;
    const taLength = getOwnPropertyDescriptor(TypedArrayProto, 'byteLength').get;
    const taTag = getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag).get;
    const DataViewProto = DataView.prototype;
    const dvBuffer = getOwnPropertyDescriptor(DataViewProto, 'buffer').get;
    const dvOffset = getOwnPropertyDescriptor(DataViewProto, 'byteOffset').get;
    const dvLength = getOwnPropertyDescriptor(DataViewProto, 'byteLength').get;
    const strIndexOf = String.prototype.indexOf;
    const strSlice = String.prototype.slice;
    const arrayMap = Array.prototype.map;

    const errnos = {
        __proto__: null,
        ENOENT: -2, EIO: -5, EACCES: -13, EEXIST: -17, EXDEV: -18, ENOTDIR: -20, EISDIR: -21,
        EINVAL: -22, EFBIG: -27, ENOSPC: -28, EROFS: -30, ENAMETOOLONG: -36, ENOTEMPTY: -39,
    };

    /* The host's "CODE: message" as Node's error: an Error (TypeError for ERR_INVALID_ARG_*)
     * with `code`, and `errno` for a system error. Anything else is passed on as it is. */
    function convert(e) {
        const message = typeof e === 'object' && e !== null ? e.message : undefined;
        if (typeof message !== 'string') {
            return e;
        }
        const colon = call(strIndexOf, message, ': ');
        const code = colon > 0 ? call(strSlice, message, 0, colon) : '';
        if (!(code in errnos) && call(strIndexOf, code, 'ERR_') !== 0) {
            return e;
        }
        const err = call(strIndexOf, code, 'ERR_INVALID_ARG') === 0
            ? new TypeErrorCtor(call(strSlice, message, colon + 2))
            : new ErrorCtor(message);
        err.code = code;
        if (code in errnos) {
            err.errno = errnos[code];
        }
        return err;
    }

    /* Wraps a host operation: the guest's arguments prepared by `prep`, failures converted. */
    function op(name, fn) {
        const f = {
            async [name](...args) {
                try {
                    return await fn(...args);
                } catch (e) {
                    throw convert(e);
                }
            },
        }[name];
        return freeze(f);
    }

    /* Data to write: a string as it is, bytes (any view, or an ArrayBuffer) as a fresh
     * Uint8Array of exactly those bytes (a view's whole buffer never crosses). */
    function toData(data) {
        if (typeof data === 'string') {
            return data;
        }
        let buffer, offset, length;
        if (isView(data)) {
            let tag;
            try {
                tag = call(taTag, data);
            } catch (e) {
                tag = undefined;
            }
            if (tag === undefined) {
                buffer = call(dvBuffer, data);
                offset = call(dvOffset, data);
                length = call(dvLength, data);
            } else {
                buffer = call(taBuffer, data);
                offset = call(taOffset, data);
                length = call(taLength, data);
            }
        } else {
            try {
                length = call(abByteLength, data);
                buffer = data;
                offset = 0;
            } catch (e) {
                const err = new TypeErrorCtor('The "data" argument must be of type string or an ' +
                    'instance of Buffer, TypedArray, DataView or ArrayBuffer');
                err.code = 'ERR_INVALID_ARG_TYPE';
                throw err;
            }
        }
        return new U8(call(abSlice, buffer, offset, offset + length));
    }

    function encodingOf(options, fallback) {
        if (options === undefined) {
            return fallback;
        }
        if (options === null || typeof options === 'string') {
            return options;
        }
        if (typeof options === 'object') {
            return options.encoding === undefined ? fallback : options.encoding;
        }
        return fallback;
    }

    function checkEncoding(enc) {
        if (enc !== null && enc !== 'utf8' && enc !== 'utf-8') {
            const err = new TypeErrorCtor(`The argument 'encoding' is invalid encoding. Received ` +
                `'${enc}' (this workspace reads utf8 text or bytes)`);
            err.code = 'ERR_INVALID_ARG_VALUE';
            throw err;
        }
        return enc;
    }

    function stats(s) {
        const dir = s.type === 'dir';
        return {
            size: s.size,
            mode: dir ? 0o40755 : 0o100644,
            mtimeMs: 0,
            isFile: () => !dir,
            isDirectory: () => dir,
            isSymbolicLink: () => false,
        };
    }

    function dirents(list, path) {
        return call(arrayMap, list, (d) => ({
            name: d.name,
            parentPath: path,
            path,
            isFile: () => !d.dir,
            isDirectory: () => d.dir,
            isSymbolicLink: () => false,
        }));
    }

    function names(list) {
        return call(arrayMap, list, (d) => d.name);
    }

    const flags = (o, extra) => ({
        recursive: !!(o && o.recursive),
        force: !!(o && o.force),
        ...extra,
    });

    const workspace = freeze({
        __proto__: null,
        readFile: op('readFile', (path, encoding = 'utf8') =>
            ops.readFile(path, checkEncoding(encoding))),
        readFileBytes: op('readFileBytes', (path) => ops.readFile(path, null)),
        writeFile: op('writeFile', (path, data) => ops.writeFile(path, toData(data))),
        appendFile: op('appendFile', (path, data) => ops.appendFile(path, toData(data))),
        readJson: op('readJson', async (path) => JSONParse(await ops.readFile(path, 'utf8'))),
        writeJson: op('writeJson', (path, value, space) =>
            ops.writeFile(path, JSONStringify(value, null, space))),
        readdir: op('readdir', async (path = '.', options) => {
            const list = await ops.readdir(path);
            return options && options.withFileTypes ? dirents(list, path) : names(list);
        }),
        stat: op('stat', async (path) => stats(await ops.stat(path))),
        exists: op('exists', (path) => ops.exists(path)),
        mkdir: op('mkdir', (path, options) => ops.mkdir(path, flags(options))),
        rm: op('rm', (path, options) => ops.rm(path, flags(options))),
        rename: op('rename', (from, to) => ops.rename(from, to)),
        glob: op('glob', (pattern) => ops.glob(pattern)),
    });

    /* node:fs/promises: the same operations under Node's names and argument shapes */
    const fs = {
        readFile: op('readFile', (path, options) =>
            ops.readFile(path, checkEncoding(encodingOf(options, null)))),
        writeFile: op('writeFile', (path, data) => ops.writeFile(path, toData(data))),
        appendFile: op('appendFile', (path, data) => ops.appendFile(path, toData(data))),
        readdir: op('readdir', async (path, options) => {
            const list = await ops.readdir(path);
            return options && options.withFileTypes ? dirents(list, path) : names(list);
        }),
        stat: op('stat', async (path) => stats(await ops.stat(path))),
        lstat: op('lstat', async (path) => stats(await ops.stat(path))),
        access: op('access', async (path) => {
            if (!(await ops.exists(path))) {
                throw new ErrorCtor(`ENOENT: no such file or directory, access '${path}'`);
            }
        }),
        mkdir: op('mkdir', (path, options) => ops.mkdir(path, flags(options))),
        rm: op('rm', (path, options) => ops.rm(path, flags(options))),
        rmdir: op('rmdir', (path) => ops.rm(path, flags(undefined, { dir: true }))),
        unlink: op('unlink', (path) => ops.rm(path, flags(undefined, { file: true }))),
        rename: op('rename', (from, to) => ops.rename(from, to)),
        glob: op('glob', (pattern) => ops.glob(pattern)),
    };
    return freeze({ __proto__: null, workspace, fs: freeze(fs) });
})
