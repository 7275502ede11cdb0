// fake_airlockd.mjs - the part of airlockd's HTTP contract a sandbox session uses (docs/server.md "Workspaces":
// POST /v1/snapshots?department=D, ad-hoc POST /v1/runs with a "workspace", GET /v1/runs/{id},
// GET /v1/runs/{id}/workspace.tar), kept by a small Node server that records every request, so
// the package's tests can check what it sends before a real airlockd is at hand and can run
// without one. The guest runs in node:vm with a `workspace` over the run's files: writes only
// under an outputs prefix (EROFS), Node's error codes, a failed run keeps nothing. It is a
// stand-in for the contract, never a sandbox: the tests against airlockd itself are
// openai_agents.airlockd.
import http from 'node:http';
import vm from 'node:vm';

export class FakeAirlockd {
    static async start({ key, readTar, writeTar }) {
        const f = new FakeAirlockd();
        f.key = key;
        f.readTar = readTar;
        f.writeTar = writeTar;
        f.requests = [];
        f.snapshots = new Map();
        f.runs = new Map();
        f.mounts = {}; /* mount name -> {key: bytes}: what a registered mount serves */
        f.n = 0;
        f.server = http.createServer((req, res) => {
            const chunks = [];
            req.on('data', (c) => chunks.push(c));
            req.on('end', () => f.handle(req, Buffer.concat(chunks), res));
        });
        await new Promise((resolve) => f.server.listen(0, '127.0.0.1', resolve));
        f.url = `http://127.0.0.1:${f.server.address().port}`;
        return f;
    }

    async stop() {
        await new Promise((resolve) => this.server.close(resolve));
    }

    id(prefix) {
        this.n += 1;
        return prefix + '_' + String(this.n).padStart(32, '0');
    }

    handle(req, body, res) {
        const send = (status, doc, type = 'application/json') => {
            res.writeHead(status, { 'Content-Type': type });
            res.end(type === 'application/json' ? JSON.stringify(doc) : doc);
        };
        const fail = (status, code, message) => send(status, { error: { code, message } });
        const rec = { method: req.method, path: req.url, type: req.headers['content-type'] };
        this.requests.push(rec);
        if (req.headers.authorization !== 'Bearer ' + this.key) {
            return fail(401, 'UNAUTHENTICATED', 'no such key');
        }
        try {
            if (req.method === 'POST' && req.url.startsWith('/v1/snapshots?')) {
                if (new URL(req.url, this.url).searchParams.get('department') !== 'finance') {
                    return fail(400, 'INVALID_REQUEST', 'query parameter "department" must name the department');
                }
                rec.body = new Uint8Array(body);
                const members = this.readTar(rec.body);
                const id = this.id('snap');
                this.snapshots.set(id, members);
                return send(201, { id });
            }
            if (req.method === 'POST' && req.url === '/v1/runs') {
                rec.body = JSON.parse(body.toString('utf8'));
                return this.run(rec.body).then((run) => send(200, run.doc),
                    (e) => fail(e.status || 400, e.code || 'INVALID_REQUEST', e.message));
            }
            let m = /^\/v1\/runs\/([^/]+)\/workspace\.tar$/.exec(req.url);
            if (req.method === 'GET' && m && this.runs.has(m[1])) {
                return send(200, Buffer.from(this.writeTar(this.runs.get(m[1]).files)), 'application/x-tar');
            }
            m = /^\/v1\/runs\/([^/]+)$/.exec(req.url);
            if (req.method === 'GET' && m && this.runs.has(m[1])) {
                return send(200, this.runs.get(m[1]).doc);
            }
            return fail(404, 'NOT_FOUND', 'no route ' + req.method + ' ' + req.url);
        } catch (e) {
            return fail(400, 'INVALID_REQUEST', e.message);
        }
    }

