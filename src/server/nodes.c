/*
 * nodes.c - several airlockd on one database (see nodes.h).
 *
 * Leases. Each node renews its row in `nodes` (heartbeat on the database server's clock) every
 * third of its lease. Every node looks for nodes whose lease has run out and takes over the runs
 * they were executing: nobody executes them any more, and a run is never silently redone when a
 * connector call it had sent that is not idempotent may have had its effect. The calls in doubt
 * are known: a node marks each connector call sent (calls_sent) in a commit before the call
 * leaves, and forgets a run's marks in the commit that records that execution's end. What is
 * marked for a run whose node died was sent and its outcome never recorded, unless its answer
 * is in the run's journal. If all the rest is idempotent the run goes back to the queue to go on
 * from its journal (run.retried, nodes_take_over); otherwise it waits for a person to settle
 * those calls (in_doubt approvals). A run that cannot be replayed (its start not recorded) ends
 * failed ABORTED and its run.abandoned record lists those calls with their idempotency keys, for
 * a person to check at the connector. A run cancelled while the dead node
 * executed it gets its run.end here. Two nodes taking over at once cannot both take a run: the
 * takeover locks the run's row and changes it from status running, and the loser finds it
 * changed. A node that was only paused past its lease locks the same row before each mark and
 * record, and finds the run no longer its own.
 *
 * Fencing. A node that cannot renew its lease for a whole lease (the database unreachable)
 * cancels the runs it executes: by then another node may have taken them over. Its writer's
 * record of their end then finds them ended (the update from running changes nothing).
 *
 * The queue. With several nodes a run started without waiting, and a run whose approvals are
 * all decided (a resume, a supervised start), is not executed by the node that took the
 * request or the last decision: it goes to the queue (status queued, no node) and the first
 * node to claim it (FOR UPDATE SKIP LOCKED, in the transaction that also claims its
 * continuation) executes it. A node that is full or drains claims nothing, so its share goes to
 * the others.
 *
 * Cancels from elsewhere. Every node serves every request, so a cancel or a revocation may be
 * decided on a node other than the one executing the run. The deciding node commits the run's
 * status `cancelled` (with its reason in the outcome); the watch here finds, for each run
 * executing on this node, whether the store says it was cancelled, and cancels it locally with
 * the stored reason, so its end is recorded by this node's writer as a local cancel's would be.
 * It reads one row per executing run: with no run executing it costs nothing.
 *
 * Wake-ups. A commit that queues a run notifies STORE_CHANNEL_QUEUE, one that cancels a run
 * STORE_CHANNEL_CANCEL (the store delivers them after the commit, never after a rollback). A
 * second thread keeps the store's listener connected and turns each notification into a look
 * of the nodes thread: a claim, or a watch. Notifications are not durable (one sent while the
 * listener is disconnected is lost), so the nodes thread still looks every poll_ms, and after
 * each reconnect the listener asks for one full look. The heartbeat has its own schedule: the
 * thread's wait ends at the earliest of the next poll, the next beat and the lease's end.
 */
#include "nodes.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_runs.h"
#include "buf.h"
#include "clock.h"
#include "error.h"
#include "json.h"
#include "keyfile.h"
#include "readers.h"
#include "webhooks.h"
#include "writer.h"

#define NODES_WHY_MAX        512
#define NODES_DETAILS_MAX    ((size_t)4 << 20)
#define NODES_CLAIMS_MAX     16  /* queued runs one node claims per look, so that others get some */
#define NODES_RETRIES_MAX    3   /* takeovers (recoveries) of one run; the next aborts it */
#define NODES_BACKOFF_MIN_MS 100 /* the listener's first retry after a loss */
#define NODES_BACKOFF_MAX_MS 5000 /* ... doubling up to this */
#define NODES_LISTEN_WAIT_MS 60000

struct nodes {
    struct writer *writer;   /* leases, takeovers and claims are writer jobs */
    struct readers *readers; /* the watch reads */
    struct runs *runs;
    char id[NODES_ID_LEN + 1];
    int64_t lease_ms;
    int64_t poll_ms;
    struct secretbox_keys *secret_keys; /* the connectors' secrets, for the plans of claimed runs */
    pthread_mutex_t lock;               /* guards stop, want_claim and want_watch */
    pthread_cond_t cond;                /* signalled by nodes_stop, the kick and the listener */
    int stop;
    int want_claim; /* a run was queued (here or elsewhere): look at the queue now */
    int want_watch; /* a run was cancelled somewhere: look at the runs executing here now */
    pthread_t thread;
    struct store_listener *listener; /* NULL: the store has none (polling only) */
    pthread_t listen_thread;
    char err[256]; /* nodes_first_fn's */
};

static int64_t nodes_now_ms(void)
{
    return (int64_t)(clock_mono_us() / 1000);
}

