/*
 * writer.c - the writer's thread (see writer.h). It sleeps until jobs are queued, takes all of
 * them (up to WRITER_BATCH_MAX) as one batch, runs each in a savepoint of the batch's
 * transaction and commits once; then, in queue order, each job's hooks and its done. Jobs
 * queued meanwhile wait for the next batch: the longer a commit takes, the more the next one
 * carries, and one fsync serves them all. A batch of one job needs no savepoint: its
 * transaction is the job's.
 */
#include "writer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "json.h"

#define WRITER_BATCH_MAX 256

struct writer_tx {
    struct store *store;
    struct writer_job *job; /* the job running now */
};

struct writer {
    struct store *store;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct writer_job *head; /* queued for the next batch */
    struct writer_job *tail;
    int stop;
    int inline_mode; /* writer_new_inline: batches run on the submitting thread */
    int running;     /* ... and one is running now (a done's submit waits for the loop) */
    pthread_t thread;
    writer_checkpoint_fn *checkpoint_fn;
    void *checkpoint_arg;
};

void writer_on_checkpoint(struct writer *w, writer_checkpoint_fn *fn, void *arg)
{
    w->checkpoint_fn = fn;
    w->checkpoint_arg = arg;
}

static void writer_drain(struct writer *w);

struct store *writer_store(struct writer_tx *tx)
{
    return tx->store;
}

void writer_after(struct writer_tx *tx, struct writer_hook *hook, writer_done_fn *fn, void *arg)
{
    hook->fn = fn;
    hook->arg = arg;
    hook->next = tx->job->hooks;
    tx->job->hooks = hook;
}

void writer_submit(struct writer *w, struct writer_job *job)
{
    job->rc = STORE_OK;
    job->hooks = NULL;
    job->next = NULL;
    pthread_mutex_lock(&w->lock);
    if (w->tail) {
        w->tail->next = job;
    } else {
        w->head = job;
    }
    w->tail = job;
    pthread_cond_signal(&w->cond);
    if (w->inline_mode && !w->running) {
        w->running = 1;
        writer_drain(w);
        w->running = 0;
    }
    pthread_mutex_unlock(&w->lock);
}

static void writer_log(struct store *s, const char *what)
{
    struct buf b;
    const char *msg = s->ops->errmsg(s);
    buf_init(&b, 4096);
    json_write_string(&b, msg, strlen(msg));
    fprintf(stderr, "{\"log\":\"writer\",\"error\":\"%s\",\"store\":%s}\n", what,
            b.data ? b.data : "\"\"");
    buf_done(&b);
}

/* One batch: jobs (linked) in one transaction. */
static void writer_batch(struct writer *w, struct writer_job *jobs)
{
    struct store *s = w->store;
    struct writer_tx tx = { s, NULL };
    int own = jobs->next != NULL; /* a savepoint per job */
    enum store_rc rc = s->ops->tx_begin(s);
    if (rc != STORE_OK) {
        writer_log(s, "a batch could not begin; its writes are refused");
    }
    for (struct writer_job *job = jobs; job && rc == STORE_OK; job = job->next) {
        tx.job = job;
        job->rc = own ? s->ops->tx_begin(s) : STORE_OK;
        if (job->rc == STORE_OK) {
            job->rc = job->fn(&tx, job->arg);
        }
        if (own && job->rc == STORE_OK) {
            job->rc = s->ops->tx_commit(s);
        }
        if (own && job->rc != STORE_OK) {
            s->ops->tx_rollback(s);
        }
    }
    if (rc == STORE_OK && !own && jobs->rc != STORE_OK) {
        s->ops->tx_rollback(s); /* the job's transaction is the batch's */
    } else if (rc == STORE_OK && (rc = s->ops->tx_commit(s)) != STORE_OK) {
        if (s->ops->commit_failure_unknown) {
            writer_log(s, "the database could not be synced to disk (a commit failed); stopping");
            abort();
        }
        writer_log(s, "a batch could not be committed; its writes are refused");
        s->ops->tx_rollback(s);
    }
    struct store_checkpoint cp;
    if (rc == STORE_OK && s->ops->audit_take_appended &&
        s->ops->audit_take_appended(s, &cp) == STORE_OK && w->checkpoint_fn) {
        w->checkpoint_fn(w->checkpoint_arg, s, &cp); /* durable now: kept outside too */
    }
    for (struct writer_job *job = jobs; job;) {
        struct writer_job *next = job->next; /* done may free or resubmit the job */
        enum store_rc final = rc != STORE_OK ? rc : job->rc;
        for (struct writer_hook *h = job->hooks; h;) {
            struct writer_hook *hn = h->next;
            h->fn(h->arg, final);
            h = hn;
        }
        if (job->done) {
            job->done(job->arg, final);
        }
        job = next;
    }
}

