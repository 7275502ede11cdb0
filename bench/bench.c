/*
 * bench.c - airlock's side of `make bench`: the workloads of docs/benchmarks.md on the public C
 * API, one JSON object per line on stdout, progress on stderr. bench/run_bench.mjs runs the same
 * workloads on the npm package `run` and bench/run.sh joins both outputs into the table.
 *
 * Every sample is the wall time of one al_run call (spawning the worker, the run, collecting
 * the result), or for W7 of the two al_run calls of an interrupt and its resume; every run's
 * value is checked, so a broken run fails the bench instead of being timed. Times are reported,
 * never asserted.
 *
 * Usage: airlock_bench [--quick]   (--quick: a tenth of the iterations, 1 s throughput phases)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#include "procstat.h"
#include "tsstrip.h"

#define ORDER_COUNT  1000
#define PARKED_RUNS  8    /* concurrent idle runs of the memory measurement */
#define PARK_HOLD_MS 1000 /* the parked host call answers this long after the first arrived */

/* W7: the guest's one host call interrupts; the resume answers it with the resolution. */
#define REFUND_SRC        "const r = await orders.refund(42); return r;"
#define REFUND_PAYLOAD    "{\"refund\":42}"
#define REFUND_RESOLUTION "{\"ok\":true}"
/* The signing secret of the W7 runner (AL_CONTINUATION_KEY_MIN bytes or more). */
static const char continuation_key[] = "airlock-bench-continuation-key-0123456789";

struct workload {
    const char *name;
    const char *desc;
    const char *src;
    const char *expect; /* boundary JSON of the completed value */
    int iterations;
    int warmup;
    int pace_ms; /* a pause before each run (not timed): 0 runs them back to back */
    int async;   /* through al_run_start + al_run_wait (the runner's event thread) */
};

/* Host calls of the memory measurement, held until every run is parked. */
struct parking {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct al_call *calls[PARKED_RUNS];
    int count;
    uint64_t first_ns;
};

struct orders {
    char *json;
    size_t len;
    char total[32]; /* boundary JSON of the sum of amounts */
};

struct loop_arg {
    struct al_runner *runner;
    const char *src;
    const char *expect;
    uint64_t deadline_ns;
    long runs;
    int failed;
};

static struct parking parking = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- host functions */

static const char small_value[] = "{\"id\":\"k1\",\"value\":42}";

static void host_get(struct al_call *call, void *userdata)
{
    (void)userdata;
    al_call_return(call, small_value, sizeof small_value - 1);
}

static void host_orders(struct al_call *call, void *userdata)
{
    const struct orders *o = userdata;
    al_call_return(call, o->json, o->len);
}

/* Interrupts with {"refund":42}; on the resume, returns the person's resolution. */
static void host_refund(struct al_call *call, void *userdata)
{
    (void)userdata;
    if (al_call_interruption_id(call)) {
        size_t len = 0;
        const char *resolution = al_call_resolution(call, &len);
        al_call_return(call, resolution, len);
    } else {
        al_call_interrupt(call, REFUND_PAYLOAD, sizeof REFUND_PAYLOAD - 1);
    }
}