int nodes_id(const char *data_dir, char *ret, struct al_error *reterr)
{
    unsigned char raw[16];
    if (keyfile_load(data_dir, "node.id", NULL, sizeof raw, raw, reterr) != 0) {
        return -1;
    }
    memcpy(ret, "node_", 5);
    for (size_t i = 0; i < sizeof raw; i++) {
        snprintf(ret + 5 + 2 * i, 3, "%02x", raw[i]);
    }
    return 0;
}

/* ---------------------------------------------------------------- recovery of a node's runs */

struct nodes_runs {
    size_t n;
    size_t cap;
    struct nodes_run {
        char id[RUNS_ID_LEN + 1];
        char department[STORE_NAME_MAX + 1];
        char cancel[NODES_WHY_MAX]; /* a cancelled run's reason; "" for a running one */
    } * rows;
};

/* The reason a cancel stored in a run's outcome (its error's message), else `fallback`. */
static void nodes_cancel_why(const char *outcome, const char *fallback, char *why, size_t cap)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    snprintf(why, cap, "%s", fallback);
    if (outcome && json_parse(outcome, strlen(outcome), 16, &doc, &err) == AL_OK) {
        const struct json_node *e = json_get(json_root(doc), "error");
        const struct json_node *m = e ? json_get(e, "message") : NULL;
        if (m && m->type == JSON_STRING && m->str_len > 0) {
            snprintf(why, cap, "%s", m->str);
        }
    }
    json_doc_free(doc);
}

static int nodes_runs_fn(void *userdata, const struct store_run *row)
{
    struct nodes_runs *l = userdata;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct nodes_run *rows = realloc(l->rows, cap * sizeof *rows);
        if (!rows) {
            return 1;
        }
        l->rows = rows;
        l->cap = cap;
    }
    struct nodes_run *r = &l->rows[l->n];
    snprintf(r->id, sizeof r->id, "%s", row->id);
    snprintf(r->department, sizeof r->department, "%s", row->department);
    r->cancel[0] = '\0';
    if (api_run_state(row->status) == GOV_RUN_CANCELLED) {
        nodes_cancel_why(row->outcome, "cancelled", r->cancel, sizeof r->cancel);
    }
    l->n++;
    return 0;
}

/* What a run's journal answers: the idempotency keys of its answered calls (those are not in
 * doubt) and how many answers it has. */
struct nodes_journal {
    size_t n;
    size_t cap;
    char **keys;
};

static int nodes_journal_fn(void *userdata, const struct store_journal_entry *e)
{
    struct nodes_journal *j = userdata;
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 32;
        char **keys = realloc(j->keys, cap * sizeof *keys);
        if (!keys) {
            return 1;
        }
        j->keys = keys;
        j->cap = cap;
    }
    j->keys[j->n] = strdup(e->idempotency_key ? e->idempotency_key : "");
    return !j->keys[j->n++];
}

static void nodes_journal_done(struct nodes_journal *j)
{
    for (size_t i = 0; i < j->n; i++) {
        free(j->keys[i]);
    }
    free(j->keys);
}

/* A call in doubt whose function is not marked idempotent: a person settles it (in_doubt). */
struct nodes_unsafe {
    char *key;
    char *function;
    char *sent;
    char *args_sha256;
    char *args; /* NULL for a call marked before 0012_in_doubt kept arguments */
};

/* The calls a dead execution had sent whose answer is not in the journal (with `journal` NULL:
 * every call it had sent), as the audit lists them; `unsafe` counts those whose function is not
 * marked idempotent, and `calls` holds them. */
struct nodes_doubt {
    struct buf *b;
    const struct nodes_journal *journal;
    int unsafe;
    int failed; /* out of memory copying a call */
    struct nodes_unsafe *calls;
};

static char *nodes_dup(const char *text, int *failed)
{
    char *copy = text ? strdup(text) : NULL;
    *failed |= text && !copy;
    return copy;
}

static void nodes_doubt_done(struct nodes_doubt *d)
{
    for (int i = 0; d->calls && i < d->unsafe; i++) {
        free(d->calls[i].key);
        free(d->calls[i].function);
        free(d->calls[i].sent);
        free(d->calls[i].args_sha256);
        free(d->calls[i].args);
    }
    free(d->calls);
}

