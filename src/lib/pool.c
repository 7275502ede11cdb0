/*
 * pool.c - workers started ahead of time, so a run does not wait for exec and the dynamic
 * loader (about 3 ms on these machines, more than the run itself).
 *
 * A runner with warm workers owns one background thread that keeps that many spare workers
 * started - each has built and hardened its guest context and waits for a request; each serves
 * exactly one run, like any worker. pool_take hands one out and wakes the thread to start its
 * replacement, off the run's critical path. When none is ready, one taker waits for the
 * worker being started (two starts at once would only compete for the CPUs); others start
 * their own. A spare found dead (someone killed
 * it) is reaped and skipped. pool_free stops the thread and kills the spares.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "internal.h"

struct pool {
    char *path;
    int no_jail;
    unsigned warm;
    pthread_mutex_t mu;
    pthread_cond_t cond;        /* wakes the pool thread */
    pthread_cond_t ready;       /* a spare was added, or a start failed */
    struct worker_proc *spares; /* warm entries */
    unsigned nspares;
    int starting; /* the pool thread is starting a worker now */
    int waiting;  /* takers waiting for that worker */
    int stop;
    int thread_started;
    pthread_t thread;
};

static void *pool_main(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (p->nspares >= p->warm) {
            pthread_cond_wait(&p->cond, &p->mu);
            continue;
        }
        p->starting = 1;
        pthread_mutex_unlock(&p->mu);
        struct worker_proc w;
        enum al_code rc = supervisor_spawn(p->path, p->no_jail, &w, NULL);
        pthread_mutex_lock(&p->mu);
        p->starting = 0;
        pthread_cond_broadcast(&p->ready);
        if (rc != AL_OK) {
            /* Cannot start workers now (fd or process limits): runs start their own and
             * report the error; try again when the next run wakes us. */
            pthread_cond_wait(&p->cond, &p->mu);
            continue;
        }
        if (p->stop || p->nspares >= p->warm) {
            supervisor_reap(&w, 1, NULL);
            continue;
        }
        p->spares[p->nspares++] = w;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

enum al_code pool_new(const char *path, int no_jail, unsigned warm, struct pool **ret_pool,
                      struct al_error *reterr)
{
    struct pool *p = calloc(1, sizeof *p);
    if (!p) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    p->path = strdup(path);
    p->warm = warm;
    p->no_jail = no_jail;
    p->spares = calloc(warm ? warm : 1, sizeof *p->spares);
    if (!p->path || !p->spares) {
        free(p->path);
        free(p->spares);
        free(p);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    pthread_cond_init(&p->ready, NULL);
    if (warm > 0) {
        int err = pthread_create(&p->thread, NULL, pool_main, p);
        if (err != 0) {
            pool_free(p);
            return error_set_errno(reterr, AL_INTERNAL_ERROR, err,
                                   "cannot start the warm-worker thread");
        }
        p->thread_started = 1;
    }
    *ret_pool = p;
    return AL_OK;
}

void pool_free(struct pool *p)
{
    if (!p) {
        return;
    }
    if (p->thread_started) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    for (unsigned i = 0; i < p->nspares; i++) {
        supervisor_reap(&p->spares[i], 1, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
    pthread_cond_destroy(&p->ready);
    free(p->spares);
    free(p->path);
    free(p);
}

enum al_code pool_take(struct pool *p, struct worker_proc *ret_proc, struct al_error *reterr)
{
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->nspares == 0 && p->starting && p->waiting == 0) {
            /* The worker being started is as near as one we would start now, and starting
             * both would only compete for the same CPUs: wait for it (one taker only; others
             * start their own). */
            p->waiting++;
            pthread_cond_wait(&p->ready, &p->mu);
            p->waiting--;
            continue;
        }
        if (p->nspares == 0) {
            break;
        }
        struct worker_proc w = p->spares[--p->nspares];
        /* A fresh worker sends nothing before its request: a readable socket means it died
         * (EOF). A dead one is reaped and skipped. */
        struct pollfd pfd = { .fd = w.fd, .events = POLLIN };
        int status;
        int dead = poll(&pfd, 1, 0) > 0;
        if (waitpid(w.pid, &status, WNOHANG) == w.pid) {
            w.pid = -1; /* reaped: its pid must not be signalled any more */
            dead = 1;
        }
        if (dead) {
            supervisor_reap(&w, 1, NULL);
            continue;
        }
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->mu);
        *ret_proc = w;
        return AL_OK;
    }
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    return supervisor_spawn(p->path, p->no_jail, ret_proc, reterr);
}
