/*
 * harness.h - the pieces of the governed benchmarks that bench/governed.c and bench/nodes.c
 * share: an HTTP connector in the bench's own process, libcurl calls, an airlockd started on a
 * free port (SQLite or a PostgreSQL URL) and set up with approved templates, and timed phases
 * of client threads that check every run's value and print one JSON line each.
 */
#ifndef AIRLOCK_BENCH_HARNESS_H
#define AIRLOCK_BENCH_HARNESS_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "airlock.h"

#include "procstat.h"

#define MAX_THREADS   8
#define SAMPLES_MAX   200000
#define ANSWER_MAX    (64 * 1024)
#define CONN_BUF      (16 * 1024)
#define BOOTSTRAP_KEY "bench-admin-key-0123456789abcdef0123456789abcdef"
#define SIGNING       "bench-signing-secret-0123456789"

/* W2's guest (bench.c), with lookup for get (a word airlockd keeps from function names), and
 * the sensitive call of W7. */
#define GET_SRC    "return (await store.lookup(\"k1\")).value;"
#define REFUND_SRC "const r = await orders.refund(42); return r;"
/* W3's guest, 100 sequential connector calls (bench/ab.c: the journal's cost per call); and W2's
 * and W3's through istore, whose lookup is marked idempotent */
#define GET100_SRC                                                                              \
    "let s = 0; for (let i = 0; i < 100; i++) { s += (await store.lookup(\"k\" + i)).value; } " \
    "return s;"
#define IGET_SRC "return (await istore.lookup(\"k1\")).value;"
#define IGET100_SRC                                                                              \
    "let s = 0; for (let i = 0; i < 100; i++) { s += (await istore.lookup(\"k\" + i)).value; } " \
    "return s;"

/* Calls the connector answered, over the bench's life. */
extern atomic_long connector_calls;

struct samples {
    double *ms;
    int n;
    int cap;
};

/* A client thread's job: what to call until the deadline, and what came of it. */
struct client {
    int kind; /* 0: al_run, 1: POST /v1/runs, 2: POST to the connector */
    struct al_runner *runner;
    const char *url;
    const char *key;
    /* kind 1: the template server_setup made ("get" when NULL: W2's guest, value 42); "get100"
     * is W3's (value 4200), "iget" and "iget100" the same through a function marked idempotent */
    const char *template_name;
    uint64_t deadline_ns;
    long runs;
    int failed;
    struct samples s;
};

struct answer {
    char data[ANSWER_MAX];
    size_t len;
};

struct server {
    pid_t pid;
    char dir[4096];
    char log[4200];
    char base[64];
    char agent[256];
    char approver[256];
    CURL *e;
};

/* What a phase measures besides its runs: mark(ctx, 0) just before the clients start, mark(ctx,
 * 1) once they all ended, then extra(ctx, runs, out) writes more ,"name":value pairs into the
 * phase's JSON line. */
struct phase_hooks {
    void (*mark)(void *ctx, int after);
    void (*extra)(void *ctx, long runs, FILE *out);
    void *ctx;
};

uint64_t now_ns(void);
void samples_add(struct samples *s, double ms);
void samples_stats(struct samples *s, double *ret_median, double *ret_p99);

int connector_start(int *ret_port);

int http_call(CURL *e, const char *method, const char *url, const char *key, const char *body,
              struct answer *a, long *ret_status);
int json_str(const char *json, const char *name, char *out, size_t cap);

int server_start(struct server *sv, const char *airlockd, const char *dir, const char *database);
void server_stop(struct server *sv);
int server_ok(struct server *sv, const char *method, const char *path, const char *key,
              const char *body, long want, struct answer *a);
int server_setup(struct server *sv, int connector_port);
/* A PostgreSQL cluster of tests/support/pg_cluster.sh in `pgdir`: its URL and its postmaster's
 * pid (-1 and a message on stderr when there is none, or it is not running). */
int pg_cluster_open(const char *pgdir, char *ret_url, size_t cap, pid_t *ret_postmaster);
/* CREATE DATABASE `name` in the cluster at `url` (through psql); the URL of the new database
 * into ret_url. */
int pg_database_create(const char *url, const char *name, char *ret_url, size_t cap);
int server_log_runs(const struct server *sv, long from, struct samples *s, long *ret_end);
long file_size(const char *path);

int phase(const char *name, const char *side, const struct client *protos, int nprotos, int threads,
          int ms, const struct server *sv, const struct phase_hooks *hooks);

#endif