static int nodes_call_fn(void *userdata, const struct store_call *c)
{
    struct nodes_doubt *d = userdata;
    struct buf *b = d->b;
    for (size_t i = 0; d->journal && i < d->journal->n; i++) {
        if (strcmp(d->journal->keys[i], c->idempotency_key) == 0) {
            return 0; /* answered: replayed from the journal, never sent again */
        }
    }
    if (b->data && b->data[b->len - 1] != '[') {
        buf_append_str(b, ",");
    }
    api_member(b, "{\"function\":", c->function);
    api_member(b, ",\"idempotency_key\":", c->idempotency_key);
    api_member(b, ",\"sent\":", c->sent);
    buf_printf(b, ",\"idempotent\":%s,\"outcome\":\"unknown\"}", c->idempotent ? "true" : "false");
    if (c->idempotent) {
        return 0;
    }
    struct nodes_unsafe *calls = realloc(d->calls, (size_t)(d->unsafe + 1) * sizeof *calls);
    if (!calls) {
        d->failed = 1;
        return 1;
    }
    d->calls = calls;
    struct nodes_unsafe *u = &calls[d->unsafe++];
    u->key = nodes_dup(c->idempotency_key, &d->failed);
    u->function = nodes_dup(c->function, &d->failed);
    u->sent = nodes_dup(c->sent, &d->failed);
    u->args_sha256 = nodes_dup(c->args_sha256, &d->failed);
    u->args = nodes_dup(c->args, &d->failed);
    return d->failed;
}

/* A run resumed after a person's decisions is recovered from its journal as any run (its legs'
 * answers make one journal) as long as each of its sensitive calls' approvals knows the call's
 * number: the recovery finds the decision by it, and an approved call in doubt, sent under its
 * interruption id, is numbered by it. */
struct nodes_asked {
    size_t n;
    int unnumbered; /* an approval from before call numbers were kept */
    struct nodes_asked_call {
        char interruption[64];
        int64_t call_seq;
    } * calls;
};

static int nodes_asked_fn(void *userdata, const struct store_approval *a)
{
    struct nodes_asked *q = userdata;
    if (strcmp(a->kind, "host_call") != 0) {
        return 0;
    }
    if (a->call_seq <= 0 || !a->interruption) {
        q->unnumbered = 1;
        return 0;
    }
    struct nodes_asked_call *calls = realloc(q->calls, (q->n + 1) * sizeof *calls);
    if (!calls) {
        return 1;
    }
    q->calls = calls;
    snprintf(calls[q->n].interruption, sizeof calls[q->n].interruption, "%s", a->interruption);
    calls[q->n++].call_seq = a->call_seq;
    return 0;
}

static int nodes_execution_fn(void *userdata, const struct store_execution *e)
{
    (void)userdata;
    (void)e;
    return 0;
}

struct nodes_origin {
    int64_t clock_ms;
    int64_t recovered;
    /* for the approvals of its calls in doubt */
    char principal[STORE_NAME_MAX + 1];
    char template_name[STORE_NAME_MAX + 1];
    int64_t version;
};

static int nodes_origin_fn(void *userdata, const struct store_run *row)
{
    struct nodes_origin *o = userdata;
    o->clock_ms = row->clock_ms;
    o->recovered = row->recovered;
    snprintf(o->principal, sizeof o->principal, "%s", row->principal);
    snprintf(o->template_name, sizeof o->template_name, "%s", row->template_name);
    o->version = row->version;
    return 0;
}

/* The call number of idempotency key `key`: RUN:N for call N, or the interruption id of an
 * approved sensitive call (its approval has the number); 0 when neither. */
static int64_t nodes_key_call(const char *run, const char *key, const struct nodes_asked *asked)
{
    size_t n = strlen(run);
    char *end = NULL;
    for (size_t i = 0; i < asked->n; i++) {
        if (strcmp(asked->calls[i].interruption, key) == 0) {
            return asked->calls[i].call_seq;
        }
    }
    if (strncmp(key, run, n) != 0 || key[n] != ':' || key[n + 1] < '1' || key[n + 1] > '9') {
        return 0;
    }
    unsigned long long call = strtoull(key + n + 1, &end, 10);
    return *end == '\0' && call <= UINT32_MAX ? (int64_t)call : 0;
}

/* A journaled run whose calls in doubt include some not marked idempotent waits for a person:
 * one approval of kind in_doubt per such call (its approval.request), the run awaiting_approval
 * with its marks forgotten (what the approvals say is kept with them). The decisions resume it
 * from its journal (api_run_go). `b` gets the run.wait record's members. */
