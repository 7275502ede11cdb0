/*
 * unit.workspace - al_workspace without a worker: the tar codec (round trip, pax and GNU long
 * names, every kind of hostile archive refused with the workspace left as it was), snapshot
 * limits, and a 50 MB workspace through tar and back (timed and printed, never asserted).
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
#include <time.h>

#include "airlock.h"

static struct al_workspace *ws_of(const char *m)
{
    struct al_workspace *ws = NULL;
    struct al_error err;
    if (al_workspace_new(m, strlen(m), &ws, &err) != AL_OK) {
        fail_msg("al_workspace_new: %s", err.message);
    }
    return ws;
}

static char *tar_of(const struct al_workspace *ws, size_t *len)
{
    char *t = NULL;
    assert_int_equal(al_workspace_tar(ws, &t, len, NULL), AL_OK);
    return t;
}

/* ------------------------------------------------------------ a tar writer for the tests */

struct tar {
    char *data;
    size_t len;
};

static void member(struct tar *t, const char *name, char type, const char *data, size_t len,
                   const char *size_field)
{
    t->data = realloc(t->data, t->len + 512 + (len + 511) / 512 * 512);
    char *h = t->data + t->len;
    memset(h, 0, 512);
    strncpy(h, name, 100);
    memcpy(h + 100, "0000644", 7);
    if (size_field) {
        memcpy(h + 124, size_field, 12);
    } else {
        snprintf(h + 124, 12, "%011zo", len);
    }
    h[156] = type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) {
        sum += (unsigned char)h[i];
    }
    snprintf(h + 148, 8, "%06o", sum);
    t->len += 512;
    memset(t->data + t->len, 0, (len + 511) / 512 * 512);
    if (data && len) { /* a member with no data is zeros (also what -O3 cannot prove) */
        memcpy(t->data + t->len, data, len);
    }
    t->len += (len + 511) / 512 * 512;
}

static void end(struct tar *t)
{
    t->data = realloc(t->data, t->len + 1024);
    memset(t->data + t->len, 0, 1024);
    t->len += 1024;
}

static const char manifest[] =
        "{\"entries\": {\"README.md\": {\"type\": \"file\", \"content\": \"hello\"},"
        " \"lake\": {\"type\": \"s3_mount\", \"mount\": \"m\"}},"
        " \"outputs\": [\"out\"], \"limits\": {\"bytes\": 4096, \"files\": 4, \"file_bytes\": "
        "1024}}";

/* ------------------------------------------------------------ tests */

