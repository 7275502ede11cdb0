/*
 * airlock_run.c - the Node-API addon of @airlock/run: libairlock's runner inside a Node process.
 *
 * Runs start with al_run_start and never block Node's thread: libairlock drives them on its
 * event thread, in jailed worker processes, exactly as for any C application. What libairlock
 * calls on that thread - a host function, the end of a run - is handed to JavaScript through one
 * napi_threadsafe_function per Node environment, whose JavaScript side (src/native.ts) owns the
 * host functions, their contexts and the promises. JavaScript answers a call on Node's thread
 * with answer(); libairlock takes a completion from any thread.
 *
 * Everything JavaScript holds is an external with a finalizer, so nothing is freed twice and
 * nothing leaks when a handle is dropped: a call dropped unanswered is answered with a throw
 * (libairlock discards a late answer), a run handle is released when its result arrives, a
 * runner is freed with its environment or when collected.
 *
 * Exports, all called on Node's thread:
 * - init(dispatch): dispatch(1, key, call, name, args, seq[, iid, payload, resolution]) is a
 *   host call, dispatch(2, key, result) a run's end;
 * - newRunner({worker, warm, secret, verify, ttlMs, loader, unsafeNoJail}) -> runner;
 * - start(runner, key, {source, type, hosts, limits, context, audience, runId, resume,
 *   resolutions: [[call, json]]}) -> run; cancel(run);
 * - answer(call, kind, text): return (0, JSON), throw (1) or TypeError (2) with a message,
 *   interrupt (3, JSON);
 * - limitDefault(index), version().
 */
#define NAPI_VERSION 8
#include <airlock.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STRING (64u * 1024u * 1024u) /* the largest text libairlock takes anywhere */

enum message_kind { MSG_CALL = 1, MSG_DONE = 2 };

/* What the event thread hands to Node's thread: a host call or a run's end. */
struct message {
    enum message_kind kind;
    uint32_t key; /* the JavaScript side's number for the run */
    struct al_call *call;
    struct al_run *run;
    struct run_ref *ref;
    struct al_result *result;
};

struct runner_ref {
    struct al_runner *runner;
    struct runner_ref *next; /* the environment's runners, freed with it */
    struct instance *inst;
};

struct run_ref {
    struct al_run *run; /* NULL once its result has arrived and the handle is released */
    int dropped;        /* JavaScript let go of it first: freed when the result arrives */
};

struct call_ref {
    struct al_call *call; /* NULL once answered */
};

struct instance {
    napi_threadsafe_function tsfn;
    struct runner_ref *runners;
    unsigned active; /* runs started and not yet delivered: the loop stays alive meanwhile */
};

/* ---------------------------------------------------------------- helpers */

static napi_value fail(napi_env env, const char *message)
{
    napi_throw_error(env, NULL, message);
    return NULL;
}

static napi_value fail_al(napi_env env, const char *what, const struct al_error *err)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", what, err->message[0] ? err->message : "failed");
    napi_throw_error(env, al_code_name(err->code), msg);
    return NULL;
}

/* A JavaScript string (or Buffer) argument as malloc'd UTF-8; NULL with an exception thrown. */
static char *utf8_of(napi_env env, napi_value v, size_t *ret_len)
{
    bool is_buffer = false;
    napi_is_buffer(env, v, &is_buffer);
    if (is_buffer) {
        void *data = NULL;
        size_t len = 0;
        napi_get_buffer_info(env, v, &data, &len);
        char *s = malloc(len + 1);
        if (!s) {
            fail(env, "out of memory");
            return NULL;
        }
        memcpy(s, data, len);
        s[len] = '\0';
        *ret_len = len;
        return s;
    }
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
        fail(env, "expected a string");
        return NULL;
    }
    if (len > MAX_STRING) {
        fail(env, "string too long");
        return NULL;
    }
    char *s = malloc(len + 1);
    if (!s) {
        fail(env, "out of memory");
        return NULL;
    }
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    *ret_len = len;
    return s;
}

