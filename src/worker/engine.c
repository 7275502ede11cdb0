/*
 * engine.c - one run in QuickJS: runtime, hardened guest context, limits, event loop, outcome.
 *
 * Dynamic code is impossible in the guest context by construction: it is built without the
 * eval intrinsic, so `eval`, the Function constructor and the async/generator function
 * constructors all end in the engine's own TypeError. The user's source is compiled in a
 * separate, short-lived compile context (which has eval) and moved into the guest context as
 * bytecode through JS_WriteObject/JS_ReadObject, so nothing of the compile context - not even
 * template objects - is reachable from the guest. The bytecode never leaves this process.
 *
 * Limits: the heap is counted by our allocator (which also records the peak and latches
 * MEMORY_LIMIT), the stack by QuickJS, wall and CPU time by the interrupt handler, which the
 * engine polls every ~10k branches. The host's supervisor kills us if a long builtin keeps the
 * handler from running. The first limit that trips decides the code; the guest cannot catch it.
 */
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "guest.h"
#include "jail.h"
#include "tsstrip.h"
#include "utf8.h"
#include "value.h"
#include "worker.h"

#define ENGINE_VALUE_DEPTH     1000       /* nesting bound of values crossing the boundary */
#define ENGINE_MEM_SLACK       (2u << 20) /* heap allowed past the limit so unwinding works */
#define ENGINE_MALLOC_OVERHEAD 8
#define ENGINE_FLUSH_US        2000u  /* console output waits at most this long while busy */
#define ENGINE_HOST_CHECK_US   50000u /* a worker whose host is gone ends within about this */

/* The source is a function body: wrapped so top-level await and return work. The head keeps
 * the user's first line on line 1, so only line-1 columns need correcting. */
static const char wrapper_head[] = "(async function () {";
static const char wrapper_tail[] = "\n})()";

/* Debug builds free the runtime before reporting, so QuickJS's own check for leaked references
 * fails the run (as WORKER_CRASHED) in every test. Release builds skip it: the process exits
 * right after, and freeing would touch - and so copy, in a forked worker - every page. */
#if defined(NDEBUG)
#define ENGINE_TEARDOWN 0
#else
#define ENGINE_TEARDOWN 1
#endif

enum outcome_end {
    OUTCOME_COMPLETED,   /* with a value */
    OUTCOME_FAILED,      /* with code, name, message and stack */
    OUTCOME_INTERRUPTED, /* host calls wait for a person's decision (code unused) */
};

struct outcome {
    enum outcome_end end;
    enum al_code code; /* AL_OK unless failed */
    struct buf value;
    char *name;
    char *message;
    char *stack;
};

/* ------------------------------------------------------------------ allocator */

static void mem_account(struct worker *w, JSMallocState *s, void *p, int sign)
{
    size_t n = malloc_usable_size(p) + ENGINE_MALLOC_OVERHEAD;
    if (sign > 0) {
        s->malloc_count++;
        s->malloc_size += n;
        if (s->malloc_size > w->eng.mem_peak) {
            w->eng.mem_peak = s->malloc_size;
        }
    } else {
        s->malloc_count--;
        s->malloc_size -= n;
    }
}

/* The allocation that passes the limit fails (QuickJS then throws its out-of-memory error,
 * uncatchable in the worker) and latches MEMORY_LIMIT; a slack above the limit then lets the
 * engine build that error and unwind. */
static int mem_allows(struct worker *w, JSMallocState *s, size_t add)
{
    if (s->malloc_size + add <= w->eng.mem_cap) {
        return 1;
    }
    if (w->eng.mem_cap == (size_t)w->req.limits[AL_LIMIT_MEMORY_BYTES]) {
        worker_fail(w, AL_MEMORY_LIMIT, "the guest heap exceeded the memory limit of %llu bytes",
                    (unsigned long long)w->req.limits[AL_LIMIT_MEMORY_BYTES]);
        w->eng.mem_cap += ENGINE_MEM_SLACK;
    }
    return 0;
}

static void *mem_malloc(JSMallocState *s, size_t size)
{
    struct worker *w = s->opaque;
    if (!mem_allows(w, s, size)) {
        return NULL;
    }
    void *p = malloc(size);
    if (p) {
        mem_account(w, s, p, 1);
    } else {
        worker_fail(w, AL_MEMORY_LIMIT, "the worker ran out of memory");
    }
    return p;
}

static void mem_free(JSMallocState *s, void *p)
{
    if (p) {
        mem_account(s->opaque, s, p, -1);
        free(p);
    }
}

static void *mem_realloc(JSMallocState *s, void *p, size_t size)
{
    struct worker *w = s->opaque;
    if (!p) {
        return size ? mem_malloc(s, size) : NULL;
    }
    if (size == 0) {
        mem_free(s, p);
        return NULL;
    }
    size_t old = malloc_usable_size(p);
    if (size > old && !mem_allows(w, s, size - old)) {
        return NULL;
    }
    mem_account(w, s, p, -1);
    void *q = realloc(p, size);
    if (!q) {
        mem_account(w, s, p, 1);
        worker_fail(w, AL_MEMORY_LIMIT, "the worker ran out of memory");
        return NULL;
    }
    mem_account(w, s, q, 1);
    return q;
}

static size_t mem_usable_size(const void *p)
{
    return malloc_usable_size((void *)p);
}

static const JSMallocFunctions mem_functions = {
    mem_malloc,
    mem_free,
    mem_realloc,
    mem_usable_size,
};

/* ------------------------------------------------------------------ limits */

/* The host hung up (it died, or was killed before it could kill this worker): nobody will read
 * what the run does, and a guest spinning without host calls would never notice otherwise. */
static int host_gone(const struct worker *w)
{
    struct pollfd pfd = { .fd = w->io.fd, .events = 0 };
    return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)) != 0;
}

