/* guest.h - names the guest's global object must not have: removed by the worker before any
 * guest code runs, and refused as host-function group names by the runner. */
#ifndef AIRLOCK_GUEST_H
#define AIRLOCK_GUEST_H

#include <stddef.h>

extern const char *const guest_removed_globals[];
extern const size_t guest_removed_globals_count;

#endif
