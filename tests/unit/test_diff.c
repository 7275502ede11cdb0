/* unit.diff - unified diffs (src/gov/diff.c): exact output for the usual cases (one change,
 * hunks merged or split by their context, empty texts, a missing final newline, identical
 * texts), and for random texts that the diff applied to the old text gives the new one with as
 * few changed lines as the longest common subsequence allows; large inputs stay bounded. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff.h"

static char *diff_of(const char *a, const char *b)
{
    struct buf out;
    struct al_error err;
    buf_init(&out, (size_t)64 << 20);
    assert_int_equal(diff_unified(a, strlen(a), b, strlen(b), "a", "b", &out, &err), AL_OK);
    char *s = strdup(out.data ? out.data : "");
    buf_done(&out);
    return s;
}

static void expect_diff(const char *a, const char *b, const char *want)
{
    char *got = diff_of(a, b);
    assert_string_equal(got, want);
    free(got);
}

static void test_diff_identical_is_empty(void **state)
{
    (void)state;
    expect_diff("", "", "");
    expect_diff("a\nb\n", "a\nb\n", "");
    expect_diff("no newline", "no newline", "");
}

static void test_diff_one_change(void **state)
{
    (void)state;
    expect_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
                "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

static void test_diff_empty_sides(void **state)
{
    (void)state;
    expect_diff("", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    expect_diff("x\ny\n", "", "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    expect_diff("", "x\n", "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n");
}

static void test_diff_no_trailing_newline(void **state)
{
    (void)state;
    expect_diff("a\nb", "a\nb\n",
                "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    expect_diff("a\n", "a\nc",
                "--- a\n+++ b\n@@ -1 +1,2 @@\n a\n+c\n\\ No newline at end of file\n");
}

static void test_diff_hunks_merge_and_split(void **state)
{
    (void)state;
    /* 6 equal lines between changes: one hunk; 7: two */
    expect_diff("x\n1\n2\n3\n4\n5\n6\ny\n", "X\n1\n2\n3\n4\n5\n6\nY\n",
                "--- a\n+++ b\n@@ -1,8 +1,8 @@\n-x\n+X\n 1\n 2\n 3\n 4\n 5\n 6\n-y\n+Y\n");
    expect_diff("x\n1\n2\n3\n4\n5\n6\n7\ny\n", "X\n1\n2\n3\n4\n5\n6\n7\nY\n",
                "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-x\n+X\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n"
                " 7\n-y\n+Y\n");
}

/* Applies a unified diff to `a`; returns the result (malloc'd) and the changed lines. */
static char *apply(const char *a, const char *diff, size_t *ret_changes)
{
    size_t cap = strlen(a) + strlen(diff) + 1;
    char *out = calloc(1, cap);
    const char *ap = a;
    const char *p = diff;
    size_t aline = 1;
    size_t changes = 0;
    size_t o = 0;
    char last = ' ';
    if (*p) {
        p = strchr(p, '\n') + 1;
        p = strchr(p, '\n') + 1;
    }
    while (*p) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol);
        if (p[0] == '@') {
            size_t start = 0;
            size_t count = 1;
            assert_true(sscanf(p, "@@ -%zu", &start) == 1);
            const char *comma = strchr(p + 4, ',');
            const char *space = strchr(p + 4, ' ');
            if (comma && comma < space) {
                count = strtoul(comma + 1, NULL, 10);
            }
            size_t target = count ? start : start + 1;
            while (aline < target) {
                const char *nl = strchr(ap, '\n');
                size_t n = nl ? (size_t)(nl - ap + 1) : strlen(ap);
                memcpy(out + o, ap, n);
                o += n;
                ap += n;
                aline++;
            }
        } else if (p[0] == '\\') {
            /* the previous output line had no newline */
            if (last != '-') {
                o--;
            }
        } else {
            size_t n = (size_t)(eol - p);
            if (p[0] == ' ' || p[0] == '-') {
                size_t an = strchr(ap, '\n') ? (size_t)(strchr(ap, '\n') - ap + 1) : strlen(ap);
                ap += an;
                aline++;
            }
            if (p[0] == ' ' || p[0] == '+') {
                memcpy(out + o, p + 1, n - 1);
                o += n - 1;
                out[o++] = '\n';
            }
            changes += p[0] != ' ';
            last = p[0];
        }
        p = eol + 1;
    }
    memcpy(out + o, ap, strlen(ap));
    o += strlen(ap);
    out[o] = '\0';
    *ret_changes = changes;
    return out;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += *s == '\n';
    }
    return n;
}

