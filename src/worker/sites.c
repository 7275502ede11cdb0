/*
 * sites.c - error messages that name the expression, for the model that reads them.
 *
 * QuickJS says `TypeError: not a function`; the next attempt of the code's author depends on
 * knowing *what* was not a function. While the parser compiles the user's code it tells us
 * (sites_note, a hook in quickjs_airlock.c) the source text of every callee and of every
 * object whose member is read, keyed by the packed position its opcode gets. When such an
 * operation throws its TypeError, the interpreter asks sites_describe for a message naming the
 * expression, V8 style: "tools.missing is not a function (tools has: add, sum)", "Foo is not a
 * constructor", "cannot read property 'bar' of undefined (o.foo)".
 *
 * Only the parser pays: a successful call or member read runs no code of ours. The table lives
 * outside the guest heap, is bounded (SITES_MAX_*), and a key noted twice with different texts
 * (columns past 2047 are clamped) is ambiguous and names nothing: a wrong name is worse than
 * none. Never calls into the guest and never throws.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "worker.h"

#define SITES_MAX_ENTRIES (1u << 20)
#define SITES_MAX_TEXT    (16u << 20) /* bytes of noted source text, all sites together */
#define SITES_RAW_MAX     240u        /* bytes of source kept per site */
#define SITES_EXPR_MAX    120u        /* bytes of the expression in a message */

struct sites_entry {
    int32_t pos;   /* packed position (line | column << 20), as in the bytecode */
    uint16_t file; /* index into sites.files */
    uint8_t kind;  /* SITES_* */
    uint8_t cut;   /* the text was longer than SITES_RAW_MAX */
    uint32_t off;  /* into sites.text */
    uint32_t len;
};

static struct worker *worker_of(JSContext *ctx)
{
    return JS_GetRuntimeOpaque(JS_GetRuntime(ctx));
}

static int file_index(struct worker_sites *st, const char *file)
{
    for (uint32_t i = 0; i < st->nfiles; i++) {
        if (strcmp(st->files[i], file) == 0) {
            return (int)i;
        }
    }
    if (st->nfiles >= UINT16_MAX) {
        return -1;
    }
    char **files = realloc(st->files, (st->nfiles + 1) * sizeof *files);
    if (!files) {
        return -1;
    }
    st->files = files;
    files[st->nfiles] = strdup(file);
    if (!files[st->nfiles]) {
        return -1;
    }
    return (int)st->nfiles++;
}

void sites_note(JSContext *ctx, const char *file, int kind, int pos, const char *text, size_t len)
{
    struct worker *w = worker_of(ctx);
    if (!w || !w->req.filename || !file) {
        return; /* the zygote's own code, before any request */
    }
    struct worker_sites *st = &w->sites;
    if (st->n >= SITES_MAX_ENTRIES) {
        return;
    }
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 256;
        struct sites_entry *tab = realloc(st->tab, cap * sizeof *tab);
        if (!tab) {
            return;
        }
        st->tab = tab;
        st->cap = cap;
    }
    int fi = file_index(st, file);
    size_t keep = len > SITES_RAW_MAX ? utf8_cut(text, SITES_RAW_MAX) : len;
    size_t off = st->text.len;
    if (fi < 0 || keep > st->text.max - st->text.len) {
        return;
    }
    if (buf_append(&st->text, text, keep) != BUF_OK) {
        st->n = 0; /* out of memory: the text the entries point into is gone, and so are they */
        buf_reset(&st->text);
        return;
    }
    struct sites_entry *e = &st->tab[st->n++];
    e->pos = pos;
    e->file = (uint16_t)fi;
    e->kind = (uint8_t)kind;
    e->cut = keep < len;
    e->off = (uint32_t)off;
    e->len = (uint32_t)keep;
    st->sorted = 0;
}

static int entry_cmp(const void *a, const void *b)
{
    const struct sites_entry *x = a;
    const struct sites_entry *y = b;
    if (x->file != y->file) {
        return x->file < y->file ? -1 : 1;
    }
    if (x->pos != y->pos) {
        return x->pos < y->pos ? -1 : 1;
    }
    if (x->kind != y->kind) {
        return x->kind < y->kind ? -1 : 1;
    }
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The one entry for the key, or NULL (none, or several with different texts). */
static const struct sites_entry *lookup(struct worker_sites *st, int file, int pos, int kind)
{
    if (!st->sorted) {
        qsort(st->tab, st->n, sizeof *st->tab, entry_cmp);
        st->sorted = 1;
    }
    struct sites_entry key = { pos, (uint16_t)file, (uint8_t)kind, 0, 0, 0 };
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_cmp(&st->tab[mid], &key) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo >= st->n || st->tab[lo].file != file || st->tab[lo].pos != pos ||
        st->tab[lo].kind != kind) {
        return NULL;
    }
    const struct sites_entry *e = &st->tab[lo];
    for (size_t i = lo + 1;
         i < st->n && st->tab[i].file == file && st->tab[i].pos == pos && st->tab[i].kind == kind;
         i++) {
        if (st->tab[i].len != e->len ||
            memcmp(st->text.data + st->tab[i].off, st->text.data + e->off, e->len) != 0) {
            return NULL;
        }
    }
    return e;
}

