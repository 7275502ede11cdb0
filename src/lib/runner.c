/*
 * runner.c - al_config (mutable settings), al_runner (an immutable snapshot, shareable across
 * threads) and al_run_opts (one run's source and overrides).
 *
 * Host names are validated here, once, so the worker can trust the manifest's shape: each
 * name is "group.fn" with identifier parts, no part names an inherited or special member, and
 * no group shadows a global the guest relies on.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "guest.h"
#include "internal.h"

/* Members every object inherits or that the language treats specially: never capabilities. */
static enum al_code add_resolution(struct al_run_opts *opts, uint32_t call, const char *id,
                                   const char *json, size_t len);
static const char *const reserved_members[] = {
    "constructor",
    "__proto__",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toString",
    "toLocaleString",
    "valueOf",
    "then",
    "prototype",
    "caller",
    "arguments",
};

/* Globals of the guest context (docs/sandbox.md) that a group must not replace; the names a
 * guest never has (guest.h) are refused too. */
static const char *const guest_globals[] = {
    "Object",
    "Function",
    "Array",
    "Number",
    "parseFloat",
    "parseInt",
    "Infinity",
    "NaN",
    "undefined",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "unescape",
    "isFinite",
    "isNaN",
    "eval",
    "globalThis",
    "Boolean",
    "Symbol",
    "Error",
    "EvalError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "TypeError",
    "URIError",
    "InternalError",
    "AggregateError",
    "Iterator",
    "Math",
    "Reflect",
    "JSON",
    "Date",
    "String",
    "RegExp",
    "Proxy",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "ArrayBuffer",
    "DataView",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "BigInt64Array",
    "BigUint64Array",
    "Float32Array",
    "Float64Array",
    "Promise",
    "BigInt",
    "console",
};

static int is_identifier(const char *s, size_t len)
{
    if (len == 0 || len > 128) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
                 (i > 0 && c >= '0' && c <= '9');
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

static int in_list(const char *s, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0) {
            return 1;
        }
    }
    return 0;
}

struct al_config *al_config_new(void)
{
    struct al_config *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        c->limits[i] = al_limit_default((enum al_limit)i);
    }
    c->warm_workers = 1;
    c->ttl_ms = AL_CONTINUATION_TTL_MS;
    return c;
}

static void free_keys(struct cont_key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        OPENSSL_cleanse(keys[i].bytes, keys[i].len);
        free(keys[i].bytes);
    }
}

static void free_hosts(struct host_entry *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(h[i].name);
    }
    free(h);
}

void al_config_free(struct al_config *config)
{
    if (!config) {
        return;
    }
    free_hosts(config->hosts, config->nhosts);
    free(config->worker_path);
    free_keys(config->keys, config->nkeys);
    free(config->module_identity);
    free(config);
}

enum al_code al_config_set_module_loader(struct al_config *config, al_host_fn *resolve,
                                         al_host_fn *load, void *userdata, const char *identity)
{
    if (!config || !resolve || !load || !identity || config->module_resolve ||
        strlen(identity) > 255) {
        return AL_CONFIG_ERROR;
    }
    config->module_identity = strdup(identity);
    if (!config->module_identity) {
        return AL_INTERNAL_ERROR;
    }
    config->module_resolve = resolve;
    config->module_load = load;
    config->module_userdata = userdata;
    return AL_OK;
}

enum al_code al_run_opts_set_source_type(struct al_run_opts *opts, unsigned type)
{
    unsigned kind = type & ~(unsigned)AL_SOURCE_TYPESCRIPT;
    if (!opts || (kind != AL_SOURCE_BODY && kind != AL_SOURCE_MODULE)) {
        return AL_CONFIG_ERROR;
    }
    opts->source_type = type;
    return AL_OK;
}

static enum al_code copy_key(struct cont_key *dst, const void *secret, size_t len)
{
    if (!secret || len < AL_CONTINUATION_KEY_MIN || len > 4096) {
        return AL_CONFIG_ERROR;
    }
    dst->bytes = malloc(len);
    if (!dst->bytes) {
        return AL_INTERNAL_ERROR;
    }
    memcpy(dst->bytes, secret, len);
    dst->len = len;
    return AL_OK;
}