static void host_park(struct al_call *call, void *userdata)
{
    struct parking *p = userdata;
    pthread_mutex_lock(&p->mu);
    if (p->count < PARKED_RUNS) {
        if (p->count == 0) {
            p->first_ns = now_ns();
        }
        p->calls[p->count++] = call;
        call = NULL;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (call) {
        al_call_return(call, "1", 1);
    }
}

/* The same 1,000 orders run_bench.mjs builds: integer amounts, so both sums are exact. */
static int orders_build(struct orders *o)
{
    static const char *const statuses[] = { "paid", "pending", "refunded" };
    size_t cap = ORDER_COUNT * 96 + 16;
    size_t len = 0;
    long total = 0;
    char *s = malloc(cap);
    if (!s) {
        return -1;
    }
    s[len++] = '[';
    for (int i = 0; i < ORDER_COUNT; i++) {
        long amount = 100 + (long)(i * 37 % 900);
        int n = snprintf(
                s + len, cap - len,
                "%s{\"id\":%d,\"customer\":\"customer-%d\",\"amount\":%ld,\"status\":\"%s\"}",
                i ? "," : "", i + 1, i % 50, amount, statuses[i % 3]);
        if (n < 0 || (size_t)n >= cap - len) {
            free(s);
            return -1;
        }
        len += (size_t)n;
        total += amount;
    }
    s[len++] = ']';
    s[len] = '\0';
    o->json = s;
    o->len = len;
    snprintf(o->total, sizeof o->total, "%ld", total);
    return 0;
}

/* ---------------------------------------------------------------- measuring */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *sorted, int n)
{
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* Nearest rank: the smallest sample with at least 99% of the samples at or below it. */
static double p99_of(const double *sorted, int n)
{
    int rank = (99 * n + 99) / 100; /* ceil(0.99 n) */
    return sorted[rank < 1 ? 0 : rank - 1];
}

/* One al_run; on success writes its wall time in ms. Failures are reported on stderr. */
/* The asynchronous form of al_run, as a server uses it: start, then collect the result. */
static enum al_code run_async(struct al_runner *runner, const struct al_run_opts *opts,
                              struct al_result **ret_res, struct al_error *err)
{
    struct al_run *run = NULL;
    enum al_code rc = al_run_start(runner, opts, NULL, NULL, &run, err);
    if (rc == AL_OK) {
        rc = al_run_wait(run, ret_res, err);
        al_run_release(run);
    }
    return rc;
}

static int run_once(struct al_runner *runner, const struct al_run_opts *opts, const char *expect,
                    int async, double *ret_ms)
{
    struct al_result *res = NULL;
    struct al_error err = { 0 };
    int ret = -1;
    uint64_t t0 = now_ns();
    enum al_code rc =
            async ? run_async(runner, opts, &res, &err) : al_run(runner, opts, &res, &err);
    uint64_t t1 = now_ns();
    if (rc != AL_OK) {
        fprintf(stderr, "airlock_bench: al_run: %s: %s\n", al_code_name(rc), err.message);
        goto out;
    }
    if (al_result_status(res) != AL_STATUS_COMPLETED) {
        fprintf(stderr, "airlock_bench: run failed: %s: %s\n",
                al_code_name(al_result_error_code(res)), al_result_error_message(res));
        goto out;
    }
    size_t len = 0;
    const char *value = al_result_value(res, &len);
    if (len != strlen(expect) || memcmp(value, expect, len) != 0) {
        fprintf(stderr, "airlock_bench: run returned %.*s, expected %s\n", (int)len, value, expect);
        goto out;
    }
    if (ret_ms) {
        *ret_ms = (double)(t1 - t0) / 1e6;
    }
    ret = 0;
out:
    al_result_free(res);
    return ret;
}

static struct al_run_opts *opts_for(const char *src)
{
    struct al_run_opts *opts = al_run_opts_new();
    if (opts && al_run_opts_set_source(opts, src, strlen(src), NULL) != AL_OK) {
        al_run_opts_free(opts);
        opts = NULL;
    }
    return opts;
}

/* Runs a workload; writes its median in ms to *ret_median. */
static int bench_latency(struct al_runner *runner, const struct workload *w, double *ret_median)
{
    struct al_run_opts *opts = opts_for(w->src);
    double *samples = calloc((size_t)w->iterations, sizeof *samples);
    int ret = -1;
    if (!opts || !samples) {
        goto out;
    }
    for (int i = 0; i < w->warmup; i++) {
        if (run_once(runner, opts, w->expect, w->async, NULL) != 0) {
            goto out;
        }
    }
    for (int i = 0; i < w->iterations; i++) {
        if (w->pace_ms) {
            sleep_ms(w->pace_ms);
        }
        if (run_once(runner, opts, w->expect, w->async, &samples[i]) != 0) {
            goto out;
        }
    }
    qsort(samples, (size_t)w->iterations, sizeof *samples, cmp_double);
    *ret_median = median_of(samples, w->iterations);
    printf("{\"runtime\":\"airlock\",\"workload\":\"%s\",\"desc\":\"%s\",\"iterations\":%d,"
           "\"median_ms\":%.4f,\"p99_ms\":%.4f,\"min_ms\":%.4f}\n",
           w->name, w->desc, w->iterations, *ret_median, p99_of(samples, w->iterations),
           samples[0]);
    fflush(stdout);
    ret = 0;
out:
    free(samples);
    al_run_opts_free(opts);
    return ret;
}

/* W8: a 10 KB TypeScript source. Stripping it is timed in-process (the stripper the worker runs),
 * and compared with W1's median, the whole cost of a hello run. */
static char *ts_source(size_t want, size_t *ret_len)
{
    size_t cap = want + 512;
    char *s = malloc(cap);
    size_t n = 0;
    int i = 0;
    if (!s) {
        return NULL;
    }
    n += (size_t)snprintf(s + n, cap - n, "interface Line { qty: number; price?: number }\n");
    while (n < want) {
        n += (size_t)snprintf(s + n, cap - n,
                              "function total%d<T extends Line>(lines: readonly T[], rate: number "
                              "= 0.2): number {\n"
                              "    const xs = lines as T[];\n"
                              "    return xs.reduce((s: number, l: T) => s + l.qty * l.price!, 0) "
                              "* (1 + rate);\n}\n",
                              i);
        i++;
    }
    n += (size_t)snprintf(s + n, cap - n, "return total0<Line>([{ qty: 2, price: 3 }], 0);\n");
    *ret_len = n;
    return s;
}

static int bench_typescript(double w1_median_ms, int scale)
{
    size_t len = 0;
    char *src = ts_source(10 * 1024, &len);
    int n = 1000 / scale;
    double *samples = calloc((size_t)n, sizeof *samples);
    int ret = -1;
    if (!src || !samples) {
        goto out;
    }
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        size_t out_len = 0;
        struct ts_error err;
        struct ts_options opts = { "run.ts", TS_TRANSFORM };
        uint64_t t0 = now_ns();
        int rc = ts_strip_opts(src, len, &opts, &out, &out_len, &err);
        uint64_t t1 = now_ns();
        free(out);
        if (rc != 0) {
            fprintf(stderr, "airlock_bench: W8: %s\n", err.message);
            goto out;
        }
        samples[i] = (double)(t1 - t0) / 1e6;
    }
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    double median = median_of(samples, n);
    printf("{\"runtime\":\"airlock\",\"workload\":\"W8\",\"desc\":\"strip a %zu-byte TypeScript "
           "source\",\"iterations\":%d,\"median_ms\":%.4f,\"p99_ms\":%.4f,"
           "\"percent_of_w1\":%.2f}\n",
           len, n, median, p99_of(samples, n), 100.0 * median / w1_median_ms);
    fflush(stdout);
    ret = 0;
out:
    free(samples);
    free(src);
    return ret;
}

