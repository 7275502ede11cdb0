/*
 * sqlite.c - the SQLite backend of store.h. One connection, WAL mode, synchronous=FULL so a
 * committed change (and its audit record) survives a crash. Opening migrates the database to
 * the embedded migrations' last number, kept in PRAGMA user_version, inside one transaction;
 * a database from a newer airlockd is refused rather than guessed at. Prepared statements are
 * kept per connection, keyed by their SQL text (compiling SQL was a measured 6% of airlockd's CPU
 * on governed runs); each operation still stands alone: a statement it takes is reset and its
 * bindings cleared before the operation returns, so no read stays open between calls. This file
 * never logs: errors go to errmsg for the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "migrations.h"
#include "store.h"

#define SQLITE_CHECKPOINT_EVERY 1000 /* records */
#define SQLITE_LINE_MAX         ((size_t)1 << 20)
#define SQLITE_STMT_CACHE       96 /* more than the distinct statements of this file */

/* A prepared statement kept for the next call with the same SQL; sql is the caller's pointer
 * (a literal), checked against the statement's own text before reuse. */
struct sqlite_cached {
    const char *sql;
    sqlite3_stmt *stmt;
    int busy; /* taken by an operation still running (a callback may nest another one) */
};

struct sqlite_store {
    struct store base; /* first: a struct store * is a struct sqlite_store * */
    sqlite3 *db;
    struct sqlite_cached cache[SQLITE_STMT_CACHE];
    int cached;
    EVP_PKEY *audit_key; /* owned reference; NULL: no checkpoints */
    int depth;           /* transactions open: 1 for BEGIN, one more per savepoint inside it */
    int reading;         /* read_begin's transaction is open */
    /* The audit log's last record as this connection appended it, so that an append reads
     * nothing back; head_known is cleared by every rollback, and a record another connection
     * appended meanwhile makes the insert conflict, and the head is read again. */
    int head_known;
    int64_t head_seq;
    char head_hash[AUDIT_HASH_HEX_LEN + 1];
    char errmsg[STORE_ERRMSG_MAX];
};

static struct sqlite_store *sqlite_of(struct store *s)
{
    return (struct sqlite_store *)s;
}

static enum store_rc sqlite_fail(struct sqlite_store *st, const char *what)
{
    st->head_known = 0; /* an error may have rolled the transaction back */
    snprintf(st->errmsg, sizeof st->errmsg, "sqlite: %s: %s", what, sqlite3_errmsg(st->db));
    return STORE_ERROR;
}

static void sqlite_now(char out[32])
{
    struct timespec ts;
    struct tm tm;
    char date[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%.20s.%03dZ", date, (int)(ts.tv_nsec / 1000000));
}

/* The cache slot of sql's pointer, or NULL. */
static struct sqlite_cached *sqlite_cache_find(struct sqlite_store *st, const char *sql)
{
    for (int i = 0; i < st->cached; i++) {
        if (st->cache[i].sql == sql) {
            return &st->cache[i];
        }
    }
    return NULL;
}

/* Ends an operation's use of stmt: a cached one is reset for the next call, any other
 * finalized. NULL is ignored. */
static void sqlite_release(struct sqlite_store *st, sqlite3_stmt *stmt)
{
    if (!stmt) {
        return;
    }
    int failed;
    for (int i = 0; i < st->cached; i++) {
        if (st->cache[i].stmt == stmt) {
            failed = sqlite3_reset(stmt) != SQLITE_OK;
            sqlite3_clear_bindings(stmt);
            st->cache[i].busy = 0;
            goto out;
        }
    }
    failed = sqlite3_finalize(stmt) != SQLITE_OK;
out:
    if (failed) {
        st->head_known = 0; /* any failed statement may have ended the transaction */
    }
}

/* Ends read_begin's transaction. A read still stepping (a write from a walk's callback) keeps
 * its snapshot past the COMMIT: that write then runs on it, and fails if another connection
 * has committed since, so nothing writes from inside a walk between read_begin and read_end.
 * A COMMIT that fails leaves reading set: read_end tries again. */
static enum store_rc sqlite_read_leave(struct sqlite_store *st)
{
    if (!st->reading) {
        return STORE_OK;
    }
    if (!sqlite3_get_autocommit(st->db) &&
        sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        return sqlite_fail(st, "end of the read transaction");
    }
    st->reading = 0;
    return STORE_OK;
}

/* Prepares sql (or takes its cached statement) and binds the NULL-terminated list of text
 * arguments (a NULL member binds NULL only when given through nargs). The statement goes back
 * with sqlite_release. */
static enum store_rc sqlite_prepare(struct sqlite_store *st, const char *sql, int nargs,
                                    const char *const *args, sqlite3_stmt **ret_stmt)
{
    sqlite3_stmt *stmt = NULL;
    struct sqlite_cached *c = sqlite_cache_find(st, sql);
    if (c && !c->busy && strcmp(sqlite3_sql(c->stmt), sql) != 0) {
        /* the same pointer with other text: a buffer, not a literal; its slot is retaken */
        sqlite3_finalize(c->stmt);
        *c = st->cache[--st->cached];
        c = NULL;
    }
    if (c && !c->busy) {
        c->busy = 1;
        stmt = c->stmt;
    } else {
        /* a nested use of a busy statement gets one of its own, finalized after */
        int keep = !c && st->cached < SQLITE_STMT_CACHE;
        if (sqlite3_prepare_v3(st->db, sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, &stmt,
                               NULL) != SQLITE_OK) {
            sqlite3_finalize(stmt);
            return sqlite_fail(st, "prepare");
        }
        if (keep) {
            st->cache[st->cached++] = (struct sqlite_cached){ sql, stmt, 1 };
        }
    }
    /* a write, or a transaction of its own, starts from the newest state and commits as it
     * would outside read_begin's snapshot */
    if (st->reading && (!sqlite3_stmt_readonly(stmt) || strncmp(sql, "BEGIN", 5) == 0 ||
                        strncmp(sql, "SAVEPOINT", 9) == 0 || strncmp(sql, "PRAGMA", 6) == 0)) {
        (void)sqlite_read_leave(st);
    }
    for (int i = 0; i < nargs; i++) {
        int rc = args[i] ? sqlite3_bind_text(stmt, i + 1, args[i], -1, SQLITE_TRANSIENT)
                         : sqlite3_bind_null(stmt, i + 1);
        if (rc != SQLITE_OK) {
            enum store_rc ret = sqlite_fail(st, "bind");
            sqlite_release(st, stmt);
            return ret;
        }
    }
    *ret_stmt = stmt;
    return STORE_OK;
}

/* Runs a statement that returns no rows; a constraint violation is a CONFLICT. */
static enum store_rc sqlite_exec_args(struct sqlite_store *st, const char *sql, int nargs,
                                      const char *const *args, int *ret_changes)
{
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st, sql, nargs, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE) {
        rc = STORE_OK;
        if (ret_changes) {
            *ret_changes = sqlite3_changes(st->db);
        }
    } else if ((sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT) {
        rc = STORE_CONFLICT;
    } else {
        rc = sqlite_fail(st, "step");
    }
    sqlite_release(st, stmt);
    return rc;
}

static const char *sqlite_col(sqlite3_stmt *stmt, int i)
{
    return (const char *)sqlite3_column_text(stmt, i);
}

static void sqlite_close(struct store *s)
{
    if (!s) {
        return;
    }
    struct sqlite_store *st = sqlite_of(s);
    for (int i = 0; i < st->cached; i++) {
        sqlite3_finalize(st->cache[i].stmt);
    }
    sqlite3_close_v2(st->db);
    EVP_PKEY_free(st->audit_key);
    free(st);
}

static const char *sqlite_errmsg(struct store *s)
{
    return sqlite_of(s)->errmsg;
}

static enum store_rc sqlite_principal_count(struct store *s, int64_t *ret_count);

static enum store_rc sqlite_ping(struct store *s)
{
    /* Reads a table, not just the connection: a database file gone bad answers an error. */
    int64_t n = 0;
    return sqlite_principal_count(s, &n);
}

/* A transaction, or inside one a savepoint (txN for depth N), so that a caller's transaction
 * nests inside the writer's batch and rolls back alone. */
static enum store_rc sqlite_tx_begin(struct store *s)
{
    struct sqlite_store *st = sqlite_of(s);
    char sql[32];
    if (st->depth == 0 && !sqlite3_get_autocommit(st->db)) {
        (void)sqlite_read_leave(
                st); /* read_begin's snapshot ends: a write starts from the newest */
    }
    if (st->depth == 0) {
        snprintf(sql, sizeof sql, "BEGIN IMMEDIATE");
    } else {
        snprintf(sql, sizeof sql, "SAVEPOINT tx%d", st->depth);
    }
    enum store_rc rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK
                               ? STORE_OK
                               : sqlite_fail(st, "begin");
    if (rc == STORE_OK) {
        st->depth++;
    }
    return rc;
}

/* A COMMIT that fails (SQLITE_BUSY, an I/O error) may leave the transaction open: depth then
 * stays, and the caller's tx_rollback ends it. */
static enum store_rc sqlite_tx_commit(struct store *s)
{
    struct sqlite_store *st = sqlite_of(s);
    char sql[32];
    if (st->depth == 0) {
        snprintf(st->errmsg, sizeof st->errmsg, "sqlite: commit outside a transaction");
        return STORE_ERROR;
    }
    if (st->depth == 1) {
        snprintf(sql, sizeof sql, "COMMIT");
    } else {
        snprintf(sql, sizeof sql, "RELEASE tx%d", st->depth - 1);
    }
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        enum store_rc rc = sqlite_fail(st, st->depth == 1 ? "commit" : "release");
        if (st->depth == 1 && sqlite3_get_autocommit(st->db)) {
            st->depth = 0; /* rolled back by SQLite itself */
        }
        return rc;
    }
    st->depth--;
    return STORE_OK;
}

