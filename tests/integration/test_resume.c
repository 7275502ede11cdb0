/*
 * integration.resume - interrupt and resume through the C API with the real worker: batches,
 * partial resolutions, rounds, replay that never repeats a finished host call, determinism,
 * every way a continuation can be wrong (tampered, rebound, expired, divergent), key rotation
 * (also on a running runner) and the stored form's at-most-once.
 *
 * Divergent and time-shifted continuations are made the way an attacker who holds the key
 * would: decode, change, sign again (the internal codec, src/lib/continuation.h).
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "airlock.h"

#include "continuation.h"
#include "procinfo.h"

static const char key1[] = "k1-0123456789abcdef0123456789abcdef";
static const char key2[] = "k2-fedcba9876543210fedcba9876543210";

/* ------------------------------------------------------------ host functions */

struct counts {
    pthread_mutex_t mu;
    int get;     /* store.get invocations */
    int refund;  /* orders.refund invocations, fresh */
    int resumed; /* orders.refund invocations with a resume context */
    int sync;    /* clock.now invocations */
    char last_iid[64];
    char last_payload[256];
    char last_resolution[256];
};

static struct counts counts = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, "", "", "" };

static void reset_counts(void)
{
    counts.get = counts.refund = counts.resumed = counts.sync = 0;
    counts.last_iid[0] = counts.last_payload[0] = counts.last_resolution[0] = '\0';
}

/* store.get(n) -> n * 10 */
static void host_get(struct al_call *call, void *ud)
{
    (void)ud;
    counts.get++;
    long n = strtol(al_call_args(call, NULL) + 1, NULL, 10);
    char out[32];
    snprintf(out, sizeof out, "%ld", n * 10);
    al_call_return(call, out, strlen(out));
}

/* orders.refund(x): interrupts with {"refund":x}; resumed, returns the resolution - or, when the
 * resolution is "again", interrupts again (the id is kept), or throws for "deny". */
static void host_refund(struct al_call *call, void *ud)
{
    (void)ud;
    const char *iid = al_call_interruption_id(call);
    if (!iid) {
        counts.refund++;
        const char *args = al_call_args(call, NULL);
        char payload[128];
        snprintf(payload, sizeof payload, "{\"refund\":%.*s}", (int)strlen(args) - 2, args + 1);
        al_call_interrupt(call, payload, strlen(payload));
        return;
    }
    counts.resumed++;
    size_t plen, rlen;
    const char *payload = al_call_resume_payload(call, &plen);
    const char *resolution = al_call_resolution(call, &rlen);
    snprintf(counts.last_iid, sizeof counts.last_iid, "%s", iid);
    snprintf(counts.last_payload, sizeof counts.last_payload, "%s", payload);
    snprintf(counts.last_resolution, sizeof counts.last_resolution, "%s", resolution);
    if (strcmp(resolution, "\"again\"") == 0) {
        al_call_interrupt(call, "{\"asked\":2}", 11);
    } else if (strcmp(resolution, "\"deny\"") == 0) {
        al_call_throw(call, "refund denied");
    } else {
        al_call_return(call, resolution, rlen);
    }
}

/* clock.now(): synchronous, answers 7 */
static void host_now(struct al_call *call, void *ud)
{
    (void)ud;
    counts.sync++;
    al_call_return(call, "7", 1);
}

/* clock.stop(): synchronous, tries to interrupt */
static void host_sync_interrupt(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_interrupt(call, "1", 1);
}

/* store.late(): answered from another thread, after the caller returns */
static void *late_thread(void *arg)
{
    al_call_return(arg, "\"late\"", 6);
    return NULL;
}

static void host_late(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, late_thread, call), 0);
    pthread_detach(t);
}

/* ------------------------------------------------------------ helpers */

struct setup {
    const char *signing;   /* NULL: no key */
    const char *verifying; /* an older key, or NULL */
    struct al_store *store;
    int extra_function; /* register one more function: another manifest */
};

static struct al_runner *runner_with(const struct setup *s)
{
    struct al_config *c = al_config_new();
    assert_non_null(c);
    assert_int_equal(al_config_add_host(c, "store.get", host_get, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.late", host_late, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "orders.refund", host_refund, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "clock.now", host_now, NULL, AL_HOST_SYNC), AL_OK);
    assert_int_equal(al_config_add_host(c, "clock.stop", host_sync_interrupt, NULL, AL_HOST_SYNC),
                     AL_OK);
    if (s->extra_function) {
        assert_int_equal(al_config_add_host(c, "orders.cancel", host_get, NULL, 0), AL_OK);
    }
    if (s->signing) {
        assert_int_equal(al_config_set_continuation_key(c, s->signing, strlen(s->signing)), AL_OK);
    }
    if (s->verifying) {
        assert_int_equal(al_config_add_verification_key(c, s->verifying, strlen(s->verifying)),
                         AL_OK);
    }
    if (s->store) {
        al_config_set_store(c, s->store);
    }
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    struct al_runner *r = NULL;
    struct al_error err;
    if (al_runner_new(c, &r, &err) != AL_OK) {
        fail_msg("al_runner_new: %s", err.message);
    }
    al_config_free(c);
    return r;
}

static struct al_runner *default_runner(void)
{
    struct setup s = { key1, NULL, NULL, 0 };
    return runner_with(&s);
}

struct req {
    const char *src;
    const char *resume;
    const char *ids[20]; /* resolutions: ids[i] = values[i] */
    const char *values[20];
    uint32_t calls[20]; /* non-zero: resolve by the call instead of ids[i] */
    size_t n;
    const char *audience;
    const char *context;
    unsigned type; /* enum al_source_type, or-ed; 0: a JavaScript body */
};

static struct al_result *run_req(struct al_runner *r, const struct req *q)
{
    struct al_run_opts *o = al_run_opts_new();
    assert_non_null(o);
    assert_int_equal(al_run_opts_set_source(o, q->src, strlen(q->src), NULL), AL_OK);
    if (q->resume) {
        assert_int_equal(al_run_opts_set_resume(o, q->resume, strlen(q->resume)), AL_OK);
    }
    for (size_t i = 0; i < q->n; i++) {
        size_t len = strlen(q->values[i]);
        assert_int_equal(
                q->calls[i] ? al_run_opts_add_resolution_for_call(o, q->calls[i], q->values[i], len)
                            : al_run_opts_add_resolution(o, q->ids[i], q->values[i], len),
                AL_OK);
    }
    if (q->type) {
        assert_int_equal(al_run_opts_set_source_type(o, q->type), AL_OK);
    }
    if (q->audience) {
        assert_int_equal(al_run_opts_set_audience(o, q->audience), AL_OK);
    }
    if (q->context) {
        assert_int_equal(al_run_opts_set_context(o, q->context, strlen(q->context)), AL_OK);
    }
    struct al_result *res = NULL;
    struct al_error err;
    if (al_run(r, o, &res, &err) != AL_OK) {
        fail_msg("al_run: %s", err.message);
    }
    al_run_opts_free(o);
    return res;
}

static struct al_result *run_src(struct al_runner *r, const char *src)
{
    struct req q = { .src = src };
    return run_req(r, &q);
}

static void expect_completed(struct al_result *res, const char *json)
{
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fail_msg("expected completed, got status %d: %s: %s", al_result_status(res),
                 al_code_name(al_result_error_code(res)), al_result_error_message(res));
    }
    assert_string_equal(al_result_value(res, NULL), json);
}

static void expect_failure(struct al_result *res, enum al_code code, const char *part)
{
    if (al_result_status(res) != AL_STATUS_FAILED || al_result_error_code(res) != code) {
        fail_msg("expected failed %s, got status %d %s: %s", al_code_name(code),
                 al_result_status(res), al_code_name(al_result_error_code(res)),
                 al_result_error_message(res));
    }
    if (part && !strstr(al_result_error_message(res), part)) {
        fail_msg("message '%s' lacks '%s'", al_result_error_message(res), part);
    }
}

/* Checks an interrupted result and copies its continuation (free it). */
static char *expect_interrupted(struct al_result *res, size_t n)
{
    if (al_result_status(res) != AL_STATUS_INTERRUPTED) {
        fail_msg("expected interrupted, got status %d: %s: %s", al_result_status(res),
                 al_code_name(al_result_error_code(res)), al_result_error_message(res));
    }
    assert_int_equal(al_result_interruption_count(res), n);
    const char *c = al_result_continuation(res, NULL);
    assert_non_null(c);
    return strdup(c);
}

static const char *iid_of(struct al_result *res, size_t i)
{
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, i, &in), 0);
    return in.id;
}

