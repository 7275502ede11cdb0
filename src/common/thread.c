/*
 * thread.c - per-thread scheduling hints (see thread.h). glibc before 2.41 has no wrapper for
 * sched_setattr, so the system calls are made directly; a kernel that does not know a field
 * ignores it or refuses the call, and either way the thread goes on as it was (compiled with
 * _GNU_SOURCE for syscall()).
 */
#include "thread.h"

#include <linux/sched.h>
#include <linux/sched/types.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void thread_take_short_slice(void)
{
    struct sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, (unsigned)sizeof attr, 0u) != 0) {
        return;
    }
    /* Only the fair policies have slices; a real-time or idle thread is left as it was set. A
     * kernel that reports no slice for a normal thread (before 6.12) has none to set: the flag
     * alone would only change what the thread's children inherit. */
    if ((attr.sched_policy != SCHED_NORMAL && attr.sched_policy != SCHED_BATCH) ||
        attr.sched_runtime == 0) {
        return;
    }
    /* sched_getattr filled in the policy and nice value, which setattr writes back unchanged
     * (so no privilege is needed); the utilization clamps are not touched. */
    attr.size = sizeof attr;
    attr.sched_flags = SCHED_FLAG_RESET_ON_FORK;
    attr.sched_runtime = THREAD_SHORT_SLICE_NS;
    (void)syscall(SYS_sched_setattr, 0, &attr, 0u);
}
