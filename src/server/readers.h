/*
 * readers.h - connections for reading, one per thread that reads at a time: the request
 * threads, a streamed answer's pages, the nodes thread. Each is the writer's database opened
 * again (store.h open_reader): it sees what is committed - which is durable - and can write
 * nothing. Taken for one request or one page and given back, never held across a wait.
 */
#ifndef AIRLOCK_SERVER_READERS_H
#define AIRLOCK_SERVER_READERS_H

#include <stddef.h>

#include "airlock.h"

#include "store.h"

struct readers;

/* A pool of up to `max` readers of `store`'s database (opened as needed). -1 with reterr set
 * when not even the first can be opened (AL_INTERNAL_ERROR; AL_CONFIG_ERROR for max 0). */
int readers_new(struct store *store, size_t max, struct readers **ret, struct al_error *reterr);
/* Closes every reader; all must have been given back. NULL-safe. */
void readers_free(struct readers *r);
/* A reader for this thread's use until readers_give: an idle one, a new one while fewer than
 * max are open, else the first given back. NULL when a new one cannot be opened (logged). */
struct store *readers_take(struct readers *r);
void readers_give(struct readers *r, struct store *s);

#endif
