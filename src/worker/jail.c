/*
 * jail.c - process-level limits of a worker, applied before any guest byte runs.
 *
 * No new privileges, not dumpable, no core files, a handful of descriptors, no child processes;
 * at request time an address-space and CPU backstop behind the engine's own heap and CPU
 * accounting (a guest that breaks the engine's accounting still hits the kernel's); and a
 * seccomp-bpf allow-list of exactly what a worker needs once its context exists: memory
 * management without executable mappings, clocks, I/O on the host socket only, and exit.
 * Anything else traps: the SIGSYS handler tells the host which call it was and exits.
 * Where the kernel allows, the worker also enters new user, network, IPC and mount namespaces
 * (best effort: each is tried on its own, and the report says which held).
 */
#include "jail.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wire.h"

#define JAIL_FDS         8              /* 0-2 (/dev/null), 3 (the host socket), spare */
#define JAIL_AS_HEADROOM (512ull << 20) /* code, stacks, allocator slack above the heap limit */

static void set_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = { soft, hard };
    setrlimit(resource, &rl);
}

unsigned jail_namespaces(void)
{
    /* The user namespace first: it is what lets an unprivileged process create the others.
     * Threat: a worker that escaped the filter still sees no network interface but its own
     * loopback, no System V IPC of the host, and mounts it cannot propagate. */
    static const int kinds[] = { CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWNS };
    static const unsigned bits[] = { JAIL_NS_USER, JAIL_NS_NET, JAIL_NS_IPC, JAIL_NS_MOUNT };
    unsigned held = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (unshare(kinds[i]) == 0) {
            held |= bits[i];
        }
    }
    return held;
}

void jail_enter(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_NOFILE, JAIL_FDS, JAIL_FDS);
}

void jail_no_children(void)
{
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
        set_limit(RLIMIT_DATA, as, as);
    }
    /* Seconds, rounded up, plus one: the supervisor's millisecond limit comes first. */
    rlim_t cpu_s = (rlim_t)((cpu_ms + 999) / 1000 + 1);
    set_limit(RLIMIT_CPU, cpu_s, cpu_s + 1);
}

static int jail_fd = -1;

/* SIGSYS from the filter: one FAULT frame naming the system call, then exit. Only the calls the
 * filter allows are used here (write on the host socket, exit_group). */
static void on_sigsys(int sig, siginfo_t *info, void *uctx)
{
    (void)sig;
    (void)uctx;
    uint32_t nr = (uint32_t)info->si_syscall;
    uint8_t frame[9] = { 5,
                         0,
                         0,
                         0,
                         WIRE_FAULT,
                         (uint8_t)nr,
                         (uint8_t)(nr >> 8),
                         (uint8_t)(nr >> 16),
                         (uint8_t)(nr >> 24) };
    ssize_t n = write(jail_fd, frame, sizeof frame);
    (void)n;
    _exit(JAIL_EXIT_FAULT);
}

/* The compiled filter: built once (in a zygote, before it forks any worker) and installed by
 * each worker with one system call, so no worker runs libseccomp's compiler and probes. */
static struct sock_filter *filter_prog;
static unsigned short filter_len;
static int filter_fd = -1; /* the host socket the compiled filter allows */

/* Threat per rule: a guest that subverted QuickJS (a memory-safety bug) and now makes system
 * calls of its choosing. Everything not listed traps. NULL when out of memory. */
static scmp_filter_ctx filter_rules(int host_fd)
{
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_TRAP);
    if (!f) {
        return NULL;
    }
    const struct scmp_arg_cmp on_host = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)host_fd);
    const struct scmp_arg_cmp no_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
    int err = 0;
    /* talk to the host: its socket only, no other descriptor can be read or written */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(read), 1, on_host);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, on_host);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(recvfrom), 1, on_host);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(sendto), 1, on_host);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(poll), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ppoll), 0);
    /* waiting for the host's answer without sleeping lets the host run first on this CPU */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(sched_yield), 0);
    /* memory, never executable: no JIT here, so executable memory could only be shellcode */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, no_exec);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, no_exec);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(munmap), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mremap), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(brk), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 0);
    /* clocks (the CPU clock is a real system call) */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clock_gettime), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(gettimeofday), 0);
    /* lowering its own limits at request time (pid 0 = itself) */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_EQ, 0));
    /* signals it receives (SIGXCPU from RLIMIT_CPU is handled by the kernel) and the end */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigreturn), 0);
    /* the sanitizer runtime checks the signal stack when a signal arrives; harmless */
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0);
    err |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0);
    if (err != 0) {
        seccomp_release(f);
        return NULL;
    }
    return f;
}

