/*
 * test_tsstrip.c - unit tests for src/tsstrip: exact input -> output pairs for every construct
 * the stripper erases and for the JavaScript it must leave alone, positions, refusals with
 * their LINE:COL, syntax errors, limits, and the TS_TRANSFORM rewrites.
 *
 * Most pairs are written once, as the TypeScript with its erased spans marked: «text» is
 * erased to spaces (line terminators kept), ⟦text⟧ likewise but its first byte becomes `;`
 * (a statement erased whole). The input is the text without the markers; the expected output
 * is derived from the marks, so each case states exactly which bytes go and which stay.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsstrip.h"

#define MARK_OPEN   "\xc2\xab"     /* « */
#define MARK_CLOSE  "\xc2\xbb"     /* » */
#define MARK_SOPEN  "\xe2\x9f\xa6" /* ⟦ */
#define MARK_SCLOSE "\xe2\x9f\xa7" /* ⟧ */

/* Splits a marked spec into the input and the expected output (both malloc'd). */
static void split_spec(const char *spec, char **ret_in, char **ret_want, size_t *ret_len)
{
    size_t n = strlen(spec);
    char *in = malloc(n + 1);
    char *want = malloc(n + 1);
    assert_non_null(in);
    assert_non_null(want);
    size_t k = 0;
    int mode = 0; /* 0 keep, 1 erase, 2 erase with ; first */
    bool first = false;
    for (size_t i = 0; i < n;) {
        if (strncmp(spec + i, MARK_OPEN, 2) == 0) {
            mode = 1;
            i += 2;
            continue;
        }
        if (strncmp(spec + i, MARK_SOPEN, 3) == 0) {
            mode = 2;
            first = true;
            i += 3;
            continue;
        }
        if (strncmp(spec + i, MARK_CLOSE, 2) == 0 || strncmp(spec + i, MARK_SCLOSE, 3) == 0) {
            i += spec[i] == '\xc2' ? 2 : 3;
            mode = 0;
            continue;
        }
        char c = spec[i++];
        in[k] = c;
        if (mode == 0 || c == '\n' || c == '\r') {
            want[k] = c;
        } else if (mode == 2 && first) {
            want[k] = ';';
        } else {
            want[k] = ' ';
        }
        if (mode == 2) {
            first = false;
        }
        k++;
    }
    in[k] = '\0';
    want[k] = '\0';
    *ret_in = in;
    *ret_want = want;
    *ret_len = k;
}

static void check_out(const char *in, size_t len, const char *want, const char *label)
{
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;
    if (ts_strip(in, len, &out, &out_len, &err) != 0) {
        fail_msg("%s: ts_strip failed on <%s>: %s", label, in, err.message);
    }
    if (out_len != len || memcmp(out, want, len) != 0 || out[len] != '\0') {
        fail_msg("%s: input  <%s>\n  want   <%s>\n  got    <%.*s>", label, in, want, (int)out_len,
                 out);
    }
    for (size_t i = 0; i < len; i++) {
        if ((in[i] == '\n') != (out[i] == '\n')) {
            fail_msg("%s: line break moved at offset %zu", label, i);
        }
    }
    free(out);
}

/* Each spec: TypeScript with marked erasures. */
static void check_specs(const char *const *specs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *in;
        char *want;
        size_t len;
        split_spec(specs[i], &in, &want, &len);
        check_out(in, len, want, specs[i]);
        free(in);
        free(want);
    }
}

/* JavaScript (or TypeScript without types) that must come out byte for byte. */
static void check_unchanged(const char *const *srcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        check_out(srcs[i], strlen(srcs[i]), srcs[i], srcs[i]);
    }
}

#define SPECS(...)                                               \
    do {                                                         \
        static const char *const specs_[] = { __VA_ARGS__ };     \
        check_specs(specs_, sizeof(specs_) / sizeof(specs_[0])); \
    } while (0)

#define UNCHANGED(...)                                            \
    do {                                                          \
        static const char *const srcs_[] = { __VA_ARGS__ };       \
        check_unchanged(srcs_, sizeof(srcs_) / sizeof(srcs_[0])); \
    } while (0)

