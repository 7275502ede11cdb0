/*
 * value_cache.c - the intrinsics the value codec calls, captured once per context.
 *
 * The encoder and decoder never look a constructor or method up through guest-visible globals
 * while they run: they call what value_cache_new read from the pristine context, before guest
 * code could replace, wrap or delete it. The rows of `intrinsics` say what to read (a global
 * constructor, its prototype's methods or getters, the `next` of its iterators) and how to build
 * one instance so that its engine class id can be checked: the codec classifies objects by
 * QuickJS 2021-03-27's internal class ids (value_internal.h), which are not public API, so a
 * different engine must fail here, loudly, instead of misfiling values later. Missing globals
 * are allowed (the slot stays JS_UNDEFINED and the codec refuses what needs it); a wrong class,
 * or an exception while reading, fails the whole cache with the name of the row.
 */
#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "value.h"
#include "value_internal.h"

static const char *const atom_names[CA_COUNT] = {
    "$type", "cause", "errors", "name", "message", "length", "constructor", "done", "value",
};

/* How a row builds the instance whose class id is checked. */
enum sample {
    SAMPLE_NONE,      /* nothing to check */
    SAMPLE_NEW,       /* new C() */
    SAMPLE_NEW_ONE,   /* new C(1) */
    SAMPLE_NEW_A,     /* new C("a") */
    SAMPLE_NEW_PROXY, /* new C({}, {}) */
    SAMPLE_NEW_ON_AB, /* new C(the ArrayBuffer row's instance) */
    SAMPLE_PROMISE,   /* a promise capability; reads no global */
    SAMPLE_AB,        /* an 8-byte ArrayBuffer, kept for the SAMPLE_NEW_ON_AB rows */
};

enum member_how {
    M_END,
    M_CTOR,        /* a property of the constructor */
    M_CTOR_OBJECT, /* the same, and the row fails unless it is an object */
    M_PROTO,       /* a property of the constructor's prototype */
    M_GETTER,      /* the getter of an own accessor of the prototype */
    M_ITER_NEXT,   /* `next` of the iterator that slot `method` returns on the instance */
};

struct member {
    enum member_how how;
    enum cache_value slot;
    const char *name;
    enum cache_value method; /* M_ITER_NEXT only */
};

struct intrinsic {
    const char *what;   /* names the row in the failure message */
    const char *global; /* the global constructor to read, or NULL */
    int slot;           /* enum cache_value for the constructor, or -1: read to check only */
    enum sample sample;
    JSClassID class_id; /* the sample's class id, when there is a sample */
    struct member members[3];
};

