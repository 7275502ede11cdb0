/*
 * nodes.c - several airlockd on one database (see nodes.h).
 *
 * Every node serves every request, so a cancel or a revocation may be decided on a node other
 * than the one executing the run. The deciding node commits the run's status `cancelled` (with
 * its reason in the outcome) in the same transaction as its audit record, as on one node; the
 * watcher here then finds, for each run executing on this node, whether the store says it was
 * cancelled, and cancels it locally with the stored reason, so its end is recorded by this
 * node's writer exactly as a local cancel's would be. The watcher reads one row per executing
 * run per tick, under the store lock, and nothing else: with no run executing it costs nothing.
 */
#include "nodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"

#define NODES_WHY_MAX 512

struct nodes {
    struct store *store;
    pthread_mutex_t *store_lock;
    struct runs *runs;
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t cond;  /* signalled by nodes_stop */
    int stop;
    pthread_t thread;
};

struct nodes_row {
    int cancelled;
    char why[NODES_WHY_MAX];
};

/* The run's stored status, and the message of its stored error (its cancel's reason). */
static int nodes_row_fn(void *userdata, const struct store_run *row)
{
    struct nodes_row *r = userdata;
    struct json_doc *doc = NULL;
    struct al_error err;
    r->cancelled = strcmp(row->status, "cancelled") == 0;
    snprintf(r->why, sizeof r->why, "cancelled on another node");
    if (r->cancelled && row->outcome &&
        json_parse(row->outcome, strlen(row->outcome), 16, &doc, &err) == AL_OK) {
        const struct json_node *e = json_get(json_root(doc), "error");
        const struct json_node *m = e ? json_get(e, "message") : NULL;
        if (m && m->type == JSON_STRING && m->str_len > 0) {
            snprintf(r->why, sizeof r->why, "%s", m->str);
        }
    }
    json_doc_free(doc);
    return 0;
}

static void nodes_watch_once(struct nodes *n)
{
    char(*ids)[RUNS_ID_LEN + 1] = NULL;
    size_t count = 0;
    if (runs_active_ids(n->runs, &ids, &count) != 0 || count == 0) {
        free(ids);
        return;
    }
    struct store *s = n->store;
    pthread_mutex_lock(n->store_lock);
    for (size_t i = 0; i < count; i++) {
        struct nodes_row row;
        memset(&row, 0, sizeof row);
        /* a run not yet recorded (NOT_FOUND) or a store that fails now is looked at next tick */
        if (s->ops->run_get(s, ids[i], nodes_row_fn, &row) == STORE_OK && row.cancelled) {
            runs_cancel(n->runs, ids[i], row.why);
        }
    }
    pthread_mutex_unlock(n->store_lock);
    free(ids);
}

static void *nodes_thread(void *arg)
{
    struct nodes *n = arg;
    pthread_setname_np(pthread_self(), "airlockd-nodes");
    pthread_mutex_lock(&n->lock);
    while (!n->stop) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += (long)NODES_WATCH_MS * 1000000L;
        while (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (!n->stop && rc != ETIMEDOUT) {
            rc = pthread_cond_timedwait(&n->cond, &n->lock, &at);
        }
        if (n->stop) {
            break;
        }
        pthread_mutex_unlock(&n->lock);
        nodes_watch_once(n);
        pthread_mutex_lock(&n->lock);
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

int nodes_start(struct store *store, pthread_mutex_t *store_lock, struct runs *runs,
                struct nodes **ret, char *err)
{
    struct nodes *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, 256, "out of memory");
        return -1;
    }
    n->store = store;
    n->store_lock = store_lock;
    n->runs = runs;
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->cond, NULL);
    if (pthread_create(&n->thread, NULL, nodes_thread, n) != 0) {
        snprintf(err, 256, "cannot start the node watcher thread");
        pthread_cond_destroy(&n->cond);
        pthread_mutex_destroy(&n->lock);
        free(n);
        return -1;
    }
    *ret = n;
    return 0;
}

void nodes_stop(struct nodes *n)
{
    if (!n) {
        return;
    }
    pthread_mutex_lock(&n->lock);
    n->stop = 1;
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
    pthread_join(n->thread, NULL);
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->lock);
    free(n);
}
