/*
 * denials.c - the per-address tally of refused requests behind denials.h. An entry remembers
 * when its address was last recorded and the refusals waiting for the next record; a record is
 * due when the last one is an interval old (or there was none). The table is a plain array
 * scanned under the mutex: refusals reaching it are already limited per address by the router's
 * bucket, and it never allocates after denials_new. A wall clock that steps back makes an entry
 * due at once rather than holding it until the clock catches up.
 */
#include "denials.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#define DENIALS_NEVER INT64_MIN

struct denials_entry {
    int used;
    int64_t recorded_ms;          /* its last record; DENIALS_NEVER: none yet */
    struct denials_record record; /* count 0: nothing waiting (address kept) */
};

struct denials {
    pthread_mutex_t lock;
    int64_t interval_ms;
    size_t max;
    denials_clock_fn *clock;
    void *clock_userdata;
    struct denials_entry *entries; /* max of them */
    struct denials_entry others;   /* refusals from addresses past a full table */
    /* the flushing thread */
    pthread_cond_t wake;
    int started;
    int stopping;
    pthread_t thread;
    denials_write_fn *write;
    void *write_userdata;
};

static int64_t denials_clock_wall(void *userdata)
{
    (void)userdata;
    return clock_wall_ms();
}

int denials_new(const struct denials_options *opts, struct denials **ret_d)
{
    size_t max = opts->max_addresses ? opts->max_addresses : DENIALS_ADDRESSES_DEFAULT;
    if (opts->interval_ms < 1 || max > ((size_t)1 << 20)) {
        return -1;
    }
    struct denials *d = calloc(1, sizeof *d);
    if (!d) {
        return -1;
    }
    d->entries = calloc(max, sizeof *d->entries);
    if (!d->entries) {
        free(d);
        return -1;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&d->lock, NULL) != 0 || pthread_cond_init(&d->wake, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        free(d->entries);
        free(d);
        return -1;
    }
    pthread_condattr_destroy(&attr);
    d->interval_ms = opts->interval_ms;
    d->max = max;
    d->clock = opts->clock ? opts->clock : denials_clock_wall;
    d->clock_userdata = opts->clock_userdata;
    d->others.used = 1;
    d->others.recorded_ms = DENIALS_NEVER;
    snprintf(d->others.record.address, sizeof d->others.record.address, "%s", DENIALS_OTHERS);
    *ret_d = d;
    return 0;
}

void denials_free(struct denials *d)
{
    if (!d) {
        return;
    }
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->stopping = 1;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
    }
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->lock);
    free(d->entries);
    free(d);
}

static int denials_due(const struct denials *d, const struct denials_entry *e, int64_t now)
{
    return e->recorded_ms == DENIALS_NEVER || now < e->recorded_ms ||
           now - e->recorded_ms >= d->interval_ms;
}

/* The entry of address: its own, else a free one (never used, or with nothing waiting and no
 * record in the last interval), else the "*" entry. */
static struct denials_entry *denials_entry(struct denials *d, const char *address, int64_t now)
{
    struct denials_entry *free_slot = NULL;
    for (size_t i = 0; i < d->max; i++) {
        struct denials_entry *e = &d->entries[i];
        if (e->used && strcmp(e->record.address, address) == 0) {
            return e;
        }
        if (!free_slot && (!e->used || (e->record.count == 0 && denials_due(d, e, now)))) {
            free_slot = e;
        }
    }
    if (!free_slot) {
        return &d->others;
    }
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->used = 1;
    free_slot->recorded_ms = DENIALS_NEVER;
    snprintf(free_slot->record.address, sizeof free_slot->record.address, "%s", address);
    return free_slot;
}

/* Folds one refusal into the record waiting in e. */
static void denials_fold(struct denials_record *rec, const struct denials_refusal *r, int64_t now)
{
    const char *reason = r->reason ? r->reason : "";
    if (rec->count == 0) {
        rec->first_ms = now;
        snprintf(rec->method, sizeof rec->method, "%s", r->method ? r->method : "");
        snprintf(rec->route, sizeof rec->route, "%s", r->route ? r->route : "");
        snprintf(rec->path, sizeof rec->path, "%s", r->path ? r->path : "");
        snprintf(rec->request_id, sizeof rec->request_id, "%s", r->request_id ? r->request_id : "");
        rec->nreasons = 0;
    }
    rec->count++;
    rec->last_ms = now;
    for (size_t i = 0; i < rec->nreasons; i++) {
        if (strncmp(rec->reasons[i], reason, AUTH_WHY_MAX - 1) == 0) {
            return;
        }
    }
    if (rec->nreasons < DENIALS_REASONS_MAX) {
        snprintf(rec->reasons[rec->nreasons++], AUTH_WHY_MAX, "%s", reason);
    }
}

int denials_note(struct denials *d, const struct denials_refusal *r, struct denials_record *ret_rec)
{
    int due = 0;
    pthread_mutex_lock(&d->lock);
    int64_t now = d->clock(d->clock_userdata);
    struct denials_entry *e = denials_entry(d, r->address ? r->address : "", now);
    denials_fold(&e->record, r, now);
    if (denials_due(d, e, now)) {
        *ret_rec = e->record;
        e->record.count = 0;
        e->recorded_ms = now;
        due = 1;
    }
    pthread_mutex_unlock(&d->lock);
    return due;
}

/* Writes e's waiting record when due (or `all`); forgets an entry with nothing left. */
static size_t denials_flush_entry(struct denials *d, struct denials_entry *e, int64_t now, int all,
                                  denials_write_fn *write, void *userdata)
{
    if (!e->used) {
        return 0;
    }
    int due = denials_due(d, e, now);
    if (e->record.count > 0 && (all || due)) {
        write(&e->record, userdata);
        e->record.count = 0;
        e->recorded_ms = now;
        return 1;
    }
    if (e->record.count == 0 && due && e != &d->others) {
        e->used = 0;
    }
    return 0;
}

size_t denials_flush(struct denials *d, int all, denials_write_fn *write, void *userdata)
{
    size_t n = 0;
    pthread_mutex_lock(&d->lock);
    int64_t now = d->clock(d->clock_userdata);
    for (size_t i = 0; i < d->max; i++) {
        n += denials_flush_entry(d, &d->entries[i], now, all, write, userdata);
    }
    n += denials_flush_entry(d, &d->others, now, all, write, userdata);
    pthread_mutex_unlock(&d->lock);
    return n;
}

static void *denials_thread(void *arg)
{
    struct denials *d = arg;
    pthread_setname_np(pthread_self(), "airlockd-denial");
    pthread_mutex_lock(&d->lock);
    while (!d->stopping) {
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_sec += 1;
        pthread_cond_timedwait(&d->wake, &d->lock, &at);
        if (d->stopping) {
            break;
        }
        pthread_mutex_unlock(&d->lock);
        denials_flush(d, 0, d->write, d->write_userdata);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

int denials_start(struct denials *d, denials_write_fn *write, void *userdata)
{
    d->write = write;
    d->write_userdata = userdata;
    if (pthread_create(&d->thread, NULL, denials_thread, d) != 0) {
        return -1;
    }
    d->started = 1;
    return 0;
}

void denials_stop(struct denials *d)
{
    if (!d || !d->started) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    d->stopping = 1;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    d->started = 0;
    denials_flush(d, 1, d->write, d->write_userdata);
}

size_t denials_count(struct denials *d)
{
    size_t n = 0;
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < d->max; i++) {
        n += d->entries[i].used;
    }
    n += d->others.record.count > 0;
    pthread_mutex_unlock(&d->lock);
    return n;
}
