/*
 * bridge.c - host functions as the guest sees them, and the calls that cross to the host.
 *
 * Each group ("store") is a global object whose own properties are the registered functions;
 * harden() in engine.c freezes it and locks its global binding, so only registered own names
 * ever exist as capabilities - inherited members (`constructor`, `toString`, `then`, ...) are
 * ordinary intrinsics that never reach the host.
 *
 * Dispatch is lazy, like the peer `run`: an asynchronous call's arguments are encoded at call
 * time (so the guest cannot change them afterwards) but its CALL frame goes to the host only
 * once the guest observes the promise - the engine reports every reaction registered on a
 * promise (await, then by any route, Promise.all, ...) through bridge_on_promise_then. A call
 * that is never observed
 * never reaches the host, and the run fails with DETACHED_BRIDGE_REQUEST. Observation is
 * checked whenever the worker is about to block, which batches every call of one turn into a
 * single write. Synchronous groups dispatch at once and block until the answer arrives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value.h"
#include "worker.h"

#define BRIDGE_VALUE_DEPTH 1000

static struct bridge_call *find_by_promise(struct worker *w, JSValueConst p)
{
    if (!JS_IsObject(p)) {
        return NULL;
    }
    void *ptr = JS_VALUE_GET_PTR(p);
    for (uint32_t i = w->bridge.ncalls; i-- > 0;) {
        if (JS_IsObject(w->bridge.calls[i].promise) &&
            JS_VALUE_GET_PTR(w->bridge.calls[i].promise) == ptr) {
            return &w->bridge.calls[i];
        }
    }
    return NULL;
}

/* Called by the engine (hook in quickjs_airlock.c) whenever a reaction is registered on any
 * promise: await, then/catch/finally by any route, Promise.all and friends. */
void bridge_on_promise_then(JSContext *ctx, JSValueConst promise)
{
    struct worker *w = JS_GetContextOpaque(ctx);
    if (!w || w->bridge.unobserved == 0) {
        return;
    }
    struct bridge_call *call = find_by_promise(w, promise);
    if (call && !call->observed) {
        call->observed = 1;
        w->bridge.unobserved--;
    }
}

static struct bridge_call *new_call(struct worker *w)
{
    if (w->bridge.ncalls == w->bridge.cap_calls) {
        uint32_t cap = w->bridge.cap_calls ? w->bridge.cap_calls * 2 : 16;
        struct bridge_call *calls = realloc(w->bridge.calls, cap * sizeof *calls);
        if (!calls) {
            return NULL;
        }
        w->bridge.calls = calls;
        w->bridge.cap_calls = cap;
    }
    struct bridge_call *c = &w->bridge.calls[w->bridge.ncalls++];
    memset(c, 0, sizeof *c);
    c->promise = JS_UNDEFINED;
    c->resolve = JS_UNDEFINED;
    c->reject = JS_UNDEFINED;
    c->error = JS_UNDEFINED;
    c->sync_value = JS_UNDEFINED;
    return c;
}

static void send_call(struct worker *w, struct bridge_call *c)
{
    size_t start;
    wire_begin(&w->io.out, WIRE_CALL, &start);
    wire_u32(&w->io.out, (uint32_t)(c - w->bridge.calls) + 1);
    wire_u32(&w->io.out, c->fn);
    wire_str(&w->io.out, c->args, c->args_len);
    wire_u32(&w->io.out, c->line);
    wire_end(&w->io.out, start);
    free(c->args);
    c->args = NULL;
    c->dispatched = 1;
    w->bridge.dispatched_pending++;
}

void bridge_dispatch(struct worker *w)
{
    for (uint32_t i = 0; i < w->bridge.ncalls; i++) {
        struct bridge_call *c = &w->bridge.calls[i];
        if (!c->dispatched && !c->answered && c->observed) {
            send_call(w, c);
        }
    }
}

void bridge_close(struct worker *w)
{
    w->bridge.closed = 1;
}

