/*
 * harness.c - what the governed benchmarks share (bench/governed.c, bench/nodes.c): the
 * in-process connector, the libcurl client, airlockd's start, setup and log, and the timed
 * phases of client threads. See harness.h.
 */
#include "harness.h"

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

static const char get_answer[] = "{\"result\":{\"id\":\"k1\",\"value\":42}}";
static const char refund_answer[] = "{\"result\":{\"ok\":true}}";

atomic_long connector_calls;

uint64_t now_ns(void)
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

void samples_add(struct samples *s, double ms)
{
    if (s->n < s->cap) {
        s->ms[s->n++] = ms;
    }
}

/* Sorts in place; median and nearest-rank p99 (bench.c's definitions). */
void samples_stats(struct samples *s, double *ret_median, double *ret_p99)
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
int connector_start(int *ret_port)
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
int http_call(CURL *e, const char *method, const char *url, const char *key, const char *body,
              struct answer *a, long *ret_status)
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
        fprintf(stderr, "bench: %s %s: %s\n", method, url, curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, ret_status);
    ret = 0;
out:
    curl_slist_free_all(h);
    return ret;
}

/* The string value of the first "name":"…" in a JSON text, into out. */
int json_str(const char *json, const char *name, char *out, size_t cap)
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

/* Starts airlockd on a free port in a fresh directory and waits for its listening line. With a
 * database URL it keeps its store there (the keys of several nodes come from the environment,
 * set by the caller), else in SQLite in its data directory. */
int server_start(struct server *sv, const char *airlockd, const char *dir, const char *database)
{
    char data[4200];
    char config[4200];
    snprintf(sv->dir, sizeof sv->dir, "%s", dir);
    if (mkdir(sv->dir, 0700) != 0) {
        fprintf(stderr, "bench: cannot create %s: %s\n", sv->dir, strerror(errno));
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
        if (database) {
            execl(airlockd, airlockd, "--listen", "127.0.0.1:0", "--data-dir", data, "--config",
                  config, "--database", database, (char *)NULL);
        } else {
            execl(airlockd, airlockd, "--listen", "127.0.0.1:0", "--data-dir", data, "--config",
                  config, (char *)NULL);
        }
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
            fprintf(stderr, "bench: airlockd exited; see %s\n", sv->log);
            return -1;
        }
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    return -1;
}

void server_stop(struct server *sv)
{
    if (sv->pid > 0) {
        kill(sv->pid, SIGTERM);
        waitpid(sv->pid, NULL, 0);
        sv->pid = -1;
    }
}

/* One setup request that must answer `want`; the answer stays in *a. */
int server_ok(struct server *sv, const char *method, const char *path, const char *key,
              const char *body, long want, struct answer *a)
{
    char url[256];
    long status = 0;
    snprintf(url, sizeof url, "%s%s", sv->base, path);
    if (http_call(sv->e, method, url, key, body, a, &status) != 0) {
        return -1;
    }
    if (status != want) {
        fprintf(stderr, "bench: %s %s: %ld, want %ld: %s\n", method, path, status, want, a->data);
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

/* Registers the connector `name` at the bench's connector, path /name, with `functions`. */
static int server_connector(struct server *sv, int connector_port, const char *name,
                            const char *functions, struct answer *a)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"department\":\"bench\",\"url\":\"http://127.0.0.1:%d/%s\","
             "\"signing_secret\":\"" SIGNING "\",\"functions\":%s}",
             name, connector_port, name, functions);
    return server_ok(sv, "POST", "/v1/connectors", BOOTSTRAP_KEY, body, 201, a);
}

int server_setup(struct server *sv, int connector_port)
{
    static struct answer a;
    char author[256];
    if (server_ok(sv, "POST", "/v1/departments", BOOTSTRAP_KEY, "{\"name\":\"bench\"}", 201, &a) !=
                0 ||
        server_principal(sv, "author", "author", author, sizeof author, &a) != 0 ||
        server_principal(sv, "approver", "approver", sv->approver, sizeof sv->approver, &a) != 0 ||
        server_principal(sv, "agent", "agent", sv->agent, sizeof sv->agent, &a) != 0) {
        return -1;
    }
    /* istore: the same answers from a function marked idempotent (no mark before a call) */
    if (server_connector(sv, connector_port, "store", "{\"lookup\":{}}", &a) != 0 ||
        server_connector(sv, connector_port, "istore", "{\"lookup\":{\"idempotent\":true}}", &a) !=
                0 ||
        server_connector(sv, connector_port, "orders", "{\"refund\":{\"sensitive\":true}}", &a) !=
                0) {
        return -1;
    }
    if (server_template(sv, author, "get", GET_SRC, "[\"store.lookup\"]", &a) != 0 ||
        server_template(sv, author, "refund", REFUND_SRC, "[\"orders.refund\"]", &a) != 0 ||
        server_template(sv, author, "get100", GET100_SRC, "[\"store.lookup\"]", &a) != 0 ||
        server_template(sv, author, "iget", IGET_SRC, "[\"istore.lookup\"]", &a) != 0 ||
        server_template(sv, author, "iget100", IGET100_SRC, "[\"istore.lookup\"]", &a) != 0) {
        return -1;
    }
    return 0;
}

