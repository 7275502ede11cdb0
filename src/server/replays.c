/*
 * replays.c - replay before approval (replays.h; the rules are docs/server.md's "Replay before
 * approval").
 *
 * A replay is a run of the new version's source with a recorded run's input, seed, clock and
 * journal (al_run_opts_add_journal_entry): libairlock answers every journaled call from the
 * journal and fails the run PROTOCOL_ERROR where the source makes another call
 * (al_result_divergence says which). A call the journal does not answer reaches replays_host,
 * which never sends it anywhere: it ends that replay, which has then matched the whole journal.
 * What such a call means depends on the recorded run: one that completed had made every call
 * (the new source makes one more: it diverges), one that waits for a person had made the call it
 * waits on (the new source must make that one), and any other had stopped wherever it stopped.
 *
 * Everything here happens on the replays' own thread, except replays_host and replays_done,
 * which run on the runner's event thread and only note what they saw under the lock.
 */
#include "replays.h"

#include <inttypes.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_runs.h"
#include "buf.h"
#include "clock.h"
#include "error.h"
#include "hex.h"
#include "json.h"
#include "run_workspace.h"
#include "runs.h"

#define REPLAYS_RESULT_MAX  ((size_t)4 << 20) /* bytes of a replay's result */
#define REPLAYS_MESSAGE_MAX 512               /* bytes of an error message in it */
#define REPLAYS_TICK_MS     250 /* how often the thread looks at deadlines while it waits */
#define REPLAYS_SHA_HEX     (2 * SHA256_DIGEST_LENGTH + 1)

/* A call a waiting run waits on: one of its pending host_call approvals. */
struct replay_pending {
    char function[RUNS_FN_NAME_MAX];
    char args_sha256[REPLAYS_SHA_HEX];
};

/* What one replay came to (replays_judge). */
enum replay_verdict {
    REPLAY_VERDICT_SAME = 0,
    REPLAY_VERDICT_DIVERGED = 1, /* at v_call: v_expected, v_got ("" function: none made) */
    REPLAY_VERDICT_FAILED = 2,   /* with v_code, v_same_as_run */
};

/* One recorded run replayed. */
struct replay_one {
    struct replays *owner;
    char run[RUNS_ID_LEN + 1];
    int waiting; /* the run waits for a person */
    /* its journal holds every call it made: it completed, or the guest itself ended it failing
     * (its own throw, or a failed call it did not catch); a run stopped by a limit, a cancel or
     * a crash may have had more to make */
    int complete;
    char error_code[32];                     /* a failed run's error code, "" for others */
    char error_message[REPLAYS_MESSAGE_MAX]; /* and its message */
    struct replay_pending *pending;          /* a waiting run's calls waiting on a person */
    size_t npending;
    int64_t last_call; /* the highest call id of its journal */
    struct runs_plan *plan;
    struct run_workspace *ws;              /* the workspace v would run with, NULL: none */
    char start_error[REPLAYS_MESSAGE_MAX]; /* it could not be replayed at all: why (logged) */
    /* under owner->lock */
    struct al_run *handle;
    int past_end; /* it made a call its journal does not answer: */
    uint32_t at_call;
    char got_function[RUNS_FN_NAME_MAX];
    char got_sha256[REPLAYS_SHA_HEX];
    int cancelled;
    int timed_out; /* cancelled at the replay's deadline */
    int done;
    struct al_result *result;
    /* The verdict, set once it is done (replays_judge), when its plan, result and the calls it
     * waits on are freed: nothing the guest computed is kept but what the verdict names. */
    int judged;
    enum replay_verdict verdict;
    uint32_t v_call;
    char v_expected_function[RUNS_FN_NAME_MAX];
    char v_expected_sha256[REPLAYS_SHA_HEX];
    char v_got_function[RUNS_FN_NAME_MAX];
    char v_got_sha256[REPLAYS_SHA_HEX];
    char v_code[32];
    int v_same_as_run;
};

struct replay_waiter {
    struct http_deferred *d;
    uint64_t deadline_us; /* clock_mono_us */
    struct replay_waiter *next;
};

struct replay_job {
    char department[STORE_NAME_MAX + 1];
    char template_name[STORE_NAME_MAX + 1];
    int64_t version;
    struct replay_waiter *waiters; /* under the lock */
    struct replay_job *next;
};

struct replays {
    struct al_runner *runner;
    struct readers *readers;
    struct writer *writer;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* waiting their turn, oldest first: at most one per template (its newest submitted
     * version), at most REPLAYS_QUEUED_MAX per department, departments served in turn */
    struct replay_job *queue;
    struct replay_job *current;      /* under way */
    char served[STORE_NAME_MAX + 1]; /* the department served last */
    int stop;
    int joined; /* replays_stop has joined the thread, or is joining it */
    pthread_t thread;
};

/* ---------------------------------------------------------------- waiters */

static void replays_answer_error(struct http_deferred *d, unsigned status, const char *code,
                                 const char *message)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"request_id\":\"%s\"}}\n",
                     code, message, http_deferred_request_id(d));
    http_deferred_answer(d, status, body, (size_t)n);
}

