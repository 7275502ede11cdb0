/*
 * loop.c - the runner's event thread: every run started with al_run_start is driven here,
 * through one epoll set, by the same steps al_run takes on its caller's thread (run.c). A run
 * waiting on a slow host function costs its worker process and two descriptors (the worker's
 * socket, the run's eventfd), never a thread; a server holds thousands of them this way.
 *
 * Each run's eventfd wakes the loop for three reasons: a host call was completed from another
 * thread, the run was cancelled, or an admission slot was handed to it. Deadlines (the run's
 * timeout and CPU limit, the admission queue's timeout) are the epoll timeout: the earliest of
 * them. Host functions, event callbacks and completion callbacks run on this thread, so
 * none of them may block; the loop never waits on anything but epoll (and, briefly, the
 * worker pool when a spare worker is just being started).
 *
 * A handle (struct al_run) has two owners: the caller until al_run_release, and the loop
 * until it has delivered the result. The run's link keeps its eventfd open for as long as the
 * handle lives, so al_run_cancel never writes to a descriptor that was closed or reused. A run
 * that finishes is put on a list freed after the batch of events it finished in, so a later
 * event of the same batch for it is recognised (run->over) without a search.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "run.h"
#include "thread.h"

enum run_phase {
    PHASE_INBOX,   /* handed to the loop, not yet seen by it */
    PHASE_WAITING, /* in the runner's admission queue */
    PHASE_RUNNING, /* on a worker */
};

/* Tags of epoll data: which descriptor of a run woke the loop. */
#define TAG_WAKE 1u
#define TAG_MASK 1u

struct al_run {
    struct run_state st;
    struct al_run_opts *opts; /* the copy the run reads */
    struct run_link *link;    /* the handle's reference: al_run_cancel writes its eventfd */
    struct loop *loop;
    al_run_done_fn *done;
    void *done_userdata;
    enum run_phase phase;
    struct adm_waiter *waiter;
    uint64_t queue_deadline_us; /* 0: wait as long as it takes */
    uint32_t sock_events;       /* registered for the worker's socket; 0: not registered */
    int wake_registered;
    int finished;            /* delivered: only freeing is left (loop thread only) */
    struct al_result *spare; /* a failed result kept for when even that cannot be allocated */
    struct al_run *next;     /* the loop's list, or its inbox */
    struct al_run *prev;
    char run_id[AL_RUN_ID_MAX + 1];
    /* the handle's side, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int over;
    int taken;
    struct al_result *result; /* kept for al_run_wait */
};

struct loop {
    struct al_runner *runner;
    pthread_t thread;
    int epfd;
    int wake_fd; /* the inbox and stopping */
    pthread_mutex_t mu;
    struct al_run *inbox;
    struct al_run **inbox_tail;
    int stopping;
    struct al_run *runs;     /* owned by the loop thread */
    struct al_run *finished; /* delivered this batch: the loop's reference goes after it */
};

static void run_unref(struct al_run *run)
{
    pthread_mutex_lock(&run->mu);
    int last = --run->refs == 0;
    pthread_mutex_unlock(&run->mu);
    if (!last) {
        return;
    }
    al_result_free(run->result);
    al_result_free(run->spare);
    host_link_unref(run->link);
    runner_waiter_free(run->waiter);
    al_run_opts_free(run->opts);
    pthread_mutex_destroy(&run->mu);
    pthread_cond_destroy(&run->cv);
    free(run);
}

static void drain(int fd)
{
    uint64_t n;
    ssize_t r = read(fd, &n, sizeof n);
    (void)r;
}

static void unlink_run(struct loop *lp, struct al_run *run)
{
    if (run->prev) {
        run->prev->next = run->next;
    } else {
        lp->runs = run->next;
    }
    if (run->next) {
        run->next->prev = run->prev;
    }
    run->next = run->prev = NULL;
}

/* A failed result for a run that ended without one (al_run's non-OK returns). */
static struct al_result *failed_result(const struct al_run *run, const struct al_error *err)
{
    struct al_result *res = calloc(1, sizeof *res);
    if (!res) {
        return NULL;
    }
    memcpy(res->run_id, run->run_id, sizeof res->run_id);
    run_fail_result(res, err->code, err->message[0] ? err->message : al_code_message(err->code));
    res->name = strdup("");
    res->stack = strdup("");
    if (!res->message || !res->name || !res->stack) {
        al_result_free(res);
        return NULL;
    }
    return res;
}

