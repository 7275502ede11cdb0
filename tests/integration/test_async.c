/*
 * integration.async - what a server builds on, end to end with the real worker: runs started
 * without blocking (al_run_start) and many of them held by one event thread, cancellation
 * (of a spinning guest, inside a long builtin, of pending host calls, of a queued run),
 * per-run host functions, userdata and run ids, events while a run runs, the logical clock,
 * well-formed error texts with lengths, statistics the host measured itself, and the library's
 * threads taking the short scheduling slice only when al_config_set_short_slice asks.
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
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#include "procinfo.h"

static const char key[] = "0123456789abcdef0123456789abcdef-async-test-key";

/* ------------------------------------------------------------ helpers */

static struct al_runner *runner_of(struct al_config *c)
{
    struct al_runner *r = NULL;
    struct al_error err;
    if (al_runner_new(c, &r, &err) != AL_OK) {
        fail_msg("al_runner_new: %s", err.message);
    }
    return r;
}

static struct al_run_opts *opts_of(const char *src)
{
    struct al_run_opts *o = al_run_opts_new();
    assert_non_null(o);
    assert_int_equal(al_run_opts_set_source(o, src, strlen(src), NULL), AL_OK);
    return o;
}

static struct al_run *start(struct al_runner *r, const struct al_run_opts *o)
{
    struct al_run *run = NULL;
    struct al_error err;
    if (al_run_start(r, o, NULL, NULL, &run, &err) != AL_OK) {
        fail_msg("al_run_start: %s", err.message);
    }
    return run;
}

static struct al_result *wait_for(struct al_run *run)
{
    struct al_result *res = NULL;
    struct al_error err;
    if (al_run_wait(run, &res, &err) != AL_OK) {
        fail_msg("al_run_wait: %s", err.message);
    }
    return res;
}

static void expect_json(const struct al_result *res, const char *json)
{
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fail_msg("run failed: %s: %s", al_code_name(al_result_error_code(res)),
                 al_result_error_message(res));
    }
    assert_string_equal(al_result_value(res, NULL), json);
}

static void expect_code(const struct al_result *res, enum al_code code)
{
    if (al_result_error_code(res) != code) {
        fail_msg("expected %s, got %s: %s", al_code_name(code),
                 al_code_name(al_result_error_code(res)), al_result_error_message(res));
    }
}

static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Threads: %d", &n) == 1) {
            break;
        }
    }
    fclose(f);
    return n;
}

/* ------------------------------------------------------------ host functions */

static void host_echo(struct al_call *call, void *ud)
{
    (void)ud;
    size_t len;
    const char *args = al_call_args(call, &len);
    al_call_return(call, args, len);
}

/* Calls parked by host_park, answered or inspected later by the test. */
#define PARK_MAX 512
static struct al_call *parked[PARK_MAX];
static atomic_int nparked;
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;

static void host_park(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&park_mu);
    parked[atomic_fetch_add(&nparked, 1)] = call;
    pthread_cond_broadcast(&park_cv);
    pthread_mutex_unlock(&park_mu);
}

static void wait_parked(int n)
{
    pthread_mutex_lock(&park_mu);
    while (atomic_load(&nparked) < n) {
        pthread_cond_wait(&park_cv, &park_mu);
    }
    pthread_mutex_unlock(&park_mu);
}

static void reset_parked(void)
{
    atomic_store(&nparked, 0);
}

/* Returns the run's userdata (a string) and its run id. */
static void host_whoami(struct al_call *call, void *ud)
{
    (void)ud;
    char json[256];
    snprintf(json, sizeof json, "{\"tenant\":\"%s\",\"run\":\"%s\"}",
             (const char *)al_call_run_userdata(call), al_call_run_id(call));
    al_call_return(call, json, strlen(json));
}

static void host_approve(struct al_call *call, void *ud)
{
    (void)ud;
    if (al_call_resolution(call, NULL)) {
        size_t len;
        const char *r = al_call_resolution(call, &len);
        al_call_return(call, r, len);
        return;
    }
    al_call_interrupt(call, "{\"ask\":\"refund?\"}", strlen("{\"ask\":\"refund?\"}"));
}

static void host_throw(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_throw(call, "card declined");
}

/* ------------------------------------------------------------ tests */

