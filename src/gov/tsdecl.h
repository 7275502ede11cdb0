/*
 * tsdecl.h - TypeScript declarations of a template version's host functions and of its input,
 * written for a model's prompt: what a run will have, typed from the connector functions'
 * args_schema / result_schema and the version's input_schema (the JSON Schema subset of
 * docs/schema.md), `unknown` where there is no schema.
 */
#ifndef AIRLOCK_TSDECL_H
#define AIRLOCK_TSDECL_H

#include <stddef.h>

#include "buf.h"
#include "json.h"

struct tsdecl_fn {
    const char *name;               /* "group.fn" */
    const char *description;        /* NULL: none */
    const struct json_node *args;   /* the schema of the arguments array; NULL: none */
    const struct json_node *result; /* NULL: none */
    int sensitive;                  /* each call waits for a person */
};

/* The TypeScript type of one schema (NULL: unknown), on one line or, for objects, indented by
 * `indent` levels. */
enum buf_status tsdecl_type(struct buf *b, const struct json_node *schema, int indent);

/* `declare const group: { fn(...): Promise<...>; ... };` for each group of functions (`fns`
 * sorted by name, so a group's functions are together), the guest's `console`, then
 * `declare const input: ...;`.
 * `title` goes into the first comment line. */
enum buf_status tsdecl_write(struct buf *b, const char *title, const struct tsdecl_fn *fns,
                             size_t n, const struct json_node *input_schema);

#endif
