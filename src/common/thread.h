/*
 * thread.h - how a thread that hands work along asks the scheduler for a CPU at once.
 *
 * A run passes through several short-lived steps on threads of the host (airlockd's HTTP thread,
 * its run writer and syncer, the connector client, libairlock's event loop), while the CPUs are
 * busy with workers: the one running the guest, the one exiting after its run, the spare being
 * forked. On Linux's EEVDF scheduler a thread that wakes while a worker runs may wait for that
 * worker's slice to run out (by default 0.7-3 ms, depending on the kernel and the CPU count;
 * 1.4 ms on the bench machine's two): every hand-off of a run then costs up to a slice.
 */
#ifndef AIRLOCK_THREAD_H
#define AIRLOCK_THREAD_H

/* Asks for a short slice (THREAD_SHORT_SLICE_NS) for the calling thread, keeping its policy and
 * nice value, so that it gets a CPU as soon as it wakes and gives it back soon if it runs long.
 * The thread also gets SCHED_FLAG_RESET_ON_FORK, so that processes and threads it creates later
 * start with the default slice (a worker spawned from it never has the short one); with it they
 * also start at nice 0 if this thread's nice value was negative, and a real-time policy is not
 * inherited; and the thread itself can drop the flag (say, to set a real-time policy) only with
 * CAP_SYS_NICE. Best effort and silent. On a kernel that gives normal threads no slice of their
 * own (before 6.12), for real-time, deadline and idle threads, nothing changes at all. Needs no
 * privilege. */
void thread_take_short_slice(void);

/* The slice thread_take_short_slice asks for, in nanoseconds: longer than what these threads do
 * in one go (0.1-0.4 ms of CPU per hand-off on the bench machine), so that a worker does not
 * take the CPU back in the middle of it, and shorter than the default slice (0.7 ms or more
 * unless an administrator lowered it), so that the thread's wake-up still comes first. Measured
 * against the shortest slice (0.1 ms): 0.16 ms less per run at concurrency 1, 4-6% more
 * throughput at 2 and 8 (docs/benchmarks.md). */
#define THREAD_SHORT_SLICE_NS 500000u

#endif