/* Answers, under the lock, the waiters of job whose deadline has passed: 202 "running". */
static void replays_expire(struct replay_job *job, uint64_t now_us)
{
    struct replay_waiter **w = job ? &job->waiters : NULL;
    while (w && *w) {
        struct replay_waiter *x = *w;
        if (x->deadline_us > now_us) {
            w = &x->next;
            continue;
        }
        *w = x->next;
        struct buf b;
        buf_init(&b, 1024);
        api_member(&b, "{\"template\":", job->template_name);
        buf_printf(&b, ",\"version\":%" PRId64 ",\"state\":\"running\"}\n", job->version);
        if (b.data) {
            http_deferred_answer(x->d, 202, b.data, b.len);
        } else {
            replays_answer_error(x->d, 500, "INTERNAL", "out of memory");
        }
        buf_done(&b);
        free(x);
    }
}

static void replays_expire_all(struct replays *r)
{
    uint64_t now = clock_mono_us();
    replays_expire(r->current, now);
    for (struct replay_job *j = r->queue; j; j = j->next) {
        replays_expire(j, now);
    }
}

/* Answers every waiter of job with the result (NULL: it failed; stopping: airlockd stops) and
 * frees it. */
static void replays_job_finish(struct replay_job *job, const struct buf *result, int stopping)
{
    while (job->waiters) {
        struct replay_waiter *x = job->waiters;
        job->waiters = x->next;
        if (result) {
            http_deferred_answer(x->d, 200, result->data, result->len);
        } else if (!stopping) {
            replays_answer_error(x->d, 500, "INTERNAL", "the replay could not be made");
        } else {
            replays_answer_error(x->d, 500, "INTERNAL", "airlockd is stopping");
        }
        free(x);
    }
    free(job);
}

/* ---------------------------------------------------------------- the runner's side */

/* A call the journal does not answer: the replay has matched the whole journal and ends here
 * (its thread cancels it). Nothing is sent: the guest's call throws meanwhile. */
static void replays_host(struct al_call *call, void *userdata)
{
    (void)userdata;
    struct replay_one *o = al_call_run_userdata(call);
    size_t len = 0;
    const char *args = al_call_args(call, &len);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)args, len, digest);
    pthread_mutex_lock(&o->owner->lock);
    if (!o->past_end) {
        o->past_end = 1;
        o->at_call = al_call_seq(call);
        snprintf(o->got_function, sizeof o->got_function, "%s", al_call_name(call));
        hex_encode(digest, sizeof digest, o->got_sha256);
    }
    pthread_cond_broadcast(&o->owner->cond);
    pthread_mutex_unlock(&o->owner->lock);
    al_call_throw(call, "a replay sends nothing past its journal");
}

static void replays_done(struct al_run *run, struct al_result *result, void *userdata)
{
    (void)run;
    struct replay_one *o = userdata;
    pthread_mutex_lock(&o->owner->lock);
    o->result = result;
    o->done = 1;
    pthread_cond_broadcast(&o->owner->cond);
    pthread_mutex_unlock(&o->owner->lock);
}

/* ---------------------------------------------------------------- reading what to replay */

/* The version replayed and the approved one it would replace. */
struct replay_version {
    int found;
    enum gov_version_state state;
    struct store_version v; /* strings owned (below) */
    char *strings[6];
    int64_t against;      /* the newest approved version but this one; 0: none */
    char *against_limits; /* its limits (JSON), NULL until read */
    int64_t newer;        /* a newer version of the template that is submitted; 0: none */
};

static int replays_version_fn(void *userdata, const struct store_version *v)
{
    struct replay_version *rv = userdata;
    const char *from[] = { v->template_name, v->source, v->language, v->functions, v->limits };
    rv->found = 1;
    rv->state = api_version_state(v->state);
    rv->v.version = v->version;
    for (size_t i = 0; i < 5; i++) {
        rv->strings[i] = strdup(from[i] ? from[i] : "");
    }
    /* its workspace manifest: each replay builds the workspace it would run with */
    rv->strings[5] = v->workspace ? strdup(v->workspace) : NULL;
    rv->v.workspace = rv->strings[5];
    rv->v.template_name = rv->strings[0];
    rv->v.source = rv->strings[1];
    rv->v.language = rv->strings[2];
    rv->v.functions = rv->strings[3];
    rv->v.limits = rv->strings[4];
    return 0;
}

static int replays_against_fn(void *userdata, const struct store_version *v)
{
    struct replay_version *rv = userdata;
    enum gov_version_state st = api_version_state(v->state);
    if (v->version != rv->v.version && st == GOV_VERSION_APPROVED && v->version > rv->against) {
        rv->against = v->version;
    }
    if (v->version > rv->v.version && st == GOV_VERSION_SUBMITTED) {
        rv->newer = v->version;
    }
    return 0;
}

static int replays_against_limits_fn(void *userdata, const struct store_version *v)
{
    struct replay_version *rv = userdata;
    rv->against_limits = strdup(v->limits ? v->limits : "{}");
    return 0;
}

static void replays_version_done(struct replay_version *rv)
{
    for (size_t i = 0; i < 6; i++) {
        free(rv->strings[i]);
    }
    free(rv->against_limits);
    memset(rv, 0, sizeof *rv);
}

