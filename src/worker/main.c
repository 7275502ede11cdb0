/*
 * main.c - airlock-worker: one process, one run.
 *
 * The host starts us with the socket on fd 3 (or --fd=N), sends one RUN frame, answers our
 * host calls and reads our console entries and the DONE frame; then we exit. We never print:
 * stdout and stderr are not ours to use. Output is buffered in w->io.out and sent only when the
 * worker is about to block or is done, so a run with many console lines or calls costs few
 * syscalls. Everything from the host is bounds-checked as if it were hostile.
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "jail.h"
#include "worker.h"

void worker_fail(struct worker *w, enum al_code code, const char *fmt, ...)
{
    if (w->fatal.code != AL_OK) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    w->fatal.code = code;
    vsnprintf(w->fatal.msg, sizeof w->fatal.msg, fmt, ap);
    va_end(ap);
}

int worker_flush(struct worker *w)
{
    size_t off = 0;
    while (off < w->io.out.len) {
        ssize_t n = send(w->io.fd, w->io.out.data + off, w->io.out.len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        off += (size_t)n;
    }
    buf_reset(&w->io.out);
    w->io.last_flush_us = clock_mono_us();
    return 0;
}

/* Decoding a large value fills fresh heap - the objects and strings, several times the text -
 * and here each first write to a fresh page is a fault that exits to the hypervisor. Taking
 * that much heap in pieces below malloc's mmap threshold, making each present with one
 * madvise and freeing them all costs a small fraction of those faults: the pieces merge back
 * into the top of the heap, which is never trimmed (see main), and the decoder's allocations
 * are carved from it. */
#define HEAP_READY_MIN    (16u << 10) /* smaller values fit in the heap already present */
#define HEAP_READY_FACTOR 8u
#define HEAP_READY_MAX    (16u << 20)
#define HEAP_READY_PIECE  (64u << 10)

void worker_heap_ready(size_t text_len, size_t cap)
{
    if (text_len < HEAP_READY_MIN) {
        return;
    }
    size_t bytes = text_len > HEAP_READY_MAX / HEAP_READY_FACTOR ? HEAP_READY_MAX
                                                                 : text_len * HEAP_READY_FACTOR;
    if (bytes > cap / 2) {
        bytes = cap / 2; /* never more than the guest could fill */
    }
    void *pieces[HEAP_READY_MAX / HEAP_READY_PIECE];
    size_t n = 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (; n * HEAP_READY_PIECE < bytes; n++) {
        char *p = malloc(HEAP_READY_PIECE);
        if (!p) {
            break;
        }
        pieces[n] = p;
        uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1);
        uintptr_t end = ((uintptr_t)p + HEAP_READY_PIECE) & ~(page - 1);
        (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
    }
    while (n > 0) {
        free(pieces[--n]);
    }
}

void worker_consume(struct worker *w, size_t frame_len)
{
    memmove(w->io.in.data, w->io.in.data + frame_len, w->io.in.len - frame_len);
    w->io.in.len -= frame_len;
}

int worker_wait_frame(struct worker *w, uint64_t deadline_us, uint8_t *ret_type,
                      struct wire_cursor *ret_cursor, size_t *ret_frame_len)
{
    if (worker_flush(w) != 0) {
        return -1;
    }
    /* Waiting inside a run (a deadline is set), we first poll the socket without sleeping for
     * a few microseconds: a host function that answers at once answers within that time, and
     * here a sleep and a wake-up cost more than the whole round trip. */
    uint64_t spin_until = deadline_us ? clock_mono_us() + WORKER_SPIN_US : 0;
    for (;;) {
        int r = wire_next(w->io.in.data, w->io.in.len, WORKER_MAX_FRAME, ret_type, ret_cursor,
                          ret_frame_len);
        if (r != 0) {
            return r;
        }
        enum buf_status st;
        char *p = buf_reserve(&w->io.in, 64 * 1024, &st);
        if (!p) {
            return -1;
        }
        ssize_t n = recv(w->io.fd, p, 64 * 1024, MSG_DONTWAIT);
        if (n > 0) {
            buf_commit(&w->io.in, (size_t)n);
            continue;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            return -1;
        }
        uint64_t now = clock_mono_us();
        if (deadline_us && now >= deadline_us) {
            return 0;
        }
        if (now < spin_until) {
            sched_yield(); /* lets the host run first where it shares our CPU */
            continue;
        }
        int timeout_ms = -1;
        if (deadline_us) {
            timeout_ms = (int)((deadline_us - now + 999) / 1000);
        }
        struct pollfd pfd = { .fd = w->io.fd, .events = POLLIN };
        if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR) {
            return -1;
        }
    }
}

struct worker_args {
    int fd;
    int no_jail; /* --no-jail: the host allows running without the seccomp filter */
    int doctor;  /* --doctor: report the jail's layers on fd and exit */
    int zygote;  /* --zygote: fd is a control socket; fork a prepared worker per request */
};