/* Refused or failed with a message containing what and "(line:col)", and those positions. */
static void check_error(const char *src, const struct ts_options *opts, enum ts_error_kind kind,
                        const char *what, unsigned line, unsigned col)
{
    char *out = (char *)"untouched";
    size_t out_len = 12345;
    struct ts_error err;
    int rc = ts_strip_opts(src, strlen(src), opts, &out, &out_len, &err);
    if (rc != -1) {
        fail_msg("<%s>: expected a failure, got <%s>", src, out);
    }
    assert_string_equal(out, "untouched");
    assert_int_equal(out_len, 12345);
    char pos[64];
    snprintf(pos, sizeof(pos), "%s%s%u:%u)", opts != NULL && opts->name ? opts->name : "(",
             opts != NULL && opts->name ? ":" : "", line, col);
    if (err.kind != kind || strstr(err.message, what) == NULL || strstr(err.message, pos) == NULL ||
        err.line != line || err.column != col) {
        fail_msg("<%s>: want kind %d, \"%s\" at %s\n  got kind %d, %u:%u \"%s\"", src, kind, what,
                 pos, err.kind, err.line, err.column, err.message);
    }
}

static void check_refused(const char *src, const char *what, unsigned line, unsigned col)
{
    check_error(src, NULL, TS_ERR_UNSUPPORTED, what, line, col);
}

static void check_syntax(const char *src, const char *what, unsigned line, unsigned col)
{
    check_error(src, NULL, TS_ERR_SYNTAX, what, line, col);
}

/* ---- erasure ---- */

static void test_erase_annotations(void **state)
{
    (void)state;
    SPECS("let x«: number» = 1;", "let x«!: number»;",
          "let a«: string», b«: Array<Map<string, number>>» = [], c = 3;",
          "const { a, b }«: { a: number; b: string }» = o;",
          "const [p, q]«: [number, string?]» = t;", "var v«: typeof import('./m').T<string>»;",
          "let u«: unique symbol»;", "let t«: `a${string}b${number}`» = 'a1b2';",
          "let f«: (a: number, b?: string) => void», g«: new () => object»;",
          "let k«: keyof typeof obj», m«: { readonly [K in keyof T as `get${K & string}`]-?: T[K] "
          "}»;",
          "let c«: T extends (infer U)[] ? U : never» = x;",
          "let x«: /* comment */ number» // t\n = 1;", "let x«:\n    | 'a'\n    | 'b'» = 'a';",
          "try {} catch (e«: unknown») {}", "for (let i«: number» = 0; i < 3; i++) {}",
          "for (const x of xs« as number[]») {}", "using r«: Disposable» = get();");
}

static void test_erase_functions(void **state)
{
    (void)state;
    SPECS("function f(a«: number», b«?: string», ...c«: boolean[]»)«: void» {}",
          "function f(«this: Window, »x«: number») {}", "function f(«this: Window») {}",
          "function f«<T, U extends keyof T = never>»(x«: T»)«: U» { return x« as any» }",
          "function f(x«: unknown»)«: x is string» { return true }",
          "function f(x«: unknown»)«: asserts x is string» {}",
          "function f(x«: unknown»)«: asserts x» {}",
          "function f()«: { a: number; b: { c: string } }» { return { a: 1, b: { c: '' } } }",
          "function* g()«: Generator<number>» { yield 1 }",
          "async function f()«: Promise<{ a: number }>» { return { a: 1 } }",
          "const f = function«<T>»(x«: T»)«: T» { return x };",
          "function f({ a, b }«: { a: number; b: number }», [c]«: [number]» = [1]) {}",
          "⟦function f(x: number): number;⟧\n⟦function f(x: string): string;⟧\n"
          "function f(x«: any») { return x }",
          "⟦export function f(): void;⟧\nexport function f() {}",
          "⟦async function f(): Promise<void>;⟧ async function f() {}");
}

static void test_erase_arrows(void **state)
{
    (void)state;
    SPECS("const f = (a«?: number») => a;", "const f = ()«: number» => 1;",
          "const f = ()«: { a: number }» => ({ a: 1 });",
          "const f = ()«: ((x: number) => number)» => (x) => x;",
          "const f = «<T,>»(x«: T»)«: T» => x;",
          "const f = «<const T extends readonly unknown[]>»(x«: T») => x;",
          "const f = async «<T>»(x«: T»)«: Promise<T>» => x;",
          "const f = async (x«: number»)«: Promise<number>» => x;",
          "const f = ({ a, b = 2 }«: P», [c]«: number[]» = []) => a;",
          "const f = (...xs«: number[]»)«: number» => xs.length;",
          "xs.sort((a«: number», b«: number»)«: number» => a - b);",
          "const g = c ? (x«: number»)«: number» => x : (y«: string») => y;",
          "const g = c ? (a«?: number») => a : null;", "const g = a ? (b)«: T» => b : c;",
          "const f = «<A,>»(a«: A») => «<B,>»(b«: B»)«: [A, B]» => [a, b];");
}

