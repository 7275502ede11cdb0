/* unit.store, unit.store.postgres - the store through its ops table, one suite for both back
 * ends: SQLite (src/store/sqlite.c) by default, PostgreSQL (src/store/postgres.c) when
 * AIRLOCK_TEST_DATABASE names a cluster (postgresql://...; tests/support/pg_cluster.sh starts
 * one), each test then on a database of its own, created and dropped around it. Migrations, the
 * two back ends' migration lists in step, the schema version check, conflicts and missing rows, key
 * lookup and revocation, role grants, department policy, audit appends in order and hash-chained (a
 * checkpoint every 1000th record once a key is set), a rolled-back transaction leaving nothing, and
 * kept statements: many calls of the same operations do not grow SQLite's memory, a callback may
 * nest the operation it is called from, and no call leaves a read open that would hide another
 * connection's commit. Group commit off the lock: a transaction of tx_begin_unsynced commits
 * without an fsync, sync then makes it durable, and every other transaction is synced at its commit
 * again (SQLite's fsyncs are counted; PostgreSQL's commits are durable as they return, and sync
 * does nothing). The queue: 50 connections racing to claim one queued run and take its
 * continuation, round after round, exactly one gets it. PostgreSQL's wake-ups: a listener hears a
 * committed notification, never a rolled-back one, is woken, and listens again after its
 * connection was ended. The journal of durable runs: batches read back whole and in order, answers
 * stored once whatever number of entries name them (forks share them), a batch appended again
 * changes nothing and one that differs is refused, answers of 1 MiB with any bytes come back exact,
 * changed ones are refused, a rolled-back savepoint drops its entries, and a database of the
 * schema before it is migrated with its runs. Webhooks' outbox: an event is a delivery per
 * subscribed webhook, claimed by one node until its lease runs out, settled by its holder only.
 * Raw SQL in this file (a second connection) only sets up what the store must cope with or counts
 * rows. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "migrations.h"
#include "store.h"

/* Every fdatasync of the process (SQLite's and the store's) counted, then made: the executable's
 * definition comes before libc's for the shared SQLite too. */
static atomic_int datasyncs;

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    atomic_fetch_add(&datasyncs, 1);
    return (int)syscall(SYS_fdatasync, fd);
}

/* AIRLOCK_TEST_DATABASE: the PostgreSQL cluster to test on; NULL: SQLite. */
static const char *pg_base;

struct fixture {
    char dir[64];
    char path[96];  /* SQLite: the database file */
    char db[64];    /* PostgreSQL: this test's database */
    char url[1024]; /* ... and its URL */
    struct store *s;
};

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* NOTICEs of DROP ... CASCADE */
}

/* Runs sql on a connection of its own: to the test's database, or to the cluster's own with
 * `admin` (CREATE / DROP DATABASE). 0 on success. */
static int raw_exec(const struct fixture *f, int admin, const char *sql)
{
    if (!pg_base) {
        sqlite3 *db = NULL;
        int rc = sqlite3_open(f->path, &db) == SQLITE_OK &&
                                 sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK
                         ? 0
                         : -1;
        sqlite3_close(db);
        return rc;
    }
    PGconn *conn = PQconnectdb(admin ? pg_base : f->url);
    PQsetNoticeProcessor(conn, quiet, NULL);
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        fprintf(stderr, "raw_exec: %s: %s", sql, PQerrorMessage(conn));
    }
    PQclear(res);
    PQfinish(conn);
    return ok ? 0 : -1;
}

static enum store_rc store_open(struct fixture *f, struct store **ret, char *err)
{
    return pg_base ? store_postgres_open(f->url, ret, err) : store_sqlite_open(f->path, ret, err);
}

/* A fresh database on the cluster: the base URL with its path (the database name) replaced. */
static void pg_fresh(struct fixture *f)
{
    static int n;
    char sql[256];
    const char *authority = strstr(pg_base, "://");
    assert_non_null(authority);
    const char *path = strchr(authority + 3, '/');
    assert_non_null(path);
    const char *query = strchr(path, '?');
    snprintf(f->db, sizeof f->db, "unit_store_%d_%d", (int)getpid(), ++n);
    snprintf(f->url, sizeof f->url, "%.*s/%s%s", (int)(path - pg_base), pg_base, f->db,
             query ? query : "");
    /* a name of this test's making; a locale whose order is not bytes ("B" after "b"), so that a
     * list sorted by it instead of byte by byte, as SQLite sorts, is seen */
    snprintf(sql, sizeof sql,
             "CREATE DATABASE %s TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' "
             "LOCALE 'C.UTF-8'",
             f->db);
    assert_int_equal(raw_exec(f, 1, sql), 0);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char err[STORE_ERRMSG_MAX];
    snprintf(f->dir, sizeof f->dir, "/tmp/unit-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/airlock.db", f->dir);
    if (pg_base) {
        pg_fresh(f);
    }
    if (store_open(f, &f->s, err) != STORE_OK) {
        fail_msg("open: %s", err);
    }
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
    if (pg_base) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", f->db);
        assert_int_equal(raw_exec(f, 1, sql), 0);
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
    assert_string_equal(f->s->ops->name, pg_base ? "postgres" : "sqlite");
    assert_true(store_schema_version() >= 1);
    assert_int_equal(f->s->ops->ping(f->s), STORE_OK);
    /* wake-ups between nodes: PostgreSQL's alone (SQLite is one node) */
    assert_int_equal(f->s->ops->notify != NULL, pg_base != NULL);
    assert_int_equal(f->s->ops->listener_new != NULL, pg_base != NULL);
}

/* The back ends' migrations are the same steps: as many, numbered and named alike. */
static void test_store_migrations_in_step(void **state)
{
    (void)state;
    assert_int_equal(postgres_migrations_count, migrations_count);
    assert_int_equal(store_schema_version(), migrations_count);
    for (int i = 0; i < migrations_count; i++) {
        assert_int_equal(migrations[i].number, i + 1);
        assert_int_equal(postgres_migrations[i].number, i + 1);
        assert_string_equal(postgres_migrations[i].name, migrations[i].name);
    }
}

