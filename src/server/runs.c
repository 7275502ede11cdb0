/*
 * runs.c - airlockd's runs on libairlock's asynchronous runner (see runs.h for the threads).
 *
 * A run in memory is a struct srun, alive from runs_submit (a new run) or runs_launch (a
 * resumed one) until the writer has recorded its end and answered whoever waits. Two references
 * keep it: the launcher's (dropped once al_run_start has returned, so the handle is set before
 * anyone frees) and the run's own (dropped once its end is recorded). The active list (guarded
 * by its own mutex) is what cancel, revocation and drain walk.
 *
 * A run starts executing as soon as it is submitted or launched, beside the writer's batch that
 * records its start (or its resume): its start costs the run no commit of its own. Nothing
 * leaves airlockd before that record is on the disk, though: a connector call the run makes
 * meanwhile is held (start_state RUNS_START_PENDING) and sent once the batch has committed (a
 * writer hook). A run whose record is refused (its version was revoked meanwhile) or fails is
 * cancelled, its held calls throw, and its end is never recorded: for everyone outside, it
 * never ran.
 *
 * A sensitive function's first call interrupts the run; the run's end then stores the
 * continuation and one approval per interruption. When every approval is decided the run is
 * launched again from the continuation with their resolutions, and the function, now called
 * with a resolution, either performs the call (approved; the interruption id is the idempotency
 * key) or throws "denied: COMMENT".
 */
#include "runs.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_runs.h"
#include "clock.h"
#include "connector.h"
#include "error.h"
#include "fault.h"
#include "hex.h"
#include "json.h"
#include "metrics.h"
#include "nodes.h"
#include "readers.h"
#include "run_workspace.h"
#include "webhooks.h"
#include "writer.h"

#define RUNS_DETAILS_MAX  ((size_t)96 << 20)
#define RUNS_MESSAGE_MAX  512
#define RUNS_COMMENT_MAX  4096 /* bytes of an approver's comment, as the API takes it */
#define RUNS_AUDIENCE     "airlockd"
#define RUNS_WATCH_MS     500 /* how often the keys of waiting clients are looked at */
#define RUNS_EXPIRE_LOOKS 4   /* every that many looks, runs waiting too long end (2 s) */

struct runs_call {
    uint32_t seq;
    char *function;
    char *args;
    int ended;
    enum al_call_outcome outcome;
    uint64_t duration_us;
    char *message;
    char *key; /* the idempotency key, when not "run:seq" (an approved call's interruption id) */
    char *interruption; /* the id of its interruption, when it interrupted the run */
    uint32_t line;      /* the line of the run's source that made it (al_call_line), or 0 */
};

/* Where a run's own record stands (srun.start_state, under runs.lock; only the writer's thread
 * makes it UNRECORDED, and then neither its start nor its end is recorded). */
enum runs_start_state {
    RUNS_START_DURABLE = 0, /* on the disk: connector calls go out (every resumed run) */
    RUNS_START_PENDING,     /* in the writer's next batch: connector calls are held */
    RUNS_START_UNRECORDED,  /* refused or failed: the run is cancelled, held calls throw */
};

struct runs_pending;

/* An answer waiting for the journal (0010_journal), a copy of libairlock's entry. */
struct runs_jentry {
    struct store_journal_entry e;
    uint32_t call; /* the guest's call id, call_id's number */
    char call_id[16];
    char args_sha256[2 * SHA256_DIGEST_LENGTH + 1];
    char *function;
    char *key;
    unsigned char *answer;
    struct run_workspace_read read; /* a workspace read: the file's bytes (NULL: none) */
    struct runs_jentry *next;
};

struct srun {
    struct runs *owner;
    struct runs_plan *plan;
    struct al_run *handle;
    /* the client waiting for it (runs.lock once active: the key watch may take it), the id of
     * its request, and the key and route it waits with ("": no key to watch) */
    struct http_deferred *deferred;
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    char waiter_key[AUTH_PREFIX_LEN + 1];
    char waiter_route[64];
    int waiter_revoked;                 /* the writer found its key revoked at the end's record */
    struct al_result *result;           /* set by the done callback */
    char start_error[RUNS_MESSAGE_MAX]; /* the runner refused the start: no result */
    enum al_code start_code;            /* ... and its code; AL_OK reads as INTERNAL_ERROR */
    /* its workspace (NULL: none), built for this execution; a completed run's commit of its
     * writable mounts failed with finish_code (AL_OK: it did not) and finish_error */
    struct run_workspace *ws;
    enum al_code finish_code;
    char finish_error[RUNS_MESSAGE_MAX];
    atomic_int refs;
    atomic_int cancelled;
    char cancel_why[RUNS_MESSAGE_MAX]; /* written before cancelled is set */
    uint64_t started_us;               /* clock_mono_us */
    /* the host calls, appended on the event thread, read by the writer after the end */
    size_t ncalls;
    size_t calls_cap;
    struct runs_call *calls;
    struct buf answer; /* the writer's answer to `deferred` */
    unsigned answer_status;
    enum runs_start_state start_state;
    struct runs_pending *held;   /* connector calls waiting for the start record's commit */
    const char *counted_status;  /* what its record said, for /metrics once committed */
    int recorded_completed;      /* its record said completed: its workspace's commit stands */
    struct writer_job end;       /* its end, for the writer */
    struct writer_hook launched; /* its launch inside a writer job: settled at that commit */
    int holds_slot;              /* counted in its principal's and department's shares */
    int waiting;                 /* in its department's queue for a slot (runs.lock) */
    /* the journal (runs.lock): answers held until the writer has them on the disk; one job at
     * a time per run carries every answer that came meanwhile */
    struct runs_jentry *jqueue; /* not yet handed to the writer, oldest first */
    struct runs_jentry *jbatch; /* in the writer's job */
    int jbusy;                  /* jjob is submitted */
    int jfailed;                /* an append failed: the run fails, the answer is never seen */
    int handed_back;            /* stopped by a drain past its grace: it goes on elsewhere */
    uint32_t jreleased;         /* written before the handle was set: released by runs_go */
    struct writer_job jjob;
    struct srun *next_waiting;
    struct srun *next_active;
};

/* What one principal, or one department, has executing and waiting (runs.lock). A department's
 * waiting runs are its queue; the queues are served round-robin. */
struct runs_share {
    char name[STORE_NAME_MAX + 1];
    size_t running;
    size_t queued;
    struct srun *head; /* a department's queue */
    struct srun *tail;
    struct runs_share *next;
};

struct runs {
    struct writer *writer;
    struct al_runner *runner;
    struct connector_client *client;

    pthread_mutex_t lock; /* active list, counts, flags */
    pthread_cond_t cond;  /* drain waits on it for the list to empty */
    struct srun *active;
    size_t nactive;
    size_t nstarting; /* held starts (supervised, resumes) not yet launched or answered */
    int draining;
    char node[RUNS_NODE_MAX];     /* runs_set_node's; "" with one node */
    size_t capacity;              /* runs executing here before new ones go to the queue */
    pthread_mutex_t kick_lock;    /* held while kick is called or set */
    void (*kick)(void *userdata); /* set before the first run; see runs_set_kick */
    void *kick_userdata;
    unsigned char seed_key[32]; /* runs_set_seed_key; zero until set */
    struct runs_shares limits;  /* runs_set_shares */
    size_t running;             /* runs holding a slot */
    struct runs_share *principals;
    struct runs_share *departments;
    struct runs_share *served; /* the department whose run started last */
    struct srun *ending;       /* cancelled while waiting: to end (runs_end_cancelled) */
    const struct mounts_roots *mount_roots; /* runs_set_mount_roots */
    struct readers *readers; /* runs_watch_keys: the key watch's thread and its stop */
    pthread_t watch_thread;
    pthread_cond_t watch_cond;
    int watching;
    int watch_stop;
};

/* A new run's record, a job of the writer's. */
struct runs_job {
    struct writer_job job;
    struct runs *owner;
    struct runs_start start;
    struct srun *sr; /* the run, active and executing since runs_submit (NULL: held) */
    int refused;     /* the record function refused it: answered 409 */
    unsigned status; /* the answer, built in the record's transaction */
    struct buf answer;
};

/* A call in flight at a connector, or held until its run's record is durable: what the
 * request and the client's callbacks need. */
struct runs_pending {
    struct al_call *call;
    struct srun *sr; /* a reference: the plan's connector targets outlive the call */
    const struct runs_function *f;
    const char *args; /* the call's, valid until it is completed */
    char key[RUNS_ID_LEN + 32];
    char args_sha256[2 * SHA256_DIGEST_LENGTH + 1]; /* hex, for the mark (call_mark) */
    int diverged;           /* the mark found another call under the key: it is not sent */
    int taken;              /* the run is no longer this node's (taken over): it is not sent */
    struct writer_job mark; /* several nodes: the mark, a job of the writer's */
    struct runs_pending *next;
};

void runs_plan_free(struct runs_plan *plan)
{
    if (!plan) {
        return;
    }
    for (size_t i = 0; i < plan->ntargets; i++) {
        connector_target_free(plan->targets[i]);
    }
    free(plan->targets);
    free(plan->functions);
    free(plan->source);
    free(plan->input_json);
    free(plan->prior_calls);
    for (size_t i = 0; i < plan->njournal; i++) {
        free((char *)plan->journal[i].function);
        free((char *)plan->journal[i].payload);
    }
    free(plan->journal);
    for (size_t i = 0; i < plan->ndecided; i++) {
        free(plan->decided[i].function);
        free(plan->decided[i].args);
        free(plan->decided[i].interruption);
        free(plan->decided[i].comment);
    }
    free(plan->decided);
    free(plan->workspace_manifest);
    free(plan->workspace_tar);
    for (size_t i = 0; i < plan->nmounts; i++) {
        mounts_mount_done(&plan->mounts[i]);
    }
    free(plan->mounts);
    free(plan);
}

int runs_plan_add_decided(struct runs_plan *plan, const struct store_approval *a)
{
    struct runs_decided *d = realloc(plan->decided, (plan->ndecided + 1) * sizeof *d);
    if (!d) {
        return -1;
    }
    plan->decided = d;
    d = &d[plan->ndecided++];
    d->call = (uint32_t)a->call_seq;
    d->function = strdup(a->function ? a->function : "");
    d->args = strdup(a->args ? a->args : "");
    d->interruption = strdup(a->interruption ? a->interruption : "");
    d->approved = strcmp(a->status, "approved") == 0;
    d->comment = a->comment ? strdup(a->comment) : NULL;
    return !d->function || !d->args || !d->interruption || (a->comment && !d->comment) ? -1 : 0;
}

/* The decision already taken on call `seq` (a recovery reaching a decided sensitive call live
 * again), NULL when there is none for that call with that function and those arguments: a call
 * the guest now makes otherwise is asked anew. */
static const struct runs_decided *runs_decided_of(const struct runs_plan *plan, uint32_t seq,
                                                  const char *function, const char *args,
                                                  size_t args_len)
{
    for (size_t i = 0; i < plan->ndecided; i++) {
        const struct runs_decided *d = &plan->decided[i];
        if (d->call == seq && strcmp(d->function, function) == 0 && strlen(d->args) == args_len &&
            memcmp(d->args, args, args_len) == 0) {
            return d;
        }
    }
    return NULL;
}

int runs_plan_add_journal(struct runs_plan *plan, struct store *s,
                          const struct store_journal_entry *e)
{
    if ((plan->njournal & (plan->njournal + 1)) == 0) { /* 0, 1, 3, 7...: full */
        size_t cap = 2 * (plan->njournal + 1);
        struct al_journal_entry *j = realloc(plan->journal, cap * sizeof *j);
        if (!j) {
            return -1;
        }
        plan->journal = j;
    }
    struct al_journal_entry *j = &plan->journal[plan->njournal];
    memset(j, 0, sizeof *j);
    char *end = NULL;
    unsigned long call = strtoul(e->call_id, &end, 10);
    if (!end || *end || call == 0 || call > UINT32_MAX || e->position <= 0 ||
        e->position > UINT32_MAX || strlen(e->args_sha256) != 2 * sizeof j->args_sha256 ||
        hex_decode(e->args_sha256, sizeof j->args_sha256, j->args_sha256) != 0) {
        return -1;
    }
    j->position = (uint32_t)e->position;
    j->call = (uint32_t)call;
    j->kind = (enum al_journal_kind)e->kind;
    j->sync = e->sync;
    j->clock_ms = e->clock_ms;
    j->len = e->answer_len; /* or the length of the answer a reference stands for */
    char *function = strdup(e->function);
    char *payload = NULL;
    int rebuilt = run_workspace_read_answer(s, e->function, e->kind, e->answer, e->answer_len,
                                            &payload, &j->len);
    if (rebuilt == 0) {
        payload = malloc(e->answer_len ? e->answer_len : 1);
    }
    if (!function || !payload) {
        free(function);
        free(payload);
        return -1;
    }
    if (rebuilt == 0 && e->answer_len) {
        memcpy(payload, e->answer, e->answer_len);
    }
    j->function = function;
    j->payload = payload;
    plan->njournal++;
    return 0;
}

