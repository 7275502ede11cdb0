/*
 * postgres.c - the PostgreSQL backend of store.h, over libpq. One connection, the same semantics
 * as sqlite.c for every operation (return codes, ordering, CONFLICT for a taken key, NOT_FOUND,
 * transactions), so the one test suite (unit.store) runs on both.
 *
 * - SQL: every statement is a literal of this file, prepared once per connection (PQprepare,
 *   kept by its text's pointer) and run with its values always bound as parameters, never
 *   written into the text. A unique violation is answered by INSERT ... ON CONFLICT DO NOTHING
 *   rather than an error, because an error aborts the whole PostgreSQL transaction where SQLite
 *   would only fail the statement: the caller's transaction stays usable after a CONFLICT, as on
 *   SQLite. Any other failed statement inside a transaction dooms it, and tx_commit says so.
 * - Durability: synchronous_commit is set on for the session, so a commit has reached the disk
 *   (of the primary) when it returns.
 * - Schema: the migrations of migrations/postgres/ (numbered as SQLite's), applied at open in one
 *   transaction under an advisory lock, so that two nodes starting together migrate once; the
 *   version is the one row of airlock_schema. A database from a newer airlockd is refused.
 * - The audit chain stays one chain: an append holds the transaction-level advisory lock
 *   PG_AUDIT_LOCK from the read of the head to the end of its transaction, so appends from any
 *   connection (later, any node) are serialised; a row lock of the head would not do, since an
 *   empty log has no row to lock and a waiter would chain to the head it read before waiting.
 *   The primary key on seq stays behind it: two records never share a number.
 * - Reconnect: a broken connection is reset (PQreset) at the next operation, statements are
 *   prepared again; inside a transaction it is not, since the transaction is gone: every call
 *   fails until tx_rollback (or a failed tx_commit) ends it.
 * - Wake-ups: notify is pg_notify, which PostgreSQL delivers when the transaction commits (and
 *   drops on rollback). A listener is a second connection of its own, LISTENing and nothing
 *   else; it never blocks in libpq (a non-blocking connect, poll on its socket and a pipe that
 *   wake writes to), so that whoever waits on it can be stopped at once. The store keeps a copy
 *   of the URL for it (cleansed at close: it may hold a password).
 * This file never logs (libpq's notices are dropped): errors go to errmsg for the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "migrations.h"
#include "store.h"

#define PG_CHECKPOINT_EVERY 1000 /* records */
#define PG_LINE_MAX         ((size_t)1 << 20)
#define PG_STMT_CACHE       96 /* more than the distinct statements of this file */
#define PG_AUDIT_LOCK       "7310313582143337985" /* pg_advisory_xact_lock key of audit appends */
#define PG_MIGRATE_LOCK     "7310313582143337986" /* ... and of migrations */
#define PG_RUN_CHUNK        64                    /* runs read per query of run_list */
#define PG_CONNECT_MS       10000                 /* a listener's connect, as connect_timeout */

/* A statement prepared on this connection as "s<n>"; sql is the caller's literal. */
struct pg_cached {
    const char *sql;
    char name[16];
};

struct pg_store {
    struct store base; /* first: a struct store * is a struct pg_store * */
    PGconn *conn;
    struct pg_cached cache[PG_STMT_CACHE];
    int cached;
    unsigned next_name;
    int depth;           /* transactions open: 1 for BEGIN, one more per savepoint */
    int reader;          /* open_reader's: every session is read-only */
    int need_session;    /* a reset connection whose pg_session has not yet succeeded */
    EVP_PKEY *audit_key; /* owned reference; NULL: no checkpoints */
    char *url;           /* owned, for listeners; cleansed at close */
    char errmsg[STORE_ERRMSG_MAX];
};

static struct pg_store *pg_of(struct store *s)
{
    return (struct pg_store *)s;
}

/* libpq's message without its trailing newline. */
static enum store_rc pg_fail_text(struct pg_store *st, const char *what, const char *message)
{
    int len = (int)strlen(message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' ')) {
        len--;
    }
    snprintf(st->errmsg, sizeof st->errmsg, "postgres: %s: %.*s", what, len, message);
    return STORE_ERROR;
}

static enum store_rc pg_fail(struct pg_store *st, const char *what)
{
    return pg_fail_text(st, what, PQerrorMessage(st->conn));
}

static void pg_now(char out[32])
{
    struct timespec ts;
    struct tm tm;
    char date[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%.20s.%03dZ", date, (int)(ts.tv_nsec / 1000000));
}

static void pg_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* library code never prints */
}

/* What every new or reset connection runs before anything else. A transaction left open by a
 * node that stopped mid-way (frozen, paused, its machine gone) would keep its row locks and the
 * audit chain's lock for good, and every node waiting on them with it: the server ends such a
 * session once it has been idle in its transaction for PG_IDLE_IN_TX (nothing of airlockd's
 * keeps one open while it waits on anything else), unless the URL's options, the role or the
 * database set a value of their own. */
#define PG_IDLE_IN_TX "5s"
static enum store_rc pg_session(struct pg_store *st)
{
    PGresult *res = PQexec(st->conn, "SET synchronous_commit TO on; SET client_min_messages TO "
                                     "warning; SELECT set_config("
                                     "'idle_in_transaction_session_timeout', '" PG_IDLE_IN_TX
                                     "', false) WHERE current_setting("
                                     "'idle_in_transaction_session_timeout') = '0'");
    enum store_rc rc = STORE_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(st, "session");
    }
    PQclear(res);
    if (rc == STORE_OK && st->reader) {
        res = PQexec(st->conn, "SET default_transaction_read_only TO on");
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            rc = pg_fail(st, "session");
        }
        PQclear(res);
    }
    return rc;
}

/* The connection, reset if it broke since the last call. Inside a transaction a broken
 * connection stays an error: the transaction died with it. */
static enum store_rc pg_ready(struct pg_store *st)
{
    if (PQstatus(st->conn) == CONNECTION_OK) {
        if (st->need_session && pg_session(st) != STORE_OK) {
            return STORE_ERROR;
        }
        st->need_session = 0;
        return STORE_OK;
    }
    if (st->depth > 0) {
        snprintf(st->errmsg, sizeof st->errmsg,
                 "postgres: the connection was lost inside a transaction");
        return STORE_ERROR;
    }
    PQreset(st->conn);
    st->cached = 0; /* the new session has none of the statements */
    st->need_session = 1;
    if (PQstatus(st->conn) != CONNECTION_OK) {
        return pg_fail(st, "cannot reconnect");
    }
    if (pg_session(st) != STORE_OK) {
        return STORE_ERROR;
    }
    st->need_session = 0;
    return STORE_OK;
}

/* Runs sql with n parameters (text unless formats says binary; a NULL value binds NULL) and
 * hands back its result on success (the caller PQclears it). An error of integrity class 23
 * (a constraint) is a CONFLICT, as on SQLite. */
static enum store_rc pg_exec_full(struct pg_store *st, const char *sql, int n,
                                  const char *const *values, const int *lengths, const int *formats,
                                  PGresult **ret_res)
{
    struct pg_cached *c = NULL;
    PGresult *res = NULL;
    enum store_rc rc = pg_ready(st);
    if (rc != STORE_OK) {
        return rc;
    }
    for (int i = 0; i < st->cached; i++) {
        if (st->cache[i].sql == sql) {
            c = &st->cache[i];
            break;
        }
    }
    if (!c && st->cached < PG_STMT_CACHE) {
        struct pg_cached *slot = &st->cache[st->cached];
        snprintf(slot->name, sizeof slot->name, "s%u", st->next_name++);
        res = PQprepare(st->conn, slot->name, sql, n, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            rc = pg_fail_text(st, "prepare", PQresultErrorMessage(res));
            PQclear(res);
            return rc;
        }
        PQclear(res);
        slot->sql = sql;
        c = slot;
        st->cached++;
    }
    res = c ? PQexecPrepared(st->conn, c->name, n, values, lengths, formats, 0)
            : PQexecParams(st->conn, sql, n, NULL, values, lengths, formats, 0);
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        *ret_res = res;
        return STORE_OK;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (state && strncmp(state, "23", 2) == 0) {
        rc = STORE_CONFLICT;
    } else {
        rc = pg_fail_text(st, "query", res ? PQresultErrorMessage(res) : PQerrorMessage(st->conn));
    }
    PQclear(res);
    return rc;
}

static enum store_rc pg_query(struct pg_store *st, const char *sql, int n,
                              const char *const *values, PGresult **ret_res)
{
    return pg_exec_full(st, sql, n, values, NULL, NULL, ret_res);
}

/* Runs a statement for its effect; *ret_changes (may be NULL) gets the rows it touched. */
static enum store_rc pg_exec(struct pg_store *st, const char *sql, int n, const char *const *values,
                             int64_t *ret_changes)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(st, sql, n, values, &res);
    if (rc == STORE_OK && ret_changes) {
        const char *t = PQcmdTuples(res);
        *ret_changes = t && t[0] ? strtoll(t, NULL, 10) : 0;
    }
    PQclear(res);
    return rc;
}