/* Durations (ms) of the POST /v1/runs lines of the server's log from byte `from` on; writes the
 * end offset. */
int server_log_runs(const struct server *sv, long from, struct samples *s, long *ret_end)
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

/* The first line of a file, without its newline. */
static int read_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    int ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return ok && out[0] ? 0 : -1;
}

int pg_cluster_open(const char *pgdir, char *ret_url, size_t cap, pid_t *ret_postmaster)
{
    char path[4200];
    char datadir[4096];
    char pidline[32];
    snprintf(path, sizeof path, "%s/url", pgdir);
    if (read_line(path, ret_url, cap) != 0) {
        fprintf(stderr, "bench: no cluster in %s (pg_cluster.sh setup)\n", pgdir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/datadir", pgdir);
    if (read_line(path, datadir, sizeof datadir) != 0) {
        fprintf(stderr, "bench: no %s\n", path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/postmaster.pid", datadir);
    pid_t pid =
            read_line(path, pidline, sizeof pidline) == 0 ? (pid_t)strtol(pidline, NULL, 10) : 0;
    if (pid <= 0 || kill(pid, 0) != 0) {
        fprintf(stderr, "bench: the cluster's postmaster is not running (%s)\n", path);
        return -1;
    }
    *ret_postmaster = pid;
    return 0;
}

int pg_database_create(const char *url, const char *name, char *ret_url, size_t cap)
{
    char sql[128];
    int status = 0;
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        execlp("psql", "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql,
               (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: psql could not create database %s\n", name);
        return -1;
    }
    /* libpq takes the last dbname: the query parameter wins over the URL's path */
    snprintf(ret_url, cap, "%s%cdbname=%s", url, strchr(url, '?') ? '&' : '?', name);
    return 0;
}

long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* ---------------------------------------------------------------- the clients */

static int lib_run(struct al_runner *runner, const struct al_run_opts *opts)
{
    struct al_result *res = NULL;
    struct al_error err = { 0 };
    int ret = -1;
    enum al_code rc = al_run(runner, opts, &res, &err);
    if (rc != AL_OK) {
        fprintf(stderr, "bench: al_run: %s: %s\n", al_code_name(rc), err.message);
        goto out;
    }
    size_t len = 0;
    const char *value = al_result_value(res, &len);
    if (al_result_status(res) != AL_STATUS_COMPLETED || len != 2 || memcmp(value, "42", 2) != 0) {
        fprintf(stderr, "bench: the run did not return 42: %s\n", al_result_error_message(res));
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
    const char *tpl = c->template_name ? c->template_name : "get";
    const char *value = strstr(tpl, "100") ? "\"value\":4200" : "\"value\":42";
    char body[128];
    snprintf(body, sizeof body, "{\"template\":\"%s\",\"input\":{},\"wait\":true}", tpl);
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
            if (http_call(e, "POST", c->url, c->key, body, &a, &status) != 0 || status != 200 ||
                !strstr(a.data, "\"status\":\"completed\"") || !strstr(a.data, value)) {
                fprintf(stderr, "bench: POST /v1/runs: %ld %s\n", status, a.data);
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

/* `threads` clients for `ms`, client i a copy of protos[i % nprotos] (several nodes: the clients
 * spread round-robin over them); prints one JSON line named `name`. With a server, also the
 * server's own median of the phase's POST /v1/runs; with hooks, what they measure around it. */
int phase(const char *name, const char *side, const struct client *protos, int nprotos, int threads,
          int ms, const struct server *sv, const struct phase_hooks *hooks)
{
    struct client cs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started = 0;
    int ret = -1;
    long log_from = sv ? file_size(sv->log) : 0;
    struct samples all = { calloc(SAMPLES_MAX, sizeof(double)), 0, SAMPLES_MAX };
    struct samples logged = { calloc(SAMPLES_MAX, sizeof(double)), 0, SAMPLES_MAX };
    if (hooks) {
        hooks->mark(hooks->ctx, 0);
    }
    uint64_t t0 = now_ns();
    if (!all.ms || !logged.ms || threads > MAX_THREADS || nprotos < 1) {
        goto out;
    }
    for (int i = 0; i < threads; i++) {
        cs[i] = protos[i % nprotos];
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
    if (hooks) {
        hooks->mark(hooks->ctx, 1);
    }
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
        if (hooks) {
            hooks->extra(hooks->ctx, runs, stdout);
        }
        printf("}\n");
        fflush(stdout);
    }
    free(all.ms);
    free(logged.ms);
    return ret;
}
