/* unit.tsdecl - TypeScript declarations from schemas (src/gov/tsdecl.c): each keyword of the
 * schema subset maps to its type, objects keep required and optional members apart and their
 * extra members as an index signature, arguments become parameters, functions are grouped
 * under their connector, and a description cannot close its comment early. */
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

#include "tsdecl.h"

/* The type of one schema, as text (the caller frees). */
static char *type_of(const char *schema_json)
{
    struct json_doc *doc = NULL;
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(json_parse(schema_json, strlen(schema_json), 64, &doc, NULL), AL_OK);
    assert_int_equal(tsdecl_type(&b, json_root(doc), 0), BUF_OK);
    json_doc_free(doc);
    return buf_steal(&b, NULL);
}

static void expect_type(const char *schema_json, const char *want)
{
    char *got = type_of(schema_json);
    if (strcmp(got, want) != 0) {
        fail_msg("schema %s: got\n%s\nwant\n%s", schema_json, got, want);
    }
    free(got);
}

static void test_tsdecl_scalars_literals_unions(void **state)
{
    (void)state;
    expect_type("true", "unknown");
    expect_type("false", "never");
    expect_type("{}", "unknown");
    expect_type("{\"type\":\"string\",\"maxLength\":3}", "string");
    expect_type("{\"type\":\"integer\"}", "number");
    expect_type("{\"type\":[\"string\",\"null\"]}", "string | null");
    expect_type("{\"enum\":[\"paid\",\"pending\",3,null]}", "\"paid\" | \"pending\" | 3 | null");
    expect_type("{\"const\":{\"a\": [1, true]}}", "{\"a\":[1,true]}");
    expect_type("{\"type\":\"array\",\"items\":{\"type\":\"number\"}}", "(number)[]");
    expect_type("{\"type\":\"array\"}", "(unknown)[]");
}

static void test_tsdecl_objects(void **state)
{
    (void)state;
    expect_type("{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\","
                "\"description\":\"the order\"},\"two words\":{\"type\":\"number\"}},"
                "\"required\":[\"id\"],\"additionalProperties\":false}",
                "{\n"
                "  /** the order */\n"
                "  id: string;\n"
                "  \"two words\"?: number;\n"
                "}");
    expect_type("{\"type\":\"object\"}", "{\n  [key: string]: unknown;\n}");
    expect_type("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"boolean\"}}",
                "{\n  [key: string]: boolean;\n}");
    expect_type("{\"type\":\"object\",\"additionalProperties\":false}", "Record<string, never>");
    expect_type("{\"properties\":{\"o\":{\"type\":\"object\",\"properties\":{\"n\":{}},"
                "\"additionalProperties\":false}},\"additionalProperties\":false}",
                "{\n  o?: {\n    n?: unknown;\n  };\n}");
}

/* The parameters a function's args_schema declares (the text between its parentheses). */
static void expect_params(const char *args_schema, const char *want)
{
    struct json_doc *doc = NULL;
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(json_parse(args_schema, strlen(args_schema), 64, &doc, NULL), AL_OK);
    struct tsdecl_fn fn = { "pay.refund", NULL, json_root(doc), NULL, 0 };
    assert_int_equal(tsdecl_write(&b, "t", &fn, 1, NULL), BUF_OK);
    const char *open = strstr(b.data, "refund(");
    const char *close = open ? strstr(open, "): Promise<") : NULL;
    assert_non_null(close);
    open += strlen("refund(");
    if ((size_t)(close - open) != strlen(want) || memcmp(open, want, strlen(want)) != 0) {
        fail_msg("args %s: got\n%.*s\nwant\n%s", args_schema, (int)(close - open), open, want);
    }
    buf_done(&b);
    json_doc_free(doc);
}

/* prefixItems: a parameter per position, typed by it, then what items says of the rest. */
static void test_tsdecl_positional_parameters(void **state)
{
    (void)state;
    const char *two = "\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}]";
    char s[256];
    snprintf(s, sizeof s, "{%s,\"minItems\":2,\"items\":false}", two);
    expect_params(s, "arg1: string, arg2: number");
    snprintf(s, sizeof s, "{%s,\"minItems\":1,\"maxItems\":2}", two);
    expect_params(s, "arg1: string, arg2?: number");
    snprintf(s, sizeof s, "{%s,\"minItems\":2,\"maxItems\":3,\"items\":{\"type\":\"boolean\"}}",
             two);
    expect_params(s, "arg1: string, arg2: number, arg3?: boolean");
    snprintf(s, sizeof s, "{%s,\"minItems\":2}", two);
    expect_params(s, "arg1: string, arg2: number, ...rest: (unknown)[]");
    snprintf(s, sizeof s, "{%s,\"items\":{\"type\":\"string\"}}", two);
    expect_params(s, "arg1?: string, arg2?: number, ...rest: (string)[]");
    /* as a value's type: a tuple */
    snprintf(s, sizeof s, "{\"type\":\"array\",%s,\"items\":false}", two);
    expect_type(s, "[string, number]");
    snprintf(s, sizeof s, "{%s}", two);
    expect_type(s, "[string, number, ...(unknown)[]]");
}

static void test_tsdecl_functions_and_input(void **state)
{
    (void)state;
    static const char schemas[] =
            "[{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":2},"
            "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
            "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},"
            "\"required\":[\"ok\"],\"additionalProperties\":false},"
            "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
            "\"required\":[\"n\"],\"additionalProperties\":false}]";
    struct json_doc *doc = NULL;
    assert_int_equal(json_parse(schemas, strlen(schemas), 64, &doc, NULL), AL_OK);
    const struct json_node *s = json_root(doc)->child;
    struct tsdecl_fn fns[] = {
        { "crm.lookup", NULL, NULL, NULL, 0 },
        { "shop.orders", "orders by status", s, NULL, 0 },
        { "shop.refund", "refund an order */ alert(1) /*", s->next, s->next->next, 1 },
    };
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(tsdecl_write(&b, "template refund version 2", fns, 3, s->next->next->next),
                     BUF_OK);
    static const char want[] =
            "// template refund version 2: the host functions a run has and its input. Every "
            "host function\n"
            "// returns a Promise; types are not checked at run time.\n"
            "declare const crm: {\n"
            "  lookup(...args: (unknown)[]): Promise<unknown>;\n"
            "};\n"
            "declare const shop: {\n"
            "  /** orders by status */\n"
            "  orders(arg1: string, arg2?: string): Promise<unknown>;\n"
            "  /** refund an order *\\/ alert(1) /* Sensitive: each call waits for a person's "
            "approval. */\n"
            "  refund(...args: (number)[]): Promise<{\n"
            "    ok: boolean;\n"
            "  }>;\n"
            "};\n"
            "/** What the guest logs goes to the run's console, not to a terminal. */\n"
            "declare const console: {\n"
            "  log(...data: unknown[]): void;\n"
            "  info(...data: unknown[]): void;\n"
            "  warn(...data: unknown[]): void;\n"
            "  error(...data: unknown[]): void;\n"
            "  debug(...data: unknown[]): void;\n"
            "};\n"
            "/** The run's input, deeply frozen. */\n"
            "declare const input: {\n"
            "  n: number;\n"
            "};\n";
    if (strcmp(b.data, want) != 0) {
        fail_msg("got\n%s\nwant\n%s", b.data, want);
    }
    buf_done(&b);
    json_doc_free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tsdecl_scalars_literals_unions),
        cmocka_unit_test(test_tsdecl_objects),
        cmocka_unit_test(test_tsdecl_functions_and_input),
        cmocka_unit_test(test_tsdecl_positional_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