enum al_code al_config_set_continuation_key(struct al_config *config, const void *secret,
                                            size_t len)
{
    if (!config) {
        return AL_CONFIG_ERROR;
    }
    struct cont_key k;
    enum al_code rc = copy_key(&k, secret, len);
    if (rc != AL_OK) {
        return rc;
    }
    if (config->has_signing_key) {
        free_keys(&config->keys[0], 1);
    } else {
        if (config->nkeys == AL_CONTINUATION_KEYS_MAX) {
            free_keys(&k, 1);
            return AL_CONFIG_ERROR;
        }
        memmove(&config->keys[1], &config->keys[0], config->nkeys * sizeof k);
        config->nkeys++;
        config->has_signing_key = 1;
    }
    config->keys[0] = k;
    return AL_OK;
}

enum al_code al_config_add_verification_key(struct al_config *config, const void *secret,
                                            size_t len)
{
    /* one slot stays free for the signing key until it is set */
    size_t reserved = config && !config->has_signing_key ? 1 : 0;
    if (!config || config->nkeys + reserved >= AL_CONTINUATION_KEYS_MAX) {
        return AL_CONFIG_ERROR;
    }
    enum al_code rc = copy_key(&config->keys[config->nkeys], secret, len);
    if (rc == AL_OK) {
        config->nkeys++;
    }
    return rc;
}

enum al_code al_config_set_continuation_ttl(struct al_config *config, uint64_t ttl_ms)
{
    if (!config || ttl_ms == 0 || ttl_ms > 366ull * 24 * 3600 * 1000) {
        return AL_CONFIG_ERROR;
    }
    config->ttl_ms = ttl_ms;
    return AL_OK;
}

void al_config_set_store(struct al_config *config, struct al_store *store)
{
    if (config) {
        config->store = store;
    }
}

static int cmp_host_names(const void *a, const void *b)
{
    return strcmp((*(const struct host_entry *const *)a)->name,
                  (*(const struct host_entry *const *)b)->name);
}

/* The manifest a continuation is bound to: every name and whether it is synchronous, sorted,
 * so the order of registration does not matter. */
enum al_code runner_manifest(const struct host_entry *hosts, size_t n, const char *loader,
                             uint8_t out[CONT_DIGEST])
{
    const struct host_entry **sorted = malloc((n ? n : 1) * sizeof *sorted);
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    if (!sorted) {
        return AL_INTERNAL_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        sorted[i] = &hosts[i];
    }
    qsort(sorted, n, sizeof *sorted, cmp_host_names);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad |= buf_printf(&b, "%s %s\n", sorted[i]->name,
                          (sorted[i]->flags & AL_HOST_SYNC) ? "sync" : "async") != BUF_OK;
    }
    free(sorted);
    if (loader) {
        bad |= buf_printf(&b, "module loader %s\n", loader) != BUF_OK;
    }
    if (bad) {
        buf_done(&b);
        return AL_INTERNAL_ERROR;
    }
    cont_sha256(b.data ? b.data : "", b.len, out);
    buf_done(&b);
    return AL_OK;
}

enum al_code al_config_set_limit(struct al_config *config, enum al_limit which, uint64_t value)
{
    if (!config || limits_check(which, value) != AL_OK) {
        return AL_CONFIG_ERROR;
    }
    config->limits[which] = value;
    config->limit_set[which] = 1;
    return AL_OK;
}

enum al_code runner_check_host_name(const char *name, unsigned flags, size_t *ret_group_len)
{
    if (!name || (flags & ~AL_HOST_SYNC) != 0) {
        return AL_CONFIG_ERROR;
    }
    const char *dot = strchr(name, '.');
    if (!dot) {
        return AL_CONFIG_ERROR;
    }
    size_t glen = (size_t)(dot - name);
    const char *fname = dot + 1;
    size_t flen = strlen(fname);
    if (!is_identifier(name, glen) || !is_identifier(fname, flen) ||
        in_list(fname, flen, reserved_members,
                sizeof reserved_members / sizeof reserved_members[0]) ||
        in_list(name, glen, reserved_members,
                sizeof reserved_members / sizeof reserved_members[0]) ||
        in_list(name, glen, guest_globals, sizeof guest_globals / sizeof guest_globals[0]) ||
        in_list(name, glen, guest_removed_globals, guest_removed_globals_count)) {
        return AL_CONFIG_ERROR;
    }
    if (glen == 9 && memcmp(name, "workspace", 9) == 0) {
        return AL_CONFIG_ERROR; /* the workspace's own group (al_run_opts_set_workspace) */
    }
    *ret_group_len = glen;
    return AL_OK;
}

