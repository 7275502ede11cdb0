/*
 * sql.h - what the SQLite (sqlite.c) and PostgreSQL (postgres.c) backends share, internal to
 * src/store. Every operation of store.h whose statement reads the same in both dialects is
 * written once in sql.c, over the few primitives a backend gives (struct sql_backend: run a
 * statement, walk its rows, append the next audit record) and the statements that are the
 * dialects' own (the same columns and parameters, other words). Rows are decoded into store.h's
 * structs once too, through a column reader each backend fills (struct sql_row).
 *
 * Statements are literals, in PostgreSQL's placeholder style ($1, $2, ...) for both: SQLite takes
 * "$1" as a named parameter, numbered by first appearance, and sqlite.c binds each by the number
 * in its name. Arguments are text (or NULL), as libpq sends them; SQLite's column affinity stores
 * a number given as text to an INTEGER column as an integer. Both backends keep their prepared
 * statements by the text's pointer, which a literal keeps stable.
 */
#ifndef AIRLOCK_STORE_SQL_H
#define AIRLOCK_STORE_SQL_H

#include <stdint.h>

#include "audit.h"
#include "store.h"

#define SQL_CHECKPOINT_EVERY 1000 /* records: each 1000th is a checkpoint once a key is set */

/* The columns sql_run_each and sql_audit_each decode, in their order. */
#define SQL_RUN_COLUMNS                                                                      \
    "seq, id, COALESCE(template, ''), COALESCE(version, 0), department, principal, status, " \
    "input, source, language, functions, outcome, created, updated"
#define SQL_AUDIT_COLUMNS "seq, time, actor, action, subject, department, details, prev, hash, line"

/* One row of a backend's result, borrowed until the walk's next step. */
struct sql_row {
    const char *(*text)(const struct sql_row *row, int col); /* NULL for SQL NULL */
    int64_t (*int64)(const struct sql_row *row, int col);    /* 0 for SQL NULL */
    void *res;                                               /* sqlite3_stmt * or PGresult * */
    int i;                                                   /* the row of a PGresult */
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
};

/* Every backend's handle starts with this. */
struct sql_store {
    struct store base; /* first: a struct store * is a struct sql_store * */
    const struct sql_backend *db;
    EVP_PKEY *audit_key; /* owned reference; NULL: no checkpoints */
    char errmsg[STORE_ERRMSG_MAX];
};

/* The current time, RFC 3339 UTC with milliseconds. */
void sql_now(char out[32]);
/* STORE_OK when sql (n arguments) finds a row, NOT_FOUND when not. */
enum store_rc sql_exists(struct sql_store *q, const char *sql, int n, const char *const *args);
enum store_rc sql_principal_exists(struct sql_store *q, const char *name);
int sql_run_each(const struct sql_row *row, void *fn, void *userdata);   /* store_run_fn */
int sql_audit_each(const struct sql_row *row, void *fn, void *userdata); /* store_audit_fn */
int sql_node_each(const struct sql_row *row, void *fn, void *userdata);  /* store_node_fn */

/* The audit log's last record: its seq and hash (0 and 64 '0' for an empty log; a record without
 * a hash chains as if it were ""), and with ret_checkpoint whether it is a checkpoint of the
 * record before it. */
enum store_rc sql_audit_head(struct sql_store *q, int64_t *ret_seq,
                             char ret_hash[AUDIT_HASH_HEX_LEN + 1], int *ret_checkpoint);
/* Writes record `seq`, chained to prev, and inserts it, its hash into ret_hash: CONFLICT when
 * the seq is taken. The caller has made sure nobody else appends meanwhile. */
enum store_rc sql_audit_write(struct sql_store *q, int64_t seq, const char *prev, const char *actor,
                              const char *action, const char *subject, const char *department,
                              const char *details_json, char ret_hash[AUDIT_HASH_HEX_LEN + 1]);
/* A checkpoint of (seq, hash), signed now with q's key. */
enum store_rc sql_audit_sign(struct sql_store *q, int64_t seq, const char *hash,
                             struct store_checkpoint *ret);
