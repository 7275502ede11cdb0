/*
 * governed.c - the governed-run benchmark of `make bench`: the same guest and the same host
 * function, once through libairlock's al_run in-process and once as an approved template of
 * airlockd (release build, a fresh data directory, SQLite with synchronous=FULL, the real
 * audit) whose one host call goes to a connector over HTTP. One JSON object per line on stdout,
 * progress on stderr; bench/run.sh turns them into the "Governed runs (airlockd)" table.
 *
 * The connector, the client and airlockd's start and setup are bench/harness.c's (shared with
 * bench/nodes.c). The connector is a small HTTP/1.1 server in this process (a thread per keep-alive
 * connection, a fixed answer), measured alone first so the table shows it is not what limits
 * airlockd. The clients are libcurl easy handles, one per thread, reused so every request of a
 * thread goes over one keep-alive connection. The library side and airlockd alternate per
 * concurrency, airlockd idle while the library runs. Each phase of airlockd also reads the
 * server's own request log (duration_ms of each POST /v1/runs, from the request's arrival to
 * its answer) so the report can tell the server's time from the client's and the loopback's,
 * and where the CPU of each phase went (from /proc, per run): this process, and airlockd's
 * workers and each of its threads by name.
 *
 * Every run's value is checked, so a broken run stops the bench instead of being timed. Times
 * are reported, never asserted.
 *
 * Usage: airlock_governed [--quick] AIRLOCKD DIR   (DIR must not exist: airlockd's data directory
 * goes in DIR/var, its log in DIR/airlockd.log; run from the folder that holds airlock-worker)
 */
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#include "harness.h"

#define WARM_WORKERS 2 /* airlockd's default; the library's runner gets the same */
#define THREADS_MAX  64
#define GROUPS_MAX   16

/* Where a phase's CPU goes, per run: this process (the library and its workers, or the clients
 * and the connector) and airlockd by thread name and its workers, from /proc. A thread that
 * ended during the phase is counted in "ended threads". */
struct cpu_split {
    pid_t server; /* airlockd */
    int library;  /* a phase of al_run: only this process's share is printed */
    struct {
        pid_t tid;
        char comm[32];
        long long ticks;
    } threads[2][THREADS_MAX];
    int nthreads[2];
    long long server_self[2]; /* airlockd's own threads, those that ended too */
    long long server_tree[2]; /* and every process under it, reaped or live */
    long long bench_tree[2];  /* this process and everything under it, airlockd included */
};

static void cpu_mark(void *ctx, int after)
{
    struct cpu_split *c = ctx;
    char path[300];
    struct proc_stat st;
    c->nthreads[after] = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)c->server);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL && c->nthreads[after] < THREADS_MAX) {
        if (de->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)c->server, de->d_name);
        if (proc_stat_read(path, &st) == 0) {
            int i = c->nthreads[after]++;
            c->threads[after][i].tid = (pid_t)strtol(de->d_name, NULL, 10);
            memcpy(c->threads[after][i].comm, st.comm, sizeof st.comm);
            c->threads[after][i].ticks = st.ticks;
        }
    }
    if (d) {
        closedir(d);
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)c->server);
    c->server_self[after] = proc_stat_read(path, &st) == 0 ? st.ticks : 0;
    c->server_tree[after] = proc_tree_ticks(c->server);
    c->bench_tree[after] = proc_tree_ticks(getpid());
}

/* ,"cpu_ms_per_run":{"bench":B,"workers":W,"<thread name>":T,...}: the server's keys only for
 * airlockd's phases. */
static void cpu_extra(void *ctx, long runs, FILE *out)
{
    struct cpu_split *c = ctx;
    double per = runs > 0 ? 1e3 / (double)sysconf(_SC_CLK_TCK) / (double)runs : 0;
    long long server = c->server_tree[1] - c->server_tree[0];
    long long bench = c->bench_tree[1] - c->bench_tree[0] - server;
    fprintf(out, ",\"cpu_ms_per_run\":{\"bench\":%.4f", (double)bench * per);
    if (c->library) {
        fprintf(out, "}");
        return;
    }
    long long self = c->server_self[1] - c->server_self[0];
    fprintf(out, ",\"workers\":%.4f", (double)(server - self) * per);
    char names[GROUPS_MAX][32];
    long long sums[GROUPS_MAX];
    int ngroups = 0;
    long long counted = 0;
    for (int i = 0; i < c->nthreads[1]; i++) {
        long long before = 0;
        for (int j = 0; j < c->nthreads[0]; j++) {
            if (c->threads[0][j].tid == c->threads[1][i].tid) {
                before = c->threads[0][j].ticks;
            }
        }
        int g = 0;
        while (g < ngroups && strcmp(names[g], c->threads[1][i].comm) != 0) {
            g++;
        }
        if (g == ngroups && ngroups < GROUPS_MAX) {
            memcpy(names[g], c->threads[1][i].comm, sizeof names[g]);
            sums[g] = 0;
            ngroups++;
        }
        if (g < ngroups) {
            sums[g] += c->threads[1][i].ticks - before;
            counted += c->threads[1][i].ticks - before;
        }
    }
    for (int g = 0; g < ngroups; g++) {
        fprintf(out, ",\"%s\":%.4f", names[g], (double)sums[g] * per);
    }
    fprintf(out, ",\"ended threads\":%.4f}", (double)(self - counted) * per);
}

