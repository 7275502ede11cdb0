/*
 * test_value.c - unit tests for src/worker/value.c, the boundary format (docs/values.md).
 *
 * Each test gets a fresh runtime and full context (eval allowed here only, to build values) and
 * frees both at the end: QuickJS asserts on any leaked object at JS_FreeRuntime, so a reference
 * leak anywhere in the codec fails the test run. JSON-compatible encodings are compared with the
 * engine's own JSON.stringify; every other type must round-trip to a structurally equal value
 * (Object.is for numbers, prototypes, holes, shared and cyclic identity).
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format on */

#include "buf.h"
#include "quickjs.h"
#include "value.h"

struct fixture {
    JSRuntime *rt;
    JSContext *ctx;
    struct value_cache *cache;
};

static const struct value_limits big_limits = { .max_depth = 64, .max_bytes = 1 << 24 };

/* A structural deep-equal: identity-consistent (shared and cyclic), holes, prototypes. */
static const char deep_equal_src[] =
        "globalThis.deepEqual = function deepEqual(a, b) {\n"
        "  const seenA = new Map(), seenB = new Map();\n"
        "  function eq(a, b) {\n"
        "    if (typeof a !== typeof b) return false;\n"
        "    if (typeof a !== 'object' || a === null || b === null) return Object.is(a, b);\n"
        "    if (seenA.has(a) || seenB.has(b)) return seenA.get(a) === b && seenB.get(b) === a;\n"
        "    seenA.set(a, b); seenB.set(b, a);\n"
        "    const pa = Object.getPrototypeOf(a), pb = Object.getPrototypeOf(b);\n"
        "    if (pa !== pb && !(pa === null && pb === Object.prototype)) return false;\n"
        "    if (a instanceof Date) return Object.is(a.getTime(), b.getTime());\n"
        "    if (a instanceof RegExp) return a.source === b.source && a.flags === b.flags;\n"
        "    if (a instanceof Map || a instanceof Set) {\n"
        "      if (a.size !== b.size) return false;\n"
        "      const ea = [...a], eb = [...b];\n"
        "      for (let i = 0; i < ea.length; i++) if (!eq(ea[i], eb[i])) return false;\n"
        "      return true;\n"
        "    }\n"
        "    if (a instanceof ArrayBuffer) {\n"
        "      if (a.byteLength !== b.byteLength) return false;\n"
        "      const x = new Uint8Array(a), y = new Uint8Array(b);\n"
        "      for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;\n"
        "      return true;\n"
        "    }\n"
        "    if (ArrayBuffer.isView(a)) return a.byteOffset === b.byteOffset &&\n"
        "        a.byteLength === b.byteLength && eq(a.buffer, b.buffer);\n"
        "    if (a instanceof Error) {\n"
        "      if (a.name !== b.name || a.message !== b.message) return false;\n"
        "      for (const k of ['cause', 'errors']) {\n"
        "        const ha = Object.prototype.hasOwnProperty.call(a, k);\n"
        "        if (ha !== Object.prototype.hasOwnProperty.call(b, k)) return false;\n"
        "        if (ha && !eq(a[k], b[k])) return false;\n"
        "      }\n"
        "      return true;\n"
        "    }\n"
        "    if (Array.isArray(a)) {\n"
        "      if (!Array.isArray(b) || a.length !== b.length) return false;\n"
        "      for (let i = 0; i < a.length; i++) {\n"
        "        if ((i in a) !== (i in b)) return false;\n"
        "        if ((i in a) && !eq(a[i], b[i])) return false;\n"
        "      }\n"
        "      return true;\n"
        "    }\n"
        "    const ka = Object.keys(a), kb = Object.keys(b);\n"
        "    if (ka.length !== kb.length) return false;\n"
        "    for (let i = 0; i < ka.length; i++) {\n"
        "      if (ka[i] !== kb[i]) return false;\n"
        "      const da = Object.getOwnPropertyDescriptor(a, ka[i]);\n"
        "      const db = Object.getOwnPropertyDescriptor(b, kb[i]);\n"
        "      if (!db || !('value' in db) || !eq(da.value, db.value)) return false;\n"
        "    }\n"
        "    return true;\n"
        "  }\n"
        "  return eq(a, b);\n"
        "};\n";

