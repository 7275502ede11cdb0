/*
 * unit.schema - the template input schema subset (src/gov/schema.h): every keyword accepting
 * and refusing with its exact message and path, what compile refuses (unsupported keywords,
 * wrong value types, depth, dangerous patterns), code-point lengths and JSON equality.
 */
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

#include "json.h"
#include "schema.h"

static struct schema *compile_ok(const char *text)
{
    struct schema *s = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code rc = schema_compile(text, strlen(text), &s, &err);
    if (rc != AL_OK) {
        fail_msg("schema %s refused: %s", text, err.message);
    }
    assert_non_null(s);
    return s;
}

static void expect_refused(const char *text, const char *message)
{
    struct schema *s = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(schema_compile(text, strlen(text), &s, &err), AL_CONFIG_ERROR);
    assert_null(s);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    if (message) {
        assert_string_equal(err.message, message);
    }
}

static void expect_valid(const char *schema, const char *instance)
{
    struct schema *s = compile_ok(schema);
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code rc = schema_validate(s, instance, strlen(instance), &err);
    if (rc != AL_OK) {
        fail_msg("%s against %s: %s", instance, schema, err.message);
    }
    schema_free(s);
}

static void expect_invalid(const char *schema, const char *instance, const char *message)
{
    struct schema *s = compile_ok(schema);
    struct al_error err;
    memset(&err, 0, sizeof err);
    enum al_code rc = schema_validate(s, instance, strlen(instance), &err);
    if (rc != AL_CONFIG_ERROR) {
        fail_msg("%s against %s: code %d, expected refusal '%s'", instance, schema, rc, message);
    }
    assert_string_equal(err.message, message);
    schema_free(s);
}

static void test_schema_type(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"null\"}", "null");
    expect_valid("{\"type\":\"boolean\"}", "false");
    expect_valid("{\"type\":\"object\"}", "{}");
    expect_valid("{\"type\":\"array\"}", "[1]");
    expect_valid("{\"type\":\"number\"}", "1.5");
    expect_valid("{\"type\":\"number\"}", "3");
    expect_valid("{\"type\":\"string\"}", "\"x\"");
    expect_valid("{\"type\":\"integer\"}", "3");
    expect_valid("{\"type\":\"integer\"}", "3.0");
    expect_valid("{\"type\":\"integer\"}", "-1e3");
    expect_valid("{\"type\":[\"string\",\"null\"]}", "null");
    expect_valid("{}", "[{\"anything\":true}]");
    expect_valid("true", "1");
    expect_invalid("{\"type\":\"integer\"}", "3.5", "(root): must be integer");
    expect_invalid("{\"type\":\"integer\"}", "1e400", "(root): must be integer");
    expect_invalid("{\"type\":\"number\"}", "\"1\"", "(root): must be number");
    expect_invalid("{\"type\":\"boolean\"}", "0", "(root): must be boolean");
    expect_invalid("{\"type\":\"null\"}", "false", "(root): must be null");
    expect_invalid("{\"type\":\"object\"}", "[]", "(root): must be object");
    expect_invalid("{\"type\":\"array\"}", "{}", "(root): must be array");
    expect_invalid("{\"type\":[\"string\",\"null\"]}", "1", "(root): must be null or string");
    expect_invalid("false", "1", "(root): is not allowed (schema false)");
}

