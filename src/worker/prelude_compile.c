/*
 * prelude_compile.c - a build tool: compiles a worker prelude (prelude.js, prelude_intl.js) to
 * QuickJS bytecode and writes it as a C array, so a worker reads the bytecode when it prepares
 * its context instead of parsing the source (parsing the preludes costs milliseconds,
 * reading their bytecode a fraction of that; a spawned worker pays it on the run's path).
 *
 * The bytecode comes from the same QuickJS build the worker links and is part of the worker
 * binary, so the worker trusts it as it trusts its own code; no bytecode from anywhere else is
 * ever read (STYLE.md 11.2). The compile context has what the worker's compile context has.
 *
 * Usage: prelude_compile IN.js OUT.c NAME
 * OUT.c defines `const unsigned char NAME[]` and `const size_t NAME_len`. Exit status 1 with a
 * message on stderr when the prelude does not compile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quickjs.h"

static char *read_file(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    size_t len = 0;
    size_t cap = 0;
    if (!f) {
        return NULL;
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        size_t n = fread(data + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    fclose(f);
    data[len] = '\0';
    *ret_len = len;
    return data;
}

static int write_c(const char *path, const char *name, const char *from, const uint8_t *bc,
                   size_t n)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        return -1;
    }
    fprintf(f, "/* Generated from %s by prelude_compile at build time: never edit. */\n", from);
    fprintf(f, "#include <stddef.h>\n\n");
    fprintf(f, "extern const unsigned char %s[];\nextern const size_t %s_len;\n\n", name, name);
    fprintf(f, "const unsigned char %s[] = {", name);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s0x%02x,", i % 16 ? " " : "\n    ", bc[i]);
    }
    fprintf(f, "\n};\nconst size_t %s_len = %zu;\n", name, n);
    if (fclose(f) != 0) {
        return -1;
    }
    return rename(tmp, path);
}

int main(int argc, char **argv)
{
    int status = 1;
    size_t len = 0;
    size_t n = 0;
    uint8_t *bc = NULL;
    char *src = NULL;
    JSRuntime *rt = NULL;
    JSContext *ctx = NULL;

    if (argc != 4) {
        fprintf(stderr, "usage: prelude_compile IN.js OUT.c NAME\n");
        return 2;
    }
    src = read_file(argv[1], &len);
    rt = JS_NewRuntime();
    ctx = rt ? JS_NewContextRaw(rt) : NULL;
    if (!src || !ctx) {
        fprintf(stderr, "prelude_compile: cannot read %s or start QuickJS\n", argv[1]);
        goto out;
    }
    JS_AddIntrinsicBaseObjects(ctx);
    JS_AddIntrinsicEval(ctx);
    JS_AddIntrinsicRegExpCompiler(ctx);
    JS_AddIntrinsicBigInt(ctx);
    const char *base = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    JSValue fn = JS_Eval(ctx, src, len, base, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(fn)) {
        JSValue e = JS_GetException(ctx);
        JSValue stack = JS_GetPropertyStr(ctx, e, "stack");
        const char *msg = JS_ToCString(ctx, e);
        const char *at = JS_ToCString(ctx, stack);
        fprintf(stderr, "prelude_compile: %s: %s\n%s\n", argv[1], msg ? msg : "?", at ? at : "");
        JS_FreeCString(ctx, msg);
        JS_FreeCString(ctx, at);
        JS_FreeValue(ctx, stack);
        JS_FreeValue(ctx, e);
        goto out;
    }
    bc = JS_WriteObject(ctx, &n, fn, JS_WRITE_OBJ_BYTECODE);
    JS_FreeValue(ctx, fn);
    if (!bc || write_c(argv[2], argv[3], base, bc, n) != 0) {
        fprintf(stderr, "prelude_compile: cannot write %s\n", argv[2]);
        goto out;
    }
    status = 0;
out:
    if (bc) {
        js_free(ctx, bc);
    }
    if (ctx) {
        JS_FreeContext(ctx);
    }
    if (rt) {
        JS_FreeRuntime(rt);
    }
    free(src);
    return status;
}
