/* procinfo.h - what the tests check for leaks: this process's open descriptors, children and
 * peak memory. */
#ifndef AIRLOCK_TEST_PROCINFO_H
#define AIRLOCK_TEST_PROCINFO_H

#include <sys/types.h>

/* Entries of /proc/self/fd. */
int procinfo_count_fds(void);
/* Our child processes (zombies included), from /proc; up to max pids into out (may be NULL).
 * Returns how many there are. */
int procinfo_children(pid_t *out, int max);

/* The peak resident set size (VmHWM) of process `pid` (0: this one), in KiB; -1 if unknown. */
long procinfo_peak_rss_kib(pid_t pid);

#endif
