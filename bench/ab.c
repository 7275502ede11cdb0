/*
 * ab.c - an A/B of two airlockd binaries on the governed runs of bench/governed.c, for telling a
 * change's effect from this machine's noise: both servers run at once (each with its own data
 * directory, or its own database of one PostgreSQL cluster), each idle while the other serves,
 * so a burst of outside load hits both sides alike.
 *
 * Concurrency 1 interleaves blocks of runs, A B B A, so neither side always goes first (the first
 * runs of a block are not counted: the other side is still replacing its workers); concurrency 2
 * and 8 alternate short phases (one JSON line each, as governed.c's, side "A" or "B"). Then the
 * CPU phases, also alternated: at concurrency 1, the one-call template `get` (W2's guest), the
 * 100-call `get100` (W3's) and `iget100` (W3's through a function marked idempotent), each phase
 * reading from /proc what airlockd's own threads, its workers and (on PostgreSQL) the database's
 * processes spent, per run; a call's cost is then (get100 - get) / 99. The last line gives each
 * side's median latency at concurrency 1, the median of its phases' runs per second at 2 and 8,
 * and the median of its phases' CPU per run. Times are reported, never asserted.
 *
 * Usage: airlock_ab [--pg PGDIR] AIRLOCKD_A AIRLOCKD_B DIR [PAIRS]   (DIR must not exist; each
 * airlockd finds the airlock-worker beside it; PAIRS of concurrency-1 runs, 3000 by default;
 * PGDIR a cluster of tests/support/pg_cluster.sh, psql on the PATH)
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define AB_PHASES     8    /* phases of each side at concurrency 2 and at 8 */
#define AB_PHASE_MS   800  /* each */
#define AB_BLOCK      50   /* runs of one side in a row at concurrency 1, counted */
#define AB_SKIP       5    /* the runs before them, not counted: the other side's workers settle */
#define AB_CPU_PHASES 4    /* CPU phases of each side for each template */
#define AB_CPU_MS     2500 /* each: long enough for a hundred clock ticks of airlockd */
#define AB_TEMPLATES  3
#define AB_KEY1       "0101010101010101010101010101010101010101010101010101010101010101"
#define AB_KEY2       "0202020202020202020202020202020202020202020202020202020202020202"
#define AB_KEY3       "0303030303030303030303030303030303030303030303030303030303030303"

static const char *const ab_templates[AB_TEMPLATES] = { "get", "get100", "iget100" };

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

/* What a phase measures around its runs: its rate and, per run, the CPU of airlockd's own
 * threads, of its workers and of the database's processes (the postmaster and everything under
 * it; nobody else uses the cluster meanwhile). */
struct ab_meter {
    pid_t server;
    pid_t postmaster; /* 0 on SQLite */
    uint64_t t[2];
    long long self[2];
    long long tree[2];
    long long db[2];
    struct samples *rate; /* runs/s, in samples' "ms" slots */
    struct samples *own;  /* ms per run, each */
    struct samples *workers;
    struct samples *db_ms;
};

static void ab_mark(void *ctx, int after)
{
    struct ab_meter *m = ctx;
    char path[64];
    struct proc_stat st;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)m->server);
    m->self[after] = proc_stat_read(path, &st) == 0 ? st.ticks : 0;
    m->tree[after] = proc_tree_ticks(m->server);
    m->db[after] = m->postmaster > 0 ? proc_tree_ticks(m->postmaster) : 0;
    m->t[after] = now_ns();
}

static void ab_extra(void *ctx, long runs, FILE *out)
{
    struct ab_meter *m = ctx;
    double per = runs > 0 ? 1e3 / (double)sysconf(_SC_CLK_TCK) / (double)runs : 0;
    double own = (double)(m->self[1] - m->self[0]) * per;
    double workers = (double)(m->tree[1] - m->tree[0] - (m->self[1] - m->self[0])) * per;
    double db = (double)(m->db[1] - m->db[0]) * per;
    samples_add(m->rate, (double)runs * 1e9 / (double)(m->t[1] - m->t[0]));
    if (m->own) {
        samples_add(m->own, own);
        samples_add(m->workers, workers);
        samples_add(m->db_ms, db);
    }
    fprintf(out, ",\"cpu_ms_per_run\":{\"own\":%.4f,\"workers\":%.4f,\"database\":%.4f}", own,
            workers, db);
}