/* Decodes a token with key1, lets `change` alter it, and signs it again with key1. */
static char *resign(const char *token, void (*change)(struct continuation *))
{
    struct cont_key k = { (uint8_t *)key1, strlen(key1) };
    struct continuation c;
    struct al_error err;
    if (cont_decode(token, strlen(token), &k, 1, 1u << 25, &c, &err) != AL_OK) {
        fail_msg("cont_decode: %s", err.message);
    }
    change(&c);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(cont_encode(&c, &k, 1u << 25, &out, &len, &err), AL_OK);
    cont_free(&c);
    return out;
}

/* ------------------------------------------------------------ behaviour */

static const char src_get_then_refund[] = "const a = await store.get(1);\n"
                                          "const r = await orders.refund(a);\n"
                                          "return [a, r];";

/* The completed call before the interruption runs exactly once over both runs; the interrupted
 * function is invoked again with its resume context. */
static void test_interrupt_then_resume(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    assert_int_equal(strncmp(cont, "alc1.", 5), 0);
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, 0, &in), 0);
    assert_string_equal(in.function, "orders.refund");
    assert_string_equal(in.args, "[10]");
    assert_string_equal(in.payload, "{\"refund\":10}");
    assert_int_equal(strlen(in.id), 32);
    char id[64];
    snprintf(id, sizeof id, "%s", in.id);
    struct al_stats st;
    al_result_stats(res, &st);
    assert_int_equal(st.host_calls, 2);
    assert_int_equal(al_result_interruption(res, 1, &in), -1);
    al_result_free(res);

    struct req q = { .src = src_get_then_refund,
                     .resume = cont,
                     .ids = { id },
                     .values = { "{\"approved\":true}" },
                     .n = 1 };
    res = run_req(r, &q);
    expect_completed(res, "[10,{\"approved\":true}]");
    al_result_stats(res, &st);
    assert_int_equal(st.host_calls, 1); /* only the re-invoked refund reached the host */
    assert_null(al_result_continuation(res, NULL));
    assert_int_equal(counts.get, 1);
    assert_int_equal(counts.refund, 1);
    assert_int_equal(counts.resumed, 1);
    assert_string_equal(counts.last_iid, id);
    assert_string_equal(counts.last_payload, "{\"refund\":10}");
    assert_string_equal(counts.last_resolution, "{\"approved\":true}");
    al_result_free(res);
    free(cont);
    al_runner_free(r);
}

static const char src_sixteen[] =
        "const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => orders.refund(i)));\n"
        "return rs;";

/* 16 concurrent interruptions come back together, in call order; half resolved leaves the
 * other half pending with the same ids and payloads; the rest completes the run. */
static void test_batch_and_partial(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_sixteen);
    char *cont = expect_interrupted(res, 16);
    char ids[16][40];
    for (size_t i = 0; i < 16; i++) {
        struct al_interruption in;
        assert_int_equal(al_result_interruption(res, i, &in), 0);
        char args[16];
        snprintf(args, sizeof args, "[%zu]", i);
        assert_string_equal(in.args, args);
        snprintf(ids[i], sizeof ids[i], "%s", in.id);
    }
    al_result_free(res);
    assert_int_equal(counts.refund, 16);

    /* resolve the even ones */
    struct req q = { .src = src_sixteen, .resume = cont };
    char values[16][16];
    for (size_t i = 0; i < 16; i += 2) {
        snprintf(values[i], sizeof values[i], "\"ok%zu\"", i);
        q.ids[q.n] = ids[i];
        q.values[q.n++] = values[i];
    }
    res = run_req(r, &q);
    char *cont2 = expect_interrupted(res, 8);
    for (size_t i = 0; i < 8; i++) {
        struct al_interruption in;
        assert_int_equal(al_result_interruption(res, i, &in), 0);
        assert_string_equal(in.id, ids[2 * i + 1]);
        char payload[32];
        snprintf(payload, sizeof payload, "{\"refund\":%zu}", 2 * i + 1);
        assert_string_equal(in.payload, payload);
    }
    al_result_free(res);
    assert_int_equal(counts.refund, 16); /* the pending ones were not invoked again */
    assert_int_equal(counts.resumed, 8);

    struct req q2 = { .src = src_sixteen, .resume = cont2 };
    for (size_t i = 1; i < 16; i += 2) {
        snprintf(values[i], sizeof values[i], "\"ok%zu\"", i);
        q2.ids[q2.n] = ids[i];
        q2.values[q2.n++] = values[i];
    }
    res = run_req(r, &q2);
    expect_completed(res,
                     "[\"ok0\",\"ok1\",\"ok2\",\"ok3\",\"ok4\",\"ok5\",\"ok6\",\"ok7\",\"ok8\","
                     "\"ok9\",\"ok10\",\"ok11\",\"ok12\",\"ok13\",\"ok14\",\"ok15\"]");
    assert_int_equal(counts.refund, 16);
    assert_int_equal(counts.resumed, 16);
    al_result_free(res);
    free(cont);
    free(cont2);
    al_runner_free(r);
}

/* Interruptions named by their calls (al_result_interruption_call,
 * al_run_opts_add_resolution_for_call), as an application showing its own ids does: the call
 * numbers are stable across a partial resume, a call without a pending interruption and one
 * interruption resolved both ways are refused, and nothing is invoked twice. */
