/*
 * fault.h - crash points for the crash matrix (`make crashtest`, tests/integration/
 * test_crash_matrix.py), compiled into test builds only: with the CMake option
 * AIRLOCK_FAULT_HOOKS (on by default for Debug builds, the ones the tests and the sanitizer
 * build use; off for Release, `make install` and `make deb`) FAULT_POINT is a call of
 * fault_point, without it nothing at all - no code, no symbol, no environment read.
 *
 * A test build of airlockd started with AIRLOCK_CRASH_AT=BOUNDARY:CALL kills itself with
 * SIGKILL (raise, a real kill -9 of the real process: no handler, no flush, no atexit) when the
 * run it executes reaches BOUNDARY for its call number CALL: the guest's call id, the N of the
 * idempotency key RUN:N, counted from 1 in the order the guest made its calls (not the journal's
 * position, the order answers reached it; the two agree for calls made one after the other).
 * Every run of that airlockd is watched; the tests run one at a time. The boundaries, in the
 * order a call meets them (docs/server.md "Durable runs"):
 *
 *   before_mark     the call reached airlockd (runs_host) and nothing of it has been recorded
 *                   or has left yet: it is about to be marked sent (or, for a call not marked,
 *                   sent; or held until its run's start record is durable)
 *   after_send      the connector has answered it (so it was sent and received), and the answer
 *                   has not reached the run yet (runs_call_done): nothing of it is journaled
 *   after_journal   the writer's commit holding its answer is durable, and the answer is still
 *                   held from the guest (runs_journal_done, before al_run_journal_release)
 *   after_delivery  the guest had its answer: its next call reached airlockd (nothing of that
 *                   one recorded yet), or, for its last call, the run ended (before its end is
 *                   recorded)
 *
 * Before anything is killed, one line goes to stderr: {"log":"fault","crash_at":"after_send:10"}.
 */
#ifndef AIRLOCK_SERVER_FAULT_H
#define AIRLOCK_SERVER_FAULT_H

#include <stdint.h>

enum fault_boundary {
    FAULT_BEFORE_MARK = 0,
    FAULT_AFTER_SEND,
    FAULT_AFTER_JOURNAL,
    FAULT_AFTER_DELIVERY,
};

#ifdef AIRLOCK_FAULT_HOOKS
/* Reads AIRLOCK_CRASH_AT once, before any thread starts: 0 (set and valid, or not set), -1 when
 * it is set to anything but BOUNDARY:CALL with CALL from 1. */
int fault_init(void);
/* SIGKILLs the process when (at, call) is the point AIRLOCK_CRASH_AT names; any thread. */
void fault_point(enum fault_boundary at, uint32_t call);
#define FAULT_INIT()          fault_init()
#define FAULT_POINT(at, call) fault_point((at), (call))
#else
#define FAULT_INIT()          0
#define FAULT_POINT(at, call) ((void)0)
#endif

#endif
