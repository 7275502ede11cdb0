/*
 * failsync.c - an LD_PRELOAD library for the durability tests: what fdatasync does on the
 * threads named in FAILSYNC_THREAD (comma-separated; airlockd's writer, "airlockd-writer",
 * whose every commit fsyncs SQLite's WAL), once the file FAILSYNC_ARMED exists (when that is
 * set: a test arms it after its setup, whose writes go through the same thread):
 *   FAILSYNC_GATE unset  it fails with EIO, as on a disk that lost the write (integration.crash)
 *   FAILSYNC_GATE=FILE   while FILE exists it waits, with FILE.held present meanwhile, then
 *                        syncs: the writer's batch is committed, its fsync not done
 *                        (integration.runs); those threads' Nth fdatasync once armed (from 1;
 *                        a commit syncs once, and the checkpoints that would add more are
 *                        never reached by the tests' few records) also waits while FILE.N
 *                        exists, with FILE.N.held present meanwhile
 * Every other fdatasync is made. The executable's and its libraries' calls all reach this
 * definition first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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

/* Whether `name` is one of the comma-separated `list`. */
static int named(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, name, n) == 0) {
            return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    const char *victims = getenv("FAILSYNC_THREAD");
    const char *gate = getenv("FAILSYNC_GATE");
    const char *armed = getenv("FAILSYNC_ARMED");
    char name[17] = "";
    if (victims && prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && named(victims, name) &&
        (!armed || access(armed, F_OK) == 0)) {
        if (!gate) {
            errno = EIO;
            return -1;
        }
        static atomic_ulong calls; /* only the threads of those names count */
        char numbered[4200];
        snprintf(numbered, sizeof numbered, "%s.%lu", gate, atomic_fetch_add(&calls, 1) + 1);
        hold(gate);
        hold(numbered);
    }
    return (int)syscall(SYS_fdatasync, fd);
}
