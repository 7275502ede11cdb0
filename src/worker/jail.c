/*
 * jail.c - process-level limits of a worker, applied before any guest byte runs.
 *
 * What is here is the part of the jail that needs no kernel filter: no new privileges, not
 * dumpable, no core files, a handful of descriptors, no child processes, and at request time an
 * address-space and CPU backstop behind the engine's own heap and CPU accounting (a guest that
 * breaks the engine's accounting still hits the kernel's). The seccomp allow-list and namespaces
 * come on top (TODO(#4)).
 */
#include "jail.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#define JAIL_FDS         8              /* 0-2 (/dev/null), 3 (the host socket), spare */
#define JAIL_AS_HEADROOM (512ull << 20) /* code, stacks, allocator slack above the heap limit */

static void set_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = { soft, hard };
    setrlimit(resource, &rl);
}

void jail_enter(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_NOFILE, JAIL_FDS, JAIL_FDS);
    set_limit(RLIMIT_NPROC, 0, 0);
}

/* AddressSanitizer reserves terabytes of shadow memory: an address-space limit would break the
 * sanitizer build, which checks the same code paths without it. */
#if defined(__SANITIZE_ADDRESS__)
#define JAIL_LIMIT_AS 0
#else
#define JAIL_LIMIT_AS 1
#endif

void jail_limit_run(uint64_t heap_bytes, uint64_t cpu_ms)
{
    if (JAIL_LIMIT_AS) {
        rlim_t as = (rlim_t)(heap_bytes + JAIL_AS_HEADROOM);
        set_limit(RLIMIT_AS, as, as);
    }
    /* Seconds, rounded up, plus one: the supervisor's millisecond limit comes first. */
    rlim_t cpu_s = (rlim_t)((cpu_ms + 999) / 1000 + 1);
    set_limit(RLIMIT_CPU, cpu_s, cpu_s + 1);
}
