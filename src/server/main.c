/*
 * main.c - airlockd: options and config file, the data directory (0700) and its database (SQLite
 * in the data directory, or PostgreSQL with --database postgres://...; the key files stay in the
 * data directory either way), the first start's bootstrap (principal admin and its key file,
 * 0600), then the HTTP server until SIGTERM or SIGINT; SIGHUP re-reads what can change under a
 * running server (reload.h). Signals are blocked in every thread and taken by sigwait here,
 * so no handler runs inside the store or libmicrohttpd. Everything airlockd prints before it
 * serves is one line per fact on stderr; the key itself is never printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock.h"

#include "admin_cmds.h"
#include "api.h"
#include "api_runs.h"
#include "audit.h"
#include "auditlog.h"
#include "auth.h"
#include "connector.h"
#include "denials.h"
#include "fault.h"
#include "http.h"
#include "json.h"
#include "keyfile.h"
#include "keys.h"
#include "metrics.h"
#include "mounts.h"
#include "nodes.h"
#include "oidc.h"
#include "ratelimit.h"
#include "readers.h"
#include "reload.h"
#include "replays.h"
#include "router.h"
#include "runs.h"
#include "secretbox.h"
#include "store.h"
#include "webhooks.h"
#include "witness.h"
#include "writer.h"

#define MAIN_PATH_MAX            4096
#define MAIN_CONFIG_MAX          ((size_t)1 << 20)
#define MAIN_DEFAULT_BODY        ((size_t)1 << 20)
#define MAIN_DEFAULT_SNAPSHOT    ((size_t)64 << 20) /* a workspace's default limit of bytes */
#define MAIN_WITNESS_HELP        "Deliveries of audit checkpoints to the witness that failed."
#define MAIN_CONTINUATION_TTL_MS (365ull * 24 * 3600 * 1000) /* the longest libairlock takes */

struct main_config {
    char host[256];
    unsigned port;
    struct http_options http; /* the config file's "http" (host and port from listen) */
    char data_dir[MAIN_PATH_MAX];
    char database[MAIN_PATH_MAX]; /* a PostgreSQL URL; "": SQLite in data_dir */
    size_t body_limit_bytes;
    size_t snapshot_limit_bytes; /* POST /v1/snapshots' bodies (a workspace's tar) */
    double rate_per_second;      /* tokens per second of each caller's bucket */
    double rate_burst;           /* its size, >= 1 */
    double unauth_per_second; /* ... of each address's bucket for requests refused for their key */
    double unauth_burst;
    double unauth_audit_ms; /* an address's 401s: at most one auth.denied record this often */
    unsigned max_runs;      /* runs executing at once; more wait for room (runs.h shares) */
    unsigned per_principal; /* ... of one principal (0: runs.h's default) */
    unsigned per_department;
    unsigned per_principal_queued;
    unsigned max_queue;
    unsigned warm_workers;
    unsigned drain_grace_ms;          /* how long SIGTERM lets runs finish before cancelling them */
    int64_t lease_ms;                 /* several nodes: the lease on the runs a node executes */
    int64_t poll_ms;                  /* ... and how often a node looks without a wake-up */
    char node[NODES_ID_LEN + 1];      /* this node's id (DIR/node.id), PostgreSQL only */
    char witness[MAIN_PATH_MAX];      /* audit.witness: where checkpoints go too; "": nowhere */
    char witness_secret[1025];        /* audit.witness_secret: signs them (cleansed at exit) */
    struct mounts_roots *mount_roots; /* mounts.local_roots, resolved; NULL until one is read */
    char public_url[2049];            /* the desk's base URL in webhook links; "": the listen one */
    int64_t webhook_retry_first_ms;   /* webhooks.retry_first_ms: the first retry's delay */
    int64_t webhook_poll_ms;          /* webhooks.poll_ms: how often the outbox is looked at */
    char tls_cert[MAIN_PATH_MAX];     /* HTTPS: the certificate's PEM file (its chain after it) */
    char tls_key[MAIN_PATH_MAX];      /* ... and its key's; both "": plain HTTP */
    struct oidc_config *oidc;         /* "oidc": single sign-on (docs/sso.md); NULL: none */
};

/* What executes runs: the runner with the continuation key, the connector client and the run
 * engine above both. */
struct main_runtime {
    struct al_config *config;
    struct al_runner *runner;
    struct connector_client *client;
    struct runs *runs;
    struct nodes *nodes;     /* on PostgreSQL: what other nodes decide about runs executing here */
    struct replays *replays; /* submitted versions replayed before approval */
};

static const char main_usage[] =
        "usage: airlockd [--listen HOST:PORT] [--data-dir DIR] [--database URL] [--config FILE]\n"
        "                [--lease-ms MS] [--poll-ms MS] [--tls-cert FILE --tls-key FILE]\n"
        "                [--print-routes]\n"
        "       airlockd --version\n"
        "       airlockd keys rotate continuation|audit|secret --data-dir DIR [--database URL]\n"
        "       airlockd backup --data-dir DIR DEST   (airlockd keys --help)\n"
        "  --database URL  keep the store in PostgreSQL (postgres://USER@HOST/DB or\n"
        "                  postgresql://...; libpq's URL form) instead of SQLite in DIR\n"
        "  --lease-ms MS   several nodes on one database: the lease on a node's runs (default\n"
        "                  10000, 500 to 3600000)\n"
        "  --poll-ms MS    several nodes: how often a node looks at the queue and at its runs\n"
        "                  when no wake-up came (default 250, 10 to 3600000)\n"
        "  --tls-cert FILE --tls-key FILE  serve HTTPS with this certificate (PEM, its chain\n"
        "                  after it) and its unencrypted key (PEM); SIGHUP re-reads both\n";

/* A whole number of ms from min to max into *ret (a lease, a poll period); -1 for anything
 * else. */
static int main_ms(double ms, int min, int max, int64_t *ret)
{
    if (ms != (double)(int64_t)ms || ms < min || ms > max) {
        return -1;
    }
    *ret = (int64_t)ms;
    return 0;
}

/* --lease-ms and --poll-ms: a whole number of ms from min to max into *ret, or -1 said. */
static int main_ms_option(const char *name, const char *text, int min, int max, int64_t *ret)
{
    char *end = NULL;
    errno = 0;
    long long ms = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || main_ms((double)ms, min, max, ret) != 0) {
        fprintf(stderr, "airlockd: %s must be an integer from %d to %d\n%s", name, min, max,
                main_usage);
        return -1;
    }
    return 0;
}

/* 0 when text is a URL --database takes: PostgreSQL's, the one other store there is. */
static int main_database_url(const char *text)
{
    size_t len = strlen(text);
    int pg = strncmp(text, "postgres://", 11) == 0 || strncmp(text, "postgresql://", 13) == 0;
    return pg && len < MAIN_PATH_MAX ? 0 : -1;
}

static int main_parse_listen(const char *text, struct main_config *cfg)
{
    const char *colon = strrchr(text, ':');
    const char *host = text;
    size_t host_len;
    char *end = NULL;
    if (!colon || colon[1] == '\0') {
        return -1;
    }
    host_len = (size_t)(colon - text);
    if (host_len >= 2 && text[0] == '[' && colon[-1] == ']') {
        host++;
        host_len -= 2;
    }
    if (host_len == 0 || host_len >= sizeof cfg->host) {
        return -1;
    }
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (errno || *end != '\0' || port > 65535 || colon[1] < '0' || colon[1] > '9') {
        return -1;
    }
    memcpy(cfg->host, host, host_len);
    cfg->host[host_len] = '\0';
    cfg->port = (unsigned)port;
    return 0;
}