/* WS1: a 50 MiB workspace (50 files of 1 MiB) restored from a tar (al_workspace_load_tar) and
 * snapshotted to one (al_workspace_tar), as airlockd does for from_run, from_snapshot and
 * GET /v1/runs/{id}/workspace.tar. The goal is at most 1 s each; the median is reported. */
static int bench_workspace(int scale)
{
    const size_t per = 1u << 20;
    const int files = 50;
    int n = 10 / scale < 3 ? 3 : 10 / scale;
    static const char manifest[] = "{\"limits\": {\"bytes\": 67108864}}";
    double *load_ms = calloc((size_t)n, sizeof *load_ms);
    double *tar_ms = calloc((size_t)n, sizeof *tar_ms);
    char *file = malloc(per);
    struct al_workspace *ws = NULL;
    char *tar = NULL;
    size_t tar_len = 0;
    int ret = -1;
    struct al_error err;
    if (!load_ms || !tar_ms || !file ||
        al_workspace_new(manifest, sizeof manifest - 1, &ws, &err) != AL_OK) {
        goto out;
    }
    /* the tar to restore: the workspace's own, after a first load of generated members */
    for (size_t i = 0; i < per; i++) {
        file[i] = (char)(i * 31 + (i >> 12));
    }
    size_t seed_len = (size_t)files * (512 + per) + 1024;
    char *seed = calloc(1, seed_len);
    if (!seed) {
        goto out;
    }
    for (int f = 0; f < files; f++) {
        char *h = seed + (size_t)f * (512 + per);
        snprintf(h, 100, "data/part-%02d.bin", f);
        memcpy(h + 100, "0000644", 7);
        snprintf(h + 124, 12, "%011zo", per);
        h[156] = '0';
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int k = 0; k < 512; k++) {
            sum += (unsigned char)h[k];
        }
        snprintf(h + 148, 8, "%06o", sum);
        memcpy(h + 512, file, per);
    }
    int lrc = al_workspace_load_tar(ws, seed, seed_len, &err);
    free(seed);
    if (lrc != AL_OK || al_workspace_tar(ws, &tar, &tar_len, &err) != AL_OK) {
        fprintf(stderr, "airlock_bench: WS1: %s\n", err.message);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        char *again = NULL;
        size_t again_len = 0;
        uint64_t t0 = now_ns();
        int rc = al_workspace_load_tar(ws, tar, tar_len, &err);
        uint64_t t1 = now_ns();
        rc |= al_workspace_tar(ws, &again, &again_len, &err);
        uint64_t t2 = now_ns();
        free(again);
        if (rc != AL_OK || again_len != tar_len) {
            fprintf(stderr, "airlock_bench: WS1: the workspace did not round-trip\n");
            goto out;
        }
        load_ms[i] = (double)(t1 - t0) / 1e6;
        tar_ms[i] = (double)(t2 - t1) / 1e6;
    }
    qsort(load_ms, (size_t)n, sizeof *load_ms, cmp_double);
    qsort(tar_ms, (size_t)n, sizeof *tar_ms, cmp_double);
    printf("{\"runtime\":\"airlock\",\"workload\":\"WS1\",\"desc\":\"a %zu-byte workspace "
           "(%d files) restored from a tar and snapshotted to one\",\"iterations\":%d,"
           "\"median_ms\":%.3f,\"load_median_ms\":%.3f,\"tar_median_ms\":%.3f}\n",
           (size_t)files * per, files, n, load_ms[n / 2] + tar_ms[n / 2], load_ms[n / 2],
           tar_ms[n / 2]);
    fflush(stdout);
    ret = 0;
