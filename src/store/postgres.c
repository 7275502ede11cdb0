/*
 * postgres.c - the PostgreSQL backend of store.h, over libpq. One connection, the same semantics
 * as sqlite.c for every operation (return codes, ordering, CONFLICT for a taken key, NOT_FOUND,
 * transactions), so the one test suite (unit.store) runs on both.
 *
 * - SQL: the operations whose statements read the same as SQLite's are sql.c's, over this file's
 *   pg_exec and pg_walk (sql.h); what is PostgreSQL's own stays here: row locks (FOR UPDATE,
 *   SKIP LOCKED), advisory locks, string_to_array and JSON operators, the casts that tell it a
 *   parameter's type, bytea, the server's clock for leases, LISTEN/NOTIFY, and the page sizes of
 *   long walks. Every statement is a literal, prepared once per connection (PQprepare,
 *   kept by its text's pointer) and run with its values always bound as parameters, never
 *   written into the text; transactions and savepoints, whose texts are made per depth, go as
 *   simple queries. A unique violation is answered by INSERT ... ON CONFLICT DO NOTHING rather
 *   than an error, because an error aborts the whole PostgreSQL transaction where SQLite would
 *   only fail the statement: the caller's transaction stays usable after a CONFLICT, as on
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
 *   The primary key on seq stays behind it: two records never share a number. Every
 *   transaction takes that lock first, at BEGIN: a transaction that changed a row and then
 *   appended would otherwise wait for the lock while another node's, holding it since its first
 *   append, waited for that row (a deadlock PostgreSQL ends by failing one). The writer's
 *   batches append nearly always, so taking it first serialises nothing that was not already.
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
#include <limits.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "buf.h"
#include "migrations.h"
#include "sql.h"
#include "store.h"

#define PG_STMT_CACHE   128 /* more than the distinct statements of sql.c and this file */
#define PG_AUDIT_LOCK   "7310313582143337985" /* pg_advisory_xact_lock key of audit appends */
#define PG_MIGRATE_LOCK "7310313582143337986" /* ... and of migrations */
#define PG_CONNECT_MS   10000                 /* a listener's connect, as connect_timeout */

/* A statement prepared on this connection as "s<n>"; sql is the caller's literal. */
struct pg_cached {
    const char *sql;
    char name[16];
};

struct pg_store {
    struct sql_store sql; /* first: a struct store * is a struct pg_store * */
    PGconn *conn;
    struct pg_cached cache[PG_STMT_CACHE];
    int cached;
    unsigned next_name;
    int depth;        /* transactions open: 1 for BEGIN, one more per savepoint */
    int reader;       /* open_reader's: every session is read-only */
    int need_session; /* a reset connection whose pg_session has not yet succeeded */
    char *url;        /* owned, for listeners; cleansed at close */
};

static struct pg_store *pg_of(struct store *s)
{
    return (struct pg_store *)s;
}

/* The length of libpq's message without its trailing newline. */
static int pg_trimmed(const char *message)
{
    int len = (int)strlen(message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' ')) {
        len--;
    }
    return len;
}

static enum store_rc pg_fail_text(struct pg_store *st, const char *what, const char *message)
{
    snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: %s: %.*s", what, pg_trimmed(message),
             message);
    return STORE_ERROR;
}

static enum store_rc pg_fail(struct pg_store *st, const char *what)
{
    return pg_fail_text(st, what, PQerrorMessage(st->conn));
}