static enum store_rc nodes_wait(struct store *s, const char *id, const char *department,
                                const struct nodes_origin *origin, const struct nodes_doubt *doubt,
                                const struct nodes_asked *asked, struct buf *b)
{
    struct buf d;
    enum store_rc rc = s->ops->run_set_status(s, id, "running", "awaiting_approval", NULL);
    if (rc == STORE_OK) {
        rc = s->ops->call_clear(s, id);
    }
    buf_init(&d, NODES_DETAILS_MAX);
    buf_append_str(b, ",\"approvals\":[");
    for (int i = 0; i < doubt->unsafe && rc == STORE_OK; i++) {
        const struct nodes_unsafe *u = &doubt->calls[i];
        char apr[RUNS_ID_LEN + 1];
        char connector[STORE_NAME_MAX + 1];
        const char *dot = strchr(u->function, '.');
        snprintf(connector, sizeof connector, "%.*s",
                 (int)(dot ? (size_t)(dot - u->function) : strlen(u->function)), u->function);
        if (runs_new_id("apr_", apr) != 0) {
            rc = STORE_ERROR;
            break;
        }
        struct store_approval a = {
            .id = apr,
            .run = id,
            .kind = "in_doubt",
            .function = u->function,
            .args = u->args,
            .requested_by = origin->principal,
            .department = department,
            .template_name = origin->template_name,
            .version = origin->version,
            .connector = connector,
            .sent = u->sent,
            .idempotency_key = u->key,
            .call_seq = nodes_key_call(id, u->key, asked),
            .args_sha256 = u->args_sha256,
        };
        rc = s->ops->approval_create(s, &a);
        buf_reset(&d);
        api_member(&d, "{\"run\":", id);
        api_member(&d, ",\"template\":", origin->template_name);
        buf_printf(&d, ",\"version\":%" PRId64, origin->version);
        api_member(&d, ",\"approval\":", apr);
        api_member(&d, ",\"kind\":", "in_doubt");
        api_member(&d, ",\"function\":", u->function);
        buf_append_str(&d, ",");
        runs_put_bounded(&d, "args", u->args ? u->args : "null", u->args ? strlen(u->args) : 4);
        api_member(&d, ",\"connector\":", connector);
        api_member(&d, ",\"sent\":", u->sent);
        api_member(&d, ",\"idempotency_key\":", u->key);
        api_member(&d, ",\"requested_by\":", origin->principal);
        buf_append_str(&d, "}");
        if (rc == STORE_OK) {
            rc = d.data ? s->ops->audit_append(s, "airlockd", "approval.request", apr, department,
                                               d.data, NULL)
                        : STORE_ERROR;
        }
        if (rc == STORE_OK) {
            rc = webhooks_approval_requested(s, apr, id, department, "in_doubt", u->function);
        }
        api_member(b, i ? "," : "", apr);
    }
    buf_append_str(b, "]");
    buf_done(&d);
    return rc;
}