/* Adds a checked name to a table, refusing a duplicate or a group whose sync flags disagree. */
static enum al_code add_host_entry(struct host_entry **hosts, size_t *nhosts, const char *name,
                                   al_host_fn *fn, void *userdata, unsigned flags)
{
    size_t glen;
    if (!fn || runner_check_host_name(name, flags, &glen) != AL_OK) {
        return AL_CONFIG_ERROR;
    }
    for (size_t i = 0; i < *nhosts; i++) {
        const struct host_entry *h = &(*hosts)[i];
        if (strcmp(h->name, name) == 0) {
            return AL_CONFIG_ERROR;
        }
        if (h->group_len == glen && memcmp(h->name, name, glen) == 0 &&
            (h->flags & AL_HOST_SYNC) != (flags & AL_HOST_SYNC)) {
            return AL_CONFIG_ERROR;
        }
    }
    struct host_entry *grown = realloc(*hosts, (*nhosts + 1) * sizeof *grown);
    if (!grown) {
        return AL_INTERNAL_ERROR;
    }
    *hosts = grown;
    char *copy = strdup(name);
    if (!copy) {
        return AL_INTERNAL_ERROR;
    }
    grown[(*nhosts)++] = (struct host_entry){ copy, glen, fn, userdata, flags };
    return AL_OK;
}

enum al_code al_config_add_host(struct al_config *config, const char *name, al_host_fn *fn,
                                void *userdata, unsigned flags)
{
    if (!config) {
        return AL_CONFIG_ERROR;
    }
    return add_host_entry(&config->hosts, &config->nhosts, name, fn, userdata, flags);
}

enum al_code al_run_opts_add_host(struct al_run_opts *opts, const char *name, al_host_fn *fn,
                                  void *userdata, unsigned flags)
{
    if (!opts) {
        return AL_CONFIG_ERROR;
    }
    return add_host_entry(&opts->hosts, &opts->nhosts, name, fn, userdata, flags);
}

enum al_code al_run_opts_set_workspace(struct al_run_opts *opts, struct al_workspace *ws)
{
    if (!opts) {
        return AL_CONFIG_ERROR;
    }
    opts->workspace = ws;
    return AL_OK;
}

void al_run_opts_set_userdata(struct al_run_opts *opts, void *userdata)
{
    if (opts) {
        opts->userdata = userdata;
    }
}

enum al_code al_run_opts_set_run_id(struct al_run_opts *opts, const char *id)
{
    size_t len = id ? strlen(id) : 0;
    if (!opts || len == 0 || len > AL_RUN_ID_MAX) {
        return AL_CONFIG_ERROR;
    }
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-')) {
            return AL_CONFIG_ERROR;
        }
    }
    memcpy(opts->run_id, id, len + 1);
    return AL_OK;
}

void al_run_opts_set_event_callback(struct al_run_opts *opts, al_event_fn *fn, void *userdata)
{
    if (opts) {
        opts->event_fn = fn;
        opts->event_userdata = fn ? userdata : NULL;
    }
}

enum al_code al_run_opts_set_clock_mode(struct al_run_opts *opts, enum al_clock_mode mode,
                                        uint64_t step_ms)
{
    if (!opts || (mode != AL_CLOCK_WALL && mode != AL_CLOCK_LOGICAL) ||
        (mode == AL_CLOCK_LOGICAL && (step_ms == 0 || step_ms > 366ull * 24 * 3600 * 1000))) {
        return AL_CONFIG_ERROR;
    }
    opts->clock_mode = mode;
    opts->clock_step_ms = mode == AL_CLOCK_LOGICAL ? step_ms : 0;
    return AL_OK;
}

