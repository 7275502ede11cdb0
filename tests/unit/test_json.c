/*
 * test_json.c - unit tests for src/common/json.c: the strict parser (grammar, UTF-8, escapes,
 * numbers, depth, error offsets) and json_write_string (JSON.stringify's exact escaping).
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

/* clang-format on */

#include "buf.h"
#include "json.h"

/* Every text the tests parse is also checked with json_check, which must say the same. */
static struct json_doc *parse_ok(const char *text, size_t len, unsigned depth)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    enum al_code rc = json_parse(text, len, depth, &doc, &err);
    if (rc != AL_OK) {
        fail_msg("parse of <%.*s> failed: %s", (int)len, text, err.message);
    }
    rc = json_check(text, len, depth, &err);
    if (rc != AL_OK) {
        fail_msg("json_check of <%.*s> failed: %s", (int)len, text, err.message);
    }
    return doc;
}

static void expect_fail(const char *text, size_t len, const char *msg_prefix)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    enum al_code rc = json_parse(text, len, 64, &doc, &err);
    if (rc != AL_SERIALIZATION_ERROR) {
        fail_msg("<%.*s> should fail, got %d", (int)len, text, (int)rc);
    }
    assert_null(doc);
    assert_int_equal(err.code, AL_SERIALIZATION_ERROR);
    if (msg_prefix && strncmp(err.message, msg_prefix, strlen(msg_prefix)) != 0) {
        fail_msg("<%.*s>: message <%s> does not start with <%s>", (int)len, text, err.message,
                 msg_prefix);
    }
    struct al_error check_err = { 0 };
    if (json_check(text, len, 64, &check_err) != AL_SERIALIZATION_ERROR ||
        strcmp(check_err.message, err.message) != 0) {
        fail_msg("<%.*s>: json_check says <%s>, json_parse <%s>", (int)len, text, check_err.message,
                 err.message);
    }
}

static void test_json_scalars(void **state)
{
    (void)state;
    struct json_doc *doc = parse_ok(" \t\r\ntrue\n", 9, 8);
    assert_int_equal(json_root(doc)->type, JSON_TRUE);
    assert_int_equal(json_root(doc)->raw_len, 4);
    assert_memory_equal(json_root(doc)->raw, "true", 4);
    json_doc_free(doc);
    doc = parse_ok("false", 5, 8);
    assert_int_equal(json_root(doc)->type, JSON_FALSE);
    json_doc_free(doc);
    doc = parse_ok("null", 4, 0);
    assert_int_equal(json_root(doc)->type, JSON_NULL);
    json_doc_free(doc);
    doc = parse_ok("\"hi\"", 4, 0);
    assert_int_equal(json_root(doc)->type, JSON_STRING);
    assert_string_equal(json_root(doc)->str, "hi");
    assert_int_equal(json_root(doc)->str_len, 2);
    json_doc_free(doc);
    json_doc_free(NULL);
    assert_null(json_root(NULL));
}

static void test_json_containers(void **state)
{
    (void)state;
    const char *t = "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\",\"a\":false,\"\":{}}";
    struct json_doc *doc = parse_ok(t, strlen(t), 8);
    const struct json_node *r = json_root(doc);
    assert_int_equal(r->type, JSON_OBJECT);
    assert_int_equal(r->count, 4);
    assert_int_equal(r->raw_len, strlen(t));
    const struct json_node *a = json_get(r, "a");
    assert_non_null(a);
    assert_int_equal(a->type, JSON_ARRAY); /* first match */
    assert_int_equal(a->count, 3);
    assert_string_equal(a->key, "a");
    assert_int_equal(a->raw_len, strlen("[1,2,{\"b\":null}]"));
    const struct json_node *third = a->child->next->next;
    assert_int_equal(third->type, JSON_OBJECT);
    assert_int_equal(json_get(third, "b")->type, JSON_NULL);
    assert_null(third->next);
    assert_string_equal(json_get(r, "c")->str, "x");
    assert_int_equal(json_get(r, "")->type, JSON_OBJECT);
    assert_int_equal(json_get(r, "")->count, 0);
    assert_null(json_get(r, "zz"));
    assert_null(json_get(a, "a"));
    json_doc_free(doc);

    doc = parse_ok("[ ]", 3, 1);
    assert_int_equal(json_root(doc)->count, 0);
    assert_null(json_root(doc)->child);
    json_doc_free(doc);
}