static void test_erase_classes(void **state)
{
    (void)state;
    SPECS("class A { x«: number» = 1; y«?: string»; z«!: boolean»; }",
          "class A { «private »x = 1; «public »static y = 2; «protected readonly »z = 3; "
          "«override »m() {} }",
          "class A { ⟦declare x: number;⟧ y = 1 }",
          "«abstract »class A { ⟦abstract m(): void;⟧ ⟦protected abstract x: number;⟧ n() {} }",
          "class A { ⟦[key: string]: any;⟧ ⟦static [k: number]: string⟧\n}",
          "class A { ⟦readonly [i: number]: string;⟧ }",
          "class A { ⟦m(x: number): void;⟧ m(x«?: any») {} }",
          "class A { ⟦constructor();⟧ constructor(x«?: number») {} }",
          "class A« implements I, J<T>» {}",
          "class A«<T extends object = {}>» extends B«<T>»« implements I<T>» {}",
          "class A extends mixin(B)«<T>» {}", "const C = class«<T>» { x«?: T» };",
          "class A { get x()«: number» { return 1 } set x(v«: number») {} }",
          "class A { m«?»()«: void» {} n«<T>»(x«: T»)«: T» { return x } }",
          "class A { #x«: number» = 1; static #y«: string»; }",
          "class A { static x«: number»; static { A.x = 1 } }",
          "class A { f = (x«: number»)«: number» => x; }",
          "class A { async *g()«: AsyncGenerator<number>» {} }",
          "class A { x = a\n⟦private⟧ [k] = 1 }", "class A { x = a\n⟦protected⟧ *g() {} }",
          "class A { x = a\n«private» y = 1 }",
          "class A { ⟦private static m(): void;⟧ «private »static m() {} }",
          "export «abstract »class A {}", "export default «abstract »class A {}");
}

static void test_erase_declarations(void **state)
{
    (void)state;
    SPECS("⟦interface I<T> extends J { a: T; m(): void; (x: number): string; new (): I<T> }⟧\nx;",
          "⟦type A<T> = T extends string ? 'a' : { [K in keyof T]?: T[K] };⟧",
          "let a = 1\n⟦type A = string⟧\n(f)()", "let a = 1\n⟦interface I {}⟧\n[1].map(g)",
          "⟦declare const x: number;⟧", "⟦declare let y: string, z: number⟧\n",
          "⟦declare function f(): void;⟧", "⟦declare class C { m(): void; x: number }⟧",
          "⟦declare enum E { A, B = 2 }⟧", "⟦declare const enum F { A }⟧",
          "⟦declare namespace N { let x: number; function f(): void }⟧",
          "⟦declare module 'm' { export const x: number }⟧", "⟦declare module 'short';⟧",
          "⟦declare global { interface Window { a: 1 } }⟧",
          "⟦declare abstract class K { abstract m(): void }⟧",
          "⟦namespace N { export type A = 1; export interface I {} }⟧",
          "⟦namespace A.B.C { type X = 1 }⟧", "⟦module M { export interface I {} }⟧");
}

static void test_erase_modules(void **state)
{
    (void)state;
    SPECS("⟦import type { A } from './a';⟧", "⟦import type D from './d';⟧",
          "⟦import type * as N from './n';⟧", "⟦import type from from './f';⟧",
          "⟦import type fs = require('fs');⟧", "import {« type A,» b } from './m';",
          "import { b«, type A» } from './m';", "import { a, «type B as C, »d } from './m';",
          "⟦import { type A, type B } from './m';⟧", "import D, { «type A» } from './m';",
          "⟦export type { A } from './a';⟧", "⟦export type { A };⟧", "⟦export type * from './a';⟧",
          "⟦export type * as ns from './a';⟧", "export {« type A,» b };", "⟦export { type A };⟧",
          "⟦export type A = number;⟧", "⟦export interface I {}⟧",
          "⟦export declare const x: number;⟧", "⟦export default interface I {}⟧",
          "⟦export as namespace Lib;⟧", "export const x«: number» = 1;");
    UNCHANGED("import type from './t';", "import type, { a } from './t';",
              "import { type } from './t';", "import { type as t } from './t';",
              "import {} from './m';", "import './side-effect';",
              "import * as ns from './m' with { type: 'json' };", "export { a as b, c };",
              "export * from './m';", "export default x;",
              "const m = await import('./m'); import.meta.url;");
}