/* The run is over: its worker goes, its result is delivered, the loop lets go of it. */
static void finish(struct loop *lp, struct al_run *run)
{
    if (run->sock_events) {
        epoll_ctl(lp->epfd, EPOLL_CTL_DEL, run->st.proc.fd, NULL);
        run->sock_events = 0;
    }
    if (run->wake_registered) {
        epoll_ctl(lp->epfd, EPOLL_CTL_DEL, run->link->wake_fd, NULL);
        run->wake_registered = 0;
    }
    run_conclude(&run->st);
    struct al_result *res = NULL;
    struct al_error err = { 0 };
    if (run_deliver(&run->st, &res, &err) != AL_OK) {
        res = failed_result(run, &err);
        if (!res) {
            res = run->spare; /* out of memory: the result made when the run started */
            run->spare = NULL;
        }
    }
    unlink_run(lp, run);
    run->finished = 1;
    if (run->done) {
        run->done(run, res, run->done_userdata);
    } else {
        pthread_mutex_lock(&run->mu);
        run->result = res;
        run->over = 1;
        pthread_cond_broadcast(&run->cv);
        pthread_mutex_unlock(&run->mu);
    }
    if (run->done) {
        pthread_mutex_lock(&run->mu);
        run->over = 1;
        pthread_mutex_unlock(&run->mu);
    }
    run->next = lp->finished; /* the loop's reference goes once this batch is handled */
    lp->finished = run;
}

static void watch_socket(struct loop *lp, struct al_run *run)
{
    uint32_t want = EPOLLIN | (run_wants_write(&run->st) ? EPOLLOUT : 0u);
    if (want == run->sock_events) {
        return;
    }
    struct epoll_event ev = { .events = want, .data.ptr = run };
    int op = run->sock_events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(lp->epfd, op, run->st.proc.fd, &ev) != 0) {
        run_fail(&run->st, AL_INTERNAL_ERROR, "epoll_ctl: %s", strerror(errno));
        return;
    }
    run->sock_events = want;
}

/* Moves a run on as far as it goes now. */
static void advance(struct loop *lp, struct al_run *run)
{
    if (run->finished) {
        return; /* an event of this batch that came after the run's end */
    }
    struct run_state *st = &run->st;
    if (run->phase == PHASE_WAITING) {
        int cancelled = atomic_load(&st->link->cancelled);
        int expired = run->queue_deadline_us && clock_mono_us() >= run->queue_deadline_us;
        if (!cancelled && !expired && !runner_waiter_granted(lp->runner, run->waiter)) {
            return;
        }
        int granted = runner_admit_cancel(lp->runner, run->waiter);
        st->admitted = granted;
        run->phase = PHASE_RUNNING;
        if (cancelled) {
            run_fail_early(st, AL_ABORTED, "the run was cancelled while it waited for a slot");
            finish(lp, run);
            return;
        }
        if (!granted) {
            char msg[200];
            run_admission_message(lp->runner, -1, msg, sizeof msg);
            run_fail_early(st, AL_CONCURRENCY_LIMIT, msg);
            finish(lp, run);
            return;
        }
        int launched = run_launch(st);
        runner_opts_drop_journal(run->opts); /* the ledger has its own copy */
        if (launched != 0) {
            finish(lp, run);
            return;
        }
    }
    if (st->done || run_step(st, NULL)) {
        finish(lp, run);
        return;
    }
    watch_socket(lp, run);
    if (st->done) {
        finish(lp, run);
    }
}

/* A run from the inbox: admission, then its first step. */
static void take_in(struct loop *lp, struct al_run *run, int stopping)
{
    struct run_state *st = &run->st;
    run->next = lp->runs;
    run->prev = NULL;
    if (lp->runs) {
        lp->runs->prev = run;
    }
    lp->runs = run;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = (void *)((uintptr_t)run | TAG_WAKE) };
    if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, run->link->wake_fd, &ev) != 0) {
        if (!st->done) {
            run_fail_early(st, AL_INTERNAL_ERROR, "epoll_ctl: cannot watch the run");
        }
    } else {
        run->wake_registered = 1;
    }
    if (!st->done && stopping) {
        run_fail_early(st, AL_ABORTED, "the runner is being freed");
    }
    if (!st->done && atomic_load(&st->link->cancelled)) {
        run_fail_early(st, AL_ABORTED, "the run was cancelled before it started");
    }
    if (st->done) {
        finish(lp, run);
        return;
    }
    int adm = runner_admit_async(lp->runner, run->waiter);
    if (adm == 0) {
        char msg[200];
        run_admission_message(lp->runner, 0, msg, sizeof msg);
        run_fail_early(st, AL_CONCURRENCY_LIMIT, msg);
        finish(lp, run);
        return;
    }
    if (adm == 2) {
        run->phase = PHASE_WAITING;
        if (lp->runner->queue_timeout_ms) {
            run->queue_deadline_us = clock_mono_us() + lp->runner->queue_timeout_ms * 1000;
        }
        return;
    }
    st->admitted = 1;
    run->phase = PHASE_RUNNING;
    int launched = run_launch(st);
    runner_opts_drop_journal(run->opts); /* the ledger has its own copy */
    if (launched != 0) {
        finish(lp, run);
        return;
    }
    advance(lp, run);
}