static void test_json_strings(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *out;
        size_t out_len;
    } cases[] = {
        { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8 },
        { "\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6 },
        { "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4 },
        { "\"\\ud83d\"", "\xed\xa0\xbd", 3 },   /* lone high: WTF-8 */
        { "\"\\ude00x\"", "\xed\xb8\x80x", 4 }, /* lone low */
        { "\"\\ud83d\\u0041\"",
          "\xed\xa0\xbd"
          "A",
          4 },                                                   /* high then non-low */
        { "\"\\ude00\\ud83d\"", "\xed\xb8\x80\xed\xa0\xbd", 6 }, /* reversed pair */
        { "\"a\\u0000b\"", "a\0b", 3 },
        { "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"",
          "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", 13 },
        { "\"\x7f\"", "\x7f", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct json_doc *doc = parse_ok(cases[i].in, strlen(cases[i].in), 4);
        const struct json_node *r = json_root(doc);
        assert_int_equal(r->type, JSON_STRING);
        assert_int_equal(r->str_len, cases[i].out_len);
        assert_memory_equal(r->str, cases[i].out, cases[i].out_len);
        assert_int_equal(r->str[r->str_len], '\0');
        json_doc_free(doc);
    }
    /* keys are unescaped the same way */
    struct json_doc *doc = parse_ok("{\"k\\u00e9\":1}", 13, 4);
    assert_string_equal(json_root(doc)->child->key, "k\xc3\xa9");
    assert_int_equal(json_root(doc)->child->key_len, 3);
    json_doc_free(doc);
}

static void test_json_bad_strings(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len;
        const char *msg;
    } cases[] = {
        { "\"abc", 4, "offset 4: unterminated string" },
        { "\"a\\\"", 4, "offset 4: unterminated string" },
        { "\"\\x\"", 4, "offset 1: bad escape" },
        { "\"\\u12\"", 6, "offset 1: bad \\u escape" },
        { "\"\\u12G4\"", 8, "offset 1: bad \\u escape" },
        { "\"a\nb\"", 5, "offset 2: control character in string" },
        { "\"\t\"", 3, "offset 1: control character" },
        { "\"\x80\"", 3, "offset 1: invalid UTF-8" },
        { "\"\xc0\x80\"", 4, "offset 1: invalid UTF-8" },         /* overlong NUL */
        { "\"\xc1\xbf\"", 4, "offset 1: invalid UTF-8" },         /* overlong */
        { "\"\xe0\x80\xaf\"", 5, "offset 1: invalid UTF-8" },     /* overlong '/' */
        { "\"\xed\xa0\x80\"", 5, "offset 1: invalid UTF-8" },     /* raw surrogate */
        { "\"\xf4\x90\x80\x80\"", 6, "offset 1: invalid UTF-8" }, /* > U+10FFFF */
        { "\"\xf5\x80\x80\x80\"", 6, "offset 1: invalid UTF-8" },
        { "\"\xff\"", 3, "offset 1: invalid UTF-8" },
        { "\"ab\xe2\x82\"", 6, "offset 3: invalid UTF-8" }, /* truncated sequence */
        { "\"\xe2\x82", 3, "offset 3: unterminated string" },
        { "\"\\", 2, "offset 2: unterminated string" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_fail(cases[i].in, cases[i].len, cases[i].msg);
    }
}

static double num_of(const char *t)
{
    struct json_doc *doc = parse_ok(t, strlen(t), 2);
    assert_int_equal(json_root(doc)->type, JSON_NUMBER);
    assert_int_equal(json_root(doc)->raw_len, strlen(t));
    double d = json_root(doc)->num;
    json_doc_free(doc);
    return d;
}

static void test_json_numbers(void **state)
{
    (void)state;
    static const char *const corpus[] = {
        "0",
        "-0",
        "1",
        "-1",
        "0.1",
        "1e21",
        "-1.5e-7",
        "1E+2",
        "1e-2",
        "2.5E-3",
        "123456789012345678901234567890",
        "0.30000000000000004",
        "9007199254740993",
        "5e-324",
        "1.7976931348623157e308",
        "0.000001",
        "1e22",
        "1e23",
        "123.456e5",
        "4.35",
        "19.99",
        "0.1e-400",
        "1e400",
        "-1e400",
        "1.00000000000000011102230246251565404236316680908203125",
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        double want = strtod(corpus[i], NULL);
        double got = num_of(corpus[i]);
        if (memcmp(&want, &got, sizeof want) != 0) {
            fail_msg("%s: got %.17g want %.17g", corpus[i], got, want);
        }
    }
    double z = num_of("-0");
    assert_true(z == 0 && 1 / z < 0);
    static const char *const bad[] = { "01", "1.",   ".5",  "-",        "+1",  "1e",  "1e+", "0x10",
                                       "-a", "1.e5", "--1", "Infinity", "NaN", "1 2", "00" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_fail(bad[i], strlen(bad[i]), "offset ");
    }
}

/* An embedder's setlocale() must not change how "1.5" parses (strtod is locale-dependent). */
static void test_json_numbers_ignore_locale(void **state)
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
    double slow = num_of("1.2500000000000000000001"); /* too many digits: the strtod path */
    double fast = num_of("1.25");
    setlocale(LC_NUMERIC, "C");
    assert_true(slow == 1.25);
    assert_true(fast == 1.25);
}

static void test_json_errors_have_offsets(void **state)
{
    (void)state;
    expect_fail("", 0, "offset 0: unexpected end of input");
    expect_fail("   ", 3, "offset 3: unexpected end of input");
    expect_fail("[1,2", 4, "offset 4: unexpected end of input");
    expect_fail("[1,]", 4, "offset 3: unexpected character");
    expect_fail("[1 2]", 5, "offset 3: expected ',' or ']'");
    expect_fail("{\"a\" 1}", 7, "offset 5: expected ':'");
    expect_fail("{\"a\":1,}", 8, "offset 7: expected a string key");
    expect_fail("{a:1}", 5, "offset 1: expected a string key");
    expect_fail("{\"a\":1 \"b\":2}", 13, "offset 7: expected ',' or '}'");
    expect_fail("true false", 10, "offset 5: trailing characters");
    expect_fail("tru", 3, "offset 0: unexpected character");
    expect_fail("nul", 3, "offset 0: unexpected character");
    expect_fail("\xef\xbb\xbf{}", 5, "offset 0: unexpected character"); /* BOM */
    expect_fail("{} x", 4, "offset 3: trailing characters");
    expect_fail("[1]\0", 4, "offset 3: trailing characters");
    expect_fail("'a'", 3, "offset 0: unexpected character");
    expect_fail("[1,2,3]", 5, "offset 5: unexpected end of input"); /* len is honoured */
}

static void test_json_depth_bound(void **state)
{
    (void)state;
    struct json_doc *doc = parse_ok("[[[]]]", 6, 3);
    json_doc_free(doc);
    struct al_error err = { 0 };
    doc = NULL;
    assert_int_equal(json_parse("[[[]]]", 6, 2, &doc, &err), AL_SERIALIZATION_ERROR);
    assert_string_equal(err.message, "offset 2: nesting deeper than 2");
    assert_int_equal(json_check("[[[]]]", 6, 2, &err), AL_SERIALIZATION_ERROR);
    assert_string_equal(err.message, "offset 2: nesting deeper than 2");
    assert_null(doc);
    assert_int_equal(json_parse("{}", 2, 0, &doc, &err), AL_SERIALIZATION_ERROR);
    assert_int_equal(json_parse("1", 1, 0, &doc, &err), AL_OK);
    json_doc_free(doc);

    /* a deep document cannot exhaust the stack */
    size_t n = 1000000;
    char *deep = malloc(n);
    assert_non_null(deep);
    memset(deep, '[', n);
    doc = NULL;
    assert_int_equal(json_parse(deep, n, 512, &doc, &err), AL_SERIALIZATION_ERROR);
    assert_string_equal(err.message, "offset 512: nesting deeper than 512");
    assert_int_equal(json_check(deep, n, 512, &err), AL_SERIALIZATION_ERROR);
    assert_string_equal(err.message, "offset 512: nesting deeper than 512");
    free(deep);
}

static void test_json_null_reterr(void **state)
{
    (void)state;
    struct json_doc *doc = NULL;
    assert_int_equal(json_parse("[", 1, 4, &doc, NULL), AL_SERIALIZATION_ERROR);
    assert_null(doc);
}

/* Host answers on the hot path: 1,000 order objects. */
static void test_json_many_objects(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 24);
    assert_int_equal(buf_append_str(&b, "["), BUF_OK);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(
                buf_printf(&b,
                           "%s{\"id\":%d,\"sku\":\"SKU-%05d\",\"qty\":%d,\"price\":%d.%02d,"
                           "\"tags\":[\"a\",\"b\"],\"paid\":%s,\"note\":null}",
                           i ? "," : "", i, i, i % 7, i, i % 100, i % 2 ? "true" : "false"),
                BUF_OK);
    }
    assert_int_equal(buf_append_str(&b, "]"), BUF_OK);
    struct json_doc *doc = parse_ok(b.data, b.len, 8);
    const struct json_node *r = json_root(doc);
    assert_int_equal(r->count, 1000);
    const struct json_node *last = r->child;
    for (size_t i = 1; i < r->count; i++) {
        last = last->next;
    }
    assert_true(json_get(last, "id")->num == 999);
    assert_string_equal(json_get(last, "sku")->str, "SKU-00999");
    assert_true(json_get(last, "price")->num == 999.99);
    json_doc_free(doc);
    buf_done(&b);
}