static void test_erase_expressions(void **state)
{
    (void)state;
    SPECS("x« as number»;", "const t = [1, 'a']« as const»;", "y = (a« as any»)« as unknown» + 1;",
          "x« satisfies Y»;", "v = [1]« satisfies number[]»« as readonly number[]»;", "x«!».y«!»;",
          "x«!» = 1;", "x = as« as as»;", "f«!»()«!»;", "a«!»[0] = b«!»«!»;", "f«<number>»(1);",
          "f«<Map<string, Array<number>>>»(m);", "new Map«<string, number>»();", "new C«<T>»;",
          "tag«<T>»`x${y« as number»}z`;", "const g = f«<number>»;", "a?.«<T>»();",
          "o.m«<T>»(1).n«<U>»(2);", "f«<<T>(x: T) => T>»(g);", "a «< b >»(c);",
          "`${`${x« as number»}`}`;", "let x = y ⟦as any⟧\n(foo)()", "return y ⟦as T⟧\n[0].map(f)",
          "await (p« as Promise<number>»);");
}

/* Angle-bracket assertions of .ts sources, erased like `as`; generic arrows and comparisons
 * around them keep their own readings. */
static void test_erase_type_assertions(void **state)
{
    (void)state;
    SPECS("const a = «<number>»x;", "const o = «<Foo>»obj;", "y = «<Array<string>>»z;",
          "const c = «<const>»[1, 2];", "v = «<Map<K, V[]>>»m;", "r = «<any>»(«<unknown>»v).w;",
          "r = typeof «<string>»x + -«<number>»y;", "x = «<T>»«<U>»v;", "x = «<T>»/re/.test(s);",
          "x = «<Foo>»(y);", "x = «<(a: number) => void>»f;", "x = «<{ a: 1 }>»o;",
          "f(«<A | B>»a, «<C>»b);", "x = «<T>»a.b(c)[0];", "x = c ? «<T>»a : «<U>»b;",
          "x = «<T>»\ny;", "return «<T>»x;", "function* g() { yield «<T>»1 }",
          "const f = «<T>»(x«: T») => x;", "const g = «<T,>»(x«: T»)«: T» => x;",
          "const h = async «<T>»(x«: T») => x;", "const f = «<T>»(«<U>»x);",
          "function f() { return -«<T>»\nx }", "x = a «<b>»(«<c>»d);");
    UNCHANGED("r = a < b > c;", "r = a < b && c > d;", "f(a < b, c > d);", "x = a <//c\n b;",
              "x = a < /re/;");
}

static void test_javascript_unchanged(void **state)
{
    (void)state;
    UNCHANGED(
            "a < b > c;", "a < b && c > d;", "f(a < b, c > d);", "a << b < c;",
            "x = a >> 2 >>> 1 >= 3;", "let as = 1; as + as; as(as);",
            "let type = 1; type = 2; type++;",
            "let declare = 1, abstract = 2, namespace = 3, module = 4, readonly = 5;",
            "module.exports = interface_;",
            "const satisfies = 1, keyof = 2, infer = 3, is = 4, asserts = 5;",
            "a?.b; a?.[0]; a?.(); x?.5:1;", "a ? (b) : c => d;", "a ? b : (c) => d;",
            "const r = /<a>/g.test(s);", "x = a / b / c; y /= 2;", "if (x) /re/.test(y);",
            "x = y\n/re/g.exec(z);", "const s = \"let x: number = 1 as any\";",
            "/* x: number */ // as any\n", "`a${b}c${`d${e}`}`;",
            "class A { readonly = 1; public() {} static = 2; declare; abstract() {} get get() {} }",
            "class A { readonly\n x = 1 }",
            "const o = { type: 1, interface: 2, as: 3, get: 4, set: 5, async: 6, declare: 7 };",
            "const o = { get a() { return 1 }, set a(v) {}, async *g() {}, [k]: 1, ...r };",
            "label: for (;;) { break label; }", "do x++; while (x < 3)",
            "const f = async x => x, g = async (y) => y, h = async(1);",
            "function* g() { yield /a<b>/; yield 1 / 2 }",
            "class A { #x = 1; static { } m() { return #x in this } }",
            "new.target; super.x; import.meta;", "x = a\n!b;", "let x = 1_000n + 0x1Fn;",
            "const π = 3.14, café = 'é';", "#!/usr/bin/env node\nlet x = 1;", "");
}

