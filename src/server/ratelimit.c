/*
 * ratelimit.c - the token buckets behind ratelimit.h. The table is set-associative: a key's
 * hash picks a set of RATELIMIT_WAYS slots and the key lives in one of them, so a lookup and an
 * eviction look at eight slots and nothing ever grows.
 *
 * A bucket is kept as the generic cell rate algorithm's one number, in integer ns (so no
 * rounding lets a token appear early): `tat`, when the bucket would be full again. A request at
 * `now` is allowed when tat - now <= (burst - 1) * interval, interval = 1 s / per_second, and
 * then adds one interval to max(tat, now); refused, it waits until that holds. This is exactly
 * a token bucket of `burst` tokens gaining `per_second` a second, and a bucket is idle (free to
 * reuse, forgetting it changes nothing) exactly when tat <= now. It never allocates after
 * ratelimit_new and never blocks but on its own mutex.
 */
#include "ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATELIMIT_WAYS 8

struct ratelimit_bucket {
    uint64_t hash;    /* 0: slot unused */
    uint64_t tat_ns;  /* when the bucket is full again; clock time */
    uint64_t used_ns; /* its last request, for least-recently-used eviction */
    char key[RATELIMIT_KEY_MAX + 1];
};

struct ratelimit {
    pthread_mutex_t lock;
    uint64_t interval_ns; /* one token's worth of time */
    uint64_t tau_ns;      /* (burst - 1) intervals: how far tat may run ahead of now */
    uint64_t seed;
    size_t nsets;
    ratelimit_clock_fn *clock;
    void *clock_userdata;
    struct ratelimit_bucket *slots; /* nsets * RATELIMIT_WAYS */
};

static uint64_t ratelimit_clock_mono(void *userdata)
{
    struct timespec ts;
    (void)userdata;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* FNV-1a over the seed's bytes then the key's, finished with a 64-bit mixer (splitmix64). */
static uint64_t ratelimit_hash(uint64_t seed, const char *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < 8; i++) {
        h = (h ^ ((seed >> (8 * i)) & 0xff)) * 0x100000001b3u;
    }
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3u;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    h ^= h >> 31;
    return h ? h : 1;
}

int ratelimit_new(const struct ratelimit_options *opts, struct ratelimit **ret_rl)
{
    struct ratelimit *rl = NULL;
    size_t max = opts->max_buckets ? opts->max_buckets : RATELIMIT_BUCKETS_DEFAULT;
    if (!(opts->per_second > 0) || !(opts->burst >= 1) || !isfinite(opts->per_second) ||
        !isfinite(opts->burst) || max > ((size_t)1 << 24)) {
        return -1;
    }
    rl = calloc(1, sizeof *rl);
    if (!rl) {
        return -1;
    }
    rl->nsets = (max + RATELIMIT_WAYS - 1) / RATELIMIT_WAYS;
    rl->slots = calloc(rl->nsets * RATELIMIT_WAYS, sizeof *rl->slots);
    if (!rl->slots || pthread_mutex_init(&rl->lock, NULL) != 0) {
        free(rl->slots);
        free(rl);
        return -1;
    }
    /* Saturated so the sums below cannot wrap (1e16 ns is some 115 days). */
    double interval = 1e9 / opts->per_second;
    double tau = (opts->burst - 1) * (interval < 1 ? 1 : interval);
    rl->interval_ns = interval < 1 ? 1 : interval > 1e16 ? (uint64_t)1e16 : (uint64_t)interval;
    rl->tau_ns = tau > 1e18 ? (uint64_t)1e18 : (uint64_t)tau;
    rl->seed = opts->seed;
    rl->clock = opts->clock ? opts->clock : ratelimit_clock_mono;
    rl->clock_userdata = opts->clock_userdata;
    *ret_rl = rl;
    return 0;
}

void ratelimit_free(struct ratelimit *rl)
{
    if (!rl) {
        return;
    }
    pthread_mutex_destroy(&rl->lock);
    free(rl->slots);
    free(rl);
}

/* The slot of key in its set: the key's own, else an unused one, else an idle one (full again
 * at now), else the one used longest ago; the last three start as a full bucket. */
static struct ratelimit_bucket *ratelimit_slot(struct ratelimit *rl, const char *key, size_t len,
                                               uint64_t now)
{
    uint64_t h = ratelimit_hash(rl->seed, key, len);
    struct ratelimit_bucket *set = &rl->slots[(h % rl->nsets) * RATELIMIT_WAYS];
    struct ratelimit_bucket *pick = NULL;
    int pick_rank = 3; /* 0 unused, 1 idle, 2 least recently used */
    for (size_t i = 0; i < RATELIMIT_WAYS; i++) {
        struct ratelimit_bucket *b = &set[i];
        if (b->hash == h && strncmp(b->key, key, RATELIMIT_KEY_MAX) == 0) {
            return b;
        }
        int rank = b->hash == 0 ? 0 : b->tat_ns <= now ? 1 : 2;
        if (rank < pick_rank || (rank == 2 && pick_rank == 2 && b->used_ns < pick->used_ns)) {
            pick = b;
            pick_rank = rank;
        }
    }
    pick->hash = h;
    pick->tat_ns = now;
    pick->used_ns = now;
    memcpy(pick->key, key, len);
    pick->key[len] = '\0';
    return pick;
}

int ratelimit_take(struct ratelimit *rl, const char *key, unsigned *ret_retry_after_s)
{
    size_t len = strnlen(key, RATELIMIT_KEY_MAX);
    int limited = 0;
    pthread_mutex_lock(&rl->lock);
    uint64_t now = rl->clock(rl->clock_userdata);
    struct ratelimit_bucket *b = ratelimit_slot(rl, key, len, now);
    uint64_t tat = b->tat_ns > now ? b->tat_ns : now;
    b->used_ns = now;
    if (tat - now <= rl->tau_ns) {
        b->tat_ns = tat + rl->interval_ns;
    } else {
        uint64_t wait_s = (tat - now - rl->tau_ns + 999999999u) / 1000000000u;
        limited = 1;
        *ret_retry_after_s = wait_s < 1                           ? 1
                             : wait_s > RATELIMIT_RETRY_AFTER_MAX ? RATELIMIT_RETRY_AFTER_MAX
                                                                  : (unsigned)wait_s;
    }
    pthread_mutex_unlock(&rl->lock);
    return limited;
}

size_t ratelimit_count(struct ratelimit *rl)
{
    size_t n = 0;
    pthread_mutex_lock(&rl->lock);
    for (size_t i = 0; i < rl->nsets * RATELIMIT_WAYS; i++) {
        n += rl->slots[i].hash != 0;
    }
    pthread_mutex_unlock(&rl->lock);
    return n;
}
