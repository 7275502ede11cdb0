/*
 * failsync.c - an LD_PRELOAD library for the durability tests: what fdatasync does on the
 * thread named FAILSYNC_THREAD (airlockd's run syncer, "airlockd-sync"):
 *   FAILSYNC_GATE unset  it fails with EIO, as on a disk that lost the write (integration.crash)
 *   FAILSYNC_GATE=FILE   while FILE exists it waits, with FILE.held present meanwhile, then
 *                        syncs: the writer's batch is committed, its fsync not done
 *                        (integration.runs); the thread's Nth fdatasync (from 1) also waits
 *                        while FILE.N exists, with FILE.N.held present meanwhile
 * Every other fdatasync is made. The executable's and its libraries' calls all reach this
 * definition first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Waits while the file GATE exists, with GATE.held present meanwhile. */
static void hold(const char *gate)
{
    if (access(gate, F_OK) != 0) {
        return;
    }
    char held[4300];
    snprintf(held, sizeof held, "%s.held", gate);
    close(open(held, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    while (access(gate, F_OK) == 0) {
        usleep(1000); /* a test's gate: the test removes the file */
    }
    unlink(held);
}

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    const char *victim = getenv("FAILSYNC_THREAD");
    const char *gate = getenv("FAILSYNC_GATE");
    char name[17] = "";
    if (victim && prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && strcmp(name, victim) == 0) {
        if (!gate) {
            errno = EIO;
            return -1;
        }
        static unsigned long calls; /* only the one thread of that name counts */
        char numbered[4200];
        snprintf(numbered, sizeof numbered, "%s.%lu", gate, ++calls);
        hold(gate);
        hold(numbered);
    }
    return (int)syscall(SYS_fdatasync, fd);
}