/* A few pairs written out in full. */
static void test_literal_pairs(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *out;
    } pairs[] = {
        { "let x: number = 1;", "let x         = 1;" },
        { "f<T>(x)", "f   (x)" },
        { "a < b > c", "a < b > c" },
        { "x!", "x " },
        { "x! = 1", "x  = 1" },
        { "(a?: number) => a", "(a         ) => a" },
        { "(): number => 1", "()         => 1" },
        { "interface A {}\nx", ";             \nx" },
        { "class C<T> implements I { private x?: T }",
          "class C                 {         x     }" },
        { "const v = <T,>(x: T) => x", "const v =     (x   ) => x" },
        { "import { type A, b } from 'm'", "import {         b } from 'm'" },
        { "let y = x as const\n(f)()", "let y = x ;       \n(f)()" },
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        assert_int_equal(strlen(pairs[i].in), strlen(pairs[i].out));
        check_out(pairs[i].in, strlen(pairs[i].in), pairs[i].out, pairs[i].in);
    }
}

static void test_positions(void **state)
{
    (void)state;
    /* every line break and every kept byte stays at its offset, CRLF and U+2028 included */
    const char *src =
            "let a:\r\n  number = 1;\r\ninterface I {\n  a: string\xe2\x80\xa8 b: number\n}\n"
            "const s = 'é' as string; // é\n";
    size_t len = strlen(src);
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;
    assert_int_equal(ts_strip(src, len, &out, &out_len, &err), 0);
    assert_int_equal(out_len, len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '\n' || c == '\r') {
            assert_int_equal(out[i], src[i]);
        }
    }
    assert_non_null(strstr(out, "\xe2\x80\xa8")); /* the U+2028 inside the interface is kept */
    assert_string_equal(out + (strstr(src, "const") - src), "const s = 'é'          ; // é\n");
    free(out);

    /* the input is not read past len: a buffer without a NUL, types to the end */
    char buf[18];
    memcpy(buf, "let x: number = 1;", 18);
    assert_int_equal(ts_strip(buf, 18, &out, &out_len, &err), 0);
    assert_int_equal(out_len, 18);
    assert_string_equal(out, "let x         = 1;");
    free(out);

    /* empty input */
    assert_int_equal(ts_strip(NULL, 0, &out, &out_len, &err), 0);
    assert_int_equal(out_len, 0);
    assert_string_equal(out, "");
    free(out);
}

/* ---- refusals ---- */

