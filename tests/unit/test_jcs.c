/*
 * test_jcs.c - unit tests for src/gov/jcs.c: RFC 8785's number table (appendix B) and its
 * examples (3.2.2 whole document, 3.2.3 member sorting), escapes, I-JSON refusals, the omitted
 * member, and output independent of the locale.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jcs.h"
#include "json.h"

static double from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static void expect_number(uint64_t bits, const char *want)
{
    char out[JCS_NUMBER_MAX];
    assert_int_equal(jcs_number(from_bits(bits), out), AL_OK);
    if (strcmp(out, want) != 0) {
        fail_msg("0x%016llx: got %s, want %s", (unsigned long long)bits, out, want);
    }
}

/* RFC 8785 appendix B, every row. */
static void test_jcs_numbers_rfc8785_table(void **state)
{
    (void)state;
    static const struct {
        uint64_t bits;
        const char *text;
    } rows[] = {
        { 0x0000000000000000ull, "0" },
        { 0x8000000000000000ull, "0" },
        { 0x0000000000000001ull, "5e-324" },
        { 0x8000000000000001ull, "-5e-324" },
        { 0x7fefffffffffffffull, "1.7976931348623157e+308" },
        { 0xffefffffffffffffull, "-1.7976931348623157e+308" },
        { 0x4340000000000000ull, "9007199254740992" },
        { 0xc340000000000000ull, "-9007199254740992" },
        { 0x4430000000000000ull, "295147905179352830000" },
        { 0x44b52d02c7e14af5ull, "9.999999999999997e+22" },
        { 0x44b52d02c7e14af6ull, "1e+23" },
        { 0x44b52d02c7e14af7ull, "1.0000000000000001e+23" },
        { 0x444b1ae4d6e2ef4eull, "999999999999999700000" },
        { 0x444b1ae4d6e2ef4full, "999999999999999900000" },
        { 0x444b1ae4d6e2ef50ull, "1e+21" },
        { 0x3eb0c6f7a0b5ed8cull, "9.999999999999997e-7" },
        { 0x3eb0c6f7a0b5ed8dull, "0.000001" },
        { 0x41b3de4355555553ull, "333333333.3333332" },
        { 0x41b3de4355555554ull, "333333333.33333325" },
        { 0x41b3de4355555555ull, "333333333.3333333" },
        { 0x41b3de4355555556ull, "333333333.3333334" },
        { 0x41b3de4355555557ull, "333333333.33333343" },
        { 0xbecbf647612f3696ull, "-0.0000033333333333333333" },
        { 0x43143ff3c1cb0959ull, "1424953923781206.2" },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        expect_number(rows[i].bits, rows[i].text);
    }
}

/* Powers of two, where the doubles below are twice as dense as above: the nearest 16-digit
 * decimal does not read back, the one above it does (found by comparing 650,000 doubles with
 * Python's repr, which is shortest-nearest too). */
static void test_jcs_numbers_at_powers_of_two(void **state)
{
    (void)state;
    expect_number(0x0060000000000000ull, "7.120236347223045e-307");
    expect_number(0x0100000000000000ull, "7.291122019556398e-304");
    expect_number(0x13e0000000000000ull, "5.940911144672375e-213");
    expect_number(0x3ff0000000000000ull, "1");
    expect_number(0x4000000000000000ull, "2");
    expect_number(0x0010000000000000ull, "2.2250738585072014e-308");
}

static char *canon(const char *text, const char *omit)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    struct buf b;
    buf_init(&b, 1 << 20);
    if (json_parse(text, strlen(text), 64, &doc, &err) != AL_OK) {
        fail_msg("parse of <%s>: %s", text, err.message);
    }
    if (jcs_write(&b, json_root(doc), omit, &err) != AL_OK) {
        fail_msg("jcs of <%s>: %s", text, err.message);
    }
    json_doc_free(doc);
    char *s = buf_steal(&b, NULL);
    return s ? s : calloc(1, 1);
}

