/*
 * denials.h - how airlockd records requests refused for their key (401: none on a route that
 * needs one, malformed, unknown or revoked) without letting a flood of them fill the audit log.
 * Refusals are counted per client address in memory, and an address gets at most one
 * auth.denied record per interval: the first refusal of an address without a record in the last
 * interval is recorded at once (count 1); the ones after it are folded into one summary, written
 * once an interval has passed since that address's last record (denials_flush, called every
 * second by the thread of denials_start) or at shutdown (denials_stop), so no count is lost when
 * airlockd stops.
 *
 * The table holds a fixed number of addresses, set at creation: an address whose last record is
 * an interval old and that has nothing waiting is forgotten first (forgetting it changes
 * nothing); when none is, refusals from further addresses are folded into one entry whose
 * address is "*", under the same rule. So a flood from any number of addresses causes at most
 * max_addresses + 1 records per interval, and memory is bounded.
 *
 * Time comes from a clock callback (wall clock, ms since the epoch) so tests drive it; NULL means
 * the real one. Every call is thread-safe (one mutex around the table).
 */
#ifndef AIRLOCK_SERVER_DENIALS_H
#define AIRLOCK_SERVER_DENIALS_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "http.h"

#define DENIALS_ADDRESSES_DEFAULT 1024 /* about 1.5 MiB */
#define DENIALS_INTERVAL_DEFAULT  60000
#define DENIALS_REASONS_MAX       4   /* distinct reasons kept in one record */
#define DENIALS_PATH_MAX          512 /* bytes of the path kept, as auth.denied always did */
#define DENIALS_OTHERS            "*" /* the address of refusals past a full table */

/* Now, in ms since the epoch. */
typedef int64_t denials_clock_fn(void *userdata);

/* One refusal, as the router saw it (borrowed for the call; any field may be NULL: ""). */
struct denials_refusal {
    const char *address; /* http_request.client */
    const char *method;
    const char *route;
    const char *path;
    const char *reason;
    const char *request_id;
};

/* What one auth.denied record says: the refusals of one address from first_ms to last_ms. The
 * request fields are those of the first of them; reasons are the distinct ones, in the order
 * they came (at most DENIALS_REASONS_MAX; reasons[0] is the first refusal's). */
struct denials_record {
    char address[HTTP_CLIENT_MAX]; /* the client address, or DENIALS_OTHERS */
    uint64_t count;                /* refusals recorded by this record, >= 1 */
    int64_t first_ms;              /* wall clock, ms since the epoch */
    int64_t last_ms;
    char method[16];
    char route[64];
    char path[DENIALS_PATH_MAX + 1];
    char request_id[HTTP_REQUEST_ID_LEN + 1];
    size_t nreasons;
    char reasons[DENIALS_REASONS_MAX][AUTH_WHY_MAX];
};

/* Writes one record (denials_flush's and denials_stop's); called with the table's mutex held:
 * it must not call back into the same struct denials. */
typedef void denials_write_fn(const struct denials_record *rec, void *userdata);

struct denials_options {
    int64_t interval_ms;     /* at most one record per address this often; >= 1 */
    size_t max_addresses;    /* the table's size; 0: DENIALS_ADDRESSES_DEFAULT */
    denials_clock_fn *clock; /* NULL: the wall clock */
    void *clock_userdata;
};

struct denials;

/* 0 on success (*ret_d owned by the caller, freed with denials_free); -1 for options out of
 * range or out of memory. */
int denials_new(const struct denials_options *opts, struct denials **ret_d);
/* Stops the thread if it runs (writing nothing: call denials_stop first), frees. NULL-safe. */
void denials_free(struct denials *d);

/* Counts one refusal. 1 when a record is due now: *ret_rec holds it (count >= 1, this refusal
 * included) for the caller to write; 0 when the refusal was folded into the address's next
 * summary. */
int denials_note(struct denials *d, const struct denials_refusal *r,
                 struct denials_record *ret_rec);
/* Writes the summaries that are due (all of them, due or not, when `all`) through write, and
 * forgets the addresses with nothing left to record. Returns the number of records written. */
size_t denials_flush(struct denials *d, int all, denials_write_fn *write, void *userdata);

/* Starts a thread that calls denials_flush(d, 0, write, userdata) every second. 0 on success. */
int denials_start(struct denials *d, denials_write_fn *write, void *userdata);
/* Stops that thread, then flushes everything waiting (all = 1) through the write given to
 * denials_start. NULL-safe; a no-op when the thread was never started. */
void denials_stop(struct denials *d);

/* The addresses in the table, plus 1 while refusals wait in the "*" entry (for tests). */
size_t denials_count(struct denials *d);

#endif