static napi_value get(napi_env env, napi_value obj, const char *name)
{
    napi_value v = NULL;
    bool has = false;
    if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has) {
        return NULL;
    }
    napi_get_named_property(env, obj, name, &v);
    napi_valuetype t;
    napi_typeof(env, v, &t);
    return t == napi_undefined || t == napi_null ? NULL : v;
}

static napi_value str(napi_env env, const char *s, size_t len)
{
    napi_value v = NULL;
    napi_create_string_utf8(env, s ? s : "", s ? len : 0, &v);
    return v;
}

static napi_value cstr(napi_env env, const char *s)
{
    return str(env, s, s ? strlen(s) : 0);
}

static napi_value num(napi_env env, double d)
{
    napi_value v = NULL;
    napi_create_double(env, d, &v);
    return v;
}

static void set(napi_env env, napi_value obj, const char *name, napi_value v)
{
    napi_set_named_property(env, obj, name, v);
}

static void *external_data(napi_env env, napi_value v)
{
    void *p = NULL;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, v, &p) != napi_ok) {
        return NULL;
    }
    return p;
}

/* The arguments of a call into the addon; throws and returns -1 when fewer than `want`. */
static int args_of(napi_env env, napi_callback_info info, size_t want, napi_value *argv)
{
    size_t argc = want;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
        fail(env, "missing arguments");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- from libairlock's thread */

static void post(struct instance *inst, struct message *m)
{
    if (napi_call_threadsafe_function(inst->tsfn, m, napi_tsfn_nonblocking) != napi_ok) {
        /* The environment is going away: nobody will answer or read. */
        if (m->call) {
            al_call_throw(m->call, "the Node.js environment is shutting down");
        }
        if (m->result) {
            al_result_free(m->result);
        }
        free(m);
    }
}

static void on_call(struct al_call *call, void *userdata)
{
    struct message *m = calloc(1, sizeof *m);
    if (!m) {
        al_call_throw(call, "out of memory");
        return;
    }
    m->kind = MSG_CALL;
    m->key = (uint32_t)(uintptr_t)al_call_run_userdata(call);
    m->call = call;
    post(userdata, m);
}

struct run_start {
    struct instance *inst;
    struct run_ref *ref;
    uint32_t key;
};

static void on_done(struct al_run *run, struct al_result *result, void *userdata)
{
    struct run_start *rs = userdata;
    struct message *m = calloc(1, sizeof *m);
    if (!m) {
        al_result_free(result); /* the promise never settles: out of memory already */
        free(rs);
        return;
    }
    m->kind = MSG_DONE;
    m->key = rs->key;
    m->run = run;
    m->ref = rs->ref;
    m->result = result;
    struct instance *inst = rs->inst;
    free(rs);
    post(inst, m);
}

/* ---------------------------------------------------------------- on Node's thread */

static void call_ref_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    struct call_ref *ref = data;
    if (ref->call) {
        al_call_throw(ref->call, "the host function never answered");
    }
    free(ref);
}

