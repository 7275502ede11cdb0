/*
 * json.c - strict RFC 8259 parser and the JSON.stringify string writer.
 *
 * The parser is a recursive descent over (ptr, len) that never reads past len and whose
 * recursion is bounded by max_depth. Every node and every unescaped string lives in one arena
 * (a list of blocks that double in size), so a document is one free no matter how many nodes it
 * has. Strings are validated as UTF-8 (no overlongs, no raw surrogates, nothing above U+10FFFF);
 * \u escapes of lone surrogates are kept as 3-byte WTF-8 so JavaScript strings round-trip.
 * Numbers take Clinger's exact fast path when they can and otherwise strtod under the "C"
 * locale, so an embedder's setlocale() can never change how "1.5" parses.
 * json_write_string is the inverse of the string rules above and matches JSON.stringify byte
 * for byte (lowercase \u00xx for controls, \udxxx for lone surrogates).
 */
#include "json.h"

#include <locale.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

struct arena_block {
    struct arena_block *next;
    size_t used;
    size_t cap;
    alignas(max_align_t) unsigned char data[];
};

struct json_doc {
    struct arena_block *blocks; /* newest first */
    size_t next_cap;            /* size of the next block */
    struct json_node *root;
};

struct parser {
    const char *text;
    size_t len;
    size_t pos;
    unsigned max_depth;
    struct json_doc *doc; /* NULL: check only (json_check), nothing is kept */
    struct al_error *err;
    struct json_node scratch_node; /* check only: every node */
    unsigned char *scratch;        /* check only: every unescaped string */
    size_t scratch_cap;
};

#define ARENA_MIN_BLOCK ((size_t)4096)
#define ARENA_MAX_BLOCK ((size_t)4 << 20)

static void *arena_alloc(struct json_doc *doc, size_t size, size_t align)
{
    struct arena_block *b = doc->blocks;
    if (b) {
        size_t off = (b->used + align - 1) & ~(align - 1);
        if (off <= b->cap && size <= b->cap - off) {
            b->used = off + size;
            return b->data + off;
        }
    }
    size_t cap = doc->next_cap;
    if (cap < size) {
        cap = size;
    }
    if (cap > SIZE_MAX - sizeof(struct arena_block)) {
        return NULL;
    }
    b = malloc(sizeof(struct arena_block) + cap);
    if (!b) {
        return NULL;
    }
    b->next = doc->blocks;
    b->cap = cap;
    b->used = size;
    doc->blocks = b;
    if (doc->next_cap < ARENA_MAX_BLOCK) {
        doc->next_cap *= 2;
    }
    return b->data;
}

static enum al_code fail(struct parser *p, size_t at, const char *what)
{
    return error_set(p->err, AL_SERIALIZATION_ERROR, "offset %zu: %s", at, what);
}

static enum al_code no_memory(struct parser *p)
{
    return error_set(p->err, AL_INTERNAL_ERROR, "out of memory parsing JSON");
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Reads 4 hex digits at s (the caller checked they are in bounds); -1 if not hex. */
static long hex4(const unsigned char *s)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_value(s[i]);
        if (h < 0) {
            return -1;
        }
        v = (v << 4) | h;
    }
    return v;
}