struct al_run_opts *runner_opts_copy(const struct al_run_opts *o)
{
    struct al_run_opts *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    *c = *o;
    c->source = c->filename = c->context = c->audience = c->resume = NULL;
    c->resolutions = NULL;
    c->nresolutions = 0;
    c->hosts = NULL;
    c->nhosts = 0;
    c->journal = NULL;
    c->njournal = 0;
    int bad = 0;
    c->source = buf_dup(o->source, o->source_len);
    bad |= !c->source;
    if (o->filename) {
        bad |= !(c->filename = strdup(o->filename));
    }
    if (o->context) {
        bad |= !(c->context = buf_dup(o->context, o->context_len));
    }
    if (o->audience) {
        bad |= !(c->audience = strdup(o->audience));
    }
    if (o->resume) {
        bad |= !(c->resume = buf_dup(o->resume, o->resume_len));
    }
    for (size_t i = 0; i < o->nresolutions && !bad; i++) {
        bad |= add_resolution(c, o->resolutions[i].call, o->resolutions[i].id,
                              o->resolutions[i].json, o->resolutions[i].len) != AL_OK;
    }
    for (size_t i = 0; i < o->njournal && !bad; i++) {
        bad |= al_run_opts_add_journal_entry(c, &o->journal[i]) != AL_OK;
    }
    for (size_t i = 0; i < o->nhosts && !bad; i++) {
        const struct host_entry *h = &o->hosts[i];
        bad |= add_host_entry(&c->hosts, &c->nhosts, h->name, h->fn, h->userdata, h->flags) !=
               AL_OK;
    }
    if (bad) {
        al_run_opts_free(c);
        return NULL;
    }
    return c;
}

enum al_code al_config_set_worker_path(struct al_config *config, const char *path)
{
    if (!config || !path || !*path) {
        return AL_CONFIG_ERROR;
    }
    char *p = strdup(path);
    if (!p) {
        return AL_INTERNAL_ERROR;
    }
    free(config->worker_path);
    config->worker_path = p;
    return AL_OK;
}

enum al_code al_config_set_warm_workers(struct al_config *config, unsigned count)
{
    if (!config || count > AL_WARM_WORKERS_MAX) {
        return AL_CONFIG_ERROR;
    }
    config->warm_workers = count;
    return AL_OK;
}

enum al_code al_config_set_queue_timeout(struct al_config *config, uint64_t timeout_ms)
{
    if (!config || timeout_ms > 366ull * 24 * 3600 * 1000) {
        return AL_CONFIG_ERROR;
    }
    config->queue_timeout_ms = timeout_ms;
    return AL_OK;
}

enum al_code al_config_set_max_concurrency(struct al_config *config, unsigned max_runs,
                                           unsigned max_queue)
{
    if (!config) {
        return AL_CONFIG_ERROR;
    }
    config->max_runs = max_runs;
    config->max_queue = max_queue;
    return AL_OK;
}

/* A caller waiting for a slot. A leaving run hands its slot to the first waiter directly, so the
 * queue is first come, first served and a waiter that gives up just leaves the line. */
struct adm_waiter {
    struct adm_waiter *next;
    int granted;
    int wake_fd; /* an asynchronous run's eventfd, written when granted; -1: cv is signalled */
    pthread_cond_t cv;
};

int runner_admit(struct al_runner *r)
{
    if (r->max_runs == 0) {
        return 1;
    }
    int admitted = 0;
    pthread_mutex_lock(&r->adm_mu);
    if (r->running < r->max_runs && !r->adm_head) {
        r->running++;
        admitted = 1;
    } else if (r->queued < r->max_queue) {
        struct adm_waiter me = { NULL, 0, -1, PTHREAD_COND_INITIALIZER };
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&me.cv, &attr);
        pthread_condattr_destroy(&attr);
        *r->adm_tail = &me;
        r->adm_tail = &me.next;
        r->queued++;
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)(r->queue_timeout_ms / 1000);
        deadline.tv_nsec += (long)(r->queue_timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        int timed_out = 0;
        while (!me.granted && !timed_out) {
            if (r->queue_timeout_ms == 0) {
                pthread_cond_wait(&me.cv, &r->adm_mu);
            } else {
                timed_out = pthread_cond_timedwait(&me.cv, &r->adm_mu, &deadline) == ETIMEDOUT;
            }
        }
        if (!me.granted) {
            /* gave up: leave the line */
            struct adm_waiter **pp = &r->adm_head;
            while (*pp != &me) {
                pp = &(*pp)->next;
            }
            *pp = me.next;
            if (r->adm_tail == &me.next) {
                r->adm_tail = pp;
            }
            r->queued--;
        }
        admitted = me.granted ? 1 : -1;
        pthread_cond_destroy(&me.cv);
    }
    pthread_mutex_unlock(&r->adm_mu);
    return admitted;
}