/* Runs a text of statements without parameters (a migration's, the session's, a transaction's),
 * never prepared. */
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
    enum store_rc rc = pg_exec_script(st, "session",
                                      "SET synchronous_commit TO on; SET client_min_messages TO "
                                      "warning; SELECT set_config("
                                      "'idle_in_transaction_session_timeout', '" PG_IDLE_IN_TX
                                      "', false) WHERE current_setting("
                                      "'idle_in_transaction_session_timeout') = '0'");
    if (rc == STORE_OK && st->reader) {
        rc = pg_exec_script(st, "session", "SET default_transaction_read_only TO on");
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
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg,
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

/* Runs sql with n parameters (a NULL value binds NULL), text or, where lengths[i] >= 0 (lengths
 * may be NULL), lengths[i] bytes in binary (bytea's binary form is the bytes), and hands back
 * its result on success (the caller PQclears it). sql is prepared and kept when `keep`, which a
 * text made per call (not a literal) must not be. An error of integrity class 23 (a constraint)
 * is a CONFLICT, as on SQLite. */
static enum store_rc pg_query_params(struct pg_store *st, const char *sql, int n,
                                     const char *const *values, const int *lengths, int keep,
                                     PGresult **ret_res)
{
    int *formats = NULL;
    struct pg_cached *c = NULL;
    PGresult *res = NULL;
    enum store_rc rc = pg_ready(st);
    if (rc != STORE_OK) {
        return rc;
    }
    for (int i = 0; keep && i < st->cached; i++) {
        if (st->cache[i].sql == sql) {
            c = &st->cache[i];
            break;
        }
    }
    if (lengths) {
        formats = calloc((size_t)n, sizeof *formats);
        if (!formats) {
            snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: out of memory");
            return STORE_ERROR;
        }
        for (int i = 0; i < n; i++) {
            formats[i] = lengths[i] >= 0;
        }
    }
    if (keep && !c && st->cached < PG_STMT_CACHE) {
        struct pg_cached *slot = &st->cache[st->cached];
        snprintf(slot->name, sizeof slot->name, "s%u", st->next_name++);
        res = PQprepare(st->conn, slot->name, sql, n, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            rc = pg_fail_text(st, "prepare", PQresultErrorMessage(res));
            PQclear(res);
            free(formats);
            return rc;
        }
        PQclear(res);
        slot->sql = sql;
        c = slot;
        st->cached++;
    }
    res = c ? PQexecPrepared(st->conn, c->name, n, values, lengths, formats, 0)
            : PQexecParams(st->conn, sql, n, NULL, values, lengths, formats, 0);
    free(formats);
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

/* Runs sql, a literal kept prepared, with n text parameters: pg_query_params. */
static enum store_rc pg_query(struct pg_store *st, const char *sql, int n,
                              const char *const *values, PGresult **ret_res)
{
    return pg_query_params(st, sql, n, values, NULL, 1, ret_res);
}

/* sql.h's exec. */
static enum store_rc pg_exec(struct sql_store *q, const char *sql, int n, const char *const *values,
                             int64_t *ret_changes)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(pg_of(&q->base), sql, n, values, &res);
    if (rc == STORE_OK && ret_changes) {
        const char *t = PQcmdTuples(res);
        *ret_changes = t && t[0] ? strtoll(t, NULL, 10) : 0;
    }
    PQclear(res);
    return rc;
}

static const char *pg_row_text(const struct sql_row *row, int col)
{
    return PQgetisnull(row->res, row->i, col) ? NULL : PQgetvalue(row->res, row->i, col);
}

static int64_t pg_row_int(const struct sql_row *row, int col)
{
    return strtoll(PQgetvalue(row->res, row->i, col), NULL, 10); /* "" for NULL: 0 */
}

/* bytea comes as text ("\\x" and hex); its bytes are decoded into row->memory, which the walk
 * frees after the row. */
static const unsigned char *pg_row_blob(const struct sql_row *row, int col, size_t *ret_len)
{
    if (PQgetisnull(row->res, row->i, col)) {
        return NULL;
    }
    PQfreemem(*row->memory);
    *row->memory =
            PQunescapeBytea((const unsigned char *)PQgetvalue(row->res, row->i, col), ret_len);
    return *row->memory;
}

/* sql.h's walk: the whole result is read, then handed on row by row (a callback may nest a call
 * of its own meanwhile). */
static enum store_rc pg_walk(struct sql_store *q, const char *sql, int n, const char *const *values,
                             int one, sql_each_fn *each, void *fn, void *userdata)
{
    PGresult *res = NULL;
    enum store_rc rc = pg_query(pg_of(&q->base), sql, n, values, &res);
    if (rc != STORE_OK) {
        return rc;
    }
    void *memory = NULL;
    struct sql_row row = { pg_row_text, pg_row_int, pg_row_blob, res, 0, &memory };
    int rows = PQntuples(res);
    for (row.i = 0; row.i < rows; row.i++) {
        int stop = each(&row, fn, userdata) != 0;
        PQfreemem(memory);
        memory = NULL;
        if (stop) {
            break;
        }
    }
    PQclear(res);
    return one && rows == 0 ? STORE_NOT_FOUND : STORE_OK;
}

static void pg_close(struct store *s)
{
    if (!s) {
        return;
    }
    struct pg_store *st = pg_of(s);
    PQfinish(st->conn);
    sql_audit_keys_unref(st->sql.audit_keys);
    if (st->url) {
        OPENSSL_cleanse(st->url, strlen(st->url));
        free(st->url);
    }
    free(st);
}

/* ---------------------------------------------------------------- transactions */

/* A statement made here (not a literal: the statement cache keys texts by their pointer). */
static enum store_rc pg_exec_once(struct pg_store *st, const char *sql)
{
    enum store_rc rc = pg_ready(st);
    return rc == STORE_OK ? pg_exec_script(st, "query", sql) : rc;
}

static void pg_tx_rollback(struct store *s);

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
        if (st->depth == 1) { /* the audit lock before any row: the comment at the top */
            rc = pg_exec(&st->sql, "SELECT pg_advisory_xact_lock(" PG_AUDIT_LOCK ")", 0, NULL,
                         NULL);
            if (rc != STORE_OK) {
                pg_tx_rollback(s); /* a failed tx_begin leaves no transaction */
            }
        }
    }
    return rc;
}