static napi_value result_object(napi_env env, struct al_result *res)
{
    napi_value o;
    napi_create_object(env, &o);
    static const char *const statuses[] = { "completed", "failed", "interrupted" };
    enum al_status st = al_result_status(res);
    set(env, o, "status", cstr(env, (unsigned)st < 3 ? statuses[st] : "failed"));
    set(env, o, "runId", cstr(env, al_result_run_id(res)));
    size_t len = 0;
    const char *value = al_result_value(res, &len);
    if (value) {
        set(env, o, "value", str(env, value, len));
    }
    if (st == AL_STATUS_FAILED) {
        struct al_error_text t;
        al_result_error_text(res, &t);
        set(env, o, "code", cstr(env, al_code_name(al_result_error_code(res))));
        set(env, o, "name", str(env, t.name, t.name_len));
        set(env, o, "message", str(env, t.message, t.message_len));
        set(env, o, "stack", str(env, t.stack, t.stack_len));
    }
    size_t n = al_result_console_count(res);
    napi_value console;
    napi_create_array_with_length(env, n, &console);
    for (size_t i = 0; i < n; i++) {
        enum al_console_level level = AL_CONSOLE_LOG;
        size_t tl = 0;
        const char *text = al_result_console_text(res, i, &level, &tl);
        napi_value e;
        napi_create_object(env, &e);
        set(env, e, "level", cstr(env, al_console_level_name(level)));
        set(env, e, "text", str(env, text, tl));
        napi_set_element(env, console, (uint32_t)i, e);
    }
    set(env, o, "console", console);
    struct al_stats s;
    al_result_stats(res, &s);
    napi_value stats;
    napi_create_object(env, &stats);
    set(env, stats, "wallMs", num(env, (double)s.wall_us / 1000.0));
    set(env, stats, "cpuMs", num(env, (double)s.cpu_us / 1000.0));
    set(env, stats, "peakMemoryBytes", num(env, (double)s.peak_memory_bytes));
    set(env, stats, "hostCalls", num(env, s.host_calls));
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s.seed);
    set(env, stats, "seed", cstr(env, seed));
    set(env, stats, "clockMs", num(env, (double)s.clock_ms));
    napi_value jailed;
    napi_get_boolean(env, s.jailed != 0, &jailed);
    set(env, stats, "jailed", jailed);
    set(env, o, "stats", stats);
    n = al_result_interruption_count(res);
    if (st == AL_STATUS_INTERRUPTED) {
        napi_value list;
        napi_create_array_with_length(env, n, &list);
        for (size_t i = 0; i < n; i++) {
            struct al_interruption it;
            if (al_result_interruption(res, i, &it) != 0) {
                continue;
            }
            napi_value e;
            napi_create_object(env, &e);
            set(env, e, "id", cstr(env, it.id));
            set(env, e, "call", num(env, al_result_interruption_call(res, i)));
            set(env, e, "function", cstr(env, it.function));
            set(env, e, "args", cstr(env, it.args));
            set(env, e, "payload", cstr(env, it.payload));
            napi_set_element(env, list, (uint32_t)i, e);
        }
        set(env, o, "interruptions", list);
        const char *cont = al_result_continuation(res, &len);
        if (cont) {
            set(env, o, "continuation", str(env, cont, len));
        }
    }
    return o;
}

static void deliver(napi_env env, napi_value dispatch, void *context, void *data)
{
    struct instance *inst = context;
    struct message *m = data;
    if (env == NULL) { /* the function is being torn down */
        if (m->call) {
            al_call_throw(m->call, "the Node.js environment is shutting down");
        }
        if (m->result) {
            al_result_free(m->result);
            al_run_release(m->run);
        }
        free(m);
        return;
    }
    napi_value argv[10];
    size_t argc = 0;
    napi_value undef;
    napi_get_undefined(env, &undef);
    argv[argc++] = num(env, m->kind);
    argv[argc++] = num(env, m->key);
    if (m->kind == MSG_CALL) {
        struct call_ref *ref = malloc(sizeof *ref);
        if (!ref) {
            al_call_throw(m->call, "out of memory");
            free(m);
            return;
        }
        ref->call = m->call;
        napi_value ext;
        if (napi_create_external(env, ref, call_ref_finalize, NULL, &ext) != napi_ok) {
            al_call_throw(m->call, "out of memory");
            free(ref);
            free(m);
            return;
        }
        size_t len = 0;
        const char *args = al_call_args(m->call, &len);
        argv[argc++] = ext;
        argv[argc++] = cstr(env, al_call_name(m->call));
        argv[argc++] = str(env, args, len);
        argv[argc++] = num(env, al_call_seq(m->call));
        const char *iid = al_call_interruption_id(m->call);
        if (iid) {
            const char *p = al_call_resume_payload(m->call, &len);
            argv[argc++] = cstr(env, iid);
            argv[argc++] = str(env, p, len);
            p = al_call_resolution(m->call, &len);
            argv[argc++] = str(env, p, len);
        }
    } else {
        argv[argc++] = result_object(env, m->result);
        al_result_free(m->result);
        al_run_release(m->run);
        m->ref->run = NULL;
        if (m->ref->dropped) {
            free(m->ref);
        }
        if (inst->active > 0 && --inst->active == 0) {
            napi_unref_threadsafe_function(env, inst->tsfn);
        }
    }
    free(m);
    napi_value ret;
    napi_call_function(env, undef, dispatch, argc, argv, &ret);
}

