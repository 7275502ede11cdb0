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

/* Runs this executable again as `/proc/self/exe ARG` in a fresh process (so a peak it measures
 * is its own), with AddressSanitizer's quarantine off (freed memory waiting there would count
 * as the process's), and reads what it prints on stdout into out (NUL-terminated, at most
 * cap - 1 bytes). Returns its exit status, or -1 when it could not run or was killed. */
int procinfo_run_self(const char *arg, char *out, size_t cap);

#endif