static void test_start_and_wait(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return (await h.echo(1, 'two'))");
    assert_int_equal(al_run_opts_set_run_id(o, "run-42"), AL_OK);
    struct al_run *run = start(r, o);
    al_run_opts_free(o); /* copied by al_run_start */
    assert_string_equal(al_run_id(run), "run-42");
    struct al_result *res = wait_for(run);
    expect_json(res, "[1,\"two\"]");
    assert_string_equal(al_result_run_id(res), "run-42");
    /* a second wait is refused, not a hang */
    struct al_result *again = NULL;
    assert_int_equal(al_run_wait(run, &again, NULL), AL_CONFIG_ERROR);
    al_result_free(res);
    al_run_release(run);
    /* bad arguments and ids */
    o = al_run_opts_new();
    assert_int_equal(al_run_start(r, o, NULL, NULL, &run, NULL), AL_CONFIG_ERROR); /* no source */
    assert_int_equal(al_run_opts_set_run_id(o, ""), AL_CONFIG_ERROR);
    assert_int_equal(al_run_opts_set_run_id(o, "has space"), AL_CONFIG_ERROR);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

struct done_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int ok;
    pthread_t thread;
};

static void on_done(struct al_run *run, struct al_result *res, void *ud)
{
    struct done_box *box = ud;
    pthread_mutex_lock(&box->mu);
    box->ok += al_result_status(res) == AL_STATUS_COMPLETED;
    box->done++;
    box->thread = pthread_self();
    pthread_cond_broadcast(&box->cv);
    pthread_mutex_unlock(&box->mu);
    al_result_free(res);
    al_run_release(run); /* allowed inside the callback */
}

/* The mask of signals thread `tid` of this process blocks (SigBlk of its status). */
static unsigned long long blocked_signals(const char *tid)
{
    char path[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    unsigned long long mask = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "SigBlk: %llx", &mask) == 1) {
            break;
        }
    }
    fclose(f);
    return mask;
}

/* docs/servers.md: airlock's threads (the event thread, the pool's) take no signals, so an
 * application's SIGINT or SIGTERM handler runs on one of its own threads. */
static void test_library_threads_block_signals(void **state)
{
    (void)state;
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return await h.park()");
    struct al_run *run = start(r, o); /* starts the event thread */
    al_run_opts_free(o);
    wait_parked(1);
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    char self[32];
    snprintf(self, sizeof self, "%d", (int)getpid());
    int others = 0;
    const unsigned long long want = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0) {
            continue;
        }
        others++;
        assert_int_equal(blocked_signals(e->d_name) & want, want);
    }
    closedir(d);
    assert_true(others >= 2); /* the event thread and the pool's */
    al_call_return(parked[0], "1", 1);
    al_result_free(wait_for(run));
    al_run_release(run);
    al_runner_free(r);
    al_config_free(c);
}

/* linux/sched/types.h's struct sched_attr under a name of its own, as unit.thread has it (that
 * header cannot be included beside pthread.h, and glibc 2.41's sched.h has its own). */
struct test_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime; /* ns: a normal thread's slice on Linux 6.12 and later, 0 before */
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};
#define TEST_RESET_ON_FORK 0x01u  /* SCHED_FLAG_RESET_ON_FORK */
#define TEST_SHORT_SLICE   500000 /* ns: al_config_set_short_slice's 0.5 ms */

static void sched_attr_of(pid_t tid, struct test_sched_attr *ret)
{
    memset(ret, 0, sizeof *ret);
    assert_int_equal(syscall(SYS_sched_getattr, tid, ret, (unsigned)sizeof *ret, 0u), 0);
}

/* Checks each thread of this process named airlock-loop or airlock-pool: the short slice with
 * SCHED_FLAG_RESET_ON_FORK (want_short), or else the slice `dflt` of the test's own thread
 * without the flag. Returns 1 | 2 when it saw the loop's and the pool's. */
static int check_library_slices(int want_short, uint64_t dflt)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int seen = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) {
            continue; /* the thread ended meanwhile */
        }
        if (!fgets(comm, sizeof comm, f)) {
            comm[0] = '\0';
        }
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        int which = strcmp(comm, "airlock-loop") == 0   ? 1
                    : strcmp(comm, "airlock-pool") == 0 ? 2
                                                        : 0;
        if (!which) {
            continue;
        }
        struct test_sched_attr a;
        sched_attr_of((pid_t)strtol(e->d_name, NULL, 10), &a);
        uint64_t want = want_short ? TEST_SHORT_SLICE : dflt;
        if (a.sched_runtime != want ||
            ((a.sched_flags & TEST_RESET_ON_FORK) != 0) != (want_short != 0)) {
            fail_msg("%s: slice %llu ns, flags %#llx; want %llu ns%s", comm,
                     (unsigned long long)a.sched_runtime, (unsigned long long)a.sched_flags,
                     (unsigned long long)want, want_short ? " and SCHED_FLAG_RESET_ON_FORK" : "");
        }
        seen |= which;
    }
    closedir(d);
    return seen;
}

/* include/airlock.h: the event and warm-worker threads keep the kernel's default slice unless
 * al_config_set_short_slice(c, 1) asks for the short one. On a kernel that gives normal threads
 * no slice of their own (before 6.12) the option must change nothing, and only that is
 * checked. */