static int interrupt_handler(JSRuntime *rt, void *opaque)
{
    (void)rt;
    struct worker *w = opaque;
    if (w->fatal.code != AL_OK) {
        return 1;
    }
    uint64_t now = clock_mono_us();
    if (now - w->io.last_host_check_us > ENGINE_HOST_CHECK_US) {
        w->io.last_host_check_us = now;
        if (host_gone(w)) {
            _exit(0);
        }
    }
    if (w->io.out.len && now - w->io.last_flush_us > ENGINE_FLUSH_US) {
        worker_flush(w); /* w->io.out holds whole frames only: console entries */
    }
    if (now >= w->eng.wall_deadline_us) {
        worker_fail(w, AL_TIMEOUT, "the run exceeded its timeout of %llu ms",
                    (unsigned long long)w->req.limits[AL_LIMIT_TIMEOUT_MS]);
        return 1;
    }
    if (clock_self_cpu_us() >= w->eng.cpu_deadline_us) {
        worker_fail(w, AL_CPU_LIMIT, "the run exceeded its CPU limit of %llu ms",
                    (unsigned long long)w->req.limits[AL_LIMIT_CPU_MS]);
        return 1;
    }
    return 0;
}

void engine_on_stack_overflow(JSContext *ctx)
{
    struct worker *w = JS_GetRuntimeOpaque(JS_GetRuntime(ctx));
    if (w) {
        worker_fail(w, AL_STACK_OVERFLOW, "the guest exceeded its stack limit of %llu bytes",
                    (unsigned long long)w->req.limits[AL_LIMIT_STACK_BYTES]);
    }
}

size_t engine_wrapper_length(JSContext *ctx)
{
    struct worker *w = JS_GetRuntimeOpaque(JS_GetRuntime(ctx));
    if (!w || !w->eng.compiling_user) {
        return 0;
    }
    /* from "async" (offset 1) to the wrapper's closing brace; the tail has "})()" after "\n" */
    return w->req.source_len - 1 - (sizeof wrapper_tail - 1) + 2;
}

uint64_t engine_wall_deadline(const struct worker *w)
{
    return w->eng.wall_deadline_us;
}

/* ------------------------------------------------------------------ determinism */

/* splitmix64: small, fast, and every seed gives a full-period sequence. */
static uint64_t rng_next(struct worker *w)
{
    uint64_t z = (w->eng.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static JSValue math_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    (void)argv;
    struct worker *w = JS_GetContextOpaque(ctx);
    return JS_NewFloat64(ctx, (double)(rng_next(w) >> 11) * 0x1.0p-53);
}

static JSValue date_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    (void)argv;
    struct worker *w = JS_GetContextOpaque(ctx);
    return JS_NewFloat64(ctx, (double)w->eng.clock_ms);
}

/* Date as the guest sees it: the intrinsic, except that "now" is the run's clock. Calls with
 * arguments, subclassing (new.target) and everything on Date.prototype go to the intrinsic. */
static JSValue date_ctor(JSContext *ctx, JSValueConst new_target, int argc, JSValueConst *argv,
                         int magic, JSValue *data)
{
    (void)magic;
    struct worker *w = JS_GetContextOpaque(ctx);
    JSValueConst real = data[0];
    JSValue now = JS_NewFloat64(ctx, (double)w->eng.clock_ms);
    JSValue ret;
    if (JS_IsUndefined(new_target)) {
        JSValue d = JS_CallConstructor(ctx, real, 1, (JSValueConst *)&now);
        if (JS_IsException(d)) {
            return d;
        }
        ret = JS_ToString(ctx, d);
        JS_FreeValue(ctx, d);
    } else if (argc == 0) {
        ret = JS_CallConstructor2(ctx, real, new_target, 1, (JSValueConst *)&now);
    } else {
        ret = JS_CallConstructor2(ctx, real, new_target, argc, argv);
    }
    JS_FreeValue(ctx, now);
    return ret;
}