static void test_tar_round_trip(void **state)
{
    (void)state;
    char name[200];
    memset(name, 'n', 150);
    strcpy(name + 150, ".txt");
    char m[1024];
    snprintf(m, sizeof m,
             "{\"entries\": {\"d/%s\": {\"type\": \"file\", \"content\": \"long\"},"
             " \"\xc3\xbc.md\": {\"type\": \"file\", \"content\": \"u\"},"
             " \"e\": {\"type\": \"dir\"}}}",
             name);
    struct al_workspace *a = ws_of(m);
    size_t len;
    char *t = tar_of(a, &len);
    /* the long and the non-ASCII name carry pax headers */
    assert_non_null(memmem(t, len, "path=d/nnnn", 11));
    assert_non_null(memmem(t, len, "path=\xc3\xbc.md", 10));
    struct al_workspace *b = ws_of("{}");
    struct al_error err;
    if (al_workspace_load_tar(b, t, len, &err) != AL_OK) {
        fail_msg("load: %s", err.message);
    }
    size_t len2;
    char *t2 = tar_of(b, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(t, t2, len);
    free(t);
    free(t2);
    al_workspace_free(a);
    al_workspace_free(b);
}

/* A GNU long name ('L') and a ustar prefix are read as the member's name. */
static void test_tar_gnu_long_name(void **state)
{
    (void)state;
    struct tar t = { 0 };
    char longname[130];
    memset(longname, 'g', 120);
    memcpy(longname, "dir/", 4);
    longname[120] = '\0';
    member(&t, "././@LongLink", 'L', longname, 121, NULL);
    member(&t, "cut", '0', "gnu", 3, NULL);
    end(&t);
    struct al_workspace *ws = ws_of("{}");
    struct al_error err;
    assert_int_equal(al_workspace_load_tar(ws, t.data, t.len, &err), AL_OK);
    size_t len;
    char *out = tar_of(ws, &len);
    assert_non_null(memmem(out, len, longname, 120)); /* in its pax header */
    free(out);
    free(t.data);
    al_workspace_free(ws);
}

/* Every hostile archive is refused, naming why, and the workspace is left as it was. */
static void test_tar_hostile(void **state)
{
    (void)state;
    char big[2048];
    memset(big, 'b', sizeof big);
    struct {
        const char *what;
        const char *name;
        char type;
        size_t len;
        const char *size_field;
        const char *want;
    } cases[] = {
        { "absolute", "/etc/passwd", '0', 1, NULL, "not a relative path" },
        { "dotdot", "../x", '0', 1, NULL, "not a relative path" },
        { "inner dotdot", "a/../../x", '0', 1, NULL, "not a relative path" },
        { "symlink", "link", '2', 0, NULL, "symbolic link" },
        { "hard link", "hard", '1', 0, NULL, "hard link" },
        { "char device", "tty", '3', 0, NULL, "device" },
        { "block device", "sda", '4', 0, NULL, "device" },
        { "fifo", "fifo", '6', 0, NULL, "FIFO" },
        { "unknown type", "x", 'Z', 0, NULL, "unknown type" },
        { "file too big", "big", '0', 1025, NULL, "above the file limit" },
        { "into a mount", "lake/x", '0', 1, NULL, "mount entry" },
        { "the mount itself", "lake", '5', 0, NULL, "mount entry" },
        { "base-256 size", "b256", '0', 0, "\x80\0\0\0\0\0\0\0\0\0\0\x01", "malformed size" },
    };
    struct al_workspace *ws = ws_of(manifest);
    size_t before_len;
    char *before = tar_of(ws, &before_len);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tar t = { 0 };
        member(&t, "ok.txt", '0', "fine", 4, NULL);
        member(&t, cases[i].name, cases[i].type, big, cases[i].len, cases[i].size_field);
        end(&t);
        struct al_error err;
        enum al_code rc = al_workspace_load_tar(ws, t.data, t.len, &err);
        if (rc != AL_CONFIG_ERROR || !strstr(err.message, cases[i].want)) {
            fail_msg("%s: %s (%s), expected CONFIG_ERROR with '%s'", cases[i].what,
                     al_code_name(rc), rc ? err.message : "", cases[i].want);
        }
        size_t after_len;
        char *after = tar_of(ws, &after_len);
        assert_int_equal(before_len, after_len);
        assert_memory_equal(before, after, before_len);
        free(after);
        free(t.data);
    }
    free(before);
    al_workspace_free(ws);
}

static void expect_refused(const struct tar *t, const char *want)
{
    struct al_workspace *ws = ws_of(manifest);
    struct al_error err;
    enum al_code rc = al_workspace_load_tar(ws, t->data, t->len, &err);
    if (rc != AL_CONFIG_ERROR || !strstr(err.message, want)) {
        fail_msg("%s (%s), expected CONFIG_ERROR with '%s'", al_code_name(rc),
                 rc ? err.message : "", want);
    }
    al_workspace_free(ws);
}