static int main_read_file(const char *path, struct buf *b)
{
    char chunk[4096];
    FILE *f = fopen(path, "rbe");
    if (!f) {
        return -1;
    }
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (buf_append(b, chunk, n) != BUF_OK) {
            rc = -1;
            break;
        }
    }
    if (ferror(f)) {
        rc = -1;
    }
    fclose(f);
    return rc;
}

static int main_positive(const struct json_node *n, double *ret)
{
    if (n->type != JSON_NUMBER || n->num <= 0 || n->num > 1e15) {
        return -1;
    }
    *ret = n->num;
    return 0;
}

/* An address as http.h names clients: "ip4:A.B.C.D", or "ip6:" and its /64. -1 for no
 * address. */
static int main_client_key(const char *text, char *out)
{
    unsigned char raw[16];
    char back[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, text, raw) == 1) {
        inet_ntop(AF_INET, raw, back, sizeof back);
        snprintf(out, HTTP_CLIENT_MAX, "ip4:%s", back);
        return 0;
    }
    if (inet_pton(AF_INET6, text, raw) == 1) {
        memset(raw + 8, 0, 8);
        inet_ntop(AF_INET6, raw, back, sizeof back);
        snprintf(out, HTTP_CLIENT_MAX, "ip6:%s/64", back);
        return 0;
    }
    return -1;
}

/* The config file's "http" object: what no client may hold (http.h), each a positive
 * integer, and the clients exempt from the per-client limit. */
static int main_http_config(const char *path, const struct json_node *obj, struct http_options *o)
{
    for (const struct json_node *h = obj->child; h; h = h->next) {
        if (strcmp(h->key, "per_client_exempt") == 0) {
            size_t n = 0;
            int bad = h->type != JSON_ARRAY;
            for (const struct json_node *a = bad ? NULL : h->child; a && !bad; a = a->next) {
                bad = a->type != JSON_STRING || n == HTTP_EXEMPT_MAX ||
                      main_client_key(a->str, o->per_client_exempt[n]) != 0;
                n++;
            }
            if (bad) {
                fprintf(stderr,
                        "airlockd: config %s: http.per_client_exempt must be an array of at most "
                        "%d IP addresses\n",
                        path, HTTP_EXEMPT_MAX);
                return -1;
            }
            o->nexempt = n;
            o->exempt_set = 1;
            continue;
        }
        unsigned *dst = strcmp(h->key, "threads") == 0                  ? &o->threads
                        : strcmp(h->key, "max_connections") == 0        ? &o->max_connections
                        : strcmp(h->key, "per_client_connections") == 0 ? &o->per_client_connections
                        : strcmp(h->key, "header_timeout_ms") == 0      ? &o->header_timeout_ms
                        : strcmp(h->key, "body_timeout_ms") == 0        ? &o->body_timeout_ms
                        : strcmp(h->key, "idle_timeout_s") == 0         ? &o->idle_timeout_s
                                                                        : NULL;
        int budget = strcmp(h->key, "body_budget_bytes") == 0;
        double max = dst == &o->threads ? 64 : budget ? 1e12 : 1e7;
        if ((!dst && !budget) || h->type != JSON_NUMBER || h->num < 1 || h->num > max ||
            h->num != (double)(uint64_t)h->num) {
            fprintf(stderr,
                    "airlockd: config %s: http takes threads (1..64), max_connections, "
                    "per_client_connections, header_timeout_ms, body_timeout_ms, idle_timeout_s "
                    "and body_budget_bytes, positive integers, and per_client_exempt (not "
                    "\"%s\")\n",
                    path, h->key);
            return -1;
        }
        if (budget) {
            o->body_budget_bytes = (size_t)h->num;
        } else {
            *dst = (unsigned)h->num;
        }
    }
    return 0;
}

/* The config file's "audit" object: witness, the URL every checkpoint is posted to, and
 * witness_secret, the secret that signs the posts (16 to 1024 bytes, as a connector's); both or
 * neither. */
static int main_audit_config(const char *path, const struct json_node *obj, struct main_config *cfg)
{
    const struct json_node *url = json_get(obj, "witness");
    const struct json_node *secret = json_get(obj, "witness_secret");
    for (const struct json_node *a = obj->child; a; a = a->next) {
        if (strcmp(a->key, "witness") != 0 && strcmp(a->key, "witness_secret") != 0) {
            fprintf(stderr,
                    "airlockd: config %s: audit takes witness and witness_secret (not "
                    "\"%s\")\n",
                    path, a->key);
            return -1;
        }
    }
    if (!url || url->type != JSON_STRING || !api_url_ok(url->str, url->str_len) ||
        url->str_len >= sizeof cfg->witness) {
        fprintf(stderr,
                "airlockd: config %s: audit.witness must be an http:// or https:// URL with a "
                "host, without credentials\n",
                path);
        return -1;
    }
    if (!secret || secret->type != JSON_STRING || secret->str_len < 16 ||
        secret->str_len >= sizeof cfg->witness_secret || strlen(secret->str) != secret->str_len) {
        fprintf(stderr, "airlockd: config %s: audit.witness_secret must be 16 to 1024 bytes\n",
                path);
        return -1;
    }
    memcpy(cfg->witness, url->str, url->str_len + 1);
    memcpy(cfg->witness_secret, secret->str, secret->str_len + 1);
    return 0;
}

/* The config file's "mounts" object: local_roots, the directories a local mount's path must lie
 * under (mounts.h), each an existing directory, resolved now. */
static int main_mounts_config(const char *path, const struct json_node *obj,
                              struct main_config *cfg)
{
    char why[MOUNTS_WHY_MAX];
    const struct json_node *roots = json_get(obj, "local_roots");
    if (obj->count != 1 || !roots || roots->type != JSON_ARRAY) {
        fprintf(stderr,
                "airlockd: config %s: mounts takes local_roots (an array of absolute "
                "paths of directories)\n",
                path);
        return -1;
    }
    if (!cfg->mount_roots) {
        cfg->mount_roots = calloc(1, sizeof *cfg->mount_roots);
        if (!cfg->mount_roots) {
            fprintf(stderr, "airlockd: out of memory\n");
            return -1;
        }
    }
    cfg->mount_roots->n = 0;
    for (const struct json_node *r = roots->child; r; r = r->next) {
        if (r->type != JSON_STRING || strlen(r->str) != r->str_len) {
            fprintf(stderr, "airlockd: config %s: mounts.local_roots must hold strings\n", path);
            return -1;
        }
        if (mounts_roots_add(cfg->mount_roots, r->str, why) != 0) {
            fprintf(stderr, "airlockd: config %s: mounts.local_roots: %s\n", path, why);
            return -1;
        }
    }
    return 0;
}

/* Reads the config file: an object of listen, data_dir, database, lease_ms, poll_ms,
 * body_limit_bytes, snapshot_limit_bytes, http, rate_limit {requests_per_second, burst}, runs,
 * audit and mounts; any other member is refused. */