out:
    free(tar);
    free(file);
    free(load_ms);
    free(tar_ms);
    al_workspace_free(ws);
    return ret;
}

static int same_json(const char *got, size_t len, const char *want)
{
    return got && len == strlen(want) && memcmp(got, want, len) == 0;
}

/* One interrupt and its resume: the first al_run must end interrupted on orders.refund with
 * REFUND_PAYLOAD, the second, resumed with REFUND_RESOLUTION, must complete with it. On success
 * writes the wall time of the pair in ms (both al_run calls and, between them, reading the
 * interruption id and the token and building the resume's options) and the token's size. */
static int pair_once(struct al_runner *runner, const struct al_run_opts *opts, double *ret_ms,
                     size_t *ret_token_bytes)
{
    struct al_result *first = NULL;
    struct al_result *second = NULL;
    struct al_run_opts *resume = NULL;
    struct al_error err = { 0 };
    struct al_interruption in = { 0 };
    int ret = -1;
    uint64_t t0 = now_ns();
    enum al_code rc = al_run(runner, opts, &first, &err);
    if (rc != AL_OK) {
        fprintf(stderr, "airlock_bench: al_run: %s: %s\n", al_code_name(rc), err.message);
        goto out;
    }
    size_t token_len = 0;
    const char *token = al_result_continuation(first, &token_len);
    if (al_result_status(first) != AL_STATUS_INTERRUPTED ||
        al_result_interruption_count(first) != 1 || al_result_interruption(first, 0, &in) != 0 ||
        !token) {
        fprintf(stderr, "airlock_bench: W7: the first run did not interrupt once: %s: %s\n",
                al_code_name(al_result_error_code(first)), al_result_error_message(first));
        goto out;
    }
    resume = al_run_opts_new();
    if (!resume || al_run_opts_set_source(resume, REFUND_SRC, strlen(REFUND_SRC), NULL) != AL_OK ||
        al_run_opts_set_resume(resume, token, token_len) != AL_OK ||
        al_run_opts_add_resolution(resume, in.id, REFUND_RESOLUTION,
                                   sizeof REFUND_RESOLUTION - 1) != AL_OK) {
        fprintf(stderr, "airlock_bench: W7: cannot build the resume's options\n");
        goto out;
    }
    rc = al_run(runner, resume, &second, &err);
    uint64_t t1 = now_ns();
    if (rc != AL_OK) {
        fprintf(stderr, "airlock_bench: al_run (resume): %s: %s\n", al_code_name(rc), err.message);
        goto out;
    }
    if (!in.function || strcmp(in.function, "orders.refund") != 0 ||
        !same_json(in.payload, in.payload ? strlen(in.payload) : 0, REFUND_PAYLOAD)) {
        fprintf(stderr, "airlock_bench: W7: interruption %s %s, expected orders.refund %s\n",
                in.function, in.payload, REFUND_PAYLOAD);
        goto out;
    }
    if (al_result_status(second) != AL_STATUS_COMPLETED) {
        fprintf(stderr, "airlock_bench: W7: the resume failed: %s: %s\n",
                al_code_name(al_result_error_code(second)), al_result_error_message(second));
        goto out;
    }
    size_t len = 0;
    const char *value = al_result_value(second, &len);
    if (!same_json(value, len, REFUND_RESOLUTION)) {
        fprintf(stderr, "airlock_bench: W7: the resume returned %.*s, expected %s\n", (int)len,
                value, REFUND_RESOLUTION);
        goto out;
    }
    if (ret_ms) {
        *ret_ms = (double)(t1 - t0) / 1e6;
    }
    if (ret_token_bytes) {
        *ret_token_bytes = token_len;
    }
    ret = 0;
out:
    al_result_free(second);
    al_run_opts_free(resume);
    al_result_free(first);
    return ret;
}

