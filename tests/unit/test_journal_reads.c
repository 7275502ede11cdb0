/* unit.journal_reads - a workspace read in airlockd's journal (src/server/run_workspace.c,
 * run_workspace_read_ref and run_workspace_read_answer): a readFile answer, text or bytes, is
 * journaled as a small reference and its file's bytes as a blob, and the reference read back is
 * the answer the guest was given, byte for byte; every other answer is kept as it is; a blob
 * whose bytes changed in the database, or that is missing, is refused, never replayed. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_workspace.h"
#include "store.h"

#define READ_FN "workspace.readFile"

struct fixture {
    char dir[64];
    char db[PATH_MAX];
    struct store *s;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char errmsg[STORE_ERRMSG_MAX];
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/unit-journal-reads-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/airlock.db", f->dir);
    assert_int_equal(store_sqlite_open(f->db, &f->s, errmsg), STORE_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char path[PATH_MAX + 16];
    f->s->ops->close(f->s);
    static const char *const files[] = { "airlock.db", "airlock.db-wal", "airlock.db-shm" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", f->dir, files[i]);
        unlink(path);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* answer -> reference + blob -> the same answer */
static void round_trip(struct fixture *f, const char *answer, const char *form, const void *bytes,
                       size_t len)
{
    struct run_workspace_read rd;
    char sha256[65];
    char *back = NULL;
    size_t back_len = 0;
    assert_int_equal(run_workspace_read_ref(READ_FN, STORE_JOURNAL_VALUE,
                                            (const unsigned char *)answer, strlen(answer), &rd),
                     1);
    assert_int_equal(rd.len, len);
    if (len > 0) {
        assert_memory_equal(rd.bytes, bytes, len);
    }
    assert_true(strlen(rd.ref) < 128 && strstr(rd.ref, form) != NULL);
    assert_int_equal(f->s->ops->blob_put(f->s, rd.bytes, rd.len, sha256), STORE_OK);
    assert_non_null(strstr(rd.ref, sha256));
    assert_int_equal(run_workspace_read_answer(f->s, READ_FN, STORE_JOURNAL_VALUE,
                                               (const unsigned char *)rd.ref, strlen(rd.ref), &back,
                                               &back_len),
                     1);
    assert_int_equal(back_len, strlen(answer));
    assert_memory_equal(back, answer, back_len);
    free(back);
    free(rd.bytes);
}

static void test_journal_reads_text_and_bytes_round_trip(void **state)
{
    struct fixture *f = *state;
    round_trip(f, "\"caf\xc3\xa9 \xe2\x9c\x93\\t\\\"q\\\"\\n\\u0000\\u001f\"", "\"text\"",
               "caf\xc3\xa9 \xe2\x9c\x93\t\"q\"\n\0\x1f", 16);
    round_trip(f, "\"\"", "\"text\"", "", 0);
    /* every padding of base64, NULs and high bytes */
    round_trip(f,
               "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"\"},"
               "\"byteOffset\":0,\"length\":0}",
               "\"bytes\"", "", 0);
    round_trip(f,
               "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":"
               "\"AA==\"},\"byteOffset\":0,\"length\":1}",
               "\"bytes\"", "\0", 1);
    round_trip(f,
               "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":"
               "\"AP8=\"},\"byteOffset\":0,\"length\":2}",
               "\"bytes\"", "\0\xff", 2);
    round_trip(f,
               "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":"
               "\"AP8BgA==\"},\"byteOffset\":0,\"length\":4}",
               "\"bytes\"", "\0\xff\x01\x80", 4);
}