static int main_load_config(const char *path, struct main_config *cfg)
{
    struct buf text;
    struct json_doc *doc = NULL;
    struct al_error err;
    int rc = -1;
    double num = 0;
    buf_init(&text, MAIN_CONFIG_MAX);
    memset(&err, 0, sizeof err);
    if (main_read_file(path, &text) != 0) {
        fprintf(stderr, "airlockd: cannot read config %s: %s\n", path,
                errno ? strerror(errno) : "over 1 MiB");
        goto out;
    }
    if (json_parse(text.data ? text.data : "", text.len, 16, &doc, &err) != AL_OK) {
        fprintf(stderr, "airlockd: config %s: %s\n", path, err.message);
        goto out;
    }
    const struct json_node *root = json_root(doc);
    if (root->type != JSON_OBJECT) {
        fprintf(stderr, "airlockd: config %s: must be a JSON object\n", path);
        goto out;
    }
    for (const struct json_node *m = root->child; m; m = m->next) {
        if (strcmp(m->key, "listen") == 0 && m->type == JSON_STRING) {
            if (main_parse_listen(m->str, cfg) != 0) {
                fprintf(stderr, "airlockd: config %s: listen must be HOST:PORT\n", path);
                goto out;
            }
        } else if (strcmp(m->key, "data_dir") == 0 && m->type == JSON_STRING && m->str_len > 0 &&
                   m->str_len < sizeof cfg->data_dir) {
            memcpy(cfg->data_dir, m->str, m->str_len + 1);
        } else if ((strcmp(m->key, "tls_cert") == 0 || strcmp(m->key, "tls_key") == 0) &&
                   m->type == JSON_STRING) {
            char *dst = m->key[4] == 'c' ? cfg->tls_cert : cfg->tls_key;
            if (m->str_len == 0 || m->str_len >= MAIN_PATH_MAX || strlen(m->str) != m->str_len) {
                fprintf(stderr, "airlockd: config %s: %s must be the path of a file\n", path,
                        m->key);
                goto out;
            }
            memcpy(dst, m->str, m->str_len + 1);
        } else if (strcmp(m->key, "database") == 0 && m->type == JSON_STRING) {
            if (strlen(m->str) != m->str_len || main_database_url(m->str) != 0) {
                fprintf(stderr,
                        "airlockd: config %s: database must be a postgres:// or postgresql:// "
                        "URL\n",
                        path);
                goto out;
            }
            memcpy(cfg->database, m->str, m->str_len + 1);
        } else if (strcmp(m->key, "lease_ms") == 0 || strcmp(m->key, "poll_ms") == 0) {
            int lease = m->key[0] == 'l';
            int min = lease ? NODES_LEASE_MIN_MS : NODES_POLL_MIN_MS;
            int max = lease ? NODES_LEASE_MAX_MS : NODES_POLL_MAX_MS;
            if (m->type != JSON_NUMBER ||
                main_ms(m->num, min, max, lease ? &cfg->lease_ms : &cfg->poll_ms) != 0) {
                fprintf(stderr, "airlockd: config %s: %s must be an integer from %d to %d\n", path,
                        m->key, min, max);
                goto out;
            }
        } else if (strcmp(m->key, "body_limit_bytes") == 0 && main_positive(m, &num) == 0) {
            cfg->body_limit_bytes = (size_t)num;
        } else if (strcmp(m->key, "snapshot_limit_bytes") == 0 && main_positive(m, &num) == 0) {
            cfg->snapshot_limit_bytes = (size_t)num;
        } else if (strcmp(m->key, "runs") == 0 && m->type == JSON_OBJECT) {
            for (const struct json_node *r = m->child; r; r = r->next) {
                unsigned *dst =
                        strcmp(r->key, "max_concurrent") == 0              ? &cfg->max_runs
                        : strcmp(r->key, "max_queue") == 0                 ? &cfg->max_queue
                        : strcmp(r->key, "warm_workers") == 0              ? &cfg->warm_workers
                        : strcmp(r->key, "drain_grace_ms") == 0            ? &cfg->drain_grace_ms
                        : strcmp(r->key, "per_principal_concurrent") == 0  ? &cfg->per_principal
                        : strcmp(r->key, "per_department_concurrent") == 0 ? &cfg->per_department
                        : strcmp(r->key, "per_principal_queued") == 0 ? &cfg->per_principal_queued
                                                                      : NULL;
                int zero_ok = dst == &cfg->warm_workers || dst == &cfg->drain_grace_ms;
                if (!dst || r->type != JSON_NUMBER || r->num != (double)(unsigned)r->num ||
                    r->num > 1e6 || (r->num == 0 && !zero_ok) ||
                    (dst == &cfg->warm_workers && r->num > AL_WARM_WORKERS_MAX)) {
                    fprintf(stderr,
                            "airlockd: config %s: runs takes max_concurrent, max_queue, "
                            "per_principal_concurrent, per_department_concurrent, "
                            "per_principal_queued (positive integers), warm_workers (0..%d) and "
                            "drain_grace_ms (not \"%s\")\n",
                            path, AL_WARM_WORKERS_MAX, r->key);
                    goto out;
                }
                *dst = (unsigned)r->num;
            }
        } else if (strcmp(m->key, "audit") == 0 && m->type == JSON_OBJECT) {
            if (main_audit_config(path, m, cfg) != 0) {
                goto out;
            }
        } else if (strcmp(m->key, "public_url") == 0 && m->type == JSON_STRING) {
            if (!api_url_ok(m->str, m->str_len) || strpbrk(m->str, "?#|<>\"") ||
                m->str_len >= sizeof cfg->public_url) {
                fprintf(stderr,
                        "airlockd: config %s: public_url must be an http:// or https:// URL "
                        "without query or fragment\n",
                        path);
                goto out;
            }
            size_t n = m->str_len;
            while (n > 0 && m->str[n - 1] == '/') { /* links add their own */
                n--;
            }
            memcpy(cfg->public_url, m->str, n);
            cfg->public_url[n] = '\0';
        } else if (strcmp(m->key, "webhooks") == 0 && m->type == JSON_OBJECT) {
            for (const struct json_node *r = m->child; r; r = r->next) {
                int64_t *dst = strcmp(r->key, "retry_first_ms") == 0 ? &cfg->webhook_retry_first_ms
                               : strcmp(r->key, "poll_ms") == 0      ? &cfg->webhook_poll_ms
                                                                     : NULL;
                if (!dst || r->type != JSON_NUMBER || main_ms(r->num, 10, 60000, dst) != 0) {
                    fprintf(stderr,
                            "airlockd: config %s: webhooks takes retry_first_ms and poll_ms, "
                            "integers from 10 to 60000 (not \"%s\")\n",
                            path, r->key);
                    goto out;
                }
            }
        } else if (strcmp(m->key, "mounts") == 0 && m->type == JSON_OBJECT) {
            if (main_mounts_config(path, m, cfg) != 0) {
                goto out;
            }
        } else if (strcmp(m->key, "oidc") == 0 && m->type == JSON_OBJECT) {
            char why[OIDC_WHY_MAX];
            if (!cfg->oidc) {
                cfg->oidc = calloc(1, sizeof *cfg->oidc);
            }
            if (!cfg->oidc || oidc_config_read(m, cfg->oidc, why) != 0) {
                fprintf(stderr, "airlockd: config %s: %s\n", path,
                        cfg->oidc ? why : "out of memory");
                goto out;
            }
        } else if (strcmp(m->key, "http") == 0 && m->type == JSON_OBJECT) {
            if (main_http_config(path, m, &cfg->http) != 0) {
                goto out;
            }
        } else if (strcmp(m->key, "rate_limit") == 0 && m->type == JSON_OBJECT) {
            for (const struct json_node *r = m->child; r; r = r->next) {
                const char *k = r->key;
                double *dst = strcmp(k, "requests_per_second") == 0 ? &cfg->rate_per_second
                              : strcmp(k, "burst") == 0             ? &cfg->rate_burst
                              : strcmp(k, "unauthenticated_requests_per_second") == 0
                                      ? &cfg->unauth_per_second
                              : strcmp(k, "unauthenticated_burst") == 0 ? &cfg->unauth_burst
                              : strcmp(k, "unauthenticated_audit_interval_ms") == 0
                                      ? &cfg->unauth_audit_ms
                                      : NULL;
                if (!dst || main_positive(r, dst) != 0) {
                    fprintf(stderr,
                            "airlockd: config %s: rate_limit takes requests_per_second, burst, "
                            "unauthenticated_requests_per_second, unauthenticated_burst and "
                            "unauthenticated_audit_interval_ms, positive numbers (not \"%s\")\n",
                            path, r->key);
                    goto out;
                }
            }
            if (cfg->rate_burst < 1 || cfg->unauth_burst < 1) {
                fprintf(stderr,
                        "airlockd: config %s: rate_limit.burst and "
                        "rate_limit.unauthenticated_burst must be at least 1\n",
                        path);
                goto out;
            }
            if (cfg->unauth_audit_ms != (double)(int64_t)cfg->unauth_audit_ms ||
                cfg->unauth_audit_ms < 1000 || cfg->unauth_audit_ms > 86400000) {
                fprintf(stderr,
                        "airlockd: config %s: rate_limit.unauthenticated_audit_interval_ms must be "
                        "an integer from 1000 to 86400000\n",
                        path);
                goto out;
            }
        } else {
            fprintf(stderr,
                    "airlockd: config %s: unknown or malformed member \"%s\" (known: listen, "
                    "data_dir, database, lease_ms, poll_ms, body_limit_bytes, "
                    "snapshot_limit_bytes, "
                    "http, rate_limit, runs, audit, mounts, public_url, webhooks, tls_cert, "
                    "tls_key, oidc)\n",
                    path, m->key);
            goto out;
        }
    }
    rc = 0;
out:
    json_doc_free(doc);
    buf_done(&text);
    return rc;
}

