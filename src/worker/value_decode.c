/*
 * value_decode.c - boundary JSON -> QuickJS value (docs/values.md), the decoder of value.h.
 *
 * Plain JSON goes to the fast path first (value_plain.c); everything else, and whatever the
 * fast path declines, is parsed with json_parse and walked here. Values are built with
 * define-property semantics (an own "__proto__" is an own key) and with the intrinsics
 * captured in the cache, never with guest visible globals or JS_Eval. The decoder never trusts
 * its input: every tag field is type-checked, references must point at an object already
 * built, resolving them has a budget, and depth is bounded. Nothing here may crash or leak on
 * hostile input.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "value.h"
#include "value_internal.h"

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
    rc = value_plain_decode(cache, text, len, limits->max_depth, ret_value);
    if (rc == AL_INTERNAL_ERROR) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory decoding a value");
    }
    if (rc == AL_OK) {
        return AL_OK;
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