/* Runs batches until the queue is empty; the lock held, released while a batch runs. */
static void writer_drain(struct writer *w)
{
    while (w->head) {
        struct writer_job *jobs = w->head;
        struct writer_job *last = jobs;
        for (size_t n = 1; last->next && n < WRITER_BATCH_MAX; n++) {
            last = last->next;
        }
        w->head = last->next;
        if (!w->head) {
            w->tail = NULL;
        }
        last->next = NULL;
        pthread_mutex_unlock(&w->lock);
        writer_batch(w, jobs);
        pthread_mutex_lock(&w->lock);
    }
}

static void *writer_thread(void *arg)
{
    struct writer *w = arg;
    pthread_setname_np(pthread_self(), "airlockd-writer");
    pthread_mutex_lock(&w->lock);
    while (w->head || !w->stop) {
        writer_drain(w);
        while (!w->head && !w->stop) {
            pthread_cond_wait(&w->cond, &w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int writer_new_inline(struct store *store, struct writer **ret)
{
    struct writer *w = calloc(1, sizeof *w);
    if (!w) {
        return -1;
    }
    w->store = store;
    w->inline_mode = 1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    *ret = w;
    return 0;
}

int writer_new(struct store *store, struct writer **ret, struct al_error *reterr)
{
    struct writer *w = NULL;
    if (writer_new_inline(store, &w) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    if (pthread_create(&w->thread, NULL, writer_thread, w) != 0) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the writer's thread");
        writer_free(w); /* still inline: no thread to join */
        return -1;
    }
    w->inline_mode = 0; /* read by no one before writer_new returns */
    *ret = w;
    return 0;
}

void writer_free(struct writer *w)
{
    if (!w) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (!w->inline_mode) {
        pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* writer_call's job: its caller waits on `cond` until done has set `finished`. */
struct writer_wait {
    struct writer_job job;
    writer_fn *fn;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished;
    enum store_rc rc;
};

static enum store_rc writer_wait_fn(struct writer_tx *tx, void *arg)
{
    struct writer_wait *ww = arg;
    return ww->fn(tx, ww->arg);
}

static void writer_wait_done(void *arg, enum store_rc rc)
{
    struct writer_wait *ww = arg;
    pthread_mutex_lock(&ww->lock);
    ww->rc = rc;
    ww->finished = 1;
    pthread_cond_signal(&ww->cond);
    pthread_mutex_unlock(&ww->lock);
}

enum store_rc writer_call(struct writer *w, writer_fn *fn, void *arg)
{
    struct writer_wait ww;
    memset(&ww, 0, sizeof ww);
    ww.fn = fn;
    ww.arg = arg;
    ww.job.fn = writer_wait_fn;
    ww.job.done = writer_wait_done;
    ww.job.arg = &ww;
    pthread_mutex_init(&ww.lock, NULL);
    pthread_cond_init(&ww.cond, NULL);
    writer_submit(w, &ww.job);
    pthread_mutex_lock(&ww.lock);
    while (!ww.finished) {
        pthread_cond_wait(&ww.cond, &ww.lock);
    }
    pthread_mutex_unlock(&ww.lock);
    pthread_cond_destroy(&ww.cond);
    pthread_mutex_destroy(&ww.lock);
    return ww.rc;
}