/* mkdir -p with mode 0700 for what it creates. */
static int main_make_dir(const char *dir)
{
    char path[MAIN_PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') {
            continue;
        }
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            return -1;
        }
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int main_write_key(const char *path, const char *key)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return -1;
    }
    size_t len = strlen(key);
    int rc = 0;
    if (fchmod(fd, 0600) != 0 || write(fd, key, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
        fsync(fd) != 0) {
        rc = -1;
    }
    if (close(fd) != 0) {
        rc = -1;
    }
    return rc;
}

/* On an empty database: principal admin, role admin for "*", a key (AIRLOCK_BOOTSTRAP_KEY or a
 * new one) written to DIR/admin.key; all audited as the server's own doing, in one transaction
 * that commits only once the key file is written. Of several nodes starting together on one
 * empty database, the first to insert admin bootstraps; the others find it taken and go on. */
static int main_bootstrap(struct store *s, const char *data_dir)
{
    char key[AUTH_KEY_MAX + 1] = "";
    char prefix[AUTH_PREFIX_LEN + 1];
    unsigned char hash[STORE_HASH_LEN];
    char path[MAIN_PATH_MAX];
    char details[128];
    int64_t count = 0;
    int rc = -1;
    const char *given = getenv("AIRLOCK_BOOTSTRAP_KEY");

    if (s->ops->principal_count(s, &count) != STORE_OK) {
        fprintf(stderr, "airlockd: %s\n", s->ops->errmsg(s));
        goto out;
    }
    if (count > 0) {
        rc = 0;
        goto out;
    }
    if (given && given[0]) {
        if (auth_key_digest(given, prefix, hash) != 0) {
            fprintf(stderr,
                    "airlockd: AIRLOCK_BOOTSTRAP_KEY must be %d to %d printable ASCII "
                    "characters without spaces\n",
                    AUTH_KEY_MIN, AUTH_KEY_MAX);
            goto out;
        }
        snprintf(key, sizeof key, "%s", given);
    } else if (auth_key_new(key, prefix, hash) != 0) {
        fprintf(stderr, "airlockd: the random generator failed\n");
        goto out;
    }
    snprintf(path, sizeof path, "%s/admin.key", data_dir);
    snprintf(details, sizeof details, "{\"prefix\":\"%s\",\"bootstrap\":true}", prefix);
    if (s->ops->tx_begin(s) != STORE_OK) {
        fprintf(stderr, "airlockd: bootstrap: %s\n", s->ops->errmsg(s));
        goto out;
    }
    enum store_rc created = s->ops->principal_create(s, "admin", "user");
    if (created == STORE_CONFLICT) {
        /* another node sharing the database found it empty too and bootstrapped first (its
         * insert held ours until its commit): the database is not empty any more */
        s->ops->tx_rollback(s);
        rc = 0;
        goto out;
    }
    if (created != STORE_OK ||
        s->ops->audit_append(s, "airlockd", "principal.create", "admin", NULL,
                             "{\"kind\":\"user\",\"bootstrap\":true}", NULL) != STORE_OK ||
        s->ops->role_grant(s, "admin", "admin", "*") != STORE_OK ||
        s->ops->audit_append(s, "airlockd", "role.grant", "admin", NULL,
                             "{\"role\":\"admin\",\"department\":\"*\"}", NULL) != STORE_OK ||
        s->ops->key_add(s, "admin", prefix, hash) != STORE_OK ||
        s->ops->audit_append(s, "airlockd", "key.create", "admin", NULL, details, NULL) !=
                STORE_OK) {
        fprintf(stderr, "airlockd: bootstrap: %s\n", s->ops->errmsg(s));
        s->ops->tx_rollback(s);
        goto out;
    }
    if (main_write_key(path, key) != 0) {
        fprintf(stderr, "airlockd: cannot write %s: %s\n", path, strerror(errno));
        s->ops->tx_rollback(s);
        goto out;
    }
    if (s->ops->tx_commit(s) != STORE_OK) {
        fprintf(stderr, "airlockd: bootstrap: %s\n", s->ops->errmsg(s));
        s->ops->tx_rollback(s);
        goto out;
    }
    fprintf(stderr, "airlockd: created principal admin; its API key is in %s\n", path);
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(hash, sizeof hash);
    return rc;
}

/* The checkpoint keys into the store (keys.h). */
static int main_audit(struct store *s, const char *data_dir)
{
    struct al_error err;
    char said[RELOAD_SAID_MAX];
    memset(&err, 0, sizeof err);
    if (keys_audit_set(data_dir, s, said, &err) != 0) {
        fprintf(stderr, "airlockd: audit key: %s\n", err.message);
        return -1;
    }
    fprintf(stderr, "airlockd: audit %s\n", said);
    return 0;
}

/* The chain verified, then against the checkpoint kept outside the database (a cut tail leaves
 * a whole chain); either fault is logged and airlockd serves on. A whole log's last record is
 * signed and kept now, so what is there at the start is covered from the start. */
static int main_audit_check(struct store *s, struct audit_head *head, struct auditlog_kept *kept)
{
    struct store_checkpoint cp;
    struct auditlog_result res;
    enum store_rc rc = s->ops->audit_checkpoint(s, 0, &cp);
    if (rc == STORE_CONFLICT) {
        /* a node started behind a rotation: it serves, signs nothing, and says why */
        fprintf(stderr, "airlockd: %s\n", s->ops->errmsg(s));
        rc = STORE_NOT_FOUND;
    }
    if ((rc != STORE_OK && rc != STORE_NOT_FOUND) ||
        auditlog_verify(s, rc == STORE_OK ? cp.public_key : NULL, &res) != STORE_OK ||
        (res.ok && auditlog_kept_check(kept, s, &res) != STORE_OK)) {
        fprintf(stderr, "airlockd: audit: %s\n", s->ops->errmsg(s));
        return -1;
    }
    api_audit_head_set(head, &res, 1); /* /v1/audit/verify goes on from here */
    if (!res.ok && strncmp(res.reason, "truncated: ", 11) == 0) {
        fprintf(stderr, "airlockd: audit: the log is cut at seq %lld: %s\n",
                (long long)res.first_bad_seq, res.reason);
        /* the admins' receivers hear of it: delivered once the delivery thread runs */
        if (s->ops->tx_begin(s) != STORE_OK ||
            api_tx_end(s, webhooks_audit_truncated(s, res.first_bad_seq, res.reason)) != STORE_OK) {
            fprintf(stderr, "airlockd: audit: the cut could not be told to webhooks: %s\n",
                    s->ops->errmsg(s));
        }
    } else if (!res.ok) {
        fprintf(stderr, "airlockd: audit: the chain is broken at seq %lld: %s\n",
                (long long)res.first_bad_seq, res.reason);
    } else if (rc == STORE_OK) {
        auditlog_kept_keep(kept, s, &cp);
    }
    return 0;
}