/* An INSERT ... ON CONFLICT DO NOTHING: a row not inserted is a CONFLICT. */
static enum store_rc pg_insert(struct pg_store *st, const char *sql, int n,
                               const char *const *values)
{
    int64_t changes = 0;
    enum store_rc rc = pg_exec(st, sql, n, values, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_CONFLICT : rc;
}

/* Column i of row, NULL for SQL NULL. */
static const char *pg_col(const PGresult *res, int row, int i)
{
    return PQgetisnull(res, row, i) ? NULL : PQgetvalue(res, row, i);
}

static int64_t pg_int(const PGresult *res, int row, int i)
{
    return PQgetisnull(res, row, i) ? 0 : strtoll(PQgetvalue(res, row, i), NULL, 10);
}

typedef int pg_row_fn(const PGresult *res, int row, void *fn, void *userdata);

/* Runs sql and hands each row to fn through `each`, until one returns non-zero; NOT_FOUND
 * when `one` and no row came. */
static enum store_rc pg_walk(struct pg_store *st, const char *sql, int n, const char *const *values,
                             int one, pg_row_fn *each, void *fn, void *userdata)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(st, sql, n, values, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    int rows = PQntuples(res);
    for (int i = 0; i < rows; i++) {
        if (each(res, i, fn, userdata) != 0) {
            break;
        }
    }
    PQclear(res);
    return one && rows == 0 ? STORE_NOT_FOUND : STORE_OK;
}

/* STORE_OK when sql (naming one row by arg) finds it, NOT_FOUND when not. */
static enum store_rc pg_exists(struct pg_store *st, const char *sql, const char *arg)
{
    PGresult *res = NULL;
    const char *args[] = { arg };
    enum store_rc rc = pg_query(st, sql, 1, args, &res);
    if (rc == STORE_OK && PQntuples(res) == 0) {
        rc = STORE_NOT_FOUND;
    }
    PQclear(res);
    return rc;
}

static void pg_close(struct store *s)
{
    if (!s) {
        return;
    }
    struct pg_store *st = pg_of(s);
    PQfinish(st->conn);
    EVP_PKEY_free(st->audit_key);
    if (st->url) {
        OPENSSL_cleanse(st->url, strlen(st->url));
        free(st->url);
    }
    free(st);
}

static const char *pg_errmsg(struct store *s)
{
    return pg_of(s)->errmsg;
}

static enum store_rc pg_principal_count(struct store *s, int64_t *ret_count)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(pg_of(s), "SELECT count(*) FROM principals", 0, NULL, &res);
    if (rc == STORE_OK) {
        *ret_count = pg_int(res, 0, 0);
    }
    PQclear(res);
    return rc;
}

static enum store_rc pg_ping(struct store *s)
{
    /* Reads a table, not just the connection; a broken connection is reset here first, so
     * /readyz both reports an outage and ends it once the database answers again. */
    int64_t n = 0;
    return pg_principal_count(s, &n);
}

/* ---------------------------------------------------------------- transactions */

/* A statement made here (not a literal: the statement cache keys texts by their pointer), sent
 * as a simple query, never prepared. */
static enum store_rc pg_exec_once(struct pg_store *st, const char *sql)
{
    enum store_rc rc = pg_ready(st);
    if (rc != STORE_OK) {
        return rc;
    }
    PGresult *res = PQexec(st->conn, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        rc = pg_fail_text(st, "query", res ? PQresultErrorMessage(res) : PQerrorMessage(st->conn));
    }
    PQclear(res);
    return rc;
}

/* A transaction, or inside one a savepoint (txN for depth N): a caller's transaction nests
 * inside the writer's batch, and a failed statement in it dooms only its savepoint. */
static enum store_rc pg_tx_begin(struct store *s)
{
    struct pg_store *st = pg_of(s);
    char sql[32];
    if (st->depth == 0) {
        snprintf(sql, sizeof sql, "BEGIN");
    } else {
        snprintf(sql, sizeof sql, "SAVEPOINT tx%d", st->depth);
    }
    enum store_rc rc = pg_exec_once(st, sql);
    if (rc == STORE_OK) {
        st->depth++;
    }
    return rc;
}

static enum store_rc pg_tx_commit(struct store *s)
{
    struct pg_store *st = pg_of(s);
    PGresult *res = NULL;
    char sql[32];
    if (st->depth == 0) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: commit outside a transaction");
        return STORE_ERROR;
    }
    if (st->depth > 1) {
        /* a failed RELEASE leaves the savepoint for the caller's tx_rollback */
        snprintf(sql, sizeof sql, "RELEASE tx%d", st->depth - 1);
        enum store_rc rc = pg_exec_once(st, sql);
        if (rc == STORE_OK) {
            st->depth--;
        }
        return rc;
    }
    enum store_rc rc = pg_query(st, "COMMIT", 0, NULL, &res);
    /* COMMIT of a transaction an earlier error aborted answers ROLLBACK, without an error */
    if (rc == STORE_OK && strcmp(PQcmdStatus(res), "COMMIT") != 0) {
        snprintf(st->errmsg, sizeof st->errmsg,
                 "postgres: the transaction was rolled back (a statement in it failed)");
        rc = STORE_ERROR;
    }
    PQclear(res);
    st->depth = 0; /* committed or not, the transaction is over */
    return rc;
}

static void pg_tx_rollback(struct store *s)
{
    struct pg_store *st = pg_of(s);
    char sql[64];
    if (st->depth > 1) {
        if (PQstatus(st->conn) == CONNECTION_OK) {
            snprintf(sql, sizeof sql, "ROLLBACK TO tx%d; RELEASE tx%d", st->depth - 1,
                     st->depth - 1);
            PQclear(PQexec(st->conn, sql));
        }
        st->depth--;
        return;
    }
    if (st->depth == 1 && PQstatus(st->conn) == CONNECTION_OK) {
        PQclear(PQexec(st->conn, "ROLLBACK"));
    }
    st->depth = 0;
}

/* ---------------------------------------------------------------- principals, keys, roles */

static enum store_rc pg_principal_create(struct store *s, const char *name, const char *kind)
{
    char now[32];
    pg_now(now);
    const char *args[] = { name, kind, now };
    return pg_insert(pg_of(s),
                     "INSERT INTO principals(name, kind, created) VALUES ($1, $2, $3) "
                     "ON CONFLICT DO NOTHING",
                     3, args);
}

static int pg_principal_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_principal p = { pg_col(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2) };
    return ((store_principal_fn *)fn)(userdata, &p);
}

static enum store_rc pg_principal_get(struct store *s, const char *name, store_principal_fn *fn,
                                      void *userdata)
{
    const char *args[] = { name };
    return pg_walk(pg_of(s), "SELECT name, kind, created FROM principals WHERE name = $1", 1, args,
                   1, pg_principal_each, (void *)fn, userdata);
}

static enum store_rc pg_principal_list(struct store *s, store_principal_fn *fn, void *userdata)
{
    return pg_walk(pg_of(s), "SELECT name, kind, created FROM principals ORDER BY name", 0, NULL, 0,
                   pg_principal_each, (void *)fn, userdata);
}

static enum store_rc pg_principal_exists(struct pg_store *st, const char *name)
{
    return pg_exists(st, "SELECT 1 FROM principals WHERE name = $1", name);
}