int64_t runs_now_ms(void)
{
    return clock_wall_ms();
}

void runs_time_text(int64_t ms, char out[RUNS_TIME_LEN])
{
    struct tm tm;
    char date[24];
    time_t sec = (time_t)(ms / 1000);
    gmtime_r(&sec, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, RUNS_TIME_LEN, "%.20s.%03dZ", date, (int)(ms % 1000));
}

int64_t runs_time_ms(const char *text)
{
    struct tm tm;
    int ms = 0;
    memset(&tm, 0, sizeof tm);
    const char *rest = text ? strptime(text, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest || (rest[0] == '.' && sscanf(rest + 1, "%3d", &ms) != 1)) {
        return 0;
    }
    return (int64_t)timegm(&tm) * 1000 + ms;
}

int runs_new_id(const char *prefix, char *ret)
{
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        return -1;
    }
    size_t n = strlen(prefix);
    memcpy(ret, prefix, n);
    hex_encode(raw, sizeof raw, ret + n);
    return 0;
}

static void runs_jentries_free(struct runs_jentry *j)
{
    while (j) {
        struct runs_jentry *next = j->next;
        free(j->function);
        free(j->key);
        free(j->answer);
        free(j->read.bytes);
        free(j);
        j = next;
    }
}

static void srun_unref(struct srun *sr)
{
    if (atomic_fetch_sub(&sr->refs, 1) != 1) {
        return;
    }
    for (size_t i = 0; i < sr->ncalls; i++) {
        free(sr->calls[i].function);
        free(sr->calls[i].args);
        free(sr->calls[i].message);
        free(sr->calls[i].key);
        free(sr->calls[i].interruption);
    }
    free(sr->calls);
    runs_jentries_free(sr->jqueue);
    runs_jentries_free(sr->jbatch);
    buf_done(&sr->answer);
    al_result_free(sr->result);
    if (sr->handle) {
        al_run_release(sr->handle);
    }
    /* after the run that borrowed it; off this thread (often the writer's): a read stuck in a
     * stalled bucket holds the free until the bucket's timeout */
    run_workspace_free_later(sr->ws);
    runs_plan_free(sr->plan);
    free(sr);
}

/* A run in memory, not active yet; NULL when out of memory. */
static struct srun *srun_new(struct runs *r, struct runs_plan *plan, struct http_deferred *deferred)
{
    struct srun *sr = calloc(1, sizeof *sr);
    if (!sr) {
        return NULL;
    }
    sr->owner = r;
    sr->plan = plan;
    sr->deferred = deferred;
    snprintf(sr->request_id, sizeof sr->request_id, "%s", http_deferred_request_id(deferred));
    atomic_init(&sr->refs, 2);
    atomic_init(&sr->cancelled, 0);
    buf_init(&sr->answer, (size_t)96 << 20);
    sr->started_us = clock_mono_us();
    return sr;
}

/* Puts a run on the list cancel, revocation and drain walk; under r->lock. */
static void srun_activate(struct runs *r, struct srun *sr)
{
    sr->next_active = r->active;
    r->active = sr;
    r->nactive++;
}

/* ---------------------------------------------------------------- on the event thread */

/* The call of id `seq` the events recorded; on the event thread. */
static struct runs_call *runs_call_of(struct srun *sr, uint32_t seq)
{
    for (size_t i = sr->ncalls; i-- > 0;) {
        if (sr->calls[i].seq == seq) {
            return &sr->calls[i];
        }
    }
    return NULL;
}

static void runs_event(const struct al_event *ev, void *userdata)
{
    struct srun *sr = userdata;
    if (ev->kind == AL_EVENT_CALL_START && strncmp(ev->function, "workspace.", 10) == 0) {
        /* a file operation: its run.file record says it (run_workspace.c), without the bytes
         * its arguments or answer carry */
        return;
    }
    if (ev->kind == AL_EVENT_CALL_START) {
        if (sr->ncalls == sr->calls_cap) {
            size_t cap = sr->calls_cap ? 2 * sr->calls_cap : 8;
            struct runs_call *calls = realloc(sr->calls, cap * sizeof *calls);
            if (!calls) {
                return; /* the call still happens; only its audit detail is lost */
            }
            sr->calls = calls;
            sr->calls_cap = cap;
        }
        struct runs_call *c = &sr->calls[sr->ncalls++];
        memset(c, 0, sizeof *c);
        c->seq = ev->seq;
        c->function = strdup(ev->function);
        c->args = strndup(ev->args, ev->args_len);
        return;
    }
    if (ev->kind == AL_EVENT_INTERRUPTION) {
        /* its approval keeps the call's number: a recovery finds the decision by it */
        struct runs_call *c = runs_call_of(sr, ev->seq);
        if (c && !c->interruption) {
            c->interruption = strdup(ev->interruption_id);
        }
        return;
    }
    if (ev->kind != AL_EVENT_CALL_END) {
        return;
    }
    for (size_t i = sr->ncalls; i-- > 0;) {
        struct runs_call *c = &sr->calls[i];
        if (c->seq == ev->seq && !c->ended) {
            c->ended = 1;
            c->outcome = ev->outcome;
            c->duration_us = ev->duration_us;
            if (ev->outcome == AL_CALL_THREW) {
                c->message = strndup(ev->text, ev->text_len);
            }
            return;
        }
    }
}

static int runs_pending_cancelled(void *userdata)
{
    struct runs_pending *p = userdata;
    return al_call_cancelled(p->call);
}

static void runs_call_done(void *userdata, enum connector_outcome outcome, const char *result_json,
                           size_t len, const char *message)
{
    struct runs_pending *p = userdata;
    FAULT_POINT(FAULT_AFTER_SEND, al_call_seq(p->call));
    metrics_host_call(p->f->connector, outcome == CONNECTOR_RETURNED ? "returned" : "threw");
    if (outcome == CONNECTOR_RETURNED) {
        al_call_return(p->call, result_json, len);
    } else if (outcome == CONNECTOR_ARGS_REFUSED) {
        al_call_throw_type_error(p->call, message);
    } else {
        al_call_throw(p->call, message);
    }
    srun_unref(p->sr);
    free(p);
}

/* Completes a call that will not reach its connector. */
static void runs_pending_drop(struct runs_pending *p, const char *message)
{
    al_call_throw(p->call, message);
    srun_unref(p->sr);
    free(p);
}

/* Sends a call to its connector; on any thread (the event thread, or whoever finishes the batch
 * for a call that was held: the syncer or the writer). */
static void runs_pending_send(struct runs_pending *p)
{
    struct srun *sr = p->sr;
    if (al_call_cancelled(p->call)) {
        runs_pending_drop(p, "cancelled");
        return;
    }
    struct connector_request req = {
        .target = p->f->target,
        .function = p->f->fn,
        .args_json = p->args,
        .run_id = sr->plan->id,
        .template_name = sr->plan->template_name,
        .version = sr->plan->version,
        .principal = sr->plan->principal,
        .call = al_call_seq(p->call),
        .idempotency_key = p->key,
        .cancelled = runs_pending_cancelled,
    };
    if (connector_client_call(sr->owner->client, &req, runs_call_done, p) != 0) {
        char message[RUNS_MESSAGE_MAX];
        snprintf(message, sizeof message, "connector %s: the call could not be started",
                 p->f->connector);
        runs_pending_drop(p, message);
    }
}

/* The resolution an approval gave: {"approved":true} or {"approved":false,"comment":"..."}.
 * 1 approved, 0 denied (the comment copied to ret_comment). */
static int runs_resolution_approved(const char *json, size_t len, char *ret_comment, size_t cap)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    int approved = 0;
    ret_comment[0] = '\0';
    if (json_parse(json, len, 4, &doc, &err) != AL_OK) {
        return 0;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *a = root->type == JSON_OBJECT ? json_get(root, "approved") : NULL;
    const struct json_node *c = root->type == JSON_OBJECT ? json_get(root, "comment") : NULL;
    approved = a && a->type == JSON_TRUE;
    if (c && c->type == JSON_STRING) {
        snprintf(ret_comment, cap, "%s", c->str);
    }
    json_doc_free(doc);
    return approved;
}

static void runs_log_store(struct store *s, const char *what)
{
    struct buf b;
    buf_init(&b, 4096);
    json_write_string(&b, s->ops->errmsg(s), strlen(s->ops->errmsg(s)));
    fprintf(stderr, "{\"log\":\"runs\",\"error\":\"%s\",\"store\":%s}\n", what,
            b.data ? b.data : "\"\"");
    buf_done(&b);
}

/* Marks one call sent. A run cancelled on another node sends nothing more, even before the
 * watch here sees it; and a node that was paused past its lease goes on as if nothing
 * happened: the run may be another node's by now, executed again there. */
static enum store_rc runs_mark_fn(struct writer_tx *tx, void *arg)
{
    struct runs_pending *p = arg;
    struct store *s = writer_store(tx);
    /* a call not idempotent keeps its arguments: left in doubt, a person is shown them */
    struct store_call c = { p->sr->plan->id,
                            p->key,
                            p->f->name,
                            p->f->idempotent,
                            NULL,
                            p->args_sha256,
                            p->f->idempotent ? NULL : p->args };
    /* one node (SQLite) executes every run: nobody can have taken it */
    enum store_rc rc = p->sr->owner->node[0]
                               ? s->ops->run_lock_on_node(s, c.run, p->sr->owner->node, "running")
                               : STORE_OK;
    p->taken = rc == STORE_CONFLICT;
    if (rc == STORE_OK) {
        rc = s->ops->call_mark(s, &c);
        p->diverged = rc == STORE_CONFLICT;
    }
    if (rc == STORE_CONFLICT) {
        rc = STORE_OK;
    }
    if (rc != STORE_OK) {
        runs_log_store(s, "marking a connector call sent failed; it throws");
    }
    return rc;
}

static void runs_mark_done(void *arg, enum store_rc rc)
{
    struct runs_pending *p = arg;
    if (rc == STORE_OK && p->taken) {
        runs_pending_drop(p, "airlockd: the run no longer executes on this node "
                             "(cancelled, or taken over by another node); not sent");
    } else if (rc == STORE_OK && p->diverged) {
        /* a retried execution that took another path: its key names a call already sent */
        char message[RUNS_MESSAGE_MAX];
        snprintf(message, sizeof message,
                 "airlockd: call %" PRIu32 " (%s) is not the call the run's earlier execution "
                 "sent under idempotency key %s; not sent",
                 al_call_seq(p->call), p->f->name, p->key);
        runs_pending_drop(p, message);
    } else if (rc == STORE_OK) {
        runs_pending_send(p);
    } else {
        runs_pending_drop(p, "the call could not be recorded before it was sent");
    }
}

/* Has the writer mark a call sent in the store (call_mark) and sends it once that is
 * committed: an airlockd that dies leaves behind the marks of the calls whose outcome nobody
 * recorded, and those of them with no journaled answer are in doubt. A call of a function
 * marked idempotent is sent at once, unmarked: in doubt or not sent at all, a recovery from the
 * journal makes it again live with the same idempotency key and, the journal replayed, the same
 * arguments, so its mark would decide nothing and cost a commit per call (docs/server.md,
 * "Durable runs"). A sensitive one is marked all the same: only a person's approval sends it,
 * and the mark (refused once the run is cancelled or taken over) is what keeps a cancel or a
 * revocation after that approval from being outrun. */
static void runs_pending_mark(struct runs *r, struct runs_pending *p)
{
    if (p->f->idempotent && !p->f->sensitive) {
        runs_pending_send(p);
        return;
    }
    p->mark.fn = runs_mark_fn;
    p->mark.done = runs_mark_done;
    p->mark.arg = p;
    writer_submit(r->writer, &p->mark);
}