static void main_kept_fn(void *arg, struct store *s, const struct store_checkpoint *cp)
{
    auditlog_kept_keep(arg, s, cp);
}

static double main_gauge_witness(void *userdata)
{
    return (double)witness_failures(userdata);
}

/* The runs a walk of run_list found in one of `states` (a bit per enum gov_run_state), their
 * id and department copied. */
struct main_runs {
    unsigned states;
    size_t n;
    size_t cap;
    struct main_run {
        char id[RUNS_ID_LEN + 1];
        char department[STORE_NAME_MAX + 1];
    } * rows;
};

static int main_runs_fn(void *userdata, const struct store_run *row)
{
    struct main_runs *w = userdata;
    if (!(w->states & 1u << api_run_state(row->status))) {
        return 0;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        struct main_run *rows = realloc(w->rows, cap * sizeof *rows);
        if (!rows) {
            return 1;
        }
        w->rows = rows;
        w->cap = cap;
    }
    snprintf(w->rows[w->n].id, sizeof w->rows[w->n].id, "%s", row->id);
    snprintf(w->rows[w->n].department, sizeof w->rows[w->n].department, "%s", row->department);
    w->n++;
    return 0;
}

static int main_recover_sqlite(struct store *s);

/* On PostgreSQL other nodes may be executing runs: only those this node (the same data
 * directory) left running when it stopped, and those no node is recorded for, are abandoned
 * now; the runs of other dead nodes are taken over once their lease has run out (nodes.c). */
static int main_recover(struct store *s, const char *node)
{
    if (!node[0]) {
        return main_recover_sqlite(s);
    }
    int again = 0;
    int again_none = 0;
    int waiting = 0;
    int mine = nodes_recover(s, node, "airlockd stopped while the run was executing", &again,
                             &waiting);
    int none = mine < 0 ? -1
                        : nodes_recover(s, NULL, "airlockd stopped while the run was executing",
                                        &again_none, NULL);
    if (mine < 0 || none < 0) {
        fprintf(stderr, "airlockd: recovering runs: %s\n", s->ops->errmsg(s));
        return -1;
    }
    int failed = mine + none - again - again_none - waiting;
    if (waiting > 0) {
        fprintf(stderr,
                "airlockd: %d run%s left by the last stop wait%s for a person to settle "
                "calls in doubt\n",
                waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "");
    }
    if (failed > 0) {
        fprintf(stderr, "airlockd: %d run%s abandoned by the last stop marked failed\n", failed,
                failed == 1 ? "" : "s");
    }
    if (again + again_none > 0) {
        fprintf(stderr,
                "airlockd: %d run%s left by the last stop queued to go on from their journal\n",
                again + again_none, again + again_none == 1 ? "" : "s");
    }
    return 0;
}

/* Runs that were executing when the last airlockd stopped without recording their end (a
 * crash, kill -9) go on from their journal: each is queued (nodes_take_over, with the one node
 * "") and claimed once the runs can start (main_claim_recovered). One that had sent a call not
 * marked idempotent whose answer is not journaled waits for a person to settle it (an in_doubt
 * approval); one whose start was not recorded (before 0010_journal) ends failed
 * ABORTED with a run.abandoned record. Runs waiting for a person keep waiting; runs queued by the
 * last start stay queued. */
static int main_recover_sqlite(struct store *s)
{
    struct main_runs a = { 1u << GOV_RUN_RUNNING, 0, 0, NULL };
    static const char reason[] = "airlockd stopped while the run was executing";
    enum store_rc rc = s->ops->run_list(s, NULL, main_runs_fn, &a);
    size_t failed = 0;
    size_t again = 0;
    size_t waiting = 0;
    for (size_t i = 0; i < a.n && rc == STORE_OK; i++) {
        int queued = 0;
        int waits = 0;
        rc = nodes_take_over(s, a.rows[i].id, a.rows[i].department, "", reason, NULL, &queued,
                             &waits);
        if (rc == STORE_CONFLICT) {
            rc = STORE_OK;
        }
        again += queued;
        waiting += waits;
        failed += !queued && !waits;
    }
    free(a.rows);
    if (rc != STORE_OK) {
        fprintf(stderr, "airlockd: recovering runs: %s\n", s->ops->errmsg(s));
        return -1;
    }
    if (failed > 0) {
        fprintf(stderr, "airlockd: %zu run%s abandoned by the last stop marked failed\n", failed,
                failed == 1 ? "" : "s");
    }
    if (again > 0) {
        fprintf(stderr, "airlockd: %zu run%s left by the last stop resume from their journal\n",
                again, again == 1 ? "" : "s");
    }
    if (waiting > 0) {
        fprintf(stderr,
                "airlockd: %zu run%s left by the last stop wait%s for a person to settle calls "
                "in doubt\n",
                waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "");
    }
    return 0;
}

