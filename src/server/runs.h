/*
 * runs.h - the runs airlockd executes: libairlock's asynchronous runner underneath, airlockd's
 * writer (writer.h) above, which makes each run's start and end durable (its row, its host
 * calls, its end and the approvals it opens) before anyone is answered or any connector call
 * leaves.
 *
 * Threads: a request thread plans a run and calls runs_submit; the runner's event thread drives
 * it and calls the host functions, which hand each connector call to the connector client's
 * thread; a run's start and its end are jobs of the writer, whose batches commit many runs with
 * one fsync (group commit) and then answer the deferred requests. Nothing here blocks the
 * event thread.
 */
#ifndef AIRLOCK_SERVER_RUNS_H
#define AIRLOCK_SERVER_RUNS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "auth.h"
#include "buf.h"
#include "http.h"
#include "mounts.h"
#include "store.h"
#include "writer.h"

#define RUNS_ID_LEN          36 /* "run_" + 32 hex */
#define RUNS_FN_NAME_MAX     (2 * STORE_NAME_MAX + 2)
#define RUNS_LIMITS_MAX      8
#define RUNS_AUDIT_FIELD_MAX ((size_t)64 << 10) /* bytes of one JSON value in an audit record */
#define RUNS_NODE_MAX        64                 /* bytes of a node's id, NUL included */
/* Nesting of one JSON value in an audit record: records are read 64 levels deep (audit.c), and
 * the value is a member of the record's details, two levels down. */
#define RUNS_AUDIT_FIELD_DEPTH 62u

struct connector_target;
struct connector_client;
struct metrics;

/* One function a run may call: "connector.fn", served by its connector. */
struct runs_function {
    char name[RUNS_FN_NAME_MAX];
    char connector[STORE_NAME_MAX + 1];
    const char *fn; /* the part after the dot, inside name */
    int sensitive;
    int idempotent;
    const struct connector_target *target; /* owned by the plan's targets */
};

/* Everything a run needs, built on the HTTP thread from the store (runs never read the store
 * while they run). runs_plan_free frees it and what it owns. */
struct runs_plan {
    char id[RUNS_ID_LEN + 1];
    char template_name[STORE_NAME_MAX + 1]; /* "" for an ad-hoc run */
    int64_t version;
    char department[STORE_NAME_MAX + 1];
    char principal[STORE_NAME_MAX + 1];
    char approved_by[STORE_NAME_MAX + 1]; /* who approved the version; "" for ad-hoc */
    char *source;
    int typescript;
    char *input_json;
    size_t nlimits;
    enum al_limit limit_which[RUNS_LIMITS_MAX];
    uint64_t limit_value[RUNS_LIMITS_MAX];
    size_t nfunctions;
    struct runs_function *functions;
    size_t ntargets;
    struct connector_target **targets;
    char *prior_calls; /* a resumed run: the host calls of its earlier legs (a JSON array) */
    /* A start from the input at a fixed point, so that an execution taken over from a dead
     * node is the same again: the guest clock starts at clock_ms and Math.random's seed comes
     * from the run's id. 0: the runner's (a resume has the continuation's). */
    int64_t clock_ms;
    /* A recovery from the run's journal (docs/server.md "Durable runs"): the seed its start
     * recorded (run_set_origin) and the answers it had, replayed and never sent again. */
    int has_seed;
    uint64_t seed;
    size_t njournal;
    struct al_journal_entry *journal; /* each function and payload owned */
    /* The sensitive calls a person decided (a recovery of a run resumed after approvals): the
     * call that reaches one live again uses its decision instead of asking anew. */
    size_t ndecided;
    struct runs_decided *decided;
    /* A fork (POST /v1/runs/{id}/fork): the call it goes live from, 0 for other runs. A fork
     * that diverges from its journal answers its waiting client 409 CONFLICT. */
    int64_t fork_at_call;
    /* Its workspace (docs/server.md "Workspaces"), NULL when it has none: the manifest (JSON)
     * and the tar that replaces its inline entries (NULL, 0: none), as every execution of the
     * run builds it again - a resume and a recovery from its journal see the same files. */
    char *workspace_manifest;
    char *workspace_tar;
    size_t workspace_tar_len;
    /* the mounts its manifest names, looked up when it was planned: a local one's path, an S3
     * one's bucket and credentials (its secret opened: for this process's use only) */
    size_t nmounts;
    struct mounts_mount *mounts;
};

