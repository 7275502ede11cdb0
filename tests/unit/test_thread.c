/*
 * unit.thread - thread_short_slice: the calling thread gets the short slice and keeps its
 * policy and nice value; what it creates afterwards (a worker process, a thread) starts with
 * the default slice; a thread of another policy is left as it was. On a kernel that gives
 * normal threads no slice of their own (before 6.12) the slice is not checked, the rest is.
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

/* linux/sched/types.h's struct sched_attr, which cannot be included beside pthread.h (both
 * define struct sched_param) */
struct sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime; /* ns: a normal thread's slice on Linux 6.12 and later */
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};
#define SCHED_FLAG_RESET_ON_FORK 0x01

static struct sched_attr attr_of_self(void)
{
    struct sched_attr a;
    memset(&a, 0, sizeof a);
    assert_int_equal(syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u), 0);
    return a;
}

/* A kernel with slices reports a normal thread's slice (the default one, never 0). */
static int kernel_has_slices(void)
{
    return attr_of_self().sched_runtime != 0;
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
    /* a nice value only ever raised: no privilege needed, and the call must not undo it */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 4) != 0) {
        return (void *)1;
    }
    int slices = kernel_has_slices();
    thread_short_slice();
    struct sched_attr a = attr_of_self();
    if (a.sched_policy != SCHED_OTHER || a.sched_nice != 4) {
        return (void *)2;
    }
    if (!(a.sched_flags & SCHED_FLAG_RESET_ON_FORK)) {
        return (void *)3;
    }
    if (slices && a.sched_runtime != THREAD_SHORT_SLICE_NS) {
        return (void *)4;
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
    *(struct sched_attr *)arg = attr_of_self();
    return NULL;
}

static void *children_start_with_defaults(void *arg)
{
    (void)arg;
    struct sched_attr before = attr_of_self();
    thread_short_slice();
    /* a process, as a worker is spawned */
    pid_t pid = fork();
    if (pid == 0) {
        struct sched_attr a;
        memset(&a, 0, sizeof a);
        int ok = syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) == 0 &&
                 a.sched_runtime == before.sched_runtime &&
                 !(a.sched_flags & SCHED_FLAG_RESET_ON_FORK);
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        return (void *)1;
    }
    /* a thread */
    struct sched_attr t;
    pthread_t th;
    if (pthread_create(&th, NULL, child_thread_attr, &t) != 0 || pthread_join(th, NULL) != 0) {
        return (void *)2;
    }
    if (t.sched_runtime != before.sched_runtime || (t.sched_flags & SCHED_FLAG_RESET_ON_FORK)) {
        return (void *)3;
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
    struct sched_attr a = attr_of_self();
    a.size = sizeof a;
    a.sched_policy = SCHED_IDLE; /* lowering the policy needs no privilege */
    if (syscall(SYS_sched_setattr, 0, &a, 0u) != 0) {
        return (void *)1;
    }
    struct sched_attr before = attr_of_self();
    thread_short_slice();
    struct sched_attr after = attr_of_self();
    if (after.sched_policy != SCHED_IDLE || after.sched_runtime != before.sched_runtime ||
        after.sched_flags != before.sched_flags) {
        return (void *)2;
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