static void expect_canon(const char *text, const char *want)
{
    char *got = canon(text, NULL);
    if (strcmp(got, want) != 0) {
        fail_msg("<%s>: got <%s>, want <%s>", text, got, want);
    }
    free(got);
}

static void test_jcs_numbers_in_text(void **state)
{
    (void)state;
    expect_canon(
            "[1e30, 4.50, 2e-3, 0.000001, -0, 333333333.3333333, 1E-7, 100, 1e21, 1e20]",
            "[1e+30,4.5,0.002,0.000001,0,333333333.3333333,1e-7,100,1e+21,100000000000000000000]");
    expect_canon("[0.1, -1.5, 123456789012345678901234567890, 5e-324, 1.0]",
                 "[0.1,-1.5,1.2345678901234568e+29,5e-324,1]");
}

/* RFC 8785 3.2.2: whitespace, number forms, string escapes, literals, sorted members. */
static void test_jcs_rfc8785_example(void **state)
{
    (void)state;
    expect_canon("{\n  \"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, "
                 "0.000000000000000000000000001],\n"
                 "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
                 "  \"literals\": [null, true, false]\n}",
                 "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,"
                 "1e-27],\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

/* RFC 8785 3.2.3: members sort by UTF-16 code units, so U+1F600 (D83D DE00) sorts before
 * U+FB33 although its code point is larger. */
static void test_jcs_sorts_by_utf16(void **state)
{
    (void)state;
    expect_canon("{\"\\u20ac\":\"Euro Sign\",\"\\r\":\"Carriage Return\",\"\\ufb33\":\"Dalet\","
                 "\"1\":\"One\",\"\\ud83d\\ude00\":\"Emoji\",\"\\u0080\":\"Control\","
                 "\"\\u00f6\":\"o\"}",
                 "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
                 "\"\xc3\xb6\":\"o\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji\","
                 "\"\xef\xac\xb3\":\"Dalet\"}");
    /* A prefix sorts first; nested objects are sorted too; arrays keep their order. */
    expect_canon("{\"ab\":1,\"a\":{\"z\":1,\"y\":[3,2,1]},\"\":0}",
                 "{\"\":0,\"a\":{\"y\":[3,2,1],\"z\":1},\"ab\":1}");
}

static void test_jcs_escapes(void **state)
{
    (void)state;
    /* Controls as \u00xx lowercase except the short forms; / and non-ASCII as is. */
    expect_canon("\"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f \\u007f/\\u00e9\"",
                 "\"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f \x7f/\xc3\xa9\"");
}

static void expect_refused(const char *text, const char *why)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(json_parse(text, strlen(text), 64, &doc, &err), AL_OK);
    assert_int_equal(jcs_write(&b, json_root(doc), NULL, &err), AL_SERIALIZATION_ERROR);
    if (!strstr(err.message, why)) {
        fail_msg("<%s>: message <%s> lacks <%s>", text, err.message, why);
    }
    json_doc_free(doc);
    buf_done(&b);
}

static void test_jcs_refuses_non_ijson(void **state)
{
    (void)state;
    expect_refused("{\"a\":1,\"b\":2,\"a\":3}", "duplicate key \"a\"");
    expect_refused("[{\"x\":{\"k\":1,\"k\":1}}]", "duplicate key \"k\"");
    expect_refused("\"\\ud800\"", "lone surrogate");
    expect_refused("{\"\\udc00\":1}", "lone surrogate");
    expect_refused("[1e400]", "outside the range");
    char out[JCS_NUMBER_MAX];
    assert_int_equal(jcs_number(from_bits(0x7ff0000000000000ull), out), AL_CONFIG_ERROR);
    assert_string_equal(out, "");
}

static void test_jcs_omits_top_level_member(void **state)
{
    (void)state;
    char *got = canon("{\"hash\":\"x\",\"b\":{\"hash\":1},\"a\":2}", "hash");
    assert_string_equal(got, "{\"a\":2,\"b\":{\"hash\":1}}");
    free(got);
    got = canon("[{\"hash\":1}]", "hash");
    assert_string_equal(got, "[{\"hash\":1}]");
    free(got);
}

static void test_jcs_output_limit(void **state)
{
    (void)state;
    struct json_doc *doc = NULL;
    struct buf b;
    buf_init(&b, 4);
    assert_int_equal(json_parse("[1,2,3]", 7, 8, &doc, NULL), AL_OK);
    assert_int_equal(jcs_write(&b, json_root(doc), NULL, NULL), AL_OUTPUT_LIMIT);
    json_doc_free(doc);
    buf_done(&b);
}

/* A comma-decimal locale changes neither digits nor separators. */
static void test_jcs_numbers_ignore_locale(void **state)
{
    (void)state;
    static const char *const locales[] = { "de_DE.UTF-8", "fr_FR.UTF-8", "ru_RU.UTF-8" };
    const char *set = NULL;
    for (size_t i = 0; i < sizeof locales / sizeof locales[0] && !set; i++) {
        set = setlocale(LC_NUMERIC, locales[i]);
    }
    if (!set) { /* ctest's setup.locale makes one (LOCPATH): never pass without the check */
        fail_msg("no comma-decimal locale: localedef -i de_DE -f UTF-8 de_DE.UTF-8");
    }
    char out[JCS_NUMBER_MAX];
    enum al_code rc = jcs_number(4.5, out);
    char big[JCS_NUMBER_MAX];
    enum al_code rc2 = jcs_number(1.0000000000000001e+23, big);
    setlocale(LC_NUMERIC, "C");
    assert_int_equal(rc, AL_OK);
    assert_string_equal(out, "4.5");
    assert_int_equal(rc2, AL_OK);
    assert_string_equal(big, "1.0000000000000001e+23");
}

/* Integers below 2^53 print as their own digits; the neighbours of 2^53 on both paths. */
static void test_jcs_numbers_integers(void **state)
{
    (void)state;
    char out[JCS_NUMBER_MAX];
    char want[64];
    static const double edges[] = { 1.0,
                                    9.0,
                                    10.0,
                                    100.0,
                                    1e15,
                                    123456789.0,
                                    4294967296.0,
                                    9007199254740991.0,
                                    9007199254740992.0,
                                    9007199254740994.0,
                                    1e21,
                                    1e22 };
    static const char *const edge_want[] = { "1",
                                             "9",
                                             "10",
                                             "100",
                                             "1000000000000000",
                                             "123456789",
                                             "4294967296",
                                             "9007199254740991",
                                             "9007199254740992",
                                             "9007199254740994",
                                             "1e+21",
                                             "1e+22" };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        assert_int_equal(jcs_number(edges[i], out), AL_OK);
        assert_string_equal(out, edge_want[i]);
        assert_int_equal(jcs_number(-edges[i], out), AL_OK);
        assert_true(out[0] == '-');
        assert_string_equal(out + 1, edge_want[i]);
    }
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d = (double)(x >> (11 + i % 50)); /* integers of every size below 2^53 */
        assert_int_equal(jcs_number(d, out), AL_OK);
        snprintf(want, sizeof want, "%.0f", d);
        assert_string_equal(out, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jcs_numbers_rfc8785_table),
        cmocka_unit_test(test_jcs_numbers_at_powers_of_two),
        cmocka_unit_test(test_jcs_numbers_in_text),
        cmocka_unit_test(test_jcs_rfc8785_example),
        cmocka_unit_test(test_jcs_sorts_by_utf16),
        cmocka_unit_test(test_jcs_escapes),
        cmocka_unit_test(test_jcs_refuses_non_ijson),
        cmocka_unit_test(test_jcs_omits_top_level_member),
        cmocka_unit_test(test_jcs_output_limit),
        cmocka_unit_test(test_jcs_numbers_ignore_locale),
        cmocka_unit_test(test_jcs_numbers_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