static void test_short_slice_only_when_asked(void **state)
{
    (void)state;
    struct test_sched_attr self;
    sched_attr_of(0, &self);
    int slices = (self.sched_policy == SCHED_OTHER || self.sched_policy == SCHED_BATCH) &&
                 self.sched_runtime != 0;
    if (!slices) {
        fprintf(stderr, "integration.async: no slice of its own for this thread (a kernel before "
                        "6.12, or another policy): the short-slice check is skipped, only that "
                        "the option changes nothing is checked\n");
    }
    assert_int_equal(al_config_set_short_slice(NULL, 1), AL_CONFIG_ERROR);
    for (int enabled = 0; enabled <= 1; enabled++) {
        reset_parked();
        struct al_config *c = al_config_new();
        assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
        if (enabled) {
            assert_int_equal(al_config_set_short_slice(c, 1), AL_OK);
        }
        struct al_runner *r = runner_of(c);
        /* a spare is ready: the pool's thread has passed its start (a hang guard, 20 s) */
        for (int i = 0; i < 20000 && al_runner_warm_workers(r) < 1; i++) {
            struct timespec tick = { 0, 1000 * 1000 };
            nanosleep(&tick, NULL);
        }
        assert_int_equal(al_runner_warm_workers(r), 1);
        struct al_run_opts *o = opts_of("return await h.park()");
        struct al_run *run = start(r, o); /* starts the event thread */
        al_run_opts_free(o);
        wait_parked(1); /* the event thread has passed its start */
        assert_int_equal(check_library_slices(enabled && slices, self.sched_runtime), 1 | 2);
        al_call_return(parked[0], "1", 1);
        al_result_free(wait_for(run));
        al_run_release(run);
        al_runner_free(r);
        al_config_free(c);
    }
}

/* Hundreds of runs wait on a host function answered later from one thread: one event thread
 * holds them all, the caller never blocks, and every one completes with its own answer. */
static void test_many_runs_one_thread(void **state)
{
    (void)state;
    enum { N = 200 };
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "slow.get", host_park, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct done_box box = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
    int threads_before = thread_count();
    for (int i = 0; i < N; i++) {
        char src[128];
        snprintf(src, sizeof src, "const v = await slow.get(%d); if (v !== %d) throw 1; return v",
                 i, i * 10);
        struct al_run_opts *o = opts_of(src);
        struct al_run *run = NULL;
        assert_int_equal(al_run_start(r, o, on_done, &box, &run, NULL), AL_OK);
        al_run_opts_free(o);
    }
    wait_parked(N); /* every run is waiting on its host call at once */
    int threads_during = thread_count();
    /* the event thread and at most the pool's: no thread per run */
    assert_true(threads_during - threads_before <= 3);
    for (int i = 0; i < N; i++) {
        size_t len;
        const char *args = al_call_args(parked[i], &len);
        int arg = atoi(args + 1); /* "[N]" */
        char json[32];
        snprintf(json, sizeof json, "%d", arg * 10);
        al_call_return(parked[i], json, strlen(json));
    }
    pthread_mutex_lock(&box.mu);
    while (box.done < N) {
        pthread_cond_wait(&box.cv, &box.mu);
    }
    pthread_mutex_unlock(&box.mu);
    assert_int_equal(box.ok, N);
    assert_false(pthread_equal(box.thread, pthread_self()));
    al_runner_free(r);
    al_config_free(c);
}

static void test_cancel_spinning_guest(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, 120000), AL_OK);
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    /* a plain loop, and a catastrophic regular expression (one long builtin call) */
    const char *srcs[] = {
        "await h.echo(1); for (;;) {}",
        "await h.echo(1); return /(a+)+$/.test('a'.repeat(64) + 'b')",
    };
    for (size_t i = 0; i < 2; i++) {
        struct al_run_opts *o = opts_of(srcs[i]);
        struct al_run *run = start(r, o);
        al_run_opts_free(o);
        /* the guest is running once its first host call has been answered; cancel at any point
         * must end it ABORTED, never with the 120 s timeout */
        al_run_cancel(run);
        al_run_cancel(run); /* idempotent */
        struct al_result *res = wait_for(run);
        assert_int_equal(al_result_status(res), AL_STATUS_FAILED);
        expect_code(res, AL_ABORTED);
        struct al_stats st;
        al_result_stats(res, &st);
        assert_true(st.wall_us < 60u * 1000000u);
        al_result_free(res);
        al_run_cancel(run); /* after the end: no effect */
        al_run_release(run);
    }
    al_runner_free(r);
    al_config_free(c);
}

/* Answers at once, then tells the test the guest has gone on. */
static void host_go(struct al_call *call, void *ud)
{
    (void)ud;
    al_call_return(call, "1", 1);
    pthread_mutex_lock(&park_mu);
    atomic_fetch_add(&nparked, 1);
    pthread_cond_broadcast(&park_cv);
    pthread_mutex_unlock(&park_mu);
}