static void test_tar_structure(void **state)
{
    (void)state;
    struct tar t = { 0 };
    /* truncated inside a member's data */
    member(&t, "a.txt", '0', "0123456789", 10, NULL);
    t.len = 512 + 5;
    expect_refused(&t, "truncated");
    /* truncated inside a header */
    t.len = 100;
    expect_refused(&t, "truncated");
    free(t.data);
    /* a bad checksum */
    t = (struct tar){ 0 };
    member(&t, "a.txt", '0', "x", 1, NULL);
    t.data[0] = 'b';
    end(&t);
    expect_refused(&t, "checksum");
    free(t.data);
    /* too many files for the limit (4) */
    t = (struct tar){ 0 };
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof n, "f%d", i);
        member(&t, n, '0', "x", 1, NULL);
    }
    end(&t);
    expect_refused(&t, "limits");
    free(t.data);
    /* more bytes than the workspace holds (4096 in files of at most 1024) */
    t = (struct tar){ 0 };
    char k[1024];
    memset(k, 'k', sizeof k);
    for (int i = 0; i < 4; i++) {
        char n[16];
        snprintf(n, sizeof n, "f%d", i);
        member(&t, n, '0', k, 1024, NULL);
    }
    end(&t);
    struct al_workspace *ws = ws_of(manifest); /* README.md's 5 bytes are replaced: fits */
    assert_int_equal(al_workspace_load_tar(ws, t.data, t.len, NULL), AL_OK);
    al_workspace_free(ws);
    free(t.data);
    /* too many members: directories count too */
    t = (struct tar){ 0 };
    for (int i = 0; i < 2 * 4 + 1024 + 1; i++) {
        char n[16];
        snprintf(n, sizeof n, "d%d", i);
        member(&t, n, '5', NULL, 0, NULL);
    }
    end(&t);
    expect_refused(&t, "members");
    free(t.data);
    /* a file with a member below it, and a path that is both */
    t = (struct tar){ 0 };
    member(&t, "a", '0', "x", 1, NULL);
    member(&t, "a/b", '0', "x", 1, NULL);
    end(&t);
    expect_refused(&t, "both a file and a directory"); /* its parent directory */
    free(t.data);
    t = (struct tar){ 0 };
    member(&t, "a", '0', "x", 1, NULL);
    member(&t, "a", '5', NULL, 0, NULL);
    end(&t);
    expect_refused(&t, "both a file and a directory");
    free(t.data);
    /* a pax header naming a link target */
    t = (struct tar){ 0 };
    member(&t, "PaxHeader", 'x', "20 linkpath=/etc/x\n", 19, NULL);
    member(&t, "a", '0', "x", 1, NULL);
    end(&t);
    expect_refused(&t, "pax");
    free(t.data);
}

/* The snapshot replaces the inline entries; the mount entry and the output prefix stay. */
static void test_tar_replaces_inline(void **state)
{
    (void)state;
    struct tar t = { 0 };
    member(&t, "new.txt", '0', "new", 3, NULL);
    member(&t, "new.txt", '0', "newer", 5, NULL); /* a later member replaces an earlier one */
    end(&t);
    struct al_workspace *ws = ws_of(manifest);
    assert_int_equal(al_workspace_load_tar(ws, t.data, t.len, NULL), AL_OK);
    size_t len;
    char *out = tar_of(ws, &len);
    assert_null(memmem(out, len, "README.md", 9));
    assert_non_null(memmem(out, len, "newer", 5));
    assert_non_null(memmem(out, len, "out/", 4)); /* the output prefix is made again */
    assert_null(memmem(out, len, "lake", 4));     /* mounts are never in a tar */
    free(out);
    free(t.data);
    al_workspace_free(ws);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 50 MB in 50 files through tar and back. The times are printed for the bench's reader; a
 * test's verdict never depends on them. */
static void test_tar_50mb(void **state)
{
    (void)state;
    const size_t per = 1u << 20;
    char *data = malloc(per);
    for (size_t i = 0; i < per; i++) {
        data[i] = (char)(i * 7);
    }
    struct tar t = { 0 };
    t.data = malloc(50 * (per + 512) + 1024);
    for (int i = 0; i < 50; i++) {
        char n[32];
        snprintf(n, sizeof n, "data/part-%02d.bin", i);
        member(&t, n, '0', data, per, NULL);
    }
    end(&t);
    struct al_workspace *ws = ws_of("{\"limits\": {\"bytes\": 67108864}}");
    double t0 = now_s();
    struct al_error err;
    if (al_workspace_load_tar(ws, t.data, t.len, &err) != AL_OK) {
        fail_msg("load: %s", err.message);
    }
    double t1 = now_s();
    size_t len;
    char *out = tar_of(ws, &len);
    double t2 = now_s();
    assert_true(len >= 50 * per);
    print_message("workspace tar of 50 MiB: load %.3f s, tar %.3f s\n", t1 - t0, t2 - t1);
    free(out);
    free(t.data);
    free(data);
    al_workspace_free(ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tar_round_trip),      cmocka_unit_test(test_tar_gnu_long_name),
        cmocka_unit_test(test_tar_hostile),         cmocka_unit_test(test_tar_structure),
        cmocka_unit_test(test_tar_replaces_inline), cmocka_unit_test(test_tar_50mb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