void runner_leave(struct al_runner *r)
{
    if (r->max_runs == 0) {
        return;
    }
    pthread_mutex_lock(&r->adm_mu);
    struct adm_waiter *w = r->adm_head;
    if (w) {
        /* the slot goes straight to the first in line */
        r->adm_head = w->next;
        if (!r->adm_head) {
            r->adm_tail = &r->adm_head;
        }
        r->queued--;
        w->granted = 1;
        if (w->wake_fd >= 0) {
            host_wake(w->wake_fd);
        } else {
            pthread_cond_signal(&w->cv);
        }
    } else {
        r->running--;
    }
    pthread_mutex_unlock(&r->adm_mu);
}

struct adm_waiter *runner_waiter_new(int wake_fd)
{
    struct adm_waiter *w = calloc(1, sizeof *w);
    if (w) {
        w->wake_fd = wake_fd;
    }
    return w;
}

void runner_waiter_free(struct adm_waiter *w)
{
    free(w);
}

int runner_admit_async(struct al_runner *r, struct adm_waiter *w)
{
    if (r->max_runs == 0) {
        return 1;
    }
    int rc = 0;
    pthread_mutex_lock(&r->adm_mu);
    if (r->running < r->max_runs && !r->adm_head) {
        r->running++;
        rc = 1;
    } else if (r->queued < r->max_queue) {
        w->next = NULL;
        w->granted = 0;
        *r->adm_tail = w;
        r->adm_tail = &w->next;
        r->queued++;
        rc = 2;
    }
    pthread_mutex_unlock(&r->adm_mu);
    return rc;
}

int runner_waiter_granted(struct al_runner *r, struct adm_waiter *w)
{
    pthread_mutex_lock(&r->adm_mu);
    int granted = w->granted;
    pthread_mutex_unlock(&r->adm_mu);
    return granted;
}

int runner_admit_cancel(struct al_runner *r, struct adm_waiter *w)
{
    pthread_mutex_lock(&r->adm_mu);
    int granted = w->granted;
    if (!granted) {
        struct adm_waiter **pp = &r->adm_head;
        while (*pp && *pp != w) {
            pp = &(*pp)->next;
        }
        if (*pp) {
            *pp = w->next;
            if (r->adm_tail == &w->next) {
                r->adm_tail = pp;
            }
            r->queued--;
        }
    }
    pthread_mutex_unlock(&r->adm_mu);
    return granted;
}

enum al_code al_config_set_unsafe_no_jail(struct al_config *config, int allow)
{
    if (!config) {
        return AL_CONFIG_ERROR;
    }
    config->unsafe_no_jail = allow != 0;
    return AL_OK;
}

enum al_code al_config_set_short_slice(struct al_config *config, int enabled)
{
    if (!config) {
        return AL_CONFIG_ERROR;
    }
    config->short_slice = enabled != 0;
    return AL_OK;
}

