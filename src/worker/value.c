/*
 * value.c - the boundary format (docs/values.md): QuickJS values <-> boundary JSON text.
 *
 * The encoder walks guest values directly in C and writes JSON.stringify's exact bytes for
 * JSON-compatible data; everything else becomes a "$type" tag. Objects are classified by their
 * engine class (probed with JS_GetOpaque against QuickJS 2021-03-27's class ids, which
 * value_cache_new checks against real instances), never by anything the guest can fake, so a
 * Map with a swapped prototype is still a Map and a plain object cannot pass for a Date.
 * Every object met is remembered (and kept alive, so its address cannot be reused by a fresh
 * object from a getter) with its position in the output; meeting it again writes a reference
 * to that position, which also turns cycles into references. Positions are a tree of path
 * nodes, so remembering costs O(1) per object, not O(depth).
 *
 * The decoder parses with json_parse and builds values with define-property semantics (an own
 * "__proto__" is an own key) and with the intrinsics captured in the cache, never with guest
 * visible globals or JS_Eval. It never trusts its input: every tag field is type-checked,
 * references must point at an object already built, and depth is bounded.
 *
 * Guest code may run while encoding (getters, proxy traps); its exceptions are left pending
 * and reported as AL_USER_ERROR. Nothing here may crash or leak on hostile input.
 */
#include "value.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"

/* QuickJS 2021-03-27 class ids (quickjs.c, CONFIG_BIGNUM). Not public API, so value_cache_new
 * checks each one against a real instance: an engine bump fails loudly instead of misfiling. */
enum {
    QJS_CLASS_DATE = 10,
    QJS_CLASS_REGEXP = 18,
    QJS_CLASS_ARRAY_BUFFER = 19,
    QJS_CLASS_SHARED_ARRAY_BUFFER = 20,
    QJS_CLASS_TYPED_FIRST = 21, /* Uint8ClampedArray ... Float64Array, in typed_kinds order */
    QJS_CLASS_DATAVIEW = 32,
    QJS_CLASS_MAP = 38,
    QJS_CLASS_SET = 39,
    QJS_CLASS_WEAKMAP = 40,
    QJS_CLASS_WEAKSET = 41,
    QJS_CLASS_PROXY = 48,
    QJS_CLASS_PROMISE = 49,
};

struct typed_kind {
    const char *name;
    unsigned elem; /* bytes per element */
};

#define N_TYPED 11
static const struct typed_kind typed_kinds[N_TYPED] = {
    { "Uint8ClampedArray", 1 }, { "Int8Array", 1 },     { "Uint8Array", 1 },
    { "Int16Array", 2 },        { "Uint16Array", 2 },   { "Int32Array", 4 },
    { "Uint32Array", 4 },       { "BigInt64Array", 8 }, { "BigUint64Array", 8 },
    { "Float32Array", 4 },      { "Float64Array", 8 },
};

#define N_ERRORS 9
static const char *const error_names[N_ERRORS] = {
    "Error",     "EvalError", "RangeError",     "ReferenceError", "SyntaxError",
    "TypeError", "URIError",  "AggregateError", "InternalError",
};
#define ERR_AGGREGATE 7

enum cache_value {
    CV_OBJECT_PROTO,
    CV_BIGINT,
    CV_MAP,
    CV_MAP_SET,
    CV_MAP_ENTRIES,
    CV_MAP_ITER_NEXT,
    CV_SET,
    CV_SET_ADD,
    CV_SET_VALUES,
    CV_SET_ITER_NEXT,
    CV_DATE,
    CV_DATE_GET_TIME,
    CV_DATE_TO_ISO,
    CV_REGEXP,
    CV_REGEXP_SOURCE,
    CV_REGEXP_FLAGS,
    CV_DATAVIEW,
    CV_DV_BUFFER,
    CV_DV_BYTE_OFFSET,
    CV_DV_BYTE_LENGTH,
    CV_TYPED,                      /* N_TYPED constructors */
    CV_ERROR = CV_TYPED + N_TYPED, /* N_ERRORS constructors */
    CV_COUNT = CV_ERROR + N_ERRORS,
};

enum cache_atom {
    CA_TYPE,
    CA_CAUSE,
    CA_ERRORS,
    CA_NAME,
    CA_MESSAGE,
    CA_LENGTH,
    CA_CONSTRUCTOR,
    CA_DONE,
    CA_VALUE,
    CA_COUNT,
};

static const char *const atom_names[CA_COUNT] = {
    "$type", "cause", "errors", "name", "message", "length", "constructor", "done", "value",
};

struct value_cache {
    JSContext *ctx;
    JSValue v[CV_COUNT]; /* owned; JS_UNDEFINED when the context lacks the intrinsic */
    JSAtom atoms[CA_COUNT];
};

/* ------------------------------------------------------------------ pointer map */

/* Open addressing, linear probing, never deletes. Keys are object or JSON-node addresses. */
struct ptrmap_slot {
    const void *key;
    uint32_t val;
};

struct ptrmap {
    struct ptrmap_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static int ptrmap_get(const struct ptrmap *m, const void *key, uint32_t *ret_val)
{
    if (!m->cap) {
        return 0;
    }
    for (size_t i = ptr_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i].key) {
            return 0;
        }
        if (m->slots[i].key == key) {
            *ret_val = m->slots[i].val;
            return 1;
        }
    }
}

