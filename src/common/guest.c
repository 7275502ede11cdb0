/*
 * guest.c - the one list of globals a guest never has, whatever the engine version provides:
 * shared memory and its atomics, weak references and finalizers (observable GC), WebAssembly,
 * Node/QuickJS-libc facilities, timers, and QuickJS's real-time clock (a timer and a
 * determinism leak).
 */
#include "guest.h"

const char *const guest_removed_globals[] = {
    "SharedArrayBuffer",
    "Atomics",
    "WeakRef",
    "FinalizationRegistry",
    "WebAssembly",
    "process",
    "require",
    "fetch",
    "std",
    "os",
    "print",
    "scriptArgs",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "__date_clock",
};

const size_t guest_removed_globals_count =
        sizeof guest_removed_globals / sizeof guest_removed_globals[0];