int bridge_has_unobserved(const struct worker *w)
{
    for (uint32_t i = 0; i < w->bridge.ncalls; i++) {
        if (!w->bridge.calls[i].dispatched && !w->bridge.calls[i].answered) {
            return 1;
        }
    }
    return 0;
}

static JSValue throw_fatal(JSContext *ctx)
{
    /* The latched code ends the run at the next interrupt poll whatever the guest catches. */
    return JS_ThrowInternalError(ctx, "the run is ending: %s",
                                 ((struct worker *)JS_GetContextOpaque(ctx))->fatal.msg);
}

static JSValue wait_sync(struct worker *w, JSContext *ctx, struct bridge_call *call);

static JSValue host_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                         int magic, JSValue *data)
{
    (void)this_val;
    (void)data;
    struct worker *w = JS_GetContextOpaque(ctx);
    const struct bridge_fn *fn = &w->req.fns[magic];
    /* first, before encoding the arguments can run a getter: the line the approver is shown
     * comes from the engine's own record of this call, never from anything the guest made */
    uint32_t line =
            w->req.filename ? (uint32_t)airlock_call_line(ctx, fn->self, w->req.filename) : 0;
    struct buf args;
    struct al_error err = { 0 };
    JSValue arr = JS_UNDEFINED;
    JSValue ret = JS_EXCEPTION;

    if (w->fatal.code != AL_OK) {
        return throw_fatal(ctx);
    }
    if (w->bridge.closed) {
        /* A getter of the result (or of the thrown error) runs after the guest returned: the
         * call could never be awaited, so it never reaches the host. */
        worker_fail(w, AL_DETACHED_BRIDGE_REQUEST,
                    "a call to %s started after the guest returned (in a getter of its result "
                    "or error), so it can never be awaited",
                    fn->name);
        return throw_fatal(ctx);
    }
    if (w->bridge.ncalls >= w->req.limits[AL_LIMIT_HOST_CALLS]) {
        worker_fail(w, AL_BRIDGE_LIMIT, "the run made more than %llu host calls (call to %s)",
                    (unsigned long long)w->req.limits[AL_LIMIT_HOST_CALLS], fn->name);
        return throw_fatal(ctx);
    }
    if (w->bridge.in_flight >= w->req.limits[AL_LIMIT_IN_FLIGHT]) {
        worker_fail(w, AL_BRIDGE_LIMIT,
                    "the run had more than %llu host calls in flight (call to %s)",
                    (unsigned long long)w->req.limits[AL_LIMIT_IN_FLIGHT], fn->name);
        return throw_fatal(ctx);
    }
    /* a file's bytes are bounded by the workspace's limits, not the host-args limit */
    size_t args_max = fn->file ? (size_t)w->req.file_args_max
                               : (size_t)w->req.limits[AL_LIMIT_HOST_ARGS_BYTES];
    buf_init(&args, args_max);
    arr = JS_NewArray(ctx);
    if (JS_IsException(arr)) {
        goto out;
    }
    for (int i = 0; i < argc; i++) {
        if (JS_DefinePropertyValueUint32(ctx, arr, (uint32_t)i, JS_DupValue(ctx, argv[i]),
                                         JS_PROP_C_W_E) < 0) {
            goto out;
        }
    }
    struct value_limits vl = { BRIDGE_VALUE_DEPTH, args_max };
    enum al_code rc = value_encode_cached(w->eng.values, arr, "args", &vl, &args, &err);
    if (rc == AL_USER_ERROR) {
        goto out; /* a getter threw: the guest sees its exception */
    }
    if (rc == AL_OUTPUT_LIMIT && fn->file) {
        /* the guest's wrapper makes this an Error with code EFBIG: the run goes on */
        JS_ThrowRangeError(ctx,
                           "EFBIG: file too large (the data of a call to %s passes the "
                           "workspace's file_bytes limit)",
                           fn->name);
        goto out;
    }
    if (rc == AL_OUTPUT_LIMIT) {
        worker_fail(w, AL_BRIDGE_LIMIT,
                    "the arguments of a call to %s exceed the host-args limit of %llu bytes",
                    fn->name, (unsigned long long)w->req.limits[AL_LIMIT_HOST_ARGS_BYTES]);
        ret = throw_fatal(ctx);
        goto out;
    }
    if (rc != AL_OK) {
        worker_fail(w, rc, "%s (call to %s)", err.message, fn->name);
        ret = throw_fatal(ctx);
        goto out;
    }
    struct bridge_call *call = new_call(w);
    if (!call) {
        JS_ThrowOutOfMemory(ctx);
        goto out;
    }
    call->fn = (uint32_t)magic;
    call->line = line;
    call->args_len = args.len;
    call->args = args.data ? buf_steal(&args, NULL) : strdup("[]");
    w->bridge.in_flight++;
    if (fn->sync) {
        call->observed = 1;
        send_call(w, call);
        ret = wait_sync(w, ctx, call);
        goto out;
    }
    JSValue resolving[2];
    JSValue promise = JS_NewPromiseCapability(ctx, resolving);
    if (JS_IsException(promise)) {
        goto out;
    }
    /* new_call may have moved the array; `call` is still the last element. */
    call = &w->bridge.calls[w->bridge.ncalls - 1];
    call->promise = JS_DupValue(ctx, promise);
    w->bridge.unobserved++;
    call->resolve = resolving[0];
    call->reject = resolving[1];
    ret = promise;
out:
    buf_done(&args);
    JS_FreeValue(ctx, arr);
    return ret;
}