static int ptrmap_put(struct ptrmap *m, const void *key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        struct ptrmap_slot *ns = calloc(ncap, sizeof *ns);
        if (!ns) {
            return -1;
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (m->slots[j].key) {
                size_t i = ptr_hash(m->slots[j].key) & (ncap - 1);
                while (ns[i].key) {
                    i = (i + 1) & (ncap - 1);
                }
                ns[i] = m->slots[j];
            }
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    size_t i = ptr_hash(key) & (m->cap - 1);
    while (m->slots[i].key && m->slots[i].key != key) {
        i = (i + 1) & (m->cap - 1);
    }
    if (!m->slots[i].key) {
        m->count++;
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    return 0;
}

static void ptrmap_done(struct ptrmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

/* Grows *arr (elements of `size` bytes) to hold at least `need`. */
static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) {
        return 0;
    }
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / size) {
        return -1;
    }
    void *p = realloc(*arr, ncap * size);
    if (!p) {
        return -1;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

/* ------------------------------------------------------------------ cache */

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

/* Builds `new ctor(...argv)` and checks the engine gives it `class_id`. Absent ctor: skipped. */
static int check_class(JSContext *ctx, JSValueConst ctor, int argc, JSValueConst *argv,
                       JSClassID class_id, JSValue *ret_sample)
{
    if (!JS_IsFunction(ctx, ctor)) {
        return 0;
    }
    JSValue obj = JS_CallConstructor(ctx, ctor, argc, argv);
    if (JS_IsException(obj)) {
        return -1;
    }
    int ok = JS_GetOpaque(obj, class_id) != NULL;
    if (ret_sample && ok) {
        *ret_sample = obj;
    } else {
        JS_FreeValue(ctx, obj);
    }
    return ok ? 0 : -1;
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

static void cache_clear_exception(JSContext *ctx)
{
    JS_FreeValue(ctx, JS_GetException(ctx));
}

enum al_code value_cache_new(JSContext *ctx, struct value_cache **ret_cache,
                             struct al_error *reterr)
{
    struct value_cache *c = NULL;
    JSValue global = JS_UNDEFINED, proto = JS_UNDEFINED, sample = JS_UNDEFINED;
    JSValue ab = JS_UNDEFINED;
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

    what = "Object";
    JSValue object_ctor = get_str(ctx, global, "Object");
    c->v[CV_OBJECT_PROTO] = get_str(ctx, object_ctor, "prototype");
    JS_FreeValue(ctx, object_ctor);
    if (!JS_IsObject(c->v[CV_OBJECT_PROTO])) {
        goto fail;
    }
    c->v[CV_BIGINT] = get_str(ctx, global, "BigInt");

    what = "Map";
    c->v[CV_MAP] = get_str(ctx, global, "Map");
    proto = get_str(ctx, c->v[CV_MAP], "prototype");
    c->v[CV_MAP_SET] = get_str(ctx, proto, "set");
    c->v[CV_MAP_ENTRIES] = get_str(ctx, proto, "entries");
    JS_FreeValue(ctx, proto);
    proto = JS_UNDEFINED;
    if (check_class(ctx, c->v[CV_MAP], 0, NULL, QJS_CLASS_MAP, &sample) < 0) {
        goto fail;
    }
    if (JS_IsObject(sample)) {
        c->v[CV_MAP_ITER_NEXT] = iter_next_of(ctx, c->v[CV_MAP_ENTRIES], sample);
        JS_FreeValue(ctx, sample);
        sample = JS_UNDEFINED;
    }

    what = "Set";
    c->v[CV_SET] = get_str(ctx, global, "Set");
    proto = get_str(ctx, c->v[CV_SET], "prototype");
    c->v[CV_SET_ADD] = get_str(ctx, proto, "add");
    c->v[CV_SET_VALUES] = get_str(ctx, proto, "values");
    JS_FreeValue(ctx, proto);
    proto = JS_UNDEFINED;
    if (check_class(ctx, c->v[CV_SET], 0, NULL, QJS_CLASS_SET, &sample) < 0) {
        goto fail;
    }
    if (JS_IsObject(sample)) {
        c->v[CV_SET_ITER_NEXT] = iter_next_of(ctx, c->v[CV_SET_VALUES], sample);
        JS_FreeValue(ctx, sample);
        sample = JS_UNDEFINED;
    }

    what = "WeakMap";
    JSValue weak = get_str(ctx, global, "WeakMap");
    int wr = check_class(ctx, weak, 0, NULL, QJS_CLASS_WEAKMAP, NULL);
    JS_FreeValue(ctx, weak);
    if (wr < 0) {
        goto fail;
    }
    what = "WeakSet";
    weak = get_str(ctx, global, "WeakSet");
    wr = check_class(ctx, weak, 0, NULL, QJS_CLASS_WEAKSET, NULL);
    JS_FreeValue(ctx, weak);
    if (wr < 0) {
        goto fail;
    }
    what = "Proxy";
    JSValue proxy_ctor = get_str(ctx, global, "Proxy");
    JSValue proxy_args[2] = { JS_NewObject(ctx), JS_NewObject(ctx) };
    wr = check_class(ctx, proxy_ctor, 2, proxy_args, QJS_CLASS_PROXY, NULL);
    JS_FreeValue(ctx, proxy_args[0]);
    JS_FreeValue(ctx, proxy_args[1]);
    JS_FreeValue(ctx, proxy_ctor);
    if (wr < 0) {
        goto fail;
    }
    what = "Promise";
    JSValue resolving[2];
    JSValue promise = JS_NewPromiseCapability(ctx, resolving);
    if (JS_IsException(promise)) {
        goto fail;
    }
    JS_FreeValue(ctx, resolving[0]);
    JS_FreeValue(ctx, resolving[1]);
    wr = JS_GetOpaque(promise, QJS_CLASS_PROMISE) != NULL;
    JS_FreeValue(ctx, promise);
    if (!wr) {
        goto fail;
    }

    what = "Date";
    c->v[CV_DATE] = get_str(ctx, global, "Date");
    proto = get_str(ctx, c->v[CV_DATE], "prototype");
    c->v[CV_DATE_GET_TIME] = get_str(ctx, proto, "getTime");
    c->v[CV_DATE_TO_ISO] = get_str(ctx, proto, "toISOString");
    JS_FreeValue(ctx, proto);
    proto = JS_UNDEFINED;
    JSValue one = JS_NewInt32(ctx, 1);
    if (check_class(ctx, c->v[CV_DATE], 1, &one, QJS_CLASS_DATE, NULL) < 0) {
        goto fail;
    }

    what = "RegExp";
    c->v[CV_REGEXP] = get_str(ctx, global, "RegExp");
    proto = get_str(ctx, c->v[CV_REGEXP], "prototype");
    c->v[CV_REGEXP_SOURCE] = get_getter(ctx, proto, "source");
    c->v[CV_REGEXP_FLAGS] = get_getter(ctx, proto, "flags");
    JS_FreeValue(ctx, proto);
    proto = JS_UNDEFINED;
    JSValue pattern = JS_NewString(ctx, "a");
    wr = check_class(ctx, c->v[CV_REGEXP], 1, &pattern, QJS_CLASS_REGEXP, NULL);
    JS_FreeValue(ctx, pattern);
    if (wr < 0) {
        goto fail;
    }

    what = "ArrayBuffer";
    static const uint8_t eight[8];
    ab = JS_NewArrayBufferCopy(ctx, eight, sizeof eight);
    if (JS_IsException(ab) || !JS_GetOpaque(ab, QJS_CLASS_ARRAY_BUFFER)) {
        goto fail;
    }
    for (int i = 0; i < N_TYPED; i++) {
        what = typed_kinds[i].name;
        c->v[CV_TYPED + i] = get_str(ctx, global, typed_kinds[i].name);
        if (check_class(ctx, c->v[CV_TYPED + i], 1, &ab, QJS_CLASS_TYPED_FIRST + (JSClassID)i,
                        NULL) < 0) {
            goto fail;
        }
    }
    what = "DataView";
    c->v[CV_DATAVIEW] = get_str(ctx, global, "DataView");
    proto = get_str(ctx, c->v[CV_DATAVIEW], "prototype");
    c->v[CV_DV_BUFFER] = get_getter(ctx, proto, "buffer");
    c->v[CV_DV_BYTE_OFFSET] = get_getter(ctx, proto, "byteOffset");
    c->v[CV_DV_BYTE_LENGTH] = get_getter(ctx, proto, "byteLength");
    JS_FreeValue(ctx, proto);
    proto = JS_UNDEFINED;
    if (check_class(ctx, c->v[CV_DATAVIEW], 1, &ab, QJS_CLASS_DATAVIEW, NULL) < 0) {
        goto fail;
    }
    what = "errors";
    for (int i = 0; i < N_ERRORS; i++) {
        c->v[CV_ERROR + i] = get_str(ctx, global, error_names[i]);
    }
    for (int i = 0; i < CV_COUNT; i++) {
        if (JS_IsException(c->v[i])) {
            c->v[i] = JS_UNDEFINED;
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
    JS_FreeValue(ctx, sample);
    JS_FreeValue(ctx, proto);
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

/* ------------------------------------------------------------------ encoder */

enum seg_kind {
    SEG_KEY,   /* object key: doc "key", human .key or ["key"] */
    SEG_INDEX, /* array index: doc n, human [n] */
    SEG_ITEM,  /* sparse-array item: doc "n", human [n] */
    SEG_FIELD, /* a tag's field: doc "field", human .field unless hidden */
};

struct seg {
    enum seg_kind kind;
    int hidden;
    uint32_t index;
    JSAtom atom;       /* SEG_KEY: borrowed on the stack, owned in a path node */
    const char *field; /* SEG_FIELD: static */
};

#define NO_NODE UINT32_MAX

struct path_node {
    uint32_t parent; /* NO_NODE for the root */
    struct seg seg;
};

struct enc {
    JSContext *ctx;
    struct value_cache *c;
    struct buf *out;
    const char *root_name;
    unsigned max_depth;
    size_t limit; /* bytes this call may append */
    struct seg *stack;
    uint32_t *stack_node; /* stack_node[k]: path node of the first k segments, or NO_NODE */
    size_t depth;         /* segments on the stack */
    size_t stack_cap;
    size_t node_cap_stack;
    struct path_node *nodes;
    size_t n_nodes, cap_nodes;
    struct ptrmap seen; /* JSObject * -> path node; each key holds a reference */
    struct al_error *err;
};

static enum al_code enc_value(struct enc *e, JSValueConst v, unsigned level);

static void render_seg_key(struct enc *e, struct buf *pb, JSAtom atom)
{
    const char *s = JS_AtomToCString(e->ctx, atom);
    if (!s) {
        cache_clear_exception(e->ctx);
        buf_append_str(pb, "[?]");
        return;
    }
    size_t n = strlen(s);
    int ident = n > 0 && !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; i < n && ident; i++) {
        char ch = s[i];
        ident = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '_' || ch == '$';
    }
    if (ident) {
        buf_append_byte(pb, '.');
        buf_append(pb, s, n);
    } else {
        buf_append_byte(pb, '[');
        json_write_string(pb, s, n);
        buf_append_byte(pb, ']');
    }
    JS_FreeCString(e->ctx, s);
}

/* The human path of the current position, e.g. value.items[3].fn, into dst. */
static void render_path(struct enc *e, char *dst, size_t cap)
{
    struct buf pb;
    buf_init(&pb, 200);
    buf_append_str(&pb, e->root_name);
    for (size_t i = 0; i < e->depth; i++) {
        const struct seg *s = &e->stack[i];
        switch (s->kind) {
        case SEG_KEY:
            render_seg_key(e, &pb, s->atom);
            break;
        case SEG_INDEX:
        case SEG_ITEM:
            buf_printf(&pb, "[%u]", (unsigned)s->index);
            break;
        case SEG_FIELD:
            if (!s->hidden) {
                buf_printf(&pb, ".%s", s->field);
            }
            break;
        }
    }
    snprintf(dst, cap, "%s%s", pb.data ? pb.data : e->root_name, pb.len >= 190 ? "..." : "");
    buf_done(&pb);
}

static enum al_code fail_at(struct enc *e, enum al_code code, const char *what)
{
    char path[240];
    render_path(e, path, sizeof path);
    return error_set(e->err, code, "%s at %s", what, path);
}

static enum al_code refuse(struct enc *e, const char *what)
{
    char path[240];
    render_path(e, path, sizeof path);
    return error_set(e->err, AL_SERIALIZATION_ERROR, "cannot serialize %s at %s", what, path);
}

static enum al_code user_error(struct enc *e)
{
    return fail_at(e, AL_USER_ERROR, "exception while reading the value");
}

static enum al_code no_memory(struct enc *e)
{
    return error_set(e->err, AL_INTERNAL_ERROR, "out of memory encoding a value");
}

static enum al_code put_status(struct enc *e, enum buf_status st)
{
    /* buf_append_byte trusts its allocation rather than max, and out->max was lowered for this
     * call after the buffer may have grown: check the cap here too. */
    if (st == BUF_OK && e->out->len <= e->out->max) {
        return AL_OK;
    }
    if (st == BUF_OK) {
        st = BUF_TOO_BIG;
    }
    if (st == BUF_TOO_BIG) {
        char what[64];
        snprintf(what, sizeof what, "encoded value larger than %zu bytes", e->limit);
        return fail_at(e, AL_OUTPUT_LIMIT, what);
    }
    return no_memory(e);
}

static enum al_code put(struct enc *e, const char *s, size_t n)
{
    return put_status(e, buf_append(e->out, s, n));
}

static enum al_code puts_(struct enc *e, const char *s)
{
    return put(e, s, strlen(s));
}

static enum al_code put_json_string(struct enc *e, const char *s, size_t n)
{
    return put_status(e, json_write_string(e->out, s, n));
}

static enum al_code put_u64(struct enc *e, uint64_t u, int neg)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg) {
        tmp[--i] = '-';
    }
    return put(e, tmp + i, sizeof tmp - i);
}

/* A JS string value as a JSON string literal. */
static enum al_code put_js_string(struct enc *e, JSValueConst v)
{
    size_t n;
    const char *s = JS_ToCStringLen(e->ctx, &n, v);
    if (!s) {
        return user_error(e);
    }
    enum al_code rc = put_json_string(e, s, n);
    JS_FreeCString(e->ctx, s);
    return rc;
}

static enum al_code push(struct enc *e, struct seg s)
{
    if (grow((void **)&e->stack, &e->stack_cap, e->depth + 1, sizeof *e->stack) < 0 ||
        grow((void **)&e->stack_node, &e->node_cap_stack, e->depth + 2, sizeof *e->stack_node) <
                0) {
        return no_memory(e);
    }
    e->stack[e->depth++] = s;
    e->stack_node[e->depth] = NO_NODE;
    return AL_OK;
}

static void pop(struct enc *e)
{
    e->depth--;
}

static struct seg seg_key(JSAtom atom)
{
    return (struct seg){ .kind = SEG_KEY, .atom = atom };
}

static struct seg seg_index(uint32_t i)
{
    return (struct seg){ .kind = SEG_INDEX, .index = i };
}

static struct seg seg_field(const char *field, int hidden)
{
    return (struct seg){ .kind = SEG_FIELD, .field = field, .hidden = hidden };
}

/* The path node of the current position, creating the missing ones. */
static enum al_code materialize(struct enc *e, uint32_t *ret_node)
{
    size_t k = e->depth;
    while (e->stack_node[k] == NO_NODE) {
        k--;
    }
    for (size_t j = k + 1; j <= e->depth; j++) {
        if (grow((void **)&e->nodes, &e->cap_nodes, e->n_nodes + 1, sizeof *e->nodes) < 0 ||
            e->n_nodes >= NO_NODE) {
            return no_memory(e);
        }
        struct path_node *pn = &e->nodes[e->n_nodes];
        pn->parent = e->stack_node[j - 1];
        pn->seg = e->stack[j - 1];
        if (pn->seg.kind == SEG_KEY) {
            pn->seg.atom = JS_DupAtom(e->ctx, pn->seg.atom);
        }
        e->stack_node[j] = (uint32_t)e->n_nodes++;
    }
    *ret_node = e->stack_node[e->depth];
    return AL_OK;
}

static enum al_code put_ref(struct enc *e, uint32_t node)
{
    enum al_code rc;
    size_t n = 0;
    uint32_t *chain = NULL;
    size_t chain_cap = 0;

    for (uint32_t id = node; e->nodes[id].parent != NO_NODE; id = e->nodes[id].parent) {
        if (grow((void **)&chain, &chain_cap, n + 1, sizeof *chain) < 0) {
            rc = no_memory(e);
            goto out;
        }
        chain[n++] = id;
    }
    rc = puts_(e, "{\"$type\":\"ref\",\"path\":[");
    for (size_t i = n; i-- > 0 && rc == AL_OK;) {
        const struct seg *s = &e->nodes[chain[i]].seg;
        if (i + 1 != n) {
            rc = put(e, ",", 1);
            if (rc != AL_OK) {
                break;
            }
        }
        switch (s->kind) {
        case SEG_KEY: {
            const char *str;
            size_t len;
            JSValue kv = JS_AtomToString(e->ctx, s->atom);
            str = JS_IsException(kv) ? NULL : JS_ToCStringLen(e->ctx, &len, kv);
            JS_FreeValue(e->ctx, kv);
            if (!str) {
                rc = user_error(e);
                break;
            }
            rc = put_json_string(e, str, len);
            JS_FreeCString(e->ctx, str);
            break;
        }
        case SEG_INDEX:
            rc = put_u64(e, s->index, 0);
            break;
        case SEG_ITEM:
            rc = put(e, "\"", 1);
            if (rc == AL_OK) {
                rc = put_u64(e, s->index, 0);
            }
            if (rc == AL_OK) {
                rc = put(e, "\"", 1);
            }
            break;
        case SEG_FIELD:
            rc = put_json_string(e, s->field, strlen(s->field));
            break;
        }
    }
    if (rc == AL_OK) {
        rc = puts_(e, "]}");
    }
out:
    free(chain);
    return rc;
}

static enum al_code put_number(struct enc *e, JSValueConst v, double d)
{
    if (isnan(d)) {
        return puts_(e, "{\"$type\":\"number\",\"value\":\"NaN\"}");
    }
    if (isinf(d)) {
        return puts_(e, d > 0 ? "{\"$type\":\"number\",\"value\":\"Infinity\"}"
                              : "{\"$type\":\"number\",\"value\":\"-Infinity\"}");
    }
    if (d == 0 && signbit(d)) {
        return puts_(e, "{\"$type\":\"number\",\"value\":\"-0\"}");
    }
    if (d == trunc(d) && fabs(d) < 9007199254740992.0) {
        /* below 2^53 an integer's shortest round-trip digits are its own digits */
        return put_u64(e, (uint64_t)fabs(d), d < 0);
    }
    /* Number#toString's own algorithm, so the digits match JSON.stringify exactly */
    size_t n;
    const char *s = JS_ToCStringLen(e->ctx, &n, v);
    if (!s) {
        return user_error(e);
    }
    enum al_code rc = put(e, s, n);
    JS_FreeCString(e->ctx, s);
    return rc;
}

static const char b64_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static enum al_code put_base64(struct enc *e, const uint8_t *p, size_t n)
{
    enum buf_status st;
    size_t out_len = (n + 2) / 3 * 4;
    if (n > SIZE_MAX / 2) {
        return put_status(e, BUF_TOO_BIG);
    }
    char *q = buf_reserve(e->out, out_len, &st);
    if (!q) {
        return put_status(e, st);
    }
    size_t i = 0, j = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        q[j++] = b64_alphabet[(w >> 18) & 63];
        q[j++] = b64_alphabet[(w >> 12) & 63];
        q[j++] = b64_alphabet[(w >> 6) & 63];
        q[j++] = b64_alphabet[w & 63];
    }
    if (i < n) {
        uint32_t w = (uint32_t)p[i] << 16;
        if (i + 1 < n) {
            w |= (uint32_t)p[i + 1] << 8;
        }
        q[j++] = b64_alphabet[(w >> 18) & 63];
        q[j++] = b64_alphabet[(w >> 12) & 63];
        q[j++] = i + 1 < n ? b64_alphabet[(w >> 6) & 63] : '=';
        q[j++] = '=';
    }
    buf_commit(e->out, j);
    return AL_OK;
}

static enum al_code check_level(struct enc *e, unsigned level)
{
    if (level > e->max_depth) {
        char what[48];
        snprintf(what, sizeof what, "nesting deeper than %u", e->max_depth);
        return fail_at(e, AL_SERIALIZATION_ERROR, what);
    }
    return AL_OK;
}

/* Encodes the child `v` (consumes v) under segment s. */
static enum al_code enc_child(struct enc *e, struct seg s, JSValue v, unsigned level)
{
    enum al_code rc = push(e, s);
    if (rc == AL_OK) {
        rc = enc_value(e, v, level);
        pop(e);
    }
    JS_FreeValue(e->ctx, v);
    return rc;
}

static void free_prop_enum(JSContext *ctx, JSPropertyEnum *tab, uint32_t n)
{
    if (!tab) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        JS_FreeAtom(ctx, tab[i].atom);
    }
    js_free(ctx, tab);
}

static enum al_code enc_plain(struct enc *e, JSValueConst obj, unsigned level)
{
    JSContext *ctx = e->ctx;
    JSPropertyEnum *tab = NULL;
    uint32_t n = 0;
    int escaped = 0;
    enum al_code rc;

    rc = check_level(e, level);
    if (rc != AL_OK) {
        return rc;
    }
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, obj, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0) {
        return user_error(e);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (tab[i].atom == e->c->atoms[CA_TYPE]) {
            escaped = 1;
        }
    }
    if (escaped) {
        rc = puts_(e, "{\"$type\":\"object\",\"value\":");
        if (rc == AL_OK) {
            rc = push(e, seg_field("value", 1));
        }
        if (rc != AL_OK) {
            goto out;
        }
    }
    rc = put(e, "{", 1);
    for (uint32_t i = 0; i < n && rc == AL_OK; i++) {
        if (i) {
            rc = put(e, ",", 1);
            if (rc != AL_OK) {
                break;
            }
        }
        JSValue key = JS_AtomToString(ctx, tab[i].atom);
        if (JS_IsException(key)) {
            rc = user_error(e);
            break;
        }
        rc = put_js_string(e, key);
        JS_FreeValue(ctx, key);
        if (rc == AL_OK) {
            rc = put(e, ":", 1);
        }
        if (rc != AL_OK) {
            break;
        }
        JSValue val = JS_GetProperty(ctx, obj, tab[i].atom);
        if (JS_IsException(val)) {
            rc = push(e, seg_key(tab[i].atom));
            if (rc == AL_OK) {
                rc = user_error(e);
                pop(e);
            }
            break;
        }
        rc = enc_child(e, seg_key(tab[i].atom), val, level);
    }
    if (rc == AL_OK) {
        rc = put(e, "}", 1);
    }
    if (escaped) {
        pop(e);
        if (rc == AL_OK) {
            rc = put(e, "}", 1);
        }
    }
out:
    free_prop_enum(ctx, tab, n);
    return rc;
}

