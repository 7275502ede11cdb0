/*
 * unit.thread - thread_take_short_slice: the calling thread gets the short slice and keeps its
 * policy and nice value; what it creates afterwards (a worker process, a thread) starts with
 * the default slice; a thread of another policy is left as it was. On a kernel that gives
 * normal threads no slice of their own (before 6.12) the call must change nothing at all.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "thread.h"

/* linux/sched/types.h's struct sched_attr, under a name of its own: that header cannot be
 * included beside pthread.h (both define struct sched_param), and glibc 2.41's sched.h defines
 * struct sched_attr itself. */
struct test_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime; /* ns: a normal thread's slice on Linux 6.12 and later, 0 before */
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};
#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif

/* 0 with *ret filled; the thread bodies below report failures by return value, since cmocka's
 * asserts may only fail on the test's own thread. */
static int attr_of_self(struct test_sched_attr *ret)
{
    memset(ret, 0, sizeof *ret);
    return (int)syscall(SYS_sched_getattr, 0, ret, (unsigned)sizeof *ret, 0u);
}

static int is_fair(uint32_t policy)
{
    return policy == SCHED_OTHER || policy == SCHED_BATCH;
}

/* Each test runs on a thread of its own, so the runner's thread keeps its defaults. */
static void run_on_thread(void *(*fn)(void *))
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, NULL), 0);
    void *failed = NULL;
    assert_int_equal(pthread_join(t, &failed), 0);
    assert_null(failed);
}

static void *takes_slice_keeps_nice(void *arg)
{
    (void)arg;
    struct test_sched_attr before, after;
    if (attr_of_self(&before) != 0) {
        return (void *)1;
    }
    /* one step nicer than the tests were started with (no privilege needed): the call must not
     * undo it */
    int nice = before.sched_nice < 19 ? before.sched_nice + 1 : 19;
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0 ||
        attr_of_self(&before) != 0) {
        return (void *)2;
    }
    thread_take_short_slice();
    if (attr_of_self(&after) != 0) {
        return (void *)3;
    }
    if (after.sched_policy != before.sched_policy || after.sched_nice != nice) {
        return (void *)4;
    }
    int slices = is_fair(before.sched_policy) && before.sched_runtime != 0;
    if (slices) {
        if (!(after.sched_flags & SCHED_FLAG_RESET_ON_FORK) ||
            after.sched_runtime != THREAD_SHORT_SLICE_NS) {
            return (void *)5;
        }
    } else if (after.sched_flags != before.sched_flags ||
               after.sched_runtime != before.sched_runtime) {
        return (void *)6; /* nothing to set: nothing may change */
    }
    return NULL;
}

static void test_thread_short_slice_is_taken_and_nice_kept(void **state)
{
    (void)state;
    run_on_thread(takes_slice_keeps_nice);
}

static void *child_thread_attr(void *arg)
{
    return attr_of_self(arg) == 0 ? NULL : (void *)1;
}

static void *children_start_with_defaults(void *arg)
{
    (void)arg;
    struct test_sched_attr before;
    if (attr_of_self(&before) != 0) {
        return (void *)1;
    }
    thread_take_short_slice();
    /* a process, as a worker is spawned */
    pid_t pid = fork();
    if (pid == 0) {
        struct test_sched_attr a;
        int ok = attr_of_self(&a) == 0 && a.sched_runtime == before.sched_runtime &&
                 !(a.sched_flags & SCHED_FLAG_RESET_ON_FORK);
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        return (void *)2;
    }
    /* a thread */
    struct test_sched_attr t;
    pthread_t th;
    void *failed = NULL;
    if (pthread_create(&th, NULL, child_thread_attr, &t) != 0 || pthread_join(th, &failed) != 0 ||
        failed) {
        return (void *)3;
    }
    if (t.sched_runtime != before.sched_runtime || (t.sched_flags & SCHED_FLAG_RESET_ON_FORK)) {
        return (void *)4;
    }
    return NULL;
}

static void test_thread_short_slice_is_not_inherited(void **state)
{
    (void)state;
    run_on_thread(children_start_with_defaults);
}

static void *idle_left_alone(void *arg)
{
    (void)arg;
    struct test_sched_attr a, before, after;
    if (attr_of_self(&a) != 0) {
        return (void *)1;
    }
    a.size = sizeof a;
    a.sched_policy = SCHED_IDLE; /* lowering the policy needs no privilege */
    if (syscall(SYS_sched_setattr, 0, &a, 0u) != 0 || attr_of_self(&before) != 0) {
        return (void *)2;
    }
    thread_take_short_slice();
    if (attr_of_self(&after) != 0) {
        return (void *)3;
    }
    if (after.sched_policy != SCHED_IDLE || after.sched_runtime != before.sched_runtime ||
        after.sched_flags != before.sched_flags) {
        return (void *)4;
    }
    return NULL;
}

static void test_thread_short_slice_leaves_other_policies_alone(void **state)
{
    (void)state;
    run_on_thread(idle_left_alone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_short_slice_is_taken_and_nice_kept),
        cmocka_unit_test(test_thread_short_slice_is_not_inherited),
        cmocka_unit_test(test_thread_short_slice_leaves_other_policies_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
