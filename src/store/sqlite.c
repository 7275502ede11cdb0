/*
 * sqlite.c - the SQLite backend of store.h. One connection, WAL mode, synchronous=FULL so a
 * committed change (and its audit record) survives a crash. Opening migrates the database to
 * the embedded migrations' last number, kept in PRAGMA user_version, inside one transaction;
 * a database from a newer airlockd is refused rather than guessed at. Prepared statements are
 * kept per connection, keyed by their SQL text (compiling SQL was a measured 6% of airlockd's CPU
 * on governed runs); each operation still stands alone: a statement it takes is reset and its
 * bindings cleared before the operation returns, so no read stays open between calls.
 *
 * The operations whose SQL reads the same as PostgreSQL's are sql.c's, over this file's
 * sqlite_exec and sqlite_walk (sql.h); their statements say $1, $2, ..., which SQLite takes as
 * named parameters, and sqlite_prepare binds each to the argument its name numbers. What is
 * SQLite's own stays here: transactions and savepoints, read_begin's snapshot, the audit log's
 * head kept by the connection, JSON and string functions, the key's hash and the journal's
 * answers as blobs, this process's clock for leases, and no row locks (one writer at a time holds
 * the database). This file never logs: errors go to errmsg for the caller.
 */
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "migrations.h"
#include "sql.h"
#include "store.h"

#define SQLITE_STMT_CACHE 128 /* more than the distinct statements of sql.c and this file */

/* A prepared statement kept for the next call with the same SQL; sql is the caller's pointer
 * (a literal), checked against the statement's own text before reuse. */
struct sqlite_cached {
    const char *sql;
    sqlite3_stmt *stmt;
    int busy; /* taken by an operation still running (a callback may nest another one) */
};

struct sqlite_store {
    struct sql_store sql; /* first: a struct store * is a struct sqlite_store * */
    sqlite3 *db;
    struct sqlite_cached cache[SQLITE_STMT_CACHE];
    int cached;
    int depth;   /* transactions open: 1 for BEGIN, one more per savepoint inside it */
    int reading; /* read_begin's transaction is open */
    /* The audit log's last record as this connection appended it, so that an append reads
     * nothing back; head_known is cleared by every rollback, and a record another connection
     * appended meanwhile makes the insert conflict, and the head is read again. */
    int head_known;
    int64_t head_seq;
    char head_hash[AUDIT_HASH_HEX_LEN + 1];
};

static struct sqlite_store *sqlite_of(struct store *s)
{
    return (struct sqlite_store *)s;
}

static enum store_rc sqlite_fail(struct sqlite_store *st, const char *what)
{
    st->head_known = 0; /* an error may have rolled the transaction back */
    snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "sqlite: %s: %s", what, sqlite3_errmsg(st->db));
    return STORE_ERROR;
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

/* Prepares sql (or takes its cached statement) and binds the text arguments: parameter $N (or
 * ?N) the N-th, a NULL one as NULL, past nargs none. The statement goes back with
 * sqlite_release. */
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
    int params = sqlite3_bind_parameter_count(stmt);
    for (int i = 1; i <= params; i++) {
        /* "$N" is a name to SQLite, its index the order it first appears in */
        const char *name = sqlite3_bind_parameter_name(stmt, i);
        long arg = name && name[0] == '$' ? strtol(name + 1, NULL, 10) - 1 : i - 1;
        if (arg < 0 || arg >= nargs) {
            continue;
        }
        int rc = args[arg] ? sqlite3_bind_text(stmt, i, args[arg], -1, SQLITE_TRANSIENT)
                           : sqlite3_bind_null(stmt, i);
        if (rc != SQLITE_OK) {
            enum store_rc ret = sqlite_fail(st, "bind");
            sqlite_release(st, stmt);
            return ret;
        }
    }
    *ret_stmt = stmt;
    return STORE_OK;
}

