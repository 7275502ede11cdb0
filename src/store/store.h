/*
 * store.h - everything airlockd keeps, behind one versioned table of operations (the model is
 * sqlite3_vfs / sqlite3_io_methods): a backend fills a struct store_ops, callers go through
 * s->ops and never see SQL. SQLite (sqlite.c) is the embedded default; PostgreSQL (postgres.c)
 * fills the same table, and an in-memory test store could slot in behind it too.
 *
 * Contract for every operation:
 *   - returns STORE_OK, STORE_NOT_FOUND (the named row does not exist), STORE_CONFLICT (a row
 *     with that key exists) or STORE_ERROR (the backend failed; ops->errmsg says why);
 *   - strings are NUL-terminated UTF-8, borrowed for the call; rows handed to a callback are
 *     borrowed until the callback returns; a callback returning non-zero stops the walk (the
 *     operation still returns STORE_OK);
 *   - names (principals, departments) are at most STORE_NAME_MAX bytes;
 *   - a store is one connection, used by one thread at a time; open_reader makes another.
 * Changes and their audit record belong in one transaction (tx_begin ... tx_commit), so that
 * neither is ever kept without the other. Transactions nest: tx_begin inside a transaction
 * opens a savepoint, whose tx_commit keeps its changes for the enclosing transaction and whose
 * tx_rollback undoes them alone (airlockd's writer runs each request's transaction inside the
 * batch it commits). A commit of the outermost transaction is durable when it returns (SQLite:
 * WAL with synchronous=FULL; PostgreSQL: synchronous_commit on), and only then visible to
 * other connections.
 */
#ifndef AIRLOCK_STORE_H
#define AIRLOCK_STORE_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_OPS_VERSION 20
#define STORE_NAME_MAX    64
#define STORE_HASH_LEN    32 /* SHA-256 of an API key */
#define STORE_ERRMSG_MAX  256

enum store_rc {
    STORE_OK = 0,
    STORE_NOT_FOUND = 1,
    STORE_CONFLICT = 2,
    STORE_ERROR = 3,
};

struct store;

struct store_principal {
    const char *name;
    const char *kind; /* "user" | "agent" */
    const char *created;
    /* since version 16 (0016_principal_admin) */
    const char *identity; /* who its identity provider signs in as it (kind user); NULL: none */
    int disabled;         /* 1: its keys and sessions are refused (auth_principal_load) */
};

struct store_grant {
    const char *role;
    const char *department; /* a department's name or "*" */
};

struct store_department {
    const char *name;
    const char *autonomy; /* "autonomous" | "supervised" */
    int allow_adhoc;
    const char *created;
    /* since version 19 (0019_inbox): how long a run may wait for a person (ms) */
    int64_t approval_ttl_ms;
};

struct store_key {
    const char *prefix;
    const char *created;
    const char *revoked; /* NULL while the key is active */
};

struct store_audit {
    int64_t seq;
    const char *time; /* RFC 3339, UTC, milliseconds */
    const char *actor;
    const char *action;
    const char *subject;    /* may be NULL */
    const char *department; /* may be NULL */
    const char *details;    /* a JSON object */
    /* since version 2: the hash chain (docs/audit.md) */
    const char *prev; /* the previous record's hash, 64 lowercase hex */
    const char *hash; /* this record's hash */
    const char *line; /* the record's canonical export line, hash included, no newline */
};

/* Which records audit_search returns; a NULL member matches every record. */
struct store_audit_filter {
    const char *action;        /* action equals */
    const char *run;           /* subject or details.run equals */
    const char *template_name; /* subject or details.template equals */
};

/* A signed checkpoint of one record (docs/audit.md). */
struct store_checkpoint {
    int64_t seq;
    char hash[65];
    char time[32]; /* when it was signed */
    char public_key[65];
    char signature[129];
};

typedef int store_principal_fn(void *userdata, const struct store_principal *p);
typedef int store_grant_fn(void *userdata, const struct store_grant *g);
typedef int store_department_fn(void *userdata, const struct store_department *d);
typedef int store_key_fn(void *userdata, const struct store_key *k);
typedef int store_audit_fn(void *userdata, const struct store_audit *a);

/* Templates (0003). */
struct store_template {
    const char *name;
    const char *department;
    const char *description;
    const char *created;
    const char *created_by;
};

/* A template version. Content (source .. limits, digest) is fixed at creation; the state and
 * its who/when columns change through version_set_state. Times are RFC 3339 UTC; a who/when
 * pair and its comment are NULL until that state is reached. */
struct store_version {
    const char *template_name;
    int64_t version;        /* 1, 2, 3... per template */
    const char *department; /* the template's */
    const char *state;      /* "draft" | "submitted" | "approved" | "rejected" | "revoked" */
    const char *source;
    const char *language;     /* "js" | "ts" */
    const char *input_schema; /* JSON text */
    const char *functions;    /* JSON array of "connector.fn" */
    const char *autonomy;     /* "autonomous" | "supervised" */
    const char *limits;       /* JSON object */
    const char *digest;       /* "sha256:" + 64 hex */
    const char *author;
    const char *created;
    const char *approved_by, *approved; /* NULL until approved */
    const char *approve_comment;
    const char *submitted_by, *submitted;
    const char *rejected_by, *rejected, *reject_comment;
    const char *revoked_by, *revoked, *revoke_reason;
    /* since version 14 (0014_mounts): the workspace manifest, a JSON object (RFC 8785) covered by
     * the digest; NULL when the version has none */
    const char *workspace;
};

typedef int store_template_fn(void *userdata, const struct store_template *t);
typedef int store_version_fn(void *userdata, const struct store_version *v);

/* A run (0004_runs). Template runs name their template and version; an ad-hoc run has
 * template "" and version 0 and keeps its own source, language and functions. */