static void runs_host(struct al_call *call, void *userdata)
{
    const struct runs_function *f = userdata;
    struct srun *sr = al_call_run_userdata(call);
    const char *interruption = al_call_interruption_id(call);
    const struct runs_decided *decided = NULL;
    char key[RUNS_ID_LEN + 32];
    size_t args_len = 0;
    const char *args = al_call_args(call, &args_len);

    /* the guest makes this call once it had the previous one's answer */
    FAULT_POINT(FAULT_AFTER_DELIVERY, al_call_seq(call) - 1);
    struct runs_call *made = runs_call_of(sr, al_call_seq(call));
    if (made) {
        made->line = al_call_line(call); /* shown to the person who approves it */
    }
    if (f->sensitive && !interruption) {
        /* a recovery of a resumed run: a person decided this call already */
        decided = runs_decided_of(sr->plan, al_call_seq(call), f->name, args, args_len);
        interruption = decided ? decided->interruption : NULL;
    }
    if (f->sensitive && !interruption) {
        /* nobody is asked to approve a call that could not be made */
        char refused[CONNECTOR_MESSAGE_MAX];
        if (connector_check_args(f->target, f->fn, args, refused, sizeof refused) != 0) {
            al_call_throw_type_error(call, refused);
            return;
        }
        struct buf payload;
        buf_init(&payload, (size_t)64 << 20);
        api_member(&payload, "{\"function\":", f->name);
        buf_append_str(&payload, ",\"args\":");
        buf_append(&payload, args, args_len);
        buf_append_str(&payload, "}");
        if (payload.data) {
            al_call_interrupt(call, payload.data, payload.len);
        } else {
            al_call_throw(call, "out of memory");
        }
        buf_done(&payload);
        return;
    }
    if (interruption) {
        char comment[RUNS_COMMENT_MAX + 1] = "";
        char message[RUNS_COMMENT_MAX + 16];
        size_t rlen = 0;
        const char *res = decided ? NULL : al_call_resolution(call, &rlen);
        int approved =
                decided ? decided->approved
                        : res && runs_resolution_approved(res, rlen, comment, sizeof comment);
        if (decided && decided->comment) {
            snprintf(comment, sizeof comment, "%s", decided->comment);
        }
        if (!approved) {
            snprintf(message, sizeof message, comment[0] ? "denied: %s" : "denied", comment);
            al_call_throw(call, message);
            return;
        }
        snprintf(key, sizeof key, "%s", interruption);
        struct runs_call *c = runs_call_of(sr, al_call_seq(call));
        if (c && !c->key) {
            c->key = strdup(interruption); /* for its journal entry */
        }
    } else {
        snprintf(key, sizeof key, "%s:%" PRIu32, sr->plan->id, al_call_seq(call));
    }
    struct runs_pending *p = calloc(1, sizeof *p);
    if (!p) {
        al_call_throw(call, "out of memory");
        return;
    }
    p->call = call;
    p->sr = sr;
    p->f = f;
    p->args = args;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)args, args_len, digest);
    hex_encode(digest, sizeof digest, p->args_sha256);
    atomic_fetch_add(&sr->refs, 1);
    snprintf(p->key, sizeof p->key, "%s", key);
    struct runs *r = sr->owner;
    pthread_mutex_lock(&r->lock);
    enum runs_start_state state = sr->start_state;
    if (state == RUNS_START_PENDING) {
        p->next = sr->held; /* the writer sends it after the fsync (runs_settle) */
        sr->held = p;
    }
    pthread_mutex_unlock(&r->lock);
    if (state == RUNS_START_DURABLE) {
        FAULT_POINT(FAULT_BEFORE_MARK, al_call_seq(call));
        runs_pending_mark(r, p);
    } else if (state == RUNS_START_UNRECORDED) {
        runs_pending_drop(p, "the run was not recorded");
    }
}

/* ---------------------------------------------------------------- the journal */

/* One batch of a run's answers, appended in the writer's transaction. */
static enum store_rc runs_journal_fn(struct writer_tx *tx, void *arg)
{
    struct srun *sr = arg;
    struct store *s = writer_store(tx);
    size_t n = 0;
    for (struct runs_jentry *j = sr->jbatch; j; j = j->next) {
        n++;
    }
    struct store_journal_entry *e = calloc(n ? n : 1, sizeof *e);
    if (!e) {
        return STORE_ERROR;
    }
    n = 0;
    for (struct runs_jentry *j = sr->jbatch; j; j = j->next) {
        e[n++] = j->e;
    }
    /* a node paused past its lease writes nothing into a run another node has taken */
    const char *node = sr->owner->node;
    enum store_rc rc =
            node[0] ? s->ops->run_lock_on_node(s, sr->plan->id, node, "running") : STORE_OK;
    /* a workspace read's file bytes kept once as a blob; its entry keeps the reference */
    for (struct runs_jentry *j = sr->jbatch; j && rc == STORE_OK; j = j->next) {
        char sha256[2 * SHA256_DIGEST_LENGTH + 1];
        if (j->read.bytes) {
            rc = s->ops->blob_put(s, j->read.bytes, j->read.len, sha256);
        }
    }
    if (rc == STORE_OK) {
        rc = s->ops->journal_append(s, sr->plan->id, e, n);
    }
    free(e);
    if (rc != STORE_OK) {
        runs_log_store(s, "a run's journal could not be written; the run fails");
    }
    return rc;
}

/* After the batch's commit: its answers go to the guest, and the answers that came meanwhile
 * make the next batch. A batch that failed fails the run: the guest never sees its answers. */
static void runs_journal_done(void *arg, enum store_rc rc)
{
    struct srun *sr = arg;
    struct runs *r = sr->owner;
    uint32_t last = 0;
    for (struct runs_jentry *j = sr->jbatch; j; j = j->next) {
        last = (uint32_t)j->e.position;
        if (rc == STORE_OK) {
            FAULT_POINT(FAULT_AFTER_JOURNAL, j->call);
        }
    }
    pthread_mutex_lock(&r->lock);
    runs_jentries_free(sr->jbatch);
    sr->jbatch = NULL;
    struct al_run *handle = sr->handle;
    if (rc != STORE_OK) {
        sr->jfailed = 1;
    } else if (!handle) {
        sr->jreleased = last; /* runs_go releases it once it has the handle */
    }
    int again = rc == STORE_OK && sr->jqueue;
    if (again) {
        sr->jbatch = sr->jqueue;
        sr->jqueue = NULL;
    } else {
        sr->jbusy = 0;
    }
    pthread_mutex_unlock(&r->lock);
    if (handle && rc != STORE_OK) {
        al_run_cancel(handle); /* its end says INTERNAL_ERROR (runs_outcome) */
    } else if (handle) {
        if (al_run_journal_release(handle, last) != AL_OK) {
            al_run_cancel(handle);
        }
    }
    if (again) {
        writer_submit(r->writer, &sr->jjob);
        return;
    }
    srun_unref(sr);
}

/* libairlock's journal callback, on the event thread: the answer is copied into the run's queue
 * and held until the writer has made it durable; never a commit of its own. */
static enum al_journal_verdict runs_journal(const struct al_journal_entry *entry, void *userdata)
{
    struct srun *sr = userdata;
    struct runs *r = sr->owner;
    struct runs_jentry *j = calloc(1, sizeof *j);
    if (!j) {
        return AL_JOURNAL_FAIL;
    }
    const struct runs_call *c = runs_call_of(sr, entry->call);
    char key[RUNS_ID_LEN + 32];
    snprintf(key, sizeof key, "%s:%" PRIu32, sr->plan->id, entry->call);
    j->call = entry->call;
    snprintf(j->call_id, sizeof j->call_id, "%" PRIu32, entry->call);
    hex_encode(entry->args_sha256, sizeof entry->args_sha256, j->args_sha256);
    j->function = strdup(entry->function);
    j->key = strdup(c && c->key ? c->key : key);
    /* a workspace read: its reference journaled, its bytes kept as a blob (run_workspace.h) */
    int ref = run_workspace_read_ref(entry->function, (int)entry->kind,
                                     (const unsigned char *)entry->payload, entry->len, &j->read);
    size_t len = ref == 1 ? strlen(j->read.ref) : entry->len;
    j->answer = ref >= 0 ? malloc(len ? len : 1) : NULL;
    if (!j->function || !j->key || !j->answer) {
        runs_jentries_free(j);
        return AL_JOURNAL_FAIL;
    }
    memcpy(j->answer, ref == 1 ? j->read.ref : entry->payload, len);
    j->e.position = entry->position;
    j->e.call_id = j->call_id;
    j->e.function = j->function;
    j->e.args_sha256 = j->args_sha256;
    j->e.idempotency_key = j->key;
    j->e.kind = (int)entry->kind;
    j->e.sync = entry->sync;
    j->e.clock_ms = entry->clock_ms;
    j->e.answer = j->answer;
    j->e.answer_len = len;
    pthread_mutex_lock(&r->lock);
    int failed = sr->jfailed;
    int submit = !failed && !sr->jbusy;
    if (!failed) {
        struct runs_jentry **tail = submit ? &sr->jbatch : &sr->jqueue;
        while (*tail) {
            tail = &(*tail)->next;
        }
        *tail = j;
        sr->jbusy = 1;
    }
    pthread_mutex_unlock(&r->lock);
    if (failed) {
        runs_jentries_free(j);
        return AL_JOURNAL_FAIL;
    }
    if (submit) {
        atomic_fetch_add(&sr->refs, 1); /* the job's, until its last done */
        sr->jjob.fn = runs_journal_fn;
        sr->jjob.done = runs_journal_done;
        sr->jjob.arg = sr;
        writer_submit(r->writer, &sr->jjob);
    }
    return AL_JOURNAL_HOLD;
}

static enum store_rc runs_end_fn(struct writer_tx *tx, void *arg);
static void runs_end_done(void *arg, enum store_rc rc);

static void runs_submit_end(struct srun *sr)
{
    sr->end.fn = runs_end_fn;
    sr->end.done = runs_end_done;
    sr->end.arg = sr;
    writer_submit(sr->owner->writer, &sr->end);
}

/* A completed run's workspace: its writable mounts committed (network) on a thread of its own,
 * before its end is recorded and answered; a failure fails the run. */
static void *runs_finish_thread(void *arg)
{
    struct srun *sr = arg;
    struct al_error err;
    memset(&err, 0, sizeof err);
    sr->finish_code = run_workspace_finish(sr->ws, &err);
    if (sr->finish_code != AL_OK) {
        snprintf(sr->finish_error, sizeof sr->finish_error, "%s",
                 err.message[0] ? err.message : al_code_name(sr->finish_code));
    }
    runs_submit_end(sr);
    return NULL;
}

/* The runner's end of a run (also called with NULL run and result when it never started):
 * hands it to the writer; result is set under the lock that cancel reads the run under. */
static void runs_done(struct al_run *run, struct al_result *result, void *userdata)
{
    struct srun *sr = userdata;
    struct runs *r = sr->owner;
    (void)run;
    /* the guest had the answer of its last call */
    FAULT_POINT(FAULT_AFTER_DELIVERY, sr->ncalls ? sr->calls[sr->ncalls - 1].seq : 0);
    pthread_mutex_lock(&r->lock);
    sr->result = result;
    pthread_mutex_unlock(&r->lock);
    if (sr->ws && result && al_result_status(result) == AL_STATUS_COMPLETED &&
        !atomic_load(&sr->cancelled)) {
        pthread_t t;
        pthread_attr_t attr;
        int started = pthread_attr_init(&attr) == 0;
        started = started && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                  pthread_create(&t, &attr, runs_finish_thread, sr) == 0;
        pthread_attr_destroy(&attr);
        if (!started) {
            runs_finish_thread(sr); /* here, then: late rather than never */
        }
        return;
    }
    runs_submit_end(sr);
}

/* ---------------------------------------------------------------- the writer */

static void runs_put_error(struct buf *b, const char *code, const char *name, size_t name_len,
                           const char *message, size_t message_len, const char *stack,
                           size_t stack_len)
{
    api_member(b, "\"error\":{\"code\":", code);
    buf_append_str(b, ",\"name\":");
    json_write_string(b, name, name_len);
    buf_append_str(b, ",\"message\":");
    json_write_string(b, message, message_len);
    buf_append_str(b, ",\"stack\":");
    json_write_string(b, stack, stack_len);
    buf_append_str(b, "}");
}

void runs_put_bounded(struct buf *b, const char *key, const char *json, size_t len)
{
    buf_printf(b, "\"%s\":", key);
    /* too deep is as unrecordable as too large: the guest's value would fail the record, and
     * with it the run's end (a call already made would go unrecorded) */
    if (len <= RUNS_AUDIT_FIELD_MAX &&
        json_check(json, len, RUNS_AUDIT_FIELD_DEPTH, NULL) == AL_OK) {
        buf_append(b, json, len);
        return;
    }
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    SHA256((const unsigned char *)json, len, md);
    hex_encode(md, sizeof md, hex);
    buf_printf(b, "{\"$truncated\":true,\"bytes\":%zu,\"sha256\":\"%s\"}", len, hex);
}

static const char *runs_outcome_name(enum al_call_outcome o)
{
    switch (o) {
    case AL_CALL_RETURNED:
        return "returned";
    case AL_CALL_THREW:
        return "threw";
    case AL_CALL_INTERRUPTED:
        return "interrupted";
    }
    return "?";
}