static void instance_cleanup(void *arg)
{
    struct instance *inst = arg;
    /* Runs still going are cancelled and their results freed (deliver with no env). */
    for (struct runner_ref *r = inst->runners; r; r = r->next) {
        al_runner_free(r->runner);
        r->runner = NULL;
        r->inst = NULL;
    }
    /* The refs are their externals' to free, which may happen before instance_finalize. */
    inst->runners = NULL;
    if (inst->tsfn) {
        napi_release_threadsafe_function(inst->tsfn, napi_tsfn_abort);
        inst->tsfn = NULL;
    }
}

static void instance_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    struct instance *inst = data;
    struct runner_ref *r = inst->runners;
    while (r) { /* the refs themselves: their externals may already be gone */
        struct runner_ref *next = r->next;
        r->inst = NULL;
        r = next;
    }
    free(inst);
}

static struct instance *instance_of(napi_env env)
{
    void *p = NULL;
    napi_get_instance_data(env, &p);
    return p;
}

static napi_value js_init(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    if (args_of(env, info, 1, argv) < 0) {
        return NULL;
    }
    struct instance *inst = instance_of(env);
    if (inst->tsfn) {
        return fail(env, "already initialised");
    }
    napi_value name = cstr(env, "airlock-run");
    if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, inst, deliver,
                                        &inst->tsfn) != napi_ok) {
        return fail(env, "cannot create the thread-safe function");
    }
    napi_unref_threadsafe_function(env, inst->tsfn); /* idle until a run starts */
    return NULL;
}

static void runner_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    struct runner_ref *ref = data;
    struct instance *inst = ref->inst;
    if (inst) {
        for (struct runner_ref **p = &inst->runners; *p; p = &(*p)->next) {
            if (*p == ref) {
                *p = ref->next;
                break;
            }
        }
    }
    al_runner_free(ref->runner);
    free(ref);
}

