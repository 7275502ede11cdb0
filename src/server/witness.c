/*
 * witness.c - the witness's thread (witness.h). It sleeps until a checkpoint is queued or a
 * retry is due, posts the newest one through connector.c's client (the same signing and HTTP
 * hardening as a connector call) and waits for its answer; the writer and request threads only
 * swap the queued JSON under the lock. A failure is logged once per attempt and counted.
 */
#include "witness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "connector.h"
#include "error.h"

#define WITNESS_JSON_MAX 1024 /* a checkpoint's JSON is about 400 bytes */

struct witness {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a checkpoint queued, a delivery ended, or stop */
    pthread_t thread;
    struct connector_client *client;
    struct connector_target *target;
    char json[WITNESS_JSON_MAX]; /* the newest checkpoint queued */
    size_t len;
    int64_t queued_seq;    /* its seq; 0: none ever */
    int64_t delivered_seq; /* the newest delivered */
    int64_t retry_at_ms;   /* monotonic; 0: now */
    int64_t delay_ms;      /* the next retry's delay */
    uint64_t failures;
    int stop;
    /* the delivery in flight */
    int answered;
    int ok;
    char message[CONNECTOR_MESSAGE_MAX + 160];
};

static int64_t witness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void witness_done(void *userdata, int ok, const char *message)
{
    struct witness *w = userdata;
    pthread_mutex_lock(&w->lock);
    w->ok = ok;
    snprintf(w->message, sizeof w->message, "%s", message ? message : "");
    w->answered = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* One delivery of what is queued; the lock held on entry and on return. 0 when delivered. */
static int witness_deliver(struct witness *w)
{
    char json[WITNESS_JSON_MAX];
    size_t len = w->len;
    int64_t seq = w->queued_seq;
    memcpy(json, w->json, len);
    w->answered = 0;
    pthread_mutex_unlock(&w->lock);
    int rc = connector_client_post(w->client, w->target, json, len, witness_done, w);
    pthread_mutex_lock(&w->lock);
    if (rc != 0) {
        snprintf(w->message, sizeof w->message, "witness: cannot start the delivery");
        w->ok = 0;
    } else {
        while (!w->answered) { /* the client answers every post, within its timeout */
            pthread_cond_wait(&w->cond, &w->lock);
        }
    }
    if (w->ok) {
        w->delivered_seq = seq > w->delivered_seq ? seq : w->delivered_seq;
        w->delay_ms = WITNESS_RETRY_MS;
        w->retry_at_ms = 0;
        return 0;
    }
    w->failures++;
    fprintf(stderr,
            "airlockd: audit %s (the checkpoint of seq %lld is not delivered; next try in %lld "
            "ms)\n",
            w->message, (long long)seq, (long long)w->delay_ms);
    w->retry_at_ms = witness_now_ms() + w->delay_ms;
    w->delay_ms = w->delay_ms * 2 > WITNESS_RETRY_MAX_MS ? WITNESS_RETRY_MAX_MS : w->delay_ms * 2;
    return -1;
}

static void *witness_thread(void *arg)
{
    struct witness *w = arg;
    pthread_setname_np(pthread_self(), "airlockd-witness");
    pthread_mutex_lock(&w->lock);
    for (;;) {
        int due = w->queued_seq > w->delivered_seq;
        if (due && (w->stop || witness_now_ms() >= w->retry_at_ms)) {
            /* stopping: what is queued is tried once more, then given up */
            if (witness_deliver(w) != 0 && w->stop) {
                break;
            }
            continue;
        }
        if (w->stop) {
            break;
        }
        if (due) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t wait_ms = w->retry_at_ms - witness_now_ms();
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        } else {
            pthread_cond_wait(&w->cond, &w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int witness_new(const char *url, const char *secret, struct witness **ret, struct al_error *reterr)
{
    struct witness *w = calloc(1, sizeof *w);
    pthread_condattr_t attr;
    if (!w) {
        error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    w->delay_ms = WITNESS_RETRY_MS;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    w->target = connector_target_new("witness", url, secret, WITNESS_TIMEOUT_MS);
    w->client = w->target ? connector_client_new() : NULL;
    if (!w->client || pthread_create(&w->thread, NULL, witness_thread, w) != 0) {
        connector_client_free(w->client);
        connector_target_free(w->target);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        error_set(reterr, AL_INTERNAL_ERROR, "cannot start the audit witness's client");
        return -1;
    }
    *ret = w;
    return 0;
}

void witness_send(struct witness *w, int64_t seq, const char *json, size_t len)
{
    if (!w || len > sizeof w->json) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    if (seq > w->queued_seq && seq > w->delivered_seq) {
        memcpy(w->json, json, len);
        w->len = len;
        w->queued_seq = seq;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

uint64_t witness_failures(struct witness *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t n = w->failures;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void witness_free(struct witness *w)
{
    if (!w) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    connector_client_free(w->client);
    connector_target_free(w->target);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
