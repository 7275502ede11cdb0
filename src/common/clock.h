/* clock.h - monotonic, wall and CPU clocks in microseconds. */
#ifndef AIRLOCK_CLOCK_H
#define AIRLOCK_CLOCK_H

#include <stdint.h>
#include <sys/types.h>

uint64_t clock_mono_us(void);     /* CLOCK_MONOTONIC */
int64_t clock_wall_ms(void);      /* CLOCK_REALTIME, ms since the epoch */
uint64_t clock_self_cpu_us(void); /* this process's CPU time */
/* CPU time of child process `pid` (user + system), or UINT64_MAX when it cannot be read. */
uint64_t clock_process_cpu_us(pid_t pid);

#endif