static napi_value js_new_runner(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    if (args_of(env, info, 1, argv) < 0) {
        return NULL;
    }
    struct instance *inst = instance_of(env);
    struct al_error err = { 0 };
    struct al_config *cfg = al_config_new();
    if (!cfg) {
        return fail(env, "out of memory");
    }
    napi_value v;
    char *s = NULL;
    size_t len = 0;
    int ok = 1;
    if ((v = get(env, argv[0], "worker")) != NULL) {
        ok = (s = utf8_of(env, v, &len)) != NULL && al_config_set_worker_path(cfg, s) == AL_OK;
        free(s);
    }
    if (ok && (v = get(env, argv[0], "warm")) != NULL) {
        uint32_t warm = 1;
        napi_get_value_uint32(env, v, &warm);
        ok = al_config_set_warm_workers(cfg, warm) == AL_OK;
    }
    if (ok && (v = get(env, argv[0], "secret")) != NULL) {
        ok = (s = utf8_of(env, v, &len)) != NULL &&
             al_config_set_continuation_key(cfg, s, len) == AL_OK;
        free(s);
    }
    if (ok && (v = get(env, argv[0], "verify")) != NULL) {
        uint32_t n = 0;
        napi_get_array_length(env, v, &n);
        for (uint32_t i = 0; ok && i < n; i++) {
            napi_value e;
            napi_get_element(env, v, i, &e);
            ok = (s = utf8_of(env, e, &len)) != NULL &&
                 al_config_add_verification_key(cfg, s, len) == AL_OK;
            free(s);
        }
    }
    if (ok && (v = get(env, argv[0], "ttlMs")) != NULL) {
        int64_t ttl = 0;
        napi_get_value_int64(env, v, &ttl);
        ok = ttl > 0 && al_config_set_continuation_ttl(cfg, (uint64_t)ttl) == AL_OK;
    }
    if (ok && (v = get(env, argv[0], "loader")) != NULL) {
        ok = (s = utf8_of(env, v, &len)) != NULL &&
             al_config_set_module_loader(cfg, on_call, on_call, inst, s) == AL_OK;
        free(s);
    }
    if (ok && (v = get(env, argv[0], "unsafeNoJail")) != NULL) {
        bool b = false;
        napi_get_value_bool(env, v, &b);
        ok = al_config_set_unsafe_no_jail(cfg, b) == AL_OK;
    }
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
        al_config_free(cfg);
        return NULL;
    }
    if (!ok) {
        al_config_free(cfg);
        return fail(env, "invalid runner options");
    }
    struct al_runner *runner = NULL;
    enum al_code rc = al_runner_new(cfg, &runner, &err);
    al_config_free(cfg);
    if (rc != AL_OK) {
        return fail_al(env, "cannot start the runner", &err);
    }
    struct runner_ref *ref = malloc(sizeof *ref);
    napi_value ext;
    if (!ref || napi_create_external(env, ref, runner_finalize, NULL, &ext) != napi_ok) {
        free(ref);
        al_runner_free(runner);
        return fail(env, "out of memory");
    }
    ref->runner = runner;
    ref->inst = inst;
    ref->next = inst->runners;
    inst->runners = ref;
    return ext;
}

static void run_ref_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    struct run_ref *ref = data;
    if (ref->run) {
        ref->dropped = 1; /* the result is still to come: deliver frees it */
    } else {
        free(ref);
    }
}