static double ab_median(struct samples *s)
{
    double med = 0;
    double p99 = 0;
    samples_stats(s, &med, &p99);
    return med;
}

int main(int argc, char **argv)
{
    const char *pgdir = NULL;
    if (argc > 2 && strcmp(argv[1], "--pg") == 0) {
        pgdir = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: airlock_ab [--pg PGDIR] AIRLOCKD_A AIRLOCKD_B DIR [PAIRS]\n");
        return 2;
    }
    int pairs = argc == 5 ? atoi(argv[4]) : 3000;
    int port = 0;
    int ret = 1;
    static struct server sv[2];
    char dir[2][4096];
    char url[2][256];
    char pg_url[1024];
    char db_url[2][1200];
    pid_t postmaster = 0;
    struct samples c1[2];
    double rate_ms[2][2][AB_PHASES];
    struct samples rates[2][2] = {
        { { rate_ms[0][0], 0, AB_PHASES }, { rate_ms[0][1], 0, AB_PHASES } },
        { { rate_ms[1][0], 0, AB_PHASES }, { rate_ms[1][1], 0, AB_PHASES } }
    };
    /* per side and template: runs/s, and own, workers' and database CPU ms per run */
    double cpu_ms[2][AB_TEMPLATES][4][AB_CPU_PHASES];
    struct samples cpu[2][AB_TEMPLATES][4];
    CURL *e[2] = { NULL, NULL };
    memset(c1, 0, sizeof c1);
    for (int i = 0; i < 2; i++) {
        for (int t = 0; t < AB_TEMPLATES; t++) {
            for (int k = 0; k < 4; k++) {
                cpu[i][t][k] = (struct samples){ cpu_ms[i][t][k], 0, AB_CPU_PHASES };
            }
        }
    }
    if (pairs < 1 || pairs > SAMPLES_MAX || mkdir(argv[3], 0700) != 0 ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || connector_start(&port) != 0) {
        fprintf(stderr, "airlock_ab: cannot start (does %s exist already?)\n", argv[3]);
        return 1;
    }
    if (pgdir) {
        /* one database each in one cluster; keys by environment, as for several nodes */
        setenv("AIRLOCK_CONTINUATION_KEY", AB_KEY1, 1);
        setenv("AIRLOCK_AUDIT_KEY", AB_KEY2, 1);
        setenv("AIRLOCK_SECRET_KEY", AB_KEY3, 1);
        char name[2][48];
        for (int i = 0; i < 2; i++) {
            /* named by this process, so that the cluster can serve several A/B runs */
            snprintf(name[i], sizeof name[i], "airlock_ab_%ld_%c", (long)getpid(), 'a' + i);
        }
        if (pg_cluster_open(pgdir, pg_url, sizeof pg_url, &postmaster) != 0 ||
            pg_database_create(pg_url, name[0], db_url[0], sizeof db_url[0]) != 0 ||
            pg_database_create(pg_url, name[1], db_url[1], sizeof db_url[1]) != 0) {
            return 1;
        }
    }
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof dir[i], "%s/%c", argv[3], 'a' + i);
        c1[i] = (struct samples){ calloc((size_t)pairs, sizeof(double)), 0, pairs };
        sv[i].e = curl_easy_init();
        fprintf(stderr, "airlock_ab: starting %s\n", argv[1 + i]);
        if (!c1[i].ms || !sv[i].e ||
            server_start(&sv[i], argv[1 + i], dir[i], pgdir ? db_url[i] : NULL) != 0 ||
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
        fprintf(stderr, "airlock_ab: concurrency %d\n", conc[c]);
        for (int p = 0; p < AB_PHASES; p++) {
            for (int j = 0; j < 2; j++) {
                int i = (p & 1) ^ j;
                struct client proto = { .kind = 1, .url = url[i], .key = sv[i].agent };
                struct ab_meter m = { .server = sv[i].pid,
                                      .postmaster = postmaster,
                                      .rate = &rates[i][c] };
                struct phase_hooks hooks = { ab_mark, ab_extra, &m };
                char name[32];
                snprintf(name, sizeof name, "AB%d", conc[c]);
                if (phase(name, i ? "B" : "A", &proto, 1, conc[c], AB_PHASE_MS, NULL, &hooks) !=
                    0) {
                    goto out;
                }
            }
        }
    }
    for (int t = 0; t < AB_TEMPLATES; t++) {
        fprintf(stderr, "airlock_ab: CPU per run of %s at concurrency 1\n", ab_templates[t]);
        for (int p = 0; p < AB_CPU_PHASES; p++) {
            for (int j = 0; j < 2; j++) {
                int i = (p & 1) ^ j;
                struct client proto = {
                    .kind = 1, .url = url[i], .key = sv[i].agent, .template_name = ab_templates[t]
                };
                struct ab_meter m = { sv[i].pid,     postmaster,   { 0, 0 },      { 0, 0 },
                                      { 0, 0 },      { 0, 0 },     &cpu[i][t][0], &cpu[i][t][1],
                                      &cpu[i][t][2], &cpu[i][t][3] };
                struct phase_hooks hooks = { ab_mark, ab_extra, &m };
                char name[32];
                snprintf(name, sizeof name, "ABCPU_%s", ab_templates[t]);
                if (phase(name, i ? "B" : "A", &proto, 1, 1, AB_CPU_MS, NULL, &hooks) != 0) {
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
    double m[2][AB_TEMPLATES][4];
    for (int i = 0; i < 2; i++) {
        samples_stats(&c1[i], &med[i], &p99[i]);
        samples_stats(&rates[i][0], &r2[i], &unused);
        samples_stats(&rates[i][1], &r8[i], &unused);
        for (int t = 0; t < AB_TEMPLATES; t++) {
            for (int k = 0; k < 4; k++) {
                m[i][t][k] = ab_median(&cpu[i][t][k]);
            }
        }
    }
    printf("{\"workload\":\"AB\",\"database\":\"%s\",\"pairs\":%d", pgdir ? "postgresql" : "sqlite",
           pairs);
    for (int i = 0; i < 2; i++) {
        printf(",\"%c\":{\"c1_median_ms\":%.4f,\"c1_p99_ms\":%.4f,\"c2_runs_per_s\":%.1f,"
               "\"c8_runs_per_s\":%.1f",
               'A' + i, med[i], p99[i], r2[i], r8[i]);
        for (int t = 0; t < AB_TEMPLATES; t++) {
            printf(",\"%s\":{\"runs_per_s\":%.2f,\"own_ms\":%.4f,\"workers_ms\":%.4f,"
                   "\"database_ms\":%.4f}",
                   ab_templates[t], m[i][t][0], m[i][t][1], m[i][t][2], m[i][t][3]);
        }
        /* a call's cost: the 100-call run's less the one-call run's, over the 99 calls between */
        printf(",\"own_ms_per_call\":%.4f,\"own_ms_per_idempotent_call\":%.4f,"
               "\"database_ms_per_call\":%.4f}",
               (m[i][1][1] - m[i][0][1]) / 99, (m[i][2][1] - m[i][0][1]) / 99,
               (m[i][1][3] - m[i][0][3]) / 99);
    }
    printf(",\"B_minus_A_c1_ms\":%.4f,\"B_over_A_c2\":%.3f,\"B_over_A_c8\":%.3f}\n",
           med[1] - med[0], r2[1] / r2[0], r8[1] / r8[0]);
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