static void test_refuse_non_erasable(void **state)
{
    (void)state;
    check_refused("enum E { A }", "TypeScript enum is not supported", 1, 1);
    check_refused("let a = 1;\n  const enum E { A }", "TypeScript enum is not supported", 2, 3);
    check_refused("export enum E { A }", "TypeScript enum is not supported", 1, 1);
    check_refused("let a = 1;\nnamespace N { export const x = 1 }",
                  "TypeScript namespace is not supported", 2, 1);
    check_refused("module M { function f() {} }", "TypeScript namespace is not supported", 1, 1);
    check_refused("namespace A { namespace B { let x = 1 } }",
                  "TypeScript namespace is not supported", 1, 15);
    check_refused("class A { constructor(private x: number) {} }",
                  "TypeScript parameter property is not supported", 1, 23);
    check_refused("class A {\n  constructor(a: number, readonly b = 1) {}\n}",
                  "TypeScript parameter property is not supported", 2, 26);
    check_refused("@dec class A {}", "TypeScript decorators are not supported", 1, 1);
    check_refused("class A { @dec m() {} }", "TypeScript decorators are not supported", 1, 11);
    check_refused("class A { m(@inject x) {} }", "TypeScript decorators are not supported", 1, 13);
    check_refused("export = x;", "TypeScript `export =` is not supported", 1, 1);
    check_refused("import x = require('x');", "TypeScript `import x = require()` is not supported",
                  1, 1);
    check_refused("import x = N.y;", "TypeScript import alias is not supported", 1, 1);
    check_refused("export import x = N.y;", "`export import` alias is not supported", 1, 1);
    check_refused("const a = <div>hi</div>;", "JSX is not supported", 1, 11);
    check_refused("f(<b>c</b>)", "JSX is not supported", 1, 3);
    check_refused("x = <>a</>;", "JSX is not supported", 1, 5);
    check_refused("x = <Foo />;", "JSX is not supported", 1, 5);
    check_refused("x = <a href='h'>t</a>;", "JSX is not supported", 1, 5);
    check_refused("x = a </re/;", "JSX is not supported", 1, 7);
    check_refused("function f() { return <T>\nx }",
                  "TypeScript type assertion needs its operand on the same line", 1, 23);
    check_refused("function* g() { yield <A><B>\n1 }",
                  "TypeScript type assertion needs its operand on the same line", 1, 26);
    check_refused("x = a + b as T * c", "TypeScript `as` expression needs parentheses", 1, 16);
    check_refused("x = a < b as T + c", "TypeScript `as` expression needs parentheses", 1, 16);

    /* the caller's file name goes into the message */
    struct ts_options opts = { .name = "run.ts", .flags = 0 };
    check_error("let a = 1;\n\nenum Color { Red }", &opts, TS_ERR_UNSUPPORTED,
                "TypeScript enum is not supported (run.ts:3:1): ", 3, 1);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    check_syntax("let x = 'abc", "unterminated string literal", 1, 9);
    check_syntax("let x = `abc${1}", "unterminated template literal", 1, 9);
    check_syntax("let x = 1; /* no end", "unterminated comment", 1, 12);
    check_syntax("x = /abc\n", "unterminated regular expression", 1, 5);
    check_syntax("x = <T>\x01;", "unexpected character", 1, 8); /* right after an assertion */
    check_syntax("f(1, 2", "expected ')', found the end of the input", 1, 7);
    check_syntax("let x: = 1;", "expected a type, found `=`", 1, 8);
    check_syntax("class A { x: }", "expected a type, found `}`", 1, 14);
    check_syntax("let x = 1 2;", "expected ';', found `2`", 1, 11);
    check_syntax("a\nb c", "TypeScript syntax error (2:3)", 2, 3);
    check_syntax("let s = 'é'; x = \x01;", "unexpected character", 1, 18);
    check_syntax("}", "expected a statement", 1, 1);
}

static void test_limits_and_arguments(void **state)
{
    (void)state;
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;

    size_t n = 3 * TS_MAX_NESTING;
    char *deep = malloc(2 * n + 8);
    assert_non_null(deep);
    memcpy(deep, "x = ", 4);
    memset(deep + 4, '(', n);
    deep[4 + n] = '1';
    memset(deep + 5 + n, ')', n);
    assert_int_equal(ts_strip(deep, 5 + 2 * n, &out, &out_len, &err), -1);
    assert_int_equal(err.kind, TS_ERR_LIMIT);
    assert_non_null(strstr(err.message, "nesting too deep"));
    /* 250 nested parentheses are fine */
    memset(deep + 4, '(', 250);
    deep[254] = '1';
    memset(deep + 255, ')', 250);
    assert_int_equal(ts_strip(deep, 505, &out, &out_len, &err), 0);
    free(out);
    free(deep);

    /* a NUL byte is just an unexpected character */
    assert_int_equal(ts_strip("let x\0 = 1", 10, &out, &out_len, &err), -1);
    assert_int_equal(err.kind, TS_ERR_SYNTAX);
    assert_int_equal(err.column, 6);

    assert_int_equal(ts_strip("x", 1, NULL, &out_len, &err), -1);
    assert_int_equal(err.kind, TS_ERR_ARGUMENT);
    assert_int_equal(ts_strip("x", 1, &out, NULL, &err), -1);
    assert_int_equal(ts_strip(NULL, 1, &out, &out_len, &err), -1);
    assert_int_equal(ts_strip("enum E {}", 9, &out, &out_len, NULL), -1); /* reterr optional */
}

/* ---- TS_TRANSFORM ---- */

static void check_transform(const char *in, const char *want)
{
    struct ts_options opts = { .name = NULL, .flags = TS_TRANSFORM };
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;
    if (ts_strip_opts(in, strlen(in), &opts, &out, &out_len, &err) != 0) {
        fail_msg("<%s>: %s", in, err.message);
    }
    if (strcmp(out, want) != 0 || strlen(out) != out_len) {
        fail_msg("input <%s>\n  want <%s>\n  got  <%s>", in, want, out);
    }
    size_t lines_in = 0;
    size_t lines_out = 0;
    for (const char *c = in; *c; c++) {
        lines_in += *c == '\n';
    }
    for (const char *c = out; *c; c++) {
        lines_out += *c == '\n';
    }
    assert_int_equal(lines_in, lines_out);
    free(out);
}

