/*
 * sqlite.c - the SQLite backend of store.h. One connection, WAL mode, synchronous=FULL so a
 * committed change (and its audit record) survives a crash. Opening migrates the database to
 * the embedded migrations' last number, kept in PRAGMA user_version, inside one transaction;
 * a database from a newer airlockd is refused rather than guessed at. Statements are prepared
 * per call: the server's request rate does not need a statement cache, and it keeps every
 * operation self-contained. This file never logs: errors go to errmsg for the caller.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migrations.h"
#include "store.h"

struct sqlite_store {
    struct store base; /* first: a struct store * is a struct sqlite_store * */
    sqlite3 *db;
    char errmsg[STORE_ERRMSG_MAX];
};

static struct sqlite_store *sqlite_of(struct store *s)
{
    return (struct sqlite_store *)s;
}

static enum store_rc sqlite_fail(struct sqlite_store *st, const char *what)
{
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

/* Prepares sql and binds the NULL-terminated list of text arguments (a NULL member binds NULL
 * only when given through nargs). */
static enum store_rc sqlite_prepare(struct sqlite_store *st, const char *sql, int nargs,
                                    const char *const *args, sqlite3_stmt **ret_stmt)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        return sqlite_fail(st, "prepare");
    }
    for (int i = 0; i < nargs; i++) {
        int rc = args[i] ? sqlite3_bind_text(stmt, i + 1, args[i], -1, SQLITE_TRANSIENT)
                         : sqlite3_bind_null(stmt, i + 1);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(stmt);
            return sqlite_fail(st, "bind");
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
    sqlite3_finalize(stmt);
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
    sqlite3_close_v2(st->db);
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

static enum store_rc sqlite_tx_begin(struct store *s)
{
    return sqlite_exec_args(sqlite_of(s), "BEGIN IMMEDIATE", 0, NULL, NULL);
}

static enum store_rc sqlite_tx_commit(struct store *s)
{
    return sqlite_exec_args(sqlite_of(s), "COMMIT", 0, NULL, NULL);
}

static void sqlite_tx_rollback(struct store *s)
{
    struct sqlite_store *st = sqlite_of(s);
    if (!sqlite3_get_autocommit(st->db)) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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

static enum store_rc sqlite_audit_append(struct store *s, const char *actor, const char *action,
                                         const char *subject, const char *department,
                                         const char *details_json, int64_t *ret_seq)
{
    struct sqlite_store *st = sqlite_of(s);
    char now[32];
    sqlite_now(now);
    const char *args[] = { now, actor, action, subject, department, details_json };
    enum store_rc rc = sqlite_exec_args(st,
                                        "INSERT INTO audit(time, actor, action, subject, "
                                        "department, details) VALUES (?, ?, ?, ?, ?, ?)",
                                        6, args, NULL);
    if (rc == STORE_OK && ret_seq) {
        *ret_seq = sqlite3_last_insert_rowid(st->db);
    }
    return rc == STORE_CONFLICT ? sqlite_fail(st, "audit") : rc;
}

static enum store_rc sqlite_audit_list(struct store *s, int64_t after_seq, int64_t limit,
                                       store_audit_fn *fn, void *userdata)
{
    struct sqlite_store *st = sqlite_of(s);
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st,
                                      "SELECT seq, time, actor, action, subject, department, "
                                      "details FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
                                      0, NULL, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    sqlite3_bind_int64(stmt, 1, after_seq);
    sqlite3_bind_int64(stmt, 2, limit);
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct store_audit a = { sqlite3_column_int64(stmt, 0),
                                 sqlite_col(stmt, 1),
                                 sqlite_col(stmt, 2),
                                 sqlite_col(stmt, 3),
                                 sqlite_col(stmt, 4),
                                 sqlite_col(stmt, 5),
                                 sqlite_col(stmt, 6) };
        if (fn(userdata, &a) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "audit");
    }
    sqlite3_finalize(stmt);
    return rc;
}

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
    sqlite3_finalize(stmt);
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
    sqlite3_finalize(stmt);
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
