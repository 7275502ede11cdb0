/*
 * integration.journal - the journal through the C API with the real worker: every answer
 * journaled once, before the guest sees it; a run started from a whole journal, or from any
 * prefix of it, calls the host only for what the journal does not have and gets the same value;
 * divergence; held answers and their release; malformed journals; a journal across a
 * continuation's resume.
 */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "airlock.h"

#define SEED      42
#define CLOCK     1700000000000LL
#define WAIT_SECS 60 /* a deadline for conditions that hold at once unless something is broken */

static const char key[] = "k1-0123456789abcdef0123456789abcdef";

/* ------------------------------------------------------------ host functions */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int invoked;          /* every host invocation */
static int now_done;         /* clock.now() was invoked */
static int get17_done;       /* store.get(17) was invoked */
static int release_sent;     /* the test is releasing a held answer */
static int get3_saw_release; /* store.get(3) was invoked after that */

/* store.get(n) -> n * 10, at once */
static void host_get(struct al_call *call, void *ud)
{
    (void)ud;
    long n = strtol(al_call_args(call, NULL) + 1, NULL, 10);
    char out[32];
    snprintf(out, sizeof out, "%ld", n * 10);
    al_call_return(call, out, strlen(out));
    pthread_mutex_lock(&mu);
    invoked++;
    get17_done |= n == 17;
    if (n == 3) {
        get3_saw_release = release_sent;
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* store.slow(n) -> n * 100 from another thread: slow(2) once clock.now() has answered, slow(3)
 * once store.get(17) has, so that the order of answers (and the logical clock) is the same
 * however busy the machine is. */
static void *slow_thread(void *arg)
{
    struct al_call *call = arg;
    long n = strtol(al_call_args(call, NULL) + 1, NULL, 10);
    pthread_mutex_lock(&mu);
    while ((n == 2 && !now_done) || (n == 3 && !get17_done)) {
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    char out[32];
    snprintf(out, sizeof out, "%ld", n * 100);
    al_call_return(call, out, strlen(out));
    return NULL;
}

static void host_slow(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    invoked++;
    pthread_mutex_unlock(&mu);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_thread, call), 0);
    pthread_detach(t);
}

/* clock.now(): synchronous, 7 */
static void host_now(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    invoked++;
    pthread_mutex_unlock(&mu);
    al_call_return(call, "7", 1);
    pthread_mutex_lock(&mu);
    now_done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* store.fail(): throws */
static void host_fail(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    invoked++;
    pthread_mutex_unlock(&mu);
    al_call_throw(call, "no such order");
}

/* orders.refund(x): interrupts; resumed, returns the resolution */
static void host_refund(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&mu);
    invoked++;
    pthread_mutex_unlock(&mu);
    if (!al_call_interruption_id(call)) {
        al_call_interrupt(call, "{\"ask\":1}", 9);
        return;
    }
    size_t len;
    const char *r = al_call_resolution(call, &len);
    al_call_return(call, r, len);
}

static void reset(void)
{
    pthread_mutex_lock(&mu);
    invoked = 0;
    now_done = get17_done = release_sent = get3_saw_release = 0;
    pthread_mutex_unlock(&mu);
}

static int invocations(void)
{
    pthread_mutex_lock(&mu);
    int n = invoked;
    pthread_mutex_unlock(&mu);
    return n;
}

static struct al_runner *new_runner(int with_key)
{
    struct al_config *c = al_config_new();
    assert_non_null(c);
    assert_int_equal(al_config_add_host(c, "store.get", host_get, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.slow", host_slow, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "store.fail", host_fail, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "orders.refund", host_refund, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "clock.now", host_now, NULL, AL_HOST_SYNC), AL_OK);
    if (with_key) {
        assert_int_equal(al_config_set_continuation_key(c, key, strlen(key)), AL_OK);
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

/* ------------------------------------------------------------ a journal kept in memory */

struct journal {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct al_journal_entry e[64];
    size_t n;
    enum al_journal_verdict verdict[64]; /* what to answer for each position (DELIVER default) */
};

static void journal_init(struct journal *j)
{
    memset(j, 0, sizeof *j);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
}

static void journal_done(struct journal *j)
{
    for (size_t i = 0; i < j->n; i++) {
        free((char *)j->e[i].function);
        free((char *)j->e[i].payload);
    }
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
}

static enum al_journal_verdict on_entry(const struct al_journal_entry *e, void *ud)
{
    struct journal *j = ud;
    pthread_mutex_lock(&j->mu);
    assert_true(j->n < 64);
    struct al_journal_entry *c = &j->e[j->n++];
    *c = *e;
    c->function = strdup(e->function);
    char *p = malloc(e->len + 1);
    memcpy(p, e->payload, e->len);
    p[e->len] = '\0';
    c->payload = p;
    enum al_journal_verdict v = e->position < 64 ? j->verdict[e->position] : AL_JOURNAL_DELIVER;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return v;
}

/* Waits until the journal has n entries; fails past a generous deadline. */
static void journal_wait(struct journal *j, size_t n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_SECS;
    pthread_mutex_lock(&j->mu);
    while (j->n < n) {
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) != 0) {
            pthread_mutex_unlock(&j->mu);
            fail_msg("the journal never reached %zu entries", n);
        }
    }
    pthread_mutex_unlock(&j->mu);
}

/* ------------------------------------------------------------ runs */

struct req {
    const char *src;
    int logical;                /* AL_CLOCK_LOGICAL, step 1000 */
    struct journal *record;     /* journal callback */
    const struct journal *from; /* start from its first `k` entries */
    size_t k;
    const char *resume;
    const char *resolve_id;
    int no_seed;
};

static struct al_run_opts *opts_of(const struct req *q)
{
    struct al_run_opts *o = al_run_opts_new();
    assert_non_null(o);
    assert_int_equal(al_run_opts_set_source(o, q->src, strlen(q->src), NULL), AL_OK);
    if (!q->no_seed) {
        al_run_opts_set_seed(o, SEED);
        al_run_opts_set_clock(o, CLOCK);
    }
    if (q->logical) {
        assert_int_equal(al_run_opts_set_clock_mode(o, AL_CLOCK_LOGICAL, 1000), AL_OK);
    }
    if (q->record) {
        al_run_opts_set_journal(o, on_entry, q->record);
    }
    for (size_t i = 0; q->from && i < q->k; i++) {
        assert_int_equal(al_run_opts_add_journal_entry(o, &q->from->e[i]), AL_OK);
    }
    if (q->resume) {
        assert_int_equal(al_run_opts_set_resume(o, q->resume, strlen(q->resume)), AL_OK);
        assert_int_equal(al_run_opts_add_resolution(o, q->resolve_id, "\"ok\"", 4), AL_OK);
    }
    return o;
}

static struct al_result *run_req(struct al_runner *r, const struct req *q)
{
    struct al_run_opts *o = opts_of(q);
    struct al_result *res = NULL;
    struct al_error err;
    if (al_run(r, o, &res, &err) != AL_OK) {
        fail_msg("al_run: %s", err.message);
    }
    al_run_opts_free(o);
    return res;
}

static void expect_completed(struct al_result *res, const char *json)
{
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fail_msg("expected completed, got status %d: %s: %s", al_result_status(res),
                 al_code_name(al_result_error_code(res)), al_result_error_message(res));
    }
    if (json) {
        assert_string_equal(al_result_value(res, NULL), json);
    }
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

/* al_result_divergence of res: call `call`, the journal's entry for it (its function and
 * argument digest, expected NULL: none) and the run's call there (got NULL: none). */
static void expect_divergence(const struct al_result *res, const struct journal *j, uint32_t call,
                              const char *expected, const char *got)
{
    static const uint8_t zero[32];
    struct al_divergence d;
    memset(&d, 0xa5, sizeof d);
    assert_int_equal(al_result_divergence(res, &d), 0);
    assert_int_equal(d.call, call);
    if (expected) {
        assert_non_null(d.expected_function);
        assert_string_equal(d.expected_function, expected);
        const struct al_journal_entry *e = NULL;
        for (size_t i = 0; i < j->n; i++) {
            e = j->e[i].call == call ? &j->e[i] : e;
        }
        assert_non_null(e);
        assert_memory_equal(d.expected_args_sha256, e->args_sha256, 32);
    } else {
        assert_null(d.expected_function);
        assert_memory_equal(d.expected_args_sha256, zero, 32);
    }
    if (got) {
        assert_non_null(d.got_function);
        assert_string_equal(d.got_function, got);
        assert_memory_not_equal(d.got_args_sha256, zero, 32);
    } else {
        assert_null(d.got_function);
        assert_memory_equal(d.got_args_sha256, zero, 32);
    }
}

static uint32_t host_calls_of(const struct al_result *res)
{
    struct al_stats s;
    al_result_stats(res, &s);
    return s.host_calls;
}

/* Sync and async calls, Promise.all and Promise.race, a thrown answer, Date.now after answers
 * and Math.random: calls #1 get(1), #2 slow(2), #3 now(), #4 slow(3), #5 get(4), #6 fail(),
 * #7 get(x + s) = get(17). */
static const char mixed_src[] =
        "const a = store.get(1);\n"
        "const b = store.slow(2);\n"
        "const s = clock.now();\n"
        "const [x, y] = await Promise.all([a, b]);\n"
        "const t1 = Date.now();\n"
        "const s3 = store.slow(3);\n"
        "const r = await Promise.race([s3, store.get(4)]);\n"
        "const t2 = Date.now();\n"
        "let f;\n"
        "try { await store.fail(); } catch (e) { f = e.message; }\n"
        "const z = await store.get(x + s);\n"
        "return [x, y, s, r, f, z, t1, t2, Date.now(), Math.random(), await s3];\n";

/* ------------------------------------------------------------ tests */

/* The gates of store.slow open for what a journal prefix already answered. */
static void open_gates(const struct journal *j, size_t k)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < k; i++) {
        now_done |= j->e[i].call == 3;
        get17_done |= j->e[i].call == 7;
    }
    pthread_mutex_unlock(&mu);
}

/* Each answer is journaled once, in delivery order, with what the guest saw; the whole journal
 * gives the same value without a single host invocation, and its clocks are the guest's. */
static void test_journal_full_replay(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    struct journal j;
    journal_init(&j);
    reset();
    struct req q = { .src = mixed_src, .record = &j };
    struct al_result *first = run_req(r, &q);
    expect_completed(first, NULL);
    assert_int_equal(invocations(), 7);
    assert_int_equal(j.n, 7);
    int seen[8] = { 0 };
    for (size_t i = 0; i < j.n; i++) {
        const struct al_journal_entry *e = &j.e[i];
        assert_int_equal(e->position, i + 1);
        assert_true(e->call >= 1 && e->call <= 7);
        seen[e->call]++;
        assert_int_equal(e->sync, e->call == 3);
        assert_int_equal(e->kind, e->call == 6 ? AL_JOURNAL_THROW : AL_JOURNAL_VALUE);
        if (e->call == 3) {
            assert_string_equal(e->function, "clock.now");
            assert_string_equal(e->payload, "7");
        }
        if (e->call == 6) {
            assert_string_equal(e->payload, "no such order");
        }
        assert_true(e->clock_ms >= CLOCK);
    }
    for (int c = 1; c <= 7; c++) {
        assert_int_equal(seen[c], 1);
    }

    /* again from the whole journal: no host invocation, the same value */
    reset();
    struct journal again;
    journal_init(&again);
    struct req q2 = { .src = mixed_src, .from = &j, .k = j.n, .record = &again };
    struct al_result *res = run_req(r, &q2);
    expect_completed(res, al_result_value(first, NULL));
    assert_int_equal(invocations(), 0);
    assert_int_equal(host_calls_of(res), 0);
    assert_int_equal(again.n, 0); /* replayed answers were journaled already */
    al_result_free(res);

    /* the guest's clock is the journal's: the last answer moved by 12345 ms shows in Date.now */
    for (size_t i = 0; i < j.n; i++) {
        if (j.e[i].call == 7) { /* get(x + s): the last answer before that Date.now() */
            j.e[i].clock_ms += 12345;
        }
    }
    q2.record = NULL;
    res = run_req(r, &q2);
    expect_completed(res, NULL);
    const char *v1 = al_result_value(first, NULL);
    const char *v2 = al_result_value(res, NULL);
    assert_string_not_equal(v1, v2); /* Date.now() after the last answer differs ... */
    /* ... by exactly 12345 ms: it is the 9th element of the array */
    const char *p1 = v1;
    const char *p2 = v2;
    for (int i = 0; i < 8; i++) {
        p1 = strchr(p1, ',') + 1;
        p2 = strchr(p2, ',') + 1;
    }
    long long last1 = strtoll(p1, NULL, 10);
    long long last2 = strtoll(p2, NULL, 10);
    assert_int_equal(last2 - last1, 12345);
    assert_int_equal(invocations(), 0);
    al_result_free(res);
    al_result_free(first);
    journal_done(&again);
    journal_done(&j);
    al_runner_free(r);
}

/* From the first k entries, for every k: exactly the calls the prefix does not have reach the
 * host, the value is the same, and the new journal goes on at position k + 1. */
static void test_journal_prefixes(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    struct journal j;
    journal_init(&j);
    reset();
    struct req q = { .src = mixed_src, .logical = 1, .record = &j };
    struct al_result *first = run_req(r, &q);
    expect_completed(first, NULL);
    assert_int_equal(j.n, 7);
    for (size_t k = 0; k <= j.n; k++) {
        reset();
        open_gates(&j, k);
        struct journal rest;
        journal_init(&rest);
        struct req qk = { .src = mixed_src, .logical = 1, .from = &j, .k = k, .record = &rest };
        struct al_result *res = run_req(r, &qk);
        expect_completed(res, al_result_value(first, NULL));
        assert_int_equal(invocations(), (int)(j.n - k));
        assert_int_equal(host_calls_of(res), j.n - k);
        assert_int_equal(rest.n, j.n - k);
        for (size_t i = 0; i < rest.n; i++) {
            assert_int_equal(rest.e[i].position, k + 1 + i);
            for (size_t m = 0; m < k; m++) {
                assert_int_not_equal(rest.e[i].call, j.e[m].call); /* never answered twice */
            }
        }
        al_result_free(res);
        journal_done(&rest);
    }
    al_result_free(first);
    journal_done(&j);
    al_runner_free(r);
}

/* A journal that does not fit the run: PROTOCOL_ERROR naming the call, and nothing invoked. */
static void test_journal_divergence(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    struct journal j;
    journal_init(&j);
    reset();
    struct req q = { .src = mixed_src, .logical = 1, .record = &j };
    struct al_result *first = run_req(r, &q);
    expect_completed(first, NULL);
    al_result_free(first);

    /* al_result_divergence: the call, the journal's side and the run's; same_args: the two
     * argument digests are equal (the same arguments to another function) */
    struct {
        const char *from;
        const char *to;
        const char *message;
        uint32_t call;
        const char *expected;
        const char *got;
        int same_args;
    } cases[] = {
        /* other arguments */
        { "store.get(4)", "store.get(5)", "diverges at call 5", 5, "store.get", "store.get", 0 },
        /* another function */
        { "store.slow(2)", "store.get(2)", "diverges at call 2", 2, "store.slow", "store.get", 1 },
        /* a call left out: call 3 is slow(3) now */
        { "const s = clock.now();", "const s = 7;", "diverges at call 3", 3, "clock.now",
          "store.slow", 0 },
        /* waits for a journaled answer whose call it never makes */
        { "const z = await store.get(x + s);", "const z = 0;",
          "at call 7 from its journal: it waits", 7, "store.get", NULL, 0 },
        /* ends before making every journaled call */
        { "const a = store.get(1);", "return 1;", "at call 1 from its journal: it ended", 1,
          "store.get", NULL, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[1024];
        const char *at = strstr(mixed_src, cases[i].from);
        assert_non_null(at);
        snprintf(src, sizeof src, "%.*s%s%s", (int)(at - mixed_src), mixed_src, cases[i].to,
                 at + strlen(cases[i].from));
        reset();
        struct req qd = { .src = src, .logical = 1, .from = &j, .k = j.n };
        struct al_result *res = run_req(r, &qd);
        expect_failure(res, AL_PROTOCOL_ERROR, cases[i].message);
        assert_int_equal(invocations(), 0);
        expect_divergence(res, &j, cases[i].call, cases[i].expected, cases[i].got);
        struct al_divergence d;
        assert_int_equal(al_result_divergence(res, &d), 0);
        if (cases[i].got) {
            assert_int_equal(memcmp(d.got_args_sha256, d.expected_args_sha256, 32) == 0,
                             cases[i].same_args);
        }
        al_result_free(res);
    }

    /* an entry that says an asynchronous call was synchronous */
    for (size_t i = 0; i < j.n; i++) {
        j.e[i].sync ^= j.e[i].call == 1;
    }
    reset();
    struct req qs = { .src = mixed_src, .logical = 1, .from = &j, .k = j.n };
    struct al_result *res = run_req(r, &qs);
    expect_failure(res, AL_PROTOCOL_ERROR, "diverges at call 1");
    assert_int_equal(invocations(), 0);
    expect_divergence(res, &j, 1, "store.get", "store.get");
    al_result_free(res);

    /* a run that fits its journal, or has none, did not diverge */
    for (size_t i = 0; i < j.n; i++) {
        j.e[i].sync ^= j.e[i].call == 1;
    }
    struct req qf = { .src = mixed_src, .logical = 1, .from = &j, .k = j.n };
    res = run_req(r, &qf);
    expect_completed(res, NULL);
    assert_int_equal(al_result_divergence(res, NULL), -1);
    al_result_free(res);
    reset();
    struct req qn = { .src = "return 1;" };
    res = run_req(r, &qn);
    assert_int_equal(al_result_divergence(res, NULL), -1);
    al_result_free(res);
    assert_int_equal(al_result_divergence(NULL, NULL), -1);
    journal_done(&j);
    al_runner_free(r);
}

/* Journals that cannot be one: CONFIG_ERROR before anything reaches the host. */
static void test_journal_malformed(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(1);
    const char *src = "return [await store.get(1), await store.get(2)];";
    struct journal j;
    journal_init(&j);
    reset();
    struct req q = { .src = src, .record = &j };
    struct al_result *res = run_req(r, &q);
    expect_completed(res, "[10,20]");
    al_result_free(res);
    assert_int_equal(j.n, 2);
    struct al_journal_entry e1 = j.e[0];
    struct al_journal_entry e2 = j.e[1];

    struct {
        struct al_journal_entry a;
        struct al_journal_entry b;
        uint32_t pa, pb, cb;
        const char *message;
    } cases[] = {
        { e1, e2, 1, 3, 2, "positions must be 1, 2, 3" }, /* a gap */
        { e1, e2, 1, 1, 2, "positions must be 1, 2, 3" }, /* a duplicate position */
        { e1, e2, 2, 1, 2, "positions must be 1, 2, 3" }, /* out of order */
        { e1, e2, 1, 2, 1, "answers call 1 twice" },      /* a call answered twice */
        { e1, e2, 1, 2, 0, "for call 0" },                /* no such call id */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reset();
        struct journal bad;
        journal_init(&bad);
        bad.e[0] = cases[i].a;
        bad.e[1] = cases[i].b;
        bad.e[0].position = cases[i].pa;
        bad.e[1].position = cases[i].pb;
        bad.e[1].call = cases[i].cb;
        struct req qb = { .src = src, .from = &bad, .k = 2 };
        res = run_req(r, &qb);
        expect_failure(res, AL_CONFIG_ERROR, cases[i].message);
        assert_int_equal(invocations(), 0);
        al_result_free(res);
    }

    /* a journal needs the seed and the clock it was written with */
    struct req qs = { .src = src, .from = &j, .k = 2, .no_seed = 1 };
    res = run_req(r, &qs);
    expect_failure(res, AL_CONFIG_ERROR, "seed and clock");
    al_result_free(res);

    /* one way to resume at a time: a journal and a continuation */
    const char *isrc = "return await orders.refund(1);";
    struct req qi = { .src = isrc };
    res = run_req(r, &qi);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, 0, &in), 0);
    struct req qc = { .src = isrc,
                      .from = &j,
                      .k = 1,
                      .resume = al_result_continuation(res, NULL),
                      .resolve_id = in.id };
    reset();
    struct al_result *both = run_req(r, &qc);
    expect_failure(both, AL_CONFIG_ERROR, "not both");
    assert_int_equal(invocations(), 0);
    al_result_free(both);
    al_result_free(res);

    /* the setter refuses what is no entry at all */
    struct al_run_opts *o = al_run_opts_new();
    struct al_journal_entry none = e1;
    none.function = NULL;
    assert_int_equal(al_run_opts_add_journal_entry(o, &none), AL_CONFIG_ERROR);
    none = e1;
    none.kind = (enum al_journal_kind)7;
    assert_int_equal(al_run_opts_add_journal_entry(o, &none), AL_CONFIG_ERROR);
    none = e1;
    none.payload = NULL;
    assert_int_equal(al_run_opts_add_journal_entry(o, &none), AL_CONFIG_ERROR);
    assert_int_equal(al_run_opts_add_journal_entry(NULL, &e1), AL_CONFIG_ERROR);
    al_run_opts_free(o);
    journal_done(&j);
    al_runner_free(r);
}