static size_t put_utf8(unsigned char *q, uint32_t c)
{
    if (c < 0x80) {
        q[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        q[0] = (unsigned char)(0xc0 | (c >> 6));
        q[1] = (unsigned char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        q[0] = (unsigned char)(0xe0 | (c >> 12));
        q[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        q[2] = (unsigned char)(0x80 | (c & 0x3f));
        return 3;
    }
    q[0] = (unsigned char)(0xf0 | (c >> 18));
    q[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
    q[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
    q[3] = (unsigned char)(0x80 | (c & 0x3f));
    return 4;
}

/* Length of the well-formed UTF-8 sequence at s (n bytes available), or 0 if ill-formed
 * (Unicode table 3-7: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        return (n >= 2 && (s[1] & 0xc0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f)) {
            return 0;
        }
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80) {
            return 0;
        }
        if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f)) {
            return 0;
        }
        return 4;
    }
    return 0;
}

/* p->pos is on the opening quote. Stores the unescaped, NUL-terminated copy. */
static enum al_code parse_string(struct parser *p, const char **ret_str, size_t *ret_len)
{
    const unsigned char *s = (const unsigned char *)p->text;
    size_t start = p->pos + 1;
    size_t i = start;

    /* Pass 1: find the closing quote; the unescaped form is never longer than the raw one. */
    for (;;) {
        if (i >= p->len) {
            return fail(p, p->len, "unterminated string");
        }
        unsigned char c = s[i];
        if (c == '"') {
            break;
        }
        if (c < 0x20) {
            return fail(p, i, "control character in string");
        }
        i += c == '\\' ? 2 : 1;
    }
    size_t end = i;
    unsigned char *out;
    if (p->doc) {
        out = arena_alloc(p->doc, end - start + 1, 1);
    } else {
        if (p->scratch_cap < end - start + 1) {
            size_t cap =
                    end - start + 1 < 2 * p->scratch_cap ? 2 * p->scratch_cap : end - start + 1;
            free(p->scratch);
            p->scratch = malloc(cap < 256 ? 256 : cap);
            p->scratch_cap = p->scratch ? (cap < 256 ? 256 : cap) : 0;
        }
        out = p->scratch;
    }
    if (!out) {
        return no_memory(p);
    }

    /* Pass 2: unescape and validate. */
    unsigned char *q = out;
    i = start;
    while (i < end) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '\\') {
            *q++ = c;
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq(s + i, end - i);
            if (n == 0) {
                return fail(p, i, "invalid UTF-8 in string");
            }
            memcpy(q, s + i, n);
            q += n;
            i += n;
            continue;
        }
        /* backslash; pass 1 guarantees i + 1 < end or i + 1 == end (then the quote) */
        if (i + 1 >= end) {
            return fail(p, i, "bad escape");
        }
        unsigned char e = s[i + 1];
        switch (e) {
        case '"':
        case '\\':
        case '/':
            *q++ = e;
            break;
        case 'b':
            *q++ = '\b';
            break;
        case 'f':
            *q++ = '\f';
            break;
        case 'n':
            *q++ = '\n';
            break;
        case 'r':
            *q++ = '\r';
            break;
        case 't':
            *q++ = '\t';
            break;
        case 'u': {
            if (end - i < 6) {
                return fail(p, i, "bad \\u escape");
            }
            long u = hex4(s + i + 2);
            if (u < 0) {
                return fail(p, i, "bad \\u escape");
            }
            uint32_t cp = (uint32_t)u;
            if (cp >= 0xd800 && cp < 0xdc00 && end - i >= 12 && s[i + 6] == '\\' &&
                s[i + 7] == 'u') {
                long lo = hex4(s + i + 8);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
                    i += 6;
                }
            }
            q += put_utf8(q, cp); /* a lone surrogate becomes 3-byte WTF-8 */
            i += 6;
            continue;
        }
        default:
            return fail(p, i, "bad escape");
        }
        i += 2;
    }
    *q = '\0';
    *ret_str = (const char *)out;
    *ret_len = (size_t)(q - out);
    p->pos = end + 1;
    return AL_OK;
}

static const double pow10_exact[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

/* strtod of raw text that already matched the JSON grammar, immune to the current locale. */
static enum al_code slow_strtod(struct parser *p, const char *raw, size_t n, double *ret)
{
    char small[64];
    char *tmp = small;
    enum al_code rc = AL_OK;
    if (n >= sizeof small) {
        tmp = malloc(n + 1);
        if (!tmp) {
            return no_memory(p);
        }
    }
    memcpy(tmp, raw, n);
    tmp[n] = '\0';
    locale_t c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (c_loc == (locale_t)0) {
        rc = no_memory(p);
        goto out;
    }
    locale_t old = uselocale(c_loc);
    *ret = strtod(tmp, NULL);
    uselocale(old);
    freelocale(c_loc);
out:
    if (tmp != small) {
        free(tmp);
    }
    return rc;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static enum al_code parse_number(struct parser *p, double *ret)
{
    const char *t = p->text;
    size_t start = p->pos, i = p->pos;
    int neg = 0;
    uint64_t mant = 0;
    int sig = 0;     /* significant digits accumulated in mant */
    int dropped = 0; /* nonzero digits that did not fit */
    long exp10 = 0;

    if (t[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= p->len || !is_digit(t[i])) {
        return fail(p, i, "bad number");
    }
    if (t[i] == '0') {
        i++;
    } else {
        while (i < p->len && is_digit(t[i])) {
            if (sig < 19) {
                mant = mant * 10 + (uint64_t)(t[i] - '0');
                if (mant) {
                    sig++;
                }
            } else {
                dropped = 1;
                exp10++;
            }
            i++;
        }
    }
    if (i < p->len && t[i] == '.') {
        i++;
        if (i >= p->len || !is_digit(t[i])) {
            return fail(p, i, "bad number");
        }
        while (i < p->len && is_digit(t[i])) {
            if (sig < 19) {
                mant = mant * 10 + (uint64_t)(t[i] - '0');
                if (mant) {
                    sig++;
                }
                exp10--;
            } else {
                dropped = 1;
            }
            i++;
        }
    }
    if (i < p->len && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < p->len && (t[i] == '+' || t[i] == '-')) {
            eneg = t[i] == '-';
            i++;
        }
        if (i >= p->len || !is_digit(t[i])) {
            return fail(p, i, "bad number");
        }
        long e = 0;
        while (i < p->len && is_digit(t[i])) {
            if (e < 100000) {
                e = e * 10 + (t[i] - '0');
            }
            i++;
        }
        exp10 += eneg ? -e : e;
    }
    p->pos = i;
    if (mant == 0 && !dropped) {
        *ret = neg ? -0.0 : 0.0;
        return AL_OK;
    }
    if (!dropped && sig <= 15 && exp10 >= -22 && exp10 <= 22) {
        /* Clinger: both operands exact, so one IEEE operation rounds correctly. */
        double d = (double)mant;
        d = exp10 < 0 ? d / pow10_exact[-exp10] : d * pow10_exact[exp10];
        *ret = neg ? -d : d;
        return AL_OK;
    }
    return slow_strtod(p, t + start, i - start, ret);
}

static int match_word(struct parser *p, const char *w, size_t n)
{
    if (p->len - p->pos < n || memcmp(p->text + p->pos, w, n) != 0) {
        return 0;
    }
    p->pos += n;
    return 1;
}

static enum al_code parse_value(struct parser *p, struct json_node *node, unsigned depth);

static struct json_node *new_node(struct parser *p)
{
    struct json_node *n =
            p->doc ? arena_alloc(p->doc, sizeof *n, alignof(struct json_node)) : &p->scratch_node;
    if (n) {
        memset(n, 0, sizeof *n);
    }
    return n;
}

static enum al_code parse_container(struct parser *p, struct json_node *node, unsigned depth)
{
    int is_obj = p->text[p->pos] == '{';
    char close = is_obj ? '}' : ']';
    struct json_node **tail = &node->child;
    enum al_code rc;

    if (depth >= p->max_depth) {
        return error_set(p->err, AL_SERIALIZATION_ERROR, "offset %zu: nesting deeper than %u",
                         p->pos, p->max_depth);
    }
    node->type = is_obj ? JSON_OBJECT : JSON_ARRAY;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->text[p->pos] == close) {
        p->pos++;
        return AL_OK;
    }
    for (;;) {
        struct json_node *child = new_node(p);
        if (!child) {
            return no_memory(p);
        }
        if (is_obj) {
            if (p->pos >= p->len || p->text[p->pos] != '"') {
                return fail(p, p->pos,
                            p->pos >= p->len ? "unexpected end of input" : "expected a string key");
            }
            rc = parse_string(p, &child->key, &child->key_len);
            if (rc != AL_OK) {
                return rc;
            }
            skip_ws(p);
            if (p->pos >= p->len || p->text[p->pos] != ':') {
                return fail(p, p->pos, "expected ':'");
            }
            p->pos++;
            skip_ws(p);
        }
        rc = parse_value(p, child, depth + 1);
        if (rc != AL_OK) {
            return rc;
        }
        *tail = child;
        tail = &child->next;
        node->count++;
        skip_ws(p);
        if (p->pos >= p->len) {
            return fail(p, p->pos, "unexpected end of input");
        }
        char c = p->text[p->pos];
        if (c == close) {
            p->pos++;
            return AL_OK;
        }
        if (c != ',') {
            return fail(p, p->pos, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        p->pos++;
        skip_ws(p);
    }
}

/* p->pos is on the first byte of the value (whitespace already skipped). */
static enum al_code parse_value(struct parser *p, struct json_node *node, unsigned depth)
{
    enum al_code rc = AL_OK;
    size_t start = p->pos;

    if (p->pos >= p->len) {
        return fail(p, p->pos, "unexpected end of input");
    }
    switch (p->text[p->pos]) {
    case '{':
    case '[':
        rc = parse_container(p, node, depth);
        break;
    case '"':
        node->type = JSON_STRING;
        rc = parse_string(p, &node->str, &node->str_len);
        break;
    case 't':
        node->type = JSON_TRUE;
        if (!match_word(p, "true", 4)) {
            rc = fail(p, p->pos, "unexpected character");
        }
        break;
    case 'f':
        node->type = JSON_FALSE;
        if (!match_word(p, "false", 5)) {
            rc = fail(p, p->pos, "unexpected character");
        }
        break;
    case 'n':
        node->type = JSON_NULL;
        if (!match_word(p, "null", 4)) {
            rc = fail(p, p->pos, "unexpected character");
        }
        break;
    default:
        if (p->text[p->pos] == '-' || is_digit(p->text[p->pos])) {
            node->type = JSON_NUMBER;
            rc = parse_number(p, &node->num);
        } else {
            rc = fail(p, p->pos, "unexpected character");
        }
        break;
    }
    if (rc == AL_OK) {
        node->raw = p->text + start;
        node->raw_len = p->pos - start;
    }
    return rc;
}

enum al_code json_parse(const char *text, size_t len, unsigned max_depth, struct json_doc **ret_doc,
                        struct al_error *reterr)
{
    struct parser p = { .text = text, .len = len, .max_depth = max_depth, .err = reterr };
    struct json_doc *doc = NULL;
    enum al_code rc;

    if (!text && len) {
        return error_set(reterr, AL_CONFIG_ERROR, "json_parse: NULL text");
    }
    doc = calloc(1, sizeof *doc);
    if (!doc) {
        return no_memory(&p);
    }
    /* Small documents fit one block; big ones start near their likely size. */
    doc->next_cap = ARENA_MIN_BLOCK;
    while (doc->next_cap < len * 4 && doc->next_cap < ARENA_MAX_BLOCK) {
        doc->next_cap *= 2;
    }
    p.doc = doc;
    doc->root = new_node(&p);
    if (!doc->root) {
        rc = no_memory(&p);
        goto out;
    }
    skip_ws(&p);
    rc = parse_value(&p, doc->root, 0);
    if (rc != AL_OK) {
        goto out;
    }
    skip_ws(&p);
    if (p.pos != len) {
        rc = fail(&p, p.pos, "trailing characters after the value");
        goto out;
    }
    *ret_doc = doc;
    doc = NULL;
out:
    json_doc_free(doc);
    return rc;
}

enum al_code json_check(const char *text, size_t len, unsigned max_depth, struct al_error *reterr)
{
    struct parser p = { .text = text, .len = len, .max_depth = max_depth, .err = reterr };
    if (!text && len) {
        return error_set(reterr, AL_CONFIG_ERROR, "json_check: NULL text");
    }
    skip_ws(&p);
    enum al_code rc = parse_value(&p, new_node(&p), 0);
    if (rc == AL_OK) {
        skip_ws(&p);
        if (p.pos != len) {
            rc = fail(&p, p.pos, "trailing characters after the value");
        }
    }
    free(p.scratch);
    return rc;
}

const struct json_node *json_root(const struct json_doc *doc)
{
    return doc ? doc->root : NULL;
}

void json_doc_free(struct json_doc *doc)
{
    if (!doc) {
        return;
    }
    struct arena_block *b = doc->blocks;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(doc);
}

const struct json_node *json_get(const struct json_node *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT) {
        return NULL;
    }
    size_t n = strlen(key);
    for (const struct json_node *c = obj->child; c; c = c->next) {
        if (c->key_len == n && memcmp(c->key, key, n) == 0) {
            return c;
        }
    }
    return NULL;
}

/* Decodes the WTF-8 sequence at s (n bytes available) into *ret_cp; returns its length, or 0 if
 * ill-formed. Unlike utf8_seq, a 3-byte surrogate (ED A0..BF xx) is accepted. */
static size_t wtf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
    if (n >= 3 && s[0] == 0xed && s[1] >= 0xa0 && s[1] <= 0xbf && (s[2] & 0xc0) == 0x80) {
        *ret_cp = 0xd000u | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        return 3;
    }
    size_t len = utf8_seq(s, n);
    if (len == 0) {
        return 0;
    }
    *ret_cp = 0; /* only surrogates need the code point */
    return len;
}

static const char hex_digits[] = "0123456789abcdef";

enum buf_status json_write_string(struct buf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    enum buf_status st;
    char esc[12];

    st = buf_append_byte(b, '"');
    if (st != BUF_OK) {
        goto out;
    }
    while (i < len) {
        unsigned char c = u[i];
        size_t esc_len = 0, consumed = 1;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t n = wtf8_decode(u + i, len - i, &cp);
            if (n == 0) {
                /* not UTF-8/WTF-8 at all: a replacement character, as a JS string would */
                memcpy(esc, "\xef\xbf\xbd", 3);
                esc_len = 3;
            } else if (n == 3 && cp >= 0xd800) {
                uint32_t lo;
                if (cp < 0xdc00 && len - i >= 6 && wtf8_decode(u + i + 3, len - i - 3, &lo) == 3 &&
                    lo >= 0xdc00) {
                    /* a pair split in two (CESU-8): join it as JavaScript would */
                    uint32_t full = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    esc_len = put_utf8((unsigned char *)esc, full);
                    consumed = 6;
                } else {
                    memcpy(esc, "\\u", 2);
                    esc[2] = hex_digits[(cp >> 12) & 0xf];
                    esc[3] = hex_digits[(cp >> 8) & 0xf];
                    esc[4] = hex_digits[(cp >> 4) & 0xf];
                    esc[5] = hex_digits[cp & 0xf];
                    esc_len = 6;
                    consumed = 3;
                }
            } else {
                i += n;
                continue;
            }
        } else {
            esc[0] = '\\';
            esc_len = 2;
            switch (c) {
            case '"':
                esc[1] = '"';
                break;
            case '\\':
                esc[1] = '\\';
                break;
            case '\b':
                esc[1] = 'b';
                break;
            case '\f':
                esc[1] = 'f';
                break;
            case '\n':
                esc[1] = 'n';
                break;
            case '\r':
                esc[1] = 'r';
                break;
            case '\t':
                esc[1] = 't';
                break;
            default:
                memcpy(esc, "\\u00", 4);
                esc[4] = hex_digits[c >> 4];
                esc[5] = hex_digits[c & 0xf];
                esc_len = 6;
                break;
            }
        }
        st = buf_append(b, s + run, i - run);
        if (st != BUF_OK) {
            goto out;
        }
        st = buf_append(b, esc, esc_len);
        if (st != BUF_OK) {
            goto out;
        }
        i += consumed;
        run = i;
    }
    st = buf_append(b, s + run, i - run);
    if (st != BUF_OK) {
        goto out;
    }
    st = buf_append_byte(b, '"');
out:
    return st; /* a failed append has poisoned b (buf.h): nothing half-written stays */
}

enum buf_status json_write_compact(struct buf *b, const char *text, size_t len)
{
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (!in_str && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            continue;
        }
        if (in_str && c == '\\' && i + 1 < len) {
            enum buf_status st = buf_append(b, text + i, 2);
            if (st != BUF_OK) {
                return st;
            }
            i++;
            continue;
        }
        if (c == '"') {
            in_str = !in_str;
        }
        enum buf_status st = buf_append_byte(b, (uint8_t)c);
        if (st != BUF_OK) {
            return st;
        }
    }
    if (b->data) {
        b->data[b->len] = '\0';
    }
    return BUF_OK;
}

/* ------------------------------------------------------------------------------ I-JSON */

int json_has_lone_surrogate(const char *s, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if ((unsigned char)s[i] == 0xED && (unsigned char)s[i + 1] >= 0xA0) {
            return 1;
        }
    }
    return 0;
}