static void test_transform(void **state)
{
    (void)state;
    check_transform(
            "enum E { A, B = 5, C }\nx;",
            "var E; (function (E) { var A = 0; E[E[\"A\"] = A] = \"A\"; var B = (5); "
            "E[E[\"B\"] = B] = \"B\"; var C = 6; E[E[\"C\"] = C] = \"C\"; })(E || (E = {}));\nx;");
    check_transform(
            "const enum S {\n  Up = 'UP',\n  'a-b' = 2,\n}\n",
            "var S; (function (S) {\n var Up = ('UP'); S[\"Up\"] = Up;\n S[S['a-b'] = (2)] = "
            "'a-b';\n })(S || (S = {}));\n");
    check_transform("export enum F { A = 1 << 0, B = A | 2 }",
                    "export var F; (function (F) { var A = (1 << 0); F[F[\"A\"] = A] = \"A\"; "
                    "var B = (A | 2); F[F[\"B\"] = B] = \"B\"; })(F || (F = {}));");
    check_transform("class P { constructor(public x: number, private y = 2) {} }",
                    "class P { x; y; constructor(       x        ,         y = 2) { this.x = x; "
                    "this.y = y;} }");
    check_transform(
            "class B extends A {\n  constructor(readonly b: string) {\n    super();\n"
            "    f();\n  }\n}",
            "class B extends A { b;\n  constructor(         b        ) {\n    super(); this.b = "
            "b;\n    f();\n  }\n}");
    check_transform(
            "class B extends A { constructor(public b: number) { super(b) } }",
            "class B extends A { b; constructor(       b        ) { super(b); this.b = b; } }");
    /* only a lone string literal makes a string member; the next member counts from a
     * computed one by name */
    check_transform("enum E { A = 'a'.length, B, C = 'x' }",
                    "var E; (function (E) { var A = ('a'.length); E[E[\"A\"] = A] = \"A\"; "
                    "var B = (A + 1); E[E[\"B\"] = B] = \"B\"; var C = ('x'); E[\"C\"] = C; "
                    "})(E || (E = {}));");
    /* past 2^53 a number is not exact in JavaScript: the next member counts by expression
     * (this once overflowed a C counter at 9999999999999999999) */
    check_transform("enum E { A = 9999999999999999999, B }",
                    "var E; (function (E) { var A = (9999999999999999999); E[E[\"A\"] = A] = "
                    "\"A\"; var B = (A + 1); E[E[\"B\"] = B] = \"B\"; })(E || (E = {}));");
    check_transform("enum E { A = 9007199254740991, B, C }",
                    "var E; (function (E) { var A = (9007199254740991); E[E[\"A\"] = A] = "
                    "\"A\"; var B = (A + 1); E[E[\"B\"] = B] = \"B\"; var C = (B + 1); "
                    "E[E[\"C\"] = C] = \"C\"; })(E || (E = {}));");
    /* a member named like the enum is not made a local (it would shadow the enum) */
    check_transform("enum E { E, F }",
                    "var E; (function (E) { E[E[\"E\"] = 0] = \"E\"; var F = 1; E[E[\"F\"] = F] = "
                    "\"F\"; })(E || (E = {}));");
    /* declare enum stays erased, never rewritten */
    check_transform("declare enum D { A }", ";                   ");
    /* without the flag, nothing changes length; with it, erasure is unchanged elsewhere */
    check_transform("let x: number = 1;", "let x         = 1;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erase_annotations),     cmocka_unit_test(test_erase_functions),
        cmocka_unit_test(test_erase_arrows),          cmocka_unit_test(test_erase_classes),
        cmocka_unit_test(test_erase_declarations),    cmocka_unit_test(test_erase_modules),
        cmocka_unit_test(test_erase_expressions),     cmocka_unit_test(test_javascript_unchanged),
        cmocka_unit_test(test_literal_pairs),         cmocka_unit_test(test_positions),
        cmocka_unit_test(test_refuse_non_erasable),   cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_limits_and_arguments),  cmocka_unit_test(test_transform),
        cmocka_unit_test(test_erase_type_assertions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