static void test_resolution_by_call(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_sixteen);
    char *cont = expect_interrupted(res, 16);
    uint32_t calls[16];
    char first_id[40];
    snprintf(first_id, sizeof first_id, "%s", iid_of(res, 0));
    for (size_t i = 0; i < 16; i++) {
        calls[i] = al_result_interruption_call(res, i);
        assert_true(calls[i] > 0);
        assert_true(i == 0 || calls[i] > calls[i - 1]);
    }
    assert_int_equal(al_result_interruption_call(res, 16), 0);
    assert_int_equal(al_result_interruption_call(NULL, 0), 0);
    al_result_free(res);

    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_add_resolution_for_call(o, 0, "1", 1), AL_CONFIG_ERROR);
    al_run_opts_free(o);
    struct req unknown = {
        .src = src_sixteen, .resume = cont, .calls = { 9999 }, .values = { "1" }, .n = 1
    };
    res = run_req(r, &unknown);
    expect_failure(res, AL_CONFIG_ERROR, "no pending interruption");
    al_result_free(res);
    struct req both = { .src = src_sixteen,
                        .resume = cont,
                        .ids = { first_id, NULL },
                        .calls = { 0, calls[0] },
                        .values = { "1", "2" },
                        .n = 2 };
    res = run_req(r, &both);
    expect_failure(res, AL_CONFIG_ERROR, "twice");
    al_result_free(res);

    struct req even = { .src = src_sixteen, .resume = cont };
    char values[16][16];
    for (size_t i = 0; i < 16; i += 2) {
        snprintf(values[i], sizeof values[i], "\"ok%zu\"", i);
        even.calls[even.n] = calls[i];
        even.values[even.n++] = values[i];
    }
    res = run_req(r, &even);
    char *cont2 = expect_interrupted(res, 8);
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(al_result_interruption_call(res, i), calls[2 * i + 1]);
    }
    al_result_free(res);
    struct req odd = { .src = src_sixteen, .resume = cont2 };
    for (size_t i = 1; i < 16; i += 2) {
        snprintf(values[i], sizeof values[i], "\"ok%zu\"", i);
        odd.calls[odd.n] = calls[i];
        odd.values[odd.n++] = values[i];
    }
    res = run_req(r, &odd);
    expect_completed(res,
                     "[\"ok0\",\"ok1\",\"ok2\",\"ok3\",\"ok4\",\"ok5\",\"ok6\",\"ok7\",\"ok8\","
                     "\"ok9\",\"ok10\",\"ok11\",\"ok12\",\"ok13\",\"ok14\",\"ok15\"]");
    assert_int_equal(counts.refund, 16);
    assert_int_equal(counts.resumed, 16);
    al_result_free(res);
    free(cont);
    free(cont2);
    al_runner_free(r);
}

static const char src_rounds[] = "const out = [];\n"
                                 "for (let i = 1; i <= 3; i++) {\n"
                                 "  out.push(await store.get(i));\n"
                                 "  out.push(await orders.refund(i));\n"
                                 "}\n"
                                 "return out;";

/* Three sequential rounds; every finished call runs once in total. A resolution that asks the
 * function to interrupt again keeps the interruption id. */
static void test_rounds_and_interrupt_again(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_rounds);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);

    /* round 1, asked again: same id, new payload */
    struct req q = {
        .src = src_rounds, .resume = cont, .ids = { id }, .values = { "\"again\"" }, .n = 1
    };
    res = run_req(r, &q);
    char *cont_again = expect_interrupted(res, 1);
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, 0, &in), 0);
    assert_string_equal(in.id, id);
    assert_string_equal(in.payload, "{\"asked\":2}");
    al_result_free(res);

    const char *tok = cont_again;
    char *owned[3] = { NULL, NULL, NULL };
    for (int round = 1; round <= 3; round++) {
        struct req qr = { .src = src_rounds, .resume = tok, .ids = { id }, .n = 1 };
        char value[16];
        snprintf(value, sizeof value, "\"r%d\"", round);
        qr.values[0] = value;
        res = run_req(r, &qr);
        if (round < 3) {
            owned[round] = expect_interrupted(res, 1);
            snprintf(id, sizeof id, "%s", iid_of(res, 0));
            tok = owned[round];
        } else {
            expect_completed(res, "[10,\"r1\",20,\"r2\",30,\"r3\"]");
        }
        al_result_free(res);
    }
    assert_int_equal(counts.get, 3);
    assert_int_equal(counts.refund, 3);
    assert_int_equal(counts.resumed, 4);
    free(owned[1]);
    free(owned[2]);
    free(cont);
    free(cont_again);
    al_runner_free(r);
}

static const char src_race[] = "const refund = orders.refund(1);\n"
                               "const first = await Promise.race([refund, store.late()]);\n"
                               "const order = [];\n"
                               "await Promise.all([store.get(1).then(() => order.push('a')),\n"
                               "                   store.get(2).then(() => order.push('b'))]);\n"
                               "return [first, order, await refund];";

/* Promise.race with an interrupting call: the race, and the order reactions ran in, replay
 * exactly; the resolved call is then awaited. */
static void test_race(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_race);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);
    struct req q = { .src = src_race, .resume = cont, .ids = { id }, .values = { "5" }, .n = 1 };
    res = run_req(r, &q);
    expect_completed(res, "[\"late\",[\"a\",\"b\"],5]");
    assert_int_equal(counts.get, 2);
    al_result_free(res);
    /* A denied refund throws in the guest. */
    q.values[0] = "\"deny\"";
    res = run_req(r, &q);
    expect_failure(res, AL_HOST_FUNCTION_ERROR, "refund denied");
    al_result_free(res);
    free(cont);
    al_runner_free(r);
}

/* Date and Math.random replay identically: the replayed part sees the first run's values; a
 * synchronous call's result is ledgered too. */
static void test_determinism(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    const char *probe = "const before = [Date.now(), Math.random(), Math.random()];\n"
                        "const a = await store.late();\n"
                        "const mid = [Date.now(), Math.random(), new Date().toISOString()];\n"
                        "const s = clock.now();\n"
                        "console.log(JSON.stringify([before, a, mid, s]));\n"
                        "const r = await orders.refund(1);\n"
                        "return r;";
    struct al_result *res = run_src(r, probe);
    char *cont = expect_interrupted(res, 1);
    assert_int_equal(al_result_console_count(res), 1);
    char first[512];
    snprintf(first, sizeof first, "%s", al_result_console_text(res, 0, NULL, NULL));
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    struct al_stats st1, st2;
    al_result_stats(res, &st1);
    al_result_free(res);
    assert_int_equal(counts.sync, 1);
    struct req q = { .src = probe, .resume = cont, .ids = { id }, .values = { "1" }, .n = 1 };
    res = run_req(r, &q);
    expect_completed(res, "1");
    assert_int_equal(al_result_console_count(res), 1);
    assert_string_equal(al_result_console_text(res, 0, NULL, NULL), first);
    al_result_stats(res, &st2);
    assert_true(st1.seed == st2.seed);
    assert_true(st1.clock_ms == st2.clock_ms);
    assert_int_equal(counts.sync, 1); /* the synchronous call was answered from the ledger */
    al_result_free(res);
    free(cont);
    al_runner_free(r);
}