/* A run cancelled once its guest has entered a long builtin (a catastrophic regular
 * expression, where QuickJS never polls its interrupt handler), and one whose host call is
 * pending: both end ABORTED, and the pending call reads as cancelled. */
static void test_cancel_inside_builtin(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, 120000), AL_OK);
    assert_int_equal(al_config_add_host(c, "h.go", host_go, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    reset_parked();
    struct al_run_opts *o = opts_of("await h.go(); return /(a+)+$/.test('a'.repeat(64) + 'b')");
    struct al_run *run = start(r, o);
    al_run_opts_free(o);
    wait_parked(1);
    al_run_cancel(run);
    struct al_result *res = wait_for(run);
    expect_code(res, AL_ABORTED);
    al_result_free(res);
    al_run_release(run);

    reset_parked();
    o = opts_of("return await h.park()");
    run = start(r, o);
    al_run_opts_free(o);
    wait_parked(1);
    struct al_call *call = parked[0];
    assert_int_equal(al_call_cancelled(call), 0);
    al_run_cancel(run);
    res = wait_for(run);
    expect_code(res, AL_ABORTED);
    /* its late answer is discarded safely */
    assert_int_equal(al_call_cancelled(call), 1);
    al_call_return(call, "1", 1);
    al_result_free(res);
    al_run_release(run);
    al_runner_free(r);
    al_config_free(c);
}

/* A run waiting for one of the runner's slots leaves the queue when cancelled. */
static void test_cancel_queued_run(void **state)
{
    (void)state;
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_max_concurrency(c, 1, 4), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return await h.park()");
    struct al_run *first = start(r, o);
    wait_parked(1); /* the first run holds the only slot */
    struct al_run *second = start(r, o);
    struct al_run *third = start(r, o);
    al_run_cancel(second);
    struct al_result *res = wait_for(second);
    expect_code(res, AL_ABORTED);
    al_result_free(res);
    al_call_return(parked[0], "7", 1);
    res = wait_for(first);
    expect_json(res, "7");
    al_result_free(res);
    wait_parked(2); /* the slot went to the third run, not the cancelled one */
    al_call_return(parked[1], "8", 1);
    res = wait_for(third);
    expect_json(res, "8");
    al_result_free(res);
    al_run_release(first);
    al_run_release(second);
    al_run_release(third);
    /* beyond the queue: refused at once */
    assert_int_equal(al_config_set_max_concurrency(c, 1, 0), AL_OK);
    struct al_runner *r2 = runner_of(c);
    reset_parked();
    first = start(r2, o);
    wait_parked(1);
    second = start(r2, o);
    res = wait_for(second);
    expect_code(res, AL_CONCURRENCY_LIMIT);
    al_result_free(res);
    al_call_return(parked[0], "1", 1);
    res = wait_for(first);
    al_result_free(res);
    al_run_release(first);
    al_run_release(second);
    al_run_opts_free(o);
    al_runner_free(r2);
    al_runner_free(r);
    al_config_free(c);
}

/* Freeing a runner with runs in flight cancels them and delivers their results first. */
static void test_runner_free_cancels(void **state)
{
    (void)state;
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct done_box box = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
    struct al_run_opts *o = opts_of("return await h.park()");
    for (int i = 0; i < 3; i++) {
        struct al_run *run = NULL;
        assert_int_equal(al_run_start(r, o, on_done, &box, &run, NULL), AL_OK);
    }
    wait_parked(3);
    al_runner_free(r);
    assert_int_equal(box.done, 3);
    assert_int_equal(box.ok, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(al_call_cancelled(parked[i]), 1);
        al_call_return(parked[i], "1", 1);
    }
    al_run_opts_free(o);
    al_config_free(c);
}

static void test_per_run_hosts_and_userdata(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key, strlen(key)), AL_OK);
    struct al_runner *r = runner_of(c);
    /* two tenants, one runner: each run sees its own userdata through the same function */
    const char *tenants[] = { "acme", "globex" };
    for (int i = 0; i < 2; i++) {
        struct al_run_opts *o = opts_of("const me = await crm.whoami();"
                                        "return [me.tenant, me.run, await h.echo(2)]");
        assert_int_equal(al_run_opts_add_host(o, "crm.whoami", host_whoami, NULL, 0), AL_OK);
        al_run_opts_set_userdata(o, (void *)tenants[i]);
        char id[32];
        snprintf(id, sizeof id, "run-%s", tenants[i]);
        assert_int_equal(al_run_opts_set_run_id(o, id), AL_OK);
        struct al_result *res = NULL;
        assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
        char want[128];
        snprintf(want, sizeof want, "[\"%s\",\"%s\",[2]]", tenants[i], id);
        expect_json(res, want);
        al_result_free(res);
        al_run_opts_free(o);
    }
    /* a run's function may join a runner's group ... */
    struct al_run_opts *o = opts_of("return Object.keys(h).sort()");
    assert_int_equal(al_run_opts_add_host(o, "h.extra", host_echo, NULL, 0), AL_OK);
    struct al_result *res = NULL;
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_json(res, "[\"echo\",\"extra\"]");
    al_result_free(res);
    al_run_opts_free(o);
    /* ... but not take a runner's name, nor disagree on sync, nor use a bad name */
    o = opts_of("return 1");
    assert_int_equal(al_run_opts_add_host(o, "h.echo", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_run_opts_add_host(o, "h.echo", host_echo, NULL, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_run_opts_add_host(o, "Math.x", host_echo, NULL, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_code(res, AL_CONFIG_ERROR);
    assert_non_null(strstr(al_result_error_message(res), "h.echo"));
    al_result_free(res);
    al_run_opts_free(o);
    o = opts_of("return 1");
    assert_int_equal(al_run_opts_add_host(o, "h.sync", host_echo, NULL, AL_HOST_SYNC), AL_OK);
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_code(res, AL_CONFIG_ERROR);
    al_result_free(res);
    al_run_opts_free(o);

    /* A continuation binds the functions the run had: its own included. */
    const char *src = "return await pay.approve(5)";
    o = opts_of(src);
    assert_int_equal(al_run_opts_add_host(o, "pay.approve", host_approve, NULL, 0), AL_OK);
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    size_t tlen;
    char *token = strdup(al_result_continuation(res, &tlen));
    struct al_interruption in;
    assert_int_equal(al_result_interruption(res, 0, &in), 0);
    char *iid = strdup(in.id);
    al_result_free(res);
    al_run_opts_free(o);
    /* without the run's function: refused */
    o = opts_of(src);
    assert_int_equal(al_run_opts_set_resume(o, token, tlen), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, iid, "true", 4), AL_OK);
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_code(res, AL_PROTOCOL_ERROR);
    al_result_free(res);
    al_run_opts_free(o);
    /* with it: resumes */
    o = opts_of(src);
    assert_int_equal(al_run_opts_add_host(o, "pay.approve", host_approve, NULL, 0), AL_OK);
    assert_int_equal(al_run_opts_set_resume(o, token, tlen), AL_OK);
    assert_int_equal(al_run_opts_add_resolution(o, iid, "\"yes\"", 5), AL_OK);
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_json(res, "\"yes\"");
    al_result_free(res);
    al_run_opts_free(o);
    free(token);
    free(iid);
    al_runner_free(r);
    al_config_free(c);
}

/* Events, recorded as text lines. */
struct event_log {
    char text[4096];
    size_t len;
    int call_ends;
    uint64_t total_duration_us;
};

static void on_event(const struct al_event *ev, void *ud)
{
    struct event_log *log = ud;
    char line[512];
    switch (ev->kind) {
    case AL_EVENT_CONSOLE:
        snprintf(line, sizeof line, "console %s %.*s\n", al_console_level_name(ev->level),
                 (int)ev->text_len, ev->text);
        break;
    case AL_EVENT_CALL_START:
        snprintf(line, sizeof line, "start #%u %s %.*s\n", ev->seq, ev->function, (int)ev->args_len,
                 ev->args);
        break;
    case AL_EVENT_CALL_END:
        snprintf(line, sizeof line, "end #%u %s %s%s%.*s\n", ev->seq, ev->function,
                 ev->outcome == AL_CALL_RETURNED ? "returned"
                 : ev->outcome == AL_CALL_THREW  ? "threw"
                                                 : "interrupted",
                 ev->text_len ? " " : "", (int)ev->text_len, ev->text);
        log->call_ends++;
        log->total_duration_us += ev->duration_us;
        break;
    case AL_EVENT_INTERRUPTION:
        snprintf(line, sizeof line, "interruption #%u %s %.*s %.*s %s\n", ev->seq, ev->function,
                 (int)ev->args_len, ev->args, (int)ev->text_len, ev->text,
                 ev->interruption_id[0] ? "id" : "no-id");
        break;
    default:
        snprintf(line, sizeof line, "unknown\n");
    }
    assert_non_null(ev->run_id);
    size_t n = strlen(line);
    assert_true(log->len + n < sizeof log->text);
    memcpy(log->text + log->len, line, n + 1);
    log->len += n;
}

static void test_events(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "h.fail", host_throw, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "pay.approve", host_approve, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key, strlen(key)), AL_OK);
    struct al_runner *r = runner_of(c);
    struct event_log log = { .len = 0 };
    struct al_run_opts *o = opts_of("console.log('hello', 1);"
                                    "await h.echo('a');"
                                    "try { await h.fail() } catch (e) { console.warn(e.message) }"
                                    "return await pay.approve(9)");
    al_run_opts_set_event_callback(o, on_event, &log);
    struct al_run *run = start(r, o); /* events of an asynchronous run, on the event thread */
    al_run_opts_free(o);
    struct al_result *res = wait_for(run);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    assert_string_equal(log.text, "console log hello 1\n"
                                  "start #1 h.echo [\"a\"]\n"
                                  "end #1 h.echo returned\n"
                                  "start #2 h.fail []\n"
                                  "end #2 h.fail threw card declined\n"
                                  "console warn card declined\n"
                                  "start #3 pay.approve [9]\n"
                                  "end #3 pay.approve interrupted\n"
                                  "interruption #3 pay.approve [9] {\"ask\":\"refund?\"} id\n");
    assert_int_equal(log.call_ends, 3);
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(log.total_duration_us <= st.wall_us);
    /* the result still carries everything */
    assert_int_equal(al_result_console_count(res), 2);
    assert_int_equal(al_result_interruption_count(res), 1);
    al_result_free(res);
    al_run_release(run);
    al_runner_free(r);
    al_config_free(c);
}