static void test_schema_properties_and_paths(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\","
                    "\"items\":{\"type\":\"object\",\"properties\":{\"amount\":{\"type\":"
                    "\"number\",\"minimum\":0}}}}}}";
    expect_valid(s, "{\"items\":[{\"amount\":1},{\"amount\":0},{}]}");
    expect_invalid(s, "{\"items\":[{\"amount\":1},{\"amount\":0},{\"amount\":-1}]}",
                   "/items/2/amount: must be >= 0");
    expect_invalid(s, "{\"items\":[{\"amount\":\"1\"}]}", "/items/0/amount: must be number");
    /* ~ and / in names are escaped as JSON Pointer says */
    expect_invalid("{\"properties\":{\"a/b~c\":{\"type\":\"string\"}}}", "{\"a/b~c\":1}",
                   "/a~1b~0c: must be string");
    /* unknown members pass by default */
    expect_valid("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"b\":1}");
    /* properties only applies to objects */
    expect_valid("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "[1]");
    expect_invalid("{\"properties\":{\"a\":false}}", "{\"a\":1}",
                   "/a: is not allowed (schema false)");
}

static void test_schema_required(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"required\":[\"customer\"],\"properties\":{"
                    "\"customer\":{\"type\":\"object\",\"required\":[\"name\",\"email\"]}}}";
    expect_valid(s, "{\"customer\":{\"name\":\"a\",\"email\":\"b\"}}");
    expect_invalid(s, "{}", "/customer: is required");
    expect_invalid(s, "{\"customer\":{\"name\":\"a\"}}", "/customer/email: is required");
    /* required comes before the members' own rules */
    expect_invalid("{\"required\":[\"b\"],\"properties\":{\"a\":{\"type\":\"string\"}}}",
                   "{\"a\":1}", "/b: is required");
    /* a present null satisfies required */
    expect_valid("{\"required\":[\"a\"]}", "{\"a\":null}");
    expect_valid("{\"required\":[]}", "{}");
}

static void test_schema_additional_properties(void **state)
{
    (void)state;
    const char *closed = "{\"properties\":{\"a\":{}},\"additionalProperties\":false}";
    expect_valid(closed, "{\"a\":1}");
    expect_invalid(closed, "{\"a\":1,\"extra\":2}",
                   "/extra: is not allowed (additionalProperties false)");
    const char *typed = "{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":"
                        "\"integer\"}}";
    expect_valid(typed, "{\"a\":\"s\",\"b\":1,\"c\":2}");
    expect_invalid(typed, "{\"a\":\"s\",\"b\":1,\"c\":2.5}", "/c: must be integer");
    expect_valid("{\"additionalProperties\":true}", "{\"x\":1}");
    /* first failure in document order */
    expect_invalid("{\"properties\":{\"z\":{\"type\":\"string\"}},\"additionalProperties\":"
                   "false}",
                   "{\"y\":1,\"z\":1}", "/y: is not allowed (additionalProperties false)");
    expect_invalid("{\"properties\":{\"z\":{\"type\":\"string\"}},\"additionalProperties\":"
                   "false}",
                   "{\"z\":1,\"y\":1}", "/z: must be string");
}

static void test_schema_items_and_counts(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
                    "\"maxItems\":3}";
    expect_valid(s, "[\"a\"]");
    expect_valid(s, "[\"a\",\"b\",\"c\"]");
    expect_invalid(s, "[]", "(root): must have at least 1 items");
    expect_invalid(s, "[\"a\",\"b\",\"c\",\"d\"]", "(root): must have at most 3 items");
    expect_invalid(s, "[\"a\",2]", "/1: must be string");
    expect_valid("{\"items\":{\"type\":\"string\"}}", "{\"not\":\"an array\"}");
    expect_invalid("{\"items\":false}", "[1]", "/0: is not allowed (schema false)");
    expect_valid("{\"items\":false}", "[]");
}

/* prefixItems: each position its own schema (a host function's (order: string, amount:
 * number)); items then covers the elements past them, and without items they are free. */
static void test_schema_prefix_items(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},"
                    "{\"type\":\"integer\",\"maximum\":50}],\"minItems\":1}";
    expect_valid(s, "[\"o-1\"]");
    expect_valid(s, "[\"o-1\",50]");
    expect_valid(s, "[\"o-1\",50,{\"any\":\"thing\"}]");
    expect_invalid(s, "[7]", "/0: must be string");
    expect_invalid(s, "[\"o-1\",\"lots\"]", "/1: must be integer");
    expect_invalid(s, "[\"o-1\",51]", "/1: must be <= 50");
    expect_invalid(s, "[]", "(root): must have at least 1 items");
    const char *closed = "{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}";
    expect_valid(closed, "[\"a\"]");
    expect_invalid(closed, "[\"a\",1]", "/1: is not allowed (schema false)");
    const char *rest = "{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"number\"}}";
    expect_valid(rest, "[\"a\",1,2.5]");
    expect_invalid(rest, "[\"a\",1,\"b\"]", "/2: must be number");
    expect_invalid("{\"prefixItems\":[{\"prefixItems\":[{\"const\":1}]}]}", "[[2]]",
                   "/0/0: must be equal to 1");
}

