/*
 * json.h - strict JSON (RFC 8259) parser into an arena-allocated node tree, and the writer
 * helpers the boundary format needs. Used by the worker's value decoder, the host library
 * (validating host answers) and the CLI (co-process lines). Input is untrusted: depth and size
 * are bounded, every error has a byte offset, nothing is read past `len`.
 */
#ifndef AIRLOCK_JSON_H
#define AIRLOCK_JSON_H

#include <stddef.h>

#include "airlock.h"

#include "buf.h"

enum json_type {
    JSON_NULL = 0,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
};

struct json_node {
    enum json_type type;
    const char *raw; /* this value's exact text inside the parsed input */
    size_t raw_len;
    const char *str; /* JSON_STRING: unescaped UTF-8, NUL-terminated (may hold NULs) */
    size_t str_len;
    double num;      /* JSON_NUMBER: strtod of raw */
    const char *key; /* member of an object: its unescaped key, NUL-terminated */
    size_t key_len;
    struct json_node *child; /* JSON_ARRAY/JSON_OBJECT: first element/member, in text order */
    struct json_node *next;  /* next sibling */
    size_t count;            /* JSON_ARRAY/JSON_OBJECT: number of children */
};

struct json_doc;

/* Parses `len` bytes. Whitespace around the value is allowed, anything else after it is not.
 * Strings must be valid UTF-8; \u escapes may encode lone surrogates (kept as WTF-8 in str).
 * Nesting deeper than max_depth is an error. AL_SERIALIZATION_ERROR with "offset N: ..." for bad
 * input, AL_INTERNAL_ERROR when out of memory. The doc keeps pointers into `text` (raw): the
 * text must outlive it. */
enum al_code json_parse(const char *text, size_t len, unsigned max_depth, struct json_doc **ret_doc,
                        struct al_error *reterr);
/* What json_parse would say of the text, without building anything: AL_OK, or its error. */
enum al_code json_check(const char *text, size_t len, unsigned max_depth, struct al_error *reterr);
const struct json_node *json_root(const struct json_doc *doc);
void json_doc_free(struct json_doc *doc);
/* The member `key` of an object node (first match), or NULL. */
const struct json_node *json_get(const struct json_node *obj, const char *key);

/* Where `node` first stops being I-JSON (RFC 7493), which is what a request body must be: a
 * string or a member name holding a lone surrogate, a number outside the range of a double
 * (1e999), or a member name twice in one object. 0 when it is I-JSON. Otherwise 1, with the
 * place as a path ("$.input.items[2]", cut to fit) in `path` and what is wrong (static text) in
 * *ret_why; -1 when out of memory. Nesting is bounded by what json_parse accepted. */
int json_ijson_check(const struct json_node *node, char *path, size_t path_size,
                     const char **ret_why);

/* 1 when s[0..len) (a string or member name from json_parse) holds a lone surrogate, which
 * json_parse keeps as 3-byte WTF-8 (ED A0..BF xx; a pair is one 4-byte sequence); else 0. */
int json_has_lone_surrogate(const char *s, size_t len);

/* Appends `s` (len bytes of UTF-8 or WTF-8) as a JSON string literal exactly as
 * JSON.stringify writes it: quotes, \" \\ \b \f \n \r \t, other controls as \u00xx (lowercase
 * hex), lone surrogates as \udxxx; everything else as is. */
enum buf_status json_write_string(struct buf *b, const char *s, size_t len);

/* Appends valid JSON `text` without its insignificant whitespace (one line), everything else
 * byte for byte. On failure the buffer is poisoned (buf.h), as by any failed append. */
enum buf_status json_write_compact(struct buf *b, const char *text, size_t len);

#endif