/* The runs to replay, chosen as run_list walks the template's runs in seq order: the newest
 * ended ones and the newest waiting ones, in rings. */
struct replay_pick {
    int64_t version;
    char ended[REPLAYS_ENDED_MAX][RUNS_ID_LEN + 1];
    size_t nended; /* how many were seen: the ring holds the last REPLAYS_ENDED_MAX */
    char waiting[REPLAYS_WAITING_MAX][RUNS_ID_LEN + 1];
    size_t nwaiting;
};

static int replays_pick_fn(void *userdata, const struct store_run *row)
{
    struct replay_pick *p = userdata;
    enum gov_run_state st = api_run_state(row->status);
    /* a run that never started from its input (held for a person) has nothing to replay */
    if (row->version != p->version || !row->seed || row->clock_ms <= 0) {
        return 0;
    }
    if (st == GOV_RUN_AWAITING_APPROVAL) {
        snprintf(p->waiting[p->nwaiting++ % REPLAYS_WAITING_MAX], RUNS_ID_LEN + 1, "%s", row->id);
    } else if (st == GOV_RUN_COMPLETED || st == GOV_RUN_FAILED || st == GOV_RUN_CANCELLED ||
               st == GOV_RUN_DENIED) {
        snprintf(p->ended[p->nended++ % REPLAYS_ENDED_MAX], RUNS_ID_LEN + 1, "%s", row->id);
    }
    return 0;
}

/* A run's row, read into a replay of version v under the limits of both v and the approved
 * version the run ran (against_limits). */
struct replay_row {
    struct replay_one *o;
    const struct store_version *v;
    const char *against_limits;
    struct al_error err;
    int found;
    int failed;
};

/* The error code and message of a failed run's outcome ({"error":{"code","message"}}). */
static void replays_outcome_error(struct replay_one *o, const char *outcome)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    if (!outcome || json_parse(outcome, strlen(outcome), 64, &doc, &err) != AL_OK) {
        return;
    }
    const struct json_node *e = json_get(json_root(doc), "error");
    const struct json_node *code = e ? json_get(e, "code") : NULL;
    const struct json_node *message = e ? json_get(e, "message") : NULL;
    if (code && code->type == JSON_STRING && message && message->type == JSON_STRING) {
        snprintf(o->error_code, sizeof o->error_code, "%s", code->str);
        snprintf(o->error_message, sizeof o->error_message, "%s", message->str);
    }
    json_doc_free(doc);
}

static int replays_row_fn(void *userdata, const struct store_run *row)
{
    struct replay_row *rr = userdata;
    enum gov_run_state st = api_run_state(row->status);
    rr->found = 1;
    rr->o->waiting = st == GOV_RUN_AWAITING_APPROVAL;
    if (st == GOV_RUN_FAILED) {
        replays_outcome_error(rr->o, row->outcome);
    }
    /* the guest ended it: by its own throw or a failed call it let through */
    rr->o->complete =
            st == GOV_RUN_COMPLETED ||
            (st == GOV_RUN_FAILED && (strcmp(rr->o->error_code, "USER_ERROR") == 0 ||
                                      strcmp(rr->o->error_code, "HOST_FUNCTION_ERROR") == 0));
    rr->failed = api_replay_plan(row, rr->v, rr->against_limits, &rr->o->plan, &rr->err) != 0;
    return 0;
}

/* A run's journal read into its replay's plan, from store s. */
struct replays_journal {
    struct replay_one *o;
    struct store *s;
};

static int replays_entry_fn(void *userdata, const struct store_journal_entry *e)
{
    struct replays_journal *rj = userdata;
    struct replay_one *o = rj->o;
    if (runs_plan_add_journal(o->plan, rj->s, e) != 0) {
        return 1;
    }
    int64_t call = o->plan->journal[o->plan->njournal - 1].call;
    o->last_call = call > o->last_call ? call : o->last_call;
    return 0;
}

static int replays_approval_fn(void *userdata, const struct store_approval *a)
{
    struct replay_one *o = userdata;
    if (strcmp(a->kind, "host_call") != 0 || !a->function || !a->args) {
        return 0;
    }
    struct replay_pending *p = realloc(o->pending, (o->npending + 1) * sizeof *p);
    if (!p) {
        return 1;
    }
    o->pending = p;
    p = &o->pending[o->npending++];
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)a->args, strlen(a->args), digest);
    hex_encode(digest, sizeof digest, p->args_sha256);
    snprintf(p->function, sizeof p->function, "%s", a->function);
    return 0;
}

/* Reads run o->run into o: its plan with v's source and its journal, and what it waits on.
 * o->start_error says why when it cannot be replayed. */