static void *loop_main(void *arg)
{
    struct loop *lp = arg;
    pthread_setname_np(pthread_self(), "airlock-loop"); /* named in top -H and perf */
    if (lp->runner->short_slice) {
        thread_take_short_slice(); /* relays every host call and end: see thread.h */
    }
    struct epoll_event evs[64];
    int timeout_ms = -1;
    for (;;) {
        int n = epoll_wait(lp->epfd, evs, 64, timeout_ms);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == lp) {
                drain(lp->wake_fd);
                continue;
            }
            /* A run finished by an earlier event of this batch is still allocated (its loop
             * reference goes after the batch) and says so: advance passes it by. */
            struct al_run *run = (struct al_run *)((uintptr_t)p & ~(uintptr_t)TAG_MASK);
            if (run->finished) {
                continue;
            }
            if ((uintptr_t)p & TAG_WAKE) {
                drain(run->link->wake_fd);
            }
            advance(lp, run);
        }
        pthread_mutex_lock(&lp->mu);
        struct al_run *in = lp->inbox;
        lp->inbox = NULL;
        lp->inbox_tail = &lp->inbox;
        int stopping = lp->stopping;
        pthread_mutex_unlock(&lp->mu);
        while (in) {
            struct al_run *next = in->next;
            take_in(lp, in, stopping);
            in = next;
        }
        /* Deadlines: step every run whose time has come; sleep until the earliest other. */
        uint64_t now = clock_mono_us();
        uint64_t earliest = UINT64_MAX;
        struct al_run *r = lp->runs;
        while (r) {
            struct al_run *next = r->next;
            if (stopping) {
                host_link_cancel(r->link);
            }
            uint64_t due = r->phase == PHASE_WAITING ? r->queue_deadline_us : r->st.wake_at_us;
            if (due && due <= now) {
                advance(lp, r);
                /* the step set the run's next deadline: it counts like any other */
                due = r->finished                 ? 0
                      : r->phase == PHASE_WAITING ? r->queue_deadline_us
                                                  : r->st.wake_at_us;
            }
            if (due && due < earliest) {
                earliest = due;
            }
            r = next;
        }
        while (lp->finished) {
            struct al_run *done = lp->finished;
            lp->finished = done->next;
            run_unref(done);
        }
        if (stopping && !lp->runs) {
            pthread_mutex_lock(&lp->mu);
            int empty = !lp->inbox;
            pthread_mutex_unlock(&lp->mu);
            if (empty) {
                break;
            }
        }
        if (earliest == UINT64_MAX) {
            timeout_ms = -1;
        } else {
            now = clock_mono_us();
            uint64_t wait_ms = earliest <= now ? 0 : (earliest - now + 999) / 1000;
            timeout_ms = wait_ms > INT_MAX ? INT_MAX : (int)wait_ms; /* woken again to re-check */
        }
    }
    return NULL;
}