    async run(body) {
        const ws = body.workspace;
        let start;
        if (ws.from_snapshot !== undefined) {
            start = this.snapshots.get(ws.from_snapshot);
        } else if (ws.from_run !== undefined) {
            start = this.runs.get(ws.from_run)?.files;
        } else {
            start = [];
        }
        if (!start) {
            throw Object.assign(new Error('no such snapshot or run'), { status: 404, code: 'NOT_FOUND' });
        }
        const files = new Map(start.map((e) => [e.path, { ...e }]));
        /* a mount entry's files are the mount's keys below its prefix, read-only, never kept */
        for (const [at, e] of Object.entries(ws.entries || {})) {
            if (e.mount === undefined) {
                continue;
            }
            const served = this.mounts[e.mount];
            if (!served) {
                throw Object.assign(new Error(`no mount ${e.mount}`), { status: 409, code: 'CONFLICT' });
            }
            files.set(at, { path: at, type: 'dir', mount: true });
            for (const [key, data] of Object.entries(served)) {
                if (key.startsWith(e.prefix || '')) {
                    const p = at + '/' + key.slice((e.prefix || '').length);
                    files.set(p, { path: p, type: 'file', data, mount: true });
                }
            }
        }
        const outputs = ws.outputs || [];
        const err = (code, msg) => Object.assign(new Error(`${code}: ${msg}`), { code });
        const norm = (p) => {
            let s = String(p);
            if (s.startsWith(ws.root + '/')) {
                s = s.slice(ws.root.length + 1);
            }
            if (s.startsWith('/') || s.split('/').includes('..')) {
                throw err('EACCES', `${p} is outside the workspace`);
            }
            return s.split('/').filter((x) => x && x !== '.').join('/');
        };
        const writable = (p) => {
            if (files.get(p)?.mount || [...files.values()].some((f) => f.mount && f.type === 'dir' && p.startsWith(f.path + '/'))) {
                throw err('EROFS', `${p} is in a read-only mount`);
            }
            if (!outputs.some((o) => (p + '/').startsWith(o.replace(/\/?$/, '/')))) {
                throw err('EROFS', `${p} is not under an outputs prefix`);
            }
        };
        const parent = (p) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
        const isDir = (p) => p === '' || files.get(p)?.type === 'dir' ||
            [...files.keys()].some((k) => k.startsWith(p + '/'));
        const enc = new TextEncoder();
        const workspace = {
            async readFile(p, encoding = 'utf8') {
                const f = files.get(norm(p));
                if (!f) {
                    throw err('ENOENT', `no such file ${p}`);
                }
                if (f.type === 'dir') {
                    throw err('EISDIR', `${p} is a directory`);
                }
                return encoding === null ? new Uint8Array(f.data) : new TextDecoder().decode(f.data);
            },
            async writeFile(p, data) {
                const n = norm(p);
                writable(n);
                if (!isDir(parent(n))) {
                    throw err('ENOENT', `no directory ${parent(n)}`);
                }
                files.set(n, { path: n, type: 'file', data: typeof data === 'string' ? enc.encode(data) : data });
            },
            async mkdir(p, o = {}) {
                const n = norm(p);
                writable(n);
                const segs = n.split('/');
                for (let i = 1; i <= segs.length; i++) {
                    const d = segs.slice(0, i).join('/');
                    if (!isDir(d)) {
                        if (i < segs.length && !o.recursive) {
                            throw err('ENOENT', `no directory ${d}`);
                        }
                        files.set(d, { path: d, type: 'dir' });
                    }
                }
            },
            async rm(p) {
                const n = norm(p);
                writable(n);
                if (!files.delete(n)) {
                    throw err('ENOENT', `no such file ${p}`);
                }
            },
            async readdir(p, o = {}) {
                const n = norm(p);
                const names = new Set();
                for (const k of files.keys()) {
                    if (n === '' || k.startsWith(n + '/')) {
                        names.add(k.slice(n ? n.length + 1 : 0).split('/')[0]);
                    }
                }
                const sorted = [...names].sort();
                return o.withFileTypes ? sorted.map((name) => {
                    const dir = isDir(n ? n + '/' + name : name);
                    return { name, isDirectory: () => dir, isFile: () => !dir };
                }) : sorted;
            },
            async stat(p) {
                const n = norm(p);
                const dir = isDir(n);
                return { isDirectory: () => dir, isFile: () => !dir };
            },
        };
        const id = this.id('run');
        const console = [];
        const doc = { id, status: 'completed', template: null, version: null,
            department: body.department, input: body.input, value: null, console, error: null };
        try {
            const fn = vm.runInNewContext(`(async () => {\n${body.source}\n})`, {
                workspace, input: body.input,
                console: { log: (...a) => console.push({ level: 'log', text: a.join(' ') }) },
            });
            let value = await fn();
            if (value instanceof Uint8Array || value?.constructor?.name === 'Uint8Array') {
                value = { $type: 'Uint8Array', byteOffset: 0, length: value.length,
                    buffer: { $type: 'arraybuffer', base64: Buffer.from(value).toString('base64') } };
            }
            doc.value = value === undefined ? null : JSON.parse(JSON.stringify(value));
            this.runs.set(id, { doc, files: [...files.values()].filter((f) => !f.mount) });
        } catch (e) {
            doc.status = 'failed';
            doc.error = { code: 'USER_ERROR', name: 'Error', message: String(e.message) };
            this.runs.set(id, { doc, files: start });
        }
        return this.runs.get(id);
    }
}
