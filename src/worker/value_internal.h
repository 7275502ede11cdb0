/*
 * value_internal.h - what the files of the value codec share, and nothing else includes.
 *
 * The codec (value.h) is four files: value_cache.c captures the intrinsics and checks the
 * engine's class ids, value_encode.c writes boundary JSON from QuickJS values, value_decode.c
 * builds QuickJS values from boundary JSON, and value_plain.c is the decoder's fast path for
 * plain JSON. This header holds the engine class ids they all classify by, the tables of
 * typed-array kinds and error names, the cache's layout, and the small containers both walks use
 * (a pointer map, growable arrays). Those containers are static inline on purpose: they run
 * once per object in the encoder and the decoder, and each walk must keep them inlined as when
 * the codec was one file.
 */
#ifndef AIRLOCK_VALUE_INTERNAL_H
#define AIRLOCK_VALUE_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "quickjs.h"
#include "value.h"

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

/* The typed-array constructors in QuickJS's class-id order (QJS_CLASS_TYPED_FIRST + index):
 * name, bytes per element. One list makes the cache's rows, typed_kinds and the indices. */
#define VALUE_TYPED_KINDS(X) \
    X(Uint8ClampedArray, 1)  \
    X(Int8Array, 1)          \
    X(Uint8Array, 1)         \
    X(Int16Array, 2)         \
    X(Uint16Array, 2)        \
    X(Int32Array, 4)         \
    X(Uint32Array, 4)        \
    X(BigInt64Array, 8)      \
    X(BigUint64Array, 8)     \
    X(Float32Array, 4)       \
    X(Float64Array, 8)

/* The error constructors an error tag may name; index 0, Error, is the fallback. */
#define VALUE_ERROR_KINDS(X) \
    X(Error)                 \
    X(EvalError)             \
    X(RangeError)            \
    X(ReferenceError)        \
    X(SyntaxError)           \
    X(TypeError)             \
    X(URIError)              \
    X(AggregateError)        \
    X(InternalError)

enum typed_index {
#define TYPED_INDEX(name, elem) TYPED_##name,
    VALUE_TYPED_KINDS(TYPED_INDEX)
#undef TYPED_INDEX
            N_TYPED
};

enum error_index {
#define ERROR_INDEX(name) ERR_##name,
    VALUE_ERROR_KINDS(ERROR_INDEX)
#undef ERROR_INDEX
            N_ERRORS
};
#define ERR_AGGREGATE ERR_AggregateError

struct typed_kind {
    const char *name;
    unsigned elem; /* bytes per element */
};

/* static in each file that uses them, so lookups stay constant-folded as in one file */
static const struct typed_kind typed_kinds[N_TYPED] = {
#define TYPED_KIND(name, elem) { #name, elem },
    VALUE_TYPED_KINDS(TYPED_KIND)
#undef TYPED_KIND
};

static const char *const error_names[N_ERRORS] = {
#define ERROR_NAME(name) #name,
    VALUE_ERROR_KINDS(ERROR_NAME)
#undef ERROR_NAME
};

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

/* Filled by value_cache_new (value_cache.c), read by the encoder and the decoder. */
struct value_cache {
    JSContext *ctx;
    JSValue v[CV_COUNT]; /* owned; JS_UNDEFINED when the context lacks the intrinsic */
    JSAtom atoms[CA_COUNT];
};

/*
 * The fast path (value_plain.c): builds `text` with JSON.parse when it is plain JSON within
 * max_depth. AL_OK with *ret_value (owned) set; AL_INTERNAL_ERROR when out of memory (the full
 * decoder would only fail again); anything else declines, and the caller runs the full decoder,
 * which reports what is wrong with the text.
 */
enum al_code value_plain_decode(struct value_cache *cache, const char *text, size_t len,
                                unsigned max_depth, JSValue *ret_value);

/* Drops the pending exception, if any. */
static inline void cache_clear_exception(JSContext *ctx)
{
    JS_FreeValue(ctx, JS_GetException(ctx));
}

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

static inline size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static inline int ptrmap_get(const struct ptrmap *m, const void *key, uint32_t *ret_val)
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

static inline int ptrmap_put(struct ptrmap *m, const void *key, uint32_t val)
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

static inline void ptrmap_done(struct ptrmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

/* Grows *arr (elements of `size` bytes) to hold at least `need`. */
static inline int grow(void **arr, size_t *cap, size_t need, size_t size)
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

/* Parses an array-index key ("0", "17"; canonical, below 2^32 - 1). */
static inline int parse_index(const char *s, size_t n, uint32_t *ret)
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

#endif
