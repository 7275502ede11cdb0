/*
 * governed.c - the governed-run benchmark of `make bench`: the same guest and the same host
 * function, once through libairlock's al_run in-process and once as an approved template of
 * airlockd (release build, a fresh data directory, SQLite with synchronous=FULL, the real
 * audit) whose one host call goes to a connector over HTTP. One JSON object per line on stdout,
 * progress on stderr; bench/run.sh turns them into the "Governed runs (airlockd)" table.
 *
 * The connector is a small HTTP/1.1 server in this process (a thread per keep-alive
 * connection, a fixed answer), measured alone first so the table shows it is not what limits
 * airlockd. The clients are libcurl easy handles, one per thread, reused so every request of a
 * thread goes over one keep-alive connection. The library side and airlockd alternate per
 * concurrency, airlockd idle while the library runs. Each phase of airlockd also reads the
 * server's own request log (duration_ms of each POST /v1/runs, from the request's arrival to
 * its answer) so the report can tell the server's time from the client's and the loopback's.
 *
 * Every run's value is checked, so a broken run stops the bench instead of being timed. Times
 * are reported, never asserted.
 *
 * Usage: airlock_governed [--quick] AIRLOCKD DIR   (DIR must not exist: airlockd's data directory
 * goes in DIR/var, its log in DIR/airlockd.log; run from the folder that holds airlock-worker)
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

#define MAX_THREADS   8
#define SAMPLES_MAX   200000
#define ANSWER_MAX    (64 * 1024)
#define CONN_BUF      (16 * 1024)
#define BOOTSTRAP_KEY "bench-admin-key-0123456789abcdef0123456789abcdef"
#define SIGNING       "bench-signing-secret-0123456789"
#define WARM_WORKERS  2 /* airlockd's default; the library's runner gets the same */

/* W2's guest (bench.c), with lookup for get (a word airlockd keeps from function names), and
 * the sensitive call of W7. */
#define GET_SRC    "return (await store.lookup(\"k1\")).value;"
#define REFUND_SRC "const r = await orders.refund(42); return r;"

static const char get_answer[] = "{\"result\":{\"id\":\"k1\",\"value\":42}}";
static const char refund_answer[] = "{\"result\":{\"ok\":true}}";
static const char small_value[] = "{\"id\":\"k1\",\"value\":42}";

static atomic_long connector_calls;

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
    uint64_t deadline_ns;
    long runs;
    int failed;
    struct samples s;
};

struct answer {
    char data[ANSWER_MAX];
    size_t len;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static void samples_add(struct samples *s, double ms)
{
    if (s->n < s->cap) {
        s->ms[s->n++] = ms;
    }
}

/* Sorts in place; median and nearest-rank p99 (bench.c's definitions). */
static void samples_stats(struct samples *s, double *ret_median, double *ret_p99)
{
    if (s->n == 0) {
        *ret_median = 0;
        *ret_p99 = 0;
        return;
    }
    qsort(s->ms, (size_t)s->n, sizeof *s->ms, cmp_double);
    int n = s->n;
    *ret_median = n % 2 ? s->ms[n / 2] : (s->ms[n / 2 - 1] + s->ms[n / 2]) / 2;
    int rank = (99 * n + 99) / 100;
    *ret_p99 = s->ms[rank < 1 ? 0 : rank - 1];
}

/* ---------------------------------------------------------------- the connector */

/* Serves one keep-alive connection: every request (headers, then Content-Length bytes of body)
 * gets the fixed answer of the function it names. */
static void *connector_conn(void *p)
{
    int fd = (int)(intptr_t)p;
    char *buf = malloc(CONN_BUF);
    size_t len = 0;
    if (!buf) {
        close(fd);
        return NULL;
    }
    for (;;) {
        char *end = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL;
        if (end) {
            size_t head = (size_t)(end - buf) + 4;
            size_t body = 0;
            for (char *h = buf; h < end; h++) {
                if ((h == buf || h[-1] == '\n') && strncasecmp(h, "content-length:", 15) == 0) {
                    body = strtoul(h + 15, NULL, 10);
                }
            }
            if (head + body > CONN_BUF) {
                break;
            }
            if (len >= head + body) {
                int refund = memmem(buf + head, body, "orders.refund", 13) != NULL;
                const char *a = refund ? refund_answer : get_answer;
                size_t alen = strlen(a);
                char out[256];
                int n = snprintf(out, sizeof out,
                                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: %zu\r\n\r\n%s",
                                 alen, a);
                if (write(fd, out, (size_t)n) != n) {
                    break;
                }
                atomic_fetch_add(&connector_calls, 1);
                memmove(buf, buf + head + body, len - head - body);
                len -= head + body;
                continue;
            }
        }
        if (len == CONN_BUF) {
            break;
        }
        ssize_t r = read(fd, buf + len, CONN_BUF - len);
        if (r <= 0) {
            break;
        }
        len += (size_t)r;
    }
    free(buf);
    close(fd);
    return NULL;
}

static void *connector_accept(void *p)
{
    int lfd = (int)(intptr_t)p;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR) {
                continue;
            }
            return NULL;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, NULL, connector_conn, (void *)(intptr_t)fd) != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}