/* One host call's members, no braces: "call", "function", "args" (huge ones bounded), "outcome"
 * and "duration_ms", as its run.host_call record and the run's host_calls show them. */
static void runs_put_call(struct buf *b, const struct runs_call *c)
{
    buf_printf(b, "\"call\":%" PRIu32, c->seq);
    api_member(b, ",\"function\":", c->function ? c->function : "");
    buf_append_str(b, ",");
    if (c->args) {
        runs_put_bounded(b, "args", c->args, strlen(c->args));
    } else {
        buf_append_str(b, "\"args\":null");
    }
    api_member(b, ",\"outcome\":", c->ended ? runs_outcome_name(c->outcome) : "unfinished");
    buf_printf(b, ",\"duration_ms\":%.3f", (double)c->duration_us / 1000.0);
}

/* The run's host calls in order, as the run's API object shows them (host_calls): what the
 * run.host_call records say, and the thrown message or null. */
static void runs_put_calls(struct buf *b, const struct srun *sr)
{
    /* a resumed run's earlier legs first: its replayed calls make no events, so none twice */
    const char *prior = sr->plan->prior_calls;
    size_t plen = prior ? strlen(prior) : 0;
    int any = plen > 2;
    if (any) {
        buf_append(b, prior, plen - 1); /* without its ']' */
    } else {
        buf_append_str(b, "[");
    }
    for (size_t i = 0; i < sr->ncalls; i++) {
        const struct runs_call *c = &sr->calls[i];
        buf_append_str(b, any++ ? ",{" : "{");
        runs_put_call(b, c);
        api_member(b, ",\"message\":", c->message);
        buf_append_str(b, "}");
    }
    buf_append_str(b, "]");
}

/* The run's state into *ret_state; its outcome object {value|error, console, stats, host_calls}
 * into `outcome` and the same members but the host calls (their own records), huge values
 * bounded, into `audit` (no braces). -1 when a buffer overflowed. */
static int runs_outcome(struct srun *sr, struct buf *outcome, struct buf *audit,
                        enum gov_run_state *ret_state)
{
    const struct al_result *res = sr->result;
    enum gov_run_state state;
    struct buf value;
    struct buf console;
    struct buf error;
    buf_init(&value, RUNS_DETAILS_MAX);
    buf_init(&console, RUNS_DETAILS_MAX);
    buf_init(&error, RUNS_DETAILS_MAX);
    enum al_status st = res ? al_result_status(res) : AL_STATUS_FAILED;
    int cancelled = atomic_load(&sr->cancelled);
    pthread_mutex_lock(&sr->owner->lock);
    int jfailed = sr->jfailed;
    pthread_mutex_unlock(&sr->owner->lock);
    if (jfailed && !cancelled) {
        static const char why[] = "the run's journal could not be written";
        state = GOV_RUN_FAILED;
        runs_put_error(&error, al_code_name(AL_INTERNAL_ERROR), "", 0, why, strlen(why), "", 0);
    } else if (cancelled) {
        /* cancelled through the API or by a revocation: that is its end, whatever came back */
        state = GOV_RUN_CANCELLED;
        runs_put_error(&error, al_code_name(AL_ABORTED), "", 0, sr->cancel_why,
                       strlen(sr->cancel_why), "", 0);
    } else if (!res) {
        state = GOV_RUN_FAILED;
        runs_put_error(&error, al_code_name(sr->start_code ? sr->start_code : AL_INTERNAL_ERROR),
                       "", 0, sr->start_error, strlen(sr->start_error), "", 0);
    } else if (st == AL_STATUS_COMPLETED && sr->finish_code != AL_OK) {
        /* its writable mounts could not be written: nothing of it is kept */
        state = GOV_RUN_FAILED;
        runs_put_error(&error, al_code_name(sr->finish_code), "", 0, sr->finish_error,
                       strlen(sr->finish_error), "", 0);
    } else if (st == AL_STATUS_COMPLETED) {
        size_t vlen;
        const char *v = al_result_value(res, &vlen);
        state = GOV_RUN_COMPLETED;
        json_write_compact(&value, v, vlen);
    } else if (st == AL_STATUS_INTERRUPTED) {
        state = GOV_RUN_AWAITING_APPROVAL;
        buf_append_str(&value, "null");
    } else {
        struct al_error_text et;
        al_result_error_text(res, &et);
        state = GOV_RUN_FAILED;
        runs_put_error(&error, al_code_name(al_result_error_code(res)), et.name, et.name_len,
                       et.message, et.message_len, et.stack, et.stack_len);
    }
    buf_append_str(&console, "[");
    for (size_t i = 0; res && i < al_result_console_count(res); i++) {
        enum al_console_level level;
        size_t len;
        const char *text = al_result_console_text(res, i, &level, &len);
        api_member(&console, i ? ",{\"level\":" : "{\"level\":", al_console_level_name(level));
        buf_append_str(&console, ",\"text\":");
        json_write_string(&console, text, len);
        buf_append_str(&console, "}");
    }
    buf_append_str(&console, "]");
    char stats_text[512] = "{}";
    if (res) {
        struct al_stats stats;
        al_result_stats(res, &stats);
        snprintf(stats_text, sizeof stats_text,
                 "{\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"peak_memory_bytes\":%" PRIu64
                 ",\"host_calls\":%" PRIu32 ",\"seed\":\"%016" PRIx64 "\",\"clock_ms\":%" PRId64
                 ",\"jail\":\"%s\"}",
                 (double)stats.wall_us / 1000.0, (double)stats.cpu_us / 1000.0,
                 stats.peak_memory_bytes, stats.host_calls, stats.seed, stats.clock_ms,
                 stats.jailed ? "seccomp" : "none");
    }
    /* a buffer past its cap has dropped its data: the one in use must be whole */
    int whole = (error.len > 0 || value.data) && console.data;
    if (whole) {
        buf_append_str(outcome, "{");
        if (error.len) {
            buf_append(outcome, error.data, error.len);
            buf_append(audit, error.data, error.len);
        } else {
            buf_append_str(outcome, "\"value\":");
            buf_append(outcome, value.data, value.len);
            runs_put_bounded(audit, "value", value.data, value.len);
        }
        buf_append_str(outcome, ",\"console\":");
        buf_append(outcome, console.data, console.len);
        buf_printf(outcome, ",\"stats\":%s,\"host_calls\":", stats_text);
        runs_put_calls(outcome, sr);
        buf_append_str(outcome, "}");
        buf_append_str(audit, ",");
        runs_put_bounded(audit, "console", console.data, console.len);
        buf_printf(audit, ",\"stats\":%s", stats_text);
        *ret_state = state;
    }
    buf_done(&value);
    buf_done(&console);
    buf_done(&error);
    return whole ? 0 : -1;
}

/* Starts a record's details over with the members every record of a run carries: run,
 * template, version. */
static void runs_put_subject(struct buf *d, const struct runs_plan *plan)
{
    buf_reset(d);
    api_member(d, "{\"run\":", plan->id);
    api_member(d, ",\"template\":", plan->template_name);
    buf_printf(d, ",\"version\":%" PRId64, plan->version);
}

/* Closes a record's details and appends the record, airlockd's, on `subject`. */
static enum store_rc runs_audit(struct store *s, const char *action, const char *subject,
                                const struct runs_plan *plan, struct buf *d)
{
    buf_append_str(d, "}");
    return d->data ? s->ops->audit_append(s, "airlockd", action, subject, plan->department, d->data,
                                          NULL)
                   : STORE_ERROR;
}

/* The call that interrupted with id `interruption`, NULL when unknown. */
static const struct runs_call *runs_interrupted_call(const struct srun *sr,
                                                     const char *interruption)
{
    for (size_t i = 0; i < sr->ncalls; i++) {
        const struct runs_call *c = &sr->calls[i];
        if (c->interruption && strcmp(c->interruption, interruption) == 0) {
            return c;
        }
    }
    return NULL;
}

/* The approvals of an interrupted run: one per interruption, each with approval.request. */
static enum store_rc runs_record_approvals(struct store *s, struct srun *sr, struct buf *d)
{
    const struct runs_plan *plan = sr->plan;
    enum store_rc rc =
            s->ops->run_set_continuation(s, plan->id, al_result_continuation(sr->result, NULL));
    for (size_t i = 0; i < al_result_interruption_count(sr->result) && rc == STORE_OK; i++) {
        struct al_interruption in;
        char id[RUNS_ID_LEN + 1];
        (void)al_result_interruption(sr->result, i, &in);
        if (runs_new_id("apr_", id) != 0) {
            return STORE_ERROR;
        }
        const struct runs_call *c = runs_interrupted_call(sr, in.id);
        struct store_approval a = {
            .id = id,
            .run = plan->id,
            .kind = "host_call",
            .interruption = in.id,
            .function = in.function,
            .args = in.args,
            .requested_by = plan->principal,
            .department = plan->department,
            .template_name = plan->template_name,
            .version = plan->version,
            .call_seq = c ? c->seq : 0,
            .line = c ? c->line : 0,
        };
        rc = s->ops->approval_create(s, &a);
        if (rc == STORE_OK) {
            runs_put_subject(d, plan);
            api_member(d, ",\"approval\":", id);
            api_member(d, ",\"kind\":", "host_call");
            api_member(d, ",\"function\":", in.function);
            buf_append_str(d, ",");
            runs_put_bounded(d, "args", in.args, strlen(in.args));
            api_member(d, ",\"requested_by\":", plan->principal);
            rc = runs_audit(s, "approval.request", id, plan, d);
        }
        if (rc == STORE_OK) {
            rc = webhooks_approval_requested(s, id, plan->id, plan->department, "host_call",
                                             in.function);
        }
    }
    return rc;
}

/* The run.host_call record of one call of this execution. */
static enum store_rc runs_record_call(struct store *s, const struct srun *sr,
                                      const struct runs_call *c, struct buf *d)
{
    runs_put_subject(d, sr->plan);
    buf_append_str(d, ",");
    runs_put_call(d, c);
    if (c->message) {
        api_member(d, ",\"message\":", c->message);
    }
    return runs_audit(s, "run.host_call", sr->plan->id, sr->plan, d);
}

/* Writes one finished run inside the writer's transaction: its host calls, its status and
 * outcome (from running only: a run the API has ended meanwhile keeps that end, and opens no
 * approval), the approvals it waits for, and run.end or run.wait. With several nodes, nothing
 * of a run another node took over meanwhile (this one paused past its lease): it may be
 * executing again there, and its record is that execution's. */
static enum store_rc runs_record(struct store *s, struct srun *sr)
{
    struct runs *r = sr->owner;
    const struct runs_plan *plan = sr->plan;
    struct buf outcome;
    struct buf audit;
    struct buf d;
    enum store_rc rc = r->node[0]
                               ? s->ops->run_lock_on_node(s, plan->id, r->node, "running|cancelled")
                               : STORE_OK;
    if (rc != STORE_OK) {
        return rc == STORE_CONFLICT ? STORE_OK : rc;
    }
    buf_init(&outcome, RUNS_DETAILS_MAX);
    buf_init(&audit, RUNS_DETAILS_MAX);
    buf_init(&d, RUNS_DETAILS_MAX);

    for (size_t i = 0; i < sr->ncalls && rc == STORE_OK; i++) {
        rc = runs_record_call(s, sr, &sr->calls[i], &d);
    }

    enum gov_run_state state = GOV_RUN_FAILED;
    int whole = runs_outcome(sr, &outcome, &audit, &state) == 0;
    if (rc == STORE_OK && (!whole || !outcome.data || !audit.data)) {
        rc = STORE_ERROR;
    }
    int recorded = 0;
    if (rc == STORE_OK) {
        /* a run cancelled through the API is recorded cancelled already: add its outcome */
        rc = s->ops->run_set_status(s, plan->id,
                                    state == GOV_RUN_CANCELLED ? "running|cancelled" : "running",
                                    gov_run_state_name(state), outcome.data);
        recorded = rc == STORE_OK;
        if (rc == STORE_CONFLICT) {
            /* cancelled through the API just as it ended: the cancel stands (its status and
             * error), no approval opens, and this is the run.end that a cancel of a run still
             * executing leaves to the writer */
            rc = s->ops->run_set_status(s, plan->id, "cancelled", "cancelled", NULL);
            recorded = rc == STORE_OK;
            if (recorded) {
                state = GOV_RUN_CANCELLED;
            } else if (rc == STORE_CONFLICT) {
                rc = STORE_OK; /* ended otherwise meanwhile: that end stands */
            }
        }
    }
    /* the status decides: a run cancelled while its workspace was committed keeps no output,
     * and its writes to the mounts are undone (run_workspace_keep) */
    sr->recorded_completed = rc == STORE_OK && recorded && state == GOV_RUN_COMPLETED;
    if (rc == STORE_OK && sr->ws) {
        rc = run_workspace_record(s, sr->ws, plan, sr->recorded_completed, &d);
    }
    if (rc == STORE_OK) {
        rc = s->ops->call_clear(s, plan->id); /* this execution's calls are recorded above */
    }
    int waits = state == GOV_RUN_AWAITING_APPROVAL;
    if (rc == STORE_OK && recorded && waits) {
        rc = runs_record_approvals(s, sr, &d);
    }
    if (rc == STORE_OK && recorded) {
        runs_put_subject(&d, plan);
        api_member(&d, ",\"principal\":", plan->principal);
        api_member(&d, ",\"approved_by\":", plan->approved_by);
        api_member(&d, ",\"status\":", gov_run_state_name(state));
        buf_append_str(&d, ",");
        buf_append(&d, audit.data, audit.len);
        rc = runs_audit(s, waits ? "run.wait" : "run.end", plan->id, plan, &d);
    }
    if (rc == STORE_OK && recorded && state == GOV_RUN_FAILED) {
        rc = webhooks_run_failed(s, plan->id, plan->department, plan->template_name, plan->version,
                                 plan->principal);
    }
    sr->counted_status = rc == STORE_OK && recorded ? gov_run_state_name(state) : NULL;
    buf_done(&outcome);
    buf_done(&audit);
    buf_done(&d);
    return rc;
}