/* A sensitive call's decision, from its host_call approval: the guest's call `call` to
 * `function` with the argument bytes `args` is approved (sent under the interruption id, its
 * idempotency key) or denied (it throws "denied: COMMENT"). Strings owned by the plan. */
struct runs_decided {
    uint32_t call;
    char *function;
    char *args;
    char *interruption;
    int approved;
    char *comment; /* NULL: none */
};

struct runs;

void runs_plan_free(struct runs_plan *plan);
/* Adds the decision of host_call approval `a` (approved or denied, with its call number) to
 * plan->decided (copied). -1 out of memory. */
int runs_plan_add_decided(struct runs_plan *plan, const struct store_approval *a);
/* Appends a journal entry read from store `s` to plan->journal (copied; a workspace read's
 * reference turned back into its answer from s's blob, run_workspace_read_answer). -1 out of
 * memory, a malformed entry or a blob missing or damaged. */
int runs_plan_add_journal(struct runs_plan *plan, struct store *s,
                          const struct store_journal_entry *e);
/* The options of a replay of `plan` (replays.h): the source as a run of the plan executes it
 * (with its input), its limits, its seed and clock and its journal; every function of the plan
 * calls `host` (a call the journal does not answer), and `userdata` is the run's
 * (al_call_run_userdata). */
enum al_code runs_replay_opts(const struct runs_plan *plan, al_host_fn *host, void *userdata,
                              struct al_run_opts *opts);
/* The seed of run `id`'s guest (Math.random), derived from the cluster's key: every node
 * derives the same one. */
uint64_t runs_seed(const struct runs *r, const char *id);

/* Wall-clock time in ms since the epoch, and as the stores write times
 * ("2026-12-01T21:40:00.123Z"); runs_time_ms reads that text back (0 when it cannot). */
#define RUNS_TIME_LEN 32
int64_t runs_now_ms(void);
void runs_time_text(int64_t ms, char out[RUNS_TIME_LEN]);
int64_t runs_time_ms(const char *text);

/* How a decided approval resolves its interruption when the run resumes. */
struct runs_resolution {
    const char *interruption;
    int approved;
    const char *comment;
};

struct runs;

/* Runs recorded through `writer`. -1 with reterr set (AL_INTERNAL_ERROR) on failure. */
int runs_new(struct writer *writer, struct al_runner *runner, struct connector_client *client,
             struct runs **ret, struct al_error *reterr);
/* Cancels what still runs, waits for the writer to record it, frees (the writer must still be
 * running). NULL-safe. */
void runs_free(struct runs *r);
/* With several nodes on one database, before the first run: each run recorded here names this
 * node (run_set_node), and each connector call is marked sent in the store (call_mark, in a
 * transaction of the writer's) before it leaves; the marks of a run go once its end or wait
 * is recorded. `capacity` is how many runs this node executes before it claims no more (runs_busy).
 * Without it (SQLite: one node) calls are marked all the same (a run recovered from its
 * journal after a crash needs to know which call was in doubt), but nothing is locked. */
void runs_set_node(struct runs *r, const char *node, size_t capacity);
/* Fair shares of the runs executing here: at most per_principal of one principal's runs and
 * per_department of one department's execute at once, and total in all; a new run beyond them
 * waits in its department's queue (its record made, its status running, nothing executed yet),
 * and the queues are served round-robin across departments, so one department's flood never
 * delays another's run. A principal with per_principal_queued runs waiting has a new one
 * refused (429 RATE_LIMITED). Resumed runs (runs_launch) count but never wait. */
