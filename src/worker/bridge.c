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
    for (uint32_t i = w->ncalls; i-- > 0;) {
        if (JS_IsObject(w->calls[i].promise) && JS_VALUE_GET_PTR(w->calls[i].promise) == ptr) {
            return &w->calls[i];
        }
    }
    return NULL;
}

/* Called by the engine (hook in quickjs_airlock.c) whenever a reaction is registered on any
 * promise: await, then/catch/finally by any route, Promise.all and friends. */
void bridge_on_promise_then(JSContext *ctx, JSValueConst promise)
{
    struct worker *w = JS_GetContextOpaque(ctx);
    if (!w || w->unobserved == 0) {
        return;
    }
    struct bridge_call *call = find_by_promise(w, promise);
    if (call && !call->observed) {
        call->observed = 1;
        w->unobserved--;
    }
}

static struct bridge_call *new_call(struct worker *w)
{
    if (w->ncalls == w->cap_calls) {
        uint32_t cap = w->cap_calls ? w->cap_calls * 2 : 16;
        struct bridge_call *calls = realloc(w->calls, cap * sizeof *calls);
        if (!calls) {
            return NULL;
        }
        w->calls = calls;
        w->cap_calls = cap;
    }
    struct bridge_call *c = &w->calls[w->ncalls++];
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
    wire_begin(&w->out, WIRE_CALL, &start);
    wire_u32(&w->out, (uint32_t)(c - w->calls) + 1);
    wire_u32(&w->out, c->fn);
    wire_str(&w->out, c->args, c->args_len);
    wire_end(&w->out, start);
    free(c->args);
    c->args = NULL;
    c->dispatched = 1;
    w->dispatched_pending++;
}

void bridge_dispatch(struct worker *w)
{
    for (uint32_t i = 0; i < w->ncalls; i++) {
        struct bridge_call *c = &w->calls[i];
        if (!c->dispatched && !c->answered && c->observed) {
            send_call(w, c);
        }
    }
}

int bridge_has_unobserved(const struct worker *w)
{
    for (uint32_t i = 0; i < w->ncalls; i++) {
        if (!w->calls[i].dispatched && !w->calls[i].answered) {
            return 1;
        }
    }
    return 0;
}

static JSValue throw_fatal(JSContext *ctx)
{
    /* The latched code ends the run at the next interrupt poll whatever the guest catches. */
    return JS_ThrowInternalError(ctx, "the run is ending: %s",
                                 ((struct worker *)JS_GetContextOpaque(ctx))->fatal_msg);
}

static JSValue wait_sync(struct worker *w, JSContext *ctx, struct bridge_call *call);