static JSValue wait_sync(struct worker *w, JSContext *ctx, struct bridge_call *call)
{
    uint32_t index = (uint32_t)(call - w->bridge.calls);
    for (;;) {
        if (w->bridge.calls[index].answered) {
            struct bridge_call *c = &w->bridge.calls[index];
            JSValue v = c->sync_value;
            c->sync_value = JS_UNDEFINED;
            if (c->sync_threw) {
                return JS_Throw(ctx, v);
            }
            return v;
        }
        bridge_dispatch(w);
        uint8_t type;
        struct wire_cursor cur;
        size_t flen;
        int fr = worker_wait_frame(w, engine_wall_deadline(w), &type, &cur, &flen);
        if (fr == 0) {
            worker_fail(w, AL_TIMEOUT, "the run exceeded its timeout of %llu ms",
                        (unsigned long long)w->req.limits[AL_LIMIT_TIMEOUT_MS]);
            return throw_fatal(ctx);
        }
        if (fr < 0 || type != WIRE_ANSWER) {
            worker_fail(w, AL_PROTOCOL_ERROR, "the host sent a malformed or unexpected frame");
            return throw_fatal(ctx);
        }
        /* An asynchronous call's answer waits until the guest is back in the event loop, so
         * answers always apply at the same points of a run: that is what makes a replayed run
         * (docs/continuations.md) take the path the original took. */
        struct wire_cursor peek = cur;
        uint32_t id = wire_get_u32(&peek);
        int br;
        if (id != index + 1) {
            br = buf_append(&w->bridge.deferred, w->io.in.data, flen) == BUF_OK ? 0 : -2;
        } else {
            br = bridge_answer(w, ctx, &cur);
        }
        worker_consume(w, flen);
        if (br == -2) {
            worker_fail(w, AL_MEMORY_LIMIT, "out of memory holding a host answer");
            return throw_fatal(ctx);
        }
        if (br < 0) {
            worker_fail(w, AL_PROTOCOL_ERROR, "the host sent an answer to no pending call");
            return throw_fatal(ctx);
        }
    }
}