/* Parses an array-index key ("0", "17"; canonical, below 2^32 - 1). */
static int parse_index(const char *s, size_t n, uint32_t *ret)
{
    uint64_t v = 0;
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0')) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v >= 0xffffffffu) {
        return 0;
    }
    *ret = (uint32_t)v;
    return 1;
}

static enum al_code enc_array(struct enc *e, JSValueConst arr, unsigned level)
{
    JSContext *ctx = e->ctx;
    JSPropertyEnum *tab = NULL;
    uint32_t n = 0;
    uint64_t len = 0;
    enum al_code rc;

    rc = check_level(e, level);
    if (rc != AL_OK) {
        return rc;
    }
    JSValue lv = JS_GetProperty(ctx, arr, e->c->atoms[CA_LENGTH]);
    if (JS_IsException(lv)) {
        return user_error(e);
    }
    int r = JS_ToIndex(ctx, &len, lv);
    JS_FreeValue(ctx, lv);
    if (r < 0) {
        return user_error(e);
    }
    if (len > 0xffffffffu) {
        return refuse(e, "array with an invalid length");
    }
    /* Own index keys come first, ascending: the array is dense iff key len-1 is index len-1. */
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, arr, JS_GPN_STRING_MASK) < 0) {
        return user_error(e);
    }
    int dense = len == 0;
    if (!dense && n >= len) {
        JSAtom last = JS_NewAtomUInt32(ctx, (uint32_t)(len - 1));
        dense = last == tab[len - 1].atom;
        JS_FreeAtom(ctx, last);
    }
    if (dense) {
        free_prop_enum(ctx, tab, n);
        tab = NULL;
        rc = put(e, "[", 1);
        for (uint32_t i = 0; i < len && rc == AL_OK; i++) {
            if (i) {
                rc = put(e, ",", 1);
                if (rc != AL_OK) {
                    break;
                }
            }
            JSValue val = JS_GetPropertyUint32(ctx, arr, i);
            if (JS_IsException(val)) {
                rc = push(e, seg_index(i));
                if (rc == AL_OK) {
                    rc = user_error(e);
                    pop(e);
                }
                break;
            }
            rc = enc_child(e, seg_index(i), val, level);
        }
        if (rc == AL_OK) {
            rc = put(e, "]", 1);
        }
        goto out;
    }

    /* Sparse: holes stay holes, so only the present indices are written. */
    rc = puts_(e, "{\"$type\":\"array\",\"length\":");
    if (rc == AL_OK) {
        rc = put_u64(e, len, 0);
    }
    if (rc == AL_OK) {
        rc = puts_(e, ",\"items\":{");
    }
    if (rc == AL_OK) {
        rc = push(e, seg_field("items", 1));
    }
    if (rc != AL_OK) {
        goto out;
    }
    int first = 1;
    for (uint32_t i = 0; i < n && rc == AL_OK; i++) {
        size_t klen;
        uint32_t idx;
        const char *ks = JS_AtomToCString(ctx, tab[i].atom);
        if (!ks) {
            rc = user_error(e);
            break;
        }
        klen = strlen(ks);
        int is_item = parse_index(ks, klen, &idx) && idx < len;
        JS_FreeCString(ctx, ks);
        if (!is_item) {
            continue; /* named properties of arrays are dropped, as JSON.stringify does */
        }
        if (!first) {
            rc = put(e, ",", 1);
        }
        first = 0;
        if (rc == AL_OK) {
            rc = put(e, "\"", 1);
        }
        if (rc == AL_OK) {
            rc = put_u64(e, idx, 0);
        }
        if (rc == AL_OK) {
            rc = put(e, "\":", 2);
        }
        if (rc != AL_OK) {
            break;
        }
        struct seg s = { .kind = SEG_ITEM, .index = idx };
        JSValue val = JS_GetProperty(ctx, arr, tab[i].atom);
        if (JS_IsException(val)) {
            rc = push(e, s);
            if (rc == AL_OK) {
                rc = user_error(e);
                pop(e);
            }
            break;
        }
        rc = enc_child(e, s, val, level);
    }
    pop(e);
    if (rc == AL_OK) {
        rc = puts_(e, "}}");
    }
out:
    free_prop_enum(ctx, tab, n);
    return rc;
}