static enum store_rc pg_key_add(struct store *s, const char *principal, const char *prefix,
                                const unsigned char hash[STORE_HASH_LEN])
{
    struct pg_store *st = pg_of(s);
    enum store_rc rc = pg_principal_exists(st, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    pg_now(now);
    const char *args[] = { prefix, principal, (const char *)hash, now };
    const int lengths[] = { 0, 0, STORE_HASH_LEN, 0 };
    const int formats[] = { 0, 0, 1, 0 }; /* the hash goes as bytes */
    PGresult *res = NULL;
    rc = pg_exec_full(st,
                      "INSERT INTO api_keys(prefix, principal, hash, created) VALUES ($1, $2, "
                      "$3::bytea, $4) ON CONFLICT DO NOTHING",
                      4, args, lengths, formats, &res);
    if (rc == STORE_OK && strcmp(PQcmdTuples(res), "1") != 0) {
        rc = STORE_CONFLICT;
    }
    PQclear(res);
    return rc;
}

static enum store_rc pg_key_revoke(struct store *s, const char *principal, const char *prefix)
{
    char now[32];
    pg_now(now);
    const char *args[] = { now, prefix, principal };
    int64_t changes = 0;
    enum store_rc rc = pg_exec(pg_of(s),
                               "UPDATE api_keys SET revoked = $1 WHERE prefix = $2 AND "
                               "principal = $3 AND revoked IS NULL",
                               3, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static int pg_hex_nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static enum store_rc pg_key_lookup(struct store *s, const char *prefix, char *ret_principal,
                                   unsigned char ret_hash[STORE_HASH_LEN])
{
    PGresult *res = NULL;
    const char *args[] = { prefix };
    unsigned char hash[STORE_HASH_LEN];
    enum store_rc rc = pg_query(pg_of(s),
                                "SELECT principal, encode(hash, 'hex') FROM api_keys "
                                "WHERE prefix = $1 AND revoked IS NULL",
                                1, args, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    rc = STORE_NOT_FOUND;
    if (PQntuples(res) == 1) {
        const char *name = pg_col(res, 0, 0);
        const char *hex = pg_col(res, 0, 1);
        int ok = name && hex && strlen(name) <= STORE_NAME_MAX && strlen(hex) == 2 * STORE_HASH_LEN;
        for (size_t i = 0; ok && i < STORE_HASH_LEN; i++) {
            int hi = pg_hex_nibble(hex[2 * i]);
            int lo = pg_hex_nibble(hex[2 * i + 1]);
            ok = hi >= 0 && lo >= 0;
            hash[i] = (unsigned char)(hi << 4 | lo);
        }
        if (ok) {
            memcpy(ret_principal, name, strlen(name) + 1);
            memcpy(ret_hash, hash, STORE_HASH_LEN);
            rc = STORE_OK;
        }
    }
    PQclear(res);
    return rc;
}

static int pg_key_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_key k = { pg_col(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2) };
    return ((store_key_fn *)fn)(userdata, &k);
}

static enum store_rc pg_key_list(struct store *s, const char *principal, store_key_fn *fn,
                                 void *userdata)
{
    const char *args[] = { principal };
    return pg_walk(pg_of(s),
                   "SELECT prefix, created, revoked FROM api_keys WHERE principal = $1 "
                   "ORDER BY created",
                   1, args, 0, pg_key_each, (void *)fn, userdata);
}

static enum store_rc pg_role_grant(struct store *s, const char *principal, const char *role,
                                   const char *department)
{
    struct pg_store *st = pg_of(s);
    enum store_rc rc = pg_principal_exists(st, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    pg_now(now);
    const char *args[] = { principal, role, department, now };
    return pg_insert(st,
                     "INSERT INTO role_grants(principal, role, department, created) VALUES ($1, "
                     "$2, $3, $4) ON CONFLICT DO NOTHING",
                     4, args);
}

static enum store_rc pg_role_revoke(struct store *s, const char *principal, const char *role,
                                    const char *department)
{
    const char *args[] = { principal, role, department };
    int64_t changes = 0;
    enum store_rc rc = pg_exec(
            pg_of(s),
            "DELETE FROM role_grants WHERE principal = $1 AND role = $2 AND department = $3", 3,
            args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static int pg_grant_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_grant g = { pg_col(res, row, 0), pg_col(res, row, 1) };
    return ((store_grant_fn *)fn)(userdata, &g);
}

static enum store_rc pg_role_list(struct store *s, const char *principal, store_grant_fn *fn,
                                  void *userdata)
{
    const char *args[] = { principal };
    return pg_walk(pg_of(s),
                   "SELECT role, department FROM role_grants WHERE principal = $1 "
                   "ORDER BY department, role",
                   1, args, 0, pg_grant_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- departments */

static enum store_rc pg_department_create(struct store *s, const char *name)
{
    char now[32];
    pg_now(now);
    const char *args[] = { name, now };
    return pg_insert(pg_of(s),
                     "INSERT INTO departments(name, created) VALUES ($1, $2) "
                     "ON CONFLICT DO NOTHING",
                     2, args);
}

static int pg_department_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_department d = { pg_col(res, row, 0), pg_col(res, row, 1),
                                  (int)pg_int(res, row, 2), pg_col(res, row, 3) };
    return ((store_department_fn *)fn)(userdata, &d);
}

static enum store_rc pg_department_get(struct store *s, const char *name, store_department_fn *fn,
                                       void *userdata)
{
    const char *args[] = { name };
    return pg_walk(pg_of(s),
                   "SELECT name, autonomy, allow_adhoc, created FROM departments WHERE name = $1",
                   1, args, 1, pg_department_each, (void *)fn, userdata);
}

static enum store_rc pg_department_list(struct store *s, store_department_fn *fn, void *userdata)
{
    return pg_walk(pg_of(s),
                   "SELECT name, autonomy, allow_adhoc, created FROM departments ORDER BY name", 0,
                   NULL, 0, pg_department_each, (void *)fn, userdata);
}

static enum store_rc pg_department_set_policy(struct store *s, const char *name,
                                              const char *autonomy, int allow_adhoc)
{
    const char *args[] = { autonomy, allow_adhoc ? "1" : "0", name };
    int64_t changes = 0;
    enum store_rc rc = pg_exec(
            pg_of(s), "UPDATE departments SET autonomy = $1, allow_adhoc = $2 WHERE name = $3", 3,
            args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

/* ---------------------------------------------------------------- audit */

/* The last record's seq and hash (0 and 64 '0' for an empty log); with ret_checkpoint, whether
 * it is a checkpoint of the record before it. The caller holds PG_AUDIT_LOCK. */
static enum store_rc pg_audit_head(struct pg_store *st, int64_t *ret_seq,
                                   char ret_hash[AUDIT_HASH_HEX_LEN + 1], int *ret_checkpoint)
{
    PGresult *res = NULL;
    enum store_rc rc =
            pg_query(st, "SELECT seq, hash, action, details FROM audit ORDER BY seq DESC LIMIT 1",
                     0, NULL, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    *ret_seq = 0;
    memset(ret_hash, '0', AUDIT_HASH_HEX_LEN);
    ret_hash[AUDIT_HASH_HEX_LEN] = '\0';
    if (ret_checkpoint) {
        *ret_checkpoint = 0;
    }
    if (PQntuples(res) == 1) {
        const char *hash = pg_col(res, 0, 1);
        const char *action = pg_col(res, 0, 2);
        const char *details = pg_col(res, 0, 3);
        *ret_seq = pg_int(res, 0, 0);
        snprintf(ret_hash, AUDIT_HASH_HEX_LEN + 1, "%s", hash ? hash : "");
        if (ret_checkpoint && action && details && strcmp(action, AUDIT_CHECKPOINT_ACTION) == 0) {
            /* details written by audit_checkpoint_details: {"hash":..,"public_key":..,"seq":N */
            char want[48];
            snprintf(want, sizeof want, "\"seq\":%" PRId64 ",", *ret_seq - 1);
            *ret_checkpoint = strstr(details, want) != NULL;
        }
    }
    PQclear(res);
    return STORE_OK;
}

/* Builds and inserts the next record; the caller holds PG_AUDIT_LOCK in a (sub)transaction. */
static enum store_rc pg_audit_insert(struct pg_store *st, const char *actor, const char *action,
                                     const char *subject, const char *department,
                                     const char *details_json, int64_t *ret_seq,
                                     char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    char now[32];
    char prev[AUDIT_HASH_HEX_LEN + 1];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    char seq[24];
    int64_t last = 0;
    struct buf line;
    struct al_error err;
    enum store_rc rc = pg_audit_head(st, &last, prev, NULL);

    buf_init(&line, PG_LINE_MAX);
    memset(&err, 0, sizeof err);
    if (rc != STORE_OK) {
        goto out;
    }
    pg_now(now);
    struct audit_record rec = { (uint64_t)last + 1,     now,        actor,        action,
                                subject ? subject : "", department, details_json, prev };
    if (audit_record_write(&rec, &line, hash, &err) != AL_OK || buf_append_byte(&line, 0)) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit record: %.200s",
                 err.message[0] ? err.message : "too large");
        rc = STORE_ERROR;
        goto out;
    }
    snprintf(seq, sizeof seq, "%" PRId64, last + 1);
    const char *args[] = { seq,        now,          actor, action, subject,
                           department, details_json, prev,  hash,   line.data };
    rc = pg_exec(st,
                 "INSERT INTO audit(seq, time, actor, action, subject, department, details, prev, "
                 "hash, line) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                 10, args, NULL);
    if (rc == STORE_CONFLICT) {
        rc = pg_fail_text(st, "audit", "a record with that seq exists");
    }
    if (rc != STORE_OK) {
        goto out;
    }
    *ret_seq = last + 1;
    memcpy(ret_hash, hash, sizeof hash);
out:
    buf_done(&line);
    return rc;
}

/* A checkpoint record of (seq, hash), signed now. */
static enum store_rc pg_audit_sign(struct pg_store *st, int64_t seq, const char *hash,
                                   struct store_checkpoint *ret)
{
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (!st->audit_key) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit: no signing key");
        return STORE_ERROR;
    }
    ret->seq = seq;
    snprintf(ret->hash, sizeof ret->hash, "%s", hash);
    pg_now(ret->time);
    if (audit_public_key_hex(st->audit_key, ret->public_key, &err) != AL_OK ||
        audit_checkpoint_sign(st->audit_key, (uint64_t)seq, hash, ret->signature, &err) != AL_OK) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit checkpoint: %.200s", err.message);
        return STORE_ERROR;
    }
    return STORE_OK;
}

static enum store_rc pg_audit_append_checkpoint(struct pg_store *st, int64_t seq, const char *hash,
                                                struct store_checkpoint *ret)
{
    char cp_hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t cp_seq = 0;
    struct buf details;
    buf_init(&details, 1024);
    enum store_rc rc = pg_audit_sign(st, seq, hash, ret);
    if (rc == STORE_OK && audit_checkpoint_details(&details, (uint64_t)seq, hash, ret->public_key,
                                                   ret->signature) != BUF_OK) {
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = pg_audit_insert(st, AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION, "audit", NULL,
                             details.data, &cp_seq, cp_hash);
    }
    buf_done(&details);
    return rc;
}

/* Opens what an audit write runs in - a savepoint inside the caller's transaction, a
 * transaction of its own outside one - and takes the audit lock in it. */
static enum store_rc pg_audit_open(struct pg_store *st, int *ret_own)
{
    int own = st->depth == 0;
    enum store_rc rc =
            own ? pg_tx_begin(&st->base) : pg_exec(st, "SAVEPOINT audit_write", 0, NULL, NULL);
    if (rc != STORE_OK) {
        return rc;
    }
    *ret_own = own;
    rc = pg_exec(st, "SELECT pg_advisory_xact_lock(" PG_AUDIT_LOCK ")", 0, NULL, NULL);
    return rc;
}

/* Ends it: kept (rc STORE_OK) or undone. Returns rc, or the error of keeping it. */
static enum store_rc pg_audit_close(struct pg_store *st, int own, enum store_rc rc)
{
    if (rc == STORE_OK) {
        if (own) {
            return pg_tx_commit(&st->base);
        }
        return pg_exec(st, "RELEASE audit_write", 0, NULL, NULL);
    }
    if (own) {
        pg_tx_rollback(&st->base);
    } else if (PQstatus(st->conn) == CONNECTION_OK) {
        PQclear(PQexec(st->conn, "ROLLBACK TO audit_write; RELEASE audit_write"));
    }
    return rc;
}

static enum store_rc pg_audit_append(struct store *s, const char *actor, const char *action,
                                     const char *subject, const char *department,
                                     const char *details_json, int64_t *ret_seq)
{
    struct pg_store *st = pg_of(s);
    struct store_checkpoint cp;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    int own = 0;
    enum store_rc rc = pg_audit_open(st, &own);
    if (rc == STORE_OK) {
        rc = pg_audit_insert(st, actor, action, subject, department, details_json, &seq, hash);
    }
    if (rc == STORE_OK && st->audit_key && seq % PG_CHECKPOINT_EVERY == PG_CHECKPOINT_EVERY - 1) {
        rc = pg_audit_append_checkpoint(st, seq, hash, &cp);
    }
    rc = pg_audit_close(st, own, rc);
    if (rc != STORE_OK) {
        return rc == STORE_CONFLICT ? pg_fail_text(st, "audit", "conflict") : rc;
    }
    if (ret_seq) {
        *ret_seq = seq;
    }
    return STORE_OK;
}

static enum store_rc pg_audit_set_key(struct store *s, EVP_PKEY *key)
{
    struct pg_store *st = pg_of(s);
    if (key && EVP_PKEY_up_ref(key) != 1) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit: cannot keep the key");
        return STORE_ERROR;
    }
    EVP_PKEY_free(st->audit_key);
    st->audit_key = key;
    return STORE_OK;
}

static enum store_rc pg_audit_checkpoint(struct store *s, int append, struct store_checkpoint *ret)
{
    struct pg_store *st = pg_of(s);
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    int sealed = 0;
    int own = 0;
    enum store_rc rc = pg_audit_open(st, &own);
    if (rc == STORE_OK) {
        rc = pg_audit_head(st, &seq, hash, &sealed);
    }
    if (rc == STORE_OK && seq == 0) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK && append && !sealed) {
        struct store_checkpoint cp;
        rc = pg_audit_append_checkpoint(st, seq, hash, &cp);
        if (rc == STORE_OK) {
            rc = pg_audit_head(st, &seq, hash, NULL);
        }
    }
    if (rc == STORE_OK) {
        rc = pg_audit_sign(st, seq, hash, ret);
    }
    return pg_audit_close(st, own, rc);
}

static int pg_audit_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_audit a = { pg_int(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2),
                             pg_col(res, row, 3), pg_col(res, row, 4), pg_col(res, row, 5),
                             pg_col(res, row, 6), pg_col(res, row, 7), pg_col(res, row, 8),
                             pg_col(res, row, 9) };
    return ((store_audit_fn *)fn)(userdata, &a);
}

/* libpq holds a whole result in memory, and a record may be most of a MiB (a version's source):
 * records are read this many at a time, so that a walk its callback ends early (a page of the
 * export, cut at its size) holds a few of them, not a page of 256. */
#define PG_AUDIT_CHUNK 4

static enum store_rc pg_audit_search(struct store *s, int64_t after_seq, int64_t limit,
                                     const struct store_audit_filter *filter, store_audit_fn *fn,
                                     void *userdata)
{
    static const struct store_audit_filter none = { NULL, NULL, NULL };
    const struct store_audit_filter *f = filter ? filter : &none;
    struct pg_store *st = pg_of(s);
    int64_t done = 0;
    int stopped = 0;
    while (!stopped && done < limit) {
        char after[24];
        char max[24];
        int64_t want = limit - done < PG_AUDIT_CHUNK ? limit - done : PG_AUDIT_CHUNK;
        PGresult *res = NULL;
        snprintf(after, sizeof after, "%" PRId64, after_seq);
        snprintf(max, sizeof max, "%" PRId64, want);
        const char *args[] = { f->action, f->run, f->template_name, after, max };
        /* details is always a JSON object (audit_append checks it); json, not jsonb, takes any */
        enum store_rc rc = pg_query(
                st,
                "SELECT seq, time, actor, action, subject, department, details, prev, hash, line "
                "FROM audit WHERE seq > $4::bigint AND ($1::text IS NULL OR action = $1) "
                "AND ($2::text IS NULL OR subject = $2 OR details::json ->> 'run' = $2) "
                "AND ($3::text IS NULL OR subject = $3 OR details::json ->> 'template' = $3) "
                "ORDER BY seq LIMIT $5::bigint",
                5, args, &res);
        if (rc != STORE_OK) {
            return rc;
        }
        int rows = PQntuples(res);
        for (int i = 0; i < rows && !stopped; i++) {
            after_seq = pg_int(res, i, 0);
            stopped = pg_audit_each(res, i, (void *)fn, userdata) != 0;
        }
        PQclear(res);
        done += rows;
        if (rows < want) {
            break;
        }
    }
    return STORE_OK;
}

static enum store_rc pg_audit_list(struct store *s, int64_t after_seq, int64_t limit,
                                   store_audit_fn *fn, void *userdata)
{
    return pg_audit_search(s, after_seq, limit, NULL, fn, userdata);
}

static enum store_rc pg_audit_last_seq(struct store *s, int64_t *ret_seq)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(pg_of(s), "SELECT coalesce(max(seq), 0) FROM audit", 0, NULL, &res);
    if (rc == STORE_OK) {
        *ret_seq = pg_int(res, 0, 0);
    }
    PQclear(res);
    return rc;
}

/* ---------------------------------------------------------------- templates (0003) */

static enum store_rc pg_template_create(struct store *s, const char *name, const char *department,
                                        const char *description, const char *created_by)
{
    struct pg_store *st = pg_of(s);
    enum store_rc rc = pg_exists(st, "SELECT 1 FROM departments WHERE name = $1", department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    pg_now(now);
    const char *args[] = { name, department, description ? description : "", now, created_by };
    return pg_insert(st,
                     "INSERT INTO templates(name, department, description, created, created_by) "
                     "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                     5, args);
}

static int pg_template_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_template t = { pg_col(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2),
                                pg_col(res, row, 3), pg_col(res, row, 4) };
    return ((store_template_fn *)fn)(userdata, &t);
}

static enum store_rc pg_template_get(struct store *s, const char *name, store_template_fn *fn,
                                     void *userdata)
{
    const char *args[] = { name };
    return pg_walk(pg_of(s),
                   "SELECT name, department, description, created, created_by FROM templates "
                   "WHERE name = $1",
                   1, args, 1, pg_template_each, (void *)fn, userdata);
}

static enum store_rc pg_template_list(struct store *s, store_template_fn *fn, void *userdata)
{
    return pg_walk(pg_of(s),
                   "SELECT name, department, description, created, created_by FROM templates "
                   "ORDER BY name",
                   0, NULL, 0, pg_template_each, (void *)fn, userdata);
}

static enum store_rc pg_version_create(struct store *s, const struct store_version *v,
                                       int64_t *ret_version)
{
    struct pg_store *st = pg_of(s);
    enum store_rc rc = pg_exists(st, "SELECT 1 FROM templates WHERE name = $1", v->template_name);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    pg_now(now);
    PGresult *res = NULL;
    const char *args[] = { v->template_name, v->source, v->language, v->input_schema, v->functions,
                           v->autonomy,      v->limits, v->digest,   v->author,       now };
    rc = pg_query(st,
                  "INSERT INTO versions(template, version, state, source, language, input_schema, "
                  "functions, autonomy, limits, digest, author, created) SELECT $1::text, "
                  "coalesce(max(version), 0) + 1, 'draft', $2, $3, $4, $5, $6, $7, $8, $9, $10 "
                  "FROM versions WHERE template = $1::text ON CONFLICT DO NOTHING "
                  "RETURNING version",
                  10, args, &res);
    if (rc == STORE_OK) {
        if (PQntuples(res) == 1) {
            *ret_version = pg_int(res, 0, 0);
        } else {
            rc = STORE_CONFLICT;
        }
    }
    PQclear(res);
    return rc;
}

#define PG_VERSION_COLUMNS                                                                        \
    "SELECT v.template, v.version, t.department, v.state, v.source, v.language, v.input_schema, " \
    "v.functions, v.autonomy, v.limits, v.digest, v.author, v.created, v.approved_by, "           \
    "v.approved, v.approve_comment, v.submitted_by, v.submitted, v.rejected_by, v.rejected, "     \
    "v.reject_comment, v.revoked_by, v.revoked, v.revoke_reason FROM versions v JOIN templates "  \
    "t ON t.name = v.template "

static int pg_version_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_version v = {
        .template_name = pg_col(res, row, 0),
        .version = pg_int(res, row, 1),
        .department = pg_col(res, row, 2),
        .state = pg_col(res, row, 3),
        .source = pg_col(res, row, 4),
        .language = pg_col(res, row, 5),
        .input_schema = pg_col(res, row, 6),
        .functions = pg_col(res, row, 7),
        .autonomy = pg_col(res, row, 8),
        .limits = pg_col(res, row, 9),
        .digest = pg_col(res, row, 10),
        .author = pg_col(res, row, 11),
        .created = pg_col(res, row, 12),
        .approved_by = pg_col(res, row, 13),
        .approved = pg_col(res, row, 14),
        .approve_comment = pg_col(res, row, 15),
        .submitted_by = pg_col(res, row, 16),
        .submitted = pg_col(res, row, 17),
        .rejected_by = pg_col(res, row, 18),
        .rejected = pg_col(res, row, 19),
        .reject_comment = pg_col(res, row, 20),
        .revoked_by = pg_col(res, row, 21),
        .revoked = pg_col(res, row, 22),
        .revoke_reason = pg_col(res, row, 23),
    };
    return ((store_version_fn *)fn)(userdata, &v);
}

static enum store_rc pg_version_get(struct store *s, const char *template_name, int64_t version,
                                    store_version_fn *fn, void *userdata)
{
    char num[24];
    const char *args[] = { template_name, num };
    if (version < 0) {
        return STORE_NOT_FOUND;
    }
    if (version == 0) {
        return pg_walk(pg_of(s),
                       PG_VERSION_COLUMNS "WHERE v.template = $1 AND v.state = 'approved' "
                                          "ORDER BY v.version DESC LIMIT 1",
                       1, args, 1, pg_version_each, (void *)fn, userdata);
    }
    snprintf(num, sizeof num, "%" PRId64, version);
    return pg_walk(pg_of(s), PG_VERSION_COLUMNS "WHERE v.template = $1 AND v.version = $2", 2, args,
                   1, pg_version_each, (void *)fn, userdata);
}

static enum store_rc pg_version_list(struct store *s, const char *template_name,
                                     store_version_fn *fn, void *userdata)
{
    const char *args[] = { template_name };
    return pg_walk(pg_of(s), PG_VERSION_COLUMNS "WHERE v.template = $1 ORDER BY v.version", 1, args,
                   0, pg_version_each, (void *)fn, userdata);
}

static enum store_rc pg_version_set_state(struct store *s, const char *template_name,
                                          int64_t version, const char *from_state,
                                          const char *to_state, const char *by, const char *comment)
{
    struct pg_store *st = pg_of(s);
    /* the columns come from this table, never from the caller; a submission keeps no comment,
     * which is the last parameter, so that every parameter of a statement is used */
    static const char *const sql[][2] = {
        { "submitted", "UPDATE versions SET state = $1, submitted = $2, submitted_by = $3 "
                       "WHERE template = $4 AND version = $5 AND state = $6" },
        { "approved", "UPDATE versions SET state = $1, approved = $2, approved_by = $3, "
                      "approve_comment = $7 WHERE template = $4 AND version = $5 AND state = $6" },
        { "rejected", "UPDATE versions SET state = $1, rejected = $2, rejected_by = $3, "
                      "reject_comment = $7 WHERE template = $4 AND version = $5 AND state = $6" },
        { "revoked", "UPDATE versions SET state = $1, revoked = $2, revoked_by = $3, "
                     "revoke_reason = $7 WHERE template = $4 AND version = $5 AND state = $6" },
    };
    const char *text = NULL;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (strcmp(sql[i][0], to_state) == 0) {
            text = sql[i][1];
        }
    }
    if (!text) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: no state %.64s", to_state);
        return STORE_ERROR;
    }
    char now[32];
    char num[24];
    int64_t changes = 0;
    pg_now(now);
    snprintf(num, sizeof num, "%" PRId64, version);
    const char *args[] = { to_state, now, by, template_name, num, from_state, comment };
    enum store_rc rc =
            pg_exec(st, text, strcmp(to_state, "submitted") == 0 ? 6 : 7, args, &changes);
    if (rc != STORE_OK || changes > 0) {
        return rc == STORE_CONFLICT ? pg_fail_text(st, "version state", "constraint") : rc;
    }
    PGresult *res = NULL;
    const char *qargs[] = { template_name, num };
    rc = pg_query(st, "SELECT 1 FROM versions WHERE template = $1 AND version = $2", 2, qargs,
                  &res);
    if (rc == STORE_OK) {
        rc = PQntuples(res) > 0 ? STORE_CONFLICT : STORE_NOT_FOUND;
    }
    PQclear(res);
    return rc;
}

