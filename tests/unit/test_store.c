/* unit.store - the SQLite store (src/store/sqlite.c) through its ops table: migrations and the
 * schema version check, conflicts and missing rows, key lookup and revocation, role grants,
 * department policy, audit appends in order and hash-chained (a checkpoint every 1000th record
 * once a key is set), and a rolled-back transaction leaving nothing. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "migrations.h"
#include "store.h"

struct fixture {
    char dir[64];
    char path[96];
    struct store *s;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char err[STORE_ERRMSG_MAX];
    snprintf(f->dir, sizeof f->dir, "/tmp/unit-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/airlock.db", f->dir);
    assert_int_equal(store_sqlite_open(f->path, &f->s, err), STORE_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char path[128];
    if (f->s) {
        f->s->ops->close(f->s);
    }
    const char *suffixes[] = { "", "-wal", "-shm" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", f->path, suffixes[i]);
        unlink(path);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static int count_fn(void *userdata, const void *row)
{
    (void)row;
    (*(int *)userdata)++;
    return 0;
}

static int count_grant(void *userdata, const struct store_grant *g)
{
    return count_fn(userdata, g);
}

static int count_audit(void *userdata, const struct store_audit *a)
{
    return count_fn(userdata, a);
}

static int read_policy(void *userdata, const struct store_department *d)
{
    snprintf(userdata, 32, "%s/%d", d->autonomy, d->allow_adhoc);
    return 0;
}

static void test_store_ops_version_and_schema(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(f->s->ops->version, STORE_OPS_VERSION);
    assert_string_equal(f->s->ops->name, "sqlite");
    assert_true(store_schema_version() >= 1);
    assert_int_equal(f->s->ops->ping(f->s), STORE_OK);
}

static void test_store_newer_schema_refused(void **state)
{
    struct fixture *f = *state;
    sqlite3 *db = NULL;
    char err[STORE_ERRMSG_MAX];
    struct store *again = NULL;
    f->s->ops->close(f->s);
    f->s = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 1000", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_sqlite_open(f->path, &again, err), STORE_ERROR);
    assert_null(again);
    assert_non_null(strstr(err, "newer"));
}

static void test_store_reopen_keeps_rows(void **state)
{
    struct fixture *f = *state;
    char err[STORE_ERRMSG_MAX];
    int64_t n = 0;
    assert_int_equal(f->s->ops->principal_create(f->s, "admin", "user"), STORE_OK);
    f->s->ops->close(f->s);
    assert_int_equal(store_sqlite_open(f->path, &f->s, err), STORE_OK);
    assert_int_equal(f->s->ops->principal_count(f->s, &n), STORE_OK);
    assert_int_equal(n, 1);
}

static void test_store_principal_conflict_and_missing(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    unsigned char hash[STORE_HASH_LEN] = { 1 };
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "alice", "agent"), STORE_CONFLICT);
    assert_int_equal(s->ops->key_add(s, "nobody", "aaaaaaaaaaaa", hash), STORE_NOT_FOUND);
    assert_int_equal(s->ops->role_grant(s, "nobody", "agent", "*"), STORE_NOT_FOUND);
}

static void test_store_key_lookup_and_revoke(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    unsigned char hash[STORE_HASH_LEN];
    unsigned char got[STORE_HASH_LEN];
    char name[STORE_NAME_MAX + 1];
    memset(hash, 0xab, sizeof hash);
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->key_add(s, "alice", "0123456789ab", hash), STORE_OK);
    assert_int_equal(s->ops->key_add(s, "alice", "0123456789ab", hash), STORE_CONFLICT);
    assert_int_equal(s->ops->key_lookup(s, "0123456789ab", name, got), STORE_OK);
    assert_string_equal(name, "alice");
    assert_memory_equal(got, hash, sizeof hash);
    assert_int_equal(s->ops->key_lookup(s, "ffffffffffff", name, got), STORE_NOT_FOUND);
    assert_int_equal(s->ops->key_revoke(s, "bob", "0123456789ab"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->key_revoke(s, "alice", "0123456789ab"), STORE_OK);
    assert_int_equal(s->ops->key_revoke(s, "alice", "0123456789ab"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->key_lookup(s, "0123456789ab", name, got), STORE_NOT_FOUND);
}

static void test_store_roles_grant_revoke(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int n = 0;
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "alice", "author", "finance"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "alice", "author", "finance"), STORE_CONFLICT);
    assert_int_equal(s->ops->role_grant(s, "alice", "auditor", "*"), STORE_OK);
    assert_int_equal(s->ops->role_list(s, "alice", count_grant, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s->ops->role_revoke(s, "alice", "author", "finance"), STORE_OK);
    assert_int_equal(s->ops->role_revoke(s, "alice", "author", "finance"), STORE_NOT_FOUND);
    n = 0;
    assert_int_equal(s->ops->role_list(s, "alice", count_grant, &n), STORE_OK);
    assert_int_equal(n, 1);
}

static void test_store_department_policy(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char policy[32] = "";
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_CONFLICT);
    assert_int_equal(s->ops->department_get(s, "finance", read_policy, policy), STORE_OK);
    assert_string_equal(policy, "autonomous/0");
    assert_int_equal(s->ops->department_set_policy(s, "finance", "supervised", 1), STORE_OK);
    assert_int_equal(s->ops->department_get(s, "finance", read_policy, policy), STORE_OK);
    assert_string_equal(policy, "supervised/1");
    assert_int_equal(s->ops->department_set_policy(s, "nowhere", "supervised", 0), STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_get(s, "nowhere", read_policy, policy), STORE_NOT_FOUND);
}

static void test_store_audit_append_in_order(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int64_t seq1 = 0;
    int64_t seq2 = 0;
    int n = 0;
    assert_int_equal(s->ops->audit_append(s, "admin", "department.create", "finance", "finance",
                                          "{\"name\":\"finance\"}", &seq1),
                     STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "airlockd", "auth.denied", NULL, NULL, "{}", &seq2),
                     STORE_OK);
    assert_true(seq2 == seq1 + 1);
    assert_int_equal(s->ops->audit_list(s, 0, 100, count_audit, &n), STORE_OK);
    assert_int_equal(n, 2);
    n = 0;
    assert_int_equal(s->ops->audit_list(s, seq1, 100, count_audit, &n), STORE_OK);
    assert_int_equal(n, 1);
}

static int feed_verifier(void *userdata, const struct store_audit *a)
{
    assert_int_equal(audit_verifier_line(userdata, a->line, strlen(a->line), NULL),
                     AUDIT_FAULT_NONE);
    return 0;
}

struct chain {
    int n;
    int checkpoints;
    char prev[AUDIT_HASH_HEX_LEN + 1];
    int64_t last_checkpoint;
};

static int check_chain(void *userdata, const struct store_audit *a)
{
    struct chain *c = userdata;
    c->n++;
    assert_non_null(a->prev);
    assert_non_null(a->hash);
    assert_non_null(a->line);
    assert_string_equal(a->prev, c->prev);
    assert_non_null(strstr(a->line, a->hash));
    snprintf(c->prev, sizeof c->prev, "%s", a->hash);
    if (strcmp(a->action, AUDIT_CHECKPOINT_ACTION) == 0) {
        c->checkpoints++;
        c->last_checkpoint = a->seq;
    }
    return 0;
}

static void test_store_audit_chained(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct chain c;
    struct audit_verifier *v = NULL;
    struct store_checkpoint cp;
    memset(&c, 0, sizeof c);
    memset(c.prev, '0', AUDIT_HASH_HEX_LEN);
    assert_int_equal(s->ops->audit_checkpoint(s, 0, &cp), STORE_NOT_FOUND);
    assert_int_equal(s->ops->audit_append(s, "admin", "x.y", NULL, NULL, "{\"a\":[1,2]}", NULL),
                     STORE_OK);
    /* no key: no checkpoint can be made */
    assert_int_equal(s->ops->audit_checkpoint(s, 0, &cp), STORE_ERROR);
    /* details that are not one object are refused, and leave nothing behind */
    assert_int_equal(s->ops->audit_append(s, "admin", "x.y", NULL, NULL, "{},\"seq\":9", NULL),
                     STORE_ERROR);

    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    EVP_PKEY *key = NULL;
    assert_int_equal(EVP_PKEY_keygen_init(kctx), 1);
    assert_int_equal(EVP_PKEY_keygen(kctx, &key), 1);
    assert_int_equal(s->ops->audit_set_key(s, key), STORE_OK);
    EVP_PKEY_free(key); /* the store keeps its own reference */
    EVP_PKEY_CTX_free(kctx);

    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    for (int i = 0; i < 1200; i++) {
        assert_int_equal(s->ops->audit_append(s, "admin", "x.y", "t", "d", "{}", NULL), STORE_OK);
    }
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->audit_list(s, 0, 5000, check_chain, &c), STORE_OK);
    assert_int_equal(c.n, 1202);
    assert_int_equal(c.checkpoints, 1);
    assert_int_equal(c.last_checkpoint, 1000);

    /* sealing appends a checkpoint of the head once, not again while nothing changed */
    assert_int_equal(s->ops->audit_checkpoint(s, 1, &cp), STORE_OK);
    assert_int_equal(cp.seq, 1203);
    assert_int_equal(s->ops->audit_checkpoint(s, 1, &cp), STORE_OK);
    assert_int_equal(cp.seq, 1203);

    /* the stored lines are an export `airlock audit verify` accepts */
    assert_int_equal(audit_verifier_new(cp.public_key, 0, &v, NULL), AL_OK);
    assert_int_equal(s->ops->audit_list(s, 0, 5000, feed_verifier, v), STORE_OK);
    assert_int_equal(audit_verifier_finish(v, NULL), AUDIT_FAULT_NONE);
    audit_verifier_free(v);
}