/* texts of n lines from a small alphabet, each ending in '\n' */
static char *random_text(unsigned *seed, size_t n)
{
    char *s = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = (char)('a' + rand_r(seed) % 4);
        s[2 * i + 1] = '\n';
    }
    s[2 * n] = '\0';
    return s;
}

static size_t lcs(const char *a, const char *b)
{
    size_t n = strlen(a) / 2;
    size_t m = strlen(b) / 2;
    size_t *row = calloc((m + 1) * (n + 1), sizeof *row);
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t *c = &row[i * (m + 1) + j];
            if (a[2 * (i - 1)] == b[2 * (j - 1)]) {
                *c = row[(i - 1) * (m + 1) + j - 1] + 1;
            } else {
                size_t up = row[(i - 1) * (m + 1) + j];
                size_t left = row[i * (m + 1) + j - 1];
                *c = up > left ? up : left;
            }
        }
    }
    size_t r = row[n * (m + 1) + m];
    free(row);
    return r;
}

static void test_diff_random_applies_and_is_minimal(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (int round = 0; round < 400; round++) {
        size_t n = (size_t)(rand_r(&seed) % 30);
        size_t m = (size_t)(rand_r(&seed) % 30);
        char *a = random_text(&seed, n);
        char *b = random_text(&seed, m);
        char *d = diff_of(a, b);
        size_t changes = 0;
        char *back = apply(a, d, &changes);
        assert_string_equal(back, b);
        assert_int_equal(changes, n + m - 2 * lcs(a, b));
        free(a);
        free(b);
        free(d);
        free(back);
    }
}

static void test_diff_large_inputs_are_bounded(void **state)
{
    (void)state;
    /* every line differs: past DIFF_EDITS_MAX the middle is one replacement, in linear time */
    size_t n = 30000;
    struct buf a;
    struct buf b;
    buf_init(&a, (size_t)16 << 20);
    buf_init(&b, (size_t)16 << 20);
    for (size_t i = 0; i < n; i++) {
        buf_printf(&a, "a%zu\n", i);
        buf_printf(&b, "b%zu\n", i);
    }
    clock_t t0 = clock();
    char *d = diff_of(a.data, b.data);
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
    size_t changes = 0;
    char *back = apply(a.data, d, &changes);
    assert_string_equal(back, b.data);
    assert_int_equal(changes, 2 * n);
    assert_int_equal(count_lines(d), 2 * n + 3);
    free(d);
    free(back);
    /* a few changes in a long text: minimal up to DIFF_LINES_MAX lines, past it the span from
     * the first change to the last is replaced, still a diff that applies */
    buf_reset(&b);
    for (size_t i = 0; i < n; i++) {
        buf_printf(&b, i % 5000 == 17 ? "changed%zu\n" : "a%zu\n", i);
    }
    d = diff_of(a.data, b.data);
    back = apply(a.data, d, &changes);
    assert_string_equal(back, b.data);
    assert_int_equal(changes, 2 * (25017 - 17 + 1));
    free(d);
    free(back);
    size_t cut = 0;
    for (size_t i = 0, lines = 0; lines < DIFF_LINES_MAX; i++) {
        lines += a.data[i] == '\n';
        cut = i + 1;
    }
    char *a2 = strndup(a.data, cut);
    char *b2 = strndup(b.data, cut + (strlen(b.data) - strlen(a.data)) * 4 / 6);
    assert_int_equal(count_lines(a2), DIFF_LINES_MAX);
    assert_int_equal(count_lines(b2), DIFF_LINES_MAX);
    d = diff_of(a2, b2);
    back = apply(a2, d, &changes);
    assert_string_equal(back, b2);
    assert_int_equal(changes, 8); /* lines 17, 5017, 10017, 15017 */
    assert_non_null(strstr(d, "@@ -15015,7 +15015,7 @@\n"));
    free(a2);
    free(b2);
    free(d);
    free(back);
    buf_done(&a);
    buf_done(&b);
}

static void test_diff_output_cap(void **state)
{
    (void)state;
    struct buf out;
    struct al_error err;
    buf_init(&out, 16);
    assert_int_equal(diff_unified("a\n", 2, "b\n", 2, "left-label", "right-label", &out, &err),
                     AL_OUTPUT_LIMIT);
    assert_int_equal(err.code, AL_OUTPUT_LIMIT);
    buf_done(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_identical_is_empty),
        cmocka_unit_test(test_diff_one_change),
        cmocka_unit_test(test_diff_empty_sides),
        cmocka_unit_test(test_diff_no_trailing_newline),
        cmocka_unit_test(test_diff_hunks_merge_and_split),
        cmocka_unit_test(test_diff_random_applies_and_is_minimal),
        cmocka_unit_test(test_diff_large_inputs_are_bounded),
        cmocka_unit_test(test_diff_output_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