/* ---------------------------------------------------------------- runs and approvals */

#define PG_RUN_COLUMNS                                                                       \
    "seq, id, COALESCE(template, ''), COALESCE(version, 0), department, principal, status, " \
    "input, source, language, functions, outcome, created, updated"

static int pg_run_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_run r = {
        .seq = pg_int(res, row, 0),
        .id = pg_col(res, row, 1),
        .template_name = pg_col(res, row, 2),
        .version = pg_int(res, row, 3),
        .department = pg_col(res, row, 4),
        .principal = pg_col(res, row, 5),
        .status = pg_col(res, row, 6),
        .input = pg_col(res, row, 7),
        .source = pg_col(res, row, 8),
        .language = pg_col(res, row, 9),
        .functions = pg_col(res, row, 10),
        .outcome = pg_col(res, row, 11),
        .created = pg_col(res, row, 12),
        .updated = pg_col(res, row, 13),
    };
    return ((store_run_fn *)fn)(userdata, &r);
}

static enum store_rc pg_run_create(struct store *s, const struct store_run *r)
{
    char now[32];
    char version[24];
    pg_now(now);
    if (r->created) {
        snprintf(now, sizeof now, "%s", r->created); /* the time the run's clock starts at */
    }
    snprintf(version, sizeof version, "%" PRId64, r->version);
    int adhoc = !r->template_name || !r->template_name[0];
    const char *args[] = { r->id,
                           adhoc ? NULL : r->template_name,
                           adhoc ? NULL : version,
                           r->department,
                           r->principal,
                           r->status,
                           r->input,
                           r->source,
                           r->language,
                           r->functions,
                           now,
                           now };
    return pg_insert(pg_of(s),
                     "INSERT INTO runs (id, template, version, department, principal, status, "
                     "input, source, language, functions, created, updated) VALUES ($1, $2, $3, "
                     "$4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
                     12, args);
}

