/* unit.s3_xml - the ListObjectsV2 answer parser of airlockd's S3 client (s3_list_parse in
 * src/server/s3.c): what a real answer holds (entities, character references, CDATA,
 * namespaces, attributes, pages), and every way a hostile or broken server's answer must be
 * refused within fixed bounds: a DOCTYPE (entity expansion), nesting past the depth bound, a
 * text past its bound, keys that are not UTF-8 or hold a NUL, bad references, mismatched or cut
 * tags, another document, a truncated listing without a token. */
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

#include "s3.h"

struct seen {
    char text[2048];
    size_t items;
    size_t stop_after; /* 0: never */
};

static int collect(const struct s3_list_item *item, void *ud)
{
    struct seen *s = ud;
    size_t used = strlen(s->text);
    snprintf(s->text + used, sizeof s->text - used, "%s%s:%llu|", item->is_prefix ? "P " : "",
             item->key, (unsigned long long)item->size);
    s->items++;
    return s->stop_after && s->items >= s->stop_after;
}

static int parse(const char *xml, struct seen *s, char **ret_token, char *err, size_t errlen)
{
    return s3_list_parse(xml, strlen(xml), collect, s, ret_token, err, errlen);
}

static void test_s3_xml_page_parsed(void **state)
{
    (void)state;
    struct seen s = { "", 0, 0 };
    char *token = NULL;
    char err[160] = "";
    const char *xml =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<!-- a comment -->"
            "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\" a='>'>"
            "<Name>b</Name><IsTruncated>true</IsTruncated>"
            "<Contents><Key>in/a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;</Key>"
            "<Size>12</Size><ETag>&quot;x&quot;</ETag></Contents>"
            "<Contents><Key>in/&#x263A;&#65;&#233;</Key><Size>0</Size></Contents>"
            "<s3:Contents><s3:Key><![CDATA[in/<raw>&amp;]]></s3:Key><s3:Size>3</s3:Size>"
            "</s3:Contents>"
            "<CommonPrefixes><Prefix>in/sub/</Prefix></CommonPrefixes>"
            "<NextContinuationToken>a+b/c==</NextContinuationToken>"
            "</ListBucketResult>\n";
    assert_int_equal(parse(xml, &s, &token, err, sizeof err), 0);
    assert_string_equal(s.text, "in/a&b <c> \"d\" 'e':12|in/\xe2\x98\xba"
                                "A\xc3\xa9:0|in/<raw>&amp;:3|P in/sub/:0|");
    assert_string_equal(token, "a+b/c==");
    free(token);

    /* the last page: no token */
    memset(&s, 0, sizeof s);
    token = NULL;
    assert_int_equal(parse("<ListBucketResult><IsTruncated>false</IsTruncated>"
                           "<Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>",
                           &s, &token, err, sizeof err),
                     0);
    assert_null(token);
    assert_string_equal(s.text, "k:1|");

    /* a callback that stops: no token, so the listing ends */
    memset(&s, 0, sizeof s);
    s.stop_after = 1;
    assert_int_equal(parse(xml, &s, &token, err, sizeof err), 0);
    assert_int_equal(s.items, 1);
    assert_null(token);
}

static void expect_refused(const char *xml, const char *what)
{
    struct seen s = { "", 0, 0 };
    char *token = NULL;
    char err[160] = "";
    assert_int_equal(s3_list_parse(xml, strlen(xml), collect, &s, &token, err, sizeof err), -1);
    assert_null(token);
    if (!strstr(err, what)) {
        fail_msg("\"%s\" does not say \"%s\"", err, what);
    }
}

static void test_s3_xml_hostile_refused(void **state)
{
    (void)state;
    char *deep = NULL;
    char *long_text = NULL;
    expect_refused("<!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]>"
                   "<ListBucketResult><Contents><Key>&b;</Key></Contents></ListBucketResult>",
                   "DOCTYPE");
    expect_refused("<ListBucketResult><Contents><Key>&a;</Key></Contents></ListBucketResult>",
                   "unknown entity");
    expect_refused("<ListBucketResult><Contents><Key>&#0;</Key></Contents></ListBucketResult>",
                   "character reference");
    expect_refused("<ListBucketResult><Contents><Key>&#xD800;</Key></Contents>"
                   "</ListBucketResult>",
                   "character reference");
    expect_refused("<ListBucketResult><Contents><Key>&#x110000;</Key></Contents>"
                   "</ListBucketResult>",
                   "character reference");
    expect_refused("<ListBucketResult><Contents><Key>&#65</Key></Contents></ListBucketResult>",
                   "character reference");
    expect_refused("<ListBucketResult><Contents><Key>bad \xff\xfe</Key></Contents>"
                   "</ListBucketResult>",
                   "not valid UTF-8");
    expect_refused("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents>"
                   "</ListBucketResult>",
                   "not a number");
    expect_refused("<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size>"
                   "</Contents></ListBucketResult>",
                   "not a number");
    expect_refused("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
                   "no key");
    expect_refused("<ListBucketResult><Contents><Key>a</Key></Oops></ListBucketResult>",
                   "mismatched");
    expect_refused("<ListBucketResult><Contents><Key>a</Key>", "cut short");
    expect_refused("<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>"
                   "<ListBucketResult/>",
                   "second root");
    expect_refused("", "cut short");
    expect_refused("just text", "outside the root");
    expect_refused("<Error><Code>AccessDenied</Code></Error>", "not a ListBucketResult");
    expect_refused("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                   "without a continuation token");
    expect_refused("<ListBucketResult><Contents><Key>a<!-- cut", "not well-formed");
    expect_refused("<ListBucketResult><Contents><Key>a</Key></Contents x", "not well-formed");

    /* nesting past the bound: refused, however deep it goes */
    size_t levels = 100000;
    deep = malloc(levels * 3 + 1);
    assert_non_null(deep);
    for (size_t i = 0; i < levels; i++) {
        memcpy(deep + i * 3, "<a>", 3);
    }
    deep[levels * 3] = '\0';
    expect_refused(deep, "nested too deep");

    /* a key past S3's 1024 bytes, and a text past the scanner's 4096 */
    size_t n = 5000;
    long_text = malloc(n + 200);
    assert_non_null(long_text);
    snprintf(long_text, n + 200, "<ListBucketResult><Contents><Key>%01100d</Key></Contents>"
             "</ListBucketResult>", 0);
    expect_refused(long_text, "at most 1024 bytes");
    snprintf(long_text, n + 200, "<ListBucketResult><Name>%04500d</Name></ListBucketResult>", 0);
    expect_refused(long_text, "over 4096 bytes");
    free(long_text);
    free(deep);

    /* a NUL inside the answer (as a byte: the length says where the answer ends) */
    const char with_nul[] = "<ListBucketResult><Contents><Key>a\0b</Key></Contents>"
                            "</ListBucketResult>";
    struct seen s = { "", 0, 0 };
    char *token = NULL;
    char err[160] = "";
    assert_int_equal(s3_list_parse(with_nul, sizeof with_nul - 1, collect, &s, &token, err,
                                   sizeof err),
                     -1);
    assert_non_null(strstr(err, "NUL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_xml_page_parsed),
        cmocka_unit_test(test_s3_xml_hostile_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