/* Listens on a free loopback port; writes it to *ret_port. */
static int connector_start(int *ret_port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pthread_t t;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0 ||
        pthread_create(&t, NULL, connector_accept, (void *)(intptr_t)fd) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    pthread_detach(t);
    *ret_port = ntohs(a.sin_port);
    return 0;
}

/* ---------------------------------------------------------------- HTTP client */

static size_t answer_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct answer *a = userdata;
    size_t n = size * nmemb;
    if (a->len + n >= sizeof a->data) {
        return 0;
    }
    memcpy(a->data + a->len, ptr, n);
    a->len += n;
    a->data[a->len] = '\0';
    return n;
}

/* One request on a (reused) easy handle; writes the status. The answer is in *a. */
static int http_call(CURL *e, const char *method, const char *url, const char *key,
                     const char *body, struct answer *a, long *ret_status)
{
    struct curl_slist *h = NULL;
    char auth[512];
    int ret = -1;
    a->len = 0;
    a->data[0] = '\0';
    if (key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, auth);
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, answer_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    CURLcode rc = curl_easy_perform(e);
    if (rc != CURLE_OK) {
        fprintf(stderr, "airlock_governed: %s %s: %s\n", method, url, curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, ret_status);
    ret = 0;
out:
    curl_slist_free_all(h);
    return ret;
}

/* The string value of the first "name":"…" in a JSON text, into out. */
static int json_str(const char *json, const char *name, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", name);
    const char *p = strstr(json, pat);
    if (!p) {
        return -1;
    }
    p += strlen(pat);
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= cap) {
        return -1;
    }
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
    return 0;
}

/* ---------------------------------------------------------------- airlockd */

struct server {
    pid_t pid;
    char dir[4096];
    char log[4200];
    char base[64];
    char agent[256];
    char approver[256];
    CURL *e;
};

/* Starts airlockd on a free port in a fresh directory and waits for its listening line. */
static int server_start(struct server *sv, const char *airlockd, const char *dir)
{
    char data[4200];
    char config[4200];
    snprintf(sv->dir, sizeof sv->dir, "%s", dir);
    if (mkdir(sv->dir, 0700) != 0) {
        fprintf(stderr, "airlock_governed: cannot create %s: %s\n", sv->dir, strerror(errno));
        return -1;
    }
    snprintf(data, sizeof data, "%s/var", sv->dir);
    snprintf(sv->log, sizeof sv->log, "%s/airlockd.log", sv->dir);
    snprintf(config, sizeof config, "%s/airlockd.json", sv->dir);
    FILE *f = fopen(config, "w");
    if (!f) {
        return -1;
    }
    /* The default per-caller limit (200/s) would cap the bench, not measure airlockd. */
    fputs("{\"rate_limit\":{\"requests_per_second\":1000000,\"burst\":1000000}}\n", f);
    fclose(f);
    sv->pid = fork();
    if (sv->pid < 0) {
        return -1;
    }
    if (sv->pid == 0) {
        int fd = open(sv->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0) {
            _exit(127);
        }
        setenv("AIRLOCK_BOOTSTRAP_KEY", BOOTSTRAP_KEY, 1);
        execl(airlockd, airlockd, "--listen", "127.0.0.1:0", "--data-dir", data, "--config", config,
              (char *)NULL);
        _exit(127);
    }
    uint64_t deadline = now_ns() + 30000000000u;
    while (now_ns() < deadline) {
        char line[4096];
        f = fopen(sv->log, "r");
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "airlockd: listening on http://");
            if (p) {
                snprintf(sv->base, sizeof sv->base, "%s", p + strlen("airlockd: listening on "));
                sv->base[strcspn(sv->base, "\r\n")] = '\0';
                fclose(f);
                return 0;
            }
        }
        if (f) {
            fclose(f);
        }
        if (waitpid(sv->pid, NULL, WNOHANG) == sv->pid) {
            sv->pid = -1;
            fprintf(stderr, "airlock_governed: airlockd exited; see %s\n", sv->log);
            return -1;
        }
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