static enum store_rc pg_run_get(struct store *s, const char *id, store_run_fn *fn, void *userdata)
{
    const char *args[] = { id };
    return pg_walk(pg_of(s), "SELECT " PG_RUN_COLUMNS " FROM runs WHERE id = $1", 1, args, 1,
                   pg_run_each, (void *)fn, userdata);
}

/* In chunks of PG_RUN_CHUNK by seq (libpq holds a whole result: every run ever, with its input
 * and outcome, is what airlockd's start walks), each one a result a callback may nest a call in. */
static enum store_rc pg_run_list(struct store *s, const struct store_run_filter *f,
                                 store_run_fn *fn, void *userdata)
{
    int64_t after_seq = f ? f->after_seq : 0;
    int stopped = 0;
    while (!stopped) {
        char after[24];
        char chunk[24];
        PGresult *res = NULL;
        snprintf(after, sizeof after, "%" PRId64, after_seq);
        snprintf(chunk, sizeof chunk, "%d", PG_RUN_CHUNK);
        const char *args[] = { after, f ? f->template_name : NULL, f ? f->status : NULL,
                               f ? f->principal : NULL, chunk };
        enum store_rc rc = pg_query(pg_of(s),
                                    "SELECT " PG_RUN_COLUMNS " FROM runs WHERE seq > $1::bigint "
                                    "AND ($2::text IS NULL OR template = $2) "
                                    "AND ($3::text IS NULL OR status = $3) "
                                    "AND ($4::text IS NULL OR principal = $4) ORDER BY seq "
                                    "LIMIT $5::bigint",
                                    5, args, &res);
        if (rc != STORE_OK) {
            return rc;
        }
        int rows = PQntuples(res);
        for (int i = 0; i < rows && !stopped; i++) {
            after_seq = pg_int(res, i, 0);
            stopped = pg_run_each(res, i, (void *)fn, userdata) != 0;
        }
        PQclear(res);
        if (rows < PG_RUN_CHUNK) {
            break;
        }
    }
    return STORE_OK;
}

/* STORE_OK when a statement changed a row; else NOT_FOUND or CONFLICT, whichever `exists`
 * (a query naming the row by id) says. */
static enum store_rc pg_changed_or(struct pg_store *st, int64_t changes, const char *exists,
                                   const char *id)
{
    if (changes > 0) {
        return STORE_OK;
    }
    enum store_rc rc = pg_exists(st, exists, id);
    return rc == STORE_OK ? STORE_CONFLICT : rc;
}

static enum store_rc pg_run_set_status(struct store *s, const char *id, const char *from,
                                       const char *status, const char *outcome)
{
    struct pg_store *st = pg_of(s);
    char now[32];
    int64_t changes = 0;
    pg_now(now);
    const char *args[] = { status, outcome, now, id, from };
    enum store_rc rc = pg_exec(st,
                               "UPDATE runs SET status = $1, outcome = COALESCE($2, outcome), "
                               "updated = $3 WHERE id = $4 "
                               "AND status = ANY (string_to_array($5::text, '|'))",
                               5, args, &changes);
    if (rc != STORE_OK) {
        return rc;
    }
    return pg_changed_or(st, changes, "SELECT 1 FROM runs WHERE id = $1", id);
}

