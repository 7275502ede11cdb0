/* s3.client - airlockd's S3 client (src/server/s3.c) against s3rver (a real S3-compatible
 * server) and fake_s3.py (which checks every SigV4 signature independently of libcurl, and
 * plays a server that stalls, fails or answers garbage); started by run.py, which passes their
 * endpoints and the canary secret in the environment. Every error message is printed (run.py
 * checks the canary is in none) and checked here to name the bucket and say what failed. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"

#define BUCKET "airlock-test"

static char err[512];

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "%s is not set: run this test through tests/s3/run.py\n", name);
        exit(1);
    }
    return v;
}

static struct s3_mount *mount_at(const char *endpoint, const char *bucket, const char *key_id,
                                 const char *secret, int64_t timeout_ms)
{
    struct s3_mount_config c = { endpoint, bucket, "us-east-1", key_id, secret, timeout_ms };
    struct s3_mount *m = NULL;
    struct al_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(s3_mount_new(&c, &m, &e), AL_OK);
    return m;
}

/* s3rver knows the access key id S3RVER; it does not check signatures, so any secret works */
static struct s3_mount *s3rver(void)
{
    return mount_at(env("S3RVER_ENDPOINT"), BUCKET, "S3RVER", env("S3_CANARY"), 0);
}

static struct s3_mount *fake(const char *bucket, int64_t timeout_ms)
{
    return mount_at(env("FAKE_S3_ENDPOINT"), bucket, "AKIDFAKE", env("S3_CANARY"), timeout_ms);
}

/* An error message as a user sees it: printed (run.py looks for the canary in the output),
 * naming the bucket and containing `what`, no credential in it. */
static void expect_message(const char *bucket, const char *what)
{
    printf("message: %s\n", err);
    assert_non_null(strstr(err, bucket));
    assert_non_null(strstr(err, what));
    assert_null(strstr(err, env("S3_CANARY")));
    assert_null(strstr(err, "AKIDFAKE"));
    assert_null(strstr(err, "S3RVER"));
    assert_null(strstr(err, "http://"));
}

static void put(struct s3_mount *m, const char *key, const char *data, size_t len)
{
    assert_int_equal(s3_put(m, key, data, len, err, sizeof err), AL_MOUNT_OK);
}

static char *get(struct s3_mount *m, const char *key, uint64_t offset, uint64_t len,
                 size_t *ret_len)
{
    char *data = NULL;
    enum al_mount_status st = s3_get(m, key, offset, len, &data, ret_len, err, sizeof err);
    if (st != AL_MOUNT_OK) {
        printf("message: %s\n", err);
    }
    assert_int_equal(st, AL_MOUNT_OK);
    return data;
}