/* An interrupted run journals what it answered; the resumed run journals the resolved call's
 * answer and what follows, once, going on from the first leg's positions - and the two legs
 * together are a journal a fresh run replays without the host. */
static void test_journal_across_resume(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(1);
    const char *src = "const a = await store.get(1);\n"
                      "const s = clock.now();\n"
                      "const ok = await orders.refund(a);\n"
                      "const b = await store.get(2);\n"
                      "return [a, s, ok, b, Date.now()];\n";
    struct journal j;
    journal_init(&j);
    reset();
    struct req q = { .src = src, .logical = 1, .record = &j };
    struct al_result *res = run_req(r, &q);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    assert_int_equal(j.n, 2); /* get(1), now(): the interruption is no answer */
    assert_int_equal(j.e[0].call, 1);
    assert_int_equal(j.e[1].call, 2);
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, 0, &in), 0);

    reset();
    struct req qr = { .src = src,
                      .logical = 1,
                      .record = &j,
                      .resume = al_result_continuation(res, NULL),
                      .resolve_id = in.id };
    struct al_result *resumed = run_req(r, &qr);
    expect_completed(resumed, NULL);
    assert_int_equal(invocations(), 2); /* the resolved refund and get(2) */
    assert_int_equal(j.n, 4);
    assert_int_equal(j.e[2].position, 3);
    assert_int_equal(j.e[2].call, 3);
    assert_string_equal(j.e[2].function, "orders.refund");
    assert_string_equal(j.e[2].payload, "\"ok\"");
    assert_int_equal(j.e[3].position, 4);
    assert_int_equal(j.e[3].call, 4);

    reset();
    struct req qf = { .src = src, .logical = 1, .from = &j, .k = j.n };
    struct al_result *fresh = run_req(r, &qf);
    expect_completed(fresh, al_result_value(resumed, NULL));
    assert_int_equal(invocations(), 0);
    al_result_free(fresh);
    al_result_free(resumed);
    al_result_free(res);
    journal_done(&j);
    al_runner_free(r);
}