/* One row a line reads as a table, which clang-format would break up. */
/* clang-format off */
#define CTOR_OBJECT(slot, name) { M_CTOR_OBJECT, slot, name, 0 }
#define PROTO(slot, name)       { M_PROTO, slot, name, 0 }
#define GETTER(slot, name)      { M_GETTER, slot, name, 0 }
#define ITER_NEXT(slot, method) { M_ITER_NEXT, slot, NULL, method }
#define NONE                    { { M_END, 0, NULL, 0 } }
#define TYPED_ROW(name, elem)                                                                      \
    { #name, #name, CV_TYPED + TYPED_##name, SAMPLE_NEW_ON_AB,                                    \
      QJS_CLASS_TYPED_FIRST + TYPED_##name, NONE },
#define ERROR_ROW(name) { "errors", #name, CV_ERROR + ERR_##name, SAMPLE_NONE, 0, NONE },

/* In this order: SAMPLE_AB comes before the rows that build on it. */
static const struct intrinsic intrinsics[] = {
    { "Object", "Object", -1, SAMPLE_NONE, 0, { CTOR_OBJECT(CV_OBJECT_PROTO, "prototype") } },
    { "BigInt", "BigInt", CV_BIGINT, SAMPLE_NONE, 0, NONE },
    { "Map", "Map", CV_MAP, SAMPLE_NEW, QJS_CLASS_MAP,
      { PROTO(CV_MAP_SET, "set"), PROTO(CV_MAP_ENTRIES, "entries"),
        ITER_NEXT(CV_MAP_ITER_NEXT, CV_MAP_ENTRIES) } },
    { "Set", "Set", CV_SET, SAMPLE_NEW, QJS_CLASS_SET,
      { PROTO(CV_SET_ADD, "add"), PROTO(CV_SET_VALUES, "values"),
        ITER_NEXT(CV_SET_ITER_NEXT, CV_SET_VALUES) } },
    { "WeakMap", "WeakMap", -1, SAMPLE_NEW, QJS_CLASS_WEAKMAP, NONE },
    { "WeakSet", "WeakSet", -1, SAMPLE_NEW, QJS_CLASS_WEAKSET, NONE },
    { "Proxy", "Proxy", -1, SAMPLE_NEW_PROXY, QJS_CLASS_PROXY, NONE },
    { "Promise", NULL, -1, SAMPLE_PROMISE, QJS_CLASS_PROMISE, NONE },
    { "Date", "Date", CV_DATE, SAMPLE_NEW_ONE, QJS_CLASS_DATE,
      { PROTO(CV_DATE_GET_TIME, "getTime"), PROTO(CV_DATE_TO_ISO, "toISOString") } },
    { "RegExp", "RegExp", CV_REGEXP, SAMPLE_NEW_A, QJS_CLASS_REGEXP,
      { GETTER(CV_REGEXP_SOURCE, "source"), GETTER(CV_REGEXP_FLAGS, "flags") } },
    { "ArrayBuffer", NULL, -1, SAMPLE_AB, QJS_CLASS_ARRAY_BUFFER, NONE },
    VALUE_TYPED_KINDS(TYPED_ROW)
    { "DataView", "DataView", CV_DATAVIEW, SAMPLE_NEW_ON_AB, QJS_CLASS_DATAVIEW,
      { GETTER(CV_DV_BUFFER, "buffer"), GETTER(CV_DV_BYTE_OFFSET, "byteOffset"),
        GETTER(CV_DV_BYTE_LENGTH, "byteLength") } },
    VALUE_ERROR_KINDS(ERROR_ROW)
};
#undef CTOR_OBJECT
#undef PROTO
#undef GETTER
#undef ITER_NEXT
#undef NONE
#undef TYPED_ROW
#undef ERROR_ROW
/* clang-format on */

static JSValue get_str(JSContext *ctx, JSValueConst obj, const char *name)
{
    if (!JS_IsObject(obj)) {
        return JS_UNDEFINED;
    }
    return JS_GetPropertyStr(ctx, obj, name);
}

/* The getter of an own accessor property, or JS_UNDEFINED. */
static JSValue get_getter(JSContext *ctx, JSValueConst obj, const char *name)
{
    JSPropertyDescriptor desc;
    JSValue getter = JS_UNDEFINED;
    if (!JS_IsObject(obj)) {
        return JS_UNDEFINED;
    }
    JSAtom atom = JS_NewAtom(ctx, name);
    if (atom == JS_ATOM_NULL) {
        return JS_EXCEPTION;
    }
    int r = JS_GetOwnProperty(ctx, &desc, obj, atom);
    JS_FreeAtom(ctx, atom);
    if (r < 0) {
        return JS_EXCEPTION;
    }
    if (r > 0) {
        getter = desc.getter;
        JS_FreeValue(ctx, desc.value);
        JS_FreeValue(ctx, desc.setter);
    }
    return getter;
}

/* The `next` method of the iterator that method.call(sample) returns. */
static JSValue iter_next_of(JSContext *ctx, JSValueConst method, JSValueConst sample)
{
    JSValue iter = JS_Call(ctx, method, sample, 0, NULL);
    if (JS_IsException(iter)) {
        return iter;
    }
    JSValue proto = JS_GetPrototype(ctx, iter);
    JS_FreeValue(ctx, iter);
    if (JS_IsException(proto)) {
        return proto;
    }
    JSValue next = get_str(ctx, proto, "next");
    JS_FreeValue(ctx, proto);
    return next;
}

/* The row's instance: JS_UNDEFINED when there is nothing to check (no sample, or an absent
 * constructor), JS_EXCEPTION when building it threw. */
static JSValue make_sample(JSContext *ctx, enum sample how, JSValueConst ctor, JSValueConst ab)
{
    static const uint8_t eight[8];
    JSValue args[2];
    JSValue obj;

    switch (how) {
    case SAMPLE_NONE:
        return JS_UNDEFINED;
    case SAMPLE_PROMISE:
        obj = JS_NewPromiseCapability(ctx, args);
        if (!JS_IsException(obj)) {
            JS_FreeValue(ctx, args[0]);
            JS_FreeValue(ctx, args[1]);
        }
        return obj;
    case SAMPLE_AB:
        return JS_NewArrayBufferCopy(ctx, eight, sizeof eight);
    default:
        break;
    }
    if (!JS_IsFunction(ctx, ctor)) {
        return JS_UNDEFINED;
    }
    switch (how) {
    case SAMPLE_NEW_ONE:
        args[0] = JS_NewInt32(ctx, 1);
        return JS_CallConstructor(ctx, ctor, 1, args);
    case SAMPLE_NEW_A:
        args[0] = JS_NewString(ctx, "a");
        obj = JS_CallConstructor(ctx, ctor, 1, args);
        JS_FreeValue(ctx, args[0]);
        return obj;
    case SAMPLE_NEW_PROXY:
        args[0] = JS_NewObject(ctx);
        args[1] = JS_NewObject(ctx);
        obj = JS_CallConstructor(ctx, ctor, 2, args);
        JS_FreeValue(ctx, args[0]);
        JS_FreeValue(ctx, args[1]);
        return obj;
    case SAMPLE_NEW_ON_AB:
        return JS_CallConstructor(ctx, ctor, 1, &ab);
    default:
        return JS_CallConstructor(ctx, ctor, 0, NULL);
    }
}

/* Reads one row into c. 0, or -1 when the row fails. On success a SAMPLE_AB row leaves its
 * instance in *ab (owned by the caller). */
static int cache_row(struct value_cache *c, JSValueConst global, const struct intrinsic *row,
                     JSValue *ab)
{
    JSContext *ctx = c->ctx;
    JSValue ctor = row->global ? get_str(ctx, global, row->global) : JS_UNDEFINED;
    JSValue proto = JS_UNDEFINED, sample = JS_UNDEFINED;
    const struct member *m;
    int ok = 0;

    for (m = row->members; m < row->members + 3 && m->how != M_END; m++) {
        if ((m->how == M_PROTO || m->how == M_GETTER) && JS_IsUndefined(proto)) {
            proto = get_str(ctx, ctor, "prototype");
        }
        if (m->how == M_CTOR || m->how == M_CTOR_OBJECT) {
            c->v[m->slot] = get_str(ctx, ctor, m->name);
        } else if (m->how == M_PROTO) {
            c->v[m->slot] = get_str(ctx, proto, m->name);
        } else if (m->how == M_GETTER) {
            c->v[m->slot] = get_getter(ctx, proto, m->name);
        }
    }
    sample = make_sample(ctx, row->sample, ctor, *ab);
    if (JS_IsException(sample) || (JS_IsObject(sample) && !JS_GetOpaque(sample, row->class_id))) {
        goto out;
    }
    for (m = row->members; m < row->members + 3 && m->how != M_END; m++) {
        if (m->how == M_ITER_NEXT && JS_IsObject(sample)) {
            c->v[m->slot] = iter_next_of(ctx, c->v[m->method], sample);
        }
    }
    if (JS_IsException(ctor)) {
        goto out;
    }
    for (m = row->members; m < row->members + 3 && m->how != M_END; m++) {
        if (JS_IsException(c->v[m->slot]) ||
            (m->how == M_CTOR_OBJECT && !JS_IsObject(c->v[m->slot]))) {
            c->v[m->slot] = JS_UNDEFINED;
            goto out;
        }
    }
    if (row->slot >= 0) {
        c->v[row->slot] = ctor;
        ctor = JS_UNDEFINED;
    }
    if (row->sample == SAMPLE_AB) {
        *ab = sample;
        sample = JS_UNDEFINED;
    }
    ok = 1;
out:
    JS_FreeValue(ctx, sample);
    JS_FreeValue(ctx, proto);
    JS_FreeValue(ctx, ctor);
    return ok ? 0 : -1;
}

enum al_code value_cache_new(JSContext *ctx, struct value_cache **ret_cache,
                             struct al_error *reterr)
{
    struct value_cache *c = NULL;
    JSValue global = JS_UNDEFINED, ab = JS_UNDEFINED;
    enum al_code rc = AL_OK;
    const char *what = NULL;

    if (!ctx || !ret_cache) {
        return error_set(reterr, AL_CONFIG_ERROR, "value_cache_new: NULL argument");
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    c->ctx = ctx;
    for (int i = 0; i < CV_COUNT; i++) {
        c->v[i] = JS_UNDEFINED;
    }
    for (int i = 0; i < CA_COUNT; i++) {
        c->atoms[i] = JS_NewAtom(ctx, atom_names[i]);
        if (c->atoms[i] == JS_ATOM_NULL) {
            what = "atoms";
            goto fail;
        }
    }
    global = JS_GetGlobalObject(ctx);
    for (size_t i = 0; i < sizeof intrinsics / sizeof intrinsics[0]; i++) {
        if (cache_row(c, global, &intrinsics[i], &ab) < 0) {
            what = intrinsics[i].what;
            goto fail;
        }
    }
    *ret_cache = c;
    c = NULL;
    goto out;
fail:
    cache_clear_exception(ctx);
    rc = error_set(reterr, AL_INTERNAL_ERROR,
                   "value codec: the engine does not match QuickJS 2021-03-27 (%s)", what);
out:
    JS_FreeValue(ctx, ab);
    JS_FreeValue(ctx, global);
    value_cache_free(c);
    return rc;
}

void value_cache_free(struct value_cache *cache)
{
    if (!cache) {
        return;
    }
    for (int i = 0; i < CV_COUNT; i++) {
        if (!JS_IsException(cache->v[i])) {
            JS_FreeValue(cache->ctx, cache->v[i]);
        }
    }
    for (int i = 0; i < CA_COUNT; i++) {
        if (cache->atoms[i] != JS_ATOM_NULL) {
            JS_FreeAtom(cache->ctx, cache->atoms[i]);
        }
    }
    free(cache);
}
