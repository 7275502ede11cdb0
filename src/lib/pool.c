/*
 * pool.c - workers started ahead of time, so a run does not wait for exec and the dynamic
 * loader (about 3 ms on these machines, more than the run itself).
 *
 * A runner with warm workers starts one zygote (a worker in --zygote mode that prepares a
 * context once and forks workers that inherit it; see src/worker/main.c) and owns one
 * background thread that keeps that many spare workers ready - forked from the zygote, or
 * spawned when the zygote is unavailable. Each spare has its hardened context and its jail and
 * waits for a request; each serves exactly one run, like any worker. pool_take hands one out;
 * finished workers come back through pool_release for the thread to kill and reap, and only
 * then does the thread start a replacement: forking and preparing a worker while a run is in
 * progress would compete with that run for the CPUs (and, on paravirtualized machines, for the
 * hypervisor's page-table work), so both are kept off the run's critical path. When none is
 * ready, one taker waits for the worker being started (two starts at once would only compete
 * for the CPUs); others fork their own from the zygote. A spare found dead (someone killed it) is
 * reaped and skipped. pool_free stops the thread and kills the spares and the zygote.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "internal.h"
#include "thread.h"

struct pool {
    char *path;
    int no_jail;
    int short_slice; /* the thread takes thread_take_short_slice (al_config_set_short_slice) */
    struct worker_proc zygote; /* pid -1 when there is none (it failed: workers are spawned) */
    unsigned warm;
    pthread_mutex_t mu;
    pthread_mutex_t zmu;        /* the zygote's control socket */
    pthread_cond_t cond;        /* wakes the pool thread */
    pthread_cond_t ready;       /* a spare was added, or a start failed */
    struct worker_proc *spares; /* warm entries */
    unsigned nspares;
    int starting;             /* the pool thread is starting a worker now */
    struct worker_proc *dead; /* finished workers for the thread to kill and reap */
    unsigned ndead, cap_dead;
    int waiting; /* takers waiting for that worker */
    int stop;
    int thread_started;
    pthread_t thread;
};

/* Asks the zygote for a worker: a socketpair end goes over SCM_RIGHTS, the child's pid comes
 * back. The child is our child (CLONE_PARENT), so it is reaped and signalled like any worker. */
static enum al_code zygote_fork(struct pool *p, struct worker_proc *ret_proc)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return AL_INTERNAL_ERROR;
    }
    char byte = 'w';
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct iovec iov = { &byte, 1 };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl
    };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
    int32_t pid = 0;
    ssize_t n = sendmsg(p->zygote.fd, &msg, MSG_NOSIGNAL);
    close(sv[1]);
    if (n == 1) {
        /* it answers as soon as it has forked; one that does not within a second is broken */
        struct pollfd pfd = { .fd = p->zygote.fd, .events = POLLIN };
        n = poll(&pfd, 1, 1000) == 1 ? recv(p->zygote.fd, &pid, sizeof pid, MSG_WAITALL) : -1;
    }
    /* Never trust the number: it must be a child of ours (CLONE_PARENT), or it could name any
     * process on the machine that we would later signal. */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (n != (ssize_t)sizeof pid || pid <= 0 ||
        waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        close(sv[0]);
        supervisor_reap(&p->zygote, 1, NULL); /* broken: start workers directly from now on */
        return AL_INTERNAL_ERROR;
    }
    int fl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
    ret_proc->pid = pid;
    ret_proc->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    ret_proc->fd = sv[0];
    return AL_OK;
}

/* A worker: forked from the zygote (fast: no exec, the prepared context is inherited), or
 * spawned when there is no zygote. Any thread: the zygote's socket is used by one at a time. */
static enum al_code start_worker(struct pool *p, struct worker_proc *ret_proc,
                                 struct al_error *reterr)
{
    pthread_mutex_lock(&p->zmu);
    enum al_code rc = p->zygote.pid > 0 ? zygote_fork(p, ret_proc) : AL_INTERNAL_ERROR;
    pthread_mutex_unlock(&p->zmu);
    if (rc == AL_OK) {
        return AL_OK;
    }
    return supervisor_spawn(p->path, p->no_jail, 0, ret_proc, reterr);
}