/* W7 on its own runner (the only one with a continuation key). Reports the largest token. */
static int bench_interrupt(const struct al_config *config, const struct workload *w)
{
    struct al_runner *runner = NULL;
    struct al_error err = { 0 };
    struct al_run_opts *opts = opts_for(w->src);
    double *samples = calloc((size_t)w->iterations, sizeof *samples);
    size_t token_bytes = 0;
    int ret = -1;
    if (!opts || !samples) {
        goto out;
    }
    if (al_runner_new(config, &runner, &err) != AL_OK) {
        fprintf(stderr, "airlock_bench: al_runner_new: %s\n", err.message);
        goto out;
    }
    for (int i = 0; i < w->warmup; i++) {
        if (pair_once(runner, opts, NULL, NULL) != 0) {
            goto out;
        }
    }
    for (int i = 0; i < w->iterations; i++) {
        size_t bytes = 0;
        if (pair_once(runner, opts, &samples[i], &bytes) != 0) {
            goto out;
        }
        token_bytes = bytes > token_bytes ? bytes : token_bytes;
    }
    qsort(samples, (size_t)w->iterations, sizeof *samples, cmp_double);
    printf("{\"runtime\":\"airlock\",\"workload\":\"%s\",\"desc\":\"%s\",\"iterations\":%d,"
           "\"median_ms\":%.4f,\"p99_ms\":%.4f,\"min_ms\":%.4f,\"token_bytes\":%zu}\n",
           w->name, w->desc, w->iterations, median_of(samples, w->iterations),
           p99_of(samples, w->iterations), samples[0], token_bytes);
    fflush(stdout);
    ret = 0;
out:
    al_runner_free(runner);
    free(samples);
    al_run_opts_free(opts);
    return ret;
}

static void *loop_main(void *p)
{
    struct loop_arg *a = p;
    struct al_run_opts *opts = opts_for(a->src);
    if (!opts) {
        a->failed = 1;
        return NULL;
    }
    while (now_ns() < a->deadline_ns) {
        if (run_once(a->runner, opts, a->expect, 0, NULL) != 0) {
            a->failed = 1;
            break;
        }
        a->runs++;
    }
    al_run_opts_free(opts);
    return NULL;
}

/* N threads share one runner, each calling al_run in a loop until the deadline. */
static int bench_throughput(struct al_runner *runner, const struct workload *w, int threads,
                            int seconds)
{
    struct loop_arg args[16];
    pthread_t tids[16];
    int started = 0;
    int ret = -1;
    if (threads > 16) {
        return -1;
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < threads; i++) {
        args[i] = (struct loop_arg){ .runner = runner,
                                     .src = w->src,
                                     .expect = w->expect,
                                     .deadline_ns = t0 + (uint64_t)seconds * 1000000000u };
        if (pthread_create(&tids[i], NULL, loop_main, &args[i]) != 0) {
            goto out;
        }
        started++;
    }
    ret = 0;
out:
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
    }
    double elapsed_s = (double)(now_ns() - t0) / 1e9;
    long runs = 0;
    for (int i = 0; i < started; i++) {
        runs += args[i].runs;
        if (args[i].failed) {
            ret = -1;
        }
    }
    if (ret == 0) {
        printf("{\"runtime\":\"airlock\",\"workload\":\"W6c%d\",\"desc\":\"W2 throughput at "
               "concurrency %d\",\"concurrency\":%d,\"seconds\":%.2f,\"runs\":%ld,"
               "\"runs_per_s\":%.1f}\n",
               threads, threads, threads, elapsed_s, runs, (double)runs / elapsed_s);
        fflush(stdout);
    }
    return ret;
}

