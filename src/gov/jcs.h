/*
 * jcs.h - RFC 8785 JSON Canonicalization Scheme over the tree of json.h.
 *
 * The canonical form is what the audit log hashes: the same value always gives the same bytes,
 * whoever wrote it and however it was spaced. Members are sorted by the UTF-16 code units of
 * their keys, strings are escaped as JSON.stringify does (the minimum RFC 8785 asks for) and
 * numbers are written as ECMAScript's Number.prototype.toString writes the double they parse to.
 * Input that is not I-JSON (RFC 7493) has no canonical form and is refused: duplicate keys,
 * strings holding a lone surrogate, numbers outside the range of a double.
 */
#ifndef AIRLOCK_JCS_H
#define AIRLOCK_JCS_H

#include <stddef.h>

#include "airlock.h"

#include "buf.h"
#include "json.h"

/* Longest text jcs_number writes, with its NUL ("-1.2345678901234567e-308" is 24 bytes). */
#define JCS_NUMBER_MAX 32

/* Writes `value` as ECMAScript Number::toString does: the shortest digits that read back to the
 * same double (the nearest such when there are several), plain notation for magnitudes in
 * [1e-6, 1e21), otherwise d.ddde+N / d.ddde-N; -0 is "0". Independent of the current locale.
 * AL_CONFIG_ERROR for NaN and infinities, which JSON cannot carry; `out` is then "". */
enum al_code jcs_number(double value, char out[JCS_NUMBER_MAX]);

/* Appends the canonical form of `node` (a tree from json_parse) to `b`. When `omit_key` is not
 * NULL and `node` is an object, its top-level member of that name is left out (the audit hash
 * covers a record without its own `hash`). Nesting is bounded by what json_parse accepted.
 * AL_SERIALIZATION_ERROR when the value is not I-JSON (duplicate key, lone surrogate, number out
 * of range; the message names which), AL_OUTPUT_LIMIT when `b`'s cap is reached,
 * AL_INTERNAL_ERROR when out of memory. On failure `b` may hold part of the output. */
enum al_code jcs_write(struct buf *b, const struct json_node *node, const char *omit_key,
                       struct al_error *reterr);

#endif