static void *pool_main(void *arg)
{
    struct pool *p = arg;
    pthread_setname_np(pthread_self(), "airlock-pool"); /* named in top -H and perf */
    if (p->short_slice) {
        thread_take_short_slice(); /* a finished run's worker is replaced from here: thread.h */
    }
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        if (p->ndead > 0) {
            struct worker_proc w = p->dead[--p->ndead];
            pthread_mutex_unlock(&p->mu);
            supervisor_reap(&w, 1, NULL);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->nspares >= p->warm) {
            pthread_cond_wait(&p->cond, &p->mu);
            continue;
        }
        p->starting = 1;
        pthread_mutex_unlock(&p->mu);
        struct worker_proc w;
        enum al_code rc = start_worker(p, &w, NULL);
        pthread_mutex_lock(&p->mu);
        p->starting = 0;
        pthread_cond_broadcast(&p->ready);
        if (rc != AL_OK) {
            /* Cannot start workers now (fd or process limits): runs start their own and
             * report the error; try again when the next run ends or fails to start. Finished
             * workers handed over meanwhile are reaped first. */
            if (p->ndead == 0 && !p->stop) {
                pthread_cond_wait(&p->cond, &p->mu);
            }
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

enum al_code pool_new(const char *path, int no_jail, int short_slice, unsigned warm,
                      struct pool **ret_pool, struct al_error *reterr)
{
    struct pool *p = calloc(1, sizeof *p);
    if (!p) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    p->path = strdup(path);
    p->warm = warm;
    p->no_jail = no_jail;
    p->short_slice = short_slice;
    p->spares = calloc(warm ? warm : 1, sizeof *p->spares);
    if (!p->path || !p->spares) {
        free(p->path);
        free(p->spares);
        free(p);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    p->zygote.pid = -1;
    p->zygote.pidfd = -1;
    p->zygote.fd = -1;
    if (warm > 0 && supervisor_spawn(p->path, no_jail, 1, &p->zygote, NULL) != AL_OK) {
        p->zygote.pid = -1; /* workers are then spawned one by one */
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->zmu, NULL);
    pthread_cond_init(&p->cond, NULL);
    pthread_cond_init(&p->ready, NULL);
    if (warm > 0) {
        /* The thread takes no signals: an application's handlers run on its own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int err = pthread_create(&p->thread, NULL, pool_main, p);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
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
    for (unsigned i = 0; i < p->ndead; i++) {
        supervisor_reap(&p->dead[i], 1, NULL);
    }
    free(p->dead);
    if (p->zygote.pid > 0) {
        supervisor_reap(&p->zygote, 1, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->zmu);
    pthread_cond_destroy(&p->cond);
    pthread_cond_destroy(&p->ready);
    free(p->spares);
    free(p->path);
    free(p);
}

unsigned pool_spares(struct pool *p)
{
    pthread_mutex_lock(&p->mu);
    unsigned n = p->nspares;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void pool_refill(struct pool *p)
{
    if (p->thread_started) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->mu);
    }
}

void pool_release(struct pool *p, struct worker_proc *proc)
{
    if (p->thread_started) {
        pthread_mutex_lock(&p->mu);
        if (p->ndead == p->cap_dead) {
            unsigned cap = p->cap_dead ? p->cap_dead * 2 : 8;
            struct worker_proc *d = realloc(p->dead, cap * sizeof *d);
            if (d) {
                p->dead = d;
                p->cap_dead = cap;
            }
        }
        if (p->ndead < p->cap_dead) {
            p->dead[p->ndead++] = *proc;
            pthread_cond_signal(&p->cond);
            pthread_mutex_unlock(&p->mu);
            proc->pid = -1;
            proc->pidfd = -1;
            proc->fd = -1;
            return;
        }
        pthread_mutex_unlock(&p->mu);
    }
    supervisor_reap(proc, 1, NULL);
    pool_refill(p);
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
        /* Its pidfd turns readable when it has exited (killed by someone, or crashed while
         * preparing): such a spare is reaped and skipped. (Its socket is readable anyway: a
         * worker sends READY as soon as it is prepared.) */
        struct pollfd pfd = { .fd = w.pidfd, .events = POLLIN };
        int status;
        int dead = w.pidfd >= 0 && poll(&pfd, 1, 0) > 0;
        if (waitpid(w.pid, &status, WNOHANG) == w.pid) {
            w.pid = -1; /* reaped: its pid must not be signalled any more */
            dead = 1;
        }
        if (dead) {
            supervisor_reap(&w, 1, NULL);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        *ret_proc = w;
        return AL_OK;
    }
    pthread_mutex_unlock(&p->mu);
    /* No spare: a fork from the zygote is still far cheaper than exec'ing a worker. */
    return start_worker(p, ret_proc, reterr);
}