struct store_run {
    int64_t seq; /* the row's order, the cursor of run_list */
    const char *id;
    const char *template_name;
    int64_t version;
    const char *department;
    const char *principal;
    const char *status; /* queued running awaiting_approval completed failed cancelled denied */
    const char *input;  /* JSON */
    const char *source; /* ad-hoc only; NULL otherwise */
    const char *language;
    const char *functions; /* ad-hoc only: a JSON array of "connector.fn" */
    const char *outcome;   /* JSON object {value|error, console, stats}; NULL before one */
    const char *created;
    const char *updated;
    /* since version 10 (0010_journal): where a replay from the journal starts, run_set_origin */
    const char *seed;  /* the guest's random seed, 16 lowercase hex digits; NULL until set */
    int64_t clock_ms;  /* the guest clock's start, ms since the epoch; 0 until set */
    int64_t recovered; /* times the run was recovered from its journal (run_add_recovered) */
    /* since version 11 (0011_fork): a fork's original and the call it went live from */
    const char *forked_from; /* NULL for a run that is no fork */
    int64_t at_call;         /* 0 for a run that is no fork */
};

/* Which runs run_list walks; a NULL or 0 member matches every run. */
struct store_run_filter {
    const char *template_name;
    const char *status;
    const char *principal;
    int64_t after_seq; /* runs with seq > after_seq */
};

/* An approval: of a whole run (kind "run", supervised mode), of one sensitive call
 * ("host_call": its interruption id, function and boundary-JSON args), or of a call in doubt
 * ("in_doubt", since version 12: a call a dead execution sent whose answer is not journaled). */
struct store_approval {
    const char *id;
    const char *run;
    const char *kind;
    const char *interruption; /* host_call only */
    const char *function;
    const char *args;
    const char *status; /* pending approved denied cancelled */
    const char *requested_by;
    const char *department;
    const char *template_name; /* "" for an ad-hoc run */
    int64_t version;
    const char *created;
    const char *decided_by; /* NULL while pending */
    const char *decided;
    const char *comment;
    int consumed; /* its decision has gone into a resume of the run */
    /* since version 12 (0012_in_doubt), in_doubt only (NULL or 0 for the other kinds) */
    const char *connector;       /* the call's connector */
    const char *sent;            /* when it was marked sent (RFC 3339) */
    const char *idempotency_key; /* the key it was sent under */
    int64_t call_seq;            /* the guest's call id (host_call too, when known; else 0) */
    const char *args_sha256;     /* 64 lowercase hex: SHA-256 of its argument bytes */
    const char *result;          /* status answered: the value it returns (boundary JSON) */
    /* since version 19 (0019_inbox): the line of the run's source whose call it holds (host_call;
     * al_call_line), 0 when not known */
    int64_t line;
};

typedef int store_run_fn(void *userdata, const struct store_run *r);
typedef int store_approval_fn(void *userdata, const struct store_approval *a);

/* A connector (0005_connectors). The secret and the headers are sealed by the caller
 * (secretbox.h); the store keeps the text it is given. */
struct store_connector {
    const char *name;
    const char *department;
    const char *url;
    const char *signing_secret_sealed;
    const char *headers_sealed; /* a sealed JSON object of header name -> value */
    const char *header_names;   /* a JSON array of the header names, plain */
    const char *functions;      /* a JSON object: function name -> its definition */
    int64_t timeout_ms;
    const char *created;    /* set by the store on create; ignored there */
    const char *created_by; /* the principal that registered it */
};

typedef int store_connector_fn(void *userdata, const struct store_connector *c);

/* A mount (0014_mounts): storage a workspace manifest names. Kind "local" has path (NULL
 * otherwise); kind "s3" has endpoint, bucket, region, access_key_id and secret_sealed (the
 * secret access key, sealed by the caller: secretbox.h), NULL otherwise. */
struct store_mount {
    const char *name;
    const char *department;
    const char *kind; /* "local" | "s3" */
    const char *path;
    const char *endpoint;
    const char *bucket;
    const char *region;
    const char *access_key_id;
    const char *secret_sealed;
    const char *created;    /* set by the store on create; ignored there */
    const char *created_by; /* the principal that registered it */
};

typedef int store_mount_fn(void *userdata, const struct store_mount *m);

/* A connector call a run's execution sent (0006_nodes): marked before it leaves, forgotten once
 * that execution's end or wait is recorded, so what is left of a dead node is in doubt. */
struct store_call {
    const char *run;
    const char *idempotency_key;
    const char *function;    /* "connector.fn" */
    int idempotent;          /* the connector marks the function idempotent */
    const char *sent;        /* set by the store on call_mark; ignored there */
    const char *args_sha256; /* hex SHA-256 of the call's argument bytes (0007_retry) */
    /* since version 12 (0012_in_doubt): the arguments (boundary JSON), kept for a function not
     * marked idempotent (a person is shown them if the call is left in doubt); NULL otherwise */
    const char *args;
};

/* What a run's execution in flight started from (0007_retry), with several nodes: kept until
 * that execution's end or wait is recorded (call_clear), so that a node taking a dead node's
 * run over can execute it again from the same point. */
struct store_execution {
    const char *run;
    const char *resume;      /* the continuation it resumed from; NULL: from the run's input */
    const char *resolutions; /* JSON array of {"interruption","approved","comment"}; or NULL */
    int64_t clock_ms;        /* where the guest clock of a start from the input starts */
    int64_t attempt;         /* 0 for the first execution, +1 per takeover */
};
typedef int store_execution_fn(void *userdata, const struct store_execution *e);

typedef int store_call_fn(void *userdata, const struct store_call *c);

/* Durable runs (0010_journal, docs/server.md "Durable runs"): what a journal entry's answer was. */
enum store_journal_kind {
    STORE_JOURNAL_VALUE = 0,      /* a value */
    STORE_JOURNAL_THROW = 1,      /* a throw (the guest sees an Error) */
    STORE_JOURNAL_THROW_TYPE = 2, /* a throw of a TypeError */
};

/* One answered connector call of a run: its answer exactly as the guest was given it, at its
 * place in the order answers reached the guest. */
