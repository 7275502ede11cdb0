/*
 * thread.h - how a thread that hands work along asks the scheduler for a CPU at once.
 *
 * A run passes through several short-lived steps on threads of the host (airlockd's HTTP thread,
 * its run writer and syncer, the connector client, libairlock's event loop), while the CPUs are
 * busy with workers: the one running the guest, the one exiting after its run, the spare being
 * forked. On Linux's EEVDF scheduler (6.6 and later) a thread that wakes while a worker runs may
 * wait for that worker's slice to run out (the default is 0.7-3 ms, depending on the CPU
 * count): every hand-off of a run then costs up to a slice.
 */
#ifndef AIRLOCK_THREAD_H
#define AIRLOCK_THREAD_H

/* Asks for a short slice (THREAD_SHORT_SLICE_NS) for the calling thread, keeping its policy and
 * nice value, so that it gets a CPU as soon as it wakes and gives it back soon if it runs long.
 * Processes and threads it creates later start with the default slice again
 * (SCHED_FLAG_RESET_ON_FORK), so a worker spawned from it never inherits the short slice.
 * Best effort and silent: nothing changes on kernels before 6.12, where a normal thread has no
 * slice of its own to set, nor for real-time or idle policies. Needs no privilege. */
void thread_short_slice(void);

/* The slice thread_short_slice asks for, in nanoseconds: longer than what these threads do in
 * one go (0.1-0.4 ms of CPU per hand-off on the bench machine), so that a worker does not take
 * the CPU back in the middle of it, and shorter than the default slice on any machine (0.7 ms
 * with one CPU), so that the thread's wake-up still comes first. Measured against the shortest
 * slice (0.1 ms): 0.16 ms less per run at concurrency 1, 4-6% more throughput at 2 and 8
 * (docs/benchmarks.md). */
#define THREAD_SHORT_SLICE_NS 500000u

#endif