static int is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c >= 0x80;
}

/* The expression as one line: whitespace and comments outside string literals dropped (one
 * space kept between two words), a trailing `?.` dropped, at most SITES_EXPR_MAX bytes (cut at a
 * character, then "..."). Returns its length (0: nothing left). */
static size_t normalize(const char *s, size_t len, int cut, char *out, size_t size)
{
    char tmp[SITES_RAW_MAX + 1];
    size_t n = 0;
    int space = 0;
    for (size_t i = 0; i < len && n < SITES_RAW_MAX;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\'' || c == '"' || c == '`') {
            size_t j = i + 1;
            while (j < len && (unsigned char)s[j] != c) {
                j += s[j] == '\\' ? 2 : 1;
            }
            j = j < len ? j + 1 : len;
            if (space && n && is_word((unsigned char)tmp[n - 1])) {
                tmp[n++] = ' ';
            }
            for (; i < j && n < SITES_RAW_MAX; i++) {
                tmp[n++] = s[i];
            }
            space = 0;
            i = j;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n') {
                i++;
            }
            space = 1;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            const char *end = memmem(s + i + 2, len - i - 2, "*/", 2);
            i = end ? (size_t)(end - s) + 2 : len;
            space = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            space = 1;
            i++;
            continue;
        }
        if (space && n && is_word((unsigned char)tmp[n - 1]) && is_word(c)) {
            tmp[n++] = ' ';
        }
        space = 0;
        tmp[n++] = (char)c;
        i++;
    }
    if (n >= 2 && tmp[n - 2] == '?' && tmp[n - 1] == '.') {
        n -= 2;
    }
    if (n == 0 || size < 4) {
        return 0;
    }
    tmp[n] = '\0';
    size_t max = size - 4 < SITES_EXPR_MAX ? size - 4 : SITES_EXPR_MAX;
    if (n > max) {
        n = utf8_cut(tmp, max);
        cut = 1;
    }
    memcpy(out, tmp, n);
    if (cut) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return n;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

size_t sites_describe(JSContext *ctx, const char *file, int kind, int pos, JSValueConst receiver,
                      const char *msg, char *out, size_t size)
{
    struct worker *w = worker_of(ctx);
    if (!w || !file || !msg || size == 0) {
        return 0;
    }
    int call = kind == SITES_CALL && strcmp(msg, "not a function") == 0;
    int ctor = kind == SITES_NEW &&
               (strcmp(msg, "not a function") == 0 || strcmp(msg, "not a constructor") == 0);
    int read = (kind == SITES_FIELD || kind == SITES_ELEM) &&
               strncmp(msg, "cannot read property ", 21) == 0 &&
               (ends_with(msg, " of undefined") || ends_with(msg, " of null"));
    if (!call && !ctor && !read) {
        return 0;
    }
    struct worker_sites *st = &w->sites;
    int fi = -1;
    for (uint32_t i = 0; i < st->nfiles; i++) {
        if (strcmp(st->files[i], file) == 0) {
            fi = (int)i;
        }
    }
    const struct sites_entry *e = fi < 0 ? NULL : lookup(st, fi, pos, kind);
    if (!e) {
        return 0;
    }
    char expr[SITES_EXPR_MAX + 4];
    if (normalize(st->text.data + e->off, e->len, e->cut, expr, sizeof expr) == 0) {
        return 0;
    }
    int n;
    if (read) {
        n = snprintf(out, size, "%s (%s)", msg, expr);
    } else if (ctor) {
        n = snprintf(out, size, "%s is not a constructor", expr);
    } else {
        char has[512];
        if (bridge_group_members(w, receiver, has, sizeof has) > 0) {
            n = snprintf(out, size, "%s is not a function (%s)", expr, has);
        } else {
            n = snprintf(out, size, "%s is not a function", expr);
        }
    }
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

void sites_init(struct worker *w)
{
    buf_init(&w->sites.text, SITES_MAX_TEXT);
}

void sites_free(struct worker *w)
{
    struct worker_sites *st = &w->sites;
    free(st->tab);
    st->tab = NULL;
    st->n = st->cap = 0;
    for (uint32_t i = 0; i < st->nfiles; i++) {
        free(st->files[i]);
    }
    free(st->files);
    st->files = NULL;
    st->nfiles = 0;
    buf_done(&st->text);
}