struct store_journal_entry {
    int64_t position;            /* 1, 2, 3...: the answer's place in the delivery order */
    const char *call_id;         /* the call's id within the run */
    const char *function;        /* "connector.fn" */
    const char *args_sha256;     /* 64 lowercase hex: SHA-256 of the call's argument bytes */
    const char *idempotency_key; /* may be NULL */
    int kind;                    /* enum store_journal_kind */
    int sync;                    /* 1: the call was synchronous */
    int64_t clock_ms;            /* the guest clock when the answer was delivered */
    const unsigned char *answer; /* answer_len bytes, any bytes (NULs, not UTF-8) */
    size_t answer_len;
    const char *answer_sha256; /* journal_read: 64 lowercase hex of answer; append ignores it */
};
typedef int store_journal_fn(void *userdata, const struct store_journal_entry *e);
typedef int store_node_fn(void *userdata, const char *id);

/* A submitted version's replay against recent runs (0013_replay, docs/server.md "Replay before
 * approval"). */
struct store_replay {
    const char *template_name;
    int64_t version;
    int64_t against;     /* the approved version whose runs were replayed; 0: none */
    const char *result;  /* a JSON object, as GET .../replay answers it */
    const char *created; /* set by the store on replay_put; ignored there */
};
typedef int store_replay_fn(void *userdata, const struct store_replay *r);

/* Workspaces on runs (0015_workspaces, docs/server.md "Workspaces"). Bytes are kept once under
 * the hex SHA-256 of them (64 lowercase hex digits) in workspace_blobs. */
typedef int store_blob_fn(void *userdata, const unsigned char *bytes, size_t len);

/* An uploaded workspace tar (POST /v1/snapshots): its owner may start runs of its department
 * from it. */
struct store_snapshot {
    const char *id; /* "snap_" + 32 hex */
    const char *principal;
    const char *department;
    const char *sha256; /* of the tar, a blob */
    int64_t bytes;
    const char *created;
};
typedef int store_snapshot_fn(void *userdata, const struct store_snapshot *s);

/* What a run with a workspace rebuilds it from, and what it left. */
struct store_run_workspace {
    const char *run;
    const char *manifest_sha256; /* the manifest (JSON) it runs with, a blob */
    const char *start_sha256;    /* the tar replacing the manifest's inline entries; NULL: none */
    const char *end_sha256;      /* its workspace at its end, a tar; NULL until it completed */
};
typedef int store_run_workspace_fn(void *userdata, const struct store_run_workspace *w);

/* One of a run's outputs: a file under its manifest's outputs at its end. */
struct store_run_file {
    const char *run;
    const char *path; /* relative to the workspace's root */
    int64_t size;
    const char *sha256; /* of its bytes, a blob */
    const char *mount;  /* the mount it was written back to; NULL when none */
    const char *key;    /* ... and its object key there */
};
typedef int store_run_file_fn(void *userdata, const struct store_run_file *f);
/* A sealed value (sealed_list): key and sealed borrowed for the call. */
typedef int store_sealed_fn(void *userdata, const char *key, const char *sealed);

/* A webhook (0018_webhooks): where airlockd POSTs the events an admin subscribed to. */
struct store_webhook {
    const char *id;            /* "wh_" and hex */
    const char *url;           /* http(s), checked as a connector's */
    const char *events;        /* the event types, a JSON array of strings */
    const char *department;    /* a department's name, or "*" for every event */
    const char *format;        /* "json" | "slack" */
    const char *secret_sealed; /* its signing secret, sealed (secretbox.h) */
    const char *created;       /* set by the store on create; ignored there */
    const char *created_by;
};
typedef int store_webhook_fn(void *userdata, const struct store_webhook *w);

/* One event for one webhook, claimed by a node's delivery thread. */
struct store_delivery {
    int64_t seq;
    const char *event; /* the event's id, "evt_" and hex: the same on every attempt */
    const char *type;
    const char *body; /* the event as JSON (docs/webhooks.md) */
    int64_t attempts; /* this one included */
    int64_t first_ms; /* when the event was written, ms since the epoch */
    struct store_webhook webhook;
};
typedef int store_delivery_fn(void *userdata, const struct store_delivery *d);

/* What names a department (0016_principal_admin, department_usage): a department is empty when
 * every count is 0. */
struct store_department_usage {
    int64_t templates;
    int64_t connectors;
    int64_t mounts;
    int64_t grants;    /* role grants in it */
    int64_t runs;      /* runs of it, in any state */
    int64_t snapshots; /* uploaded workspace snapshots of it */
    int64_t webhooks;  /* webhooks notified of its events */
};

/* Wake-ups between nodes (since version 6): the channels a node listens on, each payload a run's
 * id. A notification is a hint, never a record: it is lost when no listener is connected, so a
 * listener looks at the store itself after each (re)connect. */
#define STORE_CHANNEL_QUEUE "airlock_queue" /* a run became queued: claim */
#define STORE_CHANNEL_CANCEL                                            \
    "airlock_cancel" /* a run was cancelled in the store: look at yours \
                      */

struct store_listener;

/* A notification, borrowed until the callback returns; its return value is ignored. */
typedef void store_notify_fn(void *userdata, const char *channel, const char *payload);

/* A connection of its own that listens on channels (PostgreSQL: LISTEN on a session that does
 * nothing else). Used by one thread, but for wake, which any thread may call at any time. */
struct store_listener_ops {
    /* Connects (again, after a loss) and listens on every channel it was made with, without
     * blocking past a wake or the backend's connect timeout. STORE_OK when listening;
     * STORE_ERROR otherwise (errmsg says why; woken: "interrupted"), not connected then. */
    enum store_rc (*connect)(struct store_listener *l);
    /* Waits up to timeout_ms (or until woken) and hands each notification that arrived to fn.
     * STORE_OK on a notification, a wake or the timeout (not connected: it only waits);
     * STORE_ERROR when the connection was lost (not connected from then on). */
    enum store_rc (*wait)(struct store_listener *l, int64_t timeout_ms, store_notify_fn *fn,
                          void *userdata);
    /* Ends the current or next wait (or connect) at once; async-signal-safe. */
    void (*wake)(struct store_listener *l);
    /* The last STORE_ERROR's message; never NULL. */
    const char *(*errmsg)(struct store_listener *l);
    void (*free)(struct store_listener *l); /* NULL-safe; closes the connection */
};

/* Every listener starts with this. */
struct store_listener {
    const struct store_listener_ops *ops;
};