static void test_journal_reads_other_answers_kept(void **state)
{
    (void)state;
    struct run_workspace_read rd;
    static const char *const not_reads[] = {
        "", /* undefined */
        "42",
        "[\"a\"]",
        /* not the form libairlock writes for a file: kept whole */
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AP8=\"},"
        "\"byteOffset\":1,\"length\":1}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AP8=\"},"
        "\"byteOffset\":0,\"length\":3}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"A*8=\"},"
        "\"byteOffset\":0,\"length\":2}",
        "{\"$type\":\"Uint8Array\",\"buffer\":{\"$type\":\"arraybuffer\",\"base64\":\"AP8=\"},"
        "\"byteOffset\":0,\"length\":2,\"extra\":1}",
        "{\"$type\":\"Uint8Array\",\"buffer\":\"AP8=\",\"byteOffset\":0,\"length\":2}",
        "\"unterminated",
    };
    for (size_t i = 0; i < sizeof not_reads / sizeof not_reads[0]; i++) {
        assert_int_equal(run_workspace_read_ref(READ_FN, STORE_JOURNAL_VALUE,
                                                (const unsigned char *)not_reads[i],
                                                strlen(not_reads[i]), &rd),
                         0);
    }
    /* another function's value, or a read's throw */
    assert_int_equal(run_workspace_read_ref("workspace.readdir", STORE_JOURNAL_VALUE,
                                            (const unsigned char *)"\"a\"", 3, &rd),
                     0);
    assert_int_equal(run_workspace_read_ref(READ_FN, STORE_JOURNAL_THROW,
                                            (const unsigned char *)"\"a\"", 3, &rd),
                     0);
}

static void test_journal_reads_reference_only_where_written(void **state)
{
    struct fixture *f = *state;
    struct run_workspace_read rd;
    char sha256[65];
    char *back = NULL;
    size_t back_len = 0;
    assert_int_equal(run_workspace_read_ref(READ_FN, STORE_JOURNAL_VALUE,
                                            (const unsigned char *)"\"hello\"", 7, &rd),
                     1);
    assert_int_equal(f->s->ops->blob_put(f->s, rd.bytes, rd.len, sha256), STORE_OK);
    const unsigned char *ref = (const unsigned char *)rd.ref;
    /* a connector's answer that looks like one, a throw, an answer longer: taken as they are */
    assert_int_equal(run_workspace_read_answer(f->s, "shop.get", STORE_JOURNAL_VALUE, ref,
                                               strlen(rd.ref), &back, &back_len),
                     0);
    assert_int_equal(run_workspace_read_answer(f->s, READ_FN, STORE_JOURNAL_THROW, ref,
                                               strlen(rd.ref), &back, &back_len),
                     0);
    char longer[160];
    snprintf(longer, sizeof longer, "%s ", rd.ref);
    assert_int_equal(run_workspace_read_answer(f->s, READ_FN, STORE_JOURNAL_VALUE,
                                               (const unsigned char *)longer, strlen(longer), &back,
                                               &back_len),
                     0);
    assert_null(back);
    free(rd.bytes);
}

static void test_journal_reads_changed_or_missing_blob_refused(void **state)
{
    struct fixture *f = *state;
    struct run_workspace_read rd;
    char sha256[65];
    char *back = NULL;
    size_t back_len = 0;
    assert_int_equal(run_workspace_read_ref(READ_FN, STORE_JOURNAL_VALUE,
                                            (const unsigned char *)"\"pay 10\"", 8, &rd),
                     1);
    /* no blob: refused */
    assert_int_equal(run_workspace_read_answer(f->s, READ_FN, STORE_JOURNAL_VALUE,
                                               (const unsigned char *)rd.ref, strlen(rd.ref), &back,
                                               &back_len),
                     -1);
    assert_int_equal(f->s->ops->blob_put(f->s, rd.bytes, rd.len, sha256), STORE_OK);
    /* its bytes changed behind airlockd's back: refused, never given to the guest */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE workspace_blobs SET bytes = X'706179203939' WHERE sha256 = '%s'", sha256);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);
    assert_int_equal(run_workspace_read_answer(f->s, READ_FN, STORE_JOURNAL_VALUE,
                                               (const unsigned char *)rd.ref, strlen(rd.ref), &back,
                                               &back_len),
                     -1);
    assert_null(back);
    free(rd.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_journal_reads_text_and_bytes_round_trip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_journal_reads_other_answers_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal_reads_reference_only_where_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_journal_reads_changed_or_missing_blob_refused, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
