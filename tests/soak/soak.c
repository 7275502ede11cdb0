/*
 * soak - many mixed runs at once through the C API, each checked for its exact outcome, then
 * the host checked for leaks: descriptors back to where they were, no child process left (no
 * zombie), and the host's resident memory grown by less than a bound.
 *
 *   soak RUNS CONCURRENCY WORKER PROBE_WORKER
 *
 * The mix: plain runs, host calls (answered at once and from another thread), guest throws,
 * timeouts, memory bombs, stack overflows, and workers that make a forbidden system call (the
 * test build of the worker) and are stopped by the jail. Prints "N passed, M failed".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock.h"

#include "procinfo.h"

#define SOAK_RSS_BOUND_KB (32 * 1024) /* host growth allowed over the whole soak */

struct kind {
    const char *name;
    const char *source;
    enum al_code code; /* AL_OK: completes */
    const char *value; /* expected value when it completes */
    int probe;         /* runs on the probe worker's runner */
};

static const struct kind kinds[] = {
    { "plain", "return 6 * 7", AL_OK, "42", 0 },
    { "host", "const a = await store.echo(1, 'x'); return a[0] + a[1]", AL_OK, "\"1x\"", 0 },
    { "threaded", "return (await store.later())[0]", AL_OK, "\"later\"", 0 },
    { "parallel",
      "const r = await Promise.all([store.echo(1), store.later(), store.echo(2)]);"
      "return r.length",
      AL_OK, "3", 0 },
    { "throw", "throw new TypeError('no')", AL_USER_ERROR, NULL, 0 },
    { "timeout", "for (;;) {}", AL_TIMEOUT, NULL, 0 },
    { "memory", "const a = []; for (;;) a.push(new Array(1000).fill(1))", AL_MEMORY_LIMIT, NULL,
      0 },
    { "stack", "function f() { return f() + 1 } return f()", AL_STACK_OVERFLOW, NULL, 0 },
    { "crash", "// jail-probe:open\nreturn 1", AL_WORKER_CRASHED, NULL, 1 },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
/* out of every 20 runs: how many of each kind */
static const int weights[NKINDS] = { 5, 4, 2, 2, 2, 1, 1, 1, 2 };

static struct al_runner *runner;
static struct al_runner *probe_runner;
static atomic_int next_run;
static atomic_int passed;
static atomic_int failed;
static int total_runs;

static void host_echo(struct al_call *call, void *ud)
{
    (void)ud;
    size_t len;
    const char *args = al_call_args(call, &len);
    al_call_return(call, args, len);
}

static void *answer_later(void *arg)
{
    al_call_return(arg, "[\"later\"]", 9);
    return NULL;
}

static void host_later(struct al_call *call, void *ud)
{
    (void)ud;
    pthread_t t;
    if (pthread_create(&t, NULL, answer_later, call) != 0) {
        al_call_throw(call, "no thread");
        return;
    }
    pthread_detach(t);
}

static const struct kind *kind_of(int i)
{
    int slot = i % 20;
    for (size_t k = 0; k < NKINDS; k++) {
        if (slot < weights[k]) {
            return &kinds[k];
        }
        slot -= weights[k];
    }
    return &kinds[0];
}

static void *soak_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&next_run, 1);
        if (i >= total_runs) {
            return NULL;
        }
        const struct kind *k = kind_of(i);
        struct al_run_opts *o = al_run_opts_new();
        struct al_result *res = NULL;
        struct al_error err;
        int ok = 0;
        if (o && al_run_opts_set_source(o, k->source, strlen(k->source), NULL) == AL_OK &&
            /* a short timeout only where it is the point: on a loaded machine a plain run
             * may wait that long for a CPU */
            al_run_opts_set_limit(o, AL_LIMIT_TIMEOUT_MS, k->code == AL_TIMEOUT ? 100 : 10000) ==
                    AL_OK &&
            al_run_opts_set_limit(o, AL_LIMIT_MEMORY_BYTES, 4u << 20) == AL_OK &&
            al_run(k->probe ? probe_runner : runner, o, &res, &err) == AL_OK) {
            if (k->code == AL_OK) {
                ok = al_result_status(res) == AL_STATUS_COMPLETED &&
                     strcmp(al_result_value(res, NULL), k->value) == 0;
            } else {
                ok = al_result_status(res) == AL_STATUS_FAILED &&
                     al_result_error_code(res) == k->code;
            }
            if (!ok) {
                fprintf(stderr, "run %d (%s): got %s %s: %s\n", i, k->name,
                        al_code_name(al_result_error_code(res)),
                        al_result_value(res, NULL) ? al_result_value(res, NULL) : "",
                        al_result_error_message(res));
            }
        } else {
            fprintf(stderr, "run %d (%s): al_run failed\n", i, k->name);
        }
        atomic_fetch_add(ok ? &passed : &failed, 1);
        al_result_free(res);
        al_run_opts_free(o);
    }
}

