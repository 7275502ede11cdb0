// tar.test.mjs - openai_agents.tar: the workspace archive (src/tar.ts), no server. What the
// writer makes, the reader gives back (also names past ustar's 100 bytes, through pax); an
// archive from outside is refused member by member when it would write outside the root, hold a
// link or a device, lie about its sizes or pass the limits - and GNU tar reads what we write.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { pkg } from './servers.mjs';

const { readTar, writeTar, TarError } = pkg;
const enc = new TextEncoder();
const bytes = (s) => enc.encode(s);

/* One ustar header block by hand, for members our writer never makes. */
function rawMember(name, flag, data = new Uint8Array(), { size = data.length, linkname = '' } = {}) {
    const h = new Uint8Array(512);
    const put = (s, off) => h.set(enc.encode(s), off);
    put(name, 0);
    put('0000644\0', 100);
    put('0000000\0', 108);
    put('0000000\0', 116);
    put(size.toString(8).padStart(11, '0') + '\0', 124);
    put('00000000000\0', 136);
    put('        ', 148);
    put(flag, 156);
    put(linkname, 157);
    put('ustar\0' + '00', 257);
    const sum = h.reduce((a, b) => a + b, 0);
    put(sum.toString(8).padStart(6, '0') + '\0 ', 148);
    const body = new Uint8Array(Math.ceil(data.length / 512) * 512);
    body.set(data);
    return [h, body];
}

function archive(...members) {
    const parts = [...members.flat(), new Uint8Array(1024)];
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
        out.set(p, at);
        at += p.length;
    }
    return out;
}

test('what writeTar writes, readTar reads back: files, directories, empty and long names', () => {
    const long = 'out/' + 'a'.repeat(60) + '/' + 'b'.repeat(70) + '.md';
    const entries = [
        { path: 'in', type: 'dir' },
        { path: 'in/orders.csv', type: 'file', data: bytes('id,amount\no-1,100\n') },
        { path: 'in/empty', type: 'file', data: new Uint8Array() },
        { path: long, type: 'file', data: bytes('x'.repeat(1500)) },
        { path: 'bin/all-bytes', type: 'file', data: Uint8Array.from({ length: 256 }, (_, i) => i) },
    ];
    const back = readTar(writeTar(entries));
    assert.deepEqual(back.map((e) => [e.path, e.type]), entries.map((e) => [e.path, e.type]));
    for (let i = 0; i < entries.length; i++) {
        if (entries[i].type === 'file') {
            assert.deepEqual(back[i].data, entries[i].data, entries[i].path);
        }
    }
});

test('GNU tar lists and extracts what writeTar writes, the long name included', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oa-tar-'));
    try {
        const long = 'out/' + 'n'.repeat(120) + '.txt';
        fs.writeFileSync(path.join(dir, 'w.tar'), writeTar([
            { path: 'out', type: 'dir' },
            { path: long, type: 'file', data: bytes('hello') },
        ]));
        execFileSync('tar', ['-xf', 'w.tar'], { cwd: dir });
        assert.equal(fs.readFileSync(path.join(dir, long), 'utf8'), 'hello');
        /* and what GNU tar writes (pax format), readTar reads */
        execFileSync('tar', ['--format=pax', '-cf', 'g.tar', 'out'], { cwd: dir });
        const got = readTar(new Uint8Array(fs.readFileSync(path.join(dir, 'g.tar'))));
        assert.deepEqual(got.map((e) => e.path), ['out', long]);
        assert.equal(new TextDecoder().decode(got[1].data), 'hello');
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test('a member outside the root is refused: "..", an absolute name, a pax path', () => {
    for (const name of ['../evil', 'in/../../evil', '/etc/passwd']) {
        assert.throws(() => readTar(archive(rawMember(name, '0', bytes('x')))),
            (e) => e instanceof TarError && /leaves the workspace/.test(e.message), name);
    }
    const rec = ' path=../../evil\n';
    const pax = bytes(String(rec.length + 2) + rec);
    assert.throws(() => readTar(archive(rawMember('PaxHeader', 'x', pax),
        rawMember('harmless', '0', bytes('x')))), /leaves the workspace/);
    assert.throws(() => writeTar([{ path: '../x', type: 'file', data: bytes('x') }]), TarError);
});

test('links, devices and fifos are refused, naming the member', () => {
    for (const [flag, what] of [['2', 'symlink'], ['1', 'hard link'], ['3', 'char device'],
        ['6', 'fifo']]) {
        assert.throws(() => readTar(archive(rawMember('in/x', flag, new Uint8Array(),
            { linkname: '/etc/passwd' }))), /member 1 \(in\/x\): only files and directories/, what);
    }
});

test('sizes that lie, a bad checksum, a second member with one name are refused', () => {
    assert.throws(() => readTar(archive(rawMember('a', '0', bytes('x'), { size: 4096 }))),
        /run past the archive's end/);
    const bad = archive(rawMember('a', '0', bytes('x')));
    bad[0] = 'b'.charCodeAt(0);
    assert.throws(() => readTar(bad), /bad header checksum/);
    assert.throws(() => readTar(archive(rawMember('a', '0', bytes('x')), rawMember('a', '0', bytes('y')))),
        /a second member with that name/);
    assert.throws(() => readTar(new Uint8Array(300)), /ends inside its header/);
});

test('the archive limits: input bytes, extracted bytes, members', () => {
    const tar = writeTar([{ path: 'a', type: 'file', data: bytes('x'.repeat(600)) },
        { path: 'b', type: 'file', data: bytes('y'.repeat(600)) }]);
    assert.equal(readTar(tar, { maxInputBytes: tar.length, maxExtractedBytes: 1200, maxMembers: 2 }).length, 2);
    assert.throws(() => readTar(tar, { maxInputBytes: tar.length - 1 }), /more than/);
    assert.throws(() => readTar(tar, { maxExtractedBytes: 1199 }), /hold more than 1199 bytes/);
    assert.throws(() => readTar(tar, { maxMembers: 1 }), /more than 1 members/);
});
