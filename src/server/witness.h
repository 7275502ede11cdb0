/*
 * witness.h - delivery of the audit log's checkpoints to a witness: an HTTP URL (config
 * audit.witness) on a machine the database cannot reach, which keeps what it is sent. Each
 * checkpoint goes as a POST of its JSON (the object GET /v1/audit/checkpoint answers), signed as
 * a connector call is (connector.h: X-Airlock-Signature over the timestamp and the body with
 * audit.witness_secret). A witness that answers anything but 2xx, or not at all, is tried again
 * in the background with a growing delay; nothing ever waits for it. Only the newest checkpoint
 * not yet delivered is kept for it: a newer checkpoint covers every record an older one does.
 */
#ifndef AIRLOCK_SERVER_WITNESS_H
#define AIRLOCK_SERVER_WITNESS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#define WITNESS_TIMEOUT_MS   5000 /* one delivery, connection included */
#define WITNESS_RETRY_MS     1000 /* the first retry's delay, doubled up to WITNESS_RETRY_MAX_MS */
#define WITNESS_RETRY_MAX_MS 60000

struct witness;

/* Starts the thread that delivers to url (http or https) signed with secret. -1 with reterr
 * set when out of memory or the HTTP client cannot start. */
int witness_new(const char *url, const char *secret, struct witness **ret, struct al_error *reterr);
/* Queues the checkpoint of `seq` (json: len bytes) for delivery, replacing an older one not
 * delivered yet; an older seq than one queued or delivered is ignored. Never blocks on the
 * network. Thread-safe; w may be NULL (no witness). */
void witness_send(struct witness *w, int64_t seq, const char *json, size_t len);
/* Deliveries that failed since the start. */
uint64_t witness_failures(struct witness *w);
/* Waits for a delivery in flight, tries once what is still queued (each bounded by
 * WITNESS_TIMEOUT_MS), stops the thread and frees. NULL-safe. */
void witness_free(struct witness *w);

#endif