static void test_s3_put_get_head_delete(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    size_t n = 0;
    uint64_t size = 0;
    put(m, "basic/hello.txt", "hello, bucket", 13);
    char *data = get(m, "basic/hello.txt", 0, UINT64_MAX, &n);
    assert_int_equal(n, 13);
    assert_memory_equal(data, "hello, bucket", 13);
    free(data);
    assert_int_equal(s3_head(m, "basic/hello.txt", &size, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(size, 13);
    put(m, "basic/hello.txt", "replaced", 8); /* a PUT replaces */
    data = get(m, "basic/hello.txt", 0, UINT64_MAX, &n);
    assert_int_equal(n, 8);
    free(data);
    put(m, "basic/empty", "", 0);
    assert_int_equal(s3_head(m, "basic/empty", &size, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(size, 0);
    assert_int_equal(s3_delete(m, "basic/hello.txt", err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(s3_head(m, "basic/hello.txt", &size, err, sizeof err), AL_MOUNT_NOT_FOUND);
    data = NULL;
    assert_int_equal(s3_get(m, "basic/hello.txt", 0, 10, &data, &n, err, sizeof err),
                     AL_MOUNT_NOT_FOUND);
    assert_null(data);
    s3_mount_free(m);
}

static void test_s3_range_reads(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    size_t n = 0;
    put(m, "range/digits", "0123456789", 10);
    char *data = get(m, "range/digits", 3, 4, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(data, "3456", 4);
    free(data);
    data = get(m, "range/digits", 7, 100, &n); /* past the end: what there is */
    assert_int_equal(n, 3);
    assert_memory_equal(data, "789", 3);
    free(data);
    data = get(m, "range/digits", 6, UINT64_MAX, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(data, "6789", 4);
    free(data);
    data = get(m, "range/digits", 10, 5, &n); /* at the end: nothing */
    assert_int_equal(n, 0);
    free(data);
    data = get(m, "range/digits", 0, 0, &n); /* len 0: exists, nothing read */
    assert_int_equal(n, 0);
    free(data);
    s3_mount_free(m);
}

static void test_s3_large_object(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    size_t len = (size_t)20 << 20, n = 0;
    unsigned char want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
    char *big = malloc(len);
    assert_non_null(big);
    uint32_t x = 2463534242u; /* xorshift: bytes that do not compress */
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        big[i] = (char)x;
    }
    SHA256((unsigned char *)big, len, want);
    put(m, "large/20mb.bin", big, len);
    char *data = get(m, "large/20mb.bin", 0, UINT64_MAX, &n);
    assert_int_equal(n, len);
    SHA256((unsigned char *)data, n, got);
    assert_memory_equal(got, want, sizeof want);
    free(data);
    data = get(m, "large/20mb.bin", len - 1000, 4096, &n);
    assert_int_equal(n, 1000);
    assert_memory_equal(data, big + len - 1000, 1000);
    free(data);
    /* a read bounded by what the caller asked */
    data = get(m, "large/20mb.bin", 0, 1 << 20, &n);
    assert_int_equal(n, 1 << 20);
    free(data);
    free(big);
    s3_mount_free(m);
}

struct tally {
    size_t objects;
    size_t prefixes;
    int sorted;
    char last[S3_KEY_MAX + 1];
};

static int count_item(const struct s3_list_item *item, void *ud)
{
    struct tally *t = ud;
    if (t->last[0] && strcmp(t->last, item->key) >= 0) {
        t->sorted = 0;
    }
    snprintf(t->last, sizeof t->last, "%s", item->key);
    if (item->is_prefix) {
        t->prefixes++;
    } else {
        t->objects++;
    }
    return 0;
}

static void test_s3_list_pages(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    char key[64];
    for (int i = 0; i < 1100; i++) {
        snprintf(key, sizeof key, "many/%04d", i);
        put(m, key, "x", 1);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "many/sub%d/inner", i);
        put(m, key, "yy", 2);
    }
    struct tally t = { 0, 0, 1, "" };
    enum al_mount_status st = s3_list(m, "many/", count_item, &t, err, sizeof err);
    printf("message: %s\n", err);
    assert_int_equal(st, AL_MOUNT_OK);
    assert_int_equal(t.objects, 1100); /* more than one page of 1000 */
    assert_int_equal(t.prefixes, 3);
    assert_true(t.sorted); /* no page seen twice */
    s3_mount_free(m);
}

static void test_s3_keys_with_spaces_and_unicode(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    const char *keys[] = { "odd/with space.txt", "odd/na\xc3\xafve \xe2\x98\x83.csv",
                           "odd/a+b=c&d;e,f", "odd/100%", "odd/quote\"'<tag>" };
    size_t n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        put(m, keys[i], keys[i], strlen(keys[i]));
        char *data = get(m, keys[i], 0, UINT64_MAX, &n);
        assert_int_equal(n, strlen(keys[i]));
        assert_memory_equal(data, keys[i], n);
        free(data);
    }
    struct tally t = { 0, 0, 1, "" };
    assert_int_equal(s3_list(m, "odd/", count_item, &t, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(t.objects, sizeof keys / sizeof keys[0]);
    s3_mount_free(m);
}

struct names {
    char text[1024];
};

static void add_name(const struct al_mount_entry *entry, void *ud)
{
    struct names *n = ud;
    size_t used = strlen(n->text);
    snprintf(n->text + used, sizeof n->text - used, "%s%s:%llu;", entry->name,
             entry->is_dir ? "/" : "", (unsigned long long)entry->size);
}

static void test_s3_mount_ops(void **state)
{
    (void)state;
    struct s3_mount *m = s3rver();
    const struct al_mount_ops *ops = &s3_mount_ops;
    uint64_t size = 0;
    int is_dir = -1;
    char *data = NULL;
    size_t n = 0;
    put(m, "ops/2026/in/a.csv", "a,b\n1,2\n", 8);
    put(m, "ops/2026/in/deep/b.txt", "b", 1);
    put(m, "ops/2026/top.md", "# top", 5);
    assert_int_equal(ops->version, AL_MOUNT_OPS_VERSION);
    assert_int_equal(ops->stat(m, "ops/2026/in/a.csv", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_OK);
    assert_int_equal(size, 8);
    assert_int_equal(is_dir, 0);
    assert_int_equal(ops->stat(m, "ops/2026/in", &size, &is_dir, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(is_dir, 1);
    assert_int_equal(ops->stat(m, "ops/2026/", &size, &is_dir, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(is_dir, 1);
    assert_int_equal(ops->stat(m, "ops/2026/nothing", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_NOT_FOUND);
    /* an entry whose prefix holds nothing yet is an empty directory */
    assert_int_equal(ops->stat(m, "ops/empty-prefix/", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_OK);
    assert_int_equal(is_dir, 1);

    struct names names = { "" };
    assert_int_equal(ops->list(m, "ops/2026/", add_name, &names, err, sizeof err), AL_MOUNT_OK);
    /* S3 lists the objects, then the common prefixes */
    assert_string_equal(names.text, "top.md:5;in/:0;");
    memset(&names, 0, sizeof names);
    assert_int_equal(ops->list(m, "ops/2026/in", add_name, &names, err, sizeof err),
                     AL_MOUNT_OK);
    assert_string_equal(names.text, "a.csv:8;deep/:0;");
    memset(&names, 0, sizeof names);
    assert_int_equal(ops->list(m, "ops/2026/none", add_name, &names, err, sizeof err),
                     AL_MOUNT_NOT_FOUND);

    assert_int_equal(ops->read(m, "ops/2026/in/a.csv", 4, 100, &data, &n, err, sizeof err),
                     AL_MOUNT_OK);
    assert_int_equal(n, 4);
    assert_memory_equal(data, "1,2\n", 4);
    free(data);
    assert_int_equal(ops->write(m, "ops/out/report.md", "# report", 8, err, sizeof err),
                     AL_MOUNT_OK);
    assert_int_equal(ops->stat(m, "ops/out/report.md", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_OK);
    assert_int_equal(size, 8);
    assert_int_equal(ops->remove(m, "ops/out/report.md", err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(ops->stat(m, "ops/out/report.md", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_NOT_FOUND);
    s3_mount_free(m);
}

static void test_s3_wrong_access_key_id(void **state)
{
    (void)state;
    /* s3rver refuses an unknown access key id with 403 InvalidAccessKeyId (it never checks a
     * V4 signature: fake_s3.py's test below does) */
    struct s3_mount *m =
            mount_at(env("S3RVER_ENDPOINT"), BUCKET, "AKIDWRONG", env("S3_CANARY"), 0);
    char *data = NULL;
    size_t n = 0;
    uint64_t size = 0;
    int is_dir = 0;
    assert_int_equal(s3_get(m, "basic/empty", 0, 10, &data, &n, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message(BUCKET, "HTTP 403 InvalidAccessKeyId");
    assert_null(strstr(err, "AKIDWRONG"));
    assert_int_equal(s3_put(m, "basic/x", "x", 1, err, sizeof err), AL_MOUNT_ERROR);
    expect_message(BUCKET, "HTTP 403");
    assert_int_equal(s3_mount_ops.stat(m, "basic/", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message(BUCKET, "InvalidAccessKeyId");
    s3_mount_free(m);
}

static void test_s3_missing_bucket(void **state)
{
    (void)state;
    struct s3_mount *m =
            mount_at(env("S3RVER_ENDPOINT"), "no-such-bucket", "S3RVER", env("S3_CANARY"), 0);
    uint64_t size = 0;
    int is_dir = 0;
    char *data = NULL;
    size_t n = 0;
    struct names names = { "" };
    /* never "no such file": the bucket itself is missing */
    assert_int_equal(s3_mount_ops.stat(m, "a/b.csv", &size, &is_dir, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message("no-such-bucket", "NoSuchBucket");
    assert_int_equal(s3_mount_ops.list(m, "", add_name, &names, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message("no-such-bucket", "NoSuchBucket");
    assert_int_equal(s3_get(m, "a/b.csv", 0, 10, &data, &n, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("no-such-bucket", "NoSuchBucket");
    assert_int_equal(s3_put(m, "a/b.csv", "x", 1, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("no-such-bucket", "NoSuchBucket");
    s3_mount_free(m);
}

static void test_s3_signature_verified(void **state)
{
    (void)state;
    /* fake_s3.py computes each signature itself and answers 403 when it differs: every step
     * here passing means libcurl's signature, with x-amz-content-sha256, the encoded keys and
     * the sorted query (continuation tokens with '+', '/' and '='), is what S3 computes */
    struct s3_mount *m = fake("signed", 0);
    const char *keys[] = { "k/with space", "k/na\xc3\xafve \xe2\x98\x83", "k/a+b=c&d", "k/x~y_z",
                           "k/sub/one", "k/sub2/two", "k/last" };
    size_t n = 0;
    uint64_t size = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        put(m, keys[i], keys[i], strlen(keys[i]));
    }
    char *data = get(m, "k/with space", 2, 3, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(data, "wit", 3);
    free(data);
    assert_int_equal(s3_head(m, "k/a+b=c&d", &size, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(size, strlen("k/a+b=c&d"));
    struct tally t = { 0, 0, 1, "" };
    assert_int_equal(s3_list(m, "k/", count_item, &t, err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(t.objects, 5); /* pages of 2: three continuation tokens */
    assert_int_equal(t.prefixes, 2);
    assert_int_equal(s3_delete(m, "k/last", err, sizeof err), AL_MOUNT_OK);
    assert_int_equal(s3_head(m, "k/last", &size, err, sizeof err), AL_MOUNT_NOT_FOUND);
    s3_mount_free(m);

    /* and a wrong secret is refused there: the check above is a real one */
    m = mount_at(env("FAKE_S3_ENDPOINT"), "signed", "AKIDFAKE", "not-the-secret", 0);
    assert_int_equal(s3_put(m, "k/x", "x", 1, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("signed", "HTTP 403 SignatureDoesNotMatch");
    s3_mount_free(m);
}

static void test_s3_slow_server(void **state)
{
    (void)state;
    struct s3_mount *m = fake("stall", 1500);
    char *data = NULL;
    size_t n = 0;
    struct names names = { "" };
    assert_int_equal(s3_get(m, "a", 0, 10, &data, &n, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("stall", "timed out after 1500 ms");
    assert_int_equal(s3_mount_ops.list(m, "dir/", add_name, &names, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message("stall", "timed out");
    assert_int_equal(s3_put(m, "a", "x", 1, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("stall", "timed out");
    s3_mount_free(m);
}

static void test_s3_failing_server(void **state)
{
    (void)state;
    struct s3_mount *m = fake("fail", 0);
    char *data = NULL;
    size_t n = 0;
    struct tally t = { 0, 0, 1, "" };
    assert_int_equal(s3_get(m, "in/a.csv", 0, 10, &data, &n, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("fail", "GET \"in/a.csv\": HTTP 500 InternalError");
    assert_int_equal(s3_list(m, "in/", count_item, &t, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("fail", "HTTP 500");
    s3_mount_free(m);

    m = fake("garbage", 0);
    assert_int_equal(s3_list(m, "in/", count_item, &t, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("garbage", "not well-formed XML");
    assert_int_equal(s3_get(m, "in/a.csv", 0, 2000, &data, &n, err, sizeof err),
                     AL_MOUNT_ERROR);
    expect_message("garbage", "closed the connection mid-answer");
    s3_mount_free(m);

    m = fake("endless", 1500);
    assert_int_equal(s3_list(m, "notoken/", count_item, &t, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("endless", "truncated without a continuation token");
    /* a server that pages forever: the operation's deadline ends it */
    assert_int_equal(s3_list(m, "forever/", count_item, &t, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("endless", "timed out");
    s3_mount_free(m);

    m = mount_at(env("CLOSED_ENDPOINT"), "closed", "AKIDFAKE", env("S3_CANARY"), 0);
    assert_int_equal(s3_put(m, "a", "x", 1, err, sizeof err), AL_MOUNT_ERROR);
    expect_message("closed", "connection refused");
    s3_mount_free(m);
}

static void test_s3_config_refused(void **state)
{
    (void)state;
    const char *canary = env("S3_CANARY");
    struct {
        struct s3_mount_config c;
        const char *member;
    } bad[] = {
        { { "ftp://h", "bkt", "us-east-1", "id", canary, 0 }, "endpoint" },
        { { "http://user:pw@h", "bkt", "us-east-1", "id", canary, 0 }, "endpoint" },
        { { "http://h/?q", "bkt", "us-east-1", "id", canary, 0 }, "endpoint" },
        { { "http://h", "Bad_Bucket", "us-east-1", "id", canary, 0 }, "bucket" },
        { { "http://h", "b", "us-east-1", "id", canary, 0 }, "bucket" },
        { { "http://h", "bkt", "us:east", "id", canary, 0 }, "region" },
        { { "http://h", "bkt", "us-east-1", "id with space", canary, 0 }, "access_key_id" },
        { { "http://h", "bkt", "us-east-1", "id", "", 0 }, "secret_access_key" },
        { { "http://h", "bkt", "us-east-1", "id", canary, -1 }, "timeout_ms" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct s3_mount *m = NULL;
        struct al_error e;
        memset(&e, 0, sizeof e);
        assert_int_equal(s3_mount_new(&bad[i].c, &m, &e), AL_CONFIG_ERROR);
        assert_null(m);
        printf("message: %s\n", e.message);
        assert_non_null(strstr(e.message, bad[i].member));
        assert_null(strstr(e.message, canary));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_put_get_head_delete),
        cmocka_unit_test(test_s3_range_reads),
        cmocka_unit_test(test_s3_large_object),
        cmocka_unit_test(test_s3_list_pages),
        cmocka_unit_test(test_s3_keys_with_spaces_and_unicode),
        cmocka_unit_test(test_s3_mount_ops),
        cmocka_unit_test(test_s3_wrong_access_key_id),
        cmocka_unit_test(test_s3_missing_bucket),
        cmocka_unit_test(test_s3_signature_verified),
        cmocka_unit_test(test_s3_slow_server),
        cmocka_unit_test(test_s3_failing_server),
        cmocka_unit_test(test_s3_config_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