/* Applies one run option; 0, or -1 with an exception pending or *ret_rc set. */
static int run_opts_fill(napi_env env, napi_value o, struct al_run_opts *opts,
                         struct instance *inst, enum al_code *ret_rc)
{
    napi_value v;
    char *s = NULL;
    size_t len = 0;
    enum al_code rc = AL_OK;
    if (!(v = get(env, o, "source")) || !(s = utf8_of(env, v, &len))) {
        return -1;
    }
    rc = al_run_opts_set_source(opts, s, len, NULL);
    free(s);
    if (rc == AL_OK && (v = get(env, o, "type")) != NULL) {
        uint32_t type = 0;
        napi_get_value_uint32(env, v, &type);
        rc = al_run_opts_set_source_type(opts, type);
    }
    if (rc == AL_OK && (v = get(env, o, "hosts")) != NULL) {
        uint32_t n = 0;
        napi_get_array_length(env, v, &n);
        for (uint32_t i = 0; rc == AL_OK && i < n; i++) {
            napi_value e, name, sync;
            bool is_sync = false;
            napi_get_element(env, v, i, &e);
            napi_get_element(env, e, 0, &name);
            napi_get_element(env, e, 1, &sync);
            napi_get_value_bool(env, sync, &is_sync);
            if (!(s = utf8_of(env, name, &len))) {
                return -1;
            }
            rc = al_run_opts_add_host(opts, s, on_call, inst, is_sync ? AL_HOST_SYNC : 0);
            free(s);
        }
    }
    if (rc == AL_OK && (v = get(env, o, "limits")) != NULL) {
        uint32_t n = 0;
        napi_get_array_length(env, v, &n);
        for (uint32_t i = 0; rc == AL_OK && i < n; i++) {
            napi_value e, which, value;
            uint32_t w = 0;
            double d = 0;
            napi_get_element(env, v, i, &e);
            napi_get_element(env, e, 0, &which);
            napi_get_element(env, e, 1, &value);
            napi_get_value_uint32(env, which, &w);
            napi_get_value_double(env, value, &d);
            rc = d >= 1 ? al_run_opts_set_limit(opts, (enum al_limit)w, (uint64_t)d)
                        : AL_CONFIG_ERROR;
        }
    }
    static const char *const strings[] = { "context", "audience", "runId", "resume" };
    for (size_t k = 0; rc == AL_OK && k < sizeof strings / sizeof strings[0]; k++) {
        if ((v = get(env, o, strings[k])) == NULL) {
            continue;
        }
        if (!(s = utf8_of(env, v, &len))) {
            return -1;
        }
        switch (k) {
        case 0:
            rc = al_run_opts_set_context(opts, s, len);
            break;
        case 1:
            rc = al_run_opts_set_audience(opts, s);
            break;
        case 2:
            rc = al_run_opts_set_run_id(opts, s);
            break;
        default:
            rc = al_run_opts_set_resume(opts, s, len);
            break;
        }
        free(s);
    }
    if (rc == AL_OK && (v = get(env, o, "resolutions")) != NULL) {
        uint32_t n = 0;
        napi_get_array_length(env, v, &n);
        for (uint32_t i = 0; rc == AL_OK && i < n; i++) {
            napi_value e, call, json;
            uint32_t n_call = 0;
            size_t jl = 0;
            napi_get_element(env, v, i, &e);
            napi_get_element(env, e, 0, &call);
            napi_get_element(env, e, 1, &json);
            if (napi_get_value_uint32(env, call, &n_call) != napi_ok) {
                fail(env, "a resolution names its call by number");
                return -1;
            }
            if (!(s = utf8_of(env, json, &jl))) {
                return -1;
            }
            rc = al_run_opts_add_resolution_for_call(opts, n_call, s, jl);
            free(s);
        }
    }
    *ret_rc = rc;
    return rc == AL_OK ? 0 : -1;
}

static napi_value js_start(napi_env env, napi_callback_info info)
{
    napi_value argv[3];
    if (args_of(env, info, 3, argv) < 0) {
        return NULL;
    }
    struct runner_ref *rref = external_data(env, argv[0]);
    uint32_t key = 0;
    if (!rref || !rref->runner || napi_get_value_uint32(env, argv[1], &key) != napi_ok) {
        return fail(env, "start(runner, key, options)");
    }
    struct instance *inst = instance_of(env);
    struct al_run_opts *opts = al_run_opts_new();
    if (!opts) {
        return fail(env, "out of memory");
    }
    al_run_opts_set_userdata(opts, (void *)(uintptr_t)key);
    enum al_code rc = AL_OK;
    if (run_opts_fill(env, argv[2], opts, inst, &rc) < 0) {
        al_run_opts_free(opts);
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        if (!pending) {
            char msg[96];
            snprintf(msg, sizeof msg, "invalid run options (%s)", al_code_name(rc));
            napi_throw_error(env, al_code_name(rc), msg);
        }
        return NULL;
    }
    struct run_start *rs = malloc(sizeof *rs);
    struct run_ref *ref = malloc(sizeof *ref);
    napi_value ext;
    if (!rs || !ref || napi_create_external(env, ref, run_ref_finalize, NULL, &ext) != napi_ok) {
        free(rs);
        free(ref);
        al_run_opts_free(opts);
        return fail(env, "out of memory");
    }
    rs->inst = inst;
    rs->ref = ref;
    rs->key = key;
    struct al_error err = { 0 };
    ref->run = NULL;
    ref->dropped = 0;
    /* Counted before the start: the result may be posted before al_run_start returns. */
    if (inst->active++ == 0) {
        napi_ref_threadsafe_function(env, inst->tsfn);
    }
    rc = al_run_start(rref->runner, opts, on_done, rs, &ref->run, &err);
    al_run_opts_free(opts);
    if (rc != AL_OK) {
        free(rs); /* ref stays with its external, whose finalizer frees it */
        ref->run = NULL;
        if (--inst->active == 0) {
            napi_unref_threadsafe_function(env, inst->tsfn);
        }
        return fail_al(env, "cannot start the run", &err);
    }
    return ext;
}