static enum store_rc pg_tx_commit(struct store *s)
{
    struct pg_store *st = pg_of(s);
    PGresult *res = NULL;
    char sql[32];
    if (st->depth == 0) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: commit outside a transaction");
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
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg,
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
    st->sql.appended_valid = 0; /* a checkpoint appended before may be undone now */
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

/* ---------------------------------------------------------------- keys */

/* The hash goes as hex, decoded into bytea. */
static enum store_rc pg_key_add(struct store *s, const char *principal, const char *prefix,
                                const unsigned char hash[STORE_HASH_LEN])
{
    struct pg_store *st = pg_of(s);
    char hex[2 * STORE_HASH_LEN + 1];
    char now[32];
    int64_t changes = 0;
    enum store_rc rc = sql_principal_exists(&st->sql, principal);
    if (rc != STORE_OK) {
        return rc;
    }
    for (size_t i = 0; i < STORE_HASH_LEN; i++) {
        snprintf(hex + 2 * i, 3, "%02x", hash[i]);
    }
    sql_now(now);
    const char *args[] = { prefix, principal, hex, now };
    rc = pg_exec(&st->sql,
                 "INSERT INTO api_keys(prefix, principal, hash, created) VALUES ($1, $2, "
                 "decode($3, 'hex'), $4) ON CONFLICT DO NOTHING",
                 4, args, &changes);
    return rc == STORE_OK && changes != 1 ? STORE_CONFLICT : rc;
}

/* ---------------------------------------------------------------- audit */

/* sql.h's audit_insert: the head read afresh; the caller holds PG_AUDIT_LOCK in a
 * (sub)transaction. */
static enum store_rc pg_audit_insert(struct sql_store *q, const char *actor, const char *action,
                                     const char *subject, const char *department,
                                     const char *details_json, int64_t *ret_seq,
                                     char ret_hash[AUDIT_HASH_HEX_LEN + 1])
{
    char prev[AUDIT_HASH_HEX_LEN + 1];
    int64_t last = 0;
    enum store_rc rc = sql_audit_last(q, &last, prev, NULL);
    if (rc == STORE_OK) {
        rc = sql_audit_write(q, last + 1, prev, actor, action, subject, department, details_json,
                             ret_hash);
    }
    if (rc == STORE_CONFLICT) {
        return pg_fail_text(pg_of(&q->base), "audit", "a record with that seq exists");
    }
    if (rc == STORE_OK) {
        *ret_seq = last + 1;
    }
    return rc;
}

/* sql.h's audit_open: a savepoint inside the caller's transaction, a transaction of its own
 * outside one, and the audit lock in it. */
static enum store_rc pg_audit_open(struct sql_store *q, int append, int *ret_own)
{
    struct pg_store *st = pg_of(&q->base);
    (void)append;
    *ret_own = st->depth == 0;
    enum store_rc rc =
            *ret_own ? pg_tx_begin(&q->base) : pg_exec(q, "SAVEPOINT audit_write", 0, NULL, NULL);
    if (rc == STORE_OK) {
        rc = pg_exec(q, "SELECT pg_advisory_xact_lock(" PG_AUDIT_LOCK ")", 0, NULL, NULL);
    }
    return rc;
}

static enum store_rc pg_audit_close(struct sql_store *q, int own, enum store_rc rc)
{
    struct pg_store *st = pg_of(&q->base);
    if (rc == STORE_OK) {
        return own ? pg_tx_commit(&q->base) : pg_exec(q, "RELEASE audit_write", 0, NULL, NULL);
    }
    if (own) {
        pg_tx_rollback(&q->base);
    } else if (PQstatus(st->conn) == CONNECTION_OK) {
        PQclear(PQexec(st->conn, "ROLLBACK TO audit_write; RELEASE audit_write"));
    }
    return rc;
}

/* ---------------------------------------------------------------- the journal */

#define PG_JOURNAL_ROWS  1000 /* rows per INSERT: 9 parameters each, PostgreSQL takes 65535 */
#define PG_JOURNAL_BYTES (16u << 20) /* and answers per INSERT (a message is at most 1 GiB) */

/* sql.h's blob_insert: the bytes bound in binary (bytea), in place. */
static enum store_rc pg_blob_insert(struct sql_store *q, const char *sha256, const void *bytes,
                                    size_t len)
{
    static const char sql[] = "INSERT INTO workspace_blobs(sha256, bytes) VALUES ($1, $2) ON "
                              "CONFLICT DO NOTHING";
    struct pg_store *st = pg_of(&q->base);
    PGresult *res = NULL;
    if (len > INT_MAX) {
        snprintf(q->errmsg, sizeof q->errmsg, "postgres: a workspace blob of %zu bytes", len);
        return STORE_ERROR;
    }
    const char *values[] = { sha256, len ? (const char *)bytes : "" };
    const int lengths[] = { -1, (int)len };
    enum store_rc rc = pg_query_params(st, sql, 2, values, lengths, 1, &res);
    PQclear(res);
    return rc;
}

/* sql.h's journal_insert: one INSERT of the batch's answers (each once, bytea bound in binary)
 * and one of its rows, each a round trip, in statements made for the batch's size (run
 * unprepared: the statement cache keeps literals). */
static enum store_rc pg_journal_insert(struct sql_store *q, const char *run,
                                       const struct store_journal_entry *entries,
                                       const char (*hashes)[65], size_t n, int64_t *ret_inserted)
{
    struct pg_store *st = pg_of(&q->base);
    enum store_rc rc = STORE_OK;
    struct buf sql;
    const char **values = NULL;
    int *lengths = NULL;
    char(*numbers)[3][24] = NULL;
    PGresult *res = NULL;
    int64_t inserted = 0;
    buf_init(&sql, SIZE_MAX);
    size_t rows = 0;
    for (size_t from = 0; from < n && rc == STORE_OK; from += rows) {
        size_t bytes = 0; /* a statement of at least one row, then up to both caps */
        for (rows = 0; from + rows < n && rows < PG_JOURNAL_ROWS &&
                       (rows == 0 || bytes + entries[from + rows].answer_len <= PG_JOURNAL_BYTES);
             rows++) {
            bytes += entries[from + rows].answer_len;
        }
        free(values);
        free(lengths);
        free(numbers);
        values = calloc(1 + 9 * rows, sizeof *values);
        lengths = calloc(1 + 9 * rows, sizeof *lengths);
        numbers = calloc(rows, sizeof *numbers);
        if (!values || !lengths || !numbers) {
            snprintf(q->errmsg, sizeof q->errmsg, "postgres: out of memory");
            rc = STORE_ERROR;
            break;
        }
        /* the answers, each once */
        int p = 0;
        buf_reset(&sql);
        buf_append_str(&sql, "INSERT INTO journal_blobs(sha256, bytes) VALUES ");
        for (size_t i = from; i < from + rows; i++) {
            int again = 0;
            for (size_t j = from; j < i && !again; j++) {
                again = strcmp(hashes[j], hashes[i]) == 0;
            }
            if (again) {
                continue;
            }
            buf_printf(&sql, "%s($%d, $%d)", p ? ", " : "", p + 1, p + 2);
            values[p] = hashes[i];
            lengths[p++] = -1;
            values[p] = entries[i].answer_len ? (const char *)entries[i].answer : "";
            lengths[p++] = (int)entries[i].answer_len;
        }
        buf_append_str(&sql, " ON CONFLICT DO NOTHING");
        if (buf_failed(&sql)) {
            snprintf(q->errmsg, sizeof q->errmsg, "postgres: out of memory");
            rc = STORE_ERROR;
            break;
        }
        rc = pg_query_params(st, sql.data, p, values, lengths, 0, &res);
        PQclear(res);
        res = NULL;
        if (rc != STORE_OK) {
            break;
        }
        /* the rows, the run's id once */
        p = 0;
        values[p++] = run;
        buf_reset(&sql);
        buf_append_str(&sql, "INSERT INTO journal(run, position, call_id, function, "
                             "args_sha256, idempotency_key, kind, sync, clock_ms, "
                             "answer_sha256) VALUES ");
        for (size_t i = from; i < from + rows; i++) {
            const struct store_journal_entry *e = &entries[i];
            char *num = numbers[i - from][0];
            buf_printf(&sql,
                       "%s($1, $%d::bigint, $%d, $%d, $%d, $%d, $%d::integer, $%d::integer, "
                       "$%d::bigint, $%d)",
                       i > from ? ", " : "", p + 1, p + 2, p + 3, p + 4, p + 5, p + 6, p + 7, p + 8,
                       p + 9);
            snprintf(numbers[i - from][0], 24, "%" PRId64, e->position);
            snprintf(numbers[i - from][1], 24, "%d", e->kind);
            snprintf(numbers[i - from][2], 24, "%" PRId64, e->clock_ms);
            values[p++] = num;
            values[p++] = e->call_id;
            values[p++] = e->function;
            values[p++] = e->args_sha256;
            values[p++] = e->idempotency_key;
            values[p++] = numbers[i - from][1];
            values[p++] = e->sync ? "1" : "0";
            values[p++] = numbers[i - from][2];
            values[p++] = hashes[i];
        }
        buf_append_str(&sql, " ON CONFLICT DO NOTHING");
        if (buf_failed(&sql)) {
            snprintf(q->errmsg, sizeof q->errmsg, "postgres: out of memory");
            rc = STORE_ERROR;
            break;
        }
        rc = pg_query_params(st, sql.data, p, values, NULL, 0, &res);
        if (rc == STORE_OK) {
            const char *t = PQcmdTuples(res);
            inserted += t && t[0] ? strtoll(t, NULL, 10) : 0;
        }
        PQclear(res);
        res = NULL;
    }
    buf_done(&sql);
    free(values);
    free(lengths);
    free(numbers);
    if (rc == STORE_OK) {
        *ret_inserted = inserted;
    }
    return rc;
}

/* ---------------------------------------------------------------- runs, nodes */

/* Times of leases are the database server's (ms since the epoch), one clock for every node. */
#define PG_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

static enum store_rc pg_node_beat(struct store *s, const char *id, int64_t lease_ms)
{
    char now[32];
    char lease[24];
    sql_now(now);
    snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *args[] = { id, lease, now };
    return pg_exec(&pg_of(s)->sql,
                   "INSERT INTO nodes(id, heartbeat, lease_ms, started) VALUES ($1, " PG_NOW_MS
                   ", $2::bigint, $3) ON CONFLICT (id) DO UPDATE SET heartbeat = "
                   "excluded.heartbeat, lease_ms = excluded.lease_ms",
                   3, args, NULL);
}

static enum store_rc pg_node_expired(struct store *s, store_node_fn *fn, void *userdata)
{
    return pg_walk(&pg_of(s)->sql,
                   "SELECT id FROM nodes WHERE heartbeat + lease_ms < " PG_NOW_MS " ORDER BY id", 0,
                   NULL, 0, sql_node_each, (void *)fn, userdata);
}

static enum store_rc pg_notify(struct store *s, const char *channel, const char *payload)
{
    const char *args[] = { channel, payload };
    return pg_exec(&pg_of(s)->sql, "SELECT pg_notify($1, $2)", 2, args, NULL);
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
    int len = pg_trimmed(message);
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
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: out of memory");
        return STORE_ERROR;
    }
    pl->base.ops = &pg_listener_ops;
    pl->wake[0] = pl->wake[1] = -1;
    pl->channels = channels;
    snprintf(pl->name, sizeof pl->name, "%s", name);
    snprintf(pl->errmsg, sizeof pl->errmsg, "postgres: listener: not connected");
    pl->url = strdup(st->url);
    if (!pl->url || pipe2(pl->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: cannot make a listener: %s",
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
    SQL_OPS_SESSIONS(SQL_OP_MEMBER) SQL_OPS_SHARED(SQL_OP_MEMBER) SQL_OPS_ADMIN(SQL_OP_MEMBER)
            .tx_begin = pg_tx_begin,
    .tx_commit = pg_tx_commit,
    .tx_rollback = pg_tx_rollback,
    .key_add = pg_key_add,
    .node_beat = pg_node_beat,
    .node_expired = pg_node_expired,
    .notify = pg_notify,
    .listener_new = pg_listener_new,
    /* every query is a round trip of its own: a transaction around reads would add two */
    .read_begin = NULL,
    .read_end = NULL,
    .commit_failure_unknown = 0,
    .open_reader = pg_open_reader,
    SQL_OPS_INBOX(SQL_OP_MEMBER) /* 0019_inbox */
};

/* PostgreSQL's words for sql.c. Several connections (later, nodes) write at once: a row one
 * reads to change is locked (FOR UPDATE) until its transaction ends, so that a second claimer
 * of a continuation waits and then finds it gone, and a takeover's update waits for a node's
 * lock of its run and that node's for the takeover's (whichever commits first, the other sees
 * what it did); nodes claiming queued runs at once each take a different one and none waits
 * for another (SKIP LOCKED). */
static const struct sql_backend pg_sql = {
    .exec = pg_exec,
    .walk = pg_walk,
    .audit_insert = pg_audit_insert,
    .audit_open = pg_audit_open,
    .audit_close = pg_audit_close,
    .journal_insert = pg_journal_insert,
    .blob_insert = pg_blob_insert,
    .run_set_status = "UPDATE runs SET status = $1, outcome = COALESCE($2, outcome), updated = $3 "
                      "WHERE id = $4 AND status = ANY (string_to_array($5::text, '|'))",
    .run_take_continuation = "SELECT continuation FROM runs WHERE id = $1 AND continuation IS NOT "
                             "NULL FOR UPDATE",
    .run_lock_on_node = "SELECT 1 FROM runs WHERE id = $1 AND node = $2 AND status = ANY "
                        "(string_to_array($3::text, '|')) FOR UPDATE",
    .run_claim_queued = "UPDATE runs SET status = 'running', node = $1, updated = $2 WHERE seq = "
                        "(SELECT seq FROM runs WHERE status = 'queued' ORDER BY seq LIMIT 1 FOR "
                        "UPDATE SKIP LOCKED) RETURNING id",
    .call_list = "SELECT run, idempotency_key, function, idempotent, sent, args_sha256, args FROM "
                 "calls_sent WHERE run = $1 ORDER BY sent, idempotency_key",
    .key_lookup = "SELECT principal, encode(hash, 'hex') FROM api_keys WHERE prefix = $1 AND "
                  "revoked IS NULL",
    /* details is always a JSON object (audit_append checks it); json, not jsonb, takes any */
    .audit_search = "SELECT " SQL_AUDIT_COLUMNS " FROM audit WHERE seq > $1::bigint AND ($3::text "
                    "IS NULL OR action = $3) AND ($4::text IS NULL OR subject = $4 OR "
                    "details::json ->> 'run' = $4) AND ($5::text IS NULL OR subject = $5 OR "
                    "details::json ->> 'template' = $5) ORDER BY seq LIMIT $2::bigint",
    /* libpq holds a whole result in memory, and a record may be most of a MiB (a version's
     * source): records are read a few at a time, so that a walk its callback ends early (a page
     * of the export, cut at its size) holds a few of them, not a page of 256 */
    .audit_page = 4,
    .run_page = 64,
    .journal_page = 8,
};

/* ---------------------------------------------------------------- opening */

/* Brings the schema to the last migration, in one transaction under PG_MIGRATE_LOCK; records
 * written before 0002_audit_chain are chained in it. */
static enum store_rc pg_migrate(struct pg_store *st)
{
    PGresult *res = NULL;
    int version = 0;
    char num[16];
    enum store_rc rc = pg_tx_begin(&st->sql.base);
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
    version = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10); /* "" for NULL: 0 */
    if (version > postgres_migrations_count) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg,
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
        rc = sql_audit_chain_legacy(&st->sql);
    }
    snprintf(num, sizeof num, "%d", postgres_migrations_count);
    const char *args[] = { num };
    if (rc == STORE_OK && version < postgres_migrations_count) {
        rc = pg_exec(&st->sql, "DELETE FROM airlock_schema", 0, NULL, NULL);
        if (rc == STORE_OK) {
            rc = pg_exec(&st->sql, "INSERT INTO airlock_schema (version) VALUES ($1)", 1, args,
                         NULL);
        }
    }
    if (rc == STORE_OK) {
        rc = pg_tx_commit(&st->sql.base);
    }
out:
    PQclear(res);
    if (rc != STORE_OK) {
        pg_tx_rollback(&st->sql.base);
    }
    return rc;
}