static void expect_written(const char *in, size_t len, const char *want)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(json_write_string(&b, in, len), BUF_OK);
    assert_string_equal(b.data, want);
    buf_done(&b);
}

static void test_json_write_string(void **state)
{
    (void)state;
    expect_written("", 0, "\"\"");
    expect_written("plain text", 10, "\"plain text\"");
    expect_written("\"\\/", 3, "\"\\\"\\\\/\"");
    expect_written("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    expect_written("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
    expect_written("a\0b", 3, "\"a\\u0000b\"");
    expect_written("\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80", 9,
                   "\"\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\""); /* U+2028 stays raw */
    expect_written("\xed\xa0\xbd", 3, "\"\\ud83d\"");
    expect_written("x\xed\xb8\x80y", 5, "\"x\\ude00y\"");
    expect_written("\xed\xb8\x80\xed\xa0\xbd", 6, "\"\\ude00\\ud83d\"");
    expect_written("\xed\xa0\xbd\xed\xb8\x80", 6, "\"\xf0\x9f\x98\x80\""); /* CESU pair joined */
    expect_written("\xff", 1, "\"\xef\xbf\xbd\"");
    expect_written("\xc3", 1, "\"\xef\xbf\xbd\"");
}

static void test_json_write_string_roundtrip(void **state)
{
    (void)state;
    /* every byte string the parser produces is written back to text that parses to it */
    const char *t = "\"\\u0000\\u001f \\\" \\\\ \\ud800 \\udfff \\ud83d\\ude00 \xc3\xa9 \"";
    struct json_doc *doc = parse_ok(t, strlen(t), 1);
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(json_write_string(&b, json_root(doc)->str, json_root(doc)->str_len), BUF_OK);
    assert_string_equal(b.data,
                        "\"\\u0000\\u001f \\\" \\\\ \\ud800 \\udfff \xf0\x9f\x98\x80 \xc3\xa9 \"");
    struct json_doc *doc2 = parse_ok(b.data, b.len, 1);
    assert_int_equal(json_root(doc2)->str_len, json_root(doc)->str_len);
    assert_memory_equal(json_root(doc2)->str, json_root(doc)->str, json_root(doc)->str_len);
    json_doc_free(doc2);
    json_doc_free(doc);
    buf_done(&b);
}

/* A string that does not fit leaves no half-escaped string behind: the buffer is poisoned
 * (empty, every later append failing) until the owner starts over. */
static void test_json_write_string_all_or_nothing(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 10);
    assert_int_equal(buf_append_str(&b, "ab"), BUF_OK);
    assert_int_equal(json_write_string(&b, "\n\n\n\n", 4), BUF_TOO_BIG); /* needs 10 more */
    assert_true(buf_failed(&b));
    assert_null(b.data);
    assert_int_equal(json_write_string(&b, "1", 1), BUF_TOO_BIG);
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "ab"), BUF_OK);
    assert_int_equal(json_write_string(&b, "123456", 6), BUF_OK); /* exactly 8: fits */
    assert_string_equal(b.data, "ab\"123456\"");
    buf_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_scalars),
        cmocka_unit_test(test_json_containers),
        cmocka_unit_test(test_json_strings),
        cmocka_unit_test(test_json_bad_strings),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_numbers_ignore_locale),
        cmocka_unit_test(test_json_errors_have_offsets),
        cmocka_unit_test(test_json_depth_bound),
        cmocka_unit_test(test_json_null_reterr),
        cmocka_unit_test(test_json_many_objects),
        cmocka_unit_test(test_json_write_string),
        cmocka_unit_test(test_json_write_string_roundtrip),
        cmocka_unit_test(test_json_write_string_all_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