static int install_determinism(struct worker *w, JSContext *ctx, JSValueConst global)
{
    int rc = -1;
    JSValue math = JS_GetPropertyStr(ctx, global, "Math");
    JSValue real = JS_GetPropertyStr(ctx, global, "Date");
    JSValue proto = JS_UNDEFINED;
    JSValue date = JS_UNDEFINED;
    (void)w;
    if (JS_DefinePropertyValueStr(ctx, math, "random",
                                  JS_NewCFunction(ctx, math_random, "random", 0),
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        goto out;
    }
    date = JS_NewCFunctionData(ctx, date_ctor, 7, 0, 1, (JSValueConst *)&real);
    if (JS_IsException(date)) {
        goto out;
    }
    JS_SetConstructorBit(ctx, date, 1);
    proto = JS_GetPropertyStr(ctx, real, "prototype");
    static const char *const statics[] = { "parse", "UTC" };
    for (size_t i = 0; i < sizeof statics / sizeof statics[0]; i++) {
        JS_DefinePropertyValueStr(ctx, date, statics[i], JS_GetPropertyStr(ctx, real, statics[i]),
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    }
    JS_DefinePropertyValueStr(ctx, date, "now", JS_NewCFunction(ctx, date_now, "now", 0),
                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    JS_DefinePropertyValueStr(ctx, date, "name", JS_NewString(ctx, "Date"), JS_PROP_CONFIGURABLE);
    JS_DefinePropertyValueStr(ctx, date, "prototype", JS_DupValue(ctx, proto), 0);
    JS_DefinePropertyValueStr(ctx, proto, "constructor", JS_DupValue(ctx, date),
                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    if (JS_DefinePropertyValueStr(ctx, global, "Date", JS_DupValue(ctx, date),
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        goto out;
    }
    rc = 0;
out:
    JS_FreeValue(ctx, date);
    JS_FreeValue(ctx, proto);
    JS_FreeValue(ctx, real);
    JS_FreeValue(ctx, math);
    return rc;
}

/* ------------------------------------------------------------------ hardening */

/* Intrinsics not reachable from the global object by walking properties and prototypes:
 * evaluated in the guest context before it is frozen, so they get frozen too. */
static const char seeds_source[] =
        "(function () {\n"
        "  'use strict';\n"
        "  const P = Object.getPrototypeOf;\n"
        "  const callee = Object.getOwnPropertyDescriptor((function () { return arguments; })(),"
        " 'callee');\n"
        "  return [P(function* () {}), P(async function () {}), P(async function* () {}),\n"
        "    P([][Symbol.iterator]()), P(new Map()[Symbol.iterator]()),\n"
        "    P(new Set()[Symbol.iterator]()), P(''[Symbol.iterator]()),\n"
        "    P(/a/[Symbol.matchAll]('')), callee.get, P(Int8Array)];\n"
        "})()";

struct ptrset {
    void **slots;
    size_t cap;
    size_t len;
};

static int ptrset_add(struct ptrset *s, void *p)
{
    if ((s->len + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        void **slots = calloc(cap, sizeof *slots);
        if (!slots) {
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (s->slots[i]) {
                size_t h = ((uintptr_t)s->slots[i] >> 4) & (cap - 1);
                while (slots[h]) {
                    h = (h + 1) & (cap - 1);
                }
                slots[h] = s->slots[i];
            }
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t h = ((uintptr_t)p >> 4) & (s->cap - 1);
    while (s->slots[h]) {
        if (s->slots[h] == p) {
            return 0;
        }
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = p;
    s->len++;
    return 1;
}

/* Freezes `v` and everything reachable from it through properties (values and accessors) and
 * prototypes. Threat: a guest that mutates a shared intrinsic (Array.prototype.push, a host
 * group) to change what later code - its own or the bridge's - does. */
static int freeze_deep(JSContext *ctx, struct ptrset *seen, JSValueConst freeze, JSValueConst v)
{
    if (!JS_IsObject(v)) {
        return 0;
    }
    int added = ptrset_add(seen, JS_VALUE_GET_PTR(v));
    if (added <= 0) {
        return added;
    }
    JSValue r = JS_Call(ctx, freeze, JS_UNDEFINED, 1, &v);
    if (JS_IsException(r)) {
        return -1;
    }
    JS_FreeValue(ctx, r);
    JSValue proto = JS_GetPrototype(ctx, v);
    int rc = freeze_deep(ctx, seen, freeze, proto);
    JS_FreeValue(ctx, proto);
    if (rc < 0) {
        return -1;
    }
    JSPropertyEnum *tab = NULL;
    uint32_t n = 0;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, v, JS_GPN_STRING_MASK | JS_GPN_SYMBOL_MASK) < 0) {
        return -1;
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        JSPropertyDescriptor d;
        int has = JS_GetOwnProperty(ctx, &d, v, tab[i].atom);
        if (has < 0) {
            rc = -1;
        } else if (has > 0) {
            if (freeze_deep(ctx, seen, freeze, d.value) < 0 ||
                freeze_deep(ctx, seen, freeze, d.getter) < 0 ||
                freeze_deep(ctx, seen, freeze, d.setter) < 0) {
                rc = -1;
            }
            JS_FreeValue(ctx, d.value);
            JS_FreeValue(ctx, d.getter);
            JS_FreeValue(ctx, d.setter);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        JS_FreeAtom(ctx, tab[i].atom);
    }
    js_free(ctx, tab);
    return rc;
}

/* Removes forbidden globals, freezes every intrinsic, and makes every global binding
 * non-writable and non-configurable. The global object itself stays extensible so sloppy
 * assignments of new names keep working. */
static int harden(JSContext *ctx, JSValueConst global, JSValueConst seeds)
{
    int rc = -1;
    struct ptrset seen = { 0 };
    JSPropertyEnum *tab = NULL;
    uint32_t n = 0;
    JSValue object = JS_GetPropertyStr(ctx, global, "Object");
    JSValue freeze = JS_GetPropertyStr(ctx, object, "freeze");

    for (size_t i = 0; i < guest_removed_globals_count; i++) {
        JSAtom a = JS_NewAtom(ctx, guest_removed_globals[i]);
        JS_DeleteProperty(ctx, global, a, 0);
        JS_FreeAtom(ctx, a);
    }
    if (ptrset_add(&seen, JS_VALUE_GET_PTR(global)) < 0) {
        goto out;
    }
    if (freeze_deep(ctx, &seen, freeze, seeds) < 0) {
        goto out;
    }
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, global, JS_GPN_STRING_MASK | JS_GPN_SYMBOL_MASK) <
        0) {
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        JSPropertyDescriptor d;
        int has = JS_GetOwnProperty(ctx, &d, global, tab[i].atom);
        if (has <= 0) {
            continue;
        }
        int bad = freeze_deep(ctx, &seen, freeze, d.value) < 0 ||
                  freeze_deep(ctx, &seen, freeze, d.getter) < 0 ||
                  freeze_deep(ctx, &seen, freeze, d.setter) < 0;
        int accessor = (d.flags & JS_PROP_GETSET) != 0;
        JS_FreeValue(ctx, d.value);
        JS_FreeValue(ctx, d.getter);
        JS_FreeValue(ctx, d.setter);
        if (bad) {
            goto out;
        }
        int flags = JS_PROP_HAS_CONFIGURABLE | (accessor ? 0 : JS_PROP_HAS_WRITABLE);
        if (JS_DefineProperty(ctx, global, tab[i].atom, JS_UNDEFINED, JS_UNDEFINED, JS_UNDEFINED,
                              flags) < 0) {
            goto out;
        }
    }
    rc = 0;
out:
    if (tab) {
        for (uint32_t i = 0; i < n; i++) {
            JS_FreeAtom(ctx, tab[i].atom);
        }
        js_free(ctx, tab);
    }
    free(seen.slots);
    JS_FreeValue(ctx, freeze);
    JS_FreeValue(ctx, object);
    return rc;
}

/* ------------------------------------------------------------------ errors */

/* A guest's text as a C string. A NUL inside becomes the two bytes C0 80 (never produced by
 * QuickJS for anything else), so the text survives every C-string step here and the host turns
 * it back into NUL (utf8_valid_dup with UTF8_C080_IS_NUL). */
static char *dup_cstr(JSContext *ctx, JSValueConst v)
{
    size_t len;
    const char *s = JS_ToCStringLen(ctx, &len, v);
    if (!s) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        return strdup("");
    }
    size_t nuls = 0;
    for (size_t i = 0; i < len; i++) {
        nuls += s[i] == '\0';
    }
    char *r = malloc(len + nuls + 1);
    if (r) {
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (s[i] == '\0') {
                r[o++] = (char)0xC0;
                r[o++] = (char)0x80;
            } else {
                r[o++] = s[i];
            }
        }
        r[o] = '\0';
    }
    JS_FreeCString(ctx, s);
    return r;
}

static char *get_str_prop(JSContext *ctx, JSValueConst obj, const char *name)
{
    JSValue v = JS_GetPropertyStr(ctx, obj, name);
    if (JS_IsException(v)) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        return strdup("");
    }
    char *r = JS_IsUndefined(v) ? strdup("") : dup_cstr(ctx, v);
    JS_FreeValue(ctx, v);
    return r;
}

void engine_rethrow_compile_error(struct worker *w, JSContext *ctx)
{
    JSValue e = JS_GetException(w->eng.cc);
    char *msg = get_str_prop(w->eng.cc, e, "message");
    char *stack = get_str_prop(w->eng.cc, e, "stack");
    JS_FreeValue(w->eng.cc, e);
    /* The stack's first frame is the position: "    at mod.js:3:7". */
    const char *at = stack ? strstr(stack, "at ") : NULL;
    size_t at_len = at ? strcspn(at + 3, "\n") : 0;
    JS_ThrowSyntaxError(ctx, "%s%s%.*s%s", msg ? msg : "syntax error", at ? " (" : "",
                        (int)(at_len > 300 ? 300 : at_len), at ? at + 3 : "", at ? ")" : "");
    free(msg);
    free(stack);
}

/* Keeps only frames in the user's file (no "<eval>" wrapper frame, no native frames) and
 * moves line-1 columns back by the wrapper's prefix, so positions are those of the user's text. */
static char *filter_stack(const char *stack, const char *filename, size_t prefix_cols)
{
    struct buf b;
    buf_init(&b, 64 * 1024);
    char needle[300];
    int nlen = snprintf(needle, sizeof needle, "%s:", filename);
    const char *p = stack;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *at = memmem(p, len, needle, (size_t)nlen);
        if (at && !memmem(p, len, "at <eval>", 9)) {
            if (b.len) {
                buf_append_byte(&b, '\n');
            }
            const char *num = at + nlen;
            unsigned line = 0, col = 0;
            int used = 0;
            if (sscanf(num, "%u:%u%n", &line, &col, &used) == 2 && line == 1 && col > prefix_cols) {
                buf_append(&b, p, (size_t)(num - p));
                buf_printf(&b, "1:%u", col - (unsigned)prefix_cols);
                buf_append(&b, num + used, len - (size_t)(num + used - p));
            } else {
                buf_append(&b, p, len);
            }
        }
        p += len + (eol ? 1 : 0);
    }
    char *r = b.data ? buf_steal(&b, NULL) : strdup("");
    return r;
}

/* A copy of at most `max` bytes of s, cut at a UTF-8 boundary: a guest's error text is bounded
 * like its result (AL_ERROR_*_MAX in airlock.h). */
static char *dup_capped(const char *s, size_t max)
{
    size_t n = strlen(s);
    return strndup(s, n > max ? utf8_cut(s, max) : n);
}

static void outcome_set(struct outcome *o, enum al_code code, const char *name, const char *message,
                        const char *stack)
{
    o->end = OUTCOME_FAILED;
    o->code = code;
    free(o->name);
    free(o->message);
    free(o->stack);
    o->name = dup_capped(name ? name : "", AL_ERROR_NAME_MAX);
    o->message = dup_capped(message ? message : "", AL_ERROR_MESSAGE_MAX);
    o->stack = dup_capped(stack ? stack : "", AL_ERROR_STACK_MAX);
}

/* Describes a thrown value. Never trusts it: a guest `code` property is ignored, and getters
 * that throw yield empty strings. */
static void outcome_exception(struct worker *w, JSContext *ctx, JSValueConst exc, struct outcome *o)
{
    enum al_code code = AL_USER_ERROR;
    if (bridge_is_host_error(w, ctx, exc)) {
        code = AL_HOST_FUNCTION_ERROR;
    }
    if (JS_IsError(ctx, exc)) {
        char *name = get_str_prop(ctx, exc, "name");
        char *message = get_str_prop(ctx, exc, "message");
        char *stack = get_str_prop(ctx, exc, "stack");
        char *filtered =
                filter_stack(stack, w->req.filename,
                             (w->req.run_flags & WIRE_RUN_MODULE) ? 0 : sizeof wrapper_head - 1);
        outcome_set(o, code, name, message, filtered);
        free(name);
        free(message);
        free(stack);
        free(filtered);
    } else {
        char *message = dup_cstr(ctx, exc);
        outcome_set(o, code, "", message, "");
        free(message);
    }
}

static void outcome_pending_exception(struct worker *w, JSContext *ctx, struct outcome *o)
{
    JSValue exc = JS_GetException(ctx);
    outcome_exception(w, ctx, exc, o);
    JS_FreeValue(ctx, exc);
}

/* ------------------------------------------------------------------ request */

static int wrap_source(struct worker *w, const char *s, size_t len);

char *engine_strip_ts(const char *src, size_t len, const char *name, size_t *ret_len,
                      char **ret_error)
{
    struct ts_options opts = { name, TS_TRANSFORM };
    struct ts_error err;
    char *out = NULL;
    if (ts_strip_opts(src, len, &opts, &out, ret_len, &err) == 0) {
        return out;
    }
    *ret_error = strdup(err.message[0] ? err.message : "cannot strip the TypeScript source");
    return NULL;
}

static int parse_run(struct worker *w, struct wire_cursor *c)
{
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        w->req.limits[i] = wire_get_u64(c);
    }
    w->req.seed = wire_get_u64(c);
    w->eng.clock_ms = (int64_t)wire_get_u64(c);
    w->req.run_flags = wire_get_u8(c);
    size_t len;
    const char *s = wire_get_str(c, &len);
    w->req.filename = strndup(s, len);
    w->req.nfns = wire_get_u32(c);
    if (c->bad || len == 0 || len > AL_FILENAME_MAX || memchr(s, '\0', len) ||
        w->req.nfns > 100000) {
        return -1;
    }
    w->req.fns = calloc(w->req.nfns ? w->req.nfns : 1, sizeof *w->req.fns);
    if (!w->req.fns) {
        return -1;
    }
    for (uint32_t i = 0; i < w->req.nfns; i++) {
        s = wire_get_str(c, &len);
        const char *dot = memchr(s, '.', len);
        if (!dot || dot == s || dot == s + len - 1) {
            return -1;
        }
        w->req.fns[i].name = strndup(s, len);
        w->req.fns[i].group_len = (size_t)(dot - s);
        uint8_t flags = wire_get_u8(c);
        w->req.fns[i].sync = (flags & WIRE_FN_SYNC) != 0;
        w->req.fns[i].hidden = (flags & (WIRE_FN_HIDDEN | WIRE_FN_FILE)) != 0;
        w->req.fns[i].file = (flags & WIRE_FN_FILE) != 0;
    }
    w->req.file_args_max = wire_get_u64(c);
    s = wire_get_str(c, &len);
    if (c->bad || !w->req.filename) {
        return -1;
    }
    char *stripped = NULL;
    if (w->req.run_flags & WIRE_RUN_TYPESCRIPT) {
        stripped = engine_strip_ts(s, len, w->req.filename, &len, &w->req.ts_error);
        if (!stripped) {
            len = 0; /* run_guest reports w->req.ts_error */
        }
        s = stripped ? stripped : "";
    }
    int rc = wrap_source(w, s, len);
    free(stripped);
    return rc;
}

/* The user's source as the compiler gets it: a module as it is, a function body wrapped. */
static int wrap_source(struct worker *w, const char *s, size_t len)
{
    if (w->req.run_flags & WIRE_RUN_MODULE) {
        w->req.source = malloc(len + 1); /* a module is compiled as it is */
        if (!w->req.source) {
            return -1;
        }
        memcpy(w->req.source, s, len);
        w->req.source[len] = '\0';
        w->req.source_len = len;
        return 0;
    }
    /* The wrapper keeps the user's first line on line 1, so line numbers need no correction. */
    w->req.source_len = sizeof wrapper_head - 1 + len + sizeof wrapper_tail - 1;
    w->req.source = malloc(w->req.source_len + 1);
    if (!w->req.source) {
        return -1;
    }
    memcpy(w->req.source, wrapper_head, sizeof wrapper_head - 1);
    memcpy(w->req.source + sizeof wrapper_head - 1, s, len);
    memcpy(w->req.source + sizeof wrapper_head - 1 + len, wrapper_tail, sizeof wrapper_tail);
    return 0;
}

/* ------------------------------------------------------------------ the run */

#define ENGINE_GC_THRESHOLD ((size_t)4 << 20) /* heap bytes before the first cycle collection */

/* The parser needs only the base objects, eval, the regexp compiler (for regexp literals) and
 * BigInt (for BigInt literals): a full context would cost a millisecond per run for nothing. */
static JSContext *new_compile_context(JSRuntime *rt)
{
    JSContext *ctx = JS_NewContextRaw(rt);
    if (!ctx) {
        return NULL;
    }
    JS_AddIntrinsicBaseObjects(ctx);
    JS_AddIntrinsicEval(ctx);
    JS_AddIntrinsicRegExpCompiler(ctx);
    JS_AddIntrinsicBigInt(ctx);
    return ctx;
}

/* Compiles `src` in the compile context into bytecode that is then read into the guest
 * context: 1 and the value in *ret_fn, 0 with the exception pending in the compile context,
 * -1 when out of memory. */
int engine_compile(struct worker *w, const char *src, size_t len, const char *filename,
                   int eval_type, JSValue *ret_fn)
{
    JSValue fn = JS_Eval(w->eng.cc, src, len, filename, eval_type | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(fn)) {
        return 0;
    }
    size_t n = 0;
    uint8_t *bc = JS_WriteObject(w->eng.cc, &n, fn, JS_WRITE_OBJ_BYTECODE);
    JS_FreeValue(w->eng.cc, fn);
    if (!bc) {
        return -1;
    }
    JSValue g = JS_ReadObject(w->eng.ctx, bc, n, JS_READ_OBJ_BYTECODE);
    js_free(w->eng.cc, bc);
    if (JS_IsException(g)) {
        JSValue e = JS_GetException(w->eng.ctx);
        JS_FreeValue(w->eng.ctx, e);
        return -1;
    }
    *ret_fn = g;
    return 1;
}

static JSContext *new_guest_context(JSRuntime *rt)
{
    JSContext *ctx = JS_NewContextRaw(rt);
    if (!ctx) {
        return NULL;
    }
    /* Deliberately no JS_AddIntrinsicEval: see the top of this file. */
    JS_AddIntrinsicBaseObjects(ctx);
    JS_AddIntrinsicDate(ctx);
    JS_AddIntrinsicStringNormalize(ctx);
    JS_AddIntrinsicRegExpCompiler(ctx);
    JS_AddIntrinsicRegExp(ctx);
    JS_AddIntrinsicJSON(ctx);
    JS_AddIntrinsicProxy(ctx);
    JS_AddIntrinsicMapSet(ctx);
    JS_AddIntrinsicTypedArrays(ctx);
    JS_AddIntrinsicPromise(ctx);
    JS_AddIntrinsicBigInt(ctx);
    return ctx;
}

static JSValue on_settle(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                         int magic, JSValue *data)
{
    (void)this_val;
    (void)data;
    struct worker *w = JS_GetContextOpaque(ctx);
    struct engine_settle *s = &w->eng.settle;
    if (s->state == ENGINE_PENDING) {
        s->state = (enum engine_settle_state)magic;
        s->value = JS_DupValue(ctx, argc > 0 ? argv[0] : JS_UNDEFINED);
    }
    return JS_UNDEFINED;
}

static int drain_jobs(struct worker *w, struct outcome *o)
{
    JSContext *c;
    for (;;) {
        int r = JS_ExecutePendingJob(w->eng.rt, &c);
        if (r == 0) {
            return 0;
        }
        if (r < 0) {
            if (w->fatal.code == AL_OK) {
                outcome_pending_exception(w, c, o);
                return -1;
            }
            JSValue e = JS_GetException(c);
            JS_FreeValue(c, e);
        }
        if (w->fatal.code != AL_OK) {
            return -1;
        }
    }
}

/* A run goes through these phases in order; a phase that ends the run has set the outcome. */

/* Phase 1: the user's source to bytecode in the guest context (*ret_fn). 0, or -1. */
static int phase_compile(struct worker *w, struct outcome *o, JSValue *ret_fn)
{
    int module = (w->req.run_flags & WIRE_RUN_MODULE) != 0;
    JSValue fn = JS_UNDEFINED;
    if (w->req.ts_error) {
        /* The message names the place: "TypeScript enum ... (run.ts:3:1): ..." */
        outcome_set(o, AL_USER_ERROR, "SyntaxError", w->req.ts_error, "");
        return -1;
    }
    modules_prepare(w);
    w->eng.compiling_user = !module; /* the wrapper check: a module has no wrapper */
    int cr = engine_compile(w, w->req.source, w->req.source_len, w->req.filename,
                            module ? JS_EVAL_TYPE_MODULE : JS_EVAL_TYPE_GLOBAL, &fn);
    w->eng.compiling_user = 0;
    if (cr == 0) {
        outcome_pending_exception(w, w->eng.cc, o); /* a SyntaxError */
        return -1;
    }
    /* The compile context (which has eval) is gone before any guest code runs - unless the run
     * has a module loader, whose modules it compiles; it is never reachable from the guest. */
    if (!modules_have_loader(w)) {
        JS_FreeContext(w->eng.cc);
        w->eng.cc = NULL;
    }
    if (cr < 0) {
        outcome_set(o, w->fatal.code ? w->fatal.code : AL_MEMORY_LIMIT, "",
                    w->fatal.code ? w->fatal.msg : "out of memory while compiling", "");
        return -1;
    }
    *ret_fn = fn;
    return 0;
}

/* Phase 2: the host functions installed, the guest evaluated up to its first wait, and its
 * promise watched (w->eng.settle). Consumes fn. 0, or -1. */
static int phase_evaluate(struct worker *w, struct outcome *o, JSValue fn, JSValue *ret_promise)
{
    JSContext *ctx = w->eng.ctx;
    int module = (w->req.run_flags & WIRE_RUN_MODULE) != 0;
    JSValue handlers[2] = { JS_UNDEFINED, JS_UNDEFINED };
    int rc = -1;
    if (bridge_install(w, ctx) < 0 || modules_install_workspace(w, ctx) < 0) {
        JS_FreeValue(ctx, fn);
        outcome_set(o, w->fatal.code ? w->fatal.code : AL_INTERNAL_ERROR, "",
                    "cannot install the host functions", "");
        return -1;
    }
    JSValue promise = module ? modules_run_entry(w, ctx, fn) : JS_EvalFunction(ctx, fn);
    if (JS_IsException(promise)) {
        outcome_pending_exception(w, ctx, o);
        return -1;
    }
    *ret_promise = promise;
    handlers[0] = JS_NewCFunctionData(ctx, on_settle, 1, ENGINE_FULFILLED, 0, NULL);
    handlers[1] = JS_NewCFunctionData(ctx, on_settle, 1, ENGINE_REJECTED, 0, NULL);
    JSValue r = JS_Call(ctx, w->bridge.promise_then, promise, 2, (JSValueConst *)handlers);
    if (JS_IsException(r)) {
        outcome_pending_exception(w, ctx, o);
        goto out;
    }
    JS_FreeValue(ctx, r);
    rc = 0;
out:
    JS_FreeValue(ctx, handlers[0]);
    JS_FreeValue(ctx, handlers[1]);
    return rc;
}

enum loop_end {
    LOOP_SETTLED,     /* the guest's promise settled */
    LOOP_INTERRUPTED, /* only interrupted calls are left: the run ends interrupted */
    LOOP_FAILED,      /* a limit, a fault or a guest that can never settle (outcome set) */
};

/* Phase 3: the event loop. Alternates between running jobs and waiting for host answers until
 * the guest's promise settles, a limit trips, or nothing can ever settle it. */
static enum loop_end phase_event_loop(struct worker *w, struct outcome *o)
{
    JSContext *ctx = w->eng.ctx;
    for (;;) {
        if (drain_jobs(w, o) < 0) {
            return LOOP_FAILED;
        }
        if (w->eng.settle.state != ENGINE_PENDING) {
            return LOOP_SETTLED;
        }
        int dr = bridge_apply_deferred(w, ctx);
        if (dr < 0) {
            worker_fail(w, AL_PROTOCOL_ERROR, "the host sent an answer to no pending call");
            return LOOP_FAILED;
        }
        if (dr > 0) {
            continue;
        }
        bridge_dispatch(w);
        if (w->bridge.dispatched_pending == 0) {
            if (w->bridge.interrupted > 0) {
                return LOOP_INTERRUPTED; /* nothing else can happen until a person decides */
            }
            if (bridge_has_unobserved(w)) {
                outcome_set(o, AL_DETACHED_BRIDGE_REQUEST, "",
                            "the run waits forever: its only pending host calls were never "
                            "awaited",
                            "");
            } else {
                outcome_set(o, AL_USER_ERROR, "Error",
                            "the run awaits a promise that can never settle (no host call is "
                            "in flight)",
                            "");
            }
            return LOOP_FAILED;
        }
        if (w->req.run_flags & WIRE_RUN_REPORT_IDLE) {
            /* The host replays a ledger and must know when we wait on it alone. */
            size_t start;
            wire_begin(&w->io.out, WIRE_IDLE, &start);
            wire_u32(&w->io.out, w->bridge.answers_applied);
            wire_end(&w->io.out, start);
        }
        uint8_t type;
        struct wire_cursor c;
        size_t flen;
        int fr = worker_wait_frame(w, w->eng.wall_deadline_us, &type, &c, &flen);
        if (fr == 0) {
            worker_fail(w, AL_TIMEOUT, "the run exceeded its timeout of %llu ms",
                        (unsigned long long)w->req.limits[AL_LIMIT_TIMEOUT_MS]);
            return LOOP_FAILED;
        }
        if (fr < 0 || type != WIRE_ANSWER) {
            worker_fail(w, AL_PROTOCOL_ERROR, "the host sent a malformed or unexpected frame");
            return LOOP_FAILED;
        }
        int br = bridge_answer(w, ctx, &c);
        worker_consume(w, flen);
        if (br < 0) {
            worker_fail(w, AL_PROTOCOL_ERROR, "the host sent an answer to no pending call");
            return LOOP_FAILED;
        }
    }
}

/* Phase 4: the settled value becomes the outcome - the result encoded, or the thrown value
 * described. Getters run here, after the guest has returned: no host call may start any more. */
static void phase_result(struct worker *w, struct outcome *o)
{
    JSContext *ctx = w->eng.ctx;
    bridge_close(w);
    /* Answers held back during a sync call are answers all the same: apply them (their
     * reactions never run, the guest is done) so they do not count as detached. */
    while (bridge_apply_deferred(w, ctx) > 0) {
    }
    const char *detached = bridge_detached(w);
    if (detached) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the run finished while a call to %s was still unanswered or never awaited",
                 detached);
        outcome_set(o, AL_DETACHED_BRIDGE_REQUEST, "", msg, "");
        return;
    }
    if (w->eng.settle.state == ENGINE_REJECTED) {
        outcome_exception(w, ctx, w->eng.settle.value, o);
        return;
    }
    struct value_limits vl = { ENGINE_VALUE_DEPTH, (size_t)w->req.limits[AL_LIMIT_RESULT_BYTES] };
    struct al_error err = { 0 };
    enum al_code rc =
            value_encode_cached(w->eng.values, w->eng.settle.value, "value", &vl, &o->value, &err);
    if (rc == AL_USER_ERROR) {
        outcome_pending_exception(w, ctx, o);
    } else if (rc == AL_OUTPUT_LIMIT) {
        char msg[256];
        snprintf(msg, sizeof msg, "the result exceeds the result limit of %llu bytes",
                 (unsigned long long)w->req.limits[AL_LIMIT_RESULT_BYTES]);
        outcome_set(o, AL_OUTPUT_LIMIT, "", msg, "");
    } else if (rc != AL_OK) {
        outcome_set(o, rc, "", err.message, "");
    } else {
        o->end = OUTCOME_COMPLETED;
        o->code = AL_OK;
    }
}