/* A session of the web UI (0017_sessions). */
struct store_session {
    const char *token_sha256; /* hex SHA-256 of the cookie's token */
    const char *principal;
    const char *identity; /* what the identity provider vouched for */
    const char *grants;   /* JSON [["role","department"],...]: group_roles' at sign-in */
    const char *created;
    int64_t expires_ms; /* ms since the epoch */
};
typedef int store_session_fn(void *userdata, const struct store_session *sess);

struct store_ops {
    int version;      /* STORE_OPS_VERSION; later versions only append members */
    const char *name; /* "sqlite" | "postgres" */

    void (*close)(struct store *s); /* NULL-safe; frees s */
    /* The last STORE_ERROR's message; never NULL. */
    const char *(*errmsg)(struct store *s);
    /* STORE_OK while the database answers a query. */
    enum store_rc (*ping)(struct store *s);

    enum store_rc (*tx_begin)(struct store *s);
    /* A failed commit leaves the transaction (or savepoint) for tx_rollback to end. */
    enum store_rc (*tx_commit)(struct store *s);
    void (*tx_rollback)(struct store *s); /* harmless outside a transaction */

    enum store_rc (*principal_count)(struct store *s, int64_t *ret_count);
    enum store_rc (*principal_create)(struct store *s, const char *name, const char *kind);
    /* NOT_FOUND when no such principal; otherwise fn sees it once. */
    enum store_rc (*principal_get)(struct store *s, const char *name, store_principal_fn *fn,
                                   void *userdata);
    enum store_rc (*principal_list)(struct store *s, store_principal_fn *fn, void *userdata);

    /* CONFLICT when the prefix is taken, NOT_FOUND when the principal does not exist. */
    enum store_rc (*key_add)(struct store *s, const char *principal, const char *prefix,
                             const unsigned char hash[STORE_HASH_LEN]);
    /* NOT_FOUND when the principal has no active key with that prefix. */
    enum store_rc (*key_revoke)(struct store *s, const char *principal, const char *prefix);
    /* The active key with this prefix: its principal's name (STORE_NAME_MAX + 1 bytes) and hash.
     * NOT_FOUND for an unknown or revoked prefix. */
    enum store_rc (*key_lookup)(struct store *s, const char *prefix, char *ret_principal,
                                unsigned char ret_hash[STORE_HASH_LEN]);
    enum store_rc (*key_list)(struct store *s, const char *principal, store_key_fn *fn,
                              void *userdata);

    /* CONFLICT when granted already; NOT_FOUND when the principal does not exist. */
    enum store_rc (*role_grant)(struct store *s, const char *principal, const char *role,
                                const char *department);
    enum store_rc (*role_revoke)(struct store *s, const char *principal, const char *role,
                                 const char *department);
    enum store_rc (*role_list)(struct store *s, const char *principal, store_grant_fn *fn,
                               void *userdata);

    /* A new department starts {"autonomy":"autonomous","allow_adhoc":false}. */
    enum store_rc (*department_create)(struct store *s, const char *name);
    enum store_rc (*department_get)(struct store *s, const char *name, store_department_fn *fn,
                                    void *userdata);
    enum store_rc (*department_list)(struct store *s, store_department_fn *fn, void *userdata);
    enum store_rc (*department_set_policy)(struct store *s, const char *name, const char *autonomy,
                                           int allow_adhoc);

    /* Appends one audit record with the next seq and the current time, chained to the last
     * record (prev = its hash, 64 '0' for the first) and stored with its canonical line, all in
     * one savepoint, so inside tx_begin it commits or rolls back with the change it records.
     * subject and department may be NULL (subject is "" in the record); details_json must be a
     * JSON object (STORE_ERROR otherwise); what in it is not I-JSON is recorded as
     * audit_details_total makes it (a lone surrogate as U+FFFD, with the digest of the member
     * as it was), never refused. With a key set (audit_set_key), a record whose seq
     * is 999 mod 1000 is followed by a checkpoint of it, so every 1000th record is a
     * checkpoint. */
    enum store_rc (*audit_append)(struct store *s, const char *actor, const char *action,
                                  const char *subject, const char *department,
                                  const char *details_json, int64_t *ret_seq);
    /* Records with seq > after_seq in order, at most limit of them. */
    enum store_rc (*audit_list)(struct store *s, int64_t after_seq, int64_t limit,
                                store_audit_fn *fn, void *userdata);

    /* Since version 2. */
    /* The Ed25519 private key of checkpoints (the store keeps a reference; NULL: none), for s and
     * the readers opened from it; since version 20 any thread may replace it while they sign
     * (SIGHUP). A key the log has announced a successor of (next_public_key) signs nothing: when
     * the next key (audit_set_next_key) is not the log's key either, the 1000th record goes
     * without its checkpoint and audit_checkpoint answers CONFLICT, so a node that has not
     * taken a rotation yet never signs a checkpoint the chain of keys refuses. */
    enum store_rc (*audit_set_key)(struct store *s, EVP_PKEY *key);
    /* As audit_list, only the records the filter matches (filter may be NULL). */
    enum store_rc (*audit_search)(struct store *s, int64_t after_seq, int64_t limit,
                                  const struct store_audit_filter *filter, store_audit_fn *fn,
                                  void *userdata);
    /* Signs the last record. With append, first seals the log: unless the last record is already
     * a checkpoint of the one before it, a checkpoint of the last record is appended and that is
     * what is signed. NOT_FOUND for an empty log; STORE_ERROR without a key; CONFLICT when the
     * key is one the log has retired (audit_set_key), errmsg saying so. */
    enum store_rc (*audit_checkpoint)(struct store *s, int append, struct store_checkpoint *ret);

