/*
 * replays.h - replay before approval (docs/server.md "Replay before approval"): a submitted
 * version's source run against the journals of recent runs of the approved version it would
 * replace - the last REPLAYS_ENDED_MAX ended runs and the runs still waiting for a person - with
 * every answer taken from the journal and no connector ever called, under the stricter, per
 * limit, of the two versions' limits. The result (how many runs were replayed, how many made the
 * same calls, where the others diverged, which failed with which code) is kept with the version
 * (store replay_put) and answered by GET /v1/templates/{t}/versions/{v}/replay. It never holds
 * text the replayed source chose (an error message, a value): readers of a version are not
 * shown what unapproved code made of the journal's answers.
 *
 * Threads: one thread of its own takes the versions to replay in order, reads what it needs on a
 * reader, starts the replays on airlockd's runner (al_run_start: its workers, its limits and
 * admission) REPLAYS_PARALLEL at a time, judges each as it ends and frees what it held, and
 * records the result through the writer. No request thread and not the writer ever wait for a
 * replay: a request that wants the result is deferred and answered by that thread.
 *
 * The queue holds one job per template (its newest submitted version: an older one queued is
 * superseded), at most REPLAYS_QUEUED_MAX per department, and serves departments in turn; a
 * version no longer submitted, or superseded, when its turn comes is not replayed.
 */
#ifndef AIRLOCK_SERVER_REPLAYS_H
#define AIRLOCK_SERVER_REPLAYS_H

#include <stdint.h>

#include "airlock.h"

#include "buf.h"
#include "http.h"
#include "readers.h"
#include "writer.h"

#define REPLAYS_ENDED_MAX   20  /* the newest ended runs replayed */
#define REPLAYS_WAITING_MAX 100 /* the newest waiting runs replayed */
#define REPLAYS_PARALLEL    2   /* replays executing at once */
/* A whole replay's bound: what has not finished by then is cancelled and counted failed. */
#define REPLAYS_DEADLINE_MS 120000
/* How long a request waits for a replay under way before it is answered 202 "running". */
#define REPLAYS_WAIT_MS    30000
#define REPLAYS_QUEUED_MAX 16 /* replays of one department waiting their turn */
#define REPLAYS_RETRY_S    30 /* the Retry-After of a request refused for a full department */

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
/* Queues the replay of version `version` of template `template_name` of `department`, unless
 * it is queued or under way already; an older version of the template queued is superseded
 * (its waiters answered "superseded"), and one older than the version queued is not queued,
 * nor one beyond REPLAYS_QUEUED_MAX of the department (logged: it starts when it is asked
 * for). Any thread; never blocks on the replay. */
void replays_start(struct replays *r, const char *department, const char *template_name,
                   int64_t version);
/* Answers `d` with the replay of that version (200, the object GET .../replay answers) once it
 * is recorded, or 202 {"state":"running"} after REPLAYS_WAIT_MS; queues it (replays_start) when
 * it is neither queued nor under way. `d` is answered in every case: 200 "superseded" when a
 * newer version of the template is queued, 429 RATE_LIMITED (Retry-After REPLAYS_RETRY_S) when
 * the department's queue is full, 500 out of memory. */
void replays_wait(struct replays *r, const char *department, const char *template_name,
                  int64_t version, struct http_deferred *d);
/* Appends (with a newline) the object GET .../replay answers for a version with nothing
 * replayed: `state` "none" (never submitted, or decided before a replay was kept) or
 * "superseded" (a newer version of its template is submitted: only that one is replayed). */
void replays_put_empty(struct buf *b, const char *template_name, int64_t version,
                       const char *state);

#endif