/* ------------------------------------------------------------ holding answers */

struct box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct al_result *res;
};

static void on_done(struct al_run *run, struct al_result *res, void *ud)
{
    (void)run;
    struct box *b = ud;
    pthread_mutex_lock(&b->mu);
    b->res = res;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static struct al_result *box_wait(struct box *b)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_SECS;
    pthread_mutex_lock(&b->mu);
    while (!b->res) {
        if (pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0) {
            pthread_mutex_unlock(&b->mu);
            fail_msg("the run never ended");
        }
    }
    struct al_result *res = b->res;
    pthread_mutex_unlock(&b->mu);
    return res;
}

static int box_over(struct box *b)
{
    pthread_mutex_lock(&b->mu);
    int over = b->res != NULL;
    pthread_mutex_unlock(&b->mu);
    return over;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

struct release_arg {
    struct al_run *run;
    uint32_t position;
};

static void *release_thread(void *arg)
{
    struct release_arg *a = arg;
    assert_int_equal(al_run_journal_release(a->run, a->position), AL_OK);
    return NULL;
}

static void release_from_thread(struct al_run *run, uint32_t position)
{
    struct release_arg a = { run, position };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_thread, &a), 0);
    pthread_join(t, NULL);
}

/* A held answer, and the answer after it, reach the guest only once released, in journal
 * order: the race is won by position 1, whichever call that is. */