enum store_rc nodes_take_over(struct store *s, const char *id, const char *department,
                              const char *node, const char *reason, const char *cancelled,
                              int *ret_retried, int *ret_waiting)
{
    struct buf outcome;
    struct buf calls; /* the calls in doubt, a JSON array */
    struct buf b;     /* the audit record's details */
    struct nodes_asked asked;
    struct nodes_journal journal;
    struct nodes_doubt doubt = { &calls, NULL, 0, 0, NULL };
    char why[NODES_WHY_MAX];
    struct nodes_origin origin;
    memset(&asked, 0, sizeof asked);
    memset(&journal, 0, sizeof journal);
    memset(&origin, 0, sizeof origin);
    *ret_retried = 0;
    buf_init(&outcome, 4096);
    buf_init(&calls, NODES_DETAILS_MAX);
    buf_init(&b, NODES_DETAILS_MAX);
    buf_append_str(&calls, "[");
    int begun = calls.data != NULL; /* out of memory: nothing begun, nothing to roll back */
    enum store_rc rc = begun ? s->ops->tx_begin(s) : STORE_ERROR;
    if (rc == STORE_OK && node && node[0]) {
        /* first the run's row: a mark the node commits before this lock is among the calls
         * read below, and one it tries after finds the run no longer its own (it was only
         * paused, and goes on) */
        rc = s->ops->run_lock_on_node(s, id, node, "running|cancelled");
    }
    if (rc == STORE_OK) {
        rc = s->ops->approval_list(s, id, NULL, nodes_asked_fn, &asked);
    }
    if (rc == STORE_OK) {
        rc = s->ops->execution_get(s, id, nodes_execution_fn, NULL);
        if (rc == STORE_NOT_FOUND) {
            /* a run executing from its start or a resume has no row; a cancelled one without
             * it has its end recorded (by another node taking this one over) */
            rc = cancelled ? STORE_CONFLICT : STORE_OK;
        }
    }
    if (rc == STORE_OK) {
        rc = s->ops->run_get(s, id, nodes_origin_fn, &origin);
    }
    /* a run whose start was recorded (0010_journal: seed and clock) goes on from its journal,
     * from its input or resumed after decisions alike: only the calls sent and not answered
     * there are in doubt. One from before that cannot be replayed: all it sent is in doubt */
    int journaled = origin.clock_ms > 0 && !asked.unnumbered;
    if (rc == STORE_OK && journaled) {
        doubt.journal = &journal;
        rc = s->ops->journal_read(s, id, 0, nodes_journal_fn, &journal);
    }
    if (rc == STORE_OK) {
        rc = s->ops->call_list(s, id, nodes_call_fn, &doubt);
        rc = rc == STORE_OK && doubt.failed ? STORE_ERROR : rc;
        buf_append_str(&calls, "]");
    }
    /* a run of no recorded node predates the marks: what it sent is not known; one that
     * brought its host down at each of its recoveries must not loop */
    int again = journaled && origin.recovered < NODES_RETRIES_MAX;
    int retry = rc == STORE_OK && node && !cancelled && doubt.unsafe == 0 && again;
    /* calls in doubt not idempotent: a person settles them */
    int wait = rc == STORE_OK && node && !cancelled && doubt.unsafe > 0 && again;
    api_member(&b, "{\"run\":", id);
    if (wait) {
        buf_append_str(&b, ",\"status\":\"awaiting_approval\"");
        api_member(&b, ",\"reason\":", reason);
        api_member(&b, ",\"node\":", node);
        rc = nodes_wait(s, id, department, &origin, &doubt, &asked, &b);
    } else if (retry) {
        /* queued with an execution row: the node that claims it goes on from its journal (a
         * recovery, api_run_go) */
        struct store_execution e = { id, NULL, NULL, origin.clock_ms, origin.recovered + 1 };
        rc = s->ops->run_set_status(s, id, "running", "queued", NULL);
        if (rc == STORE_OK) {
            rc = s->ops->execution_put(s, &e);
        }
        if (rc == STORE_OK && s->ops->notify) {
            rc = s->ops->notify(s, STORE_CHANNEL_QUEUE, id); /* every node hears at the commit */
        }
        buf_append_str(&b, ",\"status\":\"queued\"");
        api_member(&b, ",\"reason\":", reason);
        api_member(&b, ",\"node\":", node);
        buf_printf(&b, ",\"attempt\":%" PRId64, e.attempt);
    } else if (rc == STORE_OK && cancelled) {
        rc = s->ops->call_clear(s, id);
        if (rc == STORE_OK) {
            /* no longer that node's: if it was only paused, its own record of the end, when
             * it goes on, finds the run not its own (runs.c) */
            rc = s->ops->run_set_node(s, id, NULL);
        }
        api_member(&b, ",\"status\":\"cancelled\",\"error\":{\"code\":\"ABORTED\",\"message\":",
                   cancelled);
        buf_append_str(&b, "}");
        api_member(&b, ",\"node\":", node);
    } else if (rc == STORE_OK) {
        snprintf(why, sizeof why, "%s", reason);
        if (node && journaled && origin.recovered >= NODES_RETRIES_MAX) {
            snprintf(why, sizeof why, "%s; recovered %d times already, not again", reason,
                     NODES_RETRIES_MAX);
        }
        api_member(&outcome, "{\"error\":{\"code\":\"ABORTED\",\"name\":\"\",\"message\":", why);
        buf_append_str(&outcome, ",\"stack\":\"\"},\"console\":[],\"stats\":{},\"host_calls\":[]}");
        rc = outcome.data ? s->ops->run_set_status(s, id, "running", "failed", outcome.data)
                          : STORE_ERROR;
        if (rc == STORE_OK) {
            rc = s->ops->call_clear(s, id);
        }
        buf_append_str(&b, ",\"status\":\"failed\",\"code\":\"ABORTED\"");
        api_member(&b, ",\"reason\":", why);
        if (node) {
            api_member(&b, ",\"node\":", node);
        }
    }
    if (rc == STORE_OK) {
        buf_printf(&b, ",\"%s\":", retry ? "calls_retried" : "calls_in_doubt");
        buf_append(&b, calls.data ? calls.data : "", calls.len);
        buf_append_str(&b, "}");
        const char *action = retry       ? "run.retried"
                             : wait      ? "run.wait"
                             : cancelled ? "run.end"
                                         : "run.abandoned";
        rc = calls.data && b.data
                     ? s->ops->audit_append(s, "airlockd", action, id, department, b.data, NULL)
                     : STORE_ERROR;
    }
    if (rc == STORE_OK && !retry && !wait && !cancelled) {
        rc = webhooks_run_failed(s, id, department, origin.template_name, origin.version,
                                 origin.principal);
    }
    if (rc == STORE_OK) {
        rc = s->ops->tx_commit(s);
    }
    if (rc != STORE_OK && begun) {
        s->ops->tx_rollback(s);
    }
    *ret_retried = rc == STORE_OK && retry;
    if (ret_waiting) {
        *ret_waiting = rc == STORE_OK && wait;
    }
    nodes_doubt_done(&doubt);
    free(asked.calls);
    nodes_journal_done(&journal);
    buf_done(&outcome);
    buf_done(&calls);
    buf_done(&b);
    return rc;
}

