/*
 * replays.h - replay before approval (docs/server.md "Replay before approval"): a submitted
 * version's source run against the journals of recent runs of the approved version it would
 * replace - the last REPLAYS_ENDED_MAX ended runs and the runs still waiting for a person - with
 * every answer taken from the journal and no connector ever called. The result (how many runs
 * were replayed, how many made the same calls, where the others diverged or failed) is kept
 * with the version (store replay_put) and answered by GET /v1/templates/{t}/versions/{v}/replay.
 *
 * Threads: one thread of its own takes the versions to replay in order, reads what it needs on a
 * reader, starts the replays on airlockd's runner (al_run_start: its workers, its limits and
 * admission) REPLAYS_PARALLEL at a time and records the result through the writer. No request
 * thread and not the writer ever wait for a replay: a request that wants the result is deferred
 * and answered by that thread.
 */
#ifndef AIRLOCK_SERVER_REPLAYS_H
#define AIRLOCK_SERVER_REPLAYS_H

#include <stdint.h>

#include "airlock.h"

#include "http.h"
#include "readers.h"
#include "writer.h"

#define REPLAYS_ENDED_MAX   20  /* the newest ended runs replayed */
#define REPLAYS_WAITING_MAX 100 /* the newest waiting runs replayed */
#define REPLAYS_PARALLEL    2   /* replays executing at once */
/* A whole replay's bound: what has not finished by then is cancelled and counted failed. */
#define REPLAYS_DEADLINE_MS 120000
/* How long a request waits for a replay under way before it is answered 202 "running". */
#define REPLAYS_WAIT_MS 30000

struct replays;

/* The replays of one airlockd: on `runner`, reading on `readers`, recording through `writer`
 * (all three outlive it). -1 with reterr set (AL_INTERNAL_ERROR) when its thread cannot start. */
int replays_new(struct al_runner *runner, struct readers *readers, struct writer *writer,
                struct replays **ret, struct al_error *reterr);
/* Cancels what replays, answers every request still waiting (500 INTERNAL) and stops the
 * thread; from then on a request is answered so at once. Before http_stop (it answers deferred
 * requests) and while the writer, the readers and the runner still exist. NULL-safe. */
void replays_stop(struct replays *r);
/* Stops (replays_stop) and frees: once no request thread can reach r (after http_stop). */
void replays_free(struct replays *r);
/* Replays version `version` of template `template_name` after the replays already queued,
 * unless it is queued or under way already. Any thread; never blocks on the replay. */
void replays_start(struct replays *r, const char *template_name, int64_t version);
/* Answers `d` with the replay of that version (200, the object GET .../replay answers) once it
 * is recorded, or 202 {"state":"running"} after REPLAYS_WAIT_MS; starts it (replays_start) when
 * it is neither queued nor under way. `d` is answered in every case (500 out of memory). */
void replays_wait(struct replays *r, const char *template_name, int64_t version,
                  struct http_deferred *d);

#endif