static void test_schema_numbers(void **state)
{
    (void)state;
    const char *s = "{\"minimum\":0,\"maximum\":100}";
    expect_valid(s, "0");
    expect_valid(s, "100");
    expect_valid(s, "50.5");
    expect_valid(s, "\"not a number\"");
    expect_invalid(s, "-0.5", "(root): must be >= 0");
    expect_invalid(s, "100.01", "(root): must be <= 100");
    const char *x = "{\"exclusiveMinimum\":0,\"exclusiveMaximum\":1.5e1}";
    expect_valid(x, "0.001");
    expect_valid(x, "14.99");
    expect_invalid(x, "0", "(root): must be > 0");
    expect_invalid(x, "15", "(root): must be < 1.5e1");
    expect_invalid("{\"minimum\":-2.5}", "-3", "(root): must be >= -2.5");
}

static void test_schema_string_lengths_count_code_points(void **state)
{
    (void)state;
    const char *s = "{\"minLength\":2,\"maxLength\":3}";
    expect_valid(s, "\"ab\"");
    expect_valid(s, "\"abc\"");
    /* é (2 bytes), € (3 bytes), 😀 (4 bytes, one code point though two UTF-16 units) */
    expect_valid(s, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
    expect_valid(s, "\"\\u00e9\\ud83d\\ude00\"");
    expect_invalid(s, "\"\xF0\x9F\x98\x80\"", "(root): must be at least 2 characters long");
    expect_invalid(s, "\"abcd\"", "(root): must be at most 3 characters long");
    expect_invalid(s, "\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\"",
                   "(root): must be at most 3 characters long");
    expect_valid("{\"maxLength\":0}", "\"\"");
    expect_valid("{\"maxLength\":1}", "5");
}

static void test_schema_pattern(void **state)
{
    (void)state;
    const char *s = "{\"pattern\":\"^[A-Z]+$\"}";
    expect_valid(s, "\"ABC\"");
    expect_invalid(s, "\"AbC\"", "(root): must match pattern '^[A-Z]+$'");
    expect_invalid(s, "\"\"", "(root): must match pattern '^[A-Z]+$'");
    /* unanchored, as in JSON Schema */
    expect_valid("{\"pattern\":\"[0-9]\"}", "\"abc1def\"");
    expect_valid("{\"pattern\":\"^[0-9]{4}-[0-9]{2}-[0-9]{2}$\"}", "\"2026-12-01\"");
    expect_valid("{\"pattern\":\"^(ab|cd)+$\"}", "\"abcdab\"");
    expect_valid("{\"pattern\":\"^[[:alpha:]]+$\"}", "\"abc\"");
    /* a string with U+0000 never matches */
    expect_invalid("{\"pattern\":\"a\"}", "\"a\\u0000\"", "(root): must match pattern 'a'");
    expect_valid(s, "7");
}

static void test_schema_pattern_refused(void **state)
{
    (void)state;
    expect_refused("{\"pattern\":\"(\"}", NULL);
    expect_refused("{\"pattern\":1}", "keyword 'pattern' at (root) must be a string");
    expect_refused("{\"pattern\":\"(a)\\\\1\"}",
                   "keyword 'pattern' refused (backreferences are not supported) at (root)");
    expect_refused("{\"pattern\":\"((a{100}){100}){100}\"}",
                   "keyword 'pattern' refused (its counted repetitions expand too far) at (root)");
    expect_refused("{\"pattern\":\"a\\u0000\"}", "keyword 'pattern' holding U+0000 at (root)");
    /* stacked quantifiers: exponential in glibc's matcher (a fuzz.schema timeout) */
    expect_refused("{\"pattern\":\"a**\"}", "keyword 'pattern' refused (a quantifier may not "
                                            "follow another quantifier) at (root)");
    expect_refused("{\"pattern\":\"x+{1,9}*\"}", NULL);
    expect_refused("{\"pattern\":\"4***{1},**e++#+{0,9}***$\"}", NULL);
    char big[SCHEMA_PATTERN_MAX + 64];
    int n = snprintf(big, sizeof big, "{\"pattern\":\"");
    memset(big + n, 'a', SCHEMA_PATTERN_MAX + 1);
    snprintf(big + n + SCHEMA_PATTERN_MAX + 1, sizeof big - (size_t)n - SCHEMA_PATTERN_MAX - 1,
             "\"}");
    expect_refused(big, "keyword 'pattern' longer than 256 bytes at (root)");
    /* just at the bound is fine */
    big[n + SCHEMA_PATTERN_MAX] = '"';
    big[n + SCHEMA_PATTERN_MAX + 1] = '}';
    big[n + SCHEMA_PATTERN_MAX + 2] = '\0';
    schema_free(compile_ok(big));
}

static void test_schema_enum_and_const(void **state)
{
    (void)state;
    const char *e = "{\"enum\":[\"a\",1,null,[1,[2,{\"x\":true}]],{\"p\":1,\"q\":[2]}]}";
    expect_valid(e, "\"a\"");
    expect_valid(e, "1.0");
    expect_valid(e, "10e-1");
    expect_valid(e, "null");
    expect_valid(e, "[1.0,[2,{\"x\":true}]]");
    expect_valid(e, "{\"q\":[2.0],\"p\":1}");
    const char *no =
            "(root): must be one of [\"a\",1,null,[1,[2,{\"x\":true}]],{\"p\":1,\"q\":[2]}]";
    expect_invalid(e, "\"b\"", no);
    expect_invalid(e, "[1,[2,{\"x\":false}]]", no);
    expect_invalid(e, "{\"p\":1}", no);
    expect_invalid(e, "{\"p\":1,\"q\":[2],\"r\":3}", no);
    expect_invalid(e, "true", no);
    expect_invalid(e, "[[2,{\"x\":true}],1]", no);

    /* quoted as one line, cut at 64 bytes on a character boundary */
    expect_invalid("{\"enum\": [\n  \"open\",\n  \"closed\"\n]}", "\"x\"",
                   "(root): must be one of [\"open\",\"closed\"]");
    expect_invalid(
            "{\"const\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "\xC3\xA9\xC3\xA9\"}",
            "1",
            "(root): must be equal to \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaa"); /* 63 bytes: the é would be split */
    expect_valid("{\"const\":1}", "1.0");
    expect_valid("{\"const\":{\"a\":[1,2],\"b\":null}}", "{\"b\":null,\"a\":[1,2.0]}");
    expect_invalid("{\"const\":{\"a\":[1,2]}}", "{\"a\":[2,1]}",
                   "(root): must be equal to {\"a\":[1,2]}");
    expect_invalid("{\"const\":0}", "false", "(root): must be equal to 0");
    expect_invalid("{\"const\":\"a\"}", "\"a\\u0000\"", "(root): must be equal to \"a\"");
    expect_valid("{\"const\":\"\\u00e9\"}", "\"\xC3\xA9\"");
    expect_valid("{\"const\":-0}", "0");
    expect_valid("{\"const\":null}", "null");
}

static void test_schema_equal_direct(void **state)
{
    (void)state;
    const char *pairs[][3] = {
        { "1", "1.0", "1" },
        { "100", "1e2", "1" },
        { "{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", "1" },
        { "[[1],[2]]", "[[1],[2.0]]", "1" },
        { "[1,2]", "[2,1]", "0" },
        { "{\"a\":1}", "{\"a\":1,\"b\":1}", "0" },
        { "{\"a\":1,\"b\":1}", "{\"a\":1}", "0" },
        { "\"1\"", "1", "0" },
        { "true", "false", "0" },
        { "[]", "{}", "0" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        struct json_doc *a = NULL;
        struct json_doc *b = NULL;
        assert_int_equal(json_parse(pairs[i][0], strlen(pairs[i][0]), 16, &a, NULL), AL_OK);
        assert_int_equal(json_parse(pairs[i][1], strlen(pairs[i][1]), 16, &b, NULL), AL_OK);
        int want = pairs[i][2][0] == '1';
        assert_int_equal(schema_json_equal(json_root(a), json_root(b)), want);
        assert_int_equal(schema_json_equal(json_root(b), json_root(a)), want);
        json_doc_free(a);
        json_doc_free(b);
    }
}

static void test_schema_annotations_are_ignored(void **state)
{
    (void)state;
    expect_valid("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"title\":\"T\","
                 "\"description\":\"D\",\"$comment\":\"C\",\"default\":{\"x\":1},"
                 "\"examples\":[1,\"a\"],\"type\":\"integer\"}",
                 "1");
    expect_refused("{\"title\":1}", "keyword 'title' at (root) must be a string");
    expect_refused("{\"description\":null}", "keyword 'description' at (root) must be a string");
    expect_refused("{\"$schema\":{}}", "keyword '$schema' at (root) must be a string");
    expect_refused("{\"$comment\":[]}", "keyword '$comment' at (root) must be a string");
    expect_refused("{\"examples\":1}", "keyword 'examples' at (root) must be an array");
}

static void test_schema_unsupported_keywords_refused(void **state)
{
    (void)state;
    expect_refused("{\"properties\":{\"amount\":{\"oneOf\":[]}}}",
                   "unsupported keyword 'oneOf' at /properties/amount");
    expect_refused("{\"$ref\":\"#\"}", "unsupported keyword '$ref' at (root)");
    expect_refused("{\"items\":{\"format\":\"email\"}}", "unsupported keyword 'format' at /items");
    expect_refused("{\"additionalProperties\":{\"anyOf\":[]}}",
                   "unsupported keyword 'anyOf' at /additionalProperties");
    expect_refused("{\"properties\":{\"a\":{\"items\":{\"properties\":{\"b\":{\"not\":{}}}}}}}",
                   "unsupported keyword 'not' at /properties/a/items/properties/b");
    expect_refused("{\"Type\":\"string\"}", "unsupported keyword 'Type' at (root)");
    expect_refused("{\"type\":\"string\",\"type\":\"null\"}", "duplicate keyword 'type' at (root)");
    expect_refused("{\"properties\":{\"a\":{},\"a\":{}}}",
                   "duplicate property 'a' in keyword 'properties' at (root)");
}

static void test_schema_wrong_value_types_refused(void **state)
{
    (void)state;
    const char *type_want = "must be a type name or a non-empty array of unique type names (null, "
                            "boolean, object, array, number, integer, string)";
    const char *cases[][2] = {
        { "{\"type\":\"float\"}", "type" },
        { "{\"type\":[]}", "type" },
        { "{\"type\":[\"string\",\"string\"]}", "type" },
        { "{\"type\":7}", "type" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[256];
        snprintf(want, sizeof want, "keyword '%s' at (root) %s", cases[i][1], type_want);
        expect_refused(cases[i][0], want);
    }
    expect_refused("{\"properties\":[]}", "keyword 'properties' at (root) must be an object of "
                                          "schemas");
    expect_refused("{\"properties\":{\"a\":1}}", "not a schema (an object or a boolean) at "
                                                 "/properties/a");
    expect_refused("{\"required\":\"a\"}", "keyword 'required' at (root) must be an array of "
                                           "strings");
    expect_refused("{\"required\":[\"a\",1]}", "keyword 'required' at (root) must be an array of "
                                               "strings");
    expect_refused("{\"additionalProperties\":0}",
                   "keyword 'additionalProperties' at (root) must be a boolean or a schema");
    expect_refused("{\"items\":[{}]}",
                   "keyword 'items' at (root) must be a schema (positions are prefixItems)");
    expect_refused("{\"prefixItems\":[]}",
                   "keyword 'prefixItems' at (root) must be a non-empty array of schemas");
    expect_refused("{\"prefixItems\":{}}",
                   "keyword 'prefixItems' at (root) must be a non-empty array of schemas");
    expect_refused("{\"prefixItems\":[{},3]}",
                   "not a schema (an object or a boolean) at /prefixItems/1");
    expect_refused("{\"prefixItems\":[{\"oneOf\":[]}]}",
                   "unsupported keyword 'oneOf' at /prefixItems/0");
    expect_refused("{\"enum\":[]}", "keyword 'enum' at (root) must be a non-empty array");
    expect_refused("{\"enum\":\"a\"}", "keyword 'enum' at (root) must be a non-empty array");
    expect_refused("{\"minimum\":\"0\"}", "keyword 'minimum' at (root) must be a number");
    expect_refused("{\"properties\":{\"amount\":{\"maximum\":null}}}",
                   "keyword 'maximum' at /properties/amount must be a number");
    expect_refused("{\"exclusiveMinimum\":true}",
                   "keyword 'exclusiveMinimum' at (root) must be a number");
    expect_refused("{\"exclusiveMaximum\":[]}",
                   "keyword 'exclusiveMaximum' at (root) must be a number");
    expect_refused("{\"minLength\":-1}",
                   "keyword 'minLength' at (root) must be a non-negative integer");
    expect_refused("{\"maxLength\":1.5}",
                   "keyword 'maxLength' at (root) must be a non-negative integer");
    expect_refused("{\"minItems\":\"1\"}",
                   "keyword 'minItems' at (root) must be a non-negative integer");
    expect_refused("{\"maxItems\":1e400}",
                   "keyword 'maxItems' at (root) must be a non-negative integer");
    schema_free(compile_ok("{\"maxItems\":2.0,\"minLength\":0}"));
    expect_refused("1", "not a schema (an object or a boolean) at (root)");
    expect_refused("\"x\"", "not a schema (an object or a boolean) at (root)");
    expect_refused("{", NULL);
    expect_refused("", NULL);
}

/* "{"properties":{"a":" repeated n times, then {} and the closing braces. */
static char *nested_properties(unsigned n)
{
    size_t cap = (size_t)n * 24 + 16;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t at = 0;
    for (unsigned i = 0; i < n; i++) {
        at += (size_t)snprintf(s + at, cap - at, "{\"properties\":{\"a\":");
    }
    at += (size_t)snprintf(s + at, cap - at, "{}");
    for (unsigned i = 0; i < n; i++) {
        at += (size_t)snprintf(s + at, cap - at, "}}");
    }
    return s;
}

static void test_schema_depth_is_bounded(void **state)
{
    (void)state;
    char *ok = nested_properties(SCHEMA_DEPTH_MAX);
    schema_free(compile_ok(ok));
    free(ok);
    char *deep = nested_properties(SCHEMA_DEPTH_MAX + 1);
    struct schema *s = NULL;
    struct al_error err;
    assert_int_equal(schema_compile(deep, strlen(deep), &s, &err), AL_CONFIG_ERROR);
    assert_non_null(
            strstr(err.message, "schema nested deeper than 32 subschemas at /properties/a"));
    free(deep);
    /* items nest just the same */
    char items[1024];
    size_t at = 0;
    for (unsigned i = 0; i <= SCHEMA_DEPTH_MAX; i++) {
        at += (size_t)snprintf(items + at, sizeof items - at, "{\"items\":");
    }
    at += (size_t)snprintf(items + at, sizeof items - at, "{}");
    for (unsigned i = 0; i <= SCHEMA_DEPTH_MAX; i++) {
        at += (size_t)snprintf(items + at, sizeof items - at, "}");
    }
    assert_int_equal(schema_compile(items, at, &s, &err), AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "schema nested deeper than 32 subschemas at /items/items"));
    /* an instance too deep to parse is SERIALIZATION_ERROR, not a crash */
    size_t n = SCHEMA_INSTANCE_DEPTH + 1;
    char *inst = malloc(2 * n);
    assert_non_null(inst);
    memset(inst, '[', n);
    memset(inst + n, ']', n);
    s = compile_ok("{}");
    assert_int_equal(schema_validate(s, inst, 2 * n, &err), AL_SERIALIZATION_ERROR);
    assert_non_null(strstr(err.message, "input is not JSON"));
    /* just within the bound validates */
    assert_int_equal(schema_validate(s, inst + 1, 2 * n - 2, &err), AL_OK);
    schema_free(s);
    free(inst);
    /* a deep const compares to the end */
    char c1[600];
    char c2[600];
    at = (size_t)snprintf(c1, sizeof c1, "{\"const\":");
    memset(c1 + at, '[', 100);
    memset(c1 + at + 100, ']', 100);
    snprintf(c1 + at + 200, sizeof c1 - at - 200, "}");
    memset(c2, '[', 100);
    memset(c2 + 100, ']', 100);
    c2[200] = '\0';
    expect_valid(c1, c2);
    /* one level short: unequal, and the message quotes at most 64 bytes of the const */
    c2[199] = '\0';
    char want[128];
    at = (size_t)snprintf(want, sizeof want, "(root): must be equal to ");
    memset(want + at, '[', 64);
    want[at + 64] = '\0';
    expect_invalid(c1, c2 + 1, want);
}

static void test_schema_long_paths_are_cut(void **state)
{
    (void)state;
    char key[201];
    memset(key, 'k', 200);
    key[200] = '\0';
    char schema[512];
    char inst[512];
    snprintf(schema, sizeof schema, "{\"properties\":{\"%s\":{\"type\":\"string\"}}}", key);
    snprintf(inst, sizeof inst, "{\"%s\":1}", key);
    struct schema *s = compile_ok(schema);
    struct al_error err;
    assert_int_equal(schema_validate(s, inst, strlen(inst), &err), AL_CONFIG_ERROR);
    assert_true(strlen(err.message) < 200);
    assert_non_null(strstr(err.message, "...kkk"));
    assert_non_null(strstr(err.message, ": must be string"));
    schema_free(s);
}

/* Well-formed UTF-8 (RFC 3629), or 0. */
static int utf8_ok(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        size_t n = *s < 0x80             ? 1
                   : (*s & 0xe0) == 0xc0 ? 2
                   : (*s & 0xf0) == 0xe0 ? 3
                   : (*s & 0xf8) == 0xf0 ? 4
                                         : 0;
        if (n == 0) {
            return 0;
        }
        for (size_t i = 1; i < n; i++) {
            if ((s[i] & 0xc0) != 0x80) {
                return 0;
            }
        }
        s += n;
    }
    return 1;
}

/* A path far longer than a message holds, of characters of two bytes starting one byte off:
 * the message is cut between characters, never inside one (it becomes a guest's TypeError
 * message, and audit text). */
static void test_schema_long_paths_cut_between_characters(void **state)
{
    (void)state;
    for (size_t skew = 0; skew < 4; skew++) {
        char key[2100];
        size_t at = 0;
        memset(key, 'a', skew);
        at = skew;
        for (size_t i = 0; i < 1000; i++) {
            key[at++] = (char)0xc3; /* U+00E9 */
            key[at++] = (char)0xa9;
        }
        key[at] = '\0';
        char inst[2200];
        snprintf(inst, sizeof inst, "{\"%s\":1}", key);
        struct schema *s = compile_ok("{\"additionalProperties\":false}");
        struct al_error err;
        memset(&err, 0, sizeof err);
        assert_int_equal(schema_validate(s, inst, strlen(inst), &err), AL_CONFIG_ERROR);
        assert_non_null(strstr(err.message, "...\xc3\xa9"));
        assert_non_null(strstr(err.message, ": is not allowed (additionalProperties false)"));
        if (!utf8_ok(err.message)) {
            fail_msg("skew %zu: the message is not UTF-8: %s", skew, err.message);
        }
        schema_free(s);
    }
}

/* A rule quoting a long pattern of two-byte characters, cut to fit the message: between
 * characters too. */
static void test_schema_long_rules_cut_between_characters(void **state)
{
    (void)state;
    for (size_t skew = 0; skew < 2; skew++) {
        char pattern[300];
        size_t at = skew;
        memset(pattern, 'p', skew);
        for (size_t i = 0; i < 120; i++) {
            pattern[at++] = (char)0xc3; /* U+00E9 */
            pattern[at++] = (char)0xa9;
        }
        pattern[at] = '\0';
        char schema[400];
        snprintf(schema, sizeof schema, "{\"pattern\":\"%s\"}", pattern);
        struct schema *s = compile_ok(schema);
        struct al_error err;
        memset(&err, 0, sizeof err);
        assert_int_equal(schema_validate(s, "\"x\"", 3, &err), AL_CONFIG_ERROR);
        assert_non_null(strstr(err.message, "(root): must match pattern '"));
        if (!utf8_ok(err.message)) {
            fail_msg("skew %zu: the message is not UTF-8: %s", skew, err.message);
        }
        schema_free(s);
    }
}

static void test_schema_arguments(void **state)
{
    (void)state;
    struct schema *s = NULL;
    struct al_error err;
    assert_int_equal(schema_compile("{}", 2, NULL, &err), AL_CONFIG_ERROR);
    assert_int_equal(schema_compile(NULL, 0, &s, &err), AL_CONFIG_ERROR); /* "" is not JSON */
    assert_null(s);
    schema_free(NULL);
    s = compile_ok("{\"type\":\"object\"}");
    assert_int_equal(schema_validate(NULL, "{}", 2, &err), AL_CONFIG_ERROR);
    assert_int_equal(schema_validate(s, "{", 1, &err), AL_SERIALIZATION_ERROR);
    assert_int_equal(schema_validate(s, "{}", 2, NULL), AL_OK);
    assert_int_equal(schema_validate(s, "[]", 2, NULL), AL_CONFIG_ERROR);
    struct json_doc *doc = NULL;
    assert_int_equal(json_parse("{\"a\":1}", 7, 8, &doc, NULL), AL_OK);
    assert_int_equal(schema_validate_node(s, json_root(doc), &err), AL_OK);
    assert_int_equal(schema_validate_node(s, json_root(doc)->child, &err), AL_CONFIG_ERROR);
    assert_string_equal(err.message, "(root): must be object");
    assert_int_equal(schema_validate_node(s, NULL, &err), AL_CONFIG_ERROR);
    json_doc_free(doc);
    schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_type),
        cmocka_unit_test(test_schema_properties_and_paths),
        cmocka_unit_test(test_schema_required),
        cmocka_unit_test(test_schema_additional_properties),
        cmocka_unit_test(test_schema_items_and_counts),
        cmocka_unit_test(test_schema_prefix_items),
        cmocka_unit_test(test_schema_numbers),
        cmocka_unit_test(test_schema_string_lengths_count_code_points),
        cmocka_unit_test(test_schema_pattern),
        cmocka_unit_test(test_schema_pattern_refused),
        cmocka_unit_test(test_schema_enum_and_const),
        cmocka_unit_test(test_schema_equal_direct),
        cmocka_unit_test(test_schema_annotations_are_ignored),
        cmocka_unit_test(test_schema_unsupported_keywords_refused),
        cmocka_unit_test(test_schema_wrong_value_types_refused),
        cmocka_unit_test(test_schema_depth_is_bounded),
        cmocka_unit_test(test_schema_long_paths_are_cut),
        cmocka_unit_test(test_schema_long_paths_cut_between_characters),
        cmocka_unit_test(test_schema_long_rules_cut_between_characters),
        cmocka_unit_test(test_schema_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