int nodes_recover(struct store *s, const char *node, const char *reason, int *ret_retried,
                  int *ret_waiting)
{
    struct nodes_runs l;
    int n = 0;
    int retried = 0;
    int waiting = 0;
    memset(&l, 0, sizeof l);
    enum store_rc rc = s->ops->run_list_on_node(s, node, nodes_runs_fn, &l);
    for (size_t i = 0; i < l.n && rc == STORE_OK; i++) {
        int again = 0;
        int waits = 0;
        const struct nodes_run *r = &l.rows[i];
        rc = nodes_take_over(s, r->id, r->department, node, reason, r->cancel[0] ? r->cancel : NULL,
                             &again, &waits);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK; /* ended, or taken over by another node, meanwhile */
        } else if (rc == STORE_OK) {
            n++;
            retried += again;
            waiting += waits;
        }
    }
    free(l.rows);
    if (ret_retried) {
        *ret_retried = retried;
    }
    if (ret_waiting) {
        *ret_waiting = waiting;
    }
    return rc == STORE_OK ? n : -1;
}

/* ---------------------------------------------------------------- the thread */

struct nodes_row {
    int cancelled;
    char why[NODES_WHY_MAX];
};

/* Whether the run's stored status is cancelled, and the reason stored with the cancel. */
static int nodes_row_fn(void *userdata, const struct store_run *row)
{
    struct nodes_row *r = userdata;
    r->cancelled = api_run_state(row->status) == GOV_RUN_CANCELLED;
    if (r->cancelled) {
        nodes_cancel_why(row->outcome, "cancelled on another node", r->why, sizeof r->why);
    }
    return 0;
}

/* Cancels the runs executing here that the store says are cancelled; with `all`, every one of
 * them (this node lost its lease). */
static void nodes_watch(struct nodes *n, int all)
{
    char(*ids)[RUNS_ID_LEN + 1] = NULL;
    size_t count = 0;
    if (runs_active_ids(n->runs, &ids, &count) != 0 || count == 0) {
        free(ids);
        return;
    }
    struct store *s = all ? NULL : readers_take(n->readers);
    for (size_t i = 0; i < count; i++) {
        struct nodes_row row = { 0, "" };
        if (all) {
            runs_cancel(n->runs, ids[i], "airlockd lost its lease on the database");
            continue;
        }
        /* a run not yet recorded (NOT_FOUND) or a store that fails now is looked at next tick */
        if (s && s->ops->run_get(s, ids[i], nodes_row_fn, &row) == STORE_OK && row.cancelled) {
            runs_cancel(n->runs, ids[i], row.why);
        }
    }
    if (s) {
        readers_give(n->readers, s);
    }
    free(ids);
}

struct nodes_expired {
    size_t n;
    char ids[16][NODES_ID_LEN + 1];
};

static int nodes_expired_fn(void *userdata, const char *id)
{
    struct nodes_expired *e = userdata;
    if (e->n == sizeof e->ids / sizeof e->ids[0]) {
        return 1; /* the rest next time */
    }
    snprintf(e->ids[e->n++], sizeof e->ids[0], "%s", id);
    return 0;
}

/* A look's work on the writer: the lease, then the takeovers, or the claims. */
struct nodes_look {
    struct nodes *n;
    int renewed;
    int requeued;
    int claimed;
};

static enum store_rc nodes_beat_fn(struct writer_tx *tx, void *arg)
{
    struct nodes_look *look = arg;
    struct nodes *n = look->n;
    struct store *s = writer_store(tx);
    struct nodes_expired e;
    char reason[128];
    memset(&e, 0, sizeof e);
    look->renewed = s->ops->node_beat(s, n->id, n->lease_ms) == STORE_OK;
    if (!look->renewed || s->ops->node_expired(s, nodes_expired_fn, &e) != STORE_OK) {
        return STORE_OK; /* the renewal is its own savepoint: kept or not, the job goes on */
    }
    for (size_t i = 0; i < e.n; i++) {
        if (strcmp(e.ids[i], n->id) == 0) {
            continue;
        }
        snprintf(reason, sizeof reason,
                 "the node executing the run stopped renewing its lease (%s)", e.ids[i]);
        int retried = 0;
        int taken = nodes_recover(s, e.ids[i], reason, &retried, NULL);
        if (taken < 0) {
            fprintf(stderr, "{\"log\":\"nodes\",\"error\":\"taking over %s: %s\"}\n", e.ids[i],
                    s->ops->errmsg(s));
            continue;
        }
        if (taken > 0) {
            fprintf(stderr,
                    "{\"log\":\"nodes\",\"node\":\"%s\",\"taken_over\":%d,\"retried\":%d,"
                    "\"from\":\"%s\"}\n",
                    n->id, taken, retried, e.ids[i]);
            look->requeued += retried;
        }
        /* none of its runs is left running: it is gone (a restart beats again) */
        if (s->ops->node_remove(s, e.ids[i]) == STORE_ERROR) {
            fprintf(stderr, "{\"log\":\"nodes\",\"error\":\"%s\"}\n", s->ops->errmsg(s));
        }
    }
    return STORE_OK;
}

/* Renews this node's lease, then takes over the runs of nodes whose lease has run out. 0 when
 * the lease was renewed. */
