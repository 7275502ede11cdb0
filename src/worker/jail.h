/* jail.h - process-level limits of a worker (see jail.c). */
#ifndef AIRLOCK_JAIL_H
#define AIRLOCK_JAIL_H

#include <stdint.h>

/* New namespaces where the kernel allows; returns the JAIL_NS_* that held. First thing at
 * start-up, while the process is single-threaded. */
#define JAIL_NS_USER  1u
#define JAIL_NS_NET   2u
#define JAIL_NS_IPC   4u
#define JAIL_NS_MOUNT 8u
unsigned jail_namespaces(void);
/* At start-up, before anything else: privileges, dumps, descriptors. */
void jail_enter(void);
/* No child processes (a zygote applies this in each worker it forks, not to itself). */
void jail_no_children(void);
/* When the request arrives: address space above the heap limit, and a CPU backstop. */
void jail_limit_run(uint64_t heap_bytes, uint64_t cpu_ms);
/* After the context is prepared, before any request: the seccomp allow-list. A forbidden call
 * sends a FAULT frame on host_fd and exits with JAIL_EXIT_FAULT. 0, or -1 when the kernel
 * refused the filter. */
#define JAIL_EXIT_FAULT 111
int jail_seccomp(int host_fd);
/* Compiles the filter jail_seccomp installs (host_fd is the socket it will allow), once: a
 * zygote does this before forking, so its workers only install it. 0, or -1 on failure. */
int jail_seccomp_build(int host_fd);
/* `airlock-worker --doctor`: applies the jail as a worker does and writes one line per layer to
 * fd. 0 when the seccomp filter is active, else 1. */
int jail_report(int fd);
/* Defined only in the test build airlock-worker-probe (tests/jail/probe.c): attempts the
 * forbidden call a source names, after the jail is applied. 1 if the call came back. */
int jail_probe(const char *source) __attribute__((weak));

#endif
