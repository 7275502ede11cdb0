/*
 * nodes.h - what one airlockd does so that several of them can share one PostgreSQL database
 * (docs/server.md "Several nodes"): a node has an id (kept in DIR/node.id) and a lease on the
 * runs it executes, which it renews with a heartbeat in the store; a thread here renews it,
 * takes over the runs of nodes whose lease has run out, claims queued runs (runs started
 * without waiting, resumes and supervised starts whose approvals are decided, on any node) and
 * carries out on this node what another node decided about a run executing here (a cancel, a
 * revoked version). It looks when a listener on the store's wake-ups (STORE_CHANNEL_QUEUE,
 * STORE_CHANNEL_CANCEL) says there is something to see, and every poll_ms whatever it says.
 *
 * Threads: the nodes thread reads on a reader and hands its writes (the lease, takeovers,
 * claims) to the writer as jobs it waits for, and calls runs_cancel; it never blocks the
 * runner's event thread or the writer.
 */
#ifndef AIRLOCK_SERVER_NODES_H
#define AIRLOCK_SERVER_NODES_H

#include <stdint.h>

#include "airlock.h"

#include "readers.h"
#include "runs.h"
#include "secretbox.h"
#include "store.h"
#include "writer.h"

#define NODES_POLL_MS      250 /* the default of how often a node looks without a wake-up */
#define NODES_POLL_MIN_MS  10
#define NODES_POLL_MAX_MS  3600000
#define NODES_LEASE_MS     10000 /* the default lease */
#define NODES_LEASE_MIN_MS 500
#define NODES_LEASE_MAX_MS 3600000
#define NODES_ID_LEN       37 /* "node_" + 32 hex */

/* This node's id from DIR/node.id (16 random bytes as hex, made on the first start): the same
 * data directory is the same node across restarts. ret holds NODES_ID_LEN + 1 bytes. -1 with
 * reterr set (as keyfile_load). */
int nodes_id(const char *data_dir, char *ret, struct al_error *reterr);

/* Takes over the runs that `node` (NULL: no recorded node) left running. A run whose execution
 * had sent only calls to functions marked idempotent (or none) goes back to the queue, to be
 * executed again from the same start with the same idempotency keys (a run.retried record, at
 * most NODES_RETRIES_MAX times a run); any other is marked failed ABORTED with a run.abandoned
 * record naming the node, `reason` and the connector calls it had sent whose outcome is unknown
 * (function, idempotency key, whether the function is marked idempotent). A run cancelled while
 * `node` executed it, its end never recorded, gets its run.end (status cancelled) and is taken off
 * the node. A run another node ended or took over meanwhile is left alone. How many were taken over
 * (*ret_retried, when not NULL: how many of them were queued again; *ret_waiting, when not NULL:
 * how many wait for a person's decision on their calls in doubt), or -1 when the store failed
 * (errmsg says why). On the writer's connection (a writer job, or before the writer starts). */
int nodes_recover(struct store *s, const char *node, const char *reason, int *ret_retried,
                  int *ret_waiting);
/* One run of nodes_recover, in one transaction of its own (a savepoint inside a writer job).
 * `node` "" is the one node of SQLite (nothing to lock). A run that executed from its input
 * goes back to the queue unless a call it sent has no journaled answer and is not idempotent;
 * the node that claims it resumes it from its journal (api_run_go, a run.recover record). With
 * such calls it waits for a person instead (awaiting_approval, one approval of kind in_doubt per
 * call, a run.wait record listing calls_in_doubt; *ret_waiting 1 when ret_waiting is not NULL),
 * and the decisions resume it from its journal. A run resumed after a person's decisions goes on
 * from its journal the same way (its legs' answers are one journal; its sensitive calls keep
 * their decisions). A run whose start was not recorded (before 0010_journal) cannot be replayed
 * and ends failed ABORTED. `cancelled`: the reason of its cancel, or NULL. CONFLICT: ended or
 * taken meanwhile. */
enum store_rc nodes_take_over(struct store *s, const char *id, const char *department,
                              const char *node, const char *reason, const char *cancelled,
                              int *ret_retried, int *ret_waiting);

struct nodes;

/* Renews this node's lease at once (-1 with reterr set when the store refuses), then starts the
 * thread over `runs` (which must outlive it, as must secret_keys, the connectors' key): the
 * heartbeat every lease_ms / 3 (whatever poll_ms is), the takeover of expired nodes' runs, and
 * every poll_ms, at once when runs_kick is called or when a wake-up comes, the claims of queued
 * runs and the watch. With a store that has listeners (PostgreSQL) a second thread keeps one
 * (application_name "airlockd-listen") connected, reconnecting with a backoff, and after each
 * (re)connect the node looks at everything once. A node that could not renew its lease for
 * lease_ms cancels the runs it executes (another node may have taken them over). 0 with *ret;
 * -1 with reterr set (AL_INTERNAL_ERROR: the lease refused, out of memory, a thread not started).
 */
int nodes_start(struct writer *writer, struct readers *readers, struct runs *runs,
                struct secretbox_keys *secret_keys, const char *id, int64_t lease_ms,
                int64_t poll_ms, struct nodes **ret, struct al_error *reterr);
/* Stops the threads and frees them; returns once both have ended, at once even while the
 * listener connects. NULL-safe. The lease is left to run out (a drained node holds no run). */
void nodes_stop(struct nodes *n);

#endif