static void server_stop(struct server *sv)
{
    if (sv->pid > 0) {
        kill(sv->pid, SIGTERM);
        waitpid(sv->pid, NULL, 0);
        sv->pid = -1;
    }
}

/* One setup request that must answer `want`; the answer stays in *a. */
static int server_ok(struct server *sv, const char *method, const char *path, const char *key,
                     const char *body, long want, struct answer *a)
{
    char url[256];
    long status = 0;
    snprintf(url, sizeof url, "%s%s", sv->base, path);
    if (http_call(sv->e, method, url, key, body, a, &status) != 0) {
        return -1;
    }
    if (status != want) {
        fprintf(stderr, "airlock_governed: %s %s: %ld, want %ld: %s\n", method, path, status, want,
                a->data);
        return -1;
    }
    return 0;
}

/* A principal with one role in department bench; its key into key. */
static int server_principal(struct server *sv, const char *name, const char *role, char *key,
                            size_t cap, struct answer *a)
{
    char body[256];
    char path[128];
    snprintf(body, sizeof body, "{\"name\":\"%s\",\"kind\":\"user\"}", name);
    if (server_ok(sv, "POST", "/v1/principals", BOOTSTRAP_KEY, body, 201, a) != 0 ||
        json_str(a->data, "key", key, cap) != 0) {
        return -1;
    }
    snprintf(body, sizeof body, "{\"role\":\"%s\",\"department\":\"bench\"}", role);
    snprintf(path, sizeof path, "/v1/principals/%s/roles", name);
    return server_ok(sv, "POST", path, BOOTSTRAP_KEY, body, 201, a);
}

/* An approved template (version 1) of one source; its functions as a JSON array. */
static int server_template(struct server *sv, const char *author, const char *name,
                           const char *source, const char *functions, struct answer *a)
{
    char body[1024];
    char path[128];
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"department\":\"bench\",\"description\":\"bench\"}", name);
    if (server_ok(sv, "POST", "/v1/templates", author, body, 201, a) != 0) {
        return -1;
    }
    /* the source holds quotes: escape them for the JSON string */
    char esc[512];
    size_t n = 0;
    for (const char *p = source; *p && n + 2 < sizeof esc; p++) {
        if (*p == '"' || *p == '\\') {
            esc[n++] = '\\';
        }
        esc[n++] = *p;
    }
    esc[n] = '\0';
    snprintf(body, sizeof body,
             "{\"source\":\"%s\",\"language\":\"js\",\"input_schema\":{\"type\":\"object\"},"
             "\"functions\":%s,\"autonomy\":\"autonomous\"}",
             esc, functions);
    snprintf(path, sizeof path, "/v1/templates/%s/versions", name);
    if (server_ok(sv, "POST", path, author, body, 201, a) != 0) {
        return -1;
    }
    snprintf(path, sizeof path, "/v1/templates/%s/versions/1/submit", name);
    if (server_ok(sv, "POST", path, author, "{}", 200, a) != 0) {
        return -1;
    }
    snprintf(path, sizeof path, "/v1/templates/%s/versions/1/approve", name);
    return server_ok(sv, "POST", path, sv->approver, "{\"comment\":\"bench\"}", 200, a);
}