static void replays_read_one(struct replays *r, struct replay_one *o, const struct store_version *v,
                             const char *against_limits)
{
    struct store *s = readers_take(r->readers);
    struct replay_row rr = { o, v, against_limits, { 0 }, 0, 0 };
    enum store_rc rc = s ? s->ops->run_get(s, o->run, replays_row_fn, &rr) : STORE_ERROR;
    if (rc == STORE_OK && rr.found && !rr.failed && v->workspace) {
        /* v's manifest, over the files the run started from (its start tar, if any) */
        rc = api_run_workspace_plan(s, o->run, o->plan);
        free(o->plan->workspace_manifest);
        o->plan->workspace_manifest = strdup(v->workspace);
        rc = rc == STORE_OK && !o->plan->workspace_manifest ? STORE_ERROR : rc;
    }
    if (rc == STORE_OK && rr.found && !rr.failed) {
        struct replays_journal rj = { o, s };
        rc = s->ops->journal_read(s, o->run, 0, replays_entry_fn, &rj);
    }
    if (rc == STORE_OK && rr.found && !rr.failed && o->waiting) {
        rc = s->ops->approval_list(s, o->run, "pending", replays_approval_fn, o);
    }
    if (rc != STORE_OK || !rr.found) {
        snprintf(o->start_error, sizeof o->start_error, "run %s could not be read", o->run);
    } else if (rr.failed) {
        snprintf(o->start_error, sizeof o->start_error, "%s", rr.err.message);
    }
    if (s) {
        readers_give(r->readers, s);
    }
}

/* Frees what o holds but its verdict: what it read, its run and its result. */
static void replays_one_release(struct replay_one *o)
{
    if (o->handle) {
        al_run_release(o->handle);
        o->handle = NULL;
    }
    run_workspace_free_later(o->ws); /* after the run that borrowed it; never waits here */
    o->ws = NULL;
    al_result_free(o->result);
    o->result = NULL;
    runs_plan_free(o->plan);
    o->plan = NULL;
    free(o->pending);
    o->pending = NULL;
    o->npending = 0;
}

/* ---------------------------------------------------------------- judging */

static void replays_diverged(struct replay_one *o, uint32_t at_call, const char *exp_fn,
                             const char *exp_sha, const char *got_fn, const char *got_sha)
{
    o->verdict = REPLAY_VERDICT_DIVERGED;
    o->v_call = at_call;
    snprintf(o->v_expected_function, sizeof o->v_expected_function, "%s", exp_fn ? exp_fn : "");
    snprintf(o->v_expected_sha256, sizeof o->v_expected_sha256, "%s", exp_fn ? exp_sha : "");
    snprintf(o->v_got_function, sizeof o->v_got_function, "%s", got_fn ? got_fn : "");
    snprintf(o->v_got_sha256, sizeof o->v_got_sha256, "%s", got_fn ? got_sha : "");
}

/* A failure: only its code is kept, and whether it is the recorded run's (same code and
 * message). Never its message: the guest chose it, and could have put in it the answers of the
 * journal, which the readers of a version never see unapproved code handle. */
static void replays_failed(struct replay_one *o, const char *code, int same_as_run)
{
    o->verdict = REPLAY_VERDICT_FAILED;
    snprintf(o->v_code, sizeof o->v_code, "%s", code);
    o->v_same_as_run = same_as_run;
}