static int main_runtime_start(const struct main_config *cfg, struct writer *writer,
                              struct api_services *svc, struct main_runtime *rt)
{
    unsigned char key[32];
    char said[RELOAD_SAID_MAX];
    struct al_error aerr;
    int rc = -1;
    memset(&aerr, 0, sizeof aerr);
    rt->config = al_config_new();
    if (!rt->config) {
        fprintf(stderr, "airlockd: out of memory\n");
        goto out;
    }
    /* the keys it replaced (airlockd keys rotate continuation) verify what they signed */
    if (keys_continuation_config(cfg->data_dir, rt->config, said, &aerr) != 0 ||
        keyfile_load(cfg->data_dir, "continuation.key", "AIRLOCK_CONTINUATION_KEY", sizeof key, key,
                     &aerr) != 0) {
        fprintf(stderr, "airlockd: continuation key: %s\n", aerr.message);
        goto out;
    }
    if (al_config_set_warm_workers(rt->config, cfg->warm_workers) != AL_OK ||
        al_config_set_max_concurrency(rt->config, cfg->max_runs, cfg->max_queue) != AL_OK ||
        /* a person may take days to decide: the database, not the token, says when a waiting
         * run is over (revocation, cancel) */
        al_config_set_continuation_ttl(rt->config, MAIN_CONTINUATION_TTL_MS) != AL_OK) {
        fprintf(stderr, "airlockd: cannot configure the runner\n");
        goto out;
    }
    if (al_runner_new(rt->config, &rt->runner, &aerr) != AL_OK) {
        fprintf(stderr, "airlockd: cannot start the runner: %s\n", aerr.message);
        goto out;
    }
    rt->client = connector_client_new();
    if (!rt->client) {
        fprintf(stderr, "airlockd: cannot start the connector client\n");
        goto out;
    }
    if (runs_new(writer, rt->runner, rt->client, &rt->runs, &aerr) != 0) {
        fprintf(stderr, "airlockd: %s\n", aerr.message);
        goto out;
    }
    /* the same on every node started with the same key file; not re-read on SIGHUP, and a run's
     * seed is stored when it starts, so nodes that differ for a while agree on every run */
    runs_set_seed_key(rt->runs, key, sizeof key);
    struct runs_shares shares = { cfg->per_principal, cfg->per_department,
                                  cfg->per_principal_queued, cfg->max_runs };
    runs_set_shares(rt->runs, &shares);
    runs_set_mount_roots(rt->runs, cfg->mount_roots); /* resumed runs look their mounts up */
    svc->runs = rt->runs;
    svc->runner = rt->runner;
    /* SQLite is one node's alone: no lease, no marks, no queue (nodes start in main) */
    if (cfg->node[0]) {
        runs_set_node(rt->runs, cfg->node, cfg->max_runs);
    }
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

/* Gauges of /metrics, read at scrape time on a request thread. */
static double main_gauge_runs(void *userdata)
{
    return (double)runs_active(userdata);
}

static double main_gauge_warm(void *userdata)
{
    return (double)al_runner_warm_workers(userdata);
}

static int main_count_approval(void *userdata, const struct store_approval *a)
{
    (void)a;
    (*(double *)userdata)++;
    return 0;
}

static double main_gauge_pending(void *userdata)
{
    struct store *s = readers_take(userdata);
    double n = 0;
    enum store_rc rc =
            s ? s->ops->approval_list(s, NULL, "pending", main_count_approval, &n) : STORE_ERROR;
    readers_give(userdata, s);
    return rc == STORE_OK ? n : -1;
}

static void main_gauges(struct readers *readers, struct main_runtime *rt)
{
    metrics_gauge_fn("airlock_runs_active", "Runs executing now (started, not yet recorded).",
                     main_gauge_runs, rt->runs);
    metrics_gauge_fn("airlock_workers_warm", "Started workers waiting for a run.", main_gauge_warm,
                     rt->runner);
    metrics_gauge_fn("airlock_approvals_pending", "Approvals waiting for a person.",
                     main_gauge_pending, readers);
}

struct main_resume {
    struct secretbox_keys *secret_keys;
    struct runs *runs;
    const char *id;
};

static enum store_rc main_resume_fn(struct writer_tx *tx, void *arg)
{
    struct main_resume *m = arg;
    /* a run refused here ends failed with its reason recorded: no detail is asked for */
    enum store_rc rc = api_run_resume(tx, m->secret_keys, m->runs, m->id, NULL);
    return rc == STORE_CONFLICT ? STORE_OK : rc;
}

/* Waiting runs whose approvals were all decided but that never resumed (a stop in between, or
 * decisions made while the last airlockd drained) resume now. */
static int main_resume_decided(struct readers *readers, struct writer *writer,
                               struct secretbox_keys *secret_keys, struct runs *runs)
{
    struct main_runs w = { 1u << GOV_RUN_AWAITING_APPROVAL, 0, 0, NULL };
    struct store_run_filter f = { .status = "awaiting_approval" };
    size_t resumed = 0;
    struct store *s = readers_take(readers);
    enum store_rc rc = s ? s->ops->run_list(s, &f, main_runs_fn, &w) : STORE_ERROR;
    readers_give(readers, s);
    for (size_t i = 0; i < w.n && rc == STORE_OK; i++) {
        struct main_resume m = { secret_keys, runs, w.rows[i].id };
        int64_t before = runs_active(runs);
        rc = writer_call(writer, main_resume_fn, &m);
        if (rc == STORE_OK && (int64_t)runs_active(runs) > before) {
            resumed++;
        }
    }
    free(w.rows);
    if (rc != STORE_OK) {
        fprintf(stderr, "airlockd: resuming decided runs failed\n");
        return -1;
    }
    if (resumed) {
        fprintf(stderr, "airlockd: %zu decided run%s resumed\n", resumed, resumed == 1 ? "" : "s");
    }
    return 0;
}

struct main_claim {
    struct secretbox_keys *secret_keys;
    struct runs *runs;
    int claimed;
};

static enum store_rc main_claim_fn(struct writer_tx *tx, void *arg)
{
    struct main_claim *c = arg;
    enum store_rc rc = api_run_claim(tx, c->secret_keys, c->runs, &c->claimed, NULL);
    return rc == STORE_CONFLICT ? STORE_OK : rc;
}

/* One node (SQLite): the runs main_recover_sqlite queued (and those a drain handed back) start
 * again from their journal, each in a claim of its own. */
static int main_claim_recovered(struct writer *writer, struct secretbox_keys *secret_keys,
                                struct runs *runs)
{
    size_t n = 0;
    for (;;) {
        struct main_claim c = { secret_keys, runs, 0 };
        if (writer_call(writer, main_claim_fn, &c) != STORE_OK) {
            /* left queued for the next start: this one serves the rest */
            fprintf(stderr, "airlockd: resuming runs from their journal failed\n");
            break;
        }
        if (!c.claimed) {
            break;
        }
        n++;
    }
    if (n) {
        fprintf(stderr, "airlockd: %zu run%s resumed from the journal\n", n, n == 1 ? "" : "s");
    }
    return 0;
}

/* Runs first (they use the client and the runner), then the client, then the runner. */
static void main_runtime_stop(struct main_runtime *rt)
{
    nodes_stop(rt->nodes);     /* before the runs it watches */
    replays_free(rt->replays); /* before the runner it replays on */
    runs_free(rt->runs);
    connector_client_free(rt->client);
    al_runner_free(rt->runner);
    al_config_free(rt->config);
    memset(rt, 0, sizeof *rt);
}

/* Options: 0 to go on, 1 to exit 0 (printed what was asked), 2 for a usage error. */
static int main_options(int argc, char **argv, struct main_config *cfg)
{
    const char *listen_opt = NULL;
    const char *dir_opt = NULL;
    const char *config_opt = NULL;
    const char *database_opt = NULL;
    const char *lease_opt = NULL;
    const char *poll_opt = NULL;
    const char *cert_opt = NULL;
    const char *key_opt = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char **dst = strcmp(arg, "--listen") == 0     ? &listen_opt
                           : strcmp(arg, "--data-dir") == 0 ? &dir_opt
                           : strcmp(arg, "--config") == 0   ? &config_opt
                           : strcmp(arg, "--database") == 0 ? &database_opt
                           : strcmp(arg, "--lease-ms") == 0 ? &lease_opt
                           : strcmp(arg, "--poll-ms") == 0  ? &poll_opt
                           : strcmp(arg, "--tls-cert") == 0 ? &cert_opt
                           : strcmp(arg, "--tls-key") == 0  ? &key_opt
                                                            : NULL;
        if (strcmp(arg, "--print-routes") == 0) {
            router_print(stdout);
            return 1;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(main_usage, stdout);
            return 1;
        }
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
            printf("airlockd %s\n", al_version());
            return 1;
        }
        if (!dst) {
            fprintf(stderr, "airlockd: unknown option %s\n%s", arg, main_usage);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "airlockd: %s needs a value\n%s", arg, main_usage);
            return 2;
        }
        *dst = argv[++i];
    }
    /* The config file first, the command line over it. */
    if (config_opt && main_load_config(config_opt, cfg) != 0) {
        return 2;
    }
    if (listen_opt && main_parse_listen(listen_opt, cfg) != 0) {
        fprintf(stderr, "airlockd: --listen must be HOST:PORT, not %s\n%s", listen_opt, main_usage);
        return 2;
    }
    if (dir_opt) {
        if (dir_opt[0] == '\0' || strlen(dir_opt) >= sizeof cfg->data_dir) {
            fprintf(stderr, "airlockd: bad --data-dir\n%s", main_usage);
            return 2;
        }
        snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", dir_opt);
    }
    if (database_opt) {
        /* the URL may hold a password: never echoed */
        if (main_database_url(database_opt) != 0) {
            fprintf(stderr, "airlockd: --database must be a postgres:// or postgresql:// URL\n%s",
                    main_usage);
            return 2;
        }
        snprintf(cfg->database, sizeof cfg->database, "%s", database_opt);
    }
    if ((lease_opt && main_ms_option("--lease-ms", lease_opt, NODES_LEASE_MIN_MS,
                                     NODES_LEASE_MAX_MS, &cfg->lease_ms) != 0) ||
        (poll_opt && main_ms_option("--poll-ms", poll_opt, NODES_POLL_MIN_MS, NODES_POLL_MAX_MS,
                                    &cfg->poll_ms) != 0)) {
        return 2;
    }
    const char *tls[2][2] = { { "--tls-cert", cert_opt }, { "--tls-key", key_opt } };
    for (int i = 0; i < 2; i++) {
        char *dst = i == 0 ? cfg->tls_cert : cfg->tls_key;
        if (tls[i][1] && (tls[i][1][0] == '\0' || strlen(tls[i][1]) >= MAIN_PATH_MAX)) {
            fprintf(stderr, "airlockd: bad %s\n%s", tls[i][0], main_usage);
            return 2;
        }
        if (tls[i][1]) {
            snprintf(dst, MAIN_PATH_MAX, "%s", tls[i][1]);
        }
    }
    if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
        fprintf(stderr,
                "airlockd: a TLS certificate needs its key: give both --tls-cert and "
                "--tls-key (or tls_cert and tls_key in the config)\n%s",
                main_usage);
        return 2;
    }
    return 0;
}

