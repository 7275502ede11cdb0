/*
 * sql.h - what the SQLite (sqlite.c) and PostgreSQL (postgres.c) backends share, internal to
 * src/store. Every operation of store.h whose statement reads the same in both dialects is
 * written once in sql.c, over the few primitives a backend gives (struct sql_backend: run a
 * statement, walk its rows, keep other audit appends out and append the next record) and the
 * statements that are the dialects' own (the same columns and parameters, other words). Rows are
 * decoded into store.h's structs once too, through a column reader each backend fills (struct
 * sql_row).
 *
 * Statements are literals, in PostgreSQL's placeholder style ($1, $2, ...) for both: SQLite takes
 * "$1" as a named parameter, numbered by first appearance, and sqlite.c binds each by the number
 * in its name. Arguments are text (or NULL), as libpq sends them; SQLite's column affinity stores
 * a number given as text to an INTEGER column as an integer. Both backends keep their prepared
 * statements by the text's pointer, which a literal keeps stable.
 */
#ifndef AIRLOCK_STORE_SQL_H
#define AIRLOCK_STORE_SQL_H

#include <pthread.h>
#include <stdint.h>

#include "audit.h"
#include "store.h"

#define SQL_CHECKPOINT_EVERY 1000 /* records: each 1000th is a checkpoint once a key is set */

/* The columns of an audit record, in the order they are decoded. */
#define SQL_AUDIT_COLUMNS "seq, time, actor, action, subject, department, details, prev, hash, line"

/* One row of a backend's result, borrowed until the walk's next step. */
struct sql_row {
    const char *(*text)(const struct sql_row *row, int col); /* NULL for SQL NULL */
    int64_t (*int64)(const struct sql_row *row, int col);    /* 0 for SQL NULL */
    /* A BLOB (bytea) column's bytes and their count; NULL when it is NULL or out of memory */
    const unsigned char *(*blob)(const struct sql_row *row, int col, size_t *ret_len);
    void *res;     /* sqlite3_stmt * or PGresult * */
    int i;         /* the row of a PGresult */
    void **memory; /* PostgreSQL: what blob decoded, freed by the walk after the row */
};

/* Hands a row to fn (a store.h callback such as store_run_fn, or the caller's own): non-zero
 * stops the walk. */
typedef int sql_each_fn(const struct sql_row *row, void *fn, void *userdata);

struct sql_store;

struct sql_backend {
    /* Runs sql with n text arguments ($1..$n; a NULL one is SQL NULL) for its effect;
     * *ret_changes (may be NULL) gets the rows it changed. A violated constraint is CONFLICT. */
    enum store_rc (*exec)(struct sql_store *q, const char *sql, int n, const char *const *args,
                          int64_t *ret_changes);
    /* Runs sql and hands each row to each until it returns non-zero; NOT_FOUND when `one` and
     * no row came. each may call the store again (a callback nests an operation). */
    enum store_rc (*walk)(struct sql_store *q, const char *sql, int n, const char *const *args,
                          int one, sql_each_fn *each, void *fn, void *userdata);
    /* Appends the next audit record, chained to the last one, with the backend's own care for
     * appends from other connections; its seq and hash on success. */
    enum store_rc (*audit_insert)(struct sql_store *q, const char *actor, const char *action,
                                  const char *subject, const char *department,
                                  const char *details_json, int64_t *ret_seq,
                                  char ret_hash[AUDIT_HASH_HEX_LEN + 1]);
    /* Opens what an audit append (append 1) or checkpoint (0) runs in, which keeps other
     * appends out: a savepoint, a transaction of its own, or nothing for one INSERT; *ret_scope
     * is what audit_close ends. */
    enum store_rc (*audit_open)(struct sql_store *q, int append, int *ret_scope);
    /* Ends it: kept when rc is STORE_OK, undone otherwise. rc, or the error of keeping it. */
    enum store_rc (*audit_close)(struct sql_store *q, int scope, enum store_rc rc);