/* A 256-call ledger (the default host-call limit) replays, and its token stays compact. */
static void test_long_ledger(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    const char *src = "let sum = 0;\n"
                      "for (let i = 0; i < 255; i++) sum += await store.get(i);\n"
                      "return [sum, await orders.refund(sum)];";
    struct al_result *res = run_src(r, src);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);
    assert_true(strlen(cont) < 24 * 1024);
    struct req q = { .src = src, .resume = cont, .ids = { id }, .values = { "\"done\"" }, .n = 1 };
    res = run_req(r, &q);
    expect_completed(res, "[323850,\"done\"]");
    assert_int_equal(counts.get, 255);
    al_result_free(res);

    /* The continuation limit bounds a new token and one to resume. */
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_CONTINUATION_BYTES, 4096), AL_OK);
    struct al_error err;
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_OUTPUT_LIMIT, "continuation limit of 4096 bytes");
    al_result_free(res);
    assert_int_equal(al_run_opts_set_resume(o, cont, strlen(cont)), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, id, "1", 1), AL_OK);
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_PROTOCOL_ERROR, "continuation limit");
    al_result_free(res);
    al_run_opts_free(o);
    free(cont);
    al_runner_free(r);
}

/* ------------------------------------------------------------ refusals */

static void test_sync_and_keyless(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, "return clock.stop();");
    expect_failure(res, AL_PROTOCOL_ERROR, "synchronous");
    al_result_free(res);
    /* A payload is bounded like an answer. */
    struct al_run_opts *o = al_run_opts_new();
    const char *src = "return [await store.get(1), await orders.refund(1)];";
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_HOST_OUTPUT_BYTES, 8), AL_OK);
    struct al_error err;
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_BRIDGE_LIMIT, "interruption payload of host call #2");
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);

    struct setup none = { NULL, NULL, NULL, 0 };
    r = runner_with(&none);
    res = run_src(r, "return await store.get(4);"); /* no continuation needed: works */
    expect_completed(res, "40");
    al_result_free(res);
    res = run_src(r, "return await orders.refund(1);");
    expect_failure(res, AL_CONFIG_ERROR, "no continuation key");
    al_result_free(res);
    struct req q = {
        .src = "return 1;", .resume = "alc1.AAAA", .ids = { "x" }, .values = { "1" }, .n = 1
    };
    res = run_req(r, &q);
    expect_failure(res, AL_CONFIG_ERROR, "continuation key");
    al_result_free(res);
    al_runner_free(r);
}

static void test_resolution_ids(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);

    struct req unknown = { .src = src_get_then_refund,
                           .resume = cont,
                           .ids = { "00000000000000000000000000000000" },
                           .values = { "1" },
                           .n = 1 };
    res = run_req(r, &unknown);
    expect_failure(res, AL_CONFIG_ERROR, "no pending interruption");
    al_result_free(res);
    struct req twice = { .src = src_get_then_refund,
                         .resume = cont,
                         .ids = { id, id },
                         .values = { "1", "2" },
                         .n = 2 };
    res = run_req(r, &twice);
    expect_failure(res, AL_CONFIG_ERROR, "twice");
    al_result_free(res);
    struct req missing = { .src = src_get_then_refund, .resume = cont };
    res = run_req(r, &missing);
    expect_failure(res, AL_CONFIG_ERROR, "at least one resolution");
    al_result_free(res);
    struct req badjson = {
        .src = src_get_then_refund, .resume = cont, .ids = { id }, .values = { "{nope" }, .n = 1
    };
    res = run_req(r, &badjson);
    expect_failure(res, AL_CONFIG_ERROR, "not valid boundary JSON");
    al_result_free(res);
    assert_int_equal(counts.get, 1);
    assert_int_equal(counts.resumed, 0);
    free(cont);
    al_runner_free(r);
}

/* Every character of a token changed, and every truncation: refused, nothing invoked. */
static void test_every_byte_flipped(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);
    size_t len = strlen(cont);
    char *bad = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        memcpy(bad, cont, len + 1);
        bad[i] = bad[i] == 'A' ? 'B' : 'A';
        struct req q = {
            .src = src_get_then_refund, .resume = bad, .ids = { id }, .values = { "1" }, .n = 1
        };
        res = run_req(r, &q);
        if (al_result_status(res) != AL_STATUS_FAILED ||
            al_result_error_code(res) != AL_PROTOCOL_ERROR) {
            fail_msg("token with byte %zu changed was not refused: %s", i,
                     al_result_error_message(res));
        }
        al_result_free(res);
    }
    for (size_t cut = 0; cut < len; cut += 7) {
        memcpy(bad, cont, cut);
        bad[cut] = '\0';
        if (cut == 0) {
            continue; /* set_resume refuses an empty continuation itself */
        }
        struct req q = {
            .src = src_get_then_refund, .resume = bad, .ids = { id }, .values = { "1" }, .n = 1
        };
        res = run_req(r, &q);
        expect_failure(res, AL_PROTOCOL_ERROR, NULL);
        al_result_free(res);
    }
    assert_int_equal(counts.get, 1);
    assert_int_equal(counts.resumed, 0);
    free(bad);
    free(cont);
    al_runner_free(r);
}

/* A different source, manifest, audience, context or key: refused. The old key still verifies
 * after a rotation; a runner that dropped it refuses. */
static void test_binding_and_rotation(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct req first = { .src = src_get_then_refund,
                         .audience = "billing",
                         .context = "{\"tenant\":\"acme\"}" };
    struct al_result *res = run_req(r, &first);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);

    struct req q = { .src = src_get_then_refund,
                     .resume = cont,
                     .ids = { id },
                     .values = { "1" },
                     .n = 1,
                     .audience = "billing",
                     .context = "{\"tenant\":\"acme\"}" };
    struct req other = q;
    other.src = "const a = await store.get(1);\nreturn a;";
    res = run_req(r, &other);
    expect_failure(res, AL_PROTOCOL_ERROR, "another source");
    al_result_free(res);
    other = q;
    other.audience = NULL;
    res = run_req(r, &other);
    expect_failure(res, AL_PROTOCOL_ERROR, "audience 'billing', not 'airlock'");
    al_result_free(res);
    other = q;
    other.context = "{\"tenant\":\"evil\"}";
    res = run_req(r, &other);
    expect_failure(res, AL_PROTOCOL_ERROR, "application context");
    al_result_free(res);
    /* the same text as TypeScript or as a module is another program */
    static const unsigned types[] = { AL_SOURCE_TYPESCRIPT, AL_SOURCE_MODULE,
                                      AL_SOURCE_MODULE | AL_SOURCE_TYPESCRIPT };
    static const char *const names[] = { "not a TypeScript body", "not a JavaScript module",
                                         "not a TypeScript module" };
    for (size_t i = 0; i < 3; i++) {
        other = q;
        other.type = types[i];
        res = run_req(r, &other);
        expect_failure(res, AL_PROTOCOL_ERROR, names[i]);
        assert_non_null(strstr(al_result_error_message(res), "made for a JavaScript body"));
        al_result_free(res);
    }

    struct setup more = { key1, NULL, NULL, 1 };
    struct al_runner *r2 = runner_with(&more);
    res = run_req(r2, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "other host functions");
    al_result_free(res);
    al_runner_free(r2);

    struct setup wrong = { key2, NULL, NULL, 0 };
    r2 = runner_with(&wrong);
    res = run_req(r2, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "signature");
    al_result_free(res);
    al_runner_free(r2);
    assert_int_equal(counts.get, 1);
    assert_int_equal(counts.resumed, 0);

    struct setup rotated = { key2, key1, NULL, 0 };
    r2 = runner_with(&rotated);
    res = run_req(r2, &q);
    expect_completed(res, "[10,1]");
    al_result_free(res);
    al_runner_free(r2);
    free(cont);
    al_runner_free(r);
}