/* A database of schema 1 (records without prev, hash, line) is chained on its first open. */
static void test_store_audit_legacy_chained(void **state)
{
    struct fixture *f = *state;
    struct chain c;
    sqlite3 *db = NULL;
    char err[STORE_ERRMSG_MAX];
    f->s->ops->close(f->s);
    f->s = NULL;
    unlink(f->path);
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, migrations[0].sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(
            sqlite3_exec(db,
                         "PRAGMA user_version = 1; INSERT INTO audit(time, actor, action, "
                         "subject, department, details) VALUES "
                         "('2026-01-31T12:00:01.007Z', 'airlockd', 'principal.create', 'admin', "
                         "NULL, '{\"kind\":\"user\"}'), ('2026-01-31T12:00:01.008Z', 'admin', "
                         "'department.create', 'ops', 'ops', '{}')",
                         NULL, NULL, NULL),
            SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_sqlite_open(f->path, &f->s, err), STORE_OK);
    assert_int_equal(f->s->ops->audit_append(f->s, "admin", "x.y", NULL, NULL, "{}", NULL),
                     STORE_OK);
    memset(&c, 0, sizeof c);
    memset(c.prev, '0', AUDIT_HASH_HEX_LEN);
    assert_int_equal(f->s->ops->audit_list(f->s, 0, 10, check_chain, &c), STORE_OK);
    assert_int_equal(c.n, 3);
}