/* Map entries or Set values through the intrinsic iterator captured in the cache. */
static enum al_code enc_collection(struct enc *e, JSValueConst obj, int is_map, unsigned level)
{
    JSContext *ctx = e->ctx;
    struct value_cache *c = e->c;
    JSValue iter;
    enum al_code rc;

    rc = check_level(e, level);
    if (rc != AL_OK) {
        return rc;
    }
    rc = puts_(e, is_map ? "{\"$type\":\"map\",\"entries\":[" : "{\"$type\":\"set\",\"values\":[");
    if (rc != AL_OK) {
        return rc;
    }
    iter = JS_Call(ctx, c->v[is_map ? CV_MAP_ENTRIES : CV_SET_VALUES], obj, 0, NULL);
    if (JS_IsException(iter)) {
        return user_error(e);
    }
    rc = push(e, seg_field(is_map ? "entries" : "values", 0));
    if (rc != AL_OK) {
        JS_FreeValue(ctx, iter);
        return rc;
    }
    for (uint32_t i = 0; rc == AL_OK; i++) {
        JSValue res =
                JS_Call(ctx, c->v[is_map ? CV_MAP_ITER_NEXT : CV_SET_ITER_NEXT], iter, 0, NULL);
        if (JS_IsException(res)) {
            rc = user_error(e);
            break;
        }
        JSValue done = JS_GetProperty(ctx, res, c->atoms[CA_DONE]);
        JSValue item = JS_GetProperty(ctx, res, c->atoms[CA_VALUE]);
        JS_FreeValue(ctx, res);
        int is_done = JS_ToBool(ctx, done);
        JS_FreeValue(ctx, done);
        if (is_done) {
            JS_FreeValue(ctx, item);
            break;
        }
        if (i) {
            rc = put(e, ",", 1);
        }
        if (rc == AL_OK && !is_map) {
            rc = enc_child(e, seg_index(i), item, level);
            continue;
        }
        if (rc == AL_OK) {
            rc = push(e, seg_index(i));
        }
        if (rc != AL_OK) {
            JS_FreeValue(ctx, item);
            break;
        }
        JSValue k = JS_GetPropertyUint32(ctx, item, 0);
        JSValue v = JS_GetPropertyUint32(ctx, item, 1);
        JS_FreeValue(ctx, item);
        rc = put(e, "[", 1);
        if (rc == AL_OK) {
            rc = enc_child(e, seg_index(0), k, level);
        } else {
            JS_FreeValue(ctx, k);
        }
        if (rc == AL_OK) {
            rc = put(e, ",", 1);
        }
        if (rc == AL_OK) {
            rc = enc_child(e, seg_index(1), v, level);
        } else {
            JS_FreeValue(ctx, v);
        }
        if (rc == AL_OK) {
            rc = put(e, "]", 1);
        }
        pop(e);
    }
    pop(e);
    JS_FreeValue(ctx, iter);
    if (rc == AL_OK) {
        rc = puts_(e, "]}");
    }
    return rc;
}

/* Calls an intrinsic captured in the cache; JS_EXCEPTION is left pending. */
static JSValue call0(struct enc *e, enum cache_value fn, JSValueConst this_obj)
{
    return JS_Call(e->ctx, e->c->v[fn], this_obj, 0, NULL);
}

static enum al_code enc_error(struct enc *e, JSValueConst err, unsigned level)
{
    JSContext *ctx = e->ctx;
    struct value_cache *c = e->c;
    enum al_code rc;

    rc = check_level(e, level);
    if (rc != AL_OK) {
        return rc;
    }
    JSValue name = JS_GetProperty(ctx, err, c->atoms[CA_NAME]);
    if (JS_IsException(name)) {
        return user_error(e);
    }
    rc = puts_(e, "{\"$type\":\"error\",\"name\":");
    if (rc == AL_OK) {
        rc = JS_IsString(name) ? put_js_string(e, name) : puts_(e, "\"Error\"");
    }
    JS_FreeValue(ctx, name);
    if (rc != AL_OK) {
        return rc;
    }
    JSValue msg = JS_GetProperty(ctx, err, c->atoms[CA_MESSAGE]);
    if (JS_IsException(msg)) {
        return user_error(e);
    }
    rc = puts_(e, ",\"message\":");
    if (rc == AL_OK) {
        rc = JS_IsUndefined(msg) ? puts_(e, "\"\"") : put_js_string(e, msg);
    }
    JS_FreeValue(ctx, msg);
    static const enum cache_atom extra[] = { CA_CAUSE, CA_ERRORS };
    static const char *const extra_names[] = { "cause", "errors" };
    for (int i = 0; i < 2 && rc == AL_OK; i++) {
        int has = JS_GetOwnProperty(ctx, NULL, err, c->atoms[extra[i]]);
        if (has < 0) {
            return user_error(e);
        }
        if (!has) {
            continue;
        }
        JSValue v = JS_GetProperty(ctx, err, c->atoms[extra[i]]);
        if (JS_IsException(v)) {
            return user_error(e);
        }
        rc = put(e, ",\"", 2);
        if (rc == AL_OK) {
            rc = puts_(e, extra_names[i]);
        }
        if (rc == AL_OK) {
            rc = put(e, "\":", 2);
        }
        if (rc != AL_OK) {
            JS_FreeValue(ctx, v);
            break;
        }
        rc = enc_child(e, seg_field(extra_names[i], 0), v, level);
    }
    if (rc == AL_OK) {
        rc = put(e, "}", 1);
    }
    return rc;
}

static enum al_code enc_date(struct enc *e, JSValueConst date)
{
    double t;
    JSValue tv = call0(e, CV_DATE_GET_TIME, date);
    if (JS_IsException(tv)) {
        return user_error(e);
    }
    int r = JS_ToFloat64(e->ctx, &t, tv);
    JS_FreeValue(e->ctx, tv);
    if (r < 0) {
        return user_error(e);
    }
    if (isnan(t)) {
        return puts_(e, "{\"$type\":\"date\",\"value\":null}");
    }
    JSValue iso = call0(e, CV_DATE_TO_ISO, date);
    if (JS_IsException(iso)) {
        return user_error(e);
    }
    enum al_code rc = puts_(e, "{\"$type\":\"date\",\"value\":");
    if (rc == AL_OK) {
        rc = put_js_string(e, iso);
    }
    if (rc == AL_OK) {
        rc = put(e, "}", 1);
    }
    JS_FreeValue(e->ctx, iso);
    return rc;
}

static enum al_code enc_regexp(struct enc *e, JSValueConst re)
{
    JSValue source = call0(e, CV_REGEXP_SOURCE, re);
    if (JS_IsException(source)) {
        return user_error(e);
    }
    JSValue flags = call0(e, CV_REGEXP_FLAGS, re);
    if (JS_IsException(flags)) {
        JS_FreeValue(e->ctx, source);
        return user_error(e);
    }
    enum al_code rc = puts_(e, "{\"$type\":\"regexp\",\"source\":");
    if (rc == AL_OK) {
        rc = put_js_string(e, source);
    }
    if (rc == AL_OK) {
        rc = puts_(e, ",\"flags\":");
    }
    if (rc == AL_OK) {
        rc = put_js_string(e, flags);
    }
    if (rc == AL_OK) {
        rc = put(e, "}", 1);
    }
    JS_FreeValue(e->ctx, source);
    JS_FreeValue(e->ctx, flags);
    return rc;
}

static enum al_code enc_array_buffer(struct enc *e, JSValueConst ab)
{
    size_t size;
    uint8_t *data = JS_GetArrayBuffer(e->ctx, &size, ab);
    if (!data && size == 0) {
        /* detached (or empty: QuickJS may give NULL for a zero-length buffer) */
        JSValue ex = JS_GetException(e->ctx);
        int detached = !JS_IsNull(ex) && !JS_IsUndefined(ex);
        JS_FreeValue(e->ctx, ex);
        if (detached) {
            return refuse(e, "detached ArrayBuffer");
        }
    }
    enum al_code rc = puts_(e, "{\"$type\":\"arraybuffer\",\"base64\":\"");
    if (rc == AL_OK) {
        rc = put_base64(e, data, size);
    }
    if (rc == AL_OK) {
        rc = put(e, "\"}", 2);
    }
    return rc;
}

/* Typed arrays and DataView: the buffer goes through enc_value, so views sharing one buffer
 * share it again after decoding (the second one meets a reference). */
static enum al_code enc_view(struct enc *e, JSValueConst view, int typed_index, unsigned level)
{
    JSContext *ctx = e->ctx;
    JSValue buffer;
    size_t offset = 0, byte_len = 0, bpe = 1;
    enum al_code rc;

    if (typed_index >= 0) {
        buffer = JS_GetTypedArrayBuffer(ctx, view, &offset, &byte_len, &bpe);
        if (JS_IsException(buffer)) {
            return user_error(e);
        }
    } else {
        double o, l;
        buffer = call0(e, CV_DV_BUFFER, view);
        if (JS_IsException(buffer)) {
            return user_error(e);
        }
        JSValue ov = call0(e, CV_DV_BYTE_OFFSET, view);
        JSValue lv = JS_IsException(ov) ? JS_EXCEPTION : call0(e, CV_DV_BYTE_LENGTH, view);
        int bad = JS_IsException(lv) || JS_ToFloat64(ctx, &o, ov) < 0 ||
                  JS_ToFloat64(ctx, &l, lv) < 0;
        JS_FreeValue(ctx, ov);
        JS_FreeValue(ctx, lv);
        if (bad) {
            JS_FreeValue(ctx, buffer);
            return refuse(e, "detached DataView");
        }
        offset = (size_t)o;
        byte_len = (size_t)l;
    }
    rc = puts_(e, "{\"$type\":");
    if (rc == AL_OK) {
        rc = puts_(e, typed_index >= 0 ? "\"" : "\"DataView\"");
    }
    if (rc == AL_OK && typed_index >= 0) {
        rc = puts_(e, typed_kinds[typed_index].name);
        if (rc == AL_OK) {
            rc = put(e, "\"", 1);
        }
    }
    if (rc == AL_OK) {
        rc = puts_(e, ",\"buffer\":");
    }
    if (rc == AL_OK) {
        rc = enc_child(e, seg_field("buffer", 0), buffer, level);
    } else {
        JS_FreeValue(ctx, buffer);
    }
    if (rc == AL_OK) {
        rc = puts_(e, ",\"byteOffset\":");
    }
    if (rc == AL_OK) {
        rc = put_u64(e, offset, 0);
    }
    if (rc == AL_OK) {
        rc = puts_(e, typed_index >= 0 ? ",\"length\":" : ",\"byteLength\":");
    }
    if (rc == AL_OK) {
        rc = put_u64(e, typed_index >= 0 ? byte_len / bpe : byte_len, 0);
    }
    if (rc == AL_OK) {
        rc = put(e, "}", 1);
    }
    return rc;
}

