/*
 * console.c - console.log/info/warn/error/debug: each call becomes one entry (level + text)
 * sent to the host in a CONSOLE frame; nothing is written to any stream.
 *
 * The console limit counts the UTF-8 bytes of all entries plus one per entry (its line break).
 * The entry that crosses it is cut at a character boundary, followed by a warn entry saying so, and
 * the run fails with OUTPUT_LIMIT: output is never silently dropped or corrupted.
 */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "utf8.h"
#include "worker.h"

/* One entry being formatted, capped at what is left of the console budget. */
struct line {
    struct buf b;
    int overflow; /* something did not fit */
};

/* Appends what fits; the rest is dropped and marked (the entry is then cut, never lost
 * silently). */
static void cat(struct line *l, const char *s, size_t n)
{
    size_t room = l->b.max - l->b.len;
    if (n > room) {
        n = room;
        l->overflow = 1;
    }
    if (n && buf_append(&l->b, s, n) != BUF_OK) {
        l->overflow = 1;
    }
}

static void cat_str(struct line *l, const char *s)
{
    cat(l, s, strlen(s));
}

static void cat_cstr_of(JSContext *ctx, JSValueConst v, struct line *l)
{
    size_t n;
    const char *s = JS_ToCStringLen(ctx, &n, v);
    if (!s) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        cat_str(l, "[unprintable]");
        return;
    }
    cat(l, s, n);
    JS_FreeCString(ctx, s);
}

static void cat_prop(JSContext *ctx, JSValueConst obj, const char *name, struct line *l)
{
    JSValue v = JS_GetPropertyStr(ctx, obj, name);
    if (JS_IsException(v)) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        return;
    }
    if (!JS_IsUndefined(v)) {
        cat_cstr_of(ctx, v, l);
    }
    JS_FreeValue(ctx, v);
}

/* Formats one argument the way a developer reading logs expects: strings as they are,
 * errors as "Name: message", functions as [Function: name], objects as JSON. */
static void format_arg(JSContext *ctx, JSValueConst v, struct line *l)
{
    if (JS_IsString(v)) {
        cat_cstr_of(ctx, v, l);
    } else if (JS_IsSymbol(v)) {
        cat_str(l, "Symbol(");
        cat_prop(ctx, v, "description", l);
        cat_str(l, ")");
    } else if (JS_IsBigInt(ctx, v)) {
        cat_cstr_of(ctx, v, l);
        cat_str(l, "n");
    } else if (!JS_IsObject(v)) {
        cat_cstr_of(ctx, v, l);
    } else if (JS_IsError(ctx, v)) {
        cat_prop(ctx, v, "name", l);
        cat_str(l, ": ");
        cat_prop(ctx, v, "message", l);
    } else if (JS_IsFunction(ctx, v)) {
        cat_str(l, "[Function: ");
        cat_prop(ctx, v, "name", l);
        cat_str(l, "]");
    } else {
        JSValue s = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
        if (JS_IsException(s)) {
            JSValue e = JS_GetException(ctx);
            JS_FreeValue(ctx, e);
            cat_cstr_of(ctx, v, l);
        } else if (JS_IsUndefined(s)) {
            cat_cstr_of(ctx, v, l);
        } else {
            cat_cstr_of(ctx, s, l);
        }
        JS_FreeValue(ctx, s);
    }
}

static void emit(struct worker *w, int level, const char *text, size_t len)
{
    size_t start;
    wire_begin(&w->io.out, WIRE_CONSOLE, &start);
    wire_u8(&w->io.out, (uint8_t)level);
    wire_str(&w->io.out, text, len);
    wire_end(&w->io.out, start);
}

/* Each entry costs its UTF-8 bytes plus one (its line break), so the limit bounds the number
 * of entries as well as their text. */
static JSValue console_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                            int magic)
{
    (void)this_val;
    struct worker *w = JS_GetContextOpaque(ctx);
    uint64_t limit = w->req.limits[AL_LIMIT_CONSOLE_BYTES];
    if (w->console.cut) {
        return JS_UNDEFINED; /* already cut and marked */
    }
    uint64_t left = limit - w->console.bytes;
    struct line l = { .overflow = 0 };
    buf_init(&l.b, (size_t)left); /* one more byte than an entry that fits can hold */
    for (int i = 0; i < argc && !l.overflow; i++) {
        if (i > 0) {
            cat(&l, " ", 1);
        }
        format_arg(ctx, argv[i], &l);
    }
    if (!l.overflow && l.b.len + 1 <= left) {
        emit(w, magic, l.b.data ? l.b.data : "", l.b.len);
        w->console.bytes += l.b.len + 1;
    } else {
        if (left >= 1) { /* what fits of the entry, its line break included */
            size_t keep = l.b.len < left ? l.b.len : (size_t)left - 1;
            keep = l.b.data && keep < l.b.len ? utf8_cut(l.b.data, keep) : keep;
            emit(w, magic, l.b.data ? l.b.data : "", keep);
        }
        w->console.bytes = limit;
        w->console.cut = 1;
        char note[128];
        int n = snprintf(note, sizeof note, "[console output truncated: limit of %llu bytes]",
                         (unsigned long long)limit);
        emit(w, 2 /* warn */, note, (size_t)n);
        worker_fail(w, AL_OUTPUT_LIMIT,
                    "the console output exceeds the console limit of %llu bytes",
                    (unsigned long long)limit);
    }
    buf_done(&l.b);
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