static int nodes_beat(struct nodes *n)
{
    struct nodes_look look = { n, 0, 0, 0 };
    int committed = writer_call(n->writer, nodes_beat_fn, &look) == STORE_OK;
    if (committed && look.requeued > 0) {
        runs_kick(n->runs); /* back in the queue: this node looks at once, as any other may */
    }
    return committed && look.renewed ? 0 : -1;
}

static enum store_rc nodes_claim_fn(struct writer_tx *tx, void *arg)
{
    struct nodes_look *look = arg;
    struct nodes *n = look->n;
    for (; look->claimed < NODES_CLAIMS_MAX && !runs_busy(n->runs); look->claimed++) {
        int claimed = 0;
        enum store_rc rc = api_run_claim(tx, n->secret_keys, n->runs, &claimed, NULL);
        if (rc != STORE_OK && rc != STORE_CONFLICT) {
            fprintf(stderr, "{\"log\":\"nodes\",\"error\":\"claiming a queued run: %s\"}\n",
                    writer_store(tx)->ops->errmsg(writer_store(tx)));
            break;
        }
        if (!claimed) {
            break;
        }
    }
    return STORE_OK;
}

/* Claims queued runs for this node (api_run_claim) until the queue is empty or this look's
 * share is taken: 1 for the latter (there may be more). */
static int nodes_claim(struct nodes *n)
{
    struct nodes_look look = { n, 0, 0, 0 };
    (void)writer_call(n->writer, nodes_claim_fn, &look);
    return look.claimed == NODES_CLAIMS_MAX;
}

/* Sets what the nodes thread should look at and wakes it. */
static void nodes_want(struct nodes *n, int claim, int watch)
{
    pthread_mutex_lock(&n->lock);
    n->want_claim |= claim;
    n->want_watch |= watch;
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
}

static void nodes_kick(void *userdata)
{
    nodes_want(userdata, 1, 0);
}

static int nodes_stopping(struct nodes *n)
{
    pthread_mutex_lock(&n->lock);
    int stop = n->stop;
    pthread_mutex_unlock(&n->lock);
    return stop;
}

/* One JSON line of the listener's state (`what`), with the store's message when there is one. */
static void nodes_log_listener(struct nodes *n, const char *what, const char *error)
{
    struct buf b;
    buf_init(&b, 4096);
    buf_printf(&b, "{\"log\":\"nodes\",\"node\":\"%s\",\"listener\":\"%s\"", n->id, what);
    if (error) {
        api_member(&b, ",\"error\":", error);
    }
    buf_append_str(&b, "}\n");
    if (b.data) {
        fputs(b.data, stderr);
        fflush(stderr);
    }
    buf_done(&b);
}

static void nodes_notified(void *userdata, const char *channel, const char *payload)
{
    (void)payload; /* the run: the look finds it (and any other) */
    int queue = strcmp(channel, STORE_CHANNEL_QUEUE) == 0;
    nodes_want(userdata, queue, !queue);
}

/* The listener's thread: keeps it connected, backing off after each failed connect, and
 * hands its notifications on. A reconnect asks for a full look: what was notified while it
 * was away is lost. */