enum al_code al_runner_new(const struct al_config *config, struct al_runner **ret_runner,
                           struct al_error *reterr)
{
    enum al_code rc;
    if (!config || !ret_runner) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_runner_new: NULL argument");
    }
    struct al_runner *r = calloc(1, sizeof *r);
    if (!r) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    pthread_mutex_init(&r->adm_mu, NULL);
    pthread_mutex_init(&r->keys_mu, NULL);
    pthread_mutex_init(&r->loop_mu, NULL);
    r->adm_tail = &r->adm_head;
    memcpy(r->limits, config->limits, sizeof r->limits);
    memcpy(r->limit_set, config->limit_set, sizeof r->limit_set);
    rc = supervisor_resolve_path(config->worker_path, &r->worker_path, reterr);
    if (rc != AL_OK) {
        goto fail;
    }
    r->hosts = calloc(config->nhosts ? config->nhosts : 1, sizeof *r->hosts);
    if (!r->hosts) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto fail;
    }
    /* Group functions together, groups in order of first registration. */
    for (size_t i = 0; i < config->nhosts; i++) {
        const struct host_entry *h = &config->hosts[i];
        int first = 1;
        for (size_t j = 0; j < i; j++) {
            if (config->hosts[j].group_len == h->group_len &&
                memcmp(config->hosts[j].name, h->name, h->group_len) == 0) {
                first = 0;
            }
        }
        if (!first) {
            continue;
        }
        for (size_t j = i; j < config->nhosts; j++) {
            const struct host_entry *g = &config->hosts[j];
            if (g->group_len == h->group_len && memcmp(g->name, h->name, h->group_len) == 0) {
                r->hosts[r->nhosts] = *g;
                r->hosts[r->nhosts].name = strdup(g->name);
                if (!r->hosts[r->nhosts++].name) {
                    rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
                    goto fail;
                }
            }
        }
    }
    r->unsafe_no_jail = config->unsafe_no_jail;
    r->short_slice = config->short_slice;
    r->ttl_ms = config->ttl_ms;
    r->store = config->store;
    for (size_t i = 0; i < config->nkeys; i++) {
        if (copy_key(&r->keys[i], config->keys[i].bytes, config->keys[i].len) != AL_OK) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto fail;
        }
        r->nkeys++;
    }
    r->continuations = config->nkeys > 0;
    if (config->nkeys > 0 && !config->has_signing_key) {
        rc = error_set(reterr, AL_CONFIG_ERROR,
                       "verification keys without a signing key (al_config_set_continuation_key)");
        goto fail;
    }
    if (config->module_resolve) {
        /* The loader's two functions, as one hidden synchronous group. */
        struct host_entry *h = realloc(r->hosts, (r->nhosts + 2) * sizeof *h);
        if (!h) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto fail;
        }
        r->hosts = h;
        const char *names[2] = { "#modules.resolve", "#modules.load" };
        al_host_fn *fns[2] = { config->module_resolve, config->module_load };
        for (int i = 0; i < 2; i++) {
            struct host_entry *e = &r->hosts[r->nhosts];
            e->name = strdup(names[i]);
            e->group_len = 8;
            e->fn = fns[i];
            e->userdata = config->module_userdata;
            e->flags = AL_HOST_SYNC | HOST_HIDDEN;
            if (!e->name) {
                rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
                goto fail;
            }
            r->nhosts++;
        }
    }
    if (config->module_identity) {
        r->module_identity = strdup(config->module_identity);
        if (!r->module_identity) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto fail;
        }
    }
    if (runner_manifest(r->hosts, r->nhosts, r->module_identity, r->manifest) != AL_OK) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto fail;
    }
    r->max_runs = config->max_runs;
    r->max_queue = config->max_queue;
    r->queue_timeout_ms = config->queue_timeout_ms;
    rc = pool_new(r->worker_path, r->unsafe_no_jail, r->short_slice, config->warm_workers, &r->pool,
                  reterr);
    if (rc != AL_OK) {
        goto fail;
    }
    *ret_runner = r;
    return AL_OK;
fail:
    al_runner_free(r);
    return rc;
}

void al_runner_free(struct al_runner *runner)
{
    if (!runner) {
        return;
    }
    if (loop_is_current(runner->loop)) {
        return; /* from a callback of its own runner: refused (airlock.h) */
    }
    loop_free(runner->loop); /* ends the asynchronous runs first: they use the pool */
    pthread_mutex_destroy(&runner->loop_mu);
    pool_free(runner->pool);
    free_hosts(runner->hosts, runner->nhosts);
    free(runner->module_identity);
    free(runner->worker_path);
    free_keys(runner->keys, runner->nkeys);
    pthread_mutex_destroy(&runner->keys_mu);
    pthread_mutex_destroy(&runner->adm_mu);
    free(runner);
}

