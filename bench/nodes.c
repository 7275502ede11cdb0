/*
 * nodes.c - the nodes phase of `make bench`: throughput of governed runs (POST /v1/runs of the
 * approved template "get", one connector call, every run's value checked) with 1, 2 and 3
 * airlockd nodes on one PostgreSQL database, against SQLite on one node, in one process run.
 * One JSON object per line on stdout, progress on stderr; bench/run.sh turns them into the
 * "Several nodes on PostgreSQL" table of docs/benchmarks.md.
 *
 * Each configuration gets fresh nodes and, on PostgreSQL, a fresh database of the cluster
 * (CREATE DATABASE through psql); the nodes share the continuation, audit and secret keys by
 * environment as docs/server.md "Several nodes" says, and the first one bootstraps. The client
 * threads are spread round-robin over the nodes. The machine's cores are shared by everything
 * here (the bench, the nodes, their workers, PostgreSQL), so what this can show is that adding
 * nodes costs nothing and how much of the CPU per run the database takes, not how far the nodes
 * scale out on machines of their own.
 *
 * The database's share: the CPU time (utime + stime, with the reaped children's) of the cluster's
 * processes - the postmaster and everything under it, from /proc/<pid>/stat - across each
 * phase, per run, beside the same for the airlockd nodes (with their workers) and for this
 * process (getrusage: the clients and the connector).
 *
 * Usage: airlock_nodes [--quick] AIRLOCKD DIR PGDIR   (DIR must not exist; PGDIR is a cluster
 * of tests/support/pg_cluster.sh, started with --durable for a fair comparison with SQLite's
 * fsync'd commits; run from the folder that holds airlock-worker, psql on the PATH)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define NODES_MAX  3
#define NODES_KEY1 "0101010101010101010101010101010101010101010101010101010101010101"
#define NODES_KEY2 "0202020202020202020202020202020202020202020202020202020202020202"
#define NODES_KEY3 "0303030303030303030303030303030303030303030303030303030303030303"

/* What the CPU hooks compare across a phase. */
struct cpu {
    pid_t pg_root; /* the postmaster, 0 on SQLite */
    pid_t nodes[NODES_MAX];
    int n;
    long long pg_ticks[2];
    long long node_ticks[2];
    double self_ms[2];
};