static enum store_rc pg_run_set_continuation(struct store *s, const char *id, const char *token)
{
    int64_t changes = 0;
    const char *args[] = { token, id };
    enum store_rc rc =
            pg_exec(pg_of(s), "UPDATE runs SET continuation = $1 WHERE id = $2", 2, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static enum store_rc pg_run_take_continuation(struct store *s, const char *id, char **ret_token)
{
    struct pg_store *st = pg_of(s);
    PGresult *res = NULL;
    const char *args[] = { id };
    char *token = NULL;
    int64_t changes = 0;
    /* FOR UPDATE: a second claimer (another connection) waits for this transaction and then
     * finds the continuation gone */
    enum store_rc rc = pg_query(st,
                                "SELECT continuation FROM runs WHERE id = $1 AND continuation "
                                "IS NOT NULL FOR UPDATE",
                                1, args, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    if (PQntuples(res) == 1) {
        token = strdup(PQgetvalue(res, 0, 0));
        if (!token) {
            snprintf(st->errmsg, sizeof st->errmsg, "out of memory");
            rc = STORE_ERROR;
        }
    } else {
        rc = STORE_NOT_FOUND;
    }
    PQclear(res);
    if (rc == STORE_OK) {
        rc = pg_exec(st,
                     "UPDATE runs SET continuation = NULL WHERE id = $1 AND continuation IS "
                     "NOT NULL",
                     1, args, &changes);
        if (rc == STORE_OK && changes != 1) {
            rc = STORE_NOT_FOUND;
        }
    }
    if (rc == STORE_OK) {
        *ret_token = token;
    } else {
        free(token);
    }
    return rc;
}

#define PG_APPROVAL_COLUMNS                                                                 \
    "id, run, kind, interruption, function, args, status, requested_by, department, "       \
    "COALESCE(template, ''), COALESCE(version, 0), created, decided_by, decided, comment, " \
    "consumed"

static int pg_approval_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_approval a = {
        .id = pg_col(res, row, 0),
        .run = pg_col(res, row, 1),
        .kind = pg_col(res, row, 2),
        .interruption = pg_col(res, row, 3),
        .function = pg_col(res, row, 4),
        .args = pg_col(res, row, 5),
        .status = pg_col(res, row, 6),
        .requested_by = pg_col(res, row, 7),
        .department = pg_col(res, row, 8),
        .template_name = pg_col(res, row, 9),
        .version = pg_int(res, row, 10),
        .created = pg_col(res, row, 11),
        .decided_by = pg_col(res, row, 12),
        .decided = pg_col(res, row, 13),
        .comment = pg_col(res, row, 14),
        .consumed = (int)pg_int(res, row, 15),
    };
    return ((store_approval_fn *)fn)(userdata, &a);
}

static enum store_rc pg_approval_create(struct store *s, const struct store_approval *a)
{
    char now[32];
    char version[24];
    pg_now(now);
    snprintf(version, sizeof version, "%" PRId64, a->version);
    int adhoc = !a->template_name || !a->template_name[0];
    const char *args[] = { a->id,
                           a->run,
                           a->kind,
                           a->interruption,
                           a->function,
                           a->args,
                           a->requested_by,
                           a->department,
                           adhoc ? NULL : a->template_name,
                           adhoc ? NULL : version,
                           now };
    return pg_insert(pg_of(s),
                     "INSERT INTO approvals (id, run, kind, interruption, function, args, status, "
                     "requested_by, department, template, version, created) VALUES ($1, $2, $3, "
                     "$4, $5, $6, 'pending', $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING",
                     11, args);
}

static enum store_rc pg_approval_get(struct store *s, const char *id, store_approval_fn *fn,
                                     void *userdata)
{
    const char *args[] = { id };
    return pg_walk(pg_of(s), "SELECT " PG_APPROVAL_COLUMNS " FROM approvals WHERE id = $1", 1, args,
                   1, pg_approval_each, (void *)fn, userdata);
}

static enum store_rc pg_approval_list(struct store *s, const char *run, const char *status,
                                      store_approval_fn *fn, void *userdata)
{
    const char *args[] = { run, status };
    return pg_walk(pg_of(s),
                   "SELECT " PG_APPROVAL_COLUMNS " FROM approvals WHERE ($1::text IS NULL OR "
                   "run = $1) AND ($2::text IS NULL OR status = $2) ORDER BY seq DESC",
                   2, args, 0, pg_approval_each, (void *)fn, userdata);
}

static enum store_rc pg_approval_decide(struct store *s, const char *id, const char *status,
                                        const char *by, const char *comment)
{
    struct pg_store *st = pg_of(s);
    char now[32];
    int64_t changes = 0;
    pg_now(now);
    const char *args[] = { status, by, now, comment, id };
    enum store_rc rc = pg_exec(st,
                               "UPDATE approvals SET status = $1, decided_by = $2, decided = $3, "
                               "comment = $4 WHERE id = $5 AND status = 'pending'",
                               5, args, &changes);
    if (rc != STORE_OK) {
        return rc;
    }
    return pg_changed_or(st, changes, "SELECT 1 FROM approvals WHERE id = $1", id);
}

static enum store_rc pg_approval_consume(struct store *s, const char *run)
{
    const char *args[] = { run };
    return pg_exec(pg_of(s),
                   "UPDATE approvals SET consumed = 1 WHERE run = $1 "
                   "AND status IN ('approved', 'denied')",
                   1, args, NULL);
}

/* ---------------------------------------------------------------- connectors (0005) */

static enum store_rc pg_connector_create(struct store *s, const struct store_connector *c)
{
    struct pg_store *st = pg_of(s);
    enum store_rc rc = pg_exists(st, "SELECT 1 FROM departments WHERE name = $1", c->department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    char timeout[24];
    pg_now(now);
    snprintf(timeout, sizeof timeout, "%" PRId64, c->timeout_ms);
    const char *args[] = {
        c->name,           c->department,   c->url,       c->signing_secret_sealed,
        c->headers_sealed, c->header_names, c->functions, now,
        c->created_by,     timeout
    };
    return pg_insert(st,
                     "INSERT INTO connectors(name, department, url, signing_secret, headers, "
                     "header_names, functions, created, created_by, timeout_ms) VALUES ($1, $2, "
                     "$3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
                     10, args);
}

static int pg_connector_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_connector c = { pg_col(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2),
                                 pg_col(res, row, 3), pg_col(res, row, 4), pg_col(res, row, 5),
                                 pg_col(res, row, 6), pg_int(res, row, 7), pg_col(res, row, 8),
                                 pg_col(res, row, 9) };
    return ((store_connector_fn *)fn)(userdata, &c);
}

static enum store_rc pg_connector_get(struct store *s, const char *name, store_connector_fn *fn,
                                      void *userdata)
{
    const char *args[] = { name };
    return pg_walk(pg_of(s),
                   "SELECT name, department, url, signing_secret, headers, header_names, "
                   "functions, timeout_ms, created, created_by FROM connectors WHERE name = $1",
                   1, args, 1, pg_connector_each, (void *)fn, userdata);
}

static enum store_rc pg_connector_list(struct store *s, store_connector_fn *fn, void *userdata)
{
    return pg_walk(pg_of(s),
                   "SELECT name, department, url, signing_secret, headers, header_names, "
                   "functions, timeout_ms, created, created_by FROM connectors ORDER BY name",
                   0, NULL, 0, pg_connector_each, (void *)fn, userdata);
}

/* ---------------------------------------------------------------- several nodes (0006) */

/* Times of leases are the database server's (ms since the epoch), one clock for every node. */
#define PG_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

static enum store_rc pg_node_beat(struct store *s, const char *id, int64_t lease_ms)
{
    char now[32];
    char lease[24];
    pg_now(now);
    snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *args[] = { id, lease, now };
    return pg_exec(pg_of(s),
                   "INSERT INTO nodes(id, heartbeat, lease_ms, started) VALUES ($1, " PG_NOW_MS
                   ", $2::bigint, $3) ON CONFLICT (id) DO UPDATE SET heartbeat = "
                   "excluded.heartbeat, lease_ms = excluded.lease_ms",
                   3, args, NULL);
}

static int pg_node_each(const PGresult *res, int row, void *fn, void *userdata)
{
    return ((store_node_fn *)fn)(userdata, pg_col(res, row, 0));
}

static enum store_rc pg_node_expired(struct store *s, store_node_fn *fn, void *userdata)
{
    return pg_walk(pg_of(s),
                   "SELECT id FROM nodes WHERE heartbeat + lease_ms < " PG_NOW_MS " ORDER BY id", 0,
                   NULL, 0, pg_node_each, (void *)fn, userdata);
}

static enum store_rc pg_node_remove(struct store *s, const char *id)
{
    int64_t changes = 0;
    const char *args[] = { id };
    enum store_rc rc = pg_exec(pg_of(s), "DELETE FROM nodes WHERE id = $1", 1, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static enum store_rc pg_run_set_node(struct store *s, const char *id, const char *node)
{
    int64_t changes = 0;
    const char *args[] = { node, id };
    enum store_rc rc =
            pg_exec(pg_of(s), "UPDATE runs SET node = $1 WHERE id = $2", 2, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static enum store_rc pg_run_list_on_node(struct store *s, const char *node, store_run_fn *fn,
                                         void *userdata)
{
    const char *args[] = { node };
    return pg_walk(pg_of(s),
                   /* the cancelled ones from the few execution rows, not from every run the
                    * node ever had cancelled */
                   node ? "SELECT " PG_RUN_COLUMNS " FROM runs WHERE node = $1 AND status = "
                          "'running' UNION ALL SELECT " PG_RUN_COLUMNS " FROM runs WHERE id IN "
                          "(SELECT run FROM executions) AND node = $1 AND status = 'cancelled' "
                          "ORDER BY seq"
                        : "SELECT " PG_RUN_COLUMNS " FROM runs WHERE node IS NULL AND status = "
                          "'running' ORDER BY seq",
                   node ? 1 : 0, args, 0, pg_run_each, (void *)fn, userdata);
}

static enum store_rc pg_call_mark(struct store *s, const struct store_call *c)
{
    char now[32];
    pg_now(now);
    const char *args[] = { c->run,      c->idempotency_key,
                           c->function, c->idempotent ? "1" : "0",
                           now,         c->args_sha256 ? c->args_sha256 : "" };
    /* the same call marked again updates its row; another call under the key updates none */
    return pg_insert(pg_of(s),
                     "INSERT INTO calls_sent(run, idempotency_key, function, idempotent, sent, "
                     "args_sha256) VALUES ($1, $2, $3, $4::integer, $5, $6) ON CONFLICT (run, "
                     "idempotency_key) DO UPDATE SET idempotent = EXCLUDED.idempotent WHERE "
                     "calls_sent.function = EXCLUDED.function AND calls_sent.args_sha256 = "
                     "EXCLUDED.args_sha256",
                     6, args);
}

static int pg_call_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_call c = { pg_col(res, row, 0),      pg_col(res, row, 1), pg_col(res, row, 2),
                            (int)pg_int(res, row, 3), pg_col(res, row, 4), pg_col(res, row, 5) };
    return ((store_call_fn *)fn)(userdata, &c);
}

static enum store_rc pg_call_list(struct store *s, const char *run, store_call_fn *fn,
                                  void *userdata)
{
    const char *args[] = { run };
    return pg_walk(pg_of(s),
                   "SELECT run, idempotency_key, function, idempotent, sent, args_sha256 FROM "
                   "calls_sent WHERE run = $1 ORDER BY sent, idempotency_key",
                   1, args, 0, pg_call_each, (void *)fn, userdata);
}

static enum store_rc pg_call_clear(struct store *s, const char *run)
{
    const char *args[] = { run };
    enum store_rc rc = pg_exec(pg_of(s), "DELETE FROM calls_sent WHERE run = $1", 1, args, NULL);
    if (rc == STORE_OK) {
        rc = pg_exec(pg_of(s), "DELETE FROM executions WHERE run = $1", 1, args, NULL);
    }
    return rc;
}

static enum store_rc pg_execution_put(struct store *s, const struct store_execution *e)
{
    char clock[24];
    char attempt[24];
    snprintf(clock, sizeof clock, "%" PRId64, e->clock_ms);
    snprintf(attempt, sizeof attempt, "%" PRId64, e->attempt);
    const char *args[] = { e->run, e->resume, e->resolutions, clock, attempt };
    return pg_exec(
            pg_of(s),
            "INSERT INTO executions(run, resume, resolutions, clock_ms, attempt) VALUES ($1, "
            "$2, $3, $4::bigint, $5::integer) ON CONFLICT (run) DO UPDATE SET resume = "
            "EXCLUDED.resume, resolutions = EXCLUDED.resolutions, clock_ms = "
            "EXCLUDED.clock_ms, attempt = EXCLUDED.attempt",
            5, args, NULL);
}

static int pg_execution_each(const PGresult *res, int row, void *fn, void *userdata)
{
    struct store_execution e = { pg_col(res, row, 0), pg_col(res, row, 1), pg_col(res, row, 2),
                                 pg_int(res, row, 3), pg_int(res, row, 4) };
    return ((store_execution_fn *)fn)(userdata, &e);
}

static enum store_rc pg_execution_get(struct store *s, const char *run, store_execution_fn *fn,
                                      void *userdata)
{
    const char *args[] = { run };
    return pg_walk(
            pg_of(s),
            "SELECT run, resume, resolutions, clock_ms, attempt FROM executions WHERE run = $1", 1,
            args, 1, pg_execution_each, (void *)fn, userdata);
}

static int pg_run_lock_each(const PGresult *res, int row, void *fn, void *userdata)
{
    (void)res;
    (void)row;
    (void)fn;
    (void)userdata;
    return 0;
}

static enum store_rc pg_run_lock_on_node(struct store *s, const char *id, const char *node,
                                         const char *from)
{
    const char *args[] = { id, node, from };
    /* a takeover's update waits for this lock, and this one for the takeover's: whichever
     * commits first, the other sees what it did */
    enum store_rc rc = pg_walk(pg_of(s),
                               "SELECT 1 FROM runs WHERE id = $1 AND node = $2 AND status = ANY "
                               "(string_to_array($3::text, '|')) FOR UPDATE",
                               3, args, 1, pg_run_lock_each, NULL, NULL);
    return rc == STORE_NOT_FOUND ? STORE_CONFLICT : rc;
}

static enum store_rc pg_run_claim_queued(struct store *s, const char *node, char *ret_id)
{
    struct pg_store *st = pg_of(s);
    PGresult *res = NULL;
    char now[32];
    pg_now(now);
    const char *args[] = { node, now };
    /* SKIP LOCKED: nodes claiming at once each take a different run, none waits for another */
    enum store_rc rc = pg_query(st,
                                "UPDATE runs SET status = 'running', node = $1, updated = $2 "
                                "WHERE seq = (SELECT seq FROM runs WHERE status = 'queued' "
                                "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
                                2, args, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    if (PQntuples(res) == 1) {
        snprintf(ret_id, STORE_NAME_MAX + 1, "%s", PQgetvalue(res, 0, 0));
    } else {
        rc = STORE_NOT_FOUND;
    }
    PQclear(res);
    return rc;
}

static enum store_rc pg_notify(struct store *s, const char *channel, const char *payload)
{
    const char *args[] = { channel, payload };
    return pg_exec(pg_of(s), "SELECT pg_notify($1, $2)", 2, args, NULL);
}

/* ---------------------------------------------------------------- listeners */

#define PG_PARAMS 11

/* The connection parameters of the store (listener NULL) and of a listener. Keywords after
 * dbname override the URL's; those before it are defaults it may change: a server that stops
 * answering over TCP is found dead within about 30 s (keepalives, tcp_user_timeout) instead of
 * holding the store, and every request with it, for hours. A listener's application_name comes
 * after the URL, so that it is always the one it was given (an operator finds it by it). */
static void pg_params(const char *url, const char *listener, const char **keys, const char **values)
{
    static const char *const k[] = { "connect_timeout",  "keepalives_idle",  "keepalives_interval",
                                     "keepalives_count", "tcp_user_timeout", "application_name",
                                     "dbname",           "client_encoding" };
    static const char *const v[] = { "10", "10", "5", "3", "30000", "airlockd", NULL, "UTF8" };
    size_t n = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        keys[n] = k[i];
        values[n++] = i == 6 ? url : v[i];
    }
    if (listener) {
        keys[n] = "application_name";
        values[n++] = listener;
    }
    keys[n] = NULL;
    values[n] = NULL;
}

struct pg_listener {
    struct store_listener base; /* first */
    PGconn *conn;               /* NULL while not connected */
    char *url;                  /* owned; cleansed at free */
    char name[64];              /* its application_name */
    const char *const *channels;
    int wake[2]; /* a pipe: wake writes, a wait or connect reads; both O_NONBLOCK */
    char errmsg[STORE_ERRMSG_MAX];
};

static struct pg_listener *pgl_of(struct store_listener *l)
{
    return (struct pg_listener *)l;
}

static int64_t pgl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum store_rc pgl_fail(struct pg_listener *pl, const char *what, const char *message)
{
    int len = (int)strlen(message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' ')) {
        len--;
    }
    snprintf(pl->errmsg, sizeof pl->errmsg, "postgres: listener: %s%s%.*s", what, len ? ": " : "",
             len, message);
    return STORE_ERROR;
}

static void pgl_drop(struct pg_listener *pl)
{
    PQfinish(pl->conn);
    pl->conn = NULL;
}

/* Empties the wake pipe: each wake ends one wait, not every later one. */
static void pgl_drain(struct pg_listener *pl)
{
    char junk[64];
    while (read(pl->wake[0], junk, sizeof junk) > 0) {
    }
}

/* Polls the connection's socket for `events` and the wake pipe until deadline (monotonic ms).
 * 1: the socket is ready; 0: the deadline passed; -1: woken (the pipe drained) or poll failed. */
static int pgl_poll(struct pg_listener *pl, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd fds[2] = { { pl->wake[0], POLLIN, 0 }, { -1, events, 0 } };
        nfds_t nfds = 1;
        if (pl->conn && PQsocket(pl->conn) >= 0) {
            fds[1].fd = PQsocket(pl->conn);
            nfds = 2;
        }
        int64_t left = deadline - pgl_now_ms();
        if (left < 0) {
            left = 0;
        }
        int n = poll(fds, nfds, (int)(left > 3600000 ? 3600000 : left));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || fds[0].revents) {
            pgl_drain(pl);
            return -1;
        }
        if (n > 0) {
            return 1;
        }
        if (pgl_now_ms() >= deadline) {
            return 0;
        }
    }
}

/* Sends sql and reads its results without blocking past the deadline or a wake. */
static enum store_rc pgl_exec(struct pg_listener *pl, const char *sql, int64_t deadline)
{
    enum store_rc rc = STORE_OK;
    if (!PQsendQuery(pl->conn, sql)) {
        return pgl_fail(pl, "LISTEN", PQerrorMessage(pl->conn));
    }
    while (PQflush(pl->conn) == 1) {
        if (pgl_poll(pl, POLLOUT, deadline) != 1) {
            return pgl_fail(pl, "interrupted", "");
        }
    }
    for (;;) {
        while (PQisBusy(pl->conn)) {
            int ready = pgl_poll(pl, POLLIN, deadline);
            if (ready != 1) {
                return pgl_fail(pl, ready == 0 ? "LISTEN timed out" : "interrupted", "");
            }
            if (!PQconsumeInput(pl->conn)) {
                return pgl_fail(pl, "LISTEN", PQerrorMessage(pl->conn));
            }
        }
        PGresult *res = PQgetResult(pl->conn);
        if (!res) {
            return rc;
        }
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == STORE_OK) {
            rc = pgl_fail(pl, "LISTEN", PQresultErrorMessage(res));
        }
        PQclear(res);
    }
}

static enum store_rc pgl_connect(struct store_listener *l)
{
    struct pg_listener *pl = pgl_of(l);
    const char *keys[PG_PARAMS];
    const char *values[PG_PARAMS];
    char sql[512];
    size_t len = 0;
    enum store_rc rc = STORE_ERROR;
    int64_t deadline = pgl_now_ms() + PG_CONNECT_MS;
    pgl_drop(pl);
    pg_params(pl->url, pl->name, keys, values);
    pl->conn = PQconnectStartParams(keys, values, 1);
    if (!pl->conn) {
        return pgl_fail(pl, "out of memory", "");
    }
    PQsetNoticeProcessor(pl->conn, pg_notice, NULL);
    /* libpq's loop for a connection that never blocks: poll for what PQconnectPoll last
     * asked, starting as if it had asked to write */
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    while (ps != PGRES_POLLING_OK) {
        if (ps == PGRES_POLLING_FAILED || PQstatus(pl->conn) == CONNECTION_BAD) {
            rc = pgl_fail(pl, "cannot connect", PQerrorMessage(pl->conn));
            goto out;
        }
        int ready = pgl_poll(pl, ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (ready != 1) {
            rc = pgl_fail(pl, ready == 0 ? "cannot connect: timed out" : "interrupted", "");
            goto out;
        }
        ps = PQconnectPoll(pl->conn);
    }
    if (PQsetnonblocking(pl->conn, 1) != 0) {
        rc = pgl_fail(pl, "cannot connect", PQerrorMessage(pl->conn));
        goto out;
    }
    for (const char *const *c = pl->channels; *c; c++) {
        char *id = PQescapeIdentifier(pl->conn, *c, strlen(*c));
        if (!id || len + strlen(id) + 10 > sizeof sql) {
            PQfreemem(id);
            rc = pgl_fail(pl, "too many channels", "");
            goto out;
        }
        len += (size_t)snprintf(sql + len, sizeof sql - len, "LISTEN %s;", id);
        PQfreemem(id);
    }
    rc = len ? pgl_exec(pl, sql, deadline) : STORE_OK;
out:
    if (rc != STORE_OK) {
        pgl_drop(pl);
    }
    return rc;
}

/* Hands every notification libpq has read to fn; how many. */
static int pgl_deliver(struct pg_listener *pl, store_notify_fn *fn, void *userdata)
{
    int n = 0;
    PGnotify *note;
    while ((note = PQnotifies(pl->conn)) != NULL) {
        if (fn) {
            fn(userdata, note->relname, note->extra ? note->extra : "");
        }
        PQfreemem(note);
        n++;
    }
    return n;
}

static enum store_rc pgl_wait(struct store_listener *l, int64_t timeout_ms, store_notify_fn *fn,
                              void *userdata)
{
    struct pg_listener *pl = pgl_of(l);
    int64_t deadline = pgl_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!pl->conn) {
        (void)pgl_poll(pl, 0, deadline); /* only the wake pipe */
        return STORE_OK;
    }
    if (pgl_deliver(pl, fn, userdata) > 0) {
        return STORE_OK;
    }
    if (pgl_poll(pl, POLLIN, deadline) != 1) {
        return STORE_OK; /* woken, or nothing came */
    }
    /* a backend that was ended sends its error and closes: the read then fails */
    if (!PQconsumeInput(pl->conn) || PQstatus(pl->conn) != CONNECTION_OK) {
        pgl_fail(pl, "connection lost", PQerrorMessage(pl->conn));
        pgl_drop(pl);
        return STORE_ERROR;
    }
    PGresult *res;
    while (!PQisBusy(pl->conn) && (res = PQgetResult(pl->conn)) != NULL) {
        PQclear(res); /* nothing was asked: an error of the server's, said before it closes */
    }
    pgl_deliver(pl, fn, userdata);
    return STORE_OK;
}

static void pgl_wake(struct store_listener *l)
{
    struct pg_listener *pl = pgl_of(l);
    ssize_t w = write(pl->wake[1], "w", 1); /* a full pipe wakes the waiter already */
    (void)w;
}

static const char *pgl_errmsg(struct store_listener *l)
{
    return pgl_of(l)->errmsg;
}

static void pgl_free(struct store_listener *l)
{
    if (!l) {
        return;
    }
    struct pg_listener *pl = pgl_of(l);
    pgl_drop(pl);
    for (int i = 0; i < 2; i++) {
        if (pl->wake[i] >= 0) {
            close(pl->wake[i]);
        }
    }
    if (pl->url) {
        OPENSSL_cleanse(pl->url, strlen(pl->url));
        free(pl->url);
    }
    free(pl);
}

static const struct store_listener_ops pg_listener_ops = {
    .connect = pgl_connect,
    .wait = pgl_wait,
    .wake = pgl_wake,
    .errmsg = pgl_errmsg,
    .free = pgl_free,
};

static enum store_rc pg_listener_new(struct store *s, const char *name, const char *const *channels,
                                     struct store_listener **ret)
{
    struct pg_store *st = pg_of(s);
    struct pg_listener *pl = calloc(1, sizeof *pl);
    if (!pl) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: out of memory");
        return STORE_ERROR;
    }
    pl->base.ops = &pg_listener_ops;
    pl->wake[0] = pl->wake[1] = -1;
    pl->channels = channels;
    snprintf(pl->name, sizeof pl->name, "%s", name);
    snprintf(pl->errmsg, sizeof pl->errmsg, "postgres: listener: not connected");
    pl->url = strdup(st->url);
    if (!pl->url || pipe2(pl->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: cannot make a listener: %s",
                 pl->url ? strerror(errno) : "out of memory");
        pgl_free(&pl->base);
        return STORE_ERROR;
    }
    *ret = &pl->base;
    return STORE_OK;
}

