/*
 * value.h - the boundary format (docs/values.md): QuickJS values <-> boundary JSON text.
 *
 * JSON-compatible data is written byte for byte as JSON.stringify would; undefined, NaN,
 * +-Infinity, -0, BigInt, Date, RegExp, Map, Set, ArrayBuffer, typed arrays, DataView, Error
 * (name, message, cause, AggregateError errors), sparse arrays, repeated and cyclic references
 * travel as tagged objects, with escaping for guest objects that collide with a tag. Functions,
 * symbols, promises, weak collections and class instances are refused with the path of the
 * offending value. The walk is bounded in depth and output size.
 */
#ifndef AIRLOCK_VALUE_H
#define AIRLOCK_VALUE_H

#include <stddef.h>

#include "airlock.h"

#include "buf.h"
#include "quickjs.h"

struct value_limits {
    unsigned max_depth; /* nesting bound for encode and decode */
    size_t max_bytes;   /* encode: output cap */
};

/*
 * Encodes `v` (borrowed) into `out`, appending. Returns AL_OK, or:
 *   AL_SERIALIZATION_ERROR  a value that cannot cross; message "cannot serialize <what> at
 *                           <path>" where path is rooted at `root_name` ("value", "args[1].x")
 *   AL_OUTPUT_LIMIT         the output would pass limits->max_bytes (the caller remaps the code
 *                           when the limit is a bridge limit)
 *   AL_USER_ERROR           a getter or proxy trap threw: the exception is left pending in ctx
 *   AL_INTERNAL_ERROR       out of memory
 * Guest code may run during encoding (getters, proxies). On failure `out` may hold a partial
 * encoding; the caller discards it.
 */
enum al_code value_encode(JSContext *ctx, JSValueConst v, const char *root_name,
                          const struct value_limits *limits, struct buf *out,
                          struct al_error *reterr);

/*
 * Decodes boundary JSON text into a new value (owned by the caller) in *ret_value. Returns AL_OK,
 * AL_SERIALIZATION_ERROR for text that is not valid boundary JSON (bad JSON, unknown tag,
 * malformed tag fields, a reference to nothing), AL_INTERNAL_ERROR when out of memory (an
 * exception may be pending in ctx). Objects are built with define-property semantics: an own
 * "__proto__" key stays an own key and never changes a prototype.
 */
enum al_code value_decode(JSContext *ctx, const char *text, size_t len,
                          const struct value_limits *limits, JSValue *ret_value,
                          struct al_error *reterr);

/*
 * Optional accelerator. A value_cache captures, once, the context's intrinsics the codec needs
 * (Map, Set, Date, RegExp, DataView, typed-array and error constructors, the prototype methods
 * and getters it calls) and checks the engine's internal class ids against real instances.
 * Create it right after the context is set up, before guest code runs, so later guest changes
 * to globals cannot reach the codec; value_encode/value_decode build a temporary one per call.
 * The cache holds references into ctx: value_cache_free() it before JS_FreeContext(ctx).
 * AL_INTERNAL_ERROR when out of memory or when the engine does not match the pinned QuickJS.
 */
struct value_cache;
enum al_code value_cache_new(JSContext *ctx, struct value_cache **ret_cache,
                             struct al_error *reterr);
void value_cache_free(struct value_cache *cache);
/* value_encode / value_decode on the cache's context. */
enum al_code value_encode_cached(struct value_cache *cache, JSValueConst v, const char *root_name,
                                 const struct value_limits *limits, struct buf *out,
                                 struct al_error *reterr);
enum al_code value_decode_cached(struct value_cache *cache, const char *text, size_t len,
                                 const struct value_limits *limits, JSValue *ret_value,
                                 struct al_error *reterr);

#endif
