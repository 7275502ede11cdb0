/*
 * nodes.h - what one airlockd does so that several of them can share one PostgreSQL database:
 * a watcher thread that carries out, on the node that executes a run, what another node decided
 * about it (a cancel, a revoked version), read from the store within NODES_WATCH_MS.
 *
 * Threads: the watcher takes the store lock for each look at the store, as the HTTP thread
 * does, and calls runs_cancel; it never blocks the runner's event thread or the writer.
 */
#ifndef AIRLOCK_SERVER_NODES_H
#define AIRLOCK_SERVER_NODES_H

#include <pthread.h>

#include "runs.h"
#include "store.h"

#define NODES_WATCH_MS 250 /* how often the runs executing here are checked against the store */

struct nodes;

/* Starts the watcher over `runs` (which must outlive it). -1 with err (256 bytes) when the
 * thread cannot start. */
int nodes_start(struct store *store, pthread_mutex_t *store_lock, struct runs *runs,
                struct nodes **ret, char *err);
/* Stops the watcher and frees it; returns once the thread has ended. NULL-safe. */
void nodes_stop(struct nodes *n);

#endif