/* A config holding only continuation keys, for al_runner_set_continuation_keys. */
static struct al_config *keys_config(const char *signing, const char *verifying)
{
    struct al_config *c = al_config_new();
    assert_non_null(c);
    if (signing) {
        assert_int_equal(al_config_set_continuation_key(c, signing, strlen(signing)), AL_OK);
    }
    if (verifying) {
        assert_int_equal(al_config_add_verification_key(c, verifying, strlen(verifying)), AL_OK);
    }
    return c;
}

static void set_keys(struct al_runner *r, const char *signing, const char *verifying)
{
    struct al_config *c = keys_config(signing, verifying);
    struct al_error err;
    if (al_runner_set_continuation_keys(r, c, &err) != AL_OK) {
        fail_msg("al_runner_set_continuation_keys: %s", err.message);
    }
    al_config_free(c);
}

/* 1 when `token` verifies under `key` alone (the internal codec). */
static int signed_with(const char *token, const char *key)
{
    struct cont_key k = { (uint8_t *)key, strlen(key) };
    struct continuation c;
    struct al_error err;
    int ok = cont_decode(token, strlen(token), &k, 1, 1u << 25, &c, &err) == AL_OK;
    cont_free(&c);
    return ok;
}

/* Interrupts src_get_then_refund on `r`; returns its continuation and the interruption's id. */
static char *interrupt_refund(struct al_runner *r, char id[40])
{
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    snprintf(id, 40, "%s", iid_of(res, 0));
    al_result_free(res);
    return cont;
}

static struct al_result *resume_refund(struct al_runner *r, const char *cont, const char *id)
{
    struct req q = {
        .src = src_get_then_refund, .resume = cont, .ids = { id }, .values = { "1" }, .n = 1
    };
    return run_req(r, &q);
}

/* Keys replaced on a running runner: the new signing key signs the next continuation, the old
 * one keeps verifying as long as it is given, and once dropped its continuations are refused
 * like any other bad signature. */
static void test_set_continuation_keys(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner(); /* signs with key1 */
    char id_a[40], id_b[40];
    char *cont_a = interrupt_refund(r, id_a);
    assert_true(signed_with(cont_a, key1));

    set_keys(r, key2, key1);
    struct al_result *res = resume_refund(r, cont_a, id_a);
    expect_completed(res, "[10,1]");
    al_result_free(res);
    char *cont_b = interrupt_refund(r, id_b);
    assert_true(signed_with(cont_b, key2));
    assert_false(signed_with(cont_b, key1));
    res = resume_refund(r, cont_b, id_b);
    expect_completed(res, "[10,1]");
    al_result_free(res);

    set_keys(r, key2, NULL); /* key1 dropped */
    res = resume_refund(r, cont_a, id_a);
    expect_failure(res, AL_PROTOCOL_ERROR, "signature");
    al_result_free(res);
    res = resume_refund(r, cont_b, id_b);
    expect_completed(res, "[10,1]");
    al_result_free(res);
    assert_int_equal(counts.resumed, 3); /* the refused resume reached no host function */
    free(cont_a);
    free(cont_b);
    al_runner_free(r);
}

/* Refusals leave the runner's keys as they were. */
static void test_set_continuation_keys_refused(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    char id[40];
    char *cont = interrupt_refund(r, id);
    struct al_config *good = keys_config(key2, NULL);
    struct al_config *unsigned_only = keys_config(NULL, key2);
    struct al_config *empty = keys_config(NULL, NULL);
    struct al_error err;
    assert_int_equal(al_runner_set_continuation_keys(NULL, good, &err), AL_CONFIG_ERROR);
    assert_int_equal(al_runner_set_continuation_keys(r, NULL, &err), AL_CONFIG_ERROR);
    assert_int_equal(al_runner_set_continuation_keys(r, unsigned_only, &err), AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "signing key"));
    assert_int_equal(al_runner_set_continuation_keys(r, empty, NULL), AL_CONFIG_ERROR);
    struct al_result *res = resume_refund(r, cont, id); /* still key1's runner */
    expect_completed(res, "[10,1]");
    al_result_free(res);
    free(cont);
    al_runner_free(r);

    struct setup none = { NULL, NULL, NULL, 0 };
    r = runner_with(&none);
    assert_int_equal(al_runner_set_continuation_keys(r, good, &err), AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "without continuation keys"));
    res = run_src(r, "return await orders.refund(1);"); /* still records no continuations */
    expect_failure(res, AL_CONFIG_ERROR, "no continuation key");
    al_result_free(res);
    al_runner_free(r);
    al_config_free(good);
    al_config_free(unsigned_only);
    al_config_free(empty);
}

struct swapper {
    struct al_runner *runner;
    struct al_config *configs[2];
    atomic_int stop;
    int failed; /* calls that did not return AL_OK; read after the join */
};

/* Swaps between two key sets that both verify key1 and key2, until told to stop. (cmocka's
 * assertions belong to the test's thread: failures are counted instead.) */
static void *swap_keys(void *arg)
{
    struct swapper *s = arg;
    for (unsigned i = 0; !atomic_load(&s->stop); i++) {
        s->failed += al_runner_set_continuation_keys(s->runner, s->configs[i % 2], NULL) != AL_OK;
    }
    return NULL;
}

/* Keys swapped in a loop on another thread while runs interrupt and resume: every continuation
 * is signed and verified under whole key sets (under ASan, a key freed while in use fails). */
static void test_set_continuation_keys_concurrent(void **state)
{
    (void)state;
    reset_counts();
    struct setup both = { key1, key2, NULL, 0 };
    struct swapper s = {
        runner_with(&both), { keys_config(key1, key2), keys_config(key2, key1) }, 0, 0
    };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, swap_keys, &s), 0);
    for (int i = 0; i < 12; i++) {
        char id[40];
        char *cont = interrupt_refund(s.runner, id);
        struct al_result *res = resume_refund(s.runner, cont, id);
        expect_completed(res, "[10,1]");
        al_result_free(res);
        free(cont);
    }
    atomic_store(&s.stop, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(s.failed, 0);
    al_config_free(s.configs[0]);
    al_config_free(s.configs[1]);
    al_runner_free(s.runner);
}

