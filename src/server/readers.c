/*
 * readers.c - the pool behind readers.h: a stack of idle connections under one mutex. New ones
 * are opened from `proto`, a reader of the pool's own that is never lent (the writer's
 * connection is the writer thread's alone), under the lock. A reader that failed is kept
 * (PostgreSQL's reconnects at its next call).
 */
#include "readers.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"

struct readers {
    struct store *proto; /* opens the others; never lent */
    pthread_mutex_t lock;
    pthread_cond_t given;
    size_t max;
    size_t open;
    size_t idle;
    struct store **stack; /* the idle ones, max slots */
};

int readers_new(struct store *store, size_t max, struct readers **ret, struct al_error *reterr)
{
    struct readers *r = calloc(1, sizeof *r);
    if (!r || max == 0 || !(r->stack = calloc(max, sizeof *r->stack))) {
        error_set(reterr, max == 0 ? AL_CONFIG_ERROR : AL_INTERNAL_ERROR, "out of memory");
        free(r);
        return -1;
    }
    if (store->ops->open_reader(store, &r->proto) != STORE_OK) {
        error_set(reterr, AL_INTERNAL_ERROR, "cannot open a reader: %s", store->ops->errmsg(store));
        free(r->stack);
        free(r);
        return -1;
    }
    r->max = max;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->given, NULL);
    *ret = r;
    return 0;
}

void readers_free(struct readers *r)
{
    if (!r) {
        return;
    }
    for (size_t i = 0; i < r->idle; i++) {
        r->stack[i]->ops->close(r->stack[i]);
    }
    r->proto->ops->close(r->proto);
    pthread_cond_destroy(&r->given);
    pthread_mutex_destroy(&r->lock);
    free(r->stack);
    free(r);
}

struct store *readers_take(struct readers *r)
{
    struct store *s = NULL;
    pthread_mutex_lock(&r->lock);
    while (r->idle == 0 && r->open == r->max) {
        pthread_cond_wait(&r->given, &r->lock);
    }
    if (r->idle > 0) {
        s = r->stack[--r->idle];
    } else if (r->proto->ops->open_reader(r->proto, &s) == STORE_OK) {
        r->open++;
    } else {
        s = NULL;
        fprintf(stderr, "{\"log\":\"readers\",\"error\":\"cannot open a reader\"}\n");
    }
    pthread_mutex_unlock(&r->lock);
    return s;
}

void readers_give(struct readers *r, struct store *s)
{
    if (!s) {
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->stack[r->idle++] = s;
    pthread_cond_signal(&r->given);
    pthread_mutex_unlock(&r->lock);
}