static void test_store_newer_schema_refused(void **state)
{
    struct fixture *f = *state;
    char err[STORE_ERRMSG_MAX];
    struct store *again = NULL;
    f->s->ops->close(f->s);
    f->s = NULL;
    assert_int_equal(raw_exec(f, 0,
                              pg_base ? "UPDATE airlock_schema SET version = 1000"
                                      : "PRAGMA user_version = 1000"),
                     0);
    assert_int_equal(store_open(f, &again, err), STORE_ERROR);
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
    assert_int_equal(store_open(f, &f->s, err), STORE_OK);
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

struct names {
    char text[64];
};

static int name_department(void *userdata, const struct store_department *d)
{
    struct names *n = userdata;
    size_t len = strlen(n->text);
    snprintf(n->text + len, sizeof n->text - len, "%s,", d->name);
    return 0;
}

static int name_principal(void *userdata, const struct store_principal *p)
{
    struct names *n = userdata;
    size_t len = strlen(n->text);
    snprintf(n->text + len, sizeof n->text - len, "%s,", p->name);
    return 0;
}

/* Lists by name are in byte order on both back ends, whatever the database's locale. */
static void test_store_lists_sorted_bytewise(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    const char *names[] = { "b", "B", "a", "_x", "\xc3\xa9" };
    struct names got = { "" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        assert_int_equal(s->ops->department_create(s, names[i]), STORE_OK);
        assert_int_equal(s->ops->principal_create(s, names[i], "user"), STORE_OK);
    }
    assert_int_equal(s->ops->department_list(s, name_department, &got), STORE_OK);
    assert_string_equal(got.text, "B,_x,a,b,\xc3\xa9,");
    got.text[0] = '\0';
    assert_int_equal(s->ops->principal_list(s, name_principal, &got), STORE_OK);
    assert_string_equal(got.text, "B,_x,a,b,\xc3\xa9,");
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

    /* the checkpoint of record 999 (appended as 1000) is handed out once, to keep outside */
    struct store_checkpoint taken;
    assert_int_equal(s->ops->audit_take_appended(s, &taken), STORE_OK);
    assert_int_equal(taken.seq, 999);
    assert_int_equal(s->ops->audit_take_appended(s, &taken), STORE_NOT_FOUND);

    /* sealing appends a checkpoint of the head once, not again while nothing changed */
    assert_int_equal(s->ops->audit_checkpoint(s, 1, &cp), STORE_OK);
    assert_int_equal(cp.seq, 1203);
    assert_int_equal(s->ops->audit_take_appended(s, &taken), STORE_OK);
    assert_int_equal(taken.seq, 1202);
    assert_int_equal(s->ops->audit_checkpoint(s, 1, &cp), STORE_OK);
    assert_int_equal(cp.seq, 1203);
    assert_int_equal(s->ops->audit_take_appended(s, &taken), STORE_NOT_FOUND);

    /* a seal rolled back, even as a savepoint in a transaction that commits, is never handed
     * out: airlockd would keep a checkpoint the database does not hold */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "x.y", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->audit_checkpoint(s, 1, &cp), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->audit_take_appended(s, &taken), STORE_NOT_FOUND);
    assert_int_equal(s->ops->audit_checkpoint(s, 0, &cp), STORE_OK);
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
    char err[STORE_ERRMSG_MAX];
    f->s->ops->close(f->s);
    f->s = NULL;
    if (pg_base) {
        assert_int_equal(raw_exec(f, 0, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"), 0);
        assert_int_equal(raw_exec(f, 0, postgres_migrations[0].sql), 0);
        assert_int_equal(raw_exec(f, 0,
                                  "CREATE TABLE airlock_schema (version INTEGER NOT NULL); "
                                  "INSERT INTO airlock_schema VALUES (1)"),
                         0);
    } else {
        unlink(f->path);
        assert_int_equal(raw_exec(f, 0, migrations[0].sql), 0);
        assert_int_equal(raw_exec(f, 0, "PRAGMA user_version = 1"), 0);
    }
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO audit(seq, time, actor, action, subject, department, "
                              "details) VALUES (1, '2026-01-31T12:00:01.007Z', 'airlockd', "
                              "'principal.create', 'admin', NULL, '{\"kind\":\"user\"}'), (2, "
                              "'2026-01-31T12:00:01.008Z', 'admin', 'department.create', 'ops', "
                              "'ops', '{}')"),
                     0);
    assert_int_equal(store_open(f, &f->s, err), STORE_OK);
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

struct version_seen {
    int n;
    int64_t version;
    char state[16];
    char department[STORE_NAME_MAX + 1];
    char approved_by[STORE_NAME_MAX + 1];
    char comment[64];
};

static int read_version(void *userdata, const struct store_version *v)
{
    struct version_seen *vs = userdata;
    vs->n++;
    vs->version = v->version;
    snprintf(vs->state, sizeof vs->state, "%s", v->state);
    snprintf(vs->department, sizeof vs->department, "%s", v->department);
    snprintf(vs->approved_by, sizeof vs->approved_by, "%s", v->approved_by ? v->approved_by : "-");
    snprintf(vs->comment, sizeof vs->comment, "%s",
             v->revoke_reason     ? v->revoke_reason
             : v->approve_comment ? v->approve_comment
                                  : "-");
    return 0;
}

static int count_template(void *userdata, const struct store_template *t)
{
    return count_fn(userdata, t);
}

static int count_version(void *userdata, const struct store_version *v)
{
    return count_fn(userdata, v);
}

static void add_version(struct store *s, const char *t, int64_t want)
{
    struct store_version v = { .template_name = t,
                               .source = "1",
                               .language = "js",
                               .input_schema = "{}",
                               .functions = "[]",
                               .autonomy = "autonomous",
                               .limits = "{}",
                               .digest = "sha256:00",
                               .author = "alice" };
    int64_t n = 0;
    assert_int_equal(s->ops->version_create(s, &v, &n), STORE_OK);
    assert_int_equal(n, want);
}

static void test_store_templates_and_versions(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct version_seen vs;
    int n = 0;
    assert_int_equal(s->ops->template_create(s, "t", "finance", "d", "alice"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "d", "alice"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "", "bob"), STORE_CONFLICT);
    assert_int_equal(s->ops->template_create(s, "u", "finance", NULL, "bob"), STORE_OK);
    assert_int_equal(s->ops->template_list(s, count_template, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s->ops->template_get(s, "nope", count_template, &n), STORE_NOT_FOUND);

    struct store_version ghost = { .template_name = "ghost",
                                   .source = "1",
                                   .language = "js",
                                   .input_schema = "{}",
                                   .functions = "[]",
                                   .autonomy = "autonomous",
                                   .limits = "{}",
                                   .digest = "x",
                                   .author = "alice" };
    int64_t num = 0;
    assert_int_equal(s->ops->version_create(s, &ghost, &num), STORE_NOT_FOUND);
    add_version(s, "t", 1);
    add_version(s, "t", 2);
    add_version(s, "t", 3);
    add_version(s, "u", 1); /* numbered per template */

    memset(&vs, 0, sizeof vs);
    assert_int_equal(s->ops->version_get(s, "t", 2, read_version, &vs), STORE_OK);
    assert_int_equal(vs.n, 1);
    assert_string_equal(vs.state, "draft");
    assert_string_equal(vs.department, "finance");
    assert_string_equal(vs.approved_by, "-");
    assert_int_equal(s->ops->version_get(s, "t", 9, read_version, &vs), STORE_NOT_FOUND);
    assert_int_equal(s->ops->version_get(s, "ghost", 1, read_version, &vs), STORE_NOT_FOUND);
    /* version 0 is the newest approved: none yet */
    assert_int_equal(s->ops->version_get(s, "t", 0, read_version, &vs), STORE_NOT_FOUND);

    /* state moves are conditional on the state they leave */
    assert_int_equal(s->ops->version_set_state(s, "t", 1, "submitted", "approved", "bob", NULL),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->version_set_state(s, "t", 9, "draft", "submitted", "bob", NULL),
                     STORE_NOT_FOUND);
    for (int64_t v = 1; v <= 2; v++) {
        assert_int_equal(s->ops->version_set_state(s, "t", v, "draft", "submitted", "alice", NULL),
                         STORE_OK);
        assert_int_equal(s->ops->version_set_state(s, "t", v, "submitted", "approved", "bob", "ok"),
                         STORE_OK);
    }
    memset(&vs, 0, sizeof vs);
    assert_int_equal(s->ops->version_get(s, "t", 0, read_version, &vs), STORE_OK);
    assert_int_equal(vs.version, 2);
    assert_string_equal(vs.approved_by, "bob");
    assert_string_equal(vs.comment, "ok");
    /* a revoked version is never approved again, and the newest approved moves back */
    assert_int_equal(s->ops->version_set_state(s, "t", 2, "approved", "revoked", "carol", "bad"),
                     STORE_OK);
    assert_int_equal(s->ops->version_set_state(s, "t", 2, "submitted", "approved", "bob", NULL),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->version_set_state(s, "t", 2, "approved", "revoked", "bob", NULL),
                     STORE_CONFLICT);
    memset(&vs, 0, sizeof vs);
    assert_int_equal(s->ops->version_get(s, "t", 2, read_version, &vs), STORE_OK);
    assert_string_equal(vs.state, "revoked");
    assert_string_equal(vs.comment, "bad");
    memset(&vs, 0, sizeof vs);
    assert_int_equal(s->ops->version_get(s, "t", 0, read_version, &vs), STORE_OK);
    assert_int_equal(vs.version, 1);
    assert_int_equal(s->ops->version_set_state(s, "t", 1, "approved", "bogus", "bob", NULL),
                     STORE_ERROR);
    n = 0;
    assert_int_equal(s->ops->version_list(s, "t", count_version, &n), STORE_OK);
    assert_int_equal(n, 3);
    n = 0;
    assert_int_equal(s->ops->version_list(s, "ghost", count_version, &n), STORE_OK);
    assert_int_equal(n, 0);
}

static void test_store_versions_roll_back(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int n = 0;
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "", "alice"), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    add_version(s, "t", 1);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->version_list(s, "t", count_version, &n), STORE_OK);
    assert_int_equal(n, 0);
    add_version(s, "t", 1);
}

struct seen_connector {
    int n;
    char last[256];
};

static int read_connector(void *userdata, const struct store_connector *c)
{
    struct seen_connector *seen = userdata;
    seen->n++;
    snprintf(seen->last, sizeof seen->last, "%s|%s|%s|%s|%s|%s|%s|%lld|%s|%d", c->name,
             c->department, c->url, c->signing_secret_sealed, c->headers_sealed, c->header_names,
             c->functions, (long long)c->timeout_ms, c->created_by, c->created && c->created[0]);
    return 0;
}

struct seen_delivery {
    int n;
    int64_t seq;
    int64_t attempts;
    char what[512];
};

static int read_delivery(void *userdata, const struct store_delivery *d)
{
    struct seen_delivery *sd = userdata;
    sd->n++;
    sd->seq = d->seq;
    sd->attempts = d->attempts;
    snprintf(sd->what, sizeof sd->what, "%s|%s|%s|%" PRId64 "|%s|%s|%s|%s", d->event, d->type,
             d->body, d->first_ms, d->webhook.id, d->webhook.url, d->webhook.format,
             d->webhook.secret_sealed);
    return 0;
}

/* Webhooks' outbox (0018_webhooks): an event becomes one delivery per webhook subscribed to its
 * type for its department (or "*"); a delivery is claimed by one node until its lease runs out,
 * then by another; only the node holding it settles it; a deleted webhook takes its deliveries. */
static void test_store_webhooks_outbox(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct seen_delivery d = { 0 };
    int64_t next = 0;
    struct store_webhook a = { "wh_a",
                               "http://127.0.0.1:9/a",
                               "[\"run.failed\",\"approval.requested\"]",
                               "finance",
                               "json",
                               "v1:aa",
                               NULL,
                               "admin" };
    struct store_webhook b = {
        "wh_b", "http://127.0.0.1:9/b", "[\"run.failed\"]", "*", "slack", "v1:bb", NULL, "admin"
    };
    struct store_webhook c = {
        "wh_c", "http://127.0.0.1:9/c", "[\"run.failed\"]", "ops", "json", "v1:cc", NULL, "admin"
    };
    assert_int_equal(s->ops->webhook_create(s, &a), STORE_OK);
    assert_int_equal(s->ops->webhook_create(s, &a), STORE_CONFLICT);
    assert_int_equal(s->ops->webhook_create(s, &b), STORE_OK);
    assert_int_equal(s->ops->webhook_create(s, &c), STORE_OK);
    assert_int_equal(s->ops->delivery_next(s, &next), STORE_NOT_FOUND);
    /* finance's run.failed: a and b; approval.requested of no department: nobody; run.failed of
     * no department: b alone */
    assert_int_equal(
            s->ops->webhook_enqueue(s, "evt_1", "run.failed", "finance", "{\"n\":1}", 1000),
            STORE_OK);
    assert_int_equal(
            s->ops->webhook_enqueue(s, "evt_2", "approval.requested", NULL, "{\"n\":2}", 1000),
            STORE_OK);
    assert_int_equal(s->ops->webhook_enqueue(s, "evt_3", "run.failed", NULL, "{\"n\":3}", 2000),
                     STORE_OK);
    assert_int_equal(s->ops->delivery_next(s, &next), STORE_OK);
    assert_int_equal(next, 1000);
    /* not due yet */
    assert_int_equal(s->ops->delivery_claim(s, "node-a", 999, 100, read_delivery, &d),
                     STORE_NOT_FOUND);
    assert_int_equal(d.n, 0);
    /* two due at 1000 (evt_1 for a and for b); a third node finds both held */
    assert_int_equal(s->ops->delivery_claim(s, "node-a", 1000, 100, read_delivery, &d), STORE_OK);
    int64_t first = d.seq;
    assert_int_equal(d.attempts, 1);
    assert_non_null(strstr(d.what, "evt_1|run.failed|{\"n\":1}|1000|wh_"));
    assert_int_equal(s->ops->delivery_claim(s, "node-b", 1000, 100, read_delivery, &d), STORE_OK);
    assert_int_not_equal(d.seq, first);
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 1000, 100, read_delivery, &d),
                     STORE_NOT_FOUND);
    assert_int_equal(d.n, 2);
    /* only the holder settles */
    assert_int_equal(s->ops->delivery_settle(s, first, "node-c", "delivered", 0, NULL),
                     STORE_NOT_FOUND);
    /* node-a's lease runs out at 1100: node-c claims that delivery again, a second attempt, and
     * node-a can no longer settle it */
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 1100, 100, read_delivery, &d), STORE_OK);
    assert_int_equal(d.seq, first);
    assert_int_equal(d.attempts, 2);
    assert_int_equal(s->ops->delivery_settle(s, first, "node-a", "delivered", 0, NULL),
                     STORE_NOT_FOUND);
    assert_int_equal(s->ops->delivery_settle(s, first, "node-c", "pending", 5000, "answered 500"),
                     STORE_OK);
    /* the other of evt_1 (node-b's, held to 1100) and evt_3 (due at 2000) are next */
    assert_int_equal(s->ops->delivery_next(s, &next), STORE_OK);
    assert_int_equal(next, 1100);
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 2000, 100, read_delivery, &d), STORE_OK);
    assert_int_equal(s->ops->delivery_settle(s, d.seq, "node-c", "delivered", 0, NULL), STORE_OK);
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 2000, 100, read_delivery, &d), STORE_OK);
    assert_int_equal(s->ops->delivery_settle(s, d.seq, "node-c", "failed", 0, "given up"),
                     STORE_OK);
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 4999, 100, read_delivery, &d),
                     STORE_NOT_FOUND);
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 5000, 100, read_delivery, &d), STORE_OK);
    assert_int_equal(d.seq, first);
    assert_int_equal(d.attempts, 3);
    assert_int_equal(s->ops->delivery_settle(s, first, "node-c", "delivered", 0, NULL), STORE_OK);
    assert_int_equal(s->ops->delivery_next(s, &next), STORE_NOT_FOUND);
    /* a deleted webhook takes what it had not been sent: evt_4 goes to b alone */
    assert_int_equal(s->ops->webhook_enqueue(s, "evt_4", "run.failed", "finance", "{}", 6000),
                     STORE_OK);
    assert_int_equal(s->ops->webhook_delete(s, "wh_a"), STORE_OK);
    assert_int_equal(s->ops->webhook_delete(s, "wh_a"), STORE_NOT_FOUND);
    d.n = 0;
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 6000, 100, read_delivery, &d), STORE_OK);
    assert_non_null(
            strstr(d.what, "evt_4|run.failed|{}|6000|wh_b|http://127.0.0.1:9/b|slack|v1:bb"));
    assert_int_equal(s->ops->delivery_claim(s, "node-c", 6000, 100, read_delivery, &d),
                     STORE_NOT_FOUND);
}

static void test_store_connectors(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct seen_connector seen = { 0, "" };
    struct store_connector c = { "crm",   "finance",     "http://127.0.0.1:9/crm", "v1:aa",
                                 "v1:bb", "[\"X-Api\"]", "{\"lookup\":{}}",        2500,
                                 NULL,    "admin" };
    /* the department must exist */
    assert_int_equal(s->ops->connector_create(s, &c), STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "ops"), STORE_OK);
    assert_int_equal(s->ops->connector_create(s, &c), STORE_OK);
    assert_int_equal(s->ops->connector_create(s, &c), STORE_CONFLICT);
    assert_int_equal(s->ops->connector_get(s, "crm", read_connector, &seen), STORE_OK);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.last, "crm|finance|http://127.0.0.1:9/crm|v1:aa|v1:bb|[\"X-Api\"]|"
                                   "{\"lookup\":{}}|2500|admin|1");
    assert_int_equal(s->ops->connector_get(s, "erp", read_connector, &seen), STORE_NOT_FOUND);
    struct store_connector d = c;
    d.name = "billing";
    d.department = "ops";
    assert_int_equal(s->ops->connector_create(s, &d), STORE_OK);
    seen.n = 0;
    assert_int_equal(s->ops->connector_list(s, read_connector, &seen), STORE_OK);
    assert_int_equal(seen.n, 2);
    /* by name: crm comes last */
    assert_non_null(strstr(seen.last, "crm|finance"));
    /* a rolled-back create leaves nothing */
    d.name = "gone";
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->connector_create(s, &d), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->connector_get(s, "gone", read_connector, &seen), STORE_NOT_FOUND);
}

static int walk_run_count(void *userdata, const struct store_run *r)
{
    return count_fn(userdata, r);
}

struct run_walk {
    struct store *s;
    int n;
    int64_t last_seq;
    int ordered;
    int stop_at; /* the callback stops the walk at this many; 0: never */
    int nested;  /* run_get from inside the callback found its run */
};

static int walk_run(void *userdata, const struct store_run *r)
{
    struct run_walk *w = userdata;
    int n = 0;
    w->ordered &= r->seq > w->last_seq;
    w->last_seq = r->seq;
    w->n++;
    if (w->s && w->s->ops->run_get(w->s, r->id, walk_run_count, &n) == STORE_OK && n == 1) {
        w->nested++;
    }
    return w->stop_at && w->n >= w->stop_at;
}

static int count_approval(void *userdata, const struct store_approval *a)
{
    return count_fn(userdata, a);
}

/* Runs in seq order over many (more than a PostgreSQL chunk), filtered, from a cursor, stopped by
 * the callback, with a nested call; status moves conditional on the status they leave; a
 * continuation is taken once; approvals are decided once. */
