/*
 * tsdecl.c - TypeScript declarations from the JSON Schema subset of docs/schema.md. The subset
 * has no $ref, no combinators and only the one-schema form of items, so every schema maps to
 * one type: const and enum to literals (JSON text is TypeScript literal syntax), `type` to a
 * union of primitives, arrays (`T[]`) and object literals (`required` members plain, the others
 * optional, additionalProperties as an index signature). `true` is unknown, `false` never.
 * Descriptions become JSDoc comments. A buffer that fails drops its data (buf.h): callers check
 * once at the end.
 */
#include "tsdecl.h"

#include <string.h>

#define TSDECL_MAX_PARAMS 16 /* past this many, `...args: T[]` */

static void tsdecl_indent(struct buf *b, int indent)
{
    for (int i = 0; i < indent; i++) {
        buf_append_str(b, "  ");
    }
}

/* A JSDoc comment of `text` at `indent`; a "*\/" inside cannot close it early. */
static void tsdecl_doc(struct buf *b, const char *text, const char *extra, int indent)
{
    if ((!text || !text[0]) && !extra) {
        return;
    }
    tsdecl_indent(b, indent);
    buf_append_str(b, "/** ");
    for (const char *p = text ? text : ""; *p; p++) {
        if (p[0] == '*' && p[1] == '/') {
            buf_append_str(b, "*\\/");
            p++;
        } else if (*p == '\n') {
            buf_append_str(b, "\n");
            tsdecl_indent(b, indent);
            buf_append_str(b, " * ");
        } else if (*p != '\r') {
            buf_append_byte(b, *p);
        }
    }
    if (extra) {
        buf_append_str(b, text && text[0] ? " " : "");
        buf_append_str(b, extra);
    }
    buf_append_str(b, " */\n");
}

static const char *tsdecl_string(const struct json_node *obj, const char *key)
{
    const struct json_node *n = obj ? json_get(obj, key) : NULL;
    return n && n->type == JSON_STRING ? n->str : NULL;
}

static int tsdecl_is_identifier(const char *s)
{
    if (!s[0] || strchr("0123456789", s[0])) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!(*p == '_' || *p == '$' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9'))) {
            return 0;
        }
    }
    return 1;
}

static int tsdecl_required(const struct json_node *schema, const char *name)
{
    const struct json_node *req = json_get(schema, "required");
    for (const struct json_node *r = req && req->type == JSON_ARRAY ? req->child : NULL; r;
         r = r->next) {
        if (r->type == JSON_STRING && strcmp(r->str, name) == 0) {
            return 1;
        }
    }
    return 0;
}

static void tsdecl_object(struct buf *b, const struct json_node *schema, int indent)
{
    const struct json_node *props = json_get(schema, "properties");
    const struct json_node *extra = json_get(schema, "additionalProperties");
    const struct json_node *first = props && props->type == JSON_OBJECT ? props->child : NULL;
    int open = !extra || extra->type != JSON_FALSE; /* absent: any member, as JSON Schema says */
    if (!first && !open) {
        buf_append_str(b, "Record<string, never>");
        return;
    }
    buf_append_str(b, "{\n");
    for (const struct json_node *p = first; p; p = p->next) {
        tsdecl_doc(b, p->type == JSON_OBJECT ? tsdecl_string(p, "description") : NULL, NULL,
                   indent + 1);
        tsdecl_indent(b, indent + 1);
        if (tsdecl_is_identifier(p->key)) {
            buf_append_str(b, p->key);
        } else {
            json_write_string(b, p->key, p->key_len);
        }
        buf_append_str(b, tsdecl_required(schema, p->key) ? ": " : "?: ");
        tsdecl_type(b, p, indent + 1);
        buf_append_str(b, ";\n");
    }
    if (open) {
        tsdecl_indent(b, indent + 1);
        buf_append_str(b, "[key: string]: ");
        tsdecl_type(b, extra && extra->type != JSON_TRUE ? extra : NULL, indent + 1);
        buf_append_str(b, ";\n");
    }
    tsdecl_indent(b, indent);
    buf_append_str(b, "}");
}