/* SIGHUP: the TLS certificate and key files read again (reload.h). */
static int main_tls_reload(void *arg, char said[RELOAD_SAID_MAX])
{
    return http_tls_reload(arg, said, RELOAD_SAID_MAX);
}

int main(int argc, char **argv)
{
    struct main_config cfg = { .host = "127.0.0.1",
                               .port = 8080,
                               .data_dir = "./var",
                               .body_limit_bytes = MAIN_DEFAULT_BODY,
                               .snapshot_limit_bytes = MAIN_DEFAULT_SNAPSHOT,
                               .rate_per_second = 200,
                               .rate_burst = 1000,
                               .unauth_per_second = 10,
                               .unauth_burst = 50,
                               .unauth_audit_ms = DENIALS_INTERVAL_DEFAULT,
                               .max_runs = 64,
                               .max_queue = 4096,
                               .warm_workers = 2,
                               .drain_grace_ms = 10000,
                               .lease_ms = NODES_LEASE_MS,
                               .poll_ms = NODES_POLL_MS };
    struct store *store = NULL;
    struct readers *readers = NULL;
    struct writer *writer = NULL;
    struct http_server *http = NULL;
    struct router router;
    struct api_services svc;
    struct main_runtime rt;
    struct reload_list reloads = { 0 };
    struct ratelimit *limit = NULL;
    struct ratelimit *verify_limit = NULL;
    struct ratelimit *unauth_limit = NULL;
    struct witness *witness = NULL;
    struct auditlog_kept *kept = NULL;
    struct ratelimit_options limit_opts;
    struct denials *denials = NULL;
    struct webhooks *webhooks = NULL;
    struct denials_options denials_opts = { 0 };
    char db_path[MAIN_PATH_MAX + 16];
    char errmsg[STORE_ERRMSG_MAX];
    struct al_error err;
    int data_dir_lock = -1; /* released when the process ends */
    unsigned port = 0;
    struct secretbox_keys secrets;
    struct keys_server keys;
    sigset_t stop;
    int sig = 0;
    int status = 1;

    memset(&err, 0, sizeof err);
    memset(&svc, 0, sizeof svc);
    memset(&rt, 0, sizeof rt);
    memset(&router, 0, sizeof router);

    int command = admin_cmds_run(argc, argv); /* airlockd keys ..., airlockd backup ... */
    if (command >= 0) {
        return command;
    }
    umask(077); /* the database, its WAL and the key files are airlockd's alone */
    int opt = main_options(argc, argv, &cfg);
    if (opt != 0) {
        free(cfg.mount_roots); /* read before the refusal, if any */
        free(cfg.oidc);
        return opt == 1 ? 0 : 2;
    }
    if (FAULT_INIT() != 0) {
        fprintf(stderr, "airlockd: AIRLOCK_CRASH_AT must be BOUNDARY:CALL, BOUNDARY one of "
                        "before_mark, after_send, after_journal, after_delivery and CALL from 1\n");
        free(cfg.mount_roots);
        return 2;
    }

    /* Every thread started from here on inherits the mask: only sigwait below takes these. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP); /* blocked from here: one sent while starting waits for sigwait */
    sigaddset(&stop, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    sigdelset(&stop, SIGPIPE);

    svc.audit = api_audit_head_new();
    if (secretbox_keys_init(&secrets) != 0) {
        fprintf(stderr, "airlockd: cannot set up the secret keys\n");
        api_audit_head_free(svc.audit);
        return 1;
    }
    if (!svc.audit) {
        fprintf(stderr, "airlockd: out of memory\n");
        goto out;
    }
    if (main_make_dir(cfg.data_dir) != 0) {
        fprintf(stderr, "airlockd: cannot create data directory %s: %s\n", cfg.data_dir,
                strerror(errno));
        goto out;
    }
    /* held until the process ends: `airlockd keys rotate` refuses a directory in use */
    int locked = keyfile_lock(cfg.data_dir, &data_dir_lock, &err);
    if (locked != 0) {
        fprintf(stderr, "airlockd: %s%s\n",
                locked > 0 ? "another process holds the data directory " : "",
                locked > 0 ? cfg.data_dir : err.message);
        goto out;
    }
    snprintf(db_path, sizeof db_path, "%s/airlock.db", cfg.data_dir);
    if (cfg.database[0] ? store_postgres_open(cfg.database, &store, errmsg) != STORE_OK
                        : store_sqlite_open(db_path, &store, errmsg) != STORE_OK) {
        fprintf(stderr, "airlockd: %s\n", errmsg);
        goto out;
    }
    if (cfg.database[0] && nodes_id(cfg.data_dir, cfg.node, &err) != 0) {
        fprintf(stderr, "airlockd: node id: %s\n", err.message);
        goto out;
    }
    if (cfg.witness[0] && witness_new(cfg.witness, cfg.witness_secret, &witness, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    if (auditlog_kept_open(cfg.data_dir, witness, &kept) != 0) {
        fprintf(stderr, "airlockd: out of memory\n");
        goto out;
    }
    svc.kept = kept;
    svc.mount_roots = cfg.mount_roots;
    if (cfg.oidc && !(svc.oidc = oidc_provider_new(cfg.oidc))) {
        fprintf(stderr, "airlockd: out of memory\n");
        goto out;
    }
    if (main_audit(store, cfg.data_dir) != 0 || main_bootstrap(store, cfg.data_dir) != 0 ||
        main_audit_check(store, svc.audit, kept) != 0 || main_recover(store, cfg.node) != 0) {
        goto out;
    }
    if (witness) {
        metrics_gauge_fn("airlock_audit_witness_failures", MAIN_WITNESS_HELP, main_gauge_witness,
                         witness);
    }
    /* From here on the store is the writer's alone; every other thread reads on a reader of
     * its own. One reader per request thread, and a few for streamed answers and the nodes. */
    if (readers_new(store, 64, &readers, &err) != 0 || writer_new(store, &writer, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    svc.writer = writer;
    svc.readers = readers;
    writer_on_checkpoint(writer, main_kept_fn, kept);
    if (main_runtime_start(&cfg, writer, &svc, &rt) != 0) {
        goto out;
    }
    main_gauges(readers, &rt);
    if (runs_watch_keys(rt.runs, readers, &err) != 0 ||
        replays_new(rt.runner, readers, writer, &rt.replays, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    svc.replays = rt.replays;
    char said[RELOAD_SAID_MAX];
    if (keys_secret_set(cfg.data_dir, &secrets, said, &err) != 0) {
        fprintf(stderr, "airlockd: secret key: %s\n", err.message);
        goto out;
    }
    /* the lease, the takeover, the queue's claims: once the plans of claimed runs can be made */
    if (cfg.node[0] && nodes_start(writer, readers, rt.runs, &secrets, cfg.node, cfg.lease_ms,
                                   cfg.poll_ms, &rt.nodes, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    memset(&limit_opts, 0, sizeof limit_opts);
    limit_opts.per_second = cfg.rate_per_second;
    limit_opts.burst = cfg.rate_burst;
    if (RAND_bytes((unsigned char *)&limit_opts.seed, sizeof limit_opts.seed) != 1 ||
        ratelimit_new(&limit_opts, &limit) != 0) {
        fprintf(stderr, "airlockd: cannot set up the rate limit\n");
        goto out;
    }
    limit_opts.per_second = cfg.unauth_per_second;
    limit_opts.burst = cfg.unauth_burst;
    if (ratelimit_new(&limit_opts, &unauth_limit) != 0) {
        fprintf(stderr, "airlockd: cannot set up the rate limit\n");
        goto out;
    }
    /* the 401s that pass it: one auth.denied record per address per interval */
    denials_opts.interval_ms = (int64_t)cfg.unauth_audit_ms;
    if (denials_new(&denials_opts, &denials) != 0 ||
        denials_start(denials, api_denials_write, writer) != 0) {
        fprintf(stderr, "airlockd: cannot set up the tally of refusals\n");
        goto out;
    }
    svc.denials = denials;
    /* a full re-verification reads the whole log: two at once, then one a minute */
    limit_opts.per_second = 1.0 / 60;
    limit_opts.burst = 2;
    limit_opts.max_buckets = 8;
    if (ratelimit_new(&limit_opts, &verify_limit) != 0) {
        fprintf(stderr, "airlockd: cannot set up the rate limit\n");
        goto out;
    }
    svc.verify_limit = verify_limit;
    router.readers = readers;
    router.writer = writer;
    router.limit = limit;
    router.unauth_limit = unauth_limit;
    router.svc = &svc;
    router.secret_keys = &secrets;
    router.body_limit_bytes = cfg.body_limit_bytes;
    router.snapshot_limit_bytes = cfg.snapshot_limit_bytes;
    if (main_resume_decided(readers, writer, &secrets, rt.runs) != 0 ||
        (!cfg.node[0] && main_claim_recovered(writer, &secrets, rt.runs) != 0)) {
        goto out;
    }
    cfg.http.host = cfg.host;
    cfg.http.port = cfg.port;
    cfg.http.body_limit_bytes = cfg.body_limit_bytes;
    cfg.http.admit = router_admit;
    cfg.http.handler = router_dispatch;
    cfg.http.userdata = &router;
    cfg.http.tls_cert = cfg.tls_cert[0] ? cfg.tls_cert : NULL;
    cfg.http.tls_key = cfg.tls_key[0] ? cfg.tls_key : NULL;
    if (http_start(&cfg.http, &http, &port, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    if (!cfg.public_url[0]) { /* the desk's links: where it listens, unless said otherwise */
        snprintf(cfg.public_url, sizeof cfg.public_url, "%s://%s%s%s:%u",
                 http_tls(http) ? "https" : "http", strchr(cfg.host, ':') ? "[" : "", cfg.host,
                 strchr(cfg.host, ':') ? "]" : "", port);
    }
    struct webhooks_options hooks_opts = { cfg.public_url, cfg.node, cfg.webhook_retry_first_ms,
                                           cfg.webhook_poll_ms, &secrets };
    if (webhooks_start(writer, readers, &hooks_opts, &webhooks, &err) != 0) {
        fprintf(stderr, "airlockd: %s\n", err.message);
        goto out;
    }
    /* SIGHUP re-reads the keys: a rotation made elsewhere is taken node by node */
    keys = (struct keys_server){ cfg.data_dir, rt.runner, store, &secrets };
    if (reload_add(&reloads, "continuation key", keys_reload_continuation, &keys) != 0 ||
        reload_add(&reloads, "audit key", keys_reload_audit, &keys) != 0 ||
        reload_add(&reloads, "secret key", keys_reload_secret, &keys) != 0 ||
        (http_tls(http) && reload_add(&reloads, "TLS certificate", main_tls_reload, http) != 0)) {
        fprintf(stderr, "airlockd: too many things to re-read on SIGHUP\n");
        goto out;
    }
    if (http_tls(http)) {
        http_tls_describe(http, said, sizeof said);
        fprintf(stderr, "airlockd: TLS certificate %s\n", said);
    }
    fprintf(stderr, "airlockd: listening on %s://%s%s%s:%u\n", http_tls(http) ? "https" : "http",
            strchr(cfg.host, ':') ? "[" : "", cfg.host, strchr(cfg.host, ':') ? "]" : "", port);
    fflush(stderr);
    for (;;) {
        if (sigwait(&stop, &sig) != 0) {
            goto out;
        }
        if (sig != SIGHUP) {
            break;
        }
        reload_all(&reloads);
    }
    if (rt.runs) {
        runs_refuse(rt.runs); /* before the word: a run asked for once it is out is refused */
    }
    fprintf(stderr, "airlockd: %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    /* drain: no new connections, runs finish (or are cancelled after the grace period) and
     * their clients are answered, then the server stops */
    http_quiesce(http);
    if (rt.runs) {
        runs_drain(rt.runs, cfg.drain_grace_ms);
    }
    status = 0;
out:
    if (rt.runs) {
        runs_drain(rt.runs, 0);
    }
    replays_stop(rt.replays); /* its waiting requests answered before the server stops */
    http_stop(http);
    /* before the writer, which its deliveries are claimed and settled through */
    webhooks_stop(webhooks);
    denials_stop(denials);  /* the refusals tallied since their address's last record */
    main_runtime_stop(&rt); /* the runs' last records go through the writer */
    writer_free(writer);    /* every job queued is done */
    readers_free(readers);
    struct store_checkpoint last;
    if (store && kept && store->ops->audit_checkpoint(store, 0, &last) == STORE_OK) {
        /* the last record signed and kept: a cut made while airlockd is stopped shows too */
        auditlog_kept_keep(kept, store, &last);
    }
    if (witness) { /* its gauge goes before it does */
        metrics_gauge_fn("airlock_audit_witness_failures", MAIN_WITNESS_HELP, NULL, NULL);
    }
    witness_free(witness); /* what is still queued is tried once */
    auditlog_kept_free(kept);
    OPENSSL_cleanse(cfg.witness_secret, sizeof cfg.witness_secret);
    free(cfg.mount_roots);
    oidc_provider_free(svc.oidc);
    if (cfg.oidc) {
        oidc_config_done(cfg.oidc);
        free(cfg.oidc);
    }
    ratelimit_free(limit);
    ratelimit_free(verify_limit);
    ratelimit_free(unauth_limit);
    denials_free(denials);
    secretbox_keys_done(&secrets);
    if (store) {
        store->ops->close(store);
    }
    api_audit_head_free(svc.audit);
    return status;
}