enum al_code al_runner_set_continuation_keys(struct al_runner *runner,
                                             const struct al_config *config,
                                             struct al_error *reterr)
{
    struct cont_key keys[AL_CONTINUATION_KEYS_MAX] = { 0 };
    size_t nkeys = 0;
    enum al_code rc = AL_OK;
    if (!runner || !config) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_runner_set_continuation_keys: NULL argument");
    }
    if (!config->has_signing_key) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "the config has no signing key (al_config_set_continuation_key)");
    }
    if (!runner->continuations) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "the runner was made without continuation keys: it has none to replace");
    }
    /* Copied before the lock, so that runs wait for the swap alone. */
    for (; nkeys < config->nkeys; nkeys++) {
        rc = copy_key(&keys[nkeys], config->keys[nkeys].bytes, config->keys[nkeys].len);
        if (rc != AL_OK) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto out;
        }
    }
    /* Swapped whole, so that no slot of the runner points at a key freed below. */
    pthread_mutex_lock(&runner->keys_mu);
    for (size_t i = 0; i < AL_CONTINUATION_KEYS_MAX; i++) {
        struct cont_key old = runner->keys[i];
        runner->keys[i] = keys[i];
        keys[i] = old;
    }
    size_t nold = runner->nkeys;
    runner->nkeys = nkeys;
    pthread_mutex_unlock(&runner->keys_mu);
    nkeys = nold; /* the old keys, cleansed below */
out:
    free_keys(keys, nkeys);
    return rc;
}

/* The runner is const to its runs: of all its fields only the keys change, under keys_mu. */
enum al_code runner_cont_encode(const struct al_runner *runner, const struct continuation *c,
                                size_t max_bytes, char **ret_token, size_t *ret_len,
                                struct al_error *reterr)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&runner->keys_mu;
    pthread_mutex_lock(mu);
    enum al_code rc = cont_encode(c, &runner->keys[0], max_bytes, ret_token, ret_len, reterr);
    pthread_mutex_unlock(mu);
    return rc;
}

enum al_code runner_cont_decode(const struct al_runner *runner, const char *token, size_t len,
                                size_t max_bytes, struct continuation *ret, struct al_error *reterr)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&runner->keys_mu;
    pthread_mutex_lock(mu);
    enum al_code rc = cont_decode(token, len, runner->keys, runner->nkeys, max_bytes, ret, reterr);
    pthread_mutex_unlock(mu);
    return rc;
}

struct al_run_opts *al_run_opts_new(void)
{
    return calloc(1, sizeof(struct al_run_opts));
}

void al_run_opts_free(struct al_run_opts *opts)
{
    if (!opts) {
        return;
    }
    free(opts->source);
    free(opts->filename);
    free(opts->context);
    free(opts->audience);
    free(opts->resume);
    for (size_t i = 0; i < opts->nresolutions; i++) {
        free(opts->resolutions[i].id);
        free(opts->resolutions[i].json);
    }
    free(opts->resolutions);
    runner_opts_drop_journal(opts);
    free_hosts(opts->hosts, opts->nhosts);
    free(opts);
}

void runner_opts_drop_journal(struct al_run_opts *opts)
{
    for (size_t i = 0; i < opts->njournal; i++) {
        free((char *)opts->journal[i].function);
        free((char *)opts->journal[i].payload);
    }
    free(opts->journal);
    opts->journal = NULL;
    opts->njournal = 0;
}

void al_run_opts_set_journal(struct al_run_opts *opts, al_journal_fn *fn, void *userdata)
{
    if (opts) {
        opts->journal_fn = fn;
        opts->journal_userdata = fn ? userdata : NULL;
    }
}

enum al_code al_run_opts_add_journal_entry(struct al_run_opts *opts,
                                           const struct al_journal_entry *entry)
{
    if (!opts || !entry || !entry->function || (!entry->payload && entry->len) ||
        (unsigned)entry->kind > AL_JOURNAL_THROW_TYPE) {
        return AL_CONFIG_ERROR;
    }
    struct al_journal_entry *j = realloc(opts->journal, (opts->njournal + 1) * sizeof *j);
    if (!j) {
        return AL_INTERNAL_ERROR;
    }
    opts->journal = j;
    struct al_journal_entry *n = &j[opts->njournal];
    *n = *entry;
    n->sync = entry->sync != 0;
    n->function = strdup(entry->function);
    n->payload = buf_dup(entry->payload ? entry->payload : "", entry->len);
    if (!n->function || !n->payload) {
        free((char *)n->function);
        free((char *)n->payload);
        return AL_INTERNAL_ERROR;
    }
    opts->njournal++;
    return AL_OK;
}