static void *nodes_listen_thread(void *arg)
{
    struct nodes *n = arg;
    struct store_listener *l = n->listener;
    int64_t backoff = NODES_BACKOFF_MIN_MS;
    int connected = 0;
    int lost = 0; /* the loss is logged; the next connect says so */
    pthread_setname_np(pthread_self(), "airlockd-listen");
    while (!nodes_stopping(n)) {
        if (!connected) {
            if (l->ops->connect(l) == STORE_OK) {
                connected = 1;
                backoff = NODES_BACKOFF_MIN_MS;
                if (lost) {
                    nodes_log_listener(n, "listening again", NULL);
                }
                lost = 0;
                nodes_want(n, 1, 1);
                continue;
            }
            if (nodes_stopping(n)) {
                break;
            }
            if (!lost) {
                nodes_log_listener(n, "lost", l->ops->errmsg(l));
                lost = 1;
            }
            l->ops->wait(l, backoff, NULL, NULL); /* not connected: sleeps until woken */
            backoff = backoff * 2 > NODES_BACKOFF_MAX_MS ? NODES_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        if (l->ops->wait(l, NODES_LISTEN_WAIT_MS, nodes_notified, n) != STORE_OK) {
            connected = 0;
            lost = 1;
            nodes_log_listener(n, "lost", l->ops->errmsg(l));
        }
    }
    return NULL;
}

/* CLOCK_MONOTONIC ms into the absolute time the thread's condition waits on. */
static struct timespec nodes_abs(int64_t at_ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(at_ms / 1000);
    ts.tv_nsec = (long)(at_ms % 1000) * 1000000L;
    return ts;
}

static void *nodes_thread(void *arg)
{
    struct nodes *n = arg;
    int64_t beat_every = n->lease_ms / 3;
    int64_t now = nodes_now_ms();
    int64_t next_beat = now + beat_every;
    int64_t next_poll = now + n->poll_ms;
    int64_t renewed = now;
    int fenced = 0;
    pthread_setname_np(pthread_self(), "airlockd-nodes");
    pthread_mutex_lock(&n->lock);
    while (!n->stop) {
        /* the earliest of the next look, the next beat and (until fenced) the lease's end */
        int64_t until = next_poll < next_beat ? next_poll : next_beat;
        if (!fenced && renewed + n->lease_ms < until) {
            until = renewed + n->lease_ms;
        }
        struct timespec at = nodes_abs(until);
        int rc = 0;
        while (!n->stop && !n->want_claim && !n->want_watch && rc != ETIMEDOUT) {
            rc = pthread_cond_timedwait(&n->cond, &n->lock, &at);
        }
        if (n->stop) {
            break;
        }
        int claim = n->want_claim;
        int watch = n->want_watch;
        n->want_claim = 0;
        n->want_watch = 0;
        pthread_mutex_unlock(&n->lock);
        now = nodes_now_ms();
        if (now >= next_poll) {
            claim = watch = 1;
            next_poll = now + n->poll_ms;
        }
        if (claim && nodes_claim(n)) {
            nodes_want(n, 1, 0); /* this look's share was taken: more may wait, look again */
        }
        if (now >= next_beat) {
            next_beat = now + beat_every;
            if (nodes_beat(n) == 0) {
                renewed = nodes_now_ms();
                fenced = 0;
            }
        }
        now = nodes_now_ms();
        int lost = now - renewed >= n->lease_ms;
        if (lost && !fenced) {
            fprintf(stderr, "{\"log\":\"nodes\",\"error\":\"lease lost: cancelling runs\"}\n");
        }
        if (watch || lost) {
            nodes_watch(n, lost);
        }
        fenced = lost;
        pthread_mutex_lock(&n->lock);
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

static const char *const nodes_channels[] = { STORE_CHANNEL_QUEUE, STORE_CHANNEL_CANCEL, NULL };

/* The first beat, and the listener made from the writer's connection. */
static enum store_rc nodes_first_fn(struct writer_tx *tx, void *arg)
{
    struct nodes *n = arg;
    struct store *s = writer_store(tx);
    enum store_rc rc = s->ops->node_beat(s, n->id, n->lease_ms);
    if (rc == STORE_OK && s->ops->listener_new) {
        rc = s->ops->listener_new(s, "airlockd-listen", nodes_channels, &n->listener);
    }
    if (rc != STORE_OK) {
        snprintf(n->err, sizeof n->err, "cannot %s: %s",
                 s->ops->listener_new && n->listener == NULL ? "start" : "renew the node's lease",
                 s->ops->errmsg(s));
    }
    return rc;
}

/* Ends the nodes thread's loop (and the listener's at its next look). */
static void nodes_halt(struct nodes *n)
{
    pthread_mutex_lock(&n->lock);
    n->stop = 1;
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
}

int nodes_start(struct writer *writer, struct readers *readers, struct runs *runs,
                struct secretbox_keys *secret_keys, const char *id, int64_t lease_ms,
                int64_t poll_ms, struct nodes **ret, struct al_error *reterr)
{
    pthread_condattr_t attr;
    struct nodes *n = calloc(1, sizeof *n);
    if (!n) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    n->writer = writer;
    n->readers = readers;
    n->runs = runs;
    n->lease_ms = lease_ms;
    n->poll_ms = poll_ms;
    n->secret_keys = secret_keys;
    snprintf(n->id, sizeof n->id, "%s", id);
    pthread_mutex_init(&n->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (writer_call(writer, nodes_first_fn, n) != STORE_OK) {
        error_set(reterr, AL_INTERNAL_ERROR, "%s",
                  n->err[0] ? n->err : "cannot renew the node's lease");
        goto fail;
    }
    if (pthread_create(&n->thread, NULL, nodes_thread, n) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the nodes thread");
        goto fail;
    }
    if (n->listener && pthread_create(&n->listen_thread, NULL, nodes_listen_thread, n) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the listener's thread");
        nodes_halt(n);
        pthread_join(n->thread, NULL);
        goto fail;
    }
    runs_set_kick(runs, nodes_kick, n);
    *ret = n;
    return 0;
fail:
    if (n->listener) {
        n->listener->ops->free(n->listener);
    }
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->lock);
    free(n);
    return -1;
}

void nodes_stop(struct nodes *n)
{
    if (!n) {
        return;
    }
    nodes_halt(n);
    if (n->listener) {
        n->listener->ops->wake(n->listener); /* ends its wait, or its connect */
        pthread_join(n->listen_thread, NULL);
        n->listener->ops->free(n->listener);
    }
    pthread_join(n->thread, NULL);
    runs_set_kick(n->runs, NULL, NULL);
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->lock);
    free(n);
}