static void sqlite_tx_rollback(struct store *s)
{
    struct sqlite_store *st = sqlite_of(s);
    char sql[64];
    st->reading = 0;
    st->head_known = 0;
    if (st->depth > 1) {
        snprintf(sql, sizeof sql, "ROLLBACK TO tx%d; RELEASE tx%d", st->depth - 1, st->depth - 1);
        sqlite3_exec(st->db, sql, NULL, NULL, NULL);
        st->depth--;
        return;
    }
    if (!sqlite3_get_autocommit(st->db)) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    st->depth = 0;
}

/* One snapshot for the reads that follow, until read_end: one lock of the database and of
 * the WAL instead of one per statement. */
static enum store_rc sqlite_read_begin(struct store *s)
{
    struct sqlite_store *st = sqlite_of(s);
    if (st->reading || !sqlite3_get_autocommit(st->db)) {
        return STORE_OK; /* inside a transaction already: its reads are one snapshot */
    }
    if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        return sqlite_fail(st, "begin of a read transaction");
    }
    st->reading = 1;
    return STORE_OK;
}

static enum store_rc sqlite_read_end(struct store *s)
{
    return sqlite_read_leave(sqlite_of(s));
}

static enum store_rc sqlite_principal_count(struct store *s, int64_t *ret_count)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st, "SELECT count(*) FROM principals", 0, NULL, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        *ret_count = sqlite3_column_int64(stmt, 0);
    } else {
        rc = sqlite_fail(st, "count");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_principal_create(struct store *s, const char *name, const char *kind)
{
    char now[32];
    sqlite_now(now);
    const char *args[] = { name, kind, now };
    return sqlite_exec_args(sqlite_of(s),
                            "INSERT INTO principals(name, kind, created) VALUES (?, ?, ?)", 3, args,
                            NULL);
}

static enum store_rc sqlite_principal_walk(struct sqlite_store *st, const char *sql,
                                           const char *name, store_principal_fn *fn, void *userdata)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { name };
    enum store_rc rc = sqlite_prepare(st, sql, name ? 1 : 0, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int seen = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        seen = 1;
        struct store_principal p = { sqlite_col(stmt, 0), sqlite_col(stmt, 1),
                                     sqlite_col(stmt, 2) };
        if (fn(userdata, &p) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "principals");
    } else if (name && !seen) {
        rc = STORE_NOT_FOUND;
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_principal_get(struct store *s, const char *name, store_principal_fn *fn,
                                          void *userdata)
{
    return sqlite_principal_walk(sqlite_of(s),
                                 "SELECT name, kind, created FROM principals WHERE name = ?", name,
                                 fn, userdata);
}

static enum store_rc sqlite_principal_list(struct store *s, store_principal_fn *fn, void *userdata)
{
    return sqlite_principal_walk(sqlite_of(s),
                                 "SELECT name, kind, created FROM principals ORDER BY name", NULL,
                                 fn, userdata);
}

static enum store_rc sqlite_principal_exists(struct sqlite_store *st, const char *name)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { name };
    enum store_rc rc =
            sqlite_prepare(st, "SELECT 1 FROM principals WHERE name = ?", 1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE) {
        rc = STORE_NOT_FOUND;
    } else if (step != SQLITE_ROW) {
        rc = sqlite_fail(st, "principal");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_key_add(struct store *s, const char *principal, const char *prefix,
                                    const unsigned char hash[STORE_HASH_LEN])
{
    struct sqlite_store *st = sqlite_of(s);
    enum store_rc rc = sqlite_principal_exists(st, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sqlite_now(now);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { prefix, principal, NULL, now };
    rc = sqlite_prepare(
            st, "INSERT INTO api_keys(prefix, principal, hash, created) VALUES (?, ?, ?, ?)", 4,
            args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_bind_blob(stmt, 3, hash, STORE_HASH_LEN, SQLITE_TRANSIENT) != SQLITE_OK) {
        rc = sqlite_fail(st, "bind");
    } else if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = (sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT
                     ? STORE_CONFLICT
                     : sqlite_fail(st, "key");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_key_revoke(struct store *s, const char *principal, const char *prefix)
{
    char now[32];
    sqlite_now(now);
    const char *args[] = { now, prefix, principal };
    int changes = 0;
    enum store_rc rc = sqlite_exec_args(sqlite_of(s),
                                        "UPDATE api_keys SET revoked = ? WHERE prefix = ? AND "
                                        "principal = ? AND revoked IS NULL",
                                        3, args, &changes);
    if (rc == STORE_OK && changes == 0) {
        rc = STORE_NOT_FOUND;
    }
    return rc;
}

static enum store_rc sqlite_key_lookup(struct store *s, const char *prefix, char *ret_principal,
                                       unsigned char ret_hash[STORE_HASH_LEN])
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { prefix };
    enum store_rc rc = sqlite_prepare(
            st, "SELECT principal, hash FROM api_keys WHERE prefix = ? AND revoked IS NULL", 1,
            args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW) {
        const char *name = sqlite_col(stmt, 0);
        const void *hash = sqlite3_column_blob(stmt, 1);
        if (!name || !hash || strlen(name) > STORE_NAME_MAX ||
            sqlite3_column_bytes(stmt, 1) != STORE_HASH_LEN) {
            rc = STORE_NOT_FOUND;
        } else {
            memcpy(ret_principal, name, strlen(name) + 1);
            memcpy(ret_hash, hash, STORE_HASH_LEN);
        }
    } else if (step == SQLITE_DONE) {
        rc = STORE_NOT_FOUND;
    } else {
        rc = sqlite_fail(st, "key");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_key_list(struct store *s, const char *principal, store_key_fn *fn,
                                     void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { principal };
    enum store_rc rc = sqlite_prepare(
            st,
            "SELECT prefix, created, revoked FROM api_keys WHERE principal = ? ORDER BY created", 1,
            args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct store_key k = { sqlite_col(stmt, 0), sqlite_col(stmt, 1), sqlite_col(stmt, 2) };
        if (fn(userdata, &k) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "keys");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_role_grant(struct store *s, const char *principal, const char *role,
                                       const char *department)
{
    struct sqlite_store *st = sqlite_of(s);
    enum store_rc rc = sqlite_principal_exists(st, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sqlite_now(now);
    const char *args[] = { principal, role, department, now };
    return sqlite_exec_args(
            st, "INSERT INTO role_grants(principal, role, department, created) VALUES (?, ?, ?, ?)",
            4, args, NULL);
}

static enum store_rc sqlite_role_revoke(struct store *s, const char *principal, const char *role,
                                        const char *department)
{
    const char *args[] = { principal, role, department };
    int changes = 0;
    enum store_rc rc = sqlite_exec_args(
            sqlite_of(s),
            "DELETE FROM role_grants WHERE principal = ? AND role = ? AND department = ?", 3, args,
            &changes);
    if (rc == STORE_OK && changes == 0) {
        rc = STORE_NOT_FOUND;
    }
    return rc;
}

static enum store_rc sqlite_role_list(struct store *s, const char *principal, store_grant_fn *fn,
                                      void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { principal };
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT role, department FROM role_grants WHERE principal = "
                                      "? ORDER BY department, role",
                                      1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct store_grant g = { sqlite_col(stmt, 0), sqlite_col(stmt, 1) };
        if (fn(userdata, &g) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "roles");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_department_create(struct store *s, const char *name)
{
    char now[32];
    sqlite_now(now);
    const char *args[] = { name, now };
    return sqlite_exec_args(sqlite_of(s), "INSERT INTO departments(name, created) VALUES (?, ?)", 2,
                            args, NULL);
}

static enum store_rc sqlite_department_walk(struct sqlite_store *st, const char *name,
                                            store_department_fn *fn, void *userdata)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { name };
    enum store_rc rc = sqlite_prepare(
            st,
            name ? "SELECT name, autonomy, allow_adhoc, created FROM departments WHERE name = ?"
                 : "SELECT name, autonomy, allow_adhoc, created FROM departments ORDER BY name",
            name ? 1 : 0, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int seen = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        seen = 1;
        struct store_department d = { sqlite_col(stmt, 0), sqlite_col(stmt, 1),
                                      sqlite3_column_int(stmt, 2), sqlite_col(stmt, 3) };
        if (fn(userdata, &d) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "departments");
    } else if (name && !seen) {
        rc = STORE_NOT_FOUND;
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_department_get(struct store *s, const char *name,
                                           store_department_fn *fn, void *userdata)
{
    return sqlite_department_walk(sqlite_of(s), name, fn, userdata);
}

static enum store_rc sqlite_department_list(struct store *s, store_department_fn *fn,
                                            void *userdata)
{
    return sqlite_department_walk(sqlite_of(s), NULL, fn, userdata);
}

static enum store_rc sqlite_department_set_policy(struct store *s, const char *name,
                                                  const char *autonomy, int allow_adhoc)
{
    const char *args[] = { autonomy, allow_adhoc ? "1" : "0", name };
    int changes = 0;
    enum store_rc rc = sqlite_exec_args(
            sqlite_of(s), "UPDATE departments SET autonomy = ?, allow_adhoc = ? WHERE name = ?", 3,
            args, &changes);
    if (rc == STORE_OK && changes == 0) {
        rc = STORE_NOT_FOUND;
    }
    return rc;
}

/* The last record's seq and hash (0 and 64 '0' for an empty log); a record stored without a
 * hash (never written by this code) chains as if its hash were "". */
static enum store_rc sqlite_audit_head(struct sqlite_store *st, int64_t *ret_seq,
                                       char ret_hash[AUDIT_HASH_HEX_LEN + 1], int *ret_checkpoint)
{
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(
            st, "SELECT seq, hash, action, details FROM audit ORDER BY seq DESC LIMIT 1", 0, NULL,
            &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    *ret_seq = 0;
    memset(ret_hash, '0', AUDIT_HASH_HEX_LEN);
    ret_hash[AUDIT_HASH_HEX_LEN] = '\0';
    if (ret_checkpoint) {
        *ret_checkpoint = 0;
    }
    if (step == SQLITE_ROW) {
        const char *hash = sqlite_col(stmt, 1);
        *ret_seq = sqlite3_column_int64(stmt, 0);
        snprintf(ret_hash, AUDIT_HASH_HEX_LEN + 1, "%s", hash ? hash : "");
        if (ret_checkpoint && sqlite_col(stmt, 2) && sqlite_col(stmt, 3) &&
            strcmp(sqlite_col(stmt, 2), AUDIT_CHECKPOINT_ACTION) == 0) {
            /* details written by audit_checkpoint_details: {"hash":..,"public_key":..,"seq":N */
            char want[48];
            snprintf(want, sizeof want, "\"seq\":%" PRId64 ",", *ret_seq - 1);
            *ret_checkpoint = strstr(sqlite_col(stmt, 3), want) != NULL;
        }
    } else if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "audit head");
    }
    sqlite_release(st, stmt);
    return rc;
}

/* Builds and inserts the next record; the caller holds a savepoint. */
static enum store_rc sqlite_audit_insert(struct sqlite_store *st, const char *actor,
                                         const char *action, const char *subject,
                                         const char *department, const char *details_json,
                                         int64_t *ret_seq, char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    char now[32];
    char prev[AUDIT_HASH_HEX_LEN + 1];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t last = 0;
    struct buf line;
    struct al_error err;
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = STORE_OK;
    int cached = st->head_known;

    buf_init(&line, SQLITE_LINE_MAX);
    memset(&err, 0, sizeof err);
again:
    if (cached) {
        last = st->head_seq;
        memcpy(prev, st->head_hash, sizeof prev);
    } else {
        rc = sqlite_audit_head(st, &last, prev, NULL);
    }
    st->head_known = 0; /* until this insert is in */
    if (rc != STORE_OK) {
        goto out;
    }
    sqlite_now(now);
    struct audit_record rec = { (uint64_t)last + 1,     now,        actor,        action,
                                subject ? subject : "", department, details_json, prev };
    buf_reset(&line);
    if (audit_record_write(&rec, &line, hash, &err) != AL_OK || buf_append_byte(&line, 0)) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit record: %.200s",
                 err.message[0] ? err.message : "too large");
        rc = STORE_ERROR;
        goto out;
    }
    const char *args[] = { now,          actor, action, subject,  department,
                           details_json, prev,  hash,   line.data };
    rc = sqlite_prepare(st,
                        "INSERT INTO audit(seq, time, actor, action, subject, department, "
                        "details, prev, hash, line) VALUES (?10, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                        "?9)",
                        9, args, &stmt);
    if (rc != STORE_OK) {
        goto out;
    }
    sqlite3_bind_int64(stmt, 10, last + 1);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        int conflict = (sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT;
        rc = sqlite_fail(st, "audit");
        if (cached && conflict) {
            /* appended to by another connection since: chain to its last record */
            sqlite_release(st, stmt);
            stmt = NULL;
            cached = 0;
            rc = STORE_OK;
            goto again;
        }
        goto out;
    }
    *ret_seq = last + 1;
    memcpy(ret_hash, hash, sizeof hash);
    st->head_known = 1;
    st->head_seq = last + 1;
    memcpy(st->head_hash, hash, sizeof hash);
out:
    sqlite_release(st, stmt);
    buf_done(&line);
    return rc;
}

/* A checkpoint record of (seq, hash), signed now. */
static enum store_rc sqlite_audit_sign(struct sqlite_store *st, int64_t seq, const char *hash,
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
    sqlite_now(ret->time);
    if (audit_public_key_hex(st->audit_key, ret->public_key, &err) != AL_OK ||
        audit_checkpoint_sign(st->audit_key, (uint64_t)seq, hash, ret->signature, &err) != AL_OK) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit checkpoint: %.200s", err.message);
        return STORE_ERROR;
    }
    return STORE_OK;
}

static enum store_rc sqlite_audit_append_checkpoint(struct sqlite_store *st, int64_t seq,
                                                    const char *hash, struct store_checkpoint *ret)
{
    char cp_hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t cp_seq = 0;
    struct buf details;
    buf_init(&details, 1024);
    enum store_rc rc = sqlite_audit_sign(st, seq, hash, ret);
    if (rc == STORE_OK && audit_checkpoint_details(&details, (uint64_t)seq, hash, ret->public_key,
                                                   ret->signature) != BUF_OK) {
        rc = STORE_ERROR;
    }
    if (rc == STORE_OK) {
        rc = sqlite_audit_insert(st, AUDIT_SERVER_ACTOR, AUDIT_CHECKPOINT_ACTION, "audit", NULL,
                                 details.data, &cp_seq, cp_hash);
    }
    buf_done(&details);
    return rc;
}

static enum store_rc sqlite_savepoint(struct sqlite_store *st, const char *sql)
{
    return sqlite_exec_args(st, sql, 0, NULL, NULL);
}

static enum store_rc sqlite_audit_append(struct store *s, const char *actor, const char *action,
                                         const char *subject, const char *department,
                                         const char *details_json, int64_t *ret_seq)
{
    struct sqlite_store *st = sqlite_of(s);
    struct store_checkpoint cp;
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    enum store_rc rc = STORE_OK;
    /* A record no checkpoint follows is one INSERT, atomic on its own: the savepoint binds a
     * record to its checkpoint (and covers a head not known yet, which might need one). */
    int alone = st->head_known && !(st->audit_key && (st->head_seq + 1) % SQLITE_CHECKPOINT_EVERY ==
                                                             SQLITE_CHECKPOINT_EVERY - 1);
    if (!alone) {
        rc = sqlite_savepoint(st, "SAVEPOINT audit_append");
    }
    if (rc == STORE_OK) {
        rc = sqlite_audit_insert(st, actor, action, subject, department, details_json, &seq, hash);
    }
    if (rc == STORE_OK && st->audit_key &&
        seq % SQLITE_CHECKPOINT_EVERY == SQLITE_CHECKPOINT_EVERY - 1) {
        /* alone, only when another connection's records moved it to a checkpoint's place */
        rc = sqlite_audit_append_checkpoint(st, seq, hash, &cp);
    }
    if (rc == STORE_OK && !alone) {
        rc = sqlite_savepoint(st, "RELEASE audit_append");
    }
    if (rc != STORE_OK && !alone) {
        st->head_known = 0;
        sqlite3_exec(st->db, "ROLLBACK TO audit_append; RELEASE audit_append", NULL, NULL, NULL);
    }
    if (rc == STORE_OK && ret_seq) {
        *ret_seq = seq;
    }
    return rc == STORE_CONFLICT ? sqlite_fail(st, "audit") : rc;
}

static enum store_rc sqlite_audit_set_key(struct store *s, EVP_PKEY *key)
{
    struct sqlite_store *st = sqlite_of(s);
    if (key && EVP_PKEY_up_ref(key) != 1) {
        snprintf(st->errmsg, sizeof st->errmsg, "audit: cannot keep the key");
        return STORE_ERROR;
    }
    EVP_PKEY_free(st->audit_key);
    st->audit_key = key;
    return STORE_OK;
}

static enum store_rc sqlite_audit_checkpoint(struct store *s, int append,
                                             struct store_checkpoint *ret)
{
    struct sqlite_store *st = sqlite_of(s);
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t seq = 0;
    int sealed = 0;
    enum store_rc rc = sqlite_savepoint(st, "SAVEPOINT audit_checkpoint");
    if (rc != STORE_OK) {
        return rc;
    }
    rc = sqlite_audit_head(st, &seq, hash, &sealed);
    if (rc == STORE_OK && seq == 0) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK && append && !sealed) {
        struct store_checkpoint cp;
        rc = sqlite_audit_append_checkpoint(st, seq, hash, &cp);
        if (rc == STORE_OK) {
            rc = sqlite_audit_head(st, &seq, hash, NULL);
        }
    }
    if (rc == STORE_OK) {
        rc = sqlite_audit_sign(st, seq, hash, ret);
    }
    if (rc == STORE_OK) {
        rc = sqlite_savepoint(st, "RELEASE audit_checkpoint");
    }
    if (rc != STORE_OK) {
        st->head_known = 0;
        sqlite3_exec(st->db, "ROLLBACK TO audit_checkpoint; RELEASE audit_checkpoint", NULL, NULL,
                     NULL);
    }
    return rc;
}

static enum store_rc sqlite_audit_search(struct store *s, int64_t after_seq, int64_t limit,
                                         const struct store_audit_filter *filter,
                                         store_audit_fn *fn, void *userdata)
{
    static const struct store_audit_filter none = { NULL, NULL, NULL };
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const struct store_audit_filter *f = filter ? filter : &none;
    const char *args[] = { f->action, f->run, f->template_name };
    enum store_rc rc = sqlite_prepare(
            st,
            "SELECT seq, time, actor, action, subject, department, details, prev, hash, line "
            "FROM audit WHERE seq > ?4 AND (?1 IS NULL OR action = ?1) AND (?2 IS NULL OR "
            "subject = ?2 OR json_extract(details, '$.run') = ?2) AND (?3 IS NULL OR subject = "
            "?3 OR json_extract(details, '$.template') = ?3) ORDER BY seq LIMIT ?5",
            3, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    sqlite3_bind_int64(stmt, 4, after_seq);
    sqlite3_bind_int64(stmt, 5, limit);
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct store_audit a = { sqlite3_column_int64(stmt, 0), sqlite_col(stmt, 1),
                                 sqlite_col(stmt, 2),           sqlite_col(stmt, 3),
                                 sqlite_col(stmt, 4),           sqlite_col(stmt, 5),
                                 sqlite_col(stmt, 6),           sqlite_col(stmt, 7),
                                 sqlite_col(stmt, 8),           sqlite_col(stmt, 9) };
        if (fn(userdata, &a) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "audit");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_audit_list(struct store *s, int64_t after_seq, int64_t limit,
                                       store_audit_fn *fn, void *userdata)
{
    return sqlite_audit_search(s, after_seq, limit, NULL, fn, userdata);
}

/* Templates (0003). */

static enum store_rc sqlite_exists(struct sqlite_store *st, const char *sql, const char *arg)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { arg };
    enum store_rc rc = sqlite_prepare(st, sql, 1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE) {
        rc = STORE_NOT_FOUND;
    } else if (step != SQLITE_ROW) {
        rc = sqlite_fail(st, "exists");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_template_create(struct store *s, const char *name,
                                            const char *department, const char *description,
                                            const char *created_by)
{
    struct sqlite_store *st = sqlite_of(s);
    enum store_rc rc = sqlite_exists(st, "SELECT 1 FROM departments WHERE name = ?", department);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sqlite_now(now);
    const char *args[] = { name, department, description ? description : "", now, created_by };
    return sqlite_exec_args(st,
                            "INSERT INTO templates(name, department, description, created, "
                            "created_by) VALUES (?, ?, ?, ?, ?)",
                            5, args, NULL);
}

/* Steps stmt, handing each row to fn through `row`; NOT_FOUND when `one` and no row came. */
static enum store_rc sqlite_walk(struct sqlite_store *st, sqlite3_stmt *stmt, int one,
                                 int (*row)(sqlite3_stmt *stmt, void *fn, void *userdata), void *fn,
                                 void *userdata, const char *what)
{
    enum store_rc rc = STORE_OK;
    int seen = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        seen = 1;
        if (row(stmt, fn, userdata) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, what);
    } else if (one && !seen) {
        rc = STORE_NOT_FOUND;
    }
    sqlite_release(st, stmt);
    return rc;
}

static int sqlite_template_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_template t = { sqlite_col(stmt, 0), sqlite_col(stmt, 1), sqlite_col(stmt, 2),
                                sqlite_col(stmt, 3), sqlite_col(stmt, 4) };
    return ((store_template_fn *)fn)(userdata, &t);
}

static enum store_rc sqlite_template_walk(struct sqlite_store *st, const char *name,
                                          store_template_fn *fn, void *userdata)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { name };
    enum store_rc rc = sqlite_prepare(st,
                                      name ? "SELECT name, department, description, created, "
                                             "created_by FROM templates WHERE name = ?"
                                           : "SELECT name, department, description, created, "
                                             "created_by FROM templates ORDER BY name",
                                      name ? 1 : 0, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, name != NULL, sqlite_template_each, (void *)fn, userdata,
                       "templates");
}

static enum store_rc sqlite_template_get(struct store *s, const char *name, store_template_fn *fn,
                                         void *userdata)
{
    return sqlite_template_walk(sqlite_of(s), name, fn, userdata);
}

static enum store_rc sqlite_template_list(struct store *s, store_template_fn *fn, void *userdata)
{
    return sqlite_template_walk(sqlite_of(s), NULL, fn, userdata);
}

static enum store_rc sqlite_version_create(struct store *s, const struct store_version *v,
                                           int64_t *ret_version)
{
    struct sqlite_store *st = sqlite_of(s);
    enum store_rc rc =
            sqlite_exists(st, "SELECT 1 FROM templates WHERE name = ?", v->template_name);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sqlite_now(now);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { v->template_name, v->source,   v->language,     v->input_schema,
                           v->functions,     v->autonomy, v->limits,       v->digest,
                           v->author,        now,         v->template_name };
    rc = sqlite_prepare(st,
                        "INSERT INTO versions(template, version, state, source, language, "
                        "input_schema, functions, autonomy, limits, digest, author, created) "
                        "SELECT ?, coalesce(max(version), 0) + 1, 'draft', ?, ?, ?, ?, ?, ?, ?, "
                        "?, ? FROM versions WHERE template = ? RETURNING version",
                        11, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(stmt, 0);
        step = sqlite3_step(stmt);
        if (step == SQLITE_DONE) {
            *ret_version = n;
        }
    }
    if (step != SQLITE_DONE) {
        rc = (sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT
                     ? STORE_CONFLICT
                     : sqlite_fail(st, "version");
    }
    sqlite_release(st, stmt);
    return rc;
}

#define SQLITE_VERSION_COLUMNS                                                                    \
    "SELECT v.template, v.version, t.department, v.state, v.source, v.language, v.input_schema, " \
    "v.functions, v.autonomy, v.limits, v.digest, v.author, v.created, v.approved_by, "           \
    "v.approved, v.approve_comment, v.submitted_by, v.submitted, v.rejected_by, v.rejected, "     \
    "v.reject_comment, v.revoked_by, v.revoked, v.revoke_reason FROM versions v JOIN templates "  \
    "t ON t.name = v.template "

/* Walks the rows of sql (SQLITE_VERSION_COLUMNS + a WHERE on template = ?1 and maybe
 * version = ?2). With one_row, no row is NOT_FOUND. */
static enum store_rc sqlite_version_walk(struct sqlite_store *st, const char *sql,
                                         const char *template_name, int64_t version, int one_row,
                                         store_version_fn *fn, void *userdata)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { template_name };
    enum store_rc rc = sqlite_prepare(st, sql, 1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (version > 0 && sqlite3_bind_int64(stmt, 2, version) != SQLITE_OK) {
        sqlite_release(st, stmt);
        return sqlite_fail(st, "bind");
    }
    int seen = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        seen = 1;
        struct store_version v = {
            .template_name = sqlite_col(stmt, 0),
            .version = sqlite3_column_int64(stmt, 1),
            .department = sqlite_col(stmt, 2),
            .state = sqlite_col(stmt, 3),
            .source = sqlite_col(stmt, 4),
            .language = sqlite_col(stmt, 5),
            .input_schema = sqlite_col(stmt, 6),
            .functions = sqlite_col(stmt, 7),
            .autonomy = sqlite_col(stmt, 8),
            .limits = sqlite_col(stmt, 9),
            .digest = sqlite_col(stmt, 10),
            .author = sqlite_col(stmt, 11),
            .created = sqlite_col(stmt, 12),
            .approved_by = sqlite_col(stmt, 13),
            .approved = sqlite_col(stmt, 14),
            .approve_comment = sqlite_col(stmt, 15),
            .submitted_by = sqlite_col(stmt, 16),
            .submitted = sqlite_col(stmt, 17),
            .rejected_by = sqlite_col(stmt, 18),
            .rejected = sqlite_col(stmt, 19),
            .reject_comment = sqlite_col(stmt, 20),
            .revoked_by = sqlite_col(stmt, 21),
            .revoked = sqlite_col(stmt, 22),
            .revoke_reason = sqlite_col(stmt, 23),
        };
        if (fn(userdata, &v) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "versions");
    } else if (one_row && !seen) {
        rc = STORE_NOT_FOUND;
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_version_get(struct store *s, const char *template_name, int64_t version,
                                        store_version_fn *fn, void *userdata)
{
    if (version < 0) {
        return STORE_NOT_FOUND;
    }
    return sqlite_version_walk(
            sqlite_of(s),
            version == 0 ? SQLITE_VERSION_COLUMNS "WHERE v.template = ?1 AND v.state = 'approved' "
                                                  "ORDER BY v.version DESC LIMIT 1"
                         : SQLITE_VERSION_COLUMNS "WHERE v.template = ?1 AND v.version = ?2",
            template_name, version, 1, fn, userdata);
}

static enum store_rc sqlite_version_list(struct store *s, const char *template_name,
                                         store_version_fn *fn, void *userdata)
{
    return sqlite_version_walk(sqlite_of(s),
                               SQLITE_VERSION_COLUMNS "WHERE v.template = ?1 ORDER BY v.version",
                               template_name, 0, 0, fn, userdata);
}

static enum store_rc sqlite_version_set_state(struct store *s, const char *template_name,
                                              int64_t version, const char *from_state,
                                              const char *to_state, const char *by,
                                              const char *comment)
{
    struct sqlite_store *st = sqlite_of(s);
    /* the columns come from this table, never from the caller */
    static const char *const sql[][2] = {
        { "submitted", "UPDATE versions SET state = ?1, submitted = ?2, submitted_by = ?3 "
                       "WHERE template = ?5 AND version = ?6 AND state = ?7" },
        { "approved", "UPDATE versions SET state = ?1, approved = ?2, approved_by = ?3, "
                      "approve_comment = ?4 WHERE template = ?5 AND version = ?6 AND state = ?7" },
        { "rejected", "UPDATE versions SET state = ?1, rejected = ?2, rejected_by = ?3, "
                      "reject_comment = ?4 WHERE template = ?5 AND version = ?6 AND state = ?7" },
        { "revoked", "UPDATE versions SET state = ?1, revoked = ?2, revoked_by = ?3, "
                     "revoke_reason = ?4 WHERE template = ?5 AND version = ?6 AND state = ?7" },
    };
    const char *text = NULL;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (strcmp(sql[i][0], to_state) == 0) {
            text = sql[i][1];
        }
    }
    if (!text) {
        snprintf(st->errmsg, sizeof st->errmsg, "sqlite: no state %.64s", to_state);
        return STORE_ERROR;
    }
    char now[32];
    sqlite_now(now);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { to_state, now, by, comment, template_name, NULL, from_state };
    enum store_rc rc = sqlite_prepare(st, text, 7, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_bind_int64(stmt, 6, version) != SQLITE_OK) {
        rc = sqlite_fail(st, "bind");
    } else if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(st, "version state");
    } else if (sqlite3_changes(st->db) == 0) {
        rc = STORE_CONFLICT;
    }
    sqlite_release(st, stmt);
    if (rc == STORE_CONFLICT) {
        sqlite3_stmt *q = NULL;
        const char *qargs[] = { template_name };
        rc = sqlite_prepare(st, "SELECT 1 FROM versions WHERE template = ? AND version = ?", 1,
                            qargs, &q);
        if (rc != STORE_OK) {
            return rc;
        }
        int step = SQLITE_ERROR;
        if (sqlite3_bind_int64(q, 2, version) == SQLITE_OK) {
            step = sqlite3_step(q);
        }
        rc = step == SQLITE_ROW    ? STORE_CONFLICT
             : step == SQLITE_DONE ? STORE_NOT_FOUND
                                   : sqlite_fail(st, "version");
        sqlite_release(st, q);
    }
    return rc;
}

/* ---------------------------------------------------------------- runs and approvals */

#define SQLITE_RUN_COLUMNS                                                                   \
    "seq, id, COALESCE(template, ''), COALESCE(version, 0), department, principal, status, " \
    "input, source, language, functions, outcome, created, updated"

static void sqlite_run_row(sqlite3_stmt *stmt, struct store_run *r)
{
    r->seq = sqlite3_column_int64(stmt, 0);
    r->id = sqlite_col(stmt, 1);
    r->template_name = sqlite_col(stmt, 2);
    r->version = sqlite3_column_int64(stmt, 3);
    r->department = sqlite_col(stmt, 4);
    r->principal = sqlite_col(stmt, 5);
    r->status = sqlite_col(stmt, 6);
    r->input = sqlite_col(stmt, 7);
    r->source = sqlite_col(stmt, 8);
    r->language = sqlite_col(stmt, 9);
    r->functions = sqlite_col(stmt, 10);
    r->outcome = sqlite_col(stmt, 11);
    r->created = sqlite_col(stmt, 12);
    r->updated = sqlite_col(stmt, 13);
}

static int sqlite_run_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_run r;
    sqlite_run_row(stmt, &r);
    return ((store_run_fn *)fn)(userdata, &r);
}

static enum store_rc sqlite_run_create(struct store *s, const struct store_run *r)
{
    char now[32];
    char version[24];
    sqlite_now(now);
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
    return sqlite_exec_args(sqlite_of(s),
                            "INSERT INTO runs (id, template, version, department, principal, "
                            "status, input, source, language, functions, created, updated) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            12, args, NULL);
}

static enum store_rc sqlite_run_get(struct store *s, const char *id, store_run_fn *fn,
                                    void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { id };
    enum store_rc rc = sqlite_prepare(st, "SELECT " SQLITE_RUN_COLUMNS " FROM runs WHERE id = ?", 1,
                                      args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 1, sqlite_run_each, (void *)fn, userdata, "runs");
}

static enum store_rc sqlite_run_list(struct store *s, const struct store_run_filter *f,
                                     store_run_fn *fn, void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    char after[24];
    snprintf(after, sizeof after, "%" PRId64, f ? f->after_seq : 0);
    const char *args[] = { after, f ? f->template_name : NULL, f ? f->status : NULL,
                           f ? f->principal : NULL };
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT " SQLITE_RUN_COLUMNS " FROM runs WHERE seq > ? "
                                      "AND (?2 IS NULL OR template = ?2) "
                                      "AND (?3 IS NULL OR status = ?3) "
                                      "AND (?4 IS NULL OR principal = ?4) ORDER BY seq",
                                      4, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 0, sqlite_run_each, (void *)fn, userdata, "runs");
}

/* STORE_OK when a statement changed a row; else NOT_FOUND or CONFLICT, whichever `exists`
 * (a query naming the row) says. */
static enum store_rc sqlite_changed_or(struct sqlite_store *st, int changes, const char *exists,
                                       const char *id)
{
    if (changes > 0) {
        return STORE_OK;
    }
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { id };
    enum store_rc rc = sqlite_prepare(st, exists, 1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    rc = step == SQLITE_ROW    ? STORE_CONFLICT
         : step == SQLITE_DONE ? STORE_NOT_FOUND
                               : sqlite_fail(st, "lookup");
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_run_set_status(struct store *s, const char *id, const char *from,
                                           const char *status, const char *outcome)
{
    struct sqlite_store *st = sqlite_of(s);
    char now[32];
    int changes = 0;
    sqlite_now(now);
    const char *args[] = { status, outcome, now, id, from };
    enum store_rc rc = sqlite_exec_args(
            st,
            "UPDATE runs SET status = ?1, outcome = COALESCE(?2, outcome), updated = ?3 "
            "WHERE id = ?4 AND instr('|' || ?5 || '|', '|' || status || '|') > 0",
            5, args, &changes);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_changed_or(st, changes, "SELECT 1 FROM runs WHERE id = ?", id);
}

static enum store_rc sqlite_run_set_continuation(struct store *s, const char *id, const char *token)
{
    struct sqlite_store *st = sqlite_of(s);
    int changes = 0;
    const char *args[] = { token, id };
    enum store_rc rc = sqlite_exec_args(st, "UPDATE runs SET continuation = ? WHERE id = ?", 2,
                                        args, &changes);
    if (rc == STORE_OK && changes == 0) {
        rc = STORE_NOT_FOUND;
    }
    return rc;
}

static enum store_rc sqlite_run_take_continuation(struct store *s, const char *id, char **ret_token)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { id };
    char *token = NULL;
    int changes = 0;
    enum store_rc rc = sqlite_prepare(
            st, "SELECT continuation FROM runs WHERE id = ? AND continuation IS NOT NULL", 1, args,
            &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW) {
        token = strdup(sqlite_col(stmt, 0));
        rc = token ? STORE_OK : STORE_ERROR;
        if (!token) {
            snprintf(st->errmsg, sizeof st->errmsg, "out of memory");
        }
    } else {
        rc = step == SQLITE_DONE ? STORE_NOT_FOUND : sqlite_fail(st, "continuation");
    }
    sqlite_release(st, stmt);
    if (rc == STORE_OK) {
        /* the same connection holds the write lock inside a transaction: nobody claims between */
        rc = sqlite_exec_args(st,
                              "UPDATE runs SET continuation = NULL WHERE id = ? "
                              "AND continuation IS NOT NULL",
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

#define SQLITE_APPROVAL_COLUMNS                                                             \
    "id, run, kind, interruption, function, args, status, requested_by, department, "       \
    "COALESCE(template, ''), COALESCE(version, 0), created, decided_by, decided, comment, " \
    "consumed"

static int sqlite_approval_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_approval a = {
        .id = sqlite_col(stmt, 0),
        .run = sqlite_col(stmt, 1),
        .kind = sqlite_col(stmt, 2),
        .interruption = sqlite_col(stmt, 3),
        .function = sqlite_col(stmt, 4),
        .args = sqlite_col(stmt, 5),
        .status = sqlite_col(stmt, 6),
        .requested_by = sqlite_col(stmt, 7),
        .department = sqlite_col(stmt, 8),
        .template_name = sqlite_col(stmt, 9),
        .version = sqlite3_column_int64(stmt, 10),
        .created = sqlite_col(stmt, 11),
        .decided_by = sqlite_col(stmt, 12),
        .decided = sqlite_col(stmt, 13),
        .comment = sqlite_col(stmt, 14),
        .consumed = sqlite3_column_int(stmt, 15),
    };
    return ((store_approval_fn *)fn)(userdata, &a);
}

static enum store_rc sqlite_approval_create(struct store *s, const struct store_approval *a)
{
    char now[32];
    char version[24];
    sqlite_now(now);
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
    return sqlite_exec_args(sqlite_of(s),
                            "INSERT INTO approvals (id, run, kind, interruption, function, args, "
                            "status, requested_by, department, template, version, created) "
                            "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                            11, args, NULL);
}

static enum store_rc sqlite_approval_get(struct store *s, const char *id, store_approval_fn *fn,
                                         void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { id };
    enum store_rc rc = sqlite_prepare(
            st, "SELECT " SQLITE_APPROVAL_COLUMNS " FROM approvals WHERE id = ?", 1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 1, sqlite_approval_each, (void *)fn, userdata, "approvals");
}

static enum store_rc sqlite_approval_list(struct store *s, const char *run, const char *status,
                                          store_approval_fn *fn, void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { run, status };
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT " SQLITE_APPROVAL_COLUMNS " FROM approvals "
                                      "WHERE (?1 IS NULL OR run = ?1) "
                                      "AND (?2 IS NULL OR status = ?2) ORDER BY seq DESC",
                                      2, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 0, sqlite_approval_each, (void *)fn, userdata, "approvals");
}

static enum store_rc sqlite_approval_decide(struct store *s, const char *id, const char *status,
                                            const char *by, const char *comment)
{
    struct sqlite_store *st = sqlite_of(s);
    char now[32];
    int changes = 0;
    sqlite_now(now);
    const char *args[] = { status, by, now, comment, id };
    enum store_rc rc = sqlite_exec_args(st,
                                        "UPDATE approvals SET status = ?, decided_by = ?, "
                                        "decided = ?, comment = ? WHERE id = ? "
                                        "AND status = 'pending'",
                                        5, args, &changes);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_changed_or(st, changes, "SELECT 1 FROM approvals WHERE id = ?", id);
}

static enum store_rc sqlite_approval_consume(struct store *s, const char *run)
{
    const char *args[] = { run };
    return sqlite_exec_args(sqlite_of(s),
                            "UPDATE approvals SET consumed = 1 WHERE run = ? "
                            "AND status IN ('approved', 'denied')",
                            1, args, NULL);
}

/* Connectors (0005_connectors). */
static enum store_rc sqlite_connector_create(struct store *s, const struct store_connector *c)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    char now[32];
    const char *dargs[] = { c->department };
    enum store_rc rc =
            sqlite_prepare(st, "SELECT 1 FROM departments WHERE name = ?", 1, dargs, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    sqlite_release(st, stmt);
    stmt = NULL;
    if (step == SQLITE_DONE) {
        return STORE_NOT_FOUND;
    }
    if (step != SQLITE_ROW) {
        return sqlite_fail(st, "department");
    }
    sqlite_now(now);
    const char *args[] = {
        c->name,           c->department,   c->url,       c->signing_secret_sealed,
        c->headers_sealed, c->header_names, c->functions, now,
        c->created_by
    };
    rc = sqlite_prepare(st,
                        "INSERT INTO connectors(name, department, url, signing_secret, headers, "
                        "header_names, functions, created, created_by, timeout_ms) VALUES (?, ?, "
                        "?, ?, ?, ?, ?, ?, ?, ?10)",
                        9, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    sqlite3_bind_int64(stmt, 10, c->timeout_ms);
    step = sqlite3_step(stmt);
    if ((step & 0xff) == SQLITE_CONSTRAINT) {
        rc = STORE_CONFLICT;
    } else if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "connector");
    }
    sqlite_release(st, stmt);
    return rc;
}

static int sqlite_connector_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_connector c = { sqlite_col(stmt, 0), sqlite_col(stmt, 1),
                                 sqlite_col(stmt, 2), sqlite_col(stmt, 3),
                                 sqlite_col(stmt, 4), sqlite_col(stmt, 5),
                                 sqlite_col(stmt, 6), sqlite3_column_int64(stmt, 7),
                                 sqlite_col(stmt, 8), sqlite_col(stmt, 9) };
    return ((store_connector_fn *)fn)(userdata, &c);
}

static enum store_rc sqlite_connector_walk(struct sqlite_store *st, const char *name,
                                           store_connector_fn *fn, void *userdata)
{
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { name };
    enum store_rc rc = sqlite_prepare(
            st,
            name ? "SELECT name, department, url, signing_secret, headers, header_names, "
                   "functions, timeout_ms, created, created_by FROM connectors WHERE name = ?"
                 : "SELECT name, department, url, signing_secret, headers, header_names, "
                   "functions, timeout_ms, created, created_by FROM connectors ORDER BY name",
            name ? 1 : 0, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, name != NULL, sqlite_connector_each, (void *)fn, userdata,
                       "connectors");
}

static enum store_rc sqlite_connector_get(struct store *s, const char *name, store_connector_fn *fn,
                                          void *userdata)
{
    return sqlite_connector_walk(sqlite_of(s), name, fn, userdata);
}

static enum store_rc sqlite_connector_list(struct store *s, store_connector_fn *fn, void *userdata)
{
    return sqlite_connector_walk(sqlite_of(s), NULL, fn, userdata);
}

/* Metrics */
static enum store_rc sqlite_audit_last_seq(struct store *s, int64_t *ret_seq)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc =
            sqlite_prepare(st, "SELECT coalesce(max(seq), 0) FROM audit", 0, NULL, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        *ret_seq = sqlite3_column_int64(stmt, 0);
    } else {
        rc = sqlite_fail(st, "audit head");
    }
    sqlite_release(st, stmt);
    return rc;
}

/* Several nodes (0006_nodes). SQLite is one node's, but the operations work as on PostgreSQL,
 * with this process's clock. */
static int64_t sqlite_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum store_rc sqlite_node_beat(struct store *s, const char *id, int64_t lease_ms)
{
    char now[32];
    char beat[24];
    char lease[24];
    sqlite_now(now);
    snprintf(beat, sizeof beat, "%" PRId64, sqlite_now_ms());
    snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *args[] = { id, beat, lease, now };
    return sqlite_exec_args(
            sqlite_of(s),
            "INSERT INTO nodes(id, heartbeat, lease_ms, started) VALUES (?, "
            "CAST(?2 AS INTEGER), CAST(?3 AS INTEGER), ?4) ON CONFLICT(id) DO "
            "UPDATE SET heartbeat = excluded.heartbeat, lease_ms = excluded.lease_ms",
            4, args, NULL);
}

static int sqlite_node_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    return ((store_node_fn *)fn)(userdata, sqlite_col(stmt, 0));
}

static enum store_rc sqlite_node_expired(struct store *s, store_node_fn *fn, void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, sqlite_now_ms());
    const char *args[] = { now };
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT id FROM nodes WHERE heartbeat + lease_ms < "
                                      "CAST(? AS INTEGER) ORDER BY id",
                                      1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 0, sqlite_node_each, (void *)fn, userdata, "nodes");
}

static enum store_rc sqlite_node_remove(struct store *s, const char *id)
{
    int changes = 0;
    const char *args[] = { id };
    enum store_rc rc =
            sqlite_exec_args(sqlite_of(s), "DELETE FROM nodes WHERE id = ?", 1, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static enum store_rc sqlite_run_set_node(struct store *s, const char *id, const char *node)
{
    int changes = 0;
    const char *args[] = { node, id };
    enum store_rc rc = sqlite_exec_args(sqlite_of(s), "UPDATE runs SET node = ? WHERE id = ?", 2,
                                        args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_NOT_FOUND : rc;
}

static enum store_rc sqlite_run_list_on_node(struct store *s, const char *node, store_run_fn *fn,
                                             void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { node };
    enum store_rc rc = sqlite_prepare(
            st,
            node ? "SELECT " SQLITE_RUN_COLUMNS " FROM runs WHERE "
                   "node = ?1 AND status = 'running' UNION ALL SELECT " SQLITE_RUN_COLUMNS
                   " FROM runs WHERE id IN (SELECT "
                   "run FROM executions) AND node = ?1 AND status = "
                   "'cancelled' ORDER BY seq"
                 : "SELECT " SQLITE_RUN_COLUMNS " FROM runs WHERE "
                   "node IS NULL AND status = 'running' ORDER BY seq",
            node ? 1 : 0, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 0, sqlite_run_each, (void *)fn, userdata, "runs");
}

static enum store_rc sqlite_call_mark(struct store *s, const struct store_call *c)
{
    char now[32];
    int changes = 0;
    sqlite_now(now);
    const char *args[] = { c->run,      c->idempotency_key,
                           c->function, c->idempotent ? "1" : "0",
                           now,         c->args_sha256 ? c->args_sha256 : "" };
    /* the same call marked again changes nothing but counts as a change; another call under
     * the key changes nothing at all */
    enum store_rc rc = sqlite_exec_args(
            sqlite_of(s),
            "INSERT INTO calls_sent(run, idempotency_key, function, idempotent, sent, "
            "args_sha256) VALUES (?, ?, ?, CAST(? AS INTEGER), ?, ?) ON CONFLICT(run, "
            "idempotency_key) DO UPDATE SET idempotent = excluded.idempotent WHERE "
            "calls_sent.function = excluded.function AND calls_sent.args_sha256 = "
            "excluded.args_sha256",
            6, args, &changes);
    return rc == STORE_OK && changes == 0 ? STORE_CONFLICT : rc;
}

static int sqlite_call_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_call c = { sqlite_col(stmt, 0),         sqlite_col(stmt, 1), sqlite_col(stmt, 2),
                            sqlite3_column_int(stmt, 3), sqlite_col(stmt, 4), sqlite_col(stmt, 5) };
    return ((store_call_fn *)fn)(userdata, &c);
}

static enum store_rc sqlite_call_list(struct store *s, const char *run, store_call_fn *fn,
                                      void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { run };
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT run, idempotency_key, function, idempotent, sent, "
                                      "args_sha256 FROM calls_sent WHERE run = ? ORDER BY rowid",
                                      1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 0, sqlite_call_each, (void *)fn, userdata, "calls_sent");
}

static enum store_rc sqlite_call_clear(struct store *s, const char *run)
{
    const char *args[] = { run };
    enum store_rc rc =
            sqlite_exec_args(sqlite_of(s), "DELETE FROM calls_sent WHERE run = ?", 1, args, NULL);
    if (rc == STORE_OK) {
        rc = sqlite_exec_args(sqlite_of(s), "DELETE FROM executions WHERE run = ?", 1, args, NULL);
    }
    return rc;
}

static enum store_rc sqlite_execution_put(struct store *s, const struct store_execution *e)
{
    char clock[24];
    char attempt[24];
    snprintf(clock, sizeof clock, "%" PRId64, e->clock_ms);
    snprintf(attempt, sizeof attempt, "%" PRId64, e->attempt);
    const char *args[] = { e->run, e->resume, e->resolutions, clock, attempt };
    return sqlite_exec_args(sqlite_of(s),
                            "INSERT OR REPLACE INTO executions(run, resume, resolutions, clock_ms, "
                            "attempt) VALUES (?, ?, ?, CAST(? AS INTEGER), CAST(? AS INTEGER))",
                            5, args, NULL);
}

static int sqlite_execution_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    struct store_execution e = { sqlite_col(stmt, 0), sqlite_col(stmt, 1), sqlite_col(stmt, 2),
                                 sqlite3_column_int64(stmt, 3), sqlite3_column_int64(stmt, 4) };
    return ((store_execution_fn *)fn)(userdata, &e);
}

static enum store_rc sqlite_execution_get(struct store *s, const char *run, store_execution_fn *fn,
                                          void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { run };
    enum store_rc rc = sqlite_prepare(
            st, "SELECT run, resume, resolutions, clock_ms, attempt FROM executions WHERE run = ?",
            1, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    return sqlite_walk(st, stmt, 1, sqlite_execution_each, (void *)fn, userdata, "executions");
}

static int sqlite_run_lock_each(sqlite3_stmt *stmt, void *fn, void *userdata)
{
    (void)stmt;
    (void)fn;
    (void)userdata;
    return 0;
}

static enum store_rc sqlite_run_lock_on_node(struct store *s, const char *id, const char *node,
                                             const char *from)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { id, node, from };
    /* one writer at a time: the transaction holds the database */
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT 1 FROM runs WHERE id = ?1 AND node = ?2 AND "
                                      "instr('|' || ?3 || '|', '|' || status || '|') > 0",
                                      3, args, &stmt);
    if (rc == STORE_OK) {
        rc = sqlite_walk(st, stmt, 1, sqlite_run_lock_each, NULL, NULL, "runs");
    }
    return rc == STORE_NOT_FOUND ? STORE_CONFLICT : rc;
}

static enum store_rc sqlite_run_claim_queued(struct store *s, const char *node, char *ret_id)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    char now[32];
    sqlite_now(now);
    const char *args[] = { node, now };
    /* one writer at a time: SQLite needs no SKIP LOCKED */
    enum store_rc rc = sqlite_prepare(st,
                                      "UPDATE runs SET status = 'running', node = ?, updated = ? "
                                      "WHERE seq = (SELECT seq FROM runs WHERE status = 'queued' "
                                      "ORDER BY seq LIMIT 1) RETURNING id",
                                      2, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_ROW) {
        snprintf(ret_id, STORE_NAME_MAX + 1, "%s", sqlite_col(stmt, 0));
        while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        }
    } else {
        rc = STORE_NOT_FOUND;
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "claim");
    }
    sqlite_release(st, stmt);
    return rc;
}