static void test_logical_clock(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    const char *src = "const t0 = Date.now(); await h.echo(); const t1 = Date.now();"
                      "await h.echo(); await h.echo(); return [t0, t1, Date.now()]";
    for (int i = 0; i < 2; i++) { /* the same every time */
        struct al_run_opts *o = opts_of(src);
        al_run_opts_set_seed(o, 7);
        al_run_opts_set_clock(o, 1000000);
        assert_int_equal(al_run_opts_set_clock_mode(o, AL_CLOCK_LOGICAL, 5), AL_OK);
        struct al_result *res = NULL;
        assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
        expect_json(res, "[1000000,1000005,1000015]");
        al_result_free(res);
        al_run_opts_free(o);
    }
    struct al_run_opts *o = al_run_opts_new();
    assert_int_equal(al_run_opts_set_clock_mode(o, AL_CLOCK_LOGICAL, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_run_opts_set_clock_mode(o, (enum al_clock_mode)9, 1), AL_CONFIG_ERROR);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

/* An interruption carries no clock: the logical clock goes on from the last real answer. */
static void test_logical_clock_across_an_interruption(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.echo", host_echo, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "pay.approve", host_approve, NULL, 0), AL_OK);
    assert_int_equal(al_config_set_continuation_key(c, key, strlen(key)), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of(
            "await Promise.all([pay.approve(1),"
            " h.echo(1).then(() => h.echo(2)).then(() => console.log(String(Date.now())))])");
    al_run_opts_set_clock(o, 1700000000000);
    assert_int_equal(al_run_opts_set_clock_mode(o, AL_CLOCK_LOGICAL, 1), AL_OK);
    struct al_result *res = NULL;
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    assert_int_equal(al_result_status(res), AL_STATUS_INTERRUPTED);
    assert_int_equal(al_result_console_count(res), 1);
    assert_string_equal(al_result_console_text(res, 0, NULL, NULL), "1700000000002");
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

struct waiter_arg {
    struct al_run *run;
    enum al_code rc;
    struct al_result *res;
};

static void *wait_main(void *p)
{
    struct waiter_arg *a = p;
    a->rc = al_run_wait(a->run, &a->res, NULL);
    return NULL;
}

/* Two threads wait for one run: one gets the result, the other is told it was taken. */
static void test_two_waiters(void **state)
{
    (void)state;
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return await h.park()");
    struct al_run *run = start(r, o);
    al_run_opts_free(o);
    struct waiter_arg a = { run, AL_INTERNAL_ERROR, NULL }, b = a;
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, wait_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, wait_main, &b), 0);
    wait_parked(1);
    al_call_return(parked[0], "5", 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_true((a.rc == AL_OK && b.rc == AL_CONFIG_ERROR) ||
                (a.rc == AL_CONFIG_ERROR && b.rc == AL_OK));
    struct al_result *res = a.rc == AL_OK ? a.res : b.res;
    expect_json(res, "5");
    al_result_free(res);
    al_run_release(run);
    al_runner_free(r);
    al_config_free(c);
}

/* A host function of an asynchronous run that waits for another run would wait forever (the
 * event thread it blocks is the one the other run needs): it is refused instead. */
static struct al_run *other_run;
static enum al_code wait_rc_on_event_thread;

static void host_wait_other(struct al_call *call, void *ud)
{
    (void)ud;
    struct al_result *res = NULL;
    wait_rc_on_event_thread = al_run_wait(other_run, &res, NULL);
    al_result_free(res);
    al_call_return(call, "0", 1);
}

static void test_wait_on_event_thread_refused(void **state)
{
    (void)state;
    reset_parked();
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_add_host(c, "h.park", host_park, NULL, 0), AL_OK);
    assert_int_equal(al_config_add_host(c, "h.wait", host_wait_other, NULL, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return await h.park()");
    other_run = start(r, o);
    al_run_opts_free(o);
    wait_parked(1);
    o = opts_of("return await h.wait()");
    struct al_run *run = start(r, o);
    al_run_opts_free(o);
    struct al_result *res = wait_for(run);
    expect_json(res, "0");
    assert_int_equal(wait_rc_on_event_thread, AL_CONFIG_ERROR);
    al_result_free(res);
    al_call_return(parked[0], "1", 1);
    res = wait_for(other_run); /* the refused wait took nothing */
    expect_json(res, "1");
    al_result_free(res);
    al_run_release(run);
    al_run_release(other_run);
    al_runner_free(r);
    al_config_free(c);
}

/* Texts handed to C callers are well-formed UTF-8 and carry their lengths. */
static void test_texts_are_utf8_with_lengths(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("console.log('a\\uD800b'); console.log('x\\u0000y');"
                                    "throw new Error('bad \\uDC00 and \\u0000 nul')");
    struct al_result *res = NULL;
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    size_t len;
    enum al_console_level level;
    const char *t = al_result_console_text(res, 0, &level, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(t,
                        "a\xEF\xBF\xBD"
                        "b",
                        5);
    t = al_result_console_text(res, 1, &level, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(t, "x\0y", 3);
    struct al_error_text et;
    al_result_error_text(res, &et);
    const char want[] = "bad \xEF\xBF\xBD and \0 nul";
    assert_int_equal(et.message_len, sizeof want - 1);
    assert_memory_equal(et.message, want, sizeof want - 1);
    assert_string_equal(et.name, "Error");
    assert_int_equal(et.name_len, 5);
    assert_int_equal(et.stack_len, strlen(et.stack));
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

/* A run killed by the supervisor reports the CPU time the host measured, not 0. */
static void test_killed_run_reports_cpu(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_CPU_MS, 200), AL_OK);
    struct al_runner *r = runner_of(c);
    /* one long builtin: the worker cannot report the limit itself, the host kills it */
    struct al_run_opts *o = opts_of("return /(a+)+$/.test('a'.repeat(64) + 'b')");
    struct al_result *res = NULL;
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    expect_code(res, AL_CPU_LIMIT);
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(st.cpu_us >= 150000);
    assert_true(st.cpu_us <= st.wall_us);
    al_result_free(res);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
}

/* ------------------------------------------------------------ lying and hostile workers */

static char fake_dir[] = "/tmp/airlock-async-XXXXXX";

/* Runs "return 1" on a fake worker: a shell script writing `frames` (raw bytes) to the
 * worker socket (fd 3), then `tail` (more shell). */
static struct al_result *run_fake(const void *frames, size_t len, const char *tail)
{
    char frames_path[256], script_path[256];
    snprintf(frames_path, sizeof frames_path, "%s/frames", fake_dir);
    snprintf(script_path, sizeof script_path, "%s/worker.sh", fake_dir);
    FILE *f = fopen(frames_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(frames, 1, len, f), len);
    fclose(f);
    f = fopen(script_path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\ncat '%s' >&3\n%s\n", frames_path, tail);
    fclose(f);
    chmod(script_path, 0755);
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, script_path), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return 1");
    struct al_result *res = NULL;
    assert_int_equal(al_run(r, o, &res, NULL), AL_OK);
    al_run_opts_free(o);
    al_runner_free(r);
    al_config_free(c);
    return res;
}

static size_t put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return 4;
}

static size_t put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
    return 8;
}

static const uint8_t ready_frame[] = { 2, 0, 0, 0, 19, 1 }; /* READY, jailed */

/* A worker that reports absurd CPU time and memory: the result holds what the host measured. */
static void test_lying_worker_stats(void **state)
{
    (void)state;
    uint8_t buf[128];
    size_t n = 0;
    memcpy(buf, ready_frame, sizeof ready_frame);
    n += sizeof ready_frame;
    size_t start = n;
    n += 4;                   /* the length, patched below */
    buf[n++] = 18;            /* DONE */
    n += put_u32(buf + n, 0); /* AL_OK */
    n += put_u32(buf + n, 1); /* value "1" */
    buf[n++] = '1';
    n += put_u32(buf + n, 0);                      /* name */
    n += put_u32(buf + n, 0);                      /* message */
    n += put_u32(buf + n, 0);                      /* stack */
    n += put_u64(buf + n, 9200000000000000000ull); /* "cpu_us" */
    n += put_u64(buf + n, UINT64_MAX / 2);         /* "peak" */
    n += put_u32(buf + n, 0);
    put_u32(buf + start, (uint32_t)(n - start - 4));
    struct al_result *res = run_fake(buf, n, "sleep 5");
    expect_json(res, "1");
    struct al_stats st;
    al_result_stats(res, &st);
    assert_true(st.cpu_us <= st.wall_us);
    assert_true(st.peak_memory_bytes <= al_limit_default(AL_LIMIT_MEMORY_BYTES));
    al_result_free(res);
}

/* An asynchronous run on a worker that goes silent after READY, with a CPU limit below the
 * timeout: the event thread's first wake-up (the CPU check) finds nothing and must still keep
 * the timeout - the host's deadline is the real one for a worker that never reports. */
static void test_silent_worker_async_deadline(void **state)
{
    (void)state;
    char script_path[256];
    snprintf(script_path, sizeof script_path, "%s/silent.sh", fake_dir);
    FILE *f = fopen(script_path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nprintf '\\002\\000\\000\\000\\023\\001' >&3\nsleep 30\n");
    fclose(f);
    chmod(script_path, 0755);
    struct al_config *c = al_config_new();
    assert_int_equal(al_config_set_worker_path(c, script_path), AL_OK);
    assert_int_equal(al_config_set_warm_workers(c, 0), AL_OK);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, 1000), AL_OK);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_CPU_MS, 100), AL_OK);
    struct al_runner *r = runner_of(c);
    struct al_run_opts *o = opts_of("return 1");
    struct al_run *run = start(r, o);
    al_run_opts_free(o);
    struct al_result *res = wait_for(run);
    expect_code(res, AL_TIMEOUT);
    al_result_free(res);
    al_run_release(run);
    al_runner_free(r);
    al_config_free(c);
}