/* "instance of Foo" from proto.constructor.name, read as data properties only (no getters). */
static void describe_instance(struct enc *e, JSValueConst proto, char *dst, size_t cap)
{
    JSContext *ctx = e->ctx;
    JSPropertyDescriptor desc;
    snprintf(dst, cap, "class instance");
    if (!JS_IsObject(proto) || JS_GetOpaque(proto, QJS_CLASS_PROXY)) {
        return;
    }
    int r = JS_GetOwnProperty(ctx, &desc, proto, e->c->atoms[CA_CONSTRUCTOR]);
    if (r <= 0) {
        if (r < 0) {
            cache_clear_exception(ctx);
        }
        return;
    }
    JS_FreeValue(ctx, desc.getter);
    JS_FreeValue(ctx, desc.setter);
    JSValue ctor = desc.value;
    if (JS_IsFunction(ctx, ctor) && !JS_GetOpaque(ctor, QJS_CLASS_PROXY)) {
        r = JS_GetOwnProperty(ctx, &desc, ctor, e->c->atoms[CA_NAME]);
        if (r < 0) {
            cache_clear_exception(ctx);
        } else if (r > 0) {
            JS_FreeValue(ctx, desc.getter);
            JS_FreeValue(ctx, desc.setter);
            if (JS_IsString(desc.value)) {
                const char *s = JS_ToCString(ctx, desc.value);
                if (s && s[0]) {
                    snprintf(dst, cap, "instance of %.60s", s);
                }
                JS_FreeCString(ctx, s);
            }
            JS_FreeValue(ctx, desc.value);
        }
    }
    JS_FreeValue(ctx, ctor);
}

static enum al_code enc_object(struct enc *e, JSValueConst obj, unsigned level)
{
    JSContext *ctx = e->ctx;
    void *ptr = JS_VALUE_GET_PTR(obj);
    uint32_t node = 0;
    enum al_code rc;

    if (ptrmap_get(&e->seen, ptr, &node)) {
        return put_ref(e, node);
    }
    rc = materialize(e, &node);
    if (rc != AL_OK) {
        return rc;
    }
    if (ptrmap_put(&e->seen, ptr, node) < 0) {
        return no_memory(e);
    }
    JS_DupValue(ctx, obj); /* held until the end: the address cannot be reused meanwhile */

    /* Engine class first: neither a prototype nor a property can fake it. */
    if (JS_IsFunction(ctx, obj)) {
        return refuse(e, "function");
    }
    if (JS_IsError(ctx, obj)) {
        return enc_error(e, obj, level + 1);
    }
    for (int i = 0; i < N_TYPED; i++) {
        if (JS_GetOpaque(obj, QJS_CLASS_TYPED_FIRST + (JSClassID)i)) {
            return enc_view(e, obj, i, level);
        }
    }
    if (JS_GetOpaque(obj, QJS_CLASS_ARRAY_BUFFER)) {
        return enc_array_buffer(e, obj);
    }
    if (JS_GetOpaque(obj, QJS_CLASS_SHARED_ARRAY_BUFFER)) {
        return refuse(e, "SharedArrayBuffer");
    }
    if (JS_GetOpaque(obj, QJS_CLASS_DATAVIEW)) {
        return enc_view(e, obj, -1, level);
    }
    if (JS_GetOpaque(obj, QJS_CLASS_MAP)) {
        return enc_collection(e, obj, 1, level + 1);
    }
    if (JS_GetOpaque(obj, QJS_CLASS_SET)) {
        return enc_collection(e, obj, 0, level + 1);
    }
    if (JS_GetOpaque(obj, QJS_CLASS_WEAKMAP)) {
        return refuse(e, "WeakMap");
    }
    if (JS_GetOpaque(obj, QJS_CLASS_WEAKSET)) {
        return refuse(e, "WeakSet");
    }
    if (JS_GetOpaque(obj, QJS_CLASS_REGEXP)) {
        return enc_regexp(e, obj);
    }
    if (JS_GetOpaque(obj, QJS_CLASS_DATE)) {
        return enc_date(e, obj); /* misses only time value 0; see the fallback below */
    }
    if (JS_GetOpaque(obj, QJS_CLASS_PROMISE)) {
        return refuse(e, "Promise");
    }
    int is_array = JS_IsArray(ctx, obj); /* follows proxies */
    if (is_array < 0) {
        return user_error(e);
    }
    if (is_array) {
        return enc_array(e, obj, level + 1);
    }
    JSValue proto = JS_GetPrototype(ctx, obj);
    if (JS_IsException(proto)) {
        return user_error(e);
    }
    if (JS_IsNull(proto) ||
        (JS_IsObject(proto) &&
         JS_VALUE_GET_PTR(proto) == JS_VALUE_GET_PTR(e->c->v[CV_OBJECT_PROTO]))) {
        JS_FreeValue(ctx, proto);
        return enc_plain(e, obj, level + 1);
    }
    /* A Date whose time value is 0 has a NULL opaque; getTime throws for anything else. */
    JSValue t = call0(e, CV_DATE_GET_TIME, obj);
    if (!JS_IsException(t)) {
        JS_FreeValue(ctx, t);
        JS_FreeValue(ctx, proto);
        return enc_date(e, obj);
    }
    cache_clear_exception(ctx);
    char what[96];
    describe_instance(e, proto, what, sizeof what);
    JS_FreeValue(ctx, proto);
    return refuse(e, what);
}

/* `level` counts the containers (objects, arrays, Map, Set, Error) around v. */
static enum al_code enc_value(struct enc *e, JSValueConst v, unsigned level)
{
    switch (JS_VALUE_GET_NORM_TAG(v)) {
    case JS_TAG_INT: {
        int32_t i = JS_VALUE_GET_INT(v);
        return put_u64(e, i < 0 ? (uint64_t)(-(int64_t)i) : (uint64_t)i, i < 0);
    }
    case JS_TAG_FLOAT64:
        return put_number(e, v, JS_VALUE_GET_FLOAT64(v));
    case JS_TAG_BOOL:
        return JS_VALUE_GET_BOOL(v) ? put(e, "true", 4) : put(e, "false", 5);
    case JS_TAG_NULL:
        return put(e, "null", 4);
    case JS_TAG_UNDEFINED:
        return puts_(e, "{\"$type\":\"undefined\"}");
    case JS_TAG_STRING:
        return put_js_string(e, v);
    case JS_TAG_SYMBOL:
        return refuse(e, "symbol");
    case JS_TAG_BIG_INT: {
        enum al_code rc = puts_(e, "{\"$type\":\"bigint\",\"value\":");
        if (rc == AL_OK) {
            rc = put_js_string(e, v); /* ToString of a BigInt: its decimal digits */
        }
        if (rc == AL_OK) {
            rc = put(e, "}", 1);
        }
        return rc;
    }
    case JS_TAG_OBJECT:
        return enc_object(e, v, level);
    default:
        return refuse(e, "value of an unsupported type");
    }
}

enum al_code value_encode_cached(struct value_cache *cache, JSValueConst v, const char *root_name,
                                 const struct value_limits *limits, struct buf *out,
                                 struct al_error *reterr)
{
    struct enc e;
    enum al_code rc;

    if (!cache || !limits || !out) {
        return error_set(reterr, AL_CONFIG_ERROR, "value_encode: NULL argument");
    }
    memset(&e, 0, sizeof e);
    e.ctx = cache->ctx;
    e.c = cache;
    e.out = out;
    e.root_name = root_name ? root_name : "value";
    e.max_depth = limits->max_depth;
    e.err = reterr;

    /* The cap is enforced by the buffer itself while we write. */
    size_t orig_max = out->max;
    size_t room = orig_max > out->len ? orig_max - out->len : 0;
    e.limit = limits->max_bytes < room ? limits->max_bytes : room;
    out->max = out->len + e.limit;

    if (grow((void **)&e.stack_node, &e.node_cap_stack, 1, sizeof *e.stack_node) < 0 ||
        grow((void **)&e.nodes, &e.cap_nodes, 1, sizeof *e.nodes) < 0) {
        rc = no_memory(&e);
        goto out;
    }
    e.nodes[0].parent = NO_NODE;
    e.n_nodes = 1;
    e.stack_node[0] = 0;
    rc = enc_value(&e, v, 0);
out:
    out->max = orig_max;
    for (size_t i = 0; i < e.seen.cap; i++) {
        if (e.seen.slots[i].key) {
            JS_FreeValue(e.ctx, JS_MKPTR(JS_TAG_OBJECT, (void *)e.seen.slots[i].key));
        }
    }
    for (size_t i = 1; i < e.n_nodes; i++) {
        if (e.nodes[i].seg.kind == SEG_KEY) {
            JS_FreeAtom(e.ctx, e.nodes[i].seg.atom);
        }
    }
    ptrmap_done(&e.seen);
    free(e.nodes);
    free(e.stack);
    free(e.stack_node);
    return rc;
}

enum al_code value_encode(JSContext *ctx, JSValueConst v, const char *root_name,
                          const struct value_limits *limits, struct buf *out,
                          struct al_error *reterr)
{
    struct value_cache *cache = NULL;
    enum al_code rc = value_cache_new(ctx, &cache, reterr);
    if (rc == AL_OK) {
        rc = value_encode_cached(cache, v, root_name, limits, out, reterr);
    }
    value_cache_free(cache);
    return rc;
}

/* ------------------------------------------------------------------ decoder */

struct dec {
    JSContext *ctx;
    struct value_cache *c;
    const char *text;
    const struct json_node *root;
    unsigned max_depth;
    struct ptrmap built; /* json node -> index in vals, for every node that made an object */
    JSValue *vals;       /* owned references: objects stay alive for later references */
    size_t n_vals, cap_vals;
    struct ptrmap arr_index; /* json array node -> offset in idx (built when first needed) */
    const struct json_node **idx;
    size_t n_idx, cap_idx;
    size_t scan_budget; /* member comparisons left for resolving reference paths */
    struct al_error *err;
};

static enum al_code dec_value(struct dec *d, const struct json_node *n, unsigned level,
                              JSValue *ret);

static enum al_code dfail(struct dec *d, const struct json_node *n, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static enum al_code dfail(struct dec *d, const struct json_node *n, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return error_set(d->err, AL_SERIALIZATION_ERROR, "offset %zu: %s", (size_t)(n->raw - d->text),
                     msg);
}

static enum al_code dec_oom(struct dec *d)
{
    return error_set(d->err, AL_INTERNAL_ERROR, "out of memory decoding a value");
}

/* Remembers that node n produced obj (borrowed; a reference is kept). */
static enum al_code remember(struct dec *d, const struct json_node *n, JSValueConst obj)
{
    if (grow((void **)&d->vals, &d->cap_vals, d->n_vals + 1, sizeof *d->vals) < 0 ||
        d->n_vals >= UINT32_MAX || ptrmap_put(&d->built, n, (uint32_t)d->n_vals) < 0) {
        return dec_oom(d);
    }
    d->vals[d->n_vals++] = JS_DupValue(d->ctx, obj);
    return AL_OK;
}

static enum al_code dec_level(struct dec *d, const struct json_node *n, unsigned level)
{
    if (level > d->max_depth) {
        return dfail(d, n, "nesting deeper than %u", d->max_depth);
    }
    return AL_OK;
}

static int is_key(const struct json_node *m, const char *key)
{
    size_t n = strlen(key);
    return m->key_len == n && memcmp(m->key, key, n) == 0;
}

static JSAtom key_atom(JSContext *ctx, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] >= 0x80) {
            /* JS_NewAtomLen would look non-ASCII bytes up as Latin-1: go through a string */
            JSValue str = JS_NewStringLen(ctx, s, n);
            if (JS_IsException(str)) {
                return JS_ATOM_NULL;
            }
            JSAtom a = JS_ValueToAtom(ctx, str);
            JS_FreeValue(ctx, str);
            return a;
        }
    }
    return JS_NewAtomLen(ctx, s, n);
}