static int server_setup(struct server *sv, int connector_port)
{
    static struct answer a;
    char author[256];
    char body[1024];
    if (server_ok(sv, "POST", "/v1/departments", BOOTSTRAP_KEY, "{\"name\":\"bench\"}", 201, &a) !=
                0 ||
        server_principal(sv, "author", "author", author, sizeof author, &a) != 0 ||
        server_principal(sv, "approver", "approver", sv->approver, sizeof sv->approver, &a) != 0 ||
        server_principal(sv, "agent", "agent", sv->agent, sizeof sv->agent, &a) != 0) {
        return -1;
    }
    snprintf(body, sizeof body,
             "{\"name\":\"store\",\"department\":\"bench\",\"url\":\"http://127.0.0.1:%d/store\","
             "\"signing_secret\":\"" SIGNING "\",\"functions\":{\"lookup\":{}}}",
             connector_port);
    if (server_ok(sv, "POST", "/v1/connectors", BOOTSTRAP_KEY, body, 201, &a) != 0) {
        return -1;
    }
    snprintf(body, sizeof body,
             "{\"name\":\"orders\",\"department\":\"bench\",\"url\":\"http://127.0.0.1:%d/orders\","
             "\"signing_secret\":\"" SIGNING "\",\"functions\":{\"refund\":{\"sensitive\":true}}}",
             connector_port);
    if (server_ok(sv, "POST", "/v1/connectors", BOOTSTRAP_KEY, body, 201, &a) != 0) {
        return -1;
    }
    if (server_template(sv, author, "get", GET_SRC, "[\"store.lookup\"]", &a) != 0 ||
        server_template(sv, author, "refund", REFUND_SRC, "[\"orders.refund\"]", &a) != 0) {
        return -1;
    }
    return 0;
}

/* Durations (ms) of the POST /v1/runs lines of the server's log from byte `from` on; writes the
 * end offset. */
static int server_log_runs(const struct server *sv, long from, struct samples *s, long *ret_end)
{
    static const char pat[] = "\"method\":\"POST\",\"path\":\"/v1/runs\",";
    char line[4096];
    FILE *f = fopen(sv->log, "r");
    if (!f) {
        return -1;
    }
    fseek(f, from, SEEK_SET);
    while (fgets(line, sizeof line, f)) {
        const char *d = strstr(line, "\"duration_ms\":");
        if (d && strstr(line, pat) && strstr(line, "\"status\":200")) {
            samples_add(s, strtod(d + 14, NULL));
        }
    }
    *ret_end = ftell(f);
    fclose(f);
    return 0;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

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
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        if (write(fd, page, sizeof page) != (ssize_t)sizeof page || fsync(fd) != 0) {
            goto out;
        }
        samples_add(&s, (double)(now_ns() - t0) / 1e6);
    }
    double med = 0;
    double p99 = 0;
    samples_stats(&s, &med, &p99);
    printf("{\"runtime\":\"governed\",\"workload\":\"GFSYNC\",\"iterations\":%d,"
           "\"median_ms\":%.4f,\"p99_ms\":%.4f}\n",
           n, med, p99);
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

static int lib_run(struct al_runner *runner, const struct al_run_opts *opts)
{
    struct al_result *res = NULL;
    struct al_error err = { 0 };
    int ret = -1;
    enum al_code rc = al_run(runner, opts, &res, &err);
    if (rc != AL_OK) {
        fprintf(stderr, "airlock_governed: al_run: %s: %s\n", al_code_name(rc), err.message);
        goto out;
    }
    size_t len = 0;
    const char *value = al_result_value(res, &len);
    if (al_result_status(res) != AL_STATUS_COMPLETED || len != 2 || memcmp(value, "42", 2) != 0) {
        fprintf(stderr, "airlock_governed: the run did not return 42: %s\n",
                al_result_error_message(res));
        goto out;
    }
    ret = 0;
out:
    al_result_free(res);
    return ret;
}

static void *client_main(void *p)
{
    struct client *c = p;
    struct al_run_opts *opts = NULL;
    static __thread struct answer a;
    CURL *e = NULL;
    if (c->kind == 0) {
        opts = al_run_opts_new();
        if (!opts || al_run_opts_set_source(opts, GET_SRC, strlen(GET_SRC), NULL) != AL_OK) {
            c->failed = 1;
            goto out;
        }
    } else {
        e = curl_easy_init();
        if (!e) {
            c->failed = 1;
            goto out;
        }
    }
    while (now_ns() < c->deadline_ns) {
        uint64_t t0 = now_ns();
        long status = 0;
        if (c->kind == 0) {
            if (lib_run(c->runner, opts) != 0) {
                c->failed = 1;
                break;
            }
        } else if (c->kind == 1) {
            if (http_call(e, "POST", c->url, c->key,
                          "{\"template\":\"get\",\"input\":{},"
                          "\"wait\":true}",
                          &a, &status) != 0 ||
                status != 200 || !strstr(a.data, "\"status\":\"completed\"") ||
                !strstr(a.data, "\"value\":42")) {
                fprintf(stderr, "airlock_governed: POST /v1/runs: %ld %s\n", status, a.data);
                c->failed = 1;
                break;
            }
        } else {
            if (http_call(e, "POST", c->url, NULL,
                          "{\"function\":\"store.lookup\",\"args\":[\"k1\"]}", &a, &status) != 0 ||
                status != 200) {
                c->failed = 1;
                break;
            }
        }
        samples_add(&c->s, (double)(now_ns() - t0) / 1e6);
        c->runs++;
    }
out:
    curl_easy_cleanup(e);
    al_run_opts_free(opts);
    return NULL;
}