/* A run whose result has arrived has no handle any more: cancelling it does nothing. */
static napi_value js_cancel(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    if (args_of(env, info, 1, argv) < 0) {
        return NULL;
    }
    struct run_ref *ref = external_data(env, argv[0]);
    if (ref && ref->run) {
        al_run_cancel(ref->run);
    }
    return NULL;
}

/* Takes the call out of its external, so that it is answered exactly once. */
static struct al_call *take_call(napi_env env, napi_value v)
{
    struct call_ref *ref = external_data(env, v);
    if (!ref) {
        fail(env, "not a call");
        return NULL;
    }
    struct al_call *call = ref->call;
    ref->call = NULL;
    if (!call) {
        fail(env, "the call was answered already");
    }
    return call;
}

/* How JavaScript answers a call (runner.ts has the same numbers). */
enum answer_kind {
    ANSWER_RETURN = 0,
    ANSWER_THROW = 1,
    ANSWER_TYPE_ERROR = 2,
    ANSWER_INTERRUPT = 3
};

/* answer(call, kind, text): text is boundary JSON (return, interrupt) or a message (throws). */
static napi_value js_answer(napi_env env, napi_callback_info info)
{
    napi_value argv[3];
    uint32_t kind = 0;
    if (args_of(env, info, 3, argv) < 0 || napi_get_value_uint32(env, argv[1], &kind) != napi_ok ||
        kind > ANSWER_INTERRUPT) {
        return fail(env, "answer(call, kind, text)");
    }
    struct al_call *call = take_call(env, argv[0]);
    if (!call) {
        return NULL;
    }
    size_t len = 0;
    char *text = utf8_of(env, argv[2], &len);
    if (!text) { /* not a string, or too long: the call is answered all the same */
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
        al_call_throw(call, "Host function failed.");
        return NULL;
    }
    switch ((enum answer_kind)kind) {
    case ANSWER_RETURN:
        al_call_return(call, text, len);
        break;
    case ANSWER_THROW:
        al_call_throw(call, text);
        break;
    case ANSWER_TYPE_ERROR:
        al_call_throw_type_error(call, text);
        break;
    case ANSWER_INTERRUPT:
        al_call_interrupt(call, text, len);
        break;
    }
    free(text);
    return NULL;
}

static napi_value js_limit_default(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    uint32_t which = 0;
    if (args_of(env, info, 1, argv) < 0 || napi_get_value_uint32(env, argv[0], &which) != napi_ok) {
        return NULL;
    }
    return num(env, (double)al_limit_default((enum al_limit)which));
}

static napi_value js_version(napi_env env, napi_callback_info info)
{
    (void)info;
    return cstr(env, al_version());
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */)
{
    struct instance *inst = calloc(1, sizeof *inst);
    if (!inst || napi_set_instance_data(env, inst, instance_finalize, NULL) != napi_ok) {
        free(inst);
        return fail(env, "out of memory");
    }
    napi_add_env_cleanup_hook(env, instance_cleanup, inst);
    static const struct {
        const char *name;
        napi_callback fn;
    } fns[] = {
        { "init", js_init },       { "newRunner", js_new_runner },
        { "start", js_start },     { "cancel", js_cancel },
        { "answer", js_answer },   { "limitDefault", js_limit_default },
        { "version", js_version },
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        napi_value f;
        napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f);
        napi_set_named_property(env, exports, fns[i].name, f);
    }
    return exports;
}