static void test_journal_hold_release(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    const char *src = "const p1 = store.get(1), p2 = store.get(2);\n"
                      "const first = await Promise.race([p1, p2]);\n"
                      "const t = Date.now();\n"
                      "const both = await Promise.all([p1, p2]);\n"
                      "const c = await store.get(3);\n"
                      "return [first, t, c];\n";
    struct journal j;
    journal_init(&j);
    j.verdict[1] = AL_JOURNAL_HOLD; /* position 2 says DELIVER, but comes after 1 */
    j.verdict[3] = AL_JOURNAL_HOLD;
    reset();
    struct req q = { .src = src, .logical = 1, .record = &j };
    struct al_run_opts *o = opts_of(&q);
    struct box b = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL };
    struct al_run *run = NULL;
    assert_int_equal(al_run_start(r, o, on_done, &b, &run, NULL), AL_OK);
    al_run_opts_free(o);

    journal_wait(&j, 2);
    /* Nothing reached the guest: it cannot have finished, nor made call 3. The pause only gives
     * an answer delivered too early the time to show; a held run passes whatever its length. */
    pause_ms(200);
    assert_false(box_over(&b));
    assert_int_equal(invocations(), 2);
    pthread_mutex_lock(&mu);
    release_sent = 1;
    pthread_mutex_unlock(&mu);
    release_from_thread(run, 1);
    journal_wait(&j, 3); /* call 3, made once the first two were delivered, is held too */
    assert_int_equal(j.e[2].call, 3);
    assert_int_equal(get3_saw_release, 1); /* the guest made call 3 only after the release */
    assert_false(box_over(&b));
    release_from_thread(run, 3);
    struct al_result *res = box_wait(&b);
    char want[128];
    snprintf(want, sizeof want, "[%u,%lld,30]", j.e[0].call * 10, (long long)j.e[0].clock_ms);
    expect_completed(res, want);
    assert_int_equal(al_run_journal_release(run, 9), AL_OK); /* after the end: no effect */
    assert_int_equal(al_run_journal_release(run, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_run_journal_release(NULL, 1), AL_CONFIG_ERROR);
    al_result_free(res);
    al_run_release(run);
    journal_done(&j);
    al_runner_free(r);
}