/* ---------------------------------------------------------------- memory */

/* A "Key:   123 kB" line of a /proc file, in kB; -1 when absent or unreadable. */
static long proc_kb(const char *path, const char *key)
{
    char line[256];
    size_t klen = strlen(key);
    long kb = -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            kb = strtol(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Sums RSS and PSS (kB) of this process's children, i.e. the workers. PSS stays -1 when any
 * worker's smaps_rollup is unreadable. */
static int children_memory(long *ret_count, long *ret_rss_kb, long *ret_pss_kb)
{
    long self = (long)getpid();
    long count = 0;
    long rss = 0;
    long pss = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    if (!d) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        char path[320];
        struct proc_stat st;
        if (!isdigit((unsigned char)e->d_name[0])) {
            continue;
        }
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (proc_stat_read(path, &st) != 0 || st.ppid != self) {
            continue;
        }
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        long kb = proc_kb(path, "VmRSS");
        if (kb < 0) {
            continue;
        }
        count++;
        rss += kb;
        snprintf(path, sizeof path, "/proc/%s/smaps_rollup", e->d_name);
        kb = proc_kb(path, "Pss");
        pss = (kb < 0 || pss < 0) ? -1 : pss + kb;
    }
    closedir(d);
    *ret_count = count;
    *ret_rss_kb = rss;
    *ret_pss_kb = pss;
    return 0;
}

static void *park_main(void *p)
{
    struct loop_arg *a = p;
    struct al_run_opts *opts = opts_for(a->src);
    a->failed = !opts || run_once(a->runner, opts, a->expect, 0, NULL) != 0;
    al_run_opts_free(opts);
    return NULL;
}

/* 8 runs parked on a host call; measured once all 8 wait, answered 1 s after the first. */
static int bench_memory(struct al_runner *runner)
{
    struct loop_arg args[PARKED_RUNS];
    pthread_t tids[PARKED_RUNS];
    int started = 0;
    int ret = -1;
    long host_before = proc_kb("/proc/self/status", "VmRSS");
    long host_during = -1;
    long workers = 0;
    long rss = 0;
    long pss = -1;

    for (int i = 0; i < PARKED_RUNS; i++) {
        args[i] = (struct loop_arg){ .runner = runner,
                                     .src = "return await store.park();",
                                     .expect = "1" };
        if (pthread_create(&tids[i], NULL, park_main, &args[i]) != 0) {
            goto out;
        }
        started++;
    }
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 30;
    pthread_mutex_lock(&parking.mu);
    while (parking.count < PARKED_RUNS) {
        if (pthread_cond_timedwait(&parking.cv, &parking.mu, &limit) == ETIMEDOUT) {
            break;
        }
    }
    int parked = parking.count;
    uint64_t first_ns = parking.first_ns;
    pthread_mutex_unlock(&parking.mu);
    if (parked == PARKED_RUNS) {
        host_during = proc_kb("/proc/self/status", "VmRSS");
        if (children_memory(&workers, &rss, &pss) == 0) {
            ret = 0;
        }
        uint64_t hold_until = first_ns + (uint64_t)PARK_HOLD_MS * 1000000u;
        uint64_t now = now_ns();
        if (now < hold_until) {
            sleep_ms((long)((hold_until - now) / 1000000u));
        }
    } else {
        fprintf(stderr, "airlock_bench: only %d of %d runs reached their host call\n", parked,
                PARKED_RUNS);
    }
out:
    pthread_mutex_lock(&parking.mu);
    for (int i = 0; i < parking.count; i++) {
        al_call_return(parking.calls[i], "1", 1);
    }
    parking.count = PARKED_RUNS; /* later calls, if any, are answered at once */
    pthread_mutex_unlock(&parking.mu);
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        if (args[i].failed) {
            ret = -1;
        }
    }
    if (ret == 0) {
        double host_mb = (double)(host_during - host_before) / 1024.0;
        double rss_mb = (double)rss / 1024.0;
        printf("{\"runtime\":\"airlock\",\"workload\":\"MEM8\",\"desc\":\"memory added by %d "
               "concurrent idle runs\",\"workers\":%ld,\"host_delta_mb\":%.2f,"
               "\"workers_rss_mb\":%.2f,\"workers_pss_mb\":%.2f,\"added_mb\":%.2f}\n",
               PARKED_RUNS, workers, host_mb, rss_mb, pss < 0 ? -1.0 : (double)pss / 1024.0,
               host_mb + rss_mb);
        fflush(stdout);
    }
    return ret;
}

