// values.test.mjs - the boundary-value codec (docs/values.md): each kind decodes from the text
// the format documents to the JavaScript value the guest had, and encodes back to that text;
// malformed documents and values that cannot cross fail with a BoundaryError naming where.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

import { airlock, airlockUrl } from './world.mjs';

const { decode, encode, BoundaryError } = airlock;

// text -> value (checked by check) -> the same text
function roundTrip(text, check) {
    const v = decode(text);
    check(v);
    assert.equal(encode(v), text);
    return v;
}

test('plain JSON stays plain JSON', () => {
    const text = '{"a":1,"b":[true,null,"x"],"c":{"d":0.1}}';
    roundTrip(text, (v) => assert.deepEqual(v, { a: 1, b: [true, null, 'x'], c: { d: 0.1 } }));
    assert.deepEqual(decode(JSON.parse(text)), decode(text), 'a parsed document decodes too');
});

test('undefined keeps its place in arrays and objects', () => {
    roundTrip('[1,{"$type":"undefined"}]', (v) => {
        assert.equal(v.length, 2);
        assert.equal(v[1], undefined);
    });
    roundTrip('{"a":{"$type":"undefined"}}', (v) => assert.ok('a' in v && v.a === undefined));
});

test('NaN, Infinity, -Infinity and -0', () => {
    roundTrip('[{"$type":"number","value":"NaN"},{"$type":"number","value":"Infinity"},' +
        '{"$type":"number","value":"-Infinity"},{"$type":"number","value":"-0"}]', (v) => {
        assert.ok(Number.isNaN(v[0]));
        assert.equal(v[1], Infinity);
        assert.equal(v[2], -Infinity);
        assert.ok(Object.is(v[3], -0));
    });
});

test('BigInt', () => {
    roundTrip('{"$type":"bigint","value":"-18446744073709551617"}',
        (v) => assert.equal(v, -(2n ** 64n) - 1n));
    assert.throws(() => decode('{"$type":"bigint","value":"012"}'), BoundaryError);
});

test('Date, also an invalid one, and any string new Date accepts', () => {
    roundTrip('{"$type":"date","value":"1970-01-01T00:00:00.000Z"}', (v) => {
        assert.ok(v instanceof Date);
        assert.equal(v.getTime(), 0);
    });
    roundTrip('{"$type":"date","value":null}', (v) => assert.ok(Number.isNaN(v.getTime())));
    assert.equal(decode('{"$type":"date","value":"2024-02-29T12:00:00Z"}').toISOString(),
        '2024-02-29T12:00:00.000Z');
    assert.throws(() => decode('{"$type":"date","value":"not a date"}'), /invalid date/);
});

test('RegExp', () => {
    roundTrip('{"$type":"regexp","source":"a\\\\/b","flags":"gi"}', (v) => {
        assert.ok(v instanceof RegExp);
        assert.equal(v.source, 'a\\/b');
        assert.equal(v.flags, 'gi');
        assert.ok(v.test('A/B'));
    });
});

test('Map and Set, in insertion order, keys of any type', () => {
    roundTrip('{"$type":"map","entries":[[1,{"a":1}],[{"k":2},"x"]]}', (v) => {
        assert.ok(v instanceof Map);
        assert.deepEqual([...v.keys()][1], { k: 2 });
        assert.deepEqual(v.get(1), { a: 1 });
    });
    roundTrip('{"$type":"set","values":[1,"a"]}', (v) => assert.deepEqual([...v], [1, 'a']));
});

test('bytes: ArrayBuffer, typed arrays and DataView share their buffer', () => {
    roundTrip('{"$type":"arraybuffer","base64":"AQID"}', (v) => {
        assert.ok(v instanceof ArrayBuffer);
        assert.deepEqual([...new Uint8Array(v)], [1, 2, 3]);
    });
    roundTrip('{"$type":"Uint8Array","buffer":{"$type":"arraybuffer","base64":"AQID"},' +
        '"byteOffset":0,"length":3}', (v) => {
        assert.ok(v instanceof Uint8Array);
        assert.deepEqual([...v], [1, 2, 3]);
    });
    const shared = roundTrip('[{"$type":"Uint8Array","buffer":{"$type":"arraybuffer","base64":"AAA="},' +
        '"byteOffset":0,"length":2},{"$type":"Int8Array","buffer":{"$type":"ref","path":[0,' +
        '"buffer"]},"byteOffset":1,"length":1}]', (v) => assert.equal(v[0].buffer, v[1].buffer));
    shared[1][0] = -1;
    assert.equal(shared[0][1], 255, 'one buffer under both views');
    roundTrip('{"$type":"BigInt64Array","buffer":{"$type":"arraybuffer","base64":' +
        '"//////////8="},"byteOffset":0,"length":1}', (v) => assert.equal(v[0], -1n));
    roundTrip('{"$type":"DataView","buffer":{"$type":"arraybuffer","base64":"AQID"},' +
        '"byteOffset":1,"byteLength":2}', (v) => {
        assert.ok(v instanceof DataView);
        assert.equal(v.getUint16(0), 0x0203);
    });
    assert.throws(() => decode('{"$type":"Int32Array","buffer":{"$type":"arraybuffer",' +
        '"base64":"AQID"},"byteOffset":1,"length":1}'), /outside its buffer or misaligned/);
});