static void test_store_runs_and_approvals(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char id[32];
    char *token = NULL;
    int n = 0;
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    for (int i = 0; i < 150; i++) {
        snprintf(id, sizeof id, "run_%03d", i);
        struct store_run r = { .id = id,
                               .template_name = i % 3 ? "t" : "",
                               .version = i % 3 ? 1 : 0,
                               .department = "finance",
                               .principal = i % 2 ? "agent" : "bob",
                               .status = "running",
                               .input = "{}",
                               .source = i % 3 ? NULL : "return 1",
                               .language = "js",
                               .functions = "[]" };
        assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
        assert_int_equal(s->ops->run_create(s, &r), STORE_CONFLICT);
    }
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    struct run_walk w = { s, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list(s, NULL, walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 150);
    assert_true(w.ordered);
    assert_int_equal(w.nested, 150);
    struct store_run_filter agents = { .template_name = "t", .principal = "agent" };
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list(s, &agents, walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 50); /* odd i, not a multiple of 3 */
    struct store_run_filter later = { .after_seq = w.last_seq };
    int64_t cursor = w.last_seq;
    w = (struct run_walk){ NULL, 0, cursor, 1, 0, 0 };
    assert_int_equal(s->ops->run_list(s, &later, walk_run, &w), STORE_OK);
    assert_true(w.ordered && w.n < 150);
    w = (struct run_walk){ NULL, 0, 0, 1, 70, 0 };
    assert_int_equal(s->ops->run_list(s, NULL, walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 70);

    assert_int_equal(s->ops->run_set_status(s, "run_001", "queued|running", "awaiting_approval",
                                            "{\"x\":1}"),
                     STORE_OK);
    assert_int_equal(s->ops->run_set_status(s, "run_001", "queued|running", "completed", NULL),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_set_status(s, "nope", "running", "completed", NULL),
                     STORE_NOT_FOUND);
    assert_int_equal(s->ops->run_take_continuation(s, "run_001", &token), STORE_NOT_FOUND);
    assert_int_equal(s->ops->run_set_continuation(s, "run_001", "tok"), STORE_OK);
    assert_int_equal(s->ops->run_set_continuation(s, "nope", "tok"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->run_take_continuation(s, "run_001", &token), STORE_OK);
    assert_string_equal(token, "tok");
    free(token);
    token = NULL;
    assert_int_equal(s->ops->run_take_continuation(s, "run_001", &token), STORE_NOT_FOUND);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);

    struct store_approval a = { .id = "apr_1",
                                .run = "run_001",
                                .kind = "host_call",
                                .interruption = "int_1",
                                .function = "shop.refund",
                                .args = "[1]",
                                .requested_by = "agent",
                                .department = "finance",
                                .template_name = "t",
                                .version = 1 };
    assert_int_equal(s->ops->approval_create(s, &a), STORE_OK);
    assert_int_equal(s->ops->approval_create(s, &a), STORE_CONFLICT);
    a.id = "apr_2";
    a.template_name = "";
    assert_int_equal(s->ops->approval_create(s, &a), STORE_OK);
    assert_int_equal(s->ops->approval_list(s, "run_001", "pending", count_approval, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s->ops->approval_decide(s, "apr_1", "approved", "carol", "ok"), STORE_OK);
    assert_int_equal(s->ops->approval_decide(s, "apr_1", "denied", "carol", NULL), STORE_CONFLICT);
    assert_int_equal(s->ops->approval_decide(s, "apr_9", "denied", "carol", NULL), STORE_NOT_FOUND);
    assert_int_equal(s->ops->approval_consume(s, "run_001"), STORE_OK);
    n = 0;
    assert_int_equal(s->ops->approval_list(s, NULL, "pending", count_approval, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s->ops->approval_get(s, "apr_9", count_approval, &n), STORE_NOT_FOUND);
}

/* Several nodes (0006): leases, the node of a run, the calls marked sent. */
struct node_walk {
    int n1;
    int n2;
};

static int walk_node(void *userdata, const char *id)
{
    struct node_walk *w = userdata;
    w->n1 += strcmp(id, "n1") == 0;
    w->n2 += strcmp(id, "n2") == 0;
    return 0;
}

struct call_walk {
    int n;
    char keys[4][32];
    int idempotent[4];
    char digests[4][8];
    char args[4][16];
};

struct execution_copy {
    char resume[32];
    char resolutions[64];
    int resume_null;
    int resolutions_null;
    int64_t clock_ms;
    int64_t attempt;
};

static int copy_execution(void *userdata, const struct store_execution *e)
{
    struct execution_copy *x = userdata;
    assert_string_equal(e->run, "run_a");
    x->resume_null = e->resume == NULL;
    x->resolutions_null = e->resolutions == NULL;
    snprintf(x->resume, sizeof x->resume, "%s", e->resume ? e->resume : "");
    snprintf(x->resolutions, sizeof x->resolutions, "%s", e->resolutions ? e->resolutions : "");
    x->clock_ms = e->clock_ms;
    x->attempt = e->attempt;
    return 0;
}

static int walk_call(void *userdata, const struct store_call *c)
{
    struct call_walk *w = userdata;
    if (w->n < 4) {
        snprintf(w->keys[w->n], sizeof w->keys[0], "%s", c->idempotency_key);
        w->idempotent[w->n] = c->idempotent;
        snprintf(w->digests[w->n], sizeof w->digests[0], "%s", c->args_sha256);
        snprintf(w->args[w->n], sizeof w->args[0], "%s", c->args ? c->args : "(null)");
        assert_non_null(c->sent);
        assert_string_equal(c->run, "run_a");
    }
    w->n++;
    return 0;
}

static void test_store_nodes_leases_and_calls(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct node_walk nw = { 0, 0 };
    /* a 1 ms lease runs out (the store's clock moves on), an hour's does not */
    assert_int_equal(s->ops->node_beat(s, "n1", 1), STORE_OK);
    assert_int_equal(s->ops->node_beat(s, "n2", 3600000), STORE_OK);
    assert_int_equal(s->ops->node_beat(s, "n2", 3600000), STORE_OK); /* renewed, not doubled */
    struct timespec t0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        nw = (struct node_walk){ 0, 0 };
        assert_int_equal(s->ops->node_expired(s, walk_node, &nw), STORE_OK);
        clock_gettime(CLOCK_MONOTONIC, &t);
        assert_true(t.tv_sec - t0.tv_sec < 5);
    } while (nw.n1 == 0);
    assert_int_equal(nw.n1, 1);
    assert_int_equal(nw.n2, 0);
    assert_int_equal(s->ops->node_remove(s, "n1"), STORE_OK);
    assert_int_equal(s->ops->node_remove(s, "n1"), STORE_NOT_FOUND);

    /* runs by node: only running ones, NULL for those no node is recorded for */
    const char *ids[] = { "run_a", "run_b", "run_c" };
    for (int i = 0; i < 3; i++) {
        struct store_run r = { .id = ids[i],
                               .template_name = "",
                               .department = "finance",
                               .principal = "bob",
                               .status = i == 2 ? "awaiting_approval" : "running",
                               .input = "{}",
                               .source = "return 1",
                               .language = "js",
                               .functions = "[]" };
        assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
    }
    assert_int_equal(s->ops->run_set_node(s, "run_a", "n2"), STORE_OK);
    assert_int_equal(s->ops->run_set_node(s, "run_c", "n2"), STORE_OK);
    assert_int_equal(s->ops->run_set_node(s, "nope", "n2"), STORE_NOT_FOUND);
    struct run_walk w = { NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, "n2", walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 1); /* run_c waits for a person: no node executes it */
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, NULL, walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 1); /* run_b */
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, "n9", walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 0);

    /* a run is its node's while it runs there (or, with "cancelled" among the statuses, is
     * cancelled, its end not recorded); not another node's, nor once queued again or ended */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running|cancelled"), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n9", "running|cancelled"),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_b", "n2", "running|cancelled"),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_c", "n2", "running|cancelled"),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_lock_on_node(s, "nope", "n2", "running|cancelled"),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_set_status(s, "run_a", "running", "queued", NULL), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running|cancelled"),
                     STORE_CONFLICT);
    assert_int_equal(s->ops->run_set_status(s, "run_a", "queued", "cancelled", NULL), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running|cancelled"), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running"), STORE_CONFLICT);
    assert_int_equal(s->ops->run_set_status(s, "run_a", "cancelled", "failed", NULL), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running|cancelled"),
                     STORE_CONFLICT);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->run_lock_on_node(s, "run_a", "n2", "running|cancelled"), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);

    /* a run cancelled while its node executed it is that node's for a takeover as long as its
     * end is not recorded (its execution row kept until then) */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->run_set_status(s, "run_a", "running", "cancelled", NULL), STORE_OK);
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, "n2", walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 0);
    struct store_execution kept = { "run_a", NULL, NULL, 0, 0 };
    assert_int_equal(s->ops->execution_put(s, &kept), STORE_OK);
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, "n2", walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 1);
    w = (struct run_walk){ NULL, 0, 0, 1, 0, 0 };
    assert_int_equal(s->ops->run_list_on_node(s, "n9", walk_run, &w), STORE_OK);
    assert_int_equal(w.n, 0);
    s->ops->tx_rollback(s);

    /* calls marked sent: in order, a key once, gone with call_clear (rolled back with the tx);
     * the same call marked again (a retried execution) is fine, another under its key is not */
    struct store_call c1 = { "run_a", "run_a:1", "shop.orders", 1, NULL, "aa", NULL };
    struct store_call c2 = { "run_a", "run_a:2", "shop.slow", 0, NULL, "bb", "[\"x\",1]" };
    struct store_call other_args = { "run_a", "run_a:2", "shop.slow", 0, NULL, "cc", "[2]" };
    struct store_call other_fn = { "run_a", "run_a:2", "shop.orders", 0, NULL, "bb", NULL };
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->call_mark(s, &c1), STORE_OK);
    assert_int_equal(s->ops->call_mark(s, &c2), STORE_OK);
    assert_int_equal(s->ops->call_mark(s, &c2), STORE_OK);
    assert_int_equal(s->ops->call_mark(s, &other_args), STORE_CONFLICT);
    assert_int_equal(s->ops->call_mark(s, &other_fn), STORE_CONFLICT);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    struct call_walk cw;
    memset(&cw, 0, sizeof cw);
    assert_int_equal(s->ops->call_list(s, "run_a", walk_call, &cw), STORE_OK);
    assert_int_equal(cw.n, 2);
    assert_string_equal(cw.keys[0], "run_a:1");
    assert_int_equal(cw.idempotent[0], 1);
    assert_string_equal(cw.keys[1], "run_a:2");
    assert_int_equal(cw.idempotent[1], 0);
    /* a call not idempotent keeps its arguments (0012_in_doubt), one that is keeps none */
    assert_string_equal(cw.args[0], "(null)");
    assert_string_equal(cw.args[1], "[\"x\",1]");
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->call_clear(s, "run_a"), STORE_OK);
    s->ops->tx_rollback(s);
    memset(&cw, 0, sizeof cw);
    assert_int_equal(s->ops->call_list(s, "run_a", walk_call, &cw), STORE_OK);
    assert_int_equal(cw.n, 2);
    assert_string_equal(cw.digests[1], "bb");

    /* what an execution started from: replaced by a put, gone with the marks */
    struct execution_copy x;
    memset(&x, 0, sizeof x);
    assert_int_equal(s->ops->execution_get(s, "run_a", copy_execution, &x), STORE_NOT_FOUND);
    struct store_execution e = { "run_a", "token-1", "[{\"interruption\":\"i\"}]", 1234, 0 };
    assert_int_equal(s->ops->execution_put(s, &e), STORE_OK);
    e = (struct store_execution){ "run_a", NULL, NULL, 5678, 2 };
    assert_int_equal(s->ops->execution_put(s, &e), STORE_OK);
    assert_int_equal(s->ops->execution_get(s, "run_a", copy_execution, &x), STORE_OK);
    assert_int_equal(x.resume_null, 1);
    assert_int_equal(x.resolutions_null, 1);
    assert_int_equal(x.clock_ms, 5678);
    assert_int_equal(x.attempt, 2);
    e = (struct store_execution){ "run_a", "token-2", "[]", 9, 3 };
    assert_int_equal(s->ops->execution_put(s, &e), STORE_OK);
    assert_int_equal(s->ops->execution_get(s, "run_a", copy_execution, &x), STORE_OK);
    assert_string_equal(x.resume, "token-2");
    assert_string_equal(x.resolutions, "[]");

    assert_int_equal(s->ops->call_clear(s, "run_a"), STORE_OK);
    assert_int_equal(s->ops->call_clear(s, "run_a"), STORE_OK);
    memset(&cw, 0, sizeof cw);
    assert_int_equal(s->ops->call_list(s, "run_a", walk_call, &cw), STORE_OK);
    assert_int_equal(cw.n, 0);
    assert_int_equal(s->ops->execution_get(s, "run_a", copy_execution, &x), STORE_NOT_FOUND);
}

/* 50 nodes racing for one queued run (api_run_go's claim): each thread on a store connection of
 * its own claims the queued run and takes its continuation in one transaction. */
#define RACERS 50
#define ROUNDS 5

struct racer {
    struct store *s;
    pthread_barrier_t *go;
    char node[16];
    int claimed; /* run_claim_queued found the run */
    int nothing; /* ... found nothing queued */
    char *token; /* the continuation it took */
    int failed;  /* any other answer */
};

static void *race_one(void *arg)
{
    struct racer *r = arg;
    struct store *s = r->s;
    char id[STORE_NAME_MAX + 1];
    pthread_barrier_wait(r->go);
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->run_claim_queued(s, r->node, id);
    }
    if (rc == STORE_OK) {
        r->claimed = 1;
        rc = s->ops->run_take_continuation(s, id, &r->token);
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK) {
        s->ops->tx_rollback(s);
        r->nothing = rc == STORE_NOT_FOUND && !r->claimed;
        r->failed = !r->nothing;
        free(r->token);
        r->token = NULL;
    }
    return NULL;
}

struct claimed_by {
    char status[16];
};

static int read_claimed(void *userdata, const struct store_run *row)
{
    snprintf(((struct claimed_by *)userdata)->status, 16, "%s", row->status);
    return 0;
}