int bridge_apply_deferred(struct worker *w, JSContext *ctx)
{
    uint8_t type;
    struct wire_cursor cur;
    size_t flen;
    if (wire_next(w->bridge.deferred.data, w->bridge.deferred.len, WORKER_MAX_FRAME, &type, &cur,
                  &flen) != 1) {
        return 0;
    }
    int br = bridge_answer(w, ctx, &cur);
    memmove(w->bridge.deferred.data, w->bridge.deferred.data + flen, w->bridge.deferred.len - flen);
    w->bridge.deferred.len -= flen;
    return br < 0 ? -1 : 1;
}

JSValue bridge_function(struct worker *w, JSContext *ctx, uint32_t fn)
{
    JSValue f = JS_NewCFunctionData(ctx, host_call, 0, (int)fn, 0, NULL);
    if (JS_IsObject(f)) {
        w->req.fns[fn].self = JS_VALUE_GET_PTR(f);
    }
    return f;
}

JSValue bridge_call(struct worker *w, JSContext *ctx, uint32_t fn, int argc, JSValueConst *argv)
{
    (void)w;
    return host_call(ctx, JS_UNDEFINED, argc, argv, (int)fn, NULL);
}

static JSValue host_error(struct worker *w, JSContext *ctx, struct bridge_call *call,
                          const char *msg, size_t len, int type_error)
{
    JSValue e;
    if (type_error) {
        /* The engine's own TypeError: the guest may have replaced globalThis.TypeError. */
        JS_ThrowTypeError(ctx, "host function arguments");
        e = JS_GetException(ctx);
    } else {
        e = JS_NewError(ctx);
    }
    if (JS_IsException(e)) {
        return e;
    }
    JS_DefinePropertyValueStr(ctx, e, "message", JS_NewStringLen(ctx, msg, len),
                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    call->error = JS_DupValue(ctx, e);
    (void)w;
    return e;
}

int bridge_answer(struct worker *w, JSContext *ctx, struct wire_cursor *c)
{
    uint32_t id = wire_get_u32(c);
    uint8_t kind = wire_get_u8(c);
    int64_t clock_ms = (int64_t)wire_get_u64(c);
    size_t len;
    const char *payload = wire_get_str(c, &len);
    if (c->bad || id == 0 || id > w->bridge.ncalls) {
        return -1;
    }
    struct bridge_call *call = &w->bridge.calls[id - 1];
    if (!call->dispatched || call->answered || call->interrupted || kind > WIRE_ANSWER_TYPE_ERROR) {
        return -1;
    }
    w->bridge.answers_applied++;
    if (kind == WIRE_ANSWER_INTERRUPT) {
        /* Not an answer: the host holds the call for a person's decision. The guest sees
         * nothing; the run ends interrupted once nothing else is in flight. */
        if (w->req.fns[call->fn].sync || len != 0) {
            return -1;
        }
        call->interrupted = 1;
        w->bridge.interrupted++;
        w->bridge.dispatched_pending--;
        return 0;
    }
    call->answered = 1;
    w->bridge.in_flight--;
    w->bridge.dispatched_pending--;
    w->eng.clock_ms = clock_ms;

    JSValue v;
    int threw = WIRE_ANSWER_THREW(kind);
    if (threw) {
        v = host_error(w, ctx, call, payload, len, kind == WIRE_ANSWER_TYPE_ERROR);
    } else if (len == 0) {
        v = JS_UNDEFINED;
    } else {
        struct value_limits vl = { BRIDGE_VALUE_DEPTH, SIZE_MAX };
        struct al_error err = { 0 };
        worker_heap_ready(len, w->eng.mem_cap);
        enum al_code rc = value_decode_cached(w->eng.values, payload, len, &vl, &v, &err);
        if (rc != AL_OK) {
            JSValue e = JS_GetException(ctx);
            JS_FreeValue(ctx, e);
            char msg[400];
            int n = snprintf(msg, sizeof msg, "host function %s returned an invalid value: %s",
                             w->req.fns[call->fn].name, err.message);
            v = host_error(w, ctx, call, msg, n > 0 ? strlen(msg) : 0, 0);
            threw = 1;
        }
    }
    if (JS_IsException(v)) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        worker_fail(w, AL_MEMORY_LIMIT, "out of memory decoding a host answer");
        return 0;
    }
    if (w->req.fns[call->fn].sync) {
        call->sync_value = v;
        call->sync_threw = threw;
        return 0;
    }
    JSValue r =
            JS_Call(ctx, threw ? call->reject : call->resolve, JS_UNDEFINED, 1, (JSValueConst *)&v);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, v);
    JS_FreeValue(ctx, call->resolve);
    JS_FreeValue(ctx, call->reject);
    call->resolve = JS_UNDEFINED;
    call->reject = JS_UNDEFINED;
    return 0;
}

