/* unit.buf - the capped byte buffer (src/common/buf.c): every append fits under the cap or
 * fails and poisons the buffer (empty, every later append failing) until a reset, and the
 * content stays NUL-terminated. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>

#include "buf.h"

static void test_buf_append_exactly_to_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "abcd", 4), BUF_OK);
    assert_int_equal(buf_append_str(&b, "efgh"), BUF_OK);
    assert_int_equal(b.len, 8);
    assert_string_equal(b.data, "abcdefgh");
    buf_done(&b);
}

/* A document cut short never goes out: after one failed append the buffer holds nothing and
 * every later append, however small, fails the same way - so `{"a":1` + (too big) + `}` can
 * never become the valid-looking `{"a":1}`. */
static void test_buf_append_past_cap_poisons_the_buffer(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "{\"a\":1", 6), BUF_OK);
    assert_false(buf_failed(&b));
    assert_int_equal(buf_append(&b, "xyz", 3), BUF_TOO_BIG);
    assert_true(buf_failed(&b));
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(buf_append_byte(&b, '}'), BUF_TOO_BIG);
    assert_int_equal(buf_append_str(&b, ""), BUF_TOO_BIG);
    assert_int_equal(buf_printf(&b, "%d", 1), BUF_TOO_BIG);
    enum buf_status st = BUF_OK;
    assert_null(buf_reserve(&b, 1, &st));
    assert_int_equal(st, BUF_TOO_BIG);
    assert_null(b.data);
    assert_null(buf_steal(&b, NULL));
    /* the owner starts over: the poison is gone */
    buf_reset(&b);
    assert_false(buf_failed(&b));
    assert_int_equal(buf_append_str(&b, "error"), BUF_OK);
    assert_string_equal(b.data, "error");
    buf_done(&b);
}

static void test_buf_huge_length_does_not_wrap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, SIZE_MAX);
    assert_int_equal(buf_append(&b, "a", 1), BUF_OK);
    enum buf_status st = BUF_OK;
    /* len + SIZE_MAX would wrap around to a small size */
    assert_null(buf_reserve(&b, SIZE_MAX, &st));
    assert_int_not_equal(st, BUF_OK);
    assert_true(buf_failed(&b));
    assert_int_equal(b.len, 0);
    assert_null(b.data);
    buf_done(&b);
}

static void test_buf_growth_keeps_content(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    for (int i = 0; i < 100000; i++) {
        assert_int_equal(buf_append_byte(&b, (uint8_t)('a' + i % 26)), BUF_OK);
    }
    assert_int_equal(b.len, 100000);
    for (size_t i = 0; i < b.len; i++) {
        assert_int_equal(b.data[i], 'a' + (int)(i % 26));
    }
    assert_int_equal(b.data[b.len], '\0');
    buf_done(&b);
}

static void test_buf_printf_long_output(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    /* longer than buf_printf's 256-byte scratch */
    assert_int_equal(buf_printf(&b, "<%s|%d>", big, 42), BUF_OK);
    assert_int_equal(b.len, 1 + 999 + 4);
    assert_memory_equal(b.data + 1000, "|42>", 4);
    assert_int_equal(b.data[b.len], '\0');
    buf_done(&b);
}

static void test_buf_reserve_commit(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 16);
    enum buf_status st;
    char *p = buf_reserve(&b, 5, &st);
    assert_non_null(p);
    memcpy(p, "hello", 5);
    buf_commit(&b, 5);
    assert_string_equal(b.data, "hello");
    assert_null(buf_reserve(&b, 12, &st));
    assert_int_equal(st, BUF_TOO_BIG);
    assert_true(buf_failed(&b));
    assert_int_equal(b.len, 0);
    buf_done(&b);
}

static void test_buf_steal_hands_over_and_empties(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 16);
    size_t len = 99;
    assert_null(buf_steal(&b, &len));
    assert_int_equal(len, 0);
    assert_int_equal(buf_append_str(&b, "abc"), BUF_OK);
    char *s = buf_steal(&b, &len);
    assert_string_equal(s, "abc");
    assert_int_equal(len, 3);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    /* the buffer is usable again, with its cap */
    assert_int_equal(buf_append_str(&b, "0123456789abcdef"), BUF_OK);
    assert_int_equal(buf_append_byte(&b, 'x'), BUF_TOO_BIG);
    free(s);
    buf_done(&b);
}

static void test_buf_reset_keeps_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4);
    assert_int_equal(buf_append_str(&b, "abcd"), BUF_OK);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(buf_append_str(&b, "wxyz"), BUF_OK);
    assert_int_equal(buf_append_byte(&b, '!'), BUF_TOO_BIG);
    buf_done(&b);
    buf_done(&b); /* done twice is harmless: it leaves an empty buffer */
}

static void test_buf_dup_binary_and_empty(void **state)
{
    (void)state;
    char *p = buf_dup("a\0b", 3);
    assert_non_null(p);
    assert_memory_equal(p, "a\0b", 3);
    assert_int_equal(p[3], '\0');
    free(p);
    p = buf_dup(NULL, 0);
    assert_non_null(p);
    assert_string_equal(p, "");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_append_exactly_to_cap),
        cmocka_unit_test(test_buf_append_past_cap_poisons_the_buffer),
        cmocka_unit_test(test_buf_huge_length_does_not_wrap),
        cmocka_unit_test(test_buf_growth_keeps_content),
        cmocka_unit_test(test_buf_printf_long_output),
        cmocka_unit_test(test_buf_reserve_commit),
        cmocka_unit_test(test_buf_steal_hands_over_and_empties),
        cmocka_unit_test(test_buf_reset_keeps_cap),
        cmocka_unit_test(test_buf_dup_binary_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