enum al_code al_run_opts_set_context(struct al_run_opts *opts, const char *context, size_t len)
{
    if (!opts || (!context && len)) {
        return AL_CONFIG_ERROR;
    }
    char *c = buf_dup(context, len);
    if (!c) {
        return AL_INTERNAL_ERROR;
    }
    free(opts->context);
    opts->context = c;
    opts->context_len = len;
    return AL_OK;
}

enum al_code al_run_opts_set_audience(struct al_run_opts *opts, const char *audience)
{
    if (!opts || !audience || strlen(audience) > CONT_AUDIENCE_MAX) {
        return AL_CONFIG_ERROR;
    }
    char *a = strdup(audience);
    if (!a) {
        return AL_INTERNAL_ERROR;
    }
    free(opts->audience);
    opts->audience = a;
    return AL_OK;
}

enum al_code al_run_opts_set_resume(struct al_run_opts *opts, const char *continuation, size_t len)
{
    if (!opts || !continuation || len == 0) {
        return AL_CONFIG_ERROR;
    }
    char *c = buf_dup(continuation, len);
    if (!c) {
        return AL_INTERNAL_ERROR;
    }
    free(opts->resume);
    opts->resume = c;
    opts->resume_len = len;
    return AL_OK;
}

static enum al_code add_resolution(struct al_run_opts *opts, uint32_t call, const char *id,
                                   const char *json, size_t len)
{
    if (!opts || !id || !json) {
        return AL_CONFIG_ERROR;
    }
    struct resolution *r =
            realloc(opts->resolutions, (opts->nresolutions + 1) * sizeof *opts->resolutions);
    if (!r) {
        return AL_INTERNAL_ERROR;
    }
    opts->resolutions = r;
    struct resolution *n = &r[opts->nresolutions];
    n->call = call;
    n->id = strdup(id);
    n->json = buf_dup(json, len);
    n->len = len;
    if (!n->id || !n->json) {
        free(n->id);
        free(n->json);
        return AL_INTERNAL_ERROR;
    }
    opts->nresolutions++;
    return AL_OK;
}

enum al_code al_run_opts_add_resolution(struct al_run_opts *opts, const char *id, const char *json,
                                        size_t len)
{
    return add_resolution(opts, 0, id, json, len);
}

enum al_code al_run_opts_add_resolution_for_call(struct al_run_opts *opts, uint32_t call,
                                                 const char *json, size_t len)
{
    char id[24];
    snprintf(id, sizeof id, "call %u", call);
    return call ? add_resolution(opts, call, id, json, len) : AL_CONFIG_ERROR;
}

enum al_code al_run_opts_set_source(struct al_run_opts *opts, const char *src, size_t len,
                                    const char *filename)
{
    if (!opts || (!src && len) || (filename && strlen(filename) > AL_FILENAME_MAX)) {
        return AL_CONFIG_ERROR;
    }
    char *s = malloc(len + 1);
    char *f = strdup(filename ? filename : "run.js");
    if (!s || !f) {
        free(s);
        free(f);
        return AL_INTERNAL_ERROR;
    }
    if (len) {
        memcpy(s, src, len);
    }
    s[len] = '\0';
    free(opts->source);
    free(opts->filename);
    opts->source = s;
    opts->source_len = len;
    opts->filename = f;
    return AL_OK;
}

enum al_code al_run_opts_set_limit(struct al_run_opts *opts, enum al_limit which, uint64_t value)
{
    if (!opts || limits_check(which, value) != AL_OK) {
        return AL_CONFIG_ERROR;
    }
    opts->limits[which] = value;
    opts->limit_set[which] = 1;
    return AL_OK;
}

void al_run_opts_set_seed(struct al_run_opts *opts, uint64_t seed)
{
    if (opts) {
        opts->seed = seed;
        opts->has_seed = 1;
    }
}

void al_run_opts_set_clock(struct al_run_opts *opts, int64_t clock_ms)
{
    if (opts) {
        opts->clock_ms = clock_ms;
        opts->has_clock = 1;
    }
}

unsigned al_runner_warm_workers(const struct al_runner *runner)
{
    return runner && runner->pool ? pool_spares(runner->pool) : 0;
}
