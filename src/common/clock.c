/*
 * clock.c - the clocks limits are measured with. The CPU clock of another process is read
 * through clock_getcpuclockid so the supervisor measures the worker's own CPU time, not ours.
 */
#include "clock.h"

#include <time.h>

static uint64_t ts_us(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000u + (uint64_t)ts->tv_nsec / 1000u;
}

uint64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts_us(&ts);
}

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t clock_self_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts_us(&ts);
}

uint64_t clock_process_cpu_us(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) != 0) {
        return UINT64_MAX;
    }
    return ts_us(&ts);
}