static void expire(struct continuation *c)
{
    c->issued_ms -= 2 * 3600 * 1000;
    c->expires_ms = c->issued_ms + 3600 * 1000;
}

static void from_future(struct continuation *c)
{
    c->issued_ms += 3600 * 1000;
    c->expires_ms += 3600 * 1000;
}

static void near_future(struct continuation *c)
{
    c->issued_ms += AL_CONTINUATION_SKEW_MS / 2; /* within the allowed clock skew */
}

static void test_expiry(void **state)
{
    (void)state;
    reset_counts();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_continuation_ttl(c, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_config_set_continuation_key(c, "short", 5), AL_CONFIG_ERROR);
    al_config_free(c);

    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);
    struct cont_key k = { (uint8_t *)key1, strlen(key1) };
    struct continuation dc;
    struct al_error err;
    assert_int_equal(cont_decode(cont, strlen(cont), &k, 1, 1u << 25, &dc, &err), AL_OK);
    assert_true(dc.expires_ms - dc.issued_ms == AL_CONTINUATION_TTL_MS);
    cont_free(&dc);

    char *old = resign(cont, expire);
    struct req q = {
        .src = src_get_then_refund, .resume = old, .ids = { id }, .values = { "1" }, .n = 1
    };
    res = run_req(r, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "expired");
    al_result_free(res);
    char *future = resign(cont, from_future);
    q.resume = future;
    res = run_req(r, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "future");
    al_result_free(res);
    char *skewed = resign(cont, near_future);
    q.resume = skewed;
    res = run_req(r, &q);
    expect_completed(res, "[10,1]");
    al_result_free(res);
    free(old);
    free(future);
    free(skewed);
    free(cont);
    al_runner_free(r);
}

/* ------------------------------------------------------------ divergence */

static void change_args(struct continuation *c)
{
    c->entries[0].args_digest[0] ^= 1;
}

static void change_function(struct continuation *c)
{
    free(c->entries[0].fn);
    c->entries[0].fn = strdup("store.late");
}

static void drop_first(struct continuation *c)
{
    /* the ledger lost call #1: the run's first call is then one it does not have */
    free(c->entries[0].fn);
    free(c->entries[0].payload);
    memmove(&c->entries[0], &c->entries[1], (c->nentries - 1) * sizeof c->entries[0]);
    c->nentries--;
}

static void add_unmade_call(struct continuation *c)
{
    /* a call #9 the run never makes: it stops waiting on the resolved refund */
    struct cont_entry *e = realloc(c->entries, (c->nentries + 1) * sizeof *e);
    assert_non_null(e);
    c->entries = e;
    struct cont_entry *n = &e[c->nentries++];
    *n = e[0];
    n->id = 9;
    n->fn = strdup(e[0].fn);
    n->payload = strdup(e[0].payload);
    n->settle = 1;
}

static void swap_settle(struct continuation *c)
{
    c->entries[0].settle = 1;
    c->entries[1].settle = 0;
}

static void test_divergence(void **state)
{
    (void)state;
    reset_counts();
    struct al_runner *r = default_runner();
    struct al_result *res = run_src(r, src_get_then_refund);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    al_result_free(res);

    static const struct {
        void (*change)(struct continuation *);
        const char *message;
    } cases[] = {
        { change_args, "other arguments" },
        { change_function, "is to store.get, the ledger has store.late" },
        { drop_first, "not in the ledger" },
        { add_unmade_call, "without making every call" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = resign(cont, cases[i].change);
        struct req q = {
            .src = src_get_then_refund, .resume = t, .ids = { id }, .values = { "1" }, .n = 1
        };
        res = run_req(r, &q);
        expect_failure(res, AL_PROTOCOL_ERROR, cases[i].message);
        al_result_free(res);
        free(t);
    }
    assert_int_equal(counts.get, 1);
    assert_int_equal(counts.resumed, 0); /* no host function ran */

    /* Early completion: the ledger holds calls a shorter run never makes. */
    const char *two = "const a = await store.get(1);\nconst b = await store.get(2);\n"
                      "return [a, b, await orders.refund(0)];";
    res = run_src(r, two);
    char *cont2 = expect_interrupted(res, 1);
    char id2[40];
    snprintf(id2, sizeof id2, "%s", iid_of(res, 0));
    al_result_free(res);
    /* Changed order: the second call's answer recorded as first, so the replay cannot give
     * the first call its answer and the run waits on it. */
    char *t = resign(cont2, swap_settle);
    struct req q = { .src = two, .resume = t, .ids = { id2 }, .values = { "1" }, .n = 1 };
    res = run_req(r, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "diverged");
    al_result_free(res);
    free(t);
    free(cont2);
    free(cont);
    al_runner_free(r);
}

/* ------------------------------------------------------------ stored form */

struct racer {
    struct al_runner *runner;
    const char *id_value;
    const char *iid;
    struct al_result *res;
    pthread_barrier_t *go;
};

static void *race_resume(void *arg)
{
    struct racer *x = arg;
    pthread_barrier_wait(x->go);
    struct req q = { .src = src_get_then_refund,
                     .resume = x->id_value,
                     .ids = { x->iid },
                     .values = { "\"once\"" },
                     .n = 1 };
    x->res = run_req(x->runner, &q);
    return NULL;
}

static void test_store_at_most_once(void **state)
{
    (void)state;
    reset_counts();
    char dir[] = "/tmp/airlock-store-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct al_store *store = NULL;
    struct al_error err;
    assert_int_equal(al_store_file_new(dir, &store, &err), AL_OK);
    struct setup s = { key1, NULL, store, 0 };
    struct al_runner *r = runner_with(&s);

    for (int round = 0; round < 5; round++) {
        struct al_result *res = run_src(r, src_get_then_refund);
        char *sid = expect_interrupted(res, 1);
        assert_int_equal(strncmp(sid, "als_", 4), 0);
        char iid[40];
        snprintf(iid, sizeof iid, "%s", iid_of(res, 0));
        al_result_free(res);

        /* a bad attempt (wrong context) gives the claim back */
        struct req badq = { .src = src_get_then_refund,
                            .resume = sid,
                            .ids = { iid },
                            .values = { "1" },
                            .n = 1,
                            .context = "other" };
        res = run_req(r, &badq);
        expect_failure(res, AL_PROTOCOL_ERROR, "application context");
        al_result_free(res);

        int before = counts.resumed;
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        struct racer a = { r, sid, iid, NULL, &go };
        struct racer b = { r, sid, iid, NULL, &go };
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race_resume, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race_resume, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        int completed = (al_result_status(a.res) == AL_STATUS_COMPLETED) +
                        (al_result_status(b.res) == AL_STATUS_COMPLETED);
        assert_int_equal(completed, 1);
        struct al_result *loser = al_result_status(a.res) == AL_STATUS_COMPLETED ? b.res : a.res;
        struct al_result *winner = loser == a.res ? b.res : a.res;
        expect_completed(winner, "[10,\"once\"]");
        expect_failure(loser, AL_PROTOCOL_ERROR, "already resumed");
        assert_int_equal(counts.resumed, before + 1);
        al_result_free(a.res);
        al_result_free(b.res);

        /* and never again */
        struct req again = {
            .src = src_get_then_refund, .resume = sid, .ids = { iid }, .values = { "1" }, .n = 1
        };
        res = run_req(r, &again);
        expect_failure(res, AL_PROTOCOL_ERROR, NULL);
        al_result_free(res);
        free(sid);
    }
    /* nothing is left behind: every stored continuation was consumed */
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *ent;
    int files = 0;
    while ((ent = readdir(d))) {
        files += ent->d_name[0] != '.';
    }
    closedir(d);
    assert_int_equal(files, 0);
    rmdir(dir);
    al_runner_free(r);
    al_store_free(store);
}

/* ------------------------------------------------------------ review regressions */

/* A resolved interruption is invoked only once the replay has caught up: a replay that fails
 * on its way (here its timeout) performs nothing, and a stored continuation is given back. */
static void test_replay_failure_invokes_nothing(void **state)
{
    (void)state;
    reset_counts();
    char dir[] = "/tmp/airlock-store-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct al_store *store = NULL;
    struct al_error err;
    assert_int_equal(al_store_file_new(dir, &store, &err), AL_OK);
    struct setup s = { key1, NULL, store, 0 };
    struct al_runner *r = runner_with(&s);
    const char *src = "const refund = orders.refund(1);\n"
                      "const slow = store.get(1).then((v) => {\n"
                      "  let x = 0; for (let i = 0; i < 3e6; i++) x += i % 7; return v + (x > 0);\n"
                      "});\n"
                      "return [await slow, await refund];";
    struct al_result *res = run_src(r, src);
    char *sid = expect_interrupted(res, 1);
    char iid[40];
    snprintf(iid, sizeof iid, "%s", iid_of(res, 0));
    al_result_free(res);

    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    assert_int_equal(al_run_opts_set_resume(o, sid, strlen(sid)), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, iid, "1", 1), AL_OK);
    assert_int_equal(al_run_opts_set_limit(o, AL_LIMIT_TIMEOUT_MS, 5), AL_OK);
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_TIMEOUT, NULL);
    al_result_free(res);
    al_run_opts_free(o);
    assert_int_equal(counts.resumed, 0);

    struct req q = { .src = src, .resume = sid, .ids = { iid }, .values = { "\"paid\"" }, .n = 1 };
    res = run_req(r, &q); /* the continuation was given back: it still works */
    expect_completed(res, "[11,\"paid\"]");
    al_result_free(res);
    assert_int_equal(counts.resumed, 1);
    free(sid);
    al_runner_free(r);
    al_store_free(store);
    rmdir(dir);
}

