/*
 * host.c - host-function calls as the application sees them (struct al_call), and the queue
 * through which any thread hands a call's outcome to the run loop.
 *
 * A call holds a reference to its run's link, so answering a call after its run ended is
 * safe: the outcome is discarded. A completion from the run loop's own thread (the common
 * "answer at once" case) skips the eventfd wake-up: the loop drains the queue right after the
 * callback returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "internal.h"
#include "wire.h"

struct run_link *host_link_new(void)
{
    struct run_link *l = calloc(1, sizeof *l);
    if (!l) {
        return NULL;
    }
    l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->wake_fd < 0 || pthread_mutex_init(&l->mu, NULL) != 0) {
        if (l->wake_fd >= 0) {
            close(l->wake_fd);
        }
        free(l);
        return NULL;
    }
    l->refs = 1;
    atomic_init(&l->pending, 0);
    atomic_init(&l->closed, 0);
    atomic_init(&l->cancelled, 0);
    l->tail = &l->head;
    l->loop_thread = pthread_self();
    return l;
}

/* A completion and its payload are one allocation (payload points just past the struct). */
static struct completion *completion_new(const char *payload, size_t len)
{
    struct completion *c = malloc(sizeof *c + len + 1);
    if (c) {
        memset(c, 0, sizeof *c);
        c->payload = (char *)(c + 1);
        memcpy(c->payload, payload, len);
        c->payload[len] = '\0';
        c->len = len;
    }
    return c;
}

void host_completion_free(struct completion *c)
{
    while (c) {
        struct completion *next = c->next;
        free(c);
        c = next;
    }
}

static void link_unref_locked(struct run_link *l)
{
    /* called with l->mu held; unlocks */
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (last) {
        host_completion_free(l->head);
        /* closed only now: a handle that may still be cancelled writes to it */
        close(l->wake_fd);
        pthread_mutex_destroy(&l->mu);
        free(l);
    }
}

void host_link_ref(struct run_link *l)
{
    pthread_mutex_lock(&l->mu);
    l->refs++;
    pthread_mutex_unlock(&l->mu);
}

void host_link_unref(struct run_link *l)
{
    if (l) {
        pthread_mutex_lock(&l->mu);
        link_unref_locked(l);
    }
}

void host_wake(int fd)
{
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r; /* EAGAIN only when the counter is saturated: already signalled */
}

void host_link_cancel(struct run_link *l)
{
    atomic_store(&l->cancelled, 1);
    atomic_store_explicit(&l->pending, 1, memory_order_release);
    host_wake(l->wake_fd);
}

void host_link_close(struct run_link *l)
{
    pthread_mutex_lock(&l->mu);
    atomic_store(&l->closed, 1);
    host_completion_free(l->head);
    l->head = NULL;
    l->tail = &l->head;
    link_unref_locked(l);
}

int host_link_pending(struct run_link *l)
{
    return atomic_load_explicit(&l->pending, memory_order_acquire);
}

struct completion *host_link_take(struct run_link *l)
{
    /* Cleared before taking the queue: a completion queued in between is taken now and
     * leaves at most a spurious flag, never a lost one. (The run loop resets the eventfd
     * when poll reports it, before it takes.) */
    atomic_store_explicit(&l->pending, 0, memory_order_seq_cst);
    pthread_mutex_lock(&l->mu);
    struct completion *c = l->head;
    l->head = NULL;
    l->tail = &l->head;
    pthread_mutex_unlock(&l->mu);
    return c;
}

static void call_free(struct al_call *call)
{
    free(call->resume_payload);
    free(call->resolution);
    free(call);
}