static void test_store_fifty_resume_one_continuation(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct racer racers[RACERS];
    pthread_t threads[RACERS];
    pthread_barrier_t go;
    char err[STORE_ERRMSG_MAX];
    char token[32];
    memset(racers, 0, sizeof racers);
    struct store_run r = { .id = "run_q",
                           .template_name = "",
                           .department = "finance",
                           .principal = "bob",
                           .status = "awaiting_approval",
                           .input = "{}",
                           .source = "return 1",
                           .language = "js",
                           .functions = "[]" };
    assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
    for (int i = 0; i < RACERS; i++) {
        if (store_open(f, &racers[i].s, err) != STORE_OK) {
            fail_msg("connection %d: %s", i, err);
        }
        snprintf(racers[i].node, sizeof racers[i].node, "n%d", i);
        racers[i].go = &go;
    }
    for (int round = 0; round < ROUNDS; round++) {
        /* a decided run queued with a continuation of its own, as api_run_resume leaves it */
        snprintf(token, sizeof token, "continuation-%d", round);
        assert_int_equal(s->ops->run_set_continuation(s, "run_q", token), STORE_OK);
        assert_int_equal(
                s->ops->run_set_status(s, "run_q", "awaiting_approval|running", "queued", NULL),
                STORE_OK);
        assert_int_equal(pthread_barrier_init(&go, NULL, RACERS), 0);
        for (int i = 0; i < RACERS; i++) {
            racers[i].claimed = racers[i].nothing = racers[i].failed = 0;
            racers[i].token = NULL;
            assert_int_equal(pthread_create(&threads[i], NULL, race_one, &racers[i]), 0);
        }
        int winners = 0;
        int nothing = 0;
        int winner = -1;
        for (int i = 0; i < RACERS; i++) {
            assert_int_equal(pthread_join(threads[i], NULL), 0);
            if (racers[i].failed) {
                fail_msg("round %d, connection %d: %s", round, i,
                         racers[i].s->ops->errmsg(racers[i].s));
            }
            if (racers[i].token) {
                assert_string_equal(racers[i].token, token);
                winners++;
                winner = i;
            }
            nothing += racers[i].nothing;
            free(racers[i].token);
        }
        pthread_barrier_destroy(&go);
        /* exactly one resumes it; every other finds nothing to claim */
        assert_int_equal(winners, 1);
        assert_int_equal(nothing, RACERS - 1);
        struct claimed_by c;
        memset(&c, 0, sizeof c);
        assert_int_equal(s->ops->run_get(s, "run_q", read_claimed, &c), STORE_OK);
        assert_string_equal(c.status, "running");
        struct run_walk w = { NULL, 0, 0, 1, 0, 0 };
        assert_int_equal(s->ops->run_list_on_node(s, racers[winner].node, walk_run, &w), STORE_OK);
        assert_int_equal(w.n, 1);
        char *left = NULL;
        assert_int_equal(s->ops->run_take_continuation(s, "run_q", &left), STORE_NOT_FOUND);
    }
    for (int i = 0; i < RACERS; i++) {
        racers[i].s->ops->close(racers[i].s);
    }
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

static int chain_length(struct store *s, char ret_head[AUDIT_HASH_HEX_LEN + 1]);

static int count_actions(struct store *s, const char *action)
{
    int n = 0;
    struct store_audit_filter f = { .action = action };
    assert_int_equal(s->ops->audit_search(s, 0, 100, &f, count_audit, &n), STORE_OK);
    return n;
}

/* A commit has reached the disk when it returns (SQLite's fsyncs are this process's, counted;
 * PostgreSQL's are the server's), and a reader on another connection sees the transaction's
 * changes only then, never before. */
static void test_store_commit_durable_then_visible(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct store *r = NULL;
    int sqlite = pg_base == NULL;
    assert_int_equal(s->ops->open_reader(s, &r), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "durable", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(count_actions(r, "durable"), 0);
    atomic_store(&datasyncs, 0);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_true(!sqlite || atomic_load(&datasyncs) >= 1);
    assert_int_equal(count_actions(r, "durable"), 1);
    r->ops->close(r);
}

/* tx_begin inside a transaction is a savepoint: its rollback undoes its own changes and
 * nothing else, its commit keeps them for the enclosing transaction, and the audit chain
 * goes on from the last record kept (no gap, no fork). */
static void test_store_transactions_nest(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char head[AUDIT_HASH_HEX_LEN + 1];
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "outer", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "undone", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "gone", "agent"), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK); /* two deep */
    assert_int_equal(s->ops->audit_append(s, "admin", "kept", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "stays", "agent"), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    /* a rollback outside any transaction does nothing */
    s->ops->tx_rollback(s);
    assert_int_equal(count_actions(s, "outer"), 1);
    assert_int_equal(count_actions(s, "undone"), 0);
    assert_int_equal(count_actions(s, "kept"), 1);
    assert_int_equal(s->ops->principal_get(s, "gone", NULL, NULL), STORE_NOT_FOUND);
    int64_t n = 0;
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(chain_length(s, head), 2);
    /* a whole rolled back transaction with a savepoint inside it leaves nothing */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "undone", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(count_actions(s, "undone"), 0);
    assert_int_equal(chain_length(s, head), 2);
}

/* A reader reads what was committed and can write nothing. */
static void test_store_reader_reads_only(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct store *r = NULL;
    int64_t n = -1;
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->open_reader(s, &r), STORE_OK);
    assert_int_equal(r->ops->principal_count(r, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(r->ops->principal_create(r, "mallory", "user"), STORE_ERROR);
    assert_int_equal(r->ops->audit_append(r, "admin", "x", NULL, NULL, "{}", NULL), STORE_ERROR);
    assert_int_equal(r->ops->department_create(r, "finance"), STORE_ERROR);
    assert_int_equal(s->ops->principal_get(s, "mallory", NULL, NULL), STORE_NOT_FOUND);
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 1);
    r->ops->close(r);
}

static int count_template(void *userdata, const struct store_template *t);
static int check_chain(void *userdata, const struct store_audit *a);

struct appender {
    struct store *s;
    int failed;
};

static void *append_many(void *arg)
{
    struct appender *a = arg;
    for (int i = 0; i < 300 && !a->failed; i++) {
        /* alternately alone and inside a transaction with another change */
        int tx = i % 2;
        a->failed |= tx && a->s->ops->tx_begin(a->s) != STORE_OK;
        a->failed |=
                a->s->ops->audit_append(a->s, "admin", "x.y", NULL, NULL, "{}", NULL) != STORE_OK;
        a->failed |= tx && a->s->ops->tx_commit(a->s) != STORE_OK;
    }
    return NULL;
}

/* PostgreSQL only (the back end several nodes share): appends from several connections at once,
 * each its own store as each node has, still make one chain without a gap or a fork. */
static void test_store_postgres_one_chain_across_connections(void **state)
{
    struct fixture *f = *state;
    struct appender a[3] = { { f->s, 0 }, { NULL, 0 }, { NULL, 0 } };
    pthread_t threads[3];
    char err[STORE_ERRMSG_MAX];
    struct chain c;
    for (int i = 1; i < 3; i++) {
        assert_int_equal(store_open(f, &a[i].s, err), STORE_OK);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_create(&threads[i], NULL, append_many, &a[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_false(a[i].failed);
    }
    for (int i = 1; i < 3; i++) {
        a[i].s->ops->close(a[i].s);
    }
    memset(&c, 0, sizeof c);
    memset(c.prev, '0', AUDIT_HASH_HEX_LEN);
    assert_int_equal(f->s->ops->audit_list(f->s, 0, 5000, check_chain, &c), STORE_OK);
    assert_int_equal(c.n, 900);
}

/* PostgreSQL only (nodes share it): a transaction that changes a run's row and then appends
 * (a cancel) meets another node's that appended first and then changes the same row (its
 * writer's batch). Both must commit; before every transaction took the audit lock at BEGIN,
 * they waited for each other and PostgreSQL failed one as a deadlock. */
struct crossing {
    struct store *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int row_held, appended;
    enum store_rc rc;
};

static void crossing_signal(struct crossing *c, int *flag)
{
    pthread_mutex_lock(&c->mu);
    *flag = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Waits for *flag up to 3 s: with the lock taken at BEGIN the other side cannot get there
 * before this one commits, and this side goes on without it. */
static void crossing_wait(struct crossing *c, const int *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    pthread_mutex_lock(&c->mu);
    while (!*flag && pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&c->mu);
}

static void *row_then_append(void *arg)
{
    struct crossing *c = arg;
    struct store *s = c->s;
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->run_set_node(s, "run_x", "node-a");
    }
    crossing_signal(c, &c->row_held);
    crossing_wait(c, &c->appended);
    if (rc == STORE_OK) {
        rc = s->ops->audit_append(s, "airlockd", "run.cancel", "run_x", NULL, "{}", NULL);
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK) {
        s->ops->tx_rollback(s);
    }
    c->rc = rc;
    return NULL;
}

static void test_store_postgres_row_and_audit_never_deadlock(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct crossing c = { .rc = STORE_ERROR };
    char err[STORE_ERRMSG_MAX];
    pthread_t other;
    struct store_run r = { .id = "run_x",
                           .template_name = "",
                           .department = "finance",
                           .principal = "agent",
                           .status = "running",
                           .input = "{}",
                           .source = "return 1",
                           .language = "js",
                           .functions = "[]" };
    assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
    assert_int_equal(store_open(f, &c.s, err), STORE_OK);
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    assert_int_equal(pthread_create(&other, NULL, row_then_append, &c), 0);
    crossing_wait(&c, &c.row_held);
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc == STORE_OK) {
        rc = s->ops->audit_append(s, "airlockd", "run.end", "run_y", NULL, "{}", NULL);
    }
    crossing_signal(&c, &c.appended);
    if (rc == STORE_OK) {
        rc = s->ops->run_set_node(s, "run_x", "node-b");
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK) {
        fprintf(stderr, "append, then the row: %s\n", s->ops->errmsg(s));
        s->ops->tx_rollback(s);
    }
    assert_int_equal(pthread_join(other, NULL), 0);
    if (c.rc != STORE_OK) {
        fprintf(stderr, "the row, then append: %s\n", c.s->ops->errmsg(c.s));
    }
    c.s->ops->close(c.s);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    assert_int_equal(rc, STORE_OK);
    assert_int_equal(c.rc, STORE_OK);
}

/* PostgreSQL only (SQLite has no connection to lose): a connection the server ended is reset at
 * the next call; inside a transaction the calls fail until tx_rollback, and only then reset. */
static void test_store_postgres_reconnects(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char kill[256];
    int64_t n = 0;
    snprintf(kill, sizeof kill,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND "
             "pid <> pg_backend_pid()",
             f->db);
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(raw_exec(f, 1, kill), 0);
    (void)s->ops->ping(s); /* finds the connection gone (or already reconnects) */
    assert_int_equal(s->ops->ping(s), STORE_OK);
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 1);

    /* a transaction lost with its connection is never continued on a new one */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "bob", "user"), STORE_OK);
    assert_int_equal(raw_exec(f, 1, kill), 0);
    assert_int_equal(s->ops->principal_create(s, "carol", "user"), STORE_ERROR);
    assert_int_equal(s->ops->principal_create(s, "dave", "user"), STORE_ERROR);
    assert_int_equal(s->ops->tx_commit(s), STORE_ERROR);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 1);
    /* prepared statements are made again on the new connection */
    assert_int_equal(s->ops->principal_create(s, "erin", "user"), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "erin", "user"), STORE_CONFLICT);
}

/* PostgreSQL only (the wake-ups of several nodes): a listener hears what a commit notified, never
 * what a rollback did, can be woken while it waits, finds its connection ended and connects again.
 */
struct heard {
    int n;
    char channel[32];
    char payload[32];
};

static void hear(void *userdata, const char *channel, const char *payload)
{
    struct heard *h = userdata;
    if (h->n++ == 0) {
        snprintf(h->channel, sizeof h->channel, "%s", channel);
        snprintf(h->payload, sizeof h->payload, "%s", payload);
    }
}

/* Waits (up to 10 s) for the listener's next notifications; the wait's last answer. */
static enum store_rc hear_next(struct store_listener *l, struct heard *h)
{
    struct timespec t0;
    struct timespec t;
    enum store_rc rc = STORE_OK;
    memset(h, 0, sizeof *h);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        rc = l->ops->wait(l, 1000, hear, h);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (rc == STORE_OK && h->n == 0 && t.tv_sec - t0.tv_sec < 10);
    return rc;
}

/* A transaction left open by a node that stopped mid-way (here: one that never goes on) does
 * not hold the audit chain's lock for good: the server ends its session once it has been idle
 * in the transaction for idle_in_transaction_session_timeout (airlockd's default, 5 s), the
 * waiting append goes through, and the stalled store, told its transaction is gone, reconnects
 * for the next one. */
static void test_store_postgres_stalled_transaction_ends(void **state)
{
    struct fixture *f = *state;
    char err[STORE_ERRMSG_MAX];
    struct store *stalled = NULL;
    assert_int_equal(store_postgres_open(f->url, &stalled, err), STORE_OK);
    struct store *s = f->s;
    int64_t seq = 0;
    assert_int_equal(stalled->ops->tx_begin(stalled), STORE_OK);
    assert_int_equal(
            stalled->ops->audit_append(stalled, "admin", "stalled", NULL, NULL, "{}", NULL),
            STORE_OK);
    /* waits for the chain's lock until the server ends the stalled session */
    assert_int_equal(s->ops->audit_append(s, "admin", "goes-on", NULL, NULL, "{}", &seq), STORE_OK);
    assert_int_not_equal(stalled->ops->tx_commit(stalled), STORE_OK);
    stalled->ops->tx_rollback(stalled);
    int64_t after = 0;
    assert_int_equal(stalled->ops->audit_append(stalled, "admin", "back", NULL, NULL, "{}", &after),
                     STORE_OK);
    assert_int_equal(after, seq + 1); /* the stalled record never made it into the chain */
    stalled->ops->close(stalled);
}