    /* Templates (0003), since version 3. */
    /* CONFLICT when the name is taken, NOT_FOUND when the department does not exist. */
    enum store_rc (*template_create)(struct store *s, const char *name, const char *department,
                                     const char *description, const char *created_by);
    /* NOT_FOUND when no such template; otherwise fn sees it once. */
    enum store_rc (*template_get)(struct store *s, const char *name, store_template_fn *fn,
                                  void *userdata);
    /* Every template, by name. */
    enum store_rc (*template_list)(struct store *s, store_template_fn *fn, void *userdata);
    /* A new version of v->template_name numbered one past its last, in state "draft", with
     * v's source, language, input_schema, functions, autonomy, limits, digest and author (the
     * other members are ignored). *ret_version gets its number. NOT_FOUND for no template. */
    enum store_rc (*version_create)(struct store *s, const struct store_version *v,
                                    int64_t *ret_version);
    /* version 0: the newest approved version (NOT_FOUND when none); otherwise that version
     * (NOT_FOUND when it or the template does not exist). fn sees it once. */
    enum store_rc (*version_get)(struct store *s, const char *template_name, int64_t version,
                                 store_version_fn *fn, void *userdata);
    /* The template's versions by number (none for an unknown template). */
    enum store_rc (*version_list)(struct store *s, const char *template_name, store_version_fn *fn,
                                  void *userdata);
    /* Moves the version from from_state to to_state ("submitted", "approved", "rejected" or
     * "revoked"), recording now and `by` in that state's columns and `comment` (may be NULL) as
     * its comment or reason. Atomic: CONFLICT when the state is not from_state (so a race cannot
     * approve a revoked version), NOT_FOUND when there is no such version. */
    enum store_rc (*version_set_state)(struct store *s, const char *template_name, int64_t version,
                                       const char *from_state, const char *to_state, const char *by,
                                       const char *comment);

    /* Runs and approvals (0004_runs). */
    /* Creates a run from r's id, template_name, version, department, principal, status, input,
     * source, language, functions and created (NULL: now; the rest is the store's). CONFLICT
     * for a taken id. */
    enum store_rc (*run_create)(struct store *s, const struct store_run *r);
    enum store_rc (*run_get)(struct store *s, const char *id, store_run_fn *fn, void *userdata);
    /* Runs in seq order; the callback stops the walk. */
    enum store_rc (*run_list)(struct store *s, const struct store_run_filter *filter,
                              store_run_fn *fn, void *userdata);
    /* Moves a run whose status is one of `from` ("a|b|c") to `status`, with `outcome` (NULL
     * keeps the stored one). CONFLICT when its status is not among `from`. */
    enum store_rc (*run_set_status)(struct store *s, const char *id, const char *from,
                                    const char *status, const char *outcome);
    /* Keeps (token) or drops (NULL) the continuation of a run. */
    enum store_rc (*run_set_continuation)(struct store *s, const char *id, const char *token);
    /* Claims the continuation: *ret_token (malloc'd, the caller frees) and the row's is NULL
     * afterwards, so a continuation is resumed at most once (call it inside tx_begin ... tx_commit,
     * with the change that resumes). NOT_FOUND when there is none. */
    enum store_rc (*run_take_continuation)(struct store *s, const char *id, char **ret_token);
    /* Creates a pending approval from a's id, run, kind, interruption, function, args,
     * requested_by, department, template_name and version, and (since version 12) connector,
     * sent, idempotency_key, call_seq and args_sha256. */
    enum store_rc (*approval_create)(struct store *s, const struct store_approval *a);
    enum store_rc (*approval_get)(struct store *s, const char *id, store_approval_fn *fn,
                                  void *userdata);
    /* Approvals of `run` (NULL: all) with `status` (NULL: any), newest first. */
    enum store_rc (*approval_list)(struct store *s, const char *run, const char *status,
                                   store_approval_fn *fn, void *userdata);
    /* Decides a pending approval: status approved, denied or cancelled. CONFLICT when it is
     * not pending any more (decided at most once). */
    enum store_rc (*approval_decide)(struct store *s, const char *id, const char *status,
                                     const char *by, const char *comment);
    /* Marks the decided approvals of a run consumed (their resolutions resumed it): approved,
     * denied and (since version 12) answered ones. */
    enum store_rc (*approval_consume)(struct store *s, const char *run);

    /* Connectors (0005_connectors). */
    /* CONFLICT when the name is taken, NOT_FOUND when c->department does not exist. */
    enum store_rc (*connector_create)(struct store *s, const struct store_connector *c);
    /* NOT_FOUND when no such connector; otherwise fn sees it once. */
    enum store_rc (*connector_get)(struct store *s, const char *name, store_connector_fn *fn,
                                   void *userdata);
    /* Every connector, by name. */
    enum store_rc (*connector_list)(struct store *s, store_connector_fn *fn, void *userdata);

    /* Metrics */
    /* The seq of the last audit record (0 for an empty log): how many records were appended. */
    enum store_rc (*audit_head)(struct store *s, int64_t *ret_seq);

    /* Several nodes (0006_nodes), since version 5. */
    /* Node `id` is alive now (the store's clock), for lease_ms from now: creates or renews. */
    enum store_rc (*node_beat)(struct store *s, const char *id, int64_t lease_ms);
    /* The nodes whose lease has run out (last heartbeat + lease_ms before now), each id once. */
    enum store_rc (*node_expired)(struct store *s, store_node_fn *fn, void *userdata);
    /* Forgets a node (NOT_FOUND when there is no such node). */
    enum store_rc (*node_remove)(struct store *s, const char *id);
    /* Names the node that executes run `id` (NOT_FOUND when no such run). */
    enum store_rc (*run_set_node)(struct store *s, const char *id, const char *node);
    /* The runs with status running executed by `node` (NULL: by no recorded node), in seq
     * order; with a node, also those cancelled while it executed them whose end it has not
     * recorded yet (they keep an execution row until then: api_runs.c). */
    enum store_rc (*run_list_on_node)(struct store *s, const char *node, store_run_fn *fn,
                                      void *userdata);
    /* Marks a call sent (c->run, idempotency_key, function, idempotent, args_sha256, args). A key
     * marked already for that run with the same function and argument digest is fine (a
     * retried execution sending the same call again); with another one, CONFLICT. */
    enum store_rc (*call_mark)(struct store *s, const struct store_call *c);
    /* The calls marked for `run`, in the order they were marked. */
    enum store_rc (*call_list)(struct store *s, const char *run, store_call_fn *fn, void *userdata);
    /* Forgets the marks of `run` and its execution row (none is fine). */
    enum store_rc (*call_clear)(struct store *s, const char *run);
    /* The queue: takes the oldest run with status queued that no other transaction is taking
     * (PostgreSQL: FOR UPDATE SKIP LOCKED), sets it running on `node` and copies its id to
     * ret_id (STORE_NAME_MAX + 1 bytes). Inside tx_begin: a rollback puts it back. NOT_FOUND
     * when nothing is queued. */
    enum store_rc (*run_claim_queued)(struct store *s, const char *node, char *ret_id);