static int key_order(const void *a, const void *b)
{
    const struct json_node *x = *(const struct json_node *const *)a;
    const struct json_node *y = *(const struct json_node *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* The first member of `obj` whose name an earlier one has, or NULL; *ret_oom on failure. */
static const struct json_node *duplicate_member(const struct json_node *obj, int *ret_oom)
{
    if (obj->count < 2) {
        return NULL;
    }
    const struct json_node **m = malloc(obj->count * sizeof *m);
    if (!m) {
        *ret_oom = 1;
        return NULL;
    }
    size_t n = 0;
    for (const struct json_node *c = obj->child; c && n < obj->count; c = c->next) {
        m[n++] = c;
    }
    qsort(m, n, sizeof *m, key_order); /* n log n: a body may hold many members */
    const struct json_node *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++) {
        dup = key_order(&m[i - 1], &m[i]) == 0 ? m[i] : NULL;
    }
    free(m);
    return dup;
}

static void path_add(char *path, size_t size, size_t at, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void path_add(char *path, size_t size, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (at < size) {
        vsnprintf(path + at, size - at, fmt, ap);
    }
    va_end(ap);
}

static int ijson_walk(const struct json_node *n, char *path, size_t size, const char **ret_why)
{
    size_t at = strnlen(path, size);
    int oom = 0;
    if (n->type == JSON_STRING && json_has_lone_surrogate(n->str, n->str_len)) {
        *ret_why = "a string holds a lone surrogate (not Unicode text)";
        return 1;
    }
    if (n->type == JSON_NUMBER && !isfinite(n->num)) {
        *ret_why = "a number is outside the range of a double";
        return 1;
    }
    if (n->type == JSON_OBJECT) {
        const struct json_node *dup = duplicate_member(n, &oom);
        if (oom) {
            return -1;
        }
        if (dup) {
            path_add(path, size, at, ".%.64s", dup->key);
            *ret_why = "a member name appears twice";
            return 1;
        }
    }
    size_t i = 0;
    for (const struct json_node *c = n->child; c; c = c->next, i++) {
        if (n->type == JSON_OBJECT) {
            path_add(path, size, at, ".%.64s", c->key);
            if (json_has_lone_surrogate(c->key, c->key_len)) {
                *ret_why = "a member name holds a lone surrogate (not Unicode text)";
                return 1;
            }
        } else {
            path_add(path, size, at, "[%zu]", i);
        }
        int rc = ijson_walk(c, path, size, ret_why);
        if (rc != 0) {
            return rc;
        }
        path[at < size ? at : size - 1] = '\0';
    }
    return 0;
}

int json_ijson_check(const struct json_node *node, char *path, size_t path_size,
                     const char **ret_why)
{
    if (path_size < 2) {
        return -1;
    }
    path[0] = '$';
    path[1] = '\0';
    return ijson_walk(node, path, path_size, ret_why);
}
