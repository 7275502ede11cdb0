/*
 * failsync.c - an LD_PRELOAD library for integration.crash: every fdatasync made on the thread
 * named FAILSYNC_THREAD (airlockd's run writer, "airlockd-writer") fails with EIO, as on a disk
 * that lost the write; every other one is made. The executable's and its libraries' calls all
 * reach this definition first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) int fdatasync(int fd)
{
    const char *victim = getenv("FAILSYNC_THREAD");
    char name[17] = "";
    if (victim && prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && strcmp(name, victim) == 0) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}