static void test_store_postgres_listen_notify(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    static const char *const channels[] = { STORE_CHANNEL_QUEUE, STORE_CHANNEL_CANCEL, NULL };
    struct store_listener *l = NULL;
    struct heard h;
    char kill[256];
    struct timespec t0;
    struct timespec t;
    assert_int_equal(s->ops->listener_new(s, "unit-store-listen", channels, &l), STORE_OK);
    /* not connected yet: a wait only waits */
    assert_int_equal(l->ops->wait(l, 1, hear, &h), STORE_OK);
    assert_int_equal(l->ops->connect(l), STORE_OK);

    /* nothing before the commit, nothing of a rollback: the first heard is the committed one */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->notify(s, STORE_CHANNEL_QUEUE, "run_rolled_back"), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->notify(s, STORE_CHANNEL_QUEUE, "run_1"), STORE_OK);
    memset(&h, 0, sizeof h);
    assert_int_equal(l->ops->wait(l, 0, hear, &h), STORE_OK);
    assert_int_equal(h.n, 0);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(hear_next(l, &h), STORE_OK);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.channel, STORE_CHANNEL_QUEUE);
    assert_string_equal(h.payload, "run_1");
    /* outside a transaction it goes at once; the other channel too */
    assert_int_equal(s->ops->notify(s, STORE_CHANNEL_CANCEL, "run_2"), STORE_OK);
    assert_int_equal(hear_next(l, &h), STORE_OK);
    assert_string_equal(h.channel, STORE_CHANNEL_CANCEL);
    assert_string_equal(h.payload, "run_2");

    /* a wake ends a long wait at once (here: one already asked for) */
    l->ops->wake(l);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(&h, 0, sizeof h);
    assert_int_equal(l->ops->wait(l, 60000, hear, &h), STORE_OK);
    clock_gettime(CLOCK_MONOTONIC, &t);
    assert_true(t.tv_sec - t0.tv_sec < 30);
    assert_int_equal(h.n, 0);

    /* its backend ended (found by its application_name): the wait says so, a connect listens
     * again and hears the next notification */
    snprintf(kill, sizeof kill,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
             "'unit-store-listen' AND datname = '%s'",
             f->db);
    assert_int_equal(raw_exec(f, 1, kill), 0);
    assert_int_equal(hear_next(l, &h), STORE_ERROR);
    assert_non_null(strstr(l->ops->errmsg(l), "connection lost"));
    assert_int_equal(l->ops->connect(l), STORE_OK);
    assert_int_equal(s->ops->notify(s, STORE_CHANNEL_QUEUE, "run_3"), STORE_OK);
    assert_int_equal(hear_next(l, &h), STORE_OK);
    assert_string_equal(h.payload, "run_3");
    l->ops->free(l);
}

/* A CONFLICT inside a transaction leaves it usable (PostgreSQL would abort the whole transaction
 * on a unique violation: the store never lets one happen). */
static void test_store_conflict_keeps_transaction(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int64_t n = 0;
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_CONFLICT);
    assert_int_equal(s->ops->principal_create(s, "bob", "user"), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->principal_count(s, &n), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_CONFLICT);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "", "alice"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "", "alice"), STORE_CONFLICT);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    int seen = 0;
    assert_int_equal(s->ops->template_get(s, "t", count_template, &seen), STORE_OK);
    assert_int_equal(seen, 1);
}

struct nest {
    struct store *s;
    int outer;
    int inner;
};

static int nest_grant(void *userdata, const struct store_grant *g)
{
    struct nest *n = userdata;
    (void)g;
    n->outer++;
    /* the statement of role_list is still stepping: this call needs one of its own */
    assert_int_equal(n->s->ops->role_list(n->s, "alice", count_grant, &n->inner), STORE_OK);
    return 0;
}

static void store_round(struct store *s, int i)
{
    unsigned char hash[STORE_HASH_LEN] = { 2 };
    unsigned char got[STORE_HASH_LEN];
    char name[STORE_NAME_MAX + 1];
    char policy[32] = "";
    int n = 0;
    assert_int_equal(s->ops->key_lookup(s, "0123456789ab", name, got), STORE_OK);
    assert_int_equal(s->ops->key_lookup(s, "ffffffffffff", name, got), STORE_NOT_FOUND);
    assert_int_equal(s->ops->key_add(s, "alice", "0123456789ab", hash), STORE_CONFLICT);
    assert_int_equal(s->ops->role_list(s, "alice", count_grant, &n), STORE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s->ops->department_get(s, "finance", read_policy, policy), STORE_OK);
    /* rows updated in place: the database, and so SQLite's page cache, does not grow */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(
            s->ops->department_set_policy(s, "finance", i % 2 ? "supervised" : "autonomous", 0),
            STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
}

static void test_store_statements_kept(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    unsigned char hash[STORE_HASH_LEN] = { 2 };
    char policy[32] = "";
    struct nest nest = { s, 0, 0 };
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->key_add(s, "alice", "0123456789ab", hash), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "alice", "author", "finance"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    for (int i = 0; i < 10; i++) {
        store_round(s, i);
    }
    sqlite3_int64 before = sqlite3_memory_used();
    for (int i = 0; i < 2000; i++) {
        store_round(s, i);
    }
    /* a statement prepared per call and never finalized would cost kilobytes each (SQLite's
     * memory only: PostgreSQL's statements live in its server) */
    assert_true(pg_base || sqlite3_memory_used() - before < 16 * 1024);
    assert_int_equal(s->ops->role_list(s, "alice", nest_grant, &nest), STORE_OK);
    assert_int_equal(nest.outer, 1);
    assert_int_equal(nest.inner, 1);
    /* another connection's commit is seen by the next call */
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO departments (name, autonomy, created) "
                              "VALUES ('raw', 'supervised', 'now')"),
                     0);
    assert_int_equal(s->ops->department_get(s, "raw", read_policy, policy), STORE_OK);
    assert_string_equal(policy, "supervised/0");
}

/* The number of records of s's audit log, after checking that each chains to the one before;
 * the last one's hash into ret_head unless NULL. */
static int chain_length(struct store *s, char ret_head[AUDIT_HASH_HEX_LEN + 1])
{
    struct chain c;
    memset(&c, 0, sizeof c);
    memset(c.prev, '0', AUDIT_HASH_HEX_LEN);
    assert_int_equal(s->ops->audit_list(s, 0, 100000, check_chain, &c), STORE_OK);
    if (ret_head) {
        memcpy(ret_head, c.prev, AUDIT_HASH_HEX_LEN + 1);
    }
    return c.n;
}

/* Appends a record of `action` and checks that it got seq `want`. */
static void append_is(struct store *s, const char *action, int64_t want)
{
    int64_t seq = 0;
    assert_int_equal(s->ops->audit_append(s, "admin", action, NULL, NULL, "{}", &seq), STORE_OK);
    assert_int_equal(seq, want);
}

/* Each record chains to the last one kept: after a rolled back append, a refused one, and
 * one another connection made behind the store's back (a store that remembered the head it
 * wrote would otherwise leave a gap, or fork the chain). */
static void test_store_audit_head_follows_rollbacks(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    int64_t seq = 0;
    append_is(s, "x.y", 1);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    append_is(s, "gone", 2);
    s->ops->tx_rollback(s);
    append_is(s, "x.y", 2);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "gone", NULL, NULL, "{}", &seq), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->audit_append(s, "admin", "x.y", NULL, NULL, "[]", &seq), STORE_ERROR);
    append_is(s, "x.y", 3);
    char head[AUDIT_HASH_HEX_LEN + 1];
    assert_int_equal(chain_length(s, head), 3);

    /* record 4 by another connection: the store's next one is 5, chained to it */
    char sql[512];
    char fake[AUDIT_HASH_HEX_LEN + 1];
    memset(fake, 'a', AUDIT_HASH_HEX_LEN);
    fake[AUDIT_HASH_HEX_LEN] = '\0';
    snprintf(sql, sizeof sql,
             "INSERT INTO audit(seq, time, actor, action, subject, department, details, prev, "
             "hash, line) VALUES (4, '2026-01-31T12:00:01.007Z', 'other', 'x.y', '', NULL, '{}', "
             "'%s', '%s', '{\"hash\":\"%s\"}')",
             head, fake, fake);
    assert_int_equal(raw_exec(f, 0, sql), 0);
    append_is(s, "x.y", 5);
    assert_int_equal(chain_length(s, NULL), 5);
}

/* SQLite only: a statement whose failure ends the whole transaction (a trigger's
 * RAISE(ROLLBACK)) takes the records appended in it along; the next record chains to the last
 * one kept, not to one rolled back. */
static void test_store_sqlite_audit_head_after_rollback_by_trigger(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    assert_int_equal(raw_exec(f, 0,
                              "CREATE TRIGGER boom BEFORE INSERT ON principals WHEN NEW.name = "
                              "'boom' BEGIN SELECT RAISE(ROLLBACK, 'refused'); END"),
                     0);
    append_is(s, "x.y", 1);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    append_is(s, "gone", 2);
    assert_int_not_equal(s->ops->principal_create(s, "boom", "user"), STORE_OK);
    /* no rollback here: the transaction is gone already, and the caller goes on */
    append_is(s, "x.y", 2);
    assert_int_equal(chain_length(s, NULL), 2);
}

/* SQLite only (PostgreSQL has no read_begin): the reads between read_begin and read_end see
 * one snapshot, and a write in between ends it and is committed at once, on its own. */
static void test_store_sqlite_read_snapshot(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char policy[32] = "";
    int n = 0;
    assert_non_null(s->ops->read_begin);
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->read_begin(s), STORE_OK);
    assert_int_equal(s->ops->department_get(s, "finance", read_policy, policy), STORE_OK);
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO departments (name, autonomy, created) "
                              "VALUES ('raw', 'supervised', 'now')"),
                     0);
    /* another connection's commit is not in the snapshot... */
    assert_int_equal(s->ops->department_get(s, "raw", read_policy, policy), STORE_NOT_FOUND);
    /* ... until a write ends it; the write is then another connection's to see at once */
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO departments (name, autonomy, created) "
                              "SELECT 'seen', 'autonomous', 'now' FROM principals "
                              "WHERE name = 'alice'"),
                     0);
    assert_int_equal(s->ops->department_get(s, "raw", read_policy, policy), STORE_OK);
    assert_int_equal(s->ops->department_get(s, "seen", read_policy, policy), STORE_OK);
    assert_int_equal(s->ops->read_end(s), STORE_OK);

    /* an audit append and a transaction of its own inside one commit as they would outside */
    assert_int_equal(s->ops->read_begin(s), STORE_OK);
    assert_int_equal(s->ops->department_get(s, "raw", read_policy, policy), STORE_OK);
    assert_int_equal(s->ops->audit_append(s, "admin", "x.y", NULL, NULL, "{}", NULL), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "bob", "user"), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->read_end(s), STORE_OK);
    assert_int_equal(s->ops->audit_list(s, 0, 100, count_audit, &n), STORE_OK);
    assert_int_equal(n, 1);
    int64_t principals = 0;
    assert_int_equal(s->ops->principal_count(s, &principals), STORE_OK);
    assert_int_equal(principals, 1);
    /* read_end without read_begin, and twice, is harmless */
    assert_int_equal(s->ops->read_end(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
}

/* ---------------------------------------------------------------- the journal (0010) */

/* The number in the first column of sql's first row, read on a connection of its own. */
static int64_t raw_count(const struct fixture *f, const char *sql)
{
    int64_t n = -1;
    if (!pg_base) {
        sqlite3 *db = NULL;
        sqlite3_stmt *stmt = NULL;
        if (sqlite3_open(f->path, &db) == SQLITE_OK &&
            sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW) {
            n = sqlite3_column_int64(stmt, 0);
        }
        sqlite3_finalize(stmt);
        sqlite3_close(db);
        return n;
    }
    PGconn *conn = PQconnectdb(f->url);
    PGresult *res = PQexec(conn, sql);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    }
    PQclear(res);
    PQfinish(conn);
    return n;
}

static void journal_run(struct store *s, const char *id)
{
    struct store_run r = { .id = id,
                           .template_name = "",
                           .department = "ops",
                           .principal = "bob",
                           .status = "running",
                           .input = "{}",
                           .source = "return 1",
                           .language = "js",
                           .functions = "[]" };
    assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
}

/* An entry at position p answering `answer` (len bytes). */
static struct store_journal_entry journal_entry(int64_t p, const void *answer, size_t len)
{
    static const char args[] = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    return (struct store_journal_entry){ .position = p,
                                         .call_id = p % 2 ? "c1" : "c2",
                                         .function = "orders.refund",
                                         .args_sha256 = args,
                                         .idempotency_key = p % 2 ? "run_j:1" : NULL,
                                         .kind = (int)(p % 3),
                                         .sync = (int)(p % 2),
                                         .clock_ms = 1767225600000 + p,
                                         .answer = answer,
                                         .answer_len = len };
}

#define JOURNAL_READ_MAX 8

/* What journal_read handed out, copied. */
struct journal_got {
    int n;
    int64_t position[JOURNAL_READ_MAX];
    char call_id[JOURNAL_READ_MAX][16];
    char key[JOURNAL_READ_MAX][16]; /* "(null)" for NULL */
    int kind[JOURNAL_READ_MAX];
    int sync[JOURNAL_READ_MAX];
    int64_t clock_ms[JOURNAL_READ_MAX];
    char sha256[JOURNAL_READ_MAX][65];
    unsigned char *answer[JOURNAL_READ_MAX];
    size_t answer_len[JOURNAL_READ_MAX];
};

