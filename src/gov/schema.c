/*
 * schema.c - compiles the JSON Schema subset of schema.h into a tree of rules, and checks
 * values against it.
 *
 * Compiling keeps a private copy of the text and its json_doc: enum and const values, numeric
 * bounds and required names stay json_nodes of that doc, so messages quote the schema's own
 * text ("must be >= 0", not a reformatted double). Every rule node is on one list, so freeing
 * never recurses. Everything refusable is refused at compile time, never at validation: a
 * template version either means exactly what it says or does not exist.
 *
 * Both walks are bounded: the compiler counts subschema depth, the validator recurses only
 * along the compiled tree, and equality only while both sides are containers. Paths are a
 * chain of stack segments rendered only when something fails, so a passing validation
 * allocates nothing. Patterns are POSIX ERE compiled under the "C" locale; a backreference, or
 * counted repetitions expanding past SCHEMA_PATTERN_WEIGHT_MAX, are refused because glibc's
 * matcher is exponential on the first and its compiler expands the second into memory.
 */
#include "schema.h"

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "utf8.h"

#define T_NULL    (1u << 0)
#define T_BOOLEAN (1u << 1)
#define T_OBJECT  (1u << 2)
#define T_ARRAY   (1u << 3)
#define T_NUMBER  (1u << 4)
#define T_INTEGER (1u << 5)
#define T_STRING  (1u << 6)

static const char *const type_names[] = { "null",   "boolean", "object", "array",
                                          "number", "integer", "string" };
#define TYPE_COUNT (sizeof type_names / sizeof type_names[0])

#define PATH_SEGS_MAX  (SCHEMA_JSON_DEPTH + 8)
#define PATH_TEXT_MAX  160 /* rendered path in a message; longer ones lose their middle */
#define QUOTE_MAX      64  /* bytes of schema text quoted in a message */
#define ADDITIONAL_ANY 0
#define ADDITIONAL_NO  1
#define ADDITIONAL_SUB 2

struct rule;

struct prop {
    const char *key; /* the schema's key, borrowed from the doc */
    size_t key_len;
    struct rule *rule;
};

/* One compiled (sub)schema. Pointers to json_nodes borrow the schema's doc. */
struct rule {
    struct rule *next_alloc; /* every rule of the schema, for freeing */
    int never;               /* the schema false */
    unsigned types;          /* T_* mask; 0: any */
    const struct json_node *const_value;
    const struct json_node *enum_values; /* array */
    const struct json_node *minimum;     /* numbers */
    const struct json_node *maximum;
    const struct json_node *exclusive_minimum;
    const struct json_node *exclusive_maximum;
    size_t min_length; /* code points */
    size_t max_length; /* SIZE_MAX: none */
    size_t min_items;
    size_t max_items; /* SIZE_MAX: none */
    const struct json_node *pattern;
    regex_t re;
    int has_re;
    locale_t c_loc;     /* the schema's "C" locale, for regexec */
    struct prop *props; /* sorted by key bytes */
    size_t prop_count;
    const struct json_node *required; /* array of strings */
    int additional;                   /* ADDITIONAL_* */
    struct rule *additional_rule;
    struct rule *prefix;      /* prefixItems: the first element's rule, chained by next_prefix */
    struct rule *next_prefix; /* the next position's rule of the prefixItems this rule is in */
    struct rule *items;       /* the elements past prefixItems (all of them without it) */
};

struct schema {
    char *text; /* the doc points into it */
    struct json_doc *doc;
    struct rule *root;
    struct rule *rules; /* every rule, newest first */
    locale_t c_loc;     /* "C", made for the first pattern; (locale_t)0 without one */
};

/* One step of a JSON Pointer, on the stack of the walk that made it. */
struct seg {
    const struct seg *up;
    const char *key; /* NULL: an array index */
    size_t key_len;
    size_t index;
};

/* ---------------------------------------------------------------- paths and messages */

/* len, less a last character of s[0..len) that a cut left unfinished: text cut to fit a buffer
 * stays well-formed UTF-8 (a message becomes a guest's TypeError message and audit text). */
static size_t whole_chars(const char *s, size_t len)
{
    size_t lead = len;
    while (lead > 0 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80) {
        lead--;
    }
    unsigned char c = lead > 0 ? (unsigned char)s[lead - 1] : 0;
    size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return lead > 0 && len - (lead - 1) < need ? lead - 1 : len;
}