/* Builds a plain object from the members of `members`; `reg` is the node references name. */
static enum al_code dec_plain(struct dec *d, const struct json_node *members,
                              const struct json_node *reg, unsigned level, JSValue *ret)
{
    JSContext *ctx = d->ctx;
    enum al_code rc = dec_level(d, reg, level);
    if (rc != AL_OK) {
        return rc;
    }
    JSValue obj = JS_NewObject(ctx);
    if (JS_IsException(obj)) {
        return dec_oom(d);
    }
    rc = remember(d, reg, obj);
    for (const struct json_node *m = members->child; m && rc == AL_OK; m = m->next) {
        JSValue v;
        rc = dec_value(d, m, level, &v);
        if (rc != AL_OK) {
            break;
        }
        JSAtom atom = key_atom(ctx, m->key, m->key_len);
        if (atom == JS_ATOM_NULL) {
            JS_FreeValue(ctx, v);
            rc = dec_oom(d);
            break;
        }
        /* define, not set: "__proto__" becomes an own key, no setter runs */
        if (JS_DefinePropertyValue(ctx, obj, atom, v, JS_PROP_C_W_E) < 0) {
            rc = dec_oom(d);
        }
        JS_FreeAtom(ctx, atom);
    }
    if (rc != AL_OK) {
        JS_FreeValue(ctx, obj);
        return rc;
    }
    *ret = obj;
    return AL_OK;
}

static enum al_code dec_array(struct dec *d, const struct json_node *n, unsigned level,
                              JSValue *ret)
{
    JSContext *ctx = d->ctx;
    enum al_code rc = dec_level(d, n, level);
    if (rc != AL_OK) {
        return rc;
    }
    JSValue arr = JS_NewArray(ctx);
    if (JS_IsException(arr)) {
        return dec_oom(d);
    }
    rc = remember(d, n, arr);
    uint32_t i = 0;
    for (const struct json_node *m = n->child; m && rc == AL_OK; m = m->next, i++) {
        JSValue v;
        rc = dec_value(d, m, level, &v);
        if (rc == AL_OK && JS_DefinePropertyValueUint32(ctx, arr, i, v, JS_PROP_C_W_E) < 0) {
            rc = dec_oom(d);
        }
    }
    if (rc != AL_OK) {
        JS_FreeValue(ctx, arr);
        return rc;
    }
    *ret = arr;
    return AL_OK;
}

/* Collects a tag's fields into ret[] (same order as names[]); names[0] is "$type". */
static enum al_code tag_fields(struct dec *d, const struct json_node *n, const char *tag,
                               const char *const *names, unsigned count, unsigned required,
                               const struct json_node **ret)
{
    unsigned seen = 0;
    for (unsigned i = 0; i < count; i++) {
        ret[i] = NULL;
    }
    for (const struct json_node *m = n->child; m; m = m->next) {
        unsigned i = 0;
        while (i < count && !is_key(m, names[i])) {
            i++;
        }
        if (i == count) {
            return dfail(d, m, "unknown field \"%.40s\" in a %s tag", m->key, tag);
        }
        if (seen & (1u << i)) {
            return dfail(d, m, "duplicate field \"%s\" in a %s tag", names[i], tag);
        }
        seen |= 1u << i;
        ret[i] = m;
    }
    for (unsigned i = 0; i < count; i++) {
        if ((required & (1u << i)) && !ret[i]) {
            return dfail(d, n, "missing field \"%s\" in a %s tag", names[i], tag);
        }
    }
    return AL_OK;
}

static int get_uint(const struct json_node *n, double max, double *ret)
{
    if (!n || n->type != JSON_NUMBER || !(n->num >= 0) || n->num > max || n->num != trunc(n->num)) {
        return 0;
    }
    *ret = n->num;
    return 1;
}

static const struct json_node *array_child(struct dec *d, const struct json_node *arr, size_t index,
                                           int *oom)
{
    if (arr->count <= 8) {
        const struct json_node *c = arr->child;
        while (index-- > 0) {
            c = c->next;
        }
        return c;
    }
    uint32_t off;
    if (!ptrmap_get(&d->arr_index, arr, &off)) {
        if (grow((void **)&d->idx, &d->cap_idx, d->n_idx + arr->count, sizeof *d->idx) < 0 ||
            d->n_idx >= UINT32_MAX || ptrmap_put(&d->arr_index, arr, (uint32_t)d->n_idx) < 0) {
            *oom = 1;
            return NULL;
        }
        off = (uint32_t)d->n_idx;
        for (const struct json_node *c = arr->child; c; c = c->next) {
            d->idx[d->n_idx++] = c;
        }
    }
    return d->idx[off + index];
}

static enum al_code dec_ref(struct dec *d, const struct json_node *tag,
                            const struct json_node *path, JSValue *ret)
{
    const struct json_node *cur = d->root;
    uint32_t vi;

    if (path->type != JSON_ARRAY) {
        return dfail(d, path, "a ref path must be an array");
    }
    for (const struct json_node *s = path->child; s; s = s->next) {
        if (s->type == JSON_STRING && cur->type == JSON_OBJECT) {
            const struct json_node *m = cur->child;
            for (; m; m = m->next) {
                if (d->scan_budget == 0) {
                    return dfail(d, tag, "references too costly to resolve");
                }
                d->scan_budget--;
                if (m->key_len == s->str_len && memcmp(m->key, s->str, s->str_len) == 0) {
                    break;
                }
            }
            if (!m) {
                return dfail(d, tag, "reference to nothing");
            }
            cur = m;
        } else if (s->type == JSON_NUMBER && cur->type == JSON_ARRAY) {
            double i;
            if (!get_uint(s, 4294967295.0, &i) || i >= (double)cur->count) {
                return dfail(d, tag, "reference to nothing");
            }
            int oom = 0;
            cur = array_child(d, cur, (size_t)i, &oom);
            if (oom) {
                return dec_oom(d);
            }
        } else {
            return dfail(d, tag, "reference to nothing");
        }
    }
    if (!ptrmap_get(&d->built, cur, &vi)) {
        return dfail(d, tag, "reference to nothing");
    }
    *ret = JS_DupValue(d->ctx, d->vals[vi]);
    return AL_OK;
}

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') {
        return ch - 'A';
    }
    if (ch >= 'a' && ch <= 'z') {
        return ch - 'a' + 26;
    }
    if (ch >= '0' && ch <= '9') {
        return ch - '0' + 52;
    }
    if (ch == '+') {
        return 62;
    }
    return ch == '/' ? 63 : -1;
}

/* Standard base64 with padding; returns the decoded length or -1. */
static long long base64_decode(const char *s, size_t n, uint8_t *out)
{
    size_t j = 0;
    if (n % 4) {
        return -1;
    }
    for (size_t i = 0; i < n; i += 4) {
        int pad = 0;
        uint32_t w = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char ch = (unsigned char)s[i + k];
            int v = b64_value(ch);
            if (ch == '=' && i + 4 == n && k >= 2) {
                pad++;
                w <<= 6;
                continue;
            }
            if (pad || v < 0) {
                return -1;
            }
            w = (w << 6) | (uint32_t)v;
        }
        out[j++] = (uint8_t)(w >> 16);
        if (pad < 2) {
            out[j++] = (uint8_t)(w >> 8);
        }
        if (pad < 1) {
            out[j++] = (uint8_t)w;
        }
    }
    return (long long)j;
}

static enum al_code dec_array_buffer(struct dec *d, const struct json_node *n,
                                     const struct json_node *b64, JSValue *ret)
{
    if (!b64 || b64->type != JSON_STRING) {
        return dfail(d, n, "arraybuffer needs a base64 string");
    }
    uint8_t *bytes = malloc(b64->str_len / 4 * 3 + 1);
    if (!bytes) {
        return dec_oom(d);
    }
    long long len = base64_decode(b64->str, b64->str_len, bytes);
    if (len < 0) {
        free(bytes);
        return dfail(d, b64, "bad base64");
    }
    JSValue ab = JS_NewArrayBufferCopy(d->ctx, bytes, (size_t)len);
    free(bytes);
    if (JS_IsException(ab)) {
        return dec_oom(d);
    }
    *ret = ab;
    return AL_OK;
}

static enum al_code dec_view(struct dec *d, const struct json_node *n, int typed_index,
                             unsigned level, JSValue *ret)
{
    static const char *const typed_fields[] = { "$type", "buffer", "byteOffset", "length" };
    static const char *const dv_fields[] = { "$type", "buffer", "byteOffset", "byteLength" };
    const char *tag = typed_index >= 0 ? typed_kinds[typed_index].name : "DataView";
    unsigned elem = typed_index >= 0 ? typed_kinds[typed_index].elem : 1;
    const struct json_node *f[4];
    JSContext *ctx = d->ctx;
    JSValue buffer = JS_UNDEFINED;
    double off, count;
    size_t size;
    enum al_code rc;

    rc = tag_fields(d, n, tag, typed_index >= 0 ? typed_fields : dv_fields, 4, 0xf, f);
    if (rc != AL_OK) {
        return rc;
    }
    if (!get_uint(f[2], 9007199254740991.0, &off) || !get_uint(f[3], 9007199254740991.0, &count)) {
        return dfail(d, n, "bad byteOffset or length in a %s tag", tag);
    }
    if (f[1]->type != JSON_OBJECT) {
        return dfail(d, f[1], "the buffer of a %s tag must be an arraybuffer", tag);
    }
    rc = dec_value(d, f[1], level, &buffer);
    if (rc != AL_OK) {
        return rc;
    }
    if (!JS_GetOpaque(buffer, QJS_CLASS_ARRAY_BUFFER)) {
        JS_FreeValue(ctx, buffer);
        return dfail(d, f[1], "the buffer of a %s tag must be an arraybuffer", tag);
    }
    if (!JS_GetArrayBuffer(ctx, &size, buffer)) {
        JS_FreeValue(ctx, JS_GetException(ctx)); /* empty buffers give NULL too */
    }
    if (fmod(off, elem) != 0 || off > (double)size || count > ((double)size - off) / elem) {
        JS_FreeValue(ctx, buffer);
        return dfail(d, n, "%s out of its buffer's bounds", tag);
    }
    JSValueConst ctor = d->c->v[typed_index >= 0 ? CV_TYPED + typed_index : CV_DATAVIEW];
    if (!JS_IsFunction(ctx, ctor)) {
        JS_FreeValue(ctx, buffer);
        return dfail(d, n, "%s is not available", tag);
    }
    JSValue args[3] = { buffer, JS_NewFloat64(ctx, off), JS_NewFloat64(ctx, count) };
    JSValue view = JS_CallConstructor(ctx, ctor, 3, args);
    JS_FreeValue(ctx, buffer);
    if (JS_IsException(view)) {
        return dec_oom(d);
    }
    *ret = view;
    return AL_OK;
}