static int journal_collect(void *userdata, const struct store_journal_entry *e)
{
    struct journal_got *g = userdata;
    assert_true(g->n < JOURNAL_READ_MAX);
    int i = g->n++;
    g->position[i] = e->position;
    snprintf(g->call_id[i], sizeof g->call_id[i], "%s", e->call_id);
    snprintf(g->key[i], sizeof g->key[i], "%s", e->idempotency_key ? e->idempotency_key : "(null)");
    assert_string_equal(e->function, "orders.refund");
    g->kind[i] = e->kind;
    g->sync[i] = e->sync;
    g->clock_ms[i] = e->clock_ms;
    snprintf(g->sha256[i], sizeof g->sha256[i], "%s", e->answer_sha256);
    g->answer[i] = malloc(e->answer_len + 1);
    assert_non_null(g->answer[i]);
    memcpy(g->answer[i], e->answer, e->answer_len);
    g->answer_len[i] = e->answer_len;
    return 0;
}

static void journal_got_free(struct journal_got *g)
{
    for (int i = 0; i < g->n; i++) {
        free(g->answer[i]);
    }
    memset(g, 0, sizeof *g);
}

static void journal_read(struct store *s, const char *run, int64_t after, struct journal_got *g)
{
    journal_got_free(g);
    assert_int_equal(s->ops->journal_read(s, run, after, journal_collect, g), STORE_OK);
}

/* A batch appended in the writer's way (a savepoint in a transaction) reads back in position
 * order, whole, from any position; batches must follow the journal; a run keeps its seed, start
 * clock and count of recoveries. */
static void test_store_journal_append_and_read(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    struct store_journal_entry e[3] = { journal_entry(1, "{\"ok\":1}", 8),
                                        journal_entry(2, "\"boom\"", 6), journal_entry(3, "", 0) };
    journal_run(s, "run_j");
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 2), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", &e[2], 1), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);

    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(g.position[i], i + 1);
        assert_string_equal(g.call_id[i], e[i].call_id);
        assert_string_equal(g.key[i], e[i].idempotency_key ? e[i].idempotency_key : "(null)");
        assert_int_equal(g.kind[i], e[i].kind);
        assert_int_equal(g.sync[i], e[i].sync);
        assert_int_equal(g.clock_ms[i], e[i].clock_ms);
        assert_int_equal(g.answer_len[i], e[i].answer_len);
        assert_memory_equal(g.answer[i], e[i].answer, e[i].answer_len);
    }
    /* SHA-256("") */
    assert_string_equal(g.sha256[2],
                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    journal_read(s, "run_j", 2, &g);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.position[0], 3);
    journal_read(s, "nope", 0, &g);
    assert_int_equal(g.n, 0);

    /* a gap, a batch out of order, an unknown kind, a run that is not there */
    struct store_journal_entry gap = journal_entry(5, "1", 1);
    struct store_journal_entry twisted[2] = { journal_entry(5, "1", 1), journal_entry(4, "1", 1) };
    struct store_journal_entry odd = journal_entry(4, "1", 1);
    odd.kind = 7;
    assert_int_equal(s->ops->journal_append(s, "run_j", &gap, 1), STORE_ERROR);
    assert_non_null(strstr(s->ops->errmsg(s), "does not follow"));
    assert_int_equal(s->ops->journal_append(s, "run_j", twisted, 2), STORE_ERROR);
    assert_int_equal(s->ops->journal_append(s, "run_j", &odd, 1), STORE_ERROR);
    assert_int_equal(s->ops->journal_append(s, "nope", e, 1), STORE_NOT_FOUND);
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 0), STORE_OK);
    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 3);
    journal_got_free(&g);

    /* where a replay starts, and its recoveries */
    int64_t recovered = 0;
    assert_int_equal(
            s->ops->run_set_origin(s, "run_j", UINT64_C(0xfedcba9876543210), 1767225600123),
            STORE_OK);
    assert_int_equal(s->ops->run_set_origin(s, "nope", 1, 1), STORE_NOT_FOUND);
    assert_int_equal(s->ops->run_add_recovered(s, "run_j", &recovered), STORE_OK);
    assert_int_equal(recovered, 1);
    assert_int_equal(s->ops->run_add_recovered(s, "run_j", NULL), STORE_OK);
    assert_int_equal(s->ops->run_add_recovered(s, "run_j", &recovered), STORE_OK);
    assert_int_equal(recovered, 3);
    assert_int_equal(s->ops->run_add_recovered(s, "nope", &recovered), STORE_NOT_FOUND);
    assert_int_equal(raw_count(f, "SELECT recovered FROM runs WHERE id = 'run_j'"), 3);
    assert_int_equal(raw_count(f, "SELECT clock_ms FROM runs WHERE id = 'run_j'"), 1767225600123);
}

static int read_origin(void *userdata, const struct store_run *r)
{
    snprintf(userdata, 64, "%s/%" PRId64 "/%" PRId64, r->seed ? r->seed : "(null)", r->clock_ms,
             r->recovered);
    return 0;
}

struct journal_walk {
    int n;
    int64_t last;
    int ordered;
    int stop_at; /* 0: never */
};

static int journal_walk_each(void *userdata, const struct store_journal_entry *e)
{
    struct journal_walk *w = userdata;
    w->ordered = w->ordered && e->position == w->last + 1 && e->answer_len == 2 &&
                 e->answer[0] == (unsigned char)('a' + e->position % 26);
    w->last = e->position;
    return ++w->n == w->stop_at;
}

/* A journal longer than PostgreSQL's page of answers reads whole and in order, from any
 * position; the callback stops the walk. */
static void test_store_journal_read_in_pages(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct store_journal_entry e[40];
    char answers[40][2];
    for (int i = 0; i < 40; i++) {
        answers[i][0] = (char)('a' + (i + 1) % 26);
        answers[i][1] = 0;
        e[i] = journal_entry(i + 1, answers[i], 2);
    }
    journal_run(s, "run_j");
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 40), STORE_OK);
    struct journal_walk w = { 0, 0, 1, 0 };
    assert_int_equal(s->ops->journal_read(s, "run_j", 0, journal_walk_each, &w), STORE_OK);
    assert_int_equal(w.n, 40);
    assert_true(w.ordered);
    w = (struct journal_walk){ 0, 13, 1, 0 };
    assert_int_equal(s->ops->journal_read(s, "run_j", 13, journal_walk_each, &w), STORE_OK);
    assert_int_equal(w.n, 27);
    assert_true(w.ordered);
    w = (struct journal_walk){ 0, 0, 1, 11 };
    assert_int_equal(s->ops->journal_read(s, "run_j", 0, journal_walk_each, &w), STORE_OK);
    assert_int_equal(w.n, 11);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 26);
}

/* An answer's bytes are stored once, however many runs' entries name them; a fork copies a
 * prefix of the journal and shares its answers. */
static void test_store_journal_answers_shared(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    char origin[64] = "";
    struct store_journal_entry a[3] = { journal_entry(1, "[1,2,3]", 7),
                                        journal_entry(2, "[1,2,3]", 7), journal_entry(3, "{}", 2) };
    struct store_journal_entry b[1] = { journal_entry(1, "[1,2,3]", 7) };
    journal_run(s, "run_a");
    journal_run(s, "run_b");
    journal_run(s, "run_fork");
    assert_int_equal(s->ops->journal_append(s, "run_a", a, 3), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_b", b, 1), STORE_OK);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal"), 4);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 2);

    assert_int_equal(s->ops->journal_copy_prefix(s, "run_a", "run_fork", 2), STORE_OK);
    journal_read(s, "run_fork", 0, &g);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.position[1], 2);
    assert_memory_equal(g.answer[1], "[1,2,3]", 7);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 2);
    /* the fork goes on from there */
    struct store_journal_entry next = journal_entry(3, "\"forked\"", 8);
    assert_int_equal(s->ops->journal_append(s, "run_fork", &next, 1), STORE_OK);
    assert_int_equal(s->ops->journal_copy_prefix(s, "run_a", "run_fork", 2), STORE_CONFLICT);
    assert_int_equal(s->ops->journal_copy_prefix(s, "run_a", "nope", 2), STORE_NOT_FOUND);
    /* a prefix longer than the journal copies nothing */
    assert_int_equal(s->ops->journal_copy_prefix(s, "run_b", "run_a_fork", 2), STORE_NOT_FOUND);
    journal_run(s, "run_b_fork");
    assert_int_equal(s->ops->journal_copy_prefix(s, "run_b", "run_b_fork", 2), STORE_NOT_FOUND);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal WHERE run = 'run_b_fork'"), 0);
    journal_read(s, "run_a", 0, &g);
    assert_int_equal(g.n, 3);
    journal_got_free(&g);
    /* a run made before its origin was recorded */
    assert_int_equal(s->ops->run_get(s, "run_fork", read_origin, origin), STORE_OK);
    assert_string_equal(origin, "(null)/0/0");
    assert_int_equal(s->ops->run_set_origin(s, "run_fork", 42, 7), STORE_OK);
    assert_int_equal(s->ops->run_get(s, "run_fork", read_origin, origin), STORE_OK);
    assert_string_equal(origin, "000000000000002a/7/0");
}

/* A batch appended again (a job run twice, a retried commit) changes nothing, also when it
 * reaches past the journal's end; one that says anything else about a position is refused,
 * and the transaction it was refused in goes on. */
static void test_store_journal_append_again(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    struct store_journal_entry e[3] = { journal_entry(1, "1", 1), journal_entry(2, "2", 1),
                                        journal_entry(3, "3", 1) };
    journal_run(s, "run_j");
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 2), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 2), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", &e[1], 2), STORE_OK);
    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 3);

    /* each member of an entry, changed alone */
    for (int m = 0; m < 7; m++) {
        struct store_journal_entry x = e[1];
        switch (m) {
        case 0:
            x.answer = (const unsigned char *)"7";
            break;
        case 1:
            x.call_id = "c9";
            break;
        case 2:
            x.args_sha256 = "00";
            break;
        case 3:
            x.idempotency_key = "run_j:2";
            break;
        case 4:
            x.kind = (x.kind + 1) % 3;
            break;
        case 5:
            x.sync = 1;
            break;
        default:
            x.clock_ms++;
            break;
        }
        assert_int_equal(s->ops->tx_begin(s), STORE_OK);
        assert_int_equal(s->ops->tx_begin(s), STORE_OK);
        assert_int_equal(s->ops->journal_append(s, "run_j", &x, 1), STORE_CONFLICT);
        s->ops->tx_rollback(s);
        assert_int_equal(
                s->ops->audit_append(s, "bob", "run.host_call", "run_j", "ops", "{}", NULL),
                STORE_OK);
        assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    }
    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 3);
    assert_memory_equal(g.answer[1], "2", 1);
    assert_int_equal(g.clock_ms[1], e[1].clock_ms);
    journal_got_free(&g);
    /* outside a transaction too, a refused batch writes nothing of itself: not its new
     * position 4 beside the conflicting 3 */
    struct store_journal_entry tail[2] = { journal_entry(3, "x", 1), journal_entry(4, "4", 1) };
    assert_int_equal(s->ops->journal_append(s, "run_j", tail, 2), STORE_CONFLICT);
    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 3);
    journal_got_free(&g);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM audit WHERE action = 'run.host_call'"), 7);
}

/* An answer of 1 MiB with every byte value, NULs and bytes that are not UTF-8 included, comes
 * back exactly; so do answers that differ in one byte, each under its own hash. */
static void test_store_journal_large_answer(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    size_t len = (size_t)1 << 20;
    unsigned char *big = malloc(len);
    unsigned char *other = malloc(len);
    assert_non_null(big);
    assert_non_null(other);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        big[i] = i < 256 ? (unsigned char)i : (unsigned char)x;
    }
    big[len - 1] = 0;
    memcpy(other, big, len);
    other[len / 2] ^= 0x80;
    struct store_journal_entry e[2] = { journal_entry(1, big, len), journal_entry(2, other, len) };
    journal_run(s, "run_big");
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_big", e, 2), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    journal_read(s, "run_big", 0, &g);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.answer_len[0], len);
    assert_int_equal(g.answer_len[1], len);
    assert_memory_equal(g.answer[0], big, len);
    assert_memory_equal(g.answer[1], other, len);
    assert_string_not_equal(g.sha256[0], g.sha256[1]);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 2);
    journal_got_free(&g);
    free(big);
    free(other);
}

/* Bytes changed in the database behind the store are refused on reading, not replayed. */
static void test_store_journal_read_checks_answers(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    struct store_journal_entry e = journal_entry(1, "{\"amount\":10}", 13);
    journal_run(s, "run_j");
    assert_int_equal(s->ops->journal_append(s, "run_j", &e, 1), STORE_OK);
    assert_int_equal(raw_exec(f, 0,
                              pg_base ? "UPDATE journal_blobs SET bytes = "
                                        "convert_to('{\"amount\":99}', 'UTF8')"
                                      : "UPDATE journal_blobs SET bytes = "
                                        "CAST('{\"amount\":99}' AS BLOB)"),
                     0);
    assert_int_equal(s->ops->journal_read(s, "run_j", 0, journal_collect, &g), STORE_ERROR);
    assert_non_null(strstr(s->ops->errmsg(s), "does not match its SHA-256"));
    assert_int_equal(g.n, 0);
}

/* A savepoint rolled back (a writer's job that failed) takes its entries and answers with it;
 * the batch's other jobs keep theirs. */
static void test_store_journal_rollback_drops_rows(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct journal_got g = { 0 };
    struct store_journal_entry e[2] = { journal_entry(1, "\"kept\"", 6),
                                        journal_entry(2, "\"undone\"", 8) };
    journal_run(s, "run_j");
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", e, 1), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", &e[1], 1), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    journal_read(s, "run_j", 0, &g);
    assert_int_equal(g.n, 1);
    assert_memory_equal(g.answer[0], "\"kept\"", 6);
    journal_got_free(&g);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 1);
    /* the whole transaction rolled back: nothing */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->journal_append(s, "run_j", &e[1], 1), STORE_OK);
    s->ops->tx_rollback(s);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal"), 1);
    assert_int_equal(raw_count(f, "SELECT count(*) FROM journal_blobs"), 1);
}

