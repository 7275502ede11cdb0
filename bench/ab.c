/*
 * ab.c - an A/B of two airlockd binaries on the governed run of bench/governed.c, for telling a
 * change's effect from this machine's noise: both servers run at once (each with its own data
 * directory, each idle while the other serves), so a burst of outside load hits both sides alike.
 *
 * Concurrency 1 interleaves blocks of runs, A B B A, so neither side always goes first (the first
 * runs of a block are not counted: the other side is still replacing its workers); concurrency 2
 * and 8 alternate short phases (one JSON line each, as governed.c's, side "A" or "B"). The last
 * line gives each side's median latency at concurrency 1 and the median of its phases' runs per
 * second at 2 and 8. Times are reported, never asserted.
 *
 * Usage: airlock_ab AIRLOCKD_A AIRLOCKD_B DIR [PAIRS]   (DIR must not exist; each airlockd finds
 * the airlock-worker beside it; PAIRS of concurrency-1 runs, 3000 by default)
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define AB_PHASES   8   /* phases of each side at concurrency 2 and at 8 */
#define AB_PHASE_MS 800 /* each */
#define AB_BLOCK    50  /* runs of one side in a row at concurrency 1, counted */
#define AB_SKIP     5   /* the runs before them, not counted: the other side's workers settle */

static int ab_run(CURL *e, const char *url, const char *key, struct samples *s)
{
    static struct answer a;
    long status = 0;
    uint64_t t0 = now_ns();
    if (http_call(e, "POST", url, key, "{\"template\":\"get\",\"input\":{},\"wait\":true}", &a,
                  &status) != 0 ||
        status != 200 || !strstr(a.data, "\"value\":42")) {
        fprintf(stderr, "airlock_ab: POST %s: %ld %s\n", url, status, a.data);
        return -1;
    }
    samples_add(s, (double)(now_ns() - t0) / 1e6);
    return 0;
}

/* A phase's runs per second, from the harness's hooks around it. */
struct ab_rate {
    uint64_t t0;
    uint64_t t1;
    struct samples *into;
};

static void ab_mark(void *ctx, int after)
{
    struct ab_rate *r = ctx;
    *(after ? &r->t1 : &r->t0) = now_ns();
}

static void ab_extra(void *ctx, long runs, FILE *out)
{
    struct ab_rate *r = ctx;
    (void)out;
    samples_add(r->into, (double)runs * 1e9 / (double)(r->t1 - r->t0));
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: airlock_ab AIRLOCKD_A AIRLOCKD_B DIR [PAIRS]\n");
        return 2;
    }
    int pairs = argc == 5 ? atoi(argv[4]) : 3000;
    int port = 0;
    int ret = 1;
    static struct server sv[2];
    char dir[2][4096];
    char url[2][256];
    struct samples c1[2];
    double rate_ms[2][2][AB_PHASES]; /* runs/s, in samples' "ms" slots */
    struct samples rates[2][2] = {
        { { rate_ms[0][0], 0, AB_PHASES }, { rate_ms[0][1], 0, AB_PHASES } },
        { { rate_ms[1][0], 0, AB_PHASES }, { rate_ms[1][1], 0, AB_PHASES } }
    };
    CURL *e[2] = { NULL, NULL };
    memset(c1, 0, sizeof c1);
    if (pairs < 1 || pairs > SAMPLES_MAX || mkdir(argv[3], 0700) != 0 ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || connector_start(&port) != 0) {
        fprintf(stderr, "airlock_ab: cannot start (does %s exist already?)\n", argv[3]);
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof dir[i], "%s/%c", argv[3], 'a' + i);
        c1[i] = (struct samples){ calloc((size_t)pairs, sizeof(double)), 0, pairs };
        sv[i].e = curl_easy_init();
        fprintf(stderr, "airlock_ab: starting %s\n", argv[1 + i]);
        if (!c1[i].ms || !sv[i].e || server_start(&sv[i], argv[1 + i], dir[i], NULL) != 0 ||
            server_setup(&sv[i], port) != 0) {
            fprintf(stderr, "airlock_ab: airlockd setup failed (log: %s)\n", sv[i].log);
            goto out;
        }
        snprintf(url[i], sizeof url[i], "%s/v1/runs", sv[i].base);
    }

    /* concurrency 1, interleaved; the first 200 pairs warm both up and are not counted (a
     * samples of no room keeps nothing) */
    struct samples skip = { NULL, 0, 0 };
    e[0] = curl_easy_init();
    e[1] = curl_easy_init();
    if (!e[0] || !e[1]) {
        goto out;
    }
    for (int k = 0; k < 200; k++) {
        for (int i = 0; i < 2; i++) {
            if (ab_run(e[i], url[i], sv[i].agent, &skip) != 0) {
                goto out;
            }
        }
    }
    fprintf(stderr, "airlock_ab: %d pairs at concurrency 1\n", pairs);
    for (int k = 0; k < pairs / AB_BLOCK; k++) {
        for (int j = 0; j < 2; j++) {
            int i = (k & 1) ^ j; /* A B, then B A */
            for (int n = 0; n < AB_BLOCK + AB_SKIP; n++) {
                if (ab_run(e[i], url[i], sv[i].agent, n < AB_SKIP ? &skip : &c1[i]) != 0) {
                    goto out;
                }
            }
        }
    }
    static const int conc[2] = { 2, 8 };
    for (int c = 0; c < 2; c++) {
        for (int p = 0; p < AB_PHASES; p++) {
            for (int j = 0; j < 2; j++) {
                int i = (p & 1) ^ j;
                struct client proto = { .kind = 1, .url = url[i], .key = sv[i].agent };
                struct ab_rate rate = { 0, 0, &rates[i][c] };
                struct phase_hooks hooks = { ab_mark, ab_extra, &rate };
                char name[32];
                snprintf(name, sizeof name, "AB%d", conc[c]);
                if (phase(name, i ? "B" : "A", &proto, 1, conc[c], AB_PHASE_MS, NULL, &hooks) !=
                    0) {
                    goto out;
                }
            }
        }
    }
    double med[2];
    double p99[2];
    double r2[2];
    double r8[2];
    double unused;
    for (int i = 0; i < 2; i++) {
        samples_stats(&c1[i], &med[i], &p99[i]);
        samples_stats(&rates[i][0], &r2[i], &unused);
        samples_stats(&rates[i][1], &r8[i], &unused);
    }
    printf("{\"workload\":\"AB\",\"pairs\":%d,"
           "\"A\":{\"c1_median_ms\":%.4f,\"c1_p99_ms\":%.4f,\"c2_runs_per_s\":%.1f,"
           "\"c8_runs_per_s\":%.1f},"
           "\"B\":{\"c1_median_ms\":%.4f,\"c1_p99_ms\":%.4f,\"c2_runs_per_s\":%.1f,"
           "\"c8_runs_per_s\":%.1f},"
           "\"B_minus_A_c1_ms\":%.4f,\"B_over_A_c2\":%.3f,\"B_over_A_c8\":%.3f}\n",
           pairs, med[0], p99[0], r2[0], r8[0], med[1], p99[1], r2[1], r8[1], med[1] - med[0],
           r2[1] / r2[0], r8[1] / r8[0]);
    ret = 0;
out:
    for (int i = 0; i < 2; i++) {
        curl_easy_cleanup(e[i]);
        if (sv[i].pid > 0) {
            server_stop(&sv[i]);
        }
        curl_easy_cleanup(sv[i].e);
        free(c1[i].ms);
    }
    return ret;
}