static enum al_code dec_error(struct dec *d, const struct json_node *n, unsigned level,
                              JSValue *ret)
{
    static const char *const fields[] = { "$type", "name", "message", "cause", "errors" };
    const struct json_node *f[5];
    JSContext *ctx = d->ctx;
    JSValue err = JS_UNDEFINED;
    enum al_code rc;

    rc = tag_fields(d, n, "error", fields, 5, 0x7, f);
    if (rc == AL_OK) {
        rc = dec_level(d, n, level);
    }
    if (rc != AL_OK) {
        return rc;
    }
    if (f[1]->type != JSON_STRING || f[2]->type != JSON_STRING) {
        return dfail(d, n, "an error tag needs string name and message");
    }
    int kind = 0;
    for (int i = 0; i < N_ERRORS; i++) {
        if (strlen(error_names[i]) == f[1]->str_len &&
            memcmp(error_names[i], f[1]->str, f[1]->str_len) == 0 &&
            JS_IsFunction(ctx, d->c->v[CV_ERROR + i])) {
            kind = i;
            break;
        }
    }
    JSValue msg = JS_NewStringLen(ctx, f[2]->str, f[2]->str_len);
    if (JS_IsException(msg)) {
        return dec_oom(d);
    }
    if (kind == ERR_AGGREGATE) {
        JSValue empty = JS_NewArray(ctx);
        JSValue args[2] = { empty, msg };
        err = JS_CallConstructor(ctx, d->c->v[CV_ERROR + kind], 2, args);
        JS_FreeValue(ctx, empty);
    } else {
        err = JS_CallConstructor(ctx, d->c->v[CV_ERROR + kind], 1, &msg);
    }
    JS_FreeValue(ctx, msg);
    if (JS_IsException(err)) {
        return dec_oom(d);
    }
    if (kind == 0 && !(f[1]->str_len == 5 && memcmp(f[1]->str, "Error", 5) == 0)) {
        JSValue name = JS_NewStringLen(ctx, f[1]->str, f[1]->str_len);
        if (JS_IsException(name) ||
            JS_DefinePropertyValue(ctx, err, d->c->atoms[CA_NAME], name,
                                   JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
            JS_FreeValue(ctx, err);
            return dec_oom(d);
        }
    }
    rc = remember(d, n, err);
    static const enum cache_atom extra[] = { CA_CAUSE, CA_ERRORS };
    for (int i = 0; i < 2 && rc == AL_OK; i++) {
        JSValue v;
        if (!f[3 + i]) {
            continue;
        }
        rc = dec_value(d, f[3 + i], level, &v);
        if (rc == AL_OK && JS_DefinePropertyValue(ctx, err, d->c->atoms[extra[i]], v,
                                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
            rc = dec_oom(d);
        }
    }
    if (rc != AL_OK) {
        JS_FreeValue(ctx, err);
        return rc;
    }
    *ret = err;
    return AL_OK;
}

static enum al_code dec_collection(struct dec *d, const struct json_node *n, int is_map,
                                   unsigned level, JSValue *ret)
{
    static const char *const map_fields[] = { "$type", "entries" };
    static const char *const set_fields[] = { "$type", "values" };
    const char *tag = is_map ? "map" : "set";
    const struct json_node *f[2];
    JSContext *ctx = d->ctx;
    enum al_code rc;

    rc = tag_fields(d, n, tag, is_map ? map_fields : set_fields, 2, 0x3, f);
    if (rc == AL_OK) {
        rc = dec_level(d, n, level);
    }
    if (rc != AL_OK) {
        return rc;
    }
    if (f[1]->type != JSON_ARRAY) {
        return dfail(d, f[1], "%s needs an array", tag);
    }
    JSValueConst ctor = d->c->v[is_map ? CV_MAP : CV_SET];
    if (!JS_IsFunction(ctx, ctor)) {
        return dfail(d, n, "%s is not available", tag);
    }
    JSValue coll = JS_CallConstructor(ctx, ctor, 0, NULL);
    if (JS_IsException(coll)) {
        return dec_oom(d);
    }
    rc = remember(d, n, coll);
    for (const struct json_node *m = f[1]->child; m && rc == AL_OK; m = m->next) {
        JSValue args[2] = { JS_UNDEFINED, JS_UNDEFINED };
        if (is_map) {
            if (m->type != JSON_ARRAY || m->count != 2) {
                rc = dfail(d, m, "a map entry must be a [key, value] array");
                break;
            }
            rc = dec_value(d, m->child, level, &args[0]);
            if (rc == AL_OK) {
                rc = dec_value(d, m->child->next, level, &args[1]);
            }
        } else {
            rc = dec_value(d, m, level, &args[0]);
        }
        if (rc == AL_OK) {
            JSValue r = JS_Call(ctx, d->c->v[is_map ? CV_MAP_SET : CV_SET_ADD], coll,
                                is_map ? 2 : 1, args);
            if (JS_IsException(r)) {
                rc = dec_oom(d);
            }
            JS_FreeValue(ctx, r);
        }
        JS_FreeValue(ctx, args[0]);
        JS_FreeValue(ctx, args[1]);
    }
    if (rc != AL_OK) {
        JS_FreeValue(ctx, coll);
        return rc;
    }
    *ret = coll;
    return AL_OK;
}

static enum al_code dec_sparse(struct dec *d, const struct json_node *n, unsigned level,
                               JSValue *ret)
{
    static const char *const fields[] = { "$type", "length", "items" };
    const struct json_node *f[3];
    JSContext *ctx = d->ctx;
    double len;
    enum al_code rc;

    rc = tag_fields(d, n, "array", fields, 3, 0x7, f);
    if (rc == AL_OK) {
        rc = dec_level(d, n, level);
    }
    if (rc != AL_OK) {
        return rc;
    }
    if (!get_uint(f[1], 4294967295.0, &len) || f[2]->type != JSON_OBJECT) {
        return dfail(d, n, "an array tag needs a length and an items object");
    }
    JSValue arr = JS_NewArray(ctx);
    if (JS_IsException(arr)) {
        return dec_oom(d);
    }
    if (JS_SetProperty(ctx, arr, d->c->atoms[CA_LENGTH], JS_NewFloat64(ctx, len)) < 0) {
        JS_FreeValue(ctx, arr);
        return dec_oom(d);
    }
    rc = remember(d, n, arr);
    for (const struct json_node *m = f[2]->child; m && rc == AL_OK; m = m->next) {
        uint32_t idx;
        JSValue v;
        if (!parse_index(m->key, m->key_len, &idx) || idx >= len) {
            rc = dfail(d, m, "bad item index \"%.20s\" in an array tag", m->key);
            break;
        }
        rc = dec_value(d, m, level, &v);
        if (rc == AL_OK && JS_DefinePropertyValueUint32(ctx, arr, idx, v, JS_PROP_C_W_E) < 0) {
            rc = dec_oom(d);
        }
    }
    if (rc != AL_OK) {
        JS_FreeValue(ctx, arr);
        return rc;
    }
    *ret = arr;
    return AL_OK;
}

static int str_is(const struct json_node *n, const char *s)
{
    size_t len = strlen(s);
    return n && n->type == JSON_STRING && n->str_len == len && memcmp(n->str, s, len) == 0;
}

static enum al_code dec_simple_tag(struct dec *d, const struct json_node *n, const char *tag,
                                   const struct json_node *type, JSValue *ret)
{
    JSContext *ctx = d->ctx;
    const struct json_node *f[3];
    enum al_code rc;

    if (str_is(type, "undefined")) {
        static const char *const fields[] = { "$type" };
        rc = tag_fields(d, n, tag, fields, 1, 1, f);
        if (rc == AL_OK) {
            *ret = JS_UNDEFINED;
        }
        return rc;
    }
    if (str_is(type, "number")) {
        static const char *const fields[] = { "$type", "value" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        if (rc != AL_OK) {
            return rc;
        }
        if (str_is(f[1], "NaN")) {
            *ret = JS_NewFloat64(ctx, NAN);
        } else if (str_is(f[1], "Infinity")) {
            *ret = JS_NewFloat64(ctx, INFINITY);
        } else if (str_is(f[1], "-Infinity")) {
            *ret = JS_NewFloat64(ctx, -INFINITY);
        } else if (str_is(f[1], "-0")) {
            *ret = JS_NewFloat64(ctx, -0.0);
        } else {
            return dfail(d, n, "a number tag holds NaN, Infinity, -Infinity or -0");
        }
        return AL_OK;
    }
    if (str_is(type, "bigint")) {
        static const char *const fields[] = { "$type", "value" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        if (rc != AL_OK) {
            return rc;
        }
        const struct json_node *v = f[1];
        size_t i = 0;
        int ok = v->type == JSON_STRING && v->str_len > 0;
        if (ok && v->str[0] == '-') {
            i = 1;
        }
        ok = ok && i < v->str_len && !(v->str[i] == '0' && v->str_len > i + 1);
        for (; ok && i < v->str_len; i++) {
            ok = v->str[i] >= '0' && v->str[i] <= '9';
        }
        if (!ok) {
            return dfail(d, n, "a bigint tag holds a decimal integer string");
        }
        if (!JS_IsFunction(ctx, d->c->v[CV_BIGINT])) {
            return dfail(d, n, "BigInt is not available");
        }
        JSValue s = JS_NewStringLen(ctx, v->str, v->str_len);
        if (JS_IsException(s)) {
            return dec_oom(d);
        }
        JSValue b = JS_Call(ctx, d->c->v[CV_BIGINT], JS_UNDEFINED, 1, &s);
        JS_FreeValue(ctx, s);
        if (JS_IsException(b)) {
            return dec_oom(d);
        }
        *ret = b;
        return AL_OK;
    }
    if (str_is(type, "date")) {
        static const char *const fields[] = { "$type", "value" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        if (rc != AL_OK) {
            return rc;
        }
        if (f[1]->type != JSON_NULL && f[1]->type != JSON_STRING) {
            return dfail(d, n, "a date tag holds an ISO string or null");
        }
        if (!JS_IsFunction(ctx, d->c->v[CV_DATE])) {
            return dfail(d, n, "Date is not available");
        }
        JSValue arg = f[1]->type == JSON_NULL ? JS_NewFloat64(ctx, NAN)
                                              : JS_NewStringLen(ctx, f[1]->str, f[1]->str_len);
        if (JS_IsException(arg)) {
            return dec_oom(d);
        }
        JSValue date = JS_CallConstructor(ctx, d->c->v[CV_DATE], 1, &arg);
        JS_FreeValue(ctx, arg);
        if (JS_IsException(date)) {
            return dec_oom(d);
        }
        if (f[1]->type == JSON_STRING) {
            double t = NAN;
            JSValue tv = JS_Call(ctx, d->c->v[CV_DATE_GET_TIME], date, 0, NULL);
            if (JS_IsException(tv) || JS_ToFloat64(ctx, &t, tv) < 0) {
                cache_clear_exception(ctx);
            }
            JS_FreeValue(ctx, tv);
            if (isnan(t)) {
                JS_FreeValue(ctx, date);
                return dfail(d, f[1], "bad date string");
            }
        }
        *ret = date;
        return AL_OK;
    }
    if (str_is(type, "regexp")) {
        static const char *const fields[] = { "$type", "source", "flags" };
        rc = tag_fields(d, n, tag, fields, 3, 7, f);
        if (rc != AL_OK) {
            return rc;
        }
        if (f[1]->type != JSON_STRING || f[2]->type != JSON_STRING) {
            return dfail(d, n, "a regexp tag needs string source and flags");
        }
        if (!JS_IsFunction(ctx, d->c->v[CV_REGEXP])) {
            return dfail(d, n, "RegExp is not available");
        }
        JSValue args[2] = { JS_NewStringLen(ctx, f[1]->str, f[1]->str_len),
                            JS_NewStringLen(ctx, f[2]->str, f[2]->str_len) };
        JSValue re = JS_IsException(args[0]) || JS_IsException(args[1])
                             ? JS_EXCEPTION
                             : JS_CallConstructor(ctx, d->c->v[CV_REGEXP], 2, args);
        JS_FreeValue(ctx, args[0]);
        JS_FreeValue(ctx, args[1]);
        if (JS_IsException(re)) {
            cache_clear_exception(ctx);
            return dfail(d, n, "bad regexp");
        }
        *ret = re;
        return AL_OK;
    }
    if (str_is(type, "arraybuffer")) {
        static const char *const fields[] = { "$type", "base64" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        if (rc != AL_OK) {
            return rc;
        }
        return dec_array_buffer(d, n, f[1], ret);
    }
    return dfail(d, n, "unknown tag \"%.40s\"", tag);
}

static enum al_code dec_tag(struct dec *d, const struct json_node *n, const struct json_node *type,
                            unsigned level, JSValue *ret)
{
    const struct json_node *f[2];
    enum al_code rc;

    if (type->type != JSON_STRING) {
        return dfail(d, type, "\"$type\" must be a string");
    }
    const char *tag = type->str;
    if (str_is(type, "ref")) {
        static const char *const fields[] = { "$type", "path" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        return rc == AL_OK ? dec_ref(d, n, f[1], ret) : rc;
    }
    if (str_is(type, "object")) {
        static const char *const fields[] = { "$type", "value" };
        rc = tag_fields(d, n, tag, fields, 2, 3, f);
        if (rc != AL_OK) {
            return rc;
        }
        if (f[1]->type != JSON_OBJECT) {
            return dfail(d, f[1], "an object tag's value must be an object");
        }
        return dec_plain(d, f[1], n, level + 1, ret);
    }
    if (str_is(type, "array")) {
        return dec_sparse(d, n, level + 1, ret);
    }
    if (str_is(type, "map") || str_is(type, "set")) {
        return dec_collection(d, n, str_is(type, "map"), level + 1, ret);
    }
    if (str_is(type, "error")) {
        return dec_error(d, n, level + 1, ret);
    }
    if (str_is(type, "DataView")) {
        rc = dec_view(d, n, -1, level, ret);
    } else {
        int t = -1;
        for (int i = 0; i < N_TYPED; i++) {
            if (str_is(type, typed_kinds[i].name)) {
                t = i;
            }
        }
        rc = t >= 0 ? dec_view(d, n, t, level, ret) : dec_simple_tag(d, n, tag, type, ret);
    }
    if (rc == AL_OK && JS_IsObject(*ret)) {
        rc = remember(d, n, *ret);
        if (rc != AL_OK) {
            JS_FreeValue(d->ctx, *ret);
        }
    }
    return rc;
}

/* `level` counts the containers around n. */
static enum al_code dec_value(struct dec *d, const struct json_node *n, unsigned level,
                              JSValue *ret)
{
    JSContext *ctx = d->ctx;
    switch (n->type) {
    case JSON_NULL:
        *ret = JS_NULL;
        return AL_OK;
    case JSON_FALSE:
        *ret = JS_FALSE;
        return AL_OK;
    case JSON_TRUE:
        *ret = JS_TRUE;
        return AL_OK;
    case JSON_NUMBER:
        *ret = JS_NewFloat64(ctx, n->num);
        return AL_OK;
    case JSON_STRING:
        *ret = JS_NewStringLen(ctx, n->str, n->str_len);
        return JS_IsException(*ret) ? dec_oom(d) : AL_OK;
    case JSON_ARRAY:
        return dec_array(d, n, level + 1, ret);
    case JSON_OBJECT:
        for (const struct json_node *m = n->child; m; m = m->next) {
            if (is_key(m, "$type")) {
                return dec_tag(d, n, m, level, ret);
            }
        }
        return dec_plain(d, n, n, level + 1, ret);
    }
    return dfail(d, n, "bad node");
}

/* 1 when `text` is plain JSON for the decoder's purpose, meaning exactly what JSON.parse makes
 * of it, so QuickJS's own parser can build it in one pass instead of the node tree plus a walk
 * (which touches about twice the memory). json_check then holds it to the grammar and the depth
 * limit. Refused here, for the full decoder:
 * - "$type" anywhere (even inside a string: that only costs the fast path), and any \u escape
 *   of an ASCII character, which could spell "$type" in a key;
 * - a run of 19 or more digits: QuickJS's parser truncates long integers instead of rounding
 *   them correctly (its js_strtod keeps about 19 digits). */
static int is_plain_json(const char *text, size_t len)
{
    unsigned digits = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') {
                if (i + 4 < len && text[i + 1] == 'u' && text[i + 2] == '0' && text[i + 3] == '0' &&
                    text[i + 4] >= '0' && text[i + 4] <= '7') {
                    return 0;
                }
                i++;
            } else if (c == '"') {
                in_string = 0;
            } else if (c == '$' && len - i >= 5 && memcmp(text + i, "$type", 5) == 0) {
                return 0;
            }
            continue;
        }
        if (c >= '0' && c <= '9') {
            if (++digits >= 19) {
                return 0;
            }
            continue;
        }
        digits = 0;
        in_string = c == '"';
    }
    return 1;
}

/* Plain JSON that json_check passed, through JSON.parse (see is_plain_json; QuickJS's parser
 * alone is laxer than RFC 8259, so it never sees text the strict parser refuses). AL_OK, or
 * anything else to take the full decoder, which then reports what went wrong. */
static enum al_code decode_plain(struct value_cache *cache, const char *text, size_t len,
                                 JSValue *ret_value)
{
    char *copy = malloc(len + 1); /* QuickJS's parser reads up to a terminating NUL */
    if (!copy) {
        return AL_SERIALIZATION_ERROR; /* the full decoder needs less at once */
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    JSValue v = JS_ParseJSON(cache->ctx, copy, len, "<host>");
    free(copy);
    if (JS_IsException(v)) {
        /* After json_check, the parser fails only for want of memory or stack. Out of
         * memory, the full decoder would only fail again, with the memory left for unwinding:
         * say so now (QuickJS throws "out of memory", or nothing when even that failed). */
        JSValue e = JS_GetException(cache->ctx);
        int oom = !JS_IsError(cache->ctx, e);
        if (!oom) {
            JSValue m = JS_GetPropertyStr(cache->ctx, e, "message");
            const char *msg = JS_ToCString(cache->ctx, m);
            oom = !msg || strcmp(msg, "out of memory") == 0;
            JS_FreeCString(cache->ctx, msg);
            JS_FreeValue(cache->ctx, m);
        }
        JS_FreeValue(cache->ctx, e);
        JSValue again = JS_GetException(cache->ctx); /* anything the message read threw */
        JS_FreeValue(cache->ctx, again);
        return oom ? AL_INTERNAL_ERROR : AL_SERIALIZATION_ERROR;
    }
    *ret_value = v;
    return AL_OK;
}

enum al_code value_decode_cached(struct value_cache *cache, const char *text, size_t len,
                                 const struct value_limits *limits, JSValue *ret_value,
                                 struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct dec d;
    enum al_code rc;
    JSValue v = JS_UNDEFINED;

    if (!cache || !limits || !ret_value || (!text && len)) {
        return error_set(reterr, AL_CONFIG_ERROR, "value_decode: NULL argument");
    }
    if (len > 0 && is_plain_json(text, len) &&
        json_check(text, len, limits->max_depth, NULL) == AL_OK) {
        rc = decode_plain(cache, text, len, ret_value);
        if (rc == AL_INTERNAL_ERROR) {
            return error_set(reterr, AL_INTERNAL_ERROR, "out of memory decoding a value");
        }
        if (rc == AL_OK) {
            return AL_OK;
        }
    }
    memset(&d, 0, sizeof d);
    /* Tags nest at most 3 JSON levels per container level, plus 2 for a leaf tag. */
    unsigned json_depth =
            limits->max_depth > (UINT32_MAX - 2) / 3 ? UINT32_MAX : limits->max_depth * 3 + 2;
    rc = json_parse(text ? text : "", len, json_depth, &doc, reterr);
    if (rc != AL_OK) {
        return rc;
    }
    d.ctx = cache->ctx;
    d.c = cache;
    d.text = text;
    d.root = json_root(doc);
    d.max_depth = limits->max_depth;
    d.scan_budget = len * 16 + 65536;
    d.err = reterr;
    rc = dec_value(&d, d.root, 0, &v);
    for (size_t i = 0; i < d.n_vals; i++) {
        JS_FreeValue(d.ctx, d.vals[i]);
    }
    free(d.vals);
    free(d.idx);
    ptrmap_done(&d.built);
    ptrmap_done(&d.arr_index);
    json_doc_free(doc);
    if (rc == AL_OK) {
        *ret_value = v;
    }
    return rc;
}

enum al_code value_decode(JSContext *ctx, const char *text, size_t len,
                          const struct value_limits *limits, JSValue *ret_value,
                          struct al_error *reterr)
{
    struct value_cache *cache = NULL;
    enum al_code rc = value_cache_new(ctx, &cache, reterr);
    if (rc == AL_OK) {
        rc = value_decode_cached(cache, text, len, limits, ret_value, reterr);
    }
    value_cache_free(cache);
    return rc;
}
