/*
 * ratelimit.h - airlockd's per-caller rate limit: one token bucket per key (an API key's prefix,
 * or a client address for requests without a valid key), all with the same rate and burst.
 *
 * A bucket starts full (burst tokens), gains per_second tokens each second up to burst, and
 * each request takes one token; a request finding less than one is refused, with the whole
 * seconds until a token is there (at least 1). Buckets live in a table of fixed size, set at
 * creation and never grown: when a key's set is full, a bucket that has refilled to burst is
 * reused first (forgetting it changes nothing), else the one used longest ago. So memory is
 * bounded whatever the number of callers; a caller forced out under pressure starts full again.
 *
 * Time comes from a clock callback (ns, monotonic) so tests drive it explicitly; NULL means
 * CLOCK_MONOTONIC. Every call is thread-safe (one mutex around the table).
 */
#ifndef AIRLOCK_SERVER_RATELIMIT_H
#define AIRLOCK_SERVER_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#define RATELIMIT_KEY_MAX         63    /* longer keys are cut: the caller makes them unique */
#define RATELIMIT_BUCKETS_DEFAULT 16384 /* about 1.5 MiB */
#define RATELIMIT_RETRY_AFTER_MAX 86400 /* s: what Retry-After says at most */

/* Now, in ns on a monotonic clock. */
typedef uint64_t ratelimit_clock_fn(void *userdata);

struct ratelimit;

struct ratelimit_options {
    double per_second;         /* tokens gained per second; > 0 */
    double burst;              /* a bucket's size; >= 1 */
    size_t max_buckets;        /* the table's size, rounded up to a multiple of 8; 0: the default */
    uint64_t seed;             /* mixes the key hash, so outsiders cannot aim keys at one set */
    ratelimit_clock_fn *clock; /* NULL: CLOCK_MONOTONIC */
    void *clock_userdata;
};

/* A new limiter with all buckets empty of callers. 0 on success (*ret_rl then owned by the
 * caller, freed with ratelimit_free); -1 for options out of range or out of memory. */
int ratelimit_new(const struct ratelimit_options *opts, struct ratelimit **ret_rl);
/* NULL-safe. */
void ratelimit_free(struct ratelimit *rl);

/* Takes one token from key's bucket (NUL-terminated). 0 when the request may go on; otherwise
 * 1 and *ret_retry_after_s holds the seconds (1..RATELIMIT_RETRY_AFTER_MAX) until it would. */
int ratelimit_take(struct ratelimit *rl, const char *key, unsigned *ret_retry_after_s);

/* The number of buckets holding a caller (for tests). */
size_t ratelimit_count(struct ratelimit *rl);

#endif
