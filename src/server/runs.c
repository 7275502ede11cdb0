/*
 * runs.c - airlockd's runs on libairlock's asynchronous runner (see runs.h for the threads).
 *
 * A run in memory is a struct srun, alive from runs_launch until the writer has recorded its
 * end and answered whoever waits. Two references keep it: the launcher's (dropped once
 * al_run_start has returned, so the handle is set before anyone frees) and the run's own
 * (dropped by the writer). The active list (guarded by its own mutex, never the store lock) is
 * what cancel, revocation and drain walk.
 *
 * A sensitive function's first call interrupts the run; the run's end then stores the
 * continuation and one approval per interruption. When every approval is decided the run is
 * launched again from the continuation with their resolutions, and the function, now called
 * with a resolution, either performs the call (approved; the interruption id is the idempotency
 * key) or throws "denied: COMMENT".
 */
#include "runs.h"

#include <inttypes.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connector.h"
#include "json.h"
#include "metrics.h"

#define RUNS_BATCH_MAX   256
#define RUNS_DETAILS_MAX ((size_t)96 << 20)
#define RUNS_MESSAGE_MAX 512
#define RUNS_AUDIENCE    "airlockd"

struct runs_call {
    uint32_t seq;
    char *function;
    char *args;
    int ended;
    enum al_call_outcome outcome;
    uint64_t duration_us;
    char *message;
};

struct srun {
    struct runs *owner;
    struct runs_plan *plan;
    struct al_run *handle;
    struct http_deferred *deferred;
    struct al_result *result;           /* set by the done callback */
    char start_error[RUNS_MESSAGE_MAX]; /* the runner refused the start: no result */
    atomic_int refs;
    atomic_int cancelled;
    char cancel_why[RUNS_MESSAGE_MAX]; /* written before cancelled is set */
    struct timespec started;
    /* the host calls, appended on the event thread, read by the writer after the end */
    size_t ncalls;
    size_t calls_cap;
    struct runs_call *calls;
    struct buf answer; /* the writer's answer to `deferred` */
    unsigned answer_status;
    struct srun *next_active;
    struct srun *next_done;
};

struct runs {
    struct store *store;
    pthread_mutex_t *store_lock;
    struct al_runner *runner;
    struct connector_client *client;

    pthread_mutex_t lock; /* active list, done queue, flags */
    pthread_cond_t cond;  /* the writer waits on it; drain waits on it for the list to empty */
    struct srun *active;
    size_t nactive;
    struct srun *done_head;
    struct srun *done_tail;
    size_t nstarting;            /* submitted and not yet launched or answered */
    struct runs_job *start_head; /* new runs to record, then start */
    struct runs_job *start_tail;
    int draining;
    int stop;
    pthread_t writer;
};

/* A new run waiting for the writer's next batch. */
struct runs_job {
    struct runs_start start;
    unsigned status; /* the answer, built under the store lock */
    struct buf answer;
    struct runs_job *next;
};

/* A call in flight at a connector: what the client's callbacks need. */
struct runs_pending {
    struct al_call *call;
    struct srun *sr; /* a reference: the plan's connector targets outlive the call */
    char connector[STORE_NAME_MAX + 1];
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
    free(plan);
}

int runs_new_id(const char *prefix, char *ret)
{
    unsigned char raw[16];
    static const char digits[] = "0123456789abcdef";
    if (RAND_bytes(raw, sizeof raw) != 1) {
        return -1;
    }
    size_t n = strlen(prefix);
    memcpy(ret, prefix, n);
    for (size_t i = 0; i < sizeof raw; i++) {
        ret[n + 2 * i] = digits[raw[i] >> 4];
        ret[n + 2 * i + 1] = digits[raw[i] & 15];
    }
    ret[n + 2 * sizeof raw] = '\0';
    return 0;
}

unsigned runs_http_status(const char *status)
{
    int waiting = strcmp(status, "running") == 0 || strcmp(status, "queued") == 0 ||
                  strcmp(status, "awaiting_approval") == 0;
    return waiting ? 202 : 200;
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
    }
    free(sr->calls);
    buf_done(&sr->answer);
    al_result_free(sr->result);
    if (sr->handle) {
        al_run_release(sr->handle);
    }
    runs_plan_free(sr->plan);
    free(sr);
}

/* ---------------------------------------------------------------- on the event thread */