/* Signs (seq, hash) into *ret and appends the checkpoint record of it (db->audit_insert). */
enum store_rc sql_audit_append_checkpoint(struct sql_store *q, int64_t seq, const char *hash,
                                          struct store_checkpoint *ret);
/* store_ops.audit_checkpoint inside the backend's savepoint or transaction, which keeps other
 * appends out: NOT_FOUND for an empty log. */
enum store_rc sql_audit_checkpoint_in(struct sql_store *q, int append,
                                      struct store_checkpoint *ret);
/* Chains the records written before 0002_audit_chain (no prev, hash or line), in seq order; the
 * caller holds a transaction. */
enum store_rc sql_audit_chain_legacy(struct sql_store *q);

/* The operations both backends put in their store_ops as they are: the contract of each is the
 * store_ops member of the same name (store.h). */
const char *sql_errmsg(struct store *s);
enum store_rc sql_ping(struct store *s);
enum store_rc sql_principal_count(struct store *s, int64_t *ret_count);
enum store_rc sql_principal_create(struct store *s, const char *name, const char *kind);
enum store_rc sql_principal_get(struct store *s, const char *name, store_principal_fn *fn,
                                void *userdata);
enum store_rc sql_principal_list(struct store *s, store_principal_fn *fn, void *userdata);
enum store_rc sql_key_revoke(struct store *s, const char *principal, const char *prefix);
enum store_rc sql_key_list(struct store *s, const char *principal, store_key_fn *fn,
                           void *userdata);
enum store_rc sql_role_grant(struct store *s, const char *principal, const char *role,
                             const char *department);
enum store_rc sql_role_revoke(struct store *s, const char *principal, const char *role,
                              const char *department);
enum store_rc sql_role_list(struct store *s, const char *principal, store_grant_fn *fn,
                            void *userdata);
enum store_rc sql_department_create(struct store *s, const char *name);
enum store_rc sql_department_get(struct store *s, const char *name, store_department_fn *fn,
                                 void *userdata);
enum store_rc sql_department_list(struct store *s, store_department_fn *fn, void *userdata);
enum store_rc sql_department_set_policy(struct store *s, const char *name, const char *autonomy,
                                        int allow_adhoc);
enum store_rc sql_audit_list(struct store *s, int64_t after_seq, int64_t limit, store_audit_fn *fn,
                             void *userdata);
enum store_rc sql_audit_set_key(struct store *s, EVP_PKEY *key);
enum store_rc sql_audit_last_seq(struct store *s, int64_t *ret_seq); /* .audit_head */
enum store_rc sql_template_create(struct store *s, const char *name, const char *department,
                                  const char *description, const char *created_by);
enum store_rc sql_template_get(struct store *s, const char *name, store_template_fn *fn,
                               void *userdata);
enum store_rc sql_template_list(struct store *s, store_template_fn *fn, void *userdata);
enum store_rc sql_version_create(struct store *s, const struct store_version *v,
                                 int64_t *ret_version);
enum store_rc sql_version_get(struct store *s, const char *template_name, int64_t version,
                              store_version_fn *fn, void *userdata);
enum store_rc sql_version_list(struct store *s, const char *template_name, store_version_fn *fn,
                               void *userdata);
enum store_rc sql_version_set_state(struct store *s, const char *template_name, int64_t version,
                                    const char *from_state, const char *to_state, const char *by,
                                    const char *comment);
enum store_rc sql_run_create(struct store *s, const struct store_run *r);
enum store_rc sql_run_get(struct store *s, const char *id, store_run_fn *fn, void *userdata);
enum store_rc sql_run_set_status(struct store *s, const char *id, const char *from,
                                 const char *status, const char *outcome);
enum store_rc sql_run_set_continuation(struct store *s, const char *id, const char *token);
enum store_rc sql_run_take_continuation(struct store *s, const char *id, char **ret_token);
enum store_rc sql_approval_create(struct store *s, const struct store_approval *a);
enum store_rc sql_approval_get(struct store *s, const char *id, store_approval_fn *fn,
                               void *userdata);