/* ---------------------------------------------------------------- workspaces (0015) */

struct blob_got {
    int n;
    size_t len;
    unsigned char bytes[64];
};

static int blob_collect(void *userdata, const unsigned char *bytes, size_t len)
{
    struct blob_got *g = userdata;
    g->n++;
    g->len = len;
    memcpy(g->bytes, bytes, len < sizeof g->bytes ? len : sizeof g->bytes);
    return 0;
}

/* Bytes are kept once under their SHA-256, binary and empty ones too, and read back checked. */
static void test_store_workspace_blobs(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    static const unsigned char bin[] = { 0, 1, 2, 0xff, 0, 'x' };
    char h1[65];
    char h2[65];
    char h3[65];
    struct blob_got g = { 0 };
    assert_int_equal(s->ops->blob_put(s, bin, sizeof bin, h1), STORE_OK);
    assert_int_equal(s->ops->blob_put(s, bin, sizeof bin, h2), STORE_OK);
    assert_string_equal(h1, h2);
    assert_int_equal(s->ops->blob_put(s, "", 0, h3), STORE_OK);
    /* SHA-256 of the empty string */
    assert_string_equal(h3, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_int_equal(raw_count(f, "SELECT count(*) FROM workspace_blobs"), 2);
    assert_int_equal(s->ops->blob_get(s, h1, blob_collect, &g), STORE_OK);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.len, sizeof bin);
    assert_memory_equal(g.bytes, bin, sizeof bin);
    memset(&g, 0, sizeof g);
    assert_int_equal(s->ops->blob_get(s, h3, blob_collect, &g), STORE_OK);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.len, 0);
    assert_int_equal(s->ops->blob_get(s, "00", blob_collect, &g), STORE_NOT_FOUND);
    /* bytes changed behind the store's back are refused, never handed out */
    assert_int_equal(raw_exec(f, 0,
                              pg_base ? "UPDATE workspace_blobs SET bytes = convert_to('x', "
                                        "'UTF8') WHERE length(bytes) > 0"
                                      : "UPDATE workspace_blobs SET bytes = CAST('x' AS BLOB) "
                                        "WHERE length(bytes) > 0"),
                     0);
    memset(&g, 0, sizeof g);
    assert_int_equal(s->ops->blob_get(s, h1, blob_collect, &g), STORE_ERROR);
    assert_non_null(strstr(s->ops->errmsg(s), "does not match its SHA-256"));
    assert_int_equal(g.n, 0);
}

static int snapshot_copy(void *userdata, const struct store_snapshot *snap)
{
    struct store_snapshot *got = userdata;
    assert_string_equal(snap->id, "snap_1");
    assert_string_equal(snap->principal, "bob");
    assert_string_equal(snap->department, "ops");
    assert_int_equal(snap->bytes, 6);
    got->bytes = snap->bytes;
    return 0;
}

static int run_workspace_seen(void *userdata, const struct store_run_workspace *w)
{
    char *got = userdata;
    snprintf(got, 256, "%s|%s|%s", w->manifest_sha256, w->start_sha256 ? w->start_sha256 : "-",
             w->end_sha256 ? w->end_sha256 : "-");
    return 0;
}

static int run_file_seen(void *userdata, const struct store_run_file *file)
{
    char *got = userdata;
    size_t used = strlen(got);
    snprintf(got + used, 512 - used, "%s:%lld:%s;", file->path, (long long)file->size,
             file->mount ? file->mount : "-");
    return 0;
}

/* A snapshot, a run's workspace and its outputs: kept, read back, the outputs in path order and
 * replaced whole by the next end. */
static void test_store_run_workspaces(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    char tar[65];
    char manifest[65];
    char file[65];
    char got[512] = "";
    struct store_snapshot seen = { 0 };
    journal_run(s, "run_w");
    assert_int_equal(s->ops->blob_put(s, "tarbin", 6, tar), STORE_OK);
    assert_int_equal(s->ops->blob_put(s, "{\"version\":1}", 13, manifest), STORE_OK);
    assert_int_equal(s->ops->blob_put(s, "report", 6, file), STORE_OK);
    struct store_snapshot snap = { "snap_1", "bob", "ops", tar, 6, "2026-12-07T00:00:00.000Z" };
    assert_int_equal(s->ops->snapshot_create(s, &snap), STORE_OK);
    assert_int_equal(s->ops->snapshot_create(s, &snap), STORE_CONFLICT);
    assert_int_equal(s->ops->snapshot_get(s, "snap_1", snapshot_copy, &seen), STORE_OK);
    assert_int_equal(seen.bytes, 6);
    assert_int_equal(s->ops->snapshot_get(s, "snap_2", snapshot_copy, &seen), STORE_NOT_FOUND);

    assert_int_equal(s->ops->run_workspace_get(s, "run_w", run_workspace_seen, got),
                     STORE_NOT_FOUND);
    assert_int_equal(s->ops->run_workspace_end(s, "run_w", tar, NULL, 0), STORE_NOT_FOUND);
    struct store_run_workspace w = { "run_w", manifest, tar, NULL };
    assert_int_equal(s->ops->run_workspace_create(s, &w), STORE_OK);
    assert_int_equal(s->ops->run_workspace_create(s, &w), STORE_CONFLICT);
    assert_int_equal(s->ops->run_workspace_get(s, "run_w", run_workspace_seen, got), STORE_OK);
    assert_true(strstr(got, "|-") != NULL); /* no end yet */
    struct store_run_file files[] = { { "run_w", "out/b.md", 6, file, NULL, NULL },
                                      { "run_w", "out/A.md", 6, file, "lake", "reports/A.md" },
                                      { "run_w", "out/a/z.md", 6, file, NULL, NULL } };
    assert_int_equal(s->ops->run_workspace_end(s, "run_w", tar, files, 3), STORE_OK);
    got[0] = '\0';
    assert_int_equal(s->ops->run_workspace_get(s, "run_w", run_workspace_seen, got), STORE_OK);
    assert_null(strstr(got, "|-"));
    got[0] = '\0';
    assert_int_equal(s->ops->run_file_list(s, "run_w", NULL, run_file_seen, got), STORE_OK);
    /* bytewise: upper case first, "a/" before "b" */
    assert_string_equal(got, "out/A.md:6:lake;out/a/z.md:6:-;out/b.md:6:-;");
    got[0] = '\0';
    assert_int_equal(s->ops->run_file_list(s, "run_w", "out/b.md", run_file_seen, got), STORE_OK);
    assert_string_equal(got, "out/b.md:6:-;");
    assert_int_equal(s->ops->run_file_list(s, "run_w", "out/c.md", run_file_seen, got),
                     STORE_NOT_FOUND);
    /* the next end replaces them */
    assert_int_equal(s->ops->run_workspace_end(s, "run_w", tar, files, 1), STORE_OK);
    got[0] = '\0';
    assert_int_equal(s->ops->run_file_list(s, "run_w", NULL, run_file_seen, got), STORE_OK);
    assert_string_equal(got, "out/b.md:6:-;");
}

/* A database of the schema before the journal, with runs in it, is brought to it on open: its
 * runs have no origin and no recoveries yet, and their journals start empty. */