    /* Inserts the journal rows entries[0..n) of `run`, each answer's bytes under hashes[i] (the
     * hex SHA-256 of them) unless a blob has that hash already, and an entry whose (run,
     * position) is taken not at all (ON CONFLICT DO NOTHING); *ret_inserted gets the number of
     * journal rows inserted. The caller has checked the entries. */
    enum store_rc (*journal_insert)(struct sql_store *q, const char *run,
                                    const struct store_journal_entry *entries,
                                    const char (*hashes)[65], size_t n, int64_t *ret_inserted);
    /* Keeps bytes[0..len) in workspace_blobs under `sha256` (their hex SHA-256), unless a blob
     * has that hash already (ON CONFLICT DO NOTHING). */
    enum store_rc (*blob_insert)(struct sql_store *q, const char *sha256, const void *bytes,
                                 size_t len);

    /* The dialect's own statements, for operations that are otherwise the same. */
    /* $1 status, $2 outcome (NULL: keep), $3 now, $4 id, $5 the statuses moved from, "a|b" */
    const char *run_set_status;
    /* $1 id: the continuation of the run, the row held against other claimers until the end of
     * the transaction */
    const char *run_take_continuation;
    /* $1 id, $2 node, $3 "a|b": the row when it is there, held until the end of the transaction */
    const char *run_lock_on_node;
    /* $1 node, $2 now: the oldest queued run set running, RETURNING id */
    const char *run_claim_queued;
    /* $1 run: run, idempotency_key, function, idempotent, sent, args_sha256 in marking order */
    const char *call_list;
    /* $1 prefix: principal and the hash in hex of the active key */
    const char *key_lookup;
    /* $1 after seq, $2 most rows, $3 action, $4 run, $5 template (NULL: any): SQL_AUDIT_COLUMNS
     * of the records store_audit_filter matches, in seq order */
    const char *audit_search;
    /* Rows per query of audit_search and run_list, whose walk holds a whole result (libpq);
     * 0: all in one query. */
    int64_t audit_page;
    int64_t run_page;
    int64_t journal_page; /* ... and of journal_read, whose rows hold answers of up to MiBs */
};

/* Every backend's handle starts with this. */
struct sql_store {
    struct store base; /* first: a struct store * is a struct sql_store * */
    const struct sql_backend *db;
    struct sql_audit_keys *audit_keys; /* shared with the readers opened from it */
    struct store_checkpoint appended;  /* audit_take_appended's, when appended_valid */
    int appended_valid;
    char errmsg[STORE_ERRMSG_MAX];
};

/* The checkpoint keys of a store and of the readers opened from it: one set, replaced whole by
 * audit_set_key and audit_set_next_key from any thread (SIGHUP) while they sign. */
struct sql_audit_keys {
    pthread_mutex_t lock;
    int refs;
    EVP_PKEY *key;                       /* NULL: no checkpoints */
    EVP_PKEY *next;                      /* staged: signs once the log announces its public key */
    char retired[AUDIT_KEY_HEX_LEN + 1]; /* a public key the log announced a successor of */
};
/* A new set (refs 1) for a store that opens its own connection; NULL out of memory. */
struct sql_audit_keys *sql_audit_keys_new(void);
/* One more store shares k (a reader); k. */
struct sql_audit_keys *sql_audit_keys_ref(struct sql_audit_keys *k);
void sql_audit_keys_unref(struct sql_audit_keys *k);
/* Whether a checkpoint key is set: the 1000th record is followed by a checkpoint. */
int sql_audit_signs(struct sql_store *q);

/* The current time, RFC 3339 UTC with milliseconds. */
void sql_now(char out[32]);
enum store_rc sql_principal_exists(struct sql_store *q, const char *name);
/* The number in the first column of sql's one row (no arguments). */
enum store_rc sql_int(struct sql_store *q, const char *sql, int64_t *ret_value);
int sql_node_each(const struct sql_row *row, void *fn, void *userdata); /* store_node_fn */

/* The audit log's last record: its seq and hash (0 and 64 '0' for an empty log; a record without
 * a hash chains as if it were ""), and with ret_checkpoint whether it is a checkpoint of the
 * record before it. */
enum store_rc sql_audit_last(struct sql_store *q, int64_t *ret_seq,
                             char ret_hash[AUDIT_HASH_HEX_LEN + 1], int *ret_checkpoint);