/* A run held forever still ends when cancelled; al_run, which has no handle, cannot hold. */
static void test_journal_hold_cancel(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    const char *src = "return await store.get(1);";
    struct journal j;
    journal_init(&j);
    j.verdict[1] = AL_JOURNAL_HOLD;
    reset();
    struct req q = { .src = src, .record = &j };
    struct al_run_opts *o = opts_of(&q);
    struct box b = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL };
    struct al_run *run = NULL;
    assert_int_equal(al_run_start(r, o, on_done, &b, &run, NULL), AL_OK);
    journal_wait(&j, 1);
    pause_ms(200); /* as above: time for an answer that was not held to finish the run */
    al_run_cancel(run);
    struct al_result *res = box_wait(&b);
    expect_failure(res, AL_ABORTED, NULL);
    al_result_free(res);
    al_run_release(run);

    struct al_result *blocking = NULL;
    assert_int_equal(al_run(r, o, &blocking, NULL), AL_OK);
    expect_failure(blocking, AL_CONFIG_ERROR, "al_run_start");
    al_result_free(blocking);
    al_run_opts_free(o);
    journal_done(&j);
    al_runner_free(r);
}

/* An entry the application could not keep never reaches the guest: the run fails. */
static void test_journal_fail(void **state)
{
    (void)state;
    struct al_runner *r = new_runner(0);
    const char *src = "const a = await store.get(1);\n"
                      "const b = await store.get(2);\n"
                      "return [a, b, await store.get(3)];\n";
    struct journal j;
    journal_init(&j);
    j.verdict[2] = AL_JOURNAL_FAIL;
    reset();
    struct req q = { .src = src, .record = &j };
    struct al_result *res = run_req(r, &q);
    expect_failure(res, AL_INTERNAL_ERROR, "position 2");
    assert_int_equal(invocations(), 2); /* get(2)'s answer never arrived: no get(3) */
    al_result_free(res);
    journal_done(&j);
    al_runner_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_full_replay),   cmocka_unit_test(test_journal_prefixes),
        cmocka_unit_test(test_journal_divergence),    cmocka_unit_test(test_journal_malformed),
        cmocka_unit_test(test_journal_across_resume), cmocka_unit_test(test_journal_hold_release),
        cmocka_unit_test(test_journal_hold_cancel),   cmocka_unit_test(test_journal_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