static enum store_rc pg_open_reader(struct store *s, struct store **ret);

static const struct store_ops pg_ops = {
    .version = STORE_OPS_VERSION,
    .name = "postgres",
    .close = pg_close,
    .errmsg = pg_errmsg,
    .ping = pg_ping,
    .tx_begin = pg_tx_begin,
    .tx_commit = pg_tx_commit,
    .tx_rollback = pg_tx_rollback,
    .principal_count = pg_principal_count,
    .principal_create = pg_principal_create,
    .principal_get = pg_principal_get,
    .principal_list = pg_principal_list,
    .key_add = pg_key_add,
    .key_revoke = pg_key_revoke,
    .key_lookup = pg_key_lookup,
    .key_list = pg_key_list,
    .role_grant = pg_role_grant,
    .role_revoke = pg_role_revoke,
    .role_list = pg_role_list,
    .department_create = pg_department_create,
    .department_get = pg_department_get,
    .department_list = pg_department_list,
    .department_set_policy = pg_department_set_policy,
    .audit_append = pg_audit_append,
    .audit_list = pg_audit_list,
    .audit_set_key = pg_audit_set_key,
    .audit_search = pg_audit_search,
    .audit_checkpoint = pg_audit_checkpoint,
    .template_create = pg_template_create,
    .template_get = pg_template_get,
    .template_list = pg_template_list,
    .version_create = pg_version_create,
    .version_get = pg_version_get,
    .version_list = pg_version_list,
    .version_set_state = pg_version_set_state,
    .run_create = pg_run_create,
    .run_get = pg_run_get,
    .run_list = pg_run_list,
    .run_set_status = pg_run_set_status,
    .run_set_continuation = pg_run_set_continuation,
    .run_take_continuation = pg_run_take_continuation,
    .approval_create = pg_approval_create,
    .approval_get = pg_approval_get,
    .approval_list = pg_approval_list,
    .approval_decide = pg_approval_decide,
    .approval_consume = pg_approval_consume,
    .connector_create = pg_connector_create,
    .connector_get = pg_connector_get,
    .connector_list = pg_connector_list,
    .audit_head = pg_audit_last_seq,
    .node_beat = pg_node_beat,
    .node_expired = pg_node_expired,
    .node_remove = pg_node_remove,
    .run_set_node = pg_run_set_node,
    .run_list_on_node = pg_run_list_on_node,
    .call_mark = pg_call_mark,
    .call_list = pg_call_list,
    .call_clear = pg_call_clear,
    .run_claim_queued = pg_run_claim_queued,
    .execution_put = pg_execution_put,
    .execution_get = pg_execution_get,
    .notify = pg_notify,
    .listener_new = pg_listener_new,
    .run_lock_on_node = pg_run_lock_on_node,
    /* every query is a round trip of its own: a transaction around reads would add two */
    .read_begin = NULL,
    .read_end = NULL,
    .commit_failure_unknown = 0,
    .open_reader = pg_open_reader,
};

