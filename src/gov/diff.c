/*
 * diff.c - unified diffs of two texts (diff.h). The texts are split into lines (a line keeps its
 * '\n', so "a" at the end of a file differs from "a\n"), the common prefix and suffix are taken
 * off, and the middle goes through Myers' greedy O(ND) algorithm, keeping each round's furthest
 * reaching x so the path can be walked back. The rounds are bounded (DIFF_EDITS_MAX), and so is
 * the memory they keep (about DIFF_EDITS_MAX^2 ints at worst); past the bound, or for texts
 * longer than DIFF_LINES_MAX lines, the middle becomes one replacement instead: an outsider's
 * text must never make this quadratic in its length.
 */
#include "diff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum diff_op {
    DIFF_EQUAL = 0,
    DIFF_DELETE = 1,
    DIFF_INSERT = 2,
};

struct diff_line {
    const char *p;
    size_t len; /* bytes, the '\n' included when there is one */
};

struct diff_text {
    size_t n;
    struct diff_line *lines;
};

static int diff_split(const char *s, size_t len, struct diff_text *ret)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n' || i + 1 == len) {
            n++;
        }
    }
    ret->n = n;
    ret->lines = NULL;
    if (n == 0) {
        return 0;
    }
    ret->lines = malloc(n * sizeof *ret->lines);
    if (!ret->lines) {
        return -1;
    }
    size_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n' || i + 1 == len) {
            ret->lines[k].p = s + start;
            ret->lines[k].len = i + 1 - start;
            k++;
            start = i + 1;
        }
    }
    return 0;
}

static int diff_eq(const struct diff_line *x, const struct diff_line *y)
{
    return x->len == y->len && memcmp(x->p, y->p, x->len) == 0;
}

/* Myers over a[0..n) and b[0..m): writes the edit script into ops (n + m bytes at most) and
 * its length to *ret_nops. 1 when it found one within DIFF_EDITS_MAX edits, 0 when it gave up,
 * -1 when out of memory. */
static int diff_myers(const struct diff_line *a, size_t n, const struct diff_line *b, size_t m,
                      unsigned char *ops, size_t *ret_nops)
{
    size_t dmax = n + m < DIFF_EDITS_MAX ? n + m : DIFF_EDITS_MAX;
    long off = (long)dmax + 1;
    int32_t *v = calloc(2 * dmax + 3, sizeof *v);
    int32_t *trace = NULL; /* round d keeps v[-d..d] at trace[d*d] */
    size_t trace_cap = 0;
    int found = 0;
    size_t dend = 0;
    int rc = -1;
    if (!v) {
        goto out;
    }
    for (size_t d = 0; d <= dmax && !found; d++) {
        long ld = (long)d;
        for (long k = -ld; k <= ld; k += 2) {
            long x;
            if (k == -ld || (k != ld && v[off + k - 1] < v[off + k + 1])) {
                x = v[off + k + 1];
            } else {
                x = v[off + k - 1] + 1;
            }
            long y = x - k;
            while (x < (long)n && y < (long)m && diff_eq(&a[x], &b[y])) {
                x++;
                y++;
            }
            v[off + k] = (int32_t)x;
            if (x >= (long)n && y >= (long)m) {
                found = 1;
            }
        }
        size_t need = (d + 1) * (d + 1);
        if (need > trace_cap) {
            size_t cap = trace_cap ? trace_cap * 2 : 64;
            while (cap < need) {
                cap *= 2;
            }
            int32_t *t = realloc(trace, cap * sizeof *t);
            if (!t) {
                goto out;
            }
            trace = t;
            trace_cap = cap;
        }
        memcpy(trace + d * d, v + off - ld, (2 * d + 1) * sizeof *v);
        dend = d;
    }
    if (!found) {
        rc = 0;
        goto out;
    }
    /* walk back from (n, m), writing the script from its end */
    size_t w = n + m;
    long x = (long)n;
    long y = (long)m;
    for (size_t d = dend; d > 0; d--) {
        const int32_t *pv = trace + (d - 1) * (d - 1); /* round d-1: v[-(d-1)..d-1] */
        long ld = (long)d;
        long k = x - y;
        long pk;
        if (k == -ld || (k != ld && pv[k - 1 + ld - 1] < pv[k + 1 + ld - 1])) {
            pk = k + 1;
        } else {
            pk = k - 1;
        }
        long px = pv[pk + ld - 1];
        long py = px - pk;
        while (x > px && y > py) {
            ops[--w] = DIFF_EQUAL;
            x--;
            y--;
        }
        ops[--w] = x == px ? DIFF_INSERT : DIFF_DELETE;
        x = px;
        y = py;
    }
    while (x > 0 && y > 0) {
        ops[--w] = DIFF_EQUAL;
        x--;
        y--;
    }
    memmove(ops, ops + w, n + m - w);
    *ret_nops = n + m - w;
    rc = 1;
out:
    free(v);
    free(trace);
    return rc;
}

static int diff_line_out(struct buf *out, char mark, const struct diff_line *l)
{
    int st = buf_append_byte(out, (uint8_t)mark);
    if (st == BUF_OK) {
        st = buf_append(out, l->p, l->len);
    }
    if (st == BUF_OK && (l->len == 0 || l->p[l->len - 1] != '\n')) {
        st = buf_append_str(out, "\n\\ No newline at end of file\n");
    }
    return st;
}