struct runs_shares {
    size_t per_principal;        /* default 8 */
    size_t per_department;       /* default 32 */
    size_t per_principal_queued; /* default 256 */
    size_t total;                /* the runner's max_concurrent */
};
/* Before the first run; zero members keep their defaults (total: unlimited). */
void runs_set_shares(struct runs *r, const struct runs_shares *shares);

/* The key Math.random's seed of a run's fixed start is derived from with the run's id
 * (HMAC-SHA256): the cluster's continuation key, so that every node derives the same seed and
 * nobody without the key can predict it. Copied; before the first run. */
void runs_set_seed_key(struct runs *r, const unsigned char *key, size_t len);
/* With a node set: 1 when this node executes `capacity` runs already (or drains), so that it
 * claims nothing more from the queue (it is kicked again once it has room). 0 otherwise, and
 * always with one node. */
int runs_busy(struct runs *r);
/* The id runs_set_node gave, or NULL. */
const char *runs_node(const struct runs *r);
/* Who claims queued runs on this node: runs_kick calls fn(userdata) (it must not block) after
 * a run was queued here, and when this node has room again after being full, so that it looks
 * at the queue at once. Once runs_set_kick(r, NULL, NULL) has returned, no call of the old fn
 * is under way or will begin. */
void runs_set_kick(struct runs *r, void (*fn)(void *userdata), void *userdata);
void runs_kick(struct runs *r);

/* Reserves a launch before the caller commits to one (a resume claiming its continuation):
 * 0, and the drain waits for the launch (runs_launch) or for runs_unhold; -1 while
 * draining - then leave the run as it is for the next start to resume. */
int runs_hold(struct runs *r);
void runs_unhold(struct runs *r);

/* Starts a run whose row exists with status running, its launch reserved with runs_hold (so
 * it starts even while draining). `continuation` (NULL: a fresh start) and the resolutions
 * resume it. `deferred` (NULL: nobody waits) is answered once the run has ended or waits for a
 * person. Called inside a writer job (tx) whose writes make it running, the run's connector
 * calls wait for that job's commit; if the job fails instead, the run is cancelled and never
 * recorded. Takes the plan in every case. -1 when it could not start: the run has then been
 * recorded failed (and deferred answered). New runs go through runs_submit. */
int runs_launch(struct runs *r, struct writer_tx *tx, struct runs_plan *plan,
                const char *continuation, const struct runs_resolution *resolutions,
                size_t nresolutions, struct http_deferred *deferred);

/* A new run, recorded by the writer in its next batch (group commit) and then started. */
enum runs_start_mode {
    RUNS_START_WAIT = 0,   /* deferred answered when the run ends or waits for a person */
    RUNS_START_NOWAIT = 1, /* deferred answered 202 once recorded; the run goes on */
    RUNS_START_HELD = 2,   /* recorded waiting for a person (supervised): answered 202, not run */
    RUNS_START_QUEUED = 3, /* recorded queued (several nodes, not waited for): answered 202, the
                            * store notified and runs_kick; the claiming node runs it */
};
/* Writes the run's row and its start records inside the writer's transaction. STORE_CONFLICT
 * (having written nothing of the run) refuses it: ret_refusal then holds the error body and
 * *ret_status its status (a version revoked after the request was checked: 409; the caller's
 * key revoked meanwhile: 401, its refusal audited). */
typedef enum store_rc runs_record_fn(struct store *s, void *userdata, struct buf *ret_refusal,
                                     unsigned *ret_status);