    /* Retrying a dead node's run (0007_retry). */
    /* Creates or replaces the execution row of e->run. */
    enum store_rc (*execution_put)(struct store *s, const struct store_execution *e);
    /* The execution row of `run`; NOT_FOUND when it has none. */
    enum store_rc (*execution_get)(struct store *s, const char *run, store_execution_fn *fn,
                                   void *userdata);

    /* Wake-ups (since version 6); both NULL for a backend of one node (SQLite). */
    /* Sends `payload` (at most 7999 bytes) on `channel` to every listener when the current
     * transaction commits, never when it rolls back; outside a transaction, at once. */
    enum store_rc (*notify)(struct store *s, const char *channel, const char *payload);
    /* A listener on the same database for the NULL-terminated `channels` (which must outlive
     * it), not yet connected (its connect does that), named application_name `name` where the
     * backend shows one. The store keeps nothing of it: free it before or after the store. */
    enum store_rc (*listener_new)(struct store *s, const char *name, const char *const *channels,
                                  struct store_listener **ret);
    /* Fencing (since version 6). */
    /* Inside tx_begin: OK when run `id` is on `node` with a status in `from` ("running", or
     * "running|cancelled" for a cancelled one whose end is not yet recorded), its row then
     * locked until the transaction ends (PostgreSQL: FOR UPDATE), so that no takeover changes
     * it meanwhile; CONFLICT when it is not (cancelled, taken over, queued again, ended, no
     * such run). */
    enum store_rc (*run_lock_on_node)(struct store *s, const char *id, const char *node,
                                      const char *from);

    /* One snapshot (since version 7); both NULL where every query is its own (PostgreSQL).
     * The reads between read_begin and read_end see the database as it was at the first; a
     * write, tx_begin or an audit append in between ends the snapshot first, and then runs as
     * it would without it - except from inside a walk's callback, whose read still holds the
     * snapshot: no caller writes there. read_end outside a snapshot does nothing. */
    enum store_rc (*read_begin)(struct store *s);
    enum store_rc (*read_end)(struct store *s);

    /* Since version 8: 1 when a failed commit of the outermost transaction may still have
     * reached the disk (SQLite: the WAL was written and its fsync failed, and recovery may find
     * it whole), so that nobody can know what was kept; 0 when a failed commit kept nothing
     * (PostgreSQL: the server answered ROLLBACK, or the transaction died with its session). */
    int commit_failure_unknown;

    /* Readers (since version 8). */
    /* A new connection to the same database for another thread's reads, with s's audit key:
     * it shares no state with s (both may be used at once, each by its own thread), and every
     * write through it fails (SQLite: query_only; PostgreSQL: read-only transactions). Freed
     * with its close, before or after s. */
    enum store_rc (*open_reader)(struct store *s, struct store **ret);

    /* Since version 9: the newest checkpoint record appended through s (every 1000th record,
     * an export's seal) since the last call, forgotten by then: for the caller that has just
     * committed, to keep it outside the database too. NOT_FOUND when there is none, or when a
     * rollback (of any savepoint) came after it, so a checkpoint handed out is never one the
     * database lost. */
    enum store_rc (*audit_take_appended)(struct store *s, struct store_checkpoint *ret);

    /* Durable runs (0010_journal), since version 10. The journal sits in the same database as
     * the audit log: airlockd appends a batch of entries as a writer job (writer.h) in the same
     * group commit as the run's audit records, and hands the answers to the guest from the
     * job's done (or a writer_after hook), which runs once the commit is durable. */
    /* Appends entries[0..n) to the journal of `run` (n 0 does nothing). Their positions must
     * follow each other (entries[i].position = entries[0].position + i) and the journal: the
     * first is 1 or one past an entry the run has (STORE_ERROR otherwise). The answers' bytes
     * are stored once each, under their SHA-256 (computed here), however many entries of any
     * run name them. An entry whose position the run has already is a no-op when it is the
     * same (call_id, function, args_sha256, idempotency_key, kind, sync, clock_ms and answer
     * bytes), so a batch appended again changes nothing; CONFLICT when it differs. NOT_FOUND
     * when there is no such run. Inside tx_begin (the writer's job): a failure leaves what the
     * batch wrote for the rollback to undo. */
    enum store_rc (*journal_append)(struct store *s, const char *run,
                                    const struct store_journal_entry *entries, size_t n);
    /* The entries of `run` with a position after `after_position` (0: all), in position order,
     * each with its answer's bytes (borrowed for the callback). STORE_ERROR when stored bytes
     * no longer match their SHA-256. None for an unknown run. */
    enum store_rc (*journal_read)(struct store *s, const char *run, int64_t after_position,
                                  store_journal_fn *fn, void *userdata);
    /* A fork: copies the entries of `from_run` up to and including `upto_position` to
     * `to_run`, whose journal must be empty (CONFLICT otherwise); the answers' bytes are
     * shared, not copied. NOT_FOUND when to_run does not exist, or from_run has fewer entries
     * than upto_position (then nothing is copied). */
    enum store_rc (*journal_copy_prefix)(struct store *s, const char *from_run, const char *to_run,
                                         int64_t upto_position);
    /* Records where run `id`'s guest starts from (its random seed and clock), for a replay
     * from its journal. NOT_FOUND when no such run. */
    enum store_rc (*run_set_origin)(struct store *s, const char *id, uint64_t seed,
                                    int64_t clock_ms);
    /* Counts one more recovery of run `id` from its journal; *ret_recovered (may be NULL) gets
     * the new count. NOT_FOUND when no such run. */
    enum store_rc (*run_add_recovered)(struct store *s, const char *id, int64_t *ret_recovered);