static enum store_rc sqlite_open_reader(struct store *s, struct store **ret);

static const struct store_ops sqlite_ops = {
    .version = STORE_OPS_VERSION,
    .name = "sqlite",
    .close = sqlite_close,
    .errmsg = sqlite_errmsg,
    .ping = sqlite_ping,
    .tx_begin = sqlite_tx_begin,
    .tx_commit = sqlite_tx_commit,
    .tx_rollback = sqlite_tx_rollback,
    .principal_count = sqlite_principal_count,
    .principal_create = sqlite_principal_create,
    .principal_get = sqlite_principal_get,
    .principal_list = sqlite_principal_list,
    .key_add = sqlite_key_add,
    .key_revoke = sqlite_key_revoke,
    .key_lookup = sqlite_key_lookup,
    .key_list = sqlite_key_list,
    .role_grant = sqlite_role_grant,
    .role_revoke = sqlite_role_revoke,
    .role_list = sqlite_role_list,
    .department_create = sqlite_department_create,
    .department_get = sqlite_department_get,
    .department_list = sqlite_department_list,
    .department_set_policy = sqlite_department_set_policy,
    .audit_append = sqlite_audit_append,
    .audit_list = sqlite_audit_list,
    .audit_set_key = sqlite_audit_set_key,
    .audit_search = sqlite_audit_search,
    .audit_checkpoint = sqlite_audit_checkpoint,
    .template_create = sqlite_template_create,
    .template_get = sqlite_template_get,
    .template_list = sqlite_template_list,
    .version_create = sqlite_version_create,
    .version_get = sqlite_version_get,
    .version_list = sqlite_version_list,
    .version_set_state = sqlite_version_set_state,
    .run_create = sqlite_run_create,
    .run_get = sqlite_run_get,
    .run_list = sqlite_run_list,
    .run_set_status = sqlite_run_set_status,
    .run_set_continuation = sqlite_run_set_continuation,
    .run_take_continuation = sqlite_run_take_continuation,
    .approval_create = sqlite_approval_create,
    .approval_get = sqlite_approval_get,
    .approval_list = sqlite_approval_list,
    .approval_decide = sqlite_approval_decide,
    .approval_consume = sqlite_approval_consume,
    /* Connectors (0005_connectors) */
    .connector_create = sqlite_connector_create,
    .connector_get = sqlite_connector_get,
    .connector_list = sqlite_connector_list,
    /* Metrics */
    .audit_head = sqlite_audit_last_seq,
    .node_beat = sqlite_node_beat,
    .node_expired = sqlite_node_expired,
    .node_remove = sqlite_node_remove,
    .run_set_node = sqlite_run_set_node,
    .run_list_on_node = sqlite_run_list_on_node,
    .call_mark = sqlite_call_mark,
    .call_list = sqlite_call_list,
    .call_clear = sqlite_call_clear,
    .run_claim_queued = sqlite_run_claim_queued,
    .execution_put = sqlite_execution_put,
    .execution_get = sqlite_execution_get,
    /* one node: nobody to wake */
    .notify = NULL,
    .listener_new = NULL,
    .run_lock_on_node = sqlite_run_lock_on_node,
    .read_begin = sqlite_read_begin,
    .read_end = sqlite_read_end,
    .commit_failure_unknown = 1,
    .open_reader = sqlite_open_reader,
};

