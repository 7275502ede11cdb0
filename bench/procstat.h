/*
 * procstat.h - CPU time and parents of processes and threads, read from /proc: what the
 * benchmarks (bench.c, governed.c, nodes.c) measure besides wall time.
 */
#ifndef AIRLOCK_BENCH_PROCSTAT_H
#define AIRLOCK_BENCH_PROCSTAT_H

#include <sys/types.h>

/* CPU time from /proc, in clock ticks (sysconf(_SC_CLK_TCK) a second). */
struct proc_stat {
    pid_t ppid;
    long long ticks;       /* utime + stime of the process (or the thread) itself */
    long long child_ticks; /* cutime + cstime: its children that ended and were reaped */
    char comm[32];         /* its name: a thread's pthread_setname_np */
};
/* One stat file: "/proc/PID/stat" or "/proc/PID/task/TID/stat". */
int proc_stat_read(const char *path, struct proc_stat *p);
/* The ticks of `root` and of every live process under it, the reaped children included. */
long long proc_tree_ticks(pid_t root);

#endif