static JSValue eval(JSContext *ctx, const char *src)
{
    JSValue v = JS_Eval(ctx, src, strlen(src), "<test>", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(v)) {
        JSValue ex = JS_GetException(ctx);
        const char *s = JS_ToCString(ctx, ex);
        fprintf(stderr, "eval of <%s> threw: %s\n", src, s ? s : "?");
        JS_FreeCString(ctx, s);
        JS_FreeValue(ctx, ex);
        fail();
    }
    return v;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->rt = JS_NewRuntime();
    assert_non_null(f->rt);
    f->ctx = JS_NewContext(f->rt);
    assert_non_null(f->ctx);
    JS_FreeValue(f->ctx, eval(f->ctx, deep_equal_src));
    struct al_error err = { 0 };
    assert_int_equal(value_cache_new(f->ctx, &f->cache, &err), AL_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    value_cache_free(f->cache);
    JS_FreeContext(f->ctx);
    JS_FreeRuntime(f->rt); /* asserts that nothing leaked */
    free(f);
    return 0;
}

/* Encodes the value of `src`; returns the malloc'd text (NULL and *ret_rc on failure). */
static char *encode_src(struct fixture *f, const char *src, const char *root,
                        const struct value_limits *lim, enum al_code *ret_rc, struct al_error *err)
{
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    JSValue v = eval(f->ctx, src);
    enum al_code rc = value_encode_cached(f->cache, v, root, lim, &b, err);
    JS_FreeValue(f->ctx, v);
    *ret_rc = rc;
    if (rc != AL_OK) {
        buf_done(&b);
        return NULL;
    }
    if (!b.data) {
        return strdup("");
    }
    return buf_steal(&b, NULL);
}

static void expect_encoding(struct fixture *f, const char *src, const char *want)
{
    struct al_error err = { 0 };
    enum al_code rc;
    char *got = encode_src(f, src, "value", &big_limits, &rc, &err);
    if (rc != AL_OK) {
        fail_msg("encoding %s failed: %s", src, err.message);
    }
    if (strcmp(got, want) != 0) {
        fail_msg("encoding %s:\n got  %s\n want %s", src, got, want);
    }
    free(got);
}

/* The encoding must be byte-identical to the engine's JSON.stringify. */
static void expect_stringify(struct fixture *f, const char *src)
{
    char *expr = malloc(strlen(src) + 32);
    assert_non_null(expr);
    snprintf(expr, strlen(src) + 32, "JSON.stringify(%s)", src);
    JSValue s = eval(f->ctx, expr);
    const char *want = JS_ToCString(f->ctx, s);
    assert_non_null(want);
    expect_encoding(f, src, want);
    JS_FreeCString(f->ctx, want);
    JS_FreeValue(f->ctx, s);
    free(expr);
}

static JSValue decode_text(struct fixture *f, const char *text, const struct value_limits *lim)
{
    struct al_error err = { 0 };
    JSValue v = JS_UNDEFINED;
    enum al_code rc = value_decode_cached(f->cache, text, strlen(text), lim, &v, &err);
    if (rc != AL_OK) {
        fail_msg("decoding %s failed: %s", text, err.message);
    }
    return v;
}

static int js_true(struct fixture *f, JSValueConst fn_args_holder, const char *fn_src)
{
    JSValue fn = eval(f->ctx, fn_src);
    JSValue r = JS_Call(f->ctx, fn, JS_UNDEFINED, 1, &fn_args_holder);
    if (JS_IsException(r)) {
        JSValue ex = JS_GetException(f->ctx);
        const char *s = JS_ToCString(f->ctx, ex);
        fprintf(stderr, "check threw: %s\n", s ? s : "?");
        JS_FreeCString(f->ctx, s);
        JS_FreeValue(f->ctx, ex);
    }
    int ok = JS_IsBool(r) && JS_VALUE_GET_BOOL(r);
    JS_FreeValue(f->ctx, r);
    JS_FreeValue(f->ctx, fn);
    return ok;
}

/* encode -> decode -> deepEqual, and the re-encoding is identical. Returns the decoded value
 * (owned) when keep is set. */
static JSValue roundtrip_keep(struct fixture *f, const char *src, int keep)
{
    struct al_error err = { 0 };
    enum al_code rc;
    JSValue v = eval(f->ctx, src);
    struct buf b, b2;
    buf_init(&b, SIZE_MAX / 2);
    buf_init(&b2, SIZE_MAX / 2);
    rc = value_encode_cached(f->cache, v, "value", &big_limits, &b, &err);
    if (rc != AL_OK) {
        fail_msg("encoding %s failed: %s", src, err.message);
    }
    JSValue d = decode_text(f, b.data, &big_limits);
    JSValue eq = eval(f->ctx, "deepEqual");
    JSValue args[2] = { v, d };
    JSValue r = JS_Call(f->ctx, eq, JS_UNDEFINED, 2, args);
    JS_FreeValue(f->ctx, eq);
    if (!JS_IsBool(r) || !JS_VALUE_GET_BOOL(r)) {
        fail_msg("round trip of %s is not deep-equal (encoding %s)", src, b.data);
    }
    rc = value_encode_cached(f->cache, d, "value", &big_limits, &b2, &err);
    assert_int_equal(rc, AL_OK);
    if (strcmp(b.data, b2.data) != 0) {
        fail_msg("re-encoding of %s differs:\n %s\n %s", src, b.data, b2.data);
    }
    buf_done(&b);
    buf_done(&b2);
    JS_FreeValue(f->ctx, v);
    if (!keep) {
        JS_FreeValue(f->ctx, d);
        return JS_UNDEFINED;
    }
    return d;
}

static void roundtrip(struct fixture *f, const char *src)
{
    roundtrip_keep(f, src, 0);
}

static void expect_encode_error(struct fixture *f, const char *src, const char *root,
                                const struct value_limits *lim, enum al_code code, const char *msg)
{
    struct al_error err = { 0 };
    enum al_code rc;
    char *got = encode_src(f, src, root, lim, &rc, &err);
    if (rc != code) {
        fail_msg("encoding %s: got code %d (%s), want %d", src, (int)rc, got ? got : err.message,
                 (int)code);
    }
    assert_int_equal(err.code, code);
    if (strcmp(err.message, msg) != 0) {
        fail_msg("encoding %s:\n got  <%s>\n want <%s>", src, err.message, msg);
    }
    free(got);
}

static void expect_refused(struct fixture *f, const char *src, const char *root, const char *msg)
{
    expect_encode_error(f, src, root, &big_limits, AL_SERIALIZATION_ERROR, msg);
}

static void expect_decode_error(struct fixture *f, const char *text, size_t len,
                                const struct value_limits *lim)
{
    struct al_error err = { 0 };
    JSValue v = JS_UNDEFINED;
    enum al_code rc = value_decode_cached(f->cache, text, len, lim, &v, &err);
    if (rc != AL_SERIALIZATION_ERROR) {
        fail_msg("decoding <%.*s> should fail, got %d", (int)len, text, (int)rc);
    }
    assert_true(JS_IsUndefined(v));
    assert_int_equal(err.code, AL_SERIALIZATION_ERROR);
    assert_true(strncmp(err.message, "offset ", 7) == 0);
    /* nothing left pending */
    JSValue ex = JS_GetException(f->ctx);
    assert_true(JS_IsNull(ex));
}

/* ------------------------------------------------------------------ tests */

static void test_value_json_compatible_matches_stringify(void **state)
{
    struct fixture *f = *state;
    static const char *const corpus[] = {
        "null",
        "true",
        "false",
        "0",
        "-1",
        "2147483647",
        "-2147483648",
        "2147483648",
        "2**53",
        "2**53 + 2",
        "-(2**53)",
        "2**60",
        "1e21",
        "1e20",
        "123456789012345680000",
        "0.1",
        "-1.5e-7",
        "1e-7",
        "0.000001",
        "5e-324",
        "1.7976931348623157e308",
        "0.1 + 0.2",
        "1/3",
        "-123.456",
        "4.35",
        "100",
        "''",
        "'plain'",
        "'quote \" backslash \\\\ slash /'",
        "'\\b\\f\\n\\r\\t\\v\\0\\x01\\x1f\\x7f'",
        "'caf\\u00e9 \\u20ac \\u{1F600} \\u2028\\u2029'",
        "'lone \\ud800 high'",
        "'lone \\udfff low'",
        "'\\udfff\\ud800 reversed'",
        "'\\ud83d\\ude00 pair'",
        "'end\\ud83d'",
        "[]",
        "({})",
        "[1, 'a', null, true, [[[]]], {}]",
        "({a: 1, b: {c: [1, 2, {d: 'e'}]}, 'key with space': 0, '': 1})",
        "({z: 1, 10: 2, a: 3, 2: 4, '-1': 5, '01': 6, 4294967294: 7, 4294967295: 8})",
        "({'\\u00e9': 1, '\\ud800': 2, '\"': 3, '\\n': 4})",
        "JSON.parse('{\"__proto__\": {\"x\": 1}, \"y\": 2}')",
        "Object.assign(Object.create(null), {a: 1})",
        "Object.defineProperty({a: 1}, 'hidden', {value: 2, enumerable: false})",
        "({a: 1, [Symbol('s')]: 2})",
        "(() => { const o = {b: 1, a: 2}; delete o.b; o.b = 3; return o; })()",
        "({get g() { return 42; }})",
        "new Proxy({x: [1, 2]}, {})",
        "new Proxy([1, 2, 3], {})",
        "(function() { return arguments; })(1, 'two')",
        "Array.from({length: 100}, (_, i) => ({id: i, name: 'item' + i, price: i * 1.25}))",
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        expect_stringify(f, corpus[i]);
    }
}

static void test_value_tag_encodings(void **state)
{
    struct fixture *f = *state;
    expect_encoding(f, "undefined", "{\"$type\":\"undefined\"}");
    expect_encoding(f, "[1, undefined]", "[1,{\"$type\":\"undefined\"}]");
    expect_encoding(f, "({a: undefined})", "{\"a\":{\"$type\":\"undefined\"}}");
    expect_encoding(f, "[NaN, Infinity, -Infinity, -0, 0]",
                    "[{\"$type\":\"number\",\"value\":\"NaN\"},"
                    "{\"$type\":\"number\",\"value\":\"Infinity\"},"
                    "{\"$type\":\"number\",\"value\":\"-Infinity\"},"
                    "{\"$type\":\"number\",\"value\":\"-0\"},0]");
    expect_encoding(f, "123n", "{\"$type\":\"bigint\",\"value\":\"123\"}");
    expect_encoding(f, "-(2n**100n)",
                    "{\"$type\":\"bigint\",\"value\":\"-1267650600228229401496703205376\"}");
    expect_encoding(f, "new Date(0)",
                    "{\"$type\":\"date\",\"value\":\"1970-01-01T00:00:00.000Z\"}");
    expect_encoding(f, "new Date(NaN)", "{\"$type\":\"date\",\"value\":null}");
    expect_encoding(f, "/a\\/b[\"]/gi",
                    "{\"$type\":\"regexp\",\"source\":\"a\\\\/b[\\\"]\",\"flags\":\"gi\"}");
    expect_encoding(
            f, "new Map([[1, {a: 1}], ['k', undefined]])",
            "{\"$type\":\"map\",\"entries\":[[1,{\"a\":1}],[\"k\",{\"$type\":\"undefined\"}]]}");
    expect_encoding(f, "new Set([1, 'a'])", "{\"$type\":\"set\",\"values\":[1,\"a\"]}");
    expect_encoding(f, "new Uint8Array([1, 2, 3]).buffer",
                    "{\"$type\":\"arraybuffer\",\"base64\":\"AQID\"}");
    expect_encoding(f, "new ArrayBuffer(0)", "{\"$type\":\"arraybuffer\",\"base64\":\"\"}");
    expect_encoding(f, "new Uint8Array([1, 2, 3])",
                    "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\","
                    "\"base64\":\"AQID\"},\"byteOffset\":0,\"length\":3}");
    expect_encoding(f, "new Int16Array(new Uint8Array([1, 2, 3, 4, 5, 6]).buffer, 2, 1)",
                    "{\"$type\":\"Int16Array\",\"buffer\":{\"$type\":\"arraybuffer\","
                    "\"base64\":\"AQIDBAUG\"},\"byteOffset\":2,\"length\":1}");
    expect_encoding(f, "new DataView(new ArrayBuffer(4), 1, 2)",
                    "{\"$type\":\"DataView\",\"buffer\":{\"$type\":\"arraybuffer\","
                    "\"base64\":\"AAAAAA==\"},\"byteOffset\":1,\"byteLength\":2}");
    expect_encoding(
            f,
            "(() => { const b = new ArrayBuffer(2); return [new Uint8Array(b), "
            "new Int8Array(b, 1)]; })()",
            "[{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\","
            "\"base64\":\"AAA=\"},\"byteOffset\":0,\"length\":2},"
            "{\"$type\":\"Int8Array\",\"buffer\":{\"$type\":\"ref\",\"path\":[0,\"buffer\"]},"
            "\"byteOffset\":1,\"length\":1}]");
    expect_encoding(f, "new TypeError('bad')",
                    "{\"$type\":\"error\",\"name\":\"TypeError\",\"message\":\"bad\"}");
    expect_encoding(f, "(() => { const e = new Error('x'); e.cause = 1; return e; })()",
                    "{\"$type\":\"error\",\"name\":\"Error\",\"message\":\"x\",\"cause\":1}");
    expect_encoding(
            f, "new AggregateError([new RangeError('r')], 'agg')",
            "{\"$type\":\"error\",\"name\":\"AggregateError\",\"message\":\"agg\","
            "\"errors\":[{\"$type\":\"error\",\"name\":\"RangeError\",\"message\":\"r\"}]}");
    expect_encoding(f, "[1, , 3]",
                    "{\"$type\":\"array\",\"length\":3,\"items\":{\"0\":1,\"2\":3}}");
    expect_encoding(f, "new Array(5)", "{\"$type\":\"array\",\"length\":5,\"items\":{}}");
    expect_encoding(f, "(() => { const a = []; a[4294967294] = 'x'; return a; })()",
                    "{\"$type\":\"array\",\"length\":4294967295,"
                    "\"items\":{\"4294967294\":\"x\"}}");
    expect_encoding(f, "(() => { const a = {}; a.self = a; return a; })()",
                    "{\"self\":{\"$type\":\"ref\",\"path\":[]}}");
    expect_encoding(f, "(() => { const s = {n: 1}; return {a: [s], 'b c': {d: s}, e: s}; })()",
                    "{\"a\":[{\"n\":1}],\"b c\":{\"d\":{\"$type\":\"ref\",\"path\":[\"a\",0]}},"
                    "\"e\":{\"$type\":\"ref\",\"path\":[\"a\",0]}}");
    expect_encoding(f, "({$type: 'date', value: 1})",
                    "{\"$type\":\"object\",\"value\":{\"$type\":\"date\",\"value\":1}}");
    expect_encoding(f, "(() => { const o = {$type: 1}; return [o, o]; })()",
                    "[{\"$type\":\"object\",\"value\":{\"$type\":1}},"
                    "{\"$type\":\"ref\",\"path\":[0]}]");
    expect_encoding(f, "(() => { const o = {}; const m = new Map([[o, o]]); return [m, o]; })()",
                    "[{\"$type\":\"map\",\"entries\":[[{},{\"$type\":\"ref\",\"path\":"
                    "[0,\"entries\",0,0]}]]},{\"$type\":\"ref\",\"path\":[0,\"entries\",0,0]}]");
    expect_encoding(f, "(() => { const o = {}; const a = [1, , o]; return [a, o]; })()",
                    "[{\"$type\":\"array\",\"length\":3,\"items\":{\"0\":1,\"2\":{}}},"
                    "{\"$type\":\"ref\",\"path\":[0,\"items\",\"2\"]}]");
    expect_encoding(f, "(() => { const o = {}; return [{$type: 0, o}, o]; })()",
                    "[{\"$type\":\"object\",\"value\":{\"$type\":0,\"o\":{}}},"
                    "{\"$type\":\"ref\",\"path\":[0,\"value\",\"o\"]}]");
    /* the engine class decides, not the prototype */
    expect_encoding(f, "Object.setPrototypeOf(new Map([[1, 2]]), Object.prototype)",
                    "{\"$type\":\"map\",\"entries\":[[1,2]]}");
    expect_encoding(f, "Object.setPrototypeOf(new Date(0), null)", "{}"); /* see docs */
    expect_encoding(f, "Object.setPrototypeOf(new Date(0), Date.prototype)",
                    "{\"$type\":\"date\",\"value\":\"1970-01-01T00:00:00.000Z\"}");
    expect_encoding(f, "new (class D extends Date {})(0)",
                    "{\"$type\":\"date\",\"value\":\"1970-01-01T00:00:00.000Z\"}");
    expect_encoding(f, "new (class A extends Array {})(1, 2)", "[1,2]");
    expect_encoding(f, "(() => { const d = new Date(5); return {d, e: d}; })()",
                    "{\"d\":{\"$type\":\"date\",\"value\":\"1970-01-01T00:00:00.005Z\"},"
                    "\"e\":{\"$type\":\"ref\",\"path\":[\"d\"]}}");
}

static void test_value_roundtrip_every_type(void **state)
{
    struct fixture *f = *state;
    static const char *const corpus[] = {
        "undefined",
        "[1, undefined]",
        "[undefined, undefined, undefined]",
        "({a: undefined, b: 1})",
        "NaN",
        "Infinity",
        "-Infinity",
        "-0",
        "[-0, 0, NaN]",
        "0n",
        "-5n",
        "2n ** 200n",
        "new Date(0)",
        "new Date(1700000000123)",
        "new Date(-62198755200000)",
        "new Date(8.64e15)",
        "new Date(-8.64e15)",
        "new Date(NaN)",
        "/x/",
        "/a\\/b\\n[\\]]+$/gimsuy",
        "new RegExp('')",
        "new RegExp('/', 'g')",
        "new Map()",
        "new Map([[1, 'a'], ['1', 'b'], [{k: 1}, [2]], [NaN, -0], [undefined, null]])",
        "new Map([[new Map([[1, 2]]), new Set([3])]])",
        "new Set()",
        "new Set([1, '1', {}, [], -0, 2n])",
        "new ArrayBuffer(0)",
        "new Uint8Array([0, 1, 2, 254, 255]).buffer",
        "new Uint8Array(1000).map((_, i) => i * 7)",
        "new Int8Array([-128, 127, 0])",
        "new Uint8ClampedArray([0, 255])",
        "new Int16Array([-32768, 32767])",
        "new Uint16Array([65535])",
        "new Int32Array([-1, 2147483647])",
        "new Uint32Array([4294967295])",
        "new Float32Array([1.5, -0, NaN, Infinity])",
        "new Float64Array([Math.PI, -0, NaN])",
        "new BigInt64Array([-(2n ** 63n), 1n])",
        "new BigUint64Array([2n ** 64n - 1n])",
        "new DataView(new ArrayBuffer(16), 4, 8)",
        "new Uint16Array(new ArrayBuffer(10), 2, 3)",
        "new Uint8Array(new ArrayBuffer(10), 10)",
        "(() => { const b = new ArrayBuffer(16); new Uint8Array(b).fill(7); "
        "return [new Uint8Array(b, 2, 4), new DataView(b), new Float64Array(b, 8), b]; })()",
        "new Error('plain')",
        "new Error()",
        "new TypeError('t')",
        "new RangeError('r')",
        "new SyntaxError('s')",
        "new ReferenceError('r')",
        "new EvalError('e')",
        "new URIError('u')",
        "new InternalError('i')",
        "(() => { const e = new Error('custom'); e.name = 'MyError'; return e; })()",
        "(() => { const e = new Error('c'); e.cause = new TypeError('root'); return e; })()",
        "(() => { const e = new Error('c'); e.cause = undefined; return e; })()",
        "new AggregateError([new Error('a'), 1, undefined], 'many')",
        "(() => { const e = new Error('loop'); e.cause = e; return e; })()",
        "[1, , 3]",
        "[, , ]",
        "new Array(10)",
        "(() => { const a = [1, 2, 3]; delete a[1]; return a; })()",
        "(() => { const a = []; a[1e6] = 1; return a; })()",
        "(() => { const a = {}; a.self = a; return a; })()",
        "(() => { const a = [1]; a.push(a); return a; })()",
        "(() => { const a = {}, b = {a}; a.b = b; return [a, b]; })()",
        "(() => { const s = {n: 1}; return {x: s, y: [s, s], z: new Map([[s, s]])}; })()",
        "(() => { const m = new Map(); m.set(m, m); return m; })()",
        "(() => { const s = new Set(); s.add(s); return s; })()",
        "(() => { const d = new Date(1); const r = /r/; return [d, r, d, r]; })()",
        "(() => { const u = new Uint8Array(2); return [u, u, u.buffer]; })()",
        "({$type: 'undefined'})",
        "({$type: 'ref', path: []})",
        "({$type: {$type: 'number', value: 'NaN'}, value: 1})",
        "[{$type: 1}, {nested: {$type: null}}]",
        "JSON.parse('{\"__proto__\": {\"polluted\": true}}')",
        "Object.assign(Object.create(null), {a: 1, b: [Object.create(null)]})",
        "({a: '\\ud800', b: '\\udc00\\ud800', '\\ud83d': 1})",
        "({'': {'': ''}})",
        "({1: 'a', b: 'b', 0: 'c'})",
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        roundtrip(f, corpus[i]);
    }
}

static void test_value_roundtrip_identity(void **state)
{
    struct fixture *f = *state;
    JSValue d = roundtrip_keep(f,
                               "(() => { const b = new ArrayBuffer(8); const s = {}; "
                               "return [new Uint8Array(b), new DataView(b, 2), s, {s}, b]; })()",
                               1);
    assert_true(js_true(f, d,
                        "(r) => r[0].buffer === r[1].buffer && r[1].buffer === r[4] && "
                        "r[3].s === r[2] && r[1].byteOffset === 2"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "(() => { const a = {}; a.self = a; a.list = [a]; return a; })()", 1);
    assert_true(js_true(f, d, "(a) => a.self === a && a.list[0] === a"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "new Map([[1, new Set([2])]])", 1);
    assert_true(js_true(f, d,
                        "(m) => Object.getPrototypeOf(m) === Map.prototype && m instanceof Map "
                        "&& m.get(1) instanceof Set && m.get(1).has(2)"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "[new TypeError('t'), new AggregateError([], 'a'), new Date(3)]", 1);
    assert_true(js_true(f, d,
                        "(r) => r[0] instanceof TypeError && r[1] instanceof AggregateError && "
                        "Array.isArray(r[1].errors) && r[2] instanceof Date && "
                        "!Object.keys(r[0]).length"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "(() => { const e = new Error('m'); e.name = 'Custom'; return e; })()",
                       1);
    assert_true(js_true(f, d,
                        "(e) => Object.getPrototypeOf(e) === Error.prototype && "
                        "e.name === 'Custom' && String(e) === 'Custom: m'"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "[1, , 3, , ]", 1);
    assert_true(js_true(f, d, "(a) => a.length === 4 && !(1 in a) && !(3 in a) && 2 in a"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "[-0, NaN, undefined]", 1);
    assert_true(js_true(f, d,
                        "(a) => Object.is(a[0], -0) && Number.isNaN(a[1]) && a.length === 3 && "
                        "2 in a && a[2] === undefined"));
    JS_FreeValue(f->ctx, d);

    d = roundtrip_keep(f, "({a: undefined})", 1);
    assert_true(js_true(f, d, "(o) => 'a' in o && o.a === undefined"));
    JS_FreeValue(f->ctx, d);
}

static void test_value_proto_keys_do_not_pollute(void **state)
{
    struct fixture *f = *state;
    const char *texts[] = {
        "{\"__proto__\":{\"polluted\":1}}",
        "{\"a\":{\"__proto__\":{\"polluted\":1}}}",
        "{\"$type\":\"object\",\"value\":{\"__proto__\":{\"polluted\":1},\"$type\":2}}",
        "{\"$type\":\"map\",\"entries\":[[\"__proto__\",{\"__proto__\":{\"polluted\":1}}]]}",
        "[{\"constructor\":{\"prototype\":{\"polluted\":1}}}]",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        JSValue v = decode_text(f, texts[i], &big_limits);
        assert_true(js_true(f, v,
                            "(v) => ({}).polluted === undefined && "
                            "Object.prototype.polluted === undefined && "
                            "(Array.isArray(v) || v instanceof Map || "
                            "Object.getPrototypeOf(v) === Object.prototype)"));
        JS_FreeValue(f->ctx, v);
    }
    JSValue v = decode_text(f, texts[0], &big_limits);
    assert_true(js_true(f, v,
                        "(v) => Object.getOwnPropertyNames(v).join() === '__proto__' && "
                        "v.__proto__ === Object.prototype.__proto__ ? false : "
                        "Object.getOwnPropertyDescriptor(v, '__proto__').value.polluted === 1"));
    JS_FreeValue(f->ctx, v);
}

static void test_value_refusals_name_the_path(void **state)
{
    struct fixture *f = *state;
    expect_refused(f, "({items: [0, 1, 2, {fn() {}}]})", "value",
                   "cannot serialize function at value.items[3].fn");
    expect_refused(f, "[1, Symbol('s')]", "args", "cannot serialize symbol at args[1]");
    expect_refused(f, "() => 1", "value", "cannot serialize function at value");
    expect_refused(f, "({a: {'b c': {'0x': Math.max}}})", "args[1].x",
                   "cannot serialize function at args[1].x.a[\"b c\"][\"0x\"]");
    expect_refused(f, "Promise.resolve(1)", "value", "cannot serialize Promise at value");
    expect_refused(f, "new WeakMap()", "value", "cannot serialize WeakMap at value");
    expect_refused(f, "({w: new WeakSet()})", "value", "cannot serialize WeakSet at value.w");
    expect_refused(f, "new (class Foo {})()", "value", "cannot serialize instance of Foo at value");
    expect_refused(f, "({x: new Number(1)})", "value",
                   "cannot serialize instance of Number at value.x");
    expect_refused(f, "Object.create(Date.prototype)", "value",
                   "cannot serialize instance of Date at value");
    expect_refused(f, "Object.create(Object.create(null))", "value",
                   "cannot serialize class instance at value");
    expect_refused(f, "(function* () {})()", "value", "cannot serialize class instance at value");
    expect_refused(f, "new Map([['k', () => 1]])", "value",
                   "cannot serialize function at value.entries[0][1]");
    expect_refused(f, "new Map([[Symbol(), 1]])", "value",
                   "cannot serialize symbol at value.entries[0][0]");
    expect_refused(f, "new Set([1, Symbol()])", "value",
                   "cannot serialize symbol at value.values[1]");
    expect_refused(f, "[1, , () => 1]", "value", "cannot serialize function at value[2]");
    expect_refused(f, "({$type: 'x', f: Symbol()})", "value", "cannot serialize symbol at value.f");
    expect_refused(f, "(() => { const e = new Error(); e.cause = {s: Symbol()}; return e; })()",
                   "value", "cannot serialize symbol at value.cause.s");
    expect_refused(f, "new AggregateError([1, Symbol()])", "value",
                   "cannot serialize symbol at value.errors[1]");
    expect_refused(f, "({toJSON() { return 1; }})", "value",
                   "cannot serialize function at value.toJSON");
    expect_refused(f, "new Proxy(function () {}, {})", "value",
                   "cannot serialize function at value");
    expect_refused(f, "({'\\u00e9\\n': Symbol()})", "value",
                   "cannot serialize symbol at value[\"\xc3\xa9\\n\"]");
}

static void test_value_getter_throws_is_user_error(void **state)
{
    struct fixture *f = *state;
    expect_encode_error(f, "({ok: 1, get bad() { throw new RangeError('boom'); }})", "value",
                        &big_limits, AL_USER_ERROR,
                        "exception while reading the value at value.bad");
    JSValue ex = JS_GetException(f->ctx);
    assert_true(JS_IsError(f->ctx, ex));
    const char *s = JS_ToCString(f->ctx, ex);
    assert_string_equal(s, "RangeError: boom");
    JS_FreeCString(f->ctx, s);
    JS_FreeValue(f->ctx, ex);

    expect_encode_error(f, "[new Proxy({}, {ownKeys() { throw 1; }})]", "value", &big_limits,
                        AL_USER_ERROR, "exception while reading the value at value[0]");
    JS_FreeValue(f->ctx, JS_GetException(f->ctx));

    expect_encode_error(f,
                        "(() => { const r = Proxy.revocable({}, {}); r.revoke(); "
                        "return {p: r.proxy}; })()",
                        "value", &big_limits, AL_USER_ERROR,
                        "exception while reading the value at value.p");
    JS_FreeValue(f->ctx, JS_GetException(f->ctx));

    expect_encode_error(f,
                        "[0, (() => { const a = [1, 2]; Object.defineProperty(a, 1, "
                        "{get() { throw 2; }}); return a; })()]",
                        "value", &big_limits, AL_USER_ERROR,
                        "exception while reading the value at value[1][1]");
    JS_FreeValue(f->ctx, JS_GetException(f->ctx));
}

/* A getter that returns a fresh object each time must not be mistaken for a shared one. */
static void test_value_fresh_objects_are_not_refs(void **state)
{
    struct fixture *f = *state;
    expect_encoding(f,
                    "({get a() { return {x: 1}; }, get b() { return {x: 1}; }, "
                    "get c() { return {x: 1}; }})",
                    "{\"a\":{\"x\":1},\"b\":{\"x\":1},\"c\":{\"x\":1}}");
}

static void test_value_depth_limit(void **state)
{
    struct fixture *f = *state;
    struct value_limits lim = { .max_depth = 2, .max_bytes = 1 << 20 };
    struct al_error err = { 0 };
    enum al_code rc;
    char *s = encode_src(f, "[[1], {a: 1}]", "value", &lim, &rc, &err);
    assert_int_equal(rc, AL_OK);
    assert_string_equal(s, "[[1],{\"a\":1}]");
    free(s);
    expect_encode_error(f, "[[1], {a: {b: {}}}]", "value", &lim, AL_SERIALIZATION_ERROR,
                        "nesting deeper than 2 at value[1].a");
    expect_encode_error(f, "[[[1]]]", "value", &lim, AL_SERIALIZATION_ERROR,
                        "nesting deeper than 2 at value[0][0]");
    expect_encode_error(f, "new Map([[1, new Set([[]])]])", "value", &lim, AL_SERIALIZATION_ERROR,
                        "nesting deeper than 2 at value.entries[0][1].values[0]");
    /* leaves (Date, RegExp, buffers, views) and tags do not add levels */
    s = encode_src(
            f, "[[new Date(0), /x/, new Uint8Array(1), new DataView(new ArrayBuffer(1)), 1n, NaN]]",
            "value", &lim, &rc, &err);
    assert_int_equal(rc, AL_OK);
    free(s);
    lim.max_depth = 0;
    s = encode_src(f, "'scalar'", "value", &lim, &rc, &err);
    assert_int_equal(rc, AL_OK);
    free(s);
    expect_encode_error(f, "({})", "value", &lim, AL_SERIALIZATION_ERROR,
                        "nesting deeper than 0 at value");
    /* cycles are references, not infinite depth */
    lim.max_depth = 1;
    s = encode_src(f, "(() => { const a = []; a.push(a, a); return a; })()", "value", &lim, &rc,
                   &err);
    assert_int_equal(rc, AL_OK);
    assert_string_equal(s, "[{\"$type\":\"ref\",\"path\":[]},{\"$type\":\"ref\",\"path\":[]}]");
    free(s);

    /* decode: same counting */
    lim.max_depth = 2;
    JSValue v = decode_text(f, "[[1],{\"a\":1},{\"$type\":\"map\",\"entries\":[[1,2]]}]", &lim);
    JS_FreeValue(f->ctx, v);
    const char *too_deep[] = {
        "[[[1]]]",
        "{\"a\":{\"b\":{}}}",
        "[{\"$type\":\"map\",\"entries\":[[1,[]]]}]",
        "[{\"$type\":\"object\",\"value\":{\"$type\":{}}}]",
        "[{\"$type\":\"array\",\"length\":1,\"items\":{\"0\":[]}}]",
        "[{\"$type\":\"error\",\"name\":\"Error\",\"message\":\"\",\"cause\":[]}]",
    };
    for (size_t i = 0; i < sizeof too_deep / sizeof too_deep[0]; i++) {
        expect_decode_error(f, too_deep[i], strlen(too_deep[i]), &lim);
    }
    err.message[0] = '\0';
    v = JS_UNDEFINED;
    rc = value_decode_cached(f->cache, "[[[1]]]", 7, &lim, &v, &err);
    assert_int_equal(rc, AL_SERIALIZATION_ERROR);
    assert_string_equal(err.message, "offset 2: nesting deeper than 2");

    /* a very deep guest value is refused, not a crash */
    lim.max_depth = 1000;
    expect_encode_error(f,
                        "(() => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; "
                        "return a; })()",
                        "v", &lim, AL_SERIALIZATION_ERROR,
                        "nesting deeper than 1000 at v"
                        "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                        "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                        "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]...");
}

static void test_value_size_limit_exact(void **state)
{
    struct fixture *f = *state;
    static const char *const corpus[] = {
        "({orders: Array.from({length: 50}, (_, i) => ({id: i, s: 'x'.repeat(i)}))})",
        "'\\n\\u0001\\ud800'",
        "new Uint8Array(100)",
        "[NaN, 1n, new Date(0), /x/g, undefined]",
        "(() => { const a = {}; a.b = [a, a]; return a; })()",
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        struct al_error err = { 0 };
        enum al_code rc;
        char *full = encode_src(f, corpus[i], "value", &big_limits, &rc, &err);
        assert_int_equal(rc, AL_OK);
        size_t n = strlen(full);
        struct value_limits lim = { .max_depth = 64, .max_bytes = n };
        char *again = encode_src(f, corpus[i], "value", &lim, &rc, &err);
        assert_int_equal(rc, AL_OK);
        assert_string_equal(again, full);
        free(again);
        lim.max_bytes = n - 1;
        again = encode_src(f, corpus[i], "value", &lim, &rc, &err);
        assert_int_equal(rc, AL_OUTPUT_LIMIT);
        assert_null(again);
        char want[64];
        snprintf(want, sizeof want, "encoded value larger than %zu bytes at ", n - 1);
        assert_true(strncmp(err.message, want, strlen(want)) == 0);

        /* appending: the limit counts this call's bytes only */
        struct buf b;
        buf_init(&b, SIZE_MAX / 2);
        assert_int_equal(buf_append_str(&b, "prefix:"), BUF_OK);
        lim.max_bytes = n;
        JSValue v = eval(f->ctx, corpus[i]);
        assert_int_equal(value_encode_cached(f->cache, v, "value", &lim, &b, &err), AL_OK);
        assert_string_equal(b.data + 7, full);
        assert_int_equal(b.max, SIZE_MAX / 2); /* restored */
        /* the buffer's own cap counts too */
        buf_reset(&b);
        b.max = n - 1;
        lim.max_bytes = n + 100;
        rc = value_encode_cached(f->cache, v, "value", &lim, &b, &err);
        if (rc != AL_OUTPUT_LIMIT) {
            fail_msg("%s: cap %zu, got %d <%s>", corpus[i], b.max, (int)rc, b.data);
        }
        assert_int_equal(b.max, n - 1);
        JS_FreeValue(f->ctx, v);
        buf_done(&b);
        free(full);
    }
}

static void test_value_decode_host_json(void **state)
{
    struct fixture *f = *state;
    const char *text = " {\"b\":1,\"a\":[true,false,null,\"x\\u00e9\\ud83d\\ude00\",-0.5e-3,"
                       "1e400,{}],\"\":{\"0\":0},\"10\":\"ten\",\"2\":\"two\"} ";
    JSValue v = decode_text(f, text, &big_limits);
    assert_true(js_true(f, v,
                        "(v) => JSON.stringify(v) === '{\"2\":\"two\",\"10\":\"ten\",\"b\":1,"
                        "\"a\":[true,false,null,\"x\\u00e9\\ud83d\\ude00\",-0.0005,null,{}],"
                        "\"\":{\"0\":0}}' && v.a[5] === Infinity"));
    JS_FreeValue(f->ctx, v);
    v = decode_text(f, "-0", &big_limits);
    assert_true(js_true(f, v, "(v) => Object.is(v, -0)"));
    JS_FreeValue(f->ctx, v);
    v = decode_text(f, "\"lone \\udc00 \\u0000\"", &big_limits);
    assert_true(js_true(f, v, "(v) => v === 'lone \\udc00 \\u0000' && v.length === 8"));
    JS_FreeValue(f->ctx, v);
    v = decode_text(f, "{\"\xc3\xa9\":1,\"\xc3\x83\xc2\xa9\":2}", &big_limits);
    assert_true(js_true(f, v, "(v) => v['\\u00e9'] === 1 && v['\\u00c3\\u00a9'] === 2"));
    JS_FreeValue(f->ctx, v);
    /* duplicate keys: the last wins, as in JSON.parse */
    v = decode_text(f, "{\"a\":1,\"a\":2}", &big_limits);
    assert_true(js_true(f, v, "(v) => v.a === 2 && Object.keys(v).length === 1"));
    JS_FreeValue(f->ctx, v);
    /* a tag written by a host */
    v = decode_text(f,
                    "{\"when\":{\"$type\":\"date\",\"value\":\"2024-02-29T12:00:00Z\"},"
                    "\"big\":{\"$type\":\"bigint\",\"value\":\"-12345678901234567890\"}}",
                    &big_limits);
    assert_true(js_true(f, v,
                        "(v) => v.when.getTime() === Date.UTC(2024, 1, 29, 12) && "
                        "v.big === -12345678901234567890n"));
    JS_FreeValue(f->ctx, v);
}

static void test_value_decode_rejects_malformed(void **state)
{
    struct fixture *f = *state;
    static const char *const bad[] = {
        "",
        "[1,",
        "{\"a\":1",
        "\"\\q\"",
        "\"\xff\"",
        "\"\xed\xa0\x80\"",
        "[1] [2]",
        "{\"$type\":\"nope\"}",
        "{\"$type\":1}",
        "{\"$type\":null}",
        "{\"$type\":\"undefined\",\"extra\":1}",
        "{\"$type\":\"undefined\",\"$type\":\"undefined\"}",
        "{\"$type\":\"number\"}",
        "{\"$type\":\"number\",\"value\":\"nan\"}",
        "{\"$type\":\"number\",\"value\":1}",
        "{\"$type\":\"bigint\",\"value\":\"0x10\"}",
        "{\"$type\":\"bigint\",\"value\":\"\"}",
        "{\"$type\":\"bigint\",\"value\":\"-\"}",
        "{\"$type\":\"bigint\",\"value\":\"01\"}",
        "{\"$type\":\"bigint\",\"value\":\" 1\"}",
        "{\"$type\":\"bigint\",\"value\":12}",
        "{\"$type\":\"date\",\"value\":\"not a date\"}",
        "{\"$type\":\"date\",\"value\":0}",
        "{\"$type\":\"date\"}",
        "{\"$type\":\"regexp\",\"source\":\"(\",\"flags\":\"\"}",
        "{\"$type\":\"regexp\",\"source\":\"a\",\"flags\":\"zz\"}",
        "{\"$type\":\"regexp\",\"source\":\"a\"}",
        "{\"$type\":\"map\",\"entries\":[[1]]}",
        "{\"$type\":\"map\",\"entries\":[1]}",
        "{\"$type\":\"map\",\"entries\":{}}",
        "{\"$type\":\"set\",\"values\":1}",
        "{\"$type\":\"arraybuffer\",\"base64\":\"AQI\"}",
        "{\"$type\":\"arraybuffer\",\"base64\":\"A===\"}",
        "{\"$type\":\"arraybuffer\",\"base64\":\"AQ=A\"}",
        "{\"$type\":\"arraybuffer\",\"base64\":\"AQ==AQ==\"}",
        "{\"$type\":\"arraybuffer\",\"base64\":\"*AAA\"}",
        "{\"$type\":\"arraybuffer\",\"base64\":null}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":0,\"length\":4}",
        "{\"$type\":\"Uint16Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":1,\"length\":1}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":4,\"length\":1}",
        "{\"$type\":\"Float64Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":0,\"length\":1e300}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":-1,\"length\":1}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAAA\"},"
        "\"byteOffset\":0.5,\"length\":1}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{},\"byteOffset\":0,\"length\":0}",
        "{\"$type\":\"Uint8Array\",\"buffer\":[],\"byteOffset\":0,\"length\":0}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"date\",\"value\":null},"
        "\"byteOffset\":0,\"length\":0}",
        "{\"$type\":\"DataView\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"\"},"
        "\"byteOffset\":0,\"byteLength\":1}",
        "{\"$type\":\"DataView\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"\"},"
        "\"byteOffset\":0,\"length\":0}",
        "{\"$type\":\"error\",\"name\":\"Error\"}",
        "{\"$type\":\"error\",\"name\":1,\"message\":\"\"}",
        "{\"$type\":\"error\",\"name\":\"Error\",\"message\":\"\",\"stack\":\"\"}",
        "{\"$type\":\"array\",\"length\":2,\"items\":{\"2\":1}}",
        "{\"$type\":\"array\",\"length\":2,\"items\":{\"01\":1}}",
        "{\"$type\":\"array\",\"length\":2,\"items\":{\"-1\":1}}",
        "{\"$type\":\"array\",\"length\":-1,\"items\":{}}",
        "{\"$type\":\"array\",\"length\":4294967296,\"items\":{}}",
        "{\"$type\":\"array\",\"length\":1.5,\"items\":{}}",
        "{\"$type\":\"array\",\"length\":1,\"items\":[]}",
        "{\"$type\":\"ref\",\"path\":[]}",
        "{\"$type\":\"ref\",\"path\":\"\"}",
        "{\"$type\":\"ref\"}",
        "[{\"$type\":\"ref\",\"path\":[1]},{}]",
        "[{},{\"$type\":\"ref\",\"path\":[\"0\"]}]",
        "[{},{\"$type\":\"ref\",\"path\":[0.5]}]",
        "[{},{\"$type\":\"ref\",\"path\":[-1]}]",
        "[{},{\"$type\":\"ref\",\"path\":[2]}]",
        "[1,{\"$type\":\"ref\",\"path\":[0]}]",
        "[\"s\",{\"$type\":\"ref\",\"path\":[0]}]",
        "[{\"$type\":\"bigint\",\"value\":\"1\"},{\"$type\":\"ref\",\"path\":[0]}]",
        "[{\"$type\":\"undefined\"},{\"$type\":\"ref\",\"path\":[0]}]",
        "{\"a\":{\"$type\":\"ref\",\"path\":[\"b\"]},\"b\":{}}",
        "{\"a\":{},\"b\":{\"$type\":\"ref\",\"path\":[\"a\",\"x\"]}}",
        "[{\"$type\":\"map\",\"entries\":[]},{\"$type\":\"ref\",\"path\":[0,\"entries\"]}]",
        "[{\"$type\":\"ref\",\"path\":[1]},{\"$type\":\"ref\",\"path\":[0]}]",
        "{\"$type\":\"object\",\"value\":[]}",
        "{\"$type\":\"object\"}",
        "{\"$type\":\"Int8Array\"}",
        "{\"$type\":\"uint8array\",\"buffer\":null,\"byteOffset\":0,\"length\":0}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_decode_error(f, bad[i], strlen(bad[i]), &big_limits);
    }
    /* truncations of a valid document are never valid */
    const char *good = "{\"a\":[1,{\"$type\":\"map\",\"entries\":[[{\"$type\":\"date\","
                       "\"value\":null},{\"$type\":\"ref\",\"path\":[\"a\",1]}]]}],"
                       "\"s\":\"\\u00e9\\ud83d\\ude00\"}";
    JSValue v = decode_text(f, good, &big_limits);
    JS_FreeValue(f->ctx, v);
    for (size_t n = 0; n < strlen(good); n++) {
        expect_decode_error(f, good, n, &big_limits);
    }
    /* deep nesting stops at the JSON bound without recursion trouble */
    size_t n = 200000;
    char *deep = malloc(n);
    assert_non_null(deep);
    memset(deep, '[', n);
    expect_decode_error(f, deep, n, &big_limits);
    for (size_t i = 0; i + 6 <= n; i += 6) {
        memcpy(deep + i, "{\"a\":", 5);
        deep[i + 5] = '[';
    }
    expect_decode_error(f, deep, n, &big_limits);
    free(deep);
}

/* Byte-flip fuzzing of valid documents: whatever happens, no crash, no leak, no pending. */
static void test_value_decode_mutations(void **state)
{
    struct fixture *f = *state;
    const char *seeds[] = {
        "{\"a\":[1,{\"$type\":\"map\",\"entries\":[[{\"$type\":\"date\",\"value\":null},"
        "{\"$type\":\"ref\",\"path\":[\"a\",1]}]]}],\"s\":\"x\"}",
        "[{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AAECAw==\"},"
        "\"byteOffset\":1,\"length\":2},{\"$type\":\"ref\",\"path\":[0,\"buffer\"]}]",
        "{\"$type\":\"error\",\"name\":\"AggregateError\",\"message\":\"m\",\"errors\":"
        "[{\"$type\":\"array\",\"length\":3,\"items\":{\"1\":{\"$type\":\"bigint\",\"value\":\"7\"}"
        "}}]}",
    };
    const char flips[] = "{}[]\",:0-9$\\ ua";
    uint32_t seed = 12345;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t len = strlen(seeds[s]);
        char *t = malloc(len + 1);
        assert_non_null(t);
        for (int iter = 0; iter < 400; iter++) {
            memcpy(t, seeds[s], len + 1);
            for (int k = 0; k < 1 + iter % 3; k++) {
                seed = seed * 1103515245u + 12345u;
                t[(seed >> 8) % len] = flips[(seed >> 20) % (sizeof flips - 1)];
            }
            struct al_error err = { 0 };
            JSValue v = JS_UNDEFINED;
            enum al_code rc = value_decode_cached(f->cache, t, len, &big_limits, &v, &err);
            assert_true(rc == AL_OK || rc == AL_SERIALIZATION_ERROR);
            JSValue ex = JS_GetException(f->ctx);
            assert_true(JS_IsNull(ex));
            JS_FreeValue(f->ctx, v);
        }
        free(t);
    }
}

static void test_value_uncached_api(void **state)
{
    struct fixture *f = *state;
    struct buf b;
    struct al_error err = { 0 };
    buf_init(&b, 1 << 20);
    JSValue v = eval(f->ctx, "({m: new Map([[1, [2, , 3]]]), d: new Date(0)})");
    assert_int_equal(value_encode(f->ctx, v, "value", &big_limits, &b, &err), AL_OK);
    JSValue d = JS_UNDEFINED;
    assert_int_equal(value_decode(f->ctx, b.data, b.len, &big_limits, &d, &err), AL_OK);
    JSValue eq = eval(f->ctx, "deepEqual");
    JSValue args[2] = { v, d };
    JSValue r = JS_Call(f->ctx, eq, JS_UNDEFINED, 2, args);
    assert_true(JS_IsBool(r) && JS_VALUE_GET_BOOL(r));
    JS_FreeValue(f->ctx, eq);
    JS_FreeValue(f->ctx, v);
    JS_FreeValue(f->ctx, d);
    buf_done(&b);
    assert_int_equal(value_encode(f->ctx, JS_UNDEFINED, "value", NULL, &b, &err), AL_CONFIG_ERROR);
}

/* The guest can change globals; a cache captured before it runs does not see the changes. */
static void test_value_cache_ignores_later_globals(void **state)
{
    struct fixture *f = *state;
    JS_FreeValue(f->ctx, eval(f->ctx, "globalThis.Map = function FakeMap() {}; "
                                      "globalThis.Date = function FakeDate() {}; "
                                      "globalThis.BigInt = () => 0;"));
    JSValue v = decode_text(f,
                            "[{\"$type\":\"map\",\"entries\":[]},"
                            "{\"$type\":\"date\",\"value\":null},"
                            "{\"$type\":\"bigint\",\"value\":\"5\"}]",
                            &big_limits);
    assert_true(js_true(f, v,
                        "(v) => Object.prototype.toString.call(v[0]) === '[object Map]' && "
                        "Object.prototype.toString.call(v[1]) === '[object Date]' && "
                        "v[2] === 5n"));
    JS_FreeValue(f->ctx, v);
}

static void test_value_large_decode_encode(void **state)
{
    struct fixture *f = *state;
    struct buf text;
    buf_init(&text, 1 << 24);
    assert_int_equal(buf_append_str(&text, "{\"orders\":["), BUF_OK);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(buf_printf(&text,
                                    "%s{\"id\":%d,\"customer\":{\"name\":\"C%d\",\"vip\":%s},"
                                    "\"lines\":[{\"sku\":\"S%d\",\"qty\":%d,\"price\":%d.5}],"
                                    "\"note\":null}",
                                    i ? "," : "", i, i % 17, i % 2 ? "true" : "false", i, i % 9, i),
                         BUF_OK);
    }
    assert_int_equal(buf_append_str(&text, "],\"shared\":{\"$type\":\"ref\",\"path\":"
                                           "[\"orders\",999,\"customer\"]}}"),
                     BUF_OK);
    JSValue v = decode_text(f, text.data, &big_limits);
    assert_true(js_true(f, v,
                        "(v) => v.orders.length === 1000 && v.orders[999].lines[0].price === "
                        "999.5 && v.shared === v.orders[999].customer"));
    struct buf out;
    struct al_error err = { 0 };
    buf_init(&out, 1 << 24);
    assert_int_equal(value_encode_cached(f->cache, v, "value", &big_limits, &out, &err), AL_OK);
    assert_string_equal(out.data, text.data);
    JS_FreeValue(f->ctx, v);
    buf_done(&out);
    buf_done(&text);

    /* many references into one big array stay cheap */
    v = eval(f->ctx, "(() => { const a = Array.from({length: 20000}, (_, i) => ({i})); "
                     "return [a, a.map((_, i) => a[19999 - i])]; })()");
    buf_init(&out, 1 << 26);
    assert_int_equal(value_encode_cached(f->cache, v, "value", &big_limits, &out, &err), AL_OK);
    JSValue d = decode_text(f, out.data, &big_limits);
    assert_true(js_true(f, d, "(d) => d[1][0] === d[0][19999] && d[1][19999] === d[0][0]"));
    JS_FreeValue(f->ctx, d);
    JS_FreeValue(f->ctx, v);
    buf_done(&out);
}

/* Plain JSON (no "$type" anywhere) goes through QuickJS's JSON.parse after the strict check; the
 * same text inside an array that also holds a tag goes through the full decoder. Both must
 * build the same value: the same keys in the same order, own "__proto__" keys, the last of
 * duplicate keys, -0, lone surrogates, and numbers rounded alike. */
static void test_value_plain_fast_path_matches_full_decoder(void **state)
{
    struct fixture *f = *state;
    static const char *const texts[] = {
        "{\"b\":1,\"a\":[true,false,null,\"x\\u00e9\\ud83d\\ude00\",-0.5e-3,1e400,{}],"
        "\"\":{\"0\":0},\"10\":\"ten\",\"2\":\"two\"}",
        "{\"__proto__\":{\"polluted\":1},\"a\":{\"__proto__\":[]}}",
        "{\"a\":1,\"b\":2,\"a\":3}",
        "[-0,0,5e-324,1.7976931348623157e308,0.1,1e21,123456789012345678901234567890,-1.5E-7]",
        "[\"lone \\ud800\",\"\\udc00 lone\",\"nul \\u0000 in\",\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
        "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "{\"4294967295\":1,\"4294967294\":2,\"-1\":3,\"01\":4,\"1\":5}",
        "  [ 1 , { \"k\" : \"v\" } ]  ",
        "\"just a string with $ but no tag\"",
        /* what QuickJS's parser alone gets wrong or reads differently: the fast path must
         * leave these to the full decoder */
        "[46116860184273900000,-46116860184273900000,12345678901234567890123]",
        "[{\"\\u0024type\":\"undefined\"},{\"$\\u0074ype\":\"undefined\"}]",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        JSValue fast = decode_text(f, texts[i], &big_limits);
        size_t n = strlen(texts[i]) + 64;
        char *wrapped = malloc(n);
        assert_non_null(wrapped);
        snprintf(wrapped, n, "[%s,{\"$type\":\"undefined\"}]", texts[i]);
        JSValue full = decode_text(f, wrapped, &big_limits);
        JSValue pair = JS_NewArray(f->ctx);
        JS_SetPropertyUint32(f->ctx, pair, 0, fast);
        JS_SetPropertyUint32(f->ctx, pair, 1, JS_GetPropertyUint32(f->ctx, full, 0));
        if (!js_true(f, pair, "(p) => deepEqual(p[0], p[1])")) {
            fail_msg("the fast path and the full decoder disagree on %s", texts[i]);
        }
        JS_FreeValue(f->ctx, pair);
        JS_FreeValue(f->ctx, full);
        free(wrapped);
    }
    /* what QuickJS's parser alone would take, the strict check refuses first */
    static const char *const lax[] = { "\"\\q\"",  "[1,]", "{\"a\":1,}", "'a'",
                                       "\"\xff\"", "[.5]", "[01]",       "\"tab\there\"" };
    for (size_t i = 0; i < sizeof lax / sizeof lax[0]; i++) {
        expect_decode_error(f, lax[i], strlen(lax[i]), &big_limits);
    }
}

/* Out of memory on the fast path: a clean failure saying so, nothing left pending, and the
 * runtime still usable once memory is back. */
static void test_value_plain_decode_out_of_memory(void **state)
{
    struct fixture *f = *state;
    struct buf text;
    buf_init(&text, 1 << 24);
    assert_int_equal(buf_append_str(&text, "["), BUF_OK);
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(buf_printf(&text, "%s{\"id\":%d,\"name\":\"n%d\"}", i ? "," : "", i, i),
                         BUF_OK);
    }
    assert_int_equal(buf_append_str(&text, "]"), BUF_OK);
    JSMemoryUsage mu;
    JS_ComputeMemoryUsage(f->rt, &mu);
    JS_SetMemoryLimit(f->rt, (size_t)mu.malloc_size + (256u << 10));
    struct al_error err = { 0 };
    JSValue v = JS_UNDEFINED;
    enum al_code rc = value_decode_cached(f->cache, text.data, text.len, &big_limits, &v, &err);
    JS_SetMemoryLimit(f->rt, (size_t)-1);
    assert_int_equal(rc, AL_INTERNAL_ERROR);
    assert_non_null(strstr(err.message, "out of memory"));
    assert_true(JS_IsUndefined(v));
    JSValue ex = JS_GetException(f->ctx);
    assert_true(JS_IsNull(ex));
    v = decode_text(f, text.data, &big_limits);
    assert_true(js_true(f, v, "(v) => v.length === 20000 && v[19999].name === 'n19999'"));
    JS_FreeValue(f->ctx, v);
    buf_done(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_value_json_compatible_matches_stringify, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_value_tag_encodings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_roundtrip_every_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_roundtrip_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_proto_keys_do_not_pollute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_refusals_name_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_getter_throws_is_user_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_fresh_objects_are_not_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_depth_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_size_limit_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_decode_host_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_decode_rejects_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_decode_mutations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_uncached_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_cache_ignores_later_globals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_large_decode_encode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_plain_fast_path_matches_full_decoder, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_value_plain_decode_out_of_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