/* A stored continuation survives a resume whose worker cannot even start. */
static void test_store_survives_start_failure(void **state)
{
    (void)state;
    reset_counts();
    char dir[] = "/tmp/airlock-store-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char worker[300];
    char moved[300];
    snprintf(worker, sizeof worker, "%s/worker", dir);
    snprintf(moved, sizeof moved, "%s/worker.away", dir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", getenv("AIRLOCK_WORKER"), worker);
    assert_int_equal(system(cmd), 0);
    struct al_store *store = NULL;
    struct al_error err;
    char sdir[300];
    snprintf(sdir, sizeof sdir, "%s/store", dir);
    assert_int_equal(al_store_file_new(sdir, &store, &err), AL_OK);

    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.get", host_get, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "orders.refund", host_refund, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key1, strlen(key1)), AL_OK);
    assert_int_equal(al_config_set_worker_path(c, worker), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    al_config_set_store(c, store);
    struct al_runner *r = NULL;
    assert_int_equal(al_runner_new(c, &r, &err), AL_OK);
    al_config_free(c);

    struct al_result *res = run_src(r, src_get_then_refund);
    char *sid = expect_interrupted(res, 1);
    char iid[40];
    snprintf(iid, sizeof iid, "%s", iid_of(res, 0));
    al_result_free(res);

    assert_int_equal(rename(worker, moved), 0);
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(
            al_run_opts_set_source(o, src_get_then_refund, strlen(src_get_then_refund), NULL),
            AL_OK);
    assert_int_equal(al_run_opts_set_resume(o, sid, strlen(sid)), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, iid, "1", 1), AL_OK);
    res = NULL;
    assert_int_not_equal(al_run(r, o, &res, &err), AL_OK);
    assert_null(res);
    al_run_opts_free(o);
    assert_int_equal(rename(moved, worker), 0);

    struct req q = {
        .src = src_get_then_refund, .resume = sid, .ids = { iid }, .values = { "2" }, .n = 1
    };
    res = run_req(r, &q);
    expect_completed(res, "[10,2]");
    al_result_free(res);
    free(sid);
    al_runner_free(r);
    al_store_free(store);
    unlink(worker);
    rmdir(sdir);
    rmdir(dir);
}

static struct al_call *held_flush;

/* sync.flush(): held until store.hold answers */
static void host_flush(struct al_call *call, void *ud)
{
    (void)ud;
    held_flush = call;
}

/* store.hold(): answers itself, then the held sync call - so its answer reaches the worker
 * while the worker waits in the sync call */
static void host_hold(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_return(call, "1", 1);
    if (held_flush) {
        al_call_return(held_flush, "7", 1);
        held_flush = NULL;
    }
}

/* An async answer that arrives during a sync call is an answer, even when the guest returns
 * right after the sync call. */
static void test_answer_during_sync_call(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "store.hold", host_hold, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "sync.flush", host_flush, NULL, AL_HOST_SYNC), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    struct al_runner *r = NULL;
    struct al_error err;
    assert_int_equal(al_runner_new(c, &r, &err), AL_OK);
    al_config_free(c);
    struct al_result *res = run_src(r, "store.hold().then(() => {});\nreturn sync.flush();");
    expect_completed(res, "7");
    al_result_free(res);
    al_runner_free(r);
}

static void test_clock_range(void **state)
{
    (void)state;
    struct al_runner *r = default_runner();
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_source(o, "return 1", 8, NULL), AL_OK);
    al_run_opts_set_clock(o, AL_CLOCK_MAX_MS + 1);
    struct al_result *res = NULL;
    struct al_error err;
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_failure(res, AL_CONFIG_ERROR, "range of a JavaScript Date");
    al_result_free(res);
    al_run_opts_set_clock(o, -AL_CLOCK_MAX_MS);
    assert_int_equal(al_run(r, o, &res, &err), AL_OK);
    expect_completed(res, "1");
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
}

/* ------------------------------------------------------------ modules */

static int module_loads;