static void cpu_mark(void *ctx, int after)
{
    struct cpu *c = ctx;
    struct rusage ru;
    c->pg_ticks[after] = c->pg_root > 0 ? proc_tree_ticks(c->pg_root) : 0;
    c->node_ticks[after] = 0;
    for (int i = 0; i < c->n; i++) {
        c->node_ticks[after] += proc_tree_ticks(c->nodes[i]);
    }
    getrusage(RUSAGE_SELF, &ru);
    c->self_ms[after] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                        (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void cpu_extra(void *ctx, long runs, FILE *out)
{
    struct cpu *c = ctx;
    double tick_ms = 1e3 / (double)sysconf(_SC_CLK_TCK);
    double per = runs > 0 ? 1.0 / (double)runs : 0;
    double db = (double)(c->pg_ticks[1] - c->pg_ticks[0]) * tick_ms * per;
    double nodes = (double)(c->node_ticks[1] - c->node_ticks[0]) * tick_ms * per;
    double self = (c->self_ms[1] - c->self_ms[0]) * per;
    double all = db + nodes + self;
    fprintf(out,
            ",\"db_cpu_ms_per_run\":%.4f,\"nodes_cpu_ms_per_run\":%.4f,"
            "\"bench_cpu_ms_per_run\":%.4f,\"db_share\":%.4f",
            db, nodes, self, all > 0 ? db / all : 0);
}

/* One configuration: `n` fresh nodes (on a fresh database `db_url`, or SQLite when it is NULL),
 * the template set up through the first, then concurrency 2 and 8 spread over them. */
static int configuration(const char *airlockd, const char *dir, const char *db, int n,
                         const char *db_url, pid_t pg_root, int connector_port, int quick)
{
    struct server sv[NODES_MAX];
    struct client cl[NODES_MAX];
    char urls[NODES_MAX][128];
    char path[4200];
    int ret = -1;
    int started = 0;
    struct cpu cpu = { .pg_root = pg_root, .n = n };
    struct phase_hooks hooks = { cpu_mark, cpu_extra, &cpu };
    fprintf(stderr, "airlock_nodes: %s, %d node%s\n", db, n, n > 1 ? "s" : "");
    for (int i = 0; i < n; i++) {
        sv[i] = (struct server){ .pid = -1 };
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s%d-node%d", dir, db, n, i + 1);
        sv[i].e = curl_easy_init();
        if (!sv[i].e || server_start(&sv[i], airlockd, path, db_url) != 0) {
            fprintf(stderr, "airlock_nodes: node %d did not start (log: %s)\n", i + 1, sv[i].log);
            goto out;
        }
        started++;
        cpu.nodes[i] = sv[i].pid;
    }
    if (server_setup(&sv[0], connector_port) != 0) {
        fprintf(stderr, "airlock_nodes: setup failed (log: %s)\n", sv[0].log);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        snprintf(urls[i], sizeof urls[i], "%s/v1/runs", sv[i].base);
        cl[i] = (struct client){ .kind = 1, .url = urls[i], .key = sv[0].agent };
    }
    /* every node warm, then the two concurrencies */
    if (phase("warmup", "airlockd", cl, n, n, 300, NULL, NULL) != 0) {
        goto out;
    }
    static const int conc[] = { 2, 8 };
    for (size_t k = 0; k < sizeof conc / sizeof conc[0]; k++) {
        char name[48];
        char side[48];
        int c = conc[k];
        snprintf(name, sizeof name, "N%s%dc%d", db, n, c);
        snprintf(side, sizeof side, "%s x%d", db, n);
        if (phase(name, side, cl, n, c, quick ? (c == 8 ? 1000 : 500) : (c == 8 ? 8000 : 4000),
                  NULL, &hooks) != 0) {
            goto out;
        }
    }
    ret = 0;
out:
    for (int i = 0; i < started; i++) {
        server_stop(&sv[i]);
    }
    for (int i = 0; i < n; i++) {
        curl_easy_cleanup(sv[i].e);
    }
    return ret;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *airlockd = quick + 1 < argc ? argv[quick + 1] : NULL;
    const char *dir = quick + 2 < argc ? argv[quick + 2] : NULL;
    const char *pgdir = quick + 3 < argc ? argv[quick + 3] : NULL;
    char url[1024];
    int port = 0;

    if (!airlockd || !dir || !pgdir) {
        fprintf(stderr, "usage: airlock_nodes [--quick] AIRLOCKD DIR PGDIR\n");
        return 2;
    }
    pid_t pg_root = -1;
    if (pg_cluster_open(pgdir, url, sizeof url, &pg_root) != 0) {
        return 1;
    }
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "airlock_nodes: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    /* the same keys on every node, by environment (their children inherit them) */
    setenv("AIRLOCK_CONTINUATION_KEY", NODES_KEY1, 1);
    setenv("AIRLOCK_AUDIT_KEY", NODES_KEY2, 1);
    setenv("AIRLOCK_SECRET_KEY", NODES_KEY3, 1);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || connector_start(&port) != 0) {
        fprintf(stderr, "airlock_nodes: cannot start the connector\n");
        return 1;
    }
    if (configuration(airlockd, dir, "sqlite", 1, NULL, 0, port, quick) != 0) {
        return 1;
    }
    for (int n = 1; n <= NODES_MAX; n++) {
        char name[32];
        char db_url[1200];
        snprintf(name, sizeof name, "airlock_bench_%d", n);
        if (pg_database_create(url, name, db_url, sizeof db_url) != 0 ||
            configuration(airlockd, dir, "pg", n, db_url, pg_root, port, quick) != 0) {
            return 1;
        }
    }
    printf("{\"runtime\":\"governed\",\"workload\":\"NINFO\",\"connector_calls\":%ld,"
           "\"clk_tck\":%ld}\n",
           (long)atomic_load(&connector_calls), sysconf(_SC_CLK_TCK));
    return 0;
}