int jail_seccomp_build(int host_fd)
{
    if (filter_prog) {
        return filter_fd == host_fd ? 0 : -1;
    }
    scmp_filter_ctx f = filter_rules(host_fd);
    if (!f) {
        return -1;
    }
    int rc = -1;
    /* libseccomp 2.5 exports the program only to a descriptor: through a memfd, read back. */
    int mfd = memfd_create("airlock-filter", MFD_CLOEXEC);
    if (mfd < 0 || seccomp_export_bpf(f, mfd) != 0) {
        goto out;
    }
    off_t size = lseek(mfd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
        goto out;
    }
    struct sock_filter *prog = malloc((size_t)size);
    if (!prog || pread(mfd, prog, (size_t)size, 0) != (ssize_t)size) {
        free(prog);
        goto out;
    }
    filter_prog = prog;
    filter_len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    filter_fd = host_fd;
    rc = 0;
out:
    if (mfd >= 0) {
        close(mfd);
    }
    seccomp_release(f);
    return rc;
}

int jail_seccomp(int host_fd)
{
    jail_fd = host_fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSYS, &sa, NULL) != 0) {
        return -1;
    }
    if (jail_seccomp_build(host_fd) == 0) {
        struct sock_fprog fprog = { .len = filter_len, .filter = filter_prog };
        /* jail_enter set no_new_privs, which lets an unprivileged process install a filter */
        return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0 ? 0 : -1;
    }
    /* No compiled program (no memfd here, or built for another descriptor): libseccomp
     * compiles and loads the same rules itself. */
    scmp_filter_ctx f = filter_rules(host_fd);
    int rc = f && seccomp_load(f) == 0 ? 0 : -1;
    if (f) {
        seccomp_release(f);
    }
    return rc;
}

static void say(int fd, const char *line)
{
    ssize_t n = write(fd, line, strlen(line));
    (void)n;
}

int jail_report(int fd)
{
    char line[160];
    unsigned ns = jail_namespaces();
    jail_enter();
    jail_no_children();
    struct rlimit core, nofile, nproc;
    getrlimit(RLIMIT_CORE, &core);
    getrlimit(RLIMIT_NOFILE, &nofile);
    getrlimit(RLIMIT_NPROC, &nproc);
    say(fd, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? "no_new_privs: active\n"
                                                        : "no_new_privs: INACTIVE\n");
    say(fd, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ? "dumpable: off\n" : "dumpable: ON\n");
    snprintf(line, sizeof line, "core dumps: %s (RLIMIT_CORE %llu)\n",
             core.rlim_cur == 0 ? "off" : "ON", (unsigned long long)core.rlim_cur);
    say(fd, line);
    snprintf(line, sizeof line, "descriptors: RLIMIT_NOFILE %llu\n",
             (unsigned long long)nofile.rlim_cur);
    say(fd, line);
    snprintf(line, sizeof line, "child processes: RLIMIT_NPROC %llu%s\n",
             (unsigned long long)nproc.rlim_cur,
             geteuid() == 0 ? " (not enforced for root; the seccomp filter forbids fork)" : "");
    say(fd, line);
    say(fd, "memory and CPU: RLIMIT_AS, RLIMIT_DATA and RLIMIT_CPU set per run\n");
    int ok = jail_seccomp(fd) == 0;
    say(fd, ok ? "seccomp: active (allow-list; any other system call stops the worker)\n"
               : "seccomp: UNAVAILABLE (the kernel refused the filter)\n");
    snprintf(line, sizeof line, "namespaces: user %s, network %s, IPC %s, mount %s\n",
             ns & JAIL_NS_USER ? "new" : "NOT AVAILABLE",
             ns & JAIL_NS_NET ? "new" : "NOT AVAILABLE", ns & JAIL_NS_IPC ? "new" : "NOT AVAILABLE",
             ns & JAIL_NS_MOUNT ? "new" : "NOT AVAILABLE");
    say(fd, line);
    return ok ? 0 : 1;
}