static void run_guest(struct worker *w, struct outcome *o)
{
    JSValue fn = JS_UNDEFINED;
    JSValue promise = JS_UNDEFINED;
    w->eng.settle.state = ENGINE_PENDING;
    w->eng.settle.value = JS_UNDEFINED;
    if (phase_compile(w, o, &fn) == 0 && phase_evaluate(w, o, fn, &promise) == 0) {
        switch (phase_event_loop(w, o)) {
        case LOOP_SETTLED:
            phase_result(w, o);
            break;
        case LOOP_INTERRUPTED:
            o->end = OUTCOME_INTERRUPTED;
            o->code = AL_OK;
            break;
        case LOOP_FAILED:
            break;
        }
    }
    JS_FreeValue(w->eng.ctx, w->eng.settle.value);
    w->eng.settle.value = JS_UNDEFINED;
    JS_FreeValue(w->eng.ctx, promise);
}

static void send_done(struct worker *w, const struct outcome *o, uint64_t cpu_us,
                      uint32_t host_calls)
{
    size_t start;
    struct buf *b = &w->io.out;
    wire_begin(b, WIRE_DONE, &start);
    wire_u32(b, o->end == OUTCOME_INTERRUPTED && w->fatal.code == AL_OK ? WIRE_DONE_INTERRUPTED
                                                                        : (uint32_t)o->code);
    wire_str(b, o->value.data ? o->value.data : "", o->value.len);
    wire_str(b, o->name ? o->name : "", o->name ? strlen(o->name) : 0);
    wire_str(b, o->message ? o->message : "", o->message ? strlen(o->message) : 0);
    wire_str(b, o->stack ? o->stack : "", o->stack ? strlen(o->stack) : 0);
    wire_u64(b, cpu_us);
    wire_u64(b, w->eng.mem_peak);
    wire_u32(b, host_calls);
    wire_end(b, start);
}

