/*
 * unit.utf8 - the texts libairlock hands to C callers: well-formed UTF-8 whatever the worker
 * sent, never longer than what it sent, with NUL kept (and restored from C0 80 in error texts).
 */
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

#include "utf8.h"

static void expect_copy(const char *in, size_t in_len, unsigned flags, const char *want,
                        size_t want_len)
{
    size_t len = 99;
    char *out = utf8_valid_dup(in, in_len, flags, &len);
    assert_non_null(out);
    assert_int_equal(len, want_len);
    assert_memory_equal(out, want, want_len);
    assert_int_equal(out[len], '\0');
    free(out);
}

static void test_utf8_valid_text_is_copied_as_is(void **state)
{
    (void)state;
    expect_copy("", 0, 0, "", 0);
    expect_copy("plain", 5, 0, "plain", 5);
    expect_copy("caf\xC3\xA9 \xF0\x9F\x98\x80", 10, 0, "caf\xC3\xA9 \xF0\x9F\x98\x80", 10);
    expect_copy("a\0b", 3, 0, "a\0b", 3); /* NUL is text too */
}

static void test_utf8_lone_surrogates_become_replacement(void **state)
{
    (void)state;
    /* CESU-8 of U+D800 and U+DFFF, as QuickJS gives a lone surrogate */
    expect_copy("a\xED\xA0\x80z", 5, 0, "a\xEF\xBF\xBDz", 5);
    expect_copy("\xED\xBF\xBF", 3, 0, "\xEF\xBF\xBD", 3);
}

static void test_utf8_ill_formed_bytes_are_replaced_within_the_length(void **state)
{
    (void)state;
    /* a stray continuation, an overlong form, a cut sequence, a byte above F4: each U+FFFD, but
     * the copy never grows past the input (what does not fit is cut at a character) */
    expect_copy("\x80xyzw", 5, 0, "\xEF\xBF\xBDxy", 5);
    expect_copy("abc\xF5\x80\x80", 6, 0, "abc\xEF\xBF\xBD", 6);
    expect_copy("\xE2\x82", 2, 0, "", 0); /* a cut sequence: no room for its replacement */
    expect_copy("ab\x80", 3, 0, "ab", 2);
    expect_copy("\xC0\xAFxyz", 5, 0, "\xEF\xBF\xBD", 3); /* an overlong '/' is two bad bytes */
}

static void test_utf8_c080_is_nul_only_when_asked(void **state)
{
    (void)state;
    expect_copy("a\xC0\x80"
                "b",
                4, UTF8_C080_IS_NUL, "a\0b", 3);
    expect_copy("a\xC0\x80"
                "b",
                4, 0, "a\xEF\xBF\xBD", 4); /* C0 and 80 are two bad bytes: one replacement fits */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_valid_text_is_copied_as_is),
        cmocka_unit_test(test_utf8_lone_surrogates_become_replacement),
        cmocka_unit_test(test_utf8_ill_formed_bytes_are_replaced_within_the_length),
        cmocka_unit_test(test_utf8_c080_is_nul_only_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
