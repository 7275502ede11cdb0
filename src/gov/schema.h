/*
 * schema.h - the JSON Schema subset templates use for their input. airlockd compiles a template
 * version's input_schema once, when the version is created (refusing what it cannot honour), and
 * validates each run's input against it before anything executes; a failure becomes HTTP 422
 * INPUT_INVALID with the message below, which names the path and the rule.
 *
 * Supported (docs/schema.md has the reference):
 *   type                 a name or a non-empty array of unique names: null, boolean, object,
 *                        array, number, integer, string ("integer": a finite number with zero
 *                        fractional part, so 1.0 is an integer)
 *   properties           object of schemas; required (array of unique strings);
 *   additionalProperties boolean or schema
 *   items                one schema for every element (the tuple form is refused)
 *   enum, const          JSON equality: numbers by value (1 == 1.0, as doubles, so integers
 *                        beyond 2^53 may compare equal), objects regardless of member order,
 *                        arrays element by element
 *   minimum, maximum, exclusiveMinimum, exclusiveMaximum   numbers (the draft 6+ form)
 *   minLength, maxLength counted in Unicode code points, not bytes
 *   pattern              POSIX ERE (regcomp REG_EXTENDED|REG_NOSUB, "C" locale bytes), NOT
 *                        ECMA-262: no \d, \w, lookaround or lazy quantifiers. Unanchored, as in
 *                        JSON Schema. At most SCHEMA_PATTERN_MAX bytes; backreferences and
 *                        repetition counts expanding beyond SCHEMA_PATTERN_WEIGHT_MAX are
 *                        refused (both make glibc's matcher or compiler blow up). A string
 *                        holding U+0000 never matches a pattern.
 *   minItems, maxItems   non-negative integers
 *   boolean schemas      true accepts anything, false nothing
 * Accepted and ignored: $schema, title, description, $comment (strings), examples (array),
 * default (anything). Every other keyword is refused at compile time.
 *
 * Bounds: schema text at most SCHEMA_TEXT_MAX bytes, nested at most SCHEMA_DEPTH_MAX subschemas
 * (and SCHEMA_JSON_DEPTH JSON levels); instance text parsed with at most SCHEMA_INSTANCE_DEPTH
 * levels. Validation recurses only as deep as the schema, enum/const comparison only as deep as
 * the schema's value, so no walk is deeper than those bounds.
 *
 * Thread-safety: a compiled schema is immutable; any number of threads may validate against it
 * at once (regexec is thread-safe). Compile and free are not concurrent with use.
 */
#ifndef AIRLOCK_SCHEMA_H
#define AIRLOCK_SCHEMA_H

#include <stddef.h>

#include "airlock.h"

#include "json.h"

#define SCHEMA_TEXT_MAX           ((size_t)1 << 20) /* bytes of schema text */
#define SCHEMA_DEPTH_MAX          32u               /* subschemas inside subschemas */
#define SCHEMA_JSON_DEPTH         128u              /* JSON nesting of the schema text */
#define SCHEMA_INSTANCE_DEPTH     512u              /* JSON nesting of a validated text */
#define SCHEMA_PATTERN_MAX        256u              /* bytes of one pattern */
#define SCHEMA_PATTERN_WEIGHT_MAX 4096u             /* atoms after expanding {n,m} counts */

struct schema;

/* Compiles `len` bytes of schema text (copied; the text need not outlive the call).
 * AL_OK and *ret_schema (free with schema_free), or:
 *   AL_CONFIG_ERROR   not JSON, too large or too deep, a non-schema value, an unsupported
 *                     keyword or a keyword whose value has the wrong type, an invalid or
 *                     refused pattern. The message names the keyword and where it is, as a
 *                     JSON Pointer into the schema ("(root)" for the top):
 *                       "unsupported keyword 'oneOf' at /properties/amount"
 *                       "keyword 'minimum' at /properties/amount must be a number"
 *   AL_INTERNAL_ERROR out of memory.
 * NULL text with len 0 is "not JSON"; NULL ret_schema is AL_CONFIG_ERROR. */
AL_NODISCARD enum al_code schema_compile(const char *text, size_t len, struct schema **ret_schema,
                                         struct al_error *reterr);

/* Validates `len` bytes of JSON text against the schema. AL_OK, or:
 *   AL_CONFIG_ERROR       the value breaks a rule. The message is "<path>: <rule>", path a
 *                         JSON Pointer into the value ("(root)" for the top), for the first
 *                         failing rule: the value's own rules in the order type, const, enum,
 *                         bounds, pattern, items count; then an object's required members (in
 *                         the order of `required`), then its members and an array's elements in
 *                         document order, depth first. E.g.
 *                           "/items/2/amount: must be >= 0"
 *                           "/customer/email: is required"
 *                           "/count: must be integer"
 *                           "/code: must match pattern '^[A-Z]+$'"
 *                           "/extra: is not allowed (additionalProperties false)"
 *   AL_SERIALIZATION_ERROR the text is not JSON (or deeper than SCHEMA_INSTANCE_DEPTH);
 *   AL_INTERNAL_ERROR     out of memory.
 * The message is cut to fit struct al_error (long paths lose their middle). */
AL_NODISCARD enum al_code schema_validate(const struct schema *schema, const char *text, size_t len,
                                          struct al_error *reterr);

/* The same over a parsed value (borrowed; only read). Never AL_SERIALIZATION_ERROR. */
AL_NODISCARD enum al_code schema_validate_node(const struct schema *schema,
                                               const struct json_node *value,
                                               struct al_error *reterr);

/* JSON equality of two values (as enum and const use it): 1 if equal, else 0. Recursion stops
 * at the shallower of the two, and at SCHEMA_INSTANCE_DEPTH (deeper counts as unequal). */
int schema_json_equal(const struct json_node *a, const struct json_node *b);

/* NULL-safe. */
void schema_free(struct schema *schema);

#endif