/* Connects st to url (pg_params with `listener`) and sets up its session; `what` names a
 * connection refused in st's errmsg. */
static enum store_rc pg_connect(struct pg_store *st, const char *url, const char *listener,
                                const char *what)
{
    const char *keys[PG_PARAMS];
    const char *values[PG_PARAMS];
    st->sql.base.ops = &pg_ops;
    st->sql.db = &pg_sql;
    pg_params(url, listener, keys, values);
    st->url = strdup(url);
    st->conn = st->url ? PQconnectdbParams(keys, values, 1) : NULL;
    if (!st->conn) {
        snprintf(st->sql.errmsg, sizeof st->sql.errmsg, "postgres: out of memory");
        return STORE_ERROR;
    }
    PQsetNoticeProcessor(st->conn, pg_notice, NULL);
    if (PQstatus(st->conn) != CONNECTION_OK) {
        return pg_fail(st, what);
    }
    return pg_session(st);
}

enum store_rc store_postgres_open(const char *url, struct store **ret_store, char *errmsg)
{
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        return STORE_ERROR;
    }
    if (!(st->sql.audit_keys = sql_audit_keys_new())) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "out of memory");
        free(st);
        return STORE_ERROR;
    }
    if (pg_connect(st, url, NULL, "cannot connect") != STORE_OK || pg_migrate(st) != STORE_OK) {
        snprintf(errmsg, STORE_ERRMSG_MAX, "%s", st->sql.errmsg);
        pg_close(&st->sql.base);
        return STORE_ERROR;
    }
    *ret_store = &st->sql.base;
    return STORE_OK;
}

/* A reader: a session of its own on the same database, read-only by default (a write through
 * it fails), with the writer's audit keys (shared) for the checkpoints it signs. */
static enum store_rc pg_open_reader(struct store *s, struct store **ret)
{
    struct pg_store *w = pg_of(s);
    struct pg_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(w->sql.errmsg, sizeof w->sql.errmsg, "postgres: out of memory");
        return STORE_ERROR;
    }
    st->reader = 1;
    st->sql.audit_keys = sql_audit_keys_ref(w->sql.audit_keys);
    enum store_rc rc = pg_connect(st, w->url, "airlockd-reader", "cannot connect a reader");
    if (rc != STORE_OK) {
        snprintf(w->sql.errmsg, sizeof w->sql.errmsg, "%s", st->sql.errmsg);
        pg_close(&st->sql.base);
        return rc;
    }
    *ret = &st->sql.base;
    return STORE_OK;
}