/* A waiting run's call past the journal against the calls it waits on: 1 when it is one. */
static int replays_is_pending(const struct replay_one *o)
{
    for (size_t i = 0; i < o->npending; i++) {
        if (strcmp(o->pending[i].function, o->got_function) == 0 &&
            strcmp(o->pending[i].args_sha256, o->got_sha256) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Judges o, which is done (docs/server.md's table), into its verdict. */
static void replays_judge(struct replay_one *o)
{
    /* the oldest approval a waiting run opened is what it waits on first */
    const struct replay_pending *want = o->npending ? &o->pending[o->npending - 1] : NULL;
    o->verdict = REPLAY_VERDICT_SAME;
    if (o->start_error[0]) {
        replays_failed(o, "INTERNAL_ERROR", 0);
    } else if (o->past_end) {
        if (want && !replays_is_pending(o)) {
            replays_diverged(o, o->at_call, want->function, want->args_sha256, o->got_function,
                             o->got_sha256);
        } else if (o->complete) {
            /* the recorded run had ended here by itself: the new source makes one call more */
            replays_diverged(o, o->at_call, NULL, NULL, o->got_function, o->got_sha256);
        }
    } else if (o->timed_out) {
        replays_failed(o, "TIMEOUT", 0);
    } else if (al_result_status(o->result) == AL_STATUS_FAILED) {
        struct al_divergence d;
        struct al_error_text et;
        al_result_error_text(o->result, &et);
        const char *code = al_code_name(al_result_error_code(o->result));
        int same_as_run = strcmp(code, o->error_code) == 0 &&
                          strlen(o->error_message) == et.message_len &&
                          memcmp(o->error_message, et.message, et.message_len) == 0;
        if (al_result_divergence(o->result, &d) == 0) {
            char exp[REPLAYS_SHA_HEX];
            char got[REPLAYS_SHA_HEX];
            hex_encode(d.expected_args_sha256, sizeof d.expected_args_sha256, exp);
            hex_encode(d.got_args_sha256, sizeof d.got_args_sha256, got);
            replays_diverged(o, d.call, d.expected_function, exp, d.got_function, got);
        } else if (!same_as_run) {
            /* a failure the recorded run did not have */
            replays_failed(o, code, same_as_run);
        }
    } else if (want) {
        /* it ended (or waits) without making the call the recorded run waits on */
        replays_diverged(o, (uint32_t)o->last_call + 1, want->function, want->args_sha256, NULL,
                         NULL);
    }
    o->judged = 1;
}

/* ---------------------------------------------------------------- executing */

/* Starts the replay of o (read by replays_read_one); one that cannot start is done at once. */
static void replays_launch(struct replays *r, struct replay_one *o)
{
    struct al_error err;
    struct al_run *handle = NULL;
    memset(&err, 0, sizeof err);
    if (o->start_error[0]) {
        o->done = 1;
        return;
    }
    enum al_code code =
            o->plan->workspace_manifest ? run_workspace_new_replay(o->plan, &o->ws, &err) : AL_OK;
    struct al_run_opts *opts = code == AL_OK ? al_run_opts_new() : NULL;
    if (code == AL_OK) {
        code = opts ? runs_replay_opts(o->plan, replays_host, o, opts) : AL_INTERNAL_ERROR;
    }
    if (code == AL_OK && o->ws) {
        code = al_run_opts_set_workspace(opts, run_workspace_of(o->ws));
    }
    if (code == AL_OK) {
        code = al_run_start(r->runner, opts, replays_done, o, &handle, &err);
    }
    al_run_opts_free(opts);
    if (code != AL_OK) {
        snprintf(o->start_error, sizeof o->start_error, "the replay could not start: %s",
                 err.message[0] ? err.message : al_code_name(code));
        o->done = 1;
        return;
    }
    pthread_mutex_lock(&r->lock);
    o->handle = handle;
    pthread_mutex_unlock(&r->lock);
}

/* Under the lock: cancels what must end (past its journal, past the deadline, airlockd
 * stopping) and counts what is still executing among ones[0..n). */
static size_t replays_tend(struct replays *r, struct replay_one *ones, size_t n, int deadline)
{
    size_t active = 0;
    for (size_t i = 0; i < n; i++) {
        struct replay_one *o = &ones[i];
        if (o->done) {
            continue;
        }
        active++;
        if (o->handle && !o->cancelled && (o->past_end || deadline || r->stop)) {
            o->cancelled = 1;
            o->timed_out = !o->past_end && deadline;
            al_run_cancel(o->handle);
        }
    }
    return active;
}

/* Judges and releases, as each ends, the replays of ones[0..n) that are done: what is held is
 * never more than the replays executing. */
static void replays_settle(struct replays *r, struct replay_one *ones, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        struct replay_one *o = &ones[i];
        pthread_mutex_lock(&r->lock);
        int done = o->done && !o->judged;
        pthread_mutex_unlock(&r->lock);
        if (!done) {
            continue;
        }
        if (o->start_error[0]) {
            fprintf(stderr, "airlockd: the replay of %s against run %s: %s\n", what, o->run,
                    o->start_error);
        }
        replays_judge(o);
        replays_one_release(o);
    }
}

/* Replays every run of ones[0..n) with v (under the limits of v and against_limits),
 * REPLAYS_PARALLEL at a time, within the deadline, judging each as it ends. 0, or -1 when
 * airlockd stops meanwhile. */
static int replays_execute(struct replays *r, struct replay_one *ones, size_t n,
                           const struct store_version *v, const char *against_limits)
{
    uint64_t deadline_us = clock_mono_us() + (uint64_t)REPLAYS_DEADLINE_MS * 1000;
    char what[STORE_NAME_MAX + 32];
    size_t next = 0;
    snprintf(what, sizeof what, "%s version %" PRId64, v->template_name, v->version);
    for (;;) {
        replays_settle(r, ones, next, what);
        pthread_mutex_lock(&r->lock);
        int late = clock_mono_us() >= deadline_us;
        size_t active = replays_tend(r, ones, next, late);
        int stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (active == 0 && (next == n || stop)) {
            replays_settle(r, ones, next, what);
            return stop ? -1 : 0;
        }
        if (active < REPLAYS_PARALLEL && next < n && !stop && !late) {
            replays_read_one(r, &ones[next], v, against_limits);
            replays_launch(r, &ones[next]);
            next++;
            continue;
        }
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += REPLAYS_TICK_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        /* wait for a replay to end (replays_done broadcasts) unless one has ended already */
        int ended = 0;
        for (size_t i = 0; i < next; i++) {
            ended |= ones[i].done && !ones[i].judged;
        }
        if (!r->stop && !ended && replays_tend(r, ones, next, late) > 0) {
            pthread_cond_timedwait(&r->cond, &r->lock, &until);
        }
        replays_expire_all(r);
        pthread_mutex_unlock(&r->lock);
    }
}

/* ---------------------------------------------------------------- the result */

static void replays_put_call(struct buf *b, const char *function, const char *sha256)
{
    if (!function[0]) {
        buf_append_str(b, "null");
        return;
    }
    api_member(b, "{\"function\":", function);
    api_member(b, ",\"args_sha256\":", sha256);
    buf_append_str(b, "}");
}

/* The result object of version v replayed against `against` (0: none) with ones[0..n), each
 * judged: 0, or -1 when it does not fit. */
static int replays_result(struct buf *b, const struct store_version *v, int64_t against,
                          const struct replay_one *ones, size_t n)
{
    struct buf diverged;
    struct buf failed;
    struct buf waiting;
    int ndiverged = 0;
    int nfailed = 0;
    int nwaiting = 0;
    size_t same = 0;
    buf_init(&diverged, REPLAYS_RESULT_MAX);
    buf_init(&failed, REPLAYS_RESULT_MAX);
    buf_init(&waiting, REPLAYS_RESULT_MAX);
    for (size_t i = 0; i < n; i++) {
        const struct replay_one *o = &ones[i];
        if (o->verdict == REPLAY_VERDICT_SAME) {
            same++;
        } else if (o->verdict == REPLAY_VERDICT_FAILED) {
            buf_append_str(&failed, nfailed++ ? "," : "");
            api_member(&failed, "{\"run\":", o->run);
            api_member(&failed, ",\"error\":{\"code\":", o->v_code);
            buf_printf(&failed, ",\"same_as_run\":%s}}", o->v_same_as_run ? "true" : "false");
        } else {
            buf_append_str(&diverged, ndiverged++ ? "," : "");
            api_member(&diverged, "{\"run\":", o->run);
            buf_printf(&diverged, ",\"at_call\":%" PRIu32 ",\"expected\":", o->v_call);
            replays_put_call(&diverged, o->v_expected_function, o->v_expected_sha256);
            buf_append_str(&diverged, ",\"got\":");
            replays_put_call(&diverged, o->v_got_function, o->v_got_sha256);
            buf_append_str(&diverged, "}");
            if (o->waiting) {
                buf_append_str(&waiting, nwaiting++ ? "," : "");
                api_str(&waiting, o->run);
            }
        }
    }
    api_member(b, "{\"template\":", v->template_name);
    buf_printf(b, ",\"version\":%" PRId64 ",\"state\":\"done\",\"against\":", v->version);
    if (against > 0) {
        buf_printf(b, "%" PRId64, against);
    } else {
        buf_append_str(b, "null");
    }
    buf_printf(b, ",\"runs\":%zu,\"same\":%zu,\"diverged\":[", n, same);
    buf_append(b, diverged.data ? diverged.data : "", diverged.len);
    buf_append_str(b, "],\"failed\":[");
    buf_append(b, failed.data ? failed.data : "", failed.len);
    buf_append_str(b, "],\"waiting\":[");
    buf_append(b, waiting.data ? waiting.data : "", waiting.len);
    buf_append_str(b, "]}");
    int bad = buf_failed(&diverged) || buf_failed(&failed) || buf_failed(&waiting) || buf_failed(b);
    buf_done(&diverged);
    buf_done(&failed);
    buf_done(&waiting);
    return bad ? -1 : 0;
}

/* ---------------------------------------------------------------- one job */

struct replay_record {
    struct store_replay rep;
};

static enum store_rc replays_record_fn(struct writer_tx *tx, void *arg)
{
    const struct replay_record *rec = arg;
    struct store *s = writer_store(tx);
    enum store_rc rc = s->ops->replay_put(s, &rec->rep);
    return rc == STORE_NOT_FOUND ? STORE_OK : rc; /* a version gone meanwhile keeps nothing */
}

/* How a job ended. */
enum replay_end {
    REPLAY_DONE = 0,    /* result holds the object, recorded, or the object of a version not
                           replayed (no longer submitted, or superseded) */
    REPLAY_FAILED = 1,  /* it could not be made or recorded (logged) */
    REPLAY_STOPPED = 2, /* airlockd stops: nothing recorded */
};

/* Replays job's version into result (the object to answer) and records it; a version no longer
 * submitted, or superseded by a newer submitted one, is not replayed. */
static enum replay_end replays_job(struct replays *r, const struct replay_job *job,
                                   struct buf *result)
{
    struct replay_version rv;
    struct replay_pick *pick = calloc(1, sizeof *pick);
    struct replay_one *ones = NULL;
    size_t n = 0;
    enum replay_end ret = REPLAY_FAILED;
    memset(&rv, 0, sizeof rv);
    rv.v.version = job->version;
    struct store *s = readers_take(r->readers);
    enum store_rc rc = s && pick ? s->ops->version_get(s, job->template_name, job->version,
                                                       replays_version_fn, &rv)
                                 : STORE_ERROR;
    if (rc == STORE_OK && rv.found) {
        rc = s->ops->version_list(s, job->template_name, replays_against_fn, &rv);
    }
    int skip = rc == STORE_OK && rv.found && (rv.state != GOV_VERSION_SUBMITTED || rv.newer);
    if (rc == STORE_OK && rv.found && !skip && rv.against > 0) {
        rc = s->ops->version_get(s, job->template_name, rv.against, replays_against_limits_fn, &rv);
        rc = rc == STORE_OK && !rv.against_limits ? STORE_ERROR : rc;
    }
    if (rc == STORE_OK && rv.found && !skip && rv.against > 0) {
        struct store_run_filter f = { .template_name = job->template_name };
        pick->version = rv.against;
        rc = s->ops->run_list(s, &f, replays_pick_fn, pick);
    }
    if (s) {
        readers_give(r->readers, s);
    }
    for (size_t i = 0; i < 5 && rc == STORE_OK && rv.found; i++) {
        rc = rv.strings[i] ? rc : STORE_ERROR;
    }
    if (rc != STORE_OK || !rv.found) {
        fprintf(stderr, "airlockd: the replay of %s version %" PRId64 " could not be read\n",
                job->template_name, job->version);
        goto out;
    }
    if (skip) {
        replays_put_empty(result, job->template_name, job->version,
                          rv.newer ? "superseded" : "none");
        ret = buf_failed(result) ? REPLAY_FAILED : REPLAY_DONE;
        goto out;
    }
    size_t nended = pick->nended < REPLAYS_ENDED_MAX ? pick->nended : REPLAYS_ENDED_MAX;
    size_t nwaiting = pick->nwaiting < REPLAYS_WAITING_MAX ? pick->nwaiting : REPLAYS_WAITING_MAX;
    ones = calloc(nended + nwaiting + 1, sizeof *ones);
    if (!ones) {
        goto out;
    }
    /* oldest first, as the rings hold them */
    for (size_t i = 0; i < nended; i++) {
        size_t k = (pick->nended - nended + i) % REPLAYS_ENDED_MAX;
        ones[n].owner = r;
        snprintf(ones[n++].run, RUNS_ID_LEN + 1, "%s", pick->ended[k]);
    }
    for (size_t i = 0; i < nwaiting; i++) {
        size_t k = (pick->nwaiting - nwaiting + i) % REPLAYS_WAITING_MAX;
        ones[n].owner = r;
        snprintf(ones[n++].run, RUNS_ID_LEN + 1, "%s", pick->waiting[k]);
    }
    if (replays_execute(r, ones, n, &rv.v, rv.against_limits) != 0) {
        ret = REPLAY_STOPPED;
        goto out;
    }
    if (replays_result(result, &rv.v, rv.against, ones, n) != 0) {
        fprintf(stderr, "airlockd: the replay of %s version %" PRId64 " is too large to keep\n",
                job->template_name, job->version);
        goto out;
    }
    struct replay_record rec = { { job->template_name, job->version, rv.against, result->data,
                                   NULL } };
    if (writer_call(r->writer, replays_record_fn, &rec) != STORE_OK) {
        fprintf(stderr, "airlockd: the replay of %s version %" PRId64 " was not recorded\n",
                job->template_name, job->version);
        goto out;
    }
    ret = buf_append_str(result, "\n") == BUF_OK ? REPLAY_DONE : REPLAY_FAILED;
out:
    for (size_t i = 0; i < n; i++) {
        replays_one_release(&ones[i]);
    }
    free(ones);
    free(pick);
    replays_version_done(&rv);
    return ret;
}

/* Under the lock: the link to the job to serve next, the queue not empty. Departments in turn,
 * in the order of their names: the oldest job of the first department after the one served
 * last, else of the first department. */
static struct replay_job **replays_next(struct replays *r)
{
    struct replay_job **first = NULL;
    struct replay_job **after = NULL;
    for (struct replay_job **j = &r->queue; *j; j = &(*j)->next) {
        const char *d = (*j)->department;
        if (!first || strcmp(d, (*first)->department) < 0) {
            first = j;
        }
        if (strcmp(d, r->served) > 0 && (!after || strcmp(d, (*after)->department) < 0)) {
            after = j;
        }
    }
    return after ? after : first;
}

static void *replays_thread(void *arg)
{
    struct replays *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        if (!r->queue) {
            pthread_cond_wait(&r->cond, &r->lock);
            continue;
        }
        struct replay_job **next = replays_next(r);
        struct replay_job *job = *next;
        *next = job->next;
        job->next = NULL;
        r->current = job;
        snprintf(r->served, sizeof r->served, "%s", job->department);
        pthread_mutex_unlock(&r->lock);
        struct buf result;
        buf_init(&result, REPLAYS_RESULT_MAX);
        enum replay_end end = replays_job(r, job, &result);
        pthread_mutex_lock(&r->lock);
        r->current = NULL;
        if (end == REPLAY_STOPPED) {
            job->next = r->queue; /* answered with the rest below */
            r->queue = job;
        } else {
            replays_job_finish(job, end == REPLAY_DONE ? &result : NULL, 0);
        }
        buf_done(&result);
    }
    while (r->queue) {
        struct replay_job *job = r->queue;
        r->queue = job->next;
        replays_job_finish(job, NULL, 1);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---------------------------------------------------------------- the API */

int replays_new(struct al_runner *runner, struct readers *readers, struct writer *writer,
                struct replays **ret, struct al_error *reterr)
{
    struct replays *r = calloc(1, sizeof *r);
    if (!r) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    r->runner = runner;
    r->readers = readers;
    r->writer = writer;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    if (pthread_create(&r->thread, NULL, replays_thread, r) != 0) {
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the replays' thread");
        return -1;
    }
    *ret = r;
    return 0;
}

void replays_stop(struct replays *r)
{
    if (!r) {
        return;
    }
    pthread_mutex_lock(&r->lock);
    int joined = r->joined;
    r->stop = 1;
    r->joined = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (!joined) {
        pthread_join(r->thread, NULL);
    }
}

void replays_free(struct replays *r)
{
    if (!r) {
        return;
    }
    replays_stop(r);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void replays_put_empty(struct buf *b, const char *template_name, int64_t version, const char *state)
{
    api_member(b, "{\"template\":", template_name);
    buf_printf(b, ",\"version\":%" PRId64 ",", version);
    api_member(b, "\"state\":", state);
    buf_append_str(b, ",\"against\":null,\"runs\":0,\"same\":0,\"diverged\":[],\"failed\":[],"
                      "\"waiting\":[]}\n");
}

/* Answers, under the lock, the waiters of a job superseded in the queue and frees it. */
static void replays_supersede(struct replay_job *job)
{
    struct buf b;
    buf_init(&b, 1024);
    replays_put_empty(&b, job->template_name, job->version, "superseded");
    replays_job_finish(job, buf_failed(&b) ? NULL : &b, 0);
    buf_done(&b);
}

/* What replays_job_of found. */
enum replay_queued {
    REPLAY_QUEUED = 0,     /* the job returned: queued now, or already */
    REPLAY_SUPERSEDED = 1, /* a newer version of the template is queued: no job */
    REPLAY_FULL = 2,       /* the department has REPLAYS_QUEUED_MAX queued: no job */
    REPLAY_NO_MEMORY = 3,
};

/* Under the lock: the job of that version queued or under way, queued now if there is none.
 * A template keeps one job queued, its newest version's: an older one queued is superseded (its
 * waiters answered), and one older than the queued is not queued. */
static struct replay_job *replays_job_of(struct replays *r, const char *department,
                                         const char *template_name, int64_t version,
                                         enum replay_queued *ret)
{
    size_t in_department = 0;
    *ret = REPLAY_QUEUED;
    if (r->current && r->current->version == version &&
        strcmp(r->current->template_name, template_name) == 0) {
        return r->current;
    }
    struct replay_job **tail = &r->queue;
    while (*tail) {
        struct replay_job *j = *tail;
        if (strcmp(j->template_name, template_name) != 0) {
            in_department += strcmp(j->department, department) == 0;
            tail = &j->next;
        } else if (j->version == version) {
            return j;
        } else if (j->version > version) {
            *ret = REPLAY_SUPERSEDED;
            return NULL;
        } else {
            *tail = j->next;
            replays_supersede(j);
        }
    }
    if (in_department >= REPLAYS_QUEUED_MAX) {
        *ret = REPLAY_FULL;
        return NULL;
    }
    struct replay_job *job = calloc(1, sizeof *job);
    if (!job) {
        *ret = REPLAY_NO_MEMORY;
        return NULL;
    }
    snprintf(job->department, sizeof job->department, "%s", department);
    snprintf(job->template_name, sizeof job->template_name, "%s", template_name);
    job->version = version;
    *tail = job;
    pthread_cond_broadcast(&r->cond);
    return job;
}

void replays_start(struct replays *r, const char *department, const char *template_name,
                   int64_t version)
{
    enum replay_queued q = REPLAY_QUEUED;
    pthread_mutex_lock(&r->lock);
    if (!r->stop) {
        replays_job_of(r, department, template_name, version, &q);
    }
    pthread_mutex_unlock(&r->lock);
    if (q == REPLAY_FULL || q == REPLAY_NO_MEMORY) {
        fprintf(stderr,
                "airlockd: %s: the replay of %s version %" PRId64 " starts when it is asked for\n",
                q == REPLAY_FULL ? "the department's replays are full" : "out of memory",
                template_name, version);
    }
}

void replays_wait(struct replays *r, const char *department, const char *template_name,
                  int64_t version, struct http_deferred *d)
{
    struct replay_waiter *w = calloc(1, sizeof *w);
    enum replay_queued q = REPLAY_NO_MEMORY;
    pthread_mutex_lock(&r->lock);
    struct replay_job *job =
            w && !r->stop ? replays_job_of(r, department, template_name, version, &q) : NULL;
    if (job) {
        w->d = d;
        w->deadline_us = clock_mono_us() + (uint64_t)REPLAYS_WAIT_MS * 1000;
        w->next = job->waiters;
        job->waiters = w;
        pthread_cond_broadcast(&r->cond);
    }
    int stopping = r->stop;
    pthread_mutex_unlock(&r->lock);
    if (job) {
        return;
    }
    free(w);
    if (q == REPLAY_SUPERSEDED) {
        struct buf b;
        buf_init(&b, 1024);
        replays_put_empty(&b, template_name, version, "superseded");
        if (!buf_failed(&b)) {
            http_deferred_answer(d, 200, b.data, b.len);
        } else {
            replays_answer_error(d, 500, "INTERNAL", "out of memory");
        }
        buf_done(&b);
    } else if (q == REPLAY_FULL && !stopping) {
        struct http_response resp;
        http_response_init(&resp);
        resp.status = 429;
        resp.retry_after_s = REPLAYS_RETRY_S;
        buf_printf(&resp.body,
                   "{\"error\":{\"code\":\"RATE_LIMITED\",\"message\":\"%d replays of this "
                   "department are waiting: ask again later\",\"request_id\":\"%s\"}}\n",
                   REPLAYS_QUEUED_MAX, http_deferred_request_id(d));
        http_deferred_reply(d, &resp);
        http_response_done(&resp);
    } else {
        replays_answer_error(d, 500, "INTERNAL",
                             stopping ? "airlockd is stopping" : "out of memory");
    }
}