static long rss_kb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static struct al_runner *make_runner(const char *worker)
{
    struct al_config *c = al_config_new();
    struct al_runner *r = NULL;
    struct al_error err;
    if (!c || al_config_set_worker_path(c, worker) != AL_OK ||
        al_config_set_warm_workers(c, 2) != AL_OK ||
        al_config_add_host(c, "store.echo", host_echo, NULL, 0) != AL_OK ||
        al_config_add_host(c, "store.later", host_later, NULL, 0) != AL_OK ||
        al_runner_new(c, &r, &err) != AL_OK) {
        fprintf(stderr, "soak: cannot make a runner for %s\n", worker);
        exit(2);
    }
    al_config_free(c);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: soak RUNS CONCURRENCY WORKER PROBE_WORKER\n");
        return 2;
    }
    total_runs = (int)strtol(argv[1], NULL, 10);
    int conc = (int)strtol(argv[2], NULL, 10);
    if (total_runs <= 0 || conc <= 0 || conc > 64) {
        fprintf(stderr, "soak: bad RUNS or CONCURRENCY\n");
        return 2;
    }
    int fds_before = procinfo_count_fds();
    runner = make_runner(argv[3]);
    probe_runner = make_runner(argv[4]);
    /* warm up, then take the memory baseline: allocator arenas of the threads exist by then */
    pthread_t t[64];
    int warm = total_runs;
    total_runs = conc * 4;
    for (int i = 0; i < conc; i++) {
        pthread_create(&t[i], NULL, soak_thread, NULL);
    }
    for (int i = 0; i < conc; i++) {
        pthread_join(t[i], NULL);
    }
    long rss_before = rss_kb();
    atomic_store(&next_run, 0);
    atomic_store(&passed, 0);
    atomic_store(&failed, 0);
    total_runs = warm;
    for (int i = 0; i < conc; i++) {
        pthread_create(&t[i], NULL, soak_thread, NULL);
    }
    for (int i = 0; i < conc; i++) {
        pthread_join(t[i], NULL);
    }
    long rss_after = rss_kb();
    al_runner_free(runner);
    al_runner_free(probe_runner);
    int fds_after = procinfo_count_fds();
    int kids = procinfo_children(NULL, 0);
    int p = atomic_load(&passed);
    int f = atomic_load(&failed);
    printf("soak: %d runs at concurrency %d; host RSS %ld -> %ld KiB; fds %d -> %d; children "
           "left %d\n",
           total_runs, conc, rss_before, rss_after, fds_before, fds_after, kids);
    if (fds_after != fds_before) {
        printf("soak: FAIL leaked %d descriptors\n", fds_after - fds_before);
        f++;
    }
    if (kids != 0) {
        printf("soak: FAIL %d child processes left\n", kids);
        f++;
    }
    if (rss_after - rss_before > SOAK_RSS_BOUND_KB) {
        printf("soak: FAIL host RSS grew by %ld KiB (bound %d KiB)\n", rss_after - rss_before,
               SOAK_RSS_BOUND_KB);
        f++;
    }
    printf("%d passed, %d failed\n", p, f);
    return f == 0 ? 0 : 1;
}