/* sql.h's exec: a constraint violation is a CONFLICT. */
static enum store_rc sqlite_exec(struct sql_store *q, const char *sql, int n,
                                 const char *const *args, int64_t *ret_changes)
{
    struct sqlite_store *st = sqlite_of(&q->base);
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st, sql, n, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    int step = sqlite3_step(stmt);
    if (step == SQLITE_DONE) {
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

static const char *sqlite_row_text(const struct sql_row *row, int col)
{
    return (const char *)sqlite3_column_text(row->res, col);
}

static int64_t sqlite_row_int(const struct sql_row *row, int col)
{
    return sqlite3_column_int64(row->res, col);
}

/* A zero-length blob is "" (sqlite3_column_blob gives NULL for it, as for SQL NULL). */
static const unsigned char *sqlite_row_blob(const struct sql_row *row, int col, size_t *ret_len)
{
    if (sqlite3_column_type(row->res, col) == SQLITE_NULL) {
        return NULL;
    }
    const unsigned char *p = sqlite3_column_blob(row->res, col);
    int n = sqlite3_column_bytes(row->res, col);
    *ret_len = (size_t)n;
    return p ? p : n == 0 ? (const unsigned char *)"" : NULL;
}

/* sql.h's walk: steps the statement, each row read in place. */
static enum store_rc sqlite_walk(struct sql_store *q, const char *sql, int n,
                                 const char *const *args, int one, sql_each_fn *each, void *fn,
                                 void *userdata)
{
    struct sqlite_store *st = sqlite_of(&q->base);
    sqlite3_stmt *stmt = NULL;
    enum store_rc rc = sqlite_prepare(st, sql, n, args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    struct sql_row row = { sqlite_row_text, sqlite_row_int, sqlite_row_blob, stmt, 0, NULL };
    int seen = 0;
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        seen = 1;
        if (each(&row, fn, userdata) != 0) {
            step = SQLITE_DONE;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        rc = sqlite_fail(st, "step");
    } else if (one && !seen) {
        rc = STORE_NOT_FOUND;
    }
    sqlite_release(st, stmt);
    return rc;
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
    sql_audit_keys_unref(st->sql.audit_keys);
    free(st);
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
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "sqlite: commit outside a transaction");
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
    st->sql.appended_valid = 0; /* a checkpoint appended before may be undone now */
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

/* The hash goes as a blob. */
static enum store_rc sqlite_key_add(struct store *s, const char *principal, const char *prefix,
                                    const unsigned char hash[STORE_HASH_LEN])
{
    struct sqlite_store *st = sqlite_of(s);
    enum store_rc rc = sql_principal_exists(&st->sql, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    char now[32];
    sql_now(now);
    sqlite3_stmt *stmt = NULL;
    const char *args[] = { prefix, principal, NULL, now };
    rc = sqlite_prepare(
            st, "INSERT INTO api_keys(prefix, principal, hash, created) VALUES ($1, $2, $3, $4)", 4,
            args, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_bind_blob(stmt, sqlite3_bind_parameter_index(stmt, "$3"), hash, STORE_HASH_LEN,
                          SQLITE_TRANSIENT) != SQLITE_OK) {
        rc = sqlite_fail(st, "bind");
    } else if (sqlite3_step(stmt) != SQLITE_DONE) {
        rc = (sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_CONSTRAINT
                     ? STORE_CONFLICT
                     : sqlite_fail(st, "key");
    }
    sqlite_release(st, stmt);
    return rc;
}

/* ---------------------------------------------------------------- audit */

/* sql.h's audit_insert: chained to the head this connection knows, read only when it knows
 * none; the caller holds a savepoint, or the record needs none (audit_append). */
static enum store_rc sqlite_audit_insert(struct sql_store *q, const char *actor, const char *action,
                                         const char *subject, const char *department,
                                         const char *details_json, int64_t *ret_seq,
                                         char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    struct sqlite_store *st = sqlite_of(&q->base);
    char prev[AUDIT_HASH_HEX_LEN + 1];
    char hash[AUDIT_HASH_HEX_LEN + 1];
    int64_t last = 0;
    enum store_rc rc;
    for (int cached = st->head_known;; cached = 0) {
        rc = STORE_OK;
        if (cached) {
            last = st->head_seq;
            memcpy(prev, st->head_hash, sizeof prev);
        } else {
            rc = sql_audit_last(q, &last, prev, NULL);
        }
        st->head_known = 0; /* until this insert is in */
        if (rc == STORE_OK) {
            rc = sql_audit_write(q, last + 1, prev, actor, action, subject, department,
                                 details_json, hash);
        }
        /* a conflict after a known head: appended to by another connection since, so chain to
         * its last record */
        if (rc != STORE_CONFLICT || !cached) {
            break;
        }
    }
    if (rc != STORE_OK) {
        return rc == STORE_CONFLICT ? sqlite_fail(st, "audit") : rc;
    }
    *ret_seq = last + 1;
    memcpy(ret_hash, hash, sizeof hash);
    st->head_known = 1;
    st->head_seq = last + 1;
    memcpy(st->head_hash, hash, sizeof hash);
    return STORE_OK;
}

/* sql.h's audit_open. A record no checkpoint follows is one INSERT, atomic on its own: the
 * savepoint binds a record to its checkpoint (and covers a head not known yet, which might need
 * one). */
static enum store_rc sqlite_audit_open(struct sql_store *q, int append, int *ret_scope)
{
    struct sqlite_store *st = sqlite_of(&q->base);
    *ret_scope = !append || !st->head_known ||
                 (sql_audit_signs(q) &&
                  (st->head_seq + 1) % SQL_CHECKPOINT_EVERY == SQL_CHECKPOINT_EVERY - 1);
    return *ret_scope ? sqlite_exec(q, "SAVEPOINT audit_write", 0, NULL, NULL) : STORE_OK;
}

static enum store_rc sqlite_audit_close(struct sql_store *q, int scope, enum store_rc rc)
{
    struct sqlite_store *st = sqlite_of(&q->base);
    if (scope && rc == STORE_OK) {
        rc = sqlite_exec(q, "RELEASE audit_write", 0, NULL, NULL);
    }
    if (scope && rc != STORE_OK) {
        st->head_known = 0;
        sqlite3_exec(st->db, "ROLLBACK TO audit_write; RELEASE audit_write", NULL, NULL, NULL);
    }
    return rc;
}

/* ---------------------------------------------------------------- the journal */

/* sql.h's blob_insert: the bytes bound as a blob, in place. */
static enum store_rc sqlite_blob_insert(struct sql_store *q, const char *sha256, const void *bytes,
                                        size_t len)
{
    static const char sql[] = "INSERT INTO workspace_blobs(sha256, bytes) VALUES ($1, $2) ON "
                              "CONFLICT DO NOTHING";
    struct sqlite_store *st = sqlite_of(&q->base);
    sqlite3_stmt *stmt = NULL;
    if (len > INT_MAX) {
        snprintf(q->errmsg, sizeof q->errmsg, "sqlite: a workspace blob of %zu bytes", len);
        return STORE_ERROR;
    }
    enum store_rc rc = sqlite_prepare(st, sql, 1, &sha256, &stmt);
    if (rc != STORE_OK) {
        return rc;
    }
    if (sqlite3_bind_blob(stmt, sqlite3_bind_parameter_index(stmt, "$2"), len ? bytes : "",
                          (int)len, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_DONE) {
        rc = sqlite_fail(st, "workspace blob");
    }
    sqlite_release(st, stmt);
    return rc;
}

/* sql.h's journal_insert: one row at a time through two kept statements (a round trip costs
 * nothing here); each answer's bytes bound as a blob, in place. */
static enum store_rc sqlite_journal_insert(struct sql_store *q, const char *run,
                                           const struct store_journal_entry *entries,
                                           const char (*hashes)[65], size_t n,
                                           int64_t *ret_inserted)
{
    static const char blob_sql[] = "INSERT INTO journal_blobs(sha256, bytes) VALUES ($1, $2) ON "
                                   "CONFLICT DO NOTHING";
    static const char row_sql[] =
            "INSERT INTO journal(run, position, call_id, function, args_sha256, idempotency_key, "
            "kind, sync, clock_ms, answer_sha256) VALUES ($1, CAST($2 AS INTEGER), $3, $4, $5, "
            "$6, CAST($7 AS INTEGER), CAST($8 AS INTEGER), CAST($9 AS INTEGER), $10) ON CONFLICT "
            "DO NOTHING";
    struct sqlite_store *st = sqlite_of(&q->base);
    enum store_rc rc = STORE_OK;
    int64_t inserted = 0;
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        const struct store_journal_entry *e = &entries[i];
        int again = 0; /* the same answer earlier in the batch */
        for (size_t j = 0; j < i && !again; j++) {
            again = strcmp(hashes[j], hashes[i]) == 0;
        }
        if (!again) {
            sqlite3_stmt *stmt = NULL;
            const char *hash = hashes[i];
            rc = sqlite_prepare(st, blob_sql, 1, &hash, &stmt);
            if (rc != STORE_OK) {
                break;
            }
            if (sqlite3_bind_blob(stmt, sqlite3_bind_parameter_index(stmt, "$2"),
                                  e->answer_len ? (const void *)e->answer : "", (int)e->answer_len,
                                  SQLITE_STATIC) != SQLITE_OK ||
                sqlite3_step(stmt) != SQLITE_DONE) {
                rc = sqlite_fail(st, "journal answer");
            }
            sqlite_release(st, stmt);
        }
        char position[24];
        char kind[8];
        char clock[24];
        int64_t changes = 0;
        snprintf(position, sizeof position, "%" PRId64, e->position);
        snprintf(kind, sizeof kind, "%d", e->kind);
        snprintf(clock, sizeof clock, "%" PRId64, e->clock_ms);
        const char *args[] = { run,
                               position,
                               e->call_id,
                               e->function,
                               e->args_sha256,
                               e->idempotency_key,
                               kind,
                               e->sync ? "1" : "0",
                               clock,
                               hashes[i] };
        if (rc == STORE_OK) {
            rc = sqlite_exec(q, row_sql, 10, args, &changes);
        }
        inserted += changes;
    }
    if (rc == STORE_OK) {
        *ret_inserted = inserted;
    }
    return rc;
}

/* ---------------------------------------------------------------- runs, nodes */

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
    sql_now(now);
    snprintf(beat, sizeof beat, "%" PRId64, sqlite_now_ms());
    snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *args[] = { id, beat, lease, now };
    return sqlite_exec(&sqlite_of(s)->sql,
                       "INSERT INTO nodes(id, heartbeat, lease_ms, started) VALUES ($1, "
                       "CAST($2 AS INTEGER), CAST($3 AS INTEGER), $4) ON CONFLICT(id) DO "
                       "UPDATE SET heartbeat = excluded.heartbeat, lease_ms = excluded.lease_ms",
                       4, args, NULL);
}

static enum store_rc sqlite_node_expired(struct store *s, store_node_fn *fn, void *userdata)
{
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, sqlite_now_ms());
    const char *args[] = { now };
    return sqlite_walk(&sqlite_of(s)->sql,
                       "SELECT id FROM nodes WHERE heartbeat + lease_ms < CAST($1 AS INTEGER) "
                       "ORDER BY id",
                       1, args, 0, sql_node_each, (void *)fn, userdata);
}

static enum store_rc sqlite_open_reader(struct store *s, struct store **ret);

static const struct store_ops sqlite_ops = {
    .version = STORE_OPS_VERSION,
    .name = "sqlite",
    .close = sqlite_close,
    SQL_OPS_SESSIONS(SQL_OP_MEMBER) SQL_OPS_SHARED(SQL_OP_MEMBER) SQL_OPS_ADMIN(SQL_OP_MEMBER)
            .tx_begin = sqlite_tx_begin,
    .tx_commit = sqlite_tx_commit,
    .tx_rollback = sqlite_tx_rollback,
    .key_add = sqlite_key_add,
    .node_beat = sqlite_node_beat,
    .node_expired = sqlite_node_expired,
    /* one node: nobody to wake */
    .notify = NULL,
    .listener_new = NULL,
    .read_begin = sqlite_read_begin,
    .read_end = sqlite_read_end,
    .commit_failure_unknown = 1,
    .open_reader = sqlite_open_reader,
    SQL_OPS_INBOX(SQL_OP_MEMBER) /* 0019_inbox */
};

/* SQLite's words for sql.c. One writer at a time, whose transaction holds the database: no row
 * is locked (FOR UPDATE), none skipped (SKIP LOCKED), and a continuation read inside a
 * transaction is claimed before anybody else can read it. */
static const struct sql_backend sqlite_sql = {
    .exec = sqlite_exec,
    .walk = sqlite_walk,
    .audit_insert = sqlite_audit_insert,
    .audit_open = sqlite_audit_open,
    .audit_close = sqlite_audit_close,
    .journal_insert = sqlite_journal_insert,
    .blob_insert = sqlite_blob_insert,
    .run_set_status = "UPDATE runs SET status = $1, outcome = COALESCE($2, outcome), updated = $3 "
                      "WHERE id = $4 AND instr('|' || $5 || '|', '|' || status || '|') > 0",
    .run_take_continuation = "SELECT continuation FROM runs WHERE id = $1 AND continuation IS NOT "
                             "NULL",
    .run_lock_on_node = "SELECT 1 FROM runs WHERE id = $1 AND node = $2 AND instr('|' || $3 || "
                        "'|', '|' || status || '|') > 0",
    .run_claim_queued = "UPDATE runs SET status = 'running', node = $1, updated = $2 WHERE seq = "
                        "(SELECT seq FROM runs WHERE status = 'queued' ORDER BY seq LIMIT 1) "
                        "RETURNING id",
    .call_list = "SELECT run, idempotency_key, function, idempotent, sent, args_sha256, args FROM "
                 "calls_sent WHERE run = $1 ORDER BY rowid",
    .key_lookup = "SELECT principal, hex(hash) FROM api_keys WHERE prefix = $1 AND revoked IS NULL",
    .audit_search = "SELECT " SQL_AUDIT_COLUMNS " FROM audit WHERE seq > $1 AND ($3 IS NULL OR "
                    "action = $3) AND ($4 IS NULL OR subject = $4 OR json_extract(details, "
                    "'$.run') = $4) AND ($5 IS NULL OR subject = $5 OR json_extract(details, "
                    "'$.template') = $5) ORDER BY seq LIMIT $2",
};

int store_schema_version(void)
{
    return migrations_count;
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
            snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "migration %s: %s", migrations[i].name,
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
    snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "migration: %s",
             err ? err : sqlite3_errmsg(st->db));
    sqlite3_free(err);
    return STORE_ERROR;
}

/* Records written before 0002_audit_chain are chained once, when such a database is first
 * opened, in a transaction of their own. */
static enum store_rc sqlite_audit_chain_legacy(struct sqlite_store *st)
{
    enum store_rc rc = sqlite_exec(&st->sql, "BEGIN IMMEDIATE", 0, NULL, NULL);
    if (rc == STORE_OK) {
        rc = sql_audit_chain_legacy(&st->sql);
    }
    if (rc == STORE_OK) {
        rc = sqlite_exec(&st->sql, "COMMIT", 0, NULL, NULL);
    }
    if (rc != STORE_OK) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

enum store_rc store_sqlite_open(const char *path, struct store **ret_store, char *errmsg)
{
    enum store_rc rc = STORE_ERROR;
    int64_t version = 0;
    char mode[16] = "";
    sqlite3_stmt *stmt = NULL;
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        return STORE_ERROR;
    }
    st->sql.base.ops = &sqlite_ops;
    st->sql.db = &sqlite_sql;
    if (!(st->sql.audit_keys = sql_audit_keys_new())) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        free(st);
        return STORE_ERROR;
    }
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "cannot open %s: %s", path,
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(st->db, 5000);
    if (sql_int(&st->sql, "PRAGMA user_version", &version) != STORE_OK) {
        goto out;
    }
    if (version > migrations_count) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg,
                 "%s has schema version %d, newer than this airlockd's %d: use a newer airlockd",
                 path, (int)version, migrations_count);
        goto out;
    }
    if (sqlite_prepare(st, "PRAGMA journal_mode = WAL", 0, NULL, &stmt) != STORE_OK) {
        goto out;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
        snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(stmt, 0));
    }
    sqlite_release(st, stmt);
    if (strcmp(mode, "wal") != 0) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "%s: cannot switch to WAL mode", path);
        goto out;
    }
    if (sqlite3_exec(st->db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", NULL, NULL,
                     NULL) != SQLITE_OK) {
        sqlite_fail(st, "pragma");
        goto out;
    }
    if (version < migrations_count && sqlite_migrate(st, (int)version) != STORE_OK) {
        goto out;
    }
    if (version == 1 && sqlite_audit_chain_legacy(st) != STORE_OK) {
        goto out;
    }
    rc = STORE_OK;