static int parse_args(int argc, char **argv, struct worker_args *a)
{
    a->fd = 3;
    a->no_jail = 0;
    a->doctor = 0;
    a->zygote = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--fd=", 5) == 0) {
            char *end = NULL;
            long v = strtol(argv[i] + 5, &end, 10);
            if (!end || *end != '\0' || v < 0 || v > 1024) {
                return -1;
            }
            a->fd = (int)v;
        } else if (strcmp(argv[i], "--no-jail") == 0) {
            a->no_jail = 1;
        } else if (strcmp(argv[i], "--doctor") == 0) {
            a->doctor = 1;
        } else if (strcmp(argv[i], "--zygote") == 0) {
            a->zygote = 1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* The zygote's writable private memory (heap, data, anonymous maps), listed once. A forked
 * worker breaks copy-on-write on all of it at once, one madvise per range, instead of taking
 * one page fault per page as it first writes each: on these (paravirtualized) machines every
 * fault is a costly exit, and this halves a warm run's latency. */
#define PREFAULT_MAX 64
static struct {
    uintptr_t start, end;
} prefault[PREFAULT_MAX];
static int nprefault;

static void prefault_scan(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        return;
    }
    char line[512];
    while (nprefault < PREFAULT_MAX && fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 && perms[0] == 'r' &&
            perms[1] == 'w' && perms[3] == 'p' && !strstr(line, "[stack]") &&
            end - start <= (16u << 20)) {
            prefault[nprefault].start = start;
            prefault[nprefault].end = end;
            nprefault++;
        }
    }
    fclose(f);
}

static void prefault_apply(void)
{
    for (int i = 0; i < nprefault; i++) {
        (void)madvise((void *)prefault[i].start, prefault[i].end - prefault[i].start,
                      MADV_POPULATE_WRITE); /* best effort: older kernels lack it */
    }
}

/* Zygote mode. The host sends one byte with a socket descriptor (SCM_RIGHTS) per worker it
 * wants; we fork a child that inherits our prepared, never-used context copy-on-write, with the
 * host as its parent (CLONE_PARENT) so the host reaps it like a worker it started itself, and
 * answer the child's pid (or -errno). Returns only in a child, with its host socket on fd 3;
 * exits when the host closes the control socket. No guest code ever runs in the zygote. */
static int zygote_serve(int ctrl)
{
    for (;;) {
        char byte;
        char ctl[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { &byte, 1 };
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl
        };
        ssize_t n = recvmsg(ctrl, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
        if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
            cm->cmsg_len != CMSG_LEN(sizeof(int))) {
            _exit(0); /* the host is gone, or spoke nonsense */
        }
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        /* A raw clone: fork()'s glibc wrapper cannot give the child another parent. */
        long pid = syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), 0, NULL, NULL, 0);
        if (pid == 0) {
            prefault_apply();
            close(ctrl);
            if (fd != 3) {
                dup2(fd, 3); /* dup2 clears close-on-exec, irrelevant here: no exec */
                close(fd);
            }
            return 3;
        }
        int32_t reply = pid > 0 ? (int32_t)pid : -errno;
        close(fd);
        if (send(ctrl, &reply, sizeof reply, MSG_NOSIGNAL) != (ssize_t)sizeof reply) {
            _exit(0);
        }
    }
}

int main(int argc, char **argv)
{
    struct worker w;
    memset(&w, 0, sizeof w);
    struct worker_args args;
    if (parse_args(argc, argv, &args) != 0) {
        return 2;
    }
    w.io.fd = args.fd;
    if (args.doctor) {
        _exit(jail_report(w.io.fd));
    }
    /* A dead host must end us through a failed send, not a signal. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* The heap is never given back: what worker_heap_ready made present must stay for the
     * allocations after it, and the process ends with its run anyway. */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    /* Room for the guest stack limit (at most 64 MiB) on the main thread. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < 80u * 1024 * 1024) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 80u * 1024 * 1024
                              ? 80u * 1024 * 1024
                              : rl.rlim_max;
        setrlimit(RLIMIT_STACK, &rl);
    }
    jail_namespaces();
    jail_enter();
    /* Dates are formatted in UTC: deterministic, no host time zone leaks in, and the zone is
     * loaded now, before the filter forbids opening files. */
    setenv("TZ", "UTC", 1);
    tzset();
    buf_init(&w.io.in, WORKER_MAX_FRAME + WIRE_HEADER_BYTES + 64 * 1024);
    buf_init(&w.io.out, SIZE_MAX / 2);
    buf_init(&w.bridge.deferred, SIZE_MAX / 2);
    sites_init(&w);
    int prepared = engine_prepare(&w) == 0;
    if (args.zygote) {
        if (!prepared) {
            _exit(1); /* the host falls back to starting workers itself */
        }
        prefault_scan();
        (void)jail_seccomp_build(3); /* for fd 3, the socket of every child (on failure,
                                        each child compiles the filter itself) */
        w.io.fd = zygote_serve(w.io.fd);
    }
    jail_no_children();
    /* From here on no guest byte runs outside the filter. */
    int jailed = !args.no_jail && jail_seccomp(w.io.fd) == 0;
    /* Sent even when preparing failed: the request then fails with a clear error. */
    size_t start;
    wire_begin(&w.io.out, WIRE_READY, &start);
    wire_u8(&w.io.out, jailed ? WIRE_READY_JAILED : 0);
    wire_end(&w.io.out, start);
    engine_run(&w, prepared);
    int rc = worker_flush(&w) == 0 ? 0 : 1;
    /* Exit without tearing the heap down: the process is gone anyway. */
    _exit(rc);
}
