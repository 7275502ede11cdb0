/*
 * console.c - console.log/info/warn/error/debug: each call becomes one entry (level + text)
 * sent to the host in a CONSOLE frame; nothing is written to any stream.
 *
 * The console limit counts the UTF-8 bytes of all entries. The entry that crosses it is cut at
 * a character boundary, followed by a warn entry saying so, and the run fails with
 * OUTPUT_LIMIT: output is never silently dropped or corrupted.
 */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "worker.h"

#define CONSOLE_ARG_MAX (1u << 20) /* one formatted argument; the limit cuts earlier anyway */

static void append_cstr_of(JSContext *ctx, JSValueConst v, struct buf *b)
{
    const char *s = JS_ToCString(ctx, v);
    if (!s) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        buf_append_str(b, "[unprintable]");
        return;
    }
    buf_append_str(b, s);
    JS_FreeCString(ctx, s);
}

static void append_prop(JSContext *ctx, JSValueConst obj, const char *name, struct buf *b)
{
    JSValue v = JS_GetPropertyStr(ctx, obj, name);
    if (JS_IsException(v)) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        return;
    }
    if (!JS_IsUndefined(v)) {
        append_cstr_of(ctx, v, b);
    }
    JS_FreeValue(ctx, v);
}

/* Formats one argument the way a developer reading logs expects: strings as they are,
 * errors as "Name: message", functions as [Function: name], objects as JSON. */
static void format_arg(JSContext *ctx, JSValueConst v, struct buf *b)
{
    if (JS_IsString(v)) {
        append_cstr_of(ctx, v, b);
    } else if (JS_IsSymbol(v)) {
        buf_append_str(b, "Symbol(");
        append_prop(ctx, v, "description", b);
        buf_append_str(b, ")");
    } else if (JS_IsBigInt(ctx, v)) {
        append_cstr_of(ctx, v, b);
        buf_append_str(b, "n");
    } else if (!JS_IsObject(v)) {
        append_cstr_of(ctx, v, b);
    } else if (JS_IsError(ctx, v)) {
        append_prop(ctx, v, "name", b);
        buf_append_str(b, ": ");
        append_prop(ctx, v, "message", b);
    } else if (JS_IsFunction(ctx, v)) {
        buf_append_str(b, "[Function: ");
        append_prop(ctx, v, "name", b);
        buf_append_str(b, "]");
    } else {
        JSValue s = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
        if (JS_IsException(s)) {
            JSValue e = JS_GetException(ctx);
            JS_FreeValue(ctx, e);
            append_cstr_of(ctx, v, b);
        } else if (JS_IsUndefined(s)) {
            append_cstr_of(ctx, v, b);
        } else {
            append_cstr_of(ctx, s, b);
        }
        JS_FreeValue(ctx, s);
    }
}

/* Length of the longest prefix of s[0..len) that ends on a UTF-8 character boundary. */
static size_t utf8_cut(const char *s, size_t len)
{
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) {
        len--;
    }
    return len;
}

static void emit(struct worker *w, int level, const char *text, size_t len)
{
    size_t start;
    wire_begin(&w->out, WIRE_CONSOLE, &start);
    wire_u8(&w->out, (uint8_t)level);
    wire_str(&w->out, text, len);
    wire_end(&w->out, start);
}

static JSValue console_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                            int magic)
{
    (void)this_val;
    struct worker *w = JS_GetContextOpaque(ctx);
    struct buf b;
    buf_init(&b, CONSOLE_ARG_MAX);
    for (int i = 0; i < argc; i++) {
        if (i > 0) {
            buf_append_byte(&b, ' ');
        }
        format_arg(ctx, argv[i], &b);
    }
    uint64_t limit = w->limits[AL_LIMIT_CONSOLE_BYTES];
    if (w->console_bytes >= limit && limit > 0 && w->fatal_code == AL_OUTPUT_LIMIT) {
        buf_done(&b); /* already cut and marked */
        return JS_UNDEFINED;
    }
    uint64_t left = limit - w->console_bytes;
    if (b.len <= left) {
        emit(w, magic, b.data ? b.data : "", b.len);
        w->console_bytes += b.len;
    } else {
        size_t keep = b.data ? utf8_cut(b.data, (size_t)left) : 0;
        emit(w, magic, b.data ? b.data : "", keep);
        w->console_bytes = limit;
        char note[128];
        int n = snprintf(note, sizeof note, "[console output truncated: limit of %llu bytes]",
                         (unsigned long long)limit);
        emit(w, 2 /* warn */, note, (size_t)n);
        worker_fail(w, AL_OUTPUT_LIMIT,
                    "the console output exceeds the console limit of %llu bytes",
                    (unsigned long long)limit);
    }
    buf_done(&b);
    return JS_UNDEFINED;
}

int console_install(struct worker *w, JSContext *ctx)
{
    (void)w;
    static const char *const names[] = { "log", "info", "warn", "error", "debug" };
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue console = JS_NewObject(ctx);
    int rc = -1;
    if (JS_IsException(console)) {
        goto out;
    }
    for (int i = 0; i < 5; i++) {
        JSValue f = JS_NewCFunctionMagic(ctx, console_call, names[i], 0, JS_CFUNC_generic_magic, i);
        if (JS_DefinePropertyValueStr(ctx, console, names[i], f, JS_PROP_C_W_E) < 0) {
            goto out;
        }
    }
    if (JS_DefinePropertyValueStr(ctx, global, "console", JS_DupValue(ctx, console),
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        goto out;
    }
    rc = 0;
out:
    JS_FreeValue(ctx, console);
    JS_FreeValue(ctx, global);
    return rc;
}