static JSValue host_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                         int magic, JSValue *data)
{
    (void)this_val;
    (void)data;
    struct worker *w = JS_GetContextOpaque(ctx);
    const struct bridge_fn *fn = &w->fns[magic];
    struct buf args;
    struct al_error err = { 0 };
    JSValue arr = JS_UNDEFINED;
    JSValue ret = JS_EXCEPTION;

    if (w->fatal_code != AL_OK) {
        return throw_fatal(ctx);
    }
    if (w->ncalls >= w->limits[AL_LIMIT_HOST_CALLS]) {
        worker_fail(w, AL_BRIDGE_LIMIT, "the run made more than %llu host calls (call to %s)",
                    (unsigned long long)w->limits[AL_LIMIT_HOST_CALLS], fn->name);
        return throw_fatal(ctx);
    }
    if (w->in_flight >= w->limits[AL_LIMIT_IN_FLIGHT]) {
        worker_fail(w, AL_BRIDGE_LIMIT,
                    "the run had more than %llu host calls in flight (call to %s)",
                    (unsigned long long)w->limits[AL_LIMIT_IN_FLIGHT], fn->name);
        return throw_fatal(ctx);
    }
    buf_init(&args, (size_t)w->limits[AL_LIMIT_HOST_ARGS_BYTES]);
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
    struct value_limits vl = { BRIDGE_VALUE_DEPTH, (size_t)w->limits[AL_LIMIT_HOST_ARGS_BYTES] };
    enum al_code rc = value_encode_cached(w->values, arr, "args", &vl, &args, &err);
    if (rc == AL_USER_ERROR) {
        goto out; /* a getter threw: the guest sees its exception */
    }
    if (rc == AL_OUTPUT_LIMIT) {
        worker_fail(w, AL_BRIDGE_LIMIT,
                    "the arguments of a call to %s exceed the host-args limit of %llu bytes",
                    fn->name, (unsigned long long)w->limits[AL_LIMIT_HOST_ARGS_BYTES]);
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
    call->args_len = args.len;
    call->args = args.data ? buf_steal(&args, NULL) : strdup("[]");
    w->in_flight++;
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
    call = &w->calls[w->ncalls - 1];
    call->promise = JS_DupValue(ctx, promise);
    w->unobserved++;
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
    uint32_t index = (uint32_t)(call - w->calls);
    for (;;) {
        if (w->calls[index].answered) {
            struct bridge_call *c = &w->calls[index];
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
                        (unsigned long long)w->limits[AL_LIMIT_TIMEOUT_MS]);
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
            br = buf_append(&w->deferred, w->in.data, flen) == BUF_OK ? 0 : -2;
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
    if (wire_next(w->deferred.data, w->deferred.len, WORKER_MAX_FRAME, &type, &cur, &flen) != 1) {
        return 0;
    }
    int br = bridge_answer(w, ctx, &cur);
    memmove(w->deferred.data, w->deferred.data + flen, w->deferred.len - flen);
    w->deferred.len -= flen;
    return br < 0 ? -1 : 1;
}

JSValue bridge_call(struct worker *w, JSContext *ctx, uint32_t fn, int argc, JSValueConst *argv)
{
    (void)w;
    return host_call(ctx, JS_UNDEFINED, argc, argv, (int)fn, NULL);
}

static JSValue host_error(struct worker *w, JSContext *ctx, struct bridge_call *call,
                          const char *msg, size_t len)
{
    JSValue e = JS_NewError(ctx);
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
    if (c->bad || id == 0 || id > w->ncalls) {
        return -1;
    }
    struct bridge_call *call = &w->calls[id - 1];
    if (!call->dispatched || call->answered || call->interrupted || kind > WIRE_ANSWER_INTERRUPT) {
        return -1;
    }
    w->answers_applied++;
    if (kind == WIRE_ANSWER_INTERRUPT) {
        /* Not an answer: the host holds the call for a person's decision. The guest sees
         * nothing; the run ends interrupted once nothing else is in flight. */
        if (w->fns[call->fn].sync || len != 0) {
            return -1;
        }
        call->interrupted = 1;
        w->interrupted++;
        w->dispatched_pending--;
        return 0;
    }
    call->answered = 1;
    w->in_flight--;
    w->dispatched_pending--;
    w->clock_ms = clock_ms;

    JSValue v;
    int threw = kind == WIRE_ANSWER_THROW;
    if (threw) {
        v = host_error(w, ctx, call, payload, len);
    } else if (len == 0) {
        v = JS_UNDEFINED;
    } else {
        struct value_limits vl = { BRIDGE_VALUE_DEPTH, SIZE_MAX };
        struct al_error err = { 0 };
        worker_heap_ready(len, w->mem_cap);
        enum al_code rc = value_decode_cached(w->values, payload, len, &vl, &v, &err);
        if (rc != AL_OK) {
            JSValue e = JS_GetException(ctx);
            JS_FreeValue(ctx, e);
            char msg[400];
            int n = snprintf(msg, sizeof msg, "host function %s returned an invalid value: %s",
                             w->fns[call->fn].name, err.message);
            v = host_error(w, ctx, call, msg, n > 0 ? strlen(msg) : 0);
            threw = 1;
        }
    }
    if (JS_IsException(v)) {
        JSValue e = JS_GetException(ctx);
        JS_FreeValue(ctx, e);
        worker_fail(w, AL_MEMORY_LIMIT, "out of memory decoding a host answer");
        return 0;
    }
    if (w->fns[call->fn].sync) {
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
    for (uint32_t i = 0; i < w->ncalls; i++) {
        if (!w->calls[i].answered || !w->calls[i].observed) {
            return w->fns[w->calls[i].fn].name;
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
    for (uint32_t i = 0; i < w->ncalls; i++) {
        if (JS_IsObject(w->calls[i].error) &&
            JS_VALUE_GET_PTR(w->calls[i].error) == JS_VALUE_GET_PTR(err)) {
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
    w->promise_then = JS_GetPropertyStr(ctx, promise_proto, "then");
    JS_FreeValue(ctx, promise_proto);
    JS_FreeValue(ctx, promise_ctor);
    JS_FreeValue(ctx, global);
    return JS_IsFunction(ctx, w->promise_then) ? 0 : -1;
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

    for (uint32_t i = 0; i < w->nfns;) {
        const struct bridge_fn *first = &w->fns[i];
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
        for (; i < w->nfns && !w->fns[i].hidden && w->fns[i].group_len == first->group_len &&
               memcmp(w->fns[i].name, first->name, first->group_len) == 0;
             i++) {
            const char *fname = w->fns[i].name + first->group_len + 1;
            JSValue f = JS_NewCFunctionData(ctx, host_call, 0, (int)i, 0, NULL);
            if (JS_IsException(f)) {
                goto out;
            }
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
    for (uint32_t i = 0; i < w->ncalls; i++) {
        struct bridge_call *c = &w->calls[i];
        JS_FreeValueRT(rt, c->promise);
        JS_FreeValueRT(rt, c->resolve);
        JS_FreeValueRT(rt, c->reject);
        JS_FreeValueRT(rt, c->error);
        JS_FreeValueRT(rt, c->sync_value);
        free(c->args);
    }
    free(w->calls);
    w->calls = NULL;
    w->ncalls = 0;
    JS_FreeValueRT(rt, w->promise_then);
    w->promise_then = JS_UNDEFINED;
}