const char *bridge_detached(struct worker *w)
{
    for (uint32_t i = 0; i < w->bridge.ncalls; i++) {
        if (!w->bridge.calls[i].answered || !w->bridge.calls[i].observed) {
            return w->req.fns[w->bridge.calls[i].fn].name;
        }
    }
    return NULL;
}

int bridge_is_host_error(struct worker *w, JSContext *ctx, JSValueConst err)
{
    (void)ctx;
    if (!JS_IsObject(err)) {
        return 0;
    }
    for (uint32_t i = 0; i < w->bridge.ncalls; i++) {
        if (JS_IsObject(w->bridge.calls[i].error) &&
            JS_VALUE_GET_PTR(w->bridge.calls[i].error) == JS_VALUE_GET_PTR(err)) {
            return 1;
        }
    }
    return 0;
}

int bridge_prepare(struct worker *w, JSContext *ctx)
{
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue promise_ctor = JS_GetPropertyStr(ctx, global, "Promise");
    JSValue promise_proto = JS_GetPropertyStr(ctx, promise_ctor, "prototype");
    w->bridge.promise_then = JS_GetPropertyStr(ctx, promise_proto, "then");
    JS_FreeValue(ctx, promise_proto);
    JS_FreeValue(ctx, promise_ctor);
    JS_FreeValue(ctx, global);
    return JS_IsFunction(ctx, w->bridge.promise_then) ? 0 : -1;
}

static int freeze(JSContext *ctx, JSValueConst freeze_fn, JSValueConst v)
{
    JSValue r = JS_Call(ctx, freeze_fn, JS_UNDEFINED, 1, &v);
    if (JS_IsException(r)) {
        return -1;
    }
    JS_FreeValue(ctx, r);
    return 0;
}

static struct bridge_group *add_group(struct worker *w, uint32_t first, const void *obj)
{
    struct bridge_group *groups =
            realloc(w->bridge.groups, (w->bridge.ngroups + 1) * sizeof *groups);
    if (!groups) {
        return NULL;
    }
    w->bridge.groups = groups;
    struct bridge_group *g = &groups[w->bridge.ngroups++];
    g->first = first;
    g->count = 0;
    g->obj = obj;
    return g;
}

size_t bridge_group_members(const struct worker *w, JSValueConst obj, char *out, size_t size)
{
    if (!JS_IsObject(obj) || size == 0) {
        return 0;
    }
    const void *p = JS_VALUE_GET_PTR(obj);
    for (uint32_t i = 0; i < w->bridge.ngroups; i++) {
        const struct bridge_group *g = &w->bridge.groups[i];
        if (g->obj != p || g->count == 0) {
            continue;
        }
        const struct bridge_fn *first = &w->req.fns[g->first];
        size_t n = (size_t)snprintf(out, size, "%.*s has: ", (int)first->group_len, first->name);
        for (uint32_t k = 0; k < g->count && n < size; k++) {
            const struct bridge_fn *f = &w->req.fns[g->first + k];
            n += (size_t)snprintf(out + n, size - n, "%s%s", k ? ", " : "",
                                  f->name + f->group_len + 1);
        }
        if (n >= size) {
            /* cut: end with an ellipsis where the list was cut off */
            n = size - 1;
            if (size > 4) {
                memcpy(out + size - 4, "...", 4);
            }
        }
        return n;
    }
    return 0;
}