static void test_store_rollback_leaves_nothing(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int64_t n = 0;
    int records = 0;
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(
            s->ops->audit_append(s, "admin", "principal.create", "alice", NULL, "{}", NULL),
            STORE_OK);
    s->ops->tx_rollback(s);
    s->ops->tx_rollback(s); /* harmless outside a transaction */
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(s->ops->audit_list(s, 0, 100, count_audit, &records), STORE_OK);
    assert_int_equal(records, 0);
}

/* Metrics */
static void test_store_audit_head_is_last_seq(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int64_t head = -1;
    int64_t seq = 0;
    assert_int_equal(s->ops->audit_head(s, &head), STORE_OK);
    assert_int_equal(head, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s->ops->audit_append(s, "admin", "x", NULL, NULL, "{}", &seq), STORE_OK);
    }
    assert_int_equal(s->ops->audit_head(s, &head), STORE_OK);
    assert_int_equal(head, seq);
    /* a rolled back append is not counted */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "x", NULL, NULL, "{}", NULL), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->audit_head(s, &head), STORE_OK);
    assert_int_equal(head, seq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_ops_version_and_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_reopen_keeps_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_principal_conflict_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_key_lookup_and_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_roles_grant_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_department_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_append_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_chained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_legacy_chained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_rollback_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_head_is_last_seq, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