/* error_set, with the message's end cut between characters. */
static enum al_code message_set(struct al_error *err, const char *a, const char *sep, const char *b)
{
    error_set(err, AL_CONFIG_ERROR, "%s%s%s", a, sep, b);
    if (err) {
        err->message[whole_chars(err->message, strlen(err->message))] = '\0';
    }
    return AL_CONFIG_ERROR;
}

static size_t put_bytes(char *out, size_t cap, size_t at, const char *s, size_t n)
{
    for (size_t i = 0; i < n && at + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[at++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    return at;
}

/* The JSON Pointer of `leaf` ("(root)" for none), with ~ and / escaped, cut in the middle when
 * longer than PATH_TEXT_MAX. */
static void render_path(const struct seg *leaf, char *out, size_t cap)
{
    const struct seg *segs[PATH_SEGS_MAX];
    size_t n = 0;
    size_t skipped = 0;
    for (const struct seg *s = leaf; s; s = s->up) {
        if (n < PATH_SEGS_MAX) {
            segs[n++] = s;
        } else {
            skipped++;
        }
    }
    if (n == 0) {
        snprintf(out, cap, "(root)");
        return;
    }
    char full[1024];
    size_t at = 0;
    if (skipped) {
        at = put_bytes(full, sizeof full, at, "/...", 4);
    }
    for (size_t i = n; i-- > 0;) {
        const struct seg *s = segs[i];
        at = put_bytes(full, sizeof full, at, "/", 1);
        if (!s->key) {
            char num[32];
            int k = snprintf(num, sizeof num, "%zu", s->index);
            at = put_bytes(full, sizeof full, at, num, (size_t)k);
            continue;
        }
        for (size_t j = 0; j < s->key_len; j++) {
            char c = s->key[j];
            if (c == '~') {
                at = put_bytes(full, sizeof full, at, "~0", 2);
            } else if (c == '/') {
                at = put_bytes(full, sizeof full, at, "~1", 2);
            } else {
                at = put_bytes(full, sizeof full, at, &c, 1);
            }
        }
    }
    if (at + 1 >= sizeof full) {
        at = whole_chars(full, at); /* filled up */
    }
    full[at] = '\0';
    if (at <= PATH_TEXT_MAX) {
        snprintf(out, cap, "%s", full);
        return;
    }
    size_t head = utf8_cut(full, PATH_TEXT_MAX / 3);
    size_t tail_at = at - (PATH_TEXT_MAX - PATH_TEXT_MAX / 3 - 3);
    while (tail_at < at && ((unsigned char)full[tail_at] & 0xc0) == 0x80) {
        tail_at++; /* start the tail on a character */
    }
    snprintf(out, cap, "%.*s...%s", (int)head, full, full + tail_at);
}

/* A schema value as one line of JSON (its insignificant whitespace dropped), cut to QUOTE_MAX
 * bytes at a character boundary: what messages quote. */
struct quote {
    char text[QUOTE_MAX + 1];
};

static struct quote quote(const struct json_node *n)
{
    struct quote q;
    struct buf b;
    const char *src = n->raw;
    size_t len = n->raw_len;
    buf_init(&b, n->raw_len + 1);
    if (json_write_compact(&b, n->raw, n->raw_len) == BUF_OK && b.data) {
        src = b.data;
        len = b.len;
    }
    if (len > QUOTE_MAX) {
        len = utf8_cut(src, QUOTE_MAX);
    }
    memcpy(q.text, src, len);
    q.text[len] = '\0';
    buf_done(&b);
    return q;
}

__attribute__((format(printf, 3, 4))) static enum al_code
compile_fail(struct al_error *err, const struct seg *at, const char *fmt, ...)
{
    char what[192];
    char path[PATH_TEXT_MAX + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    what[whole_chars(what, strlen(what))] = '\0';
    render_path(at, path, sizeof path);
    return message_set(err, what, " at ", path);
}

__attribute__((format(printf, 3, 4))) static enum al_code
rule_fail(struct al_error *err, const struct seg *at, const char *fmt, ...)
{
    char rule[192];
    char path[PATH_TEXT_MAX + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof rule, fmt, ap);
    va_end(ap);
    rule[whole_chars(rule, strlen(rule))] = '\0';
    render_path(at, path, sizeof path);
    return message_set(err, path, ": ", rule);
}

static enum al_code no_memory(struct al_error *err)
{
    return error_set(err, AL_INTERNAL_ERROR, "out of memory compiling a schema");
}

/* ---------------------------------------------------------------- compiling */

struct compiler {
    struct schema *schema;
    struct al_error *err;
};

static int key_is(const struct json_node *m, const char *name)
{
    size_t n = strlen(name);
    return m->key_len == n && memcmp(m->key, name, n) == 0;
}

static int is_integer_value(double v)
{
    return isfinite(v) && floor(v) == v;
}

static enum al_code wrong_type(struct compiler *c, const struct json_node *m, const struct seg *at,
                               const char *want)
{
    char path[PATH_TEXT_MAX + 8];
    render_path(at, path, sizeof path);
    return error_set(c->err, AL_CONFIG_ERROR, "keyword '%.*s' at %s must be %s", (int)m->key_len,
                     m->key, path, want);
}

static enum al_code count_value(struct compiler *c, const struct json_node *m, const struct seg *at,
                                size_t *ret)
{
    const struct json_node *v = m;
    if (v->type != JSON_NUMBER || !is_integer_value(v->num) || v->num < 0) {
        return wrong_type(c, m, at, "a non-negative integer");
    }
    *ret = v->num >= 1e15 ? SIZE_MAX - 1 : (size_t)v->num;
    return AL_OK;
}

static int type_index(const struct json_node *v)
{
    if (v->type != JSON_STRING) {
        return -1;
    }
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if (v->str_len == strlen(type_names[i]) && memcmp(v->str, type_names[i], v->str_len) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static enum al_code compile_type(struct compiler *c, const struct json_node *m,
                                 const struct seg *at, unsigned *ret_types)
{
    const char *want = "a type name or a non-empty array of unique type names (null, boolean, "
                       "object, array, number, integer, string)";
    unsigned types = 0;
    if (m->type == JSON_STRING) {
        int i = type_index(m);
        if (i < 0) {
            return wrong_type(c, m, at, want);
        }
        *ret_types = 1u << i;
        return AL_OK;
    }
    if (m->type != JSON_ARRAY || m->count == 0) {
        return wrong_type(c, m, at, want);
    }
    for (const struct json_node *e = m->child; e; e = e->next) {
        int i = type_index(e);
        if (i < 0 || (types & (1u << i))) {
            return wrong_type(c, m, at, want);
        }
        types |= 1u << i;
    }
    *ret_types = types;
    return AL_OK;
}

static int prop_cmp(const void *a, const void *b)
{
    const struct prop *x = a;
    const struct prop *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int r = memcmp(x->key, y->key, n);
    if (r != 0) {
        return r;
    }
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* A crude upper bound of what glibc's regcomp expands the pattern to: counted repetitions
 * multiply the atom (or group) before them. Saturates at SCHEMA_PATTERN_WEIGHT_MAX + 1. */
static size_t weight_mul(size_t a, size_t b)
{
    const size_t cap = SCHEMA_PATTERN_WEIGHT_MAX + 1;
    if (a == 0 || b == 0) {
        return 0;
    }
    if (a >= cap || b >= cap || a * b >= cap) {
        return cap;
    }
    return a * b;
}

static size_t weight_add(size_t a, size_t b)
{
    const size_t cap = SCHEMA_PATTERN_WEIGHT_MAX + 1;
    return a + b >= cap ? cap : a + b;
}

/* 0 and *ret_why when the pattern is refused before regcomp sees it. */
static int pattern_acceptable(const char *p, size_t n, const char **ret_why)
{
    size_t total[SCHEMA_PATTERN_MAX + 2];
    size_t last[SCHEMA_PATTERN_MAX + 2];
    size_t level = 0;
    total[0] = 0;
    last[0] = 0;
    /* A quantifier on a quantifier ("a**", "a+{1,9}*") sends glibc's matcher into time
     * exponential in the text (found by fuzz.schema): refused, it never adds meaning. */
    int after_quantifier = 0;
    for (size_t i = 0; i < n;) {
        char ch = p[i];
        size_t atom = 1;
        int quantifier = ch == '*' || ch == '+' || ch == '?' || ch == '{';
        if (quantifier && after_quantifier) {
            *ret_why = "a quantifier may not follow another quantifier";
            return 0;
        }
        after_quantifier = 0;
        if (ch == '\\') {
            if (i + 1 < n && p[i + 1] >= '1' && p[i + 1] <= '9') {
                *ret_why = "backreferences are not supported";
                return 0;
            }
            i += 2;
        } else if (ch == '[') {
            size_t j = i + 1;
            if (j < n && p[j] == '^') {
                j++;
            }
            if (j < n && p[j] == ']') {
                j++;
            }
            while (j < n && p[j] != ']') {
                if (p[j] == '[' && j + 1 < n &&
                    (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
                    char close = p[j + 1];
                    j += 2;
                    while (j + 1 < n && !(p[j] == close && p[j + 1] == ']')) {
                        j++;
                    }
                    j += 2;
                    continue;
                }
                j++;
            }
            i = j + 1;
        } else if (ch == '(') {
            level++;
            total[level] = 0;
            last[level] = 0;
            i++;
            continue;
        } else if (ch == ')' && level > 0) {
            atom = total[level] ? total[level] : 1;
            level--;
            i++;
        } else if (ch == '{') {
            size_t j = i + 1;
            size_t lo = 0;
            size_t hi = 0;
            int digits = 0;
            int comma = 0;
            int hi_digits = 0;
            while (j < n && p[j] >= '0' && p[j] <= '9') {
                lo = lo < 100000 ? lo * 10 + (size_t)(p[j] - '0') : lo;
                digits++;
                j++;
            }
            if (j < n && p[j] == ',') {
                comma = 1;
                j++;
                while (j < n && p[j] >= '0' && p[j] <= '9') {
                    hi = hi < 100000 ? hi * 10 + (size_t)(p[j] - '0') : hi;
                    hi_digits++;
                    j++;
                }
            }
            if (digits && j < n && p[j] == '}') {
                size_t k = !comma ? lo : (hi_digits ? hi : lo + 1);
                k = k ? k : 1;
                total[level] = weight_add(total[level] - last[level], weight_mul(last[level], k));
                last[level] = weight_mul(last[level], k);
                i = j + 1;
                after_quantifier = 1;
                continue;
            }
            i++;
        } else if (ch == '*' || ch == '+' || ch == '?') {
            total[level] = weight_add(total[level], last[level]);
            last[level] = weight_mul(last[level], 2);
            i++;
            after_quantifier = 1;
            continue;
        } else if (ch == '|') {
            last[level] = 0;
            i++;
            continue;
        } else {
            i++;
        }
        total[level] = weight_add(total[level], atom);
        last[level] = atom;
    }
    size_t sum = 0;
    for (size_t l = 0; l <= level; l++) {
        sum = weight_add(sum, total[l]);
    }
    if (sum > SCHEMA_PATTERN_WEIGHT_MAX) {
        *ret_why = "its counted repetitions expand too far";
        return 0;
    }
    return 1;
}

static enum al_code compile_pattern(struct compiler *c, struct rule *r, const struct json_node *m,
                                    const struct seg *at)
{
    const char *why = NULL;
    if (m->type != JSON_STRING) {
        return wrong_type(c, m, at, "a string");
    }
    if (m->str_len > SCHEMA_PATTERN_MAX) {
        return compile_fail(c->err, at, "keyword 'pattern' longer than %u bytes",
                            SCHEMA_PATTERN_MAX);
    }
    if (memchr(m->str, '\0', m->str_len)) {
        return compile_fail(c->err, at, "keyword 'pattern' holding U+0000");
    }
    if (!pattern_acceptable(m->str, m->str_len, &why)) {
        return compile_fail(c->err, at, "keyword 'pattern' refused (%s)", why);
    }
    if (c->schema->c_loc == (locale_t)0) {
        c->schema->c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c->schema->c_loc == (locale_t)0) {
            return no_memory(c->err);
        }
    }
    locale_t old = uselocale(c->schema->c_loc);
    int rc = regcomp(&r->re, m->str, REG_EXTENDED | REG_NOSUB);
    uselocale(old);
    if (rc != 0) {
        char msg[96];
        regerror(rc, NULL, msg, sizeof msg);
        return compile_fail(c->err, at, "keyword 'pattern' is not a valid POSIX ERE (%s)", msg);
    }
    r->has_re = 1;
    r->c_loc = c->schema->c_loc;
    r->pattern = m;
    return AL_OK;
}

static enum al_code compile_rule(struct compiler *c, const struct json_node *n,
                                 const struct seg *at, unsigned depth, struct rule **ret_rule);

static enum al_code compile_properties(struct compiler *c, struct rule *r,
                                       const struct json_node *m, const struct seg *at,
                                       unsigned depth)
{
    if (m->type != JSON_OBJECT) {
        return wrong_type(c, m, at, "an object of schemas");
    }
    if (m->count == 0) {
        return AL_OK;
    }
    r->props = calloc(m->count, sizeof *r->props);
    if (!r->props) {
        return no_memory(c->err);
    }
    struct seg kw = { at, "properties", strlen("properties"), 0 };
    size_t i = 0;
    for (const struct json_node *p = m->child; p; p = p->next) {
        struct seg here = { &kw, p->key, p->key_len, 0 };
        r->props[i].key = p->key;
        r->props[i].key_len = p->key_len;
        enum al_code rc = compile_rule(c, p, &here, depth + 1, &r->props[i].rule);
        if (rc != AL_OK) {
            return rc;
        }
        i++;
        r->prop_count = i;
    }
    qsort(r->props, r->prop_count, sizeof *r->props, prop_cmp);
    for (i = 1; i < r->prop_count; i++) {
        if (prop_cmp(&r->props[i - 1], &r->props[i]) == 0) {
            return compile_fail(c->err, at, "duplicate property '%.*s' in keyword 'properties'",
                                (int)r->props[i].key_len, r->props[i].key);
        }
    }
    return AL_OK;
}

/* One keyword `m` (a member of the schema object at `at`). */
static enum al_code compile_keyword(struct compiler *c, struct rule *r, const struct json_node *m,
                                    const struct seg *at, unsigned depth)
{
    if (key_is(m, "type")) {
        return compile_type(c, m, at, &r->types);
    }
    if (key_is(m, "properties")) {
        return compile_properties(c, r, m, at, depth);
    }
    if (key_is(m, "required")) {
        if (m->type != JSON_ARRAY) {
            return wrong_type(c, m, at, "an array of strings");
        }
        for (const struct json_node *e = m->child; e; e = e->next) {
            if (e->type != JSON_STRING) {
                return wrong_type(c, m, at, "an array of strings");
            }
        }
        r->required = m;
        return AL_OK;
    }
    if (key_is(m, "additionalProperties")) {
        if (m->type == JSON_TRUE) {
            r->additional = ADDITIONAL_ANY;
            return AL_OK;
        }
        if (m->type == JSON_FALSE) {
            r->additional = ADDITIONAL_NO;
            return AL_OK;
        }
        if (m->type != JSON_OBJECT) {
            return wrong_type(c, m, at, "a boolean or a schema");
        }
        struct seg here = { at, m->key, m->key_len, 0 };
        r->additional = ADDITIONAL_SUB;
        return compile_rule(c, m, &here, depth + 1, &r->additional_rule);
    }
    if (key_is(m, "prefixItems")) {
        /* the tuple form of 2020-12 (positional host-function arguments of several types) */
        if (m->type != JSON_ARRAY || m->count == 0) {
            return wrong_type(c, m, at, "a non-empty array of schemas");
        }
        struct seg here = { at, m->key, m->key_len, 0 };
        struct rule **tail = &r->prefix;
        size_t i = 0;
        for (const struct json_node *e = m->child; e; e = e->next, i++) {
            struct seg pos = { &here, NULL, 0, i };
            enum al_code rc = compile_rule(c, e, &pos, depth + 1, tail);
            if (rc != AL_OK) {
                return rc;
            }
            tail = &(*tail)->next_prefix;
        }
        return AL_OK;
    }
    if (key_is(m, "items")) {
        if (m->type != JSON_OBJECT && m->type != JSON_TRUE && m->type != JSON_FALSE) {
            return wrong_type(c, m, at, "a schema (positions are prefixItems)");
        }
        struct seg here = { at, m->key, m->key_len, 0 };
        return compile_rule(c, m, &here, depth + 1, &r->items);
    }
    if (key_is(m, "enum")) {
        if (m->type != JSON_ARRAY || m->count == 0) {
            return wrong_type(c, m, at, "a non-empty array");
        }
        r->enum_values = m;
        return AL_OK;
    }
    if (key_is(m, "const")) {
        r->const_value = m;
        return AL_OK;
    }
    const struct json_node **bound = NULL;
    if (key_is(m, "minimum")) {
        bound = &r->minimum;
    } else if (key_is(m, "maximum")) {
        bound = &r->maximum;
    } else if (key_is(m, "exclusiveMinimum")) {
        bound = &r->exclusive_minimum;
    } else if (key_is(m, "exclusiveMaximum")) {
        bound = &r->exclusive_maximum;
    }
    if (bound) {
        if (m->type != JSON_NUMBER) {
            return wrong_type(c, m, at, "a number");
        }
        *bound = m;
        return AL_OK;
    }
    if (key_is(m, "minLength")) {
        return count_value(c, m, at, &r->min_length);
    }
    if (key_is(m, "maxLength")) {
        return count_value(c, m, at, &r->max_length);
    }
    if (key_is(m, "minItems")) {
        return count_value(c, m, at, &r->min_items);
    }
    if (key_is(m, "maxItems")) {
        return count_value(c, m, at, &r->max_items);
    }
    if (key_is(m, "pattern")) {
        return compile_pattern(c, r, m, at);
    }
    if (key_is(m, "$schema") || key_is(m, "title") || key_is(m, "description") ||
        key_is(m, "$comment")) {
        return m->type == JSON_STRING ? AL_OK : wrong_type(c, m, at, "a string");
    }
    if (key_is(m, "examples")) {
        return m->type == JSON_ARRAY ? AL_OK : wrong_type(c, m, at, "an array");
    }
    if (key_is(m, "default")) {
        return AL_OK;
    }
    return compile_fail(c->err, at, "unsupported keyword '%.*s'", (int)m->key_len, m->key);
}

static enum al_code compile_rule(struct compiler *c, const struct json_node *n,
                                 const struct seg *at, unsigned depth, struct rule **ret_rule)
{
    if (depth > SCHEMA_DEPTH_MAX) {
        return compile_fail(c->err, at, "schema nested deeper than %u subschemas",
                            SCHEMA_DEPTH_MAX);
    }
    if (n->type != JSON_OBJECT && n->type != JSON_TRUE && n->type != JSON_FALSE) {
        return compile_fail(c->err, at, "not a schema (an object or a boolean)");
    }
    struct rule *r = calloc(1, sizeof *r);
    if (!r) {
        return no_memory(c->err);
    }
    r->next_alloc = c->schema->rules;
    c->schema->rules = r;
    r->max_length = SIZE_MAX;
    r->max_items = SIZE_MAX;
    r->never = n->type == JSON_FALSE;
    for (const struct json_node *m = n->child; m; m = m->next) {
        for (const struct json_node *e = n->child; e != m; e = e->next) {
            if (e->key_len == m->key_len && memcmp(e->key, m->key, m->key_len) == 0) {
                return compile_fail(c->err, at, "duplicate keyword '%.*s'", (int)m->key_len,
                                    m->key);
            }
        }
        enum al_code rc = compile_keyword(c, r, m, at, depth);
        if (rc != AL_OK) {
            return rc;
        }
    }
    *ret_rule = r;
    return AL_OK;
}

enum al_code schema_compile(const char *text, size_t len, struct schema **ret_schema,
                            struct al_error *reterr)
{
    struct schema *s = NULL;
    struct al_error jerr;
    enum al_code rc = AL_OK;

    if (!ret_schema || (!text && len)) {
        return error_set(reterr, AL_CONFIG_ERROR, "schema_compile: NULL argument");
    }
    if (len > SCHEMA_TEXT_MAX) {
        return error_set(reterr, AL_CONFIG_ERROR, "schema text longer than %zu bytes",
                         SCHEMA_TEXT_MAX);
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        return no_memory(reterr);
    }
    s->text = malloc(len + 1);
    if (!s->text) {
        rc = no_memory(reterr);
        goto out;
    }
    if (len) {
        memcpy(s->text, text, len);
    }
    s->text[len] = '\0';
    rc = json_parse(s->text, len, SCHEMA_JSON_DEPTH, &s->doc, &jerr);
    if (rc == AL_SERIALIZATION_ERROR) {
        rc = error_set(reterr, AL_CONFIG_ERROR, "schema is not JSON: %s", jerr.message);
        goto out;
    }
    if (rc != AL_OK) {
        rc = error_set(reterr, rc, "%s", jerr.message);
        goto out;
    }
    struct compiler c = { s, reterr };
    rc = compile_rule(&c, json_root(s->doc), NULL, 0, &s->root);
    if (rc != AL_OK) {
        goto out;
    }
    *ret_schema = s;
    s = NULL;
out:
    schema_free(s);
    return rc;
}

void schema_free(struct schema *schema)
{
    if (!schema) {
        return;
    }
    struct rule *r = schema->rules;
    while (r) {
        struct rule *next = r->next_alloc;
        if (r->has_re) {
            regfree(&r->re);
        }
        free(r->props);
        free(r);
        r = next;
    }
    if (schema->c_loc != (locale_t)0) {
        freelocale(schema->c_loc);
    }
    json_doc_free(schema->doc);
    free(schema->text);
    free(schema);
}

/* ---------------------------------------------------------------- equality */

static const struct json_node *member(const struct json_node *obj, const char *key, size_t len)
{
    for (const struct json_node *m = obj->child; m; m = m->next) {
        if (m->key_len == len && memcmp(m->key, key, len) == 0) {
            return m;
        }
    }
    return NULL;
}

static int equal_at(const struct json_node *a, const struct json_node *b, unsigned depth)
{
    if (a->type != b->type) {
        return 0;
    }
    switch (a->type) {
    case JSON_NULL:
    case JSON_TRUE:
    case JSON_FALSE:
        return 1;
    case JSON_NUMBER:
        return a->num == b->num;
    case JSON_STRING:
        return a->str_len == b->str_len && memcmp(a->str, b->str, a->str_len) == 0;
    case JSON_ARRAY:
    case JSON_OBJECT:
        break;
    }
    if (a->count != b->count) {
        return 0;
    }
    if (a->count > 0 && depth >= SCHEMA_INSTANCE_DEPTH) {
        return 0;
    }
    if (a->type == JSON_ARRAY) {
        const struct json_node *y = b->child;
        for (const struct json_node *x = a->child; x; x = x->next, y = y->next) {
            if (!y || !equal_at(x, y, depth + 1)) {
                return 0;
            }
        }
        return 1;
    }
    /* Objects: same names, equal values, order aside (a duplicate name compares its first). */
    for (const struct json_node *x = a->child; x; x = x->next) {
        const struct json_node *y = member(b, x->key, x->key_len);
        if (!y || !equal_at(member(a, x->key, x->key_len), y, depth + 1)) {
            return 0;
        }
    }
    for (const struct json_node *y = b->child; y; y = y->next) {
        if (!member(a, y->key, y->key_len)) {
            return 0;
        }
    }
    return 1;
}

int schema_json_equal(const struct json_node *a, const struct json_node *b)
{
    if (!a || !b) {
        return 0;
    }
    return equal_at(a, b, 0);
}

/* ---------------------------------------------------------------- validating */

static unsigned value_types(const struct json_node *v)
{
    switch (v->type) {
    case JSON_NULL:
        return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOLEAN;
    case JSON_NUMBER:
        return is_integer_value(v->num) ? (T_NUMBER | T_INTEGER) : T_NUMBER;
    case JSON_STRING:
        return T_STRING;
    case JSON_ARRAY:
        return T_ARRAY;
    case JSON_OBJECT:
        return T_OBJECT;
    }
    return 0;
}

static enum al_code type_fail(struct al_error *err, const struct seg *at, unsigned types)
{
    char names[96];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if (types & (1u << i)) {
            int k = snprintf(names + used, sizeof names - used, "%s%s", used ? " or " : "",
                             type_names[i]);
            if (k > 0 && (size_t)k < sizeof names - used) {
                used += (size_t)k;
            }
        }
    }
    return rule_fail(err, at, "must be %s", names);
}

static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            n++;
        }
    }
    return n;
}

static enum al_code check_pattern(const struct rule *r, const struct json_node *v,
                                  const struct seg *at, struct al_error *err)
{
    int rc = REG_NOMATCH;
    if (!memchr(v->str, '\0', v->str_len)) {
        /* uselocale is per thread, so concurrent validations share the one locale safely */
        locale_t old = uselocale(r->c_loc);
        rc = regexec(&r->re, v->str, 0, NULL, 0);
        uselocale(old);
    }
    if (rc == 0) {
        return AL_OK;
    }
    if (rc != REG_NOMATCH) {
        return error_set(err, AL_INTERNAL_ERROR, "out of memory matching a pattern");
    }
    return rule_fail(err, at, "must match pattern '%s'", r->pattern->str); /* <= 256 bytes */
}

static const struct rule *prop_rule(const struct rule *r, const char *key, size_t len)
{
    if (r->prop_count == 0) {
        return NULL; /* bsearch may not be given a NULL array */
    }
    struct prop want = { key, len, NULL };
    const struct prop *p = bsearch(&want, r->props, r->prop_count, sizeof *r->props, prop_cmp);
    return p ? p->rule : NULL;
}

static enum al_code validate_rule(const struct rule *r, const struct json_node *v,
                                  const struct seg *at, struct al_error *err);

static enum al_code validate_object(const struct rule *r, const struct json_node *v,
                                    const struct seg *at, struct al_error *err)
{
    if (r->required) {
        for (const struct json_node *q = r->required->child; q; q = q->next) {
            if (!member(v, q->str, q->str_len)) {
                struct seg here = { at, q->str, q->str_len, 0 };
                return rule_fail(err, &here, "is required");
            }
        }
    }
    for (const struct json_node *m = v->child; m; m = m->next) {
        struct seg here = { at, m->key, m->key_len, 0 };
        const struct rule *sub = prop_rule(r, m->key, m->key_len);
        if (!sub && r->additional == ADDITIONAL_NO) {
            return rule_fail(err, &here, "is not allowed (additionalProperties false)");
        }
        if (!sub && r->additional == ADDITIONAL_SUB) {
            sub = r->additional_rule;
        }
        if (sub) {
            enum al_code rc = validate_rule(sub, m, &here, err);
            if (rc != AL_OK) {
                return rc;
            }
        }
    }
    return AL_OK;
}

static enum al_code validate_rule(const struct rule *r, const struct json_node *v,
                                  const struct seg *at, struct al_error *err)
{
    if (r->never) {
        return rule_fail(err, at, "is not allowed (schema false)");
    }
    if (r->types && !(r->types & value_types(v))) {
        return type_fail(err, at, r->types);
    }
    if (r->const_value && !equal_at(v, r->const_value, 0)) {
        return rule_fail(err, at, "must be equal to %s", quote(r->const_value).text);
    }
    if (r->enum_values) {
        const struct json_node *e = r->enum_values->child;
        while (e && !equal_at(v, e, 0)) {
            e = e->next;
        }
        if (!e) {
            return rule_fail(err, at, "must be one of %s", quote(r->enum_values).text);
        }
    }
    if (v->type == JSON_NUMBER) {
        if (r->minimum && !(v->num >= r->minimum->num)) {
            return rule_fail(err, at, "must be >= %s", quote(r->minimum).text);
        }
        if (r->exclusive_minimum && !(v->num > r->exclusive_minimum->num)) {
            return rule_fail(err, at, "must be > %s", quote(r->exclusive_minimum).text);
        }
        if (r->maximum && !(v->num <= r->maximum->num)) {
            return rule_fail(err, at, "must be <= %s", quote(r->maximum).text);
        }
        if (r->exclusive_maximum && !(v->num < r->exclusive_maximum->num)) {
            return rule_fail(err, at, "must be < %s", quote(r->exclusive_maximum).text);
        }
    }
    if (v->type == JSON_STRING) {
        size_t n = code_points(v->str, v->str_len);
        if (n < r->min_length) {
            return rule_fail(err, at, "must be at least %zu characters long", r->min_length);
        }
        if (n > r->max_length) {
            return rule_fail(err, at, "must be at most %zu characters long", r->max_length);
        }
        if (r->has_re) {
            enum al_code rc = check_pattern(r, v, at, err);
            if (rc != AL_OK) {
                return rc;
            }
        }
    }
    if (v->type == JSON_ARRAY) {
        if (v->count < r->min_items) {
            return rule_fail(err, at, "must have at least %zu items", r->min_items);
        }
        if (v->count > r->max_items) {
            return rule_fail(err, at, "must have at most %zu items", r->max_items);
        }
        const struct rule *pos = r->prefix;
        size_t i = 0;
        for (const struct json_node *e = v->child; e && (pos || r->items); e = e->next, i++) {
            struct seg here = { at, NULL, 0, i };
            enum al_code rc = validate_rule(pos ? pos : r->items, e, &here, err);
            if (rc != AL_OK) {
                return rc;
            }
            pos = pos ? pos->next_prefix : NULL;
        }
    }
    if (v->type == JSON_OBJECT) {
        return validate_object(r, v, at, err);
    }
    return AL_OK;
}

enum al_code schema_validate_node(const struct schema *schema, const struct json_node *value,
                                  struct al_error *reterr)
{
    if (!schema || !value) {
        return error_set(reterr, AL_CONFIG_ERROR, "schema_validate: NULL argument");
    }
    return validate_rule(schema->root, value, NULL, reterr);
}

enum al_code schema_validate(const struct schema *schema, const char *text, size_t len,
                             struct al_error *reterr)
{
    struct json_doc *doc = NULL;
    struct al_error jerr;
    enum al_code rc;

    if (!schema || (!text && len)) {
        return error_set(reterr, AL_CONFIG_ERROR, "schema_validate: NULL argument");
    }
    rc = json_parse(text ? text : "", len, SCHEMA_INSTANCE_DEPTH, &doc, &jerr);
    if (rc != AL_OK) {
        rc = error_set(reterr, rc, "%s%s",
                       rc == AL_SERIALIZATION_ERROR ? "input is not JSON: " : "", jerr.message);
        goto out;
    }
    rc = validate_rule(schema->root, json_root(doc), NULL, reterr);
out:
    json_doc_free(doc);
    return rc;
}
