/*
 * boundary.h - whether a value a person gives is one a connector could have answered: boundary
 * JSON (docs/values.md) that the worker's decoder takes. The decoder lives in the worker alone
 * (it builds QuickJS values; airlockd never links QuickJS), so the check is a tiny run of
 * airlockd's own on its runner: a host function answers the value and the guest reports whether
 * its call threw. The same decoder then takes the value when the run it is meant for resumes.
 */
#ifndef AIRLOCK_SERVER_BOUNDARY_H
#define AIRLOCK_SERVER_BOUNDARY_H

#include <stddef.h>

#include "airlock.h"

#define BOUNDARY_CHECK_TIMEOUT_MS 10000
#define BOUNDARY_CHECK_HEAP_BYTES ((uint64_t)256 << 20) /* decodes a 4 MiB answer of any shape */

/* Decodes json (len bytes, compact JSON) as the answer of a host call on a worker of runner,
 * blocking the calling thread for that run. 0 when it decodes; 1 when it does not, with the
 * decoder's reason in why (e.g. `offset 0: unknown tag "nope"`); -1 when the check could not run
 * (no worker, the runner's queue full), with why set. */
int boundary_check(struct al_runner *runner, const char *json, size_t len, char *why,
                   size_t why_len);

#endif