struct runs_start {
    struct runs_plan *plan; /* taken */
    enum runs_start_mode mode;
    struct http_deferred *deferred; /* answered in every case */
    /* RUNS_START_WAIT: the key the client waits with and its route; once that key is revoked
     * the client is answered 401, never the run (runs_watch_keys) */
    char key_prefix[AUTH_PREFIX_LEN + 1];
    char route[64];
    runs_record_fn *record;
    void *record_userdata;
    void (*record_free)(void *userdata); /* called once the start has been handled */
};

/* Hands a new run to the writer: *start is copied and everything it points to taken. A run of
 * RUNS_START_WAIT or _NOWAIT is launched at once, its connector calls held until its record is
 * durable; after the record's commit the deferred request is answered with the run's object
 * (or a 500 when it could not be recorded). */
void runs_submit(struct runs *r, const struct runs_start *start);

struct readers;
/* The config's mounts.local_roots (borrowed; NULL: none), for the plans of runs resumed here
 * (api_run_resume) to look their mounts up with. Before the first run. */
void runs_set_mount_roots(struct runs *r, const struct mounts_roots *roots);
const struct mounts_roots *runs_mount_roots(const struct runs *r);

/* Starts the thread that looks, twice a second, at the key of every client waiting for a run
 * here (one read per waiting client on `readers`; none while nobody waits): a client whose key
 * was revoked, on any node, is answered 401 UNAUTHENTICATED with an auth.denied record, and the
 * run goes on without it. The writer checks the key again when it records the run's end or
 * wait, so a revoked key never gets the run's answer. Every 2 seconds the same thread also
 * ends the runs that waited for a person past their department's approval_ttl_ms
 * (api_approvals_expire). runs_free stops it. -1 with reterr set. */
int runs_watch_keys(struct runs *r, struct readers *readers, struct al_error *reterr);

/* Cancels an active run: it ends cancelled (error ABORTED) within a second. `why` goes to its
 * error message. 1 when it was active, 0 when no run of that id runs here. */
int runs_cancel(struct runs *r, const char *id, const char *why);
/* Cancels every active run of a template version; how many. */
size_t runs_cancel_version(struct runs *r, const char *template_name, int64_t version,
                           const char *why);
/* Stops new launches, lets the active runs finish for up to grace_ms, cancels the rest and
 * returns once every one of them is recorded and answered. */
void runs_drain(struct runs *r, unsigned grace_ms);
/* The drain's first step on its own: from now on no new run starts (answered 500). */
void runs_refuse(struct runs *r);
size_t runs_active(struct runs *r);
/* The ids of the runs executing here, copied: *ret_ids (malloc'd, RUNS_ID_LEN + 1 bytes each,
 * the caller frees; NULL when there is none) and how many. -1 when out of memory. */
int runs_active_ids(struct runs *r, char (**ret_ids)[RUNS_ID_LEN + 1], size_t *ret_n);
/* A run's API object (the answer of POST /v1/runs and GET /v1/runs/{id}) from its row; the
 * approvals' ids are read from the store. STORE_OK or the store's failure. */
enum store_rc runs_json(struct store *s, const struct store_run *row, struct buf *b);
/* runs_json of the run `id`, read from the store; *ret_status (may be NULL) is what it answers
 * with: 200 for a run that has ended, 202 for one still running or waiting for a person.
 * NOT_FOUND for no such run. */
enum store_rc runs_json_by_id(struct store *s, const char *id, struct buf *b, unsigned *ret_status);
/* Appends `"key":JSON` for an audit record: as is up to RUNS_AUDIT_FIELD_MAX bytes and
 * RUNS_AUDIT_FIELD_DEPTH levels, else {"$truncated":true,"bytes":N,"sha256":HEX} (the run's row
 * keeps the whole value): a record must fit the store's line cap and the reader's depth. */
void runs_put_bounded(struct buf *b, const char *key, const char *json, size_t len);
/* A new id with a prefix ("run_", "apr_") and 32 random hex digits; -1 when the random
 * generator fails. ret holds RUNS_ID_LEN + 1 bytes. */
int runs_new_id(const char *prefix, char *ret);

#endif