static void test_store_journal_migrated_from_0009(void **state)
{
    struct fixture *f = *state;
    struct journal_got g = { 0 };
    char err[STORE_ERRMSG_MAX];
    char origin[64] = "";
    f->s->ops->close(f->s);
    f->s = NULL;
    if (pg_base) {
        assert_int_equal(raw_exec(f, 0, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"), 0);
        for (int i = 0; i < 9; i++) {
            assert_int_equal(raw_exec(f, 0, postgres_migrations[i].sql), 0);
        }
        assert_int_equal(raw_exec(f, 0,
                                  "CREATE TABLE airlock_schema (version INTEGER NOT NULL); "
                                  "INSERT INTO airlock_schema VALUES (9)"),
                         0);
    } else {
        unlink(f->path);
        for (int i = 0; i < 9; i++) {
            assert_int_equal(raw_exec(f, 0, migrations[i].sql), 0);
        }
        assert_int_equal(raw_exec(f, 0, "PRAGMA user_version = 9"), 0);
    }
    assert_string_equal(migrations[9].name, "0010_journal.sql");
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO runs(id, department, principal, status, input, "
                              "created, updated) VALUES ('run_old', 'ops', 'bob', 'completed', "
                              "'{}', '2026-01-31T12:00:01.007Z', '2026-01-31T12:00:01.007Z')"),
                     0);
    assert_int_equal(store_open(f, &f->s, err), STORE_OK);
    struct store *s = f->s;
    assert_int_equal(s->ops->run_get(s, "run_old", read_origin, origin), STORE_OK);
    assert_string_equal(origin, "(null)/0/0");
    journal_read(s, "run_old", 0, &g);
    assert_int_equal(g.n, 0);
    struct store_journal_entry e = journal_entry(1, "1", 1);
    assert_int_equal(s->ops->journal_append(s, "run_old", &e, 1), STORE_OK);
    journal_read(s, "run_old", 0, &g);
    assert_int_equal(g.n, 1);
    journal_got_free(&g);
}

struct approval_seen {
    char text[512];
};

static int read_approval(void *userdata, const struct store_approval *a)
{
    struct approval_seen *seen = userdata;
    snprintf(seen->text, sizeof seen->text, "%s/%s/%s/%s/%s/%s/%" PRId64 "/%s/%d", a->kind,
             a->status, a->function ? a->function : "(null)", a->args ? a->args : "(null)",
             a->connector ? a->connector : "(null)",
             a->idempotency_key ? a->idempotency_key : "(null)", a->call_seq,
             a->result ? a->result : "(null)", a->consumed);
    return 0;
}

/* A database of the schema before 0012_in_doubt, with approvals in it, is brought to it on
 * open: its approvals are kept as they were (SQLite builds the table again), and it takes
 * in_doubt approvals, answered ones and marks that keep their arguments. */
static void test_store_in_doubt_migrated_from_0011(void **state)
{
    struct fixture *f = *state;
    struct approval_seen seen;
    char err[STORE_ERRMSG_MAX];
    f->s->ops->close(f->s);
    f->s = NULL;
    if (pg_base) {
        assert_int_equal(raw_exec(f, 0, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"), 0);
        for (int i = 0; i < 11; i++) {
            assert_int_equal(raw_exec(f, 0, postgres_migrations[i].sql), 0);
        }
        assert_int_equal(raw_exec(f, 0,
                                  "CREATE TABLE airlock_schema (version INTEGER NOT NULL); "
                                  "INSERT INTO airlock_schema VALUES (11)"),
                         0);
    } else {
        unlink(f->path);
        for (int i = 0; i < 11; i++) {
            assert_int_equal(raw_exec(f, 0, migrations[i].sql), 0);
        }
        assert_int_equal(raw_exec(f, 0, "PRAGMA user_version = 11"), 0);
    }
    assert_string_equal(migrations[11].name, "0012_in_doubt.sql");
    assert_int_equal(raw_exec(f, 0,
                              "INSERT INTO runs(id, department, principal, status, input, "
                              "created, updated) VALUES ('run_old', 'ops', 'bob', "
                              "'awaiting_approval', '{}', '2026-01-31T12:00:01.007Z', "
                              "'2026-01-31T12:00:01.007Z'); INSERT INTO approvals(id, run, kind, "
                              "interruption, function, args, status, requested_by, department, "
                              "created, consumed) VALUES ('apr_old', 'run_old', 'host_call', "
                              "'int_1', 'shop.refund', '[1]', 'denied', 'bob', 'ops', "
                              "'2026-01-31T12:00:02.000Z', 1)"),
                     0);
    assert_int_equal(store_open(f, &f->s, err), STORE_OK);
    struct store *s = f->s;
    assert_int_equal(s->ops->approval_get(s, "apr_old", read_approval, &seen), STORE_OK);
    assert_string_equal(seen.text, "host_call/denied/shop.refund/[1]/(null)/(null)/0/(null)/1");
    struct store_approval a = {
        .id = "apr_new",
        .run = "run_old",
        .kind = "in_doubt",
        .function = "shop.refund",
        .args = "[2]",
        .requested_by = "bob",
        .department = "ops",
        .template_name = "",
        .connector = "shop",
        .sent = "2026-01-31T12:00:03.000Z",
        .idempotency_key = "run_old:4",
        .call_seq = 4,
        .args_sha256 = "ab",
    };
    assert_int_equal(s->ops->approval_create(s, &a), STORE_OK);
    assert_int_equal(s->ops->approval_answer(s, "apr_new", "carol", "seen", "{\"ok\":1}"),
                     STORE_OK);
    assert_int_equal(s->ops->approval_answer(s, "apr_new", "carol", "again", "2"), STORE_CONFLICT);
    assert_int_equal(s->ops->approval_answer(s, "apr_none", "carol", "", "2"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->approval_consume(s, "run_old"), STORE_OK);
    assert_int_equal(s->ops->approval_get(s, "apr_new", read_approval, &seen), STORE_OK);
    assert_string_equal(seen.text,
                        "in_doubt/answered/shop.refund/[2]/shop/run_old:4/4/{\"ok\":1}/1");
    struct store_call c = { "run_old", "run_old:5", "shop.refund", 0, NULL, "cd", "[3]" };
    assert_int_equal(s->ops->call_mark(s, &c), STORE_OK);
}

/* 0016_principal_admin: a principal's identity (one principal per identity, a taken one a
 * CONFLICT that leaves the transaction usable) and disabled flag; a principal deleted with its
 * keys and grants. */
struct seen_principal {
    int n;
    char last[160];
};

static int read_principal(void *userdata, const struct store_principal *p)
{
    struct seen_principal *seen = userdata;
    seen->n++;
    snprintf(seen->last, sizeof seen->last, "%s|%s|%s|%d", p->name, p->kind,
             p->identity ? p->identity : "(null)", p->disabled);
    return 0;
}

static void test_store_principal_identity_and_disabled(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct seen_principal seen = { 0, "" };
    unsigned char hash[STORE_HASH_LEN] = { 7 };
    char name[STORE_NAME_MAX + 1];
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "bob", "user"), STORE_OK);
    assert_int_equal(s->ops->principal_get(s, "alice", read_principal, &seen), STORE_OK);
    assert_string_equal(seen.last, "alice|user|(null)|0");
    assert_int_equal(s->ops->principal_set_identity(s, "alice", "alice@example.com"), STORE_OK);
    assert_int_equal(s->ops->principal_set_identity(s, "alice", "alice@example.com"), STORE_OK);
    assert_int_equal(s->ops->principal_set_identity(s, "ghost", "g@example.com"), STORE_NOT_FOUND);
    /* taken by another: a conflict, and the transaction goes on */
    assert_int_equal(s->ops->tx_begin(s), STORE_OK);
    assert_int_equal(s->ops->principal_set_identity(s, "bob", "alice@example.com"), STORE_CONFLICT);
    assert_int_equal(s->ops->principal_set_disabled(s, "bob", 1), STORE_OK);
    assert_int_equal(s->ops->tx_commit(s), STORE_OK);
    assert_int_equal(s->ops->principal_find_identity(s, "alice@example.com", read_principal, &seen),
                     STORE_OK);
    assert_string_equal(seen.last, "alice|user|alice@example.com|0");
    assert_int_equal(s->ops->principal_get(s, "bob", read_principal, &seen), STORE_OK);
    assert_string_equal(seen.last, "bob|user|(null)|1");
    assert_int_equal(s->ops->principal_find_identity(s, "bob@example.com", read_principal, &seen),
                     STORE_NOT_FOUND);
    /* unlinked, the identity is free for another */
    assert_int_equal(s->ops->principal_set_identity(s, "alice", NULL), STORE_OK);
    assert_int_equal(s->ops->principal_set_identity(s, "bob", "alice@example.com"), STORE_OK);
    assert_int_equal(s->ops->principal_set_disabled(s, "bob", 0), STORE_OK);
    assert_int_equal(s->ops->principal_set_disabled(s, "ghost", 1), STORE_NOT_FOUND);
    assert_int_equal(s->ops->principal_get(s, "bob", read_principal, &seen), STORE_OK);
    assert_string_equal(seen.last, "bob|user|alice@example.com|0");
    /* deleted with its keys and grants */
    assert_int_equal(s->ops->key_add(s, "bob", "0123456789ab", hash), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "bob", "agent", "*"), STORE_OK);
    assert_int_equal(s->ops->principal_delete(s, "bob"), STORE_OK);
    assert_int_equal(s->ops->principal_delete(s, "bob"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->key_lookup(s, "0123456789ab", name, hash), STORE_NOT_FOUND);
    assert_int_equal(s->ops->principal_create(s, "bob", "agent"), STORE_OK);
    int n = 0;
    assert_int_equal(s->ops->role_list(s, "bob", count_grant, &n), STORE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(s->ops->principal_find_identity(s, "alice@example.com", read_principal, &seen),
                     STORE_NOT_FOUND);
}

static int read_department_name(void *userdata, const struct store_department *d)
{
    snprintf(userdata, 32, "%s/%s", d->name, d->autonomy);
    return 0;
}

/* A department renamed with every row that names it; its usage counted; deleted. */
static void test_store_department_rename_usage_delete(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct store_department_usage u;
    struct seen_connector seen = { 0, "" };
    char got[32] = "";
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    assert_int_equal(s->ops->department_create(s, "hr"), STORE_OK);
    assert_int_equal(s->ops->department_set_policy(s, "finance", "supervised", 1), STORE_OK);
    assert_int_equal(s->ops->principal_create(s, "alice", "user"), STORE_OK);
    assert_int_equal(s->ops->role_grant(s, "alice", "author", "finance"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "t", "finance", "d", "alice"), STORE_OK);
    struct store_connector c = { "crm",   "finance", "http://127.0.0.1:9/crm",
                                 "v1:aa", "v1:bb",   "[]",
                                 "{}",    2500,      NULL,
                                 "admin" };
    assert_int_equal(s->ops->connector_create(s, &c), STORE_OK);
    struct store_run r = { .id = "run_1",
                           .template_name = "",
                           .department = "finance",
                           .principal = "alice",
                           .status = "completed",
                           .input = "{}",
                           .source = "1",
                           .language = "js",
                           .functions = "[]" };
    assert_int_equal(s->ops->run_create(s, &r), STORE_OK);
    assert_int_equal(s->ops->department_usage(s, "finance", &u), STORE_OK);
    assert_true(u.templates == 1 && u.connectors == 1 && u.mounts == 0 && u.grants == 1 &&
                u.runs == 1 && u.snapshots == 0);
    assert_int_equal(s->ops->department_usage(s, "ghost", &u), STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_rename(s, "finance", "hr"), STORE_CONFLICT);
    assert_int_equal(s->ops->department_rename(s, "ghost", "x"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_rename(s, "finance", "fin"), STORE_OK);
    assert_int_equal(s->ops->department_get(s, "finance", read_department_name, got),
                     STORE_NOT_FOUND);
    assert_int_equal(s->ops->department_get(s, "fin", read_department_name, got), STORE_OK);
    assert_string_equal(got, "fin/supervised");
    assert_int_equal(s->ops->department_usage(s, "fin", &u), STORE_OK);
    assert_true(u.templates == 1 && u.connectors == 1 && u.grants == 1 && u.runs == 1);
    assert_int_equal(s->ops->connector_get(s, "crm", read_connector, &seen), STORE_OK);
    assert_non_null(strstr(seen.last, "crm|fin|"));
    assert_int_equal(s->ops->department_usage(s, "hr", &u), STORE_OK);
    assert_true(u.templates + u.connectors + u.mounts + u.grants + u.runs + u.snapshots == 0);
    assert_int_equal(s->ops->department_delete(s, "hr"), STORE_OK);
    assert_int_equal(s->ops->department_delete(s, "hr"), STORE_NOT_FOUND);
}

static int count_version_named(void *userdata, const struct store_version *v)
{
    char *names = userdata;
    size_t used = strlen(names);
    snprintf(names + used, 64 - used, "%s%s/%lld", used ? "," : "", v->template_name,
             (long long)v->version);
    return 0;
}

/* A connector changed in place (department and creator kept) and deleted; the approved
 * versions of every template listed. */
static void test_store_connector_update_delete(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct seen_connector seen = { 0, "" };
    char names[64] = "";
    assert_int_equal(s->ops->department_create(s, "finance"), STORE_OK);
    struct store_connector c = { "crm",   "finance",     "http://127.0.0.1:9/crm", "v1:aa",
                                 "v1:bb", "[\"X-Api\"]", "{\"lookup\":{}}",        2500,
                                 NULL,    "admin" };
    assert_int_equal(s->ops->connector_create(s, &c), STORE_OK);
    struct store_connector u = { "crm",    "other", "https://crm.example.com/",
                                 "v1:cc",  "v1:dd", "[]",
                                 "{}",     9000,    NULL,
                                 "mallory" };
    assert_int_equal(s->ops->connector_update(s, &u), STORE_OK);
    assert_int_equal(s->ops->connector_get(s, "crm", read_connector, &seen), STORE_OK);
    assert_string_equal(seen.last,
                        "crm|finance|https://crm.example.com/|v1:cc|v1:dd|[]|{}|9000|admin|1");
    u.name = "erp";
    assert_int_equal(s->ops->connector_update(s, &u), STORE_NOT_FOUND);
    assert_int_equal(s->ops->connector_delete(s, "crm"), STORE_OK);
    assert_int_equal(s->ops->connector_delete(s, "crm"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->connector_get(s, "crm", read_connector, &seen), STORE_NOT_FOUND);

    assert_int_equal(s->ops->template_create(s, "t", "finance", "d", "alice"), STORE_OK);
    assert_int_equal(s->ops->template_create(s, "a", "finance", "d", "alice"), STORE_OK);
    add_version(s, "t", 1);
    add_version(s, "t", 2);
    add_version(s, "a", 1);
    assert_int_equal(s->ops->version_list_approved(s, count_version_named, names), STORE_OK);
    assert_string_equal(names, "");
    const char *moves[][2] = { { "t", "1" }, { "t", "2" }, { "a", "1" } };
    for (size_t i = 0; i < 3; i++) {
        int64_t v = moves[i][1][0] - '0';
        assert_int_equal(
                s->ops->version_set_state(s, moves[i][0], v, "draft", "submitted", "alice", NULL),
                STORE_OK);
        assert_int_equal(
                s->ops->version_set_state(s, moves[i][0], v, "submitted", "approved", "bob", NULL),
                STORE_OK);
    }
    assert_int_equal(s->ops->version_set_state(s, "t", 1, "approved", "revoked", "bob", "x"),
                     STORE_OK);
    assert_int_equal(s->ops->version_list_approved(s, count_version_named, names), STORE_OK);
    assert_string_equal(names, "a/1,t/2");
}

/* 0017_sessions: a session is found by its token's hash until deleted; a sign-in sweeps the
 * sessions past their end, not the others. */
struct seen_session {
    char text[512];
};

static int read_session(void *userdata, const struct store_session *sess)
{
    struct seen_session *seen = userdata;
    snprintf(seen->text, sizeof seen->text, "%s|%s|%s|%s|%lld", sess->token_sha256, sess->principal,
             sess->identity, sess->grants, (long long)sess->expires_ms);
    return 0;
}

static void test_store_sessions(void **state)
{
    struct fixture *f = *state;
    struct store *s = f->s;
    struct seen_session seen = { "" };
    struct store_session a = {
        "aaaa", "alice", "alice@example.com", "[[\"approver\",\"finance\"]]", NULL, 5000000000000
    };
    struct store_session old = { "bbbb", "alice", "alice@example.com", "[]", NULL, 1000 };
    assert_int_equal(s->ops->session_create(s, &old, 500), STORE_OK);
    assert_int_equal(s->ops->session_create(s, &a, 500), STORE_OK);
    assert_int_equal(s->ops->session_create(s, &a, 500), STORE_CONFLICT);
    assert_int_equal(s->ops->session_get(s, "aaaa", read_session, &seen), STORE_OK);
    assert_string_equal(seen.text,
                        "aaaa|alice|alice@example.com|[[\"approver\",\"finance\"]]|5000000000000");
    assert_int_equal(s->ops->session_get(s, "bbbb", read_session, &seen), STORE_OK);
    /* a later sign-in deletes the one past its end */
    struct store_session c = { "cccc", "bob", "bob@example.com", "[]", NULL, 5000000000000 };
    assert_int_equal(s->ops->session_create(s, &c, 2000), STORE_OK);
    assert_int_equal(s->ops->session_get(s, "bbbb", read_session, &seen), STORE_NOT_FOUND);
    assert_int_equal(s->ops->session_get(s, "aaaa", read_session, &seen), STORE_OK);
    assert_int_equal(s->ops->session_delete(s, "aaaa"), STORE_OK);
    assert_int_equal(s->ops->session_delete(s, "aaaa"), STORE_NOT_FOUND);
    assert_int_equal(s->ops->session_get(s, "aaaa", read_session, &seen), STORE_NOT_FOUND);
}

int main(void)
{
    pg_base = getenv("AIRLOCK_TEST_DATABASE");
    if (pg_base && !pg_base[0]) {
        pg_base = NULL;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_ops_version_and_schema, setup, teardown),
        cmocka_unit_test(test_store_migrations_in_step),
        cmocka_unit_test_setup_teardown(test_store_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_reopen_keeps_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_principal_conflict_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_key_lookup_and_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_roles_grant_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_department_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_lists_sorted_bytewise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_append_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_chained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_legacy_chained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_rollback_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_templates_and_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_versions_roll_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_connectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_webhooks_outbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_principal_identity_and_disabled, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_department_rename_usage_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_connector_update_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_runs_and_approvals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_head_is_last_seq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_nodes_leases_and_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_fifty_resume_one_continuation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_statements_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_commit_durable_then_visible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_transactions_nest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_reader_reads_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_conflict_keeps_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_audit_head_follows_rollbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_append_and_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_read_in_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_answers_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_append_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_large_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_read_checks_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_rollback_drops_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_workspace_blobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_run_workspaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_journal_migrated_from_0009, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_in_doubt_migrated_from_0011, setup, teardown),
    };
    const struct CMUnitTest sqlite_tests[] = {
        cmocka_unit_test_setup_teardown(test_store_sqlite_read_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_sqlite_audit_head_after_rollback_by_trigger,
                                        setup, teardown),
    };
    /* what only PostgreSQL has: a connection to lose */
    const struct CMUnitTest postgres_tests[] = {
        cmocka_unit_test_setup_teardown(test_store_postgres_reconnects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_postgres_listen_notify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_postgres_stalled_transaction_ends, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_postgres_one_chain_across_connections, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_postgres_row_and_audit_never_deadlock, setup,
                                        teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (pg_base) {
        failed += cmocka_run_group_tests(postgres_tests, NULL, NULL);
    } else {
        failed += cmocka_run_group_tests(sqlite_tests, NULL, NULL);
    }
    return failed;
}
