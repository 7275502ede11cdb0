/*
 * webhooks.h - notifications by webhook (docs/webhooks.md): the events airlockd tells an admin's
 * receivers about, written to an outbox in the transaction of what caused them, and the thread
 * of each node that delivers them, signed as a connector call is, until the receiver answers 2xx
 * (at least once, the same event id on every attempt) or a day has passed. Sending never holds
 * up a run or a request: it happens on the delivery thread, after the commit, outside any
 * transaction.
 */
#ifndef AIRLOCK_SERVER_WEBHOOKS_H
#define AIRLOCK_SERVER_WEBHOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "secretbox.h"
#include "store.h"

/* The event types, exactly as a webhook names them. */
#define WEBHOOKS_APPROVAL_REQUESTED "approval.requested"
#define WEBHOOKS_APPROVAL_DECIDED   "approval.decided"
#define WEBHOOKS_VERSION_SUBMITTED  "version.submitted"
#define WEBHOOKS_VERSION_APPROVED   "version.approved"
#define WEBHOOKS_RUN_FAILED         "run.failed"
#define WEBHOOKS_AUDIT_TRUNCATED    "audit.truncated"

#define WEBHOOKS_RETRY_FIRST_MS  5000               /* the first retry's delay, by default */
#define WEBHOOKS_RETRY_MAX_MS    (3600 * 1000)      /* retries double up to an hour apart ... */
#define WEBHOOKS_GIVE_UP_MS      (24 * 3600 * 1000) /* ... for a day after the event */
#define WEBHOOKS_SEND_TIMEOUT_MS 10000              /* one attempt, connection included */

extern const char *const webhooks_types[];
extern const size_t webhooks_types_count;

/* 1 when s (len bytes) is one of webhooks_types. */
int webhooks_type_ok(const char *s, size_t len);

/* Writes event `type` of `department` (NULL: none, only webhooks of "*" get it) to the outbox,
 * one delivery per webhook subscribed, on s inside the caller's transaction. data_json is a JSON
 * object (the event's "data"), link_path the desk's page of the item ("/runs/run_..."), made a
 * URL under the delivering node's public_url when sent. STORE_OK or the store's failure (or
 * STORE_ERROR when the random generator or memory fails). */
enum store_rc webhooks_emit(struct store *s, const char *type, const char *department,
                            const char *link_path, const char *data_json);

/* The events, each written by webhooks_emit with its data and link (docs/webhooks.md). */
enum store_rc webhooks_approval_requested(struct store *s, const char *approval, const char *run,
                                          const char *department, const char *kind,
                                          const char *function);
enum store_rc webhooks_approval_decided(struct store *s, const char *approval, const char *run,
                                        const char *department, const char *decision,
                                        const char *by);
/* type: WEBHOOKS_VERSION_SUBMITTED or WEBHOOKS_VERSION_APPROVED */
enum store_rc webhooks_version(struct store *s, const char *type, const char *template_name,
                               int64_t version, const char *department, const char *by);
enum store_rc webhooks_run_failed(struct store *s, const char *run, const char *department,
                                  const char *template_name, int64_t version,
                                  const char *principal);
enum store_rc webhooks_audit_truncated(struct store *s, int64_t seq, const char *reason);

/* The delay before attempt `attempts` + 1 when `attempts` have failed: first_ms, then doubling,
 * at most WEBHOOKS_RETRY_MAX_MS. */
int64_t webhooks_retry_delay_ms(int64_t first_ms, int64_t attempts);

struct writer;
struct readers;
struct webhooks;

struct webhooks_options {
    const char *public_url;             /* the desk's base URL, no trailing slash (copied) */
    const char *node;                   /* this node's id, "" for one node (copied) */
    int64_t retry_first_ms;             /* 0: WEBHOOKS_RETRY_FIRST_MS */
    int64_t poll_ms;                    /* how often the outbox is looked at */
    struct secretbox_keys *secret_keys; /* opens the signing secrets (outlives the thread) */
};

/* Starts the delivery thread: it claims due deliveries through the writer, reads the outbox on a
 * reader and sends with libcurl. -1 with reterr set on failure. */
int webhooks_start(struct writer *w, struct readers *r, const struct webhooks_options *o,
                   struct webhooks **ret, struct al_error *reterr);
/* Stops the thread (an attempt under way ends within WEBHOOKS_SEND_TIMEOUT_MS; its delivery is
 * claimed again once its lease runs out) and frees. NULL-safe. */
void webhooks_stop(struct webhooks *wh);

#endif