#define OVERSIZED_CHILD "--oversized-frame-child"

/* In a fresh process: a fake worker announces a 159 MiB console entry and starts sending it.
 * Prints the run's code name and the process's peak RSS in KiB. */
static int oversized_child(void)
{
    if (!mkdtemp(fake_dir)) {
        return 1;
    }
    uint8_t head[16];
    memcpy(head, ready_frame, sizeof ready_frame);
    size_t n = sizeof ready_frame;
    n += put_u32(head + n, 159u << 20);
    head[n++] = 17; /* CONSOLE */
    struct al_result *res = run_fake(head, n, "head -c 167000000 /dev/zero >&3; sleep 5");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s %ld\n", al_code_name(al_result_error_code(res)), ru.ru_maxrss);
    al_result_free(res);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake_dir);
    return WEXITSTATUS(system(cmd)) == 0 ? 0 : 1;
}

/* The host refuses an oversized frame as soon as its header arrives, before buffering it. */
static void test_oversized_frame_refused_at_header(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(procinfo_run_self(OVERSIZED_CHILD, out, sizeof out), 0);
    char code[64];
    long kib = 0;
    assert_int_equal(sscanf(out, "%63s %ld", code, &kib), 2);
    assert_string_equal(code, "PROTOCOL_ERROR");
    print_message("host peak RSS with a 159 MiB frame announced: %ld KiB\n", kib);
    assert_true(kib > 0 && kib < 48 * 1024);
}