static void runs_event(const struct al_event *ev, void *userdata)
{
    struct srun *sr = userdata;
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

static void runs_call_done(void *userdata, int ok, const char *result_json, size_t len,
                           const char *message)
{
    struct runs_pending *p = userdata;
    metrics_host_call(p->connector, ok ? "returned" : "threw");
    if (ok) {
        al_call_return(p->call, result_json, len);
    } else {
        al_call_throw(p->call, message);
    }
    srun_unref(p->sr);
    free(p);
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

static void runs_host(struct al_call *call, void *userdata)
{
    const struct runs_function *f = userdata;
    struct srun *sr = al_call_run_userdata(call);
    const char *interruption = al_call_interruption_id(call);
    char key[RUNS_ID_LEN + 32];
    size_t args_len = 0;
    const char *args = al_call_args(call, &args_len);

    if (f->sensitive && !interruption) {
        struct buf payload;
        buf_init(&payload, (size_t)64 << 20);
        buf_append_str(&payload, "{\"function\":");
        json_write_string(&payload, f->name, strlen(f->name));
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
        char comment[RUNS_MESSAGE_MAX];
        char message[RUNS_MESSAGE_MAX + 16];
        size_t rlen = 0;
        const char *res = al_call_resolution(call, &rlen);
        if (!res || !runs_resolution_approved(res, rlen, comment, sizeof comment)) {
            snprintf(message, sizeof message, comment[0] ? "denied: %s" : "denied", comment);
            al_call_throw(call, res ? message : "denied");
            return;
        }
        snprintf(key, sizeof key, "%s", interruption);
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
    atomic_fetch_add(&sr->refs, 1);
    snprintf(p->connector, sizeof p->connector, "%s", f->connector);
    struct connector_request req = {
        .target = f->target,
        .function = f->fn,
        .args_json = args,
        .run_id = sr->plan->id,
        .template_name = sr->plan->template_name,
        .version = sr->plan->version,
        .principal = sr->plan->principal,
        .call = al_call_seq(call),
        .idempotency_key = key,
        .cancelled = runs_pending_cancelled,
    };
    if (connector_client_call(sr->owner->client, &req, runs_call_done, p) != 0) {
        atomic_fetch_sub(&sr->refs, 1);
        free(p);
        char message[RUNS_MESSAGE_MAX];
        snprintf(message, sizeof message, "connector %s: the call could not be started",
                 f->connector);
        al_call_throw(call, message);
    }
}

static void runs_enqueue_done(struct srun *sr)
{
    struct runs *r = sr->owner;
    pthread_mutex_lock(&r->lock);
    sr->next_done = NULL;
    if (r->done_tail) {
        r->done_tail->next_done = sr;
    } else {
        r->done_head = sr;
    }
    r->done_tail = sr;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void runs_done(struct al_run *run, struct al_result *result, void *userdata)
{
    struct srun *sr = userdata;
    (void)run;
    sr->result = result;
    runs_enqueue_done(sr);
}

/* ---------------------------------------------------------------- the writer */

static void runs_put_error(struct buf *b, const char *code, const char *name, size_t name_len,
                           const char *message, size_t message_len, const char *stack,
                           size_t stack_len)
{
    buf_append_str(b, "\"error\":{\"code\":");
    json_write_string(b, code, strlen(code));
    buf_append_str(b, ",\"name\":");
    json_write_string(b, name, name_len);
    buf_append_str(b, ",\"message\":");
    json_write_string(b, message, message_len);
    buf_append_str(b, ",\"stack\":");
    json_write_string(b, stack, stack_len);
    buf_append_str(b, "}");
}

/* The run's status and its outcome object {value|error, console, stats}. */
static const char *runs_outcome(struct srun *sr, struct buf *b)
{
    const struct al_result *res = sr->result;
    const char *status;
    buf_append_str(b, "{");
    if (!res) {
        status = "failed";
        runs_put_error(b, al_code_name(AL_INTERNAL_ERROR), "", 0, sr->start_error,
                       strlen(sr->start_error), "", 0);
        buf_append_str(b, ",\"console\":[],\"stats\":{}}");
        return status;
    }
    enum al_status st = al_result_status(res);
    if (st == AL_STATUS_COMPLETED) {
        size_t vlen;
        const char *v = al_result_value(res, &vlen);
        status = "completed";
        buf_append_str(b, "\"value\":");
        json_write_compact(b, v, vlen);
    } else if (st == AL_STATUS_INTERRUPTED) {
        status = "awaiting_approval";
        buf_append_str(b, "\"value\":null");
    } else {
        struct al_error_text et;
        al_result_error_text(res, &et);
        enum al_code code = al_result_error_code(res);
        int cancelled = atomic_load(&sr->cancelled) && code == AL_ABORTED;
        status = cancelled ? "cancelled" : "failed";
        if (cancelled) {
            runs_put_error(b, al_code_name(code), "", 0, sr->cancel_why, strlen(sr->cancel_why), "",
                           0);
        } else {
            runs_put_error(b, al_code_name(code), et.name, et.name_len, et.message, et.message_len,
                           et.stack, et.stack_len);
        }
    }
    buf_append_str(b, ",\"console\":[");
    for (size_t i = 0; i < al_result_console_count(res); i++) {
        enum al_console_level level;
        size_t len;
        const char *text = al_result_console_text(res, i, &level, &len);
        buf_append_str(b, i ? ",{\"level\":" : "{\"level\":");
        const char *lname = al_console_level_name(level);
        json_write_string(b, lname, strlen(lname));
        buf_append_str(b, ",\"text\":");
        json_write_string(b, text, len);
        buf_append_str(b, "}");
    }
    struct al_stats stats;
    al_result_stats(res, &stats);
    buf_printf(b,
               "],\"stats\":{\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"peak_memory_bytes\":%" PRIu64
               ",\"host_calls\":%" PRIu32 ",\"seed\":\"%016" PRIx64 "\",\"clock_ms\":%" PRId64
               ",\"jail\":\"%s\"}}",
               (double)stats.wall_us / 1000.0, (double)stats.cpu_us / 1000.0,
               stats.peak_memory_bytes, stats.host_calls, stats.seed, stats.clock_ms,
               stats.jailed ? "seccomp" : "none");
    return status;
}

static void runs_put_str(struct buf *b, const char *key, const char *value)
{
    buf_printf(b, ",\"%s\":", key);
    json_write_string(b, value, strlen(value));
}

/* The JSON members every record of a run carries: run, template, version. */
static void runs_put_subject(struct buf *b, const struct runs_plan *plan)
{
    buf_append_str(b, "{\"run\":");
    json_write_string(b, plan->id, strlen(plan->id));
    runs_put_str(b, "template", plan->template_name);
    buf_printf(b, ",\"version\":%" PRId64, plan->version);
}

static enum store_rc runs_audit(struct runs *r, const char *actor, const char *action,
                                const struct runs_plan *plan, const char *details)
{
    return r->store->ops->audit_append(r->store, actor, action, plan->id, plan->department, details,
                                       NULL);
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

/* Writes one finished run inside the writer's transaction. */
static enum store_rc runs_record(struct runs *r, struct srun *sr)
{
    struct store *s = r->store;
    const struct runs_plan *plan = sr->plan;
    struct buf outcome;
    struct buf d;
    enum store_rc rc = STORE_OK;
    buf_init(&outcome, RUNS_DETAILS_MAX);
    buf_init(&d, RUNS_DETAILS_MAX);

    for (size_t i = 0; i < sr->ncalls && rc == STORE_OK; i++) {
        const struct runs_call *c = &sr->calls[i];
        buf_reset(&d);
        runs_put_subject(&d, plan);
        buf_printf(&d, ",\"call\":%" PRIu32, c->seq);
        runs_put_str(&d, "function", c->function ? c->function : "");
        buf_append_str(&d, ",\"args\":");
        if (!c->args || json_write_compact(&d, c->args, strlen(c->args)) != BUF_OK) {
            buf_append_str(&d, "null");
        }
        runs_put_str(&d, "outcome", c->ended ? runs_outcome_name(c->outcome) : "unfinished");
        buf_printf(&d, ",\"duration_ms\":%.3f", (double)c->duration_us / 1000.0);
        if (c->message) {
            runs_put_str(&d, "message", c->message);
        }
        buf_append_str(&d, "}");
        rc = d.data ? runs_audit(r, "airlockd", "run.host_call", plan, d.data) : STORE_ERROR;
    }

    const char *status = runs_outcome(sr, &outcome);
    if (rc == STORE_OK && !outcome.data) {
        rc = STORE_ERROR;
    }
    size_t ninter = sr->result ? al_result_interruption_count(sr->result) : 0;
    if (rc == STORE_OK && strcmp(status, "awaiting_approval") == 0) {
        rc = s->ops->run_set_continuation(s, plan->id, al_result_continuation(sr->result, NULL));
        for (size_t i = 0; i < ninter && rc == STORE_OK; i++) {
            struct al_interruption in;
            char id[RUNS_ID_LEN + 1];
            (void)al_result_interruption(sr->result, i, &in);
            if (runs_new_id("apr_", id) != 0) {
                rc = STORE_ERROR;
                break;
            }
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
            };
            rc = s->ops->approval_create(s, &a);
            if (rc == STORE_OK) {
                buf_reset(&d);
                runs_put_subject(&d, plan);
                runs_put_str(&d, "approval", id);
                runs_put_str(&d, "kind", "host_call");
                runs_put_str(&d, "function", in.function);
                buf_append_str(&d, ",\"args\":");
                json_write_compact(&d, in.args, strlen(in.args));
                runs_put_str(&d, "requested_by", plan->principal);
                buf_append_str(&d, "}");
                rc = d.data ? s->ops->audit_append(s, "airlockd", "approval.request", id,
                                                   plan->department, d.data, NULL)
                            : STORE_ERROR;
            }
        }
    }
    if (rc == STORE_OK) {
        /* a run cancelled through the API is already recorded cancelled: add its outcome */
        rc = s->ops->run_set_status(s, plan->id,
                                    atomic_load(&sr->cancelled) ? "running|cancelled" : "running",
                                    status, outcome.data);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK; /* it was ended meanwhile (cancelled while it ran): that record stands */
        }
    }
    if (rc == STORE_OK) {
        buf_reset(&d);
        runs_put_subject(&d, plan);
        runs_put_str(&d, "principal", plan->principal);
        runs_put_str(&d, "approved_by", plan->approved_by);
        runs_put_str(&d, "status", status);
        /* the outcome's members: value or error, console, stats */
        buf_append_str(&d, ",");
        buf_append(&d, outcome.data + 1, outcome.len - 1);
        int waits = strcmp(status, "awaiting_approval") == 0;
        rc = d.data ? runs_audit(r, "airlockd", waits ? "run.wait" : "run.end", plan, d.data)
                    : STORE_ERROR;
    }
    if (rc == STORE_OK) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double seconds = (double)(now.tv_sec - sr->started.tv_sec) +
                         (double)(now.tv_nsec - sr->started.tv_nsec) / 1e9;
        metrics_run(plan->template_name[0] ? plan->template_name : "_adhoc", status, seconds);
    }
    buf_done(&outcome);
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
    j->status = runs_http_status(row->status);
    j->rc = runs_json(j->s, row, j->b);
    return 0;
}

/* The answer of a recorded run, read back from the store as GET /v1/runs/{id} would. */
static void runs_build_answer(struct runs *r, struct srun *sr)
{
    struct runs_row_json j = { r->store, &sr->answer, 500, STORE_OK };
    buf_reset(&sr->answer);
    if (r->store->ops->run_get(r->store, sr->plan->id, runs_row_json, &j) != STORE_OK ||
        j.rc != STORE_OK || !sr->answer.data) {
        sr->answer_status = 500;
        buf_reset(&sr->answer);
        buf_append_str(&sr->answer, "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"the run "
                                    "could not be read back\"}}\n");
        return;
    }
    sr->answer_status = j.status;
    buf_append_str(&sr->answer, "\n");
}

static void runs_log_store(struct runs *r, const char *what)
{
    struct buf b;
    buf_init(&b, 4096);
    json_write_string(&b, r->store->ops->errmsg(r->store), strlen(r->store->ops->errmsg(r->store)));
    fprintf(stderr, "{\"log\":\"runs\",\"error\":\"%s\",\"store\":%s}\n", what,
            b.data ? b.data : "\"\"");
    buf_done(&b);
}

void runs_submit(struct runs *r, const struct runs_start *start)
{
    struct runs_job *job = calloc(1, sizeof *job);
    if (!job) {
        static const char oom[] =
                "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"out of memory\"}}\n";
        runs_plan_free(start->plan);
        if (start->record_free) {
            start->record_free(start->record_userdata);
        }
        http_deferred_answer(start->deferred, 500, oom, sizeof oom - 1);
        return;
    }
    job->start = *start;
    buf_init(&job->answer, (size_t)96 << 20);
    pthread_mutex_lock(&r->lock);
    if (r->start_tail) {
        r->start_tail->next = job;
    } else {
        r->start_head = job;
    }
    r->start_tail = job;
    r->nstarting++;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void runs_internal_answer(struct buf *b, unsigned *ret_status, const char *message)
{
    *ret_status = 500;
    buf_reset(b);
    buf_append_str(b, "{\"error\":{\"code\":\"INTERNAL\",\"message\":");
    json_write_string(b, message, strlen(message));
    buf_append_str(b, "}}\n");
}

/* After the batch: the new runs answered (held, not waiting) and launched. */
static void runs_start_jobs(struct runs *r, struct runs_job *jobs, int recorded)
{
    while (jobs) {
        struct runs_job *job = jobs;
        jobs = job->next;
        struct runs_start *st = &job->start;
        if (!recorded || st->mode != RUNS_START_WAIT) {
            http_deferred_answer(st->deferred, job->status,
                                 job->answer.data ? job->answer.data : "", job->answer.len);
            st->deferred = NULL;
        }
        if (recorded && st->mode != RUNS_START_HELD) {
            runs_launch(r, st->plan, NULL, NULL, 0, st->deferred);
        } else {
            runs_plan_free(st->plan);
        }
        if (st->record_free) {
            st->record_free(st->record_userdata);
        }
        buf_done(&job->answer);
        free(job);
        pthread_mutex_lock(&r->lock);
        r->nstarting--;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
}

static void *runs_writer(void *arg)
{
    struct runs *r = arg;
    struct srun *batch[RUNS_BATCH_MAX];
    pthread_mutex_lock(&r->lock);
    while (1) {
        while (!r->done_head && !r->start_head && !r->stop) {
            pthread_cond_wait(&r->cond, &r->lock);
        }
        if (!r->done_head && !r->start_head && r->stop) {
            break;
        }
        size_t n = 0;
        while (r->done_head && n < RUNS_BATCH_MAX) {
            batch[n++] = r->done_head;
            r->done_head = r->done_head->next_done;
        }
        if (!r->done_head) {
            r->done_tail = NULL;
        }
        struct runs_job *jobs = r->start_head;
        r->start_head = NULL;
        r->start_tail = NULL;
        pthread_mutex_unlock(&r->lock);

        /* one transaction, one fsync for the whole batch: new runs first, then the ended */
        pthread_mutex_lock(r->store_lock);
        struct store *s = r->store;
        enum store_rc rc = s->ops->tx_begin(s);
        for (struct runs_job *job = jobs; job && rc == STORE_OK; job = job->next) {
            rc = job->start.record(s, job->start.record_userdata);
        }
        for (size_t i = 0; i < n && rc == STORE_OK; i++) {
            rc = runs_record(r, batch[i]);
        }
        if (rc == STORE_OK) {
            rc = s->ops->tx_commit(s);
        }
        if (rc != STORE_OK) {
            runs_log_store(r, "recording a batch of runs failed");
            s->ops->tx_rollback(s);
        }
        for (struct runs_job *job = jobs; job; job = job->next) {
            struct runs_row_json j = { s, &job->answer, 500, STORE_OK };
            if (rc != STORE_OK) {
                runs_internal_answer(&job->answer, &job->status, "the run could not be recorded");
            } else if (job->start.mode != RUNS_START_WAIT) {
                if (s->ops->run_get(s, job->start.plan->id, runs_row_json, &j) != STORE_OK ||
                    j.rc != STORE_OK || !job->answer.data) {
                    runs_internal_answer(&job->answer, &job->status,
                                         "the run could not be read back");
                } else {
                    job->status = j.status;
                    buf_append_str(&job->answer, "\n");
                }
            }
        }
        for (size_t i = 0; i < n; i++) {
            if (rc == STORE_OK) {
                runs_build_answer(r, batch[i]);
            } else {
                runs_internal_answer(&batch[i]->answer, &batch[i]->answer_status,
                                     "the run's end could not be recorded");
            }
        }
        pthread_mutex_unlock(r->store_lock);

        /* answered and started outside the store lock: the HTTP thread may be waiting for it */
        runs_start_jobs(r, jobs, rc == STORE_OK);
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < n; i++) {
            struct srun *sr = batch[i];
            for (struct srun **p = &r->active; *p; p = &(*p)->next_active) {
                if (*p == sr) {
                    *p = sr->next_active;
                    r->nactive--;
                    break;
                }
            }
        }
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        for (size_t i = 0; i < n; i++) {
            struct srun *sr = batch[i];
            if (sr->deferred) {
                http_deferred_answer(sr->deferred, sr->answer_status,
                                     sr->answer.data ? sr->answer.data : "", sr->answer.len);
                sr->deferred = NULL;
            }
            srun_unref(sr);
        }
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---------------------------------------------------------------- launching */

/* The guest's frozen global `input`, prepended on the source's first line so that every
 * other line keeps its number. */
static int runs_source(const struct runs_plan *plan, struct buf *b)
{
    buf_append_str(b, "const input = ((f) => f(f, JSON.parse(");
    json_write_string(b, plan->input_json, strlen(plan->input_json));
    buf_append_str(b, ")))((f, o) => { if (o !== null && typeof o === \"object\") { "
                      "for (const k of Object.keys(o)) f(f, o[k]); Object.freeze(o); } "
                      "return o; }); ");
    buf_append_str(b, plan->source);
    return b->data ? 0 : -1;
}

static enum al_code runs_opts(struct srun *sr, const char *continuation,
                              const struct runs_resolution *res, size_t nres,
                              struct al_run_opts *opts, struct al_error *err)
{
    const struct runs_plan *plan = sr->plan;
    struct buf src;
    enum al_code code = AL_OK;
    buf_init(&src, (size_t)64 << 20);
    memset(err, 0, sizeof *err);
    if (runs_source(plan, &src) != 0) {
        code = AL_INTERNAL_ERROR;
        goto out;
    }
    code = al_run_opts_set_source(opts, src.data, src.len,
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
    }
    for (size_t i = 0; i < nres && code == AL_OK; i++) {
        struct buf rj;
        buf_init(&rj, 4096);
        buf_printf(&rj, "{\"approved\":%s", res[i].approved ? "true" : "false");
        if (res[i].comment) {
            buf_append_str(&rj, ",\"comment\":");
            json_write_string(&rj, res[i].comment, strnlen(res[i].comment, 1024));
        }
        buf_append_str(&rj, "}");
        code = rj.data ? al_run_opts_add_resolution(opts, res[i].interruption, rj.data, rj.len)
                       : AL_INTERNAL_ERROR;
        buf_done(&rj);
    }
    if (code == AL_OK) {
        al_run_opts_set_userdata(opts, sr);
        al_run_opts_set_event_callback(opts, runs_event, sr);
    }
out:
    if (code != AL_OK && !err->message[0]) {
        snprintf(err->message, sizeof err->message, "%s", al_code_name(code));
    }
    buf_done(&src);
    return code;
}

int runs_launch(struct runs *r, struct runs_plan *plan, const char *continuation,
                const struct runs_resolution *resolutions, size_t nresolutions,
                struct http_deferred *deferred)
{
    struct al_error err;
    struct srun *sr = calloc(1, sizeof *sr);
    if (!sr) {
        runs_plan_free(plan);
        if (deferred) {
            static const char oom[] =
                    "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"out of memory\"}}\n";
            http_deferred_answer(deferred, 500, oom, sizeof oom - 1);
        }
        return -1;
    }
    sr->owner = r;
    sr->plan = plan;
    sr->deferred = deferred;
    atomic_init(&sr->refs, 2);
    atomic_init(&sr->cancelled, 0);
    buf_init(&sr->answer, (size_t)96 << 20);
    clock_gettime(CLOCK_MONOTONIC, &sr->started);

    pthread_mutex_lock(&r->lock);
    int refused = r->draining;
    if (!refused) {
        sr->next_active = r->active;
        r->active = sr;
        r->nactive++;
    }
    pthread_mutex_unlock(&r->lock);
    if (refused) {
        /* not active, so nothing else can see it: recorded like a run the runner refused */
        pthread_mutex_lock(&r->lock);
        sr->next_active = r->active;
        r->active = sr;
        r->nactive++;
        pthread_mutex_unlock(&r->lock);
        snprintf(sr->start_error, sizeof sr->start_error, "airlockd is shutting down");
        atomic_fetch_sub(&sr->refs, 1);
        runs_enqueue_done(sr);
        return -1;
    }

    struct al_run_opts *opts = al_run_opts_new();
    enum al_code code = opts ? runs_opts(sr, continuation, resolutions, nresolutions, opts, &err)
                             : AL_INTERNAL_ERROR;
    struct al_run *handle = NULL;
    if (code == AL_OK) {
        code = al_run_start(r->runner, opts, runs_done, sr, &handle, &err);
    }
    al_run_opts_free(opts);
    if (code != AL_OK) {
        snprintf(sr->start_error, sizeof sr->start_error, "the run could not start: %s",
                 err.message[0] ? err.message : al_code_name(code));
        atomic_fetch_sub(&sr->refs, 1);
        runs_enqueue_done(sr);
        return -1;
    }
    pthread_mutex_lock(&r->lock);
    sr->handle = handle;
    pthread_mutex_unlock(&r->lock);
    srun_unref(sr);
    return 0;
}

/* ---------------------------------------------------------------- cancel, drain */

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
}

int runs_cancel(struct runs *r, const char *id, const char *why)
{
    int found = 0;
    pthread_mutex_lock(&r->lock);
    for (struct srun *sr = r->active; sr; sr = sr->next_active) {
        if (strcmp(sr->plan->id, id) == 0 && !sr->result) {
            runs_cancel_one(sr, why);
            found = 1;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

size_t runs_cancel_version(struct runs *r, const char *template_name, int64_t version,
                           const char *why)
{
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    for (struct srun *sr = r->active; sr; sr = sr->next_active) {
        if (strcmp(sr->plan->template_name, template_name) == 0 && sr->plan->version == version) {
            runs_cancel_one(sr, why);
            n++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t runs_active(struct runs *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->nactive;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void runs_drain(struct runs *r, unsigned grace_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += grace_ms / 1000;
    deadline.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->lock);
    r->draining = 1;
    while (r->nactive > 0 || r->nstarting > 0) {
        if (pthread_cond_timedwait(&r->cond, &r->lock, &deadline) != 0) {
            break;
        }
    }
    for (struct srun *sr = r->active; sr; sr = sr->next_active) {
        runs_cancel_one(sr, "cancelled: airlockd is shutting down");
    }
    while (r->nactive > 0 || r->nstarting > 0) {
        pthread_cond_wait(&r->cond, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);
}

int runs_new(struct store *store, pthread_mutex_t *store_lock, struct al_runner *runner,
             struct connector_client *client, struct runs **ret, char *err)
{
    struct runs *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, 256, "out of memory");
        return -1;
    }
    r->store = store;
    r->store_lock = store_lock;
    r->runner = runner;
    r->client = client;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    if (pthread_create(&r->writer, NULL, runs_writer, r) != 0) {
        snprintf(err, 256, "cannot start the run writer thread");
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return -1;
    }
    *ret = r;
    return 0;
}

void runs_free(struct runs *r)
{
    if (!r) {
        return;
    }
    runs_drain(r, 0);
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->writer, NULL);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
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
    buf_append_str(ids->b, ids->n++ ? "," : "");
    json_write_string(ids->b, a->id, strlen(a->id));
    return 0;
}

enum store_rc runs_json(struct store *s, const struct store_run *row, struct buf *b)
{
    buf_append_str(b, "{\"id\":");
    json_write_string(b, row->id, strlen(row->id));
    runs_put_str(b, "status", row->status);
    if (row->template_name[0]) {
        runs_put_str(b, "template", row->template_name);
        buf_printf(b, ",\"version\":%" PRId64, row->version);
    } else {
        buf_append_str(b, ",\"template\":null,\"version\":null");
    }
    runs_put_str(b, "department", row->department);
    runs_put_str(b, "principal", row->principal);
    buf_append_str(b, ",\"input\":");
    json_write_compact(b, row->input, strlen(row->input));
    runs_put_str(b, "created", row->created);
    runs_put_str(b, "updated", row->updated);
    if (row->outcome && row->outcome[0] == '{' && row->outcome[1] != '}') {
        buf_append_str(b, ",");
        buf_append(b, row->outcome + 1, strlen(row->outcome) - 2);
    } else {
        buf_append_str(b, ",\"value\":null,\"console\":[],\"stats\":{}");
    }
    buf_append_str(b, ",\"approvals\":[");
    struct runs_ids ids = { b, 0 };
    enum store_rc rc = s->ops->approval_list(s, row->id, NULL, runs_approval_id, &ids);
    buf_append_str(b, "]}");
    return rc;
}