/* Groups arrive after the context was hardened, so each is frozen here - the group object and
 * its functions; everything they inherit is frozen already - and bound as a non-writable,
 * non-configurable global. The host lists each group's functions contiguously. */
int bridge_install(struct worker *w, JSContext *ctx)
{
    int rc = -1;
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue object = JS_GetPropertyStr(ctx, global, "Object");
    JSValue freeze_fn = JS_GetPropertyStr(ctx, object, "freeze");
    JSValue group = JS_UNDEFINED;

    for (uint32_t i = 0; i < w->req.nfns;) {
        const struct bridge_fn *first = &w->req.fns[i];
        if (first->hidden) {
            i++; /* the module loader: never a global */
            continue;
        }
        char gname[256];
        if (first->group_len >= sizeof gname) {
            goto out;
        }
        memcpy(gname, first->name, first->group_len);
        gname[first->group_len] = '\0';
        JSAtom ga = JS_NewAtom(ctx, gname);
        int has = JS_HasProperty(ctx, global, ga);
        JS_FreeAtom(ctx, ga);
        if (has) {
            goto out; /* a builtin, or a group split apart */
        }
        group = JS_NewObject(ctx);
        if (JS_IsException(group)) {
            goto out;
        }
        struct bridge_group *g = add_group(w, i, JS_VALUE_GET_PTR(group));
        if (!g) {
            goto out;
        }
        for (; i < w->req.nfns && !w->req.fns[i].hidden &&
               w->req.fns[i].group_len == first->group_len &&
               memcmp(w->req.fns[i].name, first->name, first->group_len) == 0;
             i++) {
            const char *fname = w->req.fns[i].name + first->group_len + 1;
            g->count++;
            JSValue f = JS_NewCFunctionData(ctx, host_call, 0, (int)i, 0, NULL);
            if (JS_IsException(f)) {
                goto out;
            }
            w->req.fns[i].self = JS_VALUE_GET_PTR(f);
            JS_DefinePropertyValueStr(ctx, f, "name", JS_NewString(ctx, fname),
                                      JS_PROP_CONFIGURABLE);
            JSAtom fa = JS_NewAtom(ctx, fname);
            int dup = JS_GetOwnProperty(ctx, NULL, group, fa);
            JS_FreeAtom(ctx, fa);
            if (dup || freeze(ctx, freeze_fn, f) < 0 ||
                JS_DefinePropertyValueStr(ctx, group, fname, f, JS_PROP_C_W_E) < 0) {
                goto out;
            }
        }
        if (freeze(ctx, freeze_fn, group) < 0 ||
            JS_DefinePropertyValueStr(ctx, global, gname, group, 0) < 0) {
            group = JS_UNDEFINED;
            goto out;
        }
        group = JS_UNDEFINED;
    }
    rc = 0;
out:
    JS_FreeValue(ctx, group);
    JS_FreeValue(ctx, freeze_fn);
    JS_FreeValue(ctx, object);
    JS_FreeValue(ctx, global);
    return rc;
}

void bridge_free(struct worker *w, JSRuntime *rt)
{
    for (uint32_t i = 0; i < w->bridge.ncalls; i++) {
        struct bridge_call *c = &w->bridge.calls[i];
        JS_FreeValueRT(rt, c->promise);
        JS_FreeValueRT(rt, c->resolve);
        JS_FreeValueRT(rt, c->reject);
        JS_FreeValueRT(rt, c->error);
        JS_FreeValueRT(rt, c->sync_value);
        free(c->args);
    }
    free(w->bridge.calls);
    w->bridge.calls = NULL;
    free(w->bridge.groups);
    w->bridge.groups = NULL;
    w->bridge.ngroups = 0;
    w->bridge.ncalls = 0;
    JS_FreeValueRT(rt, w->bridge.promise_then);
    w->bridge.promise_then = JS_UNDEFINED;
}