int engine_prepare(struct worker *w)
{
    int rc = -1;
    JSValue global = JS_UNDEFINED;
    JSValue probe = JS_UNDEFINED;
    JSValue seeds = JS_UNDEFINED;
    struct al_error err;

    /* No limits apply until the request arrives. */
    w->eng.mem_cap = SIZE_MAX;
    w->eng.wall_deadline_us = UINT64_MAX;
    w->eng.cpu_deadline_us = UINT64_MAX;
    w->eng.rt = JS_NewRuntime2(&mem_functions, w);
    if (!w->eng.rt) {
        return -1;
    }
    JS_SetRuntimeOpaque(w->eng.rt, w);
    JS_SetInterruptHandler(w->eng.rt, interrupt_handler, w);
    w->eng.cc = new_compile_context(w->eng.rt);
    w->eng.ctx = new_guest_context(w->eng.rt);
    if (!w->eng.cc || !w->eng.ctx) {
        return -1;
    }
    JS_SetContextOpaque(w->eng.ctx, w);
    global = JS_GetGlobalObject(w->eng.ctx);
    if (install_determinism(w, w->eng.ctx, global) < 0 || console_install(w, w->eng.ctx) < 0 ||
        bridge_prepare(w, w->eng.ctx) < 0 || builtins_install(w->eng.ctx, global) < 0) {
        goto out;
    }
    if (engine_compile(w, seeds_source, sizeof seeds_source - 1, "<airlock>", JS_EVAL_TYPE_GLOBAL,
                       &probe) != 1) {
        goto out;
    }
    seeds = JS_EvalFunction(w->eng.ctx, probe); /* consumes probe */
    if (JS_IsException(seeds) || harden(w->eng.ctx, global, seeds) < 0) {
        goto out;
    }
    if (value_cache_new(w->eng.ctx, &w->eng.values, &err) != AL_OK) {
        goto out;
    }
    rc = 0;
out:
    JS_FreeValue(w->eng.ctx, seeds);
    JS_FreeValue(w->eng.ctx, global);
    return rc;
}