enum store_rc sql_approval_list(struct store *s, const char *run, const char *status,
                                store_approval_fn *fn, void *userdata);
enum store_rc sql_approval_decide(struct store *s, const char *id, const char *status,
                                  const char *by, const char *comment);
enum store_rc sql_approval_consume(struct store *s, const char *run);
enum store_rc sql_connector_create(struct store *s, const struct store_connector *c);
enum store_rc sql_connector_get(struct store *s, const char *name, store_connector_fn *fn,
                                void *userdata);
enum store_rc sql_connector_list(struct store *s, store_connector_fn *fn, void *userdata);
enum store_rc sql_node_remove(struct store *s, const char *id);
enum store_rc sql_run_set_node(struct store *s, const char *id, const char *node);
enum store_rc sql_run_list_on_node(struct store *s, const char *node, store_run_fn *fn,
                                   void *userdata);
enum store_rc sql_call_mark(struct store *s, const struct store_call *c);
enum store_rc sql_call_list(struct store *s, const char *run, store_call_fn *fn, void *userdata);
enum store_rc sql_call_clear(struct store *s, const char *run);
enum store_rc sql_run_claim_queued(struct store *s, const char *node, char *ret_id);
enum store_rc sql_execution_put(struct store *s, const struct store_execution *e);
enum store_rc sql_execution_get(struct store *s, const char *run, store_execution_fn *fn,
                                void *userdata);
enum store_rc sql_run_lock_on_node(struct store *s, const char *id, const char *node,
                                   const char *from);

/* Those operations, as members of a store_ops table. */
/* clang-format off */
#define SQL_OPS_SHARED                                  \
    .errmsg = sql_errmsg,                               \
    .ping = sql_ping,                                   \
    .principal_count = sql_principal_count,             \
    .principal_create = sql_principal_create,           \
    .principal_get = sql_principal_get,                 \
    .principal_list = sql_principal_list,               \
    .key_revoke = sql_key_revoke,                       \
    .key_list = sql_key_list,                           \
    .role_grant = sql_role_grant,                       \
    .role_revoke = sql_role_revoke,                     \
    .role_list = sql_role_list,                         \
    .department_create = sql_department_create,         \
    .department_get = sql_department_get,               \
    .department_list = sql_department_list,             \
    .department_set_policy = sql_department_set_policy, \
    .audit_list = sql_audit_list,                       \
    .audit_set_key = sql_audit_set_key,                 \
    .template_create = sql_template_create,             \
    .template_get = sql_template_get,                   \
    .template_list = sql_template_list,                 \
    .version_create = sql_version_create,               \
    .version_get = sql_version_get,                     \
    .version_list = sql_version_list,                   \
    .version_set_state = sql_version_set_state,         \
    .run_create = sql_run_create,                       \
    .run_get = sql_run_get,                             \
    .run_set_status = sql_run_set_status,               \
    .run_set_continuation = sql_run_set_continuation,   \
    .run_take_continuation = sql_run_take_continuation, \
    .approval_create = sql_approval_create,             \
    .approval_get = sql_approval_get,                   \
    .approval_list = sql_approval_list,                 \
    .approval_decide = sql_approval_decide,             \
    .approval_consume = sql_approval_consume,           \
    .connector_create = sql_connector_create,           \
    .connector_get = sql_connector_get,                 \
    .connector_list = sql_connector_list,               \
    .audit_head = sql_audit_last_seq,                   \
    .node_remove = sql_node_remove,                     \
    .run_set_node = sql_run_set_node,                   \
    .run_list_on_node = sql_run_list_on_node,           \
    .call_mark = sql_call_mark,                         \
    .call_list = sql_call_list,                         \
    .call_clear = sql_call_clear,                       \
    .run_claim_queued = sql_run_claim_queued,           \
    .execution_put = sql_execution_put,                 \
    .execution_get = sql_execution_get,                 \
    .run_lock_on_node = sql_run_lock_on_node
/* clang-format on */

#endif