test('errors: native constructors, cause, AggregateError, other names', () => {
    roundTrip('{"$type":"error","name":"TypeError","message":"bad"}', (v) => {
        assert.ok(v instanceof TypeError);
        assert.equal(v.message, 'bad');
    });
    roundTrip('{"$type":"error","name":"Error","message":"x","cause":{"a":1}}', (v) => {
        assert.deepEqual(v.cause, { a: 1 });
        assert.ok(!Object.keys(v).includes('cause'), 'cause is not enumerable');
    });
    roundTrip('{"$type":"error","name":"AggregateError","message":"m","errors":[' +
        '{"$type":"error","name":"RangeError","message":"r"}]}', (v) => {
        assert.ok(v instanceof AggregateError);
        assert.ok(v.errors[0] instanceof RangeError);
    });
    roundTrip('{"$type":"error","name":"MyError","message":"mine"}',
        (v) => assert.equal(String(v), 'MyError: mine'));
});

test('sparse arrays keep their holes', () => {
    roundTrip('{"$type":"array","length":3,"items":{"0":1,"2":3}}', (v) => {
        assert.equal(v.length, 3);
        assert.ok(!(1 in v));
        assert.equal(v[2], 3);
    });
    const huge = decode('{"$type":"array","length":1000000000,"items":{}}');
    assert.equal(huge.length, 1e9);
    assert.throws(() => decode('{"$type":"array","length":2,"items":{"5":1}}'), /out of range/);
});

test('references: shared objects and cycles are the same object', () => {
    roundTrip('{"a":[{"n":1}],"b":{"d":{"$type":"ref","path":["a",0]}}}',
        (v) => assert.equal(v.b.d, v.a[0]));
    roundTrip('{"self":{"$type":"ref","path":[]}}', (v) => assert.equal(v.self, v));
    roundTrip('[{"$type":"map","entries":[[{},{"$type":"ref","path":[0,"entries",0,0]}]]},' +
        '{"$type":"ref","path":[0,"entries",0,0]}]', (v) => {
        const [k] = v[0].keys();
        assert.equal(v[0].get(k), k);
        assert.equal(v[1], k);
    });
    assert.throws(() => decode('[{"$type":"ref","path":[5]}]'), /reference to nothing/);
    assert.throws(() => decode('{"$type":"map","entries":[[1,{"$type":"ref","path":["entries"]}]]}'),
        /reference to nothing/);
});

test('an object with its own $type key is escaped, and __proto__ stays an own key', () => {
    roundTrip('{"$type":"object","value":{"$type":"date","value":1}}',
        (v) => assert.deepEqual(Object.entries(v), [['$type', 'date'], ['value', 1]]));
    const v = decode('{"__proto__":{"polluted":true}}');
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.deepEqual(Object.keys(v), ['__proto__']);
    assert.equal({}.polluted, undefined);
});

test('names of Object.prototype members are no constructors and no numbers', () => {
    // a guest names its errors as it likes: e.name = 'constructor' is still an Error
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
        const text = `{"$type":"error","name":"${name}","message":"m"}`;
        const v = decode(text);
        assert.ok(v instanceof Error, name);
        assert.equal(v.name, name);
        assert.equal(v.message, 'm');
        assert.equal(encode(v), text);
        assert.throws(() => decode(`{"$type":"number","value":"${name}"}`),
            (e) => e instanceof BoundaryError && /unknown number/.test(e.message), name);
    }
});

// A guest's value of half a megabyte: one long key over many small arrays. Where each one is
// (for references) must not cost the key's length again per element: that took minutes. The
// decode runs in a worker, so that a slow one fails the test instead of hanging it.
test('a long key over many elements decodes in linear time', async () => {
    const code = `
        const { parentPort, workerData } = require('node:worker_threads');
        import(workerData.url).then(({ decode }) => {
            const key = 'k'.repeat(100000);
            const text = JSON.stringify({ [key]: Array.from({ length: 100000 }, (_, i) => [i]) });
            const v = decode(text);
            const shared = decode(JSON.stringify({ [key]: [[1], { $type: 'ref', path: [key, 0] }] }));
            parentPort.postMessage([v[key].length, v[key][99999][0], shared[key][1] === shared[key][0]]);
        });`;
    const w = new Worker(code, { eval: true, workerData: { url: airlockUrl } });
    let timer;
    try {
        const got = await Promise.race([
            new Promise((resolve, reject) => {
                w.once('message', resolve);
                w.once('error', reject);
            }),
            new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error('decode took over 20 s')), 20000);
            }),
        ]);
        assert.deepEqual(got, [100000, 99999, true]);
    } finally {
        clearTimeout(timer);
        await w.terminate();
    }
});

test('malformed tags are refused with where they are', () => {
    assert.throws(() => decode('{"x":[{"$type":"nope"}]}'),
        (e) => e instanceof BoundaryError && /unknown tag "nope" at \["x",0\]/.test(e.message));
    assert.throws(() => decode('{"$type":"number","value":"1"}'), /unknown number/);
    assert.throws(() => decode('{"$type":"regexp","source":"(","flags":""}'), /invalid regexp/);
    assert.throws(() => decode('{"$type":"set"}'), /needs an array "values"/);
    assert.throws(() => decode('not json'), SyntaxError);
});

test('what cannot cross is refused with its path', () => {
    assert.throws(() => encode({ items: [0, 1, 2, { fn() {} }] }),
        /cannot serialize function at value\.items\[3\]\.fn/);
    assert.throws(() => encode([Symbol('s')], 'args'), /cannot serialize symbol at args\[0\]/);
    class Foo {}
    assert.throws(() => encode({ 'odd key': new Foo() }),
        /cannot serialize instance of Foo at value\["odd key"\]/);
    assert.throws(() => encode(new Map([[1, () => 1]])),
        /cannot serialize function at value\.entries\[0\]\[1\]/);
    assert.equal(encode(Object.assign(Object.create(null), { a: 1 })), '{"a":1}');
});