struct runs_row_json {
    struct store *s;
    struct buf *b;
    unsigned status;
    enum store_rc rc;
};

static int runs_row_json(void *userdata, const struct store_run *row)
{
    struct runs_row_json *j = userdata;
    j->status = gov_run_state_http_status(api_run_state(row->status));
    j->rc = runs_json(j->s, row, j->b);
    return 0;
}

enum store_rc runs_json_by_id(struct store *s, const char *id, struct buf *b, unsigned *ret_status)
{
    struct runs_row_json j = { s, b, 200, STORE_OK };
    enum store_rc rc = s->ops->run_get(s, id, runs_row_json, &j);
    if (rc == STORE_OK && j.rc != STORE_OK) {
        rc = j.rc;
    }
    if (rc == STORE_OK && ret_status) {
        *ret_status = j.status;
    }
    return rc;
}

/* ---------------------------------------------------------------- clients with a revoked key */

/* The client waiting for sr, taken: whoever takes it answers it (the run's end, or the key
 * watch refusing it); NULL when nobody waits any more. */
static struct http_deferred *runs_take_waiter(struct srun *sr)
{
    pthread_mutex_lock(&sr->owner->lock);
    struct http_deferred *d = sr->deferred;
    sr->deferred = NULL;
    pthread_mutex_unlock(&sr->owner->lock);
    return d;
}

/* 1 when a client still waits for sr with a key the store `s` says is revoked (or no longer
 * its principal's). A store failure is no proof: 0. */
static int runs_waiter_revoked(struct store *s, struct srun *sr)
{
    pthread_mutex_lock(&sr->owner->lock);
    int waits = sr->deferred && sr->waiter_key[0];
    pthread_mutex_unlock(&sr->owner->lock);
    return waits && auth_key_active(s, sr->waiter_key, sr->plan->principal) == STORE_NOT_FOUND;
}

/* A waiting client's refusal: its auth.denied record, then its 401. */
struct runs_refusal {
    struct writer_job job;
    struct http_deferred *deferred;
    struct buf details;
    struct buf body;
};

static enum store_rc runs_refusal_fn(struct writer_tx *tx, void *arg)
{
    struct runs_refusal *f = arg;
    struct store *s = writer_store(tx);
    return buf_failed(&f->details) ? STORE_ERROR
                                   : s->ops->audit_append(s, "airlockd", "auth.denied", NULL, NULL,
                                                          f->details.data, NULL);
}

/* Answered 401 whether or not the record could be made: the key is revoked either way. */
static void runs_refusal_done(void *arg, enum store_rc rc)
{
    struct runs_refusal *f = arg;
    (void)rc;
    http_deferred_answer(f->deferred, 401, f->body.data ? f->body.data : "", f->body.len);
    buf_done(&f->details);
    buf_done(&f->body);
    free(f);
}

/* Answers a client waiting with key `key` on `route` 401 UNAUTHENTICATED, as the router answers
 * a revoked key, once its auth.denied record is in; takes d. Any thread. */
static void runs_refuse_waiter(struct runs *r, struct http_deferred *d, const char *key,
                               const char *route)
{
    char why[AUTH_PREFIX_LEN + 64];
    const char *request_id = http_deferred_request_id(d);
    struct runs_refusal *f = calloc(1, sizeof *f);
    snprintf(why, sizeof why, "the API key %s was revoked while the request waited", key);
    if (!f) {
        char body[256 + HTTP_REQUEST_ID_LEN];
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"code\":\"UNAUTHENTICATED\",\"message\":\"%s\","
                         "\"request_id\":\"%s\"}}\n",
                         why, request_id);
        http_deferred_answer(d, 401, body, n > 0 ? (size_t)n : 0);
        return;
    }
    f->deferred = d;
    buf_init(&f->details, 4096);
    buf_init(&f->body, 4096);
    api_member(&f->details, "{\"method\":\"POST\",\"route\":", route);
    api_member(&f->details, ",\"path\":", route);
    api_member(&f->details, ",\"status\":401,\"reason\":", why);
    api_member(&f->details, ",\"request_id\":", request_id);
    buf_append_str(&f->details, "}");
    api_member(&f->body, "{\"error\":{\"code\":\"UNAUTHENTICATED\",\"message\":", why);
    api_member(&f->body, ",\"request_id\":", request_id);
    buf_append_str(&f->body, "}}\n");
    f->job.fn = runs_refusal_fn;
    f->job.done = runs_refusal_done;
    f->job.arg = f;
    writer_submit(r->writer, &f->job);
}

/* A client waiting for a run here, as the key watch copies it out of the active list. */
struct runs_waiter {
    char id[RUNS_ID_LEN + 1];
    char key[AUTH_PREFIX_LEN + 1];
    char principal[STORE_NAME_MAX + 1];
    int revoked;
};

/* One look: the waiting clients' keys are read on a reader, outside runs.lock, and each client
 * whose key is revoked is taken from its run (if the run has not answered it meanwhile) and
 * refused. */