    /* Since version 11 (0011_fork): records that run `id` is a fork of run `forked_from` whose
     * calls from `at_call` on ran live. NOT_FOUND when no such run. */
    enum store_rc (*run_set_fork)(struct store *s, const char *id, const char *forked_from,
                                  int64_t at_call);

    /* Since version 12 (0012_in_doubt): decides a pending approval (of kind in_doubt) as
     * answered, keeping `result` (boundary JSON) as the value its call returns. CONFLICT when
     * it is not pending any more, NOT_FOUND when there is no such approval. */
    enum store_rc (*approval_answer)(struct store *s, const char *id, const char *by,
                                     const char *comment, const char *result);

    /* Since version 13 (0013_replay): a version's replay. */
    /* Keeps r (template_name, version, against, result) as the replay of that version, in place
     * of one it had. NOT_FOUND when no such version. */
    enum store_rc (*replay_put)(struct store *s, const struct store_replay *r);
    /* The replay kept for a version: fn sees it once; NOT_FOUND when it has none. */
    enum store_rc (*replay_get)(struct store *s, const char *template_name, int64_t version,
                                store_replay_fn *fn, void *userdata);

    /* Since version 14 (0014_mounts): mounts, and versions' workspace manifests (version_create
     * keeps v->workspace; the version reads give it). */
    /* CONFLICT when the name is taken, NOT_FOUND when m->department does not exist. */
    enum store_rc (*mount_create)(struct store *s, const struct store_mount *m);
    /* NOT_FOUND when no such mount; otherwise fn sees it once. */
    enum store_rc (*mount_get)(struct store *s, const char *name, store_mount_fn *fn,
                               void *userdata);
    /* Every mount, by name. */
    enum store_rc (*mount_list)(struct store *s, store_mount_fn *fn, void *userdata);
    /* NOT_FOUND when no such mount. */
    enum store_rc (*mount_delete)(struct store *s, const char *name);
    /* The approved versions of `department`'s templates that have a workspace manifest, by
     * template and number (what may name a mount of the department). */
    enum store_rc (*version_list_with_workspace)(struct store *s, const char *department,
                                                 store_version_fn *fn, void *userdata);

    /* Since version 15 (0015_workspaces): workspaces on runs. */
    /* Keeps bytes[0..len) as a blob, unless one with their SHA-256 is kept already; ret_sha256
     * gets the hex SHA-256 (64 digits and a NUL). */
    enum store_rc (*blob_put)(struct store *s, const void *bytes, size_t len, char ret_sha256[65]);
    /* The bytes of blob `sha256`: fn sees them once (borrowed for the call). NOT_FOUND when no
     * such blob; STORE_ERROR when the bytes kept no longer match their SHA-256. */
    enum store_rc (*blob_get)(struct store *s, const char *sha256, store_blob_fn *fn,
                              void *userdata);
    /* A new snapshot (its blob kept already). CONFLICT when the id is taken. */
    enum store_rc (*snapshot_create)(struct store *s, const struct store_snapshot *snap);
    /* Snapshot `id`: fn sees it once; NOT_FOUND when there is none. */
    enum store_rc (*snapshot_get)(struct store *s, const char *id, store_snapshot_fn *fn,
                                  void *userdata);
    /* Records the workspace of run `w->run` (its manifest's and start tar's blobs kept already;
     * end_sha256 ignored). CONFLICT when the run has one. */
    enum store_rc (*run_workspace_create)(struct store *s, const struct store_run_workspace *w);
    /* Run `run`'s workspace: fn sees it once; NOT_FOUND when it has none. */
    enum store_rc (*run_workspace_get)(struct store *s, const char *run, store_run_workspace_fn *fn,
                                       void *userdata);
    /* Keeps `end_sha256` (a blob) as run `run`'s workspace at its end and its outputs
     * files[0..n) (their blobs kept already), in place of what it had. NOT_FOUND when the run
     * has no workspace. */
    enum store_rc (*run_workspace_end)(struct store *s, const char *run, const char *end_sha256,
                                       const struct store_run_file *files, size_t n);
    /* Run `run`'s outputs in path order (bytewise); none for a run without. With `path` not
     * NULL only that file (NOT_FOUND when the run has no such output). */
    enum store_rc (*run_file_list)(struct store *s, const char *run, const char *path,
                                   store_run_file_fn *fn, void *userdata);