static const char small_value[] = "{\"id\":\"k1\",\"value\":42}";

/* The disk's floor under every durable commit: a 4 KiB append to a file in DIR, then fsync (what
 * SQLite in WAL mode with synchronous=FULL does to the WAL at each commit), `n` times. */
static int fsync_floor(const char *dir, int n)
{
    char path[4200];
    char page[4096];
    int ret = -1;
    struct samples s = { calloc((size_t)n, sizeof(double)), 0, n };
    snprintf(path, sizeof path, "%s/fsync-floor", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || !s.ms) {
        goto out;
    }
    memset(page, 'x', sizeof page);
    /* the CPU it costs this thread too: on a virtual machine an fsync is CPU (the submission to
     * the device and its interrupt), a floor under every commit's CPU */
    struct rusage r0;
    struct rusage r1;
    getrusage(RUSAGE_THREAD, &r0);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        if (write(fd, page, sizeof page) != (ssize_t)sizeof page || fsync(fd) != 0) {
            goto out;
        }
        samples_add(&s, (double)(now_ns() - t0) / 1e6);
    }
    getrusage(RUSAGE_THREAD, &r1);
    double cpu_ms = ((double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1e3 +
                     (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e3 +
                     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e3 +
                     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e3) /
                    n;
    double med = 0;
    double p99 = 0;
    samples_stats(&s, &med, &p99);
    printf("{\"runtime\":\"governed\",\"workload\":\"GFSYNC\",\"iterations\":%d,"
           "\"median_ms\":%.4f,\"p99_ms\":%.4f,\"cpu_ms\":%.4f}\n",
           n, med, p99, cpu_ms);
    fflush(stdout);
    ret = 0;
out:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    free(s.ms);
    return ret;
}

/* ---------------------------------------------------------------- the clients */

/* The library side's store.lookup: the connector's answer, in-process. */
static void host_lookup(struct al_call *call, void *userdata)
{
    (void)userdata;
    al_call_return(call, small_value, sizeof small_value - 1);
}

/* The approval round trip, `n` times: POST run -> 202 with one approval, POST approve as the
 * approver, GET the run (every 0.2 ms) until it completed with the connector's answer. */
static int approvals(struct server *sv, int n)
{
    static struct answer a;
    char url[256];
    char path[256];
    char id[64];
    char apr[64];
    long status = 0;
    long polls = 0;
    int ret = -1;
    struct samples s = { calloc((size_t)n, sizeof(double)), 0, n };
    if (!s.ms) {
        return -1;
    }
    snprintf(url, sizeof url, "%s/v1/runs", sv->base);
    for (int i = 0; i < n + 5; i++) {
        uint64_t t0 = now_ns();
        if (http_call(sv->e, "POST", url, sv->agent,
                      "{\"template\":\"refund\",\"input\":{},\"wait\":true}", &a, &status) != 0 ||
            status != 202 || json_str(a.data, "id", id, sizeof id) != 0 ||
            !strstr(a.data, "\"status\":\"awaiting_approval\"")) {
            fprintf(stderr, "airlock_governed: the sensitive run did not wait: %ld %s\n", status,
                    a.data);
            goto out;
        }
        const char *ap = strstr(a.data, "\"approvals\":[\"");
        size_t k = 0;
        if (!ap) {
            goto out;
        }
        for (ap += 14; *ap && *ap != '"' && k + 1 < sizeof apr; ap++) {
            apr[k++] = *ap;
        }
        apr[k] = '\0';
        snprintf(path, sizeof path, "/v1/approvals/%s/approve", apr);
        if (server_ok(sv, "POST", path, sv->approver, "{\"comment\":\"ok\"}", 200, &a) != 0) {
            goto out;
        }
        snprintf(path, sizeof path, "%s/v1/runs/%s", sv->base, id);
        for (;;) {
            if (http_call(sv->e, "GET", path, sv->agent, NULL, &a, &status) != 0 || status != 200) {
                goto out;
            }
            polls++;
            if (strstr(a.data, "\"status\":\"completed\"")) {
                break;
            }
            /* a short pause, so the polls do not take the server's HTTP thread from the run */
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
            if (!strstr(a.data, "\"status\":\"running\"") &&
                !strstr(a.data, "\"status\":\"queued\"") &&
                !strstr(a.data, "\"status\":\"awaiting_approval\"")) {
                fprintf(stderr, "airlock_governed: the approved run ended: %s\n", a.data);
                goto out;
            }
        }
        if (!strstr(a.data, "\"value\":{\"ok\":true}")) {
            fprintf(stderr, "airlock_governed: the approved run returned %s\n", a.data);
            goto out;
        }
        if (i >= 5) {
            samples_add(&s, (double)(now_ns() - t0) / 1e6);
        }
    }
    double med = 0;
    double p99 = 0;
    samples_stats(&s, &med, &p99);
    printf("{\"runtime\":\"governed\",\"workload\":\"GAPR\",\"side\":\"airlockd\","
           "\"iterations\":%d,\"median_ms\":%.4f,\"p99_ms\":%.4f,\"gets_per_trip\":%.2f}\n",
           n, med, p99, (double)polls / (n + 5));
    fflush(stdout);
    ret = 0;
out:
    free(s.ms);
    return ret;
}

int main(int argc, char **argv)
{
    struct al_config *config = NULL;
    struct al_runner *runner = NULL;
    struct al_error err = { 0 };
    struct server sv = { .pid = -1 };
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *airlockd = quick + 1 < argc ? argv[quick + 1] : NULL;
    const char *dir = quick + 2 < argc ? argv[quick + 2] : NULL;
    int ms = quick ? 1000 : 5000;
    int seq_ms = quick ? 500 : 3000;
    int port = 0;
    int ret = 1;
    char url[256];

    if (!airlockd || !dir) {
        fprintf(stderr, "usage: airlock_governed [--quick] AIRLOCKD DIR\n");
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || connector_start(&port) != 0) {
        fprintf(stderr, "airlock_governed: cannot start the connector\n");
        return 1;
    }

    /* The connector alone, as airlockd calls it: a POST over a keep-alive connection. */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/store", port);
    struct client proto = { .kind = 2, .url = url };
    fprintf(stderr, "airlock_governed: the connector alone\n");
    if (phase("GCONN1", "connector", &proto, 1, 1, seq_ms, NULL, NULL) != 0 ||
        phase("GCONN2", "connector", &proto, 1, 2, seq_ms, NULL, NULL) != 0) {
        goto out;
    }

    config = al_config_new();
    if (!config || al_config_add_host(config, "store.lookup", host_lookup, NULL, 0) != AL_OK ||
        al_config_set_warm_workers(config, WARM_WORKERS) != AL_OK ||
        al_runner_new(config, &runner, &err) != AL_OK) {
        fprintf(stderr, "airlock_governed: cannot make the runner: %s\n", err.message);
        goto out;
    }

    fprintf(stderr, "airlock_governed: starting airlockd\n");
    sv.e = curl_easy_init();
    if (!sv.e || server_start(&sv, airlockd, dir, NULL) != 0 || server_setup(&sv, port) != 0) {
        fprintf(stderr, "airlock_governed: airlockd setup failed (log: %s)\n", sv.log);
        goto out;
    }
    if (fsync_floor(dir, quick ? 20 : 200) != 0) {
        fprintf(stderr, "airlock_governed: cannot measure fsync in %s\n", dir);
        goto out;
    }
    char runs_url[256];
    snprintf(runs_url, sizeof runs_url, "%s/v1/runs", sv.base);
    static struct cpu_split cpu_lib;
    static struct cpu_split cpu_srv;
    cpu_lib.server = cpu_srv.server = sv.pid;
    cpu_lib.library = 1;
    struct phase_hooks lib_hooks = { cpu_mark, cpu_extra, &cpu_lib };
    struct phase_hooks srv_hooks = { cpu_mark, cpu_extra, &cpu_srv };
    struct client lib = { .kind = 0, .runner = runner };
    struct client srv = { .kind = 1, .url = runs_url, .key = sv.agent };

    /* warm-up of both, then latency one at a time, then throughput at 2 and 8 */
    if (phase("warmup", "library", &lib, 1, 1, 300, NULL, NULL) != 0 ||
        phase("warmup", "airlockd", &srv, 1, 1, 300, &sv, NULL) != 0) {
        goto out;
    }
    static const int conc[] = { 1, 2, 8 };
    for (size_t i = 0; i < sizeof conc / sizeof conc[0]; i++) {
        char name[32];
        int c = conc[i];
        int t = c == 1 ? seq_ms : ms;
        fprintf(stderr, "airlock_governed: concurrency %d: al_run, then POST /v1/runs (%d ms)\n", c,
                t);
        snprintf(name, sizeof name, "GLIB%d", c);
        if (phase(name, "library", &lib, 1, c, t, NULL, &lib_hooks) != 0) {
            goto out;
        }
        snprintf(name, sizeof name, "GSRV%d", c);
        if (phase(name, "airlockd", &srv, 1, c, t, &sv, &srv_hooks) != 0) {
            goto out;
        }
    }
    fprintf(stderr, "airlock_governed: approval round trips\n");
    if (approvals(&sv, quick ? 10 : 100) != 0) {
        goto out;
    }
    printf("{\"runtime\":\"governed\",\"workload\":\"GINFO\",\"connector_calls\":%ld,"
           "\"warm_workers\":%d}\n",
           (long)atomic_load(&connector_calls), WARM_WORKERS);
    ret = 0;
out:
    server_stop(&sv);
    curl_easy_cleanup(sv.e);
    al_runner_free(runner);
    al_config_free(config);
    return ret;
}