int store_schema_version(void)
{
    return migrations_count;
}

static enum store_rc sqlite_pragma_int(struct sqlite_store *st, const char *sql, int *ret_value)
{
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st, sql, 0, NULL, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        *ret_value = sqlite3_column_int(stmt, 0);
    } else {
        rc = sqlite_fail(st, sql);
    }
    sqlite_release(st, stmt);
    return rc;
}

/* Applies the migrations after `from`, all in one transaction with the new user_version. */
static enum store_rc sqlite_migrate(struct sqlite_store *st, int from)
{
    char *err = NULL;
    char sql[64];
    if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, &err) != SQLITE_OK) {
        goto fail;
    }
    for (int i = from; i < migrations_count; i++) {
        if (sqlite3_exec(st->db, migrations[i].sql, NULL, NULL, &err) != SQLITE_OK) {
            snprintf(st->errmsg, sizeof st->errmsg, "migration %s: %s", migrations[i].name,
                     err ? err : "failed");
            sqlite3_free(err);
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            return STORE_ERROR;
        }
    }
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", migrations_count);
    if (sqlite3_exec(st->db, sql, NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_exec(st->db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    return STORE_OK;
fail:
    snprintf(st->errmsg, sizeof st->errmsg, "migration: %s", err ? err : sqlite3_errmsg(st->db));
    sqlite3_free(err);
    return STORE_ERROR;
}

/* Records written before 0002_audit_chain have no prev, hash or line: they are chained once, in
 * seq order, when such a database is first opened (they come before every chained record). */
static enum store_rc sqlite_audit_chain_legacy(struct sqlite_store *st)
{
    enum store_rc rc = sqlite_exec_args(st, "BEGIN IMMEDIATE", 0, NULL, NULL);
    char prev[AUDIT_HASH_HEX_LEN + 1];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    struct buf line;
    struct al_error err;
    sqlite3_stmt *sel = NULL;
    sqlite3_stmt *upd = NULL;
    buf_init(&line, SQLITE_LINE_MAX);
    memset(&err, 0, sizeof err);
    memset(prev, '0', AUDIT_HASH_HEX_LEN);
    prev[AUDIT_HASH_HEX_LEN] = '\0';
    if (rc != STORE_OK) {
        goto out;
    }
    rc = sqlite_prepare(st,
                        "SELECT seq, time, actor, action, subject, department, details FROM audit "
                        "WHERE line IS NULL ORDER BY seq",
                        0, NULL, &sel);
    if (rc == STORE_OK) {
        rc = sqlite_prepare(st, "UPDATE audit SET prev = ?1, hash = ?2, line = ?3 WHERE seq = ?4",
                            0, NULL, &upd);
    }
    if (rc != STORE_OK) {
        goto out;
    }
    int step;
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        struct audit_record rec = { (uint64_t)sqlite3_column_int64(sel, 0),
                                    sqlite_col(sel, 1),
                                    sqlite_col(sel, 2),
                                    sqlite_col(sel, 3),
                                    sqlite_col(sel, 4) ? sqlite_col(sel, 4) : "",
                                    sqlite_col(sel, 5),
                                    sqlite_col(sel, 6),
                                    prev };
        buf_reset(&line);
        if (audit_record_write(&rec, &line, hash, &err) != AL_OK) {
            snprintf(st->errmsg, sizeof st->errmsg, "audit: cannot chain seq %" PRIu64 ": %.150s",
                     rec.seq, err.message);
            rc = STORE_ERROR;
            goto out;
        }
        sqlite3_reset(upd);
        sqlite3_bind_text(upd, 1, prev, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(upd, 2, hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(upd, 3, line.data, (int)line.len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(upd, 4, (int64_t)rec.seq);
        if (sqlite3_step(upd) != SQLITE_DONE) {
            rc = sqlite_fail(st, "audit chain");
            goto out;
        }
        memcpy(prev, hash, sizeof prev);
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "audit chain");
        goto out;
    }
    sqlite_release(st, sel);
    sel = NULL;
    rc = sqlite_exec_args(st, "COMMIT", 0, NULL, NULL);
out:
    sqlite_release(st, sel);
    sqlite_release(st, upd);
    if (rc != STORE_OK) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    buf_done(&line);
    return rc;
}

enum store_rc store_sqlite_open(const char *path, struct store **ret_store, char *errmsg)
{
    enum store_rc rc = STORE_ERROR;
    int version = 0;
    char mode[16] = "";
    sqlite3_stmt *stmt = NULL;
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        return STORE_ERROR;
    }
    st->base.ops = &sqlite_ops;
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(st->errmsg, sizeof st->errmsg, "cannot open %s: %s", path,
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(st->db, 5000);
    if (sqlite_pragma_int(st, "PRAGMA user_version", &version) != STORE_OK) {
        goto out;
    }
    if (version > migrations_count) {
        snprintf(st->errmsg, sizeof st->errmsg,
                 "%s has schema version %d, newer than this airlockd's %d: use a newer airlockd",
                 path, version, migrations_count);
        goto out;
    }
    if (sqlite_prepare(st, "PRAGMA journal_mode = WAL", 0, NULL, &stmt) != STORE_OK) {
        goto out;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite_col(stmt, 0)) {
        snprintf(mode, sizeof mode, "%s", sqlite_col(stmt, 0));
    }
    sqlite_release(st, stmt);
    if (strcmp(mode, "wal") != 0) {
        snprintf(st->errmsg, sizeof st->errmsg, "%s: cannot switch to WAL mode", path);
        goto out;
    }
    if (sqlite3_exec(st->db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", NULL, NULL,
                     NULL) != SQLITE_OK) {
        sqlite_fail(st, "pragma");
        goto out;
    }
    if (version < migrations_count && sqlite_migrate(st, version) != STORE_OK) {
        goto out;
    }
    if (version == 1 && sqlite_audit_chain_legacy(st) != STORE_OK) {
        goto out;
    }
    rc = STORE_OK;
out:
    if (rc != STORE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "%s", st->errmsg);
        sqlite_close(&st->base);
        return rc;
    }
    *ret_store = &st->base;
    return STORE_OK;
}

/* A reader: the same file, query_only (SQLite refuses every write through it), WAL's snapshot
 * isolation between it and the writer, the writer's audit key for checkpoints it signs. */
static enum store_rc sqlite_open_reader(struct store *s, struct store **ret)
{
    struct sqlite_store *w = sqlite_of(s);
    const char *path = sqlite3_db_filename(w->db, "main");
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(w->errmsg, sizeof w->errmsg, "out of memory");
        return STORE_ERROR;
    }
    st->base.ops = &sqlite_ops;
    if (sqlite3_open_v2(path && path[0] ? path : ":memory:", &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(st->db, "PRAGMA query_only = ON; PRAGMA foreign_keys = ON", NULL, NULL,
                     NULL) != SQLITE_OK) {
        snprintf(w->errmsg, sizeof w->errmsg, "sqlite: cannot open a reader: %s",
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        sqlite_close(&st->base);
        return STORE_ERROR;
    }
    sqlite3_busy_timeout(st->db, 5000);
    if (w->audit_key && sqlite_audit_set_key(&st->base, w->audit_key) != STORE_OK) {
        snprintf(w->errmsg, sizeof w->errmsg, "%s", st->errmsg);
        sqlite_close(&st->base);
        return STORE_ERROR;
    }
    *ret = &st->base;
    return STORE_OK;
}