static struct loop *loop_new(struct al_runner *runner)
{
    struct loop *lp = calloc(1, sizeof *lp);
    if (!lp) {
        return NULL;
    }
    lp->runner = runner;
    lp->inbox_tail = &lp->inbox;
    lp->epfd = epoll_create1(EPOLL_CLOEXEC);
    lp->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = lp };
    if (lp->epfd < 0 || lp->wake_fd < 0 ||
        epoll_ctl(lp->epfd, EPOLL_CTL_ADD, lp->wake_fd, &ev) != 0 ||
        pthread_mutex_init(&lp->mu, NULL) != 0) {
        goto fail;
    }
    /* The thread takes no signals: an application's handlers run on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int created = pthread_create(&lp->thread, NULL, loop_main, lp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (created != 0) {
        pthread_mutex_destroy(&lp->mu);
        goto fail;
    }
    return lp;
fail:
    if (lp->epfd >= 0) {
        close(lp->epfd);
    }
    if (lp->wake_fd >= 0) {
        close(lp->wake_fd);
    }
    free(lp);
    return NULL;
}

int loop_is_current(const struct loop *lp)
{
    return lp && pthread_equal(pthread_self(), lp->thread);
}

void loop_free(struct loop *lp)
{
    if (!lp) {
        return;
    }
    pthread_mutex_lock(&lp->mu);
    lp->stopping = 1;
    pthread_mutex_unlock(&lp->mu);
    host_wake(lp->wake_fd);
    pthread_join(lp->thread, NULL);
    close(lp->epfd);
    close(lp->wake_fd);
    pthread_mutex_destroy(&lp->mu);
    free(lp);
}

enum al_code al_run_start(struct al_runner *runner, const struct al_run_opts *opts,
                          al_run_done_fn *done, void *userdata, struct al_run **ret_run,
                          struct al_error *reterr)
{
    if (!runner || !opts || !ret_run) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_run_start: NULL argument");
    }
    if (!opts->source) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "al_run_start: no source (al_run_opts_set_source)");
    }
    struct al_run *run = calloc(1, sizeof *run);
    if (!run) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->cv, NULL);
    run->refs = 2; /* the caller's and the loop's */
    run->done = done;
    run->done_userdata = userdata;
    run->opts = runner_opts_copy(opts);
    run->waiter = runner_waiter_new(-1);
    pthread_mutex_lock(&runner->loop_mu);
    if (!runner->loop) {
        runner->loop = loop_new(runner);
    }
    struct loop *lp = runner->loop;
    pthread_mutex_unlock(&runner->loop_mu);
    if (!run->opts || !run->waiter || !lp) {
        run->refs = 1;
        run_unref(run);
        return error_set(reterr, AL_INTERNAL_ERROR,
                         lp ? "out of memory" : "the runner's event thread cannot be started");
    }
    run->loop = lp;
    run_prepare(&run->st, runner, run->opts); /* a failure is decided in the result */
    run->st.can_hold = 1;
    if (run->st.link) {
        run->link = run->st.link;
        host_link_ref(run->link);
        runner_waiter_free(run->waiter);
        run->waiter = runner_waiter_new(run->link->wake_fd);
    }
    if (run->st.res) {
        memcpy(run->run_id, run->st.res->run_id, sizeof run->run_id);
    }
    struct al_error oom = { .code = AL_INTERNAL_ERROR, .message = "out of memory" };
    run->spare = failed_result(run, &oom);
    if (!run->link || !run->waiter || !run->spare) {
        run_conclude(&run->st);
        struct al_error err;
        struct al_result *res = NULL;
        if (run_deliver(&run->st, &res, &err) == AL_OK) {
            al_result_free(res);
        }
        run->refs = 1;
        run_unref(run);
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    pthread_mutex_lock(&lp->mu);
    run->phase = PHASE_INBOX;
    *lp->inbox_tail = run;
    lp->inbox_tail = &run->next;
    pthread_mutex_unlock(&lp->mu);
    host_wake(lp->wake_fd);
    *ret_run = run;
    return AL_OK;
}

void al_run_cancel(struct al_run *run)
{
    if (run) {
        host_link_cancel(run->link);
    }
}

enum al_code al_run_wait(struct al_run *run, struct al_result **ret_result, struct al_error *reterr)
{
    if (!run || !ret_result) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_run_wait: NULL argument");
    }
    if (run->done) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "al_run_wait: the run delivers its result to its done callback");
    }
    if (loop_is_current(run->loop)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "al_run_wait: called on the runner's event thread, which the run needs");
    }
    pthread_mutex_lock(&run->mu);
    while (!run->over && !run->taken) {
        pthread_cond_wait(&run->cv, &run->mu);
    }
    if (run->taken) {
        pthread_mutex_unlock(&run->mu);
        return error_set(reterr, AL_CONFIG_ERROR, "al_run_wait: the result was already taken");
    }
    struct al_result *res = run->result;
    run->result = NULL;
    run->taken = 1;
    pthread_cond_broadcast(&run->cv); /* another waiter learns it was taken */
    pthread_mutex_unlock(&run->mu);
    if (!res) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory for the result");
    }
    *ret_result = res;
    return AL_OK;
}

const char *al_run_id(const struct al_run *run)
{
    return run->run_id;
}

enum al_code al_run_journal_release(struct al_run *run, uint32_t position)
{
    if (!run || position == 0) {
        return AL_CONFIG_ERROR;
    }
    unsigned cur = atomic_load(&run->link->released);
    while (cur < position && !atomic_compare_exchange_weak(&run->link->released, &cur, position)) {
    }
    host_wake(run->link->wake_fd); /* as a completion from another thread does */
    return AL_OK;
}

void al_run_release(struct al_run *run)
{
    if (run) {
        run_unref(run);
    }
}
