/*
 * value_encode.c - QuickJS value -> boundary JSON (docs/values.md), the encoder of value.h.
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
 * Guest code may run while encoding (getters, proxy traps); its exceptions are left pending
 * and reported as AL_USER_ERROR. The output never passes the byte limit, nesting never passes
 * the depth limit, and nothing here may crash or leak on hostile values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "value.h"
#include "value_internal.h"

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
    struct buf piece;
    buf_init(&pb, 200);
    buf_init(&piece, 200);
    buf_append_str(&pb, e->root_name);
    int cut = 0;
    for (size_t i = 0; i < e->depth && !cut; i++) {
        const struct seg *s = &e->stack[i];
        buf_reset(&piece);
        switch (s->kind) {
        case SEG_KEY:
            render_seg_key(e, &piece, s->atom);
            break;
        case SEG_INDEX:
        case SEG_ITEM:
            buf_printf(&piece, "[%u]", (unsigned)s->index);
            break;
        case SEG_FIELD:
            if (!s->hidden) {
                buf_printf(&piece, ".%s", s->field);
            }
            break;
        }
        /* the path as far as whole segments fit (a failed append would empty pb) */
        cut = buf_failed(&piece) || piece.len > pb.max - pb.len;
        if (!cut && piece.len) {
            buf_append(&pb, piece.data, piece.len);
        }
    }
    snprintf(dst, cap, "%s%s", pb.data ? pb.data : e->root_name, cut || pb.len >= 190 ? "..." : "");
    buf_done(&piece);
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