static void runs_watch_once(struct runs *r)
{
    struct runs_waiter *w = NULL;
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    w = r->nactive ? calloc(r->nactive, sizeof *w) : NULL;
    for (struct srun *sr = r->active; sr && w && n < r->nactive; sr = sr->next_active) {
        if (sr->deferred && sr->waiter_key[0]) {
            snprintf(w[n].id, sizeof w[n].id, "%s", sr->plan->id);
            snprintf(w[n].key, sizeof w[n].key, "%s", sr->waiter_key);
            snprintf(w[n].principal, sizeof w[n].principal, "%s", sr->plan->principal);
            n++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    struct store *s = n ? readers_take(r->readers) : NULL;
    for (size_t i = 0; i < n && s; i++) {
        w[i].revoked = auth_key_active(s, w[i].key, w[i].principal) == STORE_NOT_FOUND;
    }
    if (s) {
        readers_give(r->readers, s);
    }
    for (size_t i = 0; i < n; i++) {
        struct http_deferred *d = NULL;
        char route[sizeof((struct srun *)0)->waiter_route] = "";
        pthread_mutex_lock(&r->lock);
        for (struct srun *sr = r->active; sr && w[i].revoked; sr = sr->next_active) {
            if (strcmp(sr->plan->id, w[i].id) == 0 && strcmp(sr->waiter_key, w[i].key) == 0) {
                d = sr->deferred;
                sr->deferred = NULL;
                memcpy(route, sr->waiter_route, sizeof route);
                break;
            }
        }
        pthread_mutex_unlock(&r->lock);
        if (d) {
            runs_refuse_waiter(r, d, w[i].key, route);
        }
    }
    free(w);
}

static void *runs_watch_thread(void *arg)
{
    struct runs *r = arg;
    unsigned looks = 0;
    pthread_mutex_lock(&r->lock);
    while (!r->watch_stop) {
        struct timespec deadline; /* monotonic (watch_cond's clock): a clock step never stalls it */
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += (long)RUNS_WATCH_MS * 1000000L;
        deadline.tv_sec += deadline.tv_nsec / 1000000000L;
        deadline.tv_nsec %= 1000000000L;
        (void)pthread_cond_timedwait(&r->watch_cond, &r->lock, &deadline);
        if (r->watch_stop) {
            break;
        }
        pthread_mutex_unlock(&r->lock);
        runs_watch_once(r);
        if (++looks % RUNS_EXPIRE_LOOKS == 0) {
            api_approvals_expire(r->readers, r->writer, clock_wall_ms());
        }
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int runs_watch_keys(struct runs *r, struct readers *readers, struct al_error *reterr)
{
    r->readers = readers;
    if (pthread_create(&r->watch_thread, NULL, runs_watch_thread, r) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the thread that watches keys");
        return -1;
    }
    r->watching = 1;
    return 0;
}

/* A 500 INTERNAL answer into b, naming the request. */
static void runs_internal_answer(struct buf *b, unsigned *ret_status, const char *message,
                                 const char *request_id)
{
    *ret_status = 500;
    buf_reset(b);
    api_member(b, "{\"error\":{\"code\":\"INTERNAL\",\"message\":", message);
    buf_printf(b, ",\"request_id\":\"%s\"}}\n", request_id);
}

/* The answer of a recorded run, read back from the store as GET /v1/runs/{id} would. */
static void runs_build_answer(struct store *s, struct srun *sr)
{
    buf_reset(&sr->answer);
    if (runs_json_by_id(s, sr->plan->id, &sr->answer, &sr->answer_status) != STORE_OK ||
        buf_failed(&sr->answer)) {
        runs_internal_answer(&sr->answer, &sr->answer_status, "the run could not be read back",
                             sr->request_id);
        return;
    }
    buf_append_str(&sr->answer, "\n");
    /* a fork whose new input changed the path before its at_call: refused as a conflict (the
     * run itself is recorded failed PROTOCOL_ERROR) */
    struct al_error_text et;
    memset(&et, 0, sizeof et);
    if (sr->plan->fork_at_call > 0 && sr->result &&
        al_result_status(sr->result) == AL_STATUS_FAILED &&
        al_result_error_code(sr->result) == AL_PROTOCOL_ERROR) {
        al_result_error_text(sr->result, &et);
    }
    if (et.message && memmem(et.message, et.message_len, "diverges at call", 16)) {
        sr->answer_status = 409;
        buf_reset(&sr->answer);
        buf_append_str(&sr->answer, "{\"error\":{\"code\":\"CONFLICT\",\"message\":");
        json_write_string(&sr->answer, et.message, et.message_len);
        api_member(&sr->answer, ",\"run\":", sr->plan->id);
        buf_printf(&sr->answer, ",\"request_id\":\"%s\"}}\n", sr->request_id);
    }
}

static int runs_go(struct runs *r, struct srun *sr, const char *continuation,
                   const struct runs_resolution *resolutions, size_t nresolutions);

/* The share of `name` in `list`, made when missing (NULL when out of memory); runs.lock. */
static struct runs_share *runs_share_of(struct runs_share **list, const char *name)
{
    for (struct runs_share *sh = *list; sh; sh = sh->next) {
        if (strcmp(sh->name, name) == 0) {
            return sh;
        }
    }
    struct runs_share *sh = calloc(1, sizeof *sh);
    if (sh) {
        snprintf(sh->name, sizeof sh->name, "%s", name);
        sh->next = *list;
        *list = sh;
    }
    return sh;
}

/* Forgets the shares with nothing running or waiting; runs.lock. */
static void runs_share_prune(struct runs *r, struct runs_share **list)
{
    for (struct runs_share **p = list; *p;) {
        struct runs_share *sh = *p;
        if (sh->running == 0 && sh->queued == 0 && sh != r->served) {
            *p = sh->next;
            free(sh);
        } else {
            p = &sh->next;
        }
    }
}

/* Whether sr may take a slot now; runs.lock. */
static int runs_room(const struct runs *r, const struct runs_share *principal,
                     const struct runs_share *department)
{
    return principal->running < r->limits.per_principal &&
           department->running < r->limits.per_department && r->running < r->limits.total;
}

static void runs_take_slot(struct runs *r, struct srun *sr, struct runs_share *principal,
                           struct runs_share *department)
{
    principal->running++;
    department->running++;
    r->running++;
    sr->holds_slot = 1;
}

/* Takes sr off its department's queue; runs.lock. */
static void runs_unqueue(struct runs *r, struct srun *sr)
{
    struct runs_share *dept = runs_share_of(&r->departments, sr->plan->department);
    struct runs_share *principal = runs_share_of(&r->principals, sr->plan->principal);
    struct srun *prev = NULL;
    for (struct srun **p = dept ? &dept->head : NULL; p && *p; prev = *p, p = &(*p)->next_waiting) {
        if (*p == sr) {
            *p = sr->next_waiting;
            if (dept->tail == sr) {
                dept->tail = prev;
            }
            break;
        }
    }
    dept->queued -= dept->queued > 0;
    if (principal) {
        principal->queued -= principal->queued > 0;
    }
    sr->waiting = 0;
    sr->next_waiting = NULL;
}

/* Under runs.lock. A run still waiting for its slot leaves its queue for r->ending: whoever
 * cancelled it ends it once the lock is let go (runs_end_cancelled). */
static void runs_cancel_one(struct srun *sr, const char *why)
{
    if (atomic_load(&sr->cancelled)) {
        return;
    }
    snprintf(sr->cancel_why, sizeof sr->cancel_why, "%s", why);
    atomic_store(&sr->cancelled, 1);
    if (sr->handle) {
        al_run_cancel(sr->handle);
    }
    if (sr->waiting) {
        struct runs *r = sr->owner;
        runs_unqueue(r, sr);
        sr->next_waiting = r->ending;
        r->ending = sr;
    }
}

/* Ends the waiting runs runs_cancel_one took off their queues (each as a start that finds
 * itself cancelled); without runs.lock. */
static void runs_end_cancelled(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    struct srun *sr = r->ending;
    r->ending = NULL;
    pthread_mutex_unlock(&r->lock);
    while (sr) {
        struct srun *next = sr->next_waiting;
        sr->next_waiting = NULL;
        runs_go(r, sr, NULL, NULL, 0);
        sr = next;
    }
}

/* The next waiting run that has room, its slot taken: the departments' queues in turn from
 * the one after the last served, each its oldest run whose principal has room; NULL when none
 * can start. runs.lock. */
static struct srun *runs_next_waiting(struct runs *r)
{
    if (!r->departments) {
        return NULL;
    }
    struct runs_share *start = r->served && r->served->next ? r->served->next : r->departments;
    struct runs_share *d = start;
    do {
        for (struct srun *w = d->head; w && d->running < r->limits.per_department;
             w = w->next_waiting) {
            struct runs_share *principal = runs_share_of(&r->principals, w->plan->principal);
            if (principal && runs_room(r, principal, d)) {
                runs_unqueue(r, w);
                runs_take_slot(r, w, principal, d);
                r->served = d;
                return w;
            }
        }
        d = d->next ? d->next : r->departments;
    } while (d != start);
    return NULL;
}

/* A run's slot is free again: the waiting runs that now have room start, fairly. */
static void runs_release(struct runs *r, struct srun *sr)
{
    struct srun *go[8];
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    if (sr->holds_slot) {
        sr->holds_slot = 0;
        struct runs_share *principal = runs_share_of(&r->principals, sr->plan->principal);
        struct runs_share *dept = runs_share_of(&r->departments, sr->plan->department);
        principal->running -= principal && principal->running > 0;
        dept->running -= dept && dept->running > 0;
        r->running -= r->running > 0;
    }
    while (n < sizeof go / sizeof go[0] && (go[n] = runs_next_waiting(r)) != NULL) {
        n++;
    }
    runs_share_prune(r, &r->principals);
    runs_share_prune(r, &r->departments);
    pthread_mutex_unlock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        runs_go(r, go[i], NULL, NULL, 0);
    }
}

/* Takes a slot for a new run that will execute, or queues it for one: 1 when it may go now,
 * 0 when it waits, -1 when its principal has too many waiting already (or out of memory).
 * runs.lock. */
static int runs_admit(struct runs *r, struct srun *sr)
{
    struct runs_share *principal = runs_share_of(&r->principals, sr->plan->principal);
    struct runs_share *dept = runs_share_of(&r->departments, sr->plan->department);
    if (!principal || !dept) {
        return -1;
    }
    /* the runs waiting ahead of it lack room of their own principal's, or this one lacks it */
    if (runs_room(r, principal, dept)) {
        runs_take_slot(r, sr, principal, dept);
        return 1;
    }
    if (principal->queued >= r->limits.per_principal_queued) {
        return -1;
    }
    sr->waiting = 1;
    if (dept->tail) {
        dept->tail->next_waiting = sr;
    } else {
        dept->head = sr;
    }
    dept->tail = sr;
    dept->queued++;
    principal->queued++;
    return 0;
}

/* A launch's record has committed (rc STORE_OK): its held connector calls go out. Or it never
 * will be (refused, failed, rolled back with the job that launched it): the run is cancelled,
 * its held calls throw and its end is never recorded. On the writer's thread. */
static void runs_settle(void *arg, enum store_rc rc)
{
    struct srun *sr = arg;
    struct runs *r = sr->owner;
    int recorded = rc == STORE_OK;
    pthread_mutex_lock(&r->lock);
    sr->start_state = recorded ? RUNS_START_DURABLE : RUNS_START_UNRECORDED;
    struct runs_pending *held = sr->held;
    sr->held = NULL;
    if (!recorded) {
        runs_cancel_one(sr, "the run was not recorded");
    }
    pthread_mutex_unlock(&r->lock);
    runs_end_cancelled(r);
    while (held) {
        struct runs_pending *next = held->next;
        if (recorded) {
            FAULT_POINT(FAULT_BEFORE_MARK, al_call_seq(held->call));
            runs_pending_mark(r, held);
        } else {
            runs_pending_drop(held, "the run was not recorded");
        }
        held = next;
    }
}

/* A new run's record and, for a start that waits for no run, its answer, read back at once:
 * the answer says how it started. A refusal writes nothing and keeps the job's transaction. */
static enum store_rc runs_start_fn(struct writer_tx *tx, void *arg)
{
    struct runs_job *job = arg;
    struct store *s = writer_store(tx);
    const char *node = job->owner->node;
    const char *id = job->sr ? job->sr->plan->id : job->start.plan->id; /* wherever its plan is */
    buf_reset(&job->answer);
    job->status = 409;
    enum store_rc rc = job->start.record(s, job->start.record_userdata, &job->answer, &job->status);
    if (rc == STORE_CONFLICT) {
        job->refused = 1;
        return STORE_OK;
    }
    /* a run that executes here names this node; a held or queued one belongs to no node yet */
    int executes = job->start.mode == RUNS_START_WAIT || job->start.mode == RUNS_START_NOWAIT;
    if (rc == STORE_OK && node[0] && executes) {
        rc = s->ops->run_set_node(s, id, node);
    }
    /* where a replay of its journal starts (a held or queued run's is set when it starts, but
     * a fork's is its original's, whenever it starts) */
    const struct runs_plan *plan = job->sr ? job->sr->plan : job->start.plan;
    if (rc == STORE_OK && (executes || plan->fork_at_call > 0) && plan->clock_ms > 0) {
        /* a fork replays its original's journal: it keeps the original's seed */
        rc = s->ops->run_set_origin(s, id, plan->has_seed ? plan->seed : runs_seed(job->owner, id),
                                    plan->clock_ms);
    }
    /* every node hears of a queued run once this commits (the first to claim it executes it) */
    if (rc == STORE_OK && job->start.mode == RUNS_START_QUEUED && s->ops->notify) {
        rc = s->ops->notify(s, STORE_CHANNEL_QUEUE, id);
    }
    if (rc == STORE_OK && job->start.mode != RUNS_START_WAIT) {
        rc = runs_json_by_id(s, id, &job->answer, &job->status);
        if (rc == STORE_OK && buf_failed(&job->answer)) {
            rc = STORE_ERROR;
        }
        buf_append_str(&job->answer, "\n");
    }
    if (rc != STORE_OK) {
        runs_log_store(s, "a run's start could not be recorded");
    }
    return rc;
}

/* After the start's commit: the run's held calls go out, or (refused, failed) it is cancelled
 * and its client gets the refusal; a start that waits for no run is answered. */
static void runs_start_done(void *arg, enum store_rc rc)
{
    struct runs_job *job = arg;
    struct runs *r = job->owner;
    struct runs_start *st = &job->start;
    struct srun *sr = job->sr;
    int recorded = rc == STORE_OK && !job->refused;
    if (rc != STORE_OK) {
        runs_internal_answer(&job->answer, &job->status, "the run could not be recorded",
                             st->deferred ? http_deferred_request_id(st->deferred)
                             : sr         ? sr->request_id
                                          : "");
    }
    if (sr) {
        runs_settle(sr, recorded ? STORE_OK : STORE_CONFLICT);
        struct http_deferred *waiter = recorded ? NULL : runs_take_waiter(sr);
        if (waiter) {
            http_deferred_answer(waiter, job->status, job->answer.data ? job->answer.data : "",
                                 job->answer.len);
        }
    }
    if (st->deferred) {
        http_deferred_answer(st->deferred, job->status, job->answer.data ? job->answer.data : "",
                             job->answer.len);
    }
    if (st->record_free) {
        st->record_free(st->record_userdata);
    }
    if (!sr && st->plan) {
        /* not started: held for a person, or refused or not recorded */
        runs_plan_free(st->plan);
        runs_unhold(r);
    }
    int queued = st->mode == RUNS_START_QUEUED && recorded;
    buf_done(&job->answer);
    free(job);
    if (queued) {
        runs_kick(r); /* committed: this node, or the first other to look, claims it */
    }
}

void runs_submit(struct runs *r, const struct runs_start *start)
{
    struct runs_job *job = calloc(1, sizeof *job);
    int held = start->mode == RUNS_START_HELD || start->mode == RUNS_START_QUEUED;
    int wait = start->mode == RUNS_START_WAIT;
    /* a run that will execute is active from now on and executes at once (its connector calls
     * held until its record is durable) or once its fair share has room; a held one only
     * counts as starting */
    struct srun *sr = job && !held ? srun_new(r, start->plan, wait ? start->deferred : NULL) : NULL;
    if (job && !held && !sr) {
        free(job);
        job = NULL;
    }
    if (sr && wait) {
        snprintf(sr->waiter_key, sizeof sr->waiter_key, "%s", start->key_prefix);
        snprintf(sr->waiter_route, sizeof sr->waiter_route, "%s", start->route);
    }
    int go = 0;
    pthread_mutex_lock(&r->lock);
    int draining = r->draining;
    if (job && !draining && sr) {
        go = runs_admit(r, sr);
    }
    int full = go < 0;
    if (job && !draining && !full) {
        job->owner = r;
        job->start = *start;
        buf_init(&job->answer, (size_t)96 << 20);
        if (sr) {
            sr->start_state = RUNS_START_PENDING;
            srun_activate(r, sr);
            job->sr = sr;
            job->start.plan = NULL; /* the run's now */
            if (wait) {
                job->start.deferred = NULL; /* the run answers it */
            }
        } else {
            r->nstarting++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (job && !draining && !full) {
        job->job.fn = runs_start_fn;
        job->job.done = runs_start_done;
        job->job.arg = job;
        writer_submit(r->writer, &job->job);
        if (go > 0) {
            runs_go(r, sr, NULL, NULL, 0);
        }
        return;
    }
    if (sr) {
        sr->plan = NULL; /* freed below with the start's */
        sr->deferred = NULL;
        buf_done(&sr->answer);
        free(sr);
    }
    /* refused: out of memory, too many waiting, or airlockd stops (no run starts once the
     * drain has begun) */
    struct http_response resp;
    http_response_init(&resp);
    resp.status = full && job ? 429 : 500;
    resp.retry_after_s = full && job ? 1 : 0;
    if (resp.status == 429) {
        buf_printf(&resp.body,
                   "{\"error\":{\"code\":\"RATE_LIMITED\",\"message\":\"%zu runs of this "
                   "principal wait for room already: retry later\"",
                   r->limits.per_principal_queued);
    } else {
        buf_printf(&resp.body, "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"%s\"",
                   draining ? "airlockd is shutting down: start the run again once it is back"
                            : "out of memory");
    }
    buf_printf(&resp.body, ",\"request_id\":\"%s\"}}\n", http_deferred_request_id(start->deferred));
    free(job);
    runs_plan_free(start->plan);
    if (start->record_free) {
        start->record_free(start->record_userdata);
    }
    http_deferred_reply(start->deferred, &resp);
    http_response_done(&resp);
}

/* A run whose end cannot be recorded (its store write fails) still ends: failed, with what
 * little is certain (the calls it made, and that it failed), so that it is never left running
 * and no call that reached a connector goes unrecorded. */
static enum store_rc runs_minimal_fn(struct writer_tx *tx, void *arg)
{
    struct srun *sr = arg;
    struct store *s = writer_store(tx);
    static const char head[] =
            "{\"error\":{\"code\":\"INTERNAL_ERROR\",\"name\":\"\",\"message\":\"the run's end "
            "could not be recorded\",\"stack\":\"\"},\"console\":[],\"stats\":{},\"host_calls\":";
    struct buf outcome;
    struct buf d;
    buf_init(&outcome, RUNS_DETAILS_MAX);
    buf_init(&d, RUNS_DETAILS_MAX);
    buf_append_str(&outcome, head);
    runs_put_calls(&outcome, sr);
    buf_append_str(&outcome, "}");
    if (buf_failed(&outcome)) {
        buf_reset(&outcome);
        buf_append_str(&outcome, head);
        buf_append_str(&outcome, "[]}");
    }
    const char *status = "failed";
    enum store_rc rc = s->ops->run_set_status(s, sr->plan->id, "running", "failed", outcome.data);
    if (rc == STORE_CONFLICT) {
        status = "cancelled"; /* the API ended it: that stays its end */
        rc = STORE_OK;
    }
    /* the calls it made were made: each keeps its record, in a savepoint of its own so that
     * one that cannot be written takes nothing else with it */
    for (size_t i = 0; i < sr->ncalls && rc == STORE_OK; i++) {
        if (s->ops->tx_begin(s) != STORE_OK) {
            break;
        }
        if (runs_record_call(s, sr, &sr->calls[i], &d) != STORE_OK ||
            s->ops->tx_commit(s) != STORE_OK) {
            s->ops->tx_rollback(s);
            runs_log_store(s, "a host call of a run whose end failed could not be recorded");
        }
    }
    runs_put_subject(&d, sr->plan);
    buf_printf(&d,
               ",\"status\":\"%s\",\"error\":{\"code\":\"INTERNAL_ERROR\","
               "\"message\":\"the run's end could not be recorded\"}",
               status);
    if (rc == STORE_OK) {
        rc = runs_audit(s, "run.end", sr->plan->id, sr->plan, &d);
    }
    if (rc == STORE_OK && strcmp(status, "failed") == 0) {
        rc = webhooks_run_failed(s, sr->plan->id, sr->plan->department, sr->plan->template_name,
                                 sr->plan->version, sr->plan->principal);
    }
    buf_done(&outcome);
    buf_done(&d);
    sr->counted_status = NULL;
    if (rc == STORE_OK) {
        runs_build_answer(s, sr);
        sr->waiter_revoked = runs_waiter_revoked(s, sr); /* as runs_end_fn: the answer has calls */
    } else {
        runs_log_store(s, "a run's end could not be recorded at all");
    }
    return rc;
}

/* One finished run: its record and its answer, read back in the same transaction. */
static enum store_rc runs_end_fn(struct writer_tx *tx, void *arg)
{
    struct srun *sr = arg;
    struct store *s = writer_store(tx);
    if (sr->start_state == RUNS_START_UNRECORDED) {
        return STORE_OK; /* never recorded: nor is its end */
    }
    const struct al_result *res = sr->result;
    if (sr->handed_back && !sr->jfailed &&
        (!res ||
         (al_result_status(res) == AL_STATUS_FAILED && al_result_error_code(res) == AL_ABORTED))) {
        /* stopped by the drain, not ended: queued to go on from its journal (on another node,
         * or at the next start), unless a call it sent is in doubt and not idempotent */
        int queued = 0;
        enum store_rc rc = nodes_take_over(s, sr->plan->id, sr->plan->department, sr->owner->node,
                                           "airlockd drained past its grace period while the "
                                           "run was executing",
                                           NULL, &queued, NULL);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK; /* ended otherwise meanwhile: that end stands */
        }
        if (rc == STORE_OK) {
            runs_build_answer(s, sr);
        }
        return rc;
    }
    enum store_rc rc = runs_record(s, sr);
    if (rc == STORE_OK) {
        runs_build_answer(s, sr);
        sr->waiter_revoked = runs_waiter_revoked(s, sr);
    } else {
        runs_log_store(s, "a run's end could not be recorded; recording it failed");
    }
    return rc;
}

/* After the end's commit: its client is answered, it leaves the active list, and it is
 * counted; an end that could not be recorded is recorded failed first (runs_minimal_fn). */
static void runs_end_done(void *arg, enum store_rc rc)
{
    struct srun *sr = arg;
    struct runs *r = sr->owner;
    if (rc != STORE_OK && sr->start_state != RUNS_START_UNRECORDED) {
        if (sr->end.fn == runs_end_fn) {
            sr->end.fn = runs_minimal_fn;
            writer_submit(r->writer, &sr->end);
            return;
        }
        runs_internal_answer(&sr->answer, &sr->answer_status, "the run's end could not be recorded",
                             sr->request_id);
    }
    if (rc == STORE_OK && sr->end.fn == runs_end_fn && sr->recorded_completed) {
        run_workspace_keep(sr->ws);
    }
    struct http_deferred *waiter = runs_take_waiter(sr);
    if (waiter && sr->waiter_revoked) {
        runs_refuse_waiter(r, waiter, sr->waiter_key, sr->waiter_route);
    } else if (waiter) {
        http_deferred_answer(waiter, sr->answer_status, sr->answer.data ? sr->answer.data : "",
                             sr->answer.len);
    }
    /* off the active list only once answered: the drain's "every run answered" */
    pthread_mutex_lock(&r->lock);
    int was_full = r->node[0] && r->nactive + r->nstarting >= r->capacity;
    for (struct srun **p = &r->active; *p; p = &(*p)->next_active) {
        if (*p == sr) {
            *p = sr->next_active;
            r->nactive--;
            break;
        }
    }
    /* room again: what was queued while this node was full is claimed now, not at the
     * next poll */
    int room = was_full && !r->draining && r->nactive + r->nstarting < r->capacity;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    runs_release(r, sr); /* its slot goes to the next waiting run, department by department */
    if (room) {
        runs_kick(r);
    }
    if (rc == STORE_OK && sr->counted_status) {
        metrics_run(sr->plan->template_name[0] ? sr->plan->template_name : "_adhoc",
                    sr->counted_status, (double)(clock_mono_us() - sr->started_us) / 1e6);
    }
    srun_unref(sr);
}

/* ---------------------------------------------------------------- launching */

/* The length of a leading "use strict" directive (with its semicolon), 0 when there is none:
 * the input's declaration goes after it, so the directive prologue stays one. */
static size_t runs_directive_len(const char *src)
{
    size_t i = strspn(src, " \t");
    for (const char *q = "\"'"; *q; q++) {
        char lit[16];
        snprintf(lit, sizeof lit, "%cuse strict%c", *q, *q);
        if (strncmp(src + i, lit, strlen(lit)) == 0) {
            i += strlen(lit);
            i += strspn(src + i, " \t");
            return src[i] == ';' ? i + 1 : i;
        }
    }
    return 0;
}

/* The guest's frozen global `input`, declared on the source's first line (after a leading
 * "use strict") so that every other line keeps its number. */
static int runs_source(const struct runs_plan *plan, struct buf *b)
{
    size_t directive = runs_directive_len(plan->source);
    buf_append(b, plan->source, directive);
    buf_append_str(b, directive ? " const input = ((f) => f(f, JSON.parse("
                                : "const input = ((f) => f(f, JSON.parse(");
    json_write_string(b, plan->input_json, strlen(plan->input_json));
    buf_append_str(b, ")))((f, o) => { if (o !== null && typeof o === \"object\") { "
                      "for (const k of Object.keys(o)) f(f, o[k]); Object.freeze(o); } "
                      "return o; }); ");
    buf_append_str(b, plan->source + directive);
    return b->data ? 0 : -1;
}

/* What every execution of a plan has: its source with the input, its limits, its id. */
static enum al_code runs_opts_base(const struct runs_plan *plan, struct al_run_opts *opts)
{
    struct buf src;
    buf_init(&src, (size_t)64 << 20);
    enum al_code code =
            runs_source(plan, &src) != 0
                    ? AL_INTERNAL_ERROR
                    : al_run_opts_set_source(opts, src.data, src.len,
                                             plan->template_name[0] ? "template.js" : "adhoc.js");
    if (code == AL_OK && plan->typescript) {
        code = al_run_opts_set_source_type(opts, AL_SOURCE_BODY | AL_SOURCE_TYPESCRIPT);
    }
    for (size_t i = 0; i < plan->nlimits && code == AL_OK; i++) {
        code = al_run_opts_set_limit(opts, plan->limit_which[i], plan->limit_value[i]);
    }
    if (code == AL_OK) {
        code = al_run_opts_set_run_id(opts, plan->id);
    }
    buf_done(&src);
    return code;
}

enum al_code runs_replay_opts(const struct runs_plan *plan, al_host_fn *host, void *userdata,
                              struct al_run_opts *opts)
{
    enum al_code code = runs_opts_base(plan, opts);
    for (size_t i = 0; i < plan->nfunctions && code == AL_OK; i++) {
        code = al_run_opts_add_host(opts, plan->functions[i].name, host, NULL, 0);
    }
    if (code == AL_OK) {
        al_run_opts_set_seed(opts, plan->seed);
        al_run_opts_set_clock(opts, plan->clock_ms);
    }
    for (size_t i = 0; i < plan->njournal && code == AL_OK; i++) {
        code = al_run_opts_add_journal_entry(opts, &plan->journal[i]);
    }
    if (code == AL_OK) {
        al_run_opts_set_userdata(opts, userdata);
    }
    return code;
}

static enum al_code runs_opts(struct srun *sr, const char *continuation,
                              const struct runs_resolution *res, size_t nres,
                              struct al_run_opts *opts)
{
    const struct runs_plan *plan = sr->plan;
    enum al_code code = runs_opts_base(plan, opts);
    if (code == AL_OK) {
        /* a continuation resumes this run only */
        code = al_run_opts_set_context(opts, plan->id, strlen(plan->id));
    }
    if (code == AL_OK) {
        code = al_run_opts_set_audience(opts, RUNS_AUDIENCE);
    }
    for (size_t i = 0; i < plan->nfunctions && code == AL_OK; i++) {
        code = al_run_opts_add_host(opts, plan->functions[i].name, runs_host, &plan->functions[i],
                                    0);
    }
    if (code == AL_OK && continuation) {
        code = al_run_opts_set_resume(opts, continuation, strlen(continuation));
    } else if (code == AL_OK && plan->clock_ms > 0) {
        /* a fixed start: a recovery replays the journal from the same point */
        al_run_opts_set_seed(opts, plan->has_seed ? plan->seed : runs_seed(sr->owner, plan->id));
        al_run_opts_set_clock(opts, plan->clock_ms);
    }
    for (size_t i = 0; i < plan->njournal && code == AL_OK && !continuation; i++) {
        code = al_run_opts_add_journal_entry(opts, &plan->journal[i]);
    }
    for (size_t i = 0; i < nres && code == AL_OK; i++) {
        struct buf rj;
        buf_init(&rj, 4096);
        buf_printf(&rj, "{\"approved\":%s", res[i].approved ? "true" : "false");
        if (res[i].comment) {
            buf_append_str(&rj, ",\"comment\":");
            json_write_string(&rj, res[i].comment, strnlen(res[i].comment, RUNS_COMMENT_MAX));
        }
        buf_append_str(&rj, "}");
        code = rj.data ? al_run_opts_add_resolution(opts, res[i].interruption, rj.data, rj.len)
                       : AL_INTERNAL_ERROR;
        buf_done(&rj);
    }
    if (code == AL_OK && sr->ws) {
        code = al_run_opts_set_workspace(opts, run_workspace_of(sr->ws));
    }
    if (code == AL_OK) {
        al_run_opts_set_userdata(opts, sr);
        al_run_opts_set_event_callback(opts, runs_event, sr);
        al_run_opts_set_journal(opts, runs_journal, sr);
    }
    return code;
}

int runs_hold(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    int ok = !r->draining;
    if (ok) {
        r->nstarting++;
    }
    pthread_mutex_unlock(&r->lock);
    return ok ? 0 : -1;
}

void runs_unhold(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    r->nstarting--;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void runs_answer_oom(struct http_deferred *deferred)
{
    char oom[160];
    int n = snprintf(oom, sizeof oom,
                     "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"out of memory\","
                     "\"request_id\":\"%s\"}}\n",
                     http_deferred_request_id(deferred));
    http_deferred_answer(deferred, 500, oom, (size_t)n);
}

/* A held launch (runs_hold) made active, on the list cancel, revocation and drain walk, before
 * anything can end it; NULL when out of memory (plan freed, deferred answered). */
static struct srun *runs_prepare(struct runs *r, struct runs_plan *plan,
                                 struct http_deferred *deferred)
{
    struct srun *sr = srun_new(r, plan, deferred);
    if (!sr) {
        runs_plan_free(plan);
        if (deferred) {
            runs_answer_oom(deferred);
        }
        runs_unhold(r);
        return NULL;
    }
    pthread_mutex_lock(&r->lock);
    srun_activate(r, sr);
    r->nstarting--; /* handed over to nactive */
    /* a resume counts in its shares but never waits: it was admitted at its start */
    struct runs_share *principal = runs_share_of(&r->principals, plan->principal);
    struct runs_share *dept = runs_share_of(&r->departments, plan->department);
    if (principal && dept) {
        runs_take_slot(r, sr, principal, dept);
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return sr;
}

/* Starts an active run, unless it was cancelled meanwhile: then it ends at once, recorded
 * cancelled. A cancel that comes while al_run_start runs is delivered as soon as the handle
 * exists. */
static int runs_go(struct runs *r, struct srun *sr, const char *continuation,
                   const struct runs_resolution *resolutions, size_t nresolutions)
{
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (atomic_load(&sr->cancelled)) {
        atomic_fetch_sub(&sr->refs, 1);
        runs_done(NULL, NULL, sr);
        return -1;
    }
    /* every execution builds its workspace again from the plan: a replayed write lands again */
    enum al_code code =
            sr->plan->workspace_manifest ? run_workspace_new(sr->plan, &sr->ws, &err) : AL_OK;
    struct al_run_opts *opts = code == AL_OK ? al_run_opts_new() : NULL;
    if (code == AL_OK) {
        code = opts ? runs_opts(sr, continuation, resolutions, nresolutions, opts)
                    : AL_INTERNAL_ERROR;
    }
    struct al_run *handle = NULL;
    if (code == AL_OK) {
        code = al_run_start(r->runner, opts, runs_done, sr, &handle, &err);
    }
    al_run_opts_free(opts);
    if (code != AL_OK) {
        sr->start_code = sr->ws || !sr->plan->workspace_manifest ? AL_INTERNAL_ERROR : code;
        snprintf(sr->start_error, sizeof sr->start_error, "the run could not start: %s",
                 err.message[0] ? err.message : al_code_name(code));
        atomic_fetch_sub(&sr->refs, 1);
        runs_done(NULL, NULL, sr);
        return -1;
    }
    pthread_mutex_lock(&r->lock);
    sr->handle = handle;
    int cancelled = atomic_load(&sr->cancelled) || sr->jfailed;
    uint32_t released = sr->jreleased;
    pthread_mutex_unlock(&r->lock);
    if (cancelled) {
        al_run_cancel(handle);
    } else if (released > 0) {
        if (al_run_journal_release(handle, released) != AL_OK) {
            al_run_cancel(handle);
        }
    }
    srun_unref(sr);
    return 0;
}

int runs_launch(struct runs *r, struct writer_tx *tx, struct runs_plan *plan,
                const char *continuation, const struct runs_resolution *resolutions,
                size_t nresolutions, struct http_deferred *deferred)
{
    struct srun *sr = runs_prepare(r, plan, deferred);
    if (!sr) {
        return -1;
    }
    if (tx) {
        /* its calls wait for the commit of what launched it (a resume's claim) */
        sr->start_state = RUNS_START_PENDING;
        writer_after(tx, &sr->launched, runs_settle, sr);
    }
    return runs_go(r, sr, continuation, resolutions, nresolutions);
}

/* ---------------------------------------------------------------- cancel, drain */

/* Cancels the active runs of id `id`, or (id NULL) of a template's version; how many. Also a
 * run whose end waits for the writer: the writer records it cancelled, as the database already
 * says (whichever of the two commits first). */
static size_t runs_cancel_where(struct runs *r, const char *id, const char *template_name,
                                int64_t version, const char *why)
{
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    for (struct srun *sr = r->active; sr; sr = sr->next_active) {
        const struct runs_plan *p = sr->plan;
        /* template_name is tested too: GCC's -O2 cannot tell runs_cancel's NULL never gets here */
        if (id ? strcmp(p->id, id) == 0
               : template_name && strcmp(p->template_name, template_name) == 0 &&
                            p->version == version) {
            runs_cancel_one(sr, why);
            n++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    runs_end_cancelled(r);
    return n;
}

int runs_cancel(struct runs *r, const char *id, const char *why)
{
    return runs_cancel_where(r, id, NULL, 0, why) > 0;
}

size_t runs_cancel_version(struct runs *r, const char *template_name, int64_t version,
                           const char *why)
{
    return runs_cancel_where(r, NULL, template_name, version, why);
}

size_t runs_active(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->nactive;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void runs_set_shares(struct runs *r, const struct runs_shares *shares)
{
    r->limits.per_principal = shares->per_principal ? shares->per_principal : 8;
    r->limits.per_department = shares->per_department ? shares->per_department : 32;
    r->limits.per_principal_queued =
            shares->per_principal_queued ? shares->per_principal_queued : 256;
    r->limits.total = shares->total ? shares->total : SIZE_MAX;
}

uint64_t runs_seed(const struct runs *r, const char *id)
{
    unsigned char digest[SHA256_DIGEST_LENGTH];
    char text[RUNS_ID_LEN + 32];
    uint64_t seed = 0;
    int n = snprintf(text, sizeof text, "airlock-run-seed\n%s", id);
    if (!HMAC(EVP_sha256(), r->seed_key, (int)sizeof r->seed_key, (const unsigned char *)text,
              (size_t)n, digest, NULL)) {
        return 0;
    }
    for (int i = 0; i < 8; i++) {
        seed = seed << 8 | digest[i];
    }
    return seed;
}

void runs_set_seed_key(struct runs *r, const unsigned char *key, size_t len)
{
    memset(r->seed_key, 0, sizeof r->seed_key);
    memcpy(r->seed_key, key, len < sizeof r->seed_key ? len : sizeof r->seed_key);
}

void runs_set_node(struct runs *r, const char *node, size_t capacity)
{
    snprintf(r->node, sizeof r->node, "%s", node);
    r->capacity = capacity;
}

int runs_busy(struct runs *r)
{
    if (!r->node[0]) {
        return 0;
    }
    pthread_mutex_lock(&r->lock);
    int busy = r->draining || r->nactive + r->nstarting >= r->capacity;
    pthread_mutex_unlock(&r->lock);
    return busy;
}

void runs_set_mount_roots(struct runs *r, const struct mounts_roots *roots)
{
    r->mount_roots = roots;
}

const struct mounts_roots *runs_mount_roots(const struct runs *r)
{
    return r->mount_roots;
}

const char *runs_node(const struct runs *r)
{
    return r->node[0] ? r->node : NULL;
}

/* Under kick_lock: a batch finished during a shutdown may still kick. */
void runs_set_kick(struct runs *r, void (*fn)(void *userdata), void *userdata)
{
    pthread_mutex_lock(&r->kick_lock);
    r->kick = fn;
    r->kick_userdata = userdata;
    pthread_mutex_unlock(&r->kick_lock);
}

void runs_kick(struct runs *r)
{
    pthread_mutex_lock(&r->kick_lock);
    if (r->kick) {
        r->kick(r->kick_userdata);
    }
    pthread_mutex_unlock(&r->kick_lock);
}

int runs_active_ids(struct runs *r, char (**ret_ids)[RUNS_ID_LEN + 1], size_t *ret_n)
{
    char(*ids)[RUNS_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    if (r->nactive > 0) {
        ids = malloc(r->nactive * sizeof *ids);
        rc = ids ? 0 : -1;
        for (struct srun *sr = r->active; sr && ids && n < r->nactive; sr = sr->next_active) {
            snprintf(ids[n++], sizeof ids[0], "%s", sr->plan->id);
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == 0) {
        *ret_ids = ids;
        *ret_n = n;
    }
    return rc;
}

void runs_refuse(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    r->draining = 1;
    pthread_mutex_unlock(&r->lock);
}

void runs_drain(struct runs *r, unsigned grace_ms)
{
    int64_t until = clock_wall_ms() + grace_ms;
    struct timespec deadline = { (time_t)(until / 1000), (long)(until % 1000) * 1000000L };
    pthread_mutex_lock(&r->lock);
    r->draining = 1;
    while (r->nactive > 0 || r->nstarting > 0) {
        if (pthread_cond_timedwait(&r->cond, &r->lock, &deadline) != 0) {
            break;
        }
    }
    /* past the grace period: stop what runs, and whatever a held start adds meanwhile. A run
     * executing is handed back (runs_end_fn): it goes on from its journal; one still waiting
     * for its slot never started, and is cancelled */
    while (r->nactive > 0 || r->nstarting > 0) {
        for (struct srun *sr = r->active; sr; sr = sr->next_active) {
            if (!atomic_load(&sr->cancelled) && !sr->waiting) {
                sr->handed_back = 1;
            }
            runs_cancel_one(sr, "cancelled: airlockd is shutting down");
        }
        if (r->ending) {
            pthread_mutex_unlock(&r->lock);
            runs_end_cancelled(r);
            pthread_mutex_lock(&r->lock);
            continue;
        }
        pthread_cond_wait(&r->cond, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);
}

int runs_new(struct writer *writer, struct al_runner *runner, struct connector_client *client,
             struct runs **ret, struct al_error *reterr)
{
    struct runs *r = calloc(1, sizeof *r);
    if (!r) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    r->writer = writer;
    r->runner = runner;
    r->client = client;
    struct runs_shares defaults = { 0, 0, 0, 0 };
    runs_set_shares(r, &defaults);
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->kick_lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    pthread_condattr_t mono;
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    pthread_cond_init(&r->watch_cond, &mono);
    pthread_condattr_destroy(&mono);
    *ret = r;
    return 0;
}

void runs_free(struct runs *r)
{
    if (!r) {
        return;
    }
    if (r->watching) {
        pthread_mutex_lock(&r->lock);
        r->watch_stop = 1;
        pthread_cond_broadcast(&r->watch_cond);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->watch_thread, NULL);
    }
    runs_drain(r, 0);
    for (struct runs_share **list = &r->principals; list;
         list = list == &r->principals ? &r->departments : NULL) {
        while (*list) {
            struct runs_share *sh = *list;
            *list = sh->next;
            free(sh);
        }
    }
    pthread_cond_destroy(&r->cond);
    pthread_cond_destroy(&r->watch_cond);
    pthread_mutex_destroy(&r->kick_lock);
    pthread_mutex_destroy(&r->lock);
    OPENSSL_cleanse(r->seed_key, sizeof r->seed_key);
    free(r);
}

/* ---------------------------------------------------------------- the API object */

struct runs_ids {
    struct buf *b;
    int n;
};

static int runs_approval_id(void *userdata, const struct store_approval *a)
{
    struct runs_ids *ids = userdata;
    api_member(ids->b, ids->n++ ? "," : "", a->id);
    return 0;
}

enum store_rc runs_json(struct store *s, const struct store_run *row, struct buf *b)
{
    api_member(b, "{\"id\":", row->id);
    api_member(b, ",\"status\":", row->status);
    if (row->template_name[0]) {
        api_member(b, ",\"template\":", row->template_name);
        buf_printf(b, ",\"version\":%" PRId64, row->version);
    } else {
        buf_append_str(b, ",\"template\":null,\"version\":null");
    }
    api_member(b, ",\"department\":", row->department);
    api_member(b, ",\"principal\":", row->principal);
    buf_append_str(b, ",\"input\":");
    json_write_compact(b, row->input, strlen(row->input));
    api_member(b, ",\"created\":", row->created);
    api_member(b, ",\"updated\":", row->updated);
    if (row->outcome && row->outcome[0] == '{' && row->outcome[1] != '}') {
        /* the outcome holds value or error: the other one is null, so both are always there */
        int failed = strncmp(row->outcome, "{\"error\":", 9) == 0;
        buf_append_str(b, failed ? ",\"value\":null," : ",\"error\":null,");
        buf_append(b, row->outcome + 1, strlen(row->outcome) - 2);
    } else {
        buf_append_str(b, ",\"value\":null,\"error\":null,\"console\":[],\"stats\":{},"
                          "\"host_calls\":[]");
    }
    buf_append_str(b, ",\"approvals\":[");
    struct runs_ids ids = { b, 0 };
    enum store_rc rc = s->ops->approval_list(s, row->id, NULL, runs_approval_id, &ids);
    /* how many times it went on from its journal after its execution died */
    buf_printf(b, "],\"recovered\":%" PRId64, row->recovered);
    /* a fork's original and the call it went live from; null for other runs */
    if (row->forked_from) {
        api_member(b, ",\"forked_from\":", row->forked_from);
        buf_printf(b, ",\"at_call\":%" PRId64 "}", row->at_call);
    } else {
        buf_append_str(b, ",\"forked_from\":null,\"at_call\":null}");
    }
    return rc;
}