/* ---------------------------------------------------------------- main */

/* ---------------------------------------------------------------- the machine's floor */

/* What any design with a process per run pays on this machine, measured without airlock: a
 * fork of this (still small) process whose child exits at once, reaped; a first write to a
 * fresh anonymous page; a one-byte round trip over a Unix socket between two processes. */
static int bench_floor(int scale)
{
    int forks = 400 / scale;
    double *s = calloc((size_t)forks, sizeof *s);
    if (!s) {
        return -1;
    }
    for (int i = 0; i < forks; i++) {
        uint64_t t0 = now_ns();
        pid_t pid = fork();
        if (pid == 0) {
            _exit(0);
        }
        if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
            free(s);
            return -1;
        }
        s[i] = (double)(now_ns() - t0) / 1e6;
    }
    qsort(s, (size_t)forks, sizeof *s, cmp_double);
    double fork_ms = median_of(s, forks);
    free(s);

    size_t pages = 4096 / (size_t)scale;
    char *mem =
            mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        return -1;
    }
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < pages; i++) {
        mem[i * 4096] = 1;
    }
    double fault_us = (double)(now_ns() - t0) / 1e3 / (double)pages;
    munmap(mem, pages * 4096);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return -1;
    }
    pid_t echo = fork();
    if (echo == 0) {
        char c;
        close(sv[0]);
        while (read(sv[1], &c, 1) == 1 && write(sv[1], &c, 1) == 1) {
        }
        _exit(0);
    }
    close(sv[1]);
    int trips = 20000 / scale;
    char c = 'x';
    t0 = now_ns();
    for (int i = 0; i < trips; i++) {
        if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) {
            break;
        }
    }
    double trip_us = (double)(now_ns() - t0) / 1e3 / trips;
    close(sv[0]);
    if (echo > 0) {
        waitpid(echo, NULL, 0);
    }
    printf("{\"runtime\":\"airlock\",\"workload\":\"FLOOR\",\"fork_exit_wait_ms\":%.4f,"
           "\"forks\":%d,\"page_fault_us\":%.3f,\"socket_round_trip_us\":%.3f}\n",
           fork_ms, forks, fault_us, trip_us);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    struct orders orders = { 0 };
    struct al_config *config = NULL;
    struct al_runner *runner = NULL;
    struct al_error err = { 0 };
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int scale = quick ? 10 : 1;
    int tput_s = quick ? 1 : 10;
    int ret = 1;
    double w1 = 0;
    double w2 = 0;
    double w3 = 0;
    double ignored = 0;

    if (orders_build(&orders) != 0) {
        fprintf(stderr, "airlock_bench: out of memory\n");
        goto out;
    }
    fprintf(stderr, "airlock_bench: the machine's floor\n");
    if (bench_floor(scale) != 0) {
        fprintf(stderr, "airlock_bench: cannot measure the machine's floor\n");
        goto out;
    }
    config = al_config_new();
    if (!config || al_config_add_host(config, "store.get", host_get, NULL, 0) != AL_OK ||
        al_config_add_host(config, "store.orders", host_orders, &orders, 0) != AL_OK ||
        al_config_add_host(config, "store.park", host_park, &parking, 0) != AL_OK) {
        fprintf(stderr, "airlock_bench: cannot build the config\n");
        goto out;
    }
    if (al_runner_new(config, &runner, &err) != AL_OK) {
        fprintf(stderr, "airlock_bench: al_runner_new: %s\n", err.message);
        goto out;
    }
    /* W7's runner, made at the end from this config: the same host functions plus
     * orders.refund and a continuation key. al_runner_new copied the config, so the runner of
     * W1-W6 and MEM8 has neither. */
    if (al_config_add_host(config, "orders.refund", host_refund, NULL, 0) != AL_OK ||
        al_config_set_continuation_key(config, continuation_key, sizeof continuation_key - 1) !=
                AL_OK) {
        fprintf(stderr, "airlock_bench: cannot build the config of W7\n");
        goto out;
    }

    const struct workload w[] = {
        { "W1", "return 1+1", "return 1+1", "2", 200, 10, 0, 0 },
        { "W2", "one awaited host call", "return (await store.get(\"k1\")).value;", "42", 200, 10,
          0, 0 },
        { "W3", "100 sequential awaited host calls",
          "let s = 0;\nfor (let i = 0; i < 100; i++) {\n"
          "    s += (await store.get(\"k\" + i)).value;\n}\nreturn s;",
          "4200", 50, 3, 0, 0 },
        { "W4", "recursive fib(27)",
          "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\nreturn fib(27);",
          "196418", 20, 2, 0, 0 },
        { "W5", "host returns 1,000 orders, guest totals them",
          "const orders = await store.orders();\nlet total = 0;\n"
          "for (const o of orders) { total += o.amount; }\nreturn total;",
          orders.total, 50, 3, 0, 0 },
        { "W1p", "return 1+1, one run every 10 ms", "return 1+1", "2", 100, 10, 10, 0 },
        { "W2p", "one awaited host call, one run every 10 ms",
          "return (await store.get(\"k1\")).value;", "42", 100, 10, 10, 0 },
        { "W2a", "W2 through al_run_start and al_run_wait (the runner's event thread)",
          "return (await store.get(\"k1\")).value;", "42", 200, 10, 0, 1 },
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        struct workload wl = w[i];
        wl.iterations = wl.iterations / scale < 5 ? 5 : wl.iterations / scale;
        fprintf(stderr, "airlock_bench: %s (%d runs)\n", wl.name, wl.iterations);
        double *median = i == 0 ? &w1 : i == 1 ? &w2 : i == 2 ? &w3 : &ignored;
        if (bench_latency(runner, &wl, median) != 0) {
            goto out;
        }
    }
    printf("{\"runtime\":\"airlock\",\"workload\":\"W3call\",\"desc\":\"marginal cost per extra "
           "host call, (W3-W2)/99 of medians\",\"median_ms\":%.4f}\n",
           (w3 - w2) / 99.0);
    fflush(stdout);

    fprintf(stderr, "airlock_bench: W8\n");
    if (bench_typescript(w1, scale) != 0) {
        goto out;
    }

    fprintf(stderr, "airlock_bench: WS1\n");
    if (bench_workspace(scale) != 0) {
        goto out;
    }

    fprintf(stderr, "airlock_bench: MEM8\n");
    if (bench_memory(runner) != 0) {
        goto out;
    }
    static const int concurrency[] = { 1, 2, 8 };
    for (size_t i = 0; i < sizeof concurrency / sizeof concurrency[0]; i++) {
        int c = concurrency[i];
        fprintf(stderr, "airlock_bench: W6 at concurrency %d (%d s)\n", c, tput_s);
        if (bench_throughput(runner, &w[1], c, tput_s) != 0) {
            goto out;
        }
    }

    /* Last, with the other runner and its workers gone (MEM8 counts this process's children). */
    al_runner_free(runner);
    runner = NULL;
    struct workload w7 = { .name = "W7",
                           .desc = "interrupt on the first host call, then resume",
                           .src = REFUND_SRC,
                           .expect = REFUND_RESOLUTION,
                           .iterations = 200,
                           .warmup = 10 };
    w7.iterations = w7.iterations / scale < 5 ? 5 : w7.iterations / scale;
    fprintf(stderr, "airlock_bench: W7 (%d pairs)\n", w7.iterations);
    if (bench_interrupt(config, &w7) != 0) {
        goto out;
    }
    ret = 0;
out:
    al_runner_free(runner);
    al_config_free(config);
    free(orders.json);
    return ret;
}