/* `threads` clients of one kind for `ms`; prints one JSON line named `name`. With a server,
 * also the server's own median of the phase's POST /v1/runs. */
static int phase(const char *name, const char *side, struct client *proto, int threads, int ms,
                 const struct server *sv)
{
    struct client cs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started = 0;
    int ret = -1;
    long log_from = sv ? file_size(sv->log) : 0;
    struct samples all = { calloc(SAMPLES_MAX, sizeof(double)), 0, SAMPLES_MAX };
    struct samples logged = { calloc(SAMPLES_MAX, sizeof(double)), 0, SAMPLES_MAX };
    uint64_t t0 = now_ns();
    if (!all.ms || !logged.ms) {
        goto out;
    }
    for (int i = 0; i < threads; i++) {
        cs[i] = *proto;
        cs[i].deadline_ns = t0 + (uint64_t)ms * 1000000u;
        cs[i].s = (struct samples){ calloc(SAMPLES_MAX / MAX_THREADS, sizeof(double)), 0,
                                    SAMPLES_MAX / MAX_THREADS };
        if (!cs[i].s.ms || pthread_create(&tids[i], NULL, client_main, &cs[i]) != 0) {
            free(cs[i].s.ms);
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
        runs += cs[i].runs;
        ret = cs[i].failed ? -1 : ret;
        for (int k = 0; k < cs[i].s.n; k++) {
            samples_add(&all, cs[i].s.ms[k]);
        }
        free(cs[i].s.ms);
    }
    if (ret == 0) {
        double med = 0;
        double p99 = 0;
        double smed = 0;
        double sp99 = 0;
        long end = 0;
        samples_stats(&all, &med, &p99);
        printf("{\"runtime\":\"governed\",\"workload\":\"%s\",\"side\":\"%s\","
               "\"concurrency\":%d,\"seconds\":%.2f,\"runs\":%ld,\"runs_per_s\":%.1f,"
               "\"median_ms\":%.4f,\"p99_ms\":%.4f",
               name, side, threads, elapsed_s, runs, (double)runs / elapsed_s, med, p99);
        if (sv && server_log_runs(sv, log_from, &logged, &end) == 0 && logged.n > 0) {
            samples_stats(&logged, &smed, &sp99);
            printf(",\"server_median_ms\":%.4f,\"server_p99_ms\":%.4f,\"server_logged\":%d", smed,
                   sp99, logged.n);
        }
        printf("}\n");
        fflush(stdout);
    }
    free(all.ms);
    free(logged.ms);
    return ret;
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
    if (phase("GCONN1", "connector", &proto, 1, seq_ms, NULL) != 0 ||
        phase("GCONN2", "connector", &proto, 2, seq_ms, NULL) != 0) {
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
    if (!sv.e || server_start(&sv, airlockd, dir) != 0 || server_setup(&sv, port) != 0) {
        fprintf(stderr, "airlock_governed: airlockd setup failed (log: %s)\n", sv.log);
        goto out;
    }
    if (fsync_floor(dir, quick ? 20 : 200) != 0) {
        fprintf(stderr, "airlock_governed: cannot measure fsync in %s\n", dir);
        goto out;
    }
    char runs_url[256];
    snprintf(runs_url, sizeof runs_url, "%s/v1/runs", sv.base);
    struct client lib = { .kind = 0, .runner = runner };
    struct client srv = { .kind = 1, .url = runs_url, .key = sv.agent };

    /* warm-up of both, then latency one at a time, then throughput at 2 and 8 */
    if (phase("warmup", "library", &lib, 1, 300, NULL) != 0 ||
        phase("warmup", "airlockd", &srv, 1, 300, &sv) != 0) {
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
        if (phase(name, "library", &lib, c, t, NULL) != 0) {
            goto out;
        }
        snprintf(name, sizeof name, "GSRV%d", c);
        if (phase(name, "airlockd", &srv, c, t, &sv) != 0) {
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