void engine_run(struct worker *w, int prepared)
{
    struct outcome o = { OUTCOME_FAILED, AL_INTERNAL_ERROR, { 0 }, NULL, NULL, NULL };
    uint8_t type;
    struct wire_cursor c;
    size_t flen;
    buf_init(&o.value, SIZE_MAX / 2);

    if (worker_wait_frame(w, 0, &type, &c, &flen) != 1 || type != WIRE_RUN ||
        parse_run(w, &c) != 0) {
        outcome_set(&o, AL_PROTOCOL_ERROR, "", "the host sent no valid RUN frame", "");
        goto done;
    }
    worker_consume(w, flen);
    w->eng.start_us = clock_mono_us();
    w->eng.cpu_start_us = clock_self_cpu_us();
    if (!prepared) {
        outcome_set(&o, AL_INTERNAL_ERROR, "", "the worker could not prepare a guest context", "");
        goto done;
    }
    if (jail_probe && jail_probe(w->req.source)) {
        outcome_set(&o, AL_INTERNAL_ERROR, "", "jail probe: the forbidden call was not stopped",
                    "");
        goto done;
    }
    w->eng.rng = w->req.seed;
    w->eng.mem_cap = (size_t)w->req.limits[AL_LIMIT_MEMORY_BYTES];
    jail_limit_run(w->req.limits[AL_LIMIT_MEMORY_BYTES], w->req.limits[AL_LIMIT_CPU_MS]);
    JS_SetMaxStackSize(w->eng.rt, (size_t)w->req.limits[AL_LIMIT_STACK_BYTES]);
    /* QuickJS collects cycles each time its heap grows by half, and a collection walks every
     * object, the context's own included. Reference counting frees all but cyclic garbage,
     * and the process ends with the run, so the first collection waits for
     * ENGINE_GC_THRESHOLD of heap - or an eighth of the heap limit, the most cyclic garbage a
     * guest can then hold when a large allocation fails (QuickJS collects only as objects are
     * made, never to retry an allocation). */
    JS_SetGCThreshold(w->eng.rt, w->eng.mem_cap / 8 < ENGINE_GC_THRESHOLD ? w->eng.mem_cap / 8
                                                                          : ENGINE_GC_THRESHOLD);
    w->eng.wall_deadline_us = w->eng.start_us + w->req.limits[AL_LIMIT_TIMEOUT_MS] * 1000;
    w->eng.cpu_deadline_us = w->eng.cpu_start_us + w->req.limits[AL_LIMIT_CPU_MS] * 1000;
    run_guest(w, &o);
done:
    if (w->fatal.code != AL_OK) {
        /* A latched limit or fault wins over whatever the guest did after it. */
        buf_reset(&o.value);
        outcome_set(&o, w->fatal.code, "", w->fatal.msg, "");
    }
    uint64_t cpu_us = w->eng.cpu_start_us ? clock_self_cpu_us() - w->eng.cpu_start_us : 0;
    uint32_t host_calls = w->bridge.ncalls; /* bridge_free forgets the calls */
    if (ENGINE_TEARDOWN) {
        if (w->eng.cc) {
            JS_FreeContext(w->eng.cc);
            w->eng.cc = NULL;
        }
        if (w->eng.ctx) {
            modules_free(w, w->eng.rt);
            bridge_free(w, w->eng.rt);
            value_cache_free(w->eng.values);
            w->eng.values = NULL;
            JS_FreeContext(w->eng.ctx);
            w->eng.ctx = NULL;
        }
        if (w->eng.rt) {
            /* Frees every guest object; QuickJS asserts here on a leaked reference. */
            JS_FreeRuntime(w->eng.rt);
            w->eng.rt = NULL;
        }
        sites_free(w);
    }
    send_done(w, &o, cpu_us, host_calls);
    buf_done(&o.value);
    free(o.name);
    free(o.message);
    free(o.stack);
}