/* One member of a `type` union. */
static void tsdecl_named(struct buf *b, const char *type, const struct json_node *schema,
                         int indent)
{
    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        buf_append_str(b, "number");
    } else if (strcmp(type, "array") == 0) {
        const struct json_node *items = json_get(schema, "items");
        const struct json_node *prefix = json_get(schema, "prefixItems");
        if (prefix && prefix->type == JSON_ARRAY && prefix->child) {
            /* a tuple: the positions, then the rest unless items is false */
            buf_append_str(b, "[");
            for (const struct json_node *p = prefix->child; p; p = p->next) {
                buf_append_str(b, p == prefix->child ? "" : ", ");
                tsdecl_type(b, p, indent);
            }
            if (!items || items->type != JSON_FALSE) {
                buf_append_str(b, ", ...(");
                tsdecl_type(b, items, indent);
                buf_append_str(b, ")[]");
            }
            buf_append_str(b, "]");
            return;
        }
        buf_append_str(b, "(");
        tsdecl_type(b, items, indent);
        buf_append_str(b, ")[]");
    } else if (strcmp(type, "object") == 0) {
        tsdecl_object(b, schema, indent);
    } else {
        buf_append_str(b, type); /* null, boolean, string */
    }
}

enum buf_status tsdecl_type(struct buf *b, const struct json_node *schema, int indent)
{
    if (!schema || schema->type == JSON_TRUE) {
        buf_append_str(b, "unknown");
    } else if (schema->type == JSON_FALSE) {
        buf_append_str(b, "never");
    } else if (schema->type != JSON_OBJECT) {
        buf_append_str(b, "unknown");
    } else if (json_get(schema, "const")) {
        const struct json_node *c = json_get(schema, "const");
        json_write_compact(b, c->raw, c->raw_len);
    } else if (json_get(schema, "enum") && json_get(schema, "enum")->type == JSON_ARRAY) {
        const struct json_node *e = json_get(schema, "enum");
        for (const struct json_node *v = e->child; v; v = v->next) {
            buf_append_str(b, v == e->child ? "" : " | ");
            json_write_compact(b, v->raw, v->raw_len);
        }
    } else {
        const struct json_node *type = json_get(schema, "type");
        if (type && type->type == JSON_STRING) {
            tsdecl_named(b, type->str, schema, indent);
        } else if (type && type->type == JSON_ARRAY && type->child) {
            for (const struct json_node *t = type->child; t; t = t->next) {
                buf_append_str(b, t == type->child ? "" : " | ");
                tsdecl_named(b, t->type == JSON_STRING ? t->str : "unknown", schema, indent);
            }
        } else if (json_get(schema, "properties") || json_get(schema, "additionalProperties")) {
            tsdecl_object(b, schema, indent);
        } else if (json_get(schema, "items") || json_get(schema, "prefixItems")) {
            tsdecl_named(b, "array", schema, indent);
        } else {
            buf_append_str(b, "unknown");
        }
    }
    return b->data ? BUF_OK : BUF_NO_MEMORY;
}

static int64_t tsdecl_count(const struct json_node *schema, const char *key, int64_t dflt)
{
    const struct json_node *n = schema ? json_get(schema, key) : NULL;
    return n && n->type == JSON_NUMBER && n->num >= 0 && n->num <= 1e6 ? (int64_t)n->num : dflt;
}

static void tsdecl_param(struct buf *b, int64_t i, int64_t min)
{
    buf_printf(b, "%sarg%lld%s: ", i ? ", " : "", (long long)i + 1, i < min ? "" : "?");
}

/* With prefixItems: one parameter per position, then the elements past them as items says
 * (none when it is false or maxItems is reached, `...rest` when unbounded). */