/* ---------------------------------------------------------------- opening */

/* Runs a text of statements without parameters (a migration's, the session's). */
static enum store_rc pg_exec_script(struct pg_store *st, const char *what, const char *sql)
{
    PGresult *res = PQexec(st->conn, sql);
    ExecStatusType status = PQresultStatus(res);
    enum store_rc rc = STORE_OK;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        rc = pg_fail_text(st, what, res ? PQresultErrorMessage(res) : PQerrorMessage(st->conn));
    }
    PQclear(res);
    return rc;
}

/* Records written before 0002_audit_chain have no prev, hash or line: they are chained once, in
 * seq order, when such a database is first opened (they come before every chained record). The
 * caller holds the migration transaction. */
static enum store_rc pg_audit_chain_legacy(struct pg_store *st)
{
    char prev[AUDIT_HASH_HEX_LEN + 1];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    char seq[24];
    struct buf line;
    struct al_error err;
    PGresult *res = NULL;
    buf_init(&line, PG_LINE_MAX);
    memset(&err, 0, sizeof err);
    memset(prev, '0', AUDIT_HASH_HEX_LEN);
    prev[AUDIT_HASH_HEX_LEN] = '\0';
    enum store_rc rc = pg_query(st,
                                "SELECT seq, time, actor, action, subject, department, details "
                                "FROM audit WHERE line IS NULL ORDER BY seq",
                                0, NULL, &res);
    if (rc != STORE_OK) {
        goto out;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        struct audit_record rec = { (uint64_t)pg_int(res, i, 0),
                                    pg_col(res, i, 1),
                                    pg_col(res, i, 2),
                                    pg_col(res, i, 3),
                                    pg_col(res, i, 4) ? pg_col(res, i, 4) : "",
                                    pg_col(res, i, 5),
                                    pg_col(res, i, 6),
                                    prev };
        buf_reset(&line);
        if (audit_record_write(&rec, &line, hash, &err) != AL_OK || buf_append_byte(&line, 0)) {
            snprintf(st->errmsg, sizeof st->errmsg, "audit: cannot chain seq %" PRIu64 ": %.150s",
                     rec.seq, err.message);
            rc = STORE_ERROR;
            goto out;
        }
        snprintf(seq, sizeof seq, "%" PRIu64, rec.seq);
        const char *args[] = { prev, hash, line.data, seq };
        rc = pg_exec(st, "UPDATE audit SET prev = $1, hash = $2, line = $3 WHERE seq = $4", 4, args,
                     NULL);
        if (rc != STORE_OK) {
            goto out;
        }
        memcpy(prev, hash, sizeof prev);
    }
out:
    PQclear(res);
    buf_done(&line);
    return rc;
}

/* Brings the schema to the last migration, in one transaction under PG_MIGRATE_LOCK. */
static enum store_rc pg_migrate(struct pg_store *st)
{
    PGresult *res = NULL;
    int version = 0;
    char num[16];
    enum store_rc rc = pg_tx_begin(&st->base);
    if (rc == STORE_OK) {
        rc = pg_exec_script(st, "migration lock",
                            "SELECT pg_advisory_xact_lock(" PG_MIGRATE_LOCK "); "
                            "CREATE TABLE IF NOT EXISTS airlock_schema (version INTEGER NOT "
                            "NULL)");
    }
    if (rc == STORE_OK) {
        rc = pg_query(st, "SELECT max(version) FROM airlock_schema", 0, NULL, &res);
    }
    if (rc != STORE_OK) {
        goto out;
    }
    version = (int)pg_int(res, 0, 0);
    if (version > postgres_migrations_count) {
        snprintf(st->errmsg, sizeof st->errmsg,
                 "the database has schema version %d, newer than this airlockd's %d: use a "
                 "newer airlockd",
                 version, postgres_migrations_count);
        rc = STORE_ERROR;
        goto out;
    }
    for (int i = version; i < postgres_migrations_count; i++) {
        char what[96];
        snprintf(what, sizeof what, "migration %s", postgres_migrations[i].name);
        rc = pg_exec_script(st, what, postgres_migrations[i].sql);
        if (rc != STORE_OK) {
            goto out;
        }
    }
    if (version == 1) {
        rc = pg_audit_chain_legacy(st);
    }
    snprintf(num, sizeof num, "%d", postgres_migrations_count);
    const char *args[] = { num };
    if (rc == STORE_OK && version < postgres_migrations_count) {
        rc = pg_exec(st, "DELETE FROM airlock_schema", 0, NULL, NULL);
        if (rc == STORE_OK) {
            rc = pg_exec(st, "INSERT INTO airlock_schema (version) VALUES ($1)", 1, args, NULL);
        }
    }
    if (rc == STORE_OK) {
        rc = pg_tx_commit(&st->base);
    }
out:
    PQclear(res);
    if (rc != STORE_OK) {
        pg_tx_rollback(&st->base);
    }
    return rc;
}

enum store_rc store_postgres_open(const char *url, struct store **ret_store, char *errmsg)
{
    enum store_rc rc = STORE_ERROR;
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        return STORE_ERROR;
    }
    st->base.ops = &pg_ops;
    const char *keys[PG_PARAMS];
    const char *values[PG_PARAMS];
    pg_params(url, NULL, keys, values);
    st->url = strdup(url);
    st->conn = st->url ? PQconnectdbParams(keys, values, 1) : NULL;
    if (!st->conn) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: out of memory");
        goto out;
    }
    PQsetNoticeProcessor(st->conn, pg_notice, NULL);
    if (PQstatus(st->conn) != CONNECTION_OK) {
        pg_fail(st, "cannot connect");
        goto out;
    }
    if (pg_session(st) != STORE_OK || pg_migrate(st) != STORE_OK) {
        goto out;
    }
    rc = STORE_OK;
out:
    if (rc != STORE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "%s", st->errmsg);
        pg_close(&st->base);
        return rc;
    }
    *ret_store = &st->base;
    return STORE_OK;
}

/* A reader: a session of its own on the same database, read-only by default (a write through
 * it fails), with the writer's audit key for the checkpoints it signs. */
static enum store_rc pg_open_reader(struct store *s, struct store **ret)
{
    struct pg_store *w = pg_of(s);
    const char *keys[PG_PARAMS];
    const char *values[PG_PARAMS];
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(w->errmsg, sizeof w->errmsg, "postgres: out of memory");
        return STORE_ERROR;
    }
    st->base.ops = &pg_ops;
    st->reader = 1;
    st->url = strdup(w->url);
    pg_params(w->url, "airlockd-reader", keys, values);
    st->conn = st->url ? PQconnectdbParams(keys, values, 1) : NULL;
    enum store_rc rc = STORE_ERROR;
    if (!st->conn) {
        snprintf(st->errmsg, sizeof st->errmsg, "postgres: out of memory");
    } else if (PQsetNoticeProcessor(st->conn, pg_notice, NULL),
               PQstatus(st->conn) != CONNECTION_OK) {
        pg_fail(st, "cannot connect a reader");
    } else if (pg_session(st) == STORE_OK) {
        rc = w->audit_key ? pg_audit_set_key(&st->base, w->audit_key) : STORE_OK;
    }
    if (rc != STORE_OK) {
        snprintf(w->errmsg, sizeof w->errmsg, "%s", st->errmsg);
        pg_close(&st->base);
        return rc;
    }
    *ret = &st->base;
    return STORE_OK;
}