static void *load_later(void *arg)
{
    struct al_call *call = arg;
    const char *name = al_call_args(call, NULL);
    if (strstr(name, "\"/refund.js\"")) {
        static const char src[] = "\"export const go = (x) => orders.refund(x);\"";
        al_call_return(call, src, sizeof src - 1);
    } else {
        al_call_throw(call, "no such module");
    }
    return NULL;
}

/* load answers from another thread, later: loaders may be asynchronous */
static void module_load(struct al_call *call, void *ud)
{
    (void)ud;
    module_loads++;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, load_later, call), 0);
    pthread_detach(t);
}

static void module_resolve(struct al_call *call, void *ud)
{
    (void)ud;
    const char *args = al_call_args(call, NULL);
    if (strncmp(args, "[\"./refund.js\"", 14) == 0) {
        al_call_return(call, "\"/refund.js\"", 12);
    } else {
        al_call_throw(call, "not found");
    }
}

static struct al_runner *module_runner(const char *identity)
{
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "orders.refund", host_refund, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key1, strlen(key1)), AL_OK);
    assert_int_equal(al_config_set_module_loader(c, module_resolve, module_load, NULL, identity),
                     AL_OK);
    assert_int_equal(al_config_set_module_loader(c, module_resolve, module_load, NULL, identity),
                     AL_CONFIG_ERROR);
    struct al_runner *r = NULL;
    struct al_error err;
    if (al_runner_new(c, &r, &err) != AL_OK) {
        fail_msg("al_runner_new: %s", err.message);
    }
    al_config_free(c);
    return r;
}

/* Modules across interrupt and resume: a module is loaded once per logical run (the resume
 * answers its loads from the ledger), and the continuation is bound to the loader's identity. */
static void test_modules_resume(void **state)
{
    (void)state;
    reset_counts();
    module_loads = 0;
    struct al_runner *r = module_runner("test-loader:1");
    const char *src = "const m = await import('./refund.js');\n"
                      "return [await m.go(3), typeof globalThis['#modules']];";
    struct al_result *res = run_src(r, src);
    char *cont = expect_interrupted(res, 1);
    char id[40];
    snprintf(id, sizeof id, "%s", iid_of(res, 0));
    struct al_stats st;
    al_result_stats(res, &st);
    assert_int_equal(st.host_calls, 3); /* resolve, load, refund */
    al_result_free(res);
    assert_int_equal(module_loads, 1);

    struct req q = { .src = src, .resume = cont, .ids = { id }, .values = { "\"ok\"" }, .n = 1 };
    res = run_req(r, &q);
    expect_completed(res, "[\"ok\",\"undefined\"]");
    al_result_free(res);
    assert_int_equal(module_loads, 1);

    struct al_runner *other = module_runner("test-loader:2");
    res = run_req(other, &q);
    expect_failure(res, AL_PROTOCOL_ERROR, "other host functions");
    al_result_free(res);
    al_runner_free(other);

    /* A loader's error reaches the guest as the import's error. */
    res = run_src(r, "try { await import('./nope.js'); } catch (e) { return e.message; }");
    expect_completed(res, "\"not found\"");
    al_result_free(res);
    free(cont);
    al_runner_free(r);
}

/* ------------------------------------------------------------ host memory */

#define PEAK_RSS_CHILD   "--peak-rss-child"
#define PEAK_RSS_MAX_KIB (48 * 1024)

static void host_null(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_return(call, "null", 4);
}

/* In a fresh process (this executable again, so nothing of the other tests counts): with a
 * continuation key set, a guest makes 256 sequential calls of almost the host-args limit each.
 * Prints the process's peak RSS in KiB. */
static int peak_rss_child(void)
{
    struct al_config *c = al_config_new();
    struct al_runner *r = NULL;
    struct al_error err;
    if (!c || al_config_add_host(c, "h.null", host_null, NULL, 0) != AL_OK ||
        al_config_set_continuation_key(c, key1, strlen(key1)) != AL_OK ||
        al_config_set_warm_workers(c, 0) != AL_OK || al_runner_new(c, &r, &err) != AL_OK) {
        fprintf(stderr, "peak-rss child: no runner\n");
        return 1;
    }
    al_config_free(c);
    const char *src = "for (let i = 0; i < 256; i++) await h.null('x'.repeat(1048566));\n"
                      "return 'done';";
    struct al_run_opts *o = al_run_opts_new();
    struct al_result *res = NULL;
    if (!o || al_run_opts_set_source(o, src, strlen(src), NULL) != AL_OK ||
        al_run(r, o, &res, &err) != AL_OK) {
        fprintf(stderr, "peak-rss child: al_run failed\n");
        return 1;
    }
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fprintf(stderr, "peak-rss child: %s: %s\n", al_code_name(al_result_error_code(res)),
                al_result_error_message(res));
        return 1;
    }
    struct al_stats stats;
    al_result_stats(res, &stats);
    if (stats.host_calls != 256) {
        fprintf(stderr, "peak-rss child: %u host calls\n", (unsigned)stats.host_calls);
        return 1;
    }
    printf("%ld\n", procinfo_peak_rss_kib(0));
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
    return 0;
}

/* The host's memory for one run is bounded by the calls in flight, not by the number of calls:
 * the ledger keeps a call's argument bytes only until it is answered (the token needs only their
 * digest). Keeping them all made that loop hold ~263 MiB of the host for one run. */
static void test_host_memory_bounded(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(procinfo_run_self(PEAK_RSS_CHILD, out, sizeof out), 0);
    long kib = strtol(out, NULL, 10);
    print_message("host peak RSS after 256 calls of ~1 MiB: %ld KiB\n", kib);
    assert_true(kib > 0);
    if (kib >= PEAK_RSS_MAX_KIB) {
        fail_msg("the host peaked at %ld KiB, above %d KiB", kib, PEAK_RSS_MAX_KIB);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], PEAK_RSS_CHILD) == 0) {
        return peak_rss_child();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interrupt_then_resume),
        cmocka_unit_test(test_batch_and_partial),
        cmocka_unit_test(test_resolution_by_call),
        cmocka_unit_test(test_rounds_and_interrupt_again),
        cmocka_unit_test(test_race),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_long_ledger),
        cmocka_unit_test(test_sync_and_keyless),
        cmocka_unit_test(test_resolution_ids),
        cmocka_unit_test(test_every_byte_flipped),
        cmocka_unit_test(test_binding_and_rotation),
        cmocka_unit_test(test_set_continuation_keys),
        cmocka_unit_test(test_set_continuation_keys_refused),
        cmocka_unit_test(test_set_continuation_keys_concurrent),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_divergence),
        cmocka_unit_test(test_store_at_most_once),
        cmocka_unit_test(test_modules_resume),
        cmocka_unit_test(test_replay_failure_invokes_nothing),
        cmocka_unit_test(test_store_survives_start_failure),
        cmocka_unit_test(test_answer_during_sync_call),
        cmocka_unit_test(test_clock_range),
        cmocka_unit_test(test_host_memory_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