static void tsdecl_prefix_params(struct buf *b, const struct json_node *prefix,
                                 const struct json_node *items, int64_t min, int64_t max,
                                 int indent)
{
    int64_t i = 0;
    for (const struct json_node *p = prefix->child; p && (max < 0 || i < max); p = p->next, i++) {
        tsdecl_param(b, i, min);
        tsdecl_type(b, p, indent);
    }
    if ((items && items->type == JSON_FALSE) || (max >= 0 && i >= max)) {
        return;
    }
    if (max >= 0 && max - i <= TSDECL_MAX_PARAMS) {
        for (; i < max; i++) {
            tsdecl_param(b, i, min);
            tsdecl_type(b, items, indent);
        }
        return;
    }
    buf_append_str(b, i ? ", ...rest: (" : "...rest: (");
    tsdecl_type(b, items, indent);
    buf_append_str(b, ")[]");
}

/* The parameter list from the schema of the arguments array: arg1..argN, the ones past
 * minItems optional, `...args` when maxItems is absent or large; prefixItems types each
 * position. */
static void tsdecl_params(struct buf *b, const struct json_node *args, int indent)
{
    const struct json_node *obj = args && args->type == JSON_OBJECT ? args : NULL;
    const struct json_node *items = obj ? json_get(obj, "items") : NULL;
    const struct json_node *prefix = obj ? json_get(obj, "prefixItems") : NULL;
    int64_t min = tsdecl_count(args, "minItems", 0);
    int64_t max = tsdecl_count(args, "maxItems", -1);
    if (prefix && prefix->type == JSON_ARRAY && prefix->child) {
        tsdecl_prefix_params(b, prefix, items, min, max, indent);
        return;
    }
    if (!items || max < 0 || max > TSDECL_MAX_PARAMS) {
        buf_append_str(b, "...args: (");
        tsdecl_type(b, items, indent);
        buf_append_str(b, ")[]");
        return;
    }
    for (int64_t i = 0; i < max; i++) {
        tsdecl_param(b, i, min);
        tsdecl_type(b, items, indent);
    }
}

/* Whether `name` is in the group of `glen` bytes that `group` starts with ("shop" of
 * "shop.orders"). */
static int tsdecl_in_group(const char *name, const char *group, size_t glen)
{
    return strncmp(name, group, glen) == 0 && name[glen] == '.';
}

enum buf_status tsdecl_write(struct buf *b, const char *title, const struct tsdecl_fn *fns,
                             size_t n, const struct json_node *input_schema)
{
    buf_printf(b, "// %s: the host functions a run has and its input. Every host function\n",
               title);
    buf_append_str(b, "// returns a Promise; types are not checked at run time.\n");
    for (size_t i = 0; i < n; i++) {
        const char *dot = strchr(fns[i].name, '.');
        size_t glen = dot ? (size_t)(dot - fns[i].name) : strlen(fns[i].name);
        if (i == 0 || !tsdecl_in_group(fns[i - 1].name, fns[i].name, glen)) {
            buf_append_str(b, "declare const ");
            buf_append(b, fns[i].name, glen);
            buf_append_str(b, ": {\n");
        }
        tsdecl_doc(b, fns[i].description,
                   fns[i].sensitive ? "Sensitive: each call waits for a person's approval." : NULL,
                   1);
        tsdecl_indent(b, 1);
        buf_append_str(b, dot ? dot + 1 : fns[i].name);
        buf_append_str(b, "(");
        tsdecl_params(b, fns[i].args, 1);
        buf_append_str(b, "): Promise<");
        tsdecl_type(b, fns[i].result, 1);
        buf_append_str(b, ">;\n");
        if (i + 1 == n || !tsdecl_in_group(fns[i + 1].name, fns[i].name, glen)) {
            buf_append_str(b, "};\n");
        }
    }
    buf_append_str(b, "/** What the guest logs goes to the run's console, not to a terminal. */\n"
                      "declare const console: {\n"
                      "  log(...data: unknown[]): void;\n"
                      "  info(...data: unknown[]): void;\n"
                      "  warn(...data: unknown[]): void;\n"
                      "  error(...data: unknown[]): void;\n"
                      "  debug(...data: unknown[]): void;\n"
                      "};\n");
    buf_append_str(b, "/** The run's input, deeply frozen. */\ndeclare const input: ");
    tsdecl_type(b, input_schema, 0);
    buf_append_str(b, ";\n");
    return b->data ? BUF_OK : BUF_NO_MEMORY;
}