struct al_call *host_call_new(struct run_link *link, uint32_t id, uint32_t fn, const char *name,
                              const char *args, size_t args_len)
{
    /* One allocation per call: the handle, then its name and arguments. */
    size_t name_len = strlen(name);
    struct al_call *c = malloc(sizeof *c + name_len + 1 + args_len + 1);
    if (!c) {
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->name = (char *)(c + 1);
    memcpy(c->name, name, name_len + 1);
    c->args = c->name + name_len + 1;
    memcpy(c->args, args, args_len);
    c->args[args_len] = '\0';
    c->args_len = args_len;
    c->id = id;
    c->fn = fn;
    c->link = link;
    pthread_mutex_lock(&link->mu);
    link->refs++;
    pthread_mutex_unlock(&link->mu);
    return c;
}

static void complete(struct al_call *call, uint8_t kind, const char *payload, size_t len)
{
    struct run_link *l = call->link;
    struct completion *c = completion_new(payload, len);
    if (c) {
        c->id = call->id;
        c->fn = call->fn;
        c->start_us = call->start_us;
        c->kind = kind;
        c->clock_ms = clock_wall_ms();
        c->keep_iid = call->resumed;
        memcpy(c->iid, call->iid, sizeof c->iid);
    }
    pthread_mutex_lock(&l->mu);
    if (!l->closed) {
        if (!c) {
            /* Out of memory: the guest still gets an answer, so the run cannot hang. */
            static const char oom[] = "host out of memory";
            c = completion_new(oom, sizeof oom - 1);
            if (c) {
                c->id = call->id;
                c->fn = call->fn;
                c->start_us = call->start_us;
                c->kind = WIRE_ANSWER_THROW;
                c->clock_ms = clock_wall_ms();
            }
        }
        if (c) {
            *l->tail = c;
            l->tail = &c->next;
            c = NULL;
            atomic_store_explicit(&l->pending, 1, memory_order_release);
            if (!l->skip_self_wake || !pthread_equal(pthread_self(), l->loop_thread)) {
                host_wake(l->wake_fd);
            }
        }
    }
    link_unref_locked(l);
    host_completion_free(c);
    call_free(call);
}

const char *al_call_name(const struct al_call *call)
{
    return call->name;
}

const char *al_call_args(const struct al_call *call, size_t *ret_len)
{
    if (ret_len) {
        *ret_len = call->args_len;
    }
    return call->args;
}

uint32_t al_call_line(const struct al_call *call)
{
    return call->line;
}

uint32_t al_call_seq(const struct al_call *call)
{
    return call->id;
}

const char *al_call_run_id(const struct al_call *call)
{
    return call->link->run_id;
}

void *al_call_run_userdata(const struct al_call *call)
{
    return call->link->userdata;
}

int al_call_cancelled(const struct al_call *call)
{
    return atomic_load(&call->link->closed) || atomic_load(&call->link->cancelled);
}

void al_call_return(struct al_call *call, const char *json, size_t len)
{
    if (!call) {
        return;
    }
    complete(call, WIRE_ANSWER_VALUE, json ? json : "", json ? len : 0);
}

void al_call_throw(struct al_call *call, const char *message)
{
    if (!call) {
        return;
    }
    if (!message) {
        message = "host function failed";
    }
    complete(call, WIRE_ANSWER_THROW, message, strlen(message));
}

void al_call_throw_type_error(struct al_call *call, const char *message)
{
    if (!call) {
        return;
    }
    if (!message) {
        message = "host function called with bad arguments";
    }
    complete(call, WIRE_ANSWER_TYPE_ERROR, message, strlen(message));
}

void al_call_interrupt(struct al_call *call, const char *payload_json, size_t len)
{
    if (!call) {
        return;
    }
    complete(call, WIRE_ANSWER_INTERRUPT, payload_json ? payload_json : "", payload_json ? len : 0);
}

const char *al_call_interruption_id(const struct al_call *call)
{
    return call->resumed ? call->iid_hex : NULL;
}

const char *al_call_resume_payload(const struct al_call *call, size_t *ret_len)
{
    if (ret_len) {
        *ret_len = call->resumed ? call->resume_payload_len : 0;
    }
    return call->resumed ? call->resume_payload : NULL;
}

const char *al_call_resolution(const struct al_call *call, size_t *ret_len)
{
    if (ret_len) {
        *ret_len = call->resumed ? call->resolution_len : 0;
    }
    return call->resumed ? call->resolution : NULL;
}