    /* The values sealed at rest, for the rotation of the key that seals them (`airlockd keys
     * rotate secret`). table, key_column and column are names of the schema (lowercase letters
     * and '_'; anything else is STORE_ERROR). */
    /* Every row of `table` whose `column` is not NULL, by key: fn sees its key_column and the
     * sealed text (borrowed for the call). */
    enum store_rc (*sealed_list)(struct store *s, const char *table, const char *key_column,
                                 const char *column, store_sealed_fn *fn, void *userdata);
    /* Sets `column` of the row whose key_column is `key` to `sealed`. NOT_FOUND when no row. */
    enum store_rc (*sealed_set)(struct store *s, const char *table, const char *key_column,
                                const char *key, const char *column, const char *sealed);
    /* Since 0018_webhooks: webhooks and their deliveries, an outbox (docs/webhooks.md). */
    /* CONFLICT when the id is taken. */
    enum store_rc (*webhook_create)(struct store *s, const struct store_webhook *w);
    /* Every webhook, by id. */
    enum store_rc (*webhook_list)(struct store *s, store_webhook_fn *fn, void *userdata);
    /* NOT_FOUND when no such webhook; otherwise it is gone, with its deliveries not yet sent. */
    enum store_rc (*webhook_delete)(struct store *s, const char *id);
    /* One pending delivery of event `event_id` (its `type`, `body`) for each webhook subscribed
     * to `type` for `department` (NULL: only those of "*"), due at now_ms; inside the caller's
     * transaction, so the event is kept exactly when what caused it is. */
    enum store_rc (*webhook_enqueue)(struct store *s, const char *event_id, const char *type,
                                     const char *department, const char *body, int64_t now_ms);
    /* The earliest time (ms) a pending delivery may be claimed; NOT_FOUND when none pends. */
    enum store_rc (*delivery_next)(struct store *s, int64_t *ret_ms);
    /* Claims the pending delivery due longest (next_ms <= now_ms, no lease running) for `node`
     * until now_ms + lease_ms, counting the attempt; fn sees it, with its webhook, once.
     * NOT_FOUND when none is due or another node claimed it first. */
    enum store_rc (*delivery_claim)(struct store *s, const char *node, int64_t now_ms,
                                    int64_t lease_ms, store_delivery_fn *fn, void *userdata);
    /* Ends node's claim of delivery `seq`: status "delivered", "failed", or "pending" again with
     * the next attempt at next_ms; error (may be NULL) says why the attempt failed. NOT_FOUND
     * when the claim is no longer node's (its lease ran out and another claimed it). */
    enum store_rc (*delivery_settle)(struct store *s, int64_t seq, const char *node,
                                     const char *status, int64_t next_ms, const char *error);
    /* Since version 16 (0016_principal_admin): principals' identities and disabled flag, and
     * changing or removing principals, departments and connectors. */
    /* Links principal `name` to `identity` (NULL: unlinks it); its sessions of another identity
     * are deleted. CONFLICT when another principal has that identity, NOT_FOUND when there is
     * no such principal. */
    enum store_rc (*principal_set_identity)(struct store *s, const char *name,
                                            const char *identity);
    /* Disables (1, its sessions deleted) or enables (0) principal `name`. NOT_FOUND when there
     * is no such principal. */
    enum store_rc (*principal_set_disabled)(struct store *s, const char *name, int disabled);
    /* The principal linked to `identity`: fn sees it once; NOT_FOUND when none is. */
    enum store_rc (*principal_find_identity)(struct store *s, const char *identity,
                                             store_principal_fn *fn, void *userdata);
    /* Removes principal `name` with its keys, role grants and sessions (its runs and audit
     * records keep its name). NOT_FOUND when there is no such principal. */
    enum store_rc (*principal_delete)(struct store *s, const char *name);
    /* Renames department `name` to `new_name`, in every row that names it (templates,
     * connectors, mounts, role grants, runs, approvals, snapshots; never the audit log).
     * CONFLICT when new_name is taken, NOT_FOUND when there is no department `name`. */
    enum store_rc (*department_rename)(struct store *s, const char *name, const char *new_name);
    /* What names department `name`, into *ret. NOT_FOUND when there is no such department. */
    enum store_rc (*department_usage)(struct store *s, const char *name,
                                      struct store_department_usage *ret);
    /* Removes department `name` (the caller has seen it empty). NOT_FOUND when there is none. */
    enum store_rc (*department_delete)(struct store *s, const char *name);
    /* Replaces connector c->name's url, signing_secret_sealed, headers_sealed, header_names,
     * functions and timeout_ms (its department, created and created_by stay). NOT_FOUND when
     * there is no such connector. */
    enum store_rc (*connector_update)(struct store *s, const struct store_connector *c);
    /* Removes connector `name`. NOT_FOUND when there is no such connector. */
    enum store_rc (*connector_delete)(struct store *s, const char *name);
    /* Every approved version of every template, by template and number. */
    enum store_rc (*version_list_approved)(struct store *s, store_version_fn *fn, void *userdata);
    /* The inbox (0019_inbox), since version 19. */
    /* Sets how long a run of department `name` may wait for a person (ms, > 0). NOT_FOUND when
     * there is no such department. */
    enum store_rc (*department_set_approval_ttl)(struct store *s, const char *name,
                                                 int64_t approval_ttl_ms);
    /* Every pending approval, oldest first, with only id, run, kind, status, department and
     * created set (the other members NULL or 0): what finding the runs that waited too long
     * needs, without their arguments. */
    enum store_rc (*approval_pending_list)(struct store *s, store_approval_fn *fn, void *userdata);

    /* Since version 17 (0017_sessions): sessions of the web UI. A new session (sess->created is
     * ignored: now); the sessions whose end is before now_ms are deleted on the way. CONFLICT
     * when the hash is taken. */
    enum store_rc (*session_create)(struct store *s, const struct store_session *sess,
                                    int64_t now_ms);
    /* Session `token_sha256`: fn sees it once; NOT_FOUND when there is none (expiry is the
     * caller's to check). */
    enum store_rc (*session_get)(struct store *s, const char *token_sha256, store_session_fn *fn,
                                 void *userdata);
    /* NOT_FOUND when there is no such session. */
    enum store_rc (*session_delete)(struct store *s, const char *token_sha256);

    /* Since version 20. The key staged to sign next (`airlockd keys rotate audit --prepare`): it
     * signs the checkpoints once the log announces its public key, so a node takes a rotation
     * made elsewhere without a restart. NULL: none. As audit_set_key, any thread. */
    enum store_rc (*audit_set_next_key)(struct store *s, EVP_PKEY *key);
};

/* Every backend's handle starts with this. */
struct store {
    const struct store_ops *ops;
};

/* The schema version this binary's migrations bring a database to. */
int store_schema_version(void);

/* Opens (creating if needed) the SQLite database at `path` in WAL mode and migrates it to
 * store_schema_version(). A database whose schema is newer than this binary is refused. On
 * failure *ret_store is untouched and errmsg (STORE_ERRMSG_MAX bytes) says why. */
enum store_rc store_sqlite_open(const char *path, struct store **ret_store, char *errmsg);

/* A consistent copy of the SQLite database at src_path, taken with SQLite's online backup
 * while other connections (a running airlockd) read and write it, written to dest_path (which
 * must not exist). On failure dest_path is removed and errmsg (STORE_ERRMSG_MAX bytes) says
 * why. */
enum store_rc store_sqlite_backup(const char *src_path, const char *dest_path, char *errmsg);

/* Connects to the PostgreSQL database named by `url` (a libpq connection URI, postgres://... or
 * postgresql://...) and migrates it to store_schema_version() (migrations/postgres/, the same
 * numbers as SQLite's), refusing a newer schema as store_sqlite_open does. Commits are durable
 * when they return (synchronous_commit on). A lost connection is reset at the
 * next call outside a transaction. errmsg never holds the URL (it may carry a password). */
enum store_rc store_postgres_open(const char *url, struct store **ret_store, char *errmsg);

#endif
