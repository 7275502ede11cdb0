/*
 * probe.c - linked only into airlock-worker-probe, a test build of the worker (never shipped).
 * It defines jail_probe(), which the worker calls after its jail is applied: a source naming
 * "jail-probe:WHAT" makes the worker attempt that forbidden system call directly, as a guest
 * that had subverted QuickJS would. Each must be stopped by the filter; if the call returns,
 * the probe reports that it survived and the test fails.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail.h"

int jail_probe(const char *source)
{
    const char *p = strstr(source, "jail-probe:");
    if (!p) {
        return 0;
    }
    p += strlen("jail-probe:");
    if (strncmp(p, "open", 4) == 0) {
        syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
    } else if (strncmp(p, "socket", 6) == 0) {
        syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    } else if (strncmp(p, "connect", 7) == 0) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        syscall(SYS_connect, 3, &a, sizeof a);
    } else if (strncmp(p, "execve", 6) == 0) {
        char *argv[] = { (char *)"/bin/sh", NULL };
        char *envp[] = { NULL };
        syscall(SYS_execve, "/bin/sh", argv, envp);
    } else if (strncmp(p, "fork", 4) == 0) {
        syscall(SYS_fork);
    } else if (strncmp(p, "clone", 5) == 0) {
        syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    } else if (strncmp(p, "ptrace", 6) == 0) {
        syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
    } else if (strncmp(p, "kill:", 5) == 0) {
        syscall(SYS_kill, (pid_t)strtol(p + 5, NULL, 10), SIGKILL); /* the host process */
    } else if (strncmp(p, "mprotect-exec", 13) == 0) {
        void *page = aligned_alloc(4096, 4096);
        syscall(SYS_mprotect, page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
    } else if (strncmp(p, "mmap-exec", 9) == 0) {
        syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    } else if (strncmp(p, "write-stderr", 12) == 0) {
        syscall(SYS_write, 2, "x", 1);
    } else if (strncmp(p, "read-stdin", 10) == 0) {
        char c;
        syscall(SYS_read, 0, &c, 1);
    } else {
        return 0;
    }
    return 1; /* the call came back: the jail did not stop it */
}
