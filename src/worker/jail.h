/* jail.h - process-level limits of a worker (see jail.c). */
#ifndef AIRLOCK_JAIL_H
#define AIRLOCK_JAIL_H

#include <stdint.h>

/* At start-up, before anything else: privileges, dumps, descriptors, processes. */
void jail_enter(void);
/* When the request arrives: address space above the heap limit, and a CPU backstop. */
void jail_limit_run(uint64_t heap_bytes, uint64_t cpu_ms);

#endif