static int setup_fake_dir(void **state)
{
    (void)state;
    snprintf(fake_dir, sizeof fake_dir, "/tmp/airlock-async-XXXXXX"); /* mkdtemp filled it */
    return mkdtemp(fake_dir) ? 0 : -1;
}

static int teardown_fake_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], OVERSIZED_CHILD) == 0) {
        return oversized_child();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_and_wait),
        cmocka_unit_test(test_many_runs_one_thread),
        cmocka_unit_test(test_library_threads_block_signals),
        cmocka_unit_test(test_short_slice_only_when_asked),
        cmocka_unit_test(test_cancel_spinning_guest),
        cmocka_unit_test(test_cancel_inside_builtin),
        cmocka_unit_test(test_cancel_queued_run),
        cmocka_unit_test(test_runner_free_cancels),
        cmocka_unit_test(test_per_run_hosts_and_userdata),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_logical_clock),
        cmocka_unit_test(test_logical_clock_across_an_interruption),
        cmocka_unit_test(test_two_waiters),
        cmocka_unit_test(test_wait_on_event_thread_refused),
        cmocka_unit_test(test_texts_are_utf8_with_lengths),
        cmocka_unit_test(test_killed_run_reports_cpu),
        cmocka_unit_test_setup_teardown(test_lying_worker_stats, setup_fake_dir, teardown_fake_dir),
        cmocka_unit_test(test_oversized_frame_refused_at_header),
        cmocka_unit_test_setup_teardown(test_silent_worker_async_deadline, setup_fake_dir,
                                        teardown_fake_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