out:
    if (rc != STORE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "%s", st->sql.errmsg);
        sqlite_close(&st->sql.base);
        return rc;
    }
    *ret_store = &st->sql.base;
    return STORE_OK;
}

/* A reader: the same file, query_only (SQLite refuses every write through it), WAL's snapshot
 * isolation between it and the writer, the writer's audit keys (shared) for checkpoints it signs.
 */
static enum store_rc sqlite_open_reader(struct store *s, struct store **ret)
{
    struct sqlite_store *w = sqlite_of(s);
    const char *path = sqlite3_db_filename(w->db, "main");
    struct sqlite_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(w->sql.errmsg, sizeof w->sql.errmsg, "out of memory");
        return STORE_ERROR;
    }
    st->sql.base.ops = &sqlite_ops;
    st->sql.db = &sqlite_sql;
    st->sql.audit_keys = sql_audit_keys_ref(w->sql.audit_keys);
    if (sqlite3_open_v2(path && path[0] ? path : ":memory:", &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(st->db, "PRAGMA query_only = ON; PRAGMA foreign_keys = ON", NULL, NULL,
                     NULL) != SQLITE_OK) {
        snprintf(w->sql.errmsg, sizeof w->sql.errmsg, "sqlite: cannot open a reader: %s",
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        sqlite_close(&st->sql.base);
        return STORE_ERROR;
    }
    sqlite3_busy_timeout(st->db, 5000);
    *ret = &st->sql.base;
    return STORE_OK;
}

enum store_rc store_sqlite_backup(const char *src_path, const char *dest_path, char *errmsg)
{
    sqlite3 *src = NULL;
    sqlite3 *dest = NULL;
    sqlite3_backup *b = NULL;
    enum store_rc rc = STORE_ERROR;
    int created = 0;
    if (access(dest_path, F_OK) == 0) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "%s exists already", dest_path);
        return STORE_ERROR;
    }
    /* never created, never migrated: the copy is of what is there (read-write only because a
     * read-only connection cannot open a WAL database whose -shm is missing) */
    if (sqlite3_open_v2(src_path, &src, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "cannot open %s: %s", src_path,
                 src ? sqlite3_errmsg(src) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(src, 5000);
    created = 1;
    if (sqlite3_open_v2(dest_path, &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "cannot create %s: %s", dest_path,
                 dest ? sqlite3_errmsg(dest) : "out of memory");
        goto out;
    }
    b = sqlite3_backup_init(dest, "main", src, "main");
    if (!b) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "cannot back up %s: %s", src_path, sqlite3_errmsg(dest));
        goto out;
    }
    /* All pages in one step: one read transaction of the source, so the copy is one snapshot
     * (WAL: the writer goes on meanwhile). A busy source is waited for, a while. */
    int step;
    int tries = 0;
    while ((step = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || step == SQLITE_LOCKED) {
        if (++tries > 100) {
            break;
        }
        sqlite3_sleep(50);
    }
    int fin = sqlite3_backup_finish(b);
    b = NULL;
    if (step != SQLITE_DONE || fin != SQLITE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "backup of %s failed: %s", src_path,
                 sqlite3_errstr(step != SQLITE_DONE ? step : fin));
        goto out;
    }
    rc = STORE_OK;
out:
    sqlite3_close(dest);
    sqlite3_close(src);
    if (rc != STORE_OK && created) {
        unlink(dest_path);
    }
    return rc;
}
