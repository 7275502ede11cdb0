/* unit.pool - workers started ahead of time (src/lib/pool.c), against the real airlock-worker:
 * a taken worker is alive, unused and reports READY; warm workers are distinct; a worker
 * handed back, even one already killed, is reaped; pool_free leaves no child process and no
 * descriptor behind. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "procinfo.h"
#include "wire.h"

static const char *worker_path(void)
{
    const char *p = getenv("AIRLOCK_WORKER");
    assert_non_null(p);
    return p;
}

/* The worker's first frame must be READY, within 10 s. */
static void expect_ready(const struct worker_proc *w)
{
    uint8_t data[256];
    size_t have = 0;
    for (;;) {
        struct pollfd p = { .fd = w->fd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 10000), 1);
        ssize_t n = read(w->fd, data + have, sizeof data - have);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
        }
        assert_true(n > 0);
        have += (size_t)n;
        uint8_t type = 0;
        struct wire_cursor c;
        size_t frame_len = 0;
        int r = wire_next(data, have, sizeof data, &type, &c, &frame_len);
        assert_int_not_equal(r, -1);
        if (r == 1) {
            assert_int_equal(type, WIRE_READY);
            return;
        }
    }
}

static void expect_fresh(const struct worker_proc *w)
{
    assert_true(w->pid > 0);
    assert_int_equal(kill(w->pid, 0), 0);
    int fl = fcntl(w->fd, F_GETFL);
    assert_true(fl >= 0 && (fl & O_NONBLOCK));
    int fdfl = fcntl(w->fd, F_GETFD);
    assert_true(fdfl >= 0 && (fdfl & FD_CLOEXEC));
    expect_ready(w);
}

static void test_pool_take_without_warm_starts_one(void **state)
{
    (void)state;
    int fds = procinfo_count_fds();
    struct pool *p = NULL;
    struct al_error err;
    assert_int_equal(pool_new(worker_path(), 0, 0, 0, &p, &err), AL_OK);
    struct worker_proc w;
    assert_int_equal(pool_take(p, &w, &err), AL_OK);
    expect_fresh(&w);
    pid_t pid = w.pid;
    pool_release(p, &w);
    /* without a thread the release reaps at once */
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    pool_free(p);
    assert_int_equal(procinfo_children(NULL, 0), 0);
    assert_int_equal(procinfo_count_fds(), fds);
}

static void test_pool_warm_workers_are_distinct_and_ready(void **state)
{
    (void)state;
    int fds = procinfo_count_fds();
    struct pool *p = NULL;
    struct al_error err;
    assert_int_equal(pool_new(worker_path(), 0, 0, 2, &p, &err), AL_OK);
    struct worker_proc w[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pool_take(p, &w[i], &err), AL_OK);
        expect_fresh(&w[i]);
        for (int j = 0; j < i; j++) {
            assert_int_not_equal(w[i].pid, w[j].pid);
        }
    }
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        pids[i] = w[i].pid;
        pool_release(p, &w[i]);
        /* handed over: the caller's copy no longer names the process */
        assert_int_equal(w[i].pid, -1);
        assert_int_equal(w[i].fd, -1);
    }
    pool_free(p);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kill(pids[i], 0), -1);
    }
    /* the zygote and every spare are gone too */
    assert_int_equal(procinfo_children(NULL, 0), 0);
    assert_int_equal(procinfo_count_fds(), fds);
}

static void test_pool_killed_worker_is_reaped(void **state)
{
    (void)state;
    struct pool *p = NULL;
    struct al_error err;
    assert_int_equal(pool_new(worker_path(), 0, 0, 1, &p, &err), AL_OK);
    struct worker_proc w;
    assert_int_equal(pool_take(p, &w, &err), AL_OK);
    expect_fresh(&w);
    assert_int_equal(kill(w.pid, SIGKILL), 0);
    pool_release(p, &w);
    /* the pool still serves */
    assert_int_equal(pool_take(p, &w, &err), AL_OK);
    expect_fresh(&w);
    pool_release(p, &w);
    pool_free(p);
    assert_int_equal(procinfo_children(NULL, 0), 0);
}

static void test_pool_bad_worker_path_fails_take(void **state)
{
    (void)state;
    struct pool *p = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(pool_new("/nonexistent/airlock-worker", 0, 0, 0, &p, &err), AL_OK);
    struct worker_proc w;
    assert_int_not_equal(pool_take(p, &w, &err), AL_OK);
    assert_true(err.message[0] != '\0');
    pool_free(p);
    pool_free(NULL);
    assert_int_equal(procinfo_children(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_take_without_warm_starts_one),
        cmocka_unit_test(test_pool_warm_workers_are_distinct_and_ready),
        cmocka_unit_test(test_pool_killed_worker_is_reaped),
        cmocka_unit_test(test_pool_bad_worker_path_fails_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