static void diff_range(char *dst, size_t size, size_t start, size_t count)
{
    if (count == 1) {
        snprintf(dst, size, "%zu", start + 1);
    } else {
        snprintf(dst, size, "%zu,%zu", count ? start + 1 : start, count);
    }
}

/* Writes the hunks of the script. */
static int diff_hunks(const struct diff_text *a, const struct diff_text *b,
                      const unsigned char *ops, size_t nops, const char *a_label,
                      const char *b_label, struct buf *out)
{
    size_t pos = 0;
    size_t ia = 0;
    size_t ib = 0;
    int st = BUF_OK;
    int headed = 0;
    while (st == BUF_OK) {
        size_t c = pos;
        size_t ca = ia;
        size_t cb = ib;
        while (c < nops && ops[c] == DIFF_EQUAL) {
            c++;
            ca++;
            cb++;
        }
        if (c == nops) {
            break;
        }
        size_t back = c - pos < DIFF_CONTEXT ? c - pos : DIFF_CONTEXT;
        size_t hs = c - back;
        size_t ha = ca - back;
        size_t hb = cb - back;
        size_t e = c;
        while (1) {
            while (e < nops && ops[e] != DIFF_EQUAL) {
                e++;
            }
            size_t run = e;
            while (run < nops && ops[run] == DIFF_EQUAL) {
                run++;
            }
            if (run < nops && run - e <= 2 * DIFF_CONTEXT) {
                e = run;
                continue;
            }
            e += run - e < DIFF_CONTEXT ? run - e : DIFF_CONTEXT;
            break;
        }
        size_t na = 0;
        size_t nb = 0;
        for (size_t i = hs; i < e; i++) {
            na += ops[i] != DIFF_INSERT;
            nb += ops[i] != DIFF_DELETE;
        }
        char ra[48];
        char rb[48];
        diff_range(ra, sizeof ra, ha, na);
        diff_range(rb, sizeof rb, hb, nb);
        if (!headed) {
            st = buf_printf(out, "--- %s\n+++ %s\n", a_label, b_label);
            headed = 1;
        }
        if (st == BUF_OK) {
            st = buf_printf(out, "@@ -%s +%s @@\n", ra, rb);
        }
        for (size_t i = hs; i < e && st == BUF_OK; i++) {
            if (ops[i] == DIFF_EQUAL) {
                st = diff_line_out(out, ' ', &a->lines[ha]);
                ha++;
                hb++;
            } else if (ops[i] == DIFF_DELETE) {
                st = diff_line_out(out, '-', &a->lines[ha]);
                ha++;
            } else {
                st = diff_line_out(out, '+', &b->lines[hb]);
                hb++;
            }
        }
        pos = e;
        ia = ha;
        ib = hb;
    }
    return st;
}

enum al_code diff_unified(const char *a, size_t a_len, const char *b, size_t b_len,
                          const char *a_label, const char *b_label, struct buf *out,
                          struct al_error *reterr)
{
    struct diff_text ta = { 0, NULL };
    struct diff_text tb = { 0, NULL };
    unsigned char *ops = NULL;
    enum al_code code = AL_INTERNAL_ERROR;
    if (diff_split(a, a_len, &ta) != 0 || diff_split(b, b_len, &tb) != 0) {
        goto out;
    }
    ops = malloc(ta.n + tb.n + 1);
    if (!ops) {
        goto out;
    }
    size_t p = 0;
    while (p < ta.n && p < tb.n && diff_eq(&ta.lines[p], &tb.lines[p])) {
        p++;
    }
    size_t s = 0;
    while (s < ta.n - p && s < tb.n - p &&
           diff_eq(&ta.lines[ta.n - 1 - s], &tb.lines[tb.n - 1 - s])) {
        s++;
    }
    size_t na = ta.n - p - s;
    size_t nb = tb.n - p - s;
    memset(ops, DIFF_EQUAL, p);
    size_t mid = 0;
    int found = 0;
    if (ta.n <= DIFF_LINES_MAX && tb.n <= DIFF_LINES_MAX) {
        found = diff_myers(ta.lines + p, na, tb.lines + p, nb, ops + p, &mid);
        if (found < 0) {
            goto out;
        }
    }
    if (!found) {
        memset(ops + p, DIFF_DELETE, na);
        memset(ops + p + na, DIFF_INSERT, nb);
        mid = na + nb;
    }
    memset(ops + p + mid, DIFF_EQUAL, s);
    int st = diff_hunks(&ta, &tb, ops, p + mid + s, a_label, b_label, out);
    if (st == BUF_OK) {
        code = AL_OK;
    } else if (st == BUF_TOO_BIG) {
        code = AL_OUTPUT_LIMIT;
    }
out:
    if (code != AL_OK && reterr) {
        reterr->code = code;
        reterr->sys_errno = 0;
        snprintf(reterr->message, sizeof reterr->message, "%s",
                 code == AL_OUTPUT_LIMIT ? "the diff is larger than its buffer's cap"
                                         : "out of memory");
    }
    free(ta.lines);
    free(tb.lines);
    free(ops);
    return code;
}