/* Writes record `seq`, chained to prev, and inserts it, its hash into ret_hash: CONFLICT when
 * the seq is taken. The caller has made sure nobody else appends meanwhile. */
enum store_rc sql_audit_write(struct sql_store *q, int64_t seq, const char *prev, const char *actor,
                              const char *action, const char *subject, const char *department,
                              const char *details_json, char ret_hash[AUDIT_HASH_HEX_LEN + 1]);
/* Chains the records written before 0002_audit_chain (no prev, hash or line), in seq order; the
 * caller holds a transaction. */
enum store_rc sql_audit_chain_legacy(struct sql_store *q);

/* The operations both backends put in their store_ops as they are, each member `m` as sql_m:
 * the contract of each is store.h's. SQL_OPS_SHARED(SQL_OP_DECLARE) declares them here, and a
 * backend's table lists them with SQL_OPS_SHARED(SQL_OP_MEMBER). */
/* clang-format off */
#define SQL_OPS_SHARED(X)                                                                          \
    X(errmsg) X(ping) X(principal_count) X(principal_create) X(principal_get) X(principal_list)    \
    X(key_revoke) X(key_lookup) X(key_list) X(role_grant) X(role_revoke) X(role_list)              \
    X(department_create) X(department_get) X(department_list) X(department_set_policy)             \
    X(audit_append) X(audit_list) X(audit_set_key) X(audit_search) X(audit_checkpoint)             \
    X(audit_head) X(template_create) X(template_get) X(template_list) X(version_create)            \
    X(version_get) X(version_list) X(version_set_state) X(run_create) X(run_get) X(run_list)       \
    X(run_set_status) X(run_set_continuation) X(run_take_continuation) X(approval_create)          \
    X(approval_get) X(approval_list) X(approval_decide) X(approval_consume) X(connector_create)    \
    X(connector_get) X(connector_list) X(node_remove) X(run_set_node) X(run_list_on_node)          \
    X(call_mark) X(call_list) X(call_clear) X(run_claim_queued) X(execution_put)                   \
    X(execution_get) X(run_lock_on_node) X(audit_take_appended) X(journal_append)                  \
    X(journal_read) X(journal_copy_prefix) X(run_set_origin) X(run_add_recovered)         \
    X(run_set_fork) X(approval_answer) X(replay_put) X(replay_get) X(mount_create)        \
    X(mount_get) X(mount_list) X(mount_delete) X(version_list_with_workspace) X(blob_get)        \
    X(snapshot_create) X(snapshot_get) X(run_workspace_create) X(run_workspace_get)              \
    X(run_workspace_end) X(run_file_list) X(blob_put) X(sealed_list) X(sealed_set)               \
    X(webhook_create) X(webhook_list) X(webhook_delete) X(webhook_enqueue) X(delivery_next)      \
    X(delivery_claim) X(delivery_settle) X(audit_set_next_key)
/* The inbox (0019_inbox). */
#define SQL_OPS_INBOX(X) X(department_set_approval_ttl) X(approval_pending_list)
#define SQL_OP_DECLARE(m) extern __typeof__(*((struct store_ops *)0)->m) sql_##m;
#define SQL_OP_MEMBER(m)  .m = sql_##m,
/* clang-format on */
SQL_OPS_SHARED(SQL_OP_DECLARE)
/* Since version 16 (0016_principal_admin), listed by both backends as SQL_OPS_SHARED. */
/* clang-format off */
#define SQL_OPS_ADMIN(X)                                                                           \
    X(principal_set_identity) X(principal_set_disabled) X(principal_find_identity)                 \
    X(principal_delete) X(department_rename) X(department_usage) X(department_delete)              \
    X(connector_update) X(connector_delete) X(version_list_approved)
/* clang-format on */
SQL_OPS_ADMIN(SQL_OP_DECLARE)
SQL_OPS_INBOX(SQL_OP_DECLARE)
/* Sessions of the web UI (0017_sessions), shared as well. */
#define SQL_OPS_SESSIONS(X) X(session_create) X(session_get) X(session_delete)
SQL_OPS_SESSIONS(SQL_OP_DECLARE)

#endif
